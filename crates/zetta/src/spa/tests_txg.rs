//! Txg states (`txg`): a txg's tail runs without the pool lock.

use super::tests::mem_devices;
use super::*;
use crate::io::{BlockDevice, IoError, MemDevice};
use parking_lot::{Condvar, Mutex, RwLock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A device whose flushes wait while its gate is closed (the test's hand on the tail).
struct GateDevice {
    inner: Arc<MemDevice>,
    closed: Mutex<bool>,
    opened: Condvar,
    parked: AtomicUsize,
}

impl GateDevice {
    fn set_closed(&self, closed: bool) {
        *self.closed.lock() = closed;
        self.opened.notify_all();
    }
}

impl BlockDevice for GateDevice {
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        self.inner.read_at(offset, buffer)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.inner.write_at(offset, data)
    }
    fn flush(&self) -> Result<(), IoError> {
        let mut closed = self.closed.lock();
        if *closed {
            self.parked.fetch_add(1, Ordering::SeqCst);
            while *closed {
                self.opened.wait(&mut closed);
            }
        }
        drop(closed);
        self.inner.flush()
    }
    fn path(&self) -> String {
        self.inner.path()
    }
}

/// Opens the gate when the test ends, whatever happened, so no thread stays parked.
struct OpenOnDrop(Arc<GateDevice>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.set_closed(false);
    }
}

/// Polls `condition` until it holds or a generous deadline passes (no timing assertion:
/// the deadline only turns a hang into a failure).
fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i / 7) as u8)).collect()
}

// Why: the txg commit held the pool's exclusive lock through its device flushes, labels and
// uberblocks, so a read of one file and a write to another waited for the whole commit
// (issue 13: "readers and writers of different files progressing while a txg syncs").
// Here a commit parks in its tail (a flush that waits for the test), and meanwhile a read
// of file A and a write to file B complete; then the commit finishes and a reimport sees
// everything.
#[test]
fn readers_and_writers_progress_while_a_txg_syncs() {
    let memory = mem_devices(1, 256 << 20).remove(0).1;
    let gate = Arc::new(GateDevice {
        inner: memory,
        closed: Mutex::new(false),
        opened: Condvar::new(),
        parked: AtomicUsize::new(0),
    });
    let _open = OpenOnDrop(gate.clone());
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/gate".to_string(), gate.clone() as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("txgs", &[spec], &CreateOptions::default()).unwrap();
    let a = spa.create_object(512).unwrap();
    let b = spa.create_object(512).unwrap();
    let a_data = pattern(1, 300_000);
    spa.write_object(a, 0, &a_data).unwrap();
    spa.write_object(b, 0, &pattern(2, 1000)).unwrap();
    spa.sync().unwrap();
    // The txg to commit: more of file A.
    let a_more = pattern(3, 200_000);
    spa.write_object(a, a_data.len() as u64, &a_more).unwrap();
    let synced_before = spa.last_synced_txg();
    let txg = spa.open_txg();
    let pool = Arc::new(RwLock::new(spa));

    gate.set_closed(true);
    let committer = {
        let pool = pool.clone();
        std::thread::spawn(move || txg::sync_pool(&pool))
    };
    assert!(
        eventually(|| gate.parked.load(Ordering::SeqCst) > 0),
        "the commit never reached its tail"
    );
    // The commit is parked in a flush of its tail. The pool lock is free: A reads back
    // (its committed part and the part now syncing), B takes a write into txg N+1.
    let b_new = pattern(4, 5000);
    {
        let mut spa = pool
            .try_write_for(Duration::from_secs(120))
            .expect("the pool lock is held while the txg's tail runs");
        assert_eq!(spa.syncing_txg(), Some(txg));
        assert_eq!(spa.last_synced_txg(), synced_before);
        assert_eq!(spa.open_txg(), txg.next());
        let read = spa.read_object(a, 0, a_data.len() + a_more.len()).unwrap();
        assert_eq!(read[..a_data.len()], a_data[..]);
        assert_eq!(read[a_data.len()..], a_more[..]);
        spa.write_object(b, 0, &b_new).unwrap();
        assert_eq!(spa.open_txg(), txg.next(), "the write waited for no commit");
    }
    assert!(
        !committer.is_finished(),
        "the commit finished while its flush was held"
    );
    gate.set_closed(false);
    let committed = committer.join().unwrap().unwrap();
    assert_eq!(committed, txg);
    let mut spa = Arc::try_unwrap(pool).ok().unwrap().into_inner();
    assert_eq!(spa.last_synced_txg(), txg);
    assert_eq!(spa.syncing_txg(), None);
    assert!(
        spa.last_sync_phases().tail() > Duration::ZERO,
        "the tail's phases were recorded"
    );
    spa.sync().unwrap();
    spa.export().unwrap();

    let found = find_pools(&[gate.clone() as DeviceRef]);
    let mut spa = Spa::import(found.first().unwrap(), None, 64 << 20).unwrap();
    let read = spa.read_object(a, 0, a_data.len() + a_more.len()).unwrap();
    assert_eq!(read[..a_data.len()], a_data[..]);
    assert_eq!(read[a_data.len()..], a_more[..]);
    assert_eq!(spa.read_object(b, 0, b_new.len()).unwrap(), b_new);
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

// Why: a change of the vdev tree (`root_mut`) while a txg's tail still held the tree
// panicked (`Arc::get_mut` found a second holder); it must wait for the tail. Under a
// simulated world the tail stays queued until someone runs or waits for it.
#[test]
fn a_vdev_change_waits_for_the_tail_in_flight() {
    let world = crate::io::SimWorld::new(11);
    let devices: Vec<Arc<crate::io::SimDevice>> = (0..2)
        .map(|i| {
            Arc::new(crate::io::SimDevice::in_world(
                &format!("/sim/t{i}"),
                128 << 20,
                i,
                &world,
            ))
        })
        .collect();
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/sim/t0".to_string(), devices[0].clone() as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("tail", &[spec], &CreateOptions::default()).unwrap();
    let object = spa.create_object(512).unwrap();
    spa.write_object(object, 0, &pattern(5, 40_000)).unwrap();
    let txg = spa.sync_in_background().unwrap().unwrap();
    assert!(world.has_pending(), "the tail is queued in the world");
    assert_eq!(spa.root_mut().children.len(), 1);
    assert!(!world.has_pending(), "root_mut ran the tail first");
    // Its outcome is retired by the next commit.
    assert_eq!(spa.syncing_txg(), Some(txg));
    spa.attach("/sim/t0", "/sim/t1", devices[1].clone() as DeviceRef)
        .unwrap();
    assert!(spa.last_synced_txg() > txg);
    assert_eq!(spa.syncing_txg(), None);
    spa.export().unwrap();
    let refs: Vec<DeviceRef> = devices.iter().map(|d| d.clone() as DeviceRef).collect();
    let found = find_pools(&refs);
    let mut spa = Spa::import(found.first().unwrap(), None, 64 << 20).unwrap();
    assert_eq!(
        spa.read_object(object, 0, 40_000).unwrap(),
        pattern(5, 40_000)
    );
}

// Why: a writer that crossed the dirty limit committed the whole txg inside its own
// request, holding the pool lock (and the daemon's txg timer committed under it too). With
// a sync thread attached the writer only wakes it and goes on; the thread commits (tail
// without the pool lock), and on its timeout commits what is dirty.
#[test]
fn the_sync_thread_commits_when_woken_and_on_its_timeout() {
    let devices = mem_devices(1, 512 << 20);
    let mut spa = Spa::create(
        "thread",
        &[super::tests::spec(TopKind::Single, &devices)],
        &CreateOptions::default(),
    )
    .unwrap();
    spa.set_writeback(WritebackMode::Off, 0, 0);
    let object = spa.create_object(128 << 10).unwrap();
    spa.sync().unwrap();
    let pool = Arc::new(RwLock::new(spa));
    // A timeout this test never reaches: only the wakeup can commit.
    let thread = txg::start_sync_thread(&pool, Duration::from_secs(3600));
    assert!(pool.read().has_sync_thread());
    let first = pool.read().open_txg();
    let chunk = pattern(6, 1 << 20);
    let mut offset = 0u64;
    while offset < DIRTY_BYTES_MAX + (1 << 20) {
        let mut spa = pool.write();
        // The thread may commit between two writes, never inside one: a txg that
        // changes during a write was committed by the writer.
        let open = spa.open_txg();
        spa.write_object(object, offset, &chunk).unwrap();
        assert_eq!(
            spa.open_txg(),
            open,
            "the writer committed in its own request"
        );
        offset += chunk.len() as u64;
    }
    assert!(
        eventually(|| pool.read().last_synced_txg() >= first),
        "the woken sync thread never committed"
    );
    drop(thread);
    assert!(!pool.read().has_sync_thread());

    // On its timeout: a small change is committed without any wakeup.
    let thread = txg::start_sync_thread(&pool, Duration::from_millis(20));
    let before = {
        let mut spa = pool.write();
        spa.write_object(object, 0, b"small").unwrap();
        spa.open_txg()
    };
    assert!(
        eventually(|| pool.read().last_synced_txg() >= before),
        "the sync thread never committed on its timeout"
    );
    drop(thread);
    let spa = Arc::try_unwrap(pool).ok().unwrap().into_inner();
    spa.export().unwrap();
    let mut spa = super::tests::reimport(&devices).unwrap();
    assert_eq!(spa.read_object(object, 0, 5).unwrap(), b"small");
    assert_eq!(
        spa.read_object(object, 1 << 20, 1 << 20).unwrap(),
        chunk,
        "a chunk written before the wakeup"
    );
}

// Why: with a sync thread the writer that crosses the dirty limit no longer commits, so
// nothing bounded the dirty data a pool's writers could pile up, and a writer that kept
// the pool lock through many writes (a receive) still committed in its own request at 3x
// the limit. Issue 13's `dmu::Tx`: past `zfs_delay_min_dirty_percent` a transaction is
// delayed, at `zfs_dirty_data_max` it waits (with no lock) until the sync thread's commit
// opens a new txg, and no commit ever runs on the writer's thread. Here the sync thread's
// first commit is parked in its tail (a gated flush), so the second one cannot start, and
// the writer fills its budget: it must stop (waiting, not committing) until the gate
// opens, then go on into a new txg.
#[test]
fn a_writer_past_the_dirty_budget_waits_and_never_commits() {
    let memory = mem_devices(1, 512 << 20).remove(0).1;
    let gate = Arc::new(GateDevice {
        inner: memory,
        closed: Mutex::new(false),
        opened: Condvar::new(),
        parked: AtomicUsize::new(0),
    });
    let _open = OpenOnDrop(gate.clone());
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/gate".to_string(), gate.clone() as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("throttle", &[spec], &CreateOptions::default()).unwrap();
    spa.set_writeback(WritebackMode::Off, 0, 0);
    let object = spa.create_object(128 << 10).unwrap();
    spa.sync().unwrap();
    // A 16 MiB budget: the sync thread is woken at 8 MiB, writers are delayed past
    // 9.6 MiB and wait at 16 MiB.
    let max = 16u64 << 20;
    spa.tx_throttle().set_dirty_data_max(max);
    assert_eq!(spa.dirty_sync_bytes(), 8 << 20);
    let shared = spa.tx_shared();
    let pool = Arc::new(RwLock::new(spa));
    // Only a wakeup can make this thread commit.
    let thread = txg::start_sync_thread(&pool, Duration::from_secs(3600));
    gate.set_closed(true);

    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let pool = pool.clone();
        let written = written.clone();
        std::thread::spawn(move || {
            let chunk = pattern(7, 1 << 20);
            let mut txgs = Vec::new();
            for index in 0..40u64 {
                let mut tx = crate::dmu::tx::Tx::create(0);
                tx.hold_write(Some(object.0), index << 20, chunk.len() as u64);
                let mut spa = crate::dmu::tx::dmu_tx_assign(&pool, &mut tx).unwrap();
                let open = spa.open_txg();
                assert_eq!(tx.txg(), Some(open));
                spa.write_object(object, index << 20, &chunk).unwrap();
                assert_eq!(
                    spa.open_txg(),
                    open,
                    "the writer committed in its own request"
                );
                tx.commit(&mut spa, 0).unwrap();
                txgs.push(open);
                written.fetch_add(1, Ordering::SeqCst);
            }
            (std::thread::current().id(), txgs)
        })
    };
    // The first commit (woken at 8 MiB) parks in its tail; the writer reaches the max and
    // stops there.
    assert!(
        eventually(|| gate.parked.load(Ordering::SeqCst) > 0),
        "the sync thread never committed"
    );
    let stats = &shared.throttle().stats;
    assert!(
        eventually(|| stats.dirty_over_max.load(Ordering::SeqCst) > 0),
        "the writer never reached the budget"
    );
    let stopped_at = written.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        written.load(Ordering::SeqCst),
        stopped_at,
        "a writer past the budget went on"
    );
    assert!(stopped_at < 40, "the writer never waited");
    assert!(
        shared.dirty_bytes() >= max && shared.dirty_bytes() < max + (2 << 20),
        "the budget was overrun by more than one transaction: {}",
        shared.dirty_bytes()
    );
    assert!(
        stats.delayed.load(Ordering::SeqCst) > 0,
        "no transaction was delayed on the way to the max"
    );
    gate.set_closed(false);
    let (writer_id, txgs) = writer.join().unwrap();
    assert_eq!(txgs.len(), 40);
    assert!(
        txgs.first() < txgs.last(),
        "the writer's transactions went into later txgs after its wait"
    );
    assert_eq!(
        stats.commits_in_writer.load(Ordering::SeqCst),
        0,
        "a commit ran in a writer's request"
    );
    assert_ne!(
        shared.last_committer(),
        Some(writer_id),
        "the writer's thread committed"
    );
    assert!(stats.assigned.load(Ordering::SeqCst) >= 40);
    drop(thread);
    let spa = Arc::try_unwrap(pool).ok().unwrap().into_inner();
    spa.export().unwrap();
    let found = find_pools(&[gate.clone() as DeviceRef]);
    let mut spa = Spa::import(found.first().unwrap(), None, 64 << 20).unwrap();
    assert_eq!(
        spa.read_object(object, 39 << 20, 1 << 20).unwrap(),
        pattern(7, 1 << 20)
    );
}

/// Checks that every metaslab's space is free, recorded in its space map or deferred, and
/// nothing waits for the maps: no block in use is missing from them.
fn assert_space_maps_exact(spa: &Spa, when: &str) {
    let allocator = spa.zio.allocator.lock();
    assert!(
        !allocator.has_space_map_updates(),
        "{when}: changes left for the maps"
    );
    for group in &allocator.groups {
        for metaslab in &group.metaslabs {
            assert_eq!(
                metaslab.free_bytes()
                    + metaslab.recorded_tree().total_bytes()
                    + metaslab.deferred_bytes(),
                metaslab.size_bytes,
                "{when}: vdev {} metaslab {} has space in use that its map does not hold",
                group.vdev_id,
                metaslab.index
            );
        }
    }
}

// Why: format 16 (issue 14) — until then the MOS's own blocks and the space maps' blocks
// were left out of the maps (import walked the MOS to find them), so OpenZFS's `zdb -bcc`
// failed its claims or reported them leaked. Every commit now syncs in passes until the
// maps hold all of its allocations: after each commit nothing waits for the maps and every
// byte in use is recorded; a commit takes more than one pass (the MOS's blocks go into
// pass 2) but converges in a few (blocks born in the txg are rewritten in place); an
// idle pool stops committing; and import, which no longer walks the MOS, finds the same.
#[test]
fn every_commit_records_every_block_in_a_few_sync_passes() {
    let devices = mem_devices(2, 256 << 20);
    let mut spa = Spa::create(
        "passes",
        &[super::tests::spec(TopKind::Mirror, &devices)],
        &CreateOptions::default(),
    )
    .unwrap();
    assert_space_maps_exact(&spa, "after create");
    let mut objects = Vec::new();
    for round in 0..6u8 {
        for i in 0..4u8 {
            let object = spa.create_object(128 << 10).unwrap();
            spa.write_object(object, 0, &pattern(round * 4 + i, 300 << 10))
                .unwrap();
            objects.push(object);
        }
        if round % 2 == 1 {
            for object in objects.drain(..3) {
                spa.free_object(object).unwrap();
            }
        }
        spa.sync().unwrap();
        let passes = spa.last_sync_phases().sync_passes;
        assert!(
            (2..=6).contains(&passes),
            "round {round}: {passes} sync passes"
        );
        assert_space_maps_exact(&spa, &format!("after round {round}"));
    }
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    assert!(!spa.has_dirty(), "an idle pool stops committing");
    spa.export().unwrap();
    let spa = super::tests::reimport(&devices).unwrap();
    assert_space_maps_exact(&spa, "after import");
}
