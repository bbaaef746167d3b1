//! `zpool list` and `zpool iostat` (OpenZFS `zpool_do_list`, `collect_list_stats`,
//! `zpool_do_iostat`, `print_vdev_stats`): fill zutil's table and iostat structures from
//! open pools.
//!
//! List values come from `props::value_of`, so `zpool list -o cap` and `zpool get
//! capacity` can never disagree. Vdev rows (`-v`) take size, allocated, free and
//! fragmentation per top-level vdev from the allocator; leaves below a mirror or raidz
//! show their own size and health only. Iostat's counters are the leaves' operation and
//! byte counts summed up the tree (as OpenZFS propagates leaf I/O to parents); the
//! first report averages them over the time since import, later ones over the interval.

use super::pool::{self, Imported, IMPORT_TIME_PROP};
use super::props::{self, value_of};
use super::{fail, getopt, interval_count, usage, CmdResult, Ctx};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use zetta::vdev::{Vdev, VdevKind};
use zetta_zutil::iostat::{
    format_histogram, format_iostat, format_iostat_header, format_iostat_rows,
    histogram_average_ns, iostat_name_width, HistogramKind, IostatOptions, IostatPool, IostatRow,
    LATENCY_BUCKETS, LATENCY_HISTOGRAM_COLUMNS, SIZE_HISTOGRAM_COLUMNS,
};
use zetta_zutil::list::{
    format_zpool_list, vdev_capacity_text, zpool_list_columns, PoolListEntry, PoolListLine,
    ZPOOL_LIST_DEFAULT,
};
use zetta_zutil::nicenum::nicenum;

fn vdev_values(
    imported: &Imported,
    vdev: &Vdev,
    top_index: Option<usize>,
    names: &[String],
    exact: bool,
) -> Vec<String> {
    let number = |v: u64| if exact { v.to_string() } else { nicenum(v) };
    let space = top_index.and_then(|i| imported.spa.vdev_space(i));
    names
        .iter()
        .skip(1)
        .map(|name| match (name.as_str(), space) {
            ("size", Some((size, _, _, _))) => number(size),
            ("size", None) => number(vdev.asize_bytes),
            ("allocated", Some((_, alloc, _, _))) => number(alloc),
            ("free", Some((_, _, free, _))) => number(free),
            ("fragmentation", Some((_, _, _, Some(frag)))) => {
                if exact {
                    frag.to_string()
                } else {
                    format!("{frag}%")
                }
            }
            ("capacity", Some((size, alloc, _, _))) if size > 0 => {
                vdev_capacity_text(alloc.saturating_mul(10_000) / size, exact)
            }
            ("health", _) => vdev.state().name().to_string(),
            _ => "-".to_string(),
        })
        .collect()
}

fn vdev_lines(imported: &Imported, names: &[String], exact: bool) -> Vec<PoolListLine> {
    let mut normal = Vec::new();
    let mut logs = Vec::new();
    for (index, top) in imported.spa.root.children.iter().enumerate() {
        if top.kind == zetta::vdev::VdevKind::Hole {
            continue;
        }
        let lines = if top.is_log { &mut logs } else { &mut normal };
        lines.push(PoolListLine::Vdev {
            name: top.display_name(),
            depth: 2,
            values: vdev_values(imported, top, Some(index), names, exact),
        });
        for leaf in &top.children {
            lines.push(PoolListLine::Vdev {
                name: leaf.display_name(),
                depth: 4,
                values: vdev_values(imported, leaf, None, names, exact),
            });
        }
    }
    if !logs.is_empty() {
        normal.push(PoolListLine::Class("logs".to_string()));
        normal.extend(logs);
    }
    normal
}

/// `zpool list [-gHLpPv] [-o prop,…] [pool]… [interval [count]]`
pub fn cmd_list(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let (parsed, json) =
        super::json::parse_with_json(args, "HjpPvo:T:", super::LONG_JSON_POOL, None)?;
    let scripted = parsed.has('H');
    // --json-int implies -p (cb_literal), as in 2.3.
    let exact = parsed.has('p') || json.as_int;
    let verbose = parsed.has('v');
    let given: Vec<String> = match parsed.last('o') {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => ZPOOL_LIST_DEFAULT.iter().map(|s| s.to_string()).collect(),
    };
    let names: Vec<String> = given.iter().map(|n| props::canonical(n)).collect();
    for name in &names {
        if name != "name" && !props::is_pool_prop(name) {
            return usage(format!("bad property list: invalid property '{name}'"));
        }
    }
    let timestamp = super::timestamp_format(&parsed)?;
    let mut pool_names = parsed.operands.clone();
    let (interval, count) = interval_count(&mut pool_names)?;
    let name_refs: Vec<&str> = given.iter().map(String::as_str).collect();
    let columns = zpool_list_columns(&name_refs, exact);
    let mut iteration = 0u64;
    loop {
        let (pools, unavailable) = pool::open_named_listing(&pool_names)?;
        if json.enabled {
            // No pools: 2.3 prints nothing at all.
            if !(pools.is_empty() && unavailable.is_empty()) {
                let document = list_document(
                    &json,
                    &pools,
                    &unavailable,
                    &names,
                    &pool_names,
                    exact,
                    verbose,
                    timestamp,
                );
                super::json::print(ctx, &document);
            }
        } else {
            ctx.print(&super::timestamp_line(timestamp));
        }
        if json.enabled {
            // Shares the interval handling below.
        } else if pools.is_empty() && unavailable.is_empty() && !scripted {
            ctx.print("no pools available\n");
            return Ok(());
        }
        let mut rows: Vec<(String, PoolListEntry)> = unavailable
            .iter()
            .map(|gone| (gone.entry.name.clone(), unavailable_entry(gone, &names)))
            .collect();
        let entries = pools.iter().map(|imported| {
            (
                imported.spa.name.clone(),
                PoolListEntry {
                    values: names
                        .iter()
                        .map(|n| {
                            value_of(imported, n, exact)
                                .map(|(v, _)| v)
                                .unwrap_or_else(|| "-".to_string())
                        })
                        .collect(),
                    vdevs: if verbose {
                        vdev_lines(imported, &names, exact)
                    } else {
                        Vec::new()
                    },
                },
            )
        });
        rows.extend(entries);
        drop(pools);
        if pool_names.is_empty() {
            rows.sort_by(|a, b| a.0.cmp(&b.0));
        } else {
            // In the order named.
            rows.sort_by_key(|(name, _)| pool_names.iter().position(|n| n == name));
        }
        let entries: Vec<PoolListEntry> = rows.into_iter().map(|(_, entry)| entry).collect();
        if !json.enabled {
            ctx.print(&format_zpool_list(&columns, &entries, verbose, scripted));
        }
        iteration += 1;
        let Some(interval) = interval else {
            return Ok(());
        };
        if count.is_some_and(|c| iteration >= c) {
            return Ok(());
        }
        if !json.enabled {
            ctx.print("\n");
        }
        let _ = ctx.out.flush();
        // A client gone (^C) ends the command inside the daemon too.
        if !crate::daemon::wait_interval(interval) {
            return Ok(());
        }
    }
}

/// `zpool list -j` (`collect_pool`, `list_callback`, `collect_list_stats`): each pool's
/// `fill_pool_info` and its columns as properties (the name column is the key, not a
/// property); with `-v` its vdevs, top-level ones with their space columns, leaves below
/// them, log vdevs under `"logs"`.
#[allow(clippy::too_many_arguments)]
fn list_document(
    json: &super::json::JsonOptions,
    pools: &[Imported],
    unavailable: &[pool::Unavailable],
    names: &[String],
    pool_names: &[String],
    exact: bool,
    verbose: bool,
    timestamp: Option<char>,
) -> zetta_zutil::json::Json {
    use super::json::{imported_pool_info, pool_info, vdev_info, VdevClass};
    use zetta_zutil::json::{property, Json, PropSource};
    let mut document = super::json::pools_document("list");
    json.add_time(&mut document, timestamp);
    let mut entries: Vec<(String, String, Json)> = Vec::new();
    for gone in unavailable {
        let mut item = pool_info(
            json,
            &gone.entry.name,
            gone.entry.guid,
            None,
            "FAULTED",
            true,
        );
        let values = unavailable_entry(gone, names).values;
        let mut props = Json::object();
        for (name, value) in names.iter().zip(values) {
            if name != "name" {
                props.insert(name, property(&value, &PropSource::None, json.as_int));
            }
        }
        item.insert("properties", props);
        let key = json.pool_key(&gone.entry.name, gone.entry.guid);
        entries.push((gone.entry.name.clone(), key, item));
    }
    for imported in pools {
        let mut item = imported_pool_info(json, imported, true);
        let mut props = Json::object();
        for name in names.iter().filter(|n| n.as_str() != "name") {
            let (value, source) =
                value_of(imported, name, exact).unwrap_or_else(|| ("-".to_string(), "-"));
            props.insert(
                name,
                property(&value, &PropSource::from_column(source), json.as_int),
            );
        }
        item.insert("properties", props);
        if verbose {
            // collect_list_stats: the same columns for every vdev, whatever -o says: the
            // default ones but altroot.
            let vdev_props: Vec<String> = ZPOOL_LIST_DEFAULT
                .iter()
                .filter(|p| **p != "altroot")
                .map(|s| s.to_string())
                .collect();
            let vdev_entry = |vdev: &Vdev, top_index: Option<usize>, class: VdevClass| {
                let name = match vdev.kind {
                    VdevKind::Leaf => pool::vdev_short_name(&vdev.path).to_string(),
                    _ => vdev.display_name(),
                };
                let mut entry = vdev_info(json, &name, vdev, class, vdev.state().name());
                let values = vdev_values(imported, vdev, top_index, &vdev_props, exact);
                let mut props = Json::object();
                for (prop, value) in vdev_props.iter().skip(1).zip(values) {
                    props.insert(prop, property(&value, &PropSource::None, json.as_int));
                }
                entry.insert("properties", props);
                (name, entry)
            };
            let mut vdevs = Json::object();
            let mut logs = Json::object();
            for (index, top) in imported.spa.root.children.iter().enumerate() {
                if top.kind == VdevKind::Hole {
                    continue;
                }
                let class = if top.is_log {
                    VdevClass::Log
                } else {
                    VdevClass::Normal
                };
                let (name, mut entry) = vdev_entry(top, Some(index), class);
                let mut children = Json::object();
                for leaf in &top.children {
                    let (leaf_name, leaf_entry) = vdev_entry(leaf, None, class);
                    children.insert(&leaf_name, leaf_entry);
                }
                if !children.is_empty_object() {
                    entry.insert("vdevs", children);
                }
                if top.is_log {
                    logs.insert(&name, entry);
                } else {
                    vdevs.insert(&name, entry);
                }
            }
            if !logs.is_empty_object() {
                vdevs.insert("logs", logs);
            }
            item.insert("vdevs", vdevs);
        }
        let key = json.pool_key(&imported.spa.name, imported.spa.guid.0);
        entries.push((imported.spa.name.clone(), key, item));
    }
    // In the order the text prints the pools: by name, or as named.
    if pool_names.is_empty() {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
    } else {
        entries.sort_by_key(|(name, _, _)| pool_names.iter().position(|n| n == name));
    }
    if let Some(pools_object) = document.get_mut("pools") {
        for (_, key, item) in entries {
            pools_object.insert(&key, item);
        }
    }
    document
}

/// The `zpool list` row of a pool that cannot be opened: OpenZFS's `zpool_get_prop` on
/// an unavailable pool gives its name, guid and health (FAULTED) and '-' for the rest.
fn unavailable_entry(gone: &pool::Unavailable, names: &[String]) -> PoolListEntry {
    PoolListEntry {
        values: names
            .iter()
            .map(|name| match name.as_str() {
                "name" => gone.entry.name.clone(),
                "guid" => gone.entry.guid.to_string(),
                "health" => "FAULTED".to_string(),
                _ => "-".to_string(),
            })
            .collect(),
        vdevs: Vec::new(),
    }
}

/// Operation and byte counters of a vdev: its leaves' counters summed.
fn io_counters(vdev: &Vdev) -> [u64; 4] {
    let mut sum = [0u64; 4];
    for leaf in vdev.leaves() {
        let s = &leaf.stats;
        sum[0] += s.read_ops.load(Ordering::Relaxed);
        sum[1] += s.write_ops.load(Ordering::Relaxed);
        sum[2] += s.read_bytes.load(Ordering::Relaxed);
        sum[3] += s.write_bytes.load(Ordering::Relaxed);
    }
    sum
}

/// A row's leaf-latency histograms (read, write), the input of `-l`'s averages.
type RowLatency = [[u64; LATENCY_BUCKETS]; 2];

/// One iostat snapshot of a pool: rows with raw (not yet averaged) counters, and each
/// row's latency histograms keyed by (name, depth) as `rates` matches rows.
struct Snapshot {
    pool: IostatPool,
    latency: HashMap<(String, usize), RowLatency>,
}

/// The summed disk-latency histograms of a vdev's leaves, read then write.
fn row_latency(vdev: &Vdev) -> RowLatency {
    use zetta::vdev::stat_ex::IoType;
    let mut sum = [[0u64; LATENCY_BUCKETS]; 2];
    for leaf in vdev.leaves() {
        for io in [IoType::Read, IoType::Write] {
            let counts = leaf.stats.ex.disk_latency[io as usize].snapshot();
            for (total, count) in sum[io as usize].iter_mut().zip(counts.iter()) {
                *total += count;
            }
        }
    }
    sum
}

/// `-q`'s columns for a vdev. Zetta has no `vdev_queue`: nothing ever pends, and the
/// only outstanding requests it counts are leaf reads, which a waiting caller issues
/// (OpenZFS's sync reads); writes, scrub, trim and rebuild show 0 (see README).
fn queue_counts(vdev: &Vdev) -> [u64; zetta_zutil::iostat::QUEUE_COLUMNS] {
    let mut counts = [0u64; zetta_zutil::iostat::QUEUE_COLUMNS];
    // Column 1: syncq_read activ.
    counts[1] = vdev
        .leaves()
        .iter()
        .map(|leaf| leaf.stats.in_flight.load(Ordering::Relaxed))
        .sum();
    counts
}

fn snapshot(imported: &Imported, verbose: bool) -> Snapshot {
    let spa = &imported.spa;
    let (_, alloc, free) = spa.space();
    let mut latency = HashMap::new();
    let mut row = |name: String, depth: usize, space: Option<(u64, u64)>, vdev: &Vdev| {
        let [read_ops, write_ops, read_bytes, write_bytes] = io_counters(vdev);
        latency.insert((name.clone(), depth), row_latency(vdev));
        IostatRow {
            name,
            depth,
            alloc_bytes: space.map(|s| s.0),
            free_bytes: space.map(|s| s.1),
            read_ops,
            write_ops,
            read_bytes,
            write_bytes,
            queue_counts: queue_counts(vdev),
            ..IostatRow::default()
        }
    };
    let mut out = IostatPool {
        rows: vec![row(spa.name.clone(), 0, Some((alloc, free)), &spa.root)],
        ..IostatPool::default()
    };
    if verbose {
        for (index, top) in spa.root.children.iter().enumerate() {
            if top.kind == zetta::vdev::VdevKind::Hole {
                continue;
            }
            let space = spa.vdev_space(index).map(|(_, a, f, _)| (a, f));
            let mut rows = vec![row(top.display_name(), 2, space, top)];
            if top.kind != VdevKind::Leaf {
                for leaf in &top.children {
                    rows.push(row(leaf.display_name(), 4, None, leaf));
                }
            }
            if top.is_log {
                out.logs.extend(rows);
            } else {
                out.rows.extend(rows);
            }
        }
    }
    Snapshot { pool: out, latency }
}

/// Turns counters into per-second rates: (now - previous) / secs; the latency averages
/// are those of the requests in between (OpenZFS subtracts the histograms, then takes
/// `single_histo_average`). Zetta times each leaf request at its device, with no queue
/// in front: the total wait is the disk wait, the queue waits stay empty (`-`).
fn rates(now: &Snapshot, previous: Option<&Snapshot>, secs: u64) -> IostatPool {
    let secs = secs.max(1);
    let before: HashMap<(String, usize), &IostatRow> = previous
        .map(|p| {
            p.pool
                .rows
                .iter()
                .chain(p.pool.logs.iter())
                .map(|r| ((r.name.clone(), r.depth), r))
                .collect()
        })
        .unwrap_or_default();
    let convert = |rows: &[IostatRow]| -> Vec<IostatRow> {
        rows.iter()
            .map(|r| {
                let key = (r.name.clone(), r.depth);
                let old = before.get(&key);
                let delta = |now: u64, pick: fn(&IostatRow) -> u64| {
                    now.saturating_sub(old.map(|o| pick(o)).unwrap_or(0)) / secs
                };
                let mut latency_ns = [0u64; zetta_zutil::iostat::LATENCY_AVERAGE_COLUMNS];
                if let Some(histograms) = now.latency.get(&key) {
                    let old_histograms = previous.and_then(|p| p.latency.get(&key));
                    for io in 0..2 {
                        let interval: Vec<u64> = histograms[io]
                            .iter()
                            .enumerate()
                            .map(|(bucket, count)| {
                                let old = old_histograms.map_or(0, |o| o[io][bucket]);
                                count.saturating_sub(old)
                            })
                            .collect();
                        let average = histogram_average_ns(&interval);
                        // total_wait and disk_wait, read then write.
                        latency_ns[io] = average;
                        latency_ns[2 + io] = average;
                    }
                }
                IostatRow {
                    read_ops: delta(r.read_ops, |o| o.read_ops),
                    write_ops: delta(r.write_ops, |o| o.write_ops),
                    read_bytes: delta(r.read_bytes, |o| o.read_bytes),
                    write_bytes: delta(r.write_bytes, |o| o.write_bytes),
                    latency_ns,
                    ..r.clone()
                }
            })
            .collect()
    };
    IostatPool {
        rows: convert(&now.pool.rows),
        logs: convert(&now.pool.logs),
        ..IostatPool::default()
    }
}

/// One histogram block of `zpool iostat -w` or `-r`: the class heading it opens (logs),
/// the vdev's name and its columns (`HistogramKind::column_count` of them).
struct HistogramBlock {
    class: Option<&'static str>,
    name: String,
    columns: Vec<Vec<u64>>,
}

/// A vdev's histogram columns: its leaves' histograms summed (`vdev_get_child_stat_ex`).
///
/// `-w`: Zetta issues each leaf request straight to its device, so the total wait is the
/// disk wait and the queue waits (sync, async, scrub, trim, rebuild) are empty.
/// `-r`: the leaf does not know a request's priority; every read is counted as a sync
/// read (a caller waits for it) and every write as an async write (the txg sync and the
/// ZIL's log blocks alike), individual or aggregated; the other classes stay empty.
fn histogram_columns(kind: HistogramKind, vdev: &Vdev) -> Vec<Vec<u64>> {
    use zetta::vdev::stat_ex::IoType;
    let mut columns = vec![vec![0u64; kind.bucket_count()]; kind.column_count()];
    let mut add = |column: usize, counts: &[u64]| {
        for (total, count) in columns[column].iter_mut().zip(counts) {
            *total += count;
        }
    };
    for leaf in vdev.leaves() {
        let ex = &leaf.stats.ex;
        match kind {
            HistogramKind::Latency => {
                for (io, total_column, disk_column) in [(IoType::Read, 0, 2), (IoType::Write, 1, 3)]
                {
                    let counts = ex.disk_latency[io as usize].snapshot();
                    add(total_column, &counts);
                    add(disk_column, &counts);
                }
            }
            HistogramKind::RequestSize => {
                let read = IoType::Read as usize;
                let write = IoType::Write as usize;
                // sync_read ind/agg are columns 0/1, async_write ind/agg 6/7.
                add(0, &ex.individual_size[read].snapshot());
                add(1, &ex.aggregated_size[read].snapshot());
                add(6, &ex.individual_size[write].snapshot());
                add(7, &ex.aggregated_size[write].snapshot());
            }
        }
    }
    debug_assert!(
        columns.len() == LATENCY_HISTOGRAM_COLUMNS || columns.len() == SIZE_HISTOGRAM_COLUMNS
    );
    columns
}

/// The blocks of one pool: the pool, then with `-v` its vdev tree and its log vdevs.
fn histogram_blocks(
    kind: HistogramKind,
    imported: &Imported,
    verbose: bool,
) -> Vec<HistogramBlock> {
    let spa = &imported.spa;
    let block = |class, name: String, vdev: &Vdev| HistogramBlock {
        class,
        name,
        columns: histogram_columns(kind, vdev),
    };
    let mut blocks = vec![block(None, spa.name.clone(), &spa.root)];
    if !verbose {
        return blocks;
    }
    let mut logs = Vec::new();
    for top in &spa.root.children {
        if top.kind == VdevKind::Hole {
            continue;
        }
        let mut group = vec![block(None, top.display_name(), top)];
        if top.kind != VdevKind::Leaf {
            group.extend(
                top.children
                    .iter()
                    .map(|l| block(None, l.display_name(), l)),
            );
        }
        if top.is_log {
            logs.extend(group);
        } else {
            blocks.extend(group);
        }
    }
    if let Some(first) = logs.first_mut() {
        first.class = Some("logs");
    }
    blocks.extend(logs);
    blocks
}

/// `zpool iostat -w`/`-r`'s report of one interval: the first shows the counts since
/// import, later ones the counts of the interval per second (2.3's scale of NANOSEC /
/// tdelta).
fn format_histogram_report(
    kind: HistogramKind,
    pools: &[Vec<HistogramBlock>],
    previous: Option<&Vec<Vec<HistogramBlock>>>,
    interval_secs: f64,
    name_width: usize,
    options: IostatOptions,
) -> String {
    let mut out = String::new();
    for (index, blocks) in pools.iter().enumerate() {
        for block in blocks {
            let before = previous
                .and_then(|p| p.get(index))
                .and_then(|p| p.iter().find(|b| b.name == block.name));
            let mut columns = block.columns.clone();
            if let Some(before) = before {
                for (column, old) in columns.iter_mut().zip(before.columns.iter()) {
                    for (count, old_count) in column.iter_mut().zip(old) {
                        let delta = count.saturating_sub(*old_count) as f64;
                        *count = (delta / interval_secs.max(f64::MIN_POSITIVE)) as u64;
                    }
                }
            }
            if block.class.is_some() {
                // print_vdev_stats: a class heading is only its newline for histograms.
                out.push('\n');
            }
            let slices: Vec<&[u64]> = columns.iter().map(|c| &c[..]).collect();
            out.push_str(&format_histogram(
                kind,
                &block.name,
                name_width,
                &slices,
                options,
            ));
        }
    }
    out
}

/// `zpool iostat [-lq | -r | -w] [-v] [-Hpy] [-T d|u] [pool]… [interval [count]]`
///
/// `-c` (scripts), `-g`, `-L`, `-n` and vdev operands are refused (getopt's "invalid
/// option", or the pool lookup's words for a vdev name).
pub fn cmd_iostat(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "HlpPqrvwyT:")?;
    let latency_histograms = parsed.has('w');
    let size_histograms = parsed.has('r');
    let options = IostatOptions {
        verbose: parsed.has('v'),
        scripted: parsed.has('H'),
        exact_numbers: parsed.has('p'),
        latency: parsed.has('l'),
        queues: parsed.has('q'),
    };
    // zpool_do_iostat's rules, in its words: histograms print alone, one kind at a time.
    if (latency_histograms || size_histograms) && (options.latency || options.queues) {
        return usage("[-r|-w] isn't allowed with [-c|-l|-q]");
    }
    if latency_histograms && size_histograms {
        return usage("Only one of [-r|-w] can be passed at a time");
    }
    let histogram = if latency_histograms {
        Some(HistogramKind::Latency)
    } else if size_histograms {
        Some(HistogramKind::RequestSize)
    } else {
        None
    };
    let skip_first = parsed.has('y');
    let timestamp = super::timestamp_format(&parsed)?;
    let mut names = parsed.operands.clone();
    let (interval, count) = interval_count(&mut names)?;
    let mut previous: Option<Vec<Snapshot>> = None;
    let mut previous_histograms: Option<Vec<Vec<HistogramBlock>>> = None;
    let mut iteration = 0u64;
    let mut printed = 0u64;
    loop {
        // A pool that cannot be opened has no counters: OpenZFS leaves it out.
        let (pools, _unavailable) = pool::open_named_listing(&names)?;
        if pools.is_empty() {
            return fail("no pools available");
        }
        if let Some(kind) = histogram {
            let widths: Vec<IostatPool> = pools
                .iter()
                .map(|p| snapshot(p, options.verbose).pool)
                .collect();
            let name_width = iostat_name_width(&widths, options.verbose);
            let blocks: Vec<Vec<HistogramBlock>> = pools
                .iter()
                .map(|p| histogram_blocks(kind, p, options.verbose))
                .collect();
            drop(pools);
            if !(skip_first && iteration == 0) {
                ctx.print(&super::timestamp_line(timestamp));
                ctx.print(&format_histogram_report(
                    kind,
                    &blocks,
                    previous_histograms.as_ref(),
                    interval.unwrap_or(1.0),
                    name_width,
                    options,
                ));
                printed += 1;
            }
            previous_histograms = Some(blocks);
            iteration += 1;
            if !next_round(ctx, interval, count, printed) {
                return Ok(());
            }
            continue;
        }
        let now_secs = zetta::spa::now_secs();
        let snapshots: Vec<Snapshot> = pools.iter().map(|p| snapshot(p, options.verbose)).collect();
        let since_import: Vec<u64> = pools
            .iter()
            .map(|p| {
                let imported_at = p
                    .spa
                    .props
                    .get_u64(IMPORT_TIME_PROP)
                    .unwrap_or(p.spa.import_time_secs);
                now_secs.saturating_sub(imported_at)
            })
            .collect();
        drop(pools);
        let reports: Vec<IostatPool> = snapshots
            .iter()
            .enumerate()
            .map(|(i, snap)| match &previous {
                Some(prev) => rates(snap, prev.get(i), interval.unwrap_or(1.0) as u64),
                None => rates(snap, None, since_import[i]),
            })
            .collect();
        if !(skip_first && iteration == 0) {
            ctx.print(&super::timestamp_line(timestamp));
            if printed == 0 || options.verbose {
                ctx.print(&format_iostat(&reports, options));
            } else {
                let width = iostat_name_width(&reports, options.verbose);
                if !options.scripted && printed == 0 {
                    ctx.print(&format_iostat_header(width, options));
                }
                ctx.print(&format_iostat_rows(&reports, options, width));
            }
            printed += 1;
        }
        previous = Some(snapshots);
        iteration += 1;
        if !next_round(ctx, interval, count, printed) {
            return Ok(());
        }
    }
}

/// Whether `zpool iostat` prints another round, after waiting the interval for it: not
/// without an interval, after `count` rounds, or once the client has gone (^C ends the
/// command inside the daemon too).
fn next_round(ctx: &mut Ctx, interval: Option<f64>, count: Option<u64>, printed: u64) -> bool {
    let Some(interval) = interval else {
        return false;
    };
    if count.is_some_and(|c| printed >= c) {
        return false;
    }
    let _ = ctx.out.flush();
    crate::daemon::wait_interval(interval)
}
