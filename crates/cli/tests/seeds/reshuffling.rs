//! Post "Reshuffling pool storage on the fly" (seed 003): a pool of four mirrors is taken
//! apart while it serves, its data moved with syncoid to a temporary pool built from two
//! freed disks, the pools renamed on import so the data keeps its name, and finally a
//! three-mirror pool built from the old pool's disks takes everything back; every file's
//! checksum is the same at the end as at the start.
//!
//! Sizes: 256 MiB disks and about 40 MiB of data (the post's VMs were hundreds of GB); the
//! VMs the post shut down between replications are files written between the runs.

use crate::common::host::{installed, Host};

const SYNCOID: &str = "/usr/sbin/syncoid";
const DISK_BYTES: u64 = 256 << 20;

/// `sha256sum` of every file under the pool's datasets `images` and `backup`, by path
/// relative to the pool's mountpoint.
fn checksums(host: &Host, mountpoint: &str) -> String {
    host.sh_ok(&format!(
        "cd '{mountpoint}' && find images backup -type f | sort | xargs sha256sum"
    ))
}

/// One second between syncoid runs: its sync snapshots are named to the second.
fn syncoid_r(host: &Host, from_pool: &str, to_pool: &str) {
    for fs in ["images", "backup"] {
        std::thread::sleep(std::time::Duration::from_millis(1100));
        host.sh_ok(&format!("{SYNCOID} -r {from_pool}/{fs} {to_pool}/{fs}"));
    }
}

fn status_config(host: &Host, pool: &str) -> String {
    host.sh_ok(&format!("zpool status {pool}"))
}

/// Why: the post's whole procedure, command by command (device names are files here):
/// `zpool detach` + `zpool labelclear` of one disk of mirror-0 and mirror-1, the pool still
/// serving; `zpool create -o ashift=12 tmppool mirror …` of the freed disks with lz4;
/// `syncoid -r` twice (live, then the "touch-up"); `zpool export data ; zpool import data
/// olddata`, `zpool export tmppool ; zpool import tmppool data`; the old pool destroyed and
/// its six disks made into `newdata` with `zpool create` and two `zpool add`s; syncoid -r
/// again; the final renames; `zpool destroy tmppool`. The data is identical at the end.
#[test]
fn four_mirrors_reshuffled_into_three_with_syncoid() {
    if !installed(SYNCOID) {
        return;
    }
    let host = Host::new();
    let lab = &host.lab;
    std::fs::create_dir_all(lab.path("disks")).unwrap();
    let disks: Vec<String> = (0..8)
        .map(|i| lab.disk(&format!("disks/d{i}"), DISK_BYTES))
        .collect();
    let dir = lab.path("disks");
    let mnt = |pool: &str| host.mnt(pool);
    // data: mirror-0 (d0 d1), mirror-1 (d2 d3), mirror-2 (d4 d5), mirror-3 (d6 d7).
    host.sh_ok(&format!(
        "zpool create -o ashift=12 -m {} data mirror {} {} mirror {} {} mirror {} {} mirror {} {}",
        mnt("data"),
        disks[0],
        disks[1],
        disks[2],
        disks[3],
        disks[4],
        disks[5],
        disks[6],
        disks[7]
    ));
    host.sh_ok("zfs create data/images && zfs create data/images/qemu && zfs create data/backup");
    let write = |pool: &str, name: &str, mib: u32| {
        host.sh_ok(&format!(
            "head -c {}M /dev/urandom > '{}/{name}'",
            mib,
            mnt(pool)
        ));
    };
    write("data", "images/suite100.qcow2", 16);
    write("data", "images/suite100-mysql.qcow2", 8);
    write("data", "images/qemu/suite100.xml", 1);
    write("data", "backup/files.tar", 12);

    // root@client-prod1:/# zpool detach wwn-…deb4-part3 ; zpool labelclear wwn-…deb4-part3
    for freed in [&disks[1], &disks[3]] {
        host.sh_ok(&format!(
            "zpool detach data {freed} && zpool labelclear {freed}"
        ));
    }
    // The post: "mirror-0 and mirror-1 are in DEGRADED condition, as is the pool". A
    // detach takes the disk out of the mirror for good, so OpenZFS (and Zetta) show the
    // remaining disk as a plain, ONLINE top-level vdev; the pool keeps serving either way.
    let status = status_config(&host, "data");
    assert!(status.contains(" state: ONLINE"), "{status}");
    assert_eq!(status.matches("mirror-").count(), 2, "{status}");
    write("data", "images/while-degraded.log", 1);

    // root@client-prod1:/# zpool create -o ashift=12 tmppool mirror … ; zfs set compression=lz4 tmppool
    host.sh_ok(&format!(
        "zpool create -o ashift=12 -m {} tmppool mirror {} {} && zfs set compression=lz4 tmppool",
        mnt("tmppool"),
        disks[1],
        disks[3]
    ));
    // root@client-prod1:/# syncoid -r data/images tmppool/images ; syncoid -r data/backup tmppool/backup
    syncoid_r(&host, "data", "tmppool");
    // The VMs ran meanwhile; then they are shut down and replicated again ("touch-up").
    write("data", "images/suite100-mysql.qcow2", 8);
    syncoid_r(&host, "data", "tmppool");
    let start = checksums(&host, &mnt("data"));
    assert_eq!(checksums(&host, &mnt("tmppool")), start);

    // root@client-prod1:/# zpool export data ; zpool import data olddata
    // root@client-prod1:/# zpool export tmppool ; zpool import tmppool data
    host.sh_ok(&format!(
        "zpool export data && zpool import -d {dir} data olddata && zpool export olddata"
    ));
    host.sh_ok(&format!(
        "zpool export tmppool && zpool import -d {dir} tmppool data"
    ));
    let listed = host.sh_ok("zpool list -H -o name");
    assert_eq!(listed, "data\n", "{listed}");
    // The renamed temporary pool serves the data under the old name.
    assert_eq!(checksums(&host, &mnt("tmppool")), start);

    // root@client-prod1:/# zpool destroy olddata ; zpool create -o ashift=12 newdata mirror … ;
    // zpool add -o ashift=12 newdata mirror … (twice) ; zfs set compression=lz4 newdata
    host.sh_ok(&format!(
        "zpool import -d {dir} olddata && zpool destroy olddata"
    ));
    host.sh_ok(&format!(
        "zpool create -o ashift=12 -m {} newdata mirror {} {} && zpool add -o ashift=12 newdata mirror {} {} && zpool add -o ashift=12 newdata mirror {} {} && zfs set compression=lz4 newdata",
        mnt("newdata"),
        disks[0],
        disks[2],
        disks[4],
        disks[5],
        disks[6],
        disks[7]
    ));
    assert_eq!(
        status_config(&host, "newdata").matches("mirror-").count(),
        3
    );
    // root@client-prod1:/# syncoid -r data/images newdata/images ; syncoid -r data/backup newdata/backup
    syncoid_r(&host, "data", "newdata");
    syncoid_r(&host, "data", "newdata");

    // root@client-prod1:/# zpool export data ; zpool import data tmppool ; zpool export tmppool
    // root@client-prod1:/# zpool export newdata ; zpool import newdata data
    host.sh_ok(&format!(
        "zpool export data && zpool import -d {dir} data tmppool && zpool export tmppool"
    ));
    host.sh_ok(&format!(
        "zpool export newdata && zpool import -d {dir} newdata data"
    ));
    assert_eq!(checksums(&host, &mnt("newdata")), start);
    let status = status_config(&host, "data");
    assert!(status.contains(" state: ONLINE"), "{status}");
    assert!(status.contains("errors: No known data errors"), "{status}");
    // root@client-prod1:/# zpool destroy tmppool
    host.sh_ok(&format!(
        "zpool import -d {dir} tmppool && zpool destroy tmppool"
    ));
    assert_eq!(host.sh_ok("zpool list -H -o name"), "data\n");
    host.sh_ok("zpool scrub -w data");
    assert!(status_config(&host, "data").contains("with 0 errors"));
    assert_eq!(checksums(&host, &mnt("newdata")), start);
}
