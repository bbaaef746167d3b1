//! The scratch lab of the CLI tests: a directory with `zpool` and `zfs` symlinks to the
//! real binary, its own cache file and daemon, and sparse disk files. (`zpool_cli.rs`
//! carries the original copy of this harness; new tests share this one.)

#![allow(dead_code)]

pub mod host;
pub mod mount_lab;
pub mod openzfs;
pub mod remote;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::RwLock;

/// Held for writing while this test process has pool devices open itself (their exclusive
/// locks), for reading while it starts a child: a child forked meanwhile would carry the
/// locked descriptor until its exec, and a command started just then would find the pool
/// busy. `spawn` returns once the child has exec'd.
pub static DEVICES: RwLock<()> = RwLock::new(());

pub struct Lab {
    pub dir: PathBuf,
    /// Extra environment of every command (and so of the daemon they start).
    pub env: Vec<(String, String)>,
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Lab {
    pub fn new() -> Lab {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let unique = (std::process::id() << 8) ^ COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(format!("/tmp/zr{unique:08x}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["zpool", "zfs"] {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), dir.join(name)).unwrap();
        }
        Lab {
            dir,
            env: Vec::new(),
        }
    }

    /// Creates a sparse disk file and returns its absolute path.
    pub fn disk(&self, name: &str, size_bytes: u64) -> String {
        let path = self.dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(size_bytes).unwrap();
        path.to_string_lossy().into_owned()
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// A command of this lab (`zpool`, `zfs`, or `sh`/`bash` with the lab first in PATH).
    pub fn command(&self, program: &str) -> Command {
        let mut command = if program == "sh" || program == "bash" {
            Command::new(program)
        } else {
            Command::new(self.dir.join(program))
        };
        let path = format!(
            "{}:{}",
            self.dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command
            .env("PATH", path)
            .env("ZETTA_CACHE_FILE", self.dir.join("zpool.cache"))
            .env("ZETTA_RUN_DIR", self.dir.join("run"))
            .env("ZETTA_ZVOL_DIR", self.dir.join("dev/zvol"))
            .env_remove("ZETTA_DIRECT")
            .env_remove("ZETTA_MOUNT")
            .env("TZ", "UTC")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Starts a child (see `DEVICES`).
    pub fn spawn(&self, command: &mut Command) -> Child {
        let _guard = DEVICES.read().unwrap_or_else(|e| e.into_inner());
        command.spawn().unwrap()
    }

    pub fn run(&self, mut command: Command) -> Output {
        let output = self.spawn(&mut command).wait_with_output().unwrap();
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn zpool(&self, args: &[&str]) -> Output {
        let mut command = self.command("zpool");
        command.args(args);
        self.run(command)
    }

    pub fn zfs(&self, args: &[&str]) -> Output {
        let mut command = self.command("zfs");
        command.args(args);
        self.run(command)
    }

    /// A shell pipeline with the lab's `zfs` and `zpool` first in PATH.
    pub fn sh(&self, script: &str) -> Output {
        let mut command = self.command("sh");
        command.arg("-c").arg(script).current_dir(&self.dir);
        self.run(command)
    }

    /// Runs `zpool` or `zfs` (`front`), which must succeed, and returns its stdout.
    pub fn ok(&self, front: &str, args: &[&str]) -> String {
        let out = if front == "zpool" {
            self.zpool(args)
        } else {
            self.zfs(args)
        };
        assert_eq!(out.code, 0, "{front} {args:?}: {}", out.stderr);
        out.stdout
    }

    /// Runs a `zfs` command that must succeed and returns its stdout.
    pub fn zfs_ok(&self, args: &[&str]) -> String {
        let out = self.zfs(args);
        assert_eq!(out.code, 0, "zfs {args:?} failed: {}", out.stderr);
        out.stdout
    }

    /// Names, types, modes, owners, sizes, whole-second mtimes, contents, symlink targets,
    /// hard links and device numbers of the tree at `dir` (without what `exclude` names, a
    /// tar pattern), as one POSIX tar digest plus its listing to show what differs: what
    /// the tests that compare two implementations' copies of a tree compare.
    pub fn tree_digest(&self, dir: &std::path::Path, exclude: Option<&str>) -> String {
        let tar = self.dir.join("tree.tar");
        let out = self.sh(&tree_digest_script(
            &dir.to_string_lossy(),
            exclude,
            &tar.to_string_lossy(),
        ));
        assert_eq!(out.code, 0, "tar {}: {}", dir.display(), out.stderr);
        out.stdout
    }

    /// Stops this lab's daemon (it commits its pools; they stay imported).
    pub fn stop_daemon(&self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_zetta"))
            .args(["daemon", "--stop"])
            .env("ZETTA_RUN_DIR", self.dir.join("run"))
            .output();
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop_daemon();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The shell script of `Lab::tree_digest` (run here or on a `remote::Remote`), the tar
/// made at `tar` and removed.
pub fn tree_digest_script(dir: &str, exclude: Option<&str>, tar: &str) -> String {
    let exclude = exclude
        .map(|pattern| format!("--exclude='{pattern}' "))
        .unwrap_or_default();
    format!(
        "cd '{dir}' && tar --sort=name {exclude}--one-file-system --numeric-owner --format=posix \
         --pax-option=delete=atime,delete=ctime,delete=mtime,exthdr.name=%d/PaxHeaders/%f \
         -cf - . > '{tar}' && md5sum < '{tar}' \
         && tar --numeric-owner -tvf '{tar}' | LC_ALL=C sort -k6; rm -f '{tar}'"
    )
}

/// A lab whose daemon serves no mounts (`ZETTA_MOUNT=0`: nothing commits behind a
/// command's back), with a pool `tank` on a 512 MiB sparse file.
pub struct NoMountLab {
    pub inner: Lab,
}

impl NoMountLab {
    pub fn new() -> NoMountLab {
        let lab = NoMountLab { inner: Lab::new() };
        let disk = lab.inner.disk("disk", 512 << 20);
        // `-m none`: nothing mounts here, and `zpool create` would otherwise check the
        // host's `/tank` (refusing when another program keeps files there).
        lab.ok("zpool", &["create", "-m", "none", "tank", &disk]);
        lab
    }

    /// Runs `zpool`, `zfs` or `sh` (`front`) of this lab with `args`.
    pub fn run(&self, front: &str, args: &[&str]) -> Output {
        let mut command = self.inner.command(front);
        command.args(args).env("ZETTA_MOUNT", "0");
        self.inner.run(command)
    }

    /// `run`, which must succeed; its stdout.
    pub fn ok(&self, front: &str, args: &[&str]) -> String {
        let out = self.run(front, args);
        assert_eq!(out.code, 0, "{front} {args:?}: {}", out.stderr);
        out.stdout
    }
}

/// Polls `done` every 50 ms for up to a minute (a loaded CI machine is slow, never wrong);
/// its last answer.
pub fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// Writes `len` seeded bytes (mostly `z`s when `compressible`) as object `object` of
/// `fs` on the one-device pool `disk`, through the engine library, and commits: data the
/// send tests make without a mount. The pool must not be held by a daemon.
pub fn write_object(disk: &str, fs: &str, object: u64, seed: u64, len: usize, compressible: bool) {
    let _devices = DEVICES.write().unwrap_or_else(|e| e.into_inner());
    let device = zetta::io::FileDevice::open_exclusive(disk).unwrap();
    let devices: Vec<zetta::io::DeviceRef> = vec![std::sync::Arc::new(device)];
    let candidate = zetta::spa::find_pools(&devices).into_iter().next().unwrap();
    let mut spa = zetta::spa::Spa::import(&candidate, None, 64 << 20).unwrap();
    let mut data = vec![0u8; len];
    zetta::rand::SeededRng::new(seed).fill(&mut data);
    if compressible {
        for (i, b) in data.iter_mut().enumerate() {
            if i % 64 != 0 {
                *b = b'z';
            }
        }
    }
    spa.with_dataset(fs, |os, ctx| {
        let id = zetta::types::ObjectId(object);
        if !os.object_exists(ctx, id)? {
            os.create_object_at(ctx, id, zetta::dmu::object_type::PLAIN_FILE, 512, 0, 0)?;
        }
        os.write(ctx, id, 0, &data)
    })
    .unwrap();
    spa.sync().unwrap();
}
