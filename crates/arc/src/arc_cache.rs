//! The Adaptive Replacement Cache proper (ZFS counterpart: arc.c, `arc_read`/`arc_evict`/
//! `arc_adapt`).
//!
//! Theory: the cache holds verified, decompressed blocks keyed by block identity. Like the
//! Megiddo/Modha ARC it splits residents into MRU (seen once) and MFU (seen again), remembers
//! recently evicted keys on two ghost lists, and steers an adaptive target `p` for the MRU side:
//! a miss that the MRU ghost remembers means MRU was too small, so `p` grows; one the MFU ghost
//! remembers means MFU was too small, so `p` shrinks. A one-pass scan only ever fills MRU and
//! its ghost, so it cannot push a re-read working set out of MFU — the reason ARC beats LRU.
//!
//! How it differs from the paper:
//! * Entries are byte-sized, not pages. The bound `c` (`size_bytes_max`) is on resident bytes;
//!   `p` moves by the size of the block that hit a ghost times the paper's ratio of ghost
//!   sizes (in bytes, at least 1). Eviction frees tail entries until the new one fits.
//! * Ghost lists are bounded by bytes, not entry counts: after every operation
//!   `mru + mru_ghost <= c` and `mru + mfu + mru_ghost + mfu_ghost <= 2c`, the byte forms of
//!   the paper's `|T1| + |B1| <= c` and `|T1| + |T2| + |B1| + |B2| <= 2c`.
//! * A lookup cannot fetch: `get` only reports hit or miss. The engine reads the block on a
//!   miss and calls `insert`, which is where a ghost hit is seen, `p` adapts, and the block
//!   goes straight to MFU (it was referenced before, as in the paper's cases II and III).
//! * `p` starts at 0 as in the paper (ZFS starts at c/2), and `c` is fixed by the caller
//!   (`set_size_bytes_max`) rather than shrunk by memory pressure.
//! * Entries larger than `c`, and zero-byte entries, are not cached: the first could never fit
//!   and the second would let the key count grow without a byte bound.
//! * Unlike ZFS there is no minimum residence time before MRU→MFU promotion, no per-header
//!   overhead accounting, and no separate data/metadata lists.
//!
//! Locking model: none; every method takes `&mut self` and is O(1) (amortised — the key map
//! is a `HashMap`, the lists are intrusive in an arena; see `arc_list`). Eviction loops run
//! once per evicted entry. `SharedArc` in `arc_shared` adds sharded locks for threads.

use std::collections::HashMap;
use std::hash::Hash;

use crate::arc_list::{ArcArena, ListKind, NodeIndex};
use crate::arc_stats::ArcStats;

/// Initial MRU target: 0, as in the paper. Every new key first lands in MRU anyway, and MRU
/// ghost hits raise `p` as soon as recency turns out to matter.
pub const TARGET_MRU_BYTES_INITIAL: u64 = 0;

/// Upper bound on the ghost-size ratio used to move `p` on one ghost hit, so a lone hit on a
/// nearly empty ghost list cannot swing `p` across the whole cache (arc.c caps it likewise).
pub const ADAPT_RATIO_MAX: u64 = 10;

/// An Adaptive Replacement Cache of values `V` keyed by `K`, bounded by bytes.
pub struct AdaptiveReplacementCache<K, V> {
    index: HashMap<K, NodeIndex>,
    arena: ArcArena<K, V>,
    /// "c": bound on resident bytes.
    size_bytes_max: u64,
    /// "p": target bytes for the MRU side.
    target_mru_bytes: u64,
    counters: Counters,
}

/// Cumulative counters (the list sizes come from the arena).
#[derive(Default)]
struct Counters {
    hits: u64,
    misses: u64,
    mru_hits: u64,
    mfu_hits: u64,
    mru_ghost_hits: u64,
    mfu_ghost_hits: u64,
    evictions: u64,
    inserts: u64,
}

impl<K: Hash + Eq + Clone, V: Clone> AdaptiveReplacementCache<K, V> {
    /// An empty cache holding at most `size_bytes_max` bytes of values.
    pub fn new(size_bytes_max: u64) -> Self {
        AdaptiveReplacementCache {
            index: HashMap::new(),
            arena: ArcArena::new(),
            size_bytes_max,
            target_mru_bytes: TARGET_MRU_BYTES_INITIAL,
            counters: Counters::default(),
        }
    }

    /// Looks up a resident value. A hit moves the entry to the head of MFU (from MRU this is
    /// the promotion that marks it as re-used). Ghosts and absent keys count as misses.
    pub fn get(&mut self, key: &K) -> Option<V> {
        let found = self
            .index
            .get(key)
            .copied()
            .map(|index| (index, self.arena.node(index).list));
        match found {
            Some((index, list)) if list.is_resident() => {
                self.counters.hits += 1;
                if list == ListKind::Mru {
                    self.counters.mru_hits += 1;
                } else {
                    self.counters.mfu_hits += 1;
                }
                let value = self.arena.node_mut(index).value.take();
                assert!(value.is_some(), "resident node has a value");
                self.arena.move_to_head(index, ListKind::Mfu, value);
                self.arena.node(index).value.clone()
            }
            _ => {
                self.counters.misses += 1;
                None
            }
        }
    }

    /// Caches `value` under `key`, charging `size_bytes`. If a ghost list remembers the key,
    /// `p` adapts and the value goes to MFU; a new key goes to MRU; a resident key has its
    /// value replaced in place. Entries are evicted until the cache fits. A value larger than
    /// the cache (or of zero bytes) is not cached, and any old value for the key is dropped so
    /// a stale block can never be returned.
    pub fn insert(&mut self, key: K, value: V, size_bytes: u64) {
        let previous = self
            .index
            .remove(&key)
            .map(|index| self.arena.remove(index));
        if size_bytes == 0 || size_bytes > self.size_bytes_max {
            self.check_bounds();
            return;
        }
        let (list, evict_mru_on_tie) = match &previous {
            None => (ListKind::Mru, false),
            Some(node) if node.list.is_resident() => (node.list, false),
            Some(node) => {
                self.adapt(node.list, node.size_bytes);
                (ListKind::Mfu, node.list == ListKind::MfuGhost)
            }
        };
        drop(previous);
        self.evict_to_fit(size_bytes, evict_mru_on_tie);
        let index = self
            .arena
            .push_head(list, key.clone(), Some(value), size_bytes);
        self.index.insert(key, index);
        self.counters.inserts += 1;
        self.trim_ghosts();
        self.check_bounds();
    }

    /// Drops `key` (its block was freed or rewritten). Returns the resident value, if any; a
    /// ghost is forgotten too, so a freed block leaves no adaptation history behind.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let index = self.index.remove(key)?;
        self.arena.remove(index).value
    }

    /// Drops every key `doomed` picks (resident or ghost), e.g. all blocks of a pool that
    /// went away. O(entries); returns how many went.
    pub fn remove_where(&mut self, mut doomed: impl FnMut(&K) -> bool) -> usize {
        let keys: Vec<K> = self.index.keys().filter(|k| doomed(k)).cloned().collect();
        for key in &keys {
            self.remove(key);
        }
        self.check_bounds();
        keys.len()
    }

    /// Changes the byte bound. Shrinking evicts at once until the cache and its ghosts fit.
    pub fn set_size_bytes_max(&mut self, size_bytes_max: u64) {
        self.size_bytes_max = size_bytes_max;
        self.target_mru_bytes = self.target_mru_bytes.min(size_bytes_max);
        self.evict_to_fit(0, false);
        self.trim_ghosts();
        self.check_bounds();
    }

    /// Drops every resident value and ghost and resets `p`. Counters are kept.
    pub fn clear(&mut self) {
        self.index.clear();
        self.arena.clear();
        self.target_mru_bytes = TARGET_MRU_BYTES_INITIAL;
    }

    /// A snapshot of sizes and counters.
    pub fn stats(&self) -> ArcStats {
        let mru = self.arena.list(ListKind::Mru);
        let mfu = self.arena.list(ListKind::Mfu);
        ArcStats {
            hits: self.counters.hits,
            misses: self.counters.misses,
            size_bytes: mru.bytes + mfu.bytes,
            size_bytes_max: self.size_bytes_max,
            c_min_bytes: 0,
            c_max_bytes: 0,
            target_mru_bytes: self.target_mru_bytes,
            mru_bytes: mru.bytes,
            mfu_bytes: mfu.bytes,
            mru_ghost_bytes: self.arena.list(ListKind::MruGhost).bytes,
            mfu_ghost_bytes: self.arena.list(ListKind::MfuGhost).bytes,
            mru_hits: self.counters.mru_hits,
            mfu_hits: self.counters.mfu_hits,
            mru_ghost_hits: self.counters.mru_ghost_hits,
            mfu_ghost_hits: self.counters.mfu_ghost_hits,
            evictions: self.counters.evictions,
            inserts: self.counters.inserts,
            entries: mru.count + mfu.count,
        }
    }

    /// Bytes of resident values.
    pub fn size_bytes(&self) -> u64 {
        self.arena.list(ListKind::Mru).bytes + self.arena.list(ListKind::Mfu).bytes
    }

    /// The byte bound ("c").
    pub fn size_bytes_max(&self) -> u64 {
        self.size_bytes_max
    }

    /// True if `key` is resident. Does not count as an access.
    pub fn contains(&self, key: &K) -> bool {
        self.index
            .get(key)
            .is_some_and(|&index| self.arena.node(index).list.is_resident())
    }

    /// Moves `p` after a ghost hit of `size_bytes` on `ghost` (the paper's delta, in bytes).
    /// The caller has already removed the ghost node, so its bytes are added back to the hit
    /// list's total: the ratio is taken over the lists as they were when the hit happened.
    fn adapt(&mut self, ghost: ListKind, size_bytes: u64) {
        let mru_ghost_bytes = self.arena.list(ListKind::MruGhost).bytes;
        let mfu_ghost_bytes = self.arena.list(ListKind::MfuGhost).bytes;
        match ghost {
            ListKind::MruGhost => {
                self.counters.mru_ghost_hits += 1;
                let ratio = ghost_ratio(mfu_ghost_bytes, mru_ghost_bytes + size_bytes);
                self.target_mru_bytes = self
                    .target_mru_bytes
                    .saturating_add(size_bytes.saturating_mul(ratio))
                    .min(self.size_bytes_max);
            }
            ListKind::MfuGhost => {
                self.counters.mfu_ghost_hits += 1;
                let ratio = ghost_ratio(mru_ghost_bytes, mfu_ghost_bytes + size_bytes);
                self.target_mru_bytes = self
                    .target_mru_bytes
                    .saturating_sub(size_bytes.saturating_mul(ratio));
            }
            ListKind::Mru | ListKind::Mfu => {
                panic!("adapt called for resident list {ghost:?}")
            }
        }
    }

    /// Evicts resident tails into their ghost lists until `incoming_bytes` more would fit
    /// under `c` (the paper's REPLACE, repeated per entry because entries differ in size).
    fn evict_to_fit(&mut self, incoming_bytes: u64, evict_mru_on_tie: bool) {
        while self.size_bytes() + incoming_bytes > self.size_bytes_max {
            let mru_bytes = self.arena.list(ListKind::Mru).bytes;
            let from_mru = mru_bytes > 0
                && (mru_bytes > self.target_mru_bytes
                    || (evict_mru_on_tie && mru_bytes == self.target_mru_bytes)
                    || self.arena.list(ListKind::Mfu).bytes == 0);
            let (list, ghost) = if from_mru {
                (ListKind::Mru, ListKind::MruGhost)
            } else {
                (ListKind::Mfu, ListKind::MfuGhost)
            };
            let Some(victim) = self.arena.tail(list) else {
                panic!("ARC invariant broken: over its bound with nothing resident to evict");
            };
            self.arena.move_to_head(victim, ghost, None);
            self.counters.evictions += 1;
        }
    }

    /// Forgets the oldest ghosts until `mru + mru_ghost <= c` and the total is `<= 2c`.
    fn trim_ghosts(&mut self) {
        let c = self.size_bytes_max;
        while self.arena.list(ListKind::Mru).bytes + self.arena.list(ListKind::MruGhost).bytes > c {
            if !self.drop_ghost_tail(ListKind::MruGhost) {
                break;
            }
        }
        while self.total_bytes() > c.saturating_mul(2) {
            if !self.drop_ghost_tail(ListKind::MfuGhost)
                && !self.drop_ghost_tail(ListKind::MruGhost)
            {
                break;
            }
        }
    }

    fn drop_ghost_tail(&mut self, ghost: ListKind) -> bool {
        let Some(index) = self.arena.tail(ghost) else {
            return false;
        };
        let node = self.arena.remove(index);
        let removed = self.index.remove(&node.key);
        assert_eq!(
            removed,
            Some(index),
            "key map points at the ghost being dropped"
        );
        true
    }

    fn total_bytes(&self) -> u64 {
        [
            ListKind::Mru,
            ListKind::Mfu,
            ListKind::MruGhost,
            ListKind::MfuGhost,
        ]
        .iter()
        .map(|&kind| self.arena.list(kind).bytes)
        .sum()
    }

    /// The byte bounds every public operation leaves behind. O(1), so always checked.
    fn check_bounds(&self) {
        let c = self.size_bytes_max;
        assert!(self.size_bytes() <= c, "resident bytes exceed c");
        assert!(
            self.arena.list(ListKind::Mru).bytes + self.arena.list(ListKind::MruGhost).bytes <= c,
            "mru + mru_ghost exceed c"
        );
        assert!(self.total_bytes() <= c.saturating_mul(2), "lists exceed 2c");
        assert!(self.target_mru_bytes <= c, "p exceeds c");
        assert_eq!(
            self.index.len() as u64,
            [
                ListKind::Mru,
                ListKind::Mfu,
                ListKind::MruGhost,
                ListKind::MfuGhost
            ]
            .iter()
            .map(|&kind| self.arena.list(kind).count)
            .sum::<u64>(),
            "every key maps to exactly one node"
        );
    }

    /// Full O(n) consistency check of lists and key map. Tests only.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        self.check_bounds();
        self.arena.check_invariants();
        for (key, &index) in &self.index {
            assert!(self.arena.node(index).key == *key, "key map and node agree");
        }
    }
}

impl<K, V> std::fmt::Debug for AdaptiveReplacementCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdaptiveReplacementCache")
            .field("size_bytes_max", &self.size_bytes_max)
            .field("target_mru_bytes", &self.target_mru_bytes)
            .field("keys", &self.index.len())
            .finish()
    }
}

/// The paper's `max(|other| / |hit|, 1)` in bytes, capped at `ADAPT_RATIO_MAX`.
fn ghost_ratio(other_ghost_bytes: u64, hit_ghost_bytes: u64) -> u64 {
    (other_ghost_bytes / hit_ghost_bytes.max(1)).clamp(1, ADAPT_RATIO_MAX)
}
