//! Block pointers: the 128-byte record through which every block is found (OpenZFS
//! `blkptr_t`, drawn in `spa.h`). A parent holds its children's block pointers, and each
//! carries the checksum of the child's physical bytes, so the pool is a Merkle tree rooted in
//! the uberblock: a block that verifies was written by us, for this place in the tree.
//!
//! ```text
//! byte  0  dva[0].vdev        u32   top-level vdev index
//!       4  dva[0].asize       u32   allocated size in 512-byte units (0 = no DVA)
//!       8  dva[0].offset      u64   byte offset in the top-level vdev's address space
//!      16  dva[1]  (16 bytes, same layout)
//!      32  dva[2]  (16 bytes, same layout)
//!      48  lsize              u32   logical (uncompressed) size in bytes
//!      52  psize              u32   physical size in bytes (multiple of 512)
//!      56  compression        u8    zcommon algorithm id (0 = off)
//!      57  checksum           u8    zcommon checksum id (0 = off)
//!      58  object type        u8    what the block holds (ObjectType)
//!      59  level              u8    0 = data, n = indirect level n
//!      60  reserved           [u8; 4]  zero
//!      64  birth txg          u64   txg in which this block was written (0 = hole)
//!      72  fill               u64   non-hole level-0 blocks beneath (dnodes in use for
//!                                   the meta-dnode)
//!      80  checksum           [u64; 4] of the psize physical bytes
//!     112  reserved           [u8; 16] zero
//! ```
//! A hole is an all-zero pointer. Invariants checked on decode: lsize and psize within the
//! block size limit, psize a multiple of 512, known algorithm ids, level <= LEVEL_MAX, and
//! every non-empty DVA has a sector-aligned offset.

use crate::types::{Txg, BLOCK_SIZE_MAX_BYTES};
use std::fmt;
use zetta_zcommon::checksum::Checksum256;

pub const BLKPTR_SIZE_BYTES: usize = 128;
pub const DVA_COUNT_MAX: usize = 3;
/// Deepest indirect level (a dnode has at most `dmu::dnode::LEVELS_MAX` = 8 levels).
pub const LEVEL_MAX: u8 = 7;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dva {
    pub vdev: u32,
    pub asize_bytes: u64,
    pub offset_bytes: u64,
}

impl Dva {
    pub fn is_empty(&self) -> bool {
        self.asize_bytes == 0
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockPointer {
    pub dvas: [Dva; DVA_COUNT_MAX],
    pub lsize_bytes: u32,
    pub psize_bytes: u32,
    pub compression: u8,
    pub checksum_kind: u8,
    pub object_type: u8,
    pub level: u8,
    pub birth_txg: Txg,
    pub fill: u64,
    pub checksum: Checksum256,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlkptrDecodeError(pub String);

impl fmt::Display for BlkptrDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt block pointer: {}", self.0)
    }
}

impl std::error::Error for BlkptrDecodeError {}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

impl BlockPointer {
    pub const HOLE: BlockPointer = BlockPointer {
        dvas: [Dva {
            vdev: 0,
            asize_bytes: 0,
            offset_bytes: 0,
        }; DVA_COUNT_MAX],
        lsize_bytes: 0,
        psize_bytes: 0,
        compression: 0,
        checksum_kind: 0,
        object_type: 0,
        level: 0,
        birth_txg: Txg(0),
        fill: 0,
        checksum: [0; 4],
    };

    pub fn is_hole(&self) -> bool {
        self.birth_txg.0 == 0
    }

    pub fn copies(&self) -> usize {
        self.dvas.iter().filter(|d| !d.is_empty()).count()
    }

    /// Sum of the allocated sizes of every copy.
    pub fn asize_total_bytes(&self) -> u64 {
        self.dvas.iter().map(|d| d.asize_bytes).sum()
    }

    pub fn encode(&self, out: &mut [u8]) {
        assert_eq!(out.len(), BLKPTR_SIZE_BYTES);
        out.fill(0);
        for (i, dva) in self.dvas.iter().enumerate() {
            let at = i * 16;
            debug_assert_eq!(dva.asize_bytes % 512, 0);
            out[at..at + 4].copy_from_slice(&dva.vdev.to_le_bytes());
            out[at + 4..at + 8].copy_from_slice(&((dva.asize_bytes / 512) as u32).to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&dva.offset_bytes.to_le_bytes());
        }
        out[48..52].copy_from_slice(&self.lsize_bytes.to_le_bytes());
        out[52..56].copy_from_slice(&self.psize_bytes.to_le_bytes());
        out[56] = self.compression;
        out[57] = self.checksum_kind;
        out[58] = self.object_type;
        out[59] = self.level;
        out[64..72].copy_from_slice(&self.birth_txg.0.to_le_bytes());
        out[72..80].copy_from_slice(&self.fill.to_le_bytes());
        for (i, word) in self.checksum.iter().enumerate() {
            out[80 + i * 8..88 + i * 8].copy_from_slice(&word.to_le_bytes());
        }
    }

    pub fn to_bytes(&self) -> [u8; BLKPTR_SIZE_BYTES] {
        let mut out = [0u8; BLKPTR_SIZE_BYTES];
        self.encode(&mut out);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<BlockPointer, BlkptrDecodeError> {
        if bytes.len() < BLKPTR_SIZE_BYTES {
            return Err(BlkptrDecodeError(format!(
                "{} bytes, need 128",
                bytes.len()
            )));
        }
        let bytes = &bytes[..BLKPTR_SIZE_BYTES];
        if bytes.iter().all(|b| *b == 0) {
            return Ok(BlockPointer::HOLE);
        }
        let mut bp = BlockPointer::HOLE;
        for i in 0..DVA_COUNT_MAX {
            let at = i * 16;
            let dva = Dva {
                vdev: le_u32(bytes, at),
                asize_bytes: u64::from(le_u32(bytes, at + 4)) * 512,
                offset_bytes: le_u64(bytes, at + 8),
            };
            if !dva.is_empty() && !dva.offset_bytes.is_multiple_of(512) {
                return Err(BlkptrDecodeError(format!(
                    "DVA {i} offset {} is not sector aligned",
                    dva.offset_bytes
                )));
            }
            bp.dvas[i] = dva;
        }
        bp.lsize_bytes = le_u32(bytes, 48);
        bp.psize_bytes = le_u32(bytes, 52);
        bp.compression = bytes[56];
        bp.checksum_kind = bytes[57];
        bp.object_type = bytes[58];
        bp.level = bytes[59];
        bp.birth_txg = Txg(le_u64(bytes, 64));
        bp.fill = le_u64(bytes, 72);
        for i in 0..4 {
            bp.checksum[i] = le_u64(bytes, 80 + i * 8);
        }
        bp.validate()?;
        Ok(bp)
    }

    /// Checks the invariants a decoded pointer must satisfy before the pipeline uses it.
    pub fn validate(&self) -> Result<(), BlkptrDecodeError> {
        let fail = |what: String| Err(BlkptrDecodeError(what));
        if self.is_hole() {
            return Ok(());
        }
        if u64::from(self.lsize_bytes) > BLOCK_SIZE_MAX_BYTES || self.lsize_bytes == 0 {
            return fail(format!("logical size {} out of range", self.lsize_bytes));
        }
        if self.psize_bytes == 0
            || !self.psize_bytes.is_multiple_of(512)
            || u64::from(self.psize_bytes) > BLOCK_SIZE_MAX_BYTES + 512
        {
            return fail(format!("physical size {} out of range", self.psize_bytes));
        }
        if zetta_zcommon::checksum::ChecksumKind::from_id(self.checksum_kind).is_none() {
            return fail(format!("unknown checksum id {}", self.checksum_kind));
        }
        if self.compression > zetta_zcommon::compress::ALGORITHM_ID_ZSTD {
            return fail(format!("unknown compression id {}", self.compression));
        }
        if self.level > LEVEL_MAX {
            return fail(format!("level {} too deep", self.level));
        }
        if self.copies() == 0 {
            return fail("no DVA in a non-hole block pointer".to_string());
        }
        Ok(())
    }
}

impl fmt::Display for BlockPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_hole() {
            return write!(f, "<hole>");
        }
        for dva in self.dvas.iter().filter(|d| !d.is_empty()) {
            write!(
                f,
                "{}:{:x}:{:x} ",
                dva.vdev, dva.offset_bytes, dva.asize_bytes
            )?;
        }
        write!(
            f,
            "L{} type={} {:x}L/{:x}P comp={} cksum={} birth={} fill={}",
            self.level,
            self.object_type,
            self.lsize_bytes,
            self.psize_bytes,
            self.compression,
            self.checksum_kind,
            self.birth_txg,
            self.fill
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BlockPointer {
        let mut bp = BlockPointer::HOLE;
        bp.dvas[0] = Dva {
            vdev: 1,
            asize_bytes: 8192,
            offset_bytes: 0x40_0000,
        };
        bp.lsize_bytes = 131072;
        bp.psize_bytes = 8192;
        bp.compression = 1;
        bp.checksum_kind = 1;
        bp.object_type = 5;
        bp.level = 0;
        bp.birth_txg = Txg(9);
        bp.fill = 1;
        bp.checksum = [1, 2, 3, 4];
        bp
    }

    /// Golden vector: the block pointer layout is the on-disk format; this pins it byte by byte.
    #[test]
    fn golden_bytes() {
        let bytes = sample().to_bytes();
        let mut expected = [0u8; 128];
        expected[0] = 1; // vdev 1
        expected[4] = 16; // 8192 / 512
        expected[8..16].copy_from_slice(&0x40_0000u64.to_le_bytes());
        expected[48..52].copy_from_slice(&131072u32.to_le_bytes());
        expected[52..56].copy_from_slice(&8192u32.to_le_bytes());
        expected[56] = 1;
        expected[57] = 1;
        expected[58] = 5;
        expected[64] = 9;
        expected[72] = 1;
        expected[80] = 1;
        expected[88] = 2;
        expected[96] = 3;
        expected[104] = 4;
        assert_eq!(bytes, expected);
        assert_eq!(BlockPointer::decode(&bytes).unwrap(), sample());
    }

    /// Corrupt pointers read from disk must be refused with an error, not trusted.
    #[test]
    fn corrupt_pointers_are_refused() {
        let good = sample().to_bytes();
        let mut rng = crate::rand::SeededRng::new(5);
        let mut refused = 0;
        for _ in 0..5000 {
            let mut bytes = good;
            let at = rng.below(128) as usize;
            bytes[at] ^= 1 << rng.below(8);
            if BlockPointer::decode(&bytes).is_err() {
                refused += 1;
            }
        }
        assert!(refused > 0);
        let mut misaligned = good;
        misaligned[8] = 1;
        assert!(BlockPointer::decode(&misaligned).is_err());
        assert!(BlockPointer::decode(&good[..50]).is_err());
        assert!(BlockPointer::decode(&[0u8; 128]).unwrap().is_hole());
    }
}
