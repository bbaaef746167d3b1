//! The kernel glue: a ZPL filesystem served through FUSE (OpenZFS's Linux `zpl_*.c`, the
//! layer between the VFS and `zfs_vnops.c`).
//!
//! Transport (issue 16): the handlers are `kernel::Filesystem`s, served either by fuser (the
//! default: a session and its request threads per mount) or by Zetta's own transport
//! (`kernel`: one worker pool for all of the daemon's mounts), by `ZETTA_FUSE_TRANSPORT`.
//!
//! One mount serves one head dataset of an imported pool. Every request takes the pool's
//! lock (shared for reads, exclusive for changes: see `ops`), runs one ZPL operation on the
//! dataset's object set in the open txg, and answers the kernel; the txg commits later (the daemon's timer, the dirty-data limit) or at once
//! when the caller asks for durability: `fsync`/`fdatasync` under `sync=standard`, every
//! write under `sync=always`, never under `sync=disabled`. A request that changes the
//! filesystem is translated into one operation of the ZPL's write policy
//! (`zetta::zpl::zfs_vnops`: read-only refusal, space admission, dirty accounting, intent
//! log commit) and its typed error mapped to an errno; the glue decides only what the
//! kernel's view needs (which objects it still holds, `.zfs` being read-only).
//!
//! Inode numbers are object numbers, except that the root directory is inode 1 (object 1
//! is the master node, never a file). The generation is the znode's (creation txg << 24 |
//! a counter), so a reused object number is a different file to the kernel — and a
//! number is reused only after the kernel has forgotten it (lookup counts). The pair is
//! also the file handle (FUSE export support): the kernel finds a forgotten node by looking
//! up "." in it, and a directory's path by "..", so handles work across cache drops and
//! remounts. Permission checks are the kernel's (`default_permissions`); the layer keeps
//! what only the file system can know:
//! setgid inheritance, the delete queue (an unlinked file lives until its last close),
//! and the properties that shape a mount (readonly, atime/relatime, exec, setuid,
//! devices, xattr, sync).
//!
//! Kernel caching (issue 16). The kernel keeps what the mount told it until a TTL runs out
//! or the mount says otherwise; nothing may change behind it that it would then serve
//! stale. Invariants: (1) names change only through this mount (rollback and receive
//! remount: `daemon/mounts.rs`), so entries live an hour and absent names are cached too,
//! except `.zfs` (snapdir changes it in place); (2) attributes live an hour too, and the
//! changes Zetta makes behind the kernel are invalidated: `st_blocks` of a written file, a
//! directory whose entries changed, a file whose xattrs changed, when the txg of the
//! change commits (after `zpool sync`, `Mounted::invalidate_written`; after any other
//! commit, the daemon's invalidation thread, `Mounted::invalidate_committed`; the kernel
//! drops an access time itself after each READ) — attributes only, never pages, so no page
//! lock is taken from a notification. An invalidation does not reach a `statx` that asks
//! for no field (`stat -c %o`: the kernel answers `st_blksize` from its inode), so
//! `st_blksize` must never change while the kernel holds the file: a file whose one block
//! can still grow answers the record size it grows to (`ops`'s `ATTR_TTL`); (3) under the writeback cache (opt-in: `writeback_wanted`;
//! never on a mount made under sync=always) the kernel owns regular files' size, mtime and ctime; every durability
//! point — fsync, fdatasync, O_SYNC, msync, close, unmount — sends the dirty pages before
//! the FSYNC, FLUSH or DESTROY that commits them, and the daemon writes back (syncfs)
//! before a snapshot or a commit it is asked for. Notifications are sent from the daemon's
//! command threads, never from a request handler (the kernel may hold a lock the
//! notification waits on while it waits for that handler's reply).

mod ctldir;
pub mod kernel;
pub mod openzfs;
mod ops;
#[cfg(test)]
mod tests;

use parking_lot::RwLock;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use zetta::spa::Spa;
use zetta::zpl::{Zfsvfs, ZplError};

/// `sync` property values (the ZPL's write policy acts on them).
pub use zetta::zpl::zfs_vnops::SyncMode;

/// `snapdir` property values: whether `.zfs` exists, and whether the root lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapDir {
    Hidden,
    Visible,
    Disabled,
}

/// What the dataset's properties ask of its mount.
#[derive(Clone, Debug)]
pub struct MountOptions {
    pub readonly: bool,
    pub atime: bool,
    pub relatime: bool,
    pub exec: bool,
    pub setuid: bool,
    pub devices: bool,
    pub xattr: bool,
    pub sync: SyncMode,
    pub snapdir: SnapDir,
    /// `fsname` shown in /proc/mounts (the dataset name).
    pub fsname: String,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            readonly: false,
            atime: true,
            relatime: true,
            exec: true,
            setuid: true,
            devices: true,
            xattr: true,
            sync: SyncMode::Standard,
            snapdir: SnapDir::Hidden,
            fsname: String::new(),
        }
    }
}

/// Request threads per mount. Reads (`.zfs` included) share their pool's lock, so readers
/// of one mount run together as far as there are threads; each thread also costs a stack,
/// a FUSE buffer (touched only as far as requests fill it) and a daemon-wide thread count
/// (128 pools with 500 mounted datasets had 3,140 threads at 4 per mount plus fuser's session
/// thread). Measured (docs/PERFORMANCE.md, "FUSE request threads"; bench/workers_ab.sh): 4
/// against 2 gave 16k random reads by 4 readers 1.20x and 4 parallel `ls -lR` 0.79x the
/// time; 8 gave 1.32x and 0.78x at twice the threads, so 4.
pub const WORKER_THREADS: usize = 4;

/// Request threads of a new mount: `WORKER_THREADS`, or `ZETTA_FUSE_THREADS` (1 to 64) in
/// the daemon's environment, for measuring (bench/workers_ab.sh).
fn worker_threads() -> usize {
    std::env::var("ZETTA_FUSE_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
        .unwrap_or(WORKER_THREADS)
}

/// Whether new mounts ask for the kernel's writeback cache: `ZETTA_FUSE_WRITEBACK=1` in the
/// daemon's environment. Off by default: the kernel keeps written pages to itself until
/// writeback, close or fsync, and `st_blocks` (the server's figure) does not count them, so
/// a file being rewritten shows no blocks (xfstests generic/615; `trust_space`'s
/// `st_blocks_counts_data_not_yet_committed`) — which OpenZFS, counting dirty data, never
/// does. Everything else the writeback cache needs is in place (docs/PERFORMANCE.md).
fn writeback_wanted() -> bool {
    std::env::var_os("ZETTA_FUSE_WRITEBACK").is_some_and(|v| v == "1")
}

/// The settings a running mount changes in place (`zfs set readonly|atime|relatime|
/// sync|xattr|snapdir`): the kernel's per-mount flags say what the VFS refuses, these
/// what the server does.
#[derive(Debug, Default)]
struct LiveOptions {
    readonly: AtomicBool,
    atime: AtomicBool,
    relatime: AtomicBool,
    xattr: AtomicBool,
    sync: AtomicU8,
    snapdir: AtomicU8,
}

impl LiveOptions {
    fn set(&self, o: &MountOptions) {
        self.readonly.store(o.readonly, Ordering::Relaxed);
        self.atime.store(o.atime, Ordering::Relaxed);
        self.relatime.store(o.relatime, Ordering::Relaxed);
        self.xattr.store(o.xattr, Ordering::Relaxed);
        let sync = match o.sync {
            SyncMode::Standard => 0,
            SyncMode::Always => 1,
            SyncMode::Disabled => 2,
        };
        self.sync.store(sync, Ordering::Relaxed);
        let snapdir = match o.snapdir {
            SnapDir::Hidden => 0,
            SnapDir::Visible => 1,
            SnapDir::Disabled => 2,
        };
        self.snapdir.store(snapdir, Ordering::Relaxed);
    }

    fn snapdir(&self) -> SnapDir {
        match self.snapdir.load(Ordering::Relaxed) {
            1 => SnapDir::Visible,
            2 => SnapDir::Disabled,
            _ => SnapDir::Hidden,
        }
    }
}

/// Inode numbers whose attributes the kernel holds but Zetta will change or has changed
/// behind it, each with the txg whose commit settles them: a write's `st_blocks` moves when
/// the txg it joined commits (the kernel drops an access time itself after each READ).
type Written = Arc<parking_lot::Mutex<std::collections::HashMap<u64, u64>>>;

/// Records that `ino`'s attributes settle when `txg` commits.
pub(crate) fn note_written(written: &Written, ino: u64, txg: u64) {
    let mut written = written.lock();
    let settles = written.entry(ino).or_insert(txg);
    *settles = (*settles).max(txg);
}

/// Which transport serves new mounts: fuser (the default, a session and its request
/// threads per mount) or Zetta's own (`kernel`: one worker pool for all of the daemon's
/// mounts), chosen by `ZETTA_FUSE_TRANSPORT=fuser|zetta` in the daemon's environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Fuser,
    Zetta,
}

/// The transport new mounts use (see `Transport`). The own transport mounts with
/// `mount(2)`, which only root may call: a daemon run by another user keeps fuser (whose
/// `fusermount3` is setuid).
pub fn transport() -> Transport {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    match std::env::var("ZETTA_FUSE_TRANSPORT").as_deref() {
        Ok("zetta") if root => Transport::Zetta,
        _ => Transport::Fuser,
    }
}

/// A mount's session on either transport.
enum Session {
    Fuser(fuser::BackgroundSession),
    Zetta(kernel::MountHandle),
}

/// A running mount; dropping it unmounts.
pub struct Mounted {
    session: Session,
    live: Arc<LiveOptions>,
    written: Written,
    /// The pool whose commits settle `written` (none for a read-only OpenZFS mount).
    pool: Option<std::sync::Weak<RwLock<Spa>>>,
    /// A mount that is read-only whatever the options say (an imported OpenZFS pool).
    always_readonly: bool,
}

impl Mounted {
    /// Tells the kernel to drop its attributes of every file written since the last call
    /// (after a txg commit: `zpool sync`), so the next `stat` asks again and shows the
    /// committed `st_blocks` rather than the estimate of the open txg. Attributes only:
    /// the pages stay cached.
    pub fn invalidate_written(&self) {
        let inos: Vec<u64> = self.written.lock().drain().map(|(ino, _)| ino).collect();
        self.invalidate(inos);
    }

    /// Tells the kernel to drop its attributes of the files written in a txg that has
    /// committed since (their `st_blocks` is the committed one now). Called by the daemon's
    /// invalidation thread, never from a request handler; takes the pool's lock only when
    /// something waits for a commit, and only if it is free (else the next round).
    pub fn invalidate_committed(&self) {
        if self.written.lock().is_empty() {
            return;
        }
        let Some(synced) = self
            .pool
            .as_ref()
            .and_then(std::sync::Weak::upgrade)
            .and_then(|pool| pool.try_read().map(|spa| spa.last_synced_txg().0))
        else {
            return;
        };
        let settled: Vec<u64> = {
            let mut written = self.written.lock();
            let settled: Vec<u64> = written
                .iter()
                .filter(|(_, &txg)| txg <= synced)
                .map(|(&ino, _)| ino)
                .collect();
            for ino in &settled {
                written.remove(ino);
            }
            settled
        };
        self.invalidate(settled);
    }

    /// Drops the kernel's attributes (never pages: no page lock is taken) of `inos`.
    fn invalidate(&self, inos: Vec<u64>) {
        if inos.is_empty() {
            return;
        }
        // ENOENT: the kernel has forgotten it (nothing cached to drop).
        match &self.session {
            Session::Fuser(session) => {
                let notifier = session.notifier();
                for ino in inos {
                    let _ = notifier.inval_inode(fuser::INodeNo(ino), -1, 0);
                }
            }
            Session::Zetta(handle) => {
                for ino in inos {
                    let _ = handle.inval_inode(ino, -1, 0);
                }
            }
        }
    }

    /// Applies the options (readonly, atime, relatime, exec, setuid, devices, xattr, sync,
    /// snapdir) to the running mount at `mountpoint` without unmounting it: the kernel's
    /// per-mount flags by a bind remount (`mount -o remount,bind,nosuid …`), the server's
    /// own settings in place. A busy mount (open files, a cwd) keeps running.
    pub fn apply_flags(&self, mountpoint: &Path, o: &MountOptions) -> std::io::Result<()> {
        let forced;
        let o = if self.always_readonly && !o.readonly {
            forced = MountOptions {
                readonly: true,
                ..o.clone()
            };
            &forced
        } else {
            o
        };
        let mut flags = libc::MS_REMOUNT | libc::MS_BIND;
        if o.readonly {
            flags |= libc::MS_RDONLY;
        }
        if !o.exec {
            flags |= libc::MS_NOEXEC;
        }
        if !o.setuid {
            flags |= libc::MS_NOSUID;
        }
        if !o.devices {
            flags |= libc::MS_NODEV;
        }
        flags |= if !o.atime {
            libc::MS_NOATIME
        } else if o.relatime {
            libc::MS_RELATIME
        } else {
            libc::MS_STRICTATIME
        };
        let c_path = std::ffi::CString::new(mountpoint.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // Read-only first on the server when turning it on (the kernel refuses writes
        // only after the remount), last when turning it off.
        if o.readonly {
            self.live.set(o);
        }
        // SAFETY: valid NUL-terminated strings; a remount keeps no pointer.
        let rc = unsafe {
            libc::mount(
                c"none".as_ptr(),
                c_path.as_ptr(),
                std::ptr::null(),
                flags,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.live.set(o);
        Ok(())
    }
}

/// Readahead window of a mount, in KiB. The kernel starts a FUSE mount's window at its
/// default (128 KiB) and `init` may only shrink it; `widen_readahead` sets this one after
/// the mount (one window is one request of `max_pages` 256).
pub const READAHEAD_KB: u32 = 1024;

/// Widens the readahead window of the mount whose device is `dev` ("0:52", as
/// /proc/self/mountinfo lists it) to `READAHEAD_KB`, through its backing device's sysfs
/// knob. Best effort: a kernel without the knob keeps its default.
pub fn widen_readahead(dev: &str) {
    let valid = dev
        .split_once(':')
        .is_some_and(|(major, minor)| major.parse::<u32>().is_ok() && minor.parse::<u32>().is_ok());
    if valid {
        let knob = format!("/sys/class/bdi/{dev}/read_ahead_kb");
        let _ = std::fs::write(knob, READAHEAD_KB.to_string());
    }
}

/// Writes back what the kernel holds dirty for the mount at `mountpoint` (its writeback
/// cache) and waits for it: syncfs(2). Without a mount there (or a dead one) nothing
/// happens.
pub fn write_back(mountpoint: &Path) {
    let Ok(dir) = std::fs::File::open(mountpoint) else {
        return;
    };
    // SAFETY: a valid open descriptor for the call's duration.
    let _ = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&dir)) };
}

/// Whether this process may ask for `allow_other` (other users reach the mount): root
/// may, others only when /etc/fuse.conf says `user_allow_other` (fusermount3 refuses
/// the mount otherwise).
pub fn may_allow_other() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    std::fs::read_to_string("/etc/fuse.conf").is_ok_and(|conf| {
        conf.lines()
            .any(|line| line.split('#').next().unwrap_or("").trim() == "user_allow_other")
    })
}

#[derive(Clone, Copy, Debug, Default)]
struct Refs {
    open: u32,
    lookups: u64,
}

/// The FUSE filesystem of one dataset.
pub struct ZplFs {
    /// Weak: a mount never keeps a pool from being exported (requests after that fail
    /// with EIO until the unmount completes).
    pool: std::sync::Weak<RwLock<Spa>>,
    /// The pool's txg state for the write throttle (`zetta::dmu::tx`), kept so that a
    /// change is throttled without taking the pool lock first.
    tx_shared: Arc<zetta::spa::txg::TxShared>,
    dataset: u64,
    vfs: Zfsvfs,
    options: MountOptions,
    /// readonly/atime/relatime as they are now (`options` has them as mounted).
    live: Arc<LiveOptions>,
    /// The kernel's references per object (open handles, lookups not yet forgotten): an
    /// unlinked object is reclaimed when both drop to zero.
    refs: parking_lot::Mutex<std::collections::HashMap<u64, Refs>>,
    /// Objects unlinked while the kernel knew them, by when they were unlinked or, if open
    /// then, closed for the last time: their space comes back at the FORGET that follows.
    /// Never locked while `refs` is held.
    orphans: parking_lot::Mutex<std::collections::HashMap<u64, std::time::Instant>>,
    /// Signalled when an entry leaves `orphans` (see `ops::wait_for_orphans`).
    orphans_gone: parking_lot::Condvar,
    /// Snapshots shown under `.zfs/snapshot`, by slot.
    slots: parking_lot::Mutex<ctldir::Slots>,
    /// Snapshot object sets held open for `.zfs` reads (bounded: see `ctldir`).
    snaps: parking_lot::Mutex<ctldir::SnapCache>,
    /// Files written since the last `Mounted::invalidate_written` (shared with it).
    written: Written,
    /// Ask for the writeback cache at `init` (`writeback_wanted` when opened).
    want_writeback: bool,
    /// The kernel runs this mount with its writeback cache (decided at `init`).
    writeback: bool,
}

#[derive(Debug)]
pub enum MountError {
    Dataset(String),
    Io(std::io::Error),
}

impl std::fmt::Display for MountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MountError::Dataset(why) => write!(f, "{why}"),
            MountError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl ZplFs {
    /// Opens the ZPL of dataset `name` (laying it out if missing) and drains its delete
    /// queue: nothing can hold those files open at mount time.
    pub fn open(
        pool: Arc<RwLock<Spa>>,
        name: &str,
        options: MountOptions,
    ) -> Result<ZplFs, MountError> {
        let (dataset, vfs, tx_shared) = {
            let mut spa = pool.write();
            let dataset = spa
                .lookup_dataset(name)
                .map_err(|e| MountError::Dataset(e.to_string()))?
                .ok_or_else(|| MountError::Dataset(format!("dataset '{name}' does not exist")))?;
            let vfs = spa
                .with_zpl(name, |vfs, os, ctx| {
                    if !options.readonly {
                        vfs.drain_delete_queue(os, ctx)?;
                    }
                    Ok(*vfs)
                })
                .map_err(|e: ZplError| MountError::Dataset(e.to_string()))?;
            (dataset, vfs, spa.tx_shared())
        };
        let live = Arc::new(LiveOptions::default());
        live.set(&options);
        Ok(ZplFs {
            pool: Arc::downgrade(&pool),
            tx_shared,
            dataset,
            vfs,
            options,
            live,
            refs: parking_lot::Mutex::new(Default::default()),
            orphans: parking_lot::Mutex::new(Default::default()),
            orphans_gone: parking_lot::Condvar::new(),
            slots: parking_lot::Mutex::new(Default::default()),
            snaps: parking_lot::Mutex::new(Default::default()),
            written: Default::default(),
            want_writeback: writeback_wanted(),
            writeback: false,
        })
    }

    fn readonly(&self) -> bool {
        self.live.readonly.load(Ordering::Relaxed)
    }

    fn atime(&self) -> bool {
        self.live.atime.load(Ordering::Relaxed)
    }

    fn relatime(&self) -> bool {
        self.live.relatime.load(Ordering::Relaxed)
    }

    fn xattr(&self) -> bool {
        self.live.xattr.load(Ordering::Relaxed)
    }

    fn sync(&self) -> SyncMode {
        match self.live.sync.load(Ordering::Relaxed) {
            1 => SyncMode::Always,
            2 => SyncMode::Disabled,
            _ => SyncMode::Standard,
        }
    }

    fn snapdir(&self) -> SnapDir {
        self.live.snapdir()
    }

    /// Mounts at `mountpoint` (which must exist) with worker threads and kernel caching.
    /// `allow_other` (and with it fusermount3's auto-unmount, which needs it) only where
    /// `may_allow_other` says so: without it only this user reaches the mount.
    pub fn mount(self, mountpoint: &Path) -> Result<Mounted, MountError> {
        let options = self.options.clone();
        let live = self.live.clone();
        let written = self.written.clone();
        let pool = Some(self.pool.clone());
        spawn_mount(self, &options, false, live, written, pool, mountpoint)
    }
}

/// Mounts `fs` with the kernel flags `o` asks for (`ro` too when `always_readonly`), worker
/// threads and kernel caching, on the transport `transport()` names: the one mount path
/// of every filesystem type this crate serves.
fn spawn_mount<FS: kernel::Filesystem>(
    fs: FS,
    o: &MountOptions,
    always_readonly: bool,
    live: Arc<LiveOptions>,
    written: Written,
    pool: Option<std::sync::Weak<RwLock<Spa>>>,
    mountpoint: &Path,
) -> Result<Mounted, MountError> {
    use fuser::MountOption as O;
    let allow_other = may_allow_other();
    if transport() == Transport::Zetta {
        let mut flags: libc::c_ulong = 0;
        if o.readonly || always_readonly {
            flags |= libc::MS_RDONLY;
        }
        if !o.exec {
            flags |= libc::MS_NOEXEC;
        }
        if !o.setuid {
            flags |= libc::MS_NOSUID;
        }
        if !o.devices {
            flags |= libc::MS_NODEV;
        }
        if !o.atime {
            flags |= libc::MS_NOATIME;
        }
        let workers = kernel::Pool::get().map_err(MountError::Io)?;
        let handle = workers
            .mount(fs, mountpoint, &o.fsname, flags, allow_other)
            .map_err(MountError::Io)?;
        return Ok(Mounted {
            session: Session::Zetta(handle),
            live,
            written,
            pool,
            always_readonly,
        });
    }
    let mut options = vec![
        O::FSName(o.fsname.clone()),
        O::Subtype("zetta".to_string()),
        O::DefaultPermissions,
        if o.readonly || always_readonly {
            O::RO
        } else {
            O::RW
        },
        if o.exec { O::Exec } else { O::NoExec },
        if o.setuid { O::Suid } else { O::NoSuid },
        if o.devices { O::Dev } else { O::NoDev },
    ];
    if !o.atime {
        options.push(O::NoAtime);
    }
    if allow_other {
        options.push(O::AutoUnmount);
    }
    let mut config = fuser::Config::default();
    config.mount_options = options;
    config.acl = if allow_other {
        fuser::SessionACL::All
    } else {
        fuser::SessionACL::Owner
    };
    config.n_threads = Some(worker_threads());
    config.clone_fd = true;
    let session = fuser::spawn_mount(kernel::fuser_compat::FuserFs(fs), mountpoint, &config)
        .map_err(MountError::Io)?;
    Ok(Mounted {
        session: Session::Fuser(session),
        live,
        written,
        pool,
        always_readonly,
    })
}
