//! The ZAP name hash and cursor cookies, as OpenZFS computes them (`zap_hash` in
//! `zap_micro.c`, `zap_cursor_serialize` in `zap.c`).
//!
//! A name's hash is the CRC-64 (ECMA-182, reflected; `zfs_crc64_table`) of its bytes
//! without the NUL, seeded with the object's 64-bit salt, cut to its top 28 bits
//! (`zap_hashbits` of a ZAP without `ZAP_FLAG_HASH64`, which every engine ZAP is). The
//! computation itself is the part-1 reader's (`openzfs::zap_hash`): one implementation.
//!
//! An entry is identified by (hash, cd): entries with equal hashes get distinct collision
//! differentiators, the lowest unused one. Its cookie is OpenZFS's serialized cursor:
//!
//! ```text
//! bits 63..60 zero | 59..28 cd (u32) | 27..0 hash >> 36
//! ```
//!
//! Cursors walk entries in (hash, cd) order; a cookie names a position in that order, fixed
//! for the entry's life (splits move entries between leaves, never change their hash or
//! cd; an upgrade from micro to fat keeps each entry's cd), so readdir offsets stay stable
//! and unique across inserts and removals.

use super::openzfs::zap_hash_name;

/// `zap_hashbits` of the engine's ZAPs (no `ZAP_FLAG_HASH64`).
pub const HASH_BITS: u32 = 28;
/// The cursor value meaning "the walk is over" (OpenZFS's `-1ULL`; never an entry's cookie).
pub const CURSOR_END: u64 = u64::MAX;
/// Largest collision differentiator (`zap_maxcd` without `HASH64`: `-1U`, kept clear).
pub const CD_MAX: u64 = u32::MAX as u64 - 1;

const HASH_MASK: u64 = (1 << HASH_BITS) - 1;

/// A test's replacement hash: `Some(hash)` for the names it wants to force.
#[cfg(test)]
pub type HashOverride = fn(&[u8]) -> Option<u64>;

#[cfg(test)]
thread_local! {
    /// Test seam: replaces the hash of chosen names on this thread (forced collisions).
    pub static HASH_OVERRIDE: std::cell::Cell<Option<HashOverride>> =
        const { std::cell::Cell::new(None) };
}

/// The hash of a name in an object with this salt: top 28 bits of the salted CRC-64.
pub fn name_hash(salt: u64, name: &[u8]) -> u64 {
    #[cfg(test)]
    if let Some(forced) = HASH_OVERRIDE.with(|cell| cell.get()).and_then(|f| f(name)) {
        return forced & !((1u64 << (64 - HASH_BITS)) - 1);
    }
    zap_hash_name(salt, 0, name)
}

/// `zap_cursor_serialize`: the cookie of position (hash, cd).
pub fn serialize(hash: u64, cd: u32) -> u64 {
    (hash >> (64 - HASH_BITS)) | (u64::from(cd) << HASH_BITS)
}

/// The position a cookie names: (hash, cd). Cookies beyond any entry's (a cd past u32)
/// land on the next hash, cd 0; `None` past the last hash.
pub fn deserialize(cookie: u64) -> Option<(u64, u32)> {
    let hash = (cookie & HASH_MASK) << (64 - HASH_BITS);
    match u32::try_from(cookie >> HASH_BITS) {
        Ok(cd) => Some((hash, cd)),
        Err(_) => next_hash(hash).map(|h| (h, 0)),
    }
}

/// The smallest hash after `hash`, if any.
fn next_hash(hash: u64) -> Option<u64> {
    hash.checked_add(1u64 << (64 - HASH_BITS))
}

/// The cookie of the position just after the entry with cookie `cookie` (the next readdir
/// offset; `CURSOR_END` after the last possible position).
pub fn cursor_after(cookie: u64) -> u64 {
    match deserialize(cookie) {
        Some((hash, cd)) if u64::from(cd) < CD_MAX => serialize(hash, cd + 1),
        Some((hash, _)) => next_hash(hash).map_or(CURSOR_END, |h| serialize(h, 0)),
        None => CURSOR_END,
    }
}

/// The top `bits` bits of `hash` (0 when `bits` is 0): a pointer-table index or a prefix.
pub fn hash_prefix(hash: u64, bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        hash >> (64 - bits)
    }
}
