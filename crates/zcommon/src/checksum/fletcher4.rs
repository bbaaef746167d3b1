//! Fletcher-4: the default ZFS block checksum, and the running checksum of send streams.
//!
//! ZFS counterpart: `module/zcommon/zfs_fletcher.c` (scalar, superscalar and SIMD variants).
//!
//! Definition: the input is read as little-endian u32 words `w1..wn` (a trailing partial word is
//! zero-padded, an extension of ours: ZFS only ever checksums whole words). Four u64 sums start at
//! zero and, for every word, `a += w; b += a; c += b; d += c`, all wrapping modulo 2^64. The
//! checksum is `[a, b, c, d]`. Unrolled, the word at 1-based position `k` of `n` contributes to the
//! sums with the weights `1`, `t`, `t(t+1)/2` and `t(t+1)(t+2)/6` where `t = n - k + 1`.
//!
//! Fast path (the algebra ZFS's superscalar/SIMD code uses): `LANE_COUNT` independent lanes; lane
//! `j` runs the plain algorithm over words `j, j+N, j+2N, ...` (N = lane count). Those loops have
//! no dependencies between lanes, so the compiler vectorizes them. At the end the lane sums are
//! folded with fixed integer weights (see [`LaneSums::combine`]) into the sums of the whole run.
//! Whole runs are appended to an existing state with [`Sums::append_block`], which is what makes
//! the incremental [`Fletcher4`] independent of how its input is split.
//!
//! Invariants: `fletcher4`, `Fletcher4` fed in any split, and `fletcher4_reference` agree on every
//! input; nothing here can panic on any input length.

use super::Checksum256;

/// Size of one fletcher-4 input word.
pub const FLETCHER4_WORD_SIZE_BYTES: usize = 4;

/// Independent interleaved streams in the fast path. Eight u64 lanes fill two AVX2 registers
/// (or four SSE2 registers) per sum.
const LANE_COUNT: usize = 8;

/// Bytes consumed by one step of all lanes.
const LANE_STRIDE_BYTES: usize = LANE_COUNT * FLETCHER4_WORD_SIZE_BYTES;

/// Multiplicative inverse of 3 modulo 2^64, to divide exact multiples of 3 in wrapping arithmetic.
const INVERSE_OF_3_MOD_2_POW_64: u64 = 0xAAAA_AAAA_AAAA_AAAB;

/// The four running sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sums {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
}

impl Sums {
    #[inline(always)]
    fn push_word(&mut self, word: u64) {
        self.a = self.a.wrapping_add(word);
        self.b = self.b.wrapping_add(self.a);
        self.c = self.c.wrapping_add(self.b);
        self.d = self.d.wrapping_add(self.c);
    }

    /// Appends a run of `word_count` words whose sums, started from zero, are `block`.
    ///
    /// Processing the run word by word on top of `self` adds `L*a` to `b`, `L(L+1)/2 * a + L*b`
    /// to `c` and `L(L+1)(L+2)/6 * a + L(L+1)/2 * b + L*c` to `d` (L = `word_count`).
    fn append_block(&mut self, block: Sums, word_count: u64) {
        let length = word_count;
        // L(L+1)/2 computed exactly in u128, then reduced modulo 2^64.
        let triangle = ((u128::from(length) * (u128::from(length) + 1)) / 2) as u64;
        // L(L+1)(L+2)/6 = triangle * (L+2) / 3; the division is exact, so multiplying by the
        // inverse of 3 modulo 2^64 gives the true value modulo 2^64.
        let tetrahedral = triangle
            .wrapping_mul(length.wrapping_add(2))
            .wrapping_mul(INVERSE_OF_3_MOD_2_POW_64);
        let before = *self;
        self.a = before.a.wrapping_add(block.a);
        self.b = before
            .b
            .wrapping_add(length.wrapping_mul(before.a))
            .wrapping_add(block.b);
        self.c = before
            .c
            .wrapping_add(length.wrapping_mul(before.b))
            .wrapping_add(triangle.wrapping_mul(before.a))
            .wrapping_add(block.c);
        self.d = before
            .d
            .wrapping_add(length.wrapping_mul(before.c))
            .wrapping_add(triangle.wrapping_mul(before.b))
            .wrapping_add(tetrahedral.wrapping_mul(before.a))
            .wrapping_add(block.d);
    }

    fn to_checksum(self) -> Checksum256 {
        [self.a, self.b, self.c, self.d]
    }
}

/// The per-lane sums of the interleaved fast path.
struct LaneSums {
    a: [u64; LANE_COUNT],
    b: [u64; LANE_COUNT],
    c: [u64; LANE_COUNT],
    d: [u64; LANE_COUNT],
}

impl LaneSums {
    /// Folds the lanes into the sums of the whole interleaved run.
    ///
    /// With N lanes, lane j holds the words whose distance from the end `t` satisfies
    /// `t = N*(s+1) - j` where `s+1` is the distance inside the lane. Rewriting the global weights
    /// (`t`, `t(t+1)/2`, `t(t+1)(t+2)/6`) in the basis of the lane weights gives, per lane:
    ///   A += Aj
    ///   B += N*Bj - j*Aj
    ///   C += N^2*Cj - N(N+2j-1)/2*Bj + j(j-1)/2*Aj
    ///   D += N^3*Dj + (N^2(1-j) - N^3)*Cj + (N^3 - 3N^2(1-j) + N(3j^2-6j+2))/6*Bj
    ///        - j(j-1)(j-2)/6*Aj
    /// The divisions are exact; negative weights wrap, which is right modulo 2^64.
    fn combine(&self) -> Sums {
        let lanes = LANE_COUNT as i64;
        let mut sums = Sums::default();
        for lane in 0..LANE_COUNT {
            let j = lane as i64;
            let weight_b_a = -j;
            let weight_c_c = lanes * lanes;
            let weight_c_b = -lanes * (lanes + 2 * j - 1) / 2;
            let weight_c_a = j * (j - 1) / 2;
            let weight_d_d = lanes * lanes * lanes;
            let weight_d_c = lanes * lanes * (1 - j) - lanes * lanes * lanes;
            let weight_d_b = (lanes * lanes * lanes - 3 * lanes * lanes * (1 - j)
                + lanes * (3 * j * j - 6 * j + 2))
                / 6;
            let weight_d_a = -(j * (j - 1) * (j - 2)) / 6;
            let (lane_a, lane_b, lane_c, lane_d) =
                (self.a[lane], self.b[lane], self.c[lane], self.d[lane]);
            sums.a = sums.a.wrapping_add(lane_a);
            sums.b = sums
                .b
                .wrapping_add((lanes as u64).wrapping_mul(lane_b))
                .wrapping_add((weight_b_a as u64).wrapping_mul(lane_a));
            sums.c = sums
                .c
                .wrapping_add((weight_c_c as u64).wrapping_mul(lane_c))
                .wrapping_add((weight_c_b as u64).wrapping_mul(lane_b))
                .wrapping_add((weight_c_a as u64).wrapping_mul(lane_a));
            sums.d = sums
                .d
                .wrapping_add((weight_d_d as u64).wrapping_mul(lane_d))
                .wrapping_add((weight_d_c as u64).wrapping_mul(lane_c))
                .wrapping_add((weight_d_b as u64).wrapping_mul(lane_b))
                .wrapping_add((weight_d_a as u64).wrapping_mul(lane_a));
        }
        sums
    }
}

/// The lane loop. `bulk.len()` must be a multiple of `LANE_STRIDE_BYTES` (any remainder is
/// ignored). Written so the compiler can keep each sum array in vector registers.
#[inline(always)]
fn lane_sums_portable(bulk: &[u8]) -> LaneSums {
    let mut a = [0u64; LANE_COUNT];
    let mut b = [0u64; LANE_COUNT];
    let mut c = [0u64; LANE_COUNT];
    let mut d = [0u64; LANE_COUNT];
    for stride in bulk.chunks_exact(LANE_STRIDE_BYTES) {
        let mut words = [0u64; LANE_COUNT];
        for (word, bytes) in words
            .iter_mut()
            .zip(stride.chunks_exact(FLETCHER4_WORD_SIZE_BYTES))
        {
            *word = u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
        }
        for lane in 0..LANE_COUNT {
            a[lane] = a[lane].wrapping_add(words[lane]);
            b[lane] = b[lane].wrapping_add(a[lane]);
            c[lane] = c[lane].wrapping_add(b[lane]);
            d[lane] = d[lane].wrapping_add(c[lane]);
        }
    }
    LaneSums { a, b, c, d }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lane_sums_avx2(bulk: &[u8]) -> LaneSums {
    lane_sums_portable(bulk)
}

/// Lane sums of `bulk`, using AVX2 when the CPU has it.
fn lane_sums(bulk: &[u8]) -> LaneSums {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of a
            // `target_feature(enable = "avx2")` function; the body itself is safe Rust.
            return unsafe { lane_sums_avx2(bulk) };
        }
    }
    lane_sums_portable(bulk)
}

fn read_word(bytes: &[u8]) -> u64 {
    let mut word = [0u8; FLETCHER4_WORD_SIZE_BYTES];
    let len = bytes.len().min(FLETCHER4_WORD_SIZE_BYTES);
    word[..len].copy_from_slice(&bytes[..len]);
    u64::from(u32::from_le_bytes(word))
}

/// Fletcher-4 of `data` (fast path). Equal to [`fletcher4_reference`] on every input.
pub fn fletcher4(data: &[u8]) -> Checksum256 {
    let mut hasher = Fletcher4::new();
    hasher.update(data);
    hasher.finish()
}

/// The plain one-word-at-a-time definition. Slow; it is the specification the fast path is
/// tested against.
pub fn fletcher4_reference(data: &[u8]) -> Checksum256 {
    let mut sums = Sums::default();
    for bytes in data.chunks(FLETCHER4_WORD_SIZE_BYTES) {
        sums.push_word(read_word(bytes));
    }
    sums.to_checksum()
}

/// Incremental fletcher-4 (used for the running checksum of send streams). The result does not
/// depend on how the input is split across `update` calls; a trailing partial word is
/// zero-padded only when the checksum is read.
#[derive(Clone, Debug, Default)]
pub struct Fletcher4 {
    sums: Sums,
    pending_bytes: [u8; FLETCHER4_WORD_SIZE_BYTES],
    pending_len: usize,
}

impl Fletcher4 {
    pub fn new() -> Self {
        Fletcher4::default()
    }

    /// Feeds more bytes.
    pub fn update(&mut self, data: &[u8]) {
        let mut rest = data;
        if self.pending_len > 0 {
            let take = (FLETCHER4_WORD_SIZE_BYTES - self.pending_len).min(rest.len());
            self.pending_bytes[self.pending_len..self.pending_len + take]
                .copy_from_slice(&rest[..take]);
            self.pending_len += take;
            rest = &rest[take..];
            if self.pending_len < FLETCHER4_WORD_SIZE_BYTES {
                return;
            }
            self.sums.push_word(read_word(&self.pending_bytes));
            self.pending_len = 0;
        }
        let bulk_len = rest.len() - rest.len() % LANE_STRIDE_BYTES;
        if bulk_len > 0 {
            let (bulk, tail) = rest.split_at(bulk_len);
            let block = lane_sums(bulk).combine();
            self.sums
                .append_block(block, (bulk_len / FLETCHER4_WORD_SIZE_BYTES) as u64);
            rest = tail;
        }
        let mut words = rest.chunks_exact(FLETCHER4_WORD_SIZE_BYTES);
        for bytes in &mut words {
            self.sums.push_word(read_word(bytes));
        }
        let remainder = words.remainder();
        self.pending_bytes[..remainder.len()].copy_from_slice(remainder);
        self.pending_len = remainder.len();
    }

    /// The checksum of everything fed so far, without consuming the hasher.
    pub fn current(&self) -> Checksum256 {
        let mut sums = self.sums;
        if self.pending_len > 0 {
            sums.push_word(read_word(&self.pending_bytes[..self.pending_len]));
        }
        sums.to_checksum()
    }

    /// The checksum of everything fed.
    pub fn finish(self) -> Checksum256 {
        self.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::TestRng;

    // Why: a hand-computed vector pins the definition itself (word order, endianness, sum order)
    // independently of our code: words 1,2,3,4 give a=10, b=1+3+6+10=20, c=1+4+10+20=35,
    // d=1+5+15+35=56.
    #[test]
    fn hand_computed_vector() {
        let data: Vec<u8> = [1u32, 2, 3, 4]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        assert_eq!(fletcher4_reference(&data), [10, 20, 35, 56]);
        assert_eq!(fletcher4(&data), [10, 20, 35, 56]);
    }

    // Why: golden vectors freeze the on-disk checksum values (a change would make every existing
    // pool unreadable). Computed once with the reference implementation; both paths must match.
    #[test]
    fn golden_vectors() {
        let ramp: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
        let cases: [(&[u8], Checksum256); 4] = [
            (b"", [0, 0, 0, 0]),
            (b"abc", [0x0063_6261, 0x0063_6261, 0x0063_6261, 0x0063_6261]),
            (&[0xff; 16], GOLDEN_FF16),
            (&ramp, GOLDEN_RAMP4096),
        ];
        for (data, expected) in cases {
            assert_eq!(
                fletcher4_reference(data),
                expected,
                "reference, len {}",
                data.len()
            );
            assert_eq!(fletcher4(data), expected, "fast, len {}", data.len());
        }
    }

    const GOLDEN_FF16: Checksum256 = [0x3_ffff_fffc, 0x9_ffff_fff6, 0x13_ffff_ffec, 0x22_ffff_ffdd];
    const GOLDEN_RAMP4096: Checksum256 = [
        0x01ef_5f4b_3534,
        0x0003_d7ec_96d3_353e,
        0x0514_5f4c_dd70_d7ec,
        0x0a3c_bf79_cd87_9473,
    ];

    // Why: the multi-lane algebra and the block-append algebra are easy to get subtly wrong for
    // some lengths; compare against the definition on random data of many lengths, including
    // lengths that are not multiples of the word or the lane stride.
    #[test]
    fn fast_path_matches_reference_on_random_lengths() {
        let mut rng = TestRng::new(4);
        for len in (0..300).chain([1023, 4096, 4097, 65_535, 131_072, 131_075]) {
            let data = rng.bytes(len);
            assert_eq!(fletcher4(&data), fletcher4_reference(&data), "len {len}");
        }
        for _ in 0..200 {
            let len = rng.below(20_000);
            let data = rng.bytes(len);
            assert_eq!(fletcher4(&data), fletcher4_reference(&data), "len {len}");
        }
    }

    // Why: wrapping must be exercised; all-0xff input drives the sums past 2^64 quickly.
    #[test]
    fn fast_path_matches_reference_when_sums_wrap() {
        let data = vec![0xffu8; 1 << 20];
        assert_eq!(fletcher4(&data), fletcher4_reference(&data));
    }

    // Why: send streams feed the checksum record by record with arbitrary split points; the result
    // must not depend on them (including splits inside a word) and `current` must not disturb it.
    #[test]
    fn incremental_is_split_independent() {
        let mut rng = TestRng::new(7);
        for _ in 0..100 {
            let len = rng.below(5000);
            let data = rng.bytes(len);
            let expected = fletcher4_reference(&data);
            let mut hasher = Fletcher4::new();
            let mut offset = 0;
            while offset < data.len() {
                let step = (1 + rng.below(300)).min(data.len() - offset);
                hasher.update(&data[offset..offset + step]);
                offset += step;
                assert_eq!(hasher.current(), fletcher4_reference(&data[..offset]));
            }
            assert_eq!(hasher.finish(), expected);
        }
    }

    // Why: a single-byte-at-a-time feed is the most hostile split for the pending-word logic.
    #[test]
    fn incremental_byte_at_a_time() {
        let data = TestRng::new(9).bytes(777);
        let mut hasher = Fletcher4::new();
        for byte in &data {
            hasher.update(std::slice::from_ref(byte));
        }
        assert_eq!(hasher.finish(), fletcher4_reference(&data));
    }

    // Why: appending a run of zero words to a non-zero state must still shift the sums (b, c and d
    // keep growing from a), which checks `append_block` with an all-zero block.
    #[test]
    fn append_block_of_zero_words() {
        let mut data = vec![5u8, 0, 0, 0];
        data.extend(vec![0u8; 4096]);
        assert_eq!(fletcher4(&data), fletcher4_reference(&data));
        assert_eq!(fletcher4(&data)[1], 5 * 1025);
    }

    // Why: fletcher4 runs on every block read and write; this prints its throughput so
    // regressions are visible. Run with
    // `cargo test --release -p zetta-zcommon -- --ignored --nocapture fletcher4_throughput`.
    #[test]
    #[ignore]
    fn fletcher4_throughput() {
        let data = TestRng::new(1).bytes(128 * 1024);
        let measure = |function: fn(&[u8]) -> Checksum256, rounds: usize| {
            let start = std::time::Instant::now();
            let mut fold = 0u64;
            for _ in 0..rounds {
                fold = fold.rotate_left(1) ^ function(std::hint::black_box(&data))[3];
            }
            std::hint::black_box(fold);
            (data.len() * rounds) as f64 / start.elapsed().as_secs_f64() / (1u64 << 30) as f64
        };
        let fast_gib_per_sec = measure(fletcher4, 20_000);
        let reference_gib_per_sec = measure(fletcher4_reference, 2_000);
        println!("fletcher4 fast: {fast_gib_per_sec:.2} GiB/s");
        println!("fletcher4 reference: {reference_gib_per_sec:.2} GiB/s");
        assert!(fast_gib_per_sec > reference_gib_per_sec);
    }
}
