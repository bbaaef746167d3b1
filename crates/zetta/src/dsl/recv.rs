//! The dataset side of `zfs receive` (OpenZFS `dmu_recv_end_sync`, `dsl_dataset_clone_swap`,
//! `dsl_dataset_modified_since_snap`).
//!
//! A receive into an existing filesystem `T` writes into a hidden child `T/%recv` (a clone
//! of the incremental's base snapshot, or a new filesystem for a forced full stream), so
//! that `T` stays exactly as it was until the stream has been verified to its END. Then
//! `recv_swap` gives `T`'s head the received tree in one step: `T` takes `T/%recv`'s object
//! set, referenced bytes and dead list (blocks of the base snapshot the received tree no
//! longer uses — just what `T`'s own dead list would hold had it written them), the blocks
//! only `T`'s old head held are freed, and `T/%recv`'s records go without touching its
//! blocks. The caller has rolled `T` back to the base snapshot first, so the old head holds
//! nothing of its own in the incremental case.

use super::phys::{DslDatasetPhys, UsedKind};
use super::space::SpaceDelta;
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};

impl Spa {
    /// Whether a filesystem's head differs from its newest snapshot (written since, or not
    /// yet committed). True when it has no snapshot.
    pub fn modified_since_newest_snapshot(&mut self, fs: &str) -> Result<bool, SpaError> {
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| super::no_such_dataset(fs))?;
        self.open_dataset(dataset)?;
        let Some((_, _, newest)) = self.snapshots(fs)?.pop() else {
            return Ok(true);
        };
        let (dirty, head_bp) = if dataset == self.dp.directory.root_dataset {
            (self.dp.root_dataset.is_dirty(), self.root_bp())
        } else {
            let head = self
                .dp
                .datasets
                .get(&dataset)
                .ok_or_else(|| SpaError::Corrupt(format!("dataset {dataset} vanished")))?;
            (head.objset.is_dirty(), head.phys.bp)
        };
        Ok(dirty || head_bp != newest.bp)
    }

    /// Gives `target`'s head the tree of `received` (a filesystem directly below it, made by
    /// this receive) and removes `received`; see the module header.
    pub fn recv_swap(&mut self, target: &str, received: &str) -> Result<(), SpaError> {
        self.sync()?;
        let target_dataset = self
            .lookup_dataset(target)?
            .ok_or_else(|| super::no_such_dataset(target))?;
        let received_dir = self
            .lookup_dir(received)?
            .ok_or_else(|| super::no_such_dataset(received))?;
        let received_dataset = self.read_dir(received_dir)?.head_dataset;
        self.open_dataset(target_dataset)?;
        self.open_dataset(received_dataset)?;
        let head: DslDatasetPhys = self.head_phys(target_dataset)?;
        let old_bp = if target_dataset == self.dp.directory.root_dataset {
            self.root_bp()
        } else {
            head.bp
        };
        let new: DslDatasetPhys = self.head_phys(received_dataset)?;
        // Blocks only the old head held: born after its previous snapshot (none after a
        // rollback to it).
        let freed = self.free_blocks_born_after(target_dataset, &old_bp, head.prev_snap_txg)?;
        self.space_diduse(head.dir, UsedKind::Head, SpaceDelta::lost(&freed))?;
        // The received tree's own blocks move from its dir to the target's HEAD; the base's
        // blocks it released (its dead list) are the target's snapshots' now.
        let work = self.read_dir(received_dir)?;
        let gained = SpaceDelta {
            used: i64::try_from(work.used(UsedKind::Head)).unwrap_or(i64::MAX),
            compressed: i64::try_from(work.compressed_bytes).unwrap_or(i64::MAX),
            uncompressed: i64::try_from(work.uncompressed_bytes).unwrap_or(i64::MAX),
        };
        self.release_dir_space(received_dir)?;
        self.space_diduse(head.dir, UsedKind::Head, gained)?;
        let target_dir = self.read_dir(head.dir)?;
        let ctx = io_ctx!(self);
        let origin = super::space::origin_txg(&mut self.dp.mos, &ctx, &target_dir)?;
        let released: Vec<_> = self
            .read_dead_list(new.deadlist)?
            .into_iter()
            .filter(|bp| bp.birth_txg.0 > origin)
            .collect();
        let released = crate::dmu::BlockSpace::of_all(&self.root, &released).allocated_bytes;
        self.space_transfer(
            head.dir,
            i64::try_from(released).unwrap_or(i64::MAX),
            UsedKind::Head,
            UsedKind::Snap,
        )?;
        let unique = new.unique_bytes;
        self.replace_head_tree(target_dataset, head, &new, new.deadlist, unique)?;
        self.dp.datasets.remove(&received_dataset);
        self.unlink_dataset(received, received_dir)?;
        self.refresh_io_props()?;
        self.sync()?;
        Ok(())
    }
}
