//! The znode: a file's attributes, kept in its dnode's bonus buffer as OpenZFS's ZPL
//! system attributes (OpenZFS `zfs_znode.c` `zfs_mknode`, `zfs_sa.c`, `sa.c`).
//!
//! Theory. Every ZPL object — file, directory, symlink, device node, fifo, socket — carries
//! an SA bonus (bonus type `DMU_OT_SA` = 44) laid out as OpenZFS's `zfs_mknode` lays out a
//! new file: an 8- or 16-byte SA header, then the attributes of one of the layouts below,
//! each at an 8-byte-aligned offset. The dnode is created with OpenZFS's bonus room for a
//! 512-byte dnode (`DN_BONUS_SIZE` = 320 bytes, so `nblkptr` 1), and its bonus length is
//! what the attributes use (`sa_build_layouts`: header + the attributes, the last one not
//! padded). The file's size lives here (`ZPL_SIZE`), not in the dnode: the dnode's size is
//! where data blocks end (they differ for a directory, whose data is a ZAP, and after an
//! extending truncate of a sparse file).
//!
//! ```text
//! 0   magic u32 0x2f505a | layout_info u16 (layout | hdr/8 << 10) | lengths u16[] (var attrs)
//! hdr ZPL_MODE u64, ZPL_SIZE, ZPL_GEN, ZPL_UID, ZPL_GID, ZPL_PARENT, ZPL_FLAGS,
//!     ZPL_ATIME [sec, nsec], ZPL_MTIME, ZPL_CTIME, ZPL_CRTIME, ZPL_LINKS,
//!     (ZPL_RDEV: device nodes), ZPL_DACL_COUNT u64, ZPL_DACL_ACES (8 bytes per ACE),
//!     (ZPL_SYMLINK: short symlink targets), (ZPL_XATTR: once the file has xattrs)
//! ```
//!
//! What does not fit the bonus goes to the object's spill block, split as OpenZFS's
//! `sa_build_layouts` splits it (`sa_split`, `encode_sa_spill`): with trivial ACLs only a
//! long symlink target (and the xattr word after it) spills, under layout 8 or 9.
//!
//! Invariants: the layouts Zetta writes are the eight of `ZETTA_LAYOUTS`, all registered in
//! the filesystem's LAYOUTS ZAP when it is created (numbers 2-9; 8 and 9 added at the first
//! spill of a filesystem made before them), with the attribute numbers of
//! OpenZFS's `zfs_attr_table` (REGISTRY). The ACL is OpenZFS's trivial ACL of the mode
//! (`acl_trivial_access_masks`, `zfs_acl_chmod`), recomputed whenever the bonus is written,
//! and `ZPL_FLAGS` carries `ZFS_NO_EXECS_DENIED` exactly when owner, group and others may all
//! execute (`zfs_mode_compute`). Encoding and decoding allocate nothing; decoding checks the
//! magic (either byte order), the layout, the header size and every offset against the
//! buffer, so a malformed bonus is an error, never a panic.
//!
//! `ZnodePhys::encode`/`decode` are the intent log's fixed 160-byte record of a znode (the
//! private ZIL, until issue 14's ZIL increment), not an on-disk bonus.

use super::openzfs::sa::{SA_HDR_LENGTHS_OFFSET, SA_MAGIC};
use crate::byteorder::ByteOrder;

/// Bytes of the intent log's znode record (`ZnodePhys::encode`).
pub const ZNODE_SIZE_BYTES: usize = 160;
/// `bonus_type` of a dnode whose bonus is a znode: `DMU_OT_SA`.
pub const BONUS_TYPE_ZNODE: u8 = 44;
/// The bonus room a ZPL object is created with: `DN_BONUS_SIZE(512)` (one block pointer).
pub const SA_BONUS_BYTES: usize = 320;

/// Object types of the ZPL's SA objects and delete queue (`dmu_object_type_t`).
pub const OT_UNLINKED_SET: u8 = 22;
pub const OT_SA_MASTER_NODE: u8 = 45;
pub const OT_SA_ATTR_REGISTRATION: u8 = 46;
pub const OT_SA_ATTR_LAYOUTS: u8 = 47;

/// ZPL pflags (`zfs_znode.h`) a new file gets (`zfs_mknode` with FUIDs, trivial ACL).
pub const ZFS_ARCHIVE: u64 = 0x0000_0008_0000_0000;
pub const ZFS_AV_MODIFIED: u64 = 0x0000_0400_0000_0000;
pub const ZFS_ACL_TRIVIAL: u64 = 0x4;
pub const ZFS_NO_EXECS_DENIED: u64 = 0x100;
/// The pflags of a new file, before `ZFS_NO_EXECS_DENIED`.
pub const ZFS_NEW_FILE_FLAGS: u64 = ZFS_ARCHIVE | ZFS_AV_MODIFIED | ZFS_ACL_TRIVIAL;

pub const S_IFMT: u64 = 0o170000;
pub const S_IFSOCK: u64 = 0o140000;
pub const S_IFLNK: u64 = 0o120000;
pub const S_IFREG: u64 = 0o100000;
pub const S_IFBLK: u64 = 0o060000;
pub const S_IFDIR: u64 = 0o040000;
pub const S_IFCHR: u64 = 0o020000;
pub const S_IFIFO: u64 = 0o010000;

/// A point in time with nanoseconds; seconds are signed 64-bit (before 1970, past 2038).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: u32,
}

impl Timespec {
    pub fn now() -> Timespec {
        if let Some(sec) = crate::io::sim::clock_secs() {
            return Timespec { sec, nsec: 0 };
        }
        match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => Timespec {
                sec: d.as_secs() as i64,
                nsec: d.subsec_nanos(),
            },
            Err(e) => {
                let d = e.duration();
                Timespec {
                    sec: -(d.as_secs() as i64) - 1,
                    nsec: 1_000_000_000 - d.subsec_nanos().max(1),
                }
            }
        }
    }
}

/// The kind of a ZPL object, from its mode's type bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Directory,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

impl FileKind {
    pub fn from_mode(mode: u64) -> Option<FileKind> {
        Some(match mode & S_IFMT {
            S_IFREG => FileKind::Regular,
            S_IFDIR => FileKind::Directory,
            S_IFLNK => FileKind::Symlink,
            S_IFCHR => FileKind::CharDevice,
            S_IFBLK => FileKind::BlockDevice,
            S_IFIFO => FileKind::Fifo,
            S_IFSOCK => FileKind::Socket,
            _ => return None,
        })
    }

    pub fn type_bits(self) -> u64 {
        match self {
            FileKind::Regular => S_IFREG,
            FileKind::Directory => S_IFDIR,
            FileKind::Symlink => S_IFLNK,
            FileKind::CharDevice => S_IFCHR,
            FileKind::BlockDevice => S_IFBLK,
            FileKind::Fifo => S_IFIFO,
            FileKind::Socket => S_IFSOCK,
        }
    }
}

/// The on-disk attributes of one object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZnodePhys {
    pub mode: u64,
    pub uid: u64,
    pub gid: u64,
    pub links: u64,
    pub parent: u64,
    pub size: u64,
    pub gen: u64,
    pub flags: u64,
    pub rdev: u64,
    pub xattr: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
    pub crtime: Timespec,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ZnodeDecodeError(pub String);

impl std::fmt::Display for ZnodeDecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed znode: {}", self.0)
    }
}

impl ZnodePhys {
    pub fn kind(&self) -> Option<FileKind> {
        FileKind::from_mode(self.mode)
    }

    pub fn encode(&self) -> [u8; ZNODE_SIZE_BYTES] {
        let mut out = [0u8; ZNODE_SIZE_BYTES];
        let words = [
            self.mode,
            self.uid,
            self.gid,
            self.links,
            self.parent,
            self.size,
            self.gen,
            self.flags,
            self.rdev,
            self.xattr,
        ];
        for (i, w) in words.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        for (i, t) in [self.atime, self.mtime, self.ctime, self.crtime]
            .iter()
            .enumerate()
        {
            let at = 80 + i * 16;
            out[at..at + 8].copy_from_slice(&t.sec.to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&u64::from(t.nsec).to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<ZnodePhys, ZnodeDecodeError> {
        if bytes.len() < ZNODE_SIZE_BYTES {
            return Err(ZnodeDecodeError(format!("{} bytes", bytes.len())));
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let time = |at: usize| -> Result<Timespec, ZnodeDecodeError> {
            let nsec = word(at + 8);
            if nsec >= 1_000_000_000 {
                return Err(ZnodeDecodeError(format!("{nsec} nanoseconds")));
            }
            Ok(Timespec {
                sec: word(at) as i64,
                nsec: nsec as u32,
            })
        };
        Ok(ZnodePhys {
            mode: word(0),
            uid: word(8),
            gid: word(16),
            links: word(24),
            parent: word(32),
            size: word(40),
            gen: word(48),
            flags: word(56),
            rdev: word(64),
            xattr: word(72),
            atime: time(80)?,
            mtime: time(96)?,
            ctime: time(112)?,
            crtime: time(128)?,
        })
    }
}

/// Attribute numbers of the ZPL attributes Zetta writes: their index in OpenZFS's
/// `zfs_attr_table` (`ZPL_ATTR_TABLE`), which is what a new filesystem's REGISTRY says.
pub const SA_ATIME: u16 = 0;
pub const SA_MTIME: u16 = 1;
pub const SA_CTIME: u16 = 2;
pub const SA_CRTIME: u16 = 3;
pub const SA_GEN: u16 = 4;
pub const SA_MODE: u16 = 5;
pub const SA_SIZE: u16 = 6;
pub const SA_PARENT: u16 = 7;
pub const SA_LINKS: u16 = 8;
pub const SA_XATTR: u16 = 9;
pub const SA_RDEV: u16 = 10;
pub const SA_FLAGS: u16 = 11;
pub const SA_UID: u16 = 12;
pub const SA_GID: u16 = 13;
pub const SA_DACL_COUNT: u16 = 16;
pub const SA_SYMLINK: u16 = 17;
pub const SA_DACL_ACES: u16 = 19;

/// The layouts Zetta writes, numbered as OpenZFS numbers them in a filesystem whose files
/// were made in this order. 2 is `zfs_mknode`'s template for every object but a device
/// node (`ZPL_RDEV` after `ZPL_LINKS`: 3); `zfs_symlink` then adds `ZPL_SYMLINK` at the end
/// (4), and making an xattr object adds `ZPL_XATTR` at the end (5-7). 8 and 9 are the
/// spill blocks of a long symlink (`SPILL_LAYOUTS`: its bonus keeps layout 2): filesystems
/// made before session 19 lack them until their first spill registers them.
pub const ZETTA_LAYOUTS: [(u64, &[u16]); 8] = [
    (2, &[5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19]),
    (3, &[5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 10, 16, 19]),
    (4, &[5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19, 17]),
    (5, &[5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19, 9]),
    (6, &[5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 10, 16, 19, 9]),
    (7, &[5, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19, 17, 9]),
    (8, &[17]),
    (9, &[17, 9]),
];

/// The layouts of spill blocks (a subset of `ZETTA_LAYOUTS`).
pub const SPILL_LAYOUTS: [u64; 2] = [8, 9];
/// Bytes the spill block pointer takes from the bonus room (`sizeof (blkptr_t)`).
pub const SA_SPILL_BLKPTR_BYTES: usize = 128;
/// Longest symlink target (`MAXPATHLEN` less its NUL: `zfs_symlink`'s `ENAMETOOLONG`).
pub const SYMLINK_TARGET_MAX_BYTES: usize = 4096;

/// Longest symlink target that always stays in the bonus (`ZPL_SYMLINK`): what fits beside
/// the largest trivial ACL (6 ACEs) and the xattr word. A longer one may spill
/// (`encode_sa_spill`), as OpenZFS's does.
pub const SYMLINK_SA_MAX_BYTES: usize = 112;

/// ACE types and who-flags of a trivial ACL (`acl.h`), and the access bits.
const ACE_ALLOW: u16 = 0;
const ACE_DENY: u16 = 1;
const ACE_OWNER: u16 = 0x1000;
const ACE_OWNING_GROUP: u16 = 0x2040;
const ACE_EVERYONE: u16 = 0x4000;
const ACE_READ_DATA: u32 = 0x1;
const ACE_WRITE_DATA: u32 = 0x2;
const ACE_APPEND_DATA: u32 = 0x4;
const ACE_READ_NAMED_ATTRS: u32 = 0x8;
const ACE_WRITE_NAMED_ATTRS: u32 = 0x10;
const ACE_EXECUTE: u32 = 0x20;
const ACE_DELETE_CHILD: u32 = 0x40;
const ACE_READ_ATTRIBUTES: u32 = 0x80;
const ACE_WRITE_ATTRIBUTES: u32 = 0x100;
const ACE_READ_ACL: u32 = 0x20000;
const ACE_WRITE_ACL: u32 = 0x40000;
const ACE_WRITE_OWNER: u32 = 0x80000;
const ACE_SYNCHRONIZE: u32 = 0x100000;
/// Bytes of one owner@/group@/everyone@ ACE (`zfs_ace_hdr_t`: type u16, flags u16,
/// access mask u32).
const ACE_BYTES: usize = 8;

/// One ACE of a trivial ACL: (type, flags, access mask).
pub type Ace = (u16, u16, u32);

/// The trivial ACL of a mode, as `zfs_acl_chmod` builds it for a new file with nothing to
/// inherit (`acl_trivial_access_masks`): up to three deny/allow entries that keep the mode's
/// meaning where a later class has more than an earlier one, then owner@, group@ and
/// everyone@ allows. Returns the entries and how many are used.
pub fn trivial_acl(mode: u64, is_dir: bool) -> ([Ace; 6], usize) {
    let (r, w, x) = (ACE_READ_DATA, ACE_WRITE_DATA | ACE_APPEND_DATA, ACE_EXECUTE);
    let w = if is_dir { w | ACE_DELETE_CHILD } else { w };
    let bit = |b: u64| mode & b != 0;
    let class = |rb: u64, wb: u64, xb: u64| -> u32 {
        (if bit(rb) { r } else { 0 })
            | (if bit(wb) { w } else { 0 })
            | (if bit(xb) { x } else { 0 })
    };
    // deny1: the owner lacks what group or others have.
    let mut deny1 = 0;
    let mut deny2 = 0;
    let mut allow0 = 0;
    for (u, g, o, m) in [
        (0o400, 0o040, 0o004, r),
        (0o200, 0o020, 0o002, w),
        (0o100, 0o010, 0o001, x),
    ] {
        if !bit(u) && (bit(g) || bit(o)) {
            deny1 |= m;
        }
        if !bit(g) && bit(o) {
            deny2 |= m;
        }
        if bit(u) && !bit(g) && bit(o) {
            allow0 |= m;
        }
    }
    let base_owner = ACE_WRITE_ATTRIBUTES
        | ACE_WRITE_OWNER
        | ACE_WRITE_ACL
        | ACE_WRITE_NAMED_ATTRS
        | ACE_READ_ACL
        | ACE_READ_ATTRIBUTES
        | ACE_READ_NAMED_ATTRS
        | ACE_SYNCHRONIZE;
    let base_other = ACE_READ_ACL | ACE_READ_ATTRIBUTES | ACE_READ_NAMED_ATTRS | ACE_SYNCHRONIZE;
    let mut aces = [(0u16, 0u16, 0u32); 6];
    let mut n = 0;
    for (mask, ty, who) in [
        (allow0, ACE_ALLOW, ACE_OWNER),
        (deny1, ACE_DENY, ACE_OWNER),
        (deny2, ACE_DENY, ACE_OWNING_GROUP),
    ] {
        if mask != 0 {
            aces[n] = (ty, who, mask);
            n += 1;
        }
    }
    aces[n] = (
        ACE_ALLOW,
        ACE_OWNER,
        base_owner | class(0o400, 0o200, 0o100),
    );
    aces[n + 1] = (
        ACE_ALLOW,
        ACE_OWNING_GROUP,
        base_other | class(0o040, 0o020, 0o010),
    );
    aces[n + 2] = (
        ACE_ALLOW,
        ACE_EVERYONE,
        base_other | class(0o004, 0o002, 0o001),
    );
    (aces, n + 3)
}

/// An encoded SA bonus: `len` bytes of `buf` (no allocation on the setattr path).
#[derive(Clone, Copy)]
pub struct SaBonus {
    buf: [u8; SA_BONUS_BYTES],
    len: usize,
}

impl SaBonus {
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

fn roundup8(n: usize) -> usize {
    (n + 7) & !7
}

/// The registered length of attribute `attr` (0: variable), from OpenZFS's table.
fn registered_len(attr: u16) -> Option<usize> {
    super::openzfs::sa::ZPL_ATTR_TABLE
        .get(usize::from(attr))
        .map(|(_, len, _)| usize::from(*len))
}

fn layout_attrs(num: u64) -> Option<&'static [u16]> {
    ZETTA_LAYOUTS
        .iter()
        .find(|(n, _)| *n == num)
        .map(|(_, attrs)| *attrs)
}

impl ZnodePhys {
    /// The pflags as written: `ZFS_NO_EXECS_DENIED` follows the mode (`zfs_mode_compute`).
    pub fn sa_flags(&self) -> u64 {
        let all_exec = self.mode & 0o111 == 0o111;
        (self.flags & !ZFS_NO_EXECS_DENIED) | if all_exec { ZFS_NO_EXECS_DENIED } else { 0 }
    }

    /// The layout of this znode's bonus.
    fn layout(&self, symlink: bool) -> (u64, &'static [u16]) {
        let dev = matches!(
            self.kind(),
            Some(FileKind::CharDevice) | Some(FileKind::BlockDevice)
        );
        let i = match (dev, symlink && !dev, self.xattr != 0) {
            (false, false, false) => 0,
            (true, _, false) => 1,
            (false, true, false) => 2,
            (false, false, true) => 3,
            (true, _, true) => 4,
            (false, true, true) => 5,
        };
        ZETTA_LAYOUTS[i]
    }

    /// The SA bonus of this znode in `order` (Zetta writes the host's order), with a
    /// symlink target as `ZPL_SYMLINK`. An error if it would not fit in the bonus alone
    /// (see `encode_sa_spill` for the form that spills).
    pub fn encode_sa(
        &self,
        order: ByteOrder,
        symlink: Option<&[u8]>,
    ) -> Result<SaBonus, ZnodeDecodeError> {
        match self.encode_sa_spill(order, symlink)? {
            (bonus, None) => Ok(bonus),
            (_, Some(_)) => Err(ZnodeDecodeError(
                "symlink target too long for the bonus".to_string(),
            )),
        }
    }

    /// The SA bonus of this znode and, when its attributes do not fit in the bonus, its
    /// spill block (OpenZFS `sa_build_layouts` / `sa_find_sizes`, see `sa_split`): the
    /// attributes before the split stay in a 192-byte bonus (the dnode's last 128 bytes
    /// hold the spill pointer), the rest go to a spill block of their own layout
    /// (`SPILL_LAYOUTS`), `roundup(header + attributes, 512)` bytes.
    pub fn encode_sa_spill(
        &self,
        order: ByteOrder,
        symlink: Option<&[u8]>,
    ) -> Result<(SaBonus, Option<Vec<u8>>), ZnodeDecodeError> {
        if symlink.is_some_and(|t| t.len() > SYMLINK_TARGET_MAX_BYTES) {
            return Err(ZnodeDecodeError(format!(
                "symlink target of {} bytes",
                symlink.map_or(0, <[u8]>::len)
            )));
        }
        let (num, attrs) = self.layout(symlink.is_some());
        let (aces, nace) = trivial_acl(self.mode, self.kind() == Some(FileKind::Directory));
        let lengths: Vec<usize> = attrs
            .iter()
            .map(|&attr| match attr {
                SA_DACL_ACES => nace * ACE_BYTES,
                SA_SYMLINK => symlink.map_or(0, <[u8]>::len),
                other => registered_len(other).unwrap_or(0),
            })
            .collect();
        let mut bonus = SaBonus {
            buf: [0u8; SA_BONUS_BYTES],
            len: 0,
        };
        let Some(split) = sa_split(attrs, &lengths, SA_BONUS_BYTES) else {
            bonus.len =
                self.encode_attrs(order, num, attrs, symlink, (&aces, nace), &mut bonus.buf)?;
            return Ok((bonus, None));
        };
        let too_big = || ZnodeDecodeError("attributes do not fit the SA layouts".to_string());
        let (head, tail) = attrs.split_at(split);
        let head_num = layout_number(head).ok_or_else(too_big)?;
        let tail_num = layout_number(tail).ok_or_else(too_big)?;
        let room = SA_BONUS_BYTES - SA_SPILL_BLKPTR_BYTES;
        self.encode_attrs(
            order,
            head_num,
            head,
            symlink,
            (&aces, nace),
            &mut bonus.buf[..room],
        )?;
        // `dmu_set_bonus(MIN(bonuslen - sizeof (blkptr_t), used + hdrsize))`: the bonus
        // keeps its whole room (used counts every attribute, spilled ones too).
        bonus.len = room;
        let tail_lengths = &lengths[split..];
        let var_count = tail
            .iter()
            .filter(|a| registered_len(**a) == Some(0))
            .count();
        let mut needed = roundup8(SA_HDR_LENGTHS_OFFSET + 2 * var_count);
        for (i, len) in tail_lengths.iter().enumerate() {
            needed = if i == 0 { needed } else { roundup8(needed) } + len;
        }
        let mut spill = vec![0u8; needed.div_ceil(512) * 512];
        self.encode_attrs(order, tail_num, tail, symlink, (&aces, nace), &mut spill)?;
        Ok((bonus, Some(spill)))
    }

    /// Lays the header of layout `num` and the attributes `attrs` into `buf` (each at an
    /// 8-byte-aligned offset, variable lengths in the header); returns the bytes used.
    fn encode_attrs(
        &self,
        order: ByteOrder,
        num: u64,
        attrs: &[u16],
        symlink: Option<&[u8]>,
        (aces, nace): (&[Ace; 6], usize),
        buf: &mut [u8],
    ) -> Result<usize, ZnodeDecodeError> {
        let room = buf.len();
        let var_count = attrs
            .iter()
            .filter(|a| registered_len(**a) == Some(0))
            .count();
        let hdr = roundup8(SA_HDR_LENGTHS_OFFSET + 2 * var_count);
        let put16 = |buf: &mut [u8], at: usize, v: u16| {
            buf[at..at + 2].copy_from_slice(&match order {
                ByteOrder::Little => v.to_le_bytes(),
                ByteOrder::Big => v.to_be_bytes(),
            })
        };
        let put32 = |buf: &mut [u8], at: usize, v: u32| {
            buf[at..at + 4].copy_from_slice(&match order {
                ByteOrder::Little => v.to_le_bytes(),
                ByteOrder::Big => v.to_be_bytes(),
            })
        };
        let too_big = || ZnodeDecodeError("attributes do not fit in the bonus".to_string());
        if hdr > room {
            return Err(too_big());
        }
        put32(buf, 0, SA_MAGIC);
        put16(buf, 4, num as u16 | ((hdr / 8) as u16) << 10);
        let mut at = hdr;
        let mut var_at = SA_HDR_LENGTHS_OFFSET;
        for &attr in attrs {
            let start = roundup8(at);
            let (words, wn): ([u64; 2], usize) = match attr {
                SA_MODE => ([self.mode, 0], 1),
                SA_SIZE => ([self.size, 0], 1),
                SA_GEN => ([self.gen, 0], 1),
                SA_UID => ([self.uid, 0], 1),
                SA_GID => ([self.gid, 0], 1),
                SA_PARENT => ([self.parent, 0], 1),
                SA_FLAGS => ([self.sa_flags(), 0], 1),
                SA_LINKS => ([self.links, 0], 1),
                SA_RDEV => ([self.rdev, 0], 1),
                SA_XATTR => ([self.xattr, 0], 1),
                SA_DACL_COUNT => ([nace as u64, 0], 1),
                SA_ATIME => ([self.atime.sec as u64, u64::from(self.atime.nsec)], 2),
                SA_MTIME => ([self.mtime.sec as u64, u64::from(self.mtime.nsec)], 2),
                SA_CTIME => ([self.ctime.sec as u64, u64::from(self.ctime.nsec)], 2),
                SA_CRTIME => ([self.crtime.sec as u64, u64::from(self.crtime.nsec)], 2),
                _ => ([0, 0], 0),
            };
            let len = if wn > 0 {
                if start + 8 * wn > room {
                    return Err(too_big());
                }
                for (i, w) in words.iter().take(wn).enumerate() {
                    let _ = order.put_u64(buf, start + 8 * i, *w);
                }
                8 * wn
            } else if attr == SA_DACL_ACES {
                let len = nace * ACE_BYTES;
                if start + len > room {
                    return Err(too_big());
                }
                for (i, (ty, who, mask)) in aces.iter().take(nace).enumerate() {
                    let p = start + i * ACE_BYTES;
                    put16(buf, p, *ty);
                    put16(buf, p + 2, *who);
                    put32(buf, p + 4, *mask);
                }
                len
            } else if attr == SA_SYMLINK {
                let target = symlink.unwrap_or(&[]);
                let len = target.len();
                if start + len > room {
                    return Err(too_big());
                }
                buf[start..start + len].copy_from_slice(target);
                len
            } else {
                return Err(ZnodeDecodeError(format!("attribute {attr} is not written")));
            };
            if registered_len(attr) == Some(0) {
                put16(buf, var_at, len as u16);
                var_at += 2;
            }
            at = start + len;
        }
        Ok(at)
    }

    /// Reads an SA bonus Zetta wrote (either byte order): the znode and, for a symlink whose
    /// target is in the bonus, where the target lies in `bonus`. A spilled attribute is
    /// left at its default: `decode_sa_spill` reads the spill block into the same znode.
    pub fn decode_sa(
        bonus: &[u8],
    ) -> Result<(ZnodePhys, Option<std::ops::Range<usize>>), ZnodeDecodeError> {
        let mut z = ZnodePhys::default();
        let symlink = z.decode_sa_buffer(bonus)?;
        Ok((z, symlink))
    }

    /// Reads a spill block's attributes into this znode (decoded from the bonus first):
    /// where the symlink target lies in `spill`, if there.
    pub fn decode_sa_spill(
        &mut self,
        spill: &[u8],
    ) -> Result<Option<std::ops::Range<usize>>, ZnodeDecodeError> {
        self.decode_sa_buffer(spill)
    }

    /// One SA buffer (a bonus or a spill block) into `self`.
    fn decode_sa_buffer(
        &mut self,
        bonus: &[u8],
    ) -> Result<Option<std::ops::Range<usize>>, ZnodeDecodeError> {
        let err = |why: String| ZnodeDecodeError(why);
        let magic = ByteOrder::Little
            .u32_at(bonus, 0)
            .map_err(|_| err(format!("{} bytes hold no SA header", bonus.len())))?;
        let order = if magic == SA_MAGIC {
            ByteOrder::Little
        } else if magic.swap_bytes() == SA_MAGIC {
            ByteOrder::Big
        } else {
            return Err(err(format!("SA magic {magic:#x}")));
        };
        let info = order
            .u16_at(bonus, 4)
            .map_err(|_| err("short SA header".to_string()))?;
        let num = u64::from(info & 0x3ff);
        let hdr = usize::from(info >> 10) * 8;
        let attrs = layout_attrs(num).ok_or_else(|| err(format!("SA layout {num}")))?;
        let var_count = attrs
            .iter()
            .filter(|a| registered_len(**a) == Some(0))
            .count();
        if hdr != roundup8(SA_HDR_LENGTHS_OFFSET + 2 * var_count) || hdr > bonus.len() {
            return Err(err(format!("SA header of {hdr} bytes for layout {num}")));
        }
        let z = self;
        let mut symlink = None;
        let mut at = hdr;
        let mut var_at = SA_HDR_LENGTHS_OFFSET;
        for &attr in attrs {
            let start = roundup8(at);
            let len = match registered_len(attr) {
                Some(0) => {
                    let len = order
                        .u16_at(bonus, var_at)
                        .map_err(|_| err("short SA header".to_string()))?;
                    var_at += 2;
                    usize::from(len)
                }
                Some(len) => len,
                None => return Err(err(format!("SA attribute {attr}"))),
            };
            let bytes = bonus
                .get(start..start + len)
                .ok_or_else(|| err(format!("SA attribute {attr} past the bonus")))?;
            let word = |i: usize| order.u64_at(bytes, 8 * i).unwrap_or(0);
            let time = || -> Result<Timespec, ZnodeDecodeError> {
                let nsec = word(1);
                if nsec >= 1_000_000_000 {
                    return Err(err(format!("{nsec} nanoseconds")));
                }
                Ok(Timespec {
                    sec: word(0) as i64,
                    nsec: nsec as u32,
                })
            };
            match attr {
                SA_MODE => z.mode = word(0),
                SA_SIZE => z.size = word(0),
                SA_GEN => z.gen = word(0),
                SA_UID => z.uid = word(0),
                SA_GID => z.gid = word(0),
                SA_PARENT => z.parent = word(0),
                SA_FLAGS => z.flags = word(0),
                SA_LINKS => z.links = word(0),
                SA_RDEV => z.rdev = word(0),
                SA_XATTR => z.xattr = word(0),
                SA_ATIME => z.atime = time()?,
                SA_MTIME => z.mtime = time()?,
                SA_CTIME => z.ctime = time()?,
                SA_CRTIME => z.crtime = time()?,
                SA_SYMLINK => symlink = Some(start..start + len),
                _ => {}
            }
            at = start + len;
        }
        Ok(symlink)
    }
}

/// OpenZFS `sa_find_sizes` for the bonus of `room` bytes: `None` when the attributes
/// (`attrs`, of `lengths`) fit in it whole, else the index of the first attribute that
/// goes to the spill block — the first whose end (with the header as it would be) passes
/// `room - 128`, the bytes the bonus keeps once the spill pointer takes the dnode's tail;
/// or the first variable-length one whose header slot no longer fits.
pub fn sa_split(attrs: &[u16], lengths: &[usize], room: usize) -> Option<usize> {
    debug_assert_eq!(attrs.len(), lengths.len());
    // sizeof (sa_hdr_phys_t): the magic, the layout word and the first length.
    let mut hdrsize = SA_HDR_LENGTHS_OFFSET + 2;
    let mut total = 0usize;
    let mut index: Option<usize> = None;
    let mut will_spill = false;
    let mut var_count = 0;
    for (i, (&attr, &len)) in attrs.iter().zip(lengths).enumerate() {
        total = roundup8(total) + len;
        if will_spill {
            continue;
        }
        let is_var = registered_len(attr) == Some(0);
        if is_var {
            var_count += 1;
        }
        let tmp_hdrsize = hdrsize + if is_var && var_count > 1 { 2 } else { 0 };
        let might_spill_here =
            index.is_none() && total + roundup8(tmp_hdrsize) > room - SA_SPILL_BLKPTR_BYTES;
        if is_var && var_count > 1 {
            if tmp_hdrsize + total < room {
                hdrsize = tmp_hdrsize;
            } else {
                index.get_or_insert(i);
                will_spill = true;
                continue;
            }
        }
        if might_spill_here {
            index = Some(i);
        }
        if total + roundup8(hdrsize) > room {
            will_spill = true;
        }
    }
    if will_spill {
        index
    } else {
        None
    }
}

/// The layout number of an attribute list Zetta writes (`ZETTA_LAYOUTS`).
fn layout_number(attrs: &[u16]) -> Option<u64> {
    ZETTA_LAYOUTS
        .iter()
        .find(|(_, a)| *a == attrs)
        .map(|(n, _)| *n)
}

/// `DMU_OT_ZNODE`: the bonus type of an object of a ZPL 1-4 filesystem, whose bonus is a
/// `znode_phys_t` (see `encode_v4`).
pub const BONUS_TYPE_ZNODE_V4: u8 = 17;
/// Bytes of a `znode_phys_t` (`ZFS_OLD_ZNODE_PHYS_SIZE`): a v4 bonus is this long, plus a
/// symlink target kept after it.
pub const ZNODE_V4_BYTES: usize = 264;
/// Where the embedded `zfs_acl_phys_t` starts in a `znode_phys_t`.
const ZNODE_V4_ACL_OFFSET: usize = 176;
/// `ZFS_ACL_VERSION_FUID`: the ACL version of every filesystem from ZPL 3 on.
const ZFS_ACL_VERSION_FUID: u16 = 1;
/// Longest symlink target kept in a v4 bonus (`zfs_sa_symlink`: `ZFS_OLD_ZNODE_PHYS_SIZE +
/// len <= dmu_bonus_max()`); a longer one is the object's data.
pub const SYMLINK_V4_INLINE_MAX_BYTES: usize = SA_BONUS_BYTES - ZNODE_V4_BYTES;

/// Whether a dnode's bonus type is a ZPL object's: an SA bonus (ZPL 5) or a `znode_phys_t`
/// (ZPL 1-4).
pub fn is_znode_bonus(bonus_type: u8) -> bool {
    bonus_type == BONUS_TYPE_ZNODE || bonus_type == BONUS_TYPE_ZNODE_V4
}

impl ZnodePhys {
    /// The `znode_phys_t` bonus of a ZPL 4 object (OpenZFS `zfs_znode.h`, ONDISK.md "Legacy
    /// versions"), with a symlink target of up to `SYMLINK_V4_INLINE_MAX_BYTES` after it:
    ///
    /// ```text
    ///   0 atime[sec, nsec]   16 mtime   32 ctime   48 crtime   64 gen   72 mode   80 size
    ///  88 parent   96 links   104 xattr   112 rdev   120 flags   128 uid   136 gid
    /// 144 zap (0)   152 pad[3] (0)
    /// 176 zfs_acl_phys_t: extern_obj 0 | size u32 (bytes of ACEs) | version u16 (1, FUID)
    ///     | count u16 | ace_data[72]: the trivial ACL of the mode, 8 bytes per ACE
    /// 264 a short symlink target
    /// ```
    ///
    /// The flags carry `ZFS_NO_EXECS_DENIED` by the mode, as in the SA form; the ACL is
    /// OpenZFS 2.3's trivial ACL (`trivial_acl`: zfs-fuse writes six deny/allow entries
    /// where 2.3 writes three, and reads both).
    pub fn encode_v4(
        &self,
        order: ByteOrder,
        symlink: Option<&[u8]>,
    ) -> Result<SaBonus, ZnodeDecodeError> {
        let target = symlink.unwrap_or(&[]);
        if target.len() > SYMLINK_V4_INLINE_MAX_BYTES {
            return Err(ZnodeDecodeError(
                "symlink target too long for the bonus".to_string(),
            ));
        }
        let mut out = SaBonus {
            buf: [0u8; SA_BONUS_BYTES],
            len: ZNODE_V4_BYTES + target.len(),
        };
        let times = [self.atime, self.mtime, self.ctime, self.crtime];
        for (i, t) in times.iter().enumerate() {
            let _ = order.put_u64(&mut out.buf, 16 * i, t.sec as u64);
            let _ = order.put_u64(&mut out.buf, 16 * i + 8, u64::from(t.nsec));
        }
        let words = [
            self.gen,
            self.mode,
            self.size,
            self.parent,
            self.links,
            self.xattr,
            self.rdev,
            self.sa_flags(),
            self.uid,
            self.gid,
        ];
        for (i, w) in words.iter().enumerate() {
            let _ = order.put_u64(&mut out.buf, 64 + 8 * i, *w);
        }
        let (aces, nace) = trivial_acl(self.mode, self.kind() == Some(FileKind::Directory));
        let acl = ZNODE_V4_ACL_OFFSET;
        let put16 = |buf: &mut [u8], at: usize, v: u16| {
            buf[at..at + 2].copy_from_slice(&match order {
                ByteOrder::Little => v.to_le_bytes(),
                ByteOrder::Big => v.to_be_bytes(),
            })
        };
        let put32 = |buf: &mut [u8], at: usize, v: u32| {
            buf[at..at + 4].copy_from_slice(&match order {
                ByteOrder::Little => v.to_le_bytes(),
                ByteOrder::Big => v.to_be_bytes(),
            })
        };
        put32(&mut out.buf, acl + 8, (nace * ACE_BYTES) as u32);
        put16(&mut out.buf, acl + 12, ZFS_ACL_VERSION_FUID);
        put16(&mut out.buf, acl + 14, nace as u16);
        for (i, (ty, who, mask)) in aces.iter().take(nace).enumerate() {
            let p = acl + 16 + i * ACE_BYTES;
            put16(&mut out.buf, p, *ty);
            put16(&mut out.buf, p + 2, *who);
            put32(&mut out.buf, p + 4, *mask);
        }
        out.buf[ZNODE_V4_BYTES..out.len].copy_from_slice(target);
        debug_assert!(out.len >= ZNODE_V4_BYTES && out.len <= SA_BONUS_BYTES);
        Ok(out)
    }

    /// Reads a `znode_phys_t` bonus in the host's order (the order `encode_bonus` writes and
    /// the only one the read-write engine opens): the znode and, for a symlink whose target follows the structure, where
    /// it lies in `bonus`. The ACL is not read back: Zetta keeps trivial ACLs only and
    /// recomputes one from the mode on every write.
    pub fn decode_v4(
        bonus: &[u8],
    ) -> Result<(ZnodePhys, Option<std::ops::Range<usize>>), ZnodeDecodeError> {
        if bonus.len() < ZNODE_V4_BYTES {
            return Err(ZnodeDecodeError(format!(
                "a {}-byte bonus cannot hold a {ZNODE_V4_BYTES}-byte znode_phys_t",
                bonus.len()
            )));
        }
        let order = ByteOrder::HOST;
        let word = |at: usize| order.u64_at(bonus, at).unwrap_or(0);
        let time = |at: usize| -> Result<Timespec, ZnodeDecodeError> {
            let nsec = word(at + 8);
            if nsec >= 1_000_000_000 {
                return Err(ZnodeDecodeError(format!("{nsec} nanoseconds")));
            }
            Ok(Timespec {
                sec: word(at) as i64,
                nsec: nsec as u32,
            })
        };
        let z = ZnodePhys {
            atime: time(0)?,
            mtime: time(16)?,
            ctime: time(32)?,
            crtime: time(48)?,
            gen: word(64),
            mode: word(72),
            size: word(80),
            parent: word(88),
            links: word(96),
            xattr: word(104),
            rdev: word(112),
            flags: word(120),
            uid: word(128),
            gid: word(136),
        };
        let symlink = (z.kind() == Some(FileKind::Symlink) && bonus.len() > ZNODE_V4_BYTES)
            .then_some(ZNODE_V4_BYTES..bonus.len());
        Ok((z, symlink))
    }

    /// Reads a ZPL object's bonus of either form, by the dnode's bonus type.
    pub fn decode_bonus(
        bonus_type: u8,
        bonus: &[u8],
    ) -> Result<(ZnodePhys, Option<std::ops::Range<usize>>), ZnodeDecodeError> {
        match bonus_type {
            BONUS_TYPE_ZNODE => ZnodePhys::decode_sa(bonus),
            BONUS_TYPE_ZNODE_V4 => ZnodePhys::decode_v4(bonus),
            other => Err(ZnodeDecodeError(format!("bonus type {other}"))),
        }
    }

    /// Encodes this znode in the bonus form `bonus_type` names (host order).
    pub fn encode_bonus(
        &self,
        bonus_type: u8,
        symlink: Option<&[u8]>,
    ) -> Result<SaBonus, ZnodeDecodeError> {
        match bonus_type {
            BONUS_TYPE_ZNODE => self.encode_sa(ByteOrder::HOST, symlink),
            BONUS_TYPE_ZNODE_V4 => self.encode_v4(ByteOrder::HOST, symlink),
            other => Err(ZnodeDecodeError(format!("bonus type {other}"))),
        }
    }

    /// Longest symlink target the bonus form `bonus_type` keeps inline.
    pub fn symlink_inline_max_bytes(bonus_type: u8) -> usize {
        if bonus_type == BONUS_TYPE_ZNODE_V4 {
            SYMLINK_V4_INLINE_MAX_BYTES
        } else {
            SYMLINK_SA_MAX_BYTES
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: OpenZFS decides what spills by `sa_find_sizes`; a symlink (mode 0777: a
    // three-ACE trivial ACL) keeps a 144-byte target in its 320-byte bonus and spills a
    // 145-byte one, whose bonus is then the 192 bytes before the spill pointer with
    // layout 2 and whose spill block is layout 8 (ZPL_SYMLINK alone), 512 bytes.
    #[test]
    fn long_symlink_targets_spill_where_openzfs_splits_them() {
        let link = ZnodePhys {
            mode: S_IFLNK | 0o777,
            links: 1,
            ..ZnodePhys::default()
        };
        let fits = vec![b'a'; 144];
        let (bonus, spill) = link
            .encode_sa_spill(ByteOrder::Little, Some(&fits))
            .unwrap();
        assert!(spill.is_none());
        assert_eq!(bonus.as_bytes().len(), 16 + 160 + 144);
        let long = vec![b'b'; 145];
        let (bonus, spill) = link
            .encode_sa_spill(ByteOrder::Little, Some(&long))
            .unwrap();
        let spill = spill.expect("spills");
        assert_eq!(bonus.as_bytes().len(), 192);
        assert_eq!(bonus.as_bytes()[4..6], [2, 1 << 2]);
        assert_eq!(spill.len(), 512);
        assert_eq!(spill[..8], [0x5a, 0x50, 0x2f, 0, 8, 1 << 2, 145, 0]);
        let (mut back, inline) = ZnodePhys::decode_sa(bonus.as_bytes()).unwrap();
        assert_eq!(inline, None);
        let range = back.decode_sa_spill(&spill).unwrap().expect("target");
        assert_eq!(&spill[range], &long[..]);
        assert_eq!(back.mode, link.mode);
        // With an xattr object the spill layout is 9: ZPL_SYMLINK then ZPL_XATTR.
        let with_xattr = ZnodePhys { xattr: 77, ..link };
        let (_, spill) = with_xattr
            .encode_sa_spill(ByteOrder::Little, Some(&long))
            .unwrap();
        let spill = spill.expect("spills");
        assert_eq!(spill[4], 9);
        let (mut back, _) = ZnodePhys::decode_sa(bonus.as_bytes()).unwrap();
        back.decode_sa_spill(&spill).unwrap();
        assert_eq!(back.xattr, 77);
        // The longest target (4096 bytes) fills a 4608-byte spill block.
        let longest = vec![b'c'; 4096];
        let (_, spill) = link
            .encode_sa_spill(ByteOrder::Little, Some(&longest))
            .unwrap();
        assert_eq!(spill.map(|s| s.len()), Some(4608));
        assert!(link
            .encode_sa_spill(ByteOrder::Little, Some(&[b'd'; 4097]))
            .is_err());
    }

    /// The regular file of the golden vectors (docs/ONDISK.md "Znode"): mode 0100644, uid
    /// 1000, gid 100, parent 4, size 5, gen 7, times before 1970 and past 2038.
    fn documented_file() -> ZnodePhys {
        ZnodePhys {
            mode: S_IFREG | 0o644,
            uid: 1000,
            gid: 100,
            links: 1,
            parent: 4,
            size: 5,
            gen: 7,
            flags: ZFS_NEW_FILE_FLAGS,
            rdev: 0,
            xattr: 0,
            atime: Timespec { sec: 1, nsec: 2 },
            mtime: Timespec {
                sec: -1,
                nsec: 999_999_999,
            },
            ctime: Timespec {
                sec: 4_102_444_800,
                nsec: 0,
            },
            crtime: Timespec { sec: 0, nsec: 0 },
        }
    }

    /// The intent log's znode record is what `encode` writes.
    #[test]
    fn golden_znode() {
        let znode = ZnodePhys {
            flags: 0,
            ..documented_file()
        };
        let bytes = znode.encode();
        assert_eq!(&bytes[0..8], &0o100644u64.to_le_bytes());
        assert_eq!(&bytes[8..16], &1000u64.to_le_bytes());
        assert_eq!(&bytes[32..40], &4u64.to_le_bytes());
        assert_eq!(
            &bytes[80..96],
            &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(&bytes[96..104], &[0xff; 8]);
        assert_eq!(&bytes[104..108], &999_999_999u32.to_le_bytes());
        // 2100-01-01: past 2038 needs the full 64-bit seconds.
        assert_eq!(&bytes[112..120], &4_102_444_800i64.to_le_bytes());
        assert_eq!(&bytes[144..], &[0u8; 16]);
        assert_eq!(ZnodePhys::decode(&bytes), Ok(znode));
    }

    /// The bonus of `/zstd` in OpenZFS's testpool_zstd fixture (a big-endian pool made by
    /// OpenZFS 2.0): an SA bonus in layout 2, mode 0100555, three trivial ACEs.
    const OPENZFS_ZSTD_FILE_BE: &str = "\
        002f505a04020018000000000000816d0000000000023a7800000000000000110000000000000000\
        00000000000000000000000000000022000004080000010400000000609bbc8a00000000065e7c4a\
        00000000609b7c96000000000c2442d800000000609b7c96000000000c2442d800000000609b7c96\
        00000000084612900000000000000001000000000000000300001000001e01b900002040001200a9\
        00004000001200a9";

    // Why: the on-disk znode was a private 160-byte record (bonus type 17) OpenZFS cannot
    // read. A real OpenZFS SA bonus must decode with this codec and re-encode byte for
    // byte: header, layout 2's attribute order, pflags, the trivial ACL of the mode.
    #[test]
    fn golden_openzfs_sa_bonus_reencodes_byte_for_byte() {
        let golden = crate::dsl::openzfs::unhex(OPENZFS_ZSTD_FILE_BE);
        let (z, symlink) = ZnodePhys::decode_sa(&golden).unwrap();
        assert_eq!(symlink, None);
        assert_eq!(
            (z.mode, z.size, z.gen, z.parent),
            (0o100555, 146_040, 17, 34)
        );
        assert_eq!((z.uid, z.gid, z.links), (0, 0, 1));
        assert_eq!(z.flags, ZFS_NEW_FILE_FLAGS | ZFS_NO_EXECS_DENIED);
        assert_eq!(z.atime.sec, 0x609b_bc8a);
        let again = z.encode_sa(ByteOrder::Big, None).unwrap();
        assert_eq!(again.as_bytes(), &golden[..]);
        // The same znode little-endian: the bytes Zetta writes on x86.
        let le = z.encode_sa(ByteOrder::Little, None).unwrap();
        assert_eq!(le.as_bytes().len(), golden.len());
        assert_eq!(
            &le.as_bytes()[..8],
            &[0x5a, 0x50, 0x2f, 0, 0x02, 0x04, 0x18, 0]
        );
        assert_eq!(ZnodePhys::decode_sa(le.as_bytes()).unwrap(), (z, None));
    }

    /// The SA bonus Zetta writes for the regular file of docs/ONDISK.md "Znode".
    const ZETTA_FILE_LE: &str = "\
        5a502f0002041800a48100000000000005000000000000000700000000000000\
        e803000000000000640000000000000004000000000000000400000008040000\
        01000000000000000200000000000000ffffffffffffffffffc99a3b00000000\
        005786f400000000000000000000000000000000000000000000000000000000\
        01000000000000000300000000000000000000109f011e000000402089001200\
        0000004089001200";

    // Why: docs/ONDISK.md pins the bytes of a Zetta znode; this is the golden vector
    // (layout 2, little-endian, three trivial ACEs of mode 0644, 168 bytes).
    #[test]
    fn golden_zetta_sa_bonus_bytes() {
        let z = documented_file();
        let golden = crate::dsl::openzfs::unhex(ZETTA_FILE_LE);
        assert_eq!(golden.len(), 168);
        assert_eq!(
            z.encode_sa(ByteOrder::Little, None).unwrap().as_bytes(),
            &golden[..]
        );
        assert_eq!(ZnodePhys::decode_sa(&golden).unwrap(), (z, None));
    }

    // Why: what Zetta writes must be what the part-1 reader of real OpenZFS pools (with the
    // registry and layouts a Zetta filesystem stores) decodes: every layout, a device's
    // rdev, a symlink target in ZPL_SYMLINK, the xattr object, denying ACEs of odd modes.
    #[test]
    fn zetta_sa_bonuses_decode_with_the_openzfs_reader() {
        use crate::zpl::openzfs::sa::{decode_buffer, SaLayouts, SaRegistry, ZplAttrs};
        use crate::zpl::openzfs::ZapValue;
        let reg: Vec<(String, ZapValue)> = crate::zpl::openzfs::sa::ZPL_ATTR_TABLE
            .iter()
            .enumerate()
            .map(|(i, (name, len, bswap))| {
                let v = u64::try_from(i).unwrap() | u64::from(*bswap) << 16 | u64::from(*len) << 24;
                (name.to_string(), ZapValue::Ints(vec![v]))
            })
            .collect();
        let registry = SaRegistry::from_zap(reg.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
        let lays: Vec<(String, ZapValue)> = ZETTA_LAYOUTS
            .iter()
            .map(|(n, a)| {
                (
                    n.to_string(),
                    ZapValue::Ints(a.iter().map(|&x| u64::from(x)).collect()),
                )
            })
            .collect();
        let layouts = SaLayouts::from_zap(lays.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
        let base = documented_file();
        let cases: [(ZnodePhys, Option<&[u8]>); 6] = [
            (base, None),
            (
                ZnodePhys {
                    mode: S_IFCHR | 0o600,
                    rdev: 0x0103,
                    ..base
                },
                None,
            ),
            (
                ZnodePhys {
                    mode: S_IFLNK | 0o777,
                    size: 6,
                    ..base
                },
                Some(b"target"),
            ),
            (
                ZnodePhys {
                    mode: S_IFDIR | 0o070,
                    xattr: 9,
                    ..base
                },
                None,
            ),
            (
                ZnodePhys {
                    mode: S_IFBLK | 0o007,
                    rdev: 7,
                    xattr: 9,
                    ..base
                },
                None,
            ),
            (
                ZnodePhys {
                    mode: S_IFLNK | 0o777,
                    xattr: 9,
                    ..base
                },
                Some(&[b'x'; SYMLINK_SA_MAX_BYTES]),
            ),
        ];
        for (z, target) in cases {
            let b = z.encode_sa(ByteOrder::Little, target).unwrap();
            assert!(b.as_bytes().len() <= SA_BONUS_BYTES);
            let (back, range) = ZnodePhys::decode_sa(b.as_bytes()).unwrap();
            assert_eq!(
                back,
                ZnodePhys {
                    flags: z.sa_flags(),
                    ..z
                }
            );
            assert_eq!(range.map(|r| &b.as_bytes()[r]), target);
            let buf = decode_buffer(b.as_bytes(), ByteOrder::Little, &registry, &layouts).unwrap();
            let a = ZplAttrs::from_buffers(&[buf], &registry).unwrap();
            assert_eq!(
                (a.mode, a.size, a.uid, a.gid),
                (Some(z.mode), Some(z.size), Some(1000), Some(100))
            );
            assert_eq!((a.parent, a.links, a.gen), (Some(4), Some(1), Some(7)));
            assert_eq!(
                a.mtime.map(|t| (t.sec as i64, t.nsec)),
                Some((-1, 999_999_999))
            );
            assert_eq!(a.ctime.map(|t| t.sec), Some(4_102_444_800));
            assert_eq!(
                a.rdev,
                matches!(z.kind(), Some(FileKind::CharDevice | FileKind::BlockDevice))
                    .then_some(z.rdev)
            );
            assert_eq!(a.xattr, (z.xattr != 0).then_some(z.xattr));
            assert_eq!(a.symlink.as_deref(), target);
            let (_, n) = trivial_acl(z.mode, z.kind() == Some(FileKind::Directory));
            assert_eq!(a.dacl_count, Some(n as u64));
            assert_eq!(a.dacl_aces.map(|v| v.len()), Some(8 * n));
        }
        // 0o070: owner denied what the group has; 0o007: owner and group denied.
        assert_eq!(trivial_acl(0o070, false).1, 4);
        assert_eq!(trivial_acl(0o007, false).1, 5);
        assert_eq!(trivial_acl(0o604, false).1, 5);
        assert_eq!(trivial_acl(0o405, true).1, 6);
    }

    // Why: bonus bytes come from disk: a wrong magic, an unknown layout, a header of the
    // wrong size, a cut bonus and impossible nanoseconds are errors, never panics.
    #[test]
    fn malformed_sa_bonuses_are_errors() {
        let good = ZnodePhys {
            mode: S_IFREG | 0o644,
            ..ZnodePhys::default()
        }
        .encode_sa(ByteOrder::Little, None)
        .unwrap();
        let good = good.as_bytes().to_vec();
        assert!(ZnodePhys::decode_sa(&good).is_ok());
        for cut in 0..good.len() {
            assert!(ZnodePhys::decode_sa(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert!(ZnodePhys::decode_sa(&bad).is_err());
        let mut bad = good.clone();
        bad[4] = 10; // layout 10
        assert!(ZnodePhys::decode_sa(&bad).is_err());
        let mut bad = good.clone();
        bad[5] = 2 << 2; // header of 16 bytes
        assert!(ZnodePhys::decode_sa(&bad).is_err());
        let mut bad = good.clone();
        bad[6] = 0xff; // ACE length past the end
        assert!(ZnodePhys::decode_sa(&bad).is_err());
        let mut bad = good;
        bad[8 + 56 + 8..8 + 56 + 16].copy_from_slice(&1_000_000_000u64.to_le_bytes());
        assert!(ZnodePhys::decode_sa(&bad).is_err());
        // A target that would spill is not a bonus alone (`encode_sa_spill` spills it).
        assert!(ZnodePhys::default()
            .encode_sa(ByteOrder::Little, Some(&[b'x'; 200]))
            .is_err());
    }

    /// Bytes from disk never panic the decoder: short records and impossible times are errors.
    /// Why: a `znode_phys_t` bonus comes from disk (a zfs-fuse pool imported read-write):
    /// short bonuses and impossible nanoseconds are errors, never panics, and a symlink's
    /// inline target is exactly the bytes after the 264-byte structure.
    #[test]
    fn znode_phys_bonuses_round_trip_and_malformed_ones_are_errors() {
        let file = documented_file();
        for len in [0, 1, 263] {
            assert!(
                ZnodePhys::decode_v4(&vec![0u8; len]).is_err(),
                "{len} bytes"
            );
        }
        let out = file.encode_v4(ByteOrder::HOST, None).unwrap();
        assert_eq!(out.as_bytes().len(), ZNODE_V4_BYTES);
        let (back, inline) = ZnodePhys::decode_v4(out.as_bytes()).unwrap();
        assert_eq!(inline, None);
        assert_eq!(
            back,
            ZnodePhys {
                flags: file.sa_flags(),
                ..file
            }
        );
        let mut bad = out.as_bytes().to_vec();
        bad[8..16].copy_from_slice(&1_000_000_000u64.to_le_bytes());
        assert!(ZnodePhys::decode_v4(&bad).is_err());
        let link = ZnodePhys {
            mode: S_IFLNK | 0o777,
            ..file
        };
        let target = [b't'; SYMLINK_V4_INLINE_MAX_BYTES];
        let out = link.encode_v4(ByteOrder::HOST, Some(&target)).unwrap();
        assert_eq!(out.as_bytes().len(), SA_BONUS_BYTES);
        let (_, inline) = ZnodePhys::decode_v4(out.as_bytes()).unwrap();
        assert_eq!(
            inline.map(|r| out.as_bytes()[r].to_vec()),
            Some(target.to_vec())
        );
        assert!(link.encode_v4(ByteOrder::HOST, Some(&[b'u'; 57])).is_err());
        assert!(ZnodePhys::decode_bonus(3, out.as_bytes()).is_err());
    }

    #[test]
    fn malformed_znodes_are_errors() {
        assert!(ZnodePhys::decode(&[0u8; 100]).is_err());
        let mut bytes = ZnodePhys::default().encode();
        bytes[88..96].copy_from_slice(&1_000_000_000u64.to_le_bytes());
        assert!(ZnodePhys::decode(&bytes).is_err());
    }
}
