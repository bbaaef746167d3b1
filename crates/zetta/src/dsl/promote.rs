//! `zfs promote` (OpenZFS `dsl_dataset_promote`): a clone changes places with its origin.
//!
//! The origin filesystem's snapshots up to and including the clone's origin snapshot move
//! to the clone (names, records and bookmarks up to that txg); the clone takes over the
//! origin's own origin (none, or the snapshot a clone of a clone came from) and the former
//! origin becomes a clone of the snapshot that moved last. No block and no dead list moves:
//! every snapshot keeps its object, tree and dead list, and the dead lists are read through
//! each dir's origin txg (`dsl::space`), which is what changes. Then the original can be
//! destroyed, the classic use.
//!
//! Space: the blocks born in the moved range that anything still holds are charged to the
//! clone's dir instead of the origin's. Their sum is the origin snapshot's REFER plus every
//! moved snapshot's dead list, less the REFER of the origin's own origin (its blocks were
//! never the origin's); each side's USEDSNAP is the sum of its dead lists above its new
//! origin txg, and HEAD takes the rest (OpenZFS `dsl_dataset_promote_check`/`_sync`).
//! Everything happens in one txg.
//!
//! A sync task (`synctask`; OpenZFS `dsl_dataset_promote_check` / `_sync`): the check runs
//! in open context and again in syncing context, after every head of the txg is written
//! and accounted, so the space it moves is exact; the sync changes only the MOS (snapshot
//! names and records, bookmarks, the two dirs' origins, the dirs' space) and logs
//! `promote clone (dsid)` in `zpool history -i`. The clone's and origin's object sets are
//! not touched: mounts of both stay as they are.

use super::openzfs::ot;
use super::phys::{DslDatasetPhys, UsedKind};
use super::space::{signed, SpaceDelta};
use super::synctask::{SyncTaskId, SyncTx};
use super::zap_error;
use super::DslError;
use crate::dmu::{BlockSpace, IoCtx};
use crate::spa::{Spa, SpaError};
use crate::types::{ObjectId, Txg};
use crate::zap::{self, ZapValue};

/// What `promote_check` found and `promote_sync` moves (OpenZFS
/// `dsl_dataset_promote_arg_t`).
struct PromoteArg {
    clone_dir: u64,
    clone_head_object: u64,
    /// The clone's origin snapshot: the newest of those that move.
    origin_object: u64,
    origin_creation_txg: u64,
    origin_dir: u64,
    origin_head_object: u64,
    /// The origin's own origin (0 unless a clone of a clone), which the clone takes over.
    origin_origin: u64,
    /// The snapshots that move to the clone: (full name, dataset object), oldest first.
    moved: Vec<(String, u64)>,
    /// The space that changes dirs (`ddpa->used`, `comp`, `uncomp`).
    moving: BlockSpace,
    /// Each side's USEDSNAP after the move (`cloneusedsnap`, `originusedsnap`).
    clone_snap: u64,
    origin_snap: u64,
}

impl Spa {
    /// Sum of the dead lists of `datasets`, counting blocks born after `born_after_txg`.
    fn dead_lists_space(
        &mut self,
        datasets: &[DslDatasetPhys],
        born_after_txg: u64,
    ) -> Result<BlockSpace, SpaError> {
        let mut total = BlockSpace::ZERO;
        for phys in datasets {
            let dead: Vec<_> = self
                .read_dead_list(phys.deadlist)?
                .into_iter()
                .filter(|bp| bp.birth_txg.0 > born_after_txg)
                .collect();
            total.add(&BlockSpace::of_all(&self.root, &dead));
        }
        Ok(total)
    }

    /// `zfs promote clone`: see the module header. Refusals are OpenZFS's, word for word.
    /// One sync task, committed: one txg.
    pub fn promote(&mut self, name: &str) -> Result<(), SpaError> {
        let task = self.promote_queue(name)?;
        self.sync_task_wait(task)
    }

    /// The sync task of `promote` (OpenZFS `dsl_dataset_promote`), queued for the open txg
    /// without committing it: the caller commits (once, with its history line) and collects
    /// the result with `sync_task_result`. Refused here already when the name is not a
    /// clone, a moving snapshot or bookmark name is taken, or a quota would be passed.
    pub fn promote_queue(&mut self, name: &str) -> Result<SyncTaskId, SpaError> {
        let (check_name, sync_name) = (name.to_string(), name.to_string());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| spa.promote_check(&check_name).map(|_| ())),
            Box::new(move |spa, tx| {
                let arg = spa.promote_check(&sync_name)?;
                spa.promote_sync(tx, &sync_name, arg)
            }),
        )
    }

    /// OpenZFS `dsl_dataset_promote_check`: the clone and what moves to it, its name
    /// conflicts and the space that changes dirs, checked against a quota. Runs in open
    /// context (figures as of the last commit) and again in syncing context, where every
    /// head is written and accounted in this txg and the figures are exact.
    fn promote_check(&mut self, name: &str) -> Result<PromoteArg, SpaError> {
        let clone_dir = self
            .lookup_dir(name)?
            .ok_or_else(|| SpaError::NoSuchDataset(name.to_string()))?;
        let clone_dir_phys = self.read_dir(clone_dir)?;
        let origin_object = clone_dir_phys.origin_snapshot;
        let origin_name = match self.origin_of(name)? {
            Some(origin) if origin_object != 0 => origin,
            _ => {
                return Err(SpaError::Dsl(DslError::NotClone {
                    name: name.to_string(),
                }))
            }
        };
        let origin_fs = origin_name
            .split('@')
            .next()
            .unwrap_or(&origin_name)
            .to_string();
        let clone_head_object = clone_dir_phys.head_dataset;
        self.open_dataset(clone_head_object)?;
        let origin = self.read_dataset_phys(origin_object)?;
        let origin_dir = origin.dir;
        let origin_dir_phys = self.read_dir(origin_dir)?;
        let origin_head_object = origin_dir_phys.head_dataset;
        self.open_dataset(origin_head_object)?;
        let origin_snapshots = self.snapshots(&origin_fs)?;
        let (moved, kept): (Vec<_>, Vec<_>) = origin_snapshots
            .into_iter()
            .partition(|(_, _, phys)| phys.creation_txg <= origin.creation_txg);
        // Name conflicts, newest first like OpenZFS's walk from the origin backwards.
        let clone_head = self.head_phys(clone_head_object)?;
        for (full, _, _) in moved.iter().rev() {
            let short = full.rsplit('@').next().unwrap_or(full);
            if self.snapshot_object(clone_head_object, short)?.is_some() {
                return Err(SpaError::Dsl(DslError::PromoteConflict {
                    name: name.to_string(),
                    snapshot: short.to_string(),
                    origin: origin_name.clone(),
                }));
            }
        }
        let moved_bookmarks: Vec<_> = self
            .bookmarks(&origin_fs)?
            .into_iter()
            .filter(|b| b.creation_txg <= origin.creation_txg)
            .collect();
        let clone_bookmarks = self.bookmarks(name)?;
        for bookmark in &moved_bookmarks {
            let short = bookmark.name.rsplit('#').next().unwrap_or(&bookmark.name);
            if clone_bookmarks
                .iter()
                .any(|b| b.name.rsplit('#').next() == Some(short))
            {
                return Err(SpaError::Dsl(DslError::PromoteConflict {
                    name: name.to_string(),
                    snapshot: short.to_string(),
                    origin: origin_name.clone(),
                }));
            }
        }
        // The origin's own origin (a clone of a clone), which the clone takes over.
        let origin_origin = origin_dir_phys.origin_snapshot;
        let origin_origin_phys = if origin_origin == 0 {
            None
        } else {
            Some(self.read_dataset_phys(origin_origin)?)
        };
        let origin_origin_txg = origin_origin_phys.as_ref().map_or(0, |p| p.creation_txg);
        // Space that changes dirs: what anything holds of the blocks born in the moved range.
        let mut moving = BlockSpace {
            allocated_bytes: origin.referenced_bytes,
            physical_bytes: origin.compressed_bytes,
            logical_bytes: origin.uncompressed_bytes,
            features: 0,
        };
        let moved_phys: Vec<DslDatasetPhys> = moved.iter().map(|(_, _, p)| p.clone()).collect();
        let moved_dead = self.dead_lists_space(&moved_phys, 0)?;
        moving.add(&moved_dead);
        if let Some(oo) = &origin_origin_phys {
            moving.allocated_bytes = moving.allocated_bytes.saturating_sub(oo.referenced_bytes);
            moving.physical_bytes = moving.physical_bytes.saturating_sub(oo.compressed_bytes);
            moving.logical_bytes = moving.logical_bytes.saturating_sub(oo.uncompressed_bytes);
        }
        self.check_promote_quota(clone_dir, origin_dir, moving.allocated_bytes)?;
        // Each side's USEDSNAP after the move: its dead lists above its new origin txg.
        let mut clone_side = moved_phys;
        for (_, _, phys) in self.snapshots(name)? {
            clone_side.push(phys);
        }
        clone_side.push(clone_head);
        let clone_snap = self.dead_lists_space(&clone_side, origin_origin_txg)?;
        let mut origin_side: Vec<DslDatasetPhys> = kept.iter().map(|(_, _, p)| p.clone()).collect();
        origin_side.push(self.head_phys(origin_head_object)?);
        let origin_snap = self.dead_lists_space(&origin_side, origin.creation_txg)?;
        Ok(PromoteArg {
            clone_dir,
            clone_head_object,
            origin_object,
            origin_creation_txg: origin.creation_txg,
            origin_dir,
            origin_head_object,
            origin_origin,
            moved: moved.into_iter().map(|(n, o, _)| (n, o)).collect(),
            moving,
            clone_snap: clone_snap.allocated_bytes,
            origin_snap: origin_snap.allocated_bytes,
        })
    }

    /// OpenZFS `dsl_dataset_promote_sync`, in the syncing context of `tx.txg`: the moving
    /// snapshots' names and records, the bookmarks, the two dirs' origins (the clone links)
    /// and the space, all in the MOS of this one txg.
    fn promote_sync(&mut self, tx: SyncTx, name: &str, arg: PromoteArg) -> Result<(), SpaError> {
        let PromoteArg {
            clone_dir,
            clone_head_object,
            origin_object,
            origin_creation_txg,
            origin_dir,
            origin_head_object,
            origin_origin,
            moved,
            moving,
            clone_snap,
            origin_snap,
        } = arg;
        // The records: snapshot names and dirs, bookmarks, origins.
        let origin_head = self.head_phys(origin_head_object)?;
        let mut clone_head = self.head_phys(clone_head_object)?;
        let ctx = io_ctx!(self, tx.txg);
        if clone_head.snapnames_zap == 0 {
            clone_head.snapnames_zap = zap::zap_create(&mut self.dp.mos, &ctx, ot::DSL_DS_SNAP_MAP)
                .map_err(zap_error)?
                .0;
        }
        for (full, object) in &moved {
            let short = full.rsplit('@').next().unwrap_or(full);
            let mut phys = self.read_dataset_phys(*object)?;
            let ctx = io_ctx!(self, tx.txg);
            zap::zap_remove(
                &mut self.dp.mos,
                &ctx,
                ObjectId(origin_head.snapnames_zap),
                short,
            )
            .map_err(zap_error)?;
            zap::zap_add(
                &mut self.dp.mos,
                &ctx,
                ObjectId(clone_head.snapnames_zap),
                short,
                &[*object],
            )
            .map_err(zap_error)?;
            phys.dir = clone_dir;
            self.dp.mos.set_bonus(
                &ctx,
                ObjectId(*object),
                &phys.encode(self.dp.mos.dsl_origin),
            )?;
            super::pool::move_dir_clones(
                &mut self.dp.mos,
                &ctx,
                phys.next_clones_zap,
                origin_dir,
                clone_dir,
            )?;
        }
        self.move_bookmarks(
            origin_head_object,
            clone_head_object,
            origin_creation_txg,
            tx.txg,
        )?;
        self.store_head_phys(origin_head_object, origin_head)?;
        self.store_head_phys(clone_head_object, clone_head)?;
        let mut clone_dir_phys = self.read_dir(clone_dir)?;
        clone_dir_phys.origin_snapshot = origin_origin;
        self.write_dir(clone_dir, &clone_dir_phys)?;
        let mut origin_dir_phys = self.read_dir(origin_dir)?;
        origin_dir_phys.origin_snapshot = origin_object;
        self.write_dir(origin_dir, &origin_dir_phys)?;
        // OpenZFS's clone links follow (`dsl::pool::link_clone`): the origin snapshot (now
        // the clone's) has the old origin head for its clone, and the origin's own origin
        // (`$ORIGIN@$ORIGIN` when it had none) the promoted head.
        let origin_origin_object = match origin_origin {
            0 => self.dp.mos.dsl_origin,
            object => object,
        };
        let ctx = io_ctx!(self, tx.txg);
        for (snapshot, unlinked, linked) in [
            (origin_object, clone_head_object, origin_head_object),
            (origin_origin_object, origin_head_object, clone_head_object),
        ] {
            super::pool::link_clone(&mut self.dp.mos, &ctx, snapshot, unlinked, false)?;
            super::pool::link_clone(&mut self.dp.mos, &ctx, snapshot, linked, true)?;
        }
        let origin_dir_phys = self.read_dir(origin_dir)?;

        // The space, as OpenZFS moves it: USEDSNAP to its new value, HEAD the rest.
        let clone_snap_delta = signed(clone_snap) - signed(clone_dir_phys.used(UsedKind::Snap));
        self.space_diduse(
            clone_dir,
            UsedKind::Snap,
            SpaceDelta::used_only(clone_snap_delta),
        )?;
        self.space_diduse(
            clone_dir,
            UsedKind::Head,
            SpaceDelta {
                used: signed(moving.allocated_bytes) - clone_snap_delta,
                compressed: signed(moving.physical_bytes),
                uncompressed: signed(moving.logical_bytes),
            },
        )?;
        let origin_snap_delta = signed(origin_snap) - signed(origin_dir_phys.used(UsedKind::Snap));
        self.space_diduse(
            origin_dir,
            UsedKind::Snap,
            SpaceDelta::used_only(origin_snap_delta),
        )?;
        self.space_diduse(
            origin_dir,
            UsedKind::Head,
            SpaceDelta {
                used: -signed(moving.allocated_bytes) - origin_snap_delta,
                compressed: -signed(moving.physical_bytes),
                uncompressed: -signed(moving.logical_bytes),
            },
        )?;
        self.relink_snapshot_chain(clone_head_object)?;
        self.relink_snapshot_chain(origin_head_object)?;
        self.log_history_internal_ds(tx, "promote", name, clone_head_object, " ");
        Ok(())
    }

    /// OpenZFS `dsl_dir_transfer_possible`: the clone's side takes `bytes` more, which must
    /// fit every quota on its way up to the dir it shares with the origin.
    fn check_promote_quota(
        &mut self,
        clone_dir: u64,
        origin_dir: u64,
        bytes: u64,
    ) -> Result<(), SpaError> {
        let mut origin_chain = Vec::new();
        let mut current = origin_dir;
        for _ in 0..=super::NESTING_MAX + 1 {
            origin_chain.push(current);
            let parent = self.read_dir(current)?.parent_dir;
            if parent == 0 {
                break;
            }
            current = parent;
        }
        let mut current = clone_dir;
        for _ in 0..=super::NESTING_MAX + 1 {
            if origin_chain.contains(&current) {
                return Ok(());
            }
            let phys = self.read_dir(current)?;
            if phys.quota_bytes > 0 && phys.used_bytes.saturating_add(bytes) > phys.quota_bytes {
                return Err(SpaError::NoSpace);
            }
            if phys.parent_dir == 0 {
                return Ok(());
            }
            current = phys.parent_dir;
        }
        Ok(())
    }

    /// Bookmarks created at or before `created_txg` move from `from`'s head to `to`'s
    /// (`dsl_dataset_promote_sync`; `from`'s bookmarks ZAP stays, emptied or not, as
    /// OpenZFS leaves it).
    fn move_bookmarks(
        &mut self,
        from: u64,
        to: u64,
        created_txg: u64,
        txg: Txg,
    ) -> Result<(), SpaError> {
        let from_bookmarks = self.bookmarks_object(from)?;
        if from_bookmarks == 0 {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(from_bookmarks)).map_err(zap_error)?;
        for entry in entries {
            let ZapValue::U64s(values) = entry.value else {
                continue;
            };
            if values.get(1).is_none_or(|&created| created > created_txg) {
                continue;
            }
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            let to_bookmarks = self.bookmarks_object_hold(to, txg)?;
            let ctx = io_ctx!(self, txg);
            zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(from_bookmarks), &name)
                .map_err(zap_error)?;
            zap::zap_add(
                &mut self.dp.mos,
                &ctx,
                ObjectId(to_bookmarks),
                &name,
                &values,
            )
            .map_err(zap_error)?;
        }
        Ok(())
    }
}
