//! The allocation class: spreads blocks over the top-level vdevs of the normal (or log) class
//! (ZFS counterpart: `metaslab_class_t`, `metaslab_alloc`, `metaslab_free` and the defer logic
//! of `metaslab_sync_done` in metaslab.c).
//!
//! Choosing a vdev: OpenZFS's rotor (`metaslab_alloc_dva`). The class points at one group,
//! the rotor; a block's first copy goes there, and each further copy to the group after the
//! previous copy's (consecutive vdevs hold a block's copies). The rotor stays on a group until
//! it has taken `aliquot * data_disks + bias` bytes, then moves on. The bias is set when a
//! turn starts: `ratio = group_free * groups * 100 / (class_free + 1)` and `bias = (ratio -
//! 100) * aliquot * data_disks / 100`, so a vdev with twice the average free space takes
//! about twice the bytes per turn: vdevs of 10G and 2G fill at 5:1 and become full together,
//! and a vdev added to a half-full pool takes the larger share of the new writes. A group
//! that cannot fit the block passes the rotor on. The aliquot is OpenZFS's
//! `metaslab_aliquot` (1 MiB since 2.2; 512 KiB before, which is what the seed posts' ZFS
//! ran), a process-wide tunable as in OpenZFS ([`METASLAB_ALIQUOT`]).
//!
//! Freeing: a block freed in txg `t` becomes allocatable after txg `t + 2` committed (the last
//! uberblocks may still point at it), unless it was allocated in that same txg `t`; recorded
//! frees go to the space map at once.
//!
//! Invariants: no range is ever handed out twice; a free of a range that is not allocated is an
//! error; a failed allocation leaves no trace (partial copies are rolled back).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::space_map::SpaceMapUpdate;
use crate::{MetaslabError, MetaslabGroup};

/// Most copies (DVAs) of one block.
pub const COPIES_MAX: usize = 3;
/// OpenZFS's `metaslab_aliquot` default: bytes per data disk a vdev takes before the rotor
/// moves.
pub const METASLAB_ALIQUOT_BYTES: u64 = 1 << 20;
/// The `metaslab_aliquot` tunable, process-wide like OpenZFS's module parameter (the daemon
/// sets it from `ZETTA_METASLAB_ALIQUOT`).
pub static METASLAB_ALIQUOT: AtomicU64 = AtomicU64::new(METASLAB_ALIQUOT_BYTES);
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
    rotor: Rotor,
}

/// Where the next block's first copy goes (`mca_rotor`, `mca_aliquot`, and the rotor
/// group's `mg_bias`).
#[derive(Debug, Clone, Copy, Default)]
struct Rotor {
    /// Index into `groups`.
    position: usize,
    /// Bytes the rotor group has taken this turn.
    taken_bytes: u64,
    /// The rotor group's bias for this turn, set when the turn starts.
    bias_bytes: i64,
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
        self.rotor = Rotor::default();
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

    fn aliquot_of(&self, position: usize) -> u64 {
        let aliquot = METASLAB_ALIQUOT.load(Ordering::Relaxed).max(1);
        aliquot.saturating_mul(self.groups[position].data_disks.max(1))
    }

    /// Allocates `copies` DVAs on distinct top-level vdevs when there are enough groups that
    /// can fit the block (else a group may repeat, at a different offset). `asize_of(vdev_id)`
    /// is the block's allocated size on that vdev; it is rounded up to the vdev's sector size.
    /// `record`: persist in the space map (the engine records every block). Returns
    /// `(vdev_id, offset_bytes, asize_bytes)` per copy, or `NoSpace` with nothing allocated
    /// (and the rotor where it was).
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
        let group_count = self.groups.len();
        if group_count == 0 || self.free_bytes() == 0 {
            return Err(MetaslabError::NoSpace);
        }
        let rotor_before = self.rotor;
        if self.rotor.position >= group_count {
            self.rotor = Rotor::default();
        }
        let mut placed: Vec<(usize, u64, u64)> = Vec::with_capacity(copies);
        for _ in 0..copies {
            // The first copy starts at the rotor, the others after the previous copy's group.
            let start = match placed.last() {
                None => self.rotor.position,
                Some(&(previous, _, _)) => (previous + 1) % group_count,
            };
            // Groups this block does not use yet first; then, if it must, a group again
            // (its copies kept apart).
            let mut copy_placed = false;
            'passes: for reuse in [false, true] {
                for step in 0..group_count {
                    let position = (start + step) % group_count;
                    let used = placed.iter().any(|p| p.0 == position);
                    if used != reuse {
                        continue;
                    }
                    let group = &mut self.groups[position];
                    let requested_bytes = asize_of(group.vdev_id);
                    if requested_bytes == 0 {
                        self.rollback(&placed, rotor_before, record);
                        return Err(MetaslabError::InvalidArgument {
                            reason: "asize_of returned 0",
                        });
                    }
                    let size_bytes = round_up(requested_bytes, 1u64 << group.ashift);
                    let allocated = size_bytes.and_then(|size_bytes| {
                        let others: Vec<u64> = placed
                            .iter()
                            .filter(|p| p.0 == position)
                            .map(|p| p.1)
                            .collect();
                        if others.is_empty() {
                            group.allocate(size_bytes, record, txg)
                        } else {
                            group.allocate_apart(size_bytes, record, txg, &others)
                        }
                    });
                    match (allocated, size_bytes) {
                        (Some(offset_bytes), Some(size_bytes)) => {
                            self.advance_rotor(position, size_bytes);
                            placed.push((position, offset_bytes, size_bytes));
                            copy_placed = true;
                            break 'passes;
                        }
                        _ => {
                            // `next:` in metaslab_alloc_dva: a group that cannot take the
                            // block passes the rotor on.
                            self.rotor = Rotor {
                                position: (position + 1) % group_count,
                                ..Rotor::default()
                            };
                        }
                    }
                }
            }
            if !copy_placed {
                self.rollback(&placed, rotor_before, record);
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

    /// Counts `size_bytes` taken by the group at `position` against the rotor's turn (the
    /// bias is set at the turn's first block), and moves the rotor past that group once the
    /// turn is used up.
    fn advance_rotor(&mut self, position: usize, size_bytes: u64) {
        let aliquot = self.aliquot_of(position) as i64;
        if self.rotor.taken_bytes == 0 {
            let group_free = self.groups[position].free_bytes() as i128;
            let class_free = self.free_bytes() as i128;
            let ratio = group_free * self.groups.len() as i128 * 100 / (class_free + 1);
            self.rotor.bias_bytes = ((ratio - 100) * aliquot as i128 / 100)
                .clamp(i64::MIN as i128, i64::MAX as i128)
                as i64;
        }
        self.rotor.taken_bytes = self.rotor.taken_bytes.saturating_add(size_bytes);
        let turn_bytes = aliquot.saturating_add(self.rotor.bias_bytes);
        if self.rotor.taken_bytes as i128 >= turn_bytes as i128 {
            self.rotor = Rotor {
                position: (position + 1) % self.groups.len(),
                ..Rotor::default()
            };
        }
    }

    fn rollback(&mut self, placed: &[(usize, u64, u64)], rotor_before: Rotor, record: bool) {
        for &(position, offset_bytes, size_bytes) in placed.iter().rev() {
            self.groups[position].undo_allocate(offset_bytes, size_bytes, record);
        }
        self.rotor = rotor_before;
    }

    /// Allocates exactly `[offset, +asize)` on `vdev_id`, recorded in txg `txg`'s space map
    /// (OpenZFS `metaslab_claim`): how import takes back the intent log blocks written after
    /// the last commit, which the committed maps do not hold. Errors, changing nothing, if
    /// any of the range is not free.
    pub fn claim(
        &mut self,
        vdev_id: u32,
        offset_bytes: u64,
        asize_bytes: u64,
        txg: u64,
    ) -> Result<(), MetaslabError> {
        self.group_mut(vdev_id)
            .ok_or(MetaslabError::NoSuchVdev { vdev_id })?
            .claim(offset_bytes, asize_bytes, txg)
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
        self.take_space_map_updates_in_pass(1)
    }

    /// `take_space_map_updates` in sync pass `pass` of a txg (OpenZFS `metaslab_sync`
    /// runs once per pass): a map is condensed only in pass 1, as `metaslab_sync` does
    /// (a condense frees the map's old blocks, which later passes would chase).
    pub fn take_space_map_updates_in_pass(&mut self, pass: u32) -> Vec<SpaceMapUpdate> {
        debug_assert!(pass >= 1);
        let mut updates = Vec::new();
        for group in &mut self.groups {
            group.take_updates(&mut updates, pass == 1);
        }
        updates
    }

    /// Whether allocations or frees wait for the space maps: the sync of a txg is converged
    /// when none do after the MOS was written (OpenZFS `spa_sync_iterate_to_convergence`
    /// stops when nothing is dirty).
    pub fn has_space_map_updates(&self) -> bool {
        self.groups.iter().any(MetaslabGroup::has_updates)
    }
}
