//! `zfs destroy` of filesystems as one sync task (`destroy`): one txg, the data written in
//! that txg freed with the rest, whole trees (clones inside included) in one task, and
//! refusals in open or syncing context that change nothing.

use super::tests::{pool, reimport, seeded, write_object};
use super::DslError;
use crate::io::MemDevice;
use crate::spa::{Spa, SpaError};
use std::sync::Arc;

/// Writes `len` seeded bytes into object `id` of `fs` (created on first use), in the open
/// txg (not committed).
fn write(spa: &mut Spa, fs: &str, id: u64, len: usize) {
    write_object(spa, fs, id, 0, &seeded(id, len), 128 << 10);
}

fn assert_audit_clean(spa: &mut Spa) {
    let audit = spa.audit_space().unwrap();
    assert!(
        audit.mismatches.is_empty(),
        "{}",
        audit.mismatches.join("\n")
    );
}

/// The `[txg:N] …` internal records of the pool's history.
fn internal_records(spa: &mut Spa) -> Vec<String> {
    spa.history_records(true)
        .unwrap()
        .into_iter()
        .map(|(_, line)| line)
        .filter(|line| line.starts_with("[txg:"))
        .collect()
}

/// Commits until the frees of earlier txgs are allocatable again.
fn settle(spa: &mut Spa) {
    for _ in 0..4 {
        spa.sync().unwrap();
    }
}

// Why: `destroy_filesystem` committed the open txg, then removed the filesystem in the next
// txg without committing it (the CLI's commit made it two txgs, and a crash after the
// command returned could bring the filesystem back). As a sync task it must be one
// committed txg that also frees what the filesystem wrote, uncommitted, in that txg, and
// log OpenZFS's internal record.
#[test]
fn destroy_of_a_filesystem_is_one_committed_txg() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    settle(&mut spa);
    let (_, baseline, _) = spa.space();
    spa.create_filesystem("tank/fs").unwrap();
    write(&mut spa, "tank/fs", 10, 3 << 20);
    spa.sync().unwrap();
    let dataset = spa.lookup_dataset("tank/fs").unwrap().unwrap();
    // More data in the open txg, and a sibling's, committed by the destroy's txg.
    write(&mut spa, "tank/fs", 11, 2 << 20);
    spa.create_filesystem("tank/other").unwrap();
    write(&mut spa, "tank/other", 10, 1 << 20);
    let before = spa.last_synced_txg();
    spa.destroy_filesystem("tank/fs").unwrap();
    let txg = spa.last_synced_txg();
    assert_eq!(txg.0, before.0 + 1, "one txg");
    assert!(
        !spa.dp.mos.is_dirty(),
        "the destroy is committed when it returns"
    );
    assert_eq!(spa.dataset_names().unwrap(), ["tank", "tank/other"]);
    assert_eq!(
        internal_records(&mut spa),
        [format!(
            // mintxg: `ds_prev_snap_txg`, `$ORIGIN@$ORIGIN`'s creation txg for a dataset
            // without snapshots: 1 (`TXG_INITIAL`), as OpenZFS writes it (session 20).
            "[txg:{}] destroy tank/fs ({dataset}) (synchronous, mintxg=1)",
            txg.0
        )]
    );
    assert_audit_clean(&mut spa);
    // Nothing of it is left once the deferred frees are back.
    spa.destroy_filesystem("tank/other").unwrap();
    settle(&mut spa);
    let (_, after, _) = spa.space();
    assert!(
        after <= baseline + (256 << 10),
        "baseline {baseline}, after {after}"
    );
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(spa.dataset_names().unwrap(), ["tank"]);
    assert_audit_clean(&mut spa);
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

// Why: `zfs destroy -r` destroyed a tree one victim at a time (a txg or two each, retrying
// a clone's origin until the clone was gone). One task must take a whole tree, victims in
// any order (a clone inside the tree before its origin snapshot, snapshots and children
// before their filesystem), in one txg, leaving the space audit clean and nothing leaked.
#[test]
fn destroy_of_a_tree_with_a_clone_is_one_task() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    settle(&mut spa);
    let (_, baseline, _) = spa.space();
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/b").unwrap();
    write(&mut spa, "tank/a", 10, 2 << 20);
    write(&mut spa, "tank/a/b", 10, 1 << 20);
    spa.snapshot(&["tank/a@s".to_string(), "tank/a/b@s".to_string()])
        .unwrap();
    spa.clone_snapshot("tank/a@s", "tank/a/c").unwrap();
    write(&mut spa, "tank/a/c", 11, 1 << 20);
    write(&mut spa, "tank/a", 10, 1 << 20);
    spa.sync().unwrap();
    write(&mut spa, "tank/a/b", 12, 1 << 20);
    // Origins before their clones, parents before children: the check finds the order.
    let victims: Vec<String> = ["tank/a@s", "tank/a", "tank/a/b@s", "tank/a/b", "tank/a/c"]
        .iter()
        .map(|v| v.to_string())
        .collect();
    let before = spa.last_synced_txg();
    let task = spa.destroy_queue(&victims).unwrap();
    spa.sync().unwrap();
    spa.sync_task_result(task).unwrap();
    assert_eq!(spa.last_synced_txg().0, before.0 + 1, "one txg");
    assert_eq!(spa.dataset_names().unwrap(), ["tank"]);
    let destroyed: Vec<String> = internal_records(&mut spa)
        .into_iter()
        .filter(|r| r.contains("] destroy "))
        .map(|r| r.split(' ').nth(2).unwrap_or_default().to_string())
        .collect();
    assert_eq!(destroyed, ["tank/a/b", "tank/a/c", "tank/a"]);
    assert_audit_clean(&mut spa);
    settle(&mut spa);
    let (_, after, _) = spa.space();
    assert!(
        after <= baseline + (256 << 10),
        "baseline {baseline}, after {after}"
    );
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(spa.dataset_names().unwrap(), ["tank"]);
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

// Why: the destroy's check must run in open context (refusing before anything is queued,
// with OpenZFS's texts) and again in syncing context against what the tasks before it in
// the same txg did; refused there, it changes nothing and hands its error to its caller.
#[test]
fn destroy_refusals_change_nothing() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/b").unwrap();
    spa.snapshot(&["tank/a/b@s".to_string()]).unwrap();
    spa.hold("keep", "tank/a/b@s").unwrap();
    let before = spa.last_synced_txg();
    assert!(matches!(
        spa.destroy_queue(&["tank/a".to_string()]),
        Err(SpaError::Dsl(DslError::HasChildren { name, children }))
            if name == "tank/a" && children == ["tank/a/b"]
    ));
    assert!(matches!(
        spa.destroy_queue(&["tank".to_string()]),
        Err(SpaError::Dsl(DslError::PoolRoot { name })) if name == "tank"
    ));
    // The held snapshot's own refusal (typed; the CLI words it).
    assert!(matches!(
        spa.destroy_queue(&[
            "tank/a/b@s".to_string(),
            "tank/a/b".to_string(),
            "tank/a".to_string(),
        ]),
        Err(SpaError::Dsl(super::error::DslError::Held { snapshot, .. })) if snapshot == "tank/a/b@s"
    ));
    assert!(matches!(
        spa.destroy_queue(&["tank/nothing".to_string()]),
        Err(SpaError::NoSuchDataset(n)) if n == "tank/nothing"
    ));
    assert_eq!(spa.last_synced_txg(), before, "nothing committed");
    assert!(!spa.has_dirty(), "nothing queued");
    spa.release("keep", "tank/a/b@s").unwrap();
    // Both pass in open context; in syncing context the snapshot, queued first, gives the
    // filesystem something to keep, and the destroy is refused.
    spa.create_filesystem("tank/x").unwrap();
    spa.sync().unwrap();
    let snapshot = spa
        .snapshot_queue(&["tank/x@late".to_string()], None)
        .unwrap();
    let destroy = spa.destroy_queue(&["tank/x".to_string()]).unwrap();
    let before = spa.last_synced_txg();
    spa.sync().unwrap();
    assert_eq!(spa.last_synced_txg().0, before.0 + 1);
    spa.sync_task_result(snapshot).unwrap();
    assert!(matches!(
        spa.sync_task_result(destroy),
        Err(SpaError::Dsl(DslError::HasChildren { name, children }))
            if name == "tank/x" && children == ["tank/x@late"]
    ));
    assert_eq!(
        spa.dataset_names().unwrap(),
        ["tank", "tank/a", "tank/a/b", "tank/x"]
    );
    assert!(internal_records(&mut spa)
        .iter()
        .all(|r| !r.contains("] destroy ")));
    assert_audit_clean(&mut spa);
}
