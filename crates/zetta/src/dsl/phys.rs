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
//!              32 creation_time u64  40 origin_snapshot u64 (clones)  48..256 reserved
//! dsl_dataset:  0 objset block pointer (128 bytes)
//!             128 dir u64           136 prev_snap u64     144 prev_snap_txg u64
//!             152 snapnames_zap u64 160 referenced_bytes u64
//!             168 creation_txg u64  176 creation_time u64 184 guid u64
//!             192 deadlist u64      200 flags u64         208 bookmarks_zap u64
//!             216 holds_zap u64 (snapshots: tag -> [time])   224..256 reserved
//! ```
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

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DslDirPhys {
    pub head_dataset: u64,
    pub parent_dir: u64,
    pub child_dir_zap: u64,
    pub props_zap: u64,
    pub creation_time: u64,
    pub origin_snapshot: u64,
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
        };
        let bytes = dir.encode();
        assert_eq!(bytes[0], 4);
        assert_eq!(bytes[16], 6);
        assert_eq!(bytes[24], 7);
        assert_eq!(&bytes[32..40], &1_700_000_000u64.to_le_bytes());
        assert_eq!(DslDirPhys::decode(&bytes).unwrap(), dir);
        let dataset = DslDatasetPhys {
            dir: 5,
            referenced_bytes: 4096,
            creation_txg: 4,
            guid: 0xabcd,
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
        assert_eq!(DslDatasetPhys::decode(&bytes).unwrap(), dataset);
        assert!(DslDatasetPhys::decode(&bytes[..100]).is_err());
    }
}
