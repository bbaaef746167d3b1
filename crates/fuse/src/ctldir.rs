//! The `.zfs` control directory (OpenZFS `zfs_ctldir.c`): `.zfs/snapshot/<snap>` shows
//! each snapshot's tree, read-only, inside the live mount.
//!
//! Inode numbers above 2^48 belong to it (ZPL object numbers stay below):
//!
//! ```text
//! 1 << 48           .zfs
//! (1 << 48) + 1     .zfs/snapshot
//! (k + 2) << 48 | object   object `object` of the snapshot in slot k (k < 2^15)
//! ```
//! A snapshot gets its slot the first time it is looked up and keeps it for the mount's
//! life, so its inode numbers stay stable while the kernel caches them. Everything under
//! `.zfs` refuses changes with EROFS (snapshots are immutable). `snapdir=hidden` (the
//! default) leaves `.zfs` out of the root's listing but reachable by name, as in
//! OpenZFS; `snapdir=disabled` hides it entirely.

use super::ZplFs;
use fuser::{Errno, FileAttr, FileType, INodeNo};
use std::time::SystemTime;
use zetta::zpl::{Attr, ZplError};

pub const CTL_ROOT: u64 = 1 << 48;
pub const CTL_SNAPDIR: u64 = CTL_ROOT + 1;
const SLOT_SHIFT: u32 = 48;
const SLOTS_MAX: u64 = (1 << 15) - 2;
const OBJECT_MASK: u64 = (1 << SLOT_SHIFT) - 1;

/// Where an inode number points.
pub enum Node {
    /// An object of the live filesystem.
    Head(u64),
    CtlRoot,
    SnapDir,
    /// (snapshot name `fs@snap`, object in it)
    Snap(String, u64),
}

/// Snapshot slots of one mount.
#[derive(Default)]
pub struct Slots {
    names: Vec<String>,
}

impl Slots {
    pub fn slot_of(&mut self, name: &str) -> Option<u64> {
        if let Some(at) = self.names.iter().position(|n| n == name) {
            return Some(at as u64);
        }
        if self.names.len() as u64 >= SLOTS_MAX {
            return None;
        }
        self.names.push(name.to_string());
        Some(self.names.len() as u64 - 1)
    }

    pub fn name(&self, slot: u64) -> Option<&str> {
        self.names.get(slot as usize).map(String::as_str)
    }
}

pub fn snap_ino(slot: u64, object: u64) -> INodeNo {
    INodeNo((slot + 2) << SLOT_SHIFT | (object & OBJECT_MASK))
}

/// Attributes of the synthetic directories `.zfs` and `.zfs/snapshot`.
pub fn ctl_attr(ino: u64, nlink: u32) -> FileAttr {
    let now = SystemTime::now();
    FileAttr {
        ino: INodeNo(ino),
        size: 0,
        blocks: 0,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind: FileType::Directory,
        perm: 0o555,
        nlink,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl ZplFs {
    pub(crate) fn node(&self, ino: INodeNo) -> Node {
        match ino.0 {
            1 => Node::Head(self.vfs.root),
            CTL_ROOT => Node::CtlRoot,
            CTL_SNAPDIR => Node::SnapDir,
            n if n < CTL_ROOT => Node::Head(n),
            n => {
                let slot = (n >> SLOT_SHIFT) - 2;
                match self.slots.lock().name(slot) {
                    Some(name) => Node::Snap(name.to_string(), n & OBJECT_MASK),
                    // A slot this mount never handed out: nothing is there.
                    None => Node::Snap(String::new(), 0),
                }
            }
        }
    }

    /// `fs@snap` names of the mounted filesystem's snapshots.
    pub(crate) fn snapshot_names(&self) -> Result<Vec<String>, Errno> {
        let pool = self.pool()?;
        let mut spa = pool.write();
        let snapshots = spa
            .snapshots(&self.options.fsname)
            .map_err(|_| Errno::EIO)?;
        Ok(snapshots.into_iter().map(|(name, _, _)| name).collect())
    }

    /// Runs a read-only ZPL operation in snapshot `name`.
    pub(crate) fn in_snapshot<T>(
        &self,
        name: &str,
        work: impl FnOnce(
            &zetta::zpl::Zfsvfs,
            &mut zetta::dmu::ObjectSet,
            &zetta::dmu::IoCtx<'_>,
        ) -> Result<T, ZplError>,
    ) -> Result<T, Errno> {
        if name.is_empty() {
            return Err(Errno::ENOENT);
        }
        let pool = self.pool()?;
        let mut spa = pool.write();
        spa.with_zpl_snapshot(name, work)
            .map_err(|e| Errno::from_i32(e.errno()))
    }

    /// The inode number under which an object of snapshot `name` is shown.
    pub(crate) fn snap_object_ino(&self, name: &str, object: u64) -> Result<INodeNo, Errno> {
        let slot = self.slots.lock().slot_of(name).ok_or(Errno::ENOSPC)?;
        Ok(snap_ino(slot, object))
    }

    /// A snapshot object's attributes with its `.zfs` inode number.
    pub(crate) fn snap_attr(&self, name: &str, attr: &Attr) -> Result<FileAttr, Errno> {
        let mut out = self.file_attr(attr);
        out.ino = self.snap_object_ino(name, attr.object)?;
        Ok(out)
    }

    pub(crate) fn snapdir_enabled(&self) -> bool {
        self.snapdir() != super::SnapDir::Disabled
    }
}

/// One listing entry: (inode, offset after it, type, name).
pub type CtlDirent = (INodeNo, i64, FileType, Vec<u8>);

impl ZplFs {
    /// `lookup` under `.zfs` (or of `.zfs` itself); `None` when the live tree answers.
    pub(crate) fn ctl_lookup(
        &self,
        parent: INodeNo,
        name: &[u8],
    ) -> Option<Result<FileAttr, Errno>> {
        match self.node(parent) {
            Node::Head(dir) => (dir == self.vfs.root && name == b".zfs" && self.snapdir_enabled())
                .then(|| Ok(ctl_attr(CTL_ROOT, 3))),
            Node::CtlRoot => Some(match name {
                b"snapshot" => Ok(ctl_attr(CTL_SNAPDIR, 2)),
                _ => Err(Errno::ENOENT),
            }),
            Node::SnapDir => Some((|| {
                let full = format!("{}@{}", self.options.fsname, String::from_utf8_lossy(name));
                if !self.snapshot_names()?.contains(&full) {
                    return Err(Errno::ENOENT);
                }
                let attr =
                    self.in_snapshot(&full, |vfs, os, ctx| vfs.getattr(os, ctx, vfs.root))?;
                self.snap_attr(&full, &attr)
            })()),
            Node::Snap(snap, dir) => Some((|| {
                let attr =
                    self.in_snapshot(&snap, |vfs, os, ctx| vfs.lookup(os, ctx, dir, name))?;
                self.snap_attr(&snap, &attr)
            })()),
        }
    }

    pub(crate) fn ctl_getattr(&self, ino: INodeNo) -> Option<Result<FileAttr, Errno>> {
        match self.node(ino) {
            Node::Head(_) => None,
            Node::CtlRoot => Some(Ok(ctl_attr(CTL_ROOT, 3))),
            Node::SnapDir => Some(Ok(ctl_attr(CTL_SNAPDIR, 2))),
            Node::Snap(snap, object) => Some((|| {
                let attr = self.in_snapshot(&snap, |vfs, os, ctx| vfs.getattr(os, ctx, object))?;
                self.snap_attr(&snap, &attr)
            })()),
        }
    }

    pub(crate) fn ctl_readdir(
        &self,
        ino: INodeNo,
        offset: i64,
    ) -> Option<Result<Vec<CtlDirent>, Errno>> {
        let dot = |ino: u64, parent: u64| -> Vec<CtlDirent> {
            vec![
                (INodeNo(ino), 1, FileType::Directory, b".".to_vec()),
                (INodeNo(parent), 2, FileType::Directory, b"..".to_vec()),
            ]
        };
        let from = |list: Vec<CtlDirent>| {
            list.into_iter()
                .filter(|e| e.1 > offset)
                .collect::<Vec<_>>()
        };
        match self.node(ino) {
            Node::Head(_) => None,
            Node::CtlRoot => {
                let mut list = dot(CTL_ROOT, 1);
                list.push((
                    INodeNo(CTL_SNAPDIR),
                    3,
                    FileType::Directory,
                    b"snapshot".to_vec(),
                ));
                Some(Ok(from(list)))
            }
            Node::SnapDir => Some((|| {
                let mut list = dot(CTL_SNAPDIR, CTL_ROOT);
                for (i, full) in self.snapshot_names()?.into_iter().enumerate() {
                    let short = full.split_once('@').map(|(_, s)| s).unwrap_or(&full);
                    let root = self.in_snapshot(&full, |vfs, _, _| Ok(vfs.root))?;
                    let ino = self.snap_object_ino(&full, root)?;
                    list.push((
                        ino,
                        i as i64 + 3,
                        FileType::Directory,
                        short.as_bytes().to_vec(),
                    ));
                }
                Ok(from(list))
            })()),
            Node::Snap(snap, dir) => Some((|| {
                let (root, entries) = self.in_snapshot(&snap, |vfs, os, ctx| {
                    Ok((vfs.root, vfs.readdir(os, ctx, dir, offset, 4096)?))
                })?;
                let mut list = Vec::new();
                for entry in entries {
                    let ino = if entry.name == b".." && dir == root {
                        INodeNo(CTL_SNAPDIR)
                    } else {
                        self.snap_object_ino(&snap, entry.object)?
                    };
                    list.push((
                        ino,
                        entry.next,
                        super::ops::file_type(entry.kind),
                        entry.name,
                    ));
                }
                Ok(list)
            })()),
        }
    }

    pub(crate) fn ctl_read(
        &self,
        ino: INodeNo,
        offset: u64,
        size: u32,
    ) -> Option<Result<Vec<u8>, Errno>> {
        match self.node(ino) {
            Node::Head(_) => None,
            Node::Snap(snap, object) => Some(self.in_snapshot(&snap, |vfs, os, ctx| {
                vfs.read(os, ctx, object, offset, size as usize)
            })),
            _ => Some(Err(Errno::EISDIR)),
        }
    }

    pub(crate) fn ctl_readlink(&self, ino: INodeNo) -> Option<Result<Vec<u8>, Errno>> {
        match self.node(ino) {
            Node::Head(_) => None,
            Node::Snap(snap, object) => {
                Some(self.in_snapshot(&snap, |vfs, os, ctx| vfs.readlink(os, ctx, object)))
            }
            _ => Some(Err(Errno::EINVAL)),
        }
    }
}
