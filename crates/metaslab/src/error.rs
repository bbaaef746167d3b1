//! The one error type of the allocator (ZFS counterpart: the `ENOSPC` / `ECKSUM` / `EIO` returns
//! of metaslab.c and the `zfs_panic_recover` checks of range_tree.c and space_map.c).
//!
//! Invariants: running out of space ([`MetaslabError::NoSpace`]) is kept apart from corrupt
//! persistent state (bad space map bytes, entries that contradict each other) and from engine
//! bugs (freeing what is not allocated). Every variant that concerns a range names it, and every
//! variant produced while replaying a space map names the vdev and metaslab.

use std::fmt;

/// Everything that can go wrong in this crate. Bytes from disk produce these, never panics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaslabError {
    /// No top-level vdev (or not enough of them for all copies) can hold the block.
    NoSpace,
    /// The space map object's length is not a multiple of the entry size.
    SpaceMapLength { length_bytes: usize },
    /// A single space map entry is malformed (zero size, overflow, data after the end padding).
    SpaceMapEntryInvalid {
        entry_index: usize,
        reason: &'static str,
    },
    /// A space map entry does not fit the metaslab or contradicts the entries before it.
    SpaceMapEntryInconsistent {
        vdev_id: u32,
        ms_index: usize,
        offset_bytes: u64,
        size_bytes: u64,
        reason: &'static str,
    },
    /// No group with this vdev id in the class.
    NoSuchVdev { vdev_id: u32 },
    /// The metaslab index is past the end of the group.
    NoSuchMetaslab { vdev_id: u32, ms_index: usize },
    /// The range is empty, overflows, or does not lie inside a single metaslab of the vdev.
    OutOfBounds {
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
    },
    /// The range is not a multiple of the vdev's sector size (1 << ashift).
    Misaligned {
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
        ashift: u32,
    },
    /// A free of space that is not allocated (double free, or a recorded/unrecorded mix-up).
    NotAllocated {
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
        reason: &'static str,
    },
    /// `mark_allocated` of space that is already in use.
    AlreadyAllocated {
        vdev_id: u32,
        offset_bytes: u64,
        size_bytes: u64,
    },
    /// Range tree: the range is empty or `start + size` overflows.
    RangeInvalid { start_bytes: u64, size_bytes: u64 },
    /// Range tree: `add` of a range that overlaps one already present.
    RangeOverlap { start_bytes: u64, size_bytes: u64 },
    /// Range tree: `remove` of a range that is not entirely present.
    RangeNotPresent { start_bytes: u64, size_bytes: u64 },
    /// Bad vdev geometry (ashift, ms_shift, metaslab count), e.g. from a damaged config.
    InvalidGeometry { reason: &'static str },
    /// A caller passed an argument outside the documented bounds.
    InvalidArgument { reason: &'static str },
}

impl fmt::Display for MetaslabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSpace => write!(f, "no space left on any top-level vdev"),
            Self::SpaceMapLength { length_bytes } => write!(
                f,
                "space map length {length_bytes} bytes is not a multiple of the entry size"
            ),
            Self::SpaceMapEntryInvalid {
                entry_index,
                reason,
            } => write!(f, "space map entry {entry_index} is invalid: {reason}"),
            Self::SpaceMapEntryInconsistent {
                vdev_id,
                ms_index,
                offset_bytes,
                size_bytes,
                reason,
            } => write!(
                f,
                "vdev {vdev_id} metaslab {ms_index}: space map entry \
                 [{offset_bytes:#x}, +{size_bytes:#x}) {reason}"
            ),
            Self::NoSuchVdev { vdev_id } => write!(f, "no top-level vdev {vdev_id} in the class"),
            Self::NoSuchMetaslab { vdev_id, ms_index } => {
                write!(f, "vdev {vdev_id} has no metaslab {ms_index}")
            }
            Self::OutOfBounds {
                vdev_id,
                offset_bytes,
                size_bytes,
            } => write!(
                f,
                "vdev {vdev_id}: range [{offset_bytes:#x}, +{size_bytes:#x}) is empty or not \
                 inside one metaslab"
            ),
            Self::Misaligned {
                vdev_id,
                offset_bytes,
                size_bytes,
                ashift,
            } => write!(
                f,
                "vdev {vdev_id}: range [{offset_bytes:#x}, +{size_bytes:#x}) is not aligned to \
                 ashift {ashift}"
            ),
            Self::NotAllocated {
                vdev_id,
                offset_bytes,
                size_bytes,
                reason,
            } => write!(
                f,
                "vdev {vdev_id}: cannot free [{offset_bytes:#x}, +{size_bytes:#x}): {reason}"
            ),
            Self::AlreadyAllocated {
                vdev_id,
                offset_bytes,
                size_bytes,
            } => write!(
                f,
                "vdev {vdev_id}: range [{offset_bytes:#x}, +{size_bytes:#x}) is already in use"
            ),
            Self::RangeInvalid {
                start_bytes,
                size_bytes,
            } => write!(
                f,
                "range [{start_bytes:#x}, +{size_bytes:#x}) is empty or overflows"
            ),
            Self::RangeOverlap {
                start_bytes,
                size_bytes,
            } => write!(
                f,
                "range [{start_bytes:#x}, +{size_bytes:#x}) overlaps a range already present"
            ),
            Self::RangeNotPresent {
                start_bytes,
                size_bytes,
            } => write!(
                f,
                "range [{start_bytes:#x}, +{size_bytes:#x}) is not entirely present"
            ),
            Self::InvalidGeometry { reason } => write!(f, "invalid vdev geometry: {reason}"),
            Self::InvalidArgument { reason } => write!(f, "invalid argument: {reason}"),
        }
    }
}

impl std::error::Error for MetaslabError {}
