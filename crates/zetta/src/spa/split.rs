//! `zpool split`: one side of every mirror leaves to make a new pool (OpenZFS `spa.c`
//! `spa_vdev_split_mirror`, `libzfs_pool.c` `zpool_vdev_split`).
//!
//! Theory. Every side of a mirror holds the whole pool: after a sync, the leaves taken
//! from each top-level mirror hold a complete copy of the MOS and every block as of that
//! txg. The new pool is that copy under a new pool guid, its tree made of the taken leaves,
//! each now a top-level vdev with its mirror's number, size, ashift and metaslabs (DVAs
//! keep pointing at the same vdev numbers). Top-level vdevs that are not split — intent
//! logs, holes — become holes in the new tree, and trailing ones are dropped, as
//! `zpool_vdev_split` builds it; cache devices and spares stay with the source pool.
//!
//! Order, for crash safety (OpenZFS's too: new labels before the detach):
//! 1. the source syncs (txg N): both sides of every mirror hold txg N;
//! 2. the new pool opens from the taken leaves at N (`import_tree` with the split tree: the
//!    MOS still holds the source's config, whose pool guid it checks), takes its
//!    properties, and syncs txg N+1: its labels, MOS config and uberblocks name the new
//!    pool. ZAPs and DTLs of the source's vdevs that the new tree lacks are freed there;
//! 3. the source drops the taken leaves (a mirror left with one child collapses to it, as
//!    a detach does), frees their DTLs and syncs.
//!
//! A crash between 2 and 3 leaves the source's last config naming leaves whose labels now
//! belong to another pool: they are missing for it, each mirror keeps its other side.
//!
//! Refused as OpenZFS refuses: a top-level data vdev that is not a mirror ("Source pool
//! must be composed only of mirrors"), two named devices of one mirror or a device not in
//! the pool ("Device list must include at most one disk from each mirror"), a taken leaf
//! that is not a healthy leaf (EINVAL), a resilver still owed to any leaf of a mirror
//! (EBUSY).
//!
//! Left out: indirect vdevs (Zetta removes no data vdev), `special`/`dedup` classes.

use super::import::ImportCandidate;
use super::vdev_ops::{dtl_objects, move_top_fields};
use super::*;
use crate::nvpair_xdr::{XdrNvList, XdrValue};
use crate::vdev::config::{VDEV_ZAP_LEAF_KEY, VDEV_ZAP_TOP_KEY};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the split-off pool's import needs from its source (`import_tree`).
pub(crate) struct SplitSource {
    /// The new pool's vdev tree (a root config: type, guid = the new pool guid, children).
    pub tree_config: XdrNvList,
    /// The source pool's guid: the one the MOS config still carries.
    pub source_guid: Guid,
    /// The per-vdev ZAPs the source's config named: those the new tree does not name are
    /// freed by the new pool's first sync.
    pub zaps_named: BTreeSet<u64>,
}

/// One top-level slot of the new pool, in the source's top-level order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitSlot {
    /// An intent log or hole of the source: a hole in the new pool.
    Hole,
    /// Child `child` of the source's top-level mirror `top`.
    Leaf { top: usize, child: usize },
}

/// Why a split is refused.
pub const SPLIT_NOT_MIRRORS: &str = "Source pool must be composed only of mirrors";
pub const SPLIT_DEVICE_LIST: &str = "Device list must include at most one disk from each mirror";

impl Spa {
    /// Which leaf of every mirror goes to the new pool (`zpool_vdev_split`): the one named
    /// in `named` (a leaf path or guid), else the mirror's last child. Holes and logs give
    /// holes; trailing ones are dropped.
    pub fn split_plan(&self, named: &[String]) -> Result<Vec<SplitSlot>, SpaError> {
        let mut slots = Vec::new();
        let mut found = 0usize;
        for (top_index, top) in self.root.children.iter().enumerate() {
            if top.is_log || top.kind == VdevKind::Hole {
                slots.push(SplitSlot::Hole);
                continue;
            }
            if top.kind != VdevKind::Mirror {
                return Err(SpaError::Invalid(SPLIT_NOT_MIRRORS.to_string()));
            }
            let entry = top.children.iter().position(|child| {
                named
                    .iter()
                    .any(|name| child.path == *name || child.guid.0.to_string() == *name)
            });
            if entry.is_some() {
                found += 1;
            }
            let child = entry.unwrap_or(top.children.len() - 1);
            slots.push(SplitSlot::Leaf {
                top: top_index,
                child,
            });
        }
        if found != named.len() {
            return Err(SpaError::Invalid(SPLIT_DEVICE_LIST.to_string()));
        }
        while slots.last() == Some(&SplitSlot::Hole) {
            slots.pop();
        }
        debug_assert!(slots.iter().all(|slot| match slot {
            SplitSlot::Leaf { top, child } => *child < self.root.children[*top].children.len(),
            SplitSlot::Hole => true,
        }));
        Ok(slots)
    }

    /// Splits the pool along `plan` (`split_plan`) into a new pool named `new_name`, which
    /// is returned imported (its first txg synced, `props` set in it); the caller exports it
    /// or keeps it. See the module header for the order of the writes.
    pub fn split(
        &mut self,
        new_name: &str,
        plan: &[SplitSlot],
        props: &[(String, String)],
        arc_size_bytes_max: u64,
    ) -> Result<Spa, SpaError> {
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        check_pool_name(new_name).map_err(SpaError::Invalid)?;
        self.split_check(plan)?;
        self.sync()?;
        let new_guid = Guid::random();
        let mut children = Vec::new();
        let mut devices: HashMap<Guid, DeviceRef> = HashMap::new();
        for (index, slot) in plan.iter().enumerate() {
            let config = match *slot {
                SplitSlot::Hole => {
                    let mut hole = Vdev::new(VdevKind::Hole, Guid::random());
                    hole.id = index as u64;
                    hole.to_config()
                }
                SplitSlot::Leaf { top, child } => {
                    let mirror = &self.root.children[top];
                    let leaf = &mirror.children[child];
                    if let Some(device) = &leaf.device {
                        devices.insert(leaf.guid, device.clone());
                    }
                    leaf_as_top_config(leaf, mirror)
                }
            };
            children.push(config);
        }
        let mut tree_config = XdrNvList::new();
        tree_config.add("type", XdrValue::String(b"root".to_vec()));
        tree_config.add("id", XdrValue::Uint64(0));
        tree_config.add("guid", XdrValue::Uint64(new_guid.0));
        tree_config.add("children", XdrValue::NvListArray(children));
        let source = SplitSource {
            tree_config,
            source_guid: self.guid,
            zaps_named: super::vdev_zap::named_vdev_zaps(&self.root),
        };
        let label_tree = Vdev::from_config(&source.tree_config, &devices)
            .map_err(|why| SpaError::Corrupt(format!("split tree: {why}")))?;
        let candidate = ImportCandidate {
            name: new_name.to_string(),
            guid: new_guid,
            state: POOL_STATE_ACTIVE,
            txg: self.last_synced_txg,
            config: XdrNvList::new(),
            tops: BTreeMap::new(),
            devices,
            aux: std::collections::HashMap::new(),
            old_format: None,
        };
        let mut new_spa = Spa::import_tree(
            &candidate,
            &label_tree,
            Some(new_name),
            arc_size_bytes_max,
            false,
            Some(&source),
        )?;
        // The new pool's MOS still has the DTLs of the leaves it left behind.
        let kept: BTreeSet<u64> = dtl_objects(&new_spa.root).into_iter().collect();
        let orphaned: Vec<u64> = dtl_objects(&self.root)
            .into_iter()
            .filter(|object| !kept.contains(object))
            .collect();
        new_spa.dtl_free(&orphaned)?;
        for (key, value) in props {
            new_spa.props.set_str(key, value);
        }
        new_spa.config_dirty = true;
        new_spa.sync()?;
        assert_eq!(new_spa.guid, new_guid);
        self.split_detach(plan)?;
        Ok(new_spa)
    }

    /// `spa_vdev_split_mirror`'s checks of the taken leaves: a healthy leaf (EINVAL
    /// otherwise) of a mirror none of whose leaves is owed a resilver (EBUSY).
    fn split_check(&self, plan: &[SplitSlot]) -> Result<(), SpaError> {
        for slot in plan {
            let SplitSlot::Leaf { top, child } = *slot else {
                continue;
            };
            let mirror = self
                .root
                .children
                .get(top)
                .filter(|m| m.kind == VdevKind::Mirror && !m.is_log)
                .ok_or_else(|| SpaError::Invalid(SPLIT_NOT_MIRRORS.to_string()))?;
            let leaf = mirror
                .children
                .get(child)
                .ok_or_else(|| SpaError::Invalid(SPLIT_DEVICE_LIST.to_string()))?;
            if !leaf.is_leaf() || leaf.state() != crate::vdev::VdevState::Online {
                return Err(SpaError::Invalid("invalid vdev configuration".to_string()));
            }
            if mirror.leaves().iter().any(|l| !l.dtl.is_empty()) {
                return Err(SpaError::Busy("a resilver is needed".to_string()));
            }
        }
        Ok(())
    }

    /// Step 3: the source lets the taken leaves go.
    fn split_detach(&mut self, plan: &[SplitSlot]) -> Result<(), SpaError> {
        let mut departed = Vec::new();
        for slot in plan {
            let SplitSlot::Leaf { top, child } = *slot else {
                continue;
            };
            let mirror = &mut self.root_mut().children[top];
            let leaf = mirror.children.remove(child);
            departed.extend(dtl_objects(&leaf));
            for (index, other) in mirror.children.iter_mut().enumerate() {
                other.id = index as u64;
            }
            if mirror.children.len() == 1 {
                let mut only = mirror.children.remove(0);
                move_top_fields(mirror, &mut only);
                *mirror = only;
            }
        }
        self.dtl_free(&departed)?;
        self.config_dirty = true;
        self.expand_vdevs_if_allowed();
        self.sync()?;
        Ok(())
    }
}

/// A mirror's leaf as a top-level vdev of the split-off pool: the leaf's own keys (guid,
/// path, DTL, leaf ZAP) with the mirror's top-level ones (number, metaslabs, ashift, size,
/// creation txg). Its top ZAP is made by the new pool's first sync (`vdev_zap`).
fn leaf_as_top_config(leaf: &Vdev, mirror: &Vdev) -> XdrNvList {
    let mut config = leaf.to_config();
    config.add("id", XdrValue::Uint64(mirror.id));
    config.add("metaslab_array", XdrValue::Uint64(mirror.ms_array_object));
    config.add(
        "metaslab_shift",
        XdrValue::Uint64(u64::from(mirror.ms_shift)),
    );
    config.add("ashift", XdrValue::Uint64(u64::from(mirror.ashift)));
    config.add("asize", XdrValue::Uint64(mirror.asize_bytes));
    config.add("is_log", XdrValue::Uint64(0));
    config.add("create_txg", XdrValue::Uint64(mirror.create_txg.0));
    debug_assert!(config.get_u64(VDEV_ZAP_TOP_KEY).is_none());
    debug_assert_eq!(
        config.get_u64(VDEV_ZAP_LEAF_KEY).unwrap_or(0),
        leaf.openzfs_keys.leaf()
    );
    config
}
