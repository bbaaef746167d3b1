//! Dnodes: the 512-byte descriptor of an object (OpenZFS `dnode_phys_t`, `dnode.c`).
//!
//! An object is a tree of blocks: level-0 data blocks of `data_block_size_bytes`, indirect
//! blocks of `1 << indirect_block_shift` bytes holding 128-byte block pointers, and at the top
//! `nblkptr` pointers in the dnode itself. The bonus buffer carries small per-object records
//! (a dataset's fields, a file's attributes).
//!
//! ```text
//! byte  0  object_type u8    1  indirect_block_shift u8   2  nlevels u8   3  nblkptr u8
//!       4  bonus_type u8     5  checksum u8 (0 = dataset default)   6  compress u8
//!       7  flags u8 (bit 0: fixed block size — never grows to the record size)
//!       8  data_block_size_sectors u16 (512-byte units, 0 = free dnode)  10  bonus_len u16
//!      12  reserved u32
//!      16  max_block_id u64   24  used_bytes u64 (allocated, all copies)  32  size_bytes u64
//!      40  reserved [u8; 24]
//!      64  blkptr[nblkptr]  (128 bytes each)
//!      64 + 128 * nblkptr   bonus[bonus_len] (space up to byte 512)
//! ```
//! Invariants checked on decode: nblkptr 1..=3, nlevels <= LEVELS_MAX, block sizes in range,
//! bonus within the dnode.

use crate::zio::blkptr::{BlkptrDecodeError, BlockPointer, BLKPTR_SIZE_BYTES};

pub const DNODE_SIZE_BYTES: usize = 512;
pub const DNODE_HEADER_BYTES: usize = 64;
pub const LEVELS_MAX: u8 = 8;
pub const INDIRECT_BLOCK_SHIFT_DEFAULT: u8 = 17;
pub const NBLKPTR_MAX: usize = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnodePhys {
    pub object_type: u8,
    pub indirect_block_shift: u8,
    pub nlevels: u8,
    pub bonus_type: u8,
    pub checksum: u8,
    pub compress: u8,
    pub flags: u8,
    pub data_block_size_bytes: u32,
    pub max_block_id: u64,
    pub used_bytes: u64,
    pub size_bytes: u64,
    pub blkptr: Vec<BlockPointer>,
    pub bonus: Vec<u8>,
}

impl DnodePhys {
    /// A new, empty object.
    pub fn new(
        object_type: u8,
        data_block_size_bytes: u32,
        nblkptr: usize,
        bonus_type: u8,
        bonus_len: usize,
    ) -> DnodePhys {
        assert!((1..=NBLKPTR_MAX).contains(&nblkptr));
        assert!(bonus_len <= Self::bonus_capacity(nblkptr));
        assert!(data_block_size_bytes >= 512 && data_block_size_bytes.is_multiple_of(512));
        DnodePhys {
            object_type,
            indirect_block_shift: INDIRECT_BLOCK_SHIFT_DEFAULT,
            nlevels: 1,
            bonus_type,
            checksum: 0,
            compress: 0,
            flags: 0,
            data_block_size_bytes,
            max_block_id: 0,
            used_bytes: 0,
            size_bytes: 0,
            blkptr: vec![BlockPointer::HOLE; nblkptr],
            bonus: vec![0u8; bonus_len],
        }
    }

    pub fn bonus_capacity(nblkptr: usize) -> usize {
        DNODE_SIZE_BYTES - DNODE_HEADER_BYTES - nblkptr * BLKPTR_SIZE_BYTES
    }

    pub fn is_free(&self) -> bool {
        self.data_block_size_bytes == 0
    }

    pub fn free() -> DnodePhys {
        DnodePhys {
            object_type: 0,
            indirect_block_shift: 0,
            nlevels: 0,
            bonus_type: 0,
            checksum: 0,
            compress: 0,
            flags: 0,
            data_block_size_bytes: 0,
            max_block_id: 0,
            used_bytes: 0,
            size_bytes: 0,
            blkptr: Vec::new(),
            bonus: Vec::new(),
        }
    }

    /// Block pointers per indirect block.
    pub fn entries_per_indirect(&self) -> u64 {
        (1u64 << self.indirect_block_shift) / BLKPTR_SIZE_BYTES as u64
    }

    /// How many level-0 blocks a tree of `nlevels` levels can address.
    pub fn capacity_blocks(&self, nlevels: u8) -> u64 {
        let mut capacity = self.blkptr.len() as u64;
        for _ in 1..nlevels {
            capacity = capacity.saturating_mul(self.entries_per_indirect());
        }
        capacity
    }

    pub fn encode(&self, out: &mut [u8]) {
        assert_eq!(out.len(), DNODE_SIZE_BYTES);
        out.fill(0);
        if self.is_free() {
            return;
        }
        out[0] = self.object_type;
        out[1] = self.indirect_block_shift;
        out[2] = self.nlevels;
        out[3] = self.blkptr.len() as u8;
        out[4] = self.bonus_type;
        out[5] = self.checksum;
        out[6] = self.compress;
        out[7] = self.flags;
        out[8..10].copy_from_slice(&((self.data_block_size_bytes / 512) as u16).to_le_bytes());
        out[10..12].copy_from_slice(&(self.bonus.len() as u16).to_le_bytes());
        out[16..24].copy_from_slice(&self.max_block_id.to_le_bytes());
        out[24..32].copy_from_slice(&self.used_bytes.to_le_bytes());
        out[32..40].copy_from_slice(&self.size_bytes.to_le_bytes());
        for (i, bp) in self.blkptr.iter().enumerate() {
            let at = DNODE_HEADER_BYTES + i * BLKPTR_SIZE_BYTES;
            bp.encode(&mut out[at..at + BLKPTR_SIZE_BYTES]);
        }
        let bonus_at = DNODE_HEADER_BYTES + self.blkptr.len() * BLKPTR_SIZE_BYTES;
        out[bonus_at..bonus_at + self.bonus.len()].copy_from_slice(&self.bonus);
    }

    pub fn decode(bytes: &[u8]) -> Result<DnodePhys, BlkptrDecodeError> {
        let fail = |why: String| Err(BlkptrDecodeError(format!("dnode: {why}")));
        if bytes.len() < DNODE_SIZE_BYTES {
            return fail("truncated".to_string());
        }
        let sectors = u16::from_le_bytes([bytes[8], bytes[9]]);
        if sectors == 0 {
            return Ok(DnodePhys::free());
        }
        let nblkptr = bytes[3] as usize;
        if !(1..=NBLKPTR_MAX).contains(&nblkptr) {
            return fail(format!("nblkptr {nblkptr}"));
        }
        let nlevels = bytes[2];
        if nlevels == 0 || nlevels > LEVELS_MAX {
            return fail(format!("nlevels {nlevels}"));
        }
        let indirect_block_shift = bytes[1];
        if !(10..=17).contains(&indirect_block_shift) {
            return fail(format!("indirect block shift {indirect_block_shift}"));
        }
        if u64::from(sectors) * 512 > crate::types::BLOCK_SIZE_MAX_BYTES {
            return fail(format!("data block size of {sectors} sectors"));
        }
        let bonus_len = u16::from_le_bytes([bytes[10], bytes[11]]) as usize;
        if bonus_len > Self::bonus_capacity(nblkptr) {
            return fail(format!("bonus length {bonus_len}"));
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let mut blkptr = Vec::with_capacity(nblkptr);
        for i in 0..nblkptr {
            let at = DNODE_HEADER_BYTES + i * BLKPTR_SIZE_BYTES;
            blkptr.push(BlockPointer::decode(&bytes[at..at + BLKPTR_SIZE_BYTES])?);
        }
        let bonus_at = DNODE_HEADER_BYTES + nblkptr * BLKPTR_SIZE_BYTES;
        Ok(DnodePhys {
            object_type: bytes[0],
            indirect_block_shift,
            nlevels,
            bonus_type: bytes[4],
            checksum: bytes[5],
            compress: bytes[6],
            flags: bytes[7],
            data_block_size_bytes: u32::from(sectors) * 512,
            max_block_id: word(16),
            used_bytes: word(24),
            size_bytes: word(32),
            blkptr,
            bonus: bytes[bonus_at..bonus_at + bonus_len].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden bytes of a fresh dnode: the dnode layout is on-disk format.
    #[test]
    fn golden_new_dnode() {
        let mut dnode = DnodePhys::new(6, 131072, 1, 0, 8);
        dnode.bonus.copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        dnode.size_bytes = 7;
        let mut bytes = [0u8; DNODE_SIZE_BYTES];
        dnode.encode(&mut bytes);
        assert_eq!(&bytes[0..12], &[6, 17, 1, 1, 0, 0, 0, 0, 0, 1, 8, 0]);
        assert_eq!(bytes[32], 7);
        assert_eq!(&bytes[192..200], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(DnodePhys::decode(&bytes).unwrap(), dnode);
        assert_eq!(dnode.capacity_blocks(1), 1);
        assert_eq!(dnode.capacity_blocks(3), 1024 * 1024);
    }

    /// Damaged dnodes from disk are errors, never panics.
    #[test]
    fn corrupt_dnodes_are_refused() {
        let dnode = DnodePhys::new(6, 4096, 3, 0, 0);
        let mut good = [0u8; DNODE_SIZE_BYTES];
        dnode.encode(&mut good);
        let mut rng = crate::rand::SeededRng::new(9);
        for _ in 0..5000 {
            let mut bytes = good;
            for _ in 0..3 {
                let at = rng.below(DNODE_SIZE_BYTES as u64) as usize;
                bytes[at] = rng.next_u64() as u8;
            }
            let _ = DnodePhys::decode(&bytes);
        }
        let mut bad = good;
        bad[3] = 9;
        assert!(DnodePhys::decode(&bad).is_err());
        assert!(DnodePhys::decode(&good[..100]).is_err());
    }
}
