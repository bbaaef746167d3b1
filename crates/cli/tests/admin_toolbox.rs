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
