//! Space allocation for the engine: the metaslab crate's allocator plus the persistence of
//! its space maps as MOS objects (OpenZFS `metaslab.c`, `space_map.c`).
//!
//! Each top-level vdev has a metaslab array object (one u64 per metaslab: the object number
//! of its space map, 0 = none yet). A space map object is OpenZFS's (`zetta_metaslab::
//! space_map`): a `space_map_phys_t` bonus and `smp_length` bytes of entry words appended
//! each sync pass of a txg (`Spa::sync_space_maps`); a condense (pass 1 only) rewrites it
//! whole. Every allocation is recorded, the MOS's own blocks and the space maps' blocks
//! included (format 16), so the maps synced in txg N describe exactly the space N's tree
//! references plus what is deferred-free (OpenZFS's `zdb -bcc`: "No leaks"). Writing the
//! maps dirties the MOS, whose sync allocates again: `spa::txg` ("sync passes") repeats
//! maps and MOS until a pass leaves nothing for the maps, with blocks born in the txg
//! overwritten in place from pass 2 so that the passes converge. Frees reach the maps in
//! the txg (or pass) that frees and stay deferred in memory for two txgs (`ms_defer`).

pub use zetta_metaslab::{MetaslabClass as Allocator, MetaslabGroup, SpaceMapEntry};
