//! The daemon's ZED (OpenZFS `cmd/zed`): each event `zpool events` records is handed to
//! the zedlets of the zedlet directory (`$ZETTA_ZED_DIR`, default `/etc/zetta/zed.d`)
//! whose name starts with `all-`, the event's subclass (`scrub_finish-notify.sh`) or its
//! class, followed by `-`, in name order, as ZED selects them. A zedlet runs with ZED's
//! environment: every nvpair as `ZEVENT_<NAME>` (guids as `0x%016X`, strings bare, numbers
//! in decimal, `pool_state` and `vdev_state` shadowed by `_STR` names), `ZEVENT_SUBCLASS`,
//! `ZEVENT_TIME_SECS`/`_NSECS`/`_STRING`, `ZED_PID`, `ZED_ZEDLET_DIR`, a fixed `PATH`, and
//! `ZPOOL`/`ZFS`/`ZINJECT` naming this daemon's own commands (links in `<run dir>/bin`,
//! with the daemon's `ZETTA_RUN_DIR`/`ZETTA_CACHE_FILE` when set, so they reach it);
//! nothing else of the daemon's environment. Zetta's stock zedlets (`contrib/zed.d`,
//! installed by `zetta install-service`) notify through syslog and mail as ZED's do.
//! Before its zedlets, each event goes to the diagnosis (`zfs_diagnosis`: checksum and
//! I/O errors past N in T degrade or fault the leaf).
//!
//! Theory: posting an event never waits for a zedlet: events go to one worker thread
//! through a bounded queue (`QUEUE_MAX`; past it they are dropped and logged, as ZED
//! reports "Missed N events"), which runs the zedlets of one event after another. Only
//! regular executable files owned by root or the daemon's user and writable by nobody
//! else run (a zedlet runs as the daemon, root). A zedlet that runs longer than
//! `ZEDLET_TIMEOUT` is killed, so one stuck script cannot stop the others for good.

use crate::daemon::log::{self, Level};
use crate::zpool::events::{Event, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Events waiting for the zedlets, at most.
const QUEUE_MAX: usize = 256;
/// How long one zedlet may run.
const ZEDLET_TIMEOUT: Duration = Duration::from_secs(60);

/// The zedlet directory.
pub fn zedlet_dir() -> std::path::PathBuf {
    std::env::var_os("ZETTA_ZED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("/etc/zetta/zed.d"))
}

static QUEUE: OnceLock<SyncSender<Event>> = OnceLock::new();

/// Hands posted events to the zedlets (in the daemon only).
pub fn notify(events: &[Event]) {
    if crate::daemon::registry::get().is_none() {
        return;
    }
    let sender = QUEUE.get_or_init(|| {
        let (sender, receiver) = sync_channel::<Event>(QUEUE_MAX);
        std::thread::spawn(move || {
            // ZED's diagnosis agents see each event before its zedlets run.
            let mut diagnosis = super::zfs_diagnosis::Diagnosis::default();
            for event in receiver {
                if let Some(verdict) = diagnosis.observe(&event) {
                    super::zfs_diagnosis::retire(&verdict);
                }
                run_zedlets(&event);
            }
        });
        sender
    });
    for event in events {
        if let Err(TrySendError::Full(event)) = sender.try_send(event.clone()) {
            log::log(
                Level::Warn,
                &format!("zed: missed event {} (queue full)", event.class()),
            );
        }
    }
}

/// `_zed_event_add_var`'s name: upper case, anything but letters and digits as `_`.
fn var_name(prefix: &str, name: &str) -> String {
    let mut text = String::from(prefix);
    for c in name.chars() {
        text.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        });
    }
    text
}

/// `_zed_event_value_is_hex`.
fn is_hex(name: &str) -> bool {
    name.ends_with("_guid") || name.ends_with("_guids")
}

/// ZED's environment for `event` (see the module comment).
pub fn environment(event: &Event, dir: &std::path::Path) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for (name, value) in &event.fields {
        let text = match value {
            Value::U8(v) => v.to_string(),
            Value::I32(v) => v.to_string(),
            Value::U32(v) => v.to_string(),
            Value::I64(v) => v.to_string(),
            Value::U64(v) if is_hex(name) => format!("0x{v:016X}"),
            Value::U64(v) => v.to_string(),
            Value::Str(s) => s.clone(),
            Value::I64Array(a) => a.iter().map(|v| format!("{v} ")).collect(),
            Value::U64Array(a) if is_hex(name) => {
                a.iter().map(|v| format!("0x{v:016X} ")).collect()
            }
            Value::U64Array(a) => a.iter().map(|v| format!("{v} ")).collect(),
            Value::StrArray(a) => a.iter().map(|s| format!("{s} ")).collect(),
            // ZED passes no nested lists (the detector).
            Value::List(_) => continue,
        };
        vars.push((var_name("ZEVENT_", name), text.trim_end().to_string()));
        if let Value::U64(v) = value {
            if name == "vdev_state" || name == "vdev_laststate" {
                // `zpool_state_to_name(state, VDEV_AUX_NONE)`: what statechange-notify.sh
                // tests.
                vars.push((
                    var_name("ZEVENT_", &format!("{name}_str")),
                    crate::zpool::events::vdev_state_name(*v).to_string(),
                ));
            } else if name == "pool_state" {
                let state = match v {
                    0 => "ACTIVE",
                    1 => "EXPORTED",
                    2 => "DESTROYED",
                    _ => "UNKNOWN",
                };
                vars.push(("ZEVENT_POOL_STATE_STR".to_string(), state.to_string()));
            }
        }
    }
    vars.push((
        "PATH".to_string(),
        "/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
    ));
    // ZED's tool variables: the commands of this daemon's build, whatever PATH finds.
    let tools = tool_dir();
    for (var, name) in [("ZPOOL", "zpool"), ("ZFS", "zfs"), ("ZINJECT", "zinject")] {
        vars.push((
            var.to_string(),
            tools.join(name).to_string_lossy().into_owned(),
        ));
    }
    // ... and the settings that make them reach this daemon (not another one).
    for var in ["ZETTA_RUN_DIR", "ZETTA_CACHE_FILE"] {
        if let Some(value) = std::env::var_os(var) {
            vars.push((var.to_string(), value.to_string_lossy().into_owned()));
        }
    }
    vars.push(("ZED_PID".to_string(), std::process::id().to_string()));
    vars.push((
        "ZED_ZEDLET_DIR".to_string(),
        dir.to_string_lossy().into_owned(),
    ));
    let class = event.class();
    let subclass = class.rsplit('.').next().unwrap_or(class);
    vars.push(("ZEVENT_SUBCLASS".to_string(), subclass.to_string()));
    let (secs, nanos) = event.time();
    vars.push(("ZEVENT_TIME_SECS".to_string(), secs.to_string()));
    vars.push(("ZEVENT_TIME_NSECS".to_string(), nanos.to_string()));
    vars.push(("ZEVENT_TIME_STRING".to_string(), time_string(secs)));
    vars
}

/// strftime "%Y-%m-%d %H:%M:%S%z" in local time.
fn time_string(secs: i64) -> String {
    let t = secs as libc::time_t;
    let mut buffer = [0u8; 64];
    // SAFETY: `tm` is filled by localtime_r before strftime reads it; strftime writes at
    // most buffer.len() bytes.
    let written = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        libc::strftime(
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            c"%Y-%m-%d %H:%M:%S%z".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buffer[..written]).into_owned()
}

/// The zedlets for `event`, in name order.
fn zedlets(dir: &std::path::Path, event: &Event) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let class = event.class();
    let subclass = class.rsplit('.').next().unwrap_or(class);
    let mut found: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            ["all", subclass, class].iter().any(|prefix| {
                name.strip_prefix(prefix)
                    .is_some_and(|r| r.starts_with('-'))
            })
        })
        .filter(|entry| {
            // No symbolic link is followed out of the directory's trust.
            entry.metadata().is_ok_and(|meta| {
                meta.is_file()
                    && meta.permissions().mode() & 0o111 != 0
                    && meta.permissions().mode() & 0o022 == 0
                    && super::trusted_uid(meta.uid())
            })
        })
        .map(|entry| entry.path())
        .collect();
    found.sort();
    found
}

/// Where `$ZPOOL`, `$ZFS` and `$ZINJECT` of a zedlet point: links to this executable (which
/// acts as the command it is started as) in the run directory, which only its owner writes.
fn tool_dir() -> std::path::PathBuf {
    super::run_dir().join("bin")
}

/// Makes (or renews) the links of `tool_dir` to this executable.
fn make_tool_links() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let dir = tool_dir();
    let _ = std::fs::create_dir_all(&dir);
    for name in ["zpool", "zfs", "zinject"] {
        let link = dir.join(name);
        if std::fs::read_link(&link).is_ok_and(|target| target == exe) {
            continue;
        }
        let _ = std::fs::remove_file(&link);
        if let Err(e) = std::os::unix::fs::symlink(&exe, &link) {
            log::log(
                Level::Warn,
                &format!(
                    "zed: cannot link '{}': {}",
                    link.display(),
                    crate::zpool::pool::strerror(&e)
                ),
            );
        }
    }
}

fn run_zedlets(event: &Event) {
    let dir = zedlet_dir();
    let list = zedlets(&dir, event);
    if list.is_empty() {
        return;
    }
    make_tool_links();
    let vars = environment(event, &dir);
    for zedlet in list {
        let mut command = std::process::Command::new(&zedlet);
        command
            .env_clear()
            .envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                log::log(
                    Level::Warn,
                    &format!(
                        "zed: cannot run '{}': {}",
                        zedlet.display(),
                        crate::zpool::pool::strerror(&e)
                    ),
                );
                continue;
            }
        };
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    if !status.success() {
                        log::log(
                            Level::Warn,
                            &format!(
                                "zed: '{}' for {} exited with {status}",
                                zedlet.display(),
                                event.class()
                            ),
                        );
                    }
                    break;
                }
                Ok(None) if start.elapsed() < ZEDLET_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    log::log(
                        Level::Warn,
                        &format!(
                            "zed: '{}' killed after {ZEDLET_TIMEOUT:?}",
                            zedlet.display()
                        ),
                    );
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZED's variable names and value formats.
    #[test]
    fn environment_is_zeds() {
        let event = Event {
            fields: vec![
                (
                    "class".into(),
                    Value::Str("sysevent.fs.zfs.scrub_finish".into()),
                ),
                ("pool".into(), Value::Str("tank".into())),
                ("pool_guid".into(), Value::U64(0xab)),
                ("pool_state".into(), Value::U64(0)),
                ("time".into(), Value::I64Array(vec![5, 6])),
                ("eid".into(), Value::U64(9)),
            ],
        };
        let vars = environment(&event, std::path::Path::new("/z"));
        let get = |k: &str| {
            vars.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or("<none>")
        };
        assert_eq!(get("ZEVENT_CLASS"), "sysevent.fs.zfs.scrub_finish");
        assert_eq!(get("ZEVENT_SUBCLASS"), "scrub_finish");
        assert_eq!(get("ZEVENT_POOL_GUID"), "0x00000000000000AB");
        assert_eq!(get("ZEVENT_POOL_STATE_STR"), "ACTIVE");
        assert_eq!(get("ZEVENT_EID"), "9");
        assert_eq!(get("ZEVENT_TIME"), "5 6");
        assert_eq!(get("ZEVENT_TIME_SECS"), "5");
        assert_eq!(get("ZED_ZEDLET_DIR"), "/z");
    }
}
