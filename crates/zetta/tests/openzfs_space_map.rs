//! Space maps as OpenZFS writes them (issue 14, increment 5a): the codec of
//! `zetta_metaslab::space_map`, which the engine writes with, checked against real OpenZFS
//! pools' space maps (golden vectors: every word and bonus re-encodes byte for byte, and the
//! records are exactly what OpenZFS's `zdb -mmmm` prints), and a Zetta pool's maps read
//! back by the part-1 reader (`spa::openzfs::space`) replay to the allocator's own state.

mod common;

use common::oracle::{open_devices, open_pool};

use common::oracle::{unpack, zdb, PoolDir};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
use zetta::spa::openzfs::discover::find_pools_with_zetta;
use zetta::spa::openzfs::pool::OpenZfsPool;
use zetta::spa::openzfs::space::{space_maps, MetaslabSpaceMap};
use zetta_metaslab::space_map::{encode_records, MapType, SpaceMapRecord, SM_NO_VDEVID};

/// What `zdb -mmmm` prints for one space map: object -> its entry lines, normalized to
/// `A|F start-end size words` and `ALLOC|FREE|CONDENSE txg pass` / `PADDING`.
fn zdb_space_maps(pool_dir: &PoolDir, pool: &str) -> BTreeMap<u64, Vec<String>> {
    let out = Command::new(zdb())
        .env("ZDB_NO_ZLE", "1")
        .args(["-AAA", "-e", "-p"])
        .arg(&pool_dir.dir)
        .args(["-mmmm", pool])
        .output()
        .expect("zdb runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut maps = BTreeMap::new();
    let mut current: Option<u64> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("space map object ") {
            let object = rest.trim_end_matches(':').parse().expect("object number");
            maps.insert(object, Vec::new());
            current = Some(object);
            continue;
        }
        let Some(object) = current else { continue };
        if !t.starts_with('[') {
            if !t.starts_with("smp_") && !t.is_empty() {
                current = None;
            }
            continue;
        }
        let body = t.split_once(']').map(|(_, b)| b.trim()).unwrap_or("");
        let f: Vec<&str> = body.split_whitespace().collect();
        let normalized = match f.as_slice() {
            ["PADDING"] => "PADDING".to_string(),
            [action, "txg", txg, "pass", pass] => {
                format!("{} {txg} {pass}", action.trim_end_matches(':'))
            }
            [kind, "range:", range, "size:", size, "vdev:", vdev, "words:", words] => {
                let size = u64::from_str_radix(size, 16).expect("hex size");
                let vdev: u64 = vdev.parse().expect("vdev");
                format!("{kind} {range} {size:x} {vdev} {words}")
            }
            _ => panic!("unexpected zdb line {line:?}"),
        };
        maps.get_mut(&object).expect("current map").push(normalized);
    }
    maps
}

/// Our decoding of one map, in the form `zdb_space_maps` normalizes zdb's lines to.
fn our_lines(map: &MetaslabSpaceMap) -> Vec<String> {
    let shift = map.geometry.shift;
    let start = map.geometry.start_bytes;
    let range = |maptype: MapType, offset: u64, run: u64, vdev: u64, words: u8| {
        let kind = if maptype == MapType::Alloc { "A" } else { "F" };
        let (offset, size) = ((offset << shift) + start, run << shift);
        format!(
            "{kind} {offset:010x}-{:010x} {size:x} {vdev} {words}",
            offset + size
        )
    };
    map.records()
        .unwrap()
        .iter()
        .map(|record| match *record {
            SpaceMapRecord::Debug { txg: 0, .. } => "PADDING".to_string(),
            SpaceMapRecord::Debug {
                action,
                sync_pass,
                txg,
            } => {
                let name = ["ALLOC", "FREE", "CONDENSE", "INVALID"][usize::from(action)];
                format!("{name} {txg} {sync_pass}")
            }
            SpaceMapRecord::One {
                maptype,
                offset,
                run,
            } => range(maptype, offset, run, u64::from(SM_NO_VDEVID), 1),
            SpaceMapRecord::Two {
                maptype,
                offset,
                run,
                vdev,
                ..
            } => range(maptype, offset, run, u64::from(vdev), 2),
        })
        .collect()
}

/// zfs-pool-v15's space map object 26 (metaslab 0): smp_object 26, smp_length 0x98,
/// smp_alloc 0x7c00; a debug word (ALLOC, pass 1, txg 19), ALLOC of 18 sectors at 0, ALLOC of
/// one sector at 0x29.
const GOLDEN_V15_BONUS: [u8; 24] = [
    0x1a, 0, 0, 0, 0, 0, 0, 0, 0x98, 0, 0, 0, 0, 0, 0, 0, 0, 0x7c, 0, 0, 0, 0, 0, 0,
];
const GOLDEN_V15_WORDS: [u64; 3] = [0x8004_0000_0000_0013, 0x11, 0x0029_0000];

/// Pools of OpenZFS's own test suite: a v15 pool, the v5000 `unclean_export` and
/// `testpool_zstd` pools (320-byte bonuses with histograms), and a raidz pool. None of their
/// metaslab maps holds a two-word entry (OpenZFS writes those only for runs or offsets a
/// word cannot hold); `golden_words` in space_map.rs pins that layout.
fn fixtures() -> Vec<Vec<String>> {
    const UPGRADE: &str = "cli_root/zpool_upgrade/blockfiles";
    vec![
        vec![format!("{UPGRADE}/zfs-pool-v15.dat.bz2")],
        vec!["cli_root/zpool_import/blockfiles/unclean_export.dat.bz2".to_string()],
        vec!["compression/testpool_zstd.tar.gz".to_string()],
        (1..=3)
            .map(|i| format!("{UPGRADE}/zfs-pool-v3raidz{i}.dat.bz2"))
            .collect(),
    ]
}

// Why: Zetta writes its space maps with this codec; before increment 5a the maps were a
// private 16-byte format no OpenZFS tool could read. Real OpenZFS space maps (bonus and
// every word) must decode and re-encode byte for byte, and decode to exactly the records
// OpenZFS's own zdb prints.
#[test]
fn real_openzfs_space_maps_round_trip_and_match_zdb() {
    let mut golden_seen = false;
    let mut maps_seen = 0;
    for rels in fixtures() {
        let pool_dir = unpack(&rels);
        let devices = open_devices(&pool_dir.devices);
        let pool = open_pool(&devices);
        let name = pool.name.clone();
        let maps = space_maps(&pool).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!maps.is_empty(), "{name}: no space maps");
        let zdb_maps = zdb_space_maps(&pool_dir, &name);
        for map in &maps {
            maps_seen += 1;
            if name == "v15-pool" && map.object == 26 {
                // The golden vector docs/ONDISK.md shows.
                assert_eq!(map.bonus[..24], GOLDEN_V15_BONUS, "{name}: bonus of 26");
                assert_eq!(map.words[..3], GOLDEN_V15_WORDS, "{name}: words of 26");
                golden_seen = true;
            }
            assert_eq!(
                map.phys.encode(),
                map.bonus,
                "{name}: bonus of {}",
                map.object
            );
            assert_eq!(map.phys.object, map.object, "{name}: smp_object");
            let records = map.records().unwrap();
            assert_eq!(
                encode_records(&records),
                map.words,
                "{name}: words of space map {}",
                map.object
            );
            let zdb_lines = zdb_maps
                .get(&map.object)
                .unwrap_or_else(|| panic!("{name}: zdb printed no space map {}", map.object));
            assert_eq!(
                &our_lines(map),
                zdb_lines,
                "{name}: entries of space map {}",
                map.object
            );
            // smp_alloc is what the entries allocate (no log space maps in these pools'
            // metaslabs beyond what they flushed: the replay is the metaslab's own state).
            let allocated = map.allocated().unwrap();
            assert_eq!(
                allocated.total_bytes() as i64,
                map.phys.alloc_bytes,
                "{name}: smp_alloc of {}",
                map.object
            );
        }
    }
    assert!(maps_seen >= 9, "only {maps_seen} maps");
    assert!(golden_seen, "the v15 pool's space map 26 was not read");
}

// Why: the engine must write its space maps in OpenZFS's format (before increment 5a a
// private 16-byte entry no OpenZFS reader decodes): a Zetta pool's maps, read through the
// part-1 OpenZFS reader and replayed from all-free metaslabs, give exactly the allocator's
// recorded state, with `smp_alloc` equal to it, one-word entries only (spacemap_v2 is not
// enabled) and a debug word naming the txg before every sync's entries.
#[test]
fn a_zetta_pools_space_maps_read_back_through_the_openzfs_reader() {
    use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
    let dir = std::env::temp_dir().join(format!("zetta-sm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<PathBuf> = (0..2).map(|i| dir.join(format!("d{i}"))).collect();
    for path in &paths {
        std::fs::File::create(path)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
    }
    let tops: Vec<TopSpec> = paths
        .iter()
        .map(|p| {
            let path = p.to_str().unwrap().to_string();
            TopSpec {
                kind: TopKind::Single,
                leaves: vec![(
                    path.clone(),
                    Arc::new(FileDevice::open(&path).unwrap()) as DeviceRef,
                )],
                is_log: false,
            }
        })
        .collect();
    let mut spa = Spa::create("smpool", &tops, &CreateOptions::default()).unwrap();
    // Allocate in one txg, free some in the next ones, so maps hold ALLOC and FREE runs.
    let mut objects = Vec::new();
    for round in 0..6u64 {
        for i in 0..8u64 {
            let id = spa.create_object(4096).unwrap();
            let data: Vec<u8> = (0..(64u64 << 10))
                .map(|b| (b * 31 + i * 7 + round) as u8)
                .collect();
            spa.write_object(id, 0, &data).unwrap();
            objects.push(id);
        }
        if round % 2 == 1 {
            for id in objects.drain(..5) {
                spa.free_object(id).unwrap();
            }
        }
        spa.sync().unwrap();
    }
    spa.export().unwrap();
    // Since format 16 the export's own MOS writes are in the maps too: the allocator to
    // compare with is that of a read-only import, which writes nothing.
    let spa = {
        let devices = open_devices(&paths);
        let candidates = zetta::spa::find_pools(&devices);
        assert_eq!(candidates.len(), 1, "the Zetta pool");
        Spa::import_with(&candidates[0], None, 64 << 20, true).unwrap()
    };
    let synced = spa.last_synced_txg().0;
    let expected: BTreeMap<(u64, u64), Vec<(u64, u64)>> = {
        let allocator = spa.zio.allocator.lock();
        allocator
            .groups
            .iter()
            .flat_map(|g| {
                g.metaslabs.iter().map(move |m| {
                    (
                        (u64::from(g.vdev_id), m.index as u64),
                        m.recorded_tree().iter().collect(),
                    )
                })
            })
            .filter(|(_, ranges): &(_, Vec<_>)| !ranges.is_empty())
            .collect()
    };
    assert!(!expected.is_empty());
    drop(spa);

    let devices = open_devices(&paths);
    let candidates = find_pools_with_zetta(&devices, 0);
    assert_eq!(candidates.len(), 1, "the Zetta pool");
    let pool = OpenZfsPool::open_devices(&candidates[0], &devices)
        .unwrap_or_else(|e| panic!("the part-1 reader opens a Zetta pool's MOS: {e}"));
    let maps = space_maps(&pool).unwrap();
    let mut replayed = BTreeMap::new();
    for map in &maps {
        let records = map.records().unwrap();
        assert!(
            matches!(records.first(), Some(SpaceMapRecord::Debug { txg, sync_pass, .. }) if *txg >= 4 && *txg <= synced && *sync_pass >= 1),
            "map {} opens with {:?}",
            map.object,
            records.first()
        );
        assert!(records
            .iter()
            .all(|r| !matches!(r, SpaceMapRecord::Two { .. })));
        assert_eq!(
            map.bonus.len(),
            24,
            "no spacemap_histogram: SPACE_MAP_SIZE_V0"
        );
        assert_eq!(map.phys.object, map.object);
        assert_eq!(map.phys.length_bytes, map.words.len() as u64 * 8);
        let allocated = map.allocated().unwrap();
        assert_eq!(allocated.total_bytes() as i64, map.phys.alloc_bytes);
        let ranges: Vec<(u64, u64)> = allocated.iter().collect();
        if !ranges.is_empty() {
            replayed.insert((map.vdev_id, map.ms_index), ranges);
        }
    }
    assert_eq!(replayed, expected);
    let _ = std::fs::remove_dir_all(&dir);
}
