//! Replaying a log at import (OpenZFS `zil_replay`): the chain the committed header names
//! is read to its end, and each record of a txg that did not commit is handed, in order, to
//! the client's replay (the ZPL's `zfs_replay`), which makes its change again on the state
//! of the last committed txg. Records stay opaque here.

use super::chain::{self, BlockRef};
use super::ZilError;
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::Txg;

/// What a replay found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    pub blocks: usize,
    pub records: usize,
    /// Records skipped because their txg had already committed.
    pub skipped: usize,
    /// The record replay stopped at, and why (the rest of the log is not applied).
    pub error: Option<String>,
}

/// The client's replay of one stored record (OpenZFS's replay vector): the change made
/// again, or why it cannot be.
pub type ReplayRecord<'a> = dyn FnMut(&mut ObjectSet, &IoCtx<'_>, &[u8]) -> Result<(), String> + 'a;

/// A chain as OpenZFS's `zil_parse` walks it.
#[derive(Debug, Default)]
pub struct ChainWalk {
    /// Every block pointer visited, in chain order. The last one may name a block that was
    /// allocated but never written, or torn: its pointer is in the block before, so
    /// OpenZFS visits (and claims) it before it tries to read it.
    pub blocks: Vec<BlockRef>,
    /// How many of `blocks` were read and verified.
    pub blocks_read: usize,
    /// The records of the blocks read, in order and in stored form.
    pub records: Vec<Vec<u8>>,
    /// The highest block and record sequence numbers visited (`zl_parse_blk_seq`,
    /// `zl_parse_lr_seq`).
    pub max_blk_seq: u64,
    pub max_lr_seq: u64,
}

/// Walks the chain `header` names (`zil_parse`): each block pointer is handed to `visit`
/// first (false stops the walk there), then the block is read; the walk ends at the first
/// block that does not verify. A claimed header bounds the walk to what was claimed
/// (`zh_claim_blk_seq`, and `zh_claim_lr_seq` when `ZIL_CLAIM_LR_SEQ_VALID`): a block
/// or record past it was never claimed, so it is not the log's.
pub fn walk_chain(
    root: &crate::vdev::Vdev,
    header: &chain::ZilHeader,
    visit: &mut dyn FnMut(&BlockRef) -> bool,
) -> Result<ChainWalk, ZilError> {
    let claimed = header.claim_txg != 0;
    let claim_blk_seq = if claimed {
        header.claim_blk_seq
    } else {
        u64::MAX
    };
    let claim_lr_seq = if claimed && header.flags & chain::ZIL_CLAIM_LR_SEQ_VALID != 0 {
        header.claim_lr_seq
    } else {
        u64::MAX
    };
    let mut walk = ChainWalk::default();
    let mut at = BlockRef::from_blkptr(&header.log);
    while let Some(r) = at {
        // A chain's sequence numbers only grow (`zil_read_log_block` checks the next
        // pointer's); a loop in damaged bytes ends here.
        if r.seq() > claim_blk_seq || (!walk.blocks.is_empty() && r.seq() <= walk.max_blk_seq) {
            break;
        }
        if !visit(&r) {
            break;
        }
        walk.blocks.push(r);
        walk.max_blk_seq = r.seq();
        if walk.max_lr_seq == claim_lr_seq && walk.max_blk_seq == claim_blk_seq {
            break;
        }
        let Some(block) = chain::read_block(root, &r)? else {
            break;
        };
        walk.blocks_read += 1;
        for record in block.records {
            let seq = record_seq(&record);
            if seq > claim_lr_seq {
                return Ok(walk);
            }
            walk.max_lr_seq = walk.max_lr_seq.max(seq);
            walk.records.push(record);
        }
        // `decode_block` keeps a next pointer only if it continues this chain.
        at = block.next;
    }
    Ok(walk)
}

/// A stored record's `lrc_seq` (its header was checked when its block was decoded).
fn record_seq(record: &[u8]) -> u64 {
    record
        .get(super::LRC_SEQ..super::LRC_SEQ + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Replays the log of `os` (a head dataset just imported; `last_synced` is the committed
/// txg) through `apply`, which makes one stored record's change again or says why it
/// cannot. The caller commits the txg afterwards, which retires the chain.
pub fn replay(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    last_synced: Txg,
    apply: &mut ReplayRecord<'_>,
) -> Result<ReplayReport, ZilError> {
    let mut report = ReplayReport::default();
    let header = chain::ZilHeader::decode(&os.zil_header, crate::byteorder::ByteOrder::Little);
    if BlockRef::from_blkptr(&header.log).is_none() {
        return Ok(report);
    }
    let walk = walk_chain(ctx.root, &header, &mut |_| true)?;
    report.blocks = walk.blocks_read;
    // A claimed chain is retired at the next commit whatever it holds (its claimed blocks
    // are the log's to free, and the claim must not outlive them); so is one with records,
    // even if replay stops early.
    if walk.records.is_empty() && header.claim_txg == 0 {
        return Ok(report);
    }
    os.zil.mark_chain_written();
    // Records of a txg that committed are already in the pool (`zil_replay_log_record`:
    // `lrc_txg < claim_txg`); an unclaimed chain (never, since import claims) would go by
    // the last committed txg.
    let committed = |txg: Txg| {
        if header.claim_txg != 0 {
            txg.0 < header.claim_txg
        } else {
            txg <= last_synced
        }
    };
    for (index, record) in walk.records.iter().enumerate() {
        let (txg, _, _) = super::record_header(record)?;
        if committed(txg) {
            report.skipped += 1;
            continue;
        }
        if let Err(why) = apply(os, ctx, record) {
            report.error = Some(format!("record {index} {why}"));
            break;
        }
        report.records += 1;
    }
    Ok(report)
}
