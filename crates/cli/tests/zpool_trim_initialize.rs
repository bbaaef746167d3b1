//! `zpool initialize` and `zpool trim` (issue 18: ZTS's zpool_initialize, zpool_trim and
//! zpool_wait's trim tests failed because both commands were missing): the pattern lands
//! in free space only, TRIM punches holes in a file vdev, the per-leaf state lives in the
//! leaf ZAPs across export and import, and status/errors are worded as OpenZFS's.

mod common;

use common::{openzfs::zdb_ok, wait_for, NoMountLab};
use std::os::unix::fs::MetadataExt;

/// OpenZFS's `zfs_initialize_value` default, as the leaves hold it (little-endian words).
const PATTERN: u64 = 0xdead_beef_dead_beee;

/// The note of the one leaf row of `zpool status ARGS tank` (after the counters).
fn leaf_note(lab: &NoMountLab, args: &[&str]) -> String {
    let mut full = vec!["status"];
    full.extend_from_slice(args);
    full.push("tank");
    let out = lab.ok("zpool", &full);
    let disk = lab.inner.path("disk");
    let line = out
        .lines()
        .find(|l| l.contains(&disk))
        .unwrap_or_else(|| panic!("no leaf row in {out}"))
        .to_string();
    // "\t  /path  ONLINE       0     0     0  (note)"
    match line.find("  (") {
        Some(at) => line[at..].to_string(),
        None => String::new(),
    }
}

fn pattern_words(path: &str) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    bytes
        .chunks_exact(8)
        .filter(|w| u64::from_le_bytes((*w).try_into().unwrap()) == PATTERN)
        .count() as u64
}

fn export(lab: &NoMountLab) {
    lab.ok("zpool", &["export", "tank"]);
}

fn import(lab: &NoMountLab) {
    let dir = lab.inner.dir.to_string_lossy().into_owned();
    lab.ok("zpool", &["import", "-d", &dir, "tank"]);
}

// Why: initialize must write its pattern over free space and nowhere else: a live block
// overwritten would be a checksum error for OpenZFS's `zdb -bcc` (which also checks that
// the space maps still account for every block).
#[test]
fn initialize_writes_the_pattern_into_free_space_only() {
    let lab = NoMountLab::new();
    let disk = lab.inner.path("disk");
    lab.ok("zfs", &["create", "tank/a"]);
    export(&lab);
    common::write_object(&disk, "tank/a", 100, 7, 8 << 20, false);
    // The library left it active (not exported): -f.
    let dir = lab.inner.dir.to_string_lossy().into_owned();
    lab.ok("zpool", &["import", "-f", "-d", &dir, "tank"]);
    assert_eq!(leaf_note(&lab, &["-i"]), "  (uninitialized)");
    lab.ok("zpool", &["initialize", "-w", "tank"]);
    let note = leaf_note(&lab, &["-i"]);
    assert!(
        note.starts_with("  (100% initialized, completed at ") && note.ends_with(')'),
        "{note}"
    );
    // Without -i a finished initialize says nothing (`print_status_initialize`).
    assert_eq!(leaf_note(&lab, &[]), "");
    export(&lab);
    // Most of the 512 MiB is free: it now holds the pattern.
    let words = pattern_words(&disk);
    assert!(words * 8 > 400 << 20, "only {words} pattern words");
    let out = zdb_ok(&lab.inner.dir, &["-bcc", "tank"]);
    assert!(out.contains("No leaks"), "{out}");
    // The state is OpenZFS's, in the leaf ZAP.
    let mos = zdb_ok(&lab.inner.dir, &["-dddd", "tank"]);
    assert!(
        mos.contains("com.delphix:vdev_initialize_state = 4"),
        "{mos}"
    );
    assert!(
        mos.contains("com.delphix:next_offset_to_initialize"),
        "{mos}"
    );
    import(&lab);
    // -u forgets it: the ZAP entries go (`vdev_initialize_zap_remove_sync`).
    lab.ok("zpool", &["initialize", "-u", "tank"]);
    assert_eq!(leaf_note(&lab, &["-i"]), "  (uninitialized)");
    export(&lab);
    let mos = zdb_ok(&lab.inner.dir, &["-dddd", "tank"]);
    assert!(!mos.contains("vdev_initialize_state"), "{mos}");
}

// Why: TRIM of a file vdev punches holes (fallocate PUNCH_HOLE|KEEP_SIZE): the backing
// file's allocated blocks shrink, SEEK_HOLE finds holes in the data region, and no live
// block is touched.
#[test]
fn trim_punches_holes_in_free_space() {
    let lab = NoMountLab::new();
    let disk = lab.inner.path("disk");
    // Fill the free space first, so that there is something to discard.
    lab.ok("zpool", &["initialize", "-w", "tank"]);
    let before = std::fs::metadata(&disk).unwrap().blocks() * 512;
    assert!(before > 400 << 20, "{before}");
    assert_eq!(leaf_note(&lab, &["-t"]), "  (untrimmed)");
    lab.ok("zpool", &["trim", "-w", "tank"]);
    let note = leaf_note(&lab, &["-t"]);
    assert!(
        note.starts_with("  (100% trimmed, completed at ") && note.ends_with(')'),
        "{note}"
    );
    export(&lab);
    let after = std::fs::metadata(&disk).unwrap().blocks() * 512;
    assert!(after < 64 << 20, "{before} -> {after} bytes allocated");
    // A hole in the data region (past the 4 MiB of front labels and boot area).
    let file = std::fs::File::open(&disk).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: lseek on a descriptor owned by `file`.
    let hole = unsafe { libc::lseek(file.as_raw_fd(), 4 << 20, libc::SEEK_HOLE) };
    assert!((4 << 20..256 << 20).contains(&hole), "first hole at {hole}");
    let out = zdb_ok(&lab.inner.dir, &["-bcc", "tank"]);
    assert!(out.contains("No leaks"), "{out}");
    let mos = zdb_ok(&lab.inner.dir, &["-dddd", "tank"]);
    assert!(mos.contains("org.zfsonlinux:vdev_trim_state = 4"), "{mos}");
}

// Why: a suspended or running TRIM is kept in the leaf ZAP and resumes after export and
// import (`vdev_trim_restart`); cancel ends it; `zpool wait -t trim` returns once no leaf
// is trimming.
#[test]
fn trim_suspends_and_resumes_across_export_and_import() {
    let lab = NoMountLab::new();
    lab.ok("zpool", &["initialize", "-w", "tank"]);
    // 1 MiB a second: it stays running for minutes.
    lab.ok("zpool", &["trim", "-r", "1M", "tank"]);
    assert_eq!(leaf_note(&lab, &[]), "  (trimming)");
    assert!(leaf_note(&lab, &["-t"]).contains("% trimmed, started at "));
    let busy = lab.run("zpool", &["trim", "tank"]);
    assert_eq!(busy.code, 1);
    assert_eq!(
        busy.stderr,
        format!(
            "cannot trim '{}': currently trimming\n",
            lab.inner.path("disk")
        )
    );
    lab.ok("zpool", &["trim", "-s", "tank"]);
    let suspended = leaf_note(&lab, &["-t"]);
    assert!(
        suspended.contains("% trimmed, suspended, started at "),
        "{suspended}"
    );
    assert_eq!(leaf_note(&lab, &[]), "");
    export(&lab);
    import(&lab);
    assert_eq!(leaf_note(&lab, &["-t"]), suspended);
    // Resumed, then carried over an export and import while running.
    lab.ok("zpool", &["trim", "-r", "1M", "tank"]);
    assert_eq!(leaf_note(&lab, &[]), "  (trimming)");
    export(&lab);
    import(&lab);
    assert_eq!(leaf_note(&lab, &[]), "  (trimming)");
    // `zpool wait -t trim` ends when the trim does (canceled here).
    let mut waiter = lab.inner.command("zpool");
    waiter
        .args(["wait", "-t", "trim", "tank"])
        .env("ZETTA_MOUNT", "0");
    let child = lab.inner.spawn(&mut waiter);
    std::thread::sleep(std::time::Duration::from_millis(500));
    lab.ok("zpool", &["trim", "-c", "tank"]);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(leaf_note(&lab, &["-t"]), "  (untrimmed)");
    let none = lab.run("zpool", &["trim", "-c", "tank"]);
    assert_eq!(
        none.stderr,
        format!(
            "cannot trim '{}': there is no active trim\n",
            lab.inner.path("disk")
        )
    );
    assert!(wait_for(
        || lab.run("zpool", &["trim", "-s", "tank"]).code == 1
    ));
}

// Why: libzfs's words and exit codes for the refusals ZTS checks.
#[test]
fn refusals_are_worded_as_openzfs() {
    let lab = NoMountLab::new();
    let disk = lab.inner.path("disk");
    let out = lab.run("zpool", &["initialize", "tank", "nosuch"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "cannot initialize 'nosuch': no such device in pool\n")
    );
    let out = lab.run("zpool", &["initialize", "-c", "tank"]);
    assert_eq!(
        out.stderr,
        format!("cannot initialize '{disk}': there is no active initialization\n")
    );
    let out = lab.run("zpool", &["initialize", "-s", "tank"]);
    assert_eq!(out.code, 1);
    let out = lab.run("zpool", &["initialize", "-c", "-s", "tank"]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("-s cannot be combined with other options\n"));
    let out = lab.run("zpool", &["initialize", "-w", "-c", "tank"]);
    assert_eq!(out.code, 2);
    let out = lab.run("zpool", &["initialize"]);
    assert!(out.stderr.starts_with("missing pool name argument\n"));
    // A file cannot do a secure TRIM: refused even for the whole pool.
    let out = lab.run("zpool", &["trim", "-d", "tank"]);
    assert_eq!(
        (out.code, out.stderr),
        (
            1,
            format!("cannot trim '{disk}': trim operations are not supported by this device\n")
        )
    );
    let out = lab.run("zpool", &["trim", "-c", "-r", "1M", "tank"]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("-r cannot be combined with the -c or -s options\n"));
}

// Why: on raidz a leaf's share of a free range is its own rows of it (`vdev_raidz_xlate`);
// a wrong translation would pattern live columns, which `zdb -bcc` would find as checksum
// errors (a mirror's children share the top's offsets and are covered by the same walk).
#[test]
fn initialize_on_raidz_touches_no_live_column() {
    let lab = NoMountLab::new();
    let disks: Vec<String> = (0..3)
        .map(|i| lab.inner.disk(&format!("rz{i}"), 256 << 20))
        .collect();
    let mut args = vec!["create", "-m", "none", "rz", "raidz1"];
    args.extend(disks.iter().map(String::as_str));
    lab.ok("zpool", &args);
    // Live blocks spread over the columns: datasets, snapshots, their metadata.
    for i in 0..8 {
        lab.ok("zfs", &["create", &format!("rz/a{i}")]);
        lab.ok("zfs", &["snapshot", &format!("rz/a{i}@s")]);
    }
    lab.ok("zpool", &["initialize", "-w", "rz"]);
    lab.ok("zpool", &["export", "rz"]);
    for disk in &disks {
        let words = pattern_words(disk);
        assert!(words * 8 > 150 << 20, "{disk}: only {words} pattern words");
    }
    let out = zdb_ok(&lab.inner.dir, &["-bcc", "rz"]);
    assert!(out.contains("No leaks"), "{out}");
}
