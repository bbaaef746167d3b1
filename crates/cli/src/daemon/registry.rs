//! Pools held open by the daemon, and the scans running on them.
//!
//! Each pool sits behind a reader-writer lock: a command that changes the pool takes it
//! exclusively, `status`/`list`/`iostat`/`get` share it, and a background scrub walks the
//! pool under a shared lock (only its start and end are exclusive), so readers see its
//! progress while it runs. The registry exists only inside the daemon.
//!
//! Pools imported read-only are held here but never written to the cache file (OpenZFS
//! keeps read-only pools out of `zpool.cache`: nothing guarantees they import again the
//! same way): the registry lists them beside the file's entries while the daemon lives,
//! and a new daemon does not bring them back. Pools whose `cachefile` is `none` or
//! another file are held the same way (with that file's path, to take them out of it at
//! export).

use crate::zpool::cache::CacheEntry;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock};
use zetta::spa::writeback::{WRITEBACK_BATCH_BYTES, WRITEBACK_START_BYTES};
use zetta::spa::{ScanStats, Spa, WritebackMode};

pub type PoolRef = Arc<RwLock<Spa>>;

/// A scan running in the background.
pub struct ScanHandle {
    pub cancel: AtomicBool,
    pub progress: AtomicU64,
    pub stats: ScanStats,
}

#[derive(Default)]
pub struct Registry {
    pools: Mutex<HashMap<u64, PoolRef>>,
    scans: Mutex<HashMap<u64, Arc<ScanHandle>>>,
    /// Read-only pools, as the cache file would list them (by guid).
    readonly: Mutex<std::collections::BTreeMap<u64, CacheEntry>>,
    /// The cache file a pool's `cachefile` property names instead of the default one.
    cache_files: Mutex<std::collections::BTreeMap<u64, String>>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The daemon's dirty-data budget, shared by all its pools: what each pool had to itself
/// before (each still commits at that much of its own).
pub const DIRTY_BYTES_DAEMON: u64 = zetta::spa::DIRTY_BYTES_MAX;

/// Turns this process into a pool holder (called once by the daemon, before it opens any
/// pool): one ARC and one dirty budget for all the pools it will hold, so its memory does
/// not grow with their number (128 pools had 8 GiB of ARC and 16 GiB of dirty budget).
pub fn enable() {
    // The daemon's ARC, shared by all its pools (OpenZFS: one per kernel), bounded by
    // `zfs_arc_max` (`daemon::tunable` loaded them first; the reaper lowers it under
    // host memory pressure).
    zetta::zio::arc::share_process_wide(zetta::tunables::arc_c_max());
    zetta::spa::dirty::share_process_wide(DIRTY_BYTES_DAEMON);
    let _ = REGISTRY.set(Registry::default());
}

/// The registry, when this process is the daemon.
pub fn get() -> Option<&'static Registry> {
    REGISTRY.get()
}

impl Registry {
    pub fn pool(&self, guid: u64) -> Option<PoolRef> {
        self.pools.lock().get(&guid).cloned()
    }

    pub fn insert(&self, guid: u64, mut spa: Spa) -> PoolRef {
        // A held pool writes file data early on its own thread while writers go on
        // (`zetta::spa::writeback`); ZETTA_WRITEBACK=off|inline selects the other modes
        // (benchmarks compare them).
        let mode = match std::env::var("ZETTA_WRITEBACK").as_deref() {
            Ok("off") => WritebackMode::Off,
            Ok("inline") => WritebackMode::Inline,
            _ => WritebackMode::Threaded,
        };
        spa.set_writeback(mode, WRITEBACK_START_BYTES, WRITEBACK_BATCH_BYTES);
        let readonly = spa.readonly;
        let pool = Arc::new(RwLock::new(spa));
        // Its sync thread commits every TXG_TIMEOUT with changes, and when the dirty
        // budget is spent, the tail of each commit without the pool lock
        // (`zetta::spa::txg`); it ends with the pool.
        if !readonly {
            zetta::spa::txg::start_sync_thread(&pool, zetta::spa::txg::TXG_TIMEOUT).detach();
        }
        self.pools.lock().insert(guid, pool.clone());
        // Its leaves' running `zpool initialize` / `zpool trim` go on
        // (`vdev_initialize_restart`).
        if !readonly {
            crate::zpool::initialize::resume(&pool);
        }
        pool
    }

    pub fn put_back(&self, guid: u64, pool: PoolRef) {
        self.pools.lock().insert(guid, pool);
    }

    pub fn remove(&self, guid: u64) -> Option<PoolRef> {
        self.pools.lock().remove(&guid)
    }

    pub fn all_with_guids(&self) -> Vec<(u64, PoolRef)> {
        self.pools
            .lock()
            .iter()
            .map(|(guid, pool)| (*guid, pool.clone()))
            .collect()
    }

    pub fn all(&self) -> Vec<PoolRef> {
        self.pools.lock().values().cloned().collect()
    }

    pub fn scan(&self, guid: u64) -> Option<Arc<ScanHandle>> {
        self.scans.lock().get(&guid).cloned()
    }

    pub fn start_scan(&self, guid: u64, handle: Arc<ScanHandle>) {
        self.scans.lock().insert(guid, handle);
    }

    pub fn end_scan(&self, guid: u64) {
        self.scans.lock().remove(&guid);
    }

    /// Lists a pool imported read-only (not in the cache file) until `forget_readonly`.
    pub fn add_readonly(&self, entry: CacheEntry) {
        self.readonly.lock().insert(entry.guid, entry);
    }

    pub fn readonly_entries(&self) -> Vec<CacheEntry> {
        self.readonly.lock().values().cloned().collect()
    }

    pub fn forget_readonly(&self, guid: u64) {
        self.readonly.lock().remove(&guid);
    }

    /// Records the cache file a pool was written to (its `cachefile` property).
    pub fn set_cache_file(&self, guid: u64, path: &str) {
        self.cache_files.lock().insert(guid, path.to_string());
    }

    /// The cache file a pool was written to, forgotten here.
    pub fn take_cache_file(&self, guid: u64) -> Option<String> {
        self.cache_files.lock().remove(&guid)
    }
}
