//! A read-only scrub of a real OpenZFS pool: every copy of every block reachable from the
//! uberblock read and verified against its block pointer's checksum, nothing repaired
//! (OpenZFS `dsl_scan` in a pool imported read-only cannot write either; `zdb -bcc` is the
//! closest tool).
//!
//! Theory. The walk starts at the MOS and then every dataset (heads and snapshots): an object
//! set's block, its meta-dnode's tree, every dnode in use (large dnodes included) with its
//! block tree and spill block, and the accounting dnodes of the object set block. A block
//! pointer already visited (same first DVA and birth) is not walked again: snapshots share
//! their unchanged subtrees with their heads, and an identical pointer names an identical
//! subtree. Each copy (DVA) is read and verified on its own, so a damaged copy is counted even
//! when another one is good; a raidz copy is verified after reconstruction, as a read would.
//!
//! The deferred-free list (blocks freed in the last txgs, still allocated) is counted too,
//! not verified (it keeps no checksums).
//! Each object set's intent log chain is walked as `traverse_zil` walks it (`walk_zil`).
//! Not covered yet: livelists, bpobj sub-objects; space maps are walked as MOS objects, not
//! compared with the allocations (`zdb -b`'s leak check).

use super::pool::OpenZfsPool;
use crate::byteorder::ByteOrder;
use crate::dmu::openzfs::dnode::{raw_bp_byte_order, DnodePhys, RawBlkptr, BLKPTR_BYTES};
use crate::dmu::openzfs::objset::ObjsetPhys;
use crate::dmu::openzfs::DNODE_SLOT_BYTES;
use crate::zio::openzfs::blkptr::BlockPointer;
use crate::zio::openzfs::read::{checksum_matches, read_block, read_copy_verified};
use std::collections::HashSet;

/// Block pointers walked at most (a hostile pool cannot make the walk endless).
const BLOCKS_MAX: u64 = 1 << 32;

/// One block that could not be read from any copy, or one bad copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    /// The object set (`mos` or a dataset name) and object the block belongs to.
    pub objset: String,
    pub object: u64,
    pub level: u8,
    /// The DVA index of a bad copy, `None` when the whole block is unreadable.
    pub copy: Option<usize>,
    pub why: String,
}

/// What a scrub found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Distinct blocks (not embedded, not holes) visited.
    pub blocks: u64,
    /// Embedded block pointers seen (their data lives in the pointer).
    pub embedded: u64,
    /// Bytes allocated to the visited blocks, every copy counted.
    pub allocated_bytes: u64,
    /// Copies that did not verify (their block may still read from another copy).
    pub bad_copies: u64,
    /// Blocks no copy of which verified.
    pub unrecoverable: u64,
    pub errors: Vec<ScanError>,
}

struct Walker<'p> {
    pool: &'p OpenZfsPool,
    seen: HashSet<(u32, u64, u64)>,
    report: ScanReport,
    objset: String,
    /// Walking an intent log's `TX_WRITE` blocks (see `error`).
    in_zil: bool,
}

impl Walker<'_> {
    fn error(&mut self, object: u64, level: u8, copy: Option<usize>, why: String) {
        // Blocks reached through an intent log's records may be stale past the chain's true
        // end (a rule of `zil_parse` not yet matched): never reported as damage.
        if self.in_zil {
            return;
        }
        if copy.is_some() {
            self.report.bad_copies += 1;
        } else {
            self.report.unrecoverable += 1;
        }
        if self.report.errors.len() < 1000 {
            self.report.errors.push(ScanError {
                objset: self.objset.clone(),
                object,
                level,
                copy,
                why,
            });
        }
    }

    /// Verifies every copy of the block `raw` names and returns its logical bytes (and their
    /// order), or `None` for a hole, a block seen before, or one that cannot be read.
    fn visit(
        &mut self,
        raw: &RawBlkptr,
        order: ByteOrder,
        object: u64,
    ) -> Option<(Vec<u8>, ByteOrder)> {
        let bp = match BlockPointer::decode(order, raw, 0) {
            Ok(bp) => bp,
            Err(e) => {
                self.error(object, 0, None, e.to_string());
                return None;
            }
        };
        if bp.is_hole() {
            return None;
        }
        let level = bp.level();
        if self.report.blocks + self.report.embedded >= BLOCKS_MAX {
            return None;
        }
        if bp.is_embedded() {
            self.report.embedded += 1;
            return match read_block(&self.pool.io.devices, &bp, &self.pool.io.salt) {
                Ok(data) => Some((data, raw_bp_byte_order(raw, order))),
                Err(e) => {
                    self.error(object, level, None, e.to_string());
                    None
                }
            };
        }
        let first = bp.dva(0);
        if !self
            .seen
            .insert((first.vdev, first.offset_sectors, bp.birth()))
        {
            return None;
        }
        self.report.blocks += 1;
        if let Err(e) = bp.validate() {
            self.error(object, level, None, e.to_string());
            return None;
        }
        let salt = self.pool.io.salt;
        for (index, dva) in bp.readable_dvas().into_iter().enumerate() {
            self.report.allocated_bytes += dva.asize_bytes();
            let verified = read_copy_verified(&self.pool.io.devices, &bp, index, &|bp, bytes| {
                checksum_matches(bp, bytes, &salt)
            });
            if let Err(e) = verified {
                self.error(object, level, Some(index), e.to_string());
            }
        }
        // An encrypted leaf is ciphertext (its checksum, verified above, covers it): nothing
        // below it to walk, and it neither decompresses nor decodes without its key. Dnode
        // blocks are the exception: only their bonus buffers are encrypted.
        if bp.is_encrypted() && bp.object_type() != DMU_OT_DNODE {
            return None;
        }
        match read_block(&self.pool.io.devices, &bp, &salt) {
            Ok(data) => Some((data, raw_bp_byte_order(raw, order))),
            Err(e) => {
                self.error(object, level, None, e.to_string());
                None
            }
        }
    }

    /// A block pointer and everything below it; `dnodes` when its level-0 blocks hold
    /// dnodes (a meta-dnode's tree). `blkid` is the block's id at its level (a child's is
    /// `blkid * pointers per indirect block + index`), so a meta-dnode block names the
    /// objects it holds.
    fn walk_bp(
        &mut self,
        raw: &RawBlkptr,
        order: ByteOrder,
        object: u64,
        dnodes: bool,
        blkid: u64,
    ) {
        let Some((data, child_order)) = self.visit(raw, order, object) else {
            return;
        };
        let level = BlockPointer::decode(order, raw, 0)
            .map(|bp| bp.level())
            .unwrap_or(0);
        if level > 0 {
            let per_block = (data.len() / BLKPTR_BYTES) as u64;
            for (index, child) in data.chunks_exact(BLKPTR_BYTES).enumerate() {
                let mut bp = [0u8; BLKPTR_BYTES];
                bp.copy_from_slice(child);
                let child_blkid = blkid.saturating_mul(per_block).saturating_add(index as u64);
                self.walk_bp(&bp, child_order, object, dnodes, child_blkid);
            }
        } else if dnodes {
            let first = blkid.saturating_mul((data.len() / DNODE_SLOT_BYTES) as u64);
            self.walk_dnode_block(&data, child_order, first);
        }
    }

    /// The dnodes of one meta-dnode block, whose first slot is object `first`.
    fn walk_dnode_block(&mut self, data: &[u8], order: ByteOrder, first: u64) {
        let mut slot = 0;
        while slot * DNODE_SLOT_BYTES < data.len() {
            let buf = &data[slot * DNODE_SLOT_BYTES..];
            match DnodePhys::decode(buf, order) {
                Ok(dn) if !dn.is_free() => {
                    let slots = 1 + usize::from(dn.extra_slots);
                    self.walk_dnode(&dn, first.saturating_add(slot as u64));
                    slot += slots.max(1);
                }
                Ok(_) => slot += 1,
                Err(_) => slot += 1,
            }
        }
    }

    fn walk_dnode(&mut self, dn: &DnodePhys, object: u64) {
        for (index, bp) in dn.blkptrs.iter().enumerate() {
            self.walk_bp(bp, dn.order, object, false, index as u64);
        }
        if let Some(spill) = &dn.spill {
            self.walk_bp(spill, dn.order, object, false, 0);
        }
    }

    fn count_freed(&mut self, raw: &RawBlkptr, order: ByteOrder) {
        let Ok(bp) = BlockPointer::decode(order, raw, 0) else {
            return;
        };
        if bp.is_hole() || bp.is_embedded() {
            return;
        }
        let first = bp.dva(0);
        if self
            .seen
            .insert((first.vdev, first.offset_sectors, bp.birth()))
        {
            self.report.blocks += 1;
            for dva in bp.readable_dvas() {
                self.report.allocated_bytes += dva.asize_bytes();
            }
        }
    }

    /// Blocks freed in the last txgs and not yet released (the deferred-free list of an old
    /// pool, `sync_bplist`, or a newer one's `free_bpobj`): still allocated, still read.
    fn walk_deferred_frees(&mut self) {
        use crate::dsl::openzfs::objdir;
        for key in [objdir::SYNC_BPLIST, objdir::FREE_BPOBJ] {
            let object = match self.pool.mos.zap_u64(objdir::DIRECTORY_OBJECT, key) {
                Ok(Some(object)) => object,
                Ok(None) => continue,
                Err(e) => {
                    self.error(0, 0, None, format!("{key}: {e}"));
                    continue;
                }
            };
            let dn = match self.pool.mos.dnode(object) {
                Ok(dn) => dn,
                Err(e) => {
                    self.error(object, 0, None, format!("{key}: {e}"));
                    continue;
                }
            };
            // bpobj_phys_t: the pointer count comes first.
            let count = dn.order.u64_at(&dn.bonus, 0).unwrap_or(0);
            let Some(len) = count
                .checked_mul(BLKPTR_BYTES as u64)
                .filter(|len| *len <= dn.logical_size())
            else {
                self.error(
                    object,
                    0,
                    None,
                    format!("{key}: {count} pointers do not fit"),
                );
                continue;
            };
            let data = match self.pool.mos.read(&dn, 0, len as usize) {
                Ok(data) => data,
                Err(e) => {
                    self.error(object, 0, None, format!("{key}: {e}"));
                    continue;
                }
            };
            for raw in data.chunks_exact(BLKPTR_BYTES) {
                let mut bp = [0u8; BLKPTR_BYTES];
                bp.copy_from_slice(raw);
                // Only the space counts: the list keeps a freed pointer's addresses and
                // birth, not its checksum (OpenZFS clears it), and its subtree is gone.
                self.count_freed(&bp, dn.order);
            }
        }
    }

    /// An object set from its root block pointer. Its intent log is walked only for a head
    /// dataset (`with_zil`), as `traverse_impl` does: the MOS has none, and a snapshot's
    /// objset keeps a copy of the header its head had when the snapshot was taken, naming
    /// log blocks the head has since freed and reused.
    fn walk_objset(&mut self, raw: &RawBlkptr, order: ByteOrder, with_zil: bool) {
        let Some((data, child_order)) = self.visit(raw, order, 0) else {
            return;
        };
        let phys = match ObjsetPhys::decode(&data, child_order) {
            Ok(phys) => phys,
            Err(e) => {
                self.error(0, 0, None, format!("object set block: {e}"));
                return;
            }
        };
        for (index, bp) in phys.meta_dnode.blkptrs.iter().enumerate() {
            self.walk_bp(bp, phys.meta_dnode.order, 0, true, index as u64);
        }
        if with_zil {
            self.walk_zil(&phys.zil_header, child_order);
        }
        for dn in [&phys.userused, &phys.groupused, &phys.projectused]
            .into_iter()
            .flatten()
        {
            self.walk_dnode(dn, 0);
        }
    }
}

/// `zil_header_t` fields (`include/sys/zil.h`).
const ZH_CLAIM_TXG: usize = 0;
const ZH_LOG: usize = 16;
const ZH_CLAIM_BLK_SEQ: usize = 144;
const ZH_FLAGS: usize = 152;
const ZH_CLAIM_LR_SEQ: usize = 160;
/// `ZIL_CLAIM_LR_SEQ_VALID`: `zh_claim_lr_seq` was recorded (older logs lack it).
const ZIL_CLAIM_LR_SEQ_VALID: u64 = 0x2;
/// `lr_t.lrc_seq`.
const LR_SEQ: usize = 24;
/// `zil_chain_t`: pad 8, next block pointer 128, nused 8, embedded checksum 40.
const ZIL_CHAIN_BYTES: usize = 184;
const ZIL_CHAIN_NEXT: usize = 8;
const ZIL_CHAIN_NUSED: usize = 136;
/// `blk_cksum.zc_word[ZIL_ZC_SEQ]`: a log block's sequence number.
const ZIL_ZC_SEQ: usize = 3;
/// `lr_t` (txtype, reclen, txg, seq) and the block pointer of an `lr_write_t`.
const LR_HEADER_BYTES: usize = 32;
const LR_WRITE_FOID: usize = 32;
const LR_WRITE_BLKPTR: usize = 64;
const TX_WRITE: u64 = 9;
/// The case-insensitive flag OpenZFS ORs into `lrc_txtype`.
const TX_CI: u64 = 1 << 63;
/// Log blocks followed at most in one chain (a hostile chain cannot loop for ever: the
/// visited set stops a cycle, this a merely long one).
const ZIL_CHAIN_MAX: usize = 1 << 20;
/// `ZIO_CHECKSUM_ZILOG2`: the chain header leads the block (older logs trail it).
const CHECKSUM_ZILOG2: u8 = 9;

impl Walker<'_> {
    /// An object set's intent log, as `traverse_zil` walks it in a read-only pool
    /// (`zil_parse`): every block pointer of the chain from `zh_log` is visited — counted
    /// whether or not the block it names was written, as `zdb -b` counts it — until one
    /// does not read (the end of a log is the first block that fails its checksum: not
    /// damage) or, in a claimed log, the claimed sequence ends; in a claimed log, the data
    /// blocks `TX_WRITE` records point at (born since the claim) are walked too.
    fn walk_zil(&mut self, header: &[u8], order: ByteOrder) {
        let word = |at: usize| order.u64_at(header, at).unwrap_or(0);
        let claim_txg = word(ZH_CLAIM_TXG);
        let claim_blk_seq = if claim_txg != 0 {
            word(ZH_CLAIM_BLK_SEQ)
        } else {
            u64::MAX
        };
        let claim_lr_seq = if claim_txg != 0 && word(ZH_FLAGS) & ZIL_CLAIM_LR_SEQ_VALID != 0 {
            word(ZH_CLAIM_LR_SEQ)
        } else {
            u64::MAX
        };
        let mut max_lr_seq = 0u64;
        let Some(first) = header.get(ZH_LOG..ZH_LOG + BLKPTR_BYTES) else {
            return;
        };
        let mut raw = [0u8; BLKPTR_BYTES];
        raw.copy_from_slice(first);
        let mut raw_order = order;
        let salt = self.pool.io.salt;
        for _ in 0..ZIL_CHAIN_MAX {
            let Ok(bp) = BlockPointer::decode(raw_order, &raw, 0) else {
                return;
            };
            let blk_seq = bp.checksum()[ZIL_ZC_SEQ];
            if bp.is_hole() || blk_seq > claim_blk_seq {
                return;
            }
            let first = bp.dva(0);
            if self.report.blocks + self.report.embedded >= BLOCKS_MAX
                || !self
                    .seen
                    .insert((first.vdev, first.offset_sectors, bp.birth()))
            {
                return;
            }
            self.report.blocks += 1;
            self.report.allocated_bytes += bp
                .readable_dvas()
                .iter()
                .map(|d| d.asize_bytes())
                .sum::<u64>();
            // The last claimed block is counted, not read (`zil_parse`).
            if max_lr_seq == claim_lr_seq && blk_seq == claim_blk_seq {
                return;
            }
            let Ok(data) = read_block(&self.pool.io.devices, &bp, &salt) else {
                return;
            };
            let child_order = raw_bp_byte_order(&raw, raw_order);
            let (chain, records) = if bp.checksum_kind() == CHECKSUM_ZILOG2 {
                let nused = child_order
                    .u64_at(&data, ZIL_CHAIN_NUSED)
                    .unwrap_or(0)
                    .min(data.len() as u64) as usize;
                (0, ZIL_CHAIN_BYTES.min(nused)..nused)
            } else {
                let at = data.len().saturating_sub(ZIL_CHAIN_BYTES);
                let nused = child_order
                    .u64_at(&data, at + ZIL_CHAIN_NUSED)
                    .unwrap_or(0)
                    .min(at as u64) as usize;
                (at, 0..nused)
            };
            let parsed =
                self.walk_zil_records(&data[records], child_order, claim_txg, claim_lr_seq);
            max_lr_seq = max_lr_seq.max(parsed.max_seq);
            if parsed.past_claim {
                return;
            }
            let Some(next) =
                data.get(chain + ZIL_CHAIN_NEXT..chain + ZIL_CHAIN_NEXT + BLKPTR_BYTES)
            else {
                return;
            };
            raw.copy_from_slice(next);
            raw_order = child_order;
        }
    }

    /// A log block's records (`zil_parse`'s inner loop): the data blocks of its `TX_WRITE`
    /// records born since the claim, in a claimed log (`traverse_zil_record`). Stops at a
    /// record past the claimed sequence.
    fn walk_zil_records(
        &mut self,
        records: &[u8],
        order: ByteOrder,
        claim_txg: u64,
        claim_lr_seq: u64,
    ) -> ParsedRecords {
        let mut parsed = ParsedRecords::default();
        let mut at = 0;
        while at + LR_HEADER_BYTES <= records.len() {
            let txtype = order.u64_at(records, at).unwrap_or(0) & !TX_CI;
            let reclen = order.u64_at(records, at + 8).unwrap_or(0) as usize;
            let seq = order.u64_at(records, at + LR_SEQ).unwrap_or(0);
            if reclen < LR_HEADER_BYTES || reclen > records.len() - at {
                return parsed;
            }
            if seq > claim_lr_seq {
                parsed.past_claim = true;
                return parsed;
            }
            parsed.max_seq = parsed.max_seq.max(seq);
            if claim_txg != 0 && txtype == TX_WRITE && reclen >= LR_WRITE_BLKPTR + BLKPTR_BYTES {
                let lr = &records[at..at + reclen];
                let foid = order.u64_at(lr, LR_WRITE_FOID).unwrap_or(0);
                let mut raw = [0u8; BLKPTR_BYTES];
                raw.copy_from_slice(&lr[LR_WRITE_BLKPTR..LR_WRITE_BLKPTR + BLKPTR_BYTES]);
                if let Ok(bp) = BlockPointer::decode(order, &raw, 0) {
                    if !bp.is_hole() && bp.logical_birth() >= claim_txg {
                        self.in_zil = true;
                        self.walk_bp(&raw, order, foid, false, 0);
                        self.in_zil = false;
                    }
                }
            }
            at += reclen;
        }
        parsed
    }
}

/// What a log block's records said about the chain.
#[derive(Default)]
struct ParsedRecords {
    /// The highest record sequence number seen.
    max_seq: u64,
    /// A record past the claimed sequence: the chain ends here.
    past_claim: bool,
}

/// `DMU_OT_DNODE`: blocks of dnodes.
const DMU_OT_DNODE: u8 = 10;

/// Scrubs the whole pool read-only.
pub fn scrub(pool: &OpenZfsPool) -> ScanReport {
    let mut walker = Walker {
        pool,
        seen: HashSet::new(),
        report: ScanReport::default(),
        objset: "mos".to_string(),
        in_zil: false,
    };
    walker.walk_objset(&pool.uberblock.rootbp, pool.uberblock.order, false);
    walker.walk_deferred_frees();
    match pool.datasets() {
        Ok(datasets) => {
            for ds in datasets {
                // Encrypted object sets verify too: their checksums cover the ciphertext.
                walker.objset = ds.name.clone();
                let bp: RawBlkptr = ds.phys.bp;
                walker.walk_objset(&bp, ds.order, !ds.is_snapshot);
            }
        }
        Err(e) => walker.error(0, 0, None, format!("the dataset tree: {e}")),
    }
    walker.report
}
