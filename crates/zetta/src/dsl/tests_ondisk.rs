//! The DSL as OpenZFS lays it out, checked on pools the engine writes: the records decode
//! with the part-1 reader's codecs, the snapshot chain and clone counts are OpenZFS's, and
//! the object directory leads to every dataset, snapshot and property.

use super::openzfs::dataset::{DslDatasetPhys as OzDataset, DS_FLAG_UNIQUE_ACCURATE};
use super::openzfs::dir::{DslDirPhys as OzDir, DD_FLAG_USED_BREAKDOWN};
use super::openzfs::{objdir, ot};
use super::tests::pool;
use crate::byteorder::ByteOrder;
use crate::io::MemDevice;
use crate::spa::Spa;
use crate::types::ObjectId;
use crate::zap::{self, ZapValue};
use std::collections::BTreeMap;
use std::sync::Arc;

fn bonus(spa: &Spa, object: u64) -> Vec<u8> {
    let ctx = spa.ctx();
    spa.dp.mos.bonus(&ctx, ObjectId(object)).unwrap()
}

fn dataset(spa: &Spa, object: u64) -> OzDataset {
    OzDataset::decode(&bonus(spa, object), ByteOrder::Little).unwrap()
}

fn dir(spa: &Spa, object: u64) -> OzDir {
    OzDir::decode(&bonus(spa, object), ByteOrder::Little).unwrap()
}

fn zap_map(spa: &Spa, object: u64) -> BTreeMap<String, ZapValue> {
    let ctx = spa.ctx();
    zap::zap_list_all(&spa.dp.mos, &ctx, ObjectId(object))
        .unwrap()
        .into_iter()
        .map(|e| (String::from_utf8(e.name).unwrap(), e.value))
        .collect()
}

fn one(value: &ZapValue) -> u64 {
    match value {
        ZapValue::U64s(v) if v.len() == 1 => v[0],
        other => panic!("not one integer: {other:?}"),
    }
}

fn snap_object(spa: &mut Spa, full: &str) -> u64 {
    let fs = full.split('@').next().unwrap();
    spa.snapshots(fs)
        .unwrap()
        .into_iter()
        .find(|(n, _, _)| n == full)
        .unwrap()
        .1
}

fn snap(spa: &mut Spa, names: &[&str]) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    spa.snapshot(&names).unwrap();
}

// Why: the engine's dataset records had no ds_next_snap_obj or ds_num_children (a private
// "snapshot" flag instead, the bit OpenZFS reads as INCONSISTENT); OpenZFS walks a chain
// by next_snap and tells a snapshot by num_children = 1 + its clones. Snapshot, clone,
// clone destroy, snapshot destroy and promote must keep both as OpenZFS does.
#[test]
fn snapshot_chain_and_clone_counts_are_openzfs_s() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    snap(&mut spa, &["tank/fs@a"]);
    snap(&mut spa, &["tank/fs@b"]);
    snap(&mut spa, &["tank/fs@c"]);
    spa.sync().unwrap();
    let head = spa.lookup_dataset("tank/fs").unwrap().unwrap();
    let [a, b, c] = ["tank/fs@a", "tank/fs@b", "tank/fs@c"].map(|n| snap_object(&mut spa, n));
    let next = |spa: &Spa, o: u64| dataset(spa, o).next_snap_obj;
    assert_eq!(
        [
            next(&spa, a),
            next(&spa, b),
            next(&spa, c),
            next(&spa, head)
        ],
        [b, c, head, 0]
    );
    for o in [a, b, c] {
        let d = dataset(&spa, o);
        assert!(d.is_snapshot());
        assert_eq!((d.num_children, d.snapnames_zapobj), (1, 0));
        assert_eq!(d.flags, DS_FLAG_UNIQUE_ACCURATE);
        assert_ne!(d.fsid_guid, 0);
    }
    let h = dataset(&spa, head);
    assert!(!h.is_snapshot());
    assert_eq!(h.flags, DS_FLAG_UNIQUE_ACCURATE);
    assert_eq!(h.prev_snap_obj, c);
    // Clones count on their origin; destroying one gives it back.
    spa.clone_snapshot("tank/fs@b", "tank/k1").unwrap();
    spa.clone_snapshot("tank/fs@b", "tank/k2").unwrap();
    spa.sync().unwrap();
    assert_eq!(dataset(&spa, b).num_children, 3);
    spa.destroy_filesystem("tank/k2").unwrap();
    spa.sync().unwrap();
    assert_eq!(dataset(&spa, b).num_children, 2);
    let k1 = spa.lookup_dataset("tank/k1").unwrap().unwrap();
    assert_eq!(dataset(&spa, k1).prev_snap_obj, b);
    assert_eq!(
        next(&spa, b),
        c,
        "a clone does not enter its origin's chain"
    );
    // A snapshot of the clone leaves the origin's next alone.
    snap(&mut spa, &["tank/k1@k"]);
    spa.sync().unwrap();
    let k = snap_object(&mut spa, "tank/k1@k");
    assert_eq!((next(&spa, b), next(&spa, k)), (c, k1));
    // Destroying a snapshot closes the chain over it.
    spa.destroy_snapshot("tank/fs@a").unwrap();
    spa.sync().unwrap();
    // No previous snapshot is $ORIGIN@$ORIGIN on disk, as OpenZFS writes it.
    assert_eq!(
        dataset(&spa, b).prev_snap_obj,
        crate::dsl::phys::ORIGIN_SNAPSHOT_OBJECT
    );
    // Promote: a and b move to the clone, whose chain is b -> k -> k1; fs keeps c -> fs.
    spa.promote("tank/k1").unwrap();
    spa.sync().unwrap();
    assert_eq!([next(&spa, b), next(&spa, k), next(&spa, c)], [k, k1, head]);
    assert_eq!(dataset(&spa, b).num_children, 2, "fs is now b's clone");
    // Every dir record is OpenZFS's: used breakdown kept, the sum is USED.
    for name in ["tank", "tank/fs", "tank/k1"] {
        let d = dir(&spa, spa.lookup_dir(name).unwrap().unwrap());
        assert_eq!(d.flags, DD_FLAG_USED_BREAKDOWN);
        assert_eq!(d.used_bytes, d.used_breakdown.iter().sum::<u64>(), "{name}");
    }
}

// Why: a pool the engine writes must be walkable the way OpenZFS walks it: from the MOS
// object directory's root_dataset through dsl_dir_phys_t child maps to each head's
// dsl_dataset_phys_t and snapnames map, every object of OpenZFS's type, every record
// decoded by the part-1 reader's codecs (read here through the engine's DMU: the part-1
// reader's dnode layer cannot open the engine's MOS until increment 3b lands).
#[test]
fn the_part1_decoders_walk_an_engine_pool_from_the_directory() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/b").unwrap();
    snap(&mut spa, &["tank/a@s1", "tank/a/b@s2"]);
    spa.clone_snapshot("tank/a@s1", "tank/c").unwrap();
    spa.sync().unwrap();
    let ctx = spa.ctx();
    let mos = &spa.dp.mos;
    let objtype = |o: u64| mos.dnode(&ctx, ObjectId(o)).unwrap();
    let root_dir = one(&zap_map(&spa, objdir::DIRECTORY_OBJECT)[objdir::ROOT_DATASET]);
    let mut found = Vec::new();
    let mut stack = vec![("tank".to_string(), root_dir)];
    while let Some((name, dir_obj)) = stack.pop() {
        let dn = objtype(dir_obj);
        assert_eq!(
            (dn.object_type, dn.bonus_type, dn.bonus.len()),
            (12, 12, 256),
            "{name}: DSL_DIR with a dsl_dir_phys_t bonus"
        );
        let d = dir(&spa, dir_obj);
        let head = d.head_dataset_obj;
        let dn = objtype(head);
        // A DSL_DATASET, or a ZAP keeping the bonus once it carries a per-dataset feature
        // (`dmu_object_zapify`: every new filesystem carries userobj_accounting).
        assert!(
            matches!(dn.object_type, 16 | ot::ZAP_METADATA),
            "{name}: {}",
            dn.object_type
        );
        assert_eq!((dn.bonus_type, dn.bonus.len()), (16, 320));
        let ds = dataset(&spa, head);
        assert_eq!(ds.dir_obj, dir_obj);
        found.push(name.clone());
        if ds.snapnames_zapobj != 0 {
            assert_eq!(
                objtype(ds.snapnames_zapobj).object_type,
                ot::DSL_DS_SNAP_MAP
            );
            for (snap, value) in zap_map(&spa, ds.snapnames_zapobj) {
                let s = dataset(&spa, one(&value));
                assert!(s.is_snapshot() && s.dir_obj == dir_obj);
                found.push(format!("{name}@{snap}"));
            }
        }
        // Every dataset has an origin to OpenZFS (format 15): a clone's snapshot, else
        // `$ORIGIN@$ORIGIN`, which lists it among its clones.
        assert_ne!(d.origin_obj, 0, "{name}");
        if d.origin_obj != crate::dsl::phys::ORIGIN_SNAPSHOT_OBJECT {
            assert_eq!(dataset(&spa, d.origin_obj).num_children, 2);
        }
        let origin = dataset(&spa, d.origin_obj);
        assert_eq!(objtype(origin.next_clones_obj).object_type, ot::NEXT_CLONES);
        let clones: Vec<u64> = zap_map(&spa, origin.next_clones_obj)
            .values()
            .map(one)
            .collect();
        assert!(clones.contains(&head), "{name}: {clones:?}");
        if d.props_zapobj != 0 {
            assert_eq!(objtype(d.props_zapobj).object_type, ot::DSL_PROPS);
        }
        if d.child_dir_zapobj != 0 {
            assert_eq!(
                objtype(d.child_dir_zapobj).object_type,
                ot::DSL_DIR_CHILD_MAP
            );
            for (child, value) in zap_map(&spa, d.child_dir_zapobj) {
                let c = one(&value);
                // The hidden dirs ($MOS, $FREE, $ORIGIN) are OpenZFS's, no datasets.
                if child.starts_with('$') {
                    assert_eq!(dir_obj, root_dir, "{child} under the root dir only");
                    continue;
                }
                assert_eq!(dir(&spa, c).parent_obj, dir_obj);
                stack.push((format!("{name}/{child}"), c));
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            "tank",
            "tank/a",
            "tank/a/b",
            "tank/a/b@s2",
            "tank/a@s1",
            "tank/c"
        ]
    );
}

/// A dir's props ZAP as the part-1 reader's `PropsZap` (its own value type).
fn reader_props(spa: &Spa, dir_obj: u64) -> super::openzfs::prop::PropsZap {
    let props = dir(spa, dir_obj).props_zapobj;
    if props == 0 {
        return Default::default();
    }
    zap_map(spa, props)
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                ZapValue::U64s(w) => super::openzfs::ZapValue::Ints(w),
                ZapValue::Bytes(b) => super::openzfs::ZapValue::Bytes(b),
            };
            (k, v)
        })
        .collect()
}

// Why: the engine stored every property as its text without a NUL (`compression` as
// "lz4", `quota` as "1073741824"); OpenZFS stores index and number properties as one u64
// (lz4 = 15) and strings as 1-byte integers with the NUL, and `$inherit` markers as u64 0.
// The part-1 reader's resolver must read the engine's entries with OpenZFS's rules and
// SOURCEs, and the engine must read its own entries back as the same words.
#[test]
fn props_are_stored_as_openzfs_stores_them() {
    use super::openzfs::prop::{resolve, PropDir, PropRule, PropSource, PropValue};
    let device = Arc::new(MemDevice::new("/mem/dsl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/a").unwrap();
    spa.create_filesystem("tank/a/b").unwrap();
    spa.set_local_prop("tank/a", "compression", "lz4").unwrap();
    spa.set_local_prop("tank/a", "atime", "off").unwrap();
    spa.set_local_prop("tank/a", "quota", "1073741824").unwrap();
    spa.set_local_prop("tank/a", "com.example:note", "hello")
        .unwrap();
    spa.set_received_props(
        "tank/a/b",
        &[("checksum".to_string(), "sha256".to_string())],
    )
    .unwrap();
    spa.set_received_props("tank/a", &[("atime".to_string(), "on".to_string())])
        .unwrap();
    spa.inherit_prop("tank/a", "atime", false).unwrap();
    spa.sync().unwrap();
    let a = spa.lookup_dir("tank/a").unwrap().unwrap();
    let b = spa.lookup_dir("tank/a/b").unwrap().unwrap();
    let root = spa.lookup_dir("tank").unwrap().unwrap();
    let raw = zap_map(&spa, dir(&spa, a).props_zapobj);
    assert_eq!(raw["compression"], ZapValue::U64s(vec![15]));
    assert_eq!(raw["quota"], ZapValue::U64s(vec![1 << 30]));
    assert_eq!(
        raw["com.example:note"],
        ZapValue::Bytes(b"hello\0".to_vec())
    );
    assert_eq!(raw["atime$recvd"], ZapValue::U64s(vec![1]));
    assert_eq!(raw["atime$inherit"], ZapValue::U64s(vec![0]));
    assert!(
        !raw.contains_key("atime"),
        "zfs inherit removed the local value"
    );
    let raw_b = zap_map(&spa, dir(&spa, b).props_zapobj);
    assert_eq!(raw_b["checksum$recvd"], ZapValue::U64s(vec![8]));
    // The part-1 reader resolves them as OpenZFS would.
    let (pa, pb, proot) = (
        reader_props(&spa, a),
        reader_props(&spa, b),
        reader_props(&spa, root),
    );
    let chain = [
        PropDir {
            name: "tank/a/b",
            props: &pb,
        },
        PropDir {
            name: "tank/a",
            props: &pa,
        },
        PropDir {
            name: "tank",
            props: &proot,
        },
    ];
    let rule = PropRule {
        inheritable: true,
        index_values: None,
    };
    let got = |prop: &str| resolve(prop, rule, &chain, None).unwrap();
    let compression = got("compression");
    assert_eq!(compression.value, Some(PropValue::Number(15)));
    assert_eq!(
        compression.source,
        PropSource::Inherited("tank/a".to_string())
    );
    let checksum = got("checksum");
    assert_eq!(checksum.value, Some(PropValue::Number(8)));
    assert_eq!(checksum.source, PropSource::Received);
    assert_eq!(
        got("atime").source,
        PropSource::Default,
        "the mask hides $recvd"
    );
    assert_eq!(
        got("com.example:note").value,
        Some(PropValue::String("hello".to_string()))
    );
    // The engine reads its entries back as the words it was given.
    let local = spa.local_props("tank/a").unwrap();
    let find = |k: &str| local.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(find("compression"), Some("lz4"));
    assert_eq!(find("quota"), Some("1073741824"));
    assert_eq!(find("com.example:note"), Some("hello"));
    assert_eq!(find("atime$recvd"), Some("on"));
    assert_eq!(find("atime$inherit"), Some(""));
    let (props, _) = spa.effective_io_props(b).unwrap();
    assert_eq!(
        props.compression,
        zetta_zcommon::compress::Compression::parse_property("lz4").unwrap()
    );
}
