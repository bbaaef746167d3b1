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
            Record::WriteEmbedded(_) => "DRR_WRITE_EMBEDDED",
            Record::Spill(_) => "DRR_SPILL",
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
    // A file small and regular enough to be embedded in its block pointer: `-e` sends it
    // as WRITE_EMBEDDED, which zstream must list.
    common::write_object(&disk, "tank/fs", 90, 1, 400, true);
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
        // Issue 15 names -L among the streams zstream must accept (its feature bit is set
        // only once the dataset has large blocks; the stream must parse either way).
        ("large-blocks", &["send", "-L", "-i", "@s0", "tank/fs@s2"]),
        ("replication", &["send", "-R", "tank/fs@s2"]),
        (
            "replication-incremental",
            &["send", "-R", "-i", "@s1", "tank/fs@s2"],
        ),
        ("properties", &["send", "-p", "tank/fs@s2"]),
        ("embedded", &["send", "-e", "tank/fs@s2"]),
        ("raw", &["send", "-w", "-I", "@s0", "tank/fs@s2"]),
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
        if matches!(*name, "embedded" | "raw") {
            assert!(
                oracle_counts.contains_key("DRR_WRITE_EMBEDDED") || *name == "raw",
                "{name}: zstream lists the embedded block: {oracle_counts:?}"
            );
        }
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

/// `zstream dump -v` of a stream, as text (asserting it exits 0).
fn dump_text(zstream: &PathBuf, file: &str) -> String {
    let out = Command::new(zstream)
        .args(["dump", "-v", file])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "zstream dump {file}: {text}");
    text
}

/// The compound BEGIN and its nvlist as `zstream dump -v` prints them (up to the header's
/// END), with every run of 8 or more hex digits (guids, the magic, hold times) written `G`.
fn package_header_text(dump: &str) -> String {
    let mut out = String::new();
    for line in dump.lines() {
        if line.starts_with("END checksum") {
            break;
        }
        let mut run = String::new();
        let flush = |run: &mut String, out: &mut String| {
            out.push_str(if run.len() >= 8 { "G" } else { run });
            run.clear();
        };
        for c in line.trim_end().chars() {
            if c.is_ascii_hexdigit() {
                run.push(c);
            } else {
                flush(&mut run, &mut out);
                out.push(c);
            }
        }
        flush(&mut run, &mut out);
        out.push('\n');
    }
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

const HEADER_BEGIN: &str = "BEGIN record
	hdrtype = 2
	features = FEATURES
	magic = G
	creation_time = 0
	type = 0
	flags = 0x0
	toguid = 0
	fromguid = 0
	toname = tank/fs@s2
";

/// One filesystem of `fss` as libzfs's `send_iterate_fs` builds it, as zstream prints it.
fn fss_entry(name: &str, parent: &str, props: &str, snaps: &[&str], holds: bool) -> String {
    let mut out = format!("\t\t0xG = (embedded nvlist)\n\t\tnvlist version: 0\n\t\t\tname = {name}\n\t\t\tparentfromsnap = {parent}\n");
    if !props.is_empty() {
        out += &format!("\t\t\tprops = (embedded nvlist)\n\t\t\tnvlist version: 0\n\t\t\t\t{props}\n\t\t\t(end props)\n");
    }
    out += "\t\t\tsnaps = (embedded nvlist)\n\t\t\tnvlist version: 0\n";
    for s in snaps {
        out += &format!("\t\t\t\t{s} = 0xG\n");
    }
    out += "\t\t\t(end snaps)\n\t\t\tsnapprops = (embedded nvlist)\n\t\t\tnvlist version: 0\n";
    for s in snaps {
        out += &format!(
            "\t\t\t\t{s} = (embedded nvlist)\n\t\t\t\tnvlist version: 0\n\t\t\t\t(end {s})\n"
        );
    }
    out += "\t\t\t(end snapprops)\n";
    if holds {
        out += "\t\t\tsnapholds = (embedded nvlist)\n\t\t\tnvlist version: 0\n";
        for s in snaps {
            out += &format!("\t\t\t\t{s} = (embedded nvlist)\n\t\t\t\tnvlist version: 0\n\t\t\t\t\tkeep = 0xG\n\t\t\t\t(end {s})\n");
        }
        out += "\t\t\t(end snapholds)\n";
    }
    out + "\t\t(end 0xG)\n"
}

/// The package header of a compound stream (libzfs `send_prelim_records`), key for key as
/// libzfs 2.3 builds it (`gather_nvlist`, `send_iterate_fs`, `send_iterate_snap`): `fss`
/// keyed by `0x<guid>`, `parentfromsnap`, typed `props` (compression lz4 is the index 15),
/// `snaps`/`snapprops` per the flags, `not_recursive` without -R, `snapholds` with -h,
/// SA_SPILL (and HOLDS) in the features, and no nvlist at all for a bare -I. Before
/// stream version 4 Zetta wrote its own shape (`fss` an array, `sendfs`), which a real
/// `zfs receive` could not read.
#[test]
fn package_headers_are_libzfs_shape() {
    let zstream = zstream();
    let (lab, disk) = lab_with_tank();
    direct(&lab, &["create", "tank/fs"]);
    direct(&lab, &["create", "tank/fs/child"]);
    direct(&lab, &["set", "compression=lz4", "tank/fs"]);
    direct(&lab, &["set", "org.test:color=red", "tank/fs/child"]);
    for n in 0..3u64 {
        common::write_object(&disk, "tank/fs", 100 + n, n, 30_000, true);
        direct(&lab, &["snapshot", "-r", &format!("tank/fs@s{n}")]);
    }
    direct(&lab, &["hold", "keep", "tank/fs@s2"]);
    let all = ["s0", "s1", "s2"];
    let top = |snaps: &[&str], props: bool, holds: bool| {
        fss_entry(
            "tank/fs",
            "0x0",
            if props { "compression = 0xf" } else { "" },
            snaps,
            holds,
        )
    };
    let child = fss_entry("tank/fs/child", "0xG", "org.test:color = red", &all, false);
    let header = |features: &str, len_known: bool, body: &str| {
        let mut text = HEADER_BEGIN.replace("FEATURES", features);
        if len_known {
            text += "\tpayloadlen = 0\n";
        }
        text + body
    };
    let nv = |pairs: &str, fss: String| {
        format!("nvlist version: 0\n{pairs}\tfss = (embedded nvlist)\n\tnvlist version: 0\n{fss}\t(end fss)\n")
    };
    let cases: Vec<(&str, Vec<&str>, String)> = vec![
        (
            "R",
            vec!["send", "-R", "tank/fs@s2"],
            header("4", false, &nv("\ttosnap = s2\n", top(&all, true, false) + &child)),
        ),
        (
            "RI",
            vec!["send", "-R", "-I", "@s0", "tank/fs@s2"],
            header(
                "4",
                false,
                &nv("\tfromsnap = s0\n\ttosnap = s2\n", top(&all, true, false) + &child),
            ),
        ),
        ("I", vec!["send", "-I", "@s0", "tank/fs@s2"], header("4", true, "")),
        (
            "pI",
            vec!["send", "-p", "-I", "@s0", "tank/fs@s2"],
            header(
                "4",
                false,
                &nv(
                    "\tfromsnap = s0\n\ttosnap = s2\n\tnot_recursive = 1\n",
                    // `snaps` lists the source, `snapprops` does not (`seenfrom`).
                    top(&all, true, false).replace(
                        "\t\t\t\ts0 = (embedded nvlist)\n\t\t\t\tnvlist version: 0\n\t\t\t\t(end s0)\n",
                        "",
                    ),
                ),
            ),
        ),
        (
            "pi",
            vec!["send", "-p", "-i", "@s1", "tank/fs@s2"],
            header("4", false, &nv("\ttosnap = s2\n\tnot_recursive = 1\n", top(&["s2"], true, false))),
        ),
        (
            "h",
            vec!["send", "-h", "tank/fs@s2"],
            header(
                "4000004",
                false,
                &nv("\ttosnap = s2\n\tnot_recursive = 1\n", top(&["s2"], false, true)),
            ),
        ),
    ];
    for (name, args, expected) in cases {
        let file = lab.path(&format!("{name}.zfs"));
        let mut command = lab.command("zfs");
        command
            .args(&args)
            .env("ZETTA_DIRECT", "1")
            .stdout(std::fs::File::create(&file).unwrap());
        let out = lab.run(command);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        let text = package_header_text(&dump_text(&zstream, &file));
        let text: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("payloadlen") || l.ends_with("= 0"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(text, expected, "{name}: the package header");
        // parentfromsnap of the child: the parent's @fromsnap, else its @tosnap.
        if name.starts_with('R') {
            let bytes = std::fs::read(&file).unwrap();
            let mut parser = RecordParser::new();
            parser.push(&bytes);
            let Some(Record::Begin(begin)) = parser.next_record().unwrap() else {
                panic!("{name}: no BEGIN");
            };
            let Some(zetta::nvlist::NvValue::List(fss)) = begin.info.entries.get("fss") else {
                panic!("{name}: no fss");
            };
            let entry = |fs: &str| {
                fss.entries
                    .values()
                    .find_map(|v| match v {
                        zetta::nvlist::NvValue::List(l) if l.get_str("name") == Some(fs) => {
                            Some(l.clone())
                        }
                        _ => None,
                    })
                    .unwrap()
            };
            let parent_snap = if name == "RI" { "s0" } else { "s2" };
            assert_eq!(
                entry("tank/fs/child").get_u64("parentfromsnap"),
                entry("tank/fs")
                    .get_list("snaps")
                    .unwrap()
                    .get_u64(parent_snap),
                "{name}: parentfromsnap"
            );
        }
    }
}
