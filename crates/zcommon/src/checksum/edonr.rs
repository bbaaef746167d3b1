//! Edon-R 512, the hash behind OpenZFS's `edonr` checksum (feature `org.illumos:edonr`), and
//! the salted form OpenZFS stores in block pointers.
//!
//! ZFS counterpart: `module/icp/algs/edonr/edonr.c` (`EdonRInit`/`Update`/`Final`, the
//! compression function `Q512`) and `module/zfs/edonr_zfs.c` (the salted template and the
//! `zio_checksum` entry points). This is an independent implementation from the algorithm's
//! definition; only the facts (constants, rotation amounts, word order, padding) are shared.
//!
//! Theory. Edon-R 512 is a wide-pipe Merkle–Damgård hash: a 16-word (1024-bit) chaining
//! value ("double pipe"), 128-byte message blocks read as sixteen LITTLE-endian u64s on every
//! host, and a compression function made of quasigroup operations (`ls1`, `ls2`, `qef`
//! below) applied in four rows, followed by a feed-forward "tweak". The digest is the upper
//! half of the final pipe (words 8..16), written as little-endian bytes: 64 bytes.
//!
//! Padding (whole bytes only, as OpenZFS only hashes whole bytes):
//!
//! ```text
//!  last (partial) block, tail = L bytes (0 <= L < 128)
//!  L < 120:   | tail (L) | 0x80 | 0x00 ... | total bits as u64 LE (bytes 120..128) |   one block
//!  L >= 120:  | tail (L) | 0x80 | 0x00 ...                  ... | total bits u64 LE |   two blocks
//!                                                               (bytes 248..256)
//! ```
//!
//! "total bits" counts every byte hashed, including a salt block fed first.
//!
//! Salting (OpenZFS's `abd_checksum_edonr_tmpl_init`). The pool's 32-byte checksum salt `s`
//! is too short for a block, so OpenZFS builds a 128-byte key block `H(s) || H(H(s))` (two
//! plain Edon-R 512 digests) and feeds it as the first message block; the block's data
//! follows in the same hash. The stored checksum is the first 32 bytes of the digest read as
//! four u64s in the block's byte order (`memcpy` into `zc_word` on the writer's host).
//!
//! Invariants: pure functions over byte slices, no panics on any input, no allocation
//! proportional to the input.

/// Edon-R 512's message block size.
pub const EDONR_BLOCK_BYTES: usize = 128;

/// Edon-R 512's digest size.
pub const EDONR_DIGEST_BYTES: usize = 64;

/// The initial double pipe: byte values 0x80..=0xff, eight to a word, big-end first.
const INITIAL_PIPE: [u64; 16] = initial_pipe();

const fn initial_pipe() -> [u64; 16] {
    let mut pipe = [0u64; 16];
    let mut index = 0;
    while index < 16 {
        let first = 0x80 + 8 * index as u64;
        let mut word = 0u64;
        let mut byte = 0;
        while byte < 8 {
            word = (word << 8) | (first + byte);
            byte += 1;
        }
        pipe[index] = word;
        index += 1;
    }
    pipe
}

/// The alternating-bit constant the first quasigroup layer adds (the second adds its
/// complement).
const ALTERNATING: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// First quasigroup layer (OpenZFS `LS1_512`).
fn ls1(x: [u64; 8]) -> [u64; 8] {
    let a = x[0].wrapping_add(x[4]);
    let b = x[1].wrapping_add(x[7]);
    let ab = a.wrapping_add(b);
    let c = x[2].wrapping_add(x[3]);
    let d = x[5].wrapping_add(x[6]);
    let cd = c.wrapping_add(d);
    [
        ALTERNATING.wrapping_add(ab).wrapping_add(x[2]),
        ab.wrapping_add(x[3]).rotate_left(5),
        ab.wrapping_add(x[6]).rotate_left(15),
        cd.wrapping_add(x[7]).rotate_left(22),
        cd.wrapping_add(x[1]).rotate_left(31),
        a.wrapping_add(c).wrapping_add(x[5]).rotate_left(40),
        b.wrapping_add(d).wrapping_add(x[0]).rotate_left(50),
        cd.wrapping_add(x[4]).rotate_left(59),
    ]
}

/// Second quasigroup layer (OpenZFS `LS2_512`).
fn ls2(y: [u64; 8]) -> [u64; 8] {
    let a = y[0].wrapping_add(y[1]);
    let b = y[2].wrapping_add(y[5]);
    let ab = a.wrapping_add(b);
    let c = y[3].wrapping_add(y[4]);
    let ac = a.wrapping_add(c);
    let d = y[6].wrapping_add(y[7]);
    let cd = c.wrapping_add(d);
    let bd = b.wrapping_add(d);
    [
        (!ALTERNATING).wrapping_add(ab).wrapping_add(y[7]),
        ac.wrapping_add(y[6]).rotate_left(10),
        ab.wrapping_add(y[3]).rotate_left(19),
        cd.wrapping_add(y[2]).rotate_left(29),
        ac.wrapping_add(y[5]).rotate_left(36),
        bd.wrapping_add(y[4]).rotate_left(44),
        bd.wrapping_add(y[1]).rotate_left(48),
        cd.wrapping_add(y[0]).rotate_left(55),
    ]
}

/// Combines the two layers' outputs (OpenZFS `QEF_512`).
fn qef(s: [u64; 8], t: [u64; 8]) -> [u64; 8] {
    let s04 = s[0] ^ s[4];
    let s23 = s[2] ^ s[3];
    let s56 = s[5] ^ s[6];
    let s17 = s[1] ^ s[7];
    let t01 = t[0] ^ t[1];
    let t67 = t[6] ^ t[7];
    let t34 = t[3] ^ t[4];
    let t25 = t[2] ^ t[5];
    [
        (s04 ^ s[1]).wrapping_add(t01 ^ t[5]),
        (s04 ^ s[7]).wrapping_add(t[2] ^ t67),
        (s17 ^ s[6]).wrapping_add(t01 ^ t[3]),
        (s23 ^ s[4]).wrapping_add(t[0] ^ t34),
        (s[0] ^ s17).wrapping_add(t[1] ^ t25),
        (s[3] ^ s56).wrapping_add(t34 ^ t[6]),
        (s[2] ^ s56).wrapping_add(t25 ^ t[7]),
        (s23 ^ s[5]).wrapping_add(t[4] ^ t67),
    ]
}

/// One quasigroup e-transformation step: `qef(ls1(left), ls2(right))`.
fn step(left: [u64; 8], right: [u64; 8]) -> [u64; 8] {
    qef(ls1(left), ls2(right))
}

fn half(words: &[u64; 16], upper: bool) -> [u64; 8] {
    let mut out = [0u64; 8];
    let start = if upper { 8 } else { 0 };
    out.copy_from_slice(&words[start..start + 8]);
    out
}

fn reversed(words: [u64; 8]) -> [u64; 8] {
    let mut out = words;
    out.reverse();
    out
}

/// The compression function over one 128-byte block (OpenZFS `Q512`, one iteration).
fn compress(pipe: &mut [u64; 16], block: &[u8]) {
    let mut m = [0u64; 16];
    for (word, bytes) in m.iter_mut().zip(block.chunks_exact(8)) {
        let mut word_bytes = [0u8; 8];
        word_bytes.copy_from_slice(bytes);
        *word = u64::from_le_bytes(word_bytes);
    }
    let (m_low, m_high) = (half(&m, false), half(&m, true));
    // Row 1: the message against itself.
    let mut p = step(reversed(m_high), m_low);
    let mut q = step(p, m_high);
    // Row 2: the pipe's upper half enters.
    p = step(half(pipe, true), p);
    q = step(p, q);
    // Row 3: the pipe's lower half enters.
    p = step(p, half(pipe, false));
    q = step(q, p);
    // Row 4: the message again, reversed low half.
    p = step(reversed(m_low), p);
    q = step(p, q);
    // Feed-forward.
    for index in 0..8 {
        pipe[index] ^= m[8 + index] ^ p[index];
        pipe[8 + index] ^= m[index] ^ q[index];
    }
}

/// An Edon-R 512 computation in progress: whole blocks go in through [`EdonR512::blocks`],
/// the rest through [`EdonR512::finish`].
#[derive(Clone, Debug)]
struct EdonR512 {
    pipe: [u64; 16],
    bytes_done: u64,
}

impl EdonR512 {
    fn new() -> Self {
        EdonR512 {
            pipe: INITIAL_PIPE,
            bytes_done: 0,
        }
    }

    /// Compresses every whole block of `data`; returns the tail (fewer than 128 bytes).
    fn blocks<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let mut chunks = data.chunks_exact(EDONR_BLOCK_BYTES);
        for block in &mut chunks {
            compress(&mut self.pipe, block);
            self.bytes_done = self.bytes_done.wrapping_add(EDONR_BLOCK_BYTES as u64);
        }
        chunks.remainder()
    }

    /// Pads `tail` (fewer than 128 bytes) and returns the digest.
    fn finish(mut self, tail: &[u8]) -> [u8; EDONR_DIGEST_BYTES] {
        let tail = &tail[..tail.len().min(EDONR_BLOCK_BYTES - 1)];
        let total_bits = self
            .bytes_done
            .wrapping_add(tail.len() as u64)
            .wrapping_mul(8);
        let mut last = [0u8; 2 * EDONR_BLOCK_BYTES];
        last[..tail.len()].copy_from_slice(tail);
        last[tail.len()] = 0x80;
        let padded = if tail.len() < EDONR_BLOCK_BYTES - 8 {
            EDONR_BLOCK_BYTES
        } else {
            2 * EDONR_BLOCK_BYTES
        };
        last[padded - 8..padded].copy_from_slice(&total_bits.to_le_bytes());
        for block in last[..padded].chunks_exact(EDONR_BLOCK_BYTES) {
            compress(&mut self.pipe, block);
        }
        let mut digest = [0u8; EDONR_DIGEST_BYTES];
        for (bytes, word) in digest.chunks_exact_mut(8).zip(self.pipe[8..].iter()) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        digest
    }
}

/// Plain (unsalted) Edon-R 512 of `message`.
pub fn edonr512(message: &[u8]) -> [u8; EDONR_DIGEST_BYTES] {
    let mut hasher = EdonR512::new();
    let tail = hasher.blocks(message);
    hasher.finish(tail)
}

/// The 128-byte key block OpenZFS derives from the pool's salt: `H(salt) || H(H(salt))`.
pub fn salt_block(salt: &[u8]) -> [u8; EDONR_BLOCK_BYTES] {
    let first = edonr512(salt);
    let second = edonr512(&first);
    let mut block = [0u8; EDONR_BLOCK_BYTES];
    block[..EDONR_DIGEST_BYTES].copy_from_slice(&first);
    block[EDONR_DIGEST_BYTES..].copy_from_slice(&second);
    block
}

/// Salted Edon-R 512 as OpenZFS's `edonr` checksum computes it: the key block from `salt`,
/// then `data`, in one hash. The block pointer keeps the first 32 bytes.
pub fn edonr512_salted(salt: &[u8], data: &[u8]) -> [u8; EDONR_DIGEST_BYTES] {
    let mut hasher = EdonR512::new();
    let key = salt_block(salt);
    let _ = hasher.blocks(&key);
    let tail = hasher.blocks(data);
    hasher.finish(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    // Why: Edon-R 512 must be the exact function OpenZFS runs; these are the digests OpenZFS's
    // own test program (tests/zfs-tests/cmd/checksum/edonr_test.c) expects for the NIST
    // example messages "abc" (one padded block) and the 112-byte message (padding that still
    // fits one block).
    #[test]
    fn known_answer_digests() {
        assert_eq!(
            hex(&edonr512(b"abc")),
            "1b14db155f1d406594b8cef70a4362ec6b5de6a5daf50ec999e987c19d3049e2\
             de5977bb05b1bb220050a1ea5b46a9f1740acafbf6b45032adc90c628372c22b"
        );
        let long = b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn\
hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
        assert_eq!(long.len(), 112);
        assert_eq!(
            hex(&edonr512(long)),
            "5351070dc51c3b2baca5a60d0252ccb4e4921a96fe5a69e76dad48fd21a0845a\
             d57f880b3e4a907bc503151842bb949e1cba7439a6409a34b8436cb46921583c"
        );
    }

    // Why: the padding has three shapes (tail < 120 bytes, tail of 120..127 bytes needing a
    // second block, whole blocks with an empty tail); every length must hash without a panic
    // and differ from its neighbours (the length is in the padding).
    #[test]
    fn every_tail_length_hashes_and_lengths_differ() {
        let data: Vec<u8> = (0..600u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut previous = None;
        for len in 0..data.len() {
            let digest = edonr512(&data[..len]);
            assert_ne!(Some(digest), previous, "length {len}");
            previous = Some(digest);
        }
        assert_ne!(edonr512(&[0u8; 128]), edonr512(&[0u8; 127]));
    }

    #[test]
    fn initial_pipe_is_the_byte_ladder() {
        assert_eq!(INITIAL_PIPE[0], 0x8081_8283_8485_8687);
        assert_eq!(INITIAL_PIPE[15], 0xf8f9_fafb_fcfd_feff);
    }
}
