//! The ZPL's write policy seen through real FUSE mounts (issue 13 part 6): on a full pool
//! every operation that takes space fails with ENOSPC, past a quota or a refquota with
//! EDQUOT, never EIO; deleting makes room and writes succeed again.
//!
//! Root and `/dev/fuse` required, like `mounts.rs`.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::AsRawFd;

mod common;

use common::mount_lab::{mounted, MountLab};

const MIB: u64 = 1 << 20;
const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;

/// Incompressible bytes (xorshift).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut data = vec![0u8; len];
    for word in data.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        word.copy_from_slice(&state.to_le_bytes()[..word.len()]);
    }
    data
}

/// Appends `chunk`-byte writes to `path` until one fails; returns the bytes written and
/// the error.
fn fill(path: &str, chunk: usize) -> (u64, std::io::Error) {
    let data = noise(chunk, path.len() as u64);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {path}: {e}"));
    let mut written = 0u64;
    for _ in 0..1_000_000 {
        match file.write_all(&data) {
            Ok(()) => written += chunk as u64,
            Err(e) => return (written, e),
        }
    }
    panic!("{chunk}-byte writes to {path} never failed");
}

fn setxattr(path: &str, name: &str, value: &[u8]) -> std::io::Result<()> {
    let path = CString::new(path).unwrap();
    let name = CString::new(name).unwrap();
    // SAFETY: NUL-terminated strings and a buffer of the given length, all live here.
    let rc = unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn fallocate(path: &str, offset: u64, len: u64) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    // SAFETY: an open descriptor; fallocate takes no pointers.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset as i64, len as i64) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Each operation that takes space, on `fs` where nothing more fits: refused with `want`
/// (fallocate with ENOSPC in every case, as OpenZFS). Before each, 4 KiB writes to a
/// filler file take whatever a commit made free, so every refusal is the mount's
/// admission, not a race with the txg timer.
fn assert_every_operation_refused(fs: &str, want: i32) {
    let target = format!("{fs}/target");
    type Op = Box<dyn Fn() -> std::io::Result<()>>;
    let ops: Vec<(&str, i32, Op)> = vec![
        ("write", want, {
            let target = target.clone();
            Box::new(move || {
                let mut f = std::fs::OpenOptions::new().append(true).open(&target)?;
                f.write_all(&noise(64 << 10, 3))
            })
        }),
        ("create", want, {
            let path = format!("{fs}/created");
            Box::new(move || std::fs::File::create(&path).map(|_| ()))
        }),
        ("mkdir", want, {
            let path = format!("{fs}/dir");
            Box::new(move || std::fs::create_dir(&path))
        }),
        ("symlink", want, {
            let path = format!("{fs}/link");
            Box::new(move || std::os::unix::fs::symlink("target", &path))
        }),
        ("setxattr", want, {
            let target = target.clone();
            Box::new(move || setxattr(&target, "user.policy", b"value"))
        }),
        ("truncate (grow)", want, {
            let target = target.clone();
            Box::new(move || {
                let f = std::fs::OpenOptions::new().write(true).open(&target)?;
                f.set_len(1 << 40)
            })
        }),
        ("fallocate", ENOSPC, {
            let target = target.clone();
            Box::new(move || fallocate(&target, 1 << 41, 64 * MIB))
        }),
    ];
    for (what, errno, op) in ops {
        let (_, full) = fill(&format!("{fs}/filler"), 4096);
        assert_eq!(full.raw_os_error(), Some(want), "filling: {full}");
        match op() {
            Ok(()) => panic!("{what} succeeded on {fs} with no space left"),
            Err(e) => assert_eq!(e.raw_os_error(), Some(errno), "{what}: {e}"),
        }
    }
    for name in ["created", "dir", "link"] {
        assert!(
            std::fs::symlink_metadata(format!("{fs}/{name}")).is_err(),
            "a refused operation left {name} behind"
        );
    }
    assert_eq!(
        std::fs::metadata(&target).unwrap().len(),
        4096,
        "a refused write, truncate or fallocate changed the size"
    );
}

/// After the space-taking `big` file is removed: writes, creates and the rest succeed.
fn assert_room_again(fs: &str) {
    std::fs::remove_file(format!("{fs}/big")).expect("rm with no space left");
    std::fs::remove_file(format!("{fs}/filler")).expect("rm with no space left");
    let mut f = std::fs::File::create(format!("{fs}/again")).expect("create after rm");
    for i in 0..4 {
        f.write_all(&noise(MIB as usize, i))
            .unwrap_or_else(|e| panic!("writing after rm: {e}"));
    }
    f.sync_all().unwrap();
    std::fs::create_dir(format!("{fs}/dir")).expect("mkdir after rm");
    std::os::unix::fs::symlink("again", format!("{fs}/link")).expect("symlink after rm");
    setxattr(&format!("{fs}/again"), "user.policy", b"value").expect("setxattr after rm");
    fallocate(&format!("{fs}/again"), 8 * MIB, MIB).expect("fallocate after rm");
}

// Why: issue 13 part 6 — the write policy lived in the FUSE glue and only `write` and
// creating files were seen failing on a full pool; a growing truncate was admitted as a
// change that frees space. Through the mount: write, create, mkdir, symlink, setxattr,
// truncate-grow and fallocate on a full pool all fail with ENOSPC (never EIO), and after
// rm everything succeeds again.
#[test]
fn full_pool_refuses_every_space_taking_operation_with_enospc() {
    let lab = MountLab::with(256 * MIB, &["-o", "compression=off", "tank/fs"]);
    let fs = lab.mnt("fs");
    assert!(mounted(&fs), "tank/fs is not mounted");
    std::fs::write(format!("{fs}/target"), noise(4096, 1)).unwrap();
    let (big, error) = fill(&format!("{fs}/big"), MIB as usize);
    assert_eq!(error.raw_os_error(), Some(ENOSPC), "{error}");
    assert!(big > 100 * MIB, "only {} MiB fit in 256 MiB", big / MIB);
    assert_every_operation_refused(&fs, ENOSPC);
    assert_room_again(&fs);
}

// Why: issue 13 part 6 — past a quota or a refquota only writes were seen failing with
// EDQUOT; the namespace and attribute changes passed any quota. Through the mount, every
// operation that takes space fails with EDQUOT (fallocate with ENOSPC), never EIO, and rm
// makes room again.
#[test]
fn quotas_refuse_every_space_taking_operation_with_edquot() {
    let lab = MountLab::with(512 * MIB, &[]);
    for (name, prop) in [("tank/q", "quota=8M"), ("tank/r", "refquota=8M")] {
        lab.ok(
            "zfs",
            &["create", "-o", prop, "-o", "compression=off", name],
        );
        let fs = lab.mnt(name.trim_start_matches("tank/"));
        assert!(mounted(&fs), "{name} is not mounted");
        std::fs::write(format!("{fs}/target"), noise(4096, 1)).unwrap();
        let (big, error) = fill(&format!("{fs}/big"), MIB as usize);
        assert_eq!(error.raw_os_error(), Some(EDQUOT), "{prop}: {error}");
        assert!(big <= 8 * MIB, "{prop} let {} MiB through", big / MIB);
        assert_every_operation_refused(&fs, EDQUOT);
        assert_room_again(&fs);
    }
}

// Why: `rm big; touch new` past a quota failed with EDQUOT about once in five runs of the
// test above: the kernel sends the FORGET that frees an unlinked file after answering the
// unlink, and another FUSE worker could serve the next request first. OpenZFS frees a file
// nobody holds within `unlinkat`. A change refused for space now waits for the FORGET of a
// file unlinked a moment ago and is tried again. An O_PATH descriptor holds the inode (so
// the FORGET comes only when it is closed, 300 ms later): the write waits for it instead
// of failing at once.
#[test]
fn a_write_refused_for_space_waits_for_the_forget_of_a_file_just_unlinked() {
    let lab = MountLab::with(
        512 * MIB,
        &["-o", "quota=8M", "-o", "compression=off", "tank/q"],
    );
    let fs = lab.mnt("q");
    assert!(mounted(&fs), "tank/q is not mounted");
    std::fs::write(format!("{fs}/big"), noise(6 * MIB as usize, 3)).unwrap();
    let big = CString::new(format!("{fs}/big")).unwrap();
    // SAFETY: a NUL-terminated path; the descriptor is closed by the thread below.
    let fd = unsafe { libc::open(big.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    assert!(fd >= 0, "open O_PATH: {}", std::io::Error::last_os_error());
    std::fs::remove_file(format!("{fs}/big")).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: the descriptor opened above, closed once.
        unsafe { libc::close(fd) };
    });
    let mut again = std::fs::File::create(format!("{fs}/again")).unwrap();
    for i in 0..6 {
        again
            .write_all(&noise(MIB as usize, 10 + i))
            .unwrap_or_else(|e| panic!("writing MiB {i} while big's space comes back: {e}"));
    }
    again.sync_all().unwrap();
    closer.join().unwrap();
}
