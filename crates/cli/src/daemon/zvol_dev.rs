//! `/dev/zvol/POOL/VOL`: every volume of the daemon's pools as a block device, the way
//! OpenZFS's udev rules present its `zd` devices, built from what this kernel has without a
//! module: a loop device bound to a file the daemon serves over FUSE.
//!
//! Theory. The daemon mounts one small FUSE filesystem, the volume files, at
//! `<run dir>/zvol`: a directory per pool and per intermediate dataset, a regular file per
//! volume whose size is `volsize`. Its files are opened with `FOPEN_DIRECT_IO`, so the
//! kernel keeps no second page cache of a volume under the block device's own: a read or
//! write of the file is one request here, served by `Spa::volume_read`/`volume_write` (the
//! pool's zio pipeline, as the NBD server's), and an `fsync` of the file — which the loop
//! driver issues for a flush of the block device, so for `fsync(2)` and `O_DSYNC` on
//! `/dev/zvol/...` and for a mounted filesystem's journal commits — commits the volume's
//! intent log (`Spa::volume_commit`), as OpenZFS's zvol flush does. The volume's `sync`
//! property applies as on the NBD exports (`always`: every write commits; `disabled`: flushes
//! return at once). Each volume file gets a loop device (`losetup --find --show`), and
//! `<zvol dir>/POOL/VOL` (default `/dev/zvol`, `ZETTA_ZVOL_DIR` to move it) is a symlink to
//! it. `volmode=none` gets no device, as on OpenZFS.
//!
//! `reconcile` (after every command that may add, remove, rename or resize a volume, with the
//! NBD exports) makes the devices match the volumes: new ones attached, vanished ones
//! (destroy, rename, export) detached and unlinked, a resized one's loop told its new
//! capacity (`losetup -c`). A daemon killed before it could detach leaves loop devices bound
//! to its dead FUSE mount: the next daemon detaches every loop whose backing file lies under
//! its `<run dir>/zvol`, removes their links, and clears the dead mount before mounting.
//! `stop` (daemon shutdown) detaches every loop before the FUSE mount goes.
//!
//! Busy (OpenZFS's `zv_open_count`): `prepare`, before `zpool export`, `zpool destroy` and
//! `zfs destroy`, refuses when a volume they would take away has its block device in use —
//! mounted, held by another block layer (`holders/`), or open in any process — with
//! libzfs's words ("cannot export 'tank': pool is busy", "cannot destroy 'tank/vm': dataset
//! is busy"), and changes nothing. `-f` does not override it, as on OpenZFS, whose forced
//! export still finds the pool referenced by the open zvol (EBUSY from `spa_export_common`).
//! A use is confirmed over a few checks (`BUSY_CHECKS`), so a probe that opens the
//! device for a moment (udev's blkid after a write) does not make it busy. NBD connections
//! do not count: a client is not told, as before, and gets EIO on its next request.
//!
//! Locking: the volume table (`TABLE`) is a mutex the FUSE threads take briefly to find a
//! volume by inode and never hold across pool work; a request then takes the pool's lock for
//! its one volume operation, as an NBD request does. `reconcile` takes `STATE` (the mount
//! and the loop devices), then `TABLE`, never under a pool lock. Without FUSE mounts
//! (`ZETTA_MOUNT=0`) there are no devices.

use super::registry::PoolRef;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
    WriteFlags,
};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::{Duration, SystemTime};
use zetta::spa::Spa;

/// `sync` as the NBD server reads it.
use super::nbd::{SYNC_ALWAYS, SYNC_DISABLED};

/// No kernel caching of entries or attributes: a volume's size and existence change by
/// commands the kernel does not see, and the loop driver reads the size when told to
/// (`losetup -c`); lookups are rare (at attach).
const TTL: Duration = Duration::ZERO;
const ROOT: u64 = 1;

/// What `reconcile` is told about one volume.
pub struct VolumeView {
    pub name: String,
    pub size_bytes: u64,
    pub block_size_bytes: u64,
    pub pool: PoolRef,
    pub sync: u8,
    /// `volmode=none`: no device.
    pub hidden: bool,
}

/// A path of the volume file tree: a directory or a volume.
enum Node {
    Dir,
    Volume {
        size_bytes: u64,
        block_size_bytes: u64,
        pool: Weak<parking_lot::RwLock<Spa>>,
        sync: u8,
    },
}

/// The volume files by path (`tank/vm/disk0`; "" is the root) and their inode numbers,
/// given once per path for the daemon's life.
#[derive(Default)]
struct Table {
    nodes: BTreeMap<String, Node>,
    inodes: HashMap<String, u64>,
    paths: HashMap<u64, String>,
    next: u64,
}

impl Table {
    fn inode(&mut self, path: &str) -> u64 {
        if path.is_empty() {
            return ROOT;
        }
        if let Some(&ino) = self.inodes.get(path) {
            return ino;
        }
        self.next = self.next.max(ROOT) + 1;
        self.inodes.insert(path.to_string(), self.next);
        self.paths.insert(self.next, path.to_string());
        self.next
    }
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with_table<T>(work: impl FnOnce(&mut Table) -> T) -> T {
    let mut table = TABLE.lock();
    work(table.get_or_insert_with(Table::default))
}

/// The mount and the devices of this daemon.
#[derive(Default)]
struct State {
    session: Option<fuser::BackgroundSession>,
    /// Volume name -> (loop device, size it was attached with).
    loops: HashMap<String, (PathBuf, u64)>,
    cleared: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Where the volume files are mounted.
fn files_dir() -> PathBuf {
    super::run_dir().join("zvol")
}

/// Where the device links go.
pub fn zvol_dir() -> PathBuf {
    std::env::var_os("ZETTA_ZVOL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/dev/zvol"))
}

fn losetup(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("losetup")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Loop devices whose backing file lies under `dir` (a killed daemon's): `/dev/loopN`.
fn loops_backed_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let prefix = dir.to_string_lossy().to_string();
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let backing = backing.trim().trim_end_matches(" (deleted)");
            (name.starts_with("loop") && backing.starts_with(&format!("{prefix}/")))
                .then(|| PathBuf::from("/dev").join(name))
        })
        .collect()
}

/// Removes the links under `dir` that point at one of `devices`, and directories left empty.
fn unlink_devices(dir: &Path, devices: &[PathBuf]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match std::fs::read_link(&path) {
            Ok(target) if devices.contains(&target) => {
                let _ = std::fs::remove_file(&path);
            }
            Ok(_) => {}
            Err(_) if path.is_dir() => {
                unlink_devices(&path, devices);
                let _ = std::fs::remove_dir(&path);
            }
            Err(_) => {}
        }
    }
}

/// A killed daemon's leftovers: its loop devices, their links, its dead mount.
fn clear_leftovers() {
    let dir = files_dir();
    let stale = loops_backed_under(&dir);
    for device in &stale {
        let _ = losetup(&["-d", &device.to_string_lossy()]);
    }
    unlink_devices(&zvol_dir(), &stale);
    if let Ok(c) = std::ffi::CString::new(dir.to_string_lossy().as_bytes()) {
        // A dead FUSE mount left there (ENOTCONN on every access): detach it lazily.
        if std::fs::metadata(&dir).is_err() {
            // SAFETY: a valid NUL-terminated path; umount2 does not keep the pointer.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

fn link_path(name: &str) -> PathBuf {
    zvol_dir().join(name)
}

fn detach(name: &str, device: &Path) {
    let _ = losetup(&["-d", &device.to_string_lossy()]);
    let link = link_path(name);
    if std::fs::read_link(&link).is_ok_and(|t| t == device) {
        let _ = std::fs::remove_file(&link);
    }
    // Parents left empty go (`tank/vm` after its last volume).
    let mut parent = link.parent().map(Path::to_path_buf);
    let root = zvol_dir();
    while let Some(dir) = parent {
        if dir == root || std::fs::remove_dir(&dir).is_err() {
            break;
        }
        parent = dir.parent().map(Path::to_path_buf);
    }
}

fn attach(name: &str) -> Option<PathBuf> {
    let file = files_dir().join(name);
    let device = PathBuf::from(losetup(&["--find", "--show", &file.to_string_lossy()])?);
    let link = link_path(name);
    if let Some(parent) = link.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::remove_file(&link);
    if std::os::unix::fs::symlink(&device, &link).is_err() {
        let _ = losetup(&["-d", &device.to_string_lossy()]);
        return None;
    }
    Some(device)
}

/// Makes the volume files and devices match `volumes` (see the module header).
pub fn reconcile(volumes: Vec<VolumeView>) {
    if !super::mounts::enabled() {
        return;
    }
    let mut state = STATE.lock();
    let state = state.get_or_insert_with(State::default);
    if !state.cleared {
        state.cleared = true;
        clear_leftovers();
    }
    let shown: Vec<VolumeView> = volumes.into_iter().filter(|v| !v.hidden).collect();
    with_table(|table| {
        table.nodes.clear();
        table.nodes.insert(String::new(), Node::Dir);
        for v in &shown {
            let mut at = 0;
            while let Some(slash) = v.name[at..].find('/') {
                table
                    .nodes
                    .insert(v.name[..at + slash].to_string(), Node::Dir);
                at += slash + 1;
            }
            table.nodes.insert(
                v.name.clone(),
                Node::Volume {
                    size_bytes: v.size_bytes,
                    block_size_bytes: v.block_size_bytes,
                    pool: std::sync::Arc::downgrade(&v.pool),
                    sync: v.sync,
                },
            );
        }
        // A path keeps its inode for the daemon's life: a volume that comes back (volmode
        // set back, a rename undone) is the same file to a kernel that still caches it.
        let live: Vec<String> = table.nodes.keys().cloned().collect();
        for path in live {
            table.inode(&path);
        }
    });
    let gone: Vec<String> = state
        .loops
        .keys()
        .filter(|name| !shown.iter().any(|v| &v.name == *name))
        .cloned()
        .collect();
    for name in gone {
        if let Some((device, _)) = state.loops.remove(&name) {
            detach(&name, &device);
        }
    }
    if shown.is_empty() {
        return;
    }
    if state.session.is_none() {
        let dir = files_dir();
        let _ = std::fs::create_dir_all(&dir);
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("zetta-zvol".to_string()),
            fuser::MountOption::Subtype("zetta".to_string()),
            fuser::MountOption::RW,
            fuser::MountOption::NoExec,
            fuser::MountOption::NoSuid,
        ];
        config.acl = fuser::SessionACL::Owner;
        config.n_threads = Some(2);
        match fuser::spawn_mount(VolumeFiles, &dir, &config) {
            Ok(session) => state.session = Some(session),
            Err(e) => {
                eprintln!("zetta: volume devices: cannot mount {}: {e}", dir.display());
                return;
            }
        }
    }
    for v in &shown {
        match state.loops.get(&v.name) {
            Some((device, size)) if *size != v.size_bytes => {
                let _ = losetup(&["-c", &device.to_string_lossy()]);
                let device = device.clone();
                state.loops.insert(v.name.clone(), (device, v.size_bytes));
            }
            Some(_) => {}
            None => {
                if let Some(device) = attach(&v.name) {
                    state.loops.insert(v.name.clone(), (device, v.size_bytes));
                }
            }
        }
    }
}

/// How many times, `BUSY_WAIT` apart, a device must be found in use to be busy.
const BUSY_CHECKS: u32 = 5;
const BUSY_WAIT: Duration = Duration::from_millis(40);

/// Whether block device `device` (`/dev/loopN`) is in use now: an exclusive open fails
/// (a mount, or another exclusive holder), a block layer is stacked on it, or a process
/// holds it open (its link in `/proc/PID/fd`, as `fuser` finds it).
fn device_in_use_now(device: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let exclusive = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(device);
    if exclusive.is_err_and(|e| e.raw_os_error() == Some(libc::EBUSY)) {
        return true;
    }
    let name = device
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let holders = Path::new("/sys/block").join(&name).join("holders");
    if std::fs::read_dir(holders).is_ok_and(|mut entries| entries.next().is_some()) {
        return true;
    }
    let own = std::process::id().to_string();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|process| {
        let pid = process.file_name();
        if pid.to_string_lossy() == own
            || !pid.to_string_lossy().bytes().all(|b| b.is_ascii_digit())
        {
            return false;
        }
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            return false;
        };
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == device))
    })
}

/// Whether `device` stays in use over `BUSY_CHECKS` checks.
fn device_in_use(device: &Path) -> bool {
    for check in 0..BUSY_CHECKS {
        if !device_in_use_now(device) {
            return false;
        }
        if check + 1 < BUSY_CHECKS {
            std::thread::sleep(BUSY_WAIT);
        }
    }
    true
}

/// The first volume named `name` or below it (`zfs destroy -r`, a whole pool) whose device
/// is in use.
fn busy_volume(name: &str, below: bool) -> Option<String> {
    let devices: Vec<(String, PathBuf)> = {
        let state = STATE.lock();
        let state = state.as_ref()?;
        let prefix = format!("{name}/");
        let mut devices: Vec<(String, PathBuf)> = state
            .loops
            .iter()
            .filter(|(volume, _)| *volume == name || (below && volume.starts_with(&prefix)))
            .map(|(volume, (device, _))| (volume.clone(), device.clone()))
            .collect();
        devices.sort();
        devices
    };
    devices
        .into_iter()
        .find(|(_, device)| device_in_use(device))
        .map(|(volume, _)| volume)
}

/// Before a command that takes volumes away (`zpool export`/`destroy`, `zfs destroy`):
/// refuses it when one of their devices is in use (module header). `args` is the whole
/// command line.
pub fn prepare(args: &[String]) -> Result<(), String> {
    if args.len() < 2 {
        return Ok(());
    }
    let flags: String = args[2..]
        .iter()
        .filter(|a| a.starts_with('-') && !a.starts_with("--"))
        .flat_map(|a| a.chars().skip(1))
        .collect();
    let operands: Vec<&String> = args[2..].iter().filter(|a| !a.starts_with('-')).collect();
    match (args[0].as_str(), args[1].as_str()) {
        ("zpool", verb @ ("export" | "destroy")) => {
            let pools: Vec<String> = if verb == "export" && flags.contains('a') {
                let state = STATE.lock();
                let mut pools: Vec<String> = state
                    .as_ref()
                    .map(|s| {
                        s.loops
                            .keys()
                            .filter_map(|v| v.split('/').next().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                pools.sort();
                pools.dedup();
                pools
            } else {
                operands.iter().map(|s| s.to_string()).collect()
            };
            for pool in pools {
                if busy_volume(&pool, true).is_some() {
                    return Err(format!("cannot {verb} '{pool}': pool is busy"));
                }
            }
        }
        ("zfs", "destroy") if !flags.contains('n') => {
            let below = flags.contains('r') || flags.contains('R');
            for name in operands
                .iter()
                .filter(|n| !n.contains('@') && !n.contains('#'))
            {
                if let Some(volume) = busy_volume(name, below) {
                    return Err(format!("cannot destroy '{volume}': dataset is busy"));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Daemon shutdown: every loop device detached and linked name removed, then the mount.
pub fn stop() {
    let mut state = STATE.lock();
    let Some(state) = state.as_mut() else {
        return;
    };
    for (name, (device, _)) in state.loops.drain() {
        detach(&name, &device);
    }
    state.session = None;
}

/// The FUSE filesystem of the volume files.
struct VolumeFiles;

/// A volume found by inode: its name, pool, sync mode and size.
struct Found {
    name: String,
    pool: PoolRef,
    sync: u8,
    size_bytes: u64,
}

fn attr_of(ino: u64, node: &Node) -> FileAttr {
    let (kind, perm, nlink, size, blksize) = match node {
        Node::Dir => (FileType::Directory, 0o755, 2, 0, 4096),
        Node::Volume {
            size_bytes,
            block_size_bytes,
            ..
        } => (
            FileType::RegularFile,
            0o600,
            1,
            *size_bytes,
            (*block_size_bytes).clamp(512, 1 << 20) as u32,
        ),
    };
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: SystemTime::UNIX_EPOCH,
        mtime: SystemTime::UNIX_EPOCH,
        ctime: SystemTime::UNIX_EPOCH,
        crtime: SystemTime::UNIX_EPOCH,
        kind,
        perm,
        nlink,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize,
        flags: 0,
    }
}

fn attr(ino: u64) -> Option<FileAttr> {
    with_table(|t| {
        let path = if ino == ROOT {
            ""
        } else {
            t.paths.get(&ino)?.as_str()
        };
        t.nodes.get(path).map(|node| attr_of(ino, node))
    })
}

fn volume(ino: u64) -> Result<Found, Errno> {
    with_table(|t| {
        let path = t.paths.get(&ino).ok_or(Errno::ENOENT)?;
        match t.nodes.get(path) {
            Some(Node::Volume {
                size_bytes,
                pool,
                sync,
                ..
            }) => Ok(Found {
                name: path.clone(),
                pool: pool.upgrade().ok_or(Errno::EIO)?,
                sync: *sync,
                size_bytes: *size_bytes,
            }),
            Some(Node::Dir) => Err(Errno::EISDIR),
            None => Err(Errno::ENOENT),
        }
    })
}

/// A pool refusal as the errno a block device gives.
fn errno(e: &zetta::spa::SpaError) -> Errno {
    use zetta::spa::SpaError;
    match e {
        SpaError::ReadOnly => Errno::EROFS,
        SpaError::NoSpace | SpaError::QuotaExceeded => Errno::ENOSPC,
        _ => Errno::EIO,
    }
}

/// Makes what was written to the volume durable, as its `sync` property says.
fn commit(found: &Found) -> Result<(), Errno> {
    if found.sync == SYNC_DISABLED {
        return Ok(());
    }
    let committed = found.pool.write().volume_commit(&found.name);
    committed.map(|_| ()).map_err(|e| errno(&e))
}

impl fuser::Filesystem for VolumeFiles {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = with_table(|t| {
            let base = if parent.0 == ROOT {
                String::new()
            } else {
                format!("{}/", t.paths.get(&parent.0)?)
            };
            let path = format!("{base}{}", name.to_string_lossy());
            let ino = *t.inodes.get(&path)?;
            t.nodes.get(&path).map(|node| attr_of(ino, node))
        });
        match found {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match attr(ino.0) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match volume(ino.0) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
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
        let found = match volume(ino.0) {
            Ok(found) => found,
            Err(e) => return reply.error(e),
        };
        let len = found.size_bytes.saturating_sub(offset).min(u64::from(size)) as usize;
        if len == 0 {
            return reply.data(&[]);
        }
        let read = found.pool.write().volume_read(&found.name, offset, len);
        match read {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let found = match volume(ino.0) {
            Ok(found) => found,
            Err(e) => return reply.error(e),
        };
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > found.size_bytes)
        {
            return reply.error(Errno::ENOSPC);
        }
        // The write throttle (`dmu::tx::dmu_tx_wait`), before the pool lock is taken.
        zetta::dmu::tx::dmu_tx_throttle(&found.pool);
        let written = found.pool.write().volume_write(&found.name, offset, data);
        if let Err(e) = written {
            return reply.error(errno(&e));
        }
        if found.sync == SYNC_ALWAYS {
            if let Err(e) = commit(&found) {
                return reply.error(e);
            }
        }
        reply.written(data.len() as u32);
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
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match volume(ino.0).and_then(|found| commit(&found)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = with_table(|t| {
            let dir = if ino.0 == ROOT {
                String::new()
            } else {
                t.paths.get(&ino.0)?.clone()
            };
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let mut out = vec![
                (ino.0, FileType::Directory, ".".to_string()),
                (ino.0, FileType::Directory, "..".to_string()),
            ];
            for (path, node) in t.nodes.range(prefix.clone()..) {
                let Some(rest) = path.strip_prefix(&prefix) else {
                    break;
                };
                if rest.is_empty() || rest.contains('/') {
                    continue;
                }
                let kind = match node {
                    Node::Dir => FileType::Directory,
                    Node::Volume { .. } => FileType::RegularFile,
                };
                out.push((*t.inodes.get(path)?, kind, rest.to_string()));
            }
            Some(out)
        });
        let Some(entries) = entries else {
            return reply.error(Errno::ENOENT);
        };
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
