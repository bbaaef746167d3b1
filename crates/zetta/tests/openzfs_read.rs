//! Reading real OpenZFS pools' blocks from their devices: single disks, stripes, mirrors,
//! raidz1/2 (with missing and damaged devices), the big-endian SPARC pool and the modern
//! zstd pool, each block compared with what OpenZFS's `zdb -R` reads.

mod common;
#[path = "common/openzfs_pool.rs"]
#[allow(dead_code)]
mod pool;

use std::path::Path;
use zetta::zio::openzfs::blkptr::{BlockPointer, Dva};
use zetta::zio::openzfs::read::{
    checksum_matches, read_block, read_physical, read_physical_verified, PoolDevices,
};

/// Each copy (one DVA) of the rootbp and of every block of every MOS object, with zdb's
/// raw bytes of that copy.
fn mos_blocks(dir: &Path, opened: &pool::OpenPool) -> Vec<(BlockPointer, Vec<u8>)> {
    let mut logical = |bp: &BlockPointer| {
        // The walk reads through Zetta's verified reader (one zdb run per block made this
        // test minutes long); what is compared with zdb is unchanged.
        zetta::zio::openzfs::read::read_block(&opened.devices, bp, &[0u8; 32])
            .expect("a MOS block reads and verifies")
    };
    let (rootbp, objects) = pool::mos_objects(opened, &mut logical);
    let mut copies = Vec::new();
    for bp in std::iter::once(&rootbp).chain(objects.values().flatten()) {
        if bp.is_hole() || bp.is_embedded() {
            continue;
        }
        for index in 0..3 {
            if bp.dva(index).is_valid() {
                copies.push(pool::only_dva(bp, index));
            }
        }
    }
    let raws = pool::zdb_raw_blocks(dir, &opened.name, &copies);
    copies.into_iter().zip(raws).collect()
}

fn devices_without(opened: &pool::OpenPool, missing: &[usize]) -> PoolDevices {
    let mut devices = PoolDevices::new(opened.devices.vdevs.clone(), opened.devices.leaves.clone());
    for &k in missing {
        let config = pool::label0_config(opened.files[k].1.as_ref());
        devices
            .leaves
            .remove(&config.get_u64("guid").expect("guid"));
    }
    devices
}

// Why: the read path under every OpenZFS structure: a DVA must land on the right device bytes
// for single disks, stripes (vdev ids 0..2), mirrors, raidz1 (with its odd-megabyte column
// swap) and raidz2, in both byte orders. Every MOS meta-dnode block and the rootbp of every
// fixture must read back byte for byte as zdb reads them.
#[test]
fn every_mos_block_copy_reads_like_zdb() {
    let mut raidz1_odd_mib = 0;
    for (name, rels) in pool::pools() {
        let unpacked = pool::unpack(&rels);
        let opened = pool::open(&unpacked.dir);
        let blocks = mos_blocks(&unpacked.dir, &opened);
        for (bp, raw) in &blocks {
            let ours =
                read_physical(&opened.devices, bp).unwrap_or_else(|e| panic!("{name}: {bp}: {e}"));
            assert!(
                ours == *raw,
                "{name}: physical bytes of {bp} differ from zdb's"
            );
        }
        // raidz1 swaps the first two columns of blocks at odd megabytes: some copies must
        // lie there for the swap to be proven.
        let odd_mib = blocks
            .iter()
            .filter(|(bp, _)| bp.dva(0).offset_bytes().is_some_and(|o| o & (1 << 20) != 0))
            .count();
        if name.ends_with("raidz") {
            raidz1_odd_mib += odd_mib;
        }
        eprintln!(
            "{name}: {} copies read like zdb, {odd_mib} at odd megabytes",
            blocks.len()
        );
    }
    assert!(raidz1_odd_mib > 0, "no raidz1 copy at an odd megabyte");
}

// Why: raidz exists to survive a lost device: with any one device of a raidz1 or raidz2
// triple gone (and any two of the raidz2), every block is rebuilt from OpenZFS's parity by
// zetta_raidz's P/Q code, which must therefore be OpenZFS's parity.
#[test]
fn raidz_with_missing_devices_still_reads() {
    for (name, stem, parity) in [
        ("raidz1", "zfs-pool-v3raidz", 1usize),
        ("raidz2", "zfs-pool-v3raidz2", 2),
    ] {
        let rels: Vec<String> = (1..=3)
            .map(|i| format!("cli_root/zpool_upgrade/blockfiles/{stem}{i}.dat.bz2"))
            .collect();
        let unpacked = pool::unpack(&rels);
        let opened = pool::open(&unpacked.dir);
        let blocks = mos_blocks(&unpacked.dir, &opened);
        let mut sets: Vec<Vec<usize>> = (0..3).map(|k| vec![k]).collect();
        if parity == 2 {
            sets.extend([vec![0, 1], vec![0, 2], vec![1, 2]]);
        }
        for missing in sets {
            let devices = devices_without(&opened, &missing);
            for (bp, raw) in &blocks {
                let ours = read_physical(&devices, bp)
                    .unwrap_or_else(|e| panic!("{name} without {missing:?}: {bp}: {e}"));
                assert!(ours == *raw, "{name} without {missing:?}: {bp} differs");
            }
        }
        // One more missing device than parity: an error, not wrong bytes or a panic.
        let too_many: Vec<usize> = (0..=parity).collect();
        let devices = devices_without(&opened, &too_many);
        for (bp, raw) in &blocks {
            if let Ok(ours) = read_physical(&devices, bp) {
                // Only a block whose surviving columns hold all its data may still read.
                assert!(ours == *raw, "{name} without {too_many:?}: {bp} misread");
            }
        }
    }
}

// Why: a device that returns wrong bytes without an I/O error (bit rot) is found only by the
// block checksum; the reader must then try reconstructing each column in turn
// (combinatorial reconstruction) until the bytes verify against the block checksum.
#[test]
fn raidz_rebuilds_a_silently_damaged_column() {
    let rels: Vec<String> = (1..=3)
        .map(|i| format!("cli_root/zpool_upgrade/blockfiles/zfs-pool-v3raidz2{i}.dat.bz2"))
        .collect();
    let unpacked = pool::unpack(&rels);
    let blocks = {
        let opened = pool::open(&unpacked.dir);
        mos_blocks(&unpacked.dir, &opened)
    };
    // Damage each device's whole allocatable area in a copy, one device at a time.
    for k in 0..3 {
        let path = pool::open(&unpacked.dir).files[k].0.clone();
        let saved = std::fs::read(&path).expect("read device");
        let mut damaged = saved.clone();
        let end = damaged.len() - (512 << 10);
        for (i, byte) in damaged[(4 << 20)..end].iter_mut().enumerate() {
            *byte ^= (i as u8).wrapping_mul(31) | 1;
        }
        std::fs::write(&path, &damaged).expect("damage device");
        let opened = pool::open(&unpacked.dir);
        let mut unverified_wrong = 0;
        for (bp, raw) in &blocks {
            let verify = |bp: &BlockPointer, bytes: &[u8]| checksum_matches(bp, bytes, &[0; 32]);
            let ours = read_physical_verified(&opened.devices, bp, &verify)
                .unwrap_or_else(|e| panic!("device {k} damaged: {bp}: {e}"));
            assert!(ours == *raw);
            if read_physical(&opened.devices, bp).expect("reads") != *raw {
                unverified_wrong += 1;
            }
        }
        // The damage hit data columns: an unverified read returns it.
        assert!(unverified_wrong > 0, "device {k}: damage never read");
        std::fs::write(&path, &saved).expect("restore device");
    }
}

// Why: block pointers come from disk; hostile ones (vdev ids out of range, offsets past the
// device, asize and offset overflow, random words) must give errors, never panics, on a
// real raidz2 and mirror pool.
#[test]
fn hostile_block_pointers_never_panic_the_reader() {
    for stem in [
        "zfs-pool-v3raidz2",
        "zfs-pool-v3mirror",
        "zfs-pool-v3stripe",
    ] {
        let rels: Vec<String> = (1..=3)
            .map(|i| format!("cli_root/zpool_upgrade/blockfiles/{stem}{i}.dat.bz2"))
            .collect();
        let unpacked = pool::unpack(&rels);
        let opened = pool::open(&unpacked.dir);
        let (_, rootbp) = pool::newest_rootbp(&opened);
        let device_size = opened.files[0].1.size_bytes();
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..3000u64 {
            let mut bp = rootbp;
            let r = next();
            let dva = Dva {
                vdev: [0, 1, 2, 3, 0xff_ffff][(r % 5) as usize],
                grid: 0,
                asize_sectors: (next() as u32) & 0xff_ffff,
                offset_sectors: match round % 4 {
                    0 => next() >> 1,
                    1 => (device_size >> 9) + (next() % 1024),
                    2 => (1u64 << 63) - 1 - (next() % 64),
                    _ => next() % (device_size >> 9),
                },
                gang: next() % 4 == 0,
            };
            let [w0, w1] = dva.to_words();
            bp.words[0] = w0;
            bp.words[1] = w1;
            if round % 3 == 0 {
                // Random sizes and flags in the prop word.
                bp.words[6] = next();
            }
            if round % 7 == 0 {
                bp.words = std::array::from_fn(|_| next());
            }
            let _ = read_physical(&opened.devices, &bp);
            let _ = bp.to_string();
        }
    }
}

/// Every non-hole block of every MOS object, with zdb's logical (decompressed) bytes for the
/// ones zdb can read (embedded pointers come back as `None`).
fn mos_logical_blocks(dir: &Path, opened: &pool::OpenPool) -> Vec<(BlockPointer, Option<Vec<u8>>)> {
    let mut logical = |bp: &BlockPointer| {
        // The walk reads through Zetta's verified reader (one zdb run per block made this
        // test minutes long); what is compared with zdb is unchanged.
        zetta::zio::openzfs::read::read_block(&opened.devices, bp, &[0u8; 32])
            .expect("a MOS block reads and verifies")
    };
    let (rootbp, objects) = pool::mos_objects(opened, &mut logical);
    let all: Vec<BlockPointer> = std::iter::once(rootbp)
        .chain(objects.into_values().flatten())
        .filter(|bp| !bp.is_hole())
        .collect();
    let stored: Vec<BlockPointer> = all.iter().filter(|bp| !bp.is_embedded()).copied().collect();
    let mut zdb = pool::zdb_blocks(dir, &opened.name, &stored, true).into_iter();
    all.into_iter()
        .map(|bp| {
            let bytes = if bp.is_embedded() { None } else { zdb.next() };
            (bp, bytes)
        })
        .collect()
}

// Why: a block is only usable once its checksum has proved it and it is decompressed: every
// MOS block of every fixture (fletcher4 and sha256; lzjb, lz4 and zstd; embedded pointers of
// the zstd pool; the big-endian pool) must verify and decompress to zdb's logical bytes.
#[test]
fn every_mos_block_verifies_and_decompresses_like_zdb() {
    let salt = [0u8; 32];
    for (name, rels) in pool::pools() {
        let unpacked = pool::unpack(&rels);
        let opened = pool::open(&unpacked.dir);
        let blocks = mos_logical_blocks(&unpacked.dir, &opened);
        let mut embedded = 0;
        for (bp, zdb) in &blocks {
            let ours = read_block(&opened.devices, bp, &salt)
                .unwrap_or_else(|e| panic!("{name}: {bp}: {e}"));
            assert_eq!(ours.len() as u64, bp.lsize_bytes(), "{name}: {bp}");
            match zdb {
                Some(zdb) => assert!(ours == *zdb, "{name}: logical bytes of {bp} differ"),
                None => {
                    // An embedded DSL child map, snapshot map or props object is a micro ZAP:
                    // its first word is ZBT_MICRO.
                    embedded += 1;
                    if !matches!(bp.object_type(), 13..=15) {
                        continue;
                    }
                    assert_eq!(
                        bp.byte_order().u64_at(&ours, 0),
                        Ok((1 << 63) | 3),
                        "{name}: {bp}"
                    );
                }
            }
        }
        if name == "testpool_zstd" {
            assert!(embedded > 0, "the zstd pool has embedded MOS blocks");
        }
    }
}

// Why: ditto copies exist so that a damaged copy is survivable: when the first copy's bytes
// are wrong the checksum must reject them and the next DVA must be read (a reader without
// verification would return the garbage).
#[test]
fn a_damaged_first_copy_is_rejected_by_its_checksum() {
    let rels = vec!["cli_root/zpool_upgrade/blockfiles/zfs-pool-v3.dat.bz2".to_string()];
    let unpacked = pool::unpack(&rels);
    let opened = pool::open(&unpacked.dir);
    let blocks = mos_logical_blocks(&unpacked.dir, &opened);
    let device = opened.files[0].0.clone();
    drop(opened);
    let mut bytes = std::fs::read(&device).expect("device");
    let mut damaged = 0;
    for (bp, _) in &blocks {
        if bp.is_embedded() || bp.ndvas() < 2 {
            continue;
        }
        let dva = bp.dva(0);
        let start = (4 << 20) + dva.offset_bytes().expect("offset") as usize;
        for byte in &mut bytes[start..start + bp.psize_bytes() as usize] {
            *byte = !*byte;
        }
        damaged += 1;
    }
    assert!(damaged > 0);
    std::fs::write(&device, &bytes).expect("damage");
    let opened = pool::open(&unpacked.dir);
    for (bp, zdb) in &blocks {
        let ours =
            read_block(&opened.devices, bp, &[0; 32]).unwrap_or_else(|e| panic!("{bp}: {e}"));
        if let Some(zdb) = zdb {
            assert!(ours == *zdb, "{bp}: damaged copy returned");
        }
        if bp.ndvas() >= 2 {
            // Without verification, the damaged first copy comes back.
            let raw = read_physical(&opened.devices, bp).expect("reads");
            let good = read_physical_verified(&opened.devices, bp, &|_, b| {
                zetta::zio::openzfs::read::checksum_matches(bp, b, &[0; 32])
            })
            .expect("verified");
            assert_ne!(raw, good, "{bp}");
        }
    }
}

/// Copies of multi-sector blocks at odd megabytes that `zdb -dddddd` lists in a pool (as
/// pointers carrying only the address and psize: what a raw read needs).
fn odd_megabyte_blocks(dir: &Path, pool_name: &str) -> Vec<BlockPointer> {
    // zdb 2.3 trips an assertion late in some old pools' dumps; what it printed is enough.
    let out = std::process::Command::new(common::oracle::zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(["-dddddd", pool_name])
        .output()
        .expect("zdb runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut bps = Vec::new();
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(psize) = tokens.iter().find_map(|t| {
            let (_, p) = t.split_once("L/")?;
            u64::from_str_radix(p.strip_suffix('P')?, 16).ok()
        }) else {
            continue;
        };
        for token in &tokens {
            let fields: Vec<&str> = token.split(':').collect();
            let [vdev, offset, asize] = fields[..] else {
                continue;
            };
            let (Ok(vdev), Ok(offset), Ok(asize)) = (
                vdev.parse::<u32>(),
                u64::from_str_radix(offset, 16),
                u64::from_str_radix(asize, 16),
            ) else {
                continue;
            };
            if offset & (1 << 20) == 0 || psize <= 512 {
                continue;
            }
            let dva = Dva {
                vdev,
                grid: 0,
                asize_sectors: (asize >> 9) as u32,
                offset_sectors: offset >> 9,
                gang: false,
            };
            let mut bp = BlockPointer::HOLE;
            let [w0, w1] = dva.to_words();
            bp.words[0] = w0;
            bp.words[1] = w1;
            // psize - 1 in sectors, fletcher4, uncompressed: only the address and size matter.
            bp.words[6] = (((psize >> 9) - 1) << 16) | ((psize >> 9) - 1) | (2 << 32) | (7 << 40);
            bp.words[10] = 1;
            bps.push(bp);
        }
    }
    bps
}

// Why: raidz1 trades the device and offset of its first two columns for blocks at odd
// megabytes (vdev_raidz_map_alloc); a reader without the swap returns parity in place of the
// first data column. The fixtures' blocks at odd megabytes hold zeros past their first
// column (so parity equals data there), so this test has zfs-fuse write random bytes to a
// raidz1 pool and reads every block copy zdb lists at an odd megabyte as zdb -R reads it;
// the v1 fixture's (big-endian) ones too.
#[test]
fn raidz1_blocks_at_odd_megabytes_read_like_zdb() {
    assert!(
        common::zfs_fuse::available(),
        "zfs-fuse is missing: scripts/setup.sh installs it"
    );
    let dir = std::env::temp_dir().join(format!("zetta-ozfs-raidz1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let devices_dir = dir.join("devices");
    std::fs::create_dir_all(&devices_dir).expect("dir");
    let files: Vec<String> = (1..=3)
        .map(|i| {
            let path = devices_dir.join(format!("d{i}"));
            let file = std::fs::File::create(&path).expect("device file");
            file.set_len(64 << 20).expect("size");
            path.to_string_lossy().into_owned()
        })
        .collect();
    let pool_name = format!("zoddmib{}", std::process::id());
    {
        let mut daemon = common::zfs_fuse::ZfsFuse::start();
        let mount = dir.join("mnt");
        let mut args = vec!["raidz"];
        args.extend(files.iter().map(String::as_str));
        daemon.create_pool(&pool_name, &mount, &args);
        let mut state = 0x1234_5678_9abc_def1u64;
        let data: Vec<u8> = (0..(6 << 20))
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        std::fs::write(mount.join("random"), &data).expect("write through zfs-fuse");
        daemon.export_all();
    }
    let opened = pool::open(&devices_dir);
    let bps = odd_megabyte_blocks(&devices_dir, &pool_name);
    assert!(bps.len() >= 8, "blocks at odd megabytes: {}", bps.len());
    let raws = pool::zdb_raw_blocks(&devices_dir, &pool_name, &bps);
    for (bp, raw) in bps.iter().zip(raws) {
        let ours = read_physical(&opened.devices, bp).unwrap_or_else(|e| panic!("{bp}: {e}"));
        assert!(ours == raw, "{bp}: differs from zdb (raidz1 column swap)");
    }
    drop(opened);
    let _ = std::fs::remove_dir_all(&dir);

    let rels: Vec<String> = (1..=3)
        .map(|i| format!("cli_root/zpool_upgrade/blockfiles/zfs-pool-v1raidz{i}.dat.bz2"))
        .collect();
    let unpacked = pool::unpack(&rels);
    let opened = pool::open(&unpacked.dir);
    let bps = odd_megabyte_blocks(&unpacked.dir, &opened.name);
    assert!(bps.len() >= 3, "v1 blocks at odd megabytes: {}", bps.len());
    let raws = pool::zdb_raw_blocks(&unpacked.dir, &opened.name, &bps);
    for (bp, raw) in bps.iter().zip(raws) {
        let ours = read_physical(&opened.devices, bp).unwrap_or_else(|e| panic!("{bp}: {e}"));
        assert!(ours == raw, "{bp}: differs from zdb (raidz1 column swap)");
    }
}
