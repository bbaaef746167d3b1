//! Legacy pool versions as OpenZFS reads them (issue 14 item 1, `zpool create -o
//! version=28`): OpenZFS's own `zdb` is the oracle.
//!
//! Why: a version-28 pool is the newest one that software without feature flags
//! (zfs-fuse at 23 aside, the illumos and BSD releases of 2012) imports. It must say 28 in
//! its uberblock, its config and `creation_version`, carry no feature object at all (no
//! `features_for_read`/`features_for_write`/`feature_descriptions` in the object
//! directory, an empty `features_for_read` in the label as `spa_config_generate` writes
//! it), and write nothing a feature gates: lzjb where lz4 would be used, no embedded block
//! pointers, no hole births. Before this change `-o version=28` was refused; a pool that
//! claimed 28 while keeping its feature ZAPs, or wrote an lz4 or embedded block, would be
//! unreadable (or silently wrong) for such software. Upgrading it to 5000 must give the
//! feature ZAPs of a new pool. Each check runs zdb from scripts/oracle.sh (never skipped).

mod common;

use common::oracle::zdb;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};

const DISK_SIZE_BYTES: u64 = 256 << 20;

fn lab(name: &str) -> (PathBuf, String) {
    common::scratch_disk(&format!("zetta-legacy-{name}"), DISK_SIZE_BYTES)
}

fn open(path: &str) -> TopSpec {
    TopSpec {
        kind: TopKind::Single,
        leaves: vec![(
            path.to_string(),
            Arc::new(FileDevice::open(path).unwrap()) as DeviceRef,
        )],
        is_log: false,
    }
}

fn reimport(path: &str) -> Spa {
    let device = Arc::new(FileDevice::open(path).unwrap()) as DeviceRef;
    let candidates = zetta::spa::import::find_pools(&[device]);
    let candidate = candidates.iter().find(|c| c.name == "tank").unwrap();
    Spa::import(candidate, None, 32 << 20).unwrap()
}

fn version_28() -> CreateOptions {
    CreateOptions {
        version: 28,
        features: Vec::new(),
        ..CreateOptions::default()
    }
}

/// A file of `size_bytes` whose blocks compress well, and a tiny one (a candidate for an
/// embedded block pointer), then a hole punched by truncating and rewriting past it.
fn write_files(spa: &mut Spa, dataset: &str) {
    let big = b"legacy pools compress with lzjb ".repeat(40_000);
    common::write_root_file(spa, dataset, "big", 0, &big);
    common::write_root_file(
        spa,
        dataset,
        "tiny",
        0,
        &b"tiny and compressible ".repeat(8),
    );
    common::write_root_file(spa, dataset, "sparse", 4 << 20, b"after a hole");
}

fn zdb_ok(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "zdb {args:?}: {stdout}{stderr}");
    for word in ["ASSERT", "(leaked", "leaked space", "!= alloc"] {
        assert!(
            !stdout.contains(word) && !stderr.contains(word),
            "zdb {args:?} said {word:?}: {stdout}{stderr}"
        );
    }
    stdout
}

/// The object directory's entries as `zdb -dddd tank 1` prints them.
fn directory(dir: &Path) -> std::collections::BTreeMap<String, String> {
    zdb_ok(dir, &["-dddd", "tank", "1"])
        .lines()
        .filter_map(|l| l.trim().split_once(" = "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// A version-28 pool with datasets, snapshots, compressed and tiny files: zdb reads it as
/// a legacy pool, counts every block ("No leaks"), and finds no lz4, no embedded block.
#[test]
fn version_28_pool_is_a_legacy_pool_for_zdb() {
    let (dir, disk) = lab("v28");
    let mut spa = Spa::create("tank", &[open(&disk)], &version_28()).unwrap();
    assert_eq!(spa.version(), 28);
    assert!(spa.features().label_features().is_empty());
    spa.create_filesystem("tank/a").unwrap();
    spa.set_local_prop("tank/a", "compression", "on").unwrap();
    write_files(&mut spa, "tank/a");
    spa.sync().unwrap();
    spa.snapshot(&["tank/a@s1".to_string()]).unwrap();
    write_files(&mut spa, "tank");
    spa.sync().unwrap();
    spa.export().unwrap();

    // The engine opens it again as the same legacy pool.
    let spa = reimport(&disk);
    assert_eq!(spa.version(), 28);
    spa.export().unwrap();

    let leaks = zdb_ok(&dir, &["-bcc", "tank"]);
    assert!(
        leaks.contains("No leaks (block sum matches space maps exactly)"),
        "{leaks}"
    );
    let config = zdb_ok(&dir, &["-C", "tank"]);
    assert!(config.contains("    version: 28\n"), "{config}");
    assert!(!config.contains("com.delphix"), "{config}");
    let labels = Command::new(zdb()).args(["-lu", &disk]).output().unwrap();
    let labels = String::from_utf8_lossy(&labels.stdout);
    assert!(labels.contains("    version: 28\n"), "{labels}");
    assert!(!labels.contains("    version: 5000"), "{labels}");

    let entries = directory(&dir);
    assert_eq!(entries["creation_version"], "28", "{entries:?}");
    for name in [
        "features_for_read",
        "features_for_write",
        "feature_descriptions",
        "feature_enabled_txg",
    ] {
        assert!(!entries.contains_key(name), "{name}: {entries:?}");
    }

    // Every block as zdb prints it (`-bbbbb`: compression by name, EMBEDDED for embedded
    // block pointers): lzjb for the compressed files, never lz4, nothing embedded.
    let blocks = zdb_ok(&dir, &["-bbbbb", "tank"]);
    assert!(blocks.contains(" lzjb "), "{blocks}");
    assert!(!blocks.contains("lz4"), "no lz4 block on a v28 pool");
    assert!(
        !blocks.contains("EMBEDDED"),
        "no embedded block on a v28 pool"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `spa_upgrade` to 5000 on a version-28 pool: the feature ZAPs of a new pool appear in
/// the txg that raises the version, features enabled after it are counted there.
#[test]
fn version_28_pool_upgrades_to_feature_flags() {
    let (dir, disk) = lab("v28-up");
    let mut spa = Spa::create("tank", &[open(&disk)], &version_28()).unwrap();
    assert!(spa.upgrade(23).is_err(), "a version never goes down");
    spa.upgrade(5000).unwrap();
    spa.sync().unwrap();
    assert_eq!(spa.version(), 5000);
    let lz4 = zetta::spa::zfeature::lookup_name("lz4_compress").unwrap();
    let hole_birth = zetta::spa::zfeature::lookup_name("hole_birth").unwrap();
    assert!(spa.feature_enable(lz4));
    assert!(spa.feature_enable(hole_birth));
    spa.sync().unwrap();
    spa.export().unwrap();

    let leaks = zdb_ok(&dir, &["-bcc", "tank"]);
    assert!(leaks.contains("No leaks"), "{leaks}");
    let config = zdb_ok(&dir, &["-C", "tank"]);
    assert!(config.contains("    version: 5000\n"), "{config}");
    assert!(config.contains("com.delphix:hole_birth"), "{config}");
    let entries = directory(&dir);
    // creation_version keeps what the pool was made with.
    assert_eq!(entries["creation_version"], "28");
    for name in [
        "features_for_read",
        "features_for_write",
        "feature_descriptions",
        "feature_enabled_txg",
    ] {
        assert!(entries.contains_key(name), "{name}: {entries:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A feature enabled on a legacy pool upgrades it to 5000 first (`spa_prop_set` turns a
/// `feature@` property into `spa_sync_version(5000)`), as `zpool set feature@…` does.
#[test]
fn enabling_a_feature_on_a_legacy_pool_upgrades_it() {
    let (dir, disk) = lab("v28-feature");
    let mut spa = Spa::create("tank", &[open(&disk)], &version_28()).unwrap();
    let lz4 = zetta::spa::zfeature::lookup_name("lz4_compress").unwrap();
    assert!(spa.feature_enable(lz4));
    assert_eq!(spa.version(), 5000);
    spa.sync().unwrap();
    spa.export().unwrap();
    let spa = reimport(&disk);
    assert_eq!(spa.version(), 5000);
    assert!(spa.features().is_active("org.illumos:lz4_compress"));
    assert!(!spa.features().is_enabled("com.delphix:hole_birth"));
    spa.export().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

fn version_23() -> CreateOptions {
    CreateOptions {
        version: 23,
        features: Vec::new(),
        ..CreateOptions::default()
    }
}

/// Why: version 23 is zfs-fuse's, the one pool version both zfs-fuse and OpenZFS 2.3 read
/// and write. Below `SPA_VERSION_SA` (24) its filesystems are ZPL 4 (`znode_phys_t`
/// bonuses, no SA master node); below `SPA_VERSION_DEADLISTS` (26) its bpobjs have the
/// 32-byte bplist header and there is no `$FREE` dir, `free_bpobj` nor `dd_clones`. A pool
/// that said 23 but kept any of these would be misread by zfs-fuse. zdb 2.3 walks it:
/// every block counted ("No leaks") with snapshots' dead lists and a clone.
#[test]
fn version_23_pool_is_zfs_fuses_shape_for_zdb() {
    let (dir, disk) = lab("v23");
    let mut spa = Spa::create("tank", &[open(&disk)], &version_23()).unwrap();
    assert_eq!(spa.version(), 23);
    spa.create_filesystem("tank/a").unwrap();
    spa.set_local_prop("tank/a", "compression", "on").unwrap();
    write_files(&mut spa, "tank/a");
    spa.sync().unwrap();
    spa.snapshot(&["tank/a@s1".to_string()]).unwrap();
    // Overwrites and a removal after the snapshot fill the head's dead list.
    spa.with_zpl("tank/a", |vfs, os, ctx| {
        let now = zetta::zpl::Timespec::now();
        let big = vfs.lookup(os, ctx, vfs.root, b"big")?.object;
        vfs.write(os, ctx, big, 0, &b"rewritten ".repeat(30_000), now)?;
        vfs.unlink(os, ctx, vfs.root, b"tiny", now)?;
        Ok(())
    })
    .unwrap();
    spa.sync().unwrap();
    spa.clone_snapshot("tank/a@s1", "tank/c").unwrap();
    write_files(&mut spa, "tank");
    spa.sync().unwrap();
    spa.export().unwrap();

    let spa = reimport(&disk);
    assert_eq!(spa.version(), 23);
    spa.export().unwrap();

    let leaks = zdb_ok(&dir, &["-bcc", "tank"]);
    assert!(
        leaks.contains("No leaks (block sum matches space maps exactly)"),
        "{leaks}"
    );
    let config = zdb_ok(&dir, &["-C", "tank"]);
    assert!(config.contains("    version: 23\n"), "{config}");
    let entries = directory(&dir);
    assert_eq!(entries["creation_version"], "23", "{entries:?}");
    assert!(entries.contains_key("sync_bplist"), "{entries:?}");
    for name in ["free_bpobj", "features_for_read"] {
        assert!(!entries.contains_key(name), "{name}: {entries:?}");
    }
    // Every dataset's master node says ZPL 4 and has no SA_ATTRS.
    // ("tank/" is the root dataset; "tank" alone would be the MOS.)
    for fs in ["tank/", "tank/a", "tank/c"] {
        let master = zdb_ok(&dir, &["-dddd", fs, "1"]);
        assert!(master.contains("VERSION = 4"), "{fs}: {master}");
        assert!(!master.contains("SA_ATTRS"), "{fs}: {master}");
    }
    // The MOS: bpobjs with 32-byte headers, no $FREE, no dd_clones.
    let mos = zdb_ok(&dir, &["-dddd", "tank"]);
    assert!(!mos.contains("$FREE"), "no $FREE dir at 23");
    let bpobj_headers: Vec<&str> = mos
        .lines()
        .filter(|l| l.contains("bonus  bpobj header"))
        .collect();
    assert!(bpobj_headers.len() >= 5, "{mos}");
    for line in &bpobj_headers {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "32", "a 32-byte bplist header: {line}");
    }
    assert!(!mos.contains("DSL dir clones"), "no dd_clones at 23");
    assert!(mos.contains("num_blkptrs = "), "{mos}");
    let _ = std::fs::remove_dir_all(&dir);
}
