//! Scrub and resilver: walk every block the pool references and verify or rebuild it
//! (OpenZFS `dsl_scan.c`).
//!
//! Scrub reads every copy of every block (all mirror children, all raidz columns including
//! parity) and rewrites whatever does not verify; blocks with no good copy go to the error
//! log. Resilver reads each block once from where it is good and writes it to the children
//! that miss it (a newly attached or replacing device, one back online: their DTLs,
//! `vdev::dtl`), then excises the txgs it covered from the DTLs and
//! finishes pending replacements. Both walk the committed state (they sync first) and record
//! their statistics in the MOS for `zpool status`.

use super::*;
use crate::vdev::ReadMode;
use crate::zio::Bookmark;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Data blocks a scan verifies together (on all cores, their reads in flight together).
const SCAN_BATCH_BLOCKS: usize = 32;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanFunction {
    #[default]
    None,
    Scrub,
    Resilver,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanState {
    #[default]
    None,
    Scanning,
    Finished,
    Canceled,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub function: ScanFunction,
    pub state: ScanState,
    pub start_secs: u64,
    pub end_secs: u64,
    pub to_examine_bytes: u64,
    pub examined_bytes: u64,
    pub repaired_bytes: u64,
    pub errors: u64,
}

impl ScanStats {
    /// `dsl_scan_phys_t` as the object directory's `scan` entry holds it (24 u64 words;
    /// OpenZFS `include/sys/dsl_scan.h`): 0 func (1 scrub, 2 resilver), 1 state (1
    /// scanning, 2 finished, 3 canceled), 7 start time, 8 end time, 9 to_examine,
    /// 10 examined, 12 processed (Zetta: bytes repaired), 13 errors; the txg ranges, queue,
    /// bookmarks and flags are zero (a scan does not resume across an import).
    pub fn to_scan_phys(&self) -> [u64; SCAN_PHYS_WORDS] {
        let mut w = [0u64; SCAN_PHYS_WORDS];
        w[0] = match self.function {
            ScanFunction::None => 0,
            ScanFunction::Scrub => 1,
            ScanFunction::Resilver => 2,
        };
        w[1] = match self.state {
            ScanState::None => 0,
            ScanState::Scanning => 1,
            ScanState::Finished => 2,
            ScanState::Canceled => 3,
        };
        w[7] = self.start_secs;
        w[8] = self.end_secs;
        w[9] = self.to_examine_bytes;
        w[10] = self.examined_bytes;
        w[12] = self.repaired_bytes;
        w[13] = self.errors;
        w
    }

    /// The inverse of `to_scan_phys`, for Zetta's and OpenZFS's pools alike; `None` when
    /// the entry is too short to be a `dsl_scan_phys_t`. A scan still running when the pool
    /// was last written reads back as canceled (nothing resumes it).
    pub fn from_scan_phys(words: &[u64]) -> Option<ScanStats> {
        if words.len() < 14 {
            return None;
        }
        Some(ScanStats {
            function: match words[0] {
                1 => ScanFunction::Scrub,
                2 => ScanFunction::Resilver,
                _ => ScanFunction::None,
            },
            state: match words[1] {
                1 | 3 => ScanState::Canceled,
                2 => ScanState::Finished,
                _ => ScanState::None,
            },
            start_secs: words[7],
            end_secs: words[8],
            to_examine_bytes: words[9],
            examined_bytes: words[10],
            repaired_bytes: words[12],
            errors: words[13],
        })
    }
}

/// Words of a `dsl_scan_phys_t` (`SCAN_PHYS_NUMINTS`).
pub const SCAN_PHYS_WORDS: usize = 24;

/// What a scan walks: the committed roots at its start, and the counters it starts from.
#[derive(Clone, Debug)]
pub struct ScanPlan {
    pub stats: ScanStats,
    roots: Vec<(u64, BlockPointer)>,
    repaired_before_bytes: u64,
}

impl Spa {
    /// Runs a full scrub; `cancel` stops it early (`zpool scrub -s`).
    pub fn scrub(&mut self, cancel: Option<&AtomicBool>) -> Result<ScanStats, SpaError> {
        self.run_scan(ScanFunction::Scrub, cancel, None)
    }

    /// A scrub observed from another thread: `progress` holds the bytes examined so far
    /// (against `ScanStats::to_examine_bytes`) and `cancel` stops it, for a process that
    /// keeps the pool open and reports `scrub in progress` while it runs.
    pub fn scrub_observed(
        &mut self,
        cancel: &AtomicBool,
        progress: &AtomicU64,
    ) -> Result<ScanStats, SpaError> {
        self.run_scan(ScanFunction::Scrub, Some(cancel), Some(progress))
    }

    /// Rebuilds children that miss data (after attach/replace) and completes replacements.
    pub fn resilver(&mut self) -> Result<ScanStats, SpaError> {
        // Every block born up to this txg is committed when the walk starts: the DTL
        // ranges through it are what the walk covers (`scn_max_txg`).
        self.sync()?;
        let max_txg = self.last_synced_txg;
        let stats = self.run_scan(ScanFunction::Resilver, None, None)?;
        if stats.state == ScanState::Finished {
            self.finish_resilver(max_txg)?;
        }
        self.sync()?;
        Ok(stats)
    }

    /// Whether a resilver has work: a leaf that can take writes misses txgs (its DTL is
    /// not empty). An offline or missing leaf's DTL grows until it is back: nothing to
    /// resilver before then (`zpool wait -t resilver` does not wait for it).
    pub fn needs_resilver(&self) -> bool {
        self.root
            .leaves()
            .iter()
            .any(|leaf| leaf.state().is_usable() && !leaf.dtl.is_empty())
    }

    fn run_scan(
        &mut self,
        function: ScanFunction,
        cancel: Option<&AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<ScanStats, SpaError> {
        if let Some(foreign) = self.openzfs.clone() {
            return Ok(self.scrub_openzfs(&foreign));
        }
        let plan = self.scan_prepare(function)?;
        let stats = self.scan_walk(&plan, cancel, progress);
        self.scan_finish(stats)
    }

    /// Scan step 1 (needs the pool exclusively): commit, so the walk sees everything, and
    /// record that a scan is running. A process holding the pool can then run the walk
    /// with shared access, letting status readers in while it runs.
    pub fn scan_prepare(&mut self, function: ScanFunction) -> Result<ScanPlan, SpaError> {
        self.sync()?;
        let (_, allocated, _) = self.space();
        self.scan = ScanStats {
            function,
            state: ScanState::Scanning,
            start_secs: now_secs(),
            to_examine_bytes: allocated,
            ..ScanStats::default()
        };
        if function == ScanFunction::Scrub {
            self.zio.errlog.lock().clear();
        }
        events::post(events::EngineEvent::ScanStart {
            pool_guid: self.guid.0,
            resilver: function == ScanFunction::Resilver,
        });
        let mut roots = vec![
            (0u64, self.dp.mos_bp),
            (self.dp.directory.root_dataset, self.dp.root_dataset_bp),
        ];
        for name in self.dataset_names()? {
            if let Some(dataset) = self.lookup_dataset(&name)? {
                if dataset != self.dp.directory.root_dataset {
                    let phys = self.read_dataset_phys(dataset)?;
                    if !phys.bp.is_hole() {
                        roots.push((dataset, phys.bp));
                    }
                }
            }
        }
        roots.extend(self.snapshot_roots()?);
        Ok(ScanPlan {
            stats: self.scan,
            roots,
            repaired_before_bytes: self.repaired_bytes_total(),
        })
    }

    fn repaired_bytes_total(&self) -> u64 {
        self.root
            .leaves()
            .iter()
            .map(|l| l.stats.repaired_bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Scan step 2 (shared access): reads every block of the committed trees, verifying
    /// and repairing; `progress` follows the bytes examined, `cancel` stops early.
    pub fn scan_walk(
        &self,
        plan: &ScanPlan,
        cancel: Option<&AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> ScanStats {
        let mode = match plan.stats.function {
            ScanFunction::Resilver => ReadMode::Resilver,
            _ => ReadMode::Scrub,
        };
        let mut stats = plan.stats;
        let mut canceled = false;
        let ctx = io_ctx!(self);
        // Data blocks are verified SCAN_BATCH_BLOCKS at a time on all cores, with their
        // device reads in flight together (OpenZFS issues scrub I/O asynchronously too);
        // indirect blocks at once, in walk order.
        let mut batch: Vec<(BlockPointer, Bookmark)> = Vec::with_capacity(SCAN_BATCH_BLOCKS);
        let scrub_batch = |batch: &mut Vec<(BlockPointer, Bookmark)>, stats: &mut ScanStats| {
            use rayon::prelude::*;
            let lost: Vec<bool> = batch
                .par_iter()
                .map(|(bp, bookmark)| {
                    ctx.zio
                        .scrub_block(ctx.root, bp, *bookmark, mode)
                        .unrecoverable
                })
                .collect();
            for ((bp, _), lost) in batch.drain(..).zip(lost) {
                stats.examined_bytes += bp.asize_total_bytes();
                stats.errors += u64::from(lost);
            }
            if let Some(progress) = progress {
                progress.store(stats.examined_bytes, Ordering::Relaxed);
            }
        };
        for &(objset, root_bp) in &plan.roots {
            let mut visit = |bp: &BlockPointer, bookmark: Bookmark| {
                if canceled {
                    return;
                }
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    canceled = true;
                    return;
                }
                batch.push((*bp, bookmark));
                if bp.level > 0 || batch.len() >= SCAN_BATCH_BLOCKS {
                    scrub_batch(&mut batch, &mut stats);
                }
            };
            // An unreadable indirect block was already counted by its own visit.
            let _ = ObjectSet::walk_blocks(&ctx, objset, &root_bp, &mut visit, true);
            scrub_batch(&mut batch, &mut stats);
        }
        stats.repaired_bytes = self.repaired_bytes_total() - plan.repaired_before_bytes;
        stats.state = if canceled {
            ScanState::Canceled
        } else {
            ScanState::Finished
        };
        stats.end_secs = now_secs();
        stats
    }

    /// Scan step 3 (exclusive again): records the outcome and commits it.
    pub fn scan_finish(&mut self, stats: ScanStats) -> Result<ScanStats, SpaError> {
        self.scan = stats;
        if stats.state == ScanState::Finished {
            // `dsl_scan_done` reassesses every DTL in the txg it finishes: each leaf's map
            // is rewritten (and made, if it had none), as on a pool OpenZFS scrubbed.
            for leaf in self.root.leaves() {
                leaf.dtl.mark_dirty();
            }
        }
        events::post(events::EngineEvent::ScanFinish {
            pool_guid: self.guid.0,
            resilver: stats.function == ScanFunction::Resilver,
            canceled: stats.state == ScanState::Canceled,
        });
        self.sync()?;
        Ok(stats)
    }

    /// After a resilver (`vdev_dtl_reassess` from `dsl_scan_done`): every leaf that is
    /// usable now got what it missed through `max_txg`, so those txgs leave its DTL;
    /// replacements drop the old device (and free its DTL object). Unlike OpenZFS, which
    /// keeps the DTL when the scan met unrecoverable blocks (and resilvers again), this
    /// excises anyway: what no copy held is lost everywhere, and is in the error log.
    fn finish_resilver(&mut self, max_txg: Txg) -> Result<(), SpaError> {
        for leaf in self.root.leaves() {
            if leaf.state().is_usable() {
                leaf.dtl.excise_before(max_txg.0 + 1);
            }
        }
        let mut retired = Vec::new();
        for top in self.root_mut().children.iter_mut() {
            vdev_ops::complete_replacements(top, &mut retired);
        }
        self.dtl_free(&retired)?;
        self.config_dirty = true;
        Ok(())
    }
}
