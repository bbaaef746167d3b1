//! The master node and `znode_phys_t` of ZPL versions 1-4, and directory entries (OpenZFS
//! `include/sys/zfs_znode.h`, `zfs_sa.h`, `zfs_acl.h`).
//!
//! `znode_phys_t` is 264 bytes at the start of the bonus (type `DMU_OT_ZNODE`), in the byte
//! order of the dnode's block:
//!
//! ```text
//!   0 atime[sec, nsec]   16 mtime[2]   32 ctime[2]   48 crtime[2]
//!  64 gen (txg of creation)   72 mode   80 size   88 parent   96 links
//! 104 xattr (object of the xattr dir, 0 = none)   112 rdev   120 flags (ZFS_* below)
//! 128 uid   136 gid   144 zap (unused)   152 pad[3]
//! 176 acl: extern_obj u64 | size u32 (v0: ACE count) | version u16 | count u16 (v0: pad)
//!     | ace_data[72]  (up to 6 12-byte v0 ACEs, or v1 ACEs packed in 72 bytes)
//! 264 a symlink's target, if it fits: the bonus is then 264 + size bytes long
//! ```
//!
//! A directory's ZAP maps each name to one u64: the object number in the low 48 bits and,
//! from ZPL version 2 on, the file type (`mode >> 12`, the `DT_*` value) in the top 4 bits.

use crate::byteorder::ByteOrder;
use std::fmt;

/// The master node's object number.
pub const MASTER_NODE_OBJ: u64 = 1;

/// Master node keys.
pub const MASTER_VERSION: &str = "VERSION";
pub const MASTER_ROOT: &str = "ROOT";
pub const MASTER_DELETE_QUEUE: &str = "DELETE_QUEUE";
pub const MASTER_SA_ATTRS: &str = "SA_ATTRS";
pub const MASTER_FUID_TABLES: &str = "FUID";
pub const MASTER_SHARES: &str = "SHARES";
pub const MASTER_FSID: &str = "FSID";
/// The creation-time-only properties, stored in the master node under their property names.
pub const MASTER_NORMALIZATION: &str = "normalization";
pub const MASTER_UTF8ONLY: &str = "utf8only";
pub const MASTER_CASESENSITIVITY: &str = "casesensitivity";

/// ZPL versions and the version each feature appeared in.
pub const ZPL_VERSION_INITIAL: u64 = 1;
pub const ZPL_VERSION_DIRENT_TYPE: u64 = 2;
pub const ZPL_VERSION_FUID: u64 = 3;
pub const ZPL_VERSION_NORMALIZATION: u64 = 3;
pub const ZPL_VERSION_SYSATTR: u64 = 3;
pub const ZPL_VERSION_USERSPACE: u64 = 4;
pub const ZPL_VERSION_SA: u64 = 5;

/// `casesensitivity` values.
pub const CASE_SENSITIVE: u64 = 0;
pub const CASE_INSENSITIVE: u64 = 1;
pub const CASE_MIXED: u64 = 2;

/// Bonus types of a ZPL object's dnode.
pub const DMU_OT_ZNODE: u8 = 17;
pub const DMU_OT_SA: u8 = 44;

/// Bytes of a `znode_phys_t` (`ZFS_OLD_ZNODE_PHYS_SIZE`) and of its embedded ACL.
pub const ZNODE_PHYS_SIZE: usize = 264;
pub const ACL_PHYS_SIZE: usize = 88;
/// Where the ACL starts in the znode.
pub const ACL_OFFSET: usize = 176;
/// Bytes of embedded ACE space.
pub const ACE_SPACE: usize = 72;

/// `zp_flags` (`ZFS_*` pflags, the upper 32 bits are the DOS/system attributes).
pub const ZFS_XATTR: u64 = 0x1;
pub const ZFS_INHERIT_ACE: u64 = 0x2;
pub const ZFS_ACL_TRIVIAL: u64 = 0x4;
pub const ZFS_ACL_OBJ_ACE: u64 = 0x8;
pub const ZFS_ACL_PROTECTED: u64 = 0x10;
pub const ZFS_ACL_DEFAULTED: u64 = 0x20;
pub const ZFS_ACL_AUTO_INHERIT: u64 = 0x40;
pub const ZFS_BONUS_SCANSTAMP: u64 = 0x80;
pub const ZFS_NO_EXECS_DENIED: u64 = 0x100;
pub const ZFS_READONLY: u64 = 0x1_0000_0000;
pub const ZFS_HIDDEN: u64 = 0x2_0000_0000;
pub const ZFS_SYSTEM: u64 = 0x4_0000_0000;
pub const ZFS_ARCHIVE: u64 = 0x8_0000_0000;
pub const ZFS_IMMUTABLE: u64 = 0x10_0000_0000;
pub const ZFS_NOUNLINK: u64 = 0x20_0000_0000;
pub const ZFS_APPENDONLY: u64 = 0x40_0000_0000;
pub const ZFS_NODUMP: u64 = 0x80_0000_0000;
pub const ZFS_OPAQUE: u64 = 0x100_0000_0000;
pub const ZFS_AV_QUARANTINED: u64 = 0x200_0000_0000;
pub const ZFS_AV_MODIFIED: u64 = 0x400_0000_0000;
pub const ZFS_REPARSE: u64 = 0x800_0000_0000;
pub const ZFS_OFFLINE: u64 = 0x1000_0000_0000;
pub const ZFS_SPARSE: u64 = 0x2000_0000_0000;
pub const ZFS_PROJINHERIT: u64 = 0x4000_0000_0000;
/// The file has a `ZPL_PROJID` attribute.
pub const ZFS_PROJID: u64 = 0x8000_0000_0000;

/// A time as OpenZFS stores it: seconds and nanoseconds since 1970.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZTime {
    pub sec: u64,
    pub nsec: u64,
}

/// `zfs_acl_phys_t`, the ACL embedded in a znode (and the `ZPL_ZNODE_ACL` attribute of an
/// SA file upgraded from a znode). Its ACEs are kept raw: they are decoded by the ACL code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclPhys {
    /// Object holding the ACEs when they do not fit here (0 = embedded).
    pub extern_obj: u64,
    /// Version 1 (FUID): bytes of ACEs; version 0: the ACE count.
    pub size_or_count: u32,
    pub version: u16,
    /// Version 1: the ACE count; version 0: padding.
    pub count_or_pad: u16,
    pub ace_data: [u8; ACE_SPACE],
}

impl AclPhys {
    /// Decodes 88 bytes of `zfs_acl_phys_t` at `offset` of `buf`.
    pub fn decode_at(buf: &[u8], offset: usize, order: ByteOrder) -> Result<AclPhys, ZnodeError> {
        let short = || ZnodeError::TooShort {
            needed: offset.saturating_add(ACL_PHYS_SIZE),
            len: buf.len(),
        };
        let acl = offset
            .checked_add(ACL_PHYS_SIZE)
            .and_then(|end| buf.get(offset..end))
            .ok_or_else(short)?;
        let mut ace_data = [0u8; ACE_SPACE];
        ace_data.copy_from_slice(&acl[16..]);
        Ok(AclPhys {
            extern_obj: order.u64_at(acl, 0).map_err(|_| short())?,
            size_or_count: order.u32_at(acl, 8).map_err(|_| short())?,
            version: order.u16_at(acl, 12).map_err(|_| short())?,
            count_or_pad: order.u16_at(acl, 14).map_err(|_| short())?,
            ace_data,
        })
    }

    /// How many ACEs the ACL has, by its version.
    pub fn ace_count(&self) -> u64 {
        if self.version == 0 {
            u64::from(self.size_or_count)
        } else {
            u64::from(self.count_or_pad)
        }
    }
}

/// A decoded `znode_phys_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZnodePhys {
    pub atime: ZTime,
    pub mtime: ZTime,
    pub ctime: ZTime,
    pub crtime: ZTime,
    pub gen: u64,
    pub mode: u64,
    pub size: u64,
    pub parent: u64,
    pub links: u64,
    pub xattr: u64,
    pub rdev: u64,
    pub flags: u64,
    pub uid: u64,
    pub gid: u64,
    pub zap: u64,
    pub pad: [u64; 3],
    pub acl: AclPhys,
}

/// Bytes that do not hold what they should.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZnodeError {
    /// The bonus is shorter than the structure.
    TooShort { needed: usize, len: usize },
}

impl fmt::Display for ZnodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZnodeError::TooShort { needed, len } => {
                write!(f, "a {len}-byte bonus cannot hold a {needed}-byte znode")
            }
        }
    }
}

impl std::error::Error for ZnodeError {}

impl ZnodePhys {
    /// Decodes the `znode_phys_t` at the start of a `DMU_OT_ZNODE` bonus.
    pub fn decode(bonus: &[u8], order: ByteOrder) -> Result<ZnodePhys, ZnodeError> {
        if bonus.len() < ZNODE_PHYS_SIZE {
            return Err(ZnodeError::TooShort {
                needed: ZNODE_PHYS_SIZE,
                len: bonus.len(),
            });
        }
        let w = order
            .u64s_at::<22>(bonus, 0)
            .map_err(|_| ZnodeError::TooShort {
                needed: ZNODE_PHYS_SIZE,
                len: bonus.len(),
            })?;
        let t = |i: usize| ZTime {
            sec: w[i],
            nsec: w[i + 1],
        };
        Ok(ZnodePhys {
            atime: t(0),
            mtime: t(2),
            ctime: t(4),
            crtime: t(6),
            gen: w[8],
            mode: w[9],
            size: w[10],
            parent: w[11],
            links: w[12],
            xattr: w[13],
            rdev: w[14],
            flags: w[15],
            uid: w[16],
            gid: w[17],
            zap: w[18],
            pad: [w[19], w[20], w[21]],
            acl: AclPhys::decode_at(bonus, ACL_OFFSET, order)?,
        })
    }

    /// Whether this is a symbolic link (`S_IFLNK`).
    pub fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }

    /// A symlink's target when it lies in the bonus after the znode (it does when
    /// `264 + size` fits in the bonus, as OpenZFS's readlink decides); `None` when it is in
    /// the object's first data block instead, or this is not a symlink.
    pub fn inline_symlink<'a>(&self, bonus: &'a [u8]) -> Option<&'a [u8]> {
        if !self.is_symlink() {
            return None;
        }
        let end = usize::try_from(self.size)
            .ok()?
            .checked_add(ZNODE_PHYS_SIZE)?;
        bonus.get(ZNODE_PHYS_SIZE..end)
    }
}

/// `S_IFMT` and the file types of `mode`: POSIX's, the same in both formats.
pub use crate::zpl::znode::{
    S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK,
};

/// A directory entry's value: object number and file type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// Object number (low 48 bits).
    pub object: u64,
    /// `DT_*` type (top 4 bits: `mode >> 12`), 0 for entries of ZPL version 1.
    pub dtype: u8,
}

/// Bits of a directory entry's object number.
pub const DIRENT_OBJ_BITS: u32 = 48;

impl DirEntry {
    /// Decodes a directory ZAP value. Bits 48..60 are unused; they are ignored, as OpenZFS
    /// does (`ZFS_DIRENT_OBJ`).
    pub fn decode(value: u64) -> DirEntry {
        DirEntry {
            object: value & ((1u64 << DIRENT_OBJ_BITS) - 1),
            dtype: (value >> 60) as u8,
        }
    }

    pub fn encode(self) -> u64 {
        (u64::from(self.dtype & 0xf) << 60) | (self.object & ((1u64 << DIRENT_OBJ_BITS) - 1))
    }

    /// The `DT_*` type of a mode (`IFTODT`).
    pub fn dtype_of_mode(mode: u64) -> u8 {
        ((mode & S_IFMT) >> 12) as u8
    }

    /// The name zdb prints for the type ("Regular File", "Directory", ...).
    pub fn type_name(self) -> &'static str {
        const NAMES: [&str; 16] = [
            "not specified",
            "FIFO",
            "Character Device",
            "3 (invalid)",
            "Directory",
            "5 (invalid)",
            "Block Device",
            "7 (invalid)",
            "Regular File",
            "9 (invalid)",
            "Symbolic Link",
            "11 (invalid)",
            "Socket",
            "Door",
            "Event Port",
            "15 (invalid)",
        ];
        NAMES[usize::from(self.dtype & 0xf)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::openzfs::unhex;

    /// The bonus of object 4 (`/file.0`) of OpenZFS's zfs-pool-v1 fixture: a big-endian
    /// ZPL 1 znode; zdb prints gen 6, mode 100644, size 4, parent 3, links 1, pflags 4,
    /// mtime Thu Jun 8 12:28:54 2006.
    const FILE0_BE: &str = "\
        00000000448818060000000008b2208900000000448818060000000008b9e69d0000000044881806\
        0000000008b9e69d00000000448818060000000008b22089000000000000000600000000000081a4\
        00000000000000040000000000000003000000000000000100000000000000000000000000000000\
        00000000000000040000000000000000000000000000000000000000000000000000000000000000\
        0000000000000000000000000000000000000000000000000000000600000000ffffffff00000020\
        10000001ffffffff000c011710000000ffffffff0000002620400001ffffffff0000000120400000\
        ffffffff000c013640000001ffffffff0012008940000000";

    // Why: every pool before ZPL 5 keeps file attributes in this struct; golden bytes
    // from a real (big-endian) pool pin each field's offset and the v0 ACL header.
    #[test]
    fn golden_v1_znode_decodes() {
        let b = unhex(FILE0_BE);
        assert_eq!(b.len(), ZNODE_PHYS_SIZE);
        let z = ZnodePhys::decode(&b, ByteOrder::Big).unwrap();
        assert_eq!(z.mtime.sec, 0x4488_1806);
        assert_eq!(z.mtime.nsec, 0x08b9_e69d);
        assert_eq!(
            (z.gen, z.mode, z.size, z.parent, z.links),
            (6, 0o100644, 4, 3, 1)
        );
        assert_eq!((z.xattr, z.rdev, z.flags, z.uid, z.gid), (0, 0, 4, 0, 0));
        assert_eq!(
            (z.acl.extern_obj, z.acl.version, z.acl.ace_count()),
            (0, 0, 6)
        );
        assert!(!z.is_symlink());
        assert_eq!(z.inline_symlink(&b), None);
        assert!(ZnodePhys::decode(&b[..263], ByteOrder::Big).is_err());
    }

    // Why: a directory entry packs the object and the file type in one word; the type
    // bits must not leak into the object number.
    #[test]
    fn dirents_split_object_and_type() {
        let e = DirEntry::decode(0x8000_0000_0000_0022);
        assert_eq!((e.object, e.dtype, e.type_name()), (34, 8, "Regular File"));
        assert_eq!(e.encode(), 0x8000_0000_0000_0022);
        assert_eq!(DirEntry::dtype_of_mode(0o40755), 4);
        assert_eq!(DirEntry::decode(0x0fff_0000_0000_0005).object, 5);
    }
}
