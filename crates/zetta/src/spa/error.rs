//! Errors of the pool layer: every failure a `zpool` command can report, kept apart by kind
//! so that the CLI can print OpenZFS's words for each. The dataset layer's refusals travel
//! inside it as `SpaError::Dsl` (see `dsl::error`); their texts are the CLI's.

use crate::dmu::DmuError;
use crate::dsl::DslError;
use crate::zio::ZioError;
use std::fmt;

#[derive(Debug)]
pub enum SpaError {
    /// A device could not be opened or read.
    Device(String),
    /// On-disk structures are damaged beyond what redundancy can fix.
    Corrupt(String),
    /// The pool cannot be opened because top-level vdevs are missing.
    DevicesUnavailable,
    /// The pool is held by another process.
    Busy(String),
    /// A request that does not make sense for this pool (bad vdev, too small device, ...).
    Invalid(String),
    NoSuchPool(String),
    /// A dataset (filesystem, volume or snapshot) that does not exist (ENOENT). Being
    /// replaced by `Dsl(DslError::NoSuchDataset)`; `zfs promote` still returns it.
    NoSuchDataset(String),
    /// A refusal of the dataset layer (`zfs` commands): its condition and data, no text.
    Dsl(DslError),
    NoSpace,
    /// A quota or refquota would be exceeded (EDQUOT).
    QuotaExceeded,
    /// An I/O error on data (the block is in the error log).
    Io(String),
    /// A change to a pool imported read-only (EROFS).
    ReadOnly,
}

impl fmt::Display for SpaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpaError::Device(why) => write!(f, "{why}"),
            SpaError::Corrupt(why) => write!(f, "pool metadata is corrupted: {why}"),
            SpaError::DevicesUnavailable => {
                write!(f, "one or more devices is currently unavailable")
            }
            SpaError::Busy(why) => write!(f, "{why}"),
            SpaError::Invalid(why) => write!(f, "{why}"),
            SpaError::NoSuchPool(name) => write!(f, "no such pool '{name}'"),
            SpaError::NoSuchDataset(name) => {
                write!(f, "cannot open '{name}': dataset does not exist")
            }
            SpaError::NoSpace => write!(f, "out of space"),
            SpaError::QuotaExceeded => write!(f, "disk quota exceeded"),
            SpaError::Io(why) => write!(f, "I/O error: {why}"),
            SpaError::ReadOnly => write!(f, "pool is read-only"),
            SpaError::Dsl(e) => write!(f, "dsl: {e}"),
        }
    }
}

impl std::error::Error for SpaError {}

impl From<DmuError> for SpaError {
    fn from(e: DmuError) -> Self {
        match e {
            DmuError::Zio(ZioError::NoSpace) => SpaError::NoSpace,
            DmuError::Zio(ZioError::Unrecoverable { bp }) => SpaError::Io(bp),
            DmuError::Zio(other) => SpaError::Io(other.to_string()),
            DmuError::Corrupt(why) => SpaError::Corrupt(why),
            other => SpaError::Invalid(other.to_string()),
        }
    }
}

impl From<ZioError> for SpaError {
    fn from(e: ZioError) -> Self {
        SpaError::from(DmuError::Zio(e))
    }
}
