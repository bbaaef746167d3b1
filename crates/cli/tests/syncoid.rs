//! syncoid (Debian's `sanoid` package, unmodified) replicating between Zetta pools with
//! the lab's `zfs` first in PATH: a new target (oldest snapshot full, then `-I` to a sync
//! snapshot), an incremental onto it (rollback to the common snapshot, `-I`, pruning of
//! old sync snapshots on both sides), `-r` with a clone (sent last with `send -i origin`),
//! `--no-sync-snap`, and a transfer killed mid-stream that the next run resumes with the
//! target's `receive_resume_token` (`zfs send -t`). Data is written and compared through
//! the FUSE mounts; snapshots are compared by guid. Over ssh: `syncoid_ssh.rs`.
//!
//! Also the seed post "Verifying copies": `/usr/bin` copied with `rsync -haH`, replicated
//! with `zfs send | zfs receive` and with syncoid, and `tar -c . | md5sum` run in each
//! copy gives one digest.

mod common;

use common::host::{installed, tree_digest, Host};
use std::time::{Duration, Instant};

const SYNCOID: &str = "/usr/sbin/syncoid";

/// One second between syncoid runs: sync snapshots are named to the second.
fn syncoid(host: &Host, args: &str) -> common::Output {
    std::thread::sleep(Duration::from_millis(1100));
    host.sh(&format!("{SYNCOID} {args}"))
}

fn syncoid_ok(host: &Host, args: &str) -> String {
    let out = syncoid(host, args);
    assert_eq!(
        out.code, 0,
        "syncoid {args}\nstdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    out.stdout
}

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
    let out = syncoid_ok(&host, "src/data dst/data");
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
    let out = syncoid_ok(&host, "src/data dst/data");
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
    syncoid_ok(&host, "-r src/tree dst/tree");
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
    syncoid_ok(&host, "-r src/tree dst/tree");
    assert_eq!(
        tree_digest(&host, &host.mnt("src/tree/kid")),
        tree_digest(&host, &host.mnt("dst/tree/kid"))
    );
    assert_eq!(
        host.snapshot_guids("src/tree", "X"),
        host.snapshot_guids("dst/tree", "X")
    );

    // --no-sync-snap: no snapshot of syncoid's own on either side.
    host.zfs_ok(&["create", "src/plain"]);
    host.sh_ok(&format!(
        "echo 1 > {0}/f && zfs snapshot src/plain@a && echo 2 > {0}/f && zfs snapshot src/plain@b",
        host.mnt("src/plain")
    ));
    syncoid_ok(&host, "--no-sync-snap src/plain dst/plain");
    host.sh_ok("zfs snapshot src/plain@c");
    syncoid_ok(&host, "--no-sync-snap src/plain dst/plain");
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
    assert!(token.starts_with("zt1-"), "{token}");
    assert!(
        !host
            .sh_ok("grep ' fuse.zetta ' /proc/mounts")
            .contains(&host.mnt("dst/big")),
        "a partly received filesystem is not mounted"
    );

    let out = syncoid_ok(&host, "src/big dst/big");
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

/// The seed post "Verifying copies", its commands as close as a test allows: `zfs create
/// -o compression=off`, `rsync -haH /usr/bin`, then replication (`zfs send | zfs receive`
/// and syncoid), and `tar -c . | md5sum` in each copy — one digest for all three. (The
/// deterministic `--sort=name --numeric-owner` digest agrees too.)
#[test]
fn verifying_copies_post() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    host.pool("banshee", 2 << 30, false);
    let tmp = host.mnt("banshee/tmp");
    host.zfs_ok(&["create", "-o", "compression=off", "banshee/tmp"]);
    host.sh_ok(&format!("rsync -haH /usr/bin {tmp}/"));
    host.sh_ok(
        "zfs snapshot banshee/tmp@copy && zfs send banshee/tmp@copy | zfs receive banshee/sent",
    );
    let out = syncoid_ok(&host, "banshee/tmp banshee/tmp2");
    assert!(
        out.starts_with("INFO: Sending oldest full snapshot banshee/tmp@copy (~ "),
        "{out}"
    );
    let post_digest = |dir: &str| host.sh_ok(&format!("cd {dir} ; tar -c . | md5sum"));
    let digest = post_digest(&tmp);
    for copy in ["banshee/sent", "banshee/tmp2"] {
        assert_eq!(post_digest(&host.mnt(copy)), digest, "{copy}");
        assert_eq!(
            tree_digest(&host, &host.mnt(copy)),
            tree_digest(&host, &tmp),
            "{copy}"
        );
    }
    assert_eq!(
        tree_digest(&host, &format!("{tmp}/bin")),
        tree_digest(&host, "/usr/bin"),
        "the copy is /usr/bin"
    );
}
