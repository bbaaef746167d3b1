//! ZED's diagnosis in the daemon (issue 19, "checksum-error → degrade after N"): checksum
//! errors on one side of a mirror, met by ordinary reads, degrade that side once ten of
//! them land within ten minutes (OpenZFS's checksum SERD defaults); `zpool status` shows
//! it as OpenZFS does, the stock statechange zedlet mails, the verdict is kept in the
//! config (labels that OpenZFS's zdb reads), and `zpool clear` returns the side to
//! ONLINE. Files are written and read through real FUSE mounts (root and `/dev/fuse`, like
//! `zinject.rs`).

mod common;

use common::{wait_for, Lab, Output};

fn ok(out: Output, what: &str) -> String {
    assert_eq!(out.code, 0, "{what}: {}{}", out.stdout, out.stderr);
    out.stdout
}

/// The state and note words of the status row named `name`.
fn row(status: &str, name: &str) -> Option<Vec<String>> {
    status.lines().find_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        (words.first() == Some(&name)).then(|| words.iter().map(|w| w.to_string()).collect())
    })
}

/// Runs Zetta's `zinject` with `args` in `lab`; it must succeed.
fn zinject(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zinject");
    command.args(args);
    ok(lab.run(command), "zinject");
}

/// The 24 files under `mnt` still equal their originals in `orig/` (the lab's cwd).
fn assert_files_intact(lab: &Lab, mnt: &str) {
    let intact = lab.sh(&format!(
        "for i in $(seq 1 24); do cmp -s orig/f$i {mnt}/f$i || echo f$i; done"
    ));
    assert_eq!(intact.stdout, "", "files damaged: {}", intact.stderr);
}

/// Waits until `zpool status tank` shows leaf `leaf` in `state` (the diagnosis runs in
/// the daemon's zed worker, after the ereports).
fn wait_for_leaf_state(lab: &Lab, leaf: &str, state: &str) {
    let reached = || {
        let status = lab.ok("zpool", &["status", "tank"]);
        row(&status, leaf).is_some_and(|words| words.get(1).map(String::as_str) == Some(state))
    };
    assert!(
        wait_for(reached),
        "{leaf} did not become {state}: {}",
        lab.ok("zpool", &["status", "tank"])
    );
}

/// The mails the recording mailer kept, oldest first.
fn mails(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("mail-"))
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

// Why: Zetta had no degraded leaf state and no diagnosis: a disk returning damaged data on
// every read was repaired block by block forever, and nobody was told. Now, as OpenZFS's
// zfs_diagnosis/zfs_retire do, ten checksum errors of a leaf within 600 s degrade it
// (VDEV_AUX_ERR_EXCEEDED): it keeps serving I/O, `zpool status` says DEGRADED and "too
// many errors" with OpenZFS's status/action text, the statechange zedlet mails, the
// config keeps `degraded`/`aux_state` across an export, and `zpool clear` brings it back.
#[test]
fn checksum_errors_degrade_a_mirror_side_and_clear_brings_it_back() {
    use std::os::unix::fs::PermissionsExt;
    let mut lab = Lab::new();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), lab.dir.join("zinject")).unwrap();
    // The stock zedlets, as `zetta install-service` installs them, mailing through a
    // recording mailer.
    let zed_dir = lab.path("zed.d");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zetta"))
        .args(["install-service", &lab.path("units")])
        .env("ZETTA_ZED_DIR", &zed_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mail_dir = lab.dir.join("mail");
    std::fs::create_dir(&mail_dir).unwrap();
    let mailer = lab.path("mailer.sh");
    std::fs::write(
        &mailer,
        format!(
            "#!/bin/sh\nout={0}/mail-$(date +%s%N)-$$\n{{ echo \"subject: $1\"; cat; }} > $out.tmp && mv $out.tmp $out\n",
            mail_dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&mailer, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        format!("{zed_dir}/zed.rc"),
        format!("ZED_EMAIL_ADDR=root\nZED_EMAIL_PROG={mailer}\nZED_EMAIL_OPTS=\"'@SUBJECT@'\"\n"),
    )
    .unwrap();
    lab.env.push(("ZETTA_ZED_DIR".to_string(), zed_dir.clone()));

    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", "mirror", &a, &b]);
    let written = lab.sh(&format!(
        "mkdir -p orig && for i in $(seq 1 24); do head -c 400000 /dev/urandom > orig/f$i && cp orig/f$i {mnt}/f$i || exit 1; done"
    ));
    assert_eq!(written.code, 0, "{}", written.stderr);
    lab.ok("zpool", &["sync", "tank"]);
    // Every block now on b reads back damaged; export and import so that the reads
    // below miss the ARC and go to the disks.
    zinject(
        &lab,
        &["-d", &b, "-e", "corrupt", "-T", "read", "-f", "100", "tank"],
    );
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    // Ordinary reads (not a scrub): each block read from b fails its checksum, is read
    // from a and repaired on b.
    assert_files_intact(&lab, &mnt);
    wait_for_leaf_state(&lab, &b, "DEGRADED");
    zinject(&lab, &["-c", "all"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    assert!(status.contains(" state: DEGRADED\n"), "{status}");
    let words = row(&status, &b).unwrap();
    assert_eq!(
        words[words.len() - 3..],
        ["too", "many", "errors"],
        "{status}"
    );
    assert_eq!(row(&status, &a).unwrap()[1], "ONLINE", "{status}");
    assert_eq!(row(&status, "mirror-0").unwrap()[1], "DEGRADED", "{status}");
    assert!(
        status.contains("status: One or more devices has experienced an unrecoverable error.  An\n\tattempt was made to correct the error.  Applications are unaffected.\n"),
        "{status}"
    );
    assert!(
        status.contains("   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-9P\n"),
        "{status}"
    );
    let json = lab.ok("zpool", &["status", "-j", "tank"]);
    assert!(
        json.contains("\"aux\":\"ERR_EXCEEDED\"") || json.contains("\"aux\": \"ERR_EXCEEDED\""),
        "{json}"
    );

    // The stock statechange zedlet mailed the change.
    assert!(
        wait_for(|| mails(&mail_dir).iter().any(|m| m.contains("DEGRADED"))),
        "no mail: {:?}",
        mails(&mail_dir)
    );
    let mail = mails(&mail_dir)
        .into_iter()
        .find(|m| m.contains("DEGRADED"))
        .unwrap();
    assert!(
        mail.starts_with(&format!("subject: ZFS device {b} DEGRADED in tank\n")),
        "{mail}"
    );

    // A degraded side still takes writes; the data stays intact through it.
    let more = lab.sh(&format!(
        "head -c 300000 /dev/urandom > orig/g && cp orig/g {mnt}/g && cmp -s orig/g {mnt}/g"
    ));
    assert_eq!(more.code, 0, "{}", more.stderr);
    lab.ok("zpool", &["sync", "tank"]);

    // The verdict is in the config: kept across export and import, in b's label as
    // OpenZFS writes it (its zdb reads it).
    lab.ok("zpool", &["export", "tank"]);
    let zdb = std::process::Command::new("/opt/zetta-oracle/sbin/zdb")
        .args(["-l", &b])
        .output();
    if let Ok(zdb) = zdb {
        let text = String::from_utf8_lossy(&zdb.stdout);
        assert!(zdb.status.success(), "zdb -l: {text}{:?}", zdb.stderr);
        assert!(text.contains("degraded: 1"), "{text}");
        assert!(text.contains("aux_state: 'err_exceeded'"), "{text}");
    }
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    assert_eq!(row(&status, &b).unwrap()[1], "DEGRADED", "{status}");

    // `zpool clear`: ONLINE again, a statechange posted, the config clean.
    lab.ok("zpool", &["clear", "tank"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    assert!(status.contains(" state: ONLINE\n"), "{status}");
    assert_eq!(
        row(&status, &b).unwrap()[1..],
        ["ONLINE", "0", "0", "0"],
        "{status}"
    );
    let events = lab.ok("zpool", &["events", "-v"]);
    assert!(
        events.contains("vdev_state = \"ONLINE\" (0x7)")
            && events.contains("vdev_laststate = \"DEGRADED\" (0x6)"),
        "{events}"
    );
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    assert!(status.contains(" state: ONLINE\n"), "{status}");
    let intact = lab.sh(&format!(
        "for f in $(seq 1 24 | sed s/^/f/) g; do cmp -s orig/$f {mnt}/$f || echo $f; done"
    ));
    assert_eq!(intact.stdout, "", "files damaged: {}", intact.stderr);
    lab.stop_daemon();
}

// Why: the other half of the diagnosis: ten I/O errors of a leaf within 600 s fault it
// (`zpool_vdev_fault`): FAULTED with "too many errors", no I/O sent to it, the data still
// whole from the other side, the fault kept across export and import (unlike a fault from
// one failed write) and `zpool clear` bringing it back.
#[test]
fn io_errors_fault_a_mirror_side_until_clear() {
    let mut lab = Lab::new();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), lab.dir.join("zinject")).unwrap();
    let zed_dir = lab.path("zed.d");
    std::fs::create_dir(&zed_dir).unwrap();
    lab.env.push(("ZETTA_ZED_DIR".to_string(), zed_dir));
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", "mirror", &a, &b]);
    let written = lab.sh(&format!(
        "mkdir -p orig && for i in $(seq 1 24); do head -c 400000 /dev/urandom > orig/f$i && cp orig/f$i {mnt}/f$i || exit 1; done"
    ));
    assert_eq!(written.code, 0, "{}", written.stderr);
    lab.ok("zpool", &["sync", "tank"]);
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    zinject(&lab, &["-d", &b, "-e", "io", "-T", "read", "tank"]);
    assert_files_intact(&lab, &mnt);
    wait_for_leaf_state(&lab, &b, "FAULTED");
    zinject(&lab, &["-c", "all"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    let words = row(&status, &b).unwrap();
    assert_eq!(
        words[words.len() - 3..],
        ["too", "many", "errors"],
        "{status}"
    );
    assert_eq!(row(&status, "mirror-0").unwrap()[1], "DEGRADED", "{status}");
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    assert_eq!(row(&status, &b).unwrap()[1], "FAULTED", "kept: {status}");
    lab.ok("zpool", &["clear", "tank"]);
    assert!(
        wait_for(|| lab
            .ok("zpool", &["status", "tank"])
            .contains(" state: ONLINE\n")),
        "{}",
        lab.ok("zpool", &["status", "tank"])
    );
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    assert_files_intact(&lab, &mnt);
    lab.stop_daemon();
}
