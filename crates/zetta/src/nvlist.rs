//! Name/value lists: the self-describing encoding of pool configurations, labels and small
//! MOS records (OpenZFS `nvpair.c`, whose XDR encoding we do not reproduce).
//!
//! Byte layout (all little-endian), recursively:
//!
//! ```text
//! nvlist  := count:u32 entry{count}
//! entry   := name_len:u16 name:[u8; name_len] type:u8 value
//! value   := U64(1)      u64
//!          | STRING(2)   len:u32 utf8[len]
//!          | BYTES(3)    len:u32 [u8; len]
//!          | NVLIST(4)   nvlist
//!          | NVARRAY(5)  count:u32 nvlist{count}
//!          | U64ARRAY(6) count:u32 u64{count}
//! ```
//!
//! Entries are written in name order (a `BTreeMap`), so encoding is deterministic and golden
//! vectors are stable. Decoding trusts nothing: every length is checked against the bytes
//! left, nesting is bounded by `NVLIST_DEPTH_MAX`, and errors carry the byte offset.

use std::collections::BTreeMap;
use std::fmt;

pub const NVLIST_DEPTH_MAX: usize = 16;
pub const NVLIST_NAME_LEN_MAX: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NvValue {
    U64(u64),
    Str(String),
    Bytes(Vec<u8>),
    List(NvList),
    ListArray(Vec<NvList>),
    U64Array(Vec<u64>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NvList {
    pub entries: BTreeMap<String, NvValue>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvDecodeError {
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for NvDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed nvlist at byte {}: {}",
            self.offset, self.reason
        )
    }
}

impl std::error::Error for NvDecodeError {}

impl NvList {
    pub fn new() -> Self {
        NvList::default()
    }

    pub fn set_u64(&mut self, name: &str, value: u64) -> &mut Self {
        self.entries.insert(name.to_string(), NvValue::U64(value));
        self
    }

    pub fn set_str(&mut self, name: &str, value: &str) -> &mut Self {
        self.entries
            .insert(name.to_string(), NvValue::Str(value.to_string()));
        self
    }

    pub fn set_bytes(&mut self, name: &str, value: Vec<u8>) -> &mut Self {
        self.entries.insert(name.to_string(), NvValue::Bytes(value));
        self
    }

    pub fn set_list(&mut self, name: &str, value: NvList) -> &mut Self {
        self.entries.insert(name.to_string(), NvValue::List(value));
        self
    }

    pub fn set_list_array(&mut self, name: &str, value: Vec<NvList>) -> &mut Self {
        self.entries
            .insert(name.to_string(), NvValue::ListArray(value));
        self
    }

    pub fn set_u64_array(&mut self, name: &str, value: Vec<u64>) -> &mut Self {
        self.entries
            .insert(name.to_string(), NvValue::U64Array(value));
        self
    }

    pub fn remove(&mut self, name: &str) {
        self.entries.remove(name);
    }

    pub fn get_u64(&self, name: &str) -> Option<u64> {
        match self.entries.get(name) {
            Some(NvValue::U64(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn get_str(&self, name: &str) -> Option<&str> {
        match self.entries.get(name) {
            Some(NvValue::Str(v)) => Some(v),
            _ => None,
        }
    }

    pub fn get_bytes(&self, name: &str) -> Option<&[u8]> {
        match self.entries.get(name) {
            Some(NvValue::Bytes(v)) => Some(v),
            _ => None,
        }
    }

    pub fn get_list(&self, name: &str) -> Option<&NvList> {
        match self.entries.get(name) {
            Some(NvValue::List(v)) => Some(v),
            _ => None,
        }
    }

    pub fn get_list_array(&self, name: &str) -> Option<&[NvList]> {
        match self.entries.get(name) {
            Some(NvValue::ListArray(v)) => Some(v),
            _ => None,
        }
    }

    pub fn get_u64_array(&self, name: &str) -> Option<&[u64]> {
        match self.entries.get(name) {
            Some(NvValue::U64Array(v)) => Some(v),
            _ => None,
        }
    }

    /// Like `get_u64` but a missing or mistyped entry is a decode error naming the field.
    pub fn require_u64(&self, name: &str) -> Result<u64, NvDecodeError> {
        self.get_u64(name).ok_or_else(|| missing(name))
    }

    pub fn require_str(&self, name: &str) -> Result<&str, NvDecodeError> {
        self.get_str(name).ok_or_else(|| missing(name))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for (name, value) in &self.entries {
            assert!(
                name.len() <= NVLIST_NAME_LEN_MAX,
                "nvlist name longer than {NVLIST_NAME_LEN_MAX}"
            );
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            match value {
                NvValue::U64(v) => {
                    out.push(1);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                NvValue::Str(s) => {
                    out.push(2);
                    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
                NvValue::Bytes(b) => {
                    out.push(3);
                    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    out.extend_from_slice(b);
                }
                NvValue::List(l) => {
                    out.push(4);
                    l.encode_into(out);
                }
                NvValue::ListArray(items) => {
                    out.push(5);
                    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
                    for item in items {
                        item.encode_into(out);
                    }
                }
                NvValue::U64Array(items) => {
                    out.push(6);
                    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
                    for item in items {
                        out.extend_from_slice(&item.to_le_bytes());
                    }
                }
            }
        }
    }

    /// Decodes a whole buffer; trailing bytes are allowed (labels are zero-padded).
    pub fn decode(bytes: &[u8]) -> Result<NvList, NvDecodeError> {
        let mut reader = Reader { bytes, offset: 0 };
        reader.nvlist(0)
    }
}

fn missing(name: &str) -> NvDecodeError {
    NvDecodeError {
        offset: 0,
        reason: format!("required field '{name}' missing or of the wrong type"),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl Reader<'_> {
    fn fail(&self, reason: impl Into<String>) -> NvDecodeError {
        NvDecodeError {
            offset: self.offset,
            reason: reason.into(),
        }
    }

    fn take(&mut self, count: usize) -> Result<&[u8], NvDecodeError> {
        let end = self
            .offset
            .checked_add(count)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| self.fail(format!("needs {count} more bytes, buffer ends")))?;
        let slice = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(slice)
    }

    fn u8(&mut self) -> Result<u8, NvDecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, NvDecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, NvDecodeError> {
        let mut word = [0u8; 4];
        word.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(word))
    }

    fn u64(&mut self) -> Result<u64, NvDecodeError> {
        let mut word = [0u8; 8];
        word.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(word))
    }

    /// A count of items each at least `item_size_min` bytes: bounded by what is left.
    fn count(&mut self, item_size_min: usize) -> Result<usize, NvDecodeError> {
        let count = self.u32()? as usize;
        let left = self.bytes.len() - self.offset;
        if count.saturating_mul(item_size_min) > left {
            return Err(self.fail(format!("count {count} exceeds the {left} bytes left")));
        }
        Ok(count)
    }

    fn nvlist(&mut self, depth: usize) -> Result<NvList, NvDecodeError> {
        if depth > NVLIST_DEPTH_MAX {
            return Err(self.fail("nesting too deep"));
        }
        let count = self.count(3)?;
        let mut list = NvList::new();
        for _ in 0..count {
            let name_len = self.u16()? as usize;
            if name_len > NVLIST_NAME_LEN_MAX {
                return Err(self.fail(format!("name of {name_len} bytes is too long")));
            }
            let name = String::from_utf8(self.take(name_len)?.to_vec())
                .map_err(|_| self.fail("name is not UTF-8"))?;
            if list.entries.contains_key(&name) {
                return Err(self.fail(format!("duplicate name '{name}'")));
            }
            let value = match self.u8()? {
                1 => NvValue::U64(self.u64()?),
                2 => {
                    let len = self.count(1)?;
                    let text = String::from_utf8(self.take(len)?.to_vec())
                        .map_err(|_| self.fail("string is not UTF-8"))?;
                    NvValue::Str(text)
                }
                3 => {
                    let len = self.count(1)?;
                    NvValue::Bytes(self.take(len)?.to_vec())
                }
                4 => NvValue::List(self.nvlist(depth + 1)?),
                5 => {
                    let count = self.count(4)?;
                    let mut items = Vec::with_capacity(count);
                    for _ in 0..count {
                        items.push(self.nvlist(depth + 1)?);
                    }
                    NvValue::ListArray(items)
                }
                6 => {
                    let count = self.count(8)?;
                    let mut items = Vec::with_capacity(count);
                    for _ in 0..count {
                        items.push(self.u64()?);
                    }
                    NvValue::U64Array(items)
                }
                other => return Err(self.fail(format!("unknown value type {other}"))),
            };
            list.entries.insert(name, value);
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vector: the encoding is part of the on-disk format (labels), so a change to it
    /// must be deliberate and bump the format version.
    #[test]
    fn golden_encoding() {
        let mut list = NvList::new();
        list.set_u64("a", 1).set_str("b", "hi");
        assert_eq!(
            list.encode(),
            vec![
                2, 0, 0, 0, // count
                1, 0, b'a', 1, 1, 0, 0, 0, 0, 0, 0, 0, // a = U64 1
                1, 0, b'b', 2, 2, 0, 0, 0, b'h', b'i', // b = "hi"
            ]
        );
    }

    /// Round trip of every value type, including nesting and trailing zero padding.
    #[test]
    fn round_trip_all_types() {
        let mut child = NvList::new();
        child.set_u64("guid", 42).set_str("path", "/tmp/x");
        let mut list = NvList::new();
        list.set_u64("txg", 7)
            .set_bytes("raw", vec![1, 2, 3])
            .set_list("child", child.clone())
            .set_list_array("children", vec![child.clone(), child])
            .set_u64_array("ids", vec![1, 2, 3]);
        let mut bytes = list.encode();
        bytes.extend_from_slice(&[0; 100]);
        assert_eq!(NvList::decode(&bytes).unwrap(), list);
    }

    /// Hostile input: every truncation and random garbage must be an error, never a panic or
    /// a huge allocation.
    #[test]
    fn truncated_and_random_input_is_an_error() {
        let mut list = NvList::new();
        list.set_u64("x", 1)
            .set_list_array("kids", vec![NvList::new(); 3])
            .set_str("s", "text");
        let bytes = list.encode();
        for cut in 0..bytes.len() {
            assert!(NvList::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut rng = crate::rand::SeededRng::new(1);
        for _ in 0..2000 {
            let mut junk = vec![0u8; rng.below(64) as usize];
            rng.fill(&mut junk);
            let _ = NvList::decode(&junk);
        }
        let huge_count = [0xff, 0xff, 0xff, 0xff];
        assert!(NvList::decode(&huge_count).is_err());
    }
}
