//! Errors of the RAID-Z geometry and parity layer.
//!
//! ZFS counterpart: the `EINVAL`/`ECKSUM`/`EIO` returns scattered through
//! vdev_raidz.c. Here one enum keeps apart the three kinds of trouble a caller
//! must treat differently: a bad geometry or bad address (configuration or a
//! corrupt block pointer: never retry), a column of the wrong length (a caller
//! or device bug), and too many missing columns (the block is unrecoverable
//! from this stripe alone). Every input that can come from disk or from a
//! block pointer is checked and reported here; nothing in this crate panics on
//! such input.

use std::fmt;

/// What went wrong while mapping, splitting, assembling or reconstructing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RaidzError {
    /// Parity level outside `1..=PARITY_MAX`.
    ParityInvalid { parity: usize },
    /// Child count not in `parity + 1..=CHILDREN_MAX`.
    ChildrenInvalid { children: usize, parity: usize },
    /// Sector shift outside `ASHIFT_MIN..=ASHIFT_MAX`.
    AshiftInvalid { ashift: u32 },
    /// The raidz address is not a multiple of the sector size.
    OffsetMisaligned {
        offset_bytes: u64,
        sector_size_bytes: u64,
    },
    /// The block size is zero.
    SizeZero,
    /// The block size is not a multiple of the sector size.
    SizeMisaligned {
        psize_bytes: u64,
        sector_size_bytes: u64,
    },
    /// The block is larger than `BLOCK_SIZE_MAX_BYTES`.
    SizeTooLarge {
        psize_bytes: u64,
        size_bytes_max: u64,
    },
    /// `offset + asize` does not fit in the 64-bit address space.
    AddressOverflow,
    /// A caller's data buffer is not exactly `psize_bytes` long.
    DataLengthMismatch {
        expected_bytes: u64,
        actual_bytes: u64,
    },
    /// The caller passed a different number of columns than the map has.
    ColumnCountMismatch { expected: usize, actual: usize },
    /// A present column does not have the length the map gives it.
    ColumnLengthMismatch {
        column: usize,
        expected_bytes: u64,
        actual_bytes: u64,
    },
    /// More columns are missing than there are parity columns.
    TooManyMissing { missing: usize, parity: usize },
}

impl fmt::Display for RaidzError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RaidzError::ParityInvalid { parity } => {
                write!(f, "raidz parity {parity} is not in 1..=3")
            }
            RaidzError::ChildrenInvalid { children, parity } => write!(
                f,
                "raidz with parity {parity} cannot have {children} children"
            ),
            RaidzError::AshiftInvalid { ashift } => {
                write!(f, "raidz ashift {ashift} is out of range")
            }
            RaidzError::OffsetMisaligned {
                offset_bytes,
                sector_size_bytes,
            } => write!(
                f,
                "raidz offset {offset_bytes} is not aligned to the {sector_size_bytes}-byte sector"
            ),
            RaidzError::SizeZero => write!(f, "raidz block size is zero"),
            RaidzError::SizeMisaligned {
                psize_bytes,
                sector_size_bytes,
            } => write!(
                f,
                "raidz block size {psize_bytes} is not a multiple of the {sector_size_bytes}-byte sector"
            ),
            RaidzError::SizeTooLarge {
                psize_bytes,
                size_bytes_max,
            } => write!(
                f,
                "raidz block size {psize_bytes} exceeds the maximum {size_bytes_max}"
            ),
            RaidzError::AddressOverflow => {
                write!(f, "raidz block extends past the 64-bit address space")
            }
            RaidzError::DataLengthMismatch {
                expected_bytes,
                actual_bytes,
            } => write!(
                f,
                "raidz data buffer is {actual_bytes} bytes, expected {expected_bytes}"
            ),
            RaidzError::ColumnCountMismatch { expected, actual } => {
                write!(f, "raidz got {actual} columns, expected {expected}")
            }
            RaidzError::ColumnLengthMismatch {
                column,
                expected_bytes,
                actual_bytes,
            } => write!(
                f,
                "raidz column {column} is {actual_bytes} bytes, expected {expected_bytes}"
            ),
            RaidzError::TooManyMissing { missing, parity } => write!(
                f,
                "raidz cannot rebuild {missing} missing columns with parity {parity}"
            ),
        }
    }
}

impl std::error::Error for RaidzError {}
