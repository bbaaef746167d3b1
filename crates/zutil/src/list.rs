//! Column tables: `zpool list`, `zfs list`, and any `-o` property table.
//!
//! Counterpart: `print_header`/`collect_pool`/`print_line`/`collect_list_stats` in
//! `cmd/zpool/zpool_main.c`, `print_header`/`collect_dataset` in `cmd/zfs/zfs_main.c`,
//! and the width rules of `zprop_width` (module/zcommon/zprop_common.c) and
//! `zpool_expand_proplist`/`zfs_expand_proplist` (lib/libzfs).
//!
//! Exact-format invariants:
//! - Columns are separated by two spaces; `-H` (scripted) prints no header and separates
//!   fields by exactly one tab, with no padding at all.
//! - A column's width starts at `width_min` (the header length; at least 5 for numbers,
//!   8 for pool `health`, the longest value name for index properties). Flexible columns
//!   (strings, index properties, guid-like numbers, every column under `-p`) widen to their
//!   longest value; fixed number columns do not, and a wider value simply overflows.
//! - Right-aligned columns (numbers, and pool `health`) are always padded, even last;
//!   a left-aligned last column is printed bare (no trailing spaces).
//! - `zpool list -v` vdev rows: name indented 2 spaces per level and padded to the name
//!   width (at least 9), every other value right-aligned in its *unexpanded* width,
//!   including the last; scripted vdev rows start with a tab. Class rows (`logs`, `cache`,
//!   `spare`, ...) print the class name then `-` in each column, with spaces even under -H.

/// Which side of its column a value hugs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Header text, e.g. "NAME".
    pub header: String,
    pub align: Align,
    /// Width before any value is seen (OpenZFS `zprop_width`).
    pub width_min: usize,
    /// Whether values may widen the column (OpenZFS `!pl_fixed || literal`).
    pub flex: bool,
}

impl Column {
    /// A flexible column whose minimum width is its header.
    pub fn new(header: &str, align: Align) -> Column {
        Column {
            header: header.to_string(),
            align,
            width_min: header.len(),
            flex: true,
        }
    }
}

/// How a property's values look, which fixes its column's alignment and width.
#[derive(Clone, Copy)]
enum PropShape {
    /// A number; `flex` is false for sizes (nicenum is at most 5 characters).
    Number { flex: bool },
    /// A free string (left, flexible).
    Text,
    /// An index property whose longest value name is this long (left, flexible).
    Index { value_len_max: usize },
}

/// (property name, column header, shape). Either the name or the lower-cased header
/// selects the property, as in OpenZFS `zprop_name_to_prop`.
type PropRow = (&'static str, &'static str, PropShape);

const NUMBER: PropShape = PropShape::Number { flex: false };
const NUMBER_FLEX: PropShape = PropShape::Number { flex: true };
const fn index(value_len_max: usize) -> PropShape {
    PropShape::Index { value_len_max }
}

const POOL_PROPS: &[PropRow] = &[
    ("name", "NAME", PropShape::Text),
    ("size", "SIZE", NUMBER),
    ("allocated", "ALLOC", NUMBER),
    ("free", "FREE", NUMBER),
    ("checkpoint", "CKPOINT", NUMBER),
    ("expandsize", "EXPANDSZ", NUMBER),
    ("fragmentation", "FRAG", NUMBER),
    ("capacity", "CAP", NUMBER),
    ("dedupratio", "DEDUP", NUMBER),
    ("health", "HEALTH", NUMBER),
    ("altroot", "ALTROOT", PropShape::Text),
    ("freeing", "FREEING", NUMBER),
    ("leaked", "LEAKED", NUMBER),
    ("guid", "GUID", NUMBER_FLEX),
    ("load_guid", "LOAD_GUID", NUMBER_FLEX),
    ("version", "VERSION", NUMBER),
    ("ashift", "ASHIFT", NUMBER),
    ("bootfs", "BOOTFS", PropShape::Text),
    ("cachefile", "CACHEFILE", PropShape::Text),
    ("comment", "COMMENT", PropShape::Text),
    ("compatibility", "COMPATIBILITY", PropShape::Text),
    ("delegation", "DELEGATION", index(3)),
    ("autoreplace", "REPLACE", index(3)),
    ("listsnapshots", "LISTSNAPS", index(3)),
    ("autoexpand", "EXPAND", index(3)),
    ("readonly", "RDONLY", index(3)),
    ("multihost", "MULTIHOST", index(3)),
    ("failmode", "FAILMODE", index(8)),
    ("autotrim", "AUTOTRIM", index(3)),
    ("bcloneused", "BCLONE_USED", NUMBER),
    ("bclonesaved", "BCLONE_SAVED", NUMBER),
    ("bcloneratio", "BCLONE_RATIO", NUMBER),
    ("dedupused", "DEDUP_USED", NUMBER),
    ("dedupsaved", "DEDUP_SAVED", NUMBER),
    ("maxblocksize", "MAXBLOCKSIZE", NUMBER),
];

const DATASET_PROPS: &[PropRow] = &[
    ("name", "NAME", PropShape::Text),
    ("used", "USED", NUMBER),
    ("available", "AVAIL", NUMBER),
    ("referenced", "REFER", NUMBER),
    ("mountpoint", "MOUNTPOINT", PropShape::Text),
    ("type", "TYPE", PropShape::Text),
    ("origin", "ORIGIN", PropShape::Text),
    ("clones", "CLONES", PropShape::Text),
    // creation is a number shown as a date: left-aligned and flexible.
    ("creation", "CREATION", PropShape::Text),
    ("compressratio", "RATIO", NUMBER),
    ("refcompressratio", "REFRATIO", NUMBER),
    ("usedbysnapshots", "USEDSNAP", NUMBER),
    ("usedbydataset", "USEDDS", NUMBER),
    ("usedbychildren", "USEDCHILD", NUMBER),
    ("usedbyrefreservation", "USEDREFRESERV", NUMBER),
    ("userrefs", "USERREFS", NUMBER),
    ("written", "WRITTEN", NUMBER),
    ("logicalused", "LUSED", NUMBER),
    ("logicalreferenced", "LREFER", NUMBER),
    ("quota", "QUOTA", NUMBER),
    ("refquota", "REFQUOTA", NUMBER),
    ("reservation", "RESERV", NUMBER),
    ("refreservation", "REFRESERV", NUMBER),
    ("volsize", "VOLSIZE", NUMBER),
    ("volblocksize", "VOLBLOCK", NUMBER),
    ("recordsize", "RECSIZE", NUMBER),
    ("special_small_blocks", "SPECIAL_SMALL_BLOCKS", NUMBER),
    ("filesystem_count", "FSCOUNT", NUMBER),
    ("snapshot_count", "SSCOUNT", NUMBER),
    ("filesystem_limit", "FSLIMIT", NUMBER),
    ("snapshot_limit", "SSLIMIT", NUMBER),
    ("guid", "GUID", NUMBER_FLEX),
    ("createtxg", "CREATETXG", NUMBER_FLEX),
    ("objsetid", "OBJSETID", NUMBER_FLEX),
    ("receive_resume_token", "RESUMETOK", PropShape::Text),
    ("encryptionroot", "ENCROOT", PropShape::Text),
    ("keylocation", "KEYLOCATION", PropShape::Text),
    ("sharenfs", "SHARENFS", PropShape::Text),
    ("sharesmb", "SHARESMB", PropShape::Text),
    ("compression", "COMPRESS", index(14)),
    ("checksum", "CHECKSUM", index(8)),
    ("dedup", "DEDUP", index(13)),
    ("sync", "SYNC", index(8)),
    ("snapdir", "SNAPDIR", index(8)),
    ("acltype", "ACLTYPE", index(8)),
    ("copies", "COPIES", index(1)),
    ("primarycache", "PRIMARYCACHE", index(8)),
    ("secondarycache", "SECONDARYCACHE", index(8)),
    ("logbias", "LOGBIAS", index(10)),
    ("xattr", "XATTR", index(3)),
    ("atime", "ATIME", index(3)),
    ("relatime", "RELATIME", index(3)),
    ("devices", "DEVICES", index(3)),
    ("exec", "EXEC", index(3)),
    ("setuid", "SETUID", index(3)),
    ("readonly", "RDONLY", index(3)),
    ("canmount", "CANMOUNT", index(6)),
    ("mounted", "MOUNTED", index(3)),
    ("defer_destroy", "DEFER_DESTROY", index(3)),
    ("version", "VERSION", index(7)),
    ("keystatus", "KEYSTATUS", index(11)),
    ("keyformat", "KEYFORMAT", index(10)),
    ("encryption", "ENCRYPTION", index(11)),
    ("casesensitivity", "CASE", index(11)),
    ("normalization", "NORMALIZATION", index(13)),
    ("utf8only", "UTF8ONLY", index(3)),
];

/// Smallest width any number column gets: nicenum text is at most 5 characters.
const NUMBER_WIDTH_MIN: usize = 5;
/// Pool `health` is a number inside OpenZFS but printed as an 8-wide string.
const HEALTH_WIDTH: usize = 8;

fn column_for(table: &[PropRow], name: &str, is_pool: bool, exact_numbers: bool) -> Column {
    let found = table
        .iter()
        .find(|(prop, header, _)| *prop == name || header.eq_ignore_ascii_case(name));
    let Some((prop, header, shape)) = found else {
        // User properties (and unknown names): upper-cased, left, flexible.
        return Column::new(&name.to_ascii_uppercase(), Align::Left);
    };
    let (align, width_min, flex) = match *shape {
        PropShape::Text => (Align::Left, header.len(), true),
        PropShape::Index { value_len_max } => (Align::Left, header.len().max(value_len_max), true),
        PropShape::Number { flex } => {
            let width_min = if is_pool && *prop == "health" {
                HEALTH_WIDTH
            } else {
                header.len().max(NUMBER_WIDTH_MIN)
            };
            (Align::Right, width_min, flex || exact_numbers)
        }
    };
    Column {
        header: header.to_string(),
        align,
        width_min,
        flex,
    }
}

/// Columns for `zpool list -o names` (and `zpool get` property headers). `exact_numbers`
/// is `-p`: every column then widens to its values.
pub fn zpool_list_columns(names: &[&str], exact_numbers: bool) -> Vec<Column> {
    names
        .iter()
        .map(|name| column_for(POOL_PROPS, name, true, exact_numbers))
        .collect()
}

/// Columns for `zfs list -o names`.
pub fn zfs_list_columns(names: &[&str], exact_numbers: bool) -> Vec<Column> {
    names
        .iter()
        .map(|name| column_for(DATASET_PROPS, name, false, exact_numbers))
        .collect()
}

/// The default `zpool list` properties.
pub const ZPOOL_LIST_DEFAULT: &[&str] = &[
    "name",
    "size",
    "allocated",
    "free",
    "checkpoint",
    "expandsize",
    "fragmentation",
    "capacity",
    "dedupratio",
    "health",
    "altroot",
];
/// The default `zfs list` properties.
pub const ZFS_LIST_DEFAULT: &[&str] = &["name", "used", "available", "referenced", "mountpoint"];
/// `zfs list -o space`.
pub const ZFS_LIST_SPACE: &[&str] = &[
    "name",
    "available",
    "used",
    "usedbysnapshots",
    "usedbydataset",
    "usedbyrefreservation",
    "usedbychildren",
];

fn column_widths(columns: &[Column], rows: &[Vec<String>]) -> Vec<usize> {
    columns
        .iter()
        .enumerate()
        .map(|(index, column)| {
            let mut width = column.width_min.max(column.header.len());
            if column.flex {
                for row in rows {
                    if let Some(value) = row.get(index) {
                        width = width.max(value.len());
                    }
                }
            }
            width
        })
        .collect()
}

/// Appends one padded row; `widths` may override the first column's width.
fn push_padded_row(out: &mut String, columns: &[Column], widths: &[usize], cells: &[&str]) {
    for (index, column) in columns.iter().enumerate() {
        let cell = cells.get(index).copied().unwrap_or("-");
        let width = widths.get(index).copied().unwrap_or(0);
        if index > 0 {
            out.push_str("  ");
        }
        let is_last = index + 1 == columns.len();
        match column.align {
            Align::Left if is_last => out.push_str(cell),
            Align::Left => out.push_str(&format!("{cell:<width$}")),
            Align::Right => out.push_str(&format!("{cell:>width$}")),
        }
    }
    out.push('\n');
}

fn push_scripted_row(out: &mut String, cells: &[&str]) {
    out.push_str(&cells.join("\t"));
    out.push('\n');
}

fn header_cells(columns: &[Column]) -> Vec<&str> {
    columns
        .iter()
        .map(|column| column.header.as_str())
        .collect()
}

/// A generic property table (`zfs list`, `zpool list` without -v, `get`-style tables).
/// A row shorter than `columns` shows `-` in the missing cells.
pub fn format_table(columns: &[Column], rows: &[Vec<String>], scripted: bool) -> String {
    let mut out = String::new();
    if scripted {
        for row in rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            push_scripted_row(&mut out, &cells);
        }
        return out;
    }
    let widths = column_widths(columns, rows);
    push_padded_row(&mut out, columns, &widths, &header_cells(columns));
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        push_padded_row(&mut out, columns, &widths, &cells);
    }
    out
}

/// One line under a pool in `zpool list -v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolListLine {
    /// A vdev: `values` are the cells after NAME, "-" where a value does not apply.
    Vdev {
        name: String,
        depth: usize,
        values: Vec<String>,
    },
    /// A class heading: "logs", "dedup", "special", "cache" or "spare".
    Class(String),
}

/// One pool of `zpool list`: its row (NAME first) and, for `-v`, the lines beneath it
/// in OpenZFS order (normal vdevs, then dedup, special, logs, cache, spare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolListEntry {
    pub values: Vec<String>,
    pub vdevs: Vec<PoolListLine>,
}

/// The smallest NAME width of `zpool list -v`.
const VERBOSE_NAME_WIDTH_MIN: usize = 9;

/// `zpool list [-v]`: `columns[0]` must be NAME.
pub fn format_zpool_list(
    columns: &[Column],
    pools: &[PoolListEntry],
    verbose: bool,
    scripted: bool,
) -> String {
    let rows: Vec<Vec<String>> = pools.iter().map(|pool| pool.values.clone()).collect();
    if !verbose {
        return format_table(columns, &rows, scripted);
    }
    let mut widths = column_widths(columns, &rows);
    let mut name_width = VERBOSE_NAME_WIDTH_MIN;
    for pool in pools {
        if let Some(name) = pool.values.first() {
            name_width = name_width.max(name.len());
        }
        for line in &pool.vdevs {
            if let PoolListLine::Vdev { name, depth, .. } = line {
                name_width = name_width.max(name.len() + depth);
            }
        }
    }
    if let Some(first) = widths.first_mut() {
        *first = name_width;
    }
    let mut out = String::new();
    if !scripted {
        push_padded_row(&mut out, columns, &widths, &header_cells(columns));
    }
    for pool in pools {
        let cells: Vec<&str> = pool.values.iter().map(String::as_str).collect();
        if scripted {
            push_scripted_row(&mut out, &cells);
        } else {
            push_padded_row(&mut out, columns, &widths, &cells);
        }
        for line in &pool.vdevs {
            match line {
                PoolListLine::Class(class) => {
                    push_class_line(&mut out, columns, &widths, class);
                }
                PoolListLine::Vdev {
                    name,
                    depth,
                    values,
                } => {
                    push_vdev_line(
                        &mut out, columns, name_width, name, *depth, values, scripted,
                    );
                }
            }
        }
    }
    out
}

/// `print_line(cb, class)`: the class name, then "-" right-aligned in every column.
fn push_class_line(out: &mut String, columns: &[Column], widths: &[usize], class: &str) {
    let mut cells: Vec<&str> = vec![class];
    cells.extend(std::iter::repeat_n("-", columns.len().saturating_sub(1)));
    let mut right_columns: Vec<Column> = columns.to_vec();
    for column in right_columns.iter_mut().skip(1) {
        column.align = Align::Right;
    }
    if let Some(first) = right_columns.first_mut() {
        first.align = Align::Left;
    }
    if right_columns.len() == 1 {
        out.push_str(class);
        out.push('\n');
        return;
    }
    push_padded_row(out, &right_columns, widths, &cells);
}

/// `collect_list_stats` for one vdev.
fn push_vdev_line(
    out: &mut String,
    columns: &[Column],
    name_width: usize,
    name: &str,
    depth: usize,
    values: &[String],
    scripted: bool,
) {
    if scripted {
        out.push('\t');
        out.push_str(name);
    } else {
        let indented = format!("{:depth$}{name}", "");
        out.push_str(&format!("{indented:<name_width$}"));
    }
    for (index, column) in columns.iter().enumerate().skip(1) {
        let value = values.get(index - 1).map(String::as_str).unwrap_or("-");
        if scripted {
            out.push('\t');
            out.push_str(value);
        } else {
            let width = column.width_min;
            out.push_str(&format!("  {value:>width$}"));
        }
    }
    out.push('\n');
}

/// The CAP cell of a `zpool list -v` vdev row from parts-per-10,000 of capacity used:
/// "0.01%", "12.3%", "100%"; `-p` prints whole percent.
pub fn vdev_capacity_text(used_permyriad: u64, exact_numbers: bool) -> String {
    if exact_numbers {
        return (used_permyriad / 100).to_string();
    }
    let percent = used_permyriad as f64 / 100.0;
    if used_permyriad < 1_000 {
        format!("{percent:.2}%")
    } else if used_permyriad < 10_000 {
        format!("{percent:.1}%")
    } else {
        format!("{percent:.0}%")
    }
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
