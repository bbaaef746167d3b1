//! Post "Reshuffling pool storage on the fly" (seed 003): an eight-disk pool of four
//! mirrors becomes a six-disk pool of three mirrors without losing a byte and with only two
//! short downtimes: break two mirrors (`zpool detach`, `zpool labelclear`), build a
//! temporary mirror pool from the freed disks (compression=lz4), replicate to it with
//! `syncoid -r` while the VMs keep writing, touch up, swap the pools' names on import
//! (fixing a mountpoint on the way), destroy the old pool, build the final pool with
//! `zpool create` + two `zpool add` of mirrors, replicate again, swap names again, destroy
//! the temporary pool. Every file's checksum at the end is the one it had at the start.
//!
//! Sizes shrink (disks of 192 MiB, about 100 MiB of VM images and backups); the pools use
//! an alternate root (`-R`) so that `/data`, `/etc/libvirt/qemu` and friends land in the
//! lab; the disks keep the post's names.

use crate::common::host::{installed, SYNCOID};
use crate::lab::{read_matches, write_random, SeedLab, Xorshift};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

const DISK_BYTES: u64 = 192 << 20;
/// The eight disks of the post, in `zpool status` order: mirror-0 … mirror-3.
const DISKS: [&str; 8] = [
    "wwn-0x50014ee20b8b7ba0-part3",
    "wwn-0x50014ee20be7deb4-part3",
    "wwn-0x50014ee261102579-part3",
    "wwn-0x50014ee2613cc470-part3",
    "wwn-0x50014ee2613cfdf8-part3",
    "wwn-0x50014ee2b66693b9-part3",
    "wwn-0x50014ee20b9b4e0d-part3",
    "wwn-0x50014ee2610ffa17-part3",
];
/// The datasets the VMs live on, relative to the pool, and the files in them (name,
/// MiB, seed): VM disk images, their hardware definitions, backups of the other suite.
const FILES: [(&str, &str, u64, u64); 6] = [
    ("images/suite100", "suite100.qcow2", 32, 100),
    ("images/suite100-mysql", "suite100-mysql.qcow2", 24, 101),
    ("images/suite100-openvpn", "suite100-openvpn.qcow2", 8, 102),
    ("images/qemu", "suite100.xml", 1, 103),
    ("backup", "suite200.qcow2", 24, 104),
    ("backup", "suite200-mysql.qcow2", 8, 105),
];
/// The file the MySQL VM keeps appending to while the first replication runs.
const LIVE_FILE: &str = "images/suite100-mysql/ibdata1";
const LIVE_SEED: u64 = 3306;
/// The most the MySQL VM appends while the first replication runs (1 MiB each 100 ms).
const LIVE_MIB_MAX: u64 = 24;

/// `md5sum` of every file of every dataset under `pool`, by dataset-relative path, so
/// the listing compares across pools and mountpoints.
fn checksums(lab: &SeedLab, pool: &str) -> String {
    let mut all = String::new();
    for dataset in [
        "images/suite100",
        "images/suite100-mysql",
        "images/suite100-openvpn",
        "images/qemu",
        "backup",
    ] {
        let at = mounted_at(lab, &format!("{pool}/{dataset}"));
        let sums = lab.sh_ok(&format!(
            "cd '{at}' && find . -type f | sort | xargs md5sum"
        ));
        all.push_str(&format!("{dataset}:\n{sums}"));
    }
    all
}

/// Where a dataset is mounted: its `mountpoint` under the pools' alternate root.
fn mounted_at(lab: &SeedLab, dataset: &str) -> String {
    let root = lab.path("root");
    let mountpoint = lab.zfs_get("mountpoint", dataset);
    if mountpoint.starts_with(&format!("{root}/")) {
        mountpoint
    } else {
        format!("{root}{mountpoint}")
    }
}

/// The path of a dataset-relative file in `pool` under the alternate root.
fn file_path(lab: &SeedLab, pool: &str, relative: &str) -> String {
    let (dataset, name) = relative.rsplit_once('/').unwrap();
    format!("{}/{name}", mounted_at(lab, &format!("{pool}/{dataset}")))
}

/// Why: the post's whole procedure, end to end, on the real CLI with the real syncoid:
/// every step succeeds as it did for the admin, the old pool keeps serving reads and
/// writes while its mirrors are broken, the final pool has its data spread over its three
/// mirrors, and every file (including one written during the live replication) has the
/// checksum it had before.
#[test]
fn four_mirrors_become_three_without_losing_a_byte() {
    if !installed(SYNCOID) {
        return;
    }
    let lab = SeedLab::new();
    let root = lab.path("root");
    let dir = lab.path("disks");
    let disk: Vec<String> = DISKS
        .iter()
        .map(|name| lab.disk(&format!("disks/{name}"), DISK_BYTES))
        .collect();
    // "Our existing pool had four mirrors"
    let mut create = vec!["create", "-o", "ashift=12", "-R", &root, "data"];
    for pair in disk.chunks(2) {
        create.extend(["mirror", &pair[0], &pair[1]]);
    }
    lab.zpool_ok(&create);
    for dataset in [
        "data/images",
        "data/images/suite100",
        "data/images/suite100-mysql",
        "data/images/suite100-openvpn",
        "data/images/qemu",
        "data/backup",
    ] {
        lab.zfs_ok(&["create", dataset]);
    }
    // "Sanoid keeps the virtual machines' hardware definitions on the zpool … its
    // original mountpoint, /etc/libvirt/qemu"
    lab.zfs_ok(&["set", "mountpoint=/etc/libvirt/qemu", "data/images/qemu"]);
    for (dataset, name, mib, seed) in FILES {
        let path = file_path(&lab, "data", &format!("{dataset}/{name}"));
        write_random(&path, mib << 20, seed).unwrap();
    }
    let before = checksums(&lab, "data");

    // "First, I broke mirror-0 and mirror-1."
    // root@client-prod1:/# zpool detach wwn-0x50014ee20be7deb4-part3 ; zpool labelclear …
    // root@client-prod1:/# zpool detach wwn-0x50014ee2613cc470-part3 ; zpool labelclear …
    for freed in [&disk[1], &disk[3]] {
        lab.zpool_ok(&["detach", "data", freed]);
        lab.zpool_ok(&["labelclear", freed]);
    }
    // "Now mirror-0 and mirror-1 are in DEGRADED condition, as is the pool – but it's
    // still up and running": a detached disk is gone from the pool, so (in OpenZFS as
    // here) what is left of each broken mirror is a single-disk vdev, ONLINE, and so is the
    // pool; it has lost redundancy, not health (docs/SEEDS.md).
    let status = lab.status("data");
    assert!(status.contains("\n state: ONLINE\n"), "{status}");
    let top_level: Vec<&str> = status
        .lines()
        .filter(|l| l.starts_with("\t  ") && !l.starts_with("\t    "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        top_level,
        [disk[0].as_str(), disk[2].as_str(), "mirror-2", "mirror-3"],
        "{status}"
    );
    assert!(!status.contains(DISKS[1]) && !status.contains(DISKS[3]));
    // The cleared disks carry no pool any more.
    let listing = lab.zpool(&["import", "-d", &dir]);
    assert!(!listing.stdout.contains("pool: data"), "{}", listing.stdout);

    // root@client-prod1:/# zpool create -o ashift=12 tmppool mirror … ; zfs set
    // compression=lz4 tmppool
    lab.zpool_ok(&[
        "create",
        "-o",
        "ashift=12",
        "-R",
        &root,
        "tmppool",
        "mirror",
        &disk[1],
        &disk[3],
    ]);
    lab.zfs_ok(&["set", "compression=lz4", "tmppool"]);

    // "these are still running VMs": the MySQL VM appends while syncoid copies.
    let live_path = file_path(&lab, "data", LIVE_FILE);
    let stop = AtomicBool::new(false);
    let live_mib = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut file = std::fs::File::create(&live_path).unwrap();
            let mut rng = Xorshift::new(LIVE_SEED);
            let mut chunk = vec![0u8; 1 << 20];
            let mut written_mib = 0u64;
            // Bounded: a syncoid slowed by a loaded machine must not turn the VM's
            // appends into more data than the two-disk pool holds (it did: "out of space").
            while written_mib < 4 || (!stop.load(Ordering::Relaxed) && written_mib < LIVE_MIB_MAX) {
                rng.fill(&mut chunk);
                file.write_all(&chunk).unwrap();
                written_mib += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            written_mib
        });
        // root@client-prod1:/# syncoid -r data/images tmppool/images ; syncoid -r
        // data/backup tmppool/backup
        lab.host.syncoid_ok("-r data/images tmppool/images");
        lab.host.syncoid_ok("-r data/backup tmppool/backup");
        // "I shut down all the VMs running on the machine"
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap()
    });
    // The degraded pool kept every file and took the VM's writes.
    assert!(read_matches(&live_path, live_mib << 20, LIVE_SEED).unwrap());
    let expected = checksums(&lab, "data");
    for line in before.lines() {
        assert!(expected.contains(line), "{line} changed:\n{expected}");
    }
    assert!(expected.contains("./ibdata1\n"), "{expected}");
    // "and replicated again … This time, my replication was done in less than ten
    // seconds."
    lab.host.syncoid_ok("-r data/images tmppool/images");
    lab.host.syncoid_ok("-r data/backup tmppool/backup");

    // "Next, it's time to rename the pools."
    // root@client-prod1:/# zpool export data ; zpool import data olddata
    // root@client-prod1:/# zfs set mountpoint=/olddata/images/qemu olddata/images/qemu ;
    // zpool export olddata
    lab.zpool_ok(&["export", "data"]);
    lab.zpool_ok(&["import", "-d", &dir, "-R", &root, "data", "olddata"]);
    lab.zfs_ok(&[
        "set",
        "mountpoint=/olddata/images/qemu",
        "olddata/images/qemu",
    ]);
    lab.zpool_ok(&["export", "olddata"]);
    // root@client-prod1:/# zpool export tmppool ; zpool import tmppool data
    // root@client-prod1:/# zfs set mountpoint=/etc/libvirt/qemu data/images/qemu
    lab.zpool_ok(&["export", "tmppool"]);
    lab.zpool_ok(&["import", "-d", &dir, "-R", &root, "tmppool", "data"]);
    lab.zfs_ok(&["set", "mountpoint=/etc/libvirt/qemu", "data/images/qemu"]);
    // "our temporary two disk pool exists as an active pool named data, ready to go"
    assert_eq!(checksums(&lab, "data"), expected);
    assert!(lab.compressratio("data") >= 1.0);

    // "Time to destroy the old pool, and re-use its remaining disks."
    // root@client-prod1:/# zpool destroy olddata — it was exported just above, and an
    // exported pool is no pool to `zpool destroy` (OpenZFS: the same refusal); the admin
    // imports it first.
    let out = lab.zpool(&["destroy", "olddata"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "cannot open 'olddata': no such pool\n")
    );
    lab.zpool_ok(&["import", "-d", &dir, "-R", &root, "olddata"]);
    lab.zpool_ok(&["destroy", "olddata"]);
    // root@client-prod1:/# zpool create -o ashift=12 newdata mirror … ; zpool add -o
    // ashift=12 newdata mirror … ; zpool add -o ashift=12 newdata mirror … ; zfs set
    // compression=lz4 newdata
    lab.zpool_ok(&[
        "create",
        "-o",
        "ashift=12",
        "-R",
        &root,
        "newdata",
        "mirror",
        &disk[0],
        &disk[2],
    ]);
    lab.zpool_ok(&[
        "add",
        "-o",
        "ashift=12",
        "newdata",
        "mirror",
        &disk[4],
        &disk[5],
    ]);
    lab.zpool_ok(&[
        "add",
        "-o",
        "ashift=12",
        "newdata",
        "mirror",
        &disk[6],
        &disk[7],
    ]);
    lab.zfs_ok(&["set", "compression=lz4", "newdata"]);

    // root@client-prod1:/# syncoid -r data/images newdata/images ; syncoid -r data/backup
    // newdata/backup — then the touch-up, after the second shutdown.
    for _ in 0..2 {
        lab.host.syncoid_ok("-r data/images newdata/images");
        lab.host.syncoid_ok("-r data/backup newdata/backup");
    }
    // "We fix our mountpoints, shuffle the pool names"
    // root@client-prod1:/# zpool export data ; zpool import data tmppool
    // root@client-prod1:/# zfs set mountpoint=/tmppool/images/qemu tmppool/images/qemu ;
    // zpool export tmppool (the post's line says olddata/images/qemu: a slip, olddata is
    // destroyed by then)
    lab.zpool_ok(&["export", "data"]);
    lab.zpool_ok(&["import", "-d", &dir, "-R", &root, "data", "tmppool"]);
    lab.zfs_ok(&[
        "set",
        "mountpoint=/tmppool/images/qemu",
        "tmppool/images/qemu",
    ]);
    lab.zpool_ok(&["export", "tmppool"]);
    // root@client-prod1:/# zpool export newdata ; zpool import newdata data
    // root@client-prod1:/# zfs set mountpoint=/etc/libvirt/qemu data/images/qemu
    lab.zpool_ok(&["export", "newdata"]);
    lab.zpool_ok(&["import", "-d", &dir, "-R", &root, "newdata", "data"]);
    lab.zfs_ok(&["set", "mountpoint=/etc/libvirt/qemu", "data/images/qemu"]);

    // "all the actual data is where it should be, in the right datasets, on the right pool"
    assert_eq!(checksums(&lab, "data"), expected);
    assert!(read_matches(
        &file_path(&lab, "data", LIVE_FILE),
        live_mib << 20,
        LIVE_SEED
    )
    .unwrap());
    // "a three mirror pool with all of its data distributed equally across all three
    // mirrors": six disks, three mirrors, each holding a third of the data (within 25%).
    let status = lab.status("data");
    assert!(status.contains("\n state: ONLINE\n"), "{status}");
    let rows = lab.list_v("data");
    let mirrors: Vec<&(String, u64, u64, u64)> =
        rows.iter().filter(|r| r.0.starts_with("mirror-")).collect();
    assert_eq!(
        mirrors.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["mirror-0", "mirror-1", "mirror-2"],
        "{rows:?}"
    );
    let mean = mirrors.iter().map(|r| r.2 as f64).sum::<f64>() / 3.0;
    for mirror in &mirrors {
        assert!(
            (mirror.2 as f64 / mean - 1.0).abs() <= 0.25,
            "{} holds {} of a mean {mean}: {rows:?}",
            mirror.0,
            mirror.2
        );
    }
    for freed in [DISKS[1], DISKS[3]] {
        assert!(!status.contains(freed), "{status}");
    }
    // "The very last step: destroying tmppool." (exported above, so imported first)
    lab.zpool_ok(&["import", "-d", &dir, "-R", &root, "tmppool"]);
    lab.zpool_ok(&["destroy", "tmppool"]);
    assert_eq!(lab.zpool_ok(&["list", "-H", "-o", "name"]), "data\n");
    eprintln!(
        "seeds reshuffling: 4 mirrors → 2 broken + tmppool → 3 mirrors, {} files and a \
         {live_mib} MiB file written during the live syncoid identical at the end; final \
         ALLOC per mirror {:?} MiB",
        FILES.len(),
        mirrors.iter().map(|r| r.2 >> 20).collect::<Vec<_>>()
    );
}
