//! Space map persistence: updates taken each txg, replayed at import, must rebuild exactly the
//! allocator state; damaged space maps must be errors, never panics.

use std::collections::BTreeMap;

use zetta_metaslab::space_map::{encode_records, encode_sync_records, words_to_bytes};
use zetta_metaslab::{
    decode_entries, MetaslabClass, MetaslabError, MetaslabGroup, SpaceMapEntry, SpaceMapGeometry,
};

fn geometry(ms_index: usize) -> SpaceMapGeometry {
    SpaceMapGeometry {
        start_bytes: (ms_index as u64) << MS_SHIFT,
        shift: ASHIFT,
    }
}

const MIB: u64 = 1 << 20;
const ASIZE_BYTES: u64 = 64 * MIB;
const ASHIFT: u32 = 12;
const MS_SHIFT: u32 = 22; // 16 metaslabs of 4M

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// What the engine keeps on disk: one entry list per metaslab, as bytes.
#[derive(Default)]
struct Disk {
    objects: BTreeMap<usize, Vec<u8>>,
    condense_count: usize,
}

impl Disk {
    fn sync(&mut self, class: &mut MetaslabClass, txg: u64) {
        for update in class.take_space_map_updates() {
            assert_eq!(update.start_bytes, geometry(update.ms_index).start_bytes);
            let records =
                encode_sync_records(&update.entries, geometry(update.ms_index), txg, 1).unwrap();
            let bytes = words_to_bytes(&encode_records(&records));
            let object = self.objects.entry(update.ms_index).or_default();
            if update.condense {
                self.condense_count += 1;
                object.clear();
            }
            object.extend_from_slice(&bytes);
        }
    }

    fn import(&self, mos_blocks: &[(u64, u64)]) -> MetaslabGroup {
        let mut group = MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap();
        for (&ms_index, bytes) in &self.objects {
            group
                .load(
                    ms_index,
                    &decode_entries(bytes, geometry(ms_index)).unwrap(),
                )
                .unwrap();
        }
        for &(offset_bytes, size_bytes) in mos_blocks {
            group.mark_allocated(offset_bytes, size_bytes).unwrap();
        }
        group
    }
}

fn assert_same_state(live: &MetaslabGroup, imported: &MetaslabGroup) {
    assert_eq!(live.free_bytes(), imported.free_bytes());
    for (a, b) in live.metaslabs.iter().zip(&imported.metaslabs) {
        assert_eq!(
            a.free_tree(),
            b.free_tree(),
            "free ranges of metaslab {}",
            a.index
        );
        assert_eq!(
            a.recorded_tree(),
            b.recorded_tree(),
            "recorded of metaslab {}",
            a.index
        );
    }
}

/// Random allocations and frees over `txg_count` txgs; returns the live class, the disk, and
/// the MOS (unrecorded) blocks still allocated. All deferred frees are released at the end.
fn simulate(
    seed: u64,
    txg_count: u64,
    ops_per_txg: usize,
) -> (MetaslabClass, Disk, Vec<(u64, u64)>) {
    let mut rng = Rng(seed);
    let mut class = MetaslabClass::new();
    class.add_group(MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap());
    let mut disk = Disk::default();
    let mut live: Vec<(u64, u64, bool)> = Vec::new();
    for txg in 1..=txg_count {
        for _ in 0..ops_per_txg {
            if live.is_empty() || rng.next() % 5 < 3 {
                let size_bytes = 4096 * (1 + rng.next() % 16);
                let record = !rng.next().is_multiple_of(8);
                if let Ok(dvas) = class.allocate(1, &|_| size_bytes, record, txg) {
                    live.push((dvas[0].1, dvas[0].2, record));
                }
            } else {
                let victim = (rng.next() % live.len() as u64) as usize;
                let (offset_bytes, size_bytes, record) = live.swap_remove(victim);
                class
                    .free(0, offset_bytes, size_bytes, record, txg)
                    .unwrap();
            }
        }
        disk.sync(&mut class, txg);
        class.txg_committed(txg);
    }
    class.txg_committed(txg_count + 2);
    assert_eq!(class.deferred_bytes(), 0);
    let mos_blocks = live.iter().filter(|b| !b.2).map(|b| (b.0, b.1)).collect();
    (class, disk, mos_blocks)
}

#[test]
fn replaying_space_maps_rebuilds_the_exact_free_ranges() {
    // Why: import trusts the space maps to say which space is in use; any difference between
    // the live allocator and the replayed one is either leaked space or (worse) a range that
    // gets handed out twice after a reboot.
    let (class, disk, mos_blocks) = simulate(0x1234_5678, 40, 400);
    let imported = disk.import(&mos_blocks);
    assert_same_state(class.group(0).unwrap(), &imported);
}

#[test]
fn condensing_triggers_and_stays_equivalent() {
    // Why: without condensing an append-only space map grows forever under churn; a condensed
    // map must describe exactly the same allocations as the log it replaces.
    let (class, disk, mos_blocks) = simulate(0xdead_beef, 200, 300);
    assert!(disk.condense_count > 0, "no condense happened");
    let group = class.group(0).unwrap();
    for metaslab in &group.metaslabs {
        // After every sync a map is either appended below the threshold or condensed.
        let threshold = 4 * metaslab.recorded_tree().segment_count() as u64 + 64;
        assert!(
            metaslab.entry_count() <= threshold,
            "metaslab {}",
            metaslab.index
        );
    }
    assert_same_state(group, &disk.import(&mos_blocks));
}

#[test]
fn condense_replaces_a_long_log_of_one_block() {
    // Why: the simplest churn (one block allocated and freed each txg) must trigger a condense
    // once the log passes 4 x segments + 64 entries, and the condensed map must be tiny.
    let mut class = MetaslabClass::new();
    class.add_group(MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap());
    let keep = class.allocate(1, &|_| 4096, true, 1).unwrap()[0];
    let mut condensed = None;
    let mut previous = None;
    for txg in 2..100 {
        // A block allocated in one txg and freed in the next: both reach the map (a block
        // freed in the txg that allocated it never does).
        let dva = class.allocate(1, &|_| 4096, true, txg).unwrap()[0];
        if let Some((offset_bytes, size_bytes)) = previous.replace((dva.1, dva.2)) {
            class.free(0, offset_bytes, size_bytes, true, txg).unwrap();
        }
        for update in class.take_space_map_updates() {
            if update.condense {
                condensed.get_or_insert((txg, update.entries));
            }
        }
        class.txg_committed(txg);
    }
    let (txg, entries) = condensed.expect("condense never triggered");
    assert!(txg > 30, "condensed too early at txg {txg}");
    // The block kept since txg 1 and the one allocated in the condensing txg.
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(
        entries[0],
        SpaceMapEntry::Alloc {
            offset_bytes: keep.1,
            size_bytes: keep.2
        }
    );
}

#[test]
fn inconsistent_space_maps_are_errors_naming_the_metaslab() {
    // Why: a damaged or misdirected space map must fail import with a message that says where,
    // instead of building a free tree that would hand out live data.
    let mut group = MetaslabGroup::with_ms_shift(3, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap();
    let alloc = |offset_bytes, size_bytes| SpaceMapEntry::Alloc {
        offset_bytes,
        size_bytes,
    };
    let free = |offset_bytes, size_bytes| SpaceMapEntry::Free {
        offset_bytes,
        size_bytes,
    };
    let cases = [
        vec![alloc(0, 4096)],                             // belongs to metaslab 0
        vec![alloc(8 * MIB - 4096, 8192)],                // crosses the end of metaslab 1
        vec![alloc(4 * MIB, 4096), alloc(4 * MIB, 8192)], // double alloc
        vec![free(4 * MIB, 4096)],                        // free of never-allocated
        vec![alloc(4 * MIB + 512, 4096)],                 // misaligned
    ];
    for entries in cases {
        let error = group.load(1, &entries).unwrap_err();
        assert!(matches!(
            error,
            MetaslabError::SpaceMapEntryInconsistent {
                vdev_id: 3,
                ms_index: 1,
                ..
            }
        ));
        assert!(error.to_string().contains("metaslab 1"));
        assert_eq!(group.free_bytes(), ASIZE_BYTES, "failed load changed state");
    }
    assert_eq!(
        group.load(16, &[]),
        Err(MetaslabError::NoSuchMetaslab {
            vdev_id: 3,
            ms_index: 16
        })
    );
    assert!(matches!(
        group
            .mark_allocated(4 * MIB, 4096)
            .and(group.mark_allocated(4 * MIB, 4096)),
        Err(MetaslabError::AlreadyAllocated { .. })
    ));
}

#[test]
fn random_bytes_never_panic_decode_or_load() {
    // Why: fuzz the untrusted path end to end. Invariants: decode and load return Ok or Err,
    // never panic; a failed load leaves the group unchanged; a successful one keeps
    // free + recorded <= size.
    let mut rng = Rng(0x0bad_cafe);
    for round in 0..3000 {
        let length_bytes = (rng.next() % 200) as usize;
        let mut bytes: Vec<u8> = (0..length_bytes).map(|_| rng.next() as u8).collect();
        if round % 2 == 0 {
            // Plausible one-word entries: small offsets inside a metaslab, runs of a few
            // sectors, and debug words.
            bytes = (0..(rng.next() % 12))
                .flat_map(|_| {
                    let word = match rng.next() % 3 {
                        0 => (2 << 62) | (rng.next() % 1000),
                        kind => {
                            let offset = rng.next() % ((1 << MS_SHIFT) >> ASHIFT);
                            let run = rng.next() % 4;
                            (offset << 16) | ((kind - 1) << 15) | run
                        }
                    };
                    word.to_le_bytes()
                })
                .collect();
        }
        let ms_index = (rng.next() % 17) as usize;
        let Ok(entries) = decode_entries(&bytes, geometry(ms_index)) else {
            continue;
        };
        let mut group = MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap();
        let free_before_bytes = group.free_bytes();
        if group.load(ms_index, &entries).is_err() {
            assert_eq!(group.free_bytes(), free_before_bytes);
        }
        for metaslab in &group.metaslabs {
            metaslab.free_tree().debug_assert_consistent();
            assert!(
                metaslab.free_bytes() + metaslab.recorded_tree().total_bytes()
                    <= metaslab.size_bytes
            );
        }
    }
}

#[test]
fn a_block_freed_in_its_own_txg_never_reaches_the_map() {
    // Why: OpenZFS's metaslab_sync writes the txg's allocating tree then its freeing tree,
    // and a block freed in the txg that allocated it leaves the allocating tree
    // (metaslab_unalloc_dva) instead of being written as ALLOC then FREE; the old private
    // format logged both. The update holds the allocations in offset order, then the frees.
    let mut class = MetaslabClass::new();
    class.add_group(MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap());
    let old = class.allocate(1, &|_| 8192, true, 1).unwrap()[0];
    assert_eq!(class.take_space_map_updates().len(), 1);
    class.txg_committed(1);
    let kept = class.allocate(1, &|_| 4096, true, 2).unwrap()[0];
    let gone = class.allocate(1, &|_| 4096, true, 2).unwrap()[0];
    class.free(0, gone.1, gone.2, true, 2).unwrap();
    class.free(0, old.1, old.2, true, 2).unwrap();
    let updates = class.take_space_map_updates();
    assert_eq!(updates.len(), 1);
    assert_eq!(
        updates[0].entries,
        vec![
            SpaceMapEntry::Alloc {
                offset_bytes: kept.1,
                size_bytes: 4096
            },
            SpaceMapEntry::Free {
                offset_bytes: old.1,
                size_bytes: 8192
            },
        ]
    );
    assert_eq!(updates[0].alloc_bytes, 4096);
    assert!(class.take_space_map_updates().is_empty());
}

#[test]
fn a_map_condenses_only_in_the_first_sync_pass() {
    // Why: format 16 syncs the MOS in passes until the maps hold its own blocks; a condense
    // truncates the map and frees its old blocks, which a later pass would chase again, so
    // (as OpenZFS's metaslab_sync) only pass 1 condenses. A map past the threshold is
    // appended to in pass 2 and condensed in the next txg's pass 1; `has_space_map_updates`
    // says when a pass has nothing left.
    let mut class = MetaslabClass::new();
    class.add_group(MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap());
    // Allocations freed a txg later, each written in a later pass: a map of 80 entries
    // that records nothing, past the threshold (64 entries + 4 per recorded segment).
    let mut txg = 1;
    for _ in 0..40 {
        let a = class.allocate(1, &|_| 4096, true, txg).unwrap()[0];
        assert!(class
            .take_space_map_updates_in_pass(2)
            .iter()
            .all(|u| !u.condense));
        class.txg_committed(txg);
        txg += 1;
        class.free(0, a.1, a.2, true, txg).unwrap();
        assert!(class
            .take_space_map_updates_in_pass(2)
            .iter()
            .all(|u| !u.condense));
        class.txg_committed(txg);
        txg += 1;
    }
    assert!(!class.has_space_map_updates());
    class.allocate(1, &|_| 4096, true, txg).unwrap();
    assert!(class.has_space_map_updates());
    let later = class.take_space_map_updates_in_pass(2);
    assert_eq!(later.len(), 1);
    assert!(!later[0].condense, "pass 2 appends");
    assert!(!class.has_space_map_updates());
    class.allocate(1, &|_| 4096, true, txg).unwrap();
    let first = class.take_space_map_updates_in_pass(1);
    assert!(first[0].condense, "pass 1 condenses the long map");
}

#[test]
fn a_claimed_range_reaches_the_map_and_a_taken_one_is_refused() {
    // Why: import claims the intent log blocks written after the last commit (OpenZFS's
    // `metaslab_claim` from `zil_claim`): exactly that range must become allocated and be
    // written to the claim txg's map, and a range some allocation already holds must be
    // refused without changing anything (a chain pointer into space that is in use).
    let mut class = MetaslabClass::new();
    class.add_group(MetaslabGroup::with_ms_shift(0, ASIZE_BYTES, ASHIFT, MS_SHIFT).unwrap());
    let free_before = class.free_bytes();
    class.claim(0, 5 * MIB + 8192, 12288, 7).unwrap();
    assert_eq!(class.free_bytes(), free_before - 12288);
    let updates = class.take_space_map_updates();
    assert_eq!(updates.len(), 1);
    assert_eq!(
        updates[0].entries,
        vec![SpaceMapEntry::Alloc {
            offset_bytes: 5 * MIB + 8192,
            size_bytes: 12288
        }]
    );
    class.txg_committed(7);
    // Overlapping the claimed range, or straddling two metaslabs: refused, nothing changed.
    assert!(class.claim(0, 5 * MIB + 4096, 8192, 8).is_err());
    assert!(class.claim(0, 4 * MIB - 4096, 8192, 8).is_err());
    assert!(class.claim(3, 0, 4096, 8).is_err());
    assert_eq!(class.free_bytes(), free_before - 12288);
    assert!(class.take_space_map_updates().is_empty());
    // A claimed block is freed like any other (deferred: it was read at import).
    class
        .free_deferred(0, 5 * MIB + 8192, 12288, true, 8)
        .unwrap();
    class.txg_committed(8);
    class.txg_committed(10);
    assert_eq!(class.free_bytes(), free_before);
}
