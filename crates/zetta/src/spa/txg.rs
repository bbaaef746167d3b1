//! Txg states and the sync thread (OpenZFS `txg.c`; the tail is `spa_sync`'s
//! `vdev_config_sync`).
//!
//! A txg is **open** while changes join it, **quiescing** while the commit takes it from
//! the writers, **syncing** while its blocks, the MOS, then the flushes, labels and
//! uberblocks go out, and **synced** once its uberblock is durable (`last_synced_txg`).
//! A commit has three steps:
//!
//! 1. `Spa::sync_quiesce` (pool lock held exclusively): retire a txg still in its tail,
//!    quiesce txg N, write it through the MOS (`spa/mod.rs` steps 0-4: object sets, sync
//!    tasks, history, space maps, MOS), fix what the tail will write (the uberblock, and
//!    the label config if it changed) and open N+1: `open_txg` advances and the dirty
//!    counters start again. N is now syncing.
//! 2. `SyncTail::run` (no pool lock; shared handles only: the vdev tree `Arc<Vdev>`): flush
//!    every leaf, even labels if the config changed, uberblocks, flush, odd labels. Readers
//!    and writers take the pool lock meanwhile and fill N+1.
//! 3. `Spa::sync_retire` (pool lock): N becomes synced: `last_synced_txg`, the allocators'
//!    `txg_committed` (frees of N-2 become allocatable).
//!
//! `Spa::sync` does all three in the caller (callers holding `&mut Spa`). The daemon runs
//! one sync thread per pool (`start_sync_thread`, OpenZFS `txg_sync_thread`) that commits
//! through `sync_pool`: every `TXG_TIMEOUT` with something dirty, or at once when woken
//! because the open txg's dirty data reached the sync threshold (`Spa::note_dirty` wakes
//! it instead of committing in the writer's request: `dmu::tx`,
//! `ZFS_DIRTY_DATA_SYNC_PERCENT` of `zfs_dirty_data_max`). Writers are throttled by
//! `dmu::tx::dmu_tx_wait` before they take the pool lock: delayed past
//! `ZFS_DELAY_MIN_DIRTY_PERCENT`, and at the max they wait here (`TxShared`'s `opened`
//! condvar) until a commit opens a new txg. With a sync thread no writer commits.
//!
//! **Locks and their order.** The sync lock (`TxShared::sync_lock`, held by `sync_pool`
//! from quiesce to retire: at most one txg syncs at a time, a second committer waits for
//! it) comes before the pool lock; the tail takes neither, only the devices. Hence:
//! nothing waits for a tail while holding a lock the tail needs, and a holder of the pool
//! lock may wait for the tail (`sync_retire`) — the sync thread never waits for its own
//! tail with the pool lock held. Whoever holds the pool lock next retires a finished tail
//! (the sync thread, or any `&mut Spa` path that needs the txg synced); retiring twice is a
//! no-op. What must see a retired txg waits for the tail first: a new quiesce, `sync`,
//! `root_mut` (the tail holds the vdev tree), `zil_commit`, and so scrub, resilver, vdev
//! changes and export, which start with a `sync`.
//!
//! **Crash safety of the overlap.** While N's uberblock is not durable, the newest valid
//! uberblock on disk is N-1's, and a power cut brings the pool back at N-1. Writers of N+1
//! meanwhile allocate and write new blocks (early file data, intent log blocks): only free
//! space, and nothing N-1 references is free — frees are deferred two txgs and released
//! only by `txg_committed` at retire, so space freed in N-1 or N stays allocated until N+1
//! or N+2 is synced, and a block born in N and freed in N+1 is deferred too (it is not of
//! the open txg). Under N-1 those new blocks are unreferenced free space. The intent log
//! is the exception that makes `zil_commit` wait for the tail: `zil::sync` at N cleared
//! the records of N (now in N's tree, not durable yet) and put a new chain head, born in
//! N, into N's ZIL header; N-1's header names the old chain. A record written during the
//! tail would go to the new chain, which N-1's replay never finds, and an fsync of a
//! change of N would find nothing to log and return before N is durable. So `zil_commit`
//! first retires the tail (correct before fast; `tests/zil_crash.rs` cuts the power right
//! after such an fsync).
//!
//! **Sync passes** (OpenZFS `spa_sync_iterate_to_convergence`). The space maps synced in
//! txg N hold every allocation and free of N, the MOS's own blocks and the space maps'
//! own blocks included (format 16; `zdb -bcc` checks it). Writing a space map dirties the
//! MOS, and writing the MOS allocates and frees, so steps 3-4 of `sync_quiesce` repeat:
//! pass P appends to each changed metaslab's map the allocations and frees made since pass
//! P-1 (a debug word with N and P before each run: `metaslab_sync`), writes the directory
//! (pass 1, or when a metaslab array was created) and syncs the MOS in pass P
//! (`ObjectSet::sync_pass`). The loop ends when that MOS sync left no allocation or free
//! for the maps. It converges because from pass 2 (`zio::SYNC_PASS_REWRITE`) a dirty MOS
//! block born in N is overwritten in place when its size is unchanged (no committed tree
//! reaches it), so a later pass allocates only for blocks dirtied for the first time (a
//! map's next block, a new indirect block), and from pass 8 (`SYNC_PASS_DONT_COMPRESS`)
//! sizes stop changing; a map condenses only in pass 1. Unlike OpenZFS, frees of later
//! passes are not deferred to txg N+1 through a bpobj: they go to the maps in the next
//! pass like any other (a block born in N and freed in the same txg is free at once and
//! its allocation, already in the map, is followed by its free). Allocations and frees
//! the maps have been given stay deferred in memory as before (`txg_committed`: two txgs,
//! `ms_defer`). A txg that has not converged in `SYNC_PASS_MAX` passes is an engine bug
//! and fails the commit.
//!
//! Under simulation (the leaves are devices of one `io::SimWorld`) `Spa::sync_in_background`
//! queues the tail in the world (`SimWorld::spawn`) like a writeback batch: it runs at a
//! seeded scheduling point (`step`) or in the place of whoever waits for it, so cuts land
//! inside the tail while the harness fills N+1, and a seed replays exactly.

use super::uberblock::Uberblock;
use super::{Spa, SpaError};
use crate::dmu::tx::Throttle;
use crate::io::{DeviceRef, SimWorld};
use crate::nvpair_xdr::XdrNvList;
use crate::types::Txg;
use crate::vdev::label;
use crate::vdev::Vdev;
use parking_lot::{Condvar, Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Seconds between commits of a pool with dirty data (OpenZFS `zfs_txg_timeout`).
pub const TXG_TIMEOUT: Duration = Duration::from_secs(5);

/// Sync passes after which a txg that still changes its space maps fails its commit
/// (an engine bug: OpenZFS's txgs take a handful, Zetta's two to four).
pub const SYNC_PASS_MAX: u32 = 100;

/// How long each phase of the last commit took (measurements: docs/PERFORMANCE.md).
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncPhases {
    /// Sync passes the MOS and the space maps took to converge (module header).
    pub sync_passes: u32,
    /// Waiting for and installing the early write batch (`writeback`).
    pub writeback: Duration,
    /// Dataset object sets (their dirty blocks, level by level) and their intent logs.
    pub objsets: Duration,
    pub sync_tasks: Duration,
    pub history_errlog: Duration,
    pub space_maps: Duration,
    /// Object directory and the MOS's own blocks.
    pub mos: Duration,
    /// The tail's first flush of every leaf (the txg's blocks become durable).
    pub flush_data: Duration,
    /// Label configs and their flushes (zero unless the config changed).
    pub labels: Duration,
    /// Uberblocks and their flush.
    pub uberblocks: Duration,
}

impl SyncPhases {
    /// The locked part (quiesce through the MOS).
    pub fn locked(&self) -> Duration {
        self.writeback
            + self.objsets
            + self.sync_tasks
            + self.history_errlog
            + self.space_maps
            + self.mos
    }

    /// The tail (flushes, labels, uberblocks).
    pub fn tail(&self) -> Duration {
        self.flush_data + self.labels + self.uberblocks
    }
}

/// The label config the tail writes when the vdev config changed: the pool's (MOS) config
/// as of txg N, from which each leaf's label is derived, and the hot spares' and cache
/// devices' own labels (`vdev::config::aux_label`).
pub(crate) struct LabelConfigs {
    pub config: XdrNvList,
    pub aux: Vec<(DeviceRef, XdrNvList)>,
}

/// What the tail writes, fixed at quiesce.
struct TailWork {
    root: Arc<Vdev>,
    ub: Uberblock,
    labels: Option<LabelConfigs>,
}

/// A txg in its syncing tail (see the module header): run once, by whoever comes first
/// (the committer without the pool lock, the simulator's scheduler, or a waiter), then
/// retired under the pool lock.
pub struct SyncTail {
    txg: Txg,
    config_changed: bool,
    work: Mutex<Option<TailWork>>,
    /// The outcome once run, and the phases with the tail's own times.
    done: Mutex<Option<(Result<(), SpaError>, SyncPhases)>>,
    ready: Condvar,
    phases: SyncPhases,
    /// The simulated world that schedules the tail, when it was queued there.
    sim: Mutex<Option<Arc<SimWorld>>>,
}

impl SyncTail {
    pub(crate) fn new(
        root: Arc<Vdev>,
        ub: Uberblock,
        labels: Option<LabelConfigs>,
        phases: SyncPhases,
    ) -> Arc<SyncTail> {
        Arc::new(SyncTail {
            txg: ub.txg,
            config_changed: labels.is_some(),
            work: Mutex::new(Some(TailWork { root, ub, labels })),
            done: Mutex::new(None),
            ready: Condvar::new(),
            phases,
            sim: Mutex::new(None),
        })
    }

    /// The txg this tail commits.
    pub fn txg(&self) -> Txg {
        self.txg
    }

    /// Whether it has run (its outcome waits for the retire).
    pub fn is_done(&self) -> bool {
        self.done.lock().is_some()
    }

    /// Runs the tail (OpenZFS `vdev_config_sync`): flush, even labels, uberblocks, flush,
    /// odd labels. Takes no engine lock; a no-op when someone else ran or runs it. The
    /// work, and with it the tail's reference to the vdev tree, is dropped before the
    /// outcome is published.
    pub fn run(&self) {
        let Some(work) = self.work.lock().take() else {
            return;
        };
        let mut phases = self.phases;
        let result = config_sync(&work, &mut phases);
        drop(work);
        *self.done.lock() = Some((result, phases));
        self.ready.notify_all();
    }

    /// Waits until the tail has run, running it in this thread when nobody has started it
    /// (under simulation: the world's queued work first, in its order).
    fn wait(&self) {
        let world = self.sim.lock().clone();
        if let Some(world) = world {
            world.run_pending();
        }
        self.run();
        let mut done = self.done.lock();
        while done.is_none() {
            self.ready.wait(&mut done);
        }
    }

    fn take_outcome(&self) -> Option<(Result<(), SpaError>, SyncPhases)> {
        self.done.lock().take()
    }
}

fn flush_leaves(root: &Vdev) -> Result<(), SpaError> {
    let errors = root.flush_all();
    if !root.state().is_usable() {
        if let Some(first) = errors.into_iter().next() {
            return Err(SpaError::Io(first.to_string()));
        }
        return Err(SpaError::DevicesUnavailable);
    }
    Ok(())
}

fn write_label_configs(root: &Vdev, labels: &LabelConfigs, which: &[usize]) {
    for (device, aux) in &labels.aux {
        let _ = label::write_config(device.as_ref(), aux, which);
    }
    for top in &root.children {
        for leaf in top.leaves() {
            let Some(device) = &leaf.device else { continue };
            if !leaf.state().is_usable() {
                continue;
            }
            let own =
                crate::vdev::config::label_config(&labels.config, Some(top.guid.0), leaf.guid.0);
            if label::write_config(device.as_ref(), &own, which).is_err() {
                crate::vdev::VdevStats::bump(&leaf.stats.write_errors, 1);
            }
        }
    }
}

fn write_uberblocks(root: &Vdev, ub: &Uberblock) -> Result<(), SpaError> {
    let mut written = 0;
    for top in &root.children {
        let slot_size = label::uberblock_slot_size_bytes(top.ashift) as usize;
        for leaf in top.leaves() {
            let Some(device) = &leaf.device else { continue };
            if !leaf.state().is_usable() {
                continue;
            }
            let size = device.size_bytes();
            let mut ok = true;
            for index in 0..label::LABEL_COUNT {
                let offset = label::uberblock_slot_offset(index, size, top.ashift, ub.txg);
                if device
                    .write_at(offset, &ub.encode(slot_size, offset))
                    .is_err()
                {
                    ok = false;
                }
            }
            if ok {
                written += 1;
            } else {
                crate::vdev::VdevStats::bump(&leaf.stats.write_errors, 1);
                leaf.fault();
            }
        }
    }
    if written == 0 || !root.state().is_usable() {
        return Err(SpaError::Io(
            "not enough devices took the uberblock".to_string(),
        ));
    }
    Ok(())
}

/// Steps 5-8 of the commit (see `spa/mod.rs`); the uberblock is the commit point.
fn config_sync(work: &TailWork, phases: &mut SyncPhases) -> Result<(), SpaError> {
    let mut mark = Instant::now();
    flush_leaves(&work.root)?;
    phases.flush_data = mark.elapsed();
    mark = Instant::now();
    if let Some(labels) = &work.labels {
        write_label_configs(&work.root, labels, &[0, 2]);
        flush_leaves(&work.root)?;
    }
    phases.labels = mark.elapsed();
    mark = Instant::now();
    write_uberblocks(&work.root, &work.ub)?;
    flush_leaves(&work.root)?;
    phases.uberblocks = mark.elapsed();
    if let Some(labels) = &work.labels {
        mark = Instant::now();
        write_label_configs(&work.root, labels, &[1, 3]);
        flush_leaves(&work.root)?;
        phases.labels += mark.elapsed();
    }
    Ok(())
}

/// What the sync thread and throttled writers share with the pool without its lock.
#[derive(Default)]
pub struct TxShared {
    /// Held from quiesce to retire by `sync_pool` (before the pool lock).
    sync_lock: Mutex<()>,
    thread: Mutex<ThreadState>,
    /// Wakes the sync thread.
    wake: Condvar,
    /// The open txg's dirty bytes, as the pool last published them (`dp_dirty_total`).
    dirty_bytes: AtomicU64,
    /// The write throttle's tunable, its last wake-up and its counters (`dmu::tx`).
    throttle: Throttle,
    /// A txg opened (the dirty counters started again): wakes throttled writers
    /// (`dp_spaceavail_cv`).
    opened: Condvar,
    opened_lock: Mutex<()>,
    /// A sync thread commits this pool.
    attached: AtomicBool,
    /// The thread that quiesced the last txg (tests check that no writer commits).
    last_committer: Mutex<Option<std::thread::ThreadId>>,
}

#[derive(Default)]
struct ThreadState {
    /// Commit now (the dirty budget is spent), without waiting for the timeout.
    wanted: bool,
    stop: bool,
}

impl TxShared {
    fn kick(&self) {
        self.thread.lock().wanted = true;
        self.wake.notify_all();
    }

    fn stop(&self) {
        self.thread.lock().stop = true;
        self.wake.notify_all();
        self.opened.notify_all();
    }

    fn stopped(&self) -> bool {
        self.thread.lock().stop
    }

    pub(crate) fn note_committer(&self) {
        *self.last_committer.lock() = Some(std::thread::current().id());
    }

    /// The thread that quiesced the last txg committed.
    pub fn last_committer(&self) -> Option<std::thread::ThreadId> {
        *self.last_committer.lock()
    }

    /// The write throttle of this pool (`dmu::tx`).
    pub fn throttle(&self) -> &Throttle {
        &self.throttle
    }

    /// Whether a sync thread commits this pool.
    pub fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed)
    }

    /// The open txg's dirty bytes as last published.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_bytes.load(Ordering::Relaxed)
    }

    /// Waits, holding no engine lock, while the open txg holds `limit` dirty bytes or more
    /// and a sync thread is there to commit it (OpenZFS `dmu_tx_wait` on
    /// `dp_spaceavail_cv`); wakes the thread first.
    pub fn wait_while_dirty_at_least(&self, limit: u64) {
        while self.is_attached() && self.dirty_bytes() >= limit && !self.stopped() {
            self.kick();
            let mut guard = self.opened_lock.lock();
            if self.dirty_bytes() < limit {
                break;
            }
            // Re-checked after a while in any case: a wakeup lost to a race costs a second.
            self.opened.wait_for(&mut guard, Duration::from_secs(1));
        }
    }
}

/// A pool's txg state (OpenZFS `tx_state_t`).
#[derive(Default)]
pub(crate) struct TxState {
    /// The txg in its syncing tail, if any.
    pub syncing: Option<Arc<SyncTail>>,
    pub shared: Arc<TxShared>,
    /// The phases of the last commit retired.
    pub phases: SyncPhases,
}

impl TxState {
    /// A txg opened: its dirty counter starts at zero and throttled writers may go on.
    pub fn opened(&self, _txg: Txg) {
        self.shared.dirty_bytes.store(0, Ordering::Relaxed);
        let _guard = self.shared.opened_lock.lock();
        self.shared.opened.notify_all();
    }
}

impl Drop for TxState {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

impl Spa {
    /// Retires the txg in its tail, waiting for the tail (running it here when nobody has
    /// started it); returns the txg retired. An error is the tail's (the txg did not
    /// become durable; its config change is written again by the next commit).
    pub fn sync_retire(&mut self) -> Result<Option<Txg>, SpaError> {
        let Some(tail) = self.tx.syncing.take() else {
            return Ok(None);
        };
        tail.wait();
        self.sync_retire_outcome(&tail)
    }

    /// Retires the txg in its tail if the tail has finished (a scheduling point under
    /// simulation); never waits.
    pub fn sync_reap(&mut self) -> Result<Option<Txg>, SpaError> {
        let Some(tail) = self.tx.syncing.clone() else {
            return Ok(None);
        };
        let world = tail.sim.lock().clone();
        if let Some(world) = world {
            world.step();
        }
        if !tail.is_done() {
            return Ok(None);
        }
        self.tx.syncing = None;
        self.sync_retire_outcome(&tail)
    }

    fn sync_retire_outcome(&mut self, tail: &SyncTail) -> Result<Option<Txg>, SpaError> {
        let Some((result, phases)) = tail.take_outcome() else {
            return Ok(None);
        };
        self.tx.phases = phases;
        if let Err(e) = result {
            self.config_dirty |= tail.config_changed;
            return Err(e);
        }
        let txg = tail.txg;
        self.zio.allocator.lock().txg_committed(txg.0);
        self.zio.log_allocator.lock().txg_committed(txg.0);
        self.last_synced_txg = txg;
        Ok(Some(txg))
    }

    /// Waits for the tail in flight to finish (it then holds no vdev tree) and leaves its
    /// outcome for the next retire.
    pub(crate) fn sync_wait_tail(&self) {
        if let Some(tail) = &self.tx.syncing {
            tail.wait();
        }
    }

    /// The txg in its syncing tail, if one is.
    pub fn syncing_txg(&self) -> Option<Txg> {
        self.tx.syncing.as_ref().map(|t| t.txg)
    }

    /// How long each phase of the last retired commit took.
    pub fn last_sync_phases(&self) -> SyncPhases {
        self.tx.phases
    }

    /// Quiesces and writes the open txg, and lets its tail run in the background: under
    /// simulation queued in the world (a seeded point runs it), else on a thread of its
    /// own. The txg is retired by the next `sync_reap`/`sync_retire` (any commit, `zil_commit`,
    /// `root_mut`). Returns the txg now syncing.
    pub fn sync_in_background(&mut self) -> Result<Option<Txg>, SpaError> {
        let Some(tail) = self.sync_quiesce()? else {
            return Ok(None);
        };
        match self.root.sim_world() {
            Some(world) => {
                *tail.sim.lock() = Some(world.clone());
                let queued = tail.clone();
                world.spawn(Box::new(move || queued.run()));
            }
            None => {
                let running = tail.clone();
                std::thread::spawn(move || running.run());
            }
        }
        Ok(Some(tail.txg))
    }

    /// Whether a sync thread commits this pool (`start_sync_thread`).
    pub fn has_sync_thread(&self) -> bool {
        self.tx.shared.attached.load(Ordering::Relaxed)
    }

    /// The sync threshold is reached: with a sync thread, wake it (the writer goes on; the
    /// throttle of its next transaction delays it or waits for the commit, `dmu::tx`);
    /// without one, the writer is the syncing context and commits here. Returns whether
    /// the caller must commit in place.
    pub(crate) fn txg_dirty_budget_spent(&mut self) -> bool {
        if !self.has_sync_thread() {
            return true;
        }
        self.tx.shared.kick();
        false
    }

    /// What throttled writers share with this pool without its lock.
    pub fn tx_shared(&self) -> Arc<TxShared> {
        self.tx.shared.clone()
    }

    /// This pool's write throttle (`dmu::tx`).
    pub fn tx_throttle(&self) -> &Throttle {
        &self.tx.shared.throttle
    }

    /// Dirty bytes of the open txg at which the sync thread commits (or, without one, the
    /// writer): `ZFS_DIRTY_DATA_SYNC_PERCENT` of the pool's `zfs_dirty_data_max`.
    pub fn dirty_sync_bytes(&self) -> u64 {
        crate::dmu::tx::dirty_data_sync_bytes(self.tx.shared.throttle.dirty_data_max())
    }

    /// Publishes the open txg's dirty bytes for the throttle (`dmu::tx::dmu_tx_wait`).
    pub(crate) fn txg_publish_dirty(&self) {
        self.tx
            .shared
            .dirty_bytes
            .store(self.dirty_bytes, Ordering::Relaxed);
    }
}

/// Commits the pool's open txg as the sync thread does: quiesce and write it under the
/// pool lock, its tail without the pool lock, retire under the pool lock; the sync lock is
/// held throughout (see the module header). Returns the txg committed (the last synced
/// one when there was nothing to commit on a read-only pool).
pub fn sync_pool(pool: &RwLock<Spa>) -> Result<Txg, SpaError> {
    let shared = pool.read().tx.shared.clone();
    let _sync = shared.sync_lock.lock();
    let tail = {
        let mut spa = pool.write();
        match spa.sync_quiesce()? {
            Some(tail) => tail,
            None => return Ok(spa.last_synced_txg()),
        }
    };
    tail.run();
    let mut spa = pool.write();
    let ours = spa
        .tx
        .syncing
        .as_ref()
        .is_some_and(|t| Arc::ptr_eq(t, &tail));
    if ours {
        spa.sync_retire()?;
    }
    Ok(tail.txg)
}

/// A pool's sync thread (OpenZFS `txg_sync_thread`); stops when dropped, when the pool's
/// `Spa` goes, or when the pool's lock is gone.
pub struct SyncThread {
    shared: Arc<TxShared>,
    handle: Option<std::thread::JoinHandle<()>>,
    detached: bool,
}

impl SyncThread {
    /// Lets the thread run on its own: it ends when the pool's `Spa` is dropped (its
    /// `TxState` stops it) or its lock is gone (`into_inner` for an export).
    pub fn detach(mut self) {
        self.detached = true;
    }
}

impl Drop for SyncThread {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        self.shared.attached.store(false, Ordering::Relaxed);
        self.shared.stop();
        if let Some(handle) = self.handle.take() {
            // Never join from the thread itself (it may drop the last handle).
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

/// Starts the sync thread of `pool`: it commits every `timeout` when the pool has
/// something dirty, and at once when the dirty budget is spent.
pub fn start_sync_thread(pool: &Arc<RwLock<Spa>>, timeout: Duration) -> SyncThread {
    let shared = pool.read().tx.shared.clone();
    // A thread stopped before (dropped) leaves its stop flag behind.
    shared.thread.lock().stop = false;
    shared.attached.store(true, Ordering::Relaxed);
    let weak: Weak<RwLock<Spa>> = Arc::downgrade(pool);
    let thread_shared = shared.clone();
    let handle = std::thread::Builder::new()
        .name("txg_sync".to_string())
        .spawn(move || sync_thread(weak, thread_shared, timeout))
        .ok();
    SyncThread {
        shared,
        handle,
        detached: false,
    }
}

fn sync_thread(weak: Weak<RwLock<Spa>>, shared: Arc<TxShared>, timeout: Duration) {
    loop {
        let wanted = {
            let mut state = shared.thread.lock();
            if !state.wanted && !state.stop {
                // The daemon's `zfs_txg_timeout` is re-read at every wait, as OpenZFS's
                // txg_sync_thread does, so a change applies from the next txg.
                let timeout = if crate::tunables::active() {
                    crate::tunables::txg_timeout()
                } else {
                    timeout
                };
                shared.wake.wait_for(&mut state, timeout);
            }
            if state.stop {
                return;
            }
            std::mem::take(&mut state.wanted)
        };
        let Some(pool) = weak.upgrade() else {
            return;
        };
        let due = wanted || {
            let spa = pool.read();
            !spa.readonly && spa.has_dirty()
        };
        if due {
            if let Err(e) = sync_pool(&pool) {
                let name = pool.read().name.clone();
                eprintln!("zetta: pool '{name}': txg commit failed: {e}");
            }
        }
        drop(pool);
    }
}
