//! Properties set on snapshots (OpenZFS `dsl_prop.c` on a snapshot: `zfs set user:x=1
//! fs@snap`, `zfs snapshot -o user:x=1`, and the `snapprops` a `zfs receive` applies as
//! received values). Only user properties can be set on a snapshot (libzfs
//! `zfs_valid_proplist`: "this property can not be modified for snapshots"); the CLI
//! refuses native ones before anything is stored.
//!
//! Theory. As in OpenZFS (`dsl_prop_set_sync_impl`), a snapshot's properties live in its
//! own props ZAP, `ds_props_obj` of its `dsl_dataset_phys_t` (`DMU_OT_DSL_PROPS`, created
//! by the first set, pool version >= `SPA_VERSION_SNAP_PROPS` 12), with the entries of a
//! dir's props ZAP: `prop` for a local value, `prop$recvd` for a received one, stored as
//! `dsl::prop` stores them. Invariants: a snapshot's props ZAP is destroyed in the txg its
//! dataset object is freed (`destroy_snapshot_sync`, as `dsl_destroy_snapshot_sync_impl`);
//! a receive's `snapprops` replace the snapshot's received values at once and never touch
//! its local ones (`set_snapshot_received_props`, OpenZFS's `zfs_ioc_set_prop` with
//! `received` clearing the old received set first).
//!
//! Up to session 19 Zetta kept these values as entries `%snapprop:<dataset object>:<prop>`
//! of the root dir's props ZAP, where OpenZFS never looks. A pool that still has such
//! entries gets them moved into the snapshots' own ZAPs at its first read-write import
//! (`snapshot_props_upgrade`, one txg); entries of a snapshot that no longer exists are
//! dropped.

use super::openzfs::ot;
use super::prop::RECEIVED_SUFFIX;
use super::{no_such_dataset, zap_error};
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::{ObjectId, Txg};
use crate::zap::{self, ZapError};

/// Prefix of the session-19-and-earlier entries in the root dir's props ZAP.
const LEGACY_PREFIX: &str = "%snapprop:";

impl Spa {
    /// The snapshot dataset `object`'s props ZAP (`ds_props_obj`), created in `txg` when
    /// missing.
    fn snapshot_props_zap(&mut self, object: u64, txg: Txg) -> Result<u64, SpaError> {
        let mut phys = self.read_dataset_phys(object)?;
        if phys.props_zap == 0 {
            let ctx = io_ctx!(self, txg);
            phys.props_zap = zap::zap_create(&mut self.dp.mos, &ctx, ot::DSL_PROPS)
                .map_err(zap_error)?
                .0;
            self.dp
                .mos
                .set_bonus(&ctx, ObjectId(object), &phys.encode(self.dp.mos.dsl_origin))?;
        }
        Ok(phys.props_zap)
    }

    /// Sets a (user) property on the snapshot `full` (`fs@snap`).
    pub fn set_snapshot_prop(
        &mut self,
        full: &str,
        prop: &str,
        value: &str,
    ) -> Result<(), SpaError> {
        let object = self.snapshot_dataset_object(full)?;
        let txg = self.open_txg;
        self.write_snapshot_prop(object, txg, prop, value)
    }

    /// Removes a property set on the snapshot `full`; absent is fine (`zfs inherit`).
    pub fn clear_snapshot_prop(&mut self, full: &str, prop: &str) -> Result<(), SpaError> {
        let object = self.snapshot_dataset_object(full)?;
        let zap_object = self.read_dataset_phys(object)?.props_zap;
        if zap_object == 0 {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        match zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(zap_object), prop) {
            Ok(()) | Err(ZapError::NotFound) => Ok(()),
            Err(e) => Err(zap_error(e)),
        }
    }

    /// Replaces the received values of the snapshot `full` with `props` (a receive's
    /// `snapprops` for it); its local values stay.
    pub fn set_snapshot_received_props(
        &mut self,
        full: &str,
        props: &[(String, String)],
    ) -> Result<(), SpaError> {
        let object = self.snapshot_dataset_object(full)?;
        let txg = self.open_txg;
        let old: Vec<String> = self
            .snapshot_entries(object)?
            .into_iter()
            .map(|(entry, _)| entry)
            .filter(|entry| entry.ends_with(RECEIVED_SUFFIX))
            .collect();
        if old.is_empty() && props.is_empty() {
            return Ok(());
        }
        let zap_object = self.snapshot_props_zap(object, txg)?;
        let ctx = io_ctx!(self, txg);
        for entry in old {
            zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(zap_object), &entry)
                .map_err(zap_error)?;
        }
        for (prop, value) in props {
            self.write_snapshot_prop(object, txg, &format!("{prop}{RECEIVED_SUFFIX}"), value)?;
        }
        Ok(())
    }

    /// Writes entry `entry` (a property, or `prop$recvd`) of the snapshot dataset
    /// `object` in `txg`, creating its props ZAP when it has none.
    pub(super) fn write_snapshot_prop(
        &mut self,
        object: u64,
        txg: Txg,
        entry: &str,
        value: &str,
    ) -> Result<(), SpaError> {
        let zap_object = self.snapshot_props_zap(object, txg)?;
        let ctx = io_ctx!(self, txg);
        super::prop::write_entry(&mut self.dp.mos, &ctx, zap_object, entry, value)
    }

    /// The property entries of every snapshot of the pool that has any: (`fs@snap`, entry,
    /// value), by name, entries as a dir's (`prop`, `prop$recvd`). Reads each snapshot's
    /// record; only those with a props ZAP cost more.
    pub fn snapshot_props(&mut self) -> Result<Vec<(String, String, String)>, SpaError> {
        let mut out = Vec::new();
        if let Some(f) = self.openzfs.clone() {
            for fs in self.dataset_names()? {
                for (name, _, phys) in f.view.snapshots(&fs) {
                    if phys.props_zap != 0 {
                        for (entry, value) in f.view.local_props(&name) {
                            out.push((name.clone(), entry, value));
                        }
                    }
                }
            }
            out.sort();
            return Ok(out);
        }
        for fs in self.dataset_names()? {
            for (name, object, phys) in self.snapshots(&fs)? {
                if phys.props_zap == 0 {
                    continue;
                }
                for (entry, value) in self.snapshot_entries(object)? {
                    out.push((name.clone(), entry, value));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The entries of the snapshot dataset `object`'s props ZAP (none without one).
    fn snapshot_entries(&mut self, object: u64) -> Result<Vec<(String, String)>, SpaError> {
        let zap_object = self.read_dataset_phys(object)?.props_zap;
        if zap_object == 0 {
            return Ok(Vec::new());
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(zap_object)).map_err(zap_error)?;
        let mut out = Vec::new();
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            let Some(value) = super::prop::decode_entry(&name, &entry.value) else {
                return Err(SpaError::Corrupt(format!(
                    "props ZAP {zap_object}: entry {name} is not a value"
                )));
            };
            out.push((name, value));
        }
        Ok(out)
    }

    /// Destroys the props ZAP of the snapshot dataset `object` (its destroy, same txg).
    pub(super) fn destroy_snapshot_props(&mut self, object: u64) -> Result<(), SpaError> {
        let zap_object = self.read_dataset_phys(object)?.props_zap;
        if zap_object != 0 {
            let ctx = io_ctx!(self);
            zap::zap_destroy(&mut self.dp.mos, &ctx, ObjectId(zap_object)).map_err(zap_error)?;
        }
        Ok(())
    }

    /// Moves the session-19-and-earlier `%snapprop:` entries of the root dir's props ZAP
    /// into the snapshots' own ZAPs (see the module header), in the open txg. Nothing to do
    /// on almost every pool: one lookup of the root's props ZAP.
    pub(crate) fn snapshot_props_upgrade(&mut self) -> Result<(), SpaError> {
        if self.openzfs.is_some() {
            return Ok(());
        }
        let root = self.read_dir(self.dp.directory.root_dir)?;
        if root.props_zap == 0 {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(root.props_zap)).map_err(zap_error)?;
        let mut legacy = Vec::new();
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            let Some(rest) = name.strip_prefix(LEGACY_PREFIX) else {
                continue;
            };
            let parsed = rest
                .split_once(':')
                .and_then(|(object, prop)| Some((object.parse::<u64>().ok()?, prop.to_string())));
            let value = parsed
                .as_ref()
                .and_then(|(_, prop)| super::prop::decode_entry(prop, &entry.value));
            legacy.push((name, parsed.zip(value)));
        }
        if legacy.is_empty() {
            return Ok(());
        }
        let live: std::collections::HashSet<u64> = self
            .dataset_names()?
            .into_iter()
            .map(|fs| self.snapshots(&fs))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .map(|(_, object, _)| object)
            .collect();
        let txg = self.open_txg;
        for (entry, moved) in legacy {
            if let Some(((object, prop), value)) = moved {
                if live.contains(&object) {
                    self.write_snapshot_prop(object, txg, &prop, &value)?;
                }
            }
            let ctx = io_ctx!(self, txg);
            zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(root.props_zap), &entry)
                .map_err(zap_error)?;
        }
        Ok(())
    }

    /// The MOS dataset object of the snapshot `full`.
    fn snapshot_dataset_object(&mut self, full: &str) -> Result<u64, SpaError> {
        let (fs, _) = full.split_once('@').ok_or_else(|| no_such_dataset(full))?;
        self.snapshots(fs)?
            .into_iter()
            .find(|(name, _, _)| name == full)
            .map(|(_, object, _)| object)
            .ok_or_else(|| no_such_dataset(full))
    }
}
