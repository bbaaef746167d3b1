//! The ZAP name hash: SipHash-2-4 keyed by the object's 128-bit salt (OpenZFS `zap_hash`,
//! which uses a salted CRC-64 instead).
//!
//! SipHash is a keyed pseudo-random function: without the salt nobody can choose names that
//! collide, so a hostile user cannot pile a directory's entries into one leaf. The salt is
//! drawn at `zap_create` and stored in the header; the hash of a name never changes for the
//! life of the object, which the on-disk order of entries depends on.
//!
//! Written from the published algorithm (Aumasson and Bernstein, 2012): state words v0..v3
//! initialised from the key and the constants "somepseudorandomlygeneratedbytes"; each 8-byte
//! little-endian message word m is mixed as `v3 ^= m; 2 rounds; v0 ^= m`; the last word holds
//! the remaining bytes and the message length mod 256 in its top byte; finalisation is
//! `v2 ^= 0xff; 4 rounds; v0 ^ v1 ^ v2 ^ v3`.
//!
//! Only the top 48 bits of the hash are used (see `cookie_key`): the low 16 bits of an
//! entry's cookie are its collision differentiator.

/// Bits of an entry's cookie that hold its collision differentiator (`cd`).
pub const CD_BITS: u32 = 16;
/// Largest collision differentiator: cookies stay below `CURSOR_END`.
pub const CD_MAX: u64 = 0xFFFE;
/// The cursor value meaning "the walk is over" (never the cookie of an entry).
pub const CURSOR_END: u64 = u64::MAX;

const KEY_MASK: u64 = !((1u64 << CD_BITS) - 1);

fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

fn absorb(v: &mut [u64; 4], word: u64) {
    v[3] ^= word;
    round(v);
    round(v);
    v[0] ^= word;
}

/// SipHash-2-4 of `data` under the key (k0, k1) (k0 is the key's first 8 bytes, LE).
pub fn siphash24(key: [u64; 2], data: &[u8]) -> u64 {
    let mut v = [
        key[0] ^ 0x736f_6d65_7073_6575,
        key[1] ^ 0x646f_7261_6e64_6f6d,
        key[0] ^ 0x6c79_6765_6e65_7261,
        key[1] ^ 0x7465_6462_7974_6573,
    ];
    let words = data.chunks_exact(8);
    let tail = words.remainder();
    for chunk in words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        absorb(&mut v, u64::from_le_bytes(word));
    }
    let mut last = (data.len() as u64 & 0xff) << 56;
    for (i, byte) in tail.iter().enumerate() {
        last |= u64::from(*byte) << (8 * i);
    }
    absorb(&mut v, last);
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// A test's replacement hash: `Some(hash)` for the names it wants to force.
#[cfg(test)]
pub type HashOverride = fn(&[u8]) -> Option<u64>;

#[cfg(test)]
thread_local! {
    /// Test seam: replaces the hash of chosen names on this thread (forced collisions).
    pub static HASH_OVERRIDE: std::cell::Cell<Option<HashOverride>> =
        const { std::cell::Cell::new(None) };
}

/// The 64-bit hash of a name in an object with this salt.
pub fn name_hash(salt: [u64; 2], name: &[u8]) -> u64 {
    #[cfg(test)]
    if let Some(forced) = HASH_OVERRIDE.with(|cell| cell.get()).and_then(|f| f(name)) {
        return forced;
    }
    siphash24(salt, name)
}

/// The part of a hash (or cookie) that orders and routes entries: its top 48 bits.
pub fn cookie_key(hash: u64) -> u64 {
    hash & KEY_MASK
}

/// The collision differentiator held in a cookie's low bits.
pub fn cookie_cd(cookie: u64) -> u64 {
    cookie & !KEY_MASK
}

/// The top `bits` bits of `key` (0 when `bits` is 0): the pointer-table index at that depth,
/// or the prefix a leaf of that prefix length covers.
pub fn key_prefix(key: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        key >> (64 - bits)
    }
}
