//! syncoid (Debian's `sanoid` package, unmodified) replicating between Zetta pools with
//! the lab's `zfs` first in PATH: a new target (oldest snapshot full, then `-I` to a sync
//! snapshot), an incremental onto it (rollback to the common snapshot, `-I`, pruning of
//! old sync snapshots on both sides), `-r` with a clone (sent last with `send -i origin`),
//! `--no-sync-snap`, and a transfer killed mid-stream that the next run resumes with the
//! target's `receive_resume_token` (`zfs send -t`). Data is written and compared through
//! the FUSE mounts; snapshots are compared by guid. Over ssh: `syncoid_ssh.rs`.
//!
//! The seed post "Verifying copies" (syncoid replicating a copy of `/usr/bin`) is in
//! `seeds/verifying_copies.rs`.

mod common;

use common::host::{installed, tree_digest, Host, SYNCOID};
use std::time::{Duration, Instant};

fn two_pools(host: &Host) {
    host.pool("src", 512 << 20, false);
    host.pool("dst", 512 << 20, false);
}

/// Full, then incremental: the target has the source's snapshots (same guids) and data;
/// only the newest sync snapshot survives on either side.
#[test]
fn syncoid_full_then_incremental() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    two_pools(&host);
    host.zfs_ok(&["create", "src/data"]);
    let data = host.mnt("src/data");
    host.sh_ok(&format!(
        "cp -a /usr/share/doc/bash {data}/ && ln -s bash {data}/link && zfs snapshot src/data@first"
    ));
    let out = host.syncoid_ok("src/data dst/data");
    assert!(
        out.starts_with("INFO: Sending oldest full snapshot src/data@first (~ "),
        "{out}"
    );
    assert!(out.contains(
        "INFO: Updating new target filesystem with incremental src/data@first ... syncoid_"
    ));
    assert_eq!(
        tree_digest(&host, &data),
        tree_digest(&host, &host.mnt("dst/data"))
    );
    assert_eq!(
        host.snapshot_guids("src/data", "X"),
        host.snapshot_guids("dst/data", "X")
    );

    host.sh_ok(&format!("echo more > {data}/new && rm {data}/link"));
    let out = host.syncoid_ok("src/data dst/data");
    assert!(
        out.starts_with("Sending incremental src/data@syncoid_"),
        "{out}"
    );
    assert_eq!(
        tree_digest(&host, &data),
        tree_digest(&host, &host.mnt("dst/data"))
    );
    let guids = host.snapshot_guids("src/data", "X");
    assert_eq!(guids, host.snapshot_guids("dst/data", "X"));
    assert_eq!(
        guids.lines().count(),
        2,
        "@first and one sync snapshot: {guids}"
    );
}

/// `-r`: a tree with a child and a clone arrives as a tree, the clone as a clone of the
/// target's copy of its origin; `--no-sync-snap` replicates existing snapshots only.
#[test]
fn syncoid_recursive_with_clone_and_no_sync_snap() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    two_pools(&host);
    for fs in ["src/tree", "src/tree/child"] {
        host.zfs_ok(&["create", fs]);
    }
    host.sh_ok(&format!(
        "echo top > {0}/f && echo child > {0}/child/f && zfs snapshot -r src/tree@base && \
         zfs clone src/tree/child@base src/tree/kid && echo kid > {0}/kid/g",
        host.mnt("src/tree")
    ));
    host.syncoid_ok("-r src/tree dst/tree");
    let listing = host.zfs_ok(&["list", "-H", "-o", "name,origin", "-r", "dst/tree"]);
    assert_eq!(
        listing,
        "dst/tree\t-\ndst/tree/child\t-\ndst/tree/kid\tdst/tree/child@base\n"
    );
    for fs in ["tree", "tree/child", "tree/kid"] {
        assert_eq!(
            tree_digest(&host, &host.mnt(&format!("src/{fs}"))),
            tree_digest(&host, &host.mnt(&format!("dst/{fs}"))),
            "{fs}"
        );
    }
    // A second run is incremental for the whole tree, the clone included.
    host.sh_ok(&format!("echo changed > {}/kid/g", host.mnt("src/tree")));
    host.syncoid_ok("-r src/tree dst/tree");
    assert_eq!(
        tree_digest(&host, &host.mnt("src/tree/kid")),
        tree_digest(&host, &host.mnt("dst/tree/kid"))
    );
    assert_eq!(
        host.snapshot_guids("src/tree", "X"),
        host.snapshot_guids("dst/tree", "X")
    );
    // The replica goes with `zfs destroy -r`, its clone before the clone's origin, and its
    // mounts at once (regression: the parent was found busy while a child's fusermount3
    // was still in it, and the origin snapshot was destroyed before its clone).
    host.zfs_ok(&["destroy", "-r", "dst/tree"]);
    assert_eq!(
        host.zfs_ok(&["list", "-H", "-o", "name", "-r", "dst"]),
        "dst\n"
    );

    // --no-sync-snap: no snapshot of syncoid's own on either side.
    host.zfs_ok(&["create", "src/plain"]);
    host.sh_ok(&format!(
        "echo 1 > {0}/f && zfs snapshot src/plain@a && echo 2 > {0}/f && zfs snapshot src/plain@b",
        host.mnt("src/plain")
    ));
    host.syncoid_ok("--no-sync-snap src/plain dst/plain");
    host.sh_ok("zfs snapshot src/plain@c");
    host.syncoid_ok("--no-sync-snap src/plain dst/plain");
    let names = host.zfs_ok(&[
        "list",
        "-H",
        "-t",
        "snapshot",
        "-o",
        "name",
        "-r",
        "dst/plain",
    ]);
    assert_eq!(names, "dst/plain@a\ndst/plain@b\ndst/plain@c\n");
    assert_eq!(
        host.snapshot_guids("src/plain", "X"),
        host.snapshot_guids("dst/plain", "X")
    );
}

/// A transfer killed mid-stream (the `zfs receive` process, SIGKILL) leaves a resume token
/// on the target; the next syncoid run resumes it (`zfs send -t`) and then syncs on.
#[test]
fn syncoid_resumes_an_interrupted_transfer() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    two_pools(&host);
    host.zfs_ok(&["create", "-o", "compression=off", "src/big"]);
    let big = host.mnt("src/big");
    host.sh_ok(&format!(
        "head -c 48M /dev/urandom > {big}/blob && cp -a /usr/share/doc/bash {big}/"
    ));
    // Slowed to 8 MB/s by syncoid's own mbuffer option, so the kill lands mid-stream.
    let mut command = host.lab.command("bash");
    command
        .args([
            "-c",
            &format!("exec {SYNCOID} --source-bwlimit=8m src/big dst/big"),
        ])
        .current_dir(&host.lab.dir);
    let first = host.lab.spawn(&mut command);
    let started = Instant::now();
    let receive = loop {
        let ps = host.sh_ok("ps -Ao pid=,args=");
        let found = ps.lines().find_map(|line| {
            let (pid, args) = line.trim().split_once(' ')?;
            args.starts_with("zfs receive -s -F dst/big")
                .then(|| pid.to_string())
        });
        if let Some(pid) = found {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no receive in ps: {ps}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1500));
    host.sh_ok(&format!("kill -9 {receive}"));
    let out = first.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let token = host.zfs_ok(&[
        "get",
        "-H",
        "-o",
        "value",
        "receive_resume_token",
        "dst/big",
    ]);
    assert!(token.starts_with("1-"), "{token}");
    assert!(
        !host
            .sh_ok("grep ' fuse.zetta ' /proc/mounts")
            .contains(&host.mnt("dst/big")),
        "a partly received filesystem is not mounted"
    );

    let out = host.syncoid_ok("src/big dst/big");
    assert!(
        out.starts_with("Resuming interrupted zfs send/receive from src/big to dst/big (~ "),
        "{out}"
    );
    assert_eq!(
        tree_digest(&host, &big),
        tree_digest(&host, &host.mnt("dst/big"))
    );
    let token = host.zfs_ok(&[
        "get",
        "-H",
        "-o",
        "value",
        "receive_resume_token",
        "dst/big",
    ]);
    assert_eq!(token, "-\n");
}

/// Every command of reference/sanoid-syncoid.md, in the exact form sanoid and syncoid run
/// it, with the output they parse (field order, tabs, `-` for unset, exit codes).
#[test]
fn reference_command_set() {
    let host = Host::new();
    two_pools(&host);
    host.sh_ok(
        "zfs create src/data && zfs create src/data/child && zfs snapshot -r src/data@a && \
         zfs clone src/data/child@a src/data/kid && zfs snapshot src/data@b:1-2_3.4",
    );
    let sh = |script: &str| host.sh(script);
    let lines = |text: &str| text.lines().map(str::to_string).collect::<Vec<String>>();

    // sanoid: every snapshot's creation, flags bundled, no dataset.
    let out = host.sh_ok("zfs get -Hrpt snapshot creation");
    let names: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(
        names,
        ["src/data@a", "src/data@b:1-2_3.4", "src/data/child@a"]
    );
    for line in out.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            (fields.len(), fields[1], fields[3]),
            (4, "creation", "-"),
            "{line}"
        );
        assert!(fields[2].parse::<u64>().is_ok(), "{line}");
    }
    // syncoid: snapshots of one filesystem only, guid then creation each.
    let out = host.sh_ok("zfs get -Hpd 1 -t snapshot guid,creation src/data");
    let props: Vec<(String, String)> = lines(&out)
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let expected: Vec<(String, String)> = ["src/data@a", "src/data@b:1-2_3.4"]
        .iter()
        .flat_map(|s| ["guid", "creation"].map(|p| (s.to_string(), p.to_string())))
        .collect();
    assert_eq!(props, expected);
    let out = host.sh_ok("zfs get -Hpd 1 type,guid,creation src/data/child");
    assert_eq!(out.lines().count(), 6, "3 lines per object: {out}");
    assert!(out.starts_with("src/data/child\ttype\tfilesystem\t-\nsrc/data/child\tguid\t"));
    // Bookmarks: nothing and exit 0, then the bookmark's lines.
    assert_eq!(
        host.sh_ok("zfs get -Hpd 1 -t bookmark guid,creation src/data"),
        ""
    );
    host.sh_ok("zfs bookmark src/data@a src/data#a");
    let out = host.sh_ok("zfs get -Hpd 1 -t bookmark guid,creation src/data");
    assert!(out.starts_with("src/data#a\tguid\t") && out.contains("\nsrc/data#a\tcreation\t"));
    // Single values syncoid reads from field 3.
    for (prop, value) in [
        ("name", "src/data"),
        ("syncoid:sync", "-"),
        ("receive_resume_token", "-"),
        ("type", "filesystem"),
        ("recordsize", "128K"),
    ] {
        let out = host.sh_ok(&format!("zfs get -H {prop} src/data"));
        assert_eq!(out.split('\t').nth(2), Some(value), "{prop}: {out}");
    }
    let used = host.sh_ok("zfs get -H -p used src/data");
    assert!(
        used.split('\t').nth(2).unwrap().parse::<u64>().is_ok(),
        "{used}"
    );
    let out = sh("zfs get -H name dst/none 2>&1");
    assert!(out.code != 0 && out.stdout.contains("dataset does not exist"));
    // Lists: pre-order, origins, pools, mounts.
    assert_eq!(
        host.sh_ok("zfs list -o name -t filesystem,volume -Hr src/data"),
        "src/data\nsrc/data/child\nsrc/data/kid\n"
    );
    assert_eq!(
        host.sh_ok("zfs list -o name,origin -t filesystem,volume -Hr src"),
        "src\t-\nsrc/data\t-\nsrc/data/child\t-\nsrc/data/kid\tsrc/data/child@a\n"
    );
    assert_eq!(host.sh_ok("zfs list -d0 -H -oname"), "dst\nsrc\n");
    let mounts = host.sh_ok("zfs list -H -t filesystem -o mountpoint,mounted");
    assert!(
        mounts.contains(&format!("{}\tyes\n", host.mnt("src/data/kid"))),
        "{mounts}"
    );
    // Snapshot, rollback, destroy.
    let out = sh("zfs snapshot src/data@a");
    assert!(
        out.code != 0 && out.stderr.contains("already exists"),
        "{}",
        out.stderr
    );
    host.sh_ok("zfs rollback -R src/data@a");
    assert_eq!(
        host.sh_ok("zfs list -H -t snapshot -o name -r src/data"),
        "src/data@a\nsrc/data/child@a\n"
    );
    // Estimates: the last line is `size\t<bytes>`, also for a resume token.
    let out = host.sh_ok("zfs send -nvP src/data@a");
    assert!(out.lines().last().unwrap().starts_with("size\t"), "{out}");
    // Pools.
    assert_eq!(
        host.sh_ok("zpool get -o value -H feature@extensible_dataset src"),
        "active\n"
    );
    let cap = host.sh_ok("zpool list -H -o cap src");
    assert!(cap.trim_end().ends_with('%'), "{cap}");
    let out = host.sh_ok("zpool list -o name,size,cap,health,free src");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "SIZE", "CAP", "HEALTH", "FREE"]);
    assert_eq!((rows[1][0], rows[1][3]), ("src", "ONLINE"));
    let status = host.sh_ok("zpool status src");
    assert!(status.contains("\tNAME "), "{status}");
    assert!(status.contains("\tsrc "), "{status}");
}

/// `--create-bookmark`: syncoid bookmarks the snapshot it sent; once the source has
/// destroyed that snapshot, the next run finds no common snapshot, lists bookmarks (`zfs
/// get -Hpd 1 -t bookmark guid,creation`) and sends from the bookmark (`send -i fs#mark`).
#[test]
fn syncoid_falls_back_to_a_bookmark() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    two_pools(&host);
    host.zfs_ok(&["create", "src/bm"]);
    let bm = host.mnt("src/bm");
    host.sh_ok(&format!("echo a > {bm}/a && zfs snapshot src/bm@one"));
    host.syncoid_ok("--create-bookmark --no-sync-snap src/bm dst/bm");
    assert_eq!(
        host.zfs_ok(&["list", "-H", "-t", "bookmark", "-o", "name", "-r", "src/bm"]),
        "src/bm#one\n"
    );
    host.sh_ok(&format!(
        "echo b > {bm}/b && zfs snapshot src/bm@two && zfs destroy src/bm@one"
    ));
    let out = host.syncoid_ok("--create-bookmark --no-sync-snap src/bm dst/bm");
    assert!(
        out.contains("Sending incremental src/bm#'one' ... two"),
        "{out}"
    );
    assert_eq!(
        host.zfs_ok(&["list", "-H", "-t", "snapshot", "-o", "name", "-r", "dst/bm"]),
        "dst/bm@one\ndst/bm@two\n"
    );
    assert_eq!(
        tree_digest(&host, &bm),
        tree_digest(&host, &host.mnt("dst/bm"))
    );
}
