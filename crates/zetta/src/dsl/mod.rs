//! The dataset layer (OpenZFS `dsl_dir.c`, `dsl_dataset.c`, `dsl_prop.c`): named
//! filesystems in a hierarchy under the pool's root dataset, each with its own object set
//! and its locally set properties.
//!
//! MOS object 5 is the root DSL dir and object 4 its head dataset (the pool's root
//! filesystem, `tank`). A child `tank/a/b` is a DSL dir (entry `b` in `tank/a`'s child ZAP)
//! and a head dataset whose bonus holds the block pointer of its object set. Properties set
//! on a dir live in its props ZAP (name → value bytes); inheritance has one implementation,
//! `zetta_zprop::inherit`, which `zfs get` and this layer's I/O properties (`effective_io_props`)
//! both resolve through. Each dataset's object set is synced by the pool's txg (`spa`),
//! and its space figures follow what its syncs allocate and free (`space`).
//!
//! Filesystems here; their destroy in `destroy`; snapshots, clones, rollback and bookmarks
//! in `snapshot`, renames in `rename`, promote in `promote`, the receive swap in `recv`,
//! space accounting in `space`, AVAIL and the admission of writes in `space_avail`, its
//! from-scratch check in `space_audit`. Refusals are typed (`error::DslError`, returned as
//! `SpaError::Dsl`); their words are the CLI's.

mod bookmark;
pub mod deleg;
mod destroy;
mod error;
pub mod openzfs;
pub mod phys;
pub(crate) mod pool;
mod promote;
mod prop;
mod recv;
mod rename;
pub(crate) mod snapshot;
mod snapshot_prop;
pub mod space;
pub mod space_audit;
mod space_avail;
pub mod synctask;
pub use error::DslError;
pub use pool::Pool;
pub use prop::{
    effective_entries, is_local_entry, received_entries, INHERIT_SUFFIX, RECEIVED_SUFFIX,
};
pub use snapshot::{append_dead_list, create_bpobj, create_dead_list, Bookmark};
pub use space::{DatasetSpace, SpaceLimit};

use crate::dmu::{default_data_props, object_type, IoCtx, ObjectSet, ObjsetType};
use crate::spa::{dataset_policy, now_secs, Spa, SpaError};
use crate::types::{Guid, ObjectId};
use crate::zap::{self, ZapError, ZapValue};
use openzfs::ot;
use phys::{DslDatasetPhys, DslDirPhys};

/// Deepest dataset hierarchy accepted (OpenZFS zfs_max_dataset_nesting).
pub const NESTING_MAX: usize = 50;

/// A head dataset held open by the pool: its object set and its on-disk record.
pub struct HeadDataset {
    pub objset: ObjectSet,
    pub phys: DslDatasetPhys,
}

/// New writes of `objset` follow `props`; its snapshot boundary is kept.
fn apply_props(objset: &mut ObjectSet, props: crate::zio::WriteProps) {
    let prev_snap_txg = objset.policy.prev_snap_txg;
    objset.policy = dataset_policy(props);
    objset.policy.prev_snap_txg = prev_snap_txg;
}

pub(crate) fn zap_error(e: ZapError) -> SpaError {
    match e {
        ZapError::Dmu(e) => SpaError::from(e),
        ZapError::Corrupt { object, why } => SpaError::Corrupt(format!("ZAP {object}: {why}")),
        other => SpaError::Invalid(other.to_string()),
    }
}

fn exists(name: &str) -> SpaError {
    SpaError::Dsl(DslError::Exists {
        name: name.to_string(),
    })
}

/// ENOENT for a dataset name (`DslError::NoSuchDataset`).
pub(crate) fn no_such_dataset(name: &str) -> SpaError {
    SpaError::Dsl(DslError::NoSuchDataset {
        name: name.to_string(),
    })
}

impl Spa {
    fn read_dir(&self, dir: u64) -> Result<DslDirPhys, SpaError> {
        let ctx = io_ctx!(self);
        let bonus = self.dp.mos.bonus(&ctx, ObjectId(dir))?;
        DslDirPhys::decode(&bonus, self.dp.mos.dsl_origin)
            .map_err(|e| SpaError::Corrupt(e.to_string()))
    }

    fn write_dir(&mut self, dir: u64, phys: &DslDirPhys) -> Result<(), SpaError> {
        let ctx = io_ctx!(self);
        self.dp
            .mos
            .set_bonus(&ctx, ObjectId(dir), &phys.encode(self.dp.mos.dsl_origin))?;
        self.dsl_space_changed();
        Ok(())
    }

    pub(crate) fn read_dataset_phys(&self, dataset: u64) -> Result<DslDatasetPhys, SpaError> {
        let ctx = io_ctx!(self);
        let bonus = self.dp.mos.bonus(&ctx, ObjectId(dataset))?;
        DslDatasetPhys::decode(&bonus, self.dp.mos.dsl_origin)
            .map_err(|e| SpaError::Corrupt(e.to_string()))
    }

    /// Splits `pool/a/b` into components below the pool, checking the pool name.
    fn components<'n>(&self, name: &'n str) -> Result<Vec<&'n str>, SpaError> {
        let mut parts = name.split('/');
        if parts.next() != Some(self.name.as_str()) {
            return Err(SpaError::Dsl(DslError::NotInPool {
                name: name.to_string(),
                pool: self.name.clone(),
            }));
        }
        let rest: Vec<&str> = parts.collect();
        if rest.iter().any(|p| p.is_empty()) || rest.len() > NESTING_MAX {
            return Err(SpaError::Dsl(DslError::InvalidName {
                name: name.to_string(),
            }));
        }
        Ok(rest)
    }

    fn child_dir(&self, dir: u64, component: &str) -> Result<Option<u64>, SpaError> {
        let phys = self.read_dir(dir)?;
        if phys.child_dir_zap == 0 {
            return Ok(None);
        }
        let ctx = io_ctx!(self);
        let found = zap::zap_lookup(&self.dp.mos, &ctx, ObjectId(phys.child_dir_zap), component)
            .map_err(zap_error)?;
        Ok(found.and_then(|v| v.first().copied()))
    }

    /// The DSL dir of a dataset name, if it exists.
    pub fn lookup_dir(&self, name: &str) -> Result<Option<u64>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.dir_object(name));
        }
        let mut dir = self.dp.directory.root_dir;
        for component in self.components(name)? {
            match self.child_dir(dir, component)? {
                Some(child) => dir = child,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    /// The head dataset object of a dataset name.
    pub fn lookup_dataset(&self, name: &str) -> Result<Option<u64>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.lookup_dataset(name));
        }
        match self.lookup_dir(name)? {
            Some(dir) => Ok(Some(self.read_dir(dir)?.head_dataset)),
            None => Ok(None),
        }
    }

    /// `zfs create`: a new, empty filesystem under an existing parent.
    pub fn create_filesystem(&mut self, name: &str) -> Result<u64, SpaError> {
        let dataset = self.create_dataset(name, None, ObjsetType::Filesystem)?;
        // An empty ZPL filesystem (master node, root directory) in the same txg, at the
        // ZPL version the pool's version allows (4 before SPA version 24).
        let zpl_version = crate::zpl::zpl_version_for_spa(self.version());
        self.with_dataset(name, |os, ctx| {
            crate::zpl::Zfsvfs::create_fs(os, ctx, zpl_version)
                .map(|_| ())
                .map_err(|e| crate::dmu::DmuError::Invalid(e.to_string()))
        })?;
        Ok(dataset)
    }

    /// `zfs clone fs@snap name`: a new filesystem starting as the snapshot's tree. It shares
    /// every block born up to the snapshot (those it releases go to its own dead list: the
    /// origin still holds them) and the origin cannot be destroyed while it exists.
    pub fn clone_snapshot(&mut self, origin: &str, name: &str) -> Result<u64, SpaError> {
        let fs = origin.split('@').next().unwrap_or(origin);
        let snapshot = self
            .snapshots(fs)?
            .into_iter()
            .find(|(n, _, _)| n == origin)
            .ok_or_else(|| no_such_dataset(origin))?;
        self.create_dataset(name, Some((snapshot.1, snapshot.2)), ObjsetType::Filesystem)
    }

    /// A new head dataset with an empty object set of `os_type` (`origin`: a clone, whose
    /// object set is the snapshot's and keeps the snapshot's type).
    pub(crate) fn create_dataset(
        &mut self,
        name: &str,
        origin: Option<(u64, DslDatasetPhys)>,
        os_type: ObjsetType,
    ) -> Result<u64, SpaError> {
        let components = self.components(name)?;
        let Some((leaf, parents)) = components.split_last() else {
            return Err(exists(name));
        };
        let parent_name = name.rsplit_once('/').map(|(p, _)| p).unwrap_or(name);
        let parent = self.lookup_dir(parent_name)?.ok_or_else(|| {
            SpaError::Dsl(DslError::NoParent {
                name: name.to_string(),
            })
        })?;
        debug_assert_eq!(parents.len() + 1, components.len());
        if self.child_dir(parent, leaf)?.is_some() {
            return Err(exists(name));
        }
        let txg = self.open_txg();
        let ctx = io_ctx!(self);
        let dir = self.dp.mos.create_object(
            &ctx,
            object_type::DSL_DIR,
            512,
            object_type::DSL_DIR,
            phys::DSL_DIR_BONUS_BYTES,
        )?;
        let dataset = self.dp.mos.create_object(
            &ctx,
            object_type::DSL_DATASET,
            512,
            object_type::DSL_DATASET,
            phys::DSL_DATASET_BONUS_BYTES,
        )?;
        let props_zap =
            zap::zap_create(&mut self.dp.mos, &ctx, ot::DSL_PROPS).map_err(zap_error)?;
        let mut parent_phys = self.read_dir(parent)?;
        let ctx = io_ctx!(self);
        if parent_phys.child_dir_zap == 0 {
            parent_phys.child_dir_zap =
                zap::zap_create(&mut self.dp.mos, &ctx, ot::DSL_DIR_CHILD_MAP)
                    .map_err(zap_error)?
                    .0;
        }
        zap::zap_add(
            &mut self.dp.mos,
            &ctx,
            ObjectId(parent_phys.child_dir_zap),
            leaf,
            &[dir.0],
        )
        .map_err(zap_error)?;
        self.write_dir(parent, &parent_phys)?;
        self.write_dir(
            dir.0,
            &DslDirPhys {
                head_dataset: dataset.0,
                parent_dir: parent,
                props_zap: props_zap.0,
                creation_time: now_secs(),
                origin_snapshot: origin.as_ref().map_or(0, |(object, _)| *object),
                ..DslDirPhys::default()
            },
        )?;
        let deadlist = create_dead_list(&mut self.dp.mos, &io_ctx!(self))?;
        // A dataset with no origin of its own is a clone of `$ORIGIN@$ORIGIN` to OpenZFS
        // (`dsl_dataset_create_sync` takes `dp_origin_snap`), so its `ds_prev_snap_txg`
        // is that snapshot's creation txg (1 in the pools OpenZFS and Zetta create); a pool
        // from before `$ORIGIN` (version 11) keeps 0.
        let origin_snapshot_txg = match self.dp.mos.dsl_origin {
            0 => 0,
            object => self.read_dataset_phys(object)?.creation_txg,
        };
        let mut phys = DslDatasetPhys {
            dir: dir.0,
            prev_snap_txg: origin_snapshot_txg,
            creation_txg: txg.0,
            creation_time: now_secs(),
            guid: Guid::random().0,
            fsid_guid: phys::fsid_guid_random(),
            deadlist,
            flags: phys::DS_FLAG_UNIQUE_ACCURATE,
            ..DslDatasetPhys::default()
        };
        let ctx = io_ctx!(self);
        let objset = match &origin {
            None => {
                let mut objset =
                    ObjectSet::create(dataset.0, os_type, dataset_policy(default_data_props()));
                objset.policy.prev_snap_txg = crate::types::Txg(origin_snapshot_txg);
                if self
                    .dp
                    .directory
                    .features
                    .is_enabled(crate::spa::zfeature::USEROBJ_ACCOUNTING_GUID)
                {
                    objset.enable_userobj_accounting();
                }
                objset
            }
            Some((object, snapshot)) => {
                phys.bp = snapshot.bp;
                phys.prev_snap = *object;
                phys.prev_snap_txg = snapshot.creation_txg;
                phys.referenced_bytes = snapshot.referenced_bytes;
                phys.compressed_bytes = snapshot.compressed_bytes;
                phys.uncompressed_bytes = snapshot.uncompressed_bytes;
                let mut objset = ObjectSet::open(
                    &ctx,
                    dataset.0,
                    &snapshot.bp,
                    dataset_policy(default_data_props()),
                )?;
                objset.policy.prev_snap_txg = crate::types::Txg(snapshot.creation_txg);
                crate::zil::forget(&mut objset);
                objset
            }
        };
        self.dp
            .mos
            .set_bonus(&ctx, dataset, &phys.encode(self.dp.mos.dsl_origin))?;
        self.dp
            .datasets
            .insert(dataset.0, HeadDataset { objset, phys });
        let origin_object = origin.as_ref().map_or(self.dp.mos.dsl_origin, |o| o.0);
        self.link_clone(origin_object, dataset.0, true)?;
        if let Some((origin, _)) = &origin {
            // A clone carries its origin's per-dataset features
            // (`dsl_dataset_create_sync_dd`).
            let ctx = io_ctx!(self);
            let features =
                crate::spa::zfeature::FeatureState::dataset_features(&self.dp.mos, &ctx, *origin)?;
            self.dp.directory.features.activate_dataset(
                &mut self.dp.mos,
                &ctx,
                dataset.0,
                features,
            )?;
        }
        self.refresh_io_props()?;
        Ok(dataset.0)
    }

    /// The head `clone` of `snapshot` (a real origin, or `$ORIGIN@$ORIGIN` for a dataset
    /// that is no clone) was made (`made`) or destroyed: OpenZFS's links follow
    /// (`dsl::pool::link_clone`: `ds_num_children`, `ds_next_clones_obj`, `dd_clones`).
    pub(super) fn link_clone(
        &mut self,
        snapshot: u64,
        clone: u64,
        made: bool,
    ) -> Result<(), SpaError> {
        let ctx = io_ctx!(self);
        pool::link_clone(&mut self.dp.mos, &ctx, snapshot, clone, made)?;
        Ok(())
    }

    /// Filesystems cloned from the snapshot object `snapshot`.
    pub fn dependent_clones(&mut self, snapshot: u64) -> Result<Vec<String>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.dependent_clones(snapshot));
        }
        let mut out = Vec::new();
        for name in self.dataset_names()? {
            if let Some(dir) = self.lookup_dir(&name)? {
                if self.read_dir(dir)?.origin_snapshot == snapshot {
                    out.push(name);
                }
            }
        }
        Ok(out)
    }

    /// The origin snapshot's name of a clone (`origin` property), if it is one.
    pub fn origin_of(&mut self, name: &str) -> Result<Option<String>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.origin_of(name));
        }
        let Some(dir) = self.lookup_dir(name)? else {
            return Ok(None);
        };
        let origin = self.read_dir(dir)?.origin_snapshot;
        if origin == 0 {
            return Ok(None);
        }
        for fs in self.dataset_names()? {
            if let Some((snapshot, _, _)) = self
                .snapshots(&fs)?
                .into_iter()
                .find(|(_, object, _)| *object == origin)
            {
                return Ok(Some(snapshot));
            }
        }
        Ok(None)
    }

    /// Names of the child datasets of a dir, sorted.
    fn children(&mut self, dir: u64) -> Result<Vec<(String, u64)>, SpaError> {
        let phys = self.read_dir(dir)?;
        if phys.child_dir_zap == 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let ctx = io_ctx!(self);
        let entries = zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(phys.child_dir_zap))
            .map_err(zap_error)?;
        for entry in entries {
            // OpenZFS's hidden dirs ($MOS, $FREE, $ORIGIN: `dsl::pool`) are no datasets.
            if entry.name.first() == Some(&b'$') {
                continue;
            }
            if let ZapValue::U64s(values) = entry.value {
                if let Some(&child) = values.first() {
                    out.push((String::from_utf8_lossy(&entry.name).into_owned(), child));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Every filesystem of the pool, parents before children, siblings by name.
    pub fn dataset_names(&mut self) -> Result<Vec<String>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.dataset_names());
        }
        let mut out = Vec::new();
        let mut stack = vec![(self.name.clone(), self.dp.directory.root_dir, 0usize)];
        while let Some((name, dir, depth)) = stack.pop() {
            if depth > NESTING_MAX {
                return Err(SpaError::Corrupt(format!(
                    "dataset tree deeper than {NESTING_MAX} at {name}"
                )));
            }
            out.push(name.clone());
            for (child, child_dir) in self.children(dir)?.into_iter().rev() {
                stack.push((format!("{name}/{child}"), child_dir, depth + 1));
            }
        }
        Ok(out)
    }

    /// Frees the blocks of the tree under `bp` (an object set of `dataset`) born after
    /// `txg`: what a head wrote since its previous snapshot; older blocks are the snapshot's.
    /// Returns their space (the caller accounts for it).
    pub(super) fn free_blocks_born_after(
        &mut self,
        dataset: u64,
        bp: &crate::zio::blkptr::BlockPointer,
        txg: u64,
    ) -> Result<crate::dmu::BlockSpace, SpaError> {
        if bp.is_hole() || bp.birth_txg.0 <= txg {
            return Ok(crate::dmu::BlockSpace::ZERO);
        }
        let mut blocks = Vec::new();
        let ctx = io_ctx!(self);
        ObjectSet::walk_blocks(
            &ctx,
            dataset,
            bp,
            &mut |child, _| {
                if child.birth_txg.0 > txg {
                    blocks.push(*child);
                }
            },
            false,
        )?;
        let open_txg = self.open_txg();
        for block in &blocks {
            self.zio.free_block(block, true, open_txg);
        }
        Ok(crate::dmu::BlockSpace::of_all(&self.root, &blocks))
    }

    /// Removes a filesystem's records (its name in the parent, its ZAPs, its dir and head
    /// dataset objects), leaving its blocks alone: the caller freed them or handed them on.
    fn unlink_dataset(&mut self, name: &str, dir: u64) -> Result<(), SpaError> {
        let phys = self.read_dir(dir)?;
        let origin_object = match phys.origin_snapshot {
            0 => self.dp.mos.dsl_origin,
            object => object,
        };
        self.link_clone(origin_object, phys.head_dataset, false)?;
        let parent = self.read_dir(phys.parent_dir)?;
        let leaf = name.rsplit('/').next().unwrap_or(name);
        let ctx = io_ctx!(self);
        zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(parent.child_dir_zap), leaf)
            .map_err(zap_error)?;
        for zap_object in [phys.props_zap, phys.child_dir_zap] {
            if zap_object != 0 {
                zap::zap_destroy(&mut self.dp.mos, &ctx, ObjectId(zap_object))
                    .map_err(zap_error)?;
            }
        }
        // Its delegations (`zfs allow`) go with it (`dsl_deleg_destroy`).
        self.deleg_destroy(phys.deleg_zap)?;
        // Its snapshot names ZAP (empty: its snapshots went first), which zdb would
        // otherwise report as a leaked MOS object (`dsl_destroy_head_sync_impl`).
        let head = self.read_dataset_phys(phys.head_dataset)?;
        // Its bookmarks, and their reference on feature `bookmarks`.
        self.bookmarks_object_release(phys.head_dataset, true)?;
        let ctx = io_ctx!(self);
        if head.snapnames_zap != 0 {
            zap::zap_destroy(&mut self.dp.mos, &ctx, ObjectId(head.snapnames_zap))
                .map_err(zap_error)?;
        }
        self.dp
            .directory
            .features
            .deactivate_dataset(&mut self.dp.mos, &ctx, phys.head_dataset)?;
        self.dp.mos.free_object(&ctx, ObjectId(phys.head_dataset))?;
        self.dp.mos.free_object(&ctx, ObjectId(dir))?;
        Ok(())
    }

    /// The I/O properties in force for a dir — `recordsize`, `compression`, `checksum`,
    /// `copies` — resolved by `zetta_zprop::inherit` (the one inheritance implementation,
    /// the same `zfs get` prints) over the props ZAPs of the dir and its ancestors
    /// (`prop::DirChain`). A stored value the engine cannot use (written by a newer
    /// version) leaves the default in force.
    pub fn effective_io_props(
        &mut self,
        dir: u64,
    ) -> Result<(crate::zio::WriteProps, u32), SpaError> {
        use zetta_zprop::ZfsProp;
        let chain = self.dir_chain_props(dir, prop::IO_PROPS)?;
        let value = |prop: ZfsProp| chain.resolve(prop);
        let mut props = default_data_props();
        let mut record_size = 128u32 << 10;
        if let Some(size) = value(ZfsProp::Recordsize).and_then(|v| v.parse::<u32>().ok()) {
            if size.is_power_of_two() && (512..=16 << 20).contains(&size) {
                record_size = size;
            }
        }
        if let Some(compression) = value(ZfsProp::Compression)
            .and_then(|v| zetta_zcommon::compress::Compression::parse_property(&v).ok())
        {
            props.compression = compression;
        }
        if let Some(checksum) = value(ZfsProp::Checksum)
            .and_then(|v| zetta_zcommon::checksum::ChecksumKind::parse_property(&v).ok())
        {
            props.checksum = checksum;
        }
        if let Some(copies) = value(ZfsProp::Copies).and_then(|v| v.parse::<u8>().ok()) {
            props.copies = copies.clamp(1, 3);
        }
        Ok((props, record_size))
    }

    /// Applies the properties in force to every loaded object set (after `zfs set`,
    /// `inherit`, or opening a dataset): new writes use them.
    pub fn refresh_io_props(&mut self) -> Result<(), SpaError> {
        let (root_props, root_record) = self.effective_io_props(self.dp.directory.root_dir)?;
        apply_props(&mut self.dp.root_dataset, root_props);
        self.dp.root_dataset.set_block_size_max(root_record);
        let loaded: Vec<u64> = self.dp.datasets.keys().copied().collect();
        for dataset in loaded {
            let dir = self.dp.datasets[&dataset].phys.dir;
            let (props, record) = self.effective_io_props(dir)?;
            if let Some(head) = self.dp.datasets.get_mut(&dataset) {
                apply_props(&mut head.objset, props);
                head.objset.set_block_size_max(record);
            }
        }
        Ok(())
    }

    /// Loads a head dataset's object set into the pool's table (no-op when loaded).
    pub(crate) fn open_dataset(&mut self, dataset: u64) -> Result<(), SpaError> {
        if dataset == self.dp.directory.root_dataset || self.dp.datasets.contains_key(&dataset) {
            return Ok(());
        }
        let phys = self.read_dataset_phys(dataset)?;
        let policy = dataset_policy(default_data_props());
        let objset = if phys.bp.is_hole() {
            ObjectSet::create(dataset, ObjsetType::Filesystem, policy)
        } else {
            let ctx = io_ctx!(self);
            ObjectSet::open(&ctx, dataset, &phys.bp, policy)?
        };
        let dir = phys.dir;
        let prev_snap_txg = phys.prev_snap_txg;
        self.dp
            .datasets
            .insert(dataset, HeadDataset { objset, phys });
        let (props, record) = self.effective_io_props(dir)?;
        if let Some(head) = self.dp.datasets.get_mut(&dataset) {
            apply_props(&mut head.objset, props);
            head.objset.policy.prev_snap_txg = crate::types::Txg(prev_snap_txg);
            head.objset.set_block_size_max(record);
        }
        Ok(())
    }

    /// The object set of a named filesystem, for object-level access.
    pub fn with_dataset<T>(
        &mut self,
        name: &str,
        work: impl FnOnce(&mut ObjectSet, &IoCtx<'_>) -> Result<T, crate::dmu::DmuError>,
    ) -> Result<T, SpaError> {
        let dataset = self
            .lookup_dataset(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        self.with_dataset_object(dataset, work)
    }

    /// `with_dataset` by the dataset's MOS object (stable across renames; no name walk).
    pub fn with_dataset_object<T>(
        &mut self,
        dataset: u64,
        work: impl FnOnce(&mut ObjectSet, &IoCtx<'_>) -> Result<T, crate::dmu::DmuError>,
    ) -> Result<T, SpaError> {
        if self.openzfs.is_some() {
            // A foreign pool's object sets are read through the OpenZFS codecs (its
            // mounts, `zpool scrub`), not as Zetta object sets.
            return Err(SpaError::Dsl(DslError::ForeignPool));
        }
        if dataset == self.dp.directory.root_dataset {
            let ctx = io_ctx!(self);
            return Ok(work(&mut self.dp.root_dataset, &ctx)?);
        }
        self.open_dataset(dataset)?;
        let ctx = io_ctx!(self);
        let head = self
            .dp
            .datasets
            .get_mut(&dataset)
            .ok_or_else(|| SpaError::Corrupt(format!("dataset {dataset} vanished")))?;
        Ok(work(&mut head.objset, &ctx)?)
    }

    /// A dataset's on-disk record (creation time and txg, guid, REFER).
    pub fn dataset_phys(&mut self, dataset: u64) -> Result<DslDatasetPhys, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return f
                .view
                .dataset_phys(dataset)
                .ok_or_else(|| SpaError::Corrupt(format!("dataset {dataset} does not exist")));
        }
        self.read_dataset_phys(dataset)
    }

    /// Bytes a filesystem's own blocks take (REFER), as of the last commit.
    pub fn dataset_referenced_bytes(&mut self, name: &str) -> Result<u64, SpaError> {
        Ok(self.dataset_space(name)?.referenced_bytes)
    }

    /// Bytes a filesystem and its descendants take (USED = USEDDS + USEDSNAP +
    /// USEDREFRESERV + USEDCHILD), as of the last commit.
    pub fn dataset_used_bytes(&mut self, name: &str) -> Result<u64, SpaError> {
        Ok(self.dir_used_breakdown(name)?.0)
    }

    /// `written` of a filesystem (`fs`) or snapshot (`fs@snap`): what its tree took on
    /// since the snapshot before it — the blocks born after that snapshot's txg, found by
    /// walking only what changed.
    pub fn written_bytes(&mut self, name: &str) -> Result<u64, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return f
                .view
                .written_bytes(name)
                .ok_or_else(|| no_such_dataset(name));
        }
        let (phys, dataset) = match name.split_once('@') {
            Some((fs, _)) => {
                let (_, object, phys) = self
                    .snapshots(fs)?
                    .into_iter()
                    .find(|(n, _, _)| n == name)
                    .ok_or_else(|| no_such_dataset(name))?;
                (phys, object)
            }
            None => {
                let dataset = self
                    .lookup_dataset(name)?
                    .ok_or_else(|| no_such_dataset(name))?;
                let mut phys = self.read_dataset_phys(dataset)?;
                if dataset == self.dp.directory.root_dataset {
                    phys.bp = self.root_bp();
                }
                (phys, dataset)
            }
        };
        let ctx = io_ctx!(self);
        let mut written = 0u64;
        ObjectSet::walk_blocks_born_after(
            &ctx,
            dataset,
            &phys.bp,
            crate::types::Txg(phys.prev_snap_txg),
            &mut |bp, _| written += ctx.root.dsize_bytes(bp),
            false,
        )?;
        Ok(written)
    }

    /// USEDDS: what the head's tree takes that no origin holds — REFER for a filesystem,
    /// only the blocks born since its origin for a clone (OpenZFS charges a clone's dir
    /// only for what it writes).
    pub fn used_by_dataset_bytes(&mut self, name: &str) -> Result<u64, SpaError> {
        Ok(self.dataset_space(name)?.used_by_dataset_bytes)
    }

    /// Sets a property locally on a filesystem (the value is stored as given).
    pub fn set_local_prop(&mut self, name: &str, prop: &str, value: &str) -> Result<(), SpaError> {
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        let props = self.props_zap(dir)?;
        let ctx = io_ctx!(self);
        prop::write_entry(&mut self.dp.mos, &ctx, props, prop, value)?;
        // quota, reservation, refquota, refreservation: the dir record and the accounting
        // follow (the caller checked the value with `check_space_limit`).
        if let Some(limit) = SpaceLimit::from_prop(prop) {
            self.set_space_limit(dir, limit, value.parse().unwrap_or(0))?;
        }
        // compression, checksum, copies, recordsize: new writes follow at once.
        self.refresh_io_props()
    }

    /// Removes a local setting (`zfs inherit`); absent is fine.
    pub fn clear_local_prop(&mut self, name: &str, prop: &str) -> Result<(), SpaError> {
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        let props = self.props_zap(dir)?;
        let ctx = io_ctx!(self);
        match zap::zap_remove(&mut self.dp.mos, &ctx, ObjectId(props), prop) {
            Ok(()) | Err(ZapError::NotFound) => {
                // A limit falls back to its received value, if any (`apply_space_limits`).
                let base = prop
                    .strip_suffix(RECEIVED_SUFFIX)
                    .or_else(|| prop.strip_suffix(INHERIT_SUFFIX))
                    .unwrap_or(prop);
                if SpaceLimit::from_prop(base).is_some() {
                    self.apply_space_limits(name)?;
                }
                self.refresh_io_props()
            }
            Err(e) => Err(zap_error(e)),
        }
    }

    /// The properties set locally on a filesystem, by name.
    pub fn local_props(&mut self, name: &str) -> Result<Vec<(String, String)>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            if f.view.lookup_dataset(name).is_none() {
                return Err(no_such_dataset(name));
            }
            let mut props = f.view.local_props(name);
            props.extend(f.zpl_props.get(name).cloned().unwrap_or_default());
            props.sort();
            return Ok(props);
        }
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        let props = self.props_zap(dir)?;
        let mut out = Vec::new();
        let ctx = io_ctx!(self);
        let entries = zap::zap_list_all(&self.dp.mos, &ctx, ObjectId(props)).map_err(zap_error)?;
        for entry in entries {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            let text = prop::decode_entry(&name, &entry.value).ok_or_else(|| {
                SpaError::Corrupt(format!("props ZAP {props}: entry {name} is not a value"))
            })?;
            out.push((name, text));
        }
        if let Some(version) = self.old_zpl_version(name)? {
            out.push(("version".to_string(), version.to_string()));
        }
        out.sort();
        Ok(out)
    }

    /// The ZPL version of filesystem `name` when it is below 5 (`zfs get version`, whose
    /// default is 5): only a pool created before `SPA_VERSION_SA` (24) can hold one, so
    /// other pools never open the dataset for it.
    fn old_zpl_version(&mut self, name: &str) -> Result<Option<u64>, SpaError> {
        let ctx = io_ctx!(self);
        let creation_version = zap::zap_lookup(
            &self.dp.mos,
            &ctx,
            ObjectId(openzfs::objdir::DIRECTORY_OBJECT),
            "creation_version",
        )
        .map_err(zap_error)?
        .and_then(|v| v.first().copied())
        // A pool zfs-fuse created has no `creation_version` (it came with version 5000's
        // `spa_create`): its filesystems may be ZPL 4 whatever the pool's version now.
        .unwrap_or(0);
        if creation_version >= 24 {
            return Ok(None);
        }
        let version = self.with_dataset(name, |os, ctx| {
            Ok(crate::zpl::Zfsvfs::open(os, ctx)
                .ok()
                .map(|vfs| vfs.version))
        })?;
        Ok(version.filter(|v| *v < crate::zpl::ZPL_VERSION_SA))
    }

    /// A dir's props ZAP, created on first use.
    fn props_zap(&mut self, dir: u64) -> Result<u64, SpaError> {
        let mut phys = self.read_dir(dir)?;
        if phys.props_zap == 0 {
            let ctx = io_ctx!(self);
            phys.props_zap = zap::zap_create(&mut self.dp.mos, &ctx, ot::DSL_PROPS)
                .map_err(zap_error)?
                .0;
            self.write_dir(dir, &phys)?;
        }
        Ok(phys.props_zap)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_destroy;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_ondisk;
#[cfg(test)]
mod tests_promote;
#[cfg(test)]
mod tests_space;
#[cfg(test)]
mod tests_space_random;
#[cfg(test)]
mod tests_synctask;
