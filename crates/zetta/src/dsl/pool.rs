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
//! Today the root dataset is still held apart from the other heads (`root_dataset`); the
//! issue's goal is one map with the root as an ordinary `HeadDataset`.

use super::synctask::SyncTasks;
use super::HeadDataset;
use crate::dmu::ObjectSet;
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
        }
    }
}
