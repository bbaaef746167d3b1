//! syncoid (Debian's `sanoid` package, unmodified) between two implementations on one host
//! (issue 15, "Done when"): from a zfs-fuse pool to a Zetta pool and from Zetta back to
//! zfs-fuse, full then incremental, and a transfer killed mid-stream that the next run
//! completes. syncoid runs `zfs` and `zpool` for both sides; a router first in PATH sends
//! each command to the implementation that has the pool it names (`fp` is zfs-fuse's, `zs`
//! Zetta's), as `ssh host zfs` would on two machines.
//!
//! Resume: syncoid asks both pools for `feature@extensible_dataset`; zfs-fuse's version-23
//! pool has no features, so syncoid disables resume for any pair with zfs-fuse in it (no
//! `receive -s`, no `send -t`) and an interrupted transfer is sent again from its start.
//! Zetta's receiver destroys the partial state of a non-`-s` receive, zfs-fuse's its own
//! `%recv` clone; the rerun must find both targets as the last completed run left them.
//! (Resume with tokens between Zetta pools is `syncoid::syncoid_resumes_an_interrupted_transfer`.)
//!
//! Over ssh (`syncoid_between_zfs_fuse_and_zetta_over_ssh`): zfs-fuse on this host, Zetta
//! on a second one (`common::remote`, a network namespace with its own sshd and daemon);
//! syncoid pushes zfs-fuse's filesystem to the Zetta host and pulls a Zetta filesystem back,
//! each full, incremental, and a killed transfer rerun (from its start: no resume tokens
//! with zfs-fuse, as above).
//!
//! Why: zfs-fuse's streams put a dnode block's OBJECT records before their data, which Zetta
//! refused until the receiver took OpenZFS's record order; the reverse direction checks that
//! a 2010 receiver takes what Zetta sends of a version-23 pool, incrementals included.

mod common;
#[allow(dead_code)]
#[path = "../../zetta/tests/common/zfs_fuse.rs"]
mod zfs_fuse;

use common::remote::{Remote, SSHD};
use common::Lab;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SYNCOID: &str = "/usr/sbin/syncoid";

/// Files of several shapes under `root/tag`: small, multi-record, sparse, a directory of
/// many entries (more objects than one dnode block), symlinks, a hard link.
fn populate(root: &Path, tag: &str) {
    let dir = root.join(tag);
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    std::fs::write(dir.join("small.txt"), format!("hello from {tag}\n")).unwrap();
    let medium: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.join("sub/medium.bin"), medium).unwrap();
    let text: Vec<u8> = (0..20_000)
        .flat_map(|i| format!("line {i} of {tag}'s text\n").into_bytes())
        .collect();
    std::fs::write(dir.join("sub/deeper/text.txt"), text).unwrap();
    for i in 0..60 {
        std::fs::write(dir.join(format!("sub/entry_{i:04}")), i.to_string()).unwrap();
    }
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(dir.join("sparse.bin")).unwrap();
        f.seek(SeekFrom::Start(3 << 20)).unwrap();
        f.write_all(b"after a hole").unwrap();
    }
    std::os::unix::fs::symlink("small.txt", dir.join("short-link")).unwrap();
    std::os::unix::fs::symlink(format!("/{}/long", "x".repeat(120)), dir.join("long-link"))
        .unwrap();
    std::fs::hard_link(dir.join("small.txt"), dir.join("hard.txt")).unwrap();
}

/// `route/zfs` and `route/zpool`: each command goes to zfs-fuse when an argument names its
/// pool `fp`, else to the lab's Zetta. Returns the directory to put first in PATH.
fn router(lab: &Lab) -> PathBuf {
    let route = lab.dir.join("route");
    std::fs::create_dir_all(&route).unwrap();
    for tool in ["zfs", "zpool"] {
        let script = format!(
            "#!/bin/sh\n\
             for a in \"$@\"; do\n\
             \tcase \"$a\" in fp|fp/*|fp@*) exec /usr/sbin/{tool} \"$@\" ;; esac\n\
             done\n\
             exec '{}' \"$@\"\n",
            lab.dir.join(tool).display()
        );
        let path = route.join(tool);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    route
}

/// `syncoid ARGS` with the router first in PATH, a second after the previous run (sync
/// snapshots are named to the second); (exit code, stdout, stderr).
fn syncoid(lab: &Lab, route: &Path, args: &str) -> (i32, String, String) {
    std::thread::sleep(Duration::from_millis(1100));
    let out = lab.sh(&format!(
        "PATH='{}':\"$PATH\" {SYNCOID} {args}",
        route.display()
    ));
    (out.code, out.stdout, out.stderr)
}

fn syncoid_ok(lab: &Lab, route: &Path, args: &str) -> String {
    let (code, stdout, stderr) = syncoid(lab, route, args);
    assert_eq!(
        code, 0,
        "syncoid {args}\nstdout: {stdout}\nstderr: {stderr}"
    );
    stdout
}

/// Starts `syncoid ARGS` slowed by its own mbuffer option, kills its `zfs VERB` process
/// (`send` or `receive` of a dataset whose name contains `dataset`; SIGKILL, by the pid ps
/// shows for it, here or on the ssh host, which shares this machine's pids) once it has run
/// for a while, and checks syncoid failed. zfs-fuse's `zfs receive` only hands the pipe to
/// its daemon, which reads on after the command dies: into zfs-fuse, the sender is what is
/// killed.
fn interrupted_syncoid(lab: &Lab, route: &Path, args: &str, verb: &str, dataset: &str) {
    std::thread::sleep(Duration::from_millis(1100));
    let mut command = lab.command("bash");
    command
        .args([
            "-c",
            &format!(
                "PATH='{}':\"$PATH\" exec {SYNCOID} --source-bwlimit=1m {args}",
                route.display()
            ),
        ])
        .current_dir(&lab.dir);
    let first = lab.spawn(&mut command);
    let started = Instant::now();
    // syncoid first runs `zfs send -nvP` (a size estimate, gone in a moment) with the same
    // names: that one is no victim. A victim that still ends before the kill (a loaded
    // machine) is looked for again.
    loop {
        let ps = lab.sh("ps -Ao pid=,args=");
        let found = ps.stdout.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            let pid = words.next()?;
            let program = words.next()?;
            let zfs = program == "zfs" || program.ends_with("/zfs");
            let dry_run = line
                .split_whitespace()
                .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('n'));
            (zfs && words.next() == Some(verb) && !dry_run && line.contains(dataset))
                .then(|| pid.to_string())
        });
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no zfs {verb} in ps: {}",
            ps.stdout
        );
        let Some(victim) = found else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        // syncoid's mbuffer takes the first 16 MiB at once; the rest of the 24 MiB blob
        // trickles at 1 MB/s, so both commands are still running a second in.
        std::thread::sleep(Duration::from_millis(1000));
        if lab.sh(&format!("kill -9 {victim}")).code == 0 {
            break;
        }
    }
    let out = first.wait_with_output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "syncoid {args} survived its receive's death: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn snapshots(lab: &Lab, route: &Path, fs: &str) -> Vec<String> {
    let out = lab.sh(&format!(
        "PATH='{}':\"$PATH\" zfs list -H -o name -t snapshot -r {fs}",
        route.display()
    ));
    assert_eq!(out.code, 0, "zfs list {fs}: {}", out.stderr);
    out.stdout
        .lines()
        .map(|l| l.split_once('@').map_or(l, |(_, s)| s).to_string())
        .collect()
}

/// zfs-fuse's mount of a filesystem that just received an incremental reads wrong until it
/// is mounted again (seen in `zfs_fuse_roundtrip` too, not investigated): remount it.
/// zfs-fuse may answer the mount "mountpoint or dataset is busy" for a while after the
/// unmount (its daemon still closing the old mount): tried again for up to 60 s.
fn remount_fuse(zf: &zfs_fuse::ZfsFuse, fs: &str, mnt: &Path) {
    zf.zfs(&["unmount", fs]);
    zfs_fuse::wait_mounted(mnt, false);
    mount_fuse(fs, mnt);
}

/// `zfs mount FS` of zfs-fuse, tried again while it answers "busy" (up to 60 s).
fn mount_fuse(fs: &str, mnt: &Path) {
    let started = Instant::now();
    loop {
        let out = std::process::Command::new("/usr/sbin/zfs")
            .args(["mount", fs])
            .output()
            .unwrap();
        let why = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() || why.contains("already mounted") {
            break;
        }
        assert!(
            why.contains("busy") && started.elapsed() < Duration::from_secs(60),
            "zfs mount {fs} (zfs-fuse): {why}
processes: {}",
            ps_of_transfers()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    zfs_fuse::wait_mounted(mnt, true);
}

fn unmount_fuse(zf: &zfs_fuse::ZfsFuse, fs: &str, mnt: &Path) {
    zf.zfs(&["unmount", fs]);
    zfs_fuse::wait_mounted(mnt, false);
}

/// `ps` lines of replication processes (zfs, mbuffer, lzop, ssh), for failure messages.
fn ps_of_transfers() -> String {
    let out = std::process::Command::new("ps")
        .args(["-Ao", "pid=,ppid=,stat=,args="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            ["zfs ", "/zfs ", "mbuffer", "lzop", "ssh "]
                .iter()
                .any(|k| l.contains(k))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every snapshot of the source is on the target, in the same order.
fn assert_superset(target: &[String], source: &[String]) {
    let kept: Vec<&String> = target.iter().filter(|s| source.contains(s)).collect();
    assert_eq!(kept, source.iter().collect::<Vec<_>>(), "target {target:?}");
}

/// zfs-fuse started (behind its lock) with pool `fp` on `<lab>/vdevs/fuse0`, mounted at
/// `<lab>/fp`, and `fp/src` mounted: (daemon, vdev directory, pool mount point).
fn fuse_pool(lab: &Lab) -> (zfs_fuse::ZfsFuse, PathBuf, PathBuf) {
    let vdevs = lab.dir.join("vdevs");
    std::fs::create_dir_all(&vdevs).unwrap();
    let fmnt = lab.dir.join("fp");
    let mut zf = zfs_fuse::ZfsFuse::start();
    export_leftover(&zf, "fp");
    let fdisk = zfs_fuse::vdev_file(&vdevs.join("fuse0"));
    zf.create_pool("fp", &fmnt, &[&fdisk]);
    zf.zfs(&["create", "fp/src"]);
    zfs_fuse::wait_mounted(&fmnt.join("src"), true);
    (zf, vdevs, fmnt)
}

// Why: see the header. One test, as zfs-fuse allows one daemon per machine.
#[test]
fn syncoid_between_zfs_fuse_and_zetta_both_ways() {
    if !Path::new(SYNCOID).is_file() {
        return;
    }
    let lab = Lab::new();
    let route = router(&lab);
    let (mut zf, vdevs, fmnt) = fuse_pool(&lab);
    let zmnt = lab.dir.join("zs");
    let zdisk = zfs_fuse::vdev_file(&vdevs.join("zetta0"));
    // Version 23: the streams Zetta sends of it are ones zfs-fuse receives.
    lab.ok(
        "zpool",
        &[
            "create",
            "-o",
            "version=23",
            "-m",
            zmnt.to_str().unwrap(),
            "zs",
            &zdisk,
        ],
    );

    // zfs-fuse → Zetta: full, then incremental.
    populate(&fmnt.join("src"), "first");
    zf.zfs(&["snapshot", "fp/src@first"]);
    let out = syncoid_ok(&lab, &route, "fp/src zs/copy");
    assert!(
        out.contains("Sending oldest full snapshot fp/src@first"),
        "{out}"
    );
    zfs_fuse::wait_mounted(&zmnt.join("copy"), true);
    assert_eq!(
        lab.tree_digest(&zmnt.join("copy"), Some("./.zfs")),
        lab.tree_digest(&fmnt.join("src"), Some("./.zfs"))
    );
    populate(&fmnt.join("src"), "second");
    std::fs::remove_file(fmnt.join("src/first/sub/medium.bin")).unwrap();
    std::fs::write(fmnt.join("src/first/small.txt"), b"changed\n").unwrap();
    let out = syncoid_ok(&lab, &route, "fp/src zs/copy");
    assert!(out.contains("Sending incremental fp/src@syncoid_"), "{out}");
    assert_eq!(
        lab.tree_digest(&zmnt.join("copy"), Some("./.zfs")),
        lab.tree_digest(&fmnt.join("src"), Some("./.zfs"))
    );
    assert_eq!(
        snapshots(&lab, &route, "zs/copy"),
        snapshots(&lab, &route, "fp/src")
    );

    // Interrupted (zfs-fuse → Zetta): the killed receive leaves the target at the last
    // sync; the rerun sends the incremental again and completes.
    let blob = lab.sh(&format!(
        "head -c 24M /dev/urandom > '{}'",
        fmnt.join("src/blob").display()
    ));
    assert_eq!(blob.code, 0, "{}", blob.stderr);
    let before = snapshots(&lab, &route, "zs/copy");
    interrupted_syncoid(&lab, &route, "fp/src zs/copy", "receive", "zs/copy");
    assert_eq!(snapshots(&lab, &route, "zs/copy"), before);
    let token = lab.ok(
        "zfs",
        &[
            "get",
            "-H",
            "-o",
            "value",
            "receive_resume_token",
            "zs/copy",
        ],
    );
    assert_eq!(token, "-\n", "no -s receive, no token");
    syncoid_ok(&lab, &route, "fp/src zs/copy");
    assert_eq!(
        lab.tree_digest(&zmnt.join("copy"), Some("./.zfs")),
        lab.tree_digest(&fmnt.join("src"), Some("./.zfs"))
    );
    // The rerun sends `-I` from the last common snapshot, so the interrupted run's sync
    // snapshot arrives too; syncoid prunes on the target only the sync snapshots the target
    // had before the run, so it stays there (syncoid's own behaviour, Zetta to Zetta too).
    assert_superset(
        &snapshots(&lab, &route, "zs/copy"),
        &snapshots(&lab, &route, "fp/src"),
    );

    // Zetta → zfs-fuse: full, then incremental, then interrupted (the sender killed: the
    // truncated stream leaves zfs-fuse's target as it was) and rerun.
    lab.ok("zfs", &["create", "zs/native"]);
    zfs_fuse::wait_mounted(&zmnt.join("native"), true);
    populate(&zmnt.join("native"), "zetta");
    lab.ok("zfs", &["snapshot", "zs/native@first"]);
    let out = syncoid_ok(&lab, &route, "zs/native fp/back");
    assert!(
        out.contains("Sending oldest full snapshot zs/native@first"),
        "{out}"
    );
    zfs_fuse::wait_mounted(&fmnt.join("back"), true);
    assert_eq!(
        lab.tree_digest(&fmnt.join("back"), Some("./.zfs")),
        lab.tree_digest(&zmnt.join("native"), Some("./.zfs"))
    );
    populate(&zmnt.join("native"), "later");
    std::fs::remove_file(zmnt.join("native/zetta/sparse.bin")).unwrap();
    let out = syncoid_ok(&lab, &route, "zs/native fp/back");
    assert!(
        out.contains("Sending incremental zs/native@syncoid_"),
        "{out}"
    );
    assert_eq!(
        snapshots(&lab, &route, "fp/back"),
        snapshots(&lab, &route, "zs/native")
    );
    remount_fuse(&zf, "fp/back", &fmnt.join("back"));
    assert_eq!(
        lab.tree_digest(&fmnt.join("back"), Some("./.zfs")),
        lab.tree_digest(&zmnt.join("native"), Some("./.zfs"))
    );
    let blob = lab.sh(&format!(
        "head -c 24M /dev/urandom > '{}'",
        zmnt.join("native/blob").display()
    ));
    assert_eq!(blob.code, 0, "{}", blob.stderr);
    let before = snapshots(&lab, &route, "fp/back");
    interrupted_syncoid(&lab, &route, "zs/native fp/back", "send", "zs/native");
    assert_eq!(snapshots(&lab, &route, "fp/back"), before);
    syncoid_ok(&lab, &route, "zs/native fp/back");
    assert_superset(
        &snapshots(&lab, &route, "fp/back"),
        &snapshots(&lab, &route, "zs/native"),
    );
    remount_fuse(&zf, "fp/back", &fmnt.join("back"));
    assert_eq!(
        lab.tree_digest(&fmnt.join("back"), Some("./.zfs")),
        lab.tree_digest(&zmnt.join("native"), Some("./.zfs"))
    );
    let status = zf.scrub("fp");
    assert!(status.contains("with 0 errors"), "{status}");
    lab.ok("zpool", &["export", "zs"]);
    zf.export_all();
}

/// A zfs-fuse daemon that had a pool `name` from an earlier run that died before its export
/// (it came back from zfs-fuse's cache file, faulted once that lab is gone) exports it.
fn export_leftover(zf: &zfs_fuse::ZfsFuse, name: &str) {
    if zf
        .zpool(&["list", "-H", "-o", "name"])
        .lines()
        .any(|l| l == name)
    {
        zf.zpool(&["export", "-f", name]);
    }
}

// Why: issue 15's "Done when" asks for syncoid between zfs-fuse and Zetta over ssh between
// two hosts too, as the seed posts replicate to a backup server. zfs-fuse is this host's
// `zfs` (its one global daemon, behind the lock `ZfsFuse::start` takes; its pools are
// exported when the test ends, failed or not); Zetta is the ssh host's. Both directions:
// push zfs-fuse → Zetta, pull Zetta → zfs-fuse; full, incremental, and a killed transfer
// that the next run sends again from its start (zfs-fuse's v23 pool has no resume tokens;
// syncoid turns resume off for the pair; the Zetta pool is version 23 too, so what it
// sends zfs-fuse can receive).
#[test]
fn syncoid_between_zfs_fuse_and_zetta_over_ssh() {
    if !Path::new(SYNCOID).is_file() || !Path::new(SSHD).is_file() {
        return;
    }
    let lab = Lab::new();
    let route = router(&lab);
    let remote = Remote::start(&lab);
    let (mut zf, _, fmnt) = fuse_pool(&lab);
    let rdisk = lab.disk("remote/backup.d0", 256 << 20);
    let rmnt = format!("{}/mnt/backup", remote.dir);
    remote.ssh_ok(
        &lab,
        &format!("zpool create -o version=23 -m {rmnt} backup {rdisk}"),
    );
    let at = format!("root@{}", remote.address);
    let options = remote.syncoid_options();
    let remote_snapshots = |fs: &str| -> Vec<String> {
        remote
            .ssh_ok(&lab, &format!("zfs list -H -o name -t snapshot -r {fs}"))
            .lines()
            .map(|l| l.split_once('@').map_or(l, |(_, s)| s).to_string())
            .collect()
    };
    // The ssh host's mounts are in its own mount namespace: waited for and read there.
    let remote_digest = |fs: &str| {
        let dir = format!("{rmnt}/{fs}");
        let started = Instant::now();
        while remote.ssh(&lab, &format!("mountpoint -q {dir}")).code != 0 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{dir} not mounted"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        remote.tree_digest(&lab, &dir, Some("./.zfs"))
    };

    // Push, zfs-fuse → Zetta host: full, incremental.
    populate(&fmnt.join("src"), "first");
    zf.zfs(&["snapshot", "fp/src@first"]);
    let out = syncoid_ok(&lab, &route, &format!("{options} fp/src {at}:backup/copy"));
    assert!(
        out.contains("Sending oldest full snapshot fp/src@first"),
        "{out}"
    );
    assert_eq!(
        remote_digest("copy"),
        lab.tree_digest(&fmnt.join("src"), Some("./.zfs"))
    );
    populate(&fmnt.join("src"), "second");
    std::fs::remove_file(fmnt.join("src/first/sub/medium.bin")).unwrap();
    std::fs::write(fmnt.join("src/first/small.txt"), b"changed\n").unwrap();
    let out = syncoid_ok(&lab, &route, &format!("{options} fp/src {at}:backup/copy"));
    assert!(out.contains("Sending incremental fp/src@syncoid_"), "{out}");
    assert_eq!(
        remote_digest("copy"),
        lab.tree_digest(&fmnt.join("src"), Some("./.zfs"))
    );
    assert_eq!(
        remote_snapshots("backup/copy"),
        snapshots(&lab, &route, "fp/src")
    );
    // Killed: the Zetta host's `zfs receive` (its pid is one of this machine's: the
    // namespace has its own network and mounts, not its own pids).
    let blob = lab.sh(&format!(
        "head -c 24M /dev/urandom > '{}'",
        fmnt.join("src/blob").display()
    ));
    assert_eq!(blob.code, 0, "{}", blob.stderr);
    let before = remote_snapshots("backup/copy");
    interrupted_syncoid(
        &lab,
        &route,
        &format!("{options} fp/src {at}:backup/copy"),
        "receive",
        "backup/copy",
    );
    assert_eq!(remote_snapshots("backup/copy"), before);
    syncoid_ok(&lab, &route, &format!("{options} fp/src {at}:backup/copy"));
    assert_eq!(
        remote_digest("copy"),
        lab.tree_digest(&fmnt.join("src"), Some("./.zfs"))
    );
    assert_superset(
        &remote_snapshots("backup/copy"),
        &snapshots(&lab, &route, "fp/src"),
    );

    // Pull, Zetta host → zfs-fuse: a filesystem Zetta wrote itself, full, incremental,
    // killed (the Zetta host's `zfs send`) and rerun.
    remote.ssh_ok(&lab, "zfs create backup/native");
    let native = format!("{rmnt}/native");
    remote.script_ok(
        &lab,
        &format!(
            "set -e; cd '{native}'; cp -a /usr/share/doc/bash .; mkdir -p sub/deeper; \
             seq 1 40000 > sub/deeper/text.txt; head -c 300000 /dev/urandom > sub/medium.bin; \
             for i in $(seq 1 60); do echo $i > sub/entry_$i; done; \
             truncate -s 3M sparse.bin; echo after a hole >> sparse.bin; \
             ln -s sub/medium.bin short-link; ln sub/deeper/text.txt hard.txt; \
             chown 1234:5678 hard.txt; chmod 640 sub/medium.bin; zfs snapshot backup/native@first"
        ),
    );
    let out = syncoid_ok(
        &lab,
        &route,
        &format!("{options} {at}:backup/native fp/back"),
    );
    assert!(
        out.contains("Sending oldest full snapshot backup/native@first"),
        "{out}"
    );
    zfs_fuse::wait_mounted(&fmnt.join("back"), true);
    assert_eq!(
        lab.tree_digest(&fmnt.join("back"), Some("./.zfs")),
        remote_digest("native")
    );
    // zfs-fuse's receive of an incremental into its mounted target can leave that
    // filesystem held for good ("dataset is busy" to mount, rename, destroy and export
    // until the daemon stops; seen here, not in the local test): the backup target stays
    // unmounted while syncoid writes to it and is mounted only to be compared.
    unmount_fuse(&zf, "fp/back", &fmnt.join("back"));
    remote.script_ok(
        &lab,
        &format!("set -e; cd '{native}'; rm sparse.bin; echo later > later; seq 5 9 >> hard.txt"),
    );
    let out = syncoid_ok(
        &lab,
        &route,
        &format!("{options} {at}:backup/native fp/back"),
    );
    assert!(
        out.contains("Sending incremental backup/native@syncoid_"),
        "{out}"
    );
    assert_eq!(
        snapshots(&lab, &route, "fp/back"),
        remote_snapshots("backup/native")
    );
    mount_fuse("fp/back", &fmnt.join("back"));
    assert_eq!(
        lab.tree_digest(&fmnt.join("back"), Some("./.zfs")),
        remote_digest("native")
    );
    unmount_fuse(&zf, "fp/back", &fmnt.join("back"));
    remote.script_ok(&lab, &format!("head -c 24M /dev/urandom > '{native}/blob'"));
    let before = snapshots(&lab, &route, "fp/back");
    interrupted_syncoid(
        &lab,
        &route,
        &format!("{options} {at}:backup/native fp/back"),
        "send",
        "backup/native",
    );
    assert_eq!(snapshots(&lab, &route, "fp/back"), before);
    syncoid_ok(
        &lab,
        &route,
        &format!("{options} {at}:backup/native fp/back"),
    );
    assert_superset(
        &snapshots(&lab, &route, "fp/back"),
        &remote_snapshots("backup/native"),
    );
    mount_fuse("fp/back", &fmnt.join("back"));
    assert_eq!(
        lab.tree_digest(&fmnt.join("back"), Some("./.zfs")),
        remote_digest("native")
    );
    let status = zf.scrub("fp");
    assert!(status.contains("with 0 errors"), "{status}");
    let status = remote.ssh_ok(&lab, "zpool scrub -w backup && zpool status backup");
    assert!(status.contains("with 0 errors"), "{status}");
    settle_pipelines(&lab);
    zf.export_all();
}

/// Waits (up to 60 s) until no process of a transfer is left (the killed runs' `zfs`,
/// mbuffer, lzop and ssh end on their own once their pipes close): zfs-fuse refuses to
/// export a pool while one of its send or receive holds a dataset ("pool is busy").
fn settle_pipelines(lab: &Lab) {
    let lab_dir = lab.dir.to_string_lossy().into_owned();
    let left = || -> Vec<String> {
        lab.sh("ps -Ao pid=,args=")
            .stdout
            .lines()
            .filter(|l| {
                let transfer = l.contains("fp/")
                    || l.contains("backup/")
                    || l.contains("mbuffer")
                    || l.contains("lzop")
                    || l.contains(&lab_dir);
                transfer && !l.contains("ps -Ao") && !l.contains("sshd") && !l.contains("zetta")
            })
            .map(str::to_string)
            .collect()
    };
    let started = Instant::now();
    while !left().is_empty() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "processes left before the export: {:?}\n{}",
        left(),
        ps_of_transfers()
    );
}
