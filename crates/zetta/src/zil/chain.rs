//! Log blocks and the chain they form, as OpenZFS writes them (`zil_header_t`,
//! `zil_chain_t` and `zio_alloc_zil` in `include/sys/zil.h`, `include/sys/zil_impl.h`,
//! `module/zfs/zil.c`, `module/zfs/zio.c`).
//!
//! Theory. A dataset's log is a chain of blocks, each written once and never rewritten.
//! Each block names the next one before that one exists: its address is allocated when the
//! block before it is written, and the object set's ZIL header (`zil_header_t`, in the
//! objset block, written with every txg that changes it) names the first. Every pointer of
//! a chain carries, in place of a checksum, the chain's *verifier* (`blk_cksum`):
//! `zc_word[ZIL_ZC_GUID_0, ZIL_ZC_GUID_1]` two random words chosen when the chain starts,
//! `zc_word[ZIL_ZC_OBJSET]` the dataset's object number, `zc_word[ZIL_ZC_SEQ]` the block's
//! sequence number (1 for the head, +1 per block). A block is sealed with the fletcher-4
//! checksum of its used part computed with the verifier in its `zc_eck` slot
//! (`ZIO_CHECKSUM_ZILOG2`, `zio_checksum_error_impl`), so stale bytes of an older chain at a
//! reused address never verify, and the chain ends at the first block that does not.
//!
//! ```text
//! zil_header_t (192 bytes at objset_phys_t +512):
//!   0 zh_claim_txg u64 | 8 zh_replay_seq u64 | 16 zh_log blkptr_t (128) |
//!   144 zh_claim_blk_seq u64 | 152 zh_flags u64 | 160 zh_claim_lr_seq u64 | 168 zh_pad[3]
//!
//! log block (lsize = psize = its allocated size, a multiple of 4 KiB):
//!   0 zc_pad u64 (0) | 8 zc_next_blk blkptr_t (128) | 136 zc_nused u64 (bytes used,
//!   this header included) | 144 zc_eck: zec_magic u64 0x0210da7ab10c7a11 |
//!   152 zec_cksum[4] (fletcher-4 of [0, roundup(nused, 4 KiB)) with the verifier in place) |
//!   184 lr_t records ... nused | zeros to psize
//!
//! log block pointer: one DVA, lsize = psize, compression off (2), checksum zilog2 (9),
//!   type DMU_OT_INTENT_LOG (9), level 0, little-endian, logical birth = the txg it was
//!   allocated in, physical birth 0, fill 0, blk_cksum = the verifier.
//! ```
//!
//! OpenZFS writes only `roundup(nused, 4 KiB)` of a block (`zio_shrink`); Zetta writes the
//! whole block, zeros past `nused` (the same bytes where it matters, and a raidz block is
//! never shrunk by OpenZFS either). Older logs (`ZIO_CHECKSUM_ZILOG`, pool versions before
//! slim ZIL) carry the chain header in the last 184 bytes instead; they are read, never
//! written.
//!
//! Invariants: decoding never panics on any bytes; a block is accepted only if its embedded
//! checksum verifies against the pointer's verifier and `zc_nused` lies inside it.

use super::ZilError;
use crate::byteorder::ByteOrder;
use crate::types::{round_up_shift, Txg};
use crate::vdev::{ReadMode, Vdev};
use crate::zio::openzfs::blkptr::{BlockPointer, BlockProps, Dva, SECTOR_SHIFT};
use zetta_zcommon::checksum::openzfs::{seal_embedded, verify_embedded, BlockOrder, ZioChecksum};

pub const BLOCK_PTR_SIZE_BYTES: usize = 128;
/// `sizeof (zil_chain_t)`: pad 8, next block pointer 128, nused 8, `zio_eck_t` 40.
pub const BLOCK_HEADER_SIZE_BYTES: usize = 184;
/// `sizeof (zil_header_t)`.
pub const HEADER_SIZE_BYTES: usize = 192;
/// `ZIL_MIN_BLKSZ`: log blocks are whole multiples of it, and checksummed up to `nused`
/// rounded up to it.
pub const ZIL_MIN_BLKSZ: u64 = 4096;

const ZH_CLAIM_TXG: usize = 0;
const ZH_REPLAY_SEQ: usize = 8;
const ZH_LOG: usize = 16;
const ZH_CLAIM_BLK_SEQ: usize = 144;
const ZH_FLAGS: usize = 152;
const ZH_CLAIM_LR_SEQ: usize = 160;
const ZC_NEXT_BLK: usize = 8;
const ZC_NUSED: usize = 136;

/// `zc_word` indices of a log block's verifier (`ZIL_ZC_*`).
pub const ZIL_ZC_GUID_0: usize = 0;
pub const ZIL_ZC_GUID_1: usize = 1;
pub const ZIL_ZC_OBJSET: usize = 2;
pub const ZIL_ZC_SEQ: usize = 3;

/// `DMU_OT_INTENT_LOG`.
pub const DMU_OT_INTENT_LOG: u8 = 9;
/// `ZIO_COMPRESS_OFF`.
const ZIO_COMPRESS_OFF: u8 = 2;

/// `zh_flags` bits: `ZIL_REPLAY_NEEDED` (a log was claimed and waits for replay) and
/// `ZIL_CLAIM_LR_SEQ_VALID` (`zh_claim_lr_seq` was recorded).
pub const ZIL_REPLAY_NEEDED: u64 = 0x1;
pub const ZIL_CLAIM_LR_SEQ_VALID: u64 = 0x2;

/// Where a log block is (or will be) and what it must say about itself to be the one: the
/// fields of its `blkptr_t` that Zetta uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// Top-level vdev index.
    pub vdev: u32,
    pub offset_bytes: u64,
    /// Logical and physical size (equal: log blocks are not compressed).
    pub psize_bytes: u64,
    /// Allocated size on `vdev` (the DVA's asize).
    pub asize_bytes: u64,
    /// The txg its space was allocated in.
    pub birth: Txg,
    /// `blk_cksum`: guid 0, guid 1, objset, seq (`ZIL_ZC_*`).
    pub verifier: [u64; 4],
    /// `ZIO_CHECKSUM_ZILOG2` (chain header first) or the older `ZIO_CHECKSUM_ZILOG`
    /// (chain header last, read only).
    pub slim: bool,
}

impl BlockRef {
    pub fn seq(&self) -> u64 {
        self.verifier[ZIL_ZC_SEQ]
    }

    /// The verifier the block after this one carries (`zil_lwb_write_issue`).
    pub fn next_verifier(&self) -> [u64; 4] {
        let mut next = self.verifier;
        next[ZIL_ZC_SEQ] = next[ZIL_ZC_SEQ].wrapping_add(1);
        next
    }

    /// The block pointer `zio_alloc_zil` builds for this block.
    pub fn to_blkptr(&self) -> BlockPointer {
        debug_assert!(self.psize_bytes.is_multiple_of(512) && self.asize_bytes > 0);
        let dva = Dva {
            vdev: self.vdev,
            grid: 0,
            asize_sectors: (self.asize_bytes >> SECTOR_SHIFT) as u32,
            offset_sectors: self.offset_bytes >> SECTOR_SHIFT,
            gang: false,
        };
        let props = BlockProps {
            lsize_bytes: self.psize_bytes,
            psize_bytes: self.psize_bytes,
            compression: ZIO_COMPRESS_OFF,
            checksum: if self.slim {
                ZioChecksum::Zilog2.id()
            } else {
                ZioChecksum::Zilog.id()
            },
            object_type: DMU_OT_INTENT_LOG,
            level: 0,
            crypt: false,
            dedup: false,
            byte_order: ByteOrder::Little,
        };
        // The sizes come from our own allocation (<= 128 KiB): `new` cannot refuse them.
        BlockPointer::new(
            [dva, Dva::default(), Dva::default()],
            props,
            self.birth.0,
            self.birth.0,
            0,
            self.verifier,
        )
        .unwrap_or(BlockPointer::HOLE)
    }

    /// The log block a pointer names; `None` for a hole or anything that is not a readable
    /// log block pointer (the end of a chain).
    pub fn from_blkptr(bp: &BlockPointer) -> Option<BlockRef> {
        if bp.is_hole() || bp.is_embedded() || bp.is_gang() || bp.uses_crypt() {
            return None;
        }
        let slim = match bp.checksum_kind() {
            k if k == ZioChecksum::Zilog2.id() => true,
            k if k == ZioChecksum::Zilog.id() => false,
            _ => return None,
        };
        let dva = bp.dva(0);
        let psize_bytes = bp.psize_bytes();
        if !dva.is_valid() || psize_bytes == 0 || psize_bytes != bp.lsize_bytes() {
            return None;
        }
        Some(BlockRef {
            vdev: dva.vdev,
            offset_bytes: dva.offset_bytes()?,
            psize_bytes,
            asize_bytes: dva.asize_bytes(),
            birth: Txg(bp.logical_birth()),
            verifier: bp.checksum(),
            slim,
        })
    }
}

/// `zil_header_t`: the object set's record of its log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZilHeader {
    /// The txg a log was claimed in at import (0: not claimed).
    pub claim_txg: u64,
    /// The highest record sequence number replayed.
    pub replay_seq: u64,
    /// The chain's first block (`zh_log`), all zero for no log.
    pub log: BlockPointer,
    pub claim_blk_seq: u64,
    pub flags: u64,
    pub claim_lr_seq: u64,
}

impl ZilHeader {
    pub fn encode(&self) -> [u8; HEADER_SIZE_BYTES] {
        let mut out = [0u8; HEADER_SIZE_BYTES];
        let mut put = |at: usize, v: u64| out[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put(ZH_CLAIM_TXG, self.claim_txg);
        put(ZH_REPLAY_SEQ, self.replay_seq);
        put(ZH_CLAIM_BLK_SEQ, self.claim_blk_seq);
        put(ZH_FLAGS, self.flags);
        put(ZH_CLAIM_LR_SEQ, self.claim_lr_seq);
        out[ZH_LOG..ZH_LOG + BLOCK_PTR_SIZE_BYTES]
            .copy_from_slice(&self.log.encode(ByteOrder::Little));
        out
    }

    /// Decodes a header from an object set written in `order` (any bytes decode).
    pub fn decode(bytes: &[u8; HEADER_SIZE_BYTES], order: ByteOrder) -> ZilHeader {
        let word = |at: usize| order.u64_at(bytes, at).unwrap_or(0);
        ZilHeader {
            claim_txg: word(ZH_CLAIM_TXG),
            replay_seq: word(ZH_REPLAY_SEQ),
            log: BlockPointer::decode(order, bytes, ZH_LOG).unwrap_or(BlockPointer::HOLE),
            claim_blk_seq: word(ZH_CLAIM_BLK_SEQ),
            flags: word(ZH_FLAGS),
            claim_lr_seq: word(ZH_CLAIM_LR_SEQ),
        }
    }
}

/// The ZIL header of an object set: the chain's first block, if the dataset has a log.
pub fn encode_header(head: Option<&BlockRef>) -> [u8; HEADER_SIZE_BYTES] {
    ZilHeader {
        log: head.map_or(BlockPointer::HOLE, BlockRef::to_blkptr),
        ..ZilHeader::default()
    }
    .encode()
}

/// The head named by a ZIL header; `None` for an empty header (or one whose `zh_log` is
/// no log block pointer).
pub fn decode_header(header: &[u8; HEADER_SIZE_BYTES]) -> Option<BlockRef> {
    BlockRef::from_blkptr(&ZilHeader::decode(header, ByteOrder::Little).log)
}

/// Builds the stored form of block `this` (`zil_lwb_write_issue`): chain header, records,
/// zeros to `psize`, sealed with its verifier. `records` must fit (`BLOCK_HEADER_SIZE_BYTES`
/// plus their lengths at most `psize`), which the caller's packing guarantees.
pub fn encode_block(this: &BlockRef, records: &[Vec<u8>], next: &BlockRef) -> Vec<u8> {
    debug_assert!(this.slim, "only slim (ZILOG2) log blocks are written");
    debug_assert!(this.psize_bytes.is_multiple_of(ZIL_MIN_BLKSZ));
    let mut out = vec![0u8; this.psize_bytes as usize];
    let mut used = BLOCK_HEADER_SIZE_BYTES;
    for r in records {
        out[used..used + r.len()].copy_from_slice(r);
        used += r.len();
    }
    out[ZC_NEXT_BLK..ZC_NEXT_BLK + BLOCK_PTR_SIZE_BYTES]
        .copy_from_slice(&next.to_blkptr().encode(ByteOrder::Little));
    out[ZC_NUSED..ZC_NUSED + 8].copy_from_slice(&(used as u64).to_le_bytes());
    let sealed = seal_embedded(
        ZioChecksum::Zilog2,
        &mut out,
        BlockOrder::Little,
        this.verifier,
    );
    debug_assert!(sealed.is_ok(), "sealing log block {this:?}: {sealed:?}");
    out
}

/// A verified block: its records (in stored form) and the next block's pointer.
pub struct DecodedBlock {
    pub records: Vec<Vec<u8>>,
    pub next: Option<BlockRef>,
}

/// Whether `bytes` are block `expected` of its chain, intact (`zio_checksum_error_impl`
/// with the pointer's verifier).
pub fn verifies(bytes: &[u8], expected: &BlockRef) -> bool {
    let kind = if expected.slim {
        ZioChecksum::Zilog2
    } else {
        ZioChecksum::Zilog
    };
    verify_embedded(kind, bytes, expected.verifier).is_ok()
}

/// Parses block `this` that `verifies` accepted (`zil_read_log_block`): the records lie in
/// `[184, nused)` (slim) or `[0, nused)` (the older layout, chain header last). The next
/// pointer counts only if it continues this chain (same guids and objset, seq + 1).
pub fn decode_block(this: &BlockRef, bytes: &[u8]) -> Result<DecodedBlock, ZilError> {
    let order = if bytes.get(ZIL_CHAIN_ECK..ZIL_CHAIN_ECK + 8) == Some(&MAGIC_BE[..]) {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let (chain_at, start) = if this.slim {
        (0, BLOCK_HEADER_SIZE_BYTES)
    } else {
        (bytes.len().saturating_sub(BLOCK_HEADER_SIZE_BYTES), 0)
    };
    let nused = order
        .u64_at(bytes, chain_at + ZC_NUSED)
        .map_err(|e| ZilError::Corrupt(e.to_string()))?;
    let end_max = if this.slim { bytes.len() } else { chain_at };
    if nused > end_max as u64 || (nused as usize) < start {
        return Err(ZilError::Corrupt(format!(
            "log block of {} bytes says {nused} bytes are used",
            bytes.len()
        )));
    }
    let nused = nused as usize;
    let next = BlockPointer::decode(order, bytes, chain_at + ZC_NEXT_BLK)
        .ok()
        .and_then(|bp| BlockRef::from_blkptr(&bp))
        .filter(|n| n.verifier == this.next_verifier());
    let mut records = Vec::new();
    let mut at = start;
    while at < nused {
        let (_, _, len) = super::record_header(&bytes[at..nused])?;
        records.push(bytes[at..at + len].to_vec());
        at += len;
    }
    Ok(DecodedBlock { records, next })
}

/// Where a slim block's `zec_magic` sits (the start of `zc_eck`).
const ZIL_CHAIN_ECK: usize = 144;
const MAGIC_BE: [u8; 8] = zetta_zcommon::checksum::openzfs::ZEC_MAGIC.to_be_bytes();

/// Reads block `r` if it is there and intact: `None` is the chain's end (never written, torn,
/// or another chain's). A damaged copy is repaired from a good one like any block; a block
/// that is simply absent counts no checksum errors (OpenZFS reads log blocks speculatively).
pub fn read_block(root: &Vdev, r: &BlockRef) -> Result<Option<DecodedBlock>, ZilError> {
    let Some(vdev) = root.children.get(r.vdev as usize) else {
        return Ok(None);
    };
    if r.psize_bytes == 0
        || r.psize_bytes > super::BLOCK_SIZE_MAX_BYTES as u64
        || round_up_shift(r.psize_bytes, vdev.ashift) != r.psize_bytes
        || r.offset_bytes.saturating_add(r.psize_bytes) > vdev.asize_bytes
    {
        return Ok(None);
    }
    let expected = *r;
    let verify = move |bytes: &[u8]| verifies(bytes, &expected);
    match vdev.read_block(
        r.offset_bytes,
        r.psize_bytes,
        r.birth,
        &verify,
        ReadMode::Speculative,
    ) {
        Some(outcome) => decode_block(r, &outcome.data).map(Some),
        None => Ok(None),
    }
}
