//! A tiny seeded random generator for tests (xorshift64*), so that every randomized test is
//! reproducible from its seed without pulling in a dependency.
//!
//! Not a ZFS subsystem; it plays the role of ztest's seeded RNG. Invariant: the same seed always
//! yields the same sequence.

pub struct TestRng {
    state: u64,
}

impl TestRng {
    pub fn new(seed: u64) -> Self {
        // A zero state would stay zero forever; mix the seed so every seed is usable.
        TestRng {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish value in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    pub fn fill(&mut self, buffer: &mut [u8]) {
        for byte in buffer.iter_mut() {
            *byte = self.next_u64() as u8;
        }
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut buffer = vec![0u8; len];
        self.fill(&mut buffer);
        buffer
    }
}
