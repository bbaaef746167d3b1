//! Zetta's common pure-algorithm layer: block checksums and block compression.
//!
//! ZFS counterpart: OpenZFS `module/zcommon` (fletcher, property tables) plus the checksum and
//! compression back ends of `module/zfs` (`sha256.c`, `blake3_zfs.c`, `lz4_zfs.c`, `lzjb.c`,
//! `zle.c`, `gzip.c`, `zio_compress.c`, `zio_checksum.c`).
//!
//! Invariants: everything here is a pure function of its inputs (no I/O, no global state);
//! functions that read bytes from disk or from a stream (`compress::decompress`) return errors on
//! malformed input and never panic or write outside the caller's buffer; property parsing accepts
//! exactly the ZFS spellings this implementation supports and names the rest in its error.

pub mod checksum;
pub mod compress;
pub mod error;

#[cfg(test)]
mod openzfs_golden;
#[cfg(test)]
mod test_rng;

pub use checksum::{checksum, fletcher4, Checksum256, ChecksumKind, Fletcher4};
pub use compress::{compress, decompress, keep_compressed, Compression};
pub use error::{CompressError, PropertyError};
