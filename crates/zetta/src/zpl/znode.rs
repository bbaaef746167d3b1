//! The znode: a file's attributes, kept in its dnode's bonus buffer (OpenZFS `znode_phys_t`
//! and the ZPL system attributes, `zfs_znode.c`, `zfs_sa.c`).
//!
//! Every ZPL object — file, directory, symlink, device node, fifo, socket — carries one
//! fixed 160-byte record. The file's size lives here, not in the dnode: the dnode's size
//! is where data blocks end, the znode's is what `stat` reports (they differ for a
//! directory, whose data is a ZAP, and after an extending truncate of a sparse file).
//!
//! ```text
//! byte   0  mode u64 (S_IFMT type bits | permission bits)
//!        8  uid u64          16  gid u64
//!       24  links u64        32  parent u64 (object of the directory it was last linked in)
//!       40  size u64         48  gen u64 (creation txg << 24 | a counter)
//!       56  flags u64 (ZFS pflags; bit 0 = on the delete queue)
//!       64  rdev u64         72  xattr u64 (object of its xattr ZAP, 0 = none)
//!       80  atime  (sec i64, nsec u64)    96  mtime (sec i64, nsec u64)
//!      112  ctime  (sec i64, nsec u64)   128  crtime (sec i64, nsec u64)
//!      144  reserved [u8; 16] (zero)
//! ```
//! All little-endian. Decoding checks the length and that nanoseconds are below 10^9; a
//! malformed record is an error, never a panic.

pub const ZNODE_SIZE_BYTES: usize = 160;
/// `bonus_type` of a dnode whose bonus is a znode.
pub const BONUS_TYPE_ZNODE: u8 = 17;

pub const S_IFMT: u64 = 0o170000;
pub const S_IFSOCK: u64 = 0o140000;
pub const S_IFLNK: u64 = 0o120000;
pub const S_IFREG: u64 = 0o100000;
pub const S_IFBLK: u64 = 0o060000;
pub const S_IFDIR: u64 = 0o040000;
pub const S_IFCHR: u64 = 0o020000;
pub const S_IFIFO: u64 = 0o010000;

/// The znode is on the delete queue (unlinked, still open).
pub const ZNODE_FLAG_UNLINKED: u64 = 1;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte layout documented above (and in docs/ONDISK.md) is what `encode` writes.
    #[test]
    fn golden_znode() {
        let znode = ZnodePhys {
            mode: S_IFREG | 0o644,
            uid: 1000,
            gid: 100,
            links: 1,
            parent: 4,
            size: 5,
            gen: 7,
            flags: 0,
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

    /// Bytes from disk never panic the decoder: short records and impossible times are errors.
    #[test]
    fn malformed_znodes_are_errors() {
        assert!(ZnodePhys::decode(&[0u8; 100]).is_err());
        let mut bytes = ZnodePhys::default().encode();
        bytes[88..96].copy_from_slice(&1_000_000_000u64.to_le_bytes());
        assert!(ZnodePhys::decode(&bytes).is_err());
    }
}
