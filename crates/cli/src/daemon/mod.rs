//! The daemon that holds imported pools (the process model of DESIGN.md; OpenZFS keeps
//! pools in the kernel, we keep them in one long-lived process).
//!
//! Nothing is started by hand: the first `zpool`/`zfs` command that finds no daemon on
//! the socket starts `zetta daemon` detached and forwards its command to it; later
//! commands reuse it. The daemon imports a pool on first use (from the cache file) and
//! keeps it open — counters since import, the ARC, and scrubs running in the background
//! all live there — and `zpool export` lets it go. The socket lives in a directory only
//! its owner can write (`$ZETTA_RUN_DIR`, default `/run/zetta`, mode 0755); the socket is
//! 0666 so that any user reaches the daemon, which checks each caller (below). Killing the
//! daemon loses nothing committed: the pools are crash-consistent and the next command
//! starts a new daemon that imports them again from the cache file.
//!
//! `ZETTA_DIRECT=1` runs a command in the calling process instead (no daemon; each
//! command imports with an exclusive lock, commits and releases).
//!
//! Trust: the run directory may sit in a place others can write (`ZETTA_CACHE_FILE=
//! /tmp/x.cache` puts it at `/tmp/x.cache.run`), so before anything in it is used,
//! `check_run_dir` makes sure it is a real directory (not a symbolic link) owned by this
//! user or root and writable by nobody else; it is created with mode 0755 and the files
//! in it (pid, lock, log: 0600) are opened with O_NOFOLLOW. Both ends of the socket check
//! the other's user (SO_PEERCRED): a client talks only to a daemon run by itself or root;
//! the daemon serves everyone, running each command with its caller's credentials (uid
//! and gid from SO_PEERCRED, supplementary groups from `/proc/PID/status`): root and the
//! daemon's own user may do anything, others what `zfs allow` delegated to them
//! (`zfs_secpolicy`), as OpenZFS's kernel checks each ioctl. SIGTERM and SIGINT stop the daemon as `zetta daemon
//! --stop` does (mounts unmounted, every pool committed).

pub mod client;
pub mod fusermount;
pub mod log;
pub mod metrics;
pub mod mounts;
pub mod nbd;
pub mod protocol;
pub mod registry;
pub mod server;
pub mod tunable;
pub mod zed;
pub mod zfs_diagnosis;
pub mod zvol_dev;

use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

/// Directory holding the socket, pid file and log: `$ZETTA_RUN_DIR`; else, when a cache
/// file is chosen with `$ZETTA_CACHE_FILE`, a directory beside it (one daemon per cache
/// file, so a test or demo never talks to a daemon holding someone else's pools); else
/// `/run/zetta`.
pub fn run_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ZETTA_RUN_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(cache) = std::env::var_os("ZETTA_CACHE_FILE") {
        let mut dir = cache;
        dir.push(".run");
        return PathBuf::from(dir);
    }
    PathBuf::from("/run/zetta")
}

pub fn socket_path() -> PathBuf {
    run_dir().join("zetta.sock")
}

pub fn pid_path() -> PathBuf {
    run_dir().join("zetta.pid")
}

/// A file the daemon keeps locked for its whole life. The lock goes with the process's
/// file table — the same moment its device locks go — so `daemon --stop` waits on it
/// rather than guessing from `/proc` (a thread-group leader shows as a zombie while
/// other threads still hold the files open).
pub fn lock_path() -> PathBuf {
    run_dir().join("zetta.lock")
}

/// Whether commands must run in this process (`ZETTA_DIRECT=1`).
pub fn direct_mode() -> bool {
    std::env::var_os("ZETTA_DIRECT").is_some_and(|v| v != "0")
}

/// This process's effective user.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether a peer or an owner of this uid may be trusted: this user or root.
pub fn trusted_uid(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// Checks the run directory before anything in it is used (see the module comment);
/// creates it, mode 0700, when `create` and it does not exist. `Ok(false)`: it does not
/// exist (and `create` was not asked). The error is the message to print.
pub fn check_run_dir(create: bool) -> Result<bool, String> {
    let dir = run_dir();
    let refuse = |why: String| format!("cannot use run directory '{}': {why}", dir.display());
    let meta = match std::fs::symlink_metadata(&dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| refuse(crate::zpool::pool::strerror(&e)))?;
            }
            match std::fs::DirBuilder::new().mode(0o755).create(&dir) {
                Ok(()) => {}
                // Another command created it meanwhile: check what is there.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(refuse(crate::zpool::pool::strerror(&e))),
            }
            std::fs::symlink_metadata(&dir).map_err(|e| refuse(crate::zpool::pool::strerror(&e)))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(refuse(crate::zpool::pool::strerror(&e))),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link".to_string()));
    }
    if !meta.is_dir() {
        return Err(refuse("not a directory".to_string()));
    }
    if !trusted_uid(meta.uid()) {
        return Err(refuse(format!(
            "owned by uid {}, not by uid {}",
            meta.uid(),
            euid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(refuse(format!("writable by other users (mode {mode:04o})")));
    }
    // Others may search it (to reach the socket, which the daemon opens to every user
    // and checks per caller) but never write it; the files in it are 0600.
    Ok(true)
}

/// Opens a file of the run directory for writing without following a symbolic link
/// planted there (mode 0600 when created).
pub fn open_run_file(
    path: &std::path::Path,
    truncate: bool,
    append: bool,
) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(truncate);
    }
    options.open(path)
}

/// The user at the other end of a Unix socket (SO_PEERCRED).
pub fn peer_uid(stream: &std::os::unix::net::UnixStream) -> std::io::Result<u32> {
    peer_cred(stream).map(|cred| cred.uid)
}

/// The pid, uid and gid of the process at the other end of `stream` (SO_PEERCRED).
pub fn peer_cred(stream: &std::os::unix::net::UnixStream) -> std::io::Result<libc::ucred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a live ucred and `len` its size; the kernel writes at most that.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred)
}

std::thread_local! {
    /// The socket of the command this daemon thread serves (`server::serve`).
    static CLIENT: std::cell::Cell<Option<std::os::fd::RawFd>> =
        const { std::cell::Cell::new(None) };
}

/// Records (or clears) the client socket of the command running on this thread.
pub fn set_client(fd: Option<std::os::fd::RawFd>) {
    CLIENT.with(|c| c.set(fd));
}

/// How often an interval command looks for its client while it waits.
const INTERVAL_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits `seconds` between the reports of an interval command (`zpool iostat p 1`).
/// Returns false as soon as the command's client has gone away (^C, kill): the command
/// then ends instead of running on inside the daemon, taking pool locks forever.
pub fn wait_interval(seconds: f64) -> bool {
    let total = std::time::Duration::try_from_secs_f64(seconds)
        .unwrap_or(std::time::Duration::from_secs(u32::MAX as u64));
    let start = std::time::Instant::now();
    loop {
        if CLIENT.with(|c| c.get()).is_some_and(protocol::client_gone) {
            return false;
        }
        let elapsed = start.elapsed();
        if elapsed >= total {
            return true;
        }
        std::thread::sleep((total - elapsed).min(INTERVAL_CHECK));
    }
}

std::thread_local! {
    /// The caller of the command this daemon thread serves (`server::serve`, from
    /// SO_PEERCRED and `/proc/PID/status`); None outside the daemon.
    static CALLER: std::cell::RefCell<Option<zetta::dsl::deleg::Cred>> =
        const { std::cell::RefCell::new(None) };
}

/// Records (or clears) the caller of the command running on this thread.
pub fn set_caller(cred: Option<zetta::dsl::deleg::Cred>) {
    CALLER.with(|c| *c.borrow_mut() = cred);
}

/// Who runs the current command (OpenZFS's `CRED()`): the daemon's client, else this
/// process's own effective user and groups (`ZETTA_DIRECT=1`, embedded use).
pub fn caller() -> zetta::dsl::deleg::Cred {
    if let Some(cred) = CALLER.with(|c| c.borrow().clone()) {
        return cred;
    }
    // SAFETY: getegid has no preconditions; getgroups writes at most `len` gids.
    let (gid, groups) = unsafe {
        let mut groups = vec![0 as libc::gid_t; 256];
        let count = libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr());
        groups.truncate(count.max(0) as usize);
        (libc::getegid(), groups)
    };
    zetta::dsl::deleg::Cred {
        uid: euid(),
        gid,
        groups,
    }
}

/// The credentials of a client process: uid and gid from SO_PEERCRED, the supplementary
/// groups from `/proc/PID/status` (`Groups:`). A process that has gone keeps none.
pub fn peer_credentials(
    stream: &std::os::unix::net::UnixStream,
) -> std::io::Result<zetta::dsl::deleg::Cred> {
    let cred = peer_cred(stream)?;
    let groups = std::fs::read_to_string(format!("/proc/{}/status", cred.pid))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("Groups:").map(|rest| {
                    rest.split_whitespace()
                        .filter_map(|g| g.parse().ok())
                        .collect::<Vec<u32>>()
                })
            })
        })
        .unwrap_or_default();
    Ok(zetta::dsl::deleg::Cred {
        uid: cred.uid,
        gid: cred.gid,
        groups,
    })
}

/// Whether `cred` may do anything (OpenZFS's `secpolicy_zfs`): root, or the user the
/// daemon runs as (who owns its pools' devices anyway).
pub fn privileged(cred: &zetta::dsl::deleg::Cred) -> bool {
    trusted_uid(cred.uid)
}
