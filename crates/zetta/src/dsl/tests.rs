//! Dataset-layer tests: the hierarchy, its persistence, properties and space.

use crate::dsl::DslError;
use crate::io::{DeviceRef, MemDevice};
use crate::spa::{find_pools, CreateOptions, Spa, SpaError, TopKind, TopSpec};
use crate::types::ObjectId;
use std::sync::Arc;

pub(super) fn pool(device: &Arc<MemDevice>) -> Spa {
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/dsl".to_string(), device.clone() as DeviceRef)],
        is_log: false,
    };
    Spa::create("tank", &[spec], &CreateOptions::default()).unwrap()
}

/// Writes `data` at `offset` of object `id` of `fs`, creating the object (a plain file of
/// `block_size` bytes) on first use, in the open txg (not committed).
pub(super) fn write_object(
    spa: &mut Spa,
    fs: &str,
    id: u64,
    offset: u64,
    data: &[u8],
    block_size: u32,
) {
    spa.with_dataset(fs, |os, ctx| {
        if !os.object_exists(ctx, ObjectId(id))? {
            os.create_object_at(
                ctx,
                ObjectId(id),
                crate::dmu::object_type::PLAIN_FILE,
                block_size,
                0,
                0,
            )?;
        }
        os.write(ctx, ObjectId(id), offset, data)
    })
    .unwrap();
}

/// `len` bytes of data seeded by `id`.
pub(super) fn seeded(id: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    crate::rand::SeededRng::new(id).fill(&mut data);
    data
}

pub(super) fn reimport(device: &Arc<MemDevice>) -> Spa {
    let found = find_pools(&[device.clone() as DeviceRef]);
    Spa::import(&found[0], None, 64 << 20).unwrap()
}

/// `zfs create` semantics: parents must exist, names are unique, listing is pre-order by
/// name, and the tree survives export/import.
#[test]
fn hierarchy_create_list_persist() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/b").unwrap();
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/x").unwrap();
    assert!(
        matches!(spa.create_filesystem("tank/a"), Err(SpaError::Dsl(DslError::Exists { name })) if name == "tank/a")
    );
    assert!(
        matches!(spa.create_filesystem("tank/q/r"), Err(SpaError::Dsl(DslError::NoParent { name })) if name == "tank/q/r")
    );
    assert!(spa.create_filesystem("other/a").is_err());
    assert_eq!(
        spa.dataset_names().unwrap(),
        ["tank", "tank/a", "tank/a/x", "tank/b"]
    );
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(
        spa.dataset_names().unwrap(),
        ["tank", "tank/a", "tank/a/x", "tank/b"]
    );
    assert!(spa.lookup_dataset("tank/a/x").unwrap().is_some());
    assert!(spa.lookup_dataset("tank/zz").unwrap().is_none());
}

/// Each filesystem has its own objects; data written to one is not in another, and it
/// survives import. REFER follows the data, USED includes descendants.
#[test]
fn datasets_hold_their_own_data_and_space() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/b").unwrap();
    let mut data = vec![0u8; 4 << 20];
    crate::rand::SeededRng::new(1).fill(&mut data);
    let id = spa
        .with_dataset("tank/a/b", |os, ctx| {
            let id = os.create_object(ctx, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
            os.write(ctx, id, 0, &data)?;
            Ok(id)
        })
        .unwrap();
    spa.sync().unwrap();
    let refer_b = spa.dataset_referenced_bytes("tank/a/b").unwrap();
    assert!(((4 << 20)..(5 << 20)).contains(&refer_b), "refer {refer_b}");
    assert!(spa.dataset_referenced_bytes("tank/a").unwrap() < 1 << 20);
    assert!(spa.dataset_used_bytes("tank/a").unwrap() >= refer_b);
    spa.export().unwrap();
    let mut spa = reimport(&device);
    let read = spa
        .with_dataset("tank/a/b", |os, ctx| os.read(ctx, id, 0, 4 << 20))
        .unwrap();
    assert_eq!(read, data);
    let other = spa
        .with_dataset("tank/a", |os, ctx| os.object_exists(ctx, ObjectId(id.0)))
        .unwrap();
    assert!(!other, "objects belong to their own dataset");
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

/// Destroy refuses a parent with children, frees the space of what it destroys, and the
/// name can be reused.
#[test]
fn destroy_frees_space_and_refuses_parents() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, baseline, _) = spa.space();
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/b").unwrap();
    spa.with_dataset("tank/a/b", |os, ctx| {
        let id = os.create_object(ctx, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
        os.write(ctx, id, 0, &vec![7u8; 3 << 20])
    })
    .unwrap();
    spa.sync().unwrap();
    assert!(
        matches!(spa.destroy_filesystem("tank/a"), Err(SpaError::Dsl(DslError::HasChildren { children, .. })) if children == ["tank/a/b"])
    );
    spa.destroy_filesystem("tank/a/b").unwrap();
    spa.destroy_filesystem("tank/a").unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, after, _) = spa.space();
    assert!(
        after <= baseline + (256 << 10),
        "baseline {baseline}, after {after}"
    );
    assert_eq!(spa.dataset_names().unwrap(), ["tank"]);
    spa.create_filesystem("tank/a").unwrap();
    assert_eq!(spa.dataset_names().unwrap(), ["tank", "tank/a"]);
}

/// Locally set properties are stored per filesystem, listed, cleared, and persist.
#[test]
fn local_properties_persist() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.set_local_prop("tank/a", "compression", "zstd").unwrap();
    spa.set_local_prop("tank/a", "org.example:note", "hello world")
        .unwrap();
    spa.set_local_prop("tank", "atime", "off").unwrap();
    spa.clear_local_prop("tank/a", "org.example:note").unwrap();
    spa.clear_local_prop("tank/a", "never-set").unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(
        spa.local_props("tank/a").unwrap(),
        [("compression".to_string(), "zstd".to_string())]
    );
    assert_eq!(
        spa.local_props("tank").unwrap(),
        [("atime".to_string(), "off".to_string())]
    );
}

/// A snapshot's properties live in its own `ds_props_obj`, where OpenZFS reads them; the
/// `%snapprop:<object>:<prop>` entries sessions up to 19 kept in the root dir's props ZAP
/// move there at the first read-write import, and those of a destroyed snapshot go.
#[test]
fn legacy_snapshot_props_move_to_the_snapshots_own_zap() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.snapshot(&["tank/a@s".to_string()]).unwrap();
    let object = spa.snapshots("tank/a").unwrap()[0].1;
    assert_eq!(spa.snapshots("tank/a").unwrap()[0].2.props_zap, 0);
    spa.set_local_prop("tank", &format!("%snapprop:{object}:user:x"), "1")
        .unwrap();
    spa.set_local_prop("tank", "%snapprop:999999:user:gone", "2")
        .unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(
        spa.snapshot_props().unwrap(),
        [(
            "tank/a@s".to_string(),
            "user:x".to_string(),
            "1".to_string()
        )]
    );
    assert_ne!(spa.snapshots("tank/a").unwrap()[0].2.props_zap, 0);
    assert!(spa.local_props("tank").unwrap().is_empty());
}

/// Properties take effect on new writes, inherited down the tree: compression off and
/// copies=2 double-and-expand what a compressible file costs, recordsize sets the block
/// size, and a sibling keeps the defaults (lz4, 128K). They hold across import.
#[test]
fn io_properties_take_effect_and_inherit() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/b").unwrap();
    spa.set_local_prop("tank/a", "compression", "off").unwrap();
    spa.set_local_prop("tank/a", "copies", "2").unwrap();
    spa.set_local_prop("tank/a", "recordsize", "16384").unwrap();
    spa.create_filesystem("tank/a/child").unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    let text: Vec<u8> = b"compressible text, again and again. "
        .iter()
        .cycle()
        .take(1 << 20)
        .copied()
        .collect();
    let mut ids = Vec::new();
    for name in ["tank/a/child", "tank/b"] {
        let id = spa
            .with_dataset(name, |os, ctx| {
                let id = os.create_object(ctx, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
                os.write(ctx, id, 0, &text)?;
                Ok(id)
            })
            .unwrap();
        ids.push(id);
    }
    spa.sync().unwrap();
    let child = spa.dataset_referenced_bytes("tank/a/child").unwrap();
    let sibling = spa.dataset_referenced_bytes("tank/b").unwrap();
    assert!(child >= 2 << 20, "copies=2, no compression: {child}");
    assert!(sibling < 256 << 10, "lz4 by default: {sibling}");
    let block = spa
        .with_dataset("tank/a/child", |os, ctx| os.dnode(ctx, ids[0]))
        .unwrap()
        .data_block_size_bytes;
    assert_eq!(block, 16384);
    let block = spa
        .with_dataset("tank/b", |os, ctx| os.dnode(ctx, ids[1]))
        .unwrap()
        .data_block_size_bytes;
    assert_eq!(block, 128 << 10);
}

/// Why: the engine resolved the I/O properties with its own walk of the dirs, a second
/// inheritance implementation beside `zetta_zprop::inherit` (what `zfs get` prints); the
/// two could disagree on what new writes use. Now the engine asks zprop: a received value,
/// hidden by `zfs inherit` (falling back to the ancestor's local value), shown again by
/// `zfs inherit -S`, and a local value over both, are what `zfs get` reports.
#[test]
fn io_properties_resolve_as_zfs_get_does() {
    use zetta_zcommon::compress::Compression;
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/child").unwrap();
    spa.set_local_prop("tank/a", "compression", "zle").unwrap();
    spa.set_received_props("tank/a/child", &[("compression".into(), "gzip-3".into())])
        .unwrap();
    let dir = spa.lookup_dir("tank/a/child").unwrap().unwrap();
    let compression = |spa: &mut Spa| spa.effective_io_props(dir).unwrap().0.compression;
    assert_eq!(compression(&mut spa), Compression::Gzip(3), "received");
    spa.inherit_prop("tank/a/child", "compression", false)
        .unwrap();
    assert_eq!(
        compression(&mut spa),
        Compression::Zle,
        "hidden: the parent's"
    );
    spa.inherit_prop("tank/a/child", "compression", true)
        .unwrap();
    assert_eq!(
        compression(&mut spa),
        Compression::Gzip(3),
        "shown again (-S)"
    );
    spa.set_local_prop("tank/a/child", "compression", "off")
        .unwrap();
    assert_eq!(compression(&mut spa), Compression::Off, "local wins");
    spa.clear_local_prop("tank/a/child", "compression").unwrap();
    spa.clear_local_prop("tank/a", "compression").unwrap();
    assert_eq!(
        compression(&mut spa),
        Compression::Gzip(3),
        "received over default"
    );
    spa.set_received_props("tank/a/child", &[]).unwrap();
    assert_eq!(compression(&mut spa), Compression::Lz4, "default: on");
}

/// Snapshots: O(1), read-only views of the committed state. Overwriting and deleting in
/// the head after a snapshot leaves the snapshot's data intact (blocks go to the dead list,
/// not back to the allocator), across export and import; scrub walks snapshots too.
#[test]
fn snapshots_keep_old_data_while_the_head_moves_on() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let mut old = vec![0u8; 2 << 20];
    crate::rand::SeededRng::new(5).fill(&mut old);
    let id = spa
        .with_dataset("tank/fs", |os, ctx| {
            let id = os.create_object(ctx, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
            os.write(ctx, id, 0, &old)?;
            Ok(id)
        })
        .unwrap();
    spa.snapshot(&["tank/fs@one".to_string()]).unwrap();
    assert!(
        spa.snapshot(&["tank/fs@one".to_string()]).is_err(),
        "names are unique"
    );
    let (_, allocated_before, _) = spa.space();
    let mut new = vec![0u8; 2 << 20];
    crate::rand::SeededRng::new(6).fill(&mut new);
    spa.with_dataset("tank/fs", |os, ctx| os.write(ctx, id, 0, &new))
        .unwrap();
    spa.sync().unwrap();
    spa.snapshot(&["tank/fs@two".to_string(), "tank@root".to_string()])
        .unwrap();
    spa.with_dataset("tank/fs", |os, ctx| os.free_object(ctx, id))
        .unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, allocated_after, _) = spa.space();
    assert!(
        allocated_after >= allocated_before + (2 << 20),
        "snapshotted blocks were freed: {allocated_before} -> {allocated_after}"
    );
    spa.export().unwrap();
    let mut spa = reimport(&device);
    let names: Vec<String> = spa
        .snapshots("tank/fs")
        .unwrap()
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    assert_eq!(names, ["tank/fs@one", "tank/fs@two"]);
    assert_eq!(
        spa.with_snapshot("tank/fs@one", |os, ctx| os.read(ctx, id, 0, 2 << 20))
            .unwrap(),
        old
    );
    assert_eq!(
        spa.with_snapshot("tank/fs@two", |os, ctx| os.read(ctx, id, 0, 2 << 20))
            .unwrap(),
        new
    );
    assert!(!spa
        .with_dataset("tank/fs", |os, ctx| os.object_exists(ctx, id))
        .unwrap());
    // The head keeps handing snapshotted blocks to its dead list after import.
    let id2 = spa
        .with_dataset("tank/fs", |os, ctx| {
            let id = os.create_object(ctx, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
            os.write(ctx, id, 0, &[1u8; 100_000])?;
            Ok(id)
        })
        .unwrap();
    spa.snapshot(&["tank/fs@three".to_string()]).unwrap();
    spa.with_dataset("tank/fs", |os, ctx| os.free_object(ctx, id2))
        .unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    assert_eq!(
        spa.with_snapshot("tank/fs@three", |os, ctx| os.read(ctx, id2, 0, 100_000))
            .unwrap(),
        vec![1u8; 100_000]
    );
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

/// Destroying snapshots frees exactly what only they held: the middle one first (its data
/// still reachable from the next snapshot stays), then the rest; at the end the pool is back
/// near where it started, and what remains reads back and scrubs clean.
#[test]
fn destroying_snapshots_frees_only_their_blocks() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, baseline, _) = spa.space();
    let write = |spa: &mut Spa, seed: u64| {
        let mut data = vec![0u8; 2 << 20];
        crate::rand::SeededRng::new(seed).fill(&mut data);
        spa.with_dataset("tank/fs", |os, ctx| {
            if !os.object_exists(ctx, ObjectId(100))? {
                os.create_object_at(
                    ctx,
                    ObjectId(100),
                    crate::dmu::object_type::PLAIN_FILE,
                    512,
                    0,
                    0,
                )?;
            }
            os.write(ctx, ObjectId(100), 0, &data)
        })
        .unwrap();
        spa.sync().unwrap();
        data
    };
    let first = write(&mut spa, 1);
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    let second = write(&mut spa, 2);
    spa.snapshot(&["tank/fs@b".to_string()]).unwrap();
    let third = write(&mut spa, 3);
    spa.snapshot(&["tank/fs@c".to_string()]).unwrap();
    let _fourth = write(&mut spa, 4);
    let (_, with_all, _) = spa.space();
    assert!(with_all >= baseline + (8 << 20));
    // @b's data (second) is held by @b alone: destroying @b frees about 2 MiB.
    spa.destroy_snapshot("tank/fs@b").unwrap();
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, after_b, _) = spa.space();
    assert!(with_all - after_b >= 2 << 20, "{with_all} -> {after_b}");
    assert_eq!(
        spa.with_snapshot("tank/fs@a", |os, ctx| os.read(
            ctx,
            ObjectId(100),
            0,
            2 << 20
        ))
        .unwrap(),
        first
    );
    assert_eq!(
        spa.with_snapshot("tank/fs@c", |os, ctx| os.read(
            ctx,
            ObjectId(100),
            0,
            2 << 20
        ))
        .unwrap(),
        third
    );
    assert!(spa.with_snapshot("tank/fs@b", |_, _| Ok(())).is_err());
    drop(second);
    spa.export().unwrap();
    let mut spa = reimport(&device);
    spa.destroy_snapshot("tank/fs@c").unwrap();
    spa.destroy_snapshot("tank/fs@a").unwrap();
    spa.with_dataset("tank/fs", |os, ctx| os.free_object(ctx, ObjectId(100)))
        .unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, end, _) = spa.space();
    assert!(
        end <= baseline + (512 << 10),
        "baseline {baseline}, end {end}"
    );
    assert!(spa.snapshots("tank/fs").unwrap().is_empty());
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

/// Space as `zfs list -o space` reports it: a snapshot's USED is what only it holds, the
/// head's USEDSNAP is everything its snapshots hold beyond the head, and
/// used = usedbydataset + usedbysnapshots + usedbychildren.
#[test]
fn snapshot_space_accounting() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let mut data = vec![0u8; 4 << 20];
    crate::rand::SeededRng::new(11).fill(&mut data);
    spa.with_dataset("tank/fs", |os, ctx| {
        os.create_object_at(
            ctx,
            ObjectId(100),
            crate::dmu::object_type::PLAIN_FILE,
            512,
            0,
            0,
        )?;
        os.write(ctx, ObjectId(100), 0, &data)
    })
    .unwrap();
    spa.snapshot(&["tank/fs@snap".to_string()]).unwrap();
    assert!(
        spa.snapshot_used_bytes("tank/fs@snap").unwrap() < 64 << 10,
        "nothing unique yet"
    );
    // Overwrite half: that half becomes unique to the snapshot.
    crate::rand::SeededRng::new(12).fill(&mut data[..2 << 20]);
    spa.with_dataset("tank/fs", |os, ctx| {
        os.write(ctx, ObjectId(100), 0, &data[..2 << 20])
    })
    .unwrap();
    spa.sync().unwrap();
    let unique = spa.snapshot_used_bytes("tank/fs@snap").unwrap();
    assert!(
        ((2 << 20)..(2 << 20) + (256 << 10)).contains(&unique),
        "{unique}"
    );
    let usedsnap = spa.used_by_snapshots_bytes("tank/fs").unwrap();
    assert_eq!(
        usedsnap, unique,
        "one snapshot: its unique bytes are all of USEDSNAP"
    );
    let refer = spa.dataset_referenced_bytes("tank/fs").unwrap();
    assert_eq!(spa.dataset_used_bytes("tank/fs").unwrap(), refer + usedsnap);
}

/// Rollback returns the head to its newest snapshot, frees what was written since, refuses
/// (in OpenZFS's words) when newer snapshots exist, and survives import.
#[test]
fn rollback_to_the_newest_snapshot() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let mut first = vec![0u8; 1 << 20];
    crate::rand::SeededRng::new(21).fill(&mut first);
    spa.with_dataset("tank/fs", |os, ctx| {
        os.create_object_at(
            ctx,
            ObjectId(100),
            crate::dmu::object_type::PLAIN_FILE,
            512,
            0,
            0,
        )?;
        os.write(ctx, ObjectId(100), 0, &first)
    })
    .unwrap();
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    spa.snapshot(&["tank/fs@b".to_string()]).unwrap();
    let (_, at_snapshot, _) = spa.space();
    let mut later = vec![0u8; 3 << 20];
    crate::rand::SeededRng::new(22).fill(&mut later);
    spa.with_dataset("tank/fs", |os, ctx| {
        os.write(ctx, ObjectId(100), 0, &later)?;
        os.create_object_at(
            ctx,
            ObjectId(200),
            crate::dmu::object_type::PLAIN_FILE,
            512,
            0,
            0,
        )
    })
    .unwrap();
    spa.sync().unwrap();
    match spa.rollback("tank/fs@a") {
        Err(SpaError::Dsl(DslError::NotLatest { snapshot, newer })) => {
            assert_eq!(
                (snapshot.as_str(), newer),
                ("tank/fs@a", vec!["tank/fs@b".to_string()])
            )
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    spa.rollback("tank/fs@b").unwrap();
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, after, _) = spa.space();
    assert!(
        after <= at_snapshot + (256 << 10),
        "{at_snapshot} -> {after}"
    );
    let read = |spa: &mut Spa| {
        spa.with_dataset("tank/fs", |os, ctx| os.read(ctx, ObjectId(100), 0, 4 << 20))
            .unwrap()
    };
    assert_eq!(read(&mut spa), first);
    assert!(!spa
        .with_dataset("tank/fs", |os, ctx| os.object_exists(ctx, ObjectId(200)))
        .unwrap());
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(read(&mut spa), first);
    spa.destroy_snapshot("tank/fs@b").unwrap();
    spa.rollback("tank/fs@a").unwrap();
    assert_eq!(read(&mut spa), first);
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

/// Clones (the clones post): a clone starts as its origin snapshot's data at no cost, its
/// writes are its own, the origin snapshot cannot be destroyed while it exists (OpenZFS's
/// words), and destroying the clone frees only what it wrote.
#[test]
fn clones_share_until_they_diverge() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, baseline, _) = spa.space();
    let mut data = vec![0u8; 4 << 20];
    crate::rand::SeededRng::new(31).fill(&mut data);
    spa.with_dataset("tank/fs", |os, ctx| {
        os.create_object_at(
            ctx,
            ObjectId(100),
            crate::dmu::object_type::PLAIN_FILE,
            512,
            0,
            0,
        )?;
        os.write(ctx, ObjectId(100), 0, &data)
    })
    .unwrap();
    spa.snapshot(&["tank/fs@snap".to_string()]).unwrap();
    let (_, before_clone, _) = spa.space();
    spa.clone_snapshot("tank/fs@snap", "tank/clone").unwrap();
    spa.sync().unwrap();
    let (_, after_clone, _) = spa.space();
    assert!(
        after_clone - before_clone < 256 << 10,
        "a clone costs nothing at first"
    );
    assert_eq!(
        spa.origin_of("tank/clone").unwrap().as_deref(),
        Some("tank/fs@snap")
    );
    assert_eq!(
        spa.with_dataset("tank/clone", |os, ctx| os.read(
            ctx,
            ObjectId(100),
            0,
            4 << 20
        ))
        .unwrap(),
        data
    );
    let mut changed = vec![0u8; 1 << 20];
    crate::rand::SeededRng::new(32).fill(&mut changed);
    spa.with_dataset("tank/clone", |os, ctx| {
        os.write(ctx, ObjectId(100), 0, &changed)
    })
    .unwrap();
    spa.sync().unwrap();
    assert_eq!(
        spa.with_dataset("tank/fs", |os, ctx| os.read(ctx, ObjectId(100), 0, 4 << 20))
            .unwrap(),
        data
    );
    match spa.destroy_snapshot("tank/fs@snap") {
        Err(SpaError::Dsl(DslError::HasClones { snapshot, clones })) => {
            assert_eq!(
                (snapshot.as_str(), clones),
                ("tank/fs@snap", vec!["tank/clone".to_string()])
            )
        }
        other => panic!("expected the dependent-clones refusal, got {other:?}"),
    }
    spa.export().unwrap();
    let mut spa = reimport(&device);
    assert_eq!(
        &spa.with_dataset("tank/clone", |os, ctx| os.read(
            ctx,
            ObjectId(100),
            0,
            1 << 20
        ))
        .unwrap(),
        &changed
    );
    spa.destroy_filesystem("tank/clone").unwrap();
    spa.destroy_snapshot("tank/fs@snap").unwrap();
    spa.with_dataset("tank/fs", |os, ctx| os.free_object(ctx, ObjectId(100)))
        .unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, end, _) = spa.space();
    assert!(
        end <= baseline + (512 << 10),
        "baseline {baseline}, end {end}"
    );
    assert_eq!(spa.scrub(None).unwrap().errors, 0);
}

/// A property set on a dataset whose object set is already open takes effect on the next
/// write (it did not until something else refreshed the policy: `zfs create -o
/// compression=off` kept compressing).
#[test]
fn set_properties_apply_to_open_object_sets_at_once() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    spa.set_local_prop("tank/fs", "compression", "off").unwrap();
    spa.with_dataset("tank/fs", |os, ctx| {
        let id = os.create_object(ctx, crate::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
        os.write(ctx, id, 0, &vec![7u8; 4 << 20])
    })
    .unwrap();
    spa.sync().unwrap();
    let referenced = spa.dataset_referenced_bytes("tank/fs").unwrap();
    assert!(
        referenced >= 4 << 20,
        "compression=off stored {referenced} bytes for 4 MiB"
    );
}

/// Regression: two snapshots of one filesystem in one command (`zfs snapshot fs@a fs@b`)
/// were both taken in the same txg, so the snapshot chain had no order and destroying one
/// could leave the other pointing at it. OpenZFS refuses them, word for word.
#[test]
fn two_snapshots_of_one_filesystem_at_once_are_refused() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let names = ["tank/fs@a".to_string(), "tank/fs@b".to_string()];
    assert!(matches!(
        spa.snapshot(&names),
        Err(SpaError::Dsl(DslError::SameFilesystemTwice { name })) if name == "tank/fs"
    ));
    assert!(spa.snapshots("tank/fs").unwrap().is_empty());
    spa.create_filesystem("tank/other").unwrap();
    spa.snapshot(&["tank/fs@a".to_string(), "tank/other@a".to_string()])
        .unwrap();
}
