//! Zetta's own FUSE transport (issue 16, `zetta_fuse::kernel`) through the real CLI and
//! daemon: `ZETTA_FUSE_TRANSPORT=zetta` serves every mount from one pool of workers.
//! Root and `/dev/fuse` required (skipped otherwise).

mod common;

use common::Lab;

fn threads(pid: &str) -> (usize, usize) {
    let mut all = 0;
    let mut workers = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        all += 1;
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.starts_with("zetta-fuse-") {
            workers += 1;
        }
    }
    (all, workers)
}

fn mounts_under(dir: &str) -> usize {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            f.len() > 2 && f[2] == "fuse.zetta" && f[1].starts_with(dir)
        })
        .count()
}

/// Why: the bar — no dedicated thread per additional mounted dataset. Under fuser
/// each mount brought 5 threads; here 20 more mounts bring none, every one of them works,
/// and an export ends all their sessions.
#[test]
fn one_worker_pool_serves_every_mount() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/fuse").exists() {
        return;
    }
    let mut lab = Lab::new();
    lab.env
        .push(("ZETTA_FUSE_TRANSPORT".to_string(), "zetta".to_string()));
    let disk = lab.disk("disk", 1 << 30);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", &disk]);
    let pid = std::fs::read_to_string(lab.dir.join("run").join("zetta.pid")).unwrap();
    let pid = pid.trim().to_string();
    let (one_mount, workers) = threads(&pid);
    assert!(workers >= 1, "the pool's workers run once a mount exists");
    for i in 0..20 {
        lab.ok("zfs", &["create", &format!("tank/fs{i}")]);
    }
    assert_eq!(mounts_under(&mnt), 21);
    let (many_mounts, workers_after) = threads(&pid);
    assert_eq!(workers_after, workers);
    // Command threads may come and go; fuser would have added 100.
    assert!(
        many_mounts <= one_mount + 4,
        "{one_mount} -> {many_mounts} threads"
    );
    for i in 0..20 {
        let file = format!("{mnt}/fs{i}/file");
        let body = format!("dataset {i}\n").repeat(5000);
        std::fs::write(&file, &body).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), body);
        let names: Vec<_> = std::fs::read_dir(format!("{mnt}/fs{i}"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["file"]);
    }
    lab.ok("zpool", &["export", "tank"]);
    assert_eq!(mounts_under(&mnt), 0);
    assert_eq!(threads(&pid).1, workers);
}

/// Why: fuser's mounts went away with a killed daemon (fusermount3's auto-unmount helper);
/// the own transport's single helper (`kernel::auto_unmount`) must do the same, or a killed
/// daemon leaves dead mounts (ENOTCONN) behind.
#[test]
fn a_killed_daemons_mounts_are_detached() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/fuse").exists() {
        return;
    }
    let mut lab = Lab::new();
    lab.env
        .push(("ZETTA_FUSE_TRANSPORT".to_string(), "zetta".to_string()));
    let disk = lab.disk("disk", 1 << 30);
    let mnt = lab.path("mnt");
    lab.ok("zpool", &["create", "-m", &mnt, "tank", &disk]);
    lab.ok("zfs", &["create", "tank/fs"]);
    std::fs::write(format!("{mnt}/fs/file"), b"kept").unwrap();
    lab.ok("zpool", &["sync", "tank"]);
    assert_eq!(mounts_under(&mnt), 2);
    let pid = std::fs::read_to_string(lab.dir.join("run").join("zetta.pid")).unwrap();
    let pid: i32 = pid.trim().parse().unwrap();
    // SAFETY: a signal to the lab's own daemon.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert!(
        common::wait_for(|| mounts_under(&mnt) == 0),
        "dead mounts left: {}",
        mounts_under(&mnt)
    );
    // The next command starts a daemon that imports and mounts again.
    lab.ok("zpool", &["status", "tank"]);
    assert!(common::wait_for(|| mounts_under(&mnt) == 2));
    assert_eq!(std::fs::read(format!("{mnt}/fs/file")).unwrap(), b"kept");
}
