//! Changing a live pool's vdev tree: add, attach, detach, replace, online/offline, clear,
//! and growing vdevs whose devices got larger (OpenZFS `spa_vdev_attach`, `spa_vdev_detach`,
//! `spa_vdev_add`, `vdev_online`).
//!
//! Top-level vdev numbers are DVA addresses, so they never change: attach turns a top-level
//! leaf into a mirror in place (the mirror inherits its number, size and metaslabs), detach
//! collapses a one-child mirror back, and replace wraps the old leaf in a `replacing` pair
//! until resilver finishes. A new child misses every block born before it arrived; resilver
//! fills it (its DTL, `vdev::dtl`, says which txgs it misses).
//!
//! Hot spares and cache devices live outside the tree (`Spa::spares`, `Spa::cache`, the
//! MOS `spares`/`l2cache` lists, aux labels naming no pool). A replace by one of the
//! pool's spares wraps the leaf in a `spare` pair instead (`VdevKind::Spare`, the spare
//! under its own guid with `is_spare`), which no resilver collapses: `zpool detach` of the
//! original keeps the spare for good (off the list), of the spare returns it (its aux
//! label rewritten at once). A spare is in use exactly while its guid is in the tree.

use super::*;
use std::sync::atomic::Ordering;

/// Path of indexes from the root to a leaf.
fn find_leaf_path(vdev: &Vdev, name: &str, path: &mut Vec<usize>) -> bool {
    if vdev.is_leaf() {
        return vdev.path == name || vdev.guid.0.to_string() == name;
    }
    for (index, child) in vdev.children.iter().enumerate() {
        path.push(index);
        if find_leaf_path(child, name, path) {
            return true;
        }
        path.pop();
    }
    false
}

fn node_mut<'a>(root: &'a mut Vdev, path: &[usize]) -> &'a mut Vdev {
    let mut node = root;
    for &index in path {
        node = &mut node.children[index];
    }
    node
}

fn node<'a>(root: &'a Vdev, path: &[usize]) -> &'a Vdev {
    let mut node = root;
    for &index in path {
        node = &node.children[index];
    }
    node
}

/// Moves the top-level identity (number, size, metaslabs, the top ZAP) from `from` onto
/// `to` (`vdev_top_transfer`).
pub(super) fn move_top_fields(from: &mut Vdev, to: &mut Vdev) {
    let top_zap = from
        .openzfs_keys
        .zap_top
        .swap(0, std::sync::atomic::Ordering::Relaxed);
    to.openzfs_keys
        .zap_top
        .store(top_zap, std::sync::atomic::Ordering::Relaxed);
    to.id = from.id;
    to.ashift = from.ashift;
    to.asize_bytes = from.asize_bytes;
    to.ms_shift = from.ms_shift;
    to.ms_array_object = from.ms_array_object;
    to.is_log = from.is_log;
    to.create_txg = from.create_txg;
    from.ashift = 0;
    from.ms_shift = 0;
    from.ms_array_object = 0;
    from.is_log = false;
}

/// Replacing pairs whose new device is complete collapse to the new device.
pub(super) fn complete_replacements(vdev: &mut Vdev, retired: &mut Vec<u64>) {
    for child in vdev.children.iter_mut() {
        complete_replacements(child, retired);
    }
    for index in 0..vdev.children.len() {
        if vdev.children[index].kind == VdevKind::Replacing
            && vdev.children[index].children.len() == 2
        {
            let mut pair = std::mem::replace(
                &mut vdev.children[index],
                Vdev::new(VdevKind::Root, Guid(0)),
            );
            let mut new = pair.children.remove(1);
            new.id = pair.id;
            retired.extend(dtl_objects(&pair));
            vdev.children[index] = new;
        }
    }
    if vdev.kind == VdevKind::Replacing && vdev.children.len() == 2 && vdev.ashift != 0 {
        // A replacing pair at the top level collapses onto its new device.
        let mut new = vdev.children.remove(1);
        retired.extend(dtl_objects(vdev));
        move_top_fields(vdev, &mut new);
        *vdev = new;
    }
}

/// The DTL space map objects of a subtree's leaves (freed when it leaves the pool, as
/// `vdev_dtl_sync` frees a detached leaf's).
pub(super) fn dtl_objects(vdev: &Vdev) -> Vec<u64> {
    vdev.leaves()
        .iter()
        .map(|leaf| leaf.dtl.object())
        .filter(|&object| object != 0)
        .collect()
}

/// Whether the aux device `vdev` answers to `name`: its path, its `/dev` path's short
/// name (`zpool_vdev_name`: `loop1` for `/dev/loop1`), or its guid.
fn aux_is_named(vdev: &Vdev, name: &str) -> bool {
    vdev.path == name
        || vdev.path.strip_prefix("/dev/") == Some(name)
        || vdev.guid.0.to_string() == name
}

/// `SPA_VERSION_SPARES`: the first pool version with hot spares.
pub const SPA_VERSION_SPARES: u64 = 3;

impl Spa {
    fn leaf_path(&self, name: &str) -> Result<Vec<usize>, SpaError> {
        let mut path = Vec::new();
        if find_leaf_path(&self.root, name, &mut path) {
            Ok(path)
        } else {
            Err(SpaError::Invalid("no such device in pool".to_string()))
        }
    }

    /// Adds top-level vdevs (`zpool add`).
    pub fn add_vdevs(&mut self, tops: &[TopSpec], ashift: u32) -> Result<(), SpaError> {
        let txg = self.open_txg;
        let mut built = Vec::new();
        for (offset, spec) in tops.iter().enumerate() {
            built.push(build_top(
                spec,
                (self.root.children.len() + offset) as u64,
                ashift,
                txg,
            )?);
        }
        for top in built {
            let mut group = MetaslabGroup::with_ms_shift(
                top.id as u32,
                top.asize_bytes,
                top.ashift,
                top.ms_shift,
            )
            .map_err(|e| SpaError::Invalid(e.to_string()))?;
            group.data_disks = top.data_disks();
            if top.is_log {
                self.zio.log_allocator.lock().add_group(group);
            } else {
                self.zio.allocator.lock().add_group(group);
            }
            self.root_mut().children.push(top);
            self.ms_arrays.push(Vec::new());
        }
        self.config_dirty = true;
        self.sync()?;
        Ok(())
    }

    /// Adds cache (L2ARC) devices (`zpool add pool cache dev…`): listed in the MOS
    /// `l2cache` object, labelled `POOL_STATE_L2CACHE` (`spa_vdev_add`,
    /// `spa_validate_aux`, `vdev_label_init(VDEV_LABEL_L2CACHE)`). `ashift`: the one asked
    /// for (`-o ashift`), else the device's 512-byte sectors.
    pub fn add_cache_devices(
        &mut self,
        devices: &[(String, DeviceRef)],
        ashift: Option<u32>,
    ) -> Result<(), SpaError> {
        let leaves = self.new_aux_leaves(devices, ashift)?;
        self.cache.extend(leaves);
        self.config_dirty = true;
        self.sync()?;
        Ok(())
    }

    /// Adds hot spares (`zpool create … spare dev…`, `zpool add pool spare dev…`): listed in
    /// the MOS `spares` object and labelled `POOL_STATE_SPARE`. A pool before version 3
    /// (`SPA_VERSION_SPARES`) has none (`spa_vdev_add`: ENOTSUP).
    pub fn add_spare_devices(
        &mut self,
        devices: &[(String, DeviceRef)],
        ashift: Option<u32>,
    ) -> Result<(), SpaError> {
        if self.dp.directory.version < SPA_VERSION_SPARES {
            return Err(SpaError::Invalid(
                "pool must be upgraded to add hot spares".to_string(),
            ));
        }
        let leaves = self.new_aux_leaves(devices, ashift)?;
        self.spares.extend(leaves);
        self.config_dirty = true;
        self.sync()?;
        Ok(())
    }

    /// The leaves of new aux devices, each checked against every device the pool has
    /// (`spa_validate_aux_devs`: EINVAL for a duplicate).
    fn new_aux_leaves(
        &self,
        devices: &[(String, DeviceRef)],
        ashift: Option<u32>,
    ) -> Result<Vec<Vdev>, SpaError> {
        let mut leaves: Vec<Vdev> = Vec::new();
        for (path, device) in devices {
            let known = self
                .root
                .leaves()
                .into_iter()
                .chain(self.cache.iter())
                .chain(self.spares.iter())
                .chain(leaves.iter())
                .any(|v| v.path == *path);
            if known {
                return Err(SpaError::Invalid(format!(
                    "{path} is already part of the pool"
                )));
            }
            // `vdev_label_init`: the device's old labels and uberblock ring go before its
            // aux label is written (with the pool's labels, at the sync below).
            label::clear_labels(device.as_ref()).map_err(|e| SpaError::Device(e.to_string()))?;
            let mut leaf = Vdev::new_leaf(path, Some(device.clone()));
            leaf.ashift = ashift.unwrap_or(crate::vdev::config::AUX_ASHIFT_DEFAULT);
            leaf.create_txg = self.open_txg;
            leaves.push(leaf);
        }
        Ok(leaves)
    }

    /// Removes a cache device or a top-level log vdev (`zpool remove`). Data vdevs cannot be
    /// removed: their blocks would have to move.
    pub fn remove_device(&mut self, name: &str) -> Result<(), SpaError> {
        // `spa_vdev_remove` of an aux device: out of its MOS list, its label left as it is
        // (an available spare's or cache device's label names no pool).
        let aux_named = |v: &Vdev| aux_is_named(v, name);
        if let Some(index) = self.spares.iter().position(aux_named) {
            // A spare standing in for a leaf stays (EBUSY) until detached.
            if self.spare_in_use(self.spares[index].guid) {
                return Err(SpaError::Invalid(
                    "Pool busy; removal may already be in progress".to_string(),
                ));
            }
            self.spares.remove(index);
            self.config_dirty = true;
            self.sync()?;
            return Ok(());
        }
        if let Some(index) = self.cache.iter().position(aux_named) {
            self.cache.remove(index);
            self.config_dirty = true;
            self.sync()?;
            return Ok(());
        }
        let top_index = self
            .root
            .children
            .iter()
            .position(|top| top.display_name() == name || (top.is_leaf() && top.path == name));
        let Some(top_index) = top_index else {
            return Err(SpaError::Invalid("no such device in pool".to_string()));
        };
        if !self.root.children[top_index].is_log {
            return Err(SpaError::Invalid(
                "operation not supported on this type of pool".to_string(),
            ));
        }
        self.sync()?;
        // Intent logs with blocks on it start over elsewhere (their records are all in the
        // txg just committed), then the device's space and space maps go.
        {
            let ctx = io_ctx!(self);
            let vdev = top_index as u32;
            if self.dp.root_dataset.zil.uses_vdev(vdev) {
                crate::zil::discard(&mut self.dp.root_dataset, &ctx);
            }
            for head in self.dp.datasets.values_mut() {
                if head.objset.zil.uses_vdev(vdev) {
                    crate::zil::discard(&mut head.objset, &ctx);
                }
            }
        }
        self.zio.log_allocator.lock().remove_group(top_index as u32);
        {
            let ctx = io_ctx!(self);
            let maps = std::mem::take(&mut self.ms_arrays[top_index]);
            for object in maps.into_iter().filter(|&o| o != 0) {
                self.dp.mos.free_object(&ctx, ObjectId(object))?;
            }
            let array = self.root.children[top_index].ms_array_object;
            if array != 0 {
                self.dp.mos.free_object(&ctx, ObjectId(array))?;
            }
        }
        let mut hole = Vdev::new(VdevKind::Hole, Guid::random());
        hole.id = top_index as u64;
        let removed = std::mem::replace(&mut self.root_mut().children[top_index], hole);
        self.dtl_free(&dtl_objects(&removed))?;
        for leaf in removed.leaves() {
            if let Some(device) = &leaf.device {
                let _ = label::clear_labels(device.as_ref());
            }
        }
        self.config_dirty = true;
        self.sync()?;
        Ok(())
    }

    /// Attaches `device` as a mirror of the leaf named `existing` and resilvers it.
    pub fn attach(
        &mut self,
        existing: &str,
        new_path: &str,
        device: DeviceRef,
    ) -> Result<(), SpaError> {
        let path = self.leaf_path(existing)?;
        self.sync()?;
        let mut new_leaf = Vdev::new_leaf(new_path, Some(device));
        new_leaf.dtl.dirty(
            TXG_INITIAL.0,
            self.dtl_max_txg().saturating_sub(TXG_INITIAL.0),
        );
        let top_index = path[0];
        let top_asize = {
            let top = &self.root.children[top_index];
            match top.kind {
                VdevKind::Leaf | VdevKind::Mirror => top.asize_bytes,
                _ => {
                    return Err(SpaError::Invalid(
                        "can only attach to mirrors and top-level disks".to_string(),
                    ))
                }
            }
        };
        if new_leaf.asize_bytes < top_asize {
            return Err(SpaError::Invalid("device is too small".to_string()));
        }
        let top = &mut self.root_mut().children[top_index];
        if top.kind == VdevKind::Leaf {
            let mut old = std::mem::replace(top, Vdev::new(VdevKind::Mirror, Guid::random()));
            let mut mirror = Vdev::new(VdevKind::Mirror, Guid::random());
            move_top_fields(&mut old, &mut mirror);
            old.id = 0;
            new_leaf.id = 1;
            mirror.children = vec![old, new_leaf];
            *top = mirror;
        } else {
            new_leaf.id = top.children.len() as u64;
            top.children.push(new_leaf);
        }
        self.config_dirty = true;
        self.resilver()?;
        Ok(())
    }

    /// Replaces the leaf `old` with `device` (resilvering onto it).
    pub fn replace(
        &mut self,
        old: &str,
        new_path: &str,
        device: DeviceRef,
    ) -> Result<(), SpaError> {
        let new_leaf = Vdev::new_leaf(new_path, Some(device));
        self.replace_leaf(old, new_leaf, VdevKind::Replacing)
    }

    /// The hot spare named `spare` (path, short name of a `/dev` path as `zpool status`
    /// shows it, or guid), if the pool has one.
    pub fn spare_named(&self, spare: &str) -> Option<&Vdev> {
        self.spares.iter().find(|s| aux_is_named(s, spare))
    }

    /// Whether the hot spare `guid` stands in for a leaf (`spa_spare_exists` with the
    /// pool: VDEV_AUX_SPARED, INUSE).
    pub fn spare_in_use(&self, guid: Guid) -> bool {
        self.root.leaves().iter().any(|leaf| leaf.guid == guid)
    }

    /// Swaps the hot spare `spare` in for the leaf `old` (`zpool replace pool old spare`,
    /// `spa_vdev_attach` with a spare): a `spare` vdev holds the original and the spare —
    /// under the spare's own guid, `is_spare` — while the spare resilvers and after, until
    /// `zpool detach` of one of them; the spare stays in the pool's list, INUSE.
    pub fn replace_with_spare(&mut self, old: &str, spare: &str) -> Result<(), SpaError> {
        let Some(entry) = self.spare_named(spare) else {
            return Err(SpaError::Invalid("no such device in pool".to_string()));
        };
        if self.spare_in_use(entry.guid) {
            return Err(SpaError::Invalid(format!("{spare} is busy")));
        }
        let Some(device) = entry.device.clone() else {
            return Err(SpaError::DevicesUnavailable);
        };
        let mut new_leaf = Vdev::new_leaf(&entry.path, Some(device));
        new_leaf.guid = entry.guid;
        new_leaf.is_spare = true;
        let path = self.leaf_path(old)?;
        let under_spare =
            path.len() >= 2 && node(&self.root, &path[..path.len() - 1]).kind == VdevKind::Spare;
        if under_spare || node(&self.root, &path).is_spare {
            // Replacing under a `spare` vdev (another spare for the original, or a device
            // for a spare in use) is not built.
            return Err(SpaError::Invalid(
                "operation not supported on this type of pool".to_string(),
            ));
        }
        self.replace_leaf(old, new_leaf, VdevKind::Spare)
    }

    /// Wraps the leaf `old` in a `kind` pair (`replacing` or `spare`) with `new_leaf`
    /// and resilvers the new one.
    fn replace_leaf(
        &mut self,
        old: &str,
        mut new_leaf: Vdev,
        kind: VdevKind,
    ) -> Result<(), SpaError> {
        let path = self.leaf_path(old)?;
        self.sync()?;
        let old_leaf = node(&self.root, &path);
        if new_leaf.asize_bytes
            < old_leaf
                .asize_bytes
                .min(self.root.children[path[0]].asize_bytes)
            && path.len() == 1
        {
            return Err(SpaError::Invalid("device is too small".to_string()));
        }
        new_leaf.dtl.dirty(
            TXG_INITIAL.0,
            self.dtl_max_txg().saturating_sub(TXG_INITIAL.0),
        );
        let target = node_mut(self.root_mut(), &path);
        let mut old_vdev = std::mem::replace(target, Vdev::new(kind, Guid::random()));
        let mut pair = Vdev::new(kind, Guid::random());
        if path.len() == 1 {
            move_top_fields(&mut old_vdev, &mut pair);
        } else {
            pair.id = old_vdev.id;
        }
        old_vdev.id = 0;
        new_leaf.id = 1;
        pair.children = vec![old_vdev, new_leaf];
        *target = pair;
        self.config_dirty = true;
        self.resilver()?;
        self.expand_vdevs_if_allowed();
        self.sync()?;
        Ok(())
    }

    /// Detaches a leaf from a mirror (or a replacing pair).
    pub fn detach(&mut self, name: &str) -> Result<(), SpaError> {
        let path = self.leaf_path(name)?;
        if path.len() < 2 {
            return Err(SpaError::Invalid(
                "only applicable to mirror and replacing vdevs".to_string(),
            ));
        }
        let parent_path = &path[..path.len() - 1];
        let leaf_index = path[path.len() - 1];
        {
            let parent = node(&self.root, parent_path);
            if !matches!(
                parent.kind,
                VdevKind::Mirror | VdevKind::Replacing | VdevKind::Spare
            ) {
                return Err(SpaError::Invalid(
                    "only applicable to mirror and replacing vdevs".to_string(),
                ));
            }
            let others_complete = parent.children.iter().enumerate().any(|(i, c)| {
                i != leaf_index
                    && c.state().is_usable()
                    && c.leaves().iter().all(|l| l.dtl.is_empty())
            });
            if !others_complete {
                return Err(SpaError::Invalid("no valid replicas".to_string()));
            }
        }
        self.sync()?;
        let parent = node_mut(self.root_mut(), parent_path);
        let from_spare = parent.kind == VdevKind::Spare;
        let mut detached = parent.children.remove(leaf_index);
        // `spa_vdev_detach` under a `spare` vdev: detaching the original makes the spare
        // a permanent member (out of the spares list, `unspare`); detaching the spare
        // returns it to the list, AVAIL, with its aux label back.
        let made_permanent = if from_spare && !detached.is_spare {
            parent
                .children
                .iter_mut()
                .find(|c| c.is_spare)
                .map(|spare| {
                    spare.is_spare = false;
                    spare.guid
                })
        } else {
            None
        };
        for (i, child) in parent.children.iter_mut().enumerate() {
            child.id = i as u64;
        }
        if parent.children.len() == 1 {
            let mut only = parent.children.remove(0);
            if parent.ashift != 0 {
                move_top_fields(parent, &mut only);
            } else {
                only.id = parent.id;
            }
            *parent = only;
        }
        if let Some(guid) = made_permanent {
            self.spares.retain(|s| s.guid != guid);
        }
        self.dtl_free(&dtl_objects(&detached))?;
        if let Some(device) = &detached.device {
            let _ = label::clear_labels(device.as_ref());
            if from_spare && detached.is_spare {
                // `vdev_label_init(VDEV_LABEL_REMOVE)` of a spare: its aux label again
                // (the sync below rewrites it with the pool's labels too).
                detached.is_spare = false;
                let aux =
                    crate::vdev::config::aux_label(self.dp.directory.version, &detached, true);
                let _ = label::write_config(device.as_ref(), &aux, &[0, 1, 2, 3]);
            }
        }
        self.config_dirty = true;
        // The detached disk may have been the smallest (OpenZFS `spa_vdev_detach` reopens
        // and expands with autoexpand on): a 2T disk detached from a 4T one leaves a 4T vdev.
        self.expand_vdevs_if_allowed();
        self.sync()?;
        Ok(())
    }

    /// Takes a leaf offline (`zpool offline`); refused when it would lose data. Brought
    /// back online, a leaf that missed writes meanwhile (its DTL: every txg synced while it
    /// was offline, and the open one) is resilvered, as `vdev_online` asks for.
    pub fn set_offline(&mut self, name: &str, offline: bool) -> Result<(), SpaError> {
        let path = self.leaf_path(name)?;
        let open_txg = self.open_txg.0;
        let leaf = node(&self.root, &path);
        let was_usable = leaf.state().is_usable();
        leaf.offline.store(offline, Ordering::Relaxed);
        if offline && !self.root.children[path[0]].state().is_usable() {
            leaf.offline.store(false, Ordering::Relaxed);
            return Err(SpaError::Invalid("no valid replicas".to_string()));
        }
        if offline == was_usable {
            // Writes of the open txg may have gone out before (offline) or been skipped
            // before (online) the change: the txg counts as missed.
            leaf.dtl.dirty(open_txg, 1);
        }
        if !offline && !leaf.fault_kept.load(Ordering::Relaxed) {
            // A fault the diagnosis gave stays until `zpool clear`, as `vdev_online` keeps
            // `vdev_faulted`.
            leaf.faulted.store(false, Ordering::Relaxed);
        }
        let resilver = !offline && !leaf.dtl.is_empty();
        self.config_dirty = true;
        self.sync()?;
        if resilver {
            self.resilver()?;
        }
        Ok(())
    }

    /// Un-faults a leaf (`zpool clear`, `vdev_clear`): its diagnosis verdicts (degraded,
    /// faulted) go with it; writes of the open txg may have skipped a faulted leaf, so
    /// that txg goes into its DTL (the resilver after the clear copies it). True when a
    /// verdict kept in the config went (the config must be written again).
    pub fn clear_fault(&self, leaf: &Vdev) -> bool {
        if leaf.faulted.swap(false, Ordering::Relaxed) {
            leaf.dtl.dirty(self.open_txg.0, 1);
        }
        let kept = leaf.fault_kept.swap(false, Ordering::Relaxed);
        let degraded = leaf.degraded.swap(false, Ordering::Relaxed);
        kept || degraded
    }

    /// Clears error counters and faults (`zpool clear`).
    pub fn clear_errors(&mut self) {
        let mut verdicts = false;
        for leaf in self.root.leaves() {
            leaf.stats.clear_errors();
            verdicts |= self.clear_fault(leaf);
        }
        for top in &self.root.children {
            top.stats.clear_errors();
        }
        if verdicts {
            self.config_dirty = true;
        }
    }

    /// The leaf with `guid`, if the pool has it.
    pub fn leaf_by_guid(&self, guid: u64) -> Option<&Vdev> {
        self.root
            .leaves()
            .into_iter()
            .find(|leaf| leaf.guid.0 == guid)
    }

    /// The diagnosis's verdict on leaf `guid` (OpenZFS `vdev_degrade` with
    /// VDEV_AUX_ERR_EXCEEDED, the checksum SERD engine fired): the leaf is DEGRADED, still
    /// serving I/O, and stays so in the config until `zpool clear`. Nothing changes for a
    /// leaf already degraded or faulted (false); the caller syncs the config.
    pub fn degrade_leaf(&mut self, guid: u64) -> Result<bool, SpaError> {
        let leaf = self
            .leaf_by_guid(guid)
            .ok_or_else(|| SpaError::Invalid("no such device in pool".to_string()))?;
        if leaf.faulted.load(Ordering::Relaxed) || leaf.degraded.load(Ordering::Relaxed) {
            return Ok(false);
        }
        leaf.degraded.store(true, Ordering::Relaxed);
        self.config_dirty = true;
        Ok(true)
    }

    /// The diagnosis's verdict on leaf `guid` when its I/O SERD engine fired (OpenZFS
    /// `vdev_fault`, VDEV_AUX_ERR_EXCEEDED): the leaf is FAULTED and takes no I/O until
    /// `zpool clear`. As `vdev_fault` does, a leaf holding the only copy of some data
    /// (its top-level vdev could not work without it) is degraded instead. False when
    /// nothing changed; the caller syncs the config.
    pub fn fault_leaf(&mut self, guid: u64) -> Result<bool, SpaError> {
        let mut path = Vec::new();
        let found = self
            .leaves_with_paths()
            .into_iter()
            .find(|(_, leaf)| leaf.guid.0 == guid);
        let Some((leaf_path, _)) = found else {
            return Err(SpaError::Invalid("no such device in pool".to_string()));
        };
        path.extend(leaf_path);
        let leaf = node(&self.root, &path);
        if leaf.faulted.load(Ordering::Relaxed) {
            return Ok(false);
        }
        leaf.faulted.store(true, Ordering::Relaxed);
        if !self.root.children[path[0]].state().is_usable() {
            leaf.faulted.store(false, Ordering::Relaxed);
            if leaf.degraded.swap(true, Ordering::Relaxed) {
                return Ok(false);
            }
        } else {
            leaf.faulted.store(false, Ordering::Relaxed);
            leaf.fault();
            leaf.fault_kept.store(true, Ordering::Relaxed);
            leaf.degraded.store(false, Ordering::Relaxed);
        }
        self.config_dirty = true;
        Ok(true)
    }

    /// Every leaf with its path of child indexes from the root.
    fn leaves_with_paths(&self) -> Vec<(Vec<usize>, &Vdev)> {
        fn walk<'a>(vdev: &'a Vdev, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, &'a Vdev)>) {
            if vdev.is_leaf() {
                out.push((path.clone(), vdev));
                return;
            }
            for (index, child) in vdev.children.iter().enumerate() {
                path.push(index);
                walk(child, path, out);
                path.pop();
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut Vec::new(), &mut out);
        out
    }

    /// With `autoexpand=on`, grows top-level vdevs whose devices all got larger.
    pub fn expand_vdevs_if_allowed(&mut self) {
        if self.props.get_str("autoexpand") != Some("on") {
            return;
        }
        let mut grown = Vec::new();
        for (index, top) in self.root_mut().children.iter_mut().enumerate() {
            let leaves = top.leaves();
            if leaves.iter().any(|l| l.device.is_none()) {
                continue;
            }
            let child_size = leaves
                .iter()
                .filter_map(|l| {
                    l.device
                        .as_ref()
                        .map(|d| label::data_size_bytes(d.size_bytes()))
                })
                .min()
                .unwrap_or(0);
            let child_size = round_down_shift(child_size, top.ashift);
            let new_asize = match top.kind {
                VdevKind::Raidz { .. } => child_size * top.children.len() as u64,
                _ => child_size,
            };
            if new_asize > top.asize_bytes {
                top.asize_bytes = new_asize;
                grown.push((index, new_asize));
            }
        }
        if !grown.is_empty() {
            let mut allocator = self.zio.allocator.lock();
            for (index, asize) in grown {
                if let Some(group) = allocator.group_mut(index as u32) {
                    group.expand(asize);
                }
            }
            self.config_dirty = true;
        }
    }

    /// `zpool reguid` (OpenZFS `spa_change_guid`): the pool takes a new guid, `new` or a
    /// fresh random one. The pool guid is the root vdev's guid, so the uberblock's
    /// `ub_guid_sum` changes with it; the labels and the MOS config carry the new one from
    /// the txg this commits. As in OpenZFS, the labels of the pool's leaves are rewritten
    /// by that txg's config sync, not atomically across devices. Refused: 0 (EINVAL), the
    /// pool's own guid (EEXIST: the caller checks the other imported pools), a read-only
    /// pool. Returns the new guid.
    pub fn reguid(&mut self, new: Option<Guid>) -> Result<Guid, SpaError> {
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        let guid = new.unwrap_or_else(Guid::random);
        if guid.0 == 0 {
            return Err(SpaError::Invalid("invalid pool guid 0".to_string()));
        }
        if guid == self.guid {
            return Err(SpaError::Busy(format!("pool guid {} is in use", guid.0)));
        }
        self.root_mut().guid = guid;
        self.guid = guid;
        self.config_dirty = true;
        self.sync()?;
        Ok(guid)
    }
}
