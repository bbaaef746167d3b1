//! Writeback: file data of the open txg written early, outside the pool's lock.
//!
//! OpenZFS overlaps an open txg (taking writes) with a syncing one (writing them out).
//! Here every operation holds the pool's lock, and a txg commit used to write all of its
//! dirty data inside the write that crossed the dirty limit, so writers stalled for the
//! whole commit (PERFORMANCE.md, cause 1). Writeback takes the bulk of that work out of the
//! lock: once the open txg holds `start_bytes` of dirty data, `note_dirty` copies up to
//! `batch_bytes` of dirty file records out of the object sets (`ObjectSet::
//! writeback_claim`) and a thread compresses, checksums, allocates and writes them with
//! shared handles to the pipeline and the vdev tree, while writers keep the lock. The next
//! `note_dirty` (or the next sync, which waits for it) installs the written blocks
//! (`ObjectSet::writeback_install`): each record still holding the written bytes takes its
//! block and leaves memory, the others keep their dirty data and their early block is
//! freed at once (it was never referenced).
//!
//! One batch is in flight at a time, in the txg it was claimed in: `sync` installs it
//! before it writes anything, so every early block is born in the txg whose tree takes
//! it, and a crash before the commit leaves it as free space of an uncommitted txg.
//! Anything that replaces the vdev tree (`root_mut`) also waits for the batch first.
//!
//! `Inline` mode writes the batch at once in the caller (same effect on disk, same order);
//! the daemon uses `Threaded`. Under simulation (the vdev tree's leaves are all devices of
//! one `io::SimWorld`) `Threaded` runs the very same batch closure, but the world decides
//! when: it is queued (`SimWorld::spawn`) instead of given a thread, and runs at a seeded
//! scheduling point (the harness's steps between operations, the reap's `step` before it
//! looks for a finished batch) or, at the latest, when the pool waits for it (the sync, a
//! change of the vdev tree, the space check), where it runs in the waiter's place. So the
//! crash simulation cuts the power before, inside and after an early batch, before its
//! install and during the sync, and every seed replays exactly.

use super::{Spa, SpaError};
use crate::dmu::objset::WritebackRecord;
use crate::dmu::IoCtx;
use crate::types::Txg;
use crate::vdev::Vdev;
use crate::zio::blkptr::BlockPointer;
use crate::zio::{BlockSource, Zio, ZioError};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;

/// Dirty data of the open txg at which writeback starts.
pub const WRITEBACK_START_BYTES: u64 = 32 << 20;
/// Most file data one writeback batch carries.
pub const WRITEBACK_BATCH_BYTES: u64 = 32 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritebackMode {
    /// Never write early: the txg commit writes everything.
    Off,
    /// Write a batch in the caller, install it at the next `note_dirty` or sync.
    Inline,
    /// Write a batch on its own thread.
    Threaded,
}

/// Which object set a record came from: the root dataset or a head dataset by object.
type Origin = Option<u64>;

struct Batch {
    txg: Txg,
    records: Vec<(Origin, WritebackRecord)>,
}

struct Done {
    batch: Batch,
    written: Result<Vec<BlockPointer>, ZioError>,
}

#[derive(Default)]
struct Slot {
    done: Mutex<Option<Done>>,
    ready: Condvar,
}

pub(crate) struct Writeback {
    pub mode: WritebackMode,
    pub start_bytes: u64,
    pub batch_bytes: u64,
    inflight: Option<Arc<Slot>>,
    /// The simulated world running the batch in flight (`Threaded` under simulation).
    sim: Option<Arc<crate::io::SimWorld>>,
    /// Bytes installed early since import (statistics, tests).
    pub installed_bytes: u64,
    /// Early blocks freed because their record changed first (statistics, tests).
    pub discarded_blocks: u64,
    /// Dirty data the last claim left behind (all-zero records, growing blocks, append
    /// frontiers): the next claim waits for a batch of new dirty data beyond it, so
    /// a txg full of such records is not scanned again on every write.
    unclaimable_bytes: u64,
}

impl Default for Writeback {
    fn default() -> Self {
        Writeback {
            mode: WritebackMode::Inline,
            start_bytes: WRITEBACK_START_BYTES,
            batch_bytes: WRITEBACK_BATCH_BYTES,
            inflight: None,
            sim: None,
            installed_bytes: 0,
            discarded_blocks: 0,
            unclaimable_bytes: 0,
        }
    }
}

fn write_batch(zio: &Zio, root: &Vdev, batch: &Batch) -> Result<Vec<BlockPointer>, ZioError> {
    let sources = batch
        .records
        .iter()
        .map(|(_, r)| BlockSource {
            data: &r.data,
            props: r.props,
            stored: None,
            rewrite: None,
        })
        .collect();
    zio.write_block_sources(root, sources, batch.txg)
}

impl Spa {
    /// How this pool writes file data early (the daemon: `Threaded`).
    pub fn set_writeback(&mut self, mode: WritebackMode, start_bytes: u64, batch_bytes: u64) {
        self.writeback_reap(true);
        self.writeback.mode = mode;
        self.writeback.start_bytes = start_bytes;
        self.writeback.batch_bytes = batch_bytes;
    }

    /// Bytes of file data installed by writeback since import.
    pub fn writeback_installed_bytes(&self) -> u64 {
        self.writeback.installed_bytes
    }

    /// Blocks written early and freed because their record changed before the install.
    pub fn writeback_discarded_blocks(&self) -> u64 {
        self.writeback.discarded_blocks
    }

    /// The vdev tree for a change of its shape: waits for a batch in flight, which holds
    /// the tree.
    pub fn root_mut(&mut self) -> &mut Vdev {
        self.writeback_reap(true);
        // A txg in its tail holds the tree too (`txg`); its outcome waits for the retire.
        self.sync_wait_tail();
        // Only a writeback batch and a sync tail share the tree, and each lets go of it
        // before it reports: after the waits the pool holds the only reference.
        Arc::get_mut(&mut self.root).expect("no writeback batch or sync tail holds the vdev tree")
    }

    /// Starts a batch when the open txg holds enough dirty data and none is in flight.
    pub(crate) fn writeback_start(&mut self) {
        let wanted = self
            .writeback
            .start_bytes
            .max(self.writeback.unclaimable_bytes + self.writeback.batch_bytes);
        if self.writeback.mode == WritebackMode::Off
            || self.writeback.inflight.is_some()
            || self.dirty_bytes < wanted
        {
            return;
        }
        let max = self.writeback.batch_bytes;
        let mut records = Vec::new();
        let mut taken = 0u64;
        let mut claim = |origin: Origin, os: &crate::dmu::ObjectSet, taken: &mut u64| {
            if *taken >= max {
                return;
            }
            let mut out = Vec::new();
            *taken += os.writeback_claim(max - *taken, &mut out);
            records.extend(out.into_iter().map(|r| (origin, r)));
        };
        claim(None, &self.dp.root_dataset, &mut taken);
        for (&object, head) in &self.dp.datasets {
            claim(Some(object), &head.objset, &mut taken);
        }
        self.writeback.unclaimable_bytes = self.dirty_bytes.saturating_sub(taken);
        if records.is_empty() {
            return;
        }
        let batch = Batch {
            txg: self.open_txg,
            records,
        };
        let slot = Arc::new(Slot::default());
        match self.writeback.mode {
            WritebackMode::Threaded => {
                let world = self.root.sim_world();
                let (zio, root, slot) = (self.zio.clone(), self.root.clone(), slot.clone());
                let task = move || {
                    let written = write_batch(&zio, &root, &batch);
                    drop((zio, root));
                    *slot.done.lock() = Some(Done { batch, written });
                    slot.ready.notify_all();
                };
                match &world {
                    Some(world) => world.spawn(Box::new(task)),
                    None => {
                        std::thread::spawn(task);
                    }
                }
                self.writeback.sim = world;
            }
            _ => {
                let written = write_batch(&self.zio, &self.root, &batch);
                *slot.done.lock() = Some(Done { batch, written });
            }
        }
        self.writeback.inflight = Some(slot);
    }

    /// A txg commit leaves no dirty data behind.
    pub(crate) fn writeback_committed(&mut self) {
        self.writeback.unclaimable_bytes = 0;
    }

    /// Bytes of dirty data whose early blocks are allocated and written but not installed
    /// yet (space that check_space must not count twice); waits for a batch in flight.
    pub(crate) fn writeback_settled_bytes(&self) -> u64 {
        let Some(slot) = &self.writeback.inflight else {
            return 0;
        };
        if let Some(world) = &self.writeback.sim {
            // Under simulation the batch runs in the waiter's place.
            world.run_pending();
        }
        let mut guard = slot.done.lock();
        while guard.is_none() {
            slot.ready.wait(&mut guard);
        }
        match guard.as_ref() {
            Some(Done {
                batch,
                written: Ok(_),
            }) => batch.records.iter().map(|(_, r)| r.data.len() as u64).sum(),
            _ => 0,
        }
    }

    /// Installs the batch in flight once it is written (waiting for it when `wait`).
    /// Errors never fail the caller: records that were not installed stay dirty and the
    /// txg commit writes them (and reports what fails then).
    pub(crate) fn writeback_reap(&mut self, wait: bool) {
        let Some(slot) = self.writeback.inflight.clone() else {
            return;
        };
        if let Some(world) = &self.writeback.sim {
            // Under simulation: a seeded point where the batch may have finished by now;
            // one that must be waited for runs in the waiter's place.
            if wait {
                world.run_pending();
            } else {
                world.step();
            }
        }
        let done = {
            let mut guard = slot.done.lock();
            if guard.is_none() && wait {
                while guard.is_none() {
                    slot.ready.wait(&mut guard);
                }
            }
            match guard.take() {
                Some(done) => done,
                None => return,
            }
        };
        self.writeback.inflight = None;
        self.writeback.sim = None;
        if let Err(e) = self.writeback_install(done) {
            eprintln!(
                "zetta: pool '{}': early write-out not installed: {e}",
                self.name
            );
        }
    }

    fn writeback_install(&mut self, done: Done) -> Result<(), SpaError> {
        let Done { batch, written } = done;
        let bps = match written {
            Ok(bps) if bps.len() == batch.records.len() => bps,
            // Nothing to free: a failed batch left no block a record could name.
            Ok(_) | Err(_) => return Ok(()),
        };
        let current = self.open_txg;
        let mut unused = Vec::new();
        let mut released = 0u64;
        let mut by_origin: std::collections::BTreeMap<
            Origin,
            Vec<(WritebackRecord, BlockPointer)>,
        > = Default::default();
        for ((origin, record), bp) in batch.records.into_iter().zip(bps) {
            by_origin.entry(origin).or_default().push((record, bp));
        }
        let ctx = IoCtx {
            zio: &self.zio,
            root: &self.root,
            txg: current,
        };
        for (origin, written) in by_origin {
            let objset = match origin {
                None => Some(&mut self.dp.root_dataset),
                Some(object) => self.dp.datasets.get_mut(&object).map(|h| &mut h.objset),
            };
            match objset {
                Some(os) if batch.txg == current => {
                    released += os.writeback_install(&ctx, written, &mut unused)?;
                }
                _ => unused.extend(written.into_iter().map(|(_, bp)| bp)),
            }
        }
        for bp in &unused {
            // Born in `batch.txg` and never referenced: freed at once when that is still
            // the open txg, else with the usual deferral.
            self.zio.free_block(bp, true, current);
        }
        self.dirty_bytes = self.dirty_bytes.saturating_sub(released);
        self.dirty_share.publish(self.dirty_bytes);
        self.writeback.installed_bytes += released;
        self.writeback.discarded_blocks += unused.len() as u64;
        Ok(())
    }
}
