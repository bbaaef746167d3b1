//! POSIX-layer tests: each checks a behaviour a mount relies on, through commit and import.

use super::vnops::SetAttr;
use super::xattr::{XATTR_CREATE, XATTR_REPLACE};
use super::*;
use crate::io::{DeviceRef, MemDevice};
use crate::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec};
use std::sync::Arc;

fn pool(device: &Arc<MemDevice>) -> Spa {
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/zpl".to_string(), device.clone() as DeviceRef)],
        is_log: false,
    };
    Spa::create("tank", &[spec], &CreateOptions::default()).unwrap()
}

fn reimport(device: &Arc<MemDevice>) -> Spa {
    let found = find_pools(&[device.clone() as DeviceRef]);
    Spa::import(&found[0], None, 64 << 20).unwrap()
}

/// Commits until deferred frees have settled, then recomputes every space figure from the
/// trees: nothing leaked, nothing counted twice.
fn settle_and_audit(spa: &mut Spa) {
    for _ in 0..3 {
        spa.sync().unwrap();
    }
    let audit = spa.audit_space().unwrap();
    assert!(audit.mismatches.is_empty(), "{:#?}", audit.mismatches);
}

const ME: Creds = Creds {
    uid: 1000,
    gid: 100,
};

fn t(sec: i64) -> Timespec {
    Timespec { sec, nsec: 0 }
}

fn names(spa: &mut Spa, fs: &str, dir: u64) -> Vec<String> {
    spa.with_zpl(fs, |vfs, os, ctx| {
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let batch = vfs.readdir(os, ctx, dir, offset, 7)?;
            let Some(last) = batch.last() else { break };
            offset = last.next;
            out.extend(
                batch
                    .iter()
                    .map(|e| String::from_utf8_lossy(&e.name).into_owned()),
            );
        }
        Ok(out)
    })
    .unwrap()
}

/// Files, directories, symlinks and hardlinks are created, found, listed and counted as
/// POSIX says, and all of it survives export and import.
#[test]
fn namespace_objects_persist() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let (root, dir, file) = spa
        .with_zpl("tank/fs", |vfs, os, ctx| {
            let root = vfs.root;
            let dir = vfs.create(
                os,
                ctx,
                root,
                b"d",
                FileKind::Directory,
                0o750,
                ME,
                0,
                t(10),
            )?;
            let file = vfs.create(
                os,
                ctx,
                dir.object,
                b"f",
                FileKind::Regular,
                0o640,
                ME,
                0,
                t(11),
            )?;
            vfs.write(os, ctx, file.object, 0, b"hello", t(12))?;
            vfs.symlink(os, ctx, root, b"ln", b"d/f", ME, t(13))?;
            vfs.link(os, ctx, file.object, root, b"hard", t(14))?;
            assert_eq!(
                vfs.create(os, ctx, root, b"d", FileKind::Regular, 0o644, ME, 0, t(15))
                    .unwrap_err()
                    .errno(),
                libc_errno::EEXIST
            );
            assert_eq!(
                vfs.link(os, ctx, dir.object, root, b"dirlink", t(15))
                    .unwrap_err()
                    .errno(),
                libc_errno::EPERM
            );
            let long = vec![b'x'; 256];
            assert_eq!(
                vfs.create(os, ctx, root, &long, FileKind::Regular, 0o644, ME, 0, t(15))
                    .unwrap_err()
                    .errno(),
                libc_errno::ENAMETOOLONG
            );
            Ok((root, dir.object, file.object))
        })
        .unwrap();
    spa.sync().unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    let mut listed = names(&mut spa, "tank/fs", root);
    listed.sort();
    assert_eq!(listed, [".", "..", "d", "hard", "ln"]);
    spa.with_zpl("tank/fs", |vfs, os, ctx| {
        let root_attr = vfs.getattr(os, ctx, root)?;
        assert_eq!(root_attr.znode.links, 3, "root: ., .. and d's ..");
        assert_eq!(root_attr.znode.mode, znode::S_IFDIR | 0o755);
        let d = vfs.lookup(os, ctx, root, b"d")?;
        assert_eq!(d.object, dir);
        assert_eq!(d.znode.mode, znode::S_IFDIR | 0o750);
        assert_eq!((d.znode.uid, d.znode.gid), (1000, 100));
        assert_eq!(vfs.lookup(os, ctx, dir, b"..")?.object, root);
        let f = vfs.lookup(os, ctx, dir, b"f")?;
        assert_eq!(f.object, file);
        assert_eq!(f.znode.links, 2);
        assert_eq!(f.znode.size, 5);
        assert_eq!(f.znode.mtime, t(12));
        assert_eq!(vfs.read(os, ctx, file, 0, 100)?, b"hello");
        let ln = vfs.lookup(os, ctx, root, b"ln")?;
        assert_eq!(ln.kind(), FileKind::Symlink);
        assert_eq!(vfs.readlink(os, ctx, ln.object)?, b"d/f");
        assert_eq!(
            vfs.lookup(os, ctx, root, b"nope").unwrap_err().errno(),
            libc_errno::ENOENT
        );
        Ok(())
    })
    .unwrap();
}

/// rename: replaces a file, refuses type mismatches and non-empty directories, honours
/// noreplace and exchange, and keeps directory link counts right across parents.
#[test]
fn rename_rules() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let root = vfs.root;
        let now = t(100);
        let a = vfs.create(os, ctx, root, b"a", FileKind::Directory, 0o755, ME, 0, now)?;
        let b = vfs.create(os, ctx, root, b"b", FileKind::Directory, 0o755, ME, 0, now)?;
        let x = vfs.create(
            os,
            ctx,
            a.object,
            b"x",
            FileKind::Regular,
            0o644,
            ME,
            0,
            now,
        )?;
        let y = vfs.create(
            os,
            ctx,
            b.object,
            b"y",
            FileKind::Regular,
            0o644,
            ME,
            0,
            now,
        )?;
        vfs.create(
            os,
            ctx,
            a.object,
            b"sub",
            FileKind::Directory,
            0o755,
            ME,
            0,
            now,
        )?;
        // Replace a file: the old target is orphaned.
        let replaced = vfs.rename(os, ctx, a.object, b"x", b.object, b"y", false, false, now)?;
        assert_eq!(replaced, Some(vzpl_unlinked(y.object)));
        assert_eq!(vfs.lookup(os, ctx, b.object, b"y")?.object, x.object);
        assert!(vfs.lookup(os, ctx, a.object, b"x").is_err());
        vfs.reclaim(os, ctx, y.object)?;
        assert!(vfs.getattr(os, ctx, y.object).is_err());
        // Directory onto file and file onto directory.
        let err = vfs.rename(os, ctx, a.object, b"sub", b.object, b"y", false, false, now);
        assert_eq!(err.unwrap_err().errno(), libc_errno::ENOTDIR);
        let err = vfs.rename(os, ctx, b.object, b"y", a.object, b"sub", false, false, now);
        assert_eq!(err.unwrap_err().errno(), libc_errno::EISDIR);
        // noreplace and exchange.
        let z = vfs.create(
            os,
            ctx,
            a.object,
            b"z",
            FileKind::Regular,
            0o644,
            ME,
            0,
            now,
        )?;
        let err = vfs.rename(os, ctx, a.object, b"z", b.object, b"y", true, false, now);
        assert_eq!(err.unwrap_err().errno(), libc_errno::EEXIST);
        vfs.rename(os, ctx, a.object, b"z", b.object, b"y", false, true, now)?;
        assert_eq!(vfs.lookup(os, ctx, a.object, b"z")?.object, x.object);
        assert_eq!(vfs.lookup(os, ctx, b.object, b"y")?.object, z.object);
        // Moving a directory moves its `..` link between parents.
        vfs.rename(
            os, ctx, a.object, b"sub", b.object, b"sub2", false, false, now,
        )?;
        assert_eq!(vfs.getattr(os, ctx, a.object)?.znode.links, 2);
        assert_eq!(vfs.getattr(os, ctx, b.object)?.znode.links, 3);
        let sub = vfs.lookup(os, ctx, b.object, b"sub2")?;
        assert_eq!(vfs.lookup(os, ctx, sub.object, b"..")?.object, b.object);
        // A non-empty directory cannot be replaced or removed.
        vfs.create(
            os,
            ctx,
            sub.object,
            b"inner",
            FileKind::Regular,
            0o644,
            ME,
            0,
            now,
        )?;
        vfs.create(
            os,
            ctx,
            a.object,
            b"empty",
            FileKind::Directory,
            0o755,
            ME,
            0,
            now,
        )?;
        let err = vfs.rename(
            os, ctx, a.object, b"empty", b.object, b"sub2", false, false, now,
        );
        assert_eq!(err.unwrap_err().errno(), libc_errno::ENOTEMPTY);
        let err = vfs.rmdir(os, ctx, b.object, b"sub2", now);
        assert_eq!(err.unwrap_err().errno(), libc_errno::ENOTEMPTY);
        // Two names of one file: rename is a no-op.
        vfs.link(os, ctx, x.object, a.object, b"x2", now)?;
        vfs.rename(os, ctx, a.object, b"z", a.object, b"x2", false, false, now)?;
        assert_eq!(vfs.getattr(os, ctx, x.object)?.znode.links, 2);
        Ok(())
    })
    .unwrap();
}

fn vzpl_unlinked(object: u64) -> vnops::Unlinked {
    vnops::Unlinked {
        object,
        orphaned: true,
    }
}

/// A file unlinked while open stays readable until reclaimed; if the pool goes away
/// first (a crash, an export), the next open of the filesystem frees it and its space.
#[test]
fn unlinked_open_file_is_reclaimed_after_reimport() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    // Incompressible, so the space it frees is visible.
    let mut data = vec![0u8; 8 << 20];
    crate::rand::SeededRng::new(5).fill(&mut data);
    let file = spa
        .with_zpl("tank", |vfs, os, ctx| {
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"big",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            vfs.write(os, ctx, f.object, 0, &data, t(2))?;
            Ok(f.object)
        })
        .unwrap();
    spa.sync().unwrap();
    let referenced_full = spa.dataset_referenced_bytes("tank").unwrap();
    spa.with_zpl("tank", |vfs, os, ctx| {
        let gone = vfs.unlink(os, ctx, vfs.root, b"big", t(3))?;
        assert!(gone.orphaned);
        assert_eq!(vfs.delete_queue_objects(os, ctx)?, [file]);
        // Still readable through the open handle.
        assert_eq!(vfs.read(os, ctx, file, 0, 4)?, data[..4]);
        Ok(())
    })
    .unwrap();
    spa.sync().unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    let drained = spa
        .with_zpl("tank", |vfs, os, ctx| vfs.drain_delete_queue(os, ctx))
        .unwrap();
    assert_eq!(drained, 1);
    spa.sync().unwrap();
    let referenced = spa.dataset_referenced_bytes("tank").unwrap();
    assert!(
        referenced + (7 << 20) < referenced_full,
        "{referenced} vs {referenced_full}"
    );
    spa.with_zpl("tank", |vfs, os, ctx| {
        assert!(vfs.delete_queue_objects(os, ctx)?.is_empty());
        assert!(vfs.getattr(os, ctx, file).is_err());
        Ok(())
    })
    .unwrap();
}

/// Sparse files: a write far out allocates only its record, holes read as zeros,
/// truncate shrinks and extends, and sizes up to 2^63-1 are representable.
#[test]
fn sparse_files_and_truncate() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let f = vfs.create(
            os,
            ctx,
            vfs.root,
            b"s",
            FileKind::Regular,
            0o644,
            ME,
            0,
            t(1),
        )?;
        vfs.write(os, ctx, f.object, 0, &[1u8; 200_000], t(2))?;
        let far = 10u64 << 30;
        vfs.write(os, ctx, f.object, far, b"end", t(3))?;
        assert_eq!(vfs.getattr(os, ctx, f.object)?.znode.size, far + 3);
        assert_eq!(
            vfs.read(os, ctx, f.object, far - 2, 5)?,
            [0, 0, b'e', b'n', b'd']
        );
        assert_eq!(vfs.read(os, ctx, f.object, 5 << 30, 4)?, [0; 4]);
        // Shrink into the first record, then extend sparsely.
        let change = SetAttr {
            size: Some(100),
            ..SetAttr::default()
        };
        vfs.setattr(os, ctx, f.object, &change, t(4))?;
        let change = SetAttr {
            size: Some(300_000),
            ..SetAttr::default()
        };
        let a = vfs.setattr(os, ctx, f.object, &change, t(5))?;
        assert_eq!(a.znode.size, 300_000);
        assert_eq!(a.znode.mtime, t(5));
        let back = vfs.read(os, ctx, f.object, 0, 400_000)?;
        assert_eq!(back.len(), 300_000);
        assert!(back[..100].iter().all(|&b| b == 1));
        assert!(back[100..].iter().all(|&b| b == 0));
        let err = vfs.write(os, ctx, f.object, vnops::FILE_SIZE_MAX, b"x", t(6));
        assert_eq!(err.unwrap_err().errno(), libc_errno::E2BIG);
        Ok(())
    })
    .unwrap();
    spa.sync().unwrap();
    assert!(spa.dataset_referenced_bytes("tank").unwrap() < 4 << 20);
}

/// Why: a mount's kernel keeps `st_blksize` in its inode, and a `statx` asking for no field
/// (`stat -c %o`) never refreshes it, so the answer must not change as a file is written:
/// a file whose one block can still grow answers the record size it grows to from its
/// creation on (it answered 512-byte blocks, then 1M, and the kernel kept the first), and a
/// file of more than one block its fixed block size whatever the record size is later.
#[test]
fn st_blksize_is_the_record_size_a_growing_file_reaches() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    let grown = spa
        .with_zpl("tank", |vfs, os, ctx| {
            os.set_block_size_max(1 << 20);
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"grows",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            assert_eq!(f.block_size_bytes, 1 << 20, "empty");
            vfs.write(os, ctx, f.object, 0, &[1u8; 100], t(2))?;
            assert_eq!(vfs.getattr(os, ctx, f.object)?.block_size_bytes, 1 << 20);
            vfs.write(os, ctx, f.object, 100, &vec![2u8; 3 << 20], t(3))?;
            assert_eq!(vfs.getattr(os, ctx, f.object)?.block_size_bytes, 1 << 20);
            // A directory is no plain file: its own (ZAP) block.
            assert!(vfs.getattr(os, ctx, vfs.root)?.block_size_bytes < 1 << 20);
            Ok(f.object)
        })
        .unwrap();
    spa.sync().unwrap();
    // The dataset's recordsize property (128K) is in force again: the file keeps its 1M.
    let after = spa
        .with_zpl("tank", |vfs, os, ctx| vfs.getattr(os, ctx, grown))
        .unwrap();
    assert_eq!(after.block_size_bytes, 1 << 20);
}

/// Times keep nanoseconds and dates before 1970 and after 2038 through a commit.
#[test]
fn times_are_exact_and_wide() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    let object = spa
        .with_zpl("tank", |vfs, os, ctx| {
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"t",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            let change = SetAttr {
                atime: Some(Timespec {
                    sec: -86_400,
                    nsec: 1,
                }),
                mtime: Some(Timespec {
                    sec: 4_294_967_296,
                    nsec: 999_999_999,
                }),
                ..SetAttr::default()
            };
            vfs.setattr(os, ctx, f.object, &change, t(7))?;
            Ok(f.object)
        })
        .unwrap();
    spa.sync().unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    let a = spa
        .with_zpl("tank", |vfs, os, ctx| vfs.getattr(os, ctx, object))
        .unwrap();
    assert_eq!(
        a.znode.atime,
        Timespec {
            sec: -86_400,
            nsec: 1
        }
    );
    assert_eq!(
        a.znode.mtime,
        Timespec {
            sec: 4_294_967_296,
            nsec: 999_999_999
        }
    );
    assert_eq!(a.znode.ctime, t(7));
}

/// xattrs: small and large values, create/replace flags, listing, removal, and the
/// large value's object freed with the file.
#[test]
fn xattrs_small_large_flags() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let f = vfs.create(
            os,
            ctx,
            vfs.root,
            b"x",
            FileKind::Regular,
            0o644,
            ME,
            0,
            t(1),
        )?;
        let o = f.object;
        assert_eq!(
            vfs.getxattr(os, ctx, o, b"user.a").unwrap_err().errno(),
            libc_errno::ENODATA
        );
        let err = vfs.setxattr(os, ctx, o, b"user.a", b"1", XATTR_REPLACE, t(2));
        assert_eq!(err.unwrap_err().errno(), libc_errno::ENODATA);
        vfs.setxattr(os, ctx, o, b"user.a", b"1", XATTR_CREATE, t(2))?;
        let err = vfs.setxattr(os, ctx, o, b"user.a", b"2", XATTR_CREATE, t(2));
        assert_eq!(err.unwrap_err().errno(), libc_errno::EEXIST);
        vfs.setxattr(os, ctx, o, b"user.a", b"2", XATTR_REPLACE, t(3))?;
        vfs.setxattr(os, ctx, o, b"user.empty", b"", 0, t(3))?;
        let big: Vec<u8> = (0..60_000u32).map(|i| i as u8).collect();
        vfs.setxattr(os, ctx, o, b"user.big", &big, 0, t(4))?;
        assert_eq!(vfs.getxattr(os, ctx, o, b"user.a")?, b"2");
        assert_eq!(vfs.getxattr(os, ctx, o, b"user.empty")?, b"");
        assert_eq!(vfs.getxattr(os, ctx, o, b"user.big")?, big);
        let mut listed = vfs.listxattr(os, ctx, o)?;
        listed.sort();
        assert_eq!(
            listed,
            [
                b"user.a".to_vec(),
                b"user.big".to_vec(),
                b"user.empty".to_vec()
            ]
        );
        let err = vfs.setxattr(os, ctx, o, b"user.huge", &vec![0; 65_537], 0, t(5));
        assert_eq!(err.unwrap_err().errno(), libc_errno::E2BIG);
        vfs.removexattr(os, ctx, o, b"user.a", t(6))?;
        assert_eq!(
            vfs.getxattr(os, ctx, o, b"user.a").unwrap_err().errno(),
            libc_errno::ENODATA
        );
        assert_eq!(vfs.getattr(os, ctx, o)?.znode.ctime, t(6));
        let objects_before = os.object_ids(ctx)?.len();
        vfs.unlink(os, ctx, vfs.root, b"x", t(7))?;
        vfs.reclaim(os, ctx, o)?;
        // The file, its xattr directory and its two xattr files are all gone.
        assert_eq!(os.object_ids(ctx)?.len(), objects_before - 4);
        Ok(())
    })
    .unwrap();
}

/// Why: OpenZFS reads an object's xattrs (`xattr=dir`, its default) only as a hidden
/// directory that `ZPL_XATTR` names (`zfs_make_xattrdir`, `zpl_xattr_get_dir`); before
/// session 20 Zetta wrote a plain ZAP there, which OpenZFS reads as nothing. The directory
/// and its files must be the znodes OpenZFS makes (mode, owner, parent, `ZFS_XATTR`), a
/// value must be its file's data, and a legacy ZAP must still read and become a directory
/// at its first change.
#[test]
fn xattrs_are_a_hidden_directory_of_files_as_openzfs_writes_them() {
    use super::xattr::ZFS_XATTR;
    use crate::types::ObjectId;
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    let (file, xdir) = spa
        .with_zpl("tank", |vfs, os, ctx| {
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"x",
                FileKind::Regular,
                0o600,
                ME,
                0,
                t(1),
            )?;
            let file = f.object;
            let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
            vfs.setxattr(os, ctx, file, b"user.small", b"abc", 0, t(2))?;
            vfs.setxattr(os, ctx, file, b"user.big", &big, 0, t(3))?;
            // A replace truncates: the shorter value leaves no tail of the longer one.
            vfs.setxattr(os, ctx, file, b"user.big", b"short", XATTR_REPLACE, t(4))?;
            let xdir = vfs.getattr(os, ctx, file)?.znode.xattr;
            Ok((file, xdir))
        })
        .unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let d = vfs.getattr(os, ctx, xdir)?.znode;
        // S_IFDIR | S_ISVTX | 0777, the file's owner, parent = the file, ZFS_XATTR.
        assert_eq!(d.mode, 0o41777);
        assert_eq!((d.uid, d.gid, d.parent), (1000, 100, file));
        assert_eq!(d.flags & ZFS_XATTR, ZFS_XATTR);
        assert_eq!(
            (d.links, d.size),
            (2, 4),
            "two entries counted as zfs_link_create does"
        );
        assert_eq!(
            os.dnode(ctx, ObjectId(xdir))?.object_type,
            crate::dmu::object_type::DIRECTORY
        );
        for (name, value) in [(&b"user.small"[..], &b"abc"[..]), (b"user.big", b"short")] {
            let (obj, kind) = super::dir::lookup(os, ctx, xdir, name)?.unwrap();
            assert_eq!(kind, FileKind::Regular);
            let z = vfs.getattr(os, ctx, obj)?.znode;
            assert_eq!(
                (z.mode, z.parent, z.size),
                (0o100644, xdir, value.len() as u64)
            );
            assert_eq!(z.flags & ZFS_XATTR, ZFS_XATTR);
            assert_eq!(os.read(ctx, ObjectId(obj), 0, value.len())?, value);
            assert_eq!(vfs.getxattr(os, ctx, file, name)?, value);
        }
        // A legacy xattr ZAP (Zetta before session 20) on another file: read, then
        // rewritten as a directory at its first change.
        let g = vfs.create(
            os,
            ctx,
            vfs.root,
            b"g",
            FileKind::Regular,
            0o644,
            ME,
            0,
            t(5),
        )?;
        let legacy = zap::zap_create(os, ctx, crate::dmu::object_type::ZAP)?;
        zap::zap_update_bytes(os, ctx, legacy, b"user.old", b"kept")?;
        let mut z = vfs.getattr(os, ctx, g.object)?.znode;
        z.xattr = legacy.0;
        super::vnops::put(os, ctx, g.object, &z)?;
        assert_eq!(vfs.getxattr(os, ctx, g.object, b"user.old")?, b"kept");
        vfs.setxattr(os, ctx, g.object, b"user.new", b"n", 0, t(6))?;
        let gdir = vfs.getattr(os, ctx, g.object)?.znode.xattr;
        // (The freed ZAP's number may be the directory's own.)
        assert!(super::znode::is_znode_bonus(
            os.dnode(ctx, ObjectId(gdir))?.bonus_type
        ));
        assert!(super::dir::lookup(os, ctx, gdir, b"user.old")?.is_some());
        assert_eq!(vfs.getxattr(os, ctx, g.object, b"user.old")?, b"kept");
        // Removal unlinks and frees the file; the directory stays.
        let (small, _) = super::dir::lookup(os, ctx, xdir, b"user.small")?.unwrap();
        vfs.removexattr(os, ctx, file, b"user.small", t(7))?;
        assert!(os.dnode(ctx, ObjectId(small)).is_err());
        assert_eq!(vfs.getattr(os, ctx, xdir)?.znode.size, 3);
        Ok(())
    })
    .unwrap();
    settle_and_audit(&mut spa);
}

/// A listing resumed from any offset returns every entry exactly once, even with
/// entries added and removed between the calls (readdir in batches under churn).
#[test]
fn readdir_resumes_exactly_under_churn() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let root = vfs.root;
        for i in 0..3000 {
            let name = format!("f{i}");
            vfs.create(
                os,
                ctx,
                root,
                name.as_bytes(),
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
        }
        let mut seen = std::collections::HashMap::new();
        let mut offset = 0;
        let mut round = 0;
        loop {
            let batch = vfs.readdir(os, ctx, root, offset, 50)?;
            let Some(last) = batch.last() else { break };
            offset = last.next;
            for e in &batch {
                *seen.entry(e.name.clone()).or_insert(0) += 1;
            }
            // Churn: new names appear, and names not yet listed (high numbers) or
            // already listed vanish.
            round += 1;
            let name = format!("new{round}");
            vfs.create(
                os,
                ctx,
                root,
                name.as_bytes(),
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(2),
            )?;
        }
        for i in 0..3000 {
            let name = format!("f{i}").into_bytes();
            assert_eq!(seen.get(&name), Some(&1), "f{i}");
        }
        assert!(seen.values().all(|&n| n == 1));
        assert_eq!(seen.get(b".".as_slice()), Some(&1));
        assert_eq!(vfs.getattr(os, ctx, root)?.znode.size, 2 + 3000 + round);
        Ok(())
    })
    .unwrap();
}

/// A setgid directory hands its group to new entries and its setgid bit to new
/// subdirectories (what the kernel leaves to the filesystem under FUSE).
#[test]
fn setgid_directories_pass_on_their_group() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let d = vfs.create(
            os,
            ctx,
            vfs.root,
            b"g",
            FileKind::Directory,
            0o2775,
            Creds { uid: 0, gid: 50 },
            0,
            t(1),
        )?;
        let f = vfs.create(
            os,
            ctx,
            d.object,
            b"f",
            FileKind::Regular,
            0o644,
            ME,
            0,
            t(2),
        )?;
        assert_eq!(f.znode.gid, 50);
        let sub = vfs.create(
            os,
            ctx,
            d.object,
            b"s",
            FileKind::Directory,
            0o755,
            ME,
            0,
            t(2),
        )?;
        assert_eq!(sub.znode.gid, 50);
        assert_eq!(sub.znode.mode & 0o7777, 0o2755);
        Ok(())
    })
    .unwrap();
}

// Why: issue 21 item 12 — freeing a file with one byte at a huge offset walked every block
// id up to the offset: 3 s and 1.1 GB at 2^40, and at 2^63-2 the daemon allocated until it
// died. Truncate, punch hole and unlink of such files must cost what they hold; this test
// used to run out of memory.
#[test]
fn huge_offset_frees_cost_what_is_allocated() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.sync().unwrap();
    let base = spa.dataset_referenced_bytes("tank").unwrap();
    for (name, far) in [(&b"t40"[..], 1u64 << 40), (&b"t63"[..], (1u64 << 63) - 2)] {
        // Truncate, then punch a hole, then unlink: each frees the far block.
        let file = spa
            .with_zpl("tank", |vfs, os, ctx| {
                let f = vfs.create(
                    os,
                    ctx,
                    vfs.root,
                    name,
                    FileKind::Regular,
                    0o644,
                    ME,
                    0,
                    t(1),
                )?;
                vfs.write(os, ctx, f.object, 0, b"head", t(2))?;
                vfs.write(os, ctx, f.object, far, b"a", t(2))?;
                Ok(f.object)
            })
            .unwrap();
        spa.sync().unwrap();
        spa.with_zpl("tank", |vfs, os, ctx| {
            assert_eq!(vfs.read(os, ctx, file, far, 4)?, b"a");
            assert_eq!(vfs.read(os, ctx, file, far / 2, 4)?, [0; 4]);
            let shrink = SetAttr {
                size: Some(4),
                ..SetAttr::default()
            };
            vfs.setattr(os, ctx, file, &shrink, t(3))?;
            assert_eq!(vfs.read(os, ctx, file, 0, 8)?, b"head");
            vfs.write(os, ctx, file, far, b"b", t(4))?;
            Ok(())
        })
        .unwrap();
        spa.sync().unwrap();
        spa.with_zpl("tank", |vfs, os, ctx| {
            vfs.punch_hole(os, ctx, file, 4096, far, t(5))?;
            assert_eq!(vfs.read(os, ctx, file, far, 4)?, [0]);
            vfs.write(os, ctx, file, far, b"c", t(6))?;
            Ok(())
        })
        .unwrap();
        spa.sync().unwrap();
        spa.with_zpl("tank", |vfs, os, ctx| {
            let gone = vfs.unlink(os, ctx, vfs.root, name, t(7))?;
            assert!(gone.orphaned);
            vfs.reclaim(os, ctx, gone.object)
        })
        .unwrap();
        for _ in 0..3 {
            spa.sync().unwrap();
        }
        let audit = spa.audit_space().unwrap();
        assert!(audit.mismatches.is_empty(), "{:#?}", audit.mismatches);
        let now = spa.dataset_referenced_bytes("tank").unwrap();
        assert!(
            now <= base + (64 << 10),
            "{now} bytes referenced after freeing, {base} before"
        );
    }
    // And the same through import: the free walks blocks read from disk, not dbufs.
    let file = spa
        .with_zpl("tank", |vfs, os, ctx| {
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"cold",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            vfs.write(os, ctx, f.object, (1u64 << 63) - 2, b"z", t(2))?;
            Ok(f.object)
        })
        .unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let gone = vfs.unlink(os, ctx, vfs.root, b"cold", t(7))?;
        assert_eq!(gone.object, file);
        vfs.reclaim(os, ctx, gone.object)
    })
    .unwrap();
    settle_and_audit(&mut spa);
}

// Why: issue 21 item 10 — the ZPL turned the DMU's "out of space" into EIO, so a write that
// reached the allocator on a full pool said EIO instead of ENOSPC; quota refusals from the
// pool layer became EIO as well instead of EDQUOT.
#[test]
fn no_space_and_quota_keep_their_errno() {
    use crate::dmu::DmuError;
    use crate::spa::SpaError;
    use crate::zio::ZioError;
    let no_space = ZplError::from(DmuError::Zio(ZioError::NoSpace));
    assert_eq!(no_space.errno(), libc_errno::ENOSPC);
    let through_zap = ZplError::from(crate::zap::ZapError::Dmu(DmuError::Zio(ZioError::NoSpace)));
    assert_eq!(through_zap.errno(), libc_errno::ENOSPC);
    assert_eq!(
        ZplError::from(SpaError::NoSpace).errno(),
        libc_errno::ENOSPC
    );
    assert_eq!(
        ZplError::from(SpaError::QuotaExceeded).errno(),
        libc_errno::EDQUOT
    );
    // Real I/O failures stay EIO.
    let lost = DmuError::Zio(ZioError::Unrecoverable { bp: "x".into() });
    assert_eq!(ZplError::from(lost).errno(), libc_errno::EIO);
    // And through a dataset call: a refusal from the pool layer keeps its errno.
    let device = Arc::new(MemDevice::new("/mem/zpl", 128 << 20));
    let mut spa = pool(&device);
    let err = spa
        .with_zpl("tank", |_, _, _| -> Result<(), ZplError> {
            Err(ZplError::from(DmuError::Zio(ZioError::NoSpace)))
        })
        .unwrap_err();
    assert_eq!(err.errno(), libc_errno::ENOSPC);
}

// Why: issue 21 item 12 — a shrinking truncate freed a whole file's tail in one txg,
// dirtying the indirect blocks above all of it at once. It now frees in batches from the
// end (OpenZFS `dmu_free_long_range`), each bounded, committed in between, and the size
// changes last.
#[test]
fn truncate_frees_in_bounded_batches_from_the_end() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    let record = 128u64 << 10;
    let far = 1u64 << 40;
    let file = spa
        .with_zpl("tank", |vfs, os, ctx| {
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"long",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            vfs.write(os, ctx, f.object, 0, &[9u8; 1000], t(2))?;
            // 100 records of one byte each, spread out to 2^40.
            for i in 1..=100u64 {
                vfs.write(os, ctx, f.object, i * (far / 100) + record, b"x", t(2))?;
            }
            Ok(f.object)
        })
        .unwrap();
    spa.sync().unwrap();
    let mut batches = 0;
    loop {
        let done = spa
            .with_zpl("tank", |vfs, os, ctx| {
                vfs.truncate_batch(os, ctx, file, 500, 16)
            })
            .unwrap();
        spa.sync().unwrap();
        batches += 1;
        if done {
            break;
        }
        assert!(batches < 20, "truncate batches never ended");
        // The size is untouched until the end; the freed tail reads as zeros.
        spa.with_zpl("tank", |vfs, os, ctx| {
            assert_eq!(
                vfs.getattr(os, ctx, file)?.znode.size,
                100 * (far / 100) + record + 1
            );
            assert_eq!(vfs.read(os, ctx, file, 100 * (far / 100) + record, 1)?, [0]);
            Ok(())
        })
        .unwrap();
    }
    // 100 records in batches of 16 (the first record holds bytes below the new size).
    assert_eq!(batches, 7);
    spa.with_zpl("tank", |vfs, os, ctx| {
        let change = SetAttr {
            size: Some(500),
            ..SetAttr::default()
        };
        vfs.setattr(os, ctx, file, &change, t(3))?;
        assert_eq!(vfs.read(os, ctx, file, 0, 1000)?, vec![9u8; 500]);
        Ok(())
    })
    .unwrap();
    settle_and_audit(&mut spa);
}

// Why: issue 21 item 12 — a hole punched over a long range freed it all in one txg; it now
// frees in batches from the end like a long truncate, and `punch_hole` finishes it.
#[test]
fn punch_frees_in_bounded_batches() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    let record = 128u64 << 10;
    let file = spa
        .with_zpl("tank", |vfs, os, ctx| {
            let f = vfs.create(
                os,
                ctx,
                vfs.root,
                b"holes",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            for i in 0..40u64 {
                vfs.write(os, ctx, f.object, i * record, &[7u8; 100], t(2))?;
            }
            Ok(f.object)
        })
        .unwrap();
    spa.sync().unwrap();
    // Punch [record / 2, 39.5 records): records 1..39 are whole inside it.
    let (offset, len) = (record / 2, 39 * record);
    let mut batches = 0;
    while !spa
        .with_zpl("tank", |vfs, os, ctx| {
            vfs.punch_batch(os, ctx, file, offset, len, 10)
        })
        .unwrap()
    {
        spa.sync().unwrap();
        batches += 1;
        assert!(batches < 10);
    }
    assert_eq!(batches, 3, "38 records in batches of 10");
    spa.with_zpl("tank", |vfs, os, ctx| {
        vfs.punch_hole(os, ctx, file, offset, len, t(3))?;
        assert_eq!(vfs.read(os, ctx, file, 0, 100)?, vec![7u8; 100]);
        for i in 1..40u64 {
            assert_eq!(vfs.read(os, ctx, file, i * record, 100)?, vec![0u8; 100]);
        }
        Ok(())
    })
    .unwrap();
    settle_and_audit(&mut spa);
}

/// A device whose reads, once armed, wait at a gate until a second read has arrived
/// (then every read passes): two readers get through only if both can be inside the read
/// path at once. A gate still closed after a minute opens and says so (`timed_out`).
struct GateDevice {
    inner: MemDevice,
    armed: std::sync::atomic::AtomicBool,
    /// (reads waiting at the gate, gate open)
    gate: std::sync::Mutex<(usize, bool)>,
    opened: std::sync::Condvar,
    timed_out: std::sync::atomic::AtomicBool,
}

impl crate::io::BlockDevice for GateDevice {
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), crate::io::IoError> {
        use std::sync::atomic::Ordering;
        if self.armed.load(Ordering::SeqCst) {
            let mut gate = self.gate.lock().unwrap();
            if !gate.1 {
                gate.0 += 1;
                if gate.0 >= 2 {
                    gate.1 = true;
                    self.opened.notify_all();
                } else {
                    let (mut gate, wait) = self
                        .opened
                        .wait_timeout_while(gate, std::time::Duration::from_secs(60), |g| !g.1)
                        .unwrap();
                    if wait.timed_out() {
                        self.timed_out.store(true, Ordering::SeqCst);
                        gate.1 = true;
                        self.opened.notify_all();
                    }
                }
            }
        }
        self.inner.read_at(offset, buffer)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), crate::io::IoError> {
        self.inner.write_at(offset, data)
    }

    fn flush(&self) -> Result<(), crate::io::IoError> {
        self.inner.flush()
    }

    fn path(&self) -> String {
        self.inner.path()
    }
}

// Why: every read (lookup, getattr, read, readdir) took the pool's exclusive lock because
// the object set's read path needed `&mut ObjectSet` (caches filled on read), so two
// readers of a mount ran one after the other, the second waiting out the first's device
// reads. Reads now go through `&ObjectSet` under the pool's shared lock: here two readers
// of two cold files must both be inside a device read at once, or the gate times out.
#[test]
fn two_readers_are_inside_the_read_path_at_once() {
    use std::sync::atomic::Ordering;
    let device = Arc::new(GateDevice {
        inner: MemDevice::new("/mem/gate", 256 << 20),
        armed: false.into(),
        gate: std::sync::Mutex::new((0, false)),
        opened: std::sync::Condvar::new(),
        timed_out: false.into(),
    });
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/gate".to_string(), device.clone() as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    spa.create_filesystem("tank/fs").unwrap();
    let (vfs, files) = spa
        .with_zpl("tank/fs", |vfs, os, ctx| {
            let mut files = Vec::new();
            for (name, fill) in [(&b"a"[..], 0xaa), (&b"b"[..], 0xbb)] {
                let attr = vfs.create(
                    os,
                    ctx,
                    vfs.root,
                    name,
                    FileKind::Regular,
                    0o644,
                    ME,
                    0,
                    t(10),
                )?;
                vfs.write(os, ctx, attr.object, 0, &vec![fill; 64 << 10], t(11))?;
                files.push((name, attr.object, fill));
            }
            Ok((*vfs, files))
        })
        .unwrap();
    let dataset = spa.lookup_dataset("tank/fs").unwrap().unwrap();
    spa.sync().unwrap();
    // Cold: nothing of the files in the ARC, so each reader reads the device.
    spa.zio.arc.clear();
    device.armed.store(true, Ordering::SeqCst);
    let pool = parking_lot::RwLock::new(spa);
    std::thread::scope(|scope| {
        let readers: Vec<_> = files
            .iter()
            .map(|&(name, object, fill)| {
                let pool = &pool;
                scope.spawn(move || {
                    let spa = pool.read();
                    assert!(spa.dataset_is_open(dataset));
                    let data = spa
                        .with_zpl_object_shared(dataset, &vfs, |vfs, os, ctx| {
                            let attr = vfs.lookup(os, ctx, vfs.root, name)?;
                            assert_eq!(attr.object, object);
                            vfs.read(os, ctx, object, 0, 64 << 10)
                        })
                        .unwrap();
                    assert!(data.len() == 64 << 10 && data.iter().all(|&b| b == fill));
                })
            })
            .collect();
        for reader in readers {
            reader.join().unwrap();
        }
    });
    assert!(
        device.gate.lock().unwrap().1,
        "the readers never read the device"
    );
    assert!(
        !device.timed_out.load(Ordering::SeqCst),
        "a reader waited for the other to leave the read path"
    );
}

// Why: the shared read path must see what the open txg changed (dirty dbufs, a changed
// dnode), not only what is on disk, as the exclusive one did.
#[test]
fn shared_reads_see_uncommitted_writes() {
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let dataset = spa.lookup_dataset("tank/fs").unwrap().unwrap();
    let (vfs, file) = spa
        .with_zpl("tank/fs", |vfs, os, ctx| {
            let file = vfs.create(
                os,
                ctx,
                vfs.root,
                b"f",
                FileKind::Regular,
                0o644,
                ME,
                0,
                t(1),
            )?;
            vfs.write(os, ctx, file.object, 0, &vec![1u8; 300 << 10], t(2))?;
            Ok((*vfs, file.object))
        })
        .unwrap();
    spa.sync().unwrap();
    spa.with_zpl("tank/fs", |vfs, os, ctx| {
        vfs.write(os, ctx, file, 200 << 10, &[2u8; 4096], t(3))?;
        vfs.create(
            os,
            ctx,
            vfs.root,
            b"new",
            FileKind::Regular,
            0o644,
            ME,
            0,
            t(4),
        )?;
        Ok(())
    })
    .unwrap();
    let spa = &spa;
    let (data, attr, new) = spa
        .with_zpl_object_shared(dataset, &vfs, |vfs, os, ctx| {
            Ok((
                vfs.read(os, ctx, file, (200 << 10) - 1, 4098)?,
                vfs.getattr(os, ctx, file)?,
                vfs.lookup(os, ctx, vfs.root, b"new").is_ok(),
            ))
        })
        .unwrap();
    assert_eq!(data[0], 1);
    assert!(data[1..4097].iter().all(|&b| b == 2));
    assert_eq!(data[4097], 1);
    assert_eq!(attr.znode.mtime, t(3));
    assert!(new, "a file created in the open txg is found");
}

// Why: znodes were a private 160-byte bonus (type 17) and the master node had no SA_ATTRS,
// so no OpenZFS tool could read a Zetta filesystem's files. After commit and import, the
// master node, SA master, REGISTRY and LAYOUTS are OpenZFS's objects and every kind of
// object's bonus decodes with the part-1 reader of real OpenZFS pools.
#[test]
fn znodes_are_openzfs_system_attributes_after_reimport() {
    use super::openzfs::sa::{decode_buffer, SaLayouts, SaRegistry, ZplAttrs};
    use super::openzfs::ZapValue as OzValue;
    use crate::byteorder::ByteOrder;
    use crate::types::ObjectId;
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    let long_target = vec![b'l'; 300];
    let objects = spa
        .with_zpl("tank/fs", |vfs, os, ctx| {
            let root = vfs.root;
            let mk = |os: &mut ObjectSet, name: &[u8], kind, mode, rdev| {
                vfs.create(os, ctx, root, name, kind, mode, ME, rdev, t(5))
                    .map(|a| a.object)
            };
            let file = mk(os, b"f", FileKind::Regular, 0o640, 0)?;
            vfs.write(os, ctx, file, 0, b"hello", t(6))?;
            let dir = mk(os, b"d", FileKind::Directory, 0o750, 0)?;
            let dev = mk(os, b"c", FileKind::CharDevice, 0o600, 0x0501)?;
            let fifo = mk(os, b"p", FileKind::Fifo, 0o604, 0)?;
            let short = vfs.symlink(os, ctx, root, b"s", b"f", ME, t(5))?.object;
            let long = vfs
                .symlink(os, ctx, root, b"l", &long_target, ME, t(5))?
                .object;
            vfs.setxattr(os, ctx, file, b"user.k", b"v", 0, t(7))?;
            Ok(vec![root, file, dir, dev, fifo, short, long])
        })
        .unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    spa.with_zpl("tank/fs", |vfs, os, ctx| {
        let word = |os: &mut ObjectSet, obj: u64, name: &str| {
            zap::zap_lookup(os, ctx, ObjectId(obj), name)
                .unwrap()
                .and_then(|v| v.first().copied())
        };
        // zfs_create_fs's objects and master node entries.
        let mut master: Vec<String> = zap::zap_list_all(os, ctx, MASTER_NODE_OBJECT)?
            .into_iter()
            .map(|e| String::from_utf8_lossy(&e.name).into_owned())
            .collect();
        master.sort();
        let want = [
            "DELETE_QUEUE",
            "ROOT",
            "SA_ATTRS",
            "VERSION",
            "casesensitivity",
            "normalization",
            "utf8only",
        ];
        assert_eq!(master, want);
        assert_eq!(word(os, 1, "SA_ATTRS"), Some(2));
        assert_eq!(word(os, 1, "DELETE_QUEUE"), Some(3));
        assert_eq!(word(os, 1, "ROOT"), Some(4));
        assert_eq!(word(os, 1, "VERSION"), Some(5));
        assert_eq!(word(os, 2, "REGISTRY"), Some(5));
        assert_eq!(word(os, 2, "LAYOUTS"), Some(6));
        for (obj, ty) in [(2, 45), (3, 22), (4, 20), (5, 46), (6, 47)] {
            assert_eq!(
                os.dnode(ctx, ObjectId(obj))?.object_type,
                ty,
                "object {obj}"
            );
        }
        let to_oz = |v: zap::ZapValue| match v {
            zap::ZapValue::U64s(w) => OzValue::Ints(w),
            zap::ZapValue::Bytes(b) => OzValue::Bytes(b),
        };
        let reg: Vec<(String, OzValue)> = zap::zap_list_all(os, ctx, ObjectId(5))?
            .into_iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(&e.name).into_owned(),
                    to_oz(e.value),
                )
            })
            .collect();
        assert_eq!(reg.len(), 22);
        let registry = SaRegistry::from_zap(reg.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
        // The registry values of OpenZFS's fixtures (zdb: ZPL_DACL_ACES = 40013).
        assert_eq!(registry.attr_of("ZPL_DACL_ACES"), Some(19));
        assert_eq!(registry.get(19).map(|r| r.encode()), Some(0x40013));
        assert_eq!(registry.get(15).map(|r| r.encode()), Some(0x5803000f));
        let lays: Vec<(String, OzValue)> = zap::zap_list_all(os, ctx, ObjectId(6))?
            .into_iter()
            .map(|e| {
                (
                    String::from_utf8_lossy(&e.name).into_owned(),
                    to_oz(e.value),
                )
            })
            .collect();
        let layouts = SaLayouts::from_zap(lays.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
        assert_eq!(
            layouts.get(2),
            Some(&[5u16, 6, 4, 12, 13, 7, 11, 0, 1, 2, 3, 8, 16, 19][..])
        );
        for &obj in &objects {
            let dn = os.dnode(ctx, ObjectId(obj))?;
            assert_eq!((dn.bonus_type, dn.blkptr.len()), (44, 1), "object {obj}");
            let buf = decode_buffer(&dn.bonus, ByteOrder::Little, &registry, &layouts).unwrap();
            let a = ZplAttrs::from_buffers(&[buf], &registry).unwrap();
            let z = vfs.getattr(os, ctx, obj)?.znode;
            assert_eq!(
                (a.mode, a.size, a.uid, a.gid, a.links, a.parent, a.gen),
                (
                    Some(z.mode),
                    Some(z.size),
                    Some(z.uid),
                    Some(z.gid),
                    Some(z.links),
                    Some(z.parent),
                    Some(z.gen)
                ),
                "object {obj}"
            );
            assert_eq!(
                a.mtime.map(|m| (m.sec as i64, m.nsec as u32)),
                Some((z.mtime.sec, z.mtime.nsec))
            );
            assert_eq!(a.flags.map(|f| f & 0x4), Some(0x4), "ZFS_ACL_TRIVIAL");
            assert!(a.dacl_count.is_some());
        }
        let [root, file, _dir, dev, _fifo, short, long] = objects[..] else {
            unreachable!()
        };
        let sa = |os: &mut ObjectSet, obj: u64| {
            let dn = os.dnode(ctx, ObjectId(obj)).unwrap();
            let buf = decode_buffer(&dn.bonus, ByteOrder::Little, &registry, &layouts).unwrap();
            ZplAttrs::from_buffers(&[buf], &registry).unwrap()
        };
        assert_eq!(sa(os, root).parent, Some(root));
        assert_eq!(sa(os, file).size, Some(5));
        assert!(sa(os, file).xattr.is_some_and(|x| x != 0));
        assert_eq!(sa(os, dev).rdev, Some(0x0501));
        assert_eq!(sa(os, short).symlink.as_deref(), Some(&b"f"[..]));
        assert_eq!(vfs.readlink(os, ctx, short)?, b"f");
        // A 300-byte target does not fit the bonus: as OpenZFS's `sa_build_layouts`, the
        // bonus keeps layout 2 in its 192 bytes (the dnode's tail holds the spill
        // pointer) and the spill block, 512 bytes of `DMU_OT_SA`, holds ZPL_SYMLINK
        // alone (layout 8); the object has no data.
        let dn = os.dnode(ctx, ObjectId(long))?;
        assert_eq!(dn.bonus.len(), 192);
        assert_eq!(dn.max_block_id, 0);
        assert!(dn.blkptr[0].is_hole(), "the target is not in the data");
        let spill_bp = dn.spill.expect("a spill block");
        assert_eq!((spill_bp.object_type, spill_bp.lsize_bytes), (44, 512));
        assert!(dn.used_bytes >= ctx.root.dsize_bytes(&spill_bp));
        let spill = os.spill(ctx, ObjectId(long))?.expect("spill bytes");
        assert_eq!(
            &spill[..8],
            &[0x5a, 0x50, 0x2f, 0x00, 8, 1 << 2, 0x2c, 0x01]
        );
        assert_eq!(&spill[8..308], &long_target[..]);
        assert!(spill[308..].iter().all(|b| *b == 0));
        let bonus = decode_buffer(&dn.bonus, ByteOrder::Little, &registry, &layouts).unwrap();
        assert_eq!(bonus.header.layout, 2);
        let spill = decode_buffer(&spill, ByteOrder::Little, &registry, &layouts).unwrap();
        let a = ZplAttrs::from_buffers(&[bonus, spill], &registry).unwrap();
        assert_eq!(a.symlink.as_deref(), Some(&long_target[..]));
        assert_eq!(a.size, Some(300));
        assert_eq!(vfs.readlink(os, ctx, long)?, long_target);
        assert_eq!(layouts.get(8), Some(&[17u16][..]));
        Ok(())
    })
    .unwrap();
}

/// Why: a ZPL 4 filesystem (zfs-fuse's; every dataset of a `-o version=23` pool) keeps its
/// znodes as `znode_phys_t` bonuses (`DMU_OT_ZNODE`, 264 bytes, a symlink target of up to
/// 56 bytes after them) and has no SA master node. Zetta must create, change and read such
/// files without turning them into SA bonuses (which zfs-fuse cannot read), across export
/// and import; xattrs are written as ZPL 4 keeps them, an xattr directory of
/// `znode_phys_t` znodes (zfs-fuse reads no other form).
#[test]
fn zpl4_filesystems_are_read_write_with_znode_phys_bonuses() {
    use super::openzfs::znode::ZnodePhys as OzZnode;
    use crate::byteorder::ByteOrder;
    use crate::dmu::ObjsetType;
    use crate::types::ObjectId;
    let device = Arc::new(MemDevice::new("/mem/zpl", 256 << 20));
    let mut spa = pool(&device);
    spa.create_dataset("tank/v4", None, ObjsetType::Filesystem)
        .unwrap();
    spa.with_dataset("tank/v4", |os, ctx| {
        Zfsvfs::create_fs(os, ctx, ZPL_VERSION_ZNODE)
            .map(|_| ())
            .map_err(|e| crate::dmu::DmuError::Invalid(e.to_string()))
    })
    .unwrap();
    let t56 = vec![b't'; 56];
    let t57 = vec![b'u'; 57];
    let (file, sub, s56, s57) = spa
        .with_zpl("tank/v4", |vfs, os, ctx| {
            assert_eq!(vfs.version, 4);
            let root = vfs.root;
            let file = vfs
                .create(os, ctx, root, b"f", FileKind::Regular, 0o644, ME, 0, t(5))?
                .object;
            vfs.write(os, ctx, file, 0, b"hello v4", t(6))?;
            let sub = vfs
                .create(os, ctx, root, b"d", FileKind::Directory, 0o750, ME, 0, t(5))?
                .object;
            vfs.link(os, ctx, file, sub, b"hard", t(7))?;
            let s56 = vfs.symlink(os, ctx, sub, b"s56", &t56, ME, t(5))?.object;
            let s57 = vfs.symlink(os, ctx, sub, b"s57", &t57, ME, t(5))?.object;
            let change = SetAttr {
                mode: Some(0o600),
                ..SetAttr::default()
            };
            vfs.setattr(os, ctx, file, &change, t(8))?;
            vfs.setxattr(os, ctx, file, b"user.k", b"v", 0, t(9))?;
            Ok((file, sub, s56, s57))
        })
        .unwrap();
    spa.export().unwrap();
    let mut spa = reimport(&device);
    spa.with_zpl("tank/v4", |vfs, os, ctx| {
        assert_eq!(vfs.version, 4);
        // No SA master node: the master node is what zfs_create_fs writes at ZPL 4.
        assert_eq!(
            zap::zap_lookup(os, ctx, MASTER_NODE_OBJECT, "SA_ATTRS")?,
            None
        );
        assert_eq!(
            zap::zap_lookup(os, ctx, MASTER_NODE_OBJECT, "VERSION")?,
            Some(vec![4])
        );
        for (obj, len) in [
            (vfs.root, 264),
            (file, 264),
            (sub, 264),
            (s56, 320),
            (s57, 264),
        ] {
            let dnode = os.dnode(ctx, ObjectId(obj))?;
            assert_eq!(dnode.bonus_type, 17, "object {obj}");
            assert_eq!(dnode.bonus.len(), len, "object {obj}");
            // OpenZFS's reader takes it as a znode_phys_t.
            let z = OzZnode::decode(&dnode.bonus, ByteOrder::HOST).unwrap();
            assert_eq!(z.acl.version, 1);
        }
        let z = OzZnode::decode(&os.dnode(ctx, ObjectId(file))?.bonus, ByteOrder::HOST).unwrap();
        assert_eq!(
            (z.mode, z.size, z.links, z.uid, z.gid),
            (0o100600, 8, 2, 1000, 100)
        );
        assert_eq!(z.mtime.sec, 6);
        assert_eq!(vfs.read(os, ctx, file, 0, 100)?, b"hello v4");
        // The xattr directory and its file are znode_phys_t znodes flagged ZFS_XATTR.
        let xdir = z.xattr;
        let (xfile, _) = super::dir::lookup(os, ctx, xdir, b"user.k")?.unwrap();
        for obj in [xdir, xfile] {
            let dnode = os.dnode(ctx, ObjectId(obj))?;
            assert_eq!(dnode.bonus_type, 17, "object {obj}");
            let x = OzZnode::decode(&dnode.bonus, ByteOrder::HOST).unwrap();
            assert_eq!(x.flags & super::xattr::ZFS_XATTR, super::xattr::ZFS_XATTR);
        }
        assert_eq!(vfs.getxattr(os, ctx, file, b"user.k")?, b"v");
        assert_eq!(vfs.readlink(os, ctx, s56)?, t56);
        assert_eq!(vfs.readlink(os, ctx, s57)?, t57);
        let hard = vfs.lookup(os, ctx, sub, b"hard")?;
        assert_eq!(hard.object, file);
        // New files after import keep the form too.
        let g = vfs
            .create(os, ctx, sub, b"g", FileKind::Regular, 0o644, ME, 0, t(10))?
            .object;
        assert_eq!(os.dnode(ctx, ObjectId(g))?.bonus_type, 17);
        vfs.unlink(os, ctx, sub, b"hard", t(11))?;
        Ok(())
    })
    .unwrap();
    settle_and_audit(&mut spa);
}
