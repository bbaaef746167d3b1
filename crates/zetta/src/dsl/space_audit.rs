//! The space accounting recomputed from scratch (what `zdb -b` does for OpenZFS): every
//! figure `dsl::space` keeps as it goes is derived again by walking every head's and
//! snapshot's tree, and the pool's allocated space is matched against what is reachable.
//!
//! Two uses. `audit_space` compares the kept figures with the recomputed ones and
//! accounts for every allocated byte (MOS + reachable data + frees not yet reusable): the
//! property test runs it after each step, so a drift or a leak is caught at the step that
//! made it. `rebuild_space_accounting` writes the recomputed figures: import runs it on a
//! format-2 pool, whose records had no room for them. Both cost a walk of every tree
//! (indirect and dnode blocks, not file data).

use super::phys::{DslDirPhys, UsedKind, USED_KIND_COUNT};
use super::space::{refrsrv_charge, SpaceLimit};
use crate::dmu::{BlockSpace, IoCtx, ObjectSet};
use crate::spa::{Spa, SpaError};
use crate::types::Txg;
use crate::zio::blkptr::BlockPointer;
use std::collections::{HashMap, HashSet};

/// A block's identity for de-duplication: where its first copy lives. An embedded block
/// has no copy: its identity is its pointer's bytes (payload, size, birth), hashed under
/// a vdev id no DVA has (DVA 0's (0, 0) is a real block's: offsets start at the
/// allocatable area). Two embedded blocks alike in every byte count once (their
/// allocated space is zero either way).
fn block_key(bp: &BlockPointer) -> (u32, u64) {
    if bp.is_embedded() {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bp.to_bytes().hash(&mut hasher);
        return (u32::MAX, hasher.finish());
    }
    (bp.dvas[0].vdev, bp.dvas[0].offset_bytes)
}

/// One filesystem's figures as recomputed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Figures {
    dir: DslDirPhys,
    head: BlockSpace,
    unique_bytes: u64,
    /// (snapshot object, its space) for each snapshot.
    snapshots: Vec<(u64, BlockSpace)>,
}

/// Every filesystem's recomputed figures (name, dir, figures), children first, and every
/// reachable block by identity.
type Recomputed = (
    Vec<(String, u64, Figures)>,
    HashMap<(u32, u64), BlockPointer>,
);

/// What `audit_space` found: empty `mismatches` means every figure agrees and every
/// allocated byte is accounted for.
#[derive(Clone, Debug, Default)]
pub struct SpaceAudit {
    pub mismatches: Vec<String>,
    /// Allocated in the allocator (all top-level vdevs, all copies).
    pub allocated_bytes: u64,
    /// Of which: the MOS, the blocks reachable from heads and snapshots, frees of the last
    /// txgs not yet reusable, and intent log blocks in the normal class.
    pub mos_bytes: u64,
    pub data_bytes: u64,
    pub deferred_bytes: u64,
    pub log_bytes: u64,
}

fn allocated(bp: &BlockPointer) -> u64 {
    bp.dvas
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| d.asize_bytes)
        .sum()
}

impl Spa {
    fn tree_blocks(
        &mut self,
        objset: u64,
        bp: &BlockPointer,
    ) -> Result<Vec<BlockPointer>, SpaError> {
        let mut blocks = Vec::new();
        let ctx = io_ctx!(self);
        ObjectSet::walk_blocks_born_after(
            &ctx,
            objset,
            bp,
            Txg(0),
            &mut |child, _| blocks.push(*child),
            false,
        )?;
        Ok(blocks)
    }

    /// The committed tree of a head (the root dataset's lives outside its record).
    fn head_tree_bp(&mut self, dataset: u64) -> Result<BlockPointer, SpaError> {
        if dataset == self.dp.directory.root_dataset {
            return Ok(self.root_bp());
        }
        Ok(self.head_phys(dataset)?.bp)
    }

    /// Every filesystem's figures, recomputed; children before parents, so each dir's
    /// CHILD sums are complete. Also returns every reachable block (de-duplicated).
    fn recompute(&mut self) -> Result<Recomputed, SpaError> {
        let mut reachable = HashMap::new();
        let mut out: Vec<(String, u64, Figures)> = Vec::new();
        for name in self.dataset_names()?.into_iter().rev() {
            let dir = self
                .lookup_dir(&name)?
                .ok_or_else(|| SpaError::Corrupt(format!("{name} vanished")))?;
            let kept = self.read_dir(dir)?;
            let dataset = kept.head_dataset;
            let head = self.head_phys(dataset)?;
            let refreserved = self.ref_limits(dir).refreservation;
            let ctx = io_ctx!(self);
            let origin = super::space::origin_txg(&mut self.dp.mos, &ctx, &kept)?;
            let head_bp = self.head_tree_bp(dataset)?;
            let head_blocks = self.tree_blocks(dataset, &head_bp)?;
            let mut figures = Figures {
                head: BlockSpace::of_all(&self.root, &head_blocks),
                unique_bytes: BlockSpace::of_all(
                    &self.root,
                    head_blocks
                        .iter()
                        .filter(|bp| bp.birth_txg.0 > head.prev_snap_txg),
                )
                .allocated_bytes,
                ..Figures::default()
            };
            let in_head: HashSet<(u32, u64)> = head_blocks.iter().map(block_key).collect();
            let own = |bp: &&BlockPointer| bp.birth_txg.0 > origin;
            let head_own = BlockSpace::of_all(&self.root, head_blocks.iter().filter(own));
            let mut snap_only: HashMap<(u32, u64), BlockPointer> = HashMap::new();
            for (_, object, phys) in self.snapshots(&name)? {
                let blocks = self.tree_blocks(object, &phys.bp)?;
                figures
                    .snapshots
                    .push((object, BlockSpace::of_all(&self.root, &blocks)));
                for bp in blocks {
                    reachable.insert(block_key(&bp), bp);
                    if bp.birth_txg.0 > origin && !in_head.contains(&block_key(&bp)) {
                        snap_only.insert(block_key(&bp), bp);
                    }
                }
            }
            for bp in head_blocks {
                reachable.insert(block_key(&bp), bp);
            }
            let snap = BlockSpace::of_all(&self.root, snap_only.values());
            let mut recomputed = DslDirPhys {
                quota_bytes: kept.quota_bytes,
                reserved_bytes: kept.reserved_bytes,
                ..DslDirPhys::default()
            };
            let mut breakdown = [0u64; USED_KIND_COUNT];
            breakdown[UsedKind::Head as usize] = head_own.allocated_bytes;
            breakdown[UsedKind::Snap as usize] = snap.allocated_bytes;
            breakdown[UsedKind::Refrsrv as usize] =
                refrsrv_charge(refreserved, figures.unique_bytes);
            recomputed.compressed_bytes = head_own.physical_bytes + snap.physical_bytes;
            recomputed.uncompressed_bytes = head_own.logical_bytes + snap.logical_bytes;
            for (_, child, child_figures) in &out {
                let child_phys = self.read_dir(*child)?;
                if child_phys.parent_dir != dir {
                    continue;
                }
                let used = child_figures.dir.used_bytes;
                breakdown[UsedKind::Child as usize] += used;
                breakdown[UsedKind::ChildRsrv as usize] +=
                    child_figures.dir.reserved_bytes.saturating_sub(used);
                recomputed.compressed_bytes += child_figures.dir.compressed_bytes;
                recomputed.uncompressed_bytes += child_figures.dir.uncompressed_bytes;
            }
            if dir == self.dp.directory.root_dir {
                // `$MOS`, `$FREE`, `$ORIGIN`: no datasets, but children of the root dir, whose
                // CHILD counts them as any child (`$MOS` is checked against the MOS below).
                for hidden in self.hidden_dirs()? {
                    let phys = self.read_dir(hidden)?;
                    breakdown[UsedKind::Child as usize] += phys.used_bytes;
                    recomputed.compressed_bytes += phys.compressed_bytes;
                    recomputed.uncompressed_bytes += phys.uncompressed_bytes;
                }
            }
            recomputed.used_breakdown = breakdown;
            recomputed.used_bytes = breakdown.iter().sum();
            figures.dir = recomputed;
            out.push((name, dir, figures));
        }
        Ok((out, reachable))
    }

    /// The root dir's hidden children (`$MOS`, `$FREE`, `$ORIGIN`, those the pool has).
    fn hidden_dirs(&mut self) -> Result<Vec<u64>, SpaError> {
        let root = self.dp.directory.root_dir;
        let mut out = Vec::new();
        for name in [
            super::pool::MOS_DIR_NAME,
            super::pool::FREE_DIR_NAME,
            super::pool::ORIGIN_DIR_NAME,
        ] {
            out.extend(self.child_dir(root, name)?);
        }
        Ok(out)
    }

    /// What the hidden dirs hold together (`$MOS`'s MOS blocks, mostly): part of the root
    /// dir's USED and CHILD, as in OpenZFS (the tests take it out of the root's figures).
    #[cfg(test)]
    pub(crate) fn hidden_dirs_space(&mut self) -> Result<super::space::SpaceDelta, SpaError> {
        let mut total = super::space::SpaceDelta::default();
        for dir in self.hidden_dirs()? {
            let phys = self.read_dir(dir)?;
            total = total.plus(super::space::SpaceDelta {
                used: super::space::signed(phys.used_bytes),
                compressed: super::space::signed(phys.compressed_bytes),
                uncompressed: super::space::signed(phys.uncompressed_bytes),
            });
        }
        Ok(total)
    }

    /// Recomputes every space figure and compares (see the module header). Commits first:
    /// the figures are those of the last commit.
    pub fn audit_space(&mut self) -> Result<SpaceAudit, SpaError> {
        self.sync()?;
        let (all, reachable) = self.recompute()?;
        let mut audit = SpaceAudit::default();
        let mut charged = 0u64;
        for (name, dir, figures) in &all {
            let kept = self.read_dir(*dir)?;
            // The space fields recomputed, the rest as kept.
            let expected = DslDirPhys {
                used_bytes: figures.dir.used_bytes,
                compressed_bytes: figures.dir.compressed_bytes,
                uncompressed_bytes: figures.dir.uncompressed_bytes,
                used_breakdown: figures.dir.used_breakdown,
                ..kept.clone()
            };
            if kept != expected {
                audit.mismatches.push(format!(
                    "{name}: dir kept {kept:?}, recomputed {expected:?}"
                ));
            }
            let limits = self.local_props(name)?;
            for (prop, value) in limits {
                if let Some(limit) = SpaceLimit::from_prop(&prop) {
                    let bytes: u64 = value.parse().unwrap_or(0);
                    let stored = limit.get(&kept, self.ref_limits(*dir));
                    if stored != bytes {
                        audit
                            .mismatches
                            .push(format!("{name}: {prop}={bytes} but {stored} is in force"));
                    }
                }
            }
            charged += kept.used(UsedKind::Head) + kept.used(UsedKind::Snap);
            let head = self.head_phys(kept.head_dataset)?;
            let kept_head = (
                head.referenced_bytes,
                head.compressed_bytes,
                head.uncompressed_bytes,
                head.unique_bytes,
            );
            let want_head = (
                figures.head.allocated_bytes,
                figures.head.physical_bytes,
                figures.head.logical_bytes,
                figures.unique_bytes,
            );
            if kept_head != want_head {
                audit.mismatches.push(format!(
                    "{name}: head (refer, compressed, logical, unique) kept {kept_head:?}, recomputed {want_head:?}"
                ));
            }
            for (object, space) in &figures.snapshots {
                let phys = self.read_dataset_phys(*object)?;
                let kept_snap = (
                    phys.referenced_bytes,
                    phys.compressed_bytes,
                    phys.uncompressed_bytes,
                );
                let want = (
                    space.allocated_bytes,
                    space.physical_bytes,
                    space.logical_bytes,
                );
                if kept_snap != want {
                    audit.mismatches.push(format!(
                        "{name}: snapshot {object} kept {kept_snap:?}, recomputed {want:?}"
                    ));
                }
            }
        }
        let data = BlockSpace::of_all(&self.root, reachable.values());
        if charged != data.allocated_bytes {
            audit.mismatches.push(format!(
                "USEDDS + USEDSNAP over all filesystems is {charged}, but the reachable blocks take {}",
                data.allocated_bytes
            ));
        }
        let mos_bp = self.mos_root_bp();
        let mos_blocks = self.tree_blocks(0, &mos_bp)?;
        audit.mos_bytes = mos_blocks.iter().map(allocated).sum();
        // `$MOS` holds the MOS's blocks but those of the last sync pass (charged at the next).
        let root = self.dp.directory.root_dir;
        if let Some(mos_dir) = self.child_dir(root, super::pool::MOS_DIR_NAME)? {
            let charged = self.read_dir(mos_dir)?.used_bytes;
            let pending = self.dp.mos_space_delta.used;
            let mos = BlockSpace::of_all(&self.root, &mos_blocks).allocated_bytes;
            if super::space::apply(charged, pending) != mos {
                audit.mismatches.push(format!(
                    "$MOS holds {charged} (+ {pending} pending), but the MOS takes {mos}"
                ));
            }
        }
        audit.data_bytes = reachable.values().map(allocated).sum();
        {
            let allocator = self.zio.allocator.lock();
            audit.allocated_bytes = allocator.allocated_bytes();
            audit.deferred_bytes = allocator.deferred_bytes();
        }
        audit.log_bytes = self.zil_held_bytes(false);
        let accounted = audit.mos_bytes + audit.data_bytes + audit.deferred_bytes + audit.log_bytes;
        if accounted != audit.allocated_bytes {
            audit.mismatches.push(format!(
                "allocated {} but MOS {} + data {} + deferred frees {} + intent logs {} = {accounted} (leak or double free)",
                audit.allocated_bytes,
                audit.mos_bytes,
                audit.data_bytes,
                audit.deferred_bytes,
                audit.log_bytes
            ));
        }
        Ok(audit)
    }

    /// Writes the recomputed figures into every dir, head and snapshot record (import of a
    /// pool whose format did not keep them). The limits come from the properties.
    pub(crate) fn rebuild_space_accounting(&mut self) -> Result<(), SpaError> {
        for name in self.dataset_names()? {
            let Some(dir) = self.lookup_dir(&name)? else {
                continue;
            };
            let mut phys = self.read_dir(dir)?;
            for (prop, value) in self.local_props(&name)? {
                let bytes = value.parse().unwrap_or(0);
                match SpaceLimit::from_prop(&prop) {
                    Some(SpaceLimit::Quota) => phys.quota_bytes = bytes,
                    Some(SpaceLimit::Reservation) => phys.reserved_bytes = bytes,
                    Some(SpaceLimit::Refquota | SpaceLimit::Refreservation) | None => {}
                }
            }
            self.write_dir(dir, &phys)?;
        }
        self.load_ref_limits()?;
        let (all, _) = self.recompute()?;
        for (_, dir, figures) in all {
            let mut phys = self.read_dir(dir)?;
            phys.used_bytes = figures.dir.used_bytes;
            phys.compressed_bytes = figures.dir.compressed_bytes;
            phys.uncompressed_bytes = figures.dir.uncompressed_bytes;
            phys.used_breakdown = figures.dir.used_breakdown;
            self.write_dir(dir, &phys)?;
            let dataset = phys.head_dataset;
            let mut head = self.head_phys(dataset)?;
            head.compressed_bytes = figures.head.physical_bytes;
            head.uncompressed_bytes = figures.head.logical_bytes;
            head.unique_bytes = figures.unique_bytes;
            self.store_head_phys(dataset, head)?;
            for (object, space) in figures.snapshots {
                let mut snapshot = self.read_dataset_phys(object)?;
                snapshot.compressed_bytes = space.physical_bytes;
                snapshot.uncompressed_bytes = space.logical_bytes;
                let ctx = io_ctx!(self);
                self.dp.mos.set_bonus(
                    &ctx,
                    crate::types::ObjectId(object),
                    &snapshot.encode(self.dp.mos.dsl_origin),
                )?;
            }
        }
        Ok(())
    }
}
