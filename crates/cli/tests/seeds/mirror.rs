//! Post "ZFS does NOT favor lower latency devices. Don't mix rust disks and SSDs!" (seeds
//! 000, 002): a single-disk pool on a file reached through a symlink in /tmp/disks, read
//! cold after export/import; `zpool attach` makes it a mirror (resilvered); read cold again,
//! half the reads come from each side; `zpool detach` of the first disk leaves the other as
//! a single-disk vdev holding everything; export / `import -d` round-trips each step.
//!
//! The post timed fio on rust and SSD; this machine has one kind of storage and timed
//! assertions are not allowed here, so the test checks where the reads went (the per-device
//! read counters of `zpool iostat -v`, which is what the post's throughput figures imply:
//! "matching half – but only half – of the read ops coming from the SSD").

use crate::lab::{config_row, read_matches, scan_outcome, write_random, SeedLab};

/// The post's fio file is 1 GiB; the read distribution does not depend on its size.
const FILE_BYTES: u64 = 256 << 20;
const FILE_SEED: u64 = 0xf10;

/// Why: the post's whole experiment, end to end: attach turns a single disk into a mirror
/// and resilvers exactly the data, reads are spread over both sides (not sent to one
/// favoured disk), detach leaves the other disk alone with all the data, and the pool
/// comes back from `zpool import -d <dir of symlinks>` after every step.
#[test]
fn attach_mirror_reads_from_both_sides_and_detach_keeps_the_data() {
    let lab = SeedLab::new();
    // root@box:~# truncate -s 4G /tmp/ssd.bin ; truncate -s 4G /rust/rust.bin
    let rust = lab.disk("rust/rust.bin", 4 << 30);
    let ssd = lab.disk("ssd/ssd.bin", 4 << 30);
    // root@box:~# mkdir /tmp/disks; ln -s ... /tmp/disks/ssd.bin ; ln -s ... /tmp/disks/rust.bin
    let disks = lab.path("disks");
    std::fs::create_dir_all(&disks).unwrap();
    let rust_link = format!("{disks}/rust.bin");
    let ssd_link = format!("{disks}/ssd.bin");
    std::os::unix::fs::symlink(&rust, &rust_link).unwrap();
    std::os::unix::fs::symlink(&ssd, &ssd_link).unwrap();
    let mnt = lab.path("mnt");
    // root@box:~# zpool create -oashift=12 test /tmp/disks/rust.bin
    lab.zpool_ok(&["create", "-oashift=12", "-m", &mnt, "test", &rust_link]);
    // root@box:~# zfs set compression=off test
    lab.zfs_ok(&["set", "compression=off", "test"]);
    let file = format!("{mnt}/read.bin");
    write_random(&file, FILE_BYTES, FILE_SEED).unwrap();

    // root@box:~# zpool export test ; ... ; zpool import -d /tmp/disks test
    let reimport = || {
        lab.zpool_ok(&["export", "test"]);
        lab.zpool_ok(&["import", "-d", &disks, "test"]);
    };
    reimport();
    assert!(read_matches(&file, FILE_BYTES, FILE_SEED).unwrap());
    // Rust only: every read comes from the one disk.
    let reads = lab.iostat_reads("test");
    assert_eq!(reads.len(), 2, "{reads:?}");
    assert_eq!(reads[1].0, rust_link);
    assert!(reads[1].1 > 0, "{reads:?}");

    // root@box:/test# zpool attach test /tmp/disks/rust.bin /tmp/disks/ssd.bin
    lab.zpool_ok(&["attach", "test", &rust_link, &ssd_link]);
    let status = lab.status("test");
    // "  scan: resilvered 1.00G in 0h0m with 0 errors on Sat Jul 14 14:34:07 2018": the
    // whole file (the post's was 1.00G), and only once (within 10% for metadata).
    let (resilvered_bytes, errors) = scan_outcome(&status);
    assert_eq!(errors, 0, "{status}");
    assert!(
        resilvered_bytes >= FILE_BYTES as f64 * 0.99 && resilvered_bytes <= FILE_BYTES as f64 * 1.1,
        "resilvered {resilvered_bytes} for a {FILE_BYTES}-byte file\n{status}"
    );
    assert!(
        status.contains("\n  scan: resilvered ") && status.contains(" with 0 errors on "),
        "{status}"
    );
    // The post's config table, word for word (our paths):
    //     NAME                     STATE     READ WRITE CKSUM
    //     test                     ONLINE       0     0     0
    //       mirror-0               ONLINE       0     0     0
    //         /tmp/disks/rust.bin  ONLINE       0     0     0
    //         /tmp/disks/ssd.bin   ONLINE       0     0     0
    let width = rust_link.len() + 4;
    let table = format!(
        "config:\n\n\t{:<width$}  STATE     READ WRITE CKSUM\n{}{}{}{}\nerrors: No known data errors\n",
        "NAME",
        config_row(0, "test", width, "ONLINE"),
        config_row(2, "mirror-0", width, "ONLINE"),
        config_row(4, &rust_link, width, "ONLINE"),
        config_row(4, &ssd_link, width, "ONLINE"),
    );
    assert!(status.ends_with(&table), "{status}\nexpected:\n{table}");

    // Cold again, then read: "Not-quite-doubled throughput, matching half – but only half –
    // of the read ops coming from the SSD." Each side serves 30%..70% of the reads.
    reimport();
    assert!(read_matches(&file, FILE_BYTES, FILE_SEED).unwrap());
    let reads = lab.iostat_reads("test");
    let ops_of = |name: &str| {
        reads
            .iter()
            .find(|r| r.0 == name)
            .unwrap_or_else(|| panic!("no iostat row {name}: {reads:?}"))
            .1
    };
    let (rust_ops, ssd_ops) = (ops_of(&rust_link), ops_of(&ssd_link));
    let share = rust_ops as f64 / (rust_ops + ssd_ops) as f64;
    assert!(
        (0.3..=0.7).contains(&share),
        "rust.bin served {rust_ops} reads, ssd.bin {ssd_ops}: {reads:?}"
    );
    eprintln!(
        "seeds mirror: resilvered {:.0}M for a {}M file; reads/s rust.bin {rust_ops}, \
         ssd.bin {ssd_ops} ({:.0}% from rust.bin; post: half)",
        resilvered_bytes / 1048576.0,
        FILE_BYTES >> 20,
        share * 100.0
    );

    // root@box:~# zpool detach test /tmp/disks/rust.bin ; zpool export ; zpool import -d
    lab.zpool_ok(&["detach", "test", &rust_link]);
    reimport();
    let status = lab.status("test");
    let width = ssd_link.len() + 2;
    let table = format!(
        "config:\n\n\t{:<width$}  STATE     READ WRITE CKSUM\n{}{}\nerrors: No known data errors\n",
        "NAME",
        config_row(0, "test", width, "ONLINE"),
        config_row(2, &ssd_link, width, "ONLINE"),
    );
    assert!(status.ends_with(&table), "{status}\nexpected:\n{table}");
    // "this time, fio runs on pure solid state": all of it from the remaining disk.
    assert!(read_matches(&file, FILE_BYTES, FILE_SEED).unwrap());
    let reads = lab.iostat_reads("test");
    assert_eq!(reads.len(), 2, "{reads:?}");
    assert_eq!(reads[1].0, ssd_link);
    assert!(reads[1].1 > 0, "{reads:?}");
}
