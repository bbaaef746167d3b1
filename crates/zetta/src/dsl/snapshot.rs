//! Snapshots (OpenZFS `dsl_dataset_snapshot`): a read-only dataset sharing its dir with the
//! head, taken in one txg and O(1) in the dataset's size.
//!
//! Taking one commits the open txg, then records a new DSL_DATASET whose object-set block
//! pointer is the head's as of that commit, names it in the head's snapshot-names ZAP, and
//! moves the head's `prev_snap`/`prev_snap_txg` to it. From then on the head's object set
//! hands every block born at or before that txg that it stops referencing to the head's
//! dead list (a MOS object of 128-byte block pointers appended in the same txg) instead of
//! freeing it, so the snapshot's tree stays intact. Snapshot destroy (which frees dead-list
//! blocks born after the previous snapshot) takes the head's or next snapshot's dead list
//! apart (see `destroy_snapshot`).

use super::phys::{DslDatasetPhys, UsedKind};
use super::space::SpaceDelta;
use super::zap_error;
use crate::dmu::{default_data_props, object_type, DmuError, IoCtx, ObjectSet};
use crate::spa::{dataset_policy, now_secs, Spa, SpaError, MOS_OBJECT_ROOT_DATASET};
use crate::types::{Guid, ObjectId, Txg};
use crate::zap::{self, ZapValue};
use crate::zio::blkptr::{BlockPointer, BLKPTR_SIZE_BYTES};

/// Dataset flag: this dataset is a snapshot.
pub const DS_FLAG_SNAPSHOT: u64 = 1;

/// Appends released-but-snapshotted blocks to a head's dead list (creating it on first
/// use) and returns their allocated bytes.
pub fn append_dead_list(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    head: &mut DslDatasetPhys,
    dead: &[BlockPointer],
) -> Result<u64, DmuError> {
    if dead.is_empty() {
        return Ok(0);
    }
    if head.deadlist == 0 {
        head.deadlist = mos
            .create_object(ctx, object_type::DEAD_LIST, 16384, 0, 0)?
            .0;
    }
    let mut bytes = Vec::with_capacity(dead.len() * BLKPTR_SIZE_BYTES);
    for bp in dead {
        bytes.extend_from_slice(&bp.to_bytes());
    }
    let end = mos.size_bytes(ctx, ObjectId(head.deadlist))?;
    mos.write(ctx, ObjectId(head.deadlist), end, &bytes)?;
    Ok(dead.iter().map(|bp| ctx.root.dsize_bytes(bp)).sum())
}

impl Spa {
    pub(super) fn head_phys(&mut self, dataset: u64) -> Result<DslDatasetPhys, SpaError> {
        if let Some(head) = self.datasets.get(&dataset) {
            return Ok(head.phys.clone());
        }
        self.read_dataset_phys(dataset)
    }

    pub(super) fn store_head_phys(
        &mut self,
        dataset: u64,
        phys: DslDatasetPhys,
    ) -> Result<(), SpaError> {
        let txg = Txg(phys.prev_snap_txg);
        if dataset == MOS_OBJECT_ROOT_DATASET.0 {
            self.root_dataset.policy.prev_snap_txg = txg;
        } else if let Some(head) = self.datasets.get_mut(&dataset) {
            head.objset.policy.prev_snap_txg = txg;
            head.phys = phys.clone();
        }
        let ctx = io_ctx!(self);
        self.mos
            .set_bonus(&ctx, ObjectId(dataset), &phys.encode())?;
        Ok(())
    }

    /// `zfs snapshot fs@a fs2@b …`: all in one txg (atomic across them).
    pub fn snapshot(&mut self, names: &[String]) -> Result<(), SpaError> {
        self.snapshot_as(names, None)
    }

    /// `snapshot`, with the guid and creation time given instead of new ones when
    /// `identity` is set: a received snapshot keeps the sender's (`zfs receive`).
    pub fn snapshot_as(
        &mut self,
        names: &[String],
        identity: Option<(Guid, u64)>,
    ) -> Result<(), SpaError> {
        let mut targets = Vec::new();
        for full in names {
            let Some((fs, snap)) = full.split_once('@') else {
                return Err(SpaError::Invalid(format!(
                    "cannot create snapshot '{full}': not a snapshot name"
                )));
            };
            let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
                SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
            })?;
            self.open_dataset(dataset)?;
            if self.snapshot_object(dataset, snap)?.is_some() {
                return Err(SpaError::Invalid(format!(
                    "cannot create snapshot '{full}': dataset already exists"
                )));
            }
            // Two snapshots of one filesystem in one txg would share a creation txg and
            // leave the snapshot chain without an order.
            if targets.iter().any(|(other, _)| *other == dataset) {
                return Err(SpaError::Invalid(
                    "cannot create snapshots : multiple snapshots of same fs not allowed"
                        .to_string(),
                ));
            }
            targets.push((dataset, snap.to_string()));
        }
        // Commit what the heads hold now; the snapshots capture exactly this txg.
        self.sync()?;
        for ((dataset, _), full) in targets.iter().zip(names) {
            self.snapshot_reserve_space(*dataset, full)?;
        }
        let txg = self.last_synced_txg();
        for (dataset, snap) in targets {
            let mut head = self.head_phys(dataset)?;
            if dataset == MOS_OBJECT_ROOT_DATASET.0 {
                head.bp = self.root_bp();
            }
            let ctx = io_ctx!(self);
            let object = self
                .mos
                .create_object(&ctx, object_type::DSL_DATASET, 512, 0, 256)?;
            let phys = DslDatasetPhys {
                bp: head.bp,
                dir: head.dir,
                prev_snap: head.prev_snap,
                prev_snap_txg: head.prev_snap_txg,
                referenced_bytes: head.referenced_bytes,
                compressed_bytes: head.compressed_bytes,
                uncompressed_bytes: head.uncompressed_bytes,
                creation_txg: txg.0,
                creation_time: identity.map_or_else(now_secs, |(_, time)| time),
                guid: identity.map_or_else(Guid::random, |(guid, _)| guid).0,
                flags: DS_FLAG_SNAPSHOT,
                // Blocks that died since the previous snapshot belong to this one's dead
                // list; the head starts a new one.
                deadlist: head.deadlist,
                ..DslDatasetPhys::default()
            };
            head.deadlist = 0;
            self.mos.set_bonus(&ctx, object, &phys.encode())?;
            if head.snapnames_zap == 0 {
                head.snapnames_zap = zap::zap_create(&mut self.mos, &ctx, object_type::ZAP)
                    .map_err(zap_error)?
                    .0;
            }
            zap::zap_add(
                &mut self.mos,
                &ctx,
                ObjectId(head.snapnames_zap),
                &snap,
                &[object.0],
            )
            .map_err(zap_error)?;
            head.prev_snap = object.0;
            head.prev_snap_txg = txg.0;
            // Everything the head holds is shared with the snapshot now: a refreservation
            // is charged in full again.
            self.set_head_unique(&mut head, 0)?;
            self.store_head_phys(dataset, head)?;
        }
        self.sync()?;
        Ok(())
    }

    pub(super) fn snapshot_object(
        &mut self,
        dataset: u64,
        snap: &str,
    ) -> Result<Option<u64>, SpaError> {
        let head = self.head_phys(dataset)?;
        if head.snapnames_zap == 0 {
            return Ok(None);
        }
        let ctx = io_ctx!(self);
        let found = zap::zap_lookup(&self.mos, &ctx, ObjectId(head.snapnames_zap), snap)
            .map_err(zap_error)?;
        Ok(found.and_then(|v| v.first().copied()))
    }

    /// Snapshots of a filesystem, oldest first: (name, dataset object, record).
    pub fn snapshots(&mut self, fs: &str) -> Result<Vec<(String, u64, DslDatasetPhys)>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            if f.view.lookup_dataset(fs).is_none() {
                return Err(SpaError::Invalid(format!(
                    "cannot open '{fs}': dataset does not exist"
                )));
            }
            return Ok(f.view.snapshots(fs));
        }
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
        })?;
        let head = self.head_phys(dataset)?;
        let mut out = Vec::new();
        if head.snapnames_zap == 0 {
            return Ok(out);
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.mos, &ctx, ObjectId(head.snapnames_zap)).map_err(zap_error)?;
        for entry in entries {
            if let ZapValue::U64s(values) = entry.value {
                if let Some(&object) = values.first() {
                    let phys = self.read_dataset_phys(object)?;
                    out.push((
                        format!("{fs}@{}", String::from_utf8_lossy(&entry.name)),
                        object,
                        phys,
                    ));
                }
            }
        }
        out.sort_by_key(|(_, _, phys)| phys.creation_txg);
        Ok(out)
    }

    /// Read-only access to a snapshot's object set (`fs@snap`).
    pub fn with_snapshot<T>(
        &mut self,
        full: &str,
        work: impl FnOnce(&mut ObjectSet, &IoCtx<'_>) -> Result<T, DmuError>,
    ) -> Result<T, SpaError> {
        if self.openzfs.is_some() {
            // A foreign pool's object sets are read through the OpenZFS codecs (its
            // mounts, `zpool scrub`), not as Zetta object sets.
            return Err(SpaError::Invalid(
                "operation not supported on OpenZFS pools yet".to_string(),
            ));
        }
        let (fs, snap) = full
            .split_once('@')
            .ok_or_else(|| SpaError::Invalid(format!("'{full}' is not a snapshot name")))?;
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
        })?;
        let object = self.snapshot_object(dataset, snap)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{full}': dataset does not exist"))
        })?;
        let phys = self.read_dataset_phys(object)?;
        let ctx = io_ctx!(self);
        let mut objset =
            ObjectSet::open(&ctx, object, &phys.bp, dataset_policy(default_data_props()))?;
        Ok(work(&mut objset, &ctx)?)
    }

    /// Every snapshot's committed root, for scrub (their blocks may be referenced by no
    /// head any more).
    pub(crate) fn snapshot_roots(&mut self) -> Result<Vec<(u64, BlockPointer)>, SpaError> {
        let mut roots = Vec::new();
        for name in self.dataset_names()? {
            for (_, object, phys) in self.snapshots(&name)? {
                if !phys.bp.is_hole() {
                    roots.push((object, phys.bp));
                }
            }
        }
        Ok(roots)
    }
}

impl Spa {
    pub(super) fn read_dead_list(&mut self, object: u64) -> Result<Vec<BlockPointer>, SpaError> {
        if object == 0 {
            return Ok(Vec::new());
        }
        let ctx = io_ctx!(self);
        let size = self.mos.size_bytes(&ctx, ObjectId(object))?;
        let bytes = self.mos.read(&ctx, ObjectId(object), 0, size as usize)?;
        bytes
            .chunks_exact(BLKPTR_SIZE_BYTES)
            .map(|chunk| {
                BlockPointer::decode(chunk)
                    .map_err(|e| SpaError::Corrupt(format!("dead list {object}: {e}")))
            })
            .collect()
    }

    /// `zfs destroy fs@snap` (OpenZFS `dsl_destroy_snapshot`): the blocks only this snapshot
    /// held — those in the next dataset's dead list born after the previous snapshot — are
    /// freed; the rest of that dead list and this snapshot's own dead list become the next
    /// dataset's dead list, and the next dataset's previous snapshot becomes this one's.
    pub fn destroy_snapshot(&mut self, full: &str) -> Result<(), SpaError> {
        let (fs, snap) = full
            .split_once('@')
            .ok_or_else(|| SpaError::Invalid(format!("'{full}' is not a snapshot name")))?;
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(
                "could not find any snapshots to destroy; check snapshot names.".to_string(),
            )
        })?;
        self.open_dataset(dataset)?;
        // Pending releases of the head land in its dead list first.
        self.sync()?;
        let snapshots = self.snapshots(fs)?;
        let Some(index) = snapshots.iter().position(|(name, _, _)| name == full) else {
            return Err(SpaError::Invalid(
                "could not find any snapshots to destroy; check snapshot names.".to_string(),
            ));
        };
        let (_, object, victim) = snapshots[index].clone();
        if !self.holds(full)?.is_empty() {
            return Err(SpaError::Invalid(format!(
                "cannot destroy snapshot {full}: dataset is busy"
            )));
        }
        let clones = self.dependent_clones(object)?;
        if !clones.is_empty() {
            return Err(SpaError::Invalid(format!(
                "cannot destroy '{full}': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\n{}",
                clones.join("\n")
            )));
        }
        let (next_object, mut next) = match snapshots.get(index + 1) {
            Some((_, object, phys)) => (*object, phys.clone()),
            None => (dataset, self.head_phys(dataset)?),
        };
        let txg = self.open_txg();
        let mut kept = Vec::new();
        let mut freed = Vec::new();
        for bp in self.read_dead_list(next.deadlist)? {
            if bp.birth_txg.0 > victim.prev_snap_txg {
                self.zio.free_block(&bp, true, txg);
                freed.push(bp);
            } else {
                kept.push(bp);
            }
        }
        // What it alone held was the dir's USEDSNAP (born after its previous snapshot,
        // so after the dir's origin).
        let freed = crate::dmu::BlockSpace::of_all(&self.root, &freed);
        self.space_diduse(victim.dir, UsedKind::Snap, SpaceDelta::lost(&freed))?;
        kept.extend(self.read_dead_list(victim.deadlist)?);
        let ctx = io_ctx!(self);
        for old in [next.deadlist, victim.deadlist] {
            if old != 0 {
                self.mos.free_object(&ctx, ObjectId(old))?;
            }
        }
        next.deadlist = 0;
        append_dead_list(&mut self.mos, &ctx, &mut next, &kept)?;
        next.prev_snap = victim.prev_snap;
        next.prev_snap_txg = victim.prev_snap_txg;
        let head = self.head_phys(dataset)?;
        if next_object == dataset {
            // Blocks the head shared only with the victim are its own now
            // (`dsl_dataset_recalc_head_uniq`).
            let unique = self.recalc_head_unique(&next, &kept)?;
            self.set_head_unique(&mut next, unique)?;
            self.store_head_phys(dataset, next)?;
        } else {
            let ctx = io_ctx!(self);
            self.mos
                .set_bonus(&ctx, ObjectId(next_object), &next.encode())?;
        }
        let ctx = io_ctx!(self);
        zap::zap_remove(&mut self.mos, &ctx, ObjectId(head.snapnames_zap), snap)
            .map_err(zap_error)?;
        self.mos.free_object(&ctx, ObjectId(object))?;
        self.sync()?;
        Ok(())
    }
}

impl Spa {
    fn dead_list_bytes(&mut self, object: u64, born_after_txg: u64) -> Result<u64, SpaError> {
        let dead = self.read_dead_list(object)?;
        Ok(dead
            .iter()
            .filter(|bp| bp.birth_txg.0 > born_after_txg)
            .map(|bp| self.root.dsize_bytes(bp))
            .sum())
    }

    /// A snapshot's USED: the bytes only it holds — blocks in the next dataset's dead list
    /// born after the previous snapshot (what destroying it would free).
    pub fn snapshot_used_bytes(&mut self, full: &str) -> Result<u64, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return f.view.snapshot_used_bytes(full).ok_or_else(|| {
                SpaError::Invalid(format!("cannot open '{full}': dataset does not exist"))
            });
        }
        let fs = full.split('@').next().unwrap_or(full);
        let snapshots = self.snapshots(fs)?;
        let Some(index) = snapshots.iter().position(|(name, _, _)| name == full) else {
            return Err(SpaError::Invalid(format!(
                "cannot open '{full}': dataset does not exist"
            )));
        };
        let prev_txg = snapshots[index].2.prev_snap_txg;
        let next_deadlist = match snapshots.get(index + 1) {
            Some((_, _, phys)) => phys.deadlist,
            None => {
                let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
                    SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
                })?;
                self.head_phys(dataset)?.deadlist
            }
        };
        self.dead_list_bytes(next_deadlist, prev_txg)
    }

    /// Unique bytes of a head whose dead list is `dead` (OpenZFS
    /// `dsl_dataset_recalc_head_uniq`): REFER less what it shares with its previous
    /// snapshot, which is that snapshot's REFER less the blocks the head released from it.
    pub(super) fn recalc_head_unique(
        &mut self,
        head: &DslDatasetPhys,
        dead: &[BlockPointer],
    ) -> Result<u64, SpaError> {
        let previous = if head.prev_snap == 0 {
            0
        } else {
            self.read_dataset_phys(head.prev_snap)?.referenced_bytes
        };
        let released = crate::dmu::BlockSpace::of_all(&self.root, dead).allocated_bytes;
        let shared = previous.saturating_sub(released);
        Ok(head.referenced_bytes.saturating_sub(shared))
    }

    /// OpenZFS `dsl_dataset_snapshot_reserve_space`: with a refreservation, the blocks the
    /// snapshot takes over from it must fit outside it.
    fn snapshot_reserve_space(&mut self, dataset: u64, full: &str) -> Result<(), SpaError> {
        let head = self.head_phys(dataset)?;
        let dir = self.read_dir(head.dir)?;
        let claimed = head.unique_bytes.min(dir.refreserved_bytes);
        if claimed > 0 && claimed > self.dir_available_bytes(head.dir)? {
            return Err(SpaError::Invalid(format!(
                "cannot create snapshot '{full}': out of space"
            )));
        }
        Ok(())
    }

    /// A filesystem's USEDSNAP: every block its snapshots hold that the head no longer
    /// references.
    pub fn used_by_snapshots_bytes(&mut self, fs: &str) -> Result<u64, SpaError> {
        Ok(self.dir_used_breakdown(fs)?.1[UsedKind::Snap as usize])
    }
}

impl Spa {
    /// `zfs rollback fs@snap` to the newest snapshot (the caller destroys newer ones first,
    /// as `-r` does): the head takes the snapshot's tree again, the blocks it wrote since are
    /// freed, and its dead list (blocks the snapshot still has) becomes live again.
    pub fn rollback(&mut self, full: &str) -> Result<(), SpaError> {
        let (fs, _) = full
            .split_once('@')
            .ok_or_else(|| SpaError::Invalid(format!("'{full}' is not a snapshot name")))?;
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
        })?;
        self.open_dataset(dataset)?;
        self.sync()?;
        let snapshots = self.snapshots(fs)?;
        let Some(index) = snapshots.iter().position(|(name, _, _)| name == full) else {
            return Err(SpaError::Invalid(format!(
                "cannot open '{full}': dataset does not exist"
            )));
        };
        if index + 1 != snapshots.len() {
            let newer: Vec<String> = snapshots[index + 1..]
                .iter()
                .map(|(n, _, _)| n.clone())
                .collect();
            return Err(SpaError::Invalid(format!(
                "cannot rollback to '{full}': more recent snapshots or bookmarks exist\nuse '-r' to force deletion of the following snapshots and bookmarks:\n{}",
                newer.join("\n")
            )));
        }
        let snap = snapshots[index].2.clone();
        let head = self.head_phys(dataset)?;
        let head_bp = if dataset == MOS_OBJECT_ROOT_DATASET.0 {
            self.root_bp()
        } else {
            head.bp
        };
        // Everything the head wrote after the snapshot goes.
        let freed = self.free_blocks_born_after(dataset, &head_bp, snap.creation_txg)?;
        self.space_diduse(head.dir, UsedKind::Head, SpaceDelta::lost(&freed))?;
        // The snapshot's blocks the head had released are live again: no dead list, and
        // those this dir was charged for count as the head's again.
        let dir = self.read_dir(head.dir)?;
        let ctx = io_ctx!(self);
        let origin = super::space::origin_txg(&mut self.mos, &ctx, &dir)?;
        let revived: Vec<BlockPointer> = self
            .read_dead_list(head.deadlist)?
            .into_iter()
            .filter(|bp| bp.birth_txg.0 > origin)
            .collect();
        let revived = crate::dmu::BlockSpace::of_all(&self.root, &revived).allocated_bytes;
        self.space_transfer(
            head.dir,
            i64::try_from(revived).unwrap_or(i64::MAX),
            UsedKind::Snap,
            UsedKind::Head,
        )?;
        self.replace_head_tree(dataset, head, &snap, 0, 0)?;
        self.refresh_io_props()?;
        self.sync()?;
        Ok(())
    }

    /// Points a head at another tree (rollback, receive): `source`'s tree and its REFER and
    /// logical sums; its dead list object goes and `deadlist` takes its place, its unique
    /// bytes become `unique`; the object set is reopened, the record stored. The caller
    /// has moved the dir's HEAD and SNAP.
    pub(super) fn replace_head_tree(
        &mut self,
        dataset: u64,
        mut head: DslDatasetPhys,
        source: &DslDatasetPhys,
        deadlist: u64,
        unique: u64,
    ) -> Result<(), SpaError> {
        // Loaded, so the old tree's intent log can be freed below.
        self.open_dataset(dataset)?;
        self.set_head_unique(&mut head, unique)?;
        let ctx = io_ctx!(self);
        if head.deadlist != 0 {
            self.mos.free_object(&ctx, ObjectId(head.deadlist))?;
        }
        let bp = source.bp;
        head.deadlist = deadlist;
        head.bp = bp;
        head.referenced_bytes = source.referenced_bytes;
        head.compressed_bytes = source.compressed_bytes;
        head.uncompressed_bytes = source.uncompressed_bytes;
        let mut objset = ObjectSet::open(&ctx, dataset, &bp, dataset_policy(default_data_props()))?;
        objset.policy.prev_snap_txg = Txg(head.prev_snap_txg);
        // The old tree's log goes with it; the new one comes from a snapshot (no log).
        crate::zil::forget(&mut objset);
        if dataset == MOS_OBJECT_ROOT_DATASET.0 {
            crate::zil::discard(&mut self.root_dataset, &ctx);
            self.set_root_objset(objset, bp);
        } else if let Some(loaded) = self.datasets.get_mut(&dataset) {
            crate::zil::discard(&mut loaded.objset, &ctx);
            loaded.objset = objset;
        }
        self.store_head_phys(dataset, head)
    }
}

/// A bookmark: what remains of a snapshot for incremental sends (OpenZFS `dsl_bookmark`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bookmark {
    pub name: String,
    pub guid: u64,
    pub creation_txg: u64,
    pub creation_time: u64,
}

impl Spa {
    /// `zfs bookmark fs@snap fs#mark`.
    pub fn create_bookmark(&mut self, snapshot: &str, bookmark: &str) -> Result<(), SpaError> {
        let fs = snapshot.split('@').next().unwrap_or(snapshot);
        let Some((bookmark_fs, mark)) = bookmark.split_once('#') else {
            return Err(SpaError::Invalid(format!(
                "cannot create bookmark '{bookmark}': invalid bookmark name"
            )));
        };
        if bookmark_fs != fs {
            return Err(SpaError::Invalid(format!(
                "cannot create bookmark '{bookmark}': must be in the same filesystem as the snapshot"
            )));
        }
        let (_, _, phys) = self
            .snapshots(fs)?
            .into_iter()
            .find(|(n, _, _)| n == snapshot)
            .ok_or_else(|| {
                SpaError::Invalid(format!("cannot open '{snapshot}': dataset does not exist"))
            })?;
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
        })?;
        self.open_dataset(dataset)?;
        let mut head = self.head_phys(dataset)?;
        let ctx = io_ctx!(self);
        if head.bookmarks_zap == 0 {
            head.bookmarks_zap = zap::zap_create(&mut self.mos, &ctx, object_type::ZAP)
                .map_err(zap_error)?
                .0;
        }
        let value = [phys.guid, phys.creation_txg, phys.creation_time];
        match zap::zap_add(
            &mut self.mos,
            &ctx,
            ObjectId(head.bookmarks_zap),
            mark,
            &value,
        ) {
            Ok(()) => {}
            Err(crate::zap::ZapError::Exists) => {
                return Err(SpaError::Invalid(format!(
                    "cannot create bookmark '{bookmark}': bookmark exists"
                )));
            }
            Err(e) => return Err(zap_error(e)),
        }
        self.store_head_phys(dataset, head)?;
        self.sync()?;
        Ok(())
    }

    /// The bookmarks of a filesystem, oldest first.
    pub fn bookmarks(&mut self, fs: &str) -> Result<Vec<Bookmark>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.bookmarks(fs));
        }
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
        })?;
        let head = self.head_phys(dataset)?;
        let mut out = Vec::new();
        if head.bookmarks_zap == 0 {
            return Ok(out);
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.mos, &ctx, ObjectId(head.bookmarks_zap)).map_err(zap_error)?;
        for entry in entries {
            if let ZapValue::U64s(values) = entry.value {
                if let [guid, creation_txg, creation_time] = values[..] {
                    out.push(Bookmark {
                        name: format!("{fs}#{}", String::from_utf8_lossy(&entry.name)),
                        guid,
                        creation_txg,
                        creation_time,
                    });
                }
            }
        }
        out.sort_by_key(|b| b.creation_txg);
        Ok(out)
    }

    /// `zfs destroy fs#mark`.
    pub fn destroy_bookmark(&mut self, bookmark: &str) -> Result<(), SpaError> {
        let (fs, mark) = bookmark
            .split_once('#')
            .ok_or_else(|| SpaError::Invalid(format!("'{bookmark}' is not a bookmark name")))?;
        let dataset = self.lookup_dataset(fs)?.ok_or_else(|| {
            SpaError::Invalid(format!("cannot open '{fs}': dataset does not exist"))
        })?;
        let head = self.head_phys(dataset)?;
        let ctx = io_ctx!(self);
        if head.bookmarks_zap == 0 {
            return Err(SpaError::Invalid(format!(
                "cannot destroy '{bookmark}': bookmark does not exist"
            )));
        }
        match zap::zap_remove(&mut self.mos, &ctx, ObjectId(head.bookmarks_zap), mark) {
            Ok(()) => {}
            Err(crate::zap::ZapError::NotFound) => {
                return Err(SpaError::Invalid(format!(
                    "cannot destroy '{bookmark}': bookmark does not exist"
                )));
            }
            Err(e) => return Err(zap_error(e)),
        }
        self.sync()?;
        Ok(())
    }
}

impl Spa {
    fn snapshot_record(&mut self, full: &str) -> Result<(u64, DslDatasetPhys), SpaError> {
        let fs = full.split('@').next().unwrap_or(full);
        self.snapshots(fs)?
            .into_iter()
            .find(|(n, _, _)| n == full)
            .map(|(_, object, phys)| (object, phys))
            .ok_or_else(|| {
                SpaError::Invalid(format!("cannot open '{full}': dataset does not exist"))
            })
    }

    /// `zfs hold tag fs@snap`: the snapshot cannot be destroyed until every tag is released.
    pub fn hold(&mut self, tag: &str, full: &str) -> Result<(), SpaError> {
        let (object, mut phys) = self.snapshot_record(full)?;
        let ctx = io_ctx!(self);
        if phys.holds_zap == 0 {
            phys.holds_zap = zap::zap_create(&mut self.mos, &ctx, object_type::ZAP)
                .map_err(zap_error)?
                .0;
            self.mos.set_bonus(&ctx, ObjectId(object), &phys.encode())?;
        }
        match zap::zap_add(
            &mut self.mos,
            &ctx,
            ObjectId(phys.holds_zap),
            tag,
            &[now_secs()],
        ) {
            Ok(()) => {}
            Err(crate::zap::ZapError::Exists) => {
                return Err(SpaError::Invalid(format!(
                    "cannot hold snapshot '{full}': tag already exists on this dataset"
                )));
            }
            Err(e) => return Err(zap_error(e)),
        }
        self.sync()?;
        Ok(())
    }

    /// `zfs release tag fs@snap`.
    pub fn release(&mut self, tag: &str, full: &str) -> Result<(), SpaError> {
        let (_, phys) = self.snapshot_record(full)?;
        let ctx = io_ctx!(self);
        let removed = if phys.holds_zap == 0 {
            Err(crate::zap::ZapError::NotFound)
        } else {
            zap::zap_remove(&mut self.mos, &ctx, ObjectId(phys.holds_zap), tag)
        };
        match removed {
            Ok(()) => {}
            Err(crate::zap::ZapError::NotFound) => {
                return Err(SpaError::Invalid(format!(
                    "cannot release hold from snapshot '{full}': no such tag on this dataset"
                )));
            }
            Err(e) => return Err(zap_error(e)),
        }
        self.sync()?;
        Ok(())
    }

    /// The holds on a snapshot: (tag, time), by tag.
    pub fn holds(&mut self, full: &str) -> Result<Vec<(String, u64)>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.holds(full));
        }
        let (_, phys) = self.snapshot_record(full)?;
        let mut out = Vec::new();
        if phys.holds_zap == 0 {
            return Ok(out);
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.mos, &ctx, ObjectId(phys.holds_zap)).map_err(zap_error)?;
        for entry in entries {
            if let ZapValue::U64s(values) = entry.value {
                out.push((
                    String::from_utf8_lossy(&entry.name).into_owned(),
                    values.first().copied().unwrap_or(0),
                ));
            }
        }
        out.sort();
        Ok(out)
    }
}
