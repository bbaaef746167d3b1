//! OpenZFS's XDR-encoded name/value lists (`nvlist_pack(.., NV_ENCODE_XDR)`, OpenZFS
//! `module/nvpair/nvpair.c`, `nvs_xdr_*`): the bytes of a vdev label's 112 KiB config area,
//! the MOS packed config object, pool history records, and (later) send-stream payloads.
//!
//! This is the on-disk format of real ZFS pools. Zetta's own pools still use the private
//! encoding of [`crate::nvlist`]; the two live side by side until the writer switches
//! (docs/ONDISK.md says which structure uses which).
//!
//! Byte layout (every XDR word is 4 bytes, big-endian, whatever the header's endian byte says):
//!
//! ```text
//! packed  := encoding:u8(=1 XDR) endian:u8(1 little, 0 big) reserved:u8 reserved:u8 nvlist
//! nvlist  := version:i32(=0) nvflag:u32 pair* 0:i32 0:i32
//! pair    := encode_size:i32 decode_size:i32 name:string type:i32 nelem:i32 value
//! string  := len:u32 bytes[len] zero-pad to a multiple of 4 (no NUL is stored)
//! value   := nothing when nelem == 0 (BOOLEAN, and every empty array)
//!          | BYTE/INT8/UINT8/INT16/UINT16/INT32/UINT32/BOOLEAN_VALUE: one word
//!          | INT64/UINT64/HRTIME/DOUBLE: two words (high word first)
//!          | STRING: string
//!          | BYTE_ARRAY: nelem bytes, zero-padded to 4 (no count)
//!          | <8|16|32-bit>_ARRAY, BOOLEAN_ARRAY: count:u32(=nelem) one word each
//!          | <64-bit>_ARRAY: count:u32(=nelem) two words each
//!          | STRING_ARRAY: string{nelem}
//!          | NVLIST: nvlist          | NVLIST_ARRAY: nvlist{nelem}
//! ```
//!
//! `encode_size` is the pair's XDR size as `nvs_xdr_nvp_size` counts it (with its quirk: an
//! empty 8/16/32/64-bit array still counts its 4-byte count word, which is not written);
//! `decode_size` is the size of the unpacked in-memory `nvpair_t`
//! (`NVP_SIZE_CALC(name + NUL, value)`, 8-byte aligned). A pair with `decode_size == 0` ends a
//! list. Pairs keep their order; duplicate names are kept as written ([`XdrNvList::get`]
//! returns the last one, as a unique-name list would hold).
//!
//! Decoding trusts nothing: every length and count is checked against the bytes left before
//! anything is allocated, nesting is bounded by [`XDR_NESTING_MAX`] (OpenZFS's kernel limit),
//! strings must not contain NUL, and every error carries the byte offset (from the start of the
//! packed buffer, header included). Like OpenZFS, the decoder ignores `encode_size`, accepts a
//! `decode_size` at least as large as the pair needs, ignores padding bytes and the two
//! reserved header bytes, and accepts 8/16-bit values written zero-extended (the kernel's
//! encoder) or sign-extended (libtirpc's). The encoder writes what OpenZFS's kernel writes, so
//! `pack(unpack(x)) == x` byte for byte for real labels (tests/nvpair_xdr_oracle.rs).

use std::fmt;

/// `nvs_header_t.nvh_encoding` for XDR.
pub const NV_ENCODE_XDR: u8 = 1;
/// `nvs_header_t.nvh_endian` of a little-endian writer (0 = big-endian).
pub const NV_ENDIAN_LITTLE: u8 = 1;
/// `nvl_nvflag`: names are unique (every config nvlist OpenZFS writes has it).
pub const NV_UNIQUE_NAME: u32 = 0x1;
/// `nvl_nvflag`: name and type pairs are unique.
pub const NV_UNIQUE_NAME_TYPE: u32 = 0x2;
/// `NV_VERSION`, the only nvlist version.
pub const NV_VERSION: i32 = 0;
/// Embedded nvlists allowed below the top one (`nvpair_max_recursion` in the kernel).
pub const XDR_NESTING_MAX: usize = 20;

/// OpenZFS `data_type_t` numbers.
pub mod data_type {
    pub const BOOLEAN: u32 = 1;
    pub const BYTE: u32 = 2;
    pub const INT16: u32 = 3;
    pub const UINT16: u32 = 4;
    pub const INT32: u32 = 5;
    pub const UINT32: u32 = 6;
    pub const INT64: u32 = 7;
    pub const UINT64: u32 = 8;
    pub const STRING: u32 = 9;
    pub const BYTE_ARRAY: u32 = 10;
    pub const INT16_ARRAY: u32 = 11;
    pub const UINT16_ARRAY: u32 = 12;
    pub const INT32_ARRAY: u32 = 13;
    pub const UINT32_ARRAY: u32 = 14;
    pub const INT64_ARRAY: u32 = 15;
    pub const UINT64_ARRAY: u32 = 16;
    pub const STRING_ARRAY: u32 = 17;
    pub const HRTIME: u32 = 18;
    pub const NVLIST: u32 = 19;
    pub const NVLIST_ARRAY: u32 = 20;
    pub const BOOLEAN_VALUE: u32 = 21;
    pub const INT8: u32 = 22;
    pub const UINT8: u32 = 23;
    pub const BOOLEAN_ARRAY: u32 = 24;
    pub const INT8_ARRAY: u32 = 25;
    pub const UINT8_ARRAY: u32 = 26;
    pub const DOUBLE: u32 = 27;
}

/// One value. Strings are bytes (C strings without their NUL): OpenZFS does not promise UTF-8.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XdrValue {
    /// A name with no value (`nvlist_add_boolean`).
    Boolean,
    BooleanValue(bool),
    Byte(u8),
    Int8(i8),
    Uint8(u8),
    Int16(i16),
    Uint16(u16),
    Int32(i32),
    Uint32(u32),
    Int64(i64),
    Uint64(u64),
    Hrtime(i64),
    /// An IEEE double, kept as its bits so values compare exactly.
    DoubleBits(u64),
    String(Vec<u8>),
    BooleanArray(Vec<bool>),
    ByteArray(Vec<u8>),
    Int8Array(Vec<i8>),
    Uint8Array(Vec<u8>),
    Int16Array(Vec<i16>),
    Uint16Array(Vec<u16>),
    Int32Array(Vec<i32>),
    Uint32Array(Vec<u32>),
    Int64Array(Vec<i64>),
    Uint64Array(Vec<u64>),
    StringArray(Vec<Vec<u8>>),
    NvList(XdrNvList),
    NvListArray(Vec<XdrNvList>),
}

impl XdrValue {
    /// The OpenZFS `data_type_t` of the value.
    pub fn data_type(&self) -> u32 {
        use data_type::*;
        match self {
            XdrValue::Boolean => BOOLEAN,
            XdrValue::BooleanValue(_) => BOOLEAN_VALUE,
            XdrValue::Byte(_) => BYTE,
            XdrValue::Int8(_) => INT8,
            XdrValue::Uint8(_) => UINT8,
            XdrValue::Int16(_) => INT16,
            XdrValue::Uint16(_) => UINT16,
            XdrValue::Int32(_) => INT32,
            XdrValue::Uint32(_) => UINT32,
            XdrValue::Int64(_) => INT64,
            XdrValue::Uint64(_) => UINT64,
            XdrValue::Hrtime(_) => HRTIME,
            XdrValue::DoubleBits(_) => DOUBLE,
            XdrValue::String(_) => STRING,
            XdrValue::BooleanArray(_) => BOOLEAN_ARRAY,
            XdrValue::ByteArray(_) => BYTE_ARRAY,
            XdrValue::Int8Array(_) => INT8_ARRAY,
            XdrValue::Uint8Array(_) => UINT8_ARRAY,
            XdrValue::Int16Array(_) => INT16_ARRAY,
            XdrValue::Uint16Array(_) => UINT16_ARRAY,
            XdrValue::Int32Array(_) => INT32_ARRAY,
            XdrValue::Uint32Array(_) => UINT32_ARRAY,
            XdrValue::Int64Array(_) => INT64_ARRAY,
            XdrValue::Uint64Array(_) => UINT64_ARRAY,
            XdrValue::StringArray(_) => STRING_ARRAY,
            XdrValue::NvList(_) => NVLIST,
            XdrValue::NvListArray(_) => NVLIST_ARRAY,
        }
    }

    /// `nvp_value_elem`: 0 for BOOLEAN, 1 for a scalar, the length of an array.
    pub fn nelem(&self) -> usize {
        match self {
            XdrValue::Boolean => 0,
            XdrValue::BooleanArray(v) => v.len(),
            XdrValue::ByteArray(v) | XdrValue::Uint8Array(v) => v.len(),
            XdrValue::Int8Array(v) => v.len(),
            XdrValue::Int16Array(v) => v.len(),
            XdrValue::Uint16Array(v) => v.len(),
            XdrValue::Int32Array(v) => v.len(),
            XdrValue::Uint32Array(v) => v.len(),
            XdrValue::Int64Array(v) => v.len(),
            XdrValue::Uint64Array(v) => v.len(),
            XdrValue::StringArray(v) => v.len(),
            XdrValue::NvListArray(v) => v.len(),
            _ => 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdrPair {
    pub name: Vec<u8>,
    pub value: XdrValue,
}

/// An nvlist: its flags and its pairs in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdrNvList {
    /// `nvl_version` (0; only the top list's is not checked on decode, as in OpenZFS).
    pub version: i32,
    /// `nvl_nvflag`: [`NV_UNIQUE_NAME`], [`NV_UNIQUE_NAME_TYPE`].
    pub nvflag: u32,
    pub pairs: Vec<XdrPair>,
}

impl Default for XdrNvList {
    fn default() -> Self {
        XdrNvList {
            version: NV_VERSION,
            nvflag: NV_UNIQUE_NAME,
            pairs: Vec::new(),
        }
    }
}

impl XdrNvList {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a pair, replacing an earlier one of the same name when names are unique
    /// (what `nvlist_add_*` does).
    pub fn add(&mut self, name: &str, value: XdrValue) {
        if self.nvflag & NV_UNIQUE_NAME != 0 {
            self.pairs.retain(|p| p.name != name.as_bytes());
        }
        self.pairs.push(XdrPair {
            name: name.as_bytes().to_vec(),
            value,
        });
    }

    /// The last value of that name.
    pub fn get(&self, name: &str) -> Option<&XdrValue> {
        self.pairs
            .iter()
            .rev()
            .find(|p| p.name == name.as_bytes())
            .map(|p| &p.value)
    }

    pub fn get_u64(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            XdrValue::Uint64(v) => Some(*v),
            _ => None,
        }
    }

    /// A STRING value, when it is UTF-8.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            XdrValue::String(v) => std::str::from_utf8(v).ok(),
            _ => None,
        }
    }

    pub fn get_nvlist(&self, name: &str) -> Option<&XdrNvList> {
        match self.get(name)? {
            XdrValue::NvList(v) => Some(v),
            _ => None,
        }
    }

    pub fn get_nvlist_array(&self, name: &str) -> Option<&[XdrNvList]> {
        match self.get(name)? {
            XdrValue::NvListArray(v) => Some(v),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdrError {
    /// Byte offset in the packed buffer (header included) where the fault was found.
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for XdrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed XDR nvlist at byte {}: {}",
            self.offset, self.reason
        )
    }
}

impl std::error::Error for XdrError {}

/// A decoded packed nvlist: the list, the writer's endian byte and how many bytes it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unpacked {
    pub list: XdrNvList,
    /// `nvh_endian` (1 little, 0 big): informative only, XDR is big-endian either way.
    pub endian: u8,
    /// Bytes consumed, header and end markers included; what follows (a label's zero fill)
    /// is not looked at.
    pub len: usize,
}

/// `nvlist_unpack` of an XDR-packed buffer.
pub fn unpack(buf: &[u8]) -> Result<Unpacked, XdrError> {
    if buf.len() < 4 {
        return Err(XdrError {
            offset: 0,
            reason: format!("{} bytes, shorter than the 4-byte header", buf.len()),
        });
    }
    if buf[0] != NV_ENCODE_XDR {
        return Err(XdrError {
            offset: 0,
            reason: format!("encoding {} is not XDR (1)", buf[0]),
        });
    }
    if buf[1] > 1 {
        return Err(XdrError {
            offset: 1,
            reason: format!("endian byte {} is neither 0 nor 1", buf[1]),
        });
    }
    let mut r = Reader { buf, pos: 4 };
    let list = r.nvlist(0)?;
    Ok(Unpacked {
        list,
        endian: buf[1],
        len: r.pos,
    })
}

/// `nvlist_pack(.., NV_ENCODE_XDR)` as a little-endian OpenZFS writes it.
pub fn pack(list: &XdrNvList) -> Result<Vec<u8>, XdrError> {
    pack_with_endian(list, NV_ENDIAN_LITTLE)
}

/// Packs with the given header endian byte (0 reproduces a big-endian writer's buffer).
pub fn pack_with_endian(list: &XdrNvList, endian: u8) -> Result<Vec<u8>, XdrError> {
    let mut out = vec![NV_ENCODE_XDR, endian, 0, 0];
    write_nvlist(&mut out, list, 0)?;
    Ok(out)
}

/// The packed size of `list` as OpenZFS's `nvlist_size` counts it, header included: the
/// exact length of [`pack`]'s output, plus 4 bytes for every empty 8/16/32/64-bit array
/// (OpenZFS counts a count word it does not write).
pub fn packed_size(list: &XdrNvList) -> Result<usize, XdrError> {
    Ok(4 + list_xdr_size(list, 0)?)
}

/// The text OpenZFS's `dump_nvlist(list, indent)` prints (libnvpair's `nvlist_snprintf`), the
/// format of `zdb -l` and `zdb -C`: `name: value` lines, strings in single quotes, arrays as
/// `name[i]: value`, nested lists indented by 4 more. HRTIME, DOUBLE and BOOLEAN_ARRAY print
/// OpenZFS's own "bad config type" line.
pub fn dump_nvlist(list: &XdrNvList, indent: usize) -> String {
    let mut out = String::new();
    dump_into(&mut out, list, indent);
    out
}

fn dump_into(out: &mut String, list: &XdrNvList, indent: usize) {
    use std::fmt::Write;
    let pad = " ".repeat(indent);
    for pair in &list.pairs {
        let name = String::from_utf8_lossy(&pair.name);
        let q = |s: &[u8]| format!("'{}'", String::from_utf8_lossy(s));
        let mut array = |items: Vec<String>| {
            for (i, v) in items.iter().enumerate() {
                let _ = writeln!(out, "{pad}{name}[{i}]: {v}");
            }
        };
        let scalar = match &pair.value {
            XdrValue::Boolean => {
                let _ = writeln!(out, "{pad}{name}");
                continue;
            }
            XdrValue::BooleanValue(b) => b.to_string(),
            XdrValue::Byte(v) | XdrValue::Uint8(v) => v.to_string(),
            XdrValue::Int8(v) => v.to_string(),
            XdrValue::Int16(v) => v.to_string(),
            XdrValue::Uint16(v) => v.to_string(),
            XdrValue::Int32(v) => v.to_string(),
            XdrValue::Uint32(v) => v.to_string(),
            XdrValue::Int64(v) => v.to_string(),
            XdrValue::Uint64(v) => v.to_string(),
            XdrValue::String(s) => q(s),
            XdrValue::ByteArray(v) | XdrValue::Uint8Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Int8Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Int16Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Uint16Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Int32Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Uint32Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Int64Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::Uint64Array(v) => {
                array(v.iter().map(|x| x.to_string()).collect());
                continue;
            }
            XdrValue::StringArray(v) => {
                array(v.iter().map(|x| q(x)).collect());
                continue;
            }
            XdrValue::NvList(l) => {
                let _ = writeln!(out, "{pad}{name}:");
                dump_into(out, l, indent + 4);
                continue;
            }
            XdrValue::NvListArray(v) => {
                for (i, l) in v.iter().enumerate() {
                    let _ = writeln!(out, "{pad}{name}[{i}]:");
                    dump_into(out, l, indent + 4);
                }
                continue;
            }
            XdrValue::Hrtime(_) | XdrValue::DoubleBits(_) | XdrValue::BooleanArray(_) => {
                let _ = writeln!(out, "bad config type {} for {name}", pair.value.data_type());
                continue;
            }
        };
        let _ = writeln!(out, "{pad}{name}: {scalar}");
    }
}

/// The decoder's invariants on arbitrary bytes, for the fuzz target (fuzz/fuzz_targets/
/// nvpair_xdr.rs) and the seeded mutation tests; panics when one breaks:
/// - no input makes [`unpack`] panic;
/// - an accepted list packs again, and that packing unpacks to the same list and length;
/// - re-packing is stable (`pack(unpack(pack(l))) == pack(l)`).
pub fn fuzz_check(data: &[u8]) {
    let Ok(u) = unpack(data) else { return };
    let bytes = match pack_with_endian(&u.list, u.endian) {
        Ok(b) => b,
        Err(e) => panic!("a decoded nvlist does not encode: {e}"),
    };
    assert_eq!(
        bytes.len(),
        u.len,
        "re-encoded length differs from the bytes consumed"
    );
    match unpack(&bytes) {
        Ok(again) => {
            assert_eq!(again.list, u.list, "re-encoding changed the list");
            assert_eq!(again.len, bytes.len());
        }
        Err(e) => panic!("a re-encoded nvlist does not decode: {e}"),
    }
}

// ---- sizes ----------------------------------------------------------------------------

fn align4(n: u64) -> u64 {
    (n + 3) & !3
}

fn align8(n: u64) -> u64 {
    (n + 7) & !7
}

const NVPAIR_T_SIZE: u64 = 16;
const NVLIST_T_SIZE: u64 = 24;
const I32_MAX: u64 = i32::MAX as u64;

/// `NVP_SIZE_CALC`: the unpacked size of a pair, stored as its `decode_size`.
fn native_size(name: &[u8], value: &XdrValue) -> u64 {
    let n = value.nelem() as u64;
    let value_size = match value {
        XdrValue::Boolean => 0,
        XdrValue::BooleanValue(_) | XdrValue::Int32(_) | XdrValue::Uint32(_) => 4,
        XdrValue::Byte(_) | XdrValue::Int8(_) | XdrValue::Uint8(_) => 1,
        XdrValue::Int16(_) | XdrValue::Uint16(_) => 2,
        XdrValue::Int64(_)
        | XdrValue::Uint64(_)
        | XdrValue::Hrtime(_)
        | XdrValue::DoubleBits(_) => 8,
        XdrValue::String(s) => s.len() as u64 + 1,
        XdrValue::BooleanArray(_) | XdrValue::Int32Array(_) | XdrValue::Uint32Array(_) => 4 * n,
        XdrValue::ByteArray(_) | XdrValue::Int8Array(_) | XdrValue::Uint8Array(_) => n,
        XdrValue::Int16Array(_) | XdrValue::Uint16Array(_) => 2 * n,
        XdrValue::Int64Array(_) | XdrValue::Uint64Array(_) => 8 * n,
        XdrValue::StringArray(v) => 8 * n + v.iter().map(|s| s.len() as u64 + 1).sum::<u64>(),
        XdrValue::NvList(_) => NVLIST_T_SIZE,
        XdrValue::NvListArray(_) => n * (8 + NVLIST_T_SIZE),
    };
    align8(NVPAIR_T_SIZE + name.len() as u64 + 1) + align8(value_size)
}

fn too_big(what: &str) -> XdrError {
    XdrError {
        offset: 0,
        reason: format!("{what} is larger than an nvlist can hold (2 GiB)"),
    }
}

/// `nvs_xdr_nvp_size`: the pair's `encode_size`.
fn pair_xdr_size(pair: &XdrPair, depth: usize) -> Result<u64, XdrError> {
    let value = &pair.value;
    let n = value.nelem() as u64;
    let mut size = 4 + 4 + 4 + align4(pair.name.len() as u64) + 4 + 4;
    size += match value {
        XdrValue::Boolean => 0,
        XdrValue::BooleanValue(_)
        | XdrValue::Byte(_)
        | XdrValue::Int8(_)
        | XdrValue::Uint8(_)
        | XdrValue::Int16(_)
        | XdrValue::Uint16(_)
        | XdrValue::Int32(_)
        | XdrValue::Uint32(_) => 4,
        XdrValue::Int64(_)
        | XdrValue::Uint64(_)
        | XdrValue::Hrtime(_)
        | XdrValue::DoubleBits(_) => 8,
        XdrValue::String(s) => 4 + align4(s.len() as u64),
        XdrValue::ByteArray(v) => align4(v.len() as u64),
        XdrValue::BooleanArray(_)
        | XdrValue::Int8Array(_)
        | XdrValue::Uint8Array(_)
        | XdrValue::Int16Array(_)
        | XdrValue::Uint16Array(_)
        | XdrValue::Int32Array(_)
        | XdrValue::Uint32Array(_) => 4 + 4 * n,
        XdrValue::Int64Array(_) | XdrValue::Uint64Array(_) => 4 + 8 * n,
        XdrValue::StringArray(v) => v.iter().map(|s| 4 + align4(s.len() as u64)).sum(),
        XdrValue::NvList(l) => list_xdr_size(l, depth + 1)? as u64,
        XdrValue::NvListArray(v) => {
            let mut total = 0u64;
            for l in v {
                total += list_xdr_size(l, depth + 1)? as u64;
                if total > I32_MAX {
                    return Err(too_big("an nvlist array"));
                }
            }
            total
        }
    };
    if size > I32_MAX {
        return Err(too_big("a pair"));
    }
    Ok(size)
}

/// XDR size of an nvlist body (version, flags, pairs, end marker), without the header.
fn list_xdr_size(list: &XdrNvList, depth: usize) -> Result<usize, XdrError> {
    if depth > XDR_NESTING_MAX {
        return Err(XdrError {
            offset: 0,
            reason: format!("nvlists nested deeper than {XDR_NESTING_MAX}"),
        });
    }
    let mut size = 16u64;
    for pair in &list.pairs {
        size += pair_xdr_size(pair, depth)?;
        if size > I32_MAX {
            return Err(too_big("an nvlist"));
        }
    }
    Ok(size as usize)
}

// ---- encoding -------------------------------------------------------------------------

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_opaque(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
    let pad = (4 - bytes.len() % 4) % 4;
    out.extend_from_slice(&[0u8; 3][..pad]);
}

fn put_string(out: &mut Vec<u8>, s: &[u8], what: &str) -> Result<(), XdrError> {
    if s.contains(&0) {
        return Err(XdrError {
            offset: out.len(),
            reason: format!("{what} contains a NUL byte"),
        });
    }
    put_u32(out, s.len() as u32);
    put_opaque(out, s);
    Ok(())
}

fn write_nvlist(out: &mut Vec<u8>, list: &XdrNvList, depth: usize) -> Result<(), XdrError> {
    if depth > XDR_NESTING_MAX {
        return Err(XdrError {
            offset: out.len(),
            reason: format!("nvlists nested deeper than {XDR_NESTING_MAX}"),
        });
    }
    put_u32(out, list.version as u32);
    put_u32(out, list.nvflag);
    for pair in &list.pairs {
        write_pair(out, pair, depth)?;
    }
    put_u32(out, 0);
    put_u32(out, 0);
    Ok(())
}

fn write_pair(out: &mut Vec<u8>, pair: &XdrPair, depth: usize) -> Result<(), XdrError> {
    let encode_size = pair_xdr_size(pair, depth)?;
    let decode_size = native_size(&pair.name, &pair.value);
    if decode_size > I32_MAX {
        return Err(too_big("a pair"));
    }
    put_u32(out, encode_size as u32);
    put_u32(out, decode_size as u32);
    put_string(out, &pair.name, "a name")?;
    put_u32(out, pair.value.data_type());
    let n = pair.value.nelem();
    put_u32(out, n as u32);
    if n == 0 {
        return Ok(());
    }
    match &pair.value {
        XdrValue::Boolean => {}
        XdrValue::BooleanValue(b) => put_u32(out, *b as u32),
        XdrValue::Byte(v) | XdrValue::Uint8(v) => put_u32(out, *v as u32),
        XdrValue::Int8(v) => put_u32(out, *v as u8 as u32),
        XdrValue::Int16(v) => put_u32(out, *v as u16 as u32),
        XdrValue::Uint16(v) => put_u32(out, *v as u32),
        XdrValue::Int32(v) => put_u32(out, *v as u32),
        XdrValue::Uint32(v) => put_u32(out, *v),
        XdrValue::Int64(v) | XdrValue::Hrtime(v) => put_u64(out, *v as u64),
        XdrValue::Uint64(v) | XdrValue::DoubleBits(v) => put_u64(out, *v),
        XdrValue::String(s) => put_string(out, s, "a string")?,
        XdrValue::ByteArray(v) => put_opaque(out, v),
        XdrValue::BooleanArray(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x as u32));
        }
        XdrValue::Int8Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x as u8 as u32));
        }
        XdrValue::Uint8Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x as u32));
        }
        XdrValue::Int16Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x as u16 as u32));
        }
        XdrValue::Uint16Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x as u32));
        }
        XdrValue::Int32Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x as u32));
        }
        XdrValue::Uint32Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u32(out, *x));
        }
        XdrValue::Int64Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u64(out, *x as u64));
        }
        XdrValue::Uint64Array(v) => {
            put_u32(out, n as u32);
            v.iter().for_each(|x| put_u64(out, *x));
        }
        XdrValue::StringArray(v) => {
            for s in v {
                put_string(out, s, "a string")?;
            }
        }
        XdrValue::NvList(l) => write_nvlist(out, l, depth + 1)?,
        XdrValue::NvListArray(v) => {
            for l in v {
                write_nvlist(out, l, depth + 1)?;
            }
        }
    }
    Ok(())
}

// ---- decoding -------------------------------------------------------------------------

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, offset: usize, reason: impl Into<String>) -> XdrError {
        XdrError {
            offset,
            reason: reason.into(),
        }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn u32(&mut self, what: &str) -> Result<u32, XdrError> {
        let bytes = self
            .buf
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.err(self.pos, format!("truncated in {what}")))?;
        self.pos += 4;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, XdrError> {
        let hi = self.u32(what)? as u64;
        let lo = self.u32(what)? as u64;
        Ok(hi << 32 | lo)
    }

    /// An 8- or 16-bit value in a word: zero-extended (kernel) or sign-extended (libtirpc).
    fn small(&mut self, bits: u32, what: &str) -> Result<u32, XdrError> {
        let at = self.pos;
        let word = self.u32(what)?;
        let mask = (1u32 << bits) - 1;
        let low = word & mask;
        let sign_extended = low & (1 << (bits - 1)) != 0 && word | mask == u32::MAX;
        if word > mask && !sign_extended {
            return Err(self.err(at, format!("{what}: {word:#x} does not fit in {bits} bits")));
        }
        Ok(low)
    }

    fn opaque(&mut self, len: usize, what: &str) -> Result<&'a [u8], XdrError> {
        let padded = len
            .checked_add(3)
            .map(|n| n & !3)
            .filter(|n| *n <= self.left())
            .ok_or_else(|| {
                self.err(
                    self.pos,
                    format!("{what}: {len} bytes, but only {} are left", self.left()),
                )
            })?;
        let bytes = &self.buf[self.pos..self.pos + len];
        self.pos += padded;
        Ok(bytes)
    }

    fn string(&mut self, what: &str) -> Result<Vec<u8>, XdrError> {
        let at = self.pos;
        let len = self.u32(what)? as usize;
        let bytes = self.opaque(len, what)?;
        if let Some(i) = bytes.iter().position(|b| *b == 0) {
            return Err(self.err(at + 4 + i, format!("{what} contains a NUL byte")));
        }
        Ok(bytes.to_vec())
    }

    /// Checks that `count` elements of at least `min_size` bytes each can be in what is left,
    /// before anything is allocated for them.
    fn check_count(&self, count: usize, min_size: usize, what: &str) -> Result<(), XdrError> {
        if count.saturating_mul(min_size) > self.left() {
            return Err(self.err(
                self.pos,
                format!(
                    "{what}: {count} elements cannot fit in the {} bytes left",
                    self.left()
                ),
            ));
        }
        Ok(())
    }

    /// The array count word of a numeric array, which must repeat `nelem`.
    fn array_count(&mut self, nelem: usize, elem_size: usize, what: &str) -> Result<(), XdrError> {
        let at = self.pos;
        let count = self.u32(what)? as usize;
        if count != nelem {
            return Err(self.err(
                at,
                format!("{what}: array count {count} differs from the pair's {nelem} elements"),
            ));
        }
        self.check_count(nelem, elem_size, what)
    }

    fn nvlist(&mut self, depth: usize) -> Result<XdrNvList, XdrError> {
        let at = self.pos;
        let version = self.u32("the nvlist version")? as i32;
        if depth > 0 && version != NV_VERSION {
            return Err(self.err(at, format!("nvlist version {version} is not 0")));
        }
        let nvflag = self.u32("the nvlist flags")?;
        let mut pairs = Vec::new();
        loop {
            let pair_at = self.pos;
            let _encode_size = self.u32("a pair's encoded size")?;
            let decode_size = self.u32("a pair's decoded size")?;
            if decode_size == 0 {
                break;
            }
            if decode_size > i32::MAX as u32 {
                return Err(self.err(
                    pair_at + 4,
                    format!("a pair's decoded size {decode_size} is negative"),
                ));
            }
            let name = self.string("a pair's name")?;
            let type_at = self.pos;
            let data_type = self.u32("a pair's type")?;
            let nelem_at = self.pos;
            let nelem = self.u32("a pair's element count")?;
            if nelem > i32::MAX as u32 {
                return Err(self.err(nelem_at, format!("element count {nelem} is negative")));
            }
            let value = self.value(data_type, nelem as usize, depth, type_at, nelem_at)?;
            let needed = native_size(&name, &value);
            if (decode_size as u64) < needed {
                return Err(self.err(
                    pair_at + 4,
                    format!(
                        "pair \"{}\": decoded size {decode_size} is smaller than the {needed} \
                         bytes it needs",
                        String::from_utf8_lossy(&name)
                    ),
                ));
            }
            pairs.push(XdrPair { name, value });
        }
        Ok(XdrNvList {
            version,
            nvflag,
            pairs,
        })
    }

    fn value(
        &mut self,
        data_type: u32,
        nelem: usize,
        depth: usize,
        type_at: usize,
        nelem_at: usize,
    ) -> Result<XdrValue, XdrError> {
        use data_type::*;
        let scalar = !matches!(
            data_type,
            BOOLEAN
                | BOOLEAN_ARRAY
                | BYTE_ARRAY
                | INT8_ARRAY
                | UINT8_ARRAY
                | INT16_ARRAY
                | UINT16_ARRAY
                | INT32_ARRAY
                | UINT32_ARRAY
                | INT64_ARRAY
                | UINT64_ARRAY
                | STRING_ARRAY
                | NVLIST_ARRAY
        );
        if !(BOOLEAN..=DOUBLE).contains(&data_type) {
            return Err(self.err(type_at, format!("unknown data type {data_type}")));
        }
        if (data_type == BOOLEAN && nelem != 0) || (scalar && nelem != 1) {
            return Err(self.err(
                nelem_at,
                format!("{nelem} elements for data type {data_type}"),
            ));
        }
        let v = match data_type {
            BOOLEAN => XdrValue::Boolean,
            BOOLEAN_VALUE => {
                let at = self.pos;
                match self.u32("a boolean")? {
                    0 => XdrValue::BooleanValue(false),
                    1 => XdrValue::BooleanValue(true),
                    other => return Err(self.err(at, format!("boolean value {other}"))),
                }
            }
            BYTE => XdrValue::Byte(self.small(8, "a byte")? as u8),
            INT8 => XdrValue::Int8(self.small(8, "an int8")? as u8 as i8),
            UINT8 => XdrValue::Uint8(self.small(8, "a uint8")? as u8),
            INT16 => XdrValue::Int16(self.small(16, "an int16")? as u16 as i16),
            UINT16 => XdrValue::Uint16(self.small(16, "a uint16")? as u16),
            INT32 => XdrValue::Int32(self.u32("an int32")? as i32),
            UINT32 => XdrValue::Uint32(self.u32("a uint32")?),
            INT64 => XdrValue::Int64(self.u64("an int64")? as i64),
            UINT64 => XdrValue::Uint64(self.u64("a uint64")?),
            HRTIME => XdrValue::Hrtime(self.u64("an hrtime")? as i64),
            DOUBLE => XdrValue::DoubleBits(self.u64("a double")?),
            STRING => XdrValue::String(self.string("a string")?),
            _ if nelem == 0 => match data_type {
                // Empty arrays have no value bytes at all, not even a count.
                BOOLEAN_ARRAY => XdrValue::BooleanArray(Vec::new()),
                BYTE_ARRAY => XdrValue::ByteArray(Vec::new()),
                INT8_ARRAY => XdrValue::Int8Array(Vec::new()),
                UINT8_ARRAY => XdrValue::Uint8Array(Vec::new()),
                INT16_ARRAY => XdrValue::Int16Array(Vec::new()),
                UINT16_ARRAY => XdrValue::Uint16Array(Vec::new()),
                INT32_ARRAY => XdrValue::Int32Array(Vec::new()),
                UINT32_ARRAY => XdrValue::Uint32Array(Vec::new()),
                INT64_ARRAY => XdrValue::Int64Array(Vec::new()),
                UINT64_ARRAY => XdrValue::Uint64Array(Vec::new()),
                STRING_ARRAY => XdrValue::StringArray(Vec::new()),
                _ => XdrValue::NvListArray(Vec::new()),
            },
            BYTE_ARRAY => XdrValue::ByteArray(self.opaque(nelem, "a byte array")?.to_vec()),
            BOOLEAN_ARRAY => {
                self.array_count(nelem, 4, "a boolean array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    let at = self.pos;
                    v.push(match self.u32("a boolean array")? {
                        0 => false,
                        1 => true,
                        other => return Err(self.err(at, format!("boolean value {other}"))),
                    });
                }
                XdrValue::BooleanArray(v)
            }
            INT8_ARRAY | UINT8_ARRAY => {
                self.array_count(nelem, 4, "an 8-bit array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    v.push(self.small(8, "an 8-bit array")? as u8);
                }
                if data_type == INT8_ARRAY {
                    XdrValue::Int8Array(v.into_iter().map(|x| x as i8).collect())
                } else {
                    XdrValue::Uint8Array(v)
                }
            }
            INT16_ARRAY | UINT16_ARRAY => {
                self.array_count(nelem, 4, "a 16-bit array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    v.push(self.small(16, "a 16-bit array")? as u16);
                }
                if data_type == INT16_ARRAY {
                    XdrValue::Int16Array(v.into_iter().map(|x| x as i16).collect())
                } else {
                    XdrValue::Uint16Array(v)
                }
            }
            INT32_ARRAY | UINT32_ARRAY => {
                self.array_count(nelem, 4, "a 32-bit array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    v.push(self.u32("a 32-bit array")?);
                }
                if data_type == INT32_ARRAY {
                    XdrValue::Int32Array(v.into_iter().map(|x| x as i32).collect())
                } else {
                    XdrValue::Uint32Array(v)
                }
            }
            INT64_ARRAY | UINT64_ARRAY => {
                self.array_count(nelem, 8, "a 64-bit array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    v.push(self.u64("a 64-bit array")?);
                }
                if data_type == INT64_ARRAY {
                    XdrValue::Int64Array(v.into_iter().map(|x| x as i64).collect())
                } else {
                    XdrValue::Uint64Array(v)
                }
            }
            STRING_ARRAY => {
                self.check_count(nelem, 4, "a string array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    v.push(self.string("a string array")?);
                }
                XdrValue::StringArray(v)
            }
            NVLIST => XdrValue::NvList(self.embedded(depth)?),
            NVLIST_ARRAY => {
                // Each embedded nvlist takes at least 16 bytes (version, flags, end marker).
                self.check_count(nelem, 16, "an nvlist array")?;
                let mut v = Vec::with_capacity(nelem);
                for _ in 0..nelem {
                    v.push(self.embedded(depth)?);
                }
                XdrValue::NvListArray(v)
            }
            _ => return Err(self.err(type_at, format!("unknown data type {data_type}"))),
        };
        Ok(v)
    }

    fn embedded(&mut self, depth: usize) -> Result<XdrNvList, XdrError> {
        if depth >= XDR_NESTING_MAX {
            return Err(self.err(
                self.pos,
                format!("nvlists nested deeper than {XDR_NESTING_MAX}"),
            ));
        }
        self.nvlist(depth + 1)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One pair of every data type (empty arrays and nested lists included): the native
    /// encoding's tests use it too.
    pub(crate) fn every_type() -> XdrNvList {
        let mut inner = XdrNvList::new();
        inner.add("type", XdrValue::String(b"disk".to_vec()));
        inner.add("id", XdrValue::Uint64(0));
        let mut l = XdrNvList::new();
        l.add("boolean", XdrValue::Boolean);
        l.add("boolean_value", XdrValue::BooleanValue(true));
        l.add("byte", XdrValue::Byte(0xfe));
        l.add("int8", XdrValue::Int8(-2));
        l.add("uint8", XdrValue::Uint8(200));
        l.add("int16", XdrValue::Int16(-300));
        l.add("uint16", XdrValue::Uint16(60000));
        l.add("int32", XdrValue::Int32(-70000));
        l.add("uint32", XdrValue::Uint32(4_000_000_000));
        l.add("int64", XdrValue::Int64(-5));
        l.add("uint64", XdrValue::Uint64(0x0123_4567_89ab_cdef));
        l.add("hrtime", XdrValue::Hrtime(123_456_789));
        l.add("double", XdrValue::DoubleBits(1.5f64.to_bits()));
        l.add("string", XdrValue::String(b"tank".to_vec()));
        l.add("empty_string", XdrValue::String(Vec::new()));
        l.add("boolean_array", XdrValue::BooleanArray(vec![true, false]));
        l.add("byte_array", XdrValue::ByteArray(vec![1, 2, 3, 4, 5]));
        l.add("int8_array", XdrValue::Int8Array(vec![-1, 1]));
        l.add("uint8_array", XdrValue::Uint8Array(vec![255]));
        l.add("int16_array", XdrValue::Int16Array(vec![-1, 7]));
        l.add("uint16_array", XdrValue::Uint16Array(vec![65535]));
        l.add("int32_array", XdrValue::Int32Array(vec![-1]));
        l.add("uint32_array", XdrValue::Uint32Array(vec![1, 2, 3]));
        l.add("int64_array", XdrValue::Int64Array(vec![i64::MIN]));
        l.add("uint64_array", XdrValue::Uint64Array(vec![1, u64::MAX]));
        l.add("empty_uint64_array", XdrValue::Uint64Array(Vec::new()));
        l.add(
            "string_array",
            XdrValue::StringArray(vec![b"a".to_vec(), Vec::new(), b"abcd".to_vec()]),
        );
        l.add("nvlist", XdrValue::NvList(inner.clone()));
        l.add(
            "nvlist_array",
            XdrValue::NvListArray(vec![inner.clone(), XdrNvList::new()]),
        );
        l.add("empty_nvlist_array", XdrValue::NvListArray(Vec::new()));
        l
    }

    #[test]
    fn every_type_round_trips() {
        let l = every_type();
        let bytes = pack(&l).unwrap();
        // One empty uint64 array: nvlist_size counts its unwritten count word.
        assert_eq!(bytes.len() + 4, packed_size(&l).unwrap());
        assert_eq!(bytes.len() % 4, 0);
        let u = unpack(&bytes).unwrap();
        assert_eq!(u.list, l);
        assert_eq!(u.len, bytes.len());
        assert_eq!(u.endian, NV_ENDIAN_LITTLE);
        assert_eq!(pack(&u.list).unwrap(), bytes);
    }

    /// A hand-checked vector: {"version": uint64 5000} as nvlist_pack writes it.
    #[test]
    fn golden_single_uint64() {
        let mut l = XdrNvList::new();
        l.add("version", XdrValue::Uint64(5000));
        let bytes = pack(&l).unwrap();
        let expected: Vec<u8> = [
            "01010000", // XDR, little-endian writer, reserved
            "00000000",
            "00000001", // nvl_version 0, NV_UNIQUE_NAME
            "00000024", // encode size 36
            "00000020", // decode size 32 = align8(16 + 8) + 8
            "00000007",
            "76657273696f6e00", // "version" + 1 pad byte
            "00000008",
            "00000001",         // DATA_TYPE_UINT64, 1 element
            "0000000000001388", // 5000
            "00000000",
            "00000000", // end of list
        ]
        .concat()
        .as_bytes()
        .chunks(2)
        .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap())
        .collect();
        assert_eq!(bytes, expected);
    }

    #[test]
    fn decoder_invariants_hold_on_mutations() {
        // Why: decoded bytes are outside input: flips, truncations and huge counts in every
        // data type's encoding give errors, never a panic or a runaway allocation.
        let good = pack(&every_type()).unwrap();
        let mut rng = crate::rand::SeededRng::new(0x0d15ea5e);
        for cut in 0..good.len() {
            assert!(unpack(&good[..cut]).is_err(), "cut {cut}");
        }
        for at in (0..good.len()).step_by(4) {
            for word in [u32::MAX, 0x7fff_ffff, 0x8000_0000, 0x10_0000, 1, 0] {
                let mut b = good.clone();
                b[at..at + 4].copy_from_slice(&word.to_be_bytes());
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

    /// {"a": <value>} with the value's words patched by `patch(bytes, value_offset)`.
    fn one_pair(value: XdrValue, patch: impl Fn(&mut Vec<u8>, usize)) -> Vec<u8> {
        let mut l = XdrNvList::new();
        l.add("a", value);
        let mut b = pack(&l).unwrap();
        // header 4, list 8, sizes 8, name 8, type and nelem 8.
        patch(&mut b, 36);
        b
    }

    #[test]
    fn faults_are_refused_at_their_offset() {
        let err = |b: Vec<u8>| unpack(&b).unwrap_err();
        let e = err(one_pair(XdrValue::BooleanValue(true), |b, at| {
            b[at + 3] = 2
        }));
        assert_eq!((e.offset, e.reason.as_str()), (36, "boolean value 2"));
        let e = err(one_pair(XdrValue::Uint64(1), |b, _| b[28 + 3] = 99));
        assert_eq!(e.offset, 28);
        assert!(e.reason.contains("unknown data type 99"), "{e}");
        let e = err(one_pair(XdrValue::Uint64(1), |b, _| b[32 + 3] = 2));
        assert_eq!(e.offset, 32);
        let e = err(one_pair(XdrValue::String(b"xy".to_vec()), |b, at| {
            b[at + 5] = 0
        }));
        assert_eq!(e.offset, 41);
        assert!(e.reason.contains("NUL"), "{e}");
        let e = err(one_pair(XdrValue::Uint64Array(vec![1]), |b, at| {
            b[at + 3] = 2
        }));
        assert_eq!(e.offset, 36);
        assert!(e.reason.contains("array count 2"), "{e}");
        // A decoded size too small for the pair, and a header that is not XDR.
        let e = err(one_pair(XdrValue::Uint64(1), |b, _| b[16 + 3] = 8));
        assert_eq!(e.offset, 16);
        let e = err(one_pair(XdrValue::Uint64(1), |b, _| b[0] = 0));
        assert_eq!(e.offset, 0);
        let mut l = XdrNvList::new();
        l.add("a\0b", XdrValue::Boolean);
        assert!(pack(&l).is_err());
    }

    #[test]
    fn openzfs_leniencies_are_kept() {
        // A larger decoded size, padding bytes, reserved header bytes and trailing bytes are
        // ignored, as nvlist_unpack ignores them.
        let l = {
            let mut l = XdrNvList::new();
            l.add("a", XdrValue::String(b"x".to_vec()));
            l
        };
        let mut b = one_pair(XdrValue::String(b"x".to_vec()), |b, at| {
            b[19] = 0xf0; // decode size 240
            b[at + 5] = 0xaa; // a padding byte of "x"
            b[2] = 7;
            b.extend_from_slice(&[0xee; 9]);
        });
        let u = unpack(&b).unwrap();
        assert_eq!(u.list, l);
        assert_eq!(u.len, b.len() - 9);
        b.truncate(u.len);
        assert_ne!(pack(&u.list).unwrap(), b);
    }

    #[test]
    fn sign_extended_small_values_decode() {
        // libtirpc on x86 writes a char of 0xfe as 0xfffffffe.
        let mut l = XdrNvList::new();
        l.add("b", XdrValue::Int8(-2));
        let mut bytes = pack(&l).unwrap();
        let at = bytes.len() - 8 - 4;
        bytes[at..at + 4].copy_from_slice(&0xffff_fffeu32.to_be_bytes());
        assert_eq!(unpack(&bytes).unwrap().list, l);
        bytes[at..at + 4].copy_from_slice(&0x0001_00feu32.to_be_bytes());
        assert!(unpack(&bytes).is_err());
    }

    #[test]
    fn nesting_is_bounded() {
        let mut l = XdrNvList::new();
        for _ in 0..XDR_NESTING_MAX {
            let mut outer = XdrNvList::new();
            outer.add("n", XdrValue::NvList(l));
            l = outer;
        }
        let bytes = pack(&l).unwrap();
        assert!(unpack(&bytes).is_ok());
        let mut outer = XdrNvList::new();
        outer.add("n", XdrValue::NvList(l));
        assert!(pack(&outer).is_err());
        // Hand-nest one level deeper than allowed: the decoder refuses it.
        let deep = {
            let mut body = Vec::new();
            let levels = XDR_NESTING_MAX + 1;
            for _ in 0..levels {
                body.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
                body.extend_from_slice(&[0, 0, 0, 0x30, 0, 0, 0, 0x30]);
                body.extend_from_slice(&[0, 0, 0, 1, b'n', 0, 0, 0]);
                body.extend_from_slice(&[0, 0, 0, 19, 0, 0, 0, 1]);
            }
            body.extend_from_slice(&[0u8; 16]);
            for _ in 0..levels {
                body.extend_from_slice(&[0u8; 8]);
            }
            let mut b = vec![1, 1, 0, 0];
            b.extend_from_slice(&body);
            b
        };
        let err = unpack(&deep).unwrap_err();
        assert!(err.reason.contains("nested"), "{err}");
    }
}
