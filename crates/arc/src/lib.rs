//! zetta-arc: the Adaptive Replacement Cache that keeps verified, decompressed blocks in memory
//! (ZFS counterpart: module/zfs/arc.c).
//!
//! Theory: ARC (Megiddo and Modha, FAST 2003) balances a recency list (MRU) against a frequency
//! list (MFU), learning the balance from two ghost lists of recently evicted keys. Ours differs
//! from the paper as ZFS's does: entries are byte-sized blocks rather than pages, the bound and
//! the adaptive MRU target `p` are in bytes, and the ghost lists are bounded by the bytes of the
//! keys they remember (`mru + mru_ghost <= c`, all four lists `<= 2c`). Keys are generic; the
//! engine uses a block's identity (vdev, offset, birth txg) or its checksum.
//!
//! Reading order: `arc_list` (arena and intrusive O(1) lists), `arc_cache` (the replacement
//! policy, single-threaded, `&mut self`), `arc_shared` (sharded mutexes for threads),
//! `arc_stats` (counters and arcstats-style kstat text).
//!
//! Locking model: `AdaptiveReplacementCache` has none; `SharedArc` holds one mutex per shard
//! for the duration of a single O(1) operation.

mod arc_cache;
mod arc_list;
mod arc_shared;
mod arc_stats;

#[cfg(test)]
mod arc_tests;

pub use arc_cache::{AdaptiveReplacementCache, ADAPT_RATIO_MAX, TARGET_MRU_BYTES_INITIAL};
pub use arc_shared::{SharedArc, SHARD_COUNT_MAX, SHARD_SIZE_BYTES_MIN};
pub use arc_stats::{ArcStats, KSTAT_DATA_UINT64};
