//! `zpool iostat` text: the default capacity/operations/bandwidth report, the average
//! latency columns of `-l` and the queue columns of `-q` beside it, and the histograms of
//! `-w` (latency) and `-r` (request size).
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
//! - `-l` and `-q` append their column groups after the default ones, in that order
//!   (`print_iostat_labels` walks the flag bits upwards); with `-p` their columns are 10
//!   (latency) and 6 (queues) wide (`default_column_width`). A zero latency prints `-`
//!   even with `-p` (`ZFS_NICENUM_TIME`, `ZFS_NICENUM_RAWTIME`).
//! - Histograms (`-w`, `-r`) print one block per vdev instead of rows; `-r`'s rows start
//!   at the 512-byte bucket and are labelled by the bucket's start (`zfs_nicenum`).

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
    /// `-l`: average wait in ns per column of `LATENCY_TOP_LABELS`/`LATENCY_BOTTOM_LABELS`
    /// (total, disk, syncq, asyncq read/write; scrub, trim, rebuild); 0 prints `-`.
    pub latency_ns: [u64; LATENCY_AVERAGE_COLUMNS],
    /// `-q`: pending and active requests per queue (`QUEUE_TOP_LABELS`).
    pub queue_counts: [u64; QUEUE_COLUMNS],
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
    /// `-l`: the average latency columns.
    pub latency: bool,
    /// `-q`: the queue columns.
    pub queues: bool,
}

/// The smallest name column.
const NAME_WIDTH_MIN: usize = 10;
/// Column width for human-readable numbers, and for exact (`-p`) ones per group
/// (`default_column_width`: 1 PB of capacity, 10 s in ns, a million queue entries).
const COLUMN_WIDTH: usize = 5;
const COLUMN_WIDTH_EXACT: usize = 15;
const COLUMN_WIDTH_EXACT_LATENCY: usize = 10;
const COLUMN_WIDTH_EXACT_QUEUES: usize = 6;
/// (group label, columns under it) and the per-column labels (`iostat_top_labels`,
/// `iostat_bottom_labels`).
const TOP_LABELS: [(&str, usize); 3] = [("capacity", 2), ("operations", 2), ("bandwidth", 2)];
const BOTTOM_LABELS: [&str; 6] = ["alloc", "free", "read", "write", "read", "write"];
/// The columns of `zpool iostat -l`.
pub const LATENCY_AVERAGE_COLUMNS: usize = 11;
const LATENCY_AVERAGE_TOP_LABELS: [(&str, usize); 7] = [
    ("total_wait", 2),
    ("disk_wait", 2),
    ("syncq_wait", 2),
    ("asyncq_wait", 2),
    ("scrub", 1),
    ("trim", 1),
    ("rebuild", 1),
];
const LATENCY_AVERAGE_BOTTOM_LABELS: [&str; LATENCY_AVERAGE_COLUMNS] = [
    "read", "write", "read", "write", "read", "write", "read", "write", "wait", "wait", "wait",
];
/// The columns of `zpool iostat -q`: pending and active per queue.
pub const QUEUE_COLUMNS: usize = 14;
const QUEUE_TOP_LABELS: [(&str, usize); 7] = [
    ("syncq_read", 2),
    ("syncq_write", 2),
    ("asyncq_read", 2),
    ("asyncq_write", 2),
    ("scrubq_read", 2),
    ("trimq_write", 2),
    ("rebuildq_write", 2),
];
const QUEUE_BOTTOM_LABELS: [&str; QUEUE_COLUMNS] = [
    "pend", "activ", "pend", "activ", "pend", "activ", "pend", "activ", "pend", "activ", "pend",
    "activ", "pend", "activ",
];

/// One group of columns a row prints (a bit of OpenZFS's `cb_flags`).
struct ColumnGroup {
    top: &'static [(&'static str, usize)],
    bottom: &'static [&'static str],
    width: usize,
}

/// The column groups of a report, in OpenZFS's order (default, latency, queues).
fn column_groups(options: IostatOptions) -> Vec<ColumnGroup> {
    let width = |exact_width| {
        if options.exact_numbers {
            exact_width
        } else {
            COLUMN_WIDTH
        }
    };
    let mut groups = vec![ColumnGroup {
        top: &TOP_LABELS,
        bottom: &BOTTOM_LABELS,
        width: width(COLUMN_WIDTH_EXACT),
    }];
    if options.latency {
        groups.push(ColumnGroup {
            top: &LATENCY_AVERAGE_TOP_LABELS,
            bottom: &LATENCY_AVERAGE_BOTTOM_LABELS,
            width: width(COLUMN_WIDTH_EXACT_LATENCY),
        });
    }
    if options.queues {
        groups.push(ColumnGroup {
            top: &QUEUE_TOP_LABELS,
            bottom: &QUEUE_BOTTOM_LABELS,
            width: width(COLUMN_WIDTH_EXACT_QUEUES),
        });
    }
    groups
}

/// `single_histo_average`: the mean of a power-of-two latency histogram, each bucket
/// counted at its midpoint (`2^b + 2^b / 2` ns); 0 when empty.
pub fn histogram_average_ns(histogram: &[u64]) -> u64 {
    let mut count = 0u64;
    let mut total = 0u64;
    for (bucket, &hits) in histogram.iter().enumerate() {
        if hits == 0 || bucket >= 64 {
            continue;
        }
        let midpoint = (1u64 << bucket) + ((1u64 << bucket) / 2);
        total = total.wrapping_add(hits.wrapping_mul(midpoint));
        count += hits;
    }
    total.checked_div(count).unwrap_or(0)
}

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
pub fn format_iostat_header(name_width: usize, options: IostatOptions) -> String {
    let name_width = name_width.max("pool".len());
    let groups = column_groups(options);
    let mut out = format!("{:name_width$}", "");
    for group in &groups {
        push_labels(&mut out, group.top, group.width);
    }
    out.push('\n');
    out.push_str(&format!("{:<name_width$}", "pool"));
    for group in &groups {
        for label in group.bottom {
            out.push_str(&format!("  {label:>width$}", width = group.width));
        }
    }
    out.push('\n');
    out.push_str(&format_iostat_separator(name_width, options));
    out
}

/// A dashes line under every column, newline-terminated.
pub fn format_iostat_separator(name_width: usize, options: IostatOptions) -> String {
    let name_width = name_width.max("pool".len());
    let mut out = "-".repeat(name_width);
    for group in column_groups(options) {
        for _ in group.bottom {
            out.push_str("  ");
            out.push_str(&"-".repeat(group.width));
        }
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
        out.push_str(&format_iostat_header(name_width, options));
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
                    push_class_heading(&mut out, class, name_width, options);
                }
                out.push('\n');
                for row in rows {
                    push_row(&mut out, row, options, name_width);
                    printed_rows += 1;
                }
            }
            if printed_rows > 0 && !options.scripted {
                out.push_str(&format_iostat_separator(name_width, options));
            }
        }
    }
    if pools.len() > 1 && !options.verbose && !options.scripted {
        out.push_str(&format_iostat_separator(name_width, options));
    }
    out
}

/// `print_iostat_dashes(cb, 0, class)` without its newline (the caller adds it).
fn push_class_heading(out: &mut String, class: &str, name_width: usize, options: IostatOptions) {
    let heading_width = name_width.max("pool".len()).max(class.len());
    out.push_str(&format!("{class:<heading_width$}"));
    for group in column_groups(options) {
        for _ in group.bottom {
            out.push_str(&format!("  {:>width$}", "-", width = group.width));
        }
    }
}

fn push_row(out: &mut String, row: &IostatRow, options: IostatOptions, name_width: usize) {
    let format_value = |value: u64| {
        if options.exact_numbers {
            value.to_string()
        } else {
            nicenum(value)
        }
    };
    // (text, column width) of every cell, group by group.
    let groups = column_groups(options);
    let mut cells: Vec<(String, usize)> = Vec::with_capacity(BOTTOM_LABELS.len());
    let default_width = groups[0].width;
    match (row.alloc_bytes, row.free_bytes) {
        (Some(alloc_bytes), Some(free_bytes)) => {
            cells.push((format_value(alloc_bytes), default_width));
            cells.push((format_value(free_bytes), default_width));
        }
        _ => {
            let not_applicable = if options.exact_numbers { "0" } else { "-" };
            cells.push((not_applicable.to_string(), default_width));
            cells.push((not_applicable.to_string(), default_width));
        }
    }
    for value in [row.read_ops, row.write_ops, row.read_bytes, row.write_bytes] {
        cells.push((format_value(value), default_width));
    }
    for group in groups.iter().skip(1) {
        if group.bottom.len() == LATENCY_AVERAGE_COLUMNS {
            for &ns in &row.latency_ns {
                // ZFS_NICENUM_TIME and _RAWTIME: a zero latency is "-".
                let text = match (ns, options.exact_numbers) {
                    (0, _) => "-".to_string(),
                    (_, true) => ns.to_string(),
                    (_, false) => nicetime(ns),
                };
                cells.push((text, group.width));
            }
        } else {
            for &count in &row.queue_counts {
                cells.push((format_value(count), group.width));
            }
        }
    }
    if options.scripted {
        out.push_str(&row.name);
        for (cell, _) in cells {
            out.push('\t');
            out.push_str(&cell);
        }
    } else {
        let indented = format!("{:depth$}{}", "", row.name, depth = row.depth);
        out.push_str(&format!("{indented:<name_width$}"));
        for (cell, column_width) in cells {
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

/// Buckets of a request-size histogram (`VDEV_RQ_HISTO_BUCKETS`).
pub const SIZE_BUCKETS: usize = 25;
/// `-r`'s first printed bucket: requests are never smaller than 512 bytes.
const SIZE_FIRST_PRINTED_BUCKET: usize = 9;
/// The columns of `zpool iostat -r`, in order: sync read, sync write, async read, async
/// write, scrub, trim, rebuild, each individual then aggregated
/// (`vsx_type_to_nvlist[IOS_RQ_HISTO]`).
pub const SIZE_HISTOGRAM_COLUMNS: usize = 14;
const SIZE_TOP_LABELS: [(&str, usize); 7] = [
    ("sync_read", 2),
    ("sync_write", 2),
    ("async_read", 2),
    ("async_write", 2),
    ("scrub", 2),
    ("trim", 2),
    ("rebuild", 2),
];
const SIZE_BOTTOM_LABELS: [&str; SIZE_HISTOGRAM_COLUMNS] = [
    "ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg", "ind", "agg", "ind",
    "agg",
];

/// Which histogram `print_iostat_histos` prints (`IOS_L_HISTO` or `IOS_RQ_HISTO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistogramKind {
    /// `-w`: 37 latency buckets, labelled by their upper end as a time.
    Latency,
    /// `-r`: 25 size buckets from 512 bytes, labelled by their start.
    RequestSize,
}

impl HistogramKind {
    /// The word over the bucket labels (`histo_to_title`).
    pub fn title(self) -> &'static str {
        match self {
            HistogramKind::Latency => "latency",
            HistogramKind::RequestSize => "req_size",
        }
    }

    pub fn bucket_count(self) -> usize {
        match self {
            HistogramKind::Latency => LATENCY_BUCKETS,
            HistogramKind::RequestSize => SIZE_BUCKETS,
        }
    }

    pub fn column_count(self) -> usize {
        match self {
            HistogramKind::Latency => LATENCY_HISTOGRAM_COLUMNS,
            HistogramKind::RequestSize => SIZE_HISTOGRAM_COLUMNS,
        }
    }

    fn labels(self) -> (&'static [(&'static str, usize)], &'static [&'static str]) {
        match self {
            HistogramKind::Latency => (&LATENCY_TOP_LABELS, &LATENCY_BOTTOM_LABELS),
            HistogramKind::RequestSize => (&SIZE_TOP_LABELS, &SIZE_BOTTOM_LABELS),
        }
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
    let slices: Vec<&[u64]> = columns.iter().map(|c| &c[..]).collect();
    format_histogram(
        HistogramKind::Latency,
        vdev_name,
        name_width,
        &slices,
        options,
    )
}

/// One vdev's histogram block of either kind (`print_iostat_histos`). `columns` holds
/// `kind.column_count()` columns of `kind.bucket_count()` counts; a short column reads
/// as zeros (the caller's arrays are OpenZFS's sizes, this only guards the printer).
pub fn format_histogram(
    kind: HistogramKind,
    vdev_name: &str,
    name_width: usize,
    columns: &[&[u64]],
    options: IostatOptions,
) -> String {
    debug_assert_eq!(columns.len(), kind.column_count());
    let highest = columns
        .iter()
        .flat_map(|c| c.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let column_width = if options.exact_numbers {
        // MAX(5, log10(max) + 1): the digits of the largest count.
        COLUMN_WIDTH.max(highest.max(1).to_string().len())
    } else {
        COLUMN_WIDTH
    };
    let title = kind.title();
    let (top_labels, bottom_labels) = kind.labels();
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
        push_labels(&mut out, top_labels, column_width);
        out.push('\n');
        out.push_str(&format!("{title:<header_width$}"));
        for label in bottom_labels {
            out.push_str(&format!("  {label:>column_width$}"));
        }
        out.push('\n');
        out.push_str(&"-".repeat(header_width));
        for _ in bottom_labels {
            out.push_str("  ");
            out.push_str(&"-".repeat(column_width));
        }
        out.push('\n');
    }
    let first_bucket = match kind {
        HistogramKind::Latency => 0,
        HistogramKind::RequestSize => SIZE_FIRST_PRINTED_BUCKET,
    };
    for bucket in first_bucket..kind.bucket_count() {
        let (bucket_value, bucket_text) = match kind {
            HistogramKind::Latency => {
                let upper_ns = (1u64 << (bucket + 1)) - 1;
                (upper_ns, nicetime(upper_ns))
            }
            HistogramKind::RequestSize => {
                let start_bytes = 1u64 << bucket;
                (start_bytes, nicenum(start_bytes))
            }
        };
        if options.scripted {
            out.push_str(&bucket_value.to_string());
        } else {
            out.push_str(&format!("{bucket_text:<name_width$}"));
        }
        for column in columns {
            let cell = format_value(column.get(bucket).copied().unwrap_or(0));
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
        let entire_width = name_width + (column_width + 2) * bottom_labels.len();
        out.push_str(&"-".repeat(entire_width));
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "iostat_tests.rs"]
mod tests;
