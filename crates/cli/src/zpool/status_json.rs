//! `zpool status -j` (OpenZFS 2.3 `status_callback_json`, `vdev_stats_nvlist`,
//! `class_vdevs_nvlist`, `l2cache_nvlist`, `scan_status_nvlist`, `errors_nvlist` in
//! `cmd/zpool/zpool_main.c`).
//!
//! Theory: the document is built from the same `PoolStatusView` the text is printed
//! from (status, action, message id, scan, error count and list), so the two cannot
//! disagree, plus what only JSON shows, read from the engine's vdev tree: guids, vdev
//! types, paths, classes and space. Each pool is `fill_pool_info`, then `status`,
//! `action` (with their final newline, as 2.3 keeps it), `msgid`/`moreinfo`,
//! `scan_stats`, `vdevs` (the root vdev, named after the pool, its children nested in
//! `"vdevs"`), then the classes `logs`, `l2cache`, and `error_count` (with `-v` and errors,
//! `errlist`). A vdev is `fill_vdev_info` then, in 2.3's order, `alloc_space` and
//! `total_space` (root and top-level vdevs), the three error counters, `slow_ios` (leaves),
//! and `not_present`/`was` for a missing device or `aux` for one that failed
//! (`ERR_EXCEEDED`, `NO_REPLICAS`, `OPEN_FAILED`).
//!
//! `--json-flat-vdevs` keeps that tree and adds every vdev below the root to `"vdevs"`
//! itself, children before parents, each with `"parent"` (2.3's recursion does exactly
//! this). Left out because Zetta keeps no such figure: `def_space`, `rep_dev_size`,
//! `phys_space` (absent keys, as 2.3 leaves out zero ones), rebuild, removal, checkpoint
//! and raidz-expansion stats (Zetta has none of those operations), dedup stats.

use super::json::{imported_pool_info, pool_info, vdev_info, JsonOptions, VdevClass};
use super::pool::Imported;
use zetta::spa::{ScanFunction, ScanState};
use zetta::vdev::{Vdev, VdevKind};
use zetta_zutil::json::{nice_number, Json, NiceFormat};
use zetta_zutil::status::{PoolStatusView, VdevStatusRow};

/// What every vdev of one document needs.
struct Walk<'a> {
    json: &'a JsonOptions,
    /// `-p` or `--json-int`.
    literal: bool,
}

impl Walk<'_> {
    fn number(&self, value: u64) -> Json {
        self.json.number(value, self.literal)
    }

    /// The counters and notes of a vdev, after `fill_vdev_info`.
    fn add_stats(
        &self,
        entry: &mut Json,
        row: &VdevStatusRow,
        space: Option<(u64, u64)>,
        leaf: bool,
    ) {
        if let Some((alloc, total)) = space {
            if alloc != 0 {
                entry.insert("alloc_space", self.number(alloc));
            }
            if total != 0 {
                entry.insert("total_space", self.number(total));
            }
        }
        entry.insert("read_errors", self.number(row.read_errors));
        entry.insert("write_errors", self.number(row.write_errors));
        entry.insert("checksum_errors", self.number(row.checksum_errors));
        if leaf {
            entry.insert("slow_ios", self.number(0));
        }
        match row.note.as_deref() {
            Some(note) if note.starts_with("was ") => {
                entry.insert("not_present", self.json.exact(1));
                entry.insert("was", Json::string(&note["was ".len()..]));
            }
            Some("too many errors") => entry.insert("aux", Json::string("ERR_EXCEEDED")),
            Some("insufficient replicas") => entry.insert("aux", Json::string("NO_REPLICAS")),
            Some("cannot open") => entry.insert("aux", Json::string("OPEN_FAILED")),
            _ => {}
        }
    }

    /// `vdev_stats_nvlist` of an engine vdev and its status row (same shape).
    #[allow(clippy::too_many_arguments)]
    fn vdev(
        &self,
        vdev: &Vdev,
        row: &VdevStatusRow,
        class: VdevClass,
        parent: Option<&str>,
        space: Option<(u64, u64)>,
        flat: &mut Json,
        out: &mut Json,
    ) {
        let mut entry = vdev_info(self.json, &row.name, vdev, class, &row.state);
        if let (true, Some(parent)) = (self.json.flat_vdevs, parent) {
            entry.insert("parent", Json::string(parent));
        }
        self.add_stats(&mut entry, row, space, vdev.children.is_empty());
        let mut children = Json::object();
        for (child, child_row) in vdev.children.iter().zip(&row.children) {
            if child.kind == VdevKind::Hole || child.is_log {
                continue;
            }
            self.vdev(
                child,
                child_row,
                class,
                Some(&row.name),
                None,
                flat,
                &mut children,
            );
        }
        if !children.is_empty_object() {
            entry.insert("vdevs", children);
        }
        if self.json.flat_vdevs && parent.is_some() {
            flat.insert(&row.name, entry.clone());
        }
        out.insert(&row.name, entry);
    }

    /// A vdev of a pool that cannot be opened: only what its status row knows.
    fn row_only(&self, row: &VdevStatusRow, parent: Option<&str>, flat: &mut Json, out: &mut Json) {
        let mut entry = Json::object();
        entry.insert("name", Json::string(&row.name));
        entry.insert("class", Json::string(VdevClass::Normal.name()));
        entry.insert("state", Json::string(&row.state));
        if let (true, Some(parent)) = (self.json.flat_vdevs, parent) {
            entry.insert("parent", Json::string(parent));
        }
        self.add_stats(&mut entry, row, None, row.children.is_empty());
        let mut children = Json::object();
        for child in &row.children {
            self.row_only(child, Some(&row.name), flat, &mut children);
        }
        if !children.is_empty_object() {
            entry.insert("vdevs", children);
        }
        if self.json.flat_vdevs && parent.is_some() {
            flat.insert(&row.name, entry.clone());
        }
        out.insert(&row.name, entry);
    }
}

/// `scan_status_nvlist`: left out when no scrub or resilver ever ran.
fn scan_stats(imported: &Imported, json: &JsonOptions, literal: bool) -> Option<Json> {
    let mut stats = imported.spa.scan;
    if let Some(running) = crate::daemon::registry::get().and_then(|r| r.scan(imported.guid)) {
        let examined = running.progress.load(std::sync::atomic::Ordering::Relaxed);
        stats.function = ScanFunction::Scrub;
        stats.state = ScanState::Scanning;
        stats.start_secs = running.stats.start_secs;
        stats.end_secs = 0;
        stats.to_examine_bytes = running.stats.to_examine_bytes.max(examined);
        stats.examined_bytes = examined;
        stats.repaired_bytes = 0;
        stats.errors = 0;
    }
    let function = match stats.function {
        ScanFunction::None => return None,
        ScanFunction::Scrub => "SCRUB",
        ScanFunction::Resilver => "RESILVER",
    };
    let state = match stats.state {
        ScanState::None => "NONE",
        ScanState::Scanning => "SCANNING",
        ScanState::Finished => "FINISHED",
        ScanState::Canceled => "CANCELED",
    };
    let number = |v: u64| nice_number(v, literal, json.as_int, NiceFormat::Number);
    let time = |v: u64| nice_number(v, literal, json.as_int, NiceFormat::Timestamp);
    let mut scan = Json::object();
    scan.insert("function", Json::string(function));
    scan.insert("state", Json::string(state));
    scan.insert("start_time", time(stats.start_secs));
    scan.insert("end_time", time(stats.end_secs));
    scan.insert("to_examine", number(stats.to_examine_bytes));
    scan.insert("examined", number(stats.examined_bytes));
    scan.insert("skipped", number(0));
    scan.insert("processed", number(stats.repaired_bytes));
    scan.insert("errors", number(stats.errors));
    // One pass per scan: a scan does not resume across an import in Zetta.
    scan.insert("bytes_per_scan", number(stats.examined_bytes));
    scan.insert("pass_start", json.exact(stats.start_secs));
    scan.insert("scrub_pause", time(0));
    scan.insert("scrub_spent_paused", json.exact(0));
    scan.insert("issued_bytes_per_scan", number(stats.examined_bytes));
    scan.insert("issued", number(stats.examined_bytes));
    Some(scan)
}

/// `print_status_reason` and the message id, as JSON keeps them.
fn add_reason(item: &mut Json, view: &PoolStatusView) {
    if let Some(status) = &view.status {
        item.insert("status", Json::string(format!("{status}\n")));
    }
    if let Some(action) = &view.action {
        item.insert("action", Json::string(format!("{action}\n")));
    }
    if let Some(see) = &view.see {
        if !see.contains("://") {
            item.insert("msgid", Json::string(see));
            item.insert(
                "moreinfo",
                Json::string(format!("https://openzfs.github.io/openzfs-docs/msg/{see}")),
            );
        }
    }
}

/// `errors_nvlist`.
fn add_errors(item: &mut Json, view: &PoolStatusView, walk: &Walk, verbose: bool) {
    item.insert("error_count", walk.number(view.data_errors));
    if verbose && view.data_errors != 0 {
        let list = view.error_paths.iter().map(Json::string).collect();
        item.insert("errlist", Json::Array(list));
    }
}

/// One pool of `zpool status -j`. `view` is the pool's text view (names already
/// shortened unless -P, `full_paths`); `imported` its open pool, `None` for one that
/// cannot be opened (then `unavailable_guid` is its cached guid).
pub fn pool_status(
    json: &JsonOptions,
    literal: bool,
    verbose: bool,
    view: &PoolStatusView,
    full_paths: bool,
    imported: Option<&Imported>,
    unavailable_guid: u64,
) -> (String, Json) {
    let walk = Walk { json, literal };
    let Some(imported) = imported else {
        let mut item = pool_info(json, &view.name, unavailable_guid, None, "FAULTED", false);
        add_reason(&mut item, view);
        let mut flat = Json::object();
        let mut tree = Json::object();
        walk.row_only(&view.root, None, &mut flat, &mut tree);
        append_flat(&mut tree, flat);
        item.insert("vdevs", tree);
        add_errors(&mut item, view, &walk, verbose);
        return (json.pool_key(&view.name, unavailable_guid), item);
    };
    let spa = &imported.spa;
    let mut item = imported_pool_info(json, imported, false);
    add_reason(&mut item, view);
    if let Some(scan) = scan_stats(imported, json, literal) {
        item.insert("scan_stats", scan);
    }
    let shorten = |mut row: VdevStatusRow| {
        if !full_paths {
            super::status::short_names(&mut row);
        }
        row
    };
    // The root's row as the text has it, with every top-level vdev's row (holes and
    // logs included) so that the rows follow the engine's children one for one.
    let mut root_row = shorten(super::status::row_of(&spa.root));
    root_row.name = spa.name.clone();
    root_row.state = view.root.state.clone();
    root_row.note = view.root.note.clone();
    let (size, alloc, _) = spa.space();
    let mut flat = Json::object();
    // The root: its children are walked here for their space figures.
    let mut root_entry = vdev_info(
        json,
        &spa.name,
        &spa.root,
        VdevClass::Normal,
        &root_row.state,
    );
    walk.add_stats(&mut root_entry, &root_row, Some((alloc, size)), false);
    let mut children = Json::object();
    let mut logs = Json::object();
    for (index, (top, row)) in spa.root.children.iter().zip(&root_row.children).enumerate() {
        if top.kind == VdevKind::Hole {
            continue;
        }
        let space = spa
            .vdev_space(index)
            .map(|(size, alloc, _, _)| (alloc, size));
        if top.is_log {
            walk.vdev(top, row, VdevClass::Log, None, space, &mut flat, &mut logs);
        } else {
            walk.vdev(
                top,
                row,
                VdevClass::Normal,
                Some(&spa.name),
                space,
                &mut flat,
                &mut children,
            );
        }
    }
    if !children.is_empty_object() {
        root_entry.insert("vdevs", children);
    }
    // Flat: the vdevs below the root come first (2.3 adds the root last).
    let mut tree = std::mem::replace(&mut flat, Json::object());
    tree.insert(&spa.name, root_entry);
    let mut l2cache = Json::object();
    for cache in &spa.cache {
        let row = shorten(super::status::row_of(cache));
        walk.vdev(
            cache,
            &row,
            VdevClass::L2cache,
            None,
            None,
            &mut flat,
            &mut l2cache,
        );
    }
    append_flat(&mut l2cache, flat);
    if json.flat_vdevs {
        // Class vdevs join the flat map itself (class_vdevs_nvlist, l2cache_nvlist).
        append_flat(&mut tree, logs);
        append_flat(&mut tree, l2cache);
        item.insert("vdevs", tree);
    } else {
        item.insert("vdevs", tree);
        if !logs.is_empty_object() {
            item.insert("logs", logs);
        }
        if !l2cache.is_empty_object() {
            item.insert("l2cache", l2cache);
        }
    }
    add_errors(&mut item, view, &walk, verbose);
    (json.pool_key(&spa.name, spa.guid.0), item)
}

/// Moves the pairs of `flat` to the end of `tree` (a key already there moves too).
fn append_flat(tree: &mut Json, flat: Json) {
    if let Json::Object(pairs) = flat {
        for (key, value) in pairs {
            tree.insert(&key, value);
        }
    }
}
