//! Streams Zetta's `zfs send` writes, read by OpenZFS's own `zstream dump -v` (OpenZFS 2.3
//! from scripts/oracle.sh; issue 15): every kind of stream is accepted with no checksum
//! complaint, and the records it lists (types, counts, WRITE objects and offsets) are the
//! ones Zetta's own parser reads from the same bytes. Without the OpenZFS record format this
//! fails at the first record ("invalid stream" / "Incorrect checksum in record header").

mod common;

use common::openzfs::oracle;
use common::Lab;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use zetta::dmu_send::record::{Record, RecordParser};

const DISK_SIZE_BYTES: u64 = 256 << 20;

/// OpenZFS's zstream: required (scripts/oracle.sh installs it; CI runs it), never skipped.
fn zstream() -> PathBuf {
    let path = std::env::var_os("ZETTA_ZSTREAM")
        .map(PathBuf::from)
        .unwrap_or_else(|| oracle::oracle_prefix().join("sbin/zstream"));
    assert!(
        path.is_file(),
        "{} is missing: run scripts/oracle.sh (OpenZFS's zstream is this test's oracle)",
        path.display()
    );
    path
}

fn direct(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zfs");
    command.args(args).env("ZETTA_DIRECT", "1");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
}

/// A lab with pool `tank` (mounts under the lab), made without a daemon (`ZETTA_DIRECT`),
/// and its disk.
fn lab_with_tank() -> (Lab, String) {
    let lab = Lab::new();
    let disk = lab.disk("disk", DISK_SIZE_BYTES);
    let mut create = lab.command("zpool");
    create
        .args(["create", "-m", &lab.path("mnt"), "tank", &disk])
        .env("ZETTA_DIRECT", "1");
    assert_eq!(lab.run(create).code, 0);
    (lab, disk)
}

/// What a stream holds, by Zetta's parser: record counts by zstream's names, and the
/// (object, offset) of every WRITE.
fn zetta_view(bytes: &[u8]) -> (BTreeMap<String, u64>, Vec<(u64, u64)>) {
    let mut parser = RecordParser::new();
    parser.push(bytes);
    let mut counts = BTreeMap::new();
    let mut writes = Vec::new();
    while let Some(record) = parser.next_record().expect("Zetta parses its own stream") {
        let name = match &record {
            Record::Begin(_) => "DRR_BEGIN",
            Record::Object(_) => "DRR_OBJECT",
            Record::FreeObjects { .. } => "DRR_FREEOBJECTS",
            Record::Write(w) => {
                writes.push((w.object.0, w.offset));
                "DRR_WRITE"
            }
            Record::Free { .. } => "DRR_FREE",
            Record::End { .. } => "DRR_END",
        };
        *counts.entry(name.to_string()).or_insert(0) += 1;
    }
    parser.finish().expect("the stream ends between substreams");
    (counts, writes)
}

/// Reads `text` for `key = value` and returns the value.
fn value_of(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("{key} = "))? + key.len() + 3;
    line[at..].split_whitespace().next()?.parse().ok()
}

/// What `zstream dump -v` says about a stream: its record counts (SUMMARY) and WRITEs.
fn oracle_view(zstream: &PathBuf, file: &str) -> (BTreeMap<String, u64>, Vec<(u64, u64)>) {
    let out = Command::new(zstream)
        .args(["dump", "-v", file])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "zstream dump {file}: {text}{stderr}"
    );
    assert!(
        !text.to_lowercase().contains("checksum differs")
            && !text.contains("Incorrect checksum")
            && !stderr.to_lowercase().contains("checksum"),
        "zstream dump {file} complains about checksums:\n{text}{stderr}"
    );
    let mut counts = BTreeMap::new();
    let mut writes = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Total ") {
            let (name, rest) = rest.split_once(" records = ").unwrap_or(("", ""));
            if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
                if n > 0 && name.starts_with("DRR_") {
                    counts.insert(name.to_string(), n);
                }
            }
        }
        if line.starts_with("WRITE ") {
            let object = value_of(line, "object").expect("WRITE object");
            let offset = value_of(line, "offset").expect("WRITE offset");
            writes.push((object, offset));
        }
    }
    (counts, writes)
}

#[test]
fn zstream_dump_accepts_every_stream_zetta_sends() {
    let zstream = zstream();
    let (lab, disk) = lab_with_tank();
    direct(&lab, &["create", "tank/fs"]);
    direct(&lab, &["create", "tank/fs/child"]);
    direct(&lab, &["set", "compression=lz4", "tank/fs"]);
    for n in 0..3u64 {
        common::write_object(
            &disk,
            "tank/fs",
            100 + n,
            n,
            300_000 + 4096 * n as usize,
            n == 1,
        );
        common::write_object(&disk, "tank/fs/child", 100 + n, n + 7, 50_000, true);
        direct(&lab, &["snapshot", "-r", &format!("tank/fs@s{n}")]);
    }
    let streams: &[(&str, &[&str])] = &[
        ("full", &["send", "tank/fs@s0"]),
        ("incremental", &["send", "-i", "@s0", "tank/fs@s1"]),
        ("intermediates", &["send", "-I", "@s0", "tank/fs@s2"]),
        ("compressed", &["send", "-c", "tank/fs@s1"]),
        ("replication", &["send", "-R", "tank/fs@s2"]),
        (
            "replication-incremental",
            &["send", "-R", "-i", "@s1", "tank/fs@s2"],
        ),
        ("properties", &["send", "-p", "tank/fs@s2"]),
    ];
    for (name, args) in streams {
        let file = lab.path(&format!("{name}.zfs"));
        let mut command = lab.command("zfs");
        command
            .args(*args)
            .env("ZETTA_DIRECT", "1")
            .stdout(std::fs::File::create(&file).unwrap());
        let out = lab.run(command);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        let bytes = std::fs::read(&file).unwrap();
        let (zetta_counts, zetta_writes) = zetta_view(&bytes);
        let (oracle_counts, oracle_writes) = oracle_view(&zstream, &file);
        assert!(zetta_counts["DRR_WRITE"] > 0 || name.contains("incremental"));
        // zstream counts the all-zero END that closes a compound stream; Zetta's parser
        // skips it.
        let mut expected = zetta_counts.clone();
        if oracle_counts.get("DRR_END") == Some(&(expected["DRR_END"] + 1)) {
            *expected.get_mut("DRR_END").unwrap() += 1;
        }
        assert_eq!(oracle_counts, expected, "{name}: record counts");
        assert_eq!(oracle_writes, zetta_writes, "{name}: WRITE records");
    }
}

/// A resume token Zetta shows after an interrupted `zfs receive -s` has OpenZFS's shape;
/// the stream `zfs send -t` writes from it is accepted by `zstream dump` (a BEGIN with
/// RESUMING and its `resume_object` nvlist), and it completes the receive.
#[test]
fn resumed_stream_and_token_read_by_zstream() {
    let zstream = zstream();
    let (lab, disk) = lab_with_tank();
    direct(&lab, &["create", "tank/fs"]);
    for n in 0..4u64 {
        common::write_object(&disk, "tank/fs", 100 + n, n, 400_000, false);
    }
    direct(&lab, &["snapshot", "tank/fs@s"]);
    let out = lab
        .sh("zfs send tank/fs@s > full.zfs && head -c 700000 full.zfs | zfs receive -s tank/copy");
    assert_ne!(out.code, 0, "a cut stream is refused");
    let token = lab.zfs_ok(&[
        "get",
        "-H",
        "-o",
        "value",
        "receive_resume_token",
        "tank/copy",
    ]);
    let token = token.trim();
    assert!(token.starts_with("1-"), "{token}");
    // OpenZFS's shape: version 1, fletcher word, packed length, zlib hex (`zstream token`
    // would print it, but it needs libzfs_init and so the kernel module, absent here).
    let fields: Vec<&str> = token.splitn(4, '-').collect();
    assert_eq!(fields.len(), 4, "{token}");
    assert!(fields[1..]
        .iter()
        .all(|f| f.bytes().all(|b| b.is_ascii_hexdigit())));
    assert!(fields[3].starts_with("78"), "a zlib stream: {token}");
    let out = lab.sh(&format!("zfs send -t {token} > resumed.zfs"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let file = lab.path("resumed.zfs");
    let bytes = std::fs::read(&file).unwrap();
    let (zetta_counts, zetta_writes) = zetta_view(&bytes);
    let (oracle_counts, oracle_writes) = oracle_view(&zstream, &file);
    assert_eq!(oracle_counts, zetta_counts);
    assert_eq!(oracle_writes, zetta_writes);
    let dump = Command::new(&zstream)
        .args(["dump", "-v", &file])
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout).into_owned();
    assert!(dump.contains("resume_object"), "{dump}");
    let out = lab.sh("zfs receive -s tank/copy < resumed.zfs");
    assert_eq!(out.code, 0, "{}", out.stderr);
}
