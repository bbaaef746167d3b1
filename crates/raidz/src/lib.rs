//! zetta-raidz: RAID-Z geometry and parity math, pure functions, no I/O.
//!
//! ZFS counterpart: vdev_raidz.c (map allocation, asize, parity generation
//! and reconstruction) and vdev_raidz_math*.c (the fast kernels).
//!
//! Theory. A raidz vdev stripes every block across its children as its own
//! variable-width stripe: `map` works out which child and child offset each
//! column of a block lives at, and how much space the block allocates;
//! `parity` computes the P/Q/R parity columns over GF(2^8) (`gf`) and
//! rebuilds up to `parity` missing columns, data or parity in any mix. The
//! engine's raidz vdev reads or writes the columns a map names; when some
//! children fail it passes `None` for their columns to
//! [`RaidzMap::reconstruct`] and then [`RaidzMap::assemble`]s the block.
//! Finding *which* column is silently bad (combinatorial reconstruction
//! checked against the block checksum) is the caller's loop over this API.
//!
//! Invariants: everything from outside (geometry, offsets, sizes, column
//! buffers) is validated and reported as [`RaidzError`]; maps are only built
//! by [`raidz_map`], so a `RaidzMap` always satisfies the layout invariants
//! listed in `map`.

mod error;
mod gf;
mod map;
mod parity;

pub use error::RaidzError;
pub use map::{
    raidz_asize, raidz_asize_checked, raidz_geometry_check, raidz_map, raidz_usable_capacity_bytes,
    RaidzColumn, RaidzMap, ASHIFT_MAX, ASHIFT_MIN, BLOCK_SIZE_MAX_BYTES, CHILDREN_MAX, PARITY_MAX,
};
