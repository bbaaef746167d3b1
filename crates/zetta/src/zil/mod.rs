//! The ZFS intent log (OpenZFS `zil.c`): what makes `fsync` cheap. Without it, making one change durable means committing the whole txg (every dirty
//! block of every dataset, the MOS, space maps, uberblocks); with it, `fsync` writes the
//! changes made since the last commit as log records into one or a few log blocks, flushes,
//! and returns. The txg commits later as usual; its uberblock makes the log obsolete.
//!
//! - In memory each object set keeps a `Zilog`: the records of the open txg (`itxs`), in the
//!   order the mount made the changes. Records are opaque here: their client (the ZPL's
//!   `zpl::zfs_log`, as OpenZFS's `zfs_log.c`) encodes them, and only the framing every
//!   record shares (OpenZFS's 32-byte `lr_t`: type, length, txg, and the sequence number
//!   the log gives each record as it writes it) is the log's. A write is logged by position
//!   only (`WriteItx`) and its bytes are copied from the object when the record is written
//!   (WR_NEED_COPY, through the client's `GetData`, OpenZFS's `zl_get_data`), so logging
//!   costs no memory copy of the data.
//! - `commit` writes every record not yet written into the chain (`chain`: OpenZFS's
//!   `zil_header_t`, `zil_chain_t` and ZILOG2 block pointers) and flushes the
//!   devices. The first commit of a dataset without a log commits the txg instead, and from
//!   then on every txg commit leaves a preallocated head block for the next chain in the
//!   objset's ZIL header (OpenZFS's `zil_create` waits for a txg the same way).
//! - `sync` (inside the txg commit, before the objset block is written): the records are now
//!   in the txg, so the chain is freed — deferred two txgs even though it was allocated in
//!   this very txg, since the last committed header still leads to it — and a new head
//!   takes its place in the header.
//! - At import, `claim` puts the chain in the space maps (below), then `replay` reads the
//!   chain the committed header names, stops at the first block that does not verify, and hands each record of a txg not yet committed to the
//!   client, which makes its change again on the committed state (`zpl::zfs_replay`); the
//!   next txg commit retires the chain. A power cut during replay replays again.
//!
//! Layering: `dmu` holds a `Zilog` per object set and `zil` uses `dmu`; `zil` knows
//! nothing of the ZPL (no dmu → zil → zpl cycle): the ZPL logs into it and replays from it.
//!
//! Claim at import (OpenZFS's `zil_claim`, `spa_ld_claim_log_blocks`): a chain's blocks
//! after its head were allocated in a txg that never committed, so after a crash no space
//! map holds them. Before anything allocates, import walks every live chain (`claim`) and
//! allocates each block born in its first txg or later exactly where it is, in that txg's
//! maps; the header records `zh_claim_txg`, `zh_claim_blk_seq`, `zh_claim_lr_seq` and the
//! flags, and that txg commits before replay starts. Replay then skips records of txgs
//! before the claim txg and reads no further than what was claimed; the commit after it
//! retires the chain, freeing every block it owns (the claimed ones included) and zeroing
//! the claim. A cut between the two commits leaves a claimed, unreplayed log as OpenZFS
//! leaves one (`zdb -i` prints it, `zdb -bcc` counts its blocks); the next import does not
//! claim it again. Zetta writes no WR_INDIRECT records, so no record's block is claimed.
//!
//! Object sets derived from a snapshot (a clone, a rollback, a receive) start with no log:
//! the snapshot's copy of the header names a chain its head owned (`forget`). Destroying a
//! head, or replacing its tree, frees its chain (`discard`).

pub mod chain;
mod pool;
pub mod replay;
#[cfg(test)]
mod tests;

use crate::dmu::{DmuError, IoCtx, ObjectSet};
use crate::types::{round_up_shift, Guid, Txg};
use chain::BlockRef;

pub use replay::ReplayReport;

/// Every record starts with OpenZFS's `lr_t` (`include/sys/zil.h`), four little-endian
/// words: `| lrc_txtype u64 | lrc_reclen u64 | lrc_txg u64 | lrc_seq u64 |`. `lrc_reclen`
/// counts the header, the body and its padding to 8 bytes; `lrc_seq` is given when the
/// record is written into the chain (OpenZFS's `zl_lr_seq`); the top bit of `lrc_txtype`
/// is `TX_CI` (a case-insensitive name), the rest the type.
pub const RECORD_HEADER_SIZE_BYTES: usize = 32;
/// `lrc_seq`'s place in `lr_t`.
const LRC_SEQ: usize = 24;
/// `TX_CI`: OR'd into `lrc_txtype` by a case-insensitive filesystem.
pub const TX_CI: u64 = 1 << 63;

pub const BLOCK_SIZE_MIN_BYTES: usize = chain::ZIL_MIN_BLKSZ as usize;
pub const BLOCK_SIZE_MAX_BYTES: usize = 128 << 10;
/// Consecutive writes to one object merge into one in-memory record up to this size.
const WRITE_MERGE_MAX_BYTES: u64 = 1 << 20;
/// More file data than this waiting for the log, and a commit commits the txg instead: the
/// txg writes that data once, the log would write it twice (OpenZFS avoids the copy with
/// indirect write records; for bulk data a txg commit costs the same).
pub const LOG_DATA_MAX_BYTES: u64 = 8 << 20;
/// The log holds at most 1/this of the free space of its class (and of the dataset's AVAIL)
/// before commits fall back to txg commits (which free it): a nearly full pool or dataset is
/// not filled by log blocks, which its space accounting does not see.
const LOG_SHARE_OF_FREE_MAX: u64 = 8;

#[derive(Debug)]
pub enum ZilError {
    Corrupt(String),
    NoSpace,
    Io(String),
    Dmu(DmuError),
}

impl std::fmt::Display for ZilError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZilError::Corrupt(why) => write!(f, "intent log is damaged: {why}"),
            ZilError::NoSpace => write!(f, "out of space for the intent log"),
            ZilError::Io(why) => write!(f, "intent log write failed: {why}"),
            ZilError::Dmu(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ZilError {}

impl From<DmuError> for ZilError {
    fn from(e: DmuError) -> Self {
        ZilError::Dmu(e)
    }
}

/// What a `commit` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Every record was already on disk.
    Nothing,
    /// `records` records went into `blocks` new log blocks.
    Written { blocks: usize, records: usize },
    /// The dataset has no log yet, or the changes hold more data than the log should carry
    /// (`LOG_DATA_MAX_BYTES`): the caller must commit the txg (which also creates the log).
    NeedTxgSync,
}

/// A logged write whose bytes are copied from the object when the record is written
/// (OpenZFS `WR_NEED_COPY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteItx {
    pub object: u64,
    pub offset: u64,
    pub len: u64,
    /// The client's own words for the record (the ZPL: the write's time).
    pub private: [u64; 2],
}

/// The client's copy of a write's data into stored records, when it is committed (OpenZFS
/// `zl_get_data`): none when the object is gone (its removal is logged after it).
pub type GetData = fn(&mut ObjectSet, &IoCtx<'_>, Txg, &WriteItx) -> Result<Vec<Vec<u8>>, ZilError>;

/// One record in memory (OpenZFS `itx_t`).
#[derive(Clone, Debug)]
pub enum Itx {
    /// A record in its stored form (header included).
    Record { txg: Txg, bytes: Vec<u8> },
    /// A write, encoded at commit by `get_data`.
    Write {
        txg: Txg,
        write: WriteItx,
        get_data: GetData,
    },
}

/// The txg, type (`TX_CI` cleared) and stored length of the record at the start of
/// `bytes`, checked against `bytes` (OpenZFS `lr_t`): a length that overruns, is short or
/// unaligned is damage.
pub fn record_header(bytes: &[u8]) -> Result<(Txg, u64, usize), ZilError> {
    if bytes.len() < RECORD_HEADER_SIZE_BYTES {
        return Err(ZilError::Corrupt(
            "log record header is truncated".to_string(),
        ));
    }
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let txtype = word(0) & !TX_CI;
    let reclen = word(8);
    if reclen < RECORD_HEADER_SIZE_BYTES as u64
        || reclen > bytes.len() as u64
        || !reclen.is_multiple_of(8)
    {
        return Err(ZilError::Corrupt(format!("log record length {reclen}")));
    }
    Ok((Txg(word(16)), txtype, reclen as usize))
}

/// Writes an `lr_t` at the start of `record` (which is at least 32 bytes long).
pub fn put_record_header(record: &mut [u8], txtype: u64, txg: Txg) {
    debug_assert!(record.len() >= RECORD_HEADER_SIZE_BYTES && record.len().is_multiple_of(8));
    let reclen = record.len() as u64;
    record[0..8].copy_from_slice(&txtype.to_le_bytes());
    record[8..16].copy_from_slice(&reclen.to_le_bytes());
    record[16..24].copy_from_slice(&txg.0.to_le_bytes());
    record[24..32].fill(0);
}

/// An object set's intent log, in memory.
#[derive(Debug, Default)]
pub struct Zilog {
    /// Records of the open txg, oldest first.
    itxs: Vec<Itx>,
    /// How many of `itxs` are already in the chain.
    committed: usize,
    /// The preallocated block the next commit writes first.
    next: Option<BlockRef>,
    /// Blocks this log allocated and has not freed yet (the chain and `next`).
    owned: Vec<BlockRef>,
    /// A block of the chain was written since the header was last rewritten.
    chain_written: bool,
    /// A commit asked for a log: keep a head allocated at every txg commit.
    active: bool,
    /// Size of the next preallocated block (the size the last commit needed).
    size_hint_bytes: u64,
    /// The last `lrc_seq` given to a record written (OpenZFS `zl_lr_seq`).
    lr_seq: u64,
}

impl Zilog {
    /// The log an object set opened from disk has: the chain its header names.
    pub fn from_header(header: &[u8; chain::HEADER_SIZE_BYTES]) -> Zilog {
        let head = chain::decode_header(header);
        Zilog {
            next: head,
            owned: head.into_iter().collect(),
            active: head.is_some(),
            size_hint_bytes: head.map_or(BLOCK_SIZE_MIN_BYTES as u64, |h| h.psize_bytes),
            ..Zilog::default()
        }
    }

    /// Records one change (OpenZFS `zil_itx_assign`). A write contiguous with the last
    /// record, a write of the same object and txg not yet committed, extends it.
    pub fn log(&mut self, itx: Itx) {
        if let Itx::Write { txg, write, .. } = &itx {
            if self.itxs.len() > self.committed {
                if let Some(Itx::Write {
                    txg: last_txg,
                    write: last,
                    ..
                }) = self.itxs.last_mut()
                {
                    let contiguous = last.object == write.object
                        && last.offset.checked_add(last.len) == Some(write.offset)
                        && last.len + write.len <= WRITE_MERGE_MAX_BYTES;
                    if contiguous && *last_txg == *txg {
                        last.len += write.len;
                        last.private = write.private;
                        return;
                    }
                }
            }
        }
        self.itxs.push(itx);
    }

    /// The blocks of the chain import walked (and claimed) are this log's: the commit that
    /// retires the chain frees them all, not just the head.
    fn own_chain(&mut self, blocks: &[BlockRef]) {
        for b in blocks {
            if !self.owned.contains(b) {
                self.owned.push(*b);
            }
        }
    }

    /// The chain read at import is retired at the next txg commit.
    pub fn mark_chain_written(&mut self) {
        self.chain_written = true;
    }

    /// Records not yet written to the chain.
    pub fn pending(&self) -> usize {
        self.itxs.len() - self.committed
    }

    /// The blocks this log holds allocated (its chain and the preallocated next block):
    /// space no dataset is charged for (the space audit and AVAIL leave it aside).
    pub fn owned_blocks(&self) -> &[BlockRef] {
        &self.owned
    }

    /// Whether any block of this log is on top-level vdev `vdev`.
    pub fn uses_vdev(&self, vdev: u32) -> bool {
        self.owned
            .iter()
            .chain(self.next.iter())
            .any(|b| b.vdev == vdev)
    }
}

/// Allocates a log block of at least `psize_bytes` in the open txg.
/// `verifier` is the block's `blk_cksum` (`chain`'s `ZIL_ZC_*` words).
fn allocate(ctx: &IoCtx<'_>, psize_bytes: u64, verifier: [u64; 4]) -> Result<BlockRef, ZilError> {
    debug_assert!(psize_bytes.is_multiple_of(chain::ZIL_MIN_BLKSZ));
    let asize_of = |vdev: u32| {
        ctx.root
            .children
            .get(vdev as usize)
            .map(|v| v.allocation_size_bytes(round_up_shift(psize_bytes, v.ashift)))
            .unwrap_or(u64::MAX)
    };
    // Separate log devices first (OpenZFS's log class), the pool's normal class when there
    // are none or they are full.
    let from_log = ctx
        .zio
        .log_allocator
        .lock()
        .allocate(1, &asize_of, true, ctx.txg.0);
    let dvas = match from_log {
        Ok(dvas) => dvas,
        Err(_) => ctx
            .zio
            .allocator
            .lock()
            .allocate(1, &asize_of, true, ctx.txg.0)
            .map_err(|_| ZilError::NoSpace)?,
    };
    let (vdev, offset_bytes, asize_bytes) = dvas[0];
    let ashift = ctx.root.children[vdev as usize].ashift;
    let block = BlockRef {
        vdev,
        offset_bytes,
        psize_bytes: round_up_shift(psize_bytes, ashift),
        asize_bytes,
        birth: ctx.txg,
        verifier,
        slim: true,
    };
    debug_assert!(block.asize_bytes >= block.psize_bytes);
    Ok(block)
}

/// The allocation class a log block's vdev belongs to.
fn class_of<'a>(
    ctx: &'a IoCtx<'_>,
    vdev: &crate::vdev::Vdev,
) -> &'a parking_lot::Mutex<crate::metaslab::Allocator> {
    if vdev.is_log {
        &ctx.zio.log_allocator
    } else {
        &ctx.zio.allocator
    }
}

/// Frees log blocks, deferred (see the module header).
fn free_blocks(ctx: &IoCtx<'_>, blocks: &[BlockRef]) {
    for b in blocks {
        let Some(vdev) = ctx.root.children.get(b.vdev as usize) else {
            continue;
        };
        if vdev.kind == crate::vdev::VdevKind::Hole {
            continue;
        }
        let asize = vdev.allocation_size_bytes(b.psize_bytes);
        ctx.zio.note_free(ctx.txg);
        let result = class_of(ctx, vdev).lock().free_deferred(
            b.vdev,
            b.offset_bytes,
            asize,
            true,
            ctx.txg.0,
        );
        debug_assert!(result.is_ok(), "free of log block {b:?} failed: {result:?}");
    }
}

/// Frees blocks allocated in this txg that nothing on disk names yet (a failed commit).
fn undo_allocations(ctx: &IoCtx<'_>, blocks: &[BlockRef]) {
    for b in blocks {
        if let Some(vdev) = ctx.root.children.get(b.vdev as usize) {
            let asize = vdev.allocation_size_bytes(b.psize_bytes);
            let _ = class_of(ctx, vdev)
                .lock()
                .free(b.vdev, b.offset_bytes, asize, true, ctx.txg.0);
        }
    }
}

/// Encodes the records not yet written, copying write data from the objects now.
fn encode_pending(os: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<Vec<Vec<u8>>, ZilError> {
    let pending: Vec<Itx> = os.zil.itxs[os.zil.committed..].to_vec();
    let mut encoded = Vec::with_capacity(pending.len());
    for itx in pending {
        match itx {
            Itx::Record { bytes, .. } => encoded.push(bytes),
            Itx::Write {
                txg,
                write,
                get_data,
            } => encoded.extend(get_data(os, ctx, txg, &write)?),
        }
    }
    Ok(encoded)
}

/// The block size for `payload_bytes` of records: whole `ZIL_MIN_BLKSZ` units (OpenZFS's
/// `zil_block_buckets` are all multiples of it, and the checksum covers `nused` rounded up
/// to it), 4 KiB to 128 KiB.
fn block_size_for(payload_bytes: usize) -> u64 {
    let bytes = (chain::BLOCK_HEADER_SIZE_BYTES + payload_bytes)
        .clamp(BLOCK_SIZE_MIN_BYTES, BLOCK_SIZE_MAX_BYTES) as u64;
    bytes.div_ceil(chain::ZIL_MIN_BLKSZ) * chain::ZIL_MIN_BLKSZ
}

/// `zil_commit`: makes every change logged so far durable (see the module header).
/// `space_bytes`: what the dataset may still take (its AVAIL), which bounds the log too.
pub fn commit(os: &mut ObjectSet, ctx: &IoCtx<'_>, space_bytes: u64) -> Result<Commit, ZilError> {
    let records = os.zil.pending();
    if records == 0 {
        return Ok(Commit::Nothing);
    }
    let pending_data: u64 = os.zil.itxs[os.zil.committed..]
        .iter()
        .map(|itx| match itx {
            Itx::Write { write, .. } => write.len,
            Itx::Record { .. } => 0,
        })
        .sum();
    os.zil.active = true;
    // The log's blocks are held until the txg commits: on a filling pool it must not take
    // more than a slice of what is free (a txg commit then retires it).
    let held: u64 = os.zil.owned.iter().map(|b| b.psize_bytes).sum();
    let free = {
        let log_class = ctx.zio.log_allocator.lock().free_bytes();
        if log_class > 0 {
            log_class
        } else {
            ctx.zio.allocator.lock().free_bytes().min(space_bytes)
        }
    };
    let fits = held + 2 * pending_data <= free / LOG_SHARE_OF_FREE_MAX;
    let Some(first) = os
        .zil
        .next
        .filter(|_| pending_data <= LOG_DATA_MAX_BYTES && fits)
    else {
        return Ok(Commit::NeedTxgSync);
    };
    let mut encoded = encode_pending(os, ctx)?;
    // Sequence numbers in the order written (`zil_lwb_commit`); a failed commit leaves
    // gaps, which nothing reads.
    for record in &mut encoded {
        os.zil.lr_seq += 1;
        if record.len() >= RECORD_HEADER_SIZE_BYTES {
            record[LRC_SEQ..LRC_SEQ + 8].copy_from_slice(&os.zil.lr_seq.to_le_bytes());
        }
    }
    let total: usize = encoded.iter().map(Vec::len).sum();
    // Pack records into blocks, allocating each next block as the one before fills.
    let mut allocated: Vec<BlockRef> = Vec::new();
    let mut blocks: Vec<(BlockRef, Vec<Vec<u8>>, BlockRef)> = Vec::new();
    let mut current = first;
    let mut current_records: Vec<Vec<u8>> = Vec::new();
    let mut used = chain::BLOCK_HEADER_SIZE_BYTES;
    let mut remaining = total;
    for record in encoded {
        if used + record.len() > current.psize_bytes as usize {
            let size = block_size_for(remaining).max(block_size_for(record.len()));
            let next = match allocate(ctx, size, current.next_verifier()) {
                Ok(next) => next,
                Err(e) => {
                    undo_allocations(ctx, &allocated);
                    return Err(e);
                }
            };
            allocated.push(next);
            blocks.push((current, std::mem::take(&mut current_records), next));
            current = next;
            used = chain::BLOCK_HEADER_SIZE_BYTES;
        }
        remaining -= record.len();
        used += record.len();
        current_records.push(record);
    }
    let hint = block_size_for(total);
    let after = match allocate(ctx, hint, current.next_verifier()) {
        Ok(after) => after,
        Err(e) => {
            undo_allocations(ctx, &allocated);
            return Err(e);
        }
    };
    allocated.push(after);
    blocks.push((current, current_records, after));
    // Write every block of this commit in one batch, then flush once.
    let images: Vec<(BlockRef, Vec<u8>)> = blocks
        .iter()
        .map(|(this, recs, next)| (*this, chain::encode_block(this, recs, next)))
        .collect();
    let mut plan = Vec::new();
    for (this, image) in &images {
        let vdev = &ctx.root.children[this.vdev as usize];
        if let Err(e) = vdev.plan_write(this.offset_bytes, image, &mut plan) {
            undo_allocations(ctx, &allocated);
            return Err(ZilError::Io(e.to_string()));
        }
    }
    let failures = crate::vdev::issue_leaf_writes(plan);
    if !failures.is_empty() && !ctx.root.state().is_usable() {
        undo_allocations(ctx, &allocated);
        return Err(ZilError::Io(failures[0].to_string()));
    }
    let flush_errors = ctx.root.flush_all();
    if !ctx.root.state().is_usable() {
        undo_allocations(ctx, &allocated);
        let why = flush_errors
            .first()
            .map_or("devices unavailable".to_string(), |e| e.to_string());
        return Err(ZilError::Io(why));
    }
    let zil = &mut os.zil;
    zil.owned.extend(allocated);
    zil.next = Some(after);
    zil.committed = zil.itxs.len();
    zil.chain_written = true;
    zil.size_hint_bytes = hint;
    os.mark_dirty();
    Ok(Commit::Written {
        blocks: blocks.len(),
        records,
    })
}

/// Called by the txg commit for each dataset object set before its block is written.
pub fn sync(os: &mut ObjectSet, ctx: &IoCtx<'_>) {
    let objset = os.id;
    let zil = &mut os.zil;
    zil.itxs.clear();
    zil.committed = 0;
    if !zil.active || (!zil.chain_written && zil.next.is_some()) {
        return;
    }
    free_blocks(ctx, &zil.owned);
    zil.owned.clear();
    zil.chain_written = false;
    let size = zil
        .size_hint_bytes
        .clamp(BLOCK_SIZE_MIN_BYTES as u64, BLOCK_SIZE_MAX_BYTES as u64)
        .div_ceil(chain::ZIL_MIN_BLKSZ)
        * chain::ZIL_MIN_BLKSZ;
    // `zil_init_log_chain`: two random words, the object set, sequence 1.
    let verifier = [Guid::random().0, Guid::random().0, objset, 1];
    let head = allocate(ctx, size, verifier).ok();
    // Out of space: no log until a commit finds room (commits fall back to txg commits).
    zil.next = head;
    zil.owned.extend(head);
    os.zil_header = chain::encode_header(head.as_ref());
    os.mark_dirty();
}

/// The dataset goes (destroy) or its tree is replaced (rollback, receive): its chain is
/// freed and it has no log.
pub fn discard(os: &mut ObjectSet, ctx: &IoCtx<'_>) {
    free_blocks(ctx, &os.zil.owned);
    forget(os);
}

/// What `claim` did to one object set's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Claim {
    /// Blocks claimed now (written after the last commit, so in no committed map).
    pub blocks_claimed: usize,
    /// Blocks in the chain (claimed now, earlier, or committed).
    pub blocks: usize,
    pub records: usize,
    /// The header now records a claim (the object set must be written in this txg).
    pub header_written: bool,
}

/// Claims the log of `os` at import, in the import's first txg `ctx.txg` (OpenZFS
/// `zil_claim`, `zil_claim_log_block`): every block of the chain born in that txg or later
/// was written after the last commit, so no committed space map holds it; it is allocated
/// now, exactly where it is, before anything else can allocate over it. The walk stops at
/// a block whose space is taken (it cannot be this log's). The header records the claim:
/// `zh_claim_txg`, the highest block and record sequence claimed, `ZIL_CLAIM_LR_SEQ_VALID`
/// and, if there is anything to replay, `ZIL_REPLAY_NEEDED`. A header claimed by an earlier
/// import (cut before replay) is not claimed again: its blocks are in the maps already.
/// Either way the walked blocks become this log's, freed when the chain is retired.
///
/// Unlike OpenZFS, a chain that is one committed, empty block (what every idle log looks
/// like) is left unclaimed: there is nothing to allocate or replay, and claiming it would
/// write every such dataset at every import. No WR_INDIRECT record is written by Zetta,
/// so `zil_claim_log_record` has nothing to claim; a chain holding one is refused by the
/// ZPL's replay.
pub fn claim(os: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<Claim, ZilError> {
    let first_txg = ctx.txg;
    let mut header = chain::ZilHeader::decode(&os.zil_header, crate::byteorder::ByteOrder::Little);
    if BlockRef::from_blkptr(&header.log).is_none() {
        return Ok(Claim::default());
    }
    let already = header.claim_txg != 0;
    let mut claimed: Vec<BlockRef> = Vec::new();
    let walked = replay::walk_chain(ctx.root, &header, &mut |b| {
        if already || b.birth < first_txg {
            return true;
        }
        let Some(vdev) = ctx.root.children.get(b.vdev as usize) else {
            return false;
        };
        if vdev.kind == crate::vdev::VdevKind::Hole {
            return false;
        }
        let asize = vdev.allocation_size_bytes(b.psize_bytes);
        let taken = class_of(ctx, vdev)
            .lock()
            .claim(b.vdev, b.offset_bytes, asize, first_txg.0)
            .is_ok();
        if taken {
            claimed.push(*b);
        }
        taken
    });
    let walk = match walked {
        Ok(walk) => walk,
        Err(e) => {
            // A chain that cannot be read claims nothing (replay reports it): what this
            // walk claimed would belong to no one.
            undo_allocations(ctx, &claimed);
            return Err(e);
        }
    };
    os.zil.own_chain(&walk.blocks);
    let blocks_claimed = claimed.len();
    let mut outcome = Claim {
        blocks_claimed,
        blocks: walk.blocks.len(),
        records: walk.records.len(),
        header_written: false,
    };
    if already || (blocks_claimed == 0 && walk.records.is_empty()) {
        return Ok(outcome);
    }
    header.claim_txg = first_txg.0;
    header.claim_blk_seq = walk.max_blk_seq;
    header.claim_lr_seq = walk.max_lr_seq;
    header.flags |= chain::ZIL_CLAIM_LR_SEQ_VALID;
    if !walk.records.is_empty() || walk.blocks.len() > 1 {
        header.flags |= chain::ZIL_REPLAY_NEEDED;
    }
    os.zil_header = header.encode();
    os.mark_dirty();
    outcome.header_written = true;
    Ok(outcome)
}

/// An object set opened from a snapshot's block: the header it carries names a chain
/// someone else owns; it starts with no log.
pub fn forget(os: &mut ObjectSet) {
    let had_log = chain::decode_header(&os.zil_header).is_some();
    os.zil = Zilog::default();
    os.zil_header = chain::encode_header(None);
    // The zeroed header must reach the disk (a stale one would be replayed or freed at
    // the next import); an object set that had none needs no rewrite.
    if had_log {
        os.mark_dirty();
    }
}
