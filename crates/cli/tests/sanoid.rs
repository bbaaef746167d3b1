//! sanoid (Debian's `sanoid` package, unmodified) on Zetta: the snapshot policy the seed
//! posts run (`--take-snapshots`, `--prune-snapshots`) and its Nagios checks
//! (`--monitor-snapshots`, `--monitor-health`, `--monitor-capacity`), with the lab's `zfs`
//! and `zpool` first in PATH, so every command of reference/sanoid-syncoid.md that sanoid
//! runs is ours: `zfs get -Hrpt snapshot creation` (no dataset), `zfs snapshot`, `zfs
//! destroy`, `zfs list -o name -t filesystem,volume -Hr`, `zpool list -o
//! name,size,cap,health,free`, `zpool list -H -o cap`, `zpool status`. Snapshots that must
//! look hours or days old are made through the engine with those creation times (sanoid
//! decides by the `creation` property and the name's `_hourly`/`_daily` suffix).

mod common;

use common::host::{installed, Host};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SANOID: &str = "/usr/sbin/sanoid";

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A config directory `conf-<name>` holding `sanoid.conf`.
fn config(host: &Host, name: &str, text: &str) -> String {
    let dir = host.lab.path(&format!("conf-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(format!("{dir}/sanoid.conf"), text).unwrap();
    dir
}

/// Runs sanoid with a config directory and the given action flags. The snapshot cache is
/// dropped first, as if its 15 minutes had passed (each run then asks `zfs get` afresh).
fn sanoid(host: &Host, conf: &str, flags: &str) -> common::Output {
    let cache = host.lab.path("sanoid-cache");
    let _ = std::fs::remove_file(format!("{cache}/snapshots.txt"));
    host.sh(&format!(
        "{SANOID} --configdir={conf} --cache-dir={cache} --run-dir={} {flags}",
        host.lab.path("sanoid-run")
    ))
}

fn snapshots(host: &Host, fs: &str) -> Vec<String> {
    let mut names: Vec<String> = host
        .zfs_ok(&["list", "-H", "-r", "-t", "snapshot", "-o", "name", fs])
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// `autosnap_<UTC date>_<type>` for a time `age_secs` ago, as sanoid names them.
fn autosnap_name(host: &Host, age_secs: u64, kind: &str) -> (String, u64) {
    let when = now_secs() - age_secs;
    let date = host.sh_ok(&format!("date -u -d @{when} +%Y-%m-%d_%H:%M:%S"));
    (format!("autosnap_{}_{kind}", date.trim()), when)
}

/// A hour boundary between two sanoid runs would make the second take a new hourly
/// snapshot: start well inside an hour.
fn away_from_hour_boundary() {
    let into_hour = now_secs() % 3600;
    if into_hour > 3600 - 20 {
        std::thread::sleep(Duration::from_secs(3600 - into_hour + 1));
    }
}

const POLICY: &str = "[tank/data]\n\tuse_template = production\n\trecursive = yes\n\n\
[template_production]\n\tfrequently = 0\n\thourly = 2\n\tdaily = 1\n\tmonthly = 0\n\
\tyearly = 0\n\tautosnap = yes\n\tautoprune = yes\n\tdaily_hour = 0\n\tdaily_min = 0\n";

/// `--take-snapshots` takes one hourly and one daily snapshot of the dataset and its child
/// and nothing more in the same period; `--prune-snapshots` destroys exactly the expired
/// ones beyond each type's count (oldest first), leaving other snapshots alone;
/// `--monitor-snapshots` is OK, then WARN and CRIT in sanoid's words and exit codes.
#[test]
fn sanoid_takes_prunes_and_monitors_snapshots() {
    if !installed(SANOID) {
        return;
    }
    let host = Host::new();
    let disks = host.pool("tank", 256 << 20, false);
    host.zfs_ok(&["create", "tank/data"]);
    host.zfs_ok(&["create", "tank/data/child"]);
    host.zfs_ok(&["create", "tank/stale"]);
    let conf = config(&host, "policy", POLICY);
    away_from_hour_boundary();

    let out = sanoid(&host, &conf, "--take-snapshots --verbose");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let taken = snapshots(&host, "tank/data");
    assert_eq!(taken.len(), 4, "{taken:?}");
    for kind in ["hourly", "daily"] {
        for fs in ["tank/data", "tank/data/child"] {
            let prefix = format!("{fs}@autosnap_");
            assert_eq!(
                taken
                    .iter()
                    .filter(|n| n.starts_with(&prefix) && n.ends_with(&format!("_{kind}")))
                    .count(),
                1,
                "{fs} {kind}: {taken:?}"
            );
            assert!(out.stdout.contains(&format!("taking snapshot {prefix}")));
        }
    }
    let out = sanoid(&host, &conf, "--take-snapshots --verbose");
    assert_eq!(out.code, 0);
    assert!(
        !out.stdout.contains("taking snapshot tank"),
        "{}",
        out.stdout
    );
    assert_eq!(snapshots(&host, "tank/data"), taken);
    let out = sanoid(&host, &conf, "--monitor-snapshots");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            0,
            "OK: all monitored datasets (tank/data, tank/data/child) have fresh snapshots\n"
        )
    );

    // Older snapshots, as earlier runs would have left them, and one an admin took.
    let hours = |h: u64| h * 3600;
    let old = [
        autosnap_name(&host, hours(5), "hourly"),
        autosnap_name(&host, hours(4), "hourly"),
        autosnap_name(&host, hours(3) + 1800, "hourly"),
        autosnap_name(&host, hours(72), "daily"),
        ("manual".to_string(), now_secs() - hours(100)),
    ];
    let stale = autosnap_name(&host, hours(2), "hourly");
    host.with_engine(&disks, |spa| {
        let mut guid = 0x5a17_0000u64;
        for (snap, creation) in old.iter().map(|(n, c)| (format!("tank/data@{n}"), c)) {
            guid += 1;
            let identity = Some((zetta::types::Guid(guid), *creation));
            spa.snapshot_as(&[snap], identity).unwrap();
        }
        let identity = Some((zetta::types::Guid(guid + 1), stale.1));
        spa.snapshot_as(&[format!("tank/stale@{}", stale.0)], identity)
            .unwrap();
    });
    let out = sanoid(&host, &conf, "--prune-snapshots --verbose");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // hourly=2: of four hourlies the two oldest go (the 3.5 h one is expired too, but only
    // two would be left); daily=1: the 3-day one goes; the child and `@manual` are kept.
    let pruned = [&old[0].0, &old[1].0, &old[3].0];
    for snap in pruned {
        assert!(
            out.stdout
                .contains(&format!("INFO: pruning tank/data@{snap} ... \n")),
            "{}",
            out.stdout
        );
    }
    let mut expected = taken.clone();
    expected.push(format!("tank/data@{}", old[2].0));
    expected.push("tank/data@manual".to_string());
    expected.sort();
    assert_eq!(snapshots(&host, "tank/data"), expected);

    // Monitoring: tank/stale's newest hourly is 2 h old (warn 90m, crit 360m).
    let stale_policy = format!(
        "{POLICY}\n[tank/stale]\n\tuse_template = production\n\tdaily = 0\n\
         \n[tank/none]\n\tuse_template = production\n\tdaily = 0\n"
    );
    host.zfs_ok(&["create", "tank/none"]);
    let conf = config(&host, "stale", &stale_policy);
    let out = sanoid(&host, &conf, "--monitor-snapshots");
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("CRIT: tank/none has no hourly snapshots at all!, WARN: tank/stale newest hourly snapshot is 2h 0m "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.ends_with(" old (should be < 1h 30m 0s)\n"));
}

/// `--monitor-health` and `--monitor-capacity` as on real ZFS: a healthy pool is OK (exit
/// 0), a mirror with a device offline is a WARNING naming the device (exit 1), and the
/// capacity check compares `zpool list -H -o cap` with the configured limits.
#[test]
fn sanoid_monitors_pool_health_and_capacity() {
    if !installed(SANOID) {
        return;
    }
    let host = Host::new();
    let disks = host.pool("mp", 256 << 20, true);
    host.zfs_ok(&["create", "-o", "compression=off", "mp/data"]);
    let limits = |warn: u32, crit: u32| {
        format!(
            "[mp/data]\n\tuse_template = t\n[template_t]\n\thourly = 1\n\tdaily = 0\n\
             \tmonthly = 0\n\tcapacity_warn = {warn}\n\tcapacity_crit = {crit}\n"
        )
    };
    let conf = config(&host, "health", &limits(80, 95));
    let out = sanoid(&host, &conf, "--monitor-health");
    assert_eq!(out.code, 0, "{}", out.stdout);
    let status = host.sh_ok("zpool list -H -o size,free mp");
    let fields: Vec<&str> = status.split_whitespace().collect();
    assert_eq!(
        out.stdout,
        format!(
            "OK ZPOOL mp : ONLINE {{Size:{} Free:{} Cap:0%}} \n",
            fields[0], fields[1]
        )
    );
    let out = sanoid(&host, &conf, "--monitor-capacity");
    assert_eq!((out.code, out.stdout.as_str()), (0, "OK ZPOOL mp : 0%\n"));

    // 80 MiB of incompressible data in a 240M pool: over 30%.
    host.sh_ok(&format!(
        "head -c 80M /dev/urandom > {}/big && zpool sync mp",
        host.mnt("mp/data")
    ));
    let cap: u32 = host
        .sh_ok("zpool list -H -o cap mp")
        .trim()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(cap >= 30, "{cap}");
    let conf = config(&host, "warn", &limits(cap - 5, 95));
    let out = sanoid(&host, &conf, "--monitor-capacity");
    assert_eq!(
        (out.code, out.stdout),
        (1, format!("*** WARNING *** WARNING ZPOOL mp : {cap}%\n"))
    );
    let conf = config(&host, "crit", &limits(cap - 10, cap - 5));
    let out = sanoid(&host, &conf, "--monitor-capacity");
    assert_eq!(
        (out.code, out.stdout),
        (2, format!("*** CRITICAL *** CRITICAL ZPOOL mp : {cap}%\n"))
    );

    host.sh_ok(&format!("zpool offline mp {}", disks[1]));
    let out = sanoid(&host, &conf, "--monitor-health");
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("*** WARNING *** WARNING ZPOOL mp : DEGRADED {Size:"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .ends_with(&format!("<mirror-0:DEGRADED> {}:OFFLINE \n", disks[1])),
        "{}",
        out.stdout
    );
}
