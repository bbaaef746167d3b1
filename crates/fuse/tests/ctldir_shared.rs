//! `.zfs/snapshot` of a live Zetta mount (`ZplFs`, mounted in this process through FUSE)
//! read with plain `std::fs`, under the pool's shared lock: while the test itself holds that
//! lock, and by several readers at once beside a writer of the live tree.

mod common;

use common::{is_mounted, temp_dir as temp_dir_named, wait_for, Mount, WAIT};
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use zetta::io::{DeviceRef, MemDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::{Creds, FileKind, Timespec};
use zetta_fuse::{MountOptions, ZplFs};

fn temp_dir(what: &str) -> PathBuf {
    temp_dir_named("zetta-ctldir", what)
}

/// The tree the snapshot holds: `d{k}/f{n}` → bytes, sizes from empty to several records.
fn tree() -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for n in 0..48u32 {
        let size = (n as usize * 9_973) % 400_000;
        let data = (0..size as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 ^ n as u8)
            .collect();
        files.insert(format!("d{}/f{n}", n % 4), data);
    }
    files
}

/// Writes `files` into `tank/fs` (directories made on the way), each with `salt` mixed in.
fn write_tree(spa: &mut Spa, files: &BTreeMap<String, Vec<u8>>, salt: u8) {
    let now = Timespec { sec: 1, nsec: 0 };
    let creds = Creds { uid: 0, gid: 0 };
    spa.with_zpl("tank/fs", |vfs, os, ctx| {
        for (path, data) in files {
            let (dir, name) = path.split_once('/').unwrap();
            let dir = match vfs.lookup(os, ctx, vfs.root, dir.as_bytes()) {
                Ok(attr) => attr.object,
                Err(_) => {
                    let kind = FileKind::Directory;
                    vfs.create(
                        os,
                        ctx,
                        vfs.root,
                        dir.as_bytes(),
                        kind,
                        0o755,
                        creds,
                        0,
                        now,
                    )?
                    .object
                }
            };
            let file = match vfs.lookup(os, ctx, dir, name.as_bytes()) {
                Ok(attr) => attr.object,
                Err(_) => {
                    let kind = FileKind::Regular;
                    vfs.create(os, ctx, dir, name.as_bytes(), kind, 0o644, creds, 0, now)?
                        .object
                }
            };
            let data: Vec<u8> = data.iter().map(|b| b ^ salt).collect();
            vfs.write(os, ctx, file, 0, &data, now)?;
        }
        Ok(())
    })
    .unwrap();
    spa.sync().unwrap();
}

/// A pool with `tank/fs` holding `tree()` as snapshot `tank/fs@snap`, the live tree
/// rewritten since, mounted.
fn setup() -> (Arc<RwLock<Spa>>, Mount, BTreeMap<String, Vec<u8>>) {
    let device = Arc::new(MemDevice::new("/mem/ctldir", 512 << 20));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/ctldir".to_string(), device as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    spa.create_filesystem("tank/fs").unwrap();
    let files = tree();
    write_tree(&mut spa, &files, 0);
    spa.snapshot(&["tank/fs@snap".to_string()]).unwrap();
    write_tree(&mut spa, &files, 0x5a);
    let pool = Arc::new(RwLock::new(spa));
    let options = MountOptions {
        fsname: "tank/fs".to_string(),
        ..MountOptions::default()
    };
    let fs = ZplFs::open(pool.clone(), "tank/fs", options).unwrap();
    let at = temp_dir("mnt");
    let mounted = fs.mount(&at).unwrap();
    wait_for("mount", || is_mounted(&at));
    let mount = Mount {
        at,
        mounted: Some(mounted),
    };
    (pool, mount, files)
}

/// Every regular file under `dir`, read whole through the mount, by relative path
/// (`ls -lR` and `cat` of each: listings, lookups, getattr, reads).
fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                let data = std::fs::read(entry.path()).unwrap();
                assert_eq!(data.len() as u64, meta.len(), "{}", entry.path().display());
                let rel = entry
                    .path()
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

// Why: every `.zfs/snapshot` request (lookup, getattr, readdir, read) took the pool's
// exclusive lock, so it waited for every reader of the pool and they for it. Here the test
// holds the pool's lock shared, as any reader does: a walk and read of the whole snapshot
// through the kernel must still complete, byte for byte (today it hangs until released).
#[test]
fn snapshot_tree_reads_complete_while_the_pool_lock_is_held_shared() {
    let (pool, mount, files) = setup();
    let snap = mount.at.join(".zfs/snapshot/snap");
    let shared = pool.read();
    let got = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let snap = &snap;
        scope.spawn(move || {
            let _ = tx.send(read_tree(snap));
        });
        let got = rx.recv_timeout(WAIT);
        // Let a blocked request finish before the scope joins it.
        drop(shared);
        got
    });
    let got = got.expect("`.zfs/snapshot` reads blocked behind a shared pool lock");
    assert!(
        got == files,
        "the snapshot's tree differs from what was written"
    );
    drop(mount);
}

// Why: with `.zfs` under the shared lock, several readers now run inside one snapshot's
// object set at once (its caches shared between them) while a writer changes the live
// tree: every reader must see the snapshot's bytes exactly, and a destroyed snapshot's
// directory must go away.
#[test]
fn parallel_readers_of_a_snapshot_see_it_byte_for_byte_beside_a_live_writer() {
    let (pool, mount, files) = setup();
    let snap = mount.at.join(".zfs/snapshot/snap");
    std::thread::scope(|scope| {
        let writer = {
            let pool = &pool;
            let files = &files;
            scope.spawn(move || {
                for round in 0..4u8 {
                    write_tree(&mut pool.write(), files, 0x10 + round);
                }
            })
        };
        let readers: Vec<_> = (0..6)
            .map(|_| {
                let snap = &snap;
                scope.spawn(move || (0..2).map(|_| read_tree(snap)).collect::<Vec<_>>())
            })
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
    // The live tree holds the last round's bytes.
    let live = read_tree(&mount.at);
    let last: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().map(|b| b ^ 0x13).collect()))
        .collect();
    assert!(live == last, "the live tree differs from the last write");
    pool.write().destroy_snapshot("tank/fs@snap").unwrap();
    // The kernel may trust the name for its one-second entry TTL.
    wait_for("the destroyed snapshot's directory to go", || {
        std::fs::metadata(&snap).is_err()
    });
    let listed = std::fs::read_dir(mount.at.join(".zfs/snapshot"))
        .unwrap()
        .count();
    assert_eq!(listed, 0);
    drop(mount);
}

// Why: a mount now holds the object set of each snapshot it reads, by name: a snapshot
// destroyed and taken again under the same name must show its own bytes through the kernel,
// never the held object set's (nor pages the kernel cached for the same inode numbers).
#[test]
fn a_snapshot_taken_again_under_a_destroyed_ones_name_shows_its_own_bytes() {
    let (pool, mount, files) = setup();
    let snap = mount.at.join(".zfs/snapshot/snap");
    let (path, old) = files.iter().rev().find(|(_, d)| d.len() > 4096).unwrap();
    assert!(&std::fs::read(snap.join(path)).unwrap() == old);
    pool.write().destroy_snapshot("tank/fs@snap").unwrap();
    wait_for("the destroyed snapshot's directory to go", || {
        std::fs::metadata(&snap).is_err()
    });
    // The live tree holds every file xor 0x5a (same sizes); snapshot it under the old name.
    pool.write()
        .snapshot(&["tank/fs@snap".to_string()])
        .unwrap();
    let new: Vec<u8> = old.iter().map(|b| b ^ 0x5a).collect();
    wait_for("the new snapshot's directory", || {
        std::fs::metadata(&snap).is_ok()
    });
    assert!(
        std::fs::read(snap.join(path)).unwrap() == new,
        "the new snapshot showed the destroyed one's bytes"
    );
    drop(mount);
}
