//! `zetta daemon`: accepts commands on the socket and runs them in-process against the
//! pools it holds. One thread per connection; pool locks (see `registry`) order them.
//! `__stop` commits every held pool and exits (the pools stay imported in the cache and
//! come back with the next daemon).

use super::protocol::{self, FrameWriter, FRAME_EXIT, FRAME_STDERR, FRAME_STDOUT};
use super::{lock_path, pid_path, registry, run_dir, socket_path};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};

/// Runs the daemon in this process until stopped. Returns an exit code.
pub fn run(err: &mut dyn Write) -> i32 {
    let dir = run_dir();
    if let Err(e) = std::fs::create_dir_all(&dir) {
        let _ = writeln!(err, "cannot create '{}': {e}", dir.display());
        return 1;
    }
    // Only the owner (root) may reach the socket.
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    let socket = socket_path();
    if UnixStream::connect(&socket).is_ok() {
        let _ = writeln!(
            err,
            "zetta daemon: already running on '{}'",
            socket.display()
        );
        return 0;
    }
    // Held (never dropped) until the process exits; see `lock_path`.
    // A daemon that was just stopped may still be exiting: wait for it, briefly.
    let lifetime_lock = match std::fs::File::create(lock_path()) {
        Ok(file) => file,
        Err(e) => {
            let _ = writeln!(err, "cannot create '{}': {e}", lock_path().display());
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
            let _ = writeln!(err, "cannot listen on '{}': {e}", socket.display());
            return 1;
        }
    };
    let _ = std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600));
    let _ = std::fs::write(pid_path(), format!("{}\n", std::process::id()));
    registry::enable();
    // Pools imported before (the cache file) come back with their mounts; commands
    // that connect meanwhile wait in the listen queue.
    if let Ok(pools) = crate::zpool::pool::open_all() {
        drop(pools);
    }
    let mut messages = Vec::new();
    super::mounts::reconcile(&mut messages);
    for message in messages {
        let _ = writeln!(err, "{message}");
    }
    std::thread::spawn(txg_timer);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || serve(stream));
    }
    drop(lifetime_lock);
    0
}

fn serve(stream: UnixStream) {
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
        if let Err(message) = super::mounts::prepare(&args) {
            let _ = writeln!(err, "{message}");
            let mut writer = &stream;
            let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &1i32.to_le_bytes());
            return;
        }
        let code = match args[0].as_str() {
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
            "arcstats" => {
                let _ = out.write_all(arc_stats_text().as_bytes());
                0
            }
            "__stop" => {
                stop();
                let mut writer = &stream;
                let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &0i32.to_le_bytes());
                let _ = std::fs::remove_file(socket_path());
                let _ = std::fs::remove_file(pid_path());
                std::process::exit(0);
            }
            other => {
                let _ = writeln!(err, "unknown request '{other}'");
                2
            }
        };
        if super::mounts::changes_mounts(&args) {
            let mut messages = Vec::new();
            super::mounts::after(&args, &mut messages);
            for message in messages {
                let _ = writeln!(err, "{message}");
            }
        }
        code
    };
    let mut writer = &stream;
    let _ = protocol::write_frame(&mut writer, FRAME_EXIT, &code.to_le_bytes());
}

/// Seconds between commits of a pool with dirty data (OpenZFS `zfs_txg_timeout`).
const TXG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Commits each held pool's open txg every `TXG_TIMEOUT` when it holds changes.
fn txg_timer() {
    loop {
        std::thread::sleep(TXG_TIMEOUT);
        let Some(registry) = registry::get() else {
            return;
        };
        // One pool held at a time: an export waits for every other holder to let go.
        let guids: Vec<u64> = registry
            .all_with_guids()
            .into_iter()
            .map(|(g, _)| g)
            .collect();
        for guid in guids {
            let Some(pool) = registry.pool(guid) else {
                continue;
            };
            if pool.read().has_dirty() {
                let _ = pool.write().sync();
            }
        }
    }
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
        let _ = pool.write().sync();
    }
}

/// The ARC statistics of every held pool, summed, in the kstat layout tools read
/// (`/proc/spl/kstat/zfs/arcstats` on Linux with OpenZFS).
fn arc_stats_text() -> String {
    // One ARC for every pool of the daemon (`registry::enable`).
    if let Some(stats) = zetta::zio::arc::process_wide_stats() {
        return stats.to_kstat_text();
    }
    let mut total = zetta_arc::ArcStats::default();
    if let Some(registry) = registry::get() {
        for pool in registry.all() {
            total.accumulate(&pool.read().zio.arc.stats());
        }
    }
    total.to_kstat_text()
}
