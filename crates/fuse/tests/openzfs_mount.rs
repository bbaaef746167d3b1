//! Real OpenZFS filesystems mounted through FUSE by `OzfsFs` (the read-only import's mount
//! type) and read back with plain `std::fs`: against what zfs-fuse's own mount showed for
//! the same tree, against Zetta's OpenZFS reader for OpenZFS 2.x's fixture pool, and for
//! what a read-only mount must refuse.

mod common;
#[allow(dead_code)]
#[path = "../../zetta/tests/common/oracle.rs"]
mod oracle;
#[allow(dead_code)]
#[path = "../../zetta/tests/common/zfs_fuse.rs"]
mod zfs_fuse;

use common::{is_mounted, temp_dir as temp_dir_named, wait_for, Mount};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use zetta::io::{DeviceRef, FileDevice};
// Since session 17 images whose features Zetta maintains are the engine's to import; these tests
// mount them through the foreign read-only path (`OzfsFs`) on purpose.
use zetta::spa::openzfs::discover::find_pools_with_zetta as find_pools;
use zetta::spa::openzfs::pool::OpenZfsPool;
use zetta::zpl::openzfs::fs::ZplFs;
use zetta_fuse::openzfs::OzfsFs;
use zetta_fuse::{MountOptions, SnapDir};

fn temp_dir(what: &str) -> PathBuf {
    temp_dir_named("zetta-ozmount", what)
}

fn open_pool(paths: &[PathBuf]) -> Arc<OpenZfsPool> {
    let devices: Vec<DeviceRef> = paths
        .iter()
        .map(|p| Arc::new(FileDevice::open_read_only(p.to_str().unwrap()).unwrap()) as DeviceRef)
        .collect();
    let candidates = find_pools(&devices, 0);
    assert_eq!(candidates.len(), 1, "{paths:?}");
    Arc::new(
        OpenZfsPool::open_devices(&candidates[0], &devices)
            .unwrap_or_else(|e| panic!("{}: {e}", candidates[0].name)),
    )
}

fn mount(pool: &Arc<OpenZfsPool>, dataset: &str, snapdir: SnapDir) -> Mount {
    let at = temp_dir("mnt");
    let options = MountOptions {
        snapdir,
        ..MountOptions::default()
    };
    let fs = OzfsFs::open(pool.clone(), dataset, options)
        .unwrap_or_else(|e| panic!("open {dataset}: {e}"));
    let mounted = fs
        .mount(&at)
        .unwrap_or_else(|e| panic!("mount {dataset}: {e}"));
    wait_for("mount", || is_mounted(&at));
    Mount {
        at,
        mounted: Some(mounted),
    }
}

/// `lgetxattr`/`llistxattr` with the size probe, as tools call them.
/// `strict`: also check that a buffer one byte short answers ERANGE (zfs-fuse's own mount
/// does not, so its views are taken without).
fn xattrs(path: &Path, strict: bool) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; a null buffer of size 0 asks for the size.
    let size = unsafe { libc::llistxattr(p.as_ptr(), std::ptr::null_mut(), 0) };
    assert!(size >= 0, "llistxattr {}", path.display());
    let mut names = vec![0u8; size as usize];
    if size > 0 {
        // SAFETY: a buffer of the given length.
        let got = unsafe { libc::llistxattr(p.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
        assert_eq!(got, size, "llistxattr {}", path.display());
    }
    let mut out = BTreeMap::new();
    for name in names.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let value = if strict {
            getxattr(path, name)
        } else {
            getxattr_loose(path, name)
        };
        out.insert(name.to_vec(), value.expect("a listed xattr"));
    }
    out
}

fn getxattr_loose(path: &Path, name: &[u8]) -> Result<Vec<u8>, i32> {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = CString::new(name).unwrap();
    let mut value = vec![0u8; 64 << 10];
    // SAFETY: valid C strings and a buffer of the given length.
    let got = unsafe {
        libc::lgetxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    if got < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    value.truncate(got as usize);
    Ok(value)
}

fn getxattr(path: &Path, name: &[u8]) -> Result<Vec<u8>, i32> {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    let n = CString::new(name).unwrap();
    // SAFETY: valid C strings; a null buffer of size 0 asks for the size.
    let size = unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), std::ptr::null_mut(), 0) };
    if size < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    let mut value = vec![0u8; size as usize];
    if size > 0 {
        // One byte short: ERANGE, as Linux wants.
        // SAFETY: a buffer at least as long as the size given.
        let short = unsafe {
            libc::lgetxattr(
                p.as_ptr(),
                n.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len() - 1,
            )
        };
        assert_eq!(short, -1, "a short buffer for {}", path.display());
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ERANGE)
        );
        // SAFETY: a buffer of the given length.
        let got = unsafe {
            libc::lgetxattr(
                p.as_ptr(),
                n.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        assert_eq!(got, size);
    }
    Ok(value)
}

/// What a user sees of one entry: everything but atime (which reads move on a live mount).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: String,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    nlink: u64,
    rdev: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    target: Option<PathBuf>,
    contents: Option<Vec<u8>>,
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

fn kind_name(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "dir"
    } else if t.is_symlink() {
        "symlink"
    } else if t.is_file() {
        "file"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "char"
    } else if t.is_block_device() {
        "block"
    } else if t.is_socket() {
        "socket"
    } else {
        "?"
    }
}

/// Every entry under `root` (not `.zfs`), by path relative to it (`strict`: see `xattrs`).
fn manifest(root: &Path, strict: bool) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let path = root.join(&rel);
        let meta = std::fs::symlink_metadata(&path)
            .unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
        let t = meta.file_type();
        if t.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                let name = entry.unwrap().file_name();
                if rel.as_os_str().is_empty() && name == ".zfs" {
                    continue;
                }
                stack.push(rel.join(name));
            }
        }
        out.insert(
            rel.clone(),
            Entry {
                kind: kind_name(t).to_string(),
                mode: meta.mode(),
                uid: meta.uid(),
                gid: meta.gid(),
                size: meta.size(),
                nlink: meta.nlink(),
                rdev: meta.rdev(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime: (meta.ctime(), meta.ctime_nsec()),
                target: t.is_symlink().then(|| std::fs::read_link(&path).unwrap()),
                contents: t.is_file().then(|| {
                    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
                }),
                xattrs: xattrs(&path, strict),
            },
        );
    }
    out
}

/// `ours` against `want` (a view zfs-fuse's mount gave: its times are whole seconds, the
/// nanoseconds it stored are checked against the reader by `compare_with_reader`).
fn assert_same(what: &str, ours: &BTreeMap<PathBuf, Entry>, want: &BTreeMap<PathBuf, Entry>) {
    let ours_paths: Vec<&PathBuf> = ours.keys().collect();
    let want_paths: Vec<&PathBuf> = want.keys().collect();
    assert_eq!(ours_paths, want_paths, "{what}: the paths");
    for (path, w) in want {
        let o = &ours[path];
        // Contents compared apart: a 3 MiB mismatch printed whole helps nobody.
        assert!(
            o.contents == w.contents,
            "{what}: contents of {} differ",
            path.display()
        );
        let strip = |e: &Entry| Entry {
            contents: None,
            mtime: (e.mtime.0, 0),
            ctime: (e.ctime.0, 0),
            ..e.clone()
        };
        assert_eq!(strip(o), strip(w), "{what}: {}", path.display());
    }
}

/// A pool zfs-fuse made once per test binary (one zfs-fuse daemon per machine), exported,
/// with what zfs-fuse's own mount showed of its head and of its snapshot.
struct Made {
    dir: PathBuf,
    image: PathBuf,
    pool: String,
    /// The tree at snapshot time, as zfs-fuse's mount showed it.
    at_snapshot: BTreeMap<PathBuf, Entry>,
    /// The tree at export.
    at_export: BTreeMap<PathBuf, Entry>,
}

extern "C" fn remove_made() {
    if let Some(made) = MADE.get() {
        let _ = std::fs::remove_dir_all(&made.dir);
    }
}

static MADE: OnceLock<Made> = OnceLock::new();

fn made_by_zfs_fuse() -> &'static Made {
    MADE.get_or_init(|| {
        assert!(
            zfs_fuse::available(),
            "zfs-fuse is missing: scripts/setup.sh installs it (with sanoid)"
        );
        let dir = temp_dir("zfs-fuse");
        let image = dir.join("pool.img");
        zfs_fuse::vdev_file(&image);
        let mnt = dir.join("mnt");
        let mut daemon = zfs_fuse::ZfsFuse::start();
        let pool = format!("ozm{}", std::process::id() % 100_000);
        daemon.create_pool(&pool, &mnt, &[image.to_str().unwrap()]);
        zfs_fuse::populate(&mnt);
        // The kinds populate() leaves out: a block device and a socket.
        zfs_fuse::mknod(
            &mnt.join("blockdev"),
            libc::S_IFBLK | 0o600,
            libc::makedev(8, 1),
        );
        drop(std::os::unix::net::UnixListener::bind(mnt.join("socket")).unwrap());
        let at_snapshot = manifest(&mnt, false);
        daemon.zfs(&["snapshot", &format!("{pool}@snap")]);
        // Changed after the snapshot: the head and the snapshot differ.
        std::fs::write(mnt.join("small.txt"), b"changed after the snapshot\n").unwrap();
        std::fs::remove_file(mnt.join("fifo")).unwrap();
        std::fs::create_dir(mnt.join("made-after")).unwrap();
        let at_export = manifest(&mnt, false);
        daemon.export_all();
        drop(daemon);
        // SAFETY: registers a plain function to run at exit.
        unsafe { libc::atexit(remove_made) };
        Made {
            dir,
            image,
            pool,
            at_snapshot,
            at_export,
        }
    })
}

// Why: the read-only import mounts OpenZFS filesystems with OzfsFs; every kind of file a
// ZFS writer makes (multi-record, sparse, empty, fat-ZAP directory, short and long
// symlinks, hardlinks, fifo, char and block devices, socket, xattrs on files and
// directories, owners, modes, times) must look through the mount exactly as the writer's
// own mount (zfs-fuse) showed it, and `.zfs/snapshot/snap` must show the tree as it was
// at snapshot time.
#[test]
fn zfs_fuse_pool_reads_through_the_mount_as_zfs_fuse_showed_it() {
    let made = made_by_zfs_fuse();
    let pool = open_pool(std::slice::from_ref(&made.image));
    let m = mount(&pool, &made.pool, SnapDir::Hidden);
    assert_same("head", &manifest(&m.at, true), &made.at_export);
    let snap = m.at.join(".zfs/snapshot/snap");
    assert_same("snapshot", &manifest(&snap, true), &made.at_snapshot);
    // Nanosecond times (zfs-fuse's mount shows whole seconds) and inode numbers, as stored.
    for ds in pool.datasets().unwrap() {
        let fs = ZplFs::open(pool.objset(&ds).unwrap()).unwrap();
        let (at, slot) = if ds.is_snapshot {
            (snap.clone(), Some(0))
        } else {
            (m.at.clone(), None)
        };
        // The snapshot has the fifo, the head `made-after` instead: 75 entries each.
        assert_eq!(
            compare_with_reader(&fs, fs.root, &at, slot),
            75,
            "{}",
            ds.name
        );
    }
    // Spot checks of what populate() wrote, in case both views agreed on a wrong value.
    let small = std::fs::metadata(snap.join("small.txt")).unwrap();
    assert_eq!((small.uid(), small.gid(), small.nlink()), (1234, 5678, 2));
    assert_eq!(std::fs::read(snap.join("small.txt")).unwrap(), b"hello\n");
    assert_eq!(
        std::fs::read(m.at.join("small.txt")).unwrap(),
        b"changed after the snapshot\n"
    );
    let dev = std::fs::symlink_metadata(m.at.join("chardev")).unwrap();
    assert_eq!(dev.rdev(), libc::makedev(1, 3));
    assert_eq!(
        getxattr(&m.at.join("small.txt"), b"user.note").unwrap(),
        b"an xattr value"
    );
    assert_eq!(
        getxattr(&m.at.join("small.txt"), b"user.missing"),
        Err(libc::ENODATA)
    );
    // Inode numbers: the root is 1; a hardlink's two names are one inode; a snapshot's
    // inodes are not the head's.
    assert_eq!(std::fs::metadata(&m.at).unwrap().ino(), 1);
    assert_eq!(
        std::fs::metadata(m.at.join("hardlink.txt")).unwrap().ino(),
        std::fs::metadata(m.at.join("small.txt")).unwrap().ino()
    );
    assert_ne!(
        std::fs::metadata(snap.join("medium.bin")).unwrap().ino(),
        std::fs::metadata(m.at.join("medium.bin")).unwrap().ino()
    );
    // statfs answers sensible numbers.
    let st = nix_statvfs(&m.at);
    assert!(st.0 > 0 && st.1 <= st.0, "blocks {} avail {}", st.0, st.1);
    assert_eq!(
        std::fs::metadata(snap.join("..")).unwrap().ino(),
        1 << 48 | 1
    );
}

/// (f_blocks, f_bavail) of `statvfs`.
fn nix_statvfs(path: &Path) -> (u64, u64) {
    let p = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string and a zeroed out-struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(p.as_ptr(), &mut st) };
    assert_eq!(rc, 0, "statvfs");
    (st.f_blocks, st.f_bavail)
}

/// Every entry of `fs` under `dir`, compared with what the mount at `at` shows for it.
/// `slot`: the snapshot slot whose inodes the mount shows (None: the head's).
fn compare_with_reader(fs: &ZplFs, dir: u64, at: &Path, slot: Option<u64>) -> usize {
    let mut checked = 0;
    let mut listed: Vec<Vec<u8>> = std::fs::read_dir(at)
        .unwrap_or_else(|e| panic!("readdir {}: {e}", at.display()))
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .filter(|n| n != b".zfs")
        .collect();
    let entries = fs.readdir(dir).unwrap();
    let mut names: Vec<Vec<u8>> = entries.iter().map(|(n, _, _)| n.clone()).collect();
    listed.sort();
    names.sort();
    assert!(listed == names, "{}: the names listed", at.display());
    for (name, object, _) in entries {
        let path = at.join(std::ffi::OsStr::from_bytes(&name));
        let a = fs.attr(object).unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let what = path.display().to_string();
        assert_eq!(u64::from(meta.mode()), a.mode, "{what}: mode");
        assert_eq!(
            (u64::from(meta.uid()), u64::from(meta.gid())),
            (a.uid, a.gid),
            "{what}"
        );
        assert_eq!((meta.size(), meta.nlink()), (a.size, a.links), "{what}");
        let ino = match slot {
            None => object,
            Some(k) => (k + 2) << 48 | object,
        };
        assert_eq!(meta.ino(), ino, "{what}: inode");
        assert_eq!(
            (meta.mtime() as u64, meta.mtime_nsec() as u64),
            (a.mtime.sec, a.mtime.nsec),
            "{what}: mtime"
        );
        assert_eq!(
            (meta.ctime() as u64, meta.ctime_nsec() as u64),
            (a.ctime.sec, a.ctime.nsec),
            "{what}: ctime"
        );
        let stored = fs.xattrs(object).unwrap();
        let shown = xattrs(&path, true);
        assert_eq!(shown.len(), stored.len(), "{what}: xattrs");
        for (n, v) in stored {
            let linux = if [&b"user."[..], b"security.", b"trusted."]
                .iter()
                .any(|p| n.starts_with(p))
            {
                n
            } else {
                [&b"user."[..], &n].concat()
            };
            assert_eq!(shown.get(&linux), Some(&v), "{what}: xattr");
        }
        if a.is_dir() {
            checked += compare_with_reader(fs, object, &path, slot);
        } else if a.is_symlink() {
            assert_eq!(
                std::fs::read_link(&path).unwrap().as_os_str().as_bytes(),
                fs.readlink(object).unwrap()
            );
        } else if meta.file_type().is_file() {
            let got = std::fs::read(&path).unwrap();
            assert!(
                got == fs.read(object, 0, a.size as usize).unwrap(),
                "{what}: contents"
            );
        }
        checked += 1;
    }
    checked
}

/// Mounts every filesystem of the pool on `paths` and compares it with the reader:
/// (filesystems mounted, entries compared).
fn compare_every_filesystem(paths: &[PathBuf]) -> (usize, usize) {
    let pool = open_pool(paths);
    let mut checked = 0;
    let mut mounted = 0;
    for ds in pool.datasets().unwrap() {
        if ds.is_snapshot || ds.is_encrypted() {
            continue;
        }
        let os = pool.objset(&ds).unwrap();
        if os.phys.os_type != 2 {
            continue;
        }
        let fs = ZplFs::open(os).unwrap();
        let m = mount(&pool, &ds.name, SnapDir::Hidden);
        checked += compare_with_reader(&fs, fs.root, &m.at, None);
        mounted += 1;
    }
    (mounted, checked)
}

// Why: OpenZFS 2.x's own pool (zstd-compressed data written by x86_64 Linux and by
// big-endian FreeBSD) must read through the mount exactly as Zetta's OpenZFS reader reads
// it: names, modes, owners, sizes, links, nanosecond times, xattrs, every byte.
#[test]
fn openzfs_fixture_pool_reads_through_the_mount_as_the_reader_reads_it() {
    let fx = oracle::fixture("compression/testpool_zstd.tar.gz");
    let (mounted, checked) = compare_every_filesystem(std::slice::from_ref(&fx.file));
    assert_eq!(mounted, 3, "testpool_zstd, its x86_64 and ppc64_fbsd");
    assert!(checked > 0, "no files compared");
}

// Why: a 700-entry fat-ZAP directory must list whole through the mount: `readdir` offsets
// resume where the kernel stopped across its many requests, without losing or repeating
// a name.
#[test]
fn large_directory_lists_whole_through_the_mount() {
    let dir = temp_dir("fatzap");
    let img = dir.join("zfs-fuse-fatzap.img");
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zetta/tests/fixtures/zfs-fuse-fatzap.img.xz");
    let status = std::process::Command::new("xz")
        .arg("-dc")
        .arg(&src)
        .stdout(std::fs::File::create(&img).unwrap())
        .status()
        .expect("xz runs");
    assert!(status.success(), "xz -dc {}", src.display());
    let (_, checked) = compare_every_filesystem(std::slice::from_ref(&img));
    assert!(checked >= 700, "{checked} entries compared");
    let _ = std::fs::remove_dir_all(&dir);
}

fn errno_of<T>(r: std::io::Result<T>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

// Why: an imported OpenZFS pool is read-only: every change through its mount (create,
// mkdir, open for writing, unlink, setxattr, chmod), in the head and under .zfs, must fail
// with EROFS and leave the tree as it was.
#[test]
fn writes_through_the_mount_answer_erofs() {
    let made = made_by_zfs_fuse();
    let pool = open_pool(std::slice::from_ref(&made.image));
    let m = mount(&pool, &made.pool, SnapDir::Visible);
    for base in [m.at.clone(), m.at.join(".zfs/snapshot/snap")] {
        let erofs = Some(libc::EROFS);
        let what = base.display().to_string();
        assert_eq!(
            errno_of(std::fs::File::create(base.join("new"))),
            erofs,
            "{what}"
        );
        assert_eq!(
            errno_of(std::fs::create_dir(base.join("newdir"))),
            erofs,
            "{what}"
        );
        assert_eq!(
            errno_of(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(base.join("small.txt"))
            ),
            erofs,
            "{what}"
        );
        assert_eq!(
            errno_of(std::fs::remove_file(base.join("small.txt"))),
            erofs
        );
        assert_eq!(
            errno_of(std::fs::set_permissions(
                base.join("small.txt"),
                std::os::unix::fs::PermissionsExt::from_mode(0o777)
            )),
            erofs
        );
        let p = CString::new(base.join("small.txt").as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C strings and a 1-byte value.
        let rc =
            unsafe { libc::setxattr(p.as_ptr(), c"user.x".as_ptr(), b"v".as_ptr().cast(), 1, 0) };
        assert_eq!(rc, -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), erofs);
    }
    assert_eq!(
        errno_of(std::fs::create_dir(m.at.join(".zfs/snapshot/new"))),
        Some(libc::EROFS)
    );
    assert_same(
        "head after refused writes",
        &manifest(&m.at, true),
        &made.at_export,
    );
}

// Why: `snapdir` shapes `.zfs` as in OpenZFS: hidden (the default) leaves it out of the
// root's listing but reachable by name; visible lists it; disabled makes it absent. Its
// `snapshot` directory lists the dataset's snapshots, beside an empty `shares`.
#[test]
fn snapdir_hidden_visible_and_disabled() {
    let made = made_by_zfs_fuse();
    let pool = open_pool(std::slice::from_ref(&made.image));
    let root_names = |at: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(at)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let hidden = mount(&pool, &made.pool, SnapDir::Hidden);
    assert!(!root_names(&hidden.at).contains(&".zfs".to_string()));
    assert!(hidden.at.join(".zfs").is_dir());
    assert_eq!(root_names(&hidden.at.join(".zfs")), ["shares", "snapshot"]);
    assert_eq!(root_names(&hidden.at.join(".zfs/snapshot")), ["snap"]);
    assert!(root_names(&hidden.at.join(".zfs/shares")).is_empty());
    drop(hidden);
    let visible = mount(&pool, &made.pool, SnapDir::Visible);
    assert!(root_names(&visible.at).contains(&".zfs".to_string()));
    assert_eq!(root_names(&visible.at.join(".zfs/snapshot")), ["snap"]);
    drop(visible);
    let disabled = mount(&pool, &made.pool, SnapDir::Disabled);
    assert!(!root_names(&disabled.at).contains(&".zfs".to_string()));
    assert_eq!(
        errno_of(std::fs::metadata(disabled.at.join(".zfs"))),
        Some(libc::ENOENT)
    );
}

// Why: encrypted filesystems cannot be read without their keys, which a read-only import
// does not load: opening one must refuse in OpenZFS's words instead of serving ciphertext.
#[test]
fn encrypted_filesystem_refuses_to_open() {
    let fx = oracle::unpack(&["cli_root/zpool_import/blockfiles/cryptv0.dat.bz2"]);
    let pool = open_pool(&fx.devices);
    let encrypted: Vec<String> = pool
        .datasets()
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_snapshot && d.is_encrypted())
        .map(|d| d.name)
        .collect();
    assert!(
        !encrypted.is_empty(),
        "the fixture has an encrypted dataset"
    );
    for name in encrypted {
        match OzfsFs::open(pool.clone(), &name, MountOptions::default()) {
            Err(zetta_fuse::MountError::Dataset(why)) => {
                assert_eq!(
                    why,
                    format!("cannot mount '{name}': encryption key not loaded")
                )
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name}: an encrypted filesystem opened"),
        }
    }
}

// Why: a pool's bytes are outside input: a data block that no longer matches its checksum
// must answer EIO to the reader of that file (never a panic, never wrong bytes), and the
// mount must keep serving everything else.
#[test]
fn a_corrupt_block_reads_as_eio_and_the_mount_lives_on() {
    use std::os::unix::fs::FileExt;
    use zetta::zio::openzfs::blkptr::BlockPointer;
    let fx = oracle::fixture("compression/testpool_zstd.tar.gz");
    // The first regular file of x86_64 whose first block pointer is an ordinary block:
    // every copy of that block (an indirect block has two) is damaged.
    let (victim, offsets) = {
        let pool = open_pool(std::slice::from_ref(&fx.file));
        let ds = pool
            .datasets()
            .unwrap()
            .into_iter()
            .find(|d| d.name.ends_with("/x86_64"))
            .expect("testpool_zstd/x86_64");
        let fs = ZplFs::open(pool.objset(&ds).unwrap()).unwrap();
        let mut found = None;
        for (name, object, _) in fs.readdir(fs.root).unwrap() {
            let attr = fs.attr(object).unwrap();
            let dn = fs.os.dnode(object).unwrap();
            if attr.mode & 0o170000 != 0o100000 || dn.blkptrs.is_empty() {
                continue;
            }
            let bp = BlockPointer::decode(dn.order, &dn.blkptrs[0], 0).unwrap();
            if bp.is_embedded() || bp.is_hole() || bp.is_gang() {
                continue;
            }
            // Allocations start after the two front labels and the boot block (4 MiB).
            let offsets: Vec<u64> = bp
                .dvas()
                .iter()
                .filter(|d| d.is_valid())
                .filter_map(|d| d.offset_bytes())
                .map(|at| at + (4 << 20))
                .collect();
            found = Some((String::from_utf8(name).unwrap(), offsets));
            break;
        }
        found.expect("a file with a block")
    };
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fx.file)
        .unwrap();
    for offset in offsets {
        let mut bytes = [0u8; 64];
        dev.read_exact_at(&mut bytes, offset).unwrap();
        for b in &mut bytes {
            *b ^= 0x5a;
        }
        dev.write_all_at(&bytes, offset).unwrap();
    }
    drop(dev);
    let pool = open_pool(std::slice::from_ref(&fx.file));
    let m = mount(&pool, "testpool_zstd/x86_64", SnapDir::Hidden);
    assert_eq!(
        errno_of(std::fs::read(m.at.join(&victim))),
        Some(libc::EIO),
        "{victim}"
    );
    // Its attributes, its xattrs, the listing and every other file still read.
    assert!(std::fs::symlink_metadata(m.at.join(&victim)).is_ok());
    assert!(!xattrs(&m.at.join(&victim), true).is_empty());
    let names: Vec<std::ffi::OsString> = std::fs::read_dir(&m.at)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(names.contains(&std::ffi::OsString::from(&victim)));
    for entry in std::fs::read_dir(&m.at).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name() != Some(std::ffi::OsStr::new(&victim)) && path.is_file() {
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

// Why: the daemon mounts by name; a name the pool does not hold (or a snapshot's) must
// refuse in OpenZFS's words, not mount something else.
#[test]
fn a_missing_dataset_refuses_to_open() {
    let fx = oracle::fixture("compression/testpool_zstd.tar.gz");
    let pool = open_pool(std::slice::from_ref(&fx.file));
    for name in ["testpool_zstd/nope", "testpool_zstd@nope"] {
        match OzfsFs::open(pool.clone(), name, MountOptions::default()) {
            Err(zetta_fuse::MountError::Dataset(why)) => {
                assert_eq!(why, format!("cannot open '{name}': dataset does not exist"))
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => panic!("{name}: opened"),
        }
    }
}

// Why: pools from old and foreign writers (SPA version 1 with ZPL 1 directories, whose
// entries carry no file type; a big-endian SPARC pool; a raidz pool) must mount and read
// through the mount as the reader reads them.
#[test]
fn old_and_foreign_pools_read_through_the_mount() {
    const BLOCKFILES: &str = "cli_root/zpool_upgrade/blockfiles";
    let pools: Vec<Vec<String>> = vec![
        vec![format!("{BLOCKFILES}/zfs-pool-v1.dat.bz2")],
        vec![format!("{BLOCKFILES}/zfs-pool-v15.dat.bz2")],
        (1..=3)
            .map(|i| format!("{BLOCKFILES}/zfs-pool-v3raidz{i}.dat.bz2"))
            .collect(),
        vec!["history/sparc.migratedpool.DAT.Z".to_string()],
    ];
    for rels in pools {
        let dir = oracle::unpack(&rels);
        // The SPARC pool's filesystem is empty: mounted and listed is what it can show.
        let (mounted, _) = compare_every_filesystem(&dir.devices);
        assert!(mounted > 0, "{rels:?}: no filesystem mounted");
    }
}

// Why: `zfs set snapdir=…` and the other mount properties reach a running mount through
// `Mounted::apply_flags`; on an imported OpenZFS pool that must change `.zfs`'s listing
// but never make the mount writable, whatever `readonly` says.
#[test]
fn applied_flags_change_snapdir_but_never_make_the_mount_writable() {
    let made = made_by_zfs_fuse();
    let pool = open_pool(std::slice::from_ref(&made.image));
    let m = mount(&pool, &made.pool, SnapDir::Hidden);
    let listed = |at: &Path| {
        std::fs::read_dir(at)
            .unwrap()
            .any(|e| e.unwrap().file_name() == ".zfs")
    };
    assert!(!listed(&m.at));
    let writable_visible = MountOptions {
        readonly: false,
        snapdir: SnapDir::Visible,
        ..MountOptions::default()
    };
    m.mounted
        .as_ref()
        .unwrap()
        .apply_flags(&m.at, &writable_visible)
        .unwrap();
    assert!(listed(&m.at));
    assert_eq!(
        errno_of(std::fs::File::create(m.at.join("new"))),
        Some(libc::EROFS)
    );
    let options = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(m.at.to_str().unwrap()))
        .map(|l| l.split(' ').nth(5).unwrap_or("").to_string())
        .unwrap();
    assert!(options.split(',').any(|o| o == "ro"), "{options}");
}
