//! OpenZFS writes to a Zetta pool (issue 14, "Done when": `zhack -d DIR feature enable POOL
//! com.example:x` commits txgs on it).
//!
//! Why: a pool Zetta makes must be an OpenZFS pool that OpenZFS itself can write, not only
//! read. OpenZFS's `zhack` imports the pool read-write in userspace (libzpool; since format
//! 26 a Zetta pool has no private feature at all, `zhack feature stat` lists none),
//! enables a feature and syncs: it rewrites the labels from its own config, the MOS config,
//! the feature ZAPs and the space maps. libzpool only needs `open("/dev/zfs")` to succeed:
//! `tests/shim/devzfs.c` (our own, built here with `cc`) maps it to /dev/null.
//!
//! What this pins today (format 20): zhack exits 0 and commits txgs (the labels' txg grows,
//! `com.example:x` is in `features_for_read`, enabled and not active); OpenZFS's `zdb -bcc`
//! then still finds no leak; and Zetta reads the result through its OpenZFS codecs (the
//! read-only path, `spa::openzfs`): every file and snapshot identical.
//!
//! Then (issue 14 step 1): OpenZFS's labels drop Zetta's `org.zetta:*` keys (`format`,
//! `vdev_root`, ...) and add its per-vdev ZAPs and DTL objects; Zetta's discovery
//! assembles the tree from OpenZFS's keys, judges the pool Zetta's by its features
//! (`com.example:x` is enabled, not active) and imports it read-write: a scrub is clean,
//! every file reads back, a write and a snapshot commit, and OpenZFS's `zdb -bcc` still
//! finds no leak (the objects zhack made are carried through Zetta's config writes).

mod common;

use common::oracle::{build_devzfs_shim, zdb, zhack};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
use zetta::rand::SeededRng;
use zetta::spa::openzfs::discover;
use zetta::spa::openzfs::pool::OpenZfsPool;
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::openzfs::fs::ZplFs;

const DISK_SIZE_BYTES: u64 = 256 << 20;

/// The newest label txg OpenZFS's `zdb -l` prints for `disk`.
fn label_txg(disk: &Path) -> u64 {
    let out = Command::new(zdb()).arg("-l").arg(disk).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("txg: "))
        .filter_map(|t| t.trim().parse().ok())
        .max()
        .unwrap_or(0)
}

fn zdb_text(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Seeded files of several shapes: embedded-small, one block, several blocks, sparse.
fn files() -> Vec<(String, Vec<u8>)> {
    let mut rng = SeededRng::new(14);
    [50usize, 3000, 130_000, 1 << 20]
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let mut data = vec![0u8; size];
            rng.fill(&mut data);
            data[..size / 3].fill(0);
            (format!("f{i}"), data)
        })
        .collect()
}

fn write_file(spa: &mut Spa, dataset: &str, name: &str, data: &[u8]) {
    common::write_root_file(spa, dataset, name, 0, data);
}

/// Every regular file of a dataset's root directory, read through the OpenZFS codecs.
fn read_back(pool: &OpenZfsPool, name: &str) -> Vec<(String, Vec<u8>)> {
    let datasets = pool.datasets().unwrap();
    let dataset = datasets
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} is not in the pool"));
    let fs = ZplFs::open(pool.objset(dataset).unwrap()).unwrap();
    let mut out = Vec::new();
    for (entry, object, _) in fs.readdir(fs.root).unwrap() {
        let attr = fs.attr(object).unwrap();
        if attr.is_dir() || attr.is_symlink() {
            continue;
        }
        let data = fs.read(object, 0, attr.size as usize).unwrap();
        out.push((String::from_utf8_lossy(&entry).into_owned(), data));
    }
    out.sort();
    out
}

#[test]
fn zhack_commits_txgs_on_a_zetta_pool() {
    let (dir, path) = common::scratch_disk("zetta-zhack", DISK_SIZE_BYTES);
    let disk = PathBuf::from(&path);
    let device: DeviceRef = Arc::new(FileDevice::open(&path).unwrap());
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![(path.clone(), device)],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    spa.create_filesystem("tank/a").unwrap();
    let before = files();
    for (name, data) in &before {
        write_file(&mut spa, "tank/a", name, data);
    }
    spa.sync().unwrap();
    spa.snapshot(&["tank/a@s1".to_string()]).unwrap();
    write_file(&mut spa, "tank/a", "late", b"after the snapshot");
    spa.sync().unwrap();
    spa.export().unwrap();
    let txg_before = label_txg(&disk);
    assert!(txg_before > 0, "zdb -l reads Zetta's labels");

    let shim = build_devzfs_shim(&dir);
    // Format 26: a Zetta pool is an OpenZFS pool by its version and features alone: no
    // private feature for `zhack feature stat` to list, no `org.zetta:` key in the config.
    let out = Command::new(zhack())
        .env("LD_PRELOAD", &shim)
        .arg("-d")
        .arg(&dir)
        .args(["feature", "stat", "tank"])
        .output()
        .unwrap();
    let stat = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "zhack feature stat: {stat}");
    assert!(stat.contains("com.delphix:hole_birth"), "{stat}");
    assert!(!stat.contains("org.zetta"), "zhack feature stat:\n{stat}");
    let config = zdb_text(&dir, &["-C", "tank"]);
    assert!(config.contains("pool_guid"), "{config}");
    assert!(!config.contains("org.zetta:"), "zdb -C:\n{config}");
    let out = Command::new(zhack())
        .env("LD_PRELOAD", &shim)
        .arg("-d")
        .arg(&dir)
        .args(["feature", "enable", "tank", "com.example:x"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zhack feature enable: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let txg_after = label_txg(&disk);
    assert!(
        txg_after > txg_before,
        "zhack committed no txg ({txg_before} -> {txg_after})"
    );
    // OpenZFS's own write is consistent: the feature is enabled (for read, refcount 0:
    // not active, so it blocks no importer) and every block is still in the maps.
    let features = zdb_text(&dir, &["-dddd", "tank", "1"]);
    let for_read: u64 = features
        .lines()
        .find_map(|l| l.trim().strip_prefix("features_for_read = "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the object directory names features_for_read");
    let for_read_zap = zdb_text(&dir, &["-dddd", "tank", &for_read.to_string()]);
    assert!(
        for_read_zap.contains("com.example:x = 0"),
        "com.example:x is not enabled in features_for_read:\n{for_read_zap}"
    );
    let leaks = zdb_text(&dir, &["-bcc", "tank"]);
    assert!(leaks.contains("No leaks"), "zdb -bcc after zhack:\n{leaks}");

    // Zetta reads what OpenZFS rewrote, through its OpenZFS codecs.
    let device: DeviceRef = Arc::new(FileDevice::open(&path).unwrap());
    let candidates = discover::find_pools_with_zetta(std::slice::from_ref(&device), 0);
    let candidate = candidates
        .iter()
        .find(|c| c.name == "tank")
        .expect("the OpenZFS discovery finds the pool zhack rewrote");
    assert_eq!(candidate.txg, txg_after);
    let pool = OpenZfsPool::open(candidate).unwrap();
    let mut expected = before.clone();
    expected.push(("late".to_string(), b"after the snapshot".to_vec()));
    expected.sort();
    assert_eq!(read_back(&pool, "tank/a"), expected);
    let mut snapshot = before;
    snapshot.sort();
    assert_eq!(read_back(&pool, "tank/a@s1"), snapshot);

    // Zetta's own import takes the pool back read-write from OpenZFS's keys alone: its
    // features are Zetta's (com.example:x is enabled, not active).
    let found = zetta::spa::find_pools(std::slice::from_ref(&device));
    assert_eq!(
        found.len(),
        1,
        "Zetta's discovery finds the pool zhack rewrote"
    );
    assert!(
        discover::find_pools(std::slice::from_ref(&device), 0).is_empty(),
        "a pool Zetta writes is not listed as foreign too"
    );
    let mut spa = Spa::import(&found[0], None, 64 << 20).expect("read-write import");
    let stats = spa.scrub(None).unwrap();
    assert_eq!(stats.errors, 0, "scrub after zhack");
    for (name, data) in &expected {
        let read = spa
            .with_zpl("tank/a", |vfs, os, ctx| {
                let attr = vfs.lookup(os, ctx, vfs.root, name.as_bytes())?;
                vfs.read(os, ctx, attr.object, 0, data.len() + 1)
            })
            .unwrap();
        assert_eq!(&read, data, "{name} reads back after zhack");
    }
    write_file(&mut spa, "tank/a", "after-zhack", b"written by Zetta again");
    spa.sync().unwrap();
    spa.snapshot(&["tank/a@s2".to_string()]).unwrap();
    spa.sync().unwrap();
    spa.export().unwrap();
    // OpenZFS's verdict on what Zetta wrote over OpenZFS's config: the per-vdev ZAPs and
    // DTL objects zhack made are still named (a dropped one is a leaked MOS object;
    // a single-device top-level vdev gets no DTL from zhack, so only the ZAPs are named).
    let leaks = zdb_text(&dir, &["-bcc", "tank"]);
    assert!(
        leaks.contains("No leaks"),
        "zdb -bcc after Zetta's write:\n{leaks}"
    );
    assert!(
        !leaks.contains(") leaked"),
        "zdb -bcc reports leaked objects:\n{leaks}"
    );
    let config = zdb_text(&dir, &["-C", "tank"]);
    for key in ["com.delphix:vdev_zap_leaf", "com.delphix:vdev_zap_top"] {
        assert!(
            config.contains(key),
            "{key} kept in the MOS config:\n{config}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// Why: issue 14 asks that the v5000 `unclean_export` fixture import read-write when its
// active features are Zetta's. They are (only async_destroy is enabled, at count 0). OpenZFS
// created it, so its MOS is numbered as OpenZFS allocates: the root dir is object 2 (its
// head dataset not 4), `$ORIGIN@$ORIGIN` is not object 6, the history is object 32, and
// the directory has no `errlog_last` and no `pool_props`. The engine takes every one of
// these from the object directory (`spa::directory::MosDirectory::load`), so features alone
// decide: Zetta imports it read-write, scrubs it clean, writes a file and a new filesystem
// (whose clone link goes to the pool's own `$ORIGIN@$ORIGIN`), snapshots, records history,
// sets a pool property (creating `pool_props`) and exports; OpenZFS's `zdb -bcc` finds no
// leak and Zetta reads it all back. Without the change the import was refused ("not by
// layout") and the pool stayed read-only.
#[test]
fn unclean_export_imports_read_write() {
    let fixture =
        common::oracle::fixture("cli_root/zpool_import/blockfiles/unclean_export.dat.bz2");
    let path = fixture.file.to_str().unwrap().to_string();
    let device: DeviceRef = Arc::new(FileDevice::open(&path).unwrap());
    let devices = std::slice::from_ref(&device);
    let found = discover::find_pools_with_zetta(devices, 0);
    let candidate = found
        .iter()
        .find(|c| c.name == "unclean_export")
        .expect("the fixture is found");
    assert_eq!(discover::zetta_writes(candidate, devices), Ok(()));
    let directory = zdb_text(&fixture.dir, &["-dddd", "unclean_export", "1"]);
    assert!(directory.contains("root_dataset = 2"), "{directory}");
    assert!(!directory.contains("errlog_last"), "{directory}");
    assert!(!directory.contains("pool_props"), "{directory}");
    assert!(discover::find_pools(devices, 0).is_empty());
    let found = zetta::spa::find_pools(devices);
    assert_eq!(found.len(), 1, "Zetta's discovery takes the pool");

    let mut spa = Spa::import(&found[0], None, 64 << 20).expect("read-write import");
    assert_ne!(
        spa.root_dataset_object(),
        4,
        "OpenZFS numbers its root dataset otherwise"
    );
    let history_before = spa.history().unwrap().len();
    assert!(history_before > 0, "OpenZFS's history (object 32) is read");
    let stats = spa.scrub(None).unwrap();
    assert_eq!(stats.errors, 0, "scrub of the fixture");
    write_file(&mut spa, "unclean_export", "by-zetta", b"written by Zetta");
    spa.create_filesystem("unclean_export/z").unwrap();
    write_file(
        &mut spa,
        "unclean_export/z",
        "inner",
        b"in a new filesystem",
    );
    spa.sync().unwrap();
    spa.snapshot(&[
        "unclean_export@s1".to_string(),
        "unclean_export/z@s1".to_string(),
    ])
    .unwrap();
    // Format 26: the comment is a config key (`spa_config_generate`), `failmode` a
    // `pool_props` entry (one u64, `spa_sync_props`), which creates the object.
    spa.props.set_str("comment", "zetta was here");
    spa.props.set_str("failmode", "continue");
    spa.mark_config_dirty();
    spa.log_history("zpool set comment=zetta was here unclean_export");
    spa.sync().unwrap();
    spa.export().unwrap();

    let leaks = zdb_text(&fixture.dir, &["-bcc", "unclean_export"]);
    assert!(
        leaks.contains("No leaks"),
        "zdb -bcc after Zetta's write:\n{leaks}"
    );
    assert!(
        !leaks.contains(") leaked"),
        "zdb -bcc reports leaked objects:\n{leaks}"
    );
    let directory = zdb_text(&fixture.dir, &["-dddd", "unclean_export", "1"]);
    assert!(directory.contains("pool_props"), "{directory}");
    let config = zdb_text(&fixture.dir, &["-C", "unclean_export"]);
    assert!(config.contains("comment: 'zetta was here'"), "{config}");
    assert!(!config.contains("org.zetta:"), "{config}");
    let listing = zdb_text(&fixture.dir, &["-d", "unclean_export"]);
    for name in ["unclean_export/z@s1", "unclean_export@s1"] {
        assert!(listing.contains(name), "zdb lists {name}:\n{listing}");
    }

    let found = zetta::spa::find_pools(devices);
    assert_eq!(found.len(), 1);
    let mut spa = Spa::import(&found[0], None, 64 << 20).expect("second import");
    assert!(
        spa.history().unwrap().len() > history_before,
        "Zetta's records appended"
    );
    for (dataset, name, data) in [
        ("unclean_export", "by-zetta", &b"written by Zetta"[..]),
        ("unclean_export/z", "inner", &b"in a new filesystem"[..]),
    ] {
        let read = spa
            .with_zpl(dataset, |vfs, os, ctx| {
                let attr = vfs.lookup(os, ctx, vfs.root, name.as_bytes())?;
                vfs.read(os, ctx, attr.object, 0, data.len() + 1)
            })
            .unwrap();
        assert_eq!(read, data, "{dataset}/{name}");
    }
    spa.export().unwrap();
}

// Why: issue 14 asks that pools zfs-fuse makes import read-write. zfs-fuse 0.7 (SPA
// version 23) numbers the MOS as its allocator went: root dir 2, `$ORIGIN@$ORIGIN` 14 (the
// previous snapshot of every dataset without one, and the origin of every dir), history 22,
// and no `errlog_last`, `pool_props` or feature objects at all. The engine read the origin
// as object 6 and the rest at Zetta's numbers; now it takes each from the directory (and the
// origin from `$ORIGIN`'s head, as `dsl_pool_open` does), so the real bytes of
// tests/fixtures/zfs-fuse-zpl4.dat.bz2 import read-write, a write, a new filesystem, a
// snapshot and a destroy commit, and OpenZFS's `zdb -bcc` finds no leak.
#[test]
fn a_pool_zfs_fuse_made_imports_read_write() {
    let dir = std::env::temp_dir().join(format!("zetta-fuse-rw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fuse.dat");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zfs-fuse-zpl4.dat.bz2");
    let status = Command::new("bunzip2")
        .arg("-dc")
        .arg(&src)
        .stdout(std::fs::File::create(&file).unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "bunzip2 {}", src.display());
    let directory = zdb_text(&dir, &["-dddd", "fusepool", "1"]);
    assert!(directory.contains("root_dataset = 2"), "{directory}");
    assert!(directory.contains("history = 22"), "{directory}");
    assert!(!directory.contains("errlog_last"), "{directory}");
    let device: DeviceRef = Arc::new(FileDevice::open(file.to_str().unwrap()).unwrap());
    let devices = std::slice::from_ref(&device);
    let found = zetta::spa::find_pools(devices);
    assert_eq!(found.len(), 1, "Zetta's discovery takes zfs-fuse's pool");
    let mut spa = Spa::import(&found[0], None, 64 << 20).expect("read-write import");
    assert_eq!(
        spa.root_dataset_object(),
        16,
        "zfs-fuse's root dataset (dir 2's head)"
    );
    let read = spa
        .with_zpl("fusepool", |vfs, os, ctx| {
            let attr = vfs.lookup(os, ctx, vfs.root, b"file")?;
            vfs.read(os, ctx, attr.object, 0, 100)
        })
        .unwrap();
    assert_eq!(read, b"hello\n");
    let stats = spa.scrub(None).unwrap();
    assert_eq!(stats.errors, 0, "scrub of zfs-fuse's pool");
    write_file(&mut spa, "fusepool", "by-zetta", b"written by Zetta");
    spa.create_filesystem("fusepool/z").unwrap();
    write_file(&mut spa, "fusepool/z", "inner", b"in a new filesystem");
    spa.sync().unwrap();
    spa.snapshot(&["fusepool@zs".to_string(), "fusepool/z@zs".to_string()])
        .unwrap();
    spa.sync().unwrap();
    spa.destroy_filesystem("fusepool/r/c").unwrap();
    spa.log_history("zfs destroy fusepool/r/c");
    spa.sync().unwrap();
    spa.export().unwrap();

    let leaks = zdb_text(&dir, &["-bcc", "fusepool"]);
    assert!(
        leaks.contains("No leaks"),
        "zdb -bcc after Zetta's write:\n{leaks}"
    );
    assert!(
        !leaks.contains(") leaked"),
        "zdb -bcc reports leaked objects:\n{leaks}"
    );
    let listing = zdb_text(&dir, &["-d", "fusepool"]);
    assert!(listing.contains("fusepool/z@zs"), "{listing}");
    assert!(!listing.contains("fusepool/r/c"), "{listing}");

    let found = zetta::spa::find_pools(devices);
    let mut spa = Spa::import(&found[0], None, 64 << 20).expect("second import");
    let read = spa
        .with_zpl("fusepool/z", |vfs, os, ctx| {
            let attr = vfs.lookup(os, ctx, vfs.root, b"inner")?;
            vfs.read(os, ctx, attr.object, 0, 100)
        })
        .unwrap();
    assert_eq!(read, b"in a new filesystem");
    spa.export().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
