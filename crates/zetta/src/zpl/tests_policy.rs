//! The POSIX write policy (`zfs_vnops`) on the engine, without a mount: what a full pool,
//! a quota, a refquota, `copies` and `sync` do to each operation.

use super::vnops::SetAttr;
use super::zfs_vnops::{Fallocate, SyncMode, ZfsMount};
use super::*;
use crate::io::{DeviceRef, MemDevice};
use crate::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec};
use std::sync::Arc;

const MIB: u64 = 1 << 20;
const ME: Creds = Creds { uid: 0, gid: 0 };

fn pool(device: &Arc<MemDevice>) -> Spa {
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/policy".to_string(), device.clone() as DeviceRef)],
        is_log: false,
    };
    Spa::create("tank", &[spec], &CreateOptions::default()).unwrap()
}

fn now() -> Timespec {
    Timespec { sec: 1, nsec: 0 }
}

/// Creates filesystem `name` (compression off, so written bytes are allocated bytes) with
/// `props` and returns its mount handle.
fn filesystem(spa: &mut Spa, name: &str, props: &[(&str, &str)]) -> ZfsMount {
    spa.create_filesystem(name).unwrap();
    spa.set_local_prop(name, "compression", "off").unwrap();
    for (prop, value) in props {
        spa.set_local_prop(name, prop, value).unwrap();
    }
    mount(spa, name)
}

fn mount(spa: &mut Spa, name: &str) -> ZfsMount {
    ZfsMount {
        dataset: spa.lookup_dataset(name).unwrap().unwrap(),
        vfs: spa.with_zpl(name, |vfs, _, _| Ok(*vfs)).unwrap(),
        sync: SyncMode::Standard,
        readonly: false,
    }
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    crate::rand::SeededRng::new(seed).fill(&mut data);
    data
}

fn new_file(spa: &mut Spa, m: &ZfsMount, name: &str) -> u64 {
    m.create(
        spa,
        m.vfs.root,
        name.as_bytes(),
        FileKind::Regular,
        0o644,
        ME,
        0,
        now(),
    )
    .unwrap()
    .object
}

/// Appends `chunk`-byte writes to `object` until one is refused; returns the bytes
/// written and the refusal.
fn fill(spa: &mut Spa, m: &ZfsMount, object: u64, chunk: usize) -> (u64, ZplError) {
    let data = noise(chunk, object);
    let mut offset = m
        .change_for_test(spa, |vfs, os, ctx| vfs.getattr(os, ctx, object))
        .znode
        .size;
    let start = offset;
    for _ in 0..100_000 {
        match m.write(spa, object, offset, &data, now(), false) {
            Ok(()) => offset += chunk as u64,
            Err(e) => return (offset - start, e),
        }
    }
    panic!("{chunk}-byte writes were never refused");
}

impl ZfsMount {
    fn change_for_test<T>(
        &self,
        spa: &mut Spa,
        work: impl FnOnce(
            &Zfsvfs,
            &mut crate::dmu::ObjectSet,
            &crate::dmu::IoCtx<'_>,
        ) -> Result<T, ZplError>,
    ) -> T {
        spa.with_zpl_object(self.dataset, &self.vfs, work).unwrap()
    }
}

/// Every operation that takes space, refused with `want` (never an I/O error), on a file
/// system that has none left.
fn assert_all_refused(spa: &mut Spa, m: &ZfsMount, file: u64, want: i32) {
    let root = m.vfs.root;
    let check = |what: &str, result: Result<(), ZplError>| match result {
        Err(e) => assert_eq!(e.errno(), want, "{what}: {e}"),
        Ok(()) => panic!("{what} was admitted with no space left"),
    };
    check(
        "write",
        m.write(spa, file, 0, &noise(MIB as usize, 7), now(), false),
    );
    let kinds = [
        ("create", FileKind::Regular),
        ("mkdir", FileKind::Directory),
    ];
    for (what, kind) in kinds {
        let made = m.create(spa, root, what.as_bytes(), kind, 0o755, ME, 0, now());
        check(what, made.map(|_| ()));
    }
    check(
        "symlink",
        m.symlink(spa, root, b"link", b"target", ME, now())
            .map(|_| ()),
    );
    check(
        "setxattr",
        m.setxattr(spa, file, b"user.a", b"value", 0, now()),
    );
    let grow = SetAttr {
        size: Some(1 << 40),
        ..SetAttr::default()
    };
    check(
        "truncate (grow)",
        m.setattr(spa, file, &grow, now()).map(|_| ()),
    );
    let (end, len) = (1 << 41, 64 * MIB);
    let fallocate = m.fallocate(spa, file, end, len, Fallocate::Allocate, now());
    // fallocate says ENOSPC past a quota too, as OpenZFS.
    assert_eq!(
        fallocate.map_err(|e| e.errno()),
        Err(libc_errno::ENOSPC),
        "fallocate"
    );
}

// Why: issue 13 part 6 — the POSIX write policy lived in the FUSE glue, so no library or
// crash-simulation test exercised it: on a full pool every operation that takes space must
// be refused with ENOSPC before it changes anything (never EIO), the operations that free
// space (truncate, unlink) must still be admitted into the slop, and writes must succeed
// again once space is freed. Also: a growing truncate was admitted as a freeing change.
#[test]
fn full_pool_refuses_with_enospc_and_frees_are_admitted() {
    let device = Arc::new(MemDevice::new("/mem/policy", 128 * MIB));
    let mut spa = pool(&device);
    let m = filesystem(&mut spa, "tank/fs", &[]);
    let big = new_file(&mut spa, &m, "big");
    let (written, refusal) = fill(&mut spa, &m, big, MIB as usize);
    assert_eq!(refusal.errno(), libc_errno::ENOSPC, "{refusal}");
    assert!(written > 64 * MIB, "only {written} bytes fit in 128 MiB");
    let small = new_file(&mut spa, &m, "small");
    let (_, refusal) = fill(&mut spa, &m, small, 64 << 10);
    assert_eq!(refusal.errno(), libc_errno::ENOSPC, "{refusal}");
    assert_all_refused(&mut spa, &m, small, libc_errno::ENOSPC);
    // Nothing refused changed anything.
    let root = m.vfs.root;
    for name in ["create", "mkdir", "link"] {
        let found = m.change_for_test(&mut spa, |vfs, os, ctx| {
            Ok(vfs.lookup(os, ctx, root, name.as_bytes()).is_ok())
        });
        assert!(!found, "a refused {name} left its name behind");
    }
    // Frees fit: a shrinking truncate and an unlink, on the full pool.
    let shrink = SetAttr {
        size: Some(0),
        ..SetAttr::default()
    };
    m.setattr(&mut spa, small, &shrink, now()).unwrap();
    m.remove(&mut spa, root, b"big", now(), &|_| false).unwrap();
    // The freed space is there for the next writer at once (the admission waits out the
    // frees' deferral).
    let again = new_file(&mut spa, &m, "again");
    for i in 0..16 {
        m.write(
            &mut spa,
            again,
            i * MIB,
            &noise(MIB as usize, i),
            now(),
            false,
        )
        .unwrap();
    }
    m.create(
        &mut spa,
        root,
        b"dir",
        FileKind::Directory,
        0o755,
        ME,
        0,
        now(),
    )
    .unwrap();
    spa.sync().unwrap();
}

// Why: issue 13 part 6 — past a quota or a refquota every operation that takes space is
// refused with EDQUOT (a quota of an ancestor too), never EIO; rm is admitted past the
// quota, and writes succeed again after it.
#[test]
fn quota_and_refquota_refuse_with_edquot_and_rm_makes_room() {
    let device = Arc::new(MemDevice::new("/mem/policy", 256 * MIB));
    let mut spa = pool(&device);
    for (name, prop) in [("tank/q", "quota"), ("tank/r", "refquota")] {
        let m = filesystem(&mut spa, name, &[(prop, "8388608")]);
        let big = new_file(&mut spa, &m, "big");
        let (written, refusal) = fill(&mut spa, &m, big, MIB as usize);
        assert_eq!(refusal.errno(), libc_errno::EDQUOT, "{prop}: {refusal}");
        assert!(
            (6 * MIB..=8 * MIB).contains(&written),
            "{prop}=8M let {written} bytes through"
        );
        let small = new_file(&mut spa, &m, "small");
        let (_, refusal) = fill(&mut spa, &m, small, 4096);
        assert_eq!(refusal.errno(), libc_errno::EDQUOT, "{prop}: {refusal}");
        assert_all_refused(&mut spa, &m, small, libc_errno::EDQUOT);
        let root = m.vfs.root;
        m.remove(&mut spa, root, b"big", now(), &|_| false).unwrap();
        let again = new_file(&mut spa, &m, "again");
        for i in 0..4 {
            m.write(
                &mut spa,
                again,
                i * MIB,
                &noise(MIB as usize, i),
                now(),
                false,
            )
            .unwrap_or_else(|e| panic!("{prop}: writing after rm: {e}"));
        }
    }
    // A quota of the parent bounds the child.
    spa.create_filesystem("tank/p").unwrap();
    spa.set_local_prop("tank/p", "quota", "8388608").unwrap();
    let m = filesystem(&mut spa, "tank/p/c", &[]);
    let file = new_file(&mut spa, &m, "f");
    let (written, refusal) = fill(&mut spa, &m, file, MIB as usize);
    assert_eq!(refusal.errno(), libc_errno::EDQUOT, "{refusal}");
    assert!(
        written <= 8 * MIB,
        "the parent's quota let {written} through"
    );
}

// Why: issue 13 part 6 — `copies=N` keeps N copies of every block, so the admission must
// charge a write N times against quotas (USED counts them): with copies=2 half as much
// file data fits under the same refquota.
#[test]
fn copies_are_charged_once_per_copy() {
    let device = Arc::new(MemDevice::new("/mem/policy", 256 * MIB));
    let mut spa = pool(&device);
    let mut fitted = Vec::new();
    for (name, copies) in [("tank/one", "1"), ("tank/two", "2")] {
        let m = filesystem(
            &mut spa,
            name,
            &[("refquota", "16777216"), ("copies", copies)],
        );
        let file = new_file(&mut spa, &m, "f");
        let (written, refusal) = fill(&mut spa, &m, file, MIB as usize);
        assert_eq!(refusal.errno(), libc_errno::EDQUOT, "{refusal}");
        fitted.push(written);
    }
    assert!(
        (12 * MIB..=16 * MIB).contains(&fitted[0]),
        "copies=1: {} bytes",
        fitted[0]
    );
    assert!(
        (5 * MIB..=8 * MIB).contains(&fitted[1]),
        "copies=2: {} bytes, copies=1: {}",
        fitted[1],
        fitted[0]
    );
}

// Why: issue 13 part 6 — the policy, not the glue, refuses changes on a read-only mount
// and makes them durable per `sync`: under sync=always a create and a write survive a
// power cut without a txg commit (intent log), under sync=standard only after fsync.
#[test]
fn readonly_refuses_and_sync_always_commits_the_intent_log() {
    let device = Arc::new(MemDevice::new("/mem/policy", 128 * MIB));
    let mut spa = pool(&device);
    let mut m = filesystem(&mut spa, "tank/fs", &[]);
    spa.sync().unwrap();
    let root = m.vfs.root;
    let ro = ZfsMount {
        readonly: true,
        ..m
    };
    let refused = ro.create(&mut spa, root, b"x", FileKind::Regular, 0o644, ME, 0, now());
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.errno()),
        Err(libc_errno::EROFS)
    );
    m.sync = SyncMode::Always;
    let always = new_file(&mut spa, &m, "always");
    m.write(&mut spa, always, 0, b"logged", now(), false)
        .unwrap();
    m.sync = SyncMode::Standard;
    let standard = new_file(&mut spa, &m, "standard");
    m.write(&mut spa, standard, 0, b"not yet", now(), false)
        .unwrap();
    let before_fsync = new_file(&mut spa, &m, "before_fsync");
    m.write(&mut spa, before_fsync, 0, b"also", now(), false)
        .unwrap();
    // O_SYNC under sync=standard, then fsync: both make everything so far durable.
    m.write(&mut spa, standard, 7, b"!", now(), true).unwrap();
    m.fsync(&mut spa).unwrap();
    new_file(&mut spa, &m, "lost");
    // Power cut: no commit.
    drop(spa);
    let found = find_pools(&[device.clone() as DeviceRef]);
    let mut spa = Spa::import(&found[0], None, 64 << 20).unwrap();
    let m = mount(&mut spa, "tank/fs");
    let read = |spa: &mut Spa, name: &str| {
        spa.with_zpl_object(m.dataset, &m.vfs, |vfs, os, ctx| {
            let attr = vfs.lookup(os, ctx, root, name.as_bytes())?;
            vfs.read(os, ctx, attr.object, 0, 64)
        })
    };
    assert_eq!(read(&mut spa, "always").unwrap(), b"logged");
    assert_eq!(read(&mut spa, "standard").unwrap(), b"not yet!");
    assert_eq!(read(&mut spa, "before_fsync").unwrap(), b"also");
    assert!(
        matches!(read(&mut spa, "lost"), Err(ZplError::NotFound)),
        "a create after the last fsync survived the cut"
    );
}
