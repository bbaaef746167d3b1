//! Per-leaf I/O histograms (OpenZFS `vdev_stat_ex_t`, filled in `vdev_stat_update`): what
//! `zpool iostat -l/-w/-r` print.
//!
//! Theory: every physical request a leaf completes lands in power-of-two buckets, once by
//! its latency in nanoseconds (37 buckets, `VDEV_L_HISTO_BUCKETS`: bucket `b` holds
//! `2^b ..= 2^(b+1)-1` ns, the last one everything above) and once by its size in bytes
//! (25 buckets, `VDEV_RQ_HISTO_BUCKETS`, up to 16 MiB and above). The bucket of a value is
//! `highbit64(v) - 1` clamped to the last bucket, 0 for 0 (OpenZFS's `HISTO` macro).
//! Sizes are kept apart for individual requests and aggregated ones (a vectored write of
//! several adjacent blocks, `issue_leaf_writes`), as `vsx_ind_histo`/`vsx_agg_histo`.
//!
//! What Zetta measures and what it cannot: a leaf request goes straight to its device
//! (there is no `vdev_queue`), so the time measured around the device call is both
//! OpenZFS's disk wait and its total wait, and queue waits are zero. The request's
//! priority (sync/async/scrub/trim) is not known at the leaf; the histograms are kept per
//! ZIO type (read, write) only, which is what `-w`'s total and disk columns and `-r`'s per
//! type sums need, not the per-priority columns.
//!
//! Cost: two clock reads and two relaxed atomic adds per request; no lock. Histograms are
//! counts since import (never stored on disk, as OpenZFS's).

use std::sync::atomic::{AtomicU64, Ordering};

/// `VDEV_L_HISTO_BUCKETS`.
pub const LATENCY_BUCKETS: usize = 37;
/// `VDEV_RQ_HISTO_BUCKETS`.
pub const SIZE_BUCKETS: usize = 25;

/// OpenZFS `HISTO(val, buckets)`: the power-of-two bucket of `value`.
pub fn bucket_of(value: u64, buckets: usize) -> usize {
    debug_assert!(buckets > 0);
    if value == 0 {
        return 0;
    }
    let high_bit = 63 - value.leading_zeros() as usize;
    high_bit.min(buckets - 1)
}

/// A histogram of `N` power-of-two buckets, updated with relaxed atomics.
#[derive(Debug)]
pub struct Histogram<const N: usize>([AtomicU64; N]);

impl<const N: usize> Default for Histogram<N> {
    fn default() -> Self {
        Histogram(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl<const N: usize> Histogram<N> {
    pub fn record(&self, value: u64) {
        self.0[bucket_of(value, N)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts, bucket by bucket.
    pub fn snapshot(&self) -> [u64; N] {
        std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }
}

/// Which way a request went (`zio_type_t`'s READ and WRITE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoType {
    Read,
    Write,
}

/// The histograms of one leaf, indexed by `IoType as usize`.
#[derive(Debug, Default)]
pub struct VdevStatEx {
    /// Device time of each request (`vsx_disk_histo`; also `vsx_total_histo`, see above).
    pub disk_latency: [Histogram<LATENCY_BUCKETS>; 2],
    /// Sizes of requests issued alone (`vsx_ind_histo`).
    pub individual_size: [Histogram<SIZE_BUCKETS>; 2],
    /// Sizes of requests that carried several adjacent blocks (`vsx_agg_histo`).
    pub aggregated_size: [Histogram<SIZE_BUCKETS>; 2],
}

impl VdevStatEx {
    /// Records one completed request of `size_bytes` that took `latency_ns` at the device.
    pub fn record(&self, io: IoType, size_bytes: u64, latency_ns: u64, aggregated: bool) {
        let index = io as usize;
        self.disk_latency[index].record(latency_ns);
        if aggregated {
            self.aggregated_size[index].record(size_bytes);
        } else {
            self.individual_size[index].record(size_bytes);
        }
    }
}

/// Nanoseconds since `start`, saturating.
pub fn elapsed_ns(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why: the buckets must be OpenZFS's (`HISTO`), or `zpool iostat -w/-r` rows mean
    /// other ranges than the same rows of OpenZFS.
    #[test]
    fn buckets_are_openzfs_highbit_minus_one() {
        assert_eq!(bucket_of(0, SIZE_BUCKETS), 0);
        assert_eq!(bucket_of(1, SIZE_BUCKETS), 0);
        assert_eq!(bucket_of(512, SIZE_BUCKETS), 9);
        assert_eq!(bucket_of(4095, SIZE_BUCKETS), 11);
        assert_eq!(bucket_of(4096, SIZE_BUCKETS), 12);
        assert_eq!(bucket_of(128 << 10, SIZE_BUCKETS), 17);
        assert_eq!(bucket_of(16 << 20, SIZE_BUCKETS), 24);
        assert_eq!(
            bucket_of(1 << 40, SIZE_BUCKETS),
            24,
            "clamped to the last bucket"
        );
        assert_eq!(bucket_of(u64::MAX, LATENCY_BUCKETS), 36);
    }

    /// Why: individual and aggregated requests are kept apart, by type.
    #[test]
    fn records_land_in_their_type_and_kind() {
        let stats = VdevStatEx::default();
        stats.record(IoType::Write, 4096, 1_000, false);
        stats.record(IoType::Write, 1 << 20, 3_000, true);
        stats.record(IoType::Read, 512, 100, false);
        let write = IoType::Write as usize;
        let read = IoType::Read as usize;
        assert_eq!(stats.individual_size[write].snapshot()[12], 1);
        assert_eq!(stats.aggregated_size[write].snapshot()[20], 1);
        assert_eq!(stats.individual_size[read].snapshot()[9], 1);
        assert_eq!(stats.disk_latency[write].count(), 2);
        assert_eq!(
            stats.disk_latency[write].snapshot()[9],
            1,
            "1000 ns: 512..1023"
        );
        assert_eq!(stats.disk_latency[read].snapshot()[6], 1, "100 ns: 64..127");
    }
}
