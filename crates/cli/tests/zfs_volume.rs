//! Volumes through the real `zfs` command (issue 17): `zfs create -V` and its refusals,
//! the properties `zfs get` shows for a volume, `volsize` changes, snapshots, clones,
//! rollback, rename, destroy and send/receive of a volume, in OpenZFS 2.3's words.

mod common;

use common::{Lab, NoMountLab};

/// Runs `zfs args`, which must fail with exit code `code` and exactly `stderr`.
fn refused(lab: &NoMountLab, args: &[&str], code: i32, stderr: &str) {
    let out = lab.run("zfs", args);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (code, stderr),
        "zfs {}",
        args.join(" ")
    );
}

/// `zfs get -Hp -o value prop name`, trimmed.
fn get(lab: &NoMountLab, prop: &str, name: &str) -> String {
    lab.ok("zfs", &["get", "-Hp", "-o", "value", prop, name])
        .trim()
        .to_string()
}

// Why: `zfs create -V` was refused ("volumes are not implemented yet"). It must create a
// volume as OpenZFS 2.3 does: size rounded up to the block size, 16K blocks by default,
// refreservation = zvol_volsize_to_reservation unless -s, and the daemon must not try to
// mount it (it printed "filesystem successfully created, but not mounted").
#[test]
fn create_volume_as_openzfs() {
    let lab = Lab::new();
    let disk = lab.disk("disk", 512 << 20);
    let mut zpool = lab.command("zpool");
    zpool.args(["create", "tank", &disk]);
    assert_eq!(lab.run(zpool).code, 0);
    let out = lab.zfs(&["create", "-V", "100M", "tank/vol"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let lab = NoMountLabView(&lab);
    // 6400 blocks of 16K plus (7 + 7 + 1) indirect blocks of 128K, counted twice.
    let reservation = (100u64 << 20) + 15 * 2 * (128 << 10);
    for (prop, value) in [
        ("type", "volume".to_string()),
        ("volsize", (100u64 << 20).to_string()),
        ("volblocksize", "16384".to_string()),
        ("refreservation", reservation.to_string()),
        ("volmode", "default".to_string()),
        ("mountpoint", "-".to_string()),
        ("recordsize", "-".to_string()),
    ] {
        assert_eq!(lab.get(prop, "tank/vol"), value, "{prop}");
    }
    // Sparse, with -b: rounded up to a whole block, no reservation; a warning below 16K.
    let out = lab.zfs(&["create", "-s", "-b", "8K", "-V", "10000", "tank/sparse"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "Warning: volblocksize (8192) is less than the default minimum block size (16384).\n\
         To reduce wasted space a volblocksize of 16384 is recommended.\n"
    );
    assert_eq!(lab.get("volsize", "tank/sparse"), "16384");
    assert_eq!(lab.get("volblocksize", "tank/sparse"), "8192");
    assert_eq!(lab.get("refreservation", "tank/sparse"), "0");
    // `zfs list` shows volumes by default and with -t volume, with no mountpoint.
    let list = lab.zfs_ok(&["list", "-H", "-o", "name,mountpoint", "-t", "volume"]);
    assert_eq!(list, "tank/sparse\t-\ntank/vol\t-\n");
    let list = lab.zfs_ok(&["list", "-H", "-o", "name,type"]);
    assert_eq!(
        list,
        "tank\tfilesystem\ntank/sparse\tvolume\ntank/vol\tvolume\n"
    );
    // -p on an existing volume is a no-op; nested parents are created.
    lab.zfs_ok(&["create", "-p", "-V", "1M", "tank/vol"]);
    lab.zfs_ok(&["create", "-p", "-V", "1M", "tank/a/b/vol"]);
    assert_eq!(lab.get("type", "tank/a/b"), "filesystem");
    assert_eq!(lab.get("type", "tank/a/b/vol"), "volume");
}

/// Borrowed `Lab` helpers under the names the other tests use.
struct NoMountLabView<'a>(&'a Lab);

impl NoMountLabView<'_> {
    fn zfs(&self, args: &[&str]) -> common::Output {
        self.0.zfs(args)
    }
    fn zfs_ok(&self, args: &[&str]) -> String {
        self.0.zfs_ok(args)
    }
    fn get(&self, prop: &str, name: &str) -> String {
        self.0
            .zfs_ok(&["get", "-Hp", "-o", "value", prop, name])
            .trim()
            .to_string()
    }
}

// Why: volumes did not exist, so none of OpenZFS's volume refusals could be given; each
// is pinned word for word with its exit code.
#[test]
fn volume_refusals_as_openzfs() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "-V", "1M", "tank/vol"]);
    lab.ok("zfs", &["create", "tank/fs"]);
    refused(
        &lab,
        &["create", "-V", "0", "tank/v0"],
        1,
        "cannot create 'tank/v0': volume size cannot be zero\n",
    );
    refused(
        &lab,
        &["create", "-V", "1x", "tank/v1"],
        1,
        "bad volume size '1x': invalid numeric suffix 'x'\n",
    );
    refused(
        &lab,
        &["create", "-b", "3000", "-V", "1M", "tank/v2"],
        1,
        "cannot create 'tank/v2': 'volblocksize' must be power of 2 from 512B to 16M\n",
    );
    refused(
        &lab,
        &["create", "-V", "1M", "-o", "mountpoint=/x", "tank/v3"],
        1,
        "cannot create 'tank/v3': 'mountpoint' does not apply to datasets of this type\n",
    );
    refused(
        &lab,
        &["create", "-V", "1M", "tank/vol"],
        1,
        "cannot create 'tank/vol': dataset already exists\n",
    );
    let out = lab.run("zfs", &["create", "-s", "tank/fs2"]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("'-s' and '-b' can only be used when creating a volume\n"));
    let out = lab.run("zfs", &["create", "-u", "-V", "1M", "tank/v4"]);
    assert_eq!(out.code, 2);
    assert!(out
        .stderr
        .starts_with("'-u' can only be used when creating a filesystem\n"));
    refused(
        &lab,
        &["set", "volsize=1000", "tank/vol"],
        1,
        "cannot set property for 'tank/vol': 'volsize' must be a multiple of volume block size (16K)\n",
    );
    refused(
        &lab,
        &["set", "volsize=0", "tank/vol"],
        1,
        "cannot set property for 'tank/vol': 'volsize' cannot be zero\n",
    );
    refused(
        &lab,
        &["set", "recordsize=8K", "tank/vol"],
        1,
        "cannot set property for 'tank/vol': 'recordsize' does not apply to datasets of this type\n",
    );
    refused(
        &lab,
        &["set", "volblocksize=8K", "tank/vol"],
        1,
        "cannot set property for 'tank/vol': 'volblocksize' is readonly\n",
    );
    refused(
        &lab,
        &["set", "volsize=2M", "tank/fs"],
        1,
        "cannot set property for 'tank/fs': 'volsize' does not apply to datasets of this type\n",
    );
    // A reservation larger than the pool: nothing is created.
    refused(
        &lab,
        &["create", "-V", "4G", "tank/big"],
        1,
        "cannot create 'tank/big': out of space\n",
    );
    let out = lab.run("zfs", &["list", "tank/big"]);
    assert_eq!(out.code, 1);
}

// Why: `volsize` could not be changed; growing and shrinking must work as OpenZFS's, the
// refreservation following the size when it covered the old one (zfs_add_synthetic_resv),
// and a sparse volume keeping none; `refreservation=auto` gives the full reservation.
#[test]
fn volsize_grows_and_shrinks() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "-V", "10M", "tank/vol"]);
    lab.ok("zfs", &["create", "-s", "-V", "10M", "tank/sparse"]);
    // The data plus the meta-dnode's 7 levels and the indirect blocks (1 up to 1024
    // blocks, 2 + 1 up to 2048), each counted twice at 128K.
    let resv = |size: u64| {
        let levels = if size <= 16 << 20 { 8 } else { 10 };
        size + levels * 2 * (128 << 10)
    };
    assert_eq!(
        get(&lab, "refreservation", "tank/vol"),
        resv(10 << 20).to_string()
    );
    lab.ok("zfs", &["set", "volsize=20M", "tank/vol"]);
    assert_eq!(get(&lab, "volsize", "tank/vol"), (20u64 << 20).to_string());
    assert_eq!(
        get(&lab, "refreservation", "tank/vol"),
        resv(20 << 20).to_string()
    );
    lab.ok("zfs", &["set", "volsize=5M", "tank/vol"]);
    assert_eq!(get(&lab, "volsize", "tank/vol"), (5u64 << 20).to_string());
    assert_eq!(
        get(&lab, "refreservation", "tank/vol"),
        resv(5 << 20).to_string()
    );
    lab.ok("zfs", &["set", "volsize=20M", "tank/sparse"]);
    assert_eq!(get(&lab, "refreservation", "tank/sparse"), "0");
    lab.ok("zfs", &["set", "refreservation=auto", "tank/sparse"]);
    assert_eq!(
        get(&lab, "refreservation", "tank/sparse"),
        resv(20 << 20).to_string()
    );
}

// Why: a volume's snapshots, clones, rollback, rename, destroy and send/receive went
// nowhere (no volumes), and a received volume stream must come back a volume (the stream
// said type 2 always, and the receiver made a filesystem of it).
#[test]
fn volume_snapshots_clones_and_streams() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "-V", "10M", "tank/vol"]);
    lab.ok("zfs", &["snapshot", "tank/vol@a"]);
    assert_eq!(
        get(&lab, "volsize", "tank/vol@a"),
        (10u64 << 20).to_string()
    );
    assert_eq!(get(&lab, "type", "tank/vol@a"), "snapshot");
    lab.ok("zfs", &["set", "volsize=20M", "tank/vol"]);
    lab.ok("zfs", &["clone", "tank/vol@a", "tank/clone"]);
    assert_eq!(get(&lab, "type", "tank/clone"), "volume");
    assert_eq!(
        get(&lab, "volsize", "tank/clone"),
        (10u64 << 20).to_string()
    );
    assert_eq!(get(&lab, "origin", "tank/clone"), "tank/vol@a");
    lab.ok("zfs", &["rollback", "tank/vol@a"]);
    assert_eq!(get(&lab, "volsize", "tank/vol"), (10u64 << 20).to_string());
    lab.ok("zfs", &["rename", "tank/clone", "tank/clone2"]);
    assert_eq!(get(&lab, "type", "tank/clone2"), "volume");
    lab.ok("zfs", &["destroy", "tank/clone2"]);
    // Full and incremental streams into a new volume.
    lab.ok("zfs", &["set", "volsize=30M", "tank/vol"]);
    lab.ok("zfs", &["snapshot", "tank/vol@b"]);
    lab.ok("sh", &["-c", "zfs send tank/vol@a | zfs receive tank/copy"]);
    assert_eq!(get(&lab, "type", "tank/copy"), "volume");
    assert_eq!(get(&lab, "volsize", "tank/copy"), (10u64 << 20).to_string());
    assert_eq!(get(&lab, "volblocksize", "tank/copy"), "16384");
    lab.ok(
        "sh",
        &["-c", "zfs send -i @a tank/vol@b | zfs receive tank/copy"],
    );
    assert_eq!(get(&lab, "volsize", "tank/copy"), (30u64 << 20).to_string());
    let names = lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "all", "-r", "tank/copy"],
    );
    assert_eq!(names, "tank/copy\ntank/copy@a\ntank/copy@b\n");
    lab.ok("zfs", &["destroy", "-r", "tank/vol"]);
    let out = lab.run("zfs", &["list", "tank/vol"]);
    assert_eq!(out.code, 1);
}
