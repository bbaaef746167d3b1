//! Post "ZFS snapshots and cold storage" (seeds 000, 002, 004): snapshots of a dataset
//! kept as stream files (`zfs send` full, `-i`, `-I`), restored with `zfs receive` in
//! order, and the refusals when a full or one incremental is missing.
//!
//! The post's snapshots hold 100 MiB each; here 8 MiB each (what is checked is which
//! snapshots arrive and the refusals, not sizes), written through the mount.

use crate::lab::{write_random, SeedLab};

const SNAPSHOT_DATA_BYTES: u64 = 8 << 20;

/// poolname/setname with @0..@9, a new file written before each snapshot.
fn setup_setname(lab: &SeedLab) {
    let disk = lab.disk("disk", 1 << 30);
    let mnt = lab.path("mnt");
    lab.zpool_ok(&["create", "-m", &mnt, "poolname", &disk]);
    lab.zfs_ok(&["create", "poolname/setname"]);
    for n in 0..10u64 {
        write_random(&format!("{mnt}/setname/{n}.bin"), SNAPSHOT_DATA_BYTES, n).unwrap();
        lab.zfs_ok(&["snapshot", &format!("poolname/setname@{n}")]);
    }
}

/// Why: the post, step by step, through the CLI, a mount and stream files: ten snapshots
/// with data written between them, full and incremental streams kept in files, the
/// refusals word for word ("Without a full, incrementals are useless", "Without ONE
/// incremental, following incrementals are useless"), restores in order, `-i` giving only
/// its end snapshot and `-I` every one, and `zfs list -rt all` of the restore.
#[test]
fn cold_storage_post_through_the_cli() {
    let lab = SeedLab::new();
    setup_setname(&lab);
    let names: Vec<String> = std::iter::once("poolname/setname".to_string())
        .chain((0..10).map(|n| format!("poolname/setname@{n}")))
        .collect();
    assert_eq!(lab.inner.listed("poolname/setname"), names);

    lab.inner
        .send_to(&["send", "poolname/setname@0"], "setname@0.zfsfull");
    lab.inner.send_to(
        &["send", "-i", "poolname/setname@0", "poolname/setname@1"],
        "setname@0-@1.zfsinc",
    );
    lab.inner.send_to(
        &["send", "-i", "poolname/setname@1", "poolname/setname@2"],
        "setname@1-@2.zfsinc",
    );
    let full_size = std::fs::metadata(lab.path("setname@0.zfsfull"))
        .unwrap()
        .len();
    assert!(full_size > SNAPSHOT_DATA_BYTES);

    // Without a full, incrementals are useless.
    let out = lab
        .inner
        .receive_from("poolname/restore", "setname@0-@1.zfsinc");
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "cannot receive incremental stream: destination 'poolname/restore' does not exist\n"
    );
    let out = lab
        .inner
        .receive_from("poolname/restore", "setname@0.zfsfull");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        lab.inner.listed("poolname/restore"),
        ["poolname/restore", "poolname/restore@0"]
    );
    let table = lab.zfs_ok(&["list", "-rt", "all", "poolname/restore"]);
    let lines: Vec<&str> = table.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["NAME", "USED", "AVAIL", "REFER", "MOUNTPOINT"]);
    let head: Vec<&str> = lines[1].split_whitespace().collect();
    let snap0: Vec<&str> = lines[2].split_whitespace().collect();
    // The post's pool is mounted at /poolname; this one at the lab's mount directory.
    assert_eq!(head[4], format!("{}/restore", lab.path("mnt")));
    assert_eq!(
        (snap0[0], snap0[2], snap0[4]),
        ("poolname/restore@0", "-", "-")
    );
    assert_eq!(head[3], snap0[3], "the restore refers to what @0 refers to");
    assert_eq!(snap0[1], "0B", "nothing is unique to @0 yet");

    // Without ONE incremental, following incrementals are useless.
    let out = lab
        .inner
        .receive_from("poolname/restore", "setname@1-@2.zfsinc");
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "cannot receive incremental stream: most recent snapshot of poolname/restore does not\nmatch incremental source\n"
    );
    // Restoring incrementals in order.
    for file in ["setname@0-@1.zfsinc", "setname@1-@2.zfsinc"] {
        let out = lab.inner.receive_from("poolname/restore", file);
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
    }
    let mut expected = vec!["poolname/restore".to_string()];
    expected.extend((0..3).map(|n| format!("poolname/restore@{n}")));
    assert_eq!(lab.inner.listed("poolname/restore"), expected);

    // Incrementals that skip snapshots: only the end snapshot arrives.
    lab.inner.send_to(
        &["send", "-i", "poolname/setname@2", "poolname/setname@9"],
        "setname@2-@9.zfsinc",
    );
    assert_eq!(
        lab.inner
            .receive_from("poolname/restore", "setname@2-@9.zfsinc")
            .code,
        0
    );
    expected.push("poolname/restore@9".to_string());
    assert_eq!(lab.inner.listed("poolname/restore"), expected);

    // Incremental streams (-I) carry every snapshot, and need the full too.
    lab.inner.send_to(
        &["send", "-I", "poolname/setname@0", "poolname/setname@9"],
        "setname@0-@9.zfsincstream",
    );
    lab.zfs_ok(&["destroy", "-r", "poolname/restore"]);
    let out = lab
        .inner
        .receive_from("poolname/restore", "setname@0-@9.zfsincstream");
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot receive incremental stream: destination 'poolname/restore' does not exist\n"
        )
    );
    assert_eq!(
        lab.inner
            .receive_from("poolname/restore", "setname@0.zfsfull")
            .code,
        0
    );
    let out = lab
        .inner
        .receive_from("poolname/restore", "setname@0-@9.zfsincstream");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut expected = vec!["poolname/restore".to_string()];
    expected.extend((0..10).map(|n| format!("poolname/restore@{n}")));
    assert_eq!(lab.inner.listed("poolname/restore"), expected);
    // Guids and creation times are the sender's.
    let props = |fs: &str| -> Vec<String> {
        lab.zfs_ok(&[
            "get",
            "-Hpd",
            "1",
            "-t",
            "snapshot",
            "-o",
            "value",
            "guid,creation",
            fs,
        ])
        .lines()
        .map(str::to_string)
        .collect()
    };
    assert_eq!(props("poolname/restore"), props("poolname/setname"));
    let refer = |fs: &str| lab.zfs_ok(&["get", "-Hp", "-o", "value", "referenced", fs]);
    assert_eq!(refer("poolname/restore"), refer("poolname/setname@9"));
}
