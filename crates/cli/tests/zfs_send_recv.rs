//! End-to-end `zfs send` / `zfs receive` with the real binary: streams piped through the
//! daemon (same pool, no deadlock), the `-nvP` lines syncoid reads, `-s` resume and `-A`,
//! the terminal refusals, and a running receive visible in `ps`. (The seed post "ZFS
//! snapshots and cold storage", streams kept in files, is `seeds/cold_storage.rs`.)
//!
//! Data is written between snapshots by this test process through the engine library (the
//! pool is free then: setup commands run with `ZETTA_DIRECT=1`, no daemon).

mod common;

use common::{Lab, Output};
use std::io::Write;
use std::process::Stdio;

const DISK_SIZE_BYTES: u64 = 512 << 20;
const SNAPSHOT_DATA_BYTES: usize = 1 << 20;

/// A setup command, run in this process's place (no daemon).
fn direct(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zfs");
    command.args(args).env("ZETTA_DIRECT", "1");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
}

/// `zfs …` with stdin from a file and stdout to a file (`zfs send … > file`).
fn zfs_files(lab: &Lab, args: &[&str], stdin: Option<&str>, stdout: Option<&str>) -> Output {
    let mut command = lab.command("zfs");
    command.args(args);
    if let Some(path) = stdin {
        command.stdin(std::fs::File::open(lab.path(path)).unwrap());
    }
    if let Some(path) = stdout {
        command.stdout(std::fs::File::create(lab.path(path)).unwrap());
    }
    lab.run(command)
}

fn send_to(lab: &Lab, args: &[&str], file: &str) {
    let out = zfs_files(lab, args, None, Some(file));
    assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
}

fn receive_from(lab: &Lab, target: &str, file: &str) -> Output {
    zfs_files(lab, &["receive", target], Some(file), None)
}

/// `zfs get -H -o value receive_resume_token fs`, as syncoid asks.
fn resume_token(lab: &Lab, fs: &str) -> String {
    lab.zfs_ok(&["get", "-H", "-o", "value", "receive_resume_token", fs])
}

/// NAME column of `zfs list -rt all`.
fn listed(lab: &Lab, fs: &str) -> Vec<String> {
    lab.zfs_ok(&["list", "-Hrt", "all", "-o", "name", fs])
        .lines()
        .map(str::to_string)
        .collect()
}

fn setup_setname(lab: &Lab) -> String {
    let disk = lab.disk("disk", DISK_SIZE_BYTES);
    // Mounted under the lab, never at the default /poolname: the tests of this file run
    // in parallel, each with its own daemon, and two daemons mounting at one path undo
    // each other's mounts ("FUSE device disconnected during handshake" under load).
    let mnt = lab.path("mnt");
    let mut create = lab.command("zpool");
    create
        .args(["create", "-m", &mnt, "poolname", &disk])
        .env("ZETTA_DIRECT", "1");
    assert_eq!(lab.run(create).code, 0);
    direct(lab, &["create", "poolname/setname"]);
    for n in 0..10u64 {
        common::write_object(
            &disk,
            "poolname/setname",
            10 + n,
            n,
            SNAPSHOT_DATA_BYTES,
            false,
        );
        direct(lab, &["snapshot", &format!("poolname/setname@{n}")]);
    }
    disk
}

/// `zfs send | zfs receive` into the same pool goes through the daemon in turns (the
/// stream is far larger than any pipe or socket buffer), and `-nvP` reports the exact
/// size in the lines syncoid reads.
#[test]
fn pipes_estimates_resume_and_refusals() {
    let lab = Lab::new();
    setup_setname(&lab);
    let out = lab.sh("zfs send -I @0 poolname/setname@9 > inc.zfs && zfs send poolname/setname@0 | zfs receive -v poolname/piped && zfs receive poolname/piped < inc.zfs");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with(
        "receiving full stream of poolname/setname@0 into poolname/piped@0\nreceived "
    ));
    assert_eq!(listed(&lab, "poolname/piped").len(), 11);

    let estimate = lab.zfs_ok(&["send", "-nvP", "-I", "@0", "poolname/setname@9"]);
    let last = estimate.lines().last().unwrap();
    let size: u64 = last.strip_prefix("size\t").unwrap().parse().unwrap();
    assert_eq!(size, std::fs::metadata(lab.path("inc.zfs")).unwrap().len());
    assert!(estimate.starts_with("incremental\tpoolname/setname@0\tpoolname/setname@1\t"));
    let full = lab.zfs_ok(&["send", "-nvP", "poolname/setname@3"]);
    assert!(full.starts_with("full\tpoolname/setname@3\t"), "{full}");

    // -s: a cut stream leaves a token; send -t finishes it; -A throws one away.
    assert_eq!(resume_token(&lab, "poolname/piped"), "-\n");
    let out =
        lab.sh("zfs send poolname/setname@5 | head -c 700000 | zfs receive -s poolname/resumed");
    assert_ne!(out.code, 0);
    assert!(out.stderr.starts_with("cannot receive new filesystem stream: checksum mismatch or incomplete stream.\nPartially received snapshot is saved.\nA resuming stream can be generated on the sending system by running:\n    zfs send -t 1-"), "{}", out.stderr);
    let token = resume_token(&lab, "poolname/resumed");
    let token = token.trim();
    assert!(out.stderr.contains(token));
    let estimate = lab.zfs_ok(&["send", "-nvP", "-t", token]);
    assert!(estimate.lines().last().unwrap().starts_with("size\t"));
    let out = lab.sh(&format!(
        "zfs send -t {token} | zfs receive -s poolname/resumed"
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(resume_token(&lab, "poolname/resumed"), "-\n");
    let guid = |name: &str| lab.zfs_ok(&["get", "-Hp", "-o", "value", "guid", name]);
    assert_eq!(guid("poolname/resumed@5"), guid("poolname/setname@5"));
    let out =
        lab.sh("zfs send poolname/setname@5 | head -c 300000 | zfs receive -s poolname/aborted");
    assert_ne!(out.code, 0);
    lab.zfs_ok(&["receive", "-A", "poolname/aborted"]);
    let out = lab.zfs(&["list", "poolname/aborted"]);
    assert_eq!(
        out.stderr,
        "cannot open 'poolname/aborted': dataset does not exist\n"
    );
    let out = lab.zfs(&["receive", "-A", "poolname/piped"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "'poolname/piped' does not have any resumable receive state to abort\n"
        )
    );

    // Refusals: a full stream onto an existing filesystem, a terminal.
    let out = lab.sh("zfs send poolname/setname@0 | zfs receive poolname/piped");
    assert_eq!(out.stderr, "cannot receive new filesystem stream: destination 'poolname/piped' exists\nmust specify -F to overwrite it\n");
    let out = lab.sh("script -qec 'zfs send poolname/setname@0' /dev/null");
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stdout.replace('\r', ""),
        "Error: Stream can not be written to a terminal.\nYou must redirect standard output.\n"
    );
    let out = lab.sh("script -qec 'zfs receive poolname/x' /dev/null");
    assert_eq!(
        out.stdout.replace('\r', ""),
        "Error: Backup stream can not be read from a terminal.\nYou must redirect standard input.\n"
    );
}

/// A receive waiting for its stream shows in `ps` as `zfs receive … target` (syncoid's busy
/// check), holds no pool lock while it waits, and its work dataset stays hidden.
#[test]
fn running_receive_shows_in_ps() {
    let lab = Lab::new();
    setup_setname(&lab);
    send_to(&lab, &["send", "-i", "@0", "poolname/setname@1"], "inc.zfs");
    let out = receive_from(&lab, "poolname/copy", "inc.zfs");
    assert_eq!(out.code, 1);
    send_to(&lab, &["send", "poolname/setname@0"], "full.zfs");
    assert_eq!(receive_from(&lab, "poolname/copy", "full.zfs").code, 0);
    let stream = std::fs::read(lab.path("inc.zfs")).unwrap();
    let mut receive = lab.command("zfs");
    receive
        .args(["receive", "-F", "poolname/copy"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = lab.spawn(&mut receive);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&stream[..stream.len() / 2]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let ps = lab.sh("ps -Ao args=");
    assert!(
        ps.stdout
            .lines()
            .any(|l| l.contains("zfs receive -F poolname/copy")),
        "{}",
        ps.stdout
    );
    // Other commands run meanwhile, and do not see the work dataset.
    assert_eq!(
        listed(&lab, "poolname/copy"),
        ["poolname/copy", "poolname/copy@0"]
    );
    stdin.write_all(&stream[stream.len() / 2..]).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(
        listed(&lab, "poolname/copy"),
        ["poolname/copy", "poolname/copy@0", "poolname/copy@1"]
    );
}

/// Throughput probe, not a test (`cargo test --release -p zetta-cli --test zfs_send_recv --
/// --ignored --nocapture`): `zfs send | zfs receive` of 256 MiB of incompressible data
/// between two pools through the daemon, and an incremental of 1 MiB changed.
#[test]
#[ignore]
fn probe_send_receive_throughput() {
    let lab = Lab::new();
    let source = lab.disk("source", 2 << 30);
    let target = lab.disk("target", 2 << 30);
    for (pool, disk) in [("src", &source), ("dst", &target)] {
        let mut create = lab.command("zpool");
        create.args(["create", pool, disk]).env("ZETTA_DIRECT", "1");
        assert_eq!(lab.run(create).code, 0);
    }
    direct(&lab, &["create", "src/data"]);
    for object in 0..8 {
        common::write_object(&source, "src/data", 100 + object, object, 32 << 20, false);
    }
    direct(&lab, &["snapshot", "src/data@a"]);
    common::write_object(&source, "src/data", 999, 99, 1 << 20, false);
    direct(&lab, &["snapshot", "src/data@b"]);
    let started = std::time::Instant::now();
    let out = lab.sh("zfs send src/data@a | zfs receive dst/data");
    let full_secs = started.elapsed().as_secs_f64();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let started = std::time::Instant::now();
    let out = lab.sh("zfs send -i @a src/data@b | zfs receive dst/data");
    let incremental_secs = started.elapsed().as_secs_f64();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The anchor, in the same run on the same filesystem: a raw copy of 256 MiB.
    let mut data = vec![0u8; 256 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for chunk in data.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes());
    }
    std::fs::write(lab.path("raw.src"), &data).unwrap();
    let out = lab.sh("sync raw.src");
    assert_eq!(out.code, 0);
    let started = std::time::Instant::now();
    let out = lab.sh("cat raw.src > raw.dst && sync raw.dst");
    let raw_secs = started.elapsed().as_secs_f64();
    assert_eq!(out.code, 0, "{}", out.stderr);
    println!(
        "full: 256 MiB in {full_secs:.2} s ({:.0} MiB/s); raw copy: {raw_secs:.2} s ({:.0} MiB/s); send|receive / raw = {:.2}; incremental of 1 MiB: {incremental_secs:.3} s ({:.1}% of the full)",
        256.0 / full_secs,
        256.0 / raw_secs,
        raw_secs / full_secs,
        100.0 * incremental_secs / full_secs
    );
}
