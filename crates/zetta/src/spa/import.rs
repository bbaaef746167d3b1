//! Finding and importing pools (OpenZFS `spa_import`, `zpool_find_import`).
//!
//! Discovery reads the labels of candidate devices and groups them by pool guid; the newest
//! label config of each pool describes its vdev tree (Zetta's whole-tree copy when it has
//! one, else assembled from every top-level vdev's newest label, as OpenZFS's
//! `get_configs` does). A pool labelled by OpenZFS's keys alone is imported here only when
//! `spa::openzfs::discover::zetta_writes` finds its version and active features Zetta's
//! (wherever its creator numbered the MOS objects: `directory::MosDirectory::load` reads
//! them); others are `spa::openzfs`'s (read-only). Import then needs every top-level vdev
//! usable (redundancy lives inside top-level vdevs: losing one loses the pool, `-f` or not),
//! reads every uberblock ring, and opens the MOS of the newest uberblock that verifies —
//! falling back to older ones when the newest is damaged. The vdev tree is then rebuilt from
//! the MOS's own config (authoritative, consistent with that uberblock), the space maps are
//! loaded and the MOS's blocks marked in use.

use super::uberblock::{self, Uberblock};
use super::*;
use crate::dmu::ObjsetType;
use crate::nvpair_xdr::XdrNvList;
use std::collections::{BTreeMap, HashMap};

/// A pool found on devices, as `zpool import` lists it.
#[derive(Clone)]
pub struct ImportCandidate {
    pub name: String,
    pub guid: Guid,
    pub state: u64,
    pub txg: Txg,
    /// The newest label config (OpenZFS's keys; a label Zetta wrote before format 22 also
    /// carries the whole tree under `org.zetta:vdev_root`). Empty for a pool of an older
    /// format.
    pub config: XdrNvList,
    /// Each top-level vdev's subtree (`vdev_tree` of a label), by `id`, from the newest
    /// label among that vdev's devices: how OpenZFS's discovery assembles the tree
    /// (`get_configs`) when no label holds all of it.
    pub tops: BTreeMap<u64, (Txg, XdrNvList)>,
    /// Leaf guid → device, for every device found.
    pub devices: HashMap<Guid, DeviceRef>,
    /// Guid → device of every hot spare or cache device found among the devices (their
    /// labels name no pool: `vdev::config::aux_label`); import takes those its MOS lists,
    /// as OpenZFS's `spa_load_spares`/`spa_load_l2cache` find them by guid.
    pub aux: HashMap<Guid, DeviceRef>,
    /// `Some(format)` when the pool is in a Zetta on-disk format this code does not read
    /// (listed, refused at import).
    pub old_format: Option<u64>,
}

impl ImportCandidate {
    /// The vdev tree as far as the found devices allow (missing leaves have no device).
    /// From Zetta's whole-tree copy when the label has one, else assembled as OpenZFS's
    /// discovery does: the root (guid = pool guid), then `vdev_children` top-level vdevs,
    /// each from its newest label; a hole for every id in `hole_array`, and a device-less
    /// leaf (UNAVAIL) for a top-level vdev no found device belongs to.
    pub fn vdev_tree(&self) -> Result<Vdev, SpaError> {
        if let Some(format) = self.old_format {
            return Err(SpaError::Invalid(old_format_text(format)));
        }
        let mut root = Vdev::new(crate::vdev::VdevKind::Root, self.guid);
        // Ids come from disk: a hostile one must not overflow (it is refused below).
        let known = self
            .tops
            .keys()
            .next_back()
            .map_or(0, |id| id.saturating_add(1));
        let count = self
            .config
            .get_u64("vdev_children")
            .unwrap_or(known)
            .max(known);
        if count > crate::vdev::config::CHILDREN_MAX as u64 {
            return Err(SpaError::Corrupt(format!(
                "{count} top-level vdevs is too many"
            )));
        }
        let holes: Vec<u64> = match self.config.get("hole_array") {
            Some(crate::nvpair_xdr::XdrValue::Uint64Array(ids)) => ids.clone(),
            _ => Vec::new(),
        };
        for id in 0..count {
            let mut top = match self.tops.get(&id) {
                Some((_, tree)) => {
                    Vdev::from_config(tree, &self.devices).map_err(SpaError::Corrupt)?
                }
                None if holes.contains(&id) => Vdev::new(crate::vdev::VdevKind::Hole, Guid(0)),
                None => Vdev::new(crate::vdev::VdevKind::Leaf, Guid(0)),
            };
            top.id = id;
            root.children.push(top);
        }
        Ok(root)
    }
}

/// Why a pool of an older Zetta on-disk format is refused.
pub fn old_format_text(format: u64) -> String {
    format!(
        "the pool is in Zetta's on-disk format {format}; this version reads format {} only",
        uberblock::FORMAT_VERSION
    )
}

/// Groups the devices by the pool their labels name: the pools Zetta's engine imports.
/// A pool whose labels carry Zetta's current `org.zetta:format` is Zetta's; one labelled
/// by OpenZFS's keys alone (OpenZFS wrote it last, or Zetta from format 22 on) is Zetta's
/// when `spa::openzfs::discover::zetta_writes` says so (its version and active features
/// are ones Zetta maintains), else `spa::openzfs::discover`'s, imported read-only.
pub fn find_pools(devices: &[DeviceRef]) -> Vec<ImportCandidate> {
    let mut pools: HashMap<u64, ImportCandidate> = HashMap::new();
    let mut aux: HashMap<Guid, DeviceRef> = HashMap::new();
    for device in devices {
        let (config, txg) = match label::read_config(device.as_ref()) {
            None => {
                if let Some(guid) = label::read_aux_guid(device.as_ref()) {
                    aux.insert(guid, device.clone());
                }
                continue;
            }
            Some(label::DeviceLabel::Pool { config, txg }) => (config, txg),
            Some(label::DeviceLabel::OldZetta {
                name,
                pool_guid,
                format,
            }) => {
                pools.entry(pool_guid).or_insert_with(|| ImportCandidate {
                    name,
                    guid: Guid(pool_guid),
                    state: POOL_STATE_EXPORTED,
                    txg: Txg(0),
                    config: XdrNvList::new(),
                    tops: BTreeMap::new(),
                    devices: HashMap::new(),
                    aux: HashMap::new(),
                    old_format: Some(format),
                });
                continue;
            }
        };
        let (Some(pool_guid), Some(leaf_guid), Some(name)) = (
            config.get_u64("pool_guid"),
            config.get_u64("guid"),
            config.get_str("name").map(str::to_string),
        ) else {
            continue;
        };
        let state = config.get_u64("state").unwrap_or(POOL_STATE_ACTIVE);
        let entry = pools.entry(pool_guid).or_insert_with(|| ImportCandidate {
            name: name.clone(),
            guid: Guid(pool_guid),
            state,
            txg,
            config: config.clone(),
            tops: BTreeMap::new(),
            devices: HashMap::new(),
            aux: HashMap::new(),
            old_format: None,
        });
        if entry.old_format.is_some() {
            continue;
        }
        if txg > entry.txg {
            entry.txg = txg;
            entry.config = config.clone();
            entry.name = name;
            entry.state = state;
        }
        if let Some(top) = config.get_nvlist("vdev_tree") {
            let id = top.get_u64("id").unwrap_or(0);
            if entry.tops.get(&id).is_none_or(|(newest, _)| txg > *newest) {
                entry.tops.insert(id, (txg, top.clone()));
            }
        }
        entry.devices.insert(Guid(leaf_guid), device.clone());
    }
    let mut found: Vec<ImportCandidate> = pools.into_values().filter(candidate_is_zettas).collect();
    for candidate in &mut found {
        candidate.aux = aux.clone();
    }
    found.sort_by(|a, b| a.name.cmp(&b.name).then(a.guid.cmp(&b.guid)));
    found
}

/// Whether a found pool is Zetta's to import (see `find_pools`).
fn candidate_is_zettas(candidate: &ImportCandidate) -> bool {
    if candidate.old_format.is_some()
        || candidate
            .config
            .get_u64(crate::vdev::label::ZETTA_FORMAT_KEY)
            .is_some()
    {
        return true;
    }
    let own: Vec<DeviceRef> = candidate.devices.values().cloned().collect();
    super::openzfs::discover::find_pools_with_zetta(&own, 0)
        .iter()
        .find(|found| found.guid == candidate.guid.0)
        .is_some_and(|found| super::openzfs::discover::zetta_writes(found, &own).is_ok())
}

impl Spa {
    /// Imports a found pool, optionally under a new name.
    pub fn import(
        candidate: &ImportCandidate,
        new_name: Option<&str>,
        arc_size_bytes_max: u64,
    ) -> Result<Spa, SpaError> {
        Self::import_with(candidate, new_name, arc_size_bytes_max, false)
    }

    /// `import`, read-only when `readonly` (OpenZFS `spa_import` with `readonly=on`): the
    /// pool opens at its newest uberblock and nothing is written, not even the replay of
    /// its intent logs (their records stay for the next read-write import, and what they
    /// hold is not visible until then), nor the figures an older format lacks.
    pub fn import_with(
        candidate: &ImportCandidate,
        new_name: Option<&str>,
        arc_size_bytes_max: u64,
        readonly: bool,
    ) -> Result<Spa, SpaError> {
        let label_tree = candidate.vdev_tree()?;
        Self::import_tree(
            candidate,
            &label_tree,
            new_name,
            arc_size_bytes_max,
            readonly,
            None,
        )
    }

    /// The import proper, on a tree already assembled: from the labels (`import_with`), or
    /// given (`split`: the split-off half of a pool, whose MOS still holds the config of
    /// the pool it came from).
    pub(super) fn import_tree(
        candidate: &ImportCandidate,
        label_tree: &Vdev,
        new_name: Option<&str>,
        arc_size_bytes_max: u64,
        readonly: bool,
        split: Option<&super::split::SplitSource>,
    ) -> Result<Spa, SpaError> {
        if label_tree
            .children
            .iter()
            .any(|top| !top.state().is_usable())
        {
            return Err(SpaError::DevicesUnavailable);
        }
        // Newest uberblock first, across every label of every device.
        let mut uberblocks: Vec<Uberblock> = Vec::new();
        for top in &label_tree.children {
            for leaf in top.leaves() {
                let Some(device) = &leaf.device else { continue };
                for (offset, bytes) in label::read_ring(device.as_ref(), top.ashift) {
                    if let Some(ub) = Uberblock::decode(&bytes, offset) {
                        uberblocks.push(ub);
                    }
                }
            }
        }
        // Best first, as `vdev_uberblock_compare` orders them: txg, then timestamp.
        uberblocks.sort_by_key(|ub| std::cmp::Reverse((ub.txg, ub.timestamp_secs)));
        uberblocks.dedup_by(|a, b| a.txg == b.txg && a.rootbp == b.rootbp);
        if uberblocks.is_empty() {
            return Err(SpaError::Corrupt("no valid uberblock found".to_string()));
        }
        let mut last_error = None;
        for ub in &uberblocks {
            match Self::open_at(
                candidate,
                label_tree,
                ub,
                new_name,
                arc_size_bytes_max,
                readonly,
                split,
            ) {
                Ok(mut spa) => {
                    if !readonly {
                        spa.zil_claim_all()?;
                        spa.zil_replayed = spa.zil_replay_all()?;
                        spa.snapshot_props_upgrade()?;
                    }
                    return Ok(spa);
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| SpaError::Corrupt("no usable uberblock".to_string())))
    }

    fn open_at(
        candidate: &ImportCandidate,
        label_tree: &Vdev,
        ub: &Uberblock,
        new_name: Option<&str>,
        arc_size_bytes_max: u64,
        readonly: bool,
        split: Option<&super::split::SplitSource>,
    ) -> Result<Spa, SpaError> {
        let mut zio = Zio::new(Allocator::new(), arc_size_bytes_max);
        let txg = ub.txg.next();
        let (directory, root_config) = {
            let ctx = IoCtx {
                zio: &zio,
                root: label_tree,
                txg,
            };
            let mos = ObjectSet::open(&ctx, 0, &ub.rootbp, mos_policy())?;
            let loaded = super::directory::MosDirectory::load(&mos, &ctx)?;
            let config = loaded.config.clone();
            (loaded, config)
        };
        let errlog = directory.errlog.clone();
        // `ub_version` and the config's `version` move together (`spa_upgrade` dirties the
        // config with the uberblock): a mismatch is a MOS of another txg or pool.
        if directory.directory.version != ub.version {
            return Err(SpaError::Corrupt(format!(
                "uberblock version {} differs from the config's {}",
                ub.version, directory.directory.version
            )));
        }
        // The MOS is never salted (fletcher4), so it was read before the salt was known.
        zio.checksum_salt = directory.directory.checksum_salt;
        // An uberblock_t does not name its pool: a ring slot left by another pool on a
        // reused device leads to that pool's MOS, which is not this one.
        // A split-off pool's MOS is still its source pool's (`spa_vdev_split_mirror`: the
        // new pool's tree comes from the split, its config is written by its first txg).
        let mos_pool_guid = split.map_or(candidate.guid, |s| s.source_guid);
        if root_config.get_u64("pool_guid") != Some(mos_pool_guid.0) {
            return Err(SpaError::Corrupt(
                "uberblock belongs to another pool".to_string(),
            ));
        }
        let tree_config = match split {
            Some(source) => &source.tree_config,
            None => root_config
                .get_nvlist("vdev_tree")
                .ok_or_else(|| SpaError::Corrupt("config has no vdev tree".to_string()))?,
        };
        let root = Vdev::from_config(tree_config, &candidate.devices).map_err(SpaError::Corrupt)?;
        if root.children.iter().any(|top| !top.state().is_usable()) {
            return Err(SpaError::DevicesUnavailable);
        }
        let name = new_name
            .map(str::to_string)
            .or_else(|| root_config.get_str("name").map(str::to_string))
            .unwrap_or_else(|| candidate.name.clone());
        let root_dataset = directory.directory.root_dataset;
        // After a split, the ZAPs the source's config named and the new tree does not are
        // freed by the first sync (`vdev_zap`), as a detach frees a leaf's.
        // Spares and cache devices by guid: available ones carry aux labels, a spare in
        // use the pool's (it is a leaf of the tree too).
        let aux_devices: HashMap<Guid, DeviceRef> = candidate
            .aux
            .iter()
            .chain(candidate.devices.iter())
            .map(|(guid, device)| (*guid, device.clone()))
            .collect();
        let vdev_zaps_named = match split {
            Some(source) => source.zaps_named.clone(),
            None => super::vdev_zap::named_vdev_zaps(&root),
        };
        let mut spa = Spa {
            name,
            name_on_disk: None,
            guid: candidate.guid,
            root: std::sync::Arc::new(root),
            // Spares and cache devices stay with a split's source pool (`zpool split`
            // takes mirrors' leaves only).
            cache: match split {
                Some(_) => Vec::new(),
                None => crate::vdev::config::parse_aux_list(&directory.aux.l2cache, &aux_devices)
                    .map_err(SpaError::Corrupt)?,
            },
            spares: match split {
                Some(_) => Vec::new(),
                None => crate::vdev::config::parse_aux_list(&directory.aux.spares, &aux_devices)
                    .map_err(SpaError::Corrupt)?,
            },
            zio: std::sync::Arc::new(zio),
            dp: crate::dsl::Pool::new(
                ObjectSet::create(0, ObjsetType::Meta, mos_policy()),
                ub.rootbp,
                directory.directory,
                ObjectSet::create(
                    root_dataset,
                    ObjsetType::Filesystem,
                    dataset_policy(default_data_props()),
                ),
            ),
            open_txg: txg,
            last_synced_txg: ub.txg,
            config_dirty: !readonly,
            vdev_zaps_written: Some(vdev_zaps_named),
            props: directory.props,
            scan: directory.scan,
            dirty_bytes: 0,
            dirty_share: Default::default(),
            zil_replayed: Vec::new(),
            import_time_secs: now_secs(),
            state: POOL_STATE_ACTIVE,
            ms_arrays: Vec::new(),
            writeback: Default::default(),
            dataset_kstats: Default::default(),
            tx: Default::default(),
            readonly,
            openzfs: None,
            frozen: false,
            leaf_activity: Default::default(),
        };
        spa.publish_features();
        {
            let ctx = io_ctx!(spa, txg);
            spa.dp.mos = ObjectSet::open(&ctx, 0, &ub.rootbp, mos_policy())?;
            spa.dp.mos.dsl_origin = spa.dp.directory.origin_snapshot;
            let bonus = spa.dp.mos.bonus(&ctx, ObjectId(root_dataset))?;
            let root_phys = crate::dsl::phys::DslDatasetPhys::decode(&bonus, spa.dp.mos.dsl_origin)
                .map_err(|e| SpaError::Corrupt(format!("root dataset record: {e}")))?;
            spa.dp.root_dataset_bp = root_phys.bp;
            let mut policy = dataset_policy(default_data_props());
            policy.prev_snap_txg = Txg(root_phys.prev_snap_txg);
            spa.dp.root_dataset =
                ObjectSet::open(&ctx, root_dataset, &spa.dp.root_dataset_bp, policy)?;
            *spa.zio.errlog.lock() = errlog;
        }
        spa.load_space_maps()?;
        spa.dtl_load()?;
        // `vdev_initialize_load` / `vdev_trim_load`: each leaf's state from its leaf ZAP.
        spa.leaf_activity_load();
        spa.refresh_io_props()?;
        // `ds_quota` and `ds_reserved` of every dataset, from the props ZAPs.
        spa.load_ref_limits()?;
        // Format 3 keeps space figures that older pools never wrote: derive them once,
        // committed with the next txg (kept for the day a format change needs it again:
        // labels refuse formats below FORMAT_VERSION_MIN before this point; a pool
        // without `org.zetta:format` is of the current format).
        if root_config
            .get_u64(crate::vdev::label::ZETTA_FORMAT_KEY)
            .unwrap_or(uberblock::FORMAT_VERSION)
            < 3
            && !readonly
        {
            spa.rebuild_space_accounting()?;
        }
        if !readonly {
            spa.expand_vdevs_if_allowed();
        }
        Ok(spa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;
    use crate::nvpair_xdr::XdrValue;
    use crate::vdev::VdevKind;

    fn top(id: u64, guid: u64) -> XdrNvList {
        let mut leaf = Vdev::new(VdevKind::Leaf, Guid(guid));
        leaf.path = format!("/d{guid}");
        leaf.ashift = 12;
        leaf.asize_bytes = 1 << 30;
        leaf.ms_shift = 24;
        leaf.id = id;
        leaf.to_config()
    }

    // Why: a label OpenZFS wrote holds only its own top-level vdev (no `org.zetta:vdev_root`),
    // so the tree must be assembled from every top's label as OpenZFS's `get_configs` does:
    // `vdev_children` slots, holes from `hole_array`, and a top no found device belongs to
    // left UNAVAIL (import refuses it) rather than dropped, which would shift DVA numbers.
    #[test]
    fn the_tree_is_assembled_from_top_level_labels() {
        let device: DeviceRef = std::sync::Arc::new(MemDevice::new("d", 64 << 20));
        let mut config = XdrNvList::new();
        config.add("vdev_children", XdrValue::Uint64(4));
        config.add("hole_array", XdrValue::Uint64Array(vec![1]));
        let mut tops = BTreeMap::new();
        tops.insert(0, (Txg(9), top(0, 10)));
        tops.insert(3, (Txg(9), top(3, 13)));
        let candidate = ImportCandidate {
            name: "tank".to_string(),
            guid: Guid(77),
            state: POOL_STATE_EXPORTED,
            txg: Txg(9),
            config,
            tops,
            devices: HashMap::from([(Guid(10), device.clone()), (Guid(13), device)]),
            aux: HashMap::new(),
            old_format: None,
        };
        let root = candidate.vdev_tree().unwrap();
        assert_eq!(root.guid, Guid(77));
        assert_eq!(root.children.len(), 4);
        assert_eq!(root.children[0].guid, Guid(10));
        assert!(root.children[0].state().is_usable());
        assert_eq!(root.children[1].kind, VdevKind::Hole);
        assert_eq!(root.children[2].id, 2);
        assert!(
            !root.children[2].state().is_usable(),
            "a missing top is UNAVAIL"
        );
        assert_eq!(root.children[3].guid, Guid(13));
        // A leaf's size comes from its device when no Zetta key records it.
        assert_eq!(
            root.children[3].asize_bytes,
            1 << 30,
            "a top-level vdev keeps its recorded asize"
        );
    }

    // Why: top-level ids come from disk; an absurd one is refused, not allocated for.
    #[test]
    fn an_absurd_top_level_id_is_refused() {
        let mut tops = BTreeMap::new();
        tops.insert(u64::MAX, (Txg(1), top(0, 10)));
        let candidate = ImportCandidate {
            name: "tank".to_string(),
            guid: Guid(77),
            state: POOL_STATE_EXPORTED,
            txg: Txg(1),
            config: XdrNvList::new(),
            tops,
            devices: HashMap::new(),
            aux: HashMap::new(),
            old_format: None,
        };
        assert!(matches!(candidate.vdev_tree(), Err(SpaError::Corrupt(_))));
    }
}
