//! Block pointers: the 128-byte record through which every block is found, in OpenZFS's
//! layout (`blkptr_t`, drawn in `spa.h`). A parent holds its children's block pointers, and
//! each carries the checksum of the child's physical bytes, so the pool is a Merkle tree
//! rooted in the uberblock: a block that verifies was written by us, for this place in the
//! tree.
//!
//! Sixteen little-endian u64 words (Zetta writes little-endian, so the byte-order bit is 1):
//!
//! ```text
//! word  0  dva[0] w0   asize >> 9 (bits 0-23) | grid (24-31, 0) | vdev (32-55)
//!       1  dva[0] w1   offset >> 9 (bits 0-62) | gang (63, 0)
//!     2-3  dva[1]      4-5 dva[2] (same layout; an all-zero DVA is unused)
//!       6  prop        lsize/512 - 1 (0-15) | psize/512 - 1 (16-31) | compression (32-38)
//!                      | embedded (39, 0) | checksum (40-47) | object type (48-55)
//!                      | level (56-60) | encrypted (61, 0) | dedup (62, 0) | byte order (63, 1)
//!     7-8  pad         zero
//!       9  phys birth  0 (= the logical birth)
//!      10  birth txg   txg in which the block was written (0 = hole)
//!      11  fill        non-hole level-0 blocks beneath (dnodes in use for the meta-dnode)
//!   12-15  checksum    of the psize physical bytes (OpenZFS's words, `zcommon::checksum`)
//! ```
//! Compression, checksum and object type hold OpenZFS's ids (`enum zio_compress`,
//! `enum zio_checksum`, `dmu_object_type_t`).
//!
//! Holes (`BP_IS_HOLE`: DVA 0 empty, not embedded) are written as OpenZFS writes them with
//! hole_birth active: all zero where no block ever was; a block freed or rewritten as zeros
//! leaves `hole_born` (word 6: lsize, type, level, no byte-order bit; word 10: the txg), so
//! traversals that prune by birth (incremental send) see when it appeared. Embedded
//! pointers (`BP_IS_EMBEDDED`, etype DATA) carry up to 112 compressed bytes in every word
//! but 6 and 10 (`EmbeddedPayload`), with `BPE_*` sizes in bytes; they have no DVA, fill 1,
//! psize 0 and no checksum (the parent's covers them):
//!
//! ```text
//! embedded word 6  lsize - 1 (0-24) | payload - 1 (25-31) | compression (32-38)
//!                  | embedded (39, 1) | etype (40-47, 0) | type (48-55) | level (56-60)
//!                  | byte order (63, 1)        word 10: birth txg
//! ```
//!
//! Invariants checked on decode: the byte-order bit says little-endian (holes aside); no
//! gang, encrypted or dedup bit; known checksum and compression ids; level <= LEVEL_MAX;
//! at least one DVA unless a hole or embedded; an embedded pointer is etype DATA with at
//! most 112 payload bytes; sizes within the block size limit.

use crate::types::{Txg, BLOCK_SIZE_MAX_BYTES};
use std::fmt;
use zetta_zcommon::checksum::Checksum256;

pub const BLKPTR_SIZE_BYTES: usize = 128;
pub const DVA_COUNT_MAX: usize = 3;
/// Deepest indirect level (a dnode has at most `dmu::dnode::LEVELS_MAX` = 8 levels).
pub const LEVEL_MAX: u8 = 7;

/// `DVA_GET_ASIZE`'s 24 bits and `DVA_GET_OFFSET`'s 63 (both in 512-byte sectors).
const ASIZE_MASK: u64 = (1 << 24) - 1;
/// `DVA_GET_VDEV`'s 24 bits.
const VDEV_MASK: u64 = (1 << 24) - 1;
const OFFSET_MASK: u64 = (1 << 63) - 1;
const DVA_GANG_BIT: u64 = 1 << 63;
/// `BP_GET_BYTEORDER` = 1: the block's words are little-endian.
const PROP_BYTEORDER_LITTLE: u64 = 1 << 63;
/// `BP_IS_EMBEDDED`: the pointer carries its block's bytes (see `embedded`).
const PROP_EMBEDDED_BIT: u64 = 1 << 39;
/// The encrypted (61) and dedup (62) bits: nothing Zetta writes or reads yet.
const PROP_UNSUPPORTED_BITS: u64 = (1 << 61) | (1 << 62);
const ALGORITHM_ID_OFF: u8 = zetta_zcommon::compress::ALGORITHM_ID_OFF;
/// `ZIO_COMPRESS_EMPTY`, never in a block pointer.
const EMPTY_ID: u8 = 4;

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

/// `BPE_PAYLOAD_SIZE`: the most bytes an embedded pointer carries.
pub const EMBEDDED_PAYLOAD_MAX_BYTES: usize = 112;
/// The words of an embedded pointer that carry its payload, in payload order (all but the
/// prop word 6 and the logical birth word 10), each least significant byte first.
const PAYLOAD_WORDS: [usize; 14] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14, 15];

/// The bytes an embedded pointer (`BP_EMBEDDED_TYPE_DATA`) carries in place of DVAs: its
/// block compressed with the pointer's `compression`, `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EmbeddedPayload {
    pub len: u8,
    pub bytes: [u8; EMBEDDED_PAYLOAD_MAX_BYTES],
}

impl EmbeddedPayload {
    /// `None` when `bytes` does not fit (more than 112 bytes, or none).
    pub fn new(bytes: &[u8]) -> Option<EmbeddedPayload> {
        if bytes.is_empty() || bytes.len() > EMBEDDED_PAYLOAD_MAX_BYTES {
            return None;
        }
        let mut payload = EmbeddedPayload {
            len: bytes.len() as u8,
            bytes: [0; EMBEDDED_PAYLOAD_MAX_BYTES],
        };
        payload.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(payload)
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
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
    /// An embedded pointer's payload (then no DVA, `psize_bytes` 0, `fill` 1, no checksum:
    /// the parent's checksum covers the bytes).
    pub embedded: Option<EmbeddedPayload>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlkptrDecodeError(pub String);

impl fmt::Display for BlkptrDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt block pointer: {}", self.0)
    }
}

impl std::error::Error for BlkptrDecodeError {}

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
        embedded: None,
    };

    /// An embedded pointer (`BP_EMBEDDED_TYPE_DATA`, what `zio_write_compress` makes of a
    /// level-0 block that compresses to at most 112 bytes when embedded_data is active):
    /// `payload` is the block compressed with `compression` to `lsize_bytes`.
    pub fn embedded(
        payload: EmbeddedPayload,
        lsize_bytes: u32,
        compression: u8,
        object_type: u8,
        level: u8,
        txg: Txg,
    ) -> BlockPointer {
        BlockPointer {
            lsize_bytes,
            compression,
            object_type,
            level,
            birth_txg: txg,
            fill: 1,
            embedded: Some(payload),
            ..BlockPointer::HOLE
        }
    }

    /// `BP_IS_EMBEDDED`.
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// Whether both pointers name the same allocated space (OpenZFS `DVA_EQUAL` on every
    /// DVA): a block overwritten in place in a later sync pass (`zio::BlockSource::rewrite`).
    pub fn same_dvas(&self, other: &BlockPointer) -> bool {
        !self.is_hole() && !self.is_embedded() && self.dvas == other.dvas
    }

    /// A hole that remembers when it appeared (`hole_birth`): what OpenZFS's
    /// `free_blocks` and `zio_write_compress` leave in place of a block freed, or rewritten
    /// as zeros, in `txg`. It keeps the block's logical size, type and level.
    pub fn hole_born(txg: Txg, lsize_bytes: u32, object_type: u8, level: u8) -> BlockPointer {
        BlockPointer {
            lsize_bytes,
            object_type,
            level,
            birth_txg: txg,
            ..BlockPointer::HOLE
        }
    }

    /// `BP_IS_HOLE`: no first DVA (a hole may still carry a birth txg, see `hole_born`).
    pub fn is_hole(&self) -> bool {
        self.dvas[0].is_empty() && self.embedded.is_none()
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
        let mut words = [0u64; 16];
        if let Some(payload) = &self.embedded {
            // BPE_* fields: lsize - 1 and psize - 1 in bytes, etype DATA (0) where the
            // checksum id sits; the payload in every word but prop and logical birth.
            for (i, byte) in payload.as_slice().iter().enumerate() {
                words[PAYLOAD_WORDS[i / 8]] |= u64::from(*byte) << (8 * (i % 8));
            }
            words[6] = (u64::from(self.lsize_bytes).wrapping_sub(1) & ((1 << 25) - 1))
                | ((u64::from(payload.len).wrapping_sub(1) & 0x7f) << 25)
                | ((u64::from(self.compression) & 0x7f) << 32)
                | PROP_EMBEDDED_BIT
                | (u64::from(self.object_type) << 48)
                | ((u64::from(self.level) & 0x1f) << 56)
                | PROP_BYTEORDER_LITTLE;
            words[10] = self.birth_txg.0;
            for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
                chunk.copy_from_slice(&word.to_le_bytes());
            }
            return;
        }
        if self.is_hole() {
            // OpenZFS's hole: all zero, or with hole_birth lsize, type, level and the
            // logical birth (no byte-order bit, physical birth 0, fill 0).
            if self.birth_txg.0 == 0 {
                return;
            }
            words[6] = (u64::from(self.lsize_bytes >> 9).wrapping_sub(1) & 0xffff)
                | (u64::from(self.object_type) << 48)
                | ((u64::from(self.level) & 0x1f) << 56);
            words[10] = self.birth_txg.0;
            for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
                chunk.copy_from_slice(&word.to_le_bytes());
            }
            return;
        }
        for (i, dva) in self.dvas.iter().enumerate() {
            if dva.is_empty() {
                continue;
            }
            debug_assert!(
                dva.asize_bytes.is_multiple_of(512) && dva.offset_bytes.is_multiple_of(512)
            );
            words[2 * i] = (u64::from(dva.vdev) << 32) | ((dva.asize_bytes >> 9) & ASIZE_MASK);
            words[2 * i + 1] = (dva.offset_bytes >> 9) & OFFSET_MASK;
        }
        debug_assert!(self.lsize_bytes.is_multiple_of(512) && self.psize_bytes.is_multiple_of(512));
        words[6] = (u64::from(self.lsize_bytes >> 9).wrapping_sub(1) & 0xffff)
            | ((u64::from(self.psize_bytes >> 9).wrapping_sub(1) & 0xffff) << 16)
            | ((u64::from(self.compression) & 0x7f) << 32)
            | (u64::from(self.checksum_kind) << 40)
            | (u64::from(self.object_type) << 48)
            | ((u64::from(self.level) & 0x1f) << 56)
            | PROP_BYTEORDER_LITTLE;
        words[10] = self.birth_txg.0;
        words[11] = self.fill;
        words[12..16].copy_from_slice(&self.checksum);
        for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
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
        let word = |i: usize| le_u64(bytes, i * 8);
        let prop = word(6);
        if word(0) == 0 && word(1) == 0 && prop & PROP_EMBEDDED_BIT == 0 {
            return BlockPointer::decode_hole(prop, word(10));
        }
        if prop & PROP_BYTEORDER_LITTLE == 0 {
            return Err(BlkptrDecodeError("big-endian block pointer".to_string()));
        }
        if prop & PROP_EMBEDDED_BIT != 0 {
            return BlockPointer::decode_embedded(&word, prop);
        }
        if prop & PROP_UNSUPPORTED_BITS != 0 {
            return Err(BlkptrDecodeError(format!(
                "embedded, encrypted or dedup block pointer (prop {prop:#x})"
            )));
        }
        let mut bp = BlockPointer::HOLE;
        for i in 0..DVA_COUNT_MAX {
            let (w0, w1) = (word(2 * i), word(2 * i + 1));
            if w1 & DVA_GANG_BIT != 0 {
                return Err(BlkptrDecodeError(format!("DVA {i} is a gang block")));
            }
            if (w0 >> 24) & 0xff != 0 {
                return Err(BlkptrDecodeError(format!("DVA {i} has a grid")));
            }
            bp.dvas[i] = Dva {
                vdev: ((w0 >> 32) & VDEV_MASK) as u32,
                asize_bytes: (w0 & ASIZE_MASK) << 9,
                offset_bytes: (w1 & OFFSET_MASK) << 9,
            };
        }
        bp.lsize_bytes = (((prop & 0xffff) + 1) << 9) as u32;
        bp.psize_bytes = ((((prop >> 16) & 0xffff) + 1) << 9) as u32;
        bp.compression = ((prop >> 32) & 0x7f) as u8;
        bp.checksum_kind = ((prop >> 40) & 0xff) as u8;
        bp.object_type = ((prop >> 48) & 0xff) as u8;
        bp.level = ((prop >> 56) & 0x1f) as u8;
        if word(9) != 0 && word(9) != word(10) {
            return Err(BlkptrDecodeError(format!(
                "physical birth {} differs from the logical birth {}",
                word(9),
                word(10)
            )));
        }
        bp.birth_txg = Txg(word(10));
        if bp.birth_txg.0 == 0 {
            return Err(BlkptrDecodeError(
                "a non-zero pointer born in txg 0".to_string(),
            ));
        }
        bp.fill = word(11);
        for i in 0..4 {
            bp.checksum[i] = word(12 + i);
        }
        bp.validate()?;
        Ok(bp)
    }

    /// An embedded pointer: only etype DATA, never encrypted or dedup.
    fn decode_embedded(
        word: &dyn Fn(usize) -> u64,
        prop: u64,
    ) -> Result<BlockPointer, BlkptrDecodeError> {
        let etype = (prop >> 40) & 0xff;
        if etype != 0 {
            return Err(BlkptrDecodeError(format!(
                "embedded block pointer of type {etype}"
            )));
        }
        if prop & ((1 << 61) | (1 << 62)) != 0 {
            return Err(BlkptrDecodeError(format!(
                "encrypted or dedup embedded block pointer (prop {prop:#x})"
            )));
        }
        let psize = ((prop >> 25) & 0x7f) as usize + 1;
        if psize > EMBEDDED_PAYLOAD_MAX_BYTES {
            return Err(BlkptrDecodeError(format!(
                "embedded payload of {psize} bytes"
            )));
        }
        let mut bytes = [0u8; EMBEDDED_PAYLOAD_MAX_BYTES];
        for (i, byte) in bytes.iter_mut().enumerate().take(psize) {
            *byte = (word(PAYLOAD_WORDS[i / 8]) >> (8 * (i % 8))) as u8;
        }
        let payload = EmbeddedPayload {
            len: psize as u8,
            bytes,
        };
        let bp = BlockPointer::embedded(
            payload,
            ((prop & ((1 << 25) - 1)) + 1) as u32,
            ((prop >> 32) & 0x7f) as u8,
            ((prop >> 48) & 0xff) as u8,
            ((prop >> 56) & 0x1f) as u8,
            Txg(word(10)),
        );
        bp.validate()?;
        Ok(bp)
    }

    /// A hole (`BP_IS_HOLE`: DVA 0 empty, not embedded): with a birth txg (hole_birth), its
    /// lsize, type and level; without one, `HOLE` (older writers leave other words as they
    /// please, OpenZFS reads none of them).
    fn decode_hole(prop: u64, birth: u64) -> Result<BlockPointer, BlkptrDecodeError> {
        if birth == 0 {
            return Ok(BlockPointer::HOLE);
        }
        let bp = BlockPointer::hole_born(
            Txg(birth),
            (((prop & 0xffff) + 1) << 9) as u32,
            ((prop >> 48) & 0xff) as u8,
            ((prop >> 56) & 0x1f) as u8,
        );
        if u64::from(bp.lsize_bytes) > BLOCK_SIZE_MAX_BYTES {
            return Err(BlkptrDecodeError(format!(
                "hole of logical size {} out of range",
                bp.lsize_bytes
            )));
        }
        if bp.level > LEVEL_MAX {
            return Err(BlkptrDecodeError(format!(
                "hole at level {} too deep",
                bp.level
            )));
        }
        Ok(bp)
    }

    /// Checks the invariants a decoded pointer must satisfy before the pipeline uses it.
    pub fn validate(&self) -> Result<(), BlkptrDecodeError> {
        let fail = |what: String| Err(BlkptrDecodeError(what));
        if self.is_hole() {
            return Ok(());
        }
        if self.is_embedded() {
            if u64::from(self.lsize_bytes) > BLOCK_SIZE_MAX_BYTES || self.lsize_bytes == 0 {
                return fail(format!("embedded logical size {}", self.lsize_bytes));
            }
            let compression =
                zetta_zcommon::compress::openzfs::ZioCompress::from_id(u64::from(self.compression));
            if compression.is_none_or(|c| c.id() == EMPTY_ID) {
                return fail(format!("unknown compression id {}", self.compression));
            }
            if self.level > LEVEL_MAX || self.birth_txg.0 == 0 {
                return fail("embedded pointer at a bad level or born in txg 0".to_string());
            }
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
        let compression =
            zetta_zcommon::compress::openzfs::ZioCompress::from_id(u64::from(self.compression));
        if !compression.is_some_and(|c| c.id() >= ALGORITHM_ID_OFF && c.id() != EMPTY_ID) {
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
        if let Some(payload) = &self.embedded {
            return write!(
                f,
                "EMBEDDED L{} type={} {:x}L/{:x}P comp={} birth={}",
                self.level,
                self.object_type,
                self.lsize_bytes,
                payload.len,
                self.compression,
                self.birth_txg
            );
        }
        if self.is_hole() {
            if self.birth_txg.0 == 0 {
                return write!(f, "<hole>");
            }
            return write!(
                f,
                "<hole> L{} type={} {:x}L birth={}",
                self.level, self.object_type, self.lsize_bytes, self.birth_txg
            );
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
        bp.compression = 15; // lz4
        bp.checksum_kind = 7; // fletcher4
        bp.object_type = 5;
        bp.level = 0;
        bp.birth_txg = Txg(9);
        bp.fill = 1;
        bp.checksum = [1, 2, 3, 4];
        bp
    }

    // Why: the block pointer is OpenZFS's blkptr_t. Pinned word by word, and read back by
    // the OpenZFS reader of part 1 (checked there against real pools' bytes), field by field.
    #[test]
    fn golden_bytes_are_openzfs_blkptr() {
        let bytes = sample().to_bytes();
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(word(0), (1 << 32) | 16); // vdev 1, asize 16 sectors
        assert_eq!(word(1), 0x40_0000 >> 9); // offset in sectors
        assert_eq!(
            word(6),
            (1 << 63) | (5 << 48) | (7 << 40) | (15 << 32) | (15 << 16) | 255
        );
        assert_eq!((word(9), word(10), word(11)), (0, 9, 1));
        assert_eq!([word(12), word(13), word(14), word(15)], [1, 2, 3, 4]);
        assert_eq!(BlockPointer::decode(&bytes).unwrap(), sample());

        use crate::byteorder::ByteOrder;
        use crate::zio::openzfs::blkptr::BlockPointer as OpenZfsBp;
        let theirs = OpenZfsBp::decode(ByteOrder::Little, &bytes, 0).unwrap();
        theirs.validate().unwrap();
        assert_eq!(theirs.dva(0).vdev, 1);
        assert_eq!(theirs.dva(0).asize_bytes(), 8192);
        assert_eq!(theirs.dva(0).offset_bytes(), Some(0x40_0000));
        assert_eq!(theirs.lsize_bytes(), 131072);
        assert_eq!(theirs.psize_bytes(), 8192);
        assert_eq!(theirs.compression(), 15);
        assert_eq!(theirs.checksum_kind(), 7);
        assert_eq!(theirs.object_type(), 5);
        assert_eq!(theirs.birth(), 9);
        assert_eq!(theirs.fill(), 1);
        assert_eq!(theirs.byte_order(), ByteOrder::Little);
        assert_eq!(theirs.ndvas(), 1);
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
        let mut gang = good;
        gang[15] |= 0x80;
        assert!(BlockPointer::decode(&gang).is_err());
        let mut big_endian = good;
        big_endian[55] &= 0x7f;
        assert!(BlockPointer::decode(&big_endian).is_err());
        assert!(BlockPointer::decode(&good[..50]).is_err());
        assert!(BlockPointer::decode(&[0u8; 128]).unwrap().is_hole());
    }
}
