//! The client side: forward a `zpool`/`zfs` command to the daemon, starting the daemon
//! first when none answers.

use super::protocol::{
    self, FRAME_EXIT, FRAME_STDERR, FRAME_STDIN, FRAME_STDIN_WANT, FRAME_STDOUT,
    REQUEST_FLAG_POSIXLY_CORRECT, REQUEST_FLAG_STDIN_TERMINAL, REQUEST_FLAG_STDOUT_TERMINAL,
    STDIN_CHUNK_MAX,
};
use super::{run_dir, socket_path};
use crate::zpool::pool::strerror;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a new daemon may take to answer.
const START_WAIT_STEPS: u32 = 100;
/// Stopping commits every pool first; allow it a minute.
const STOP_WAIT_STEPS: u32 = 1200;
const START_WAIT_STEP: Duration = Duration::from_millis(50);

/// Connects to the daemon, starting it if needed. The run directory is checked first
/// and the daemon's user after (see `daemon`'s module comment).
pub fn connect() -> Result<UnixStream, String> {
    super::check_run_dir(false)?;
    if let Ok(stream) = UnixStream::connect(socket_path()) {
        return trusted(stream).and_then(same_build);
    }
    start_daemon()?;
    for _ in 0..START_WAIT_STEPS {
        if let Ok(stream) = UnixStream::connect(socket_path()) {
            return trusted(stream);
        }
        std::thread::sleep(START_WAIT_STEP);
    }
    Err(format!(
        "the zetta daemon did not start (see '{}')",
        run_dir().join("zetta.log").display()
    ))
}

/// The stream, when the process behind it runs as this user or root.
fn trusted(stream: UnixStream) -> Result<UnixStream, String> {
    match super::peer_uid(&stream) {
        Ok(uid) if super::trusted_uid(uid) => Ok(stream),
        Ok(uid) => Err(format!(
            "refusing the zetta daemon on '{}': it runs as uid {uid}, not as uid {} or root",
            socket_path().display(),
            super::euid()
        )),
        Err(e) => Err(format!(
            "cannot check the zetta daemon on '{}': {}",
            socket_path().display(),
            crate::zpool::pool::strerror(&e)
        )),
    }
}

/// The stream, when the daemon behind it runs this very build of zetta. A daemon left
/// running across an upgrade or a rebuild would otherwise go on serving every command with
/// its old code (and write pools in its old format) while `zetta version` says the new one.
/// The same file (device and inode of `/proc/PID/exe`, which still resolves when the file
/// was replaced or deleted) or the same bytes (a copy, a hard link, a reinstall) count as
/// the same build. A daemon whose executable this user may not read (root's, for a
/// non-root client) is taken as it is: nothing can be compared.
fn same_build(stream: UnixStream) -> Result<UnixStream, String> {
    let Ok(cred) = super::peer_cred(&stream) else {
        return Ok(stream);
    };
    let theirs = std::path::PathBuf::from(format!("/proc/{}/exe", cred.pid));
    let ours = std::path::Path::new("/proc/self/exe");
    match executables_equal(&theirs, ours) {
        Some(false) => Err(format!(
            "the zetta daemon (pid {}) runs another build of zetta ('{}'); stop it with \
             'zetta daemon --stop' (it commits its pools and unmounts their filesystems), \
             then run the command again",
            cred.pid,
            std::fs::read_link(&theirs)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| theirs.display().to_string())
        )),
        Some(true) | None => Ok(stream),
    }
}

/// Whether two executables are the same build; `None` when either cannot be read.
fn executables_equal(a: &std::path::Path, b: &std::path::Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let (meta_a, meta_b) = (std::fs::metadata(a).ok()?, std::fs::metadata(b).ok()?);
    if (meta_a.dev(), meta_a.ino()) == (meta_b.dev(), meta_b.ino()) {
        return Some(true);
    }
    if meta_a.len() != meta_b.len() {
        return Some(false);
    }
    let (mut file_a, mut file_b) = (std::fs::File::open(a).ok()?, std::fs::File::open(b).ok()?);
    let (mut buf_a, mut buf_b) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = read_full(&mut file_a, &mut buf_a)?;
        if read_full(&mut file_b, &mut buf_b[..n])? != n || buf_a[..n] != buf_b[..n] {
            return Some(false);
        }
        if n < buf_a.len() {
            return Some(true);
        }
    }
}

/// Fills `buf` unless the file ends first; the bytes read, `None` on a read error.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> Option<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
    Some(filled)
}

fn start_daemon() -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find zetta: {}", crate::zpool::pool::strerror(&e)))?;
    super::check_run_dir(true)?;
    let log_path = run_dir().join("zetta.log");
    let log = super::open_run_file(&log_path, false, true).map_err(|e| {
        format!(
            "cannot open '{}': {}",
            log_path.display(),
            crate::zpool::pool::strerror(&e)
        )
    })?;
    let mut command = Command::new(exe);
    command
        .arg("daemon")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // SAFETY: setsid only detaches the child from our session; it runs between fork and
    // exec and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    command.spawn().map_err(|e| {
        format!(
            "cannot start the zetta daemon: {}",
            crate::zpool::pool::strerror(&e)
        )
    })?;
    Ok(())
}

/// Runs `args` (argv[0] = "zpool" or "zfs") in the daemon, relaying its output.
pub fn forward(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if !protocol::request_fits(args) {
        // strerror(E2BIG), as a shell reports a command line execve(2) refused.
        let front = args.first().map(String::as_str).unwrap_or("zetta");
        let _ = writeln!(err, "{front}: Argument list too long");
        return 1;
    }
    let stream = match connect() {
        Ok(stream) => stream,
        Err(why) => {
            let _ = writeln!(err, "{}", crate::zpool::plain_words(&why));
            return 1;
        }
    };
    let mut writer = &stream;
    if let Err(e) = protocol::write_request(&mut writer, args, terminal_flags()) {
        // A daemon that refuses this user answers and hangs up before reading the
        // request: its answer is still there to read.
        let mut reader = &stream;
        if let Ok((FRAME_STDERR, bytes)) = protocol::read_frame(&mut reader) {
            let _ = err.write_all(&bytes);
            return 1;
        }
        let _ = writeln!(
            err,
            "cannot talk to the zetta daemon: {}",
            crate::zpool::pool::strerror(&e)
        );
        return 1;
    }
    if protocol::passes_stdio(args) {
        // Whatever this process buffered for stdout goes first: the daemon writes after it.
        let _ = out.flush();
        if let Err(e) = protocol::send_stdio(&stream) {
            let _ = writeln!(
                err,
                "cannot talk to the zetta daemon: {}",
                crate::zpool::pool::strerror(&e)
            );
            return 1;
        }
    }
    let mut reader = &stream;
    let mut stdin = std::io::stdin();
    loop {
        match protocol::read_frame(&mut reader) {
            Ok((FRAME_STDOUT, bytes)) => {
                // A closed pipe (`zfs send | head`): stop, and the daemon's next write fails.
                if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
                    return 1;
                }
            }
            Ok((FRAME_STDIN_WANT, bytes)) if bytes.len() == 4 => {
                let want = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                let chunk = read_chunk(&mut stdin, want.min(STDIN_CHUNK_MAX) as usize, err);
                let mut writer = &stream;
                if protocol::write_frame(&mut writer, FRAME_STDIN, &chunk).is_err() {
                    let _ = writeln!(err, "the zetta daemon went away");
                    return 1;
                }
            }
            Ok((FRAME_STDERR, bytes)) => {
                let _ = err.write_all(&bytes);
            }
            Ok((FRAME_EXIT, bytes)) if bytes.len() == 4 => {
                return i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            }
            Ok(_) => {
                let _ = writeln!(err, "the zetta daemon sent a malformed reply");
                return 1;
            }
            Err(e) => {
                let _ = writeln!(err, "the zetta daemon went away: {}", strerror(&e));
                return 1;
            }
        }
    }
}

/// Which of this process's standard streams are terminals, and whether its environment
/// asks getopt for POSIX's order (request flags).
fn terminal_flags() -> u32 {
    // SAFETY: isatty only inspects the descriptor.
    let (stdin, stdout) = unsafe { (libc::isatty(0) == 1, libc::isatty(1) == 1) };
    let posixly_correct = std::env::var_os("POSIXLY_CORRECT").is_some();
    u32::from(stdin) * REQUEST_FLAG_STDIN_TERMINAL
        + u32::from(stdout) * REQUEST_FLAG_STDOUT_TERMINAL
        + u32::from(posixly_correct) * REQUEST_FLAG_POSIXLY_CORRECT
}

/// Up to `want` bytes of stdin (fewer only at its end); a read error ends the input.
fn read_chunk(stdin: &mut dyn Read, want: usize, err: &mut dyn Write) -> Vec<u8> {
    let mut chunk = vec![0u8; want];
    let mut filled = 0;
    while filled < want {
        match stdin.read(&mut chunk[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = writeln!(err, "cannot read standard input: {}", strerror(&e));
                break;
            }
        }
    }
    chunk.truncate(filled);
    chunk
}

/// `zetta daemon --stop`: asks a running daemon to commit its pools and exit.
pub fn stop(out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match super::check_run_dir(false) {
        Ok(true) => {}
        Ok(false) => {
            let _ = writeln!(out, "zetta daemon: not running");
            return 0;
        }
        Err(message) => {
            let _ = writeln!(err, "{message}");
            return 1;
        }
    }
    let Ok(stream) = UnixStream::connect(socket_path()) else {
        let _ = writeln!(out, "zetta daemon: not running");
        return 0;
    };
    let stream = match trusted(stream) {
        Ok(stream) => stream,
        Err(message) => {
            let _ = writeln!(err, "{message}");
            return 1;
        }
    };
    let mut writer = &stream;
    if protocol::write_request(&mut writer, &["__stop".to_string()], 0).is_err() {
        return 1;
    }
    let mut reader = &stream;
    let _ = protocol::read_frame(&mut reader);
    // Return only once the process is gone and its device locks are released: the
    // daemon's lifetime lock is free exactly then.
    let Ok(lock) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(super::lock_path())
    else {
        return 0;
    };
    for _ in 0..STOP_WAIT_STEPS {
        if lock.try_lock().is_ok() {
            break;
        }
        std::thread::sleep(START_WAIT_STEP);
    }
    0
}
