//! OpenZFS's ZAPs, checked against real OpenZFS: every object `zdb -dddd` dumps as a ZAP
//! (micro or fat) in the pools OpenZFS's test suite ships, and in a pool zfs-fuse wrote with
//! a 700-entry, 8-leaf fat directory, is listed by `zetta::zap::openzfs` and compared with
//! zdb's listing; every entry is then looked up by name through the salted CRC-64 hash and
//! must come back identical. Real ZAP, dnode and objset blocks, corrupted at random, are
//! thrown at every decoder.
//!
//! Why: Zetta could not read a single directory, property list or the pool's object
//! directory of a real ZFS pool; all of them are ZAPs.
//!
//! `tests/fixtures/zfs-fuse-fatzap.img.xz`: a 64 MiB pool (v23, little-endian) made by
//! zfs-fuse: `zpool create fatzap IMG`; in it `target` (14 bytes), `links/` with 700 hard
//! links to it named `hard-link-number-N-with-a-name-longer-than-fifty-bytes-for-fat`
//! (fat from the first entry: names over 50 bytes do not fit a micro ZAP), `longname/`
//! with one such file; then `zpool export`.

mod common;
mod ozfs_pool;

use ozfs_pool::{parse_dump, Pool, ZdbObject};
use std::collections::BTreeMap;
use zetta::byteorder::ByteOrder;
use zetta::dmu::openzfs::objset::ObjsetPhys;
use zetta::dmu::openzfs::{DnodeBlock, DnodePhys, RawBlkptr};
use zetta::rand::SeededRng;
use zetta::zap::openzfs::{
    normalize_key, zap_hash, FatZapHeader, MicroZap, Zap, ZapEntry, ZapKey, ZapLeaf, ZapReadError,
};

const DMU_OT_DIRECTORY_CONTENTS: u8 = 20;
const DMU_OT_SA_ATTR_REGISTRATION: u8 = 46;
const DMU_OT_SA_ATTR_LAYOUTS: u8 = 47;

/// The line zdb prints for an entry (right-trimmed; directory entries cut before their
/// " (type: ...)" suffix).
fn zdb_line(object_type: u8, e: &ZapEntry) -> String {
    let key = match &e.key {
        ZapKey::Name(_) => e.key.to_string(),
        ZapKey::U64s(w) => format!("0x{:010}x", w.first().copied().unwrap_or(0)),
    };
    if object_type == DMU_OT_DIRECTORY_CONTENTS {
        let first = e.values.first().copied().unwrap_or(0);
        return format!("\t\t{key} = {}", first & ((1 << 48) - 1));
    }
    if object_type == DMU_OT_SA_ATTR_REGISTRATION {
        // zdb's dump_sa_attrs: the packed word in hex, then length, byteswap, number.
        let v = e.values.first().copied().unwrap_or(0);
        return format!(
            "\t\t{key} =  {v:x} : [{}:{}:{}]",
            (v >> 24) & 0xffff,
            (v >> 16) & 0xff,
            v & 0xffff
        );
    }
    if object_type == DMU_OT_SA_ATTR_LAYOUTS {
        let attrs: String = e.values.iter().map(|v| format!(" {v} ")).collect();
        return format!("\t\t{key} = [{attrs}]");
    }
    let mut line = format!("\t\t{key} = ");
    if e.int_len == 1 && matches!(e.key, ZapKey::Name(_)) {
        let bytes: Vec<u8> = e.values.iter().map(|&v| v as u8).collect();
        let hex_names = [
            "DSL_CRYPTO_MASTER_KEY_1",
            "DSL_CRYPTO_HMAC_KEY_1",
            "DSL_CRYPTO_IV",
            "DSL_CRYPTO_MAC",
            "org.illumos:checksum_salt",
        ];
        if hex_names.contains(&key.as_str()) {
            for b in bytes {
                line.push_str(&format!("{b:02x}"));
            }
        } else {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            line.push_str(&String::from_utf8_lossy(&bytes[..end]));
        }
    } else {
        for &v in &e.values {
            if e.int_len == 8 {
                line.push_str(&format!("{} ", v as i64));
            } else {
                line.push_str(&format!("{v} "));
            }
        }
    }
    line.trim_end().to_string()
}

fn zdb_entry_line(object_type: u8, line: &str) -> String {
    if object_type == DMU_OT_DIRECTORY_CONTENTS {
        if let Some(cut) = line.find(" (type: ") {
            return line[..cut].to_string();
        }
    }
    line.to_string()
}

#[derive(Default, Debug)]
struct Seen {
    micro: usize,
    fat: usize,
    max_leaves: u64,
    entries: usize,
}

fn object_dnode(pool: &Pool, os: &ObjsetPhys, id: i64) -> DnodePhys {
    match id {
        0 => os.meta_dnode.clone(),
        -1 => os.userused.clone().unwrap(),
        -2 => os.groupused.clone().unwrap(),
        -3 => os.projectused.clone().unwrap(),
        n => os.dnode(n as u64, &mut pool.reader()).unwrap().unwrap(),
    }
}

/// Lists every ZAP zdb dumped, compares with zdb, looks every entry up.
fn check_zaps(pool: &Pool) -> Seen {
    let dump = parse_dump(&pool.zdb(&["-dddd", &pool.name]));
    let mos = pool.mos();
    let mut seen = Seen::default();
    for (&ds, objs) in &dump {
        let os = if ds == 0 {
            mos.clone()
        } else {
            pool.dataset(&mos, ds)
        };
        for (&id, z) in objs {
            if z.zap.is_none() {
                continue;
            }
            check_one(pool, &os, ds, id, z, &mut seen);
        }
    }
    seen
}

fn check_one(pool: &Pool, os: &ObjsetPhys, ds: u64, id: i64, z: &ZdbObject, seen: &mut Seen) {
    let what = format!("{} dataset {ds} object {id}", pool.name);
    let dn = object_dnode(pool, os, id);
    let mut reader = pool.reader();
    let zap = Zap::open(&dn, &mut reader).unwrap_or_else(|e| panic!("{what}: {e}"));
    let entries = zap
        .list(&dn, &mut reader)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut ours: Vec<String> = entries
        .iter()
        .map(|e| zdb_line(dn.object_type, e))
        .collect();
    let mut theirs: Vec<String> = z
        .entries
        .iter()
        .map(|l| zdb_entry_line(dn.object_type, l))
        .collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "{what}: entries differ from zdb's");
    match &zap {
        Zap::Micro(_) => {
            seen.micro += 1;
            assert!(
                z.zap.as_deref().unwrap_or("").starts_with("microzap"),
                "{what}"
            );
        }
        Zap::Fat(h) => {
            seen.fat += 1;
            seen.max_leaves = seen.max_leaves.max(h.num_leafs);
            assert!(
                z.zap.as_deref().unwrap_or("").starts_with("Fat ZAP"),
                "{what}"
            );
            assert_eq!(
                h.num_entries,
                entries.len() as u64,
                "{what}: zap_num_entries"
            );
            for e in &entries {
                let norm = normalize_key(h.normflags, &e.key).unwrap();
                assert_eq!(
                    zap_hash(h.salt, h.flags, &norm),
                    e.hash,
                    "{what}: our hash of {} differs from the one OpenZFS stored",
                    e.key
                );
            }
        }
    }
    for e in &entries {
        let found = zap
            .lookup(&dn, &mut reader, &e.key)
            .unwrap_or_else(|err| panic!("{what}: lookup {}: {err}", e.key));
        assert_eq!(found.as_ref(), Some(e), "{what}: lookup of {}", e.key);
    }
    let missing = ZapKey::name("no such entry, surely");
    assert_eq!(zap.lookup(&dn, &mut reader, &missing).unwrap(), None);
    seen.entries += entries.len();
}

// Why: the MOS object directory of a modern pool is a fat ZAP (a salted CRC-64 table of 18
// entries), its filesystems' master nodes and directories micro ZAPs: each must list and
// look up exactly as OpenZFS does.
#[test]
fn modern_pool_zaps_list_and_look_up_like_zdb() {
    let pool = Pool::open("compression/testpool_zstd.tar.gz", "testpool_zstd");
    let seen = check_zaps(&pool);
    assert!(seen.fat >= 1 && seen.micro >= 10, "{seen:?}");
    // The object directory names the root dataset.
    let mos = pool.mos();
    let dir = mos.dnode(1, &mut pool.reader()).unwrap().unwrap();
    let zap = Zap::open(&dir, &mut pool.reader()).unwrap();
    assert!(matches!(zap, Zap::Fat(_)));
    let root = zap
        .lookup(&dir, &mut pool.reader(), &ZapKey::name("root_dataset"))
        .unwrap()
        .unwrap();
    assert_eq!((root.int_len, root.values), (8, vec![32]));
}

// Why: big-endian pools keep ZAP headers and micro-ZAP values in the writer's order but leaf
// arrays big-endian always; reading either in the wrong order garbles every name.
#[test]
fn big_endian_and_old_pool_zaps_list_and_look_up_like_zdb() {
    for (rel, name) in [
        ("history/sparc.migratedpool.DAT.Z", "history_pool"),
        (
            "cli_root/zpool_upgrade/blockfiles/zfs-pool-v1.dat.bz2",
            "v1-pool",
        ),
        (
            "cli_root/zpool_upgrade/blockfiles/zfs-pool-v15.dat.bz2",
            "v15-pool",
        ),
    ] {
        let pool = Pool::open(rel, name);
        let seen = check_zaps(&pool);
        assert!(seen.micro >= 5, "{name}: {seen:?}");
        if name == "v1-pool" {
            // Its root directory: a 19 KiB micro ZAP of 303 names.
            assert!(seen.entries >= 303, "{name}: {seen:?}");
        }
    }
}

// Why: a fat ZAP of several leaves exercises the pointer table (slots shared by a leaf,
// its prefix), the leaf bucket after the prefix bits, and multi-chunk names.
#[test]
fn multi_leaf_fat_directory_lists_and_looks_up_like_zdb() {
    let pool = Pool::open_checked_in("zfs-fuse-fatzap.img.xz", "fatzap");
    let seen = check_zaps(&pool);
    assert!(seen.fat >= 3, "{seen:?}");
    assert!(seen.max_leaves >= 8, "{seen:?}");
    assert!(seen.entries >= 700, "{seen:?}");
}

/// The blocks of the fat `links` directory (object 5 of dataset 16) and of a micro ZAP,
/// a dnode block and the objset block, for the corruption test.
fn real_blocks(pool: &Pool) -> (DnodePhys, Vec<DnodeBlock>, Vec<u8>, Vec<u8>, Vec<u8>) {
    let mos = pool.mos();
    let fs = pool.dataset(&mos, 16);
    let mut reader = pool.reader();
    let dir = fs.dnode(5, &mut reader).unwrap().unwrap();
    let blocks: Vec<DnodeBlock> = (0..=dir.maxblkid)
        .filter_map(|b| dir.read_block(b, &mut reader).unwrap())
        .collect();
    let master = fs.dnode(1, &mut reader).unwrap().unwrap();
    let micro = master.read_block(0, &mut reader).unwrap().unwrap().data;
    let dnodes = fs
        .meta_dnode
        .read_block(0, &mut reader)
        .unwrap()
        .unwrap()
        .data;
    let (bp, order) = pool.rootbp();
    let objset = pool.read(&bp, order).unwrap();
    (dir, blocks, micro, dnodes, objset)
}

fn mutate(rng: &mut SeededRng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    match rng.below(5) {
        0 => d.truncate(rng.below(d.len() as u64 + 1) as usize),
        1 => rng.fill(&mut d),
        _ => {
            for _ in 0..1 + rng.below(16) {
                let at = rng.below(d.len().max(1) as u64) as usize;
                if let Some(b) = d.get_mut(at) {
                    *b = match rng.below(3) {
                        0 => rng.next_u64() as u8,
                        1 => *b ^ (1 << rng.below(8)),
                        _ => [0, 0xff, 251, 252, 253][rng.below(5) as usize],
                    };
                }
            }
        }
    }
    d
}

// Why: every decoder reads bytes off a device; corrupt, truncated or hostile bytes (chunk
// chains that loop or leave the leaf, absurd table shifts, dnodes claiming more slots
// than their block) must be errors, never panics or endless loops.
#[test]
fn corrupted_real_blocks_never_panic_any_decoder() {
    let pool = Pool::open_checked_in("zfs-fuse-fatzap.img.xz", "fatzap");
    let (dir, blocks, micro, dnodes, objset) = real_blocks(&pool);
    assert!(blocks.len() >= 9, "header and 8 leaves");
    let order = blocks[0].order;
    let header = FatZapHeader::decode(&blocks[0].data, order).unwrap();
    let names: Vec<ZapKey> = header
        .list::<()>(&mut |b| {
            blocks
                .get(b as usize)
                .cloned()
                .ok_or(ZapReadError::Read(()))
        })
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(names.len(), 700);
    let mut rng = SeededRng::new(0x5eed);
    let mut errors = BTreeMap::<String, usize>::new();
    for i in 0..6000 {
        // One corrupt block among the real ones, through the whole fat-ZAP walk.
        let victim = rng.below(blocks.len() as u64) as usize;
        let mut bad = blocks.clone();
        bad[victim].data = mutate(&mut rng, &blocks[victim].data);
        let mut fetch = |b: u64| -> Result<DnodeBlock, ZapReadError<()>> {
            bad.get(b as usize).cloned().ok_or(ZapReadError::Read(()))
        };
        let key = &names[i % names.len()];
        let outcome = FatZapHeader::decode(&bad[0].data, order)
            .map_err(ZapReadError::Corrupt)
            .and_then(|h| {
                h.lookup(key, &mut fetch)?;
                h.list(&mut fetch)
            });
        if let Err(e) = outcome {
            *errors
                .entry(format!("{e:?}").chars().take(12).collect())
                .or_default() += 1;
        }
        let leaf = mutate(&mut rng, &blocks[1 + i % (blocks.len() - 1)].data);
        if let Ok(l) = ZapLeaf::decode(leaf, order, 1) {
            let _ = l.entries(header.flags);
            let _ = l.lookup(rng.next_u64(), key, header.flags);
        }
        let _ = MicroZap::decode(&mutate(&mut rng, &micro), order);
        // Dnodes: every slot of a corrupted dnode block, walked with corrupted blocks.
        let dblock = mutate(&mut rng, &dnodes);
        let at = (rng.below(32) * 512) as usize;
        if let Ok(dn) = DnodePhys::decode(dblock.get(at..).unwrap_or(&[]), order) {
            let mut reader = |_: &RawBlkptr, _: ByteOrder| -> Result<Vec<u8>, ()> {
                Ok(mutate(&mut SeededRng::new(i as u64), &blocks[1].data))
            };
            let _ = dn.read(rng.below(1 << 20), 4096, &mut reader);
            let _ = Zap::open(&dn, &mut reader).map(|z| z.list(&dn, &mut reader));
        }
        if let Ok(os) = ObjsetPhys::decode(&mutate(&mut rng, &objset), order) {
            let mut reader =
                |_: &RawBlkptr, _: ByteOrder| -> Result<Vec<u8>, ()> { Ok(dblock.clone()) };
            let _ = os.dnode(rng.below(64), &mut reader);
        }
    }
    // The corruption was noticed, not only survived.
    assert!(errors.values().sum::<usize>() > 1000, "{errors:?}");
    // And the uncorrupted directory still reads.
    let zap = Zap::open(&dir, &mut pool.reader()).unwrap();
    assert_eq!(zap.list(&dir, &mut pool.reader()).unwrap().len(), 700);
}

// Why: once a fat ZAP's pointer table outgrows half the header block it moves to blocks of
// its own (zt_numblks > 0, one more hash bit per doubling); lookups and listings must follow
// it there. The real 8-leaf directory's table, doubled into its own block the way
// zap_grow_ptrtbl does (slot i of the new table = slot i/2 of the old), must give the same
// entries and lookups.
#[test]
fn external_pointer_table_reads_like_the_embedded_one() {
    let pool = Pool::open_checked_in("zfs-fuse-fatzap.img.xz", "fatzap");
    let (_, blocks, ..) = real_blocks(&pool);
    let order = blocks[0].order;
    let embedded = FatZapHeader::decode(&blocks[0].data, order).unwrap();
    assert_eq!((embedded.ptrtbl.numblks, embedded.ptrtbl.shift), (0, 10));
    let bs = blocks[0].data.len();
    let mut table = vec![0u8; bs];
    for i in 0..bs / 8 {
        order
            .put_u64(&mut table, i * 8, embedded.embedded[i / 2])
            .unwrap();
    }
    let mut moved = blocks.clone();
    let table_blk = moved.len() as u64;
    moved.push(DnodeBlock { data: table, order });
    let mut header = blocks[0].data.clone();
    order.put_u64(&mut header, 16, table_blk).unwrap(); // zt_blk
    order.put_u64(&mut header, 24, 1).unwrap(); // zt_numblks
    order.put_u64(&mut header, 32, 11).unwrap(); // zt_shift
    header[bs / 2..].fill(0); // The embedded table is no longer read.
    moved[0].data = header;
    let external = FatZapHeader::decode(&moved[0].data, order).unwrap();
    let mut fetch = |b: u64| -> Result<DnodeBlock, ZapReadError<()>> {
        moved.get(b as usize).cloned().ok_or(ZapReadError::Read(()))
    };
    let mut from_embedded = embedded
        .list::<()>(&mut |b| {
            blocks
                .get(b as usize)
                .cloned()
                .ok_or(ZapReadError::Read(()))
        })
        .unwrap();
    let mut from_external = external.list(&mut fetch).unwrap();
    assert_eq!(from_external.len(), 700);
    for e in &from_external {
        assert_eq!(
            external.lookup(&e.key, &mut fetch).unwrap().as_ref(),
            Some(e)
        );
    }
    from_embedded.sort_by(|a, b| a.key.cmp(&b.key));
    from_external.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(from_embedded, from_external);
    // A table whose block count does not match its shift is corrupt.
    let mut bad = moved[0].data.clone();
    order.put_u64(&mut bad, 24, 3).unwrap();
    assert!(FatZapHeader::decode(&bad, order).is_err());
}

// Why: since format 6 the engine's own ZAP code reads and writes OpenZFS's bytes. Real
// ZAPs zfs-fuse wrote must pass the engine's strict validators (micro block, fat header,
// every leaf), list and look up identically to the part-1 reader, hash every name to the
// hash OpenZFS stored, and the micro block must re-encode to the very same bytes.
#[test]
fn engine_reads_real_openzfs_zaps() {
    use zetta::zap::{name_hash, FatHeader, Leaf, MicroBlock};
    let pool = Pool::open_checked_in("zfs-fuse-fatzap.img.xz", "fatzap");
    let (dir, blocks, micro, _, _) = real_blocks(&pool);
    // The master node: a micro ZAP.
    let engine = MicroBlock::decode(&micro).expect("the engine reads a real micro ZAP");
    let reader = MicroZap::decode(&micro, ByteOrder::Little).unwrap();
    assert_eq!(engine.salt, reader.salt);
    assert_eq!(
        engine.encode(),
        micro,
        "re-encoded micro ZAP differs from OpenZFS's"
    );
    let listed: Vec<_> = engine.slots.iter().flatten().collect();
    assert_eq!(listed.len(), reader.slots.len());
    for ((_, r), e) in reader.slots.iter().zip(&listed) {
        assert_eq!(r.key, ZapKey::Name(e.name.clone()));
        assert_eq!((r.cd, r.values.clone()), (e.cd, vec![e.value]));
        assert_eq!(name_hash(engine.salt, &e.name), r.hash);
    }
    // The fat `links` directory: header, then every leaf the pointer table names.
    let bs = blocks[0].data.len();
    let header = FatHeader::decode(&blocks[0].data, bs.trailing_zeros())
        .expect("the engine reads a real fat ZAP header");
    let fat = FatZapHeader::decode(&blocks[0].data, ByteOrder::Little).unwrap();
    assert_eq!((header.salt, header.num_leafs), (fat.salt, fat.num_leafs));
    let mut total = 0;
    for (blkid, block) in blocks.iter().enumerate().skip(1) {
        let leaf = Leaf::decode(block.data.clone())
            .unwrap_or_else(|e| panic!("leaf {blkid} refused by the engine: {e}"));
        let real = ZapLeaf::decode(block.data.clone(), ByteOrder::Little, blkid as u64).unwrap();
        let mut theirs = real.entries(0).unwrap();
        theirs.sort_by_key(|e| (e.hash, e.cd));
        let ours = leaf.entries();
        assert_eq!(ours.len(), theirs.len());
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!(ZapKey::Name(o.name.clone()), t.key);
            assert_eq!((o.hash, o.cd, o.int_len), (t.hash, t.cd, t.int_len));
            assert_eq!(name_hash(header.salt, &o.name), t.hash, "OpenZFS's hash");
            let found = leaf
                .find(o.hash, &o.name)
                .expect("looked up by hash and name");
            assert_eq!(found.cd, o.cd);
        }
        total += ours.len();
    }
    assert_eq!(total as u64, header.num_entries);
    assert!(total >= 700 && dir.maxblkid >= 8);
}
