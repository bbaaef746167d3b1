//! Space allocation for the engine: the metaslab crate's allocator plus the persistence of
//! its space maps as MOS objects (OpenZFS `metaslab.c`, `space_map.c`).
//!
//! Each top-level vdev has a metaslab array object (one u64 per metaslab: the object number
//! of its space map, 0 = none yet). A space map object is OpenZFS's (`zetta_metaslab::
//! space_map`): a `space_map_phys_t` bonus and `smp_length` bytes of entry words appended
//! each txg (`Spa::sync_space_maps`); a condense rewrites it whole. Only
//! allocations outside the MOS are recorded; import marks the MOS's own blocks in use by
//! walking it, which keeps space map updates from feeding on themselves.

pub use zetta_metaslab::{MetaslabClass as Allocator, MetaslabGroup, SpaceMapEntry};
