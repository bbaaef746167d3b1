//! `zetta daemon --metrics ADDR`: Prometheus metrics and a one-page HTML status view over
//! HTTP (off by default), served by the daemon that holds the pools.
//!
//! Theory. The numbers are the CLI's own: pool and dataset figures come from running
//! `zpool list -Hp` and `zfs list -Hp` in-process (the very functions a client's command
//! runs), so a scrape can never disagree with what an administrator reads; vdev error
//! counters and scrub state come from the held pools (shared lock, bounded wait: a pool
//! busy past it is left out of that scrape, never waited on forever); ARC counters from
//! the daemon's ARC. Metric names follow pdf/zfs_exporter (`zfs_pool_*`, `zfs_dataset_*`
//! with labels `pool` and `name, pool, type`; health codes 0 ONLINE … 5 REMOVED; scrub
//! state codes) and node_exporter's ZFS collector for the ARC (`node_zfs_arc_*`); the
//! vdev counters are Zetta's (`zfs_vdev_*_errors_total`). One std TcpListener, one thread,
//! one request per connection (`Connection: close`), requests read with a timeout and a
//! size bound: a stuck or hostile client delays other scrapes by the timeout at most.

use super::registry;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::Duration;

const REQUEST_HEAD_MAX: usize = 8 << 10;
const IO_TIMEOUT: Duration = Duration::from_secs(5);
const POOL_WAIT: Duration = Duration::from_secs(2);

/// Binds `addr` (host:port); the listener and its actual address.
pub fn bind(addr: &str) -> Result<(TcpListener, String), String> {
    let listener = TcpListener::bind(addr).map_err(|e| {
        format!(
            "cannot listen on '{addr}': {}",
            crate::zpool::pool::strerror(&e)
        )
    })?;
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| addr.to_string());
    Ok((listener, local))
}

/// Serves forever on its own thread.
pub fn spawn(listener: TcpListener) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            serve(stream);
        }
    });
}

fn serve(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > REQUEST_HEAD_MAX {
            break;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or_default().split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            metrics_text(),
        ),
        ("GET" | "HEAD", "/") => ("200 OK", "text/html; charset=utf-8", html_page()),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: try /metrics or /\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        response.extend_from_slice(body.as_bytes());
    }
    let _ = stream.write_all(&response);
}

/// Runs a `zpool`/`zfs` command in this process; its stdout when it succeeds.
fn command(front: &str, args: &[&str]) -> Option<String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = match front {
        "zfs" => crate::zfs::run(&args, &mut out, &mut err),
        _ => crate::zpool::run(&args, &mut out, &mut err),
    };
    (code == 0).then(|| String::from_utf8_lossy(&out).into_owned())
}

/// A label value escaped for the text format.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<(String, String)>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }
    fn push(&mut self, labels: String, value: impl ToString) {
        self.samples.push((labels, value.to_string()));
    }
}

fn health_code(health: &str) -> Option<u32> {
    match health {
        "ONLINE" => Some(0),
        "DEGRADED" => Some(1),
        "FAULTED" => Some(2),
        "OFFLINE" => Some(3),
        "UNAVAIL" => Some(4),
        "REMOVED" => Some(5),
        _ => None,
    }
}

/// The Prometheus text exposition of every held pool.
pub fn metrics_text() -> String {
    let mut health = Family::new(
        "zfs_pool_health",
        "gauge",
        "Health status code for the pool [0: ONLINE, 1: DEGRADED, 2: FAULTED, 3: OFFLINE, 4: UNAVAIL, 5: REMOVED].",
    );
    let mut size = Family::new(
        "zfs_pool_size_bytes",
        "gauge",
        "Total size in bytes of the storage pool.",
    );
    let mut allocated = Family::new(
        "zfs_pool_allocated_bytes",
        "gauge",
        "Amount of storage in bytes used within the pool.",
    );
    let mut free = Family::new(
        "zfs_pool_free_bytes",
        "gauge",
        "The amount of free space in bytes available in the pool.",
    );
    let mut frag = Family::new(
        "zfs_pool_fragmentation_ratio",
        "gauge",
        "The fragmentation ratio of the pool.",
    );
    let mut capacity = Family::new(
        "zfs_pool_capacity_ratio",
        "gauge",
        "Ratio of pool space used.",
    );
    if let Some(list) = command(
        "zpool",
        &[
            "list",
            "-Hp",
            "-o",
            "name,size,allocated,free,fragmentation,capacity,health",
        ],
    ) {
        for line in list.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let [name, s, a, fr, fg, cap, h] = f[..] else {
                continue;
            };
            let l = format!("pool=\"{}\"", label(name));
            if let Some(code) = health_code(h) {
                health.push(l.clone(), code);
            }
            for (family, value) in [(&mut size, s), (&mut allocated, a), (&mut free, fr)] {
                if let Ok(v) = value.parse::<u64>() {
                    family.push(l.clone(), v);
                }
            }
            for (family, value) in [(&mut frag, fg), (&mut capacity, cap)] {
                if let Ok(v) = value.trim_end_matches('%').parse::<f64>() {
                    family.push(l.clone(), v / 100.0);
                }
            }
        }
    }
    let mut used = Family::new(
        "zfs_dataset_used_bytes",
        "gauge",
        "The amount of space in bytes consumed by this dataset and all its descendents.",
    );
    let mut available = Family::new(
        "zfs_dataset_available_bytes",
        "gauge",
        "The amount of space in bytes available to the dataset and all its children.",
    );
    let mut referenced = Family::new(
        "zfs_dataset_referenced_bytes",
        "gauge",
        "The amount of data in bytes that is accessible by this dataset, which may or may not be shared with other datasets in the pool.",
    );
    let mut written = Family::new(
        "zfs_dataset_written_bytes",
        "gauge",
        "The amount of referenced space in bytes written to this dataset since the previous snapshot.",
    );
    let mut logical = Family::new(
        "zfs_dataset_logical_used_bytes",
        "gauge",
        "The amount of space in bytes that is \"logically\" consumed by this dataset and all its descendents.",
    );
    if let Some(list) = command(
        "zfs",
        &[
            "list",
            "-Hp",
            "-t",
            "filesystem,volume",
            "-o",
            "name,type,used,available,referenced,written,logicalused",
        ],
    ) {
        for line in list.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let [name, kind, u, av, r, w, lu] = f[..] else {
                continue;
            };
            let pool = name.split('/').next().unwrap_or(name);
            let l = format!(
                "name=\"{}\",pool=\"{}\",type=\"{}\"",
                label(name),
                label(pool),
                label(kind)
            );
            for (family, value) in [
                (&mut used, u),
                (&mut available, av),
                (&mut referenced, r),
                (&mut written, w),
                (&mut logical, lu),
            ] {
                if let Ok(v) = value.parse::<u64>() {
                    family.push(l.clone(), v);
                }
            }
        }
    }
    let mut read_errors = Family::new(
        "zfs_vdev_read_errors_total",
        "counter",
        "Read errors of the vdev (zpool status READ).",
    );
    let mut write_errors = Family::new(
        "zfs_vdev_write_errors_total",
        "counter",
        "Write errors of the vdev (zpool status WRITE).",
    );
    let mut checksum_errors = Family::new(
        "zfs_vdev_checksum_errors_total",
        "counter",
        "Checksum errors of the vdev (zpool status CKSUM).",
    );
    let mut scrub_state = Family::new(
        "zfs_pool_scrub_state",
        "gauge",
        "State code for the most recent scrub or resilver [0: none, 1: scrub in progress, 2: scrub finished, 3: scrub canceled, 4: scrub paused, 5: resilver in progress, 6: resilver finished].",
    );
    let mut scrub_errors = Family::new(
        "zfs_pool_scrub_errors",
        "gauge",
        "Number of errors detected during the most recent scrub or resilver.",
    );
    let mut scrub_repaired = Family::new(
        "zfs_pool_scrub_repaired_bytes",
        "gauge",
        "Bytes repaired during the most recent scrub or resilver.",
    );
    let mut scrub_completed = Family::new(
        "zfs_pool_scrub_last_completed_timestamp_seconds",
        "gauge",
        "Unix timestamp of the most recently completed scrub or resilver, or 0 if none.",
    );
    if let Some(registry) = registry::get() {
        for (guid, pool) in registry.all_with_guids() {
            let Some(spa) = pool.try_read_for(POOL_WAIT) else {
                continue;
            };
            let pool_label = label(&spa.name);
            crate::zpool::pool::each_vdev(&spa.root, &mut |vdev| {
                if vdev.kind == zetta::vdev::VdevKind::Root
                    || vdev.kind == zetta::vdev::VdevKind::Hole
                {
                    return;
                }
                let l = format!(
                    "pool=\"{pool_label}\",vdev=\"{}\"",
                    label(&vdev.display_name())
                );
                let s = &vdev.stats;
                read_errors.push(l.clone(), s.read_errors.load(Ordering::Relaxed));
                write_errors.push(l.clone(), s.write_errors.load(Ordering::Relaxed));
                checksum_errors.push(l, s.checksum_errors.load(Ordering::Relaxed));
            });
            use zetta::spa::{ScanFunction, ScanState};
            let scan = spa.scan;
            let running = registry.scan(guid).is_some();
            let code = match (scan.function, scan.state) {
                _ if running => 1,
                (ScanFunction::Scrub, ScanState::Finished) => 2,
                (ScanFunction::Scrub, ScanState::Canceled | ScanState::Scanning) => 3,
                (ScanFunction::Resilver, ScanState::Scanning) => 5,
                (ScanFunction::Resilver, ScanState::Finished) => 6,
                _ => 0,
            };
            let l = format!("pool=\"{pool_label}\"");
            scrub_state.push(l.clone(), code);
            scrub_errors.push(l.clone(), scan.errors);
            scrub_repaired.push(l.clone(), scan.repaired_bytes);
            let completed = if scan.state == ScanState::Finished {
                scan.end_secs
            } else {
                0
            };
            scrub_completed.push(l, completed);
        }
    }
    let arc = super::server::arc_stats();
    let mut arc_hits = Family::new(
        "node_zfs_arc_hits",
        "untyped",
        "kstat.zfs.misc.arcstats.hits",
    );
    arc_hits.push(String::new(), arc.hits);
    let mut arc_misses = Family::new(
        "node_zfs_arc_misses",
        "untyped",
        "kstat.zfs.misc.arcstats.misses",
    );
    arc_misses.push(String::new(), arc.misses);
    let mut arc_size = Family::new(
        "node_zfs_arc_size",
        "untyped",
        "kstat.zfs.misc.arcstats.size",
    );
    arc_size.push(String::new(), arc.size_bytes);
    let mut text = String::new();
    for family in [
        health,
        size,
        allocated,
        free,
        frag,
        capacity,
        used,
        available,
        referenced,
        written,
        logical,
        read_errors,
        write_errors,
        checksum_errors,
        scrub_state,
        scrub_errors,
        scrub_repaired,
        scrub_completed,
        arc_hits,
        arc_misses,
        arc_size,
    ] {
        let _ = writeln!(text, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(text, "# TYPE {} {}", family.name, family.kind);
        for (labels, value) in &family.samples {
            if labels.is_empty() {
                let _ = writeln!(text, "{} {value}", family.name);
            } else {
                let _ = writeln!(text, "{}{{{labels}}} {value}", family.name);
            }
        }
    }
    text
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The one-page status view: `zpool list`, `zpool status` and `zfs list` as the CLI
/// prints them.
pub fn html_page() -> String {
    let section = |title: &str, front: &str, args: &[&str]| {
        let body = command(front, args).unwrap_or_else(|| "(unavailable)\n".to_string());
        format!(
            "<h2>{}</h2>\n<pre>{}</pre>\n",
            html_escape(title),
            html_escape(&body)
        )
    };
    let mut page = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>zetta</title>\n<style>body{font-family:sans-serif;margin:2em}pre{background:#f4f4f4;padding:1em}</style>\n</head><body>\n<h1>zetta</h1>\n<p><a href=\"/metrics\">/metrics</a> (Prometheus)</p>\n",
    );
    page.push_str(&section("zpool list", "zpool", &["list"]));
    page.push_str(&section("zpool status", "zpool", &["status"]));
    page.push_str(&section("zfs list", "zfs", &["list"]));
    page.push_str("</body></html>\n");
    page
}
