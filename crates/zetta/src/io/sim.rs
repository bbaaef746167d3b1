//! The simulator's device: non-durable until flushed, with seeded faults (after
//! FoundationDB's simulated file and TigerBeetle's storage simulator).
//!
//! Writes go to a pending list and are visible to reads at once, as on a real disk with a
//! volatile cache; `flush` makes them durable. `power_cut` ends the world: each pending write
//! is, by the seeded policy, kept, dropped, or torn (only a prefix of its 512-byte sectors
//! lands). Other faults: failing every I/O (a pulled disk), misdirected writes, and bit rot on
//! the durable image. Every random choice comes from the seed given, so a run replays exactly.

use super::{check_range, BlockDevice, IoError};
use crate::rand::SeededRng;
use parking_lot::Mutex;

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
}

pub struct SimDevice {
    name: String,
    state: Mutex<SimState>,
}

impl SimDevice {
    pub fn new(name: &str, size_bytes: u64, seed: u64) -> SimDevice {
        SimDevice {
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

    pub fn disarm(&self) {
        self.state.lock().crash_budget = None;
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

impl SimState {
    /// Spends one I/O of the crash budget; false once the power is off.
    fn spend_budget(&mut self) -> bool {
        match &self.crash_budget {
            None => true,
            Some(budget) => budget.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) > 0,
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
        if !state.spend_budget() {
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
        if !state.spend_budget() {
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
