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

/// Every record of the chain that `head` starts, in order and in stored form; the number of
/// blocks read.
pub fn read_chain(
    root: &crate::vdev::Vdev,
    head: &BlockRef,
) -> Result<(Vec<Vec<u8>>, usize), ZilError> {
    let mut records = Vec::new();
    let mut blocks = 0;
    let mut at = Some(*head);
    while let Some(r) = at {
        let Some(block) = chain::read_block(root, &r)? else {
            break;
        };
        blocks += 1;
        records.extend(block.records);
        // `decode_block` keeps a next pointer only if it continues this chain.
        at = block.next;
    }
    Ok((records, blocks))
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
    let Some(head) = chain::decode_header(&os.zil_header) else {
        return Ok(report);
    };
    let (records, blocks) = read_chain(ctx.root, &head)?;
    report.blocks = blocks;
    if records.is_empty() {
        return Ok(report);
    }
    // The chain is retired at the next commit even if replay stops early.
    os.zil.mark_chain_written();
    for (index, record) in records.iter().enumerate() {
        let (txg, _, _) = super::record_header(record)?;
        if txg <= last_synced {
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
