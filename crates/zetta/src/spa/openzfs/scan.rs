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
//! Not covered yet: intent log chains, livelists, bpobj sub-objects; space maps are walked
//! as MOS objects, not compared with the allocations (`zdb -b`'s leak check).

use super::pool::OpenZfsPool;
use crate::byteorder::ByteOrder;
use crate::dmu::openzfs::dnode::{raw_bp_byte_order, DnodePhys, RawBlkptr, BLKPTR_BYTES};
use crate::dmu::openzfs::objset::ObjsetPhys;
use crate::dmu::openzfs::DNODE_SLOT_BYTES;
use crate::zio::openzfs::blkptr::BlockPointer;
use crate::zio::openzfs::read::{checksum_matches, read_block, read_physical_verified};
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
}

impl Walker<'_> {
    fn error(&mut self, object: u64, level: u8, copy: Option<usize>, why: String) {
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
            let single = bp.with_only(dva);
            let verified = read_physical_verified(&self.pool.io.devices, &single, &|bp, bytes| {
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
    /// dnodes (a meta-dnode's tree).
    fn walk_bp(&mut self, raw: &RawBlkptr, order: ByteOrder, object: u64, dnodes: bool) {
        let Some((data, child_order)) = self.visit(raw, order, object) else {
            return;
        };
        let level = BlockPointer::decode(order, raw, 0)
            .map(|bp| bp.level())
            .unwrap_or(0);
        if level > 0 {
            for child in data.chunks_exact(BLKPTR_BYTES) {
                let mut bp = [0u8; BLKPTR_BYTES];
                bp.copy_from_slice(child);
                self.walk_bp(&bp, child_order, object, dnodes);
            }
        } else if dnodes {
            self.walk_dnode_block(&data, child_order);
        }
    }

    fn walk_dnode_block(&mut self, data: &[u8], order: ByteOrder) {
        let mut slot = 0;
        while slot * DNODE_SLOT_BYTES < data.len() {
            let buf = &data[slot * DNODE_SLOT_BYTES..];
            match DnodePhys::decode(buf, order) {
                Ok(dn) if !dn.is_free() => {
                    let slots = 1 + usize::from(dn.extra_slots);
                    // The object number is not known from the block alone; 0 marks
                    // "an object of this meta-dnode block" in reports.
                    self.walk_dnode(&dn, 0);
                    slot += slots.max(1);
                }
                Ok(_) => slot += 1,
                Err(_) => slot += 1,
            }
        }
    }

    fn walk_dnode(&mut self, dn: &DnodePhys, object: u64) {
        for bp in &dn.blkptrs {
            self.walk_bp(bp, dn.order, object, false);
        }
        if let Some(spill) = &dn.spill {
            self.walk_bp(spill, dn.order, object, false);
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

    /// An object set from its root block pointer.
    fn walk_objset(&mut self, raw: &RawBlkptr, order: ByteOrder) {
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
        for bp in &phys.meta_dnode.blkptrs {
            self.walk_bp(bp, phys.meta_dnode.order, 0, true);
        }
        for dn in [&phys.userused, &phys.groupused, &phys.projectused]
            .into_iter()
            .flatten()
        {
            self.walk_dnode(dn, 0);
        }
    }
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
    };
    walker.walk_objset(&pool.uberblock.rootbp, pool.uberblock.order);
    walker.walk_deferred_frees();
    match pool.datasets() {
        Ok(datasets) => {
            for ds in datasets {
                // Encrypted object sets verify too: their checksums cover the ciphertext.
                walker.objset = ds.name.clone();
                let bp: RawBlkptr = ds.phys.bp;
                walker.walk_objset(&bp, ds.order);
            }
        }
        Err(e) => walker.error(0, 0, None, format!("the dataset tree: {e}")),
    }
    walker.report
}
