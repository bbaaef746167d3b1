//! Labels and uberblocks of pools Zetta creates through its CLI, read by OpenZFS's own
//! `zdb -l` / `zdb -lu` (OpenZFS 2.3 from scripts/oracle.sh; see
//! crates/zetta/tests/common/oracle.rs): issue 14 increment 2 (format 5).

mod common;

use common::openzfs::oracle;
use common::Lab;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use zetta::io::{BlockDevice, FileDevice};
use zetta::spa::uberblock::Uberblock;
use zetta::vdev::label;

const DISK_SIZE_BYTES: u64 = 128 << 20;

/// OpenZFS's zdb, or `None` (the test is skipped, saying why) when the oracle is absent.
fn zdb() -> Option<PathBuf> {
    let zdb = std::env::var_os("ZETTA_ZDB")
        .map(PathBuf::from)
        .unwrap_or_else(|| oracle::oracle_prefix().join("sbin/zdb"));
    if zdb.is_file() {
        Some(zdb)
    } else {
        eprintln!(
            "skipped: {} is missing (scripts/oracle.sh installs OpenZFS's zdb)",
            zdb.display()
        );
        None
    }
}

fn run_zdb(zdb: &PathBuf, args: &[&str], device: &str) -> String {
    let out = Command::new(zdb).args(args).arg(device).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "zdb {args:?} {device}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `name: value` lines of the first label zdb prints, with their indentation depth.
fn field<'a>(text: &'a str, indent: usize, name: &str) -> Vec<&'a str> {
    let prefix = format!("{}{name}: ", " ".repeat(indent));
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect()
}

fn number(text: &str, indent: usize, name: &str) -> u64 {
    let values = field(text, indent, name);
    values
        .first()
        .unwrap_or_else(|| panic!("no {name} at indent {indent} in\n{text}"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number in\n{text}"))
}

/// Every uberblock `zdb -lu` printed: (txg, guid_sum, timestamp).
fn zdb_uberblocks(text: &str) -> BTreeSet<(u64, u64, u64)> {
    let mut out = BTreeSet::new();
    let mut current: Option<[u64; 3]> = None;
    let mut flush = |current: &mut Option<[u64; 3]>| {
        if let Some(ub) = current.take() {
            out.insert((ub[0], ub[1], ub[2]));
        }
    };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Uberblock[") {
            flush(&mut current);
            current = Some([0; 3]);
            continue;
        }
        let Some(ub) = current.as_mut() else { continue };
        for (i, name) in ["txg", "guid_sum", "timestamp"].iter().enumerate() {
            if let Some(rest) = line.strip_prefix(&format!("{name} = ")) {
                ub[i] = rest.split_whitespace().next().unwrap().parse().unwrap();
            }
        }
    }
    flush(&mut current);
    out
}

/// Every valid uberblock Zetta itself finds on the device: (txg, guid_sum, timestamp).
fn zetta_uberblocks(device: &str, ashift: u32) -> BTreeSet<(u64, u64, u64)> {
    let device = FileDevice::open_read_only(device).unwrap();
    assert!(device.size_bytes() >= DISK_SIZE_BYTES);
    label::read_ring(&device, ashift)
        .into_iter()
        .filter_map(|(offset, bytes)| Uberblock::decode(&bytes, offset))
        .map(|ub| (ub.txg.0, ub.guid_sum, ub.timestamp_secs))
        .collect()
}

/// Runs a `zpool` command that must succeed, with a daemon that serves no mounts (tests
/// run in parallel, and every pool here is called `tank`: no shared mountpoint).
fn zpool_ok(lab: &Lab, args: &[&str]) -> String {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
    out.stdout
}

/// Creates `layout` (after the pool name) on `disks` new files, exports it, and checks what
/// OpenZFS's zdb reads from the first device's labels and rings against what Zetta wrote.
fn check_layout(zdb: &PathBuf, layout: &[&str], disks: usize, vdev_type: &str, ashift: u64) {
    let lab = Lab::new();
    let paths: Vec<String> = (0..disks)
        .map(|i| lab.disk(&format!("d{i}"), DISK_SIZE_BYTES))
        .collect();
    let ashift_opt = format!("ashift={ashift}");
    let mut args = vec!["create", "-o", &ashift_opt, "tank"];
    args.extend_from_slice(layout);
    args.extend(paths.iter().map(String::as_str));
    zpool_ok(&lab, &args);
    let guid: u64 = zpool_ok(&lab, &["get", "-H", "-o", "value", "guid", "tank"])
        .trim()
        .parse()
        .unwrap();
    zpool_ok(&lab, &["export", "tank"]);

    for device in &paths {
        let full = run_zdb(zdb, &["-l"], device);
        assert!(!full.contains("failed to unpack"), "{full}");
        assert!(!full.contains("Bad label cksum"), "{full}");
        // The four labels hold one config (zdb prints it once, for all four).
        assert!(full.contains("    labels = 0 1 2 3 \n"), "{full}");
        // Nothing a reader lacks: Zetta's one feature is write-only, in the MOS.
        assert!(full.contains("    features_for_read:\n"), "{full}");
        assert!(!full.contains("org.zetta:private_mos"), "{full}");
        // Format 26: OpenZFS's keys only (no `org.zetta:format`, no `org.zetta:vdev_root`).
        assert!(!full.contains("org.zetta:"), "{full}");
        let text = &full[..full.find("    features_for_read:").unwrap()];
        assert_eq!(field(text, 4, "name"), ["'tank'"], "{text}");
        assert_eq!(number(text, 4, "version"), 5000);
        assert_eq!(number(text, 4, "state"), 1, "exported");
        assert_eq!(number(text, 4, "pool_guid"), guid);
        assert_eq!(number(text, 4, "vdev_children"), 1);
        assert_eq!(field(text, 8, "type"), [format!("'{vdev_type}'")]);
        assert_eq!(number(text, 8, "ashift"), ashift);
        assert_eq!(number(text, 8, "id"), 0);
        let leaf_guid = number(text, 4, "guid");
        let top_guid = number(text, 4, "top_guid");
        assert_eq!(number(text, 8, "guid"), top_guid);
        if disks > 1 {
            let children = field(text, 12, "path");
            assert_eq!(
                children,
                paths.iter().map(|p| format!("'{p}'")).collect::<Vec<_>>()
            );
            assert!(field(text, 12, "guid").contains(&leaf_guid.to_string().as_str()));
        } else {
            assert_eq!(leaf_guid, top_guid);
            assert_eq!(field(text, 8, "path"), [format!("'{device}'")]);
        }
        // The guid sum of the tree: the root's (the pool guid), the top-level vdev's and
        // every leaf's.
        let leaves: u64 = if disks > 1 {
            field(text, 12, "guid")
                .iter()
                .map(|g| g.parse::<u64>().unwrap())
                .fold(0, u64::wrapping_add)
        } else {
            0
        };
        let guid_sum = guid.wrapping_add(top_guid).wrapping_add(leaves);
        let label_txg = number(text, 4, "txg");

        let text = run_zdb(zdb, &["-lu"], device);
        let theirs = zdb_uberblocks(&text);
        let ours = zetta_uberblocks(device, ashift as u32);
        assert!(!ours.is_empty());
        assert_eq!(theirs, ours, "zdb -lu:\n{text}");
        let newest = ours.iter().next_back().unwrap();
        assert_eq!(newest.0, label_txg, "the export's txg wrote the last label");
        assert!(
            ours.iter().all(|ub| ub.1 == guid_sum),
            "{ours:?} vs {guid_sum}"
        );
    }
    // OpenZFS finds the pool from these labels and opens it (format 26: no private
    // feature is left): zdb -d walks it (tests/openzfs_zdb_walk.rs
    // checks what it lists).
    let out = Command::new(zdb)
        .args(["-e", "-p"])
        .arg(&lab.dir)
        .arg("-d")
        .arg("tank")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// Why: format 4 wrote private "ZETTACFG" labels and "ZETTAUB1" uberblocks that OpenZFS's
// tools could not read; zdb -l must now print the config Zetta wrote (four good labels,
// OpenZFS's keys) and zdb -lu the same uberblocks Zetta reads, for a single device.
#[test]
fn zdb_reads_the_labels_of_a_single_device_pool() {
    let Some(zdb) = zdb() else { return };
    check_layout(&zdb, &[], 1, "file", 12);
}

// Why: as above for a mirror (children in vdev_tree, 1 KiB ring slots at ashift 9).
#[test]
fn zdb_reads_the_labels_of_a_mirror() {
    let Some(zdb) = zdb() else { return };
    check_layout(&zdb, &["mirror"], 2, "mirror", 9);
}

// Why: as above for raidz2 (nparity, 4 children, 8 KiB ring slots at ashift 13).
#[test]
fn zdb_reads_the_labels_of_a_raidz2() {
    let Some(zdb) = zdb() else { return };
    check_layout(&zdb, &["raidz2"], 4, "raidz", 13);
}

// Why: format 5 no longer reads format-4 pools (private "ZETTACFG" labels); `zpool import`
// must list such a pool as UNAVAIL and refuse it with a clear message and exit 1, without
// writing to its device, instead of not seeing it or misreading it.
#[test]
fn format_4_pools_are_listed_and_refused() {
    let lab = Lab::new();
    let disk = lab.disk("old", DISK_SIZE_BYTES);
    let mut config = zetta::nvlist::NvList::new();
    config
        .set_str("name", "old")
        .set_u64("pool_guid", 77)
        .set_u64("version", 4)
        .set_u64("state", 1);
    let payload = config.encode();
    let mut area = vec![0u8; 64 + payload.len()];
    area[0..8].copy_from_slice(b"ZETTACFG");
    area[8] = 1;
    area[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    area[64..].copy_from_slice(&payload);
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new().write(true).open(&disk).unwrap();
        file.write_all_at(&area, 16 << 10).unwrap();
    }
    let head = |path: &str| {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; 512 << 10];
        std::fs::File::open(path)
            .unwrap()
            .read_exact_at(&mut bytes, 0)
            .unwrap();
        bytes
    };
    let before = head(&disk);
    let dir = lab.dir.to_string_lossy().into_owned();
    let format = zetta::spa::uberblock::FORMAT_VERSION;
    assert_eq!(
        zpool_ok(&lab, &["import", "-d", &dir]),
        format!(
            "  pool: old\n    id: 77\n state: UNAVAIL\n\
             status: The pool is formatted using an incompatible version.\n\
             action: The pool cannot be imported. It is in Zetta's on-disk format 4;\n\
             \tthis version reads format {format} only. Recreate the pool from backup.\n"
        )
    );
    let mut command = lab.command("zpool");
    command
        .args(["import", "-d", &dir, "old"])
        .env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        format!(
            "cannot import 'old': pool is formatted using an unsupported ZFS version\n\
             the pool is in Zetta's on-disk format 4; this version reads format {format} only\n"
        )
    );
    assert!(
        head(&disk) == before,
        "the refused pool's labels were written"
    );
}
