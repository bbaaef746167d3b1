//! Defects of issue 18 found by OpenZFS's test suite (ZTS `cli_root`), each reproduced
//! through the real CLI: properties on snapshots, name validation, shorthand device names,
//! mount options and the operands OpenZFS refuses.

mod common;

use common::mount_lab::MountLab;
use common::NoMountLab;

/// (exit code, stderr) of a command.
fn refused(lab: &NoMountLab, front: &str, args: &[&str]) -> (i32, String) {
    let out = lab.run(front, args);
    (out.code, out.stderr)
}

/// `zfs get -H -o value,source prop name`, as "value\tsource".
fn value_source(lab: &NoMountLab, prop: &str, name: &str) -> String {
    lab.ok("zfs", &["get", "-H", "-o", "value,source", prop, name])
        .trim_end()
        .to_string()
}

// Why: defect 3 of issue 18: `zfs set user:x=1 p/a@s` said the dataset does not exist and
// `zfs snapshot -o user:x=1` dropped the property; OpenZFS stores user properties on the
// snapshot (source local) and refuses native ones with "this property can not be modified
// for snapshots".
#[test]
fn user_properties_live_on_snapshots() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    lab.ok("zfs", &["set", "user:x=1", "tank/a@s"]);
    assert_eq!(value_source(&lab, "user:x", "tank/a@s"), "1\tlocal");
    // The filesystem does not see it.
    assert_eq!(value_source(&lab, "user:x", "tank/a"), "-\t-");

    lab.ok(
        "zfs",
        &["snapshot", "-o", "user:y=two", "-o", "user:z=3", "tank/a@t"],
    );
    assert_eq!(value_source(&lab, "user:y", "tank/a@t"), "two\tlocal");
    assert_eq!(value_source(&lab, "user:z", "tank/a@t"), "3\tlocal");
    assert_eq!(value_source(&lab, "user:x", "tank/a@t"), "-\t-");
    let all = lab.ok(
        "zfs",
        &[
            "get",
            "-H",
            "-o",
            "property,value,source",
            "all",
            "tank/a@t",
        ],
    );
    assert!(all.contains("user:y\ttwo\tlocal\n"), "{all}");

    // A user property of the filesystem is inherited from it.
    lab.ok("zfs", &["set", "user:w=fs", "tank/a"]);
    assert_eq!(
        value_source(&lab, "user:w", "tank/a@s"),
        "fs\tinherited from tank/a"
    );
    // The snapshot's own value wins; `zfs inherit` takes it away again.
    lab.ok("zfs", &["set", "user:w=snap", "tank/a@s"]);
    assert_eq!(value_source(&lab, "user:w", "tank/a@s"), "snap\tlocal");
    lab.ok("zfs", &["inherit", "user:w", "tank/a@s"]);
    assert_eq!(
        value_source(&lab, "user:w", "tank/a@s"),
        "fs\tinherited from tank/a"
    );

    // Native properties are refused, with OpenZFS's words.
    assert_eq!(
        refused(&lab, "zfs", &["set", "atime=off", "tank/a@s"]),
        (
            1,
            "cannot set property for 'tank/a@s': this property can not be modified for snapshots\n"
                .to_string()
        )
    );
    assert_eq!(
        refused(
            &lab,
            "zfs",
            &["snapshot", "-o", "compression=on", "tank/a@u"]
        ),
        (
            1,
            "cannot create snapshots : this property can not be modified for snapshots\n"
                .to_string()
        )
    );
    assert_eq!(
        refused(&lab, "zfs", &["set", "user:x=1", "tank/a@nosuch"]),
        (
            1,
            "cannot open 'tank/a@nosuch': dataset does not exist\n".to_string()
        )
    );
    let snaps = lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "snapshot", "-r", "tank"],
    );
    assert_eq!(snaps, "tank/a@s\ntank/a@t\n");

    // They follow a rename, survive an export/import and go with the snapshot.
    lab.ok("zfs", &["rename", "tank/a@t", "tank/a@t2"]);
    assert_eq!(value_source(&lab, "user:y", "tank/a@t2"), "two\tlocal");
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.inner.path(""), "tank"]);
    assert_eq!(value_source(&lab, "user:x", "tank/a@s"), "1\tlocal");
    lab.ok("zfs", &["destroy", "tank/a@t2"]);
    lab.ok("zfs", &["snapshot", "tank/a@t2"]);
    assert_eq!(value_source(&lab, "user:y", "tank/a@t2"), "-\t-");
}

// Why: defect 4 of issue 18: after `zfs destroy fs@x`, `.zfs/snapshot/x` still stat'ed
// (the kernel trusted the entry the lookup before the destroy had given it for a second);
// OpenZFS's entry goes with the snapshot at once (ENOENT), and a re-created snapshot of
// that name is found again.
#[test]
fn destroyed_snapshot_entry_no_longer_stats() {
    let lab = MountLab::new("tank/fs");
    let root = lab.mnt("fs");
    std::fs::write(format!("{root}/file"), b"kept").unwrap();
    lab.ok("zfs", &["snapshot", "tank/fs@x"]);
    let entry = format!("{root}/.zfs/snapshot/x");
    for round in 0..3 {
        // Looked up (and its file read) just before the destroy.
        assert!(std::fs::metadata(&entry).unwrap().is_dir(), "round {round}");
        assert_eq!(std::fs::read(format!("{entry}/file")).unwrap(), b"kept");
        lab.ok("zfs", &["destroy", "tank/fs@x"]);
        let err = std::fs::metadata(&entry).expect_err("destroyed snapshot still stats");
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "round {round}");
        assert!(std::fs::metadata(format!("{entry}/file")).is_err());
        lab.ok("zfs", &["snapshot", "tank/fs@x"]);
    }
}

// Why: defect 7 of issue 18: `zfs receive tank/r@@x` created `tank/r@@x`, and `zfs
// snapshot -r` made descendants' snapshot names over 255 characters; OpenZFS checks every
// name it creates (zfs_namecheck) and refuses with its words, creating nothing.
#[test]
fn names_are_checked_where_they_are_made() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    for target in ["tank/r@@x", "tank/r@x#y", "tank//r", "tank/r@"] {
        let out = lab.run(
            "sh",
            &["-c", &format!("zfs send tank/a@s | zfs receive '{target}'")],
        );
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (1, "cannot receive: invalid name\n"),
            "{target}"
        );
    }
    // A descendant's name made by -r is checked too: nothing is created.
    let long_a = "a".repeat(100);
    let long_b = "b".repeat(100);
    let deep = format!("tank/{long_a}/{long_b}");
    lab.ok("zfs", &["create", "-p", &deep]);
    let snap = "s".repeat(50);
    let child_snap = format!("{deep}@{snap}");
    assert!(child_snap.len() > 255);
    assert_eq!(
        refused(&lab, "zfs", &["snapshot", "-r", &format!("tank@{snap}")]),
        (
            1,
            format!(
                "cannot create snapshot '{child_snap}': name is too long\nno snapshots were created\n"
            )
        )
    );
    let all = lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "snapshot", "-r", "tank"],
    );
    assert_eq!(all, "tank/a@s\n");
    // Clone and rename targets follow the same rules.
    assert_eq!(
        refused(&lab, "zfs", &["clone", "tank/a@s", "tank/c%x"]),
        (
            1,
            "cannot create 'tank/c%x': invalid character % in name\n".to_string()
        )
    );
    assert_eq!(
        refused(&lab, "zfs", &["rename", "tank/a", "tank/b/../c"]),
        (
            1,
            "cannot rename to 'tank/b/../c': parent reference, '..' is found in name\n".to_string()
        )
    );
    assert_eq!(
        refused(
            &lab,
            "zfs",
            &["rename", "tank/a", &format!("tank/{}", "n".repeat(260))]
        ),
        (
            1,
            format!(
                "cannot rename to 'tank/{}': name is too long\n",
                "n".repeat(260)
            )
        )
    );
    let fss = lab.ok("zfs", &["list", "-H", "-o", "name", "-r", "tank"]);
    assert_eq!(fss, format!("tank\ntank/a\ntank/{long_a}\n{deep}\n"));
}

/// A loop device over a fresh image of the lab (`None` where none can be attached).
fn loop_device(lab: &common::Lab, name: &str) -> Option<String> {
    let image = lab.disk(name, 128 << 20);
    let out = std::process::Command::new("losetup")
        .args(["-f", "--show", &image])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `body`, then detaches `devices` whether it passed or panicked (the panic goes on).
fn detaching_after(devices: &[String], body: impl FnOnce()) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    for device in devices {
        let _ = std::process::Command::new("losetup")
            .args(["-d", device])
            .status();
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

// Why: defect 2 of issue 18: `zpool create p loop0` was refused ("no such device in /dev");
// OpenZFS resolves a shorthand device name through its search path (by-vdev, by-id,
// by-path, ..., /dev) and `zpool status` names the device `loop0` (full path with -P).
#[test]
fn shorthand_device_names_resolve_and_show_short() {
    let lab = NoMountLab::new();
    let Some(device) = loop_device(&lab.inner, "loop.img") else {
        eprintln!("skipped: no loop device available here");
        return;
    };
    let short = device.trim_start_matches("/dev/").to_string();
    detaching_after(std::slice::from_ref(&device), || {
        lab.ok("zpool", &["create", "short", &short]);
        let status = lab.ok("zpool", &["status", "short"]);
        assert!(status.contains(&format!("\n\t  {short}    ")), "{status}");
        let full = lab.ok("zpool", &["status", "-P", "short"]);
        assert!(full.contains(&format!("\n\t  {device}  ")), "{full}");
        lab.ok("zpool", &["destroy", "short"]);
        // A name found nowhere keeps OpenZFS's refusal.
        assert_eq!(
            refused(&lab, "zpool", &["create", "short", "zetta-no-such-disk"]),
            (
                1,
                "cannot open 'zetta-no-such-disk': no such device in /dev\nmust be a full path or shorthand device name\n"
                    .to_string()
            )
        );
    });
}

// Why: defect 6 of issue 18: operands and options OpenZFS refuses were accepted (`zfs mount
// -a fs`, `zfs unmount -a fs`, `zpool import -a pool`: usage, exit 2), `zpool create` put a
// pool's root on a non-empty directory, took `-O` names that are no filesystem property
// and compatibility files that do not exist, each refused by OpenZFS with its words.
#[test]
fn operands_and_options_openzfs_refuses() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    for args in [
        &["mount", "-a", "tank/a"][..],
        &["unmount", "-a", "tank/a"],
        &["unmount", "tank/a", "tank"],
    ] {
        let (code, stderr) = refused(&lab, "zfs", args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stderr.starts_with("too many arguments\nusage:"), "{stderr}");
    }
    let (code, stderr) = refused(&lab, "zfs", &["unmount"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("missing filesystem argument\nusage:"),
        "{stderr}"
    );
    let (code, stderr) = refused(&lab, "zpool", &["import", "-a", "tank"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("too many arguments\nusage:"), "{stderr}");

    let disk = lab.inner.disk("second", 256 << 20);
    assert_eq!(
        refused(
            &lab,
            "zpool",
            &["create", "-n", "-O", "doesnotexist=on", "other", &disk]
        ),
        (
            1,
            "property 'doesnotexist' is not a valid filesystem property\n".to_string()
        )
    );
    assert_eq!(
        refused(
            &lab,
            "zpool",
            &["create", "-o", "compatibility=nonexistent", "other", &disk]
        ),
        (
            1,
            "Error: could not read/parse feature file(s): nonexistent \n".to_string()
        )
    );
    let busy = lab.inner.path("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(format!("{busy}/file"), b"x").unwrap();
    let expected = format!(
        "mountpoint '{busy}' exists and is not empty\nuse '-m' option to provide a different default\n"
    );
    assert_eq!(
        refused(&lab, "zpool", &["create", "-m", &busy, "other", &disk]),
        (1, expected.clone())
    );
    assert_eq!(
        refused(
            &lab,
            "zpool",
            &[
                "create",
                "-O",
                &format!("mountpoint={busy}"),
                "other",
                &disk
            ]
        ),
        (1, expected)
    );
    // The default mountpoint under -R is checked the same way.
    let root = lab.inner.path("root");
    std::fs::create_dir_all(format!("{root}/other")).unwrap();
    std::fs::write(format!("{root}/other/file"), b"x").unwrap();
    let (code, stderr) = refused(&lab, "zpool", &["create", "-R", &root, "other", &disk]);
    assert_eq!(
        (code, stderr.lines().next()),
        (
            1,
            Some(format!("mountpoint '{root}/other' exists and is not empty").as_str())
        )
    );
    // Nothing was created; an empty directory is fine.
    assert_eq!(lab.ok("zpool", &["list", "-H", "-o", "name"]), "tank\n");
    let empty = lab.inner.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    lab.ok("zpool", &["create", "-m", &empty, "other", &disk]);
    lab.ok("zpool", &["destroy", "other"]);
}

// Why: defect 5 of issue 18: `zfs set mountpoint=` on a filesystem the admin had unmounted
// left it unmounted (OpenZFS's changelist mounts a canmount=on filesystem at its new
// place), and `overlay=off` was refused; OpenZFS then refuses to mount over a non-empty
// directory ("directory is not empty") unless `zfs mount -O`.
#[test]
fn new_mountpoint_mounts_and_overlay_off_refuses_non_empty() {
    let lab = MountLab::new("tank/fs");
    let old = lab.mnt("fs");
    assert!(common::mount_lab::mounted(&old));
    lab.ok("zfs", &["unmount", "tank/fs"]);
    assert!(!common::mount_lab::mounted(&old));
    let new = lab.inner.path("moved");
    lab.ok("zfs", &["set", &format!("mountpoint={new}"), "tank/fs"]);
    assert!(common::mount_lab::mounted(&new), "not mounted at {new}");
    assert_eq!(
        lab.ok("zfs", &["get", "-H", "-o", "value", "mounted", "tank/fs"]),
        "yes\n"
    );
    // overlay=off: a non-empty directory is not mounted over; -O does.
    lab.ok("zfs", &["set", "overlay=off", "tank/fs"]);
    lab.ok("zfs", &["unmount", "tank/fs"]);
    std::fs::write(format!("{new}/underneath"), b"x").unwrap();
    let (code, _, stderr) = lab.run("zfs", &["mount", "tank/fs"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            format!("cannot mount '{new}': directory is not empty\n").as_str()
        )
    );
    assert!(!common::mount_lab::mounted(&new));
    lab.ok("zfs", &["mount", "-O", "tank/fs"]);
    assert!(common::mount_lab::mounted(&new));
    lab.ok("zfs", &["unmount", "tank/fs"]);
    // overlay=on (the default) mounts over it.
    lab.ok("zfs", &["inherit", "overlay", "tank/fs"]);
    lab.ok("zfs", &["mount", "tank/fs"]);
    assert!(common::mount_lab::mounted(&new));
}

// Why: defect 13 of issue 18: `zfs destroy -f` of a filesystem in use (a process's cwd, an
// open file) detached the mount from under its users and destroyed it; on Linux OpenZFS's
// forced unmount is refused busy like any other, and nothing is destroyed.
#[test]
fn destroy_f_of_a_busy_filesystem_fails_busy() {
    let lab = MountLab::new("tank/fs");
    let root = lab.mnt("fs");
    std::fs::write(format!("{root}/file"), b"open").unwrap();
    let busy = format!("cannot unmount '{root}': pool or dataset is busy\n");
    // A process whose working directory is in it.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("600")
        .current_dir(&root)
        .spawn()
        .unwrap();
    let (code, _, stderr) = lab.run("zfs", &["destroy", "-f", "tank/fs"]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!((code, stderr.as_str()), (1, busy.as_str()));
    assert!(common::mount_lab::mounted(&root));
    // A file held open.
    let file = std::fs::File::open(format!("{root}/file")).unwrap();
    let (code, _, stderr) = lab.run("zfs", &["destroy", "-rf", "tank/fs"]);
    assert_eq!((code, stderr.as_str()), (1, busy.as_str()));
    assert!(common::mount_lab::mounted(&root));
    assert_eq!(
        lab.ok("zfs", &["list", "-H", "-o", "name", "tank/fs"]),
        "tank/fs\n"
    );
    drop(file);
    lab.ok("zfs", &["destroy", "-f", "tank/fs"]);
    assert!(!common::mount_lab::mounted(&root));
}

// Why: defect 11 of issue 18: a device holding another filesystem was made a pool's vdev
// without -f; OpenZFS asks libblkid and refuses it ("contains a filesystem of type").
#[test]
fn device_with_another_filesystem_needs_f() {
    let lab = NoMountLab::new();
    let image = lab.inner.disk("ext4.img", 128 << 20);
    let made = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", &image])
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfs.ext4 is not available here");
        return;
    }
    let out = std::process::Command::new("losetup")
        .args(["-f", "--show", &image])
        .output();
    let device = match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => {
            eprintln!("skipped: no loop device available here");
            return;
        }
    };
    detaching_after(std::slice::from_ref(&device), || {
        assert_eq!(
            refused(&lab, "zpool", &["create", "other", &device]),
            (
                1,
                format!(
                    "invalid vdev specification\nuse '-f' to override the following errors:\n{device} contains a filesystem of type 'ext4'\n"
                )
            )
        );
        assert_eq!(lab.ok("zpool", &["list", "-H", "-o", "name"]), "tank\n");
        lab.ok("zpool", &["create", "-f", "other", &device]);
        lab.ok("zpool", &["destroy", "other"]);
    });
}

// Why: ZTS's zfs_get_006_neg (issue 18, defect 6's `zfs get all -r`) sets POSIXLY_CORRECT
// and expects `zfs get all -r` to fail: glibc's getopt then ends the options at the first
// operand, so `-r` is a dataset name. Without it GNU permutation applies (`-r` is the flag).
// The daemon must follow the client's environment, not the one it was started with.
#[test]
fn posixly_correct_ends_options_at_the_first_operand() {
    let lab = NoMountLab::new();
    let out = lab.run("sh", &["-c", "POSIXLY_CORRECT=1 zfs get -H all -r"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(out.stderr.contains("'-r'"), "{}", out.stderr);
    // Options before the first operand still count.
    let out = lab.run(
        "sh",
        &[
            "-c",
            "POSIXLY_CORRECT=1 zfs get -H -o value mountpoint tank",
        ],
    );
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "none\n"),
        "{}",
        out.stderr
    );
    // The same words without POSIXLY_CORRECT: -r is a flag.
    let all = lab.ok("zfs", &["get", "-H", "all", "-r"]);
    assert!(all.contains("tank\tmountpoint\tnone\t"), "{all}");
}

/// The kernel's mount options of the mount at `path` (the topmost one there).
fn kernel_options(path: &str) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = table
        .lines()
        .rfind(|l| l.split(' ').nth(4) == Some(path))
        .unwrap_or_else(|| panic!("{path} is not mounted"))
        .to_string();
    line.split(' ')
        .nth(5)
        .unwrap_or("")
        .split(',')
        .map(str::to_string)
        .collect()
}

// Why: defect 10 of issue 18 (ZTS zfs_get_003_pos, zfs_mount_007_pos): `zfs mount -o
// remount,noatime` said "already mounted" and `zfs mount -o` had no -o at all. In OpenZFS
// a mount option overrides its property for that mount only: `zfs get` shows it with
// source `temporary` (the same in `get all`), the kernel mount has the option, and the
// next plain mount goes back to the property.
#[test]
fn mount_options_are_temporary_properties() {
    let lab = MountLab::new("tank/fs");
    let path = lab.mnt("fs");
    let get = |prop: &str| lab.ok("zfs", &["get", "-H", "-o", "value,source", prop, "tank/fs"]);
    lab.ok("zfs", &["set", "atime=on", "tank/fs"]);
    lab.ok("zfs", &["mount", "-o", "remount,noatime", "tank/fs"]);
    assert_eq!(get("atime"), "off\ttemporary\n");
    assert!(kernel_options(&path).contains(&"noatime".to_string()));
    let all = lab.ok(
        "zfs",
        &["get", "-H", "-o", "property,value,source", "all", "tank/fs"],
    );
    assert!(all.contains("atime\toff\ttemporary\n"), "{all}");
    // Without remount a mounted filesystem is refused, as before.
    let (code, _, stderr) = lab.run("zfs", &["mount", "-o", "ro", "tank/fs"]);
    assert_eq!(
        (code, stderr.as_str()),
        (1, "cannot mount 'tank/fs': filesystem already mounted\n")
    );
    // A new mount with -o: read-only for this mount only.
    lab.ok("zfs", &["unmount", "tank/fs"]);
    lab.ok("zfs", &["mount", "-o", "ro,nodev", "tank/fs"]);
    assert_eq!(get("readonly"), "on\ttemporary\n");
    assert_eq!(get("devices"), "off\ttemporary\n");
    assert_eq!(get("atime"), "on\tlocal\n");
    assert!(kernel_options(&path).contains(&"ro".to_string()));
    assert!(std::fs::write(format!("{path}/f"), b"x").is_err());
    lab.ok("zfs", &["unmount", "tank/fs"]);
    lab.ok("zfs", &["mount", "tank/fs"]);
    assert_eq!(get("readonly"), "off\tdefault\n");
    assert!(kernel_options(&path).contains(&"rw".to_string()));
    std::fs::write(format!("{path}/f"), b"x").unwrap();
}

// Why: ZTS zfs_set/canmount_003_pos (issue 18): `zfs set canmount=noauto` on a mounted
// filesystem unmounted it (and failed busy when a shell sat in it); OpenZFS leaves it
// mounted: noauto only keeps `zfs mount -a` from mounting it.
#[test]
fn canmount_noauto_leaves_a_mounted_filesystem_mounted() {
    let lab = MountLab::new("tank/fs");
    let path = lab.mnt("fs");
    // A process sitting in the filesystem: an unmount would fail busy.
    let mut holder = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(&path)
        .spawn()
        .unwrap();
    let (code, _, stderr) = lab.run("zfs", &["set", "canmount=noauto", "tank/fs"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(code, 0, "{stderr}");
    assert!(common::mount_lab::mounted(&path));
    assert_eq!(
        lab.ok("zfs", &["get", "-H", "-o", "value", "mounted", "tank/fs"]),
        "yes\n"
    );
    // Unmounted, it is not mounted again by `zfs mount -a`; `zfs mount` still mounts it.
    lab.ok("zfs", &["unmount", "tank/fs"]);
    lab.ok("zfs", &["mount", "-a"]);
    assert!(!common::mount_lab::mounted(&path));
    lab.ok("zfs", &["mount", "tank/fs"]);
    assert!(common::mount_lab::mounted(&path));
}

// Why: ZTS zpool_create_002_pos (issue 18): `zpool create p mirror A B` with B 64 MiB larger
// than A made the pool; OpenZFS refuses it without -f ("mirror contains devices of
// different sizes", exit 1) and makes it with -f.
#[test]
fn mirror_of_different_sizes_needs_f() {
    let lab = NoMountLab::new();
    let a = lab.inner.disk("a", 128 << 20);
    let b = lab.inner.disk("b", 192 << 20);
    let (code, stderr) = refused(
        &lab,
        "zpool",
        &["create", "-m", "none", "p2", "mirror", &a, &b],
    );
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "invalid vdev specification\nuse '-f' to override the following errors:\n\
             mirror contains devices of different sizes\n"
        )
    );
    lab.ok(
        "zpool",
        &["create", "-f", "-m", "none", "p2", "mirror", &a, &b],
    );
    lab.ok("zpool", &["destroy", "p2"]);
}

// Why: ZTS zfs_snapshot_005_neg (issue 18): renaming a filesystem (or its parent) so that
// one of its snapshots' full names would reach 256 bytes succeeded; OpenZFS refuses the
// whole rename ("dataset name is too long") and nothing moves.
#[test]
fn rename_refuses_names_its_snapshots_could_not_have() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["create", "tank/a/b"]);
    // "tank/a/b@" is 9 bytes: a snapshot name of 246 makes a full name of 255.
    let snap = format!("tank/a/b@{}", "s".repeat(246));
    assert_eq!(snap.len(), 255);
    lab.ok("zfs", &["snapshot", &snap]);
    for (from, to) in [("tank/a/b", "tank/a/bc"), ("tank/a", "tank/a-new")] {
        let (code, stderr) = refused(&lab, "zfs", &["rename", from, to]);
        assert_eq!(
            (code, stderr.as_str()),
            (
                1,
                format!("cannot rename to '{to}': dataset name is too long\n").as_str()
            )
        );
    }
    // A rename that keeps the length is fine.
    lab.ok("zfs", &["rename", "tank/a/b", "tank/a/c"]);
    let names = lab.ok(
        "zfs",
        &["list", "-H", "-o", "name", "-t", "all", "-r", "tank"],
    );
    assert!(
        names.contains(&format!("tank/a/c@{}\n", "s".repeat(246))),
        "{names}"
    );
}

// Why: ZTS zpool_create_002_pos (issue 18): `zpool offline testpool loop3` said "no such
// device in pool" for a device the pool was created with as `loop3` and that `zpool
// status` shows as `loop3`; OpenZFS's zpool_find_vdev takes the short name too.
#[test]
fn device_operands_take_short_names() {
    let lab = NoMountLab::new();
    let Some(first) = loop_device(&lab.inner, "loop-a.img") else {
        eprintln!("skipped: no loop device available here");
        return;
    };
    let second = loop_device(&lab.inner, "loop-b.img");
    let devices: Vec<String> = std::iter::once(first.clone())
        .chain(second.clone())
        .collect();
    detaching_after(&devices, || {
        let second = second.clone().expect("a second loop device");
        let (a, b) = (
            first.trim_start_matches("/dev/").to_string(),
            second.trim_start_matches("/dev/").to_string(),
        );
        lab.ok(
            "zpool",
            &["create", "-m", "none", "short", "mirror", &a, &b],
        );
        lab.ok("zpool", &["offline", "short", &b]);
        let state_of = |device: &str| {
            let status = lab.ok("zpool", &["status", "short"]);
            status
                .lines()
                .map(|line| line.split_whitespace().collect::<Vec<_>>())
                .find(|words| words.first() == Some(&device))
                .and_then(|words| words.get(1).map(|w| w.to_string()))
                .unwrap_or_else(|| panic!("{device} not in {status}"))
        };
        assert_eq!(state_of(&b), "OFFLINE");
        lab.ok("zpool", &["online", "short", &b]);
        assert_eq!(state_of(&b), "ONLINE");
        lab.ok("zpool", &["detach", "short", &b]);
        lab.ok("zpool", &["destroy", "short"]);
    });
}

// Why: ZTS zfs_mount_all_001_pos (issue 18): `zfs unmount -a` unmounted in name order,
// parents first, and failed busy on a filesystem with another mounted inside it; OpenZFS
// unmounts the deepest mountpoints first.
#[test]
fn unmount_all_goes_deepest_first() {
    let lab = MountLab::new("tank/a");
    lab.ok("zfs", &["create", "tank/a/b"]);
    lab.ok("zfs", &["create", "tank/a/b/c"]);
    for rest in ["a", "a/b", "a/b/c"] {
        assert!(common::mount_lab::mounted(&lab.mnt(rest)), "{rest}");
    }
    lab.ok("zfs", &["unmount", "-a"]);
    for rest in ["a", "a/b", "a/b/c"] {
        assert!(!common::mount_lab::mounted(&lab.mnt(rest)), "{rest}");
    }
    lab.ok("zfs", &["mount", "-a"]);
    assert!(common::mount_lab::mounted(&lab.mnt("a/b/c")));
}

// Why: ZTS zfs_set_003_neg (issue 18): `zfs set mountpoint=FILE fs` on a legacy filesystem
// exited 1 because the mount that followed failed; OpenZFS sets the property, prints the
// mount's failure and exits 0 (changelist_postfix counts no mount failure as an error).
#[test]
fn set_succeeds_when_the_remount_fails() {
    let lab = MountLab::new("tank/data");
    lab.ok("zfs", &["create", "-o", "mountpoint=legacy", "tank/foo"]);
    let file = lab.inner.path("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let (code, _, stderr) = lab.run("zfs", &["set", &format!("mountpoint={file}"), "tank/foo"]);
    assert_eq!(
        (code, stderr.as_str()),
        (0, "cannot mount 'tank/foo': Not a directory\n")
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["get", "-H", "-o", "value,source", "mountpoint", "tank/foo"]
        ),
        format!("{file}\tlocal\n")
    );
    assert_eq!(
        lab.ok("zfs", &["get", "-H", "-o", "value", "mounted", "tank/foo"]),
        "no\n"
    );
}

/// The pool names a cache file lists (Zetta's format: guid, name, devices per line).
fn cached_names(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split('\t').nth(1).map(str::to_string))
        .collect()
}

// Why: defect 11 of issue 18 (ZTS zpool_create_018_pos, 020_pos, tempname): `zpool create
// -o cachefile=PATH` was refused and `-t tmpname` unknown. In OpenZFS `cachefile=none`
// keeps a pool out of the default cache file, a path writes it to that file instead, `-R`
// and `-t` imply `none` unless `-o cachefile=` is given, and a temporary name lasts until
// export: the labels keep the name given (a later import finds it under that name).
#[test]
fn cachefile_and_temporary_names() {
    let lab = NoMountLab::new();
    let default_cache = lab.inner.path("zpool.cache");
    let disk = lab.inner.disk("second", 256 << 20);
    let dir = std::path::Path::new(&disk)
        .parent()
        .unwrap()
        .display()
        .to_string();

    // -t: here under the temporary name, out of the default cache file.
    lab.ok("zpool", &["create", "-t", "tmp1", "other", &disk]);
    assert_eq!(
        lab.ok("zpool", &["list", "-H", "-o", "name"]),
        "tank\ntmp1\n"
    );
    assert_eq!(
        lab.ok(
            "zpool",
            &["get", "-H", "-o", "value,source", "cachefile", "tmp1"]
        ),
        "none\tlocal\n"
    );
    assert_eq!(cached_names(&default_cache), vec!["tank"]);
    lab.ok("zfs", &["create", "tmp1/fs"]);
    lab.ok("zpool", &["export", "tmp1"]);
    let listing = lab.ok("zpool", &["import", "-d", &dir]);
    assert!(listing.contains("pool: other\n"), "{listing}");
    // import -t: a temporary name again; exported, the pool is still `other` on disk.
    lab.ok("zpool", &["import", "-d", &dir, "-t", "other", "tmp2"]);
    assert_eq!(
        lab.ok("zfs", &["list", "-H", "-o", "name", "-r", "tmp2"]),
        "tmp2\ntmp2/fs\n"
    );
    assert_eq!(cached_names(&default_cache), vec!["tank"]);
    // In a cache file a pool under a temporary name is listed by its labels' name (a new
    // daemon brings it back as that); here it keeps the temporary one.
    lab.ok("zpool", &["set", "cachefile=", "tmp2"]);
    assert_eq!(cached_names(&default_cache), vec!["tank", "other"]);
    assert_eq!(
        lab.ok("zpool", &["list", "-H", "-o", "name"]),
        "tank\ntmp2\n"
    );
    lab.ok("zpool", &["export", "tmp2"]);
    assert_eq!(cached_names(&default_cache), vec!["tank"]);
    lab.ok("zpool", &["import", "-d", &dir, "other"]);
    assert_eq!(cached_names(&default_cache), vec!["tank", "other"]);
    lab.ok("zpool", &["destroy", "other"]);

    // cachefile=PATH: written there, shown, and moved back by `cachefile=`.
    let alternate = lab.inner.path("alternate.cache");
    lab.ok(
        "zpool",
        &[
            "create",
            "-o",
            &format!("cachefile={alternate}"),
            "other",
            &disk,
        ],
    );
    assert_eq!(
        lab.ok("zpool", &["get", "-H", "-o", "value", "cachefile", "other"]),
        format!("{alternate}\n")
    );
    assert_eq!(cached_names(&alternate), vec!["other"]);
    assert_eq!(cached_names(&default_cache), vec!["tank"]);
    // Export takes it out of its file (as OpenZFS's does); `zpool import -c` searches the
    // devices a copy made before lists.
    let backup = lab.inner.path("alternate.cache.bkp");
    std::fs::copy(&alternate, &backup).unwrap();
    lab.ok("zpool", &["export", "other"]);
    assert_eq!(cached_names(&alternate), Vec::<String>::new());
    let listing = lab.ok("zpool", &["import", "-c", &backup]);
    assert!(listing.contains("pool: other\n"), "{listing}");
    lab.ok("zpool", &["import", "-c", &backup, "other"]);
    assert_eq!(
        refused(&lab, "zpool", &["import", "-c", "/nonexistent/x.cache"]),
        (
            1,
            "failed to open cache file: No such file or directory\n".to_string()
        )
    );
    lab.ok(
        "zpool",
        &["set", &format!("cachefile={alternate}"), "other"],
    );
    lab.ok("zpool", &["set", "cachefile=", "other"]);
    assert_eq!(cached_names(&alternate), Vec::<String>::new());
    assert_eq!(cached_names(&default_cache), vec!["tank", "other"]);
    assert_eq!(
        lab.ok(
            "zpool",
            &["get", "-H", "-o", "value,source", "cachefile", "other"]
        ),
        "-\tdefault\n"
    );
    lab.ok("zpool", &["set", "cachefile=none", "other"]);
    assert_eq!(cached_names(&default_cache), vec!["tank"]);
    assert_eq!(
        lab.ok("zpool", &["list", "-H", "-o", "name"]),
        "other\ntank\n"
    );
    lab.ok("zpool", &["destroy", "other"]);

    // -R implies cachefile=none.
    let root = lab.inner.path("root");
    lab.ok("zpool", &["create", "-R", &root, "other", &disk]);
    assert_eq!(
        lab.ok(
            "zpool",
            &["get", "-H", "-o", "value", "cachefile,altroot", "other"]
        ),
        format!("none\n{root}\n")
    );
    assert_eq!(cached_names(&default_cache), vec!["tank"]);
    lab.ok("zpool", &["destroy", "other"]);

    // libzfs's words for the paths it refuses; a '/' in a temporary name.
    assert_eq!(
        refused(&lab, "zpool", &["set", "cachefile=relative", "tank"]),
        (
            1,
            "cannot set property for 'tank': property 'cachefile' must be empty, an absolute path, or 'none'\n"
                .to_string()
        )
    );
    assert_eq!(
        refused(&lab, "zpool", &["create", "-t", "a/b", "other", &disk]),
        (
            1,
            "cannot create 'a/b': invalid character '/' in temporary name\nuse 'zfs create' to create a dataset\n"
                .to_string()
        )
    );
}

// Why: ZTS zfs_create_dryrun, zfs_create_verbose, zfs_create_011_pos, zfs_create_010_neg
// (issue 18): `zfs create -n`, `-v` and `-P` were unknown options; `zfs create -p` of an
// existing filesystem failed ("dataset already exists") where OpenZFS succeeds quietly;
// `zfs create -p -V 150m pool` succeeded (the pool's root is a filesystem, not the volume
// asked for). OpenZFS prints what it creates and its property list, and -n creates nothing.
#[test]
fn create_dry_run_verbose_and_existing_parents() {
    let lab = NoMountLab::new();
    assert_eq!(
        lab.ok("zfs", &["create", "-Pn", "-o", "compression=on", "tank/x"]),
        "create\ttank/x\nproperty\tcompression\ton\n"
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["create", "-nv", "-s", "-b", "16k", "-V", "10m", "tank/v"]
        ),
        "would create tank/v\n\tvolblocksize=16384\n\tvolsize=10485760\n"
    );
    // A volume that is not sparse gets its refreservation in the list.
    let out = lab.ok("zfs", &["create", "-Pn", "-V", "10m", "tank/v"]);
    assert!(
        out.starts_with("create\ttank/v\nproperty\tvolsize\t10485760\nproperty\trefreservation\t"),
        "{out}"
    );
    // Nothing was created, not even parents; a bad property still fails.
    assert_eq!(lab.ok("zfs", &["create", "-n", "-p", "tank/a/b"]), "");
    assert_eq!(lab.ok("zfs", &["list", "-H", "-o", "name"]), "tank\n");
    let (code, stderr) = refused(
        &lab,
        "zfs",
        &["create", "-n", "-o", "nosuchprop=1", "tank/y"],
    );
    assert_eq!((code, stderr.is_empty()), (1, false));

    assert_eq!(
        lab.ok("zfs", &["create", "-v", "-p", "tank/a/b"]),
        "create ancestors of tank/a/b\ncreate tank/a/b\n"
    );
    // -p of an existing filesystem: success, nothing printed.
    assert_eq!(lab.ok("zfs", &["create", "-pv", "tank/a/b"]), "");
    let (code, stderr) = refused(&lab, "zfs", &["create", "tank/a/b"]);
    assert_eq!(
        (code, stderr.as_str()),
        (1, "cannot create 'tank/a/b': dataset already exists\n")
    );
    // A volume asked for where a filesystem is: refused.
    assert_eq!(
        refused(&lab, "zfs", &["create", "-p", "-V", "150m", "tank"]),
        (
            1,
            "cannot create 'tank': missing dataset name\n".to_string()
        )
    );
    let (code, _) = refused(&lab, "zfs", &["create", "-p", "-V", "150m", "tank/a"]);
    assert_eq!(code, 1);
}

// Why: ZTS zfs_destroy_008..013, zfs_clone_010 (issue 18): `zfs destroy -d` was an invalid
// option. OpenZFS destroys a snapshot nothing keeps at once, and marks one kept by a hold
// or a clone (`defer_destroy` on, DS_FLAG_DEFER_DESTROY): it goes when its last hold is
// released or its last clone destroyed, and `userrefs` counts its holds.
#[test]
fn deferred_destroy_waits_for_holds_and_clones() {
    let lab = NoMountLab::new();
    let snapshot_names =
        |lab: &NoMountLab| lab.ok("zfs", &["list", "-H", "-t", "snapshot", "-o", "name"]);
    lab.ok("zfs", &["create", "tank/a"]);
    for snap in ["tank/a@free", "tank/a@held", "tank/a@cloned"] {
        lab.ok("zfs", &["snapshot", snap]);
    }
    lab.ok("zfs", &["destroy", "-d", "tank/a@free"]);
    assert_eq!(snapshot_names(&lab), "tank/a@held\ntank/a@cloned\n");

    // Held twice: marked, and gone at the last release.
    lab.ok("zfs", &["hold", "one", "tank/a@held"]);
    lab.ok("zfs", &["hold", "two", "tank/a@held"]);
    lab.ok("zfs", &["destroy", "-d", "tank/a@held"]);
    assert_eq!(value_source(&lab, "defer_destroy", "tank/a@held"), "on\t-");
    assert_eq!(value_source(&lab, "userrefs", "tank/a@held"), "2\t-");
    lab.ok("zfs", &["release", "one", "tank/a@held"]);
    assert_eq!(value_source(&lab, "userrefs", "tank/a@held"), "1\t-");
    lab.ok("zfs", &["release", "two", "tank/a@held"]);
    assert_eq!(snapshot_names(&lab), "tank/a@cloned\n");

    // Cloned: no refusal with -d; gone with its last clone.
    assert_eq!(
        value_source(&lab, "defer_destroy", "tank/a@cloned"),
        "off\t-"
    );
    lab.ok("zfs", &["clone", "tank/a@cloned", "tank/c1"]);
    lab.ok("zfs", &["clone", "tank/a@cloned", "tank/c2"]);
    lab.ok("zfs", &["destroy", "-d", "tank/a@cloned"]);
    assert_eq!(
        value_source(&lab, "defer_destroy", "tank/a@cloned"),
        "on\t-"
    );
    lab.ok("zfs", &["destroy", "tank/c1"]);
    assert_eq!(snapshot_names(&lab), "tank/a@cloned\n");
    lab.ok("zfs", &["destroy", "-R", "tank/c2"]);
    assert!(!snapshot_names(&lab).contains("tank/a@"));
    // -d is for snapshots only.
    assert_eq!(
        refused(&lab, "zfs", &["destroy", "-d", "tank/a"]),
        (
            1,
            "cannot open 'tank/a': operation not applicable to datasets of this type\n".to_string()
        )
    );
}

// Why: ZTS zfs_clone_002_pos and zfs_create_010_neg (issue 18): `zfs clone -p` onto an
// existing dataset failed ("dataset already exists") where OpenZFS succeeds, and a volume's
// `-o` property given twice was taken (parseprop refuses it: usage, exit 2).
#[test]
fn clone_p_onto_existing_and_volume_props_once() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["snapshot", "tank/a@s"]);
    lab.ok("zfs", &["clone", "-p", "tank/a@s", "tank/x/y/c"]);
    lab.ok("zfs", &["clone", "-p", "tank/a@s", "tank/x/y/c"]);
    let (code, stderr) = refused(&lab, "zfs", &["clone", "-p", "tank/a@nope", "tank/x/y/c"]);
    assert_eq!(code, 1, "{stderr}");
    let (code, stderr) = refused(
        &lab,
        "zfs",
        &[
            "create",
            "-o",
            "volblocksize=16384",
            "-o",
            "volblocksize=16384",
            "-V",
            "64m",
            "tank/v",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("property 'volblocksize' specified multiple times\nusage:"),
        "{stderr}"
    );
}

// Why: ZTS zfs_clone_010_pos (issue 18): `zfs list fs@s missing` printed nothing at all when
// one operand did not exist; OpenZFS (zfs_for_each) reports each missing one, lists the
// others, and exits 1.
#[test]
fn list_goes_on_past_a_missing_operand() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    let out = lab.run(
        "zfs",
        &["list", "-H", "-o", "name", "tank/a", "tank/nope", "tank"],
    );
    let mut listed: Vec<&str> = out.stdout.lines().collect();
    listed.sort_unstable();
    assert_eq!(
        (out.code, listed, out.stderr.as_str()),
        (
            1,
            vec!["tank", "tank/a"],
            "cannot open 'tank/nope': dataset does not exist\n"
        )
    );
    let out = lab.run("zfs", &["list", "tank/nope"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
}

/// `zpool get -H -o value guid tank`.
fn pool_guid(lab: &NoMountLab) -> String {
    lab.ok("zpool", &["get", "-H", "-o", "value", "guid", "tank"])
        .trim_end()
        .to_string()
}

// Why: session 18, zpool_reguid_001_pos/_002_neg: `zpool reguid` did not exist. The pool
// takes a new guid (random, or `-g` read as strtoull reads it), refuses 0, its own guid and
// what strtoull refuses, and keeps the new guid across export and import (the labels and
// the uberblock's guid sum carry it).
#[test]
fn reguid_gives_the_pool_a_new_guid() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    let first = pool_guid(&lab);
    lab.ok("zpool", &["reguid", "tank"]);
    let second = pool_guid(&lab);
    assert_ne!(first, second);
    for (given, shown) in [
        ("18446744073709551615", "18446744073709551615"),
        ("314", "314"),
        ("0123", "123"),
        ("-1", "18446744073709551615"),
    ] {
        if pool_guid(&lab) == shown {
            // The pool's own guid is refused: go through another one first.
            lab.ok("zpool", &["reguid", "-g", "42", "tank"]);
        }
        lab.ok("zpool", &["reguid", "-g", given, "tank"]);
        assert_eq!(pool_guid(&lab), shown, "-g {given}");
    }
    for bad in ["18446744073709551616", "0xA", "0xa"] {
        let out = lab.run("zpool", &["reguid", "-g", bad, "tank"]);
        assert_eq!(out.code, 2, "-g {bad}: {}", out.stderr);
        assert!(
            out.stderr.starts_with(&format!("invalid GUID: {bad}\n")),
            "{}",
            out.stderr
        );
    }
    assert_eq!(
        refused(&lab, "zpool", &["reguid", "-g", "0", "tank"]),
        (1, "cannot reguid 'tank': invalid argument\n".to_string())
    );
    lab.ok("zpool", &["reguid", "-g", "42", "tank"]);
    assert_eq!(
        refused(&lab, "zpool", &["reguid", "-g", "42", "tank"]),
        (1, "cannot reguid 'tank': pool already exists\n".to_string())
    );
    assert_eq!(pool_guid(&lab), "42");
    // The pool works on and comes back under its new guid.
    lab.ok("zfs", &["create", "tank/b"]);
    lab.ok("zpool", &["export", "tank"]);
    let dir = lab.inner.dir.to_string_lossy().into_owned();
    lab.ok("zpool", &["import", "-d", &dir, "tank"]);
    assert_eq!(pool_guid(&lab), "42");
    let names = lab.ok("zfs", &["list", "-H", "-o", "name", "-r", "tank"]);
    assert_eq!(names, "tank\ntank/a\ntank/b\n");
    let history = lab.ok("zpool", &["history", "tank"]);
    assert!(history.contains(" zpool reguid -g 42 tank\n"), "{history}");
}

// Why: session 18, receive-o-x_props_override/_aliases: `zfs recv -x atime=off` and a
// property named twice by -o/-x were accepted; libzfs's parseprop/parsepropname make
// them usage errors before any stream is read.
#[test]
fn receive_x_takes_a_name_once() {
    let lab = NoMountLab::new();
    for (args, message) in [
        (
            vec!["recv", "-x", "atime=off", "tank/r"],
            "invalid character '=' in property argument",
        ),
        (
            vec!["recv", "-o", "atime=off", "-x", "atime", "tank/r"],
            "property 'atime' specified multiple times",
        ),
        (
            vec!["recv", "-x", "compress", "-x", "compress", "tank/r"],
            "property 'compress' specified multiple times",
        ),
        (
            vec!["recv", "-o", "atime=off", "-o", "atime=on", "tank/r"],
            "property 'atime' specified multiple times",
        ),
    ] {
        let out = lab.run("zfs", &args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with(&format!("{message}\n")),
            "{args:?}: {}",
            out.stderr
        );
    }
}

// Why: session 18, zfs_002_pos/zpool_002_pos: with ZFS_ABORT set OpenZFS's zfs and zpool
// print "dumping core by request" and abort at exit, whatever the command did; Zetta's
// exited normally. (Core files are switched off here with `ulimit -c 0`.)
#[test]
fn zfs_abort_aborts_at_exit() {
    let lab = NoMountLab::new();
    for command in ["zfs list -H -o name tank", "zpool list -H -o name", "zfs"] {
        let out = lab.run(
            "sh",
            &[
                "-c",
                &format!("ulimit -c 0; ZFS_ABORT=yes {command}; echo \"rc=$?\""),
            ],
        );
        assert!(
            out.stdout.contains("dumping core by request\n"),
            "{command}: {}",
            out.stdout
        );
        // 128 + SIGABRT.
        assert!(
            out.stdout.ends_with("rc=134\n"),
            "{command}: {}",
            out.stdout
        );
    }
    // Without it, nothing changes.
    assert_eq!(
        lab.ok("zfs", &["list", "-H", "-o", "name", "tank"]),
        "tank\n"
    );
}

// Why: session 18, zfs_diff_cliargs/_timestamp/_mangle: `zfs diff -t` (the change time
// first) and `-h` were refused, and paths were printed raw where libzfs escapes every
// byte that is not printable ASCII above the space (`\0040` for a space).
#[test]
fn diff_timestamps_and_mangles_names() {
    let lab = MountLab::new("tank/fs");
    let fs = lab.mnt("fs");
    lab.ok("zfs", &["snapshot", "tank/fs@1"]);
    std::fs::write(format!("{fs}/a b"), b"x").unwrap();
    std::fs::write(format!("{fs}/żupan"), b"y").unwrap();
    lab.ok("zfs", &["snapshot", "tank/fs@2"]);
    let mangled = lab.ok("zfs", &["diff", "tank/fs@1", "tank/fs@2"]);
    assert!(
        mangled.contains(&format!("+\t{fs}/a\\0040b\n")),
        "{mangled}"
    );
    assert!(
        mangled.contains(&format!("+\t{fs}/\\0305\\0274upan\n")),
        "{mangled}"
    );
    let raw = lab.ok("zfs", &["diff", "-h", "tank/fs@1", "tank/fs@2"]);
    assert!(raw.contains(&format!("+\t{fs}/a b\n")), "{raw}");
    assert!(raw.contains(&format!("+\t{fs}/żupan\n")), "{raw}");
    // -t: the file's ctime as `stat` reports it, `seconds.nanoseconds`.
    let timed = lab.ok("zfs", &["diff", "-tFh", "tank/fs@1", "tank/fs@2"]);
    let line = timed
        .lines()
        .find(|l| l.ends_with("/a b"))
        .unwrap_or_else(|| panic!("{timed}"));
    let (stamp, rest) = line.split_once('\t').unwrap_or_else(|| panic!("{line}"));
    assert_eq!(rest, format!("+\tF\t{fs}/a b"));
    let meta = std::fs::metadata(format!("{fs}/a b")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        stamp.trim_start(),
        format!("{}.{:09}", meta.ctime(), meta.ctime_nsec())
    );
    assert_eq!(stamp.split('.').next().map(str::len), Some(10));
}

// Why: session 18, zfs_upgrade_002_pos (and the list, -a and filesystem forms the other
// zfs_upgrade tests start with): `zfs upgrade` did not exist. Zetta's filesystems are ZPL
// 5, the current version: the list says so, -v names the versions, -a and a filesystem
// count them as already at this version; a downgrade is refused with OpenZFS's words.
#[test]
fn zfs_upgrade_lists_and_counts_versions() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/a"]);
    lab.ok("zfs", &["create", "tank/a/b"]);
    lab.ok("zfs", &["create", "-V", "8M", "tank/vol"]);
    assert_eq!(
        lab.ok("zfs", &["upgrade"]),
        "This system is currently running ZFS filesystem version 5.\n\n\
         All filesystems are formatted with the current version.\n"
    );
    let versions = lab.ok("zfs", &["upgrade", "-v"]);
    assert!(
        versions.contains("\n 1   Initial ZFS filesystem version\n"),
        "{versions}"
    );
    assert!(
        versions.contains("\n 2   Enhanced directory entries\n"),
        "{versions}"
    );
    assert!(
        versions.contains("\n 5   System attributes\n"),
        "{versions}"
    );
    assert_eq!(
        lab.ok("zfs", &["upgrade", "-a"]),
        "0 filesystems upgraded\n3 filesystems already at this version\n"
    );
    assert_eq!(
        lab.ok("zfs", &["upgrade", "-r", "-V", "current", "tank/a"]),
        "0 filesystems upgraded\n2 filesystems already at this version\n"
    );
    let down = lab.run("zfs", &["upgrade", "-V", "4", "tank/a"]);
    assert_eq!(down.code, 1, "{}", down.stderr);
    assert_eq!(
        down.stdout,
        "tank/a: can not be downgraded; it is already at version 5\n0 filesystems upgraded\n"
    );
    for bad in [
        vec!["upgrade", "-V", "0", "tank/a"],
        vec!["upgrade", "-V", "5678x", "tank/a"],
        vec!["upgrade", "-r"],
        vec!["upgrade", "-v", "tank/a"],
        vec!["upgrade", "-a", "tank/a"],
    ] {
        assert_eq!(lab.run("zfs", &bad).code, 2, "{bad:?}");
    }
    let missing = lab.run("zfs", &["upgrade", "tank/nope"]);
    assert_eq!(missing.code, 1);
    assert_eq!(
        missing.stderr,
        "cannot open 'tank/nope': dataset does not exist\n"
    );
}

// Why: session 18, zfs_wait_deleteq: `zfs wait` did not exist. It must wait while a file
// removed but still open sits on the delete queue, and return once it is closed.
#[test]
fn zfs_wait_waits_for_the_delete_queue() {
    let lab = MountLab::new("tank/fs");
    let fs = lab.mnt("fs");
    let path = format!("{fs}/held");
    let held = std::fs::File::create(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut command = lab.inner.command("zfs");
    command.args(["wait", "-t", "deleteq", "tank/fs"]);
    let mut child = lab.inner.spawn(&mut command);
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert!(
        child.try_wait().unwrap().is_none(),
        "zfs wait returned while the file was open"
    );
    drop(held);
    assert!(
        common::wait_for(|| child.try_wait().unwrap().is_some()),
        "zfs wait did not return once the file was closed"
    );
    assert_eq!(child.wait().unwrap().code(), Some(0));
    // Nothing held: it returns at once; an unknown activity is a usage error.
    assert_eq!(lab.ok("zfs", &["wait", "tank/fs"]), "");
    let (code, _, err) = lab.run("zfs", &["wait", "-t", "trim", "tank/fs"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("invalid activity 'trim'\n"), "{err}");
}

// Why: session 18, zpool_add_002_pos/_010_pos: `zpool add --allow-replication-mismatch`
// was an unknown option, and `zpool add pool log dev` was refused for want of a general
// top-level vdev, which OpenZFS asks for on create only.
#[test]
fn add_takes_the_allow_options_and_a_lone_log() {
    let lab = NoMountLab::new();
    let log = lab.inner.disk("log", 128 << 20);
    lab.ok("zpool", &["add", "tank", "log", &log]);
    let (a, b) = (
        lab.inner.disk("a", 128 << 20),
        lab.inner.disk("b", 128 << 20),
    );
    let refused = lab.run("zpool", &["add", "tank", "mirror", &a, &b]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("mismatched replication level"),
        "{}",
        refused.stderr
    );
    lab.ok(
        "zpool",
        &[
            "add",
            "--allow-replication-mismatch",
            "tank",
            "mirror",
            &a,
            &b,
        ],
    );
    let c = lab.inner.disk("c", 128 << 20);
    lab.ok(
        "zpool",
        &[
            "add",
            "--allow-in-use",
            "--allow-ashift-mismatch",
            "tank",
            &c,
        ],
    );
    let status = lab.ok("zpool", &["status", "-P", "tank"]);
    for path in [&log, &a, &b, &c] {
        assert!(status.contains(path.as_str()), "{status}");
    }
}

// Why: session 18, zpool_scrub_005_pos: `zpool attach -w pool loop0 loop1` said "cannot
// open 'loop1': no such device in /dev"; the new device of an attach is resolved as create
// and add resolve a short name.
#[test]
fn attach_takes_a_short_new_device_name() {
    let lab = NoMountLab::new();
    let Some(first) = loop_device(&lab.inner, "one.img") else {
        eprintln!("skipped: no loop device available here");
        return;
    };
    let Some(second) = loop_device(&lab.inner, "two.img") else {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &first])
            .status();
        eprintln!("skipped: no second loop device available here");
        return;
    };
    let (a, b) = (
        first.trim_start_matches("/dev/").to_string(),
        second.trim_start_matches("/dev/").to_string(),
    );
    detaching_after(&[first.clone(), second.clone()], || {
        lab.ok("zpool", &["create", "short", &a]);
        lab.ok("zpool", &["attach", "-w", "short", &a, &b]);
        let full = lab.ok("zpool", &["status", "-P", "short"]);
        assert!(full.contains(&format!("{second} ")), "{full}");
        lab.ok("zpool", &["detach", "short", &b]);
        lab.ok("zpool", &["attach", "short", &a, &b]);
        lab.ok("zpool", &["destroy", "short"]);
    });
}

// Why: session 19, zpool_split (all six tests): `zpool split` did not exist. One leaf of
// every mirror leaves to form a new pool with a new guid, holding the source's datasets
// and properties; without -R it is left exported, with -R imported under that altroot;
// -n prints the layout; a non-mirror pool, two leaves of one mirror, a device not in the
// pool and an existing name are refused with libzfs's words; the source keeps the rest.
#[test]
fn split_makes_a_new_pool_from_one_side_of_each_mirror() {
    let lab = common::Lab::new();
    let disks: Vec<String> = (1..=5)
        .map(|i| lab.disk(&format!("d{i}"), 256 << 20))
        .collect();
    let run = |args: &[&str]| {
        let mut command = lab.command("zpool");
        command.args(args).env("ZETTA_MOUNT", "0");
        lab.run(command)
    };
    let ok = |args: &[&str]| {
        let out = run(args);
        assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
        out.stdout
    };
    let zfs_ok = |args: &[&str]| {
        let mut command = lab.command("zfs");
        command.args(args).env("ZETTA_MOUNT", "0");
        let out = lab.run(command);
        assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
        out.stdout
    };
    let d = |i: usize| disks[i - 1].as_str();
    ok(&[
        "create",
        "-f",
        "-m",
        "none",
        "tank",
        "mirror",
        d(1),
        d(2),
        "mirror",
        d(3),
        d(4),
        d(5),
    ]);
    zfs_ok(&["create", "tank/a"]);
    zfs_ok(&["set", "user:x=1", "tank/a"]);
    let dry = ok(&["split", "-n", "-P", "tank", "tank2", d(3)]);
    assert_eq!(
        dry,
        format!(
            "would create 'tank2' with the following layout:\n\n\ttank2\n\t  {}\n\t  {}\n",
            d(2),
            d(3)
        )
    );
    for (args, why) in [
        (
            vec![d(1), d(2)],
            "Device list must include at most one disk from each mirror",
        ),
        (
            vec![d(2), "nosuchdev"],
            "Device list must include at most one disk from each mirror",
        ),
    ] {
        let mut full = vec!["split", "tank", "tank2"];
        full.extend(args);
        let out = run(&full);
        assert_eq!(
            (out.code, out.stderr),
            (1, format!("Unable to split tank: {why}\n"))
        );
    }
    let out = run(&["split", "-l", "tank", "tank2"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out
        .stderr
        .starts_with("loading keys is only valid when importing the pool\n"));
    let out = run(&["split", "-R", "dir", "tank", "tank2"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "Unable to split tank: bad alternate root 'dir'\n")
    );
    let tank_guid = ok(&["get", "-H", "-o", "value", "guid", "tank"]);
    ok(&["split", "-o", "comment=split", "tank", "tank2", d(3)]);
    // The source keeps d1 (now a single disk) and the mirror d4 d5.
    let status = ok(&["status", "-P", "tank"]);
    assert!(!status.contains(d(2)) && !status.contains(d(3)), "{status}");
    assert!(status.contains("mirror-1"), "{status}");
    // tank2 is exported: import finds it, with the datasets, user properties and comment.
    let dir = lab.dir.to_string_lossy().into_owned();
    ok(&["import", "-d", &dir, "tank2"]);
    let guid2 = ok(&["get", "-H", "-o", "value", "guid", "tank2"]);
    assert_ne!(tank_guid, guid2);
    assert_eq!(
        zfs_ok(&["get", "-H", "-o", "value", "user:x", "tank2/a"]),
        "1\n"
    );
    assert_eq!(
        ok(&["get", "-H", "-o", "value", "comment", "tank2"]),
        "split\n"
    );
    let status2 = ok(&["status", "-P", "tank2"]);
    assert!(
        status2.contains(d(2)) && status2.contains(d(3)),
        "{status2}"
    );
    assert!(!status2.contains("mirror"), "{status2}");
    // Both pools work on and come back after export.
    zfs_ok(&["create", "tank2/b"]);
    zfs_ok(&["create", "tank/c"]);
    ok(&["export", "tank2"]);
    ok(&["export", "tank"]);
    ok(&["import", "-d", &dir, "tank"]);
    ok(&["import", "-d", &dir, "tank2"]);
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-r", "tank2"]),
        "tank2\ntank2/a\ntank2/b\n"
    );
    // A pool that is not all mirrors, and a name in use, are refused.
    let out = run(&["split", "tank2", "tank3"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Unable to split tank2: Source pool must be composed only of mirrors\n"
        )
    );
    let out = run(&["split", "tank", "tank2"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Unable to split tank: Source pool must be composed only of mirrors\n"
        )
    );
    // With -R the new pool stays imported under its altroot, out of the cache file.
    ok(&["destroy", "tank2"]);
    ok(&["attach", "-f", "tank", d(1), d(2)]);
    let altroot = lab.path("alt");
    ok(&["split", "-R", &altroot, "tank", "tank3", d(1), d(5)]);
    assert_eq!(
        ok(&["get", "-H", "-o", "value", "altroot", "tank3"]),
        format!("{altroot}\n")
    );
    let status3 = ok(&["status", "-P", "tank3"]);
    assert!(
        status3.contains(d(1)) && status3.contains(d(5)),
        "{status3}"
    );
    assert_eq!(
        zfs_ok(&["list", "-H", "-o", "name", "-r", "tank3"]),
        "tank3\ntank3/a\ntank3/c\n"
    );
}

// Why: session 19, zpool_set user_property_001/clear_userprop (defect 12 of issue 18):
// `zpool set a:b=c` was refused as an invalid property. A user property lives in the
// pool (`pool_props`, across export and import), shows as local, is listed last by
// `zpool get all`, is cleared by an empty value ('-', default), and a name with an upper
// case letter, too long a name or value, or Zetta's private prefix is refused.
#[test]
fn pool_user_properties_are_set_listed_and_cleared() {
    let lab = NoMountLab::new();
    let long_name = format!("x:{}", "a".repeat(253));
    let long_value = "A".repeat(8191);
    for (name, value) in [
        ("cool:pool", "hello"),
        (long_name.as_str(), "long-property-name"),
        ("long:property:value", long_value.as_str()),
    ] {
        lab.ok("zpool", &["set", &format!("{name}={value}"), "tank"]);
        assert_eq!(
            lab.ok(
                "zpool",
                &["get", "-H", "-p", "-o", "value,source", name, "tank"]
            ),
            format!("{value}\tlocal\n")
        );
    }
    let all = lab.ok("zpool", &["get", "-H", "-o", "property", "all", "tank"]);
    assert!(
        all.ends_with(&format!("cool:pool\nlong:property:value\n{long_name}\n")),
        "{all}"
    );
    lab.ok("zpool", &["export", "tank"]);
    let dir = lab.inner.dir.to_string_lossy().into_owned();
    lab.ok("zpool", &["import", "-d", &dir, "tank"]);
    assert_eq!(
        lab.ok("zpool", &["get", "-H", "-o", "value", "cool:pool", "tank"]),
        "hello\n"
    );
    lab.ok("zpool", &["set", "cool:pool=", "tank"]);
    assert_eq!(
        lab.ok(
            "zpool",
            &["get", "-H", "-p", "-o", "value,source", "cool:pool", "tank"]
        ),
        "-\tdefault\n"
    );
    let too_long_name = format!("x:{}", "a".repeat(254));
    let too_long_value = format!("too:long={}", "A".repeat(8192));
    for (assignment, why) in [
        (
            "Cool:x=1".to_string(),
            "invalid property 'Cool:x'".to_string(),
        ),
        (
            format!("{too_long_name}=v"),
            format!("property name '{too_long_name}' is too long"),
        ),
        (
            too_long_value.clone(),
            format!("property value '{}' is too long", &too_long_value[9..]),
        ),
        (
            "org.zetta:vdev_stats=1".to_string(),
            "invalid property 'org.zetta:vdev_stats'".to_string(),
        ),
    ] {
        assert_eq!(
            refused(&lab, "zpool", &["set", &assignment, "tank"]),
            (1, format!("cannot set property for 'tank': {why}\n"))
        );
    }
}

// Why: session 19 (issue 18, defect 12): `zpool add -o ashift=N` with an N other than
// the pool's took the vdev; OpenZFS 2.3 refuses a top-level vdev whose ashift differs
// from the pool's single one (ZFS_ERR_ASHIFT_MISMATCH) unless --allow-ashift-mismatch,
// which had nothing to lift. -f does not lift it.
#[test]
fn add_refuses_a_different_ashift_without_allow_ashift_mismatch() {
    let lab = NoMountLab::new();
    let (a, b) = (
        lab.inner.disk("a", 128 << 20),
        lab.inner.disk("b", 128 << 20),
    );
    assert_eq!(
        refused(&lab, "zpool", &["add", "-f", "-o", "ashift=9", "tank", &a]),
        (
            1,
            "cannot add to 'tank': adding devices with different physical sector sizes is \
             not allowed\n"
                .to_string()
        )
    );
    lab.ok("zpool", &["add", "-o", "ashift=12", "tank", &a]);
    lab.ok(
        "zpool",
        &[
            "add",
            "--allow-ashift-mismatch",
            "-o",
            "ashift=9",
            "tank",
            &b,
        ],
    );
    let status = lab.ok("zpool", &["status", "-P", "tank"]);
    assert!(status.contains(&a) && status.contains(&b), "{status}");
}

// Why: session 19, zpool_import_hostid_changed_unclean_export and _cachefile_unclean_export:
// `zpool freeze` (OpenZFS's hidden debugging command, `spa_freeze`) did not exist. After
// it no txg reaches the devices: what changes later is lost at export, and the export
// leaves the labels ACTIVE (unclean), so import asks for -f.
#[test]
fn freeze_leaves_the_pool_unclean_at_export() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/before"]);
    lab.ok("zpool", &["freeze", "tank"]);
    lab.ok("zfs", &["create", "tank/after"]);
    lab.ok("zpool", &["export", "tank"]);
    let dir = lab.inner.dir.to_string_lossy().into_owned();
    let out = lab.run("zpool", &["import", "-d", &dir, "tank"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("cannot import 'tank': pool was previously in use from another system."),
        "{}",
        out.stderr
    );
    lab.ok("zpool", &["import", "-f", "-d", &dir, "tank"]);
    assert_eq!(
        lab.ok("zfs", &["list", "-H", "-o", "name", "-r", "tank"]),
        "tank\ntank/before\n"
    );
    assert_eq!(
        refused(&lab, "zpool", &["freeze", "nosuch"]),
        (
            1,
            "failed to freeze pool: cannot open 'nosuch': no such pool\n".to_string()
        )
    );
}

// Why: ZTS `zfs_send-b` (issue 18): `zfs send -b` did not exist, and a snapshot's user
// properties were sent in `snapprops` but never applied by the receiver. OpenZFS sends
// only received values with `-b` (a backup sent back restores what was received, not
// what was changed on the backup) and stores a stream's `snapprops` on the new snapshot
// as received values; `-b` combines with every other flag but `-t` and needs a snapshot.
#[test]
fn send_b_restores_received_properties_only() {
    let lab = NoMountLab::new();
    for cmd in [
        "zfs create tank/sendfs",
        "zfs snapshot tank/sendfs@s1",
        "zfs bookmark tank/sendfs@s1 tank/sendfs#bm",
        "zfs snapshot tank/sendfs@s2",
        "zfs set compression=gzip tank/sendfs",
        "zfs set org.openzfs:prop=val tank/sendfs",
        "zfs set org.openzfs:snapprop=val tank/sendfs@s1",
    ] {
        let args: Vec<&str> = cmd.split(' ').skip(1).collect();
        lab.ok("zfs", &args);
    }
    let sh = |script: &str| lab.run("sh", &["-c", script]).code;
    for opt in ["", "p", "Rp", "cew", "nv", "D", "DLPRcenpvw"] {
        let full = format!("zfs send -b{opt} tank/sendfs@s1 > /dev/null");
        assert_eq!(sh(&full), 0, "{full}");
        let incr = format!("zfs send -b{opt} -I tank/sendfs@s1 tank/sendfs@s2 > /dev/null");
        assert_eq!(sh(&incr), 0, "{incr}");
        for bad in ["tank/sendfs", "tank/sendfs#bm"] {
            let refused = format!("zfs send -b{opt} {bad} > /dev/null");
            assert_ne!(sh(&refused), 0, "{refused}");
        }
    }
    for opt in ["", "p", "R", "cew"] {
        assert_eq!(sh("zfs send -p tank/sendfs@s1 | zfs recv tank/backup"), 0);
        // A received snapshot property reads as received.
        assert_eq!(
            value_source(&lab, "org.openzfs:snapprop", "tank/backup@s1"),
            "val\treceived"
        );
        for set in [
            "compression=lz4 tank/backup",
            "exec=off tank/backup",
            "org.openzfs:prop=newval tank/backup",
            "org.openzfs:newprop=newval tank/backup",
            "org.openzfs:snapprop=newval tank/backup@s1",
            "org.openzfs:newsnapprop=newval tank/backup@s1",
        ] {
            let (prop, name) = set.split_once(' ').unwrap();
            lab.ok("zfs", &["set", prop, name]);
        }
        let send = format!("zfs send -b{opt} tank/backup@s1 | zfs recv tank/restore");
        assert_eq!(sh(&send), 0, "{send}");
        for (prop, name, expected) in [
            ("compression", "tank/restore", "gzip\treceived"),
            ("org.openzfs:prop", "tank/restore", "val\treceived"),
            ("org.openzfs:snapprop", "tank/restore@s1", "val\treceived"),
            ("exec", "tank/restore", "on\tdefault"),
            ("org.openzfs:newprop", "tank/restore", "-\t-"),
            ("org.openzfs:newsnapprop", "tank/restore@s1", "-\t-"),
        ] {
            assert_eq!(value_source(&lab, prop, name), expected, "-b{opt} {prop}");
        }
        lab.ok("zfs", &["destroy", "-r", "tank/backup"]);
        lab.ok("zfs", &["destroy", "-r", "tank/restore"]);
    }
    // A resume token carries its own flags.
    let (code, stderr) = refused(&lab, "zfs", &["send", "-b", "-t", "1-abc"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("invalid flags combined with -t\n"),
        "{stderr}"
    );
}

// Why: ZTS `zfs_send_skip_missing` (issue 18): `-s` was refused. `zfs send -R` of a
// snapshot a descendant lacks fails; with `-s` libzfs leaves that descendant out with its
// children, warns on stderr, and sends the rest.
#[test]
fn send_rs_skips_descendants_without_the_snapshot() {
    let lab = NoMountLab::new();
    lab.ok("zfs", &["create", "tank/parent"]);
    lab.ok("zfs", &["create", "tank/parent/child"]);
    lab.ok("zfs", &["snapshot", "tank/parent@snap"]);
    let failed = lab.run("sh", &["-c", "zfs send -R tank/parent@snap > /dev/null"]);
    assert_eq!(
        (failed.code, failed.stderr.as_str()),
        (
            1,
            "cannot send tank/parent@snap recursively: snapshot tank/parent/child@snap does not exist\n"
        )
    );
    let skipped = lab.run(
        "sh",
        &["-c", "zfs send -Rs tank/parent@snap | zfs recv tank/copy"],
    );
    assert_eq!(
        (skipped.code, skipped.stderr.as_str()),
        (
            0,
            "WARNING: skipping dataset tank/parent/child and its children: snapshot snap does not exist\n"
        )
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["list", "-H", "-o", "name", "-t", "all", "-r", "tank/copy"]
        ),
        "tank/copy\ntank/copy@snap\n"
    );
}
