//! `zpool wait [-Hp] [-T d|u] [-t <activity>[,...]] <pool> [interval]` (OpenZFS
//! `zpool_do_wait`): returns once none of the chosen activities is in progress on the
//! pool; with an interval, prints the bytes left of each every interval meanwhile.
//!
//! Activities, as OpenZFS names them: `scrub` runs in the daemon's background (the scan
//! registry says how far it is); `resilver` and `replace` run inside the command that
//! attached or replaced the device, under the pool's exclusive lock, so a waiter that
//! can read the pool sees them done — unless a leaf still misses data (a resilver left
//! for later). Zetta has no checkpoints (`discard`), no asynchronous `free` (the
//! `freeing` property is always 0), no `initialize` or `trim` and no asynchronous device
//! `remove` or `raidz_expand`: those are never in progress, so waiting for them ends at
//! once, as OpenZFS's does for an activity that is not running. An unknown name is
//! refused with OpenZFS's "invalid activity".
//!
//! Theory: the waiter polls (OpenZFS blocks in the kernel on `lzc_wait`); between polls it
//! holds no pool lock, and it ends when its client goes away (`daemon::wait_interval`).

use super::{getopt, interval_count, timestamp_format, timestamp_line, usage, CmdResult, Ctx};
use std::sync::atomic::Ordering;

/// OpenZFS's activities, in its column order (`zpool_wait_activity_t`).
const ACTIVITIES: [&str; 9] = [
    "discard",
    "free",
    "initialize",
    "replace",
    "remove",
    "resilver",
    "scrub",
    "trim",
    "raidz_expand",
];
const HEADERS: [&str; 9] = [
    "DISCARD",
    "FREE",
    "INITIALIZE",
    "REPLACE",
    "REMOVE",
    "RESILVER",
    "SCRUB",
    "TRIM",
    "RAIDZ_EXPAND",
];
const REPLACE: usize = 3;
const RESILVER: usize = 5;
const SCRUB: usize = 6;

/// How often the waiter looks when no interval is given.
const POLL_SECONDS: f64 = 0.2;

/// Bytes left of each activity on pool `name`; `None` when the pool is gone.
fn remaining(name: &str) -> Option<[u64; 9]> {
    let mut left = [0u64; 9];
    let imported = super::pool::open_pool_shared(name).ok()?;
    if let Some(scan) = crate::daemon::registry::get().and_then(|r| r.scan(imported.guid)) {
        let examined = scan.progress.load(Ordering::Relaxed);
        left[SCRUB] = scan.stats.to_examine_bytes.saturating_sub(examined).max(1);
    }
    // `vs_initialize_bytes_est - _done` / `vs_trim_bytes_*` of the leaves still ACTIVE.
    for (index, activity) in [
        (2, zetta::spa::vdev_initialize::Activity::Initialize),
        (7, zetta::spa::vdev_initialize::Activity::Trim),
    ] {
        for leaf in imported.spa.root.leaves() {
            let state = imported.spa.leaf_progress(activity, leaf.guid.0).state;
            if state == zetta::spa::vdev_initialize::LeafState::Active {
                let (done, est) = imported.spa.leaf_activity_bytes(activity, leaf.guid.0);
                left[index] += est.saturating_sub(done).max(1);
            }
        }
    }
    if imported.spa.needs_resilver() {
        let (_, allocated, _) = imported.spa.space();
        left[RESILVER] = allocated.max(1);
        if has_replacing(&imported.spa.root) {
            left[REPLACE] = left[RESILVER];
        }
    }
    Some(left)
}

fn has_replacing(vdev: &zetta::vdev::Vdev) -> bool {
    matches!(vdev.kind, zetta::vdev::VdevKind::Replacing) || vdev.children.iter().any(has_replacing)
}

/// `print_wait_status_row`.
fn status_row(
    enabled: &[bool; 9],
    left: &[u64; 9],
    scripted: bool,
    exact: bool,
    header: bool,
    timestamp: Option<char>,
) -> String {
    let widths: Vec<usize> = HEADERS.iter().map(|h| h.len().max(6) + 2).collect();
    let mut text = timestamp_line(timestamp);
    if !scripted && header {
        for i in 0..9 {
            if enabled[i] {
                text.push_str(&format!("{:>width$}", HEADERS[i], width = widths[i]));
            }
        }
        text.push('\n');
    }
    for i in 0..9 {
        if !enabled[i] {
            continue;
        }
        let value = if exact {
            left[i].to_string()
        } else {
            zetta_zutil::nicenum::nicenum(left[i])
        };
        if scripted {
            if i != 0 {
                text.push('\t');
            }
            text.push_str(&value);
        } else {
            text.push_str(&format!(" {:>width$}", value, width = widths[i] - 1));
        }
    }
    text.push('\n');
    text
}

pub fn cmd_wait(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "HpT:t:")?;
    let timestamp = timestamp_format(&parsed)?;
    let mut enabled = [true; 9];
    for list in parsed.values('t') {
        enabled = [false; 9];
        for word in list.split(',') {
            match ACTIVITIES.iter().position(|a| *a == word) {
                Some(i) => enabled[i] = true,
                None => return usage(format!("invalid activity '{word}'")),
            }
        }
    }
    let mut operands = parsed.operands.clone();
    let (interval, count) = interval_count(&mut operands)?;
    if count.is_some() {
        return usage("too many arguments");
    }
    let name = match operands.as_slice() {
        [] => return usage("missing 'pool' argument"),
        [name] => name.clone(),
        _ => return usage("too many arguments"),
    };
    // zpool_open: the pool must exist.
    drop(super::pool::open_pool_shared(&name)?);
    let (scripted, exact) = (parsed.has('H'), parsed.has('p'));
    let mut row = 0usize;
    let mut next_row = std::time::Instant::now();
    loop {
        let Some(left) = remaining(&name) else {
            // The pool went away (exported, destroyed): nothing left to wait for.
            return Ok(());
        };
        let busy = (0..9).any(|i| enabled[i] && left[i] > 0);
        // Rows come every interval while something runs (the first one at once); the
        // wait ends as soon as nothing does, between rows too.
        if let Some(seconds) = interval {
            if row == 0 || (busy && std::time::Instant::now() >= next_row) {
                let text = status_row(&enabled, &left, scripted, exact, row == 0, timestamp);
                ctx.print(&text);
                let _ = ctx.out.flush();
                row += 1;
                next_row = std::time::Instant::now()
                    + std::time::Duration::try_from_secs_f64(seconds)
                        .unwrap_or(std::time::Duration::from_secs(1));
            }
        }
        if !busy {
            return Ok(());
        }
        let until_row = next_row
            .saturating_duration_since(std::time::Instant::now())
            .as_secs_f64();
        let pause = match interval {
            Some(_) => until_row.clamp(0.01, POLL_SECONDS),
            None => POLL_SECONDS,
        };
        if !crate::daemon::wait_interval(pause) {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as print_wait_status_row prints them: right-aligned columns of width
    /// max(len, 6) + 2, a tab before each but the first activity's with -H.
    #[test]
    fn status_rows_match_openzfs() {
        let mut enabled = [false; 9];
        enabled[SCRUB] = true;
        enabled[RESILVER] = true;
        let mut left = [0u64; 9];
        left[SCRUB] = 3 << 20;
        assert_eq!(
            status_row(&enabled, &left, false, false, true, None),
            "  RESILVER   SCRUB\n         0      3M\n"
        );
        assert_eq!(
            status_row(&enabled, &left, true, true, true, None),
            "\t0\t3145728\n"
        );
    }
}
