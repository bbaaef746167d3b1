//! syncoid to a second host over ssh, the way the seed posts replicate to a backup server:
//! `syncoid src/data root@host:backup/data`. The "host" is a network namespace with its own
//! sshd, `zfs` and daemon (`common::remote`). syncoid's control-master ssh, its remote `zfs
//! receive`, `zfs get`, `zfs rollback`, `zpool get feature@extensible_dataset` and `ps -Ao
//! args=` all cross the link; the stream goes through lzop and mbuffer as syncoid chooses.
//! (zfs-fuse to Zetta over ssh: `syncoid_zfs_fuse::syncoid_between_zfs_fuse_and_zetta_over_ssh`.)

mod common;

use common::host::{installed, tree_digest, Host};
use common::remote::{Remote, SSHD};
use std::time::Duration;

const SYNCOID: &str = "/usr/sbin/syncoid";

/// Full and then incremental replication to the other host: its pool holds the same
/// snapshots (guids) and, mounted there, the same tree.
#[test]
fn syncoid_replicates_to_a_second_host_over_ssh() {
    if !installed(SYNCOID) || !installed(SSHD) {
        return;
    }
    let host = Host::new();
    let remote = Remote::start(&host.lab);
    host.pool("src", 512 << 20, false);
    host.zfs_ok(&["create", "src/data"]);
    let data = host.mnt("src/data");
    host.sh_ok(&format!(
        "cp -a /usr/share/doc/bash {data}/ && head -c 4M /dev/urandom > {data}/blob && zfs snapshot src/data@first"
    ));
    let disk = host.lab.disk("remote/backup.d0", 512 << 20);
    let backup_mnt = format!("{}/mnt/backup", remote.dir);
    remote.ssh_ok(
        &host.lab,
        &format!("zpool create -m {backup_mnt} backup {disk}"),
    );
    assert_eq!(
        remote.ssh_ok(
            &host.lab,
            "zpool get -o value -H feature@extensible_dataset backup"
        ),
        "active\n"
    );

    let target = format!("root@{}:backup/data", remote.address);
    let syncoid = |what: &str| {
        std::thread::sleep(Duration::from_millis(1100));
        let options = remote.syncoid_options();
        host.sh_ok(&format!("{SYNCOID} {options} {what}"))
    };
    let out = syncoid(&format!("src/data {target}"));
    assert!(
        out.starts_with("INFO: Sending oldest full snapshot src/data@first (~ "),
        "{out}"
    );
    let remote_guids = || {
        remote
            .ssh_ok(
                &host.lab,
                "zfs list -Hp -r -t snapshot -o name,guid backup/data",
            )
            .replace("backup/data", "X")
    };
    assert_eq!(remote_guids(), host.snapshot_guids("src/data", "X"));
    // The other host's mounts are in its own mount namespace (`ip netns exec` makes one):
    // look at them from there.
    let remote_digest = || {
        remote.ssh_ok(
            &host.lab,
            &format!("cd {backup_mnt}/data && tar --sort=name --numeric-owner -cf - . | md5sum"),
        )
    };
    assert_eq!(tree_digest(&host, &data), remote_digest());

    host.sh_ok(&format!("rm {data}/blob && echo later > {data}/later"));
    let out = syncoid(&format!("src/data {target}"));
    assert!(
        out.starts_with("Sending incremental src/data@syncoid_"),
        "{out}"
    );
    assert_eq!(remote_guids(), host.snapshot_guids("src/data", "X"));
    assert_eq!(tree_digest(&host, &data), remote_digest());
    // The remote pool belongs to the remote daemon, not to this host's.
    let local_pools = host.zfs_ok(&["list", "-d0", "-H", "-o", "name"]);
    assert_eq!(local_pools, "src\n");
}
