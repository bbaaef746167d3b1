//! Self-healing and scrub on redundant pools, and honest failure without redundancy.
//!
//! Why: "a bad copy is served from a good one, rewritten, and counted; a block with no good
//! copy is an I/O error recorded in the error log — never wrong data". Each test damages
//! real device bytes with seeded garbage, drops the cache, and checks what comes back.

use std::sync::Arc;
use zetta::io::{BlockDevice, DeviceRef, SimDevice};
use zetta::rand::SeededRng;
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::types::ObjectId;
use zetta::zio::WriteProps;

const DEVICE_SIZE_BYTES: u64 = 96 << 20;

fn devices(count: usize, seed: u64) -> Vec<Arc<SimDevice>> {
    (0..count)
        .map(|i| {
            Arc::new(SimDevice::new(
                &format!("/sim/d{i}"),
                DEVICE_SIZE_BYTES,
                seed + i as u64,
            ))
        })
        .collect()
}

fn top(kind: TopKind, devices: &[Arc<SimDevice>]) -> TopSpec {
    TopSpec {
        kind,
        leaves: devices
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("/sim/d{i}"), d.clone() as DeviceRef))
            .collect(),
        is_log: false,
    }
}

/// Writes `count` objects of `size` random bytes; returns their ids and contents.
fn fill(spa: &mut Spa, count: usize, size: usize, seed: u64) -> Vec<(ObjectId, Vec<u8>)> {
    let mut rng = SeededRng::new(seed);
    let mut objects = Vec::new();
    for _ in 0..count {
        let id = spa.create_object(512).unwrap();
        let mut data = vec![0u8; size];
        rng.fill(&mut data);
        spa.write_object(id, 0, &data).unwrap();
        objects.push((id, data));
    }
    spa.sync().unwrap();
    objects
}

/// Garbage over `fraction_permille`/1000 of a device, in 8 KiB pieces at seeded places.
fn damage(device: &SimDevice, fraction_permille: u64, seed: u64) -> u64 {
    let mut rng = SeededRng::new(seed);
    let size = device.size_bytes();
    let pieces = size * fraction_permille / 1000 / 8192;
    for _ in 0..pieces {
        let offset = rng.below(size / 8192) * 8192;
        device.corrupt(offset, 8192);
    }
    pieces * 8192
}

fn heal_case(kind: TopKind, count: usize, damaged: usize) {
    let devs = devices(count, 100);
    let mut spa = Spa::create("heal", &[top(kind, &devs)], &CreateOptions::default()).unwrap();
    let objects = fill(&mut spa, 24, 1 << 20, 7);
    for (i, device) in devs.iter().take(damaged).enumerate() {
        damage(device, 100, 1000 + i as u64);
    }
    spa.zio.arc.clear();
    for (id, data) in &objects {
        assert_eq!(
            &spa.read_object(*id, 0, data.len()).unwrap(),
            data,
            "{kind:?}: object {id}"
        );
    }
    let first = spa.scrub(None).unwrap();
    assert_eq!(
        first.errors, 0,
        "{kind:?}: scrub found unrecoverable blocks"
    );
    let repaired_total: u64 = spa
        .root
        .leaves()
        .iter()
        .map(|l| {
            l.stats
                .repaired_bytes
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    assert!(repaired_total > 0, "{kind:?}: nothing was repaired");
    let checksum_errors: u64 = spa
        .root
        .leaves()
        .iter()
        .take(damaged)
        .map(|l| {
            l.stats
                .checksum_errors
                .load(std::sync::atomic::Ordering::Relaxed)
        })
        .sum();
    assert!(
        checksum_errors > 0,
        "{kind:?}: damaged devices show no CKSUM errors"
    );
    let second = spa.scrub(None).unwrap();
    assert_eq!(
        (second.errors, second.repaired_bytes),
        (0, 0),
        "{kind:?}: second scrub"
    );
    spa.zio.arc.clear();
    for (id, data) in &objects {
        assert_eq!(&spa.read_object(*id, 0, data.len()).unwrap(), data);
    }
}

/// 10% garbage on one side of a 2-way and a 3-way mirror loses nothing.
#[test]
fn mirrors_heal_ten_percent_damage() {
    heal_case(TopKind::Mirror, 2, 1);
    heal_case(TopKind::Mirror, 3, 1);
}

/// raidzP survives 10% garbage on P of its devices, for P = 1, 2, 3.
#[test]
fn raidz_heals_ten_percent_damage_on_parity_count_devices() {
    heal_case(TopKind::Raidz(1), 4, 1);
    heal_case(TopKind::Raidz(2), 5, 2);
    heal_case(TopKind::Raidz(3), 6, 3);
}

/// copies=2 on one device: 1% damage leaves most data readable, and what is not readable
/// is an error (and in the error log), never wrong bytes.
#[test]
fn copies_two_on_one_device_never_returns_wrong_data() {
    let devs = devices(1, 300);
    let mut spa = Spa::create(
        "ditto",
        &[top(TopKind::Single, &devs)],
        &CreateOptions::default(),
    )
    .unwrap();
    spa.set_data_props(WriteProps {
        copies: 2,
        ..zetta::dmu::default_data_props()
    });
    let objects = fill(&mut spa, 160, 128 << 10, 9);
    damage(&devs[0], 10, 77);
    spa.zio.arc.clear();
    let mut unreadable = Vec::new();
    for (id, data) in &objects {
        match spa.read_object(*id, 0, data.len()) {
            Ok(read) => assert_eq!(&read, data, "object {id} returned wrong data"),
            Err(_) => unreadable.push(id.0),
        }
    }
    assert!(
        unreadable.len() * 10 < objects.len(),
        "{} of {} unreadable",
        unreadable.len(),
        objects.len()
    );
    let stats = spa.scrub(None).unwrap();
    assert!(stats.errors as usize >= unreadable.len());
    let logged: Vec<u64> = spa.error_log().iter().map(|b| b.object).collect();
    for id in &unreadable {
        assert!(
            logged.contains(id),
            "unreadable object {id} missing from the error log"
        );
    }
}

/// Without redundancy or copies, damage is detected (an error, logged) and never returned.
#[test]
fn single_device_detects_but_cannot_repair() {
    let devs = devices(1, 400);
    let mut spa = Spa::create(
        "single",
        &[top(TopKind::Single, &devs)],
        &CreateOptions::default(),
    )
    .unwrap();
    let objects = fill(&mut spa, 40, 256 << 10, 11);
    damage(&devs[0], 100, 5);
    spa.zio.arc.clear();
    let mut failed = 0;
    for (id, data) in &objects {
        match spa.read_object(*id, 0, data.len()) {
            Ok(read) => assert_eq!(&read, data),
            Err(_) => failed += 1,
        }
    }
    assert!(
        failed > 0,
        "10% damage on a lone device must hurt some object"
    );
    let stats = spa.scrub(None).unwrap();
    assert!(stats.errors > 0);
    assert!(!spa.error_log().is_empty());
}

/// A scrub can be watched and stopped from another thread: progress counts up, and a
/// cancel ends it as `Canceled` (what `zpool scrub -s` and `zpool status` need from the
/// process that holds the pool).
#[test]
fn scrub_reports_progress_and_can_be_canceled() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let devs = devices(2, 500);
    let mut spa = Spa::create(
        "watch",
        &[top(TopKind::Mirror, &devs)],
        &CreateOptions::default(),
    )
    .unwrap();
    fill(&mut spa, 16, 1 << 20, 3);
    let cancel = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    let finished = spa.scrub_observed(&cancel, &progress).unwrap();
    assert_eq!(finished.state, zetta::spa::ScanState::Finished);
    assert_eq!(progress.load(Ordering::Relaxed), finished.examined_bytes);
    assert!(finished.examined_bytes >= 16 << 20);
    cancel.store(true, Ordering::Relaxed);
    let canceled = spa.scrub_observed(&cancel, &progress).unwrap();
    assert_eq!(canceled.state, zetta::spa::ScanState::Canceled);
    assert!(canceled.examined_bytes < finished.examined_bytes);
}
