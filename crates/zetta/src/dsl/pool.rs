//! The dataset layer's pool (OpenZFS `dsl_pool.c`): the MOS and every dataset held open.
//!
//! `Spa` keeps what a pool is made of — the vdev tree, the I/O pipeline and its
//! allocators, labels, uberblocks and the txg engine — and owns one `dsl::Pool`, which keeps
//! what the pool stores: the meta object set (MOS) and its object directory, the root
//! dataset's and every loaded head dataset's object set, the administrative changes queued
//! for the open txg (`synctask`), the history lines waiting for it, and the dataset layer's
//! uncommitted space claims (`space`). OpenZFS draws the same line between `spa_t` and
//! `dsl_pool_t` (`spa->spa_dsl_pool`, `dp->dp_meta_objset`).
//!
//! Invariants: the MOS is written last in a txg's sync (after every dataset's object set
//! and the sync tasks, which change the MOS), and `mos_bp` is the MOS root the last synced
//! uberblock points at until the next sync replaces it; `root_dataset_bp` and each head's
//! `phys.bp` are likewise what the MOS records for them as of the last sync. Locking: the
//! pool's lock (the daemon's `RwLock<Spa>`) covers this struct; readers reach its object
//! sets through `&` (their caches lock inside, see `dmu::objset`).
//!
//! A new pool also gets OpenZFS's hidden DSL dirs under the root dir (`dsl_pool_create`,
//! `dsl_pool_create_origin`), which `dsl_pool_open` requires before it opens anything:
//!
//! ```text
//! root dir (5) child map:  $MOS     a DSL dir (props ZAP), no dataset: USED is the MOS's
//!                                   own blocks (`Spa::mos_space_sync`), in the root's CHILD
//!                                   as OpenZFS keeps it
//!                          $FREE    the same, for blocks being freed (`dp_free_dir`): those
//!                                   on `free_bpobj`; Zetta frees at once, so 0
//!                          $ORIGIN  a DSL dir whose head dataset (a hole tree, an empty
//!                                   dead list) has one snapshot, $ORIGIN@$ORIGIN (created
//!                                   in the pool's first txg, next_snap = the head)
//! ```
//!
//! Every other dataset is a clone of `$ORIGIN@$ORIGIN` to OpenZFS (`link_clone`): its dir's
//! `dd_origin_obj` names it, and it is counted in the snapshot's `ds_num_children` and
//! listed in its `ds_next_clones_obj` and in the `$ORIGIN` dir's `dd_clones`; Zetta reads
//! that origin as none (`dsl::phys`).
//!
//! Names starting with `$` are never datasets to Zetta (`Spa::children` leaves them out;
//! dataset names cannot contain `$`). Every dataset points at its dead list, an empty bpobj
//! from creation (`dsl::create_dead_list`).
//!
//! Today the root dataset is still held apart from the other heads (`root_dataset`); the
//! issue's goal is one map with the root as an ordinary `HeadDataset`.

use super::openzfs::ot;
use super::phys::{
    fsid_guid_random, DslDatasetPhys, DslDirPhys, DSL_DATASET_BONUS_BYTES, DSL_DIR_BONUS_BYTES,
};
use super::synctask::SyncTasks;
use super::HeadDataset;
use crate::dmu::ObjectSet;
use crate::dmu::{object_type, DmuError, IoCtx};
use crate::types::{Guid, ObjectId, Txg};
use crate::zap;
use crate::zio::blkptr::BlockPointer;
use std::collections::BTreeMap;

pub struct Pool {
    /// The meta object set: object directory, history, error log, DSL dirs and datasets,
    /// space maps.
    pub(crate) mos: ObjectSet,
    /// The MOS root as of the last sync (the uberblock's `rootbp`).
    pub(crate) mos_bp: BlockPointer,
    /// Where the object directory's objects are (`spa::directory`; the config is rebuilt from
    /// the vdev tree at each sync).
    pub(crate) directory: crate::spa::directory::MosDirectory,
    /// The pool's root filesystem (`tank`).
    pub root_dataset: ObjectSet,
    pub(crate) root_dataset_bp: BlockPointer,
    /// Head datasets other than the root, loaded on first use (by MOS object number).
    pub(crate) datasets: BTreeMap<u64, HeadDataset>,
    /// `zpool history` command lines waiting for the open txg.
    pub(crate) history_pending: Vec<crate::spa::history::HistoryRecord>,
    /// Administrative changes queued for the open txg and their results (`synctask`).
    pub(crate) sync_tasks: SyncTasks,
    /// Uncommitted space claims (`space`).
    pub(crate) dsl_space: super::space::SpaceState,
    /// Each dir's refquota and refreservation (OpenZFS's in-memory `ds_quota` and
    /// `ds_reserved`): loaded from the props ZAPs at open (`Spa::load_ref_limits`), changed
    /// only by `Spa::set_space_limit`; a dir without an entry has neither.
    pub(crate) ref_limits: BTreeMap<u64, super::space::RefLimits>,
    /// The MOS's own births and frees not yet charged to `$MOS` (`dp_mos_used_delta` and
    /// its twins): applied at the start of the next sync pass, or of the next txg's.
    pub(crate) mos_space_delta: super::space::SpaceDelta,
    /// `dp_mos_dir`: `$MOS`'s dir (`Some(0)`: the pool has none), looked up at first use.
    pub(crate) mos_dir: Option<u64>,
}

impl Pool {
    /// A pool whose MOS and root dataset are `mos` and `root_dataset`, with nothing loaded
    /// or queued yet.
    pub(crate) fn new(
        mos: ObjectSet,
        mos_bp: BlockPointer,
        directory: crate::spa::directory::MosDirectory,
        root_dataset: ObjectSet,
    ) -> Pool {
        Pool {
            mos,
            mos_bp,
            directory,
            root_dataset,
            root_dataset_bp: BlockPointer::HOLE,
            datasets: BTreeMap::new(),
            history_pending: Vec::new(),
            sync_tasks: Default::default(),
            dsl_space: Default::default(),
            ref_limits: BTreeMap::new(),
            mos_space_delta: Default::default(),
            mos_dir: None,
        }
    }
}

/// `MOS_DIR_NAME`, `FREE_DIR_NAME`, `ORIGIN_DIR_NAME`.
pub const MOS_DIR_NAME: &str = "$MOS";
pub const FREE_DIR_NAME: &str = "$FREE";
pub const ORIGIN_DIR_NAME: &str = "$ORIGIN";

/// `$ORIGIN@$ORIGIN`'s `ds_creation_txg`: 1, below `TXG_INITIAL` (`dsl_dataset_snapshot_sync_impl`),
/// so that no block is born at or before it: the previous-snapshot txg of every dataset
/// without an origin of its own, the root's included, frees every block it writes.
pub const ORIGIN_CREATION_TXG: u64 = 1;

/// `ds_creation_txg` of a dataset created in txg `txg` (`dsl_dataset_create_sync_dd`: those
/// of the pool's first txg, `TXG_INITIAL`, say 1).
pub fn creation_txg(txg: Txg) -> u64 {
    if txg == crate::spa::TXG_INITIAL {
        ORIGIN_CREATION_TXG
    } else {
        txg.0
    }
}

/// A hidden DSL dir under `root_dir` (`dsl_dir_create_sync`: a props ZAP, named in the
/// parent's child map `child_map`).
fn create_special_dir(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    root_dir: u64,
    child_map: ObjectId,
    name: &str,
    head_dataset: u64,
    now_secs: u64,
) -> Result<u64, DmuError> {
    let dir = mos.create_object(
        ctx,
        object_type::DSL_DIR,
        512,
        object_type::DSL_DIR,
        DSL_DIR_BONUS_BYTES,
    )?;
    let props = zap::zap_create(mos, ctx, ot::DSL_PROPS).map_err(zap_dmu_error)?;
    let phys = DslDirPhys {
        head_dataset,
        parent_dir: root_dir,
        props_zap: props.0,
        creation_time: now_secs,
        no_origin_link: true,
        ..DslDirPhys::default()
    };
    mos.set_bonus(ctx, dir, &phys.encode(mos.dsl_origin))?;
    zap::zap_add(mos, ctx, child_map, name, &[dir.0]).map_err(zap_dmu_error)?;
    Ok(dir.0)
}

fn zap_dmu_error(e: zap::ZapError) -> DmuError {
    match e {
        zap::ZapError::Dmu(e) => e,
        other => DmuError::Corrupt(other.to_string()),
    }
}

/// `dsl_pool_create`'s `$MOS` and `$FREE` and `dsl_pool_create_origin`'s `$ORIGIN` with
/// its head and `$ORIGIN@$ORIGIN` (at MOS object 6: call this before anything else takes
/// it), in a new pool's first txg `txg`, and the root dir's props ZAP. Returns the origin
/// snapshot's object. The root dir must exist, without a child map yet.
pub fn create_special_dirs(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    root_dir: u64,
    txg: Txg,
    now_secs: u64,
) -> Result<u64, DmuError> {
    let snapshot = super::phys::ORIGIN_SNAPSHOT_OBJECT;
    mos.create_object_at(
        ctx,
        ObjectId(snapshot),
        object_type::DSL_DATASET,
        512,
        object_type::DSL_DATASET,
        DSL_DATASET_BONUS_BYTES,
    )?;
    let mut root = DslDirPhys::decode(&mos.bonus(ctx, ObjectId(root_dir))?, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(e.to_string()))?;
    debug_assert_eq!(root.child_dir_zap, 0, "special dirs come first");
    let child_map = zap::zap_create(mos, ctx, ot::DSL_DIR_CHILD_MAP).map_err(zap_dmu_error)?;
    root.child_dir_zap = child_map.0;
    // Every dir has its props ZAP from creation (`dsl_dir_create_sync`): OpenZFS's property
    // lookups walk up to the root dir and fail (EINVAL) on object 0.
    if root.props_zap == 0 {
        root.props_zap = zap::zap_create(mos, ctx, ot::DSL_PROPS)
            .map_err(zap_dmu_error)?
            .0;
    }
    mos.set_bonus(ctx, ObjectId(root_dir), &root.encode(mos.dsl_origin))?;
    let head = mos
        .create_object(
            ctx,
            object_type::DSL_DATASET,
            512,
            object_type::DSL_DATASET,
            DSL_DATASET_BONUS_BYTES,
        )?
        .0;
    let origin_dir = create_special_dir(
        mos,
        ctx,
        root_dir,
        child_map,
        ORIGIN_DIR_NAME,
        head,
        now_secs,
    )?;
    create_special_dir(mos, ctx, root_dir, child_map, MOS_DIR_NAME, 0, now_secs)?;
    // `$FREE` from SPA_VERSION_DEADLISTS (26) on (`dsl_pool_create`).
    if ctx.zio.spa_version() >= super::snapshot::SPA_VERSION_DEADLISTS {
        create_special_dir(mos, ctx, root_dir, child_map, FREE_DIR_NAME, 0, now_secs)?;
    }
    let snapnames = zap::zap_create(mos, ctx, ot::DSL_DS_SNAP_MAP).map_err(zap_dmu_error)?;
    zap::zap_add(mos, ctx, snapnames, ORIGIN_DIR_NAME, &[snapshot]).map_err(zap_dmu_error)?;
    let snapshot_phys = DslDatasetPhys {
        dir: origin_dir,
        next_snap: head,
        num_children: 1,
        creation_txg: ORIGIN_CREATION_TXG,
        creation_time: now_secs,
        guid: Guid::random().0,
        fsid_guid: fsid_guid_random(),
        flags: super::phys::DS_FLAG_UNIQUE_ACCURATE,
        deadlist: super::create_dead_list(mos, ctx)?,
        ..DslDatasetPhys::default()
    };
    // Its own prev_snap_obj stays 0 (`encode` would point it at itself).
    let raw = snapshot_phys
        .to_openzfs()
        .encode(crate::byteorder::ByteOrder::Little);
    mos.set_bonus(ctx, ObjectId(snapshot), &raw)?;
    // `encode` writes no previous snapshot as `$ORIGIN@$ORIGIN`: the head's.
    let head_phys = DslDatasetPhys {
        dir: origin_dir,
        prev_snap_txg: ORIGIN_CREATION_TXG,
        snapnames_zap: snapnames.0,
        creation_txg: creation_txg(txg),
        creation_time: now_secs,
        guid: Guid::random().0,
        fsid_guid: fsid_guid_random(),
        flags: super::phys::DS_FLAG_UNIQUE_ACCURATE,
        deadlist: super::create_dead_list(mos, ctx)?,
        ..DslDatasetPhys::default()
    };
    mos.set_bonus(ctx, ObjectId(head), &head_phys.encode(mos.dsl_origin))?;
    Ok(snapshot)
}

/// `dsl_dataset_create_sync_dd`'s clone links, made (`made`) or undone: the head dataset
/// `clone` is a clone of the snapshot `snapshot` — a real origin, or `$ORIGIN@$ORIGIN` for
/// every other dataset, the pool's root included, as OpenZFS links them. The snapshot's
/// `ds_num_children` (1 + its clones) follows, `clone` goes into (or out of) its
/// `ds_next_clones_obj` and its dir's `dd_clones` (each created at the first clone), named
/// by the object number in lowercase hex as `zap_add_int` names it. Zetta itself finds
/// clones by their dir's `dd_origin_obj`; these links are for OpenZFS's readers.
pub fn link_clone(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    snapshot: u64,
    clone: u64,
    made: bool,
) -> Result<(), DmuError> {
    let origin = mos.dsl_origin;
    if snapshot == 0 {
        // A pool from before `$ORIGIN` (version 11): nothing to link to.
        return Ok(());
    }
    let mut phys = DslDatasetPhys::decode(&mos.bonus(ctx, ObjectId(snapshot))?, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(format!("origin snapshot {snapshot}: {e}")))?;
    if !phys.is_snapshot() {
        return Err(DmuError::Corrupt(format!(
            "origin {snapshot} of dataset {clone} is no snapshot"
        )));
    }
    phys.num_children = if made {
        phys.num_children.saturating_add(1)
    } else {
        phys.num_children.saturating_sub(1).max(1)
    };
    phys.next_clones_zap = link_int(mos, ctx, phys.next_clones_zap, ot::NEXT_CLONES, clone, made)?;
    let raw = if snapshot == origin {
        // Its own prev_snap_obj stays 0 (`encode` would point it at itself).
        phys.to_openzfs()
            .encode(crate::byteorder::ByteOrder::Little)
            .to_vec()
    } else {
        phys.encode(mos.dsl_origin)
    };
    mos.set_bonus(ctx, ObjectId(snapshot), &raw)?;
    // `dd_clones` from SPA_VERSION_DIR_CLONES (26) on; an older pool has none.
    if ctx.zio.spa_version() < super::snapshot::SPA_VERSION_DEADLISTS {
        return Ok(());
    }
    let mut dir = DslDirPhys::decode(&mos.bonus(ctx, ObjectId(phys.dir))?, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(format!("dsl dir {}: {e}", phys.dir)))?;
    let clones_zap = link_int(mos, ctx, dir.clones_zap, ot::DSL_CLONES, clone, made)?;
    if clones_zap != dir.clones_zap {
        dir.clones_zap = clones_zap;
        mos.set_bonus(ctx, ObjectId(phys.dir), &dir.encode(mos.dsl_origin))?;
    }
    Ok(())
}

/// `zap_add_int` / `zap_remove_int` on the ZAP `zap` (created with `object_type` when 0
/// and an entry is added); returns the ZAP's object. Undoing a link that is not there
/// (a ZAP never made) is no error: the count above is what OpenZFS checks.
fn link_int(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    zap: u64,
    object_type: u8,
    value: u64,
    add: bool,
) -> Result<u64, DmuError> {
    let name = format!("{value:x}");
    if add {
        let zap = if zap == 0 {
            zap::zap_create(mos, ctx, object_type)
                .map_err(zap_dmu_error)?
                .0
        } else {
            zap
        };
        zap::zap_add(mos, ctx, ObjectId(zap), &name, &[value]).map_err(zap_dmu_error)?;
        Ok(zap)
    } else {
        if zap != 0 {
            match zap::zap_remove(mos, ctx, ObjectId(zap), &name) {
                Ok(()) | Err(zap::ZapError::NotFound) => {}
                Err(e) => return Err(zap_dmu_error(e)),
            }
        }
        Ok(zap)
    }
}

/// A snapshot moved from the dir `from` to the dir `to` (`zfs promote`): its clones, listed
/// in its `ds_next_clones_obj` `next_clones`, move from `from`'s `dd_clones` to `to`'s, as
/// `dsl_dataset_promote_sync` moves them.
pub fn move_dir_clones(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    next_clones: u64,
    from: u64,
    to: u64,
) -> Result<(), DmuError> {
    if next_clones == 0
        || from == to
        || ctx.zio.spa_version() < super::snapshot::SPA_VERSION_DEADLISTS
    {
        return Ok(());
    }
    let entries = zap::zap_list_all(mos, ctx, ObjectId(next_clones)).map_err(zap_dmu_error)?;
    let mut from_phys = DslDirPhys::decode(&mos.bonus(ctx, ObjectId(from))?, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(format!("dsl dir {from}: {e}")))?;
    let mut to_phys = DslDirPhys::decode(&mos.bonus(ctx, ObjectId(to))?, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(format!("dsl dir {to}: {e}")))?;
    for entry in entries {
        let zap::ZapValue::U64s(values) = entry.value else {
            return Err(DmuError::Corrupt(format!(
                "next clones {next_clones}: an entry is no integer"
            )));
        };
        let Some(&clone) = values.first() else {
            continue;
        };
        from_phys.clones_zap =
            link_int(mos, ctx, from_phys.clones_zap, ot::DSL_CLONES, clone, false)?;
        to_phys.clones_zap = link_int(mos, ctx, to_phys.clones_zap, ot::DSL_CLONES, clone, true)?;
    }
    mos.set_bonus(ctx, ObjectId(from), &from_phys.encode(mos.dsl_origin))?;
    mos.set_bonus(ctx, ObjectId(to), &to_phys.encode(mos.dsl_origin))?;
    Ok(())
}
