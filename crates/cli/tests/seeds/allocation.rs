//! Posts "ZFS allocates writes according to free space per vdev, not latency per vdev",
//! "How data gets imbalanced on ZFS" and "Demonstrating ZFS zpool write distribution"
//! (seeds 001, 002): new writes go to each top-level vdev in proportion to its FREE space;
//! a vdev added later takes the larger share; deletes can unbalance equal vdevs.
//!
//! The ratios do not depend on absolute size (the allocator shares writes by free-space
//! fraction), so the 10G/2G experiments run at a tenth of the post's sizes unless
//! `ZETTA_SEEDS_FULL=1`; the imbalanced-deletes one writes 400 files instead of 3636.
//! The posts wrote `dd if=/dev/zero` with compression off; Zetta stores an all-zero block
//! as a hole whatever the compression (OpenZFS only with compression on), so these write
//! pseudorandom bytes instead (docs/SEEDS.md; `zeros_allocate_nothing` pins the difference).

use crate::lab::{write_random, SeedLab};

/// 1 for the posts' sizes (`ZETTA_SEEDS_FULL=1`), else 10.
fn scale_divisor() -> u64 {
    if std::env::var("ZETTA_SEEDS_FULL").is_ok_and(|v| v == "1") {
        1
    } else {
        10
    }
}

/// `dd` of `size_bytes` pseudorandom bytes to `path` (a file on the mount), then commits.
fn dd(lab: &SeedLab, pool: &str, path: &str, size_bytes: u64, seed: u64) {
    write_random(path, size_bytes, seed).unwrap();
    lab.settle(pool);
}

/// ALLOC of the first vdev row over the second.
fn alloc_ratio(lab: &SeedLab, pool: &str, first: &str, second: &str) -> f64 {
    lab.vdev_alloc_bytes(pool, first) as f64 / lab.vdev_alloc_bytes(pool, second) as f64
}

/// Fills the pool through the mount until a write fails, which must be ENOSPC ("dd: error
/// writing '/alloctest/12G.bin': No space left on device").
fn fill(lab: &SeedLab, pool: &str, path: &str) {
    let error = write_random(path, u64::MAX, 12).expect_err("the pool never filled");
    assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "{error}");
    lab.settle(pool);
}

/// A lab with `alloctest` on `first` and `second` (sparse files of the given sizes, the
/// post's `-oashift=13`), compression off, mounted; returns (lab, first, second, mount).
fn alloctest(first: (&str, u64), second: (&str, u64)) -> (SeedLab, String, String, String) {
    let lab = SeedLab::new();
    let a = lab.disk(first.0, first.1);
    let b = lab.disk(second.0, second.1);
    let mnt = lab.path("alloctest");
    lab.zpool_ok(&["create", "-oashift=13", "-m", &mnt, "alloctest", &a, &b]);
    lab.zfs_ok(&["set", "compression=off", "alloctest"]);
    (lab, a, b, mnt)
}

/// Why: the post's first test, "one large slow vdev, one small fast vdev": 10G + 2G fill
/// at close to 5:1 — early on and when the pool is full to ENOSPC — and the pool really
/// fills (no vdev runs out while the other has room).
#[test]
fn ten_and_two_gig_vdevs_fill_five_to_one() {
    let scale = scale_divisor();
    let (lab, big, small, mnt) = alloctest(
        ("rust/10Grust.raw", (10 << 30) / scale),
        ("ssd/2Gssd.raw", (2 << 30) / scale),
    );
    // root@banshee:~# dd if=/dev/zero bs=256M count=8 of=/alloctest/2G.bin
    dd(
        &lab,
        "alloctest",
        &format!("{mnt}/2G.bin"),
        (2 << 30) / scale,
        2,
    );
    // "We've ALLOC'd 451M to the smaller vdev, and 1.56G to the larger vdev – a ratio of
    // 3.54:1": between 3:1 and 6:1.
    let early = alloc_ratio(&lab, "alloctest", &big, &small);
    assert!((3.0..=6.0).contains(&early), "after 2G: {early:.2}:1");
    // root@banshee:~# dd if=/dev/zero bs=256M count=12 of=/alloctest/3G.bin
    dd(
        &lab,
        "alloctest",
        &format!("{mnt}/3G.bin"),
        (3 << 30) / scale,
        3,
    );
    // "3.92G to 1.09G – 3.59 to 1, or no real change": between 3:1 and 6:1.
    let middle = alloc_ratio(&lab, "alloctest", &big, &small);
    assert!((3.0..=6.0).contains(&middle), "after 5G: {middle:.2}:1");
    // root@banshee:~# dd if=/dev/zero bs=256M count=48 of=/alloctest/12G.bin
    // dd: error writing '/alloctest/12G.bin': No space left on device
    fill(&lab, "alloctest", &format!("{mnt}/12G.bin"));
    // "With the pool entirely full, we have a ratio of 4.98:1": between 4.5:1 and 5.5:1.
    let full = alloc_ratio(&lab, "alloctest", &big, &small);
    assert!((4.5..=5.5).contains(&full), "at ENOSPC: {full:.2}:1");
    // "alloctest 11.9G 11.5G 381M - 58% 96% 1.00x ONLINE -": CAP at least 95%.
    let capacity = lab.capacity_percent("alloctest");
    assert!(capacity >= 95, "pool only {capacity}% full at ENOSPC");
    eprintln!(
        "seeds 10G+2G (1/{scale}): {early:.2}:1 after 2G (post 3.54), {middle:.2}:1 after 5G \
         (post 3.59), {full:.2}:1 at ENOSPC (post 4.98), CAP {capacity}% (post 96%)"
    );
}

/// Why: the post's second test, "one large fast vdev, one small slow vdev": with the
/// sizes swapped the ratio is the same ("1.55G to 440M – 3.6:1. That's a pretty familiar
/// ratio"): what decides is free space, not which device is first or faster.
#[test]
fn swapped_sizes_give_the_same_ratio() {
    let scale = scale_divisor();
    let (lab, big, small, mnt) = alloctest(
        ("ssd/10Gssd.raw", (10 << 30) / scale),
        ("rust/2Grust.raw", (2 << 30) / scale),
    );
    dd(
        &lab,
        "alloctest",
        &format!("{mnt}/2G.bin"),
        (2 << 30) / scale,
        4,
    );
    // "1.55G to 440M – 3.6:1": between 3:1 and 6:1.
    let early = alloc_ratio(&lab, "alloctest", &big, &small);
    assert!((3.0..=6.0).contains(&early), "after 2G: {early:.2}:1");
    dd(
        &lab,
        "alloctest",
        &format!("{mnt}/3G.bin"),
        (3 << 30) / scale,
        5,
    );
    // "1.09G to 3.92G ALLOCated… simplified, that's 3.6:1 again": between 3:1 and 6:1.
    let later = alloc_ratio(&lab, "alloctest", &big, &small);
    assert!((3.0..=6.0).contains(&later), "after 5G: {later:.2}:1");
    eprintln!(
        "seeds 10G+2G swapped (1/{scale}): {early:.2}:1 after 2G (post 3.6), {later:.2}:1 \
         after 5G (post 3.6)"
    );
}

/// Why: "Demonstrating ZFS zpool write distribution": 512M + 2G vdevs take 512M of
/// writes at roughly 4:1, and two equal 512M vdevs take them evenly (the post's sizes:
/// they are small already).
#[test]
fn half_gig_and_two_gig_take_writes_four_to_one() {
    let lab = SeedLab::new();
    let nbd0 = lab.disk("512M.img", 512 << 20);
    let nbd1 = lab.disk("2G.img", 2 << 30);
    let mnt = lab.path("test");
    // root@banshee:/tmp# zpool create -oashift=13 test nbd0 nbd1
    lab.zpool_ok(&["create", "-oashift=13", "-m", &mnt, "test", &nbd0, &nbd1]);
    lab.zfs_ok(&["set", "compression=off", "test"]);
    // dd if=/dev/zero bs=4M count=128 status=none | pv -s 512M > /test/512M.zero
    dd(&lab, "test", &format!("{mnt}/512M.zero"), 512 << 20, 6);
    // "406M 2G.qcow2 / 118M 512M.qcow2 … writes distributed with a ratio of roughly 4:1,
    // matching the mismatched vdev sizes": between 3.3:1 and 4.7:1.
    let ratio = alloc_ratio(&lab, "test", &nbd1, &nbd0);
    assert!((3.3..=4.7).contains(&ratio), "{ratio:.2}:1");
    eprintln!("seeds 512M+2G: {ratio:.2}:1 (post 406M:118M, 3.44:1, \"roughly 4:1\")");
    lab.zpool_ok(&["destroy", "test"]);

    // "What if we put one 512M image on SSD, and one 512M image on much slower rust?"
    let ssd = lab.disk("ssd/512M.img", 512 << 20);
    let rust = lab.disk("data/512M.img", 512 << 20);
    lab.zpool_ok(&["create", "-oashift=13", "-m", &mnt, "test", &ssd, &rust]);
    lab.zfs_ok(&["set", "compression=off", "test"]);
    dd(&lab, "test", &format!("{mnt}/512M.zero"), 512 << 20, 7);
    // "266M /tmp/512M.qcow2, 269M /data/512M.qcow2": even, within 15%.
    let ratio = alloc_ratio(&lab, "test", &ssd, &rust);
    assert!((0.85..=1.15).contains(&ratio), "{ratio:.2}:1");
    eprintln!("seeds 512M+512M: {ratio:.2}:1 (post 266M:269M, 0.99:1)");
}

/// Why: "Vdevs ADDed after data was already written to the pool": "You've got 1T FREE on
/// one vdev and 2T FREE on the other vdev; ZFS will now write two records to the new vdev
/// for every one record it writes to the old one" (a quarter of the post's 2T).
#[test]
fn vdev_added_to_a_half_full_pool_takes_twice_the_writes() {
    let lab = SeedLab::new();
    let old = lab.disk("old.raw", 512 << 20);
    let new = lab.disk("new.raw", 512 << 20);
    let mnt = lab.path("tank");
    lab.zpool_ok(&["create", "-m", &mnt, "tank", &old]);
    lab.zfs_ok(&["set", "compression=off", "tank"]);
    // "create a pool with a single 2T vdev, write 1T of data to it, then add another 2T vdev"
    dd(&lab, "tank", &format!("{mnt}/first"), 256 << 20, 8);
    lab.zpool_ok(&["add", "tank", &new]);
    let old_before = lab.vdev_alloc_bytes("tank", &old);
    let new_before = lab.vdev_alloc_bytes("tank", &new);
    dd(&lab, "tank", &format!("{mnt}/second"), 192 << 20, 9);
    let old_share = lab.vdev_alloc_bytes("tank", &old) - old_before;
    let new_share = lab.vdev_alloc_bytes("tank", &new) - new_before;
    // "two records to the new vdev for every one record it writes to the old one":
    // between 1.5:1 and 2.5:1.
    let ratio = new_share as f64 / old_share as f64;
    assert!(
        (1.5..=2.5).contains(&ratio),
        "new vdev took {new_share}, old {old_share}: {ratio:.2}:1"
    );
    eprintln!("seeds added vdev: new:old {ratio:.2}:1 of later writes (post 2:1)");
}

/// Why: "Balanced writes, imbalanced deletes": two equal vdevs, recordsize=1M, files of
/// 900K (one record each) written in turn; they land alternately, so deleting the
/// even-numbered files empties one vdev and leaves the other full ("12.3M ALLOCed on
/// disk1, and 1.56G ALLOCed on disk2"). 400 files instead of the post's 3636.
#[test]
#[ignore = "within a txg the rotor now alternates 900K records exactly (metaslab \
            allocation_policy::equal_vdevs_take_turns_of_an_aliquot_whatever_small_blocks_come_between), \
            but the 360M take three txgs here and each txg's ~0.6-1M of metadata (MOS rewritten \
            every txg) decides the parity across txgs; the post's ZFS wrote 3.2G in one or two"]
fn deleting_even_files_leaves_equal_vdevs_imbalanced() {
    let lab = SeedLab::new();
    // The post's vdevs are 500G; any equal pair will do.
    let disk1 = lab.disk("ssd/alloctest/disk1.raw", 1 << 30);
    let disk2 = lab.disk("rust/alloctest/disk2.raw", 1 << 30);
    let mnt = lab.path("alloctest");
    // root@banshee:~# zpool create -oashift=13 alloctest disk1.raw disk2.raw
    lab.zpool_ok(&[
        "create",
        "-oashift=13",
        "-m",
        &mnt,
        "alloctest",
        &disk1,
        &disk2,
    ]);
    // root@banshee:~# zfs set recordsize=1M alloctest (compression was off by default then)
    lab.zfs_ok(&["set", "recordsize=1M", "alloctest"]);
    lab.zfs_ok(&["set", "compression=off", "alloctest"]);
    // root@banshee:~# for i in {1..3636} do ; cp /tmp/900K.bin /alloctest/$i.bin ; done
    let file_count = 400;
    let source = lab.path("900K.bin");
    write_random(&source, 900 << 10, 900).unwrap();
    for i in 1..=file_count {
        std::fs::copy(&source, format!("{mnt}/{i}.bin")).unwrap();
    }
    lab.settle("alloctest");
    // "alloctest 3.14G … disk1.raw 1.57G … disk2.raw 1.57G": balanced, within 10%.
    let before = (
        lab.vdev_alloc_bytes("alloctest", &disk1),
        lab.vdev_alloc_bytes("alloctest", &disk2),
    );
    let balance = before.0 as f64 / before.1 as f64;
    assert!((0.9..=1.1).contains(&balance), "{before:?}");
    // root@banshee:~# perl ~/deleteevens.pl
    for i in (2..=file_count).step_by(2) {
        std::fs::remove_file(format!("{mnt}/{i}.bin")).unwrap();
    }
    lab.settle("alloctest");
    // "disk1.raw 12.3M … disk2.raw 1.56G": one vdev keeps (almost) all of its data, the
    // other keeps under 5% of what the first holds; which one is emptied follows which
    // took the first file.
    let after = (
        lab.vdev_alloc_bytes("alloctest", &disk1),
        lab.vdev_alloc_bytes("alloctest", &disk2),
    );
    let (emptied, kept, kept_before) = if after.0 < after.1 {
        (after.0, after.1, before.1)
    } else {
        (after.1, after.0, before.0)
    };
    assert!(
        kept as f64 >= kept_before as f64 * 0.95 && (emptied as f64) < kept as f64 * 0.05,
        "before {before:?}, after deleting the evens {after:?}"
    );
    eprintln!(
        "seeds imbalanced deletes: {:.1}M/{:.1}M before, {:.1}M/{:.1}M after (post \
         1.57G/1.57G, then 12.3M/1.56G)",
        before.0 as f64 / 1048576.0,
        before.1 as f64 / 1048576.0,
        after.0 as f64 / 1048576.0,
        after.1 as f64 / 1048576.0
    );
}

/// Why: the posts wrote `dd if=/dev/zero` with compression off and got real allocations
/// (2016 OpenZFS writes zero blocks when compression is off). Zetta stores an all-zero
/// block as a hole whatever the compression, so zeros allocate nothing here: the tests
/// above write pseudorandom bytes instead. This pins the difference (docs/SEEDS.md).
#[test]
fn zeros_allocate_nothing() {
    let lab = SeedLab::new();
    let disk = lab.disk("disk.raw", 512 << 20);
    let mnt = lab.path("alloctest");
    lab.zpool_ok(&["create", "-m", &mnt, "alloctest", &disk]);
    lab.zfs_ok(&["set", "compression=off", "alloctest"]);
    lab.settle("alloctest");
    let empty_bytes = lab.list_v("alloctest")[0].2;
    std::fs::write(format!("{mnt}/64M.zero"), vec![0u8; 64 << 20]).unwrap();
    lab.settle("alloctest");
    let allocated_bytes = lab.list_v("alloctest")[0].2;
    assert!(
        allocated_bytes < empty_bytes + (1 << 20),
        "64M of zeros allocated {} bytes",
        allocated_bytes - empty_bytes
    );
    assert_eq!(
        std::fs::metadata(format!("{mnt}/64M.zero")).unwrap().len(),
        64 << 20
    );
}
