//! OpenZFS's dnodes and object sets, checked against real OpenZFS: every object of the
//! pools OpenZFS's test suite ships is decoded by `zetta::dmu::openzfs` (reached from the
//! uberblock through the MOS and each dataset's objset, blocks fetched with zdb) and compared
//! with what OpenZFS 2.3's `zdb -dddd` prints about it; a file's bytes read through its
//! indirect blocks equal what `zdb -r` copies out.
//!
//! Why: Zetta could not read a single object of a real ZFS pool; the dnode and the objset
//! are how every object is found.

mod common;
mod ozfs_pool;

use ozfs_pool::{parse_dump, zdb_size_is, Pool, ZdbObject};
use std::collections::BTreeMap;
use zetta::byteorder::ByteOrder;
use zetta::dmu::openzfs::dnode::{
    DNODE_FLAG_SPILL_BLKPTR, DNODE_FLAG_USED_BYTES, DNODE_FLAG_USEROBJUSED_ACCOUNTED,
    DNODE_FLAG_USERUSED_ACCOUNTED,
};
use zetta::dmu::openzfs::objset::ObjsetPhys;
use zetta::dmu::openzfs::{object_type_name, raw_bp_byte_order, DnodePhys, RawBlkptr};

/// zdb's "dnode flags:" text for a dnode.
fn flags_text(dn: &DnodePhys) -> String {
    let mut s = String::new();
    for (bit, name) in [
        (DNODE_FLAG_USED_BYTES, "USED_BYTES "),
        (DNODE_FLAG_USERUSED_ACCOUNTED, "USERUSED_ACCOUNTED "),
        (DNODE_FLAG_USEROBJUSED_ACCOUNTED, "USEROBJUSED_ACCOUNTED "),
        (DNODE_FLAG_SPILL_BLKPTR, "SPILL_BLKPTR"),
    ] {
        if dn.flags & bit != 0 {
            s.push_str(name);
        }
    }
    s.trim_end().to_string()
}

/// Compares every object zdb printed for one objset with our decode; returns the count.
fn check_objset(
    pool: &Pool,
    what: &str,
    os: &ObjsetPhys,
    objs: &BTreeMap<i64, ZdbObject>,
) -> usize {
    let mut reader = pool.reader();
    for (&id, z) in objs {
        let dn = match id {
            0 => os.meta_dnode.clone(),
            -1 => os.userused.clone().expect("userused dnode"),
            -2 => os.groupused.clone().expect("groupused dnode"),
            -3 => os.projectused.clone().expect("projectused dnode"),
            n => os
                .dnode(n as u64, &mut reader)
                .unwrap_or_else(|e| panic!("{what} object {n}: {e}"))
                .unwrap_or_else(|| panic!("{what} object {n}: free, but zdb lists it")),
        };
        let ctx = format!("{what} object {id}: ours {dn:?}\nzdb {z:?}");
        assert_eq!(dn.nlevels, z.lvl, "levels of {ctx}");
        assert!(
            zdb_size_is(&z.iblk, dn.indirect_block_size()),
            "iblk of {ctx}"
        );
        assert!(
            zdb_size_is(&z.dblk, dn.data_block_size() as u64),
            "dblk of {ctx}"
        );
        assert!(
            zdb_size_is(&z.dnsize, dn.dnode_size() as u64),
            "dnsize of {ctx}"
        );
        assert!(zdb_size_is(&z.lsize, dn.logical_size()), "lsize of {ctx}");
        assert_eq!(Some(dn.maxblkid), z.maxblkid, "maxblkid of {ctx}");
        assert_eq!(flags_text(&dn), z.flags, "flags of {ctx}");
        if let Some(name) = object_type_name(dn.object_type) {
            assert_eq!(name, z.type_name, "type of {ctx}");
        }
        match &z.bonus {
            Some((len, name)) => {
                assert_eq!(u64::from(dn.bonuslen), *len, "bonus length of {ctx}");
                assert_eq!(dn.bonus.len(), usize::from(dn.bonuslen));
                if let Some(ours) = object_type_name(dn.bonustype) {
                    assert_eq!(ours, name, "bonus type of {ctx}");
                }
            }
            None => assert_eq!(dn.bonuslen, 0, "bonus of {ctx}"),
        }
    }
    objs.len()
}

/// Decodes every object of every dataset zdb dumps and compares; returns (datasets, objects).
fn check_pool(pool: &Pool, order: ByteOrder) -> (usize, usize, BTreeMap<u64, ObjsetPhys>) {
    let dump = parse_dump(&pool.zdb(&["-dddd", &pool.name]));
    assert!(dump.contains_key(&0), "zdb dumped no MOS for {}", pool.name);
    let mos = pool.mos();
    assert_eq!(mos.order, order, "{}: MOS byte order", pool.name);
    let mut objects = 0;
    let mut sets = BTreeMap::new();
    for (&ds, objs) in &dump {
        let os = if ds == 0 {
            mos.clone()
        } else {
            pool.dataset(&mos, ds)
        };
        objects += check_objset(pool, &format!("{} dataset {ds}", pool.name), &os, objs);
        sets.insert(ds, os);
    }
    (dump.len(), objects, sets)
}

// Why: a modern (v5000, little-endian, lz4/zstd, 4 KiB objsets with project accounting,
// 6-level meta-dnodes) pool must decode object for object as OpenZFS sees it.
#[test]
fn modern_pool_dnodes_match_zdb() {
    let pool = Pool::open("compression/testpool_zstd.tar.gz", "testpool_zstd");
    let (datasets, objects, sets) = check_pool(&pool, ByteOrder::Little);
    assert_eq!(datasets, 4);
    assert!(
        objects >= 69 + 9 + 8 + 11,
        "only {objects} objects compared"
    );
    let fs = &sets[&137];
    assert_eq!(fs.os_type, 2, "a ZPL objset");
    assert!(
        fs.projectused.is_some(),
        "4 KiB objset with project accounting"
    );
    assert_eq!(fs.meta_dnode.nlevels, 6);
    assert_eq!(sets[&0].os_type, 1, "the MOS is a META objset");
    // Never-allocated objects past the meta-dnode's end are free, not errors.
    assert_eq!(fs.dnode(1 << 40, &mut pool.reader()).unwrap(), None);
}

// Why: pools written on SPARC, and pools from before v15 (1 KiB objsets, no user
// accounting, dn_used in sectors), are big-endian: every field must be read in the order
// the block pointer records, or nothing of them decodes.
#[test]
fn big_endian_and_old_pools_dnodes_match_zdb() {
    for (rel, name, objset_size_v2) in [
        ("history/sparc.migratedpool.DAT.Z", "history_pool", false),
        (
            "cli_root/zpool_upgrade/blockfiles/zfs-pool-v1.dat.bz2",
            "v1-pool",
            false,
        ),
        (
            "cli_root/zpool_upgrade/blockfiles/zfs-pool-v15.dat.bz2",
            "v15-pool",
            true,
        ),
    ] {
        let pool = Pool::open(rel, name);
        let (datasets, objects, sets) = check_pool(&pool, ByteOrder::Big);
        assert!(
            datasets >= 2 && objects >= 20,
            "{name}: {datasets} datasets, {objects} objects"
        );
        for os in sets.values() {
            assert_eq!(
                os.userused.is_some(),
                objset_size_v2,
                "{name}: userused dnode"
            );
            assert!(os.projectused.is_none(), "{name}: no project accounting");
        }
    }
}

// Why: a file's bytes come through its indirect blocks; a wrong pointer index or a missed
// hole returns another block's bytes or garbage.
#[test]
fn file_read_through_indirect_blocks_equals_zdb_copy() {
    let pool = Pool::open("compression/testpool_zstd.tar.gz", "testpool_zstd");
    let dest = pool.fx.dir.join("zstd.copy");
    pool.zdb(&["-r", "testpool_zstd/x86_64", "zstd", dest.to_str().unwrap()]);
    let expected = std::fs::read(&dest).expect("zdb -r copied the file");
    assert_eq!(expected.len(), 780_248);
    let mos = pool.mos();
    let fs = pool.dataset(&mos, 137);
    let mut reader = pool.reader();
    let dn = fs.dnode(2, &mut reader).unwrap().unwrap();
    assert_eq!(dn.nlevels, 2, "a file with an L1 indirect block");
    let got = dn.read(0, expected.len(), &mut reader).unwrap();
    assert!(got == expected, "file bytes differ from zdb -r's copy");
    // An unaligned range across a block boundary.
    let mid = dn.read(131_000, 2_000, &mut reader).unwrap();
    assert_eq!(mid, expected[131_000..133_000]);
    // Past the last block: zeros.
    let past = dn.read(dn.logical_size(), 4096, &mut reader).unwrap();
    assert!(past.iter().all(|&b| b == 0));
}

/// Every dnode slot of one objset (its meta-dnode's blocks, and the objset block itself)
/// through the engine's and the part-1 codecs; returns (slots re-encoded byte for byte by
/// the engine's codec, slots the engine refuses for a block-pointer kind it does not write
/// yet).
fn round_trip_objset(pool: &Pool, what: &str, bp: &RawBlkptr, order: ByteOrder) -> (usize, usize) {
    use zetta::dmu::dnode::DnodePhys as EngineDnode;
    let block_order = raw_bp_byte_order(bp, order);
    let raw = pool.read(bp, order).unwrap();
    let os = ObjsetPhys::decode(&raw, block_order).unwrap();
    // The objset block: the part-1 codec re-encodes OpenZFS's bytes exactly.
    assert_eq!(os.encode().unwrap(), raw, "{what}: objset_phys_t bytes");
    let (mut same, mut refused) = (0, 0);
    let mut check_slot = |slot: &[u8], where_: String| {
        let theirs = DnodePhys::decode(slot, block_order).unwrap();
        let mut again = vec![0u8; theirs.dnode_size()];
        theirs.encode(&mut again).unwrap();
        assert_eq!(
            again,
            slot[..theirs.dnode_size()],
            "{where_}: part-1 re-encode"
        );
        if block_order != ByteOrder::Little {
            return;
        }
        match EngineDnode::decode(slot) {
            Ok(ours) => {
                let mut bytes = [0u8; 512];
                ours.encode(&mut bytes);
                assert_eq!(
                    bytes[..],
                    slot[..512],
                    "{where_}: engine re-encode of {ours:?}"
                );
                assert_eq!(ours.object_type, theirs.object_type, "{where_}");
                assert_eq!(ours.used_bytes, theirs.used_bytes(), "{where_}");
                same += usize::from(!ours.is_free());
            }
            Err(e) => {
                // Only what the engine's block pointers do not carry yet (14.1 left them
                // out): embedded, gang or dedup pointers, holes with a birth txg
                // (hole_birth: no byte-order bit); and large dnodes.
                let why = e.to_string();
                assert!(
                    !why.contains("dnode:") || why.contains("dn_extra_slots"),
                    "{where_}: {why}"
                );
                refused += 1;
            }
        }
    };
    check_slot(&raw[..512], format!("{what} meta-dnode"));
    let mut reader = pool.reader();
    let mut objects_in_use = 0;
    for blkid in 0..=os.meta_dnode.maxblkid.min(64) {
        let Some(block) = os.meta_dnode.read_block(blkid, &mut reader).unwrap() else {
            continue;
        };
        objects_in_use += zetta::dmu::objset::dnode_fill(&block.data);
        let mut at = 0;
        while at < block.data.len() {
            let slot = &block.data[at..];
            let dn = DnodePhys::decode(slot, block.order).unwrap();
            check_slot(
                slot,
                format!("{what} dnode block {blkid} slot {}", at / 512),
            );
            at += dn.dnode_size();
        }
    }
    // The rootbp's fill (OpenZFS `dmu_objset_write_ready`) is the number of objects in
    // use, counted as the engine's `dnode_fill` counts a dnode block (format 15).
    // The old big-endian SPARC pool is left out: its rootbps (MOS and dataset) count one
    // object more than their dnode blocks hold, an old writer's rule; OpenZFS 2.x's and
    // zfs-fuse's pools count as `dmu_objset_write_ready` does today.
    if os.meta_dnode.maxblkid <= 64 {
        let rootbp_fill = order.u64_at(bp, 88).unwrap();
        if !what.starts_with("history_pool") {
            assert_eq!(objects_in_use, rootbp_fill, "{what}: rootbp fill");
        } else {
            eprintln!("{what}: {objects_in_use} objects, rootbp fill {rootbp_fill}");
        }
    }
    eprintln!("{what}: {same} dnodes re-encoded by the engine, {refused} refused");
    (same, refused)
}

// Why: the engine now writes OpenZFS's dnode_phys_t and objset_phys_t (format 7); the
// codecs must reproduce real OpenZFS bytes exactly, and the fill counts (format 15) must
// count objects as OpenZFS does — objset blocks and every dnode of a
// modern pool's MOS and datasets, a zfs-fuse pool's, and (part-1 codec) big-endian ones.
#[test]
fn real_dnodes_and_objsets_re_encode_byte_for_byte() {
    let pools = [
        Pool::open_checked_in("zfs-fuse-fatzap.img.xz", "fatzap"),
        Pool::open("compression/testpool_zstd.tar.gz", "testpool_zstd"),
        Pool::open("history/sparc.migratedpool.DAT.Z", "history_pool"),
    ];
    let mut engine_same = 0;
    for pool in &pools {
        let (bp, order) = pool.rootbp();
        let (same, _) = round_trip_objset(pool, &format!("{} MOS", pool.name), &bp, order);
        engine_same += same;
        // Every dataset the MOS holds (DMU_OT_DSL_DATASET: its objset pointer at 128).
        let mos = pool.mos();
        let mut reader = pool.reader();
        for id in 1..=(mos.meta_dnode.maxblkid + 1) * 32 {
            let Ok(Some(dn)) = mos.dnode(id, &mut reader) else {
                continue;
            };
            // DMU_OT_DSL_DATASET bonus (the object itself is a ZAP with
            // extensible_dataset).
            if dn.bonustype != 16 || dn.bonus.len() < 256 {
                continue;
            }
            let ds_bp: RawBlkptr = dn.bonus[128..256].try_into().unwrap();
            if zetta::dmu::openzfs::raw_bp_is_hole(&ds_bp, dn.order) {
                continue;
            }
            let what = format!("{} dataset {id}", pool.name);
            let (same, _) = round_trip_objset(pool, &what, &ds_bp, dn.order);
            engine_same += same;
        }
    }
    assert!(
        engine_same >= 70,
        "only {engine_same} dnodes through the engine's codec"
    );
}
