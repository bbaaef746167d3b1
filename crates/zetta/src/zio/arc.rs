//! The ARC a pool reads through: its own, or the one its process shares among all its pools
//! (OpenZFS has one ARC per kernel, bounded by `zfs_arc_max`, whatever the number of pools).
//!
//! A process that holds many pools (the daemon) calls `share_process_wide` once, before it
//! opens any: every pool opened after that caches in the same byte-bounded `SharedArc`, so
//! memory for cached blocks is bounded for the process, not per pool (128 pools with a
//! 64 MiB ARC each were 8 GiB of cache). A process that never calls it (one command, a test,
//! an embedder) gives each pool its own ARC of the size it asks for, as before.
//!
//! Invariant: a key carries the pool instance it was cached by (`PoolArc::instance`, unique
//! per opened `Zio` in this process), so one pool never reads another's block, and a pool
//! exported and imported again (perhaps changed meanwhile by another process) never reads
//! what its earlier instance cached. A pool's entries leave the shared cache with it (`Drop`),
//! so an exported pool leaves no dead weight in the others' cache.

use super::BlockKey;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use zetta_arc::{ArcStats, SharedArc};

/// A cached block: its verified logical bytes.
pub type CachedBlock = Arc<Vec<u8>>;

/// The cache itself, keyed by (pool instance, block).
pub type BlockCache = SharedArc<(u64, BlockKey), CachedBlock>;

static PROCESS_ARC: OnceLock<Arc<BlockCache>> = OnceLock::new();

/// Makes one ARC of `size_bytes_max` the cache of every pool this process opens from now
/// on. Returns false (and changes nothing) when a process-wide ARC exists already.
pub fn share_process_wide(size_bytes_max: u64) -> bool {
    PROCESS_ARC
        .set(Arc::new(BlockCache::new(size_bytes_max)))
        .is_ok()
}

/// Bounds the process-wide ARC at `size_bytes_max` (its `arc_c`); shrinking evicts at
/// once. Returns false when this process has no process-wide ARC.
pub fn resize_process_wide(size_bytes_max: u64) -> bool {
    match PROCESS_ARC.get() {
        Some(cache) => {
            cache.set_size_bytes_max(size_bytes_max);
            true
        }
        None => false,
    }
}

/// The process-wide ARC's counters, when there is one.
pub fn process_wide_stats() -> Option<ArcStats> {
    PROCESS_ARC.get().map(|cache| cache.stats())
}

/// One pool's view of its ARC.
pub struct PoolArc {
    cache: Arc<BlockCache>,
    instance: u64,
}

impl PoolArc {
    /// The process-wide ARC when there is one, else a cache of `size_bytes_max` of its own.
    pub fn new(size_bytes_max: u64) -> PoolArc {
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let cache = match PROCESS_ARC.get() {
            Some(shared) => shared.clone(),
            None => Arc::new(BlockCache::new(size_bytes_max)),
        };
        PoolArc {
            cache,
            instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Whether this pool caches in the process-wide ARC.
    pub fn is_shared(&self) -> bool {
        PROCESS_ARC
            .get()
            .is_some_and(|shared| Arc::ptr_eq(shared, &self.cache))
    }

    pub fn get(&self, key: &BlockKey) -> Option<CachedBlock> {
        self.cache.get(&(self.instance, *key))
    }

    pub fn insert(&self, key: BlockKey, block: CachedBlock, size_bytes: u64) {
        self.cache.insert((self.instance, key), block, size_bytes)
    }

    pub fn remove(&self, key: &BlockKey) -> Option<CachedBlock> {
        self.cache.remove(&(self.instance, *key))
    }

    /// The counters of the cache this pool uses (all pools' when it is shared).
    pub fn stats(&self) -> ArcStats {
        self.cache.stats()
    }

    /// Drops every cached block (every pool's when the cache is shared).
    pub fn clear(&self) {
        self.cache.clear()
    }
}

impl Drop for PoolArc {
    fn drop(&mut self) {
        if Arc::strong_count(&self.cache) > 1 {
            let instance = self.instance;
            self.cache.remove_where(|(owner, _)| *owner == instance);
        }
    }
}

impl std::fmt::Debug for PoolArc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolArc")
            .field("instance", &self.instance)
            .field("shared", &self.is_shared())
            .finish()
    }
}
