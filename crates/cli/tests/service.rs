//! The daemon as a system service (issue 19, "A real service"): `zetta install-service`
//! writes the systemd unit, systemd's own `systemd-analyze verify` accepts it, and its
//! ExecStart line, run as systemd runs it (a foreground child stopped by the unit's
//! KillSignal), imports the cache file's pools, mounts them, and stops clean: at the next
//! start everything written before the signal is back. The stock zedlets it installs
//! mail a scrub's end through the mailer `zed.rc` names, as ZED's do.
//!
//! Why: the issue asks for systemd units installed by a documented command; before
//! session 18 the README spoke of "the systemd unit" and none existed. This machine's PID 1
//! is not systemd, so the test does what the unit tells systemd to do.

use std::process::{Command, Stdio};

mod common;

use common::{wait_for, Lab};

fn mounted(path: &str) -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(path))
}

/// The value of `key=` in the unit's text.
fn unit_value<'a>(unit: &'a str, key: &str) -> &'a str {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in the unit:\n{unit}"))
}

#[test]
fn the_unit_starts_imports_mounts_and_stops_clean() {
    let lab = Lab::new();
    let units = lab.path("units");
    let zetta = env!("CARGO_BIN_EXE_zetta");
    let zed_dir = lab.path("zed.d");
    let out = Command::new(zetta)
        .args(["install-service", &units])
        .env("ZETTA_ZED_DIR", &zed_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let path = format!("{units}/zetta.service");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!("{path}\n")),
        "{out:?}"
    );
    let unit = std::fs::read_to_string(&path).unwrap();
    for zedlet in [
        "zed.rc",
        "zed-functions.sh",
        "scrub_finish-notify.sh",
        "resilver_finish-notify.sh",
        "statechange-notify.sh",
    ] {
        assert!(
            std::path::Path::new(&format!("{zed_dir}/{zedlet}")).is_file(),
            "{zedlet} not installed: {out:?}"
        );
    }
    // The admin's zed.rc: mail through a recording mailer, every scan reported.
    let mail = lab.path("mail");
    let mailer = lab.path("mailer.sh");
    std::fs::write(
        &mailer,
        format!(
            "#!/bin/sh\n{{ echo \"subject: $1\"; cat; }} > {mail}.tmp && mv {mail}.tmp {mail}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&mailer, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        format!("{zed_dir}/zed.rc"),
        format!(
            "ZED_EMAIL_ADDR=root\nZED_EMAIL_PROG={mailer}\nZED_EMAIL_OPTS=\"'@SUBJECT@'\"\nZED_NOTIFY_VERBOSE=1\n"
        ),
    )
    .unwrap();

    // systemd's own checker (from the systemd package, installed by scripts/setup.sh);
    // `--man=no`: the Documentation= pages are where `install-links` puts them, not here.
    let verify = Command::new("systemd-analyze")
        .args(["verify", "--man=no", &path])
        .output()
        .expect("systemd-analyze (package systemd) is installed by scripts/setup.sh");
    assert!(
        verify.status.success() && verify.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert_eq!(unit_value(&unit, "KillSignal"), "SIGTERM");
    assert_eq!(unit_value(&unit, "WantedBy"), "multi-user.target");

    // A unit someone else wrote is never replaced.
    let foreign = lab.path("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(format!("{foreign}/zetta.service"), "[Unit]\n").unwrap();
    let out = Command::new(zetta)
        .args(["install-service", &foreign])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(format!("{foreign}/zetta.service")).unwrap(),
        "[Unit]\n"
    );

    // A pool in the lab's cache file, then no daemon: as at boot.
    let disk = lab.disk("disk", 256 << 20);
    let mnt = lab.path("mnt");
    let out = lab.zpool(&["create", "-m", &mnt, "tank", &disk]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    lab.stop_daemon();
    assert!(!mounted(&mnt));

    let exec: Vec<&str> = unit_value(&unit, "ExecStart").split(' ').collect();
    let start = || {
        let mut command = Command::new(exec[0]);
        command
            .args(&exec[1..])
            .env("ZETTA_CACHE_FILE", lab.path("zpool.cache"))
            .env("ZETTA_RUN_DIR", lab.path("run"))
            .env("ZETTA_ZVOL_DIR", lab.path("dev/zvol"))
            .env("ZETTA_ZED_DIR", &zed_dir)
            .env_remove("ZETTA_MOUNT")
            .env_remove("ZETTA_DIRECT")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        lab.spawn(&mut command)
    };
    let file = format!("{mnt}/written-before-stop");
    let data = "not fsync'd before the service stopped\n".repeat(500);
    for round in 0..2 {
        let mut daemon = start();
        assert!(
            wait_for(|| mounted(&mnt)),
            "round {round}: the service did not import and mount tank at {mnt}"
        );
        if round == 0 {
            std::fs::write(&file, &data).unwrap();
            // The stock scrub_finish zedlet mails the end of a scrub with its status.
            let out = lab.zpool(&["scrub", "-w", "tank"]);
            assert_eq!(out.code, 0, "{}", out.stderr);
            assert!(
                wait_for(|| std::path::Path::new(&mail).exists()),
                "no mail from scrub_finish-notify.sh"
            );
            let text = std::fs::read_to_string(&mail).unwrap();
            assert!(
                text.starts_with("subject: ZFS scrub finished on tank\n")
                    && text.contains("  pool: tank")
                    && text.contains("errors: No known data errors"),
                "{text}"
            );
        } else {
            assert_eq!(
                std::fs::read_to_string(&file).unwrap_or_default(),
                data,
                "written before the stop, lost"
            );
        }
        // systemctl stop: KillSignal to the main process (KillMode=mixed).
        let killed = Command::new("kill")
            .args(["-TERM", &daemon.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = daemon.wait().unwrap();
        assert_eq!(status.code(), Some(0), "round {round}: {status:?}");
        assert!(!mounted(&mnt), "round {round}: a stale mount at {mnt}");
    }
}
