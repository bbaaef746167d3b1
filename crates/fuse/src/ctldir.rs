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
//! `.zfs` refuses changes with EROFS (snapshots are immutable, xattrs included: they are
//! read from the snapshot's object set, set and removed nowhere). `snapdir=hidden` (the
//! default) leaves `.zfs` out of the root's listing but reachable by name, as in
//! OpenZFS; `snapdir=disabled` hides it entirely.
//!
//! Locking. Every request here runs under the pool's shared lock, beside the live tree's
//! readers: a snapshot's object set is opened on first use (`Spa::zpl_snapshot_open`,
//! shared access: OpenZFS's automount holding the snapshot's objset) and kept in the
//! mount's `SnapCache` (its `zfs_snapentry_t`s), whose `Mutex` is a leaf under the pool
//! lock, held only to find, insert or drop an `Arc` (never across I/O or an open: two
//! racing first uses both open, one copy is kept). Each use first checks that the name
//! still resolves to the held snapshot (`Spa::zpl_snapshot_current`), so a destroyed,
//! renamed or re-created snapshot is never read through a stale object set: its holder is
//! dropped, the name resolved again (ENOENT when gone). Memory: at most `SNAPSHOTS_OPEN_MAX`
//! object sets per mount, the least recently used dropped first (a reader still inside
//! one keeps it alive through its `Arc`), each with the object-set cache bound of any
//! reader-filled cache (`zetta::dmu::objset`).

use super::ZplFs;
use crate::kernel::{Errno, FileAttr, FileType, INodeNo};
use std::sync::Arc;
use std::time::SystemTime;
use zetta::dmu::{IoCtx, ObjectSet};
use zetta::spa::Spa;
use zetta::zpl::snapshot::ZplSnapshot;
use zetta::zpl::{Attr, Zfsvfs, ZplError};

pub const CTL_ROOT: u64 = 1 << 48;
pub const CTL_SNAPDIR: u64 = CTL_ROOT + 1;
const SLOT_SHIFT: u32 = 48;
const SLOTS_MAX: u64 = (1 << 15) - 2;
const OBJECT_MASK: u64 = (1 << SLOT_SHIFT) - 1;
/// Snapshot object sets a mount keeps open for `.zfs` (the least recently used is dropped).
pub const SNAPSHOTS_OPEN_MAX: usize = 8;

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

/// The snapshots a mount holds open for `.zfs`, by `fs@snap` name, most recently used
/// last (OpenZFS's `zfs_snapentry_t`s of one filesystem).
#[derive(Default)]
pub struct SnapCache {
    open: Vec<(String, Arc<ZplSnapshot>)>,
}

impl SnapCache {
    fn get(&mut self, name: &str) -> Option<Arc<ZplSnapshot>> {
        let at = self.open.iter().position(|(n, _)| n == name)?;
        let entry = self.open.remove(at);
        let snap = entry.1.clone();
        self.open.push(entry);
        Some(snap)
    }

    /// Drops `name`'s holder if it still is `stale` (a racing user may have replaced it).
    fn drop_stale(&mut self, name: &str, stale: &Arc<ZplSnapshot>) {
        self.open
            .retain(|(n, snap)| !(n == name && Arc::ptr_eq(snap, stale)));
    }

    fn insert(&mut self, name: &str, snap: Arc<ZplSnapshot>) {
        self.open.retain(|(n, _)| n != name);
        if self.open.len() >= SNAPSHOTS_OPEN_MAX {
            self.open.remove(0);
        }
        self.open.push((name.to_string(), snap));
    }

    /// Snapshot object sets held now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.open.len()
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

    /// `fs@snap` names of the mounted filesystem's snapshots (under the shared lock).
    pub(crate) fn snapshot_names(&self) -> Result<Vec<String>, Errno> {
        let pool = self.pool()?;
        let spa = pool.read();
        let snapshots = spa
            .snapshots(&self.options.fsname)
            .map_err(|_| Errno::EIO)?;
        Ok(snapshots.into_iter().map(|(name, _, _)| name).collect())
    }

    /// Snapshot `name` held open for reads: the mount's holder while the name still
    /// resolves to it, else opened (again) and kept. Shared access only.
    fn snapshot(&self, spa: &Spa, name: &str) -> Result<Arc<ZplSnapshot>, Errno> {
        let held = self.snaps.lock().get(name);
        if let Some(snap) = held {
            if spa.zpl_snapshot_current(name, &snap) {
                return Ok(snap);
            }
            self.snaps.lock().drop_stale(name, &snap);
        }
        let snap = Arc::new(
            spa.zpl_snapshot_open(name)
                .map_err(|e| Errno::from_i32(e.errno()))?,
        );
        self.snaps.lock().insert(name, snap.clone());
        Ok(snap)
    }

    /// Runs a read-only ZPL operation in snapshot `name` under the pool's shared lock.
    pub(crate) fn in_snapshot<T>(
        &self,
        name: &str,
        work: impl FnOnce(&Zfsvfs, &ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, Errno> {
        if name.is_empty() {
            return Err(Errno::ENOENT);
        }
        let pool = self.pool()?;
        let spa = pool.read();
        let snap = self.snapshot(&spa, name)?;
        spa.with_zpl_snapshot_shared(&snap, work)
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

    /// `getxattr` under `.zfs`: a snapshot object's xattr, read from the snapshot's object
    /// set as the live tree's are from the head (OpenZFS serves them through the
    /// snapshot's own mount); `.zfs` and `.zfs/snapshot` have none (ENODATA).
    pub(crate) fn ctl_getxattr(&self, ino: INodeNo, name: &[u8]) -> Option<Result<Vec<u8>, Errno>> {
        match self.node(ino) {
            Node::Head(_) => None,
            Node::Snap(snap, object) => {
                Some(self.in_snapshot(&snap, |vfs, os, ctx| vfs.getxattr(os, ctx, object, name)))
            }
            _ => Some(Err(Errno::from_i32(libc::ENODATA))),
        }
    }

    /// `listxattr` under `.zfs`: a snapshot object's xattr names; none for `.zfs` itself.
    pub(crate) fn ctl_listxattr(&self, ino: INodeNo) -> Option<Result<Vec<Vec<u8>>, Errno>> {
        match self.node(ino) {
            Node::Head(_) => None,
            Node::Snap(snap, object) => {
                Some(self.in_snapshot(&snap, |vfs, os, ctx| vfs.listxattr(os, ctx, object)))
            }
            _ => Some(Ok(Vec::new())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{mount, pool, WAIT};
    use crate::ZplFs;
    use std::sync::mpsc;
    use zetta::zpl::Timespec;

    /// `.zfs/snapshot/<snap>/file` as the kernel walks to it and reads it: lookups, a
    /// listing of the snapshot's root, getattr and reads, whole.
    fn read_through_ctldir(fs: &ZplFs, snap: &str) -> Result<Vec<u8>, Errno> {
        let root = fs
            .ctl_lookup(INodeNo(CTL_SNAPDIR), snap.as_bytes())
            .unwrap()?;
        let listed = fs.ctl_readdir(root.ino, 0).unwrap()?;
        if !listed.iter().any(|(_, _, _, name)| name == b"file") {
            return Err(Errno::ENOENT);
        }
        let file = fs.ctl_lookup(root.ino, b"file").unwrap()?;
        let size = fs.ctl_getattr(file.ino).unwrap()?.size;
        let mut out = Vec::new();
        while (out.len() as u64) < size {
            let chunk = fs
                .ctl_read(file.ino, out.len() as u64, 128 << 10)
                .unwrap()?;
            if chunk.is_empty() {
                break;
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    // Why: every `.zfs` request took the pool's exclusive lock (the snapshot's object set was
    // opened with `&mut Spa`), so a snapshot's readers waited for each other and for every
    // live reader. With the pool's lock held shared, as any live reader holds it, a walk
    // and read of `.zfs/snapshot/<snap>/file` must complete (today it waits forever).
    #[test]
    fn snapshot_requests_complete_while_the_pool_lock_is_held_shared() {
        let (pool, contents) = pool(2);
        let fs = mount(&pool);
        let shared = pool.read();
        let got = std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            let fs = &fs;
            scope.spawn(move || {
                let _ = tx.send((read_through_ctldir(fs, "s0"), fs.snapshot_names()));
            });
            let got = rx.recv_timeout(WAIT);
            // Let a blocked request finish before the scope joins it.
            drop(shared);
            got
        });
        let (data, names) = got.expect("`.zfs` requests blocked by a shared pool lock");
        assert_eq!(data.unwrap(), contents[0]);
        assert_eq!(names.unwrap(), ["tank/fs@s0", "tank/fs@s1"]);
    }

    // Why: getxattr/listxattr under `.zfs` were refused for every pool (EOPNOTSUPP, an
    // empty list). A snapshot object's xattrs are read from the snapshot's object set: the
    // value it was taken with, not the head's; none on `.zfs/snapshot` itself.
    #[test]
    fn snapshot_xattrs_come_from_the_snapshot() {
        let (pool, _) = pool(1);
        let set = |value: &[u8], snap: &str| {
            let mut spa = pool.write();
            spa.with_zpl("tank/fs", |vfs, os, ctx| {
                let file = vfs.lookup(os, ctx, vfs.root, b"file")?.object;
                let now = Timespec { sec: 2, nsec: 0 };
                vfs.setxattr(os, ctx, file, b"user.color", value, 0, now)
            })
            .unwrap();
            spa.sync().unwrap();
            if !snap.is_empty() {
                spa.snapshot(&[format!("tank/fs@{snap}")]).unwrap();
            }
        };
        set(b"blue", "s1");
        set(b"red", "");
        let fs = mount(&pool);
        let file_in = |snap: &str| {
            let root = fs
                .ctl_lookup(INodeNo(CTL_SNAPDIR), snap.as_bytes())
                .unwrap()
                .unwrap();
            fs.ctl_lookup(root.ino, b"file").unwrap().unwrap().ino
        };
        let s1 = file_in("s1");
        assert_eq!(
            fs.ctl_getxattr(s1, b"user.color").unwrap().unwrap(),
            b"blue"
        );
        assert_eq!(
            fs.ctl_listxattr(s1).unwrap().unwrap(),
            vec![b"user.color".to_vec()]
        );
        let s0 = file_in("s0");
        assert_eq!(
            fs.ctl_getxattr(s0, b"user.color").unwrap().unwrap_err(),
            Errno::from_i32(libc::ENODATA)
        );
        assert!(fs.ctl_listxattr(s0).unwrap().unwrap().is_empty());
        assert!(fs
            .ctl_listxattr(INodeNo(CTL_SNAPDIR))
            .unwrap()
            .unwrap()
            .is_empty());
        // The head's own inode is not the ctldir's to answer.
        assert!(fs.ctl_getxattr(INodeNo(1), b"user.color").is_none());
    }

    // Why: snapshot object sets are now held open per mount: their number must stay bounded,
    // and a destroyed, renamed or re-created snapshot must never be read through a stale one.
    #[test]
    fn held_snapshots_are_bounded_and_follow_destroy_and_rename() {
        let snapshots = SNAPSHOTS_OPEN_MAX + 4;
        let (pool, contents) = pool(snapshots);
        let fs = mount(&pool);
        for (n, data) in contents.iter().enumerate() {
            assert_eq!(&read_through_ctldir(&fs, &format!("s{n}")).unwrap(), data);
            assert!(fs.snaps.lock().len() <= SNAPSHOTS_OPEN_MAX);
        }
        // Readers in parallel over every snapshot, each in its own order.
        std::thread::scope(|scope| {
            for reader in 0..4 {
                let (fs, contents) = (&fs, &contents);
                scope.spawn(move || {
                    for k in 0..contents.len() {
                        let n = (k * 5 + reader) % contents.len();
                        let got = read_through_ctldir(fs, &format!("s{n}")).unwrap();
                        assert!(got == contents[n], "reader {reader}, snapshot s{n}");
                    }
                });
            }
        });
        assert!(fs.snaps.lock().len() <= SNAPSHOTS_OPEN_MAX);

        let last = snapshots - 1;
        let held = format!("s{last}");
        assert_eq!(read_through_ctldir(&fs, &held).unwrap(), contents[last]);
        pool.write()
            .rename_snapshot(&format!("tank/fs@{held}"), "tank/fs@moved")
            .unwrap();
        assert_eq!(read_through_ctldir(&fs, &held), Err(Errno::ENOENT));
        assert_eq!(read_through_ctldir(&fs, "moved").unwrap(), contents[last]);
        // Re-created under the old name: the new snapshot's content, not the held one's.
        {
            let mut spa = pool.write();
            let now = Timespec { sec: 2, nsec: 0 };
            spa.with_zpl("tank/fs", |vfs, os, ctx| {
                let file = vfs.lookup(os, ctx, vfs.root, b"file")?.object;
                vfs.write(os, ctx, file, 0, b"re-created", now)?;
                Ok(())
            })
            .unwrap();
            spa.snapshot(&[format!("tank/fs@{held}")]).unwrap();
        }
        let mut recreated = contents[last].clone();
        recreated[..10].copy_from_slice(b"re-created");
        assert_eq!(read_through_ctldir(&fs, &held).unwrap(), recreated);
        assert_eq!(read_through_ctldir(&fs, "moved").unwrap(), contents[last]);
        pool.write().destroy_snapshot("tank/fs@moved").unwrap();
        assert_eq!(read_through_ctldir(&fs, "moved"), Err(Errno::ENOENT));
        pool.write().destroy_snapshot("tank/fs@s0").unwrap();
        assert_eq!(read_through_ctldir(&fs, "s0"), Err(Errno::ENOENT));
        assert_eq!(read_through_ctldir(&fs, "s1").unwrap(), contents[1]);
    }
}
