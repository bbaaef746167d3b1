//! Golden tests for `status.rs`: whole `zpool status` outputs in OpenZFS's layout.

use super::*;

/// 2026-11-22 02:54:54 UTC.
const END_EPOCH: i64 = 1_795_316_094;
const UTC: TimeZone = TimeZone::FixedOffsetSecs(0);

fn row(name: &str, state: &str, children: Vec<VdevStatusRow>) -> VdevStatusRow {
    VdevStatusRow {
        name: name.to_string(),
        state: state.to_string(),
        children,
        ..VdevStatusRow::default()
    }
}

fn leaf(name: &str) -> VdevStatusRow {
    row(name, "ONLINE", Vec::new())
}

// The simplest pool: no scan line (never scrubbed), name column at its minimum of 10.
#[test]
fn healthy_single_disk_pool_golden() {
    let view = PoolStatusView {
        name: "tank".to_string(),
        state: "ONLINE".to_string(),
        root: row("tank", "ONLINE", vec![leaf("/tmp/d1")]),
        ..PoolStatusView::default()
    };
    let expected = "  pool: tank
 state: ONLINE
config:

\tNAME        STATE     READ WRITE CKSUM
\ttank        ONLINE       0     0     0
\t  /tmp/d1   ONLINE       0     0     0

errors: No known data errors
";
    assert_eq!(format_status_in(&view, false, false, UTC), expected);
}

// A degraded mirror with a missing disk: status/action/see block, "was /path" note,
// and a name column widened by the deepest path.
#[test]
fn degraded_mirror_with_missing_device_golden() {
    let mut missing = row("12345678901234567890", "UNAVAIL", Vec::new());
    missing.note = Some("was /var/tmp/zetta/disk2".to_string());
    let mut view = PoolStatusView {
        name: "tank".to_string(),
        state: "DEGRADED".to_string(),
        root: row(
            "tank",
            "DEGRADED",
            vec![row(
                "mirror-0",
                "DEGRADED",
                vec![leaf("/var/tmp/zetta/disk1"), missing],
            )],
        ),
        ..PoolStatusView::default()
    };
    view.set_reason(&STATUS_MISSING_DEV_REPLICATED);
    let expected = "  pool: tank
 state: DEGRADED
status: One or more devices could not be opened.  Sufficient replicas exist for
\tthe pool to continue functioning in a degraded state.
action: Attach the missing device and online it using 'zpool online'.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-2Q
config:

\tNAME                      STATE     READ WRITE CKSUM
\ttank                      DEGRADED     0     0     0
\t  mirror-0                DEGRADED     0     0     0
\t    /var/tmp/zetta/disk1  ONLINE       0     0     0
\t    12345678901234567890  UNAVAIL      0     0     0  was /var/tmp/zetta/disk2

errors: No known data errors
";
    assert_eq!(format_status_in(&view, false, false, UTC), expected);
}

// A finished scrub that repaired data: the scan line ends with ctime's text; counters
// above 1023 go through nicenum unless -p.
#[test]
fn scrub_repaired_line_and_counters_golden() {
    let mut disk = leaf("/tmp/d1");
    disk.checksum_errors = 1536;
    let view = PoolStatusView {
        name: "tank".to_string(),
        state: "ONLINE".to_string(),
        scan: ScanView::ScrubFinished {
            repaired_bytes: 128 * 1024,
            elapsed_secs: 5,
            errors: 0,
            end_epoch: END_EPOCH,
        },
        root: row("tank", "ONLINE", vec![disk]),
        ..PoolStatusView::default()
    };
    let expected = "  pool: tank
 state: ONLINE
  scan: scrub repaired 128K in 00:00:05 with 0 errors on Sun Nov 22 02:54:54 2026
config:

\tNAME        STATE     READ WRITE CKSUM
\ttank        ONLINE       0     0     0
\t  /tmp/d1   ONLINE       0     0 1.50K

errors: No known data errors
";
    assert_eq!(format_status_in(&view, false, false, UTC), expected);
    let exact = format_status_in(&view, false, true, UTC);
    assert!(exact.contains("\t  /tmp/d1   ONLINE       0     0  1536\n"));
}

// Data errors: a count without -v, the permanent-error file list (8-space indent) with -v.
#[test]
fn data_errors_summary_and_verbose_list_golden() {
    let mut view = PoolStatusView {
        name: "tank".to_string(),
        state: "ONLINE".to_string(),
        root: row("tank", "ONLINE", vec![leaf("/tmp/d1")]),
        data_errors: 2,
        error_paths: vec!["/tank/a.txt".to_string(), "tank/fs:<0x5>".to_string()],
        ..PoolStatusView::default()
    };
    view.set_reason(&STATUS_CORRUPT_DATA);
    let head = "  pool: tank
 state: ONLINE
status: One or more devices has experienced an error resulting in data
\tcorruption.  Applications may be affected.
action: Restore the file in question if possible.  Otherwise restore the
\tentire pool from backup.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-8A
config:

\tNAME        STATE     READ WRITE CKSUM
\ttank        ONLINE       0     0     0
\t  /tmp/d1   ONLINE       0     0     0

";
    assert_eq!(
        format_status_in(&view, false, false, UTC),
        format!("{head}errors: 2 data errors, use '-v' for a list\n")
    );
    assert_eq!(
        format_status_in(&view, true, false, UTC),
        format!(
            "{head}errors: Permanent errors have been detected in the following files:\n\n        /tank/a.txt\n        tank/fs:<0x5>\n"
        )
    );
}

// raidz2 with a mirrored log, a cache device and a spare: section headings ("logs" has
// a trailing tab, cache/spares do not) and spare rows without counters.
#[test]
fn raidz2_with_logs_cache_and_spares_golden() {
    let mut spare = row("/tmp/s1", "AVAIL", Vec::new());
    spare.note = None;
    let view = PoolStatusView {
        name: "tank".to_string(),
        state: "ONLINE".to_string(),
        root: row(
            "tank",
            "ONLINE",
            vec![row(
                "raidz2-0",
                "ONLINE",
                vec![
                    leaf("/tmp/d1"),
                    leaf("/tmp/d2"),
                    leaf("/tmp/d3"),
                    leaf("/tmp/d4"),
                ],
            )],
        ),
        logs: vec![row(
            "mirror-1",
            "ONLINE",
            vec![leaf("/tmp/l1"), leaf("/tmp/l2")],
        )],
        cache: vec![leaf("/tmp/c1")],
        spares: vec![spare],
        ..PoolStatusView::default()
    };
    let expected = "  pool: tank
 state: ONLINE
config:

\tNAME         STATE     READ WRITE CKSUM
\ttank         ONLINE       0     0     0
\t  raidz2-0   ONLINE       0     0     0
\t    /tmp/d1  ONLINE       0     0     0
\t    /tmp/d2  ONLINE       0     0     0
\t    /tmp/d3  ONLINE       0     0     0
\t    /tmp/d4  ONLINE       0     0     0
\tlogs\t
\t  mirror-1   ONLINE       0     0     0
\t    /tmp/l1  ONLINE       0     0     0
\t    /tmp/l2  ONLINE       0     0     0
\tcache
\t  /tmp/c1    ONLINE       0     0     0
\tspares
\t  /tmp/s1    AVAIL   \n\nerrors: No known data errors
";
    assert_eq!(format_status_in(&view, false, false, UTC), expected);
}

// A running resilver: two tab-indented progress lines, the estimate only above
// 10 MiB/s, and the "(resilvering)" note on the target disk.
#[test]
fn resilver_in_progress_golden() {
    let mut target = leaf("/tmp/d2");
    target.note = Some("(resilvering)".to_string());
    let progress = ScanProgress {
        start_epoch: END_EPOCH - 60,
        pause_epoch: None,
        examined_bytes: 512 * 1024 * 1024,
        to_examine_bytes: 1024 * 1024 * 1024,
        issued_bytes: 256 * 1024 * 1024,
        to_issue_bytes: 1024 * 1024 * 1024,
        processed_bytes: 256 * 1024 * 1024,
        scan_rate_bytes_per_sec: 64 * 1024 * 1024,
        issue_rate_bytes_per_sec: 32 * 1024 * 1024,
    };
    let mut view = PoolStatusView {
        name: "tank".to_string(),
        state: "ONLINE".to_string(),
        scan: ScanView::ResilverInProgress(progress.clone()),
        root: row(
            "tank",
            "ONLINE",
            vec![row("mirror-0", "ONLINE", vec![leaf("/tmp/d1"), target])],
        ),
        ..PoolStatusView::default()
    };
    view.set_reason(&STATUS_RESILVERING);
    let text = format_status_in(&view, false, false, UTC);
    let expected_scan = "  scan: resilver in progress since Sun Nov 22 02:53:54 2026
\t512M / 1G scanned at 64M/s, 256M / 1G issued at 32M/s
\t256M resilvered, 25.00% done, 00:00:24 to go
config:
";
    assert!(text.contains(expected_scan), "{text}");
    assert!(text.contains("\t    /tmp/d2  ONLINE       0     0     0  (resilvering)\n"));
    assert!(text.starts_with(
        "  pool: tank\n state: ONLINE\nstatus: One or more devices is currently being resilvered.  The pool will\n\tcontinue to function, possibly in a degraded state.\naction: Wait for the resilver to complete.\n  scan:"
    ));

    // Slow scrub: no estimate. Paused scrub: no rates, two header lines.
    let mut slow = progress;
    slow.issue_rate_bytes_per_sec = 1024;
    view.scan = ScanView::ScrubInProgress(slow.clone());
    assert!(format_status_in(&view, false, false, UTC)
        .contains("\t256M repaired, 25.00% done, no estimated completion time\n"));
    slow.pause_epoch = Some(END_EPOCH);
    view.scan = ScanView::ScrubInProgress(slow);
    let paused = format_status_in(&view, false, false, UTC);
    assert!(paused.contains(
        "  scan: scrub paused since Sun Nov 22 02:54:54 2026\n\tscrub started on Sun Nov 22 02:53:54 2026\n\t512M / 1G scanned, 256M / 1G issued\n\t256M repaired, 25.00% done\n"
    ), "{paused}");
}

// `zpool status -x` on a healthy system.
#[test]
fn all_healthy_text() {
    assert_eq!(format_status_all_healthy(), "all pools are healthy");
}
