//! The daemon's tunables (`zetta::tunables`): where an admin sets and reads them, as
//! OpenZFS's are set in `/etc/modprobe.d/zfs.conf` and read and written through
//! `/sys/module/zfs/parameters/NAME`.
//!
//! - At start the daemon reads `/etc/zetta/zetta.conf` (`ZETTA_CONF` names another file):
//!   `NAME=VALUE` lines, or modprobe's `options zfs NAME=VALUE ...`; `#` starts a comment.
//!   A line that names no tunable or a value out of range is logged and skipped: the
//!   daemon still starts, with that tunable at its default. `ZETTA_METASLAB_ALIQUOT`, the
//!   older way to set `metaslab_aliquot`, still works and is applied after the file.
//! - At run time `zetta tunable [NAME[=VALUE]]...` lists, reads or sets them in the daemon;
//!   a value is applied before the command returns (the ARC shrinks at once).
//! - Every value is mirrored in `$ZETTA_RUN_DIR/parameters/NAME` (one number and a newline,
//!   as sysfs shows it), rewritten at start and after each change; tools that read
//!   `/sys/module/zfs/parameters` read these files the same way.
//!
//! The ARC reaper (OpenZFS `arc_reap_zthr` with Linux's shrinker) runs once a second: when
//! the host's `MemAvailable` falls under `arc_sys_free` the ARC's target `c` drops by the
//! shortfall (never under `arc_c_min`), and it returns to `arc_c_max` once memory is back.

use super::log::{self, Level};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use zetta::tunables::{self, Tunable};

/// The configuration file the daemon reads at start.
pub fn conf_path() -> PathBuf {
    std::env::var_os("ZETTA_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/zetta/zetta.conf"))
}

/// Reads the configuration file, applies the environment's `ZETTA_METASLAB_ALIQUOT`, and
/// makes the tunables govern this process (`tunables::activate`). Problems are logged.
pub fn load_at_start(err: &mut dyn Write) {
    let path = conf_path();
    if let Ok(text) = std::fs::read_to_string(&path) {
        for (number, line) in text.lines().enumerate() {
            for (name, value) in conf_assignments(line) {
                if let Err(e) = tunables::set(name, value) {
                    log::write(
                        err,
                        Level::Error,
                        &format!(
                            "zetta daemon: '{}' line {}: {e}",
                            path.display(),
                            number + 1
                        ),
                    );
                }
            }
        }
    }
    if let Ok(aliquot) = std::env::var("ZETTA_METASLAB_ALIQUOT") {
        if let Err(e) = tunables::set("metaslab_aliquot", &aliquot) {
            log::write(
                err,
                Level::Error,
                &format!("zetta daemon: ZETTA_METASLAB_ALIQUOT: {e}"),
            );
        }
    }
    tunables::activate();
}

/// The `NAME=VALUE` pairs of one configuration line (modprobe's `options zfs` form too).
fn conf_assignments(line: &str) -> Vec<(&str, &str)> {
    let line = line.split('#').next().unwrap_or("").trim();
    let words: Vec<&str> = line.split_whitespace().collect();
    let assignments = match words.as_slice() {
        ["options", "zfs", rest @ ..] => rest.to_vec(),
        [] => Vec::new(),
        _ => vec![line],
    };
    assignments
        .into_iter()
        .map(|word| match word.split_once('=') {
            Some((name, value)) => (name.trim(), value.trim()),
            None => (word.trim(), ""),
        })
        .collect()
}

/// Writes `$ZETTA_RUN_DIR/parameters/NAME` for every tunable.
pub fn publish_parameters() {
    let dir = super::run_dir().join("parameters");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    for tunable in tunables::TUNABLES.iter() {
        let _ = std::fs::write(dir.join(tunable.name), format!("{}\n", tunable.get()));
    }
}

/// Re-bounds the ARC after a change of its tunables or of the host's free memory.
pub fn reap_arc() {
    let Some(stats) = zetta::zio::arc::process_wide_stats() else {
        return;
    };
    let target = tunables::arc_target(
        mem_available_bytes().unwrap_or(u64::MAX),
        tunables::arc_sys_free(),
        stats.size_bytes,
        tunables::arc_c_min(),
        tunables::arc_c_max(),
    );
    if target != stats.size_bytes_max {
        zetta::zio::arc::resize_process_wide(target);
    }
}

/// `MemAvailable` of /proc/meminfo in bytes.
fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Starts the ARC reaper thread (once, at daemon start).
pub fn spawn_arc_reaper() {
    let _ = std::thread::Builder::new()
        .name("arc_reap".to_string())
        .spawn(|| loop {
            reap_arc();
            std::thread::sleep(Duration::from_secs(1));
        });
}

/// `zetta tunable [NAME[=VALUE]]...`: with no operand every tunable as `NAME=VALUE`; a
/// NAME prints its value, NAME=VALUE sets it. Runs in the daemon.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if args.iter().any(|a| a.starts_with('-')) {
        let _ = writeln!(err, "usage: zetta tunable [NAME[=VALUE]]...");
        return 2;
    }
    if args.is_empty() {
        for tunable in tunables::TUNABLES.iter() {
            let _ = writeln!(out, "{}={}", tunable.name, tunable.get());
        }
        return 0;
    }
    let mut code = 0;
    let mut changed = false;
    for arg in args {
        let result = match arg.split_once('=') {
            Some((name, value)) => tunables::set(name, value).inspect(|_| changed = true),
            None => tunables::find(arg).inspect(|t: &&Tunable| {
                let _ = writeln!(out, "{}", t.get());
            }),
        };
        if let Err(e) = result {
            let _ = writeln!(err, "zetta tunable: {e}");
            code = 1;
        }
    }
    if changed {
        reap_arc();
        publish_parameters();
    }
    code
}

#[cfg(test)]
mod tests {
    use super::conf_assignments;

    // Why: admins move OpenZFS settings over as they are, from /etc/modprobe.d/zfs.conf
    // (`options zfs a=1 b=2`), or write one `NAME=VALUE` per line; comments and blank
    // lines are ignored.
    #[test]
    fn conf_lines_in_both_forms() {
        assert_eq!(
            conf_assignments("options zfs zfs_arc_max=1073741824 zfs_txg_timeout=10 # big"),
            vec![("zfs_arc_max", "1073741824"), ("zfs_txg_timeout", "10")]
        );
        assert_eq!(
            conf_assignments(" zfs_arc_min = 0x4000000"),
            vec![("zfs_arc_min", "0x4000000")]
        );
        assert!(conf_assignments("# only a comment").is_empty());
        assert!(conf_assignments("").is_empty());
        assert_eq!(conf_assignments("zfs_arc_max"), vec![("zfs_arc_max", "")]);
    }
}
