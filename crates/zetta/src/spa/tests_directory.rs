//! The MOS object directory as OpenZFS writes it (`spa::directory`), checked on a pool the
//! engine made: the entries, the objects they name, and the round trip through an import.

use super::tests::{mem_devices, reimport, single_pool};
use super::*;
use crate::dsl::openzfs::{objdir, ot};
use crate::zap::{self, ZapValue};
use std::collections::{BTreeMap, BTreeSet};

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
        .set_str("ashift", "12")
        .set_str("com.example:note", "kept")
        .set_str("altroot", "/mnt")
        .set_str("cachefile", "none")
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
            "com.delphix:vdev_zap_map",
            "config",
            "creation_version",
            "deflate",
            "errlog_last",
            "feature_descriptions",
            "feature_enabled_txg",
            "features_for_read",
            "features_for_write",
            "free_bpobj",
            "history",
            "org.illumos:checksum_salt",
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
    assert_eq!(mos.extent_bytes(&ctx, config).unwrap() % 16384, 0);
    let packed = mos.read(&ctx, config, 0, size as usize).unwrap();
    let unpacked = crate::nvpair_xdr::unpack(&packed).unwrap().list;
    assert_eq!(unpacked.get_u64("pool_guid"), Some(spa.guid.0));
    assert_eq!(unpacked.get_u64("version"), Some(5000));
    // Format 26: no private key in the config (no `org.zetta:format`, no pool settings
    // blob); the comment is the config's, as
    // `spa_config_generate` writes it, and nothing of the in-memory settings is there.
    for pair in &unpacked.pairs {
        let name = String::from_utf8_lossy(&pair.name);
        assert!(!name.starts_with("org.zetta:"), "{name} in {unpacked:?}");
    }
    assert_eq!(unpacked.get_str("comment"), Some("hello"));
    assert_eq!(unpacked.get_str("altroot"), None);
    // pool_props: OpenZFS's types; Zetta's private settings are not there.
    let props = ObjectId(one(&entries[objdir::POOL_PROPS]));
    assert_eq!(mos.dnode(&ctx, props).unwrap().object_type, ot::POOL_PROPS);
    let stored: BTreeMap<String, ZapValue> = zap::zap_list_all(mos, &ctx, props)
        .unwrap()
        .into_iter()
        .map(|e| (String::from_utf8(e.name).unwrap(), e.value))
        .collect();
    // Why (format 26): `spa_sync_props` stores index and number properties as one u64,
    // user properties as strings, and nothing else: altroot, cachefile, Zetta's counters
    // and the create-time `fs:*` stay in memory, the comment lives in the config.
    assert_eq!(
        stored.keys().map(String::as_str).collect::<Vec<_>>(),
        ["ashift", "autoexpand", "com.example:note", "failmode"],
        "{stored:?}"
    );
    assert_eq!(stored["autoexpand"], ZapValue::U64s(vec![1]));
    assert_eq!(stored["failmode"], ZapValue::U64s(vec![1]));
    assert_eq!(stored["ashift"], ZapValue::U64s(vec![12]));
    assert_eq!(
        stored["com.example:note"],
        ZapValue::Bytes(b"kept\0".to_vec())
    );
    // The feature ZAPs as `feature_enable_sync` leaves them for every supported feature
    // (format 17): read-incompatible ones in features_for_read, READONLY_COMPAT ones and
    // Zetta's private one in features_for_write; activate-on-enable features at 1;
    // enabled_txg counting itself and the ten features enabled after it.
    let feature = |name: &str| {
        let object = ObjectId(one(&entries[name]));
        assert_eq!(
            mos.dnode(&ctx, object).unwrap().object_type,
            ot::ZAP_METADATA
        );
        zap::zap_list_all(mos, &ctx, object)
            .unwrap()
            .into_iter()
            .map(|e| (String::from_utf8(e.name).unwrap(), e.value))
            .collect::<BTreeMap<_, _>>()
    };
    let counts = |pairs: &[(&str, u64)]| -> BTreeMap<String, ZapValue> {
        pairs
            .iter()
            .map(|(g, c)| (g.to_string(), ZapValue::U64s(vec![*c])))
            .collect()
    };
    assert_eq!(
        feature(objdir::FEATURES_FOR_READ),
        counts(&[
            ("org.illumos:lz4_compress", 1),
            ("com.delphix:hole_birth", 1),
            // The root dataset object carries userobj_accounting (a ZAP).
            ("com.delphix:extensible_dataset", 1),
            ("com.delphix:embedded_data", 1),
            ("org.open-zfs:large_blocks", 0),
            ("org.illumos:sha512", 0),
            ("org.illumos:skein", 0),
            ("org.freebsd:zstd_compress", 0),
            ("org.openzfs:blake3", 0),
        ])
    );
    assert_eq!(
        feature(objdir::FEATURES_FOR_WRITE),
        counts(&[
            ("com.delphix:async_destroy", 0),
            ("com.delphix:empty_bpobj", 0),
            ("com.delphix:enabled_txg", 11),
            ("com.delphix:bookmarks", 0),
            ("org.zfsonlinux:userobj_accounting", 1),
        ])
    );
    let descriptions = feature(objdir::FEATURE_DESCRIPTIONS);
    // Format 26: no private feature (OpenZFS opens the pool read-write).
    assert_eq!(descriptions.len(), 14);
    assert!(!descriptions.contains_key(directory::FEATURE_PRIVATE_FORMAT));
    assert_eq!(
        descriptions["org.illumos:lz4_compress"],
        ZapValue::Bytes(b"LZ4 compression algorithm support.\0".to_vec())
    );
    let enabled_txg = feature(objdir::FEATURE_ENABLED_TXG);
    assert_eq!(enabled_txg.len(), 11);
    assert!(!enabled_txg.contains_key("org.illumos:lz4_compress"));
    assert!(enabled_txg.contains_key("com.delphix:enabled_txg"));
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
    // What OpenZFS persists comes back through an import; what it keeps in memory only
    // (altroot, cachefile, Zetta's counters, `fs:*`) does not.
    let (mut props, scan) = (spa.props.clone(), spa.scan);
    for name in [
        "fs:compression",
        "altroot",
        "cachefile",
        "org.zetta:import_time",
    ] {
        props.remove(name);
    }
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

// Why: the error log was Zetta's private 32-byte records in an object of type ERROR_LOG
// that OpenZFS reads as a ZAP; it is now OpenZFS's `errlog_last` ZAP, one entry per
// damaged block named `objset:object:level:blkid` in hex (`bookmark_to_name`), and an
// import reads the set back from it.
#[test]
fn error_log_is_errlog_last_zap() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    let damaged = [
        crate::zio::Bookmark {
            objset: 0x36,
            object: 0x1f,
            level: 0,
            blkid: 0xa2,
        },
        crate::zio::Bookmark {
            objset: 0,
            object: 3,
            level: 2,
            blkid: 0,
        },
    ];
    spa.zio.errlog.lock().extend(damaged);
    spa.sync().unwrap();
    let entries = directory_entries(&spa);
    let errlog = ObjectId(one(&entries[objdir::ERRLOG_LAST]));
    let ctx = spa.ctx();
    assert_eq!(
        spa.dp.mos.dnode(&ctx, errlog).unwrap().object_type,
        object_type::ERROR_LOG
    );
    let names: BTreeMap<String, ZapValue> = zap::zap_list_all(&spa.dp.mos, &ctx, errlog)
        .unwrap()
        .into_iter()
        .map(|e| (String::from_utf8(e.name).unwrap(), e.value))
        .collect();
    assert_eq!(
        names,
        BTreeMap::from([
            ("0:3:2:0".to_string(), ZapValue::Bytes(vec![0])),
            ("36:1f:0:a2".to_string(), ZapValue::Bytes(vec![0])),
        ])
    );
    assert_eq!(directory::name_to_bookmark("36:1f:0:a2"), Some(damaged[0]));
    assert_eq!(directory::name_to_bookmark("36:1f:100:a2"), None);
    assert_eq!(directory::name_to_bookmark("36:1f:0"), None);
    assert_eq!(directory::name_to_bookmark("36:1f:0:a2:1"), None);
    spa.export().unwrap();
    let back = reimport(&devices).unwrap();
    assert_eq!(back.error_log(), {
        let mut sorted = damaged.to_vec();
        sorted.sort();
        sorted
    });
}

// Why: the history was Zetta's text lines in an object of the wrong type (13/14 were
// OpenZFS's DSL_DIR_CHILD_MAP numbers); `zdb -h` reads OpenZFS's ring of natively packed
// nvlists with a spa_history_phys_t bonus. The records must read back through the part-1
// reader's parser, the create command must close the kept creation part, and a full ring
// must drop whole old records (records_lost) and keep the newest readable.
#[test]
fn history_is_openzfs_ring_of_packed_nvlists() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    spa.log_history("zpool create tank /dev/x");
    spa.sync().unwrap();
    let entries = directory_entries(&spa);
    let object = one(&entries[objdir::HISTORY]);
    let ctx = spa.ctx();
    let dnode = spa.dp.mos.dnode(&ctx, ObjectId(object)).unwrap();
    assert_eq!((dnode.object_type, dnode.bonus_type), (29, 30));
    assert_eq!(dnode.data_block_size_bytes, 128 << 10);
    let phys = |spa: &Spa| {
        let ctx = spa.ctx();
        let bonus = spa.dp.mos.bonus(&ctx, ObjectId(object)).unwrap();
        openzfs::history::HistoryPhys::decode(&bonus, crate::byteorder::ByteOrder::Little).unwrap()
    };
    let first = phys(&spa);
    // 0.1% of the pool's space (257 KiB here, above the 128 KiB floor).
    assert_eq!(first.phys_max_off, spa.root.children[0].asize_bytes / 1000);
    assert!(first.pool_create_len > 8);
    assert_eq!(
        (first.bof, first.eof),
        (first.pool_create_len, first.pool_create_len)
    );
    let raw = spa
        .dp
        .mos
        .read(&ctx, ObjectId(object), 0, first.pool_create_len as usize)
        .unwrap();
    // Natively packed (encoding byte 0), little-endian (1).
    assert_eq!(&raw[8..10], &[0, 1]);
    let records = openzfs::history::parse_records(&raw).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].command().as_deref(),
        Some("zpool create tank /dev/x")
    );
    assert!(records[0].list.get_str(openzfs::history::HOST).is_some());
    // Fill the ring past its end.
    let long = "x".repeat(3000);
    for i in 0..100 {
        spa.log_history(&format!("zfs set user:n={i} {long}"));
        if i % 10 == 9 {
            spa.sync().unwrap();
        }
    }
    let last = phys(&spa);
    assert_eq!(last.pool_create_len, first.pool_create_len);
    assert!(last.records_lost > 0, "{last:?}");
    assert!(last.eof - last.bof <= last.phys_max_off - last.pool_create_len);
    let lines = spa.history().unwrap();
    assert_eq!(lines[0].1, "zpool create tank /dev/x");
    assert_eq!(lines.last().unwrap().1, format!("zfs set user:n=99 {long}"));
    assert_eq!(lines.len() as u64 - 1 + last.records_lost, 100);
    spa.export().unwrap();
    let mut back = reimport(&devices).unwrap();
    assert_eq!(back.history().unwrap(), lines);
}

// Why: `zpool create -d` must make a pool with no feature but Zetta's own, whose write
// path then leaves all-zero holes and no embedded pointers (hole_birth and embedded_data
// are not active), and a later `zpool upgrade` must enable a feature with its dependency
// first and its enabling txg, kept across an export (format 17).
#[test]
fn features_disabled_at_create_are_enabled_later_with_their_txg() {
    let devices = mem_devices(1, 256 << 20);
    let options = CreateOptions {
        features: Vec::new(),
        ..Default::default()
    };
    let mut spa = Spa::create(
        "tank",
        &[super::tests::spec(super::TopKind::Single, &devices[..1])],
        &options,
    )
    .unwrap();
    assert!(!spa.zio.hole_birth() && !spa.zio.embedded_data());
    assert!(spa.features().unsupported().is_empty());
    assert_eq!(
        spa.features().disabled().len(),
        zfeature::ZETTA_FEATURES.len()
    );
    let entries = directory_entries(&spa);
    assert!(!entries.contains_key(objdir::FEATURE_ENABLED_TXG));
    let hole = spa.zio.hole(Txg(9), 4096, 19, 0);
    assert_eq!(hole, crate::zio::blkptr::BlockPointer::HOLE);
    // `compression=on` (lz4 in Zetta's policies) writes lzjb (id 3) without lz4_compress,
    // and a block that would fit in a pointer is not embedded without embedded_data.
    let text = vec![b'z'; 16384];
    let tiny = vec![0u8; 512];
    let bps = spa
        .zio
        .write_blocks(
            &spa.root,
            vec![
                (&text[..], crate::dmu::default_data_props()),
                (&tiny[..], crate::dmu::default_data_props()),
            ],
            spa.open_txg(),
        )
        .unwrap();
    assert_eq!(bps[0].compression, 3);
    assert!(!bps[1].is_embedded());

    let hole_birth = zfeature::lookup_name("hole_birth").unwrap();
    assert!(spa.feature_enable(hole_birth));
    assert!(!spa.feature_enable(hole_birth));
    let txg = spa.sync().unwrap();
    assert!(spa.zio.hole_birth() && !spa.zio.embedded_data());
    drop(spa);
    let spa = reimport(&devices).unwrap();
    let features = spa.features();
    assert_eq!(features.refcounts["com.delphix:hole_birth"], 1);
    // enabled_txg counts itself and hole_birth, both enabled in that txg.
    assert_eq!(features.refcounts["com.delphix:enabled_txg"], 2);
    assert_eq!(features.enabled_txgs["com.delphix:hole_birth"], txg.0);
    assert_eq!(features.enabled_txgs["com.delphix:enabled_txg"], txg.0);
    assert_eq!(features.label_features(), ["com.delphix:hole_birth"]);
    assert!(spa.zio.hole_birth() && !spa.zio.embedded_data());
}

// Why: format 17 keyed blake3 with a zero salt and stored none; OpenZFS, finding no
// `org.illumos:checksum_salt`, draws a random one, so zdb failed every blake3 block of a
// Zetta pool ("Got error 52", openzfs_zdb_matrix). The salt is now random per pool, in the
// directory as 32 bytes, and an import keys its pipeline with it; a pool without the entry
// is read with zeros and gets the entry at its next sync (`spa_sync_upgrades`).
#[test]
fn checksum_salt_is_random_stored_and_read_back() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    let salt = spa.zio.checksum_salt;
    assert_ne!(salt, [0u8; 32]);
    let entries = directory_entries(&spa);
    assert_eq!(
        entries[objdir::CHECKSUM_SALT],
        ZapValue::Bytes(salt.to_vec())
    );
    assert_ne!(
        single_pool("other", &mem_devices(1, 256 << 20))
            .zio
            .checksum_salt,
        salt
    );

    // A pool whose directory lacks the salt reads with zeros and writes them.
    {
        let ctx = io_ctx!(spa);
        zap::zap_remove(
            &mut spa.dp.mos,
            &ctx,
            MOS_OBJECT_DIRECTORY,
            objdir::CHECKSUM_SALT,
        )
        .unwrap();
    }
    spa.export().unwrap();
    let spa = reimport(&devices).unwrap();
    assert_eq!(spa.zio.checksum_salt, [0u8; 32]);
    spa.export().unwrap();
    let spa = reimport(&devices).unwrap();
    assert_eq!(spa.zio.checksum_salt, [0u8; 32]);
    let entries = directory_entries(&spa);
    assert_eq!(entries[objdir::CHECKSUM_SALT], ZapValue::Bytes(vec![0; 32]));
}

// Why: OpenZFS creates the history at the first record (`spa_history_create_obj`) and a
// scrub's log rotation leaves `errlog_last` 0 with the old log freed (`spa_errlog_sync`), so
// a pool from zfs-fuse or OpenZFS may have neither. The engine took both at fixed numbers
// (2 and 3) and refused such a directory. Now the import takes them as absent, the first
// record makes a history and the first error an error log, each numbered by the MOS's
// allocator (`create_object`, `zap_create`: wherever it finds room) and named in the
// directory, and the next import finds them there.
#[test]
fn directory_without_history_or_errlog_gets_them_when_first_needed() {
    let devices = mem_devices(1, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    spa.sync().unwrap();
    {
        let ctx = io_ctx!(spa);
        let dir = MOS_OBJECT_DIRECTORY;
        zap::zap_remove(&mut spa.dp.mos, &ctx, dir, objdir::HISTORY).unwrap();
        zap::zap_update(&mut spa.dp.mos, &ctx, dir, objdir::ERRLOG_LAST, &[0]).unwrap();
        spa.dp.mos.free_object(&ctx, MOS_OBJECT_HISTORY).unwrap();
        spa.dp.mos.free_object(&ctx, MOS_OBJECT_ERRLOG).unwrap();
    }
    spa.sync().unwrap();
    spa.export().unwrap();

    let mut spa = reimport(&devices).unwrap();
    assert_eq!(spa.dp.directory.history, None);
    assert_eq!(spa.dp.directory.errlog_last, None);
    assert!(spa.history().unwrap().is_empty());
    assert!(spa.error_log().is_empty());
    // A sync with no record and no error creates nothing.
    spa.sync().unwrap();
    assert!(!directory_entries(&spa).contains_key(objdir::HISTORY));
    assert_eq!(spa.dp.directory.errlog_last, None);

    spa.log_history("zpool set comment=x tank");
    let damaged = crate::zio::Bookmark {
        objset: 0x36,
        object: 0x1f,
        level: 0,
        blkid: 7,
    };
    spa.zio.errlog.lock().insert(damaged);
    spa.sync().unwrap();
    let entries = directory_entries(&spa);
    let history = one(&entries[objdir::HISTORY]);
    let errlog = one(&entries[objdir::ERRLOG_LAST]);
    assert_ne!(history, errlog);
    {
        let ctx = spa.ctx();
        assert_eq!(
            spa.dp
                .mos
                .dnode(&ctx, ObjectId(history))
                .unwrap()
                .object_type,
            history::DMU_OT_SPA_HISTORY
        );
        assert_eq!(
            spa.dp
                .mos
                .dnode(&ctx, ObjectId(errlog))
                .unwrap()
                .object_type,
            object_type::ERROR_LOG
        );
    }
    spa.export().unwrap();
    let mut back = reimport(&devices).unwrap();
    assert_eq!(back.dp.directory.history, Some(history));
    assert_eq!(back.dp.directory.errlog_last, Some(errlog));
    assert_eq!(back.error_log(), vec![damaged]);
    let lines: Vec<String> = back
        .history()
        .unwrap()
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert!(
        lines.iter().any(|l| l == "zpool set comment=x tank"),
        "{lines:?}"
    );
}

/// The AVZ's entries (`com.delphix:vdev_zap_map`): object number → the value stored.
fn vdev_zap_map(spa: &Spa) -> BTreeMap<String, ZapValue> {
    let entries = directory_entries(spa);
    let avz = ObjectId(one(&entries[objdir::VDEV_ZAP_MAP]));
    let ctx = spa.ctx();
    zap::zap_list_all(&spa.dp.mos, &ctx, avz)
        .unwrap()
        .into_iter()
        .map(|e| (String::from_utf8(e.name).unwrap(), e.value))
        .collect()
}

// Why (format 26, issue 14 step 3): OpenZFS gives every vdev its ZAP at create, add and
// attach (`vdev_construct_zaps`) and lists it in `com.delphix:vdev_zap_map`; a vdev without
// one makes OpenZFS rebuild the map, a ZAP nobody names is a leaked MOS object for `zdb -b`.
// Without `spa::vdev_zap` the pool had no map and no vdev ZAP, and a detached leaf's ZAP (one
// OpenZFS made) stayed allocated.
#[test]
fn every_vdev_gets_its_zap_listed_and_freed_when_it_leaves() {
    let devices = mem_devices(3, 256 << 20);
    let mut spa = single_pool("tank", &devices);
    spa.sync().unwrap();
    // A single-disk top-level vdev is a leaf too: both ZAPs.
    let top = &spa.root.children[0];
    let (leaf0, top0) = (top.openzfs_keys.leaf(), top.openzfs_keys.top());
    assert!(leaf0 != 0 && top0 != 0 && leaf0 != top0);
    let map = vdev_zap_map(&spa);
    let expect = |objects: &[u64]| -> BTreeMap<String, ZapValue> {
        objects
            .iter()
            .map(|o| (format!("{o:x}"), ZapValue::U64s(vec![*o])))
            .collect()
    };
    assert_eq!(map, expect(&[leaf0, top0]));
    let config = spa.config();
    assert!(config
        .get(crate::vdev::config::HAS_PER_VDEV_ZAPS_KEY)
        .is_some());
    // Attach: the new leaf gets its ZAP; the mirror made above the old leaf becomes the
    // top-level vdev and takes over its top ZAP (`vdev_top_transfer`); the map lists
    // exactly the ZAPs the tree names.
    spa.attach("/mem/d0", "/mem/d1", devices[1].1.clone() as DeviceRef)
        .unwrap();
    spa.sync().unwrap();
    let named = super::vdev_zap::named_vdev_zaps(&spa.root);
    let map = vdev_zap_map(&spa);
    assert_eq!(
        map.keys().cloned().collect::<BTreeSet<_>>(),
        named.iter().map(|o| format!("{o:x}")).collect()
    );
    assert_eq!(spa.root.children[0].openzfs_keys.top(), top0);
    // leaf0's leaf ZAP, the mirror's top ZAP (top0, moved), leaf1's new leaf ZAP.
    assert_eq!(named.len(), 3, "{named:?}");
    assert!(named.contains(&leaf0) && named.contains(&top0), "{named:?}");
    let leaf1 = spa
        .root
        .leaves()
        .into_iter()
        .find(|l| l.path == "/mem/d1")
        .map(|l| l.openzfs_keys.leaf())
        .unwrap();
    assert_ne!(leaf1, 0);
    // Detach: its ZAP is destroyed and unlinked in the txg that drops it.
    spa.detach("/mem/d1").unwrap();
    spa.sync().unwrap();
    let map = vdev_zap_map(&spa);
    assert!(!map.contains_key(&format!("{leaf1:x}")), "{map:?}");
    let ctx = spa.ctx();
    assert!(
        spa.dp.mos.dnode(&ctx, ObjectId(leaf1)).is_err()
            || spa.dp.mos.dnode(&ctx, ObjectId(leaf1)).unwrap().object_type == 0,
        "the detached leaf's ZAP is freed"
    );
    // Back to a single disk: the leaf is the top-level vdev again, with the same top ZAP.
    assert_eq!(spa.root.children[0].openzfs_keys.top(), top0);
    assert_eq!(spa.root.children[0].openzfs_keys.leaf(), leaf0);
    assert_eq!(vdev_zap_map(&spa), expect(&[leaf0, top0]));
    // The map and the ZAP numbers come back through an import.
    let named = super::vdev_zap::named_vdev_zaps(&spa.root);
    spa.export().unwrap();
    let back = reimport(&devices).unwrap();
    assert_eq!(super::vdev_zap::named_vdev_zaps(&back.root), named);
}
