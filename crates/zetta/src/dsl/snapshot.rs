//! Snapshots (OpenZFS `dsl_dataset_snapshot`): a read-only dataset sharing its dir with the
//! head, taken in one txg and O(1) in the dataset's size.
//!
//! Taking one is a sync task (`synctask`): in the syncing context of the txg it is
//! assigned to, after the head's object set is written in that txg, it records a new
//! DSL_DATASET whose object-set block pointer is the head's as written in that very txg
//! (its creation txg), names it in the head's snapshot-names ZAP, and moves the head's
//! `prev_snap`/`prev_snap_txg` to it; `zfs snapshot -r` of any tree is one txg. From then on the head's object set
//! hands every block born at or before that txg that it stops referencing to the head's
//! dead list (an OpenZFS bpobj: 128-byte block pointers appended in the same txg) instead of
//! freeing it, so the snapshot's tree stays intact. Snapshot destroy (which frees dead-list
//! blocks born after the previous snapshot) takes the head's or next snapshot's dead list
//! apart (see `destroy_snapshot`).

use super::openzfs::dataset::DS_FLAG_DEFER_DESTROY;
use super::openzfs::ot;
use super::phys::{DslDatasetPhys, UsedKind, DSL_DATASET_BONUS_BYTES, DS_FLAG_UNIQUE_ACCURATE};
use super::space::SpaceDelta;
use super::synctask::{SyncTaskId, SyncTx};
use super::{no_such_dataset, zap_error, DslError};
use crate::dmu::{default_data_props, object_type, DmuError, IoCtx, ObjectSet};
use crate::spa::zfeature::FeatureState;
use crate::spa::{dataset_policy, now_secs, Spa, SpaError};
use crate::types::{Guid, ObjectId, Txg};
use crate::zap::{self, ZapValue};
use crate::zio::blkptr::{BlockPointer, BLKPTR_SIZE_BYTES};

/// `bpobj_phys_t` up to `bpo_num_subobjs` (OpenZFS's `BPOBJ_SIZE_V2`): what a bpobj's bonus
/// holds from `SPA_VERSION_DEADLISTS` (26) on.
pub const BPOBJ_SIZE_V1: usize = 48;
/// `bpobj_phys_t` up to `bpo_uncomp` (OpenZFS's `BPOBJ_SIZE_V1`, zfs-fuse's `bplist_phys_t`):
/// a bpobj's bonus before version 26, when dead lists were bplists with no subobjects.
pub const BPOBJ_SIZE_BPLIST: usize = 32;
/// `SPA_VERSION_DEADLISTS`: bpobjs with subobjects, `$FREE`, `free_bpobj`, `dd_clones`.
pub const SPA_VERSION_DEADLISTS: u64 = 26;

/// The bonus size `bpobj_alloc` gives a new bpobj in a pool of `spa_version`.
pub fn bpobj_bonus_bytes(spa_version: u64) -> usize {
    if spa_version < SPA_VERSION_DEADLISTS {
        BPOBJ_SIZE_BPLIST
    } else {
        BPOBJ_SIZE_V1
    }
}
/// `SPA_OLD_MAXBLOCKSIZE`: a dead list's block size (`dsl_deadlist_alloc` of the old format).
const DEAD_LIST_BLOCK_BYTES: u32 = 128 << 10;

/// A new, empty dead list: an OpenZFS bpobj (`bpobj_alloc`: type BPOBJ, a zeroed
/// `bpobj_phys_t` bonus of type BPOBJ_HDR), which `dsl_deadlist_open` reads as the old
/// (single bpobj) deadlist format. Every dataset has one from its creation.
pub fn create_dead_list(mos: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<u64, DmuError> {
    create_bpobj(mos, ctx, DEAD_LIST_BLOCK_BYTES)
}

/// A new, empty bpobj with `block_bytes` blocks (`bpobj_alloc`): dead lists here, the
/// pool's `sync_bplist` and `free_bpobj` in `spa::directory`.
pub fn create_bpobj(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    block_bytes: u32,
) -> Result<u64, DmuError> {
    let size = bpobj_bonus_bytes(ctx.zio.spa_version());
    let object = mos.create_object(ctx, ot::BPOBJ, block_bytes, ot::BPOBJ_HDR, size)?;
    mos.set_bonus(ctx, object, &[0u8; BPOBJ_SIZE_V1][..size])?;
    Ok(object.0)
}

/// Appends released-but-snapshotted blocks to a head's dead list (`bpobj_enqueue`: the
/// block pointers at the end of the bpobj's array, its counts in the bonus:
/// `bpo_num_blkptrs`, `bpo_bytes` (dsize), `bpo_comp` (psize), `bpo_uncomp` (lsize)) and
/// returns their allocated bytes.
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
        head.deadlist = create_dead_list(mos, ctx)?;
    }
    let object = ObjectId(head.deadlist);
    let mut words = [0u64; BPOBJ_SIZE_V1 / 8];
    let bonus = mos.bonus(ctx, object)?;
    // A version-23 pool's bplist-sized header has no subobject words.
    let size = if bonus.len() == BPOBJ_SIZE_BPLIST {
        BPOBJ_SIZE_BPLIST
    } else {
        BPOBJ_SIZE_V1
    };
    for (i, word) in words.iter_mut().take(size / 8).enumerate() {
        let Some(bytes) = bonus.get(i * 8..i * 8 + 8) else {
            return Err(DmuError::Corrupt(format!(
                "dead list {object}: a {}-byte bpobj_phys_t",
                bonus.len()
            )));
        };
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        *word = u64::from_le_bytes(le);
    }
    let mut bytes = Vec::with_capacity(dead.len() * BLKPTR_SIZE_BYTES);
    for bp in dead {
        bytes.extend_from_slice(&bp.to_bytes());
    }
    let end = words[0] * BLKPTR_SIZE_BYTES as u64;
    mos.write(ctx, object, end, &bytes)?;
    let space = crate::dmu::BlockSpace::of_all(ctx.root, dead);
    words[0] += dead.len() as u64;
    words[1] += space.allocated_bytes;
    words[2] += space.physical_bytes;
    words[3] += space.logical_bytes;
    let mut bonus = Vec::with_capacity(size);
    for word in words.iter().take(size / 8) {
        bonus.extend_from_slice(&word.to_le_bytes());
    }
    mos.set_bonus(ctx, object, &bonus)?;
    Ok(space.allocated_bytes)
}

impl Spa {
    pub(super) fn head_phys(&self, dataset: u64) -> Result<DslDatasetPhys, SpaError> {
        if let Some(head) = self.dp.datasets.get(&dataset) {
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
        if dataset == self.dp.directory.root_dataset {
            self.dp.root_dataset.policy.prev_snap_txg = txg;
        } else if let Some(head) = self.dp.datasets.get_mut(&dataset) {
            head.objset.policy.prev_snap_txg = txg;
            head.phys = phys.clone();
        }
        let ctx = io_ctx!(self);
        self.dp.mos.set_bonus(
            &ctx,
            ObjectId(dataset),
            &phys.encode(self.dp.mos.dsl_origin),
        )?;
        Ok(())
    }

    /// `zfs snapshot fs@a fs2@b …`: all in one txg (atomic across them), one sync task.
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
        let task = self.snapshot_queue(names, identity)?;
        self.sync_task_wait(task)
    }

    /// The sync task of `snapshot_as` (OpenZFS `dsl_dataset_snapshot`), queued for the open
    /// txg without committing it: the caller commits (once, with its history line) and
    /// collects the result with `sync_task_result`. Refused here already when a name is
    /// wrong, a snapshot exists, or a refreservation's charge would not fit.
    pub fn snapshot_queue(
        &mut self,
        names: &[String],
        identity: Option<(Guid, u64)>,
    ) -> Result<SyncTaskId, SpaError> {
        self.snapshot_queue_with_props(names, identity, Vec::new())
    }

    /// `snapshot_queue` that also sets `props` (user properties, `zfs snapshot -o`) on each
    /// new snapshot in the same sync task (`snapshot_prop`).
    pub fn snapshot_queue_with_props(
        &mut self,
        names: &[String],
        identity: Option<(Guid, u64)>,
        props: Vec<(String, String)>,
    ) -> Result<SyncTaskId, SpaError> {
        let check_names = names.to_vec();
        let sync_names = names.to_vec();
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| spa.snapshot_check(&check_names).map(|_| ())),
            Box::new(move |spa, tx| {
                let targets = spa.snapshot_check(&sync_names)?;
                let created: Vec<(u64, String)> = targets
                    .iter()
                    .map(|(dataset, _, snap)| (*dataset, snap.clone()))
                    .collect();
                spa.snapshot_sync(tx, targets, identity)?;
                if props.is_empty() {
                    return Ok(());
                }
                for (dataset, snap) in created {
                    let object = spa
                        .snapshot_object(dataset, &snap)?
                        .ok_or_else(|| SpaError::Corrupt(format!("snapshot {snap} vanished")))?;
                    for (prop, value) in &props {
                        spa.write_snapshot_prop(object, tx.txg, prop, value)?;
                    }
                }
                Ok(())
            }),
        )
    }

    /// OpenZFS `dsl_dataset_snapshot_check`: every name is `fs@snap` of an existing
    /// filesystem, no snapshot of that name exists, one snapshot per filesystem, and a
    /// refreservation's charge fits. The targets: (head dataset, its name, snapshot name).
    fn snapshot_check(&mut self, names: &[String]) -> Result<Vec<(u64, String, String)>, SpaError> {
        let mut targets: Vec<(u64, String, String)> = Vec::new();
        for full in names {
            let Some((fs, snap)) = full.split_once('@') else {
                return Err(SpaError::Dsl(DslError::NotSnapshot { name: full.clone() }));
            };
            let dataset = self
                .lookup_dataset(fs)?
                .ok_or_else(|| no_such_dataset(fs))?;
            self.open_dataset(dataset)?;
            if self.snapshot_object(dataset, snap)?.is_some() {
                return Err(SpaError::Dsl(DslError::Exists { name: full.clone() }));
            }
            // Two snapshots of one filesystem in one txg would share a creation txg and
            // leave the snapshot chain without an order.
            if targets.iter().any(|(other, _, _)| *other == dataset) {
                return Err(SpaError::Dsl(DslError::SameFilesystemTwice {
                    name: fs.to_string(),
                }));
            }
            targets.push((dataset, fs.to_string(), snap.to_string()));
        }
        for ((dataset, _, _), full) in targets.iter().zip(names) {
            self.snapshot_reserve_space(*dataset, full)?;
        }
        Ok(targets)
    }

    /// OpenZFS `dsl_dataset_snapshot_sync_impl`, in the syncing context of `tx.txg`: each
    /// head's object set is already written in this txg, so the snapshot takes the head's
    /// tree, REFER and dead list as of this txg, and its creation txg is this txg.
    fn snapshot_sync(
        &mut self,
        tx: SyncTx,
        targets: Vec<(u64, String, String)>,
        identity: Option<(Guid, u64)>,
    ) -> Result<(), SpaError> {
        let txg = tx.txg;
        for (dataset, fs, snap) in targets {
            let mut head = self.head_phys(dataset)?;
            if dataset == self.dp.directory.root_dataset {
                head.bp = self.root_bp();
            }
            let ctx = io_ctx!(self, txg);
            let object = self.dp.mos.create_object(
                &ctx,
                object_type::DSL_DATASET,
                512,
                object_type::DSL_DATASET,
                DSL_DATASET_BONUS_BYTES,
            )?;
            let phys = DslDatasetPhys {
                bp: head.bp,
                dir: head.dir,
                prev_snap: head.prev_snap,
                prev_snap_txg: head.prev_snap_txg,
                // OpenZFS's chain: the snapshot is followed by its head, counts one child
                // (its next dataset) plus its clones, and has its head's flags.
                next_snap: dataset,
                num_children: 1,
                fsid_guid: super::phys::fsid_guid_random(),
                referenced_bytes: head.referenced_bytes,
                compressed_bytes: head.compressed_bytes,
                uncompressed_bytes: head.uncompressed_bytes,
                creation_txg: txg.0,
                creation_time: identity.map_or_else(now_secs, |(_, time)| time),
                guid: identity.map_or_else(Guid::random, |(guid, _)| guid).0,
                flags: head.flags | DS_FLAG_UNIQUE_ACCURATE,
                // Blocks that died since the previous snapshot belong to this one's dead
                // list; the head starts a new one.
                deadlist: head.deadlist,
                ..DslDatasetPhys::default()
            };
            head.deadlist = create_dead_list(&mut self.dp.mos, &ctx)?;
            self.dp
                .mos
                .set_bonus(&ctx, object, &phys.encode(self.dp.mos.dsl_origin))?;
            // The snapshot carries its head's per-dataset features
            // (`dsl_dataset_snapshot_sync_impl`).
            let features = FeatureState::dataset_features(&self.dp.mos, &ctx, dataset)?;
            self.dp.directory.features.activate_dataset(
                &mut self.dp.mos,
                &ctx,
                object.0,
                features,
            )?;
            // The previous snapshot of this head now leads to the new one (a clone's
            // origin, whose next is in its own chain, is left alone).
            if head.prev_snap != 0 {
                let mut prev = self.read_dataset_phys(head.prev_snap)?;
                if prev.next_snap == dataset {
                    prev.next_snap = object.0;
                    let ctx = io_ctx!(self, txg);
                    self.dp.mos.set_bonus(
                        &ctx,
                        ObjectId(head.prev_snap),
                        &prev.encode(self.dp.mos.dsl_origin),
                    )?;
                }
            }
            let ctx = io_ctx!(self, txg);
            if head.snapnames_zap == 0 {
                head.snapnames_zap = zap::zap_create(&mut self.dp.mos, &ctx, ot::DSL_DS_SNAP_MAP)
                    .map_err(zap_error)?
                    .0;
            }
            zap::zap_add(
                &mut self.dp.mos,
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
            self.log_history_internal_ds(tx, "snapshot", &format!("{fs}@{snap}"), object.0, " ");
        }
        Ok(())
    }

    pub(crate) fn snapshot_object(
        &self,
        dataset: u64,
        snap: &str,
    ) -> Result<Option<u64>, SpaError> {
        let head = self.head_phys(dataset)?;
        if head.snapnames_zap == 0 {
            return Ok(None);
        }
        let ctx = io_ctx!(self);
        let found = zap::zap_lookup(&self.dp.mos, &ctx, ObjectId(head.snapnames_zap), snap)
            .map_err(zap_error)?;
        Ok(found.and_then(|v| v.first().copied()))
    }

    /// Snapshots of a filesystem, oldest first: (name, dataset object, record).
    /// Sets `ds_next_snap_obj` along a head's chain as OpenZFS keeps it (each snapshot
    /// leads to the next newer one, the newest to the head), after a change that moves
    /// snapshots between chains (promote).
    pub(super) fn relink_snapshot_chain(&mut self, head_object: u64) -> Result<(), SpaError> {
        let head = self.head_phys(head_object)?;
        if head.snapnames_zap == 0 {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        let entries = zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(head.snapnames_zap))
            .map_err(zap_error)?;
        let mut chain = Vec::new();
        for entry in entries {
            if let ZapValue::U64s(values) = entry.value {
                if let Some(&object) = values.first() {
                    chain.push((self.read_dataset_phys(object)?, object));
                }
            }
        }
        chain.sort_by_key(|(phys, _)| phys.creation_txg);
        let nexts: Vec<u64> = chain
            .iter()
            .skip(1)
            .map(|(_, object)| *object)
            .chain([head_object])
            .collect();
        for ((mut phys, object), next) in chain.into_iter().zip(nexts) {
            if phys.next_snap != next {
                phys.next_snap = next;
                let ctx = io_ctx!(self);
                self.dp.mos.set_bonus(
                    &ctx,
                    ObjectId(object),
                    &phys.encode(self.dp.mos.dsl_origin),
                )?;
            }
        }
        Ok(())
    }

    pub fn snapshots(&self, fs: &str) -> Result<Vec<(String, u64, DslDatasetPhys)>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            if f.view.lookup_dataset(fs).is_none() {
                return Err(no_such_dataset(fs));
            }
            return Ok(f.view.snapshots(fs));
        }
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        let head = self.head_phys(dataset)?;
        let mut out = Vec::new();
        if head.snapnames_zap == 0 {
            return Ok(out);
        }
        let ctx = io_ctx!(self);
        let entries = zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(head.snapnames_zap))
            .map_err(zap_error)?;
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
            return Err(SpaError::Dsl(DslError::ForeignPool));
        }
        let (fs, snap) = full.split_once('@').ok_or_else(|| {
            SpaError::Dsl(DslError::NotSnapshot {
                name: full.to_string(),
            })
        })?;
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        let object = self
            .snapshot_object(dataset, snap)?
            .ok_or_else(|| no_such_dataset(full))?;
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
        // `bpo_num_blkptrs`, the first word of the bpobj_phys_t bonus, says how many
        // block pointers the object holds (checked against its block extent).
        let bonus = self.dp.mos.bonus(&ctx, ObjectId(object))?;
        let count = bonus
            .get(..8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| {
                SpaError::Corrupt(format!(
                    "dead list {object}: a {}-byte bpobj_phys_t",
                    bonus.len()
                ))
            })?;
        let extent = self.dp.mos.extent_bytes(&ctx, ObjectId(object))?;
        let size = count
            .checked_mul(BLKPTR_SIZE_BYTES as u64)
            .filter(|&size| size <= extent)
            .ok_or_else(|| {
                SpaError::Corrupt(format!(
                    "dead list {object}: {count} block pointers in {extent} bytes"
                ))
            })?;
        let bytes = self.dp.mos.read(&ctx, ObjectId(object), 0, size as usize)?;
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
    ///
    /// A sync task: in syncing context the head's releases of this txg are already in its
    /// dead list. One txg.
    pub fn destroy_snapshot(&mut self, full: &str) -> Result<(), SpaError> {
        let task = self.destroy_snapshots_queue(&[full.to_string()])?;
        self.sync_task_wait(task)
    }

    /// The sync task of `destroy_snapshot` for several snapshots, all or none (OpenZFS
    /// `dsl_destroy_snapshots_nvl`: `dsl_destroy_snapshot_check` of each, then `_sync` of
    /// each in order), queued for the open txg: the caller commits and collects its result.
    pub fn destroy_snapshots_queue(&mut self, names: &[String]) -> Result<SyncTaskId, SpaError> {
        let (check_names, sync_names) = (names.to_vec(), names.to_vec());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| {
                for (index, full) in check_names.iter().enumerate() {
                    spa.destroy_snapshot_check(full)?;
                    if check_names[..index].contains(full) {
                        return Err(no_such_dataset(full));
                    }
                }
                Ok(())
            }),
            Box::new(move |spa, tx| {
                for full in &sync_names {
                    spa.destroy_snapshot_sync(tx, full)?;
                }
                Ok(())
            }),
        )
    }

    /// `zfs destroy -d fs@snap…` (OpenZFS `dsl_destroy_snapshots_nvl` with `defer`): each
    /// snapshot without holds or clones is destroyed as by `destroy_snapshots_queue`; one
    /// that has either is marked instead (`DS_FLAG_DEFER_DESTROY` in its `ds_flags`, the
    /// `defer_destroy` property) and goes when its last hold is released or its last clone
    /// destroyed (`destroy_if_deferred`). All or none, one txg; the caller commits.
    pub fn destroy_snapshots_deferred_queue(
        &mut self,
        names: &[String],
    ) -> Result<SyncTaskId, SpaError> {
        let (check_names, sync_names) = (names.to_vec(), names.to_vec());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| {
                for (index, full) in check_names.iter().enumerate() {
                    spa.snapshot_record(full)?;
                    if check_names[..index].contains(full) {
                        return Err(no_such_dataset(full));
                    }
                }
                Ok(())
            }),
            Box::new(move |spa, tx| {
                for full in &sync_names {
                    let (object, mut phys) = spa.snapshot_record(full)?;
                    if spa.holds(full)?.is_empty() && spa.dependent_clones(object)?.is_empty() {
                        spa.destroy_snapshot_sync(tx, full)?;
                        continue;
                    }
                    phys.flags |= DS_FLAG_DEFER_DESTROY;
                    let ctx = io_ctx!(spa, tx.txg);
                    let bonus = phys.encode(spa.dp.mos.dsl_origin);
                    spa.dp.mos.set_bonus(&ctx, ObjectId(object), &bonus)?;
                    spa.log_history_internal_ds(tx, "defer_destroy", full, object, " ");
                }
                Ok(())
            }),
        )
    }

    /// A snapshot marked for deferred destroy goes once nothing keeps it (no hold, no
    /// clone): OpenZFS does this at the last release (`dsl_dataset_user_release_sync_one`)
    /// and at its last clone's destroy (`dsl_destroy_head_sync_impl`). A snapshot that is
    /// gone or not marked is left alone.
    pub(super) fn destroy_if_deferred(&mut self, tx: SyncTx, full: &str) -> Result<(), SpaError> {
        let fs = full.split('@').next().unwrap_or(full);
        if self.lookup_dataset(fs)?.is_none() {
            return Ok(());
        }
        let Some((_, object, phys)) = self
            .snapshots(fs)?
            .into_iter()
            .find(|(name, _, _)| name == full)
        else {
            return Ok(());
        };
        if phys.flags & DS_FLAG_DEFER_DESTROY == 0
            || !self.holds(full)?.is_empty()
            || !self.dependent_clones(object)?.is_empty()
        {
            return Ok(());
        }
        self.destroy_snapshot_sync(tx, full)
    }

    /// The snapshot exists, has no holds and no clones: (head dataset, the filesystem's
    /// snapshots, the victim's index among them).
    #[allow(clippy::type_complexity)]
    pub(super) fn destroy_snapshot_check(
        &mut self,
        full: &str,
    ) -> Result<(u64, Vec<(String, u64, DslDatasetPhys)>, usize), SpaError> {
        let (fs, _) = full.split_once('@').ok_or_else(|| {
            SpaError::Dsl(DslError::NotSnapshot {
                name: full.to_string(),
            })
        })?;
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(full))?;
        self.open_dataset(dataset)?;
        let snapshots = self.snapshots(fs)?;
        let Some(index) = snapshots.iter().position(|(name, _, _)| name == full) else {
            return Err(no_such_dataset(full));
        };
        let object = snapshots[index].1;
        let holds = self.holds(full)?;
        if !holds.is_empty() {
            return Err(SpaError::Dsl(DslError::Held {
                snapshot: full.to_string(),
                tags: holds.into_iter().map(|(tag, _)| tag).collect(),
            }));
        }
        let clones = self.dependent_clones(object)?;
        if !clones.is_empty() {
            return Err(SpaError::Dsl(DslError::HasClones {
                snapshot: full.to_string(),
                clones,
            }));
        }
        Ok((dataset, snapshots, index))
    }

    pub(super) fn destroy_snapshot_sync(&mut self, tx: SyncTx, full: &str) -> Result<(), SpaError> {
        let (dataset, snapshots, index) = self.destroy_snapshot_check(full)?;
        let snap = full.split_once('@').map_or(full, |(_, snap)| snap);
        let (_, object, victim) = snapshots[index].clone();
        let (next_object, mut next) = match snapshots.get(index + 1) {
            Some((_, object, phys)) => (*object, phys.clone()),
            None => (dataset, self.head_phys(dataset)?),
        };
        let txg = tx.txg;
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
                self.dp.mos.free_object(&ctx, ObjectId(old))?;
            }
        }
        next.deadlist = create_dead_list(&mut self.dp.mos, &ctx)?;
        append_dead_list(&mut self.dp.mos, &ctx, &mut next, &kept)?;
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
            self.dp.mos.set_bonus(
                &ctx,
                ObjectId(next_object),
                &next.encode(self.dp.mos.dsl_origin),
            )?;
        }
        // The chain closes over the victim (`ds_next_snap_obj` of its previous snapshot,
        // unless that is a clone's origin in another chain).
        if victim.prev_snap != 0 {
            let mut prev = self.read_dataset_phys(victim.prev_snap)?;
            if prev.next_snap == object {
                prev.next_snap = next_object;
                let ctx = io_ctx!(self);
                self.dp.mos.set_bonus(
                    &ctx,
                    ObjectId(victim.prev_snap),
                    &prev.encode(self.dp.mos.dsl_origin),
                )?;
            }
        }
        let ctx = io_ctx!(self);
        zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(head.snapnames_zap), snap)
            .map_err(zap_error)?;
        self.dp
            .directory
            .features
            .deactivate_dataset(&mut self.dp.mos, &ctx, object)?;
        // Its holds and properties ZAPs go with it (`dsl_destroy_snapshot_sync_impl`;
        // `snapshot_prop`'s invariant).
        if victim.holds_zap != 0 {
            zap::zap_destroy(&mut self.dp.mos, &ctx, ObjectId(victim.holds_zap))
                .map_err(zap_error)?;
        }
        self.destroy_snapshot_props(object)?;
        let ctx = io_ctx!(self);
        self.dp.mos.free_object(&ctx, ObjectId(object))?;
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
            return f
                .view
                .snapshot_used_bytes(full)
                .ok_or_else(|| no_such_dataset(full));
        }
        let fs = full.split('@').next().unwrap_or(full);
        let snapshots = self.snapshots(fs)?;
        let Some(index) = snapshots.iter().position(|(name, _, _)| name == full) else {
            return Err(no_such_dataset(full));
        };
        let prev_txg = snapshots[index].2.prev_snap_txg;
        let next_deadlist = match snapshots.get(index + 1) {
            Some((_, _, phys)) => phys.deadlist,
            None => {
                let dataset = self
                    .lookup_dataset(fs)?
                    .ok_or_else(|| no_such_dataset(fs))?;
                self.head_phys(dataset)?.deadlist
            }
        };
        self.dead_list_bytes(next_deadlist, prev_txg)
    }

    /// What destroying the snapshots `first` through `last` of one filesystem (oldest
    /// first, inclusive) would free (OpenZFS `dsl_dataset_space_wouldfree`, `zfs destroy
    /// -nv`'s "would reclaim"): the blocks in the dead lists of every dataset after `first`
    /// up to the one after `last` born after `first`'s previous snapshot.
    pub fn snaprange_used_bytes(&mut self, first: &str, last: &str) -> Result<u64, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            // A foreign pool's view knows each snapshot's own USED only.
            let fs = first.split('@').next().unwrap_or(first);
            let names: Vec<String> = f.view.snapshots(fs).into_iter().map(|s| s.0).collect();
            let (Some(a), Some(b)) = (
                names.iter().position(|n| n == first),
                names.iter().position(|n| n == last),
            ) else {
                return Err(no_such_dataset(first));
            };
            return Ok(names[a..=b.max(a)]
                .iter()
                .filter_map(|n| f.view.snapshot_used_bytes(n))
                .sum());
        }
        let fs = first.split('@').next().unwrap_or(first);
        let snapshots = self.snapshots(fs)?;
        let position = |full: &str| snapshots.iter().position(|(name, _, _)| name == full);
        let (Some(a), Some(b)) = (position(first), position(last)) else {
            return Err(no_such_dataset(first));
        };
        let born_after = snapshots[a].2.prev_snap_txg;
        let mut dead_lists: Vec<u64> = snapshots[a + 1..=b.max(a)]
            .iter()
            .map(|(_, _, phys)| phys.deadlist)
            .collect();
        match snapshots.get(b.max(a) + 1) {
            Some((_, _, phys)) => dead_lists.push(phys.deadlist),
            None => {
                let dataset = self
                    .lookup_dataset(fs)?
                    .ok_or_else(|| no_such_dataset(fs))?;
                dead_lists.push(self.head_phys(dataset)?.deadlist);
            }
        }
        let mut total = 0;
        for dead in dead_lists {
            total += self.dead_list_bytes(dead, born_after)?;
        }
        Ok(total)
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
        let claimed = head
            .unique_bytes
            .min(self.ref_limits(head.dir).refreservation);
        if claimed > 0 && claimed > self.dir_available_bytes(head.dir)? {
            return Err(SpaError::Dsl(DslError::NoSpace {
                name: full.to_string(),
            }));
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
    ///
    /// A sync task (OpenZFS `dsl_dataset_rollback_check` / `_sync`): in syncing context the
    /// head's object set is already written in this txg, so what it wrote since the snapshot,
    /// this txg's writes included, is freed with it. One txg.
    pub fn rollback(&mut self, full: &str) -> Result<(), SpaError> {
        let task = self.rollback_queue(full)?;
        self.sync_task_wait(task)
    }

    /// The sync task of `rollback`, queued for the open txg: the caller commits and
    /// collects its result.
    pub fn rollback_queue(&mut self, full: &str) -> Result<SyncTaskId, SpaError> {
        let (check_full, sync_full) = (full.to_string(), full.to_string());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| spa.rollback_check(&check_full).map(|_| ())),
            Box::new(move |spa, _tx| {
                let (dataset, snap) = spa.rollback_check(&sync_full)?;
                spa.rollback_sync(dataset, snap)
            }),
        )
    }

    /// The snapshot exists and is its filesystem's newest: (head dataset, its record).
    fn rollback_check(&mut self, full: &str) -> Result<(u64, DslDatasetPhys), SpaError> {
        let (fs, _) = full.split_once('@').ok_or_else(|| {
            SpaError::Dsl(DslError::NotSnapshot {
                name: full.to_string(),
            })
        })?;
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        self.open_dataset(dataset)?;
        let snapshots = self.snapshots(fs)?;
        let Some(index) = snapshots.iter().position(|(name, _, _)| name == full) else {
            return Err(no_such_dataset(full));
        };
        if index + 1 != snapshots.len() {
            let newer: Vec<String> = snapshots[index + 1..]
                .iter()
                .map(|(n, _, _)| n.clone())
                .collect();
            return Err(SpaError::Dsl(DslError::NotLatest {
                snapshot: full.to_string(),
                newer,
            }));
        }
        Ok((dataset, snapshots[index].2.clone()))
    }

    fn rollback_sync(&mut self, dataset: u64, snap: DslDatasetPhys) -> Result<(), SpaError> {
        let head = self.head_phys(dataset)?;
        let head_bp = if dataset == self.dp.directory.root_dataset {
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
        let origin = super::space::origin_txg(&mut self.dp.mos, &ctx, &dir)?;
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
        self.refresh_io_props()
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
            self.dp.mos.free_object(&ctx, ObjectId(head.deadlist))?;
        }
        let bp = source.bp;
        head.deadlist = match deadlist {
            0 => create_dead_list(&mut self.dp.mos, &ctx)?,
            given => given,
        };
        head.bp = bp;
        head.referenced_bytes = source.referenced_bytes;
        head.compressed_bytes = source.compressed_bytes;
        head.uncompressed_bytes = source.uncompressed_bytes;
        let mut objset = ObjectSet::open(&ctx, dataset, &bp, dataset_policy(default_data_props()))?;
        objset.policy.prev_snap_txg = Txg(head.prev_snap_txg);
        // The old tree's log goes with it; the new one comes from a snapshot (no log).
        crate::zil::forget(&mut objset);
        if dataset == self.dp.directory.root_dataset {
            crate::zil::discard(&mut self.dp.root_dataset, &ctx);
            self.set_root_objset(objset, bp);
        } else if let Some(loaded) = self.dp.datasets.get_mut(&dataset) {
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
    /// `zfs bookmark fs@snap fs#mark`: a sync task, committed.
    pub fn create_bookmark(&mut self, snapshot: &str, bookmark: &str) -> Result<(), SpaError> {
        let task = self.create_bookmark_queue(snapshot, bookmark)?;
        self.sync_task_wait(task)
    }

    /// The sync task of `create_bookmark` (OpenZFS `dsl_bookmark_create`), queued for the
    /// open txg: the caller commits and collects its result (`sync_task_result`).
    pub fn create_bookmark_queue(
        &mut self,
        snapshot: &str,
        bookmark: &str,
    ) -> Result<SyncTaskId, SpaError> {
        let (check_snapshot, check_bookmark) = (snapshot.to_string(), bookmark.to_string());
        let (sync_snapshot, sync_bookmark) = (snapshot.to_string(), bookmark.to_string());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| {
                spa.bookmark_check(&check_snapshot, &check_bookmark)
                    .map(|_| ())
            }),
            Box::new(move |spa, tx| {
                let (dataset, mark, value) = spa.bookmark_check(&sync_snapshot, &sync_bookmark)?;
                spa.bookmark_sync(tx, dataset, &mark, value)
            }),
        )
    }

    /// OpenZFS `dsl_bookmark_create_check`: the snapshot exists, the bookmark is in its
    /// filesystem and does not exist. (head dataset, bookmark name, its ZAP value)
    fn bookmark_check(
        &mut self,
        snapshot: &str,
        bookmark: &str,
    ) -> Result<(u64, String, [u64; 3]), SpaError> {
        let fs = snapshot.split('@').next().unwrap_or(snapshot);
        let Some((bookmark_fs, mark)) = bookmark.split_once('#') else {
            return Err(SpaError::Dsl(DslError::NotBookmark {
                name: bookmark.to_string(),
            }));
        };
        if bookmark_fs != fs {
            return Err(SpaError::Dsl(DslError::BookmarkNotAncestor {
                snapshot: snapshot.to_string(),
                bookmark: bookmark.to_string(),
            }));
        }
        if !self.bookmarks_enabled() {
            return Err(SpaError::Dsl(DslError::BookmarksDisabled {
                name: bookmark.to_string(),
            }));
        }
        let (_, _, phys) = self
            .snapshots(fs)?
            .into_iter()
            .find(|(n, _, _)| n == snapshot)
            .ok_or_else(|| no_such_dataset(snapshot))?;
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        self.open_dataset(dataset)?;
        if self.bookmarks(fs)?.iter().any(|b| b.name == bookmark) {
            return Err(SpaError::Dsl(DslError::BookmarkExists {
                name: bookmark.to_string(),
            }));
        }
        Ok((
            dataset,
            mark.to_string(),
            [phys.guid, phys.creation_txg, phys.creation_time],
        ))
    }

    /// OpenZFS `dsl_bookmark_create_sync`: the bookmark's entry in the head's ZAP.
    fn bookmark_sync(
        &mut self,
        tx: SyncTx,
        dataset: u64,
        mark: &str,
        value: [u64; 3],
    ) -> Result<(), SpaError> {
        let bookmarks = self.bookmarks_object_hold(dataset, tx.txg)?;
        let ctx = io_ctx!(self, tx.txg);
        zap::zap_add(&mut self.dp.mos, &ctx, ObjectId(bookmarks), mark, &value).map_err(zap_error)
    }

    /// The bookmarks of a filesystem, oldest first.
    pub fn bookmarks(&mut self, fs: &str) -> Result<Vec<Bookmark>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.bookmarks(fs));
        }
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        let bookmarks = self.bookmarks_object(dataset)?;
        let mut out = Vec::new();
        if bookmarks == 0 {
            return Ok(out);
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(bookmarks)).map_err(zap_error)?;
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
        let task = self.destroy_bookmark_queue(bookmark)?;
        self.sync_task_wait(task)
    }

    /// The sync task of `destroy_bookmark` (OpenZFS `dsl_bookmark_destroy`), queued for the
    /// open txg: the caller commits and collects its result.
    pub fn destroy_bookmark_queue(&mut self, bookmark: &str) -> Result<SyncTaskId, SpaError> {
        let (check_bookmark, sync_bookmark) = (bookmark.to_string(), bookmark.to_string());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| spa.destroy_bookmark_check(&check_bookmark).map(|_| ())),
            Box::new(move |spa, tx| {
                let (dataset, zap_object, mark) = spa.destroy_bookmark_check(&sync_bookmark)?;
                let ctx = io_ctx!(spa, tx.txg);
                zap::zap_remove(&mut spa.dp.mos, &ctx, ObjectId(zap_object), &mark)
                    .map_err(zap_error)?;
                spa.bookmarks_object_release(dataset, false)
            }),
        )
    }

    /// The bookmark exists: (its head, the head's bookmarks ZAP, its name there).
    fn destroy_bookmark_check(&mut self, bookmark: &str) -> Result<(u64, u64, String), SpaError> {
        let (fs, mark) = bookmark.split_once('#').ok_or_else(|| {
            SpaError::Dsl(DslError::NotBookmark {
                name: bookmark.to_string(),
            })
        })?;
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        let bookmarks = self.bookmarks_object(dataset)?;
        let ctx = io_ctx!(self);
        let found = bookmarks != 0
            && zap::zap_lookup(&self.dp.mos, &ctx, ObjectId(bookmarks), mark)
                .map_err(zap_error)?
                .is_some();
        if !found {
            return Err(SpaError::Dsl(DslError::NoSuchBookmark {
                name: bookmark.to_string(),
            }));
        }
        Ok((dataset, bookmarks, mark.to_string()))
    }
}

impl Spa {
    fn snapshot_record(&mut self, full: &str) -> Result<(u64, DslDatasetPhys), SpaError> {
        let fs = full.split('@').next().unwrap_or(full);
        self.snapshots(fs)?
            .into_iter()
            .find(|(n, _, _)| n == full)
            .map(|(_, object, phys)| (object, phys))
            .ok_or_else(|| no_such_dataset(full))
    }

    /// `zfs hold tag fs@snap`: the snapshot cannot be destroyed until every tag is released.
    pub fn hold(&mut self, tag: &str, full: &str) -> Result<(), SpaError> {
        let task = self.hold_queue(tag, &[full.to_string()], true)?;
        self.sync_task_wait(task)
    }

    /// `zfs release tag fs@snap`.
    pub fn release(&mut self, tag: &str, full: &str) -> Result<(), SpaError> {
        let task = self.hold_queue(tag, &[full.to_string()], false)?;
        self.sync_task_wait(task)
    }

    /// The sync task of `zfs hold` (`hold`) or `zfs release` of one tag on several
    /// snapshots (OpenZFS `dsl_dataset_user_hold`, `dsl_dataset_user_release`): all or
    /// none, queued for the open txg; the caller commits and collects its result.
    pub fn hold_queue(
        &mut self,
        tag: &str,
        snapshots: &[String],
        hold: bool,
    ) -> Result<SyncTaskId, SpaError> {
        let (check_tag, check_snapshots) = (tag.to_string(), snapshots.to_vec());
        let (sync_tag, sync_snapshots) = (tag.to_string(), snapshots.to_vec());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| spa.hold_check(&check_tag, &check_snapshots, hold)),
            Box::new(move |spa, tx| {
                spa.hold_check(&sync_tag, &sync_snapshots, hold)?;
                for full in &sync_snapshots {
                    spa.hold_sync(tx, &sync_tag, full, hold)?;
                }
                if !hold {
                    for full in &sync_snapshots {
                        spa.destroy_if_deferred(tx, full)?;
                    }
                }
                Ok(())
            }),
        )
    }

    /// Every snapshot exists and has (release) or has not (hold) the tag, each named once.
    fn hold_check(&mut self, tag: &str, snapshots: &[String], hold: bool) -> Result<(), SpaError> {
        for (index, full) in snapshots.iter().enumerate() {
            let (_, phys) = self.snapshot_record(full)?;
            let ctx = io_ctx!(self);
            let held = phys.holds_zap != 0
                && zap::zap_lookup(&self.dp.mos, &ctx, ObjectId(phys.holds_zap), tag)
                    .map_err(zap_error)?
                    .is_some();
            let twice = snapshots[..index].contains(full);
            if hold && (held || twice) {
                return Err(SpaError::Dsl(DslError::HoldExists {
                    snapshot: full.clone(),
                    tag: tag.to_string(),
                }));
            }
            if !hold && (!held || twice) {
                return Err(SpaError::Dsl(DslError::NoSuchHold {
                    snapshot: full.clone(),
                    tag: tag.to_string(),
                }));
            }
        }
        Ok(())
    }

    /// OpenZFS `dsl_dataset_user_hold_sync_one` / `dsl_dataset_user_release_sync_one`.
    fn hold_sync(&mut self, tx: SyncTx, tag: &str, full: &str, hold: bool) -> Result<(), SpaError> {
        let (object, mut phys) = self.snapshot_record(full)?;
        let ctx = io_ctx!(self, tx.txg);
        if !hold {
            return zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(phys.holds_zap), tag)
                .map_err(zap_error);
        }
        if phys.holds_zap == 0 {
            phys.holds_zap = zap::zap_create(&mut self.dp.mos, &ctx, ot::USERREFS)
                .map_err(zap_error)?
                .0;
            self.dp
                .mos
                .set_bonus(&ctx, ObjectId(object), &phys.encode(self.dp.mos.dsl_origin))?;
        }
        zap::zap_add(
            &mut self.dp.mos,
            &ctx,
            ObjectId(phys.holds_zap),
            tag,
            &[now_secs()],
        )
        .map_err(zap_error)
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
            zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(phys.holds_zap)).map_err(zap_error)?;
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
