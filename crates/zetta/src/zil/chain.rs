//! Log blocks and the chain they form (OpenZFS `zil_chain_t`, `lwb`, `zil_header_t`).
//!
//! A dataset's log is a chain of blocks, each written once and never rewritten. Each block
//! names the next one before that one exists: its address is allocated when the block
//! before it is written, and the object set's ZIL header (in the objset block, written with
//! every txg that changes it) names the first. The chain ends at the first block that does
//! not verify: a block carries the chain's random guid and its sequence number inside its
//! checksummed header, so stale bytes from an older chain at a reused address never pass.
//!
//! ```text
//! block pointer (48 bytes): | vdev u32 | flags u32 (1 = set) | offset u64 | psize u64 |
//!                           | birth txg u64 | chain guid u64 | seq u64 |
//! ZIL header (192 bytes at objset +536): | magic u64 "ZILHDR01" | head pointer 48 | 0 ... |
//! log block (psize bytes, a multiple of the vdev sector):
//!   | magic u64 "ZILBLK01" | chain guid u64 | seq u64 | txg u64 | used u32 | records u32 |
//!   | next pointer 48 @40 | fletcher4 of [0, used) with this field zeroed, 32 @88 |
//!   | reserved to 128 | records @128 ... used | zeros to psize |
//! ```

use super::ZilError;
use crate::types::{round_up_shift, Txg};
use crate::vdev::{ReadMode, Vdev};
use zetta_zcommon::checksum::fletcher4;

pub const BLOCK_PTR_SIZE_BYTES: usize = 48;
pub const BLOCK_HEADER_SIZE_BYTES: usize = 128;
pub const HEADER_SIZE_BYTES: usize = 192;
const HEADER_MAGIC: u64 = u64::from_le_bytes(*b"ZILHDR01");
const BLOCK_MAGIC: u64 = u64::from_le_bytes(*b"ZILBLK01");
const CHECKSUM_AT: usize = 88;

/// Where a log block is (or will be) and what it must say about itself to be the one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// Top-level vdev index.
    pub vdev: u32,
    pub offset_bytes: u64,
    /// Bytes written (a multiple of the vdev's sector size).
    pub psize_bytes: u64,
    /// The txg its space was allocated in.
    pub birth: Txg,
    pub guid: u64,
    pub seq: u64,
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

impl BlockRef {
    pub fn encode(this: Option<&BlockRef>) -> [u8; BLOCK_PTR_SIZE_BYTES] {
        let mut out = [0u8; BLOCK_PTR_SIZE_BYTES];
        if let Some(r) = this {
            out[0..4].copy_from_slice(&r.vdev.to_le_bytes());
            out[4..8].copy_from_slice(&1u32.to_le_bytes());
            out[8..16].copy_from_slice(&r.offset_bytes.to_le_bytes());
            out[16..24].copy_from_slice(&r.psize_bytes.to_le_bytes());
            out[24..32].copy_from_slice(&r.birth.0.to_le_bytes());
            out[32..40].copy_from_slice(&r.guid.to_le_bytes());
            out[40..48].copy_from_slice(&r.seq.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<BlockRef> {
        if bytes.len() < BLOCK_PTR_SIZE_BYTES || bytes[4] & 1 == 0 {
            return None;
        }
        Some(BlockRef {
            vdev: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            offset_bytes: word(bytes, 8),
            psize_bytes: word(bytes, 16),
            birth: Txg(word(bytes, 24)),
            guid: word(bytes, 32),
            seq: word(bytes, 40),
        })
    }
}

/// The ZIL header of an object set: the chain's first block, if the dataset has a log.
pub fn encode_header(head: Option<&BlockRef>) -> [u8; HEADER_SIZE_BYTES] {
    let mut out = [0u8; HEADER_SIZE_BYTES];
    if head.is_some() {
        out[0..8].copy_from_slice(&HEADER_MAGIC.to_le_bytes());
        out[8..8 + BLOCK_PTR_SIZE_BYTES].copy_from_slice(&BlockRef::encode(head));
    }
    out
}

/// The head named by a ZIL header; `None` for an empty (all-zero or foreign) header.
pub fn decode_header(header: &[u8; HEADER_SIZE_BYTES]) -> Option<BlockRef> {
    if word(header, 0) != HEADER_MAGIC {
        return None;
    }
    BlockRef::decode(&header[8..8 + BLOCK_PTR_SIZE_BYTES])
}

/// Builds the stored form of block `this`: header, records, zero padding to `psize`.
pub fn encode_block(this: &BlockRef, txg: Txg, records: &[Vec<u8>], next: &BlockRef) -> Vec<u8> {
    let mut out = vec![0u8; BLOCK_HEADER_SIZE_BYTES];
    for r in records {
        out.extend_from_slice(r);
    }
    let used = out.len();
    out[0..8].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
    out[8..16].copy_from_slice(&this.guid.to_le_bytes());
    out[16..24].copy_from_slice(&this.seq.to_le_bytes());
    out[24..32].copy_from_slice(&txg.0.to_le_bytes());
    out[32..36].copy_from_slice(&(used as u32).to_le_bytes());
    out[36..40].copy_from_slice(&(records.len() as u32).to_le_bytes());
    out[40..40 + BLOCK_PTR_SIZE_BYTES].copy_from_slice(&BlockRef::encode(Some(next)));
    let sum = fletcher4(&out[..used]);
    for (i, w) in sum.iter().enumerate() {
        out[CHECKSUM_AT + i * 8..CHECKSUM_AT + i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    out.resize(this.psize_bytes as usize, 0);
    out
}

/// A verified block: its records (in stored form) and the next block's pointer.
pub struct DecodedBlock {
    pub records: Vec<Vec<u8>>,
    pub next: Option<BlockRef>,
}

/// Whether `bytes` are block `expected` of its chain, intact.
fn verifies(bytes: &[u8], expected: &BlockRef) -> bool {
    if bytes.len() < BLOCK_HEADER_SIZE_BYTES
        || word(bytes, 0) != BLOCK_MAGIC
        || word(bytes, 8) != expected.guid
        || word(bytes, 16) != expected.seq
    {
        return false;
    }
    let used = u32::from_le_bytes([bytes[32], bytes[33], bytes[34], bytes[35]]) as usize;
    if !(BLOCK_HEADER_SIZE_BYTES..=bytes.len()).contains(&used) {
        return false;
    }
    let mut stored = [0u64; 4];
    for (i, w) in stored.iter_mut().enumerate() {
        *w = word(bytes, CHECKSUM_AT + i * 8);
    }
    let mut copy = bytes[..used].to_vec();
    copy[CHECKSUM_AT..CHECKSUM_AT + 32].fill(0);
    fletcher4(&copy) == stored
}

/// Parses a block that `verifies` accepted.
fn decode_block(bytes: &[u8]) -> Result<DecodedBlock, ZilError> {
    let used = u32::from_le_bytes([bytes[32], bytes[33], bytes[34], bytes[35]]) as usize;
    let count = u32::from_le_bytes([bytes[36], bytes[37], bytes[38], bytes[39]]) as usize;
    let next = BlockRef::decode(&bytes[40..40 + BLOCK_PTR_SIZE_BYTES]);
    let mut records = Vec::with_capacity(count.min(4096));
    let mut at = BLOCK_HEADER_SIZE_BYTES;
    while at < used {
        let (_, _, len) = super::record_header(&bytes[at..used])?;
        records.push(bytes[at..at + len].to_vec());
        at += len;
    }
    if records.len() != count {
        return Err(ZilError::Corrupt(format!(
            "log block holds {} records, says {count}",
            records.len()
        )));
    }
    Ok(DecodedBlock { records, next })
}

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
        Some(outcome) => decode_block(&outcome.data).map(Some),
        None => Ok(None),
    }
}
