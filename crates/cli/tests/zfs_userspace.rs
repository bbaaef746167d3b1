//! `zfs userspace`/`groupspace` and `userquota@` through the real binary and a real FUSE
//! mount (issue 19): files owned by two uids, each uid's bytes listed in OpenZFS's
//! columns, a user quota that refuses that uid's writes with EDQUOT ("Disk quota
//! exceeded") and not the other's, kept across export and import. Root and /dev/fuse
//! required.

mod common;

use common::mount_lab::MountLab;

/// `zfs userspace -Hpn -o name,used`: uid → bytes.
fn used_by_uid(lab: &MountLab, command: &str) -> Vec<(u64, u64)> {
    lab.ok("zfs", &[command, "-Hpn", "-o", "name,used", "tank/fs"])
        .lines()
        .map(|line| {
            let (name, used) = line.split_once('\t').expect("two tab-separated fields");
            (name.parse().unwrap(), used.parse().unwrap())
        })
        .collect()
}

// Why: issue 19's build item and done-when — `zfs userspace` shows each uid's bytes, and
// `userquota@UID` is enforced with EDQUOT for that uid only, surviving export/import.
#[test]
fn userspace_lists_owners_and_userquota_refuses_with_edquot() {
    let lab = MountLab::new("tank/fs");
    let fs = lab.mnt("fs");
    let script = format!(
        "cd {fs} && touch a b && chown 1000:100 a && chown 2000:200 b && \
         dd if=/dev/urandom of=a bs=64k count=8 status=none && \
         dd if=/dev/urandom of=b bs=64k count=2 status=none && sync"
    );
    lab.ok("sh", &["-c", &script]);
    lab.ok("zpool", &["sync", "tank"]);
    let users = used_by_uid(&lab, "userspace");
    let uids: Vec<u64> = users.iter().map(|(uid, _)| *uid).collect();
    assert_eq!(uids, vec![0, 1000, 2000], "{users:?}");
    assert!(users[1].1 >= 512 << 10, "uid 1000: {users:?}");
    assert!(
        (128 << 10..512 << 10).contains(&users[2].1),
        "uid 2000: {users:?}"
    );
    let groups = used_by_uid(&lab, "groupspace");
    assert_eq!(
        groups.iter().map(|(g, _)| *g).collect::<Vec<_>>(),
        vec![0, 100, 200]
    );
    // The default columns, as OpenZFS prints them (no object accounting: "-").
    let table = lab.ok("zfs", &["userspace", "-n", "tank/fs"]);
    let header = table.lines().next().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["TYPE", "NAME", "USED", "QUOTA", "OBJUSED", "OBJQUOTA"],
        "{table}"
    );
    assert!(table.contains("POSIX User  1000"), "{table}");

    lab.ok("zfs", &["set", "userquota@1000=1M", "tank/fs"]);
    assert_eq!(
        lab.ok(
            "zfs",
            &[
                "get",
                "-H",
                "-o",
                "value,source",
                "userquota@1000",
                "tank/fs"
            ]
        ),
        "1M\tlocal\n"
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["get", "-H", "-o", "value", "userquota@2000", "tank/fs"]
        ),
        "none\n"
    );
    let (code, _, stderr) = lab.run("zfs", &["set", "userused@1000=5", "tank/fs"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "cannot set property for 'tank/fs': 'userused@1000' is readonly\n"
        )
    );
    // Appends to uid 1000's file, committed one by one, until the quota bites.
    let append = format!(
        "cd {fs} && for i in $(seq 1 40); do \
           dd if=/dev/urandom of=a bs=64k count=4 oflag=append conv=notrunc status=none \
             || exit 3; sync; zpool sync tank || true; done; exit 0"
    );
    let (code, _, stderr) = lab.run("sh", &["-c", &append]);
    assert_eq!(code, 3, "the quota never bit: {stderr}");
    assert!(stderr.contains("Disk quota exceeded"), "{stderr}");
    // uid 2000 writes on.
    let other = format!(
        "cd {fs} && dd if=/dev/urandom of=b bs=64k count=32 oflag=append conv=notrunc status=none"
    );
    lab.ok("sh", &["-c", &other]);

    lab.ok("zpool", &["export", "tank"]);
    let dir = lab.inner.path("");
    lab.ok("zpool", &["import", "-d", &dir, "tank"]);
    assert_eq!(
        lab.ok(
            "zfs",
            &["get", "-Hp", "-o", "value", "userquota@1000", "tank/fs"]
        ),
        "1048576\n"
    );
    lab.ok("zfs", &["set", "userquota@1000=none", "tank/fs"]);
    assert_eq!(
        lab.ok(
            "zfs",
            &["get", "-H", "-o", "value", "userquota@1000", "tank/fs"]
        ),
        "none\n"
    );
}

/// `zfs userspace -Hpn -o name,objused,objquota`: uid → (objects, object quota or "none").
fn objects_by_uid(lab: &MountLab) -> Vec<(u64, u64, String)> {
    lab.ok(
        "zfs",
        &[
            "userspace",
            "-Hpn",
            "-o",
            "name,objused,objquota",
            "tank/fs",
        ],
    )
    .lines()
    .map(|line| {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 3, "{line}");
        (
            fields[0].parse().unwrap(),
            fields[1].parse().unwrap(),
            fields[2].to_string(),
        )
    })
    .collect()
}

// Why: issue 19's build item — `userobjquota@` enforced (OpenZFS's object accounting):
// a new dataset counts each uid's objects (`obj-` keys, userobj_accounting active), `zfs
// userspace` lists them in OBJUSED/OBJQUOTA, and once the uid owns its quota's worth of
// objects a create through the mount fails with EDQUOT; before, the quota was refused.
#[test]
fn userobjquota_refuses_creates_with_edquot() {
    let lab = MountLab::new("tank/fs");
    let fs = lab.mnt("fs");
    lab.ok("zpool", &["sync", "tank"]);
    assert_eq!(
        lab.ok(
            "zpool",
            &[
                "get",
                "-H",
                "-o",
                "value",
                "feature@userobj_accounting",
                "tank"
            ]
        ),
        "active\n"
    );
    let before = objects_by_uid(&lab);
    let root = before.iter().find(|(uid, _, _)| *uid == 0).expect("uid 0");
    let quota = root.1 + 3;
    lab.ok(
        "zfs",
        &["set", &format!("userobjquota@0={quota}"), "tank/fs"],
    );
    let creates = format!(
        "cd {fs} && for i in $(seq 1 10); do touch f$i || exit 3; sync; zpool sync tank; done; exit 0"
    );
    let (code, _, stderr) = lab.run("sh", &["-c", &creates]);
    assert_eq!(code, 3, "the object quota never bit: {stderr}");
    assert!(stderr.contains("Disk quota exceeded"), "{stderr}");
    lab.ok("zpool", &["sync", "tank"]);
    let after = objects_by_uid(&lab);
    assert!(
        after.contains(&(0, quota, quota.to_string())),
        "{after:?} (quota {quota})"
    );
    let made = std::fs::read_dir(&fs).unwrap().count();
    assert_eq!(made, 3, "files made before the refusal");
    lab.ok("zfs", &["set", "userobjquota@0=none", "tank/fs"]);
    lab.ok("sh", &["-c", &format!("touch {fs}/g")]);
}
