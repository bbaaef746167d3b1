//! Pool-level tests on in-memory devices: the engine's life cycle end to end.

use super::*;
use crate::io::MemDevice;
use crate::rand::SeededRng;
use std::sync::Arc;

pub(crate) fn mem_devices(count: usize, size_bytes: u64) -> Vec<(String, Arc<MemDevice>)> {
    (0..count)
        .map(|i| {
            (
                format!("/mem/d{i}"),
                Arc::new(MemDevice::new(&format!("/mem/d{i}"), size_bytes)),
            )
        })
        .collect()
}

pub(crate) fn spec(kind: TopKind, devices: &[(String, Arc<MemDevice>)]) -> TopSpec {
    TopSpec {
        kind,
        leaves: devices
            .iter()
            .map(|(path, device)| (path.clone(), device.clone() as DeviceRef))
            .collect(),
        is_log: false,
    }
}

/// A pool named `name` on the first device, default options.
pub(crate) fn single_pool(name: &str, devices: &[(String, Arc<MemDevice>)]) -> Spa {
    Spa::create(
        name,
        &[spec(TopKind::Single, &devices[..1])],
        &CreateOptions::default(),
    )
    .unwrap()
}

pub(crate) fn reimport(devices: &[(String, Arc<MemDevice>)]) -> Result<Spa, SpaError> {
    let refs: Vec<DeviceRef> = devices
        .iter()
        .map(|(_, d)| d.clone() as DeviceRef)
        .collect();
    let found = find_pools(&refs);
    let candidate = found
        .first()
        .ok_or_else(|| SpaError::NoSuchPool("?".to_string()))?;
    Spa::import(candidate, None, 64 << 20)
}

fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    SeededRng::new(seed).fill(&mut data);
    data
}

/// The basic promise: what was written and committed is there after export and import.
#[test]
fn create_write_export_import_read() {
    let devices = mem_devices(1, 128 << 20);
    let mut spa = single_pool("tank", &devices);
    let small = spa.create_object(512).unwrap();
    let big = spa.create_object(512).unwrap();
    spa.write_object(small, 0, b"hello").unwrap();
    let data = random_bytes(1, 3 << 20);
    spa.write_object(big, 0, &data).unwrap();
    spa.sync().unwrap();
    spa.write_object(big, 100_000, b"overwrite").unwrap();
    spa.export().unwrap();

    let mut spa = reimport(&devices).unwrap();
    assert_eq!(spa.name, "tank");
    assert_eq!(spa.read_object(small, 0, 100).unwrap(), b"hello");
    let mut expected = data.clone();
    expected[100_000..100_009].copy_from_slice(b"overwrite");
    assert_eq!(spa.read_object(big, 0, data.len()).unwrap(), expected);
    // Objects below `small` are the root filesystem's ZPL layout.
    let ids: Vec<_> = spa
        .object_ids()
        .unwrap()
        .into_iter()
        .filter(|&id| id >= small)
        .collect();
    assert_eq!(ids, vec![small, big]);
}

/// Freed space must come back: allocate, free, sync past the defer window, and the pool's
/// allocated bytes return to where they were.
#[test]
fn freeing_returns_space() {
    let devices = mem_devices(1, 128 << 20);
    let mut spa = single_pool("tank", &devices);
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, baseline, _) = spa.space();
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &random_bytes(2, 8 << 20)).unwrap();
    spa.sync().unwrap();
    let (_, full, _) = spa.space();
    assert!(full > baseline + (8 << 20));
    spa.free_object(id).unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, after, _) = spa.space();
    assert!(
        after <= baseline + (256 << 10),
        "baseline {baseline} after {after}"
    );
    spa.export().unwrap();
    let spa = reimport(&devices).unwrap();
    let (_, reloaded, _) = spa.space();
    assert!(
        reloaded <= baseline + (256 << 10),
        "baseline {baseline} reloaded {reloaded}"
    );
}

/// Compression is stored only when it pays, and data reads back identical either way.
#[test]
fn compressible_data_takes_less_space() {
    let devices = mem_devices(1, 128 << 20);
    let mut spa = single_pool("tank", &devices);
    let (_, before, _) = spa.space();
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog. "
        .iter()
        .cycle()
        .take(4 << 20)
        .copied()
        .collect();
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &text).unwrap();
    spa.sync().unwrap();
    let (_, after, _) = spa.space();
    assert!(
        after - before < (1 << 20),
        "compressed text used {} bytes",
        after - before
    );
    assert_eq!(spa.read_object(id, 0, text.len()).unwrap(), text);
}

/// Sparse objects: holes read as zeros and cost nothing.
#[test]
fn holes_read_as_zeros() {
    let devices = mem_devices(1, 128 << 20);
    let mut spa = single_pool("tank", &devices);
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 10 << 30, b"far away").unwrap();
    spa.sync().unwrap();
    assert_eq!(spa.object_size(id).unwrap(), (10 << 30) + 8);
    assert_eq!(spa.read_object(id, 5 << 30, 4).unwrap(), vec![0u8; 4]);
    assert_eq!(spa.read_object(id, 10 << 30, 8).unwrap(), b"far away");
}

/// Pool with several vdev kinds: mirror and raidz round trip.
#[test]
fn mirror_and_raidz_round_trip() {
    for kind in [
        TopKind::Mirror,
        TopKind::Raidz(1),
        TopKind::Raidz(2),
        TopKind::Raidz(3),
    ] {
        let count = match kind {
            TopKind::Mirror => 3,
            TopKind::Raidz(p) => 3 + usize::from(p),
            TopKind::Single => 1,
        };
        let devices = mem_devices(count, 96 << 20);
        let mut spa =
            Spa::create("tank", &[spec(kind, &devices)], &CreateOptions::default()).unwrap();
        let id = spa.create_object(512).unwrap();
        let data = random_bytes(3, 5 << 20);
        spa.write_object(id, 0, &data).unwrap();
        spa.export().unwrap();
        let mut spa = reimport(&devices).unwrap();
        assert_eq!(
            spa.read_object(id, 0, data.len()).unwrap(),
            data,
            "{kind:?}"
        );
    }
}

/// Every checksum and compression setting of the pipeline round trips through a pool and
/// across export/import (the algorithm ids in block pointers are on-disk format).
#[test]
fn every_checksum_and_compression_round_trips() {
    use zetta_zcommon::checksum::ChecksumKind;
    use zetta_zcommon::compress::Compression;
    let devices = mem_devices(1, 128 << 20);
    let mut spa = single_pool("algos", &devices);
    let text: Vec<u8> = b"records compress per block; "
        .iter()
        .cycle()
        .take(300_000)
        .copied()
        .collect();
    let mut written = Vec::new();
    let checksums = [
        ChecksumKind::Fletcher4,
        ChecksumKind::Sha256,
        ChecksumKind::Blake3,
        ChecksumKind::Off,
    ];
    let compressions = [
        Compression::Off,
        Compression::Lz4,
        Compression::Lzjb,
        Compression::Zle,
        Compression::Gzip(1),
        Compression::Gzip(9),
        Compression::Zstd(3),
        Compression::Zstd(19),
        Compression::ZstdFast(10),
    ];
    for (i, checksum) in checksums.iter().enumerate() {
        for (j, compression) in compressions.iter().enumerate() {
            spa.set_data_props(crate::zio::WriteProps {
                checksum: *checksum,
                compression: *compression,
                ..default_data_props()
            });
            let id = spa.create_object(512).unwrap();
            let mut data = text.clone();
            data[0] = (i * 16 + j) as u8;
            spa.write_object(id, 0, &data).unwrap();
            written.push((id, data));
        }
        spa.sync().unwrap();
    }
    spa.export().unwrap();
    let mut spa = reimport(&devices).unwrap();
    for (id, data) in &written {
        assert_eq!(
            &spa.read_object(*id, 0, data.len()).unwrap(),
            data,
            "object {id}"
        );
    }
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

/// The ARC counts what reads find: a second read of the same block is a hit, and the
/// kstat text tools read shows it.
#[test]
fn arc_counts_hits_and_misses() {
    let devices = mem_devices(1, 128 << 20);
    let mut spa = single_pool("arc", &devices);
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &random_bytes(4, 1 << 20)).unwrap();
    spa.sync().unwrap();
    spa.zio.arc.clear();
    let before = spa.zio.arc.stats();
    spa.read_object(id, 0, 1 << 20).unwrap();
    spa.read_object(id, 0, 1 << 20).unwrap();
    let after = spa.zio.arc.stats();
    assert!(
        after.misses >= before.misses + 8,
        "first read misses every record"
    );
    assert!(
        after.hits >= before.hits + 8,
        "second read hits every record"
    );
    let text = spa.arc_stats_text();
    assert!(text.lines().any(|l| l.starts_with("hits ")), "{text}");
}

/// Why: format 12 keeps each space map's `smp_length` and `smp_alloc` in its
/// `space_map_phys_t` bonus; a bonus that disagrees with the entries (damage) must fail the
/// import with a corruption error naming the metaslab, never build an allocator that would
/// hand out live space or read past the entries.
#[test]
fn a_space_map_whose_bonus_disagrees_fails_to_load() {
    for damage in 0..2 {
        let devices = mem_devices(1, 256 << 20);
        let mut spa = single_pool("smbad", &devices);
        let id = spa.create_object(4096).unwrap();
        spa.write_object(id, 0, &random_bytes(7, 256 << 10))
            .unwrap();
        spa.sync().unwrap();
        let object = ObjectId(
            spa.ms_arrays[0]
                .iter()
                .copied()
                .find(|o| *o != 0)
                .expect("a space map"),
        );
        let ctx = io_ctx!(spa);
        let bonus = spa.dp.mos.bonus(&ctx, object).unwrap();
        let mut phys = space_map::SpaceMapPhys::decode(&bonus).unwrap();
        if damage == 0 {
            phys.alloc_bytes += 512;
        } else {
            phys.length_bytes += 1 << 20;
        }
        spa.dp.mos.set_bonus(&ctx, object, &phys.encode()).unwrap();
        // What import runs on the MOS (an import falls back to the previous uberblock, whose
        // map is intact, so the damaged state is loaded in place).
        match spa.load_space_maps() {
            Err(SpaError::Corrupt(message)) => assert!(
                message.contains("space map of vdev 0 metaslab"),
                "damage {damage}: {message}"
            ),
            Err(other) => panic!("damage {damage}: {other}"),
            Ok(()) => panic!("damage {damage}: loaded"),
        }
    }
}
