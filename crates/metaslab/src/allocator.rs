//! The allocation class: spreads blocks over the top-level vdevs of the normal (or log) class
//! (ZFS counterpart: `metaslab_class_t`, `metaslab_alloc`, `metaslab_free` and the defer logic
//! of `metaslab_sync_done` in metaslab.c).
//!
//! Choosing a vdev: a deterministic stride scheduler. Each group carries a credit; every
//! allocation of `copies` blocks adds `copies * group_free / total_free` to each group's credit,
//! and each copy goes to the group with the highest credit (preferring groups this block does
//! not use yet), which then pays 1. Over many blocks the bytes written to each vdev are in
//! proportion to its free space, so vdevs of 10G and 2G fill at 5:1 and become full together,
//! and a vdev added to a half-full pool takes the larger share of the new writes. A group that
//! cannot fit a block is skipped; credits are clamped to ±[`ALLOCATION_CREDIT_LIMIT`] so a
//! skipped group does not hoard them.
//!
//! Freeing: a block freed in txg `t` becomes allocatable after txg `t + 2` committed (the last
//! uberblocks may still point at it), unless it was allocated in that same txg `t`; recorded
//! frees go to the space map at once.
//!
//! Invariants: no range is ever handed out twice; a free of a range that is not allocated is an
//! error; a failed allocation leaves no trace (partial copies are rolled back).

use std::collections::BTreeMap;

use crate::space_map::SpaceMapUpdate;
use crate::{MetaslabError, MetaslabGroup};

/// Most copies (DVAs) of one block.
pub const COPIES_MAX: usize = 3;
/// Bound of each group's scheduler credit, in blocks.
pub const ALLOCATION_CREDIT_LIMIT: f64 = 8.0;
/// A free in txg `t` is released when txg `t + FREE_DEFER_TXG_COUNT` has committed.
pub const FREE_DEFER_TXG_COUNT: u64 = 2;

#[derive(Debug, Clone, Copy)]
struct DeferredFree {
    vdev_id: u32,
    offset_bytes: u64,
    size_bytes: u64,
}

/// The set of top-level vdevs one kind of block is allocated from.
#[derive(Debug, Clone, Default)]
pub struct MetaslabClass {
    pub groups: Vec<MetaslabGroup>,
    deferred_by_txg: BTreeMap<u64, Vec<DeferredFree>>,
}

fn round_up(size_bytes: u64, align_bytes: u64) -> Option<u64> {
    size_bytes
        .checked_add(align_bytes - 1)
        .map(|v| v & !(align_bytes - 1))
}

impl MetaslabClass {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a top-level vdev. Panics on a duplicate vdev id (caller bug).
    pub fn add_group(&mut self, group: MetaslabGroup) {
        assert!(
            self.group(group.vdev_id).is_none(),
            "vdev {} added twice",
            group.vdev_id
        );
        self.groups.push(group);
    }

    /// Drops a top-level vdev (a removed log device): its space, pending space map entries
    /// and deferred frees go with it. Returns whether it was there.
    pub fn remove_group(&mut self, vdev_id: u32) -> bool {
        let before = self.groups.len();
        self.groups.retain(|g| g.vdev_id != vdev_id);
        for frees in self.deferred_by_txg.values_mut() {
            frees.retain(|f| f.vdev_id != vdev_id);
        }
        self.groups.len() != before
    }

    pub fn group(&self, vdev_id: u32) -> Option<&MetaslabGroup> {
        self.groups.iter().find(|g| g.vdev_id == vdev_id)
    }

    pub fn group_mut(&mut self, vdev_id: u32) -> Option<&mut MetaslabGroup> {
        self.groups.iter_mut().find(|g| g.vdev_id == vdev_id)
    }

    pub fn free_bytes(&self) -> u64 {
        self.groups.iter().map(MetaslabGroup::free_bytes).sum()
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.groups.iter().map(MetaslabGroup::allocated_bytes).sum()
    }

    pub fn size_bytes(&self) -> u64 {
        self.groups.iter().map(MetaslabGroup::size_bytes).sum()
    }

    /// Space freed but not yet reusable.
    pub fn deferred_bytes(&self) -> u64 {
        self.groups.iter().map(MetaslabGroup::deferred_bytes).sum()
    }

    /// Allocates `copies` DVAs on distinct top-level vdevs when there are enough groups that
    /// can fit the block (else a group may repeat, at a different offset). `asize_of(vdev_id)`
    /// is the block's allocated size on that vdev; it is rounded up to the vdev's sector size.
    /// `record`: persist in the space map (false for MOS blocks). Returns
    /// `(vdev_id, offset_bytes, asize_bytes)` per copy, or `NoSpace` with nothing allocated.
    pub fn allocate(
        &mut self,
        copies: usize,
        asize_of: &dyn Fn(u32) -> u64,
        record: bool,
        txg: u64,
    ) -> Result<Vec<(u32, u64, u64)>, MetaslabError> {
        if copies == 0 || copies > COPIES_MAX {
            return Err(MetaslabError::InvalidArgument {
                reason: "copies must be 1..=3",
            });
        }
        let total_free_bytes = self.free_bytes();
        if total_free_bytes == 0 {
            return Err(MetaslabError::NoSpace);
        }
        let credits_before: Vec<f64> = self.groups.iter().map(|g| g.allocation_credit).collect();
        for group in &mut self.groups {
            let share = group.free_bytes() as f64 / total_free_bytes as f64;
            group.allocation_credit =
                (group.allocation_credit + copies as f64 * share).min(ALLOCATION_CREDIT_LIMIT);
        }
        let mut placed: Vec<(usize, u64, u64)> = Vec::with_capacity(copies);
        let mut order: Vec<usize> = Vec::with_capacity(self.groups.len());
        for _ in 0..copies {
            order.clear();
            order.extend(0..self.groups.len());
            order.sort_by(|&a, &b| {
                let used_a = placed.iter().any(|p| p.0 == a);
                let used_b = placed.iter().any(|p| p.0 == b);
                used_a.cmp(&used_b).then(
                    self.groups[b]
                        .allocation_credit
                        .total_cmp(&self.groups[a].allocation_credit)
                        .then(a.cmp(&b)),
                )
            });
            let mut copy_placed = false;
            for &position in &order {
                let group = &mut self.groups[position];
                let requested_bytes = asize_of(group.vdev_id);
                if requested_bytes == 0 {
                    self.rollback(&placed, &credits_before, record);
                    return Err(MetaslabError::InvalidArgument {
                        reason: "asize_of returned 0",
                    });
                }
                let Some(size_bytes) = round_up(requested_bytes, 1u64 << group.ashift) else {
                    continue;
                };
                let others: Vec<u64> = placed
                    .iter()
                    .filter(|p| p.0 == position)
                    .map(|p| p.1)
                    .collect();
                let allocated = if others.is_empty() {
                    group.allocate(size_bytes, record, txg)
                } else {
                    group.allocate_apart(size_bytes, record, txg, &others)
                };
                if let Some(offset_bytes) = allocated {
                    group.allocation_credit =
                        (group.allocation_credit - 1.0).max(-ALLOCATION_CREDIT_LIMIT);
                    placed.push((position, offset_bytes, size_bytes));
                    copy_placed = true;
                    break;
                }
            }
            if !copy_placed {
                self.rollback(&placed, &credits_before, record);
                return Err(MetaslabError::NoSpace);
            }
        }
        Ok(placed
            .into_iter()
            .map(|(position, offset_bytes, size_bytes)| {
                (self.groups[position].vdev_id, offset_bytes, size_bytes)
            })
            .collect())
    }

    fn rollback(&mut self, placed: &[(usize, u64, u64)], credits_before: &[f64], record: bool) {
        for &(position, offset_bytes, size_bytes) in placed.iter().rev() {
            self.groups[position].undo_allocate(offset_bytes, size_bytes, record);
        }
        for (group, &credit) in self.groups.iter_mut().zip(credits_before) {
            group.allocation_credit = credit;
        }
    }

    /// Frees a block (see the module header for when it becomes reusable). Errors, changing
    /// nothing, if the range is not allocated with this recorded-ness.
    pub fn free(
        &mut self,
        vdev_id: u32,
        offset_bytes: u64,
        asize_bytes: u64,
        record: bool,
        txg: u64,
    ) -> Result<(), MetaslabError> {
        self.free_inner(vdev_id, offset_bytes, asize_bytes, record, txg, false)
    }

    /// Like `free`, but the space waits out the two-txg deferral even when it was allocated
    /// in this same txg: for blocks the last committed state can reach without naming them
    /// in any space map (intent log blocks, read at import to replay).
    pub fn free_deferred(
        &mut self,
        vdev_id: u32,
        offset_bytes: u64,
        asize_bytes: u64,
        record: bool,
        txg: u64,
    ) -> Result<(), MetaslabError> {
        self.free_inner(vdev_id, offset_bytes, asize_bytes, record, txg, true)
    }

    fn free_inner(
        &mut self,
        vdev_id: u32,
        offset_bytes: u64,
        asize_bytes: u64,
        record: bool,
        txg: u64,
        force_defer: bool,
    ) -> Result<(), MetaslabError> {
        let group = self
            .group_mut(vdev_id)
            .ok_or(MetaslabError::NoSuchVdev { vdev_id })?;
        let immediate = group.free(offset_bytes, asize_bytes, record, txg, force_defer)?;
        if !immediate {
            self.deferred_by_txg
                .entry(txg)
                .or_default()
                .push(DeferredFree {
                    vdev_id,
                    offset_bytes,
                    size_bytes: asize_bytes,
                });
        }
        Ok(())
    }

    /// After txg `txg` committed: frees deferred from `txg - 2` and earlier become allocatable,
    /// and allocations of `txg` and earlier can no longer be freed at once.
    pub fn txg_committed(&mut self, txg: u64) {
        if let Some(release_through_txg) = txg.checked_sub(FREE_DEFER_TXG_COUNT) {
            let kept = self.deferred_by_txg.split_off(&(release_through_txg + 1));
            let released = std::mem::replace(&mut self.deferred_by_txg, kept);
            for free in released.into_values().flatten() {
                if let Some(group) = self.group_mut(free.vdev_id) {
                    group.release_deferred(free.offset_bytes, free.size_bytes);
                }
            }
        }
        for group in &mut self.groups {
            group.clear_fresh_through(txg);
        }
    }

    /// The space map work of this txg: one update per metaslab with pending entries (append,
    /// or condense when its map has grown past the threshold). Clears the pending entries.
    pub fn take_space_map_updates(&mut self) -> Vec<SpaceMapUpdate> {
        let mut updates = Vec::new();
        for group in &mut self.groups {
            group.take_updates(&mut updates);
        }
        updates
    }
}
