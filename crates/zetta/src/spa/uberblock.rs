//! The uberblock: the root of the pool's Merkle tree, rewritten every txg into a ring slot of
//! every label, as OpenZFS's `uberblock_t` (`uberblock_impl.h`, `uberblock.c`
//! `uberblock_update`, `vdev_label.c` `vdev_uberblock_sync`). The byte layout is the part-1
//! reader's (`spa::openzfs::uberblock`), which decodes what this writes.
//!
//! ```text
//! slot (1 << clamp(ashift, 10, 13) bytes), every word little-endian:
//!   0 ub_magic 0x00bab10c      8 ub_version 5000       16 ub_txg        24 ub_guid_sum
//!  32 ub_timestamp (UTC s)    40 ub_rootbp (blkptr_t, the MOS objset, 128 bytes)
//! 168 ub_software_version 5000                        176 ub_mmp_magic 0xa11cea11
//! 184 ub_mmp_delay 0         192 ub_mmp_config 0      200 ub_checkpoint_txg 0
//! 208 ub_raidz_reflow_info 0 216 zeros ...  size-40 zio_eck_t (label checksum, verifier =
//!                                                   the slot's device offset)
//! ```
//!
//! Theory. The uberblock is the commit point: a txg is durable once its uberblock is in a
//! slot of some label of enough leaves. A torn or misdirected slot write fails its embedded
//! checksum and is skipped, so import falls back to the previous txg's slot (another slot:
//! `txg % count` differs for consecutive txgs). `uberblock_t` does not name its pool:
//! import takes rings only from the pool's own devices and checks the MOS config's
//! `pool_guid` (a stale ring of an earlier pool on a reused device never opens).
//! Import picks the best uberblock as OpenZFS does (`vdev_uberblock_compare`: txg, then
//! timestamp) among those whose MOS verifies.

use crate::byteorder::ByteOrder;
use crate::spa::openzfs::uberblock as ozfs;
use crate::types::Txg;
use crate::vdev::openzfs::label::seal_label_eck;
use crate::zio::blkptr::{BlockPointer, BLKPTR_SIZE_BYTES};

/// `SPA_VERSION` (= `SPA_VERSION_FEATURES`): the pool version Zetta writes.
pub const SPA_VERSION: u64 = crate::spa::openzfs::feature::SPA_VERSION_FEATURES;

/// Zetta's on-disk format version, in the config as `org.zetta:format` until format 25 (the
/// uberblock's own version is OpenZFS's SPA version; from 26 on, see below). 1: first format. 2: every filesystem carries the
/// ZPL layout and dataset space is accounted in deflated bytes. 3: DSL dir and dataset
/// records keep USED and its breakdown, compressed and logical sums and space limits.
/// 4: blocks as OpenZFS writes them (issue 14): blkptr_t, compression, checksum and object
/// type ids, compressed block framings and SHA-256 word order. 5: labels and uberblocks as
/// OpenZFS writes them: vdev_phys with the XDR config and OpenZFS's keys, the boot block,
/// uberblock_t in rings of OpenZFS's slot size, label checksums (SHA-256, offset verifier).
/// 6: ZAPs as OpenZFS writes them (issue 14, increment 3a): micro ZAPs (`mzap_phys_t`)
/// grown by 512 bytes up to 128 KiB, fat ZAPs (`zap_phys_t`, embedded then external
/// pointer tables, `zap_leaf_phys_t` chunked leaves), names hashed by OpenZFS's salted
/// CRC-64 (28 bits), cursors serialized as OpenZFS's.
/// 7: dnodes and object sets as OpenZFS writes them (issue 14, increment 3b):
/// `dnode_phys_t` with `DNODE_FLAG_USED_BYTES` and `dn_extra_slots`, the object size and
/// fixed-block-size mark moved into the interim `dn_pad3` words; 4 KiB `objset_phys_t`
/// (ZIL header at 512, `os_type` at 704, free accounting dnodes, next-object hint in
/// `os_pad0`).
/// 8: the MOS object directory and the DSL as OpenZFS writes them (issue 14, increment 4):
/// object 1 a ZAP of OpenZFS's entries (`root_dataset`, `config` as a packed-nvlist object
/// with its size bonus, `pool_props`, `scan` as `dsl_scan_phys_t`, feature ZAPs, bpobjs;
/// `spa::directory`), `dsl_dir_phys_t` and `dsl_dataset_phys_t` bonuses with OpenZFS's
/// bonus types, the DSL ZAPs with OpenZFS's object types and props values.
/// 10: ZPL znodes as OpenZFS's system attributes (issue 14, increment 6a): every ZPL object's
/// bonus is an SA bonus (`DMU_OT_SA`, layouts of `zfs_mknode`, the trivial ACL of the mode,
/// short symlink targets in `ZPL_SYMLINK`), the master node has `SA_ATTRS` (REGISTRY and
/// LAYOUTS ZAPs as `sa.c` writes them) and the creation-time properties, the delete queue
/// is a `DMU_OT_UNLINKED_SET`.
/// 11: block pointers as OpenZFS writes them with hole_birth and embedded_data active
/// (issue 14, increment 1b): a freed block, or one rewritten as zeros, leaves a hole with
/// its birth txg, lsize, type and level (`BlockPointer::hole_born`), which incremental
/// sends prune by; embedded pointers (BPE_*, etype DATA, no DVA) are read, and writing
/// them for level-0 blocks that compress to at most 112 bytes was switched on in format 12's
/// time (every reader since format 11 reads them, so no new number).
/// 12: space maps as OpenZFS writes them (issue 14, increment 5a): `space_map_phys_t`
/// bonuses (type SPACE_MAP_HEADER, 24 bytes without the spacemap_histogram feature),
/// 16 KiB blocks, one-word entries in sectors relative to the metaslab with a debug word
/// (txg, sync pass) before each sync's allocations and before its frees; a block freed in the
/// txg that allocated it is never written (`zetta_metaslab::space_map`).
/// 13: the intent log as OpenZFS writes it (issue 14): `zil_header_t` with
/// `zh_log` a `blkptr_t` (DMU_OT_INTENT_LOG, checksum zilog2, compression off, blk_cksum
/// the chain's verifier), log blocks led by `zil_chain_t` with a fletcher-4 `zio_eck_t`,
/// records as OpenZFS's `lr_*_t` with a 32-byte `lr_t` (`zil::chain`, `zpl::zfs_log`).
/// 14: the rest of the MOS as OpenZFS writes it (issue 14, increment 8): the pool history
/// as OpenZFS's ring of natively packed nvlists (`spa::history`, types 29/30), the error
/// log as the `errlog_last` ZAP, Zetta's private pool settings in the packed config
/// (`org.zetta:pool_props` byte array) instead of a MOS object, every dataset's dead list
/// an OpenZFS bpobj from creation, `ds_fsid_guid` below 2^56, the hidden `$MOS`, `$FREE`
/// and `$ORIGIN` dirs (`$ORIGIN@$ORIGIN`), and `org.zetta:private_format` as an active
/// write-only feature instead of `org.zetta:private_mos` in `features_for_read`: OpenZFS
/// opens the pool read-only (`zdb -d` walks it).
/// 15: fill counts, clone links and MOS space as OpenZFS keeps them (issue 14): every
/// objset's rootbp carries the number of objects in use (`dmu_objset_write_ready`; format
/// 14 wrote 1), a dnode block's fill counts dnodes by `dn_type` (`dbuf_write_ready`), so
/// `zdb -dd … -ddddd` walks every object and `zdb -r` copies Zetta's files out; and the
/// clone links of `dsl_dataset_create_sync_dd` (`dsl::pool::link_clone`): every dataset
/// but a clone has `$ORIGIN@$ORIGIN` for its dir's `dd_origin_obj`, and each origin
/// snapshot counts its clones in `ds_num_children` and lists them in `ds_next_clones_obj`
/// and its dir's `dd_clones`.
/// 16: every allocated block in the space maps (issue 14): the MOS's own blocks and the
/// space maps' blocks are allocated in the maps of the txg that writes them, in as many
/// sync passes as it takes to converge (`spa::txg`, "sync passes"; from pass 2 a block born
/// in the txg is overwritten in place), so import no longer walks the MOS to mark its
/// blocks and OpenZFS's `zdb -bcc` finds no leak. A format-14 map lacks the MOS: refused.
/// 17: feature flags as OpenZFS keeps them (issue 14 item 1, `spa::zfeature`): one entry
/// per enabled feature in `features_for_read` or `features_for_write` (by its
/// READONLY_COMPAT flag) with a true count (lz4_compress, hole_birth and embedded_data
/// active from enable, enabled_txg counting its entries), descriptions, the
/// `feature_enabled_txg` ZAP, hole_birth and embedded_data named in the label's
/// `features_for_read`; a pool made with `-d` writes all-zero holes and no embedded
/// pointers.
/// 18: the checksum salt in the object directory (`org.illumos:checksum_salt`, random at
/// create; format 17 keyed blake3 with zeros and stored nothing, so OpenZFS drew its own
/// salt and failed every blake3 block: `zdb -bcc` "Got error 52"); per-dataset feature
/// activation (`spa::zfeature`: dataset objects made ZAPs carrying large_blocks, zstd_compress,
/// blake3… entries, their counts and extensible_dataset's true); `compression=zstd-fast`
/// stored as its number (a string made OpenZFS fail the dataset's hold); a destroyed
/// filesystem's snapshot-names ZAP freed (zdb -d reported it leaked).
/// 20: dnodes and object sets exactly as OpenZFS writes them (issue 14 item 4): `dn_pad3`
/// and `os_pad0` zero. An object's byte size is its owner's (znode, packed-nvlist,
/// history, space map and bpobj bonuses, the zvol's prop ZAP), the DMU knows the block
/// extent; only ZPL plain files grow their single block (`zfs_grow_blocksize`); object
/// numbers are allocated by scanning fill counts from an in-memory hint
/// (`dmu_object_alloc`). Format 17 pools carry the interim words: refused.
/// 21: legacy pool versions (issue 14 item 1, `spa::zfeature::LEGACY_VERSIONS_WRITTEN`):
/// `ub_version`, the config's `version` and `creation_version` carry the pool's SPA
/// version, 28 or 5000; a version-28 pool has no feature objects (no feature ZAPs in the
/// object directory, an empty `features_for_read` in the label), writes lzjb for lz4, no
/// embedded pointers and all-zero holes; `spa_upgrade` to 5000 makes the feature ZAPs in
/// the txg that raises the version.
/// 23: pool version 23, zfs-fuse's (issue 14, `-o version=23`): ZPL 4 filesystems whose
/// znodes are `znode_phys_t` bonuses (`DMU_OT_ZNODE`, 264 bytes, a symlink target of up to
/// 56 bytes after them, the trivial ACL as a version-1 `zfs_acl_phys_t`), no SA master
/// node; bpobjs with the 32-byte bplist header; no `$FREE`, `free_bpobj` nor `dd_clones`
/// (all gated at 24 and 26). A ZPL 4 filesystem of any pool is read and written.
/// 25: dirty time logs as OpenZFS keeps them (issue 14, `vdev::dtl`, `spa::vdev_dtl`): a
/// leaf's missed txgs are a space map object in the MOS (4 KiB blocks, start 0, shift 0:
/// one ALLOC entry per txg range after a debug word) named by its config's `DTL`, made the
/// first time the DTL is synced, rewritten for every leaf after a scan, freed when the leaf
/// leaves the pool; `org.zetta:missing_txg` is gone (format 23 pools may carry it: refused).
/// Older pools are not read any more: the private format retires.
/// 26: no private key left (issue 14, "Retire the private format"): the config and labels
/// carry no `org.zetta:format`, no `org.zetta:vdev_root` (discovery assembles the tree from
/// the top-level vdevs' labels) and no `org.zetta:pool_props` (the settings OpenZFS stores
/// are in `pool_props` with its encodings, `comment`/`compatibility` in the config, the
/// rest in memory); no feature `org.zetta:private_format`. A Zetta pool is an OpenZFS pool
/// told apart by its version and features alone (`spa::openzfs::discover::zetta_writes`),
/// so this number is written nowhere: a pool whose labels carry `org.zetta:format` (always
/// 25 or lower) is refused as an older format (`vdev::label::read_config`), and any later
/// change of the on-disk format must be an OpenZFS feature or version Zetta maintains.
/// Also in 26 (merged from a branch that numbered it 30): user/group accounting as OpenZFS
/// keeps it (issue 19, `dmu::objset::userused`): every ZPL object set carries the
/// `DMU_USERUSED_OBJECT`/`DMU_GROUPUSED_OBJECT` ZAPs (made at its first sync, updated from
/// every synced dnode's `DN_USED_BYTES` and owner, 512 + used per object),
/// `OBJSET_FLAG_USERACCOUNTING_COMPLETE` and `DNODE_FLAG_USERUSED_ACCOUNTED` on every dnode;
/// an OpenZFS dataset's accounting is maintained instead of released;
/// `userquota@`/`groupquota@` ZAPs named in the master node (`zpl::zfs_quota`).
pub const FORMAT_VERSION: u64 = 26;
/// The oldest format this code reads.
pub const FORMAT_VERSION_MIN: u64 = 26;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uberblock {
    /// `ub_version`: the pool's SPA version (5000, or a legacy one).
    pub version: u64,
    pub txg: Txg,
    /// Sum of every vdev guid, root (= the pool guid) included (`vdev_guid_sum`).
    pub guid_sum: u64,
    pub timestamp_secs: u64,
    pub rootbp: BlockPointer,
}

impl Uberblock {
    /// Encodes into a slot of `slot_size_bytes` destined for `device_offset`.
    pub fn encode(&self, slot_size_bytes: usize, device_offset: u64) -> Vec<u8> {
        let mut out = vec![0u8; slot_size_bytes.max(ozfs::UBERBLOCK_SIZE_BYTES + 40)];
        let words: [(usize, u64); 10] = [
            (0, ozfs::UBERBLOCK_MAGIC),
            (8, self.version),
            (16, self.txg.0),
            (24, self.guid_sum),
            (32, self.timestamp_secs),
            (168, SPA_VERSION),
            (176, ozfs::MMP_MAGIC),
            (184, 0),
            (192, 0),
            (200, 0),
        ];
        for (at, value) in words {
            out[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        self.rootbp.encode(&mut out[40..40 + BLKPTR_SIZE_BYTES]);
        // The slot is at least 256 bytes: sealing cannot fail.
        let _ = seal_label_eck(&mut out, device_offset, ByteOrder::Little);
        out
    }

    /// Decodes a slot read from `device_offset`; `None` for blank, damaged or foreign slots
    /// (a bad checksum, another byte order, an SPA version OpenZFS does not know, an
    /// undecodable rootbp). The version must match the MOS config's (`spa::import`).
    pub fn decode(bytes: &[u8], device_offset: u64) -> Option<Uberblock> {
        let ub = ozfs::decode_slot(bytes, device_offset).ok()?;
        if ub.order != ByteOrder::Little
            || !crate::spa::openzfs::feature::version_is_supported(ub.version)
        {
            return None;
        }
        let rootbp = BlockPointer::decode(&ub.rootbp).ok()?;
        Some(Uberblock {
            version: ub.version,
            txg: Txg(ub.txg),
            guid_sum: ub.guid_sum,
            timestamp_secs: ub.timestamp,
            rootbp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Uberblock {
        Uberblock {
            version: SPA_VERSION,
            txg: Txg(42),
            guid_sum: 7,
            timestamp_secs: 1_700_000_000,
            rootbp: BlockPointer::HOLE,
        }
    }

    // Why: the uberblock is on-disk format and must be OpenZFS's uberblock_t: magic,
    // versions and MMP magic at their offsets, read back by the part-1 OpenZFS reader.
    #[test]
    fn golden_header() {
        let bytes = sample().encode(4096, 0x2_1000);
        assert_eq!(&bytes[0..8], &[0x0c, 0xb1, 0xba, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[8..16], &5000u64.to_le_bytes());
        assert_eq!(bytes[16], 42);
        assert_eq!(bytes[24], 7);
        assert_eq!(&bytes[168..176], &5000u64.to_le_bytes());
        assert_eq!(&bytes[176..184], &0xa11c_ea11u64.to_le_bytes());
        assert_eq!(
            &bytes[4096 - 40..4096 - 32],
            &0x0210_da7a_b10c_7a11u64.to_le_bytes()
        );
        let ozfs = ozfs::decode_slot(&bytes, 0x2_1000).unwrap();
        assert_eq!(
            (ozfs.txg, ozfs.guid_sum, ozfs.timestamp),
            (42, 7, 1_700_000_000)
        );
        assert_eq!(Uberblock::decode(&bytes, 0x2_1000), Some(sample()));
    }

    // Why: a legacy pool's uberblocks carry its version in `ub_version` (28), while
    // `ub_software_version` stays SPA_VERSION as `uberblock_update` writes it; a version
    // OpenZFS does not know (29..4999) is no uberblock (format 21).
    #[test]
    fn legacy_version_in_ub_version_only() {
        let legacy = Uberblock {
            version: 28,
            ..sample()
        };
        let bytes = legacy.encode(1024, 4096);
        assert_eq!(&bytes[8..16], &28u64.to_le_bytes());
        assert_eq!(&bytes[168..176], &5000u64.to_le_bytes());
        assert_eq!(Uberblock::decode(&bytes, 4096), Some(legacy));
        let unknown = Uberblock {
            version: 29,
            ..sample()
        };
        assert_eq!(Uberblock::decode(&unknown.encode(1024, 4096), 4096), None);
    }

    // Why: a slot found at another offset (misdirected write) or with any bit flipped is
    // ignored, so import falls back to an older valid uberblock.
    #[test]
    fn misplaced_or_damaged_slots_are_ignored() {
        let bytes = sample().encode(1024, 4096);
        assert_eq!(Uberblock::decode(&bytes, 8192), None);
        for at in (0..1024).step_by(7) {
            let mut bad = bytes.clone();
            bad[at] ^= 4;
            assert_eq!(Uberblock::decode(&bad, 4096), None, "flip at {at}");
        }
    }
}
