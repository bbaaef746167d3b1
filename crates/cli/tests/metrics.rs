//! `zetta daemon --metrics ADDR` (issue 20): Prometheus text format over HTTP with
//! pdf/zfs_exporter's metric names, and a one-page HTML status view.

mod common;

use common::Lab;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// GET `path` from `addr`: (status line, body).
fn get(addr: &str, path: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

/// Parses the Prometheus text format strictly enough to catch malformed output: every
/// sample's family has `# TYPE` before it, names and labels are well-formed, values are
/// numbers. Returns "name{labels}" → value.
fn parse_prometheus(text: &str) -> HashMap<String, f64> {
    let mut typed = std::collections::HashSet::new();
    let mut samples = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split(' ');
            let name = words.next().unwrap();
            let kind = words.next().unwrap();
            assert!(
                ["gauge", "counter", "untyped"].contains(&kind),
                "bad type: {line}"
            );
            assert!(typed.insert(name.to_string()), "TYPE twice: {line}");
            continue;
        }
        if line.starts_with("# HELP ") || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let name = series.split('{').next().unwrap();
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !name.starts_with(|c: char| c.is_ascii_digit()),
            "bad name: {line}"
        );
        assert!(typed.contains(name), "sample before its TYPE: {line}");
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
                for pair in labels[1..labels.len() - 1].split("\",") {
                    let (key, value) = pair.split_once("=\"").expect(line);
                    assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                    assert!(!value.trim_end_matches('"').contains('"') || value.contains("\\\""));
                }
            }
        }
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        assert!(
            samples.insert(series.to_string(), value).is_none(),
            "{line}"
        );
    }
    samples
}

// Why: the daemon had no metrics endpoint; an administrator scraped `zpool list` by
// hand. Scraped over HTTP, the text must parse as Prometheus text, carry the exporter's
// names, and its numbers must be `zpool list -p`'s and `zfs list -p`'s; `/` is a status
// page; the endpoint is off unless asked for.
#[test]
fn metrics_endpoint_matches_zpool_and_zfs_list() {
    let lab = Lab::new();
    let log = lab.path("daemon.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let mut daemon = std::process::Command::new(env!("CARGO_BIN_EXE_zetta"));
    daemon
        .args(["daemon", "--metrics", "127.0.0.1:0"])
        .env("ZETTA_CACHE_FILE", lab.dir.join("zpool.cache"))
        .env("ZETTA_RUN_DIR", lab.dir.join("run"))
        .env("ZETTA_MOUNT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log_file);
    let mut child = lab.spawn(&mut daemon);
    let started = Instant::now();
    let addr = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(rest) = text.split("metrics on http://").nth(1) {
            break rest.split('/').next().unwrap().to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no metrics address: {text}"
        );
        assert!(child.try_wait().unwrap().is_none(), "daemon exited: {text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    let run = |front: &str, args: &[&str]| {
        let mut command = lab.command(front);
        command.args(args).env("ZETTA_MOUNT", "0");
        let out = lab.run(command);
        assert_eq!(out.code, 0, "{front} {args:?}: {}", out.stderr);
        out.stdout
    };
    run("zpool", &["create", "tank", "mirror", &a, &b]);
    run("zfs", &["create", "tank/fs"]);
    run("zpool", &["scrub", "-w", "tank"]);
    run("zpool", &["sync", "tank"]);
    // The scrape and the listings must carry the same numbers. An idle pool may still
    // commit once more (frees deferred two txgs come back), so compare scrape, listings and
    // a second scrape, and retry while the pool was moving in between.
    let compare = || -> Result<(HashMap<String, f64>, String), String> {
        let (status, body) = get(&addr, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        let metrics = parse_prometheus(&body);
        let list = run(
            "zpool",
            &[
                "list",
                "-Hp",
                "-o",
                "size,allocated,free,fragmentation",
                "tank",
            ],
        );
        let datasets = run(
            "zfs",
            &[
                "list",
                "-Hp",
                "-o",
                "name,used,available,referenced,written",
            ],
        );
        // (ARC counters move with every command; the pool's figures only with a commit.)
        let space = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("zfs_pool_") || l.starts_with("zfs_dataset_"))
                .map(str::to_string)
                .collect()
        };
        if space(&get(&addr, "/metrics").1) != space(&body) {
            return Err(format!("the pool moved during the comparison:\n{body}"));
        }
        let f: Vec<f64> = list
            .trim()
            .split('\t')
            .map(|v| v.parse().unwrap())
            .collect();
        let pool = |name: &str| metrics.get(&format!("{name}{{pool=\"tank\"}}")).copied();
        for (name, value) in [
            ("zfs_pool_size_bytes", f[0]),
            ("zfs_pool_allocated_bytes", f[1]),
            ("zfs_pool_free_bytes", f[2]),
            ("zfs_pool_fragmentation_ratio", f[3] / 100.0),
        ] {
            if pool(name) != Some(value) {
                return Err(format!("{name}: zpool list says {value}\n{body}"));
            }
        }
        for line in datasets.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let labels = format!("{{name=\"{}\",pool=\"tank\",type=\"filesystem\"}}", f[0]);
            for (metric, value) in [
                ("zfs_dataset_used_bytes", f[1]),
                ("zfs_dataset_available_bytes", f[2]),
                ("zfs_dataset_referenced_bytes", f[3]),
                ("zfs_dataset_written_bytes", f[4]),
            ] {
                let expected = value.parse::<f64>().ok();
                if metrics.get(&format!("{metric}{labels}")).copied() != expected {
                    return Err(format!("{metric}{labels}: zfs list says {value}\n{body}"));
                }
            }
        }
        Ok((metrics, body))
    };
    let started = Instant::now();
    let (metrics, body) = loop {
        match compare() {
            Ok(result) => break result,
            Err(why) if started.elapsed() > Duration::from_secs(120) => panic!("{why}"),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    };
    let pool = |name: &str| metrics[&format!("{name}{{pool=\"tank\"}}")];
    assert_eq!(pool("zfs_pool_health"), 0.0);
    assert_eq!(pool("zfs_pool_scrub_state"), 2.0);
    assert_eq!(pool("zfs_pool_scrub_errors"), 0.0);
    assert!(pool("zfs_pool_scrub_last_completed_timestamp_seconds") > 1e9);
    assert!(
        body.contains("zfs_dataset_used_bytes{name=\"tank/fs\",pool=\"tank\",type=\"filesystem\"}")
    );
    for vdev in ["mirror-0", a.as_str(), b.as_str()] {
        let series = format!("zfs_vdev_checksum_errors_total{{pool=\"tank\",vdev=\"{vdev}\"}}");
        assert_eq!(metrics.get(&series), Some(&0.0), "{series}\n{body}");
    }
    for name in [
        "node_zfs_arc_hits",
        "node_zfs_arc_misses",
        "node_zfs_arc_size",
    ] {
        assert!(metrics.contains_key(name), "{name}\n{body}");
    }
    let (status, page) = get(&addr, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert!(page.contains("tank/fs"), "{page}");
    assert!(page.contains("state: ONLINE"), "{page}");
    assert_eq!(get(&addr, "/nope").0, "HTTP/1.1 404 Not Found");
    lab.stop_daemon();
    let _ = child.wait();
}
