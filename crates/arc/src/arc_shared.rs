//! A thread-safe ARC made of independently locked shards (ZFS counterpart: arc.c's hash table
//! with per-bucket `hash_lock`s and its per-CPU `multilist` sublists).
//!
//! Theory: one ARC behind one lock makes every reader wait on every other, since even a hit
//! mutates the lists (MRU→MFU promotion). `SharedArc` hashes each key to one of N shards, each
//! a complete byte-bounded `AdaptiveReplacementCache` holding `c / N` bytes and adapting its
//! own `p`. The shards together keep the ARC invariants (each shard's lists obey the byte
//! bounds, so their sums do too) but adaptation and eviction are per shard: this is an
//! approximation of one global ARC, as ZFS's sublists are of its lists. The shard count is
//! fixed at creation and chosen so each shard holds at least `SHARD_SIZE_BYTES_MIN`, because a
//! block larger than its shard's bound is not cached.
//!
//! Locking model: one `std::sync::Mutex` per shard, held only for one O(1) cache operation;
//! no operation holds two shard locks at once except `stats`, `clear` and
//! `set_size_bytes_max`, which take them one at a time in index order. A shard whose lock was
//! poisoned (a panic while held) is cleared and reused: dropping cached blocks is always safe
//! for a cache, and it cannot serve a half-updated entry.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::{Mutex, MutexGuard};

use crate::arc_cache::AdaptiveReplacementCache;
use crate::arc_stats::ArcStats;

/// Most shards a `SharedArc` splits into (enough for far more threads than we run with).
pub const SHARD_COUNT_MAX: usize = 16;

/// Smallest share of the byte bound given to each shard when `SharedArc::new` picks the
/// shard count: large enough that a shard holds many 1 MiB (largest record size) blocks.
pub const SHARD_SIZE_BYTES_MIN: u64 = 64 << 20;

/// A sharded, lock-protected ARC usable from many threads through `&self`.
pub struct SharedArc<K, V> {
    shards: Box<[Mutex<AdaptiveReplacementCache<K, V>>]>,
    hasher: RandomState,
}

impl<K: Hash + Eq + Clone, V: Clone> SharedArc<K, V> {
    /// A cache bounded by `size_bytes_max`, with as many shards (up to `SHARD_COUNT_MAX`) as
    /// keep each at least `SHARD_SIZE_BYTES_MIN`; small caches get one shard, i.e. one exact ARC.
    pub fn new(size_bytes_max: u64) -> Self {
        let shard_count = (size_bytes_max / SHARD_SIZE_BYTES_MIN).clamp(1, SHARD_COUNT_MAX as u64);
        // `shard_count` is at most SHARD_COUNT_MAX, so it fits a usize.
        Self::with_shard_count(size_bytes_max, shard_count as usize)
    }

    /// A cache bounded by `size_bytes_max` split over `shard_count` shards (clamped to
    /// `1..=SHARD_COUNT_MAX`).
    pub fn with_shard_count(size_bytes_max: u64, shard_count: usize) -> Self {
        let shard_count = shard_count.clamp(1, SHARD_COUNT_MAX);
        let shards = (0..shard_count)
            .map(|shard| {
                let share = shard_share_bytes(size_bytes_max, shard_count, shard);
                Mutex::new(AdaptiveReplacementCache::new(share))
            })
            .collect();
        SharedArc {
            shards,
            hasher: RandomState::new(),
        }
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// See `AdaptiveReplacementCache::get`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.shard_for(key).get(key)
    }

    /// See `AdaptiveReplacementCache::insert`. The size limit is the key's shard's bound.
    pub fn insert(&self, key: K, value: V, size_bytes: u64) {
        self.shard_for(&key).insert(key, value, size_bytes)
    }

    /// See `AdaptiveReplacementCache::remove`.
    pub fn remove(&self, key: &K) -> Option<V> {
        self.shard_for(key).remove(key)
    }

    /// Re-divides a new bound over the shards; shrinking evicts at once.
    pub fn set_size_bytes_max(&self, size_bytes_max: u64) {
        let shard_count = self.shards.len();
        for (shard, lock) in self.shards.iter().enumerate() {
            let share = shard_share_bytes(size_bytes_max, shard_count, shard);
            lock_shard(lock).set_size_bytes_max(share);
        }
    }

    /// Drops every key `doomed` picks, shard by shard. Returns how many went.
    pub fn remove_where(&self, doomed: impl Fn(&K) -> bool) -> usize {
        self.shards
            .iter()
            .map(|lock| lock_shard(lock).remove_where(&doomed))
            .sum()
    }

    /// Drops every entry in every shard; counters are kept.
    pub fn clear(&self) {
        for lock in self.shards.iter() {
            lock_shard(lock).clear();
        }
    }

    /// The sum of the shards' counters. Shards are read one after another, so under
    /// concurrent use the total is a near-snapshot, not an atomic one.
    pub fn stats(&self) -> ArcStats {
        let mut total = ArcStats::default();
        for lock in self.shards.iter() {
            total.accumulate(&lock_shard(lock).stats());
        }
        total
    }

    fn shard_for(&self, key: &K) -> MutexGuard<'_, AdaptiveReplacementCache<K, V>> {
        // The shard count is at most SHARD_COUNT_MAX, so the cast and modulo stay in range.
        let shard = (self.hasher.hash_one(key) % self.shards.len() as u64) as usize;
        lock_shard(&self.shards[shard])
    }
}

impl<K, V> std::fmt::Debug for SharedArc<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedArc")
            .field("shard_count", &self.shards.len())
            .finish()
    }
}

/// Shard `shard`'s part of `size_bytes_max`; the remainder goes to shard 0 so the parts sum
/// exactly to the whole.
fn shard_share_bytes(size_bytes_max: u64, shard_count: usize, shard: usize) -> u64 {
    let count = shard_count as u64;
    let share = size_bytes_max / count;
    if shard == 0 {
        share + size_bytes_max % count
    } else {
        share
    }
}

/// Locks a shard; a poisoned shard is cleared (forgetting cached blocks is always safe) and
/// its poison flag reset, so one panicking thread does not disable the cache.
fn lock_shard<K: Hash + Eq + Clone, V: Clone>(
    lock: &Mutex<AdaptiveReplacementCache<K, V>>,
) -> MutexGuard<'_, AdaptiveReplacementCache<K, V>> {
    match lock.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            guard.clear();
            lock.clear_poison();
            guard
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Block size the concurrency test caches.
    const BLOCK_SIZE_BYTES: u64 = 4096;

    // Exists because the engine shares one cache between threads: the type must be
    // Send + Sync for the value types it will use.
    #[test]
    fn shared_arc_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SharedArc<(u64, u64, u64), Arc<[u8]>>>();
    }

    // Exists to show the shard shares add up to the requested bound, before and after a
    // resize, so sharding never silently changes c.
    #[test]
    fn shard_shares_sum_to_bound() {
        let cache: SharedArc<u64, u64> = SharedArc::with_shard_count(1_000_003, 7);
        assert_eq!(cache.shard_count(), 7);
        assert_eq!(cache.stats().size_bytes_max, 1_000_003);
        cache.set_size_bytes_max(999);
        assert_eq!(cache.stats().size_bytes_max, 999);
        let small: SharedArc<u64, u64> = SharedArc::new(1 << 20);
        assert_eq!(small.shard_count(), 1, "small caches are one exact ARC");
    }

    /// Hash calls left before `PanickyKey` panics; 0 means never.
    static PANIC_AFTER_HASHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// A key whose `Hash` can be armed to panic, to poison a shard lock from inside.
    #[derive(Clone, PartialEq, Eq)]
    struct PanickyKey(u64);

    impl Hash for PanickyKey {
        fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
            use std::sync::atomic::Ordering;
            let left = PANIC_AFTER_HASHES.load(Ordering::SeqCst);
            if left > 0 {
                PANIC_AFTER_HASHES.store(left - 1, Ordering::SeqCst);
                assert!(
                    left != 1,
                    "armed PanickyKey panics while the shard is locked"
                );
            }
            self.0.hash(state);
        }
    }

    // Exists for the poison path: a panic while a shard is locked (here from a key's Hash, the
    // second hash being the one inside the lock) must not make the cache unusable; the shard
    // is cleared and serves again.
    #[test]
    fn poisoned_shard_is_cleared_and_reused() {
        let cache: Arc<SharedArc<PanickyKey, u64>> = Arc::new(SharedArc::new(1 << 20));
        cache.insert(PanickyKey(1), 10, 100);
        let worker = Arc::clone(&cache);
        PANIC_AFTER_HASHES.store(2, std::sync::atomic::Ordering::SeqCst);
        let outcome = std::thread::spawn(move || worker.insert(PanickyKey(2), 20, 100)).join();
        assert!(outcome.is_err(), "the armed insert panicked");
        assert_eq!(
            cache.get(&PanickyKey(1)),
            None,
            "poisoned shard was cleared"
        );
        cache.insert(PanickyKey(3), 30, 100);
        assert_eq!(cache.get(&PanickyKey(3)), Some(30));
    }

    // Concurrency smoke test: several threads insert, get and remove overlapping keys. Any
    // broken bound trips the assertions inside the shards; afterwards the totals must add
    // up and the resident bytes must be within the bound.
    #[test]
    fn shared_arc_concurrent_smoke() {
        const THREAD_COUNT: u64 = 4;
        const OPERATION_COUNT: u64 = 20_000;
        const KEY_COUNT: u64 = 512;
        let size_bytes_max = 64 * BLOCK_SIZE_BYTES;
        let cache: Arc<SharedArc<u64, Arc<[u8]>>> =
            Arc::new(SharedArc::with_shard_count(size_bytes_max, 4));
        let handles: Vec<_> = (0..THREAD_COUNT)
            .map(|thread| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    let mut gets = 0u64;
                    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ thread;
                    for _ in 0..OPERATION_COUNT {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let key = state % KEY_COUNT;
                        match state >> 60 {
                            0 => {
                                cache.remove(&key);
                            }
                            1..=5 => {
                                let block: Arc<[u8]> = Arc::from(vec![key as u8; 16]);
                                cache.insert(key, block, BLOCK_SIZE_BYTES);
                            }
                            _ => {
                                gets += 1;
                                if let Some(block) = cache.get(&key) {
                                    assert_eq!(block[0], key as u8, "value belongs to its key");
                                }
                            }
                        }
                    }
                    gets
                })
            })
            .collect();
        let mut gets = 0;
        for handle in handles {
            gets += handle.join().expect("worker thread panicked");
        }
        let stats = cache.stats();
        assert_eq!(stats.hits + stats.misses, gets);
        assert!(stats.size_bytes <= size_bytes_max);
        assert_eq!(stats.size_bytes, stats.entries * BLOCK_SIZE_BYTES);
        assert!(stats.hits > 0 && stats.misses > 0);
    }
}
