//! `/dev/zvol/POOL/VOL`: volumes as block devices (a loop device over the daemon's FUSE
//! volume files), used as admins use them: mkfs, mount, snapshot, clone, fio, fsync.

mod common;

use common::{wait_for, Lab};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

fn run(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lab's `/dev/zvol` (`ZETTA_ZVOL_DIR`, set by the harness for every lab).
fn device(lab: &Lab, name: &str) -> PathBuf {
    lab.dir.join("dev/zvol").join(name)
}

/// Whether `path` is a link to a block device that answers.
fn is_block_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

fn pool(lab: &Lab) {
    let disk = lab.disk("disk", 1 << 30);
    lab.ok("zpool", &["create", "-m", &lab.path("tank"), "tank", &disk]);
}

/// Unmounts `dir` if something is mounted there (a failed test's leftovers).
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).output();
    }
}

// Why: issue 17 asks for /dev/zvol block devices: `mkfs.ext4` on one, mount it, write and
// read files, unmount, snapshot, clone, mount the clone — the clone's device must appear
// and show the snapshot's files; fio's crc32c verification with direct I/O and fsync must
// pass on the device.
#[test]
fn mkfs_mount_snapshot_clone_and_fio_on_dev_zvol() {
    if !Path::new("/usr/sbin/mkfs.ext4").exists() || !Path::new("/usr/sbin/losetup").exists() {
        eprintln!("SKIPPED: mkfs.ext4 or losetup is not installed");
        return;
    }
    let lab = Lab::new();
    pool(&lab);
    lab.ok("zfs", &["create", "-V", "64M", "tank/vm"]);
    let dev = device(&lab, "tank/vm");
    assert!(
        wait_for(|| is_block_device(&dev)),
        "{} missing",
        dev.display()
    );
    run("mkfs.ext4", &["-q", &dev.to_string_lossy()]);
    let mnt = lab.dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    run("mount", &[&dev.to_string_lossy(), &mnt.to_string_lossy()]);
    let guard = Mounted(mnt.clone());
    let data: Vec<u8> = (0..(3 << 20))
        .map(|i: u32| (i * 7 + i / 4096) as u8)
        .collect();
    std::fs::write(mnt.join("file"), &data).unwrap();
    std::fs::write(mnt.join("small"), b"hello zvol\n").unwrap();
    run("umount", &[&mnt.to_string_lossy()]);
    drop(guard);
    lab.ok("zfs", &["snapshot", "tank/vm@s"]);
    lab.ok("zfs", &["clone", "tank/vm@s", "tank/clone"]);
    let clone = device(&lab, "tank/clone");
    assert!(
        wait_for(|| is_block_device(&clone)),
        "{} missing",
        clone.display()
    );
    run("mount", &[&clone.to_string_lossy(), &mnt.to_string_lossy()]);
    let guard = Mounted(mnt.clone());
    assert_eq!(std::fs::read(mnt.join("file")).unwrap(), data);
    assert_eq!(std::fs::read(mnt.join("small")).unwrap(), b"hello zvol\n");
    run("umount", &[&mnt.to_string_lossy()]);
    drop(guard);
    if Path::new("/usr/bin/fio").exists() {
        let out = run(
            "fio",
            &[
                "--name=verify",
                &format!("--filename={}", dev.display()),
                "--rw=randwrite",
                "--bs=4k",
                "--size=8M",
                "--direct=1",
                "--ioengine=psync",
                "--fsync=16",
                "--verify=crc32c",
                "--verify_fatal=1",
                // No verify-state file left in the working directory.
                "--verify_state_save=0",
            ],
        );
        assert!(out.contains("err= 0"), "{out}");
    }
    lab.ok("zpool", &["scrub", "-w", "tank"]);
    let status = lab.ok("zpool", &["status", "tank"]);
    assert!(status.contains("with 0 errors"), "{status}");
}

// Why: devices must follow the volumes: a rename moves the link, `volmode=none` hides it,
// destroy and export remove it (and its loop device), import brings it back, and a volume
// grown with `volsize` is seen at its new size.
#[test]
fn dev_zvol_follows_rename_volmode_resize_destroy_export() {
    if !Path::new("/usr/sbin/losetup").exists() {
        eprintln!("SKIPPED: losetup is not installed");
        return;
    }
    let lab = Lab::new();
    pool(&lab);
    lab.ok("zfs", &["create", "-p", "-V", "16M", "tank/a/v"]);
    let v = device(&lab, "tank/a/v");
    assert!(wait_for(|| is_block_device(&v)));
    let size = |p: &Path| run("blockdev", &["--getsize64", &p.to_string_lossy()]);
    assert_eq!(size(&v).trim(), (16u64 << 20).to_string());
    lab.ok("zfs", &["set", "volsize=32M", "tank/a/v"]);
    assert!(wait_for(|| size(&v).trim() == (32u64 << 20).to_string()));
    lab.ok("zfs", &["rename", "tank/a/v", "tank/w"]);
    let w = device(&lab, "tank/w");
    assert!(wait_for(|| is_block_device(&w)));
    assert!(!v.exists() && !lab.dir.join("dev/zvol/tank/a").exists());
    lab.ok("zfs", &["set", "volmode=none", "tank/w"]);
    assert!(!w.exists());
    lab.ok("zfs", &["inherit", "volmode", "tank/w"]);
    assert!(wait_for(|| is_block_device(&w)));
    lab.ok("zpool", &["export", "tank"]);
    assert!(!w.exists());
    lab.ok(
        "zpool",
        &["import", "-d", &lab.dir.to_string_lossy(), "tank"],
    );
    assert!(wait_for(|| is_block_device(&w)));
    lab.ok("zfs", &["destroy", "tank/w"]);
    assert!(!w.exists());
    // A loop device another opener (udev's probe) holds when it is detached goes only when
    // that opener closes it (the kernel's autoclear): wait for that, but not for ever.
    let backing = lab.dir.join("run/zvol");
    let backing = backing.to_string_lossy();
    let gone = wait_for(|| !run("losetup", &["-a"]).contains(&*backing));
    assert!(gone, "loop devices left: {}", run("losetup", &["-a"]));
}

/// The daemon's pid.
fn daemon_pid(lab: &Lab) -> u32 {
    std::fs::read_to_string(lab.dir.join("run/zetta.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The seed post's guest workload ("ZVOL vs QCOW2 with KVM": fio random writes with
/// `--ioengine=sync` and `--end_fsync=1`), here also with an fsync before every next write
/// (`--fsync=1`; fio's last write is synced by `--end_fsync=1` only), on
/// `[offset, offset + 2M)` of `dev`, every block with a crc32c header; with `verify_only`
/// the same run reads every block back and checks it instead.
fn post_fio(dev: &Path, bs: &str, offset: &str, verify_only: bool) -> String {
    let mut args = vec![
        "--name=post".to_string(),
        format!("--filename={}", dev.display()),
        "--ioengine=sync".to_string(),
        "--rw=randwrite".to_string(),
        format!("--bs={bs}"),
        "--direct=0".to_string(),
        "--fsync=1".to_string(),
        "--end_fsync=1".to_string(),
        format!("--offset={offset}"),
        "--size=2M".to_string(),
        "--verify=crc32c".to_string(),
        "--verify_fatal=1".to_string(),
        "--verify_state_save=0".to_string(),
        // The same offsets and contents in both runs.
        "--randrepeat=1".to_string(),
        "--randseed=1716".to_string(),
    ];
    args.push(
        if verify_only {
            "--verify_only"
        } else {
            "--do_verify=0"
        }
        .to_string(),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run("fio", &args)
}

// Why: a guest filesystem on /dev/zvol commits its journal with flushes; the seed post's
// zvol dropped them. Every block written with O_DSYNC, or written and then fsync'd, on the
// device must survive SIGKILL of the daemon (whose next start clears the dead loop device
// and binds a new one): 20 rounds, as issue 17 asks. Then the post's own workload (fio
// random 4k and 64k writes, `--ioengine=sync`, an fsync after each): SIGKILL as soon as
// fio returns, and after the restart fio's verification finds every block it wrote — the
// guest's syncs reached stable storage, which the post found its zvol did not do.
#[test]
fn dev_zvol_synced_writes_survive_sigkill() {
    if !Path::new("/usr/sbin/losetup").exists() {
        eprintln!("SKIPPED: losetup is not installed");
        return;
    }
    let lab = Lab::new();
    pool(&lab);
    lab.ok("zfs", &["create", "-V", "8M", "tank/vol"]);
    let dev = device(&lab, "tank/vol");
    let mut acknowledged: Vec<(u64, Vec<u8>)> = Vec::new();
    let check = |acknowledged: &[(u64, Vec<u8>)], round: u64| {
        for (offset, data) in acknowledged {
            let mut f = std::fs::File::open(&dev).unwrap();
            f.seek(SeekFrom::Start(*offset)).unwrap();
            let mut back = vec![0u8; data.len()];
            f.read_exact(&mut back).unwrap();
            assert!(back == *data, "round {round}: block at {offset} lost");
        }
    };
    let kill_and_restart = || {
        let pid = daemon_pid(&lab);
        run("kill", &["-9", &pid.to_string()]);
        assert!(wait_for(|| std::os::unix::net::UnixStream::connect(
            lab.dir.join("run/zetta.sock")
        )
        .is_err()));
        // The next command starts a daemon: it imports the pool (replaying the volume's
        // log), clears the dead loop device and binds a new one.
        lab.ok("zfs", &["list", "tank/vol"]);
    };
    for round in 0..20u64 {
        assert!(wait_for(|| is_block_device(&dev)), "round {round}");
        check(&acknowledged, round);
        let block = |k: u64| -> (u64, Vec<u8>) {
            let offset = (round * 4 + k) * 4096;
            let data = (0..4096u64)
                .map(|i| (i * 31 + round * 7 + k) as u8)
                .collect();
            (offset, data)
        };
        // Two O_DSYNC writes, two plain writes then fsync, one plain write not synced.
        let mut dsync = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DSYNC)
            .open(&dev)
            .unwrap();
        for k in 0..2 {
            let (offset, data) = block(k);
            dsync.seek(SeekFrom::Start(offset)).unwrap();
            dsync.write_all(&data).unwrap();
            acknowledged.push((offset, data));
        }
        let mut plain = std::fs::OpenOptions::new().write(true).open(&dev).unwrap();
        for k in 2..4 {
            let (offset, data) = block(k);
            plain.seek(SeekFrom::Start(offset)).unwrap();
            plain.write_all(&data).unwrap();
            acknowledged.push((offset, data));
        }
        plain.sync_all().unwrap();
        let (offset, data) = block(4);
        plain.seek(SeekFrom::Start(offset)).unwrap();
        plain.write_all(&data).unwrap();
        drop((dsync, plain));
        kill_and_restart();
    }
    assert!(wait_for(|| is_block_device(&dev)));
    check(&acknowledged, 20);
    if !Path::new("/usr/bin/fio").exists() {
        eprintln!("SKIPPED: the seed post's fio workload (fio is not installed)");
        return;
    }
    // The rounds used the first 320K; fio gets 4M..6M (4k) and 6M..8M (64k).
    post_fio(&dev, "4k", "4M", false);
    post_fio(&dev, "64k", "6M", false);
    kill_and_restart();
    assert!(wait_for(|| is_block_device(&dev)));
    for (bs, offset) in [("4k", "4M"), ("64k", "6M")] {
        let out = post_fio(&dev, bs, offset, true);
        assert!(
            out.contains("err= 0") && !out.contains("verify: bad"),
            "{out}"
        );
    }
    check(&acknowledged, 21);
}

// Why: `zpool export` and `zfs destroy` took a volume away while its /dev/zvol device was
// mounted or open (the device's I/O then failed under its user). OpenZFS refuses: "cannot
// export 'tank': pool is busy" (also with -f: the open zvol holds the pool), "cannot
// destroy 'tank/a/vm': dataset is busy" (also through -r of a parent). Each refusal must
// change nothing: the device and the filesystem on it go on working; once unmounted and
// closed, destroy and export work.
#[test]
fn dev_zvol_in_use_makes_export_and_destroy_busy() {
    if !Path::new("/usr/sbin/mkfs.ext4").exists() || !Path::new("/usr/sbin/losetup").exists() {
        eprintln!("SKIPPED: mkfs.ext4 or losetup is not installed");
        return;
    }
    let lab = Lab::new();
    pool(&lab);
    lab.ok("zfs", &["create", "-p", "-V", "32M", "tank/a/vm"]);
    let dev = device(&lab, "tank/a/vm");
    assert!(wait_for(|| is_block_device(&dev)));
    run("mkfs.ext4", &["-q", &dev.to_string_lossy()]);
    let mnt = lab.dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    run("mount", &[&dev.to_string_lossy(), &mnt.to_string_lossy()]);
    let guard = Mounted(mnt.clone());
    std::fs::write(mnt.join("before"), b"kept\n").unwrap();
    let refused = |args: &[&str], stderr: &str| {
        let out = if args[0] == "zpool" {
            lab.zpool(&args[1..])
        } else {
            lab.zfs(&args[1..])
        };
        assert_eq!((out.code, out.stderr.trim()), (1, stderr), "{args:?}");
    };
    refused(
        &["zpool", "export", "tank"],
        "cannot export 'tank': pool is busy",
    );
    refused(
        &["zpool", "export", "-f", "tank"],
        "cannot export 'tank': pool is busy",
    );
    refused(
        &["zfs", "destroy", "tank/a/vm"],
        "cannot destroy 'tank/a/vm': dataset is busy",
    );
    refused(
        &["zfs", "destroy", "-r", "tank/a"],
        "cannot destroy 'tank/a/vm': dataset is busy",
    );
    // Nothing changed: the pool, the volume, its device and the filesystem on it.
    lab.ok("zfs", &["list", "tank/a/vm"]);
    assert!(is_block_device(&dev));
    std::fs::write(mnt.join("after"), b"still\n").unwrap();
    assert_eq!(std::fs::read(mnt.join("before")).unwrap(), b"kept\n");
    run("umount", &[&mnt.to_string_lossy()]);
    drop(guard);
    // Open, not mounted: busy too; closed: the destroy goes through.
    let open = std::fs::File::open(&dev).unwrap();
    refused(
        &["zfs", "destroy", "tank/a/vm"],
        "cannot destroy 'tank/a/vm': dataset is busy",
    );
    drop(open);
    lab.ok("zfs", &["snapshot", "tank/a/vm@keep"]);
    lab.ok("zfs", &["destroy", "-r", "tank/a"]);
    assert!(!dev.exists());
    lab.ok("zpool", &["export", "tank"]);
}
