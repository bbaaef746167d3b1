//! The `fusermount3` helpers a killed daemon leaves behind, and why a new daemon must end
//! them before it mounts.
//!
//! Every mount is made with `auto_unmount`: `fusermount3` stays alive beside the daemon
//! and, when the daemon's `/dev/fuse` descriptor closes, checks that the mountpoint still
//! holds a dead mount (`ENOTCONN` on open) and unmounts the *path*. When a daemon is killed
//! and a new one starts at once, the old helper may pass its check on the dead mount and
//! then unmount the new daemon's live mount at the same path: `zfs get mounted` says yes
//! while the kernel has nothing there, and writes land in the parent dataset (issue 21,
//! item 6; `mounts.rs` `fsync_survives_killed_daemon` failed this way under load).
//!
//! So before mounting at a path the daemon ends the orphaned helpers of that path and of
//! every path below it: `fusermount3` processes whose parent is gone (re-parented to a
//! reaper, so not a live daemon's) and whose command line is a Zetta mount
//! (`subtype=zetta`) of exactly that mountpoint. They are killed by PID and waited for;
//! the dead mount itself is then detached by the caller. Helpers of live daemons (their
//! parent is alive and is not a reaper) are never touched.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long to wait for a killed helper to be gone.
const HELPER_EXIT_WAIT: Duration = Duration::from_secs(5);

/// A process's command-line words, its parent's PID and whether it has exited (zombie).
struct ProcessInfo {
    words: Vec<String>,
    parent_pid: i32,
    exited: bool,
}

fn process_info(pid: i32) -> Option<ProcessInfo> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .map(str::to_string)
    };
    let parent_pid = field("PPid:")?.parse().ok()?;
    let exited = field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X'));
    let words = cmdline
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    Some(ProcessInfo {
        words,
        parent_pid,
        exited,
    })
}

/// Whether `pid`'s parent is a process that adopts orphans (init or a subreaper that is
/// not a Zetta daemon): the helper's own daemon is gone.
fn orphaned(info: &ProcessInfo) -> bool {
    if info.parent_pid <= 1 {
        return true;
    }
    match process_info(info.parent_pid) {
        None => true,
        Some(parent) => !parent
            .words
            .first()
            .is_some_and(|w| w.ends_with("zetta") || w.ends_with("zpool") || w.ends_with("zfs")),
    }
}

/// The mountpoint of a Zetta `fusermount3` helper, from its command line
/// (`fusermount3 -o fsname=…,subtype=zetta,…,auto_unmount,… -- MOUNTPOINT`).
fn helper_mountpoint(info: &ProcessInfo) -> Option<&str> {
    let program = info.words.first()?;
    if !program.ends_with("fusermount3") && !program.ends_with("fusermount") {
        return None;
    }
    let is_zetta = info
        .words
        .iter()
        .any(|w| w.split(',').any(|option| option == "subtype=zetta"));
    if !is_zetta {
        return None;
    }
    let separator = info.words.iter().position(|w| w == "--")?;
    info.words.get(separator + 1).map(String::as_str)
}

/// Ends the orphaned Zetta `fusermount3` helpers of `path` and of mountpoints below it,
/// and waits until they are gone. Returns how many it ended.
pub fn end_orphaned_helpers(path: &Path) -> usize {
    let wanted = path.to_string_lossy();
    let below = format!("{}/", wanted.trim_end_matches('/'));
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut victims = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(info) = process_info(pid) else {
            continue;
        };
        if info.exited {
            continue;
        }
        let Some(mountpoint) = helper_mountpoint(&info) else {
            continue;
        };
        if (mountpoint == wanted || mountpoint.starts_with(&below)) && orphaned(&info) {
            victims.push(pid);
        }
    }
    for &pid in &victims {
        // SAFETY: kill(2) with a PID read from /proc; a PID reused meanwhile by another
        // process is the only risk, and the check above was made an instant before.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    let deadline = Instant::now() + HELPER_EXIT_WAIT;
    for &pid in &victims {
        while Instant::now() < deadline && process_info(pid).is_some_and(|info| !info.exited) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    victims.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why: only Zetta's own auto-unmount helpers may be matched, by their exact
    /// mountpoint; any other fusermount3 (another FUSE filesystem) is left alone.
    #[test]
    fn helper_mountpoint_matches_only_zetta_helpers() {
        let info = |words: &[&str]| ProcessInfo {
            words: words.iter().map(|w| w.to_string()).collect(),
            parent_pid: 1,
            exited: false,
        };
        let zetta = info(&[
            "fusermount3",
            "-o",
            "fsname=tank/fs,subtype=zetta,default_permissions,auto_unmount,rw",
            "--",
            "/mnt/tank/fs",
        ]);
        assert_eq!(helper_mountpoint(&zetta), Some("/mnt/tank/fs"));
        let other = info(&["fusermount3", "-o", "fsname=sshfs,auto_unmount", "--", "/x"]);
        assert_eq!(helper_mountpoint(&other), None);
        let not_helper = info(&["sleep", "subtype=zetta", "--", "/mnt/tank"]);
        assert_eq!(helper_mountpoint(&not_helper), None);
    }
}
