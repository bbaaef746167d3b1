//! Commands that change one device of a live pool, and scrub: `attach`, `detach`,
//! `replace`, `online`, `offline`, `clear`, `scrub` (OpenZFS
//! `zpool_do_attach_or_replace`, `zpool_do_detach`, `zpool_do_online`,
//! `zpool_do_offline`, `zpool_do_clear`, `zpool_do_scrub`, and `zpool_vdev_attach` etc.
//! in `libzfs_pool.c` for the error words).
//!
//! A new device goes through the same checks as in `zpool create` (absolute path that
//! exists, not in another pool unless `-f`). The engine resilvers synchronously, so when
//! `attach`/`replace` return the new device is complete (`-w` is thus always true) and
//! `zpool scrub` likewise runs to completion in this process; `-s`/`-p` therefore never
//! find a scrub to stop.

use super::create::history_line;
use super::pool::{self, Imported};
use super::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use zetta::vdev::{Vdev, VdevState};

fn check_new_device(path: &str, force: bool) -> Result<(), CmdError> {
    pool::leaf_kind(path).map_err(|e| CmdError::Fail(e.to_string()))?;
    pool::check_in_use(&[path.to_string()], force)
}

/// The leaf a device operand names: its path, its guid, or its short name (`loop0` for
/// `/dev/loop0`, as `zpool status` shows it; OpenZFS's `zpool_find_vdev` matches both).
fn find_leaf<'a>(root: &'a Vdev, name: &str) -> Option<&'a Vdev> {
    let leaves = root.leaves();
    let exact = leaves
        .iter()
        .find(|l| l.path == name || l.guid.0.to_string() == name)
        .copied();
    exact.or_else(|| {
        leaves
            .into_iter()
            .find(|l| !name.starts_with('/') && pool::vdev_short_name(&l.path) == name)
    })
}

/// A device operand as the pool's leaves name it: a short name becomes its leaf's path;
/// anything else is left as given (the engine then says what is wrong with it).
pub(super) fn leaf_name(root: &Vdev, name: &str) -> String {
    match find_leaf(root, name) {
        Some(leaf) if !name.starts_with('/') && leaf.guid.0.to_string() != name => {
            leaf.path.clone()
        }
        _ => name.to_string(),
    }
}

/// `zpool attach [-fsw] [-o ashift=N] pool device new_device`; `-w` (wait for the
/// resilver) is what the engine always does, `-s` (sequential rebuild) and `-o` are refused.
pub fn cmd_attach(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "fw")?;
    let (name, old, new) = match parsed.operands.as_slice() {
        [] => return usage("missing pool name argument"),
        [_] => return usage("missing <device> specification"),
        [_, _] => return usage("missing <new_device> specification"),
        [name, old, new] => (name, old, new),
        _ => return usage("too many arguments"),
    };
    let mut imported = pool::open_pool(name)?;
    // The new device may be a short name (`loop1` for /dev/loop1), as on create and add
    // (zpool_scrub_005_pos attaches `loop1`).
    let resolved = pool::resolve_shortname(new);
    let new = resolved.as_ref().unwrap_or(new);
    check_new_device(new, parsed.has('f'))?;
    let action = format!("cannot attach {new} to {old}");
    pool::writable(&imported, &action)?;
    if find_leaf(&imported.spa.root, old).is_none() {
        return fail(format!("{action}: no such device in pool"));
    }
    let device = pool::open_device(new)?;
    let old_path = leaf_name(&imported.spa.root, old);
    imported
        .spa
        .attach(&old_path, new, device)
        .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    imported.spa.log_history(&history_line("attach", args));
    pool::commit(&mut imported)
}

/// `zpool replace [-fsw] pool device [new_device]`; `-w` as in `attach`.
pub fn cmd_replace(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "fw")?;
    let (name, old, new) = match parsed.operands.as_slice() {
        [] => return usage("missing pool name argument"),
        [_] => return usage("missing <device> specification"),
        [name, old] => (name, old, old),
        [name, old, new] => (name, old, new),
        _ => return usage("too many arguments"),
    };
    let mut imported = pool::open_pool(name)?;
    let action = format!("cannot replace {old} with {new}");
    pool::writable(&imported, &action)?;
    let Some(leaf) = find_leaf(&imported.spa.root, old) else {
        return fail(format!("{action}: no such device in pool"));
    };
    if new == old && leaf.device.is_some() {
        return fail(format!("{action}: {new} is busy"));
    }
    // One of the pool's hot spares: swapped in under a `spare` vdev, its device already
    // the pool's (`spa_vdev_attach` with a spare).
    if new != old && imported.spa.spare_named(new).is_some() {
        let old_path = leaf_name(&imported.spa.root, old);
        imported
            .spa
            .replace_with_spare(&old_path, new)
            .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
        imported.spa.log_history(&history_line("replace", args));
        return pool::commit(&mut imported);
    }
    // Replacing a missing device by itself: its label (if any) is the pool's own.
    if new != old {
        check_new_device(new, parsed.has('f'))?;
    } else {
        pool::leaf_kind(new).map_err(|e| CmdError::Fail(e.to_string()))?;
    }
    let device = pool::open_device(new)?;
    let old_path = leaf_name(&imported.spa.root, old);
    imported
        .spa
        .replace(&old_path, new, device)
        .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    imported.spa.log_history(&history_line("replace", args));
    pool::commit(&mut imported)
}

/// `zpool detach pool device`
pub fn cmd_detach(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "")?;
    let (name, device) = match parsed.operands.as_slice() {
        [] => return usage("missing pool name argument"),
        [_] => return usage("missing <device> specification"),
        [name, device] => (name, device),
        _ => return usage("too many arguments"),
    };
    let mut imported = pool::open_pool(name)?;
    pool::writable(&imported, &format!("cannot detach {device}"))?;
    let path = leaf_name(&imported.spa.root, device);
    imported.spa.detach(&path).map_err(|e| {
        CmdError::Fail(format!(
            "cannot detach {device}: {}",
            pool::spa_error_text(&e)
        ))
    })?;
    imported.spa.log_history(&history_line("detach", args));
    pool::commit(&mut imported)
}

fn pool_and_devices(parsed: &super::Parsed) -> Result<(&String, &[String]), CmdError> {
    match parsed.operands.as_slice() {
        [] => usage("missing pool name"),
        [_] => usage("missing device name"),
        [name, devices @ ..] => Ok((name, devices)),
    }
}

/// `zpool offline [-ft] pool device…`
pub fn cmd_offline(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "")?;
    let (name, devices) = pool_and_devices(&parsed)?;
    let mut imported = pool::open_pool(name)?;
    pool::writable(&imported, &format!("cannot offline {}", devices[0]))?;
    let mut result = Ok(());
    let mut changes = Vec::new();
    for device in devices {
        let last = find_leaf(&imported.spa.root, device).map(|l| l.state());
        let path = leaf_name(&imported.spa.root, device);
        if let Err(e) = imported.spa.set_offline(&path, true) {
            result = fail(format!(
                "cannot offline {device}: {}",
                pool::spa_error_text(&e)
            ));
            break;
        }
        if let (Some(leaf), Some(last)) = (find_leaf(&imported.spa.root, device), last) {
            if leaf.state() != last {
                changes.push(super::events::statechange(&imported.spa, leaf, last));
            }
        }
    }
    imported.spa.log_history(&history_line("offline", args));
    pool::commit(&mut imported)?;
    super::events::pump(Some(&imported.spa), changes);
    result
}

/// `zpool online [-e] pool device…`
pub fn cmd_online(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "e")?;
    let (name, devices) = pool_and_devices(&parsed)?;
    let mut imported = pool::open_pool(name)?;
    pool::writable(&imported, &format!("cannot online {}", devices[0]))?;
    let mut result = Ok(());
    let mut changes = Vec::new();
    for device in devices {
        let last = find_leaf(&imported.spa.root, device).map(|l| l.state());
        let path = leaf_name(&imported.spa.root, device);
        if let Err(e) = imported.spa.set_offline(&path, false) {
            result = fail(format!(
                "cannot online {device}: {}",
                pool::spa_error_text(&e)
            ));
            break;
        }
        if let (Some(leaf), Some(last)) = (find_leaf(&imported.spa.root, device), last) {
            if leaf.state() != last {
                changes.push(super::events::statechange(&imported.spa, leaf, last));
            }
        }
        let usable =
            find_leaf(&imported.spa.root, device).is_some_and(|l| l.state() == VdevState::Online);
        if !usable {
            ctx.warn(&format!(
                "warning: device '{device}' onlined, but remains in faulted state\nuse 'zpool replace' to replace devices that are no longer present\n"
            ));
        }
    }
    if parsed.has('e') {
        imported.spa.expand_vdevs_if_allowed();
    }
    imported.spa.log_history(&history_line("online", args));
    pool::commit(&mut imported)?;
    super::events::pump(Some(&imported.spa), changes);
    result
}

/// `zpool clear pool [device]`
pub fn cmd_clear(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "")?;
    let (name, device) = match parsed.operands.as_slice() {
        [] => return usage("missing pool name"),
        [name] => (name, None),
        [name, device] => (name, Some(device)),
        _ => return usage("too many arguments"),
    };
    let mut imported: Imported = pool::open_pool(name)?;
    pool::writable(
        &imported,
        &format!("cannot clear errors for {}", device.unwrap_or(name)),
    )?;
    let before: Vec<(u64, VdevState)> = imported
        .spa
        .root
        .leaves()
        .iter()
        .map(|leaf| (leaf.guid.0, leaf.state()))
        .collect();
    match device {
        None => {
            imported.spa.clear_errors();
            imported.spa.root.stats.clear_errors();
        }
        Some(device) => {
            let Some(leaf) = find_leaf(&imported.spa.root, device) else {
                return fail(format!(
                    "cannot clear errors for {device}: no such device in pool"
                ));
            };
            leaf.stats.clear_errors();
            if imported.spa.clear_fault(leaf) {
                imported.spa.mark_config_dirty();
            }
        }
    }
    // `vdev_clear` reopens the leaf: each one whose state changed posts a statechange
    // (to ONLINE, which closes its diagnosis case).
    let mut changes = Vec::new();
    for (guid, last) in before {
        if let Some(leaf) = imported.spa.leaf_by_guid(guid) {
            if leaf.state() != last {
                changes.push(super::events::statechange(&imported.spa, leaf, last));
            }
        }
    }
    // `vdev_clear`: a device back from a fault resilvers what it missed meanwhile.
    if let Err(e) = imported.spa.resilver_if_needed() {
        return fail(format!(
            "cannot clear errors for {}: {}",
            device.unwrap_or(name),
            pool::spa_error_text(&e)
        ));
    }
    imported.spa.log_history(&history_line("clear", args));
    pool::commit(&mut imported)?;
    super::events::pump(Some(&imported.spa), changes);
    Ok(())
}

/// `zpool scrub [-s | -p] [-w] pool…`
pub fn cmd_scrub(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "spw")?;
    if parsed.has('s') && parsed.has('p') {
        return usage("invalid option combination: -s and -p are mutually exclusive");
    }
    if parsed.operands.is_empty() {
        return usage("missing pool name argument");
    }
    for name in &parsed.operands {
        if let Some(registry) = crate::daemon::registry::get() {
            if let Some(guid) = pool::guid_of(name)? {
                if let Some(scan) = registry.scan(guid) {
                    if parsed.has('s') {
                        scan.cancel
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                        continue;
                    }
                    return fail(format!("cannot scrub {name}: currently scrubbing; use 'zpool scrub -s' to cancel current scrub"));
                }
            }
        }
        let mut imported = pool::open_pool(name)?;
        // A foreign (OpenZFS) pool is verified in place: every copy read and checked,
        // nothing repaired, nothing written (issue 12 asks for it; OpenZFS itself refuses
        // a scan of a read-only pool).
        if imported.spa.openzfs().is_some() && !parsed.has('s') && !parsed.has('p') {
            imported.spa.scrub(None).map_err(|e| {
                CmdError::Fail(format!("cannot scrub {name}: {}", pool::spa_error_text(&e)))
            })?;
            continue;
        }
        // OpenZFS refuses too (a scan is a sync task); a verify-only scrub of a read-only
        // pool would need reads that never heal.
        pool::writable(&imported, &format!("cannot scrub {name}"))?;
        if parsed.has('s') {
            return fail(format!(
                "cannot cancel scrubbing {name}: there is no active scrub"
            ));
        }
        if parsed.has('p') {
            return fail(format!(
                "cannot pause scrubbing {name}: there is no active scrub"
            ));
        }
        if crate::daemon::registry::get().is_some() && !parsed.has('w') {
            // The daemon holds the pool: scrub in the background, like the kernel does.
            imported
                .spa
                .log_history(&history_line("scrub", std::slice::from_ref(name)));
            pool::commit(&mut imported)?;
            start_background_scrub(imported, name)?;
            continue;
        }
        imported.spa.scrub(None).map_err(|e| {
            CmdError::Fail(format!("cannot scrub {name}: {}", pool::spa_error_text(&e)))
        })?;
        imported
            .spa
            .log_history(&history_line("scrub", std::slice::from_ref(name)));
        pool::commit(&mut imported)?;
    }
    Ok(())
}

/// Starts a scrub that runs on in the daemon after this command returns: exclusive access
/// to begin, shared access while it walks (so `zpool status` shows its progress), and
/// exclusive again to record the result.
fn start_background_scrub(mut imported: Imported, name: &str) -> CmdResult {
    use crate::daemon::registry::{self, ScanHandle};
    use std::sync::atomic::{AtomicBool, AtomicU64};
    let registry = registry::get().ok_or_else(|| CmdError::Fail("no daemon".to_string()))?;
    let guid = imported.guid;
    let plan = imported
        .spa
        .scan_prepare(zetta::spa::ScanFunction::Scrub)
        .map_err(|e| {
            CmdError::Fail(format!("cannot scrub {name}: {}", pool::spa_error_text(&e)))
        })?;
    let pool = registry
        .pool(guid)
        .ok_or_else(|| CmdError::Fail(format!("cannot scrub {name}: no such pool")))?;
    let handle = std::sync::Arc::new(ScanHandle {
        cancel: AtomicBool::new(false),
        progress: AtomicU64::new(0),
        stats: plan.stats,
    });
    // Downgrade without letting go, so no writer slips in between commit and walk.
    let shared = match imported.spa {
        pool::SpaHandle::Exclusive(guard) => parking_lot::ArcRwLockWriteGuard::downgrade(guard),
        _ => {
            return Err(CmdError::Fail(format!(
                "cannot scrub {name}: pool is not held"
            )))
        }
    };
    registry.start_scan(guid, handle.clone());
    std::thread::spawn(move || {
        let stats = shared.scan_walk(&plan, Some(&handle.cancel), Some(&handle.progress));
        drop(shared);
        let mut spa = pool.write();
        let _ = spa.scan_finish(stats);
        // scrub_start, the ereports of the walk and scrub_finish, in order.
        crate::zpool::events::pump(Some(&spa), Vec::new());
        registry.end_scan(guid);
    });
    Ok(())
}
