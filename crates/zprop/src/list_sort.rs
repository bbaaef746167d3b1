//! Which objects `zfs list`/`zfs get` show and in what order: `-o` columns, `-s`/`-S` sort keys,
//! `-t` type filters and `-d`/`-r` depth.
//!
//! Counterpart: `zfs_do_list`, `parse_depth` (cmd/zfs/zfs_main.c), `zfs_sort`/`zfs_compare`
//! (cmd/zfs/zfs_iter.c), `zprop_get_list`/`addlist` (lib/libzfs/libzfs_util.c).
//!
//! Theory. Rows are kept in a tree ordered by the sort keys; ties, and the no-key case, fall
//! back to `zfs_compare`: the dataset parts of the names compared bytewise (`strcmp`, so
//! `pool/a-b` sorts between `pool/a` and `pool/a/b`, as in OpenZFS), a dataset before its own
//! snapshots, and snapshots of one dataset by `createtxg` (by name when both are 0). A sort
//! key on a string or index property compares the printed (`-p`) text; on a number, the raw
//! value. A row for which a key does not apply sinks to the bottom whether the key is `-s` or
//! `-S`. Depth counts filesystem levels below the named dataset, plus one for a snapshot or
//! bookmark: `-d 1` shows a filesystem, its children and its own snapshots.

use crate::namecheck::split_at_delimiter;
use crate::user_prop::{is_user_prop_name, user_prop_column};
use crate::zfs_prop::{DatasetType, PropType, TypeMask, ZfsProp};
use std::cmp::Ordering;
use std::fmt;

/// `zfs list` columns when `-o` is not given.
pub const ZFS_LIST_DEFAULT_FIELDS: &str = "name,used,available,referenced,mountpoint";
/// What `-o space` expands to.
pub const ZFS_LIST_SPACE_FIELDS: [&str; 7] = [
    "name",
    "avail",
    "used",
    "usedbysnapshots",
    "usedbydataset",
    "usedbyrefreservation",
    "usedbychildren",
];

/// A refused `-o`, `-s`, `-t` or `-d` argument; `Display` is OpenZFS's sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListError {
    /// `-o foo`: printed as `bad property list: invalid property 'foo'`.
    InvalidProperty(String),
    /// `-o ''`: `bad property list: no properties specified`.
    NoProperties,
    /// `-s foo` / `-S foo`: `invalid property 'foo'` then usage.
    InvalidSortProperty(String),
    /// `-t foo`: `invalid type 'foo'` then usage.
    InvalidType(String),
    /// `-d x`: `x is not an integer` then usage.
    DepthNotInteger(String),
    /// `-d -1`: `Depth can not be negative.` then usage.
    DepthNegative,
}

impl fmt::Display for ListError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListError::InvalidProperty(name) => {
                write!(formatter, "bad property list: invalid property '{name}'")
            }
            ListError::NoProperties => {
                write!(formatter, "bad property list: no properties specified")
            }
            ListError::InvalidSortProperty(name) => write!(formatter, "invalid property '{name}'"),
            ListError::InvalidType(name) => write!(formatter, "invalid type '{name}'"),
            ListError::DepthNotInteger(text) => write!(formatter, "{text} is not an integer"),
            ListError::DepthNegative => write!(formatter, "Depth can not be negative."),
        }
    }
}

impl std::error::Error for ListError {}

/// A property named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListProp {
    Native(ZfsProp),
    User(String),
}

impl ListProp {
    /// Looks up a name (alias or user property) as `addlist`/`zfs_add_sort_column` do;
    /// `userquota@...` and `written@...` are accepted as user-style columns.
    pub fn from_name(name: &str) -> Option<ListProp> {
        if let Some(prop) = ZfsProp::from_name(name) {
            return Some(ListProp::Native(prop));
        }
        let special = [
            "userused@",
            "userquota@",
            "groupused@",
            "groupquota@",
            "written@",
            "written#",
            "userobjused@",
            "userobjquota@",
            "groupobjused@",
            "groupobjquota@",
            "projectused@",
            "projectquota@",
            "projectobjused@",
            "projectobjquota@",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix));
        (is_user_prop_name(name) || special).then(|| ListProp::User(name.to_string()))
    }

    /// Column header: the table's, or the user property name upper-cased.
    pub fn header(&self) -> String {
        match self {
            ListProp::Native(prop) => prop.desc().column.to_string(),
            ListProp::User(name) => user_prop_column(name),
        }
    }

    pub fn align_right(&self) -> bool {
        match self {
            ListProp::Native(prop) => prop.desc().align_right,
            ListProp::User(name) => name.contains('@') || name.contains('#'),
        }
    }

    /// The canonical name (what `zfs get` prints in its PROPERTY column).
    pub fn name(&self) -> &str {
        match self {
            ListProp::Native(prop) => prop.name(),
            ListProp::User(name) => name,
        }
    }
}

/// `-o` columns: `None` for `all` (every property), otherwise the list in order.
pub fn parse_fields(fields: &str) -> Result<Option<Vec<ListProp>>, ListError> {
    if fields == "all" {
        return Ok(None);
    }
    if fields.is_empty() {
        return Err(ListError::NoProperties);
    }
    let mut columns = Vec::new();
    for field in fields.split(',') {
        let names: Vec<&str> = if field == "space" {
            ZFS_LIST_SPACE_FIELDS.to_vec()
        } else {
            vec![field]
        };
        for name in names {
            let column = ListProp::from_name(name)
                .ok_or_else(|| ListError::InvalidProperty(name.to_string()))?;
            columns.push(column);
        }
    }
    Ok(Some(columns))
}

/// `-t` argument: comma list of `filesystem fs volume vol snapshot snap bookmark all`.
pub fn parse_types(argument: &str) -> Result<TypeMask, ListError> {
    let mut types = TypeMask::NONE;
    for word in argument.split(',') {
        let mask = match word {
            "filesystem" | "fs" => TypeMask::FILESYSTEM,
            "volume" | "vol" => TypeMask::VOLUME,
            "snapshot" | "snap" => TypeMask::SNAPSHOT,
            "bookmark" => TypeMask::BOOKMARK,
            "all" => TypeMask::ALL,
            _ => return Err(ListError::InvalidType(word.to_string())),
        };
        types = types.union(mask);
    }
    Ok(types)
}

/// The types `zfs list` shows: `-t` if given, else filesystems, volumes and snapshots, minus
/// snapshots under `-o space` (snapshots are further hidden by the caller when the pool's
/// `listsnapshots` is off and `-t` was not given).
pub fn list_types(types_arg: Option<TypeMask>, fields: &str) -> TypeMask {
    match types_arg {
        Some(types) => types,
        None if fields == "space" => TypeMask::DATASET.without(TypeMask::SNAPSHOT),
        None => TypeMask::DATASET,
    }
}

/// `parse_depth`: `strtol(opt, 0)` (decimal, `0x` hex, leading-0 octal), whole string.
pub fn parse_depth(argument: &str) -> Result<usize, ListError> {
    let not_integer = || ListError::DepthNotInteger(argument.to_string());
    let (negative, unsigned) = match argument.as_bytes().first() {
        Some(b'-') => (true, &argument[1..]),
        Some(b'+') => (false, &argument[1..]),
        _ => (false, argument),
    };
    let (radix, digits) = if let Some(hex) = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        (16, hex)
    } else if unsigned.len() > 1 && unsigned.starts_with('0') {
        (8, &unsigned[1..])
    } else {
        (10, unsigned)
    };
    let magnitude = if digits.is_empty() {
        if argument.is_empty() {
            0 // strtol("") converts nothing and leaves no trailing text: depth 0
        } else {
            return Err(not_integer());
        }
    } else {
        u64::from_str_radix(digits, radix).map_err(|_| not_integer())?
    };
    if negative && magnitude != 0 {
        return Err(ListError::DepthNegative);
    }
    Ok(usize::try_from(magnitude.min(i32::MAX as u64)).unwrap_or(usize::MAX))
}

/// `zfs list -t snapshot fs` with neither `-r` nor `-d` lists fs's snapshots: depth 1.
pub fn implied_depth(
    types: TypeMask,
    has_dataset_args: bool,
    recursive: bool,
    depth: Option<usize>,
) -> Option<usize> {
    let only_snapshots_or_bookmarks = types == TypeMask::SNAPSHOT || types == TypeMask::BOOKMARK;
    if only_snapshots_or_bookmarks && has_dataset_args && !recursive && depth.is_none() {
        Some(1)
    } else {
        depth
    }
}

/// How far below `root` the object `name` sits, or `None` if it is not `root` or below it.
pub fn depth_below(root: &str, name: &str) -> Option<usize> {
    let (dataset, delimited) = split_at_delimiter(name);
    let levels = if dataset == root {
        0
    } else {
        let below = dataset.strip_prefix(root)?.strip_prefix('/')?;
        below.split('/').count()
    };
    Some(levels + usize::from(delimited.is_some()))
}

/// Whether `name` is shown when listing `root` with an optional depth limit (`-r` alone is
/// no limit; neither `-r` nor `-d` is depth 0, the dataset itself).
pub fn within_depth(root: &str, name: &str, depth_limit: Option<usize>) -> bool {
    match (depth_below(root, name), depth_limit) {
        (Some(depth), Some(limit)) => depth <= limit,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// A `-s`/`-S` key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortColumn {
    pub prop: ListProp,
    /// `-S`: descending.
    pub reverse: bool,
}

/// `zfs_add_sort_column`.
pub fn parse_sort_column(name: &str, reverse: bool) -> Result<SortColumn, ListError> {
    let prop = match ZfsProp::from_name(name) {
        Some(prop) => ListProp::Native(prop),
        None if is_user_prop_name(name) => ListProp::User(name.to_string()),
        None => return Err(ListError::InvalidSortProperty(name.to_string())),
    };
    Ok(SortColumn { prop, reverse })
}

/// Whether a sort on `prop` compares text (strings, index words) rather than numbers.
pub fn sorts_as_text(prop: ZfsProp) -> bool {
    matches!(
        prop.desc().kind,
        PropType::String | PropType::Index(_) | PropType::Compression
    )
}

/// A row's value under a sort key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortValue {
    /// The key does not apply to this row (sorts last, even under `-S`).
    Missing,
    Number(u64),
    Text(String),
}

/// What the sorter needs from a row.
pub trait ListEntry {
    /// Full name (`pool/fs`, `pool/fs@snap`, `pool/fs#mark`).
    fn name(&self) -> &str;
    fn createtxg(&self) -> u64;
    /// The row's value under `prop`: for text properties the `-p` text, for numbers the raw
    /// value, `Missing` where the property does not apply or is unset (user properties).
    fn sort_value(&self, prop: &ListProp) -> SortValue;
}

/// `zfs_compare`: by dataset name, a dataset before its snapshots, snapshots by createtxg.
pub fn compare_by_name<T: ListEntry + ?Sized>(left: &T, right: &T) -> Ordering {
    let (left_dataset, left_tail) = split_at_delimiter(left.name());
    let (right_dataset, right_tail) = split_at_delimiter(right.name());
    let by_dataset = left_dataset.as_bytes().cmp(right_dataset.as_bytes());
    if by_dataset != Ordering::Equal {
        return by_dataset;
    }
    match (left_tail, right_tail) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((_, left_short)), Some((_, right_short))) => {
            let (left_txg, right_txg) = (left.createtxg(), right.createtxg());
            if left_txg == 0 && right_txg == 0 {
                left_short.as_bytes().cmp(right_short.as_bytes())
            } else {
                left_txg.cmp(&right_txg)
            }
        }
    }
}

/// `zfs_sort`: the keys in order, then [`compare_by_name`].
pub fn compare_entries<T: ListEntry + ?Sized>(
    left: &T,
    right: &T,
    columns: &[SortColumn],
) -> Ordering {
    for column in columns {
        let (left_value, right_value) = if column.prop == ListProp::Native(ZfsProp::Name) {
            (
                SortValue::Text(left.name().to_string()),
                SortValue::Text(right.name().to_string()),
            )
        } else {
            (
                left.sort_value(&column.prop),
                right.sort_value(&column.prop),
            )
        };
        let ordering = match (&left_value, &right_value) {
            (SortValue::Missing, SortValue::Missing) => continue,
            (SortValue::Missing, _) => return Ordering::Greater,
            (_, SortValue::Missing) => return Ordering::Less,
            (SortValue::Number(left_number), SortValue::Number(right_number)) => {
                left_number.cmp(right_number)
            }
            (SortValue::Text(left_text), SortValue::Text(right_text)) => {
                left_text.as_bytes().cmp(right_text.as_bytes())
            }
            // Mixed kinds cannot come from one property; order numbers first to stay total.
            (SortValue::Number(_), SortValue::Text(_)) => Ordering::Less,
            (SortValue::Text(_), SortValue::Number(_)) => Ordering::Greater,
        };
        if ordering != Ordering::Equal {
            return if column.reverse {
                ordering.reverse()
            } else {
                ordering
            };
        }
    }
    compare_by_name(left, right)
}

/// Sorts rows as `zfs list`/`zfs get` print them.
pub fn sort_entries<T: ListEntry>(entries: &mut [T], columns: &[SortColumn]) {
    entries.sort_by(|left, right| compare_entries(left, right, columns));
}

/// Whether an object of type `object` passes a `-t` filter.
pub fn type_selected(types: TypeMask, object: DatasetType) -> bool {
    types.contains(object.mask())
}

#[cfg(test)]
mod tests;
