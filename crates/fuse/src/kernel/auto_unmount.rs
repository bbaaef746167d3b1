//! Unmounting a killed daemon's mounts (what fusermount3's `auto_unmount` helper does for
//! fuser's mounts, one helper per mount; here one for the whole daemon).
//!
//! When the daemon dies without unmounting (SIGKILL, a crash), the kernel aborts its FUSE
//! connections and every mount it served answers ENOTCONN until someone detaches it. The
//! daemon starts one helper process (its own binary, `HELPER_ARG`, in its own process
//! group, cwd `/`, holding no descriptor of the daemon's but the pipe on its stdin) and
//! tells it, one line each, the connection (`major:minor` of the mount's device, as
//! /proc/self/mountinfo lists it) of every mount it makes (`+0:52`) and ends (`-0:52`).
//! The pipe's end of file is the daemon's death: the helper then detaches (MNT_DETACH)
//! every `fuse.zetta` mount whose connection is still on its list, deepest first, and exits.
//! Identifying mounts by connection, not by path, never touches another daemon's mount at
//! the same path.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The argument that makes the daemon's binary the helper (`zetta __fuse-auto-unmount`).
pub const HELPER_ARG: &str = "__fuse-auto-unmount";

static HELPER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Names the binary that runs the helper (the daemon's own); without it no helper runs
/// (tests of this crate, whose binary is not the daemon).
pub fn set_helper_exe(exe: PathBuf) {
    let _ = HELPER_EXE.set(exe);
}

/// The running helper: the write end of its pipe.
pub(crate) struct Helper {
    stdin: parking_lot::Mutex<std::process::ChildStdin>,
}

impl Helper {
    /// Starts the helper, if a binary was named and it starts.
    pub(crate) fn start() -> Option<Helper> {
        use std::os::unix::process::CommandExt;
        let exe = HELPER_EXE.get()?;
        let child = std::process::Command::new(exe)
            .arg(HELPER_ARG)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()
            .ok()?;
        // Not waited for: it outlives the daemon by design.
        let stdin = child.stdin?;
        Some(Helper {
            stdin: parking_lot::Mutex::new(stdin),
        })
    }

    pub(crate) fn watch(&self, connection: &str) {
        let _ = writeln!(self.stdin.lock(), "+{connection}");
    }

    pub(crate) fn unwatch(&self, connection: &str) {
        let _ = writeln!(self.stdin.lock(), "-{connection}");
    }
}

/// `\040`-style octal escapes of /proc/self/mountinfo undone.
fn unescape(field: &str) -> Vec<u8> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && field.is_char_boundary(i + 4) {
            let digits = &field[i + 1..i + 4];
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// (connection, mountpoint) of every `fuse.zetta` mount in /proc/self/mountinfo.
pub(crate) fn zetta_mounts() -> Vec<(String, PathBuf)> {
    use std::os::unix::ffi::OsStringExt;
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| {
            let (head, tail) = line.split_once(" - ")?;
            let fields: Vec<&str> = head.split(' ').collect();
            let fstype = tail.split(' ').next()?;
            if fstype != "fuse.zetta" || fields.len() < 5 {
                return None;
            }
            let path = std::ffi::OsString::from_vec(unescape(fields[4]));
            Some((fields[2].to_string(), PathBuf::from(path)))
        })
        .collect()
}

/// The connection of the `fuse.zetta` mount at `mountpoint` (the newest, if stacked).
pub(crate) fn connection_of(mountpoint: &Path) -> Option<String> {
    zetta_mounts()
        .into_iter()
        .rev()
        .find(|(_, path)| path == mountpoint)
        .map(|(conn, _)| conn)
}

/// The helper's life: collect connections until the daemon's end of the pipe closes, then
/// detach what is left of them. Returns the exit code.
pub fn helper_main() -> i32 {
    let mut live: HashSet<String> = HashSet::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Some(conn) = line.strip_prefix('+') {
            live.insert(conn.to_string());
        } else if let Some(conn) = line.strip_prefix('-') {
            live.remove(conn);
        }
    }
    if live.is_empty() {
        return 0;
    }
    let mut victims: Vec<PathBuf> = zetta_mounts()
        .into_iter()
        .filter(|(conn, _)| live.contains(conn))
        .map(|(_, path)| path)
        .collect();
    victims.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    for path in victims {
        let _ = super::fuse_dev::unmount(&path, true);
    }
    0
}

#[cfg(test)]
mod tests {
    /// Why: mountpoints with spaces are listed escaped; the helper must find them.
    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(super::unescape("/a\\040b\\011c"), b"/a b\tc");
        assert_eq!(super::unescape("/plain"), b"/plain");
        assert_eq!(super::unescape("/end\\04"), b"/end\\04");
    }
}
