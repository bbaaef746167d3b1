//! `zfs promote` on the engine: what moves (snapshots, origin, clones, bookmarks, space),
//! what is refused (word for word), and the classic use: promote the clone, destroy the
//! original.

use super::tests::{pool, reimport};
use crate::dsl::DslError;
use crate::io::MemDevice;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use std::sync::Arc;

fn write(spa: &mut Spa, fs: &str, id: u64, byte: u8, len: usize) {
    // Not compressible: a byte pattern that changes every 8 bytes.
    let data: Vec<u8> = (0..len)
        .map(|i| byte ^ (i as u8).wrapping_mul(31) ^ ((i >> 8) as u8))
        .collect();
    super::tests::write_object(spa, fs, id, 0, &data, 512);
}

fn read(spa: &mut Spa, name: &str, id: u64) -> Vec<u8> {
    let work = |os: &mut crate::dmu::ObjectSet, ctx: &crate::dmu::IoCtx<'_>| {
        let size = os.extent_bytes(ctx, ObjectId(id))?;
        os.read(ctx, ObjectId(id), 0, size as usize)
    };
    if name.contains('@') {
        spa.with_snapshot(name, work).unwrap()
    } else {
        spa.with_dataset(name, work).unwrap()
    }
}

fn snapshot_names(spa: &mut Spa, fs: &str) -> Vec<String> {
    spa.snapshots(fs)
        .unwrap()
        .into_iter()
        .map(|(name, _, _)| name)
        .collect()
}

fn audit_clean(spa: &mut Spa) {
    let audit = spa.audit_space().unwrap();
    assert!(audit.mismatches.is_empty(), "{:#?}", audit.mismatches);
}

/// The origin's snapshots up to the clone's origin move to the clone with their data; the
/// origin becomes a clone of the moved snapshot; `origin` and `clones` follow; the space of
/// the moved range is the clone's now; the original can then be destroyed (the classic
/// use) and everything survives export and import.
#[test]
fn promote_moves_snapshots_origin_and_space() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    spa.set_local_prop("tank/fs", "compression", "off").unwrap();
    write(&mut spa, "tank/fs", 10, 1, 4 << 20);
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    write(&mut spa, "tank/fs", 11, 2, 2 << 20);
    spa.snapshot(&["tank/fs@b".to_string()]).unwrap();
    spa.clone_snapshot("tank/fs@b", "tank/clone").unwrap();
    write(&mut spa, "tank/fs", 10, 3, 3 << 20);
    spa.snapshot(&["tank/fs@c".to_string()]).unwrap();
    write(&mut spa, "tank/clone", 12, 4, 1 << 20);
    spa.sync().unwrap();
    audit_clean(&mut spa);
    let fs_used = spa.dataset_used_bytes("tank/fs").unwrap();
    let clone_used = spa.dataset_used_bytes("tank/clone").unwrap();
    assert!(clone_used < 3 << 20, "a clone is charged for what it wrote");
    let data_b = read(&mut spa, "tank/fs@b", 10);

    spa.promote("tank/clone").unwrap();
    assert_eq!(
        snapshot_names(&mut spa, "tank/clone"),
        ["tank/clone@a", "tank/clone@b"]
    );
    assert_eq!(snapshot_names(&mut spa, "tank/fs"), ["tank/fs@c"]);
    assert_eq!(spa.origin_of("tank/clone").unwrap(), None);
    assert_eq!(
        spa.origin_of("tank/fs").unwrap().as_deref(),
        Some("tank/clone@b")
    );
    let (_, b_object, _) = spa.snapshots("tank/clone").unwrap()[1].clone();
    assert_eq!(spa.dependent_clones(b_object).unwrap(), ["tank/fs"]);
    assert_eq!(read(&mut spa, "tank/clone@b", 10), data_b);
    audit_clean(&mut spa);
    // The original data (6 MiB in @a and @b) is the clone's now; fs keeps what it wrote
    // after @b. Together they hold exactly what they held before.
    let fs_after = spa.dataset_used_bytes("tank/fs").unwrap();
    let clone_after = spa.dataset_used_bytes("tank/clone").unwrap();
    assert!(clone_after > 6 << 20, "clone USED {clone_after}");
    assert!(fs_after < 4 << 20, "fs USED {fs_after}");
    assert_eq!(fs_after + clone_after, fs_used + clone_used);
    // The clone's head still references all of @b: that is its USEDDS now.
    let space = spa.dataset_space("tank/clone").unwrap();
    assert!(space.used_by_dataset_bytes > 6 << 20, "{space:?}");

    // The classic use: the original goes.
    spa.destroy_snapshot("tank/fs@c").unwrap();
    spa.destroy_filesystem("tank/fs").unwrap();
    audit_clean(&mut spa);
    assert_eq!(read(&mut spa, "tank/clone@b", 10), data_b);
    spa.destroy_snapshot("tank/clone@a").unwrap();
    spa.destroy_snapshot("tank/clone@b").unwrap();
    audit_clean(&mut spa);
    assert_eq!(read(&mut spa, "tank/clone", 10), data_b);
    spa.export().unwrap();
    let mut spa = reimport(&device);
    audit_clean(&mut spa);
    assert_eq!(read(&mut spa, "tank/clone", 10), data_b);
}

/// OpenZFS's refusals (the CLI words them): a filesystem that is not a clone, and a
/// snapshot name the clone already has (reported with the origin).
#[test]
fn promote_refusals() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    write(&mut spa, "tank/fs", 10, 1, 100_000);
    spa.snapshot(&["tank/fs@same".to_string()]).unwrap();
    spa.snapshot(&["tank/fs@origin".to_string()]).unwrap();
    spa.clone_snapshot("tank/fs@origin", "tank/clone").unwrap();
    spa.snapshot(&["tank/clone@same".to_string()]).unwrap();
    let refusal = |result: Result<(), SpaError>| match result {
        Err(SpaError::Dsl(e)) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refusal(spa.promote("tank/fs")),
        DslError::NotClone {
            name: "tank/fs".into()
        }
    );
    assert_eq!(
        refusal(spa.promote("tank/clone")),
        DslError::PromoteConflict {
            name: "tank/clone".into(),
            snapshot: "same".into(),
            origin: "tank/fs@origin".into()
        }
    );
    // Nothing moved.
    assert_eq!(snapshot_names(&mut spa, "tank/fs").len(), 2);
    audit_clean(&mut spa);
    spa.rename_snapshot("tank/clone@same", "tank/clone@other")
        .unwrap();
    spa.promote("tank/clone").unwrap();
    assert_eq!(
        snapshot_names(&mut spa, "tank/clone"),
        ["tank/clone@same", "tank/clone@origin", "tank/clone@other"]
    );
    audit_clean(&mut spa);
}

/// A clone of a clone takes over its origin's own origin; promoting back and forth keeps
/// every snapshot's data and the accounting exact; bookmarks up to the origin move too.
#[test]
fn promote_clone_of_clone_and_back() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    write(&mut spa, "tank/fs", 10, 1, 1 << 20);
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    spa.clone_snapshot("tank/fs@a", "tank/c1").unwrap();
    write(&mut spa, "tank/c1", 11, 2, 1 << 20);
    spa.snapshot(&["tank/c1@b".to_string()]).unwrap();
    spa.create_bookmark("tank/c1@b", "tank/c1#mark").unwrap();
    write(&mut spa, "tank/c1", 10, 3, 512 << 10);
    spa.snapshot(&["tank/c1@later".to_string()]).unwrap();
    spa.clone_snapshot("tank/c1@b", "tank/c2").unwrap();
    write(&mut spa, "tank/c2", 12, 4, 1 << 20);
    audit_clean(&mut spa);
    let b = read(&mut spa, "tank/c1@b", 11);

    spa.promote("tank/c2").unwrap();
    assert_eq!(
        spa.origin_of("tank/c2").unwrap().as_deref(),
        Some("tank/fs@a")
    );
    assert_eq!(
        spa.origin_of("tank/c1").unwrap().as_deref(),
        Some("tank/c2@b")
    );
    assert_eq!(snapshot_names(&mut spa, "tank/c2"), ["tank/c2@b"]);
    assert_eq!(snapshot_names(&mut spa, "tank/c1"), ["tank/c1@later"]);
    let marks: Vec<String> = spa
        .bookmarks("tank/c2")
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(marks, ["tank/c2#mark"]);
    assert!(spa.bookmarks("tank/c1").unwrap().is_empty());
    assert_eq!(read(&mut spa, "tank/c2@b", 11), b);
    audit_clean(&mut spa);

    spa.promote("tank/c1").unwrap();
    assert_eq!(
        spa.origin_of("tank/c1").unwrap().as_deref(),
        Some("tank/fs@a")
    );
    assert_eq!(
        spa.origin_of("tank/c2").unwrap().as_deref(),
        Some("tank/c1@b")
    );
    audit_clean(&mut spa);
    // And over the first filesystem too: then nothing is left to promote it over.
    spa.promote("tank/c1").unwrap();
    assert_eq!(
        spa.origin_of("tank/fs").unwrap().as_deref(),
        Some("tank/c1@a")
    );
    assert!(spa.promote("tank/c1").is_err());
    audit_clean(&mut spa);
    assert_eq!(read(&mut spa, "tank/c1@b", 11), b);
}

/// A quota on the clone's side that the moved space would pass refuses the promote (out
/// of space) and changes nothing.
#[test]
fn promote_respects_quotas() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    spa.set_local_prop("tank/fs", "compression", "off").unwrap();
    write(&mut spa, "tank/fs", 10, 1, 4 << 20);
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    spa.create_filesystem("tank/small").unwrap();
    spa.set_local_prop("tank/small", "quota", &(1u64 << 20).to_string())
        .unwrap();
    spa.clone_snapshot("tank/fs@a", "tank/small/clone").unwrap();
    assert!(matches!(
        spa.promote("tank/small/clone"),
        Err(SpaError::NoSpace)
    ));
    assert_eq!(snapshot_names(&mut spa, "tank/fs"), ["tank/fs@a"]);
    audit_clean(&mut spa);
}

// Why: `promote` committed the open txg, moved snapshots and origins in the next txg and
// committed again (three txgs with the CLI's commit). As a sync task it is one txg whose
// check sees the heads as written in that txg: data written (uncommitted) to the clone
// and the origin just before is accounted exactly, down a chain of clones of clones, and
// `zpool history -i` has OpenZFS's `promote` record in that txg.
#[test]
fn promote_is_one_txg_along_a_chain_of_clones() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    write(&mut spa, "tank/fs", 10, 1, 2 << 20);
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    spa.clone_snapshot("tank/fs@a", "tank/c1").unwrap();
    write(&mut spa, "tank/c1", 11, 2, 1 << 20);
    spa.snapshot(&["tank/c1@b".to_string()]).unwrap();
    spa.clone_snapshot("tank/c1@b", "tank/c2").unwrap();
    spa.sync().unwrap();
    let mut promotions = Vec::new();
    for (step, clone) in ["tank/c2", "tank/c1", "tank/c1", "tank/fs", "tank/c1"]
        .into_iter()
        .enumerate()
    {
        // Writes in the open txg on every filesystem, overwriting snapshotted blocks.
        for fs in ["tank/fs", "tank/c1", "tank/c2"] {
            write(&mut spa, fs, 10, 10 + step as u8, (1 + step) << 19);
        }
        // The clone takes over its origin's own origin (none, or a clone of a clone's).
        let origin = spa.origin_of(clone).unwrap().unwrap();
        let origin_fs = origin.split('@').next().unwrap_or_default().to_string();
        let origin_origin = spa.origin_of(&origin_fs).unwrap();
        let before = spa.last_synced_txg();
        spa.promote(clone).unwrap();
        let txg = spa.last_synced_txg();
        assert_eq!(txg.0, before.0 + 1, "promote {clone}: one txg");
        assert!(!spa.dp.mos.is_dirty(), "promote {clone}: committed");
        assert_eq!(
            spa.origin_of(clone).unwrap(),
            origin_origin,
            "{clone}'s origin"
        );
        audit_clean(&mut spa);
        let dataset = spa.lookup_dataset(clone).unwrap().unwrap();
        promotions.push(format!("[txg:{}] promote {clone} ({dataset})  ", txg.0));
    }
    let records: Vec<String> = spa
        .history_records(true)
        .unwrap()
        .into_iter()
        .map(|(_, line)| line)
        .filter(|line| line.contains("] promote "))
        .collect();
    assert_eq!(records, promotions);
    // c1 holds the chain's first snapshots again; fs and c2 are its clones.
    assert_eq!(
        snapshot_names(&mut spa, "tank/c1"),
        ["tank/c1@a", "tank/c1@b"]
    );
    assert_eq!(
        spa.origin_of("tank/fs").unwrap().as_deref(),
        Some("tank/c1@a")
    );
    assert_eq!(
        spa.origin_of("tank/c2").unwrap().as_deref(),
        Some("tank/c1@b")
    );
    spa.export().unwrap();
    let mut spa = reimport(&device);
    audit_clean(&mut spa);
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}
