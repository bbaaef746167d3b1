//! OpenZFS 2.3's send streams received through the CLI and checked file by file (issue 15,
//! "Done when": "Zetta receives ... `zdb -B` streams; files identical"). `zdb -B -e -p DIR
//! POOL/OBJSETID [FLAGS]` writes a real send stream of an objset in userspace, with `-L`
//! (large blocks), `-c` (compressed WRITEs, here zstd), `-e` (WRITE_EMBEDDED) as asked.
//! Each stream of the little-endian dataset of OpenZFS's `testpool_zstd` fixture is received with `zfs receive`, mounted, and its tree digested with
//! `tar | md5sum`; the digest must be the one of the same dataset read through Zetta's
//! read-only import of the pool. Two independent paths to the same files: OpenZFS's reader
//! and sender then Zetta's receiver, and Zetta's reader of OpenZFS's blocks.

mod common;

use common::openzfs::{oracle, place};
use common::Lab;
use std::path::Path;

// Why: see the header. Before this, zdb -B streams were checked object by object through
// the engine (zetta/tests/openzfs_send.rs) but never as files through a mount, nor with
// -L/-c/-e.
#[test]
fn zdb_streams_are_received_with_identical_files() {
    let lab = Lab::new();
    let dir = place(&lab, "pools", &["compression/testpool_zstd.tar.gz"]);
    let d = dir.to_str().unwrap();
    let root = lab.dir.join("root");
    lab.ok(
        "zpool",
        &[
            "import",
            "-d",
            d,
            "-o",
            "readonly=on",
            "-R",
            root.to_str().unwrap(),
            "testpool_zstd",
        ],
    );
    // Objset id of the little-endian ZPL dataset (zdb -d lists it). Not the big-endian
    // one, ppc64_fbsd (76): OpenZFS's sender puts its embedded blocks in the stream in
    // the stored (big-endian) order — its unlinked set, object 33, an EMBEDDED microzap,
    // goes as `80 00 00 00 00 00 00 03` (`zstream dump -vd`) while every other ZAP is
    // byteswapped to the host's — so the received filesystem cannot be mounted ("corrupt
    // ZAP object 33"), as OpenZFS's own receiver would store it too.
    let datasets = [(137, "x86_64")];
    let mut expected = Vec::new();
    for (_, fs) in datasets {
        let mnt = root.join(format!("testpool_zstd/{fs}"));
        let digest = lab.tree_digest(&mnt, Some("./.zfs"));
        assert!(digest.contains("zstd"), "{digest}");
        expected.push(digest);
    }
    lab.ok("zpool", &["export", "testpool_zstd"]);

    let disk = lab.disk("recv.d0", 1 << 30);
    let mnt = lab.dir.join("rt");
    lab.ok(
        "zpool",
        &["create", "-m", mnt.to_str().unwrap(), "rt", &disk],
    );
    for ((objset, fs), want) in datasets.iter().zip(&expected) {
        for flags in ["", "L", "c", "e", "Lce"] {
            let stream = lab.dir.join(format!("{fs}-{flags}.zstream"));
            let mut args = vec![
                "-B".to_string(),
                "-e".to_string(),
                "-p".to_string(),
                d.to_string(),
                format!("testpool_zstd/{objset}"),
            ];
            if !flags.is_empty() {
                args.push(flags.to_string());
            }
            let out = std::process::Command::new(oracle::zdb())
                .args(&args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "zdb {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::write(&stream, &out.stdout).unwrap();
            let target = format!("rt/{fs}-{}", if flags.is_empty() { "plain" } else { flags });
            let received = lab.sh(&format!("zfs receive '{target}' < '{}'", stream.display()));
            assert_eq!(
                received.code, 0,
                "zfs receive of zdb -B {flags}: {}",
                received.stderr
            );
            let here = mnt.join(target.trim_start_matches("rt/"));
            common_wait_mounted(&here);
            assert_eq!(
                &lab.tree_digest(&here, Some("./.zfs")),
                want,
                "{fs} with zdb -B {flags}"
            );
        }
    }
    let scrub = lab.sh("zpool scrub -w rt && zpool status rt");
    assert!(scrub.stdout.contains("with 0 errors"), "{}", scrub.stdout);
    lab.ok("zpool", &["export", "rt"]);
}

/// Waits (up to 30 s) for a FUSE mount at `dir`.
fn common_wait_mounted(dir: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let wanted = format!(" {} ", dir.display());
        if mounts.contains(&wanted) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} not mounted",
            dir.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
