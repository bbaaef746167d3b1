//! The ZFS POSIX layer (OpenZFS `zfs_vfsops.c`, `zfs_dir.c`, `zfs_vnops.c`, `zfs_znode.c`):
//! files, directories, symlinks, hardlinks and xattrs as DMU objects of a filesystem's
//! object set.
//!
//! Object 1 of a ZPL object set is the master node, a ZAP naming the root directory
//! (`ROOT`), the delete queue (`DELETE_QUEUE`) and the layout version (`VERSION`). Every
//! other ZPL object carries its attributes in a znode (see `znode`) in its dnode's bonus.
//! A directory's data is a ZAP of name → (object | dirent type << 60), the encoding of
//! OpenZFS's `ZFS_DIRENT_MAKE`, so lookups are one hash probe however large the directory.
//! A regular file's data is its records (one small record for a small file, recordsize
//! records beyond); a symlink's data is its target; an object's xattrs are a ZAP of its own.
//!
//! Unlinking the last name of a file that is still open moves it to the delete queue
//! (in the same txg as the unlink); the mount reclaims it on last close, and opening the
//! filesystem after a crash drains whatever the queue still holds. Every operation here
//! changes the object set of the open txg only, so each is atomic with respect to a
//! power cut: after import, a rename has happened or it has not.
//!
//! `vnops`, `xattr` and `dir` are the changes themselves, on an object set and an `IoCtx`
//! in the open txg; `zfs_vnops` wraps each into a whole POSIX operation on a mounted
//! filesystem (read-only refusal, space admission, dirty accounting, intent-log commit per
//! `sync`), which is what the FUSE mount and the crash simulation call. Permission checks
//! belong to the kernel (`default_permissions`); this layer enforces only what the file
//! system itself must: types, emptiness, name rules, link limits, space.

pub mod diff;
pub mod dir;
pub mod openzfs;
pub mod snapshot;
pub mod vnops;
pub mod xattr;
pub mod zfs_log;
pub mod zfs_quota;
pub mod zfs_replay;
pub mod zfs_vnops;
pub mod znode;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_policy;
#[cfg(test)]
mod tests_quota;

use crate::dmu::{object_type, DmuError, IoCtx, ObjectSet};
use crate::types::ObjectId;
use crate::zap::{self, ZapError};
pub use znode::{FileKind, Timespec, ZnodePhys, BONUS_TYPE_ZNODE, ZNODE_SIZE_BYTES};

/// The master node is always object 1 of a ZPL object set.
pub const MASTER_NODE_OBJECT: ObjectId = ObjectId(1);
/// ZPL layout version written in the master node of a new filesystem (`ZPL_VERSION`).
pub const ZPL_VERSION: u64 = 5;
/// The ZPL version before system attributes (`ZPL_VERSION_USERSPACE`): znodes are
/// `znode_phys_t` bonuses (`DMU_OT_ZNODE`), the filesystems of pools before
/// `SPA_VERSION_SA` (24), zfs-fuse's among them. The only older version Zetta opens.
pub const ZPL_VERSION_ZNODE: u64 = 4;
/// `ZPL_VERSION_SA`: the first version whose znodes are system attributes.
pub const ZPL_VERSION_SA: u64 = 5;
/// The creation-time properties `zfs_create_fs` records in the master node, each 0 (the
/// defaults: normalization=none, utf8only=off, casesensitivity=sensitive).
pub const ZPL_CREATION_PROPS: [&str; 3] = ["normalization", "utf8only", "casesensitivity"];
/// Longest file name, in bytes (NAME_MAX).
pub const NAME_MAX_BYTES: usize = 255;
/// Most hard links to one object.
pub const LINK_MAX: u64 = u32::MAX as u64;

/// An error of the POSIX layer; `errno` gives the value the kernel should see.
#[derive(Debug)]
pub enum ZplError {
    NotFound,
    Exists,
    NotDir,
    IsDir,
    NotEmpty,
    NameTooLong,
    Invalid(String),
    /// A link count would overflow.
    TooManyLinks,
    /// An operation not allowed on this kind of object (hardlink to a directory).
    NotPermitted,
    /// An extended attribute that does not exist.
    NoData,
    /// A value larger than an xattr may be.
    TooBig,
    /// The result does not fit the caller's buffer.
    Range,
    /// A snapshot, or a filesystem mounted read-only.
    ReadOnly,
    /// The pool has no room (ENOSPC).
    NoSpace,
    /// A quota or refquota would be exceeded (EDQUOT).
    QuotaExceeded,
    /// The object set is not a ZPL filesystem (no master node).
    NotZpl,
    /// An operation this filesystem's on-disk version does not support here (EOPNOTSUPP).
    NotSupported(&'static str),
    /// Malformed on-disk state or an I/O failure underneath.
    Io(String),
}

impl ZplError {
    pub fn errno(&self) -> i32 {
        match self {
            ZplError::NotFound => libc_errno::ENOENT,
            ZplError::Exists => libc_errno::EEXIST,
            ZplError::NotDir => libc_errno::ENOTDIR,
            ZplError::IsDir => libc_errno::EISDIR,
            ZplError::NotEmpty => libc_errno::ENOTEMPTY,
            ZplError::NameTooLong => libc_errno::ENAMETOOLONG,
            ZplError::Invalid(_) => libc_errno::EINVAL,
            ZplError::TooManyLinks => libc_errno::EMLINK,
            ZplError::NotPermitted => libc_errno::EPERM,
            ZplError::NoData => libc_errno::ENODATA,
            ZplError::TooBig => libc_errno::E2BIG,
            ZplError::Range => libc_errno::ERANGE,
            ZplError::ReadOnly => libc_errno::EROFS,
            ZplError::NoSpace => libc_errno::ENOSPC,
            ZplError::QuotaExceeded => libc_errno::EDQUOT,
            ZplError::NotSupported(_) => libc_errno::EOPNOTSUPP,
            ZplError::NotZpl | ZplError::Io(_) => libc_errno::EIO,
        }
    }
}

/// Linux errno values (the mount runs on Linux; kept here so the engine needs no libc).
pub mod libc_errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EIO: i32 = 5;
    pub const E2BIG: i32 = 7;
    pub const EEXIST: i32 = 17;
    pub const EXDEV: i32 = 18;
    pub const ENOTDIR: i32 = 20;
    pub const EISDIR: i32 = 21;
    pub const EINVAL: i32 = 22;
    pub const EFBIG: i32 = 27;
    pub const ENOSPC: i32 = 28;
    pub const EROFS: i32 = 30;
    pub const EMLINK: i32 = 31;
    pub const ERANGE: i32 = 34;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ENOTEMPTY: i32 = 39;
    pub const ENODATA: i32 = 61;
    pub const EOPNOTSUPP: i32 = 95;
    pub const EDQUOT: i32 = 122;
}

impl std::fmt::Display for ZplError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZplError::Invalid(why) => write!(f, "invalid argument: {why}"),
            ZplError::Io(why) => write!(f, "I/O error: {why}"),
            ZplError::NotZpl => write!(f, "not a ZPL filesystem"),
            ZplError::NotSupported(why) => write!(f, "operation not supported: {why}"),
            other => write!(f, "{other:?}"),
        }
    }
}

impl std::error::Error for ZplError {}

impl From<DmuError> for ZplError {
    fn from(e: DmuError) -> Self {
        match e {
            DmuError::NoSuchObject(_) => ZplError::NotFound,
            // The pool ran out of room under a write that was admitted: ENOSPC, as OpenZFS
            // reports it, never EIO.
            DmuError::Zio(crate::zio::ZioError::NoSpace) => ZplError::NoSpace,
            DmuError::Invalid(why) if why.contains("address space") => ZplError::TooBig,
            other => ZplError::Io(other.to_string()),
        }
    }
}

impl From<crate::spa::SpaError> for ZplError {
    fn from(e: crate::spa::SpaError) -> Self {
        use crate::spa::SpaError;
        match e {
            SpaError::NoSpace => ZplError::NoSpace,
            SpaError::QuotaExceeded => ZplError::QuotaExceeded,
            other => ZplError::Io(other.to_string()),
        }
    }
}

impl From<ZapError> for ZplError {
    fn from(e: ZapError) -> Self {
        match e {
            ZapError::Dmu(e) => ZplError::from(e),
            ZapError::Exists => ZplError::Exists,
            ZapError::NotFound => ZplError::NotFound,
            ZapError::InvalidName(_) => ZplError::NameTooLong,
            ZapError::ValueTooLarge(_) => ZplError::TooBig,
            other => ZplError::Io(other.to_string()),
        }
    }
}

/// Who is asking: the owner of what they create.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Creds {
    pub uid: u32,
    pub gid: u32,
}

/// An object's attributes as `stat` reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub object: u64,
    pub znode: ZnodePhys,
    /// Bytes allocated for the object (all copies), plus its dirty data that has no block
    /// yet (what it will occupy once committed), for `st_blocks`.
    pub used_bytes: u64,
    /// `st_blksize`: the object's data block size, or the record size a plain file's one
    /// block still grows to (`vnops::reported_block_size`).
    pub block_size_bytes: u32,
}

impl Attr {
    pub fn kind(&self) -> FileKind {
        self.znode.kind().unwrap_or(FileKind::Regular)
    }
}

/// A mounted-or-not ZPL filesystem: where its root and delete queue are, and its ZPL
/// version (the master node's `VERSION`: 5, or 4 for `znode_phys_t` znodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zfsvfs {
    pub root: u64,
    pub delete_queue: u64,
    pub version: u64,
}

/// The ZPL version of a new filesystem in a pool of SPA version `spa_version` (OpenZFS
/// `zfs_zpl_version_map`): 5 from `SPA_VERSION_SA` (24) on, 4 before.
pub fn zpl_version_for_spa(spa_version: u64) -> u64 {
    if spa_version >= 24 {
        ZPL_VERSION_SA
    } else {
        ZPL_VERSION_ZNODE
    }
}

impl Zfsvfs {
    /// The bonus type of this filesystem's new znodes (`zfsvfs->z_use_sa`): SA from ZPL 5,
    /// `znode_phys_t` before.
    pub fn znode_bonus_type(&self) -> u8 {
        if self.version >= ZPL_VERSION_SA {
            znode::BONUS_TYPE_ZNODE
        } else {
            znode::BONUS_TYPE_ZNODE_V4
        }
    }

    /// Lays out an empty filesystem in a fresh object set (OpenZFS `zfs_create_fs`): the
    /// master node as object 1, the root directory (mode 0755, owned by root) and an empty
    /// delete queue; at ZPL 5 the SA master node, registry and layouts too. `version` is
    /// 5 or 4 (`zpl_version_for_spa`).
    pub fn create_fs(
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        version: u64,
    ) -> Result<Zfsvfs, ZplError> {
        if version != ZPL_VERSION_SA && version != ZPL_VERSION_ZNODE {
            return Err(ZplError::Invalid(format!(
                "ZPL version {version} is not written by this implementation"
            )));
        }
        if os.object_exists(ctx, MASTER_NODE_OBJECT)? {
            return Err(ZplError::Exists);
        }
        let master = zap::zap_create(os, ctx, object_type::MASTER_NODE)?;
        if master != MASTER_NODE_OBJECT {
            return Err(ZplError::Io(format!(
                "master node landed at object {master}, not 1"
            )));
        }
        // zfs_create_fs: the creation-time properties as `zfs create` passes them
        // (normalization=none, utf8only=off, casesensitivity=sensitive), the version, the
        // SA master node (object 2; none before ZPL 5), the delete queue (3), the root
        // directory (4); its first SA layout creates the REGISTRY (5) and LAYOUTS (6) ZAPs.
        for prop in ZPL_CREATION_PROPS {
            zap::zap_add(os, ctx, master, prop, &[0])?;
        }
        zap::zap_add(os, ctx, master, "VERSION", &[version])?;
        let vfs_shape = Zfsvfs {
            root: 0,
            delete_queue: 0,
            version,
        };
        let sa_master = if version >= ZPL_VERSION_SA {
            let sa_master = zap::zap_create(os, ctx, znode::OT_SA_MASTER_NODE)?;
            zap::zap_add(os, ctx, master, "SA_ATTRS", &[sa_master.0])?;
            Some(sa_master)
        } else {
            None
        };
        let delete_queue = zap::zap_create(os, ctx, znode::OT_UNLINKED_SET)?;
        zap::zap_add(os, ctx, master, "DELETE_QUEUE", &[delete_queue.0])?;
        let now = Timespec::now();
        // The root is its own parent; its number is known only once allocated.
        let root = vnops::allocate(
            os,
            ctx,
            vfs_shape.znode_bonus_type(),
            FileKind::Directory,
            0o755,
            Creds::default(),
            0,
            0,
            now,
        )?;
        if let Some(sa_master) = sa_master {
            create_sa_tables(os, ctx, sa_master)?;
        }
        let mut znode = vnops::get(os, ctx, root)?;
        znode.parent = root;
        vnops::put(os, ctx, root, &znode)?;
        zap::zap_add(os, ctx, master, "ROOT", &[root])?;
        Ok(Zfsvfs {
            root,
            delete_queue: delete_queue.0,
            version,
        })
    }

    /// Reads the master node; `NotZpl` when the object set has none.
    pub fn open(os: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<Zfsvfs, ZplError> {
        if !os.object_exists(ctx, MASTER_NODE_OBJECT)? {
            return Err(ZplError::NotZpl);
        }
        let word = |os: &mut ObjectSet, name: &str| -> Result<u64, ZplError> {
            zap::zap_lookup(os, ctx, MASTER_NODE_OBJECT, name)?
                .and_then(|v| v.first().copied())
                .ok_or_else(|| ZplError::Io(format!("master node has no {name}")))
        };
        let version = word(os, "VERSION")?;
        if version != ZPL_VERSION_SA && version != ZPL_VERSION_ZNODE {
            return Err(ZplError::Io(format!(
                "ZPL version {version} is not supported"
            )));
        }
        // ZPL 5 znodes are system attributes: such a filesystem has an SA master node.
        if version >= ZPL_VERSION_SA {
            word(os, "SA_ATTRS")?;
        }
        Ok(Zfsvfs {
            root: word(os, "ROOT")?,
            delete_queue: word(os, "DELETE_QUEUE")?,
            version,
        })
    }

    /// Opens the filesystem, laying it out first (at ZPL `version`) if the object set is
    /// still empty.
    pub fn open_or_create(
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        version: u64,
    ) -> Result<Zfsvfs, ZplError> {
        match Zfsvfs::open(os, ctx) {
            Err(ZplError::NotZpl) => Zfsvfs::create_fs(os, ctx, version),
            other => other,
        }
    }

    /// Objects on the delete queue (unlinked while open, or left by a crash).
    pub fn delete_queue_objects(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
    ) -> Result<Vec<u64>, ZplError> {
        let entries = zap::zap_list_all(os, ctx, ObjectId(self.delete_queue))?;
        Ok(entries
            .into_iter()
            .filter_map(|e| match e.value {
                zap::ZapValue::U64s(v) => v.first().copied(),
                zap::ZapValue::Bytes(_) => None,
            })
            .collect())
    }

    /// Frees everything on the delete queue (at mount: nothing can have it open).
    pub fn drain_delete_queue(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
    ) -> Result<usize, ZplError> {
        let objects = self.delete_queue_objects(os, ctx)?;
        for &object in &objects {
            self.reclaim(os, ctx, object)?;
        }
        Ok(objects.len())
    }
}

/// The SA master node's REGISTRY (every attribute of OpenZFS's `zfs_attr_table`) and
/// LAYOUTS (`ZETTA_LAYOUTS`) of a ZPL 5 filesystem.
fn create_sa_tables(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    sa_master: ObjectId,
) -> Result<(), ZplError> {
    let registry = zap::zap_create(os, ctx, znode::OT_SA_ATTR_REGISTRATION)?;
    for (attr, (name, length, bswap)) in openzfs::sa::ZPL_ATTR_TABLE.iter().enumerate() {
        let reg = openzfs::sa::SaAttrReg {
            name: name.to_string(),
            attr: attr as u16,
            length: *length,
            bswap: *bswap,
        };
        zap::zap_add(os, ctx, registry, name, &[reg.encode()])?;
    }
    zap::zap_add(os, ctx, sa_master, openzfs::sa::SA_REGISTRY, &[registry.0])?;
    let layouts = zap::zap_create(os, ctx, znode::OT_SA_ATTR_LAYOUTS)?;
    for (num, attrs) in znode::ZETTA_LAYOUTS {
        zap::zap_update_u16s(os, ctx, layouts, num.to_string(), attrs)?;
    }
    zap::zap_add(os, ctx, sa_master, openzfs::sa::SA_LAYOUTS, &[layouts.0])?;
    Ok(())
}

impl crate::spa::Spa {
    /// Runs `work` on the ZPL filesystem of the head dataset `name` (laying it out if the
    /// dataset has none yet).
    pub fn with_zpl<T>(
        &mut self,
        name: &str,
        work: impl FnOnce(&Zfsvfs, &mut ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, ZplError> {
        let zpl_version = zpl_version_for_spa(self.version());
        self.with_dataset(name, |os, ctx| {
            Ok(Zfsvfs::open_or_create(os, ctx, zpl_version).and_then(|vfs| work(&vfs, os, ctx)))
        })
        .map_err(ZplError::from)?
    }

    /// Runs `work` on the ZPL filesystem of the dataset with MOS object `dataset`, whose
    /// layout `vfs` the caller has already opened (the mount's fast path).
    pub fn with_zpl_object<T>(
        &mut self,
        dataset: u64,
        vfs: &Zfsvfs,
        work: impl FnOnce(&Zfsvfs, &mut ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, ZplError> {
        self.with_dataset_object(dataset, |os, ctx| Ok(work(vfs, os, ctx)))
            .map_err(ZplError::from)?
    }

    /// Whether the object set of the dataset with MOS object `dataset` is open in this
    /// pool, so `with_zpl_object_shared` can reach it (`with_zpl_object` opens it).
    pub fn dataset_is_open(&self, dataset: u64) -> bool {
        self.openzfs.is_none()
            && (dataset == self.dp.directory.root_dataset
                || self.dp.datasets.contains_key(&dataset))
    }

    /// `with_zpl_object` through shared access, for the read operations (lookup,
    /// getattr, read, readdir, readlink, getxattr, listxattr) of a mount holding the
    /// pool's lock shared: many run at once, none changes anything. The dataset must be
    /// open already (`dataset_is_open`); an unopened one is an I/O error here.
    pub fn with_zpl_object_shared<T>(
        &self,
        dataset: u64,
        vfs: &Zfsvfs,
        work: impl FnOnce(&Zfsvfs, &ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, ZplError> {
        let os = if !self.dataset_is_open(dataset) {
            None
        } else if dataset == self.dp.directory.root_dataset {
            Some(&self.dp.root_dataset)
        } else {
            self.dp.datasets.get(&dataset).map(|head| &head.objset)
        };
        let os = os.ok_or_else(|| ZplError::Io(format!("dataset {dataset} is not open")))?;
        let ctx = io_ctx!(self);
        work(vfs, os, &ctx)
    }

    /// `zfs diff from to`: what changed between snapshot `from` (`fs@a`) and `to`, a later
    /// snapshot of the same filesystem or the filesystem itself (as of its last commit).
    pub fn zpl_diff(&mut self, from: &str, to: &str) -> Result<Vec<diff::DiffEntry>, ZplError> {
        let io = |e: crate::spa::SpaError| ZplError::Io(e.to_string());
        let (fs, _) = from
            .split_once('@')
            .ok_or_else(|| ZplError::Invalid(format!("'{from}' is not a snapshot")))?;
        let snapshots = self.snapshots(fs).map_err(io)?;
        let find = |name: &str| snapshots.iter().find(|(n, _, _)| n == name).cloned();
        let (_, from_object, from_phys) = find(from).ok_or(ZplError::NotFound)?;
        let (to_object, to_phys) = if to.contains('@') {
            let (_, object, phys) = find(to).ok_or(ZplError::NotFound)?;
            if phys.creation_txg < from_phys.creation_txg {
                return Err(ZplError::Invalid(format!("'{to}' is older than '{from}'")));
            }
            (object, phys)
        } else {
            if to != fs {
                return Err(ZplError::Invalid(format!(
                    "'{to}' is not '{from}' or one of its snapshots"
                )));
            }
            let object = self
                .lookup_dataset(to)
                .map_err(io)?
                .ok_or(ZplError::NotFound)?;
            let mut phys = self.dataset_phys(object).map_err(io)?;
            if object == self.dp.directory.root_dataset {
                phys.bp = self.root_bp();
            }
            (object, phys)
        };
        let ctx = io_ctx!(self);
        let policy = crate::spa::dataset_policy(crate::dmu::default_data_props());
        let mut before = ObjectSet::open(&ctx, from_object, &from_phys.bp, policy)?;
        let mut after = ObjectSet::open(&ctx, to_object, &to_phys.bp, policy)?;
        diff::diff(
            &mut before,
            &mut after,
            &to_phys.bp,
            crate::types::Txg(from_phys.creation_txg),
            &ctx,
        )
    }

    /// The path of ZPL object `object` from the root of the filesystem or snapshot whose
    /// MOS object is `dataset` (`/dir/file`), as of the last commit: what `zpool status -v`
    /// names a damaged file by (OpenZFS `zfs_obj_to_path`). `None` when no directory names
    /// it (metadata, a freed or unlinked object) or its directories cannot be read.
    pub fn zpl_object_path(&mut self, dataset: u64, object: u64) -> Option<String> {
        if let Some(f) = self.openzfs.clone() {
            return f.object_path(dataset, object);
        }
        let mut phys = self.dataset_phys(dataset).ok()?;
        if dataset == self.dp.directory.root_dataset {
            phys.bp = self.root_bp();
        }
        let ctx = io_ctx!(self);
        let policy = crate::spa::dataset_policy(crate::dmu::default_data_props());
        let mut os = ObjectSet::open(&ctx, dataset, &phys.bp, policy).ok()?;
        let vfs = Zfsvfs::open(&mut os, &ctx).ok()?;
        let path = diff::path_of(&mut os, &ctx, &vfs, object)?;
        Some(if path.is_empty() {
            "/".to_string()
        } else {
            path
        })
    }

    /// The committed level-0 (data) block pointers of `object` in dataset `dataset`
    /// (`zinject -t data` turns them into the leaf ranges it damages). Zetta pools only.
    pub fn zpl_object_data_blocks(
        &mut self,
        dataset: u64,
        object: u64,
    ) -> Option<Vec<crate::zio::blkptr::BlockPointer>> {
        if self.openzfs.is_some() {
            return None;
        }
        let mut phys = self.dataset_phys(dataset).ok()?;
        if dataset == self.dp.directory.root_dataset {
            phys.bp = self.root_bp();
        }
        let ctx = io_ctx!(self);
        let mut blocks = Vec::new();
        ObjectSet::walk_blocks(
            &ctx,
            dataset,
            &phys.bp,
            &mut |bp, bookmark| {
                if bookmark.object == object && bookmark.level == 0 && !bp.is_hole() {
                    blocks.push(*bp);
                }
            },
            true,
        )
        .ok()?;
        Some(blocks)
    }
}
