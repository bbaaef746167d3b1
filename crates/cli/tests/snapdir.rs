//! `.zfs/snapshot` of a filesystem served by the daemon, read through the kernel while the
//! live tree changes, and followed through `zfs rename` and `zfs destroy` of its snapshots.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;

use common::mount_lab::MountLab;

/// Every regular file under `dir` by relative path, read whole (`ls -lR` and `cat`).
fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path);
            } else {
                let data = std::fs::read(&path).unwrap();
                assert_eq!(data.len() as u64, meta.len(), "{}", path.display());
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, data);
            }
        }
    }
    out
}

/// `d{k}/f{n}` → bytes (empty to a few records), `salt` mixed in.
fn tree(salt: u8) -> BTreeMap<String, Vec<u8>> {
    (0..24u32)
        .map(|n| {
            let size = (n as usize * 13_331) % 300_000;
            let data = (0..size as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8 ^ n as u8 ^ salt)
                .collect();
            (format!("d{}/f{n}", n % 3), data)
        })
        .collect()
}

fn write_tree(root: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (path, data) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// Why: `.zfs/snapshot` requests took the pool's exclusive lock and opened the snapshot afresh
// for each; now a mount holds snapshot object sets and reads them under the shared lock.
// Through the daemon: readers of a snapshot in parallel with a writer of the live tree see
// the snapshot byte for byte, and a renamed or destroyed snapshot is followed at once (never
// read through the object set the mount held for it).
#[test]
fn snapshot_readers_run_beside_a_writer_and_follow_rename_and_destroy() {
    let lab = MountLab::new("tank/fs");
    let fs = lab.mnt("fs");
    let fs = Path::new(&fs);
    let files = tree(0);
    write_tree(fs, &files);
    lab.ok("zfs", &["snapshot", "tank/fs@s"]);
    let snap = fs.join(".zfs/snapshot/s");
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for round in 1..=3u8 {
                write_tree(fs, &tree(round));
            }
        });
        let readers: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| (0..2).map(|_| read_tree(&snap)).collect::<Vec<_>>()))
            .collect();
        writer.join().unwrap();
        for reader in readers {
            for got in reader.join().unwrap() {
                assert!(
                    got == files,
                    "a reader saw another tree than the snapshot's"
                );
            }
        }
    });
    let live: BTreeMap<String, Vec<u8>> = read_tree(fs);
    assert!(live == tree(3), "the live tree differs from the last write");

    lab.ok("zfs", &["rename", "tank/fs@s", "tank/fs@t"]);
    // The kernel may trust a name for its one-second entry TTL.
    wait_for("the renamed snapshot's old name to go", || {
        std::fs::metadata(&snap).is_err()
    });
    assert!(read_tree(&fs.join(".zfs/snapshot/t")) == files);
    lab.ok("zfs", &["destroy", "tank/fs@t"]);
    wait_for("the destroyed snapshot to go", || {
        std::fs::metadata(fs.join(".zfs/snapshot/t")).is_err()
    });
    assert_eq!(
        std::fs::read_dir(fs.join(".zfs/snapshot")).unwrap().count(),
        0
    );
}

// Why: getxattr/listxattr on `.zfs/snapshot/...` were refused for every pool (EOPNOTSUPP,
// an empty list) while OpenZFS serves a snapshot's xattrs through its snapshot mount, so
// `getfattr` and `rsync -X`/`tar --xattrs` from a snapshot lost them. Both `xattr=sa` and
// `xattr=dir` filesystems, a file and a directory, a value larger than a ZAP entry: the
// snapshot shows the values it was taken with while the head changes; setting or removing
// one there is EROFS, as on OpenZFS's read-only snapshot mounts.
#[test]
fn snapshot_xattrs_are_read_through_ctldir_and_read_only() {
    use common::host::Host;
    let host = Host::new();
    host.pool("tank", 256 << 20, false);
    for mode in ["sa", "dir"] {
        let fs = format!("tank/{mode}");
        host.zfs_ok(&["create", "-o", &format!("xattr={mode}"), &fs]);
        let mnt = host.mnt(&fs);
        host.sh_ok(&format!(
            "cd {mnt} && echo data > f && mkdir d && setfattr -n user.color -v blue f \
             && setfattr -n user.big -v $(head -c 12000 /dev/zero | tr '\\0' z) f \
             && setfattr -n user.kind -v folder d && zfs snapshot {fs}@S \
             && setfattr -n user.color -v red f && setfattr -x user.big f && setfattr -x user.kind d"
        ));
        let snap = format!("{mnt}/.zfs/snapshot/S");
        let dump = |path: &str| host.sh_ok(&format!("getfattr -d --absolute-names -m - {path}"));
        let big = "z".repeat(12000);
        assert_eq!(
            dump(&format!("{snap}/f")),
            format!("# file: {snap}/f\nuser.big=\"{big}\"\nuser.color=\"blue\"\n\n"),
            "xattr={mode}"
        );
        assert_eq!(
            dump(&format!("{snap}/d")),
            format!("# file: {snap}/d\nuser.kind=\"folder\"\n\n")
        );
        assert_eq!(
            dump(&format!("{mnt}/f")),
            format!("# file: {mnt}/f\nuser.color=\"red\"\n\n"),
            "the head changed, not the snapshot"
        );
        let missing = host.sh(&format!("getfattr -n user.none {snap}/f"));
        assert!(
            missing.stderr.contains("No such attribute"),
            "{}",
            missing.stderr
        );
        // .zfs and .zfs/snapshot themselves have none.
        assert_eq!(dump(&format!("{mnt}/.zfs/snapshot")), "");
        for change in [
            format!("setfattr -n user.color -v green {snap}/f"),
            format!("setfattr -x user.color {snap}/f"),
        ] {
            let refused = host.sh(&change);
            assert_ne!(refused.code, 0, "{change}");
            assert!(
                refused.stderr.contains("Read-only file system"),
                "{change}: {}",
                refused.stderr
            );
        }
        assert_eq!(
            host.sh_ok(&format!("getfattr --only-values -n user.color {snap}/f")),
            "blue"
        );
    }
}
