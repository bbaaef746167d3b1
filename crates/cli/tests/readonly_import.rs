//! `zpool import -o readonly=on`: a pool imported without writing a byte to its devices.
//!
//! Why: the property was accepted at import and shown by `zpool get` while the pool was
//! imported read-write (then refused by issue 21 as an unhonoured value). An admin imports
//! read-only to look at a pool without changing it — a damaged pool, another system's
//! disks, and (issue 12) a real OpenZFS pool, which Zetta reads but does not write yet.
//! Root and `/dev/fuse` required.

use std::io::Read;

mod common;

use common::mount_lab::{mounted, MountLab};

/// A digest of a device file (FNV-1a over every byte): equal before and after means the
/// read-only import wrote nothing.
fn digest(path: &str) -> u64 {
    let mut file = std::fs::File::open(path).expect("open device");
    let mut buf = vec![0u8; 1 << 20];
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    loop {
        let n = file.read(&mut buf).expect("read device");
        if n == 0 {
            return hash;
        }
        for &b in &buf[..n] {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

fn fails_with(lab: &MountLab, front: &str, args: &[&str], stderr: &str) {
    let (code, _, err) = lab.run(front, args);
    assert_eq!((code, err.as_str()), (1, stderr), "{front} {args:?}");
}

#[test]
fn readonly_import_writes_nothing_and_refuses_changes() {
    let lab = MountLab::with(256 << 20, &["tank/data"]);
    let disk = lab.inner.path("disk");
    let dir = lab.inner.dir.to_string_lossy().into_owned();
    std::fs::write(lab.mnt("data/kept"), b"written read-write\n").expect("write");
    lab.ok("zfs", &["snapshot", "tank/data@before"]);
    lab.ok("zpool", &["export", "tank"]);
    let before = digest(&disk);

    lab.ok(
        "zpool",
        &["import", "-d", &dir, "-o", "readonly=on", "tank"],
    );
    assert_eq!(
        lab.ok("zpool", &["get", "-H", "-o", "value", "readonly", "tank"]),
        "on\n"
    );
    // Mounted, readable, and read-only in the kernel's eyes.
    assert!(mounted(&lab.mnt("data")), "tank/data is not mounted");
    assert_eq!(
        std::fs::read(lab.mnt("data/kept")).expect("read"),
        b"written read-write\n"
    );
    let err = std::fs::write(lab.mnt("data/new"), b"x").expect_err("a write on a read-only pool");
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    assert_eq!(
        lab.ok(
            "zfs",
            &["get", "-H", "-o", "value,source", "readonly", "tank/data"]
        ),
        "on\ttemporary\n"
    );
    // Every change is refused in OpenZFS's words, and nothing is half done.
    fails_with(
        &lab,
        "zfs",
        &["create", "tank/x"],
        "cannot create 'tank/x': pool is read-only\n",
    );
    fails_with(
        &lab,
        "zfs",
        &["set", "compression=lz4", "tank/data"],
        "cannot set property for 'tank/data': pool is read-only\n",
    );
    fails_with(
        &lab,
        "zfs",
        &["snapshot", "tank/data@s"],
        "cannot create snapshot 'tank/data@s': pool is read-only\n",
    );
    fails_with(
        &lab,
        "zfs",
        &["destroy", "tank/data@before"],
        "cannot destroy 'tank/data@before': pool is read-only\n",
    );
    fails_with(
        &lab,
        "zfs",
        &["rename", "tank/data", "tank/moved"],
        "cannot rename to 'tank/moved': pool is read-only\n",
    );
    fails_with(
        &lab,
        "zpool",
        &["set", "comment=x", "tank"],
        "cannot set property for 'tank': pool is read-only\n",
    );
    fails_with(
        &lab,
        "zpool",
        &["scrub", "tank"],
        "cannot scrub tank: pool is read-only\n",
    );
    fails_with(
        &lab,
        "zpool",
        &["destroy", "tank"],
        "cannot destroy 'tank': pool is read-only\n",
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["list", "-H", "-o", "name", "-t", "all", "-r", "tank"]
        ),
        "tank\ntank/data\ntank/data@before\n"
    );
    // A send of an existing snapshot reads only.
    let (code, _, err) = lab.run("sh", &["-c", "zfs send tank/data@before > /dev/null"]);
    assert_eq!(code, 0, "zfs send from a read-only pool: {err}");
    // Not in the cache file (OpenZFS keeps read-only pools out of it), yet listed.
    let cache = std::fs::read_to_string(lab.inner.path("zpool.cache")).unwrap_or_default();
    assert!(
        !cache.contains("\ttank"),
        "cache file lists the read-only pool:\n{cache}"
    );
    assert_eq!(lab.ok("zpool", &["list", "-H", "-o", "name"]), "tank\n");

    lab.ok("zpool", &["export", "tank"]);
    assert_eq!(
        digest(&disk),
        before,
        "the read-only import changed the device"
    );

    // Read-write again: the pool takes changes as before.
    lab.ok("zpool", &["import", "-d", &dir, "tank"]);
    assert_eq!(
        lab.ok("zpool", &["get", "-H", "-o", "value", "readonly", "tank"]),
        "off\n"
    );
    std::fs::write(lab.mnt("data/new"), b"x").expect("write after a read-write import");
    lab.ok("zfs", &["create", "tank/x"]);
}
