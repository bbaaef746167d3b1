//! The ZAP: objects that map names to values, in OpenZFS's on-disk format (`zap.c`,
//! `zap_micro.c`, `zap_leaf.c`). Directories (millions of entries), property lists and the
//! dataset and snapshot namespaces are ZAPs.
//!
//! A ZAP starts as a micro ZAP (`header::MicroBlock`): one block of 64-byte entries, each a
//! name under 50 bytes and one u64, grown by 512 bytes up to 128 KiB. An entry that does
//! not fit (a longer name, another value shape) or a full 128 KiB block makes it a fat
//! ZAP: an extendible hash in 16 KiB blocks, a header (`header::FatHeader`) with the
//! pointer table embedded in its second half, leaves of 24-byte chunks (`leaf`), and, once
//! the table outgrows 1024 slots, the table in its own run of blocks. `ops` holds the
//! operations and the theory of when each change happens.
//!
//! A name's hash is OpenZFS's `zap_hash` (salted CRC-64, top 28 bits; `hash`); slot i of
//! a table of 2^shift slots names the leaf whose prefix matches i's top bits; a leaf's
//! hash table buckets its entries by the bits after its prefix. Entries with equal hashes
//! get distinct collision differentiators (cd); (hash, cd) is fixed for an entry's life and
//! its serialized form (`hash::serialize`, OpenZFS's cursor) is the entry's cookie, which
//! orders `zap_list` walks and keeps readdir offsets stable and unique.
//!
//! The layouts and constants are the part-1 reader's (`openzfs`): one description of the
//! format, which the reader also uses to read what the engine writes (`tests`).
//!
//! Invariants: every operation touches block 0, one table slot and one leaf (plus the new
//! leaf and table slots on a split, the new table on a doubling). Every byte read is
//! validated before use; a bad header, table slot or leaf is `ZapError::Corrupt`, never a
//! panic. No lock is taken here: callers hold the object set mutably to change a ZAP.

mod hash;
mod header;
mod leaf;
pub mod openzfs;
mod ops;

pub use hash::{cursor_after, name_hash, CURSOR_END};
pub use header::{FatHeader, MicroBlock, MicroEntry};
pub use leaf::Leaf;
pub use ops::{
    zap_add, zap_add_bytes, zap_count, zap_create, zap_create_at, zap_create_salted,
    zap_create_with_bonus, zap_destroy, zap_is_micro, zap_list, zap_list_all, zap_lookup,
    zap_lookup_bytes, zap_lookup_value, zap_remove, zap_stats, zap_update, zap_update_bytes,
    zap_update_u16s, zap_zapify, ZapEntry, ZapError, ZapStats, ZapValue, NAME_LEN_MAX_BYTES,
    VALUE_SIZE_MAX_BYTES, ZAP_BLOCK_SIZE_BYTES, ZAP_CD_MAX,
};

#[cfg(test)]
mod tests;
