//! One ARC and one dirty budget for all pools of a process (issue 21 item 8).
//!
//! Why: each pool had an ARC and a dirty budget of its own, so a daemon's memory grew with
//! the number of pools it held (128 pools: 23 GB, then the OOM killer). A process that
//! calls `share_process_wide` (the daemon) must bound both for all its pools together,
//! without letting one pool read another's cached blocks.
//!
//! The process-wide limits are set once per process, so this file has one test that
//! checks both in order.

use std::sync::Arc;
use zetta::io::{DeviceRef, MemDevice};
use zetta::spa::dirty::{self, DIRTY_BYTES_COMMIT_MIN};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::types::ObjectId;

const ARC_BYTES: u64 = 8 << 20;
const DIRTY_BYTES: u64 = 8 << 20;

fn pool(name: &str) -> Spa {
    let device: DeviceRef = Arc::new(MemDevice::new(&format!("/mem/{name}"), 128 << 20));
    let top = TopSpec {
        kind: TopKind::Single,
        leaves: vec![(format!("/mem/{name}"), device)],
        is_log: false,
    };
    Spa::create(name, &[top], &CreateOptions::default()).unwrap()
}

/// The same bytes in every pool: identical pools lay them out alike, so only the pool's
/// part of the cache key keeps their cached blocks apart.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn written_object(spa: &mut Spa, len: usize) -> ObjectId {
    let id = spa.create_object(128 << 10).unwrap();
    spa.write_object(id, 0, &pattern(len)).unwrap();
    spa.sync().unwrap();
    id
}

#[test]
fn pools_of_a_process_share_one_bounded_arc_and_one_dirty_budget() {
    assert!(zetta::zio::arc::share_process_wide(ARC_BYTES));
    assert!(dirty::share_process_wide(DIRTY_BYTES));

    // The ARC: both pools cache in one cache of ARC_BYTES.
    let mut a = pool("a");
    let mut b = pool("b");
    assert!(a.zio.arc.is_shared() && b.zio.arc.is_shared());
    let len = 6 << 20;
    let in_a = written_object(&mut a, len);
    let in_b = written_object(&mut b, len);
    a.zio.arc.clear();
    assert_eq!(a.read_object(in_a, 0, len).unwrap(), pattern(len));
    let after_a = a.zio.arc.stats();
    // b's blocks may have a's addresses; still each is b's own miss, never a's hit.
    assert_eq!(b.read_object(in_b, 0, len).unwrap(), pattern(len));
    let after_b = b.zio.arc.stats();
    assert!(
        after_b.misses >= after_a.misses + (len as u64 >> 17),
        "pool b read pool a's cached blocks: {after_a:?} then {after_b:?}"
    );
    assert_eq!(after_b.size_bytes_max, ARC_BYTES);
    assert!(
        after_b.size_bytes <= ARC_BYTES,
        "12 MiB read by two pools must fit one {ARC_BYTES}-byte ARC: {after_b:?}"
    );
    assert_eq!(
        zetta::zio::arc::process_wide_stats().map(|s| s.size_bytes_max),
        Some(ARC_BYTES)
    );
    // A pool that goes away (export) takes its cached blocks with it.
    let mut c = pool("c");
    let in_c = written_object(&mut c, 4 << 20);
    c.zio.arc.clear();
    assert_eq!(c.read_object(in_c, 0, 4 << 20).unwrap(), pattern(4 << 20));
    let with_c = a.zio.arc.stats().size_bytes;
    assert!(with_c >= 4 << 20, "c's blocks are cached: {with_c}");
    drop(c);
    assert_eq!(
        a.zio.arc.stats().size_bytes,
        0,
        "c's blocks left the ARC with c"
    );

    // The dirty budget: a's dirty data alone stays under it and waits; b's change takes
    // the total past it, so b commits (each alone is far below DIRTY_BYTES_MAX).
    let a_synced = a.last_synced_txg();
    let b_synced = b.last_synced_txg();
    let big = 6 << 20;
    // (`write_object` counts its bytes as dirty: `note_dirty`.)
    a.write_object(in_a, 0, &vec![1u8; big]).unwrap();
    assert_eq!(a.last_synced_txg(), a_synced, "a alone is under the budget");
    assert_eq!(dirty::process_wide_dirty_bytes(), Some(big as u64));
    let small = 3 << 20;
    assert!(small as u64 >= DIRTY_BYTES_COMMIT_MIN);
    b.write_object(in_b, 0, &vec![2u8; small]).unwrap();
    assert!(
        b.last_synced_txg() > b_synced,
        "b must commit once all pools together hold more than the budget"
    );
    assert_eq!(dirty::process_wide_dirty_bytes(), Some(big as u64));
    // An exported pool takes its part with it.
    drop(a);
    assert_eq!(dirty::process_wide_dirty_bytes(), Some(0));
    assert_eq!(b.read_object(in_b, 0, small).unwrap(), vec![2u8; small]);
}
