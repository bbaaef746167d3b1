//! OpenZFS's own `zdb` walks a pool Zetta made (issue 14, increment 8, format 14): with the
//! rest of the MOS as OpenZFS writes it (`$MOS`/`$FREE`/`$ORIGIN`, bpobj dead lists, the
//! history ring, `errlog_last`) and Zetta's one feature write-only, OpenZFS 2.3's zdb (from
//! scripts/oracle.sh, see crates/zetta/tests/common/oracle.rs) opens the pool read-only;
//! since format 16 its `-bcc` finds every block in the space maps ("No leaks").

mod common;

use common::openzfs::oracle;
use common::Lab;
use std::process::Command;

const DISK_SIZE_BYTES: u64 = 256 << 20;

fn zpool_ok(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
}

fn zfs_ok(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zfs");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
}

/// `zdb -e -p DIR FLAGS tank`, which must exit 0; its stdout.
fn zdb_ok(lab: &Lab, flags: &str) -> String {
    let out = Command::new(oracle::zdb())
        .args(["-e", "-p"])
        .arg(&lab.dir)
        .arg(flags)
        .arg("tank")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "zdb {flags}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

// Why: until format 14 OpenZFS refused every Zetta pool (`org.zetta:private_mos` in
// features_for_read), and without the hidden DSL dirs, bpobj dead lists and a previous
// snapshot on every dataset its `dsl_pool_open` and `dsl_dataset_hold_obj` fail or
// assert. zdb -d must now list exactly the datasets, snapshots and clone Zetta made (no
// `$` dir among them) and report no leaked MOS object; zdb -h must show the commands from
// the history ring; zdb -C must print the config with Zetta's settings beside it.
#[test]
fn zdb_walks_a_zetta_pool() {
    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "tank", &disk]);
    for args in [
        &["create", "tank/a"][..],
        &["create", "tank/a/b"],
        &["snapshot", "tank/a@s1"],
        &["snapshot", "tank/a/b@s2"],
        &["clone", "tank/a@s1", "tank/c"],
        &["snapshot", "tank/a@s3"],
    ] {
        zfs_ok(&lab, args);
    }
    zpool_ok(&lab, &["set", "comment=walked", "tank"]);
    zpool_ok(&lab, &["export", "tank"]);

    let text = zdb_ok(&lab, "-d");
    let mut listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Dataset "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "mos",
            "tank",
            "tank/a",
            "tank/a/b",
            "tank/a/b@s2",
            "tank/a@s1",
            "tank/a@s3",
            "tank/c"
        ],
        "{text}"
    );
    assert!(!text.contains("leaked"), "{text}");
    assert!(!text.contains('$'), "{text}");

    let history = zdb_ok(&lab, "-h");
    let commands: Vec<&str> = history
        .lines()
        .filter(|l| !l.contains("[txg:"))
        .filter_map(|l| l.split_once(' ').map(|(_, command)| command))
        .collect();
    assert_eq!(
        commands,
        [
            format!("zpool create tank {disk}").as_str(),
            "zfs create tank/a",
            "zfs create tank/a/b",
            "zfs snapshot tank/a@s1",
            "zfs snapshot tank/a/b@s2",
            "zfs clone tank/a@s1 tank/c",
            "zfs snapshot tank/a@s3",
            "zpool set comment=walked tank",
            "zpool export tank",
        ],
        "{history}"
    );
    assert!(history.contains("] snapshot tank/a@s3 ("), "{history}");

    let config = zdb_ok(&lab, "-C");
    assert!(config.contains("    name: 'tank'"), "{config}");
    assert!(config.contains("org.zetta:pool_props"), "{config}");

    // Format 16: every block the CLI's commands wrote is in the space maps, the MOS's own
    // included (before, zdb -bcc failed `zio_claim(...) == 0 (0x2 == 0)` on this pool).
    let blocks = zdb_ok(&lab, "-bcc");
    assert!(
        blocks.contains("No leaks (block sum matches space maps exactly)"),
        "{blocks}"
    );
    assert!(!blocks.contains("(leaked"), "{blocks}");

    // Zetta reads back what it wrote: the pool, its datasets, its settings, its history.
    let mut command = lab.command("zpool");
    command
        .args(["import", "-d"])
        .arg(&lab.dir)
        .arg("tank")
        .env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "import: {}", out.stderr);
    let mut command = lab.command("zfs");
    command
        .args(["list", "-H", "-o", "name", "-t", "all"])
        .env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(
        out.stdout,
        "tank\ntank/a\ntank/a@s1\ntank/a@s3\ntank/a/b\ntank/a/b@s2\ntank/c\n"
    );
    let mut command = lab.command("zpool");
    command
        .args(["get", "-H", "-o", "value", "comment", "tank"])
        .env("ZETTA_MOUNT", "0");
    assert_eq!(lab.run(command).stdout, "walked\n");
}
