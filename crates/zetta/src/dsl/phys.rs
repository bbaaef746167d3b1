//! On-disk records of the dataset layer, kept in the bonus buffers of MOS objects (OpenZFS
//! `dsl_dir_phys_t`, `dsl_dataset_phys_t`).
//!
//! A DSL dir is a place in the dataset hierarchy (`pool/a/b`): its children by name, its
//! properties, and its head dataset. A DSL dataset is one version of a dir's contents: the
//! head (live filesystem) or, later, a snapshot. Both are little-endian, 256 bytes:
//!
//! ```text
//! dsl_dir:      0 head_dataset u64   8 parent_dir u64 (0 = the pool's root dir)
//!              16 child_dir_zap u64 (name -> dir object)  24 props_zap u64 (name -> bytes)
//!              32 creation_time u64  40 origin_snapshot u64 (clones)
//!              48 used_bytes u64     56 compressed_bytes u64  64 uncompressed_bytes u64
//!              72 used_breakdown [u64; 5]: head, snap, child, child_rsrv, refrsrv
//!             112 quota_bytes u64   120 reserved_bytes u64 (reservation)
//!             128 refquota_bytes u64 136 refreserved_bytes u64 (its head's)  144..256 zero
//! dsl_dataset:  0 objset block pointer (128 bytes)
//!             128 dir u64           136 prev_snap u64     144 prev_snap_txg u64
//!             152 snapnames_zap u64 160 referenced_bytes u64
//!             168 creation_txg u64  176 creation_time u64 184 guid u64
//!             192 deadlist u64      200 flags u64         208 bookmarks_zap u64
//!             216 holds_zap u64 (snapshots: tag -> [time])
//!             224 compressed_bytes u64  232 uncompressed_bytes u64
//!             240 unique_bytes u64 (heads: born since the newest snapshot)  248 zero
//! ```
//! A dir's space fields are OpenZFS's `dd_used_bytes`, `dd_compressed_bytes`,
//! `dd_uncompressed_bytes` and `dd_used_breakdown` (see `dsl::space`); the four limits
//! are copies of the `quota`, `reservation`, `refquota` and `refreservation` properties
//! (0 = none), kept in step by `zfs set`, so that commits and write checks never read the
//! property ZAP. Format version 2 wrote zeros there; import rebuilds them (`dsl::space_audit`).
//! Decoding validates the block pointer; the object numbers are checked where they are
//! followed.

use crate::zio::blkptr::{BlkptrDecodeError, BlockPointer, BLKPTR_SIZE_BYTES};

pub const DSL_PHYS_SIZE_BYTES: usize = 256;

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

fn put(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Where a dir's USED comes from (OpenZFS `dd_used_t`): index into `used_breakdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsedKind {
    /// The head's blocks born after the dir's origin (USEDDS).
    Head = 0,
    /// Blocks only snapshots hold, born after the origin (USEDSNAP).
    Snap = 1,
    /// Children's USED (USEDCHILD, with `ChildRsrv`).
    Child = 2,
    /// Children's reservations beyond their USED.
    ChildRsrv = 3,
    /// The head's refreservation beyond its unique bytes (USEDREFRESERV).
    Refrsrv = 4,
}

pub const USED_KIND_COUNT: usize = 5;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DslDirPhys {
    pub head_dataset: u64,
    pub parent_dir: u64,
    pub child_dir_zap: u64,
    pub props_zap: u64,
    pub creation_time: u64,
    pub origin_snapshot: u64,
    pub used_bytes: u64,
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
    pub used_breakdown: [u64; USED_KIND_COUNT],
    pub quota_bytes: u64,
    pub reserved_bytes: u64,
    pub refquota_bytes: u64,
    pub refreserved_bytes: u64,
}

impl DslDirPhys {
    pub fn used(&self, kind: UsedKind) -> u64 {
        self.used_breakdown[kind as usize]
    }
}

impl DslDirPhys {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; DSL_PHYS_SIZE_BYTES];
        put(&mut out, 0, self.head_dataset);
        put(&mut out, 8, self.parent_dir);
        put(&mut out, 16, self.child_dir_zap);
        put(&mut out, 24, self.props_zap);
        put(&mut out, 32, self.creation_time);
        put(&mut out, 40, self.origin_snapshot);
        put(&mut out, 48, self.used_bytes);
        put(&mut out, 56, self.compressed_bytes);
        put(&mut out, 64, self.uncompressed_bytes);
        for (index, value) in self.used_breakdown.iter().enumerate() {
            put(&mut out, 72 + 8 * index, *value);
        }
        put(&mut out, 112, self.quota_bytes);
        put(&mut out, 120, self.reserved_bytes);
        put(&mut out, 128, self.refquota_bytes);
        put(&mut out, 136, self.refreserved_bytes);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<DslDirPhys, BlkptrDecodeError> {
        if bytes.len() < DSL_PHYS_SIZE_BYTES {
            return Err(BlkptrDecodeError(format!(
                "dsl dir record of {} bytes",
                bytes.len()
            )));
        }
        Ok(DslDirPhys {
            head_dataset: word(bytes, 0),
            parent_dir: word(bytes, 8),
            child_dir_zap: word(bytes, 16),
            props_zap: word(bytes, 24),
            creation_time: word(bytes, 32),
            origin_snapshot: word(bytes, 40),
            used_bytes: word(bytes, 48),
            compressed_bytes: word(bytes, 56),
            uncompressed_bytes: word(bytes, 64),
            used_breakdown: std::array::from_fn(|index| word(bytes, 72 + 8 * index)),
            quota_bytes: word(bytes, 112),
            reserved_bytes: word(bytes, 120),
            refquota_bytes: word(bytes, 128),
            refreserved_bytes: word(bytes, 136),
        })
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DslDatasetPhys {
    pub bp: BlockPointer,
    pub dir: u64,
    pub prev_snap: u64,
    pub prev_snap_txg: u64,
    pub snapnames_zap: u64,
    pub referenced_bytes: u64,
    pub creation_txg: u64,
    pub creation_time: u64,
    pub guid: u64,
    pub deadlist: u64,
    pub flags: u64,
    /// Head only: name -> [guid, creation txg, creation time] of each bookmark.
    pub bookmarks_zap: u64,
    /// Snapshot only: user holds, tag -> [creation time]; a held snapshot is not destroyed.
    pub holds_zap: u64,
    /// Sum of the physical (compressed) sizes of the blocks it references.
    pub compressed_bytes: u64,
    /// Sum of their logical sizes (`logicalreferenced`).
    pub uncompressed_bytes: u64,
    /// Head only: bytes of its blocks born after its previous snapshot (what no snapshot
    /// shares; what a refreservation is measured against).
    pub unique_bytes: u64,
}

impl DslDatasetPhys {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; DSL_PHYS_SIZE_BYTES];
        self.bp.encode(&mut out[..BLKPTR_SIZE_BYTES]);
        for (at, value) in [
            (128, self.dir),
            (136, self.prev_snap),
            (144, self.prev_snap_txg),
            (152, self.snapnames_zap),
            (160, self.referenced_bytes),
            (168, self.creation_txg),
            (176, self.creation_time),
            (184, self.guid),
            (192, self.deadlist),
            (200, self.flags),
            (208, self.bookmarks_zap),
            (216, self.holds_zap),
            (224, self.compressed_bytes),
            (232, self.uncompressed_bytes),
            (240, self.unique_bytes),
        ] {
            put(&mut out, at, value);
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<DslDatasetPhys, BlkptrDecodeError> {
        if bytes.len() < DSL_PHYS_SIZE_BYTES {
            return Err(BlkptrDecodeError(format!(
                "dsl dataset record of {} bytes",
                bytes.len()
            )));
        }
        Ok(DslDatasetPhys {
            bp: BlockPointer::decode(&bytes[..BLKPTR_SIZE_BYTES])?,
            dir: word(bytes, 128),
            prev_snap: word(bytes, 136),
            prev_snap_txg: word(bytes, 144),
            snapnames_zap: word(bytes, 152),
            referenced_bytes: word(bytes, 160),
            creation_txg: word(bytes, 168),
            creation_time: word(bytes, 176),
            guid: word(bytes, 184),
            deadlist: word(bytes, 192),
            flags: word(bytes, 200),
            bookmarks_zap: word(bytes, 208),
            holds_zap: word(bytes, 216),
            compressed_bytes: word(bytes, 224),
            uncompressed_bytes: word(bytes, 232),
            unique_bytes: word(bytes, 240),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden bytes: both records are on-disk format (MOS bonus buffers).
    #[test]
    fn golden_records() {
        let dir = DslDirPhys {
            head_dataset: 4,
            parent_dir: 0,
            child_dir_zap: 6,
            props_zap: 7,
            creation_time: 1_700_000_000,
            origin_snapshot: 0,
            used_bytes: 0x0102,
            compressed_bytes: 0x0304,
            uncompressed_bytes: 0x0506,
            used_breakdown: [0x10, 0x11, 0x12, 0x13, 0x14],
            quota_bytes: 0x20,
            reserved_bytes: 0x21,
            refquota_bytes: 0x22,
            refreserved_bytes: 0x23,
        };
        let bytes = dir.encode();
        assert_eq!(bytes[0], 4);
        assert_eq!(bytes[16], 6);
        assert_eq!(bytes[24], 7);
        assert_eq!(&bytes[32..40], &1_700_000_000u64.to_le_bytes());
        assert_eq!(&bytes[48..50], &[0x02, 0x01]);
        assert_eq!(bytes[56], 0x04);
        assert_eq!(bytes[64], 0x06);
        let breakdown: Vec<u8> = (0..5).map(|i| bytes[72 + 8 * i]).collect();
        assert_eq!(breakdown, [0x10, 0x11, 0x12, 0x13, 0x14]);
        assert_eq!(
            [bytes[112], bytes[120], bytes[128], bytes[136]],
            [0x20, 0x21, 0x22, 0x23]
        );
        assert!(bytes[144..].iter().all(|b| *b == 0));
        assert_eq!(DslDirPhys::decode(&bytes).unwrap(), dir);
        let dataset = DslDatasetPhys {
            dir: 5,
            referenced_bytes: 4096,
            creation_txg: 4,
            guid: 0xabcd,
            compressed_bytes: 0x31,
            uncompressed_bytes: 0x32,
            unique_bytes: 0x33,
            ..DslDatasetPhys::default()
        };
        let bytes = dataset.encode();
        assert!(
            bytes[..128].iter().all(|b| *b == 0),
            "a hole objset pointer"
        );
        assert_eq!(bytes[128], 5);
        assert_eq!(&bytes[160..168], &4096u64.to_le_bytes());
        assert_eq!(&bytes[184..192], &0xabcdu64.to_le_bytes());
        assert_eq!([bytes[224], bytes[232], bytes[240]], [0x31, 0x32, 0x33]);
        assert!(bytes[248..].iter().all(|b| *b == 0));
        assert_eq!(DslDatasetPhys::decode(&bytes).unwrap(), dataset);
        assert!(DslDatasetPhys::decode(&bytes[..100]).is_err());
    }
}
