//! System attributes: the attribute registry, the layouts, and the SA header of a bonus or
//! spill block, and every ZPL attribute of a file (OpenZFS `include/sys/sa_impl.h`,
//! `sa.h`, `zfs_sa.h`, `module/zfs/sa.c`, `zfs_sa.c`).
//!
//! A ZPL filesystem of version 5 names its SA master object in the master node
//! (`SA_ATTRS`); that ZAP names two more:
//!
//! - `REGISTRY`: attribute name → one u64 packing the attribute's number (bits 0-15), its
//!   byte-swap kind (bits 16-23: 0 u64 array, 1 u32, 2 u16, 3 u8, 4 ACL) and its length
//!   (bits 24-39; 0 = variable). zdb shows `ZPL_MODE = 8000005 : [8:0:5]`.
//! - `LAYOUTS`: layout number (decimal string) → the attribute numbers laid out, in order,
//!   as 2-byte integers. Layout 0 is the legacy `znode_phys_t` and layout 1 the empty one;
//!   both are built in and never stored.
//!
//! A bonus of type `DMU_OT_SA` (and a spill block) starts with the SA header, in the byte
//! order of its block:
//!
//! ```text
//! 0  magic u32 = 0x002f505a
//! 4  layout_info u16: bits 0-9 layout number, bits 10-15 header size / 8
//! 6  lengths u16[n]: the length of each variable-length attribute of the layout, in order
//!    (padding to the header size, a multiple of 8)
//! hdr  attributes, in the layout's order, each at an 8-byte-aligned offset: fixed ones
//!      of their registered length, variable ones of their `lengths` entry
//! ```
//!
//! A header layout number of 0 means layout 1 (empty). The header size must be
//! `roundup(6 + 2n, 8)` (OpenZFS asserts it). What does not fit in the bonus goes to the
//! spill block, which has a header of its own; a file's attributes are those of both.
//!
//! ZPL attributes (`zpl_attr_t`; the numbers are the registry's, the first 16 are fixed by
//! the legacy layout): ATIME, MTIME, CTIME, CRTIME ([sec, nsec]), GEN, MODE, SIZE,
//! PARENT, LINKS, XATTR, RDEV, FLAGS, UID, GID (u64), PAD (4 u64), ZNODE_ACL (88 bytes,
//! `zfs_acl_phys_t`), DACL_COUNT (u64), SYMLINK (the target), SCANSTAMP (32 bytes),
//! DACL_ACES (the ACEs, variable), DXATTR (the SA xattrs: an XDR-packed nvlist, name →
//! byte array), PROJID, SEQ (u64). Decoding trusts nothing: every length is checked
//! against the buffer, a layout not in the LAYOUTS ZAP and an attribute number not in the
//! registry are errors, a known attribute of the wrong length is an error.

use super::znode::{AclPhys, ZTime, ACL_PHYS_SIZE};
use super::ZapValue;
use crate::byteorder::ByteOrder;
use crate::nvpair_xdr::{self, XdrNvList, XdrValue};
use std::collections::BTreeMap;
use std::fmt;

pub const SA_MAGIC: u32 = 0x002f_505a;
/// SA master object entries.
pub const SA_LAYOUTS: &str = "LAYOUTS";
pub const SA_REGISTRY: &str = "REGISTRY";
/// Offset of the variable lengths in the header.
pub const SA_HDR_LENGTHS_OFFSET: usize = 6;
/// The empty layout a header layout number of 0 stands for.
pub const SA_LAYOUT_EMPTY: u64 = 1;
/// Layout numbers have 10 bits.
pub const SA_LAYOUT_NUM_MAX: u64 = (1 << 10) - 1;

/// Byte-swap kinds (`sa_bswap_type_t`).
pub const SA_UINT64_ARRAY: u8 = 0;
pub const SA_UINT32_ARRAY: u8 = 1;
pub const SA_UINT16_ARRAY: u8 = 2;
pub const SA_UINT8_ARRAY: u8 = 3;
pub const SA_ACL: u8 = 4;

/// ZPL attribute names, indexed by `zpl_attr_t`.
pub const ZPL_ATTR_NAMES: [&str; 23] = [
    "ZPL_ATIME",
    "ZPL_MTIME",
    "ZPL_CTIME",
    "ZPL_CRTIME",
    "ZPL_GEN",
    "ZPL_MODE",
    "ZPL_SIZE",
    "ZPL_PARENT",
    "ZPL_LINKS",
    "ZPL_XATTR",
    "ZPL_RDEV",
    "ZPL_FLAGS",
    "ZPL_UID",
    "ZPL_GID",
    "ZPL_PAD",
    "ZPL_ZNODE_ACL",
    "ZPL_DACL_COUNT",
    "ZPL_SYMLINK",
    "ZPL_SCANSTAMP",
    "ZPL_DACL_ACES",
    "ZPL_DXATTR",
    "ZPL_PROJID",
    "ZPL_SEQ",
];

/// OpenZFS's `zfs_attr_table` (`zfs_sa.c`): every ZPL attribute with its registered length
/// (0 = variable) and byte-swap kind, in the order a new filesystem numbers them (its
/// REGISTRY entries: attribute number = index). The first 16 are the legacy attributes,
/// numbered 0-15 in every ZPL filesystem whether or not the registry lists them
/// (`sa_legacy_attrs`). The reader knows them; the writer (`zpl::znode`) registers them.
pub const ZPL_ATTR_TABLE: [(&str, u16, u8); 22] = [
    ("ZPL_ATIME", 16, SA_UINT64_ARRAY),
    ("ZPL_MTIME", 16, SA_UINT64_ARRAY),
    ("ZPL_CTIME", 16, SA_UINT64_ARRAY),
    ("ZPL_CRTIME", 16, SA_UINT64_ARRAY),
    ("ZPL_GEN", 8, SA_UINT64_ARRAY),
    ("ZPL_MODE", 8, SA_UINT64_ARRAY),
    ("ZPL_SIZE", 8, SA_UINT64_ARRAY),
    ("ZPL_PARENT", 8, SA_UINT64_ARRAY),
    ("ZPL_LINKS", 8, SA_UINT64_ARRAY),
    ("ZPL_XATTR", 8, SA_UINT64_ARRAY),
    ("ZPL_RDEV", 8, SA_UINT64_ARRAY),
    ("ZPL_FLAGS", 8, SA_UINT64_ARRAY),
    ("ZPL_UID", 8, SA_UINT64_ARRAY),
    ("ZPL_GID", 8, SA_UINT64_ARRAY),
    ("ZPL_PAD", 32, SA_UINT64_ARRAY),
    ("ZPL_ZNODE_ACL", ACL_PHYS_SIZE as u16, SA_UINT8_ARRAY),
    ("ZPL_DACL_COUNT", 8, SA_UINT64_ARRAY),
    ("ZPL_SYMLINK", 0, SA_UINT8_ARRAY),
    ("ZPL_SCANSTAMP", 32, SA_UINT8_ARRAY),
    ("ZPL_DACL_ACES", 0, SA_ACL),
    ("ZPL_DXATTR", 0, SA_UINT8_ARRAY),
    ("ZPL_PROJID", 8, SA_UINT64_ARRAY),
];

/// How many of `ZPL_ATTR_TABLE`'s attributes are the legacy ones.
const LEGACY_ATTR_COUNT: usize = 16;

/// Why SA bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaError {
    /// A registry entry is not one integer.
    BadRegistryEntry { name: String },
    /// A layouts entry's name is not a layout number, or its value not attribute numbers.
    BadLayoutEntry { name: String },
    /// Fewer than the 8 bytes of the smallest header.
    TooShort { len: usize },
    /// The magic is 0x2f505a in neither byte order.
    BadMagic { magic: u32 },
    /// The header's layout is not in the LAYOUTS ZAP.
    UnknownLayout { layout: u64 },
    /// A layout names an attribute the registry does not know.
    UnknownAttribute { layout: u64, attr: u16 },
    /// The header size does not match the layout's variable attributes.
    HeaderSize { recorded: usize, expected: usize },
    /// An attribute (or the header) lies past the end of the buffer.
    Overrun {
        attr: u16,
        offset: usize,
        length: usize,
        len: usize,
    },
    /// A known ZPL attribute of the wrong length.
    BadLength { name: &'static str, length: usize },
    /// The SA xattr nvlist does not decode, or a value is not a byte array.
    BadXattrs { reason: String },
}

impl fmt::Display for SaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaError::BadRegistryEntry { name } => {
                write!(f, "SA registry entry {name:?} is not one integer")
            }
            SaError::BadLayoutEntry { name } => write!(f, "SA layout entry {name:?} is malformed"),
            SaError::TooShort { len } => write!(f, "{len} bytes cannot hold an SA header"),
            SaError::BadMagic { magic } => write!(f, "SA magic {magic:#x} is not 0x2f505a"),
            SaError::UnknownLayout { layout } => write!(f, "SA layout {layout} is not registered"),
            SaError::UnknownAttribute { layout, attr } => {
                write!(f, "SA layout {layout} names unregistered attribute {attr}")
            }
            SaError::HeaderSize { recorded, expected } => write!(
                f,
                "SA header records {recorded} bytes where its layout needs {expected}"
            ),
            SaError::Overrun {
                attr,
                offset,
                length,
                len,
            } => write!(
                f,
                "SA attribute {attr} ({length} bytes at {offset}) lies past the end of {len} bytes"
            ),
            SaError::BadLength { name, length } => {
                write!(f, "SA attribute {name} has {length} bytes")
            }
            SaError::BadXattrs { reason } => write!(f, "SA xattrs: {reason}"),
        }
    }
}

impl std::error::Error for SaError {}

/// One registry entry (`ATTR_ENCODE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaAttrReg {
    pub name: String,
    pub attr: u16,
    /// Bytes, 0 for a variable-length attribute.
    pub length: u16,
    pub bswap: u8,
}

impl SaAttrReg {
    pub fn decode(name: &str, value: u64) -> SaAttrReg {
        SaAttrReg {
            name: name.to_string(),
            attr: value as u16,
            bswap: (value >> 16) as u8,
            length: (value >> 24) as u16,
        }
    }

    pub fn encode(&self) -> u64 {
        u64::from(self.attr) | u64::from(self.bswap) << 16 | u64::from(self.length) << 24
    }
}

/// The attribute registry of an object set, by attribute number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaRegistry {
    pub by_attr: BTreeMap<u16, SaAttrReg>,
}

impl SaRegistry {
    /// The registry of a ZPL object set from its REGISTRY ZAP's entries; the 16 legacy
    /// attributes are known even if absent (as OpenZFS's `sa_setup` does for ZPL).
    pub fn from_zap<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a ZapValue)>,
    ) -> Result<SaRegistry, SaError> {
        let mut reg = SaRegistry::default();
        for (attr, (name, length, bswap)) in
            ZPL_ATTR_TABLE.iter().take(LEGACY_ATTR_COUNT).enumerate()
        {
            let attr = attr as u16;
            reg.by_attr.insert(
                attr,
                SaAttrReg {
                    name: name.to_string(),
                    attr,
                    length: *length,
                    bswap: *bswap,
                },
            );
        }
        for (name, value) in entries {
            let v = value.as_u64().ok_or_else(|| SaError::BadRegistryEntry {
                name: name.to_string(),
            })?;
            let entry = SaAttrReg::decode(name, v);
            reg.by_attr.insert(entry.attr, entry);
        }
        Ok(reg)
    }

    pub fn get(&self, attr: u16) -> Option<&SaAttrReg> {
        self.by_attr.get(&attr)
    }

    /// The number of the attribute registered as `name`.
    pub fn attr_of(&self, name: &str) -> Option<u16> {
        self.by_attr
            .values()
            .find(|r| r.name == name)
            .map(|r| r.attr)
    }
}

/// The layouts of an object set: layout number → attribute numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaLayouts {
    pub by_num: BTreeMap<u64, Vec<u16>>,
}

impl SaLayouts {
    /// The layouts from the LAYOUTS ZAP's entries (names are decimal layout numbers).
    pub fn from_zap<'a>(
        entries: impl IntoIterator<Item = (&'a str, &'a ZapValue)>,
    ) -> Result<SaLayouts, SaError> {
        let mut layouts = SaLayouts::default();
        for (name, value) in entries {
            let bad = || SaError::BadLayoutEntry {
                name: name.to_string(),
            };
            let num: u64 = name.parse().map_err(|_| bad())?;
            let attrs = match value {
                ZapValue::Ints(v) => v
                    .iter()
                    .map(|&a| u16::try_from(a).map_err(|_| bad()))
                    .collect::<Result<Vec<u16>, SaError>>()?,
                ZapValue::Bytes(_) => return Err(bad()),
            };
            layouts.by_num.insert(num, attrs);
        }
        Ok(layouts)
    }

    /// The attributes of layout `num` (the empty layout 1 is built in).
    pub fn get(&self, num: u64) -> Option<&[u16]> {
        match self.by_num.get(&num) {
            Some(attrs) => Some(attrs),
            None if num == SA_LAYOUT_EMPTY => Some(&[]),
            None => None,
        }
    }
}

/// A decoded SA header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaHeader {
    /// The layout number as recorded (0 stands for layout 1).
    pub layout: u64,
    /// Header bytes as recorded.
    pub header_size: usize,
    /// The lengths of the layout's variable-length attributes, in layout order.
    pub var_lengths: Vec<u16>,
    /// The byte order the magic was found in (OpenZFS swaps a buffer whose magic reads
    /// swapped, whatever its block pointer says).
    pub order: ByteOrder,
}

/// One attribute of an SA buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaAttr<'a> {
    pub attr: u16,
    pub bytes: &'a [u8],
}

/// An SA buffer (a bonus or a spill block) split into its attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaBuffer<'a> {
    pub header: SaHeader,
    pub attrs: Vec<SaAttr<'a>>,
}

fn roundup8(n: usize) -> Option<usize> {
    n.checked_add(7).map(|n| n & !7)
}

/// Splits an SA buffer into attributes.
pub fn decode_buffer<'a>(
    buf: &'a [u8],
    order: ByteOrder,
    registry: &SaRegistry,
    layouts: &SaLayouts,
) -> Result<SaBuffer<'a>, SaError> {
    let too_short = SaError::TooShort { len: buf.len() };
    let magic = order.u32_at(buf, 0).map_err(|_| too_short.clone())?;
    let order = if magic == SA_MAGIC {
        order
    } else if magic.swap_bytes() == SA_MAGIC {
        match order {
            ByteOrder::Little => ByteOrder::Big,
            ByteOrder::Big => ByteOrder::Little,
        }
    } else {
        return Err(SaError::BadMagic { magic });
    };
    let info = order.u16_at(buf, 4).map_err(|_| too_short.clone())?;
    let recorded_layout = u64::from(info & 0x3ff);
    let header_size = usize::from(info >> 10) * 8;
    let layout = if recorded_layout == 0 {
        SA_LAYOUT_EMPTY
    } else {
        recorded_layout
    };
    let attrs = layouts
        .get(layout)
        .ok_or(SaError::UnknownLayout { layout })?;
    let mut regs = Vec::with_capacity(attrs.len());
    for &attr in attrs {
        let reg = registry
            .get(attr)
            .ok_or(SaError::UnknownAttribute { layout, attr })?;
        regs.push(reg);
    }
    let var_count = regs.iter().filter(|r| r.length == 0).count();
    let expected = roundup8(SA_HDR_LENGTHS_OFFSET + 2 * var_count).unwrap_or(usize::MAX);
    if header_size != expected {
        return Err(SaError::HeaderSize {
            recorded: header_size,
            expected,
        });
    }
    if buf.len() < header_size {
        return Err(SaError::Overrun {
            attr: 0,
            offset: 0,
            length: header_size,
            len: buf.len(),
        });
    }
    let var_lengths = (0..var_count)
        .map(|i| order.u16_at(buf, SA_HDR_LENGTHS_OFFSET + 2 * i))
        .collect::<Result<Vec<u16>, _>>()
        .map_err(|_| too_short.clone())?;
    let mut out = Vec::with_capacity(regs.len());
    let mut offset = header_size;
    let mut var_iter = var_lengths.iter();
    for reg in regs {
        let length = if reg.length != 0 {
            usize::from(reg.length)
        } else {
            // One length per variable attribute: counted above.
            usize::from(var_iter.next().copied().unwrap_or(0))
        };
        let overrun = SaError::Overrun {
            attr: reg.attr,
            offset,
            length,
            len: buf.len(),
        };
        let end = offset.checked_add(length).ok_or(overrun.clone())?;
        let bytes = buf.get(offset..end).ok_or(overrun)?;
        out.push(SaAttr {
            attr: reg.attr,
            bytes,
        });
        offset = roundup8(end).unwrap_or(usize::MAX);
    }
    Ok(SaBuffer {
        header: SaHeader {
            layout: recorded_layout,
            header_size,
            var_lengths,
            order,
        },
        attrs: out,
    })
}

/// One SA xattr: name and value.
pub type SaXattr = (Vec<u8>, Vec<u8>);

/// Every ZPL attribute of a file, as far as its SA buffers hold them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZplAttrs {
    pub atime: Option<ZTime>,
    pub mtime: Option<ZTime>,
    pub ctime: Option<ZTime>,
    pub crtime: Option<ZTime>,
    pub gen: Option<u64>,
    pub mode: Option<u64>,
    pub size: Option<u64>,
    pub parent: Option<u64>,
    pub links: Option<u64>,
    pub xattr: Option<u64>,
    pub rdev: Option<u64>,
    pub flags: Option<u64>,
    pub uid: Option<u64>,
    pub gid: Option<u64>,
    pub pad: Option<[u64; 4]>,
    pub znode_acl: Option<AclPhys>,
    pub dacl_count: Option<u64>,
    pub symlink: Option<Vec<u8>>,
    pub scanstamp: Option<Vec<u8>>,
    /// The ACEs, raw, in `dacl_order`.
    pub dacl_aces: Option<Vec<u8>>,
    pub dacl_order: Option<ByteOrder>,
    /// The SA xattrs (ZPL_DXATTR), name → value, in the nvlist's order.
    pub sa_xattrs: Option<Vec<SaXattr>>,
    pub projid: Option<u64>,
    pub seq: Option<u64>,
    /// Attributes that are not ZPL's: (registered name, bytes).
    pub other: Vec<(String, Vec<u8>)>,
}

impl ZplAttrs {
    /// Collects the attributes of a file's SA buffers (the bonus, then the spill block if
    /// any); an attribute present in both keeps the later one.
    pub fn from_buffers(
        buffers: &[SaBuffer<'_>],
        registry: &SaRegistry,
    ) -> Result<ZplAttrs, SaError> {
        let mut z = ZplAttrs::default();
        for buffer in buffers {
            let order = buffer.header.order;
            for a in &buffer.attrs {
                let name = registry.get(a.attr).map(|r| r.name.as_str()).unwrap_or("");
                z.set(name, a.bytes, order)?;
            }
        }
        Ok(z)
    }

    fn set(&mut self, name: &str, bytes: &[u8], order: ByteOrder) -> Result<(), SaError> {
        let Some(known) = ZPL_ATTR_NAMES.iter().copied().find(|n| *n == name) else {
            self.other.push((name.to_string(), bytes.to_vec()));
            return Ok(());
        };
        let bad = || SaError::BadLength {
            name: known,
            length: bytes.len(),
        };
        let u64s = |n: usize| -> Result<Vec<u64>, SaError> {
            if bytes.len() != 8 * n {
                return Err(bad());
            }
            (0..n)
                .map(|i| order.u64_at(bytes, 8 * i).map_err(|_| bad()))
                .collect()
        };
        let one = || u64s(1).map(|v| v[0]);
        let time = || {
            u64s(2).map(|v| ZTime {
                sec: v[0],
                nsec: v[1],
            })
        };
        match known {
            "ZPL_ATIME" => self.atime = Some(time()?),
            "ZPL_MTIME" => self.mtime = Some(time()?),
            "ZPL_CTIME" => self.ctime = Some(time()?),
            "ZPL_CRTIME" => self.crtime = Some(time()?),
            "ZPL_GEN" => self.gen = Some(one()?),
            "ZPL_MODE" => self.mode = Some(one()?),
            "ZPL_SIZE" => self.size = Some(one()?),
            "ZPL_PARENT" => self.parent = Some(one()?),
            "ZPL_LINKS" => self.links = Some(one()?),
            "ZPL_XATTR" => self.xattr = Some(one()?),
            "ZPL_RDEV" => self.rdev = Some(one()?),
            "ZPL_FLAGS" => self.flags = Some(one()?),
            "ZPL_UID" => self.uid = Some(one()?),
            "ZPL_GID" => self.gid = Some(one()?),
            "ZPL_PAD" => {
                let v = u64s(4)?;
                self.pad = Some([v[0], v[1], v[2], v[3]]);
            }
            "ZPL_ZNODE_ACL" => {
                if bytes.len() != ACL_PHYS_SIZE {
                    return Err(bad());
                }
                self.znode_acl = Some(AclPhys::decode_at(bytes, 0, order).map_err(|_| bad())?);
            }
            "ZPL_DACL_COUNT" => self.dacl_count = Some(one()?),
            "ZPL_SYMLINK" => self.symlink = Some(bytes.to_vec()),
            "ZPL_SCANSTAMP" => self.scanstamp = Some(bytes.to_vec()),
            "ZPL_DACL_ACES" => {
                self.dacl_aces = Some(bytes.to_vec());
                self.dacl_order = Some(order);
            }
            "ZPL_DXATTR" => self.sa_xattrs = Some(decode_sa_xattrs(bytes)?),
            "ZPL_PROJID" => self.projid = Some(one()?),
            "ZPL_SEQ" => self.seq = Some(one()?),
            _ => self.other.push((name.to_string(), bytes.to_vec())),
        }
        Ok(())
    }
}

/// Decodes the ZPL_DXATTR attribute: an XDR-packed nvlist of name → byte array.
pub fn decode_sa_xattrs(bytes: &[u8]) -> Result<Vec<SaXattr>, SaError> {
    let list: XdrNvList = nvpair_xdr::unpack(bytes)
        .map_err(|e| SaError::BadXattrs {
            reason: e.to_string(),
        })?
        .list;
    list.pairs
        .into_iter()
        .map(|p| match p.value {
            XdrValue::ByteArray(v) | XdrValue::Uint8Array(v) => Ok((p.name, v)),
            other => Err(SaError::BadXattrs {
                reason: format!(
                    "xattr {:?} has data type {}, not a byte array",
                    String::from_utf8_lossy(&p.name),
                    other.data_type()
                ),
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bonus of object 2 (`/zstd`) of OpenZFS's testpool_zstd/ppc64_fbsd: a big-endian
    /// SA bonus in layout 2 with one variable attribute (24 bytes of ACEs).
    const ZSTD_FILE_BE: &str = "\
        002f505a04020018000000000000816d0000000000023a7800000000000000110000000000000000\
        00000000000000000000000000000022000004080000010400000000609bbc8a00000000065e7c4a\
        00000000609b7c96000000000c2442d800000000609b7c96000000000c2442d800000000609b7c96\
        00000000084612900000000000000001000000000000000300001000001e01b900002040001200a9\
        00004000001200a9";

    fn tables() -> (SaRegistry, SaLayouts) {
        // The fixture's REGISTRY values (zdb: `ZPL_DACL_ACES = 40013 : [0:4:19]`, ...).
        let reg: Vec<(String, ZapValue)> = [
            ("ZPL_DACL_COUNT", 0x8000010u64),
            ("ZPL_DACL_ACES", 0x40013),
            ("ZPL_SYMLINK", 0x30011),
            ("ZPL_DXATTR", 0x30014),
            ("ZPL_PROJID", 0x8000015),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), ZapValue::Ints(vec![*v])))
        .collect();
        let registry = SaRegistry::from_zap(reg.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
        let layout = ZapValue::Ints(vec![5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19]);
        let layouts = SaLayouts::from_zap([("2", &layout)]).unwrap();
        (registry, layouts)
    }

    // Why: golden bytes from a real big-endian SA bonus pin the header (magic, layout,
    // header size, variable lengths), the 8-byte alignment and every attribute's place.
    #[test]
    fn golden_sa_bonus_decodes() {
        let b = crate::dsl::openzfs::unhex(ZSTD_FILE_BE);
        assert_eq!(b.len(), 168);
        let (registry, layouts) = tables();
        let buf = decode_buffer(&b, ByteOrder::Big, &registry, &layouts).unwrap();
        assert_eq!((buf.header.layout, buf.header.header_size), (2, 8));
        assert_eq!(buf.header.var_lengths, [24]);
        let z = ZplAttrs::from_buffers(&[buf], &registry).unwrap();
        assert_eq!(z.mode, Some(0o100555));
        assert_eq!(z.size, Some(146_040));
        assert_eq!(
            (z.gen, z.uid, z.gid, z.parent),
            (Some(17), Some(0), Some(0), Some(34))
        );
        assert_eq!(z.flags, Some(0x408_0000_0104));
        assert_eq!(z.atime.map(|t| t.sec), Some(0x609b_bc8a));
        assert_eq!((z.links, z.dacl_count), (Some(1), Some(3)));
        assert_eq!(z.dacl_aces.as_ref().map(Vec::len), Some(24));
        assert_eq!(z.dacl_order, Some(ByteOrder::Big));
        assert_eq!((z.xattr, z.rdev, z.symlink.as_ref()), (None, None, None));
        // The registry entry codec.
        let r = SaAttrReg::decode("ZPL_ZNODE_ACL", 0x5803000f);
        assert_eq!((r.attr, r.length, r.bswap), (15, 88, SA_UINT8_ARRAY));
        assert_eq!(r.encode(), 0x5803000f);
        assert_eq!(registry.attr_of("ZPL_DXATTR"), Some(20));
    }

    // Why: a file whose attributes overflow the bonus keeps the rest in a spill block with
    // its own header; the file's attributes are the union of both.
    #[test]
    fn bonus_and_spill_attributes_merge() {
        let (registry, mut layouts) = tables();
        layouts.by_num.insert(3, vec![17]); // the spill holds the symlink target
        let target = b"/a/long/target";
        let mut spill = Vec::new();
        spill.extend_from_slice(&SA_MAGIC.to_le_bytes());
        spill.extend_from_slice(&(3u16 | 1 << 10).to_le_bytes());
        spill.extend_from_slice(&(target.len() as u16).to_le_bytes());
        spill.extend_from_slice(target);
        let b = crate::dsl::openzfs::unhex(ZSTD_FILE_BE);
        let bonus = decode_buffer(&b, ByteOrder::Big, &registry, &layouts).unwrap();
        let spill = decode_buffer(&spill, ByteOrder::Little, &registry, &layouts).unwrap();
        let z = ZplAttrs::from_buffers(&[bonus, spill], &registry).unwrap();
        assert_eq!(z.symlink.as_deref(), Some(&target[..]));
        assert_eq!(z.mode, Some(0o100555));
    }
}

/// One fuzz input through the bonus-buffer decoders (the fuzz target `openzfs_bonus` and a
/// unit test call it): byte 0 picks the order, byte 1 a layout of attributes built from the
/// next bytes (registered as ZPL's legacy attributes, plus a variable-length one), and the
/// rest is a bonus buffer read as an SA buffer (then as ZPL attributes and SA xattrs), a
/// `znode_phys_t` with its inline symlink and ACL, a `dsl_dir_phys_t` and a
/// `dsl_dataset_phys_t`, and a Zetta SA bonus (`zpl::znode`). Nothing may panic;
/// attributes lie inside the buffer.
pub fn fuzz_check(data: &[u8]) {
    use crate::dsl::openzfs::dataset::DslDatasetPhys;
    use crate::dsl::openzfs::dir::DslDirPhys;
    use crate::zpl::openzfs::znode::ZnodePhys;
    let [head, n, ..] = *data else {
        return;
    };
    let order = if head & 1 == 1 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let n = usize::from(n % 24).min(data.len() - 2);
    let layout: Vec<u16> = data[2..2 + n].iter().map(|b| u16::from(b % 40)).collect();
    let buf = &data[2 + n..];
    let Ok(mut registry) = SaRegistry::from_zap(std::iter::empty()) else {
        return;
    };
    // One attribute of variable length and one of a length the bytes choose.
    registry
        .by_attr
        .insert(32, SaAttrReg::decode("org.test:var", 32 | 2 << 24));
    registry.by_attr.insert(
        33,
        SaAttrReg::decode("org.test:fixed", 33 | u64::from(head) << 16),
    );
    let mut layouts = SaLayouts::default();
    for num in 2..4 {
        layouts.by_num.insert(num, layout.clone());
    }
    if let Ok(sa) = decode_buffer(buf, order, &registry, &layouts) {
        for a in &sa.attrs {
            let inside = a.bytes.as_ptr() as usize >= buf.as_ptr() as usize
                && a.bytes.as_ptr() as usize + a.bytes.len() <= buf.as_ptr() as usize + buf.len();
            assert!(inside, "attribute {} outside its buffer", a.attr);
        }
        let _ = ZplAttrs::from_buffers(&[sa.clone(), sa], &registry);
    }
    let _ = decode_sa_xattrs(buf);
    // The engine's own SA bonus decoder (what a Zetta pool's znodes go through).
    if let Ok((_, Some(range))) = crate::zpl::znode::ZnodePhys::decode_sa(buf) {
        assert!(range.end <= buf.len(), "symlink outside its bonus");
    }
    if let Ok(z) = ZnodePhys::decode(buf, order) {
        let _ = z.is_symlink();
        if let Some(target) = z.inline_symlink(buf) {
            assert!(target.len() <= buf.len());
        }
    }
    let _ = AclPhys::decode_at(buf, usize::from(head), order);
    let _ = DslDirPhys::decode(buf, order).map(|d| d.encode(order));
    let _ = DslDatasetPhys::decode(buf, order).map(|d| (d.encode(order), d.is_snapshot()));
}

#[cfg(test)]
mod fuzz_tests {
    use super::*;

    // Why: the fuzz target's check must hold on seeded inputs in the default suite: random
    // buffers, half of them with the SA magic and a layout number in front.
    #[test]
    fn fuzz_check_holds_on_random_inputs() {
        let mut rng = crate::rand::SeededRng::new(0x5a5a);
        for i in 0..5000u64 {
            let len = [0, 3, 20, 100, 264, 320, 600][(i % 7) as usize];
            let mut input = vec![0u8; len];
            rng.fill(&mut input);
            if len > 40 && i % 2 == 0 {
                let n = usize::from(input[1] % 24);
                let at = 2 + n;
                let order = if input[0] & 1 == 1 {
                    ByteOrder::Big
                } else {
                    ByteOrder::Little
                };
                let magic = match order {
                    ByteOrder::Big => SA_MAGIC.to_be_bytes(),
                    ByteOrder::Little => SA_MAGIC.to_le_bytes(),
                };
                input[at..at + 4].copy_from_slice(&magic);
                // Layout 2 or 3, a small header size.
                let info: u16 = (2 + (i % 2) as u16) | ((1 + (i % 3) as u16) << 10);
                let info = match order {
                    ByteOrder::Big => info.to_be_bytes(),
                    ByteOrder::Little => info.to_le_bytes(),
                };
                input[at + 4..at + 6].copy_from_slice(&info);
            }
            fuzz_check(&input);
        }
    }
}
