//! A pool OpenZFS wrote last comes back to Zetta read-write through the CLI (issue 14,
//! "Done when": "`zhack -d DIR feature enable POOL com.example:x` … commits txgs; Zetta
//! imports the result, scrubs clean and reads everything").
//!
//! Why: OpenZFS's sync rewrites the labels and the MOS config from its own keys (Zetta's
//! `org.zetta:*` keys vanish; per-vdev ZAPs appear). Until session 16 Zetta's discovery
//! then lost the pool and `zpool import` offered it only read-only, as a foreign pool.
//! Now discovery assembles the tree from OpenZFS's keys and decides by the features: the
//! pool's are Zetta's (`com.example:x` is enabled, not active), so it imports read-write.
//! `zpool get` shows the unknown feature as OpenZFS's libzfs does
//! (`zpool_prop_get_feature`: `feature@com.example:x` names no known feature, so no row;
//! `unsupported@com.example:x` is "inactive": enabled, not in use).

mod common;

use common::openzfs::oracle::{build_devzfs_shim, zhack};
use common::openzfs::zdb_ok;
use common::Lab;
use std::process::Command;

const DISK_SIZE_BYTES: u64 = 256 << 20;

fn zpool(lab: &Lab, args: &[&str]) -> common::Output {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    lab.run(command)
}

fn zpool_ok(lab: &Lab, args: &[&str]) -> String {
    let out = zpool(lab, args);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
    out.stdout
}

fn zfs_ok(lab: &Lab, args: &[&str]) -> String {
    let mut command = lab.command("zfs");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
    out.stdout
}

#[test]
fn a_pool_zhack_wrote_imports_read_write_scrubs_clean_and_zdb_agrees() {
    let lab = Lab::new();
    let disks = lab.dir.join("disks");
    std::fs::create_dir_all(&disks).unwrap();
    let disk = lab.disk("disks/d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "-m", "none", "tank", &disk]);
    zfs_ok(&lab, &["create", "tank/a"]);
    zfs_ok(&lab, &["snapshot", "tank/a@s1"]);
    zpool_ok(&lab, &["export", "tank"]);
    common::write_object(&disk, "tank/a", 2000, 7, 300_000, false);

    let out = Command::new(zhack())
        .env("LD_PRELOAD", build_devzfs_shim(&lab.dir))
        .arg("-d")
        .arg(&disks)
        .args(["feature", "enable", "tank", "com.example:x"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zhack: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Listed as Zetta's (no "read-only" wording), imported read-write.
    let listing = zpool_ok(&lab, &["import", "-d", disks.to_str().unwrap()]);
    assert!(listing.contains("pool: tank"), "{listing}");
    assert!(!listing.contains("read-only"), "{listing}");
    zpool_ok(&lab, &["import", "-d", disks.to_str().unwrap(), "tank"]);
    assert_eq!(
        zpool_ok(&lab, &["get", "-H", "-o", "value", "readonly", "tank"]),
        "off\n"
    );
    zpool_ok(&lab, &["scrub", "-w", "tank"]);
    let status = zpool_ok(&lab, &["status", "tank"]);
    assert!(status.contains("state: ONLINE"), "{status}");
    assert!(status.contains("with 0 errors"), "{status}");
    assert!(status.contains("errors: No known data errors"), "{status}");
    // libzfs's `get_callback` collects no row when `zpool_prop_get_feature` fails (no
    // feature of that short name is known: ENOTSUP), so the line is empty.
    assert_eq!(
        zpool_ok(&lab, &["get", "-H", "feature@com.example:x", "tank"]),
        ""
    );
    assert_eq!(
        zpool_ok(&lab, &["get", "-H", "unsupported@com.example:x", "tank"]),
        "tank\tunsupported@com.example:x\tinactive\tlocal\n"
    );
    // Zetta writes again: a snapshot, a new filesystem, the history.
    zfs_ok(&lab, &["snapshot", "tank/a@s2"]);
    zfs_ok(&lab, &["create", "tank/b"]);
    let listed = zfs_ok(
        &lab,
        &["list", "-H", "-o", "name", "-t", "all", "-r", "tank"],
    );
    assert_eq!(listed, "tank\ntank/a\ntank/a@s1\ntank/a@s2\ntank/b\n");
    zpool_ok(&lab, &["export", "tank"]);

    // OpenZFS reads every block and finds every one in the maps.
    let leaks = zdb_ok(&disks, &["-bcc", "tank"]);
    assert!(leaks.contains("No leaks"), "{leaks}");
    assert!(!leaks.contains(") leaked"), "{leaks}");
    // And the pool Zetta wrote over OpenZFS's config imports again.
    zpool_ok(&lab, &["import", "-d", disks.to_str().unwrap(), "tank"]);
    zpool_ok(&lab, &["export", "tank"]);
}
