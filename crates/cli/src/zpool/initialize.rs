//! `zpool initialize` and `zpool trim` (OpenZFS `zpool_do_initialize`, `zpool_do_trim`,
//! libzfs `zpool_initialize_impl`, `zpool_trim`), and the daemon's walkers that do the
//! work.
//!
//! A command resolves its device operands (all leaves when none is named), asks the
//! engine to change each leaf's state (`Spa::initialize_command`, `Spa::trim_command`:
//! the kernel's checks, the state in the leaf ZAP), commits, and starts one walker thread
//! per leaf that became ACTIVE. A walker holds only a weak reference to the pool and takes
//! its lock exclusively for one step at a time (`Spa::leaf_activity_step`: one chunk under
//! the allocator's lock), so `zpool status` and writers go on between chunks and an export
//! is never kept waiting; it stops when the leaf's state is no longer ACTIVE (suspend,
//! cancel, complete) or the pool is gone. A pool entering the daemon (import, daemon
//! start) gets walkers for its ACTIVE leaves (`resume`): OpenZFS's `vdev_initialize_restart`.
//! `-w` waits for the named leaves' states to leave ACTIVE.

use super::pool::{self, Imported};
use super::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use crate::daemon::registry::{self, PoolRef};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::OnceLock;
use zetta::spa::vdev_initialize::{
    Activity, ActivityCommand, ActivityError, LeafState, StepOutcome, INITIALIZE_CHUNK_BYTES,
};
use zetta::spa::vdev_trim::TRIM_EXTENT_BYTES_MAX;
use zetta::vdev::Vdev;

/// Walkers running: (pool lock address, activity, leaf guid).
fn walkers() -> &'static Mutex<HashSet<(usize, Activity, u64)>> {
    static WALKERS: OnceLock<Mutex<HashSet<(usize, Activity, u64)>>> = OnceLock::new();
    WALKERS.get_or_init(Default::default)
}

/// The words libzfs prints for a leaf's refusal.
fn error_words(activity: Activity, error: ActivityError) -> &'static str {
    match (activity, error) {
        (_, ActivityError::NoDevice) => "no such device in pool",
        (_, ActivityError::BadDevice) => "invalid device",
        (Activity::Initialize, ActivityError::Busy) => "currently initializing",
        (Activity::Trim, ActivityError::Busy) => "currently trimming",
        (Activity::Initialize, ActivityError::NotActive) => "there is no active initialization",
        (Activity::Trim, ActivityError::NotActive) => "there is no active trim",
        (_, ActivityError::NotSupported) => "trim operations are not supported by this device",
    }
}

/// The leaf a device operand names (path, guid, or short name; `zpool_find_vdev`).
fn find_leaf<'a>(root: &'a Vdev, name: &str) -> Option<&'a Vdev> {
    let leaves = root.leaves();
    leaves
        .iter()
        .find(|l| l.path == name || l.guid.0.to_string() == name)
        .copied()
        .or_else(|| {
            leaves
                .into_iter()
                .find(|l| !name.starts_with('/') && pool::vdev_short_name(&l.path) == name)
        })
}

/// A device operand refused before the pool is asked: (operand, error, libzfs's words).
type Refusal = (String, ActivityError, &'static str);

/// `(operand, guid)` of every named device, or the errors of those that name none
/// (`zpool_translate_vdev_guids`).
fn translate(imported: &Imported, devices: &[String]) -> Result<Vec<(String, u64)>, Vec<Refusal>> {
    let spa = &imported.spa;
    if devices.is_empty() {
        // `zpool_collect_leaves`: every leaf of the normal and log classes.
        return Ok(spa
            .root
            .leaves()
            .iter()
            .map(|l| (l.path.clone(), l.guid.0))
            .collect());
    }
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for device in devices {
        if let Some(leaf) = find_leaf(&spa.root, device) {
            found.push((device.clone(), leaf.guid.0));
        } else if spa
            .cache
            .iter()
            .any(|c| c.path == *device || pool::vdev_short_name(&c.path) == *device)
        {
            errors.push((
                device.clone(),
                ActivityError::BadDevice,
                "device is in use as a cache",
            ));
        } else {
            errors.push((
                device.clone(),
                ActivityError::NoDevice,
                "no such device in pool",
            ));
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// `zpool initialize [-c|-s|-u] [-w] pool [device...]`.
pub fn cmd_initialize(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "csuw")?;
    let mut command = ActivityCommand::Start;
    for (flag, cmd) in [
        ('c', ActivityCommand::Cancel),
        ('s', ActivityCommand::Suspend),
        ('u', ActivityCommand::Uninit),
    ] {
        if parsed.has(flag) {
            if command != ActivityCommand::Start {
                return usage(format!("-{flag} cannot be combined with other options"));
            }
            command = cmd;
        }
    }
    let Some((name, devices)) = parsed.operands.split_first() else {
        return usage("missing pool name argument");
    };
    if parsed.has('w') && command != ActivityCommand::Start {
        return usage("-w cannot be used with -c, -sor -u");
    }
    run(
        ctx,
        Activity::Initialize,
        name,
        devices,
        command,
        0,
        false,
        parsed.has('w'),
    )
}

/// `zpool trim [-dw] [-r rate] [-c|-s] pool [device...]`.
pub fn cmd_trim(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "cdr:sw")?;
    let mut command = ActivityCommand::Start;
    if parsed.has('c') && parsed.has('s') {
        return usage("-s cannot be combined with other options");
    }
    if parsed.has('c') {
        command = ActivityCommand::Cancel;
    }
    if parsed.has('s') {
        command = ActivityCommand::Suspend;
    }
    if command != ActivityCommand::Start {
        if parsed.has('d') {
            return usage("-d cannot be combined with the -c or -s options");
        }
        if parsed.has('r') {
            return usage("-r cannot be combined with the -c or -s options");
        }
    }
    let mut rate = 0;
    if let Some(text) = parsed.values('r').last() {
        rate = match zetta_zprop::zfs_prop::nicestrtonum(text) {
            Ok(value) => value,
            Err(e) => return usage(format!("invalid value for rate: {e}")),
        };
    }
    let Some((name, devices)) = parsed.operands.split_first() else {
        return usage("missing pool name argument");
    };
    if parsed.has('w') && command != ActivityCommand::Start {
        return usage("-w cannot be used with -c or -s");
    }
    run(
        ctx,
        Activity::Trim,
        name,
        devices,
        command,
        rate,
        parsed.has('d'),
        parsed.has('w'),
    )
}

#[allow(clippy::too_many_arguments)]
fn run(
    ctx: &mut Ctx,
    activity: Activity,
    name: &str,
    devices: &[String],
    command: ActivityCommand,
    rate: u64,
    secure: bool,
    wait: bool,
) -> CmdResult {
    let verb = match activity {
        Activity::Initialize => "initialize",
        Activity::Trim => "trim",
    };
    let mut imported = pool::open_pool(name)?;
    if imported.spa.readonly {
        return fail(format!(
            "cannot {verb} '{name}': operation failed: pool is read-only"
        ));
    }
    let fullpool = devices.is_empty();
    let targets = match translate(&imported, devices) {
        Ok(targets) => targets,
        Err(errors) => {
            for (device, _, words) in &errors {
                ctx.warn(&format!("cannot {verb} '{device}': {words}\n"));
            }
            return Err(CmdError::Fail(String::new()));
        }
    };
    let mut started = Vec::new();
    let mut refused = Vec::new();
    for (device, guid) in &targets {
        let outcome = match activity {
            Activity::Initialize => imported.spa.initialize_command(*guid, command),
            Activity::Trim => imported.spa.trim_command(*guid, command, rate, secure),
        }
        .map_err(|e| {
            CmdError::Fail(format!(
                "cannot {verb} '{name}': {}",
                pool::spa_error_text(&e)
            ))
        })?;
        match outcome {
            Ok(true) => started.push(*guid),
            Ok(false) => {}
            Err(error) => refused.push((device.clone(), error)),
        }
    }
    imported.spa.log_history(&super::create::history_line(
        verb,
        &std::iter::once(name.to_string())
            .chain(devices.iter().cloned())
            .collect::<Vec<_>>(),
    ));
    pool::commit(&mut imported)?;
    let guid = imported.guid;
    // A full-pool, non-secure TRIM is quiet about leaves that cannot trim
    // (`check_trim_errs`), unless none can.
    let suppressed = |e: &ActivityError| {
        activity == Activity::Trim && fullpool && !secure && *e == ActivityError::NotSupported
    };
    let mut reported = false;
    for (device, error) in &refused {
        if suppressed(error) {
            continue;
        }
        reported = true;
        ctx.warn(&format!(
            "cannot {verb} '{device}': {}\n",
            error_words(activity, *error)
        ));
    }
    let all_suppressed = !targets.is_empty()
        && refused.len() == targets.len()
        && refused.iter().all(|(_, e)| suppressed(e));
    if all_suppressed {
        ctx.warn("cannot trim: no devices in pool support trim operations\n");
        reported = true;
    }
    match registry::get().and_then(|r| r.pool(guid)) {
        Some(pool_ref) => {
            drop(imported);
            for leaf in &started {
                spawn_walker(&pool_ref, activity, *leaf);
            }
            if wait && !reported {
                wait_for(&pool_ref, activity, &targets);
            }
        }
        None => {
            // No daemon: the walk runs here, to the end.
            for leaf in &started {
                loop {
                    let step = imported
                        .spa
                        .leaf_activity_step(activity, *leaf, chunk_bytes(activity, 0))
                        .map_err(|e| CmdError::Fail(pool::spa_error_text(&e)))?;
                    if !matches!(step, StepOutcome::Progress(_)) {
                        break;
                    }
                }
            }
            pool::commit(&mut imported)?;
        }
    }
    if reported {
        return Err(CmdError::Fail(String::new()));
    }
    Ok(())
}

fn chunk_bytes(activity: Activity, rate: u64) -> u64 {
    match activity {
        Activity::Initialize => INITIALIZE_CHUNK_BYTES,
        Activity::Trim if rate > 0 => rate.clamp(1 << 20, TRIM_EXTENT_BYTES_MAX),
        Activity::Trim => TRIM_EXTENT_BYTES_MAX,
    }
}

/// Waits until none of `targets` is ACTIVE (`lzc_wait_tag` for each).
fn wait_for(pool_ref: &PoolRef, activity: Activity, targets: &[(String, u64)]) {
    loop {
        let busy = {
            let spa = pool_ref.read();
            targets
                .iter()
                .any(|(_, g)| spa.leaf_progress(activity, *g).state == LeafState::Active)
        };
        if !busy {
            return;
        }
        if !crate::daemon::wait_interval(0.1) {
            return;
        }
    }
}

/// Pools whose walkers must stop now (export, destroy), by pool lock address.
fn stopping() -> &'static Mutex<HashSet<usize>> {
    static STOPPING: OnceLock<Mutex<HashSet<usize>>> = OnceLock::new();
    STOPPING.get_or_init(Default::default)
}

/// Stops a pool's walkers and waits for them to let go of it, leaving their leaves ACTIVE
/// in the ZAP (`vdev_initialize_stop_all(vd, VDEV_INITIALIZE_ACTIVE)` at export): the
/// next import resumes them. Called with the pool lock not held.
pub fn stop_walkers(pool_ref: &PoolRef) {
    let address = std::sync::Arc::as_ptr(pool_ref) as usize;
    stopping().lock().insert(address);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while walkers().lock().iter().any(|k| k.0 == address) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stopping().lock().remove(&address);
}

/// Starts walkers for a pool's ACTIVE leaves (a pool entering the daemon).
pub fn resume(pool_ref: &PoolRef) {
    let active = pool_ref.read().leaf_activities_active();
    for (activity, leaf) in active {
        spawn_walker(pool_ref, activity, leaf);
    }
}

/// One leaf's walk in the background (see the module header).
fn spawn_walker(pool_ref: &PoolRef, activity: Activity, leaf: u64) {
    let key = (std::sync::Arc::as_ptr(pool_ref) as usize, activity, leaf);
    if !walkers().lock().insert(key) {
        // Its walker is still running (a suspend undone before it looked): it goes on.
        return;
    }
    let weak = std::sync::Arc::downgrade(pool_ref);
    std::thread::spawn(move || {
        loop {
            if stopping().lock().contains(&key.0) {
                break;
            }
            let Some(pool_ref) = weak.upgrade() else {
                break;
            };
            let mut spa = pool_ref.write();
            if stopping().lock().contains(&key.0) {
                walkers().lock().remove(&key);
                return;
            }
            let rate = spa.leaf_progress(activity, leaf).rate;
            let step = spa.leaf_activity_step(activity, leaf, chunk_bytes(activity, rate));
            let bytes = match step {
                Ok(StepOutcome::Progress(bytes)) => bytes,
                _ => {
                    // Leave the set while still holding the pool: a command that makes the
                    // leaf ACTIVE again then starts a new walker.
                    walkers().lock().remove(&key);
                    drop(spa);
                    return;
                }
            };
            drop(spa);
            drop(pool_ref);
            if activity == Activity::Trim && rate > 0 {
                std::thread::sleep(std::time::Duration::from_secs_f64(
                    bytes as f64 / rate as f64,
                ));
            }
        }
        walkers().lock().remove(&key);
    });
}
