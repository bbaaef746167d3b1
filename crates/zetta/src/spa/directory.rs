//! The MOS object directory (object 1) as OpenZFS writes it (`DMU_POOL_DIRECTORY_OBJECT`,
//! the `DMU_POOL_*` names of `include/sys/dmu.h`; `spa_create`, `dsl_pool_create`,
//! `spa_sync_config_object`, `spa_sync_props`).
//!
//! Object 1 is a ZAP (type `OBJECT_DIRECTORY`) whose entries name the pool-wide objects.
//! The names and their meaning are the part-1 reader's (`dsl::openzfs::objdir`): one table
//! for reading OpenZFS's pools and writing Zetta's. What Zetta writes:
//!
//! ```text
//! root_dataset          u64  the root DSL dir (MOS object 5)
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
//! features_for_write    u64  a ZAP: org.zetta:private_format = 1, the one active feature
//!                            (write-only: OpenZFS opens the pool read-only, zdb walks it)
//! feature_descriptions  u64  a ZAP: its description, a string
//! pool_props            u64  a POOL_PROPS ZAP: string properties as 1-byte integers with
//!                            the NUL, index properties (on/off, failmode) as one u64
//! scan                  u64[24] dsl_scan_phys_t (`ScanStats::to_scan_phys`)
//! history               u64  MOS object 2, the pool history (`spa::history`: OpenZFS's
//!                            ring of packed-nvlist records)
//! errlog_last           u64  MOS object 3, an ERROR_LOG ZAP: one entry per damaged block,
//!                            named `objset:object:level:blkid` in hex, its value the empty
//!                            string (`spa_errlog.c` without head_errlog). Zetta keeps one
//!                            error set (a scrub restarts it), so no `errlog_scrub` is made.
//! org.illumos:checksum_salt u8[32] the key of the salted checksums (blake3), random at
//!                            create (format 18; `spa_create`). A pool without it is
//!                            read with the zero salt and given it at its next sync, as
//!                            `spa_sync_upgrades` does: a reader that finds no entry
//!                            (OpenZFS) would draw a random salt and fail every blake3 block.
//! ```
//!
//! The pool settings OpenZFS has no `pool_props` entry for (`fs:*`, `org.zetta:*` vdev
//! counters and import time, `altroot`, `bootfs`, non-string values) travel in the packed
//! config itself, as the byte array `org.zetta:pool_props` (Zetta's own nvlist encoding):
//! OpenZFS ignores keys it does not know, and the config is rewritten every txg anyway.
//!
//! Invariants: every object named here exists from the pool's first txg; the directory and
//! the objects it names change only in the syncing context (`Spa::sync_quiesce` step 4),
//! so an uberblock always points at a directory consistent with its MOS. The config object
//! is rewritten every txg (it carries the txg), `scan` and the property objects only when
//! they changed. Reading validates every entry (present, one integer, an existing object, a
//! bonus of the right size) and returns `SpaError::Corrupt` otherwise.

use super::zfeature::{FeatureInfo, FeatureState};
use super::{ScanStats, SpaError, MOS_OBJECT_ERRLOG, MOS_OBJECT_HISTORY, MOS_OBJECT_ROOT_DIR};
use crate::dmu::{object_type, IoCtx, ObjectSet};
use crate::dsl::openzfs::{objdir, ot};
use crate::nvlist::NvList;
use crate::nvpair_xdr::{XdrNvList, XdrValue};
use crate::types::ObjectId;
use crate::zap::{self, ZapValue};
use crate::zio::Bookmark;
use std::collections::BTreeSet;
use zetta_zcommon::checksum::openzfs::ChecksumSalt;

/// The feature every Zetta pool has active while parts of its format are still Zetta's
/// own (ZIL records, vdev counters): listed in `features_for_write` only, so OpenZFS opens
/// the pool read-only (`zdb` walks it) and refuses to import it read-write.
pub const FEATURE_PRIVATE_FORMAT: &str = "org.zetta:private_format";
/// Its `feature_descriptions` entry (`zpool import` prints it beside the feature).
pub const FEATURE_PRIVATE_FORMAT_DESCRIPTION: &str =
    "Zetta's own on-disk structures beside OpenZFS's; read-only for OpenZFS.";
/// The config key of the pool settings OpenZFS has no `pool_props` entry for.
pub const ZETTA_POOL_PROPS: &str = "org.zetta:pool_props";
/// `SPA_CONFIG_BLOCKSIZE`.
pub const CONFIG_BLOCK_BYTES: u32 = 1 << 14;
/// `SPA_OLD_MAXBLOCKSIZE`: `free_bpobj`'s block size.
const FREE_BPOBJ_BLOCK_BYTES: u32 = 128 << 10;

/// Where the directory's objects are, and what was last written to the ones rewritten
/// only on change.
#[derive(Clone, Debug, Default)]
pub struct MosDirectory {
    /// The pool's SPA version (`spa_version`, `ub_version`): 5000, or a legacy version
    /// (`zfeature::LEGACY_VERSIONS_WRITTEN`) whose pool has no feature objects.
    pub version: u64,
    pub config: u64,
    pub pool_props: u64,
    /// The feature ZAPs' state (`spa::zfeature`).
    pub features: FeatureState,
    written_props: Option<NvList>,
    written_errlog: Option<BTreeSet<Bookmark>>,
    written_scan: Option<[u64; super::scan::SCAN_PHYS_WORDS]>,
    /// The pool's checksum salt (`spa_cksum_salt`), which the zio pipeline keys blake3 with.
    pub checksum_salt: ChecksumSalt,
    /// Whether the directory lacks `checksum_salt` (a pool from before format 18): the next
    /// sync writes it.
    checksum_salt_missing: bool,
}

/// What an import reads from the directory.
pub struct LoadedDirectory {
    pub directory: MosDirectory,
    pub config: XdrNvList,
    pub errlog: BTreeSet<Bookmark>,
    pub props: NvList,
    pub scan: ScanStats,
}

fn corrupt(why: impl std::fmt::Display) -> SpaError {
    SpaError::Corrupt(format!("MOS object directory: {why}"))
}

fn zap_err(e: zap::ZapError) -> SpaError {
    crate::dsl::zap_error(e)
}

/// Whether a pool setting has an OpenZFS `pool_props` entry (a string value under a name
/// OpenZFS stores), or stays in Zetta's own object.
fn is_openzfs_pool_prop(name: &str) -> bool {
    !(name.starts_with("fs:")
        || name.starts_with("org.zetta:")
        || matches!(name, "altroot" | "bootfs" | "cachefile" | "readonly"))
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
    /// Creates object 1 and the objects it names, in a new pool's first txg (objects 2, 3
    /// and 5 are the caller's: history, error log, root DSL dir).
    pub fn create(
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
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
            (objdir::ROOT_DATASET, MOS_OBJECT_ROOT_DIR.0),
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
            (objdir::HISTORY, MOS_OBJECT_HISTORY.0),
            (objdir::ERRLOG_LAST, MOS_OBJECT_ERRLOG.0),
        ]);
        // `spa_feature_create_zap_objects` (a feature-flags pool only), Zetta's own
        // feature, then the requested features in order (`spa_sync_props` of
        // `feature@NAME=enabled`). A legacy pool has none of them.
        let mut features = FeatureState::default();
        if super::zfeature::version_has_features(version) {
            let feature_entries;
            (features, feature_entries) = FeatureState::create(mos, ctx)?;
            entries.extend(feature_entries);
            features.add_private(
                mos,
                ctx,
                FEATURE_PRIVATE_FORMAT,
                FEATURE_PRIVATE_FORMAT_DESCRIPTION,
                1,
            )?;
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
            version,
            config,
            pool_props,
            features,
            written_props: None,
            written_errlog: None,
            written_scan: None,
            checksum_salt,
            checksum_salt_missing: false,
        })
    }

    /// Reads the directory of an engine-written pool: the packed config, the pool
    /// properties (both objects merged), the last scan. The history, error log and root dir
    /// must be where the engine puts them.
    pub fn load(mos: &ObjectSet, ctx: &IoCtx<'_>) -> Result<LoadedDirectory, SpaError> {
        for (name, expected) in [
            (objdir::ROOT_DATASET, MOS_OBJECT_ROOT_DIR.0),
            (objdir::HISTORY, MOS_OBJECT_HISTORY.0),
            (objdir::ERRLOG_LAST, MOS_OBJECT_ERRLOG.0),
        ] {
            let found = required_u64(mos, ctx, name)?;
            if found != expected {
                return Err(corrupt(format!("{name} is {found}, not {expected}")));
            }
        }
        let config_obj = required_u64(mos, ctx, objdir::CONFIG)?;
        let packed = read_packed(mos, ctx, config_obj)?;
        let config = crate::nvpair_xdr::unpack(&packed)
            .map_err(|e| corrupt(format!("pool config: {e}")))?
            .list;
        let pool_props = required_u64(mos, ctx, objdir::POOL_PROPS)?;
        let mut props = match config.get(ZETTA_POOL_PROPS) {
            None => NvList::new(),
            Some(XdrValue::ByteArray(private)) => {
                NvList::decode(private).map_err(|e| corrupt(format!("{ZETTA_POOL_PROPS}: {e}")))?
            }
            Some(_) => return Err(corrupt(format!("{ZETTA_POOL_PROPS} is not a byte array"))),
        };
        for entry in zap::zap_list_all(mos, ctx, ObjectId(pool_props)).map_err(zap_err)? {
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
        let errlog = load_errlog(mos, ctx)?;
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
                version,
                config: config_obj,
                pool_props,
                features,
                written_props: Some(props.clone()),
                written_errlog: Some(errlog.clone()),
                written_scan: Some(scan.to_scan_phys()),
                checksum_salt: checksum_salt.unwrap_or_default(),
                checksum_salt_missing: checksum_salt.is_none(),
            },
            config,
            errlog,
            props,
            scan,
        })
    }

    /// The syncing context's update: the config every txg (with the pool settings OpenZFS
    /// has no entry for), the properties and the scan when they changed.
    pub fn sync(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        mut config: XdrNvList,
        props: &NvList,
        scan: &ScanStats,
    ) -> Result<(), SpaError> {
        let mut private = NvList::new();
        for (name, value) in &props.entries {
            let openzfs =
                matches!(value, crate::nvlist::NvValue::Str(_)) && is_openzfs_pool_prop(name);
            if !openzfs {
                private.entries.insert(name.clone(), value.clone());
            }
        }
        if !private.entries.is_empty() {
            config.add(ZETTA_POOL_PROPS, XdrValue::ByteArray(private.encode()));
        }
        let packed =
            crate::nvpair_xdr::pack(&config).map_err(|e| SpaError::Invalid(e.to_string()))?;
        write_packed(mos, ctx, self.config, &packed)?;
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
        if self.written_props.as_ref() != Some(props) {
            self.sync_props(mos, ctx, props)?;
            self.written_props = Some(props.clone());
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
        features.add_private(
            mos,
            ctx,
            FEATURE_PRIVATE_FORMAT,
            FEATURE_PRIVATE_FORMAT_DESCRIPTION,
            1,
        )?;
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
        let zap_obj = ObjectId(self.pool_props);
        for entry in zap::zap_list_all(mos, ctx, zap_obj).map_err(zap_err)? {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            zap::zap_remove(mos, ctx, zap_obj, &name).map_err(zap_err)?;
        }
        for (name, value) in &props.entries {
            let crate::nvlist::NvValue::Str(text) = value else {
                continue;
            };
            if !is_openzfs_pool_prop(name) {
                continue;
            }
            match super::openzfs::import::pool_prop_index_number(name, text) {
                Some(number) => zap::zap_update(mos, ctx, zap_obj, name, &[number]),
                None => {
                    let mut bytes = text.as_bytes().to_vec();
                    bytes.push(0);
                    zap::zap_update_bytes(mos, ctx, zap_obj, name, &bytes)
                }
            }
            .map_err(zap_err)?;
        }
        Ok(())
    }

    /// Rewrites `errlog_last` when the error set changed (`spa_errlog_sync`'s
    /// `sync_error_list`).
    pub fn sync_errlog(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        errlog: &BTreeSet<Bookmark>,
    ) -> Result<(), SpaError> {
        if self.written_errlog.as_ref() == Some(errlog) {
            return Ok(());
        }
        let zap_obj = MOS_OBJECT_ERRLOG;
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

/// The error set `errlog_last` holds.
fn load_errlog(mos: &ObjectSet, ctx: &IoCtx<'_>) -> Result<BTreeSet<Bookmark>, SpaError> {
    let mut errlog = BTreeSet::new();
    for entry in zap::zap_list_all(mos, ctx, MOS_OBJECT_ERRLOG).map_err(zap_err)? {
        let name = String::from_utf8_lossy(&entry.name);
        let bookmark = name_to_bookmark(&name)
            .ok_or_else(|| corrupt(format!("error log entry {name:?} is not a bookmark")))?;
        errlog.insert(bookmark);
    }
    Ok(errlog)
}
