//! The MOS object directory as OpenZFS writes it (`spa::directory`), checked on a pool the
//! engine made: the entries, the objects they name, and the round trip through an import.

use super::tests::{mem_devices, reimport, single_pool};
use super::*;
use crate::dsl::openzfs::{objdir, ot};
use crate::zap::{self, ZapValue};
use std::collections::BTreeMap;

fn directory_entries(spa: &Spa) -> BTreeMap<String, ZapValue> {
    let ctx = spa.ctx();
    zap::zap_list_all(&spa.dp.mos, &ctx, MOS_OBJECT_DIRECTORY)
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

// Why: object 1 of the MOS was a private nvlist blob (config, props, scan in Zetta's own
// encoding); OpenZFS and the part-1 reader find the pool-wide objects through a ZAP of
// DMU_POOL_* names — `config` a packed XDR nvlist object with its size in the bonus,
// `pool_props` strings with their NUL and index properties as numbers, `scan` a
// dsl_scan_phys_t, the feature ZAPs and bpobjs an import requires.
#[test]
fn object_directory_is_openzfs_zap_with_its_objects() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    spa.props
        .set_str("autoexpand", "on")
        .set_str("failmode", "continue")
        .set_str("comment", "hello")
        .set_str("fs:compression", "lz4")
        .set_u64("org.zetta:import_time", 77);
    spa.scan = ScanStats {
        function: ScanFunction::Scrub,
        state: ScanState::Finished,
        start_secs: 10,
        end_secs: 20,
        to_examine_bytes: 4096,
        examined_bytes: 4096,
        repaired_bytes: 512,
        errors: 3,
    };
    spa.sync().unwrap();
    let ctx = spa.ctx();
    let mos = &spa.dp.mos;
    assert_eq!(
        mos.dnode(&ctx, MOS_OBJECT_DIRECTORY).unwrap().object_type,
        object_type::OBJECT_DIRECTORY
    );
    let entries = directory_entries(&spa);
    let names: Vec<&str> = entries.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "config",
            "creation_version",
            "deflate",
            "feature_descriptions",
            "features_for_read",
            "features_for_write",
            "free_bpobj",
            "org.zetta:errlog",
            "org.zetta:history",
            "org.zetta:pool_props",
            "pool_props",
            "root_dataset",
            "scan",
            "sync_bplist",
        ]
    );
    assert_eq!(one(&entries[objdir::ROOT_DATASET]), MOS_OBJECT_ROOT_DIR.0);
    assert_eq!(one(&entries[objdir::CREATION_VERSION]), 5000);
    // config: PACKED_NVLIST in whole 16 KiB blocks, the packed size in an 8-byte bonus.
    let config = ObjectId(one(&entries[objdir::CONFIG]));
    let dnode = mos.dnode(&ctx, config).unwrap();
    assert_eq!(
        (dnode.object_type, dnode.bonus_type),
        (object_type::PACKED_NVLIST, ot::PACKED_NVLIST_SIZE)
    );
    assert_eq!(dnode.data_block_size_bytes, 16384);
    let size = u64::from_le_bytes(dnode.bonus[..8].try_into().unwrap());
    assert_eq!(mos.size_bytes(&ctx, config).unwrap() % 16384, 0);
    let packed = mos.read(&ctx, config, 0, size as usize).unwrap();
    let unpacked = crate::nvpair_xdr::unpack(&packed).unwrap().list;
    assert_eq!(unpacked.get_u64("pool_guid"), Some(spa.guid.0));
    assert_eq!(unpacked.get_u64("version"), Some(5000));
    // pool_props: OpenZFS's types; Zetta's private settings are not there.
    let props = ObjectId(one(&entries[objdir::POOL_PROPS]));
    assert_eq!(mos.dnode(&ctx, props).unwrap().object_type, ot::POOL_PROPS);
    let stored: BTreeMap<String, ZapValue> = zap::zap_list_all(mos, &ctx, props)
        .unwrap()
        .into_iter()
        .map(|e| (String::from_utf8(e.name).unwrap(), e.value))
        .collect();
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert_eq!(stored["autoexpand"], ZapValue::U64s(vec![1]));
    assert_eq!(stored["failmode"], ZapValue::U64s(vec![1]));
    assert_eq!(stored["comment"], ZapValue::Bytes(b"hello\0".to_vec()));
    // The feature ZAPs exist (an OpenZFS import requires them) and are empty.
    for name in [
        objdir::FEATURES_FOR_READ,
        objdir::FEATURES_FOR_WRITE,
        objdir::FEATURE_DESCRIPTIONS,
    ] {
        let object = ObjectId(one(&entries[name]));
        assert_eq!(
            mos.dnode(&ctx, object).unwrap().object_type,
            ot::ZAP_METADATA
        );
        assert_eq!(zap::zap_count(mos, &ctx, object).unwrap(), 0);
    }
    // Empty bpobjs: BPOBJ with a zeroed 48-byte bpobj_phys_t.
    for (name, block) in [
        (objdir::SYNC_BPLIST, 16384),
        (objdir::FREE_BPOBJ, 128 << 10),
    ] {
        let dnode = mos.dnode(&ctx, ObjectId(one(&entries[name]))).unwrap();
        assert_eq!(
            (dnode.object_type, dnode.bonus_type),
            (ot::BPOBJ, ot::BPOBJ_HDR)
        );
        assert_eq!(dnode.data_block_size_bytes, block);
        assert_eq!(dnode.bonus, vec![0u8; 48]);
    }
    // scan: dsl_scan_phys_t, 24 words.
    let ZapValue::U64s(scan) = &entries[objdir::SCAN] else {
        panic!("scan is not integers");
    };
    assert_eq!(scan.len(), 24);
    assert_eq!(
        [scan[0], scan[1], scan[7], scan[8], scan[9], scan[12], scan[13]],
        [1, 2, 10, 20, 4096, 512, 3]
    );
    // Everything comes back through an import.
    let (props, scan) = (spa.props.clone(), spa.scan);
    spa.export().unwrap();
    let back = reimport(&devices).unwrap();
    assert_eq!(back.props, props);
    assert_eq!(back.scan, scan);
}

// Why: the directory is outside data at import; an entry of the wrong shape or a config
// object whose size bonus overstates its bytes must be a corruption error, not a panic.
#[test]
fn damaged_directory_entries_are_corruption_errors() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    let config = {
        let entries = directory_entries(&spa);
        one(&entries[objdir::CONFIG])
    };
    {
        let ctx = io_ctx!(spa);
        spa.dp
            .mos
            .set_bonus(&ctx, ObjectId(config), &(1u64 << 40).to_le_bytes())
            .unwrap();
        let mos = &spa.dp.mos;
        let loaded = directory::MosDirectory::load(mos, &ctx);
        assert!(matches!(loaded, Err(SpaError::Corrupt(_))));
        spa.dp
            .mos
            .set_bonus(&ctx, ObjectId(config), &16u64.to_le_bytes())
            .unwrap();
        zap::zap_update_bytes(
            &mut spa.dp.mos,
            &ctx,
            MOS_OBJECT_DIRECTORY,
            objdir::ROOT_DATASET,
            b"x\0",
        )
        .unwrap();
        let loaded = directory::MosDirectory::load(&spa.dp.mos, &ctx);
        assert!(matches!(loaded, Err(SpaError::Corrupt(_))));
        zap::zap_update(
            &mut spa.dp.mos,
            &ctx,
            MOS_OBJECT_DIRECTORY,
            objdir::ROOT_DATASET,
            &[9],
        )
        .unwrap();
        let loaded = directory::MosDirectory::load(&spa.dp.mos, &ctx);
        assert!(matches!(loaded, Err(SpaError::Corrupt(_))));
    }
}
