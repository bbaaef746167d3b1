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
    let header = format_iostat_header(10, true);
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
