//! One metaslab: a fixed slice `[start, start + size)` of a top-level vdev's space (ZFS
//! counterpart: the `metaslab_t` half of metaslab.c).
//!
//! Four range trees describe its state:
//! - `free`: space that can be allocated now;
//! - `recorded`: allocations that are (or will be, once `pending` is written) in its space map;
//! - `deferred`: freed blocks waiting for txg + 2 before reuse, so the previous uberblock's tree
//!   stays intact;
//! - `fresh`: allocations made in txg `fresh_txg`, which may be freed at once in that same txg.
//!
//! The space map work of the txg being filled is two more trees, as OpenZFS's `ms_allocating`
//! and `ms_freeing`: `allocating` (recorded allocations since the last take) and `freeing`
//! (recorded space freed since then). A free of space still in `allocating` takes it out of
//! `allocating` instead (OpenZFS `metaslab_unalloc_dva`): the map never hears of it.
//!
//! Invariants: `free`, `recorded` and `deferred` are disjoint and inside the metaslab; `fresh`
//! is disjoint from `free` and `deferred`; `allocating` is inside `recorded`, `freeing` is
//! disjoint from `recorded`, and the two are disjoint (a freed range is deferred, so it cannot
//! be allocated again before the next take); replaying the persisted entries, then the
//! `allocating` segments, then the `freeing` ones, from an all-free metaslab yields exactly
//! `recorded`. Space in none of `free`, `recorded`,
//! `deferred` is in use but unrecorded (`mark_allocated`: no engine block since format 16,
//! which records the MOS too). Allocation is first fit at a cursor that
//! only moves forward, which keeps sequential writes sequential.

use crate::range_tree::HISTOGRAM_BUCKET_COUNT;
use crate::space_map::{SpaceMapEntry, SpaceMapUpdate};

use crate::{MetaslabError, RangeTree};

/// A map is condensed when it holds more entries than this many per recorded segment...
pub const CONDENSE_ENTRIES_PER_SEGMENT: u64 = 4;
/// ...plus this many (so tiny maps are never rewritten).
pub const CONDENSE_SLACK_ENTRIES: u64 = 64;

/// Fragmentation weight (percent) of free space in segments of `2^(9 + i)` bytes: 512 bytes is
/// fully fragmented, 16 MiB and larger not at all. Same shape as ZFS's table.
const FRAGMENTATION_PERCENT_BY_SHIFT: [u64; 16] = [
    100, 100, 98, 95, 90, 80, 70, 60, 50, 40, 30, 20, 15, 10, 5, 0,
];
const FRAGMENTATION_SHIFT_MIN: usize = 9;

/// Weighted fragmentation of free space from a histogram of free bytes per size bucket.
/// `None` when there is no free space (fragmentation of nothing is undefined).
pub fn fragmentation_from_histogram(
    histogram_bytes: &[u64; HISTOGRAM_BUCKET_COUNT],
) -> Option<u64> {
    let free_bytes: u128 = histogram_bytes.iter().map(|&b| u128::from(b)).sum();
    if free_bytes == 0 {
        return None;
    }
    let weighted: u128 = histogram_bytes
        .iter()
        .enumerate()
        .map(|(bucket, &bytes)| {
            let percent = match bucket.checked_sub(FRAGMENTATION_SHIFT_MIN) {
                None => 100,
                Some(i) => FRAGMENTATION_PERCENT_BY_SHIFT.get(i).copied().unwrap_or(0),
            };
            u128::from(bytes) * u128::from(percent)
        })
        .sum();
    let percent = weighted / free_bytes;
    debug_assert!(percent <= 100);
    Some(percent as u64)
}

/// One slice of a top-level vdev (see the module header).
#[derive(Debug, Clone)]
pub struct Metaslab {
    pub index: usize,
    pub start_bytes: u64,
    pub size_bytes: u64,
    free: RangeTree,
    recorded: RangeTree,
    deferred: RangeTree,
    fresh: RangeTree,
    fresh_txg: Option<u64>,
    cursor_bytes: u64,
    entry_count: u64,
    allocating: RangeTree,
    freeing: RangeTree,
}

fn expect_ok(result: Result<(), MetaslabError>, what: &str) {
    if let Err(error) = result {
        panic!("metaslab invariant broken ({what}): {error}");
    }
}

impl Metaslab {
    /// An all-free metaslab. The caller guarantees `size_bytes > 0` and no overflow.
    pub(crate) fn new(index: usize, start_bytes: u64, size_bytes: u64) -> Self {
        let mut free = RangeTree::new();
        expect_ok(free.add(start_bytes, size_bytes), "new metaslab");
        Self {
            index,
            start_bytes,
            size_bytes,
            free,
            recorded: RangeTree::new(),
            deferred: RangeTree::new(),
            fresh: RangeTree::new(),
            fresh_txg: None,
            cursor_bytes: start_bytes,
            entry_count: 0,
            allocating: RangeTree::new(),
            freeing: RangeTree::new(),
        }
    }

    pub fn end_bytes(&self) -> u64 {
        self.start_bytes + self.size_bytes
    }

    pub fn free_bytes(&self) -> u64 {
        self.free.total_bytes()
    }

    /// In use, including deferred frees and unrecorded blocks.
    pub fn allocated_bytes(&self) -> u64 {
        self.size_bytes - self.free.total_bytes()
    }

    pub fn deferred_bytes(&self) -> u64 {
        self.deferred.total_bytes()
    }

    pub fn largest_free_segment_bytes(&self) -> u64 {
        self.free.largest_segment_bytes()
    }

    pub fn free_tree(&self) -> &RangeTree {
        &self.free
    }

    /// Allocations that the space map (persisted entries + pending) describes.
    pub fn recorded_tree(&self) -> &RangeTree {
        &self.recorded
    }

    /// Entries already handed to the engine for this metaslab's space map object.
    pub fn entry_count(&self) -> u64 {
        self.entry_count
    }

    /// Recorded allocations not yet handed to the engine (OpenZFS `ms_allocating`).
    pub fn allocating_tree(&self) -> &RangeTree {
        &self.allocating
    }

    /// Recorded frees not yet handed to the engine (OpenZFS `ms_freeing`).
    pub fn freeing_tree(&self) -> &RangeTree {
        &self.freeing
    }

    pub fn fragmentation_percent(&self) -> Option<u64> {
        fragmentation_from_histogram(self.free.histogram_bytes())
    }

    pub(crate) fn allocate(
        &mut self,
        size_bytes: u64,
        align_bytes: u64,
        record: bool,
        txg: u64,
    ) -> Option<u64> {
        let offset_bytes = self
            .free
            .first_fit_from(self.cursor_bytes, size_bytes, align_bytes)?;
        expect_ok(
            self.free.remove(offset_bytes, size_bytes),
            "allocate from free",
        );
        self.cursor_bytes = offset_bytes + size_bytes;
        if self.fresh_txg != Some(txg) {
            self.fresh.clear();
            self.fresh_txg = Some(txg);
        }
        expect_ok(self.fresh.add(offset_bytes, size_bytes), "fresh");
        if record {
            expect_ok(self.recorded.add(offset_bytes, size_bytes), "record");
            expect_ok(self.allocating.add(offset_bytes, size_bytes), "allocating");
        }
        debug_assert!(offset_bytes >= self.start_bytes && self.cursor_bytes <= self.end_bytes());
        Some(offset_bytes)
    }

    /// Allocates exactly `[offset, +size)`, recorded, in txg `txg` (OpenZFS's
    /// `metaslab_claim_concrete`): a block some committed state names although no space map
    /// holds it (an intent log block written after the last commit, claimed at import). The
    /// range must be free; nothing changes on error.
    pub(crate) fn claim(
        &mut self,
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
        txg: u64,
    ) -> Result<(), MetaslabError> {
        self.free.remove(offset_bytes, size_bytes).map_err(|_| {
            MetaslabError::AlreadyAllocated {
                vdev_id,
                offset_bytes,
                size_bytes,
            }
        })?;
        if self.fresh_txg != Some(txg) {
            self.fresh.clear();
            self.fresh_txg = Some(txg);
        }
        expect_ok(self.fresh.add(offset_bytes, size_bytes), "claim fresh");
        expect_ok(self.recorded.add(offset_bytes, size_bytes), "claim record");
        expect_ok(
            self.allocating.add(offset_bytes, size_bytes),
            "claim allocating",
        );
        debug_assert!(self.recorded.contains(offset_bytes, size_bytes));
        Ok(())
    }

    /// Rolls back the most recent `allocate` of this range (a failed multi-copy allocation).
    pub(crate) fn undo_allocate(&mut self, offset_bytes: u64, size_bytes: u64, record: bool) {
        if record {
            expect_ok(
                self.allocating.remove(offset_bytes, size_bytes),
                "undo allocating",
            );
            expect_ok(
                self.recorded.remove(offset_bytes, size_bytes),
                "undo record",
            );
        }
        expect_ok(self.fresh.remove(offset_bytes, size_bytes), "undo fresh");
        expect_ok(self.free.add(offset_bytes, size_bytes), "undo free");
    }

    /// Checks that `[offset, +size)` (inside this metaslab) is allocated with the given
    /// recorded-ness and not already freed.
    pub(crate) fn check_allocated(
        &self,
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
        record: bool,
    ) -> Result<(), MetaslabError> {
        let reason = if self.free.overlaps(offset_bytes, size_bytes) {
            Some("the range is (partly) free")
        } else if self.deferred.overlaps(offset_bytes, size_bytes) {
            Some("the range was already freed (deferred)")
        } else if record && !self.recorded.contains(offset_bytes, size_bytes) {
            Some("the range is not recorded in the space map")
        } else if !record && self.recorded.overlaps(offset_bytes, size_bytes) {
            Some("a recorded range freed as unrecorded")
        } else {
            None
        };
        match reason {
            None => Ok(()),
            Some(reason) => Err(MetaslabError::NotAllocated {
                vdev_id,
                offset_bytes,
                size_bytes,
                reason,
            }),
        }
    }

    /// Frees a range that `check_allocated` accepted. Returns true if the space is free again at
    /// once (allocated in this same txg and not `force_defer`), false if it is deferred.
    pub(crate) fn free(
        &mut self,
        offset_bytes: u64,
        size_bytes: u64,
        record: bool,
        txg: u64,
        force_defer: bool,
    ) -> bool {
        if record {
            expect_ok(
                self.recorded.remove(offset_bytes, size_bytes),
                "free recorded",
            );
            // The part still in `allocating` never reaches the map; the rest is freed.
            let mut cursor = offset_bytes;
            let end = offset_bytes + size_bytes;
            for (start, size) in self.allocating.intersection(offset_bytes, size_bytes) {
                if start > cursor {
                    expect_ok(self.freeing.add(cursor, start - cursor), "freeing");
                }
                expect_ok(self.allocating.remove(start, size), "unalloc");
                cursor = start + size;
            }
            if cursor < end {
                expect_ok(self.freeing.add(cursor, end - cursor), "freeing");
            }
        }
        let fresh = self.fresh_txg == Some(txg) && self.fresh.contains(offset_bytes, size_bytes);
        if fresh {
            expect_ok(self.fresh.remove(offset_bytes, size_bytes), "free fresh");
        }
        if fresh && !force_defer {
            expect_ok(self.free.add(offset_bytes, size_bytes), "free now");
            true
        } else {
            expect_ok(self.deferred.add(offset_bytes, size_bytes), "defer");
            false
        }
    }

    pub(crate) fn release_deferred(&mut self, offset_bytes: u64, size_bytes: u64) {
        expect_ok(
            self.deferred.remove(offset_bytes, size_bytes),
            "release deferred",
        );
        expect_ok(self.free.add(offset_bytes, size_bytes), "release to free");
    }

    /// Forgets which allocations are fresh once their txg `<= txg` has committed.
    pub(crate) fn clear_fresh_through(&mut self, txg: u64) {
        if self.fresh_txg.is_some_and(|fresh_txg| fresh_txg <= txg) {
            self.fresh.clear();
            self.fresh_txg = None;
        }
    }

    /// Marks an unrecorded range as in use (a caller that keeps blocks out of the maps).
    pub(crate) fn mark_allocated(
        &mut self,
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
    ) -> Result<(), MetaslabError> {
        self.free
            .remove(offset_bytes, size_bytes)
            .map_err(|_| MetaslabError::AlreadyAllocated {
                vdev_id,
                offset_bytes,
                size_bytes,
            })
    }

    /// Replays persisted entries (untrusted). All-or-nothing: on error nothing changes.
    pub(crate) fn load(
        &mut self,
        vdev_id: u32,
        align_bytes: u64,
        entries: &[SpaceMapEntry],
    ) -> Result<(), MetaslabError> {
        let mut free = self.free.clone();
        let mut recorded = self.recorded.clone();
        for entry in entries {
            let offset_bytes = entry.offset_bytes();
            let size_bytes = entry.size_bytes();
            let inconsistent = |reason| MetaslabError::SpaceMapEntryInconsistent {
                vdev_id,
                ms_index: self.index,
                offset_bytes,
                size_bytes,
                reason,
            };
            let inside = size_bytes != 0
                && offset_bytes >= self.start_bytes
                && offset_bytes
                    .checked_add(size_bytes)
                    .is_some_and(|end| end <= self.end_bytes());
            if !inside {
                return Err(inconsistent("lies outside the metaslab"));
            }
            if (offset_bytes | size_bytes) & (align_bytes - 1) != 0 {
                return Err(inconsistent("is not aligned to the sector size"));
            }
            match entry {
                SpaceMapEntry::Alloc { .. } => {
                    free.remove(offset_bytes, size_bytes)
                        .map_err(|_| inconsistent("allocates space that is not free"))?;
                    expect_ok(recorded.add(offset_bytes, size_bytes), "load record");
                }
                SpaceMapEntry::Free { .. } => {
                    recorded
                        .remove(offset_bytes, size_bytes)
                        .map_err(|_| inconsistent("frees space that is not allocated"))?;
                    expect_ok(free.add(offset_bytes, size_bytes), "load free");
                }
            }
        }
        self.free = free;
        self.recorded = recorded;
        self.entry_count += entries.len() as u64;
        Ok(())
    }

    /// Whether `take_update` has anything to hand out.
    pub(crate) fn has_update(&self) -> bool {
        !self.allocating.is_empty() || !self.freeing.is_empty()
    }

    /// Hands out this txg's work (OpenZFS `metaslab_sync`): the allocating segments then the
    /// freeing ones (append), or the whole recorded state when the persisted map has grown
    /// past the condense threshold. `None` when nothing changed.
    pub(crate) fn take_update(
        &mut self,
        vdev_id: u32,
        may_condense: bool,
    ) -> Option<SpaceMapUpdate> {
        if !self.has_update() {
            return None;
        }
        let pending_count = (self.allocating.segment_count() + self.freeing.segment_count()) as u64;
        let entry_count_total = self.entry_count + pending_count;
        let condensed_entry_count = self.recorded.segment_count() as u64;
        let threshold_entries =
            CONDENSE_ENTRIES_PER_SEGMENT * condensed_entry_count + CONDENSE_SLACK_ENTRIES;
        let condense = may_condense && entry_count_total > threshold_entries;
        let allocating = std::mem::take(&mut self.allocating);
        let freeing = std::mem::take(&mut self.freeing);
        let entries: Vec<SpaceMapEntry> = if condense {
            self.recorded
                .iter()
                .map(|(offset_bytes, size_bytes)| SpaceMapEntry::Alloc {
                    offset_bytes,
                    size_bytes,
                })
                .collect()
        } else {
            let allocs = allocating
                .iter()
                .map(|(offset_bytes, size_bytes)| SpaceMapEntry::Alloc {
                    offset_bytes,
                    size_bytes,
                });
            let frees = freeing
                .iter()
                .map(|(offset_bytes, size_bytes)| SpaceMapEntry::Free {
                    offset_bytes,
                    size_bytes,
                });
            allocs.chain(frees).collect()
        };
        self.entry_count = if condense {
            entries.len() as u64
        } else {
            entry_count_total
        };
        Some(SpaceMapUpdate {
            vdev_id,
            ms_index: self.index,
            start_bytes: self.start_bytes,
            condense,
            entries,
            alloc_bytes: self.recorded.total_bytes(),
        })
    }
}
