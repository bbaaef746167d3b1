//! Object-set tests: the objset block format and the block tree's growth and shrinkage.

use super::objset::{ObjectSet, OBJECT_CACHE_MAX, OBJSET_BLOCK_SIZE_BYTES};
use super::*;
use crate::io::{DeviceRef, MemDevice};
use crate::spa::{CreateOptions, Spa, TopKind, TopSpec};
use crate::types::ObjectId;
use std::sync::Arc;

fn pool() -> Spa {
    let device: DeviceRef = Arc::new(MemDevice::new("/mem/dmu", 128 << 20));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/dmu".to_string(), device)],
        is_log: false,
    };
    Spa::create("dmu", &[spec], &CreateOptions::default()).unwrap()
}

// Why: the objset block is on-disk format and must be OpenZFS's `objset_phys_t` (format 6
// wrote a private 2 KiB block with os_type at 512, where OpenZFS reads the ZIL header).
#[test]
fn golden_objset_block_header() {
    use super::openzfs::objset::{ObjsetPhys as OzObjset, OS_TYPE_ZFS};
    let spa = pool();
    let ctx = spa.ctx();
    let mut os = filesystem_objset();
    let id = os
        .create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
        .unwrap();
    assert_eq!(id, ObjectId(1));
    let bp = os
        .sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    assert_eq!(bp.lsize_bytes as usize, OBJSET_BLOCK_SIZE_BYTES);
    assert_eq!(OBJSET_BLOCK_SIZE_BYTES, 4096, "sizeof (objset_phys_t)");
    assert_eq!(bp.object_type, object_type::OBJSET);
    let block = spa.zio.read_block(&spa.root, &bp, None).unwrap();
    // The meta-dnode: DMU_OT_DNODE, 17-bit indirects, 3 pointers, USED_BYTES, 16 KiB.
    assert_eq!(&block[0..4], &[object_type::DNODE, 17, 1, 3]);
    assert_eq!(block[7], 1, "meta-dnode dn_flags USED_BYTES");
    assert_eq!(&block[8..10], &32u16.to_le_bytes(), "16 KiB dnode blocks");
    assert_eq!(&block[512..704], &[0u8; 192][..], "empty zil_header_t");
    assert_eq!(&block[704..712], &2u64.to_le_bytes(), "os_type DMU_OST_ZFS");
    // A ZPL object set keeps user/group accounting from its first sync (format 26).
    assert_eq!(
        &block[712..720],
        &1u64.to_le_bytes(),
        "os_flags USERACCOUNTING_COMPLETE"
    );
    assert_eq!(&block[720..784], &[0u8; 64][..], "no MACs");
    // Formats 7-17 kept a next-object hint in os_pad0[0..8]; OpenZFS keeps none.
    assert!(block[784..1024].iter().all(|&b| b == 0), "os_pad0");
    // os_userused_dnode and os_groupused_dnode: DMU_OT_USERGROUP_USED micro ZAPs of 512
    // bytes (zap_create_claim); no project dnode (project_quota is not enabled).
    for at in [1024, 1536] {
        assert_eq!(
            block[at],
            super::objset::DMU_OT_USERGROUP_USED,
            "dnode at {at}"
        );
        assert_eq!(
            &block[at + 8..at + 10],
            &1u16.to_le_bytes(),
            "512-byte block"
        );
    }
    assert!(
        block[2048..].iter().all(|&b| b == 0),
        "free project dnode, os_pad1"
    );
    // And the meta-dnode's dn_pad3 (an object size in formats 7-17) is zero too.
    assert_eq!(&block[32..64], &[0u8; 32][..], "meta-dnode dn_pad3");
    let phys = OzObjset::decode(&block, crate::byteorder::ByteOrder::Little).unwrap();
    assert_eq!(phys.os_type, OS_TYPE_ZFS);
    assert_eq!(phys.meta_dnode.data_block_size(), 16384);
    assert!(phys.userused.as_ref().is_some_and(|d| !d.is_free()));
    assert!(phys.projectused.as_ref().is_some_and(|d| d.is_free()));
    let reopened = ObjectSet::open(
        &ctx,
        9,
        &bp,
        crate::spa::dataset_policy(default_data_props()),
    );
    assert!(reopened.is_ok());
}

// Why: formats 7-17 kept the next free object number in `os_pad0`, which OpenZFS neither
// writes nor reads (an object set OpenZFS wrote has none). Allocation now scans as
// `dmu_object_alloc` does from an in-memory hint: after a reopen it must skip the full
// dnode blocks by their fill counts, reuse the slots that frees left, and never hand out
// a number in use.
#[test]
fn object_numbers_come_from_fill_counts_after_reopen() {
    let spa = pool();
    let ctx = spa.ctx();
    let policy = crate::spa::dataset_policy(default_data_props());
    let mut os = ObjectSet::create(9, ObjsetType::Filesystem, policy);
    for expected in 1..=100u64 {
        let id = os
            .create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
            .unwrap();
        assert_eq!(id, ObjectId(expected));
    }
    let bp = os
        .sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    let mut os = ObjectSet::open(&ctx, 9, &bp, policy).unwrap();
    for freed in [40, 70] {
        os.free_object(&ctx, ObjectId(freed)).unwrap();
    }
    let bp = os.sync(&ctx, &bp).unwrap();
    let mut os = ObjectSet::open(&ctx, 9, &bp, policy).unwrap();
    let mut created = Vec::new();
    for _ in 0..3 {
        created.push(
            os.create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
                .unwrap()
                .0,
        );
    }
    assert_eq!(
        created,
        vec![40, 70, 101],
        "freed slots first, then past the end"
    );
    assert!(!created.contains(&0), "object 0 is the meta-dnode");
}

/// A small object is one small block that grows up to the record size, then stays there.
#[test]
fn block_size_grows_to_record_size() {
    let mut spa = pool();
    spa.set_record_size(128 << 10);
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &[7u8; 5000]).unwrap();
    spa.sync().unwrap();
    let dnode = spa.object_dnode(id).unwrap();
    assert_eq!(dnode.data_block_size_bytes, 5120);
    spa.write_object(id, 300_000, b"tail").unwrap();
    spa.sync().unwrap();
    let dnode = spa.object_dnode(id).unwrap();
    assert_eq!(dnode.data_block_size_bytes, 128 << 10);
    assert_eq!(dnode.max_block_id, 2);
    assert_eq!(spa.read_object(id, 0, 5000).unwrap(), vec![7u8; 5000]);
    assert_eq!(spa.read_object(id, 300_000, 4).unwrap(), b"tail");
}

/// Deep trees (three levels of indirection) round trip, and freeing the object returns
/// every block to the allocator.
#[test]
fn deep_trees_round_trip_and_free_completely() {
    let mut spa = pool();
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let (_, baseline, _) = spa.space();
    let id = spa.create_object(512).unwrap();
    // Block 0 and a block past 1024 * 128K, which needs a second indirect level.
    spa.write_object(id, 0, &[1u8; 200_000]).unwrap();
    spa.write_object(id, 200 << 30, b"deep").unwrap();
    spa.sync().unwrap();
    let dnode = spa.object_dnode(id).unwrap();
    assert!(dnode.nlevels >= 3, "nlevels {}", dnode.nlevels);
    assert_eq!(spa.read_object(id, 200 << 30, 4).unwrap(), b"deep");
    assert_eq!(spa.read_object(id, 100 << 30, 4).unwrap(), vec![0u8; 4]);
    spa.truncate_object(id, 100).unwrap();
    spa.sync().unwrap();
    assert_eq!(spa.read_object(id, 0, 200).unwrap(), vec![1u8; 100]);
    spa.free_object(id).unwrap();
    for _ in 0..4 {
        spa.sync().unwrap();
    }
    let (_, after, _) = spa.space();
    assert!(
        after <= baseline + (64 << 10),
        "leaked: baseline {baseline}, after {after}"
    );
}

/// Regression (found by the space property test): a file grown by an extending truncate
/// has a size past what its block tree addresses; shrinking it to a size inside that hole
/// zeroed the "tail" of a block beyond the dnode, and the next commit failed with "block 1
/// beyond the dnode". The tail of a hole is already zeros: nothing to write.
#[test]
fn shrinking_into_an_extended_hole_commits() {
    let mut spa = pool();
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &[7u8; 100_000]).unwrap();
    spa.sync().unwrap();
    spa.truncate_object(id, 4 << 20).unwrap();
    spa.truncate_object(id, 300_000).unwrap();
    spa.sync().unwrap();
    assert_eq!(spa.object_size(id).unwrap(), 300_000);
    let data = spa.read_object(id, 0, 300_000).unwrap();
    assert!(data[..100_000].iter().all(|b| *b == 7));
    assert!(data[100_000..].iter().all(|b| *b == 0));
    // The same through a punched hole past the tree.
    spa.truncate_object(id, 4 << 20).unwrap();
    spa.with_dataset("dmu", |os, ctx| os.free_range(ctx, id, 200_000, 300_000))
        .unwrap();
    spa.sync().unwrap();
}

/// A txg is charged the records it holds dirty in memory, not the bytes written into
/// them: random 4 KiB writes into 128 KiB records charged by bytes let a daemon hold 32×
/// its dirty limit (778 MiB RSS in the benchmark). A second write into a dirty record
/// costs nothing more; a commit starts the count again.
#[test]
fn dirty_data_is_counted_in_whole_records() {
    let spa = pool();
    let ctx = spa.ctx();
    let mut os = filesystem_objset();
    let id = os
        .create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
        .unwrap();
    os.write(&ctx, id, 0, &vec![1u8; 1 << 20]).unwrap();
    assert_eq!(os.dirty_data_bytes, 1 << 20);
    os.sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    assert_eq!(os.dirty_data_bytes, 0);
    os.write(&ctx, id, 200 << 10, &[2u8; 4096]).unwrap();
    assert_eq!(os.dirty_data_bytes, 128 << 10);
    os.write(&ctx, id, 201 << 10, &[3u8; 4096]).unwrap();
    assert_eq!(os.dirty_data_bytes, 128 << 10);
}

// Why: the object cache was bounded only at `sync`, so a pool that is only read (an
// `ls -lR` of a big tree, nothing to commit) kept every dnode it ever looked at. Readers
// now insert under the shard locks and drop a full shard's clean states first; dirty
// states (the open txg's only copy) stay whatever the readers do.
#[test]
fn readers_keep_the_object_cache_bounded_and_dirty_states_in_it() {
    let spa = pool();
    let ctx = spa.ctx();
    let policy = crate::spa::dataset_policy(default_data_props());
    let mut os = ObjectSet::create(9, ObjsetType::Filesystem, policy);
    let count = OBJECT_CACHE_MAX as u64 + 1000;
    for _ in 0..count {
        os.create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
            .unwrap();
    }
    let bp = os
        .sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    let mut os = ObjectSet::open(&ctx, 9, &bp, policy).unwrap();
    // One dirty object of the open txg, then readers over every object.
    os.write(&ctx, ObjectId(7), 0, b"dirty").unwrap();
    let reader = &os;
    for id in 1..=count {
        assert!(reader.object_exists(&ctx, ObjectId(id)).unwrap());
        reader.dnode(&ctx, ObjectId(id)).unwrap();
    }
    assert!(
        reader.cached_objects() <= OBJECT_CACHE_MAX,
        "{} objects cached",
        reader.cached_objects()
    );
    assert_eq!(reader.read(&ctx, ObjectId(7), 0, 5).unwrap(), b"dirty");
    // The DMU keeps no byte size (format 20): the extent is the dirty block's.
    let block = u64::from(
        reader
            .dnode(&ctx, ObjectId(7))
            .unwrap()
            .data_block_size_bytes,
    );
    assert_eq!(reader.extent_bytes(&ctx, ObjectId(7)).unwrap(), block);
}

/// Every object of an engine object set, walked with the part-1 OpenZFS reader from the
/// objset block `bp` (blocks fetched through the engine's pipeline), compared with the
/// engine's own view. Returns how many objects matched.
fn walk_with_openzfs_reader(
    spa: &Spa,
    os: &mut ObjectSet,
    bp: &crate::zio::blkptr::BlockPointer,
) -> usize {
    use super::openzfs::objset::{dnode_in, ObjsetPhys as OzObjset};
    use super::openzfs::RawBlkptr;
    use crate::byteorder::ByteOrder;
    use crate::zio::blkptr::BlockPointer;
    let ctx = spa.ctx();
    let mut reader = |raw: &RawBlkptr, _: ByteOrder| -> Result<Vec<u8>, String> {
        let bp = BlockPointer::decode(raw).map_err(|e| e.to_string())?;
        spa.zio
            .read_block(&spa.root, &bp, None)
            .map(|data| data.to_vec())
            .map_err(|e| e.to_string())
    };
    let block = spa.zio.read_block(&spa.root, bp, None).unwrap();
    let phys = OzObjset::decode(&block, ByteOrder::Little).unwrap();
    assert_eq!(phys.os_type, os.os_type as u64);
    let ids = os.object_ids(&ctx).unwrap();
    assert!(!ids.is_empty());
    for id in &ids {
        let ours = os.dnode(&ctx, *id).unwrap();
        let theirs = dnode_in(&phys.meta_dnode, id.0, &mut reader)
            .unwrap()
            .unwrap_or_else(|| panic!("object {id}: free to the OpenZFS reader"));
        let what = format!("object {id}: ours {ours:?}\ntheirs {theirs:?}");
        assert_eq!(theirs.object_type, ours.object_type, "{what}");
        assert_eq!(theirs.nlevels, ours.nlevels, "{what}");
        assert_eq!(theirs.indblkshift, ours.indirect_block_shift, "{what}");
        assert_eq!(
            theirs.data_block_size(),
            ours.data_block_size_bytes as usize,
            "{what}"
        );
        assert_eq!(theirs.maxblkid, ours.max_block_id, "{what}");
        assert_eq!(theirs.used_bytes(), ours.used_bytes, "{what}");
        assert_eq!(theirs.bonustype, ours.bonus_type, "{what}");
        assert_eq!(theirs.bonus, ours.bonus, "{what}");
        // Every dnode of a ZPL object set is accounted (format 26), its object count too
        // where userobj_accounting is active (session 19: every new dataset).
        let mut accounted = if os.userused_enabled() {
            super::openzfs::dnode::DNODE_FLAG_USERUSED_ACCOUNTED
        } else {
            0
        };
        if os.userobjused_enabled() {
            accounted |= super::openzfs::dnode::DNODE_FLAG_USEROBJUSED_ACCOUNTED;
        }
        assert_eq!(
            theirs.flags,
            super::openzfs::dnode::DNODE_FLAG_USED_BYTES | accounted,
            "{what}"
        );
        let pointers: Vec<BlockPointer> = theirs
            .blkptrs
            .iter()
            .map(|raw| BlockPointer::decode(raw).unwrap())
            .collect();
        assert_eq!(pointers, ours.blkptr, "{what}");
        // The reader's walk through the tree reads what the engine reads.
        let extent = (ours.max_block_id + 1) * u64::from(ours.data_block_size_bytes);
        let len = extent.min(1 << 20) as usize;
        if ours.object_type == object_type::PLAIN_FILE && len > 0 {
            let want = os.read(&ctx, *id, 0, len).unwrap();
            assert_eq!(theirs.read(0, len, &mut reader).unwrap(), want, "{what}");
        }
    }
    ids.len()
}

// Why: format 6's dnodes and objset blocks were private; OpenZFS's own readers (the
// part-1 codecs that read real pools) must walk every object set the engine writes: the
// MOS from the uberblock's root, and a filesystem's objset with multi-level files, a
// ZAP and a bonus buffer.
#[test]
fn engine_pool_object_sets_walk_with_the_openzfs_reader() {
    let mut spa = pool();
    spa.create_filesystem("dmu/fs").unwrap();
    let big = spa
        .with_dataset("dmu/fs", |os, ctx| {
            let file = os.create_object(ctx, object_type::PLAIN_FILE, 512, 17, 64)?;
            os.write(ctx, file, 0, &[3u8; 3000])?;
            os.set_bonus(ctx, file, &[9u8; 64])?;
            let big = os.create_object(ctx, object_type::PLAIN_FILE, 512, 0, 0)?;
            os.write(ctx, big, 0, &[5u8; 200_000])?;
            // Far enough to need indirect levels above the three dnode pointers.
            os.write(ctx, big, 3 << 30, b"far")?;
            let zap = crate::zap::zap_create(os, ctx, object_type::DIRECTORY)
                .map_err(|e| DmuError::Invalid(e.to_string()))?;
            for i in 0..40u64 {
                crate::zap::zap_add(os, ctx, zap, format!("name{i}"), &[i])
                    .map_err(|e| DmuError::Invalid(e.to_string()))?;
            }
            Ok(big)
        })
        .unwrap();
    spa.sync().unwrap();
    let mos_bp = spa.mos_root_bp();
    let mut mos = std::mem::replace(
        &mut spa.dp.mos,
        ObjectSet::placeholder(
            0,
            ObjsetType::Meta,
            crate::spa::dataset_policy(default_data_props()),
        ),
    );
    let mos_objects = walk_with_openzfs_reader(&spa, &mut mos, &mos_bp);
    spa.dp.mos = mos;
    assert!(mos_objects >= 5, "{mos_objects} MOS objects");
    let ds = spa.lookup_dataset("dmu/fs").unwrap().unwrap();
    let fs_bp = spa.dataset_phys(ds).unwrap().bp;
    let policy = crate::spa::dataset_policy(default_data_props());
    let mut fs = ObjectSet::open(&spa.ctx(), ds, &fs_bp, policy).unwrap();
    let fs_objects = walk_with_openzfs_reader(&spa, &mut fs, &fs_bp);
    assert!(fs_objects >= 3, "{fs_objects} filesystem objects");
    let big = fs.dnode(&spa.ctx(), big).unwrap();
    assert!(big.nlevels >= 3, "a multi-level file: {big:?}");
}

// Why: format 10 wrote a freed or zeroed block as an all-zero pointer, so a hole could not
// say when it appeared. OpenZFS with hole_birth active (`free_blocks`, `zio_write_compress`)
// keeps the block's lsize, type and level and records the txg, and its incremental sends
// skip holes by that birth: a hole without it is a FREE that a later `zfs send -i` misses.
#[test]
fn freed_and_zeroed_blocks_become_holes_with_their_birth() {
    use crate::byteorder::ByteOrder;
    use crate::types::Txg;
    use crate::zio::blkptr::BlockPointer;
    use crate::zio::openzfs::blkptr::BlockPointer as OpenZfsBp;
    let spa = pool();
    let at = |txg: u64| IoCtx {
        zio: &spa.zio,
        root: &spa.root,
        txg: Txg(txg),
    };
    let mut os = filesystem_objset();
    let record = 128 << 10;
    let id = os
        .create_object(&at(10), object_type::PLAIN_FILE, 512, 0, 0)
        .unwrap();
    let data: Vec<u8> = (0..4 * record).map(|i| (i % 251) as u8 | 1).collect();
    os.write(&at(10), id, 0, &data).unwrap();
    let root = os.sync(&at(10), &BlockPointer::HOLE).unwrap();
    // Txg 11: block 1 punched, block 2 rewritten as zeros.
    os.free_range(&at(11), id, record as u64, record as u64)
        .unwrap();
    os.write(&at(11), id, 2 * record as u64, &vec![0u8; record])
        .unwrap();
    os.sync(&at(11), &root).unwrap();

    let bp = |blkid| os.block_pointer_shared(&at(12), id.0, 0, blkid).unwrap();
    let punched = bp(1);
    assert_eq!(
        punched,
        BlockPointer::hole_born(Txg(11), record as u32, object_type::PLAIN_FILE, 0)
    );
    assert!(punched.is_hole());
    assert_eq!(bp(2), punched, "a block rewritten as zeros");
    assert!(!bp(3).is_hole());
    assert_eq!(bp(4), BlockPointer::HOLE, "never written: no birth");
    // The L1 block counts only the two blocks left (holes fill nothing).
    let dnode = os.dnode(&at(12), id).unwrap();
    assert_eq!(dnode.nlevels, 2);
    assert_eq!(dnode.blkptr[0].fill, 2);
    assert_eq!(
        os.read(&at(12), id, record as u64, 2 * record).unwrap(),
        vec![0u8; 2 * record]
    );

    // The bytes, per spa.h: lsize - 1 in sectors, type, level, no byte-order bit, logical
    // birth; every other word zero.
    let bytes = punched.to_bytes();
    let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    assert_eq!(word(6), (u64::from(object_type::PLAIN_FILE) << 48) | 255);
    assert_eq!(word(10), 11);
    for i in (0..16).filter(|i| *i != 6 && *i != 10) {
        assert_eq!(word(i), 0, "word {i}");
    }
    assert_eq!(BlockPointer::decode(&bytes).unwrap(), punched);
    // The part-1 reader (pinned against zdb on real pools' holes) reads it as OpenZFS does.
    let theirs = OpenZfsBp::decode(ByteOrder::Little, &bytes, 0).unwrap();
    assert!(theirs.is_hole());
    assert_eq!(theirs.logical_birth(), 11);
    assert_eq!(
        theirs.to_string(),
        "HOLE [L0 ZFS plain file] size=20000L birth=11L"
    );
}

// Why: format 10 wrote every block to a device, even one that compresses to a few bytes;
// OpenZFS with embedded_data active (`zio_write_compress`) puts a level-0 block that
// compresses to at most 112 bytes into its pointer (BPE_*, etype DATA): no allocation,
// no I/O, and its readers expect it. Dnode and objset blocks are never embedded.
#[test]
fn tiny_blocks_are_embedded_in_their_pointer() {
    use crate::byteorder::ByteOrder;
    use crate::zio::blkptr::BlockPointer;
    use crate::zio::openzfs::blkptr::BlockPointer as OpenZfsBp;
    let spa = pool();
    let ctx = spa.ctx();
    let mut os = filesystem_objset();
    let id = os
        .create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
        .unwrap();
    let text = b"tiny file, tiny file, tiny file, tiny file, tiny file\n".repeat(8);
    os.write(&ctx, id, 0, &text).unwrap();
    let root = os.sync(&ctx, &BlockPointer::HOLE).unwrap();
    assert!(!root.is_embedded(), "objset blocks are never embedded");
    let bp = os.block_pointer_shared(&ctx, id.0, 0, 0).unwrap();
    assert!(bp.is_embedded() && !bp.is_hole(), "{bp}");
    assert_eq!(bp.copies(), 0);
    assert_eq!(bp.lsize_bytes as usize, text.len().next_multiple_of(512));
    assert_eq!(
        os.dnode(&ctx, id).unwrap().used_bytes,
        0,
        "no space allocated"
    );
    assert_eq!(os.read(&ctx, id, 0, text.len()).unwrap(), text);
    let meta = os.block_pointer_shared(&ctx, 0, 0, 0).unwrap();
    assert!(!meta.is_embedded(), "dnode blocks are never embedded");

    // The bytes, read by the part-1 reader (pinned against zdb on real pools' embedded
    // pointers): BPE sizes, lz4, the payload decompressing to the block.
    let bytes = bp.to_bytes();
    assert_eq!(BlockPointer::decode(&bytes).unwrap(), bp);
    let theirs = OpenZfsBp::decode(ByteOrder::Little, &bytes, 0).unwrap();
    theirs.validate().unwrap();
    assert!(theirs.is_embedded());
    assert_eq!(theirs.embedded_type(), 0, "BP_EMBEDDED_TYPE_DATA");
    assert_eq!(theirs.lsize_bytes(), u64::from(bp.lsize_bytes));
    assert_eq!(theirs.compression(), 15, "lz4");
    assert_eq!(theirs.object_type(), object_type::PLAIN_FILE);
    assert_eq!(theirs.logical_birth(), ctx.txg.0);
    assert_eq!(theirs.fill(), 1);
    let payload = theirs.embedded_payload().unwrap();
    assert!(payload.len() <= 112);
    let mut logical = vec![0u8; bp.lsize_bytes as usize];
    zetta_zcommon::compress::decompress(15, &payload, &mut logical).unwrap();
    assert_eq!(&logical[..text.len()], &text[..]);
    // Corrupt embedded pointers are refused, not trusted: a payload longer than 112 bytes,
    // an unknown embedded type.
    let mut long = bytes;
    long[51] |= 0xfe; // psize - 1 (bits 25-31 of the prop word) = 127
    assert!(BlockPointer::decode(&long).is_err());
    let mut redacted = bytes;
    redacted[53] = 2; // etype (bits 40-47) = BP_EMBEDDED_TYPE_REDACTED
    assert!(BlockPointer::decode(&redacted).is_err());
}

/// An empty filesystem object set (objset 9) with the default data properties.
fn filesystem_objset() -> ObjectSet {
    ObjectSet::create(
        9,
        ObjsetType::Filesystem,
        crate::spa::dataset_policy(default_data_props()),
    )
}

// Why: format 14 wrote every objset's rootbp with fill 1, and OpenZFS's zdb -dd asserts
// (zdb.c dump_objset: `object_count == usedobjs`) that the rootbp's fill is the number of
// objects it walks (`dmu_objset_write_ready` sums the meta-dnode's top-level fills). An
// object created and freed in the same txg, and the free slot 0, count nothing.
#[test]
fn objset_rootbp_fill_counts_objects_in_use() {
    let spa = pool();
    let ctx = spa.ctx();
    let mut os = filesystem_objset();
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(
            os.create_object(&ctx, object_type::PLAIN_FILE, 512, 0, 0)
                .unwrap(),
        );
    }
    os.free_object(&ctx, ids[7]).unwrap();
    let bp = os
        .sync(&ctx, &crate::zio::blkptr::BlockPointer::HOLE)
        .unwrap();
    assert_eq!(bp.fill, 39);
}

// Why: OpenZFS's `dbuf_write_ready` counts a dnode block's objects by `dn_type` and skips
// a large dnode's `dn_extra_slots` (a slot inside a large dnode is not an object even if
// its bytes are not zero); the format-14 count looked at `dn_datablkszsec` of every slot.
#[test]
fn dnode_block_fill_counts_large_dnodes_once() {
    let mut block = vec![0u8; 16 << 10];
    // Slot 1: a 1 KiB dnode (one extra slot) whose second slot holds stray bytes.
    block[512] = object_type::PLAIN_FILE;
    block[512 + 8] = 1;
    block[512 + 12] = 1;
    block[1024] = object_type::PLAIN_FILE;
    block[1024 + 8] = 1;
    // Slot 3: a plain dnode; slot 4: a free slot with a block size (not an object).
    block[3 * 512] = object_type::DIRECTORY;
    block[4 * 512 + 8] = 1;
    assert_eq!(objset::dnode_fill(&block), 2);
}
