//! Per-dataset I/O counters since import (OpenZFS `dataset_kstats.c`: the `objset-0x…`
//! kstats the ZPL updates in `zfs_write`/`zfs_fsync`), extended with the request-size
//! histograms `zpool iostat -r` keeps per leaf (`vdev::stat_ex`), so that `zetta advise`
//! can compare a dataset's `recordsize` with the writes it actually receives.
//!
//! Theory. Every write a mounted filesystem takes (`zpl::zfs_vnops::ZfsMount::write`, one
//! FUSE WRITE request) lands here once: counted, its length in a power-of-two size bucket
//! (OpenZFS's `HISTO`, 25 buckets), and classified sequential or random. A write is
//! sequential when it starts where the previous write to the same object of the dataset
//! ended, or at offset 0 (a file written from its start); anything else is random. One
//! "previous write" is kept per dataset, not per file, so two files written at once look
//! random to each other: the classification is a heuristic for one dominant workload per
//! dataset (a database's files, a VM image), which is what a recordsize decision is
//! about. A write made durable at once (`O_SYNC`/`O_DSYNC` under `sync=standard`, any
//! write under `sync=always`) counts as a synchronous write, and every `fsync` is counted:
//! those are the intent-log commits a separate log device (SLOG) would absorb.
//!
//! Cost: a hash lookup of the dataset in the pool's table (the writer holds the pool
//! exclusively today, so no lock), then relaxed atomic adds and two relaxed stores; no
//! lock, no allocation after a dataset's first write. Counters live in memory only and
//! start at zero at import (as OpenZFS's kstats and `zpool iostat`'s histograms do);
//! nothing of this is on disk. Volumes are not counted (their block size is fixed at
//! creation).

use crate::vdev::stat_ex::{Histogram, SIZE_BUCKETS};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The counters of one dataset (by its head dataset's MOS object).
#[derive(Debug, Default)]
pub struct DatasetKstats {
    /// Write requests (`dataset_kstats_t`'s `writes`).
    pub writes: AtomicU64,
    /// Bytes they carried (`nwritten`).
    pub written_bytes: AtomicU64,
    /// Every write's size.
    pub write_size: Histogram<SIZE_BUCKETS>,
    /// The sizes of the writes classified random (see the module header).
    pub random_write_size: Histogram<SIZE_BUCKETS>,
    /// Writes made durable before they returned (`O_SYNC`, `sync=always`).
    pub sync_writes: AtomicU64,
    /// `fsync`/`fdatasync`/`fsyncdir` calls that reached the intent log.
    pub fsyncs: AtomicU64,
    last_object: AtomicU64,
    last_end_offset: AtomicU64,
}

/// A copy of one dataset's counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetKstatsSnapshot {
    pub writes: u64,
    pub written_bytes: u64,
    pub write_size: [u64; SIZE_BUCKETS],
    pub random_write_size: [u64; SIZE_BUCKETS],
    pub sync_writes: u64,
    pub fsyncs: u64,
}

impl DatasetKstats {
    /// Records one write of `len_bytes` at `offset` of `object`; `durable`: it was made
    /// durable before returning.
    pub fn record_write(&self, object: u64, offset: u64, len_bytes: u64, durable: bool) {
        let previous_object = self.last_object.swap(object, Ordering::Relaxed);
        let end_offset = offset.saturating_add(len_bytes);
        let previous_end = self.last_end_offset.swap(end_offset, Ordering::Relaxed);
        let sequential = offset == 0 || (previous_object == object && previous_end == offset);
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.written_bytes.fetch_add(len_bytes, Ordering::Relaxed);
        self.write_size.record(len_bytes);
        if !sequential {
            self.random_write_size.record(len_bytes);
        }
        if durable {
            self.sync_writes.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn record_fsync(&self) {
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> DatasetKstatsSnapshot {
        DatasetKstatsSnapshot {
            writes: self.writes.load(Ordering::Relaxed),
            written_bytes: self.written_bytes.load(Ordering::Relaxed),
            write_size: self.write_size.snapshot(),
            random_write_size: self.random_write_size.snapshot(),
            sync_writes: self.sync_writes.load(Ordering::Relaxed),
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
        }
    }
}

/// The counters of every dataset of one pool written since import, keyed by head dataset
/// MOS object (stable across renames).
#[derive(Debug, Default)]
pub struct DatasetKstatsTable {
    datasets: HashMap<u64, Arc<DatasetKstats>>,
}

impl DatasetKstatsTable {
    /// The counters of `dataset`, created at its first use.
    pub fn get_or_create(&mut self, dataset: u64) -> &DatasetKstats {
        self.datasets.entry(dataset).or_default()
    }

    /// The counters of `dataset`, if it was written since import.
    pub fn get(&self, dataset: u64) -> Option<DatasetKstatsSnapshot> {
        self.datasets.get(&dataset).map(|stats| stats.snapshot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why: the advisor's recordsize rule reads "N% of writes are 16K random" from these
    /// counters; a file written front to back must not count as random, 16K writes at
    /// scattered offsets must, each in the 16K bucket.
    #[test]
    fn sequential_and_random_writes_are_told_apart() {
        let mut table = DatasetKstatsTable::default();
        let stats = table.get_or_create(54);
        for i in 0..8u64 {
            stats.record_write(7, i * 131072, 131072, false);
        }
        for offset in [5u64, 1, 9, 3] {
            stats.record_write(8, offset * 16384 + 65536, 16384, true);
        }
        stats.record_fsync();
        let snapshot = table.get(54).expect("written");
        assert_eq!(snapshot.writes, 12);
        assert_eq!(snapshot.written_bytes, 8 * 131072 + 4 * 16384);
        assert_eq!(snapshot.write_size[17], 8, "128K writes");
        assert_eq!(snapshot.write_size[14], 4, "16K writes");
        assert_eq!(
            snapshot.random_write_size.iter().sum::<u64>(),
            4,
            "only the scattered 16K writes are random"
        );
        assert_eq!(snapshot.random_write_size[14], 4);
        assert_eq!((snapshot.sync_writes, snapshot.fsyncs), (4, 1));
        assert_eq!(
            table.get(55),
            None,
            "a dataset never written has no counters"
        );
    }
}
