//! LZJB: the small, fast Lempel-Ziv compressor ZFS used before LZ4 (Jeff Bonwick's design).
//!
//! ZFS counterpart: `module/zfs/lzjb.c`. Our implementation of the classic stream layout:
//!
//! ```text
//!  payload = group*
//!  group   = copymap:u8, then up to 8 items; bit i of copymap (least significant first) says
//!            whether item i is a match (1) or a literal (0)
//!  literal = 1 byte, copied to the output
//!  match   = 2 bytes  [ (len-3) << 2 | offset >> 8 ] [ offset & 0xff ]
//!            copy `len` (3..=66) bytes starting `offset` (1..=1023) bytes back in the output;
//!            source and destination may overlap (byte-by-byte forward copy)
//! ```
//!
//! The encoder finds candidates through a 1024-entry hash table of the last position seen for
//! each 3-byte prefix. A group's copymap is written only when an item follows, so a well-formed
//! payload ends exactly when the output is full. Invariant: the decoder rejects offsets reaching
//! before the start of the output, matches or literals past the logical size, a payload that
//! ends early, and bytes left after the output is full.

use crate::error::CompressError;

/// Bits of the first match byte holding the length.
const LZJB_MATCH_LENGTH_BITS: u32 = 6;
/// Shortest match.
const LZJB_MATCH_MIN_BYTES: usize = 3;
/// Longest match: 3 + 63.
const LZJB_MATCH_MAX_BYTES: usize = (1 << LZJB_MATCH_LENGTH_BITS) + LZJB_MATCH_MIN_BYTES - 1;
/// Largest match distance (10 bits).
const LZJB_OFFSET_MAX: usize = (1 << (16 - LZJB_MATCH_LENGTH_BITS)) - 1;
/// Hash table entries (a power of two).
const LZJB_HASH_TABLE_ENTRIES: usize = 1024;
/// Items per copymap byte.
const LZJB_ITEMS_PER_GROUP: u32 = 8;

fn prefix_hash(prefix: &[u8]) -> usize {
    let mut hash = (usize::from(prefix[0]) << 16) | (usize::from(prefix[1]) << 8);
    hash |= usize::from(prefix[2]);
    hash += hash >> 9;
    hash += hash >> 5;
    hash & (LZJB_HASH_TABLE_ENTRIES - 1)
}

/// Encodes `src` into `out`; `None` if it does not fit.
pub(super) fn compress(src: &[u8], out: &mut [u8]) -> Option<usize> {
    // Position + 1 of the last occurrence of each hashed prefix; 0 = none yet.
    let mut last_seen = [0usize; LZJB_HASH_TABLE_ENTRIES];
    let mut out_pos = 0;
    let mut copymap_pos = 0;
    let mut item_index = LZJB_ITEMS_PER_GROUP;
    let mut src_pos = 0;
    while src_pos < src.len() {
        if item_index == LZJB_ITEMS_PER_GROUP {
            copymap_pos = out_pos;
            *out.get_mut(out_pos)? = 0;
            out_pos += 1;
            item_index = 0;
        }
        let mut match_len = 0;
        let mut match_offset = 0;
        if let Some(prefix) = src.get(src_pos..src_pos + LZJB_MATCH_MIN_BYTES) {
            let slot = &mut last_seen[prefix_hash(prefix)];
            let candidate = slot.checked_sub(1);
            *slot = src_pos + 1;
            if let Some(candidate) = candidate {
                let offset = src_pos - candidate;
                if offset <= LZJB_OFFSET_MAX && src[candidate..candidate + 3] == *prefix {
                    let len_max = LZJB_MATCH_MAX_BYTES.min(src.len() - src_pos);
                    match_len = LZJB_MATCH_MIN_BYTES;
                    while match_len < len_max
                        && src[candidate + match_len] == src[src_pos + match_len]
                    {
                        match_len += 1;
                    }
                    match_offset = offset;
                }
            }
        }
        if match_len > 0 {
            out[copymap_pos] |= 1 << item_index;
            let encoded = out.get_mut(out_pos..out_pos + 2)?;
            encoded[0] = (((match_len - LZJB_MATCH_MIN_BYTES) << 2) | (match_offset >> 8)) as u8;
            encoded[1] = match_offset as u8;
            out_pos += 2;
            src_pos += match_len;
        } else {
            *out.get_mut(out_pos)? = src[src_pos];
            out_pos += 1;
            src_pos += 1;
        }
        item_index += 1;
    }
    Some(out_pos)
}

/// Decodes `payload` into `dst`; returns the number of bytes produced.
pub(super) fn decompress(payload: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
    let malformed = |reason: String| CompressError::Malformed {
        algorithm: "lzjb",
        reason,
    };
    let mut src_pos = 0;
    let mut dst_pos = 0;
    let mut copymap = 0u8;
    let mut item_index = LZJB_ITEMS_PER_GROUP;
    while dst_pos < dst.len() {
        if item_index == LZJB_ITEMS_PER_GROUP {
            let Some(&byte) = payload.get(src_pos) else {
                return Ok(dst_pos);
            };
            copymap = byte;
            src_pos += 1;
            item_index = 0;
        }
        if copymap & (1 << item_index) != 0 {
            let Some(&[first, second]) = payload.get(src_pos..src_pos + 2) else {
                return Err(malformed(format!(
                    "match at payload offset {src_pos} is cut short"
                )));
            };
            src_pos += 2;
            let match_len = usize::from(first >> 2) + LZJB_MATCH_MIN_BYTES;
            let offset = (usize::from(first & 0x3) << 8) | usize::from(second);
            if offset == 0 || offset > dst_pos {
                return Err(malformed(format!(
                    "match offset {offset} at output offset {dst_pos} reaches before the block"
                )));
            }
            if match_len > dst.len() - dst_pos {
                return Err(malformed(format!(
                    "match of {match_len} bytes at output offset {dst_pos} passes the logical \
                     size of {}",
                    dst.len()
                )));
            }
            let from = dst_pos - offset;
            if offset >= match_len {
                dst.copy_within(from..from + match_len, dst_pos);
            } else {
                for index in 0..match_len {
                    dst[dst_pos + index] = dst[from + index];
                }
            }
            dst_pos += match_len;
        } else {
            let Some(&literal) = payload.get(src_pos) else {
                return Ok(dst_pos);
            };
            dst[dst_pos] = literal;
            src_pos += 1;
            dst_pos += 1;
        }
        item_index += 1;
    }
    if src_pos != payload.len() {
        return Err(malformed(format!(
            "{} bytes left in the payload after the output was full",
            payload.len() - src_pos
        )));
    }
    Ok(dst_pos)
}
