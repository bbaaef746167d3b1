//! zetta-zprop: dataset properties and names, pure (no storage), as OpenZFS defines them.
//!
//! Counterpart: OpenZFS `module/zcommon/zfs_prop.c`, `zprop_common.c`, `zfs_namecheck.c`, the
//! property halves of `lib/libzfs/libzfs_dataset.c` and `libzfs_util.c`, the inheritance rules
//! of `module/zfs/dsl_prop.c`, and the sorting/filtering of `cmd/zfs/zfs_iter.c`.
//!
//! The dataset layer stores property entries and statistics; the `zfs` CLI parses arguments and
//! prints. Everything between — which properties exist, what values they accept (with the
//! exact error sentences sanoid/syncoid and admins see), how values print with and without
//! `-p`, what a dataset inherits and what SOURCE says, which names are legal, and the order
//! rows are listed in — lives here, so both sides agree byte for byte.
//!
//! Reading order: `zfs_prop` (the table, parsing, printing), `user_prop`, `namecheck`,
//! `inherit` (values and sources), `list_sort` (`-o`, `-s`, `-t`, `-d`).

pub mod inherit;
pub mod list_sort;
pub mod namecheck;
pub mod user_prop;
pub mod zfs_prop;

pub use inherit::{resolve, resolve_native, resolve_user, PropSource, PropStore, Resolved, Source};
pub use namecheck::NameError;
pub use zfs_prop::{
    format_value, parse_value, validate_set, DatasetType, PropError, PropValue, SetTarget,
    SetValue, TypeMask, ZfsProp, ZFS_GET_ALL_ORDER,
};
