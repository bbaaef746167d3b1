//! OpenZFS's on-disk DMU structures, read-only: the dnode (`dnode`) and the object set
//! (`objset`), decoded from the bytes OpenZFS wrote, in the byte order it recorded.
//!
//! ZFS counterpart: `include/sys/dnode.h`, `include/sys/dmu_objset.h`, `module/zfs/dnode.c`,
//! `module/zfs/dbuf.c` (the block-id walk). Zetta's own formats (`crate::dmu::dnode`) are
//! untouched; these codecs are what an import of a real OpenZFS pool reads.
//!
//! Block pointers are opaque here: a `RawBlkptr` is the 128 bytes of a `blkptr_t`, and
//! whoever walks a block tree supplies a `BlockReader` that turns one into its block's logical
//! (decompressed) bytes. The few bits this layer needs itself (hole, byte order) are read
//! in `raw_bp_is_hole` and `raw_bp_byte_order`.

pub mod dnode;
pub mod objset;

pub use dnode::{
    object_type_name, raw_bp_byte_order, raw_bp_is_hole, BlockReader, DmuReadError, DnodeBlock,
    DnodeCorrupt, DnodePhys, RawBlkptr, BLKPTR_BYTES, DNODE_SLOT_BYTES,
};
pub use objset::{ObjsetPhys, ZIL_HEADER_BYTES};
