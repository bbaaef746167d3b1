//! `zpool iostat -w` (issue 19): latency histograms per vdev, measured by the engine
//! (`vdev::stat_ex`) and printed as OpenZFS 2.3 prints them. One lab and daemon.

mod common;

use common::Lab;

/// One row of a block: the bucket's upper end and the 11 counts.
type Row = (u64, Vec<u64>);

/// The blocks of `zpool iostat -wHp`: (vdev name, 37 rows).
fn blocks(text: &str) -> Vec<(String, Vec<Row>)> {
    text.split("\n\n")
        .map(|b| b.trim_matches('\n'))
        .filter(|b| !b.is_empty())
        .map(|block| {
            let mut lines = block.lines();
            let name = lines.next().unwrap().to_string();
            let rows = lines
                .map(|line| {
                    let fields: Vec<u64> = line.split('\t').map(|f| f.parse().unwrap()).collect();
                    (fields[0], fields[1..].to_vec())
                })
                .collect();
            (name, rows)
        })
        .collect()
}

// Why: `zpool iostat -w` was refused; now the engine measures every leaf request's
// latency. The histogram must have OpenZFS's 37 buckets and 11 columns, count the pool's
// writes, show total wait = disk wait (Zetta has no I/O queue, so queue waits are empty)
// and sum the leaves up the tree (pool = mirror = both sides).
#[test]
fn latency_histograms_count_the_leaves_requests() {
    let mut lab = Lab::new();
    lab.env.push(("ZETTA_MOUNT".to_string(), "0".to_string()));
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    lab.ok("zpool", &["create", "tank", "mirror", &a, &b]);
    for name in ["tank/one", "tank/two", "tank/three"] {
        lab.ok("zfs", &["create", name]);
    }
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let text = lab.ok("zpool", &["iostat", "-wvHp", "tank"]);
    let blocks = blocks(&text);
    let names: Vec<&str> = blocks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["tank", "mirror-0", a.as_str(), b.as_str()],
        "{text}"
    );
    for (name, rows) in &blocks {
        assert_eq!(rows.len(), 37, "{name}");
        for (bucket, (upper, counts)) in rows.iter().enumerate() {
            assert_eq!(*upper, (1u64 << (bucket + 1)) - 1);
            assert_eq!(counts.len(), 11);
            assert_eq!(counts[0], counts[2], "{name}: total read = disk read");
            assert_eq!(counts[1], counts[3], "{name}: total write = disk write");
            assert!(
                counts[4..].iter().all(|c| *c == 0),
                "{name}: no queue waits"
            );
        }
    }
    let column_sum = |block: usize, column: usize| -> u64 {
        blocks[block].1.iter().map(|(_, c)| c[column]).sum()
    };
    assert!(
        column_sum(0, 1) > 0,
        "the pool's writes are counted: {text}"
    );
    assert!(
        column_sum(0, 0) > 0,
        "the scrub's reads are counted: {text}"
    );
    for column in 0..4 {
        assert_eq!(column_sum(0, column), column_sum(1, column));
        assert_eq!(
            column_sum(1, column),
            column_sum(2, column) + column_sum(3, column)
        );
    }
    // A mirror writes both sides: each leaf saw as many writes as the other.
    assert_eq!(column_sum(2, 1), column_sum(3, 1));
    // The human-readable form has OpenZFS's header.
    let text = lab.ok("zpool", &["iostat", "-w", "tank"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1],
        "tank         total_wait     disk_wait    syncq_wait    asyncq_wait"
    );
    assert_eq!(lines.len(), 42, "{text}");
}

/// The fields of `zpool iostat -Hp` rows other than the name, by row name.
fn scripted_rows(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut fields = line.split('\t').map(str::to_string);
            let name = fields.next().unwrap_or_default();
            (name, fields.collect())
        })
        .collect()
}

/// The sum of the counts of `zpool iostat -rHp`'s pool block, per column.
fn request_size_sums(text: &str) -> Vec<u64> {
    let blocks = blocks(text);
    let mut sums = vec![0u64; 14];
    for (_, counts) in &blocks[0].1 {
        for (sum, count) in sums.iter_mut().zip(counts) {
            *sum += count;
        }
    }
    sums
}

// Why: `zpool iostat -l`, `-q` and `-r` were refused ("invalid option"). They must print
// OpenZFS 2.3's columns (17 values with -l, 20 with -q, 14 histogram columns from the
// 512-byte bucket with -r), refuse the combinations 2.3 refuses in its words, and their
// numbers must come from the engine: after I/O the request sizes grow and the write
// latency is an average in ns (total = disk, no queue waits: Zetta has no vdev queue).
#[test]
fn latency_queue_and_size_columns_follow_the_io() {
    let mut lab = Lab::new();
    lab.env.push(("ZETTA_MOUNT".to_string(), "0".to_string()));
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    lab.ok("zpool", &["create", "tank", "mirror", &a, &b]);
    let before = request_size_sums(&lab.ok("zpool", &["iostat", "-rHp", "tank"]));
    for name in ["tank/one", "tank/two", "tank/three"] {
        lab.ok("zfs", &["create", name]);
    }
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let text = lab.ok("zpool", &["iostat", "-rvHp", "tank"]);
    let blocks = blocks(&text);
    assert_eq!(blocks.len(), 4, "pool, mirror and two leaves: {text}");
    for (name, rows) in &blocks {
        assert_eq!(rows.len(), 16, "{name}: buckets 512 to 16M");
        assert_eq!(rows[0].0, 512);
        assert!(rows.iter().all(|(_, counts)| counts.len() == 14));
    }
    let after = request_size_sums(&text);
    assert!(
        after[6] + after[7] > before[6] + before[7],
        "async writes grew: {before:?} {after:?}"
    );
    assert!(
        after[0] > before[0],
        "sync reads (the scrub's) grew: {before:?} {after:?}"
    );
    for column in [2, 3, 4, 5, 8, 9, 10, 11, 12, 13] {
        assert_eq!(
            after[column], 0,
            "column {column} is a class Zetta does not have"
        );
    }

    let text = lab.ok("zpool", &["iostat", "-lvHp", "tank"]);
    let rows = scripted_rows(&text);
    assert_eq!(rows.len(), 4, "{text}");
    for (name, fields) in &rows {
        assert_eq!(fields.len(), 6 + 11, "{name}: {text}");
        assert_eq!(
            fields[7], fields[9],
            "{name}: total write wait = disk write wait"
        );
        assert!(
            fields[10..].iter().all(|f| f == "-"),
            "{name}: no queue, scrub, trim or rebuild waits: {text}"
        );
    }
    let write_wait_ns: u64 = rows[0].1[7].parse().expect("a write latency in ns");
    assert!(write_wait_ns > 0, "{text}");

    let text = lab.ok("zpool", &["iostat", "-lqHp", "tank"]);
    let rows = scripted_rows(&text);
    assert_eq!(rows[0].1.len(), 6 + 11 + 14, "{text}");
    let queues = &rows[0].1[17..];
    assert!(
        queues.iter().step_by(2).all(|pending| pending == "0"),
        "nothing pends without a queue: {text}"
    );

    // The human-readable headers are OpenZFS's, word for word.
    let text = lab.ok("zpool", &["iostat", "-lq", "tank"]);
    let header = text.lines().next().unwrap_or_default();
    assert!(header.ends_with(
        "bandwidth    total_wait     disk_wait    syncq_wait    asyncq_wait  scrub   trim  rebuild   \
         syncq_read    syncq_write   asyncq_read  asyncq_write   scrubq_read   trimq_write  rebuildq_write"
    ), "{text}");
    let text = lab.ok("zpool", &["iostat", "-r", "tank"]);
    assert_eq!(
        text.lines().nth(2),
        Some(format!("req_size  {}", "    ind    agg".repeat(7)).as_str()),
        "{text}"
    );

    // 2.3's refusals, with the usage after them (exit 2).
    for (flags, words) in [
        ("-wl", "[-r|-w] isn't allowed with [-c|-l|-q]"),
        ("-rq", "[-r|-w] isn't allowed with [-c|-l|-q]"),
        ("-rw", "Only one of [-r|-w] can be passed at a time"),
    ] {
        let output = lab.zpool(&["iostat", flags, "tank"]);
        let stderr = &output.stderr;
        assert_eq!(output.code, 2, "{flags}: {stderr}");
        assert!(
            stderr.starts_with(&format!("{words}\nusage:\n")),
            "{flags}: {stderr}"
        );
    }
}
