//! Names of pools, datasets, snapshots and bookmarks: what is legal, and OpenZFS's sentence
//! for what is not.
//!
//! Counterpart: `module/zcommon/zfs_namecheck.c` (`entity_namecheck`, `pool_namecheck`,
//! `mountpoint_namecheck`, `get_dataset_depth`) and the messages of `zfs_validate_name`
//! (lib/libzfs/libzfs_dataset.c) and `zpool_name_valid` (lib/libzfs/libzfs_pool.c).
//!
//! Theory. A full name is `pool[/fs...][@snap | #bookmark]`, shorter than 256 bytes. Components
//! are made of letters, digits and `- _ . : ` (space included) and, outside names being
//! created, `%` (which marks temporary clone names). Components may not be empty, `.` or `..`;
//! at most one `@` or `#` may appear and nothing may follow it but one component (a `/` after it
//! reads as a trailing slash). The checks run in OpenZFS's order so the first complaint is the
//! same: delimiter expectations first, then `%`, then the scan of `entity_namecheck`. Sanoid's
//! `autosnap_2026-11-22_01:51:32_hourly` is legal because `-`, `_` and `:` are.

use crate::zfs_prop::TypeMask;
use std::fmt;

/// A full name must be shorter than this (ZFS_MAX_DATASET_NAME_LEN).
pub const ZFS_MAX_DATASET_NAME_LEN: usize = 256;
/// Default limit on `/` nesting (zfs_max_dataset_nesting).
pub const ZFS_MAX_DATASET_NESTING: usize = 50;
/// `$ORIGIN`, whose snapshot name every pool must be able to hold.
const ORIGIN_DIR_NAME: &str = "$ORIGIN";

/// Why a name was refused (`namecheck_err_t` plus libzfs's own pre-checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameError {
    SnapshotDelimiterUnexpected,
    MissingAt,
    BookmarkDelimiterUnexpected,
    MissingPound,
    /// `%` in a name being created; other bad characters are [`NameError::InvalidChar`].
    PercentNotAllowed,
    TooLong,
    LeadingSlash,
    EmptyComponent,
    TrailingSlash,
    InvalidChar(char),
    MultipleDelimiters,
    SelfReference,
    ParentReference,
    /// Pool names only.
    PoolNoLetter,
    PoolReserved,
    PoolInvalidChar(char),
    PoolEmptyComponent,
}

impl fmt::Display for NameError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            NameError::SnapshotDelimiterUnexpected => "snapshot delimiter '@' is not expected here",
            NameError::MissingAt => "missing '@' delimiter in snapshot name",
            NameError::BookmarkDelimiterUnexpected => "bookmark delimiter '#' is not expected here",
            NameError::MissingPound => "missing '#' delimiter in bookmark name",
            NameError::PercentNotAllowed => "invalid character % in name",
            NameError::TooLong => "name is too long",
            NameError::LeadingSlash => "leading slash in name",
            NameError::EmptyComponent => {
                "empty component or misplaced '@' or '#' delimiter in name"
            }
            NameError::TrailingSlash => "trailing slash in name",
            NameError::InvalidChar(what) => {
                return write!(formatter, "invalid character '{what}' in name")
            }
            NameError::MultipleDelimiters => "multiple '@' and/or '#' delimiters in name",
            NameError::SelfReference => "self reference, '.' is found in name",
            NameError::ParentReference => "parent reference, '..' is found in name",
            NameError::PoolNoLetter => "name must begin with a letter",
            NameError::PoolReserved => "name is reserved",
            NameError::PoolInvalidChar(what) => {
                return write!(formatter, "invalid character '{what}' in pool name")
            }
            NameError::PoolEmptyComponent => "empty component in name",
        };
        formatter.write_str(text)
    }
}

impl std::error::Error for NameError {}

/// `valid_char` of zfs_namecheck.c (note: space is allowed).
fn valid_char(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '-' | '_' | '.' | ':' | ' ')
}

/// `entity_namecheck`: the structural scan shared by every kind of name.
pub fn entity_namecheck(path: &str) -> Result<(), NameError> {
    if path.len() >= ZFS_MAX_DATASET_NAME_LEN {
        return Err(NameError::TooLong);
    }
    if path.starts_with('/') {
        return Err(NameError::LeadingSlash);
    }
    if path.is_empty() {
        return Err(NameError::EmptyComponent);
    }
    let mut found_delimiter = false;
    let mut rest = path;
    loop {
        let end = rest.find(['/', '@', '#']).unwrap_or(rest.len());
        let component = &rest[..end];
        let terminator = rest[end..].chars().next();
        if terminator.is_none() && path.ends_with('/') {
            return Err(NameError::TrailingSlash);
        }
        if let Some(bad) = component.chars().find(|c| !valid_char(*c) && *c != '%') {
            return Err(NameError::InvalidChar(bad));
        }
        if matches!(terminator, None | Some('/')) {
            if component == "." {
                return Err(NameError::SelfReference);
            }
            if component == ".." {
                return Err(NameError::ParentReference);
            }
        }
        if matches!(terminator, Some('@' | '#')) {
            if found_delimiter {
                return Err(NameError::MultipleDelimiters);
            }
            found_delimiter = true;
        }
        if component.is_empty() {
            return Err(NameError::EmptyComponent);
        }
        let Some(terminator) = terminator else {
            return Ok(());
        };
        if terminator == '/' && found_delimiter {
            return Err(NameError::TrailingSlash);
        }
        rest = &rest[end + 1..];
    }
}

/// `zfs_validate_name`: checks `path` for an object of one of `types`; `modifying` is true
/// when the name is being created or renamed to (then `%` is refused).
pub fn validate_name(path: &str, types: TypeMask, modifying: bool) -> Result<(), NameError> {
    if !types.intersects(TypeMask::SNAPSHOT) && path.contains('@') {
        return Err(NameError::SnapshotDelimiterUnexpected);
    }
    if types == TypeMask::SNAPSHOT && !path.contains('@') {
        return Err(NameError::MissingAt);
    }
    if !types.intersects(TypeMask::BOOKMARK) && path.contains('#') {
        return Err(NameError::BookmarkDelimiterUnexpected);
    }
    if types == TypeMask::BOOKMARK && !path.contains('#') {
        return Err(NameError::MissingPound);
    }
    if modifying && path.contains('%') {
        return Err(NameError::PercentNotAllowed);
    }
    entity_namecheck(path)
}

/// A filesystem or volume name (`pool/a/b`).
pub fn validate_dataset_name(path: &str, modifying: bool) -> Result<(), NameError> {
    validate_name(
        path,
        TypeMask::FILESYSTEM.union(TypeMask::VOLUME),
        modifying,
    )
}

/// A full snapshot name (`pool/a@snap`).
pub fn validate_snapshot_name(path: &str, modifying: bool) -> Result<(), NameError> {
    validate_name(path, TypeMask::SNAPSHOT, modifying)
}

/// A full bookmark name (`pool/a#mark`).
pub fn validate_bookmark_name(path: &str, modifying: bool) -> Result<(), NameError> {
    validate_name(path, TypeMask::BOOKMARK, modifying)
}

/// `pool_namecheck` + `zpool_name_valid`; `creating` adds the newer reserved prefixes
/// (`mirror*`, `raidz*`, `draid*`, `spare*`, `log`), checked only on create and import.
pub fn validate_pool_name(pool: &str, creating: bool) -> Result<(), NameError> {
    if pool.len() >= ZFS_MAX_DATASET_NAME_LEN - 2 - 2 * ORIGIN_DIR_NAME.len() {
        return Err(NameError::TooLong);
    }
    if let Some(bad) = pool.chars().find(|c| !valid_char(*c)) {
        return Err(NameError::PoolInvalidChar(bad));
    }
    if !pool.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(NameError::PoolNoLetter);
    }
    if matches!(pool, "mirror" | "raidz" | "draid") {
        return Err(NameError::PoolReserved);
    }
    let reserved_on_create = ["mirror", "raidz", "draid", "spare"]
        .iter()
        .any(|prefix| pool.starts_with(prefix))
        || pool == "log";
    if creating && reserved_on_create {
        return Err(NameError::PoolReserved);
    }
    Ok(())
}

/// `zfs_component_namecheck`: one component (a snapshot or bookmark short name).
pub fn validate_component(component: &str) -> Result<(), NameError> {
    if component.len() >= ZFS_MAX_DATASET_NAME_LEN {
        return Err(NameError::TooLong);
    }
    if component.is_empty() {
        return Err(NameError::EmptyComponent);
    }
    match component.chars().find(|c| !valid_char(*c)) {
        Some(bad) => Err(NameError::InvalidChar(bad)),
        None => Ok(()),
    }
}

/// `get_dataset_depth`: the number of `/` before any `@` or `#`.
pub fn dataset_depth(path: &str) -> usize {
    path.chars()
        .take_while(|c| *c != '@' && *c != '#')
        .filter(|c| *c == '/')
        .count()
}

/// `dataset_nestcheck`: true when the name is within the nesting limit.
pub fn nesting_ok(path: &str) -> bool {
    dataset_depth(path) < ZFS_MAX_DATASET_NESTING
}

/// Splits `pool/fs@snap` or `pool/fs#mark` into the dataset part and the rest.
pub fn split_at_delimiter(path: &str) -> (&str, Option<(char, &str)>) {
    match path.find(['@', '#']) {
        Some(at) => {
            let delimiter = if path[at..].starts_with('@') {
                '@'
            } else {
                '#'
            };
            (&path[..at], Some((delimiter, &path[at + 1..])))
        }
        None => (path, None),
    }
}

/// The parent filesystem of `pool/a/b` (`pool/a`); `None` for a pool or a snapshot/bookmark.
pub fn parent_name(path: &str) -> Option<&str> {
    if path.contains(['@', '#']) {
        return None;
    }
    path.rfind('/').map(|slash| &path[..slash])
}

#[cfg(test)]
mod tests;
