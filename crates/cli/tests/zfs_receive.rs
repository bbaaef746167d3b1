//! `zfs receive` semantics beyond the stream, through the daemon and real mounts: the
//! `received` property source (`-p`/`-R` streams, `-o`, `-x`, `zfs inherit` and `inherit
//! -S`), `-F` with an incremental `-R` stream destroying what the sender no longer has
//! (`-v` says what), and receives killed with the daemon: without `-s` their half-written
//! datasets are destroyed when the pool is imported again, with `-s` they stay resumable.
//! And OpenZFS's own dedup fixtures (`rsend/dedup.zsend`, `rsend/dedup_encrypted_zvol.zsend`
//! of the ZTS, installed with the oracle): refused with libzfs's words, then received after
//! `zstream redup` where the stream is one Zetta can take.

mod common;

use common::host::{installed, tree_digest, Host};
use std::io::Write;
use std::process::Stdio;

/// `property\tvalue\tsource` lines of `zfs get`.
fn get(host: &Host, props: &str, fs: &str) -> String {
    host.zfs_ok(&["get", "-H", "-o", "property,value,source", props, fs])
}

/// Values carried by a `-p` stream show as `received`; `zfs set` overrides them, `zfs
/// inherit -S` brings them back, `zfs inherit` hides them; `-o` sets locally and `-x`
/// keeps a value out; `-R` carries them too.
#[test]
fn received_properties_show_their_source() {
    let host = Host::new();
    host.pool("tank", 256 << 20, false);
    host.zfs_ok(&[
        "create",
        "-o",
        "compression=gzip",
        "-o",
        "org.test:tag=blue",
        "tank/src",
    ]);
    host.sh_ok("zfs snapshot tank/src@a && zfs send -p tank/src@a | zfs receive tank/copy");
    assert_eq!(
        get(&host, "compression,org.test:tag", "tank/copy"),
        "compression\tgzip\treceived\norg.test:tag\tblue\treceived\n"
    );
    host.zfs_ok(&["set", "compression=zle", "tank/copy"]);
    assert_eq!(
        get(&host, "compression", "tank/copy"),
        "compression\tzle\tlocal\n"
    );
    host.zfs_ok(&["inherit", "-S", "compression", "tank/copy"]);
    assert_eq!(
        get(&host, "compression", "tank/copy"),
        "compression\tgzip\treceived\n"
    );
    host.zfs_ok(&["inherit", "org.test:tag", "tank/copy"]);
    host.zfs_ok(&["inherit", "compression", "tank/copy"]);
    assert_eq!(
        get(&host, "compression,org.test:tag", "tank/copy"),
        "compression\ton\tdefault\norg.test:tag\t-\t-\n"
    );
    host.zfs_ok(&["inherit", "-S", "org.test:tag", "tank/copy"]);
    assert_eq!(
        get(&host, "org.test:tag", "tank/copy"),
        "org.test:tag\tblue\treceived\n"
    );
    // A child inherits a received value from its parent like any other.
    host.zfs_ok(&["create", "tank/copy/child"]);
    assert_eq!(
        get(&host, "org.test:tag", "tank/copy/child"),
        "org.test:tag\tblue\tinherited from tank/copy\n"
    );

    host.sh_ok(
        "zfs send -p tank/src@a | zfs receive -o org.test:tag=green -x compression tank/other",
    );
    assert_eq!(
        get(&host, "compression,org.test:tag", "tank/other"),
        "compression\ton\tdefault\norg.test:tag\tgreen\tlocal\n"
    );
    host.sh_ok("zfs send -R tank/src@a | zfs receive tank/replica");
    assert_eq!(
        get(&host, "compression,org.test:tag", "tank/replica"),
        "compression\tgzip\treceived\norg.test:tag\tblue\treceived\n"
    );
}

/// `zfs send -R -I` received with `-F`: the filesystem and the snapshots the sender
/// destroyed go on the receiving side too (and a snapshot only the receiver had), each
/// named by `-v`; without `-F` nothing is destroyed.
#[test]
fn force_replication_receive_destroys_what_the_sender_destroyed() {
    let host = Host::new();
    host.pool("tank", 256 << 20, false);
    for fs in ["tank/top", "tank/top/a", "tank/top/b"] {
        host.zfs_ok(&["create", fs]);
    }
    host.sh_ok(&format!(
        "echo 1 > {0}/f && zfs snapshot -r tank/top@1 && echo 2 > {0}/f && zfs snapshot -r tank/top@2 \
         && zfs send -R tank/top@2 | zfs receive tank/backup",
        host.mnt("tank/top")
    ));
    host.sh_ok(
        "zfs destroy -r tank/top/b && zfs destroy -r tank/top@1 && zfs snapshot -r tank/top@3",
    );
    host.zfs_ok(&["snapshot", "tank/backup/a@mine"]);
    let names = || host.zfs_ok(&["list", "-H", "-r", "-t", "all", "-o", "name", "tank/backup"]);
    let before = names();
    let out = host.sh("zfs send -R -I @2 tank/top@3 | zfs receive tank/backup");
    assert_ne!(out.code, 0, "without -F the receiver's own @mine blocks it");
    assert!(
        before.lines().all(|n| names().contains(n)),
        "nothing destroyed"
    );

    let out = host.sh_ok("zfs send -R -I @2 tank/top@3 | zfs receive -F -v tank/backup");
    for victim in [
        "tank/backup/b",
        "tank/backup@1",
        "tank/backup/a@1",
        "tank/backup/a@mine",
    ] {
        assert!(
            out.contains(&format!("attempting destroy {victim}\n")),
            "{out}"
        );
    }
    assert_eq!(
        names(),
        "tank/backup\ntank/backup@2\ntank/backup@3\ntank/backup/a\ntank/backup/a@2\ntank/backup/a@3\n"
    );
    assert_eq!(
        tree_digest(&host, &host.mnt("tank/top")),
        tree_digest(&host, &host.mnt("tank/backup"))
    );
}

/// The daemon is killed while receives wait for the rest of their streams (their partial
/// state committed by `zpool sync`): when the next command starts a daemon and it imports
/// the pool, the half-received new filesystem and the hidden `%recv` of an existing one
/// are gone, while the `-s` receive keeps its token and `zfs send -t` finishes it.
#[test]
fn receives_killed_with_the_daemon_are_cleaned_at_import() {
    let host = Host::new();
    let disks = host.pool("tank", 512 << 20, false);
    host.zfs_ok(&["create", "-o", "compression=off", "tank/src"]);
    let src = host.mnt("tank/src");
    host.sh_ok(&format!(
        "head -c 8M /dev/urandom > {src}/a && zfs snapshot tank/src@a && \
         head -c 8M /dev/urandom > {src}/b && zfs snapshot tank/src@b && \
         zfs send tank/src@a > full.zfs && zfs send -i @a tank/src@b > inc.zfs && \
         zfs receive tank/old < full.zfs"
    ));
    let full = std::fs::read(host.lab.path("full.zfs")).unwrap();
    let inc = std::fs::read(host.lab.path("inc.zfs")).unwrap();
    let mut receives = Vec::new();
    for (args, stream) in [
        (vec!["receive", "tank/new"], &full),
        (vec!["receive", "tank/old"], &inc),
        (vec!["receive", "-s", "tank/kept"], &full),
    ] {
        let mut command = host.lab.command("zfs");
        command
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = host.lab.spawn(&mut command);
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&stream[..stream.len() / 2]).unwrap();
        receives.push((child, stdin));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    host.sh_ok("zpool sync tank");
    let pid = std::fs::read_to_string(host.lab.dir.join("run/zetta.pid")).unwrap();
    host.sh_ok(&format!("kill -9 {}", pid.trim()));
    for (mut child, stdin) in receives {
        drop(stdin);
        assert!(!child.wait().unwrap().success());
    }

    let out = host.lab.zfs(&["list", "tank/new"]);
    assert_eq!(
        out.stderr,
        "cannot open 'tank/new': dataset does not exist\n"
    );
    let token = host.zfs_ok(&[
        "get",
        "-H",
        "-o",
        "value",
        "receive_resume_token",
        "tank/kept",
    ]);
    assert!(token.starts_with("1-"), "{token}");
    host.sh_ok(&format!(
        "zfs send -t {} | zfs receive -s tank/kept",
        token.trim()
    ));
    assert_eq!(
        tree_digest(&host, &host.mnt("tank/kept")),
        tree_digest(&host, &format!("{src}/.zfs/snapshot/a"))
    );
    let work_left = host.with_engine(&disks, |spa| {
        spa.lookup_dir("tank/old/%recv").unwrap().is_some()
    });
    assert!(
        !work_left,
        "the hidden work dataset of the killed incremental is gone"
    );
    host.sh_ok("zfs receive tank/old < inc.zfs");
}

/// The ZTS's fixtures, as scripts/oracle.sh installs them.
const RSEND_FIXTURES: &str = "/opt/zetta-oracle/usr/share/zfs/zfs-tests/tests/functional/rsend";
const ZSTREAM: &str = "/opt/zetta-oracle/sbin/zstream";

/// libzfs's refusal of a deduplicated (sub)stream (`zfs_receive_impl`).
const DEDUP_REFUSED: &str = "cannot receive: stream has deprecated feature: dedup, try 'zstream \
                             redup [send in a file] | zfs recv [...]'\n";

/// `bzcat FIXTURE.bz2 > NAME` in the lab; the path of the stream.
fn unpack_fixture(host: &Host, fixture: &str, name: &str) -> String {
    let path = host.lab.path(name);
    host.sh_ok(&format!("bzcat < '{RSEND_FIXTURES}/{fixture}' > '{path}'"));
    path
}

// Why: issue 15 asks that OpenZFS's own `rsend/dedup.zsend` be received after `zstream
// redup` (the same path was tested with a dedup stream zfs-fuse made, not with OpenZFS's
// fixture). The ZTS test `rsend/recv_dedup` receives `zstream redup dedup.zsend | zfs recv
// -d POOL/recv` and compares the tree with `fs.tar.gz` by `directory_diff` (rsync
// -nicaAHX with user xattrs, --delete): the same here. Received directly, the stream is
// refused with libzfs's words for a deduplicated substream (zfs_receive_impl), nothing made.
#[test]
fn openzfs_dedup_fixture_after_zstream_redup() {
    if !installed(&format!("{RSEND_FIXTURES}/dedup.zsend.bz2")) || !installed(ZSTREAM) {
        return;
    }
    let host = Host::new();
    host.pool("tank", 256 << 20, false);
    let stream = unpack_fixture(&host, "dedup.zsend.bz2", "dedup.zsend");
    host.zfs_ok(&["create", "tank/recv"]);
    let names = || host.zfs_ok(&["list", "-H", "-r", "-t", "all", "-o", "name", "tank/recv"]);
    let refused = host.sh(&format!("zfs receive -d tank/recv < '{stream}'"));
    assert_eq!(refused.code, 1);
    assert_eq!(refused.stderr, DEDUP_REFUSED);
    assert_eq!(names(), "tank/recv\n", "nothing received");

    host.sh_ok(&format!(
        "{ZSTREAM} redup '{stream}' | zfs receive -d tank/recv"
    ));
    assert_eq!(
        names(),
        "tank/recv\ntank/recv/fs\ntank/recv/fs@snap\ntank/recv/fs/subfs\ntank/recv/fs/subfs@snap\n"
    );
    let expected = host.lab.path("tar");
    host.sh_ok(&format!(
        "mkdir '{expected}' && tar --directory '{expected}' -xzf '{RSEND_FIXTURES}/fs.tar.gz'"
    ));
    // directory_diff: rsync itemizes every difference (contents, modes, owners, times,
    // hard links, ACLs, user xattrs, files on one side only); none is expected.
    let diff = host.sh_ok(&format!(
        "rsync -nicaAHX '--filter=-x! user.*' --delete '{expected}/fs/' '{}/'",
        host.mnt("tank/recv/fs")
    ));
    assert_eq!(diff, "", "rsync itemizes differences");
    // 14 files, two of them in subfs: the fixture's tree is really there, not two empties.
    let files = host.sh_ok(&format!(
        "find '{}' -type f | wc -l",
        host.mnt("tank/recv/fs")
    ));
    assert_eq!(files.trim(), "14");
}

// Why: the ZTS's `rsend/recv_dedup_encrypted_zvol` fixture is a raw (-w), recursive,
// deduplicated stream of an encrypted volume. Zetta has no encryption: directly it is
// refused as deduplicated, after `zstream redup` as a raw stream (libzfs's words for a
// feature the receiver lacks: RAW, LARGE_DNODE), and in both cases the pool is untouched.
#[test]
fn openzfs_dedup_encrypted_zvol_fixture_is_refused() {
    if !installed(&format!("{RSEND_FIXTURES}/dedup_encrypted_zvol.zsend.bz2"))
        || !installed(ZSTREAM)
    {
        return;
    }
    let host = Host::new();
    host.pool("tank", 256 << 20, false);
    let stream = unpack_fixture(&host, "dedup_encrypted_zvol.zsend.bz2", "dev.zsend");
    let names = || host.zfs_ok(&["list", "-H", "-r", "-t", "all", "-o", "name", "tank"]);
    let before = names();
    let refused = host.sh(&format!("zfs receive tank/recv < '{stream}'"));
    assert_eq!(refused.code, 1);
    assert_eq!(refused.stderr, DEDUP_REFUSED);
    assert_eq!(names(), before);
    let refused = host.sh(&format!(
        "{ZSTREAM} redup '{stream}' | zfs receive tank/recv"
    ));
    assert_eq!(refused.code, 1);
    // features 0x1420000 = LZ4 | COMPRESSED | RAW (zstream dump shows 1420003 before the
    // redup: DEDUP and DEDUPPROPS too); RAW is the one Zetta's receiver does not take.
    assert_eq!(
        refused.stderr,
        "cannot receive: stream has unsupported feature, feature flags = 1420000 (unknown \
         flags = 1000000)\n"
    );
    assert_eq!(names(), before, "target untouched");
    assert_eq!(host.lab.zfs(&["list", "tank/recv"]).code, 1);
}
