//! Where a DVA's bytes lie on a pool's leaf devices, as OpenZFS lays them out (OpenZFS
//! `vdev_file.c`/`vdev_disk.c` for the label offset, `vdev_mirror.c`, and
//! `vdev_raidz_map_alloc` in `module/zfs/vdev_raidz.c` for raidz).
//!
//! Theory. A DVA names a top-level vdev (its `id` in the config) and an offset in that
//! vdev's address space. Every leaf keeps its two front labels and the boot area in its first
//! 4 MiB (`VDEV_LABEL_START_SIZE`) and two labels in its last 512 KiB, so address `x` of a
//! leaf top-level vdev is device byte `4 MiB + x`. A mirror stores the whole block at that
//! address on every child. A raidz vdev of n children with p parity stripes the block (psize
//! rounded up to the vdev's sector, `1 << ashift`) over the children exactly as
//! `zetta_raidz::raidz_map` computes it, which is OpenZFS's geometry (the columns, the big
//! columns first, the wrap to the next child row, asize rounded to p + 1 sectors with skip
//! sectors that are never written, and raidz1's swap of its first two columns for a block
//! whose offset has bit 20 set, so parity does not always land on the same child).
//!
//! A column's child may itself be a mirror-like vdev (`replacing`, `spare`): each column (and
//! each mirror) is a list of alternative leaf spans, any of which holds the bytes.
//!
//! The vdev tree comes from each device's label 0 config (`vdev_tree`: the top-level vdev that
//! device belongs to, with `id`, `type`, `ashift`, `asize`, `nparity`, `children`, `guid`,
//! `path`). This parse is minimal on purpose: the full label handling lives in
//! `vdev::openzfs::label` and can replace [`PoolVdevs::from_configs`].
//!
//! Invariants: nothing here trusts a DVA: an unknown top-level vdev, an offset or size that
//! overflows or lies past the vdev's asize, and a geometry raidz refuses are errors.

use crate::nvpair_xdr::XdrNvList;
use std::collections::BTreeMap;
use std::fmt;
use zetta_raidz::{raidz_map, RaidzError, RaidzMap};

/// Bytes before a leaf's allocatable space: two 256 KiB labels and the 3.5 MiB boot area.
pub const LABEL_START_BYTES: u64 = 4 << 20;
/// Bytes after it: the two back labels.
pub const LABEL_END_BYTES: u64 = 512 << 10;
/// Nesting allowed in a vdev tree (root, top-level, replacing/spare, leaf, and some slack).
const VDEV_DEPTH_MAX: usize = 8;

/// One vdev of the tree below a top-level vdev.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VdevNode {
    /// A `disk` or `file` leaf.
    Leaf { guid: u64, path: String },
    /// `mirror`, `replacing`, `spare`: every child holds the whole block.
    Mirror { guid: u64, children: Vec<VdevNode> },
    /// `raidz` with `nparity` parity columns.
    Raidz {
        guid: u64,
        nparity: usize,
        children: Vec<VdevNode>,
    },
    /// `hole` or `missing`: nothing to read.
    Missing,
}

/// A top-level vdev: its tree, sector shift and allocatable size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopVdev {
    pub id: u64,
    pub ashift: u32,
    /// Allocatable bytes (`asize` in the config); 0 when the config does not say.
    pub asize_bytes: u64,
    pub node: VdevNode,
}

/// The top-level vdevs of a pool, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolVdevs {
    pub top: BTreeMap<u64, TopVdev>,
}

/// A run of bytes on one leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafSpan {
    pub leaf_guid: u64,
    /// Byte offset on the device (label area included).
    pub device_offset_bytes: u64,
    pub size_bytes: u64,
}

/// How to read `size` bytes at a DVA.
#[derive(Clone, Debug)]
pub enum DvaMap {
    /// Any one span holds the bytes (a leaf, a mirror's children in order).
    Replicated(Vec<LeafSpan>),
    /// A raidz stripe: `map` (columns in parity-then-data order, raidz1's swap applied) and,
    /// per column, the alternative spans that hold it.
    Raidz {
        map: RaidzMap,
        columns: Vec<Vec<LeafSpan>>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VdevMapError {
    /// The config lacks a field or has one of the wrong type.
    Config { field: &'static str },
    /// A vdev type this reader does not know.
    VdevType { vdev_type: String },
    /// Deeper nesting than any real pool has.
    TooDeep,
    /// The DVA names a top-level vdev the pool does not have.
    VdevUnknown { vdev: u64 },
    /// The DVA's bytes do not fit the vdev (past its asize, or overflowing 64 bits).
    OutOfRange {
        vdev: u64,
        offset_bytes: u64,
        size_bytes: u64,
    },
    /// A top-level vdev is missing from the pool.
    VdevMissing { vdev: u64 },
    /// The raidz geometry or address is refused.
    Raidz(RaidzError),
}

impl fmt::Display for VdevMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VdevMapError::Config { field } => {
                write!(f, "vdev config: '{field}' is missing or malformed")
            }
            VdevMapError::VdevType { vdev_type } => write!(f, "unknown vdev type '{vdev_type}'"),
            VdevMapError::TooDeep => write!(f, "vdev tree nested too deeply"),
            VdevMapError::VdevUnknown { vdev } => write!(f, "no top-level vdev {vdev}"),
            VdevMapError::OutOfRange {
                vdev,
                offset_bytes,
                size_bytes,
            } => write!(
                f,
                "{size_bytes} bytes at offset {offset_bytes:#x} lie outside vdev {vdev}"
            ),
            VdevMapError::VdevMissing { vdev } => write!(f, "top-level vdev {vdev} is missing"),
            VdevMapError::Raidz(e) => write!(f, "raidz: {e}"),
        }
    }
}

impl std::error::Error for VdevMapError {}

fn node_from_config(config: &XdrNvList, depth: usize) -> Result<VdevNode, VdevMapError> {
    if depth > VDEV_DEPTH_MAX {
        return Err(VdevMapError::TooDeep);
    }
    let vdev_type = config
        .get_str("type")
        .ok_or(VdevMapError::Config { field: "type" })?;
    let guid = config.get_u64("guid").unwrap_or(0);
    let children = || -> Result<Vec<VdevNode>, VdevMapError> {
        config
            .get_nvlist_array("children")
            .ok_or(VdevMapError::Config { field: "children" })?
            .iter()
            .map(|child| node_from_config(child, depth + 1))
            .collect()
    };
    match vdev_type {
        "disk" | "file" => Ok(VdevNode::Leaf {
            guid,
            path: config.get_str("path").unwrap_or_default().to_string(),
        }),
        "mirror" | "replacing" | "spare" => Ok(VdevNode::Mirror {
            guid,
            children: children()?,
        }),
        "raidz" => {
            // Pools before raidz2 (version 3) record no nparity: raidz1.
            let nparity = config.get_u64("nparity").unwrap_or(1);
            let nparity =
                usize::try_from(nparity).map_err(|_| VdevMapError::Config { field: "nparity" })?;
            Ok(VdevNode::Raidz {
                guid,
                nparity,
                children: children()?,
            })
        }
        "hole" | "missing" => Ok(VdevNode::Missing),
        other => Err(VdevMapError::VdevType {
            vdev_type: other.to_string(),
        }),
    }
}

impl TopVdev {
    /// A top-level vdev from a label's `vdev_tree` nvlist.
    pub fn from_config(vdev_tree: &XdrNvList) -> Result<TopVdev, VdevMapError> {
        let ashift = vdev_tree
            .get_u64("ashift")
            .and_then(|a| u32::try_from(a).ok())
            .ok_or(VdevMapError::Config { field: "ashift" })?;
        Ok(TopVdev {
            id: vdev_tree.get_u64("id").unwrap_or(0),
            ashift,
            asize_bytes: vdev_tree.get_u64("asize").unwrap_or(0),
            node: node_from_config(vdev_tree, 0)?,
        })
    }
}

impl PoolVdevs {
    /// The pool's top-level vdevs from the label configs of its devices (each label holds
    /// the top-level vdev its device belongs to).
    pub fn from_configs<'a>(
        configs: impl IntoIterator<Item = &'a XdrNvList>,
    ) -> Result<PoolVdevs, VdevMapError> {
        let mut pool = PoolVdevs::default();
        for config in configs {
            let tree = config
                .get_nvlist("vdev_tree")
                .ok_or(VdevMapError::Config { field: "vdev_tree" })?;
            let top = TopVdev::from_config(tree)?;
            pool.top.entry(top.id).or_insert(top);
        }
        Ok(pool)
    }

    /// The leaf spans that hold `size_bytes` at `offset_bytes` of top-level vdev `vdev`
    /// (`size_bytes` is rounded up to the vdev's sector here, as OpenZFS pads a read).
    pub fn map(
        &self,
        vdev: u64,
        offset_bytes: u64,
        size_bytes: u64,
    ) -> Result<DvaMap, VdevMapError> {
        let top = self
            .top
            .get(&vdev)
            .ok_or(VdevMapError::VdevUnknown { vdev })?;
        let out_of_range = VdevMapError::OutOfRange {
            vdev,
            offset_bytes,
            size_bytes,
        };
        if top.ashift > 16 {
            return Err(VdevMapError::Config { field: "ashift" });
        }
        let sector_bytes = 1u64 << top.ashift;
        let size_bytes = size_bytes
            .checked_next_multiple_of(sector_bytes)
            .ok_or(out_of_range.clone())?;
        let end = offset_bytes
            .checked_add(size_bytes)
            .ok_or(out_of_range.clone())?;
        if top.asize_bytes != 0 && end > top.asize_bytes {
            return Err(out_of_range);
        }
        match &top.node {
            VdevNode::Missing => Err(VdevMapError::VdevMissing { vdev }),
            VdevNode::Raidz {
                nparity, children, ..
            } => {
                let map = raidz_map(
                    children.len(),
                    *nparity,
                    top.ashift,
                    offset_bytes,
                    size_bytes,
                )
                .map_err(VdevMapError::Raidz)?;
                let columns = map
                    .columns
                    .iter()
                    .map(|column| {
                        let mut spans = Vec::new();
                        // raidz_map only names children that exist.
                        if let Some(child) = children.get(column.child) {
                            spans_of(
                                child,
                                column.child_offset_bytes,
                                column.size_bytes,
                                &mut spans,
                            )?;
                        }
                        Ok(spans)
                    })
                    .collect::<Result<Vec<_>, VdevMapError>>()?;
                Ok(DvaMap::Raidz { map, columns })
            }
            node => {
                let mut spans = Vec::new();
                spans_of(node, offset_bytes, size_bytes, &mut spans)?;
                Ok(DvaMap::Replicated(spans))
            }
        }
    }

    /// Every leaf of the pool: (guid, path).
    pub fn leaves(&self) -> Vec<(u64, String)> {
        fn walk(node: &VdevNode, out: &mut Vec<(u64, String)>) {
            match node {
                VdevNode::Leaf { guid, path } => out.push((*guid, path.clone())),
                VdevNode::Mirror { children, .. } | VdevNode::Raidz { children, .. } => {
                    children.iter().for_each(|c| walk(c, out))
                }
                VdevNode::Missing => {}
            }
        }
        let mut out = Vec::new();
        self.top.values().for_each(|t| walk(&t.node, &mut out));
        out
    }
}

/// The alternative leaf spans of `size` bytes at `offset` of a (non-raidz) vdev.
fn spans_of(
    node: &VdevNode,
    offset_bytes: u64,
    size_bytes: u64,
    out: &mut Vec<LeafSpan>,
) -> Result<(), VdevMapError> {
    match node {
        VdevNode::Leaf { guid, .. } => {
            let device_offset_bytes =
                offset_bytes
                    .checked_add(LABEL_START_BYTES)
                    .ok_or(VdevMapError::OutOfRange {
                        vdev: *guid,
                        offset_bytes,
                        size_bytes,
                    })?;
            out.push(LeafSpan {
                leaf_guid: *guid,
                device_offset_bytes,
                size_bytes,
            });
            Ok(())
        }
        VdevNode::Mirror { children, .. } => {
            for child in children {
                spans_of(child, offset_bytes, size_bytes, out)?;
            }
            Ok(())
        }
        // A raidz below a mirror does not exist in OpenZFS pools.
        VdevNode::Raidz { .. } => Err(VdevMapError::VdevType {
            vdev_type: "raidz below a mirror".to_string(),
        }),
        VdevNode::Missing => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvpair_xdr::XdrValue;

    fn leaf(guid: u64) -> XdrNvList {
        let mut l = XdrNvList::new();
        l.add("type", XdrValue::String(b"file".to_vec()));
        l.add("guid", XdrValue::Uint64(guid));
        l.add(
            "path",
            XdrValue::String(format!("/dev/{guid}").into_bytes()),
        );
        l
    }

    fn raidz(nparity: u64, children: usize) -> XdrNvList {
        let mut t = XdrNvList::new();
        t.add("type", XdrValue::String(b"raidz".to_vec()));
        t.add("id", XdrValue::Uint64(0));
        t.add("guid", XdrValue::Uint64(99));
        t.add("nparity", XdrValue::Uint64(nparity));
        t.add("ashift", XdrValue::Uint64(9));
        t.add("asize", XdrValue::Uint64(64 << 20));
        t.add(
            "children",
            XdrValue::NvListArray((1..=children as u64).map(leaf).collect()),
        );
        t
    }

    fn pool_of(tree: XdrNvList) -> PoolVdevs {
        let mut config = XdrNvList::new();
        config.add("vdev_tree", XdrValue::NvList(tree));
        PoolVdevs::from_configs([&config]).expect("valid config")
    }

    // Why: raidz1 swaps its first two columns on odd megabytes (vdev_raidz_map_alloc); a
    // reader without the swap reads parity as data for every such block.
    #[test]
    fn raidz1_swaps_first_two_columns_on_odd_megabytes() {
        let pool = pool_of(raidz(1, 3));
        let spans = |offset: u64| match pool.map(0, offset, 1024).expect("maps") {
            DvaMap::Raidz { columns, map } => {
                assert_eq!(map.columns.len(), 3);
                columns
                    .iter()
                    .map(|c| (c[0].leaf_guid, c[0].device_offset_bytes))
                    .collect::<Vec<_>>()
            }
            DvaMap::Replicated(_) => panic!("raidz maps to columns"),
        };
        // Sector 0 of an even MiB: P on child 1, D0 on child 2, D1 on child 3.
        assert_eq!(
            spans(0),
            vec![
                (1, LABEL_START_BYTES),
                (2, LABEL_START_BYTES),
                (3, LABEL_START_BYTES)
            ]
        );
        // 1 MiB = sector 2048: first child 2048 % 3 = index 2 (guid 3), row 682; column 1
        // wraps to index 0 (guid 1) and column 2 is index 1 (guid 2), both on row 683.
        // Bit 20 is set, so columns 0 and 1 trade places.
        let row = (682u64 << 9) + LABEL_START_BYTES;
        assert_eq!(
            spans(1 << 20),
            vec![(1, row + 512), (3, row), (2, row + 512)]
        );
        // raidz2 never swaps.
        let pool2 = pool_of(raidz(2, 3));
        match pool2.map(0, 1 << 20, 512).expect("maps") {
            DvaMap::Raidz { columns, .. } => assert_eq!(columns[0][0].leaf_guid, 3),
            DvaMap::Replicated(_) => panic!("raidz maps to columns"),
        }
    }

    // Why: a hostile DVA (unknown vdev, offset past the vdev, overflow) must be an error.
    #[test]
    fn hostile_dvas_are_errors() {
        let pool = pool_of(raidz(2, 3));
        assert_eq!(
            pool.map(7, 0, 512).unwrap_err(),
            VdevMapError::VdevUnknown { vdev: 7 }
        );
        assert!(matches!(
            pool.map(0, 64 << 20, 512),
            Err(VdevMapError::OutOfRange { .. })
        ));
        assert!(matches!(
            pool.map(0, u64::MAX - 511, 512),
            Err(VdevMapError::OutOfRange { .. })
        ));
        assert!(matches!(
            pool.map(0, 0, u64::MAX),
            Err(VdevMapError::OutOfRange { .. })
        ));
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let _ = pool.map(state % 3, state.rotate_left(17), state >> 40);
            let _ = pool.map(0, (state >> 20) << 9, (state & 0xffff) << 9);
        }
    }
}
