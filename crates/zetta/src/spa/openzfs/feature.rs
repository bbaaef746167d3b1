//! Which OpenZFS pools Zetta can read: pool versions and read-incompatible features
//! (OpenZFS `include/sys/fs/zfs.h` `SPA_VERSION_*`, `module/zcommon/zfeature_common.c`
//! `zpool_feature_init`, `module/zfs/spa.c` `spa_ld_select_uberblock`).
//!
//! Theory. Before feature flags a pool's format was one number, 1..=28; since then it is
//! 5000 (`SPA_VERSION_FEATURES`) plus a set of named features. A feature registered
//! without `ZFEATURE_FLAG_READONLY_COMPAT` changes what a reader must understand; when it
//! is *active* the pool's label lists it in `features_for_read` (a nvlist of feature guids),
//! and OpenZFS refuses to open the pool if any name there is unknown to it. Features marked
//! read-only compatible (spacemap_histogram, async_destroy, userobj_accounting, …) never
//! appear there: a reader may ignore them.
//!
//! The *label's* `features_for_read` holds only the active features also flagged
//! `ZFEATURE_FLAG_MOS` (needed before the MOS itself can be read: hole_birth, embedded_data,
//! device_removal, draid, vdev_zaps_v2, raidz_expansion — `feature_sync` activates only
//! those in the label). The others (lz4, zstd, encryption, large_blocks, …) are listed in the
//! MOS's own `features_for_read` ZAP, which the import checks once the MOS is open; a listing
//! from labels alone can only judge the first group.
//!
//! [`READ_SUPPORTED`] is the honest list of read-incompatible features whose on-disk
//! formats Zetta's OpenZFS codecs decode (compression lz4 and zstd; checksums sha512, skein,
//! edonr and blake3; block
//! pointers with embedded data and hole birth; extensible datasets; large blocks; large
//! dnodes). Everything else in `features_for_read` makes the pool unreadable here.

/// `SPA_VERSION_INITIAL`.
pub const SPA_VERSION_INITIAL: u64 = 1;
/// `SPA_VERSION_BEFORE_FEATURES`.
pub const SPA_VERSION_BEFORE_FEATURES: u64 = 28;
/// `SPA_VERSION_FEATURES` (= `SPA_VERSION`, the newest).
pub const SPA_VERSION_FEATURES: u64 = 5000;

/// `SPA_VERSION_IS_SUPPORTED`: 1..=28 and 5000.
pub fn version_is_supported(version: u64) -> bool {
    (SPA_VERSION_INITIAL..=SPA_VERSION_BEFORE_FEATURES).contains(&version)
        || version == SPA_VERSION_FEATURES
}

/// Every feature OpenZFS 2.3 registers without `ZFEATURE_FLAG_READONLY_COMPAT` (the ones
/// that can appear in `features_for_read`), by guid.
pub const READ_INCOMPATIBLE: &[&str] = &[
    "org.illumos:lz4_compress",
    "com.joyent:multi_vdev_crash_dump",
    "com.delphix:hole_birth",
    "com.delphix:extensible_dataset",
    "com.delphix:embedded_data",
    "org.open-zfs:large_blocks",
    "org.zfsonlinux:large_dnode",
    "org.illumos:sha512",
    "org.illumos:skein",
    "org.illumos:edonr",
    "com.delphix:redaction_bookmarks",
    "com.delphix:redacted_datasets",
    "com.delphix:bookmark_written",
    "com.delphix:device_removal",
    "com.datto:bookmark_v2",
    "com.datto:encryption",
    "org.freebsd:zstd_compress",
    "org.openzfs:draid",
    "com.delphix:head_errlog",
    "org.openzfs:blake3",
    "com.klarasystems:vdev_zaps_v2",
    "com.delphix:redaction_list_spill",
    "org.openzfs:raidz_expansion",
    "org.zfsonlinux:longname",
];

/// Every feature OpenZFS 2.3 knows (`zfeature_common.c`), by guid: a v5000 pool that has not
/// enabled one of them gets OpenZFS 2.3's "Some supported features are not enabled" status.
pub const OPENZFS_2_3_FEATURES: &[&str] = &[
    "com.datto:bookmark_v2",
    "com.datto:encryption",
    "com.datto:resilver_defer",
    "com.delphix:async_destroy",
    "com.delphix:bookmark_written",
    "com.delphix:bookmarks",
    "com.delphix:device_removal",
    "com.delphix:embedded_data",
    "com.delphix:empty_bpobj",
    "com.delphix:enabled_txg",
    "com.delphix:extensible_dataset",
    "com.delphix:head_errlog",
    "com.delphix:hole_birth",
    "com.delphix:livelist",
    "com.delphix:log_spacemap",
    "com.delphix:obsolete_counts",
    "com.delphix:redacted_datasets",
    "com.delphix:redaction_bookmarks",
    "com.delphix:redaction_list_spill",
    "com.delphix:spacemap_histogram",
    "com.delphix:spacemap_v2",
    "com.delphix:zpool_checkpoint",
    "com.fudosecurity:block_cloning",
    "com.joyent:filesystem_limits",
    "com.joyent:multi_vdev_crash_dump",
    "com.klarasystems:fast_dedup",
    "com.klarasystems:large_microzap",
    "com.klarasystems:vdev_zaps_v2",
    "org.freebsd:zstd_compress",
    "org.illumos:edonr",
    "org.illumos:lz4_compress",
    "org.illumos:sha512",
    "org.illumos:skein",
    "org.open-zfs:large_blocks",
    "org.openzfs:blake3",
    "org.openzfs:device_rebuild",
    "org.openzfs:draid",
    "org.openzfs:raidz_expansion",
    "org.openzfs:zilsaxattr",
    "org.zfsonlinux:allocation_classes",
    "org.zfsonlinux:large_dnode",
    "org.zfsonlinux:longname",
    "org.zfsonlinux:project_quota",
    "org.zfsonlinux:userobj_accounting",
];

/// Whether `enabled` (the guids of a pool's `features_for_read` and `features_for_write`)
/// holds every feature OpenZFS 2.3 knows: if not, its listing says some are not enabled.
pub fn all_enabled(enabled: &std::collections::BTreeSet<String>) -> bool {
    OPENZFS_2_3_FEATURES.iter().all(|f| enabled.contains(*f))
}

/// The read-incompatible features Zetta reads.
pub const READ_SUPPORTED: &[&str] = &[
    "org.illumos:lz4_compress",
    "com.delphix:hole_birth",
    "com.delphix:extensible_dataset",
    "com.delphix:embedded_data",
    "org.open-zfs:large_blocks",
    "org.zfsonlinux:large_dnode",
    "org.freebsd:zstd_compress",
    "org.openzfs:blake3",
    // The salted checksums zcommon computes (checked against zdb's own words).
    "org.illumos:sha512",
    "org.illumos:skein",
    "org.illumos:edonr",
    // Encryption is per dataset: a pool that uses it is read, its encrypted datasets are
    // listed and refused (their keys are not here), as OpenZFS does without keys loaded.
    "com.datto:encryption",
    // They change only the error log's format and where vdev properties live; the read
    // path (labels, MOS, DSL, ZPL) never consults either. Pools made by OpenZFS 2.2+
    // carry them active as soon as they are enabled.
    "com.delphix:head_errlog",
    "com.klarasystems:vdev_zaps_v2",
];

/// Whether Zetta can read a pool that has `guid` in its `features_for_read`.
pub fn read_supported(guid: &str) -> bool {
    READ_SUPPORTED.contains(&guid)
}

/// The names in a label's `features_for_read` that Zetta cannot read, in label order
/// (what OpenZFS lists as unsupported). Names that are not UTF-8 are shown lossily.
pub fn unsupported_for_read(features_for_read: &crate::nvpair_xdr::XdrNvList) -> Vec<String> {
    features_for_read
        .pairs
        .iter()
        .map(|p| String::from_utf8_lossy(&p.name).into_owned())
        .filter(|name| !read_supported(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvpair_xdr::{XdrNvList, XdrValue};

    // Why: OpenZFS accepts exactly versions 1..=28 and 5000; v999 (a fixture) and 29..4999
    // must be refused as unsupported versions, not misread.
    #[test]
    fn only_legacy_versions_and_5000_are_supported() {
        for v in [1, 15, 28, 5000] {
            assert!(version_is_supported(v), "{v}");
        }
        for v in [0, 29, 999, 4999, 5001, u64::MAX] {
            assert!(!version_is_supported(v), "{v}");
        }
    }

    // Why: a pool OpenZFS 2.3 created with every feature on was listed "Some supported
    // features are not enabled" (the labels cannot say which are enabled; the MOS can).
    #[test]
    fn a_pool_with_every_2_3_feature_enabled_is_not_told_to_upgrade() {
        let mut enabled: std::collections::BTreeSet<String> =
            OPENZFS_2_3_FEATURES.iter().map(|f| f.to_string()).collect();
        assert!(all_enabled(&enabled));
        enabled.remove("com.fudosecurity:block_cloning");
        assert!(!all_enabled(&enabled));
        for f in READ_INCOMPATIBLE {
            assert!(OPENZFS_2_3_FEATURES.contains(f), "{f}");
        }
    }

    // Why: only features OpenZFS marks as needed for reading can block a read-only import,
    // and the supported list must be a subset of them (a read-only-compatible name there
    // would be a lie that never matters, a missing one refuses readable pools).
    #[test]
    fn supported_features_are_read_incompatible_ones_and_unknown_ones_are_listed() {
        for f in READ_SUPPORTED {
            assert!(READ_INCOMPATIBLE.contains(f), "{f}");
        }
        let mut ffr = XdrNvList::new();
        ffr.add("com.delphix:hole_birth", XdrValue::Uint64(1));
        ffr.add("org.illumos:edonr", XdrValue::Uint64(1));
        ffr.add("org.openzfs:draid", XdrValue::Uint64(1));
        ffr.add("com.example:future", XdrValue::Uint64(1));
        assert_eq!(
            unsupported_for_read(&ffr),
            vec!["org.openzfs:draid", "com.example:future"]
        );
    }
}
