//! The daemon as an outsider meets it (issue 21): stopped by a signal, left by a client
//! that went away, holding a pool whose device vanished, and living in a run directory
//! that someone else may have prepared. Each test has its own lab, cache file and daemon.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{Lab, Output};

/// Generous bound for anything a loaded 2-core machine has to finish.
const PATIENCE: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(100);

/// Polls `done` until it holds or `PATIENCE` runs out; returns whether it held.
fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if done() {
            return true;
        }
        std::thread::sleep(POLL);
    }
    done()
}

fn daemon_pid(lab: &Lab) -> u32 {
    std::fs::read_to_string(lab.dir.join("run").join("zetta.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether the process is gone (a zombie nobody reaped yet counts as gone).
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn mounted(path: &str) -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(path))
}

fn ok(out: Output, what: &str) -> String {
    assert_eq!(out.code, 0, "{what}: {}{}", out.stdout, out.stderr);
    out.stdout
}

/// A lab command whose daemon serves no mounts (the tests about commands).
fn no_mount(lab: &Lab, program: &str, args: &[&str]) -> Output {
    let mut command = lab.command(program);
    command.args(args).env("ZETTA_MOUNT", "0");
    lab.run(command)
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} {pid}");
}

// ---- item 11: SIGTERM / SIGINT ----

// Why: SIGTERM or SIGINT to the daemon acted as a power cut: writes of the last seconds
// (not fsync'd) were lost and the mounts were left dead. They must stop the daemon as
// `zetta daemon --stop` does: unmount, commit every pool, exit 0.
#[test]
fn sigterm_and_sigint_commit_and_unmount() {
    let lab = Lab::new();
    let disk = lab.disk("disk", 512 << 20);
    let mnt = lab.path("mnt");
    ok(
        lab.zpool(&["create", "-m", &mnt, "tank", &disk]),
        "zpool create",
    );
    for (round, name) in ["TERM", "INT"].iter().enumerate() {
        // Round 0: the daemon a command started (detached); round 1: one run in the
        // foreground as this test's child, so that its exit status can be seen.
        let mut foreground = None;
        if round == 1 {
            lab.stop_daemon();
            let mut command = Command::new(env!("CARGO_BIN_EXE_zetta"));
            command
                .arg("daemon")
                .env("ZETTA_CACHE_FILE", lab.path("zpool.cache"))
                .env("ZETTA_RUN_DIR", lab.path("run"))
                .env_remove("ZETTA_MOUNT")
                .env_remove("ZETTA_DIRECT")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            foreground = Some(lab.spawn(&mut command));
        }
        assert!(
            wait_for(|| mounted(&mnt)),
            "round {round}: {mnt} not mounted"
        );
        let file = format!("{mnt}/file{round}");
        let data = format!("written without fsync before SIG{name}\n").repeat(1000);
        // No fsync: the data sits in the kernel's cache and the open txg.
        std::fs::write(&file, &data).unwrap();
        let pid = match &foreground {
            Some(child) => child.id(),
            None => daemon_pid(&lab),
        };
        signal(pid, name);
        match foreground.take() {
            Some(mut child) => {
                let status = child.wait().unwrap();
                assert_eq!(status.code(), Some(0), "SIG{name}: {status:?}");
            }
            None => assert!(
                wait_for(|| process_gone(pid)),
                "the daemon did not stop on SIG{name}"
            ),
        }
        assert!(
            !mounted(&mnt),
            "SIG{name} left a stale mount at {mnt} in /proc/mounts"
        );
        // Any command starts a new daemon, which imports and mounts the pool again.
        ok(lab.zpool(&["list", "tank"]), "zpool list after the signal");
        assert!(wait_for(|| mounted(&mnt)), "{mnt} not mounted again");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap_or_default(),
            data,
            "data written before SIG{name} was lost"
        );
    }
    lab.stop_daemon();
    assert!(wait_for(|| !mounted(&mnt)), "--stop left {mnt} mounted");
}

/// Record `index` of `sigterm_while_a_writer_is_writing`: 64 KiB that name their index.
fn record(index: u64) -> Vec<u8> {
    let line = format!("record {index:08} written before the signal\n");
    line.as_bytes()
        .iter()
        .copied()
        .cycle()
        .take(64 << 10)
        .collect()
}

// Why: the "Done when": SIGTERM of the daemon *during* writes loses nothing
// written before it (no fsync) and leaves no stale mount. `sigterm_and_sigint_commit_and_
// unmount` signals after the writer closed its file; here a writer holds the file open and
// is still writing when the signal comes, so the mount is busy (detached lazily) and the
// kernel may hold written pages the daemon has not seen yet.
#[test]
fn sigterm_while_a_writer_is_writing() {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let lab = Lab::new();
    let disk = lab.disk("disk", 512 << 20);
    let mnt = lab.path("mnt");
    ok(
        lab.zpool(&["create", "-m", &mnt, "tank", &disk]),
        "zpool create",
    );
    assert!(wait_for(|| mounted(&mnt)), "{mnt} not mounted");
    let path = format!("{mnt}/stream");
    let acknowledged = Arc::new(AtomicU64::new(0));
    let writer = {
        let acknowledged = Arc::clone(&acknowledged);
        let path = path.clone();
        std::thread::spawn(move || {
            let Ok(mut file) = std::fs::File::create(&path) else {
                return;
            };
            for index in 0..4096u64 {
                if file.write_all(&record(index)).is_err() {
                    return;
                }
                acknowledged.store(index + 1, Ordering::SeqCst);
            }
        })
    };
    assert!(
        wait_for(|| acknowledged.load(Ordering::SeqCst) >= 64),
        "the writer did not get going"
    );
    let pid = daemon_pid(&lab);
    let before_signal = acknowledged.load(Ordering::SeqCst);
    signal(pid, "TERM");
    assert!(
        wait_for(|| process_gone(pid)),
        "the daemon did not stop on SIGTERM"
    );
    let _ = writer.join();
    assert!(
        !mounted(&mnt),
        "SIGTERM left a stale mount at {mnt} in /proc/mounts"
    );
    ok(lab.zpool(&["list", "tank"]), "zpool list after the signal");
    assert!(wait_for(|| mounted(&mnt)), "{mnt} not mounted again");
    let data = std::fs::read(&path).unwrap_or_default();
    let whole_records = data.len() as u64 / (64 << 10);
    assert!(
        whole_records >= before_signal,
        "{before_signal} records were written before SIGTERM, {whole_records} survived"
    );
    for index in 0..whole_records {
        let start = (index * (64 << 10)) as usize;
        assert!(
            data[start..start + (64 << 10)] == record(index)[..],
            "record {index} is damaged"
        );
    }
    lab.stop_daemon();
}

// ---- item 9: interval commands ----

/// Starts `zpool ARGS` as a child and waits for its first output.
fn start_interval(lab: &Lab, args: &[&str]) -> Child {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    let mut child = lab.spawn(&mut command);
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    use std::io::Read;
    assert_eq!(
        stdout.read(&mut byte).unwrap(),
        1,
        "zpool {args:?} printed nothing"
    );
    // Keep reading in the background so the command never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
    });
    child
}

// Why: an interrupted interval command (`zpool iostat p 1`, `zpool status p 1`, ^C) kept
// running inside the daemon: one more thread per command, each taking the pool's lock
// every second, forever. The command must end when its client goes away.
#[test]
fn interval_commands_end_with_their_client() {
    let lab = Lab::new();
    let disk = lab.disk("disk", 256 << 20);
    ok(
        no_mount(&lab, "zpool", &["create", "tank", &disk]),
        "create",
    );
    // Whatever a first interval command sets up for good exists before the baseline.
    ok(
        no_mount(&lab, "zpool", &["iostat", "tank", "1", "2"]),
        "iostat 1 2",
    );
    ok(
        no_mount(&lab, "zpool", &["status", "tank", "1", "2"]),
        "status 1 2",
    );
    let pid = daemon_pid(&lab);
    // The baseline: the fewest threads seen over a moment of quiet.
    let mut baseline = threads(pid);
    for _ in 0..20 {
        std::thread::sleep(POLL);
        baseline = baseline.min(threads(pid));
    }
    let mut children = vec![
        start_interval(&lab, &["iostat", "tank", "1"]),
        start_interval(&lab, &["status", "tank", "1"]),
        start_interval(&lab, &["list", "tank", "1"]),
    ];
    for child in &mut children {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    assert!(
        wait_for(|| threads(pid) <= baseline),
        "the daemon kept {} threads after its interval commands' clients were killed (baseline {baseline})",
        threads(pid)
    );
    // The daemon still answers.
    ok(no_mount(&lab, "zpool", &["list", "tank"]), "list");
}

// ---- item 7: a pool with a missing device ----

// Why: one pool whose only device was moved while the daemon was stopped hid every
// pool: `zpool list`, `zpool status` and `status -x` printed only "cannot open 'gone'"
// and exited 1, and `zpool export gone` / `zpool destroy -f gone` failed. OpenZFS lists
// it (FAULTED health in `zpool list`, UNAVAIL in `zpool status`) beside the healthy ones
// and lets it be exported or destroyed.
#[test]
fn a_pool_with_a_missing_device_does_not_hide_the_others() {
    let lab = Lab::new();
    let good = lab.disk("good", 256 << 20);
    let gone = lab.disk("gone", 256 << 20);
    let gone2 = lab.disk("gone2", 256 << 20);
    ok(
        no_mount(&lab, "zpool", &["create", "good", &good]),
        "create good",
    );
    ok(
        no_mount(&lab, "zpool", &["create", "gone", &gone]),
        "create gone",
    );
    ok(
        no_mount(&lab, "zpool", &["create", "gone2", &gone2]),
        "create gone2",
    );
    lab.stop_daemon();
    std::fs::rename(&gone, lab.path("gone.moved")).unwrap();
    std::fs::rename(&gone2, lab.path("gone2.moved")).unwrap();

    let list = ok(no_mount(&lab, "zpool", &["list"]), "zpool list");
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 4, "{list}");
    assert!(lines[0].starts_with("NAME "), "{list}");
    assert!(lines[1].starts_with("gone "), "{list}");
    let columns: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        columns,
        ["gone", "-", "-", "-", "-", "-", "-", "-", "-", "FAULTED", "-"],
        "{list}"
    );
    assert!(lines[2].starts_with("gone2 "), "{list}");
    assert!(
        lines[3].starts_with("good ") && lines[3].contains("ONLINE"),
        "{list}"
    );
    assert_eq!(
        ok(
            no_mount(&lab, "zpool", &["list", "-H", "-o", "name,health"]),
            "list -H"
        ),
        "gone\tFAULTED\ngone2\tFAULTED\ngood\tONLINE\n"
    );

    assert_eq!(
        ok(
            no_mount(&lab, "zpool", &["get", "-H", "-o", "name,value", "health"]),
            "get health"
        ),
        "gone\tFAULTED\ngone2\tFAULTED\ngood\tONLINE\n"
    );
    assert_eq!(
        ok(
            no_mount(&lab, "zfs", &["list", "-H", "-o", "name"]),
            "zfs list"
        ),
        "good\n"
    );
    let status = ok(no_mount(&lab, "zpool", &["status"]), "zpool status");
    let expected = "  pool: gone\n state: UNAVAIL\n\
         status: One or more devices could not be opened.  There are insufficient\n\
         \treplicas for the pool to continue functioning.\n\
         action: Attach the missing device and online it using 'zpool online'.\n   \
         see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-3C\n";
    assert!(status.starts_with(expected), "{status}");
    let row = status
        .lines()
        .find(|l| l.split_whitespace().next() == Some(gone.as_str()))
        .unwrap_or_else(|| panic!("no row for {gone}: {status}"));
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        fields,
        [gone.as_str(), "UNAVAIL", "0", "0", "0", "cannot", "open"]
    );
    assert!(
        status.contains("\tgone   ")
            && status.contains("  UNAVAIL      0     0     0  insufficient replicas\n"),
        "{status}"
    );
    assert!(
        status.contains("  pool: good\n state: ONLINE\n"),
        "{status}"
    );

    let unhealthy = ok(no_mount(&lab, "zpool", &["status", "-x"]), "status -x");
    assert!(unhealthy.contains("  pool: gone\n"), "{unhealthy}");
    assert!(!unhealthy.contains("  pool: good\n"), "{unhealthy}");
    ok(no_mount(&lab, "zpool", &["status", "gone"]), "status gone");

    // Export and destroy forget it (and only it).
    ok(no_mount(&lab, "zpool", &["export", "gone"]), "export gone");
    ok(
        no_mount(&lab, "zpool", &["destroy", "-f", "gone2"]),
        "destroy -f gone2",
    );
    assert_eq!(
        ok(
            no_mount(&lab, "zpool", &["list", "-H", "-o", "name"]),
            "list"
        ),
        "good\n"
    );
    let cache = std::fs::read_to_string(lab.path("zpool.cache")).unwrap();
    assert!(!cache.contains("gone"), "{cache}");
    // Once back, the exported pool imports as any exported pool does.
    std::fs::rename(lab.path("gone.moved"), &gone).unwrap();
    let dir = lab.dir.to_string_lossy().into_owned();
    ok(
        no_mount(&lab, "zpool", &["import", "-d", &dir, "-f", "gone"]),
        "import gone",
    );
    assert!(ok(no_mount(&lab, "zpool", &["status", "gone"]), "status").contains("ONLINE"));
}

// Why: a vdev path holding a tab was split in two by the tab-separated cache file, so
// the pool could not be opened again once the daemon restarted.
#[test]
fn a_vdev_path_with_a_tab_survives_the_cache_file() {
    let lab = Lab::new();
    let disk = lab.disk("tab\there", 256 << 20);
    ok(
        no_mount(&lab, "zpool", &["create", "tabby", &disk]),
        "create",
    );
    lab.stop_daemon();
    let status = ok(no_mount(&lab, "zpool", &["status", "tabby"]), "status");
    assert!(status.contains(" state: ONLINE\n"), "{status}");
    assert!(status.contains(&disk), "{status}");
}

// ---- item 4: the run directory and the socket's peer ----

/// A command with the run directory beside the cache file (`<cache>.run`), as a user
/// who sets only `ZETTA_CACHE_FILE` gets.
fn beside_cache(lab: &Lab, args: &[&str]) -> Output {
    let mut command = lab.command("zpool");
    command
        .args(args)
        .env_remove("ZETTA_RUN_DIR")
        .env("ZETTA_CACHE_FILE", lab.path("x.cache"))
        .env("ZETTA_MOUNT", "0");
    lab.run(command)
}

fn chown_nobody(path: &str) {
    let status = Command::new("chown")
        .args(["-h", "65534:65534", path])
        .status()
        .unwrap();
    assert!(status.success());
}

// Why: the run directory beside a cache file was created or reused without looking at
// it: a local user who pre-created `/tmp/x.cache.run` (a symlink, a directory of their
// own, or one anyone can write) could make root's daemon truncate files through planted
// symlinks and answer root's commands in its place. Such a directory must be refused,
// with nothing written.
#[test]
fn an_untrusted_run_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new();
    let run = lab.path("x.cache.run");
    let victim = lab.path("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let plant = |dir: &str| {
        for name in ["zetta.log", "zetta.lock", "zetta.pid"] {
            std::os::unix::fs::symlink(&victim, format!("{dir}/{name}")).unwrap();
        }
    };

    // A symbolic link to a directory of someone else's choosing.
    let elsewhere = lab.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &run).unwrap();
    let out = beside_cache(&lab, &["list"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!("cannot use run directory '{run}': it is a symbolic link\n")
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    std::fs::remove_file(&run).unwrap();

    // Owned by another user (nobody), with symlinks to the victim planted in it.
    std::fs::create_dir(&run).unwrap();
    plant(&run);
    chown_nobody(&run);
    let out = beside_cache(&lab, &["list"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!("cannot use run directory '{run}': owned by uid 65534, not by uid 0\n")
    );
    let mut stop = Command::new(env!("CARGO_BIN_EXE_zetta"));
    stop.args(["daemon", "--stop"])
        .env("ZETTA_CACHE_FILE", lab.path("x.cache"))
        .env_remove("ZETTA_RUN_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let stopped = lab.run(stop);
    assert_eq!(stopped.code, 1, "daemon --stop: {}", stopped.stderr);
    assert!(
        stopped.stderr.contains("owned by uid 65534"),
        "{}",
        stopped.stderr
    );
    std::fs::remove_dir_all(&run).unwrap();

    // Writable by everyone.
    std::fs::create_dir(&run).unwrap();
    plant(&run);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = beside_cache(&lab, &["list"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!("cannot use run directory '{run}': writable by other users (mode 0777)\n")
    );
    std::fs::remove_dir_all(&run).unwrap();

    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!std::path::Path::new(&lab.path("x.cache")).exists());

    // With nothing there, the directory is made (writable by its owner only) and works.
    ok(
        beside_cache(&lab, &["list"]),
        "list with a fresh run directory",
    );
    let meta = std::fs::symlink_metadata(&run).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
    let mut stop = Command::new(env!("CARGO_BIN_EXE_zetta"));
    stop.args(["daemon", "--stop"])
        .env("ZETTA_CACHE_FILE", lab.path("x.cache"))
        .env_remove("ZETTA_RUN_DIR");
    assert_eq!(lab.run(stop).code, 0);
}

/// The zetta binary at a path nobody can reach (the build directory may sit under a
/// home directory only root may enter): a hard link, or a copy, in the lab.
fn binary_for_nobody(lab: &Lab) -> String {
    let path = lab.path("zetta-for-nobody");
    if !std::path::Path::new(&path).exists()
        && std::fs::hard_link(env!("CARGO_BIN_EXE_zetta"), &path).is_err()
    {
        std::fs::copy(env!("CARGO_BIN_EXE_zetta"), &path).unwrap();
    }
    path
}

/// `zetta daemon` run as nobody, in a run directory of nobody's own, serving no pools.
fn daemon_as_nobody(lab: &Lab, run: &str) -> Child {
    std::fs::create_dir(run).unwrap();
    chown_nobody(run);
    let binary = binary_for_nobody(lab);
    let mut command = Command::new("setpriv");
    command
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &binary,
            "daemon",
        ])
        .env("ZETTA_RUN_DIR", run)
        .env("ZETTA_CACHE_FILE", format!("{run}/zpool.cache"))
        .env("ZETTA_MOUNT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = lab.spawn(&mut command);
    let socket = format!("{run}/zetta.sock");
    assert!(
        wait_for(|| std::path::Path::new(&socket).exists()),
        "nobody's daemon did not start"
    );
    child
}

// Why: neither end of the socket looked at who was at the other: a client would obey
// a daemon run by another user (reached through a planted socket), and the daemon
// would serve any user who reached its socket. Both now check SO_PEERCRED.
#[test]
fn each_end_of_the_socket_checks_the_other_user() {
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new();
    let nobody_run = lab.path("nobody-run");
    let mut fake = daemon_as_nobody(&lab, &nobody_run);

    // Root's client, in a run directory of its own whose socket leads to nobody's daemon.
    let run = lab.path("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(
        format!("{nobody_run}/zetta.sock"),
        format!("{run}/zetta.sock"),
    )
    .unwrap();
    let out = no_mount(&lab, "zpool", &["list"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!("refusing the zetta daemon on '{run}/zetta.sock': it runs as uid 65534, not as uid 0 or root\n")
    );
    fake.kill().unwrap();
    fake.wait().unwrap();
    std::fs::remove_file(format!("{run}/zetta.sock")).unwrap();

    // Root's daemon serves nobody too (issue 19, `zfs allow`), with nobody's rights:
    // reading works, changing a pool is refused with OpenZFS's words.
    ok(no_mount(&lab, "zpool", &["list"]), "root's list");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o711)).unwrap();
    let binary = binary_for_nobody(&lab);
    let as_nobody = |args: &[&str]| {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", &binary])
            .args(args)
            .env("ZETTA_RUN_DIR", &run)
            .env("ZETTA_CACHE_FILE", lab.path("zpool.cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        lab.run(command)
    };
    let out = as_nobody(&["zpool", "list"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = as_nobody(&["zpool", "destroy", "tank"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr, "cannot destroy 'tank': permission denied\n");
}

/// `zetta daemon` started from `binary` for this lab (no mounts), and its pid once its
/// socket answers.
fn daemon_from(lab: &Lab, binary: &str) -> Child {
    let mut command = Command::new(binary);
    command
        .arg("daemon")
        .env("ZETTA_RUN_DIR", lab.dir.join("run"))
        .env("ZETTA_CACHE_FILE", lab.dir.join("zpool.cache"))
        .env("ZETTA_MOUNT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // A file just written may be ETXTBSY for a moment: another test thread's fork holds
    // its write descriptor until that child execs.
    let mut tries = 0;
    let child = loop {
        let spawned = {
            let _guard = common::DEVICES.read().unwrap_or_else(|e| e.into_inner());
            command.spawn()
        };
        match spawned {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(POLL);
            }
            spawned => break spawned.unwrap(),
        }
    };
    let socket = lab.dir.join("run").join("zetta.sock");
    assert!(
        wait_for(|| std::os::unix::net::UnixStream::connect(&socket).is_ok()),
        "the daemon from {binary} did not start"
    );
    child
}

// Why: the client talked to whatever daemon answered on the socket. After an upgrade or a
// rebuild the old daemon went on serving every command with its old code, writing pools in
// the old on-disk format (session 12 found a pool made "with format 8 code" at format 6).
// A daemon of another build is now refused with what to do; a copy of the same build is not.
#[test]
fn a_daemon_of_another_build_is_refused_until_stopped() {
    let lab = Lab::new();
    std::fs::create_dir(lab.dir.join("run")).unwrap();
    // Another build: the same program with one more byte (an ELF runs with trailing bytes).
    let other = lab.path("zetta-other-build");
    let mut bytes = std::fs::read(env!("CARGO_BIN_EXE_zetta")).unwrap();
    bytes.push(0);
    // Written while no lab command forks (see `common::DEVICES`).
    {
        let _guard = common::DEVICES.write().unwrap_or_else(|e| e.into_inner());
        std::fs::write(&other, &bytes).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut old = daemon_from(&lab, &other);
    let out = no_mount(&lab, "zpool", &["list"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "the zetta daemon (pid {}) runs another build of zetta ('{other}'); stop it with \
             'zetta daemon --stop' (it commits its pools and unmounts their filesystems), then \
             run the command again\n",
            old.id()
        )
    );
    // What the message says works, and then the command does.
    lab.stop_daemon();
    assert!(wait_for(|| old.try_wait().unwrap().is_some()), "old daemon");
    assert_eq!(
        ok(no_mount(&lab, "zpool", &["list"]), "list"),
        "no pools available\n"
    );
    lab.stop_daemon();

    // The same bytes under another name (a copy, a reinstall) are the same build.
    let copy = lab.path("zetta-copy");
    {
        let _guard = common::DEVICES.write().unwrap_or_else(|e| e.into_inner());
        std::fs::copy(env!("CARGO_BIN_EXE_zetta"), &copy).unwrap();
    }
    let mut same = daemon_from(&lab, &copy);
    assert_eq!(
        ok(no_mount(&lab, "zpool", &["list"]), "list"),
        "no pools available\n"
    );
    lab.stop_daemon();
    assert!(
        wait_for(|| same.try_wait().unwrap().is_some()),
        "copied daemon"
    );
}

/// A daemon started by a command run from inside some mounted filesystem (a USB disk, another
/// pool's mount) must not keep it busy for its whole life: it works from `/` as daemons do.
/// Before, the daemon kept its starter's directory and `umount` of that filesystem failed
/// with "target is busy" until the daemon was stopped.
#[test]
fn the_daemon_does_not_hold_its_start_directory_busy() {
    let lab = Lab::new();
    let outside = lab.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "zetta-test", &outside])
        .status()
        .unwrap();
    assert!(status.success(), "mount -t tmpfs {outside}");
    let mut command = lab.command("zpool");
    command.arg("list").current_dir(&outside);
    let out = lab.run(command);
    let pid = daemon_pid(&lab);
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
    let umount = Command::new("umount").arg(&outside).output().unwrap();
    if !umount.status.success() {
        // Leave nothing mounted behind a failed assertion.
        lab.stop_daemon();
        let _ = Command::new("umount").arg(&outside).status();
    }
    ok(out, "zpool list from inside a tmpfs");
    assert_eq!(
        cwd.ok(),
        Some(std::path::PathBuf::from("/")),
        "daemon's cwd"
    );
    assert!(
        umount.status.success(),
        "umount of the directory the daemon was started from: {}",
        String::from_utf8_lossy(&umount.stderr)
    );
}

/// An admin's stop always wins. Session 14 saw a daemon ignore SIGTERM for minutes while
/// its stop waited on mounts that never answered (ZTS's 128-pool test); only SIGKILL ended
/// it. Here the clean stop hangs for real: the pool's disk is a file on another daemon's
/// mount, and that daemon is frozen with SIGSTOP, so the final commit waits on the disk
/// forever. A second SIGTERM must end the daemon at once, leave no mount behind, and the
/// pool must import again with what it had synced (the power-cut guarantee).
#[test]
fn a_second_sigterm_ends_a_stop_that_hangs() {
    let host = Lab::new();
    let host_disk = host.disk("disk", 1 << 30);
    let host_mnt = host.path("mnt");
    ok(
        host.zpool(&["create", "-m", &host_mnt, "host", &host_disk]),
        "zpool create host",
    );
    assert!(wait_for(|| mounted(&host_mnt)), "{host_mnt} not mounted");
    let lab = Lab::new();
    let disk = format!("{host_mnt}/disk");
    std::fs::File::create(&disk)
        .and_then(|f| f.set_len(256 << 20))
        .unwrap();
    let mnt = lab.path("mnt");
    ok(
        lab.zpool(&["create", "-m", &mnt, "tank", &disk]),
        "zpool create tank on a file of the host pool",
    );
    assert!(wait_for(|| mounted(&mnt)), "{mnt} not mounted");
    let synced = "synced before the stop\n".repeat(1000);
    std::fs::write(format!("{mnt}/synced"), &synced).unwrap();
    ok(lab.zpool(&["sync", "tank"]), "zpool sync");
    std::fs::write(format!("{mnt}/dirty"), "not synced\n".repeat(1000)).unwrap();
    let host_pid = daemon_pid(&host);
    let pid = daemon_pid(&lab);
    signal(host_pid, "STOP");
    signal(pid, "TERM");
    std::thread::sleep(Duration::from_secs(3));
    let hung = !process_gone(pid);
    if hung {
        signal(pid, "TERM");
    }
    let ended = wait_for(|| process_gone(pid));
    signal(host_pid, "CONT");
    assert!(
        hung,
        "the first SIGTERM's stop did not wait on the frozen disk"
    );
    assert!(ended, "a second SIGTERM did not end the daemon");
    assert!(wait_for(|| !mounted(&mnt)), "{mnt} left mounted");
    ok(
        lab.zpool(&["list", "tank"]),
        "zpool list after the forced stop",
    );
    assert!(wait_for(|| mounted(&mnt)), "{mnt} not mounted again");
    assert_eq!(
        std::fs::read_to_string(format!("{mnt}/synced")).unwrap_or_default(),
        synced,
        "data synced before the stop was lost"
    );
    lab.stop_daemon();
    assert!(wait_for(|| !mounted(&mnt)), "--stop left {mnt} mounted");
}
