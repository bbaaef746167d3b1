//! OpenZFS's natively packed name/value lists (`nvlist_pack(.., NV_ENCODE_NATIVE)`, OpenZFS
//! `module/nvpair/nvpair.c`, `nvs_native_*`): the records of the pool history object
//! (`spa_history.c` packs every record this way; pools written by old Solaris releases hold
//! XDR records instead, see [`crate::spa::openzfs::history`]).
//!
//! A native stream is the writer's in-memory `nvlist_t`/`nvpair_t` structures copied out, in
//! the writer's byte order, with pointers zeroed. The decoded list is the same model as the
//! XDR decoder's ([`XdrNvList`]): only the wire format differs.
//!
//! Byte layout (`i32`/`u32`/... in the order the header names; `align8` pads with zeros to
//! the next multiple of 8 counted from the start of the pair):
//!
//! ```text
//! packed  := encoding:u8(=0 native) endian:u8(1 little, 0 big) reserved:u8 reserved:u8
//!            version:i32(=0) nvflag:u32 pairs
//! pairs   := pair* 0:i32                      (a size of 0 ends a list)
//! pair    := size:i32 name_sz:i16 reserved:i16 nelem:i32 type:i32
//!            name[name_sz] (NUL included) align8 value align8 embedded
//! value   := BOOLEAN: nothing             | BOOLEAN_VALUE: i32 (0 or 1)
//!          | BYTE/INT8/UINT8: 1 byte      | INT16/UINT16: 2 | INT32/UINT32: 4
//!          | INT64/UINT64/HRTIME/DOUBLE: 8
//!          | STRING: bytes NUL            | <n-bit>_ARRAY: nelem values, packed
//!          | BOOLEAN_ARRAY: nelem i32     | BYTE_ARRAY: nelem bytes
//!          | STRING_ARRAY: nelem zeroed u64 slots, then nelem NUL-terminated strings
//!          | NVLIST: nvlist_t = version:i32 nvflag:u32 priv:u64(0) flag:u32 pad:i32
//!          | NVLIST_ARRAY: nelem zeroed u64 slots, then nelem nvlist_t
//! embedded:= NVLIST: pairs of the list     | NVLIST_ARRAY: pairs of each list in turn
//!          | nothing otherwise
//! ```
//!
//! `size` is the whole pair up to (not including) its embedded lists:
//! `align8(16 + name_sz) + align8(value size)`, and OpenZFS insists on exactly that
//! (`i_validate_nvpair`); an embedded list's version must be 0 (the top list's is not
//! checked). Unlike OpenZFS's `nvlist_unpack`, which refuses a native stream of the other
//! byte order (ENOTSUP), this decoder reads both: the header says which.
//!
//! Decoding trusts nothing: every size and count is checked against the bytes present before
//! anything is allocated, nesting is bounded by [`NATIVE_NESTING_MAX`], and every error carries
//! the byte offset from the start of the packed buffer.

use crate::byteorder::ByteOrder;
use crate::nvpair_xdr::{data_type as dt, XdrNvList, XdrPair, XdrValue};
use std::fmt;

/// `nvs_header_t.nvh_encoding` for the native encoding.
pub const NV_ENCODE_NATIVE: u8 = 0;
/// Embedded nvlists allowed below the top one (`nvpair_max_recursion` in the kernel).
pub const NATIVE_NESTING_MAX: usize = 20;

/// `sizeof (nvpair_t)` without its name.
const NVPAIR_HEADER: usize = 16;
/// `sizeof (nvlist_t)` (already 8-aligned).
const NVLIST_T_SIZE: usize = 24;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeError {
    /// Byte offset in the packed buffer (header included) where the fault was found.
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for NativeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed native nvlist at byte {}: {}",
            self.offset, self.reason
        )
    }
}

impl std::error::Error for NativeError {}

fn err<T>(offset: usize, reason: impl Into<String>) -> Result<T, NativeError> {
    Err(NativeError {
        offset,
        reason: reason.into(),
    })
}

/// A decoded packed nvlist: the list, the writer's byte order and how many bytes it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unpacked {
    pub list: XdrNvList,
    pub order: ByteOrder,
    /// Bytes consumed, header and end markers included.
    pub len: usize,
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// `nvlist_unpack` of a natively packed buffer, in either byte order.
pub fn unpack(buf: &[u8]) -> Result<Unpacked, NativeError> {
    if buf.len() < 4 {
        return err(
            0,
            format!("{} bytes, shorter than the 4-byte header", buf.len()),
        );
    }
    if buf[0] != NV_ENCODE_NATIVE {
        return err(0, format!("encoding {} is not native (0)", buf[0]));
    }
    let order = match buf[1] {
        1 => ByteOrder::Little,
        0 => ByteOrder::Big,
        e => return err(1, format!("endian byte {e} is neither 0 nor 1")),
    };
    let mut r = Reader { buf, pos: 4, order };
    let version = r.i32_at(4)?;
    let nvflag = r.u32_at(8)?;
    r.pos = 12;
    let mut list = XdrNvList {
        version,
        nvflag,
        pairs: Vec::new(),
    };
    r.pairs(&mut list, 0)?;
    Ok(Unpacked {
        list,
        order,
        len: r.pos,
    })
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    order: ByteOrder,
}

impl Reader<'_> {
    fn bytes_at(&self, at: usize, n: usize) -> Result<&[u8], NativeError> {
        match at.checked_add(n) {
            Some(end) if end <= self.buf.len() => Ok(&self.buf[at..end]),
            _ => err(
                at,
                format!(
                    "{n} bytes needed, {} left",
                    self.buf.len().saturating_sub(at)
                ),
            ),
        }
    }

    fn u16_at(&self, at: usize) -> Result<u16, NativeError> {
        let b = self.bytes_at(at, 2)?;
        let a = [b[0], b[1]];
        Ok(match self.order {
            ByteOrder::Little => u16::from_le_bytes(a),
            ByteOrder::Big => u16::from_be_bytes(a),
        })
    }

    fn u32_at(&self, at: usize) -> Result<u32, NativeError> {
        let b = self.bytes_at(at, 4)?;
        let a = [b[0], b[1], b[2], b[3]];
        Ok(match self.order {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        })
    }

    fn i32_at(&self, at: usize) -> Result<i32, NativeError> {
        Ok(self.u32_at(at)? as i32)
    }

    fn u64_at(&self, at: usize) -> Result<u64, NativeError> {
        let b = self.bytes_at(at, 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(match self.order {
            ByteOrder::Little => u64::from_le_bytes(a),
            ByteOrder::Big => u64::from_be_bytes(a),
        })
    }

    /// Reads pairs from `self.pos` up to and including the list's end marker.
    fn pairs(&mut self, list: &mut XdrNvList, depth: usize) -> Result<(), NativeError> {
        loop {
            let at = self.pos;
            let size = self.i32_at(at)?;
            let left = self.buf.len() - at;
            if size < 0 || size as usize > left {
                return err(
                    at,
                    format!("pair size {size} does not fit the {left} bytes left"),
                );
            }
            if size == 0 {
                self.pos += 4;
                return Ok(());
            }
            let size = size as usize;
            if size < align8(NVPAIR_HEADER + 1) {
                return err(at, format!("pair size {size} is below the minimum of 24"));
            }
            self.pos = at + size;
            let pair = self.pair(at, size, depth)?;
            list.pairs.push(pair);
        }
    }

    /// One pair of `size` bytes at `at`; its embedded lists are read from `self.pos` on.
    fn pair(&mut self, at: usize, size: usize, depth: usize) -> Result<XdrPair, NativeError> {
        let name_sz = self.u16_at(at + 4)? as i16;
        let nelem = self.u32_at(at + 8)?;
        let ty = self.u32_at(at + 12)?;
        if name_sz <= 0 {
            return err(at + 4, format!("name size {name_sz} is not positive"));
        }
        let name_sz = name_sz as usize;
        let valoff = align8(NVPAIR_HEADER + name_sz);
        if size < valoff {
            return err(
                at,
                format!("pair size {size} is shorter than its {name_sz}-byte name"),
            );
        }
        let name_at = at + NVPAIR_HEADER;
        let raw_name = self.bytes_at(name_at, name_sz)?;
        if raw_name[name_sz - 1] != 0 || raw_name[..name_sz - 1].contains(&0) {
            return err(name_at, "name is not a string of its stated size");
        }
        let name = raw_name[..name_sz - 1].to_vec();
        let val = at + valoff;
        let room = size - valoff;
        let elem = |width: usize| -> Result<usize, NativeError> {
            let need = (nelem as u64) * width as u64;
            if need > room as u64 {
                return err(
                    at + 8,
                    format!("{nelem} elements of {width} bytes do not fit the pair's {room} bytes"),
                );
            }
            Ok(need as usize)
        };
        let scalar = |expect: u32| -> Result<(), NativeError> {
            if nelem != expect {
                return err(
                    at + 8,
                    format!("type {ty} holds {expect} element(s), not {nelem}"),
                );
            }
            Ok(())
        };
        // The value's size as `i_get_value_size` computes it from the data.
        let (value, value_sz) = match ty {
            dt::BOOLEAN => {
                scalar(0)?;
                (XdrValue::Boolean, 0)
            }
            dt::BOOLEAN_VALUE => {
                scalar(1)?;
                (XdrValue::BooleanValue(self.boolean(val)?), 4)
            }
            dt::BYTE => {
                scalar(1)?;
                (XdrValue::Byte(self.bytes_at(val, 1)?[0]), 1)
            }
            dt::INT8 => {
                scalar(1)?;
                (XdrValue::Int8(self.bytes_at(val, 1)?[0] as i8), 1)
            }
            dt::UINT8 => {
                scalar(1)?;
                (XdrValue::Uint8(self.bytes_at(val, 1)?[0]), 1)
            }
            dt::INT16 => {
                scalar(1)?;
                (XdrValue::Int16(self.u16_at(val)? as i16), 2)
            }
            dt::UINT16 => {
                scalar(1)?;
                (XdrValue::Uint16(self.u16_at(val)?), 2)
            }
            dt::INT32 => {
                scalar(1)?;
                (XdrValue::Int32(self.i32_at(val)?), 4)
            }
            dt::UINT32 => {
                scalar(1)?;
                (XdrValue::Uint32(self.u32_at(val)?), 4)
            }
            dt::INT64 => {
                scalar(1)?;
                (XdrValue::Int64(self.u64_at(val)? as i64), 8)
            }
            dt::UINT64 => {
                scalar(1)?;
                (XdrValue::Uint64(self.u64_at(val)?), 8)
            }
            dt::HRTIME => {
                scalar(1)?;
                (XdrValue::Hrtime(self.u64_at(val)? as i64), 8)
            }
            dt::DOUBLE => {
                scalar(1)?;
                (XdrValue::DoubleBits(self.u64_at(val)?), 8)
            }
            dt::STRING => {
                scalar(1)?;
                let s = self.cstring(val, at + size)?;
                let n = s.len() + 1;
                (XdrValue::String(s), n)
            }
            dt::BOOLEAN_ARRAY => {
                let n = elem(4)?;
                let mut v = Vec::with_capacity(nelem as usize);
                for i in 0..nelem as usize {
                    v.push(self.boolean(val + 4 * i)?);
                }
                (XdrValue::BooleanArray(v), n)
            }
            dt::BYTE_ARRAY | dt::UINT8_ARRAY | dt::INT8_ARRAY => {
                let n = elem(1)?;
                let b = self.bytes_at(val, n)?.to_vec();
                let v = match ty {
                    dt::BYTE_ARRAY => XdrValue::ByteArray(b),
                    dt::UINT8_ARRAY => XdrValue::Uint8Array(b),
                    _ => XdrValue::Int8Array(b.into_iter().map(|x| x as i8).collect()),
                };
                (v, n)
            }
            dt::INT16_ARRAY | dt::UINT16_ARRAY => {
                let n = elem(2)?;
                let mut v = Vec::with_capacity(nelem as usize);
                for i in 0..nelem as usize {
                    v.push(self.u16_at(val + 2 * i)?);
                }
                let v = if ty == dt::INT16_ARRAY {
                    XdrValue::Int16Array(v.into_iter().map(|x| x as i16).collect())
                } else {
                    XdrValue::Uint16Array(v)
                };
                (v, n)
            }
            dt::INT32_ARRAY | dt::UINT32_ARRAY => {
                let n = elem(4)?;
                let mut v = Vec::with_capacity(nelem as usize);
                for i in 0..nelem as usize {
                    v.push(self.u32_at(val + 4 * i)?);
                }
                let v = if ty == dt::INT32_ARRAY {
                    XdrValue::Int32Array(v.into_iter().map(|x| x as i32).collect())
                } else {
                    XdrValue::Uint32Array(v)
                };
                (v, n)
            }
            dt::INT64_ARRAY | dt::UINT64_ARRAY => {
                let n = elem(8)?;
                let mut v = Vec::with_capacity(nelem as usize);
                for i in 0..nelem as usize {
                    v.push(self.u64_at(val + 8 * i)?);
                }
                let v = if ty == dt::INT64_ARRAY {
                    XdrValue::Int64Array(v.into_iter().map(|x| x as i64).collect())
                } else {
                    XdrValue::Uint64Array(v)
                };
                (v, n)
            }
            dt::STRING_ARRAY => {
                let slots = elem(8)?;
                // Each string takes at least its NUL: bound the count by the room left.
                if nelem as usize > room - slots {
                    return err(
                        at + 8,
                        format!("{nelem} strings do not fit the pair's {room} bytes"),
                    );
                }
                let mut v = Vec::with_capacity(nelem as usize);
                let mut p = val + slots;
                for _ in 0..nelem {
                    let s = self.cstring(p, at + size)?;
                    p += s.len() + 1;
                    v.push(s);
                }
                (XdrValue::StringArray(v), p - val)
            }
            dt::NVLIST => {
                scalar(1)?;
                if room < NVLIST_T_SIZE {
                    return err(at, format!("pair size {size} has no room for an nvlist_t"));
                }
                let mut inner = self.embedded_header(val)?;
                self.nested(&mut inner, depth)?;
                (XdrValue::NvList(inner), NVLIST_T_SIZE)
            }
            dt::NVLIST_ARRAY => {
                let n = elem(8 + NVLIST_T_SIZE)?;
                let mut headers = Vec::with_capacity(nelem as usize);
                for i in 0..nelem as usize {
                    headers
                        .push(self.embedded_header(val + 8 * nelem as usize + NVLIST_T_SIZE * i)?);
                }
                for inner in headers.iter_mut() {
                    self.nested(inner, depth)?;
                }
                (XdrValue::NvListArray(headers), n)
            }
            other => return err(at + 12, format!("unknown data type {other}")),
        };
        if align8(valoff + value_sz) != size {
            return err(
                at,
                format!(
                    "pair size {size} is not the {} its name and value take",
                    align8(valoff + value_sz)
                ),
            );
        }
        Ok(XdrPair { name, value })
    }

    fn boolean(&self, at: usize) -> Result<bool, NativeError> {
        match self.u32_at(at)? {
            0 => Ok(false),
            1 => Ok(true),
            v => err(at, format!("boolean value {v} is neither 0 nor 1")),
        }
    }

    /// A NUL-terminated string starting at `at` that ends before `end`.
    fn cstring(&self, at: usize, end: usize) -> Result<Vec<u8>, NativeError> {
        let bytes = self.bytes_at(at, end.saturating_sub(at))?;
        match bytes.iter().position(|&b| b == 0) {
            Some(n) => Ok(bytes[..n].to_vec()),
            None => err(at, "string is not terminated within its pair"),
        }
    }

    /// The version and flags of an embedded `nvlist_t` stored at `at`.
    fn embedded_header(&self, at: usize) -> Result<XdrNvList, NativeError> {
        let version = self.i32_at(at)?;
        if version != 0 {
            return err(at, format!("embedded nvlist version {version} is not 0"));
        }
        Ok(XdrNvList {
            version,
            nvflag: self.u32_at(at + 4)?,
            pairs: Vec::new(),
        })
    }

    fn nested(&mut self, list: &mut XdrNvList, depth: usize) -> Result<(), NativeError> {
        if depth >= NATIVE_NESTING_MAX {
            return err(
                self.pos,
                format!("nvlists nested deeper than {NATIVE_NESTING_MAX}"),
            );
        }
        self.pairs(list, depth + 1)
    }
}

// ---- encoding ------------------------------------------------------------------------

struct Writer {
    out: Vec<u8>,
    order: ByteOrder,
}

impl Writer {
    fn u16(&mut self, v: u16) {
        match self.order {
            ByteOrder::Little => self.out.extend_from_slice(&v.to_le_bytes()),
            ByteOrder::Big => self.out.extend_from_slice(&v.to_be_bytes()),
        }
    }
    fn u32(&mut self, v: u32) {
        match self.order {
            ByteOrder::Little => self.out.extend_from_slice(&v.to_le_bytes()),
            ByteOrder::Big => self.out.extend_from_slice(&v.to_be_bytes()),
        }
    }
    fn u64(&mut self, v: u64) {
        match self.order {
            ByteOrder::Little => self.out.extend_from_slice(&v.to_le_bytes()),
            ByteOrder::Big => self.out.extend_from_slice(&v.to_be_bytes()),
        }
    }
    fn pad_from(&mut self, start: usize) {
        let n = align8(self.out.len() - start) - (self.out.len() - start);
        self.out.resize(self.out.len() + n, 0);
    }
    fn nvlist_t(&mut self, l: &XdrNvList) {
        self.u32(l.version as u32);
        self.u32(l.nvflag);
        self.u64(0);
        self.u32(0);
        self.u32(0);
    }

    fn pairs(&mut self, list: &XdrNvList, depth: usize) -> Result<(), NativeError> {
        if depth > NATIVE_NESTING_MAX {
            return err(
                self.out.len(),
                format!("nvlists nested deeper than {NATIVE_NESTING_MAX}"),
            );
        }
        for p in &list.pairs {
            self.pair(p, depth)?;
        }
        self.u32(0);
        Ok(())
    }

    fn pair(&mut self, p: &XdrPair, depth: usize) -> Result<(), NativeError> {
        let start = self.out.len();
        let name_sz = p.name.len() + 1;
        if name_sz > i16::MAX as usize || p.name.contains(&0) {
            return err(start, "name is too long or holds a NUL");
        }
        let nelem = p.value.nelem();
        if nelem > i32::MAX as usize {
            return err(start, "too many elements");
        }
        self.u32(0); // size, patched below
        self.u16(name_sz as u16);
        self.u16(0);
        self.u32(nelem as u32);
        self.u32(p.value.data_type());
        self.out.extend_from_slice(&p.name);
        self.out.push(0);
        self.pad_from(start);
        match &p.value {
            XdrValue::Boolean => {}
            XdrValue::BooleanValue(b) => self.u32(*b as u32),
            XdrValue::Byte(v) | XdrValue::Uint8(v) => self.out.push(*v),
            XdrValue::Int8(v) => self.out.push(*v as u8),
            XdrValue::Int16(v) => self.u16(*v as u16),
            XdrValue::Uint16(v) => self.u16(*v),
            XdrValue::Int32(v) => self.u32(*v as u32),
            XdrValue::Uint32(v) => self.u32(*v),
            XdrValue::Int64(v) | XdrValue::Hrtime(v) => self.u64(*v as u64),
            XdrValue::Uint64(v) | XdrValue::DoubleBits(v) => self.u64(*v),
            XdrValue::String(s) => {
                if s.contains(&0) {
                    return err(start, "string holds a NUL");
                }
                self.out.extend_from_slice(s);
                self.out.push(0);
            }
            XdrValue::BooleanArray(v) => v.iter().for_each(|b| self.u32(*b as u32)),
            XdrValue::ByteArray(v) | XdrValue::Uint8Array(v) => self.out.extend_from_slice(v),
            XdrValue::Int8Array(v) => self.out.extend(v.iter().map(|x| *x as u8)),
            XdrValue::Int16Array(v) => v.iter().for_each(|x| self.u16(*x as u16)),
            XdrValue::Uint16Array(v) => v.iter().for_each(|x| self.u16(*x)),
            XdrValue::Int32Array(v) => v.iter().for_each(|x| self.u32(*x as u32)),
            XdrValue::Uint32Array(v) => v.iter().for_each(|x| self.u32(*x)),
            XdrValue::Int64Array(v) => v.iter().for_each(|x| self.u64(*x as u64)),
            XdrValue::Uint64Array(v) => v.iter().for_each(|x| self.u64(*x)),
            XdrValue::StringArray(v) => {
                v.iter().for_each(|_| self.u64(0));
                for s in v {
                    if s.contains(&0) {
                        return err(start, "string holds a NUL");
                    }
                    self.out.extend_from_slice(s);
                    self.out.push(0);
                }
            }
            XdrValue::NvList(l) => self.nvlist_t(l),
            XdrValue::NvListArray(v) => {
                v.iter().for_each(|_| self.u64(0));
                v.iter().for_each(|l| self.nvlist_t(l));
            }
        }
        self.pad_from(start);
        let size = self.out.len() - start;
        if size > i32::MAX as usize {
            return err(start, "pair larger than 2 GiB");
        }
        let b = match self.order {
            ByteOrder::Little => (size as u32).to_le_bytes(),
            ByteOrder::Big => (size as u32).to_be_bytes(),
        };
        self.out[start..start + 4].copy_from_slice(&b);
        match &p.value {
            XdrValue::NvList(l) => self.pairs(l, depth + 1)?,
            XdrValue::NvListArray(v) => {
                for l in v {
                    self.pairs(l, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// `nvlist_pack(.., NV_ENCODE_NATIVE)` as a writer of byte order `order` packs it (pointers
/// and the in-memory `nvl_flag` written as zeros).
pub fn pack(list: &XdrNvList, order: ByteOrder) -> Result<Vec<u8>, NativeError> {
    let endian = match order {
        ByteOrder::Little => 1,
        ByteOrder::Big => 0,
    };
    let mut w = Writer {
        out: vec![NV_ENCODE_NATIVE, endian, 0, 0],
        order,
    };
    w.u32(list.version as u32);
    w.u32(list.nvflag);
    w.pairs(list, 0)?;
    Ok(w.out)
}

/// The decoder's invariants on arbitrary bytes, for the fuzz target (fuzz/fuzz_targets/
/// nvpair_native.rs) and the seeded mutation tests; panics when one breaks:
/// - no input makes [`unpack`] panic;
/// - an accepted list packs again in its byte order to exactly the bytes consumed' length,
///   and that packing unpacks to the same list;
/// - the list packed in the other byte order decodes to the same list.
pub fn fuzz_check(data: &[u8]) {
    let Ok(u) = unpack(data) else { return };
    let bytes = match pack(&u.list, u.order) {
        Ok(b) => b,
        Err(e) => panic!("a decoded native nvlist does not encode: {e}"),
    };
    assert_eq!(
        bytes.len(),
        u.len,
        "re-encoded length differs from the bytes consumed"
    );
    match unpack(&bytes) {
        Ok(again) => assert_eq!(again.list, u.list, "re-encoding changed the list"),
        Err(e) => panic!("a re-encoded native nvlist does not decode: {e}"),
    }
    let other = match u.order {
        ByteOrder::Little => ByteOrder::Big,
        ByteOrder::Big => ByteOrder::Little,
    };
    let swapped = match pack(&u.list, other) {
        Ok(b) => b,
        Err(e) => panic!("a decoded native nvlist does not encode swapped: {e}"),
    };
    match unpack(&swapped) {
        Ok(again) => assert_eq!(again.list, u.list, "the other byte order changed the list"),
        Err(e) => panic!("a byte-swapped native nvlist does not decode: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvpair_xdr::tests::every_type;

    #[test]
    fn every_type_round_trips_in_both_orders() {
        // Why: history records come from writers of either byte order; a type decoded
        // wrongly in one order would misprint a record.
        let l = every_type();
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let b = pack(&l, order).unwrap();
            let u = unpack(&b).unwrap();
            assert_eq!(u.list, l);
            assert_eq!(u.order, order);
            assert_eq!(u.len, b.len());
            fuzz_check(&b);
        }
    }

    #[test]
    fn layout_of_one_pair() {
        // Why: the byte layout (sizes, alignment, end marker) must be OpenZFS's, not merely
        // self-consistent: {"a": uint64 1} as a little-endian writer packs it.
        let mut l = XdrNvList::new();
        l.add("a", XdrValue::Uint64(1));
        let b = pack(&l, ByteOrder::Little).unwrap();
        let expected: Vec<u8> = [
            &[0u8, 1, 0, 0][..],
            &[0, 0, 0, 0, 1, 0, 0, 0],
            // size 32, name_sz 2, reserved, nelem 1, type 8
            &[32, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0],
            b"a\0\0\0\0\0\0\0",
            &[1, 0, 0, 0, 0, 0, 0, 0],
            &[0, 0, 0, 0],
        ]
        .concat();
        assert_eq!(b, expected);
    }

    #[test]
    fn decoder_invariants_hold_on_mutations() {
        // Why: history bytes are outside input: flips, truncations and huge sizes in every
        // data type's encoding give typed errors, never a panic or a runaway allocation.
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let good = pack(&every_type(), order).unwrap();
            let mut rng = crate::rand::SeededRng::new(0x5eed_1e57);
            for cut in 0..good.len() {
                assert!(unpack(&good[..cut]).is_err(), "cut {cut}");
            }
            for at in (0..good.len().saturating_sub(4)).step_by(4) {
                for word in [u32::MAX, 0x7fff_ffff, 0x8000_0000, 0x10_0000, 1, 0, 24] {
                    let mut b = good.clone();
                    let w = match order {
                        ByteOrder::Little => word.to_le_bytes(),
                        ByteOrder::Big => word.to_be_bytes(),
                    };
                    b[at..at + 4].copy_from_slice(&w);
                    fuzz_check(&b);
                }
            }
            for _ in 0..20_000 {
                let mut b = good.clone();
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] ^= 1 << rng.below(8);
                }
                fuzz_check(&b);
            }
        }
    }

    #[test]
    fn hostile_shapes_are_refused_with_offsets() {
        // Why: each check OpenZFS makes on a packed pair must refuse, naming where.
        let mut l = XdrNvList::new();
        l.add("a", XdrValue::Uint64(1));
        let good = pack(&l, ByteOrder::Little).unwrap();
        // Size that is not the exact pair size.
        let mut b = good.clone();
        b[12] = 40;
        b.extend_from_slice(&[0; 8]);
        let e = unpack(&b).unwrap_err();
        assert_eq!(e.offset, 12, "{e}");
        // Name without its NUL.
        let mut b = good.clone();
        b[29] = b'x';
        assert_eq!(unpack(&b).unwrap_err().offset, 28);
        // Unknown type.
        let mut b = good.clone();
        b[24] = 99;
        assert_eq!(unpack(&b).unwrap_err().offset, 24);
        // Wrong encoding byte.
        let mut b = good.clone();
        b[0] = 1;
        assert_eq!(unpack(&b).unwrap_err().offset, 0);
        // Nesting beyond the limit.
        let mut deep = XdrNvList::new();
        for _ in 0..NATIVE_NESTING_MAX + 1 {
            let mut outer = XdrNvList::new();
            outer.add("n", XdrValue::NvList(deep));
            deep = outer;
        }
        assert!(pack(&deep, ByteOrder::Little).is_err());
    }
}
