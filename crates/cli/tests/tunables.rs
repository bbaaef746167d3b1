//! OpenZFS's module parameters in the daemon (issue 16, "Memory like OpenZFS"): read from
//! the configuration file at start, listed and set at run time by `zetta tunable`,
//! mirrored as files like /sys/module/zfs/parameters, and applied — the ARC shrinks when
//! `zfs_arc_max` is lowered, as `zetta arcstats` (kstat layout) shows.

mod common;

use common::Lab;
use std::process::Command;

fn zetta(lab: &Lab, args: &[&str]) -> common::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zetta"));
    command
        .args(args)
        .env("ZETTA_CACHE_FILE", lab.dir.join("zpool.cache"))
        .env("ZETTA_RUN_DIR", lab.dir.join("run"))
        .envs(lab.env.iter().map(|(k, v)| (k, v)));
    let output = command.output().expect("zetta runs");
    common::Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn arcstat(lab: &Lab, name: &str) -> u64 {
    let out = zetta(lab, &["arcstats"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
        .lines()
        .find_map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            (columns.len() == 3 && columns[0] == name).then(|| columns[2].parse().ok())?
        })
        .unwrap_or_else(|| panic!("no {name} in arcstats:\n{}", out.stdout))
}

// Why: an admin sets the ARC and txg tunables once in a file (modprobe's form or
// NAME=VALUE) and changes them at run time; each value must be what the daemon applies —
// a lowered zfs_arc_max must evict at once — and a wrong line must be reported, not
// silently taken.
#[test]
fn tunables_from_the_file_and_at_run_time_bound_the_arc() {
    let mut lab = Lab::new();
    let conf = lab.path("zetta.conf");
    std::fs::write(
        &conf,
        "# Zetta's tunables\noptions zfs zfs_arc_max=134217728 zfs_txg_timeout=3\nzfs_no_such=1\n",
    )
    .expect("conf");
    lab.env.push(("ZETTA_CONF".into(), conf));
    let disk = lab.disk("disk", 1 << 30);
    let mnt = lab.path("mnt");
    lab.ok(
        "zpool",
        &["create", "-m", &mnt, "-O", "compression=off", "tank", &disk],
    );

    let listed = zetta(&lab, &["tunable"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("zfs_arc_max=134217728\n"),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains("zfs_txg_timeout=3\n"),
        "{}",
        listed.stdout
    );
    let one = zetta(&lab, &["tunable", "zfs_txg_timeout"]);
    assert_eq!(one.stdout, "3\n");
    let parameters = lab.dir.join("run/parameters");
    assert_eq!(
        std::fs::read_to_string(parameters.join("zfs_arc_max")).expect("parameter file"),
        "134217728\n"
    );
    let log = std::fs::read_to_string(lab.dir.join("run/zetta.log")).unwrap_or_default();
    assert!(
        log.contains("line 3: unknown tunable 'zfs_no_such'"),
        "the bad line is reported: {log}"
    );
    assert_eq!(arcstat(&lab, "c_max"), 134217728);

    // 96 MiB read back cold through the daemon fill the ARC past 64 MiB.
    let file = format!("{mnt}/data");
    let out = lab.sh(&format!(
        "head -c 100663296 /dev/urandom > {file} && sync {file}"
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    lab.ok("zfs", &["unmount", "tank"]);
    lab.ok("zpool", &["export", "tank"]);
    lab.ok(
        "zpool",
        &["import", "-d", lab.dir.to_str().expect("utf-8"), "tank"],
    );
    assert!(
        common::wait_for(|| std::path::Path::new(&file).exists()),
        "{file} mounted again after the import"
    );
    let out = lab.sh(&format!("cat {file} > /dev/null"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let filled = arcstat(&lab, "size");
    assert!(filled > 64 << 20, "the ARC holds what was read: {filled}");

    // Lowered at run time: the bound and the contents follow before the command returns.
    let set = zetta(&lab, &["tunable", "zfs_arc_max=67108864"]);
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert_eq!(arcstat(&lab, "c_max"), 64 << 20);
    let size = arcstat(&lab, "size");
    assert!(size <= 64 << 20, "the ARC shrank to its new max: {size}");
    assert_eq!(
        std::fs::read_to_string(parameters.join("zfs_arc_max")).expect("parameter file"),
        "67108864\n"
    );

    // Refused values change nothing and say why.
    let bad = zetta(&lab, &["tunable", "zfs_arc_max=12"]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "zetta tunable: invalid value '12' for 'zfs_arc_max': 0 or at least 67108864 (64 MiB)\n"
    );
    let unknown = zetta(&lab, &["tunable", "zfs_no_such"]);
    assert_eq!(unknown.code, 1);
    assert_eq!(
        unknown.stderr,
        "zetta tunable: unknown tunable 'zfs_no_such'\n"
    );
    assert_eq!(
        zetta(&lab, &["tunable", "zfs_arc_max"]).stdout,
        "67108864\n"
    );
}
