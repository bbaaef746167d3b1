//! The dirty-data budget (OpenZFS `zfs_dirty_data_max` and `dp_dirty_total` in
//! `dsl_pool.c`): how much changed data may wait in memory for its txg to commit.
//!
//! Each pool commits at `DIRTY_BYTES_MAX` of its own. A process that holds many pools (the
//! daemon) also calls `share_process_wide` once: from then on the pools add what they hold
//! to one total, and a pool whose change finds the total at or past the budget commits
//! (once it holds `DIRTY_BYTES_COMMIT_MIN`; below that a commit frees too little to be worth
//! a txg, and the txg timer commits it within seconds). The memory waiting for commits is
//! then bounded for the process, about the budget plus `DIRTY_BYTES_COMMIT_MIN` per pool
//! writing at the same moment, rather than `DIRTY_BYTES_MAX` per pool (16 GiB for 128
//! pools).
//!
//! Invariant: the total is the sum of every live pool's last published `dirty_bytes`; each
//! pool publishes by difference (`DirtyShare::publish`) and takes its part back when it is
//! dropped, so a pool that is exported never leaves its bytes counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A pool past the process-wide budget commits once it holds this much.
pub const DIRTY_BYTES_COMMIT_MIN: u64 = 1 << 20;

struct Budget {
    total_bytes: AtomicU64,
    max_bytes: u64,
}

static PROCESS_BUDGET: OnceLock<Budget> = OnceLock::new();

/// Makes `max_bytes` the dirty-data budget of all pools of this process together. Returns
/// false (and changes nothing) when there is one already.
pub fn share_process_wide(max_bytes: u64) -> bool {
    PROCESS_BUDGET
        .set(Budget {
            total_bytes: AtomicU64::new(0),
            max_bytes,
        })
        .is_ok()
}

/// Dirty bytes of all pools of this process, when they share a budget.
pub fn process_wide_dirty_bytes() -> Option<u64> {
    PROCESS_BUDGET
        .get()
        .map(|budget| budget.total_bytes.load(Ordering::Relaxed))
}

/// One pool's part of the process-wide total.
#[derive(Debug, Default)]
pub struct DirtyShare {
    published_bytes: u64,
}

impl DirtyShare {
    /// Makes the pool's part of the total `dirty_bytes`; returns whether the pool should
    /// commit for the process-wide budget's sake.
    pub fn publish(&mut self, dirty_bytes: u64) -> bool {
        let Some(budget) = PROCESS_BUDGET.get() else {
            return false;
        };
        let total = if dirty_bytes >= self.published_bytes {
            let added = dirty_bytes - self.published_bytes;
            budget.total_bytes.fetch_add(added, Ordering::Relaxed) + added
        } else {
            let removed = self.published_bytes - dirty_bytes;
            budget
                .total_bytes
                .fetch_sub(removed, Ordering::Relaxed)
                .saturating_sub(removed)
        };
        self.published_bytes = dirty_bytes;
        total >= budget.max_bytes && dirty_bytes >= DIRTY_BYTES_COMMIT_MIN
    }
}

impl Drop for DirtyShare {
    fn drop(&mut self) {
        self.publish(0);
    }
}
