//! Zetta: the ZFS storage system rebuilt in Rust, in userspace.
//!
//! Layers, bottom up (see docs/ARCHITECTURE.md): `io` (block devices) → `vdev` (labels,
//! mirror, raidz) → `zio` (block pointers and the checksum/compress/allocate pipeline) →
//! `metaslab` (space) → `dmu` (objects and object sets) → `spa` (pools, txgs, uberblocks;
//! the MOS is a `dmu` object set).

pub mod dmu;
pub mod io;
pub mod metaslab;
pub mod nvlist;
pub mod rand;
pub mod spa;
pub mod types;
pub mod vdev;
pub mod zap;
pub mod zio;
