//! The dataset layer's records where OpenZFS keeps them (issue 14, "the DSL's last private
//! words"), checked with OpenZFS 2.3's own `zdb` (`common::openzfs`, from
//! scripts/oracle.sh) on pools made through the CLI:
//! - a head's bookmarks ZAP named in the dataset object's own ZAP as
//!   `com.delphix:bookmarks`, with feature `bookmarks` counted (`dsl::bookmark`);
//! - a plain dataset's `ds_prev_snap_txg`: the creation txg of `$ORIGIN@$ORIGIN`.
//!
//! Each pool is exported, then read by zdb: the words it prints, and "No leaks".

mod common;

use common::openzfs::{oracle, zdb_ok};
use common::NoMountLab;

/// The `zdb -dddd POOL OBJECT` dump of one MOS object.
fn mos_object(lab: &NoMountLab, pool: &str, object: u64) -> String {
    zdb_ok(&lab.inner.dir, &["-dddd", pool, &object.to_string()])
}

/// The value of `key = VALUE` in a zdb dump (the first such line).
fn zdb_field(dump: &str, key: &str) -> Option<String> {
    let prefix = format!("{key} = ");
    dump.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
}

/// MOS object of a dataset: zdb -d prints "Dataset NAME [ZPL], ID N, ...", and the
/// dsl dataset object number is the objset id.
fn dataset_object(lab: &NoMountLab, pool: &str, name: &str) -> u64 {
    let out = zdb_ok(&lab.inner.dir, &["-d", pool]);
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("Dataset {name} ")))
        .unwrap_or_else(|| panic!("no dataset {name} in {out}"));
    let id = line
        .split(", ID ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    id.trim().parse().unwrap()
}

/// Feature `bookmarks`' count in the MOS's `features_for_write` (it is READONLY_COMPAT).
fn bookmarks_count(lab: &NoMountLab) -> String {
    let directory = mos_object(lab, "tank", 1);
    let object: u64 = zdb_field(&directory, "features_for_write")
        .unwrap()
        .parse()
        .unwrap();
    zdb_field(&mos_object(lab, "tank", object), "com.delphix:bookmarks").unwrap()
}

fn feature(lab: &NoMountLab, name: &str) -> String {
    let prop = format!("feature@{name}");
    lab.ok("zpool", &["get", "-H", "-o", "value", &prop, "tank"])
        .trim()
        .to_string()
}

// Why: up to format 25 the head's bookmarks ZAP sat in pad word 35 of its
// `dsl_dataset_phys_t`, where OpenZFS never looks: OpenZFS saw a pool without bookmarks
// (and a MOS ZAP no dataset names), and an OpenZFS pool's bookmarks were invisible to
// Zetta. Now the dataset object is a ZAP naming it as `com.delphix:bookmarks`, the
// feature `bookmarks` counts the heads that have one, and the last bookmark's destroy
// takes both back.
#[test]
fn bookmarks_live_in_the_extensible_dataset_zap() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    assert_eq!(feature(&lab, "bookmarks"), "enabled");
    lab.ok("zfs", &["bookmark", "tank/a@s", "tank/a#m"]);
    lab.ok("zfs", &["bookmark", "tank/a@s", "tank/a#n"]);
    assert_eq!(feature(&lab, "bookmarks"), "active");
    assert_eq!(feature(&lab, "extensible_dataset"), "active");
    lab.ok("zpool", &["export", "tank"]);

    let head = dataset_object(&lab, "tank", "tank/a");
    let dump = mos_object(&lab, "tank", head);
    assert!(dump.contains("bonus  DSL dataset"), "{dump}");
    let bookmarks: u64 = zdb_field(&dump, "com.delphix:bookmarks")
        .unwrap_or_else(|| panic!("no bookmarks entry in {dump}"))
        .parse()
        .unwrap();
    let marks = mos_object(&lab, "tank", bookmarks);
    let snapshot_guid = lab_snapshot_guid(&lab);
    for mark in ["m", "n"] {
        // zbm_guid, zbm_creation_txg, zbm_creation_time (zdb prints the guid signed).
        let value = zdb_field(&marks, mark).unwrap_or_else(|| panic!("no {mark} in {marks}"));
        let guid = value
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<i64>()
            .unwrap() as u64;
        assert_eq!(guid, snapshot_guid, "{marks}");
    }
    assert_eq!(bookmarks_count(&lab), "1");
    oracle::assert_zdb_no_leaks(&lab.inner.dir, "tank", "");

    // Read back from there, and the last destroy gives the ZAP and the count back.
    lab.ok("zpool", &["import", "-d", &lab.inner.path(""), "tank"]);
    let listed = lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "bookmark", "-r", "tank"],
    );
    let mut listed: Vec<&str> = listed.lines().collect();
    listed.sort();
    assert_eq!(listed, ["tank/a#m", "tank/a#n"]);
    lab.ok("zfs", &["destroy", "tank/a#m"]);
    assert_eq!(feature(&lab, "bookmarks"), "active");
    lab.ok("zfs", &["destroy", "tank/a#n"]);
    assert_eq!(feature(&lab, "bookmarks"), "enabled");
    lab.ok("zpool", &["export", "tank"]);
    let dump = mos_object(&lab, "tank", head);
    assert_eq!(zdb_field(&dump, "com.delphix:bookmarks"), None, "{dump}");
    assert_eq!(bookmarks_count(&lab), "0");
    oracle::assert_zdb_no_leaks(&lab.inner.dir, "tank", "");
}

// Why: OpenZFS refuses a bookmark on a pool whose feature `bookmarks` is not enabled
// (`dsl_bookmark_create_check`: ENOTSUP); Zetta made one in its pad word on any pool.
#[test]
fn bookmark_without_the_feature_is_refused_as_openzfs_refuses_it() {
    let lab = NoMountLab::new();
    let disk = lab.inner.disk("bare", 128 << 20);
    lab.ok("zpool", &["create", "-d", "-m", "none", "bare", &disk]);
    lab.ok("zfs", &["snapshot", "bare@s"]);
    let out = lab.run("zfs", &["bookmark", "bare@s", "bare#m"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        out.stderr,
        "cannot create bookmark 'bare#m': bookmark feature not enabled\n"
    );
}

fn lab_snapshot_guid(lab: &NoMountLab) -> u64 {
    lab.ok("zpool", &["import", "-d", &lab.inner.path(""), "tank"]);
    let guid = lab.ok(
        "zfs",
        &["get", "-H", "-p", "-o", "value", "guid", "tank/a@s"],
    );
    lab.ok("zpool", &["export", "tank"]);
    guid.trim().parse().unwrap()
}

// Why: OpenZFS makes every dataset without an origin of its own a clone of
// `$ORIGIN@$ORIGIN` (`dsl_dataset_create_sync`), so its `ds_prev_snap_txg` is that
// snapshot's creation txg (1 in an OpenZFS pool: `zdb -dddd` of the `unclean_export`
// fixture); Zetta wrote 0.
#[test]
fn plain_dataset_prev_snap_txg_is_its_origin_snapshots_creation_txg() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zpool", &["export", "tank"]);
    let head = mos_object(&lab, "tank", dataset_object(&lab, "tank", "tank/a"));
    let prev_snap: u64 = zdb_field(&head, "prev_snap_obj").unwrap().parse().unwrap();
    let origin = mos_object(&lab, "tank", prev_snap);
    // `$ORIGIN@$ORIGIN`: a snapshot (one child per dataset) with no previous snapshot.
    assert_eq!(
        zdb_field(&origin, "prev_snap_obj").as_deref(),
        Some("0"),
        "{origin}"
    );
    let origin_txg = zdb_field(&origin, "creation_txg").unwrap();
    assert_ne!(origin_txg, "0");
    assert_eq!(
        zdb_field(&head, "prev_snap_txg"),
        Some(origin_txg),
        "{head}\n{origin}"
    );
    oracle::assert_zdb_no_leaks(&lab.inner.dir, "tank", "");
}
