//! A real OpenZFS pool opened read-only: its best uberblock, its MOS, its object directory
//! and dataset tree (OpenZFS `spa_load` up to `dsl_pool_open`, read-only; `zdb`'s view).
//!
//! Theory. The devices found by `discover` are opened read-only (nothing here writes); the
//! best uberblock over every label of every device names the MOS. The MOS object directory
//! (object 1, a ZAP) names the pool config (a packed XDR nvlist object), the active
//! `features_for_read` (name → reference count), the checksum salt and the root DSL dir.
//! The dataset tree is the DSL dirs' child ZAPs; each dir's head dataset holds the block
//! pointer of its object set, and its snapshots are its `snapnames` ZAP.
//!
//! What refuses: a version OpenZFS 2.3 would not import (`feature::version_is_supported`),
//! an active feature needed for reading that Zetta lacks (listed, in OpenZFS's words), and
//! encrypted datasets (listed, never opened: their keys are not here).
//!
//! This is the composition of the OpenZFS codecs, checked end to end against `zdb` and
//! zfs-fuse by `crates/zetta/tests/openzfs_pool.rs`; the engine's read-only import of these
//! pools builds on it.

use super::discover::OpenZfsCandidate;
use super::feature;
use super::uberblock::Uberblock;
use crate::byteorder::ByteOrder;
use crate::dmu::openzfs::reader::{entry_name, Objset, OzfsError, PoolIo};
use crate::dmu::openzfs::RawBlkptr;
use crate::dsl::openzfs::dataset::DslDatasetPhys;
use crate::dsl::openzfs::dir::DslDirPhys;
use crate::dsl::openzfs::{objdir, ZapValue};
use crate::io::{DeviceRef, FileDevice};
use crate::nvpair_xdr::{self, XdrNvList};
use crate::vdev::openzfs::label;
use crate::zap::openzfs::ZapEntry;
use crate::zio::openzfs::read::PoolDevices;
use crate::zio::openzfs::vdev_map::PoolVdevs;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// The deepest dataset hierarchy walked (OpenZFS's `zfs_max_dataset_nesting`).
const NESTING_MAX: usize = 50;
/// Most snapshots or children read from one ZAP (a hostile pool could claim billions).
const ENTRIES_MAX: usize = 1 << 20;
/// Largest packed config object read.
const CONFIG_SIZE_MAX: u64 = 16 << 20;

/// Why a pool does not open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// A device could not be opened.
    Device { path: String, reason: String },
    /// No valid uberblock on any device.
    NoUberblock,
    /// A pool version OpenZFS does not import.
    Version(u64),
    /// Active features needed for reading that Zetta does not read.
    UnsupportedFeatures(Vec<String>),
    /// The pool's metadata could not be read.
    Metadata(OzfsError),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Device { path, reason } => write!(f, "cannot open '{path}': {reason}"),
            OpenError::NoUberblock => write!(f, "no valid uberblock found"),
            OpenError::Version(_) => {
                write!(f, "pool is formatted using an unsupported ZFS version")
            }
            OpenError::UnsupportedFeatures(names) => {
                write!(f, "unsupported feature(s) ({})", names.join(", "))
            }
            OpenError::Metadata(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<OzfsError> for OpenError {
    fn from(e: OzfsError) -> Self {
        OpenError::Metadata(e)
    }
}

/// One dataset (filesystem, volume or snapshot) of the pool.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// `pool/a/b` or `pool/a/b@snap`.
    pub name: String,
    pub dir_obj: u64,
    pub dataset_obj: u64,
    pub dir: DslDirPhys,
    pub phys: DslDatasetPhys,
    /// The byte order of the dataset's bonus (and so of its block pointer's words).
    pub order: ByteOrder,
    pub is_snapshot: bool,
}

impl Dataset {
    /// Whether the dataset is encrypted: its object set's block pointer is protected by a
    /// MAC (`BP_USES_CRYPT`), which only its key opens.
    pub fn is_encrypted(&self) -> bool {
        crate::zio::openzfs::blkptr::BlockPointer::decode(self.order, &self.phys.bp, 0)
            .map(|bp| bp.uses_crypt())
            .unwrap_or(false)
    }
}

/// A real OpenZFS pool, open read-only.
pub struct OpenZfsPool {
    pub name: String,
    pub guid: u64,
    pub uberblock: Uberblock,
    pub io: Arc<PoolIo>,
    pub mos: Objset,
    /// The MOS config (the packed nvlist the object directory names).
    pub config: XdrNvList,
    /// Every feature of `features_for_read` with its reference count.
    pub features_for_read: BTreeMap<String, u64>,
    pub root_dir_obj: u64,
}

fn value_of(entry: &ZapEntry) -> ZapValue {
    if entry.int_len == 1 {
        ZapValue::Bytes(entry.values.iter().map(|&v| v as u8).collect())
    } else {
        ZapValue::Ints(entry.values.clone())
    }
}

/// A ZAP's entries as name → value, as the DSL and ZPL codecs take them.
pub fn zap_map(entries: &[ZapEntry]) -> BTreeMap<String, ZapValue> {
    entries
        .iter()
        .map(|e| (entry_name(e), value_of(e)))
        .collect()
}

impl OpenZfsPool {
    /// Opens a found pool from the device paths `discover` recorded.
    pub fn open(candidate: &OpenZfsCandidate) -> Result<OpenZfsPool, OpenError> {
        let mut devices = Vec::new();
        for path in candidate.devices.values() {
            let device = FileDevice::open_read_only(path).map_err(|e| OpenError::Device {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            devices.push(Arc::new(device) as DeviceRef);
        }
        Self::open_devices(candidate, &devices)
    }

    /// Opens a found pool on devices already open (the candidate's leaves among them).
    pub fn open_devices(
        candidate: &OpenZfsCandidate,
        devices: &[DeviceRef],
    ) -> Result<OpenZfsPool, OpenError> {
        let ub = candidate.uberblock.clone().ok_or(OpenError::NoUberblock)?;
        if !feature::version_is_supported(ub.version) {
            return Err(OpenError::Version(ub.version));
        }
        let mut leaves: HashMap<u64, DeviceRef> = HashMap::new();
        let mut configs = Vec::new();
        for device in devices {
            let Some(read) = label::read_device(device.as_ref()) else {
                continue;
            };
            if read.config.get_u64("pool_guid") != Some(candidate.guid) {
                continue;
            }
            // A cache device's label (Zetta writes the pool's keys but no `vdev_tree`;
            // OpenZFS's aux labels have neither) is not part of the vdev tree.
            if read.config.get_nvlist("vdev_tree").is_none() {
                continue;
            }
            if let Some(guid) = read.config.get_u64("guid") {
                leaves.insert(guid, device.clone());
            }
            configs.push(read.config);
        }
        let vdevs = PoolVdevs::from_configs(configs.iter())
            .map_err(|e| OpenError::Metadata(OzfsError::Corrupt(e.to_string())))?;
        let io = Arc::new(PoolIo {
            devices: PoolDevices::new(vdevs, leaves),
            salt: [0; 32],
        });
        // The salt keys skein/blake3 checksums of data blocks; MOS blocks never use them,
        // so the MOS is read once without it to find it.
        let salt = {
            let mos = Objset::open(io.clone(), &ub.rootbp, ub.order)?;
            match mos.zap_lookup(objdir::DIRECTORY_OBJECT, objdir::CHECKSUM_SALT)? {
                Some(entry) if entry.int_len == 1 && entry.values.len() == 32 => {
                    let mut salt = [0u8; 32];
                    for (out, v) in salt.iter_mut().zip(&entry.values) {
                        *out = *v as u8;
                    }
                    Some(salt)
                }
                _ => None,
            }
        };
        let io = match (salt, Arc::try_unwrap(io)) {
            (Some(salt), Ok(io)) => Arc::new(PoolIo {
                devices: io.devices,
                salt,
            }),
            (None, Ok(io)) => Arc::new(io),
            (_, Err(_)) => {
                return Err(OpenError::Metadata(OzfsError::Corrupt(
                    "pool reader still shared".to_string(),
                )))
            }
        };
        let mos = Objset::open(io.clone(), &ub.rootbp, ub.order)?;
        let root_dir_obj = mos
            .zap_u64(objdir::DIRECTORY_OBJECT, objdir::ROOT_DATASET)?
            .ok_or_else(|| OzfsError::Missing("the object directory's root_dataset".into()))?;
        let config = match mos.zap_u64(objdir::DIRECTORY_OBJECT, objdir::CONFIG)? {
            Some(object) => read_packed_nvlist(&mos, object)?,
            None => candidate.config.clone(),
        };
        let mut features_for_read = BTreeMap::new();
        if ub.version >= feature::SPA_VERSION_FEATURES {
            let object = mos
                .zap_u64(objdir::DIRECTORY_OBJECT, objdir::FEATURES_FOR_READ)?
                .ok_or_else(|| OzfsError::Missing("features_for_read".into()))?;
            for entry in mos.zap_list(object)? {
                let count = entry.values.first().copied().unwrap_or(0);
                features_for_read.insert(entry_name(&entry), count);
            }
            let unsupported: Vec<String> = features_for_read
                .iter()
                .filter(|(name, count)| **count > 0 && !feature::read_supported(name))
                .map(|(name, _)| name.clone())
                .collect();
            if !unsupported.is_empty() {
                return Err(OpenError::UnsupportedFeatures(unsupported));
            }
        }
        Ok(OpenZfsPool {
            name: candidate.name.clone(),
            guid: candidate.guid,
            uberblock: ub,
            io,
            mos,
            config,
            features_for_read,
            root_dir_obj,
        })
    }

    /// A DSL dir's record.
    pub fn dir(&self, object: u64) -> Result<(DslDirPhys, ByteOrder), OzfsError> {
        let dn = self.mos.dnode(object)?;
        let phys = DslDirPhys::decode(&dn.bonus, dn.order)
            .map_err(|e| OzfsError::Corrupt(format!("DSL dir {object}: {e}")))?;
        Ok((phys, dn.order))
    }

    /// A DSL dataset's record.
    pub fn dataset_phys(&self, object: u64) -> Result<(DslDatasetPhys, ByteOrder), OzfsError> {
        let dn = self.mos.dnode(object)?;
        let phys = DslDatasetPhys::decode(&dn.bonus, dn.order)
            .map_err(|e| OzfsError::Corrupt(format!("DSL dataset {object}: {e}")))?;
        Ok((phys, dn.order))
    }

    /// Every filesystem, volume and snapshot, parents before children, each head
    /// followed by its snapshots in creation order (as `zfs list -t all` orders by name
    /// within a parent, callers sort as they print). Hidden names (`$ORIGIN`, `$MOS`,
    /// `$FREE`, `%` receive work datasets) are left out.
    pub fn datasets(&self) -> Result<Vec<Dataset>, OzfsError> {
        let mut out = Vec::new();
        let mut stack = vec![(self.name.clone(), self.root_dir_obj, 0usize)];
        while let Some((name, dir_obj, depth)) = stack.pop() {
            let (dir, _) = self.dir(dir_obj)?;
            if dir.head_dataset_obj != 0 {
                let (phys, order) = self.dataset_phys(dir.head_dataset_obj)?;
                let snapnames = phys.snapnames_zapobj;
                out.push(Dataset {
                    name: name.clone(),
                    dir_obj,
                    dataset_obj: dir.head_dataset_obj,
                    dir: dir.clone(),
                    phys,
                    order,
                    is_snapshot: false,
                });
                if snapnames != 0 {
                    let mut snaps = Vec::new();
                    for entry in self.mos.zap_list(snapnames)?.iter().take(ENTRIES_MAX) {
                        let object = entry.values.first().copied().unwrap_or(0);
                        let (phys, order) = self.dataset_phys(object)?;
                        snaps.push(Dataset {
                            name: format!("{name}@{}", entry_name(entry)),
                            dir_obj,
                            dataset_obj: object,
                            dir: dir.clone(),
                            phys,
                            order,
                            is_snapshot: true,
                        });
                    }
                    snaps.sort_by_key(|s| s.phys.creation_txg);
                    out.extend(snaps);
                }
            }
            if dir.child_dir_zapobj == 0 || depth >= NESTING_MAX {
                continue;
            }
            let mut children: Vec<(String, u64)> = self
                .mos
                .zap_list(dir.child_dir_zapobj)?
                .iter()
                .take(ENTRIES_MAX)
                .map(|e| (entry_name(e), e.values.first().copied().unwrap_or(0)))
                .filter(|(child, _)| !child.starts_with('$') && !child.contains('%'))
                .collect();
            // Popped last-first: push in reverse name order so children come out sorted.
            children.sort();
            for (child, object) in children.into_iter().rev() {
                stack.push((format!("{name}/{child}"), object, depth + 1));
            }
        }
        Ok(out)
    }

    /// The object set of a dataset.
    pub fn objset(&self, dataset: &Dataset) -> Result<Objset, OzfsError> {
        let bp: RawBlkptr = dataset.phys.bp;
        Objset::open(self.io.clone(), &bp, dataset.order)
    }

    /// The props ZAP of a DSL dir (empty when it has none).
    pub fn dir_props(&self, dir_obj: u64) -> Result<BTreeMap<String, ZapValue>, OzfsError> {
        let (dir, _) = self.dir(dir_obj)?;
        if dir.props_zapobj == 0 {
            return Ok(BTreeMap::new());
        }
        Ok(zap_map(&self.mos.zap_list(dir.props_zapobj)?))
    }
}

/// A packed nvlist object: its bonus holds the packed size, its data the XDR bytes.
fn read_packed_nvlist(mos: &Objset, object: u64) -> Result<XdrNvList, OzfsError> {
    let dn = mos.dnode(object)?;
    let size = dn
        .order
        .u64_at(&dn.bonus, 0)
        .map_err(|e| OzfsError::Corrupt(format!("packed nvlist {object}: {e}")))?;
    if size > CONFIG_SIZE_MAX {
        return Err(OzfsError::Corrupt(format!(
            "packed nvlist {object} claims {size} bytes"
        )));
    }
    let bytes = mos.read(&dn, 0, size as usize)?;
    nvpair_xdr::unpack(&bytes)
        .map(|u| u.list)
        .map_err(|e| OzfsError::Corrupt(format!("packed nvlist {object}: {e}")))
}
