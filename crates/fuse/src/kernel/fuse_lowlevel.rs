//! Requests and replies (libfuse's `fuse_lowlevel.c`): a request read from `/dev/fuse` is
//! decoded into the call of one `Filesystem` method, whose `Reply*` object encodes the
//! answer and writes it back.
//!
//! The types mirror the names and method shapes the handlers (`ops`, `ctldir`,
//! `openzfs::ops`) call on fuser's (`reply.entry(&ttl, &attr, generation)`, `reply.attr`,
//! `ReplyDirectoryPlus::add`, ...), so a filesystem moves between the two transports by its
//! imports. Differences, each deliberate: times the kernel sends are converted exactly
//! (a time before 1970 is `EPOCH - |sec| s + nsec ns`, not fuser 0.18's reading), and a
//! request the decoder cannot read (short, no NUL after a name, an unknown opcode) is
//! answered EIO (ENOSYS for an unknown opcode) and logged, never a panic.
//!
//! Every reply object answers exactly once: the method that sends consumes it, and a reply
//! dropped unanswered (a handler that returned early by mistake) answers EIO, so the
//! kernel's caller never hangs on a lost request.

use super::fuse_abi::{self as abi, opcode, Args, InHeader, WireAttr};
use super::fuse_dev::FuseDev;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An inode number as the kernel names it (1: the root).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct INodeNo(pub u64);
/// The handle `open`/`opendir`/`create` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileHandle(pub u64);
/// An inode's generation (a reused inode number is another file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generation(pub u64);
/// A POSIX lock owner id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockOwner(pub u64);
/// open(2) flags (`O_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFlags(pub i32);
/// `fuse_write_in.write_flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteFlags(pub u32);
/// access(2)'s mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessFlags(pub i32);
/// BSD file flags: never sent by Linux (kept for the handlers' signatures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsdFileFlags(pub u32);
/// copy_file_range(2)'s flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyFileRangeFlags(pub u64);

/// An errno a handler answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const EBADF: Errno = Errno(libc::EBADF);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    pub const EXDEV: Errno = Errno(libc::EXDEV);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);
    pub const EISDIR: Errno = Errno(libc::EISDIR);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EFBIG: Errno = Errno(libc::EFBIG);
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    pub const EROFS: Errno = Errno(libc::EROFS);
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
    pub const ENOSYS: Errno = Errno(libc::ENOSYS);
    pub const ENOTEMPTY: Errno = Errno(libc::ENOTEMPTY);
    pub const ENODATA: Errno = Errno(libc::ENODATA);
    pub const EOPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    pub const ESTALE: Errno = Errno(libc::ESTALE);

    /// A positive errno; anything else (0, negative) is EIO.
    pub fn from_i32(code: i32) -> Errno {
        if code > 0 {
            Errno(code)
        } else {
            Errno::EIO
        }
    }

    pub fn code(self) -> i32 {
        self.0
    }
}

/// The kind of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    NamedPipe,
    CharDevice,
    BlockDevice,
    Directory,
    RegularFile,
    Symlink,
    Socket,
}

impl FileType {
    /// The `S_IF*` bits of a mode.
    pub fn mode_bits(self) -> u32 {
        match self {
            FileType::NamedPipe => libc::S_IFIFO,
            FileType::CharDevice => libc::S_IFCHR,
            FileType::BlockDevice => libc::S_IFBLK,
            FileType::Directory => libc::S_IFDIR,
            FileType::RegularFile => libc::S_IFREG,
            FileType::Symlink => libc::S_IFLNK,
            FileType::Socket => libc::S_IFSOCK,
        }
    }

    /// The `DT_*` of a directory entry (the mode's type bits shifted down by 12).
    pub fn dirent_type(self) -> u32 {
        self.mode_bits() >> 12
    }
}

/// A file's attributes as a handler answers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileAttr {
    pub ino: INodeNo,
    pub size: u64,
    pub blocks: u64,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    /// Creation time: not part of the Linux ABI (kept for the handlers' shape).
    pub crtime: SystemTime,
    pub kind: FileType,
    pub perm: u16,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u32,
    pub blksize: u32,
    pub flags: u32,
}

/// A time as the wire's (seconds since the epoch, signed; nanoseconds 0..1e9).
pub fn wire_time(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let mut sec = -(d.as_secs() as i64);
            let mut nsec = d.subsec_nanos();
            if nsec > 0 {
                sec -= 1;
                nsec = 1_000_000_000 - nsec;
            }
            (sec, nsec)
        }
    }
}

/// A time the kernel sent: `EPOCH + sec s + nsec ns`, `sec` signed.
pub fn system_time(sec: i64, nsec: u32) -> SystemTime {
    let nanos = Duration::from_nanos(u64::from(nsec.min(999_999_999)));
    if sec >= 0 {
        UNIX_EPOCH + Duration::from_secs(sec as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs()) + nanos
    }
}

impl FileAttr {
    pub fn wire(&self) -> WireAttr {
        WireAttr {
            ino: self.ino.0,
            size: self.size,
            blocks: self.blocks,
            atime: wire_time(self.atime),
            mtime: wire_time(self.mtime),
            ctime: wire_time(self.ctime),
            mode: self.kind.mode_bits() | u32::from(self.perm & 0o7777),
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: self.rdev,
            blksize: self.blksize,
        }
    }
}

/// A time in a SETATTR: a given one, or the server's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeOrNow {
    SpecificTime(SystemTime),
    Now,
}

macro_rules! flag_set {
    ($name:ident, $t:ty { $($flag:ident = $v:expr),* $(,)? }) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
        pub struct $name(pub $t);
        impl $name {
            $(pub const $flag: $name = $name($v);)*
            pub const fn empty() -> $name { $name(0) }
            pub const fn bits(self) -> $t { self.0 }
            pub const fn contains(self, other: $name) -> bool { self.0 & other.0 == other.0 }
        }
        impl std::ops::BitOr for $name {
            type Output = $name;
            fn bitor(self, o: $name) -> $name { $name(self.0 | o.0) }
        }
    };
}

flag_set!(FopenFlags, u32 {
    FOPEN_DIRECT_IO = 1 << 0,
    FOPEN_KEEP_CACHE = 1 << 1,
    FOPEN_NONSEEKABLE = 1 << 2,
    FOPEN_CACHE_DIR = 1 << 3,
    FOPEN_STREAM = 1 << 4,
    FOPEN_NOFLUSH = 1 << 5,
});

flag_set!(RenameFlags, u32 {
    RENAME_NOREPLACE = libc::RENAME_NOREPLACE,
    RENAME_EXCHANGE = libc::RENAME_EXCHANGE,
    RENAME_WHITEOUT = libc::RENAME_WHITEOUT,
});

flag_set!(InitFlags, u64 {
    FUSE_ASYNC_READ = abi::init_flags::ASYNC_READ,
    FUSE_EXPORT_SUPPORT = abi::init_flags::EXPORT_SUPPORT,
    FUSE_BIG_WRITES = abi::init_flags::BIG_WRITES,
    FUSE_DO_READDIRPLUS = abi::init_flags::DO_READDIRPLUS,
    FUSE_READDIRPLUS_AUTO = abi::init_flags::READDIRPLUS_AUTO,
    FUSE_WRITEBACK_CACHE = abi::init_flags::WRITEBACK_CACHE,
    FUSE_PARALLEL_DIROPS = abi::init_flags::PARALLEL_DIROPS,
    FUSE_MAX_PAGES = abi::init_flags::MAX_PAGES,
    FUSE_INIT_EXT = abi::init_flags::INIT_EXT,
    FUSE_DIRECT_IO_ALLOW_MMAP = abi::init_flags::DIRECT_IO_ALLOW_MMAP,
});

/// The caller of a request.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub(crate) unique: u64,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) pid: u32,
}

impl Request {
    pub fn unique(&self) -> u64 {
        self.unique
    }
    pub fn uid(&self) -> u32 {
        self.uid
    }
    pub fn gid(&self) -> u32 {
        self.gid
    }
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

/// What the INIT reply will ask for; `init` adjusts it within what the kernel offers.
#[derive(Debug, Clone)]
pub struct KernelConfig {
    /// What the kernel offers.
    pub(crate) capable: u64,
    pub(crate) kernel_max_readahead: u32,
    pub(crate) requested: u64,
    pub(crate) max_readahead: u32,
    pub(crate) max_write: u32,
    pub(crate) max_background: u16,
    pub(crate) time_gran: u32,
}

/// The largest write (and with it `max_pages`) this transport's buffers hold.
pub const MAX_WRITE_LIMIT: u32 = 1 << 20;

impl KernelConfig {
    pub(crate) fn new(capable: u64, kernel_max_readahead: u32) -> KernelConfig {
        KernelConfig {
            capable,
            kernel_max_readahead,
            // What every fuser session asks for (its default), where offered.
            requested: (abi::init_flags::ASYNC_READ
                | abi::init_flags::BIG_WRITES
                | abi::init_flags::MAX_PAGES)
                & capable,
            max_readahead: kernel_max_readahead,
            max_write: 128 * 1024,
            max_background: 16,
            time_gran: 1,
        }
    }

    /// Asks for `flags`; refused (with the flags the kernel lacks) unless it offers all.
    pub fn add_capabilities(&mut self, flags: InitFlags) -> Result<(), InitFlags> {
        let missing = flags.0 & !self.capable;
        if missing != 0 {
            return Err(InitFlags(missing));
        }
        self.requested |= flags.0;
        Ok(())
    }

    pub fn set_max_write(&mut self, bytes: u32) -> Result<u32, u32> {
        if bytes == 0 || bytes > MAX_WRITE_LIMIT {
            return Err(MAX_WRITE_LIMIT);
        }
        Ok(std::mem::replace(&mut self.max_write, bytes))
    }

    /// Refused with the kernel's own figure when asked for more.
    pub fn set_max_readahead(&mut self, bytes: u32) -> Result<u32, u32> {
        if bytes == 0 || bytes > self.kernel_max_readahead {
            return Err(self.kernel_max_readahead);
        }
        Ok(std::mem::replace(&mut self.max_readahead, bytes))
    }

    pub fn set_max_background(&mut self, n: u16) -> Result<u16, u16> {
        if n == 0 {
            return Err(1);
        }
        Ok(std::mem::replace(&mut self.max_background, n))
    }

    pub fn set_time_granularity(&mut self, gran: Duration) -> Result<Duration, Duration> {
        let ns = gran.as_nanos();
        if ns == 0 || ns > 1_000_000_000 {
            return Err(Duration::from_nanos(1));
        }
        let old = Duration::from_nanos(u64::from(self.time_gran));
        self.time_gran = ns as u32;
        Ok(old)
    }

    /// Whether the INIT reply asks for `flag`.
    pub fn requested(&self, flag: InitFlags) -> bool {
        self.requested & flag.0 == flag.0
    }

    /// The INIT reply.
    pub(crate) fn init_out(&self) -> abi::InitOut {
        let flags = (self.requested | abi::init_flags::INIT_EXT) & self.capable;
        let page = 4096u32;
        abi::InitOut {
            major: abi::FUSE_KERNEL_VERSION,
            minor: abi::FUSE_KERNEL_MINOR_VERSION,
            max_readahead: self.max_readahead,
            flags,
            max_background: self.max_background,
            congestion_threshold: (u32::from(self.max_background) * 3 / 4) as u16,
            max_write: self.max_write,
            time_gran: self.time_gran,
            max_pages: (self.max_write.max(self.max_readahead).div_ceil(page)) as u16,
        }
    }
}

/// Where a reply goes: one connection and the request's id.
#[derive(Debug)]
pub struct Sender {
    dev: Option<Arc<FuseDev>>,
    unique: u64,
}

impl Sender {
    pub(crate) fn new(dev: Arc<FuseDev>, unique: u64) -> Sender {
        Sender {
            dev: Some(dev),
            unique,
        }
    }

    /// Sends `body` (the reply struct) after a success header.
    fn ok(mut self, body: &[u8]) {
        self.send(0, body);
    }

    fn error(mut self, e: Errno) {
        self.send(-e.code(), &[]);
    }

    fn send(&mut self, error: i32, body: &[u8]) {
        let Some(dev) = self.dev.take() else {
            return;
        };
        let mut msg = Vec::with_capacity(abi::OUT_HEADER_LEN + body.len());
        msg.resize(abi::OUT_HEADER_LEN, 0);
        msg.extend_from_slice(body);
        abi::encode_out_header(&mut msg, error, self.unique);
        match dev.write(&msg) {
            Ok(()) => {}
            // The request was interrupted and is gone, or the mount is: nobody waits.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENODEV)) => {}
            Err(e) => eprintln!("zetta-fuse: reply to request {}: {e}", self.unique),
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if self.dev.is_some() {
            self.send(-libc::EIO, &[]);
        }
    }
}

/// Where a reply goes: this transport's connection, or (while fuser remains the default
/// transport: `fuser_compat`) the fuser reply object of the same request.
#[derive(Debug)]
pub(crate) enum Inner<F> {
    Dev(Sender),
    Fuser(F),
}

macro_rules! reply_type {
    ($name:ident, $fuser:ty) => {
        #[derive(Debug)]
        pub struct $name {
            inner: Inner<$fuser>,
        }
        impl $name {
            pub(crate) fn new(sender: Sender) -> $name {
                $name {
                    inner: Inner::Dev(sender),
                }
            }
            pub(crate) fn fuser(reply: $fuser) -> $name {
                $name {
                    inner: Inner::Fuser(reply),
                }
            }
            pub fn error(self, e: Errno) {
                match self.inner {
                    Inner::Dev(s) => s.error(e),
                    Inner::Fuser(r) => r.error(fuser::Errno::from_i32(e.code())),
                }
            }
        }
    };
}

reply_type!(ReplyEmpty, fuser::ReplyEmpty);
reply_type!(ReplyEntry, fuser::ReplyEntry);
reply_type!(ReplyAttr, fuser::ReplyAttr);
reply_type!(ReplyData, fuser::ReplyData);
reply_type!(ReplyOpen, fuser::ReplyOpen);
reply_type!(ReplyWrite, fuser::ReplyWrite);
reply_type!(ReplyCreate, fuser::ReplyCreate);
reply_type!(ReplyStatfs, fuser::ReplyStatfs);
reply_type!(ReplyXattr, fuser::ReplyXattr);

use super::fuser_compat::{fuser_attr, fuser_fopen};

impl ReplyEmpty {
    pub fn ok(self) {
        match self.inner {
            Inner::Dev(s) => s.ok(&[]),
            Inner::Fuser(r) => r.ok(),
        }
    }
}

impl ReplyEntry {
    pub fn entry(self, ttl: &Duration, attr: &FileAttr, generation: Generation) {
        self.entry_with_ttls(ttl, ttl, attr, generation)
    }

    pub fn entry_with_ttls(
        self,
        attr_ttl: &Duration,
        entry_ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(abi::ENTRY_OUT_LEN);
                abi::encode_entry(
                    &mut out,
                    attr.ino.0,
                    generation.0,
                    *entry_ttl,
                    *attr_ttl,
                    &attr.wire(),
                );
                s.ok(&out)
            }
            Inner::Fuser(r) => r.entry_with_ttls(
                attr_ttl,
                entry_ttl,
                &fuser_attr(attr),
                fuser::Generation(generation.0),
            ),
        }
    }
}

impl ReplyAttr {
    pub fn attr(self, ttl: &Duration, attr: &FileAttr) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(abi::ATTR_OUT_LEN);
                abi::encode_attr_out(&mut out, *ttl, &attr.wire());
                s.ok(&out)
            }
            Inner::Fuser(r) => r.attr(ttl, &fuser_attr(attr)),
        }
    }
}

impl ReplyData {
    pub fn data(self, data: &[u8]) {
        match self.inner {
            Inner::Dev(s) => s.ok(data),
            Inner::Fuser(r) => r.data(data),
        }
    }
}

impl ReplyOpen {
    pub fn opened(self, fh: FileHandle, flags: FopenFlags) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(abi::OPEN_OUT_LEN);
                abi::encode_open_out(&mut out, fh.0, flags.0);
                s.ok(&out)
            }
            Inner::Fuser(r) => r.opened(fuser::FileHandle(fh.0), fuser_fopen(flags)),
        }
    }
}

impl ReplyWrite {
    pub fn written(self, size: u32) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(8);
                out.extend_from_slice(&size.to_le_bytes());
                out.extend_from_slice(&0u32.to_le_bytes());
                s.ok(&out)
            }
            Inner::Fuser(r) => r.written(size),
        }
    }
}

impl ReplyCreate {
    pub fn created(
        self,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
        fh: FileHandle,
        flags: FopenFlags,
    ) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(abi::ENTRY_OUT_LEN + abi::OPEN_OUT_LEN);
                abi::encode_entry(&mut out, attr.ino.0, generation.0, *ttl, *ttl, &attr.wire());
                abi::encode_open_out(&mut out, fh.0, flags.0);
                s.ok(&out)
            }
            Inner::Fuser(r) => r.created(
                ttl,
                &fuser_attr(attr),
                fuser::Generation(generation.0),
                fuser::FileHandle(fh.0),
                fuser_fopen(flags),
            ),
        }
    }
}

impl ReplyStatfs {
    /// `fuse_kstatfs`: blocks, bfree, bavail, files, ffree (u64), bsize, namelen, frsize,
    /// padding, spare[6] (u32).
    #[allow(clippy::too_many_arguments)]
    pub fn statfs(
        self,
        blocks: u64,
        bfree: u64,
        bavail: u64,
        files: u64,
        ffree: u64,
        bsize: u32,
        namelen: u32,
        frsize: u32,
    ) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(abi::KSTATFS_LEN);
                for v in [blocks, bfree, bavail, files, ffree] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                for v in [bsize, namelen, frsize] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.resize(abi::KSTATFS_LEN, 0);
                s.ok(&out)
            }
            Inner::Fuser(r) => {
                r.statfs(blocks, bfree, bavail, files, ffree, bsize, namelen, frsize)
            }
        }
    }
}

impl ReplyXattr {
    /// The size a buffer needs (the caller asked with size 0).
    pub fn size(self, size: u32) {
        match self.inner {
            Inner::Dev(s) => {
                let mut out = Vec::with_capacity(8);
                out.extend_from_slice(&size.to_le_bytes());
                out.extend_from_slice(&0u32.to_le_bytes());
                s.ok(&out)
            }
            Inner::Fuser(r) => r.size(size),
        }
    }

    pub fn data(self, data: &[u8]) {
        match self.inner {
            Inner::Dev(s) => s.ok(data),
            Inner::Fuser(r) => r.data(data),
        }
    }
}

/// A READDIR reply: entries added until the kernel's buffer (`size`) is full.
#[derive(Debug)]
pub struct ReplyDirectory {
    inner: Inner<fuser::ReplyDirectory>,
    buf: Vec<u8>,
    max: usize,
}

impl ReplyDirectory {
    pub(crate) fn new(sender: Sender, size: usize) -> ReplyDirectory {
        ReplyDirectory {
            inner: Inner::Dev(sender),
            buf: Vec::with_capacity(size.min(64 * 1024)),
            max: size,
        }
    }

    pub(crate) fn fuser(reply: fuser::ReplyDirectory) -> ReplyDirectory {
        ReplyDirectory {
            inner: Inner::Fuser(reply),
            buf: Vec::new(),
            max: 0,
        }
    }

    /// Adds an entry; true when it did not fit (the buffer is full: send it).
    pub fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        kind: FileType,
        name: T,
    ) -> bool {
        if let Inner::Fuser(r) = &mut self.inner {
            return r.add(
                fuser::INodeNo(ino.0),
                offset,
                super::fuser_compat::fuser_kind(kind),
                name,
            );
        }
        let name = name.as_ref().as_bytes();
        if self.buf.len() + abi::dirent_len(name.len()) > self.max {
            return true;
        }
        abi::encode_dirent(&mut self.buf, ino.0, offset, kind.dirent_type(), name);
        false
    }

    pub fn ok(self) {
        match self.inner {
            Inner::Dev(s) => s.ok(&self.buf),
            Inner::Fuser(r) => r.ok(),
        }
    }

    pub fn error(self, e: Errno) {
        match self.inner {
            Inner::Dev(s) => s.error(e),
            Inner::Fuser(r) => r.error(fuser::Errno::from_i32(e.code())),
        }
    }
}

/// A READDIRPLUS reply: each entry a `fuse_entry_out` and a `fuse_dirent`.
#[derive(Debug)]
pub struct ReplyDirectoryPlus {
    inner: Inner<fuser::ReplyDirectoryPlus>,
    buf: Vec<u8>,
    max: usize,
}

impl ReplyDirectoryPlus {
    pub(crate) fn new(sender: Sender, size: usize) -> ReplyDirectoryPlus {
        ReplyDirectoryPlus {
            inner: Inner::Dev(sender),
            buf: Vec::with_capacity(size.min(64 * 1024)),
            max: size,
        }
    }

    pub(crate) fn fuser(reply: fuser::ReplyDirectoryPlus) -> ReplyDirectoryPlus {
        ReplyDirectoryPlus {
            inner: Inner::Fuser(reply),
            buf: Vec::new(),
            max: 0,
        }
    }

    /// Adds an entry; true when it did not fit. The kernel takes one lookup reference of
    /// each entry sent (but "." and ".."), none of one that did not fit.
    pub fn add<T: AsRef<OsStr>>(
        &mut self,
        ino: INodeNo,
        offset: u64,
        name: T,
        ttl: &Duration,
        attr: &FileAttr,
        generation: Generation,
    ) -> bool {
        if let Inner::Fuser(r) = &mut self.inner {
            return r.add(
                fuser::INodeNo(ino.0),
                offset,
                name,
                ttl,
                &fuser_attr(attr),
                fuser::Generation(generation.0),
            );
        }
        let name = name.as_ref().as_bytes();
        if self.buf.len() + abi::ENTRY_OUT_LEN + abi::dirent_len(name.len()) > self.max {
            return true;
        }
        abi::encode_entry(&mut self.buf, ino.0, generation.0, *ttl, *ttl, &attr.wire());
        abi::encode_dirent(&mut self.buf, ino.0, offset, attr.kind.dirent_type(), name);
        false
    }

    pub fn ok(self) {
        match self.inner {
            Inner::Dev(s) => s.ok(&self.buf),
            Inner::Fuser(r) => r.ok(),
        }
    }

    pub fn error(self, e: Errno) {
        match self.inner {
            Inner::Dev(s) => s.error(e),
            Inner::Fuser(r) => r.error(fuser::Errno::from_i32(e.code())),
        }
    }
}

/// A filesystem served through this transport: one method per request; each answers
/// through its reply (the defaults answer ENOSYS, which the kernel remembers for some
/// requests and stops sending).
#[allow(unused_variables, clippy::too_many_arguments)]
pub trait Filesystem: Send + Sync + 'static {
    /// The INIT handshake: what to ask of the kernel.
    fn init(&mut self, req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        Ok(())
    }
    /// The session ended (unmounted).
    fn destroy(&self) {}
    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply.error(Errno::ENOSYS)
    }
    fn forget(&self, req: &Request, ino: INodeNo, nlookup: u64) {}
    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        reply.error(Errno::ENOSYS)
    }
    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        crtime: Option<SystemTime>,
        chgtime: Option<SystemTime>,
        bkuptime: Option<SystemTime>,
        flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        reply.error(Errno::ENOSYS)
    }
    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS)
    }
    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS)
    }
    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty())
    }
    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        flags: OpenFlags,
        lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn flush(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn release(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        flags: OpenFlags,
        lock_owner: Option<LockOwner>,
        flush: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok()
    }
    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn opendir(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty())
    }
    fn readdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectoryPlus,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn releasedir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        reply.ok()
    }
    fn fsyncdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn statfs(&self, req: &Request, ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(0, 0, 0, 0, 0, 512, 255, 0)
    }
    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS)
    }
    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS)
    }
    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS)
    }
    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        reply.error(Errno::ENOSYS)
    }
    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS)
    }
    fn copy_file_range(
        &self,
        req: &Request,
        ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::ENOSYS)
    }
}

/// The caller named in a request header.
pub(crate) fn request_of(h: &InHeader) -> Request {
    Request {
        unique: h.unique,
        uid: h.uid,
        gid: h.gid,
        pid: h.pid,
    }
}

/// Why a request could not be served.
#[derive(Debug, PartialEq, Eq)]
pub enum Undecodable {
    /// Shorter than its header, or its length disagrees with the bytes read.
    Header,
    /// An argument ran past the end, or a name has no NUL.
    Args { opcode: u32, unique: u64 },
}

fn path_of(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

fn fh_if(valid: bool, fh: u64) -> Option<FileHandle> {
    valid.then_some(FileHandle(fh))
}

/// Decodes the request in `buf` and calls the filesystem; answers EIO (and says so in the
/// log) when the arguments cannot be read, ENOSYS for an opcode not served. INIT is the
/// connection's (`fuse_dev`); a late one is refused.
pub fn dispatch(fs: &dyn Filesystem, dev: &Arc<FuseDev>, buf: &[u8]) -> Result<(), Undecodable> {
    let header = InHeader::parse(buf).ok_or(Undecodable::Header)?;
    let body = &buf[abi::IN_HEADER_LEN..];
    let result = dispatch_request(fs, dev, &header, body);
    if result.is_none() {
        Sender::new(dev.clone(), header.unique).error(Errno::EIO);
        return Err(Undecodable::Args {
            opcode: header.opcode,
            unique: header.unique,
        });
    }
    Ok(())
}

/// `None` when an argument could not be read (nothing answered yet).
fn dispatch_request(
    fs: &dyn Filesystem,
    dev: &Arc<FuseDev>,
    h: &InHeader,
    body: &[u8],
) -> Option<()> {
    let req = request_of(h);
    let ino = INodeNo(h.nodeid);
    let sender = || Sender::new(dev.clone(), h.unique);
    let mut a = Args::new(body);
    let os = |b: &[u8]| OsStr::from_bytes(b).to_owned();
    match h.opcode {
        opcode::LOOKUP => {
            let name = a.name()?;
            fs.lookup(&req, ino, &os(name), ReplyEntry::new(sender()));
        }
        opcode::FORGET => {
            let nlookup = a.u64()?;
            fs.forget(&req, ino, nlookup);
        }
        opcode::BATCH_FORGET => {
            let count = a.u32()?;
            let _dummy = a.u32()?;
            for _ in 0..count {
                let nodeid = a.u64()?;
                let nlookup = a.u64()?;
                fs.forget(&req, INodeNo(nodeid), nlookup);
            }
        }
        opcode::GETATTR => {
            let flags = a.u32()?;
            let _dummy = a.u32()?;
            let fh = a.u64()?;
            let fh = fh_if(flags & abi::FUSE_GETATTR_FH != 0, fh);
            fs.getattr(&req, ino, fh, ReplyAttr::new(sender()));
        }
        opcode::SETATTR => {
            let valid = a.u32()?;
            let _pad = a.u32()?;
            let fh = a.u64()?;
            let size = a.u64()?;
            let _lock_owner = a.u64()?;
            let (atime, mtime, ctime) = (a.i64()?, a.i64()?, a.i64()?);
            let (atimensec, mtimensec, ctimensec) = (a.u32()?, a.u32()?, a.u32()?);
            let mode = a.u32()?;
            let _unused4 = a.u32()?;
            let uid = a.u32()?;
            let gid = a.u32()?;
            let has = |bit: u32| valid & bit != 0;
            let time = |set: u32, now: u32, sec: i64, nsec: u32| {
                if has(now) {
                    Some(TimeOrNow::Now)
                } else if has(set) {
                    Some(TimeOrNow::SpecificTime(system_time(sec, nsec)))
                } else {
                    None
                }
            };
            fs.setattr(
                &req,
                ino,
                has(abi::fattr::MODE).then_some(mode),
                has(abi::fattr::UID).then_some(uid),
                has(abi::fattr::GID).then_some(gid),
                has(abi::fattr::SIZE).then_some(size),
                time(abi::fattr::ATIME, abi::fattr::ATIME_NOW, atime, atimensec),
                time(abi::fattr::MTIME, abi::fattr::MTIME_NOW, mtime, mtimensec),
                has(abi::fattr::CTIME).then(|| system_time(ctime, ctimensec)),
                fh_if(has(abi::fattr::FH), fh),
                None,
                None,
                None,
                None,
                ReplyAttr::new(sender()),
            );
        }
        opcode::READLINK => fs.readlink(&req, ino, ReplyData::new(sender())),
        opcode::SYMLINK => {
            let name = a.name()?;
            let target = a.name()?;
            fs.symlink(
                &req,
                ino,
                &os(name),
                path_of(target),
                ReplyEntry::new(sender()),
            );
        }
        opcode::MKNOD => {
            let mode = a.u32()?;
            let rdev = a.u32()?;
            let umask = a.u32()?;
            let _pad = a.u32()?;
            let name = a.name()?;
            fs.mknod(
                &req,
                ino,
                &os(name),
                mode,
                umask,
                rdev,
                ReplyEntry::new(sender()),
            );
        }
        opcode::MKDIR => {
            let mode = a.u32()?;
            let umask = a.u32()?;
            let name = a.name()?;
            fs.mkdir(&req, ino, &os(name), mode, umask, ReplyEntry::new(sender()));
        }
        opcode::UNLINK => {
            let name = a.name()?;
            fs.unlink(&req, ino, &os(name), ReplyEmpty::new(sender()));
        }
        opcode::RMDIR => {
            let name = a.name()?;
            fs.rmdir(&req, ino, &os(name), ReplyEmpty::new(sender()));
        }
        opcode::RENAME | opcode::RENAME2 => {
            let newdir = a.u64()?;
            let flags = if h.opcode == opcode::RENAME2 {
                let flags = a.u32()?;
                let _pad = a.u32()?;
                flags
            } else {
                0
            };
            let name = a.name()?;
            let newname = a.name()?;
            fs.rename(
                &req,
                ino,
                &os(name),
                INodeNo(newdir),
                &os(newname),
                RenameFlags(flags),
                ReplyEmpty::new(sender()),
            );
        }
        opcode::LINK => {
            let old = a.u64()?;
            let newname = a.name()?;
            fs.link(
                &req,
                INodeNo(old),
                ino,
                &os(newname),
                ReplyEntry::new(sender()),
            );
        }
        opcode::OPEN | opcode::OPENDIR => {
            let flags = a.u32()?;
            let _open_flags = a.u32()?;
            let flags = OpenFlags(flags as i32);
            if h.opcode == opcode::OPEN {
                fs.open(&req, ino, flags, ReplyOpen::new(sender()));
            } else {
                fs.opendir(&req, ino, flags, ReplyOpen::new(sender()));
            }
        }
        opcode::READ | opcode::READDIR | opcode::READDIRPLUS => {
            let fh = FileHandle(a.u64()?);
            let offset = a.u64()?;
            let size = a.u32()?;
            let read_flags = a.u32()?;
            let lock_owner = a.u64()?;
            let flags = a.u32()?;
            match h.opcode {
                opcode::READ => {
                    let owner = (read_flags & abi::FUSE_READ_LOCKOWNER != 0)
                        .then_some(LockOwner(lock_owner));
                    fs.read(
                        &req,
                        ino,
                        fh,
                        offset,
                        size,
                        OpenFlags(flags as i32),
                        owner,
                        ReplyData::new(sender()),
                    );
                }
                opcode::READDIR => fs.readdir(
                    &req,
                    ino,
                    fh,
                    offset,
                    ReplyDirectory::new(sender(), size as usize),
                ),
                _ => fs.readdirplus(
                    &req,
                    ino,
                    fh,
                    offset,
                    ReplyDirectoryPlus::new(sender(), size as usize),
                ),
            }
        }
        opcode::WRITE => {
            let fh = FileHandle(a.u64()?);
            let offset = a.u64()?;
            let size = a.u32()?;
            let write_flags = a.u32()?;
            let lock_owner = a.u64()?;
            let flags = a.u32()?;
            let _pad = a.u32()?;
            let data = a.bytes(size as usize)?;
            let owner =
                (write_flags & abi::FUSE_WRITE_LOCKOWNER != 0).then_some(LockOwner(lock_owner));
            fs.write(
                &req,
                ino,
                fh,
                offset,
                data,
                WriteFlags(write_flags),
                OpenFlags(flags as i32),
                owner,
                ReplyWrite::new(sender()),
            );
        }
        opcode::STATFS => fs.statfs(&req, ino, ReplyStatfs::new(sender())),
        opcode::RELEASE | opcode::RELEASEDIR => {
            let fh = FileHandle(a.u64()?);
            let flags = OpenFlags(a.u32()? as i32);
            let release_flags = a.u32()?;
            let lock_owner = a.u64()?;
            if h.opcode == opcode::RELEASE {
                let flush = release_flags & abi::FUSE_RELEASE_FLUSH != 0;
                fs.release(
                    &req,
                    ino,
                    fh,
                    flags,
                    flush.then_some(LockOwner(lock_owner)),
                    flush,
                    ReplyEmpty::new(sender()),
                );
            } else {
                fs.releasedir(&req, ino, fh, flags, ReplyEmpty::new(sender()));
            }
        }
        opcode::FSYNC | opcode::FSYNCDIR => {
            let fh = FileHandle(a.u64()?);
            let datasync = a.u32()? & abi::FUSE_FSYNC_FDATASYNC != 0;
            if h.opcode == opcode::FSYNC {
                fs.fsync(&req, ino, fh, datasync, ReplyEmpty::new(sender()));
            } else {
                fs.fsyncdir(&req, ino, fh, datasync, ReplyEmpty::new(sender()));
            }
        }
        opcode::SETXATTR => {
            // `fuse_setxattr_in` without FUSE_SETXATTR_EXT (never asked for): size, flags.
            let size = a.u32()?;
            let flags = a.u32()?;
            let name = a.name()?;
            let value = a.bytes(size as usize)?;
            fs.setxattr(
                &req,
                ino,
                &os(name),
                value,
                flags as i32,
                0,
                ReplyEmpty::new(sender()),
            );
        }
        opcode::GETXATTR => {
            let size = a.u32()?;
            let _pad = a.u32()?;
            let name = a.name()?;
            fs.getxattr(&req, ino, &os(name), size, ReplyXattr::new(sender()));
        }
        opcode::LISTXATTR => {
            let size = a.u32()?;
            fs.listxattr(&req, ino, size, ReplyXattr::new(sender()));
        }
        opcode::REMOVEXATTR => {
            let name = a.name()?;
            fs.removexattr(&req, ino, &os(name), ReplyEmpty::new(sender()));
        }
        opcode::FLUSH => {
            let fh = FileHandle(a.u64()?);
            let _unused = a.u32()?;
            let _pad = a.u32()?;
            let owner = LockOwner(a.u64()?);
            fs.flush(&req, ino, fh, owner, ReplyEmpty::new(sender()));
        }
        opcode::ACCESS => {
            let mask = a.u32()?;
            fs.access(
                &req,
                ino,
                AccessFlags(mask as i32),
                ReplyEmpty::new(sender()),
            );
        }
        opcode::CREATE => {
            let flags = a.u32()?;
            let mode = a.u32()?;
            let umask = a.u32()?;
            let _open_flags = a.u32()?;
            let name = a.name()?;
            fs.create(
                &req,
                ino,
                &os(name),
                mode,
                umask,
                flags as i32,
                ReplyCreate::new(sender()),
            );
        }
        opcode::FALLOCATE => {
            let fh = FileHandle(a.u64()?);
            let offset = a.u64()?;
            let length = a.u64()?;
            let mode = a.u32()?;
            fs.fallocate(
                &req,
                ino,
                fh,
                offset,
                length,
                mode as i32,
                ReplyEmpty::new(sender()),
            );
        }
        opcode::COPY_FILE_RANGE => {
            let fh_in = FileHandle(a.u64()?);
            let off_in = a.u64()?;
            let ino_out = INodeNo(a.u64()?);
            let fh_out = FileHandle(a.u64()?);
            let off_out = a.u64()?;
            let len = a.u64()?;
            let flags = a.u64()?;
            fs.copy_file_range(
                &req,
                ino,
                fh_in,
                off_in,
                ino_out,
                fh_out,
                off_out,
                len,
                CopyFileRangeFlags(flags),
                ReplyWrite::new(sender()),
            );
        }
        // Interrupts are not acted on: every handler runs to its end (as with fuser).
        opcode::INTERRUPT => {}
        opcode::DESTROY => ReplyEmpty::new(sender()).ok(),
        // A second INIT, or an opcode nothing here serves.
        _ => Sender::new(dev.clone(), h.unique).error(Errno::ENOSYS),
    }
    Some(())
}
