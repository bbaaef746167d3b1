//! The persistent space map entry format (ZFS counterpart: space_map.c, in a simpler layout
//! of our own: one fixed two-word entry, no debug or run-length words).
//!
//! A metaslab's space map is an append-only log of what was allocated and freed in it; replaying
//! it from an all-free metaslab gives the allocations that were persisted. Condensing rewrites
//! the log as one `Alloc` per allocated segment.
//!
//! ```text
//! entry (16 bytes, little-endian)
//!  byte 0                              8                              16
//!  +-----------------------------------+------------------------------+
//!  | word0: bit 63 = 1 ALLOC, 0 FREE   | word1: size_bytes (non-zero) |
//!  |        bits 0..=62 = offset_bytes |                              |
//!  +-----------------------------------+------------------------------+
//! ```
//!
//! `offset_bytes` is relative to the start of the top-level vdev's allocatable space (like a
//! DVA offset). An all-zero entry is end padding: it and everything after it must be zero.
//! Invariants of a decoded entry: `size_bytes != 0` and `offset_bytes + size_bytes <= 2^63`.
//! Format version 1 (this layout, unchanged since written).

use crate::MetaslabError;

/// Size of one encoded entry.
pub const SPACE_MAP_ENTRY_SIZE_BYTES: usize = 16;
/// Bit of word0 that marks an allocation.
pub const SPACE_MAP_ALLOC_BIT: u64 = 1 << 63;
/// Offsets have 63 bits: every range must end at or below this.
pub const SPACE_MAP_OFFSET_LIMIT_BYTES: u64 = 1 << 63;

/// One logged change to a metaslab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpaceMapEntry {
    Alloc { offset_bytes: u64, size_bytes: u64 },
    Free { offset_bytes: u64, size_bytes: u64 },
}

impl SpaceMapEntry {
    pub fn offset_bytes(&self) -> u64 {
        match *self {
            Self::Alloc { offset_bytes, .. } | Self::Free { offset_bytes, .. } => offset_bytes,
        }
    }

    pub fn size_bytes(&self) -> u64 {
        match *self {
            Self::Alloc { size_bytes, .. } | Self::Free { size_bytes, .. } => size_bytes,
        }
    }

    pub fn is_alloc(&self) -> bool {
        matches!(self, Self::Alloc { .. })
    }
}

/// The space map work of one metaslab for one txg, produced by
/// [`crate::MetaslabClass::take_space_map_updates`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceMapUpdate {
    pub vdev_id: u32,
    pub ms_index: usize,
    /// true: `entries` replace the object's whole content; false: append them.
    pub condense: bool,
    pub entries: Vec<SpaceMapEntry>,
}

/// Encodes entries; 16 bytes each. Panics on entries this crate never produces (zero size or a
/// range past 2^63): that is a caller bug, not disk data.
pub fn encode_entries(entries: &[SpaceMapEntry]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(entries.len() * SPACE_MAP_ENTRY_SIZE_BYTES);
    for entry in entries {
        let offset_bytes = entry.offset_bytes();
        let size_bytes = entry.size_bytes();
        assert!(size_bytes != 0, "space map entry with zero size");
        assert!(
            offset_bytes
                .checked_add(size_bytes)
                .is_some_and(|end| end <= SPACE_MAP_OFFSET_LIMIT_BYTES),
            "space map entry past 2^63"
        );
        let alloc_bit = if entry.is_alloc() {
            SPACE_MAP_ALLOC_BIT
        } else {
            0
        };
        bytes.extend_from_slice(&(offset_bytes | alloc_bit).to_le_bytes());
        bytes.extend_from_slice(&size_bytes.to_le_bytes());
    }
    debug_assert_eq!(bytes.len(), entries.len() * SPACE_MAP_ENTRY_SIZE_BYTES);
    bytes
}

fn read_word(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

/// Decodes untrusted bytes. Stops at the first all-zero entry (end padding), which must be
/// followed only by zeros.
pub fn decode_entries(bytes: &[u8]) -> Result<Vec<SpaceMapEntry>, MetaslabError> {
    if !bytes.len().is_multiple_of(SPACE_MAP_ENTRY_SIZE_BYTES) {
        return Err(MetaslabError::SpaceMapLength {
            length_bytes: bytes.len(),
        });
    }
    let mut entries = Vec::with_capacity(bytes.len() / SPACE_MAP_ENTRY_SIZE_BYTES);
    for (entry_index, chunk) in bytes.chunks_exact(SPACE_MAP_ENTRY_SIZE_BYTES).enumerate() {
        let word0 = read_word(&chunk[..8]);
        let size_bytes = read_word(&chunk[8..]);
        if word0 == 0 && size_bytes == 0 {
            let tail = &bytes[entry_index * SPACE_MAP_ENTRY_SIZE_BYTES..];
            if tail.iter().any(|&b| b != 0) {
                return Err(MetaslabError::SpaceMapEntryInvalid {
                    entry_index,
                    reason: "non-zero data after the end padding",
                });
            }
            break;
        }
        if size_bytes == 0 {
            return Err(MetaslabError::SpaceMapEntryInvalid {
                entry_index,
                reason: "zero size",
            });
        }
        let offset_bytes = word0 & !SPACE_MAP_ALLOC_BIT;
        let in_range = offset_bytes
            .checked_add(size_bytes)
            .is_some_and(|end| end <= SPACE_MAP_OFFSET_LIMIT_BYTES);
        if !in_range {
            return Err(MetaslabError::SpaceMapEntryInvalid {
                entry_index,
                reason: "offset + size beyond 2^63",
            });
        }
        entries.push(if word0 & SPACE_MAP_ALLOC_BIT != 0 {
            SpaceMapEntry::Alloc {
                offset_bytes,
                size_bytes,
            }
        } else {
            SpaceMapEntry::Free {
                offset_bytes,
                size_bytes,
            }
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_bytes() {
        // Why: pins the on-disk layout; if this changes, pools written before stop importing.
        let entries = [
            SpaceMapEntry::Alloc {
                offset_bytes: 0x0102_0304_0506_0708,
                size_bytes: 0x2_0000,
            },
            SpaceMapEntry::Free {
                offset_bytes: 0x1000,
                size_bytes: 0x200,
            },
        ];
        let golden: [u8; 32] = [
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x81, // alloc bit | offset
            0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, // size 128K
            0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // free, offset 4K
            0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // size 512
        ];
        assert_eq!(encode_entries(&entries), golden);
        assert_eq!(decode_entries(&golden).unwrap(), entries);
    }

    #[test]
    fn end_padding_stops_decoding() {
        // Why: the engine may store the object rounded up to a block; zero entries at the end
        // are padding, but garbage after the padding means damage.
        let entry = SpaceMapEntry::Free {
            offset_bytes: 0,
            size_bytes: 512,
        };
        let mut bytes = encode_entries(&[entry]);
        bytes.extend_from_slice(&[0u8; 48]);
        assert_eq!(decode_entries(&bytes).unwrap(), vec![entry]);
        let last = bytes.len() - 1;
        bytes[last] = 1;
        assert!(matches!(
            decode_entries(&bytes),
            Err(MetaslabError::SpaceMapEntryInvalid { entry_index: 1, .. })
        ));
    }

    #[test]
    fn malformed_input_is_an_error() {
        // Why: truncated objects, zero sizes and overflowing ranges come from damaged disks and
        // must be rejected by decode, each with its own error.
        let good = encode_entries(&[SpaceMapEntry::Alloc {
            offset_bytes: 4096,
            size_bytes: 4096,
        }]);
        assert_eq!(
            decode_entries(&good[..15]),
            Err(MetaslabError::SpaceMapLength { length_bytes: 15 })
        );
        let mut zero_size = good.clone();
        zero_size[8..].fill(0);
        assert!(matches!(
            decode_entries(&zero_size),
            Err(MetaslabError::SpaceMapEntryInvalid {
                reason: "zero size",
                ..
            })
        ));
        let mut overflow = good.clone();
        overflow[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_entries(&overflow).is_err());
        assert_eq!(decode_entries(&[]).unwrap(), vec![]);
    }
}
