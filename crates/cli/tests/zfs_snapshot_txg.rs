//! `zfs snapshot` as one DSL sync task through the real binary (no mounts): one txg per
//! command however many datasets it snapshots, shown by the snapshots' `createtxg` and by
//! the `[txg:N]` internal records of `zpool history -i`.

mod common;

use common::NoMountLab as Lab;

/// What these tests ask of the lab besides running commands.
trait TxgLab {
    fn snapshot_txgs(&self) -> Vec<(String, u64)>;
}

impl TxgLab for Lab {
    /// `name → createtxg` of every snapshot of the pool.
    fn snapshot_txgs(&self) -> Vec<(String, u64)> {
        let out = self.ok(
            "zfs",
            &["list", "-Hp", "-t", "snapshot", "-o", "name,createtxg"],
        );
        out.lines()
            .map(|line| {
                let (name, txg) = line.split_once('\t').unwrap_or_else(|| panic!("{line:?}"));
                (name.to_string(), txg.trim().parse().unwrap())
            })
            .collect()
    }
}

// Why: `zfs snapshot` committed three txgs (commit, snapshot records, the CLI's commit)
// and `-r` took the heads as of a txg before the one holding the snapshots; the issue's
// bar is that `zfs snapshot -r` of 50 datasets is one txg. The snapshots before and after
// (nothing else commits on an idle pool: no mounts, no frees pending) bound the command to
// exactly one txg, the one every snapshot was created in, as `zpool history -i` shows.
#[test]
fn snapshot_r_of_50_datasets_is_one_txg() {
    let lab = Lab::new();
    let script = "for i in $(seq -w 1 49); do zfs create tank/d$i || exit 1; done";
    let mut command = lab.inner.command("sh");
    command
        .arg("-c")
        .arg(script)
        .current_dir(&lab.inner.dir)
        .env("ZETTA_MOUNT", "0");
    let out = lab.inner.run(command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Let frees of the creates' commits settle: the txg timer has nothing to commit after.
    for _ in 0..4 {
        lab.ok("zpool", &["sync", "tank"]);
    }
    lab.ok("zfs", &["snapshot", "tank@before"]);
    lab.ok("zfs", &["snapshot", "-r", "tank@s"]);
    lab.ok("zfs", &["snapshot", "tank@after"]);

    let txgs = lab.snapshot_txgs();
    let of = |name: &str| {
        txgs.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} in {txgs:?}"))
            .1
    };
    let recursive: Vec<&(String, u64)> = txgs.iter().filter(|(n, _)| n.ends_with("@s")).collect();
    assert_eq!(recursive.len(), 50, "tank and its 49 children: {txgs:?}");
    let txg = of("tank@s");
    assert!(
        recursive.iter().all(|(_, t)| *t == txg),
        "every snapshot of -r in one txg: {recursive:?}"
    );
    assert_eq!(
        of("tank@before") + 1,
        txg,
        "nothing committed before it: {txgs:?}"
    );
    assert_eq!(
        of("tank@after"),
        txg + 1,
        "nothing committed after it: {txgs:?}"
    );

    // `zpool history -i`: OpenZFS's internal records, one per snapshot, all in that txg,
    // then the command line; plain `zpool history` shows the command only.
    let history = lab.ok("zpool", &["history", "-i", "tank"]);
    let records: Vec<&str> = history
        .lines()
        .filter(|l| l.contains("] snapshot tank") && l.contains("@s ("))
        .collect();
    assert_eq!(records.len(), 50, "{history}");
    for record in &records {
        let text = record.split_once(' ').map_or("", |(_, rest)| rest);
        assert!(
            text.starts_with(&format!("[txg:{txg}] snapshot tank")),
            "{record:?}"
        );
        assert!(
            text.ends_with(")  "),
            "OpenZFS's \" \" after the dataset id: {record:?}"
        );
    }
    let lines: Vec<&str> = history.lines().collect();
    let last = lines
        .iter()
        .rposition(|l| l.contains("@s ("))
        .unwrap_or_else(|| panic!("{history}"));
    assert!(
        lines[last + 1].ends_with(" zfs snapshot -r tank@s"),
        "the command follows its records: {history}"
    );
    let plain = lab.ok("zpool", &["history", "tank"]);
    assert!(!plain.contains("[txg:"), "{plain}");
    assert!(plain.contains(" zfs snapshot -r tank@s\n"), "{plain}");
}

// Why: `zfs bookmark`, `zfs hold`/`release` (one commit per snapshot with -r, plus the
// CLI's), `zfs destroy` of snapshots (two per snapshot plus the CLI's) and `zfs rollback`
// (three) each committed several txgs; as sync tasks each is one txg (`rollback -r` two:
// the newer snapshots' destroy, then the rollback). A snapshot of `tank` before and after
// each command bounds it: their creation txgs are two apart when the command took one.
#[test]
fn administrative_commands_are_one_txg_each() {
    let lab = Lab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["create", "tank/a/b"]);
    lab.ok("zfs", &["snapshot", "-r", "tank/a@s0"]);
    lab.ok("zfs", &["snapshot", "-r", "tank@r"]);
    lab.ok("zfs", &["snapshot", "tank/a@s1"]);
    for _ in 0..4 {
        lab.ok("zpool", &["sync", "tank"]);
    }
    let mut probes = 0;
    let mut probe = || {
        probes += 1;
        let name = format!("tank@probe{probes}");
        lab.ok("zfs", &["snapshot", &name]);
        let txg = lab.ok("zfs", &["get", "-Hp", "-o", "value", "createtxg", &name]);
        txg.trim().parse::<u64>().unwrap()
    };
    let commands: [(&[&str], u64); 8] = [
        (&["bookmark", "tank/a@s1", "tank/a#m"], 1),
        (&["destroy", "tank/a#m"], 1),
        (&["hold", "-r", "keep", "tank@r"], 1),
        (&["release", "-r", "keep", "tank@r"], 1),
        (&["destroy", "-r", "tank@r"], 1),
        (&["rollback", "tank/a@s1"], 1),
        (&["destroy", "tank/a@s1"], 1),
        (&["rollback", "-r", "tank/a/b@s0"], 1),
    ];
    let mut counts = Vec::new();
    for (args, _) in &commands {
        let before = probe();
        lab.ok("zfs", args);
        let after = probe();
        counts.push(after - before - 1);
    }
    let expected: Vec<u64> = commands.iter().map(|(_, n)| *n).collect();
    assert_eq!(counts, expected, "txgs per command: {commands:?}");
    lab.ok("zfs", &["snapshot", "tank/a@s2"]);
    lab.ok("zfs", &["snapshot", "tank/a@s3"]);
    let before = probe();
    lab.ok("zfs", &["rollback", "-r", "tank/a@s0"]);
    let after = probe();
    assert_eq!(
        after - before - 1,
        2,
        "rollback -r: the destroy, then the rollback"
    );
    let left: Vec<String> = lab
        .snapshot_txgs()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !n.starts_with("tank@probe"))
        .collect();
    assert_eq!(left, ["tank/a@s0", "tank/a/b@s0"]);
}

// Why: with hold, release and bookmark destroy turned into sync tasks, their commands wrote
// no `zpool history` line, while OpenZFS logs all three (`allow_log` on the hold, release
// and destroy_bookmarks ioctls); a refused hold logs nothing.
#[test]
fn hold_release_and_bookmark_destroy_are_in_the_history() {
    let lab = Lab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "-r", "tank@s"]);
    lab.ok("zfs", &["hold", "-r", "keep", "tank@s"]);
    let refused = lab.run("zfs", &["hold", "keep", "tank/a@s"]);
    assert_eq!(
        refused.code, 1,
        "a second hold with one tag: {}",
        refused.stderr
    );
    lab.ok("zfs", &["release", "-r", "keep", "tank@s"]);
    lab.ok("zfs", &["bookmark", "tank/a@s", "tank/a#b"]);
    lab.ok("zfs", &["destroy", "tank/a#b"]);
    let history = lab.ok("zpool", &["history", "tank"]);
    let commands: Vec<&str> = history
        .lines()
        .filter_map(|line| line.split_once(' ').map(|(_, command)| command))
        .collect();
    let tail = &commands[commands.len() - 4..];
    assert_eq!(
        tail,
        [
            "zfs hold -r keep tank@s",
            "zfs release -r keep tank@s",
            "zfs bookmark tank/a@s tank/a#b",
            "zfs destroy tank/a#b",
        ],
        "{history}"
    );
}
