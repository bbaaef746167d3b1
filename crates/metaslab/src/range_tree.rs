//! A set of disjoint half-open byte ranges (ZFS counterpart: range_tree.c).
//!
//! Segments are kept in a `BTreeMap<start, end>`; adding a range merges it with the neighbours
//! it touches, removing one splits the segment that holds it. A second index, ordered by
//! `(size, start)`, answers "largest segment" and "smallest segment that fits" in O(log n), and
//! a histogram of free bytes per power-of-two segment size feeds the fragmentation metric (as
//! ZFS's space map histograms do).
//!
//! Invariants (checked by `debug_assert_consistent` in tests):
//! - segments are non-empty, disjoint and never adjacent (adjacent ones are merged);
//! - the size index holds exactly one `(end - start, start)` per segment;
//! - `total_bytes` and the histogram equal the sums over the segments.
//!
//! Misuse (adding an overlapping range, removing an absent one) returns an error instead of
//! corrupting the tree; the caller decides whether that is bad disk data or a bug.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crate::MetaslabError;

/// One histogram bucket per possible `floor(log2(segment size))`.
pub const HISTOGRAM_BUCKET_COUNT: usize = 64;
/// How many segments at or after the cursor `first_fit_from` inspects before it gives up on
/// first fit and takes the smallest segment that fits anywhere (keeps allocation O(log n)).
pub const FIRST_FIT_SCAN_SEGMENTS_MAX: usize = 16;
/// How many candidates of the size index the best-fit fallback inspects.
pub const BEST_FIT_SCAN_SEGMENTS_MAX: usize = 16;

/// A set of disjoint byte ranges, merged on insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTree {
    end_by_start: BTreeMap<u64, u64>,
    start_by_size: BTreeSet<(u64, u64)>,
    total_bytes: u64,
    histogram_bytes: [u64; HISTOGRAM_BUCKET_COUNT],
}

impl Default for RangeTree {
    fn default() -> Self {
        Self::new()
    }
}

/// Histogram bucket of a non-empty segment: `floor(log2(size_bytes))`.
pub fn histogram_bucket(size_bytes: u64) -> usize {
    debug_assert!(size_bytes > 0);
    (63 - size_bytes.max(1).leading_zeros()) as usize
}

fn range_end(start_bytes: u64, size_bytes: u64) -> Result<u64, MetaslabError> {
    let invalid = MetaslabError::RangeInvalid {
        start_bytes,
        size_bytes,
    };
    if size_bytes == 0 {
        return Err(invalid);
    }
    start_bytes.checked_add(size_bytes).ok_or(invalid)
}

fn align_up(value_bytes: u64, align_bytes: u64) -> Option<u64> {
    debug_assert!(align_bytes.is_power_of_two());
    value_bytes
        .checked_add(align_bytes - 1)
        .map(|v| v & !(align_bytes - 1))
}

impl RangeTree {
    pub fn new() -> Self {
        Self {
            end_by_start: BTreeMap::new(),
            start_by_size: BTreeSet::new(),
            total_bytes: 0,
            histogram_bytes: [0; HISTOGRAM_BUCKET_COUNT],
        }
    }

    fn insert_segment(&mut self, start_bytes: u64, end_bytes: u64) {
        debug_assert!(start_bytes < end_bytes);
        let size_bytes = end_bytes - start_bytes;
        let previous = self.end_by_start.insert(start_bytes, end_bytes);
        debug_assert!(previous.is_none());
        self.start_by_size.insert((size_bytes, start_bytes));
        self.total_bytes += size_bytes;
        self.histogram_bytes[histogram_bucket(size_bytes)] += size_bytes;
    }

    fn delete_segment(&mut self, start_bytes: u64, end_bytes: u64) {
        let size_bytes = end_bytes - start_bytes;
        let removed = self.end_by_start.remove(&start_bytes);
        debug_assert_eq!(removed, Some(end_bytes));
        let removed_size = self.start_by_size.remove(&(size_bytes, start_bytes));
        debug_assert!(removed_size);
        self.total_bytes -= size_bytes;
        self.histogram_bytes[histogram_bucket(size_bytes)] -= size_bytes;
    }

    /// Adds `[start, start + size)`, merging with touching neighbours. Errors if the range is
    /// empty, overflows, or overlaps a range already present (the tree is then unchanged).
    pub fn add(&mut self, start_bytes: u64, size_bytes: u64) -> Result<(), MetaslabError> {
        let end_bytes = range_end(start_bytes, size_bytes)?;
        if self.overlaps(start_bytes, size_bytes) {
            return Err(MetaslabError::RangeOverlap {
                start_bytes,
                size_bytes,
            });
        }
        let mut merged_start_bytes = start_bytes;
        let mut merged_end_bytes = end_bytes;
        let left = self
            .end_by_start
            .range(..start_bytes)
            .next_back()
            .map(|(&s, &e)| (s, e));
        if let Some((left_start, left_end)) = left {
            if left_end == start_bytes {
                self.delete_segment(left_start, left_end);
                merged_start_bytes = left_start;
            }
        }
        if let Some(&right_end) = self.end_by_start.get(&end_bytes) {
            self.delete_segment(end_bytes, right_end);
            merged_end_bytes = right_end;
        }
        self.insert_segment(merged_start_bytes, merged_end_bytes);
        Ok(())
    }

    /// Removes `[start, start + size)`, which must lie entirely inside one segment (segments are
    /// never adjacent, so "entirely present" means exactly that). The tree is unchanged on error.
    pub fn remove(&mut self, start_bytes: u64, size_bytes: u64) -> Result<(), MetaslabError> {
        let end_bytes = range_end(start_bytes, size_bytes)?;
        let holder = self
            .end_by_start
            .range(..=start_bytes)
            .next_back()
            .map(|(&s, &e)| (s, e));
        let (segment_start, segment_end) = match holder {
            Some((s, e)) if e >= end_bytes => (s, e),
            _ => {
                return Err(MetaslabError::RangeNotPresent {
                    start_bytes,
                    size_bytes,
                })
            }
        };
        self.delete_segment(segment_start, segment_end);
        if segment_start < start_bytes {
            self.insert_segment(segment_start, start_bytes);
        }
        if end_bytes < segment_end {
            self.insert_segment(end_bytes, segment_end);
        }
        Ok(())
    }

    /// Whether the whole non-empty range is present. Empty or overflowing ranges: false.
    pub fn contains(&self, start_bytes: u64, size_bytes: u64) -> bool {
        let Ok(end_bytes) = range_end(start_bytes, size_bytes) else {
            return false;
        };
        self.end_by_start
            .range(..=start_bytes)
            .next_back()
            .is_some_and(|(_, &e)| e >= end_bytes)
    }

    /// Whether any byte of the range is present. Empty ranges: false.
    pub fn overlaps(&self, start_bytes: u64, size_bytes: u64) -> bool {
        if size_bytes == 0 {
            return false;
        }
        let end_bytes = start_bytes.saturating_add(size_bytes);
        // Segments are sorted and disjoint, so the last one starting before `end` has the
        // largest end of all that could overlap.
        self.end_by_start
            .range(..end_bytes)
            .next_back()
            .is_some_and(|(_, &e)| e > start_bytes)
    }

    /// The parts of `[start, start + size)` present in the tree, in ascending order as
    /// `(start_bytes, size_bytes)`. Empty or overflowing ranges: none.
    pub fn intersection(&self, start_bytes: u64, size_bytes: u64) -> Vec<(u64, u64)> {
        let Ok(end_bytes) = range_end(start_bytes, size_bytes) else {
            return Vec::new();
        };
        // The segment that may start before `start` and reach into the range, then every
        // segment starting inside it.
        let first = self
            .end_by_start
            .range(..start_bytes)
            .next_back()
            .filter(|(_, &e)| e > start_bytes);
        first
            .into_iter()
            .chain(self.end_by_start.range(start_bytes..end_bytes))
            .map(|(&s, &e)| {
                let s = s.max(start_bytes);
                (s, e.min(end_bytes) - s)
            })
            .collect()
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    pub fn segment_count(&self) -> usize {
        self.end_by_start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.end_by_start.is_empty()
    }

    /// Segments in ascending order as `(start_bytes, size_bytes)`.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.end_by_start.iter().map(|(&s, &e)| (s, e - s))
    }

    pub fn largest_segment_bytes(&self) -> u64 {
        self.start_by_size.last().map_or(0, |&(size, _)| size)
    }

    /// Bytes held in segments whose size has `floor(log2(size)) == bucket`.
    pub fn histogram_bytes(&self) -> &[u64; HISTOGRAM_BUCKET_COUNT] {
        &self.histogram_bytes
    }

    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// Start of a free place for `size` bytes aligned to `align` (a power of two): first fit at
    /// or after `cursor` among the next [`FIRST_FIT_SCAN_SEGMENTS_MAX`] segments, else the
    /// smallest segment anywhere that fits (best fit). Does not modify the tree.
    pub fn first_fit_from(
        &self,
        cursor_bytes: u64,
        size_bytes: u64,
        align_bytes: u64,
    ) -> Option<u64> {
        if size_bytes == 0 || !align_bytes.is_power_of_two() {
            return None;
        }
        let fit = |floor_bytes: u64, end_bytes: u64| -> Option<u64> {
            let start = align_up(floor_bytes, align_bytes)?;
            (start.checked_add(size_bytes)? <= end_bytes).then_some(start)
        };
        if let Some((_, &end)) = self.end_by_start.range(..=cursor_bytes).next_back() {
            if end > cursor_bytes {
                if let Some(start) = fit(cursor_bytes, end) {
                    return Some(start);
                }
            }
        }
        let after = self
            .end_by_start
            .range((Bound::Excluded(cursor_bytes), Bound::Unbounded))
            .take(FIRST_FIT_SCAN_SEGMENTS_MAX);
        for (&start, &end) in after {
            if let Some(found) = fit(start, end) {
                return Some(found);
            }
        }
        self.start_by_size
            .range((size_bytes, 0)..)
            .take(BEST_FIT_SCAN_SEGMENTS_MAX)
            .find_map(|&(size, start)| fit(start, start + size))
    }

    /// Checks every invariant in the module header; for tests and debug builds.
    pub fn debug_assert_consistent(&self) {
        let mut previous_end: Option<u64> = None;
        let mut total_bytes = 0u64;
        let mut histogram_bytes = [0u64; HISTOGRAM_BUCKET_COUNT];
        for (&start, &end) in &self.end_by_start {
            assert!(start < end, "empty segment at {start:#x}");
            if let Some(previous) = previous_end {
                assert!(previous < start, "segments touch or overlap at {start:#x}");
            }
            assert!(self.start_by_size.contains(&(end - start, start)));
            previous_end = Some(end);
            total_bytes += end - start;
            histogram_bytes[histogram_bucket(end - start)] += end - start;
        }
        assert_eq!(self.start_by_size.len(), self.end_by_start.len());
        assert_eq!(self.total_bytes, total_bytes);
        assert_eq!(self.histogram_bytes, histogram_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(tree: &RangeTree) -> Vec<(u64, u64)> {
        tree.iter().collect()
    }

    #[test]
    fn add_merges_neighbours_and_remove_splits() {
        // Why: merging on add and splitting on remove is the whole job of a range tree; a missed
        // merge makes free space look fragmented, a bad split loses or invents space.
        let mut tree = RangeTree::new();
        tree.add(0, 10).unwrap();
        tree.add(20, 10).unwrap();
        assert_eq!(segments(&tree), vec![(0, 10), (20, 10)]);
        tree.add(10, 10).unwrap();
        assert_eq!(segments(&tree), vec![(0, 30)]);
        tree.remove(5, 10).unwrap();
        assert_eq!(segments(&tree), vec![(0, 5), (15, 15)]);
        tree.remove(0, 5).unwrap();
        tree.remove(25, 5).unwrap();
        assert_eq!(segments(&tree), vec![(15, 10)]);
        assert_eq!(tree.total_bytes(), 10);
        assert_eq!(tree.largest_segment_bytes(), 10);
        tree.debug_assert_consistent();
    }

    #[test]
    fn misuse_is_an_error_and_leaves_the_tree_unchanged() {
        // Why: replaying a corrupt space map calls add/remove with bad ranges; that must be an
        // error the caller can report, not a panic or a silently merged tree.
        let mut tree = RangeTree::new();
        tree.add(100, 100).unwrap();
        let before = tree.clone();
        assert!(matches!(
            tree.add(150, 100),
            Err(MetaslabError::RangeOverlap { .. })
        ));
        assert!(matches!(
            tree.add(50, 51),
            Err(MetaslabError::RangeOverlap { .. })
        ));
        assert!(matches!(
            tree.remove(150, 100),
            Err(MetaslabError::RangeNotPresent { .. })
        ));
        assert!(matches!(
            tree.remove(0, 100),
            Err(MetaslabError::RangeNotPresent { .. })
        ));
        assert!(matches!(
            tree.add(5, 0),
            Err(MetaslabError::RangeInvalid { .. })
        ));
        assert!(matches!(
            tree.add(u64::MAX, 2),
            Err(MetaslabError::RangeInvalid { .. })
        ));
        assert_eq!(tree, before);
        assert!(tree.contains(100, 100) && !tree.contains(99, 2) && !tree.contains(100, 0));
        assert!(tree.overlaps(199, 5) && !tree.overlaps(200, 5) && !tree.overlaps(0, 100));
    }

    #[test]
    fn first_fit_respects_cursor_alignment_and_falls_back() {
        // Why: the allocator relies on first_fit_from for sequential placement, alignment to the
        // sector size, and for still finding space behind the cursor.
        let mut tree = RangeTree::new();
        tree.add(0, 4096).unwrap();
        tree.add(10_000, 20_000).unwrap();
        assert_eq!(tree.first_fit_from(0, 4096, 4096), Some(0));
        assert_eq!(tree.first_fit_from(1, 1024, 4096), Some(12_288));
        assert_eq!(tree.first_fit_from(12_289, 4096, 4096), Some(16_384));
        // Nothing after the cursor fits: best fit anywhere.
        assert_eq!(tree.first_fit_from(29_000, 4096, 4096), Some(0));
        assert_eq!(tree.first_fit_from(0, 1 << 20, 4096), None);
        assert_eq!(tree.first_fit_from(0, 4096, 3), None);
    }

    #[test]
    fn random_operations_match_a_bitmap_model() {
        // Why: checks merge/split and every index against a trivially correct model over many
        // random operations, including rejected ones.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut tree = RangeTree::new();
        let mut model = [false; 256];
        for _ in 0..5000 {
            let start = next() % 256;
            let size = 1 + next() % 16;
            let end = (start + size).min(256);
            let size = end - start;
            let all_set = model[start as usize..end as usize].iter().all(|&b| b);
            let any_set = model[start as usize..end as usize].iter().any(|&b| b);
            if next() % 2 == 0 {
                assert_eq!(tree.add(start, size).is_ok(), !any_set);
                if !any_set {
                    model[start as usize..end as usize].fill(true);
                }
            } else {
                assert_eq!(tree.remove(start, size).is_ok(), all_set);
                if all_set {
                    model[start as usize..end as usize].fill(false);
                }
            }
            assert_eq!(
                tree.total_bytes(),
                model.iter().filter(|&&b| b).count() as u64
            );
        }
        tree.debug_assert_consistent();
        let mut rebuilt = [false; 256];
        for (start, size) in tree.iter() {
            rebuilt[start as usize..(start + size) as usize].fill(true);
        }
        assert_eq!(rebuilt, model);
    }
}
