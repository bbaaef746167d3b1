//! Error types of the zcommon layer.
//!
//! ZFS counterpart: the `EINVAL`/`ENOTSUP` returns of `zfs_prop_*` property validation and the
//! `EIO`/`ECKSUM` returns of `zio_decompress_data`. Invariant: every error carries enough context
//! (property name and value, byte counts, algorithm) for a user-facing message without the caller
//! having to add any.

use std::fmt;

/// A dataset property value (`checksum=...`, `compression=...`) that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropertyError {
    /// A real ZFS value that this implementation does not provide (e.g. `checksum=skein`).
    Unsupported {
        property: &'static str,
        value: String,
    },
    /// Not a value ZFS knows for this property at all.
    Invalid {
        property: &'static str,
        value: String,
    },
}

impl fmt::Display for PropertyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyError::Unsupported { property, value } => write!(
                formatter,
                "{property}={value} is a ZFS value that is not supported by this implementation"
            ),
            PropertyError::Invalid { property, value } => {
                write!(
                    formatter,
                    "invalid value '{value}' for property '{property}'"
                )
            }
        }
    }
}

impl std::error::Error for PropertyError {}

/// A compressed block that cannot be decompressed into the caller's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompressError {
    /// The block pointer names a compression algorithm id we do not know.
    UnknownAlgorithm { algorithm_id: u8 },
    /// An uncompressed (`off`) block is shorter than its logical size.
    UncompressedTooShort {
        block_size_bytes: usize,
        logical_size_bytes: usize,
    },
    /// The payload is not a valid stream of the algorithm.
    Malformed {
        algorithm: &'static str,
        reason: String,
    },
    /// The payload decoded cleanly but not to exactly the logical size.
    LengthMismatch {
        algorithm: &'static str,
        produced_size_bytes: usize,
        logical_size_bytes: usize,
    },
}

impl fmt::Display for CompressError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompressError::UnknownAlgorithm { algorithm_id } => {
                write!(formatter, "unknown compression algorithm id {algorithm_id}")
            }
            CompressError::UncompressedTooShort {
                block_size_bytes,
                logical_size_bytes,
            } => write!(
                formatter,
                "uncompressed block of {block_size_bytes} bytes is shorter than its logical size \
                 of {logical_size_bytes} bytes"
            ),
            CompressError::Malformed { algorithm, reason } => {
                write!(formatter, "malformed {algorithm} payload: {reason}")
            }
            CompressError::LengthMismatch {
                algorithm,
                produced_size_bytes,
                logical_size_bytes,
            } => write!(
                formatter,
                "{algorithm} payload decompressed to {produced_size_bytes} bytes, expected \
                 {logical_size_bytes}"
            ),
        }
    }
}

impl std::error::Error for CompressError {}
