//! `zfs receive` semantics beyond the stream, through the daemon and real mounts: the
//! `received` property source (`-p`/`-R` streams, `-o`, `-x`, `zfs inherit` and `inherit
//! -S`), `-F` with an incremental `-R` stream destroying what the sender no longer has
//! (`-v` says what), and receives killed with the daemon: without `-s` their half-written
//! datasets are destroyed when the pool is imported again, with `-s` they stay resumable.

mod common;

use common::host::{tree_digest, Host};
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
