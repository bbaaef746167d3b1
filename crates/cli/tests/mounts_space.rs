//! Space through the kernel: `zfs promote` of a mounted clone (both mounts keep serving,
//! `.zfs/snapshot` follows the snapshots, the original is then destroyed), and
//! reservations seen by writing programs: a write that would eat into another dataset's
//! reservation fails with ENOSPC, the reserved dataset can still write its share.
//!
//! Root and `/dev/fuse` required, like `mounts.rs`.

use std::io::Write;
use std::time::Duration;

mod common;

use common::mount_lab::{mounted, MountLab};

/// Writes `mib` MiB of incompressible data to `path` in 1 MiB writes; returns how many
/// went through and the error that stopped it, if any.
fn fill(path: &str, mib: usize) -> (usize, Option<std::io::Error>) {
    let mut chunk = vec![0u8; 1 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ path.len() as u64;
    let mut file = std::fs::File::create(path).unwrap();
    for written in 0..mib {
        for word in chunk.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        if let Err(e) = file.write_all(&chunk).and_then(|()| file.sync_data()) {
            return (written, Some(e));
        }
    }
    (mib, None)
}

/// The classic promote through mounts: a clone of a mounted filesystem is promoted while
/// both are mounted; each keeps its files, the clone's `.zfs/snapshot` now lists the moved
/// snapshots and the original's does not; `zfs destroy -r` of the original then unmounts
/// it and leaves the clone (and its snapshot's data) intact.
#[test]
fn promote_mounted_clone_then_destroy_original() {
    let lab = MountLab::with(1 << 30, &[]);
    lab.ok("zfs", &["create", "tank/golden"]);
    let golden = lab.mnt("golden");
    std::fs::write(format!("{golden}/os.img"), vec![3u8; 3 << 20]).unwrap();
    lab.ok("zfs", &["snapshot", "tank/golden@install"]);
    lab.ok("zfs", &["clone", "tank/golden@install", "tank/vm"]);
    let vm = lab.mnt("vm");
    assert!(mounted(&vm));
    std::fs::write(format!("{vm}/diverged"), b"vm data").unwrap();
    std::fs::write(format!("{golden}/update"), b"golden update").unwrap();
    lab.ok("zfs", &["snapshot", "tank/golden@later"]);
    lab.ok("zfs", &["promote", "tank/vm"]);
    assert!(mounted(&vm) && mounted(&golden));
    assert_eq!(std::fs::read(format!("{vm}/diverged")).unwrap(), b"vm data");
    assert_eq!(
        std::fs::read(format!("{golden}/update")).unwrap(),
        b"golden update"
    );
    let listing = |dir: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(format!("{dir}/.zfs/snapshot"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // The kernel may hold the old listing for its attribute timeout (1 s).
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(listing(&vm), ["install"]);
    assert_eq!(listing(&golden), ["later"]);
    assert_eq!(
        std::fs::read(format!("{vm}/.zfs/snapshot/install/os.img")).unwrap(),
        vec![3u8; 3 << 20]
    );
    lab.ok("zfs", &["destroy", "-r", "tank/golden"]);
    assert!(!mounted(&golden));
    assert!(mounted(&vm));
    assert_eq!(
        std::fs::read(format!("{vm}/os.img")).unwrap(),
        vec![3u8; 3 << 20]
    );
    assert_eq!(
        lab.ok(
            "zfs",
            &["list", "-H", "-o", "name,origin", "-t", "all", "-r", "tank"]
        ),
        "tank\t-\ntank/vm\t-\ntank/vm@install\t-\n"
    );
}

/// A reservation holds space back from everyone else: a program filling another dataset
/// gets ENOSPC when only the reservation is left, and the reserved dataset can still
/// write its share afterwards.
#[test]
fn reservation_refuses_other_writers_with_enospc() {
    let lab = MountLab::with(1 << 30, &[]);
    lab.ok("zfs", &["create", "-o", "compression=off", "tank/db"]);
    lab.ok("zfs", &["create", "-o", "compression=off", "tank/scratch"]);
    let avail: u64 = lab
        .ok(
            "zfs",
            &["get", "-Hp", "-o", "value", "available", "tank/scratch"],
        )
        .trim()
        .parse()
        .unwrap();
    let reserved_mib = (avail >> 20) - 160;
    lab.ok(
        "zfs",
        &["set", &format!("reservation={reserved_mib}M"), "tank/db"],
    );
    let (written, error) = fill(&lab.mnt("scratch/fill"), 1024);
    let error = error.expect("the reservation let everything through");
    assert_eq!(error.raw_os_error(), Some(libc_enospc()), "{error}");
    assert!(
        (120..=165).contains(&written),
        "{written} MiB written beside a reservation leaving 160 MiB"
    );
    // The pool is full but for the reservation: it is still there for its owner.
    let (written, error) = fill(&lab.mnt("db/data"), 64);
    assert!(
        error.is_none(),
        "the reserved dataset was refused: {error:?}"
    );
    assert_eq!(written, 64);
}

fn libc_enospc() -> i32 {
    28
}
