//! The daemon that holds imported pools (the process model of DESIGN.md; OpenZFS keeps
//! pools in the kernel, we keep them in one long-lived process).
//!
//! Nothing is started by hand: the first `zpool`/`zfs` command that finds no daemon on
//! the socket starts `zetta daemon` detached and forwards its command to it; later
//! commands reuse it. The daemon imports a pool on first use (from the cache file) and
//! keeps it open — counters since import, the ARC, and scrubs running in the background
//! all live there — and `zpool export` lets it go. The socket lives in a directory only
//! its owner can enter (`$ZETTA_RUN_DIR`, default `/run/zetta`, mode 0700). Killing the
//! daemon loses nothing committed: the pools are crash-consistent and the next command
//! starts a new daemon that imports them again from the cache file.
//!
//! `ZETTA_DIRECT=1` runs a command in the calling process instead (no daemon; each
//! command imports with an exclusive lock, commits and releases).

pub mod client;
pub mod fusermount;
pub mod mounts;
pub mod protocol;
pub mod registry;
pub mod server;

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
