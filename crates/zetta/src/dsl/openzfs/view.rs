//! The dataset layer of a real OpenZFS pool as the engine's read-only import serves it:
//! names, records, space figures, properties, snapshots, clones, bookmarks and holds, in
//! the shapes `Spa`'s DSL read methods return, with the figures OpenZFS computes
//! (`dsl_dir_stats`, `dsl_dataset_stats`, `dsl_get_available`, `dsl_dir_space_available`,
//! `dsl_get_written`, `dsl_dataset_space_written_impl`, `dsl_deadlist_space_range`,
//! `get_clones_stat`, `dsl_get_bookmarks_impl`, `dsl_dataset_get_holds`).
//!
//! Theory. `load` reads every DSL dir, dataset and the small ZAPs hanging off them once
//! (the pool is read-only: nothing changes after). Names are rewritten to the name the pool
//! is imported under. Space: USED, the compressed/logical sums and USEDSNAP/USEDDS/
//! USEDCHILD/USEDREFRESERV are the dir record's (`dd_used_breakdown` is kept only with
//! `DD_FLAG_USED_BREAKDOWN`; without it OpenZFS reports no breakdown, which prints as 0);
//! REFER and its sums the dataset record's; a snapshot's USED is its unique bytes. AVAIL
//! walks from the root down: the pool's adjusted size (`spa::openzfs::space`) capped by
//! each dir's quota, less its USED, plus its unused reservation; a head adds its unused
//! refreservation and is capped by its refquota (both properties, not dir fields).
//! `written` adds to the REFER difference what each later dataset's dead list holds born
//! before the older snapshot (the per-txg sub-lists of a dead list ZAP, keyed by their first
//! txg; a pre-v26 dead list is one list whose total is used).
//!
//! The small MOS structures read here besides the dir and dataset records:
//!
//! ```text
//! dead list (DMU_OT_DEADLIST, a ZAP)  bonus word 0 dl_used, 1 dl_comp, 2 dl_uncomp;
//!                                     entries "<first txg>" -> sub-list bpobj object
//! bpobj / old dead list, sync_bplist  bonus word 0 entries, 1 bytes, 2 comp, 3 uncomp
//! bookmarks ZAP ("com.delphix:bookmarks" in the dataset's own ZAP)
//!                                     "<mark>" -> [guid, creation_txg, creation_time, ...]
//! userrefs ZAP (ds_userrefs_obj)      "<tag>" -> [creation time]
//! next clones ZAP (ds_next_clones_obj) "<object in hex>" -> [clone head dataset object]
//! ```
//!
//! Properties go out in Zetta's props convention (`crate::dsl::prop`): every value a string,
//! index numbers as the names `zfs get` prints (`index`), numbers in decimal, received values
//! as `<prop>$recvd`, `zfs inherit` masks as `<prop>$inherit`; a `$iuv` entry takes the
//! local value's place (its value if it is a valid index, else nothing), as
//! `dsl_prop_get_all_impl` shows it to `zfs get`. Resolution above (zprop) then gives the
//! SOURCE OpenZFS prints.

use super::dataset::DslDatasetPhys as OzDatasetPhys;
use super::dataset::FIELD_BOOKMARK_NAMES;
use super::dir::{
    DslDirPhys as OzDirPhys, DD_FLAG_USED_BREAKDOWN, DD_USED_CHILD, DD_USED_CHILD_RSRV,
    DD_USED_HEAD, DD_USED_REFRSRV, DD_USED_SNAP,
};
use super::prop::{decode_value, entry_kind, EntryKind, PropValue, PropsZap};
use super::{index, ZapValue};
use crate::byteorder::ByteOrder;
use crate::dmu::openzfs::reader::{entry_name, OzfsError};
use crate::dsl::phys::DslDatasetPhys;
use crate::dsl::snapshot::Bookmark;
use crate::dsl::space::{ratio_x100, DatasetSpace};
use crate::spa::openzfs::pool::{zap_map, OpenZfsPool};
use crate::spa::openzfs::space::PoolSpace;
use crate::zio::blkptr::BlockPointer;
use std::collections::{BTreeMap, HashMap};

/// `DMU_OST_OTHER`: an object set of neither the ZPL nor a volume (ztest's).
const OST_OTHER: u64 = 4;
/// `DMU_OST_ZVOL`.
const OST_ZVOL: u64 = 3;
/// `DMU_OT_BPOBJ`: a dead list in the pre-v26 format (one list, no per-txg sub-lists).
const OT_BPOBJ: u8 = 5;
/// Most entries read from one small ZAP (holds, bookmarks, clones, dead list sub-lists).
const ENTRIES_MAX: usize = 1 << 16;
/// Longest prev-snapshot chain followed.
const CHAIN_MAX: usize = 1 << 20;

/// A dead list's space: the total, and per sub-list (first txg → bytes) when it has them.
#[derive(Clone, Debug, Default)]
struct Deadlist {
    total: u64,
    /// `None`: the old format, one list.
    by_mintxg: Option<BTreeMap<u64, u64>>,
}

impl Deadlist {
    /// `dsl_deadlist_space_range(0, maxtxg)`: the sub-lists starting before `maxtxg`.
    fn below(&self, maxtxg: u64) -> u64 {
        match &self.by_mintxg {
            Some(map) => map.range(..maxtxg).map(|(_, b)| *b).sum(),
            None => self.total,
        }
    }
}

/// One filesystem, volume or snapshot.
#[derive(Clone, Debug)]
struct Node {
    name: String,
    dir_obj: u64,
    dataset_obj: u64,
    phys: OzDatasetPhys,
    is_snapshot: bool,
    is_volume: bool,
    is_encrypted: bool,
    /// A snapshot's own props (`ds_props_obj`).
    snap_props: PropsZap,
    bookmarks: Vec<Bookmark>,
    holds: Vec<(String, u64)>,
    /// Clone heads in the order of the `ds_next_clones_obj` ZAP.
    clones: Vec<u64>,
}

/// One DSL dir.
#[derive(Clone, Debug)]
struct Dir {
    phys: OzDirPhys,
    props: PropsZap,
}

/// The dataset layer of an OpenZFS pool, read once.
pub struct DslView {
    nodes: Vec<Node>,
    by_name: HashMap<String, usize>,
    by_object: HashMap<u64, usize>,
    dirs: HashMap<u64, Dir>,
    /// Every dataset record read, hidden ones (`$ORIGIN@$ORIGIN`) included.
    datasets: HashMap<u64, OzDatasetPhys>,
    deadlists: HashMap<u64, Deadlist>,
}

fn corrupt(what: String) -> OzfsError {
    OzfsError::Corrupt(what)
}

/// The u64 values of a ZAP's entries, by name, in the ZAP's order.
fn zap_entries(pool: &OpenZfsPool, object: u64) -> Result<Vec<(String, Vec<u64>)>, OzfsError> {
    if object == 0 {
        return Ok(Vec::new());
    }
    Ok(pool
        .mos
        .zap_list(object)?
        .into_iter()
        .take(ENTRIES_MAX)
        .map(|e| (entry_name(&e), e.values))
        .collect())
}

fn read_deadlist(pool: &OpenZfsPool, object: u64) -> Result<Deadlist, OzfsError> {
    if object == 0 {
        return Ok(Deadlist::default());
    }
    let dn = pool.mos.dnode(object)?;
    let word = |bonus: &[u8], order: ByteOrder, at: usize| {
        order
            .u64_at(bonus, at)
            .map_err(|e| corrupt(format!("dead list {object}: {e}")))
    };
    if dn.object_type == OT_BPOBJ {
        return Ok(Deadlist {
            total: word(&dn.bonus, dn.order, 8)?,
            by_mintxg: None,
        });
    }
    let total = word(&dn.bonus, dn.order, 0)?;
    let mut by_mintxg = BTreeMap::new();
    for (name, values) in zap_entries(pool, object)? {
        let (Ok(mintxg), Some(&bpobj)) = (u64::from_str_radix(&name, 16), values.first()) else {
            return Err(corrupt(format!("dead list {object}: entry {name:?}")));
        };
        let sub = pool.mos.dnode(bpobj)?;
        *by_mintxg.entry(mintxg).or_insert(0u64) += word(&sub.bonus, sub.order, 8)?;
    }
    Ok(Deadlist {
        total,
        by_mintxg: Some(by_mintxg),
    })
}

/// The bookmarks of a head: the ZAP its extensible dataset object names.
fn read_bookmarks(pool: &OpenZfsPool, node: &Node) -> Vec<Bookmark> {
    let object = match pool.mos.zap_u64(node.dataset_obj, FIELD_BOOKMARK_NAMES) {
        Ok(Some(object)) => object,
        _ => return Vec::new(),
    };
    let mut out: Vec<Bookmark> = zap_entries(pool, object)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(mark, v)| {
            let (&guid, &creation_txg, &creation_time) = (v.first()?, v.get(1)?, v.get(2)?);
            Some(Bookmark {
                name: format!("{}#{mark}", node.name),
                guid,
                creation_txg,
                creation_time,
            })
        })
        .collect();
    out.sort_by(|a, b| (a.creation_txg, &a.name).cmp(&(b.creation_txg, &b.name)));
    out
}

impl DslView {
    /// Reads every dataset of `pool` once; `pool_name` is the name it is imported under
    /// (the first component of every name).
    pub fn load(pool: &OpenZfsPool, pool_name: &str) -> Result<DslView, OzfsError> {
        let mut view = DslView {
            nodes: Vec::new(),
            by_name: HashMap::new(),
            by_object: HashMap::new(),
            dirs: HashMap::new(),
            datasets: HashMap::new(),
            deadlists: HashMap::new(),
        };
        let all = pool.datasets()?;
        // `DMU_OST_OTHER` object sets (ztest's) are no filesystem or volume: libzfs refuses
        // to open them, so `zfs list` never shows them (nor their snapshots).
        let other: std::collections::HashSet<String> = all
            .iter()
            .filter(|ds| {
                !ds.is_snapshot && pool.objset(ds).is_ok_and(|os| os.phys.os_type == OST_OTHER)
            })
            .map(|ds| ds.name.clone())
            .collect();
        for ds in all {
            if other.contains(ds.name.split('@').next().unwrap_or("")) {
                continue;
            }
            let rest = ds.name.strip_prefix(pool.name.as_str()).unwrap_or("");
            let name = format!("{pool_name}{rest}");
            if let std::collections::hash_map::Entry::Vacant(slot) = view.dirs.entry(ds.dir_obj) {
                slot.insert(Dir {
                    phys: ds.dir.clone(),
                    props: pool.dir_props(ds.dir_obj)?,
                });
            }
            let is_encrypted = ds.is_encrypted();
            // The object set block of an encrypted dataset is only authenticated: its
            // type reads without the key.
            let is_volume =
                !ds.is_snapshot && pool.objset(&ds).is_ok_and(|os| os.phys.os_type == OST_ZVOL);
            let snap_props = if ds.is_snapshot && ds.phys.props_obj != 0 {
                zap_map(&pool.mos.zap_list(ds.phys.props_obj)?)
            } else {
                PropsZap::new()
            };
            let holds = if ds.is_snapshot {
                let mut holds: Vec<(String, u64)> = zap_entries(pool, ds.phys.userrefs_obj)?
                    .into_iter()
                    .map(|(tag, v)| (tag, v.first().copied().unwrap_or(0)))
                    .collect();
                holds.sort();
                holds
            } else {
                Vec::new()
            };
            let clones = zap_entries(pool, ds.phys.next_clones_obj)?
                .into_iter()
                .filter_map(|(_, v)| v.first().copied())
                .collect();
            let mut node = Node {
                name: name.clone(),
                dir_obj: ds.dir_obj,
                dataset_obj: ds.dataset_obj,
                phys: ds.phys.clone(),
                is_snapshot: ds.is_snapshot,
                is_volume,
                is_encrypted,
                snap_props,
                bookmarks: Vec::new(),
                holds,
                clones,
            };
            if !ds.is_snapshot {
                node.bookmarks = read_bookmarks(pool, &node);
            }
            view.datasets.insert(ds.dataset_obj, ds.phys.clone());
            view.by_name.insert(name, view.nodes.len());
            view.by_object.insert(ds.dataset_obj, view.nodes.len());
            view.nodes.push(node);
        }
        // Snapshot volumes: a snapshot of a volume is a volume snapshot.
        for i in 0..view.nodes.len() {
            if view.nodes[i].is_snapshot {
                let head = view.nodes[i]
                    .name
                    .split('@')
                    .next()
                    .unwrap_or("")
                    .to_string();
                if let Some(&h) = view.by_name.get(&head) {
                    view.nodes[i].is_volume = view.nodes[h].is_volume;
                }
            }
        }
        // Records and dead lists along every prev-snapshot chain (`written` follows them
        // into hidden datasets such as `$ORIGIN@$ORIGIN`).
        let objects: Vec<u64> = view.datasets.keys().copied().collect();
        for object in objects {
            let mut current = object;
            for _ in 0..CHAIN_MAX {
                if current == 0 || view.deadlists.contains_key(&current) {
                    break;
                }
                let phys = match view.datasets.get(&current) {
                    Some(phys) => phys.clone(),
                    None => {
                        let (phys, _) = pool.dataset_phys(current)?;
                        view.datasets.insert(current, phys.clone());
                        phys
                    }
                };
                view.deadlists
                    .insert(current, read_deadlist(pool, phys.deadlist_obj)?);
                current = phys.prev_snap_obj;
            }
        }
        Ok(view)
    }

    fn node(&self, name: &str) -> Option<&Node> {
        self.by_name.get(name).map(|&i| &self.nodes[i])
    }

    fn head(&self, name: &str) -> Option<&Node> {
        self.node(name).filter(|n| !n.is_snapshot)
    }

    /// Every filesystem and volume, parents before children, siblings by name.
    pub fn dataset_names(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| !n.is_snapshot)
            .map(|n| n.name.clone())
            .collect()
    }

    /// The head dataset object of a filesystem or volume.
    pub fn lookup_dataset(&self, name: &str) -> Option<u64> {
        self.head(name).map(|n| n.dataset_obj)
    }

    /// Whether a dataset (or snapshot) is a volume (`DMU_OST_ZVOL`).
    pub fn is_volume(&self, name: &str) -> bool {
        self.node(name).is_some_and(|n| n.is_volume)
    }

    /// Whether a dataset's object set is encrypted (its key is not here).
    pub fn is_encrypted(&self, name: &str) -> bool {
        self.node(name).is_some_and(|n| n.is_encrypted)
    }

    /// The DSL dir object of a head dataset (`Spa::lookup_dir`).
    pub fn dir_object(&self, name: &str) -> Option<u64> {
        self.head(name).map(|n| n.dir_obj)
    }

    /// Whether the dataset's dir keeps the USED breakdown (pools of version 13 and later).
    pub fn has_used_breakdown(&self, name: &str) -> bool {
        self.node(name)
            .and_then(|n| self.dirs.get(&n.dir_obj))
            .is_some_and(|d| d.phys.flags & DD_FLAG_USED_BREAKDOWN != 0)
    }

    /// A dataset's record in Zetta's shape (its object set pointer a hole: this pool's
    /// blocks are read through the OpenZFS reader, never through it).
    pub fn dataset_phys(&self, object: u64) -> Option<DslDatasetPhys> {
        let node = self.by_object.get(&object).map(|&i| &self.nodes[i])?;
        let p = &node.phys;
        Some(DslDatasetPhys {
            bp: BlockPointer::HOLE,
            dir: p.dir_obj,
            prev_snap: p.prev_snap_obj,
            prev_snap_txg: p.prev_snap_txg,
            next_snap: p.next_snap_obj,
            num_children: p.num_children,
            fsid_guid: p.fsid_guid,
            snapnames_zap: p.snapnames_zapobj,
            referenced_bytes: p.referenced_bytes,
            creation_txg: p.creation_txg,
            creation_time: p.creation_time,
            guid: p.guid,
            deadlist: p.deadlist_obj,
            flags: p.flags,
            holds_zap: p.userrefs_obj,
            props_zap: p.props_obj,
            next_clones_zap: p.next_clones_obj,
            compressed_bytes: p.compressed_bytes,
            uncompressed_bytes: p.uncompressed_bytes,
            unique_bytes: p.unique_bytes,
        })
    }

    /// A number property set on the dir itself (local, else received unless masked):
    /// `refquota` and `refreservation`, which OpenZFS keeps only as properties.
    fn own_number(&self, dir: &Dir, prop: &str) -> u64 {
        let number = |key: &str| match dir.props.get(key).map(|v| decode_value(key, v)) {
            Some(Ok(PropValue::Number(n))) => Some(n),
            _ => None,
        };
        number(prop)
            .or_else(|| {
                if dir.props.contains_key(&format!("{prop}$inherit")) {
                    None
                } else {
                    number(&format!("{prop}$recvd"))
                }
            })
            .unwrap_or(0)
    }

    /// `dsl_dir_space_available(dd, NULL, 0, TRUE)`.
    fn dir_available(&self, dir_obj: u64, adjusted_size: u64) -> u64 {
        // The chain root first.
        let mut chain = Vec::new();
        let mut current = dir_obj;
        while let Some(dir) = self.dirs.get(&current) {
            chain.push(dir);
            if dir.phys.parent_obj == 0 || chain.len() > super::super::NESTING_MAX + 1 {
                break;
            }
            current = dir.phys.parent_obj;
        }
        let mut parentspace = u64::MAX;
        for (depth, dir) in chain.iter().rev().enumerate() {
            let mut quota = if dir.phys.quota != 0 {
                dir.phys.quota
            } else {
                u64::MAX
            };
            let used = dir.phys.used_bytes;
            if depth == 0 {
                quota = quota.min(adjusted_size);
            }
            if dir.phys.reserved > used && parentspace != u64::MAX {
                parentspace = parentspace.saturating_add(dir.phys.reserved - used);
            }
            parentspace = if used > quota {
                0
            } else {
                parentspace.min(quota - used)
            };
        }
        parentspace
    }

    /// The space figures of a filesystem or volume, `pool` being the pool's space.
    pub fn dataset_space(&self, name: &str, pool: &PoolSpace) -> Option<DatasetSpace> {
        let node = self.head(name)?;
        let dir = self.dirs.get(&node.dir_obj)?;
        let d = &dir.phys;
        let p = &node.phys;
        let breakdown = d.flags & DD_FLAG_USED_BREAKDOWN != 0;
        let b = |i: usize| if breakdown { d.used_breakdown[i] } else { 0 };
        let mut available = self.dir_available(node.dir_obj, pool.adjusted_size());
        let refreservation = self.own_number(dir, "refreservation");
        if refreservation > p.unique_bytes {
            available = available.saturating_add(refreservation - p.unique_bytes);
        }
        let refquota = self.own_number(dir, "refquota");
        if refquota != 0 {
            available = if p.referenced_bytes < refquota {
                available.min(refquota - p.referenced_bytes)
            } else {
                0
            };
        }
        Some(DatasetSpace {
            used_bytes: d.used_bytes,
            referenced_bytes: p.referenced_bytes,
            available_bytes: available,
            used_by_dataset_bytes: b(DD_USED_HEAD),
            used_by_snapshots_bytes: b(DD_USED_SNAP),
            used_by_children_bytes: b(DD_USED_CHILD).saturating_add(b(DD_USED_CHILD_RSRV)),
            used_by_refreservation_bytes: b(DD_USED_REFRSRV),
            logical_used_bytes: d.uncompressed_bytes,
            logical_referenced_bytes: p.uncompressed_bytes,
            compress_ratio_x100: ratio_x100(d.uncompressed_bytes, d.compressed_bytes),
            refcompress_ratio_x100: ratio_x100(p.uncompressed_bytes, p.compressed_bytes),
        })
    }

    /// A dir's or snapshot's props ZAP in Zetta's convention.
    fn convert(props: &PropsZap) -> Vec<(String, String)> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        let mut iuv: Vec<(String, Option<String>)> = Vec::new();
        let text = |prop: &str, key: &str, value: &ZapValue| -> Option<String> {
            match decode_value(key, value).ok()? {
                PropValue::String(s) => Some(s),
                PropValue::Number(n) => {
                    Some(index::name_of(prop, n).unwrap_or_else(|| n.to_string()))
                }
            }
        };
        for (key, value) in props {
            match entry_kind(key) {
                EntryKind::Local(prop) => {
                    if let Some(v) = text(prop, key, value) {
                        out.insert(prop.to_string(), v);
                    }
                }
                EntryKind::Received(prop) => {
                    if let Some(v) = text(prop, key, value) {
                        out.insert(format!("{prop}{}", super::prop::RECEIVED_SUFFIX), v);
                    }
                }
                EntryKind::InheritMask(prop) => {
                    out.insert(
                        format!("{prop}{}", super::prop::INHERIT_SUFFIX),
                        String::new(),
                    );
                }
                EntryKind::InheritUnlessValue(prop) => {
                    let name = value.as_u64().and_then(|n| index::name_of(prop, n));
                    iuv.push((prop.to_string(), name));
                }
                EntryKind::HasReceived => {}
            }
        }
        // A `$iuv` entry hides the local value of the same dir (`dsl_prop_get_all_impl`);
        // a valid one is the value, an invalid one leaves nothing here (the local value it
        // hid still hides the received one).
        for (prop, name) in iuv {
            let local = out.remove(&prop);
            match name {
                Some(name) => {
                    out.insert(prop, name);
                }
                None if local.is_some() => {
                    out.remove(&format!("{prop}{}", super::prop::RECEIVED_SUFFIX));
                }
                None => {}
            }
        }
        out.into_iter().collect()
    }

    /// The property entries of a filesystem, volume or snapshot (its own ZAP only), in
    /// Zetta's convention (`name`, `name$recvd`, `name$inherit`), by name.
    pub fn local_props(&self, name: &str) -> Vec<(String, String)> {
        let Some(node) = self.node(name) else {
            return Vec::new();
        };
        if node.is_snapshot {
            return Self::convert(&node.snap_props);
        }
        self.dirs
            .get(&node.dir_obj)
            .map(|d| Self::convert(&d.props))
            .unwrap_or_default()
    }

    /// The snapshots of a filesystem, oldest first: (full name, object, record).
    pub fn snapshots(&self, fs: &str) -> Vec<(String, u64, DslDatasetPhys)> {
        let prefix = format!("{fs}@");
        self.nodes
            .iter()
            .filter(|n| n.is_snapshot && n.name.starts_with(&prefix))
            .filter_map(|n| {
                self.dataset_phys(n.dataset_obj)
                    .map(|p| (n.name.clone(), n.dataset_obj, p))
            })
            .collect()
    }

    /// A snapshot's USED: its unique bytes (what destroying it would free).
    pub fn snapshot_used_bytes(&self, full: &str) -> Option<u64> {
        self.node(full)
            .filter(|n| n.is_snapshot)
            .map(|n| n.phys.unique_bytes)
    }

    /// `written` of a filesystem, volume or snapshot: what it references that its previous
    /// snapshot did not (`dsl_get_written`); with no previous snapshot, its REFER.
    pub fn written_bytes(&self, name: &str) -> Option<u64> {
        let node = self.node(name)?;
        let new = &node.phys;
        let Some(old) = self.datasets.get(&new.prev_snap_obj) else {
            return Some(new.referenced_bytes);
        };
        let mut used = new.referenced_bytes.wrapping_sub(old.referenced_bytes);
        let mut object = node.dataset_obj;
        let mut snap = new.clone();
        for _ in 0..CHAIN_MAX {
            if snap.prev_snap_txg <= old.creation_txg {
                break;
            }
            let dl = self.deadlists.get(&object)?;
            used = used.wrapping_add(dl.below(old.creation_txg));
            object = snap.prev_snap_obj;
            snap = self.datasets.get(&object)?.clone();
        }
        used = used.wrapping_add(self.deadlists.get(&object)?.total);
        Some(used)
    }

    /// The `origin` of a clone: its origin snapshot's name (`None` for a dataset that is not
    /// a clone, or whose origin is the hidden `$ORIGIN@$ORIGIN`).
    pub fn origin_of(&self, name: &str) -> Option<String> {
        let node = self.head(name)?;
        let origin = self.dirs.get(&node.dir_obj)?.phys.origin_obj;
        let &i = self.by_object.get(&origin)?;
        let snapshot = &self.nodes[i];
        snapshot.is_snapshot.then(|| snapshot.name.clone())
    }

    /// The clones of a snapshot, in the order OpenZFS lists them (`clones` property).
    pub fn dependent_clones(&self, snapshot_obj: u64) -> Vec<String> {
        let Some(&i) = self.by_object.get(&snapshot_obj) else {
            return Vec::new();
        };
        let listed: Vec<String> = self.nodes[i]
            .clones
            .iter()
            .filter_map(|o| self.by_object.get(o))
            .map(|&c| self.nodes[c].name.clone())
            .collect();
        if !listed.is_empty() {
            return listed;
        }
        // Pools older than `ds_next_clones_obj` (v11): the dirs whose origin it is.
        self.nodes
            .iter()
            .filter(|n| {
                !n.is_snapshot
                    && self
                        .dirs
                        .get(&n.dir_obj)
                        .is_some_and(|d| d.phys.origin_obj == snapshot_obj)
            })
            .map(|n| n.name.clone())
            .collect()
    }

    /// The bookmarks of a filesystem or volume, oldest first.
    pub fn bookmarks(&self, fs: &str) -> Vec<Bookmark> {
        self.head(fs)
            .map(|n| n.bookmarks.clone())
            .unwrap_or_default()
    }

    /// The user holds on a snapshot: (tag, time), by tag.
    pub fn holds(&self, full: &str) -> Vec<(String, u64)> {
        self.node(full).map(|n| n.holds.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> ZapValue {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        ZapValue::Bytes(b)
    }

    // Why: the engine keeps the view in its pool (shared across threads).
    #[test]
    fn the_view_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<DslView>();
        shared::<crate::spa::openzfs::space::PoolSpace>();
    }

    // Why: the engine's props convention is strings with `$recvd`/`$inherit` entries; OpenZFS
    // stores index numbers, a `$iuv` override and `$hasrecvd`. Each must come out so that
    // zprop resolves what `dsl_prop_get_dd` does; malformed entries are left out.
    #[test]
    fn props_convert_to_zettas_convention() {
        let mut zap = PropsZap::new();
        zap.insert("compression".into(), ZapValue::Ints(vec![16 | (7 << 7)]));
        zap.insert("checksum$recvd".into(), ZapValue::Ints(vec![8]));
        zap.insert("checksum$inherit".into(), ZapValue::Ints(vec![0]));
        zap.insert("atime".into(), ZapValue::Ints(vec![0]));
        zap.insert("atime$iuv".into(), ZapValue::Ints(vec![1]));
        zap.insert("sync$iuv".into(), ZapValue::Ints(vec![9]));
        zap.insert("logbias$iuv".into(), ZapValue::Ints(vec![7]));
        zap.insert("logbias".into(), ZapValue::Ints(vec![1]));
        zap.insert("logbias$recvd".into(), ZapValue::Ints(vec![0]));
        zap.insert("dedup$iuv".into(), ZapValue::Ints(vec![7]));
        zap.insert("dedup$recvd".into(), ZapValue::Ints(vec![8]));
        zap.insert("quota".into(), ZapValue::Ints(vec![1 << 30]));
        zap.insert("mountpoint".into(), string("/mnt/x"));
        zap.insert("com.example:note".into(), string("hi"));
        zap.insert("$hasrecvd".into(), ZapValue::Ints(vec![0]));
        zap.insert("canmount".into(), ZapValue::Ints(vec![7]));
        zap.insert("bad".into(), ZapValue::Bytes(b"no nul".to_vec()));
        zap.insert("worse".into(), ZapValue::Ints(vec![1, 2]));
        let got: BTreeMap<String, String> = DslView::convert(&zap).into_iter().collect();
        let want: BTreeMap<String, String> = [
            ("compression", "zstd-7"),
            ("checksum$recvd", "sha256"),
            ("checksum$inherit", ""),
            // A valid $iuv wins over the local value; an invalid one hides the local value
            // (and, through it, the received one) or alone is nothing.
            ("atime", "on"),
            ("dedup$recvd", "sha256"),
            ("quota", "1073741824"),
            ("mountpoint", "/mnt/x"),
            ("com.example:note", "hi"),
            // A number outside the table is kept as the number stored.
            ("canmount", "7"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }
}
