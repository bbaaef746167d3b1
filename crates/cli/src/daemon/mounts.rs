//! The daemon's mounts: which filesystems are mounted where, kept in step with the
//! pools and their properties.
//!
//! After every command that can change what should be mounted, `reconcile` compares each
//! held pool's filesystems (canmount=on, a mountpoint path, not unmounted by the admin)
//! with the running mounts: it mounts what is missing, and unmounts what vanished, moved
//! or changed options (then mounts it again). Commands that take a filesystem away —
//! destroy, rename, rollback, export — unmount first (`prepare`), so a busy mount makes
//! them fail cleanly with OpenZFS's message instead of leaving a mount on a dead dataset.
//! No pool lock is held while mounting or unmounting: the kernel may be waiting on a
//! request that needs it.

use super::registry::{self, PoolRef};
use crate::zfs_mount::{specs, MountSpec, Where};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use zetta_fuse::{Mounted, ZplFs};

struct Active {
    pool: u64,
    path: PathBuf,
    key: String,
    /// Mounted by `zfs mount` (kept even when canmount=noauto).
    explicit: bool,
    /// Dropped (never used) when unmounted: dropping ends the session.
    _mounted: Mounted,
}

static TABLE: Mutex<Option<HashMap<String, Active>>> = Mutex::new(None);
/// Filesystems the admin unmounted (or `import -N` left alone): not mounted again until
/// `zfs mount`.
static SUPPRESSED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

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

pub fn unsuppress_all() {
    SUPPRESSED.lock().take();
}

fn suppressed(name: &str) -> bool {
    SUPPRESSED
        .lock()
        .as_ref()
        .is_some_and(|set| set.contains(name))
}

pub fn is_mounted(name: &str) -> bool {
    with_table(|table| table.contains_key(name))
}

/// (filesystem, mountpoint) of every mount, by name.
pub fn mounted_list() -> Vec<(String, PathBuf)> {
    let mut list: Vec<(String, PathBuf)> = with_table(|table| {
        table
            .iter()
            .map(|(n, a)| (n.clone(), a.path.clone()))
            .collect()
    });
    list.sort();
    list
}

/// Whether the kernel lists a mount at `path`.
fn kernel_has_mount(path: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return false;
    };
    let wanted = path.to_string_lossy();
    mounts.lines().any(|line| {
        let mut fields = line.split(' ');
        let _device = fields.next();
        fields
            .next()
            .is_some_and(|at| at.replace("\\040", " ") == wanted)
    })
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

fn mount_spec(pool: &PoolRef, guid: u64, spec: &MountSpec, explicit: bool) -> Result<(), String> {
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
    // A mount left by a daemon that was killed: the kernel still lists it, dead.
    if kernel_has_mount(path) && !is_mounted(&spec.name) {
        let _ = umount2(path, true);
    }
    if let Err(e) = std::fs::create_dir_all(path) {
        return Err(format!(
            "cannot mount '{}': failed to create mountpoint: {}",
            path.display(),
            crate::zpool::pool::strerror(&e)
        ));
    }
    let fs = ZplFs::open(pool.clone(), &spec.name, spec.options.clone())
        .map_err(|e| format!("cannot mount '{}': {e}", spec.name))?;
    let mounted = fs
        .mount(path)
        .map_err(|e| format!("cannot mount '{}': {e}", path.display()))?;
    with_table(|table| {
        table.insert(
            spec.name.clone(),
            Active {
                pool: guid,
                path: path.clone(),
                key: spec.key(),
                explicit,
                _mounted: mounted,
            },
        )
    });
    Ok(())
}

/// How long a busy unmount is retried: a child's `fusermount3` sits in its parent's root
/// directory for a moment after mounting (it mounts relative to it), so unmounting a tree
/// just after creating it can find the parent busy for that moment.
const UNMOUNT_BUSY_RETRIES: u32 = 20;
const UNMOUNT_BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(25);

/// Unmounts `name`; busy refuses unless `force` (then the kernel detaches it lazily).
pub fn unmount(name: &str, force: bool) -> Result<(), String> {
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
    // Ending the session may wait for the kernel: never on a command's path.
    if let Some(active) = active {
        std::thread::spawn(move || drop(active));
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

/// `zfs mount fs`.
pub fn mount_named(name: &str) -> Result<(), String> {
    let pool_name = name.split('/').next().unwrap_or(name);
    let (guid, pool) = pool_named(pool_name)
        .ok_or_else(|| format!("cannot open '{name}': dataset does not exist"))?;
    let all = {
        let mut spa = pool.write();
        specs(&mut spa).map_err(|e| e.message())?
    };
    let spec = all
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("cannot open '{name}': dataset does not exist"))?;
    if is_mounted(name) {
        return Err(format!("cannot mount '{name}': filesystem already mounted"));
    }
    match (&spec.at, spec.canmount.as_str()) {
        (_, "off") => Err(format!(
            "cannot mount '{name}': 'canmount' property is set to 'off'"
        )),
        (Where::Legacy, _) => Err(format!(
            "cannot mount '{name}': legacy mountpoint\nuse mount(8) to mount this filesystem"
        )),
        (Where::None, _) => Err(format!("cannot mount '{name}': no mountpoint set")),
        _ => {
            SUPPRESSED
                .lock()
                .get_or_insert_with(HashSet::new)
                .remove(name);
            mount_spec(&pool, guid, &spec, true)
        }
    }
}

/// Brings mounts in line with every held pool (see the module comment). Problems are
/// appended to `messages`, one line each.
pub fn reconcile(messages: &mut Vec<String>) {
    let Some(registry) = registry::get() else {
        return;
    };
    if !enabled() {
        return;
    }
    let mut wanted: HashMap<String, (u64, PoolRef, MountSpec)> = HashMap::new();
    for (guid, pool) in registry.all_with_guids() {
        let all = {
            let mut spa = pool.write();
            specs(&mut spa)
        };
        let Ok(all) = all else { continue };
        for spec in all {
            if matches!(spec.at, Where::Path(_)) && spec.canmount != "off" {
                wanted.insert(spec.name.clone(), (guid, pool.clone(), spec));
            }
        }
    }
    // Unmount what should not be there (or not like this).
    let running: Vec<(String, u64, String, bool)> = with_table(|table| {
        table
            .iter()
            .map(|(n, a)| (n.clone(), a.pool, a.key.clone(), a.explicit))
            .collect()
    });
    let mut keep = HashSet::new();
    for (name, guid, key, explicit) in running {
        let fits = wanted.get(&name).is_some_and(|(g, _, spec)| {
            *g == guid && spec.key() == key && (spec.canmount == "on" || explicit)
        });
        if fits {
            // quota and reservations are the pool's to enforce: a change needs no remount.
            keep.insert(name);
        } else if let Err(message) = unmount(&name, false) {
            messages.push(message);
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
        if let Err(message) = mount_spec(pool, *guid, spec, false) {
            messages.push(message);
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
                unmount_tree(name, force)?;
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
                // Rollback replaces the tree under the mount: remount around it.
                if unmount(fs, false).is_err() {
                    unmount(fs, true)?;
                }
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

/// After a command: `zpool import -N` leaves the pool's filesystems unmounted, then
/// everything else is reconciled.
pub fn after(args: &[String], messages: &mut Vec<String>) {
    let operands: Vec<&String> = args
        .iter()
        .skip(2)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let no_mount = args
        .iter()
        .skip(2)
        .any(|a| a.starts_with('-') && a.contains('N'));
    // `zfs receive -u`: the received filesystem stays unmounted.
    let receive_unmounted = args.first().map(String::as_str) == Some("zfs")
        && matches!(args.get(1).map(String::as_str), Some("receive" | "recv"))
        && args
            .iter()
            .skip(2)
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('u'));
    if receive_unmounted {
        if let Some(target) = operands.last() {
            suppress(target);
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
    reconcile(messages);
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
        (Some("zpool"), Some(verb)) => matches!(verb, "create" | "import" | "export" | "destroy"),
        _ => false,
    }
}
