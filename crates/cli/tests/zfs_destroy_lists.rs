//! `zfs destroy` of snapshot lists and ranges, its `-n`/`-v`/`-p` output, `-R` through
//! clones of clones, a pool's `-r`, and the `zfs rename`/`zfs bookmark` shorthands, through
//! the real CLI (issue 18's defects 1, 8 and 9, found by OpenZFS's test suite).

mod common;

use common::NoMountLab;

/// The snapshots of the pool, one name a line.
fn snapshots(lab: &NoMountLab) -> Vec<String> {
    lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "snapshot", "-r", "tank"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// The pool's filesystems, one name a line.
fn filesystems(lab: &NoMountLab) -> Vec<String> {
    lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "filesystem", "-r", "tank"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// `fs` with snapshots `s1`..`s5`.
fn five_snapshots(lab: &NoMountLab, fs: &str) {
    for snap in ["s1", "s2", "s3", "s4", "s5"] {
        lab.ok("zfs", &["snapshot", &format!("{fs}@{snap}")]);
    }
}

fn names(fs: &str, snaps: &[&str]) -> Vec<String> {
    snaps.iter().map(|s| format!("{fs}@{s}")).collect()
}

// Why: defect 8 of issue 18: `zfs destroy tank/a@s1,s3` looked for one snapshot named
// "s1,s3" and refused; OpenZFS's zfs_iter_snapspec reads a comma list, skips names that do
// not exist, and refuses only when nothing matches.
#[test]
fn comma_list_destroys_each_named_snapshot() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    five_snapshots(&lab, "tank/a");
    lab.ok("zfs", &["destroy", "tank/a@s1,s3"]);
    assert_eq!(snapshots(&lab), names("tank/a", &["s2", "s4", "s5"]));
    // A missing name in the list is skipped.
    lab.ok("zfs", &["destroy", "tank/a@nosuch,s4,s4"]);
    assert_eq!(snapshots(&lab), names("tank/a", &["s2", "s5"]));
    let out = lab.run("zfs", &["destroy", "tank/a@nosuch,other"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "could not find any snapshots to destroy; check snapshot names.\n"
        )
    );
    assert_eq!(snapshots(&lab), names("tank/a", &["s2", "s5"]));
}

// Why: defect 8 of issue 18: the `%` ranges of zfs_iter_snapspec (inclusive, by creation
// order, open at either end, combined with commas) were not read at all.
#[test]
fn ranges_follow_creation_order_and_open_ends() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    five_snapshots(&lab, "tank/a");
    lab.ok("zfs", &["destroy", "tank/a@s2%s4"]);
    assert_eq!(snapshots(&lab), names("tank/a", &["s1", "s5"]));

    lab.ok("zfs", &["create", "tank/b"]);
    five_snapshots(&lab, "tank/b");
    lab.ok("zfs", &["destroy", "tank/b@%s2"]);
    lab.ok("zfs", &["destroy", "tank/b@s4%"]);
    assert_eq!(
        snapshots(&lab),
        [names("tank/a", &["s1", "s5"]), names("tank/b", &["s3"])].concat()
    );

    lab.ok("zfs", &["create", "tank/c"]);
    five_snapshots(&lab, "tank/c");
    // A range backwards matches nothing.
    let out = lab.run("zfs", &["destroy", "tank/c@s3%s1"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "could not find any snapshots to destroy; check snapshot names.\n"
        )
    );
    lab.ok("zfs", &["destroy", "tank/c@s1%s2,s4"]);
    assert_eq!(
        snapshots(&lab)
            .into_iter()
            .filter(|n| n.starts_with("tank/c@"))
            .collect::<Vec<_>>(),
        names("tank/c", &["s3", "s5"])
    );
}

// Why: defect 8 of issue 18: with -r the spec applies to every descendant.
#[test]
fn recursive_list_applies_to_every_descendant() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["create", "tank/a/b"]);
    for snap in ["s1", "s2", "s3"] {
        lab.ok("zfs", &["snapshot", "-r", &format!("tank/a@{snap}")]);
    }
    lab.ok("zfs", &["destroy", "-r", "tank/a@s1,s3"]);
    assert_eq!(snapshots(&lab), ["tank/a@s2", "tank/a/b@s2"]);
}

// Why: defect 8 of issue 18: `zfs destroy -nv` printed nothing (and -v, -p were refused);
// OpenZFS prints each victim and the space it would free, and -n changes nothing.
#[test]
fn dry_run_verbose_names_victims_and_space() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    five_snapshots(&lab, "tank/a");
    let used = |snap: &str, parsable: bool| {
        let mut args = vec!["get", "-H", "-o", "value"];
        if parsable {
            args.push("-p");
        }
        args.extend(["used", snap]);
        lab.ok("zfs", &args).trim().to_string()
    };
    let before = snapshots(&lab);
    // One snapshot's range frees exactly its USED.
    let out = lab.ok("zfs", &["destroy", "-nv", "tank/a@s2"]);
    assert_eq!(
        out,
        format!(
            "would destroy tank/a@s2\nwould reclaim {}\n",
            used("tank/a@s2", false)
        )
    );
    let out = lab.ok("zfs", &["destroy", "-np", "tank/a@s2"]);
    assert_eq!(
        out,
        format!("destroy\ttank/a@s2\nreclaim\t{}\n", used("tank/a@s2", true))
    );
    let out = lab.ok("zfs", &["destroy", "-n", "-v", "tank/a@s1%s2,s4"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "would destroy tank/a@s1",
            "would destroy tank/a@s2",
            "would destroy tank/a@s4"
        ]
    );
    assert!(lines[3].starts_with("would reclaim "), "{out}");
    assert_eq!(lines.len(), 4, "{out}");
    // A filesystem's dry run names each dependent, then the target.
    lab.ok("zfs", &["create", "tank/a/b"]);
    let out = lab.ok("zfs", &["destroy", "-rnv", "tank/a/b"]);
    assert_eq!(out, "would destroy tank/a/b\n");
    let out = lab.ok("zfs", &["destroy", "-rnv", "tank/a"]);
    assert!(
        out.ends_with("would destroy tank/a/b\nwould destroy tank/a\n"),
        "{out}"
    );
    assert!(out.contains("would destroy tank/a@s5\n"), "{out}");
    assert_eq!(snapshots(&lab), before);
    assert_eq!(filesystems(&lab), ["tank", "tank/a", "tank/a/b"]);

    // -v without -n: "will", and done.
    let out = lab.ok("zfs", &["destroy", "-v", "tank/a@s5"]);
    assert!(
        out.starts_with("will destroy tank/a@s5\nwill reclaim "),
        "{out}"
    );
    assert_eq!(snapshots(&lab), names("tank/a", &["s1", "s2", "s3", "s4"]));
}

// Why: defect 8 of issue 18: a list with a cloned snapshot is refused as a whole (without
// -R), in OpenZFS's words, and nothing of it is destroyed.
#[test]
fn list_with_a_cloned_snapshot_is_refused_whole() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    five_snapshots(&lab, "tank/a");
    lab.ok("zfs", &["clone", "tank/a@s2", "tank/c"]);
    let out = lab.run("zfs", &["destroy", "tank/a@s1%s3"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot destroy 'tank/a@s2': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\ntank/c\n"
        )
    );
    assert_eq!(snapshots(&lab).len(), 5);
    lab.ok("zfs", &["destroy", "-R", "tank/a@s1%s3"]);
    assert_eq!(snapshots(&lab), names("tank/a", &["s4", "s5"]));
    assert_eq!(filesystems(&lab), ["tank", "tank/a"]);
}

// Why: defect 9 of issue 18: `zfs destroy -rR tank/a@s` failed when the snapshot's clone
// had a clone of its own; OpenZFS destroys every dependent, deepest first.
#[test]
fn recursive_clones_destroy_clones_of_clones() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    lab.ok("zfs", &["clone", "tank/a@s", "tank/c"]);
    lab.ok("zfs", &["snapshot", "tank/c@t"]);
    lab.ok("zfs", &["clone", "tank/c@t", "tank/d"]);
    lab.ok("zfs", &["snapshot", "tank/d@u"]);
    lab.ok("zfs", &["clone", "tank/d@u", "tank/e"]);
    lab.ok("zfs", &["destroy", "-rR", "tank/a@s"]);
    assert_eq!(filesystems(&lab), ["tank", "tank/a"]);
    assert!(snapshots(&lab).is_empty());

    // The same through a filesystem's -R.
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    lab.ok("zfs", &["clone", "tank/a@s", "tank/c"]);
    lab.ok("zfs", &["snapshot", "tank/c@t"]);
    lab.ok("zfs", &["clone", "tank/c@t", "tank/d"]);
    lab.ok("zfs", &["destroy", "-R", "tank/a"]);
    assert_eq!(filesystems(&lab), ["tank"]);
}

// Why: defect 9 of issue 18: `zfs rename tank/a@s @t` took "@t" for a snapshot of another
// dataset; zfs_rename expands a leading '@' from the source. `zfs bookmark @s tank/a#b`
// expands the source from the bookmark's dataset.
#[test]
fn rename_and_bookmark_shorthands() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    lab.ok("zfs", &["rename", "tank/a@s", "@t"]);
    assert_eq!(snapshots(&lab), ["tank/a@t"]);
    lab.ok("zfs", &["bookmark", "@t", "tank/a#b"]);
    let out = lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "bookmark", "-r", "tank"],
    );
    assert_eq!(out, "tank/a#b\n");
    for (args, first) in [
        (&["bookmark"][..], "missing source argument"),
        (&["bookmark", "tank/a@t"], "missing bookmark argument"),
    ] {
        let out = lab.run("zfs", args);
        assert_eq!(out.code, 2);
        assert!(
            out.stderr.starts_with(&format!("{first}\nusage:")),
            "{}",
            out.stderr
        );
    }
    let out = lab.run("zfs", &["rename", "-r", "-p", "tank/a@t", "tank/a@u"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("-p and -r options are mutually exclusive\nusage:"),
        "{}",
        out.stderr
    );
    let out = lab.run("zfs", &["rename", "-r", "tank/a", "tank/b"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("source dataset for recursive rename must be a snapshot\nusage:"),
        "{}",
        out.stderr
    );
}

// Why: defect 1 of issue 18: `zfs destroy -r tank` / `-R tank` on a pool destroys every
// descendant and leaves the pool's root dataset (destroy_callback skips pools); without
// -r OpenZFS refuses.
#[test]
fn recursive_destroy_of_a_pool_leaves_its_root() {
    let lab = NoMountLab::new();
    for flag in ["-r", "-R"] {
        lab.ok("zfs", &["create", "tank/a"]);
        lab.ok("zfs", &["create", "tank/a/b"]);
        lab.ok("zfs", &["snapshot", "-r", "tank@s"]);
        lab.ok("zfs", &["clone", "tank/a@s", "tank/c"]);
        let out = lab.run("zfs", &["destroy", "tank"]);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (1, "cannot destroy 'tank': operation does not apply to pools\nuse 'zfs destroy -r tank' to destroy all datasets in the pool\nuse 'zpool destroy tank' to destroy the pool itself\n")
        );
        let out = lab.run("zfs", &["destroy", "-nv", flag, "tank"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stdout.ends_with("would destroy tank\n"),
            "{}",
            out.stdout
        );
        lab.ok("zfs", &["destroy", flag, "tank"]);
        assert_eq!(filesystems(&lab), ["tank"], "zfs destroy {flag} tank");
        assert!(snapshots(&lab).is_empty());
    }
}

// Why: defect 8 of issue 18: "would reclaim" of a range is what destroying the whole range
// frees (dsl_dataset_space_wouldfree), not the sum of each snapshot's USED: a file held by
// two snapshots only is in neither's USED, and in the range's reclaim. Through mounts (root
// and /dev/fuse, like mounts.rs) to write the file.
#[test]
fn range_reclaim_counts_blocks_shared_within_the_range() {
    use common::mount_lab::MountLab;
    use std::io::Write;
    let lab = MountLab::new("tank/fs");
    let file = lab.mnt("fs/data");
    let mut chunk = vec![0u8; 1 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = std::fs::File::create(&file).unwrap();
    for _ in 0..4 {
        for word in chunk.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        out.write_all(&chunk).unwrap();
    }
    out.sync_all().unwrap();
    drop(out);
    lab.ok("zfs", &["snapshot", "tank/fs@s1"]);
    lab.ok("zfs", &["snapshot", "tank/fs@s2"]);
    std::fs::remove_file(&file).unwrap();
    lab.ok("zfs", &["snapshot", "tank/fs@s3"]);
    let number = |args: &[&str]| -> u64 {
        let out = lab.ok("zfs", args);
        let line = out.lines().last().unwrap_or_default().to_string();
        line.rsplit('\t')
            .next()
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{out:?}"))
    };
    let used1 = number(&["get", "-Hp", "-o", "value", "used", "tank/fs@s1"]);
    let used2 = number(&["get", "-Hp", "-o", "value", "used", "tank/fs@s2"]);
    assert_eq!(number(&["destroy", "-np", "tank/fs@s1"]), used1);
    assert_eq!(number(&["destroy", "-np", "tank/fs@s2"]), used2);
    let range = number(&["destroy", "-np", "tank/fs@s1%s2"]);
    assert!(used1 + used2 < 1 << 20, "{used1} {used2}");
    assert!(range >= 4 << 20, "{range}");
    // The same through a comma list: one run of consecutive snapshots.
    assert_eq!(number(&["destroy", "-np", "tank/fs@s2,s1"]), range);
}

// Why: defect 6 of issue 18: `zfs send -i X -i X` was accepted; zfs_do_send allows one
// incremental source (-i or -I) and answers a second with its usage, exit 2.
#[test]
fn send_with_two_incremental_sources_is_a_usage_error() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s1"]);
    lab.ok("zfs", &["snapshot", "tank/a@s2"]);
    for args in [
        &["send", "-i", "tank/a@s1", "-i", "tank/a@s1", "tank/a@s2"][..],
        &["send", "-I", "tank/a@s1", "-i", "tank/a@s1", "tank/a@s2"],
        &["send", "-i", "@s1", "-I", "@s1", "tank/a@s2"],
    ] {
        let out = lab.run("zfs", args);
        assert_eq!(out.code, 2, "zfs {args:?}");
        assert!(out.stderr.starts_with("usage:"), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    }
}

// Why: defect 6 of issue 18: `zfs create -o p=v -o p=w` was accepted (the last value won);
// zfs_main.c's parseprop refuses a property given twice with its usage, exit 2, before
// anything is created. `zfs clone` reads its -o the same way.
#[test]
fn create_with_a_property_twice_is_a_usage_error() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    for args in [
        &["create", "-o", "atime=off", "-o", "atime=on", "tank/b"][..],
        &[
            "create",
            "-o",
            "user:x=1",
            "-o",
            "atime=off",
            "-o",
            "user:x=1",
            "tank/b",
        ],
        &[
            "clone",
            "-o",
            "atime=off",
            "-o",
            "atime=off",
            "tank/a@s",
            "tank/b",
        ],
    ] {
        let out = lab.run("zfs", args);
        assert_eq!(out.code, 2, "zfs {args:?}");
        let prop = if args.contains(&"user:x=1") {
            "user:x"
        } else {
            "atime"
        };
        assert!(
            out.stderr.starts_with(&format!(
                "property '{prop}' specified multiple times\nusage:"
            )),
            "{}",
            out.stderr
        );
    }
    assert_eq!(filesystems(&lab), ["tank", "tank/a"]);
}

// Why: defect 9 of issue 18: `zfs destroy -R fs@s` refused when the clone had a clone of
// its own; with both mounted, every dependent goes (unmounted), and -v names them in
// zfs_iter_dependents' order, deepest first, after the snapshot and its reclaim.
#[test]
fn recursive_clones_of_mounted_clones_verbose_order() {
    use common::mount_lab::{mounted, MountLab};
    let lab = MountLab::new("tank/fs");
    lab.ok("zfs", &["snapshot", "tank/fs@s"]);
    lab.ok("zfs", &["clone", "tank/fs@s", "tank/c"]);
    lab.ok("zfs", &["snapshot", "tank/c@t"]);
    lab.ok("zfs", &["clone", "tank/c@t", "tank/d"]);
    assert!(mounted(&lab.mnt("c")) && mounted(&lab.mnt("d")));
    let out = lab.ok("zfs", &["destroy", "-v", "-R", "tank/fs@s"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(lines[1].starts_with("will reclaim "), "{out}");
    assert_eq!(
        [lines[0], lines[2], lines[3], lines[4]],
        [
            "will destroy tank/fs@s",
            "will destroy tank/d",
            "will destroy tank/c@t",
            "will destroy tank/c"
        ]
    );
    assert_eq!(
        lab.ok("zfs", &["list", "-H", "-o", "name", "-t", "all"]),
        "tank\ntank/fs\n"
    );
    assert!(!mounted(&lab.mnt("c")) && !mounted(&lab.mnt("d")));
}
