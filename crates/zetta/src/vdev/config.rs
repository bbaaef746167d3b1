//! The vdev tree as a configuration nvlist (OpenZFS `vdev_config_generate` and
//! `spa_config_parse`): what labels and the MOS store so that import can rebuild the tree.
//!
//! ```text
//! { type: "root"|"file"|"disk"|"mirror"|"raidz"|"replacing", id, guid,
//!   path (leaf), ashift, asize, nparity (raidz), is_log, ms_shift, ms_array,
//!   create_txg, missing_txg (leaf), offline (leaf), children: [ ... ] }
//! ```
//! Parsing trusts nothing: unknown types, raidz with impossible parity, leaves without paths
//! and absurd nesting are errors. Devices are attached afterwards by guid.

use super::{Vdev, VdevKind};
use crate::io::DeviceRef;
use crate::nvlist::NvList;
use crate::types::{Guid, Txg};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

pub const CHILDREN_MAX: usize = 255;
const DEPTH_MAX: usize = 4;

impl Vdev {
    pub fn to_config(&self) -> NvList {
        let mut list = NvList::new();
        list.set_str("type", self.type_name())
            .set_u64("id", self.id)
            .set_u64("guid", self.guid.0);
        match self.kind {
            VdevKind::Leaf => {
                list.set_str("path", &self.path)
                    .set_u64(
                        "missing_txg",
                        self.missing_through_txg.load(Ordering::Relaxed),
                    )
                    .set_u64("offline", u64::from(self.offline.load(Ordering::Relaxed)))
                    .set_u64("asize", self.asize_bytes);
            }
            VdevKind::Raidz { parity } => {
                list.set_u64("nparity", u64::from(parity));
            }
            _ => {}
        }
        if self.ashift != 0 {
            list.set_u64("ashift", u64::from(self.ashift))
                .set_u64("asize", self.asize_bytes)
                .set_u64("ms_shift", u64::from(self.ms_shift))
                .set_u64("ms_array", self.ms_array_object)
                .set_u64("is_log", u64::from(self.is_log))
                .set_u64("create_txg", self.create_txg.0);
        }
        if !self.children.is_empty() {
            list.set_list_array(
                "children",
                self.children.iter().map(|c| c.to_config()).collect(),
            );
        }
        list
    }

    /// Rebuilds a tree from its config; leaves get devices from `devices` by guid.
    pub fn from_config(
        config: &NvList,
        devices: &HashMap<Guid, DeviceRef>,
    ) -> Result<Vdev, String> {
        Self::parse(config, devices, 0)
    }

    fn parse(
        config: &NvList,
        devices: &HashMap<Guid, DeviceRef>,
        depth: usize,
    ) -> Result<Vdev, String> {
        if depth > DEPTH_MAX {
            return Err("vdev tree nested too deep".to_string());
        }
        let type_name = config.require_str("type").map_err(|e| e.to_string())?;
        let guid = Guid(config.require_u64("guid").map_err(|e| e.to_string())?);
        let kind = match type_name {
            "root" => VdevKind::Root,
            "file" | "disk" => VdevKind::Leaf,
            "mirror" => VdevKind::Mirror,
            "replacing" => VdevKind::Replacing,
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
        vdev.ashift = config.get_u64("ashift").unwrap_or(0) as u32;
        if vdev.ashift != 0 && !(9..=16).contains(&vdev.ashift) {
            return Err(format!("ashift {} is invalid", vdev.ashift));
        }
        vdev.asize_bytes = config.get_u64("asize").unwrap_or(0);
        vdev.ms_shift = config.get_u64("ms_shift").unwrap_or(0) as u32;
        if vdev.ms_shift > 40 {
            return Err(format!("metaslab shift {} is invalid", vdev.ms_shift));
        }
        vdev.ms_array_object = config.get_u64("ms_array").unwrap_or(0);
        vdev.is_log = config.get_u64("is_log").unwrap_or(0) != 0;
        vdev.create_txg = Txg(config.get_u64("create_txg").unwrap_or(0));
        if kind == VdevKind::Leaf {
            vdev.path = config
                .require_str("path")
                .map_err(|e| e.to_string())?
                .to_string();
            vdev.missing_through_txg.store(
                config.get_u64("missing_txg").unwrap_or(0),
                Ordering::Relaxed,
            );
            vdev.offline.store(
                config.get_u64("offline").unwrap_or(0) != 0,
                Ordering::Relaxed,
            );
            vdev.device = devices.get(&guid).cloned();
        }
        let children = config.get_list_array("children").unwrap_or(&[]);
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
            VdevKind::Mirror | VdevKind::Replacing if vdev.children.is_empty() => {
                return Err("a mirror has no children".to_string())
            }
            VdevKind::Raidz { parity } if vdev.children.len() <= parity as usize => {
                return Err("a raidz group has fewer children than parity + 1".to_string())
            }
            _ => {}
        }
        Ok(vdev)
    }

    /// Sum of every vdev guid in the tree (root, interior and leaves), stored in the
    /// uberblock like OpenZFS `ub_guid_sum`. Import does not check it yet: it finds missing
    /// devices from the tree itself.
    pub fn guid_sum(&self) -> u64 {
        self.children
            .iter()
            .fold(self.guid.0, |sum, child| sum.wrapping_add(child.guid_sum()))
    }
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
        let mut config = NvList::new();
        config
            .set_str("type", "raidz")
            .set_u64("guid", 1)
            .set_u64("nparity", 9);
        assert!(Vdev::from_config(&config, &HashMap::new()).is_err());
        let mut leaf = NvList::new();
        leaf.set_str("type", "file").set_u64("guid", 2);
        assert!(Vdev::from_config(&leaf, &HashMap::new()).is_err());
        let mut weird = NvList::new();
        weird.set_str("type", "banana").set_u64("guid", 3);
        assert!(Vdev::from_config(&weird, &HashMap::new()).is_err());
    }
}
