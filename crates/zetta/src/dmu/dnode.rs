//! Dnodes: the 512-byte descriptor of an object, in OpenZFS's `dnode_phys_t` bytes
//! (`include/sys/dnode.h`, `module/zfs/dnode.c`, `dnode_sync.c`).
//!
//! An object is a tree of blocks: level-0 data blocks of `data_block_size_bytes`, indirect
//! blocks of `1 << indirect_block_shift` bytes holding 128-byte block pointers, and at the top
//! `nblkptr` pointers in the dnode itself. The bonus buffer carries small per-object records
//! (a dataset's fields, a file's attributes).
//!
//! One layout, not two: the bytes are written and read by the part-1 codec
//! (`dmu::openzfs::dnode::DnodePhys::{encode, decode}`, little-endian as the engine writes
//! every block); this type is the engine's typed view of them (block pointers decoded,
//! sizes in bytes). Nothing else: `dn_pad3` is zero, as OpenZFS writes it.
//!
//! ```text
//! byte  0  dn_type u8   1  dn_indblkshift u8   2  dn_nlevels u8   3  dn_nblkptr u8
//!       4  dn_bonustype u8   5  dn_checksum u8 (0 = inherit)   6  dn_compress u8 (0 = inherit)
//!       7  dn_flags u8: USED_BYTES 1 (always set: dn_used is in bytes), USERUSED_ACCOUNTED 2,
//!          SPILL_BLKPTR 4, USEROBJUSED_ACCOUNTED 8 (set at sync by `objset::userused`)
//!       8  dn_datablkszsec u16 (512-byte units)   10  dn_bonuslen u16
//!      12  dn_extra_slots u8 (0: the engine writes single-slot dnodes)   13  dn_pad2[3]
//!      16  dn_maxblkid u64 (highest block id the tree holds)
//!      24  dn_used u64 (bytes allocated, all copies: BP_GET_DSIZE summed)
//!      32  dn_pad3[4]: zero
//!      64  blkptr[nblkptr]  (128 bytes each)
//!      64 + 128 * nblkptr   bonus[bonuslen]
//!     384  spill blkptr (only with SPILL_BLKPTR: a ZPL object's spill block, `DMU_OT_SA`)
//! ```
//!
//! A dnode keeps no byte size, as in OpenZFS: an object's size belongs to its owner (a
//! file's to its znode, a packed nvlist's, history's, space map's and bpobj's to their
//! bonus buffers, a zvol's to its property ZAP); what the DMU knows is the block extent,
//! `(dn_maxblkid + 1) * block size` (`ObjectSet::extent_bytes`). Nor does it keep a "fixed
//! block size" mark: only a ZPL plain file grows its single block up to the record size
//! (OpenZFS `zfs_grow_blocksize`); every other object keeps the block size it was created
//! with unless its owner changes it (`dmu_object_set_blocksize`). Formats up to 17 kept
//! both in `dn_pad3` (format 20 retired them).
//!
//! Invariants checked on decode (beyond the part-1 codec's): nblkptr 1..=3, no extra
//! slots, nlevels <= LEVELS_MAX, indirect shift 10..=17, block sizes in range; a hostile
//! dnode is a `BlkptrDecodeError`, never a panic.

use super::openzfs::dnode::{
    DnodePhys as OzDnode, RawBlkptr, DNODE_CORE_BYTES, DNODE_FLAG_SPILL_BLKPTR,
    DNODE_FLAG_USED_BYTES, DNODE_SLOT_BYTES,
};
use crate::byteorder::ByteOrder;
use crate::zio::blkptr::{BlkptrDecodeError, BlockPointer, BLKPTR_SIZE_BYTES};

pub const DNODE_SIZE_BYTES: usize = DNODE_SLOT_BYTES;
pub const DNODE_HEADER_BYTES: usize = DNODE_CORE_BYTES;
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
    /// OpenZFS's `dn_flags` (`DNODE_FLAG_*`).
    pub flags: u8,
    pub data_block_size_bytes: u32,
    pub max_block_id: u64,
    pub used_bytes: u64,
    pub blkptr: Vec<BlockPointer>,
    pub bonus: Vec<u8>,
    /// The spill block pointer (`DNODE_FLAG_SPILL_BLKPTR`): a ZPL object's spill block
    /// (`ObjectSet::set_bonus_and_spill`).
    pub spill: Option<BlockPointer>,
}

impl DnodePhys {
    /// A new, empty object (`dnode_allocate`: `dn_used` in bytes).
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
            flags: DNODE_FLAG_USED_BYTES,
            data_block_size_bytes,
            max_block_id: 0,
            used_bytes: 0,
            blkptr: vec![BlockPointer::HOLE; nblkptr],
            bonus: vec![0u8; bonus_len],
            spill: None,
        }
    }

    pub fn bonus_capacity(nblkptr: usize) -> usize {
        DNODE_SIZE_BYTES - DNODE_HEADER_BYTES - nblkptr * BLKPTR_SIZE_BYTES
    }

    pub fn is_free(&self) -> bool {
        self.object_type == 0
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
            blkptr: Vec::new(),
            bonus: Vec::new(),
            spill: None,
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

    /// The part-1 codec's view of this dnode (little-endian, as the engine writes).
    pub fn to_openzfs(&self) -> OzDnode {
        if self.is_free() {
            return OzDnode::free(ByteOrder::Little);
        }
        let raw = |bp: &BlockPointer| {
            let mut out: RawBlkptr = [0u8; BLKPTR_SIZE_BYTES];
            bp.encode(&mut out);
            out
        };
        let used = if self.flags & DNODE_FLAG_USED_BYTES != 0 {
            self.used_bytes
        } else {
            self.used_bytes / 512
        };
        let spill_flag = if self.spill.is_some() {
            DNODE_FLAG_SPILL_BLKPTR
        } else {
            0
        };
        OzDnode {
            order: ByteOrder::Little,
            object_type: self.object_type,
            indblkshift: self.indirect_block_shift,
            nlevels: self.nlevels,
            nblkptr: self.blkptr.len() as u8,
            bonustype: self.bonus_type,
            checksum: self.checksum,
            compress: self.compress,
            flags: (self.flags & !DNODE_FLAG_SPILL_BLKPTR) | spill_flag,
            datablkszsec: (self.data_block_size_bytes / 512) as u16,
            bonuslen: self.bonus.len() as u16,
            extra_slots: 0,
            maxblkid: self.max_block_id,
            used,
            blkptrs: self.blkptr.iter().map(raw).collect(),
            bonus: self.bonus.clone(),
            spill: self.spill.as_ref().map(raw),
        }
    }

    /// Writes the 512 bytes of the dnode. The engine's dnodes always fit (`new` and
    /// `set_bonus` bound the bonus; the pointers are 1..=3): a failure is a bug.
    pub fn encode(&self, out: &mut [u8]) {
        assert_eq!(out.len(), DNODE_SIZE_BYTES);
        out.fill(0);
        if self.is_free() {
            return;
        }
        if let Err(e) = self.to_openzfs().encode(out) {
            panic!("engine dnode does not fit its slot: {e} ({self:?})");
        }
        // dn_pad3: OpenZFS's codec leaves the pads as `out` held them (zeroed above).
        debug_assert!(out[32..64].iter().all(|&b| b == 0));
    }

    /// Decodes one 512-byte slot (little-endian) through the part-1 codec, then checks
    /// what the engine's own trees need.
    pub fn decode(bytes: &[u8]) -> Result<DnodePhys, BlkptrDecodeError> {
        let fail = |why: String| Err(BlkptrDecodeError(format!("dnode: {why}")));
        let Some(slot) = bytes.get(..DNODE_SIZE_BYTES) else {
            return fail("truncated".to_string());
        };
        // Large dnodes are refused before the codec looks past this slot.
        if slot[12] != 0 {
            return fail(format!("dn_extra_slots {} (large dnodes)", slot[12]));
        }
        let oz = match OzDnode::decode(slot, ByteOrder::Little) {
            Ok(oz) => oz,
            Err(e) => return fail(e.to_string().trim_start_matches("dnode: ").to_string()),
        };
        if oz.is_free() {
            return Ok(DnodePhys::free());
        }
        let nblkptr = usize::from(oz.nblkptr);
        if !(1..=NBLKPTR_MAX).contains(&nblkptr) {
            return fail(format!("nblkptr {nblkptr}"));
        }
        if oz.nlevels == 0 || oz.nlevels > LEVELS_MAX {
            return fail(format!("nlevels {}", oz.nlevels));
        }
        if !(10..=17).contains(&oz.indblkshift) {
            return fail(format!("indirect block shift {}", oz.indblkshift));
        }
        if oz.data_block_size() as u64 > crate::types::BLOCK_SIZE_MAX_BYTES {
            return fail(format!("data block size of {} sectors", oz.datablkszsec));
        }
        let blkptr = oz
            .blkptrs
            .iter()
            .map(|raw| BlockPointer::decode(raw))
            .collect::<Result<Vec<_>, _>>()?;
        let spill = oz
            .spill
            .as_ref()
            .map(|raw| BlockPointer::decode(raw))
            .transpose()?;
        Ok(DnodePhys {
            object_type: oz.object_type,
            indirect_block_shift: oz.indblkshift,
            nlevels: oz.nlevels,
            bonus_type: oz.bonustype,
            checksum: oz.checksum,
            compress: oz.compress,
            flags: oz.flags,
            data_block_size_bytes: oz.data_block_size() as u32,
            max_block_id: oz.maxblkid,
            used_bytes: oz.used_bytes(),
            blkptr,
            bonus: oz.bonus,
            spill,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: the dnode layout is on-disk format (OpenZFS's `dnode_phys_t`); format 6 wrote
    // a private layout (flags bit 0 = fixed block size where OpenZFS reads USED_BYTES),
    // formats 7-17 an object size and a fixed-block-size word in `dn_pad3`.
    #[test]
    fn golden_new_dnode() {
        let mut dnode = DnodePhys::new(19, 131072, 1, 44, 8);
        dnode.bonus.copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        dnode.used_bytes = 0x1_0200;
        dnode.max_block_id = 3;
        let mut bytes = [0u8; DNODE_SIZE_BYTES];
        dnode.encode(&mut bytes);
        // type 19 (plain file), indblkshift 17, 1 level, 1 pointer, bonus type 44 (SA),
        // inherit checksum and compression, dn_flags USED_BYTES, 256 sectors, bonus 8.
        assert_eq!(&bytes[0..12], &[19, 17, 1, 1, 44, 0, 0, 1, 0, 1, 8, 0]);
        assert_eq!(&bytes[12..16], &[0, 0, 0, 0], "extra slots, pad2");
        assert_eq!(&bytes[16..24], &3u64.to_le_bytes(), "maxblkid");
        assert_eq!(&bytes[24..32], &0x1_0200u64.to_le_bytes(), "used, in bytes");
        assert_eq!(
            &bytes[32..64],
            &[0; 32],
            "dn_pad3 is zero, as OpenZFS writes it"
        );
        assert_eq!(&bytes[192..200], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(bytes[200..].iter().all(|&b| b == 0));
        assert_eq!(DnodePhys::decode(&bytes).unwrap(), dnode);
        assert_eq!(dnode.capacity_blocks(1), 1);
        assert_eq!(dnode.capacity_blocks(3), 1024 * 1024);
        let mut free = [0xffu8; DNODE_SIZE_BYTES];
        DnodePhys::free().encode(&mut free);
        assert_eq!(free, [0u8; DNODE_SIZE_BYTES], "a free slot is zeros");
    }

    // Why: the engine's dnodes must be OpenZFS's: the part-1 reader (which decodes real
    // OpenZFS pools) must see the same type, levels, sizes, pointers and bonus.
    #[test]
    fn engine_dnodes_decode_with_the_openzfs_reader() {
        let bp = |n: u64| {
            let mut bp = BlockPointer::HOLE;
            bp.dvas[0].asize_bytes = 4096;
            bp.dvas[0].offset_bytes = n << 12;
            bp.lsize_bytes = 16384;
            bp.psize_bytes = 4096;
            bp.compression = 15;
            bp.checksum_kind = 7;
            bp.object_type = 20;
            bp.birth_txg = crate::types::Txg(9);
            bp.fill = 1;
            bp.checksum = [n, 2, 3, 4];
            bp
        };
        for (nblkptr, bonus_len, levels) in [(1, 320, 1), (2, 100, 2), (3, 0, 6)] {
            let mut dn = DnodePhys::new(20, 16384, nblkptr, 17, bonus_len);
            dn.nlevels = levels;
            dn.max_block_id = 77;
            dn.used_bytes = 123 * 512;
            for (i, b) in dn.blkptr.iter_mut().enumerate() {
                *b = bp(100 + i as u64);
            }
            for (i, b) in dn.bonus.iter_mut().enumerate() {
                *b = i as u8 ^ 0x5a;
            }
            let mut bytes = [0u8; DNODE_SIZE_BYTES];
            dn.encode(&mut bytes);
            let oz = OzDnode::decode(&bytes, ByteOrder::Little).unwrap();
            assert_eq!(oz.object_type, 20);
            assert_eq!(oz.nlevels, levels);
            assert_eq!(oz.indblkshift, 17);
            assert_eq!(oz.data_block_size(), 16384);
            assert_eq!(oz.maxblkid, 77);
            assert_eq!(oz.used_bytes(), 123 * 512);
            assert_eq!(oz.flags, DNODE_FLAG_USED_BYTES);
            assert_eq!(oz.bonustype, 17);
            assert_eq!(oz.bonus, dn.bonus);
            assert_eq!(oz.extra_slots, 0);
            assert_eq!(oz.spill, None);
            assert_eq!(oz.blkptrs.len(), nblkptr);
            for (raw, ours) in oz.blkptrs.iter().zip(&dn.blkptr) {
                assert_eq!(&BlockPointer::decode(raw).unwrap(), ours);
            }
            // And the reader's bytes re-encode to the engine's, byte for byte.
            let mut from_reader = [0u8; DNODE_SIZE_BYTES];
            oz.encode(&mut from_reader).unwrap();
            assert_eq!(from_reader, bytes);
        }
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
        let mut large = good;
        large[12] = 1;
        assert!(
            DnodePhys::decode(&large).is_err(),
            "large dnodes are refused"
        );
        let mut deep = good;
        deep[2] = LEVELS_MAX + 1;
        assert!(DnodePhys::decode(&deep).is_err());
        let mut bonus = good;
        bonus[10] = 200;
        assert!(DnodePhys::decode(&bonus).is_err(), "bonus past the slot");
        assert!(DnodePhys::decode(&good[..100]).is_err());
    }
}
