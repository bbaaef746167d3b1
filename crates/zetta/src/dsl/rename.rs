//! Renames (OpenZFS `dsl_dir_rename`, `dsl_dataset_rename_snapshot`): a filesystem's dir
//! moves between parents' child ZAPs, a snapshot changes its entry in the snapshot-name
//! ZAP. Nothing else moves: everything hangs off the dir or the snapshot object, so a
//! rename is a few ZAP updates in one txg.

use super::{no_such_dataset, zap_error, DslError};
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use crate::zap;

impl Spa {
    /// `zfs rename fs newfs` (OpenZFS `dsl_dir_rename`): the dir moves to its new parent's
    /// child ZAP under its new name, in one txg; its datasets, snapshots, properties and
    /// descendants go with it (they hang off the dir). A dataset cannot move below itself.
    pub fn rename_filesystem(&mut self, from: &str, to: &str) -> Result<(), SpaError> {
        let cross_pool = || {
            SpaError::Dsl(DslError::CrossPool {
                from: from.to_string(),
                to: to.to_string(),
            })
        };
        let dir = self
            .lookup_dir(from)?
            .ok_or_else(|| no_such_dataset(from))?;
        if !from.contains('/') {
            return Err(SpaError::Dsl(DslError::PoolRoot {
                name: from.to_string(),
            }));
        }
        if to.starts_with(&format!("{from}/")) {
            return Err(SpaError::Dsl(DslError::DescendantOfSelf {
                from: from.to_string(),
                to: to.to_string(),
            }));
        }
        if to.split('/').next() != from.split('/').next() {
            return Err(cross_pool());
        }
        if self.lookup_dir(to)?.is_some() {
            return Err(SpaError::Dsl(DslError::Exists {
                name: to.to_string(),
            }));
        }
        let (old_parent_name, old_leaf) = from.rsplit_once('/').unwrap_or((from, from));
        let Some((new_parent_name, new_leaf)) = to.rsplit_once('/') else {
            return Err(cross_pool());
        };
        let new_parent = self.lookup_dir(new_parent_name)?.ok_or_else(|| {
            SpaError::Dsl(DslError::NoParent {
                name: to.to_string(),
            })
        })?;
        let old_parent = self
            .lookup_dir(old_parent_name)?
            .ok_or_else(|| SpaError::Corrupt(format!("parent of '{from}' vanished")))?;
        let old_parent_phys = self.read_dir(old_parent)?;
        let ctx = io_ctx!(self);
        zap::zap_remove(
            &mut self.dp.mos,
            &ctx,
            ObjectId(old_parent_phys.child_dir_zap),
            old_leaf,
        )
        .map_err(zap_error)?;
        let mut new_parent_phys = self.read_dir(new_parent)?;
        let ctx = io_ctx!(self);
        if new_parent_phys.child_dir_zap == 0 {
            new_parent_phys.child_dir_zap = zap::zap_create(
                &mut self.dp.mos,
                &ctx,
                super::openzfs::ot::DSL_DIR_CHILD_MAP,
            )
            .map_err(zap_error)?
            .0;
            self.write_dir(new_parent, &new_parent_phys)?;
        }
        let ctx = io_ctx!(self);
        zap::zap_add(
            &mut self.dp.mos,
            &ctx,
            ObjectId(new_parent_phys.child_dir_zap),
            new_leaf,
            &[dir],
        )
        .map_err(zap_error)?;
        // What it counts for leaves the old ancestors and reaches the new ones.
        self.move_dir_space(dir, old_parent, new_parent)?;
        let mut phys = self.read_dir(dir)?;
        phys.parent_dir = new_parent;
        self.write_dir(dir, &phys)?;
        // Inherited properties (compression, recordsize…) may differ under the new parent.
        self.refresh_io_props()
    }

    /// `zfs rename fs@a fs@b`: a new name in the snapshot-name ZAP, same snapshot.
    pub fn rename_snapshot(&mut self, from: &str, to: &str) -> Result<(), SpaError> {
        let not_snapshot = |name: &str| {
            SpaError::Dsl(DslError::NotSnapshot {
                name: name.to_string(),
            })
        };
        let (fs, old) = from.split_once('@').ok_or_else(|| not_snapshot(from))?;
        let (to_fs, new) = to.split_once('@').ok_or_else(|| not_snapshot(to))?;
        if to_fs != fs {
            return Err(SpaError::Dsl(DslError::CrossDataset {
                from: from.to_string(),
                to: to.to_string(),
            }));
        }
        let dataset = self
            .lookup_dataset(fs)?
            .ok_or_else(|| no_such_dataset(fs))?;
        let object = self
            .snapshot_object(dataset, old)?
            .ok_or_else(|| no_such_dataset(from))?;
        if self.snapshot_object(dataset, new)?.is_some() {
            return Err(SpaError::Dsl(DslError::Exists {
                name: to.to_string(),
            }));
        }
        let zap_object = self.head_phys(dataset)?.snapnames_zap;
        let ctx = io_ctx!(self);
        zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(zap_object), old).map_err(zap_error)?;
        zap::zap_add(&mut self.dp.mos, &ctx, ObjectId(zap_object), new, &[object])
            .map_err(zap_error)?;
        Ok(())
    }
}
