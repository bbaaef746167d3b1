//! `zpool status` text.
//!
//! Counterpart: `status_callback`, `print_status_config`, `print_class_vdevs`,
//! `print_l2cache`, `print_spares`, `print_scan_scrub_resilver_status`,
//! `print_status_reason` and `print_error_log` in `cmd/zpool/zpool_main.c`.
//!
//! Layout (every byte matters; scripts grep it):
//! ```text
//!   pool: NAME
//!  state: HEALTH
//! status: text            (only when set; continuation lines start with a tab)
//! action: text
//!    see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-XX
//!   scan: ...             (absent when the pool was never scrubbed or resilvered)
//! config:
//!
//! \tNAME        STATE     READ WRITE CKSUM
//! \tpool        ONLINE       0     0     0
//! \t  vdev      ...
//! \tlogs\t                (also "dedup\t" and "special\t", in that order: dedup,
//!                          special, logs; then "\tcache" and "\tspares" without a tab)
//!
//! errors: No known data errors
//! ```
//! Rows are `\t%*s%-*s  %-8s %5s %5s %5s`: indent of 2 per level, the name padded to the
//! name width (the longest indent + name, at least 10), the state padded to 8, three
//! counters 5 wide (nicenum, or exact with `-p`), then `  note` when the vdev has one.
//! Spare rows print no counters at all (the state keeps its 8-wide padding).

use crate::nicenum::{ctime_in, nice_time_hms, nicenum, nicenum_space, TimeZone};

/// One row of the config table; `children` are printed beneath it, two columns deeper.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VdevStatusRow {
    pub name: String,
    /// ONLINE, DEGRADED, FAULTED, OFFLINE, REMOVED, UNAVAIL; for spares AVAIL or INUSE.
    pub state: String,
    pub read_errors: u64,
    pub write_errors: u64,
    pub checksum_errors: u64,
    /// Printed after two spaces: "was /path", "cannot open", "(resilvering)", ...
    pub note: Option<String>,
    pub children: Vec<VdevStatusRow>,
}

/// A scrub or resilver that is running (or a paused scrub).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScanProgress {
    pub start_epoch: i64,
    /// When a scrub was paused; a paused scrub prints no rates and no estimate.
    pub pause_epoch: Option<i64>,
    /// Bytes examined so far and bytes there are to examine.
    pub examined_bytes: u64,
    pub to_examine_bytes: u64,
    /// Bytes whose I/O was issued so far, and there are to issue (to examine - skipped).
    pub issued_bytes: u64,
    pub to_issue_bytes: u64,
    /// Bytes repaired (scrub) or resilvered (resilver).
    pub processed_bytes: u64,
    /// This pass's examine and issue rates (bytes examined or issued / elapsed seconds).
    pub scan_rate_bytes_per_sec: u64,
    pub issue_rate_bytes_per_sec: u64,
}

/// The `scan:` line(s).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ScanView {
    /// No scrub or resilver ever ran: OpenZFS 2.x prints no `scan:` line at all.
    #[default]
    None,
    ScrubFinished {
        repaired_bytes: u64,
        elapsed_secs: u64,
        errors: u64,
        end_epoch: i64,
    },
    ResilverFinished {
        resilvered_bytes: u64,
        elapsed_secs: u64,
        errors: u64,
        end_epoch: i64,
    },
    ScrubInProgress(ScanProgress),
    ResilverInProgress(ScanProgress),
    ScrubCanceled {
        end_epoch: i64,
    },
    ResilverCanceled {
        end_epoch: i64,
    },
}

/// Everything `zpool status` prints for one pool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolStatusView {
    pub name: String,
    pub state: String,
    /// Text after "status: ", without the final newline; continuation lines begin "\t"
    /// (see the `STATUS_*` constants).
    pub status: Option<String>,
    pub action: Option<String>,
    /// A message id ("ZFS-8000-2Q"), printed as its openzfs-docs URL; a full URL is
    /// printed as given.
    pub see: Option<String>,
    pub scan: ScanView,
    /// The pool row (name = pool name); children are the normal top-level vdevs.
    pub root: VdevStatusRow,
    pub dedup: Vec<VdevStatusRow>,
    pub special: Vec<VdevStatusRow>,
    pub logs: Vec<VdevStatusRow>,
    pub cache: Vec<VdevStatusRow>,
    pub spares: Vec<VdevStatusRow>,
    pub data_errors: u64,
    /// Paths for `-v`, e.g. "/tank/file" or "tank/fs:<0x5>".
    pub error_paths: Vec<String>,
}

/// A status/action pair with its message id, as `print_status_reason` words them.
pub struct StatusReason {
    pub status: &'static str,
    pub action: &'static str,
    pub msgid: Option<&'static str>,
}

/// ZPOOL_STATUS_MISSING_DEV_R: a device is gone but replicas keep the pool going.
pub const STATUS_MISSING_DEV_REPLICATED: StatusReason = StatusReason {
    status: "One or more devices could not be opened.  Sufficient replicas exist for\n\tthe pool to continue functioning in a degraded state.",
    action: "Attach the missing device and online it using 'zpool online'.",
    msgid: Some("ZFS-8000-2Q"),
};
/// ZPOOL_STATUS_MISSING_DEV_NR: a device is gone and the pool cannot go on.
pub const STATUS_MISSING_DEV_NO_REPLICAS: StatusReason = StatusReason {
    status: "One or more devices could not be opened.  There are insufficient\n\treplicas for the pool to continue functioning.",
    action: "Attach the missing device and online it using 'zpool online'.",
    msgid: Some("ZFS-8000-3C"),
};
/// ZPOOL_STATUS_FAILING_DEV: errors were seen and corrected.
pub const STATUS_FAILING_DEV: StatusReason = StatusReason {
    status: "One or more devices has experienced an unrecoverable error.  An\n\tattempt was made to correct the error.  Applications are unaffected.",
    action: "Determine if the device needs to be replaced, and clear the errors\n\tusing 'zpool clear' or replace the device with 'zpool replace'.",
    msgid: Some("ZFS-8000-9P"),
};
/// ZPOOL_STATUS_CORRUPT_DATA: permanent errors in files.
pub const STATUS_CORRUPT_DATA: StatusReason = StatusReason {
    status: "One or more devices has experienced an error resulting in data\n\tcorruption.  Applications may be affected.",
    action: "Restore the file in question if possible.  Otherwise restore the\n\tentire pool from backup.",
    msgid: Some("ZFS-8000-8A"),
};
/// ZPOOL_STATUS_OFFLINE_DEV: an administrator took a device offline.
pub const STATUS_OFFLINE_DEV: StatusReason = StatusReason {
    status: "One or more devices has been taken offline by the administrator.\n\tSufficient replicas exist for the pool to continue functioning in a\n\tdegraded state.",
    action: "Online the device using 'zpool online' or replace the device with\n\t'zpool replace'.",
    msgid: None,
};
/// ZPOOL_STATUS_VERSION_OLDER: a legacy (pre-feature-flags) pool. Healthy for `-x`.
pub const STATUS_VERSION_OLDER: StatusReason = StatusReason {
    status: "The pool is formatted using a legacy on-disk format.  The pool can\n\tstill be used, but some features are unavailable.",
    action: "Upgrade the pool using 'zpool upgrade'.  Once this is done, the\n\tpool will no longer be accessible on software that does not support\n\tfeature flags.",
    msgid: None,
};
/// ZPOOL_STATUS_FEAT_DISABLED: features this software supports are not enabled. Healthy
/// for `-x`.
pub const STATUS_FEAT_DISABLED: StatusReason = StatusReason {
    status: "Some supported and requested features are not enabled on the pool.\n\tThe pool can still be used, but some features are unavailable.",
    action: "Enable all features using 'zpool upgrade'. Once this is done,\n\tthe pool may no longer be accessible by software that does not support\n\tthe features. See zpool-features(7) for details.",
    msgid: None,
};
/// ZPOOL_STATUS_RESILVERING.
pub const STATUS_RESILVERING: StatusReason = StatusReason {
    status: "One or more devices is currently being resilvered.  The pool will\n\tcontinue to function, possibly in a degraded state.",
    action: "Wait for the resilver to complete.",
    msgid: None,
};

impl PoolStatusView {
    /// Sets status, action and see from one of the `STATUS_*` reasons.
    pub fn set_reason(&mut self, reason: &StatusReason) {
        self.status = Some(reason.status.to_string());
        self.action = Some(reason.action.to_string());
        self.see = reason.msgid.map(str::to_string);
    }
}

/// `zpool status -x` when nothing is wrong.
pub fn format_status_all_healthy() -> &'static str {
    "all pools are healthy"
}

/// The smallest NAME column of the config table.
const NAME_WIDTH_MIN: usize = 10;
/// Issue rate below which no completion estimate is printed (10 MiB/s).
const ESTIMATE_ISSUE_RATE_BYTES_PER_SEC_MIN: u64 = 10 * 1024 * 1024;

/// `zpool status [-v] [-p]` for one pool, in local time.
pub fn format_status(view: &PoolStatusView, verbose: bool, exact_numbers: bool) -> String {
    format_status_in(view, verbose, exact_numbers, TimeZone::Local)
}

/// Several pools, separated by a blank line as OpenZFS does.
pub fn format_status_many(views: &[PoolStatusView], verbose: bool, exact_numbers: bool) -> String {
    let texts: Vec<String> = views
        .iter()
        .map(|view| format_status(view, verbose, exact_numbers))
        .collect();
    texts.join("\n")
}

/// [`format_status`] with an explicit time zone for the scan timestamps.
pub fn format_status_in(
    view: &PoolStatusView,
    verbose: bool,
    exact_numbers: bool,
    zone: TimeZone,
) -> String {
    let mut out = String::new();
    out.push_str(&format!("  pool: {}\n", view.name));
    out.push_str(&format!(" state: {}\n", view.state));
    if let Some(status) = &view.status {
        out.push_str(&format!("status: {status}\n"));
    }
    if let Some(action) = &view.action {
        out.push_str(&format!("action: {action}\n"));
    }
    if let Some(see) = &view.see {
        if see.contains("://") {
            out.push_str(&format!("   see: {see}\n"));
        } else {
            out.push_str(&format!(
                "   see: https://openzfs.github.io/openzfs-docs/msg/{see}\n"
            ));
        }
    }
    push_scan(&mut out, &view.scan, zone);

    let name_width = status_name_width(view);
    out.push_str("config:\n\n");
    out.push_str(&format!(
        "\t{:<name_width$}  {:<8} {:>5} {:>5} {:>5}\n",
        "NAME", "STATE", "READ", "WRITE", "CKSUM"
    ));
    let table = StatusTable {
        name_width,
        exact_numbers,
    };
    table.push_row(&mut out, &view.root, 0, false);
    for (class, rows) in [
        ("dedup", &view.dedup),
        ("special", &view.special),
        ("logs", &view.logs),
    ] {
        if !rows.is_empty() {
            out.push_str(&format!("\t{class}\t\n"));
            for row in rows {
                table.push_row(&mut out, row, 2, false);
            }
        }
    }
    if !view.cache.is_empty() {
        out.push_str("\tcache\n");
        for row in &view.cache {
            table.push_row(&mut out, row, 2, false);
        }
    }
    if !view.spares.is_empty() {
        out.push_str("\tspares\n");
        for row in &view.spares {
            table.push_row(&mut out, row, 2, true);
        }
    }

    out.push('\n');
    if view.data_errors == 0 {
        out.push_str("errors: No known data errors\n");
    } else if !verbose {
        out.push_str(&format!(
            "errors: {} data errors, use '-v' for a list\n",
            view.data_errors
        ));
    } else {
        out.push_str("errors: Permanent errors have been detected in the following files:\n\n");
        for path in &view.error_paths {
            out.push_str(&format!("{:7} {path}\n", ""));
        }
    }
    out
}

/// `max_width`: the longest indent + name over the whole tree, at least 10.
fn status_name_width(view: &PoolStatusView) -> usize {
    fn widest(row: &VdevStatusRow, depth: usize) -> usize {
        row.children
            .iter()
            .map(|child| widest(child, depth + 2))
            .fold(row.name.len() + depth, usize::max)
    }
    let sections = [
        &view.dedup,
        &view.special,
        &view.logs,
        &view.cache,
        &view.spares,
    ];
    sections
        .iter()
        .flat_map(|rows| rows.iter())
        .map(|row| widest(row, 2))
        .fold(widest(&view.root, 0), usize::max)
        .max(NAME_WIDTH_MIN)
}

struct StatusTable {
    name_width: usize,
    exact_numbers: bool,
}

impl StatusTable {
    fn counter(&self, count: u64) -> String {
        if self.exact_numbers {
            count.to_string()
        } else {
            nicenum(count)
        }
    }

    /// `print_status_config` for one row and its children.
    fn push_row(&self, out: &mut String, row: &VdevStatusRow, depth: usize, is_spare: bool) {
        let name_width = self.name_width.saturating_sub(depth);
        out.push_str(&format!(
            "\t{:depth$}{:<name_width$}  {:<8}",
            "", row.name, row.state
        ));
        if !is_spare {
            out.push_str(&format!(
                " {:>5} {:>5} {:>5}",
                self.counter(row.read_errors),
                self.counter(row.write_errors),
                self.counter(row.checksum_errors)
            ));
        }
        if let Some(note) = &row.note {
            out.push_str("  ");
            out.push_str(note);
        }
        out.push('\n');
        for child in &row.children {
            self.push_row(out, child, depth + 2, is_spare);
        }
    }
}

/// `print_scan_scrub_resilver_status`.
fn push_scan(out: &mut String, scan: &ScanView, zone: TimeZone) {
    let when = |epoch: i64| ctime_in(epoch, zone);
    match scan {
        ScanView::None => {}
        ScanView::ScrubFinished {
            repaired_bytes,
            elapsed_secs,
            errors,
            end_epoch,
        } => {
            out.push_str(&format!(
                "  scan: scrub repaired {} in {} with {errors} errors on {}\n",
                nicenum_space(*repaired_bytes),
                nice_time_hms(*elapsed_secs),
                when(*end_epoch)
            ));
        }
        ScanView::ResilverFinished {
            resilvered_bytes,
            elapsed_secs,
            errors,
            end_epoch,
        } => {
            out.push_str(&format!(
                "  scan: resilvered {} in {} with {errors} errors on {}\n",
                nicenum_space(*resilvered_bytes),
                nice_time_hms(*elapsed_secs),
                when(*end_epoch)
            ));
        }
        ScanView::ScrubCanceled { end_epoch } => {
            out.push_str(&format!("  scan: scrub canceled on {}\n", when(*end_epoch)));
        }
        ScanView::ResilverCanceled { end_epoch } => {
            out.push_str(&format!(
                "  scan: resilver canceled on {}\n",
                when(*end_epoch)
            ));
        }
        ScanView::ScrubInProgress(progress) => push_scan_progress(out, progress, false, zone),
        ScanView::ResilverInProgress(progress) => push_scan_progress(out, progress, true, zone),
    }
}

fn push_scan_progress(
    out: &mut String,
    progress: &ScanProgress,
    is_resilver: bool,
    zone: TimeZone,
) {
    // Resilvers cannot be paused.
    let pause_epoch = if is_resilver {
        None
    } else {
        progress.pause_epoch
    };
    match (is_resilver, pause_epoch) {
        (true, _) => out.push_str(&format!(
            "  scan: resilver in progress since {}\n",
            ctime_in(progress.start_epoch, zone)
        )),
        (false, None) => out.push_str(&format!(
            "  scan: scrub in progress since {}\n",
            ctime_in(progress.start_epoch, zone)
        )),
        (false, Some(pause_epoch)) => {
            out.push_str(&format!(
                "  scan: scrub paused since {}\n",
                ctime_in(pause_epoch, zone)
            ));
            out.push_str(&format!(
                "\tscrub started on {}\n",
                ctime_in(progress.start_epoch, zone)
            ));
        }
    }
    let running = pause_epoch.is_none();
    out.push_str(&format!(
        "\t{} / {} scanned",
        nicenum_space(progress.examined_bytes),
        nicenum_space(progress.to_examine_bytes)
    ));
    if running && progress.scan_rate_bytes_per_sec > 0 {
        out.push_str(&format!(
            " at {}/s",
            nicenum_space(progress.scan_rate_bytes_per_sec)
        ));
    }
    out.push_str(&format!(
        ", {} / {} issued",
        nicenum_space(progress.issued_bytes),
        nicenum_space(progress.to_issue_bytes)
    ));
    if running && progress.issue_rate_bytes_per_sec > 0 {
        out.push_str(&format!(
            " at {}/s",
            nicenum_space(progress.issue_rate_bytes_per_sec)
        ));
    }
    out.push('\n');
    // OpenZFS divides by to_issue without a guard; we print 0.00% for an empty scan.
    let percent_done = if progress.to_issue_bytes == 0 {
        0.0
    } else {
        100.0 * progress.issued_bytes as f64 / progress.to_issue_bytes as f64
    };
    let verb = if is_resilver {
        "resilvered"
    } else {
        "repaired"
    };
    out.push_str(&format!(
        "\t{} {verb}, {percent_done:.2}% done",
        nicenum_space(progress.processed_bytes)
    ));
    if !running {
        out.push('\n');
        return;
    }
    let issue_rate = progress.issue_rate_bytes_per_sec;
    let started_work = if is_resilver {
        progress.processed_bytes > 0
    } else {
        progress.issued_bytes > 0
    };
    if progress.to_issue_bytes >= progress.issued_bytes
        && issue_rate >= ESTIMATE_ISSUE_RATE_BYTES_PER_SEC_MIN
        && started_work
    {
        let remaining_secs = (progress.to_issue_bytes - progress.issued_bytes) / issue_rate;
        out.push_str(&format!(", {} to go\n", nice_time_hms(remaining_secs)));
    } else {
        out.push_str(", no estimated completion time\n");
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
