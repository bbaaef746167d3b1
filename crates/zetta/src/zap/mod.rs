//! The ZAP: objects that map names to values (OpenZFS `zap.c`, `zap_micro.c`, `zap_leaf.c`).
//! Directories (millions of entries), property lists and the dataset and snapshot
//! namespaces are ZAPs.
//!
//! A ZAP is an extendible hash stored in the data blocks of one DMU object, cut into 16 KiB
//! ZAP blocks (block n at byte n * 16384 of the object, whatever the DMU's own block size):
//!
//! ```text
//! block 0      header: magic, version, salt, entry count, depth, table location, next block
//!              bytes 8192..16384: the pointer table while it has <= 1024 slots
//! block 1..    leaves (see `leaf`), and, once depth > 10, the pointer table in its own run
//!              of blocks (2^depth u64 slots; the old run is freed when the table doubles)
//! ```
//!
//! A name's hash is SipHash-2-4 keyed by the object's random salt (`hash`); its top 48 bits
//! are the entry's key. The table has 2^depth slots; slot i holds the leaf whose prefix
//! matches the top `depth` bits of i's keys. A leaf with a prefix of L bits covers
//! 2^(depth - L) consecutive slots. A full leaf splits on its next key bit into itself and a
//! new block (the table doubles first when L = depth). Entries with equal keys get distinct
//! collision differentiators (cd, 16 bits); key | cd is the entry's cookie, unique in the
//! object and fixed for the entry's life. Cookies order the entries globally (leaves
//! partition the key space in order), which is what makes `zap_list` cursors stable.
//!
//! A small ZAP is a header and one leaf; the DMU grows a single-block object's block up to
//! the record size, so on disk it is one (compressed, mostly empty) block, the role OpenZFS's
//! micro ZAP plays. Leaves never merge (as in OpenZFS); removing entries leaves them sparse.
//!
//! Invariants: every operation touches the header, one table slot and one leaf (plus the
//! new leaf and table slots on a split). Every byte read is validated before use; a bad
//! header, table slot or leaf is `ZapError::Corrupt`, never a panic.

mod hash;
mod header;
mod leaf;
pub mod openzfs;
mod ops;

pub use hash::{siphash24, CURSOR_END};
pub use header::{ZapHeaderPhys, ZAP_VERSION};
pub use leaf::{Leaf, ValueKind, NAME_LEN_MAX_BYTES, VALUE_SIZE_MAX_BYTES, ZAP_BLOCK_SIZE_BYTES};
pub use ops::{
    zap_add, zap_add_bytes, zap_count, zap_create, zap_create_salted, zap_create_with_bonus,
    zap_destroy, zap_list, zap_list_all, zap_lookup, zap_lookup_bytes, zap_lookup_value,
    zap_remove, zap_stats, zap_update, zap_update_bytes, ZapEntry, ZapError, ZapStats, ZapValue,
    ZAP_CD_MAX,
};

#[cfg(test)]
mod tests;
