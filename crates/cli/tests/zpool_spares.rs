//! Hot spares and cache devices as OpenZFS keeps them (issue 18): outside the vdev tree,
//! listed in the MOS object directory's `spares` and `l2cache` packed-nvlist objects
//! (`spa_sync_aux_dev`), each device carrying an aux label that names no pool
//! (`vdev_aux_label_generate`: version, state 3 or 4, guid). Every test drives the CLI and
//! checks the bytes with OpenZFS's own zdb (`common::openzfs`, never skipped).
//!
//! Why: Zetta refused `spare` in vdev specifications, and the engine's cache devices (the
//! CLI still refuses `cache`: no L2ARC reads them, issue 21; a pool OpenZFS gave one keeps
//! it) carried the pool's name and guid in their labels and sat in the MOS config's vdev
//! list, where OpenZFS keeps neither: OpenZFS's import would not have found them, and
//! discovery took such a label for a pool member.

mod common;

use common::Lab;
use std::path::Path;
use std::process::Command;

const DISK_SIZE_BYTES: u64 = 128 << 20;

fn zpool_ok(lab: &Lab, args: &[&str]) -> String {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
    out.stdout
}

fn zpool_fails(lab: &Lab, args: &[&str]) -> String {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_ne!(out.code, 0, "zpool {args:?} succeeded: {}", out.stdout);
    out.stderr
}

/// OpenZFS's `zdb -l DEVICE` (no pool needed): its stdout, whatever the exit code.
fn zdb_label(device: &str) -> String {
    let out = Command::new(common::openzfs::oracle::zdb())
        .args(["-l", device])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `key: value` lines of the first label zdb prints, trimmed.
fn first_label_lines(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("LABEL 0"))
        .skip(2)
        .take_while(|l| !l.starts_with("----") && !l.trim_start().starts_with("labels ="))
        .map(|l| l.trim().to_string())
        .collect()
}

/// The MOS object directory entry `name` as `zdb -dddd POOL 1` prints it, if present.
fn objdir_entry(dir: &Path, name: &str) -> Option<u64> {
    let out = common::openzfs::zdb_ok(dir, &["-dddd", "tank", "1"]);
    out.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{name} = ")))
        .and_then(|v| v.trim().parse().ok())
}

/// Adds `cache` as a cache device of the exported pool on `disk` (with its spare
/// `spare`) through the engine, as an OpenZFS pool would bring one (the CLI refuses
/// `cache`), and exports it again.
fn add_cache_through_the_engine(disk: &str, spare: &str, cache: &str) {
    let _devices = common::DEVICES.write().unwrap_or_else(|e| e.into_inner());
    let open = |path: &str| -> zetta::io::DeviceRef {
        std::sync::Arc::new(zetta::io::FileDevice::open_exclusive(path).unwrap())
    };
    let candidate = zetta::spa::find_pools(&[open(disk), open(spare)])
        .into_iter()
        .next()
        .unwrap();
    let mut spa = zetta::spa::Spa::import(&candidate, None, 64 << 20).unwrap();
    assert_eq!(spa.spares.len(), 1, "the spare is found by guid");
    spa.add_cache_devices(&[(cache.to_string(), open(cache))], None)
        .unwrap();
    spa.export().unwrap();
}

/// A lab with `tank` on d1 (and the named aux files made), exported at the end by callers.
fn lab_with(files: &[&str]) -> (Lab, Vec<String>) {
    let lab = Lab::new();
    let paths = files.iter().map(|f| lab.disk(f, DISK_SIZE_BYTES)).collect();
    (lab, paths)
}

// Why: OpenZFS labels an available spare with `POOL_STATE_SPARE` and a cache device with
// `POOL_STATE_L2CACHE`, version, guid and path only (the cache device also its ashift), and
// lists them in the MOS directory's `spares`/`l2cache` objects, not in the config's vdev
// tree. Zetta wrote the pool's name and guid into a cache device's label and listed it in
// the MOS config; discovery then took it for a pool member.
#[test]
fn aux_labels_and_lists_are_openzfs_s() {
    let (lab, p) = lab_with(&["d1", "c1", "s1"]);
    zpool_ok(
        &lab,
        &["create", "-m", "none", "tank", &p[0], "spare", &p[2]],
    );
    zpool_ok(&lab, &["export", "tank"]);
    add_cache_through_the_engine(&p[0], &p[2], &p[1]);

    let cache = first_label_lines(&zdb_label(&p[1]));
    assert_eq!(cache.len(), 5, "cache label: {cache:?}");
    assert_eq!(cache[0], "version: 5000");
    assert_eq!(cache[1], "state: 4");
    assert!(cache[2].starts_with("guid: "), "{cache:?}");
    assert_eq!(cache[3], "ashift: 9");
    assert_eq!(cache[4], format!("path: '{}'", p[1]));
    let spare = first_label_lines(&zdb_label(&p[2]));
    assert_eq!(spare.len(), 4, "spare label: {spare:?}");
    assert_eq!(spare[0], "version: 5000");
    assert_eq!(spare[1], "state: 3");
    assert!(spare[2].starts_with("guid: "), "{spare:?}");
    assert_eq!(spare[3], format!("path: '{}'", p[2]));

    let dir = lab.dir.as_path();
    // The MOS config (zdb -C) holds neither; the directory names both lists, which zdb
    // unpacks as OpenZFS wrote them.
    let config = common::openzfs::zdb_ok(dir, &["-C", "tank"]);
    let mos = config.split("MOS Configuration:").nth(1).unwrap_or(&config);
    assert!(!mos.contains(&p[1]) && !mos.contains(&p[2]), "{mos}");
    for (entry, path) in [("l2cache", &p[1]), ("spares", &p[2])] {
        let object = objdir_entry(dir, entry).unwrap_or_else(|| panic!("no {entry} entry"));
        let dump = common::openzfs::zdb_ok(dir, &["-dddd", "tank", &object.to_string()]);
        assert!(dump.contains("packed nvlist"), "{dump}");
        assert!(dump.contains(&format!("{entry}[0]")), "{dump}");
        assert!(dump.contains(&format!("path: '{path}'")), "{dump}");
        assert!(dump.contains("ashift: 9"), "{dump}");
    }
    common::openzfs::oracle::assert_zdb_no_leaks(dir, "tank", "with a spare and a cache device");

    // Import finds both by guid among the devices.
    zpool_ok(&lab, &["import", "-d", dir.to_str().unwrap(), "tank"]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert!(
        status.contains(&format!("\tcache\n\t  {}  ONLINE", p[1])),
        "{status}"
    );
    assert!(
        status.contains(&format!("\tspares\n\t  {}  AVAIL   \n", p[2])),
        "{status}"
    );
    zpool_ok(&lab, &["export", "tank"]);
}

// Why: `zpool status` prints the spares section word for word as OpenZFS does (AVAIL, no
// counters), `zpool remove` of an available spare forgets it (its label stays, as
// OpenZFS leaves it: it names no pool), and spares survive export and import.
#[test]
fn spares_add_remove_status_golden() {
    let (lab, p) = lab_with(&["d1", "s1", "s2"]);
    zpool_ok(
        &lab,
        &["create", "-m", "none", "tank", &p[0], "spare", &p[1]],
    );
    zpool_ok(&lab, &["add", "tank", "spare", &p[2]]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    let width = p[0].len() + 2;
    let expected = format!(
        "  pool: tank\n state: ONLINE\nconfig:\n\n\
         \t{:<w$}  STATE     READ WRITE CKSUM\n\
         \t{:<w$}  ONLINE       0     0     0\n\
         \t  {:<w2$}  ONLINE       0     0     0\n\
         \tspares\n\
         \t  {:<w2$}  AVAIL   \n\
         \t  {:<w2$}  AVAIL   \n\n\
         errors: No known data errors\n",
        "NAME",
        "tank",
        p[0],
        p[1],
        p[2],
        w = width,
        w2 = width - 2,
    );
    assert_eq!(status, expected);

    zpool_ok(&lab, &["remove", "tank", &p[1]]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert!(!status.contains(&p[1]), "{status}");
    assert_eq!(first_label_lines(&zdb_label(&p[1]))[1], "state: 3");
    // Nothing holds it now: a new pool may take it.
    zpool_ok(&lab, &["create", "-n", "other", &p[1]]);
    zpool_ok(&lab, &["export", "tank"]);
    zpool_ok(&lab, &["import", "-d", lab.dir.to_str().unwrap(), "tank"]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert!(
        status.contains(&format!("\tspares\n\t  {}  AVAIL   \n\nerrors", p[2])),
        "{status}"
    );
    // A spare of an imported pool is not taken by another pool.
    let words = zpool_fails(&lab, &["create", "other", &p[2]]);
    assert_eq!(
        words,
        format!(
            "invalid vdev specification\nuse '-f' to override the following errors:\n{} is reserved as a hot spare in pool tank\n",
            p[2]
        )
    );
    zpool_ok(&lab, &["export", "tank"]);
    common::openzfs::oracle::assert_zdb_no_leaks(&lab.dir, "tank", "after spare remove");
}

// Why: hot spares came with pool version 3 (`SPA_VERSION_SPARES`); Zetta creates no
// pool that old (its legacy versions are 23 and 28), so `-o version=2` with a spare is
// refused before any device is written, and a legacy pool takes spares as OpenZFS's do.
#[test]
fn spares_and_pool_versions() {
    let (lab, p) = lab_with(&["d1", "s1"]);
    let words = zpool_fails(
        &lab,
        &[
            "create",
            "-o",
            "version=2",
            "-m",
            "none",
            "tank",
            &p[0],
            "spare",
            &p[1],
        ],
    );
    assert!(
        words.starts_with("cannot create 'tank': pool version 2 "),
        "{words}"
    );
    assert!(first_label_lines(&zdb_label(&p[1])).is_empty());
    zpool_ok(
        &lab,
        &["create", "-o", "version=28", "-m", "none", "tank", &p[0]],
    );
    zpool_ok(&lab, &["add", "tank", "spare", &p[1]]);
    let spare = first_label_lines(&zdb_label(&p[1]));
    assert_eq!(spare[..2], ["version: 28", "state: 3"], "{spare:?}");
    zpool_ok(&lab, &["export", "tank"]);
    common::openzfs::oracle::assert_zdb_no_leaks(&lab.dir, "tank", "a v28 pool with a spare");
}

// Why: the dry runs list spares after the tree (`print_spare_list`; on add the pool's own
// first, under one heading), as OpenZFS prints them.
#[test]
fn dry_runs_list_spares() {
    let (lab, p) = lab_with(&["d1", "c1", "s1", "s2"]);
    let out = zpool_ok(
        &lab,
        &["create", "-n", "tank", &p[0], "spare", &p[1], &p[2]],
    );
    assert_eq!(
        out,
        format!(
            "would create 'tank' with the following layout:\n\n\ttank\n\t  {}\n\tspares\n\t  {}\n\t  {}\n",
            p[0], p[1], p[2]
        )
    );
    zpool_ok(
        &lab,
        &["create", "-m", "none", "tank", &p[0], "spare", &p[2]],
    );
    let out = zpool_ok(&lab, &["add", "-n", "tank", "spare", &p[3]]);
    assert_eq!(
        out,
        format!(
            "would update 'tank' to the following configuration:\n\n\ttank\n\t  {}\n\tspares\n\t  {}\n\t  {}\n",
            p[0], p[2], p[3]
        )
    );
    zpool_ok(&lab, &["destroy", "tank"]);
}

/// The words of the status row whose first word is `name`: the first such row (the
/// tree's) or the last (the spares section's).
fn row_words(status: &str, name: &str, last: bool) -> Vec<String> {
    let mut rows = status.lines().filter_map(|line| {
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        (words.first().map(String::as_str) == Some(name)).then_some(words)
    });
    let found = if last { rows.next_back() } else { rows.next() };
    found.unwrap_or_else(|| panic!("no row {name}: {status}"))
}

// Why: `zpool replace pool LEAF SPARE` swaps a hot spare in under a `spare` vdev (the
// original and the spare, the spare resilvered) and shows it INUSE; `zpool detach` of
// the spare returns it to AVAIL with its aux label, `zpool detach` of the original makes
// it a permanent member and takes it off the spares list. OpenZFS's zdb reads every
// stage (`is_spare` in the labels, a `spare` vdev in the MOS config) and finds no leak.
#[test]
fn replace_with_a_spare_then_detach_either_side() {
    let (lab, p) = lab_with(&["d1", "d2", "s1"]);
    let (d1, d2, s1) = (&p[0], &p[1], &p[2]);
    zpool_ok(
        &lab,
        &[
            "create", "-m", "none", "tank", "mirror", d1, d2, "spare", s1,
        ],
    );
    zpool_ok(&lab, &["replace", "tank", d1, s1]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert_eq!(
        row_words(&status, "spare-0", false)[1],
        "ONLINE",
        "{status}"
    );
    assert_eq!(row_words(&status, s1, false)[1], "ONLINE", "{status}");
    assert_eq!(row_words(&status, s1, true)[1], "INUSE", "{status}");
    assert!(status.contains("INUSE     currently in use\n"), "{status}");
    // In use, it is busy.
    let words = zpool_fails(&lab, &["remove", "tank", s1]);
    assert_eq!(
        words,
        format!("cannot remove {s1}: Pool busy; removal may already be in progress\n")
    );
    zpool_ok(&lab, &["export", "tank"]);
    let label = zdb_label(s1);
    assert!(label.contains("    is_spare: 1\n"), "{label}");
    assert!(label.contains("name: 'tank'"), "{label}");
    let config = common::openzfs::zdb_ok(&lab.dir, &["-C", "tank"]);
    assert!(config.contains("type: 'spare'"), "{config}");
    common::openzfs::oracle::assert_zdb_no_leaks(&lab.dir, "tank", "with a spare in use");
    zpool_ok(&lab, &["import", "-d", lab.dir.to_str().unwrap(), "tank"]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert!(status.contains("INUSE     currently in use\n"), "{status}");

    // Detaching the spare: AVAIL again, its aux label back.
    zpool_ok(&lab, &["detach", "tank", s1]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert!(!status.contains("spare-0"), "{status}");
    assert_eq!(row_words(&status, s1, true)[1], "AVAIL", "{status}");
    assert_eq!(first_label_lines(&zdb_label(s1))[1], "state: 3");

    // Detaching the original: the spare stays for good.
    zpool_ok(&lab, &["replace", "tank", d1, s1]);
    zpool_ok(&lab, &["detach", "tank", d1]);
    let status = zpool_ok(&lab, &["status", "-P", "tank"]);
    assert!(!status.contains("spares"), "{status}");
    assert_eq!(row_words(&status, s1, false)[1], "ONLINE", "{status}");
    assert!(!status.contains(&format!("{d1} ")), "{status}");
    zpool_ok(&lab, &["export", "tank"]);
    let label = zdb_label(s1);
    assert!(!label.contains("is_spare"), "{label}");
    common::openzfs::oracle::assert_zdb_no_leaks(&lab.dir, "tank", "after the spare stayed");
}

// Why: OpenZFS's retire agent swaps an available hot spare in for the leaf the diagnosis
// faulted or degraded (`zfs_retire`'s `replace_with_spare`); Zetta's diagnosis faulted
// the leaf and left the spare idle. Ten I/O errors of one mirror side (zinject) fault it
// and the spare stands in, resilvered, INUSE; the files stay whole; OpenZFS's zdb finds
// the pool clean with the `spare` vdev in place. Real FUSE mounts (root, `/dev/fuse`),
// as `zed_diagnosis.rs`.
#[test]
fn zed_swaps_a_spare_in_for_a_faulted_leaf() {
    let mut lab = Lab::new();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), lab.dir.join("zinject")).unwrap();
    let zed_dir = lab.path("zed.d");
    std::fs::create_dir(&zed_dir).unwrap();
    lab.env.push(("ZETTA_ZED_DIR".to_string(), zed_dir));
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    let s = lab.disk("s", 256 << 20);
    let mnt = lab.path("mnt");
    lab.ok(
        "zpool",
        &["create", "-m", &mnt, "tank", "mirror", &a, &b, "spare", &s],
    );
    let written = lab.sh(&format!(
        "mkdir -p orig && for i in $(seq 1 24); do head -c 400000 /dev/urandom > orig/f$i && cp orig/f$i {mnt}/f$i || exit 1; done"
    ));
    assert_eq!(written.code, 0, "{}", written.stderr);
    lab.ok("zpool", &["sync", "tank"]);
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    let mut inject = lab.command("zinject");
    inject.args(["-d", &b, "-e", "io", "-T", "read", "tank"]);
    assert_eq!(lab.run(inject).code, 0);
    let intact = lab.sh(&format!(
        "for i in $(seq 1 24); do cmp -s orig/f$i {mnt}/f$i || echo f$i; done"
    ));
    assert_eq!(intact.stdout, "", "files damaged: {}", intact.stderr);
    let swapped = || {
        lab.ok("zpool", &["status", "-P", "tank"])
            .contains("INUSE     currently in use\n")
    };
    assert!(
        common::wait_for(swapped),
        "no spare swapped in: {}",
        lab.ok("zpool", &["status", "-P", "tank"])
    );
    let mut clear = lab.command("zinject");
    clear.args(["-c", "all"]);
    assert_eq!(lab.run(clear).code, 0);
    let status = lab.ok("zpool", &["status", "-P", "tank"]);
    assert_eq!(
        row_words(&status, "spare-1", false)[1],
        "DEGRADED",
        "{status}"
    );
    assert_eq!(row_words(&status, &b, false)[1], "FAULTED", "{status}");
    assert_eq!(row_words(&status, &s, false)[1], "ONLINE", "{status}");
    let intact = lab.sh(&format!(
        "for i in $(seq 1 24); do cmp -s orig/f$i {mnt}/f$i || echo f$i; done"
    ));
    assert_eq!(intact.stdout, "", "files damaged: {}", intact.stderr);
    lab.ok("zpool", &["export", "tank"]);
    common::openzfs::oracle::assert_zdb_no_leaks(&lab.dir, "tank", "after zed's spare");
    lab.stop_daemon();
}
