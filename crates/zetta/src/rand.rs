//! Randomness for guids and for the simulator. Production code draws from a process-wide
//! generator seeded from the OS clock and pid; tests replace the seed with `seed_thread` so
//! that a failing simulation replays exactly.
//!
//! The generator is SplitMix64: tiny, fast, and good enough for identifiers and fault choice
//! (nothing here is cryptographic).

use std::cell::Cell;

thread_local! {
    static STATE: Cell<u64> = Cell::new(initial_seed());
}

fn initial_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let thread_bits = {
        let marker = 0u8;
        &marker as *const u8 as u64
    };
    nanos ^ (u64::from(std::process::id()) << 32) ^ thread_bits.rotate_left(17)
}

/// One SplitMix64 step on an explicit state (used by the simulator's own generators).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random u64 from this thread's generator.
pub fn random_u64() -> u64 {
    STATE.with(|s| {
        let mut state = s.get();
        let value = splitmix64(&mut state);
        s.set(state);
        value
    })
}

/// Reseeds this thread's generator (tests and the simulator).
pub fn seed_thread(seed: u64) {
    STATE.with(|s| s.set(seed));
}

/// A small seeded generator object for code that needs its own stream.
#[derive(Clone, Debug)]
pub struct SeededRng {
    state: u64,
}

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        SeededRng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.state)
    }

    /// Uniform in `0..bound` (bound > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0);
        self.next_u64() % bound
    }

    pub fn fill(&mut self, buffer: &mut [u8]) {
        for chunk in buffer.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}
