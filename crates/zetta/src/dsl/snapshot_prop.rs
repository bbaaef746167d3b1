//! Properties set on snapshots (OpenZFS `ds_props_obj` of a snapshot's dataset: `zfs set
//! user:x=1 fs@snap`, `zfs snapshot -o user:x=1`). Only user properties can be set on a
//! snapshot (libzfs `zfs_valid_proplist`: "this property can not be modified for
//! snapshots"); the CLI refuses native ones before anything is stored.
//!
//! Theory. Zetta's dataset record has no free word for a per-snapshot props ZAP yet, so a
//! snapshot's properties are entries `%snapprop:<dataset object>:<prop>` of the pool's root
//! dir props ZAP: `%` makes them private (`is_local_entry` is false, so no inheritance,
//! `zfs get all` or `zfs send -p` of the root sees them), and the key is the snapshot's MOS
//! dataset object, which survives `zfs rename` and `zfs promote` (neither rewrites the
//! object) and is never shared by two live snapshots. Invariant: a snapshot's entries go in
//! the same txg as its dataset object (`destroy_snapshot_sync` calls
//! `clear_snapshot_props`), so a freed and reused object number never inherits them.
//! `zfs snapshot -o` writes them in the snapshot's own sync task (one txg with the
//! snapshot). When the native OpenZFS dataset record lands, these move to `ds_props_obj`.

use super::{no_such_dataset, zap_error};
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::{ObjectId, Txg};
use crate::zap::{self, ZapError};

/// Prefix of every snapshot property entry in the root dir's props ZAP.
const PREFIX: &str = "%snapprop:";

fn key(object: u64, prop: &str) -> String {
    format!("{PREFIX}{object}:{prop}")
}

impl Spa {
    /// The root dir's props ZAP, created (in the open txg) when missing.
    pub(super) fn snapshot_props_zap(&mut self) -> Result<u64, SpaError> {
        self.props_zap(self.dp.directory.root_dir)
    }

    /// Sets a (user) property on the snapshot `full` (`fs@snap`).
    pub fn set_snapshot_prop(
        &mut self,
        full: &str,
        prop: &str,
        value: &str,
    ) -> Result<(), SpaError> {
        let object = self.snapshot_dataset_object(full)?;
        let zap_object = self.snapshot_props_zap()?;
        let txg = self.open_txg;
        self.write_snapshot_prop(zap_object, txg, object, prop, value)
    }

    /// Removes a property set on the snapshot `full`; absent is fine (`zfs inherit`).
    pub fn clear_snapshot_prop(&mut self, full: &str, prop: &str) -> Result<(), SpaError> {
        let object = self.snapshot_dataset_object(full)?;
        let zap_object = self.snapshot_props_zap()?;
        let ctx = io_ctx!(self);
        match zap::zap_remove(
            &mut self.dp.mos,
            &ctx,
            ObjectId(zap_object),
            key(object, prop),
        ) {
            Ok(()) | Err(ZapError::NotFound) => Ok(()),
            Err(e) => Err(zap_error(e)),
        }
    }

    pub(super) fn write_snapshot_prop(
        &mut self,
        zap_object: u64,
        txg: Txg,
        object: u64,
        prop: &str,
        value: &str,
    ) -> Result<(), SpaError> {
        let ctx = io_ctx!(self, txg);
        zap::zap_update_bytes(
            &mut self.dp.mos,
            &ctx,
            ObjectId(zap_object),
            key(object, prop),
            // As OpenZFS stores a string property: its bytes and a NUL.
            &[value.as_bytes(), b"\0"].concat(),
        )
        .map_err(zap_error)
    }

    /// The properties set on each snapshot of the pool: (`fs@snap`, prop, value), by name.
    /// Cheap when no snapshot has any (one read of the root's props ZAP).
    pub fn snapshot_props(&mut self) -> Result<Vec<(String, String, String)>, SpaError> {
        if self.openzfs.is_some() {
            return Ok(Vec::new());
        }
        let entries = self.snapshot_prop_entries()?;
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let mut names = std::collections::HashMap::new();
        for fs in self.dataset_names()? {
            for (name, object, _) in self.snapshots(&fs)? {
                names.insert(object, name);
            }
        }
        let mut out: Vec<(String, String, String)> = entries
            .into_iter()
            .filter_map(|(object, prop, value)| {
                names.get(&object).map(|name| (name.clone(), prop, value))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Removes every property of the snapshot dataset `object` (its destroy).
    pub(super) fn clear_snapshot_props(&mut self, object: u64) -> Result<(), SpaError> {
        let root = self.read_dir(self.dp.directory.root_dir)?;
        if root.props_zap == 0 {
            return Ok(());
        }
        let mine: Vec<String> = self
            .snapshot_prop_entries()?
            .into_iter()
            .filter(|(o, _, _)| *o == object)
            .map(|(o, prop, _)| key(o, &prop))
            .collect();
        let ctx = io_ctx!(self);
        for entry in mine {
            zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(root.props_zap), &entry)
                .map_err(zap_error)?;
        }
        Ok(())
    }

    /// (dataset object, prop, value) of every snapshot property entry.
    fn snapshot_prop_entries(&mut self) -> Result<Vec<(u64, String, String)>, SpaError> {
        let root = self.read_dir(self.dp.directory.root_dir)?;
        if root.props_zap == 0 {
            return Ok(Vec::new());
        }
        let ctx = io_ctx!(self);
        let entries =
            zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(root.props_zap)).map_err(zap_error)?;
        let mut out = Vec::new();
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name);
            let Some(rest) = name.strip_prefix(PREFIX) else {
                continue;
            };
            let Some((object, prop)) = rest.split_once(':') else {
                continue;
            };
            let Ok(object) = object.parse::<u64>() else {
                continue;
            };
            let Some(value) = super::prop::decode_entry(&name, &entry.value) else {
                return Err(SpaError::Corrupt(format!(
                    "props ZAP {}: entry {name} is not a value",
                    root.props_zap
                )));
            };
            out.push((object, prop.to_string(), value));
        }
        Ok(out)
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
