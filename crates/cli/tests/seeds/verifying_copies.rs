//! Post "Verifying copies" (seed 000): `/usr/bin` copied with rsync onto a dataset; `du`
//! shows less than the source with lz4 (compression "tricked us": `compressratio`) and a
//! different figure with compression off (on-disk space), `du --apparent-size` the same
//! bytes; replicated with `zfs send | zfs receive` and with syncoid, and `tar -c . | md5sum`
//! run in each copy gives one digest.

use crate::common::host::{installed, tree_digest, Host};

const SYNCOID: &str = "/usr/sbin/syncoid";

/// `du -s` in bytes: on-disk, or with `--apparent-size` the data.
fn du(host: &Host, dir: &str, apparent: bool) -> u64 {
    let flag = if apparent { "--apparent-size " } else { "" };
    host.sh_ok(&format!("du -s --block-size=1 {flag}{dir}"))
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Why: the post's commands as close as a test allows. `zfs create banshee/tmp` (lz4
/// inherited), `rsync -a /usr/bin`: "du -hs /usr/bin ; du -hs /banshee/tmp/bin  353M 215M
/// ... compression tricked us ... compressratio 1.55x"; then `zfs create -o
/// compression=off`, `rsync -haH /usr/bin`: du differs again (on-disk space of different
/// filesystems) while `--apparent-size` agrees; then replication (`zfs send | zfs
/// receive` and syncoid), and `tar -c . | md5sum` in each copy, one digest for all three
/// (the deterministic `--sort=name --numeric-owner` digest agrees too).
#[test]
fn verifying_copies_post() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    host.pool("banshee", 2 << 30, false);
    host.zfs_ok(&["set", "compression=lz4", "banshee"]);
    let tmp = host.mnt("banshee/tmp");
    // root@banshee:/# zfs create banshee/tmp ; rsync -a /usr/bin /banshee/tmp/
    host.zfs_ok(&["create", "banshee/tmp"]);
    host.sh_ok(&format!("rsync -a /usr/bin {tmp}/"));
    host.sh_ok("zpool sync banshee; sleep 1.2");
    let (source, compressed) = (
        du(&host, "/usr/bin", false),
        du(&host, &format!("{tmp}/bin"), false),
    );
    let ratio: f64 = host
        .zfs_ok(&["get", "-H", "-o", "value", "compressratio", "banshee/tmp"])
        .trim()
        .trim_end_matches('x')
        .parse()
        .unwrap();
    eprintln!("du /usr/bin {source}, lz4 copy {compressed}, compressratio {ratio:.2}x");
    // 353M /usr/bin, 215M /banshee/tmp/bin; compressratio 1.55x
    assert!(ratio > 1.2, "compressratio {ratio}");
    assert!(
        (compressed as f64) * 1.2 < source as f64,
        "du {compressed} of {source}"
    );
    // root@banshee:/# zfs destroy -r banshee/tmp ; zfs create -o compression=off banshee/tmp
    host.zfs_ok(&["destroy", "-r", "banshee/tmp"]);
    host.zfs_ok(&["create", "-o", "compression=off", "banshee/tmp"]);
    host.sh_ok(&format!("rsync -haH /usr/bin {tmp}/"));
    host.sh_ok("zpool sync banshee; sleep 1.2");
    // "du -hs --apparent-size ... 349M /usr/bin, 353M /banshee/tmp/bin. We're still
    // consuming 4MB more": apparent sizes still differ a little (a directory's size is its
    // filesystem's business), while "find /usr/bin | wc -l ; find /banshee/tmp/bin | wc
    // -l" agree exactly.
    let (apparent_source, apparent_copy) = (
        du(&host, "/usr/bin", true),
        du(&host, &format!("{tmp}/bin"), true),
    );
    eprintln!("du --apparent-size: /usr/bin {apparent_source}, copy {apparent_copy}");
    assert!(
        apparent_copy.abs_diff(apparent_source) * 100 <= apparent_source,
        "apparent sizes {apparent_source} and {apparent_copy} differ by more than 1%"
    );
    assert_eq!(
        host.sh_ok("find /usr/bin | wc -l"),
        host.sh_ok(&format!("find {tmp}/bin | wc -l"))
    );
    host.sh_ok(
        "zfs snapshot banshee/tmp@copy && zfs send banshee/tmp@copy | zfs receive banshee/sent",
    );
    let out = host.sh_ok(&format!("{SYNCOID} banshee/tmp banshee/tmp2"));
    assert!(
        out.starts_with("INFO: Sending oldest full snapshot banshee/tmp@copy (~ "),
        "{out}"
    );
    let post_digest = |dir: &str| host.sh_ok(&format!("cd {dir} ; tar -c . | md5sum"));
    let digest = post_digest(&tmp);
    for copy in ["banshee/sent", "banshee/tmp2"] {
        assert_eq!(post_digest(&host.mnt(copy)), digest, "{copy}");
        assert_eq!(
            tree_digest(&host, &host.mnt(copy)),
            tree_digest(&host, &tmp),
            "{copy}"
        );
    }
    assert_eq!(
        tree_digest(&host, &format!("{tmp}/bin")),
        tree_digest(&host, "/usr/bin"),
        "the copy is /usr/bin"
    );
}
