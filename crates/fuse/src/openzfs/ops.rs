//! The FUSE request handlers of `OzfsFs`: reads answered from the OpenZFS readers, every
//! change refused with EROFS (see the module's theory paragraph).

use super::{io_error, kind_of, Node, OzfsFs, CTL_SHARES};
use crate::ctldir::{CTL_ROOT, CTL_SNAPDIR};
use crate::kernel::{
    AccessFlags, Errno, FileHandle, FileType, FopenFlags, Generation, INodeNo, KernelConfig,
    LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
    WriteFlags,
};
use crate::ops::reply_sized;
use crate::SnapDir;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime};
use zetta::zpl::openzfs::sa::SaXattr;
use zetta::zpl::openzfs::znode::{S_IFLNK, S_IFMT};

/// How long the kernel may trust attributes and names: nothing on a read-only pool changes
/// them (only `.zfs`'s presence follows `snapdir`, and lookups of it are answered anew).
const TTL: Duration = Duration::from_secs(3600);
/// Largest read answered at once (the kernel asks for at most its `max_read`).
const READ_MAX_BYTES: u32 = 1 << 20;
/// The Linux namespace of user attributes (which other platforms store without it).
const USER_PREFIX: &[u8] = b"user.";

fn erofs() -> Errno {
    Errno::EROFS
}

fn enodata() -> Errno {
    Errno::from_i32(libc::ENODATA)
}

impl OzfsFs {
    /// `lookup`: the entry's attributes and generation.
    fn lookup_entry(
        &self,
        parent: INodeNo,
        name: &[u8],
    ) -> Result<(crate::kernel::FileAttr, u64), Errno> {
        match self.node(parent)? {
            Node::CtlRoot => match name {
                b"snapshot" => Ok((self.ctl_attr(CTL_SNAPDIR, 2), 0)),
                b"shares" => Ok((self.ctl_attr(CTL_SHARES, 2), 0)),
                b"." => Ok((self.ctl_attr(CTL_ROOT, 4), 0)),
                b".." => self.lookup_entry(INodeNo(1), b"."),
                _ => Err(Errno::ENOENT),
            },
            Node::Shares => match name {
                b"." => Ok((self.ctl_attr(CTL_SHARES, 2), 0)),
                b".." => Ok((self.ctl_attr(CTL_ROOT, 4), 0)),
                _ => Err(Errno::ENOENT),
            },
            Node::SnapDir => match name {
                b"." => Ok((self.ctl_attr(CTL_SNAPDIR, 2), 0)),
                b".." => Ok((self.ctl_attr(CTL_ROOT, 4), 0)),
                _ => {
                    let slot = self
                        .snaps
                        .iter()
                        .position(|s| s.short.as_bytes() == name)
                        .ok_or(Errno::ENOENT)?;
                    let fs = self.snap_fs(slot)?;
                    self.attr(&fs, fs.root, Some(slot))
                }
            },
            Node::Obj(fs, dir, slot) => {
                if slot.is_none()
                    && dir == fs.root
                    && name == b".zfs"
                    && self.snapdir() != SnapDir::Disabled
                {
                    return Ok((self.ctl_attr(CTL_ROOT, 4), 0));
                }
                let object = match name {
                    b"." => dir,
                    b".." if dir == fs.root => {
                        return match slot {
                            None => self.attr(&fs, dir, None),
                            Some(_) => Ok((self.ctl_attr(CTL_SNAPDIR, 2), 0)),
                        };
                    }
                    b".." => fs.attr(dir).map_err(io_error)?.parent,
                    name => fs
                        .lookup(dir, name)
                        .map_err(io_error)?
                        .ok_or(Errno::ENOENT)?,
                };
                self.attr(&fs, object, slot)
            }
        }
    }

    fn getattr_of(&self, ino: INodeNo) -> Result<crate::kernel::FileAttr, Errno> {
        match self.node(ino)? {
            Node::CtlRoot => Ok(self.ctl_attr(CTL_ROOT, 4)),
            Node::SnapDir => Ok(self.ctl_attr(CTL_SNAPDIR, 2)),
            Node::Shares => Ok(self.ctl_attr(CTL_SHARES, 2)),
            Node::Obj(fs, object, slot) => self.attr(&fs, object, slot).map(|(a, _)| a),
        }
    }

    /// A file's extended attributes as (stored name, value).
    fn stored_xattrs(&self, ino: INodeNo) -> Result<Vec<SaXattr>, Errno> {
        match self.node(ino)? {
            Node::Obj(fs, object, _) => fs.xattrs(object).map_err(io_error),
            _ => Ok(Vec::new()),
        }
    }
}

/// A stored xattr name as Linux lists it (OpenZFS `zpl_xattr_filldir`): a name in a Linux
/// namespace as it is, FreeBSD's system namespace hidden, any other name in `user.`.
fn listed_name(stored: &[u8]) -> Option<Vec<u8>> {
    if stored.starts_with(b"freebsd:") {
        return None;
    }
    if in_linux_namespace(stored) {
        Some(stored.to_vec())
    } else {
        Some([USER_PREFIX, stored].concat())
    }
}

fn in_linux_namespace(name: &[u8]) -> bool {
    name.starts_with(USER_PREFIX)
        || name.starts_with(b"trusted.")
        || name.starts_with(b"security.")
        || name == b"system.posix_acl_access"
        || name == b"system.posix_acl_default"
}

/// The names OpenZFS refuses after `user.` (`ZFS_XA_NS_PREFIX_FORBIDDEN`).
fn forbidden_bare_name(name: &[u8]) -> bool {
    [
        &b"freebsd:"[..],
        b"security.",
        b"system.",
        b"trusted.",
        b"user.",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// The value of xattr `name` as Linux asks for it (OpenZFS `zpl_xattr_user_get` and
/// friends): `user.X` is stored as `user.X` (Linux) or `X` (other platforms).
fn find_xattr(stored: &[SaXattr], name: &[u8]) -> Result<Vec<u8>, Errno> {
    let find = |want: &[u8]| {
        stored
            .iter()
            .find(|(n, _)| n.as_slice() == want)
            .map(|(_, v)| v.clone())
    };
    if let Some(bare) = name.strip_prefix(USER_PREFIX) {
        if forbidden_bare_name(bare) {
            return Err(Errno::EINVAL);
        }
        return find(name).or_else(|| find(bare)).ok_or_else(enodata);
    }
    if !in_linux_namespace(name) {
        return Err(Errno::from_i32(libc::EOPNOTSUPP));
    }
    find(name).ok_or_else(enodata)
}

impl crate::kernel::Filesystem for OzfsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_time_granularity(Duration::from_nanos(1));
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lookup_entry(parent, name.as_bytes()) {
            Ok((attr, gen)) => reply.entry(&TTL, &attr, Generation(gen)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.getattr_of(ino) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<crate::kernel::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(erofs());
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let result = match self.node(ino) {
            Ok(Node::Obj(fs, object, _)) => fs.attr(object).map_err(io_error).and_then(|a| {
                if a.mode & S_IFMT == S_IFLNK {
                    fs.readlink(object).map_err(io_error)
                } else {
                    Err(Errno::EINVAL)
                }
            }),
            Ok(_) => Err(Errno::EINVAL),
            Err(e) => Err(e),
        };
        match result {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(erofs());
    }

    fn mkdir(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        reply.error(erofs());
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(erofs());
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(erofs());
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(erofs());
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(erofs());
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(erofs());
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        // Opening for writing, or truncating, changes the file (Linux's `may_open`).
        let writing = flags.0 & libc::O_ACCMODE != libc::O_RDONLY || flags.0 & libc::O_TRUNC != 0;
        if writing {
            return reply.error(erofs());
        }
        match self.getattr_of(ino) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = match self.node(ino) {
            Ok(Node::Obj(fs, object, _)) => fs.attr(object).map_err(io_error).and_then(|a| {
                if kind_of(a.mode) == FileType::Directory {
                    return Err(Errno::EISDIR);
                }
                fs.read(object, offset, size.min(READ_MAX_BYTES) as usize)
                    .map_err(io_error)
            }),
            Ok(_) => Err(Errno::EISDIR),
            Err(e) => Err(e),
        };
        match result {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(erofs());
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Nothing is ever dirty.
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.list(ino) {
            Ok(list) => reply.opened(FileHandle(self.keep_listing(list)), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let list = match self.listing(fh.0) {
            Some(list) => list,
            None => match self.list(ino) {
                Ok(list) => std::sync::Arc::new(list),
                Err(e) => return reply.error(e),
            },
        };
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        for (i, (ino, kind, name)) in list.iter().enumerate().skip(start) {
            if reply.add(*ino, i as u64 + 1, *kind, OsStr::from_bytes(name)) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.drop_listing(fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let (blocks, avail, files, free_files) = self.space();
        // 512-byte fragments (f_frsize, the unit of the counts), 128 KiB preferred I/O
        // (OpenZFS's default recordsize), 255-byte names (ZFS_MAXNAMELEN).
        reply.statfs(blocks, avail, avail, files, free_files, 128 << 10, 255, 512);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(erofs());
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if !self.xattr() {
            return reply.error(Errno::from_i32(libc::EOPNOTSUPP));
        }
        let result = self
            .stored_xattrs(ino)
            .and_then(|stored| find_xattr(&stored, name.as_bytes()));
        match result {
            Ok(value) => reply_sized(reply, size, &value),
            Err(e) => reply.error(e),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if !self.xattr() {
            return reply_sized(reply, size, &[]);
        }
        match self.stored_xattrs(ino) {
            Ok(stored) => {
                let mut list = Vec::new();
                for (name, _) in &stored {
                    if let Some(name) = listed_name(name) {
                        list.extend_from_slice(&name);
                        list.push(0);
                    }
                }
                reply_sized(reply, size, &list)
            }
            Err(e) => reply.error(e),
        }
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(erofs());
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        // `default_permissions`: the kernel has checked (and refuses W_OK on `ro`).
        reply.ok();
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(erofs());
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(erofs());
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        _ino_in: INodeNo,
        _fh_in: FileHandle,
        _offset_in: u64,
        _ino_out: INodeNo,
        _fh_out: FileHandle,
        _offset_out: u64,
        _len: u64,
        _flags: crate::kernel::CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        reply.error(erofs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xattr_names_follow_openzfs_on_linux() {
        assert_eq!(listed_name(b"user.a"), Some(b"user.a".to_vec()));
        assert_eq!(listed_name(b"bare"), Some(b"user.bare".to_vec()));
        assert_eq!(listed_name(b"trusted.t"), Some(b"trusted.t".to_vec()));
        assert_eq!(listed_name(b"freebsd:system:x"), None);
        let stored = vec![
            (b"user.linux".to_vec(), b"1".to_vec()),
            (b"other".to_vec(), b"2".to_vec()),
            (b"security.selinux".to_vec(), b"3".to_vec()),
        ];
        assert_eq!(find_xattr(&stored, b"user.linux"), Ok(b"1".to_vec()));
        assert_eq!(find_xattr(&stored, b"user.other"), Ok(b"2".to_vec()));
        assert_eq!(find_xattr(&stored, b"security.selinux"), Ok(b"3".to_vec()));
        assert_eq!(find_xattr(&stored, b"user.none"), Err(enodata()));
        assert_eq!(find_xattr(&stored, b"user.user.x"), Err(Errno::EINVAL));
        assert_eq!(
            find_xattr(&stored, b"weird.x"),
            Err(Errno::from_i32(libc::EOPNOTSUPP))
        );
    }

    #[test]
    fn times_and_devices_never_panic() {
        use zetta::zpl::openzfs::znode::ZTime;
        for (sec, nsec) in [(u64::MAX, u64::MAX), (i64::MAX as u64, 5), (0, u64::MAX)] {
            let _ = super::super::to_system(ZTime { sec, nsec });
        }
        let before = super::super::to_system(ZTime {
            sec: (-2i64) as u64,
            nsec: 500_000_000,
        });
        assert_eq!(
            std::time::UNIX_EPOCH.duration_since(before).unwrap(),
            Duration::from_millis(1500)
        );
        let dev = |mode: u64, rdev: u64| {
            super::super::linux_rdev(&zetta::zpl::openzfs::fs::FileAttr {
                mode,
                rdev,
                ..Default::default()
            })
        };
        // Linux's dev_t (1:3), Solaris's 64-bit form and zfs-fuse's (FUSE's) encoding all
        // give glibc's makedev(1, 3).
        assert_eq!(u64::from(dev(0o020644, (1 << 20) | 3)), libc::makedev(1, 3));
        assert_eq!(u64::from(dev(0o020644, (1 << 32) | 3)), libc::makedev(1, 3));
        assert_eq!(u64::from(dev(0o020644, 0x103)), libc::makedev(1, 3));
        assert_eq!(
            u64::from(dev(0o060600, (259 << 20) | 70000)),
            libc::makedev(259, 70000)
        );
        assert_eq!(dev(0o100644, u64::MAX), 0);
    }
}
