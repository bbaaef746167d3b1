//! The daemon's mounts: which filesystems are mounted where, kept in step with the
//! pools and their properties.
//!
//! After every command that can change what should be mounted, `reconcile` compares each
//! held pool's filesystems (canmount=on, a mountpoint path, not unmounted by the admin)
//! with the running mounts: it mounts what is missing, unmounts what should not be
//! mounted or moved (then mounts it again), and applies changed options to the running
//! mount in place (`zetta_fuse::Mounted::apply_flags`: busy or not). Commands that take a
//! filesystem away — destroy, rename, rollback, export, a new mountpoint — unmount first
//! (`prepare`), so a busy mount makes them fail cleanly with OpenZFS's message instead of
//! leaving a mount on a dead dataset or a property that is not in force. A mount that
//! fails is reported by the command that asked for it (which then exits 1) and not tried
//! again until `zfs mount`.
//!
//! The kernel's mount table is the truth: a mount is reported (`mounted`, `zfs mount`)
//! only while /proc/self/mountinfo lists it (its id, device, path and dataset). One that
//! went from outside (`umount`, `umount -l`) is forgotten and stays unmounted until
//! `zfs mount`, as in OpenZFS; a dead daemon's mount at a mountpoint (ENOTCONN) is
//! detached before mounting there.
//! No pool lock is held while mounting or unmounting: the kernel may be waiting on a
//! request that needs it.

use super::registry::{self, PoolRef};
use crate::zfs_mount::{specs, MountSpec, Where};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use zetta_fuse::openzfs::OzfsFs;
use zetta_fuse::{Mounted, ZplFs};

struct Active {
    pool: u64,
    path: PathBuf,
    key: String,
    /// The options a running mount takes in place (`MountSpec::flags_key`).
    flags: String,
    /// The kernel's mount: its id and device in /proc/self/mountinfo. While the kernel
    /// lists both, the mount is live; when not, it went (an external `umount`, a lazy
    /// unmount, fusermount3) and the daemon says so.
    id: u32,
    dev: String,
    /// The path the kernel lists it under (symlinks resolved).
    kernel_path: PathBuf,
    /// Dropped (never used) when unmounted: dropping ends the session.
    /// Shared only while options are applied (without the table's lock held).
    mounted: std::sync::Arc<Mounted>,
}

impl Active {
    /// Whether `k` is this mount (ids and devices are reused: the path and dataset too).
    fn is(&self, k: &KernelMount, name: &str) -> bool {
        k.id == self.id && k.dev == self.dev && k.path == self.kernel_path && k.source == name
    }
}

static TABLE: Mutex<Option<HashMap<String, Active>>> = Mutex::new(None);
/// Filesystems the admin unmounted (or `import -N` left alone): not mounted again until
/// `zfs mount`.
static SUPPRESSED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Temporary properties (`zfs mount -o`) of mounted filesystems: in force until the
/// filesystem is unmounted.
static TEMPORARY: Mutex<Option<HashMap<String, TemporaryProps>>> = Mutex::new(None);

/// (property, value) pairs that `zfs mount -o` set for one mount.
type TemporaryProps = Vec<(String, String)>;

/// The temporary properties of `name` (none unless it was mounted with `-o`).
pub fn temporary_props(name: &str) -> Vec<(String, String)> {
    TEMPORARY
        .lock()
        .as_ref()
        .and_then(|map| map.get(name).cloned())
        .unwrap_or_default()
}

/// The value of `prop` that a mount option of mounted `name` sets (source temporary).
pub fn temporary(name: &str, prop: &str) -> Option<String> {
    let value = temporary_props(name)
        .into_iter()
        .find(|(p, _)| p == prop)
        .map(|(_, value)| value)?;
    // Read the kernel's table only for a filesystem that has such options.
    is_mounted(name).then_some(value)
}

fn set_temporary(name: &str, props: Vec<(String, String)>) {
    let mut map = TEMPORARY.lock();
    let map = map.get_or_insert_with(HashMap::new);
    if props.is_empty() {
        map.remove(name);
    } else {
        map.insert(name.to_string(), props);
    }
}

/// `ZETTA_MOUNT=0` in the daemon's environment: hold pools but serve no mounts (a box
/// without /dev/fuse, or tests of the commands alone).
pub fn enabled() -> bool {
    std::env::var_os("ZETTA_MOUNT").is_none_or(|v| v != "0")
}

fn with_table<T>(work: impl FnOnce(&mut HashMap<String, Active>) -> T) -> T {
    let mut table = TABLE.lock();
    work(table.get_or_insert_with(HashMap::new))
}

pub fn suppress(name: &str) {
    SUPPRESSED
        .lock()
        .get_or_insert_with(HashSet::new)
        .insert(name.to_string());
}

/// `zfs mount -a`: every filesystem may be mounted again (also those unmounted from
/// outside: forgotten first, so that they are not suppressed after this).
pub fn unsuppress_all() {
    prune();
    SUPPRESSED.lock().take();
}

fn unsuppress_tree(name: &str) {
    let prefix = format!("{name}/");
    if let Some(set) = SUPPRESSED.lock().as_mut() {
        set.retain(|n| n != name && !n.starts_with(&prefix));
    }
}

fn suppressed(name: &str) -> bool {
    SUPPRESSED
        .lock()
        .as_ref()
        .is_some_and(|set| set.contains(name))
}

/// Whether `name` is mounted: the daemon serves it and the kernel lists that mount.
pub fn is_mounted(name: &str) -> bool {
    prune();
    with_table(|table| table.contains_key(name))
}

/// (filesystem, mountpoint) of every mount, by name.
pub fn mounted_list() -> Vec<(String, PathBuf)> {
    prune();
    let mut list: Vec<(String, PathBuf)> = with_table(|table| {
        table
            .iter()
            .map(|(n, a)| (n.clone(), a.path.clone()))
            .collect()
    });
    list.sort();
    list
}

/// One mount of /proc/self/mountinfo.
struct KernelMount {
    id: u32,
    dev: String,
    path: PathBuf,
    fstype: String,
    source: String,
}

/// Undoes the kernel's octal escapes (`\040` for a space) in a mountinfo field.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(digits) => {
                let value = digits.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount a canonical `path` lives on (the deepest mount point above it, the topmost
/// mount there): its (fstype, source). `zinject -t data` names a file's dataset by it.
pub fn mount_containing(path: &Path) -> Option<(String, String)> {
    kernel_mounts()?
        .into_iter()
        .filter(|m| path.starts_with(&m.path))
        .enumerate()
        .max_by_key(|(order, m)| (m.path.components().count(), *order))
        .map(|(_, m)| (m.fstype, m.source))
}

/// The kernel's mount table as this process sees it, in mount order; None when it
/// cannot be read.
fn kernel_mounts() -> Option<Vec<KernelMount>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut mounts = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(id), Some(dev), Some(path), Some(fstype), Some(source)) = (
            fields.first().and_then(|f| f.parse().ok()),
            fields.get(2),
            fields.get(4),
            fields.get(dash + 1),
            fields.get(dash + 2),
        ) else {
            continue;
        };
        mounts.push(KernelMount {
            id,
            dev: dev.to_string(),
            path: PathBuf::from(unescape(path)),
            fstype: fstype.to_string(),
            source: unescape(source),
        });
    }
    Some(mounts)
}

const FSTYPE: &str = "fuse.zetta";

/// Forgets the mounts the kernel no longer lists (unmounted from outside: `umount`,
/// `umount -l`, a dead session's fusermount3). As after an external unmount in
/// OpenZFS, the filesystem is then unmounted until `zfs mount`.
fn prune() {
    forget_vanished(true);
}

/// Forgets the mounts the kernel no longer lists; `external`: they went from outside
/// (then they stay unmounted until `zfs mount`), else with one of ours (a lazy detach
/// takes the mounts below it along; `reconcile` mounts them again).
fn forget_vanished(external: bool) {
    let Some(kernel) = kernel_mounts() else {
        return;
    };
    let gone: Vec<(String, Active)> = with_table(|table| {
        let names: Vec<String> = table
            .iter()
            .filter(|(name, a)| !kernel.iter().any(|k| a.is(k, name)))
            .map(|(name, _)| name.clone())
            .collect();
        names
            .into_iter()
            .filter_map(|name| table.remove(&name).map(|a| (name, a)))
            .collect()
    });
    for (name, active) in gone {
        set_temporary(&name, Vec::new());
        if external {
            suppress(&name);
        }
        std::thread::spawn(move || drop(active));
    }
}

/// Whether the FUSE mount on top at `path` has no server any more (its daemon died:
/// every request fails with ENOTCONN).
fn dead_fuse_mount(path: &Path) -> bool {
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path and a zeroed statfs buffer of the right type.
    let rc = unsafe {
        let mut buf: libc::statfs = std::mem::zeroed();
        libc::statfs(c_path.as_ptr(), &mut buf)
    };
    rc != 0
        && matches!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ENOTCONN | libc::ECONNABORTED)
        )
}

/// Clears the dead `fuse.zetta` mounts at `path` (a killed daemon's, whose fusermount3
/// did not take them away) before mounting there: lazily, as a process may still sit in
/// one. A live mount of anyone else is left alone.
fn clear_dead_mounts(path: &Path) {
    for _ in 0..8 {
        let Some(kernel) = kernel_mounts() else {
            return;
        };
        let Some(top) = kernel.iter().rev().find(|k| k.path == path) else {
            return;
        };
        let ours = with_table(|table| table.iter().any(|(name, a)| a.is(top, name)));
        if ours || top.fstype != FSTYPE || !dead_fuse_mount(path) {
            return;
        }
        if umount2(path, true).is_err() {
            return;
        }
    }
}

/// `path` with its parent's symlinks resolved: as the kernel lists a mount there, even
/// when the mountpoint itself cannot be reached (a dead mount on it).
fn resolved_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// The mount just made at `path` (canonical) of `fsname`: the topmost one there.
fn find_new_mount(path: &Path, fsname: &str) -> Option<(u32, String)> {
    kernel_mounts()?
        .into_iter()
        .rev()
        .find(|k| k.path == path && k.fstype == FSTYPE && k.source == fsname)
        .map(|k| (k.id, k.dev))
}

/// A failed FUSE mount in OpenZFS's words (no Rust error text; fusermount3's own
/// complaint reduced to its reason).
fn mount_failure(e: &zetta_fuse::MountError) -> String {
    match e {
        zetta_fuse::MountError::Dataset(why) => why.clone(),
        zetta_fuse::MountError::Io(io) if io.raw_os_error() == Some(libc::EPERM) => {
            "Insufficient privileges".to_string()
        }
        zetta_fuse::MountError::Io(io) if io.raw_os_error().is_some() => {
            crate::zpool::pool::strerror(io)
        }
        zetta_fuse::MountError::Io(io) => {
            let text = io.to_string();
            let last = text.trim().lines().last().unwrap_or("").trim().to_string();
            if last.contains("allow_other") || last.contains("ermission denied") {
                "Insufficient privileges".to_string()
            } else {
                // "fusermount3: failed to access mountpoint /x: Not a directory"
                match last.rfind(": ") {
                    Some(at) => last[at + 2..].to_string(),
                    None if last.is_empty() => "mount failed".to_string(),
                    None => last,
                }
            }
        }
    }
}

fn umount2(path: &Path, lazy: bool) -> std::io::Result<()> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: a valid NUL-terminated path; umount2 does not keep the pointer.
    if unsafe { libc::umount2(c_path.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn mount_spec(pool: &PoolRef, guid: u64, spec: &MountSpec) -> Result<(), String> {
    if !enabled() {
        return Err(format!(
            "cannot mount '{}': mounts are disabled (ZETTA_MOUNT=0)",
            spec.name
        ));
    }
    let Where::Path(path) = &spec.at else {
        return Err(format!("cannot mount '{}': no mountpoint set", spec.name));
    };
    // The auto-unmount helpers of a killed daemon would unmount what we mount here.
    super::fusermount::end_orphaned_helpers(path);
    // A mount left by a daemon that was killed: the kernel still lists it, dead (and the
    // mountpoint answers nothing but ENOTCONN until it goes).
    clear_dead_mounts(&resolved_parent(path));
    // OpenZFS creates a missing mountpoint, and mounts on what is there otherwise.
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.is_dir() && !meta.is_symlink() => {
            return Err(format!("cannot mount '{}': Not a directory", spec.name));
        }
        Ok(_) => {}
        Err(_) => {
            if let Err(e) = std::fs::create_dir_all(path) {
                return Err(format!(
                    "cannot mount '{}': failed to create mountpoint: {}",
                    path.display(),
                    crate::zpool::pool::strerror(&e)
                ));
            }
        }
    }
    // zfs_mount_at: without overlay, only an empty directory is mounted over.
    if !spec.overlay && std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(format!(
            "cannot mount '{}': directory is not empty",
            path.display()
        ));
    }
    // The kernel lists the mount under the resolved path.
    let canonical = std::fs::canonicalize(path).map_err(|e| {
        format!(
            "cannot mount '{}': {}",
            spec.name,
            crate::zpool::pool::strerror(&e)
        )
    })?;
    if !canonical.is_dir() {
        return Err(format!("cannot mount '{}': Not a directory", spec.name));
    }
    let options = options_for_caller(spec, path, &canonical)?;
    let foreign = pool.read().openzfs().map(|f| {
        // The reader names datasets by the pool's name on disk.
        let spa_name_len = pool.read().name.len();
        (
            f.pool.clone(),
            format!("{}{}", f.pool.name, &spec.name[spa_name_len..]),
        )
    });
    let mounted = match foreign {
        // A real OpenZFS pool: its own read-only server over the OpenZFS codecs.
        Some((reader, disk_name)) => {
            let mut options = options.clone();
            options.fsname = spec.name.clone();
            OzfsFs::open(reader, &disk_name, options)
                .and_then(|fs| fs.mount(&canonical))
                .map_err(|e| match e {
                    zetta_fuse::MountError::Dataset(why) => why,
                    other => format!("cannot mount '{}': {}", spec.name, mount_failure(&other)),
                })?
        }
        None => {
            let fs = ZplFs::open(pool.clone(), &spec.name, options)
                .map_err(|e| format!("cannot mount '{}': {}", spec.name, mount_failure(&e)))?;
            fs.mount(&canonical)
                .map_err(|e| format!("cannot mount '{}': {}", spec.name, mount_failure(&e)))?
        }
    };
    let Some((id, dev)) = find_new_mount(&canonical, &spec.name) else {
        // Taken away as soon as made: never report it mounted.
        std::thread::spawn(move || drop(mounted));
        return Err(format!("cannot mount '{}': the mount went away", spec.name));
    };
    zetta_fuse::widen_readahead(&dev);
    with_table(|table| {
        table.insert(
            spec.name.clone(),
            Active {
                pool: guid,
                path: path.clone(),
                key: spec.key(),
                flags: spec.flags_key(),
                id,
                dev,
                kernel_path: canonical,
                mounted: std::sync::Arc::new(mounted),
            },
        )
    });
    Ok(())
}

/// The options of a mount made (or changed) for the current caller. The daemon mounts as
/// its own user, so a mount asked for by a caller who holds only a delegated `mount`
/// permission (`zfs_secpolicy`) is what mount(8) makes of a "user" mount: nosuid and
/// nodev whatever the properties say (a received stream could carry a setuid-root file),
/// and only on a mountpoint whose path has no symbolic link (`path` is the mountpoint as
/// the properties name it, `canonical` the kernel's resolution of it), so that a link a
/// user planted cannot send the mount over another directory. OpenZFS on Linux has no such
/// case: there only root may mount(2).
fn options_for_caller(
    spec: &MountSpec,
    path: &Path,
    canonical: &Path,
) -> Result<zetta_fuse::MountOptions, String> {
    let mut options = spec.options.clone();
    if super::privileged(&super::caller()) {
        return Ok(options);
    }
    if path != canonical {
        return Err(format!(
            "cannot mount '{}': mountpoint '{}' is reached through a symbolic link",
            spec.name,
            path.display()
        ));
    }
    options.setuid = false;
    options.devices = false;
    Ok(options)
}

/// Changes a running mount's flag-like options in place (busy or not).
fn apply_flags(name: &str, spec: &MountSpec) -> Result<(), String> {
    // Not under the table's lock: the remount walks the path, which may ask a parent
    // mount (a FUSE lookup needing a pool lock that a `zfs get mounted` holds while it
    // waits for the table).
    let Some((mounted, path, id, on_top)) = with_table(|table| {
        table.get(name).map(|a| {
            // A remount changes the topmost mount at the path: it must be this one.
            let on_top = kernel_mounts().is_some_and(|kernel| {
                kernel
                    .iter()
                    .rev()
                    .find(|k| k.path == a.kernel_path)
                    .is_some_and(|k| a.is(k, name))
            });
            (a.mounted.clone(), a.path.clone(), a.id, on_top)
        })
    }) else {
        return Ok(());
    };
    if !on_top {
        return Err(format!(
            "cannot mount '{name}': mountpoint or dataset is busy"
        ));
    }
    let options = options_for_caller(spec, &path, &path)?;
    let result = mounted.apply_flags(&path, &options);
    drop(mounted);
    match result {
        Ok(()) => {
            with_table(|table| {
                if let Some(active) = table.get_mut(name).filter(|a| a.id == id) {
                    active.flags = spec.flags_key();
                }
            });
            Ok(())
        }
        Err(e) => Err(format!(
            "cannot mount '{name}': {}",
            if e.raw_os_error() == Some(libc::EPERM) {
                "Insufficient privileges".to_string()
            } else {
                crate::zpool::pool::strerror(&e)
            }
        )),
    }
}

/// How long a busy unmount is retried: a child's `fusermount3` sits in its parent's root
/// directory for a moment after mounting (it mounts relative to it), so unmounting a tree
/// just after creating it can find the parent busy for that moment.
const UNMOUNT_BUSY_RETRIES: u32 = 20;
const UNMOUNT_BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(25);

/// Unmounts `name`; busy refuses unless `force` (then the kernel detaches it lazily).
pub fn unmount(name: &str, force: bool) -> Result<(), String> {
    // A mount already gone from the kernel is only forgotten: its path may hold another.
    prune();
    let Some(path) = with_table(|table| table.get(name).map(|a| a.path.clone())) else {
        return Ok(());
    };
    let mut result = umount2(&path, force);
    for _ in 0..UNMOUNT_BUSY_RETRIES {
        match &result {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(UNMOUNT_BUSY_WAIT);
                result = umount2(&path, force);
            }
            _ => break,
        }
    }
    match result {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            return Err(format!(
                "cannot unmount '{}': pool or dataset is busy",
                path.display()
            ))
        }
        // Already gone (EINVAL: not a mountpoint any more).
        Err(_) => {}
    }
    let active = with_table(|table| table.remove(name));
    set_temporary(name, Vec::new());
    // Ending the session may wait for the kernel: never on a command's path.
    if let Some(active) = active {
        std::thread::spawn(move || drop(active));
    }
    // A lazy detach took the mounts below along.
    if force {
        forget_vanished(false);
    }
    Ok(())
}

/// Unmounts `name` and every filesystem below it.
pub fn unmount_tree(name: &str, force: bool) -> Result<(), String> {
    let prefix = format!("{name}/");
    let mut victims: Vec<String> = with_table(|table| {
        table
            .keys()
            .filter(|n| *n == name || n.starts_with(&prefix))
            .cloned()
            .collect()
    });
    // Deepest first: a child's mountpoint sits inside its parent's.
    victims.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for victim in victims {
        unmount(&victim, force)?;
    }
    Ok(())
}

fn pool_named(name: &str) -> Option<(u64, PoolRef)> {
    let registry = registry::get()?;
    registry
        .all_with_guids()
        .into_iter()
        .find(|(_, pool)| pool.read().name == name)
}

/// `zfs mount [-O] [-o options] name` (`overlay`: -O, over a non-empty directory
/// whatever the property says; `temporary`: the properties `-o` sets for this mount;
/// `remount`: applied to the running mount).
pub fn mount_named(
    name: &str,
    overlay: bool,
    remount: bool,
    temporary: &[(String, String)],
) -> Result<(), String> {
    let pool_name = name.split('/').next().unwrap_or(name);
    let (guid, pool) = pool_named(pool_name)
        .ok_or_else(|| format!("cannot open '{name}': dataset does not exist"))?;
    let spec_of = |pool: &PoolRef| -> Result<MountSpec, String> {
        let all = {
            let mut spa = pool.write();
            specs(&mut spa).map_err(|e| e.message())?
        };
        all.into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| format!("cannot open '{name}': dataset does not exist"))
    };
    let mounted = is_mounted(name);
    if mounted && !remount {
        spec_of(&pool)?;
        return Err(format!("cannot mount '{name}': filesystem already mounted"));
    }
    // The options of this mount: a remount keeps the earlier ones it does not change.
    let previous = temporary_props(name);
    let mut options = if mounted {
        previous.clone()
    } else {
        Vec::new()
    };
    for (prop, value) in temporary {
        options.retain(|(p, _)| p != prop);
        options.push((prop.clone(), value.clone()));
    }
    set_temporary(name, options);
    let mut spec = match spec_of(&pool) {
        Ok(spec) => spec,
        Err(e) => {
            set_temporary(name, previous);
            return Err(e);
        }
    };
    spec.overlay |= overlay;
    if mounted {
        let result = apply_flags(name, &spec);
        if result.is_err() {
            set_temporary(name, previous);
        }
        return result;
    }
    let result = mount_named_spec(name, guid, &pool, &spec);
    if result.is_err() {
        set_temporary(name, Vec::new());
    }
    result
}

fn mount_named_spec(name: &str, guid: u64, pool: &PoolRef, spec: &MountSpec) -> Result<(), String> {
    match (&spec.at, spec.canmount.as_str()) {
        (_, "off") => Err(format!(
            "cannot mount '{name}': 'canmount' property is set to 'off'"
        )),
        (Where::Legacy, _) => Err(format!(
            "cannot mount '{name}': legacy mountpoint\nuse mount(8) to mount this filesystem"
        )),
        (Where::None, _) => Err(format!("cannot mount '{name}': no mountpoint set")),
        (Where::Path(path), _) if spec.locked => Err(zetta_fuse::openzfs::key_not_loaded(
            &path.display().to_string(),
        )),
        _ => {
            SUPPRESSED
                .lock()
                .get_or_insert_with(HashSet::new)
                .remove(name);
            mount_spec(pool, guid, spec)
        }
    }
}

/// Brings mounts in line with every held pool (see the module comment). Problems are
/// appended to `messages`, one line each.
pub fn reconcile(messages: &mut Vec<String>) {
    reconcile_noting(messages, &mut Vec::new());
}

/// `reconcile`, naming in `failed` the filesystems that were to be mounted and are not.
/// A mount that fails is not tried again until `zfs mount` (or the next daemon): the
/// admin hears of it once, from the command that caused it.
fn reconcile_noting(messages: &mut Vec<String>, failed: &mut Vec<String>) {
    let Some(registry) = registry::get() else {
        return;
    };
    if !enabled() {
        return;
    }
    prune();
    let mut wanted: HashMap<String, (u64, PoolRef, MountSpec)> = HashMap::new();
    for (guid, pool) in registry.all_with_guids() {
        let all = {
            let mut spa = pool.write();
            specs(&mut spa)
        };
        let Ok(all) = all else { continue };
        for spec in all {
            if matches!(spec.at, Where::Path(_)) && spec.canmount != "off" && !spec.locked {
                wanted.insert(spec.name.clone(), (guid, pool.clone(), spec));
            }
        }
    }
    // Unmount what should not be there (or not like this).
    let running: Vec<(String, u64, String, String)> = with_table(|table| {
        table
            .iter()
            .map(|(n, a)| (n.clone(), a.pool, a.key.clone(), a.flags.clone()))
            .collect()
    });
    let mut keep = HashSet::new();
    for (name, guid, key, flags) in running {
        // canmount=noauto keeps a running mount (OpenZFS's changelist does not unmount
        // for it): it only stops `zfs mount -a` and imports from mounting the filesystem.
        let fits = wanted
            .get(&name)
            .filter(|(g, _, spec)| *g == guid && spec.key() == key);
        if let Some((_, _, spec)) = fits {
            // quota and reservations are the pool's to enforce: a change needs no remount;
            // readonly, atime, exec, setuid, devices change on the running mount.
            if spec.flags_key() != flags {
                if let Err(message) = apply_flags(&name, spec) {
                    // No remount allowed (a daemon that is not root): a new mount with
                    // the new options, when nothing holds the old one.
                    if unmount(&name, false).is_ok() {
                        continue;
                    }
                    messages.push(message);
                    failed.push(name.clone());
                }
            }
            keep.insert(name);
        } else if let Err(message) = unmount(&name, false) {
            messages.push(message);
            failed.push(name.clone());
            keep.insert(name);
        }
    }
    // Mount what is missing, parents before children.
    let mut missing: Vec<&(u64, PoolRef, MountSpec)> = wanted
        .values()
        .filter(|(_, _, spec)| {
            spec.canmount == "on" && !keep.contains(&spec.name) && !suppressed(&spec.name)
        })
        .collect();
    missing.sort_by(|a, b| a.2.name.cmp(&b.2.name));
    for (guid, pool, spec) in missing {
        if let Err(message) = mount_spec(pool, *guid, spec) {
            messages.push(message);
            suppress(&spec.name);
            failed.push(spec.name.clone());
        }
    }
}

/// Before a command that takes filesystems away: unmount them, or refuse the command.
/// `args` is the whole command line (`zfs destroy …`, `zpool export …`).
pub fn prepare(args: &[String]) -> Result<(), String> {
    if registry::get().is_none() || args.len() < 2 {
        return Ok(());
    }
    let flags: String = args[2..]
        .iter()
        .filter(|a| a.starts_with('-'))
        .flat_map(|a| a.chars().skip(1))
        .collect();
    let operands: Vec<&String> = args[2..].iter().filter(|a| !a.starts_with('-')).collect();
    let force = flags.contains('f');
    match (args[0].as_str(), args[1].as_str()) {
        ("zfs", "destroy") if !flags.contains('n') => {
            for name in operands
                .iter()
                .filter(|n| !n.contains('@') && !n.contains('#'))
                // A pool's root without -r/-R is refused by the command itself.
                .filter(|n| n.contains('/') || flags.contains('r') || flags.contains('R'))
            {
                // -f is MS_FORCE, which Linux refuses on a busy filesystem as on any
                // other (EBUSY): a filesystem in use (a cwd, an open file) is never
                // detached from under its users; OpenZFS on Linux says "busy".
                unmount_tree(name, false)?;
            }
        }
        // A new mountpoint (or canmount=off) needs the filesystems unmounted first, as
        // OpenZFS's changelist does: busy refuses the change and leaves the property.
        ("zfs", "set" | "inherit") => {
            let (props, datasets): (Vec<&String>, Vec<&String>) = if args[1] == "set" {
                operands.iter().copied().partition(|o| o.contains('='))
            } else {
                let mut all = operands.iter().copied();
                (all.next().into_iter().collect(), all.collect())
            };
            let moves = props.iter().any(|p| {
                p.split('=').next() == Some("mountpoint")
                    || (p.split('=').next() == Some("canmount")
                        && (args[1] == "inherit" || p.ends_with("=off")))
            });
            if moves {
                for name in &datasets {
                    // As OpenZFS mounts a filesystem whose mountpoint is set (canmount=on),
                    // also one the admin had unmounted.
                    unsuppress_tree(name);
                }
                for name in datasets {
                    if let Err(message) = unmount_tree(name, false) {
                        // Whatever was unmounted before the busy one comes back.
                        reconcile(&mut Vec::new());
                        return Err(message);
                    }
                }
            }
        }
        ("zfs", "rename") => {
            // Renaming a pool's root is refused by the command itself.
            if let Some(name) = operands.first().filter(|n| n.contains('/')) {
                unmount_tree(name, force)?;
            }
        }
        ("zfs", "receive" | "recv") if !flags.contains('n') && !flags.contains('A') => {
            // A receive onto an existing filesystem swaps its tree: remount around it.
            if let Some(target) = operands.last() {
                if unmount_tree(target, false).is_err() {
                    unmount_tree(target, true)?;
                }
            }
        }
        ("zfs", "rollback") => {
            if let Some(fs) = operands.first().and_then(|n| n.split('@').next()) {
                // Rollback replaces the tree under the mount: remount around it. The
                // mounts below first (they hold it busy), all mounted again after.
                if unmount_tree(fs, false).is_err() {
                    unmount(fs, true)?;
                }
            }
        }
        // The kernel's writeback cache holds writes whose write(2) returned: the snapshot
        // or the commit must have them, as OpenZFS's have every write(2) that returned.
        ("zfs", "snapshot" | "snap") => {
            for name in operands.iter().filter_map(|n| n.split_once('@')) {
                write_back_tree(name.0);
            }
        }
        ("zpool", "sync" | "checkpoint") => {
            if operands.is_empty() {
                write_back_tree("");
            }
            for pool in &operands {
                write_back_tree(pool);
            }
        }
        ("zpool", "export") | ("zpool", "destroy") => {
            let pools: Vec<String> = if flags.contains('a') {
                registry::get()
                    .map(|r| r.all().iter().map(|p| p.read().name.clone()).collect())
                    .unwrap_or_default()
            } else {
                operands.iter().map(|s| s.to_string()).collect()
            };
            for pool in pools {
                unmount_tree(&pool, force)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The mounts of `name` and the filesystems below it ("": all), with their paths.
fn mounts_of_tree(name: &str) -> Vec<(PathBuf, std::sync::Arc<Mounted>)> {
    let prefix = format!("{name}/");
    with_table(|table| {
        table
            .iter()
            .filter(|(n, _)| name.is_empty() || *n == name || n.starts_with(&prefix))
            .map(|(_, a)| (a.kernel_path.clone(), a.mounted.clone()))
            .collect()
    })
}

/// How often the invalidation thread looks for settled attributes: a txg commit's new
/// `st_blocks` and a read's new access time reach `stat` within this.
const ATTR_INVALIDATE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Starts the thread (once, at daemon start) that tells the kernel to drop the attributes
/// Zetta changed behind it (`Mounted::invalidate_committed`), for every mount: the kernel
/// trusts a file's attributes for an hour (`zetta_fuse`'s `ATTR_TTL`), so what a commit or
/// an access time changes must be invalidated, and notifications must not come from a
/// request handler. One thread for all mounts; an idle mount costs a mutex check per round.
pub fn spawn_attr_invalidator() {
    let _ = std::thread::Builder::new()
        .name("attr_inval".to_string())
        .spawn(|| loop {
            std::thread::sleep(ATTR_INVALIDATE_INTERVAL);
            for (_, mounted) in mounts_of_tree("") {
                mounted.invalidate_committed();
            }
        });
}

/// Writes back the kernel's dirty pages of the mounts of `name` and below (syncfs), with
/// no lock held: those writes need the pool lock.
fn write_back_tree(name: &str) {
    for (path, _) in mounts_of_tree(name) {
        zetta_fuse::write_back(&path);
    }
}

/// After a command: `zpool import -N` leaves the pool's filesystems unmounted, then
/// everything else is reconciled. After `zpool sync` (a commit, nothing to reconcile)
/// the kernel forgets the attributes of the files written before it, whose `st_blocks`
/// the commit settled.
pub fn after(args: &[String], messages: &mut Vec<String>) {
    if args.first().map(String::as_str) == Some("zpool")
        && args.get(1).map(String::as_str) == Some("sync")
    {
        let pools: Vec<&String> = args
            .iter()
            .skip(2)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let trees: Vec<&str> = if pools.is_empty() {
            vec![""]
        } else {
            pools.iter().map(|p| p.as_str()).collect()
        };
        for tree in trees {
            for (_, mounted) in mounts_of_tree(tree) {
                mounted.invalidate_written();
            }
        }
        return;
    }
    let operands: Vec<&String> = args
        .iter()
        .skip(2)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let no_mount = args
        .iter()
        .skip(2)
        .any(|a| a.starts_with('-') && a.contains('N'));
    // `zfs receive -u`, `zfs create -u`: the new filesystem stays unmounted.
    let receive_unmounted = args.first().map(String::as_str) == Some("zfs")
        && matches!(
            args.get(1).map(String::as_str),
            Some("receive" | "recv" | "create")
        )
        && args
            .iter()
            .skip(2)
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('u'));
    if receive_unmounted {
        if let Some(target) = operands.last() {
            suppress(target);
        }
    }
    // A filesystem the admin unmounted stays so while its pool is held; an exported or
    // destroyed pool forgets it, so that the next import mounts everything (OpenZFS keeps
    // no unmounted state on disk).
    if args.first().map(String::as_str) == Some("zpool")
        && matches!(args.get(1).map(String::as_str), Some("export" | "destroy"))
    {
        let all = args.iter().skip(2).any(|a| a.as_str() == "-a");
        if all {
            SUPPRESSED.lock().take();
        }
        for pool in &operands {
            if pool_named(pool).is_none() {
                unsuppress_tree(pool);
            }
        }
    }
    if args.first().map(String::as_str) == Some("zpool")
        && args.get(1).map(String::as_str) == Some("import")
        && no_mount
    {
        if let Some((_, pool)) = operands.last().and_then(|name| pool_named(name)) {
            let names = pool.write().dataset_names().unwrap_or_default();
            for name in names {
                suppress(&name);
            }
        }
    }
    let mut failed = Vec::new();
    reconcile_noting(messages, &mut failed);
    // OpenZFS `zfs_do_create`: the filesystem exists; say that it is not mounted.
    let created = args.first().map(String::as_str) == Some("zfs")
        && args.get(1).map(String::as_str) == Some("create");
    if created
        && operands
            .last()
            .is_some_and(|fs| failed.iter().any(|f| f == *fs))
    {
        messages.push("filesystem successfully created, but not mounted".to_string());
    }
}

/// Commands after which mounts may need to change.
pub fn changes_mounts(args: &[String]) -> bool {
    match (
        args.first().map(String::as_str),
        args.get(1).map(String::as_str),
    ) {
        (Some("zfs"), Some(verb)) => matches!(
            verb,
            "create"
                | "destroy"
                | "rename"
                | "set"
                | "inherit"
                | "rollback"
                | "clone"
                | "promote"
                | "receive"
                | "recv"
        ),
        (Some("zpool"), Some(verb)) => {
            matches!(verb, "create" | "import" | "export" | "destroy" | "sync")
        }
        _ => false,
    }
}
