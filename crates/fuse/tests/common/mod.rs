//! Helpers the FUSE integration tests share: temp dirs, the kernel's mount table, waiting
//! for a condition on a loaded machine, and a mount that is unmounted (and waited for) when
//! dropped.

#![allow(dead_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zetta_fuse::Mounted;

/// How long a mount, an unmount or a blocked-looking request may take on a loaded machine.
pub const WAIT: Duration = Duration::from_secs(120);

/// A fresh directory under the temp dir, named after the test binary's `prefix` and `what`.
pub fn temp_dir(prefix: &str, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{prefix}-{}-{n}-{what}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn is_mounted(path: &Path) -> bool {
    let want = path.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(want.as_str()))
}

pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A FUSE mount, unmounted as the daemon unmounts (umount2, a busy mount retried while the
/// kernel releases the test's last handles, then the session's threads end) on drop; never
/// a second panic while a failed test unwinds.
pub struct Mount {
    pub at: PathBuf,
    pub mounted: Option<Mounted>,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let c_path = CString::new(self.at.as_os_str().as_bytes()).unwrap();
        for _ in 0..100 {
            // SAFETY: a valid C string; umount2 keeps no pointer.
            if unsafe { libc::umount2(c_path.as_ptr(), 0) } == 0 || !is_mounted(&self.at) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(self.mounted.take());
        let deadline = Instant::now() + WAIT;
        while is_mounted(&self.at) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if !std::thread::panicking() {
            assert!(
                !is_mounted(&self.at),
                "{}: still mounted",
                self.at.display()
            );
            let _ = std::fs::remove_dir(&self.at);
        }
    }
}
