//! `zfs promote` and the space properties through the real binary (no mounts): the words
//! admins and scripts read — refusals, `origin`/`clones`, `zfs list -o space`,
//! `compressratio` as `1.00x` (and `1.00` with `-p`), `logicalused`, reservations and the
//! refusal of one larger than the space available.

mod common;

use common::NoMountLab as Lab;

/// What these tests ask of the lab besides running commands.
trait SpaceLab {
    fn fails(&self, args: &[&str]) -> (i32, String);
    fn number(&self, prop: &str, name: &str) -> u64;
}

impl SpaceLab for Lab {
    fn fails(&self, args: &[&str]) -> (i32, String) {
        let out = self.run("zfs", args);
        (out.code, out.stderr)
    }

    /// `zfs get -Hp -o value prop name` as a number.
    fn number(&self, prop: &str, name: &str) -> u64 {
        let value = self.ok("zfs", &["get", "-Hp", "-o", "value", prop, name]);
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{prop} of {name}: {value:?}"))
    }
}

/// `zfs promote`: OpenZFS's refusals word for word (exit 1, usage errors exit 2), the
/// snapshots and `origin`/`clones` after it, and the classic use — destroy the original.
#[test]
fn zfs_promote_and_its_refusals() {
    let lab = Lab::new();
    lab.ok("zfs", &["create", "tank/fs"]);
    lab.ok("zfs", &["snapshot", "tank/fs@a"]);
    lab.ok("zfs", &["snapshot", "tank/fs@b"]);
    lab.ok("zfs", &["clone", "tank/fs@b", "tank/clone"]);
    lab.ok("zfs", &["snapshot", "tank/fs@c"]);
    assert_eq!(
        lab.fails(&["promote", "tank/fs"]),
        (
            1,
            "cannot promote 'tank/fs': not a cloned filesystem\n".to_string()
        )
    );
    assert_eq!(
        lab.fails(&["promote", "tank/nothing"]),
        (
            1,
            "cannot open 'tank/nothing': dataset does not exist\n".to_string()
        )
    );
    assert_eq!(
        lab.fails(&["promote", "tank/fs@a"]),
        (
            1,
            "cannot open 'tank/fs@a': snapshot delimiter '@' is not expected here\n".to_string()
        )
    );
    let (code, stderr) = lab.fails(&["promote"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("missing clone filesystem argument\n"),
        "{stderr}"
    );
    let (code, stderr) = lab.fails(&["promote", "tank/clone", "tank/fs"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("too many arguments\n"), "{stderr}");
    lab.ok("zfs", &["snapshot", "tank/clone@a"]);
    assert_eq!(
        lab.fails(&["promote", "tank/clone"]),
        (
            1,
            "cannot promote 'tank/clone': conflicting snapshot 'a' from parent 'tank/fs@b'\n"
                .to_string()
        )
    );
    lab.ok("zfs", &["rename", "tank/clone@a", "tank/clone@mine"]);
    lab.ok("zfs", &["promote", "tank/clone"]);
    assert_eq!(
        lab.ok(
            "zfs",
            &[
                "list",
                "-H",
                "-o",
                "name",
                "-t",
                "snapshot",
                "-s",
                "createtxg"
            ]
        ),
        "tank/clone@a\ntank/clone@b\ntank/fs@c\ntank/clone@mine\n"
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &[
                "get",
                "-H",
                "-o",
                "value",
                "origin",
                "tank/fs",
                "tank/clone"
            ]
        ),
        "tank/clone@b\n-\n"
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["get", "-H", "-o", "value", "clones", "tank/clone@b"]
        ),
        "tank/fs\n"
    );
    assert_eq!(
        lab.fails(&["promote", "tank/clone"]),
        (
            1,
            "cannot promote 'tank/clone': not a cloned filesystem\n".to_string()
        )
    );
    lab.ok("zfs", &["destroy", "-r", "tank/fs"]);
    assert_eq!(
        lab.ok(
            "zfs",
            &["list", "-H", "-o", "name", "-t", "all", "-r", "tank"]
        ),
        "tank\ntank/clone\ntank/clone@a\ntank/clone@b\ntank/clone@mine\n"
    );
    let history = lab.ok("zpool", &["history", "tank"]);
    assert!(history.contains("zfs promote tank/clone"), "{history}");
}

/// `zfs list -o space` adds up (USED = USEDSNAP + USEDDS + USEDREFRESERV + USEDCHILD), a
/// reservation shows in the parent's USEDCHILD and in everyone's AVAIL, one larger than
/// the space available is refused word for word, as is a quota below what is reserved;
/// `compressratio` prints two decimals with `x` (none with `-p`).
#[test]
fn zfs_space_columns_and_limits() {
    let lab = Lab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["create", "tank/b"]);
    let avail = lab.number("available", "tank/b");
    lab.ok("zfs", &["set", "reservation=100M", "tank/a"]);
    // (AVAIL also moves by the few KiB each commit's metadata takes.)
    let near = |got: u64, want: u64| got.abs_diff(want) < 1 << 20;
    let now = lab.number("available", "tank/b");
    assert!(near(now, avail - (100 << 20)), "{now} vs {avail} - 100M");
    assert!(lab.number("usedbychildren", "tank") >= 100 << 20);
    lab.ok("zfs", &["set", "refreservation=10M", "tank/b"]);
    let refreserv = lab.number("usedbyrefreservation", "tank/b");
    assert_eq!(refreserv, (10 << 20) - lab.number("referenced", "tank/b"));
    for line in lab
        .ok("zfs", &["list", "-Hp", "-o", "space", "-r", "tank"])
        .lines()
    {
        let f: Vec<u64> = line
            .split('\t')
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect();
        // AVAIL USED USEDSNAP USEDDS USEDREFRESERV USEDCHILD
        assert_eq!(f[1], f[2] + f[3] + f[4] + f[5], "{line}");
    }
    assert_eq!(
        lab.fails(&["set", "reservation=2G", "tank/b"]),
        (
            1,
            "cannot set property for 'tank/b': size is greater than available space\n".to_string()
        )
    );
    assert_eq!(
        lab.fails(&["set", "refreservation=2G", "tank/b"]),
        (
            1,
            "cannot set property for 'tank/b': size is greater than available space\n".to_string()
        )
    );
    assert_eq!(
        lab.fails(&["set", "quota=50M", "tank/a"]),
        (
            1,
            "cannot set property for 'tank/a': size is less than current used or reserved space\n"
                .to_string()
        )
    );
    assert_eq!(
        lab.fails(&["create", "-o", "reservation=2G", "tank/c"]),
        (1, "cannot create 'tank/c': out of space\n".to_string())
    );
    assert_eq!(
        lab.ok("zfs", &["list", "-H", "-o", "name", "-r", "tank"]),
        "tank\ntank/a\ntank/b\n"
    );
    lab.ok("zfs", &["set", "reservation=none", "tank/a"]);
    let now = lab.number("available", "tank/b");
    assert!(
        near(now, avail),
        "{now} vs {avail}: its own refreservation is its to use"
    );
    // Ratios: a fresh filesystem holds only metadata; the format is OpenZFS's.
    let ratio = lab.ok(
        "zfs",
        &["get", "-H", "-o", "value", "compressratio", "tank/a"],
    );
    assert!(
        ratio.trim_end().ends_with('x') && ratio.contains('.'),
        "{ratio:?}"
    );
    let parsable = lab.ok(
        "zfs",
        &["get", "-Hp", "-o", "value", "refcompressratio", "tank/a"],
    );
    let (whole, decimals) = parsable.trim().split_once('.').unwrap();
    assert!(
        whole.parse::<u64>().unwrap() >= 1 && decimals.len() == 2,
        "{parsable:?}"
    );
    assert!(lab.number("logicalused", "tank/a") > 0);
    // Logical figures count lsize: since format 6 a fresh filesystem's ZAPs are 512-byte
    // micro ZAPs in 4 KiB sectors, so, as on OpenZFS (42.5K logical in 96K), its
    // logicalreferenced is below its referenced.
    let logical = lab.number("logicalreferenced", "tank/a");
    assert!(logical > 0 && logical <= lab.number("logicalused", "tank/a"));
}
