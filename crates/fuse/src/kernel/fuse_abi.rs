//! The FUSE kernel ABI (Linux `include/uapi/linux/fuse.h`, protocol 7.x): the bytes a
//! request read from `/dev/fuse` carries and the bytes a reply or a notification written
//! to it must carry. Nothing here knows a filesystem: it decodes and encodes.
//!
//! Every message starts with a header. A request:
//!
//! ```text
//! fuse_in_header (40 bytes)
//!   0  len u32        the whole request, header included
//!   4  opcode u32     FUSE_LOOKUP (1) ... (see `Opcode`)
//!   8  unique u64     the id the reply repeats
//!  16  nodeid u64     the inode the request is about (1: the root)
//!  24  uid u32, 28 gid u32, 32 pid u32   the caller
//!  36  total_extlen u16 (in 8-byte units), 38 padding u16
//! then the opcode's argument struct, then (for some) NUL-terminated names or data.
//! ```
//!
//! A reply: `fuse_out_header` (16 bytes: len u32, error i32 — 0 or a negated errno —,
//! unique u64), then the opcode's reply struct; a notification is the same header with
//! unique 0 and the notification code in `error`. All integers are little-endian on every
//! architecture Zetta runs on (the kernel writes host order; x86-64 and aarch64 are LE).
//!
//! Decoding never trusts a length: `Args` reads fields off a byte slice and answers `None`
//! when the bytes run out or a name has no terminating NUL, so a malformed request is an
//! error answered EIO (see `fuse_lowlevel`), never a panic. The golden vectors in the
//! tests were read from this machine's kernel (6.18, protocol 7.45) on a test mount
//! (`kernel::tests::golden_requests_from_the_kernel`).

/// Protocol major version (`FUSE_KERNEL_VERSION`).
pub const FUSE_KERNEL_VERSION: u32 = 7;
/// The minor version this implementation speaks: the layouts below are 7.41's (the init
/// reply's 64 bytes, `fuse_open_out.backing_id`). The kernel speaks the lower of its own
/// and ours.
pub const FUSE_KERNEL_MINOR_VERSION: u32 = 41;
/// The smallest read buffer the kernel accepts (`FUSE_MIN_READ_BUFFER`).
pub const FUSE_MIN_READ_BUFFER: usize = 8192;

pub const IN_HEADER_LEN: usize = 40;
pub const OUT_HEADER_LEN: usize = 16;
pub const ATTR_LEN: usize = 88;
pub const ENTRY_OUT_LEN: usize = 40 + ATTR_LEN;
pub const ATTR_OUT_LEN: usize = 16 + ATTR_LEN;
pub const OPEN_OUT_LEN: usize = 16;
pub const INIT_OUT_LEN: usize = 64;
pub const KSTATFS_LEN: usize = 80;
/// `FUSE_NAME_OFFSET`: a `fuse_dirent`'s name follows its 24-byte head.
pub const DIRENT_NAME_OFFSET: usize = 24;

/// Request opcodes (`enum fuse_opcode`).
pub mod opcode {
    pub const LOOKUP: u32 = 1;
    pub const FORGET: u32 = 2;
    pub const GETATTR: u32 = 3;
    pub const SETATTR: u32 = 4;
    pub const READLINK: u32 = 5;
    pub const SYMLINK: u32 = 6;
    pub const MKNOD: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const UNLINK: u32 = 10;
    pub const RMDIR: u32 = 11;
    pub const RENAME: u32 = 12;
    pub const LINK: u32 = 13;
    pub const OPEN: u32 = 14;
    pub const READ: u32 = 15;
    pub const WRITE: u32 = 16;
    pub const STATFS: u32 = 17;
    pub const RELEASE: u32 = 18;
    pub const FSYNC: u32 = 20;
    pub const SETXATTR: u32 = 21;
    pub const GETXATTR: u32 = 22;
    pub const LISTXATTR: u32 = 23;
    pub const REMOVEXATTR: u32 = 24;
    pub const FLUSH: u32 = 25;
    pub const INIT: u32 = 26;
    pub const OPENDIR: u32 = 27;
    pub const READDIR: u32 = 28;
    pub const RELEASEDIR: u32 = 29;
    pub const FSYNCDIR: u32 = 30;
    pub const ACCESS: u32 = 34;
    pub const CREATE: u32 = 35;
    pub const INTERRUPT: u32 = 36;
    pub const DESTROY: u32 = 38;
    pub const BATCH_FORGET: u32 = 42;
    pub const FALLOCATE: u32 = 43;
    pub const READDIRPLUS: u32 = 44;
    pub const RENAME2: u32 = 45;
    pub const COPY_FILE_RANGE: u32 = 47;
    pub const SYNCFS: u32 = 50;
}

/// Notification codes (`enum fuse_notify_code`), sent in `fuse_out_header.error`.
pub const FUSE_NOTIFY_INVAL_INODE: i32 = 2;
pub const FUSE_NOTIFY_INVAL_ENTRY: i32 = 3;

/// `fuse_init_in.flags` / `flags2` bits (flags2 holds bits 32 and up).
pub mod init_flags {
    pub const ASYNC_READ: u64 = 1 << 0;
    pub const EXPORT_SUPPORT: u64 = 1 << 4;
    pub const BIG_WRITES: u64 = 1 << 5;
    pub const DO_READDIRPLUS: u64 = 1 << 13;
    pub const READDIRPLUS_AUTO: u64 = 1 << 14;
    pub const WRITEBACK_CACHE: u64 = 1 << 16;
    pub const PARALLEL_DIROPS: u64 = 1 << 18;
    pub const MAX_PAGES: u64 = 1 << 22;
    pub const SETXATTR_EXT: u64 = 1 << 29;
    pub const INIT_EXT: u64 = 1 << 30;
    pub const DIRECT_IO_ALLOW_MMAP: u64 = 1 << 36;
    pub const OVER_IO_URING: u64 = 1 << 41;
}

/// `fuse_setattr_in.valid` bits.
pub mod fattr {
    pub const MODE: u32 = 1 << 0;
    pub const UID: u32 = 1 << 1;
    pub const GID: u32 = 1 << 2;
    pub const SIZE: u32 = 1 << 3;
    pub const ATIME: u32 = 1 << 4;
    pub const MTIME: u32 = 1 << 5;
    pub const FH: u32 = 1 << 6;
    pub const ATIME_NOW: u32 = 1 << 7;
    pub const MTIME_NOW: u32 = 1 << 8;
    pub const LOCKOWNER: u32 = 1 << 9;
    pub const CTIME: u32 = 1 << 10;
    pub const KILL_SUIDGID: u32 = 1 << 11;
}

/// `fuse_getattr_in.getattr_flags`: `fh` is valid.
pub const FUSE_GETATTR_FH: u32 = 1 << 0;
/// `fuse_read_in.read_flags` / `fuse_write_in` / `fuse_release_in`: `lock_owner` is valid.
pub const FUSE_READ_LOCKOWNER: u32 = 1 << 1;
pub const FUSE_WRITE_LOCKOWNER: u32 = 1 << 1;
pub const FUSE_RELEASE_FLUSH: u32 = 1 << 0;
/// `fuse_fsync_in.fsync_flags`: only the data (fdatasync).
pub const FUSE_FSYNC_FDATASYNC: u32 = 1 << 0;

/// The request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InHeader {
    pub len: u32,
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
    pub total_extlen: u16,
}

impl InHeader {
    /// The header of `buf`, `None` when it is shorter than one or its `len` disagrees
    /// with the bytes read.
    pub fn parse(buf: &[u8]) -> Option<InHeader> {
        let mut a = Args::new(buf);
        let h = InHeader {
            len: a.u32()?,
            opcode: a.u32()?,
            unique: a.u64()?,
            nodeid: a.u64()?,
            uid: a.u32()?,
            gid: a.u32()?,
            pid: a.u32()?,
            total_extlen: a.u16()?,
        };
        let _padding = a.u16()?;
        (h.len as usize == buf.len()).then_some(h)
    }
}

/// A cursor over a request's argument bytes: every read answers `None` past the end.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    buf: &'a [u8],
}

impl<'a> Args<'a> {
    pub fn new(buf: &'a [u8]) -> Args<'a> {
        Args { buf }
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.buf.len() {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }

    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?))
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    pub fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    /// A NUL-terminated name (without its NUL); `None` without a NUL or when empty.
    pub fn name(&mut self) -> Option<&'a [u8]> {
        let end = self.buf.iter().position(|&b| b == 0)?;
        let name = &self.buf[..end];
        self.buf = &self.buf[end + 1..];
        (!name.is_empty()).then_some(name)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }
}

/// `fuse_init_in` (64 bytes: major, minor, max_readahead, flags, flags2, unused[11]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitIn {
    pub major: u32,
    pub minor: u32,
    pub max_readahead: u32,
    /// flags | flags2 << 32 (flags2 only when the kernel sets FUSE_INIT_EXT).
    pub flags: u64,
}

impl InitIn {
    pub fn parse(a: &mut Args) -> Option<InitIn> {
        let major = a.u32()?;
        let minor = a.u32()?;
        let max_readahead = a.u32()?;
        let low = a.u32()?;
        let mut flags = u64::from(low);
        if u64::from(low) & init_flags::INIT_EXT != 0 {
            flags |= u64::from(a.u32()?) << 32;
        }
        Some(InitIn {
            major,
            minor,
            max_readahead,
            flags,
        })
    }
}

/// `fuse_init_out`, as the server fills it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InitOut {
    pub major: u32,
    pub minor: u32,
    pub max_readahead: u32,
    pub flags: u64,
    pub max_background: u16,
    pub congestion_threshold: u16,
    pub max_write: u32,
    pub time_gran: u32,
    pub max_pages: u16,
}

impl InitOut {
    /// The 64 bytes:
    ///
    /// ```text
    ///  0 major u32, 4 minor u32, 8 max_readahead u32, 12 flags u32,
    /// 16 max_background u16, 18 congestion_threshold u16, 20 max_write u32,
    /// 24 time_gran u32, 28 max_pages u16, 30 map_alignment u16, 32 flags2 u32,
    /// 36 max_stack_depth u32, 40 request_timeout u16, 42 unused[11] u16
    /// ```
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.major.to_le_bytes());
        out.extend_from_slice(&self.minor.to_le_bytes());
        out.extend_from_slice(&self.max_readahead.to_le_bytes());
        out.extend_from_slice(&(self.flags as u32).to_le_bytes());
        out.extend_from_slice(&self.max_background.to_le_bytes());
        out.extend_from_slice(&self.congestion_threshold.to_le_bytes());
        out.extend_from_slice(&self.max_write.to_le_bytes());
        out.extend_from_slice(&self.time_gran.to_le_bytes());
        out.extend_from_slice(&self.max_pages.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&((self.flags >> 32) as u32).to_le_bytes());
        out.extend_from_slice(&[0u8; 4 + 2 + 22]);
    }
}

/// `fuse_attr` as the server fills it (88 bytes on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WireAttr {
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: (i64, u32),
    pub mtime: (i64, u32),
    pub ctime: (i64, u32),
    /// File type and permission bits (`S_IFREG | 0644`).
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u32,
    pub blksize: u32,
}

impl WireAttr {
    /// ```text
    ///  0 ino, 8 size, 16 blocks, 24 atime, 32 mtime, 40 ctime   (u64; times signed)
    /// 48 atimensec, 52 mtimensec, 56 ctimensec, 60 mode, 64 nlink, 68 uid, 72 gid,
    /// 76 rdev, 80 blksize, 84 flags                            (u32)
    /// ```
    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [self.ino, self.size, self.blocks] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for t in [self.atime, self.mtime, self.ctime] {
            out.extend_from_slice(&t.0.to_le_bytes());
        }
        for t in [self.atime, self.mtime, self.ctime] {
            out.extend_from_slice(&t.1.to_le_bytes());
        }
        for v in [
            self.mode,
            self.nlink,
            self.uid,
            self.gid,
            self.rdev,
            self.blksize,
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Splits a duration into the (seconds, nanoseconds) pair of a validity field.
pub fn valid(ttl: std::time::Duration) -> (u64, u32) {
    (ttl.as_secs(), ttl.subsec_nanos())
}

/// `fuse_entry_out` (128 bytes): nodeid, generation, entry_valid, attr_valid (u64),
/// entry_valid_nsec, attr_valid_nsec (u32), fuse_attr.
pub fn encode_entry(
    out: &mut Vec<u8>,
    nodeid: u64,
    generation: u64,
    entry_ttl: std::time::Duration,
    attr_ttl: std::time::Duration,
    attr: &WireAttr,
) {
    let (es, en) = valid(entry_ttl);
    let (as_, an) = valid(attr_ttl);
    for v in [nodeid, generation, es, as_] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&en.to_le_bytes());
    out.extend_from_slice(&an.to_le_bytes());
    attr.encode(out);
}

/// `fuse_attr_out` (104 bytes): attr_valid u64, attr_valid_nsec u32, dummy u32, fuse_attr.
pub fn encode_attr_out(out: &mut Vec<u8>, ttl: std::time::Duration, attr: &WireAttr) {
    let (s, n) = valid(ttl);
    out.extend_from_slice(&s.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    attr.encode(out);
}

/// `fuse_open_out` (16 bytes): fh u64, open_flags u32, backing_id i32.
pub fn encode_open_out(out: &mut Vec<u8>, fh: u64, open_flags: u32) {
    out.extend_from_slice(&fh.to_le_bytes());
    out.extend_from_slice(&open_flags.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
}

/// Bytes a `fuse_dirent` with a name of `namelen` bytes takes (padded to 8).
pub fn dirent_len(namelen: usize) -> usize {
    (DIRENT_NAME_OFFSET + namelen + 7) & !7
}

/// `fuse_dirent`: ino u64, off u64, namelen u32, type u32 (`DT_*`), name, zero padding
/// to a multiple of 8.
pub fn encode_dirent(out: &mut Vec<u8>, ino: u64, off: u64, dtype: u32, name: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&ino.to_le_bytes());
    out.extend_from_slice(&off.to_le_bytes());
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(&dtype.to_le_bytes());
    out.extend_from_slice(name);
    out.resize(start + dirent_len(name.len()), 0);
}

/// The reply header; `error` is 0 or a negated errno.
pub fn encode_out_header(out: &mut [u8], error: i32, unique: u64) {
    let len = out.len() as u32;
    out[0..4].copy_from_slice(&len.to_le_bytes());
    out[4..8].copy_from_slice(&error.to_le_bytes());
    out[8..16].copy_from_slice(&unique.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why: the attribute layout is what the kernel reads `stat` from; a field in the wrong
    /// place shows wrong sizes or modes. Offsets from `struct fuse_attr`.
    #[test]
    fn attr_fields_sit_where_fuse_h_puts_them() {
        let attr = WireAttr {
            ino: 0x11,
            size: 0x22,
            blocks: 0x33,
            atime: (-1, 7),
            mtime: (5, 8),
            ctime: (6, 9),
            mode: 0o100644,
            nlink: 2,
            uid: 1000,
            gid: 100,
            rdev: 0x0801,
            blksize: 131072,
        };
        let mut out = Vec::new();
        attr.encode(&mut out);
        assert_eq!(out.len(), ATTR_LEN);
        let mut a = Args::new(&out);
        assert_eq!(a.u64(), Some(0x11));
        assert_eq!(a.u64(), Some(0x22));
        assert_eq!(a.u64(), Some(0x33));
        assert_eq!(a.i64(), Some(-1));
        assert_eq!(a.i64(), Some(5));
        assert_eq!(a.i64(), Some(6));
        assert_eq!(
            [a.u32(), a.u32(), a.u32(), a.u32(), a.u32()],
            [Some(7), Some(8), Some(9), Some(0o100644), Some(2)]
        );
        assert_eq!(
            [a.u32(), a.u32(), a.u32(), a.u32(), a.u32()],
            [Some(1000), Some(100), Some(0x0801), Some(131072), Some(0)]
        );
        let mut entry = Vec::new();
        encode_entry(
            &mut entry,
            9,
            3,
            std::time::Duration::from_millis(1500),
            std::time::Duration::from_secs(1),
            &attr,
        );
        assert_eq!(entry.len(), ENTRY_OUT_LEN);
        assert_eq!(&entry[32..36], &500_000_000u32.to_le_bytes());
        assert_eq!(&entry[40..], &out[..]);
        let mut init = Vec::new();
        InitOut {
            major: 7,
            minor: 41,
            max_readahead: 1 << 20,
            flags: init_flags::MAX_PAGES | init_flags::DIRECT_IO_ALLOW_MMAP,
            max_background: 64,
            congestion_threshold: 48,
            max_write: 1 << 20,
            time_gran: 1,
            max_pages: 256,
        }
        .encode(&mut init);
        assert_eq!(init.len(), INIT_OUT_LEN);
        assert_eq!(&init[12..16], &(1u32 << 22).to_le_bytes());
        assert_eq!(&init[28..30], &256u16.to_le_bytes());
        assert_eq!(&init[32..36], &(1u32 << 4).to_le_bytes());
    }

    /// Why: a dirent's length is padded to 8 bytes; the kernel walks the buffer by it.
    #[test]
    fn dirents_are_padded_to_eight_bytes() {
        let mut out = Vec::new();
        encode_dirent(&mut out, 5, 1, 8, b"a");
        assert_eq!(out.len(), 32);
        encode_dirent(&mut out, 6, 2, 4, b"12345678");
        assert_eq!(out.len(), 64);
        assert_eq!(dirent_len(0), 24);
    }

    /// Why: bytes from the kernel must never panic the daemon: every truncation of a
    /// header and every name without its NUL is `None`.
    #[test]
    fn truncated_arguments_are_refused_not_panicked_on() {
        let buf = [1u8; 40];
        for n in 0..40 {
            assert_eq!(InHeader::parse(&buf[..n]), None);
        }
        assert_eq!(Args::new(b"abc").name(), None);
        assert_eq!(Args::new(b"\0").name(), None);
        assert_eq!(Args::new(b"ab\0c").name(), Some(&b"ab"[..]));
        assert_eq!(Args::new(&[0; 7]).u64(), None);
    }
}
