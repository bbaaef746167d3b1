//! The mount lab of the FUSE tests (`mounts.rs`, `mounts_space.rs`, `trust_mounts.rs`,
//! `trust_space.rs`): the shared CLI lab with a pool `tank` on a sparse file, mounted
//! through the kernel under `<lab>/mnt`, and optionally one child filesystem below it.
//! Root and `/dev/fuse` required.

use super::Lab;
use std::process::Command;
use std::time::Duration;

pub struct MountLab {
    pub inner: Lab,
    /// The mountpoint of the child filesystem, if the lab created one.
    child_mnt: Option<String>,
}

impl MountLab {
    /// A pool `tank` on a 1 GiB sparse file and the filesystem `child` (e.g. `tank/fs`).
    pub fn new(child: &str) -> MountLab {
        MountLab::with(1 << 30, &[child])
    }

    /// A pool `tank` on a sparse file of `size` bytes, then `zfs create <create...>` unless
    /// `create` is empty (its last word is the child's name).
    pub fn with(size: u64, create: &[&str]) -> MountLab {
        let inner = Lab::new();
        let disk = inner.disk("disk", size);
        let child_mnt = create.last().map(|name| {
            let below = name.strip_prefix("tank/").unwrap_or(name);
            inner.path(&format!("mnt/{below}"))
        });
        let lab = MountLab { inner, child_mnt };
        let mnt = lab.mnt("");
        lab.ok("zpool", &["create", "-m", &mnt, "tank", &disk]);
        if !create.is_empty() {
            let mut args = vec!["create"];
            args.extend_from_slice(create);
            lab.ok("zfs", &args);
        }
        lab
    }

    /// `<lab>/mnt`, or the path `rest` below it.
    pub fn mnt(&self, rest: &str) -> String {
        let mut path = self.inner.path("mnt");
        if !rest.is_empty() {
            path.push('/');
            path.push_str(rest);
        }
        path
    }

    /// Runs `front` (`zpool`, `zfs`, `sh`...) of this lab: (exit code, stdout, stderr).
    pub fn run(&self, front: &str, args: &[&str]) -> (i32, String, String) {
        let mut command = self.inner.command(front);
        command.args(args);
        let out = self.inner.run(command);
        (out.code, out.stdout, out.stderr)
    }

    /// Runs a command that must succeed and returns its stdout.
    pub fn ok(&self, front: &str, args: &[&str]) -> String {
        let (code, stdout, stderr) = self.run(front, args);
        assert_eq!(code, 0, "{front} {args:?}: {stderr}");
        stdout
    }

    /// The daemon's process id, from its pid file.
    pub fn daemon_pid(&self) -> i32 {
        let text = std::fs::read_to_string(self.inner.dir.join("run").join("zetta.pid"))
            .expect("the daemon's pid file");
        text.trim().parse().expect("a pid")
    }
}

impl Drop for MountLab {
    fn drop(&mut self) {
        self.inner.stop_daemon();
        // Mounts go with the daemon (fusermount3's auto-unmount); make sure before the
        // shared lab deletes the directory.
        for _ in 0..100 {
            if !mounted(&self.mnt("")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        for path in self.child_mnt.iter().cloned().chain([self.mnt("")]) {
            if mounted(&path) {
                let _ = Command::new("umount").args(["-l", &path]).status();
            }
        }
    }
}

/// Whether something is mounted at `path` (per /proc/self/mounts).
pub fn mounted(path: &str) -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(path))
}
