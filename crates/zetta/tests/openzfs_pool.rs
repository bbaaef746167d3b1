//! Real OpenZFS pools read end to end: label → uberblock → MOS → DSL → every filesystem and
//! snapshot → every file's attributes, data, symlink target and xattrs, through the
//! OpenZFS codecs composed (`spa::openzfs::pool`, `zpl::openzfs::fs`), and checked against
//! what OpenZFS's own `zdb -ddddd` prints for each object, and against what zfs-fuse wrote.
//!
//! Why: each codec was checked alone against real bytes; this proves they compose into a
//! reader of whole pools (every block verified by its checksum on the way) — the capability
//! "can it read my pool?" that the read-only import (issue 12) serves to users.

mod common;

use common::oracle::{ctime_utc, unpack, zdb_objects, PoolDir, ZdbObject};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
// With the pools Zetta also writes (`unclean_export` since session 17): these tests read
// OpenZFS's bytes through the reader whoever would import the pool.
use zetta::spa::openzfs::discover::find_pools_with_zetta as find_pools;
use zetta::spa::openzfs::pool::{OpenError, OpenZfsPool};
use zetta::zpl::openzfs::fs::{FileAttr, ZplFs};

fn open_devices(paths: &[PathBuf]) -> Vec<DeviceRef> {
    paths
        .iter()
        .map(|p| Arc::new(FileDevice::open_read_only(p.to_str().unwrap()).unwrap()) as DeviceRef)
        .collect()
}

/// Every object reachable from the root (and the shares directory: directories, files, xattr directories and their
/// files), with its attributes.
fn walk(fs: &ZplFs) -> BTreeMap<u64, FileAttr> {
    let mut seen = BTreeMap::new();
    let mut stack = vec![fs.root];
    // ZPL 4's SMB share directory hangs off the master node, not the root.
    if let Some(shares) = fs.os.zap_u64(1, "SHARES").expect("master node") {
        stack.push(shares);
    }
    while let Some(object) = stack.pop() {
        if seen.contains_key(&object) {
            continue;
        }
        let attr = fs
            .attr(object)
            .unwrap_or_else(|e| panic!("attributes of object {object}: {e}"));
        if attr.xattr != 0 {
            stack.push(attr.xattr);
        }
        if attr.is_dir() {
            let entries = fs
                .readdir(object)
                .unwrap_or_else(|e| panic!("readdir of object {object}: {e}"));
            assert_eq!(
                entries.len() as u64 + 2,
                attr.size,
                "directory {object}: entries and recorded size disagree"
            );
            for (name, child, _) in entries {
                assert_eq!(
                    fs.lookup(object, &name).unwrap(),
                    Some(child),
                    "lookup of {:?} in {object}",
                    String::from_utf8_lossy(&name)
                );
                stack.push(child);
            }
        } else if attr.is_symlink() {
            let target = fs
                .readlink(object)
                .unwrap_or_else(|e| panic!("readlink of object {object}: {e}"));
            assert_eq!(target.len() as u64, attr.size, "symlink {object}");
        } else if attr.mode & 0o170000 == 0o100000 {
            let data = fs
                .read(object, 0, attr.size as usize)
                .unwrap_or_else(|e| panic!("read of object {object}: {e}"));
            assert_eq!(data.len() as u64, attr.size, "file {object}");
        }
        fs.xattrs(object)
            .unwrap_or_else(|e| panic!("xattrs of object {object}: {e}"));
        seen.insert(object, attr);
    }
    seen
}

/// Our attributes of every object zdb prints with ZPL attributes, field by field.
fn compare_with_zdb(name: &str, ours: &BTreeMap<u64, FileAttr>, zdb: &[ZdbObject]) -> usize {
    let mut checked = 0;
    let mut zdb_paths = BTreeSet::new();
    for z in zdb {
        let (Some(mode), Ok(object)) = (z.attr("mode"), u64::try_from(z.object)) else {
            continue;
        };
        let path = z.attr("path").unwrap_or("");
        // Unlinked files still open at export are in the delete queue, not the tree.
        if path.starts_with("???") || path.contains("<object#") {
            continue;
        }
        zdb_paths.insert(object);
        let ours = ours.get(&object).unwrap_or_else(|| {
            panic!("{name}: object {object} ({path}) not reached from the root")
        });
        let want = |field: &str| z.attr(field).unwrap_or("").to_string();
        let got = [
            ("mode", format!("{:o}", ours.mode)),
            ("uid", ours.uid.to_string()),
            ("gid", ours.gid.to_string()),
            ("size", ours.size.to_string()),
            ("parent", ours.parent.to_string()),
            ("links", ours.links.to_string()),
            ("gen", ours.gen.to_string()),
            ("atime", ctime_utc(ours.atime.sec)),
            ("mtime", ctime_utc(ours.mtime.sec)),
            ("ctime", ctime_utc(ours.ctime.sec)),
            ("crtime", ctime_utc(ours.crtime.sec)),
        ];
        assert_eq!(
            mode,
            format!("{:o}", ours.mode),
            "{name} object {object} {path}"
        );
        for (field, value) in got {
            assert_eq!(want(field), value, "{name} object {object} {path}: {field}");
        }
        if let Some(xattr) = z.attr("xattr") {
            assert_eq!(
                xattr,
                ours.xattr.to_string(),
                "{name} object {object}: xattr"
            );
        }
        checked += 1;
    }
    let extra: Vec<&u64> = ours.keys().filter(|o| !zdb_paths.contains(o)).collect();
    assert!(
        extra.is_empty(),
        "{name}: objects zdb does not show: {extra:?}"
    );
    checked
}

/// What `zdb -d POOL` prints per dataset: name → its REFER figure (`384K`).
fn zdb_referenced(dir: &std::path::Path, pool: &str) -> BTreeMap<String, String> {
    let out = std::process::Command::new(common::oracle::zdb())
        .args(["-A", "-e", "-p"])
        .arg(dir)
        .args(["-d", pool])
        .output()
        .expect("zdb runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("Dataset ")?;
            let (name, rest) = rest.split_once(' ')?;
            // "[ZPL], ID 137, cr_txg 45, 384K, 9 objects"
            let refer = rest.split(", ").nth(3)?;
            Some((name.to_string(), refer.to_string()))
        })
        .collect()
}

/// Opens the one pool on `devices`, walks every dataset, compares with zdb; returns
/// (datasets read, files compared).
fn read_whole_pool(pool: &PoolDir) -> (usize, usize) {
    let devices = open_devices(&pool.devices);
    let candidates = find_pools(&devices, 0);
    assert_eq!(candidates.len(), 1, "{:?}", pool.devices);
    let opened = OpenZfsPool::open_devices(&candidates[0], &devices)
        .unwrap_or_else(|e| panic!("{}: {e}", candidates[0].name));
    let mut datasets = 0;
    let mut files = 0;
    let referenced = zdb_referenced(&pool.dir, &opened.name);
    let all = opened.datasets().expect("the dataset tree");
    let ours: BTreeSet<&str> = all.iter().map(|d| d.name.as_str()).collect();
    let theirs: BTreeSet<&str> = referenced
        .keys()
        .map(String::as_str)
        .filter(|n| *n != "mos")
        .collect();
    assert_eq!(ours, theirs, "the datasets zdb lists");
    for ds in all {
        // REFER, as `zfs list` will show it, is what zdb's dataset line says.
        assert_eq!(
            referenced.get(&ds.name).map(String::as_str),
            Some(zetta_zutil::nicenum::nicenum(ds.phys.referenced_bytes).as_str()),
            "{}: referenced bytes",
            ds.name
        );
        if ds.is_encrypted() {
            continue;
        }
        let os = opened
            .objset(&ds)
            .unwrap_or_else(|e| panic!("{}: object set: {e}", ds.name));
        if os.phys.os_type != 2 {
            continue;
        }
        let fs = ZplFs::open(os).unwrap_or_else(|e| panic!("{}: {e}", ds.name));
        let ours = walk(&fs);
        // By object set id: zdb takes a bare pool name as "the whole pool".
        let zdb = zdb_objects(&pool.dir, &format!("{}/{}", opened.name, ds.dataset_obj));
        files += compare_with_zdb(&ds.name, &ours, &zdb);
        datasets += 1;
    }
    (datasets, files)
}

const UPGRADE: &str = "cli_root/zpool_upgrade/blockfiles";

// Why: every single-device pool OpenZFS ships, old (v1..v15, ZPL 1..4 znodes, lzjb,
// fletcher2) to modern (v5000: SA, zstd, lz4, embedded blocks) and big-endian (SPARC),
// must read whole, every file equal to what zdb sees.
#[test]
fn every_single_device_fixture_reads_whole_and_matches_zdb() {
    let mut rels: Vec<String> = (1..=15)
        .map(|v| format!("{UPGRADE}/zfs-pool-v{v}.dat.bz2"))
        .collect();
    rels.extend(
        [
            "cli_root/zpool_import/blockfiles/unclean_export.dat.bz2",
            "compression/testpool_zstd.tar.gz",
            "history/i386.migratedpool.DAT.Z",
            "history/sparc.migratedpool.DAT.Z",
            "history/zfs-pool-v4.dat.Z",
        ]
        .map(String::from),
    );
    let mut total = 0;
    for rel in &rels {
        let pool = unpack(&[rel]);
        let (datasets, files) = read_whole_pool(&pool);
        assert!(datasets >= 1, "{rel}: no filesystem read");
        eprintln!("{rel}: {datasets} datasets, {files} files match zdb");
        total += files;
    }
    assert!(total > 300, "only {total} files compared");
}

// Why: a pool spread over devices reads through the mirror and raidz maps (raidz1's
// column swap included) and stripes over top-level vdevs.
#[test]
fn mirror_raidz_and_stripe_triples_read_whole() {
    for v in 1..=3 {
        for kind in ["mirror", "raidz", "stripe"] {
            let rels: Vec<String> = (1..=3)
                .map(|i| format!("{UPGRADE}/zfs-pool-v{v}{kind}{i}.dat.bz2"))
                .collect();
            let refs: Vec<&str> = rels.iter().map(String::as_str).collect();
            let pool = unpack(&refs);
            let (datasets, files) = read_whole_pool(&pool);
            assert!(datasets >= 1 && files >= 1, "v{v} {kind}");
        }
    }
}

// Why: OpenZFS refuses what it cannot read with a reason; so must the reader: a pool
// version from the future, and a missing device of a non-redundant pool.
#[test]
fn unsupported_versions_are_refused() {
    let pool = unpack(&[&format!("{UPGRADE}/zfs-pool-v999.dat.bz2")]);
    let devices = open_devices(&pool.devices);
    let candidates = find_pools(&devices, 0);
    assert_eq!(candidates.len(), 1);
    match OpenZfsPool::open_devices(&candidates[0], &devices) {
        Err(OpenError::Version(999)) => {}
        Err(other) => panic!("v999: {other}"),
        Ok(_) => panic!("v999 opened"),
    }
}

/// Resolves a relative path from the root of `fs`.
fn resolve(fs: &ZplFs, path: &std::path::Path) -> u64 {
    let mut object = fs.root;
    for part in path.iter() {
        object = fs
            .lookup(object, part.as_encoded_bytes())
            .unwrap()
            .unwrap_or_else(|| panic!("{} not found", path.display()));
    }
    object
}

// Why: a second, independent writer (zfs-fuse, pool version 23, ZPL 4) made these pools in
// this test: every file kind it wrote — multi-record, compressed (gzip-9, lzjb), sparse
// and empty files, a fat-ZAP directory, short and long symlinks, hardlinks, a fifo, a
// device node, xattrs on files and directories — on a single disk and on raidz1, in the
// head and in a snapshot, must read back as written.
#[test]
fn pools_zfs_fuse_writes_read_back_as_written() {
    assert!(
        common::zfs_fuse::available(),
        "zfs-fuse is missing: scripts/setup.sh installs it (with sanoid)"
    );
    let dir = std::env::temp_dir().join(format!("zetta-ozfuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("mnt")).unwrap();
    let disk = |name: &str| common::zfs_fuse::vdev_file(&dir.join(name));
    let single = disk("single.img");
    let raidz: Vec<String> = (1..=3).map(|i| disk(&format!("rz{i}.img"))).collect();
    let mut daemon = common::zfs_fuse::ZfsFuse::start();
    let tag = std::process::id() % 100_000;
    let (p1, p2) = (format!("zfs{tag}"), format!("zfsrz{tag}"));
    daemon.create_pool(&p1, &dir.join("mnt/a"), &[&single]);
    let mut args = vec!["raidz1"];
    args.extend(raidz.iter().map(String::as_str));
    daemon.create_pool(&p2, &dir.join("mnt/b"), &args);
    daemon.zfs(&["create", "-o", "compression=gzip-9", &format!("{p1}/gz")]);
    daemon.zfs(&["create", "-o", "compression=lzjb", &format!("{p2}/lzjb")]);
    let mut written = Vec::new();
    for (fs, mnt) in [
        (p1.clone(), dir.join("mnt/a")),
        (format!("{p1}/gz"), dir.join("mnt/a/gz")),
        (p2.clone(), dir.join("mnt/b")),
        (format!("{p2}/lzjb"), dir.join("mnt/b/lzjb")),
    ] {
        written.push((fs, common::zfs_fuse::populate(&mnt)));
    }
    daemon.zfs(&["snapshot", "-r", &format!("{p1}@snap")]);
    // Changed after the snapshot: the head and the snapshot differ.
    std::fs::write(dir.join("mnt/a/small.txt"), b"changed after the snapshot\n").unwrap();
    daemon.export_all();
    drop(daemon);

    for (pool_name, paths) in [
        (p1.clone(), vec![dir.join("single.img")]),
        (p2.clone(), raidz.iter().map(PathBuf::from).collect()),
    ] {
        let devices = open_devices(&paths);
        let candidates = find_pools(&devices, 0);
        assert_eq!(candidates.len(), 1);
        let pool = OpenZfsPool::open_devices(&candidates[0], &devices)
            .unwrap_or_else(|e| panic!("{pool_name}: {e}"));
        assert_eq!(pool.name, pool_name);
        let datasets = pool.datasets().unwrap();
        for ds in &datasets {
            let fs = ZplFs::open(pool.objset(ds).unwrap()).unwrap();
            compare_with_zdb(
                &ds.name,
                &walk(&fs),
                &zdb_objects(&dir, &format!("{pool_name}/{}", ds.dataset_obj)),
            );
            let head = ds.name.split('@').next().unwrap();
            let Some((_, populated)) = written.iter().find(|(n, _)| n == head) else {
                panic!("{}: a dataset the test did not make", ds.name);
            };
            for (path, data) in &populated.files {
                let object = resolve(&fs, path);
                let got = fs.read(object, 0, usize::MAX / 2).unwrap();
                if ds.name == p1 && path.to_str() == Some("small.txt") {
                    assert_eq!(got, b"changed after the snapshot\n");
                } else {
                    assert!(&got == data, "{}: {} differs", ds.name, path.display());
                }
            }
            for (path, target) in &populated.symlinks {
                let object = resolve(&fs, path);
                assert_eq!(
                    fs.readlink(object).unwrap(),
                    target.as_os_str().as_encoded_bytes()
                );
            }
            for (path, name, value) in &populated.xattrs {
                let object = resolve(&fs, path);
                let xattrs = fs.xattrs(object).unwrap();
                assert!(
                    xattrs
                        .iter()
                        .any(|(n, v)| n == name.as_bytes() && v == value),
                    "{}: xattr {name} of {}",
                    ds.name,
                    path.display()
                );
            }
            let small = fs
                .attr(resolve(&fs, std::path::Path::new("small.txt")))
                .unwrap();
            assert_eq!((small.uid, small.gid, small.links), (1234, 5678, 2));
            let text = fs
                .attr(resolve(&fs, std::path::Path::new("text.txt")))
                .unwrap();
            // The pool zfs-fuse wrote holds whole seconds for a time set through FUSE.
            assert_eq!(text.mtime.sec, 1_500_000_000, "mtime");
            assert!([0, 987_654_321].contains(&text.mtime.nsec), "mtime nsec");
            let fifo = fs.attr(resolve(&fs, std::path::Path::new("fifo"))).unwrap();
            assert_eq!(fifo.mode & 0o170000, 0o010000);
        }
        let names: Vec<&str> = datasets.iter().map(|d| d.name.as_str()).collect();
        if pool_name == p1 {
            assert_eq!(
                names,
                [
                    p1.clone(),
                    format!("{p1}@snap"),
                    format!("{p1}/gz"),
                    format!("{p1}/gz@snap")
                ]
            );
        } else {
            assert_eq!(names, [p2.clone(), format!("{p2}/lzjb")]);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// Why: a pool with encrypted datasets reads without their keys, as OpenZFS imports it: the
// encrypted filesystems and volumes are listed and recognised (their object sets are
// MAC-protected ciphertext), never read as if plain; the rest reads.
#[test]
fn encrypted_datasets_are_listed_and_recognised_the_rest_reads() {
    let pool = unpack(&["cli_root/zpool_import/blockfiles/cryptv0.dat.bz2"]);
    let devices = open_devices(&pool.devices);
    let candidates = find_pools(&devices, 0);
    assert_eq!(candidates.len(), 1);
    let opened = OpenZfsPool::open_devices(&candidates[0], &devices).expect("opens");
    let listed: Vec<(String, bool)> = opened
        .datasets()
        .unwrap()
        .iter()
        .map(|d| (d.name.clone(), d.is_encrypted()))
        .collect();
    assert_eq!(
        listed,
        [
            ("cryptv0".to_string(), false),
            ("cryptv0/testfs".to_string(), true),
            ("cryptv0/testfs@snap1".to_string(), true),
            ("cryptv0/testvol".to_string(), true),
            ("cryptv0/testvol@snap1".to_string(), true),
        ]
    );
    let (datasets, files) = read_whole_pool(&pool);
    assert_eq!(datasets, 1);
    assert!(files >= 1);
}

/// zdb -b's "bp count" and "bp allocated".
fn zdb_block_counts(dir: &std::path::Path, pool: &str) -> (u64, u64) {
    let out = std::process::Command::new(common::oracle::zdb())
        .args(["-A", "-e", "-p"])
        .arg(dir)
        .args(["-b", pool])
        .output()
        .expect("zdb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("zdb -b {pool}: no '{name}' in\n{text}"))
    };
    (field("bp count:"), field("bp allocated:"))
}

// Why: a scrub of a real pool must read and verify every copy of every block (the issue's
// read-only scrub); counted against zdb -b, which walks the same tree.
#[test]
fn scrub_verifies_every_block_like_zdb_counts_them() {
    for rels in [
        vec!["compression/testpool_zstd.tar.gz".to_string()],
        vec![format!("{UPGRADE}/zfs-pool-v15.dat.bz2")],
        vec!["history/sparc.migratedpool.DAT.Z".to_string()],
        (1..=3)
            .map(|i| format!("{UPGRADE}/zfs-pool-v3raidz2{i}.dat.bz2"))
            .collect(),
    ] {
        let refs: Vec<&str> = rels.iter().map(String::as_str).collect();
        let pool = unpack(&refs);
        let devices = open_devices(&pool.devices);
        let candidates = find_pools(&devices, 0);
        let opened = OpenZfsPool::open_devices(&candidates[0], &devices).unwrap();
        let report = zetta::spa::openzfs::scan::scrub(&opened);
        let (count, allocated) = zdb_block_counts(&pool.dir, &opened.name);
        eprintln!(
            "{rels:?}: ours {} blocks {} bytes, zdb {count} blocks {allocated} bytes; errors {:?}",
            report.blocks, report.allocated_bytes, report.errors
        );
        assert!(report.errors.is_empty(), "{rels:?}: {:?}", report.errors);
        // zdb's count includes embedded pointers (its "non-pointer bps") and the intent
        // log chain (the v3 raidz2 pool's one 12 KiB log block).
        assert_eq!(
            (report.blocks + report.embedded, report.allocated_bytes),
            (count, allocated),
            "{rels:?}: blocks and allocated bytes against zdb -b"
        );
    }
}

// Why: a scrub must find damage, not only walk: one copy of a ditto (MOS) block damaged is
// a bad copy the block still reads past; damage to a data block's only copy is an
// unrecoverable block, reported, with the walk going on.
#[test]
fn scrub_reports_damaged_copies_and_lost_blocks() {
    use std::os::unix::fs::FileExt;
    let pool = unpack(&["compression/testpool_zstd.tar.gz"]);
    let devices = open_devices(&pool.devices);
    let candidates = find_pools(&devices, 0);
    let opened = OpenZfsPool::open_devices(&candidates[0], &devices).unwrap();
    // The second copy of the MOS object set block, and the first data block of a
    // single-copy file in testpool_zstd/x86_64 (object 2, found through the reader).
    let rootbp = zetta::zio::openzfs::blkptr::BlockPointer::decode(
        opened.uberblock.order,
        &opened.uberblock.rootbp,
        0,
    )
    .unwrap();
    let mos_copy = rootbp.dva(1);
    let ds = opened
        .datasets()
        .unwrap()
        .into_iter()
        .find(|d| d.name == "testpool_zstd/x86_64")
        .unwrap();
    let os = opened.objset(&ds).unwrap();
    let file = os.dnode(2).unwrap();
    let l1 =
        zetta::zio::openzfs::blkptr::BlockPointer::decode(file.order, &file.blkptrs[0], 0).unwrap();
    assert_eq!(l1.level(), 1, "object 2 is a two-level file");
    let l1_data = os.read_raw(&file.blkptrs[0], file.order).unwrap();
    let l0 = zetta::zio::openzfs::blkptr::BlockPointer::decode(
        zetta::dmu::openzfs::raw_bp_byte_order(&file.blkptrs[0], file.order),
        &l1_data,
        0,
    )
    .unwrap();
    assert_eq!(l0.readable_dvas().len(), 1);
    drop(os);
    drop(opened);
    let image = std::fs::OpenOptions::new()
        .write(true)
        .open(&pool.devices[0])
        .unwrap();
    for dva in [mos_copy, l0.dva(0)] {
        let at = (4 << 20) + dva.offset_bytes().unwrap();
        image.write_all_at(&[0xa5; 512], at).unwrap();
    }
    drop(image);
    let devices = open_devices(&pool.devices);
    let candidates = find_pools(&devices, 0);
    let opened = OpenZfsPool::open_devices(&candidates[0], &devices).unwrap();
    let report = zetta::spa::openzfs::scan::scrub(&opened);
    assert_eq!(report.bad_copies, 2, "{:?}", report.errors);
    assert_eq!(report.unrecoverable, 1, "{:?}", report.errors);
    let lost = report
        .errors
        .iter()
        .find(|e| e.copy.is_none())
        .expect("the lost block is reported");
    assert_eq!(lost.objset, "testpool_zstd/x86_64");
    assert_eq!(lost.object, 2, "the lost block is named by its object");
    // The rest of the pool still read: every block was visited.
    assert_eq!(report.blocks + report.embedded, 138);
}
