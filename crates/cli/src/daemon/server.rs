//! `zetta daemon`: accepts commands on the socket and runs them in-process against the
//! pools it holds. One thread per connection; pool locks (see `registry`) order them.
//! `__stop`, SIGTERM and SIGINT unmount every filesystem, commit every held pool and exit
//! 0 (the pools stay imported in the cache and come back with the next daemon). A second
//! SIGTERM/SIGINT during that stop ends the process at once (`force_stop`): a stop always wins.

use super::log::{self, Level};
use super::protocol::{self, FrameWriter, FRAME_EXIT, FRAME_STDERR, FRAME_STDOUT};
use super::{lock_path, pid_path, registry, socket_path};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};

/// Runs the daemon in this process until stopped. Returns an exit code.
pub fn run(err: &mut dyn Write) -> i32 {
    run_with_metrics(err, None)
}

/// `run`, serving Prometheus metrics and the status page on `metrics` (host:port) too
/// (`zetta daemon --metrics ADDR`, see `metrics`).
pub fn run_with_metrics(err: &mut dyn Write, metrics: Option<&str>) -> i32 {
    // Before any thread starts: every thread inherits the blocked signals.
    catch_stop_signals();
    if let Err(message) = super::check_run_dir(true) {
        let _ = writeln!(err, "{message}");
        return 1;
    }
    let socket = socket_path();
    if let Ok(stream) = UnixStream::connect(&socket) {
        if super::peer_uid(&stream).is_ok_and(super::trusted_uid) {
            let _ = writeln!(
                err,
                "zetta daemon: already running on '{}'",
                socket.display()
            );
            return 0;
        }
    }
    // Held (never dropped) until the process exits; see `lock_path`.
    // A daemon that was just stopped may still be exiting: wait for it, briefly.
    let lifetime_lock = match super::open_run_file(&lock_path(), false, false) {
        Ok(file) => file,
        Err(e) => {
            let _ = writeln!(
                err,
                "cannot open '{}': {}",
                lock_path().display(),
                crate::zpool::pool::strerror(&e)
            );
            return 1;
        }
    };
    let mut waited = 0;
    while lifetime_lock.try_lock().is_err() {
        if waited == 600 || UnixStream::connect(&socket).is_ok() {
            let _ = writeln!(
                err,
                "zetta daemon: another daemon holds '{}'",
                lock_path().display()
            );
            return 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    let _ = std::fs::remove_file(&socket);
    let listener = match UnixListener::bind(&socket) {
        Ok(listener) => listener,
        Err(e) => {
            let _ = writeln!(
                err,
                "cannot listen on '{}': {}",
                socket.display(),
                crate::zpool::pool::strerror(&e)
            );
            return 1;
        }
    };
    // Anyone may connect; the daemon checks each caller (`serve`).
    let _ = std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666));
    leave_the_start_directory();
    SERVING.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Ok(mut file) = super::open_run_file(&pid_path(), true, false) {
        let _ = writeln!(file, "{}", std::process::id());
    }
    // Tunables first (`/etc/zetta/zetta.conf`): the ARC is sized from them.
    super::tunable::load_at_start(err);
    registry::enable();
    super::tunable::publish_parameters();
    super::tunable::spawn_arc_reaper();
    super::mounts::spawn_attr_invalidator();
    // The engine's errors and scans become `zpool events` (zpool/events.rs).
    crate::zpool::events::start_daemon_pump();
    if let Some(addr) = metrics {
        match super::metrics::bind(addr) {
            Ok((listener, local)) => {
                log::write(
                    err,
                    Level::Info,
                    &format!("zetta daemon: metrics on http://{local}/metrics"),
                );
                super::metrics::spawn(listener);
            }
            Err(message) => {
                log::write(err, Level::Error, &message);
                return 1;
            }
        }
    }
    log::write(
        err,
        Level::Info,
        &format!(
            "zetta daemon: started (pid {}, socket '{}')",
            std::process::id(),
            socket.display()
        ),
    );
    // Pools imported before (the cache file) come back with their mounts; commands
    // that connect meanwhile wait in the listen queue. A pool that cannot be opened
    // (a device missing) stays UNAVAIL in the listings and keeps no other pool away.
    for entry in crate::zpool::pool::load_cache().unwrap_or_default() {
        if let Err(e) = crate::zpool::pool::open_entry(&entry) {
            log::write(err, Level::Error, &format!("zetta: {}", e.message()));
        }
    }
    let mut messages = Vec::new();
    super::mounts::reconcile(&mut messages);
    super::nbd::reconcile();
    for message in messages {
        log::write(err, Level::Warn, &message);
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || serve(stream));
    }
    drop(lifetime_lock);
    0
}

/// SIGTERM and SIGINT are blocked in every thread and taken by one thread of their own
/// (sigwait), which stops the daemon cleanly (`shutdown`) instead of leaving the last
/// seconds of writes uncommitted and the mounts dead. Children get an empty signal mask
/// from `std::process::Command`.
fn catch_stop_signals() {
    // SAFETY: a sigset_t is plain data; sigemptyset/sigaddset initialise it, and
    // pthread_sigmask only changes this thread's mask.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    std::thread::spawn(move || {
        let mut stopping = false;
        loop {
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` is initialised and blocked in every thread; sigwait writes one int.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                continue;
            }
            let name = if signal == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            if stopping {
                force_stop(name);
            }
            stopping = true;
            // The clean stop runs beside this thread, so that a second signal is still
            // heard while it waits on a device or a mount that never answers.
            std::thread::spawn(move || shutdown(name));
        }
    });
}

/// A second SIGTERM or SIGINT while the clean stop has not finished: the admin's stop
/// always wins. The process ends at once, as after a power cut: every pool imports at its
/// last synced txg with its fsync'd data (the crash guarantee), and the kernel's FUSE
/// auto-unmount helpers take the mounts down when our /dev/fuse descriptors close.
/// Past the log line (stderr's lock, held only while a line is written) nothing here takes
/// a lock a wedged thread may hold.
fn force_stop(why: &str) -> ! {
    log::log(
        Level::Warn,
        &format!(
            "zetta daemon: {why} again during the stop: exiting now without committing; \
             pools import at their last synced txg"
        ),
    );
    // SAFETY: _exit ends the process without running atexit handlers or flushing stdio,
    // whose locks a wedged thread may hold.
    unsafe { libc::_exit(1) }
}

/// Held from the first stop on: a second stop (a signal during `__stop`) waits here
/// while the first one finishes and exits the process.
static STOPPING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// The clean stop: unmounts every filesystem (the kernel writes back what it caches),
/// commits every held pool, removes the socket and pid file, and exits 0.
fn shutdown(why: &str) -> ! {
    let _guard = STOPPING.lock();
    log::log(
        Level::Info,
        &format!("zetta daemon: stopping on {why}: unmounting, committing every pool"),
    );
    unmount_all();
    // The loop devices hold the volume files open: they go before their mount.
    super::zvol_dev::stop();
    stop();
    log::log(Level::Info, "zetta daemon: stopped");
    if SERVING.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = std::fs::remove_file(socket_path());
        let _ = std::fs::remove_file(pid_path());
    }
    std::process::exit(0);
}

/// Whether this process bound the socket (and so owns it and the pid file).
static SERVING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Unmounts every mount of this daemon, deepest first; a busy one is detached lazily.
fn unmount_all() {
    let mut names: Vec<String> = super::mounts::mounted_list()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.matches('/').count()));
    for name in names {
        if super::mounts::unmount(&name, false).is_err() {
            let _ = super::mounts::unmount(&name, true);
        }
    }
}

fn serve(stream: UnixStream) {
    // Any user may connect (the socket is 0666 in a directory others may search but not
    // write); each command runs with its caller's credentials, and a caller that is
    // neither root nor this daemon's user runs only what `zfs allow` gave it
    // (`zfs_secpolicy`). A peer whose credentials cannot be read is refused.
    let cred = match super::peer_credentials(&stream) {
        Ok(cred) => cred,
        Err(e) => {
            let mut writer = &stream;
            let text = format!(
                "permission denied: cannot read the caller's credentials: {}\n",
                crate::zpool::pool::strerror(&e)
            );
            let _ = protocol::write_frame(&mut writer, FRAME_STDERR, text.as_bytes());
            let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &1i32.to_le_bytes());
            return;
        }
    };
    super::set_caller(Some(cred.clone()));
    super::set_client(Some(stream.as_raw_fd()));
    let mut reader = &stream;
    let Ok((args, flags)) = protocol::read_request(&mut reader) else {
        return;
    };
    let (input, output) = if protocol::passes_stdio(&args) {
        match protocol::recv_stdio(&stream) {
            Ok((input, output)) => (Some(input), Some(output)),
            Err(_) => return,
        }
    } else {
        (None, None)
    };
    let code = {
        let mut out = FrameWriter {
            stream: &stream,
            kind: FRAME_STDOUT,
            direct: output,
        };
        let mut err = FrameWriter {
            stream: &stream,
            kind: FRAME_STDERR,
            direct: None,
        };
        // Pool commands that change anything are root's (`zfs_secpolicy_config`), and so
        // are the daemon's own (zinject, tunables, stop).
        let refusal = match args[0].as_str() {
            "zpool" => crate::zfs_secpolicy::check_zpool(&args[1..], &cred).err(),
            "zfs" => args.get(1).and_then(|command| {
                crate::zfs_secpolicy::check_zfs(command, &args[2..], &cred)
                    .err()
                    .map(|e| e.message())
            }),
            "arcstats" => None,
            other if !super::privileged(&cred) => {
                Some(format!("cannot run '{other}': permission denied"))
            }
            _ => None,
        };
        if let Some(message) = refusal {
            let _ = writeln!(err, "{message}");
            let mut writer = &stream;
            let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &1i32.to_le_bytes());
            return;
        }
        let prepared = super::zvol_dev::prepare(&args).and_then(|()| super::mounts::prepare(&args));
        if let Err(message) = prepared {
            let _ = writeln!(err, "{message}");
            let mut writer = &stream;
            let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &1i32.to_le_bytes());
            return;
        }
        // getopt follows the client's environment, not the daemon's (the daemon inherited
        // the environment of whichever client started it).
        crate::zpool::set_posixly_correct(Some(
            flags & protocol::REQUEST_FLAG_POSIXLY_CORRECT != 0,
        ));
        let mut code = match args[0].as_str() {
            "zpool" => crate::zpool::run(&args[1..], &mut out, &mut err),
            "zfs" => {
                let input: Box<dyn std::io::Read> = match input {
                    Some(file) => Box::new(protocol::ClientInput {
                        stream: &stream,
                        file,
                    }),
                    None => Box::new(protocol::RemoteStdin { stream: &stream }),
                };
                let io = crate::zfs::CommandIo {
                    input,
                    stdin_is_terminal: flags & protocol::REQUEST_FLAG_STDIN_TERMINAL != 0,
                    stdout_is_terminal: flags & protocol::REQUEST_FLAG_STDOUT_TERMINAL != 0,
                };
                crate::zfs::run_io(&args[1..], io, &mut out, &mut err)
            }
            "zinject" => crate::zinject::run(&args[1..], &mut out, &mut err),
            "advise" => crate::advise::run(&args[1..], &mut out, &mut err),
            "tunable" => super::tunable::run(&args[1..], &mut out, &mut err),
            "arcstats" => {
                let _ = out.write_all(arc_stats_text().as_bytes());
                0
            }
            "__stop" => {
                // The client waits for the lifetime lock, not for this reply: it goes
                // with the process.
                shutdown("zetta daemon --stop");
            }
            other => {
                let _ = writeln!(err, "unknown request '{other}'");
                2
            }
        };
        if super::mounts::changes_mounts(&args) {
            let mut messages = Vec::new();
            super::mounts::after(&args, &mut messages);
            // Volumes created, destroyed, renamed, imported or exported: their sockets.
            super::nbd::reconcile();
            // A mount the command called for failed: the command failed (OpenZFS exits
            // 1 after `zfs create`/`zpool create` whose mount fails). Not `zfs set` or
            // `zfs inherit`: libzfs's changelist_postfix prints a failed remount and
            // counts it no error, so the property is set and the command exits 0.
            let changes_a_property = args[0] == "zfs"
                && matches!(args.get(1).map(String::as_str), Some("set" | "inherit"));
            if !messages.is_empty() && code == 0 && !changes_a_property {
                code = 1;
            }
            for message in messages {
                let _ = writeln!(err, "{message}");
            }
        }
        code
    };
    let mut writer = &stream;
    let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &code.to_le_bytes());
}

/// Stops background scans and commits every held pool.
fn stop() {
    let Some(registry) = registry::get() else {
        return;
    };
    for pool in registry.all() {
        let guid = pool.read().guid.0;
        if let Some(scan) = registry.scan(guid) {
            scan.cancel
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let mut spa = pool.write();
        if let Err(e) = spa.sync() {
            log::log(
                Level::Error,
                &format!(
                    "zetta daemon: pool '{}': final commit failed: {}",
                    spa.name,
                    crate::zpool::pool::spa_error_text(&e)
                ),
            );
        }
    }
}

/// The ARC statistics of every held pool, summed, in the kstat layout tools read
/// (`/proc/spl/kstat/zfs/arcstats` on Linux with OpenZFS).
fn arc_stats_text() -> String {
    arc_stats().to_kstat_text()
}

/// The ARC counters of every held pool, summed (also the metrics' `node_zfs_arc_*`).
pub(crate) fn arc_stats() -> zetta_arc::ArcStats {
    // One ARC for every pool of the daemon (`registry::enable`).
    if let Some(mut stats) = zetta::zio::arc::process_wide_stats() {
        stats.c_min_bytes = zetta::tunables::arc_c_min();
        stats.c_max_bytes = zetta::tunables::arc_c_max();
        return stats;
    }
    let mut total = zetta_arc::ArcStats::default();
    if let Some(registry) = registry::get() {
        for pool in registry.all() {
            total.accumulate(&pool.read().zio.arc.stats());
        }
    }
    total
}

/// The environment variables that name paths the daemon opens after it started.
const PATH_VARIABLES: [&str; 5] = [
    "ZETTA_RUN_DIR",
    "ZETTA_CACHE_FILE",
    "ZETTA_ZVOL_DIR",
    "ZETTA_ZED_DIR",
    "ZETTA_COMPATIBILITY_D",
];

/// Works from `/`, as daemons do: a daemon started from inside a mounted filesystem would
/// otherwise hold it busy for its whole life (`zfs unmount` and `zpool export` then fail
/// with "target is busy"). Device paths never depend on it (they must be absolute, as in
/// OpenZFS). Stays put only when one of the paths it opens later was given relative.
fn leave_the_start_directory() {
    let relative = PATH_VARIABLES.iter().any(|name| {
        std::env::var_os(name).is_some_and(|value| !std::path::Path::new(&value).is_absolute())
    });
    if !relative {
        let _ = std::env::set_current_dir("/");
    }
}
