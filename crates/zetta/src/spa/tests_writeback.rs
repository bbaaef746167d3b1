//! Early write-out of file data (`writeback`): why these tests exist.
//!
//! Writeback writes records of the open txg before the commit and installs them later, so
//! three things can go wrong that the txg commit alone never risked: a record changed
//! after it was copied could be installed with stale bytes, a block written early and not
//! installed could leak, and the space of a dataset could be counted twice. Each test runs
//! a scripted mix of writes, overwrites of records in flight, truncates and a dataset
//! destroy, then checks the bytes (before and after export/import), a clean scrub, and
//! the space audit (every allocated byte reachable, every kept figure recomputed equal).

use super::tests::{mem_devices, reimport, spec};
use super::*;
use crate::dmu::ObjectSet;
use crate::rand::SeededRng;

fn pool(devices: &[(String, std::sync::Arc<crate::io::MemDevice>)], mode: WritebackMode) -> Spa {
    let mut spa = Spa::create(
        "wb",
        &[spec(TopKind::Single, devices)],
        &CreateOptions::default(),
    )
    .unwrap();
    spa.set_writeback(mode, 0, 256 << 10);
    spa.create_filesystem("wb/fs").unwrap();
    spa.create_filesystem("wb/gone").unwrap();
    spa.sync().unwrap();
    spa
}

fn new_file(spa: &mut Spa, fs: &str) -> ObjectId {
    spa.with_dataset(fs, |os: &mut ObjectSet, ctx| {
        os.create_object(ctx, object_type::PLAIN_FILE, 512, 0, 0)
    })
    .unwrap()
}

fn write(spa: &mut Spa, fs: &str, file: ObjectId, offset: u64, data: &[u8], model: &mut Vec<u8>) {
    spa.with_dataset(fs, |os, ctx| os.write(ctx, file, offset, data))
        .unwrap();
    let end = offset as usize + data.len();
    if model.len() < end {
        model.resize(end, 0);
    }
    model[offset as usize..end].copy_from_slice(data);
    spa.note_dirty(data.len() as u64).unwrap();
}

fn read(spa: &mut Spa, fs: &str, file: ObjectId, len: usize) -> Vec<u8> {
    spa.with_dataset(fs, |os, ctx| os.read(ctx, file, 0, len))
        .unwrap()
}

fn random(rng: &mut SeededRng, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    rng.fill(&mut data);
    data
}

type Devices = Vec<(String, std::sync::Arc<crate::io::MemDevice>)>;

/// The scripted run; returns (pool, file, its expected content, bytes installed early).
fn run(mode: WritebackMode) -> (Devices, ObjectId, Vec<u8>, u64) {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = pool(&devices, mode);
    let mut rng = SeededRng::new(7);
    let file = new_file(&mut spa, "wb/fs");
    let doomed = new_file(&mut spa, "wb/gone");
    let mut model = Vec::new();
    let mut doomed_model = Vec::new();
    for round in 0..3u64 {
        // Sequential records: each note_dirty installs the last batch and claims a new one.
        for i in 0..24u64 {
            let data = random(&mut rng, 128 << 10);
            write(
                &mut spa,
                "wb/fs",
                file,
                (round * 24 + i) << 17,
                &data,
                &mut model,
            );
            // A record of the batch just claimed changes before it is installed: it must
            // keep its new bytes (the early block is freed instead).
            if i % 5 == 4 {
                let again = random(&mut rng, 4096);
                write(
                    &mut spa,
                    "wb/fs",
                    file,
                    ((round * 24 + i) << 17) + 512,
                    &again,
                    &mut model,
                );
            }
            if i % 7 == 3 && round < 2 {
                let data = random(&mut rng, 128 << 10);
                write(
                    &mut spa,
                    "wb/gone",
                    doomed,
                    i << 17,
                    &data,
                    &mut doomed_model,
                );
            }
        }
        // Shrink while a batch may hold records past the new end.
        let size = model.len() as u64 - (200 << 10);
        spa.with_dataset("wb/fs", |os, ctx| os.truncate(ctx, file, size))
            .unwrap();
        model.truncate(size as usize);
        spa.note_dirty(0).unwrap();
        assert_eq!(read(&mut spa, "wb/fs", file, model.len()), model);
        if round == 1 {
            assert_eq!(
                read(&mut spa, "wb/gone", doomed, doomed_model.len()),
                doomed_model
            );
            // The batch in flight holds records of a dataset that goes away.
            spa.destroy_filesystem("wb/gone").unwrap();
        }
        spa.sync().unwrap();
        let audit = spa.audit_space().unwrap();
        assert!(
            audit.mismatches.is_empty(),
            "round {round}: {:#?}",
            audit.mismatches
        );
    }
    let installed = spa.writeback_installed_bytes();
    if mode == WritebackMode::Inline {
        // Records changed between claim and install were left dirty, their blocks freed.
        assert!(
            spa.writeback_discarded_blocks() > 0,
            "no early block was discarded"
        );
    }
    spa.export().unwrap();
    (devices, file, model, installed)
}

fn check_after_import(
    devices: &[(String, std::sync::Arc<crate::io::MemDevice>)],
    file: ObjectId,
    model: &[u8],
) {
    let mut spa = reimport(devices).unwrap();
    assert_eq!(read(&mut spa, "wb/fs", file, model.len()), model);
    let stats = spa.scrub(None).unwrap();
    assert_eq!(stats.errors, 0);
    let audit = spa.audit_space().unwrap();
    assert!(audit.mismatches.is_empty(), "{:#?}", audit.mismatches);
}

#[test]
fn inline_writeback_installs_unchanged_records_and_frees_the_rest() {
    let (devices, file, model, installed) = run(WritebackMode::Inline);
    // Most of the 9 MiB went out early (a record changed after its install goes again).
    assert!(
        installed >= 9 << 19,
        "installed only {installed} bytes early"
    );
    check_after_import(&devices, file, &model);
}

#[test]
fn threaded_writeback_gives_the_same_pool() {
    let (devices, file, model, installed) = run(WritebackMode::Threaded);
    assert!(
        installed > 0,
        "no record installed from the writeback thread"
    );
    check_after_import(&devices, file, &model);
    // And the same bytes as a pool that never wrote early.
    let (off_devices, off_file, off_model, off_installed) = run(WritebackMode::Off);
    assert_eq!(off_installed, 0);
    assert_eq!(off_model, model);
    check_after_import(&off_devices, off_file, &off_model);
}

/// Records written in scattered pieces (a torrent, random small writes) are not written
/// early: each would be read back and written again when its next piece arrives. Whole
/// records written next to them still are.
#[test]
fn partly_written_records_wait_for_the_commit() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = pool(&devices, WritebackMode::Inline);
    let mut rng = SeededRng::new(11);
    let file = new_file(&mut spa, "wb/fs");
    let mut model = Vec::new();
    for i in 0..64u64 {
        let piece = random(&mut rng, 16 << 10);
        write(
            &mut spa,
            "wb/fs",
            file,
            (i << 17) + 8192,
            &piece,
            &mut model,
        );
    }
    assert_eq!(spa.writeback_installed_bytes(), 0);
    for i in 64..80u64 {
        let whole = random(&mut rng, 128 << 10);
        write(&mut spa, "wb/fs", file, i << 17, &whole, &mut model);
    }
    spa.note_dirty(0).unwrap();
    assert!(spa.writeback_installed_bytes() > 0);
    spa.sync().unwrap();
    assert_eq!(read(&mut spa, "wb/fs", file, model.len()), model);
    let audit = spa.audit_space().unwrap();
    assert!(audit.mismatches.is_empty(), "{:#?}", audit.mismatches);
}
