//! The data management unit: objects made of block trees, grouped in object sets (OpenZFS
//! `dmu.c`). See `objset` for the tree and its copy-on-write sync, `dnode` for the format,
//! `tx` for transactions and the write throttle (`dmu_tx.c`).

pub mod block_space;
pub mod dnode;
pub mod objset;
pub mod openzfs;
pub mod tx;

pub use block_space::{BlockSpace, DatasetFeature};
pub use objset::{
    default_data_props, object_type, DmuError, IoCtx, ObjectSet, ObjsetPolicy, ObjsetType,
};

#[cfg(test)]
mod tests;
