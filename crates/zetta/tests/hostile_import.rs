//! Import of damaged pools: corrupt labels, uberblocks, block pointers and metadata blocks.
//!
//! Why: bytes read from disk are untrusted. Whatever garbage a device holds, `find_pools`
//! and `Spa::import` (and reads after a successful import) must answer with data or a clear
//! error — never a panic, never a hang, never wrong data for a block that verified.

use std::sync::Arc;
use zetta::io::{BlockDevice, DeviceRef, MemDevice};
use zetta::rand::SeededRng;
use zetta::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec};
use zetta::vdev::label;

const SIZE: u64 = 64 << 20;

fn build_pool() -> (Arc<MemDevice>, Vec<(zetta::types::ObjectId, Vec<u8>)>) {
    let device = Arc::new(MemDevice::new("/d/a", SIZE));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/d/a".to_string(), device.clone() as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("fuzz", &[spec], &CreateOptions::default()).unwrap();
    let mut objects = Vec::new();
    let mut rng = SeededRng::new(1);
    for i in 0..6 {
        let id = spa.create_object(512).unwrap();
        let mut data = vec![0u8; 50_000 * (i + 1)];
        rng.fill(&mut data);
        spa.write_object(id, 0, &data).unwrap();
        objects.push((id, data));
        spa.sync().unwrap();
    }
    spa.export().unwrap();
    (device, objects)
}

/// Tries to import and read; any outcome but a panic is acceptable, but data that comes
/// back must be the data that was written.
fn try_everything(device: &Arc<MemDevice>, objects: &[(zetta::types::ObjectId, Vec<u8>)]) {
    let refs = vec![device.clone() as DeviceRef];
    for candidate in find_pools(&refs) {
        let _ = candidate.vdev_tree();
        if let Ok(mut spa) = Spa::import(&candidate, None, 16 << 20) {
            for (id, data) in objects {
                if let Ok(read) = spa.read_object(*id, 0, data.len()) {
                    if read.len() == data.len() {
                        assert_eq!(&read, data, "object {id} came back wrong");
                    }
                }
            }
            let _ = spa.scrub(None);
        }
    }
}

fn flip_region(
    device: &MemDevice,
    image: &[u8],
    rng: &mut SeededRng,
    start: u64,
    len: u64,
    flips: usize,
) {
    device.restore(image);
    for _ in 0..flips {
        let at = start + rng.below(len);
        let mut byte = [0u8; 1];
        device.read_at(at, &mut byte).unwrap();
        byte[0] ^= 1 << rng.below(8);
        device.write_at(at, &byte).unwrap();
    }
}

/// Bit flips in the label config areas and uberblock rings.
#[test]
fn corrupt_labels_and_uberblocks_never_panic() {
    let (device, objects) = build_pool();
    let image = device.snapshot();
    let mut rng = SeededRng::new(2);
    for round in 0..120 {
        let index = (round % label::LABEL_COUNT as u64) as usize;
        let label_start = label::label_offset(index, SIZE);
        flip_region(
            &device,
            &image,
            &mut rng,
            label_start,
            label::LABEL_SIZE_BYTES,
            1 + round as usize % 40,
        );
        try_everything(&device, &objects);
    }
    // Every label destroyed: no pool, no panic.
    device.restore(&image);
    label::clear_labels(device.as_ref()).unwrap();
    assert!(find_pools(&[device.clone() as DeviceRef]).is_empty());
}

/// Garbage in the data region (block pointers, dnodes, space maps, the MOS itself).
#[test]
fn corrupt_metadata_blocks_never_panic() {
    let (device, objects) = build_pool();
    let image = device.snapshot();
    let mut rng = SeededRng::new(3);
    let data_start = label::DATA_START_BYTES;
    let used = 8 << 20;
    for round in 0..150 {
        flip_region(&device, &image, &mut rng, data_start, used, 1 + round % 200);
        try_everything(&device, &objects);
    }
    // Whole 4 KiB blocks of random garbage.
    for _ in 0..60 {
        device.restore(&image);
        for _ in 0..20 {
            let at = data_start + rng.below(used / 4096) * 4096;
            let mut junk = vec![0u8; 4096];
            rng.fill(&mut junk);
            device.write_at(at, &junk).unwrap();
        }
        try_everything(&device, &objects);
    }
}
