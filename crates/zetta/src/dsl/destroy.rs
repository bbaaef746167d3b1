//! `zfs destroy` of filesystems (OpenZFS `dsl_destroy.c`: `dsl_destroy_head_check`,
//! `dsl_destroy_head_sync_impl`), alone or with a whole tree of filesystems and snapshots
//! (`zfs destroy -r`, `-R`), as one sync task (`synctask`): one txg per command.
//!
//! Theory. A head is destroyed in the syncing context of the txg its task is assigned to,
//! after its object set has been written and accounted in that txg (step 1 of the commit),
//! so nothing of it is left in memory to write: the task takes the object set out of the
//! pool's table, discards its intent log, frees every block of its tree born after its
//! previous snapshot (older blocks are its origin's: a clone's), frees its dead list, takes
//! its space (and reservations) off its dir and the ancestors, and removes its name, ZAPs,
//! dir and dataset objects from the MOS. OpenZFS hands the tree to `async_destroy` (a
//! bptree freed over later txgs); Zetta frees it synchronously in the task, as OpenZFS's
//! `old_synchronous_dataset_destroy` does, and logs the same internal record:
//! `destroy fs (dsid) (synchronous, mintxg=N)`.
//!
//! Crash safety: the frees of the task go to this txg's space maps and are deferred two
//! txgs (blocks born in this very txg excepted: no committed state reaches them), so until
//! this txg's uberblock is written the previous one still reaches an intact tree, and after
//! it nothing names the tree. A power cut at any point leaves the filesystem either whole or
//! gone.
//!
//! A task may name many victims, filesystems and snapshots together (`destroy_queue`):
//! its check orders them so each can go once those before it are gone (a clone before its
//! origin snapshot, a filesystem's snapshots and children before it) and refuses the whole
//! set, changing nothing, when no order exists; the sync destroys them in that order, each
//! checked again against what the earlier ones did. OpenZFS runs one task per filesystem
//! (`dsl_destroy_head`) after one for all the snapshots; Zetta's one task gives `zfs destroy
//! -r` of any tree one txg.

use super::synctask::{SyncTaskId, SyncTx};
use super::DslError;
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use std::collections::BTreeSet;

impl Spa {
    /// `zfs destroy fs` of a filesystem without children or snapshots: one sync task,
    /// committed (one txg).
    pub fn destroy_filesystem(&mut self, name: &str) -> Result<(), SpaError> {
        let task = self.destroy_queue(&[name.to_string()])?;
        self.sync_task_wait(task)
    }

    /// The sync task that destroys `victims` (filesystems `fs` and snapshots `fs@snap`, in
    /// any order, all or none), queued for the open txg without committing it: the caller
    /// commits (once, with its history line) and collects the result with
    /// `sync_task_result`. Refused here already when a victim is missing, held, or keeps
    /// something outside the set alive (a child, a snapshot, a clone).
    pub fn destroy_queue(&mut self, victims: &[String]) -> Result<SyncTaskId, SpaError> {
        let (check_victims, sync_victims) = (victims.to_vec(), victims.to_vec());
        self.dsl_sync_task_queue(
            Box::new(move |spa, _tx| spa.destroy_order(&check_victims).map(|_| ())),
            Box::new(move |spa, tx| {
                for victim in spa.destroy_order(&sync_victims)? {
                    if victim.contains('@') {
                        spa.destroy_snapshot_sync(tx, &victim)?;
                        continue;
                    }
                    let origin = spa.origin_of(&victim)?;
                    spa.destroy_head_sync(tx, &victim)?;
                    // A clone's origin marked `zfs destroy -d` goes with its last clone
                    // (unless it is a victim here itself, destroyed in its turn).
                    if let Some(origin) = origin.filter(|o| !sync_victims.contains(o)) {
                        spa.destroy_if_deferred(tx, &origin)?;
                    }
                }
                Ok(())
            }),
        )
    }

    /// The check of `destroy_queue`: an order in which every victim can be destroyed once
    /// those before it are gone. When none can go next, the first remaining victim's own
    /// check gives the refusal (OpenZFS's text).
    fn destroy_order(&mut self, victims: &[String]) -> Result<Vec<String>, SpaError> {
        let mut pending: Vec<String> = Vec::with_capacity(victims.len());
        for victim in victims {
            if !pending.contains(victim) {
                pending.push(victim.clone());
            }
        }
        let mut gone = BTreeSet::new();
        let mut order = Vec::with_capacity(pending.len());
        while !pending.is_empty() {
            let mut next = None;
            for (index, victim) in pending.iter().enumerate() {
                if self.destroy_ready(victim, &gone)? {
                    next = Some(index);
                    break;
                }
            }
            let Some(index) = next else {
                let first = pending[0].clone();
                if first.contains('@') {
                    self.destroy_snapshot_check(&first)?;
                } else {
                    self.destroy_head_check(&first)?;
                }
                // Its own check passes, so only a victim of this set (a cycle) holds it.
                return Err(SpaError::Dsl(DslError::Busy { name: first }));
            };
            let victim = pending.remove(index);
            gone.insert(victim.clone());
            order.push(victim);
        }
        Ok(order)
    }

    /// Whether `victim` can be destroyed once `gone` are: it exists, and what would keep it
    /// (holds; a snapshot's clones; a filesystem's children and snapshots) is all in `gone`.
    fn destroy_ready(&mut self, victim: &str, gone: &BTreeSet<String>) -> Result<bool, SpaError> {
        if let Some((fs, _)) = victim.split_once('@') {
            if self.lookup_dataset(fs)?.is_none() {
                return Ok(false);
            }
            let Some((_, object, _)) = self
                .snapshots(fs)?
                .into_iter()
                .find(|(name, _, _)| name == victim)
            else {
                return Ok(false);
            };
            if !self.holds(victim)?.is_empty() {
                return Ok(false);
            }
            let clones = self.dependent_clones(object)?;
            return Ok(clones.iter().all(|clone| gone.contains(clone)));
        }
        let Some(dir) = self.lookup_dir(victim)? else {
            return Ok(false);
        };
        if dir == self.dp.directory.root_dir {
            return Ok(false);
        }
        for (child, _) in self.children(dir)? {
            if !gone.contains(&format!("{victim}/{child}")) {
                return Ok(false);
            }
        }
        let snapshots = self.snapshots(victim)?;
        Ok(snapshots.iter().all(|(name, _, _)| gone.contains(name)))
    }

    /// OpenZFS `dsl_destroy_head_check_impl`: the filesystem exists, is not the pool's root
    /// and has no children and no snapshots of its own (its origin's do not count).
    /// (its dir, its head dataset)
    pub(super) fn destroy_head_check(&mut self, name: &str) -> Result<(u64, u64), SpaError> {
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| SpaError::NoSuchDataset(name.to_string()))?;
        if dir == self.dp.directory.root_dir {
            return Err(SpaError::Dsl(DslError::PoolRoot {
                name: name.to_string(),
            }));
        }
        let mut children: Vec<String> = self
            .children(dir)?
            .into_iter()
            .map(|(child, _)| format!("{name}/{child}"))
            .collect();
        children.extend(
            self.snapshots(name)?
                .into_iter()
                .map(|(snapshot, _, _)| snapshot),
        );
        if !children.is_empty() {
            return Err(SpaError::Dsl(DslError::HasChildren {
                name: name.to_string(),
                children,
            }));
        }
        Ok((dir, self.read_dir(dir)?.head_dataset))
    }

    /// OpenZFS `dsl_destroy_head_sync_impl` with `old_synchronous_dataset_destroy`, in the
    /// syncing context of `tx.txg`: the head's object set is written in this txg already;
    /// its tree (what it wrote since its previous snapshot), intent log, dead list, space
    /// and records go.
    fn destroy_head_sync(&mut self, tx: SyncTx, name: &str) -> Result<(), SpaError> {
        let (dir, dataset) = self.destroy_head_check(name)?;
        // Loaded, so its intent log's blocks are known and freed with it.
        self.open_dataset(dataset)?;
        let mut head = self
            .dp
            .datasets
            .remove(&dataset)
            .ok_or_else(|| SpaError::Corrupt(format!("dataset {dataset} vanished")))?;
        let mintxg = head.phys.prev_snap_txg;
        self.log_history_internal_ds(
            tx,
            "destroy",
            name,
            dataset,
            &format!("(synchronous, mintxg={mintxg})"),
        );
        crate::zil::discard(&mut head.objset, &io_ctx!(self, tx.txg));
        // Blocks born up to the previous snapshot belong to it (a clone's origin); the
        // rest are this dataset's alone.
        self.free_blocks_born_after(dataset, &head.phys.bp, mintxg)?;
        if head.phys.deadlist != 0 {
            let ctx = io_ctx!(self, tx.txg);
            self.dp
                .mos
                .free_object(&ctx, ObjectId(head.phys.deadlist))?;
        }
        self.release_dir_space(dir)?;
        self.unlink_dataset(name, dir)
    }
}
