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
        if !peer_exiting(&stream) {
            return trusted(stream).and_then(same_build);
        }
        // A daemon that was killed keeps its listening socket until its last thread has
        // exited (threads in the middle of I/O take a while): the kernel still queues our
        // connection, then resets it unanswered. Wait for the socket to go, then start anew.
        drop(stream);
        if let Some(stream) = wait_until_refused() {
            return trusted(stream).and_then(same_build);
        }
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

/// Whether the process that listens behind `stream` is dying or dead: its thread-group
/// leader is a zombie (`State: Z`), being reaped (`X`), or gone. Such a process accepts
/// no more connections although the kernel still queues them.
fn peer_exiting(stream: &UnixStream) -> bool {
    let Ok(cred) = super::peer_cred(stream) else {
        return false;
    };
    if cred.pid <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{}/status", cred.pid)) {
        Ok(status) => status
            .lines()
            .find_map(|line| line.strip_prefix("State:"))
            .is_some_and(|state| matches!(state.trim_start().chars().next(), Some('Z' | 'X'))),
        Err(_) => true,
    }
}

/// Waits (up to the time a stop may take) until connecting to the socket fails (`None`),
/// or reaches a daemon that is not exiting: another client started one meanwhile.
fn wait_until_refused() -> Option<UnixStream> {
    for _ in 0..STOP_WAIT_STEPS {
        match UnixStream::connect(socket_path()) {
            Ok(stream) if peer_exiting(&stream) => std::thread::sleep(START_WAIT_STEP),
            Ok(stream) => return Some(stream),
            Err(_) => return None,
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::peer_exiting;
    use std::io::BufRead;
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::process::{Command, Stdio};
    use std::time::Duration;

    // Why: a fresh-clone CI run saw `zpool status` right after a SIGKILL of the daemon fail
    // with "the zetta daemon went away: Connection reset by peer". A killed process whose
    // leader is already a zombie keeps its listening socket while its other threads finish
    // exiting; the kernel queues a connection there and resets it unanswered. The client
    // must see such a peer as exiting (and wait for the socket to go), and a live listener
    // as not exiting. The dying peer here is made exactly so: its main thread leaves with
    // the raw exit(2) of one thread while another thread keeps the socket for a while.
    #[test]
    fn a_listener_whose_leader_is_a_zombie_counts_as_exiting() {
        let dir = std::env::temp_dir().join(format!("zetta-peer-exiting-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let live_path = dir.join("live.sock");
        let live = UnixListener::bind(&live_path).expect("bind");
        let to_live = UnixStream::connect(&live_path).expect("connect to a live listener");
        assert!(!peer_exiting(&to_live), "this very process is alive");
        drop((to_live, live));

        let dying_path = dir.join("dying.sock");
        let script = format!(
            r#"
import ctypes, os, socket, sys, threading, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind({path:?})
s.listen(8)
threading.Thread(target=lambda: (time.sleep(20), os._exit(0))).start()
print("listening", flush=True)
ctypes.CDLL(None).syscall(60, 0)
"#,
            path = dying_path.to_str().expect("utf-8 path")
        );
        let mut child = Command::new("python3")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the child's first line");
        assert_eq!(line, "listening\n");
        let status = format!("/proc/{}/status", child.id());
        let mut zombie = false;
        for _ in 0..200 {
            let text = std::fs::read_to_string(&status).unwrap_or_default();
            if text.contains("State:\tZ") {
                zombie = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        assert!(
            zombie,
            "the child's leader should be a zombie with a thread alive"
        );
        let to_dying = UnixStream::connect(&dying_path)
            .expect("the kernel still queues connections to the dying process's socket");
        assert!(peer_exiting(&to_dying));
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
