//! The MOS object directory (object 1) as OpenZFS writes it (`DMU_POOL_DIRECTORY_OBJECT`,
//! the `DMU_POOL_*` names of `include/sys/dmu.h`; `spa_create`, `dsl_pool_create`,
//! `spa_sync_config_object`, `spa_sync_props`).
//!
//! Object 1 is a ZAP (type `OBJECT_DIRECTORY`) whose entries name the pool-wide objects.
//! The names and their meaning are the part-1 reader's (`dsl::openzfs::objdir`): one table
//! for reading OpenZFS's pools and writing Zetta's. What Zetta writes:
//!
//! ```text
//! root_dataset          u64  the root DSL dir (MOS object 5 at create)
//! config                u64  a PACKED_NVLIST object (16 KiB blocks): the pool config as a
//!                            packed XDR nvlist, zero-padded to whole blocks; its 8-byte
//!                            bonus (PACKED_NVLIST_SIZE) is the packed size
//! creation_version      u64  the version the pool was created with: 5000, or 28 (legacy)
//! deflate               u64  1 (space figures are deflated)
//! sync_bplist           u64  an empty bpobj (BPOBJ, 16 KiB blocks, 48-byte BPOBJ_HDR bonus)
//! free_bpobj            u64  an empty bpobj (128 KiB blocks)
//!                            (the three feature entries below: version 5000 only; a
//!                            legacy pool gets them when `spa_upgrade` crosses 5000)
//! features_for_read     u64  a ZAP (DMU_OTN_ZAP_METADATA), empty: nothing a reader lacks
//! features_for_write    u64  a ZAP: the READONLY_COMPAT features (format 26: no private
//!                            feature; formats 14-25 had org.zetta:private_format = 1)
//! feature_descriptions  u64  a ZAP: its description, a string
//! pool_props            u64  a POOL_PROPS ZAP (`spa_sync_props`): string and user (`a:b`)
//!                            properties as 1-byte integers with the NUL, index properties
//!                            (on/off, failmode) and numbers (ashift, bootfs) as one u64
//! com.delphix:vdev_zap_map u64 the AVZ listing every per-vdev ZAP (`spa::vdev_zap`)
//! scan                  u64[24] dsl_scan_phys_t (`ScanStats::to_scan_phys`)
//! history               u64  MOS object 2 (at create), the pool history (`spa::history`: OpenZFS's
//!                            ring of packed-nvlist records)
//! errlog_last           u64  MOS object 3 (at create), an ERROR_LOG ZAP: one entry per damaged block,
//!                            named `objset:object:level:blkid` in hex, its value the empty
//!                            string (`spa_errlog.c` without head_errlog). Zetta keeps one
//!                            error set (a scrub restarts it), so no `errlog_scrub` is made.
//! spares, l2cache      u64  PACKED_NVLIST objects (16 KiB blocks, as `config`): `{spares:
//!                            [aux vdev..]}` and `{l2cache: [..]}`, the hot spares and cache
//!                            devices (`spa_sync_aux_dev`; `vdev::config::aux_config`); made
//!                            when the first is added, an empty array once all are removed
//! org.illumos:checksum_salt u8[32] the key of the salted checksums (blake3), random at
//!                            create (format 18; `spa_create`). A pool without it is
//!                            read with the zero salt and given it at its next sync, as
//!                            `spa_sync_upgrades` does: a reader that finds no entry
//!                            (OpenZFS) would draw a random salt and fail every blake3 block.
//! ```
//!
//! Pool settings OpenZFS does not store in `pool_props` (format 26): `comment` and
//! `compatibility` are config keys (`spa_config_generate`, read back here at load);
//! `altroot`, `readonly`, `cachefile`, Zetta's vdev counters and import time (`org.zetta:*`
//! keys of `Spa::props`) and the create-time `fs:*` live in memory only and are never
//! written (formats 14-25 carried them in the config as `org.zetta:pool_props`).
//!
//! What Zetta reads: the numbers above are where `Spa::create` puts the objects; a pool
//! OpenZFS or zfs-fuse created has them where its allocator went (OpenZFS 2.3: root dir 2,
//! root dataset 21, `$ORIGIN@$ORIGIN` 18, history 32; zfs-fuse: 2, 16, 14, 22), and may lack
//! `history` (created at the first record, `spa_history_create_obj`), `errlog_last`
//! (absent, or 0 after a scrub rotated the log away: created at the first error,
//! `sync_error_list`) and `pool_props` (created when a property is first set). `load`
//! takes every number from the directory and the root dir (`MosDirectory`'s fields); the
//! engine uses no fixed number for an open pool.
//!
//! Invariants: every object named here exists from the pool's first txg (a pool Zetta
//! created; others' missing history, error log and `pool_props` as just said); the directory and
//! the objects it names change only in the syncing context (`Spa::sync_quiesce` step 4),
//! so an uberblock always points at a directory consistent with its MOS. The config object
//! is rewritten every txg (it carries the txg), `scan` and the property objects only when
//! they changed. Reading validates every entry (present, one integer, an existing object, a
//! bonus of the right size) and returns `SpaError::Corrupt` otherwise.

use super::zfeature::{FeatureInfo, FeatureState};
use super::{ScanStats, SpaError};
use crate::dmu::{object_type, IoCtx, ObjectSet};
use crate::dsl::openzfs::{objdir, ot};
use crate::nvlist::NvList;
use crate::nvpair_xdr::XdrNvList;
use crate::types::ObjectId;
use crate::zap::{self, ZapValue};
use crate::zio::Bookmark;
use std::collections::BTreeSet;
use zetta_zcommon::checksum::openzfs::ChecksumSalt;

/// The write-only feature Zetta pools of formats 14 to 25 had active while parts of their
/// format were Zetta's own. Format 26 no longer writes it; a pool that lists it is of an
/// older format (its labels say so too, and it is refused), so it is no feature Zetta
/// maintains (`spa::openzfs::discover::zetta_writes`).
pub const FEATURE_PRIVATE_FORMAT: &str = "org.zetta:private_format";
/// `ZPOOL_CONFIG_SPARES`, `ZPOOL_CONFIG_L2CACHE`: the array in each aux list object.
pub const AUX_SPARES_KEY: &str = "spares";
pub const AUX_L2CACHE_KEY: &str = "l2cache";
/// `SPA_CONFIG_BLOCKSIZE`.
pub const CONFIG_BLOCK_BYTES: u32 = 1 << 14;
/// `SPA_OLD_MAXBLOCKSIZE`: `free_bpobj`'s block size.
const FREE_BPOBJ_BLOCK_BYTES: u32 = 128 << 10;

/// Where the directory's objects are, and what was last written to the ones rewritten
/// only on change.
#[derive(Clone, Debug, Default)]
pub struct MosDirectory {
    /// The root DSL dir (the `root_dataset` entry: despite its name, a DSL dir, as in
    /// `dsl_pool_open`) and that dir's head dataset (the pool's root filesystem).
    pub root_dir: u64,
    pub root_dataset: u64,
    /// `$ORIGIN@$ORIGIN` (`dp_origin_snap`): 6 where Zetta creates it, elsewhere in pools
    /// others created, 0 in a pool from before version 11 (no `$ORIGIN`). The MOS carries
    /// it as `ObjectSet::dsl_origin` for the DSL records' codecs.
    pub origin_snapshot: u64,
    /// The pool history (`history`, `spa_history`); `None` when the entry is absent or 0:
    /// the first record creates it (`spa_history_create_obj`).
    pub history: Option<u64>,
    /// The error logs (`errlog_last`, `errlog_scrub`, `spa_errlog_last/scrub`); `None` when
    /// absent or 0, as a scrub's log rotation leaves them (`spa_errlog_sync`). Zetta keeps
    /// one error set in `errlog_last`, created when the first error is logged.
    pub errlog_last: Option<u64>,
    pub errlog_scrub: Option<u64>,
    /// The pool's SPA version (`spa_version`, `ub_version`): 5000, or a legacy version
    /// (`zfeature::LEGACY_VERSIONS_WRITTEN`) whose pool has no feature objects.
    pub version: u64,
    pub config: u64,
    /// `pool_props`, 0 until a property is first set (a pool zfs-fuse created has none).
    pub pool_props: u64,
    /// The feature ZAPs' state (`spa::zfeature`).
    pub features: FeatureState,
    /// `com.delphix:vdev_zap_map` (`spa_all_vdev_zaps`): the ZAP listing every per-vdev
    /// ZAP; 0 until `spa::vdev_zap` first makes it.
    pub vdev_zap_map: u64,
    written_props: Option<NvList>,
    written_errlog: Option<BTreeSet<Bookmark>>,
    written_scan: Option<[u64; super::scan::SCAN_PHYS_WORDS]>,
    /// The pool's checksum salt (`spa_cksum_salt`), which the zio pipeline keys blake3 with.
    pub checksum_salt: ChecksumSalt,
    /// Whether the directory lacks `checksum_salt` (a pool from before format 18): the next
    /// sync writes it.
    checksum_salt_missing: bool,
    /// The `spares` and `l2cache` objects (`sav_object`).
    pub spares: AuxObject,
    pub l2cache: AuxObject,
}

/// One of the directory's aux lists (`spa_aux_vdev_t`'s `sav_object`): 0 until the first
/// device of its kind is added, and what was last written there.
#[derive(Clone, Debug, Default)]
pub struct AuxObject {
    pub object: u64,
    written: Option<Vec<u8>>,
}

impl AuxObject {
    /// Reads the list at directory entry `entry` (its array named `key`); none when absent.
    fn load(
        mos: &ObjectSet,
        ctx: &IoCtx<'_>,
        entry: &str,
        key: &str,
    ) -> Result<(AuxObject, Vec<XdrNvList>), SpaError> {
        let Some(object) = entry_u64(mos, ctx, entry)?.filter(|&o| o != 0) else {
            return Ok((AuxObject::default(), Vec::new()));
        };
        let packed = read_packed(mos, ctx, object)?;
        let list = crate::nvpair_xdr::unpack(&packed)
            .map_err(|e| corrupt(format!("{entry} list: {e}")))?
            .list;
        let devices = match list.get(key) {
            None => Vec::new(),
            Some(crate::nvpair_xdr::XdrValue::NvListArray(items)) => items.clone(),
            Some(_) => {
                return Err(corrupt(format!(
                    "{entry} list's {key} is not an nvlist array"
                )))
            }
        };
        Ok((
            AuxObject {
                object,
                written: Some(packed),
            },
            devices,
        ))
    }

    /// `spa_sync_aux_dev`: writes `{key: devices}` when it changed, making the object and
    /// its directory entry on the first device.
    fn sync(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        entry: &str,
        key: &str,
        devices: &[XdrNvList],
    ) -> Result<(), SpaError> {
        if self.object == 0 && devices.is_empty() {
            return Ok(());
        }
        let mut list = XdrNvList::new();
        list.add(
            key,
            crate::nvpair_xdr::XdrValue::NvListArray(devices.to_vec()),
        );
        let packed =
            crate::nvpair_xdr::pack(&list).map_err(|e| SpaError::Invalid(e.to_string()))?;
        if self.written.as_ref() == Some(&packed) {
            return Ok(());
        }
        if self.object == 0 {
            self.object = create_packed(mos, ctx)?;
            let dir = ObjectId(objdir::DIRECTORY_OBJECT);
            zap::zap_update(mos, ctx, dir, entry, &[self.object]).map_err(zap_err)?;
        }
        write_packed(mos, ctx, self.object, &packed)?;
        self.written = Some(packed);
        Ok(())
    }
}

/// The hot spares' and cache devices' MOS entries a sync writes (`vdev::config::aux_config`).
#[derive(Clone, Debug, Default)]
pub struct AuxLists {
    pub spares: Vec<XdrNvList>,
    pub l2cache: Vec<XdrNvList>,
}

/// What an import reads from the directory.
pub struct LoadedDirectory {
    pub directory: MosDirectory,
    pub config: XdrNvList,
    pub errlog: BTreeSet<Bookmark>,
    pub props: NvList,
    pub scan: ScanStats,
    /// The MOS `spares` and `l2cache` lists' entries.
    pub aux: AuxLists,
}

fn corrupt(why: impl std::fmt::Display) -> SpaError {
    SpaError::Corrupt(format!("MOS object directory: {why}"))
}

fn zap_err(e: zap::ZapError) -> SpaError {
    crate::dsl::zap_error(e)
}

/// Whether a pool setting is an entry of OpenZFS's `pool_props` ZAP (`spa_sync_props`'s
/// default case: every settable property but `version`, the ones OpenZFS keeps in the
/// config, `comment` and `compatibility`, and the non-persistent `altroot`, `readonly`,
/// `cachefile`; user properties `a:b` are strings there too). Zetta's own in-memory keys
/// (`fs:*` during create, `org.zetta:*` counters and import time) are never written.
pub fn is_openzfs_pool_prop(name: &str) -> bool {
    !(name.starts_with("fs:")
        || name.starts_with("org.zetta:")
        || matches!(
            name,
            "altroot" | "cachefile" | "readonly" | "version" | "comment" | "compatibility"
        ))
}

/// The settings OpenZFS keeps in the config (`spa_config_generate`'s `comment` and
/// `compatibility`, read back by `spa_load`), not in `pool_props`.
pub const CONFIG_POOL_PROPS: [&str; 2] = ["comment", "compatibility"];

/// Pool properties OpenZFS stores as one u64 that are not index words (`PROP_TYPE_NUMBER`
/// of `zpool_prop_init` that `spa_sync_props` writes): `bootfs` is the dataset's object
/// number (Zetta keeps it in `props` as that number's text).
const POOL_PROP_NUMBERS: &[&str] = &["ashift", "bootfs", "dedup_table_quota", "dedupditto"];

/// The subset of `props` that `pool_props` holds, string values only (what `sync_props`
/// writes and compares).
fn persisted_props(props: &NvList) -> NvList {
    let mut out = NvList::new();
    for (name, value) in &props.entries {
        if matches!(value, crate::nvlist::NvValue::Str(_)) && is_openzfs_pool_prop(name) {
            out.entries.insert(name.clone(), value.clone());
        }
    }
    out
}

/// How one pool property is stored in `pool_props`: its index number, a number, or a
/// NUL-terminated string (`spa_sync_props`).
fn stored_pool_prop(name: &str, text: &str) -> ZapValue {
    if let Some(number) = super::openzfs::import::pool_prop_index_number(name, text) {
        return ZapValue::U64s(vec![number]);
    }
    if POOL_PROP_NUMBERS.contains(&name) {
        if let Ok(number) = text.parse::<u64>() {
            return ZapValue::U64s(vec![number]);
        }
    }
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    ZapValue::Bytes(bytes)
}

/// Rewrites a packed-nvlist object: the bytes zero-padded to whole blocks, the size in
/// the bonus (`spa_sync_nvlist`).
fn write_packed(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    bytes: &[u8],
) -> Result<(), SpaError> {
    let block = CONFIG_BLOCK_BYTES as usize;
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().div_ceil(block).max(1) * block, 0);
    mos.truncate(ctx, ObjectId(object), 0)?;
    mos.write(ctx, ObjectId(object), 0, &padded)?;
    mos.set_bonus(ctx, ObjectId(object), &(bytes.len() as u64).to_le_bytes())?;
    Ok(())
}

/// A packed-nvlist object's bytes, their size checked against the object's.
fn read_packed(mos: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<Vec<u8>, SpaError> {
    let bonus = mos.bonus(ctx, ObjectId(object))?;
    let Some(size) = bonus.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
        return Err(corrupt(format!(
            "packed nvlist {object} has a {}-byte size bonus",
            bonus.len()
        )));
    };
    let size = u64::from_le_bytes(size);
    let stored = mos.extent_bytes(ctx, ObjectId(object))?;
    if size > stored {
        return Err(corrupt(format!(
            "packed nvlist {object} says {size} bytes, holds {stored}"
        )));
    }
    Ok(mos.read(ctx, ObjectId(object), 0, size as usize)?)
}

fn create_packed(mos: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<u64, SpaError> {
    Ok(mos
        .create_object(
            ctx,
            object_type::PACKED_NVLIST,
            CONFIG_BLOCK_BYTES,
            ot::PACKED_NVLIST_SIZE,
            8,
        )?
        .0)
}

fn create_bpobj(mos: &mut ObjectSet, ctx: &IoCtx<'_>, block: u32) -> Result<u64, SpaError> {
    Ok(crate::dsl::create_bpobj(mos, ctx, block)?)
}

/// The pool's `free_bpobj` (`dsl_pool_create`, `dsl_pool_upgrade_dir_clones`).
pub fn create_free_bpobj(mos: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<u64, SpaError> {
    create_bpobj(mos, ctx, FREE_BPOBJ_BLOCK_BYTES)
}

/// One u64 entry of the directory, `None` when absent.
fn entry_u64(mos: &ObjectSet, ctx: &IoCtx<'_>, name: &str) -> Result<Option<u64>, SpaError> {
    let dir = ObjectId(objdir::DIRECTORY_OBJECT);
    match zap::zap_lookup_value(mos, ctx, dir, name).map_err(zap_err)? {
        None => Ok(None),
        Some(ZapValue::U64s(v)) if v.len() == 1 => Ok(Some(v[0])),
        Some(_) => Err(corrupt(format!("entry {name} is not one integer"))),
    }
}

fn required_u64(mos: &ObjectSet, ctx: &IoCtx<'_>, name: &str) -> Result<u64, SpaError> {
    entry_u64(mos, ctx, name)?.ok_or_else(|| corrupt(format!("no {name} entry")))
}

impl MosDirectory {
    /// A directory naming only the root dir and root dataset (a pool being created, until
    /// `create` fills in the rest; a foreign pool's read-only view).
    pub fn with_roots(root_dir: u64, root_dataset: u64) -> MosDirectory {
        MosDirectory {
            root_dir,
            root_dataset,
            ..Default::default()
        }
    }

    /// Creates object 1 and the objects it names, in a new pool's first txg (`roots`: the
    /// caller's root dir and root dataset; `history` and `errlog`: the caller's history
    /// and error log objects, which OpenZFS's `spa_create` also makes before the directory
    /// is complete).
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        roots: (u64, u64),
        history: u64,
        errlog: u64,
        version: u64,
        enable: &[&'static FeatureInfo],
        checksum_salt: ChecksumSalt,
    ) -> Result<MosDirectory, SpaError> {
        assert!(
            super::zfeature::version_is_written(version),
            "a pool of version {version} is not created"
        );
        let dir = ObjectId(objdir::DIRECTORY_OBJECT);
        zap::zap_create_at(mos, ctx, dir, object_type::OBJECT_DIRECTORY).map_err(zap_err)?;
        let config = create_packed(mos, ctx)?;
        let pool_props = zap::zap_create(mos, ctx, ot::POOL_PROPS)
            .map_err(zap_err)?
            .0;
        let sync_bplist = create_bpobj(mos, ctx, CONFIG_BLOCK_BYTES)?;
        let mut entries = vec![
            (objdir::ROOT_DATASET, roots.0),
            (objdir::CONFIG, config),
            (objdir::CREATION_VERSION, version),
            (objdir::DEFLATE, 1),
            (objdir::SYNC_BPLIST, sync_bplist),
        ];
        // `dsl_pool_create`: `free_bpobj` from SPA_VERSION_DEADLISTS (26) on.
        if version >= crate::dsl::snapshot::SPA_VERSION_DEADLISTS {
            entries.push((objdir::FREE_BPOBJ, create_free_bpobj(mos, ctx)?));
        }
        entries.extend([
            (objdir::POOL_PROPS, pool_props),
            (objdir::HISTORY, history),
            (objdir::ERRLOG_LAST, errlog),
        ]);
        // `spa_feature_create_zap_objects` (a feature-flags pool only), Zetta's own
        // feature, then the requested features in order (`spa_sync_props` of
        // `feature@NAME=enabled`). A legacy pool has none of them.
        let mut features = FeatureState::default();
        if super::zfeature::version_has_features(version) {
            let feature_entries;
            (features, feature_entries) = FeatureState::create(mos, ctx)?;
            entries.extend(feature_entries);
            for info in enable {
                features.enable(info);
            }
        } else {
            assert!(
                enable.is_empty(),
                "features enabled on a version-{version} pool"
            );
        }
        for (name, value) in entries {
            zap::zap_add(mos, ctx, dir, name, &[value]).map_err(zap_err)?;
        }
        features.sync(mos, ctx)?;
        zap::zap_update_bytes(mos, ctx, dir, objdir::CHECKSUM_SALT, &checksum_salt)
            .map_err(zap_err)?;
        Ok(MosDirectory {
            root_dir: roots.0,
            root_dataset: roots.1,
            origin_snapshot: crate::dsl::phys::ORIGIN_SNAPSHOT_OBJECT,
            history: Some(history),
            errlog_last: Some(errlog),
            errlog_scrub: None,
            version,
            config,
            pool_props,
            features,
            vdev_zap_map: 0,
            written_props: None,
            written_errlog: None,
            written_scan: None,
            checksum_salt,
            checksum_salt_missing: false,
            spares: AuxObject::default(),
            l2cache: AuxObject::default(),
        })
    }

    /// Reads the directory of a pool the engine opens read-write: where the root dir, its
    /// head dataset, the history and the error logs are (wherever the pool's creator put
    /// them: OpenZFS numbers them in allocation order, which differs between versions), the
    /// packed config, the pool properties (both objects merged), the last scan.
    pub fn load(mos: &ObjectSet, ctx: &IoCtx<'_>) -> Result<LoadedDirectory, SpaError> {
        let root_dir = required_u64(mos, ctx, objdir::ROOT_DATASET)?;
        if root_dir == 0 {
            return Err(corrupt("root_dataset is 0"));
        }
        // Decoded with origin 0: the words read here do not depend on it.
        let root_dir_phys =
            crate::dsl::phys::DslDirPhys::decode(&mos.bonus(ctx, ObjectId(root_dir))?, 0)
                .map_err(|e| corrupt(format!("root DSL dir {root_dir}: {e}")))?;
        let root_dataset = root_dir_phys.head_dataset;
        if root_dataset == 0 || root_dir_phys.parent_dir != 0 {
            return Err(corrupt(format!(
                "root DSL dir {root_dir} has head dataset {root_dataset} and parent {}",
                root_dir_phys.parent_dir
            )));
        }
        let origin_snapshot = origin_snapshot(mos, ctx, root_dir_phys.child_dir_zap)?;
        let nonzero = |name: &str| -> Result<Option<u64>, SpaError> {
            Ok(entry_u64(mos, ctx, name)?.filter(|&object| object != 0))
        };
        let history = nonzero(objdir::HISTORY)?;
        let errlog_last = nonzero(objdir::ERRLOG_LAST)?;
        let errlog_scrub = nonzero(objdir::ERRLOG_SCRUB)?;
        let config_obj = required_u64(mos, ctx, objdir::CONFIG)?;
        let packed = read_packed(mos, ctx, config_obj)?;
        let config = crate::nvpair_xdr::unpack(&packed)
            .map_err(|e| corrupt(format!("pool config: {e}")))?
            .list;
        // A pool no property was ever set on has none (`spa_sync_props` creates it).
        let pool_props = entry_u64(mos, ctx, objdir::POOL_PROPS)?.unwrap_or(0);
        let mut props = NvList::new();
        // `spa_load`: the comment and compatibility come from the config.
        for name in CONFIG_POOL_PROPS {
            if let Some(text) = config.get_str(name) {
                props.set_str(name, text);
            }
        }
        let listed = match pool_props {
            0 => Vec::new(),
            object => zap::zap_list_all(mos, ctx, ObjectId(object)).map_err(zap_err)?,
        };
        for entry in listed {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            match entry.value {
                ZapValue::Bytes(bytes) => {
                    let text = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
                    props.set_str(&name, &String::from_utf8_lossy(text));
                }
                ZapValue::U64s(words) => {
                    let [number] = words.as_slice() else {
                        return Err(corrupt(format!("pool property {name} is not one integer")));
                    };
                    let text = super::openzfs::import::pool_prop_index_text(&name, *number)
                        .unwrap_or_else(|| number.to_string());
                    props.set_str(&name, &text);
                }
            }
        }
        let scan =
            match zap::zap_lookup_value(mos, ctx, ObjectId(objdir::DIRECTORY_OBJECT), objdir::SCAN)
                .map_err(zap_err)?
            {
                None => ScanStats::default(),
                Some(ZapValue::U64s(words)) => ScanStats::from_scan_phys(&words)
                    .ok_or_else(|| corrupt(format!("scan of {} words", words.len())))?,
                Some(ZapValue::Bytes(_)) => return Err(corrupt("scan is a byte string")),
            };
        // `spa_get_errlog`: the last scrub's errors and the running one's.
        let mut errlog = BTreeSet::new();
        for object in [errlog_last, errlog_scrub].into_iter().flatten() {
            errlog.extend(load_errlog(mos, ctx, object)?);
        }
        let (spares_object, spares) = AuxObject::load(mos, ctx, objdir::SPARES, AUX_SPARES_KEY)?;
        let (l2cache_object, l2cache) =
            AuxObject::load(mos, ctx, objdir::L2CACHE, AUX_L2CACHE_KEY)?;
        let version = config
            .get_u64("version")
            .ok_or_else(|| corrupt("pool config has no version"))?;
        if !super::openzfs::feature::version_is_supported(version) {
            return Err(corrupt(format!("pool config has version {version}")));
        }
        let dir = ObjectId(objdir::DIRECTORY_OBJECT);
        let checksum_salt =
            match zap::zap_lookup_value(mos, ctx, dir, objdir::CHECKSUM_SALT).map_err(zap_err)? {
                None => None,
                Some(ZapValue::Bytes(bytes)) => Some(
                    ChecksumSalt::try_from(bytes.as_slice())
                        .map_err(|_| corrupt(format!("checksum salt of {} bytes", bytes.len())))?,
                ),
                Some(ZapValue::U64s(_)) => return Err(corrupt("checksum salt is not bytes")),
            };
        // A legacy pool has no feature objects (`spa_ld_check_features` reads them only
        // from version 5000 on); ones left there would be ignored, as OpenZFS does.
        let features = if super::zfeature::version_has_features(version) {
            FeatureState::load(
                mos,
                ctx,
                required_u64(mos, ctx, objdir::FEATURES_FOR_READ)?,
                required_u64(mos, ctx, objdir::FEATURES_FOR_WRITE)?,
                required_u64(mos, ctx, objdir::FEATURE_DESCRIPTIONS)?,
                entry_u64(mos, ctx, objdir::FEATURE_ENABLED_TXG)?,
            )?
        } else {
            FeatureState::default()
        };
        Ok(LoadedDirectory {
            directory: MosDirectory {
                root_dir,
                root_dataset,
                origin_snapshot,
                history,
                errlog_last,
                errlog_scrub,
                version,
                config: config_obj,
                pool_props,
                features,
                vdev_zap_map: entry_u64(mos, ctx, objdir::VDEV_ZAP_MAP)?.unwrap_or(0),
                written_props: Some(persisted_props(&props)),
                written_errlog: Some(errlog.clone()),
                written_scan: Some(scan.to_scan_phys()),
                checksum_salt: checksum_salt.unwrap_or_default(),
                checksum_salt_missing: checksum_salt.is_none(),
                spares: spares_object,
                l2cache: l2cache_object,
            },
            config,
            errlog,
            props,
            scan,
            aux: AuxLists { spares, l2cache },
        })
    }

    /// The syncing context's update: the config every txg (with the pool settings OpenZFS
    /// has no entry for), the properties and the scan when they changed.
    pub fn sync(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        config: XdrNvList,
        props: &NvList,
        scan: &ScanStats,
        aux: &AuxLists,
    ) -> Result<(), SpaError> {
        let packed =
            crate::nvpair_xdr::pack(&config).map_err(|e| SpaError::Invalid(e.to_string()))?;
        write_packed(mos, ctx, self.config, &packed)?;
        self.spares
            .sync(mos, ctx, objdir::SPARES, AUX_SPARES_KEY, &aux.spares)?;
        self.l2cache
            .sync(mos, ctx, objdir::L2CACHE, AUX_L2CACHE_KEY, &aux.l2cache)?;
        if super::zfeature::version_has_features(self.version) && !self.features.has_objects() {
            self.create_feature_objects(mos, ctx)?;
        }
        if self.features.is_dirty() {
            self.features.sync(mos, ctx)?;
        }
        if self.checksum_salt_missing {
            let dir = ObjectId(objdir::DIRECTORY_OBJECT);
            zap::zap_update_bytes(mos, ctx, dir, objdir::CHECKSUM_SALT, &self.checksum_salt)
                .map_err(zap_err)?;
            self.checksum_salt_missing = false;
        }
        let words = scan.to_scan_phys();
        if self.written_scan != Some(words) {
            let dir = ObjectId(objdir::DIRECTORY_OBJECT);
            zap::zap_update(mos, ctx, dir, objdir::SCAN, &words).map_err(zap_err)?;
            self.written_scan = Some(words);
        }
        let persisted = persisted_props(props);
        if self.written_props.as_ref() != Some(&persisted) {
            self.sync_props(mos, ctx, &persisted)?;
            self.written_props = Some(persisted);
        }
        Ok(())
    }

    /// `spa_sync_upgrades` crossing `SPA_VERSION_FEATURES`: a legacy pool upgraded to
    /// feature flags gets the feature ZAPs (`spa_feature_create_zap_objects`) and Zetta's
    /// own feature, as a new pool has them; the features enabled with the upgrade (kept
    /// pending meanwhile) are written next by the caller.
    fn create_feature_objects(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
    ) -> Result<(), SpaError> {
        let pending = std::mem::take(&mut self.features);
        let (mut features, entries) = FeatureState::create(mos, ctx)?;
        let dir = ObjectId(objdir::DIRECTORY_OBJECT);
        for (name, value) in entries {
            zap::zap_add(mos, ctx, dir, name, &[value]).map_err(zap_err)?;
        }
        for info in pending.pending_enables() {
            features.enable(info);
        }
        self.features = features;
        Ok(())
    }

    fn sync_props(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        props: &NvList,
    ) -> Result<(), SpaError> {
        if self.pool_props == 0 {
            if props.entries.is_empty() {
                return Ok(());
            }
            // `spa_sync_props`: the first property set creates the object.
            let object = zap::zap_create(mos, ctx, ot::POOL_PROPS).map_err(zap_err)?;
            let dir = ObjectId(objdir::DIRECTORY_OBJECT);
            zap::zap_update(mos, ctx, dir, objdir::POOL_PROPS, &[object.0]).map_err(zap_err)?;
            self.pool_props = object.0;
        }
        let zap_obj = ObjectId(self.pool_props);
        // Entries no longer set go (`zpool set NAME=` of a user property, an inherited
        // value); the rest are rewritten only when their stored value differs.
        for entry in zap::zap_list_all(mos, ctx, zap_obj).map_err(zap_err)? {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            let keep = props
                .get_str(&name)
                .is_some_and(|text| stored_pool_prop(&name, text) == entry.value);
            if !keep {
                zap::zap_remove(mos, ctx, zap_obj, &name).map_err(zap_err)?;
            }
        }
        for (name, value) in &props.entries {
            let crate::nvlist::NvValue::Str(text) = value else {
                continue;
            };
            match stored_pool_prop(name, text) {
                ZapValue::U64s(words) => zap::zap_update(mos, ctx, zap_obj, name, &words),
                ZapValue::Bytes(bytes) => zap::zap_update_bytes(mos, ctx, zap_obj, name, &bytes),
            }
            .map_err(zap_err)?;
        }
        Ok(())
    }

    /// Rewrites `errlog_last` when the error set changed (`spa_errlog_sync`'s
    /// `sync_error_list`). A pool without one (a scrub rotated it away, `errlog_last` 0)
    /// gets a new ERROR_LOG ZAP from the MOS's allocator at its first error, named in the
    /// directory, as `sync_error_list` creates it; an empty set creates nothing.
    pub fn sync_errlog(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        errlog: &BTreeSet<Bookmark>,
    ) -> Result<(), SpaError> {
        if self.written_errlog.as_ref() == Some(errlog) {
            return Ok(());
        }
        let zap_obj = match self.errlog_last {
            Some(object) => ObjectId(object),
            None if errlog.is_empty() => {
                self.written_errlog = Some(errlog.clone());
                return Ok(());
            }
            None => {
                let object = zap::zap_create(mos, ctx, object_type::ERROR_LOG).map_err(zap_err)?;
                let dir = ObjectId(objdir::DIRECTORY_OBJECT);
                zap::zap_update(mos, ctx, dir, objdir::ERRLOG_LAST, &[object.0])
                    .map_err(zap_err)?;
                self.errlog_last = Some(object.0);
                object
            }
        };
        for entry in zap::zap_list_all(mos, ctx, zap_obj).map_err(zap_err)? {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            zap::zap_remove(mos, ctx, zap_obj, &name).map_err(zap_err)?;
        }
        for bookmark in errlog {
            zap::zap_update_bytes(mos, ctx, zap_obj, bookmark_to_name(bookmark), &[0])
                .map_err(zap_err)?;
        }
        self.written_errlog = Some(errlog.clone());
        Ok(())
    }
}

/// `bookmark_to_name`: `objset:object:level:blkid` in lower-case hex.
pub fn bookmark_to_name(bookmark: &Bookmark) -> String {
    format!(
        "{:x}:{:x}:{:x}:{:x}",
        bookmark.objset, bookmark.object, bookmark.level, bookmark.blkid
    )
}

/// `name_to_bookmark`; `None` for a name that is not four hex numbers (a level above 255
/// included: no block pointer tree is that deep).
pub fn name_to_bookmark(name: &str) -> Option<Bookmark> {
    let mut words = name.split(':').map(|w| u64::from_str_radix(w, 16).ok());
    let bookmark = Bookmark {
        objset: words.next()??,
        object: words.next()??,
        level: u8::try_from(words.next()??).ok()?,
        blkid: words.next()??,
    };
    words.next().is_none().then_some(bookmark)
}

/// `dsl_pool_open`'s `dp_origin_snap`: the previous snapshot of `$ORIGIN`'s head dataset,
/// 0 when the root dir has no `$ORIGIN` child (a pool below version 11).
fn origin_snapshot(mos: &ObjectSet, ctx: &IoCtx<'_>, child_map: u64) -> Result<u64, SpaError> {
    if child_map == 0 {
        return Ok(0);
    }
    let origin_dir = match zap::zap_lookup_value(
        mos,
        ctx,
        ObjectId(child_map),
        crate::dsl::pool::ORIGIN_DIR_NAME,
    )
    .map_err(zap_err)?
    {
        None => return Ok(0),
        Some(ZapValue::U64s(v)) if v.len() == 1 => v[0],
        Some(_) => return Err(corrupt("the $ORIGIN child entry is not one integer")),
    };
    let dir = crate::dsl::phys::DslDirPhys::decode(&mos.bonus(ctx, ObjectId(origin_dir))?, 0)
        .map_err(|e| corrupt(format!("$ORIGIN dir {origin_dir}: {e}")))?;
    let head =
        crate::dsl::phys::DslDatasetPhys::decode(&mos.bonus(ctx, ObjectId(dir.head_dataset))?, 0)
            .map_err(|e| corrupt(format!("$ORIGIN dataset {}: {e}", dir.head_dataset)))?;
    if head.prev_snap == 0 {
        return Err(corrupt("$ORIGIN has no snapshot"));
    }
    Ok(head.prev_snap)
}

/// The error set an error log ZAP holds.
fn load_errlog(
    mos: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
) -> Result<BTreeSet<Bookmark>, SpaError> {
    let mut errlog = BTreeSet::new();
    for entry in zap::zap_list_all(mos, ctx, ObjectId(object)).map_err(zap_err)? {
        let name = String::from_utf8_lossy(&entry.name);
        let bookmark = name_to_bookmark(&name)
            .ok_or_else(|| corrupt(format!("error log entry {name:?} is not a bookmark")))?;
        errlog.insert(bookmark);
    }
    Ok(errlog)
}
