//! All metaslabs of one top-level vdev (ZFS counterpart: `metaslab_group_t` in metaslab.c and
//! `vdev_metaslab_init` / `vdev_metaslab_set_size` in vdev.c).
//!
//! The vdev's allocatable space is cut into `2^ms_shift`-byte metaslabs, where
//! `ms_shift = max(highbit(asize / 200), 24)` (highbit = floor(log2) + 1), so a new vdev gets
//! 100..=200 metaslabs of at least 16 MiB; the last partial one is dropped. The shift is stored
//! in the pool config so an imported vdev is cut the same way ([`MetaslabGroup::with_ms_shift`]).
//!
//! Within a group one metaslab is active; blocks go first-fit at its cursor. When it cannot fit
//! a block, the group switches to the metaslab with the most free space that can (ties: lowest
//! index).
//!
//! Invariants: `free_bytes` equals the sum of the metaslabs' free bytes; metaslab `i` covers
//! `[i << ms_shift, (i + 1) << ms_shift)`; every range handed out or accepted is a multiple of
//! `1 << ashift` and aligned to it.

use crate::metaslab::{fragmentation_from_histogram, Metaslab};
use crate::range_tree::HISTOGRAM_BUCKET_COUNT;
use crate::space_map::{SpaceMapEntry, SpaceMapUpdate};
use crate::MetaslabError;

/// A new vdev aims at about this many metaslabs.
pub const METASLAB_COUNT_TARGET: u64 = 200;
/// Smallest metaslab shift for a new vdev (16 MiB, the largest block size).
pub const MS_SHIFT_MIN: u32 = 24;
/// Largest metaslab shift accepted from a config.
pub const MS_SHIFT_MAX: u32 = 62;
/// Sector size bounds: 512 B .. 64 KiB.
pub const ASHIFT_MIN: u32 = 9;
pub const ASHIFT_MAX: u32 = 16;
/// Most metaslabs one group may have (bounds memory for a damaged config).
pub const METASLAB_COUNT_MAX: u64 = 1 << 20;
/// Ditto copies of one block on the same vdev lie at least vdev size >> this apart
/// (OpenZFS's `ditto_same_vdev_distance_shift`).
pub const DITTO_DISTANCE_SHIFT: u32 = 3;

/// floor(log2(value)) + 1, and 0 for 0.
pub fn highbit(value: u64) -> u32 {
    64 - value.leading_zeros()
}

/// The metaslabs of one top-level vdev.
#[derive(Debug, Clone)]
pub struct MetaslabGroup {
    pub vdev_id: u32,
    pub ashift: u32,
    pub ms_shift: u32,
    pub metaslabs: Vec<Metaslab>,
    asize_bytes: u64,
    free_bytes: u64,
    active_index: usize,
    /// The metaslabs that take the second and third copies of blocks whose other copies
    /// are on this vdev (OpenZFS's `mg_secondaries`): kept, like `active_index`, so ditto
    /// copies gather in few metaslabs instead of dirtying a new space map each time.
    ditto_active_index: [Option<usize>; 2],
    /// Smallest block size that failed to fit since space was last returned (u64::MAX: none);
    /// lets a full group refuse quickly instead of scanning its metaslabs every time.
    failed_size_bytes: u64,
    /// Disks that hold distinct data in this vdev (OpenZFS's `vdev_get_ndisks -
    /// vdev_get_nparity`: 1 for a disk or a mirror, children - parity for raidz): the
    /// rotor gives the vdev `aliquot * data_disks` bytes per turn (see allocator.rs).
    pub data_disks: u64,
}

impl MetaslabGroup {
    /// A new, all-free group. Panics on an ashift outside `ASHIFT_MIN..=ASHIFT_MAX` (caller bug).
    pub fn new(vdev_id: u32, asize_bytes: u64, ashift: u32) -> Self {
        let ms_shift = highbit(asize_bytes / METASLAB_COUNT_TARGET).max(MS_SHIFT_MIN);
        match Self::with_ms_shift(vdev_id, asize_bytes, ashift, ms_shift) {
            Ok(group) => group,
            Err(error) => panic!("MetaslabGroup::new: {error}"),
        }
    }

    /// A group cut with a stored `ms_shift` (import). The geometry comes from disk: checked.
    pub fn with_ms_shift(
        vdev_id: u32,
        asize_bytes: u64,
        ashift: u32,
        ms_shift: u32,
    ) -> Result<Self, MetaslabError> {
        if !(ASHIFT_MIN..=ASHIFT_MAX).contains(&ashift) {
            return Err(MetaslabError::InvalidGeometry {
                reason: "ashift out of range",
            });
        }
        if ms_shift < ashift || ms_shift > MS_SHIFT_MAX {
            return Err(MetaslabError::InvalidGeometry {
                reason: "ms_shift out of range",
            });
        }
        if asize_bytes >> ms_shift > METASLAB_COUNT_MAX {
            return Err(MetaslabError::InvalidGeometry {
                reason: "too many metaslabs",
            });
        }
        let mut group = Self {
            vdev_id,
            ashift,
            ms_shift,
            metaslabs: Vec::new(),
            asize_bytes: 0,
            free_bytes: 0,
            active_index: 0,
            ditto_active_index: [None, None],
            failed_size_bytes: u64::MAX,
            data_disks: 1,
        };
        group.expand(asize_bytes);
        Ok(group)
    }

    /// Autoexpand: appends the new whole metaslabs, all free. Shrinking is ignored.
    pub fn expand(&mut self, new_asize_bytes: u64) {
        if new_asize_bytes <= self.asize_bytes {
            return;
        }
        self.asize_bytes = new_asize_bytes;
        let metaslab_size_bytes = 1u64 << self.ms_shift;
        let count = (new_asize_bytes >> self.ms_shift).min(METASLAB_COUNT_MAX) as usize;
        for index in self.metaslabs.len()..count {
            let start_bytes = index as u64 * metaslab_size_bytes;
            self.metaslabs
                .push(Metaslab::new(index, start_bytes, metaslab_size_bytes));
            self.free_bytes += metaslab_size_bytes;
        }
        self.failed_size_bytes = u64::MAX;
    }

    pub fn metaslab_count(&self) -> usize {
        self.metaslabs.len()
    }

    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    pub fn size_bytes(&self) -> u64 {
        (self.metaslabs.len() as u64) << self.ms_shift
    }

    /// In use, including deferred frees and unrecorded blocks.
    pub fn allocated_bytes(&self) -> u64 {
        self.size_bytes() - self.free_bytes
    }

    pub fn deferred_bytes(&self) -> u64 {
        self.metaslabs.iter().map(Metaslab::deferred_bytes).sum()
    }

    /// Free-space fragmentation over all metaslabs (0 = all free space in >= 16 MiB segments,
    /// 100 = all in 512-byte ones). `None` when the group has no free space.
    pub fn fragmentation_percent(&self) -> Option<u64> {
        let mut histogram_bytes = [0u64; HISTOGRAM_BUCKET_COUNT];
        for metaslab in &self.metaslabs {
            let histogram = metaslab.free_tree().histogram_bytes();
            for (sum, bytes) in histogram_bytes.iter_mut().zip(histogram) {
                *sum += bytes;
            }
        }
        fragmentation_from_histogram(&histogram_bytes)
    }

    fn sector_bytes(&self) -> u64 {
        1u64 << self.ashift
    }

    /// The metaslab holding the whole range, after checking bounds and alignment.
    fn locate(&self, offset_bytes: u64, size_bytes: u64) -> Result<usize, MetaslabError> {
        let out_of_bounds = MetaslabError::OutOfBounds {
            vdev_id: self.vdev_id,
            offset_bytes,
            size_bytes,
        };
        if (offset_bytes | size_bytes) & (self.sector_bytes() - 1) != 0 {
            return Err(MetaslabError::Misaligned {
                vdev_id: self.vdev_id,
                offset_bytes,
                size_bytes,
                ashift: self.ashift,
            });
        }
        let end_bytes = offset_bytes
            .checked_add(size_bytes)
            .ok_or(out_of_bounds.clone())?;
        let ms_index = usize::try_from(offset_bytes >> self.ms_shift).unwrap_or(usize::MAX);
        match self.metaslabs.get(ms_index) {
            Some(metaslab) if size_bytes != 0 && end_bytes <= metaslab.end_bytes() => Ok(ms_index),
            _ => Err(out_of_bounds),
        }
    }

    /// Replays metaslab `ms_index`'s persisted entries (untrusted). All-or-nothing.
    pub fn load(
        &mut self,
        ms_index: usize,
        entries: &[SpaceMapEntry],
    ) -> Result<(), MetaslabError> {
        let vdev_id = self.vdev_id;
        let align_bytes = self.sector_bytes();
        let metaslab = self
            .metaslabs
            .get_mut(ms_index)
            .ok_or(MetaslabError::NoSuchMetaslab { vdev_id, ms_index })?;
        let free_before_bytes = metaslab.free_bytes();
        metaslab.load(vdev_id, align_bytes, entries)?;
        self.free_bytes = self.free_bytes - free_before_bytes + metaslab.free_bytes();
        self.failed_size_bytes = u64::MAX;
        Ok(())
    }

    /// Marks an unrecorded block as in use. It must be free.
    pub fn mark_allocated(
        &mut self,
        offset_bytes: u64,
        size_bytes: u64,
    ) -> Result<(), MetaslabError> {
        let ms_index = self.locate(offset_bytes, size_bytes)?;
        self.metaslabs[ms_index].mark_allocated(self.vdev_id, offset_bytes, size_bytes)?;
        self.free_bytes -= size_bytes;
        Ok(())
    }

    /// Claims `[offset, +size)` in txg `txg` (see `Metaslab::claim`): it must be free.
    pub fn claim(
        &mut self,
        offset_bytes: u64,
        size_bytes: u64,
        txg: u64,
    ) -> Result<(), MetaslabError> {
        let ms_index = self.locate(offset_bytes, size_bytes)?;
        self.metaslabs[ms_index].claim(self.vdev_id, offset_bytes, size_bytes, txg)?;
        self.free_bytes -= size_bytes;
        Ok(())
    }

    /// Allocates `size_bytes` (a multiple of the sector size). `None` if no metaslab can fit it.
    pub(crate) fn allocate(&mut self, size_bytes: u64, record: bool, txg: u64) -> Option<u64> {
        let align_bytes = self.sector_bytes();
        debug_assert!(size_bytes != 0 && size_bytes.is_multiple_of(align_bytes));
        if size_bytes > self.free_bytes || size_bytes >= self.failed_size_bytes {
            return None;
        }
        if let Some(active) = self.metaslabs.get_mut(self.active_index) {
            if let Some(offset_bytes) = active.allocate(size_bytes, align_bytes, record, txg) {
                self.free_bytes -= size_bytes;
                return Some(offset_bytes);
            }
        }
        let best = self
            .metaslabs
            .iter()
            .filter(|m| m.largest_free_segment_bytes() >= size_bytes)
            .max_by_key(|m| (m.free_bytes(), std::cmp::Reverse(m.index)))
            .map(|m| m.index);
        let Some(best) = best else {
            self.failed_size_bytes = size_bytes;
            return None;
        };
        self.active_index = best;
        match self.metaslabs[best].allocate(size_bytes, align_bytes, record, txg) {
            Some(offset_bytes) => {
                self.free_bytes -= size_bytes;
                Some(offset_bytes)
            }
            None => {
                self.failed_size_bytes = size_bytes;
                None
            }
        }
    }

    /// Allocates a ditto copy of a block whose other copies are at `others` on this same
    /// vdev: in a metaslab at least 1/8 of the vdev away from each of them (OpenZFS's
    /// `ditto_same_vdev_distance_shift`), so that one damaged region of a single disk does
    /// not take every copy; the active metaslab stays as it is. Falls back to a different
    /// metaslab at any distance, then to the ordinary allocation.
    pub(crate) fn allocate_apart(
        &mut self,
        size_bytes: u64,
        record: bool,
        txg: u64,
        others: &[u64],
    ) -> Option<u64> {
        let align_bytes = self.sector_bytes();
        debug_assert!(size_bytes != 0 && size_bytes.is_multiple_of(align_bytes));
        if size_bytes > self.free_bytes {
            return None;
        }
        let distance_bytes = self.size_bytes() >> DITTO_DISTANCE_SHIFT;
        let far = |m: &Metaslab, min_bytes: u64| {
            others.iter().all(|&other| {
                let near_start = other.saturating_sub(min_bytes);
                let near_end = other.saturating_add(min_bytes);
                m.end_bytes() <= near_start || m.start_bytes > near_end
            })
        };
        let slot = others.len().clamp(1, 2) - 1;
        // The ditto metaslab in use, while it is far enough from every other copy.
        let active = self.ditto_active_index[slot].and_then(|i| self.metaslabs.get_mut(i));
        if let Some(metaslab) = active {
            if far(metaslab, distance_bytes) {
                if let Some(offset_bytes) = metaslab.allocate(size_bytes, align_bytes, record, txg)
                {
                    self.free_bytes -= size_bytes;
                    return Some(offset_bytes);
                }
            }
        }
        for min_bytes in [distance_bytes, 0] {
            let candidate = self
                .metaslabs
                .iter()
                .filter(|m| m.largest_free_segment_bytes() >= size_bytes && far(m, min_bytes))
                .max_by_key(|m| (m.free_bytes(), std::cmp::Reverse(m.index)))
                .map(|m| m.index);
            if let Some(index) = candidate {
                if let Some(offset_bytes) =
                    self.metaslabs[index].allocate(size_bytes, align_bytes, record, txg)
                {
                    self.free_bytes -= size_bytes;
                    self.ditto_active_index[slot] = Some(index);
                    debug_assert!(!others.contains(&offset_bytes));
                    return Some(offset_bytes);
                }
            }
        }
        self.allocate(size_bytes, record, txg)
    }

    pub(crate) fn undo_allocate(&mut self, offset_bytes: u64, size_bytes: u64, record: bool) {
        let ms_index = (offset_bytes >> self.ms_shift) as usize;
        self.metaslabs[ms_index].undo_allocate(offset_bytes, size_bytes, record);
        self.free_bytes += size_bytes;
        self.failed_size_bytes = u64::MAX;
    }

    /// Frees a block. Ok(true): free again at once (allocated in this txg); Ok(false): deferred.
    pub(crate) fn free(
        &mut self,
        offset_bytes: u64,
        size_bytes: u64,
        record: bool,
        txg: u64,
        force_defer: bool,
    ) -> Result<bool, MetaslabError> {
        let ms_index = self.locate(offset_bytes, size_bytes)?;
        let metaslab = &mut self.metaslabs[ms_index];
        metaslab.check_allocated(self.vdev_id, offset_bytes, size_bytes, record)?;
        let immediate = metaslab.free(offset_bytes, size_bytes, record, txg, force_defer);
        if immediate {
            self.free_bytes += size_bytes;
            self.failed_size_bytes = u64::MAX;
        }
        Ok(immediate)
    }

    pub(crate) fn release_deferred(&mut self, offset_bytes: u64, size_bytes: u64) {
        let ms_index = (offset_bytes >> self.ms_shift) as usize;
        self.metaslabs[ms_index].release_deferred(offset_bytes, size_bytes);
        self.free_bytes += size_bytes;
        self.failed_size_bytes = u64::MAX;
    }

    pub(crate) fn clear_fresh_through(&mut self, txg: u64) {
        for metaslab in &mut self.metaslabs {
            metaslab.clear_fresh_through(txg);
        }
    }

    pub(crate) fn take_updates(&mut self, updates: &mut Vec<SpaceMapUpdate>, condense: bool) {
        let vdev_id = self.vdev_id;
        updates.extend(
            self.metaslabs
                .iter_mut()
                .filter_map(|m| m.take_update(vdev_id, condense)),
        );
    }

    /// Whether any metaslab has allocations or frees its space map has not been given yet.
    pub(crate) fn has_updates(&self) -> bool {
        self.metaslabs.iter().any(Metaslab::has_update)
    }
}
