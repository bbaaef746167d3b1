//! zetta-metaslab: the in-memory space allocator of a pool and the encoding of its persistent
//! space maps (ZFS counterparts: metaslab.c, space_map.c, range_tree.c).
//!
//! Reading order: [`range_tree`] (sets of byte ranges) → [`space_map`] (OpenZFS's space map
//! objects: bonus and entry words) → [`metaslab`] (one slice of a vdev: free / recorded / deferred ranges) →
//! [`metaslab_group`] (all metaslabs of one top-level vdev) → [`allocator`] (the class that
//! spreads blocks over top-level vdevs in proportion to their free space).
//!
//! This crate does no I/O. The engine persists the [`SpaceMapUpdate`]s it takes each txg as one
//! append-only object per metaslab and replays them with [`MetaslabGroup::load`] at import.

pub mod allocator;
pub mod error;
pub mod metaslab;
pub mod metaslab_group;
pub mod range_tree;
pub mod space_map;

pub use allocator::MetaslabClass;
pub use error::MetaslabError;
pub use metaslab::Metaslab;
pub use metaslab_group::MetaslabGroup;
pub use range_tree::RangeTree;
pub use space_map::{
    decode_entries, decode_records, encode_records, encode_sync_records, MapType, SpaceMapEntry,
    SpaceMapGeometry, SpaceMapPhys, SpaceMapRecord, SpaceMapUpdate,
};
