//! Zetta: the ZFS storage system rebuilt in Rust, in userspace.
//!
//! Layers, bottom up (see docs/ARCHITECTURE.md): `io` (block devices) → `vdev` (labels,
//! mirror, raidz) → `zio` (block pointers and the checksum/compress/allocate pipeline) →
//! `metaslab` (space) → `dmu` (objects and object sets) → `spa` (pools, txgs, uberblocks;
//! the MOS is a `dmu` object set).

#[macro_use]
mod macros {
    /// An `IoCtx` over a pool's pipeline and vdev tree (at its open txg unless given). A macro,
    /// not a method, so the borrow covers only those two fields and the pool's object sets stay
    /// mutable beside it.
    macro_rules! io_ctx {
        ($spa:expr) => {
            IoCtx {
                zio: &$spa.zio,
                root: &$spa.root,
                txg: $spa.open_txg,
            }
        };
        ($spa:expr, $txg:expr) => {
            IoCtx {
                zio: &$spa.zio,
                root: &$spa.root,
                txg: $txg,
            }
        };
    }
}

pub mod byteorder;
pub mod dataset_kstats;
pub mod dmu;
pub mod dmu_send;
pub mod dsl;
pub mod io;
pub mod metaslab;
pub mod nvlist;
pub mod nvpair_native;
pub mod nvpair_xdr;
pub mod rand;
pub mod spa;
pub mod tunables;
pub mod types;
pub mod vdev;
pub mod zap;
pub mod zil;
pub mod zio;
pub mod zpl;
pub mod zvol;
