//! Space map objects as OpenZFS writes them (OpenZFS `space_map.h`, `space_map.c`): the
//! `space_map_phys_t` bonus and the word-encoded entries of the object's data.
//!
//! A metaslab's space map is an append-only log of what was allocated and freed in it;
//! replaying it from an all-free metaslab gives the allocations that were persisted. Each
//! sync appends, per metaslab that changed, a debug word naming the txg and sync pass and then
//! the allocations (one entry per segment of the txg's allocation tree, in offset order), then
//! another debug word and the frees (OpenZFS `metaslab_sync`: `space_map_write` of
//! `ms_allocating`, then of `ms_freeing`; an empty tree writes nothing). Condensing truncates
//! the object and writes one ALLOC per allocated segment.
//!
//! ```text
//! bonus (DMU_OT_SPACE_MAP_HEADER, little-endian u64 words)
//!   0 smp_object   1 smp_length (bytes of entries)   2 smp_alloc (i64: bytes allocated)
//!   3..=7 smp_pad   8..=39 smp_histogram[32]: free segments of 2^(i+shift)..2^(i+shift+1)
//!   SPACE_MAP_SIZE_V0 = 24 bytes (words 0..=2) without the spacemap_histogram feature,
//!   320 bytes with it.
//!
//! data (DMU_OT_SPACE_MAP, smp_length bytes of little-endian u64 words)
//!  debug word       | 1 0 | action 2 | sync pass 10 | txg 50 |        63..62 61..60 59..50 49..0
//!  one-word entry   | 0 | offset 47 | type 1 | run-1 15 |          63, 62..16, 15, 14..0
//!  two-word entry   | 1 1 | pad 2 | run-1 36 | vdev 24 |           63..62 61..60 59..24 23..0
//!                   | type 1 | offset 63 |                         63, 62..0
//! ```
//!
//! Offsets and runs are in units of `1 << shift` (the vdev's ashift), offsets relative to the
//! metaslab's start; type 0 = ALLOC, 1 = FREE. Two-word (v2) entries are read always and
//! written only when the pool's spacemap_v2 feature is active; Zetta enables no feature yet,
//! so it writes one-word entries, splitting runs longer than 2^15 units as OpenZFS does. A
//! debug word with txg 0 is padding (OpenZFS pads the last word of a block rather than let a
//! two-word entry straddle it).
//!
//! Invariants of decoding (untrusted bytes): every word is consumed; a two-word entry's second
//! word is present; conversion to byte ranges never overflows. Encoding what decoding returned
//! gives back the same words (pinned by the golden tests here and by
//! `crates/zetta/tests/openzfs_space_map.rs` on real OpenZFS pools).

use crate::MetaslabError;

/// `DMU_OT_SPACE_MAP_HEADER`: the bonus type of a space map object.
pub const DMU_OT_SPACE_MAP_HEADER: u8 = 7;
/// `DMU_OT_SPACE_MAP`: the object type.
pub const DMU_OT_SPACE_MAP: u8 = 8;
/// `SPACE_MAP_SIZE_V0`: the bonus without the histogram.
pub const SPACE_MAP_SIZE_V0: usize = 24;
/// `SPACE_MAP_HISTOGRAM_SIZE`: buckets of `smp_histogram`.
pub const SPACE_MAP_HISTOGRAM_SIZE: usize = 32;
/// `sizeof (space_map_phys_t)`: the bonus with the histogram.
pub const SPACE_MAP_PHYS_SIZE: usize = 8 * (3 + 5 + SPACE_MAP_HISTOGRAM_SIZE);
/// `zfs_metaslab_sm_blksz_no_log`: data block size of a space map object in a pool without
/// the log_spacemap feature.
pub const SPACE_MAP_BLOCK_SIZE_BYTES: u32 = 1 << 14;

/// `SM_DEBUG_PREFIX`, `SM2_PREFIX` (bits 63..62).
const SM_DEBUG_PREFIX: u64 = 2;
const SM2_PREFIX: u64 = 3;
/// `SM_OFFSET_BITS`, `SM_RUN_BITS`, `SM2_OFFSET_BITS`, `SM2_RUN_BITS`, `SPA_VDEVBITS`.
const SM_OFFSET_BITS: u32 = 47;
const SM_RUN_BITS: u32 = 15;
const SM2_OFFSET_BITS: u32 = 63;
const SM2_RUN_BITS: u32 = 36;
const SPA_VDEVBITS: u32 = 24;
/// `SM_RUN_MAX`: the longest run of a one-word entry, in units.
pub const SM_RUN_MAX: u64 = 1 << SM_RUN_BITS;
/// `SM_OFFSET_MAX + 1`: one-word offsets are below this, in units.
pub const SM_OFFSET_LIMIT: u64 = 1 << SM_OFFSET_BITS;
/// `SM_NO_VDEVID`: the vdev field of a two-word entry that names none.
pub const SM_NO_VDEVID: u32 = 1 << SPA_VDEVBITS;
/// The debug word's txg field (50 bits) and sync pass field (10 bits).
const SM_DEBUG_TXG_MASK: u64 = (1 << 50) - 1;
const SM_DEBUG_SYNCPASS_MASK: u64 = (1 << 10) - 1;

fn bits(word: u64, low: u32, len: u32) -> u64 {
    (word >> low) & ((1u64 << len) - 1)
}

/// `maptype_t`: what an entry (or the entries after a debug word) records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapType {
    Alloc = 0,
    Free = 1,
}

impl MapType {
    fn from_bit(bit: u64) -> Self {
        if bit == 0 {
            MapType::Alloc
        } else {
            MapType::Free
        }
    }
}

/// One record of a space map's data as it lies on disk (offsets and runs in units of
/// `1 << shift`, relative to the metaslab's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpaceMapRecord {
    /// `action` 0 ALLOC, 1 FREE, 2 CONDENSE (3 invalid, kept as read); txg 0 = padding.
    Debug {
        action: u8,
        sync_pass: u16,
        txg: u64,
    },
    /// A one-word entry: `run` in 1..=2^15, `offset` below 2^47.
    One {
        maptype: MapType,
        offset: u64,
        run: u64,
    },
    /// A two-word entry (spacemap_v2): `run` in 1..=2^36, `offset` below 2^63, `vdev`
    /// [`SM_NO_VDEVID`] when it names none. `pad` keeps the two unused bits as read.
    Two {
        maptype: MapType,
        offset: u64,
        run: u64,
        vdev: u32,
        pad: u8,
    },
}

impl SpaceMapRecord {
    /// A debug word that opens the entries of one `space_map_write` (OpenZFS
    /// `space_map_write_intro_debug`).
    pub fn intro(maptype: MapType, sync_pass: u16, txg: u64) -> Self {
        SpaceMapRecord::Debug {
            action: maptype as u8,
            sync_pass,
            txg,
        }
    }

    fn words(&self) -> usize {
        match self {
            SpaceMapRecord::Two { .. } => 2,
            _ => 1,
        }
    }
}

/// Encodes records into words (little-endian on disk: see [`words_to_bytes`]). Fields wider
/// than their bit field are a caller bug and are masked.
pub fn encode_records(records: &[SpaceMapRecord]) -> Vec<u64> {
    let mut words = Vec::with_capacity(records.iter().map(SpaceMapRecord::words).sum());
    for record in records {
        match *record {
            SpaceMapRecord::Debug {
                action,
                sync_pass,
                txg,
            } => {
                debug_assert!(action < 4 && u64::from(sync_pass) <= SM_DEBUG_SYNCPASS_MASK);
                words.push(
                    (SM_DEBUG_PREFIX << 62)
                        | ((u64::from(action) & 3) << 60)
                        | ((u64::from(sync_pass) & SM_DEBUG_SYNCPASS_MASK) << 50)
                        | (txg & SM_DEBUG_TXG_MASK),
                );
            }
            SpaceMapRecord::One {
                maptype,
                offset,
                run,
            } => {
                debug_assert!(offset < SM_OFFSET_LIMIT && (1..=SM_RUN_MAX).contains(&run));
                words.push(
                    ((offset & (SM_OFFSET_LIMIT - 1)) << 16)
                        | ((maptype as u64) << 15)
                        | ((run - 1) & (SM_RUN_MAX - 1)),
                );
            }
            SpaceMapRecord::Two {
                maptype,
                offset,
                run,
                vdev,
                pad,
            } => {
                debug_assert!((1..=1 << SM2_RUN_BITS).contains(&run));
                words.push(
                    (SM2_PREFIX << 62)
                        | ((u64::from(pad) & 3) << 60)
                        | (((run - 1) & ((1 << SM2_RUN_BITS) - 1)) << SPA_VDEVBITS)
                        | (u64::from(vdev) & ((1 << SPA_VDEVBITS) - 1)),
                );
                words.push(((maptype as u64) << 63) | (offset & ((1 << SM2_OFFSET_BITS) - 1)));
            }
        }
    }
    words
}

/// Decodes the words of a space map (untrusted). The only malformation OpenZFS's format
/// allows is a two-word entry whose second word is missing.
pub fn decode_records(words: &[u64]) -> Result<Vec<SpaceMapRecord>, MetaslabError> {
    let mut records = Vec::with_capacity(words.len());
    let mut index = 0;
    while index < words.len() {
        let word = words[index];
        let record = match bits(word, 62, 2) {
            SM_DEBUG_PREFIX => SpaceMapRecord::Debug {
                action: bits(word, 60, 2) as u8,
                sync_pass: bits(word, 50, 10) as u16,
                txg: bits(word, 0, 50),
            },
            SM2_PREFIX => {
                let Some(&second) = words.get(index + 1) else {
                    return Err(MetaslabError::SpaceMapEntryInvalid {
                        entry_index: index,
                        reason: "a two-word entry without its second word",
                    });
                };
                index += 1;
                // SM2_VDEV_DECODE is 24 bits: SM_NO_VDEVID (1 << 24) itself does not fit, so
                // OpenZFS's "no vdev" reads back as 0 through the mask as well.
                SpaceMapRecord::Two {
                    maptype: MapType::from_bit(second >> 63),
                    offset: bits(second, 0, SM2_OFFSET_BITS),
                    run: bits(word, SPA_VDEVBITS, SM2_RUN_BITS) + 1,
                    vdev: bits(word, 0, SPA_VDEVBITS) as u32,
                    pad: bits(word, 60, 2) as u8,
                }
            }
            _ => SpaceMapRecord::One {
                maptype: MapType::from_bit(bits(word, 15, 1)),
                offset: bits(word, 16, SM_OFFSET_BITS),
                run: bits(word, 0, SM_RUN_BITS) + 1,
            },
        };
        records.push(record);
        index += 1;
    }
    Ok(records)
}

/// Words as the object's bytes (little-endian: Zetta writes native little-endian like an
/// x86 OpenZFS host).
pub fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian object bytes as words; a length that is not a multiple of 8 is damage.
pub fn bytes_to_words(bytes: &[u8]) -> Result<Vec<u64>, MetaslabError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(MetaslabError::SpaceMapLength {
            length_bytes: bytes.len(),
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// Where a space map's units live: the metaslab's first byte and `sm_shift` (the ashift).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpaceMapGeometry {
    pub start_bytes: u64,
    pub shift: u32,
}

/// One logged change to a metaslab, in bytes of the vdev's address space (like a DVA).
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

    fn maptype(&self) -> MapType {
        if self.is_alloc() {
            MapType::Alloc
        } else {
            MapType::Free
        }
    }
}

/// The entries of decoded records as byte ranges (debug words dropped). Ranges that overflow
/// the address space are errors; whether they fit the metaslab is `Metaslab::load`'s check.
pub fn records_to_entries(
    records: &[SpaceMapRecord],
    geometry: SpaceMapGeometry,
) -> Result<Vec<SpaceMapEntry>, MetaslabError> {
    let mut entries = Vec::with_capacity(records.len());
    for (entry_index, record) in records.iter().enumerate() {
        let (maptype, offset, run) = match *record {
            SpaceMapRecord::Debug { .. } => continue,
            SpaceMapRecord::One {
                maptype,
                offset,
                run,
            }
            | SpaceMapRecord::Two {
                maptype,
                offset,
                run,
                ..
            } => (maptype, offset, run),
        };
        let to_bytes = |units: u64| {
            units
                .checked_mul(1u64 << geometry.shift)
                .filter(|bytes| bytes >> geometry.shift == units)
        };
        let range = to_bytes(offset)
            .and_then(|o| o.checked_add(geometry.start_bytes))
            .zip(to_bytes(run))
            .filter(|(o, s)| o.checked_add(*s).is_some());
        let Some((offset_bytes, size_bytes)) = range else {
            return Err(MetaslabError::SpaceMapEntryInvalid {
                entry_index,
                reason: "offset + run beyond 2^64 bytes",
            });
        };
        entries.push(match maptype {
            MapType::Alloc => SpaceMapEntry::Alloc {
                offset_bytes,
                size_bytes,
            },
            MapType::Free => SpaceMapEntry::Free {
                offset_bytes,
                size_bytes,
            },
        });
    }
    Ok(entries)
}

/// Decodes a space map's data bytes into byte ranges.
pub fn decode_entries(
    bytes: &[u8],
    geometry: SpaceMapGeometry,
) -> Result<Vec<SpaceMapEntry>, MetaslabError> {
    records_to_entries(&decode_records(&bytes_to_words(bytes)?)?, geometry)
}

/// The records one sync appends (OpenZFS `space_map_write` per tree, one-word entries): for
/// each run of entries of one type, a debug word (txg, sync pass) and the entries, each split
/// into runs of at most 2^15 units. Entries must lie at or after the metaslab's start and be
/// aligned to `1 << shift`; an offset past the one-word limit (2^47 units) is an error.
pub fn encode_sync_records(
    entries: &[SpaceMapEntry],
    geometry: SpaceMapGeometry,
    txg: u64,
    sync_pass: u16,
) -> Result<Vec<SpaceMapRecord>, MetaslabError> {
    let mut records = Vec::with_capacity(entries.len() + 2);
    let mut current: Option<MapType> = None;
    for (entry_index, entry) in entries.iter().enumerate() {
        let invalid = |reason| MetaslabError::SpaceMapEntryInvalid {
            entry_index,
            reason,
        };
        let maptype = entry.maptype();
        if current != Some(maptype) {
            records.push(SpaceMapRecord::intro(maptype, sync_pass, txg));
            current = Some(maptype);
        }
        let unit_mask = (1u64 << geometry.shift) - 1;
        let relative = entry
            .offset_bytes()
            .checked_sub(geometry.start_bytes)
            .ok_or(invalid("before the metaslab"))?;
        if (relative | entry.size_bytes()) & unit_mask != 0 || entry.size_bytes() == 0 {
            return Err(invalid("not a whole number of sectors"));
        }
        let mut offset = relative >> geometry.shift;
        let mut size = entry.size_bytes() >> geometry.shift;
        while size != 0 {
            let run = size.min(SM_RUN_MAX);
            if offset >= SM_OFFSET_LIMIT {
                return Err(invalid("offset beyond a one-word entry"));
            }
            records.push(SpaceMapRecord::One {
                maptype,
                offset,
                run,
            });
            offset += run;
            size -= run;
        }
    }
    Ok(records)
}

/// `space_map_phys_t`, the space map object's bonus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceMapPhys {
    /// `smp_object`: the object's own number (kept for compatibility).
    pub object: u64,
    /// `smp_length`: bytes of entries in the object's data.
    pub length_bytes: u64,
    /// `smp_alloc`: bytes allocated according to the map (signed on disk).
    pub alloc_bytes: i64,
    /// `smp_pad` and `smp_histogram`, present when the bonus is [`SPACE_MAP_PHYS_SIZE`] bytes.
    pub pad: Option<[u64; 5]>,
    pub histogram: Option<[u64; SPACE_MAP_HISTOGRAM_SIZE]>,
}

impl SpaceMapPhys {
    /// An empty map's bonus without the histogram.
    pub fn new_v0(object: u64) -> Self {
        SpaceMapPhys {
            object,
            length_bytes: 0,
            alloc_bytes: 0,
            pad: None,
            histogram: None,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut words = vec![self.object, self.length_bytes, self.alloc_bytes as u64];
        if let Some(histogram) = &self.histogram {
            words.extend_from_slice(&self.pad.unwrap_or([0; 5]));
            words.extend_from_slice(histogram);
        }
        words_to_bytes(&words)
    }

    /// Decodes a bonus (untrusted): 24 bytes, or at least 320 (trailing bytes ignored, as
    /// OpenZFS reads only the struct).
    pub fn decode(bytes: &[u8]) -> Result<Self, MetaslabError> {
        let words = |range: std::ops::Range<usize>| bytes_to_words(&bytes[range]);
        let invalid = MetaslabError::SpaceMapEntryInvalid {
            entry_index: 0,
            reason: "a space map bonus that is neither 24 nor 320 bytes",
        };
        let (head, pad, histogram) = if bytes.len() >= SPACE_MAP_PHYS_SIZE {
            let mut pad = [0u64; 5];
            pad.copy_from_slice(&words(24..64)?);
            let mut histogram = [0u64; SPACE_MAP_HISTOGRAM_SIZE];
            histogram.copy_from_slice(&words(64..SPACE_MAP_PHYS_SIZE)?);
            (words(0..24)?, Some(pad), Some(histogram))
        } else if bytes.len() == SPACE_MAP_SIZE_V0 {
            (words(0..24)?, None, None)
        } else {
            return Err(invalid);
        };
        Ok(SpaceMapPhys {
            object: head[0],
            length_bytes: head[1],
            alloc_bytes: head[2] as i64,
            pad,
            histogram,
        })
    }
}

/// `space_map_histogram_add` of free segments: bucket `i` counts the segments of
/// `2^(i+shift)..2^(i+shift+1)` bytes; larger ones are folded into the last bucket, each
/// counted as `2^(excess)` segments of its size, as OpenZFS normalizes them.
pub fn histogram_of_segments(
    segment_sizes: impl Iterator<Item = u64>,
    shift: u32,
) -> [u64; SPACE_MAP_HISTOGRAM_SIZE] {
    let mut by_log2 = [0u64; 64];
    for size in segment_sizes.filter(|s| *s != 0) {
        by_log2[(63 - size.leading_zeros()) as usize] += 1;
    }
    let mut histogram = [0u64; SPACE_MAP_HISTOGRAM_SIZE];
    let mut idx = 0usize;
    for (i, &count) in by_log2.iter().enumerate().skip(shift as usize) {
        let excess = i - idx - shift as usize;
        histogram[idx] =
            histogram[idx].saturating_add(count.checked_shl(excess as u32).unwrap_or(u64::MAX));
        if idx < SPACE_MAP_HISTOGRAM_SIZE - 1 {
            idx += 1;
        }
    }
    histogram
}

/// The space map work of one metaslab for one txg, produced by
/// [`crate::MetaslabClass::take_space_map_updates`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceMapUpdate {
    pub vdev_id: u32,
    pub ms_index: usize,
    /// The metaslab's start (entries' offsets are relative to it on disk).
    pub start_bytes: u64,
    /// true: truncate the object first (a condense); false: append.
    pub condense: bool,
    /// The allocations of this txg in offset order, then its frees in offset order (a
    /// condense: one `Alloc` per recorded segment).
    pub entries: Vec<SpaceMapEntry>,
    /// `smp_alloc` once the update is written: the bytes the map records as allocated.
    pub alloc_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> SpaceMapGeometry {
        SpaceMapGeometry {
            start_bytes: 0x100_0000,
            shift: 9,
        }
    }

    #[test]
    fn golden_words() {
        // Why: pins OpenZFS's word layout (space_map.h's diagram, field by field): a debug
        // word, one-word ALLOC and FREE entries, and a two-word entry.
        let records = [
            SpaceMapRecord::Debug {
                action: 0,
                sync_pass: 1,
                txg: 0x1234,
            },
            SpaceMapRecord::One {
                maptype: MapType::Alloc,
                offset: 0x10,
                run: 8,
            },
            SpaceMapRecord::One {
                maptype: MapType::Free,
                offset: 0x7fff_ffff_ffff,
                run: SM_RUN_MAX,
            },
            SpaceMapRecord::Two {
                maptype: MapType::Free,
                offset: 0x1_0000_0000_0000,
                run: 1 << 20,
                vdev: 3,
                pad: 0,
            },
        ];
        let words = encode_records(&records);
        assert_eq!(
            words,
            vec![
                0x8004_0000_0000_1234,
                0x0000_0000_0010_0007,
                0x7fff_ffff_ffff_ffff,
                0xc000_0fff_ff00_0003,
                0x8001_0000_0000_0000,
            ]
        );
        assert_eq!(decode_records(&words).unwrap(), records);
        assert_eq!(
            words_to_bytes(&words[..1]),
            [0x34, 0x12, 0, 0, 0, 0, 0x04, 0x80]
        );
    }

    #[test]
    fn a_sync_writes_debug_words_and_splits_long_runs() {
        // Why: OpenZFS's metaslab_sync writes an intro debug word before each non-empty tree
        // and splits one-word runs at 2^15 units; offsets are relative to the metaslab.
        let g = geometry();
        let entries = [
            SpaceMapEntry::Alloc {
                offset_bytes: g.start_bytes + 0x200,
                size_bytes: (SM_RUN_MAX + 1) << 9,
            },
            SpaceMapEntry::Free {
                offset_bytes: g.start_bytes,
                size_bytes: 0x200,
            },
        ];
        let records = encode_sync_records(&entries, g, 77, 1).unwrap();
        assert_eq!(
            records,
            vec![
                SpaceMapRecord::intro(MapType::Alloc, 1, 77),
                SpaceMapRecord::One {
                    maptype: MapType::Alloc,
                    offset: 1,
                    run: SM_RUN_MAX
                },
                SpaceMapRecord::One {
                    maptype: MapType::Alloc,
                    offset: 1 + SM_RUN_MAX,
                    run: 1
                },
                SpaceMapRecord::intro(MapType::Free, 1, 77),
                SpaceMapRecord::One {
                    maptype: MapType::Free,
                    offset: 0,
                    run: 1
                },
            ]
        );
        let bytes = words_to_bytes(&encode_records(&records));
        let back = decode_entries(&bytes, g).unwrap();
        assert_eq!(
            back,
            vec![
                SpaceMapEntry::Alloc {
                    offset_bytes: g.start_bytes + 0x200,
                    size_bytes: SM_RUN_MAX << 9
                },
                SpaceMapEntry::Alloc {
                    offset_bytes: g.start_bytes + 0x200 + (SM_RUN_MAX << 9),
                    size_bytes: 0x200
                },
                entries[1],
            ]
        );
        assert!(encode_sync_records(
            &[SpaceMapEntry::Alloc {
                offset_bytes: 0,
                size_bytes: 512
            }],
            g,
            1,
            1
        )
        .is_err());
    }

    #[test]
    fn phys_golden_and_sizes() {
        // Why: the bonus is space_map_phys_t: 24 bytes without the histogram feature, 320 with.
        let v0 = SpaceMapPhys {
            object: 0x41,
            length_bytes: 0x18,
            alloc_bytes: 0x3000,
            pad: None,
            histogram: None,
        };
        let bytes = v0.encode();
        assert_eq!(bytes.len(), SPACE_MAP_SIZE_V0);
        assert_eq!(&bytes[..8], &[0x41, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[16..], &[0, 0x30, 0, 0, 0, 0, 0, 0]);
        assert_eq!(SpaceMapPhys::decode(&bytes).unwrap(), v0);
        let mut full = v0.clone();
        full.pad = Some([0; 5]);
        let mut histogram = [0; SPACE_MAP_HISTOGRAM_SIZE];
        histogram[31] = 9;
        full.histogram = Some(histogram);
        let bytes = full.encode();
        assert_eq!(bytes.len(), SPACE_MAP_PHYS_SIZE);
        assert_eq!(bytes[SPACE_MAP_PHYS_SIZE - 8], 9);
        assert_eq!(SpaceMapPhys::decode(&bytes).unwrap(), full);
        assert!(SpaceMapPhys::decode(&bytes[..100]).is_err());
        assert!(SpaceMapPhys::decode(&[]).is_err());
    }

    #[test]
    fn histogram_buckets_are_relative_to_the_shift() {
        // Why: smp_histogram[i] counts free segments of 2^(i+shift) bytes; bigger ones fold
        // into the last bucket scaled (space_map_histogram_add).
        let h = histogram_of_segments([512, 1023, 4096, 1 << 41, 1 << 43].into_iter(), 9);
        assert_eq!(h[0], 2);
        assert_eq!(h[3], 1);
        assert_eq!(h[31], 2 + 8); // 2^41 counts as 2 of 2^40, 2^43 as 8
        assert_eq!(h.iter().sum::<u64>(), 2 + 1 + h[31]);
    }

    #[test]
    fn malformed_input_is_an_error() {
        // Why: damaged objects must be rejected (a truncated two-word entry, a length that is
        // not whole words, ranges that overflow), never panic.
        assert_eq!(
            bytes_to_words(&[0; 15]),
            Err(MetaslabError::SpaceMapLength { length_bytes: 15 })
        );
        assert!(decode_records(&[0xc000_0000_0000_0000]).is_err());
        let huge = decode_records(&[0xc000_0000_0000_0000, 0x7fff_ffff_ffff_ffff]).unwrap();
        assert!(records_to_entries(&huge, geometry()).is_err());
        assert_eq!(decode_records(&[]).unwrap(), vec![]);
    }
}
