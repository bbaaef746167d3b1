//! `dsl_dir_phys_t`: the bonus of a DSL directory object in the MOS (OpenZFS
//! `include/sys/dsl_dir.h`).
//!
//! A DSL dir is one name in the dataset tree (`tank`, `tank/a`): it points at its head
//! dataset, its parent dir, its child-dir ZAP (name → dir object) and its props ZAP, and it
//! carries the space accounting of everything below it. Thirty-two u64 words, 256 bytes,
//! in the byte order of the MOS block that holds the dnode:
//!
//! ```text
//! word  0 creation_time (unused)   1 head_dataset_obj   2 parent_obj   3 origin_obj
//!       4 child_dir_zapobj         5 used_bytes         6 compressed_bytes
//!       7 uncompressed_bytes       8 quota              9 reserved
//!      10 props_zapobj            11 deleg_zapobj      12 flags
//!   13-17 used_breakdown[HEAD, SNAP, CHILD, CHILD_RSRV, REFRSRV]
//!      18 clones (ZAP of clone dirs)   19-31 pad
//! ```
//!
//! `used_breakdown` is kept only when `flags` has `DD_FLAG_USED_BREAKDOWN` (pools older than
//! SPA version 13 leave it zero). Newer facts (filesystem/snapshot counts, the crypto key
//! object, livelists) live in the dir's object as a ZAP ("extensified" dirs): the `FIELD_*`
//! names below.

use super::{bonus_words, BonusTooShort};
use crate::byteorder::ByteOrder;

/// Bytes of a `dsl_dir_phys_t`.
pub const DSL_DIR_PHYS_SIZE: usize = 256;

/// `dd_flags`: `dd_used_breakdown` is maintained.
pub const DD_FLAG_USED_BREAKDOWN: u64 = 1 << 0;

/// `dd_used_t`: the indices of `used_breakdown`.
pub const DD_USED_HEAD: usize = 0;
pub const DD_USED_SNAP: usize = 1;
pub const DD_USED_CHILD: usize = 2;
pub const DD_USED_CHILD_RSRV: usize = 3;
pub const DD_USED_REFRSRV: usize = 4;
/// How many `dd_used_t` kinds there are.
pub const DD_USED_NUM: usize = 5;

/// Entries of an extensified dir's own ZAP.
pub const FIELD_FILESYSTEM_COUNT: &str = "com.joyent:filesystem_count";
pub const FIELD_SNAPSHOT_COUNT: &str = "com.joyent:snapshot_count";
pub const FIELD_CRYPTO_KEY_OBJ: &str = "com.datto:crypto_key_obj";
pub const FIELD_LIVELIST: &str = "com.delphix:livelist";
pub const FIELD_SNAPSHOTS_CHANGED: &str = "com.ixsystems:snapshots_changed";

/// A decoded `dsl_dir_phys_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DslDirPhys {
    pub creation_time: u64,
    pub head_dataset_obj: u64,
    pub parent_obj: u64,
    pub origin_obj: u64,
    pub child_dir_zapobj: u64,
    pub used_bytes: u64,
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
    pub quota: u64,
    pub reserved: u64,
    pub props_zapobj: u64,
    pub deleg_zapobj: u64,
    pub flags: u64,
    pub used_breakdown: [u64; DD_USED_NUM],
    pub clones: u64,
    /// The 13 pad words, kept so a re-encoder can write back what it read.
    pub pad: [u64; 13],
}

impl DslDirPhys {
    /// Decodes the bonus of a DSL dir (at least 256 bytes; more are ignored).
    pub fn decode(bonus: &[u8], order: ByteOrder) -> Result<DslDirPhys, BonusTooShort> {
        let w: [u64; 32] = bonus_words(bonus, order, "dsl_dir_phys_t", DSL_DIR_PHYS_SIZE)?;
        let mut used_breakdown = [0u64; DD_USED_NUM];
        used_breakdown.copy_from_slice(&w[13..18]);
        let mut pad = [0u64; 13];
        pad.copy_from_slice(&w[19..32]);
        Ok(DslDirPhys {
            creation_time: w[0],
            head_dataset_obj: w[1],
            parent_obj: w[2],
            origin_obj: w[3],
            child_dir_zapobj: w[4],
            used_bytes: w[5],
            compressed_bytes: w[6],
            uncompressed_bytes: w[7],
            quota: w[8],
            reserved: w[9],
            props_zapobj: w[10],
            deleg_zapobj: w[11],
            flags: w[12],
            used_breakdown,
            clones: w[18],
            pad,
        })
    }

    /// Encodes the 256 bytes in `order` (the inverse of `decode`).
    pub fn encode(&self, order: ByteOrder) -> [u8; DSL_DIR_PHYS_SIZE] {
        let mut w = [0u64; 32];
        w[..13].copy_from_slice(&[
            self.creation_time,
            self.head_dataset_obj,
            self.parent_obj,
            self.origin_obj,
            self.child_dir_zapobj,
            self.used_bytes,
            self.compressed_bytes,
            self.uncompressed_bytes,
            self.quota,
            self.reserved,
            self.props_zapobj,
            self.deleg_zapobj,
            self.flags,
        ]);
        w[13..18].copy_from_slice(&self.used_breakdown);
        w[18] = self.clones;
        w[19..].copy_from_slice(&self.pad);
        words_to_bytes(&w, order)
    }

    /// Whether `used_breakdown` is maintained.
    pub fn has_used_breakdown(&self) -> bool {
        self.flags & DD_FLAG_USED_BREAKDOWN != 0
    }
}

pub(crate) fn words_to_bytes<const B: usize>(words: &[u64], order: ByteOrder) -> [u8; B] {
    let mut out = [0u8; B];
    for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&match order {
            ByteOrder::Little => w.to_le_bytes(),
            ByteOrder::Big => w.to_be_bytes(),
        });
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dsl::openzfs::{swap_words, unhex};

    /// The bonus of MOS object 32 (the root DSL dir) of OpenZFS's testpool_zstd fixture
    /// (little-endian); zdb prints head_dataset_obj = 53, origin_obj = 128,
    /// child_dir_zapobj = 34, props_zapobj = 33, flags = 1, used_breakdown[HEAD] = 25K,
    /// [CHILD] = 641K.
    pub(crate) const ROOT_DIR_LE: &str = "\
        6d7c9b60000000003500000000000000000000000000000080000000000000002200000000000000\
        00680a00000000000010080000000000007e11000000000000000000000000000000000000000000\
        21000000000000000000000000000000010000000000000000640000000000000000000000000000\
        00040a00000000000000000000000000000000000000000000000000000000000000000000000000\
        00000000000000000000000000000000000000000000000000000000000000000000000000000000\
        00000000000000000000000000000000000000000000000000000000000000000000000000000000\
        00000000000000000000000000000000";

    // Why: the DSL dir is how an import finds every filesystem; golden bytes from a real
    // pool pin the field order, and the same words swapped must decode alike big-endian.
    #[test]
    fn golden_root_dir_decodes_in_both_orders() {
        let mut le = unhex(ROOT_DIR_LE);
        le.resize(DSL_DIR_PHYS_SIZE, 0);
        let d = DslDirPhys::decode(&le, ByteOrder::Little).unwrap();
        assert_eq!(d.creation_time, 0x609b_7c6d);
        assert_eq!(
            (
                d.head_dataset_obj,
                d.parent_obj,
                d.origin_obj,
                d.child_dir_zapobj
            ),
            (53, 0, 128, 34)
        );
        assert_eq!((d.props_zapobj, d.deleg_zapobj, d.flags), (33, 0, 1));
        assert!(d.has_used_breakdown());
        assert_eq!(d.used_breakdown[DD_USED_HEAD], 25 << 10);
        assert_eq!(d.used_breakdown[DD_USED_CHILD], 641 << 10);
        assert_eq!(d.used_bytes, d.used_breakdown.iter().sum::<u64>());
        assert_eq!(&d.encode(ByteOrder::Little)[..], &le[..]);
        let be = swap_words(&le);
        assert_eq!(DslDirPhys::decode(&be, ByteOrder::Big).unwrap(), d);
        assert_eq!(&d.encode(ByteOrder::Big)[..], &be[..]);
        assert!(DslDirPhys::decode(&le[..255], ByteOrder::Little).is_err());
    }
}
