//! Post "Primer: How data is stored on-disk with ZFS" (seeds 001, 002): what each vdev type
//! offers, that there is no redundancy above the vdev, that a single disk detects but
//! cannot repair corruption, and growing vdevs by replacing their disks with larger ones.

use crate::lab::{
    assert_unimportable, cksum_of, damaged_files, data_error_count, read_matches, scan_outcome,
    write_random, SeedLab,
};
use std::io::{Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;

/// `zpool list -Hp -o size` and `zfs list` USED + AVAIL of the pool's root filesystem.
fn sizes(lab: &SeedLab, pool: &str) -> (u64, u64) {
    let size = lab
        .zpool_ok(&["list", "-Hp", "-o", "size", pool])
        .trim()
        .parse()
        .unwrap();
    let space: u64 = lab
        .zfs_ok(&["list", "-Hp", "-o", "used,avail", pool])
        .split_whitespace()
        .map(|v| v.parse::<u64>().unwrap())
        .sum();
    (size, space)
}

/// Why: the post's capacity rules, as the two commands show them. `zfs list` (USED +
/// AVAIL, what files can take) follows the post: a mirror offers its smallest disk, "a
/// six-disk RAIDZ1 vdev offers the storage capacity of five disks, an eight-disk RAIDZ2
/// vdev offers the storage capacity of six disks". `zpool list` SIZE is OpenZFS's raw
/// figure: one disk for a mirror, all disks (parity included) for raidz.
#[test]
fn capacity_of_each_vdev_type() {
    let lab = SeedLab::new();
    let disks: Vec<String> = (0..8).map(|i| lab.disk(&format!("d{i}"), GIB)).collect();
    let big = lab.disk("big", 2 * GIB);
    let create = |args: &[&str]| {
        let mut full = vec!["create", "-m", "none"];
        full.extend_from_slice(args);
        lab.zpool_ok(&full);
        let name = args
            .iter()
            .find(|a| !a.starts_with('-'))
            .expect("a pool name");
        let out = sizes(&lab, name);
        lab.zpool_ok(&["destroy", name]);
        out
    };
    let near = |value: u64, expected: f64| {
        let off = (value as f64 - expected).abs() / expected;
        assert!(off <= 0.02, "{value} is not within 2% of {expected}");
    };
    // "Single-disk vdevs … The performance profile of a single-disk vdev is that of … that
    // single disk": the unit the others are measured in.
    let (single_size, single_space) = create(&["single", &disks[0]]);
    assert!(single_size as f64 >= GIB as f64 * 0.97, "{single_size}");
    // "A mirror vdev offers usable storage capacity equivalent to that of its smallest
    // member disk": a 1G + 2G mirror holds what one 1G disk holds (`-f`: OpenZFS refuses
    // members of different sizes without it, "mirror contains devices of different sizes").
    let (mirror_size, mirror_space) = create(&["-f", "pair", "mirror", &disks[1], &big]);
    near(mirror_size, single_size as f64);
    near(mirror_space, single_space as f64);
    // "a six-disk RAIDZ1 vdev offers the storage capacity of five disks"
    let mut raidz1 = vec!["rz1", "raidz1"];
    raidz1.extend(disks[..6].iter().map(String::as_str));
    let (raidz1_size, raidz1_space) = create(&raidz1);
    near(raidz1_space, 5.0 * single_space as f64);
    near(raidz1_size, 6.0 * single_size as f64);
    // "an eight-disk RAIDZ2 vdev offers the storage capacity of six disks"
    let mut raidz2 = vec!["rz2", "raidz2"];
    raidz2.extend(disks.iter().map(String::as_str));
    let (raidz2_size, raidz2_space) = create(&raidz2);
    near(raidz2_space, 6.0 * single_space as f64);
    near(raidz2_size, 8.0 * single_size as f64);
    // "You may create RAIDZ vdevs using mismatched disk sizes, but the vdev's capacity will
    // be based around the smallest member disk": five 1G disks and a 2G one = six 1G.
    let mut mixed = vec!["-f", "mixed", "raidz1"];
    mixed.extend(disks[..5].iter().map(String::as_str));
    mixed.push(&big);
    let (_, mixed_space) = create(&mixed);
    near(mixed_space, raidz1_space as f64);
    let disks_of = |space: u64| space as f64 / single_space as f64;
    eprintln!(
        "seeds capacities in disks (zfs list USED+AVAIL / zpool list SIZE): mirror {:.2}/{:.2}, \
         raidz1 of 6 {:.2}/{:.2} (post 5), raidz2 of 8 {:.2}/{:.2} (post 6), raidz1 of 5x1G+2G \
         {:.2}",
        disks_of(mirror_space),
        mirror_size as f64 / single_size as f64,
        disks_of(raidz1_space),
        raidz1_size as f64 / single_size as f64,
        disks_of(raidz2_space),
        raidz2_size as f64 / single_size as f64,
        disks_of(mixed_space)
    );
}

/// Why: "There is absolutely no parity or redundancy at the pool level. If you lose any
/// vdev, you've lost the entire pool … Even if you 'didn't write to anything on that vdev
/// yet'". A pool of two mirrors survives losing one disk of a mirror (DEGRADED), not a
/// whole mirror; a vdev added a moment ago and still empty takes the pool with it too.
#[test]
fn losing_any_top_level_vdev_loses_the_pool() {
    let lab = SeedLab::new();
    let dir = lab.path("disks");
    let disk = |name: &str| lab.disk(&format!("disks/{name}"), 256 << 20);
    let (a0, a1, b0, b1) = (disk("a0"), disk("a1"), disk("b0"), disk("b1"));
    let mnt = lab.path("mnt");
    lab.zpool_ok(&[
        "create", "-m", &mnt, "tank", "mirror", &a0, &a1, "mirror", &b0, &b1,
    ]);
    write_random(&format!("{mnt}/data"), 64 << 20, 1).unwrap();
    lab.zpool_ok(&["export", "tank"]);
    // One disk of each mirror gone: every vdev still works, the pool imports DEGRADED.
    let saved = lab.path("saved");
    std::fs::create_dir_all(&saved).unwrap();
    std::fs::rename(&a1, format!("{saved}/a1")).unwrap();
    std::fs::rename(&b0, format!("{saved}/b0")).unwrap();
    let listing = lab.zpool_ok(&["import", "-d", &dir]);
    assert!(listing.contains("\n state: DEGRADED\n"), "{listing}");
    lab.zpool_ok(&["import", "-d", &dir, "tank"]);
    assert!(read_matches(&format!("{mnt}/data"), 64 << 20, 1).unwrap());
    lab.zpool_ok(&["export", "tank"]);
    // Both disks of mirror-1 gone: the pool is lost, `-f` or not.
    std::fs::rename(format!("{saved}/a1"), &a1).unwrap();
    std::fs::remove_file(&b1).unwrap();
    assert_unimportable(&lab, &dir, "tank");

    // A vdev added and never written to.
    let c = lab.disk("disks2/c", 256 << 20);
    let d = lab.disk("disks2/d", 256 << 20);
    lab.zpool_ok(&["create", "-m", &mnt, "empty", &c]);
    write_random(&format!("{mnt}/data"), 16 << 20, 2).unwrap();
    lab.zpool_ok(&["add", "empty", &d]);
    lab.zpool_ok(&["export", "empty"]);
    std::fs::remove_file(&d).unwrap();
    assert_unimportable(&lab, &lab.path("disks2"), "empty");
}

/// Writes 1 MiB of garbage at each of `offsets` of a device file.
fn garbage_at(device: &str, offsets: &[u64]) {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(device)
        .unwrap();
    let mut garbage = vec![0u8; 1 << 20];
    crate::lab::Xorshift::new(0xbad).fill(&mut garbage);
    for &offset in offsets {
        file.seek(SeekFrom::Start(offset)).unwrap();
        file.write_all(&garbage).unwrap();
    }
    file.sync_all().unwrap();
}

/// Reads the file through the mount in a child process (so a hung read fails the test
/// instead of hanging it) and returns whether `cat` succeeded and what it said.
fn cat(lab: &SeedLab, path: &str) -> (bool, String) {
    let mut child = std::process::Command::new("cat")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            return (status.success(), stderr);
        }
        if Instant::now() >= deadline {
            // Kill this lab's daemon (it would hang the lab's clean-up too), then fail.
            let pid = std::fs::read_to_string(lab.path("run/zetta.pid")).unwrap_or_default();
            let _ = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status();
            panic!("reading {path} hung (the daemon stopped answering its mount)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Why: "Single-disk vdevs can detect, but not repair, corrupted data records." Garbage
/// over a file's blocks on a single-disk pool: reading it fails with EIO (it never returns
/// wrong bytes), the device's CKSUM counts it, a scrub repairs nothing and `zpool status -v`
/// names the file; the same damage to one side of a mirror is repaired. Regression: the
/// daemon's main thread held the stderr lock for good, so the mount thread logging the I/O
/// error blocked with the pool locked and the read (and the pool) hung forever.
#[test]
fn single_disk_detects_corruption_but_cannot_repair_it() {
    let lab = SeedLab::new();
    let one = lab.disk("disks/one", GIB);
    let mnt = lab.path("mnt");
    lab.zpool_ok(&["create", "-m", &mnt, "single", &one]);
    lab.zfs_ok(&["set", "compression=off", "single"]);
    let damaged = format!("{mnt}/damaged.bin");
    let spared = format!("{mnt}/spared.bin");
    write_random(&damaged, 256 << 20, 3).unwrap();
    write_random(&spared, 1 << 20, 4).unwrap();
    lab.zpool_ok(&["export", "single"]);
    // The 256M file's blocks are the first written, just after the labels' 4M.
    garbage_at(&one, &[64 << 20, 128 << 20]);
    lab.zpool_ok(&["import", "-d", &lab.path("disks"), "single"]);
    let (ok, stderr) = cat(&lab, &damaged);
    assert!(!ok, "a damaged file read back without an error");
    assert_eq!(
        stderr,
        format!("cat: {damaged}: Input/output error\n"),
        "the read must fail with EIO"
    );
    assert!(read_matches(&spared, 1 << 20, 4).unwrap());
    let status = lab.status("single");
    assert!(cksum_of(&status, &one) > 0.0, "{status}");
    lab.zpool_ok(&["scrub", "-w", "single"]);
    let status = lab.zpool_ok(&["status", "-v", "single"]);
    // Detected, not repaired: "scrub repaired 0B … with N errors", N > 0.
    let (repaired_bytes, errors) = scan_outcome(&status);
    assert_eq!(repaired_bytes, 0.0, "{status}");
    assert!(errors > 0, "{status}");
    assert!(data_error_count(&lab.status("single")) >= 1);
    assert_eq!(damaged_files(&status), vec![damaged.clone()], "{status}");
    assert!(status.contains("ZFS-8000-8A"), "{status}");
    lab.zpool_ok(&["destroy", "single"]);
    std::fs::remove_file(&one).unwrap();

    // A mirror: the same damage on one side is found and repaired, nothing is lost.
    let left = lab.disk("disks/left", GIB);
    let right = lab.disk("disks/right", GIB);
    lab.zpool_ok(&["create", "-m", &mnt, "pair", "mirror", &left, &right]);
    lab.zfs_ok(&["set", "compression=off", "pair"]);
    write_random(&damaged, 256 << 20, 3).unwrap();
    lab.zpool_ok(&["export", "pair"]);
    garbage_at(&right, &[64 << 20, 128 << 20]);
    lab.zpool_ok(&["import", "-d", &lab.path("disks"), "pair"]);
    lab.zpool_ok(&["scrub", "-w", "pair"]);
    let status = lab.status("pair");
    let (repaired_bytes, errors) = scan_outcome(&status);
    assert!(repaired_bytes > 0.0 && errors == 0, "{status}");
    assert!(cksum_of(&status, &right) > 0.0, "{status}");
    assert!(
        status.ends_with("errors: No known data errors\n"),
        "{status}"
    );
    assert!(read_matches(&damaged, 256 << 20, 3).unwrap());
}

/// Why: growing vdevs by replacing disks with larger ones. "if you zpool attach a 4T disk
/// to a 2T disk, it will resilver into a 2T mirror vdev. When you then zpool detach the 2T
/// disk, the vdev becomes a 4T vdev"; and "start with a mirror of 2T disks, then replace
/// one disk with a 4T disk, wait for it to resilver, then replace the second … Once there
/// are no disks smaller than 4T in the vdev … the vdev will expand" (autoexpand=on). Each
/// resilver copies the data once (regression: a replacing pair inside a mirror was
/// resilvered twice, "resilvered 151M" for 100M).
#[test]
fn larger_disks_grow_single_and_mirror_vdevs() {
    let lab = SeedLab::new();
    let mnt = lab.path("mnt");
    let data = format!("{mnt}/data");
    let size_of = |pool: &str| -> u64 {
        lab.zpool_ok(&["list", "-Hp", "-o", "size", pool])
            .trim()
            .parse()
            .unwrap()
    };
    let check_resilvered = |pool: &str| {
        let status = lab.status(pool);
        let (resilvered_bytes, errors) = scan_outcome(&status);
        let allocated_bytes = lab.list_v(pool)[0].2 as f64;
        assert_eq!(errors, 0, "{status}");
        assert!(
            resilvered_bytes >= allocated_bytes * 0.9 && resilvered_bytes <= allocated_bytes * 1.1,
            "resilvered {resilvered_bytes} of {allocated_bytes}\n{status}"
        );
    };

    // A single 1T disk, a 2T attached, the 1T detached.
    let small = lab.disk("small", 512 << 20);
    let large = lab.disk("large", GIB);
    lab.zpool_ok(&[
        "create",
        "-o",
        "autoexpand=on",
        "-m",
        &mnt,
        "single",
        &small,
    ]);
    write_random(&data, 100 << 20, 5).unwrap();
    let before = size_of("single");
    lab.zpool_ok(&["attach", "single", &small, &large]);
    check_resilvered("single");
    assert_eq!(
        size_of("single"),
        before,
        "a mirror is as large as its smaller disk"
    );
    lab.zpool_ok(&["detach", "single", &small]);
    let after = size_of("single");
    assert!(after as f64 >= before as f64 * 1.9, "{before} -> {after}");
    assert!(read_matches(&data, 100 << 20, 5).unwrap());
    lab.zpool_ok(&["destroy", "single"]);

    // A mirror of two small disks, each replaced by a larger one.
    let a = lab.disk("a", 512 << 20);
    let b = lab.disk("b", 512 << 20);
    let big_a = lab.disk("A", GIB);
    let big_b = lab.disk("B", GIB);
    lab.zpool_ok(&[
        "create",
        "-o",
        "autoexpand=on",
        "-m",
        &mnt,
        "grow",
        "mirror",
        &a,
        &b,
    ]);
    write_random(&data, 100 << 20, 6).unwrap();
    let before = size_of("grow");
    lab.zpool_ok(&["replace", "grow", &a, &big_a]);
    check_resilvered("grow");
    assert_eq!(
        size_of("grow"),
        before,
        "one larger disk does not grow a mirror"
    );
    lab.zpool_ok(&["replace", "grow", &b, &big_b]);
    check_resilvered("grow");
    let after = size_of("grow");
    assert!(after as f64 >= before as f64 * 1.9, "{before} -> {after}");
    let status = lab.status("grow");
    assert!(!status.contains(&format!("\t    {a} ")), "{status}");
    assert!(
        status.contains(&format!("\t    {big_b}  ONLINE")),
        "{status}"
    );
    assert!(read_matches(&data, 100 << 20, 6).unwrap());
}
