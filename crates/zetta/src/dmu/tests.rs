//! Object-set tests: the objset block format and the block tree's growth and shrinkage.

use super::objset::{ObjectSet, OBJECT_CACHE_MAX, OBJSET_BLOCK_SIZE_BYTES};
use super::*;
use crate::io::{DeviceRef, MemDevice};
use crate::spa::{CreateOptions, Spa, TopKind, TopSpec};
use crate::types::ObjectId;
use std::sync::Arc;

fn pool() -> Spa {
    let device: DeviceRef = Arc::new(MemDevice::new("/mem/dmu", 128 << 20));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/dmu".to_string(), device)],
        is_log: false,
    };
    Spa::create("dmu", &[spec], &CreateOptions::default()).unwrap()
}

/// Golden header of the objset block: type at 512, flags at 520, next object at 528. The
/// objset block is on-disk format, so its layout is pinned here.
#[test]
fn golden_objset_block_header() {
    let spa = pool();
    let ctx = spa.ctx();
    let mut os = ObjectSet::create(
        9,
        ObjsetType::Filesystem,
        crate::spa::dataset_policy(default_data_props()),
    );
    let id = os
        .create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
        .unwrap();
    assert_eq!(id, ObjectId(1));
    let bp = os
        .sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    assert_eq!(bp.lsize_bytes as usize, OBJSET_BLOCK_SIZE_BYTES);
    assert_eq!(bp.object_type, object_type::OBJSET);
    let block = spa.zio.read_block(&spa.root, &bp, None).unwrap();
    assert_eq!(&block[512..520], &2u64.to_le_bytes(), "os_type Filesystem");
    assert_eq!(&block[520..528], &0u64.to_le_bytes(), "flags");
    assert_eq!(&block[528..536], &2u64.to_le_bytes(), "next object");
    assert_eq!(block[0], object_type::DNODE, "meta-dnode type");
    let reopened = ObjectSet::open(
        &ctx,
        9,
        &bp,
        crate::spa::dataset_policy(default_data_props()),
    );
    assert!(reopened.is_ok());
}

/// A small object is one small block that grows up to the record size, then stays there.
#[test]
fn block_size_grows_to_record_size() {
    let mut spa = pool();
    spa.set_record_size(128 << 10);
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &[7u8; 5000]).unwrap();
    spa.sync().unwrap();
    let dnode = spa.object_dnode(id).unwrap();
    assert_eq!(dnode.data_block_size_bytes, 5120);
    spa.write_object(id, 300_000, b"tail").unwrap();
    spa.sync().unwrap();
    let dnode = spa.object_dnode(id).unwrap();
    assert_eq!(dnode.data_block_size_bytes, 128 << 10);
    assert_eq!(dnode.max_block_id, 2);
    assert_eq!(spa.read_object(id, 0, 5000).unwrap(), vec![7u8; 5000]);
    assert_eq!(spa.read_object(id, 300_000, 4).unwrap(), b"tail");
}

/// Deep trees (three levels of indirection) round trip, and freeing the object returns
/// every block to the allocator.
#[test]
fn deep_trees_round_trip_and_free_completely() {
    let mut spa = pool();
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, baseline, _) = spa.space();
    let id = spa.create_object(512).unwrap();
    // Block 0 and a block past 1024 * 128K, which needs a second indirect level.
    spa.write_object(id, 0, &[1u8; 200_000]).unwrap();
    spa.write_object(id, 200 << 30, b"deep").unwrap();
    spa.sync().unwrap();
    let dnode = spa.object_dnode(id).unwrap();
    assert!(dnode.nlevels >= 3, "nlevels {}", dnode.nlevels);
    assert_eq!(spa.read_object(id, 200 << 30, 4).unwrap(), b"deep");
    assert_eq!(spa.read_object(id, 100 << 30, 4).unwrap(), vec![0u8; 4]);
    spa.truncate_object(id, 100).unwrap();
    spa.sync().unwrap();
    assert_eq!(spa.read_object(id, 0, 200).unwrap(), vec![1u8; 100]);
    spa.free_object(id).unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, after, _) = spa.space();
    assert!(
        after <= baseline + (64 << 10),
        "leaked: baseline {baseline}, after {after}"
    );
}

/// Regression (found by the space property test): a file grown by an extending truncate
/// has a size past what its block tree addresses; shrinking it to a size inside that hole
/// zeroed the "tail" of a block beyond the dnode, and the next commit failed with "block 1
/// beyond the dnode". The tail of a hole is already zeros: nothing to write.
#[test]
fn shrinking_into_an_extended_hole_commits() {
    let mut spa = pool();
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &[7u8; 100_000]).unwrap();
    spa.sync().unwrap();
    spa.truncate_object(id, 4 << 20).unwrap();
    spa.truncate_object(id, 300_000).unwrap();
    spa.sync().unwrap();
    assert_eq!(spa.object_size(id).unwrap(), 300_000);
    let data = spa.read_object(id, 0, 300_000).unwrap();
    assert!(data[..100_000].iter().all(|b| *b == 7));
    assert!(data[100_000..].iter().all(|b| *b == 0));
    // The same through a punched hole past the tree.
    spa.truncate_object(id, 4 << 20).unwrap();
    spa.with_dataset("dmu", |os, ctx| os.free_range(ctx, id, 200_000, 300_000))
        .unwrap();
    spa.sync().unwrap();
}

/// A txg is charged the records it holds dirty in memory, not the bytes written into
/// them: random 4 KiB writes into 128 KiB records charged by bytes let a daemon hold 32×
/// its dirty limit (778 MiB RSS in the benchmark). A second write into a dirty record
/// costs nothing more; a commit starts the count again.
#[test]
fn dirty_data_is_counted_in_whole_records() {
    let spa = pool();
    let ctx = spa.ctx();
    let mut os = ObjectSet::create(
        9,
        ObjsetType::Filesystem,
        crate::spa::dataset_policy(default_data_props()),
    );
    let id = os
        .create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
        .unwrap();
    os.write(&ctx, id, 0, &vec![1u8; 1 << 20]).unwrap();
    assert_eq!(os.dirty_data_bytes, 1 << 20);
    os.sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    assert_eq!(os.dirty_data_bytes, 0);
    os.write(&ctx, id, 200 << 10, &[2u8; 4096]).unwrap();
    assert_eq!(os.dirty_data_bytes, 128 << 10);
    os.write(&ctx, id, 201 << 10, &[3u8; 4096]).unwrap();
    assert_eq!(os.dirty_data_bytes, 128 << 10);
}

// Why: the object cache was bounded only at `sync`, so a pool that is only read (an
// `ls -lR` of a big tree, nothing to commit) kept every dnode it ever looked at. Readers
// now insert under the shard locks and drop a full shard's clean states first; dirty
// states (the open txg's only copy) stay whatever the readers do.
#[test]
fn readers_keep_the_object_cache_bounded_and_dirty_states_in_it() {
    let spa = pool();
    let ctx = spa.ctx();
    let policy = crate::spa::dataset_policy(default_data_props());
    let mut os = ObjectSet::create(9, ObjsetType::Filesystem, policy);
    let count = OBJECT_CACHE_MAX as u64 + 1000;
    for _ in 0..count {
        os.create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
            .unwrap();
    }
    let bp = os
        .sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    let mut os = ObjectSet::open(&ctx, 9, &bp, policy).unwrap();
    // One dirty object of the open txg, then readers over every object.
    os.write(&ctx, ObjectId(7), 0, b"dirty").unwrap();
    let reader = &os;
    for id in 1..=count {
        assert!(reader.object_exists(&ctx, ObjectId(id)).unwrap());
        reader.dnode(&ctx, ObjectId(id)).unwrap();
    }
    assert!(
        reader.cached_objects() <= OBJECT_CACHE_MAX,
        "{} objects cached",
        reader.cached_objects()
    );
    assert_eq!(reader.read(&ctx, ObjectId(7), 0, 5).unwrap(), b"dirty");
    assert_eq!(reader.size_bytes(&ctx, ObjectId(7)).unwrap(), 5);
}
