//! The storage pool allocator: a pool's life from create to export, and the txg cycle that
//! commits its changes (OpenZFS `spa.c`, `spa_config.c`, `txg.c`, `vdev_label.c` sync).
//!
//! A pool is a vdev tree, an allocator, the MOS (meta object set) and the object sets of its
//! datasets. Changes accumulate in memory in the open txg; `sync` commits them:
//!
//! 1. dataset object sets write their dirty blocks (new places only: copy-on-write); then
//!    the sync tasks queued for this txg run (`dsl::synctask`: administrative changes, MOS
//!    only, seeing each head as written in this txg);
//! 2. the allocator's space map changes of this txg go into MOS space map objects;
//! 3. the MOS writes its dirty blocks; its new root is the uberblock's `rootbp`; 2 and 3
//!    repeat as sync passes until the maps hold every allocation of the txg, the MOS's own
//!    included (`txg`, "sync passes");
//! 4. every leaf is flushed; if the vdev config changed, the even labels get it (flush);
//! 5. the uberblock goes to slot `txg % slots` of every label of every leaf (flush);
//! 6. the odd labels get a changed config (flush); frees from txg-2 become reusable.
//!
//! Steps 1-3 run under the pool's lock (`sync_quiesce`, which then opens the next txg);
//! 4-6 are the tail (`txg::SyncTail`), which needs no pool lock, and the retire
//! (`sync_retire`). `txg` has the txg states, the locking order and the sync thread.
//!
//! A power cut before step 5 completes leaves the previous uberblock as the newest valid
//! one, and nothing it references was overwritten (frees are deferred two txgs; a block
//! overwritten in place in a later pass was born in this txg). Import reads every label,
//! picks the newest uberblock whose MOS verifies, and loads the space maps; a pool missing a
//! top-level vdev is refused.
//!
//! MOS layout: object 1 = OpenZFS's object directory, a ZAP naming the pool-wide objects
//! (`directory`: `root_dataset`, the packed `config` object, `pool_props`, `scan`, feature
//! ZAPs, bpobjs, and Zetta's `org.zetta:*` objects); in a pool Zetta creates, 2 = history,
//! 3 = error log, 4 = the root dataset (bonus: its `dsl_dataset_phys_t`), 5 = the root DSL
//! dir (the `MOS_OBJECT_*` constants, used only by `Spa::create`). A pool others created
//! numbers them as its allocator went, so everything after create takes them from the
//! directory (`dp.directory`: `root_dir`, `root_dataset`, `history`, `errlog_last`,
//! `origin_snapshot`). Each top-level vdev's metaslab array object number is in the config
//! as `ms_array`; space map arrays and space maps are allocated as needed.

pub mod directory;
pub mod dirty;
mod error;
pub mod events;
pub mod history;
pub mod import;
pub mod openzfs;
pub mod scan;
pub mod split;
pub mod txg;
pub mod uberblock;
mod vdev_dtl;
pub mod vdev_initialize;
mod vdev_ops;
pub use vdev_ops::SPA_VERSION_SPARES;
pub mod vdev_trim;
mod vdev_zap;
pub mod writeback;
pub mod zfeature;

pub use error::SpaError;
pub use import::{find_pools, ImportCandidate};
pub use scan::{ScanFunction, ScanPlan, ScanState, ScanStats};
pub use writeback::WritebackMode;

use crate::dmu::{default_data_props, object_type, IoCtx, ObjectSet, ObjsetPolicy, ObjsetType};
use crate::io::DeviceRef;
use crate::metaslab::{Allocator, MetaslabGroup, SpaceMapEntry};
use crate::nvlist::NvList;
use crate::types::{round_down_shift, Guid, ObjectId, Txg, ASHIFT_DEFAULT, DEVICE_SIZE_MIN_BYTES};
use crate::vdev::label;
use crate::vdev::{Vdev, VdevKind, VdevState};
use crate::zio::blkptr::BlockPointer;
use crate::zio::{WriteProps, Zio};
use uberblock::Uberblock;
use zetta_metaslab::space_map;

pub const TXG_INITIAL: Txg = Txg(4);
/// The MOS objects `Spa::create` makes at fixed numbers (OpenZFS's are where its allocator
/// put them): only create uses these; an open pool's are in `dp.directory`.
pub const MOS_OBJECT_DIRECTORY: ObjectId = ObjectId(1);
pub const MOS_OBJECT_HISTORY: ObjectId = ObjectId(2);
pub const MOS_OBJECT_ERRLOG: ObjectId = ObjectId(3);
pub const MOS_OBJECT_ROOT_DATASET: ObjectId = ObjectId(4);
/// The root DSL dir (the pool's dataset hierarchy starts here; see `dsl`).
pub const MOS_OBJECT_ROOT_DIR: ObjectId = ObjectId(5);
/// Dirty data of the open txg that starts a txg sync with the default `zfs_dirty_data_max`
/// (`dmu::tx`: `ZFS_DIRTY_DATA_SYNC_PERCENT` of `ZFS_DIRTY_DATA_MAX`, 128 MiB).
pub const DIRTY_BYTES_MAX: u64 =
    crate::dmu::tx::ZFS_DIRTY_DATA_MAX * crate::dmu::tx::ZFS_DIRTY_DATA_SYNC_PERCENT / 100;
/// Metadata a freeing change (unlink, truncate, destroy) is assumed to dirty.
pub const FREE_CHANGE_BYTES: u64 = 64 << 10;
pub const ARC_SIZE_BYTES_DEFAULT: u64 = 1 << 30;
pub const POOL_NAME_LEN_MAX: usize = 255;

pub const POOL_STATE_ACTIVE: u64 = 0;
pub const POOL_STATE_EXPORTED: u64 = 1;
pub const POOL_STATE_DESTROYED: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopKind {
    Single,
    Mirror,
    Raidz(u8),
}

/// One top-level vdev to create or add: its layout and its leaf devices.
#[derive(Clone)]
pub struct TopSpec {
    pub kind: TopKind,
    pub leaves: Vec<(String, DeviceRef)>,
    pub is_log: bool,
}

#[derive(Clone, Debug)]
pub struct CreateOptions {
    pub ashift: u32,
    pub props: NvList,
    pub arc_size_bytes_max: u64,
    /// The features enabled in the first txg (`zpool create`: every supported one; `-d`:
    /// none but those named), dependencies enabled with them.
    pub features: Vec<&'static zfeature::FeatureInfo>,
    /// The pool's SPA version (`-o version=N`): 5000, or a legacy one Zetta writes
    /// (`zfeature::version_is_written`), which takes no features.
    pub version: u64,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            ashift: ASHIFT_DEFAULT,
            props: NvList::new(),
            arc_size_bytes_max: ARC_SIZE_BYTES_DEFAULT,
            features: zfeature::ZETTA_FEATURES.iter().collect(),
            version: uberblock::SPA_VERSION,
        }
    }
}

pub struct Spa {
    /// The pool's name here (datasets are named under it).
    pub name: String,
    /// The name the labels and the MOS config keep when it differs from `name`: a
    /// temporary name (`zpool create -t`, `zpool import -t`, OpenZFS's
    /// `ZPOOL_PROP_TNAME`) lasts until export and is never written.
    pub name_on_disk: Option<String>,
    pub guid: Guid,
    pub root: std::sync::Arc<Vdev>,
    /// Cache (L2ARC) devices: leaves outside the DVA address space, listed in the MOS
    /// `l2cache` object (`spa_l2cache`).
    pub cache: Vec<Vdev>,
    /// Available hot spares, listed in the MOS `spares` object (`spa_spares`). A spare
    /// is only a name and a label until a replace puts it in the tree.
    pub spares: Vec<Vdev>,
    pub zio: std::sync::Arc<Zio>,
    /// The MOS and every dataset (`dsl::Pool`, OpenZFS `spa_dsl_pool`).
    pub dp: crate::dsl::Pool,
    pub(crate) open_txg: Txg,
    last_synced_txg: Txg,
    config_dirty: bool,
    /// The per-vdev ZAPs the last written config named (`spa::vdev_zap`); `None` until the
    /// first sync takes them from the tree.
    vdev_zaps_written: Option<std::collections::BTreeSet<u64>>,
    /// Pool properties set by the user (`zpool set`, `-o`).
    pub props: NvList,
    pub scan: ScanStats,
    pub dirty_bytes: u64,
    /// This pool's part of the process-wide dirty budget, if there is one (`dirty`).
    pub(crate) dirty_share: dirty::DirtyShare,
    /// What the intent log replay at import did, per dataset that had a log.
    pub zil_replayed: Vec<(String, crate::zil::ReplayReport)>,
    pub import_time_secs: u64,
    pub state: u64,
    /// Metaslab array contents per top-level vdev, loaded at import (object numbers).
    ms_arrays: Vec<Vec<u64>>,
    /// File data of the open txg written early (`writeback`).
    pub(crate) writeback: writeback::Writeback,
    /// Per-dataset write counters since import (`dataset_kstats`; memory only).
    pub dataset_kstats: crate::dataset_kstats::DatasetKstatsTable,
    /// Txg states: the txg in its syncing tail, the sync thread's shared state (`txg`).
    pub(crate) tx: txg::TxState,
    /// Imported read-only (`zpool import -o readonly=on`): nothing is ever written to its
    /// devices — no txg commits, no label updates, no intent log replay — and every change
    /// is refused (`SpaError::ReadOnly`).
    pub readonly: bool,
    /// A real OpenZFS pool imported read-only (`openzfs::import`): its reads dispatch to
    /// the OpenZFS codecs.
    pub(crate) openzfs: Option<std::sync::Arc<openzfs::import::Foreign>>,
    /// Frozen (`zpool freeze`, OpenZFS's debugging `spa_freeze`): from now on no txg
    /// reaches the devices. Changes stay in memory (the open txg keeps growing) until the
    /// pool is exported or the process ends, and are then lost: the devices keep the last
    /// txg synced before the freeze, their labels still ACTIVE, as after a crash. For
    /// tests of unclean exports only (memory only, never written).
    pub frozen: bool,
    /// Every leaf's `zpool initialize` / `zpool trim` state (`vdev_initialize`).
    pub(crate) leaf_activity: vdev_initialize::LeafActivities,
}

pub fn now_secs() -> u64 {
    if let Some(secs) = crate::io::sim::clock_secs() {
        return secs.max(0) as u64;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `zpool create` / import name rules (OpenZFS `pool_namecheck`).
pub fn check_pool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("name is too short".to_string());
    }
    if name.len() > POOL_NAME_LEN_MAX {
        return Err("name is too long".to_string());
    }
    if !name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return Err("name must begin with a letter".to_string());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | ' ')))
    {
        return Err(format!("invalid character '{bad}' in pool name"));
    }
    // OpenZFS zpool_name_valid: vdev type words may not begin a pool name.
    if ["mirror", "raidz", "draid", "spare"]
        .iter()
        .any(|r| name.starts_with(r))
        || name == "log"
    {
        return Err("name is reserved".to_string());
    }
    let mut chars = name.chars();
    if chars.next() == Some('c') && chars.next().is_some_and(|c| c.is_ascii_digit()) {
        return Err("pool name is reserved".to_string());
    }
    Ok(())
}

fn mos_policy() -> ObjsetPolicy {
    ObjsetPolicy {
        data_props: default_data_props(),
        meta_copies: 3,
        prev_snap_txg: Txg(0),
        record: true,
        frees_keep_syncing: false,
    }
}

pub fn dataset_policy(data_props: WriteProps) -> ObjsetPolicy {
    ObjsetPolicy {
        data_props,
        meta_copies: (data_props.copies + 1).min(3),
        prev_snap_txg: Txg(0),
        record: true,
        frees_keep_syncing: true,
    }
}

/// The allocatable size of a top-level vdev of `children` leaves whose smallest data
/// region (`vdev::label::data_size_bytes`) is `child_data_bytes`: what `build_top` gives a
/// new vdev, and what `zetta calc` predicts from the same function.
pub fn top_asize_bytes(kind: TopKind, children: usize, child_data_bytes: u64, ashift: u32) -> u64 {
    let child_size = round_down_shift(child_data_bytes, ashift);
    match kind {
        TopKind::Raidz(_) => child_size * children as u64,
        _ => child_size,
    }
}

/// Slop space of a pool of `size_bytes` (see `Spa::slop_bytes`).
pub fn slop_for_size(size_bytes: u64) -> u64 {
    (size_bytes >> 5).max(4 << 20).min(size_bytes / 2)
}

/// Builds a top-level vdev from a spec (not yet part of a pool).
fn build_top(spec: &TopSpec, id: u64, ashift: u32, txg: Txg) -> Result<Vdev, SpaError> {
    let mut leaves = Vec::new();
    for (index, (path, device)) in spec.leaves.iter().enumerate() {
        let size = device.size_bytes();
        if size < DEVICE_SIZE_MIN_BYTES {
            return Err(SpaError::Invalid(format!(
                "cannot create: {path} is smaller than 64M"
            )));
        }
        let mut leaf = Vdev::new_leaf(path, Some(device.clone()));
        leaf.id = index as u64;
        leaves.push(leaf);
    }
    if leaves.is_empty() {
        return Err(SpaError::Invalid(
            "a vdev needs at least one device".to_string(),
        ));
    }
    let child_size = leaves.iter().map(|l| l.asize_bytes).min().unwrap_or(0);
    let mut top = match spec.kind {
        TopKind::Single => {
            if leaves.len() != 1 {
                return Err(SpaError::Invalid(
                    "a single vdev has one device".to_string(),
                ));
            }
            leaves.remove(0)
        }
        TopKind::Mirror => {
            let mut mirror = Vdev::new(VdevKind::Mirror, Guid::random());
            mirror.children = leaves;
            mirror
        }
        TopKind::Raidz(parity) => {
            if !(1..=3).contains(&parity) || leaves.len() <= usize::from(parity) {
                return Err(SpaError::Invalid(format!(
                    "raidz{parity} needs more than {parity} devices"
                )));
            }
            let mut raidz = Vdev::new(VdevKind::Raidz { parity }, Guid::random());
            raidz.children = leaves;
            raidz
        }
    };
    top.id = id;
    top.ashift = ashift;
    top.is_log = spec.is_log;
    top.create_txg = txg;
    top.asize_bytes = top_asize_bytes(spec.kind, top.children.len(), child_size, ashift);
    let group = MetaslabGroup::new(id as u32, top.asize_bytes, ashift);
    top.ms_shift = group.ms_shift;
    Ok(top)
}

impl Spa {
    /// Creates a pool on the given devices and commits its first txg.
    pub fn create(name: &str, tops: &[TopSpec], options: &CreateOptions) -> Result<Spa, SpaError> {
        check_pool_name(name)
            .map_err(|why| SpaError::Invalid(format!("cannot create '{name}': {why}")))?;
        if !(9..=16).contains(&options.ashift) {
            return Err(SpaError::Invalid(format!(
                "invalid ashift {}",
                options.ashift
            )));
        }
        if !zfeature::version_is_written(options.version) {
            return Err(SpaError::Invalid(format!(
                "cannot create '{name}': pool version {} is not supported by this \
                 implementation",
                options.version
            )));
        }
        if !zfeature::version_has_features(options.version) && !options.features.is_empty() {
            return Err(SpaError::Invalid(format!(
                "cannot create '{name}': features need pool version {}",
                uberblock::SPA_VERSION
            )));
        }
        if tops.iter().all(|t| t.is_log) {
            return Err(SpaError::Invalid(
                "a pool needs at least one data vdev".to_string(),
            ));
        }
        // The root vdev's guid is the pool guid, as in OpenZFS (`ub_guid_sum` counts it).
        let pool_guid = Guid::random();
        let mut root = Vdev::new(VdevKind::Root, pool_guid);
        let mut allocator = Allocator::new();
        let mut log_allocator = Allocator::new();
        for (id, spec) in tops.iter().enumerate() {
            let top = build_top(spec, id as u64, options.ashift, TXG_INITIAL)?;
            let mut group =
                MetaslabGroup::with_ms_shift(id as u32, top.asize_bytes, top.ashift, top.ms_shift)
                    .map_err(|e| SpaError::Invalid(e.to_string()))?;
            group.data_disks = top.data_disks();
            if top.is_log {
                log_allocator.add_group(group);
            } else {
                allocator.add_group(group);
            }
            root.children.push(top);
        }
        let mut spa = Spa {
            name: name.to_string(),
            name_on_disk: None,
            guid: pool_guid,
            root: std::sync::Arc::new(root),
            cache: Vec::new(),
            spares: Vec::new(),
            zio: {
                let mut zio = Zio::new(allocator, options.arc_size_bytes_max);
                *zio.log_allocator.lock() = log_allocator;
                // `spa_create`: a random key for the salted checksums (blake3).
                for word in zio.checksum_salt.chunks_exact_mut(8) {
                    word.copy_from_slice(&crate::rand::random_u64().to_le_bytes());
                }
                std::sync::Arc::new(zio)
            },
            dp: crate::dsl::Pool::new(
                ObjectSet::create(0, ObjsetType::Meta, mos_policy()),
                BlockPointer::HOLE,
                directory::MosDirectory::with_roots(
                    MOS_OBJECT_ROOT_DIR.0,
                    MOS_OBJECT_ROOT_DATASET.0,
                ),
                ObjectSet::create(
                    MOS_OBJECT_ROOT_DATASET.0,
                    ObjsetType::Filesystem,
                    dataset_policy(default_data_props()),
                ),
            ),
            open_txg: TXG_INITIAL,
            last_synced_txg: Txg(0),
            config_dirty: true,
            vdev_zaps_written: Some(Default::default()),
            props: options.props.clone(),
            scan: ScanStats::default(),
            dirty_bytes: 0,
            dirty_share: Default::default(),
            zil_replayed: Vec::new(),
            import_time_secs: now_secs(),
            state: POOL_STATE_ACTIVE,
            ms_arrays: Vec::new(),
            writeback: Default::default(),
            dataset_kstats: Default::default(),
            tx: Default::default(),
            readonly: false,
            openzfs: None,
            frozen: false,
            leaf_activity: Default::default(),
        };
        spa.ms_arrays = vec![Vec::new(); spa.root.children.len()];
        // The version gates below the SPA (bpobj sizes, `$FREE`, `dd_clones`) hold from the
        // first object on.
        spa.zio.set_spa_version(options.version);
        {
            let ctx = IoCtx {
                zio: &spa.zio,
                root: &spa.root,
                txg: spa.open_txg,
            };
            let normal_space_bytes = spa.normal_space_bytes();
            history::create(
                &mut spa.dp.mos,
                &ctx,
                MOS_OBJECT_HISTORY,
                normal_space_bytes,
            )?;
            crate::zap::zap_create_at(
                &mut spa.dp.mos,
                &ctx,
                MOS_OBJECT_ERRLOG,
                object_type::ERROR_LOG,
            )
            .map_err(crate::dsl::zap_error)?;
            spa.dp.mos.create_object_at(
                &ctx,
                MOS_OBJECT_ROOT_DATASET,
                object_type::DSL_DATASET,
                512,
                object_type::DSL_DATASET,
                crate::dsl::phys::DSL_DATASET_BONUS_BYTES,
            )?;
            spa.dp.mos.create_object_at(
                &ctx,
                MOS_OBJECT_ROOT_DIR,
                object_type::DSL_DIR,
                512,
                object_type::DSL_DIR,
                crate::dsl::phys::DSL_DIR_BONUS_BYTES,
            )?;
            let dir = crate::dsl::phys::DslDirPhys {
                head_dataset: MOS_OBJECT_ROOT_DATASET.0,
                creation_time: now_secs(),
                ..Default::default()
            };
            spa.dp.mos.set_bonus(
                &ctx,
                MOS_OBJECT_ROOT_DIR,
                &dir.encode(spa.dp.mos.dsl_origin),
            )?;
            // `$MOS`, `$FREE`, `$ORIGIN` (its snapshot at MOS object 6) come next, as in
            // `dsl_pool_create`.
            crate::dsl::pool::create_special_dirs(
                &mut spa.dp.mos,
                &ctx,
                MOS_OBJECT_ROOT_DIR.0,
                TXG_INITIAL,
                now_secs(),
            )?;
            let deadlist = crate::dsl::create_dead_list(&mut spa.dp.mos, &ctx)?;
            // A clone of `$ORIGIN@$ORIGIN` as every dataset without an origin of its own
            // (`dsl_dataset_create_sync_dd`): its previous-snapshot txg is the origin's
            // creation txg, 1, and its own creation txg says 1 too (the first txg's).
            let dataset = crate::dsl::phys::DslDatasetPhys {
                dir: MOS_OBJECT_ROOT_DIR.0,
                prev_snap_txg: crate::dsl::pool::ORIGIN_CREATION_TXG,
                creation_txg: crate::dsl::pool::creation_txg(TXG_INITIAL),
                creation_time: now_secs(),
                guid: Guid::random().0,
                fsid_guid: crate::dsl::phys::fsid_guid_random(),
                deadlist,
                flags: crate::dsl::phys::DS_FLAG_UNIQUE_ACCURATE,
                ..Default::default()
            };
            spa.dp.mos.set_bonus(
                &ctx,
                MOS_OBJECT_ROOT_DATASET,
                &dataset.encode(spa.dp.mos.dsl_origin),
            )?;
            spa.dp.root_dataset.policy.prev_snap_txg = Txg(dataset.prev_snap_txg);
            crate::dsl::pool::link_clone(
                &mut spa.dp.mos,
                &ctx,
                crate::dsl::phys::ORIGIN_SNAPSHOT_OBJECT,
                MOS_OBJECT_ROOT_DATASET.0,
                true,
            )?;
            spa.dp.directory = directory::MosDirectory::create(
                &mut spa.dp.mos,
                &ctx,
                (MOS_OBJECT_ROOT_DIR.0, MOS_OBJECT_ROOT_DATASET.0),
                MOS_OBJECT_HISTORY.0,
                MOS_OBJECT_ERRLOG.0,
                options.version,
                &options.features,
                spa.zio.checksum_salt,
            )?;
            spa.publish_features();
            // The root dataset counts objects from its start where the pool enables
            // userobj_accounting (what OpenZFS's first mount reaches through
            // `dmu_objset_userobjspace_upgrade`: its root object set is made before the
            // features are enabled).
            if spa
                .dp
                .directory
                .features
                .is_enabled(zfeature::USEROBJ_ACCOUNTING_GUID)
            {
                spa.dp.root_dataset.enable_userobj_accounting();
            }

            // The pool's root filesystem is a ZPL filesystem from the first txg.
            let zpl_version = crate::zpl::zpl_version_for_spa(options.version);
            crate::zpl::Zfsvfs::create_fs(&mut spa.dp.root_dataset, &ctx, zpl_version)
                .map_err(|e| SpaError::Corrupt(e.to_string()))?;
        }
        // `vdev_label_init`: a new pool's devices start with blank labels, so no ring slot
        // of an earlier pool (an uberblock_t does not name its pool) outlives the create.
        for top in &spa.root.children {
            for leaf in top.leaves() {
                if let Some(device) = &leaf.device {
                    label::clear_labels(device.as_ref())
                        .map_err(|e| SpaError::Io(e.to_string()))?;
                }
            }
        }
        spa.sync()?;
        Ok(spa)
    }

    pub fn open_txg(&self) -> Txg {
        self.open_txg
    }

    pub fn last_synced_txg(&self) -> Txg {
        self.last_synced_txg
    }

    pub fn ctx(&self) -> IoCtx<'_> {
        io_ctx!(self)
    }

    pub fn mark_config_dirty(&mut self) {
        self.config_dirty = true;
    }

    /// Appends a line to the pool's command history (committed with the next txg).
    pub fn log_history(&mut self, command: &str) {
        // A read-only pool keeps no history (OpenZFS logs nothing it cannot write).
        if self.readonly {
            return;
        }
        self.dp
            .history_pending
            .push(history::HistoryRecord::Command {
                time_secs: now_secs(),
                command: command.to_string(),
            });
    }

    /// The pool configuration as the MOS keeps it (OpenZFS's keys, XDR nvlist;
    /// `vdev::config::label_config` derives each leaf's label from it).
    pub fn config(&self) -> crate::nvpair_xdr::XdrNvList {
        crate::vdev::config::pool_config(&crate::vdev::config::PoolFacts {
            version: self.dp.directory.version,
            name: self.name_on_disk.as_deref().unwrap_or(&self.name),
            guid: self.guid.0,
            state: self.state,
            txg: self.open_txg.0,
            hostid: system_hostid(),
            hostname: &hostname(),
            comment: self.props.get_str("comment").filter(|c| !c.is_empty()),
            compatibility: self
                .props
                .get_str("compatibility")
                .filter(|c| !c.is_empty()),
            root: &self.root,
            label_features: &self.dp.directory.features.label_features(),
        })
    }

    /// The MOS `spares` and `l2cache` lists (`spa_sync_aux_dev`).
    fn aux_lists(&self) -> directory::AuxLists {
        directory::AuxLists {
            spares: self
                .spares
                .iter()
                .map(|s| crate::vdev::config::aux_config(s, true))
                .collect(),
            l2cache: self
                .cache
                .iter()
                .map(|c| crate::vdev::config::aux_config(c, false))
                .collect(),
        }
    }

    /// The labels of the spares and cache devices (`vdev_aux_label_generate`), rewritten
    /// with the pool's labels whenever the config changes (OpenZFS writes them when the
    /// device is added; the bytes are the same each time).
    fn aux_labels(&self) -> Vec<(crate::io::DeviceRef, crate::nvpair_xdr::XdrNvList)> {
        let version = self.dp.directory.version;
        // A spare in use has the pool's label (written with the tree's leaves).
        let spares = self
            .spares
            .iter()
            .filter(|s| !self.root.leaves().iter().any(|l| l.guid == s.guid))
            .map(|s| (s, true));
        let cache = self.cache.iter().map(|c| (c, false));
        spares
            .chain(cache)
            .filter_map(|(vdev, spare)| {
                Some((
                    vdev.device.clone()?,
                    crate::vdev::config::aux_label(version, vdev, spare),
                ))
            })
            .collect()
    }

    /// Tells the write path which active features shape what it writes (holes with their
    /// birth, embedded block pointers): called whenever the feature state changes.
    /// The normal class's space (`metaslab_class_get_dspace(spa_normal_class)`): what
    /// sizes a new history ring.
    fn normal_space_bytes(&self) -> u64 {
        self.root
            .children
            .iter()
            .filter(|top| !top.is_log)
            .map(|top| top.asize_bytes)
            .sum()
    }

    /// The pool's root filesystem's dataset object (the root DSL dir's head dataset: 4 in
    /// pools Zetta creates, elsewhere in pools others created).
    pub fn root_dataset_object(&self) -> u64 {
        self.dp.directory.root_dataset
    }

    pub(crate) fn publish_features(&self) {
        self.zio.set_spa_version(self.dp.directory.version);
        let features = &self.dp.directory.features;
        self.zio.set_block_features(
            features.is_active("com.delphix:hole_birth"),
            features.is_active("com.delphix:embedded_data"),
            features.is_active("org.illumos:lz4_compress"),
        );
    }

    /// The pool's feature flags (`spa::zfeature`).
    pub fn features(&self) -> &zfeature::FeatureState {
        &self.dp.directory.features
    }

    /// The pool's SPA version (`zpool get version`): 5000 or a legacy one.
    pub fn version(&self) -> u64 {
        match &self.openzfs {
            Some(foreign) => foreign.version,
            None => self.dp.directory.version,
        }
    }

    /// `spa_upgrade` (`zpool upgrade [-V N]`, `zpool set version=N`): raises the pool's
    /// version in the open txg. Crossing to 5000 makes the feature objects when the txg
    /// syncs (`spa_sync_upgrades`); the caller enables features after. Only versions Zetta
    /// writes, and never down.
    pub fn upgrade(&mut self, version: u64) -> Result<(), SpaError> {
        let current = self.version();
        if version < current || !zfeature::version_is_written(version) || self.openzfs.is_some() {
            return Err(SpaError::Invalid(format!(
                "cannot upgrade '{}' from version {current} to {version}",
                self.name
            )));
        }
        if version != current {
            self.check_upgradable()?;
            self.dp.directory.version = version;
            self.mark_config_dirty();
            self.publish_features();
        }
        Ok(())
    }

    /// Refuses to raise a pool below `SPA_VERSION_DEADLISTS` (26): crossing it needs
    /// `dsl_pool_upgrade_dir_clones` (`$FREE`, `free_bpobj`, every dir's `dd_clones`),
    /// which Zetta does not write yet, and a version-28 pool without them does not open in
    /// OpenZFS. (`zpool upgrade`, `zpool set version=`, `feature@…=enabled`.)
    pub fn check_upgradable(&self) -> Result<(), SpaError> {
        let current = self.version();
        if current < crate::dsl::snapshot::SPA_VERSION_DEADLISTS {
            return Err(SpaError::Invalid(format!(
                "cannot upgrade '{}' from version {current}: upgrading a pool below version \
                 26 is not supported by this implementation yet",
                self.name
            )));
        }
        Ok(())
    }

    /// `zpool upgrade` / `zpool set feature@NAME=enabled`: enables a supported feature
    /// (and what it depends on) in the open txg; false when it already was. A legacy pool
    /// is first upgraded to 5000, as `spa_prop_set` does for a feature property.
    pub fn feature_enable(&mut self, info: &'static zfeature::FeatureInfo) -> bool {
        if !zfeature::version_has_features(self.dp.directory.version) && self.openzfs.is_none() {
            self.dp.directory.version = uberblock::SPA_VERSION;
        }
        let enabled = self.dp.directory.features.enable(info);
        if enabled {
            self.mark_config_dirty();
            self.publish_features();
        }
        enabled
    }

    /// Commits the open txg (see the module header for the order of writes) and returns it
    /// once its uberblock is durable: `sync_quiesce`, the tail in the caller, `sync_retire`
    /// (`txg`: the daemon's sync thread runs the same three steps, the tail without the pool
    /// lock). A txg still in its tail is retired first. A read-only pool commits nothing:
    /// with nothing changed it reports its last synced txg, and a change that reached it
    /// anyway is refused rather than written.
    pub fn sync(&mut self) -> Result<Txg, SpaError> {
        let Some(tail) = self.sync_quiesce()? else {
            return Ok(self.last_synced_txg);
        };
        tail.run();
        self.sync_retire()?;
        Ok(tail.txg())
    }

    /// Txg states, first half of a commit (OpenZFS `txg_quiesce` and `spa_sync` up to
    /// `vdev_config_sync`): retires a txg still in its tail, quiesces the open txg N,
    /// writes it through the MOS, and opens N+1 (`open_txg` advances, the dirty counters
    /// start again). Returns N's tail (`txg::SyncTail`: flushes, labels, uberblocks), which
    /// the caller runs without needing the pool (`SyncTail::run`) and then retires
    /// (`sync_retire`); until then N is "syncing" and `last_synced_txg` is still N-1.
    /// `None`: a read-only pool with nothing to commit, or a frozen one (`freeze`).
    pub fn sync_quiesce(&mut self) -> Result<Option<std::sync::Arc<txg::SyncTail>>, SpaError> {
        // At most one txg syncs at a time.
        self.sync_retire()?;
        if self.frozen {
            return Ok(None);
        }
        if self.readonly {
            if self.has_dirty() {
                return Err(SpaError::ReadOnly);
            }
            return Ok(None);
        }
        let started = std::time::Instant::now();
        self.tx.shared.note_committer();
        let mut phases = txg::SyncPhases::default();
        // File data written early in this txg takes its place first (`writeback`).
        self.writeback_reap(true);
        let mut mark = std::time::Instant::now();
        phases.writeback = mark - started;
        let txg = self.open_txg;
        // 1. Dataset object sets (their intent logs are retired first: this txg holds
        //    every change they recorded).
        {
            let ctx = io_ctx!(self, txg);
            crate::zil::sync(&mut self.dp.root_dataset, &ctx);
            for head in self.dp.datasets.values_mut() {
                crate::zil::sync(&mut head.objset, &ctx);
            }
            if self.dp.root_dataset.is_dirty() || self.dp.root_dataset_bp.is_hole() {
                let old = self.dp.root_dataset_bp;
                self.dp.root_dataset_bp = self.dp.root_dataset.sync(&ctx, &old)?;
                let root_dataset = self.dp.directory.root_dataset;
                let bonus = self.dp.mos.bonus(&ctx, ObjectId(root_dataset))?;
                let mut phys =
                    crate::dsl::phys::DslDatasetPhys::decode(&bonus, self.dp.mos.dsl_origin)
                        .map_err(|e| SpaError::Corrupt(e.to_string()))?;
                phys.bp = self.dp.root_dataset_bp;
                // Space accounting and the dead list of what it released, same txg.
                let (born, freed, dead) = self.dp.root_dataset.take_space_changes();
                let features = born.features;
                let refreserved = self
                    .dp
                    .ref_limits
                    .get(&phys.dir)
                    .map_or(0, |l| l.refreservation);
                crate::dsl::space::head_synced(
                    &mut self.dp.mos,
                    &ctx,
                    root_dataset,
                    &mut phys,
                    refreserved,
                    born,
                    freed,
                    &dead,
                )?;
                // `dsl_dataset_sync_done`: the features its new blocks need.
                self.dp.directory.features.activate_dataset(
                    &mut self.dp.mos,
                    &ctx,
                    root_dataset,
                    features,
                )?;
            }
            for (&object, head) in self.dp.datasets.iter_mut() {
                if !head.objset.is_dirty() && !head.phys.bp.is_hole() {
                    continue;
                }
                let old = head.phys.bp;
                head.phys.bp = head.objset.sync(&ctx, &old)?;
                let (born, freed, dead) = head.objset.take_space_changes();
                let features = born.features;
                let refreserved = self
                    .dp
                    .ref_limits
                    .get(&head.phys.dir)
                    .map_or(0, |l| l.refreservation);
                crate::dsl::space::head_synced(
                    &mut self.dp.mos,
                    &ctx,
                    object,
                    &mut head.phys,
                    refreserved,
                    born,
                    freed,
                    &dead,
                )?;
                self.dp.directory.features.activate_dataset(
                    &mut self.dp.mos,
                    &ctx,
                    object,
                    features,
                )?;
            }
        }
        phases.objsets = mark.elapsed();
        mark = std::time::Instant::now();
        // 1b. Sync tasks (`dsl::synctask`): administrative changes see every head as
        //     written in this txg and change the MOS before it is written.
        self.sync_tasks_run(txg)?;
        phases.sync_tasks = mark.elapsed();
        mark = std::time::Instant::now();
        {
            let ctx = io_ctx!(self, txg);
            // 2. History (this txg's internal records first, then the command lines) and
            //    error log.
            if !self.dp.history_pending.is_empty() || !self.dp.sync_tasks.history.is_empty() {
                let mut records = std::mem::take(&mut self.dp.sync_tasks.history);
                records.append(&mut self.dp.history_pending);
                // `spa_history_log_sync`: a pool without a history gets one now.
                let object = match self.dp.directory.history {
                    Some(object) => object,
                    None => {
                        let normal_space_bytes = self.normal_space_bytes();
                        let object =
                            history::create_allocated(&mut self.dp.mos, &ctx, normal_space_bytes)?;
                        crate::zap::zap_update(
                            &mut self.dp.mos,
                            &ctx,
                            ObjectId(crate::dsl::openzfs::objdir::DIRECTORY_OBJECT),
                            crate::dsl::openzfs::objdir::HISTORY,
                            &[object],
                        )
                        .map_err(crate::dsl::zap_error)?;
                        self.dp.directory.history = Some(object);
                        object
                    }
                };
                history::append(&mut self.dp.mos, &ctx, object, &records, &hostname())?;
            }
            let errlog = self.zio.errlog.lock().clone();
            self.dp
                .directory
                .sync_errlog(&mut self.dp.mos, &ctx, &errlog)?;
        }
        // 2b. The leaves' dirty time logs (`vdev_dtl_sync`; `spa::vdev_dtl`).
        self.dtl_sync(txg)?;
        // 2c. Per-vdev ZAPs for new vdevs, those of departed vdevs destroyed
        //     (`vdev_construct_zaps`; `spa::vdev_zap`).
        self.vdev_zaps_sync(txg)?;
        phases.history_errlog = mark.elapsed();
        mark = std::time::Instant::now();
        // 3-4. Space maps, the object directory and the MOS itself, pass after pass until
        //      the space maps hold every allocation and free of this txg, the MOS's own
        //      included (`txg` module header, "sync passes").
        let mut pass = 1;
        loop {
            let arrays_changed = self.sync_space_maps(txg, pass)?;
            phases.space_maps += mark.elapsed();
            mark = std::time::Instant::now();
            // `dsl_pool_sync`: `$MOS` is charged the MOS's own blocks of the passes before.
            self.mos_space_sync(txg)?;
            let ctx = io_ctx!(self, txg);
            if pass == 1 || arrays_changed {
                let config = self.config();
                let aux = self.aux_lists();
                self.dp.directory.sync(
                    &mut self.dp.mos,
                    &ctx,
                    config,
                    &self.props,
                    &self.scan,
                    &aux,
                )?;
            }
            let old = self.dp.mos_bp;
            self.dp.mos_bp = self.dp.mos.sync_pass(&ctx, &old, pass)?;
            let (born, mut freed, dead) = self.dp.mos.take_space_changes();
            freed.add(&crate::dmu::BlockSpace::of_all(&self.root, &dead));
            self.mos_diduse_space(&born, &freed);
            phases.mos += mark.elapsed();
            mark = std::time::Instant::now();
            let pending = self.zio.allocator.lock().has_space_map_updates()
                || self.zio.log_allocator.lock().has_space_map_updates();
            if !pending {
                break;
            }
            pass += 1;
            if pass > txg::SYNC_PASS_MAX {
                return Err(SpaError::Corrupt(format!(
                    "txg {txg} did not converge in {} sync passes",
                    txg::SYNC_PASS_MAX
                )));
            }
        }
        phases.sync_passes = pass;
        // 5-8 are the tail's (`txg::SyncTail`): everything it writes is fixed here, with
        // `open_txg` still N (the labels' config says `txg` N).
        let labels = self.config_dirty.then(|| txg::LabelConfigs {
            config: self.config(),
            aux: self.aux_labels(),
        });
        let ub = Uberblock {
            version: self.dp.directory.version,
            txg,
            guid_sum: self.root.guid_sum(),
            timestamp_secs: now_secs(),
            rootbp: self.dp.mos_bp,
        };
        self.config_dirty = false;
        // Txg N+1 opens: writers fill it while N's tail runs.
        self.open_txg = txg.next();
        self.dirty_bytes = 0;
        self.dirty_share.publish(0);
        self.writeback_committed();
        let tail = txg::SyncTail::new(self.root.clone(), ub, labels, phases);
        self.tx.syncing = Some(tail.clone());
        self.tx.opened(self.open_txg);
        Ok(Some(tail))
    }

    /// Persists the space map changes made since the previous pass into MOS objects
    /// (OpenZFS `metaslab_sync` in sync pass `pass`: a debug word with the txg and the
    /// pass before each run of allocations and of frees). Returns whether a vdev's metaslab
    /// array object was created (the config names it).
    fn sync_space_maps(&mut self, txg: Txg, pass: u32) -> Result<bool, SpaError> {
        let mut updates = self
            .zio
            .allocator
            .lock()
            .take_space_map_updates_in_pass(pass);
        updates.extend(
            self.zio
                .log_allocator
                .lock()
                .take_space_map_updates_in_pass(pass),
        );
        if updates.is_empty() {
            return Ok(false);
        }
        let sync_pass = u16::try_from(pass).unwrap_or(u16::MAX);
        let ctx = io_ctx!(self, txg);
        let mut array_objects: Vec<u64> = self
            .root
            .children
            .iter()
            .map(|t| t.ms_array_object)
            .collect();
        for update in updates {
            let vdev = update.vdev_id as usize;
            if self.ms_arrays.len() <= vdev {
                self.ms_arrays.resize(vdev + 1, Vec::new());
            }
            if vdev >= array_objects.len() {
                return Err(SpaError::Corrupt(format!(
                    "space map update for missing vdev {vdev}"
                )));
            }
            if array_objects[vdev] == 0 {
                let id =
                    self.dp
                        .mos
                        .create_object(&ctx, object_type::METASLAB_ARRAY, 16384, 0, 0)?;
                array_objects[vdev] = id.0;
            }
            let array = &mut self.ms_arrays[vdev];
            if array.len() <= update.ms_index {
                array.resize(update.ms_index + 1, 0);
            }
            if array[update.ms_index] == 0 {
                // OpenZFS `space_map_alloc` in a pool without spacemap_histogram and
                // log_spacemap: 16 KiB blocks, the 24-byte `space_map_phys_t`.
                let id = self.dp.mos.create_object(
                    &ctx,
                    space_map::DMU_OT_SPACE_MAP,
                    space_map::SPACE_MAP_BLOCK_SIZE_BYTES,
                    space_map::DMU_OT_SPACE_MAP_HEADER,
                    space_map::SPACE_MAP_SIZE_V0,
                )?;
                self.dp
                    .mos
                    .set_bonus(&ctx, id, &space_map::SpaceMapPhys::new_v0(id.0).encode())?;
                array[update.ms_index] = id.0;
                let bytes: Vec<u8> = array.iter().flat_map(|v| v.to_le_bytes()).collect();
                self.dp
                    .mos
                    .write(&ctx, ObjectId(array_objects[vdev]), 0, &bytes)?;
            }
            let object = ObjectId(array[update.ms_index]);
            let shift = self
                .root
                .children
                .get(vdev)
                .map(|t| t.ashift)
                .unwrap_or(crate::types::ASHIFT_DEFAULT);
            let geometry = space_map::SpaceMapGeometry {
                start_bytes: update.start_bytes,
                shift,
            };
            let records =
                space_map::encode_sync_records(&update.entries, geometry, txg.0, sync_pass)
                    .map_err(|e| SpaError::Corrupt(format!("space map of vdev {vdev}: {e}")))?;
            let bytes = space_map::words_to_bytes(&space_map::encode_records(&records));
            let mut phys = space_map::SpaceMapPhys::decode(&self.dp.mos.bonus(&ctx, object)?)
                .map_err(|e| SpaError::Corrupt(format!("space map {object}: {e}")))?;
            if update.condense {
                // OpenZFS `space_map_truncate`.
                self.dp.mos.truncate(&ctx, object, 0)?;
                phys.length_bytes = 0;
            }
            self.dp.mos.write(&ctx, object, phys.length_bytes, &bytes)?;
            phys.object = object.0;
            phys.length_bytes += bytes.len() as u64;
            phys.alloc_bytes = update.alloc_bytes as i64;
            self.dp.mos.set_bonus(&ctx, object, &phys.encode())?;
        }
        let mut changed = false;
        for (top, object) in self.root_mut().children.iter_mut().zip(array_objects) {
            if top.ms_array_object != object {
                top.ms_array_object = object;
                changed = true;
            }
        }
        self.config_dirty |= changed;
        Ok(changed)
    }

    /// Loads every space map into the allocator (import).
    pub(crate) fn load_space_maps(&mut self) -> Result<(), SpaError> {
        let ctx = io_ctx!(self);
        let mut allocator = Allocator::new();
        let mut log_allocator = Allocator::new();
        self.ms_arrays = vec![Vec::new(); self.root.children.len()];
        for (vdev, top) in self.root.children.iter().enumerate() {
            if top.kind == VdevKind::Hole {
                continue;
            }
            let mut group = MetaslabGroup::with_ms_shift(
                vdev as u32,
                top.asize_bytes,
                top.ashift,
                top.ms_shift,
            )
            .map_err(|e| SpaError::Corrupt(format!("vdev {vdev}: {e}")))?;
            group.data_disks = top.data_disks();
            if top.ms_array_object != 0 {
                let array_object = ObjectId(top.ms_array_object);
                // OpenZFS reads `vdev_ms_count` entries; the rest of the array's blocks
                // must be zeros.
                let size = self.dp.mos.extent_bytes(&ctx, array_object)?;
                let bytes = self.dp.mos.read(&ctx, array_object, 0, size as usize)?;
                let mut ids: Vec<u64> = bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect();
                let count = group.metaslabs.len();
                if ids.iter().skip(count).any(|&id| id != 0) {
                    return Err(SpaError::Corrupt(format!(
                        "vdev {vdev}: metaslab array {array_object} names more than \
                         {count} metaslabs"
                    )));
                }
                ids.truncate(count);
                for (ms_index, &id) in ids.iter().enumerate() {
                    if id == 0 {
                        continue;
                    }
                    let (entries, alloc_bytes) =
                        read_space_map(&self.dp.mos, &ctx, ObjectId(id), &group, ms_index)
                            .map_err(|e| {
                                SpaError::Corrupt(format!(
                                    "space map of vdev {vdev} metaslab {ms_index}: {e}"
                                ))
                            })?;
                    group
                        .load(ms_index, &entries)
                        .map_err(|e| SpaError::Corrupt(format!("space map of vdev {vdev}: {e}")))?;
                    let replayed = group.metaslabs[ms_index].recorded_tree().total_bytes();
                    if replayed != alloc_bytes {
                        return Err(SpaError::Corrupt(format!(
                            "space map of vdev {vdev} metaslab {ms_index}: smp_alloc \
                             {alloc_bytes} but its entries allocate {replayed} bytes"
                        )));
                    }
                }
                self.ms_arrays[vdev] = ids;
            }
            if top.is_log {
                log_allocator.add_group(group);
            } else {
                allocator.add_group(group);
            }
        }
        // Every block the pool references is in the space maps, the MOS's own included
        // (format 16): nothing to add.
        *self.zio.allocator.lock() = allocator;
        *self.zio.log_allocator.lock() = log_allocator;
        Ok(())
    }

    /// Space held back from ordinary writes so that commits (metadata, space maps) always
    /// find room: 1/32 of the pool like OpenZFS's slop, at least 4 MiB.
    pub fn slop_bytes(&self) -> u64 {
        let (size, _, _) = self.space();
        slop_for_size(size)
    }

    /// AVAIL as `zfs list` shows it: free space less the slop, deflated like USED (raidz
    /// parity excluded), so the two columns add up in the same units.
    pub fn available_bytes(&self) -> u64 {
        self.available_bytes_counting(0)
    }

    /// `available_bytes` as if `extra_free_bytes` more were free (space held only for a
    /// while, like intent log blocks, that no dataset is charged for).
    pub(crate) fn available_bytes_counting(&self, extra_free_bytes: u64) -> u64 {
        let (_, _, free) = self.space();
        let free = free.saturating_add(extra_free_bytes);
        let normal = self.root.children.iter().filter(|t| !t.is_log);
        let (usable, raw) = normal.fold((0u64, 0u64), |(u, r), t| {
            (u + t.usable_size_bytes(), r + t.raw_size_bytes())
        });
        let available = free.saturating_sub(self.slop_bytes());
        if raw == 0 {
            return 0;
        }
        (u128::from(available) * u128::from(usable) / u128::from(raw)) as u64
    }

    /// Refuses a write of `bytes` (with `copies`) that the pool could not commit: the
    /// ENOSPC check made before data is dirtied (OpenZFS `dmu_tx_assign`), conservative
    /// because compression is not known yet. Ordinary writes stop short of the slop.
    pub fn check_space(&self, bytes: u64, copies: u8) -> Result<(), SpaError> {
        self.check_space_within(bytes, copies, self.slop_bytes())
    }

    /// `check_space` for a change that frees space or only touches metadata to do so
    /// (unlink, rmdir, truncate, punch hole, destroy): it may use half the slop, as
    /// OpenZFS's net-free transactions (`ZFS_SPACE_CHECK_RESERVED`), so that a pool that
    /// ordinary writes filled can always be emptied again.
    pub fn check_space_to_free(&self) -> Result<(), SpaError> {
        self.check_space_within(FREE_CHANGE_BYTES, 1, self.slop_bytes() / 2)
    }

    fn check_space_within(&self, bytes: u64, copies: u8, slop: u64) -> Result<(), SpaError> {
        let (size, _, free) = self.space();
        let usable: u64 = self
            .root
            .children
            .iter()
            .filter(|t| !t.is_log)
            .map(|t| t.usable_size_bytes())
            .sum();
        let raw: u64 = self
            .root
            .children
            .iter()
            .filter(|t| !t.is_log)
            .map(|t| t.raw_size_bytes())
            .sum();
        let inflation = if usable == 0 {
            1.0
        } else {
            raw as f64 / usable as f64
        };
        let needed = |pending: u64| {
            ((pending + bytes) as f64 * f64::from(copies.max(1)) * inflation * 1.02) as u64
        };
        if size == 0 {
            return Err(SpaError::NoSpace);
        }
        if free >= needed(self.dirty_bytes) + slop {
            return Ok(());
        }
        // Dirty data written early but not installed yet already has its space: count it
        // once (this waits for a batch in flight, only when the pool is nearly full).
        let settled = self.writeback_settled_bytes();
        let (_, _, free) = self.space();
        if free < needed(self.dirty_bytes.saturating_sub(settled)) + slop {
            return Err(SpaError::NoSpace);
        }
        Ok(())
    }

    /// Runs `check` and, when it refuses while the pool has something to commit (dirty
    /// data counted as new space, or freed space still deferred), commits and asks again,
    /// up to the deferral's length: a write on a full pool just after a delete waits for
    /// the freed space instead of failing with ENOSPC (OpenZFS's `dmu_tx_assign` waits for
    /// a sync on ERESTART the same way).
    pub fn admit_settled(
        &mut self,
        mut check: impl FnMut(&mut Spa) -> Result<(), SpaError>,
    ) -> Result<(), SpaError> {
        for _ in 0..=zetta_metaslab::allocator::FREE_DEFER_TXG_COUNT + 1 {
            match check(self) {
                Ok(()) => return Ok(()),
                Err(e @ (SpaError::NoSpace | SpaError::QuotaExceeded)) => {
                    if !self.has_dirty() {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
            self.sync()?;
        }
        check(self)
    }

    /// Whether space freed by a committed txg still waits out the two-txg deferral: the
    /// pool keeps committing (empty txgs) until it is allocatable again, as OpenZFS's
    /// sync thread does while its defer trees hold space, so an idle pool gives back what
    /// a delete freed within a few commits instead of holding it until the next change.
    pub fn frees_pending(&self) -> bool {
        let last = self.zio.last_free_txg().0;
        last != 0
            && self.open_txg.0
                <= last.saturating_add(zetta_metaslab::allocator::FREE_DEFER_TXG_COUNT)
    }

    /// Whether the open txg holds anything to commit (the txg timer's test), counting
    /// freed space still deferred (`frees_pending`).
    pub fn has_dirty(&self) -> bool {
        self.frees_pending()
            || self.dirty_bytes > 0
            || self.config_dirty
            || self.dp.sync_tasks.any_queued()
            || self.dp.mos.is_dirty()
            || self.dp.root_dataset.is_dirty()
            || self.dp.datasets.values().any(|head| head.objset.is_dirty())
    }

    /// Charges the open txg `bytes` of dirty data (`dmu_tx_commit`'s part) and starts a
    /// commit when enough has accumulated (`Spa::dirty_sync_bytes`, the sync threshold of
    /// `zfs_dirty_data_max`): this pool's, or all pools' of the process when they share a
    /// budget (`dirty`). With a sync thread (`txg`) it only wakes the thread, whatever the
    /// amount: the write throttle (`dmu::tx`) makes writers wait, never commit. Without
    /// one it commits here.
    pub fn note_dirty(&mut self, bytes: u64) -> Result<(), SpaError> {
        self.dirty_bytes += bytes;
        // A txg whose tail finished is retired here (a scheduling point under simulation).
        self.sync_reap()?;
        self.writeback_reap(false);
        let over_shared_budget = self.dirty_share.publish(self.dirty_bytes);
        self.txg_publish_dirty();
        if (self.dirty_bytes >= self.dirty_sync_bytes() || over_shared_budget)
            && self.txg_dirty_budget_spent()
        {
            self.tx_throttle()
                .stats
                .commits_in_writer
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.sync()?;
        } else {
            self.writeback_start();
        }
        Ok(())
    }

    /// Space figures for `zpool list`: (size, allocated, free) over normal-class vdevs.
    pub fn space(&self) -> (u64, u64, u64) {
        if let Some(f) = &self.openzfs {
            return (f.space.size, f.space.alloc, f.space.free);
        }
        let allocator = self.zio.allocator.lock();
        (
            allocator.size_bytes(),
            allocator.allocated_bytes(),
            allocator.free_bytes(),
        )
    }

    /// Per top-level vdev: (size, allocated, free, fragmentation).
    pub fn vdev_space(&self, vdev: usize) -> Option<(u64, u64, u64, Option<u64>)> {
        if let Some(f) = &self.openzfs {
            let id = self.root.children.get(vdev)?.id;
            let v = f.space.vdevs.iter().find(|v| v.id == id)?;
            // Fragmentation needs the space maps' histograms, not read here.
            return Some((v.size, v.alloc, v.free(), None));
        }
        let is_log = self.root.children.get(vdev).is_some_and(|t| t.is_log);
        let allocator = if is_log {
            self.zio.log_allocator.lock()
        } else {
            self.zio.allocator.lock()
        };
        let group = allocator.group(vdev as u32)?;
        Some((
            group.size_bytes(),
            group.allocated_bytes(),
            group.free_bytes(),
            group.fragmentation_percent(),
        ))
    }

    /// Replaces the root dataset's object set (rollback).
    pub(crate) fn set_root_objset(&mut self, objset: ObjectSet, bp: BlockPointer) {
        self.dp.root_dataset = objset;
        self.dp.root_dataset_bp = bp;
    }

    /// The root dataset's object-set block pointer as of the last commit.
    pub(crate) fn root_bp(&self) -> BlockPointer {
        self.dp.root_dataset_bp
    }

    /// The MOS's objset block pointer as of the last commit (the uberblock's `rootbp`).
    pub(crate) fn mos_root_bp(&self) -> BlockPointer {
        self.dp.mos_bp
    }

    /// ARC statistics in the Linux kstat layout (`name type data` lines, like
    /// /proc/spl/kstat/zfs/arcstats), for tools.
    pub fn arc_stats_text(&self) -> String {
        self.zio.arc.stats().to_kstat_text()
    }

    pub fn health(&self) -> VdevState {
        self.root.state()
    }

    /// Command history lines (epoch seconds, command).
    pub fn history(&mut self) -> Result<Vec<(u64, String)>, SpaError> {
        self.history_records(false)
    }

    /// Every history record of a Zetta pool as OpenZFS's nvlists (stored, then those
    /// waiting for the next txg, packed as `spa_history_log_sync` will pack them), for
    /// `zpool history -l`, which prints their host (and user, zone, which Zetta does not
    /// record). Empty for a foreign pool (its records are read by `openzfs::history`).
    pub fn history_nvlists(&mut self) -> Result<Vec<openzfs::history::Record>, SpaError> {
        if self.openzfs.is_some() {
            return Ok(Vec::new());
        }
        let ctx = io_ctx!(self);
        let mut records = match self.dp.directory.history {
            Some(object) => history::read(&self.dp.mos, &ctx, object)?,
            None => Vec::new(),
        };
        let host = hostname();
        records.extend(
            self.dp
                .sync_tasks
                .history
                .iter()
                .chain(&self.dp.history_pending)
                .map(|r| openzfs::history::Record {
                    list: r.to_nvlist(&host),
                }),
        );
        Ok(records)
    }

    /// History lines (epoch seconds, text) with, when `internal`, the internal records of
    /// sync tasks (`[txg:N] snapshot tank@a (70) `), as `zpool history -i` prints them.
    pub fn history_records(&mut self, internal: bool) -> Result<Vec<(u64, String)>, SpaError> {
        if let Some(f) = &self.openzfs {
            // OpenZFS's records (`openzfs::history`): the user commands, as `zpool history`
            // shows them without -i; internal events are read there by who asks for them.
            let records = openzfs::history::read(&f.pool).map_err(|e| match e {
                openzfs::history::HistoryError::NoHistory => {
                    SpaError::Invalid("no history available".to_string())
                }
                e => SpaError::Invalid(e.to_string()),
            })?;
            return Ok(records
                .iter()
                .filter_map(|r| Some((r.time().unwrap_or(0), r.command()?)))
                .collect());
        }
        let ctx = io_ctx!(self);
        let stored = match self.dp.directory.history {
            Some(object) => history::read(&self.dp.mos, &ctx, object)?,
            None => Vec::new(),
        };
        let pending = self
            .dp
            .sync_tasks
            .history
            .iter()
            .chain(&self.dp.history_pending)
            .map(history::HistoryRecord::line);
        Ok(stored
            .iter()
            .filter_map(history::record_line)
            .chain(pending)
            .filter(|(_, _, is_internal)| internal || !is_internal)
            .map(|(time, text, _)| (time, text))
            .collect())
    }

    /// `spa_freeze`: commits what is dirty, then no txg is written any more (`frozen`).
    pub fn freeze(&mut self) -> Result<(), SpaError> {
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        self.sync()?;
        self.frozen = true;
        Ok(())
    }

    /// Exports: commit, mark the labels exported, flush, release the devices.
    pub fn export(mut self) -> Result<(), SpaError> {
        if self.readonly {
            // Its labels still say what the last read-write import left (OpenZFS writes
            // nothing at the export of a read-only pool either).
            return Ok(());
        }
        self.state = POOL_STATE_EXPORTED;
        self.config_dirty = true;
        self.sync()?;
        Ok(())
    }

    /// Destroys: labels say destroyed, so import no longer lists the pool.
    pub fn destroy(mut self) -> Result<(), SpaError> {
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        self.state = POOL_STATE_DESTROYED;
        self.config_dirty = true;
        self.sync()?;
        Ok(())
    }

    /// Object access on the root dataset's object set (the library API until datasets).
    /// The DMU keeps no byte size (`dmu::dnode`): like ztest's objects, these keep theirs
    /// in an 8-byte bonus of type `DMU_OT_UINT64_OTHER`.
    pub fn create_object(&mut self, block_size_bytes: u32) -> Result<ObjectId, SpaError> {
        let ctx = io_ctx!(self);
        let id = self.dp.root_dataset.create_object(
            &ctx,
            object_type::PLAIN_FILE,
            block_size_bytes,
            object_type::UINT64_OTHER,
            8,
        )?;
        self.dp
            .root_dataset
            .set_bonus(&ctx, id, &0u64.to_le_bytes())?;
        Ok(id)
    }

    pub fn write_object(&mut self, id: ObjectId, offset: u64, data: &[u8]) -> Result<(), SpaError> {
        self.check_space(
            data.len() as u64,
            self.dp.root_dataset.policy.data_props.copies,
        )?;
        let ctx = io_ctx!(self);
        let size = object_bonus_size(&self.dp.root_dataset, &ctx, id)?;
        let end = offset.saturating_add(data.len() as u64);
        self.dp.root_dataset.write(&ctx, id, offset, data)?;
        if end > size {
            self.dp
                .root_dataset
                .set_bonus(&ctx, id, &end.to_le_bytes())?;
        }
        self.note_dirty(data.len() as u64)
    }

    /// Bytes [offset, offset + len) of an object, cut at its size (zeros past its blocks).
    pub fn read_object(
        &mut self,
        id: ObjectId,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, SpaError> {
        let ctx = io_ctx!(self);
        let size = object_bonus_size(&self.dp.root_dataset, &ctx, id)?;
        let want = size.saturating_sub(offset).min(len as u64) as usize;
        if want == 0 {
            return Ok(Vec::new());
        }
        let mut data = self.dp.root_dataset.read(&ctx, id, offset, want)?;
        data.resize(want, 0);
        Ok(data)
    }

    pub fn free_object(&mut self, id: ObjectId) -> Result<(), SpaError> {
        let ctx = io_ctx!(self);
        Ok(self.dp.root_dataset.free_object(&ctx, id)?)
    }

    /// The dnode of an object of the root dataset (tests and the zdb-like inspector).
    pub fn object_dnode(&mut self, id: ObjectId) -> Result<crate::dmu::dnode::DnodePhys, SpaError> {
        let ctx = io_ctx!(self);
        Ok(self.dp.root_dataset.dnode(&ctx, id)?)
    }

    pub fn truncate_object(&mut self, id: ObjectId, size_bytes: u64) -> Result<(), SpaError> {
        let ctx = io_ctx!(self);
        self.dp.root_dataset.truncate(&ctx, id, size_bytes)?;
        self.dp
            .root_dataset
            .set_bonus(&ctx, id, &size_bytes.to_le_bytes())?;
        Ok(())
    }

    pub fn object_size(&mut self, id: ObjectId) -> Result<u64, SpaError> {
        let ctx = io_ctx!(self);
        object_bonus_size(&self.dp.root_dataset, &ctx, id)
    }

    pub fn object_ids(&mut self) -> Result<Vec<ObjectId>, SpaError> {
        let ctx = io_ctx!(self);
        Ok(self.dp.root_dataset.object_ids(&ctx)?)
    }

    /// Data properties of the root dataset's new writes (compression, checksum, copies).
    pub fn set_data_props(&mut self, props: WriteProps) {
        self.dp.root_dataset.policy = dataset_policy(props);
    }

    pub fn set_record_size(&mut self, size_bytes: u32) {
        self.dp.root_dataset.set_block_size_max(size_bytes);
    }

    /// Error log entries (persistent across export/import until a clean scrub).
    pub fn error_log(&self) -> Vec<crate::zio::Bookmark> {
        self.zio.errlog.lock().iter().copied().collect()
    }
}

/// A library-API object's size: the u64 in its `DMU_OT_UINT64_OTHER` bonus (untrusted).
fn object_bonus_size(os: &ObjectSet, ctx: &IoCtx<'_>, id: ObjectId) -> Result<u64, SpaError> {
    let bonus = os.bonus(ctx, id)?;
    bonus
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| SpaError::Corrupt(format!("object {id}: a {}-byte size bonus", bonus.len())))
}

/// This host's id as OpenZFS's `spa_get_hostid` finds it in userspace: `/etc/hostid`, a
/// native-endian u32; 0 (not written) when absent.
/// A space map object's entries (untrusted): its `space_map_phys_t` bonus says how many
/// bytes of entries its data holds (`smp_length`), which must be whole words inside the
/// object; offsets are relative to the metaslab, in units of the vdev's ashift.
fn read_space_map(
    mos: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    group: &MetaslabGroup,
    ms_index: usize,
) -> Result<(Vec<SpaceMapEntry>, u64), String> {
    let phys = space_map::SpaceMapPhys::decode(&mos.bonus(ctx, object).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let size = mos.extent_bytes(ctx, object).map_err(|e| e.to_string())?;
    if phys.length_bytes > size || phys.alloc_bytes < 0 {
        return Err(format!(
            "smp_length {} of an object of {size} bytes, smp_alloc {}",
            phys.length_bytes, phys.alloc_bytes
        ));
    }
    let length = usize::try_from(phys.length_bytes).map_err(|e| e.to_string())?;
    let bytes = mos
        .read(ctx, object, 0, length)
        .map_err(|e| e.to_string())?;
    let start_bytes = group
        .metaslabs
        .get(ms_index)
        .map(|m| m.start_bytes)
        .ok_or_else(|| format!("no metaslab {ms_index}"))?;
    let geometry = space_map::SpaceMapGeometry {
        start_bytes,
        shift: group.ashift,
    };
    let entries = space_map::decode_entries(&bytes, geometry).map_err(|e| e.to_string())?;
    Ok((entries, phys.alloc_bytes as u64))
}

pub fn system_hostid() -> u64 {
    match std::fs::read("/etc/hostid") {
        Ok(bytes) if bytes.len() >= 4 => {
            u64::from(u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        }
        _ => 0,
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_directory;
#[cfg(test)]
mod tests_txg;
#[cfg(test)]
mod tests_writeback;
