//! The ZAP header block: block 0 of every ZAP object (OpenZFS `zap_phys_t`).
//!
//! ```text
//! header block (16384 bytes), little-endian u64 fields:
//!    0 magic "ZTZAPHDR"      8 version (1)
//!   16 salt[0]              24 salt[1]            (SipHash key of this object's names)
//!   32 entry_count          40 depth              (pointer table has 2^depth slots)
//!   48 table_block_start    56 table_block_count  (0, 0: table embedded at byte 8192)
//!   64 next_block           72 leaf_count         (blocks 1..next_block are in use or holes)
//!   80 block_shift (14)     88..128 reserved (zero)
//! 8192..16384: the embedded pointer table while depth <= 10: 2^depth u64 leaf block numbers
//! ```
//!
//! Invariants: the table (embedded or in its own blocks) has 2^depth slots, each the block
//! number of a leaf, with 1 <= block < next_block; an external table lies below next_block.

use super::leaf::{DEPTH_MAX, ZAP_BLOCK_SIZE_BYTES};

pub const HEADER_MAGIC: u64 = u64::from_le_bytes(*b"ZTZAPHDR");
/// Version 1: the first format (SipHash-2-4 names, slotted 16 KiB leaves).
pub const ZAP_VERSION: u64 = 1;
pub const ZAP_BLOCK_SHIFT: u64 = 14;
pub const HEADER_FIELDS_SIZE_BYTES: usize = 128;
pub const EMBEDDED_TABLE_OFFSET_BYTES: u64 = 8192;
/// The deepest table that fits in the header block's second half (1024 slots).
pub const EMBEDDED_TABLE_DEPTH_MAX: u32 = 10;
pub const TABLE_SLOT_SIZE_BYTES: u64 = 8;

/// The decoded header fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZapHeaderPhys {
    pub salt: [u64; 2],
    pub entry_count: u64,
    pub depth: u32,
    pub table_block_start: u64,
    pub table_block_count: u64,
    pub next_block: u64,
    pub leaf_count: u64,
}

/// Blocks an external pointer table of 2^depth slots takes.
pub fn table_blocks_for(depth: u32) -> u64 {
    ((TABLE_SLOT_SIZE_BYTES << depth) / ZAP_BLOCK_SIZE_BYTES as u64).max(1)
}

impl ZapHeaderPhys {
    /// A new ZAP: one empty leaf in block 1, table of one slot.
    pub fn new(salt: [u64; 2]) -> ZapHeaderPhys {
        ZapHeaderPhys {
            salt,
            entry_count: 0,
            depth: 0,
            table_block_start: 0,
            table_block_count: 0,
            next_block: 2,
            leaf_count: 1,
        }
    }

    pub fn encode(&self) -> [u8; HEADER_FIELDS_SIZE_BYTES] {
        let mut out = [0u8; HEADER_FIELDS_SIZE_BYTES];
        let words = [
            HEADER_MAGIC,
            ZAP_VERSION,
            self.salt[0],
            self.salt[1],
            self.entry_count,
            u64::from(self.depth),
            self.table_block_start,
            self.table_block_count,
            self.next_block,
            self.leaf_count,
            ZAP_BLOCK_SHIFT,
        ];
        for (i, word) in words.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        out
    }

    /// Decodes and checks the header fields.
    pub fn decode(bytes: &[u8]) -> Result<ZapHeaderPhys, String> {
        if bytes.len() < HEADER_FIELDS_SIZE_BYTES {
            return Err(format!("header of {} bytes", bytes.len()));
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        if word(0) != HEADER_MAGIC {
            return Err("not a ZAP (bad header magic)".to_string());
        }
        if word(1) != ZAP_VERSION || word(10) != ZAP_BLOCK_SHIFT {
            return Err(format!(
                "ZAP version {} block shift {} unsupported",
                word(1),
                word(10)
            ));
        }
        if word(5) > u64::from(DEPTH_MAX) {
            return Err(format!("pointer table depth {}", word(5)));
        }
        let header = ZapHeaderPhys {
            salt: [word(2), word(3)],
            entry_count: word(4),
            depth: word(5) as u32,
            table_block_start: word(6),
            table_block_count: word(7),
            next_block: word(8),
            leaf_count: word(9),
        };
        let table_ok = if header.depth <= EMBEDDED_TABLE_DEPTH_MAX {
            header.table_block_start == 0 && header.table_block_count == 0
        } else {
            header.table_block_start >= 1
                && header.table_block_count == table_blocks_for(header.depth)
                && header
                    .table_block_start
                    .checked_add(header.table_block_count)
                    .is_some_and(|end| end <= header.next_block)
        };
        if !table_ok
            || header.next_block < 2
            || header.next_block > (1u64 << 48)
            || header.leaf_count == 0
            || header.leaf_count >= header.next_block
        {
            return Err(format!("inconsistent header {header:?}"));
        }
        Ok(header)
    }

    /// Where the pointer table starts, in bytes within the object.
    pub fn table_offset_bytes(&self) -> u64 {
        if self.depth <= EMBEDDED_TABLE_DEPTH_MAX {
            EMBEDDED_TABLE_OFFSET_BYTES
        } else {
            self.table_block_start * ZAP_BLOCK_SIZE_BYTES as u64
        }
    }

    pub fn table_slots(&self) -> u64 {
        1u64 << self.depth
    }

    /// Whether `block` can be a leaf: in use, not the header, not the table.
    pub fn is_leaf_block(&self, block: u64) -> bool {
        let in_table = self.depth > EMBEDDED_TABLE_DEPTH_MAX
            && block >= self.table_block_start
            && block < self.table_block_start + self.table_block_count;
        block >= 1 && block < self.next_block && !in_table
    }
}
