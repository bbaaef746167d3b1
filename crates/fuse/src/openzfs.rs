//! A filesystem of an imported OpenZFS pool served read-only through FUSE (OpenZFS's Linux
//! `zpl_*.c` over `zfs_vnops.c`, read paths only, and `zfs_ctldir.c` for `.zfs`).
//!
//! Theory. The pool is opened read-only by `zetta::spa::openzfs::pool::OpenZfsPool` and a
//! head filesystem's object set is read by `zetta::zpl::openzfs::fs::ZplFs`; this module
//! maps kernel requests onto those reads. Nothing is ever written: the mount is `ro`, and
//! every request that would change something answers EROFS (the kernel refuses most of
//! them first because of `ro`; the server refuses again). A reader error (a block that does
//! not verify, bytes that contradict the format) is logged and answered EIO.
//!
//! Inode layout (the same bit layout as Zetta's own mounts, `crate::ctldir`):
//!
//! ```text
//! 1                         the head's root directory (object 1 is the master node)
//! 2 .. 2^48                 head object n (OpenZFS object numbers are < 2^48)
//! 2^48                      .zfs
//! 2^48 + 1                  .zfs/snapshot
//! 2^48 + 2                  .zfs/shares (always empty)
//! (k + 2) << 48 | 1         the root directory of the snapshot in slot k
//! (k + 2) << 48 | n         object n of the snapshot in slot k
//! ```
//!
//! The snapshots of the dataset are listed once, at open (the pool is read-only: the list
//! cannot change), in creation order; slot k is the k-th. A snapshot's object set and ZPL
//! tables are opened the first time something under it is asked for, once. Snapshots past
//! `SLOTS_MAX` are not shown. The generation is the znode's `gen`.
//!
//! Directories: `opendir` lists the whole directory once ("." and ".." first, then the ZAP
//! in its order, then `.zfs` in the head's root under `snapdir=visible`) and keeps the list
//! under the handle; `readdir` offsets are positions in that list, so a listing resumes
//! exactly wherever the kernel stops, however large the directory.
//!
//! Extended attributes as OpenZFS on Linux shows them: the SA ones (`ZPL_DXATTR`) and the
//! xattr directory's files; a stored name in no Linux namespace is listed as `user.NAME`,
//! `freebsd:` names are hidden; `getxattr("user.X")` finds `user.X` or else `X`.
//!
//! `statfs` counts in 512-byte units: blocks are the filesystem's REFER plus an AVAIL
//! estimated once at open (`available_bytes`: no space map is read). Device numbers are
//! converted from each writer's stored form (`linux_rdev`).
//!
//! Invariants: the mount stays `ro`, `Mounted::apply_flags` included; no request panics
//! on pool bytes (the readers are fuzzed; time and device conversions here saturate);
//! reads are bounded by the kernel's request and the file size.
//!
//! Locking: none around the readers (`ZplFs` and its object set are read-only and
//! `Sync`; the object set's dnode cache has its own lock). The snapshot slots are opened
//! through a `OnceLock` each; open directory listings sit in one mutex-guarded map, held
//! only to insert, clone out or remove a listing.

mod ops;

use crate::ctldir::{CTL_ROOT, CTL_SNAPDIR};
use crate::kernel::{FileAttr, FileType, INodeNo};
use crate::{LiveOptions, MountError, MountOptions, Mounted, SnapDir};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zetta::dmu::openzfs::reader::OzfsError;
use zetta::spa::openzfs::pool::{Dataset, OpenZfsPool};
use zetta::zpl::openzfs::fs::{FileAttr as ZAttr, ZplFs};
use zetta::zpl::openzfs::znode::{
    ZTime, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFSOCK,
};

/// `.zfs/shares`: OpenZFS shows it beside `snapshot`; here it is always empty.
pub(crate) const CTL_SHARES: u64 = CTL_ROOT + 2;
const SLOT_SHIFT: u32 = 48;
const OBJECT_MASK: u64 = (1 << SLOT_SHIFT) - 1;
/// Snapshot slots shown (the inode's top 16 bits hold slot + 2).
pub const SLOTS_MAX: usize = (1 << 15) - 2;
/// The inode of a root directory, head or snapshot (object 1 is never a file).
const ROOT_INO: u64 = 1;

/// What OpenZFS's `zfs mount` says of an encrypted filesystem whose key is not loaded
/// (libzfs `zfs_mount_at`), after `cannot mount '<mountpoint>': `.
pub const KEY_NOT_LOADED: &str = "encryption key not loaded";

/// One snapshot of the mounted filesystem.
struct Snap {
    /// The name after `@`.
    short: String,
    dataset: Dataset,
    fs: OnceLock<Result<Arc<ZplFs>, String>>,
}

/// Sizes for `statfs`, fixed at open (nothing changes on a read-only pool).
#[derive(Clone, Copy, Debug)]
struct Space {
    referenced: u64,
    available: u64,
}

/// Where an inode number points.
pub(crate) enum Node {
    /// An object of a ZPL tree: the tree, the object, the slot (None: the head).
    Obj(Arc<ZplFs>, u64, Option<usize>),
    CtlRoot,
    SnapDir,
    Shares,
}

/// One directory entry as listed: inode, type, name.
pub(crate) type Dirent = (INodeNo, FileType, Vec<u8>);

/// The FUSE filesystem of one head filesystem of an imported OpenZFS pool, read-only.
pub struct OzfsFs {
    /// Kept so the devices stay open while the mount lives.
    _pool: Arc<OpenZfsPool>,
    name: String,
    head: Arc<ZplFs>,
    options: MountOptions,
    live: Arc<LiveOptions>,
    snaps: Vec<Snap>,
    space: Space,
    /// Open directory handles and their listings.
    dirs: Mutex<HashMap<u64, Arc<Vec<Dirent>>>>,
    next_fh: AtomicU64,
}

/// The encryption refusal as OpenZFS words it, for a filesystem to be mounted at
/// `mountpoint`.
pub fn key_not_loaded(mountpoint: &str) -> String {
    format!("cannot mount '{mountpoint}': {KEY_NOT_LOADED}")
}

impl OzfsFs {
    /// Opens head filesystem `dataset` (its name as `OpenZfsPool::datasets()` lists it)
    /// for a read-only mount. `options.readonly` is ignored: the mount is always `ro`.
    /// `options.fsname` empty shows the dataset's name in /proc/mounts.
    ///
    /// Refuses (`MountError::Dataset`): a name that is not a head filesystem of the
    /// pool (`cannot open 'DATASET': dataset does not exist`), an encrypted filesystem (`cannot mount 'DATASET': encryption key not
    /// loaded`, OpenZFS's words with the dataset in place of the mountpoint, which is not
    /// known here: `key_not_loaded` rewords it), a volume, and a filesystem whose master
    /// node does not read.
    pub fn open(
        pool: Arc<OpenZfsPool>,
        dataset: &str,
        mut options: MountOptions,
    ) -> Result<OzfsFs, MountError> {
        let cannot = |why: &str| MountError::Dataset(format!("cannot mount '{dataset}': {why}"));
        let all = pool
            .datasets()
            .map_err(|e| cannot(&format!("cannot read the dataset tree: {e}")))?;
        let head = all
            .iter()
            .find(|d| !d.is_snapshot && d.name == dataset)
            .ok_or_else(|| {
                MountError::Dataset(format!("cannot open '{dataset}': dataset does not exist"))
            })?;
        if head.is_encrypted() {
            return Err(MountError::Dataset(key_not_loaded(dataset)));
        }
        let os = pool
            .objset(head)
            .map_err(|e| cannot(&format!("cannot read the object set: {e}")))?;
        // DMU_OST_ZFS: a volume has no tree to mount.
        if os.phys.os_type != 2 {
            return Err(cannot("not a filesystem"));
        }
        // An object set the ZPL never laid out (ztest's root) has no master node.
        if os
            .dnode(zetta::zpl::openzfs::znode::MASTER_NODE_OBJ)
            .is_err()
        {
            return Err(cannot("filesystem has no master node"));
        }
        let fs = ZplFs::open(os).map_err(|e| cannot(&e.to_string()))?;
        let prefix = format!("{dataset}@");
        let snaps = all
            .iter()
            .filter(|d| d.is_snapshot)
            .filter_map(|d| {
                let short = d.name.strip_prefix(&prefix)?;
                Some(Snap {
                    short: short.to_string(),
                    dataset: d.clone(),
                    fs: OnceLock::new(),
                })
            })
            .take(SLOTS_MAX)
            .collect();
        let space = Space {
            referenced: head.phys.referenced_bytes,
            available: available_bytes(&pool, head),
        };
        if options.fsname.is_empty() {
            options.fsname = dataset.to_string();
        }
        options.readonly = true;
        let live = Arc::new(LiveOptions::default());
        live.set(&options);
        Ok(OzfsFs {
            _pool: pool,
            name: dataset.to_string(),
            head: Arc::new(fs),
            options,
            live,
            snaps,
            space,
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        })
    }

    /// The dataset's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Mounts at `mountpoint` (which must exist), always read-only, with the kernel flags
    /// the options ask for (exec, setuid, devices, atime), through the crate's one mount
    /// path (`ZplFs::mount`'s).
    pub fn mount(self, mountpoint: &Path) -> Result<Mounted, MountError> {
        let options = self.options.clone();
        let live = self.live.clone();
        crate::spawn_mount(
            self,
            &options,
            true,
            live,
            Default::default(),
            None,
            mountpoint,
        )
    }

    fn snapdir(&self) -> SnapDir {
        self.live.snapdir()
    }

    fn xattr(&self) -> bool {
        self.live.xattr.load(Ordering::Relaxed)
    }

    /// The tree of snapshot slot `slot`, opened the first time.
    fn snap_fs(&self, slot: usize) -> Result<Arc<ZplFs>, crate::kernel::Errno> {
        let snap = self.snaps.get(slot).ok_or(crate::kernel::Errno::ENOENT)?;
        let opened = snap.fs.get_or_init(|| {
            let os = self
                ._pool
                .objset(&snap.dataset)
                .map_err(|e| e.to_string())?;
            ZplFs::open(os).map(Arc::new).map_err(|e| e.to_string())
        });
        opened.clone().map_err(|why| {
            eprintln!("zetta-fuse: {}: I/O error: {why}", snap.dataset.name);
            crate::kernel::Errno::EIO
        })
    }

    pub(crate) fn node(&self, ino: INodeNo) -> Result<Node, crate::kernel::Errno> {
        Ok(match ino.0 {
            ROOT_INO => Node::Obj(self.head.clone(), self.head.root, None),
            CTL_ROOT => Node::CtlRoot,
            CTL_SNAPDIR => Node::SnapDir,
            CTL_SHARES => Node::Shares,
            n if n < CTL_ROOT => Node::Obj(self.head.clone(), n, None),
            n => {
                let slot = ((n >> SLOT_SHIFT) - 2) as usize;
                let fs = self.snap_fs(slot)?;
                let object = match n & OBJECT_MASK {
                    ROOT_INO => fs.root,
                    object => object,
                };
                Node::Obj(fs, object, Some(slot))
            }
        })
    }

    /// The inode number of `object` in the tree `fs` (snapshot `slot` or the head).
    pub(crate) fn ino(&self, fs: &ZplFs, object: u64, slot: Option<usize>) -> INodeNo {
        let local = if object == fs.root { ROOT_INO } else { object };
        match slot {
            None => INodeNo(local),
            Some(k) => INodeNo(((k as u64 + 2) << SLOT_SHIFT) | (local & OBJECT_MASK)),
        }
    }

    /// The kernel's attributes of `object` in `fs`.
    pub(crate) fn attr(
        &self,
        fs: &ZplFs,
        object: u64,
        slot: Option<usize>,
    ) -> Result<(FileAttr, u64), crate::kernel::Errno> {
        // Object numbers above 48 bits would collide with `.zfs`'s inodes.
        if object > OBJECT_MASK || object == 0 {
            return Err(crate::kernel::Errno::EIO);
        }
        let a = fs.attr(object).map_err(io_error)?;
        let dn = fs.os.dnode(object).map_err(io_error)?;
        let used = if dn.flags & zetta::dmu::openzfs::dnode::DNODE_FLAG_USED_BYTES != 0 {
            dn.used
        } else {
            dn.used.saturating_mul(512)
        };
        let block = u32::from(dn.datablkszsec).saturating_mul(512);
        Ok((
            FileAttr {
                ino: self.ino(fs, object, slot),
                size: a.size,
                blocks: used.div_ceil(512),
                atime: to_system(a.atime),
                mtime: to_system(a.mtime),
                ctime: to_system(a.ctime),
                crtime: to_system(a.crtime),
                kind: kind_of(a.mode),
                perm: (a.mode & 0o7777) as u16,
                nlink: a.links.min(u64::from(u32::MAX)) as u32,
                uid: a.uid.min(u64::from(u32::MAX)) as u32,
                gid: a.gid.min(u64::from(u32::MAX)) as u32,
                rdev: linux_rdev(&a),
                blksize: block.max(4096),
                flags: 0,
            },
            a.gen,
        ))
    }

    /// A synthetic `.zfs` directory's attributes: the head root's owner and times.
    pub(crate) fn ctl_attr(&self, ino: u64, nlink: u32) -> FileAttr {
        let mut attr = crate::ctldir::ctl_attr(ino, nlink);
        if let Ok(root) = self.head.attr(self.head.root) {
            attr.atime = to_system(root.atime);
            attr.mtime = to_system(root.mtime);
            attr.ctime = to_system(root.ctime);
            attr.crtime = to_system(root.crtime);
        }
        attr
    }

    /// Lists directory `ino` whole, as `readdir` serves it.
    pub(crate) fn list(&self, ino: INodeNo) -> Result<Vec<Dirent>, crate::kernel::Errno> {
        let dot = |me: u64, parent: u64| -> Vec<Dirent> {
            vec![
                (INodeNo(me), FileType::Directory, b".".to_vec()),
                (INodeNo(parent), FileType::Directory, b"..".to_vec()),
            ]
        };
        match self.node(ino)? {
            Node::CtlRoot => {
                let mut list = dot(CTL_ROOT, ROOT_INO);
                list.push((INodeNo(CTL_SHARES), FileType::Directory, b"shares".to_vec()));
                list.push((
                    INodeNo(CTL_SNAPDIR),
                    FileType::Directory,
                    b"snapshot".to_vec(),
                ));
                Ok(list)
            }
            Node::Shares => Ok(dot(CTL_SHARES, CTL_ROOT)),
            Node::SnapDir => {
                let mut list = dot(CTL_SNAPDIR, CTL_ROOT);
                for (slot, snap) in self.snaps.iter().enumerate() {
                    list.push((
                        INodeNo(((slot as u64 + 2) << SLOT_SHIFT) | ROOT_INO),
                        FileType::Directory,
                        snap.short.as_bytes().to_vec(),
                    ));
                }
                Ok(list)
            }
            Node::Obj(fs, dir, slot) => {
                let attr = fs.attr(dir).map_err(io_error)?;
                if attr.mode & S_IFMT != S_IFDIR {
                    return Err(crate::kernel::Errno::ENOTDIR);
                }
                let me = self.ino(&fs, dir, slot);
                let parent = if dir == fs.root {
                    match slot {
                        None => INodeNo(ROOT_INO),
                        Some(_) => INodeNo(CTL_SNAPDIR),
                    }
                } else {
                    self.ino(&fs, attr.parent & OBJECT_MASK, slot)
                };
                let mut list = dot(me.0, parent.0);
                for (name, object, dtype) in fs.readdir(dir).map_err(io_error)? {
                    let kind = match dtype_kind(dtype) {
                        Some(kind) => kind,
                        // ZPL 1 entries carry no type: the file says.
                        None => kind_of(fs.attr(object).map_err(io_error)?.mode),
                    };
                    list.push((self.ino(&fs, object, slot), kind, name));
                }
                if slot.is_none() && dir == fs.root && self.snapdir() == SnapDir::Visible {
                    list.push((INodeNo(CTL_ROOT), FileType::Directory, b".zfs".to_vec()));
                }
                Ok(list)
            }
        }
    }

    /// Keeps a listing under a new directory handle.
    pub(crate) fn keep_listing(&self, list: Vec<Dirent>) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.dirs.lock().insert(fh, Arc::new(list));
        fh
    }

    pub(crate) fn listing(&self, fh: u64) -> Option<Arc<Vec<Dirent>>> {
        self.dirs.lock().get(&fh).cloned()
    }

    pub(crate) fn drop_listing(&self, fh: u64) {
        self.dirs.lock().remove(&fh);
    }

    /// `statfs`: (blocks, available blocks, files, free files) in 512-byte units.
    pub(crate) fn space(&self) -> (u64, u64, u64, u64) {
        let Space {
            referenced,
            available,
        } = self.space;
        let blocks = referenced.saturating_add(available) / 512;
        // As OpenZFS's `zfs_statvfs`: every free 512 bytes could hold a dnode.
        let free_files = available / 512;
        let files = (referenced / 512).saturating_add(free_files);
        (blocks, available / 512, files, free_files)
    }
}

/// A reader error as the kernel gets it: logged (a pool should never fail a read), EIO.
pub(crate) fn io_error(e: OzfsError) -> crate::kernel::Errno {
    eprintln!("zetta-fuse: I/O error: {e}");
    crate::kernel::Errno::EIO
}

/// The space a filesystem could still take, estimated cheaply: the pool's allocatable
/// size (the top-level vdevs' `asize` in the MOS config, less OpenZFS's 1/32 slop) less
/// what the root DSL dir uses, capped by the filesystem's quota. Raidz parity is not
/// deflated out of `asize`, so on raidz this overstates AVAIL; nothing is ever written,
/// so it only shapes `df`.
fn available_bytes(pool: &OpenZfsPool, head: &Dataset) -> u64 {
    let size: u64 = pool
        .config
        .get_nvlist("vdev_tree")
        .and_then(|tree| tree.get_nvlist_array("children"))
        .map(|children| {
            children
                .iter()
                .filter_map(|c| c.get_u64("asize"))
                .fold(0u64, u64::saturating_add)
        })
        .unwrap_or(0);
    let used = pool
        .dir(pool.root_dir_obj)
        .map(|(dir, _)| dir.used_bytes)
        .unwrap_or(0);
    let mut avail = size.saturating_sub(size / 32).saturating_sub(used);
    if head.dir.quota != 0 {
        avail = avail.min(head.dir.quota.saturating_sub(head.dir.used_bytes));
    }
    avail
}

/// A stored time as the kernel takes it. Seconds are two's complement in a u64 (a time
/// before 1970 is negative); anything out of `SystemTime`'s range saturates to the epoch
/// rather than panicking.
pub(crate) fn to_system(t: ZTime) -> SystemTime {
    let sec = t.sec as i64;
    let nsec = Duration::from_nanos(t.nsec.min(999_999_999));
    let at = if sec >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(sec as u64))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(sec.unsigned_abs()))
    };
    at.and_then(|at| at.checked_add(nsec)).unwrap_or(UNIX_EPOCH)
}

pub(crate) fn kind_of(mode: u64) -> FileType {
    match mode & S_IFMT {
        S_IFDIR => FileType::Directory,
        S_IFLNK => FileType::Symlink,
        S_IFCHR => FileType::CharDevice,
        S_IFBLK => FileType::BlockDevice,
        S_IFIFO => FileType::NamedPipe,
        S_IFSOCK => FileType::Socket,
        // Regular files (S_IFREG), and the Solaris door and event port types Linux has
        // no use for.
        _ => FileType::RegularFile,
    }
}

/// A directory entry's `DT_*` type (None: not recorded, ZPL version 1).
fn dtype_kind(dtype: u8) -> Option<FileType> {
    Some(match dtype {
        1 => FileType::NamedPipe,
        2 => FileType::CharDevice,
        4 => FileType::Directory,
        6 => FileType::BlockDevice,
        8 => FileType::RegularFile,
        10 => FileType::Symlink,
        12 => FileType::Socket,
        _ => return None,
    })
}

/// A device file's number as FUSE carries it (the kernel's `new_encode_dev`, which is
/// glibc's `makedev` for 32-bit numbers). Writers differ in what they store:
///
/// - OpenZFS on Linux: the kernel's own `dev_t`, `major << 20 | minor` (`zfs_mknode`);
/// - illumos and its heirs: the 64-bit `major << 32 | minor` (`expldev`);
/// - zfs-fuse: the number FUSE gave it, already in FUSE's encoding.
///
/// A value above 32 bits is the 64-bit form; one from 2^20 up the kernel's (a device of
/// major 0, which no disk holds a node of, is the only kernel number below 2^20); below
/// 2^20 it is taken as FUSE's own encoding.
pub(crate) fn linux_rdev(a: &ZAttr) -> u32 {
    let kind = a.mode & S_IFMT;
    if kind != S_IFCHR && kind != S_IFBLK {
        return 0;
    }
    let (major, minor) = if a.rdev > u64::from(u32::MAX) {
        (a.rdev >> 32, a.rdev & 0xffff_ffff)
    } else if a.rdev >= 1 << 20 {
        (a.rdev >> 20, a.rdev & 0xf_ffff)
    } else {
        return a.rdev as u32;
    };
    let (major, minor) = (major & 0xfff, minor & 0xf_ffff);
    ((minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)) as u32
}
