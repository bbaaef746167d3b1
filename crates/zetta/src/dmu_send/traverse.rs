//! Walking one object's block tree for a send (OpenZFS `dmu_traverse.c`, `traverse_visitbp`):
//! level-0 blocks in block-id order, from a starting block id, pruned by birth txg.
//!
//! A subtree whose pointer was born at or before `from_txg` is skipped without being read:
//! nothing under it changed since the incremental source, which is what makes an
//! incremental send cost what changed rather than what exists. A hole left by a free or a
//! rewrite with zeros carries the txg it appeared in (hole_birth, `BlockPointer::hole_born`):
//! one born at or before `from_txg` is skipped like a block, one born later is reported.
//! A hole with no birth (never written, or written by a pool without hole_birth) cannot
//! say when it appeared, so every such hole met under a pointer that *was* rewritten after
//! `from_txg` (and among the top pointers of the dnode being visited) is reported, as
//! OpenZFS does by default (`send_holes_without_birth_time`): the receiver frees those
//! ranges, a no-op where they were holes already. Each indirect block on the current path
//! is held in memory, so the walk needs at most `nlevels` blocks.

use super::error::SendError;
use crate::dmu::dnode::DnodePhys;
use crate::dmu::IoCtx;
use crate::spa::SpaError;
use crate::types::Txg;
use crate::zio::blkptr::{BlockPointer, BLKPTR_SIZE_BYTES};
use crate::zio::Bookmark;

/// What the walk found, in increasing block-id order.
pub enum Event<'a> {
    /// A level-0 block born after `from_txg`.
    Block { blkid: u64, bp: &'a BlockPointer },
    /// `count` level-0 blocks from `first_blkid` that are holes now (see the module header).
    Hole { first_blkid: u64, count: u64 },
}

/// Whether the visitor wants the walk to go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// One walk's fixed parameters.
pub struct Walk<'c, 'a> {
    pub ctx: &'c IoCtx<'a>,
    pub objset: u64,
    pub object: u64,
    pub from_txg: Txg,
    pub start_blkid: u64,
    pub report_holes: bool,
}

impl Walk<'_, '_> {
    /// Visits the level-0 blocks of `dnode` at or after `start_blkid`.
    pub fn run(
        &self,
        dnode: &DnodePhys,
        visit: &mut dyn FnMut(Event<'_>) -> Result<Flow, SendError>,
    ) -> Result<Flow, SendError> {
        let per = dnode.entries_per_indirect();
        let top = dnode.nlevels.saturating_sub(1);
        let span = per.saturating_pow(u32::from(top));
        for (index, bp) in dnode.blkptr.iter().enumerate() {
            let first = (index as u64).saturating_mul(span);
            if self.visit_bp(bp, top, first, span, per, visit)? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }

    fn visit_bp(
        &self,
        bp: &BlockPointer,
        level: u8,
        first: u64,
        span: u64,
        per: u64,
        visit: &mut dyn FnMut(Event<'_>) -> Result<Flow, SendError>,
    ) -> Result<Flow, SendError> {
        let end = first.saturating_add(span);
        if end <= self.start_blkid {
            return Ok(Flow::Continue);
        }
        if bp.is_hole() {
            // A hole born at or before `from_txg` was a hole in the source snapshot too
            // (OpenZFS `traverse_visitbp`); one born later, or without a birth, is sent.
            let older = bp.birth_txg.0 != 0 && bp.birth_txg <= self.from_txg;
            if !self.report_holes || older {
                return Ok(Flow::Continue);
            }
            let from = first.max(self.start_blkid);
            return visit(Event::Hole {
                first_blkid: from,
                count: end - from,
            });
        }
        if bp.birth_txg <= self.from_txg {
            return Ok(Flow::Continue);
        }
        if level == 0 {
            if bp.level != 0 {
                return Err(corrupt(self.object, "level-0 pointer to an indirect block"));
            }
            return visit(Event::Block { blkid: first, bp });
        }
        let bookmark = Bookmark {
            objset: self.objset,
            object: self.object,
            level,
            blkid: first / span.max(1),
        };
        let block = self
            .ctx
            .zio
            .read_block(self.ctx.root, bp, Some(bookmark))
            .map_err(|e| SendError::Pool(SpaError::from(e)))?;
        let child_span = span / per.max(1);
        if child_span == 0 {
            return Err(corrupt(self.object, "indirect block below level 0"));
        }
        for (index, chunk) in block.chunks_exact(BLKPTR_SIZE_BYTES).enumerate() {
            let child_first = first.saturating_add((index as u64).saturating_mul(child_span));
            if child_first >= end {
                break;
            }
            let child = BlockPointer::decode(chunk).map_err(|e| corrupt(self.object, &e.0))?;
            if self.visit_bp(&child, level - 1, child_first, child_span, per, visit)? == Flow::Stop
            {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }
}

fn corrupt(object: u64, why: &str) -> SendError {
    SendError::Pool(SpaError::Corrupt(format!("object {object}: {why}")))
}
