//! Tests for `vdev_spec.rs`: accepted layouts and every error text, word for word.

use super::*;

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn group(class: VdevClass, kind: VdevKind, paths: &[&str]) -> VdevSpecGroup {
    VdevSpecGroup {
        class,
        kind,
        paths: paths.iter().map(|path| path.to_string()).collect(),
    }
}

fn error_text(text: &str) -> String {
    match parse_vdev_spec(&words(text)) {
        Ok(groups) => format!("unexpectedly parsed: {groups:?}"),
        Err(error) => error.to_string(),
    }
}

// Bare paths are single-device vdevs; /dev paths are disks, others files.
#[test]
fn bare_paths_are_single_device_vdevs() {
    let groups = parse_vdev_spec(&words("/tmp/a /dev/sdb")).expect("valid spec");
    assert_eq!(
        groups,
        vec![
            group(VdevClass::Normal, VdevKind::File, &["/tmp/a"]),
            group(VdevClass::Normal, VdevKind::Disk, &["/dev/sdb"]),
        ]
    );
}

// Every keyword at once: groups end at the next keyword, log/special/dedup switch the
// class, cache/spare lists return later groups to normal.
#[test]
fn full_layout_parses_into_classes() {
    let spec = "mirror /a /b raidz2 /c /d /e log mirror /l1 /l2 special mirror /s1 /s2 \
                cache /c1 /c2 spare /p1 dedup /d1";
    let groups = parse_vdev_spec(&words(spec)).expect("valid spec");
    assert_eq!(
        groups,
        vec![
            group(VdevClass::Normal, VdevKind::Mirror, &["/a", "/b"]),
            group(VdevClass::Normal, VdevKind::Raidz(2), &["/c", "/d", "/e"]),
            group(VdevClass::Log, VdevKind::Mirror, &["/l1", "/l2"]),
            group(VdevClass::Special, VdevKind::Mirror, &["/s1", "/s2"]),
            group(VdevClass::Cache, VdevKind::File, &["/c1"]),
            group(VdevClass::Cache, VdevKind::File, &["/c2"]),
            group(VdevClass::Spare, VdevKind::File, &["/p1"]),
            group(VdevClass::Dedup, VdevKind::File, &["/d1"]),
        ]
    );
}

// "raidz" means raidz1; "raidz3" is accepted; "raidz4" and "raidz01" are device names
// (and so fail the /dev lookup), exactly like OpenZFS's get_parity.
#[test]
fn raidz_parity_words() {
    let groups = parse_vdev_spec(&words("raidz /a /b raidz1 /c /d")).expect("valid spec");
    assert_eq!(groups[0].kind, VdevKind::Raidz(1));
    assert_eq!(groups[1].kind, VdevKind::Raidz(1));
    let groups = parse_vdev_spec(&words("raidz3 /a /b /c /d")).expect("valid spec");
    assert_eq!(groups[0].kind, VdevKind::Raidz(3));
    assert_eq!(
        error_text("raidz4 /a /b /c /d /e"),
        "cannot open 'raidz4': no such device in /dev\nmust be a full path or shorthand device name"
    );
    assert!(error_text("raidz01 /a /b").starts_with("cannot open 'raidz01'"));
}

// A cache list ends at the next keyword: "cache /c mirror /a /b" adds a normal mirror
// (OpenZFS has no "mirrored cache"; the mirror keyword simply starts a new vdev).
#[test]
fn cache_list_ends_at_mirror() {
    let groups = parse_vdev_spec(&words("/x cache /c mirror /a /b")).expect("valid spec");
    assert_eq!(
        groups[2],
        group(VdevClass::Normal, VdevKind::Mirror, &["/a", "/b"])
    );
}

// Each parse error, word for word as zpool_vdev.c prints it.
#[test]
fn parse_error_messages() {
    assert_eq!(
        error_text("mirror /a"),
        "invalid vdev specification: mirror requires at least 2 devices"
    );
    assert_eq!(
        error_text("raidz2 /a /b"),
        "invalid vdev specification: raidz2 requires at least 3 devices"
    );
    assert_eq!(
        error_text("/a log /l1 log /l2"),
        "invalid vdev specification: 'log' can be specified only once"
    );
    assert_eq!(
        error_text("/a cache /c1 cache /c2"),
        "invalid vdev specification: 'cache' can be specified only once"
    );
    assert_eq!(
        error_text("/a spare /s1 spare /s2"),
        "invalid vdev specification: 'spare' can be specified only once"
    );
    assert_eq!(
        error_text("/a log raidz /l1 /l2"),
        "invalid vdev specification: unsupported 'log' device: raidz"
    );
    assert_eq!(
        error_text("/a log"),
        "invalid vdev specification: log requires at least 1 device"
    );
    assert_eq!(
        error_text("/a cache"),
        "invalid vdev specification: cache requires at least 1 devices"
    );
    assert_eq!(
        error_text(""),
        "invalid vdev specification: at least one toplevel vdev must be specified"
    );
    assert_eq!(
        error_text("sdb"),
        "cannot open 'sdb': no such device in /dev\nmust be a full path or shorthand device name"
    );
    let many: String = (0..256).map(|n| format!(" /d{n}")).collect();
    assert_eq!(
        error_text(&format!("raidz{many}")),
        "invalid vdev specification: raidz supports no more than 255 devices"
    );
}

fn replication_text(text: &str) -> String {
    let groups = parse_vdev_spec(&words(text)).expect("valid spec");
    match check_replication(&groups) {
        Ok(()) => "ok".to_string(),
        Err(error) => error.to_string(),
    }
}

const HEADER: &str = "invalid vdev specification\nuse '-f' to override the following errors:\n";

// Consistent layouts pass; logs, cache and spares do not count.
#[test]
fn replication_consistent_layouts_pass() {
    assert_eq!(
        replication_text("mirror /a /b mirror /c /d log /l cache /c1 spare /s"),
        "ok"
    );
    assert_eq!(replication_text("raidz /a /b /c mirror /d /e"), "ok");
    assert_eq!(replication_text("/a /b /c"), "ok");
}

// Each mismatch message, under the vdev_error header.
#[test]
fn replication_mismatch_messages() {
    assert_eq!(
        replication_text("/a mirror /b /c"),
        format!("{HEADER}mismatched replication level: both file and mirror vdevs are present")
    );
    assert_eq!(
        replication_text("raidz /a /b /c mirror /d /e /f"),
        format!("{HEADER}mismatched replication level: raidz and mirror vdevs with different redundancy, 1 vs. 2 (3-way) are present")
    );
    assert_eq!(
        replication_text("raidz /a /b /c raidz2 /d /e /f"),
        format!("{HEADER}mismatched replication level: both 1 and 2 device parity raidz vdevs are present")
    );
    assert_eq!(
        replication_text("mirror /a /b mirror /c /d /e"),
        format!(
            "{HEADER}mismatched replication level: both 2-way and 3-way mirror vdevs are present"
        )
    );
    assert_eq!(
        replication_text("mirror /a /dev/sdb"),
        format!("{HEADER}mismatched replication level: mirror contains both files and devices")
    );
    // Special vdevs are held to the pool's level too.
    assert_eq!(
        replication_text("mirror /a /b special /s"),
        format!("{HEADER}mismatched replication level: both mirror and file vdevs are present")
    );
    // Several problems are all reported, one per line.
    assert_eq!(
        replication_text("/a mirror /b /c /d"),
        format!("{HEADER}mismatched replication level: both file and mirror vdevs are present")
    );
    assert_eq!(
        replication_text("/a mirror /b /c /e mirror /f /g"),
        format!("{HEADER}mismatched replication level: both file and mirror vdevs are present\nmismatched replication level: both 3-way and 2-way mirror vdevs are present")
    );
}

// A pool must have a normal vdev: only special vdevs is refused.
#[test]
fn replication_requires_a_normal_vdev() {
    assert_eq!(
        replication_text("special /s1"),
        format!("{HEADER}at least one general top-level vdev must be specified")
    );
}

// Why: ZTS zpool_create_002_pos (issue 18): a mirror of files 16 MiB or more apart in size
// was created without -f; OpenZFS's get_replication refuses it ("contains devices of
// different sizes"). Within ZPOOL_FUZZ they agree.
#[test]
fn replication_refuses_leaves_of_different_sizes() {
    let dir = std::env::temp_dir().join(format!("zetta-vdev-sizes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let make = |name: &str, size: u64| {
        let path = dir.join(name);
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        path.to_string_lossy().into_owned()
    };
    let small = make("small", 64 << 20);
    let near = make("near", (64 << 20) + (16 << 20));
    let big = make("big", 128 << 20);
    assert_eq!(replication_text(&format!("mirror {small} {near}")), "ok");
    assert_eq!(
        replication_text(&format!("mirror {small} {big}")),
        format!("{HEADER}mirror contains devices of different sizes")
    );
    assert_eq!(
        replication_text(&format!("raidz {big} {small} {near}")),
        format!("{HEADER}raidz contains devices of different sizes")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
