//! A leaf's dirty time log (OpenZFS `vdev.c`: `vdev_dtl_dirty`, `vdev_dtl_contains`,
//! `vdev_dtl_load`, `vdev_dtl_sync`, `vdev_dtl_reassess`): the txgs whose writes this leaf
//! missed, so that reads avoid it for blocks born then and resilver knows what to copy.
//!
//! Theory. OpenZFS keeps, per leaf, a range tree of txgs (`DTL_MISSING`; one unit per txg,
//! `[start, start + count)`), filled when a write of txg N skips or fails on the leaf
//! (offline, unavailable, faulted), and when a device is attached or replaces another
//! (`[TXG_INITIAL, now)`: everything before it arrived). A completed resilver excises what
//! it covered (`[0, scan max txg]`) from the leaves that were available all along. The
//! tree persists as a **space map object in the MOS** whose number is the leaf's `DTL`
//! config key: `space_map_open(mos, object, start 0, size 2^64-1, shift 0)`, so an entry's
//! offset is a txg and its run a count of txgs, written whole each time the DTL is synced
//! (`space_map_truncate` then `space_map_write(.., SM_ALLOC, ..)`: a debug word with the
//! syncing txg and pass, then one ALLOC entry per range; nothing for an empty tree). The
//! object is 4 KiB blocks (`zfs_vdev_dtl_sm_blksz`) with the bonus `space_map_phys_t` of the
//! pool's metaslab maps. It is allocated the first time a leaf's DTL is synced and, as in
//! OpenZFS, kept (empty) after a resilver; it is freed when the leaf leaves the pool
//! (detach, a finished replacement, removal). Every completed scan dirties every leaf's
//! DTL (`vdev_dtl_reassess(.., txg, ..)` from `dsl_scan_done`), which is why a pool OpenZFS
//! has scrubbed names a DTL object on every leaf.
//!
//! Zetta keeps only `DTL_MISSING` (OpenZFS derives `DTL_PARTIAL`/`DTL_OUTAGE` for interior
//! vdevs from the leaves; Zetta's read path asks each leaf). The MOS part (allocating,
//! writing, freeing the object) is `spa::vdev_dtl`; this module is the in-memory tree and
//! its entries. Reads check [`Dtl::contains`] on every mirror child: an atomic flag makes
//! that lock-free while the tree is empty, the usual case.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use zetta_metaslab::SpaceMapEntry;

/// `zfs_vdev_dtl_sm_blksz`: the DTL space map's data block size.
pub const DTL_SPACE_MAP_BLOCK_SIZE_BYTES: u32 = 1 << 12;

/// A DTL space map's geometry: offsets and runs are txgs (start 0, shift 0).
pub const DTL_GEOMETRY: zetta_metaslab::space_map::SpaceMapGeometry =
    zetta_metaslab::space_map::SpaceMapGeometry {
        start_bytes: 0,
        shift: 0,
    };

/// Ranges held past which a DTL is refused as corrupt: OpenZFS's trees are unbounded, but a
/// real one holds a few ranges (one per outage); this bounds what a hostile map can cost.
pub const DTL_RANGES_MAX: usize = 1 << 20;

/// One leaf's `DTL_MISSING`: disjoint, non-adjacent txg ranges `start -> end` (exclusive).
#[derive(Debug, Default)]
pub struct Dtl {
    ranges: Mutex<BTreeMap<u64, u64>>,
    /// Mirrors `!ranges.is_empty()` for the lock-free read check.
    nonempty: AtomicBool,
    /// Changed since last synced (`vdev_dirty(.., VDD_DTL, ..)`).
    dirty: AtomicBool,
    /// The space map object in the MOS (`DTL`), 0 = none yet.
    object: AtomicU64,
    /// A write to the leaf failed (it was faulted) since the last DTL sync: the txg synced
    /// before may have lost writes after its DTL was synced (`Dtl::take_fault`).
    fault_unsynced: AtomicBool,
}

impl Dtl {
    /// A DTL persisted in `object` (0 = none), its ranges loaded later.
    pub fn with_object(object: u64) -> Dtl {
        let dtl = Dtl::default();
        dtl.object.store(object, Ordering::Relaxed);
        dtl
    }

    /// `vdev_dtl_dirty(vd, DTL_MISSING, txg, count)`: the leaf missed txgs
    /// `[txg, txg + count)`. Merges with what is there; marks the DTL for sync if it grew.
    pub fn dirty(&self, txg: u64, count: u64) {
        if count == 0 {
            return;
        }
        let mut start = txg;
        let mut end = txg.saturating_add(count);
        let mut ranges = self.ranges.lock();
        // A range that starts at or before `start` and reaches it: merge, or nothing to do.
        if let Some((&s, &e)) = ranges.range(..=start).next_back() {
            if e >= end {
                return;
            }
            if e >= start {
                start = s;
                ranges.remove(&s);
            }
        }
        // Ranges that start inside (or right after) the new one are swallowed.
        let swallowed: Vec<(u64, u64)> = ranges.range(start..=end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in swallowed {
            end = end.max(e);
            ranges.remove(&s);
        }
        ranges.insert(start, end);
        debug_assert!(start < end);
        self.nonempty.store(true, Ordering::Release);
        self.dirty.store(true, Ordering::Release);
    }

    /// `vdev_dtl_contains(vd, DTL_MISSING, txg, 1)`: whether blocks born in `txg` are
    /// missing here.
    pub fn contains(&self, txg: u64) -> bool {
        if !self.nonempty.load(Ordering::Acquire) {
            return false;
        }
        let ranges = self.ranges.lock();
        ranges
            .range(..=txg)
            .next_back()
            .is_some_and(|(_, &end)| txg < end)
    }

    /// `vdev_dtl_empty(vd, DTL_MISSING)`.
    pub fn is_empty(&self) -> bool {
        !self.nonempty.load(Ordering::Acquire)
    }

    /// `vdev_dtl_min` and `vdev_dtl_max`: the first missing txg and one past the last.
    pub fn bounds(&self) -> Option<(u64, u64)> {
        let ranges = self.ranges.lock();
        let first = *ranges.keys().next()?;
        let last = *ranges.values().next_back()?;
        Some((first, last))
    }

    /// The ranges as `(txg, count)`, in order.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        self.ranges
            .lock()
            .iter()
            .map(|(&start, &end)| (start, end - start))
            .collect()
    }

    /// The excise of `vdev_dtl_reassess` after a completed resilver: txgs `[0, end)` are no
    /// longer missing. Marks the DTL for sync either way (every leaf's DTL is rewritten
    /// after a scan, as OpenZFS does).
    pub fn excise_before(&self, end: u64) {
        let mut ranges = self.ranges.lock();
        let covered: Vec<(u64, u64)> = ranges.range(..end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in covered {
            ranges.remove(&s);
            if e > end {
                ranges.insert(end, e);
            }
        }
        self.nonempty.store(!ranges.is_empty(), Ordering::Release);
        self.dirty.store(true, Ordering::Release);
    }

    /// A write to the leaf failed (`vdev_stat_update` dirties the DTL with the zio's txg;
    /// the failing write's txg is not known here, so the next sync records the txg before
    /// it as well as its own).
    pub fn note_fault(&self) {
        self.fault_unsynced.store(true, Ordering::Release);
    }

    /// Takes the mark of [`Dtl::note_fault`].
    pub fn take_fault(&self) -> bool {
        self.fault_unsynced.swap(false, Ordering::AcqRel)
    }

    /// Marks the DTL for sync without changing it (a finished scan's reassess).
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// Takes the "changed since synced" mark (the sync writes the map).
    pub fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// The MOS object holding the map (`DTL`), 0 = none.
    pub fn object(&self) -> u64 {
        self.object.load(Ordering::Relaxed)
    }

    pub fn set_object(&self, object: u64) {
        self.object.store(object, Ordering::Relaxed);
    }

    /// The entries `space_map_write(sm, DTL_MISSING, SM_ALLOC, ..)` records: one ALLOC per
    /// range, offset = first txg, size = txg count.
    pub fn to_entries(&self) -> Vec<SpaceMapEntry> {
        self.ranges()
            .into_iter()
            .map(|(txg, count)| SpaceMapEntry::Alloc {
                offset_bytes: txg,
                size_bytes: count,
            })
            .collect()
    }

    /// `vdev_dtl_load`: replaces the ranges by what a DTL space map's entries say
    /// (`space_map_load(sm, rt, SM_ALLOC)`: ALLOC entries add, FREE entries remove). The
    /// entries came from disk: a FREE of what is not there, an ALLOC of what already is,
    /// or more than [`DTL_RANGES_MAX`] ranges are errors (OpenZFS's range tree would panic
    /// on the first two), and the loaded DTL is not dirty.
    pub fn load_entries(&self, entries: &[SpaceMapEntry]) -> Result<(), String> {
        let loaded = Dtl::default();
        for (index, entry) in entries.iter().enumerate() {
            let (txg, count) = (entry.offset_bytes(), entry.size_bytes());
            if count == 0 || txg.checked_add(count).is_none() {
                return Err(format!("DTL entry {index}: txgs {txg}+{count} are invalid"));
            }
            let overlaps = {
                let ranges = loaded.ranges.lock();
                ranges
                    .range(..txg.saturating_add(count))
                    .next_back()
                    .is_some_and(|(_, &end)| end > txg)
            };
            if entry.is_alloc() {
                if overlaps {
                    return Err(format!("DTL entry {index}: txgs {txg}+{count} twice"));
                }
                loaded.dirty(txg, count);
            } else {
                let whole = loaded
                    .ranges
                    .lock()
                    .range(..=txg)
                    .next_back()
                    .map(|(&s, &e)| (s, e));
                match whole {
                    Some((s, e)) if e >= txg + count => {
                        let mut ranges = loaded.ranges.lock();
                        ranges.remove(&s);
                        if s < txg {
                            ranges.insert(s, txg);
                        }
                        if txg + count < e {
                            ranges.insert(txg + count, e);
                        }
                        loaded.nonempty.store(!ranges.is_empty(), Ordering::Release);
                    }
                    _ => {
                        return Err(format!(
                            "DTL entry {index}: frees txgs {txg}+{count} it does not hold"
                        ))
                    }
                }
            }
            if loaded.ranges.lock().len() > DTL_RANGES_MAX {
                return Err(format!("DTL holds more than {DTL_RANGES_MAX} ranges"));
            }
        }
        let ranges = std::mem::take(&mut *loaded.ranges.lock());
        self.nonempty.store(!ranges.is_empty(), Ordering::Release);
        *self.ranges.lock() = ranges;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: the tree must merge overlapping and adjacent outages into one range (as
    // OpenZFS's range tree does), or a DTL grows a range per txg an offline disk misses.
    #[test]
    fn dirty_merges_overlapping_and_adjacent_ranges() {
        let dtl = Dtl::default();
        assert!(dtl.is_empty() && !dtl.contains(5));
        dtl.dirty(10, 1);
        dtl.dirty(11, 1);
        dtl.dirty(20, 5);
        assert_eq!(dtl.ranges(), vec![(10, 2), (20, 5)]);
        dtl.dirty(12, 8);
        assert_eq!(dtl.ranges(), vec![(10, 15)]);
        dtl.dirty(4, 100);
        assert_eq!(dtl.ranges(), vec![(4, 100)]);
        assert!(dtl.contains(4) && dtl.contains(103) && !dtl.contains(104) && !dtl.contains(3));
        assert!(dtl.take_dirty() && !dtl.take_dirty());
        dtl.dirty(50, 2);
        assert!(!dtl.take_dirty(), "nothing new: not dirty");
    }

    // Why: a resilver excises only what it covered; an outage that began after it started
    // must stay (OpenZFS `vdev_dtl_reassess` excises `[0, scrub_txg)`).
    #[test]
    fn excise_keeps_the_part_after_the_scan() {
        let dtl = Dtl::default();
        dtl.dirty(4, 10);
        dtl.dirty(30, 5);
        dtl.excise_before(10);
        assert_eq!(dtl.ranges(), vec![(10, 4), (30, 5)]);
        dtl.excise_before(100);
        assert!(dtl.is_empty() && dtl.ranges().is_empty() && !dtl.contains(31));
    }

    // Why: the entries written are the ones read back, and a map OpenZFS could not have
    // written (an ALLOC twice, a FREE of nothing) is refused, not trusted.
    #[test]
    fn entries_round_trip_and_bad_maps_are_refused() {
        let dtl = Dtl::default();
        dtl.dirty(4, 3);
        dtl.dirty(9, 1);
        let entries = dtl.to_entries();
        let back = Dtl::default();
        back.load_entries(&entries).unwrap();
        assert_eq!(back.ranges(), vec![(4, 3), (9, 1)]);
        let mut twice = entries.clone();
        twice.push(entries[0]);
        assert!(back.load_entries(&twice).is_err());
        let free = [SpaceMapEntry::Free {
            offset_bytes: 4,
            size_bytes: 1,
        }];
        assert!(back.load_entries(&free).is_err());
        let mut freed = entries;
        freed.extend(free);
        back.load_entries(&freed).unwrap();
        assert_eq!(back.ranges(), vec![(5, 2), (9, 1)]);
    }
}
