//! The leaves' dirty time logs in the MOS (OpenZFS `vdev.c` `vdev_dtl_sync`,
//! `vdev_dtl_load`; the tree itself is `vdev::dtl`).
//!
//! Each txg, before the space maps converge (`Spa::sync_quiesce` step 2b): every leaf that
//! cannot take writes (offline, unavailable, faulted) gets the syncing txg in its DTL (its
//! writes of that txg were skipped: OpenZFS dirties the DTL from the failed leaf zio), and
//! every leaf whose DTL changed is written whole: a DTL space map object is made the first
//! time (`space_map_alloc(mos, 4 KiB)`, the config then names it under `DTL`), truncated,
//! and given one ALLOC entry per range after a debug word with the txg (`space_map_write`).
//! Its blocks are MOS blocks of this txg, so the metaslab space maps record them in the
//! same passes as every other MOS block. A leaf that leaves the pool frees its object in
//! the txg that drops it. At import every leaf naming a `DTL` gets its ranges back from the
//! map (ours or OpenZFS's: same bytes), before anything reads through the tree.

use super::*;
use crate::vdev::dtl::{DTL_GEOMETRY, DTL_SPACE_MAP_BLOCK_SIZE_BYTES};

impl Spa {
    /// The first txg a device attached now does not miss, plus one txg of margin (OpenZFS
    /// `spa_vdev_attach`'s `dtl_max_txg`: `txg + TXG_CONCURRENT_STATES`): everything born
    /// before it is in the new leaf's DTL until a resilver copies it.
    pub(crate) fn dtl_max_txg(&self) -> u64 {
        self.open_txg.0 + 1
    }

    /// Frees the DTL objects of leaves that left the pool (`vdev_dtl_sync` for a detached
    /// leaf: `space_map_free`), in the open txg.
    pub(crate) fn dtl_free(&mut self, objects: &[u64]) -> Result<(), SpaError> {
        if objects.is_empty() {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        for &object in objects {
            self.dp.mos.free_object(&ctx, ObjectId(object))?;
        }
        self.config_dirty = true;
        Ok(())
    }

    /// Step 2b of a txg's sync: DTLs of leaves that miss this txg, then every changed DTL
    /// written to its space map (`vdev_dtl_sync`).
    pub(crate) fn dtl_sync(&mut self, txg: Txg) -> Result<(), SpaError> {
        let ctx = io_ctx!(self, txg);
        let mut config_changed = false;
        for leaf in self.root.leaves() {
            if leaf.dtl.take_fault() {
                // Faulted since the last DTL sync, maybe by a write of the txg before
                // (its MOS blocks or labels, written after that txg's DTL sync).
                leaf.dtl
                    .dirty(txg.0.saturating_sub(1).max(TXG_INITIAL.0), 1);
            }
            if !leaf.state().is_usable() {
                leaf.dtl.dirty(txg.0, 1);
            }
            if !leaf.dtl.take_dirty() {
                continue;
            }
            let mut object = ObjectId(leaf.dtl.object());
            if object.0 == 0 {
                // `space_map_alloc`: the bonus as the metaslab maps have it (no
                // spacemap_histogram: the 24-byte `space_map_phys_t`).
                object = self.dp.mos.create_object(
                    &ctx,
                    space_map::DMU_OT_SPACE_MAP,
                    DTL_SPACE_MAP_BLOCK_SIZE_BYTES,
                    space_map::DMU_OT_SPACE_MAP_HEADER,
                    space_map::SPACE_MAP_SIZE_V0,
                )?;
                leaf.dtl.set_object(object.0);
                config_changed = true;
            }
            let entries = leaf.dtl.to_entries();
            let records = if entries.is_empty() {
                Vec::new()
            } else {
                space_map::encode_sync_records(&entries, DTL_GEOMETRY, txg.0, 1)
                    .map_err(|e| SpaError::Corrupt(format!("DTL of {}: {e}", leaf.path)))?
            };
            let bytes = space_map::words_to_bytes(&space_map::encode_records(&records));
            // `space_map_truncate` then `space_map_write`.
            self.dp.mos.truncate(&ctx, object, 0)?;
            if !bytes.is_empty() {
                self.dp.mos.write(&ctx, object, 0, &bytes)?;
            }
            let mut phys = space_map::SpaceMapPhys::new_v0(object.0);
            phys.length_bytes = bytes.len() as u64;
            let txgs: u64 = leaf.dtl.ranges().iter().map(|&(_, count)| count).sum();
            phys.alloc_bytes = i64::try_from(txgs).unwrap_or(i64::MAX);
            self.dp.mos.set_bonus(&ctx, object, &phys.encode())?;
        }
        self.config_dirty |= config_changed;
        Ok(())
    }

    /// After `zpool clear` (OpenZFS `vdev_clear` asks for a resilver): a leaf usable again
    /// with txgs in its DTL gets them now, since the engine resilvers synchronously.
    pub fn resilver_if_needed(&mut self) -> Result<(), SpaError> {
        if self.needs_resilver() {
            self.resilver()?;
        }
        Ok(())
    }

    /// `vdev_dtl_load` at import: every leaf naming a DTL object gets its ranges from it.
    /// The map came from disk: a bonus or entries that do not decode, or a map naming
    /// impossible txgs, refuse the import as corrupt metadata.
    pub(crate) fn dtl_load(&mut self) -> Result<(), SpaError> {
        let ctx = io_ctx!(self);
        for leaf in self.root.leaves() {
            let object = ObjectId(leaf.dtl.object());
            if object.0 == 0 {
                continue;
            }
            let corrupt =
                |why: String| SpaError::Corrupt(format!("DTL {object} of {}: {why}", leaf.path));
            let bonus = self.dp.mos.bonus(&ctx, object)?;
            let phys =
                space_map::SpaceMapPhys::decode(&bonus).map_err(|e| corrupt(e.to_string()))?;
            let size = self.dp.mos.extent_bytes(&ctx, object)?;
            if phys.length_bytes > size || phys.length_bytes % 8 != 0 {
                return Err(corrupt(format!(
                    "smp_length {} of an object of {size} bytes",
                    phys.length_bytes
                )));
            }
            let length = usize::try_from(phys.length_bytes).map_err(|e| corrupt(e.to_string()))?;
            let bytes = self.dp.mos.read(&ctx, object, 0, length)?;
            let entries = space_map::decode_entries(&bytes, DTL_GEOMETRY)
                .map_err(|e| corrupt(e.to_string()))?;
            leaf.dtl.load_entries(&entries).map_err(corrupt)?;
        }
        Ok(())
    }
}
