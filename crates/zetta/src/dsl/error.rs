//! Errors of the dataset layer: one variant per condition the DSL refuses, with the data a
//! message needs (names, the dependents) and no sentence inside.
//!
//! Theory. OpenZFS's DSL (`dsl_dir.c`, `dsl_dataset.c`, `dsl_destroy.c`, `dsl_userhold.c`,
//! `dsl_bookmark.c`) answers an errno (ENOENT, EEXIST, EBUSY, EXDEV, ESRCH, ...) and libzfs
//! turns the errno and the operation it ran into "cannot <verb> '<name>': <reason>". Here the
//! variant is the errno with its data ([`DslError::errno`] names it); the operation is known
//! to the caller alone, so every user-facing text lives in the CLI (`zetta-cli`'s
//! `zfs/errors.rs`, libzfs's role). `Display` is a short description for developers (logs,
//! test failures) and is never printed to users.
//!
//! Layering. The DSL's functions are methods of `Spa`, and their lower-layer failures (I/O,
//! damaged metadata, a full pool) are already `SpaError`s; a DSL refusal travels up as
//! `SpaError::Dsl(DslError)`, so the `Spa` methods the CLI calls keep one error type and a
//! caller matches `Err(SpaError::Dsl(DslError::Exists { .. }))`. `DslError` does not wrap
//! `SpaError` in turn (that would make the two types recursive).

use std::fmt;

/// A condition the dataset layer refuses (OpenZFS: the errno of a `dsl_*` check function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DslError {
    /// ENOENT: no filesystem or snapshot of that name.
    NoSuchDataset { name: String },
    /// ENOENT: the parent of a new dataset's name (create, clone, rename) does not exist.
    NoParent { name: String },
    /// EEXIST: a filesystem or snapshot of that name exists.
    Exists { name: String },
    /// EINVAL: a name without `@` where a snapshot is needed.
    NotSnapshot { name: String },
    /// EINVAL: a name without `#` where a bookmark is needed.
    NotBookmark { name: String },
    /// EINVAL: an empty component or a hierarchy deeper than `NESTING_MAX`.
    InvalidName { name: String },
    /// EXDEV: a name in another pool than the one asked (`pool`).
    NotInPool { name: String, pool: String },
    /// EBUSY: a dataset held by the very set being destroyed (no order destroys it).
    Busy { name: String },
    /// EINVAL: the operation does not apply to a pool's root dataset.
    PoolRoot { name: String },
    /// EINVAL (`zfs_deleg_verify_nvlist`): a delegation entry whose who-key or permission
    /// name OpenZFS would not store (`dsl::deleg`).
    InvalidDelegation { name: String },
    /// EINVAL: a filesystem renamed below itself.
    DescendantOfSelf { from: String, to: String },
    /// EXDEV: a filesystem renamed into another pool.
    CrossPool { from: String, to: String },
    /// EXDEV: a snapshot renamed into another filesystem.
    CrossDataset { from: String, to: String },
    /// ZFS_ERR_BOOKMARK_SOURCE_NOT_ANCESTOR: a bookmark outside the snapshot's filesystem.
    BookmarkNotAncestor { snapshot: String, bookmark: String },
    /// EXDEV (libzfs `zfs_snapshot_nvl`): two snapshots of one filesystem in one request.
    SameFilesystemTwice { name: String },
    /// EEXIST (`dsl_destroy_head_check`): a filesystem with children or snapshots.
    HasChildren { name: String, children: Vec<String> },
    /// EEXIST (`dsl_destroy_snapshot_check`): a snapshot that clones depend on.
    HasClones {
        snapshot: String,
        clones: Vec<String>,
    },
    /// EBUSY: a snapshot with user holds (`tags`).
    Held { snapshot: String, tags: Vec<String> },
    /// EXDEV (`dsl_dataset_rollback_check`): a rollback to a snapshot that is not the
    /// newest; `newer` are the snapshots after it, oldest first.
    NotLatest {
        snapshot: String,
        newer: Vec<String>,
    },
    /// ENOSPC charged to one dataset (a snapshot taking over a refreservation's blocks).
    NoSpace { name: String },
    /// EEXIST (`dsl_dataset_user_hold_check`): the tag is already on the snapshot.
    HoldExists { snapshot: String, tag: String },
    /// ESRCH (`dsl_dataset_user_release_check`): the tag is not on the snapshot.
    NoSuchHold { snapshot: String, tag: String },
    /// EEXIST (`dsl_bookmark_create_check`).
    BookmarkExists { name: String },
    /// ENOENT: no bookmark of that name.
    NoSuchBookmark { name: String },
    /// ENOTSUP (`dsl_bookmark_create_check`): the pool's feature `bookmarks` is not
    /// enabled (`zpool create -d`, a legacy version).
    BookmarksDisabled { name: String },
    /// EINVAL (libzfs `zfs_promote`, EZFS_BADTYPE): promote of a filesystem with no origin.
    NotClone { name: String },
    /// EEXIST (`dsl_dataset_promote_check`): a snapshot or bookmark that would move to the
    /// clone `name` has the name `snapshot` there already; `origin` is the clone's origin.
    PromoteConflict {
        name: String,
        snapshot: String,
        origin: String,
    },
    /// ENOTSUP: the object sets of an imported OpenZFS pool are not served as Zetta's yet.
    ForeignPool,
    /// A sync task's result asked before its txg committed (a caller's mistake).
    TaskNotRun,
}

impl DslError {
    /// The errno OpenZFS's DSL returns for this condition.
    pub fn errno(&self) -> i32 {
        match self {
            DslError::NoSuchDataset { .. }
            | DslError::NoParent { .. }
            | DslError::NoSuchBookmark { .. } => libc::ENOENT,
            DslError::Exists { .. }
            | DslError::HasChildren { .. }
            | DslError::HasClones { .. }
            | DslError::HoldExists { .. }
            | DslError::BookmarkExists { .. }
            | DslError::PromoteConflict { .. } => libc::EEXIST,
            DslError::NotSnapshot { .. }
            | DslError::NotBookmark { .. }
            | DslError::InvalidName { .. }
            | DslError::PoolRoot { .. }
            | DslError::InvalidDelegation { .. }
            | DslError::DescendantOfSelf { .. }
            | DslError::NotClone { .. }
            | DslError::TaskNotRun => libc::EINVAL,
            DslError::NotInPool { .. }
            | DslError::CrossPool { .. }
            | DslError::CrossDataset { .. }
            | DslError::BookmarkNotAncestor { .. }
            | DslError::SameFilesystemTwice { .. }
            | DslError::NotLatest { .. } => libc::EXDEV,
            DslError::Held { .. } | DslError::Busy { .. } => libc::EBUSY,
            DslError::NoSpace { .. } => libc::ENOSPC,
            DslError::NoSuchHold { .. } => libc::ESRCH,
            DslError::ForeignPool | DslError::BookmarksDisabled { .. } => libc::ENOTSUP,
        }
    }
}

impl fmt::Display for DslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DslError::NoSuchDataset { name } => write!(f, "no dataset {name}"),
            DslError::NoParent { name } => write!(f, "no parent for {name}"),
            DslError::Exists { name } => write!(f, "{name} exists"),
            DslError::NotSnapshot { name } => write!(f, "{name}: no '@'"),
            DslError::NotBookmark { name } => write!(f, "{name}: no '#'"),
            DslError::InvalidName { name } => write!(f, "invalid name {name}"),
            DslError::NotInPool { name, pool } => write!(f, "{name} outside pool {pool}"),
            DslError::PoolRoot { name } => write!(f, "{name} is a pool's root dataset"),
            DslError::InvalidDelegation { name } => {
                write!(f, "invalid delegation entry for {name}")
            }
            DslError::NotClone { name } => write!(f, "{name} has no origin"),
            DslError::PromoteConflict {
                name,
                snapshot,
                origin,
            } => write!(f, "{name} has {snapshot} already (origin {origin})"),
            DslError::Busy { name } => write!(f, "{name} is busy"),
            DslError::DescendantOfSelf { from, to } => write!(f, "{to} is below {from}"),
            DslError::CrossPool { from, to } => write!(f, "{from} -> {to} across pools"),
            DslError::CrossDataset { from, to } => {
                write!(f, "{from} -> {to} across filesystems")
            }
            DslError::BookmarkNotAncestor { snapshot, bookmark } => {
                write!(f, "{bookmark} not in the filesystem of {snapshot}")
            }
            DslError::SameFilesystemTwice { name } => write!(f, "two snapshots of {name}"),
            DslError::HasChildren { name, children } => {
                write!(f, "{name} has {} children", children.len())
            }
            DslError::HasClones { snapshot, clones } => {
                write!(f, "{snapshot} has {} clones", clones.len())
            }
            DslError::Held { snapshot, tags } => write!(f, "{snapshot} held by {tags:?}"),
            DslError::NotLatest { snapshot, newer } => {
                write!(f, "{snapshot} has {} newer snapshots", newer.len())
            }
            DslError::NoSpace { name } => write!(f, "no space for {name}"),
            DslError::HoldExists { snapshot, tag } => write!(f, "{snapshot} held by {tag}"),
            DslError::NoSuchHold { snapshot, tag } => write!(f, "{snapshot} not held by {tag}"),
            DslError::BookmarkExists { name } => write!(f, "bookmark {name} exists"),
            DslError::NoSuchBookmark { name } => write!(f, "no bookmark {name}"),
            DslError::BookmarksDisabled { name } => {
                write!(f, "{name}: bookmark feature not enabled")
            }
            DslError::ForeignPool => write!(f, "OpenZFS pool's object sets"),
            DslError::TaskNotRun => write!(f, "sync task result before its txg committed"),
        }
    }
}

impl std::error::Error for DslError {}

impl From<DslError> for crate::spa::SpaError {
    fn from(e: DslError) -> Self {
        crate::spa::SpaError::Dsl(e)
    }
}
