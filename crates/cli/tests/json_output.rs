//! `-j` (issue 19): JSON output of `zpool status/list/get/version` and `zfs
//! list/get/version` in OpenZFS 2.3's schema. Every test compares the document with the
//! text output of the same command: the JSON must parse, use 2.3's key names and carry
//! the same values. Each test has its own lab and daemon; nothing is mounted.

mod common;

use common::Lab;
use zetta_zutil::json::{parse, Json};

fn lab_with_mirror() -> Lab {
    let mut lab = Lab::new();
    lab.env.push(("ZETTA_MOUNT".to_string(), "0".to_string()));
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    lab.ok("zpool", &["create", "tank", "mirror", &a, &b]);
    lab
}

/// Runs a command that must succeed and print one JSON document on one line.
fn json(lab: &Lab, front: &str, args: &[&str]) -> Json {
    let out = lab.ok(front, args);
    assert!(
        out.ends_with('\n') && out.lines().count() == 1,
        "{front} {args:?}: not one line: {out:?}"
    );
    parse(&out).unwrap_or_else(|e| panic!("{front} {args:?}: {e}: {out}"))
}

fn output_version(document: &Json, command: &str) {
    assert_eq!(
        document.get("output_version").map(Json::to_text),
        Some(format!(
            r#"{{"command":"{command}","vers_major":0,"vers_minor":1}}"#
        )),
    );
}

/// A number or a string as the text prints it.
fn text_of(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Number(n) => n.to_string(),
        other => other.to_text(),
    }
}

fn at<'a>(value: &'a Json, path: &[&str]) -> &'a Json {
    path.iter().fold(value, |v, key| {
        v.get(key)
            .unwrap_or_else(|| panic!("no {key:?} in {}", v.to_text()))
    })
}

/// The config rows of `zpool status` text: (name, state, read, write, cksum).
fn status_rows(text: &str) -> Vec<[String; 5]> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("NAME"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            std::array::from_fn(|i| words.get(i).unwrap_or(&"").to_string())
        })
        .collect()
}

// Why: `zpool status -j` is what monitoring scripts read instead of the text; it must
// carry the text's states and counters under 2.3's keys (pools → vdevs tree, vdev_type,
// class, read_errors...), honour --json-int, --json-pool-key-guid, --json-flat-vdevs, and
// show the finished scrub as scan_stats.
#[test]
fn zpool_status_json_carries_the_text_values() {
    let lab = lab_with_mirror();
    let text = lab.ok("zpool", &["status", "tank"]);
    let document = json(&lab, "zpool", &["status", "-j", "tank"]);
    output_version(&document, "zpool status");
    let pool = at(&document, &["pools", "tank"]);
    assert_eq!(
        pool.keys()[..6],
        [
            "name",
            "state",
            "pool_guid",
            "txg",
            "spa_version",
            "zpl_version"
        ]
    );
    let text_state = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("state: "))
        .unwrap();
    assert_eq!(at(pool, &["state"]).as_str(), Some(text_state));
    assert!(
        pool.get("scan_stats").is_none(),
        "never scrubbed: no scan_stats"
    );
    assert_eq!(at(pool, &["error_count"]).as_str(), Some("0"));

    // The tree: root (named after the pool) → mirror-0 → the two files, as the text rows.
    let rows = status_rows(&text);
    assert_eq!(rows.len(), 4, "{text}");
    let root = at(pool, &["vdevs", "tank"]);
    let mirror = at(root, &["vdevs", "mirror-0"]);
    let leaves = at(mirror, &["vdevs"]);
    let entries = [
        root,
        mirror,
        at(leaves, &[&rows[2][0]]),
        at(leaves, &[&rows[3][0]]),
    ];
    for (row, entry) in rows.iter().zip(entries) {
        assert_eq!(at(entry, &["name"]).as_str(), Some(row[0].as_str()));
        assert_eq!(at(entry, &["state"]).as_str(), Some(row[1].as_str()));
        for (key, text_value) in ["read_errors", "write_errors", "checksum_errors"]
            .iter()
            .zip(&row[2..])
        {
            assert_eq!(at(entry, &[key]).as_str(), Some(text_value.as_str()));
        }
        assert_eq!(at(entry, &["class"]).as_str(), Some("normal"));
    }
    assert_eq!(at(root, &["vdev_type"]).as_str(), Some("root"));
    assert_eq!(at(mirror, &["vdev_type"]).as_str(), Some("mirror"));
    let leaf = at(leaves, &[&rows[2][0]]);
    assert_eq!(at(leaf, &["vdev_type"]).as_str(), Some("file"));
    assert_eq!(at(leaf, &["path"]).as_str(), Some(lab.path("a").as_str()));
    assert_eq!(at(leaf, &["slow_ios"]).as_str(), Some("0"));

    // --json-int: numbers; --json-pool-key-guid: the pool under its guid.
    let guid = lab.ok("zpool", &["get", "-Hp", "-o", "value", "guid", "tank"]);
    let guid = guid.trim();
    let document = json(
        &lab,
        "zpool",
        &["status", "-j", "--json-int", "--json-pool-key-guid"],
    );
    let pool = at(&document, &["pools", guid]);
    assert_eq!(
        at(pool, &["pool_guid"])
            .as_u64()
            .map(|g| g.to_string())
            .as_deref(),
        Some(guid)
    );
    assert_eq!(
        at(pool, &["vdevs", "tank", "read_errors"]),
        &Json::Number(0)
    );
    assert_eq!(at(pool, &["spa_version"]), &Json::Number(5000));

    // --json-flat-vdevs: every vdev below the root also at the top, with its parent.
    let document = json(&lab, "zpool", &["status", "-j", "--json-flat-vdevs"]);
    let vdevs = at(&document, &["pools", "tank", "vdevs"]);
    assert_eq!(
        vdevs.keys(),
        [rows[2][0].as_str(), &rows[3][0], "mirror-0", "tank"]
    );
    assert_eq!(
        at(vdevs, &[&rows[2][0], "parent"]).as_str(),
        Some("mirror-0")
    );
    assert_eq!(at(vdevs, &["mirror-0", "parent"]).as_str(), Some("tank"));

    // After a scrub: scan_stats as 2.3 names them, values as the text's scan line.
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let text = lab.ok("zpool", &["status", "tank"]);
    assert!(text.contains("scrub repaired 0B"), "{text}");
    let document = json(&lab, "zpool", &["status", "-j", "-p", "tank"]);
    let scan = at(&document, &["pools", "tank", "scan_stats"]);
    assert_eq!(at(scan, &["function"]).as_str(), Some("SCRUB"));
    assert_eq!(at(scan, &["state"]).as_str(), Some("FINISHED"));
    assert_eq!(at(scan, &["processed"]).as_str(), Some("0"));
    assert_eq!(at(scan, &["errors"]).as_str(), Some("0"));
    for key in [
        "start_time",
        "end_time",
        "to_examine",
        "examined",
        "issued",
        "pass_start",
    ] {
        assert!(scan.get(key).is_some(), "{key} missing: {}", scan.to_text());
    }
    // -x: a healthy pool is left out, the document stays valid.
    let document = json(&lab, "zpool", &["status", "-j", "-x"]);
    assert!(at(&document, &["pools"]).is_empty_object());
}

// Why: `zpool list -j` and `zpool get -j` must carry exactly the values of `-Hp` text
// (with --json-int, which implies -p), each as {"value", "source": {"type", "data"}}
// under 2.3's property names, and the pool's fill_pool_info fields.
#[test]
fn zpool_list_and_get_json_carry_the_text_values() {
    let lab = lab_with_mirror();
    let text = lab.ok("zpool", &["list", "-Hp", "tank"]);
    let values: Vec<&str> = text.trim_end().split('\t').collect();
    let document = json(&lab, "zpool", &["list", "-j", "--json-int", "tank"]);
    output_version(&document, "zpool list");
    let pool = at(&document, &["pools", "tank"]);
    assert_eq!(at(pool, &["type"]).as_str(), Some("POOL"));
    let props = at(pool, &["properties"]);
    // 2.3's default columns without the name (the key).
    assert_eq!(
        props.keys(),
        [
            "size",
            "allocated",
            "free",
            "checkpoint",
            "expandsize",
            "fragmentation",
            "capacity",
            "dedupratio",
            "health",
            "altroot"
        ]
    );
    assert_eq!(values.len(), 11, "{text}");
    for (key, text_value) in props.keys().iter().zip(&values[1..]) {
        assert_eq!(&text_of(at(props, &[key, "value"])), text_value, "{key}");
    }
    assert!(matches!(at(props, &["size", "value"]), Json::Number(_)));
    assert_eq!(
        at(props, &["altroot", "source", "type"]).as_str(),
        Some("DEFAULT")
    );
    // -v: the vdevs with their own columns.
    let document = json(&lab, "zpool", &["list", "-j", "-v"]);
    let mirror = at(&document, &["pools", "tank", "vdevs", "mirror-0"]);
    assert_eq!(
        at(mirror, &["properties", "health", "value"]).as_str(),
        Some("ONLINE")
    );
    assert_eq!(at(mirror, &["vdevs"]).keys().len(), 2);

    // zpool get: every property of the text, value and source.
    let text = lab.ok("zpool", &["get", "-Hp", "all", "tank"]);
    let document = json(&lab, "zpool", &["get", "-j", "-p", "all", "tank"]);
    output_version(&document, "zpool get");
    let props = at(&document, &["pools", "tank", "properties"]);
    let mut seen = 0;
    for line in text.lines() {
        let [_, prop, value, source] = line.splitn(4, '\t').collect::<Vec<_>>()[..] else {
            panic!("{line}");
        };
        let entry = at(props, &[prop]);
        assert_eq!(at(entry, &["value"]).as_str(), Some(value), "{prop}");
        let source_type = match source {
            "-" => "NONE",
            "default" => "DEFAULT",
            "local" => "LOCAL",
            other => panic!("source {other}"),
        };
        assert_eq!(
            at(entry, &["source", "type"]).as_str(),
            Some(source_type),
            "{prop}"
        );
        seen += 1;
    }
    assert_eq!(seen, props.keys().len());
}

// Why: `zfs list -j` and `zfs get -j` are what tools like sanoid's successors parse; the
// datasets map must follow the text's rows, with fill_dataset_info (type, pool,
// createtxg, snapshot's dataset and name) and every property's value and source
// (INHERITED names the dataset it comes from).
#[test]
fn zfs_list_and_get_json_carry_the_text_values() {
    let lab = lab_with_mirror();
    lab.ok("zfs", &["create", "tank/fs"]);
    lab.ok("zfs", &["snapshot", "tank/fs@one"]);
    lab.ok("zfs", &["set", "compression=lz4", "tank"]);
    let fields = "name,used,compression,type";
    let text = lab.ok("zfs", &["list", "-Hp", "-t", "all", "-o", fields]);
    let document = json(
        &lab,
        "zfs",
        &["list", "-j", "-p", "-t", "all", "-o", fields],
    );
    output_version(&document, "zfs list");
    let datasets = at(&document, &["datasets"]);
    let names: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(datasets.keys(), names);
    for line in text.lines() {
        let values: Vec<&str> = line.split('\t').collect();
        let entry = at(datasets, &[values[0]]);
        assert_eq!(at(entry, &["name"]).as_str(), Some(values[0]));
        assert_eq!(at(entry, &["pool"]).as_str(), Some("tank"));
        assert_eq!(
            at(entry, &["type"]).as_str().map(str::to_string),
            Some(values[3].to_uppercase())
        );
        let props = at(entry, &["properties"]);
        assert_eq!(props.keys(), ["used", "compression", "type"]);
        for (key, value) in ["used", "compression", "type"].iter().zip(&values[1..]) {
            assert_eq!(at(props, &[key, "value"]).as_str(), Some(*value), "{key}");
        }
    }
    let snapshot = at(datasets, &["tank/fs@one"]);
    assert_eq!(at(snapshot, &["dataset"]).as_str(), Some("tank/fs"));
    assert_eq!(at(snapshot, &["snapshot_name"]).as_str(), Some("one"));
    let createtxg = lab.ok(
        "zfs",
        &["get", "-Hp", "-o", "value", "createtxg", "tank/fs@one"],
    );
    assert_eq!(
        at(snapshot, &["createtxg"]).as_str(),
        Some(createtxg.trim())
    );
    let document = json(&lab, "zfs", &["list", "-j", "--json-int", "tank/fs"]);
    let fs = at(&document, &["datasets", "tank/fs"]);
    assert!(matches!(at(fs, &["createtxg"]), Json::Number(_)));
    assert!(matches!(
        at(fs, &["properties", "used", "value"]),
        Json::Number(_)
    ));
    assert_eq!(
        fs.get("properties").unwrap().keys(),
        ["used", "available", "referenced", "mountpoint"]
    );

    // zfs get all: every row of the text, value and source.
    let text = lab.ok("zfs", &["get", "-Hp", "all", "tank/fs"]);
    let document = json(&lab, "zfs", &["get", "-j", "-p", "all", "tank/fs"]);
    output_version(&document, "zfs get");
    let props = at(&document, &["datasets", "tank/fs", "properties"]);
    for line in text.lines() {
        let [_, prop, value, source] = line.splitn(4, '\t').collect::<Vec<_>>()[..] else {
            panic!("{line}");
        };
        let entry = at(props, &[prop]);
        assert_eq!(at(entry, &["value"]).as_str(), Some(value), "{prop}");
        let (kind, data) = match source {
            "-" => ("NONE", "-"),
            "default" => ("DEFAULT", "-"),
            "local" => ("LOCAL", "-"),
            other => ("INHERITED", other.strip_prefix("inherited from ").unwrap()),
        };
        assert_eq!(
            at(entry, &["source", "type"]).as_str(),
            Some(kind),
            "{prop}"
        );
        assert_eq!(
            at(entry, &["source", "data"]).as_str(),
            Some(data),
            "{prop}"
        );
    }
    assert_eq!(text.lines().count(), props.keys().len());
    assert_eq!(
        at(props, &["compression", "source"]).to_text(),
        r#"{"type":"INHERITED","data":"tank"}"#
    );
}

// Why: flags are never silently ignored: the JSON companions without -j are usage
// errors with 2.3's words, and an unknown long option is refused as 2.3's getopt_long
// refuses it (optopt 0 prints a NUL between the quotes; zpool status and zfs list,
// whose option strings lack the leading ':', get glibc's own line first).
#[test]
fn json_flags_are_refused_as_openzfs_refuses_them() {
    let lab = lab_with_mirror();
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "zpool",
            &["list", "--json-int"],
            "'--json-int' only works with '-j' option\n",
        ),
        (
            "zpool",
            &["status", "--json-flat-vdevs", "--json-int"],
            "'--json-flat-vdevs' only works with '-j' option\n",
        ),
        (
            "zpool",
            &["get", "--json-pool-key-guid", "all"],
            "'json-pool-key-guid' only works with '-j' option\n",
        ),
        (
            "zfs",
            &["get", "--json-int", "all"],
            "'--json-int' only works with '-j' option\n",
        ),
        (
            "zpool",
            &["list", "-j", "--json-bogus"],
            "invalid option '\0'\n",
        ),
        (
            "zfs",
            &["get", "-j", "--json-bogus", "all"],
            "invalid option '\0'\n",
        ),
        (
            "zpool",
            &["status", "-j", "--json-bogus"],
            "zpool: unrecognized option '--json-bogus'\ninvalid option '\0'\n",
        ),
        (
            "zfs",
            &["list", "-j", "--json-pool-key-guid"],
            "zfs: unrecognized option '--json-pool-key-guid'\ninvalid option '\0'\n",
        ),
        (
            "zpool",
            &["list", "-j", "--json=yes"],
            "invalid option '\0'\n",
        ),
    ];
    for (front, args, message) in cases {
        let out = match *front {
            "zpool" => lab.zpool(args),
            _ => lab.zfs(args),
        };
        assert_eq!(out.code, 2, "{front} {args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with(&format!("{message}usage:\n")),
            "{front} {args:?}: {:?}",
            out.stderr
        );
        assert_eq!(out.stdout, "", "{front} {args:?}");
    }
    // As glibc, a unique prefix names its long option; --json is -j.
    let document = json(&lab, "zpool", &["list", "--json", "--json-i"]);
    assert!(matches!(
        at(&document, &["pools", "tank", "properties", "size", "value"]),
        Json::Number(_)
    ));
    for front in ["zpool", "zfs"] {
        let document = json(&lab, front, &["version", "-j"]);
        output_version(&document, &format!("{front} version"));
        let version = format!("zetta-{}", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            at(&document, &["zfs_version", "userland"]).as_str(),
            Some(version.as_str())
        );
        let text = lab.ok(front, &["version"]);
        assert_eq!(text.trim().replace(' ', "-"), version);
    }
}
