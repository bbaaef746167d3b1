//! `dsl_dataset_phys_t`: the bonus of a DSL dataset object in the MOS (OpenZFS
//! `include/sys/dsl_dataset.h`).
//!
//! A dataset is one object set's history point: the head of a filesystem, volume or clone,
//! or a snapshot. Its bonus names its dir, its neighbours in the snapshot chain, its
//! snapshot-name ZAP, deadlist, space figures and GUIDs, and holds the block pointer of its
//! object set. Forty u64 words, 320 bytes, in the order of the MOS block holding the dnode:
//!
//! ```text
//! word  0 dir_obj            1 prev_snap_obj     2 prev_snap_txg      3 next_snap_obj
//!       4 snapnames_zapobj   5 num_children      6 creation_time (s)  7 creation_txg
//!       8 deadlist_obj       9 referenced_bytes 10 compressed_bytes  11 uncompressed_bytes
//!      12 unique_bytes      13 fsid_guid        14 guid              15 flags
//!   16-31 bp (blkptr_t, 128 bytes, kept raw here: decoded by the block-pointer codec)
//!      32 next_clones_obj   33 props_obj        34 userrefs_obj   35-39 pad
//! ```
//!
//! A head dataset has `num_children == 0` and a snapnames ZAP; a snapshot has
//! `snapnames_zapobj == 0`, `num_children >= 1` and, when it carries its own properties,
//! `props_obj`. Newer facts (bookmarks, large dnodes, resume state) live in the dataset's
//! object as a ZAP: the `FIELD_*` names below.

use super::dir::words_to_bytes;
use super::{bonus_words, BonusTooShort};
use crate::byteorder::ByteOrder;

/// Bytes of a `dsl_dataset_phys_t`.
pub const DSL_DATASET_PHYS_SIZE: usize = 320;
/// Byte offset and size of `ds_bp`.
pub const DS_BP_OFFSET: usize = 128;
pub const BLKPTR_SIZE: usize = 128;

/// `ds_flags`.
pub const DS_FLAG_INCONSISTENT: u64 = 1 << 0;
pub const DS_FLAG_NOPROMOTE: u64 = 1 << 1;
pub const DS_FLAG_UNIQUE_ACCURATE: u64 = 1 << 2;
pub const DS_FLAG_DEFER_DESTROY: u64 = 1 << 3;
pub const DS_FLAG_CI_DATASET: u64 = 1 << 16;

/// Entries of an extensified dataset's own ZAP.
pub const FIELD_BOOKMARK_NAMES: &str = "com.delphix:bookmarks";
pub const FIELD_LARGE_DNODE: &str = "org.zfsonlinux:large_dnode";
pub const FIELD_RESUME_FROMGUID: &str = "com.delphix:resume_fromguid";
pub const FIELD_RESUME_TONAME: &str = "com.delphix:resume_toname";
pub const FIELD_RESUME_TOGUID: &str = "com.delphix:resume_toguid";
pub const FIELD_RESUME_OBJECT: &str = "com.delphix:resume_object";
pub const FIELD_RESUME_OFFSET: &str = "com.delphix:resume_offset";
pub const FIELD_RESUME_BYTES: &str = "com.delphix:resume_bytes";
pub const FIELD_RESUME_LARGEBLOCK: &str = "com.delphix:resume_largeblockok";
pub const FIELD_RESUME_EMBEDOK: &str = "com.delphix:resume_embedok";
pub const FIELD_RESUME_COMPRESSOK: &str = "com.delphix:resume_compressok";
pub const FIELD_RESUME_RAWOK: &str = "com.datto:resume_rawok";
pub const FIELD_REMAP_DEADLIST: &str = "com.delphix:remap_deadlist";
pub const FIELD_IVSET_GUID: &str = "com.datto:ivset_guid";
pub const FIELD_RAW_RECEIVED: &str = "org.openzfs:raw_received";

/// A decoded `dsl_dataset_phys_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DslDatasetPhys {
    pub dir_obj: u64,
    pub prev_snap_obj: u64,
    pub prev_snap_txg: u64,
    pub next_snap_obj: u64,
    pub snapnames_zapobj: u64,
    pub num_children: u64,
    /// Seconds since 1970.
    pub creation_time: u64,
    pub creation_txg: u64,
    pub deadlist_obj: u64,
    pub referenced_bytes: u64,
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
    pub unique_bytes: u64,
    pub fsid_guid: u64,
    pub guid: u64,
    pub flags: u64,
    /// The object set's block pointer, raw (same byte order as the rest of the bonus).
    pub bp: [u8; BLKPTR_SIZE],
    pub next_clones_obj: u64,
    pub props_obj: u64,
    pub userrefs_obj: u64,
    pub pad: [u64; 5],
}

impl DslDatasetPhys {
    /// Decodes the bonus of a DSL dataset (at least 320 bytes; more are ignored).
    pub fn decode(bonus: &[u8], order: ByteOrder) -> Result<DslDatasetPhys, BonusTooShort> {
        let w: [u64; 40] = bonus_words(bonus, order, "dsl_dataset_phys_t", DSL_DATASET_PHYS_SIZE)?;
        let mut bp = [0u8; BLKPTR_SIZE];
        bp.copy_from_slice(&bonus[DS_BP_OFFSET..DS_BP_OFFSET + BLKPTR_SIZE]);
        let mut pad = [0u64; 5];
        pad.copy_from_slice(&w[35..40]);
        Ok(DslDatasetPhys {
            dir_obj: w[0],
            prev_snap_obj: w[1],
            prev_snap_txg: w[2],
            next_snap_obj: w[3],
            snapnames_zapobj: w[4],
            num_children: w[5],
            creation_time: w[6],
            creation_txg: w[7],
            deadlist_obj: w[8],
            referenced_bytes: w[9],
            compressed_bytes: w[10],
            uncompressed_bytes: w[11],
            unique_bytes: w[12],
            fsid_guid: w[13],
            guid: w[14],
            flags: w[15],
            bp,
            next_clones_obj: w[32],
            props_obj: w[33],
            userrefs_obj: w[34],
            pad,
        })
    }

    /// Encodes the 320 bytes in `order` (the inverse of `decode`; `bp` is copied as is).
    pub fn encode(&self, order: ByteOrder) -> [u8; DSL_DATASET_PHYS_SIZE] {
        let mut w = [0u64; 40];
        w[..16].copy_from_slice(&[
            self.dir_obj,
            self.prev_snap_obj,
            self.prev_snap_txg,
            self.next_snap_obj,
            self.snapnames_zapobj,
            self.num_children,
            self.creation_time,
            self.creation_txg,
            self.deadlist_obj,
            self.referenced_bytes,
            self.compressed_bytes,
            self.uncompressed_bytes,
            self.unique_bytes,
            self.fsid_guid,
            self.guid,
            self.flags,
        ]);
        w[32] = self.next_clones_obj;
        w[33] = self.props_obj;
        w[34] = self.userrefs_obj;
        w[35..].copy_from_slice(&self.pad);
        let mut out: [u8; DSL_DATASET_PHYS_SIZE] = words_to_bytes(&w, order);
        out[DS_BP_OFFSET..DS_BP_OFFSET + BLKPTR_SIZE].copy_from_slice(&self.bp);
        out
    }

    /// A snapshot: it has children in the snapshot chain (OpenZFS's `ds_is_snapshot`, set
    /// from `ds_num_children != 0` when the dataset is held).
    pub fn is_snapshot(&self) -> bool {
        self.num_children != 0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dsl::openzfs::{swap_words, unhex};

    /// The bonus of MOS object 53 (the head dataset of `testpool_zstd`) of OpenZFS's
    /// testpool_zstd fixture (little-endian).
    pub(crate) const ROOT_DATASET_LE: &str = "\
        20000000000000008000000000000000010000000000000000000000000000003600000000000000\
        00000000000000006d7c9b6000000000010000000000000037000000000000000064000000000000\
        003200000000000000340000000000000064000000000000670ea8daa1837b00802faef0b4d2566f\
        04000000000000000100000000000000fc0000000000000001000000000000007301020000000000\
        00000000000000000000000000000000070000000f070b8000000000000000000000000000000000\
        0000000000000000e6020000000000000b00000000000000fc83266c0e0000006522e81947050000\
        ecf9ad90f9010100dbc51eef622d2200000000000000000000000000000000000000000000000000\
        00000000000000000000000000000000000000000000000000000000000000000000000000000000";

    // Why: the head dataset's bonus holds the object set's block pointer; every field
    // around it, and the 128 raw bytes themselves, must come out where OpenZFS put them.
    #[test]
    fn golden_head_dataset_decodes_in_both_orders() {
        let mut le = unhex(ROOT_DATASET_LE);
        le.resize(DSL_DATASET_PHYS_SIZE, 0);
        let d = DslDatasetPhys::decode(&le, ByteOrder::Little).unwrap();
        assert_eq!((d.dir_obj, d.prev_snap_obj, d.prev_snap_txg), (32, 128, 1));
        assert_eq!((d.snapnames_zapobj, d.num_children), (54, 0));
        assert_eq!((d.creation_txg, d.deadlist_obj), (1, 55));
        assert_eq!(d.referenced_bytes, 25 << 10);
        assert_eq!(d.flags, DS_FLAG_UNIQUE_ACCURATE);
        assert!(!d.is_snapshot());
        assert_eq!(&d.bp[..], &le[DS_BP_OFFSET..DS_BP_OFFSET + BLKPTR_SIZE]);
        // DVA[0] of the object set: vdev 0, 1 sector allocated.
        assert_eq!(ByteOrder::Little.u64_at(&d.bp, 0), Ok(1));
        assert_eq!(&d.encode(ByteOrder::Little)[..], &le[..]);
        let mut be = swap_words(&le);
        // The block pointer is raw: the encoder copies it, so put it back unswapped.
        be[DS_BP_OFFSET..DS_BP_OFFSET + BLKPTR_SIZE].copy_from_slice(&d.bp);
        let b = DslDatasetPhys::decode(&be, ByteOrder::Big).unwrap();
        assert_eq!(b, d);
        assert_eq!(&b.encode(ByteOrder::Big)[..], &be[..]);
        assert!(DslDatasetPhys::decode(&le[..319], ByteOrder::Little).is_err());
    }
}
