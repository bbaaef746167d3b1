//! Library-level tests of the request handlers: a pool in memory, a `ZplFs` opened on it
//! and called directly (no kernel), so the locking a handler takes can be pinned down.

use crate::{MountOptions, ZplFs};
use parking_lot::RwLock;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use zetta::io::{DeviceRef, MemDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::{Creds, FileKind, Timespec};

/// How long a request may take on a loaded machine before it counts as blocked.
pub(crate) const WAIT: Duration = Duration::from_secs(120);

/// A pool with `tank/fs` holding `file` (three records' worth), snapshotted as
/// `tank/fs@s0` .. `@s{snapshots - 1}`, the live file rewritten after each.
pub(crate) fn pool(snapshots: usize) -> (Arc<RwLock<Spa>>, Vec<Vec<u8>>) {
    let device = Arc::new(MemDevice::new("/mem/ctldir", 256 << 20));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/ctldir".to_string(), device as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    spa.create_filesystem("tank/fs").unwrap();
    let now = Timespec { sec: 1, nsec: 0 };
    let mut contents = Vec::new();
    for n in 0..snapshots {
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(31) ^ n as u32) as u8)
            .collect();
        spa.with_zpl("tank/fs", |vfs, os, ctx| {
            let object = match vfs.lookup(os, ctx, vfs.root, b"file") {
                Ok(attr) => attr.object,
                Err(_) => {
                    let creds = Creds { uid: 0, gid: 0 };
                    let kind = FileKind::Regular;
                    vfs.create(os, ctx, vfs.root, b"file", kind, 0o644, creds, 0, now)?
                        .object
                }
            };
            vfs.write(os, ctx, object, 0, &data, now)?;
            Ok(())
        })
        .unwrap();
        spa.sync().unwrap();
        spa.snapshot(&[format!("tank/fs@s{n}")]).unwrap();
        contents.push(data);
    }
    (Arc::new(RwLock::new(spa)), contents)
}

pub(crate) fn mount(pool: &Arc<RwLock<Spa>>) -> ZplFs {
    let options = MountOptions {
        fsname: "tank/fs".to_string(),
        ..MountOptions::default()
    };
    ZplFs::open(pool.clone(), "tank/fs", options).unwrap()
}

// Why: the kernel forgetting an object (its last lookup reference) took the pool's
// exclusive lock just to ask whether the object was unlinked, so every FORGET (thousands
// after a cold `ls -lR`, on every cache drop) waited for all readers and stopped them. A
// linked object is now released under the shared lock (today this blocks until released).
#[test]
fn forgetting_a_linked_object_needs_no_exclusive_lock() {
    let (pool, _) = pool(1);
    let fs = mount(&pool);
    let object = {
        let spa = pool.read();
        spa.with_zpl_object_shared(fs.dataset, &fs.vfs, |vfs, os, ctx| {
            Ok(vfs.lookup(os, ctx, vfs.root, b"file")?.object)
        })
        .unwrap()
    };
    fs.looked_up(object);
    fs.opened(object);
    let shared = pool.read();
    let done = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let fs = &fs;
        scope.spawn(move || {
            fs.release_refs(object, 1, 0);
            fs.release_refs(object, 0, 1);
            let _ = tx.send(());
        });
        let done = rx.recv_timeout(WAIT);
        drop(shared);
        done
    });
    done.expect("releasing a linked object blocked behind a shared pool lock");
    assert!(!fs.in_use(object));
    // And the file is still there.
    let spa = pool.read();
    let size = spa
        .with_zpl_object_shared(fs.dataset, &fs.vfs, |vfs, os, ctx| {
            Ok(vfs.getattr(os, ctx, object)?.znode.size)
        })
        .unwrap();
    assert_eq!(size, 300_000);
}

// Why: the release path now asks the shared lock first whether an object is unlinked; an
// unlinked object still open must still be reclaimed at its last reference (and only then).
#[test]
fn an_unlinked_object_is_reclaimed_at_its_last_reference() {
    let (pool, _) = pool(1);
    let fs = mount(&pool);
    let lookup = |name: &[u8]| {
        let spa = pool.read();
        spa.with_zpl_object_shared(fs.dataset, &fs.vfs, |vfs, os, ctx| {
            Ok(vfs.lookup(os, ctx, vfs.root, name)?.object)
        })
    };
    let object = lookup(b"file").unwrap();
    fs.looked_up(object);
    fs.opened(object);
    let now = Timespec { sec: 3, nsec: 0 };
    let root = fs.vfs.root;
    fs.policy(|m, spa| m.remove(spa, root, b"file", now, &|o| fs.in_use(o)))
        .unwrap();
    assert!(lookup(b"file").is_err());
    let exists = || {
        let spa = pool.read();
        spa.with_zpl_object_shared(fs.dataset, &fs.vfs, |vfs, os, ctx| {
            Ok(vfs.getattr(os, ctx, object).is_ok())
        })
        .unwrap()
    };
    // Still open: it waits on the delete queue.
    assert!(exists());
    fs.release_refs(object, 1, 0);
    assert!(exists());
    fs.release_refs(object, 0, 1);
    assert!(!exists(), "the unlinked object outlived its last reference");
}

/// Why: a close(2) costs a FLUSH request unless the open said `FOPEN_NOFLUSH`, and the server
/// has nothing to do at a flush (locks are the kernel's, durability is fsync's). A small
/// file's create, write and close was seven requests; this keeps it at six (measured with
/// the `fuse:fuse_request_send` tracepoint, docs/PERFORMANCE.md).
#[test]
fn every_open_skips_the_flush_at_close() {
    let (pool, _) = pool(0);
    let fs = mount(&pool);
    for writing in [false, true] {
        assert!(fs
            .open_flags(writing)
            .contains(crate::kernel::FopenFlags::FOPEN_NOFLUSH));
    }
}
