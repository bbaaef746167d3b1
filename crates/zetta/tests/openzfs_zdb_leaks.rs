//! OpenZFS's `zdb -bcc` finds no leak in a pool Zetta wrote (issue 14, format 16).
//!
//! Why: `zdb -bcc` traverses every block reachable from the uberblock, verifies its
//! checksum, and claims it in the space maps it loaded; at the end the traversed space must
//! equal the maps' allocated space ("No leaks (block sum matches space maps exactly)").
//! Until format 16 Zetta left the MOS's own blocks (and the space maps' blocks) out of the
//! maps and found them at import by walking the MOS, so zdb failed its claim
//! (`zio_claim(...) == 0 (0x2 == 0)`) or, with -AAA, reported "leaked -110592". Now every
//! txg's maps hold all of that txg's allocations, in as many sync passes as it takes
//! (`spa::txg`, "sync passes"). Each test builds a pool through the engine with datasets,
//! some MiB of files, snapshots, a clone, frees that go to dead lists, a destroyed
//! snapshot and several commits, exports it, and has zdb check it, on a single disk, a
//! mirror and a raidz1, with copies=2 and with 512-byte sectors; zdb is the oracle from
//! scripts/oracle.sh (never skipped when missing).

mod common;

use common::oracle::zdb;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
use zetta::rand::SeededRng;
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::{Creds, FileKind, Timespec};

const DISK_SIZE_BYTES: u64 = 256 << 20;

/// A fresh directory of `count` sparse disks.
fn disks(name: &str, count: usize) -> (PathBuf, Vec<String>) {
    let dir = std::env::temp_dir().join(format!("zetta-leaks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let paths = (0..count)
        .map(|i| {
            let path = dir.join(format!("d{i}"));
            std::fs::File::create(&path)
                .unwrap()
                .set_len(DISK_SIZE_BYTES)
                .unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect();
    (dir, paths)
}

fn top(kind: TopKind, paths: &[String]) -> TopSpec {
    TopSpec {
        kind,
        leaves: paths
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    Arc::new(FileDevice::open(p).unwrap()) as DeviceRef,
                )
            })
            .collect(),
        is_log: false,
    }
}

/// Writes `files` files of `size_bytes` seeded bytes named `prefix<i>` into the root
/// directory of `dataset`.
fn write_files(spa: &mut Spa, dataset: &str, prefix: &str, files: usize, size_bytes: usize) {
    let mut rng = SeededRng::new(files as u64 * 31 + size_bytes as u64);
    let now = Timespec::now();
    for i in 0..files {
        let mut data = vec![0u8; size_bytes];
        rng.fill(&mut data);
        // A compressible quarter, so some blocks are compressed and small ones embedded.
        data[..size_bytes / 4].fill(7);
        spa.with_zpl(dataset, |vfs, os, ctx| {
            let name = format!("{prefix}{i}");
            let attr = vfs.create(
                os,
                ctx,
                vfs.root,
                name.as_bytes(),
                FileKind::Regular,
                0o644,
                Creds::default(),
                0,
                now,
            )?;
            vfs.write(os, ctx, attr.object, 0, &data, now)?;
            Ok(())
        })
        .unwrap();
    }
}

fn unlink(spa: &mut Spa, dataset: &str, name: &str) {
    spa.with_zpl(dataset, |vfs, os, ctx| {
        let gone = vfs.unlink(os, ctx, vfs.root, name.as_bytes(), Timespec::now())?;
        vfs.reclaim(os, ctx, gone.object)
    })
    .unwrap();
}

/// The life of the pool every test checks: datasets, files, snapshots, a clone, an
/// overwrite and an unlink under snapshots (dead lists), a destroyed snapshot, commits in
/// between; then export.
fn exercise(mut spa: Spa, copies: u8) {
    spa.create_filesystem("tank/a").unwrap();
    if copies > 1 {
        // Inherited by tank/a/b, and by the clone through its origin's data.
        spa.set_local_prop("tank/a", "copies", &copies.to_string())
            .unwrap();
    }
    spa.create_filesystem("tank/a/b").unwrap();
    write_files(&mut spa, "tank/a", "f", 4, 1 << 20);
    write_files(&mut spa, "tank/a/b", "small", 20, 3000);
    spa.sync().unwrap();
    spa.snapshot(&["tank/a@s1".to_string()]).unwrap();
    write_files(&mut spa, "tank/a", "g", 2, 512 << 10);
    unlink(&mut spa, "tank/a", "f0");
    spa.sync().unwrap();
    spa.snapshot(&["tank/a@s2".to_string(), "tank/a/b@s2".to_string()])
        .unwrap();
    spa.clone_snapshot("tank/a@s1", "tank/c").unwrap();
    write_files(&mut spa, "tank/c", "h", 2, 256 << 10);
    unlink(&mut spa, "tank/a", "g1");
    spa.sync().unwrap();
    spa.destroy_snapshot("tank/a@s2").unwrap();
    unlink(&mut spa, "tank/a/b", "small3");
    spa.sync().unwrap();
    spa.export().unwrap();
}

/// Runs `zdb -e -p DIR -bcc tank` and checks its verdict.
fn assert_no_leaks(dir: &Path) {
    let out = Command::new(zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(["-bcc", "tank"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "zdb -bcc: {stdout}{stderr}");
    assert!(
        stdout.contains("No leaks (block sum matches space maps exactly)"),
        "{stdout}{stderr}"
    );
    // zdb's words for a leak ("block traversal size X != alloc Y (leaked Z)", "leaked
    // space: vdev ..."), a checksum or read error ("Got error", "Error counts") or a
    // failed assertion. ("verify nothing leaked" is its banner.)
    for word in [
        "(leaked",
        "leaked space",
        "!= alloc",
        "error",
        "Error",
        "ASSERT",
    ] {
        assert!(
            !stdout.contains(word) && !stderr.contains(word),
            "zdb said {word:?}: {stdout}{stderr}"
        );
    }
}

fn check(name: &str, kind: TopKind, leaves: usize, ashift: u32, copies: u8) {
    let (dir, paths) = disks(name, leaves);
    let options = CreateOptions {
        ashift,
        ..CreateOptions::default()
    };
    let spa = Spa::create("tank", &[top(kind, &paths)], &options).unwrap();
    exercise(spa, copies);
    assert_no_leaks(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn zdb_finds_no_leak_on_a_single_disk() {
    check("single", TopKind::Single, 1, 12, 1);
}

#[test]
fn zdb_finds_no_leak_on_a_mirror() {
    check("mirror", TopKind::Mirror, 2, 12, 1);
}

#[test]
fn zdb_finds_no_leak_on_a_raidz1() {
    check("raidz1", TopKind::Raidz(1), 3, 12, 1);
}

// Ditto copies of file data (copies=2: three DVAs for its metadata, on one vdev) and
// 512-byte sectors (one-word entries counted in 512-byte units, MOS blocks of a sector).
#[test]
fn zdb_finds_no_leak_with_copies_2_and_ashift_9() {
    check("copies2-ashift9", TopKind::Single, 1, 9, 2);
}

#[test]
fn zdb_finds_no_leak_on_a_raidz1_with_copies_2() {
    check("raidz1-copies2", TopKind::Raidz(1), 3, 12, 2);
}
