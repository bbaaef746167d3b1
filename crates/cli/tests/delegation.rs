//! `zfs allow` for a real non-root user (issue 19's done-when: "a non-root user with `zfs
//! allow user create,mount,snapshot` can create, mount and snapshot under the delegated
//! dataset and nothing else").
//!
//! Why: before `dsl::deleg` and the daemon's per-caller checks, the daemon refused every
//! user but root and its own ("does not serve uid N"), and `zfs allow` was an unrecognized
//! command; now any user reaches the daemon and runs what the pool's delegations give it.

mod common;

use common::{Lab, Output};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// A user made for this test with `useradd`, removed when dropped (even on failure).
struct TestUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl TestUser {
    fn new(name: &str) -> Option<TestUser> {
        let _ = Command::new("userdel").arg(name).output();
        let made = Command::new("useradd")
            .args([
                "--no-create-home",
                "--user-group",
                "--shell",
                "/bin/false",
                name,
            ])
            .output()
            .ok()?;
        if !made.status.success() {
            return None;
        }
        let id = |flag: &str| -> Option<u32> {
            let out = Command::new("id").args([flag, name]).output().ok()?;
            String::from_utf8_lossy(&out.stdout).trim().parse().ok()
        };
        Some(TestUser {
            name: name.to_string(),
            uid: id("-u")?,
            gid: id("-g")?,
        })
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

/// Runs `zetta FRONT ARGS` as `user` against the lab's daemon.
fn as_user(lab: &Lab, user: &TestUser, front: &str, args: &[&str]) -> Output {
    let binary = lab.path("zetta-for-user");
    if !std::path::Path::new(&binary).exists()
        && std::fs::hard_link(env!("CARGO_BIN_EXE_zetta"), &binary).is_err()
    {
        std::fs::copy(env!("CARGO_BIN_EXE_zetta"), &binary).unwrap();
    }
    let mut command = lab.command("zpool");
    let mut direct = Command::new(&binary);
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => direct.env(key, value),
            None => direct.env_remove(key),
        };
    }
    command = direct;
    command
        .arg(front)
        .args(args)
        .uid(user.uid)
        .gid(user.gid)
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    lab.run(command)
}

fn refused(out: Output, expected: &str) {
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr, expected);
}

#[test]
fn a_delegated_user_creates_mounts_and_snapshots_and_nothing_else() {
    let Some(user) = TestUser::new(&format!("zd{}", std::process::id() % 100000)) else {
        eprintln!("skipped: useradd is not available (not root?)");
        return;
    };
    let lab = Lab::new();
    let disk = lab.disk("disk", 512 << 20);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", &disk]);
    lab.zfs_ok(&["create", "tank/home"]);
    lab.zfs_ok(&["allow", &user.name, "create,mount,snapshot", "tank/home"]);
    assert_eq!(
        lab.zfs_ok(&["allow", "tank/home"]),
        format!(
            "---- Permissions on tank/home ----------------------------------------\n\
             Local+Descendent permissions:\n\tuser {} create,mount,snapshot\n",
            user.name
        )
    );
    // The child inherits the descendent half; the pool's root has none.
    assert!(lab.zfs_ok(&["allow", "tank"]).is_empty());

    // What was delegated works.
    let out = as_user(&lab, &user, "zfs", &["create", "tank/home/u1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        lab.zfs_ok(&["get", "-H", "-o", "value", "mounted", "tank/home/u1"]),
        "yes\n"
    );
    let out = as_user(&lab, &user, "zfs", &["snapshot", "tank/home/u1@s1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = as_user(&lab, &user, "zfs", &["snapshot", "tank/home@s1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = as_user(&lab, &user, "zfs", &["unmount", "tank/home/u1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = as_user(&lab, &user, "zfs", &["mount", "tank/home/u1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // The daemon mounts as root for the user: such a mount is nosuid and nodev whatever
    // the dataset's setuid/devices say (a received setuid-root file must not run as root).
    let mountpoint = lab.zfs_ok(&["get", "-H", "-o", "value", "mountpoint", "tank/home/u1"]);
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let line = mounts
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(mountpoint.trim()))
        .unwrap_or_else(|| panic!("{} not mounted:\n{mounts}", mountpoint.trim()));
    let options: Vec<&str> = line.split(' ').nth(3).unwrap_or("").split(',').collect();
    assert!(
        options.contains(&"nosuid") && options.contains(&"nodev"),
        "{line}"
    );
    // Reading needs no permission.
    let out = as_user(
        &lab,
        &user,
        "zfs",
        &["list", "-H", "-o", "name", "-r", "tank/home"],
    );
    assert_eq!(out.stdout, "tank/home\ntank/home/u1\n", "{}", out.stderr);
    let out = as_user(&lab, &user, "zpool", &["list", "-H", "-o", "name"]);
    assert_eq!(out.stdout, "tank\n", "{}", out.stderr);

    // Nothing else does.
    refused(
        as_user(&lab, &user, "zfs", &["destroy", "tank/home/u1@s1"]),
        "cannot destroy 'tank/home/u1@s1': permission denied\n",
    );
    refused(
        as_user(&lab, &user, "zfs", &["create", "tank/other"]),
        "cannot create 'tank/other': permission denied\n",
    );
    // A property given at creation needs its own permission: `-o mountpoint=` would
    // otherwise have the daemon mount wherever the user asks.
    refused(
        as_user(
            &lab,
            &user,
            "zfs",
            &["create", "-o", "mountpoint=/etc", "tank/home/u2"],
        ),
        "cannot create 'tank/home/u2': permission denied\n",
    );
    refused(
        as_user(
            &lab,
            &user,
            "zfs",
            &["set", "compression=lz4", "tank/home/u1"],
        ),
        "cannot set property for 'tank/home/u1': permission denied\n",
    );
    refused(
        as_user(&lab, &user, "zpool", &["export", "tank"]),
        "cannot export 'tank': permission denied\n",
    );
    refused(
        as_user(
            &lab,
            &user,
            "zfs",
            &["allow", &user.name, "destroy", "tank/home"],
        ),
        "cannot set permissions on 'tank/home': permission denied\n",
    );

    // `zfs unallow` takes it back.
    lab.zfs_ok(&["unallow", &user.name, "tank/home"]);
    assert!(lab.zfs_ok(&["allow", "tank/home"]).is_empty());
    refused(
        as_user(&lab, &user, "zfs", &["snapshot", "tank/home/u1@s2"]),
        "cannot create snapshot 'tank/home/u1@s2': permission denied\n",
    );

    // Survives export and import: the delegations live in the pool.
    lab.zfs_ok(&["allow", "-l", &user.name, "snapshot", "tank/home/u1"]);
    lab.ok("zpool", &["export", "tank"]);
    lab.ok("zpool", &["import", "-d", &lab.path(""), "tank"]);
    let out = as_user(&lab, &user, "zfs", &["snapshot", "tank/home/u1@s3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // Local only: not on a child.
    lab.zfs_ok(&["create", "tank/home/u1/c"]);
    refused(
        as_user(&lab, &user, "zfs", &["snapshot", "tank/home/u1/c@s"]),
        "cannot create snapshot 'tank/home/u1/c@s': permission denied\n",
    );
    lab.ok("zpool", &["destroy", "tank"]);
}

/// Runs the lab's zetta in this process's own mode (`ZETTA_DIRECT=1`, no daemon).
fn direct(lab: &Lab, args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zetta"));
    command
        .args(args)
        .env("ZETTA_DIRECT", "1")
        .env("ZETTA_MOUNT", "0")
        .env("ZETTA_CACHE_FILE", lab.path("zpool.cache"))
        .env("ZETTA_RUN_DIR", lab.path("run"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = lab.run(command);
    assert_eq!(out.code, 0, "{args:?}: {}{}", out.stdout, out.stderr);
    out.stdout
}

/// Why: the deleg ZAP and its jump objects are OpenZFS's structures; zdb must read the
/// same who-keys OpenZFS's `zfs allow` writes, create-time permissions must reach a
/// creator, and destroying the dir must free every object (zdb's block count).
#[test]
fn zdb_reads_the_deleg_zap_and_destroy_frees_it() {
    let zdb = "/opt/zetta-oracle/sbin/zdb";
    if !std::path::Path::new(zdb).exists() {
        eprintln!("skipped: {zdb} missing (scripts/oracle.sh installs it)");
        return;
    }
    let lab = Lab::new();
    let disk = lab.disk("d0", 256 << 20);
    direct(&lab, &["zpool", "create", "-m", "none", "tp", &disk]);
    direct(&lab, &["zfs", "create", "tp/home"]);
    direct(
        &lab,
        &["zfs", "allow", "-u", "0", "create,mount", "tp/home"],
    );
    direct(
        &lab,
        &["zfs", "allow", "-s", "@basic", "snapshot,@other", "tp/home"],
    );
    direct(&lab, &["zfs", "allow", "-c", "destroy", "tp/home"]);
    direct(&lab, &["zfs", "allow", "-e", "-l", "diff", "tp/home"]);
    // Root creates tp/home/k: the create-time permission becomes root's, locally.
    direct(&lab, &["zfs", "create", "tp/home/k"]);
    assert_eq!(
        direct(&lab, &["zfs", "allow", "tp/home/k"]),
        "---- Permissions on tp/home/k ----------------------------------------\n\
         Local permissions:\n\tuser root destroy\n\
         ---- Permissions on tp/home ------------------------------------------\n\
         Permission sets:\n\t@basic @other,snapshot\n\
         Create time permissions:\n\tdestroy\n\
         Local permissions:\n\teveryone diff\n\
         Local+Descendent permissions:\n\tuser root create,mount\n"
    );
    direct(&lab, &["zpool", "export", "tp"]);
    let dump = Command::new(zdb)
        .args(["-e", "-p", &lab.path(""), "-dddd", "tp"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    for entry in [
        "el$ = ",
        "ud$0 = ",
        "ul$0 = ",
        "c-$ = ",
        "S-$@basic = ",
        "s-$@basic = ",
    ] {
        assert!(text.contains(entry), "zdb lacks {entry}:\n{text}");
    }
    for perm in [
        "create = 0",
        "mount = 0",
        "snapshot = 0",
        "@other = 0",
        "destroy = 0",
        "diff = 0",
    ] {
        assert!(text.contains(perm), "zdb lacks {perm}");
    }
    direct(&lab, &["zpool", "import", "-d", &lab.path(""), "tp"]);
    direct(&lab, &["zfs", "unallow", "-s", "@basic", "tp/home"]);
    direct(&lab, &["zfs", "destroy", "-r", "tp/home"]);
    direct(&lab, &["zpool", "export", "tp"]);
    let dump = Command::new(zdb)
        .args(["-e", "-p", &lab.path(""), "-dddd", "tp"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&dump.stdout).contains("DSL permissions"));
    let check = Command::new(zdb)
        .args(["-e", "-p", &lab.path(""), "-bcc", "tp"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("No leaks"),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

/// Why: `zfs get userquota@…` answered every caller about every id. OpenZFS
/// (`zfs_secpolicy_userspace_one`) lets a user read its own uid's user values and its
/// groups' group values; another id needs the property's permission (`userquota`,
/// `userused`, ...); without it `zfs get` prints `-`, as for any value it cannot read.
#[test]
fn userquota_of_another_id_needs_the_permission() {
    let Some(user) = TestUser::new(&format!("zq{}", std::process::id() % 100000)) else {
        eprintln!("skipped: useradd is not available (not root?)");
        return;
    };
    let lab = Lab::new();
    let disk = lab.disk("disk", 256 << 20);
    lab.ok("zpool", &["create", "-m", "none", "tank", &disk]);
    let own = format!("userquota@{}", user.uid);
    lab.zfs_ok(&["set", &format!("{own}=5M"), "tank"]);
    lab.zfs_ok(&["set", "userquota@0=7M", "tank"]);
    lab.zfs_ok(&["set", &format!("groupquota@{}=9M", user.gid), "tank"]);
    let get = |prop: &str| {
        let out = as_user(
            &lab,
            &user,
            "zfs",
            &["get", "-H", "-o", "value,source", prop, "tank"],
        );
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        out.stdout
    };
    assert_eq!(get(&own), "5M\tlocal\n", "its own quota");
    assert_eq!(get(&format!("userquota@{}", user.name)), "5M\tlocal\n");
    assert_eq!(
        get(&format!("groupquota@{}", user.gid)),
        "9M\tlocal\n",
        "its group's"
    );
    assert_eq!(
        get("userquota@0"),
        "-\t-\n",
        "root's quota without the permission"
    );
    assert_eq!(get("userused@0"), "-\t-\n");
    lab.zfs_ok(&["allow", &user.name, "userquota", "tank"]);
    assert_eq!(get("userquota@0"), "7M\tlocal\n", "with the permission");
    assert_eq!(
        get("userused@0"),
        "-\t-\n",
        "userused is a permission of its own"
    );
    // Root reads everything.
    assert_eq!(
        lab.zfs_ok(&["get", "-H", "-o", "value", "userquota@0", "tank"]),
        "7M\n"
    );
    lab.ok("zpool", &["destroy", "tank"]);
}
