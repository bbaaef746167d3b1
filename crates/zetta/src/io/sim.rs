//! The simulator's device: non-durable until flushed, with seeded faults (after
//! FoundationDB's simulated file and TigerBeetle's storage simulator).
//!
//! Writes go to a pending list and are visible to reads at once, as on a real disk with a
//! volatile cache; `flush` makes them durable. `power_cut` ends the world: each pending write
//! is, by the seeded policy, kept, dropped, or torn (only a prefix of its 512-byte sectors
//! lands). Other faults: failing every I/O (a pulled disk), misdirected writes, and bit rot on
//! the durable image. Every random choice comes from the seed given, so a run replays exactly.
//!
//! A `SimWorld` is what the devices of one simulated machine share, and the simulator's
//! scheduling seam: one seeded generator, one power switch, and the background work the
//! engine would run on threads. Theory: under simulation nothing that reaches a device runs
//! concurrently, so the sequence of device I/Os, and with it the cut, is a function of the
//! seed alone. Three rules keep it so: (1) a batch of leaf writes whose leaves are all
//! devices of one world is issued one run at a time, in an order drawn from the world's
//! generator, instead of in parallel (`vdev::issue_leaf_writes`); (2) work the engine would
//! hand to a background thread (`spa::writeback`'s `Threaded` batch) is handed to the world
//! instead (`spawn`), and the world runs it, on the caller's thread, at seeded points: at
//! `step` (the harness calls it between operations; the writeback reap calls it before it
//! looks for a finished batch) or when someone must wait for it (`run_pending`); (3) every
//! device of a world has its own crash budget (`arm_budget`) and the first one to run out
//! switches the world's power off: from then on every write and flush of every device in the
//! world fails, as when a machine loses power. Tasks are run only where the engine holds no
//! lock a task takes (the allocator, the vdev tree's state), never from inside a device I/O.
//! Production devices (`FileDevice`) have no world: nothing here changes their scheduling.
//!
//! The clock (`set_clock`) is the other source of difference between two runs of a seed
//! (uberblock timestamps, creation times, znode times): a simulation pins it per thread.

use super::{check_range, BlockDevice, IoError};
use crate::rand::SeededRng;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static CLOCK_SECS: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
    static SEQUENCE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Pins this thread's wall clock (seconds since the epoch) for `spa::now_secs` and
/// `Timespec::now`, so a seed's on-disk bytes do not depend on when it ran, and restarts
/// the thread's sequence (`sequence`); `None` restores the real clock.
pub fn set_clock(secs: Option<i64>) {
    CLOCK_SECS.with(|c| c.set(secs));
    SEQUENCE.with(|c| c.set(0));
}

/// Under a pinned clock, the next number of this thread's sequence, in place of a
/// process-wide counter (znode generations) that would differ between two runs of a seed.
pub fn sequence() -> Option<u64> {
    clock_secs()?;
    Some(SEQUENCE.with(|c| {
        let value = c.get();
        c.set(value + 1);
        value
    }))
}

/// This thread's pinned clock, if a simulation pinned it.
pub fn clock_secs() -> Option<i64> {
    CLOCK_SECS.with(|c| c.get())
}

/// Work the engine would run on a background thread.
pub type SimTask = Box<dyn FnOnce() + Send>;

struct WorldState {
    rng: SeededRng,
    tasks: std::collections::VecDeque<SimTask>,
    /// Tasks run so far (coverage statistics for the harness).
    tasks_run: u64,
}

/// The devices of one simulated machine and the simulator's scheduler (see the module
/// comment).
pub struct SimWorld {
    state: Mutex<WorldState>,
    power_off: AtomicBool,
    /// A queued task is running now.
    in_task: AtomicBool,
    /// The power went off while a queued task ran (coverage statistics).
    cut_in_task: AtomicBool,
}

impl SimWorld {
    pub fn new(seed: u64) -> Arc<SimWorld> {
        Arc::new(SimWorld {
            state: Mutex::new(WorldState {
                rng: SeededRng::new(seed),
                tasks: std::collections::VecDeque::new(),
                tasks_run: 0,
            }),
            power_off: AtomicBool::new(false),
            in_task: AtomicBool::new(false),
            cut_in_task: AtomicBool::new(false),
        })
    }

    /// A seeded draw in `0..bound` from the world's generator (the scheduler's choices).
    pub fn below(&self, bound: u64) -> u64 {
        self.state.lock().rng.below(bound.max(1))
    }

    /// Queues background work; it runs at a later seeded point (`step`) or when waited for
    /// (`run_pending`), never concurrently with the caller.
    pub fn spawn(&self, task: SimTask) {
        self.state.lock().tasks.push_back(task);
    }

    /// Runs every queued task now, oldest first, on this thread.
    pub fn run_pending(&self) {
        loop {
            let task = {
                let mut state = self.state.lock();
                let task = state.tasks.pop_front();
                if task.is_some() {
                    state.tasks_run += 1;
                }
                task
            };
            match task {
                Some(task) => {
                    self.in_task.store(true, Ordering::SeqCst);
                    task();
                    self.in_task.store(false, Ordering::SeqCst);
                }
                None => return,
            }
        }
    }

    /// A scheduling point: with a seeded chance (one in two) the queued tasks run now, as a
    /// background thread may have finished by then; otherwise they stay queued.
    pub fn step(&self) {
        let run = {
            let mut state = self.state.lock();
            !state.tasks.is_empty() && state.rng.below(2) == 0
        };
        if run {
            self.run_pending();
        }
    }

    pub fn has_pending(&self) -> bool {
        !self.state.lock().tasks.is_empty()
    }

    /// Tasks run since the world was made.
    pub fn tasks_run(&self) -> u64 {
        self.state.lock().tasks_run
    }

    /// Whether a device's crash budget ran out (every write and flush now fails).
    pub fn is_power_off(&self) -> bool {
        self.power_off.load(Ordering::SeqCst)
    }

    /// Whether the power went off while the world ran a queued (background) task.
    pub fn cut_in_background(&self) -> bool {
        self.cut_in_task.load(Ordering::SeqCst)
    }

    fn switch_power_off(&self) {
        if !self.power_off.swap(true, Ordering::SeqCst) && self.in_task.load(Ordering::SeqCst) {
            self.cut_in_task.store(true, Ordering::SeqCst);
        }
    }

    /// The process died: queued background work never runs. (The devices' pending writes
    /// are resolved by each device's `power_cut`.)
    pub fn kill_process(&self) {
        self.power_off.store(true, Ordering::SeqCst);
        self.state.lock().tasks.clear();
    }

    /// Power back on, for the import after a cut.
    pub fn restore_power(&self) {
        self.power_off.store(false, Ordering::SeqCst);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerCutPolicy {
    /// Every pending write reaches the platter (a clean shutdown without flush).
    KeepAll,
    /// Every pending write is lost.
    DropAll,
    /// Each pending write independently kept, dropped or torn.
    Random,
}

const CHUNK_SIZE_BYTES: usize = 64 << 10;

/// The durable image, sparse: 64 KiB chunks materialize on first write, so a simulated
/// 10 GiB device costs only what was written to it.
struct SparseImage {
    size_bytes: u64,
    chunks: std::collections::HashMap<u64, Box<[u8]>>,
}

impl SparseImage {
    fn read(&self, offset: u64, buffer: &mut [u8]) {
        let mut done = 0;
        while done < buffer.len() {
            let position = offset + done as u64;
            let chunk = position / CHUNK_SIZE_BYTES as u64;
            let within = (position % CHUNK_SIZE_BYTES as u64) as usize;
            let take = (CHUNK_SIZE_BYTES - within).min(buffer.len() - done);
            match self.chunks.get(&chunk) {
                Some(data) => {
                    buffer[done..done + take].copy_from_slice(&data[within..within + take])
                }
                None => buffer[done..done + take].fill(0),
            }
            done += take;
        }
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let position = offset + done as u64;
            let chunk = position / CHUNK_SIZE_BYTES as u64;
            let within = (position % CHUNK_SIZE_BYTES as u64) as usize;
            let take = (CHUNK_SIZE_BYTES - within).min(data.len() - done);
            let target = self
                .chunks
                .entry(chunk)
                .or_insert_with(|| vec![0u8; CHUNK_SIZE_BYTES].into_boxed_slice());
            target[within..within + take].copy_from_slice(&data[done..done + take]);
            done += take;
        }
    }
}

struct SimState {
    durable: SparseImage,
    pending: Vec<(u64, Vec<u8>)>,
    failed: bool,
    misdirect_per_million: u64,
    rng: SeededRng,
    writes: u64,
    flushes: u64,
    /// Shared countdown of I/Os until the power fails (all devices of a pool share one).
    crash_budget: Option<std::sync::Arc<std::sync::atomic::AtomicI64>>,
    /// This device's own countdown of writes and flushes until the world's power fails.
    budget: Option<i64>,
}

pub struct SimDevice {
    name: String,
    state: Mutex<SimState>,
    world: Option<Arc<SimWorld>>,
}

impl SimDevice {
    pub fn new(name: &str, size_bytes: u64, seed: u64) -> SimDevice {
        SimDevice::build(name, size_bytes, seed, None)
    }

    /// A device of `world`: its batches are issued in the world's seeded order and it
    /// shares the world's power switch.
    pub fn in_world(name: &str, size_bytes: u64, seed: u64, world: &Arc<SimWorld>) -> SimDevice {
        SimDevice::build(name, size_bytes, seed, Some(world.clone()))
    }

    fn build(name: &str, size_bytes: u64, seed: u64, world: Option<Arc<SimWorld>>) -> SimDevice {
        SimDevice {
            world,
            name: name.to_string(),
            state: Mutex::new(SimState {
                durable: SparseImage {
                    size_bytes,
                    chunks: std::collections::HashMap::new(),
                },
                pending: Vec::new(),
                failed: false,
                misdirect_per_million: 0,
                rng: SeededRng::new(seed),
                writes: 0,
                flushes: 0,
                crash_budget: None,
                budget: None,
            }),
        }
    }

    /// Cuts power: resolves pending writes by `policy` and returns how many were lost or torn.
    pub fn power_cut(&self, policy: PowerCutPolicy) -> usize {
        let mut state = self.state.lock();
        let pending = std::mem::take(&mut state.pending);
        let mut damaged = 0;
        for (offset, data) in pending {
            let choice = match policy {
                PowerCutPolicy::KeepAll => 0,
                PowerCutPolicy::DropAll => 1,
                PowerCutPolicy::Random => state.rng.below(3),
            };
            match choice {
                0 => state.durable.write(offset, &data),
                1 => damaged += 1,
                _ => {
                    let sectors = data.len().div_ceil(512);
                    let kept_bytes =
                        (state.rng.below(sectors as u64 + 1) as usize * 512).min(data.len());
                    state.durable.write(offset, &data[..kept_bytes]);
                    damaged += 1;
                }
            }
        }
        damaged
    }

    /// A pulled disk: every later I/O fails until `set_failed(false)`.
    pub fn set_failed(&self, failed: bool) {
        self.state.lock().failed = failed;
    }

    /// Sends this share of writes to a wrong (random, sector-aligned) offset.
    pub fn set_misdirect_per_million(&self, rate: u64) {
        self.state.lock().misdirect_per_million = rate;
    }

    /// Overwrites `len` durable bytes at `offset` with seeded garbage (bit rot).
    pub fn corrupt(&self, offset: u64, len: usize) {
        let mut state = self.state.lock();
        let mut garbage = vec![0u8; len];
        state.rng.fill(&mut garbage);
        let take = (state.durable.size_bytes.saturating_sub(offset) as usize).min(len);
        state.durable.write(offset, &garbage[..take]);
    }

    /// Arms a shared countdown: after `budget` more writes or flushes (summed over every
    /// device sharing it) the power is off and all I/O fails until `disarm`.
    pub fn arm_crash(&self, budget: std::sync::Arc<std::sync::atomic::AtomicI64>) {
        self.state.lock().crash_budget = Some(budget);
    }

    /// Arms this device's own countdown: its `budget`-th next write or flush fails and
    /// switches its world's power off (every device of the world then fails writes and
    /// flushes).
    pub fn arm_budget(&self, budget: i64) {
        self.state.lock().budget = Some(budget);
    }

    pub fn disarm(&self) {
        let mut state = self.state.lock();
        state.crash_budget = None;
        state.budget = None;
    }

    /// The durable image's written 64 KiB chunks, in offset order (what survives a cut;
    /// the simulation compares two runs of a seed with it byte for byte).
    pub fn durable_chunks(&self) -> Vec<(u64, Vec<u8>)> {
        let state = self.state.lock();
        let mut chunks: Vec<(u64, Vec<u8>)> = state
            .durable
            .chunks
            .iter()
            .map(|(&index, data)| (index * CHUNK_SIZE_BYTES as u64, data.to_vec()))
            .collect();
        chunks.sort_by_key(|(offset, _)| *offset);
        chunks
    }

    pub fn pending_writes(&self) -> usize {
        self.state.lock().pending.len()
    }

    pub fn counters(&self) -> (u64, u64) {
        let state = self.state.lock();
        (state.writes, state.flushes)
    }

    fn failure(&self) -> IoError {
        IoError::Failed {
            path: self.name.clone(),
            reason: "simulated device failure".to_string(),
        }
    }
}

impl SimDevice {
    /// Spends one write or flush of the crash budgets; false once the power is off.
    fn spend_budget(&self, state: &mut SimState) -> bool {
        if self.world.as_ref().is_some_and(|w| w.is_power_off()) {
            return false;
        }
        if let Some(budget) = &mut state.budget {
            if *budget <= 0 {
                if let Some(world) = &self.world {
                    world.switch_power_off();
                }
                return false;
            }
            *budget -= 1;
        }
        match &state.crash_budget {
            None => true,
            Some(budget) => budget.fetch_sub(1, Ordering::SeqCst) > 0,
        }
    }
}

impl BlockDevice for SimDevice {
    fn size_bytes(&self) -> u64 {
        self.state.lock().durable.size_bytes
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let state = self.state.lock();
        if state.failed {
            return Err(self.failure());
        }
        check_range(offset, buffer.len(), state.durable.size_bytes)?;
        let start = offset as usize;
        let end = start + buffer.len();
        state.durable.read(offset, buffer);
        for (write_offset, data) in &state.pending {
            let write_start = *write_offset as usize;
            let write_end = write_start + data.len();
            let lo = start.max(write_start);
            let hi = end.min(write_end);
            if lo < hi {
                buffer[lo - start..hi - start]
                    .copy_from_slice(&data[lo - write_start..hi - write_start]);
            }
        }
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let mut state = self.state.lock();
        if state.failed {
            return Err(self.failure());
        }
        let size = state.durable.size_bytes;
        check_range(offset, data.len(), size)?;
        if !self.spend_budget(&mut state) {
            return Err(self.failure());
        }
        state.writes += 1;
        let mut target = offset;
        if state.misdirect_per_million > 0
            && state.rng.below(1_000_000) < state.misdirect_per_million
        {
            let sectors = (size - data.len() as u64) / 512;
            target = state.rng.below(sectors.max(1)) * 512;
        }
        state.pending.push((target, data.to_vec()));
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        let mut state = self.state.lock();
        if state.failed {
            return Err(self.failure());
        }
        if !self.spend_budget(&mut state) {
            return Err(self.failure());
        }
        state.flushes += 1;
        let pending = std::mem::take(&mut state.pending);
        for (offset, data) in pending {
            state.durable.write(offset, &data);
        }
        Ok(())
    }

    fn path(&self) -> String {
        self.name.clone()
    }

    fn sim_world(&self) -> Option<&Arc<SimWorld>> {
        self.world.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator is only useful if unflushed writes really can vanish and flushed ones
    /// never do.
    #[test]
    fn unflushed_writes_are_lost_flushed_survive() {
        let device = SimDevice::new("d", 1 << 20, 7);
        device.write_at(0, &[1u8; 512]).unwrap();
        device.flush().unwrap();
        device.write_at(512, &[2u8; 512]).unwrap();
        let mut buffer = [0u8; 1024];
        device.read_at(0, &mut buffer).unwrap();
        assert_eq!(&buffer[512..], &[2u8; 512]);
        device.power_cut(PowerCutPolicy::DropAll);
        device.read_at(0, &mut buffer).unwrap();
        assert_eq!(&buffer[..512], &[1u8; 512]);
        assert_eq!(&buffer[512..], &[0u8; 512]);
    }

    /// Same seed, same faults: a failing simulation must replay exactly.
    #[test]
    fn power_cut_is_deterministic_per_seed() {
        let run = |seed| {
            let device = SimDevice::new("d", 1 << 20, seed);
            for i in 0..50u64 {
                device.write_at(i * 4096, &[i as u8 + 1; 4096]).unwrap();
            }
            device.power_cut(PowerCutPolicy::Random);
            let mut image = vec![0u8; 1 << 20];
            device.read_at(0, &mut image).unwrap();
            image
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
