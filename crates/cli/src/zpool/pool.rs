//! Opening, committing and finding pools for one command (the userspace stand-in for
//! OpenZFS's `spa_open` on an imported pool, plus `zpool_in_use` and the device scan of
//! `zpool_find_import`).
//!
//! An imported pool is a cache entry (`cache`). A command opens every device of the entry
//! with an exclusive lock (a second process gets a clean "busy" refusal), groups them by
//! their labels, imports the entry's pool by guid, works on the `Spa`, and — if it changed
//! anything — commits (`commit`): counters are saved, the txg is synced, and the cache
//! entry is rewritten with the pool's current name and leaf paths. Dropping the `Spa`
//! releases the locks; the labels still say ACTIVE, so the pool stays imported.
//!
//! Per-vdev counters (errors, operations, bytes), the import time, `altroot` and
//! `cachefile` live in memory, as in OpenZFS's kernel (`spa_t`), never in the pool (format
//! 26). In `spa.props` they are the keys `IN_MEMORY_PROPS` (the counters under `STATS_PROP`
//! keyed by vdev guid), which `spa::directory` never writes. The daemon holds the `Spa`, so
//! they live as long as the import; without a daemon (`ZETTA_DIRECT=1`) each command
//! imports anew, so `commit` leaves them in `cache::state_path` and `import_entry` takes
//! them back (so `zpool status` in a later process still shows what `zpool scrub` found).

use super::cache::{self, CacheEntry};
use super::CmdError;
use crate::daemon::registry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use zetta::io::{BlockDevice, DeviceRef, FileDevice, IoError};
use zetta::nvlist::NvList;
use zetta::spa::{find_pools, ImportCandidate, Spa, SpaError, TopKind, TopSpec};
use zetta::types::DEVICE_SIZE_MIN_BYTES;
use zetta::vdev::label;
use zetta::vdev::{Vdev, VdevStats};
use zetta_zutil::vdev_spec::{
    default_leaf_kind, VdevClass, VdevKind, VdevSpecError, VdevSpecGroup,
};

/// ARC bound for one command's short-lived import.
pub const ARC_SIZE_BYTES_CLI: u64 = 64 << 20;
/// Private pool properties (hidden from `zpool get`).
pub const PRIVATE_PROP_PREFIX: &str = "org.zetta:";
pub const STATS_PROP: &str = "org.zetta:vdev_stats";
pub const IMPORT_TIME_PROP: &str = "org.zetta:import_time";
/// The pool settings of an import that are never written to the pool.
pub const IN_MEMORY_PROPS: [&str; 4] = [STATS_PROP, IMPORT_TIME_PROP, "altroot", "cachefile"];

pub const POOL_STATE_ACTIVE: u64 = zetta::spa::POOL_STATE_ACTIVE;
pub const POOL_STATE_EXPORTED: u64 = zetta::spa::POOL_STATE_EXPORTED;
pub const POOL_STATE_DESTROYED: u64 = zetta::spa::POOL_STATE_DESTROYED;

/// An imported pool opened by this command.
pub struct Imported {
    pub spa: SpaHandle,
    pub guid: u64,
}

/// Access to a pool: owned by this command (direct mode, or a pool just created or
/// imported), or borrowed from the daemon's registry exclusively or shared.
pub enum SpaHandle {
    Owned(Option<Box<Spa>>),
    Exclusive(parking_lot::ArcRwLockWriteGuard<parking_lot::RawRwLock, Spa>),
    Shared(parking_lot::ArcRwLockReadGuard<parking_lot::RawRwLock, Spa>),
}

impl std::ops::Deref for SpaHandle {
    type Target = Spa;

    fn deref(&self) -> &Spa {
        match self {
            SpaHandle::Owned(Some(spa)) => spa,
            SpaHandle::Owned(None) => unreachable!("pool handle used after it was handed over"),
            SpaHandle::Exclusive(guard) => guard,
            SpaHandle::Shared(guard) => guard,
        }
    }
}

impl std::ops::DerefMut for SpaHandle {
    fn deref_mut(&mut self) -> &mut Spa {
        match self {
            SpaHandle::Owned(Some(spa)) => spa,
            SpaHandle::Owned(None) => unreachable!("pool handle used after it was handed over"),
            SpaHandle::Exclusive(guard) => guard,
            SpaHandle::Shared(_) => unreachable!("a read-only command tried to change a pool"),
        }
    }
}

impl Imported {
    /// A pool this command created or imported itself.
    pub fn owned(guid: u64, spa: Spa) -> Imported {
        Imported {
            spa: SpaHandle::Owned(Some(Box::new(spa))),
            guid,
        }
    }

    /// Takes the pool out of the daemon (or this command) for good: export, destroy.
    pub fn into_spa(self) -> Result<Spa, CmdError> {
        match self.spa {
            SpaHandle::Owned(Some(spa)) => Ok(*spa),
            SpaHandle::Owned(None) => Err(CmdError::Fail(
                "pool handle already handed over".to_string(),
            )),
            SpaHandle::Exclusive(guard) => {
                let name = guard.name.clone();
                drop(guard);
                let Some(registry) = registry::get() else {
                    return Err(CmdError::Fail(format!(
                        "cannot open '{name}': pool is busy"
                    )));
                };
                if registry.scan(self.guid).is_some() {
                    return Err(CmdError::Fail(format!(
                        "cannot export '{name}': pool is busy"
                    )));
                }
                // Running `zpool initialize`/`trim` walks stop (they resume at import).
                if let Some(pool) = registry.pool(self.guid) {
                    super::initialize::stop_walkers(&pool);
                }
                // Other holders of the pool are brief (the txg timer walking every pool, a
                // FUSE request in flight, a command finishing): wait them out a while
                // before calling the pool busy.
                for _ in 0..HANDOVER_TRIES {
                    let Some(pool) = registry.remove(self.guid) else {
                        return Err(CmdError::Fail(format!(
                            "cannot open '{name}': no such pool"
                        )));
                    };
                    match std::sync::Arc::try_unwrap(pool) {
                        Ok(lock) => return Ok(lock.into_inner()),
                        Err(pool) => registry.put_back(self.guid, pool),
                    }
                    std::thread::sleep(HANDOVER_WAIT);
                }
                Err(CmdError::Fail(format!(
                    "cannot export '{name}': pool is busy"
                )))
            }
            SpaHandle::Shared(_) => Err(CmdError::Fail("pool opened read-only".to_string())),
        }
    }
}

/// How long `into_spa` waits for brief holders of a pool to let go (500 x 10 ms).
const HANDOVER_TRIES: u32 = 500;
const HANDOVER_WAIT: std::time::Duration = std::time::Duration::from_millis(10);

/// `strerror`-like text of an I/O error (Rust appends " (os error N)").
pub fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn is_busy(error: &IoError) -> bool {
    matches!(error, IoError::Open { reason, .. } if reason.contains("in use by another process"))
}

/// The imported pools: the cache file's, and those the daemon holds out of it (read-only,
/// or `cachefile=none` or another file: OpenZFS, and so Zetta, never writes them there).
pub fn load_cache() -> Result<Vec<CacheEntry>, CmdError> {
    let mut entries = cache::load().map_err(CmdError::Fail)?;
    if let Some(registry) = registry::get() {
        // The daemon's entry wins: a pool under a temporary name is in the file under
        // the name on its labels.
        for entry in registry.readonly_entries() {
            match entries.iter_mut().find(|e| e.guid == entry.guid) {
                Some(existing) => *existing = entry,
                None => entries.push(entry),
            }
        }
    }
    Ok(entries)
}

/// Forgets an imported pool (export, destroy): its cache file line, or its read-only entry.
pub fn forget(guid: u64) -> Result<(), CmdError> {
    if let Some(registry) = registry::get() {
        registry.forget_readonly(guid);
        if let Some(path) = registry.take_cache_file(guid) {
            cache::remove_at(std::path::Path::new(&path), guid).map_err(CmdError::Fail)?;
        }
    }
    cache::remove(guid).map_err(CmdError::Fail)
}

/// Refuses a change to a pool imported read-only, as OpenZFS does (EROFS: "pool is
/// read-only" after the command's own "cannot …" words).
pub fn writable(imported: &Imported, action: &str) -> Result<(), CmdError> {
    if imported.spa.readonly {
        return Err(CmdError::Fail(format!("{action}: pool is read-only")));
    }
    Ok(())
}

/// The guid of the imported pool called `name`, if the cache lists it.
pub fn guid_of(name: &str) -> Result<Option<u64>, CmdError> {
    Ok(load_cache()?
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.guid))
}

/// Opens the imported pool called `name` for a read-only command.
pub fn open_pool_shared(name: &str) -> Result<Imported, CmdError> {
    let entries = load_cache()?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        return Err(CmdError::Fail(format!(
            "cannot open '{name}': no such pool"
        )));
    };
    open_entry_shared(entry)
}

/// A pool of the cache whose devices cannot be opened (moved, removed, unreadable):
/// OpenZFS keeps such a pool in its namespace and shows it UNAVAIL beside the others
/// (`zpool status`; FAULTED health and '-' figures in `zpool list`), and `zpool export` or
/// `zpool destroy` forget it.
pub struct Unavailable {
    pub entry: CacheEntry,
    /// Why it cannot be opened (for a command that needs the pool itself).
    pub message: String,
}

/// A pool for a command that can also act on one that cannot be opened.
pub enum Opened {
    Pool(Imported),
    Unavailable(Unavailable),
}

/// The named pools (all when `names` is empty) for a listing (`zpool list`, `status`,
/// `iostat`): those that open, and those that cannot (a pool with a missing device does
/// not hide the others). A name not in the cache is an error, as is a busy pool.
pub fn open_named_listing(names: &[String]) -> Result<(Vec<Imported>, Vec<Unavailable>), CmdError> {
    let entries = load_cache()?;
    let wanted: Vec<&CacheEntry> = if names.is_empty() {
        entries.iter().collect()
    } else {
        let mut wanted = Vec::new();
        for name in names {
            let Some(entry) = entries.iter().find(|e| &e.name == name) else {
                return Err(CmdError::Fail(format!(
                    "cannot open '{name}': no such pool"
                )));
            };
            wanted.push(entry);
        }
        wanted
    };
    let mut pools = Vec::new();
    let mut unavailable = Vec::new();
    for entry in wanted {
        match open_entry_or_unavailable(entry, true)? {
            Opened::Pool(imported) => pools.push(imported),
            Opened::Unavailable(gone) => unavailable.push(gone),
        }
    }
    if names.is_empty() {
        pools.sort_by(|a, b| a.spa.name.cmp(&b.spa.name));
        unavailable.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
    }
    Ok((pools, unavailable))
}

/// Opens the imported pool called `name` exclusively, or says it cannot be opened
/// (`zpool export`, `zpool destroy`).
pub fn open_pool_or_unavailable(name: &str) -> Result<Opened, CmdError> {
    let entries = load_cache()?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        return Err(CmdError::Fail(format!(
            "cannot open '{name}': no such pool"
        )));
    };
    open_entry_or_unavailable(entry, false)
}

/// The vdev tree of a pool that cannot be opened, from the labels of whichever of its
/// devices are still there (read-only); `None` when none is.
pub fn unavailable_tree(entry: &CacheEntry) -> Option<Vdev> {
    let devices: Vec<DeviceRef> = entry
        .paths
        .iter()
        .filter_map(|p| FileDevice::open_read_only(p).ok())
        .map(|d| Arc::new(d) as DeviceRef)
        .collect();
    find_pools(&devices)
        .into_iter()
        .find(|c| c.guid.0 == entry.guid)?
        .vdev_tree()
        .ok()
}

/// The named pools (all when `names` is empty) for a read-only command.
pub fn open_named_shared(names: &[String]) -> Result<Vec<Imported>, CmdError> {
    if names.is_empty() {
        let mut pools = Vec::new();
        for entry in load_cache()? {
            pools.push(open_entry_shared(&entry)?);
        }
        pools.sort_by(|a, b| a.spa.name.cmp(&b.spa.name));
        return Ok(pools);
    }
    names.iter().map(|n| open_pool_shared(n)).collect()
}

/// Opens the imported pool called `name`.
/// The write throttle (`zetta::dmu::tx::dmu_tx_wait`) of the daemon's pool `name`, for a
/// command that writes a lot in turns (a receive between its input chunks): called with no
/// pool lock held, it delays or waits while the pool's dirty budget is spent, as a mount's
/// writer does. Nothing to wait for outside the daemon (the command commits its own pool).
pub fn throttle_writes(name: &str) {
    let Some(registry) = registry::get() else {
        return;
    };
    let Ok(entries) = load_cache() else {
        return;
    };
    if let Some(pool) = entries
        .iter()
        .find(|e| e.name == name)
        .and_then(|e| registry.pool(e.guid))
    {
        zetta::dmu::tx::dmu_tx_throttle(&pool);
    }
}

pub fn open_pool(name: &str) -> Result<Imported, CmdError> {
    let entries = load_cache()?;
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        return Err(CmdError::Fail(format!(
            "cannot open '{name}': no such pool"
        )));
    };
    open_entry(entry)
}

/// Opens every pool in the cache (for commands given no pool name).
pub fn open_all() -> Result<Vec<Imported>, CmdError> {
    let mut pools = Vec::new();
    for entry in load_cache()? {
        pools.push(open_entry(&entry)?);
    }
    pools.sort_by(|a, b| a.spa.name.cmp(&b.spa.name));
    Ok(pools)
}

/// Opens the named pools, or all when `names` is empty.
pub fn open_named(names: &[String]) -> Result<Vec<Imported>, CmdError> {
    if names.is_empty() {
        return open_all();
    }
    names.iter().map(|n| open_pool(n)).collect()
}

pub fn open_entry(entry: &CacheEntry) -> Result<Imported, CmdError> {
    open_entry_as(entry, false)
}

/// Opens a pool for a command that only reads it (status, list, iostat, get): in the
/// daemon, shared with other readers and with a scrub running in the background.
pub fn open_entry_shared(entry: &CacheEntry) -> Result<Imported, CmdError> {
    open_entry_as(entry, true)
}

fn open_entry_as(entry: &CacheEntry, shared: bool) -> Result<Imported, CmdError> {
    match open_entry_or_unavailable(entry, shared)? {
        Opened::Pool(imported) => Ok(imported),
        Opened::Unavailable(gone) => Err(CmdError::Fail(gone.message)),
    }
}

fn open_entry_or_unavailable(entry: &CacheEntry, shared: bool) -> Result<Opened, CmdError> {
    if let Some(registry) = registry::get() {
        let pool = match registry.pool(entry.guid) {
            Some(pool) => pool,
            None => match import_entry(entry)? {
                Ok(imported) => registry.insert(entry.guid, imported.into_spa()?),
                Err(message) => {
                    return Ok(Opened::Unavailable(Unavailable {
                        entry: entry.clone(),
                        message,
                    }))
                }
            },
        };
        let spa = if shared {
            SpaHandle::Shared(pool.read_arc())
        } else {
            SpaHandle::Exclusive(pool.write_arc())
        };
        return Ok(Opened::Pool(Imported {
            spa,
            guid: entry.guid,
        }));
    }
    Ok(match import_entry(entry)? {
        Ok(imported) => Opened::Pool(imported),
        Err(message) => Opened::Unavailable(Unavailable {
            entry: entry.clone(),
            message,
        }),
    })
}

/// Imports a cached pool from its devices (exclusive locks on every device). `Ok(Err)`:
/// the pool cannot be opened (UNAVAIL), with the message saying so; a device held by
/// another process is an error of its own.
fn import_entry(entry: &CacheEntry) -> Result<Result<Imported, String>, CmdError> {
    let name = &entry.name;
    let mut devices: Vec<DeviceRef> = Vec::new();
    for path in &entry.paths {
        match FileDevice::open_exclusive(path) {
            Ok(device) => devices.push(Arc::new(device)),
            Err(e) if is_busy(&e) => {
                return Err(CmdError::Fail(format!(
                    "cannot open '{name}': pool is busy: '{path}' is in use by another process"
                )))
            }
            // A missing device: the pool may still open degraded.
            Err(_) => continue,
        }
    }
    let Some(candidate) = find_pools(&devices)
        .into_iter()
        .find(|c| c.guid.0 == entry.guid)
    else {
        // OpenZFS's `zpool_open` of a pool its kernel could not load.
        return Ok(Err(format!("cannot open '{name}': pool is unavailable")));
    };
    let spa = match Spa::import(&candidate, None, ARC_SIZE_BYTES_CLI) {
        Ok(spa) => spa,
        Err(SpaError::Busy(_)) => {
            return Err(CmdError::Fail(format!(
                "cannot open '{name}': pool is busy"
            )))
        }
        Err(_) => return Ok(Err(format!("cannot open '{name}': pool is unavailable"))),
    };
    let mut spa = spa;
    if registry::get().is_none() {
        restore_in_memory(&mut spa, entry.guid);
    }
    restore_stats(&spa);
    report_replay(&spa);
    destroy_interrupted_receives(&mut spa);
    Ok(Ok(Imported::owned(entry.guid, spa)))
}

/// At import, the work datasets of receives a dead process left unfinished without `-s`
/// are destroyed (OpenZFS `dsl_destroy_inconsistent`); those of `-s` receives stay for
/// `zfs send -t`. Best effort: a pool that cannot be written keeps them until it can.
pub fn destroy_interrupted_receives(spa: &mut Spa) {
    let _ = zetta::dmu_send::destroy_interrupted_receives(spa);
}

/// Says in the daemon's log what the intent log replay at import did (OpenZFS is silent
/// unless it fails; a line per dataset helps an admin after a crash).
pub fn report_replay(spa: &Spa) {
    for (dataset, report) in &spa.zil_replayed {
        match &report.error {
            None => eprintln!(
                "zetta: {dataset}: replayed {} intent log records from {} blocks",
                report.records, report.blocks
            ),
            Some(error) => eprintln!(
                "zetta: {dataset}: intent log replay stopped after {} records: {error}",
                report.records
            ),
        }
    }
}

/// OpenZFS's wording for engine errors.
pub fn spa_error_text(error: &SpaError) -> String {
    match error {
        SpaError::DevicesUnavailable => "one or more devices is currently unavailable".to_string(),
        SpaError::Busy(_) => "pool is busy".to_string(),
        SpaError::NoSpace => "out of space".to_string(),
        SpaError::NoSuchDataset(name) => format!("cannot open '{name}': dataset does not exist"),
        SpaError::Dsl(e) => crate::zfs::errors::dsl_error_text(crate::zfs::errors::ZfsOp::Other, e),
        other => other.to_string(),
    }
}

/// Every vdev of the tree, depth first, the root included.
pub fn each_vdev<'a>(vdev: &'a Vdev, visit: &mut dyn FnMut(&'a Vdev)) {
    visit(vdev);
    for child in &vdev.children {
        each_vdev(child, visit);
    }
}

fn counters(stats: &VdevStats) -> [&AtomicU64; 7] {
    [
        &stats.read_errors,
        &stats.write_errors,
        &stats.checksum_errors,
        &stats.read_ops,
        &stats.write_ops,
        &stats.read_bytes,
        &stats.write_bytes,
    ]
}

/// Without a daemon: the in-memory settings an earlier command of this import left.
fn restore_in_memory(spa: &mut Spa, guid: u64) {
    let state = cache::load_state(guid);
    for (name, value) in state.entries {
        if IN_MEMORY_PROPS.contains(&name.as_str()) {
            spa.props.entries.insert(name, value);
        }
    }
}

/// Without a daemon: leaves the in-memory settings for the next command.
fn save_in_memory(spa: &Spa, guid: u64) {
    let mut state = NvList::new();
    for name in IN_MEMORY_PROPS {
        if let Some(value) = spa.props.entries.get(name) {
            state.entries.insert(name.to_string(), value.clone());
        }
    }
    // Best effort: losing it loses counters, as a reboot does, never pool data.
    let _ = cache::save_state(guid, &state);
}

/// Counters saved by earlier commands replace what this import's own reads counted.
fn restore_stats(spa: &Spa) {
    let saved: HashMap<u64, Vec<u64>> = spa
        .props
        .get_list(STATS_PROP)
        .map(|list| {
            list.entries
                .keys()
                .filter_map(|k| {
                    let guid = k.parse::<u64>().ok()?;
                    Some((guid, list.get_u64_array(k)?.to_vec()))
                })
                .collect()
        })
        .unwrap_or_default();
    each_vdev(&spa.root, &mut |vdev| {
        let values = saved.get(&vdev.guid.0);
        for (index, counter) in counters(&vdev.stats).iter().enumerate() {
            let value = values.and_then(|v| v.get(index)).copied().unwrap_or(0);
            counter.store(value, Ordering::Relaxed);
        }
    });
}

fn save_stats(spa: &mut Spa) {
    let mut list = NvList::new();
    each_vdev(&spa.root, &mut |vdev| {
        let values: Vec<u64> = counters(&vdev.stats)
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        list.set_u64_array(&vdev.guid.0.to_string(), values);
    });
    spa.props.set_list(STATS_PROP, list);
}

/// Starts a fresh import's counters: what this process counted so far (the import's own
/// reads, or a create's writes) is kept, anything saved by an earlier import is dropped.
pub fn reset_stats(spa: &mut Spa) {
    spa.props.remove(STATS_PROP);
    spa.props.set_u64(IMPORT_TIME_PROP, zetta::spa::now_secs());
}

/// Leaf paths of the pool, in tree order (missing leaves included).
pub fn leaf_paths(spa: &Spa) -> Vec<String> {
    spa.root
        .leaves()
        .into_iter()
        .chain(spa.cache.iter())
        .chain(spa.spares.iter())
        .map(|l| l.path.clone())
        .collect()
}

/// Saves counters, commits the open txg and records the pool in the cache.
pub fn commit(imported: &mut Imported) -> Result<(), CmdError> {
    if let (Some(registry), SpaHandle::Owned(owned)) = (registry::get(), &mut imported.spa) {
        // A pool this command created or imported: from now on the daemon holds it.
        if let Some(spa) = owned.take() {
            let pool = registry.insert(imported.guid, *spa);
            imported.spa = SpaHandle::Exclusive(pool.write_arc());
        }
    }
    let spa = &mut *imported.spa;
    save_stats(spa);
    if registry::get().is_none() {
        save_in_memory(spa, imported.guid);
    }
    spa.sync().map_err(|e| {
        CmdError::Fail(format!(
            "cannot sync '{}': {}",
            spa.name,
            spa_error_text(&e)
        ))
    })?;
    // What the engine saw meanwhile (a resilver, errors) goes to `zpool events`.
    super::events::pump(Some(spa), Vec::new());
    let entry = CacheEntry {
        guid: imported.guid,
        name: spa.name.clone(),
        paths: leaf_paths(spa),
    };
    if spa.readonly {
        if let Some(registry) = registry::get() {
            registry.add_readonly(entry);
        }
        return Ok(());
    }
    record_in_cache(
        entry,
        spa.props.get_str("cachefile"),
        spa.name_on_disk.as_deref(),
    )
}

/// Where a pool's `cachefile` property puts it (OpenZFS `spa_write_cachefile`): unset, in
/// the default cache file; `none`, in none; a path, in that file (Zetta's cache format)
/// and not the default one. A pool in no default cache file is held by the daemon and
/// listed beside the file's entries while it lives, as a read-only pool is; a new daemon
/// does not bring it back (OpenZFS does not import it at boot either). Without a daemon
/// the default file is the only registry, so it is used whatever the property says.
/// A file lists a pool under a temporary name by the name on its labels
/// (`spa_config_generate`): a new daemon brings it back under that name.
fn record_in_cache(
    entry: CacheEntry,
    cachefile: Option<&str>,
    name_on_disk: Option<&str>,
) -> Result<(), CmdError> {
    let guid = entry.guid;
    let in_file = CacheEntry {
        name: name_on_disk.unwrap_or(&entry.name).to_string(),
        ..entry.clone()
    };
    let registry = match (registry::get(), cachefile) {
        (Some(registry), Some(value)) if !value.is_empty() => registry,
        (registry, _) => {
            if let Some(registry) = registry {
                registry.forget_readonly(guid);
                if let Some(old) = registry.take_cache_file(guid) {
                    cache::remove_at(std::path::Path::new(&old), guid).map_err(CmdError::Fail)?;
                }
                if name_on_disk.is_some() {
                    registry.add_readonly(entry);
                }
            }
            return cache::upsert(in_file).map_err(CmdError::Fail);
        }
    };
    let path = cachefile.filter(|value| *value != "none");
    if let Some(old) = registry.take_cache_file(guid) {
        if Some(old.as_str()) != path {
            cache::remove_at(std::path::Path::new(&old), guid).map_err(CmdError::Fail)?;
        }
    }
    if let Some(path) = path {
        cache::upsert_at(std::path::Path::new(path), in_file).map_err(CmdError::Fail)?;
        registry.set_cache_file(guid, path);
    }
    registry.add_readonly(entry);
    cache::remove(guid).map_err(CmdError::Fail)
}

/// The pool a device's label names: (pool name, pool guid, pool state).
/// Whether the device carries at least one valid label (any pool, any state).
pub fn has_label(path: &str) -> bool {
    FileDevice::open_read_only(path)
        .ok()
        .and_then(|device| label::read_config(&device))
        .is_some()
}

/// Whether all four label areas of the device hold only zeros: what Zetta's `zpool
/// detach` leaves (OpenZFS's leaves a txg-0 label that `labelclear` then clears).
pub fn labels_zeroed(path: &str) -> bool {
    let Ok(device) = FileDevice::open_read_only(path) else {
        return false;
    };
    let size = device.size_bytes();
    // Smaller than any vdev Zetta makes: never one that detach let go.
    if size < DEVICE_SIZE_MIN_BYTES.max(label::LABEL_COUNT as u64 * label::LABEL_SIZE_BYTES) {
        return false;
    }
    let mut area = vec![0u8; label::LABEL_SIZE_BYTES as usize];
    (0..label::LABEL_COUNT).all(|index| {
        device
            .read_at(label::label_offset(index, size), &mut area)
            .is_ok()
            && area.iter().all(|&byte| byte == 0)
    })
}

pub fn label_owner(path: &str) -> Option<(String, u64, u64)> {
    let device = FileDevice::open_read_only(path).ok()?;
    match label::read_config(&device)? {
        label::DeviceLabel::Pool { config, .. } => Some((
            config.get_str("name")?.to_string(),
            config.get_u64("pool_guid")?,
            config.get_u64("state").unwrap_or(POOL_STATE_ACTIVE),
        )),
        // A pool of an older format still owns its devices.
        label::DeviceLabel::OldZetta {
            name, pool_guid, ..
        } => Some((name, pool_guid, POOL_STATE_EXPORTED)),
    }
}

/// `POOL_STATE_SPARE` (an available hot spare's label).
const POOL_STATE_SPARE: u64 = 3;

/// The `state` of an aux label (3 spare, 4 cache device) on `path`, if it holds one.
fn aux_label_state(path: &str) -> Option<u64> {
    let device = FileDevice::open_read_only(path).ok()?;
    label::read_aux_guid(&device)?;
    let read = zetta::vdev::openzfs::label::read_device(&device)?;
    read.config.get_u64("state")
}

/// `check_file_generic` for every path: devices whose labels name a live or exported
/// pool. Returns the complete OpenZFS error text when any is in use. A device of a pool
/// imported here cannot be forced; others can with `-f`.
pub fn check_in_use(paths: &[String], force: bool) -> Result<(), CmdError> {
    let entries = load_cache()?;
    let imported: Vec<u64> = entries.iter().map(|e| e.guid).collect();
    let mut problems = Vec::new();
    for path in paths {
        // An available spare or cache device names no pool: it is in use when an
        // imported pool lists it (`zpool_in_use`'s `find_aux`), and never with -f.
        if let Some(aux_state) = aux_label_state(path) {
            let owner = entries.iter().find(|e| e.paths.iter().any(|p| p == path));
            if let Some(owner) = owner {
                problems.push(if aux_state == POOL_STATE_SPARE {
                    format!("{path} is reserved as a hot spare in pool {}", owner.name)
                } else {
                    format!("{path} is part of unknown pool '{}'", owner.name)
                });
            }
            continue;
        }
        let Some((name, guid, state)) = label_owner(path) else {
            continue;
        };
        let (description, overridable) = match state {
            POOL_STATE_DESTROYED => continue,
            POOL_STATE_EXPORTED => ("exported", true),
            _ if imported.contains(&guid) => ("active", false),
            _ => ("potentially active", true),
        };
        if overridable && force {
            continue;
        }
        problems.push(format!("{path} is part of {description} pool '{name}'"));
    }
    // check_slice: a block device holding another filesystem (libblkid's TYPE) is used
    // only with -f.
    if !force {
        for path in paths {
            if let Some(kind) = foreign_filesystem(path) {
                problems.push(format!("{path} contains a filesystem of type '{kind}'"));
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let header = if force {
        "the following errors must be manually repaired:"
    } else {
        "use '-f' to override the following errors:"
    };
    Err(CmdError::Fail(format!(
        "invalid vdev specification\n{header}\n{}",
        problems.join("\n")
    )))
}

/// The type of filesystem blkid finds on the block device `path` (not a ZFS label, which
/// `label_owner` judges); `None` for files, for devices holding nothing it knows, and
/// where blkid is missing.
fn foreign_filesystem(path: &str) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::metadata(path).ok()?.file_type().is_block_device() {
        return None;
    }
    let out = std::process::Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "TYPE", path])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let kind = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !kind.is_empty() && kind != "zfs_member").then_some(kind)
}

/// OpenZFS's device search path on Linux (`zpool_default_search_paths`), in its order:
/// where a shorthand device name is looked for, and what `zpool status` strips from a
/// device's path (`zfs_strip_path`).
pub const DEVICE_SEARCH_PATHS: [&str; 9] = [
    "/dev/disk/by-vdev",
    "/dev/mapper",
    "/dev/disk/by-partlabel",
    "/dev/disk/by-partuuid",
    "/dev/disk/by-label",
    "/dev/disk/by-uuid",
    "/dev/disk/by-id",
    "/dev/disk/by-path",
    "/dev",
];

/// `zfs_resolve_shortname`: the full path of a shorthand device name (`loop0`,
/// `ata-XYZ`, `sda1`), the first that exists in the search path; `None` when none does.
/// A name with a `/` in it is a path, not a shorthand.
pub fn resolve_shortname(word: &str) -> Option<String> {
    if word.starts_with('/') || word.contains('/') || word.is_empty() {
        return None;
    }
    DEVICE_SEARCH_PATHS
        .iter()
        .map(|dir| format!("{dir}/{word}"))
        .find(|path| std::path::Path::new(path).exists())
}

/// `zfs_strip_path`: a device path as `zpool status` names it (the search-path
/// directory taken off: `/dev/loop0` is `loop0`); files keep their path.
pub fn vdev_short_name(path: &str) -> &str {
    DEVICE_SEARCH_PATHS
        .iter()
        .find_map(|dir| path.strip_prefix(dir)?.strip_prefix('/'))
        .unwrap_or(path)
}

/// The vdev words of a command with each shorthand device name replaced by its full path
/// (`is_shorthand_path`); keywords and names that resolve to nothing are left as given.
pub fn resolve_vdev_words(words: &[String]) -> Vec<String> {
    words
        .iter()
        .map(|word| {
            if zetta_zutil::vdev_spec::is_keyword(word) {
                return word.clone();
            }
            resolve_shortname(word).unwrap_or_else(|| word.clone())
        })
        .collect()
}

/// Leaf classifier for the vdev parser: absolute paths that exist; block devices are
/// disks, anything else a file.
pub fn leaf_kind(word: &str) -> Result<VdevKind, VdevSpecError> {
    if !word.starts_with('/') {
        return default_leaf_kind(word);
    }
    match std::fs::metadata(word) {
        Err(e) => Err(VdevSpecError::Device(format!(
            "cannot open '{word}': {}",
            strerror(&e)
        ))),
        Ok(meta) => {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_block_device() {
                Ok(VdevKind::Disk)
            } else if meta.is_file() {
                Ok(VdevKind::File)
            } else {
                // make_leaf_vdev: directories, fifos, character devices.
                Err(VdevSpecError::Device(format!(
                    "cannot use '{word}': must be a block device or regular file"
                )))
            }
        }
    }
}

/// Parses vdev words with [`leaf_kind`]; classes Zetta lacks are refused. `action` is
/// the prefix of the duplicate-device message ("cannot create 'tank'").
pub fn parse_spec(words: &[String], action: &str) -> Result<Vec<VdevSpecGroup>, CmdError> {
    let words = resolve_vdev_words(words);
    let groups = zetta_zutil::vdev_spec::parse_vdev_spec_with(&words, leaf_kind)
        .map_err(|e| CmdError::Fail(e.to_string()))?;
    for group in &groups {
        let class = match group.class {
            VdevClass::Normal | VdevClass::Log | VdevClass::Spare => continue,
            // No read goes to a cache device yet (no L2ARC): accepting one would promise
            // what Zetta does not do (issue 21). A pool OpenZFS gave one keeps it
            // (`Spa::cache`, listed and labelled as OpenZFS does).
            VdevClass::Cache => "cache",
            VdevClass::Special => "special",
            VdevClass::Dedup => "dedup",
        };
        return Err(CmdError::Fail(format!(
            "invalid vdev specification: {class} devices are not supported by zetta yet"
        )));
    }
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    for path in groups.iter().flat_map(|g| g.paths.iter()) {
        // Paths only: the device itself is opened later.
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
        if seen.contains(&canonical) {
            return Err(CmdError::Fail(format!(
                "{action}: one or more vdevs refer to the same device, or one of\nthe devices is part of an active md or lvm device"
            )));
        }
        seen.push(canonical);
    }
    Ok(groups)
}

/// Whether any device is smaller than OpenZFS's SPA_MINDEVSIZE (64M).
pub fn any_too_small(paths: &[String]) -> bool {
    paths.iter().any(|path| {
        FileDevice::open_read_only(path)
            .map(|d| d.size_bytes() < DEVICE_SIZE_MIN_BYTES)
            .unwrap_or(false)
    })
}

/// Opens one device for a pool (exclusive), with OpenZFS-like wording on failure.
pub fn open_device(path: &str) -> Result<DeviceRef, CmdError> {
    match FileDevice::open_exclusive(path) {
        Ok(device) => Ok(Arc::new(device)),
        Err(e) if is_busy(&e) => Err(CmdError::Fail(format!(
            "cannot open '{path}': device is in use by another process"
        ))),
        Err(e) => Err(CmdError::Fail(e.to_string())),
    }
}

/// Opens the devices of parsed groups as engine top-level specs.
pub fn open_tops(groups: &[VdevSpecGroup]) -> Result<Vec<TopSpec>, CmdError> {
    let mut tops = Vec::new();
    // Cache devices and spares are not in the tree (`open_aux_devices`).
    for group in groups
        .iter()
        .filter(|g| !matches!(g.class, VdevClass::Cache | VdevClass::Spare))
    {
        let kind = match group.kind {
            VdevKind::Disk | VdevKind::File => TopKind::Single,
            VdevKind::Mirror => TopKind::Mirror,
            VdevKind::Raidz(parity) => TopKind::Raidz(parity),
        };
        let mut leaves = Vec::new();
        for path in &group.paths {
            leaves.push((path.clone(), open_device(path)?));
        }
        tops.push(TopSpec {
            kind,
            leaves,
            is_log: group.class == VdevClass::Log,
        });
    }
    Ok(tops)
}

/// Opens the cache (L2ARC) devices named in parsed groups.
pub fn open_cache_devices(groups: &[VdevSpecGroup]) -> Result<Vec<(String, DeviceRef)>, CmdError> {
    open_aux_devices(groups, VdevClass::Cache)
}

/// Opens the devices of the groups of `class` (`cache` or `spare`).
pub fn open_aux_devices(
    groups: &[VdevSpecGroup],
    class: VdevClass,
) -> Result<Vec<(String, DeviceRef)>, CmdError> {
    let mut devices = Vec::new();
    for group in groups.iter().filter(|g| g.class == class) {
        for path in &group.paths {
            devices.push((path.clone(), open_device(path)?));
        }
    }
    Ok(devices)
}

/// Candidate device files in the given directories (regular files and block devices
/// that open read-only), sorted by path. Unreadable entries are skipped.
pub fn scan_devices(dirs: &[String]) -> Vec<DeviceRef> {
    use std::os::unix::fs::FileTypeExt;
    let mut paths: Vec<String> = Vec::new();
    // Paths are shown as OpenZFS finds them: the directory part resolved (`realpath`),
    // the last component kept (a symlink to a device is named by the link).
    let resolved = |dir: &std::path::Path, name: &std::ffi::OsStr| {
        std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    for dir in dirs {
        // `-d` may also name a device itself (OpenZFS 2.x accepts a file or block device).
        let given = std::path::Path::new(dir);
        if let (Ok(meta), Some(name)) = (std::fs::metadata(given), given.file_name()) {
            if meta.is_file() || meta.file_type().is_block_device() {
                let parent = given.parent().filter(|p| !p.as_os_str().is_empty());
                paths.push(resolved(parent.unwrap_or(std::path::Path::new(".")), name));
                continue;
            }
        }
        let Ok(read) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in read.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if meta.is_file() || meta.file_type().is_block_device() {
                paths.push(resolved(given, &entry.file_name()));
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
        .iter()
        .filter_map(|p| FileDevice::open_read_only(p).ok())
        .filter(|d| d.size_bytes() >= label::DATA_START_BYTES + label::LABELS_END_SIZE_BYTES)
        .map(|d| Arc::new(d) as DeviceRef)
        .collect()
}

/// Pools found on the devices of `dirs`.
pub fn find_candidates(dirs: &[String]) -> Vec<ImportCandidate> {
    find_pools(&scan_devices(dirs))
}
