//! The pool and vdev configuration nvlists as OpenZFS generates them (`spa_config.c`
//! `spa_config_generate`, `vdev_label.c` `vdev_config_generate` and
//! `vdev_top_config_generate`) and their parse (`spa_config_parse`): what the labels and the
//! MOS store so that import can rebuild the vdev tree. They are XDR nvlists
//! (`nvpair_xdr`) with OpenZFS's keys, types and order:
//!
//! ```text
//! pool  (MOS copy)  version 5000, name, state, txg, pool_guid, errata, [hostid], hostname,
//!                   ([comment], [compatibility] after errata), [has_per_vdev_zaps],
//!                   [hole_array], vdev_children, vdev_tree (the root), features_for_read
//! label (per leaf)  version .. hostname, top_guid, guid, [is_log], [hole_array],
//!                   vdev_children, vdev_tree (the leaf's TOP-LEVEL vdev), features_for_read
//! vdev              type (root, file, disk, mirror, raidz, replacing, spare, hole), id,
//!                   guid, [path], [nparity], [whole_disk] (disks, 0), [is_spare] (a hot
//!                   spare in use; its label also has `is_spare` after `guid`),
//!                   top-level: metaslab_array, metaslab_shift, ashift, asize, is_log;
//!                   leaf: [DTL] (its dirty time log's space map, `vdev::dtl`);
//!                   [create_txg]; MOS only: [com.delphix:vdev_zap_leaf],
//!                   [com.delphix:vdev_zap_top]; children[...] | leaf: [offline], [is_hole]
//! aux vdev (MOS `spares`/`l2cache` objects, `spa_sync_aux_dev`)
//!                   type, guid, path, [whole_disk], [is_spare] (spares, 1), ashift,
//!                   [create_txg] — no id (`VDEV_CONFIG_L2CACHE`)
//! aux label (an available spare's or a cache device's, `vdev_aux_label_generate`)
//!                   version, state (3 spare, 4 l2cache), guid, [ashift] (l2cache), path
//! ```
//!
//! Hot spares and cache devices are not in the vdev tree: the MOS object directory's
//! `spares` and `l2cache` entries name packed-nvlist objects holding `{spares: [..]}` and
//! `{l2cache: [..]}` (`spa_load_spares`, `spa_load_l2cache`), and their own labels name no
//! pool (a spare may serve several), so discovery finds them by guid.
//!
//! The per-vdev ZAPs are parsed into `Vdev::openzfs_keys` and written back; Zetta makes
//! the missing ones and destroys those of departed vdevs (`spa::vdev_zap`, format 26). A leaf's `DTL` is Zetta's own too now (`Vdev::dtl`, format 25).
//! A non-top leaf carries no size, as in OpenZFS: it is its device's data region.
//!
//! Theory. Since format 26 there is no private key: formats up to 25 wrote
//! `org.zetta:format` and, in every label, the whole tree as `org.zetta:vdev_root`; now
//! discovery assembles the tree from every top-level vdev's labels plus the MOS, as
//! OpenZFS's does, and a pool is Zetta's by its version and features alone.
//! `features_for_read` names the active features a reader needs before the MOS (hole_birth
//! and embedded_data, `spa::zfeature`).
//!
//! Parsing trusts nothing: unknown types, raidz with impossible parity, leaves without paths
//! and absurd nesting are errors. Devices are attached afterwards by guid.

use super::{Vdev, VdevKind};
use crate::io::DeviceRef;
use crate::nvpair_xdr::{XdrNvList, XdrValue};
use crate::types::{Guid, Txg};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

pub const CHILDREN_MAX: usize = 255;
const DEPTH_MAX: usize = 4;
pub use super::label::ZETTA_FORMAT_KEY;
/// `ZPOOL_CONFIG_DTL`: a leaf's DTL space map object.
pub const DTL_KEY: &str = "DTL";
/// `ZPOOL_CONFIG_VDEV_LEAF_ZAP` and `ZPOOL_CONFIG_VDEV_TOP_ZAP`: the per-vdev ZAPs, in the
/// MOS config only (`VDEV_CONFIG_MOS`), never in a label.
pub const VDEV_ZAP_LEAF_KEY: &str = "com.delphix:vdev_zap_leaf";
pub const VDEV_ZAP_TOP_KEY: &str = "com.delphix:vdev_zap_top";
/// `ZPOOL_CONFIG_HAS_PER_VDEV_ZAPS`: the MOS config's flag that every vdev has its ZAP
/// (without it OpenZFS makes them at its next import, `AVZ_ACTION_INITIALIZE`).
pub const HAS_PER_VDEV_ZAPS_KEY: &str = "com.delphix:has_per_vdev_zaps";
/// `ZPOOL_CONFIG_FAULTED`, `ZPOOL_CONFIG_DEGRADED`: a leaf the diagnosis faulted or
/// degraded (`vdev_fault`, `vdev_degrade`), until `zpool clear`.
pub const FAULTED_KEY: &str = "faulted";
pub const DEGRADED_KEY: &str = "degraded";
/// `ZPOOL_CONFIG_AUX_STATE` and its value for VDEV_AUX_ERR_EXCEEDED.
pub const AUX_STATE_KEY: &str = "aux_state";
pub const AUX_ERR_EXCEEDED: &str = "err_exceeded";

fn u64v(list: &mut XdrNvList, name: &str, value: u64) {
    list.add(name, XdrValue::Uint64(value));
}

fn strv(list: &mut XdrNvList, name: &str, value: &str) {
    list.add(name, XdrValue::String(value.as_bytes().to_vec()));
}

impl Vdev {
    /// `vdev_config_generate` (label and MOS flavour, no stats).
    pub fn to_config(&self) -> XdrNvList {
        let mut list = XdrNvList::new();
        strv(&mut list, "type", self.type_name());
        u64v(&mut list, "id", self.id);
        u64v(&mut list, "guid", self.guid.0);
        if self.kind == VdevKind::Leaf {
            strv(&mut list, "path", &self.path);
        }
        if let VdevKind::Raidz { parity } = self.kind {
            u64v(&mut list, "nparity", u64::from(parity));
        }
        if self.kind == VdevKind::Leaf && self.type_name() == "disk" {
            u64v(&mut list, "whole_disk", 0);
        }
        if self.is_spare {
            u64v(&mut list, "is_spare", 1);
        }
        let top_level = self.ashift != 0;
        if top_level {
            u64v(&mut list, "metaslab_array", self.ms_array_object);
            u64v(&mut list, "metaslab_shift", u64::from(self.ms_shift));
            u64v(&mut list, "ashift", u64::from(self.ashift));
            u64v(&mut list, "asize", self.asize_bytes);
            u64v(&mut list, "is_log", u64::from(self.is_log));
        }
        if self.kind == VdevKind::Leaf && self.dtl.object() != 0 {
            u64v(&mut list, DTL_KEY, self.dtl.object());
        }
        if self.create_txg.0 != 0 {
            u64v(&mut list, "create_txg", self.create_txg.0);
        }
        if self.openzfs_keys.leaf() != 0 {
            u64v(&mut list, VDEV_ZAP_LEAF_KEY, self.openzfs_keys.leaf());
        }
        if self.openzfs_keys.top() != 0 {
            u64v(&mut list, VDEV_ZAP_TOP_KEY, self.openzfs_keys.top());
        }
        if !self.children.is_empty() {
            list.add(
                "children",
                XdrValue::NvListArray(self.children.iter().map(|c| c.to_config()).collect()),
            );
        }
        if self.kind == VdevKind::Leaf && self.offline.load(Ordering::Relaxed) {
            u64v(&mut list, "offline", 1);
        }
        if self.kind == VdevKind::Leaf {
            // `vdev_config_generate`: the diagnosis's verdicts and why (`vs_aux`
            // VDEV_AUX_ERR_EXCEEDED is "err_exceeded").
            let faulted = self.fault_kept.load(Ordering::Relaxed);
            let degraded = self.degraded.load(Ordering::Relaxed);
            if faulted {
                u64v(&mut list, FAULTED_KEY, 1);
            }
            if degraded {
                u64v(&mut list, DEGRADED_KEY, 1);
            }
            if faulted || degraded {
                strv(&mut list, AUX_STATE_KEY, AUX_ERR_EXCEEDED);
            }
        }
        if self.kind == VdevKind::Hole {
            u64v(&mut list, "is_hole", 1);
        }
        list
    }

    /// Rebuilds a tree from its config; leaves get devices from `devices` by guid.
    pub fn from_config(
        config: &XdrNvList,
        devices: &HashMap<Guid, DeviceRef>,
    ) -> Result<Vdev, String> {
        Self::parse(config, devices, 0)
    }

    fn parse(
        config: &XdrNvList,
        devices: &HashMap<Guid, DeviceRef>,
        depth: usize,
    ) -> Result<Vdev, String> {
        if depth > DEPTH_MAX {
            return Err("vdev tree nested too deep".to_string());
        }
        let type_name = config
            .get_str("type")
            .ok_or_else(|| "vdev config has no type".to_string())?;
        let guid = Guid(
            config
                .get_u64("guid")
                .ok_or_else(|| "vdev config has no guid".to_string())?,
        );
        let kind = match type_name {
            "root" => VdevKind::Root,
            "file" | "disk" => VdevKind::Leaf,
            "mirror" => VdevKind::Mirror,
            "replacing" => VdevKind::Replacing,
            "spare" => VdevKind::Spare,
            "hole" => VdevKind::Hole,
            "raidz" => {
                let parity = config.get_u64("nparity").unwrap_or(0);
                if !(1..=3).contains(&parity) {
                    return Err(format!("raidz parity {parity} is invalid"));
                }
                VdevKind::Raidz {
                    parity: parity as u8,
                }
            }
            other => return Err(format!("unknown vdev type '{other}'")),
        };
        let mut vdev = Vdev::new(kind, guid);
        vdev.id = config.get_u64("id").unwrap_or(0);
        let ashift = config.get_u64("ashift").unwrap_or(0);
        if ashift != 0 && !(9..=16).contains(&ashift) {
            return Err(format!("ashift {ashift} is invalid"));
        }
        vdev.ashift = ashift as u32;
        // A non-top leaf's size is its device's data region (OpenZFS's `vdev_open` computes
        // it; its config carries `asize` on top-level vdevs only), 0 while it is missing.
        vdev.asize_bytes = config
            .get_u64("asize")
            .or_else(|| {
                devices
                    .get(&guid)
                    .map(|device| super::label::data_size_bytes(device.size_bytes()))
            })
            .unwrap_or(0);
        vdev.openzfs_keys = super::OpenZfsVdevKeys::new(
            config.get_u64(VDEV_ZAP_LEAF_KEY).unwrap_or(0),
            config.get_u64(VDEV_ZAP_TOP_KEY).unwrap_or(0),
        );
        let ms_shift = config.get_u64("metaslab_shift").unwrap_or(0);
        if ms_shift > 40 {
            return Err(format!("metaslab shift {ms_shift} is invalid"));
        }
        vdev.ms_shift = ms_shift as u32;
        vdev.ms_array_object = config.get_u64("metaslab_array").unwrap_or(0);
        vdev.is_log = config.get_u64("is_log").unwrap_or(0) != 0;
        vdev.create_txg = Txg(config.get_u64("create_txg").unwrap_or(0));
        vdev.is_spare = kind == VdevKind::Leaf && config.get_u64("is_spare").unwrap_or(0) != 0;
        if kind == VdevKind::Leaf {
            vdev.path = config
                .get_str("path")
                .ok_or_else(|| "a leaf vdev has no path".to_string())?
                .to_string();
            // The ranges are the space map's (`Spa::dtl_load` once the MOS is open).
            vdev.dtl = super::dtl::Dtl::with_object(config.get_u64(DTL_KEY).unwrap_or(0));
            vdev.offline.store(
                config.get_u64("offline").unwrap_or(0) != 0,
                Ordering::Relaxed,
            );
            vdev.device = devices.get(&guid).cloned();
            // `vdev_load`'s reading of ZPOOL_CONFIG_FAULTED/DEGRADED (any `aux_state`
            // reads as err_exceeded here: "external" faults are not Zetta's).
            let faulted = config.get_u64(FAULTED_KEY).unwrap_or(0) != 0;
            vdev.faulted.store(faulted, Ordering::Relaxed);
            vdev.fault_kept.store(faulted, Ordering::Relaxed);
            vdev.degraded.store(
                config.get_u64(DEGRADED_KEY).unwrap_or(0) != 0,
                Ordering::Relaxed,
            );
        }
        let children = config.get_nvlist_array("children").unwrap_or(&[]);
        if children.len() > CHILDREN_MAX {
            return Err(format!("{} children is too many", children.len()));
        }
        for child in children {
            vdev.children.push(Self::parse(child, devices, depth + 1)?);
        }
        match kind {
            VdevKind::Leaf if !vdev.children.is_empty() => {
                return Err("a leaf vdev has children".to_string())
            }
            VdevKind::Mirror | VdevKind::Replacing | VdevKind::Spare
                if vdev.children.is_empty() =>
            {
                return Err("a mirror has no children".to_string())
            }
            VdevKind::Raidz { parity } if vdev.children.len() <= parity as usize => {
                return Err("a raidz group has fewer children than parity + 1".to_string())
            }
            _ => {}
        }
        Ok(vdev)
    }

    /// Sum of every vdev guid in the tree (root, interior and leaves): OpenZFS's
    /// `vdev_guid_sum`, stored in the uberblock as `ub_guid_sum` (the root's guid is the
    /// pool guid). Import does not check it yet: it finds missing devices from the tree.
    pub fn guid_sum(&self) -> u64 {
        self.children
            .iter()
            .fold(self.guid.0, |sum, child| sum.wrapping_add(child.guid_sum()))
    }
}

/// What `spa_config_generate` needs from the pool.
pub struct PoolFacts<'a> {
    /// The pool's SPA version (5000, or a legacy one).
    pub version: u64,
    pub name: &'a str,
    pub guid: u64,
    pub state: u64,
    pub txg: u64,
    /// This host's id (`/etc/hostid`); 0 = none, not written.
    pub hostid: u64,
    pub hostname: &'a str,
    /// The `comment` and `compatibility` pool properties, which OpenZFS keeps in the
    /// config (`spa_comment`, `spa_compatibility`), not in `pool_props`.
    pub comment: Option<&'a str>,
    pub compatibility: Option<&'a str>,
    pub root: &'a Vdev,
    /// The active features a reader needs before the MOS (`spa_label_features`), by guid.
    pub label_features: &'a [&'a str],
}

/// The pool config as the MOS keeps it (`spa_config_generate(spa, NULL, ..)`): the whole
/// vdev tree under `vdev_tree`.
pub fn pool_config(facts: &PoolFacts<'_>) -> XdrNvList {
    let mut config = XdrNvList::new();
    u64v(&mut config, "version", facts.version);
    strv(&mut config, "name", facts.name);
    u64v(&mut config, "state", facts.state);
    u64v(&mut config, "txg", facts.txg);
    u64v(&mut config, "pool_guid", facts.guid);
    u64v(&mut config, "errata", 0);
    if let Some(comment) = facts.comment {
        strv(&mut config, "comment", comment);
    }
    if let Some(compatibility) = facts.compatibility {
        strv(&mut config, "compatibility", compatibility);
    }
    if facts.hostid != 0 {
        u64v(&mut config, "hostid", facts.hostid);
    }
    strv(&mut config, "hostname", facts.hostname);
    if has_per_vdev_zaps(facts.root) {
        config.add(HAS_PER_VDEV_ZAPS_KEY, XdrValue::Boolean);
    }
    top_config(&mut config, facts.root);
    config.add("vdev_tree", XdrValue::NvList(facts.root.to_config()));
    config.add(
        "features_for_read",
        XdrValue::NvList(features_for_read(facts.label_features)),
    );
    config
}

/// `POOL_STATE_SPARE` and `POOL_STATE_L2CACHE`: an aux label's `state`.
pub use super::openzfs::label::pool_state::{
    L2CACHE as POOL_STATE_L2CACHE, SPARE as POOL_STATE_SPARE,
};
/// `SPA_MINBLOCKSHIFT`: an aux device's ashift unless one was asked for (`vdev_open` takes
/// the device's logical sector size, 512 bytes for files and most disks).
pub const AUX_ASHIFT_DEFAULT: u32 = 9;

/// One hot spare's or cache device's entry in the MOS `spares`/`l2cache` list
/// (`vdev_config_generate(.., VDEV_CONFIG_L2CACHE)`, which `spa_sync_aux_dev` uses for
/// both): no `id`, an `ashift`, and `is_spare` on spares (`vdev_isspare`).
pub fn aux_config(vdev: &Vdev, spare: bool) -> XdrNvList {
    let mut list = XdrNvList::new();
    strv(&mut list, "type", vdev.type_name());
    u64v(&mut list, "guid", vdev.guid.0);
    strv(&mut list, "path", &vdev.path);
    if vdev.type_name() == "disk" {
        u64v(&mut list, "whole_disk", 0);
    }
    if spare {
        u64v(&mut list, "is_spare", 1);
    }
    u64v(&mut list, "ashift", u64::from(aux_ashift(vdev)));
    if vdev.create_txg.0 != 0 {
        u64v(&mut list, "create_txg", vdev.create_txg.0);
    }
    list
}

/// An aux vdev's ashift (kept in `Vdev::ashift`, which on a tree vdev marks a top-level one).
fn aux_ashift(vdev: &Vdev) -> u32 {
    if vdev.ashift == 0 {
        AUX_ASHIFT_DEFAULT
    } else {
        vdev.ashift
    }
}

/// The label of an available hot spare or a cache device (`vdev_aux_label_generate`): the
/// pool's version, `state` 3 or 4, the device's guid, the ashift (cache devices only, for
/// zdb) and its path. No pool name or guid: a spare may be shared by pools.
pub fn aux_label(version: u64, vdev: &Vdev, spare: bool) -> XdrNvList {
    let mut label = XdrNvList::new();
    u64v(&mut label, "version", version);
    let state = if spare {
        POOL_STATE_SPARE
    } else {
        POOL_STATE_L2CACHE
    };
    u64v(&mut label, "state", state);
    u64v(&mut label, "guid", vdev.guid.0);
    if !spare {
        u64v(&mut label, "ashift", u64::from(aux_ashift(vdev)));
    }
    strv(&mut label, "path", &vdev.path);
    label
}

/// Parses the MOS `spares`/`l2cache` list entries (`spa_load_spares`): leaves only, each
/// with its device when discovery found one by guid. An entry that is not a leaf, or
/// lacks a guid or path, is corrupt.
pub fn parse_aux_list(
    entries: &[XdrNvList],
    devices: &HashMap<Guid, DeviceRef>,
) -> Result<Vec<Vdev>, String> {
    let mut out = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let vdev = Vdev::from_config(entry, devices)?;
        if vdev.kind != VdevKind::Leaf {
            return Err(format!("aux vdev {index} is a {}", vdev.type_name()));
        }
        out.push(vdev);
    }
    Ok(out)
}

/// Whether every top-level vdev has its ZAP and every leaf its own: then the MOS config
/// says so (`ZPOOL_CONFIG_HAS_PER_VDEV_ZAPS`), as OpenZFS writes it once
/// `vdev_construct_zaps` made them. A pool with a vdev Zetta added since (Zetta does not
/// make vdev ZAPs yet) leaves the flag out, and OpenZFS's next import makes the missing
/// ones and rebuilds `com.delphix:vdev_zap_map` (`AVZ_ACTION_INITIALIZE`).
fn has_per_vdev_zaps(root: &Vdev) -> bool {
    fn leaves_have(vdev: &Vdev) -> bool {
        match vdev.kind {
            VdevKind::Leaf => vdev.openzfs_keys.leaf() != 0,
            _ => vdev.children.iter().all(leaves_have),
        }
    }
    let tops: Vec<&Vdev> = root
        .children
        .iter()
        .filter(|top| top.kind != VdevKind::Hole)
        .collect();
    !tops.is_empty()
        && tops
            .iter()
            .all(|top| top.openzfs_keys.top() != 0 && leaves_have(top))
}

/// A vdev subtree as a label holds it: the MOS-only keys (the per-vdev ZAPs) left out.
fn without_mos_keys(tree: &XdrNvList) -> XdrNvList {
    let mut out = XdrNvList {
        pairs: Vec::new(),
        ..tree.clone()
    };
    for pair in &tree.pairs {
        if pair.name == VDEV_ZAP_LEAF_KEY.as_bytes() || pair.name == VDEV_ZAP_TOP_KEY.as_bytes() {
            continue;
        }
        let value = match &pair.value {
            XdrValue::NvListArray(children) if pair.name == b"children" => {
                XdrValue::NvListArray(children.iter().map(without_mos_keys).collect())
            }
            other => other.clone(),
        };
        out.pairs.push(crate::nvpair_xdr::XdrPair {
            name: pair.name.clone(),
            value,
        });
    }
    out
}

/// `vdev_top_config_generate`: the hole array (when there are holes) and the number of
/// top-level vdevs.
fn top_config(config: &mut XdrNvList, root: &Vdev) {
    let holes: Vec<u64> = root
        .children
        .iter()
        .enumerate()
        .filter(|(_, top)| top.kind == VdevKind::Hole)
        .map(|(index, _)| index as u64)
        .collect();
    if !holes.is_empty() {
        config.add("hole_array", XdrValue::Uint64Array(holes));
    }
    u64v(config, "vdev_children", root.children.len() as u64);
}

/// The label's `features_for_read`: the read-incompatible features a reader must know
/// before it can read the MOS (`spa_label_features`, booleans by guid: the active
/// `ZFEATURE_FLAG_MOS` features, hole_birth and embedded_data on a default pool).
pub fn features_for_read(guids: &[&str]) -> XdrNvList {
    let mut list = XdrNvList::new();
    for guid in guids {
        list.add(guid, XdrValue::Boolean);
    }
    list
}

/// The label config of one leaf (`spa_config_generate(spa, leaf, ..)`), derived from the
/// MOS config `pool`: the pool's header, the leaf's `top_guid` and `guid`, and its
/// top-level vdev as `vdev_tree`. A cache device (`top_guid` None) gets the header and
/// its guid. No label carries the whole tree (format 26): discovery assembles it from
/// the top-level vdevs' labels, as OpenZFS's `get_configs` does.
pub fn label_config(pool: &XdrNvList, top_guid: Option<u64>, leaf_guid: u64) -> XdrNvList {
    let mut label = XdrNvList::new();
    for key in [
        "version",
        "name",
        "state",
        "txg",
        "pool_guid",
        "errata",
        "comment",
        "compatibility",
        "hostid",
        "hostname",
    ] {
        if let Some(value) = pool.get(key) {
            label.add(key, value.clone());
        }
    }
    let root = pool.get_nvlist("vdev_tree");
    let top = top_guid.and_then(|guid| {
        root?
            .get_nvlist_array("children")?
            .iter()
            .find(|child| child.get_u64("guid") == Some(guid))
    });
    if let Some(guid) = top_guid {
        u64v(&mut label, "top_guid", guid);
    }
    u64v(&mut label, "guid", leaf_guid);
    // A hot spare in use says so (`vdev_isspare`), before `is_log`.
    if top.is_some_and(|t| leaf_is_spare(t, leaf_guid)) {
        u64v(&mut label, "is_spare", 1);
    }
    if top.and_then(|t| t.get_u64("is_log")) == Some(1) {
        u64v(&mut label, "is_log", 1);
    }
    for key in ["hole_array", "vdev_children"] {
        if let Some(value) = pool.get(key) {
            label.add(key, value.clone());
        }
    }
    if let Some(top) = top {
        label.add("vdev_tree", XdrValue::NvList(without_mos_keys(top)));
    }
    if let Some(value) = pool.get("features_for_read") {
        label.add("features_for_read", value.clone());
    }
    label
}

/// Whether the leaf `guid` under the vdev config `tree` carries `is_spare`.
fn leaf_is_spare(tree: &XdrNvList, guid: u64) -> bool {
    if tree.get_u64("guid") == Some(guid) {
        return tree.get_u64("is_spare") == Some(1);
    }
    tree.get_nvlist_array("children")
        .unwrap_or(&[])
        .iter()
        .any(|child| leaf_is_spare(child, guid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config round trip is how import rebuilds the tree: it must be lossless.
    #[test]
    fn config_round_trip() {
        let mut root = Vdev::new(VdevKind::Root, Guid(1));
        let mut raidz = Vdev::new(VdevKind::Raidz { parity: 2 }, Guid(2));
        raidz.ashift = 12;
        raidz.asize_bytes = 1 << 30;
        raidz.ms_shift = 24;
        for i in 0..4 {
            let mut leaf = Vdev::new(VdevKind::Leaf, Guid(10 + i));
            leaf.path = format!("/tmp/d{i}");
            leaf.id = i;
            raidz.children.push(leaf);
        }
        root.children.push(raidz);
        let config = root.to_config();
        let parsed = Vdev::from_config(&config, &HashMap::new()).unwrap();
        assert_eq!(parsed.to_config(), config);
        assert_eq!(parsed.guid_sum(), root.guid_sum());
        assert_eq!(parsed.children[0].display_name(), "raidz2-0");
    }

    /// A damaged config must be refused with a reason, not crash import.
    #[test]
    fn bad_configs_are_refused() {
        let mut config = XdrNvList::new();
        strv(&mut config, "type", "raidz");
        u64v(&mut config, "guid", 1);
        u64v(&mut config, "nparity", 9);
        assert!(Vdev::from_config(&config, &HashMap::new()).is_err());
        let mut leaf = XdrNvList::new();
        strv(&mut leaf, "type", "file");
        u64v(&mut leaf, "guid", 2);
        assert!(Vdev::from_config(&leaf, &HashMap::new()).is_err());
        let mut weird = XdrNvList::new();
        strv(&mut weird, "type", "banana");
        u64v(&mut weird, "guid", 3);
        assert!(Vdev::from_config(&weird, &HashMap::new()).is_err());
    }
}

#[cfg(test)]
mod label_tests {
    use super::*;

    fn names(list: &XdrNvList) -> Vec<String> {
        list.pairs
            .iter()
            .map(|p| String::from_utf8_lossy(&p.name).into_owned())
            .collect()
    }

    // Why: zdb -l and OpenZFS's import read the label config by OpenZFS's keys, in
    // spa_config_generate's order, with the leaf's top-level vdev as vdev_tree and an
    // empty features_for_read (Zetta's one feature is write-only, in the MOS).
    #[test]
    fn label_config_has_openzfs_keys_in_openzfs_order() {
        let mut root = Vdev::new(VdevKind::Root, Guid(100));
        let mut mirror = Vdev::new(VdevKind::Mirror, Guid(2));
        mirror.ashift = 12;
        mirror.asize_bytes = 1 << 30;
        mirror.ms_shift = 24;
        mirror.create_txg = Txg(4);
        for i in 0..2 {
            let mut leaf = Vdev::new(VdevKind::Leaf, Guid(10 + i));
            leaf.path = format!("/tmp/d{i}");
            leaf.id = i;
            leaf.create_txg = Txg(4);
            mirror.children.push(leaf);
        }
        root.children.push(mirror);
        let pool = pool_config(&PoolFacts {
            version: crate::spa::uberblock::SPA_VERSION,
            name: "tank",
            guid: 100,
            state: 0,
            txg: 4,
            hostid: 0,
            hostname: "h",
            comment: None,
            compatibility: None,
            root: &root,
            label_features: &[],
        });
        let label = label_config(&pool, Some(2), 11);
        assert_eq!(
            names(&label),
            [
                "version",
                "name",
                "state",
                "txg",
                "pool_guid",
                "errata",
                "hostname",
                "top_guid",
                "guid",
                "vdev_children",
                "vdev_tree",
                "features_for_read",
            ]
        );
        let tree = label.get_nvlist("vdev_tree").unwrap();
        assert_eq!(
            names(tree),
            [
                "type",
                "id",
                "guid",
                "metaslab_array",
                "metaslab_shift",
                "ashift",
                "asize",
                "is_log",
                "create_txg",
                "children"
            ]
        );
        let child = &tree.get_nvlist_array("children").unwrap()[1];
        assert_eq!(names(child), ["type", "id", "guid", "path", "create_txg"]);
        assert_eq!(
            label.get_nvlist("features_for_read"),
            Some(&XdrNvList::new())
        );
        // Format 26: no private key in a label or the MOS config.
        for list in [&label, &pool] {
            assert!(
                !names(list).iter().any(|n| n.starts_with("org.zetta:")),
                "{:?}",
                names(list)
            );
        }
        // The MOS copy's tree is the whole tree.
        let parsed =
            Vdev::from_config(pool.get_nvlist("vdev_tree").unwrap(), &HashMap::new()).unwrap();
        assert_eq!(parsed.to_config(), root.to_config());
        // And the label packs into the 112 KiB area as XDR.
        let packed = crate::nvpair_xdr::pack(&label).unwrap();
        assert_eq!(crate::nvpair_xdr::unpack(&packed).unwrap().list, label);
    }
}
