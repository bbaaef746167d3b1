//! `zpool iostat` text (the default capacity/operations/bandwidth report, and the
//! latency histograms of `-w`).
//!
//! Counterpart: `print_iostat_header_impl`, `print_iostat_labels`, `print_iostat_dashes`,
//! `print_vdev_stats`, `print_iostat_default`, `print_one_stat` and
//! `get_namewidth_iostat` in `cmd/zpool/zpool_main.c`.
//!
//! Exact-format invariants:
//! - The name column is as wide as the longest name (pool names; with `-v` also every
//!   vdev name plus 2 per level, spares included), at least 10.
//! - Each value is `"  "` + the value right-aligned in 5 (15 with `-p`); a row's name is
//!   padded to the name width, or printed bare when longer.
//! - Header: the group labels centred over each pair of columns (with one trailing
//!   space after "bandwidth"), the column labels, then dashes under every column.
//! - Vdevs without capacity show `-` (`0` with `-p`) for alloc and free.
//! - `-v` ends each pool with a dashes line; without `-v`, several pools end with one
//!   dashes line. Class headings (`logs`, `cache`, ...) are the class name followed by
//!   a `-` at the right of every column.
//! - `-H`: no header and no dashes; every field follows a tab, names are not padded.

use crate::nicenum::nicenum;

/// One line of statistics. Ops and bytes are already per-second averages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IostatRow {
    pub name: String,
    /// 0 for the pool, 2 per level below it.
    pub depth: usize,
    /// Only pools and top-level vdevs have capacity.
    pub alloc_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// One pool's report: `rows[0]` is the pool, then the normal vdev tree; the classes
/// follow under their headings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IostatPool {
    pub rows: Vec<IostatRow>,
    pub dedup: Vec<IostatRow>,
    pub special: Vec<IostatRow>,
    pub logs: Vec<IostatRow>,
    pub cache: Vec<IostatRow>,
    /// Spare names: never printed by iostat, but they widen the name column under -v.
    pub spare_names: Vec<String>,
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IostatOptions {
    pub verbose: bool,
    pub scripted: bool,
    pub exact_numbers: bool,
}

/// The smallest name column.
const NAME_WIDTH_MIN: usize = 10;
/// Column width for human-readable and for exact (`-p`) numbers.
const COLUMN_WIDTH: usize = 5;
const COLUMN_WIDTH_EXACT: usize = 15;
/// (group label, columns under it) and the per-column labels.
const TOP_LABELS: [&str; 3] = ["capacity", "operations", "bandwidth"];
const BOTTOM_LABELS: [&str; 6] = ["alloc", "free", "read", "write", "read", "write"];

/// The name column width for these pools (`get_namewidth_iostat`).
pub fn iostat_name_width(pools: &[IostatPool], verbose: bool) -> usize {
    let mut width = NAME_WIDTH_MIN;
    for pool in pools {
        if let Some(first) = pool.rows.first() {
            width = width.max(first.name.len());
        }
        if !verbose {
            continue;
        }
        let all_rows = [
            &pool.rows,
            &pool.dedup,
            &pool.special,
            &pool.logs,
            &pool.cache,
        ];
        for row in all_rows.iter().flat_map(|rows| rows.iter()) {
            width = width.max(row.name.len() + row.depth);
        }
        for spare in &pool.spare_names {
            width = width.max(spare.len() + 2);
        }
    }
    width
}

/// The three header lines (group labels, column labels, dashes), newline-terminated.
pub fn format_iostat_header(name_width: usize, exact_numbers: bool) -> String {
    let column_width = if exact_numbers {
        COLUMN_WIDTH_EXACT
    } else {
        COLUMN_WIDTH
    };
    let name_width = name_width.max("pool".len());
    let mut out = format!("{:name_width$}", "");
    // Each group spans 2 columns plus the 2 spaces between them.
    let group_width = 2 * column_width + 2;
    for label in TOP_LABELS {
        let text_start = (group_width / 2).saturating_sub(label.len() / 2);
        let spaces_to_end = group_width.saturating_sub(text_start + label.len());
        out.push_str(&format!("  {:text_start$}{label}{:spaces_to_end$}", "", ""));
    }
    out.push('\n');
    out.push_str(&format!("{:<name_width$}", "pool"));
    for label in BOTTOM_LABELS {
        out.push_str(&format!("  {label:>column_width$}"));
    }
    out.push('\n');
    out.push_str(&format_iostat_separator(name_width, exact_numbers));
    out
}

/// A dashes line under every column, newline-terminated.
pub fn format_iostat_separator(name_width: usize, exact_numbers: bool) -> String {
    let column_width = if exact_numbers {
        COLUMN_WIDTH_EXACT
    } else {
        COLUMN_WIDTH
    };
    let name_width = name_width.max("pool".len());
    let mut out = "-".repeat(name_width);
    for _ in BOTTOM_LABELS {
        out.push_str("  ");
        out.push_str(&"-".repeat(column_width));
    }
    out.push('\n');
    out
}

/// A full report (header included unless scripted): what one `zpool iostat [-v]`
/// interval prints.
pub fn format_iostat(pools: &[IostatPool], options: IostatOptions) -> String {
    let name_width = iostat_name_width(pools, options.verbose);
    let mut out = String::new();
    if !options.scripted {
        out.push_str(&format_iostat_header(name_width, options.exact_numbers));
    }
    out.push_str(&format_iostat_rows(pools, options, name_width));
    out
}

/// The rows of one interval without the header (for repeated reports).
pub fn format_iostat_rows(
    pools: &[IostatPool],
    options: IostatOptions,
    name_width: usize,
) -> String {
    let mut out = String::new();
    for pool in pools {
        let mut printed_rows = 0usize;
        let shown_rows = if options.verbose {
            &pool.rows[..]
        } else {
            &pool.rows[..pool.rows.len().min(1)]
        };
        for row in shown_rows {
            push_row(&mut out, row, options, name_width);
            printed_rows += 1;
        }
        if options.verbose {
            for (class, rows) in [
                ("dedup", &pool.dedup),
                ("special", &pool.special),
                ("logs", &pool.logs),
                ("cache", &pool.cache),
            ] {
                if rows.is_empty() {
                    continue;
                }
                if !options.scripted {
                    push_class_heading(&mut out, class, name_width, options.exact_numbers);
                }
                out.push('\n');
                for row in rows {
                    push_row(&mut out, row, options, name_width);
                    printed_rows += 1;
                }
            }
            if printed_rows > 0 && !options.scripted {
                out.push_str(&format_iostat_separator(name_width, options.exact_numbers));
            }
        }
    }
    if pools.len() > 1 && !options.verbose && !options.scripted {
        out.push_str(&format_iostat_separator(name_width, options.exact_numbers));
    }
    out
}

/// `print_iostat_dashes(cb, 0, class)` without its newline (the caller adds it).
fn push_class_heading(out: &mut String, class: &str, name_width: usize, exact_numbers: bool) {
    let column_width = if exact_numbers {
        COLUMN_WIDTH_EXACT
    } else {
        COLUMN_WIDTH
    };
    let heading_width = name_width.max("pool".len()).max(class.len());
    out.push_str(&format!("{class:<heading_width$}"));
    for _ in BOTTOM_LABELS {
        out.push_str(&format!("  {:>column_width$}", "-"));
    }
}

fn push_row(out: &mut String, row: &IostatRow, options: IostatOptions, name_width: usize) {
    let column_width = if options.exact_numbers {
        COLUMN_WIDTH_EXACT
    } else {
        COLUMN_WIDTH
    };
    let format_value = |value: u64| {
        if options.exact_numbers {
            value.to_string()
        } else {
            nicenum(value)
        }
    };
    let mut cells: Vec<String> = Vec::with_capacity(BOTTOM_LABELS.len());
    match (row.alloc_bytes, row.free_bytes) {
        (Some(alloc_bytes), Some(free_bytes)) => {
            cells.push(format_value(alloc_bytes));
            cells.push(format_value(free_bytes));
        }
        _ => {
            let not_applicable = if options.exact_numbers { "0" } else { "-" };
            cells.push(not_applicable.to_string());
            cells.push(not_applicable.to_string());
        }
    }
    for value in [row.read_ops, row.write_ops, row.read_bytes, row.write_bytes] {
        cells.push(format_value(value));
    }
    if options.scripted {
        out.push_str(&row.name);
        for cell in cells {
            out.push('\t');
            out.push_str(&cell);
        }
    } else {
        let indented = format!("{:depth$}{}", "", row.name, depth = row.depth);
        out.push_str(&format!("{indented:<name_width$}"));
        for cell in cells {
            // print_stat_color prints at most column_width characters of a value.
            let shown = cell.get(..column_width).unwrap_or(&cell);
            out.push_str(&format!("  {shown:>column_width$}"));
        }
    }
    out.push('\n');
}

/// Buckets of a latency histogram (`VDEV_L_HISTO_BUCKETS`).
pub const LATENCY_BUCKETS: usize = 37;
/// The columns of `zpool iostat -w`, in order: total_wait read/write, disk_wait
/// read/write, syncq_wait read/write, asyncq_wait read/write, scrub, trim, rebuild
/// (`vsx_type_to_nvlist[IOS_L_HISTO]`).
pub const LATENCY_HISTOGRAM_COLUMNS: usize = 11;
const LATENCY_TOP_LABELS: [(&str, usize); 4] = [
    ("total_wait", 2),
    ("disk_wait", 2),
    ("syncq_wait", 2),
    ("asyncq_wait", 2),
];
const LATENCY_BOTTOM_LABELS: [&str; LATENCY_HISTOGRAM_COLUMNS] = [
    "read", "write", "read", "write", "read", "write", "read", "write", "scrub", "trim", "rebuild",
];

/// `zfs_nicetime`: nanoseconds as "ns", "us", "ms", "s" without decimals (floor), "-"
/// for 0 (`ZFS_NICENUM_TIME`).
pub fn nicetime(ns: u64) -> String {
    if ns == 0 {
        return "-".to_string();
    }
    const UNITS: [&str; 5] = ["ns", "us", "ms", "s", "?"];
    let mut n = ns;
    let mut index = 0;
    while n >= 1000 && index < 4 {
        n /= 1000;
        index += 1;
    }
    // Whole multiples and fractions alike print the floor in that unit.
    format!("{n}{}", UNITS[index])
}

/// `print_iostat_labels` for one group of labels (top labels centred over their
/// columns: `text_start = width / columns - len / columns`).
fn push_labels(out: &mut String, labels: &[(&str, usize)], column_width: usize) {
    for (name, columns) in labels {
        let columns = (*columns).max(1);
        let width = column_width * columns + 2 * (columns - 1);
        let text_start = (width / columns).saturating_sub(name.len() / columns);
        let spaces_to_end = width.saturating_sub(text_start + name.len());
        out.push_str(&format!("  {:text_start$}{name}{:spaces_to_end$}", "", ""));
    }
}

/// One vdev's `zpool iostat -w` block (`print_iostat_histos` for `IOS_L_HISTO`): a blank
/// line, the header naming the vdev, one row per bucket (its upper end as a time, or in
/// ns with `-H`), then a solid line. `columns[c][b]` is column `c`'s count in bucket `b`,
/// already scaled.
pub fn format_latency_histogram(
    vdev_name: &str,
    name_width: usize,
    columns: &[[u64; LATENCY_BUCKETS]; LATENCY_HISTOGRAM_COLUMNS],
    options: IostatOptions,
) -> String {
    let highest = columns.iter().flatten().copied().max().unwrap_or(0);
    let column_width = if options.exact_numbers {
        // MAX(5, log10(max) + 1): the digits of the largest count.
        COLUMN_WIDTH.max(highest.max(1).to_string().len())
    } else {
        COLUMN_WIDTH
    };
    let title = "latency";
    let format_value = |value: u64| {
        if options.exact_numbers {
            value.to_string()
        } else {
            nicenum(value)
        }
    };
    let mut out = String::from("\n");
    let name_width = name_width.max(title.len());
    if options.scripted {
        out.push_str(vdev_name);
        out.push('\n');
    } else {
        let header_width = name_width.max(vdev_name.len());
        out.push_str(&format!("{vdev_name:<header_width$}"));
        push_labels(&mut out, &LATENCY_TOP_LABELS, column_width);
        out.push('\n');
        out.push_str(&format!("{title:<header_width$}"));
        for label in LATENCY_BOTTOM_LABELS {
            out.push_str(&format!("  {label:>column_width$}"));
        }
        out.push('\n');
        out.push_str(&"-".repeat(header_width));
        for _ in LATENCY_BOTTOM_LABELS {
            out.push_str("  ");
            out.push_str(&"-".repeat(column_width));
        }
        out.push('\n');
    }
    for bucket in 0..LATENCY_BUCKETS {
        let upper_ns = (1u64 << (bucket + 1)) - 1;
        if options.scripted {
            out.push_str(&upper_ns.to_string());
        } else {
            out.push_str(&format!("{:<name_width$}", nicetime(upper_ns)));
        }
        for column in columns {
            let cell = format_value(column[bucket]);
            if options.scripted {
                out.push('\t');
                out.push_str(&cell);
            } else {
                let shown = cell.get(..column_width).unwrap_or(&cell);
                out.push_str(&format!("  {shown:>column_width$}"));
            }
        }
        out.push('\n');
    }
    if !options.scripted {
        let entire_width = name_width + (column_width + 2) * LATENCY_HISTOGRAM_COLUMNS;
        out.push_str(&"-".repeat(entire_width));
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "iostat_tests.rs"]
mod tests;
