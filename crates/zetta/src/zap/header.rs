//! Block 0 of a ZAP object, as OpenZFS writes it: a micro ZAP's only block (`mzap_phys_t`)
//! or a fat ZAP's header (`zap_phys_t`). Little-endian (the engine's byte order); the
//! layouts and constants are the part-1 reader's (`openzfs::micro`, `openzfs::fat`).
//!
//! ```text
//! micro ZAP block (512 bytes, grown by 512 up to 128 KiB):
//!    0 mz_block_type = ZBT_MICRO (2^63 + 3)   8 mz_salt   16 mz_normflags   24..64 pad
//!   64 + 64 * i  entry i:  0 mze_value u64   8 mze_cd u32   12 pad u16
//!                         14 mze_name[50], NUL-terminated (empty slot: mze_name[0] == 0)
//!
//! fat ZAP header (block 0 of 16 KiB blocks):
//!    0 zap_block_type = ZBT_HEADER (2^63 + 1)    8 zap_magic = 0x2F52AB2AB
//!   16 zap_ptrtbl: zt_blk  24 zt_numblks  32 zt_shift  40 zt_nextblk  48 zt_blks_copied
//!   56 zap_freeblk  64 zap_num_leafs  72 zap_num_entries  80 zap_salt
//!   88 zap_normflags  96 zap_flags              104 .. 8192 zero
//! 8192 .. 16384  the embedded pointer table: 1024 u64 leaf block ids (zt_numblks == 0)
//! ```
//!
//! Invariants: `MicroBlock::decode` and `FatHeader::decode` check every field they return
//! (block type, magic, sizes, table shape, block ids below `zap_freeblk`), so the
//! operations index with them without further checks.

use super::openzfs::fat::{ZapTable, ZAP_MAGIC};
use super::openzfs::micro::{MZAP_ENT_LEN, MZAP_NAME_LEN};
use super::openzfs::{ZBT_HEADER, ZBT_MICRO};

/// `fzap_default_block_shift`: fat ZAP blocks are 16 KiB.
pub const FAT_BLOCK_SHIFT: u32 = 14;
/// A micro ZAP starts at `SPA_MINBLOCKSIZE` and grows by it.
pub const MICRO_BLOCK_MIN_BYTES: usize = 512;
/// `zap_micro_max_size` (`SPA_OLD_MAXBLOCKSIZE`): a fuller micro ZAP becomes fat.
pub const MICRO_BLOCK_MAX_BYTES: usize = 128 << 10;
/// Bytes of `zap_phys_t` before its padding.
pub const FAT_HEADER_FIELDS_BYTES: usize = 104;
/// The largest pointer table shift: `zap_hashbits - 2` (`zap_grow_ptrtbl`).
pub const TABLE_SHIFT_MAX: u64 = 26;

fn le64(buf: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(w)
}

fn put64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The first word of block 0: which kind of ZAP the object is.
pub fn block_type(first_word: &[u8]) -> Option<u64> {
    (first_word.len() >= 8).then(|| le64(first_word, 0))
}

/// One used micro ZAP slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroEntry {
    pub value: u64,
    pub cd: u32,
    pub name: Vec<u8>,
}

/// A decoded micro ZAP block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroBlock {
    pub salt: u64,
    pub normflags: u64,
    /// One per 64-byte chunk after the header (`zap_num_chunks`).
    pub slots: Vec<Option<MicroEntry>>,
}

impl MicroBlock {
    /// An empty micro ZAP of `size_bytes`.
    pub fn new(salt: u64, size_bytes: usize) -> MicroBlock {
        MicroBlock {
            salt,
            normflags: 0,
            slots: vec![None; size_bytes / MZAP_ENT_LEN - 1],
        }
    }

    pub fn size_bytes(&self) -> usize {
        (self.slots.len() + 1) * MZAP_ENT_LEN
    }

    pub fn entry_count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    pub fn decode(buf: &[u8]) -> Result<MicroBlock, String> {
        check_micro_block(buf)?;
        let mut slots = Vec::with_capacity(buf.len() / MZAP_ENT_LEN - 1);
        for chunk in micro_chunks(buf) {
            slots.push(chunk?.map(|e| MicroEntry {
                value: e.value,
                cd: e.cd,
                name: e.name.to_vec(),
            }));
        }
        Ok(MicroBlock {
            salt: le64(buf, 8),
            normflags: le64(buf, 16),
            slots,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut buf = vec![0u8; self.size_bytes()];
        put64(&mut buf, 0, ZBT_MICRO);
        put64(&mut buf, 8, self.salt);
        put64(&mut buf, 16, self.normflags);
        for (i, slot) in self.slots.iter().enumerate() {
            if let Some(e) = slot {
                let at = MZAP_ENT_LEN * (i + 1);
                buf[at..at + MZAP_ENT_LEN].copy_from_slice(&micro_chunk(e.value, e.cd, &e.name));
            }
        }
        buf
    }
}

/// A used micro ZAP chunk borrowed from its block (`mzap_ent_phys_t`), for the operations
/// that touch one entry and so neither copy the names nor decode the whole block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MicroEntryRef<'a> {
    pub value: u64,
    pub cd: u32,
    pub name: &'a [u8],
}

/// The size and block type of a micro ZAP block: what `MicroBlock::decode` checks before
/// its chunks.
pub fn check_micro_block(buf: &[u8]) -> Result<(), String> {
    if buf.len() < MICRO_BLOCK_MIN_BYTES
        || buf.len() > 1 << 20
        || !buf.len().is_multiple_of(MICRO_BLOCK_MIN_BYTES)
    {
        return Err(format!("micro ZAP block of {} bytes", buf.len()));
    }
    if le64(buf, 0) != ZBT_MICRO {
        return Err(format!("block type {:#x} is not ZBT_MICRO", le64(buf, 0)));
    }
    Ok(())
}

/// The chunks after a micro ZAP block's header in slot order (`mzap_open`'s walk), borrowed:
/// `None` for a free chunk (`mze_name[0] == 0`), an error for a name without its NUL.
pub fn micro_chunks(
    buf: &[u8],
) -> impl Iterator<Item = Result<Option<MicroEntryRef<'_>>, String>> + '_ {
    buf.get(MZAP_ENT_LEN..)
        .unwrap_or_default()
        .chunks_exact(MZAP_ENT_LEN)
        .map(|ent| {
            let name_field = &ent[14..14 + MZAP_NAME_LEN];
            if name_field[0] == 0 {
                return Ok(None);
            }
            let nul = name_field
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| "micro ZAP name without its NUL".to_string())?;
            let mut cd = [0u8; 4];
            cd.copy_from_slice(&ent[8..12]);
            Ok(Some(MicroEntryRef {
                value: le64(ent, 0),
                cd: u32::from_le_bytes(cd),
                name: &name_field[..nul],
            }))
        })
}

/// The 64 bytes of one micro ZAP entry (`mzap_addent`); `name` is shorter than
/// `MZAP_NAME_LEN` (the caller's check), the rest of the name field zero.
pub fn micro_chunk(value: u64, cd: u32, name: &[u8]) -> [u8; MZAP_ENT_LEN] {
    let mut chunk = [0u8; MZAP_ENT_LEN];
    put64(&mut chunk, 0, value);
    chunk[8..12].copy_from_slice(&cd.to_le_bytes());
    chunk[14..14 + name.len()].copy_from_slice(name);
    chunk
}

/// The decoded fields of a fat ZAP header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatHeader {
    pub block_shift: u32,
    pub ptrtbl: ZapTable,
    pub freeblk: u64,
    pub num_leafs: u64,
    pub num_entries: u64,
    pub salt: u64,
    pub normflags: u64,
    pub flags: u64,
}

impl FatHeader {
    /// `fzap_upgrade`'s header: the embedded table (shift bs - 4, every slot leaf 1),
    /// block 1 the first leaf.
    pub fn new(salt: u64, normflags: u64, block_shift: u32) -> FatHeader {
        FatHeader {
            block_shift,
            ptrtbl: ZapTable {
                blk: 0,
                numblks: 0,
                shift: u64::from(block_shift - 4),
                nextblk: 0,
                blks_copied: 0,
            },
            freeblk: 2,
            num_leafs: 1,
            num_entries: 0,
            salt,
            normflags,
            flags: 0,
        }
    }

    pub fn block_bytes(&self) -> u64 {
        1 << self.block_shift
    }

    /// Decodes and checks the header fields (`fields`: at least the first 104 bytes).
    pub fn decode(fields: &[u8], block_shift: u32) -> Result<FatHeader, String> {
        if fields.len() < FAT_HEADER_FIELDS_BYTES || !(9..=24).contains(&block_shift) {
            return Err(format!("fat ZAP header in {block_shift}-bit blocks"));
        }
        let w = |i: usize| le64(fields, 8 * i);
        if w(0) != ZBT_HEADER || w(1) != ZAP_MAGIC {
            return Err(format!("block type {:#x} magic {:#x}", w(0), w(1)));
        }
        let h = FatHeader {
            block_shift,
            ptrtbl: ZapTable {
                blk: w(2),
                numblks: w(3),
                shift: w(4),
                nextblk: w(5),
                blks_copied: w(6),
            },
            freeblk: w(7),
            num_leafs: w(8),
            num_entries: w(9),
            salt: w(10),
            normflags: w(11),
            flags: w(12),
        };
        let bs = u64::from(block_shift);
        let t = &h.ptrtbl;
        let table_ok = if t.numblks == 0 {
            t.shift <= bs - 4
        } else {
            t.shift <= TABLE_SHIFT_MAX
                && t.shift >= bs - 3
                && t.numblks == 1 << (t.shift - (bs - 3))
                && t.blk >= 1
                && t.blk.checked_add(t.numblks).is_some_and(|e| e <= h.freeblk)
        };
        // A copy in progress (OpenZFS grows an external table one block per operation):
        // the new table lies below zap_freeblk too.
        let copy_ok = t.nextblk == 0
            || (t.numblks > 0
                && t.blks_copied < t.numblks
                && t.nextblk >= 1
                && t.nextblk
                    .checked_add(2 * t.numblks)
                    .is_some_and(|e| e <= h.freeblk));
        if !table_ok
            || !copy_ok
            || h.freeblk < 2
            || h.freeblk > 1 << 40
            || h.num_leafs == 0
            || h.num_leafs >= h.freeblk
            || h.flags != 0
        {
            return Err(format!("inconsistent fat ZAP header {h:?}"));
        }
        Ok(h)
    }

    pub fn encode(&self) -> [u8; FAT_HEADER_FIELDS_BYTES] {
        let mut out = [0u8; FAT_HEADER_FIELDS_BYTES];
        let t = &self.ptrtbl;
        let words = [
            ZBT_HEADER,
            ZAP_MAGIC,
            t.blk,
            t.numblks,
            t.shift,
            t.nextblk,
            t.blks_copied,
            self.freeblk,
            self.num_leafs,
            self.num_entries,
            self.salt,
            self.normflags,
            self.flags,
        ];
        for (i, word) in words.iter().enumerate() {
            put64(&mut out, 8 * i, *word);
        }
        out
    }

    /// Byte offset in the object of pointer-table slot `idx` (`zap_idx_to_blk`).
    pub fn slot_offset(&self, idx: u64) -> u64 {
        if self.ptrtbl.numblks == 0 {
            self.block_bytes() / 2 + 8 * idx
        } else {
            (self.ptrtbl.blk << self.block_shift) + 8 * idx
        }
    }

    /// Whether `blkid` may be a leaf: in use, not the header, not a table block.
    pub fn is_leaf_block(&self, blkid: u64) -> bool {
        let t = &self.ptrtbl;
        let in_range = |start: u64, count: u64| blkid >= start && blkid - start < count;
        blkid >= 1
            && blkid < self.freeblk
            && !(t.numblks > 0 && in_range(t.blk, t.numblks))
            && !(t.nextblk > 0 && in_range(t.nextblk, 2 * t.numblks))
    }
}
