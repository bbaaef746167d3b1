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
