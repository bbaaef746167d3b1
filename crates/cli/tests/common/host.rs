//! A "host" for replication tests: the shared lab (its own cache file, daemon, `zfs` and
//! `zpool` links) with pools mounted under `<lab>/mnt/<pool>`, the real programs a ZFS admin
//! runs beside them (sanoid, syncoid, tar, rsync) with the lab's `zfs` first in PATH, and
//! engine access to a pool while the daemon is stopped (snapshots with chosen creation
//! times, as if taken hours ago).

use super::{Lab, Output, DEVICES};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Debian's syncoid (the `sanoid` package; scripts/setup.sh installs it).
pub const SYNCOID: &str = "/usr/sbin/syncoid";

pub struct Host {
    pub lab: Lab,
}

impl Host {
    pub fn new() -> Host {
        Host { lab: Lab::new() }
    }

    /// `<lab>/mnt/<rest>`.
    pub fn mnt(&self, rest: &str) -> String {
        format!("{}/{rest}", self.lab.path("mnt"))
    }

    /// A pool on one sparse file (or a mirror of two), mounted under `mnt/<pool>`.
    pub fn pool(&self, name: &str, size_bytes: u64, mirror: bool) -> Vec<String> {
        let mut disks = vec![self.lab.disk(&format!("{name}.d0"), size_bytes)];
        if mirror {
            disks.push(self.lab.disk(&format!("{name}.d1"), size_bytes));
        }
        let mnt = self.mnt(name);
        let mut args = vec!["create", "-m", mnt.as_str(), name];
        if mirror {
            args.push("mirror");
        }
        args.extend(disks.iter().map(String::as_str));
        let out = self.lab.zpool(&args);
        assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
        disks
    }

    /// A shell command line with the lab's `zfs`/`zpool` first in PATH (`bash -o pipefail`).
    pub fn sh(&self, script: &str) -> Output {
        let mut command = self.lab.command("bash");
        command
            .args(["-o", "pipefail", "-c", script])
            .current_dir(&self.lab.dir);
        self.lab.run(command)
    }

    /// `sh` that must succeed; its stdout.
    pub fn sh_ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert_eq!(
            out.code, 0,
            "{script}\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    pub fn zfs_ok(&self, args: &[&str]) -> String {
        self.lab.zfs_ok(args)
    }

    /// `syncoid <args>` with the lab's `zfs` first in PATH, a second after the previous
    /// run: sync snapshots are named to the second.
    pub fn syncoid(&self, args: &str) -> Output {
        std::thread::sleep(Duration::from_millis(1100));
        self.sh(&format!("{SYNCOID} {args}"))
    }

    /// `syncoid` that must succeed; its stdout.
    pub fn syncoid_ok(&self, args: &str) -> String {
        let out = self.syncoid(args);
        assert_eq!(
            out.code, 0,
            "syncoid {args}\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    /// `name\tguid` of every snapshot under `fs`, with `fs` replaced by `as_name` (so two
    /// trees compare equal when their snapshots are the same).
    pub fn snapshot_guids(&self, fs: &str, as_name: &str) -> String {
        self.zfs_ok(&["list", "-Hp", "-r", "-t", "snapshot", "-o", "name,guid", fs])
            .replace(fs, as_name)
    }

    /// Stops the daemon, runs `work` on the pool through the engine library, commits; the
    /// next command starts a new daemon.
    pub fn with_engine<T>(
        &self,
        disks: &[String],
        work: impl FnOnce(&mut zetta::spa::Spa) -> T,
    ) -> T {
        self.lab.stop_daemon();
        self.wait_unmounted();
        let _devices = DEVICES.write().unwrap_or_else(|e| e.into_inner());
        let devices: Vec<zetta::io::DeviceRef> = disks
            .iter()
            .map(|disk| {
                Arc::new(zetta::io::FileDevice::open_exclusive(disk).unwrap())
                    as zetta::io::DeviceRef
            })
            .collect();
        let candidate = zetta::spa::find_pools(&devices).into_iter().next().unwrap();
        let mut spa = zetta::spa::Spa::import(&candidate, None, 64 << 20).unwrap();
        let result = work(&mut spa);
        spa.sync().unwrap();
        result
    }

    /// Mount points of this lab still in the kernel's table.
    fn lab_mounts(&self) -> Vec<String> {
        let prefix = format!("{}/", self.lab.dir.display());
        std::fs::read_to_string("/proc/self/mounts")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .filter(|p| p.starts_with(&prefix))
            .map(str::to_string)
            .collect()
    }

    /// Waits for a stopped daemon's mounts to go (fusermount3's auto-unmount).
    pub fn wait_unmounted(&self) {
        for _ in 0..100 {
            if self.lab_mounts().is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.lab.stop_daemon();
        self.wait_unmounted();
        for path in self.lab_mounts().iter().rev() {
            let _ = Command::new("umount").args(["-l", path]).status();
        }
    }
}

/// `tar` digest of a tree with deterministic order and numeric owners (the mount tests'
/// convention): modes, owners, times, symlinks, hardlinks and contents.
pub fn tree_digest(host: &Host, dir: &str) -> String {
    host.sh_ok(&format!(
        "cd '{dir}' && tar --sort=name --numeric-owner -cf - . | md5sum"
    ))
}

/// Whether a program the test drives is installed; if not, says so (the test is skipped).
pub fn installed(program: &str) -> bool {
    if std::path::Path::new(program).exists() {
        return true;
    }
    eprintln!("SKIPPED: {program} is not installed (scripts/setup.sh installs it with apt-get)");
    false
}
