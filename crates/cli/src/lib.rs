//! zetta-cli: the `zpool` and `zfs` front ends of the single `zetta` binary.
//!
//! Counterpart: OpenZFS `cmd/zpool/zpool_main.c`, `cmd/zpool/zpool_vdev.c` and
//! `cmd/zfs/zfs_main.c`. Every command is a function `run(args, out, err) -> exit code`
//! that writes to the two streams it is given and never touches the process's own stdout
//! or exit: `main` passes the real streams, a future daemon can run the same functions
//! in-process and ship the bytes back. Exit codes are OpenZFS's: 0 success, 1 a failed
//! operation, 2 a usage error.
//!
//! Process model: a pool is "imported" when the cache file (`zpool::cache`) lists it, and
//! held open by the daemon (`daemon`), started on demand, to which every command is
//! forwarded. With `ZETTA_DIRECT=1` a command runs in the calling process instead: it opens
//! the pool's devices with an exclusive lock, imports, works, commits and lets go; a second
//! process touching the same pool at the same moment is refused, never interleaved.

pub mod advise;
pub mod calc;
pub mod daemon;
pub mod install;
pub mod man;
pub mod usage;
pub mod zfs;
pub mod zfs_allow;
pub mod zfs_diff;
pub mod zfs_mount;
pub mod zfs_promote;
pub mod zfs_rename;
pub mod zfs_secpolicy;
pub mod zfs_userspace;
pub mod zinject;
pub mod zpool;

use std::io::Write;

/// `zetta`'s own usage (also the synopsis of `zetta(8)`).
pub const ZETTA_USAGE: &str = "usage: zetta zpool <command> ...\n       zetta zfs <command> ...\n       zetta daemon [--foreground] [--metrics <host:port>] | --stop\n       zetta arcstats\n       zetta tunable [NAME[=VALUE]]...\n       zetta zinject ... (fault injection, as zinject)\n       zetta calc need|usable ... (zetta calc --help)\n       zetta advise [-j] [pool|dataset] (zetta advise --help)\n       zetta install-links [--share <dir>] <dir>\n       zetta install-service [<unit dir>]\n       zetta version\n";

/// `zetta` invoked under its own name: `zetta zpool …`, `zetta zfs …`,
/// `zetta install-links DIR`, `zetta version`.
pub fn run_zetta(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let usage = ZETTA_USAGE;
    let Some(first) = args.first() else {
        let _ = err.write_all(usage.as_bytes());
        return 2;
    };
    if first == "daemon" {
        // The daemon's own binary detaches its mounts should it be killed (own transport).
        if let Ok(exe) = std::env::current_exe() {
            zetta_fuse::kernel::auto_unmount::set_helper_exe(exe);
        }
    }
    match first.as_str() {
        "zpool" | "zfs" => dispatch(first, &args[1..], out, err),
        // The helper that detaches a killed daemon's mounts (own FUSE transport).
        zetta_fuse::kernel::auto_unmount::HELPER_ARG => {
            zetta_fuse::kernel::auto_unmount::helper_main()
        }
        "zinject" => zinject::run(&args[1..], out, err),
        "daemon" => match args.get(1).map(String::as_str) {
            None => daemon::server::run(err),
            Some("--foreground") if args.len() == 2 => daemon::server::run(err),
            // Prometheus metrics and a status page over HTTP (daemon/metrics.rs).
            Some("--foreground" | "--metrics") => {
                let words: Vec<&str> = args[1..]
                    .iter()
                    .map(String::as_str)
                    .filter(|w| *w != "--foreground")
                    .collect();
                match words[..] {
                    ["--metrics", addr] => daemon::server::run_with_metrics(err, Some(addr)),
                    _ => {
                        let _ = writeln!(
                            err,
                            "usage: zetta daemon [--foreground] [--metrics <host:port>] | --stop"
                        );
                        2
                    }
                }
            }
            Some("--stop") => daemon::client::stop(out, err),
            Some(other) => {
                let _ = writeln!(
                    err,
                    "usage: zetta daemon [--foreground] [--metrics <host:port>] | --stop ('{other}'?)"
                );
                2
            }
        },
        "install-links" => install::install_links(&args[1..], out, err),
        "install-service" => install::install_service(&args[1..], out, err),
        // The storage calculator (no pool, no daemon).
        "calc" => calc::run(&args[1..], out, err),
        // The tuning advisor (in the daemon, where the counters since import live).
        "advise" => advise::run(&args[1..], out, err),
        // ARC statistics of the pools the daemon holds (kstat layout).
        "arcstats" => daemon::client::forward(&["arcstats".to_string()], out, err),
        // OpenZFS's module parameters, in the daemon (daemon/tunable.rs).
        "tunable" => {
            let mut request = vec!["tunable".to_string()];
            request.extend(args[1..].iter().cloned());
            daemon::client::forward(&request, out, err)
        }
        "version" | "-V" | "--version" => {
            let _ = writeln!(out, "zetta {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "help" | "-h" | "--help" | "-?" => {
            let _ = out.write_all(usage.as_bytes());
            0
        }
        other => {
            let _ = writeln!(err, "unrecognized command '{other}'");
            let _ = err.write_all(usage.as_bytes());
            2
        }
    }
}

/// Runs a `zpool` or `zfs` command: in the daemon (started if needed), or here when
/// `ZETTA_DIRECT=1` or when this process is the daemon.
pub fn dispatch(front: &str, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    // Commands that touch no pool never need (or start) the daemon.
    let local_only = matches!(
        args.first().map(String::as_str),
        None | Some("version" | "-V" | "--version" | "help" | "-?" | "-h" | "--help")
    );
    if local_only || daemon::direct_mode() || daemon::registry::get().is_some() {
        return match front {
            "zfs" => zfs::run(args, out, err),
            _ => zpool::run(args, out, err),
        };
    }
    let mut request = Vec::with_capacity(args.len() + 1);
    request.push(front.to_string());
    request.extend_from_slice(args);
    daemon::client::forward(&request, out, err)
}
