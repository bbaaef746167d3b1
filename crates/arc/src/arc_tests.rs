//! Behavioural tests of `AdaptiveReplacementCache`: the ARC properties the engine relies on
//! (scan resistance, byte bounds under random operations, adaptation of `p`, shrinking,
//! counters). Randomised tests use a seeded xorshift generator, so a failing seed reproduces.
//!
//! Locking model: single-threaded; `arc_shared` tests cover threads.

use std::collections::{HashMap, VecDeque};

use crate::{AdaptiveReplacementCache, KSTAT_DATA_UINT64};

/// Size of a typical cached block in these tests.
const BLOCK_SIZE_BYTES: u64 = 4096;

/// Seeds the random-operation property test runs.
const PROPERTY_SEED_COUNT: u64 = 64;

/// Operations per seed in the property test.
const PROPERTY_OPERATION_COUNT: u64 = 3000;

/// Seeded xorshift64 generator: deterministic, no dependency.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform-ish in `0..bound` (`bound > 0`).
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// Reads a key the way the engine does: `get`, and on a miss "read the block" and `insert`.
/// Returns true on a hit.
fn read_through(cache: &mut AdaptiveReplacementCache<u64, u64>, key: u64) -> bool {
    if cache.get(&key).is_some() {
        return true;
    }
    cache.insert(key, key * 10, BLOCK_SIZE_BYTES);
    false
}

/// A plain LRU of the same byte bound, as the baseline ARC is meant to beat. O(n); tests only.
struct LruBaseline {
    keys: VecDeque<u64>,
    capacity_blocks: usize,
}

impl LruBaseline {
    fn read(&mut self, key: u64) -> bool {
        let hit = match self.keys.iter().position(|&k| k == key) {
            Some(position) => {
                self.keys.remove(position);
                true
            }
            None => false,
        };
        self.keys.push_front(key);
        self.keys.truncate(self.capacity_blocks);
        hit
    }
}

// Exists for the reason ARC is used at all: a long scan of blocks read once (a `zfs send`, a
// backup, a scrub-like sweep) must not evict a working set that is re-read, while an LRU of
// the same size loses it.
#[test]
fn scan_does_not_evict_frequent_working_set() {
    const CACHE_BLOCKS: u64 = 64;
    const WORKING_SET_KEYS: u64 = 40;
    const SCAN_KEYS: u64 = 5000;
    const SCAN_KEYS_PER_WORKING_TOUCH: u64 = 10;
    let mut cache = AdaptiveReplacementCache::new(CACHE_BLOCKS * BLOCK_SIZE_BYTES);
    let mut lru = LruBaseline {
        keys: VecDeque::new(),
        capacity_blocks: CACHE_BLOCKS as usize,
    };
    // Warm: read the working set twice so it is "frequently used".
    for _ in 0..2 {
        for key in 0..WORKING_SET_KEYS {
            read_through(&mut cache, key);
            lru.read(key);
        }
    }
    // Scan distinct keys once each, touching one working-set key now and then.
    let (mut arc_working_hits, mut lru_working_hits, mut touches) = (0u64, 0u64, 0u64);
    for offset in 0..SCAN_KEYS {
        let scan_key = 1_000_000 + offset;
        read_through(&mut cache, scan_key);
        lru.read(scan_key);
        if offset % SCAN_KEYS_PER_WORKING_TOUCH == 0 {
            let key = touches % WORKING_SET_KEYS;
            touches += 1;
            arc_working_hits += u64::from(read_through(&mut cache, key));
            lru_working_hits += u64::from(lru.read(key));
        }
    }
    assert_eq!(arc_working_hits, touches, "ARC kept the whole working set");
    for key in 0..WORKING_SET_KEYS {
        assert!(
            cache.contains(&key),
            "working-set key {key} survived the scan"
        );
    }
    assert!(
        lru_working_hits < touches / 2,
        "the LRU baseline loses the working set ({lru_working_hits}/{touches} hits)"
    );
    let stats = cache.stats();
    assert!(stats.size_bytes <= stats.size_bytes_max);
    assert!(stats.evictions > 0, "the scan did force evictions");
}

// Property test: after any sequence of random gets, inserts (of random sizes, some larger than
// the cache, some zero), removes, resizes and clears, the byte bounds hold, the lists are
// consistent, and `get` never returns a value other than the latest one inserted for the key.
#[test]
fn random_operations_keep_bounds_and_never_return_stale_values() {
    const KEY_COUNT: u64 = 200;
    let (mut ghost_hits_mru, mut ghost_hits_mfu, mut evictions) = (0u64, 0u64, 0u64);
    for seed in 0..PROPERTY_SEED_COUNT {
        let mut random = XorShift::new(seed);
        let mut size_bytes_max = 1000 + random.below(50_000);
        let mut cache: AdaptiveReplacementCache<u64, (u64, u64)> =
            AdaptiveReplacementCache::new(size_bytes_max);
        let mut latest: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut gets = 0u64;
        for step in 0..PROPERTY_OPERATION_COUNT {
            let key = random.below(KEY_COUNT);
            match random.below(100) {
                0..=44 => {
                    gets += 1;
                    if let Some(value) = cache.get(&key) {
                        assert_eq!(Some(&value), latest.get(&key), "seed {seed} step {step}");
                    }
                }
                45..=84 => {
                    // Mostly small blocks, sometimes up to 1.25 × the cache.
                    let size_bytes = if random.below(10) == 0 {
                        random.below(size_bytes_max + size_bytes_max / 4 + 1)
                    } else {
                        random.below(size_bytes_max / 8 + 1)
                    };
                    let value = (key, step);
                    cache.insert(key, value, size_bytes);
                    latest.insert(key, value);
                }
                85..=94 => {
                    let removed = cache.remove(&key);
                    let expected = latest.remove(&key);
                    if let Some(value) = removed {
                        assert_eq!(Some(value), expected, "seed {seed} step {step}");
                    }
                }
                95..=98 => {
                    size_bytes_max = random.below(60_000);
                    cache.set_size_bytes_max(size_bytes_max);
                }
                _ => {
                    cache.clear();
                    latest.clear();
                }
            }
            cache.check_invariants();
            let stats = cache.stats();
            assert!(
                stats.size_bytes <= stats.size_bytes_max,
                "seed {seed} step {step}"
            );
            assert!(stats.mru_bytes + stats.mru_ghost_bytes <= stats.size_bytes_max);
            assert!(
                stats.size_bytes + stats.mru_ghost_bytes + stats.mfu_ghost_bytes
                    <= 2 * stats.size_bytes_max
            );
            assert!(stats.target_mru_bytes <= stats.size_bytes_max);
        }
        let stats = cache.stats();
        assert_eq!(stats.hits + stats.misses, gets, "seed {seed}");
        assert_eq!(stats.mru_hits + stats.mfu_hits, stats.hits, "seed {seed}");
        ghost_hits_mru += stats.mru_ghost_hits;
        ghost_hits_mfu += stats.mfu_ghost_hits;
        evictions += stats.evictions;
    }
    // Coverage: the random runs did reach eviction and both kinds of ghost hit.
    assert!(ghost_hits_mru > 0 && ghost_hits_mfu > 0 && evictions > 0);
}

// Exists to pin the adaptation direction: re-reading a key the MRU ghost remembers means
// recency was starved, so p must grow; re-reading one the MFU ghost remembers means frequency
// was starved, so p must shrink. Swapping the two would make ARC adapt the wrong way.
#[test]
fn ghost_hits_move_target_mru_in_the_right_direction() {
    let mut cache = AdaptiveReplacementCache::new(4 * BLOCK_SIZE_BYTES);
    // Keys 0 and 1 read twice (MFU), keys 2 and 3 once (MRU): the cache is full.
    for key in [0, 1, 0, 1, 2, 3] {
        read_through(&mut cache, key);
    }
    // Key 4 evicts the MRU tail, key 2, into the MRU ghost (p = 0 favours evicting MRU).
    read_through(&mut cache, 4);
    assert!(!cache.contains(&2));
    let before = cache.stats();
    assert_eq!(before.target_mru_bytes, 0);
    assert_eq!(before.mru_ghost_bytes, BLOCK_SIZE_BYTES);
    read_through(&mut cache, 2);
    let after_mru_ghost_hit = cache.stats();
    assert_eq!(after_mru_ghost_hit.mru_ghost_hits, 1);
    assert!(after_mru_ghost_hit.target_mru_bytes > before.target_mru_bytes);
    assert_eq!(
        after_mru_ghost_hit.mfu_bytes,
        3 * BLOCK_SIZE_BYTES,
        "a ghost hit enters MFU"
    );

    // With MRU now at its target, a new key evicts from MFU into the MFU ghost.
    read_through(&mut cache, 100);
    let with_mfu_ghost = cache.stats();
    assert_eq!(with_mfu_ghost.mfu_ghost_bytes, BLOCK_SIZE_BYTES);
    let mfu_ghost_key = [0, 1, 2]
        .into_iter()
        .find(|key| !cache.contains(key))
        .expect("one MFU entry was evicted");
    read_through(&mut cache, mfu_ghost_key);
    let after_mfu_ghost_hit = cache.stats();
    assert_eq!(after_mfu_ghost_hit.mfu_ghost_hits, 1);
    assert!(after_mfu_ghost_hit.target_mru_bytes < with_mfu_ghost.target_mru_bytes);
    cache.check_invariants();
}

// Exists because the engine shrinks the cache under memory pressure and expects the memory
// back at once, not at the next insert; ghosts must shrink with it.
#[test]
fn shrinking_size_bytes_max_evicts_immediately() {
    let mut cache = AdaptiveReplacementCache::new(32 * BLOCK_SIZE_BYTES);
    for key in 0..32 {
        read_through(&mut cache, key);
    }
    for key in 0..8 {
        cache.get(&key);
    }
    assert_eq!(cache.stats().size_bytes, 32 * BLOCK_SIZE_BYTES);
    cache.set_size_bytes_max(4 * BLOCK_SIZE_BYTES);
    let stats = cache.stats();
    assert!(stats.size_bytes <= 4 * BLOCK_SIZE_BYTES);
    assert_eq!(stats.evictions, 28);
    assert!(
        stats.size_bytes + stats.mru_ghost_bytes + stats.mfu_ghost_bytes <= 8 * BLOCK_SIZE_BYTES
    );
    cache.check_invariants();
    cache.set_size_bytes_max(0);
    assert_eq!(cache.stats().size_bytes, 0);
    assert_eq!(cache.stats().entries, 0);
}

// Exists so the counters can be trusted by arcstat-like tools: every get is a hit or a miss,
// hits split into MRU and MFU hits, and entries/size match what was inserted.
#[test]
fn stats_counters_add_up() {
    let mut cache = AdaptiveReplacementCache::new(16 * BLOCK_SIZE_BYTES);
    let mut gets = 0;
    for round in 0..3 {
        for key in 0..8 {
            gets += 1;
            if cache.get(&key).is_none() {
                cache.insert(key, key + round, BLOCK_SIZE_BYTES);
            }
        }
    }
    let stats = cache.stats();
    assert_eq!(stats.hits + stats.misses, gets);
    assert_eq!(stats.misses, 8);
    assert_eq!(stats.hits, 16);
    assert_eq!(stats.mru_hits, 8, "second round promotes from MRU");
    assert_eq!(stats.mfu_hits, 8, "third round hits MFU");
    assert_eq!(stats.inserts, 8);
    assert_eq!(stats.entries, 8);
    assert_eq!(stats.size_bytes, stats.mru_bytes + stats.mfu_bytes);
    assert_eq!(stats.size_bytes, 8 * BLOCK_SIZE_BYTES);
    assert_eq!(stats.evictions, 0);
}

// Exists because tools read the cache through kstat text: a live cache's text must carry
// hits, misses, size and c_max with its real values.
#[test]
fn cache_kstat_text_reports_live_counters() {
    let mut cache = AdaptiveReplacementCache::new(8 * BLOCK_SIZE_BYTES);
    read_through(&mut cache, 1);
    read_through(&mut cache, 1);
    let text = cache.stats().to_kstat_text();
    let line = |name: &str, value: u64| format!("{name} {KSTAT_DATA_UINT64} {value}");
    let normalised: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for expected in [
        line("hits", 1),
        line("misses", 1),
        line("size", BLOCK_SIZE_BYTES),
        line("c_max", 8 * BLOCK_SIZE_BYTES),
    ] {
        assert!(
            normalised.contains(&expected),
            "missing {expected:?} in\n{text}"
        );
    }
}

// Exists because a block larger than the whole cache can never fit: it must be refused without
// evicting anything, and an older cached value for the same key must not survive to be served
// stale (the block was rewritten). Zero-byte entries are refused so the key count stays bounded.
#[test]
fn oversize_and_zero_size_entries_are_not_cached() {
    let mut cache = AdaptiveReplacementCache::new(4 * BLOCK_SIZE_BYTES);
    cache.insert(1, 10, BLOCK_SIZE_BYTES);
    cache.insert(2, 20, BLOCK_SIZE_BYTES);
    cache.insert(1, 11, 5 * BLOCK_SIZE_BYTES);
    assert_eq!(cache.get(&1), None, "old value dropped, new one too large");
    assert_eq!(cache.get(&2), Some(20), "nothing else evicted");
    cache.insert(3, 30, 0);
    assert!(!cache.contains(&3));
    assert_eq!(cache.stats().inserts, 2);
    cache.check_invariants();
}

// Exists because the engine calls `remove` when a block is freed or rewritten: the value must
// come back once, then be gone, and re-inserting after a removal is a fresh (MRU) entry rather
// than a ghost hit.
#[test]
fn remove_drops_resident_and_ghost_entries() {
    let mut cache = AdaptiveReplacementCache::new(2 * BLOCK_SIZE_BYTES);
    for key in 0..3 {
        read_through(&mut cache, key);
    }
    assert_eq!(cache.remove(&2), Some(20));
    assert_eq!(cache.remove(&2), None);
    // Key 0 is a ghost now; removing it forgets it, so re-reading is not a ghost hit.
    assert_eq!(cache.remove(&0), None);
    read_through(&mut cache, 0);
    let stats = cache.stats();
    assert_eq!(stats.mru_ghost_hits + stats.mfu_ghost_hits, 0);
    assert_eq!(stats.entries, 2);
    cache.check_invariants();
}

// Exists to pin that re-inserting a resident key replaces its value and size in place (a
// rewritten block under the same identity) without double-counting bytes.
#[test]
fn insert_of_resident_key_replaces_value_and_size() {
    let mut cache = AdaptiveReplacementCache::new(4 * BLOCK_SIZE_BYTES);
    cache.insert(7, 70, BLOCK_SIZE_BYTES);
    cache.insert(7, 71, 2 * BLOCK_SIZE_BYTES);
    assert_eq!(cache.get(&7), Some(71));
    let stats = cache.stats();
    assert_eq!(stats.entries, 1);
    assert_eq!(stats.size_bytes, 2 * BLOCK_SIZE_BYTES);
    cache.check_invariants();
}

// Why: the daemon's pools share one ARC (issue 21 item 8); an exported pool's blocks must
// leave it, resident and ghost alike, without disturbing the other pools' entries.
#[test]
fn remove_where_drops_only_the_chosen_keys() {
    let cache = crate::SharedArc::<(u64, u64), u64>::with_shard_count(1 << 20, 4);
    for key in 0..200u64 {
        cache.insert((key % 2, key), key, 1024);
    }
    let before = cache.stats().size_bytes;
    assert_eq!(cache.remove_where(|(pool, _)| *pool == 1), 100);
    assert_eq!(cache.stats().size_bytes, before - 100 * 1024);
    for key in 0..200u64 {
        let found = cache.get(&(key % 2, key));
        assert_eq!(found, (key % 2 == 0).then_some(key), "key {key}");
    }
}
