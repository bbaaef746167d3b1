//! Golden tests for `iostat.rs`: whole `zpool iostat` reports in OpenZFS's layout.

use super::*;

const MIB: u64 = 1024 * 1024;

fn stat_row(
    name: &str,
    depth: usize,
    capacity: Option<(u64, u64)>,
    ops: (u64, u64),
    bytes: (u64, u64),
) -> IostatRow {
    IostatRow {
        name: name.to_string(),
        depth,
        alloc_bytes: capacity.map(|(alloc, _)| alloc),
        free_bytes: capacity.map(|(_, free)| free),
        read_ops: ops.0,
        write_ops: ops.1,
        read_bytes: bytes.0,
        write_bytes: bytes.1,
        ..IostatRow::default()
    }
}

fn mirror_pool() -> IostatPool {
    IostatPool {
        rows: vec![
            stat_row(
                "tank",
                0,
                Some((269 * 1024, 1008 * MIB)),
                (0, 0),
                (107, 946),
            ),
            stat_row(
                "mirror-0",
                2,
                Some((269 * 1024, 1008 * MIB)),
                (0, 0),
                (107, 946),
            ),
            stat_row("/tmp/a", 4, None, (0, 0), (102, 473)),
            stat_row("/tmp/b", 4, None, (0, 0), (5, 473)),
        ],
        ..IostatPool::default()
    }
}

// Plain `zpool iostat`: centred group labels (with the trailing space OpenZFS prints),
// right-aligned column labels, 10-wide name column, one row per pool.
#[test]
fn iostat_single_pool_golden() {
    let text = format_iostat(&[mirror_pool()], IostatOptions::default());
    let expected = "              capacity     operations     bandwidth \n\
pool        alloc   free   read  write   read  write\n\
----------  -----  -----  -----  -----  -----  -----\n\
tank         269K  1008M      0      0    107    946\n";
    assert_eq!(text, expected);
}

// `zpool iostat -v`: indented vdevs, "-" for vdevs without capacity, a class heading
// for logs, and a closing dashes line per pool.
#[test]
fn iostat_verbose_golden() {
    let mut pool = mirror_pool();
    pool.logs = vec![stat_row(
        "/tmp/log",
        2,
        Some((0, 1008 * MIB)),
        (0, 3),
        (0, 12 * 1024),
    )];
    let options = IostatOptions {
        verbose: true,
        ..IostatOptions::default()
    };
    let expected = [
        "              capacity     operations     bandwidth ",
        "pool        alloc   free   read  write   read  write",
        "----------  -----  -----  -----  -----  -----  -----",
        "tank         269K  1008M      0      0    107    946",
        "  mirror-0   269K  1008M      0      0    107    946",
        "    /tmp/a      -      -      0      0    102    473",
        "    /tmp/b      -      -      0      0      5    473",
        "logs            -      -      -      -      -      -",
        "  /tmp/log      0  1008M      0      3      0    12K",
        "----------  -----  -----  -----  -----  -----  -----",
        "",
    ]
    .join("\n");
    assert_eq!(format_iostat(&[pool], options), expected);
}

// Two pools without -v end with one dashes line; a long pool name widens the column.
#[test]
fn iostat_two_pools_and_long_name() {
    let mut other = mirror_pool();
    other.rows.truncate(1);
    other.rows[0].name = "backup-pool-01".to_string();
    let text = format_iostat(&[mirror_pool(), other], IostatOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1],
        "pool            alloc   free   read  write   read  write"
    );
    assert_eq!(
        lines[3],
        "tank             269K  1008M      0      0    107    946"
    );
    assert_eq!(
        lines[4],
        "backup-pool-01   269K  1008M      0      0    107    946"
    );
    assert_eq!(
        lines[5],
        "--------------  -----  -----  -----  -----  -----  -----"
    );
    assert_eq!(lines.len(), 6);
}

// -H: no header, no dashes, tab before every value, names unpadded; -p gives exact
// numbers and "0" for missing capacity.
#[test]
fn iostat_scripted_and_exact() {
    let options = IostatOptions {
        verbose: true,
        scripted: true,
        exact_numbers: true,
        ..IostatOptions::default()
    };
    let text = format_iostat(&[mirror_pool()], options);
    assert_eq!(
        text,
        "tank\t275456\t1056964608\t0\t0\t107\t946\n\
mirror-0\t275456\t1056964608\t0\t0\t107\t946\n\
/tmp/a\t0\t0\t0\t0\t102\t473\n\
/tmp/b\t0\t0\t0\t0\t5\t473\n"
    );
}

// -p without -H: columns 15 wide, and the group labels re-centred over them.
#[test]
fn iostat_exact_header_is_wider() {
    let header = format_iostat_header(
        10,
        IostatOptions {
            exact_numbers: true,
            ..IostatOptions::default()
        },
    );
    let lines: Vec<&str> = header.lines().collect();
    let expected = format!(
        "{:24}capacity{:25}operations{:25}bandwidth{:11}",
        "", "", "", ""
    );
    assert_eq!(lines[0], expected);
    assert_eq!(lines[2].len(), 10 + 6 * 17);
}

/// Why: `zpool iostat -w` must print OpenZFS's block: the vdev named over the centred group
/// labels, "latency" over the eleven columns, one row per power-of-two bucket labelled by
/// its upper end (`zfs_nicetime`), a solid line of the block's width.
#[test]
fn latency_histogram_block_is_openzfs_layout() {
    let mut columns = [[0u64; LATENCY_BUCKETS]; LATENCY_HISTOGRAM_COLUMNS];
    columns[1][12] = 3; // writes of 4..8 us
    columns[3][12] = 3;
    columns[0][20] = 1536; // a read of about 1 ms
    let text = format_latency_histogram("tank", 10, &columns, IostatOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "");
    assert_eq!(
        lines[1],
        "tank         total_wait     disk_wait    syncq_wait    asyncq_wait"
    );
    assert_eq!(
        lines[2],
        "latency      read  write   read  write   read  write   read  write  scrub   trim  rebuild"
    );
    assert_eq!(lines[3], format!("----------{}", "  -----".repeat(11)));
    assert_eq!(lines[4], format!("1ns       {}", "      0".repeat(11)));
    assert_eq!(
        lines[4 + 12],
        format!(
            "8us       {}{}",
            "      0      3".repeat(2),
            "      0".repeat(7)
        )
    );
    assert_eq!(&lines[4 + 20][..17], "2ms         1.50K");
    assert_eq!(&lines[4 + 36][..4], "137s");
    assert_eq!(lines[41], "-".repeat(10 + 7 * 11));
    assert_eq!(lines.len(), 42);
    assert_eq!(nicetime(0), "-");
    assert_eq!(nicetime(999_999), "999us");
    assert_eq!(nicetime(1_500_000), "1ms");
}

const DEFAULT_TOP: &str = "              capacity     operations     bandwidth ";
const DEFAULT_BOTTOM: &str = "pool        alloc   free   read  write   read  write";

/// Why: `zpool iostat -l` must print OpenZFS 2.3's header word for word (the latency
/// groups after the default ones, scrub/trim/rebuild one column each) and its averages as
/// `zfs_nicetime`, with `-` for a column that saw no request.
#[test]
fn iostat_latency_columns_golden() {
    let mut pool = mirror_pool();
    pool.rows.truncate(1);
    pool.rows[0].latency_ns = [1_500, 2_500_000, 1_500, 2_500_000, 0, 0, 0, 0, 0, 0, 0];
    let options = IostatOptions {
        latency: true,
        ..IostatOptions::default()
    };
    let text = format_iostat(&[pool.clone()], options);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("{DEFAULT_TOP}   total_wait     disk_wait    syncq_wait    asyncq_wait  scrub   trim  rebuild")
    );
    assert_eq!(
        lines[1],
        format!("{DEFAULT_BOTTOM}   read  write   read  write   read  write   read  write   wait   wait   wait")
    );
    assert_eq!(lines[2], format!("----------{}", "  -----".repeat(17)));
    assert_eq!(
        lines[3],
        format!(
            "tank         269K  1008M      0      0    107    946    1us    2ms    1us    2ms{}",
            "      -".repeat(7)
        )
    );
    // -p: latency columns 10 wide, raw nanoseconds, still "-" for none; -H: tabs.
    let exact = IostatOptions {
        exact_numbers: true,
        scripted: true,
        ..options
    };
    assert_eq!(
        format_iostat(&[pool.clone()], exact),
        format!(
            "tank\t275456\t1056964608\t0\t0\t107\t946\t1500\t2500000\t1500\t2500000{}\n",
            "\t-".repeat(7)
        )
    );
    let exact_header = format_iostat_header(
        10,
        IostatOptions {
            exact_numbers: true,
            latency: true,
            ..IostatOptions::default()
        },
    );
    assert_eq!(
        exact_header.lines().nth(2).map(str::len),
        Some(10 + 6 * 17 + 11 * 12)
    );
}

/// Why: `zpool iostat -q` (and `-lq`, latency before queues as 2.3 orders the flag bits)
/// must print OpenZFS's queue header word for word.
#[test]
fn iostat_queue_columns_golden() {
    let mut pool = mirror_pool();
    pool.rows.truncate(1);
    pool.rows[0].queue_counts[1] = 3;
    let options = IostatOptions {
        queues: true,
        ..IostatOptions::default()
    };
    let text = format_iostat(&[pool.clone()], options);
    let lines: Vec<&str> = text.lines().collect();
    let queue_top =
        "   syncq_read    syncq_write   asyncq_read  asyncq_write   scrubq_read   trimq_write  rebuildq_write";
    assert_eq!(lines[0], format!("{DEFAULT_TOP}{queue_top}"));
    assert_eq!(
        lines[1],
        format!("{DEFAULT_BOTTOM}{}", "   pend  activ".repeat(7))
    );
    assert_eq!(
        lines[3],
        format!(
            "tank         269K  1008M      0      0    107    946      0      3{}",
            "      0".repeat(12)
        )
    );
    let both = format_iostat(
        &[pool],
        IostatOptions {
            latency: true,
            queues: true,
            ..IostatOptions::default()
        },
    );
    let first = both.lines().next().unwrap_or_default();
    assert!(
        first.ends_with(&format!("  scrub   trim  rebuild{queue_top}")),
        "{first}"
    );
    assert_eq!(
        both.lines().nth(1).map(|l| l.split_whitespace().count()),
        Some(1 + 6 + 11 + 14)
    );
}

/// Why: `zpool iostat -r` prints OpenZFS's request-size block: seven groups of ind/agg,
/// "req_size" over the bucket labels, rows from 512 bytes to 16M labelled by their start.
#[test]
fn request_size_histogram_block_is_openzfs_layout() {
    let mut columns = vec![vec![0u64; SIZE_BUCKETS]; SIZE_HISTOGRAM_COLUMNS];
    columns[0][12] = 5; // five 4K sync reads
    columns[7][17] = 2; // two aggregated 128K async writes
    let slices: Vec<&[u64]> = columns.iter().map(|c| &c[..]).collect();
    let text = format_histogram(
        HistogramKind::RequestSize,
        "tank",
        10,
        &slices,
        IostatOptions::default(),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "");
    assert_eq!(
        lines[1],
        "tank          sync_read    sync_write    async_read    async_write      scrub         trim         rebuild  "
    );
    assert_eq!(
        lines[2],
        format!("req_size  {}", "    ind    agg".repeat(7))
    );
    assert_eq!(lines[3], format!("----------{}", "  -----".repeat(14)));
    assert_eq!(lines[4], format!("512       {}", "      0".repeat(14)));
    assert_eq!(
        lines[4 + 3],
        format!("4K              5{}", "      0".repeat(13))
    );
    assert_eq!(
        lines[4 + 8],
        format!(
            "128K      {}      2{}",
            "      0".repeat(7),
            "      0".repeat(6)
        )
    );
    assert_eq!(&lines[4 + 15][..3], "16M");
    assert_eq!(lines[20], "-".repeat(10 + 7 * 14));
    assert_eq!(lines.len(), 21);
    // -H: the bucket's start in bytes, tabs.
    let scripted = format_histogram(
        HistogramKind::RequestSize,
        "tank",
        10,
        &slices,
        IostatOptions {
            scripted: true,
            ..IostatOptions::default()
        },
    );
    assert_eq!(scripted.lines().nth(1), Some("tank"));
    assert_eq!(
        scripted.lines().nth(2),
        Some(format!("512{}", "\t0".repeat(14)).as_str())
    );
}

/// Why: -l's averages are OpenZFS's `single_histo_average` (bucket midpoints), so the
/// same histogram gives the same number as on OpenZFS.
#[test]
fn histogram_average_uses_bucket_midpoints() {
    let mut histogram = [0u64; LATENCY_BUCKETS];
    assert_eq!(histogram_average_ns(&histogram), 0);
    histogram[10] = 1; // 1024..2047 ns: midpoint 1536
    assert_eq!(histogram_average_ns(&histogram), 1536);
    histogram[12] = 1; // 4096..8191: midpoint 6144
    assert_eq!(histogram_average_ns(&histogram), (1536 + 6144) / 2);
}
