//! `zfs promote` and `zfs destroy` of filesystems as one DSL sync task each, through the
//! real binary (no mounts): one txg per command, shown by the `createtxg` of snapshots
//! taken just before and after and by the `[txg:N]` internal records of `zpool history -i`.

mod common;

use common::NoMountLab as Lab;

/// What these tests ask of the lab besides running commands.
trait TxgLab {
    /// Runs a command in its own process (`ZETTA_DIRECT=1`): no daemon, so no txg timer
    /// commits between two commands (it would, while a destroy's frees are deferred) and
    /// each command's txgs are exactly the ones it commits.
    fn direct(&self, front: &str, args: &[&str]) -> String;
    /// The internal records (`[txg:N] …`) and command lines of `zpool history -i`, without
    /// their dates (`direct`: through `direct`).
    fn history(&self, direct: bool) -> Vec<String>;
}

impl TxgLab for Lab {
    fn direct(&self, front: &str, args: &[&str]) -> String {
        let mut command = self.inner.command(front);
        command
            .args(args)
            .env("ZETTA_MOUNT", "0")
            .env("ZETTA_DIRECT", "1");
        let out = self.inner.run(command);
        assert_eq!(out.code, 0, "{front} {args:?}: {}", out.stderr);
        out.stdout
    }

    fn history(&self, direct: bool) -> Vec<String> {
        let args = ["history", "-i", "tank"];
        let out = if direct {
            self.direct("zpool", &args)
        } else {
            self.ok("zpool", &args)
        };
        out.lines()
            .skip(1)
            .filter_map(|line| line.split_once(' ').map(|(_, rest)| rest.to_string()))
            .collect()
    }
}

/// The txg of an internal record `[txg:N] …`.
fn record_txg(record: &str) -> Option<u64> {
    record
        .strip_prefix("[txg:")?
        .split(']')
        .next()?
        .parse()
        .ok()
}

// Why: `zfs promote` committed three txgs (the engine's commit of what was in flight, the
// promote's changes, the CLI's commit) and `zfs destroy` of a filesystem two, of a tree
// two or three per dataset; OpenZFS runs each as a sync task in one txg (`-r` here: one
// task for the whole tree). A snapshot of `tank` before and after each command bounds it:
// their creation txgs are two apart when the command took one txg, and its internal
// records are in the txg between them.
#[test]
fn promote_and_destroy_are_one_txg_each() {
    let lab = Lab::new();
    lab.ok("zpool", &["export", "tank"]);
    lab.direct("zpool", &["import", "-d", &lab.inner.path(""), "tank"]);
    for args in [
        &["create", "tank/fs"][..],
        &["snapshot", "tank/fs@a"],
        &["clone", "tank/fs@a", "tank/c"],
        &["snapshot", "tank/c@b"],
        &["clone", "tank/c@b", "tank/cc"],
        &["create", "tank/t"],
        &["create", "tank/t/u"],
        &["snapshot", "-r", "tank/t@s"],
        &["clone", "tank/t@s", "tank/t/k"],
        &["snapshot", "tank/t/k@s"],
        &["create", "tank/gone"],
    ] {
        lab.direct("zfs", args);
    }
    let mut probes = 0;
    let mut probe = || {
        probes += 1;
        let name = format!("tank@probe{probes}");
        lab.direct("zfs", &["snapshot", &name]);
        let txg = lab.direct("zfs", &["get", "-Hp", "-o", "value", "createtxg", &name]);
        txg.trim().parse::<u64>().unwrap()
    };
    // (command, the datasets its internal records name, in order)
    let commands: [(&[&str], &[&str]); 7] = [
        (&["promote", "tank/c"], &["promote tank/c"]),
        // A clone of a clone takes over its origin's origin.
        (&["promote", "tank/cc"], &["promote tank/cc"]),
        (&["promote", "tank/fs"], &["promote tank/fs"]),
        (&["destroy", "tank/gone"], &["destroy tank/gone"]),
        (&["destroy", "tank/c"], &["destroy tank/c"]),
        // A tree with a clone inside (before its origin snapshot) and its snapshots.
        (
            &["destroy", "-r", "tank/t"],
            &["destroy tank/t/u", "destroy tank/t/k", "destroy tank/t"],
        ),
        // -R: the snapshot's clone goes with it.
        (&["destroy", "-R", "tank/fs@a"], &["destroy tank/cc"]),
    ];
    for (args, named) in &commands {
        let before = probe();
        lab.direct("zfs", args);
        let after = probe();
        assert_eq!(after - before - 1, 1, "txgs of zfs {args:?}");
        let history = lab.history(true);
        let line = format!("zfs {}", args.join(" "));
        let end = history
            .iter()
            .rposition(|l| *l == line)
            .unwrap_or_else(|| panic!("{line:?} in {history:#?}"));
        let records: Vec<&String> = history[..end]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("[txg:"))
            .collect();
        let records: Vec<&String> = records
            .into_iter()
            .rev()
            .filter(|r| r.contains("] promote ") || r.contains("] destroy "))
            .collect();
        assert_eq!(records.len(), named.len(), "zfs {args:?}: {records:#?}");
        for (record, name) in records.iter().zip(named.iter()) {
            assert_eq!(
                record_txg(record),
                Some(before + 1),
                "zfs {args:?}: {record}"
            );
            let text = record.split_once("] ").map_or("", |(_, text)| text);
            assert!(
                text.starts_with(&format!("{name} (")),
                "zfs {args:?}: {record}"
            );
            if name.starts_with("promote") {
                assert!(text.ends_with(")  "), "OpenZFS's \" \": {record:?}");
            } else {
                assert!(
                    text.contains(") (synchronous, mintxg="),
                    "OpenZFS's synchronous destroy: {record:?}"
                );
            }
        }
    }
    let left = lab.direct("zfs", &["list", "-H", "-o", "name", "-t", "all"]);
    let left: Vec<&str> = left.lines().filter(|n| !n.contains("@probe")).collect();
    assert_eq!(left, ["tank", "tank/fs"]);
}

// Why: the same commands through the daemon (the product's path): each command's internal
// records are in one txg and its command line follows them in `zpool history`, a refused
// destroy or promote logs nothing and changes nothing, and the refusals are OpenZFS's.
#[test]
fn promote_and_destroy_through_the_daemon_log_one_txg() {
    let lab = Lab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["create", "tank/a/b"]);
    lab.ok("zfs", &["snapshot", "-r", "tank/a@s"]);
    lab.ok("zfs", &["clone", "tank/a/b@s", "tank/k"]);
    lab.ok("zfs", &["hold", "keep", "tank/a@s"]);
    let refused = lab.run("zfs", &["destroy", "-r", "tank/a"]);
    assert_eq!(refused.code, 1);
    assert_eq!(
        refused.stderr,
        "cannot destroy 'tank/a': filesystem has dependent clones\nuse '-R' to destroy the following datasets:\ntank/k\n"
    );
    let refused = lab.run("zfs", &["destroy", "-R", "tank/a"]);
    assert_eq!(refused.code, 1);
    assert_eq!(
        refused.stderr,
        "cannot destroy snapshot tank/a@s: dataset is busy\n"
    );
    let refused = lab.run("zfs", &["promote", "tank/a"]);
    assert_eq!(refused.code, 1);
    assert_eq!(
        refused.stderr,
        "cannot promote 'tank/a': not a cloned filesystem\n"
    );
    let before = lab.history(false);
    assert!(
        before
            .iter()
            .all(|l| !l.contains("destroy") && !l.contains("promote")),
        "refusals log nothing: {before:#?}"
    );
    lab.ok("zfs", &["release", "keep", "tank/a@s"]);
    lab.ok("zfs", &["promote", "tank/k"]);
    lab.ok("zfs", &["destroy", "-R", "tank/a"]);
    let history = lab.history(false);
    let tail: Vec<&str> = history
        .iter()
        .map(String::as_str)
        .skip_while(|l| !l.ends_with("zfs release keep tank/a@s"))
        .skip(1)
        .collect();
    let txg = |i: usize| record_txg(tail[i]).unwrap_or_else(|| panic!("{tail:#?}"));
    assert_eq!(tail.len(), 5, "{tail:#?}");
    assert!(tail[0].contains("] promote tank/k ("), "{tail:#?}");
    assert_eq!(tail[1], "zfs promote tank/k");
    // tank/k took tank/a/b@s: tank/a/b is a clone of tank/k@s now, and tank/a's tree
    // (tank/a@s, which logs no record, tank/a/b, tank/a) goes in one txg.
    assert!(tail[2].contains("] destroy tank/a/b ("), "{tail:#?}");
    assert!(tail[3].contains("] destroy tank/a ("), "{tail:#?}");
    assert_eq!(txg(2), txg(3), "one txg for the tree: {tail:#?}");
    assert!(txg(2) > txg(0), "{tail:#?}");
    assert_eq!(tail[4], "zfs destroy -R tank/a");
    let left = lab.ok("zfs", &["list", "-H", "-o", "name", "-t", "all"]);
    assert_eq!(left, "tank\ntank/k\ntank/k@s\n");
}
