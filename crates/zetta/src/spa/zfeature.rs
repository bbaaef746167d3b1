//! Pool feature flags as OpenZFS keeps them (`module/zfs/zfeature.c`,
//! `module/zcommon/zfeature_common.c` `zpool_feature_init`): the features Zetta supports,
//! and each pool's enabled set with its reference counts in the MOS.
//!
//! Theory. A version-5000 pool names its on-disk extensions instead of numbering them. A
//! feature is *disabled* (absent), *enabled* (listed with reference count 0: the pool may
//! start using it at any txg) or *active* (count > 0: structures of it are on disk). Where
//! it is listed depends on one flag: a feature registered `READONLY_COMPAT` sits in the
//! MOS ZAP `features_for_write` (a reader that lacks it may still open the pool
//! read-only), every other one in `features_for_read`. Enabling (`feature_enable_sync`)
//! enables the feature's dependencies first, writes its description into
//! `feature_descriptions`, its count (1 for `ACTIVATE_ON_ENABLE` features, else 0), and,
//! once `enabled_txg` is itself enabled, the enabling txg into `feature_enabled_txg` while
//! counting one more reference on `enabled_txg` (so `enabled_txg` counts itself and every
//! feature enabled after it, and none enabled before). Active `MOS` features (hole_birth,
//! embedded_data) are also named in the label's `features_for_read`, because a reader
//! needs them before the MOS can be read.
//!
//! ```text
//! MOS object 1 ─ features_for_read    ZAP  guid → u64 count  (non READONLY_COMPAT)
//!               features_for_write   ZAP  guid → u64 count  (READONLY_COMPAT)
//!               feature_descriptions ZAP  guid → description, a NUL-ended string
//!               feature_enabled_txg  ZAP  guid → txg         (made with the first entry)
//! ```
//!
//! What Zetta supports is [`ZETTA_FEATURES`]: only features whose structures it reads and
//! whose count it keeps true. The counts Zetta keeps are the fixed ones: an
//! activate-on-enable feature is 1 for good (lz4_compress, hole_birth, embedded_data: the
//! write path consults [`FeatureState::is_active`] through `Zio` before it writes a hole
//! with its birth or an embedded pointer), `enabled_txg` counts its entries, and the
//! features Zetta never uses stay 0 (async_destroy: destroy is synchronous; empty_bpobj:
//! dead lists never share the empty bpobj). Left out on purpose: spacemap_histogram (space
//! maps are written without the histogram, `zetta_metaslab::space_map`), bookmark_v2,
//! bookmark_written and every other feature whose structures Zetta does not write OpenZFS's way.
//!
//! `bookmarks` counts the heads whose dataset ZAP names a bookmarks ZAP (`dsl::bookmark`,
//! [`FeatureState::count_use`]; version-1 bookmarks only).
//!
//! Per-dataset features (format 18; `dsl_dataset_activate_feature`): large_blocks,
//! sha512, skein, zstd_compress and blake3 count the dataset objects (heads and
//! snapshots) that carry them. A dataset's sync collects what its new blocks need
//! (`dmu::DatasetFeature::of_block`: lsize above 128K, the checksum, zstd compression;
//! `dsl_dataset_block_born`) and [`FeatureState::activate_dataset`] gives the dataset each
//! one it lacks: the dataset object becomes a ZAP (`dmu_object_zapify`: type
//! `DMU_OTN_ZAP_METADATA`, its `dsl_dataset_phys_t` bonus kept, one more reference on
//! extensible_dataset) with the entry guid = 0, and the feature one more reference. A
//! snapshot takes its head's entries, a clone its origin's; destroying a dataset object
//! gives back one reference per entry and the extensible_dataset one
//! ([`FeatureState::deactivate_dataset`], `dmu_object_free_zapified`). Not followed:
//! rollback and receive leave the head's entries as they are (OpenZFS swaps them with the
//! clone it rolls back through); the counts stay equal to the entries, which is what
//! zdb verifies.
//!
//! Formats 14-25 also wrote `org.zetta:private_format`, an active write-only feature outside
//! this table; since format 26 a Zetta pool carries no feature but OpenZFS's.
//!
//! Legacy versions. A pool below 5000 has no feature objects at all: every feature reads
//! "disabled" and the write path writes as without them. Zetta writes version 28
//! ([`LEGACY_VERSIONS_WRITTEN`]), where every older version gate (system attributes at
//! 24, bpobj dead lists and `$FREE` at 26) is open; `Spa::upgrade` raises the version and
//! the object directory makes the feature ZAPs when it crosses 5000.
//!
//! Invariants: the in-memory state is what the MOS says plus the pending enables, which
//! the syncing context writes (`FeatureState::sync`) in the order they were enabled; a
//! feature is enabled only after its dependencies; a count is never written below 0.

use super::SpaError;
use crate::dmu::{DatasetFeature, IoCtx, ObjectSet};
use crate::dsl::openzfs::{objdir, ot};
use crate::types::ObjectId;
use crate::zap::{self, ZapValue};
use std::collections::BTreeMap;

/// One feature as `zfeature_register` describes it.
#[derive(Debug, PartialEq, Eq)]
pub struct FeatureInfo {
    /// `fi_guid`: the reversed-DNS name the MOS keys it by.
    pub guid: &'static str,
    /// `fi_uname`: the short name of `feature@NAME`.
    pub name: &'static str,
    /// `fi_desc`, word for word as OpenZFS 2.3 registers it.
    pub description: &'static str,
    /// `ZFEATURE_FLAG_READONLY_COMPAT`: listed in `features_for_write`.
    pub readonly_compat: bool,
    /// `ZFEATURE_FLAG_MOS`: once active, named in the label's `features_for_read`.
    pub mos: bool,
    /// `ZFEATURE_FLAG_ACTIVATE_ON_ENABLE`: count 1 from the txg it is enabled.
    pub activate_on_enable: bool,
    /// `ZFEATURE_FLAG_PER_DATASET`.
    pub per_dataset: bool,
    /// `fi_depends`, by short name.
    pub depends: &'static [&'static str],
}

const fn feature(
    guid: &'static str,
    name: &'static str,
    description: &'static str,
    flags: (bool, bool, bool, bool),
    depends: &'static [&'static str],
) -> FeatureInfo {
    FeatureInfo {
        guid,
        name,
        description,
        readonly_compat: flags.0,
        mos: flags.1,
        activate_on_enable: flags.2,
        per_dataset: flags.3,
        depends,
    }
}

/// (readonly_compat, mos, activate_on_enable, per_dataset).
const RO: (bool, bool, bool, bool) = (true, false, false, false);
const NONE: (bool, bool, bool, bool) = (false, false, false, false);
const AOE: (bool, bool, bool, bool) = (false, false, true, false);
const MOS_AOE: (bool, bool, bool, bool) = (false, true, true, false);
const PER_DS: (bool, bool, bool, bool) = (false, false, false, true);
const RO_PER_DS: (bool, bool, bool, bool) = (true, false, false, true);
const EXT: &[&str] = &["extensible_dataset"];

/// userobj_accounting's guid: a new ZPL object set counts objects where it is enabled.
pub const USEROBJ_ACCOUNTING_GUID: &str = "org.zfsonlinux:userobj_accounting";

/// The features Zetta supports, in OpenZFS's `spa_feature_t` order (the order `zpool
/// create` enables them in and `zpool get all` and `zpool upgrade -v` list them in).
pub const ZETTA_FEATURES: &[FeatureInfo] = &[
    feature(
        "com.delphix:async_destroy",
        "async_destroy",
        "Destroy filesystems asynchronously.",
        RO,
        &[],
    ),
    feature(
        "com.delphix:empty_bpobj",
        "empty_bpobj",
        "Snapshots use less space.",
        RO,
        &[],
    ),
    feature(
        "org.illumos:lz4_compress",
        "lz4_compress",
        "LZ4 compression algorithm support.",
        AOE,
        &[],
    ),
    feature(
        "com.delphix:enabled_txg",
        "enabled_txg",
        "Record txg at which a feature is enabled",
        RO,
        &[],
    ),
    feature(
        "com.delphix:hole_birth",
        "hole_birth",
        "Retain hole birth txg for more precise zfs send",
        MOS_AOE,
        &["enabled_txg"],
    ),
    feature(
        "com.delphix:extensible_dataset",
        "extensible_dataset",
        "Enhanced dataset functionality, used by other features.",
        NONE,
        &[],
    ),
    feature(
        "com.delphix:embedded_data",
        "embedded_data",
        "Blocks which compress very well use even less space.",
        MOS_AOE,
        &[],
    ),
    feature(
        "com.delphix:bookmarks",
        "bookmarks",
        "\"zfs bookmark\" command",
        RO,
        EXT,
    ),
    feature(
        "org.open-zfs:large_blocks",
        "large_blocks",
        "Support for blocks larger than 128KB.",
        PER_DS,
        EXT,
    ),
    feature(
        "org.illumos:sha512",
        "sha512",
        "SHA-512/256 hash algorithm.",
        PER_DS,
        EXT,
    ),
    feature(
        "org.illumos:skein",
        "skein",
        "Skein hash algorithm.",
        PER_DS,
        EXT,
    ),
    feature(
        "org.zfsonlinux:userobj_accounting",
        "userobj_accounting",
        "User/Group object accounting.",
        RO_PER_DS,
        EXT,
    ),
    feature(
        "org.freebsd:zstd_compress",
        "zstd_compress",
        "zstd compression algorithm support.",
        PER_DS,
        EXT,
    ),
    feature(
        "org.openzfs:blake3",
        "blake3",
        "BLAKE3 hash algorithm.",
        PER_DS,
        EXT,
    ),
];

/// The feature of a short name (`zfeature_lookup_name`).
pub fn lookup_name(name: &str) -> Option<&'static FeatureInfo> {
    ZETTA_FEATURES.iter().find(|f| f.name == name)
}

/// The feature of a guid (`zfeature_lookup_guid`).
pub fn lookup_guid(guid: &str) -> Option<&'static FeatureInfo> {
    ZETTA_FEATURES.iter().find(|f| f.guid == guid)
}

/// Every supported feature's short name, in table order (what `zpool create` enables).
pub fn all_names() -> Vec<&'static str> {
    ZETTA_FEATURES.iter().map(|f| f.name).collect()
}

/// The legacy pool versions Zetta writes (`zpool create -o version=N`, `zpool upgrade -V
/// N`, `zpool set version=N`): 28 (`SPA_VERSION_BEFORE_FEATURES`, the last before feature
/// flags) and 23 (zfs-fuse's). Every gate OpenZFS keys on a version below 28
/// (`SPA_VERSION_SA` 24 for ZPL 5, `SPA_VERSION_DEADLISTS` 26 for bpobj dead lists and
/// `$FREE`, `SPA_VERSION_DIR_CLONES` 26 for `dd_clones`) is open at 28, so a version-28
/// pool differs from a 5000 one only in its missing feature objects. At 23 they are shut:
/// ZPL 4 filesystems (`zpl::zpl_version_for_spa`), 32-byte bpobj headers
/// (`dsl::snapshot::bpobj_bonus_bytes`), no `$FREE`, `free_bpobj` nor `dd_clones`; 25's
/// scan object and 27-28 change nothing Zetta writes. Versions 24-27 and below 23 stay
/// refused (nothing tests their mixtures of gates).
pub const LEGACY_VERSIONS_WRITTEN: &[u64] = &[
    SPA_VERSION_ZFS_FUSE,
    crate::spa::openzfs::feature::SPA_VERSION_BEFORE_FEATURES,
];

/// zfs-fuse's pool version (23): ZPL 4 znodes (below `SPA_VERSION_SA` 24), bpobjs with
/// bplist-sized headers, no `$FREE`, `free_bpobj` nor `dd_clones` (below 26).
pub const SPA_VERSION_ZFS_FUSE: u64 = 23;

/// Whether Zetta writes pools of this version: 5000 or one of [`LEGACY_VERSIONS_WRITTEN`].
pub fn version_is_written(version: u64) -> bool {
    version == crate::spa::openzfs::feature::SPA_VERSION_FEATURES
        || LEGACY_VERSIONS_WRITTEN.contains(&version)
}

/// Whether a pool of this version has feature flags (`spa_version >= SPA_VERSION_FEATURES`).
pub fn version_has_features(version: u64) -> bool {
    version >= crate::spa::openzfs::feature::SPA_VERSION_FEATURES
}

/// A feature's state as `zpool get` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureStatus {
    Disabled,
    Enabled,
    Active,
}

impl FeatureStatus {
    pub fn name(self) -> &'static str {
        match self {
            FeatureStatus::Disabled => "disabled",
            FeatureStatus::Enabled => "enabled",
            FeatureStatus::Active => "active",
        }
    }
}

/// Where the feature objects are and what they hold (`spa_feat_*_obj`,
/// `spa_feat_refcount_cache`), plus the enables the next sync writes.
#[derive(Clone, Debug, Default)]
pub struct FeatureState {
    for_read: u64,
    for_write: u64,
    descriptions: u64,
    /// 0 until the first `feature_enabled_txg` entry.
    enabled_txg_obj: u64,
    /// Every listed feature (both ZAPs, foreign guids included) by guid: its count.
    pub refcounts: BTreeMap<String, u64>,
    /// `feature_enabled_txg`: guid → the txg it was enabled in.
    pub enabled_txgs: BTreeMap<String, u64>,
    /// Features enabled since the last sync, dependencies first.
    pending: Vec<&'static FeatureInfo>,
}

/// The object directory entries naming the three feature ZAPs, in OpenZFS's order.
pub type DirectoryEntries = [(&'static str, u64); 3];

fn corrupt(why: impl std::fmt::Display) -> SpaError {
    SpaError::Corrupt(format!("feature flags: {why}"))
}

fn zap_err(e: zap::ZapError) -> SpaError {
    crate::dsl::zap_error(e)
}

/// Every entry of a feature ZAP as guid → one integer.
fn read_counts(
    mos: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    what: &str,
) -> Result<BTreeMap<String, u64>, SpaError> {
    let mut counts = BTreeMap::new();
    for entry in zap::zap_list_all(mos, ctx, ObjectId(object)).map_err(zap_err)? {
        let guid = String::from_utf8_lossy(&entry.name).into_owned();
        match entry.value {
            ZapValue::U64s(words) if words.len() == 1 => {
                counts.insert(guid, words[0]);
            }
            _ => return Err(corrupt(format!("{what} entry {guid} is not one integer"))),
        }
    }
    Ok(counts)
}

impl FeatureState {
    /// `spa_feature_create_zap_objects`: the three ZAPs of a new pool, named in the object
    /// directory by the caller (their entries are returned in OpenZFS's order).
    pub fn create(
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
    ) -> Result<(FeatureState, DirectoryEntries), SpaError> {
        let mut objects = [0u64; 3];
        for object in &mut objects {
            *object = zap::zap_create(mos, ctx, ot::ZAP_METADATA)
                .map_err(zap_err)?
                .0;
        }
        let state = FeatureState {
            for_read: objects[0],
            for_write: objects[1],
            descriptions: objects[2],
            ..FeatureState::default()
        };
        Ok((
            state,
            [
                (objdir::FEATURES_FOR_READ, objects[0]),
                (objdir::FEATURES_FOR_WRITE, objects[1]),
                (objdir::FEATURE_DESCRIPTIONS, objects[2]),
            ],
        ))
    }

    /// Reads a pool's feature objects (`spa_ld_check_features`'s reading part), given
    /// the object directory's entries for them.
    pub fn load(
        mos: &ObjectSet,
        ctx: &IoCtx<'_>,
        for_read: u64,
        for_write: u64,
        descriptions: u64,
        enabled_txg_obj: Option<u64>,
    ) -> Result<FeatureState, SpaError> {
        let mut refcounts = read_counts(mos, ctx, for_read, objdir::FEATURES_FOR_READ)?;
        let for_write_counts = read_counts(mos, ctx, for_write, objdir::FEATURES_FOR_WRITE)?;
        for (guid, &count) in &for_write_counts {
            if refcounts.insert(guid.clone(), count).is_some() {
                return Err(corrupt(format!("{guid} is listed for read and for write")));
            }
        }
        let enabled_txgs = match enabled_txg_obj {
            Some(object) => read_counts(mos, ctx, object, objdir::FEATURE_ENABLED_TXG)?,
            None => BTreeMap::new(),
        };
        for (guid, count) in &refcounts {
            let Some(info) = lookup_guid(guid) else {
                continue;
            };
            // A supported feature in the wrong ZAP would be written to the other one.
            let in_write = for_write_counts.contains_key(guid.as_str());
            if in_write != info.readonly_compat {
                return Err(corrupt(format!("{guid} is in the wrong feature ZAP")));
            }
            if info.activate_on_enable && *count == 0 {
                return Err(corrupt(format!("{guid} is enabled with no reference")));
            }
        }
        Ok(FeatureState {
            for_read,
            for_write,
            descriptions,
            enabled_txg_obj: enabled_txg_obj.unwrap_or(0),
            refcounts,
            enabled_txgs,
            pending: Vec::new(),
        })
    }

    /// Whether the pool has its feature objects (a legacy pool has none).
    pub fn has_objects(&self) -> bool {
        self.for_read != 0
    }

    /// Whether a feature (by guid) is enabled, on disk or pending.
    pub fn is_enabled(&self, guid: &str) -> bool {
        self.refcounts.contains_key(guid) || self.pending.iter().any(|f| f.guid == guid)
    }

    /// `spa_feature_is_active`: its count is above zero (pending activate-on-enable
    /// features count, as their first txg writes as if they were active).
    pub fn is_active(&self, guid: &str) -> bool {
        self.refcounts.get(guid).is_some_and(|&c| c > 0)
            || self
                .pending
                .iter()
                .any(|f| f.guid == guid && f.activate_on_enable)
    }

    /// A supported feature's state as `zpool get feature@NAME` prints it.
    pub fn status(&self, info: &FeatureInfo) -> FeatureStatus {
        if self.is_active(info.guid) {
            FeatureStatus::Active
        } else if self.is_enabled(info.guid) {
            FeatureStatus::Enabled
        } else {
            FeatureStatus::Disabled
        }
    }

    /// The listed guids no supported feature has (`unsupported@` rows), with their counts.
    pub fn unsupported(&self) -> Vec<(&str, u64)> {
        self.refcounts
            .iter()
            .filter(|(guid, _)| lookup_guid(guid).is_none())
            .map(|(guid, count)| (guid.as_str(), *count))
            .collect()
    }

    /// The supported features not enabled, in table order (`zpool upgrade`'s list).
    pub fn disabled(&self) -> Vec<&'static FeatureInfo> {
        ZETTA_FEATURES
            .iter()
            .filter(|f| !self.is_enabled(f.guid))
            .collect()
    }

    /// `spa_feature_enable`: enables a feature and, first, what it depends on. The next
    /// sync writes it. Returns whether anything was not enabled yet.
    pub fn enable(&mut self, info: &'static FeatureInfo) -> bool {
        if self.is_enabled(info.guid) {
            return false;
        }
        for dependency in info.depends {
            let Some(dependency) = lookup_name(dependency) else {
                debug_assert!(false, "{} depends on an unknown feature", info.name);
                continue;
            };
            self.enable(dependency);
        }
        self.pending.push(info);
        true
    }

    /// The enables waiting for the syncing context, in order.
    pub fn pending_enables(&self) -> Vec<&'static FeatureInfo> {
        self.pending.clone()
    }

    /// Whether enables wait for the syncing context.
    pub fn is_dirty(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The label's `features_for_read` (`spa_label_features`): the active MOS features.
    pub fn label_features(&self) -> Vec<&'static str> {
        ZETTA_FEATURES
            .iter()
            .filter(|f| f.mos && self.is_active(f.guid))
            .map(|f| f.guid)
            .collect()
    }

    /// Writes a feature's count into its ZAP (`feature_sync`).
    fn write_count(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        guid: &str,
        readonly_compat: bool,
        count: u64,
    ) -> Result<(), SpaError> {
        let object = if readonly_compat {
            self.for_write
        } else {
            self.for_read
        };
        zap::zap_update(mos, ctx, ObjectId(object), guid, &[count]).map_err(zap_err)?;
        self.refcounts.insert(guid.to_string(), count);
        Ok(())
    }

    fn write_description(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        guid: &str,
        description: &str,
    ) -> Result<(), SpaError> {
        let mut text = description.as_bytes().to_vec();
        text.push(0);
        zap::zap_update_bytes(mos, ctx, ObjectId(self.descriptions), guid, &text)
            .map_err(zap_err)?;
        Ok(())
    }

    /// `spa_feature_incr`/`spa_feature_decr` in the syncing context: the new count is
    /// written at once. A feature enabled in this very txg is written first, so its count
    /// starts from its entry. A count never goes below zero (corruption).
    fn change_count(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        info: &'static FeatureInfo,
        increment: bool,
    ) -> Result<(), SpaError> {
        if self.pending.iter().any(|f| f.guid == info.guid) {
            self.sync(mos, ctx)?;
        }
        let Some(&count) = self.refcounts.get(info.guid) else {
            return Err(corrupt(format!("{} is used but not enabled", info.guid)));
        };
        let count = if increment {
            count.checked_add(1)
        } else {
            count.checked_sub(1)
        }
        .ok_or_else(|| corrupt(format!("{}'s count leaves its range", info.guid)))?;
        self.write_count(mos, ctx, info.guid, info.readonly_compat, count)
    }

    /// The per-dataset features dataset object `dataset` carries: its ZAP entries once it
    /// is a ZAP (`load_zfeature`), else none.
    pub fn dataset_features(
        mos: &ObjectSet,
        ctx: &IoCtx<'_>,
        dataset: u64,
    ) -> Result<u8, SpaError> {
        let dnode = mos.dnode(ctx, ObjectId(dataset))?;
        if dnode.object_type != ot::ZAP_METADATA {
            return Ok(0);
        }
        let mut features = 0;
        for entry in zap::zap_list_all(mos, ctx, ObjectId(dataset)).map_err(zap_err)? {
            let guid = String::from_utf8_lossy(&entry.name);
            if let Some(feature) = DatasetFeature::ALL
                .into_iter()
                .find(|f| lookup_name(f.name()).is_some_and(|info| info.guid == guid))
            {
                features |= feature as u8;
            }
        }
        Ok(features)
    }

    /// `dsl_dataset_activate_feature` for every feature of `features` the dataset does not
    /// carry yet: the dataset object becomes a ZAP (`dmu_object_zapify`, one more
    /// reference on extensible_dataset), gets the entry guid = 0, and the feature one more
    /// reference. A feature that is not enabled is left alone (the write that used it was
    /// admitted without it: a raw receive), as no count may be written for it.
    pub fn activate_dataset(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dataset: u64,
        features: u8,
    ) -> Result<(), SpaError> {
        if features == 0 {
            return Ok(());
        }
        let carried = Self::dataset_features(mos, ctx, dataset)?;
        for feature in DatasetFeature::ALL {
            let bit = feature as u8;
            if features & bit == 0 || carried & bit != 0 {
                continue;
            }
            let Some(info) = lookup_name(feature.name()) else {
                continue;
            };
            if !self.is_enabled(info.guid) {
                continue;
            }
            self.zapify_dataset(mos, ctx, dataset)?;
            self.change_count(mos, ctx, info, true)?;
            zap::zap_add(mos, ctx, ObjectId(dataset), info.guid, &[0]).map_err(zap_err)?;
        }
        Ok(())
    }

    /// `dsl_dataset_zapify`: dataset object `dataset` becomes a ZAP (`dmu_object_zapify`:
    /// type `DMU_OTN_ZAP_METADATA`, its bonus kept) with one more reference on
    /// extensible_dataset, unless it is one already.
    pub fn zapify_dataset(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dataset: u64,
    ) -> Result<(), SpaError> {
        if mos.dnode(ctx, ObjectId(dataset))?.object_type == ot::ZAP_METADATA {
            return Ok(());
        }
        zap::zap_zapify(mos, ctx, ObjectId(dataset), ot::ZAP_METADATA).map_err(zap_err)?;
        if let Some(extensible) = lookup_name("extensible_dataset") {
            self.change_count(mos, ctx, extensible, true)?;
        }
        Ok(())
    }

    /// One reference more (`increment`) or less on the enabled feature `name`
    /// (`spa_feature_incr`/`spa_feature_decr`); a feature not enabled is left alone.
    pub fn count_use(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        name: &str,
        increment: bool,
    ) -> Result<(), SpaError> {
        match lookup_name(name) {
            Some(info) if self.is_enabled(info.guid) => {
                self.change_count(mos, ctx, info, increment)
            }
            _ => Ok(()),
        }
    }

    /// Before dataset object `dataset` is freed (`dsl_destroy_*_sync_impl`): one reference
    /// less on each feature it carries and, when it is a ZAP, on extensible_dataset
    /// (`dmu_object_free_zapified`).
    pub fn deactivate_dataset(
        &mut self,
        mos: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dataset: u64,
    ) -> Result<(), SpaError> {
        if mos.dnode(ctx, ObjectId(dataset))?.object_type != ot::ZAP_METADATA {
            return Ok(());
        }
        let carried = Self::dataset_features(mos, ctx, dataset)?;
        for feature in DatasetFeature::ALL {
            if carried & feature as u8 == 0 {
                continue;
            }
            if let Some(info) = lookup_name(feature.name()) {
                self.change_count(mos, ctx, info, false)?;
            }
        }
        if let Some(extensible) = lookup_name("extensible_dataset") {
            self.change_count(mos, ctx, extensible, false)?;
        }
        Ok(())
    }

    /// The syncing context's part (`feature_enable_sync` for each pending enable, in the
    /// order they were enabled): description, count, and the enabling txg.
    pub fn sync(&mut self, mos: &mut ObjectSet, ctx: &IoCtx<'_>) -> Result<(), SpaError> {
        let enabled_txg = lookup_name("enabled_txg").map(|f| f.guid);
        for info in std::mem::take(&mut self.pending) {
            if self.refcounts.contains_key(info.guid) {
                continue;
            }
            self.write_description(mos, ctx, info.guid, info.description)?;
            let initial = u64::from(info.activate_on_enable);
            self.write_count(mos, ctx, info.guid, info.readonly_compat, initial)?;
            let Some(enabled_txg) = enabled_txg else {
                continue;
            };
            let Some(&count) = self.refcounts.get(enabled_txg) else {
                continue;
            };
            if self.enabled_txg_obj == 0 {
                let object = zap::zap_create(mos, ctx, ot::ZAP_METADATA).map_err(zap_err)?;
                zap::zap_add(
                    mos,
                    ctx,
                    ObjectId(objdir::DIRECTORY_OBJECT),
                    objdir::FEATURE_ENABLED_TXG,
                    &[object.0],
                )
                .map_err(zap_err)?;
                self.enabled_txg_obj = object.0;
            }
            let count = count
                .checked_add(1)
                .ok_or_else(|| corrupt("enabled_txg's count overflows"))?;
            self.write_count(mos, ctx, enabled_txg, true, count)?;
            zap::zap_add(
                mos,
                ctx,
                ObjectId(self.enabled_txg_obj),
                info.guid,
                &[ctx.txg.0],
            )
            .map_err(zap_err)?;
            self.enabled_txgs.insert(info.guid.to_string(), ctx.txg.0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: the table is what `zpool upgrade -v` prints and what the MOS lists; a
    // dependency outside it would be enabled as nothing, and a per-dataset feature that
    // does not depend on extensible_dataset is one OpenZFS refuses to register.
    #[test]
    fn table_is_consistent_with_openzfs_rules() {
        for info in ZETTA_FEATURES {
            for dependency in info.depends {
                assert!(lookup_name(dependency).is_some(), "{}", info.name);
            }
            assert!(!(info.readonly_compat && info.mos), "{}", info.name);
            if info.per_dataset {
                assert!(info.depends.contains(&"extensible_dataset"));
            }
            assert!(info.guid.ends_with(&format!(":{}", info.name)));
            let known = crate::spa::openzfs::feature::OPENZFS_2_3_FEATURES.contains(&info.guid);
            assert!(known, "{}", info.guid);
        }
    }

    // Why: format 17 left the per-dataset features at 0 while datasets used them, so
    // OpenZFS saw zstd blocks in a pool that said zstd_compress was never used. Each
    // dataset object (head or snapshot) that wrote a zstd block, or was made from one,
    // counts once, carries the ZAP entry, and gives it back when it is destroyed; the
    // dataset object turned ZAP counts on extensible_dataset too.
    #[test]
    fn per_dataset_features_count_dataset_objects() {
        use crate::spa::tests::{mem_devices, single_pool};
        let devices = mem_devices(1, 256 << 20);
        let mut spa = single_pool("tank", &devices);
        let count = |spa: &crate::spa::Spa, name: &str| {
            let info = lookup_name(name).unwrap();
            spa.dp.directory.features.refcounts[info.guid]
        };
        spa.create_filesystem("tank/z").unwrap();
        spa.set_local_prop("tank/z", "compression", "zstd").unwrap();
        spa.create_filesystem("tank/plain").unwrap();
        let text: Vec<u8> = b"zstd compresses this text. ".repeat(4000);
        for fs in ["tank/z", "tank/plain"] {
            spa.with_dataset(fs, |os, ctx| {
                let id = ObjectId(1000);
                os.create_object_at(ctx, id, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
                os.write(ctx, id, 0, &text)
            })
            .unwrap();
        }
        spa.sync().unwrap();
        assert_eq!(count(&spa, "zstd_compress"), 1);
        // Every dataset object is a ZAP: each carries userobj_accounting.
        assert_eq!(
            count(&spa, "extensible_dataset"),
            count(&spa, "userobj_accounting")
        );
        assert_eq!(count(&spa, "blake3"), 0);
        spa.snapshot(&["tank/z@s".to_string()]).unwrap();
        spa.clone_snapshot("tank/z@s", "tank/c").unwrap();
        spa.sync().unwrap();
        assert_eq!(count(&spa, "zstd_compress"), 3);
        // Every dataset object is a ZAP: each carries userobj_accounting.
        assert_eq!(
            count(&spa, "extensible_dataset"),
            count(&spa, "userobj_accounting")
        );
        let objects: Vec<u64> = ["tank/z", "tank/c"]
            .iter()
            .map(|name| spa.lookup_dataset(name).unwrap().unwrap())
            .collect();
        for object in objects {
            let ctx = spa.ctx();
            let mos = &spa.dp.mos;
            assert_eq!(
                mos.dnode(&ctx, ObjectId(object)).unwrap().object_type,
                ot::ZAP_METADATA
            );
            let entries: Vec<_> = zap::zap_list_all(mos, &ctx, ObjectId(object))
                .unwrap()
                .into_iter()
                .filter(|e| e.name != USEROBJ_ACCOUNTING_GUID.as_bytes())
                .collect();
            assert_eq!(entries.len(), 1);
            assert_eq!(entries[0].name, b"org.freebsd:zstd_compress");
            assert_eq!(entries[0].value, ZapValue::U64s(vec![0]));
        }
        spa.destroy_filesystem("tank/c").unwrap();
        spa.destroy_snapshot("tank/z@s").unwrap();
        spa.sync().unwrap();
        assert_eq!(count(&spa, "zstd_compress"), 1);
        // Every dataset object is a ZAP: each carries userobj_accounting.
        assert_eq!(
            count(&spa, "extensible_dataset"),
            count(&spa, "userobj_accounting")
        );
        spa.export().unwrap();
        let spa = crate::spa::tests::reimport(&devices).unwrap();
        assert_eq!(count(&spa, "zstd_compress"), 1);
    }

    // Why: enabling hole_birth alone (zpool create -d -o feature@hole_birth=enabled)
    // must enable enabled_txg first, as `feature_enable_sync` does.
    #[test]
    fn enabling_a_feature_enables_its_dependencies_first() {
        let mut state = FeatureState::default();
        assert!(state.enable(lookup_name("hole_birth").unwrap()));
        let order: Vec<&str> = state.pending.iter().map(|f| f.name).collect();
        assert_eq!(order, ["enabled_txg", "hole_birth"]);
        assert!(!state.enable(lookup_name("enabled_txg").unwrap()));
        assert!(state.is_active("com.delphix:hole_birth"));
        assert!(!state.is_active("com.delphix:enabled_txg"));
        assert_eq!(state.label_features(), ["com.delphix:hole_birth"]);
    }
}
