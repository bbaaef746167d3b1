//! `zpool status` (OpenZFS `zpool_do_status`, `status_callback`, `zpool_get_status`):
//! turns an open pool into zutil's `PoolStatusView` and prints it.
//!
//! State comes from the engine's derived vdev states; counters from the per-vdev stats
//! (restored across commands by `pool`). Notes follow OpenZFS: a leaf without a device is
//! shown by guid with `was /path`; a top-level vdev that cannot work says `insufficient
//! replicas`; a faulted leaf, or one the diagnosis degraded, `too many errors`. The status/action block is chosen in
//! `zpool_get_status` order: missing devices, data errors, device errors, offline devices.

use super::pool::{self, Imported};
use super::{interval_count, CmdResult, Ctx};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use zetta::spa::{ScanFunction, ScanState, Spa};
use zetta::vdev::{Vdev, VdevKind, VdevState};
use zetta_zutil::status::{
    format_status, format_status_all_healthy, PoolStatusView, ScanView, VdevStatusRow,
    STATUS_CORRUPT_DATA, STATUS_FAILING_DEV, STATUS_FEAT_DISABLED, STATUS_MISSING_DEV_NO_REPLICAS,
    STATUS_MISSING_DEV_REPLICATED, STATUS_OFFLINE_DEV, STATUS_VERSION_OLDER,
};

pub(super) fn row_of(vdev: &Vdev) -> VdevStatusRow {
    let state = vdev.state();
    let mut row = VdevStatusRow {
        name: vdev.display_name(),
        state: state.name().to_string(),
        read_errors: vdev.stats.read_errors.load(Ordering::Relaxed),
        write_errors: vdev.stats.write_errors.load(Ordering::Relaxed),
        checksum_errors: vdev.stats.checksum_errors.load(Ordering::Relaxed),
        note: None,
        children: vdev.children.iter().map(row_of).collect(),
    };
    if vdev.is_leaf() {
        if vdev.device.is_none() && !vdev.offline.load(Ordering::Relaxed) {
            row.name = vdev.guid.0.to_string();
            row.note = Some(format!("was {}", vdev.path));
        } else if state == VdevState::Faulted
            || vdev.degraded.load(Ordering::Relaxed)
            || vdev.fault_kept.load(Ordering::Relaxed)
        {
            // VDEV_AUX_ERR_EXCEEDED: a write fault, or the diagnosis's verdict.
            row.note = Some("too many errors".to_string());
        } else if state.is_usable() && !vdev.dtl.is_empty() {
            row.note = Some("(awaiting resilver)".to_string());
        }
    } else if !state.is_usable() && vdev.kind != VdevKind::Root {
        row.note = Some("insufficient replicas".to_string());
    }
    row
}

fn any_leaf(vdev: &Vdev, test: &dyn Fn(&Vdev) -> bool) -> bool {
    vdev.leaves().iter().any(|leaf| test(leaf))
}

fn has_errors(vdev: &Vdev) -> bool {
    let mut found = false;
    pool::each_vdev(vdev, &mut |v| {
        let s = &v.stats;
        if s.read_errors.load(Ordering::Relaxed)
            + s.write_errors.load(Ordering::Relaxed)
            + s.checksum_errors.load(Ordering::Relaxed)
            > 0
        {
            found = true;
        }
    });
    found
}

/// The damaged objects of the error log, (dataset object, object), in log order, once each
/// (`zpool_get_errlog` folds the log's blocks into files).
fn error_objects(spa: &Spa) -> Vec<(u64, u64)> {
    let mut objects: Vec<(u64, u64)> = spa
        .error_log()
        .iter()
        .map(|b| (b.objset, b.object))
        .collect();
    objects.dedup();
    objects
}

/// What `-v` lists without looking names up (the pool is shared with a running scrub):
/// `<metadata>:<0x1>` for the MOS, `pool:<0x5>` for the root filesystem's objects and
/// `<0x36>:<0x5>` (dataset object, object) for another dataset's, as OpenZFS prints a
/// dataset it cannot name.
fn error_paths(imported: &Imported) -> Vec<String> {
    error_objects(&imported.spa)
        .into_iter()
        .map(|(dataset, object)| {
            if dataset == 0 {
                format!("<metadata>:<{object:#x}>")
            } else if dataset == imported.spa.root_dataset_object() {
                format!("{}:<{object:#x}>", imported.spa.name)
            } else {
                format!("<{dataset:#x}>:<{object:#x}>")
            }
        })
        .collect()
}

/// The `-v` list with names (OpenZFS `zpool_obj_to_path`): a file of a mounted filesystem
/// is `<mountpoint>/<path>`, of an unmounted one or a snapshot `<dataset>:/<path>`, an
/// object no directory names `<dataset>:<0x5>`, the MOS's `<metadata>:<0x1>`. Needs the
/// pool exclusively (the lookups read the MOS and the directories).
fn named_error_paths(spa: &mut Spa) -> Vec<String> {
    let mountpoints: HashMap<String, std::path::PathBuf> =
        crate::daemon::mounts::mounted_list().into_iter().collect();
    let mut dataset_names: HashMap<u64, String> = HashMap::new();
    for name in spa.dataset_names().unwrap_or_default() {
        if let Ok(Some(dataset)) = spa.lookup_dataset(&name) {
            dataset_names.insert(dataset, name.clone());
        }
        for (snapshot, dataset, _) in spa.snapshots(&name).unwrap_or_default() {
            dataset_names.insert(dataset, snapshot);
        }
    }
    error_objects(spa)
        .into_iter()
        .map(|(dataset, object)| {
            if dataset == 0 {
                return format!("<metadata>:<{object:#x}>");
            }
            let Some(name) = dataset_names.get(&dataset) else {
                return format!("<{dataset:#x}>:<{object:#x}>");
            };
            match (spa.zpl_object_path(dataset, object), mountpoints.get(name)) {
                (Some(path), Some(mountpoint)) => format!("{}{path}", mountpoint.display()),
                (Some(path), None) => format!("{name}:{path}"),
                (None, _) => format!("{name}:<{object:#x}>"),
            }
        })
        .collect()
}

pub fn scan_view(imported: &Imported) -> ScanView {
    if let Some(scan) = crate::daemon::registry::get().and_then(|r| r.scan(imported.guid)) {
        let examined = scan.progress.load(Ordering::Relaxed);
        let start = scan.stats.start_secs;
        let elapsed = zetta::spa::now_secs().saturating_sub(start).max(1);
        let progress = zetta_zutil::status::ScanProgress {
            start_epoch: i64::try_from(start).unwrap_or(0),
            pause_epoch: None,
            examined_bytes: examined,
            to_examine_bytes: scan.stats.to_examine_bytes.max(examined),
            issued_bytes: examined,
            to_issue_bytes: scan.stats.to_examine_bytes.max(examined),
            processed_bytes: 0,
            scan_rate_bytes_per_sec: examined / elapsed,
            issue_rate_bytes_per_sec: examined / elapsed,
        };
        return ScanView::ScrubInProgress(progress);
    }
    let scan = imported.spa.scan;
    let end_epoch = i64::try_from(scan.end_secs).unwrap_or(0);
    let elapsed_secs = scan.end_secs.saturating_sub(scan.start_secs);
    match (scan.function, scan.state) {
        (ScanFunction::Scrub, ScanState::Finished) => ScanView::ScrubFinished {
            repaired_bytes: scan.repaired_bytes,
            elapsed_secs,
            errors: scan.errors,
            end_epoch,
        },
        (ScanFunction::Resilver, ScanState::Finished) => ScanView::ResilverFinished {
            resilvered_bytes: scan.repaired_bytes,
            elapsed_secs,
            errors: scan.errors,
            end_epoch,
        },
        (ScanFunction::Scrub, ScanState::Canceled | ScanState::Scanning) => {
            ScanView::ScrubCanceled { end_epoch }
        }
        (ScanFunction::Resilver, ScanState::Canceled | ScanState::Scanning) => {
            ScanView::ResilverCanceled { end_epoch }
        }
        _ => ScanView::None,
    }
}

/// `print_status_initialize` / `print_status_trim` for every leaf row: `-i` and `-t`
/// print each leaf's progress, otherwise only a running walk says `(initializing)` or
/// `(trimming)`. Rows are matched to leaves by walking the tree as `status_view` built it.
fn activity_notes(
    spa: &Spa,
    view: &mut PoolStatusView,
    (init_verbose, trim_verbose): (bool, bool),
) {
    use zetta::spa::vdev_initialize::{Activity, LeafState};
    fn note(spa: &Spa, leaf: &Vdev, activity: Activity, verbose: bool) -> String {
        let progress = spa.leaf_progress(activity, leaf.guid.0);
        let (verb, verb_ing) = match activity {
            Activity::Initialize => ("initialized", "initializing"),
            Activity::Trim => ("trimmed", "trimming"),
        };
        if !verbose {
            return if progress.state == LeafState::Active {
                format!("  ({verb_ing})")
            } else {
                String::new()
            };
        }
        let when = match progress.state {
            LeafState::Suspended => "suspended, started at",
            LeafState::Active => "started at",
            LeafState::Complete => "completed at",
            _ => {
                if activity == Activity::Trim && !spa.leaf_supports_trim(leaf.guid.0) {
                    return "  (trim unsupported)".to_string();
                }
                return match activity {
                    Activity::Initialize => "  (uninitialized)".to_string(),
                    Activity::Trim => "  (untrimmed)".to_string(),
                };
            }
        };
        let percent = if progress.state == LeafState::Complete {
            100
        } else {
            let (done, est) = spa.leaf_activity_bytes(activity, leaf.guid.0);
            done * 100 / (est + 1)
        };
        let time = zetta_zutil::nicenum::ctime(progress.action_time as i64);
        format!("  ({percent}% {verb}, {when} {time})")
    }
    fn walk(spa: &Spa, vdev: &Vdev, row: &mut VdevStatusRow, flags: (bool, bool)) {
        if vdev.is_leaf() {
            let text = note(spa, vdev, Activity::Initialize, flags.0)
                + &note(spa, vdev, Activity::Trim, flags.1);
            if !text.is_empty() {
                row.note = Some(match row.note.take() {
                    Some(old) => format!("{old}{text}"),
                    None => text.trim_start().to_string(),
                });
            }
            return;
        }
        let children = vdev.children.iter().filter(|c| c.kind != VdevKind::Hole);
        for (child, child_row) in children.zip(row.children.iter_mut()) {
            walk(spa, child, child_row, flags);
        }
    }
    let tops: Vec<&Vdev> = spa
        .root
        .children
        .iter()
        .filter(|t| t.kind != VdevKind::Hole)
        .collect();
    let normal = tops.iter().filter(|t| !t.is_log);
    for (top, row) in normal.zip(view.root.children.iter_mut()) {
        walk(spa, top, row, (init_verbose, trim_verbose));
    }
    let logs = tops.iter().filter(|t| t.is_log);
    for (top, row) in logs.zip(view.logs.iter_mut()) {
        walk(spa, top, row, (init_verbose, trim_verbose));
    }
}

/// A hot spare's row (`print_spares`): INUSE "currently in use" while it stands in for a
/// leaf (VDEV_AUX_SPARED), AVAIL, or UNAVAIL "cannot open" when its device is missing;
/// spares show no error counters.
fn spare_row(spa: &Spa, spare: &Vdev) -> VdevStatusRow {
    let mut row = row_of(spare);
    row.name = spare.path.clone();
    if spa.spare_in_use(spare.guid) {
        row.state = "INUSE".to_string();
        row.note = Some("currently in use".to_string());
    } else if spare.device.is_some() {
        row.state = "AVAIL".to_string();
        row.note = None;
    } else {
        row.state = "UNAVAIL".to_string();
        row.note = Some("cannot open".to_string());
    }
    row
}

pub fn status_view(imported: &Imported) -> PoolStatusView {
    let spa = &imported.spa;
    let health = spa.health();
    let mut root = row_of(&spa.root);
    root.name = spa.name.clone();
    let mut logs = Vec::new();
    let mut normal = Vec::new();
    for (top, row) in spa.root.children.iter().zip(root.children.drain(..)) {
        if top.kind == zetta::vdev::VdevKind::Hole {
            continue;
        }
        if top.is_log {
            logs.push(row);
        } else {
            normal.push(row);
        }
    }
    root.children = normal;
    if !health.is_usable() {
        root.note = Some("insufficient replicas".to_string());
    }
    let errors = error_paths(imported);
    let mut view = PoolStatusView {
        name: spa.name.clone(),
        state: health.name().to_string(),
        scan: scan_view(imported),
        root,
        logs,
        cache: spa.cache.iter().map(row_of).collect(),
        spares: spa.spares.iter().map(|s| spare_row(spa, s)).collect(),
        // OpenZFS counts the error log's entries (blocks), `-v` folds them into files.
        data_errors: spa.error_log().len() as u64,
        error_paths: errors,
        ..PoolStatusView::default()
    };
    let missing = any_leaf(&spa.root, &|l| {
        l.device.is_none() && !l.offline.load(Ordering::Relaxed)
    });
    if missing && !health.is_usable() {
        view.set_reason(&STATUS_MISSING_DEV_NO_REPLICAS);
    } else if missing {
        view.set_reason(&STATUS_MISSING_DEV_REPLICATED);
    } else if view.data_errors > 0 {
        view.set_reason(&STATUS_CORRUPT_DATA);
    } else if has_errors(&spa.root)
        || any_leaf(&spa.root, &|l| {
            // `vdev_errors`: a DEGRADED leaf counts as failing, as a FAULTED one does.
            matches!(l.state(), VdevState::Faulted | VdevState::Degraded)
        })
    {
        view.set_reason(&STATUS_FAILING_DEV);
    } else if any_leaf(&spa.root, &|l| l.offline.load(Ordering::Relaxed)) {
        view.set_reason(&STATUS_OFFLINE_DEV);
    } else if let Some(foreign) = spa.openzfs() {
        // A foreign pool's format notes, last in `zpool_get_status` order.
        use zetta::spa::openzfs::discover::Status;
        match foreign.status {
            Status::VersionOlder => view.set_reason(&STATUS_VERSION_OLDER),
            Status::FeatDisabled => view.set_reason(&STATUS_FEAT_DISABLED),
            _ => {}
        }
    } else if imported.spa.version() < zetta::spa::openzfs::feature::SPA_VERSION_FEATURES {
        // `check_status`: a legacy version before any feature question.
        view.set_reason(&STATUS_VERSION_OLDER);
    } else if super::upgrade::requested_features_missing(imported) {
        view.set_reason(&STATUS_FEAT_DISABLED);
    }
    view
}

/// A row of the tree of a pool that cannot be opened: a device that is not there says
/// `cannot open` under its path, a vdev that cannot work `insufficient replicas`.
fn unavailable_row(vdev: &Vdev) -> VdevStatusRow {
    let state = vdev.state();
    let note = if vdev.is_leaf() && vdev.device.is_none() {
        Some("cannot open".to_string())
    } else if !vdev.is_leaf() && !state.is_usable() {
        Some("insufficient replicas".to_string())
    } else {
        None
    };
    VdevStatusRow {
        name: if vdev.is_leaf() {
            vdev.path.clone()
        } else {
            vdev.display_name()
        },
        state: if vdev.is_leaf() && vdev.device.is_none() {
            "UNAVAIL".to_string()
        } else {
            state.name().to_string()
        },
        read_errors: 0,
        write_errors: 0,
        checksum_errors: 0,
        note,
        children: vdev
            .children
            .iter()
            .filter(|c| c.kind != VdevKind::Hole)
            .map(unavailable_row)
            .collect(),
    }
}

/// `zpool status` of a pool that cannot be opened (OpenZFS prints its cached config as
/// UNAVAIL with `ZPOOL_STATUS_MISSING_DEV_NR`): the tree from the labels of the devices
/// still there, else every cached device path as a missing leaf.
pub fn unavailable_view(gone: &pool::Unavailable) -> PoolStatusView {
    let (mut root, logs) = match pool::unavailable_tree(&gone.entry) {
        Some(tree) => {
            let mut root = unavailable_row(&tree);
            let logs: Vec<bool> = tree
                .children
                .iter()
                .filter(|c| c.kind != VdevKind::Hole)
                .map(|c| c.is_log)
                .collect();
            let mut normal = Vec::new();
            let mut log_rows = Vec::new();
            for (row, is_log) in root.children.drain(..).zip(logs) {
                if is_log {
                    log_rows.push(row);
                } else {
                    normal.push(row);
                }
            }
            root.children = normal;
            (root, log_rows)
        }
        None => (
            VdevStatusRow {
                children: gone
                    .entry
                    .paths
                    .iter()
                    .map(|path| VdevStatusRow {
                        name: path.clone(),
                        state: "UNAVAIL".to_string(),
                        note: Some("cannot open".to_string()),
                        ..VdevStatusRow::default()
                    })
                    .collect(),
                ..VdevStatusRow::default()
            },
            Vec::new(),
        ),
    };
    root.name = gone.entry.name.clone();
    root.state = "UNAVAIL".to_string();
    root.note = Some("insufficient replicas".to_string());
    let mut view = PoolStatusView {
        name: gone.entry.name.clone(),
        state: "UNAVAIL".to_string(),
        scan: ScanView::None,
        root,
        logs,
        ..PoolStatusView::default()
    };
    view.set_reason(&STATUS_MISSING_DEV_NO_REPLICAS);
    view
}

/// Replaces the unnamed `-v` lists by named ones, taking each pool with errors exclusively
/// for the lookups; a pool being scrubbed keeps its unnamed list (the scrub shares it until
/// it ends).
fn name_error_paths(views: &mut [PoolStatusView]) {
    for view in views.iter_mut() {
        if view.error_paths.is_empty() || matches!(view.scan, ScanView::ScrubInProgress(_)) {
            continue;
        }
        if let Ok(mut imported) = pool::open_pool(&view.name) {
            view.error_paths = named_error_paths(&mut imported.spa);
        }
    }
}

/// Whether `zpool status -x` has something to say about the pool.
fn is_unhealthy(view: &PoolStatusView) -> bool {
    let format_note = [&STATUS_VERSION_OLDER, &STATUS_FEAT_DISABLED]
        .iter()
        .any(|r| view.status.as_deref() == Some(r.status));
    view.state != "ONLINE" || (view.status.is_some() && !format_note) || view.data_errors > 0
}

/// A device row named by its path, and its children, shortened as `zpool_vdev_name` does
/// without -P (`pool::vdev_short_name`).
pub(super) fn short_names(row: &mut VdevStatusRow) {
    if row.name.starts_with('/') {
        row.name = pool::vdev_short_name(&row.name).to_string();
    }
    row.children.iter_mut().for_each(short_names);
}

/// The long options of `zpool status` (`--power` is not in Zetta: refused).
const LONG_STATUS: &[(&str, char)] = &[
    ("json", super::OPTION_JSON),
    ("json-int", super::OPTION_JSON_INT),
    ("json-flat-vdevs", super::OPTION_JSON_FLAT_VDEVS),
    ("json-pool-key-guid", super::OPTION_JSON_POOL_KEY_GUID),
];

/// `zpool status [-j [--json-int] [--json-flat-vdevs] [--json-pool-key-guid]] [-vxpP]
/// [-T u|d] [pool]… [interval [count]]`
pub fn cmd_status(args: &[String], ctx: &mut Ctx) -> CmdResult {
    // 2.3's option string has no leading ':', so glibc words unknown long options first.
    let (parsed, json) =
        super::json::parse_with_json(args, "ijPptvxT:", LONG_STATUS, Some("zpool"))?;
    let flags = (parsed.has('i'), parsed.has('t'));
    let verbose = parsed.has('v');
    // --json-int implies -p (cb_literal), as in 2.3.
    let exact = parsed.has('p') || json.as_int;
    let only_unhealthy = parsed.has('x');
    let timestamp = super::timestamp_format(&parsed)?;
    let mut names = parsed.operands.clone();
    let (interval, count) = interval_count(&mut names)?;
    let mut iteration = 0u64;
    loop {
        let (pools, unavailable) = pool::open_named_listing(&names)?;
        if pools.is_empty() && unavailable.is_empty() && !json.enabled {
            ctx.warn("no pools available\n");
            return Ok(());
        }
        if !json.enabled {
            ctx.print(&super::timestamp_line(timestamp));
        }
        let mut views: Vec<PoolStatusView> = pools
            .iter()
            .map(|p| {
                let mut view = status_view(p);
                activity_notes(&p.spa, &mut view, flags);
                view
            })
            .collect();
        if !parsed.has('P') {
            // zpool_vdev_name: devices by their short names unless -P.
            for view in &mut views {
                short_names(&mut view.root);
                view.logs.iter_mut().for_each(short_names);
                view.cache.iter_mut().for_each(short_names);
                view.spares.iter_mut().for_each(short_names);
            }
        }
        views.extend(unavailable.iter().map(unavailable_view));
        if names.is_empty() {
            views.sort_by(|a, b| a.name.cmp(&b.name));
        } else {
            views.sort_by_key(|v| names.iter().position(|n| *n == v.name));
        }
        if verbose && json.enabled {
            // The named lookups take each pool exclusively: not while we hold it shared.
            let names: Vec<String> = views.iter().map(|v| v.name.clone()).collect();
            drop(pools);
            name_error_paths(&mut views);
            let (again, _) = pool::open_named_listing(&names)?;
            print_json(
                ctx,
                &json,
                exact,
                verbose,
                parsed.has('P'),
                timestamp,
                &views,
                &again,
                &unavailable,
                only_unhealthy,
            );
        } else if json.enabled {
            print_json(
                ctx,
                &json,
                exact,
                verbose,
                parsed.has('P'),
                timestamp,
                &views,
                &pools,
                &unavailable,
                only_unhealthy,
            );
            drop(pools);
        } else {
            drop(pools);
            if verbose {
                name_error_paths(&mut views);
            }
        }
        let shown: Vec<&PoolStatusView> = views
            .iter()
            .filter(|v| !only_unhealthy || is_unhealthy(v))
            .collect();
        if json.enabled {
            // Printed above.
        } else if shown.is_empty() && names.is_empty() {
            ctx.print(&format!("{}\n", format_status_all_healthy()));
        } else if shown.is_empty() {
            for view in &views {
                ctx.print(&format!("pool '{}' is healthy\n", view.name));
            }
        } else {
            let texts: Vec<String> = shown
                .iter()
                .map(|v| format_status(v, verbose, exact))
                .collect();
            ctx.print(&texts.join("\n"));
        }
        iteration += 1;
        let Some(interval) = interval else {
            return Ok(());
        };
        if count.is_some_and(|c| iteration >= c) {
            return Ok(());
        }
        let _ = ctx.out.flush();
        // A client gone (^C) ends the command inside the daemon too.
        if !crate::daemon::wait_interval(interval) {
            return Ok(());
        }
    }
}

/// Prints one `zpool status -j` document: the pools `views` shows, in that order, `-x`
/// leaving out the healthy ones (an empty `"pools"` when none is left).
#[allow(clippy::too_many_arguments)]
fn print_json(
    ctx: &mut Ctx,
    json: &super::json::JsonOptions,
    exact: bool,
    verbose: bool,
    full_paths: bool,
    timestamp: Option<char>,
    views: &[PoolStatusView],
    pools: &[Imported],
    unavailable: &[pool::Unavailable],
    only_unhealthy: bool,
) {
    let mut document = super::json::pools_document("status");
    json.add_time(&mut document, timestamp);
    let mut entries = Vec::new();
    for view in views {
        if only_unhealthy && !is_unhealthy(view) {
            continue;
        }
        let imported = pools.iter().find(|p| p.spa.name == view.name);
        let guid = unavailable
            .iter()
            .find(|gone| gone.entry.name == view.name)
            .map(|gone| gone.entry.guid)
            .unwrap_or(0);
        entries.push(super::status_json::pool_status(
            json, exact, verbose, view, full_paths, imported, guid,
        ));
    }
    if let Some(pools_object) = document.get_mut("pools") {
        for (key, item) in entries {
            pools_object.insert(&key, item);
        }
    }
    super::json::print(ctx, &document);
}
