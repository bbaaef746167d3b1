//! `zpool history [-il]` of real OpenZFS pools imported read-only, end to end through the CLI
//! and the daemon, against the expected output OpenZFS's own test suite ships
//! (functional/history/history_007_pos.ksh).
//!
//! Time zone: history_007_pos.ksh runs `TZ=$TIMEZONE zpool history` with TIMEZONE defaulting
//! to America/Denver (history.cfg), the zone its orig_history.txt files were printed in. The
//! times are formatted by the daemon, so every command of these labs (the first one starts
//! the daemon) runs with TZ=America/Denver.

mod common;

use common::openzfs::oracle;
use common::openzfs::place;
use common::{Lab, Output};

const TIMEZONE: &str = "America/Denver";

fn zpool(lab: &Lab, args: &[&str]) -> Output {
    let mut command = lab.command("zpool");
    command.env("TZ", TIMEZONE).args(args);
    lab.run(command)
}

fn ok(lab: &Lab, args: &[&str]) -> String {
    let out = zpool(lab, args);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
    out.stdout
}

fn import_read_only(lab: &Lab, dir: &std::path::Path, pool: &str) {
    let root = lab.dir.join("root");
    ok(
        lab,
        &[
            "import",
            "-d",
            dir.to_str().unwrap(),
            "-o",
            "readonly=on",
            "-R",
            root.to_str().unwrap(),
            pool,
        ],
    );
}

// Why: `zpool history` of an imported OpenZFS pool failed ("the history of OpenZFS pools
// cannot be read yet"). OpenZFS's history_007_pos imports the i386 and the SPARC pool and
// compares `TZ=America/Denver zpool history | grep -v '^$'` with orig_history.txt after
// dropping the last two lines (the export ending the fixture and the import it logs
// itself). A read-only import logs nothing, so exactly one line follows the original
// history: the fixture's final `zpool export history_pool`.
#[test]
fn migrated_pools_history_equals_orig_history() {
    let lab = Lab::new();
    for arch in ["i386", "sparc"] {
        let dir = place(&lab, arch, &[&format!("history/{arch}.migratedpool.DAT.Z")]);
        import_read_only(&lab, &dir, "history_pool");
        let out = ok(&lab, &["history", "history_pool"]);
        let ours: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
        let orig_text = std::fs::read_to_string(oracle::functional(&format!(
            "history/{arch}.orig_history.txt"
        )))
        .unwrap();
        let orig: Vec<&str> = orig_text.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(ours.len(), orig.len() + 1, "{arch}:\n{out}");
        assert_eq!(ours[..orig.len()], orig[..], "{arch}:\n{out}");
        let last = ours[orig.len()];
        assert!(
            last.ends_with(" zpool export history_pool") && last.starts_with("2007-04-05."),
            "{arch}: {last}"
        );
        // OpenZFS ends the pool's history with an empty line.
        assert!(out.ends_with("\n\n"), "{arch}: {out:?}");
        // -l adds who and where; these 2006 Solaris records carry neither.
        let long = ok(&lab, &["history", "-l", "history_pool"]);
        assert!(
            long.contains("\n2006-10-20.13:18:37 zfs create history_pool/fs []\n")
                || long.contains("\n2006-10-27.03:13:48 zfs create history_pool/fs []\n"),
            "{arch}: {long}"
        );
        ok(&lab, &["export", "history_pool"]);
    }
}

// Why: -i and -l print OpenZFS 2.3's shapes for internal events (`[txg:N] <op> <ds> (<id>)
// ...`) and the long suffix (`[user 0 (root) on host]`) — here from the zstd pool, whose
// history mixes big-endian (FreeBSD powerpc64) and little-endian native records; a pool
// before version 4 is refused in OpenZFS's words, after the heading, exit 1; Zetta's own
// pools accept -i (they log no internal events) and still refuse -l.
#[test]
fn internal_events_long_format_and_old_pools() {
    let lab = Lab::new();
    let dir = place(
        &lab,
        "pools",
        &[
            "compression/testpool_zstd.tar.gz",
            "cli_root/zpool_upgrade/blockfiles/zfs-pool-v1.dat.bz2",
        ],
    );
    import_read_only(&lab, &dir, "testpool_zstd");
    let plain = ok(&lab, &["history", "testpool_zstd"]);
    assert!(
        plain.starts_with("History for 'testpool_zstd':\n"),
        "{plain}"
    );
    assert!(plain.contains(" zpool create "), "{plain}");
    assert!(!plain.contains("[txg:"), "{plain}");
    let internal = ok(&lab, &["history", "-i", "testpool_zstd"]);
    for line in [
        // A big-endian record, its time in Denver's zone (06:57:49 UTC).
        "\n2021-05-12.00:57:49 [txg:4] create pool version 5000; software version \
         zfs-0.7.0-3175-g184df27ee; uts fbsdppc64 13.0-RELEASE 1300139 powerpc\n",
        "\n2021-05-12.00:57:49 [txg:4] set feature@async_destroy=enabled\n",
        "\n2021-05-12.00:58:04 [txg:10] create testpool/ppc64_fbsd (76)  \n",
        "\n2021-05-12.00:58:09 ioctl create\n    input:\n        type: 2\n",
    ] {
        assert!(internal.contains(line), "{line:?} in\n{internal}");
    }
    let long = ok(&lab, &["history", "-il", "testpool_zstd"]);
    for line in [
        "\n2021-05-12.00:57:50 zpool create testpool /mnt/zstd_zts [user 0 (root) on \
         fbsdppc64:freebsd]\n",
        "\n2021-05-12.00:58:04 [txg:10] create testpool/ppc64_fbsd (76)   [on fbsdppc64]\n",
        // A little-endian record written on Linux; an ioctl's suffix has a line of its own.
        "\n [user 0 (root) on steamer:linux]\n2021-05-19.12:06:55 zpool trim testpool_zstd \
         [user 0 (root) on steamer:linux]\n",
        "\n2021-05-19.12:10:01 zpool export testpool_zstd [user 0 (root) on steamer:linux]\n\n",
    ] {
        assert!(long.contains(line), "{line:?} in\n{long}");
    }
    ok(&lab, &["export", "testpool_zstd"]);

    import_read_only(&lab, &dir, "v1-pool");
    let out = zpool(&lab, &["history", "v1-pool"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stdout, "History for 'v1-pool':\n");
    assert_eq!(
        out.stderr,
        "cannot get history for pool 'v1-pool', pool must be upgraded: unsupported version or \
         feature\n"
    );
    ok(&lab, &["export", "v1-pool"]);

    let disk = lab.disk("d0", 256 << 20);
    ok(&lab, &["create", "zp", &disk]);
    // Zetta's pools keep no who or zone: -l prints each record with the host it names,
    // as OpenZFS prints a record without them (` [on host]`; zpool_history_002_pos).
    let own = ok(&lab, &["history", "-i", "zp"]);
    assert!(own.starts_with("History for 'zp':\n"), "{own}");
    assert!(own.contains(" zpool create zp "), "{own}");
    let long = ok(&lab, &["history", "-l", "zp"]);
    let create = long
        .lines()
        .find(|l| l.contains(" zpool create zp "))
        .unwrap_or_else(|| panic!("{long}"));
    assert!(
        create.ends_with(']') && create.contains(" [on "),
        "{create}"
    );
    let both = ok(&lab, &["history", "-il", "zp"]);
    assert!(both.contains(" zpool create zp "), "{both}");
    ok(&lab, &["destroy", "zp"]);
}
