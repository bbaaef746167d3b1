//! `zinject` (issue 20): fault injection into the daemon's zio pipeline, and the seed post
//! "Testing copies=n resiliency" as a script: create, write, inject, scrub, read
//! `zpool status -v`. Files are written and read back through real FUSE mounts (root and
//! `/dev/fuse` required, like `mounts.rs`).

mod common;

use common::{Lab, Output};

fn lab_with_zinject() -> Lab {
    let lab = Lab::new();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), lab.dir.join("zinject")).unwrap();
    lab
}

fn zinject(lab: &Lab, args: &[&str]) -> Output {
    let mut command = lab.command("zinject");
    command.args(args);
    lab.run(command)
}

fn zinject_ok(lab: &Lab, args: &[&str]) -> String {
    let out = zinject(lab, args);
    assert_eq!(out.code, 0, "zinject {args:?}: {}", out.stderr);
    out.stdout
}

/// Writes `count` files of `size` random bytes under `dir` and keeps a copy of each in the
/// lab directory; returns their names.
fn write_files(lab: &Lab, dir: &str, count: usize, size: usize) -> Vec<String> {
    let out = lab.sh(&format!(
        "mkdir -p orig && for i in $(seq 1 {count}); do head -c {size} /dev/urandom > orig/f$i && cp orig/f$i {dir}/f$i || exit 1; done"
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    (1..=count).map(|i| format!("f{i}")).collect()
}

/// The files of `names` whose content under `dir` differs from the saved copy (or cannot be
/// read).
fn damaged(lab: &Lab, dir: &str, names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|name| {
            let original = std::fs::read(lab.dir.join("orig").join(name)).ok();
            let now = std::fs::read(format!("{dir}/{name}")).ok();
            original.is_none() || original != now
        })
        .cloned()
        .collect()
}

/// The paths `zpool status -v` lists under "Permanent errors".
fn permanent_errors(status: &str) -> Vec<String> {
    let Some((_, list)) = status
        .split_once("errors: Permanent errors have been detected in the following files:\n\n")
    else {
        return Vec::new();
    };
    list.lines().map(|l| l.trim().to_string()).collect()
}

/// The CKSUM (or READ, `column` 2) count of the status row named `name`.
fn counter(status: &str, name: &str, column: usize) -> u64 {
    status
        .lines()
        .find_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            (words.first() == Some(&name)).then(|| words.get(column).copied())?
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `status` with the scan line's moving parts (duration, date) replaced by `<time>` and
/// `<date>`.
fn without_date(status: &str) -> String {
    status
        .lines()
        .map(|line| {
            let scan = line.trim_start().starts_with("scan:");
            match (line.split_once(" in "), line.split_once(" with ")) {
                (Some((head, _)), Some((_, tail))) if scan => {
                    let errors = tail.split(" on ").next().unwrap_or_default();
                    format!("{head} in <time> with {errors} on <date>")
                }
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

// Why: Zetta had no zinject: the copies=n post's experiment needed hand-made damage on the
// disk. With copies=1, a file whose data blocks fail their checksum is lost: scrub counts
// the errors and `zpool status -v` lists the file, word for word as OpenZFS prints it;
// `zinject` lists the handler in OpenZFS's table and `-c` removes it.
#[test]
fn zinject_copies_1_loses_the_file_and_status_v_lists_it() {
    let lab = lab_with_zinject();
    let disk = lab.disk("disk", 256 << 20);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", &disk]);
    let names = write_files(&lab, &mnt, 1, 1 << 20);
    lab.ok("zpool", &["sync", "tank"]);
    let file = format!("{mnt}/{}", names[0]);
    let added = zinject_ok(&lab, &["-t", "data", "-e", "checksum", &file]);
    assert!(
        added.starts_with("Added handler 1 with the following properties:\n  pool: tank\nobjset: "),
        "{added}"
    );
    assert!(
        added.ends_with("  type: 0\n level: 0\n range: all\n  dvas: 0x0\n"),
        "{added}"
    );
    let listed = zinject_ok(&lab, &[]);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(
        lines[..2],
        [
            " ID  POOL             OBJSET  OBJECT  TYPE      LVL  DVAs  RANGE          ",
            "---  ---------------  ------  ------  --------  ---  ----  ---------------",
        ]
    );
    assert!(lines[2].starts_with("  1  tank             "), "{listed}");
    assert!(lines[2].ends_with("  -         0    0x00  all"), "{listed}");
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let status = lab.ok("zpool", &["status", "-v", "tank"]);
    // 1 MiB at recordsize 128K: 8 blocks, each lost.
    let expected = format!(
        "  pool: tank
 state: ONLINE
status: One or more devices has experienced an error resulting in data
\tcorruption.  Applications may be affected.
action: Restore the file in question if possible.  Otherwise restore the
\tentire pool from backup.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-8A
  scan: scrub repaired 0B in <time> with 8 errors on <date>
config:

\tNAME{pad}  STATE     READ WRITE CKSUM
\ttank{pad}  ONLINE       0     0     8
\t  {disk}  ONLINE       0     0     8

errors: Permanent errors have been detected in the following files:

        {file}
",
        pad = " ".repeat(disk.len() - 2),
    );
    assert_eq!(without_date(&status), expected);
    assert_eq!(zinject_ok(&lab, &["-c", "1"]), "removed handler 1\n");
    let out = zinject(&lab, &["-c", "1"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "failed to remove handler 1: No such file or directory\n")
    );
    assert_eq!(
        zinject_ok(&lab, &[]),
        "No handlers registered.\nRun 'zinject -h' for usage information.\n"
    );
}

// Why: copies=2 on one disk (the post's setup) must repair what it can from the other copy
// and report only what it cannot: a file whose every copy is bad is listed, blocks hit on
// one copy are rewritten (scrub "repaired" > 0, the disk's CKSUM counted), every file not
// listed reads back intact. Injection with `--seed` on a device hits a fixed set of
// blocks, so a second scrub finds the same lost file and nothing more to repair.
#[test]
fn zinject_copies_2_on_one_disk_repairs_what_it_can() {
    let lab = lab_with_zinject();
    let disk = lab.disk("disk", 512 << 20);
    let mnt = lab.path("mnt");
    lab.ok(
        "zpool",
        &["create", "-O", "copies=2", "-m", &mnt, "tank", &disk],
    );
    let names = write_files(&lab, &mnt, 40, 200_000);
    lab.ok("zpool", &["sync", "tank"]);
    let lost = format!("{mnt}/f1");
    zinject_ok(&lab, &["-q", "-t", "data", "-e", "checksum", &lost]);
    let added = zinject_ok(
        &lab,
        &[
            "-d", &disk, "-e", "corrupt", "-T", "read", "-f", "5", "--seed", "32767", "tank",
        ],
    );
    assert!(
        added.starts_with("Added handler 2 with the following properties:\n  pool: tank\n  vdev: ")
    );
    let listed = zinject_ok(&lab, &[]);
    assert!(
        listed.contains("  read   corrupt       5.0000%\n"),
        "{listed}"
    );
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let status = lab.ok("zpool", &["status", "-v", "tank"]);
    let listed_files = permanent_errors(&status);
    assert!(listed_files.contains(&lost), "{status}");
    assert!(!status.contains("scrub repaired 0B"), "{status}");
    assert!(counter(&status, &disk, 4) > 0, "{status}");
    let unlisted: Vec<String> = names
        .iter()
        .filter(|n| !listed_files.contains(&format!("{mnt}/{n}")))
        .cloned()
        .collect();
    assert!(unlisted.len() >= names.len() / 2, "{status}");
    assert_eq!(damaged(&lab, &mnt, &unlisted), Vec::<String>::new());
    // The same damage, scrubbed again: what was repaired stays repaired.
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let again = lab.ok("zpool", &["status", "-v", "tank"]);
    assert!(again.contains("scrub repaired 0B"), "{again}");
    assert_eq!(permanent_errors(&again), listed_files);
    assert_eq!(
        zinject_ok(&lab, &["-c", "all"]),
        "removed all registered handlers\n"
    );
}

// Why: a mirror loses nothing when one side returns damaged bytes on every read or fails
// every read: scrub repairs from the other side, `zpool status` counts CKSUM (or READ)
// errors on the bad side only and says "No known data errors".
#[test]
fn zinject_mirror_loses_nothing() {
    let lab = lab_with_zinject();
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", "mirror", &a, &b]);
    let names = write_files(&lab, &mnt, 20, 300_000);
    lab.ok("zpool", &["sync", "tank"]);
    zinject_ok(
        &lab,
        &["-d", &b, "-e", "corrupt", "-T", "read", "-f", "100", "tank"],
    );
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let status = lab.ok("zpool", &["status", "-v", "tank"]);
    assert!(
        status.contains("errors: No known data errors\n"),
        "{status}"
    );
    assert!(!status.contains("scrub repaired 0B"), "{status}");
    assert!(status.contains(" with 0 errors on "), "{status}");
    assert!(counter(&status, &b, 4) > 0, "{status}");
    assert_eq!(counter(&status, &a, 4), 0, "{status}");
    assert_eq!(counter(&status, "tank", 4), 0, "{status}");
    assert_eq!(damaged(&lab, &mnt, &names), Vec::<String>::new());
    zinject_ok(&lab, &["-c", "all"]);
    lab.ok("zpool", &["clear", "tank"]);
    // An I/O error on every read of one side: READ errors, still nothing lost.
    zinject_ok(&lab, &["-d", &b, "-e", "io", "-T", "read", "tank"]);
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let status = lab.ok("zpool", &["status", "-v", "tank"]);
    assert!(
        status.contains("errors: No known data errors\n"),
        "{status}"
    );
    assert!(counter(&status, &b, 2) > 0, "{status}");
    assert_eq!(counter(&status, &a, 2), 0, "{status}");
    assert_eq!(damaged(&lab, &mnt, &names), Vec::<String>::new());
}

// Why: zinject's refusals are OpenZFS's texts and exit codes (1 failed, 2 usage), checked
// before any daemon is asked; a device or pool that does not exist is named.
#[test]
fn zinject_refusals_are_openzfs_texts() {
    let lab = lab_with_zinject();
    let disk = lab.disk("disk", 128 << 20);
    lab.ok("zpool", &["create", "tank", &disk]);
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["-d", "disk", "-e", "checksum", "tank"],
            1,
            "device error type must be 'io', 'nxio' or 'corrupt'\n",
        ),
        (
            &["-d", "disk", "-e", "corrupt", "tank"],
            1,
            "device corrupt errors require io type read and a frequency value\n",
        ),
        (
            &["-d", "disk", "-e", "io", "-f", "200", "tank"],
            1,
            "out of range: frequency value must be in the range [0.0001, 100.0]\n",
        ),
        (
            &["-d", "disk", "-e", "io", "-f", "x", "tank"],
            1,
            "invalid value: frequency value must be in the range [0.0001, 100.0]\n",
        ),
        (
            &["-d", "nosuch", "-e", "io", "tank"],
            1,
            "cannot find device 'nosuch' in pool 'tank'\n",
        ),
        (
            &["-d", "disk", "-e", "io", "nopool"],
            1,
            "cannot open 'nopool': no such pool\n",
        ),
        (
            &["-d", "disk", "tank", "extra"],
            2,
            "device (-d) injection requires a single pool name\n",
        ),
        (&["-t", "data"], 2, "missing object\n"),
        (
            &["-t", "data", "-e", "corrupt", "/x"],
            1,
            "data error type must be 'checksum' or 'io'\n",
        ),
        (
            &["-t", "data", "relative/file"],
            1,
            "invalid object 'relative/file': must be full path\n",
        ),
        (
            &["-e", "bogus", "-d", "disk", "tank"],
            1,
            "invalid error type 'bogus': must be one of: io decompress decrypt nxio dtl corrupt noop\n",
        ),
        (
            &["-c", "x"],
            1,
            "invalid handle id 'x': must be an integer or 'all'\n",
        ),
        (&["-c", "all", "tank"], 2, "extraneous argument to '-c'\n"),
        (
            &["-e", "io", "tank"],
            2,
            "at least one of '-b', '-d', '-t', '-a', '-p', '-I' or '-u' must be specified\n",
        ),
        (&["-Z"], 2, "invalid option 'Z'\n"),
        (
            &["-d", "disk", "--seed", "abc", "tank"],
            2,
            "invalid seed 'abc': must be a non-negative integer\n",
        ),
    ];
    for (args, code, stderr) in cases {
        let out = zinject(&lab, args);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (*code, *stderr),
            "zinject {args:?}"
        );
    }
    let help = zinject(&lab, &["-h"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.starts_with("usage:\n\n\tzinject\n"));
    assert!(help.stdout.contains("--seed"));
}
