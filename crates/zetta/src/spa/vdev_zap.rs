//! Per-vdev ZAPs as OpenZFS keeps them (`vdev.c` `vdev_construct_zaps`,
//! `vdev_create_link_zap`, `vdev_destroy_unlink_zap`; `spa.c` `spa_sync_config_object`).
//!
//! ```text
//! object directory  com.delphix:vdev_zap_map  u64  the AVZ: a ZAP_METADATA ZAP with one
//!                                                  entry per vdev ZAP, named by its object
//!                                                  number in lower-case hex, valued by it
//!                                                  (`zap_add_int`)
//! MOS config        leaf: com.delphix:vdev_zap_leaf  u64  an (empty) ZAP_METADATA ZAP
//!                   top:  com.delphix:vdev_zap_top   u64  an (empty) ZAP_METADATA ZAP
//!                   com.delphix:has_per_vdev_zaps    boolean, once every vdev has its own
//! ```
//!
//! Theory. OpenZFS gives every concrete vdev of the tree its own ZAP in the syncing
//! context that writes the config (`vdev_construct_zaps` from `spa_sync_config_object`):
//! a leaf its leaf ZAP, a top-level vdev its top ZAP (a single-disk top gets both), never
//! the root (that one needs `vdev_zaps_v2`, which Zetta does not enable), a hole or a cache
//! device. They hold per-vdev state (initialize/trim progress, vdev properties; Zetta
//! writes none), so they are empty here. Each is listed in the AVZ, which OpenZFS's
//! import checks against the config (`spa_ld_check_vdev_zaps`... `AVZ_ACTION_*`): a ZAP no
//! config names is leaked for `zdb -b`, a vdev without one makes OpenZFS rebuild the map.
//! When a vdev leaves the tree (detach, a finished replace, remove) its ZAPs are destroyed
//! and unlinked from the AVZ in the txg whose config no longer names them
//! (`vdev_destroy_unlink_zap`), whoever made them (OpenZFS or Zetta).
//!
//! Zetta makes them for feature-flags pools only: a legacy-version pool (zfs-fuse's 23,
//! version 28) stays as those writers left it (OpenZFS makes the AVZ at any version; the
//! older writers do not know it, and their `zdb` would count it leaked).
//!
//! Invariants: after the sync that writes a config, every ZAP it names is listed in the
//! AVZ; a ZAP named by the config written before and not by this one is freed in this
//! txg. `written` (in memory, from the tree at import) is what the last config named.

use super::*;
use crate::dsl::openzfs::{objdir, ot};
use crate::vdev::VdevKind;
use crate::zap;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

/// The vdev ZAPs a tree names (leaf and top ZAPs, every level).
pub(crate) fn named_vdev_zaps(root: &Vdev) -> BTreeSet<u64> {
    fn walk(vdev: &Vdev, out: &mut BTreeSet<u64>) {
        for object in [vdev.openzfs_keys.leaf(), vdev.openzfs_keys.top()] {
            if object != 0 {
                out.insert(object);
            }
        }
        for child in &vdev.children {
            walk(child, out);
        }
    }
    let mut out = BTreeSet::new();
    walk(root, &mut out);
    out
}

/// The ZAP slots of a subtree that are missing (`vdev_construct_zaps`'s choice): a leaf's
/// leaf ZAP, a top-level vdev's top ZAP; never the root's, a hole's. `top`: this vdev is a
/// top-level vdev.
fn missing<'a>(vdev: &'a Vdev, top: bool, out: &mut Vec<&'a AtomicU64>) {
    match vdev.kind {
        VdevKind::Hole => return,
        VdevKind::Root => {
            for child in &vdev.children {
                missing(child, true, out);
            }
            return;
        }
        _ => {}
    }
    if vdev.kind == VdevKind::Leaf && vdev.openzfs_keys.leaf() == 0 {
        out.push(&vdev.openzfs_keys.zap_leaf);
    }
    if top && vdev.openzfs_keys.top() == 0 {
        out.push(&vdev.openzfs_keys.zap_top);
    }
    for child in &vdev.children {
        missing(child, false, out);
    }
}

impl Spa {
    /// In the syncing context, before the config is generated (pass 1): the AVZ made when
    /// missing, a ZAP for every vdev without one, the ZAPs of vdevs that left the tree
    /// destroyed and unlinked. Returns whether the config changed.
    pub(crate) fn vdev_zaps_sync(&mut self, txg: Txg) -> Result<bool, SpaError> {
        if !zfeature::version_has_features(self.dp.directory.version) {
            return Ok(false);
        }
        let ctx = io_ctx!(self, txg);
        let zap_err = crate::dsl::zap_error;
        let named = named_vdev_zaps(&self.root);
        let written = self.vdev_zaps_written.get_or_insert_with(|| named.clone());
        let gone: Vec<u64> = written.difference(&named).copied().collect();
        let root = std::sync::Arc::clone(&self.root);
        let mut slots = Vec::new();
        missing(&root, false, &mut slots);
        if gone.is_empty() && slots.is_empty() {
            return Ok(false);
        }
        let mut avz = self.dp.directory.vdev_zap_map;
        let mos = &mut self.dp.mos;
        for &object in &gone {
            // `vdev_destroy_unlink_zap`.
            zap::zap_destroy(mos, &ctx, ObjectId(object)).map_err(zap_err)?;
            if avz != 0 {
                match zap::zap_remove(mos, &ctx, ObjectId(avz), format!("{object:x}")) {
                    Ok(()) | Err(zap::ZapError::NotFound) => {}
                    Err(e) => return Err(zap_err(e)),
                }
            }
        }
        for slot in &slots {
            if avz == 0 {
                // `spa_sync_config_object`: `zap_create_link` of the AVZ.
                avz = zap::zap_create(mos, &ctx, ot::ZAP_METADATA)
                    .map_err(zap_err)?
                    .0;
                zap::zap_update(
                    mos,
                    &ctx,
                    ObjectId(objdir::DIRECTORY_OBJECT),
                    objdir::VDEV_ZAP_MAP,
                    &[avz],
                )
                .map_err(zap_err)?;
            }
            // `vdev_create_link_zap`.
            let object = zap::zap_create(mos, &ctx, ot::ZAP_METADATA)
                .map_err(zap_err)?
                .0;
            zap::zap_add(mos, &ctx, ObjectId(avz), format!("{object:x}"), &[object])
                .map_err(zap_err)?;
            slot.store(object, Ordering::Relaxed);
        }
        self.dp.directory.vdev_zap_map = avz;
        self.vdev_zaps_written = Some(named_vdev_zaps(&self.root));
        self.config_dirty = true;
        Ok(true)
    }
}
