//! Feature flags as OpenZFS 2.3 keeps and shows them (issue 14 item 1, format 17):
//! `zpool create -d / -o feature@ / -o version= / -o compatibility=`, `zpool get`,
//! `zpool upgrade` (list, -v, POOL, -a), `zpool set feature@`, `zpool status`'s note,
//! and OpenZFS's own zdb reading the feature ZAPs Zetta wrote.

mod common;

use common::openzfs::oracle;
use common::Lab;

const DISK_SIZE_BYTES: u64 = 256 << 20;

fn zpool(lab: &Lab, args: &[&str]) -> common::Output {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0").env(
        "ZETTA_COMPATIBILITY_D",
        oracle::oracle_prefix().join("usr/share/zfs/compatibility.d"),
    );
    lab.run(command)
}

fn zpool_ok(lab: &Lab, args: &[&str]) -> String {
    let out = zpool(lab, args);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
    out.stdout
}

/// `zpool get -H -o value` of each feature of `names`, joined by spaces.
fn states(lab: &Lab, pool: &str, names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("feature@{n}")).collect();
    zpool_ok(lab, &["get", "-H", "-o", "value", &list.join(","), pool])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `zdb -e -p DIR ARGS`, which must exit 0; its stdout.
fn zdb_ok(lab: &Lab, args: &[&str]) -> String {
    common::openzfs::zdb_ok(&lab.dir, args)
}

/// The entries `zdb -dddd POOL OBJECT` prints for a ZAP object: `name = value` lines.
fn zap_entries(lab: &Lab, pool: &str, object: u64) -> std::collections::BTreeMap<String, String> {
    zdb_ok(lab, &["-dddd", pool, &object.to_string()])
        .lines()
        .filter_map(|l| l.trim().split_once(" = "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The feature ZAPs of an exported pool as zdb reads them: (for_read, for_write,
/// enabled_txg), each guid → value.
type Zaps = [std::collections::BTreeMap<String, String>; 3];

fn feature_zaps(lab: &Lab, pool: &str) -> Zaps {
    let directory = zap_entries(lab, pool, 1);
    let object = |name: &str| -> Option<u64> { directory.get(name)?.parse().ok() };
    let read = zap_entries(lab, pool, object("features_for_read").unwrap());
    let write = zap_entries(lab, pool, object("features_for_write").unwrap());
    let txg = object("feature_enabled_txg")
        .map(|o| zap_entries(lab, pool, o))
        .unwrap_or_default();
    [read, write, txg]
}

const ALL: &[&str] = &[
    "async_destroy",
    "empty_bpobj",
    "lz4_compress",
    "enabled_txg",
    "hole_birth",
    "extensible_dataset",
    "embedded_data",
    "bookmarks",
    "large_blocks",
    "sha512",
    "skein",
    "userobj_accounting",
    "zstd_compress",
    "blake3",
];

// Why: before format 17 `zpool create -d` was "invalid option 'd'", `zpool upgrade` an
// unrecognized command, and `zpool get` showed a fixed table of states the MOS did not
// hold. Every word here is 2.3's (`zpool_do_upgrade`, `upgrade_enable_all`,
// `zpool_valid_proplist`, `status_callback`).
#[test]
fn create_d_then_upgrade_as_openzfs_prints_it() {
    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "-d", "-m", "none", "tank", &disk]);
    assert_eq!(
        states(&lab, "tank", ALL),
        vec!["disabled"; ALL.len()].join(" ")
    );
    assert_eq!(
        zpool_ok(&lab, &["get", "-H", "version", "tank"]),
        "tank\tversion\t-\tdefault\n"
    );
    let status = zpool_ok(&lab, &["status", "tank"]);
    assert!(
        status.contains(
            "status: Some supported and requested features are not enabled on the pool.\n\t\
             The pool can still be used, but some features are unavailable.\n\
             action: Enable all features using 'zpool upgrade'. Once this is done,\n"
        ),
        "{status}"
    );
    let listing = zpool_ok(&lab, &["upgrade"]);
    let mut expected = String::from(
        "This system supports ZFS pool feature flags.\n\n\
         All pools are formatted using feature flags.\n\n\n\
         Some supported features are not enabled on the following pools. Once a\n\
         feature is enabled the pool may become incompatible with software\n\
         that does not support the feature. See zpool-features(7) for details.\n\n\
         Note that the pool 'compatibility' feature can be used to inhibit\n\
         feature upgrades.\n\nPOOL  FEATURE\n---------------\ntank\n",
    );
    for name in ALL {
        expected.push_str(&format!("      {name}\n"));
    }
    expected.push('\n');
    assert_eq!(listing, expected);

    let upgraded = zpool_ok(&lab, &["upgrade", "tank"]);
    let mut expected = String::from(
        "This system supports ZFS pool feature flags.\n\nEnabled the following features on 'tank':\n",
    );
    for name in ALL {
        expected.push_str(&format!("  {name}\n"));
    }
    expected.push('\n');
    assert_eq!(upgraded, expected);
    assert_eq!(
        states(
            &lab,
            "tank",
            &["async_destroy", "lz4_compress", "hole_birth", "sha512"]
        ),
        "enabled active active enabled"
    );
    assert_eq!(
        zpool_ok(&lab, &["upgrade", "tank"]),
        "This system supports ZFS pool feature flags.\n\n\
         Pool 'tank' already has all supported and requested features enabled.\n"
    );
    assert_eq!(
        zpool_ok(&lab, &["upgrade", "-a"]),
        "This system supports ZFS pool feature flags.\n\n\
         All pools are already formatted using feature flags.\n\n\
         Every feature flags pool already has all supported and requested features enabled.\n"
    );
    assert_eq!(
        zpool_ok(&lab, &["upgrade"]),
        "This system supports ZFS pool feature flags.\n\n\
         All pools are formatted using feature flags.\n\n\
         Every feature flags pool has all supported and requested features enabled.\n"
    );
    let status = zpool_ok(&lab, &["status", "tank"]);
    assert!(!status.contains("status:"), "{status}");
    let history = zpool_ok(&lab, &["history", "tank"]);
    assert!(history.contains(" zpool upgrade tank\n"), "{history}");

    // -v: 2.3's table layout, Zetta's features with 2.3's descriptions.
    let table = zpool_ok(&lab, &["upgrade", "-v"]);
    // `printf("%-37s%s\n", name, ro)`, then the description indented by five.
    assert!(table.starts_with(&format!(
        "This system supports ZFS pool feature flags.\n\n\
         The following features are supported:\n\n\
         FEAT DESCRIPTION\n\
         -------------------------------------------------------------\n\
         {:<37} (read-only compatible)\n     Destroy filesystems asynchronously.\n",
        "async_destroy"
    )));
    assert!(table.contains(&format!(
        "{:<37}\n     Retain hole birth txg for more precise zfs send\n",
        "hole_birth"
    )));
    assert!(table.contains(" 28  Multiple vdev replacements\n"));
}

// Why: the refusals must be libzfs's words, and a legacy version Zetta does not write
// (below 28: ZPL v4 znodes, bplists) must be refused rather than stored as a pool that
// claims to be one.
#[test]
fn feature_and_version_refusals_use_openzfs_words() {
    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    let refused = |args: &[&str], words: &str| {
        let out = zpool(&lab, args);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stdout);
        assert_eq!(out.stderr, words, "{args:?}");
    };
    refused(
        &["create", "-o", "feature@nope=enabled", "tank", &disk],
        "cannot create 'tank': feature 'nope' unsupported by kernel\n",
    );
    // A feature of OpenZFS that Zetta does not maintain cannot be enabled; disabling it at
    // creation is what Zetta does anyway, so it is accepted (ZTS's features_005 does so).
    refused(
        &["create", "-o", "feature@large_dnode=enabled", "tank", &disk],
        "cannot create 'tank': feature 'large_dnode' unsupported by kernel\n",
    );
    refused(
        &["create", "-o", "feature@nope=disabled", "tank", &disk],
        "cannot create 'tank': feature 'nope' unsupported by kernel\n",
    );
    zpool_ok(
        &lab,
        &[
            "create",
            "-o",
            "feature@large_dnode=disabled",
            "-m",
            "none",
            "tank",
            &disk,
        ],
    );
    assert_eq!(
        states(&lab, "tank", &["lz4_compress", "hole_birth", "enabled_txg"]),
        "active active active"
    );
    zpool_ok(&lab, &["destroy", "tank"]);
    refused(
        &["create", "-o", "feature@lz4_compress=on", "tank", &disk],
        "cannot create 'tank': property 'feature@lz4_compress' can only be set to 'enabled' or 'disabled'\n",
    );
    refused(
        &["create", "-o", "version=29", "tank", &disk],
        "cannot create 'tank': property 'version' number 29 is invalid.\n",
    );
    refused(
        &["create", "-o", "version=27", "tank", &disk],
        "cannot create 'tank': pool version 27 is not supported by this implementation: \
         only versions 23, 28 and 5000 (feature flags) pools can be created\n",
    );
    refused(
        &["create", "-o", "compatibility=no-such-set", "tank", &disk],
        "Error: could not read/parse feature file(s): no-such-set \n",
    );
    zpool_ok(
        &lab,
        &[
            "create",
            "-o",
            "version=5000",
            "-o",
            "feature@lz4_compress=disabled",
            "-m",
            "none",
            "tank",
            &disk,
        ],
    );
    assert_eq!(
        states(&lab, "tank", &["lz4_compress", "hole_birth", "enabled_txg"]),
        "disabled active active"
    );
    refused(
        &["set", "feature@lz4_compress=disabled", "tank"],
        "cannot set property for 'tank': property 'feature@lz4_compress' can only be set to 'disabled' at creation time\n",
    );
    zpool_ok(&lab, &["set", "feature@lz4_compress=enabled", "tank"]);
    assert_eq!(states(&lab, "tank", &["lz4_compress"]), "active");
}

// Why: `-o compatibility=` must read OpenZFS's own compatibility.d files (here the
// oracle's copy) and enable only what they allow; `legacy` enables nothing, and upgrade
// then respects the set while its listing still names every missing feature.
#[test]
fn compatibility_files_limit_what_create_and_upgrade_enable() {
    let lab = Lab::new();
    let d0 = lab.disk("d0", DISK_SIZE_BYTES);
    let d1 = lab.disk("d1", DISK_SIZE_BYTES);
    zpool_ok(
        &lab,
        &[
            "create",
            "-o",
            "compatibility=openzfs-2.0-linux",
            "-m",
            "none",
            "tank",
            &d0,
        ],
    );
    // blake3 came with 2.2: not in 2.0's set.
    assert_eq!(
        states(&lab, "tank", &["lz4_compress", "zstd_compress", "blake3"]),
        "active enabled disabled"
    );
    assert_eq!(
        zpool_ok(
            &lab,
            &["get", "-H", "-o", "value,source", "compatibility", "tank"]
        ),
        "openzfs-2.0-linux\tlocal\n"
    );
    assert!(!zpool_ok(&lab, &["status", "tank"]).contains("status:"));
    assert_eq!(
        zpool_ok(&lab, &["upgrade", "tank"]),
        "This system supports ZFS pool feature flags.\n\n\
         Pool 'tank' already has all supported and requested features enabled.\n"
    );
    let out = zpool(
        &lab,
        &[
            "create",
            "-o",
            "compatibility=legacy",
            "-o",
            "feature@hole_birth=enabled",
            "-m",
            "none",
            "p2",
            &d1,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "Warning: feature \"hole_birth\" enabled but is not in specified 'compatibility' feature set.\n"
    );
    assert_eq!(
        states(&lab, "p2", &["enabled_txg", "hole_birth", "lz4_compress"]),
        "active active disabled"
    );
}

// Why: zdb is the oracle of the feature ZAPs: it must read, from a pool made with `-d`,
// one with lz4_compress disabled, and one upgraded afterwards, exactly the entries and
// counts `feature_enable_sync` leaves (activate-on-enable features at 1, enabled_txg
// counting its entries, READONLY_COMPAT ones in features_for_write), the MOS features in
// the label config, and verify the per-dataset feature counts it checks.
#[test]
fn zdb_reads_the_feature_zaps_zetta_writes() {
    let lab = Lab::new();
    let d0 = lab.disk("d0", DISK_SIZE_BYTES);
    let d1 = lab.disk("d1", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "-d", "-m", "none", "bare", &d0]);
    zpool_ok(
        &lab,
        &[
            "create",
            "-o",
            "feature@lz4_compress=disabled",
            "-m",
            "none",
            "nolz4",
            &d1,
        ],
    );
    zpool_ok(&lab, &["export", "bare"]);
    zpool_ok(&lab, &["export", "nolz4"]);

    let [read, write, txg] = feature_zaps(&lab, "bare");
    assert!(read.is_empty(), "{read:?}");
    // Format 26: no private feature, so a `-d` pool's write ZAP is empty.
    assert!(write.is_empty(), "{write:?}");
    assert!(txg.is_empty());
    let config = zdb_ok(&lab, &["-C", "bare"]);
    assert!(!config.contains("com.delphix:hole_birth"), "{config}");

    let [read, write, txg] = feature_zaps(&lab, "nolz4");
    assert!(!read.contains_key("org.illumos:lz4_compress"));
    assert_eq!(read["com.delphix:hole_birth"], "1");
    assert_eq!(read["com.delphix:embedded_data"], "1");
    // The root dataset carries userobj_accounting (session 19): its dataset object is a ZAP.
    assert_eq!(read["com.delphix:extensible_dataset"], "1");
    assert_eq!(write["org.zfsonlinux:userobj_accounting"], "1");
    assert_eq!(read["org.illumos:sha512"], "0");
    assert_eq!(write["com.delphix:async_destroy"], "0");
    assert_eq!(write["com.delphix:enabled_txg"], "11");
    assert_eq!(txg.len(), 11);
    let config = zdb_ok(&lab, &["-C", "nolz4"]);
    assert!(
        config.contains(
            "        features_for_read:\n            com.delphix:hole_birth\n            com.delphix:embedded_data\n"
        ),
        "{config}"
    );
    let walk = zdb_ok(&lab, &["-d", "nolz4"]);
    for name in ["large_blocks", "sha512", "skein", "zstd_compress", "blake3"] {
        assert!(
            walk.contains(&format!("Verified {name} feature refcount of 0 is correct")),
            "{walk}"
        );
    }
    assert!(
        walk.contains("Verified userobj_accounting feature refcount of 1 is correct"),
        "{walk}"
    );

    zpool_ok(&lab, &["import", "-d", lab.dir.to_str().unwrap(), "bare"]);
    zpool_ok(&lab, &["upgrade", "bare"]);
    zpool_ok(&lab, &["export", "bare"]);
    let [read, write, txg] = feature_zaps(&lab, "bare");
    assert_eq!(read["org.illumos:lz4_compress"], "1");
    assert_eq!(read["com.delphix:hole_birth"], "1");
    assert_eq!(write["com.delphix:enabled_txg"], "11");
    assert!(!write.contains_key("org.zetta:private_format"), "{write:?}");
    // Enabled in one txg, after the create's: every entry holds that same txg.
    let txgs: std::collections::BTreeSet<&String> = txg.values().collect();
    assert_eq!(txgs.len(), 1, "{txg:?}");
    assert_ne!(txgs.into_iter().next().unwrap(), "4");
    let config = zdb_ok(&lab, &["-C", "bare"]);
    assert!(config.contains("com.delphix:embedded_data"), "{config}");
}

// Why: a pool without lz4_compress (or zstd_compress, sha512, large_blocks…) must never
// get blocks of that kind: `zfs set`/`zfs create -o` refuse such values with libzfs's
// ENOTSUP words, and `compression=on` writes lzjb there (`zio_compress_select`), which
// zdb reads back without complaint.
#[test]
fn values_needing_a_disabled_feature_are_refused() {
    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "-d", "-m", "none", "tank", &disk]);
    let zfs = |args: &[&str]| {
        let mut command = lab.command("zfs");
        command.args(args).env("ZETTA_MOUNT", "0");
        lab.run(command)
    };
    for value in [
        "compression=lz4",
        "compression=zstd",
        "checksum=sha512",
        "recordsize=1M",
    ] {
        let out = zfs(&["set", value, "tank"]);
        assert_eq!(out.code, 1, "{value}");
        assert_eq!(
            out.stderr,
            "cannot set property for 'tank': pool and or dataset must be upgraded to set this property or value\n",
            "{value}"
        );
        let out = zfs(&["create", "-o", value, "tank/x"]);
        assert_eq!(
            out.stderr,
            "cannot create 'tank/x': pool must be upgraded to set this property or value\n",
            "{value}"
        );
        assert_eq!(zfs(&["list", "tank/x"]).code, 1, "{value}");
    }
    assert_eq!(zfs(&["set", "compression=on", "tank"]).code, 0);
    zpool_ok(&lab, &["set", "feature@lz4_compress=enabled", "tank"]);
    assert_eq!(zfs(&["set", "compression=lz4", "tank"]).code, 0);
}
