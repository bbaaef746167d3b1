//! The admin's toolbox (issue 19): the daemon's log, `zpool events`, `zpool wait`. Each test
//! has its own lab, cache file and daemon.

use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::{Lab, Output};

/// Generous bound for anything a loaded 2-core machine has to finish.
const PATIENCE: Duration = Duration::from_secs(180);
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

fn ok(out: Output, what: &str) -> String {
    assert_eq!(out.code, 0, "{what}: {}{}", out.stdout, out.stderr);
    out.stdout
}

/// A lab command whose daemon serves no mounts.
fn no_mount(lab: &Lab, program: &str, args: &[&str]) -> Output {
    let mut command = lab.command(program);
    command.args(args).env("ZETTA_MOUNT", "0");
    lab.run(command)
}

/// Whether `line` is `YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL text`.
fn is_log_line(line: &str) -> bool {
    let Some((stamp, rest)) = line.split_once(' ') else {
        return false;
    };
    let shape_ok = stamp.len() == 24
        && stamp.ends_with('Z')
        && stamp.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            19 => c == '.',
            23 => c == 'Z',
            _ => c.is_ascii_digit(),
        });
    shape_ok
        && ["INFO ", "WARN ", "ERROR "]
            .iter()
            .any(|l| rest.starts_with(l))
}

// Why: the daemon logged with bare eprintln!: no time, no level, and nothing at all about
// its start or a stop by signal, so an admin could not tell from zetta.log when or why it
// went away. Each line now carries an RFC 3339 UTC time and a level.
#[test]
fn daemon_log_lines_carry_time_and_level() {
    let lab = Lab::new();
    let disk = lab.disk("disk", 256 << 20);
    ok(
        no_mount(&lab, "zpool", &["create", "tank", &disk]),
        "create",
    );
    let pid = daemon_pid(&lab);
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(wait_for(|| process_gone(pid)), "SIGTERM did not stop it");
    let log = std::fs::read_to_string(lab.dir.join("run").join("zetta.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| is_log_line(l) && l.contains(" INFO zetta daemon: started (pid ")),
        "{log}"
    );
    assert!(
        lines.iter().any(|l| is_log_line(l)
            && l.ends_with(
                " INFO zetta daemon: stopping on SIGTERM: unmounting, committing every pool"
            )),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| is_log_line(l) && l.ends_with(" INFO zetta daemon: stopped")),
        "{log}"
    );
}

// ---- zpool events ----

fn lab_with_zinject() -> Lab {
    let lab = Lab::new();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zetta"), lab.dir.join("zinject")).unwrap();
    lab
}

/// The `-v` blocks of `zpool events -v` output: (class, the block's lines).
fn event_blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().skip(1) {
        if line.is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            if let Some(last) = blocks.last_mut() {
                last.1.push(line.to_string());
            }
        } else {
            let class = line.rsplit(' ').next().unwrap_or_default().to_string();
            blocks.push((class, Vec::new()));
        }
    }
    blocks
}

fn classes(blocks: &[(String, Vec<String>)]) -> Vec<&str> {
    blocks.iter().map(|(c, _)| c.as_str()).collect()
}

// Why: there was no `zpool events`: a checksum error found by a scrub, the scrub itself and
// the pool's import or export left no trace an admin or a ZED-like tool could read. Now the
// events carry OpenZFS's classes and payload names (`-v` as zpool_do_events_nvprint prints
// them), filter by pool, survive a daemon restart, and `-c` clears them.
#[test]
fn events_record_scrub_and_checksum_errors_with_openzfs_fields() {
    let lab = lab_with_zinject();
    let a = lab.disk("a", 256 << 20);
    let b = lab.disk("b", 256 << 20);
    ok(
        no_mount(&lab, "zpool", &["create", "tank", "mirror", &a, &b]),
        "create",
    );
    ok(
        no_mount(
            &lab,
            "zinject",
            &["-d", &b, "-e", "corrupt", "-T", "read", "-f", "100", "tank"],
        ),
        "zinject",
    );
    // A background scrub, as `zpool scrub` starts it.
    ok(no_mount(&lab, "zpool", &["scrub", "tank"]), "scrub");
    assert!(
        wait_for(|| no_mount(&lab, "zpool", &["events", "-H"])
            .stdout
            .contains("\tsysevent.fs.zfs.scrub_finish\n")),
        "no scrub_finish event"
    );
    ok(no_mount(&lab, "zinject", &["-c", "all"]), "zinject -c");
    let verbose = ok(no_mount(&lab, "zpool", &["events", "-v"]), "events -v");
    assert!(
        verbose.starts_with("TIME                           CLASS\n"),
        "{verbose}"
    );
    let blocks = event_blocks(&verbose);
    let order = classes(&blocks);
    let position = |class: &str| order.iter().position(|c| *c == class);
    let create = position("sysevent.fs.zfs.pool_create").expect("pool_create");
    let start = position("sysevent.fs.zfs.scrub_start").expect("scrub_start");
    let checksum = position("ereport.fs.zfs.checksum").expect("a checksum ereport");
    let finish = position("sysevent.fs.zfs.scrub_finish").expect("scrub_finish");
    assert!(
        create < start && start < checksum && checksum < finish,
        "{verbose}"
    );
    // The checksum ereport names the damaged side, in OpenZFS's payload names and order.
    let lines = &blocks[checksum].1;
    let names: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("        ") && !l.starts_with("         "))
        .filter_map(|l| l.trim_start().split(" = ").next())
        .collect();
    for want in [
        "class",
        "ena",
        "detector",
        "pool",
        "pool_guid",
        "pool_state",
        "pool_context",
        "pool_failmode",
        "vdev_guid",
        "vdev_type",
        "vdev_path",
        "vdev_read_errors",
        "vdev_write_errors",
        "vdev_cksum_errors",
        "parent_guid",
        "parent_type",
        "zio_err",
        "zio_offset",
        "zio_size",
        "time",
        "eid",
    ] {
        assert!(names.contains(&want), "no {want} in {lines:#?}");
    }
    assert_eq!(names.first(), Some(&"class"), "{lines:#?}");
    assert_eq!(&names[names.len() - 2..], ["time", "eid"], "{lines:#?}");
    for want in [
        "        class = \"ereport.fs.zfs.checksum\"".to_string(),
        "        detector = (embedded nvlist)".to_string(),
        "                scheme = \"zfs\"".to_string(),
        "        (end detector)".to_string(),
        "        pool = \"tank\"".to_string(),
        "        pool_failmode = \"wait\"".to_string(),
        format!("        vdev_path = \"{b}\""),
        "        vdev_type = \"file\"".to_string(),
        "        parent_type = \"mirror\"".to_string(),
        "        zio_err = 0x34".to_string(),
    ] {
        assert!(lines.contains(&want), "no {want:?} in {lines:#?}");
    }
    assert!(
        !verbose.contains(&format!("vdev_path = \"{a}\"")),
        "the good side was blamed: {verbose}"
    );
    let time = lines
        .iter()
        .find(|l| l.starts_with("        time = 0x"))
        .unwrap();
    assert_eq!(time.matches(" 0x").count(), 2, "{time:?}");
    assert!(time.ends_with(' '), "{time:?}");
    // Sysevents carry version, class, pool, pool_guid, pool_state, pool_context, time, eid.
    let finish_names: Vec<&str> = blocks[finish]
        .1
        .iter()
        .filter_map(|l| l.trim_start().split(" = ").next())
        .collect();
    assert_eq!(
        finish_names,
        [
            "version",
            "class",
            "pool",
            "pool_guid",
            "pool_state",
            "pool_context",
            "time",
            "eid"
        ]
    );
    // A pool filter: events of other pools are left out.
    let other = ok(no_mount(&lab, "zpool", &["events", "-H", "other"]), "other");
    assert_eq!(other, "");
    // -H: no header, a tab between time and class.
    let scripted = ok(no_mount(&lab, "zpool", &["events", "-H", "tank"]), "-H");
    assert_eq!(scripted.lines().count(), blocks.len(), "{scripted}");
    assert!(
        scripted.lines().all(|l| l.split('\t').count() == 2),
        "{scripted}"
    );
    // offline and online are state changes of the device (resource.fs.zfs.statechange).
    ok(no_mount(&lab, "zpool", &["offline", "tank", &b]), "offline");
    ok(no_mount(&lab, "zpool", &["online", "tank", &b]), "online");
    let changed = ok(no_mount(&lab, "zpool", &["events", "-v", "tank"]), "-v");
    let changed_blocks = event_blocks(&changed);
    let changes: Vec<&Vec<String>> = changed_blocks
        .iter()
        .filter(|(class, _)| class == "resource.fs.zfs.statechange")
        .map(|(_, lines)| lines)
        .collect();
    assert_eq!(changes.len(), 2, "{changed}");
    for (lines, now, last) in [
        (changes[0], "\"OFFLINE\" (0x2)", "\"ONLINE\" (0x7)"),
        (changes[1], "\"ONLINE\" (0x7)", "\"OFFLINE\" (0x2)"),
    ] {
        for want in [
            format!("        vdev_path = \"{b}\""),
            format!("        vdev_state = {now}"),
            format!("        vdev_laststate = {last}"),
        ] {
            assert!(lines.contains(&want), "no {want:?} in {lines:#?}");
        }
    }
    // The events survive a daemon restart.
    lab.stop_daemon();
    let again = ok(no_mount(&lab, "zpool", &["events", "-v"]), "after restart");
    let again_blocks = event_blocks(&again);
    assert_eq!(
        classes(&again_blocks)[..blocks.len()],
        classes(&blocks)[..],
        "{again}"
    );
    // Usage errors, as OpenZFS words them.
    let bad = no_mount(&lab, "zpool", &["events", "-c", "-v"]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr,
        "invalid options combined with -c\nusage:\n\tevents [-vHf [pool] | -c]\n"
    );
    let bad = no_mount(&lab, "zpool", &["events", "-x"]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr,
        "invalid option 'x'\nusage:\n\tevents [-vHf [pool] | -c]\n"
    );
    // -c clears; eids go on growing after it.
    let count = again_blocks.len();
    let cleared = ok(no_mount(&lab, "zpool", &["events", "-c"]), "-c");
    assert_eq!(cleared, format!("cleared {count} events\n"));
    assert_eq!(
        ok(no_mount(&lab, "zpool", &["events", "-H"]), "after -c"),
        ""
    );
}

// Why: `zpool events -f` must follow: print events as they come until interrupted.
#[test]
fn events_follow_prints_new_events() {
    use std::io::BufRead;
    let lab = Lab::new();
    let disk = lab.disk("disk", 256 << 20);
    ok(
        no_mount(&lab, "zpool", &["create", "tank", &disk]),
        "create",
    );
    let mut command = lab.command("zpool");
    command.args(["events", "-fH"]).env("ZETTA_MOUNT", "0");
    let mut child = lab.spawn(&mut command);
    let stdout = child.stdout.take().unwrap();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    ok(
        no_mount(&lab, "zpool", &["scrub", "-w", "tank"]),
        "scrub -w",
    );
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < PATIENCE {
        match receive.recv_timeout(POLL) {
            Ok(line) => {
                let done = line.ends_with("\tsysevent.fs.zfs.scrub_finish");
                seen.push(line);
                if done {
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter()
            .any(|l| l.ends_with("\tsysevent.fs.zfs.pool_create")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.ends_with("\tsysevent.fs.zfs.scrub_finish")),
        "-f did not follow: {seen:?}"
    );
}

// ---- zpool wait ----

// Why: there was no `zpool wait`: a script had to poll `zpool status` to know when a scrub
// ended. `zpool wait -t scrub` returns once the scrub over a few hundred MiB has finished
// (status says so right after), prints OpenZFS's rows with an interval, and refuses what
// OpenZFS refuses, in its words.
#[test]
fn wait_returns_when_the_scrub_ends() {
    let lab = Lab::new();
    let disk = lab.disk("disk", 1 << 30);
    let mnt = lab.path("mnt");
    ok(
        lab.zpool(&["create", "-m", &mnt, "-O", "compression=off", "tank", &disk]),
        "create",
    );
    assert!(wait_for(|| std::path::Path::new(&mnt).join(".").exists()));
    let out = lab.sh(&format!(
        "head -c 314572800 /dev/urandom > {mnt}/big && zpool sync tank"
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    ok(lab.zpool(&["scrub", "tank"]), "scrub");
    let waited = lab.zpool(&["wait", "-t", "scrub", "tank"]);
    assert_eq!(waited.code, 0, "{}", waited.stderr);
    assert_eq!(waited.stdout, "");
    let status = ok(lab.zpool(&["status", "tank"]), "status");
    assert!(
        status.contains("  scan: scrub repaired 0B in ") && status.contains(" with 0 errors on "),
        "the scrub had not finished when zpool wait returned:\n{status}"
    );
    // With an interval: the header of the chosen activities, then a row of bytes left.
    ok(lab.zpool(&["scrub", "tank"]), "scrub again");
    let rows = ok(
        lab.zpool(&["wait", "-t", "scrub,resilver", "tank", "1"]),
        "wait with an interval",
    );
    let mut lines = rows.lines();
    assert_eq!(lines.next(), Some("  RESILVER   SCRUB"), "{rows}");
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.len(), 2, "{rows}");
        assert_eq!(words[0], "0", "{rows}");
    }
    let status = ok(lab.zpool(&["status", "tank"]), "status");
    assert!(!status.contains("scrub in progress"), "{status}");
    // Nothing running: it returns at once; every OpenZFS activity name is known.
    ok(
        lab.zpool(&[
            "wait",
            "-t",
            "discard,free,initialize,replace,remove,resilver,scrub,trim,raidz_expand",
            "tank",
        ]),
        "wait for all",
    );
    let usage = "usage:\n\twait [-Hp] [-T d|u] [-t <activity>[,...]] <pool> [interval]\n";
    for (args, code, stderr) in [
        (
            vec!["wait", "-t", "scrub,defrag", "tank"],
            2,
            format!("invalid activity 'defrag'\n{usage}"),
        ),
        (vec!["wait"], 2, format!("missing 'pool' argument\n{usage}")),
        (
            vec!["wait", "tank", "1", "2"],
            2,
            format!("too many arguments\n{usage}"),
        ),
        (
            vec!["wait", "-n", "tank"],
            2,
            format!("invalid option 'n'\n{usage}"),
        ),
        (
            vec!["wait", "nope"],
            1,
            "cannot open 'nope': no such pool\n".to_string(),
        ),
    ] {
        let out = lab.zpool(&args);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (code, stderr.as_str()),
            "{args:?}"
        );
    }
}

// ---- zedlets ----

// Why: nothing ran on events (no ZED): an admin could not be told that a scrub finished.
// The daemon runs the zedlets of $ZETTA_ZED_DIR whose name matches the event's subclass,
// with ZED's ZEVENT_* environment.
#[test]
fn zedlet_fires_on_scrub_finish() {
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new();
    let zed_dir = lab.dir.join("zed.d");
    std::fs::create_dir(&zed_dir).unwrap();
    let zedlet = zed_dir.join("scrub_finish-record.sh");
    std::fs::write(
        &zedlet,
        "#!/bin/sh\nout=\"$ZED_ZEDLET_DIR/../fired-$ZEVENT_EID\"\nenv | grep -E '^(ZEVENT_|ZED_)' | sort > \"$out.tmp\" && mv \"$out.tmp\" \"$out\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&zedlet, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |args: &[&str]| {
        let mut command = lab.command("zpool");
        command
            .args(args)
            .env("ZETTA_MOUNT", "0")
            .env("ZETTA_ZED_DIR", &zed_dir);
        lab.run(command)
    };
    let disk = lab.disk("disk", 256 << 20);
    ok(run(&["create", "tank", &disk]), "create");
    ok(run(&["scrub", "-w", "tank"]), "scrub");
    let fired = || -> Vec<String> {
        std::fs::read_dir(&lab.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("fired-") && !n.ends_with(".tmp"))
            .collect()
    };
    assert!(wait_for(|| !fired().is_empty()), "the zedlet did not run");
    let names = fired();
    assert_eq!(names.len(), 1, "it ran for other events too: {names:?}");
    let env = std::fs::read_to_string(lab.dir.join(&names[0])).unwrap();
    for want in [
        "ZEVENT_CLASS=sysevent.fs.zfs.scrub_finish",
        "ZEVENT_SUBCLASS=scrub_finish",
        "ZEVENT_POOL=tank",
        "ZEVENT_POOL_STATE_STR=ACTIVE",
        &format!("ZED_ZEDLET_DIR={}", zed_dir.display()),
    ] {
        assert!(env.lines().any(|l| l == want), "no {want} in\n{env}");
    }
    assert!(
        env.lines()
            .any(|l| l.starts_with("ZEVENT_POOL_GUID=0x")
                && l.len() == "ZEVENT_POOL_GUID=0x".len() + 16),
        "{env}"
    );
    assert!(env.lines().any(|l| l.starts_with("ZEVENT_EID=")), "{env}");
    assert!(
        env.lines().any(|l| l.starts_with("ZEVENT_TIME_STRING=")),
        "{env}"
    );
}
