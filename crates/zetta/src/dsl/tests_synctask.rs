//! Sync tasks (`synctask`): an administrative change runs in the syncing context of one
//! txg, after the object sets are written, and costs that one txg.

use super::synctask::SyncTx;
use super::tests::{pool, reimport, seeded, write_object};
use crate::io::MemDevice;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use std::sync::Arc;

const MIB: u64 = 1 << 20;

/// Writes `len` bytes of seeded data into object `id` of `fs` (created on first use), in
/// the open txg (not committed).
fn write(spa: &mut Spa, fs: &str, id: u64, len: usize) -> Vec<u8> {
    let data = seeded(id, len);
    write_object(spa, fs, id, 0, &data, 128 << 10);
    data
}

fn assert_audit_clean(spa: &mut Spa) {
    let audit = spa.audit_space().unwrap();
    assert!(
        audit.mismatches.is_empty(),
        "{}",
        audit.mismatches.join("\n")
    );
}

// Why: `snapshot` committed the open txg, wrote the snapshot records in the next txg and
// committed again (three commits per `zfs snapshot` with the CLI's): a snapshot of k names
// must advance the pool by exactly one txg, every snapshot's creation txg must be that txg,
// and each must hold what its head had written, uncommitted, in that same txg.
#[test]
fn snapshot_of_k_names_is_one_txg() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    let k = 6;
    let filesystems: Vec<String> = (0..k).map(|i| format!("tank/fs{i}")).collect();
    for fs in &filesystems {
        spa.create_filesystem(fs).unwrap();
    }
    // A refreservation on one of them: the snapshot charges it in full again.
    spa.check_space_limit("tank/fs0", super::SpaceLimit::Refreservation, 8 * MIB)
        .unwrap();
    spa.set_local_prop("tank/fs0", "refreservation", &(8 * MIB).to_string())
        .unwrap();
    spa.sync().unwrap();
    // Data written in the open txg, not committed before the snapshot.
    let mut written = Vec::new();
    for (i, fs) in filesystems.iter().enumerate() {
        written.push(write(&mut spa, fs, 1000 + i as u64, (i + 1) * 300_000));
    }
    let root_data = write(&mut spa, "tank", 999, 200_000);
    let before = spa.last_synced_txg();
    let mut names: Vec<String> = filesystems.iter().map(|fs| format!("{fs}@s")).collect();
    names.push("tank@s".to_string());
    spa.snapshot(&names).unwrap();
    let txg = spa.last_synced_txg();
    assert_eq!(
        txg.0,
        before.0 + 1,
        "snapshot of {} names: one txg",
        names.len()
    );
    assert_eq!(spa.open_txg().0, txg.0 + 1);
    for (i, fs) in filesystems.iter().enumerate() {
        let snapshots = spa.snapshots(fs).unwrap();
        assert_eq!(snapshots.len(), 1);
        let (name, _, phys) = &snapshots[0];
        assert_eq!(name, &format!("{fs}@s"));
        assert_eq!(
            phys.creation_txg, txg.0,
            "{name}: created in the txg it ran in"
        );
        let id = ObjectId(1000 + i as u64);
        let held = spa
            .with_snapshot(name, |os, ctx| os.read(ctx, id, 0, written[i].len()))
            .unwrap();
        assert_eq!(
            held, written[i],
            "{name} holds what its head wrote in that txg"
        );
    }
    let (_, _, root) = &spa.snapshots("tank").unwrap()[0];
    assert_eq!(root.creation_txg, txg.0);
    let held = spa
        .with_snapshot("tank@s", |os, ctx| {
            os.read(ctx, ObjectId(999), 0, root_data.len())
        })
        .unwrap();
    assert_eq!(held, root_data);
    // The head shares all it holds with the snapshot: its refreservation is charged whole.
    assert_eq!(
        spa.dataset_space("tank/fs0")
            .unwrap()
            .used_by_refreservation_bytes,
        8 * MIB
    );
    assert_audit_clean(&mut spa);
    // The heads move on: overwriting hands the snapshotted blocks to the dead lists.
    for (i, fs) in filesystems.iter().enumerate() {
        write(&mut spa, fs, 1000 + i as u64, 100_000);
    }
    assert_audit_clean(&mut spa);
    // And everything survives import with the same creation txgs.
    spa.export().unwrap();
    let mut spa = reimport(&device);
    for fs in &filesystems {
        let (_, _, phys) = &spa.snapshots(fs).unwrap()[0];
        assert_eq!(phys.creation_txg, txg.0);
    }
    assert_audit_clean(&mut spa);
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

// Why: a sync task's check runs again in syncing context, against what the tasks before it
// in the same txg did; one refused there must change nothing and hand its error to its
// caller, while the txg (and the other tasks) commit.
#[test]
fn a_task_refused_in_syncing_context_changes_nothing() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    spa.sync().unwrap();
    // Both pass their open-context check: neither snapshot exists yet.
    let first = spa
        .snapshot_queue(&["tank/fs@a".to_string()], None)
        .unwrap();
    let second = spa
        .snapshot_queue(&["tank/fs@a".to_string(), "tank@a".to_string()], None)
        .unwrap();
    let before = spa.last_synced_txg();
    spa.sync().unwrap();
    assert_eq!(spa.last_synced_txg().0, before.0 + 1);
    spa.sync_task_result(first).unwrap();
    match spa.sync_task_result(second) {
        Err(SpaError::Dsl(crate::dsl::DslError::Exists { name })) => {
            assert_eq!(name, "tank/fs@a")
        }
        other => panic!("second task: {other:?}"),
    }
    // Its other name was not taken either: a task is all or nothing.
    assert!(spa.snapshots("tank").unwrap().is_empty());
    assert_eq!(spa.snapshots("tank/fs").unwrap().len(), 1);
    // A collected result is gone.
    assert!(spa.sync_task_result(first).is_err());
    // The internal history names the one snapshot, in its txg.
    let internal: Vec<String> = spa
        .history_records(true)
        .unwrap()
        .into_iter()
        .map(|(_, line)| line)
        .filter(|line| line.starts_with("[txg:"))
        .collect();
    let object = spa.snapshots("tank/fs").unwrap()[0].1;
    assert_eq!(
        internal,
        [format!(
            "[txg:{}] snapshot tank/fs@a ({object})  ",
            before.0 + 1
        )]
    );
    assert!(spa
        .history()
        .unwrap()
        .iter()
        .all(|(_, l)| !l.starts_with('[')));
    assert_audit_clean(&mut spa);
}

// Why: `dsl_sync_task` must run the check in open context (refusing before anything is
// queued) and again in syncing context, run the sync function in the txg it returns, and
// report a syncing-context refusal as the task's error.
#[test]
fn dsl_sync_task_runs_check_twice_and_sync_once() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(&str, SyncTx)>::new()));
    let (check_seen, sync_seen) = (seen.clone(), seen.clone());
    let txg = spa
        .dsl_sync_task(
            Box::new(move |_, tx| {
                check_seen.lock().unwrap().push(("check", tx));
                Ok(())
            }),
            Box::new(move |_, tx| {
                sync_seen.lock().unwrap().push(("sync", tx));
                Ok(())
            }),
        )
        .unwrap();
    let open = SyncTx {
        txg,
        syncing: false,
    };
    let syncing = SyncTx { txg, syncing: true };
    assert_eq!(
        *seen.lock().unwrap(),
        [("check", open), ("check", syncing), ("sync", syncing)]
    );
    assert_eq!(spa.last_synced_txg(), txg);
    // Refused in open context: nothing queued, nothing committed.
    let refused = spa.dsl_sync_task(
        Box::new(|_, _| Err(SpaError::Invalid("no".to_string()))),
        Box::new(|_, _| panic!("a refused task never syncs")),
    );
    assert!(matches!(refused, Err(SpaError::Invalid(m)) if m == "no"));
    assert_eq!(spa.last_synced_txg(), txg);
    assert!(!spa.has_dirty());
    // Refused in syncing context: the txg commits, the task's error comes back.
    let refused = spa.dsl_sync_task(
        Box::new(|_, tx| {
            if tx.syncing {
                Err(SpaError::Invalid("changed meanwhile".to_string()))
            } else {
                Ok(())
            }
        }),
        Box::new(|_, _| panic!("a refused task never syncs")),
    );
    assert!(matches!(refused, Err(SpaError::Invalid(m)) if m == "changed meanwhile"));
    assert_eq!(spa.last_synced_txg().0, txg.0 + 1);
}
