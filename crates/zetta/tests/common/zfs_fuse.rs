//! zfs-fuse as a second, independent writer of real ZFS pools (pool version 23, ZPL 4):
//! tests start its daemon, make pools on file vdevs with every kind of file, export them and
//! stop the daemon, then check what Zetta reads against what zfs-fuse wrote.
//!
//! zfs-fuse listens on one fixed socket per machine, so only one daemon may run: `ZfsFuse::start`
//! takes an exclusive lock file first (tests of one binary run in threads, and engineers may
//! run several binaries at once) and refuses to start beside a zfs-fuse it did not start.
//! The daemon is stopped by its own pid, never by name.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ZFS_FUSE: &str = "/usr/sbin/zfs-fuse";
const ZPOOL: &str = "/usr/sbin/zpool";
const ZFS: &str = "/usr/sbin/zfs";
const LOCK_FILE: &str = "/tmp/zetta-tests-zfs-fuse.lock";

/// A running zfs-fuse daemon, stopped (its pools exported first) on drop.
pub struct ZfsFuse {
    child: Child,
    lock: std::fs::File,
    pools: Vec<String>,
}

/// Whether zfs-fuse is installed (scripts/setup.sh installs it with sanoid).
pub fn available() -> bool {
    Path::new(ZFS_FUSE).is_file() && Path::new(ZPOOL).is_file() && Path::new("/dev/fuse").exists()
}

fn other_daemons() -> Vec<u32> {
    let mut pids = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if std::fs::read_to_string(entry.path().join("comm"))
                .is_ok_and(|c| c.trim() == "zfs-fuse")
            {
                pids.push(pid);
            }
        }
    }
    pids
}

impl ZfsFuse {
    /// Starts the daemon (extended attributes on), waiting for the lock and for its socket.
    pub fn start() -> ZfsFuse {
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_FILE)
            .unwrap_or_else(|e| panic!("{LOCK_FILE}: {e}"));
        // SAFETY: flock on a file descriptor we own; blocks until the other holder is done.
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock {LOCK_FILE}");
        let others = other_daemons();
        assert!(
            others.is_empty(),
            "a zfs-fuse daemon this test did not start is running (pid {others:?}); it holds the \
             one zfs-fuse socket: stop it (service zfs-fuse stop) and rerun"
        );
        let child = Command::new(ZFS_FUSE)
            .args(["--no-daemon", "--no-kstat-mount", "-x"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{ZFS_FUSE}: {e}"));
        let daemon = ZfsFuse {
            child,
            lock,
            pools: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = Command::new(ZPOOL)
                .arg("list")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                break;
            }
            assert!(Instant::now() < deadline, "zfs-fuse did not answer in 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        daemon
    }

    fn run(tool: &str, args: &[&str]) -> String {
        let out = Command::new(tool)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn zpool(&self, args: &[&str]) -> String {
        Self::run(ZPOOL, args)
    }

    pub fn zfs(&self, args: &[&str]) -> String {
        Self::run(ZFS, args)
    }

    /// `zfs receive ARGS... < STREAM` (a send stream in a file); its stdout.
    pub fn receive(&self, args: &[&str], stream: &Path) -> String {
        let input =
            std::fs::File::open(stream).unwrap_or_else(|e| panic!("{}: {e}", stream.display()));
        let out = Command::new(ZFS)
            .arg("receive")
            .args(args)
            .stdin(input)
            .output()
            .unwrap_or_else(|e| panic!("{ZFS}: {e}"));
        assert!(
            out.status.success(),
            "zfs receive {args:?} < {} (zfs-fuse) failed: {}{}",
            stream.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `zpool create -m MOUNT NAME VDEV_ARGS...`; the pool is exported when this is dropped.
    pub fn create_pool(&mut self, name: &str, mount: &Path, vdev_args: &[&str]) {
        let mount = mount.to_string_lossy().into_owned();
        let mut args = vec!["create", "-m", mount.as_str(), name];
        args.extend_from_slice(vdev_args);
        self.zpool(&args);
        self.pools.push(name.to_string());
    }

    /// `zpool import -d DIR NAME` of a pool another writer made; exported when this is
    /// dropped, as a created one.
    pub fn import_pool(&mut self, dir: &Path, name: &str) {
        self.zpool(&["import", "-d", &dir.to_string_lossy(), name]);
        self.pools.push(name.to_string());
    }

    /// `zpool scrub NAME`, then waits (up to 120 s) for `zpool status` to report it done;
    /// returns that status.
    pub fn scrub(&self, name: &str) -> String {
        self.zpool(&["scrub", name]);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let status = self.zpool(&["status", name]);
            if !status.contains("in progress") && status.contains("scrub") {
                return status;
            }
            assert!(Instant::now() < deadline, "scrub of {name}: {status}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Exports every pool this daemon created (their devices then hold a clean, final txg).
    pub fn export_all(&mut self) {
        for pool in std::mem::take(&mut self.pools) {
            // zfs-fuse may still be closing files of a just-unmounted mount, or ending a
            // send or receive of a killed transfer: retry for up to 60 s.
            let mut last = String::new();
            for _ in 0..300 {
                let out = Command::new(ZPOOL).args(["export", &pool]).output();
                match out {
                    Ok(o) if o.status.success() => {
                        last.clear();
                        break;
                    }
                    Ok(o) => last = String::from_utf8_lossy(&o.stderr).into_owned(),
                    Err(e) => last = e.to_string(),
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            assert!(last.is_empty(), "zpool export {pool} (zfs-fuse): {last}");
        }
    }
}

impl Drop for ZfsFuse {
    fn drop(&mut self) {
        // A test that failed still exports what it made: a pool left in zfs-fuse's cache file
        // comes back FAULTED at the next start, its vdevs gone with the lab. A pool still
        // busy (a send or receive of a killed transfer ending) is tried again for 30 s.
        for pool in std::mem::take(&mut self.pools) {
            for _ in 0..60 {
                let exported = Command::new(ZPOOL)
                    .args(["export", "-f", &pool])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if exported {
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        // SIGTERM by pid: zfs-fuse syncs and exits.
        // SAFETY: kill(2) on the pid of our own child.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.lock;
    }
}

/// A sparse 128 MiB file vdev at `path` for zfs-fuse to make a pool on; its path.
pub fn vdev_file(path: &Path) -> String {
    std::fs::File::create(path)
        .unwrap()
        .set_len(128 << 20)
        .unwrap();
    path.to_string_lossy().into_owned()
}

/// What `populate` wrote, for the reader's tests to compare with.
pub struct Populated {
    /// Relative path → contents of each regular file.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// Relative path → target of each symlink.
    pub symlinks: Vec<(PathBuf, PathBuf)>,
    /// (path, xattr name, value).
    pub xattrs: Vec<(PathBuf, String, Vec<u8>)>,
}

/// `setxattr(2)`: the error as the kernel returned it (a ZPL 4 filesystem of Zetta's refuses
/// with EOPNOTSUPP).
pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = CString::new(name).unwrap();
    // SAFETY: valid C strings and a buffer of the given length.
    let rc = unsafe {
        libc::setxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Polls until `path` is (or is no longer) a mount point (30 s).
pub fn wait_mounted(path: &Path, want: bool) {
    let text = path.to_string_lossy().into_owned();
    for _ in 0..300 {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let found = table
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(text.as_str()));
        if found == want {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{text}: mounted should be {want}");
}

pub fn mknod(path: &Path, mode: libc::mode_t, dev: libc::dev_t) {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    let rc = unsafe { libc::mknod(p.as_ptr(), mode, dev) };
    assert_eq!(
        rc,
        0,
        "mknod {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// Fills a mounted filesystem with one of each kind of thing a reader must get right: small,
/// multi-record, compressible and sparse files, a directory large enough for a fat ZAP, short
/// (inline) and long symlinks, a hardlink, a fifo, a character device, xattrs on a file and a
/// directory, an owner, a mode, and nanosecond times.
pub fn populate(root: &Path) -> Populated {
    let mut files = Vec::new();
    let mut put = |rel: &str, data: Vec<u8>| {
        std::fs::write(root.join(rel), &data).unwrap_or_else(|e| panic!("write {rel}: {e}"));
        files.push((PathBuf::from(rel), data));
    };
    std::fs::create_dir_all(root.join("dir/sub")).unwrap();
    put("small.txt", b"hello\n".to_vec());
    put(
        "medium.bin",
        (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect(),
    );
    put(
        "text.txt",
        (0..40_000)
            .flat_map(|i| format!("line {i} of a compressible text file\n").into_bytes())
            .collect(),
    );
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    put(
        "big.bin",
        (0..3 * 1024 * 1024 + 123)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect(),
    );
    for i in 0..60 {
        put(
            &format!("dir/long_name_to_force_a_fat_zap_directory_entry_number_{i:04}.txt"),
            i.to_string().into_bytes(),
        );
    }
    put("dir/sub/empty", Vec::new());
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(root.join("sparse.bin")).unwrap();
        f.seek(SeekFrom::Start(1 << 20)).unwrap();
        f.write_all(b"middle").unwrap();
        f.seek(SeekFrom::Start(5 << 20)).unwrap();
        f.write_all(b"end").unwrap();
        let mut data = vec![0u8; (5 << 20) + 3];
        data[1 << 20..(1 << 20) + 6].copy_from_slice(b"middle");
        data[5 << 20..].copy_from_slice(b"end");
        files.push((PathBuf::from("sparse.bin"), data));
    }
    let long_target = format!(
        "/{}/{}/target-of-a-long-symlink",
        "x".repeat(40),
        "y".repeat(200)
    );
    symlink("small.txt", root.join("short-link")).unwrap();
    symlink(&long_target, root.join("long-link")).unwrap();
    let symlinks = vec![
        (PathBuf::from("short-link"), PathBuf::from("small.txt")),
        (PathBuf::from("long-link"), PathBuf::from(long_target)),
    ];
    std::fs::hard_link(root.join("small.txt"), root.join("hardlink.txt")).unwrap();
    mknod(&root.join("fifo"), libc::S_IFIFO | 0o644, 0);
    mknod(
        &root.join("chardev"),
        libc::S_IFCHR | 0o644,
        libc::makedev(1, 3),
    );
    std::os::unix::fs::chown(root.join("small.txt"), Some(1234), Some(5678)).unwrap();
    std::fs::set_permissions(
        root.join("medium.bin"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    let times = std::fs::FileTimes::new()
        .set_accessed(std::time::UNIX_EPOCH + Duration::new(1_600_000_000, 123_456_789))
        .set_modified(std::time::UNIX_EPOCH + Duration::new(1_500_000_000, 987_654_321));
    std::fs::File::options()
        .write(true)
        .open(root.join("text.txt"))
        .unwrap()
        .set_times(times)
        .unwrap();
    let xattrs = vec![
        (
            PathBuf::from("small.txt"),
            "user.note".to_string(),
            b"an xattr value".to_vec(),
        ),
        (
            PathBuf::from("medium.bin"),
            "user.big".to_string(),
            vec![b'z'; 3000],
        ),
        (
            PathBuf::from("dir"),
            "user.dirattr".to_string(),
            b"on a directory".to_vec(),
        ),
    ];
    for (path, name, value) in &xattrs {
        set_xattr(&root.join(path), name, value)
            .unwrap_or_else(|e| panic!("setxattr {} {name}: {e}", path.display()));
    }
    Populated {
        files,
        symlinks,
        xattrs,
    }
}
