//! Finding real OpenZFS pools on devices and judging them as `zpool import` does before it
//! imports anything (OpenZFS `lib/libzutil/zutil_import.c` `zpool_find_import` /
//! `get_configs`, the kernel's `spa_tryimport` and `vdev_open` state rules, and
//! `lib/libzfs/libzfs_status.c` `check_status`).
//!
//! Theory. Each device's labels name its pool (`pool_guid`), itself (`guid`) and its
//! top-level vdev (`vdev_tree`, with `id`). Devices are grouped by pool guid; the pool-wide
//! fields (name, version, state, hostid) come from the label with the highest `txg`, and each
//! top-level vdev's subtree from the newest label among that top-level's devices. A leaf
//! whose guid was found on a device is ONLINE at the path it was found at; one not found is
//! UNAVAIL "cannot open" under the path its label recorded (listing never marks it "not
//! present", so it is not shown by guid). Interior vdevs derive their state: a mirror (or a
//! spare / replacing group) is DEGRADED while one child works and UNAVAIL "insufficient
//! replicas" when none does; a raidz tolerates `nparity` lost children. The root is UNAVAIL
//! when a top-level vdev is. Only when the tree opens does the pool-level verdict follow, in
//! the kernel's order: no valid uberblock (FAULTED, corrupted data), an unsupported version
//! ("newer version"), features needed for reading that Zetta does not read ("unsupported
//! feature(s)"), and a whole top-level vdev missing — a gap in the ids, or a tree whose guids
//! do not add up to the uberblock's `ub_guid_sum` (root + every vdev) — "missing device".
//!
//! Where OpenZFS's listing knows more than labels say, it has read the MOS (its tryimport).
//! `tryimport` here does the same through `pool::OpenZfsPool`: the MOS's full
//! `features_for_read` (an active feature Zetta cannot read refuses the pool) and the set of
//! enabled features (a v5000 pool lacking one of OpenZFS 2.3's gets `FeatDisabled`). The
//! MOS's vdev tree (a missing top-level vdev under its own path, hot spares and cache
//! devices) is not swapped in yet.
//!
//! The status line then follows `check_status`'s order for an import.
//!
//! Nothing here opens a device for writing; damaged or foreign labels are skipped.

use super::feature;
use super::uberblock::{self, Uberblock};
use crate::io::DeviceRef;
use crate::nvpair_xdr::XdrNvList;
use crate::vdev::openzfs::label::{self, pool_state};
use std::collections::BTreeMap;

/// `vdev_state_t` as an import listing shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Online,
    Degraded,
    Offline,
    /// `VDEV_STATE_CANT_OPEN`: UNAVAIL, or FAULTED with corrupt data.
    CantOpen,
}

/// `vdev_aux_t`: why a vdev cannot be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aux {
    OpenFailed,
    NoReplicas,
    BadGuidSum,
    VersionNewer,
    UnsupFeat,
    CorruptData,
}

impl Aux {
    /// The words `print_import_config` shows after the state.
    pub fn text(self) -> &'static str {
        match self {
            Aux::OpenFailed => "cannot open",
            Aux::NoReplicas => "insufficient replicas",
            Aux::BadGuidSum => "missing device",
            Aux::VersionNewer => "newer version",
            Aux::UnsupFeat => "unsupported feature(s)",
            Aux::CorruptData => "corrupted data",
        }
    }
}

/// `zpool_state_to_name`.
pub fn state_name(state: State, aux: Option<Aux>) -> &'static str {
    match state {
        State::Online => "ONLINE",
        State::Degraded => "DEGRADED",
        State::Offline => "OFFLINE",
        State::CantOpen if aux == Some(Aux::CorruptData) => "FAULTED",
        State::CantOpen => "UNAVAIL",
    }
}

/// One vdev of a found pool, as the listing shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportVdev {
    /// `zpool_vdev_name(.., VDEV_NAME_TYPE_ID)`: a leaf's path, `mirror-0`, `raidz2-1`…
    pub name: String,
    /// `type` from the label (`file`, `disk`, `mirror`, `raidz`, `spare`, …).
    pub kind: String,
    pub guid: u64,
    pub state: State,
    pub aux: Option<Aux>,
    /// A log device (listed under `logs`).
    pub is_log: bool,
    /// `type` is `hole` or `missing`: not listed.
    pub hidden: bool,
    /// Parity of a raidz / draid group (1 when an old label does not say), else 0.
    pub nparity: u64,
    pub children: Vec<ImportVdev>,
}

/// `zpool_status_t` values an import listing can show for these pools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    HostidMismatch,
    VersionNewer,
    UnsupFeatRead(Vec<String>),
    BadGuidSum,
    MissingDevNr,
    CorruptPool,
    MissingDevR,
    OfflineDev,
    VersionOlder,
    FeatDisabled,
}

/// A real OpenZFS pool found on devices.
#[derive(Clone, Debug)]
pub struct OpenZfsCandidate {
    pub name: String,
    pub guid: u64,
    /// `pool_state_t` of the newest label.
    pub pool_state: u64,
    /// `version` of the newest label.
    pub version: u64,
    pub txg: u64,
    pub comment: Option<String>,
    /// The newest label's config.
    pub config: XdrNvList,
    /// The best uberblock over every found device.
    pub uberblock: Option<Uberblock>,
    /// The root of the vdev tree, named after the pool.
    pub root: ImportVdev,
    pub status: Status,
    /// Leaf guid → path, for every device found.
    pub devices: BTreeMap<u64, String>,
}

impl OpenZfsCandidate {
    /// The `ZFS-8000-xx` message id `zfs_msgid_table` gives the status.
    pub fn msgid(&self) -> Option<&'static str> {
        Some(match self.status {
            Status::MissingDevR => "ZFS-8000-2Q",
            Status::MissingDevNr => "ZFS-8000-3C",
            Status::BadGuidSum => "ZFS-8000-6X",
            Status::CorruptPool => "ZFS-8000-72",
            Status::VersionNewer => "ZFS-8000-A5",
            Status::HostidMismatch => "ZFS-8000-EY",
            _ => return None,
        })
    }
}

/// What one device's labels contribute.
struct Found {
    path: String,
    config: XdrNvList,
    labels: Vec<label::Label>,
}

/// Reads every device's labels and assembles the OpenZFS pools they form, sorted by name
/// then guid. `system_hostid` is this host's id (0 when unset), for the last-accessed check.
pub fn find_pools(devices: &[DeviceRef], system_hostid: u64) -> Vec<OpenZfsCandidate> {
    find_pools_of(devices, system_hostid, false)
}

/// `find_pools`, Zetta's own pools included: for reading the format Zetta writes through
/// the OpenZFS codecs (tests of each structure that is OpenZFS's already).
pub fn find_pools_with_zetta(devices: &[DeviceRef], system_hostid: u64) -> Vec<OpenZfsCandidate> {
    find_pools_of(devices, system_hostid, true)
}

fn find_pools_of(
    devices: &[DeviceRef],
    system_hostid: u64,
    with_zetta: bool,
) -> Vec<OpenZfsCandidate> {
    let mut pools: BTreeMap<u64, Vec<Found>> = BTreeMap::new();
    for device in devices {
        let Some(read) = label::read_device(device.as_ref()) else {
            continue;
        };
        // Zetta's own pools of a current format (`org.zetta:format` in their labels) are
        // `spa::import`'s; a pool labelled by OpenZFS's keys alone is judged below.
        if !with_zetta
            && read
                .config
                .get(crate::vdev::label::ZETTA_FORMAT_KEY)
                .is_some()
        {
            continue;
        }
        let state = read.config.get_u64("state").unwrap_or(u64::MAX);
        // Spare and cache devices belong to pools through the MOS, not their labels.
        if state == pool_state::SPARE || state == pool_state::L2CACHE {
            continue;
        }
        let Some(pool_guid) = read.config.get_u64("pool_guid") else {
            continue;
        };
        if read.config.get_str("name").is_none() || read.config.get_nvlist("vdev_tree").is_none() {
            continue;
        }
        pools.entry(pool_guid).or_default().push(Found {
            path: device.path(),
            config: read.config,
            labels: read.labels,
        });
    }
    let mut out: Vec<OpenZfsCandidate> = pools
        .into_iter()
        .filter_map(|(guid, found)| assemble(guid, &found, system_hostid))
        .collect();
    for candidate in &mut out {
        tryimport(candidate, devices);
    }
    // A pool Zetta writes (by its version and features) is `spa::import`'s, whoever
    // wrote it last.
    if !with_zetta {
        out.retain(|candidate| zetta_writes(candidate, devices).is_err());
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.guid.cmp(&b.guid)));
    out
}

/// Why a pool OpenZFS's keys describe is not Zetta's to write (its engine imports it
/// read-write only when none of these holds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotZettas {
    /// A version Zetta does not write (`zfeature::version_is_written`).
    Version(u64),
    /// Active features (or label `features_for_read` entries) Zetta does not maintain,
    /// by guid: OpenZFS's rule makes the pool read-only (write features) or refuses it
    /// (read features) where they are unknown.
    Features(Vec<String>),
    /// The MOS cannot be read (such a pool is left to `spa::openzfs`, which says why).
    /// Where the object directory puts the root dir, history and error logs does not
    /// matter: the engine takes their numbers from it (`spa::directory::MosDirectory`).
    Layout(String),
}

/// Whether Zetta's engine imports this pool read-write (issue 14): its version is one
/// Zetta writes, every active feature in `features_for_read` and `features_for_write`
/// (count above 0) and every entry of the label's `features_for_read` is one Zetta
/// maintains (`zfeature::ZETTA_FEATURES`; format 26 has no private feature),
/// and its MOS can be read. Features alone decide (issue 14). An enabled feature Zetta does not know
/// (count 0, as `zhack feature enable` leaves one) does not take a pool away: it is not in
/// use, and OpenZFS opens such a pool read-write too.
pub fn zetta_writes(candidate: &OpenZfsCandidate, devices: &[DeviceRef]) -> Result<(), NotZettas> {
    use crate::spa::zfeature;
    let version = candidate
        .uberblock
        .as_ref()
        .map_or(candidate.version, |ub| ub.version);
    if !zfeature::version_is_written(version) || !zfeature::version_is_written(candidate.version) {
        return Err(NotZettas::Version(version));
    }
    let maintained = |guid: &str| zfeature::lookup_guid(guid).is_some();
    let mut foreign: Vec<String> = candidate
        .config
        .get_nvlist("features_for_read")
        .map(|list| {
            list.pairs
                .iter()
                .map(|p| String::from_utf8_lossy(&p.name).into_owned())
                .filter(|guid| !maintained(guid))
                .collect()
        })
        .unwrap_or_default();
    let pool = match super::pool::OpenZfsPool::open_devices(candidate, devices) {
        Ok(pool) => pool,
        Err(super::pool::OpenError::UnsupportedFeatures(names)) => {
            foreign.extend(names);
            foreign.sort();
            foreign.dedup();
            return Err(NotZettas::Features(foreign));
        }
        Err(e) => return Err(NotZettas::Layout(e.to_string())),
    };
    let mut active: Vec<String> = pool
        .features_for_read
        .iter()
        .filter(|(_, count)| **count > 0)
        .map(|(guid, _)| guid.clone())
        .collect();
    let directory = crate::dsl::openzfs::objdir::DIRECTORY_OBJECT;
    let lookup = |name: &str| pool.mos.zap_u64(directory, name).ok().flatten();
    if zfeature::version_has_features(version) {
        if let Some(object) = lookup(crate::dsl::openzfs::objdir::FEATURES_FOR_WRITE) {
            let entries = pool
                .mos
                .zap_list(object)
                .map_err(|e| NotZettas::Layout(e.to_string()))?;
            active.extend(
                entries
                    .iter()
                    .filter(|e| e.values.first().copied().unwrap_or(0) > 0)
                    .map(crate::dmu::openzfs::reader::entry_name),
            );
        }
    }
    foreign.extend(active.into_iter().filter(|guid| !maintained(guid)));
    if !foreign.is_empty() {
        foreign.sort();
        foreign.dedup();
        return Err(NotZettas::Features(foreign));
    }
    Ok(())
}

/// What OpenZFS's listing learns by loading the pool (`spa_tryimport`): the MOS's own
/// `features_for_read` (active features a label does not list refuse the pool as
/// unsupported), and the enabled features (`features_for_read` and `features_for_write`),
/// so a pool with every feature OpenZFS 2.3 knows enabled is not told some are disabled.
/// A pool whose MOS cannot be read keeps the labels' verdict.
fn tryimport(candidate: &mut OpenZfsCandidate, devices: &[DeviceRef]) {
    if candidate.root.state == State::CantOpen
        || candidate.version < feature::SPA_VERSION_FEATURES
        || !matches!(candidate.status, Status::Ok | Status::FeatDisabled)
    {
        return;
    }
    match super::pool::OpenZfsPool::open_devices(candidate, devices) {
        Err(super::pool::OpenError::UnsupportedFeatures(names)) => {
            candidate.root.state = State::CantOpen;
            candidate.root.aux = Some(Aux::UnsupFeat);
            candidate.status = Status::UnsupFeatRead(names);
        }
        Err(_) => {}
        Ok(pool) => {
            let mut enabled: std::collections::BTreeSet<String> =
                pool.features_for_read.keys().cloned().collect();
            let for_write = pool
                .mos
                .zap_u64(
                    crate::dsl::openzfs::objdir::DIRECTORY_OBJECT,
                    crate::dsl::openzfs::objdir::FEATURES_FOR_WRITE,
                )
                .ok()
                .flatten();
            if let Some(object) = for_write {
                if let Ok(entries) = pool.mos.zap_list(object) {
                    enabled.extend(entries.iter().map(crate::dmu::openzfs::reader::entry_name));
                }
            }
            if candidate.status == Status::FeatDisabled && feature::all_enabled(&enabled) {
                candidate.status = Status::Ok;
            }
        }
    }
}

fn txg_of(config: &XdrNvList) -> u64 {
    config.get_u64("txg").unwrap_or(0)
}

fn assemble(guid: u64, found: &[Found], system_hostid: u64) -> Option<OpenZfsCandidate> {
    let newest = found.iter().max_by_key(|f| txg_of(&f.config))?;
    let config = newest.config.clone();
    let name = config.get_str("name")?.to_string();
    let mut devices = BTreeMap::new();
    for f in found {
        if let Some(leaf) = f.config.get_u64("guid") {
            devices.entry(leaf).or_insert_with(|| f.path.clone());
        }
    }
    // Each top-level vdev's subtree from its newest label.
    let mut tops: BTreeMap<u64, &XdrNvList> = BTreeMap::new();
    let mut top_txg: BTreeMap<u64, u64> = BTreeMap::new();
    for f in found {
        let Some(tree) = f.config.get_nvlist("vdev_tree") else {
            continue;
        };
        let id = tree.get_u64("id").unwrap_or(0);
        let txg = txg_of(&f.config);
        if top_txg.get(&id).is_none_or(|t| txg > *t) {
            top_txg.insert(id, txg);
            tops.insert(id, tree);
        }
    }
    let known = tops.keys().next_back().map_or(0, |id| id + 1);
    let children_count = config.get_u64("vdev_children").unwrap_or(known).max(known);
    let mut children = Vec::new();
    let mut missing_top = false;
    for id in 0..children_count.min(1 << 16) {
        match tops.get(&id) {
            Some(tree) => children.push(build_vdev(tree, &devices, 0)),
            None => missing_top = true,
        }
    }
    let mut root = ImportVdev {
        name: name.clone(),
        kind: "root".to_string(),
        guid,
        state: State::Online,
        aux: None,
        is_log: false,
        hidden: false,
        nparity: 0,
        children,
    };
    interior_state(&mut root, true);
    if missing_top && root.state != State::CantOpen {
        root.state = State::CantOpen;
        root.aux = Some(Aux::BadGuidSum);
    }
    let best = found
        .iter()
        .filter_map(|f| uberblock::best_uberblock(&f.labels, uberblock::config_ashift(&f.config)))
        .max_by(|a, b| a.compare(b));
    let version = config.get_u64("version").unwrap_or(0);
    let mut unsupported = Vec::new();
    if root.state != State::CantOpen {
        match &best {
            None => {
                root.state = State::CantOpen;
                root.aux = Some(Aux::CorruptData);
            }
            Some(ub) if !feature::version_is_supported(ub.version) => {
                root.state = State::CantOpen;
                root.aux = Some(Aux::VersionNewer);
            }
            Some(ub) if ub.version >= feature::SPA_VERSION_FEATURES => {
                match config.get_nvlist("features_for_read") {
                    None => {
                        root.state = State::CantOpen;
                        root.aux = Some(Aux::CorruptData);
                    }
                    Some(ffr) => {
                        unsupported = feature::unsupported_for_read(ffr);
                        if !unsupported.is_empty() {
                            root.state = State::CantOpen;
                            root.aux = Some(Aux::UnsupFeat);
                        }
                    }
                }
            }
            Some(_) => {}
        }
    }
    // A top-level vdev no label describes (an old label does not say how many there are)
    // still counts in the uberblock's guid sum: the config is incomplete.
    if root.state != State::CantOpen {
        if let Some(ub) = &best {
            if guid_sum(&root) != ub.guid_sum {
                root.state = State::CantOpen;
                root.aux = Some(Aux::BadGuidSum);
            }
        }
    }
    let pool_state = config.get_u64("state").unwrap_or(pool_state::ACTIVE);
    let hostid = config.get_u64("hostid").unwrap_or(0);
    let status = check_status(
        &root,
        version,
        pool_state,
        hostid,
        system_hostid,
        unsupported,
    );
    Some(OpenZfsCandidate {
        comment: config.get_str("comment").map(str::to_string),
        txg: txg_of(&config),
        name,
        guid,
        pool_state,
        version,
        config,
        uberblock: best,
        root,
        status,
        devices,
    })
}

/// `vdev_guid_sum` of the root: every vdev's guid, the root's (the pool guid) included.
fn guid_sum(vdev: &ImportVdev) -> u64 {
    vdev.children
        .iter()
        .fold(vdev.guid, |sum, c| sum.wrapping_add(guid_sum(c)))
}

/// The name `zpool_vdev_name` gives a vdev config with `VDEV_NAME_TYPE_ID`.
fn vdev_name(tree: &XdrNvList, kind: &str, found_path: Option<&String>) -> String {
    let path = found_path
        .cloned()
        .or_else(|| tree.get_str("path").map(str::to_string));
    if let Some(path) = path {
        if kind == "disk" {
            let short = path.strip_prefix("/dev/").unwrap_or(&path).to_string();
            if tree.get_u64("whole_disk") == Some(1) {
                return strip_partition(&short);
            }
            return short;
        }
        return path;
    }
    let mut base = kind.to_string();
    if kind == "raidz" {
        base = format!("raidz{}", tree.get_u64("nparity").unwrap_or(1));
    }
    format!("{base}-{}", tree.get_u64("id").unwrap_or(0))
}

/// `zfs_strip_partition`: `sda1` → `sda`, `nvme0n1p1` → `nvme0n1`, `x-part1` → `x`.
fn strip_partition(path: &str) -> String {
    if let Some(i) = path.rfind("-part") {
        if path[i + 5..].bytes().all(|b| b.is_ascii_digit()) && i + 5 < path.len() {
            return path[..i].to_string();
        }
    }
    let trimmed = path.trim_end_matches(|c: char| c.is_ascii_digit());
    if trimmed.len() == path.len() {
        return path.to_string();
    }
    if let Some(stem) = trimmed.strip_suffix('p') {
        if stem.ends_with(|c: char| c.is_ascii_digit()) {
            return stem.to_string();
        }
    }
    trimmed.to_string()
}

fn build_vdev(tree: &XdrNvList, devices: &BTreeMap<u64, String>, depth: usize) -> ImportVdev {
    let kind = tree.get_str("type").unwrap_or("unknown").to_string();
    let guid = tree.get_u64("guid").unwrap_or(0);
    let children: Vec<ImportVdev> = if depth < 8 {
        tree.get_nvlist_array("children")
            .unwrap_or(&[])
            .iter()
            .map(|c| build_vdev(c, devices, depth + 1))
            .collect()
    } else {
        Vec::new()
    };
    let leaf = tree.get_nvlist_array("children").is_none();
    let found = devices.get(&guid);
    let (state, aux) = if !leaf {
        (State::Online, None)
    } else if tree.get_u64("offline") == Some(1) {
        (State::Offline, None)
    } else if found.is_some() {
        (State::Online, None)
    } else {
        (State::CantOpen, Some(Aux::OpenFailed))
    };
    ImportVdev {
        name: vdev_name(tree, &kind, if leaf { found } else { None }),
        is_log: tree.get_u64("is_log") == Some(1),
        hidden: kind == "hole" || kind == "missing",
        nparity: if kind == "raidz" || kind == "draid" {
            tree.get_u64("nparity").unwrap_or(1)
        } else {
            0
        },
        kind,
        guid,
        state,
        aux,
        children,
    }
}

/// Derives interior states bottom-up (`vdev_propagate_state` with the mirror, raidz and
/// root rules). Returns nothing; leaves keep their own state.
fn interior_state(vdev: &mut ImportVdev, is_root: bool) {
    if vdev.children.is_empty() && !is_root {
        return;
    }
    for child in vdev.children.iter_mut() {
        interior_state(child, false);
    }
    let shown: Vec<&ImportVdev> = vdev.children.iter().filter(|c| !c.hidden).collect();
    let bad = shown
        .iter()
        .filter(|c| matches!(c.state, State::CantOpen | State::Offline))
        .count();
    let degraded = shown.iter().any(|c| c.state == State::Degraded);
    // How many children may be lost: none for the root (a lost top-level vdev loses the
    // pool), `nparity` for raidz, all but one for a mirror, spare or replacing group.
    let tolerated = if is_root {
        0
    } else if vdev.nparity > 0 {
        vdev.nparity as usize
    } else {
        usize::MAX
    };
    let all_bad = !shown.is_empty() && bad == shown.len();
    if (tolerated == usize::MAX && all_bad) || (tolerated != usize::MAX && bad > tolerated) {
        vdev.state = State::CantOpen;
        vdev.aux = Some(Aux::NoReplicas);
    } else if bad > 0 || degraded {
        vdev.state = State::Degraded;
        vdev.aux = None;
    } else {
        vdev.state = State::Online;
        vdev.aux = None;
    }
}

fn any_leaf(vdev: &ImportVdev, pred: &dyn Fn(&ImportVdev) -> bool) -> bool {
    if vdev.children.is_empty() {
        return pred(vdev);
    }
    vdev.children
        .iter()
        .filter(|c| c.kind != "replacing")
        .any(|c| any_leaf(c, pred))
}

fn check_status(
    root: &ImportVdev,
    version: u64,
    pool_state_value: u64,
    hostid: u64,
    system_hostid: u64,
    unsupported: Vec<String>,
) -> Status {
    let cant_open = root.state == State::CantOpen;
    if hostid != 0 && hostid != system_hostid && pool_state_value == pool_state::ACTIVE {
        return Status::HostidMismatch;
    }
    if cant_open && root.aux == Some(Aux::VersionNewer) {
        return Status::VersionNewer;
    }
    if cant_open && root.aux == Some(Aux::UnsupFeat) {
        return Status::UnsupFeatRead(unsupported);
    }
    if cant_open && root.aux == Some(Aux::BadGuidSum) {
        return Status::BadGuidSum;
    }
    let missing = |v: &ImportVdev| v.state == State::CantOpen && v.aux == Some(Aux::OpenFailed);
    if cant_open && any_leaf(root, &missing) {
        return Status::MissingDevNr;
    }
    if cant_open && root.aux == Some(Aux::CorruptData) {
        return Status::CorruptPool;
    }
    if any_leaf(root, &missing) {
        return Status::MissingDevR;
    }
    if any_leaf(root, &|v| v.state == State::Offline) {
        return Status::OfflineDev;
    }
    if feature::version_is_supported(version) && version != feature::SPA_VERSION_FEATURES {
        return Status::VersionOlder;
    }
    if version >= feature::SPA_VERSION_FEATURES {
        return Status::FeatDisabled;
    }
    Status::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: OpenZFS names whole-disk leaves without their partition; a wrong rule would list
    // a disk pool under names the user never gave.
    #[test]
    fn partitions_are_stripped_like_openzfs() {
        assert_eq!(strip_partition("sda1"), "sda");
        assert_eq!(strip_partition("nvme0n1p1"), "nvme0n1");
        assert_eq!(
            strip_partition("disk/by-id/ata-X-part1"),
            "disk/by-id/ata-X"
        );
        assert_eq!(strip_partition("sdb"), "sdb");
    }
}
