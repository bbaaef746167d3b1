//! zetta-zutil: the text that `zpool` and `zfs` print, byte for byte as OpenZFS prints it.
//!
//! Counterpart: OpenZFS `lib/libzutil` (number formatting) and the printing halves of
//! `cmd/zpool/zpool_main.c`, `cmd/zpool/zpool_vdev.c` and `cmd/zfs/zfs_main.c`.
//! This crate is pure: the CLI fills plain data structures from the engine and these
//! modules turn them into strings. Nothing here touches a pool, so every format is pinned
//! by golden tests that compare whole multi-line outputs with what OpenZFS prints.
//!
//! Reading order: `nicenum` (numbers and times), `list` (column tables), `status`,
//! `iostat`, `json` (the `-j` documents), `vdev_spec` (parsing `zpool create/add` vdev
//! words).

pub mod iostat;
pub mod json;
pub mod list;
pub mod nicenum;
pub mod status;
pub mod vdev_spec;
