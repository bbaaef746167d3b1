//! The bridge that keeps fuser serving while this transport is opt-in: a filesystem
//! written against `kernel::Filesystem` runs on a fuser session through `FuserFs`, whose
//! methods convert fuser's arguments into this crate's types and wrap fuser's reply
//! objects in this crate's `Reply*` (their `Inner::Fuser` arm). It goes when fuser does.
//!
//! One conversion is not a copy: fuser 0.18 reads a time before 1970 the kernel sent as
//! (sec < 0, nsec) into `EPOCH - (|sec| s + nsec ns)`, the nanoseconds pointing the wrong
//! way; `fuser_time` undoes exactly that (the version is pinned in Cargo.toml).

use super::fuse_lowlevel::*;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) fn fuser_kind(kind: FileType) -> fuser::FileType {
    match kind {
        FileType::NamedPipe => fuser::FileType::NamedPipe,
        FileType::CharDevice => fuser::FileType::CharDevice,
        FileType::BlockDevice => fuser::FileType::BlockDevice,
        FileType::Directory => fuser::FileType::Directory,
        FileType::RegularFile => fuser::FileType::RegularFile,
        FileType::Symlink => fuser::FileType::Symlink,
        FileType::Socket => fuser::FileType::Socket,
    }
}

pub(crate) fn fuser_attr(a: &FileAttr) -> fuser::FileAttr {
    fuser::FileAttr {
        ino: fuser::INodeNo(a.ino.0),
        size: a.size,
        blocks: a.blocks,
        atime: a.atime,
        mtime: a.mtime,
        ctime: a.ctime,
        crtime: a.crtime,
        kind: fuser_kind(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: a.rdev,
        blksize: a.blksize,
        flags: a.flags,
    }
}

pub(crate) fn fuser_fopen(f: FopenFlags) -> fuser::FopenFlags {
    fuser::FopenFlags::from_bits_truncate(f.bits())
}

/// A time fuser decoded, read back as the kernel sent it (see the module paragraph).
fn fuser_time(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(_) => t,
        Err(e) => {
            let d = e.duration();
            system_time(-(d.as_secs() as i64), d.subsec_nanos())
        }
    }
}

fn time_or_now(t: fuser::TimeOrNow) -> TimeOrNow {
    match t {
        fuser::TimeOrNow::SpecificTime(t) => TimeOrNow::SpecificTime(fuser_time(t)),
        fuser::TimeOrNow::Now => TimeOrNow::Now,
    }
}

fn request(req: &fuser::Request) -> Request {
    Request {
        unique: req.unique().0,
        uid: req.uid(),
        gid: req.gid(),
        pid: req.pid(),
    }
}

fn ino(i: fuser::INodeNo) -> INodeNo {
    INodeNo(i.0)
}

fn fh(f: fuser::FileHandle) -> FileHandle {
    FileHandle(f.0)
}

fn open_flags(f: fuser::OpenFlags) -> OpenFlags {
    OpenFlags(f.0)
}

fn owner(o: Option<fuser::LockOwner>) -> Option<LockOwner> {
    o.map(|o| LockOwner(o.0))
}

/// A `kernel::Filesystem` served by a fuser session.
pub struct FuserFs<F>(pub F);

impl<F: Filesystem> fuser::Filesystem for FuserFs<F> {
    fn init(
        &mut self,
        req: &fuser::Request,
        config: &mut fuser::KernelConfig,
    ) -> std::io::Result<()> {
        let most = config
            .set_max_readahead(u32::MAX)
            .err()
            .unwrap_or(128 * 1024);
        let mut ours = KernelConfig::new(config.capabilities().bits(), most);
        self.0.init(&request(req), &mut ours)?;
        let _ = config.set_max_write(ours.max_write);
        let _ = config.set_max_readahead(ours.max_readahead);
        let _ = config.set_max_background(ours.max_background);
        let _ = config.set_time_granularity(Duration::from_nanos(u64::from(ours.time_gran)));
        let _ = config.add_capabilities(fuser::InitFlags::from_bits_truncate(ours.requested));
        Ok(())
    }

    fn destroy(&mut self) {
        self.0.destroy();
    }

    fn lookup(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        reply: fuser::ReplyEntry,
    ) {
        self.0
            .lookup(&request(req), ino(parent), name, ReplyEntry::fuser(reply))
    }

    fn forget(&self, req: &fuser::Request, i: fuser::INodeNo, nlookup: u64) {
        self.0.forget(&request(req), ino(i), nlookup)
    }

    fn getattr(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: Option<fuser::FileHandle>,
        reply: fuser::ReplyAttr,
    ) {
        self.0
            .getattr(&request(req), ino(i), f.map(fh), ReplyAttr::fuser(reply))
    }

    fn setattr(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<fuser::TimeOrNow>,
        mtime: Option<fuser::TimeOrNow>,
        ctime: Option<SystemTime>,
        f: Option<fuser::FileHandle>,
        crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: fuser::ReplyAttr,
    ) {
        self.0.setattr(
            &request(req),
            ino(i),
            mode,
            uid,
            gid,
            size,
            atime.map(time_or_now),
            mtime.map(time_or_now),
            ctime.map(fuser_time),
            f.map(fh),
            crtime.map(fuser_time),
            None,
            None,
            None,
            ReplyAttr::fuser(reply),
        )
    }

    fn readlink(&self, req: &fuser::Request, i: fuser::INodeNo, reply: fuser::ReplyData) {
        self.0
            .readlink(&request(req), ino(i), ReplyData::fuser(reply))
    }

    fn mknod(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: fuser::ReplyEntry,
    ) {
        self.0.mknod(
            &request(req),
            ino(parent),
            name,
            mode,
            umask,
            rdev,
            ReplyEntry::fuser(reply),
        )
    }

    fn mkdir(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: fuser::ReplyEntry,
    ) {
        self.0.mkdir(
            &request(req),
            ino(parent),
            name,
            mode,
            umask,
            ReplyEntry::fuser(reply),
        )
    }

    fn unlink(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        reply: fuser::ReplyEmpty,
    ) {
        self.0
            .unlink(&request(req), ino(parent), name, ReplyEmpty::fuser(reply))
    }

    fn rmdir(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        reply: fuser::ReplyEmpty,
    ) {
        self.0
            .rmdir(&request(req), ino(parent), name, ReplyEmpty::fuser(reply))
    }

    fn symlink(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: fuser::ReplyEntry,
    ) {
        self.0.symlink(
            &request(req),
            ino(parent),
            link_name,
            target,
            ReplyEntry::fuser(reply),
        )
    }

    fn rename(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        newparent: fuser::INodeNo,
        newname: &OsStr,
        flags: fuser::RenameFlags,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.rename(
            &request(req),
            ino(parent),
            name,
            ino(newparent),
            newname,
            RenameFlags(flags.bits()),
            ReplyEmpty::fuser(reply),
        )
    }

    fn link(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        newparent: fuser::INodeNo,
        newname: &OsStr,
        reply: fuser::ReplyEntry,
    ) {
        self.0.link(
            &request(req),
            ino(i),
            ino(newparent),
            newname,
            ReplyEntry::fuser(reply),
        )
    }

    fn open(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        flags: fuser::OpenFlags,
        reply: fuser::ReplyOpen,
    ) {
        self.0.open(
            &request(req),
            ino(i),
            open_flags(flags),
            ReplyOpen::fuser(reply),
        )
    }

    fn read(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        offset: u64,
        size: u32,
        flags: fuser::OpenFlags,
        lock_owner: Option<fuser::LockOwner>,
        reply: fuser::ReplyData,
    ) {
        self.0.read(
            &request(req),
            ino(i),
            fh(f),
            offset,
            size,
            open_flags(flags),
            owner(lock_owner),
            ReplyData::fuser(reply),
        )
    }

    fn write(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: fuser::WriteFlags,
        flags: fuser::OpenFlags,
        lock_owner: Option<fuser::LockOwner>,
        reply: fuser::ReplyWrite,
    ) {
        self.0.write(
            &request(req),
            ino(i),
            fh(f),
            offset,
            data,
            WriteFlags(write_flags.bits()),
            open_flags(flags),
            owner(lock_owner),
            ReplyWrite::fuser(reply),
        )
    }

    fn flush(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        lock_owner: fuser::LockOwner,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.flush(
            &request(req),
            ino(i),
            fh(f),
            LockOwner(lock_owner.0),
            ReplyEmpty::fuser(reply),
        )
    }

    fn release(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        flags: fuser::OpenFlags,
        lock_owner: Option<fuser::LockOwner>,
        flush: bool,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.release(
            &request(req),
            ino(i),
            fh(f),
            open_flags(flags),
            owner(lock_owner),
            flush,
            ReplyEmpty::fuser(reply),
        )
    }

    fn fsync(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        datasync: bool,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.fsync(
            &request(req),
            ino(i),
            fh(f),
            datasync,
            ReplyEmpty::fuser(reply),
        )
    }

    fn opendir(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        flags: fuser::OpenFlags,
        reply: fuser::ReplyOpen,
    ) {
        self.0.opendir(
            &request(req),
            ino(i),
            open_flags(flags),
            ReplyOpen::fuser(reply),
        )
    }

    fn readdir(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        offset: u64,
        reply: fuser::ReplyDirectory,
    ) {
        self.0.readdir(
            &request(req),
            ino(i),
            fh(f),
            offset,
            ReplyDirectory::fuser(reply),
        )
    }

    fn readdirplus(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        offset: u64,
        reply: fuser::ReplyDirectoryPlus,
    ) {
        self.0.readdirplus(
            &request(req),
            ino(i),
            fh(f),
            offset,
            ReplyDirectoryPlus::fuser(reply),
        )
    }

    fn releasedir(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        flags: fuser::OpenFlags,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.releasedir(
            &request(req),
            ino(i),
            fh(f),
            open_flags(flags),
            ReplyEmpty::fuser(reply),
        )
    }

    fn fsyncdir(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        datasync: bool,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.fsyncdir(
            &request(req),
            ino(i),
            fh(f),
            datasync,
            ReplyEmpty::fuser(reply),
        )
    }

    fn statfs(&self, req: &fuser::Request, i: fuser::INodeNo, reply: fuser::ReplyStatfs) {
        self.0
            .statfs(&request(req), ino(i), ReplyStatfs::fuser(reply))
    }

    fn setxattr(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.setxattr(
            &request(req),
            ino(i),
            name,
            value,
            flags,
            position,
            ReplyEmpty::fuser(reply),
        )
    }

    fn getxattr(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        name: &OsStr,
        size: u32,
        reply: fuser::ReplyXattr,
    ) {
        self.0
            .getxattr(&request(req), ino(i), name, size, ReplyXattr::fuser(reply))
    }

    fn listxattr(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        size: u32,
        reply: fuser::ReplyXattr,
    ) {
        self.0
            .listxattr(&request(req), ino(i), size, ReplyXattr::fuser(reply))
    }

    fn removexattr(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        name: &OsStr,
        reply: fuser::ReplyEmpty,
    ) {
        self.0
            .removexattr(&request(req), ino(i), name, ReplyEmpty::fuser(reply))
    }

    fn access(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        mask: fuser::AccessFlags,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.access(
            &request(req),
            ino(i),
            AccessFlags(mask.bits()),
            ReplyEmpty::fuser(reply),
        )
    }

    fn create(
        &self,
        req: &fuser::Request,
        parent: fuser::INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: fuser::ReplyCreate,
    ) {
        self.0.create(
            &request(req),
            ino(parent),
            name,
            mode,
            umask,
            flags,
            ReplyCreate::fuser(reply),
        )
    }

    fn fallocate(
        &self,
        req: &fuser::Request,
        i: fuser::INodeNo,
        f: fuser::FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: fuser::ReplyEmpty,
    ) {
        self.0.fallocate(
            &request(req),
            ino(i),
            fh(f),
            offset,
            length,
            mode,
            ReplyEmpty::fuser(reply),
        )
    }

    fn copy_file_range(
        &self,
        req: &fuser::Request,
        ino_in: fuser::INodeNo,
        fh_in: fuser::FileHandle,
        offset_in: u64,
        ino_out: fuser::INodeNo,
        fh_out: fuser::FileHandle,
        offset_out: u64,
        len: u64,
        flags: fuser::CopyFileRangeFlags,
        reply: fuser::ReplyWrite,
    ) {
        self.0.copy_file_range(
            &request(req),
            ino(ino_in),
            fh(fh_in),
            offset_in,
            ino(ino_out),
            fh(fh_out),
            offset_out,
            len,
            CopyFileRangeFlags(flags.bits()),
            ReplyWrite::fuser(reply),
        )
    }
}
