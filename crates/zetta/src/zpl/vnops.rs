//! The operations on files and directories (OpenZFS `zfs_vnops.c`): what a mount calls
//! for create, mkdir, symlink, link, unlink, rmdir, rename, setattr, read and write.
//!
//! Each operation reads the znodes it needs, changes the directory ZAPs and znodes, and
//! sets the times POSIX asks for (a new name touches its directory's mtime and ctime, a
//! data change the file's mtime and ctime, an attribute change its ctime). All of one
//! operation lands in the same open txg, which is what makes it atomic.

use super::dir;
use super::zfs_log::{self, Lr};
use super::znode::{
    is_znode_bonus, FileKind, Timespec, ZnodePhys, BONUS_TYPE_ZNODE, SA_BONUS_BYTES,
    ZFS_NEW_FILE_FLAGS,
};
use super::{Attr, Creds, Zfsvfs, ZplError, LINK_MAX};
use crate::dmu::{object_type, IoCtx, ObjectSet};
use crate::types::ObjectId;
use crate::zap;

const S_ISGID: u64 = 0o2000;
const MODE_PERM_MASK: u64 = 0o7777;
/// Largest file offset (OpenZFS `MAXOFFSET_T` on 64-bit: 2^63 - 1).
pub const FILE_SIZE_MAX: u64 = i64::MAX as u64;

pub fn get(os: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<ZnodePhys, ZplError> {
    Ok(attr(os, ctx, object)?.znode)
}

pub fn put(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    znode: &ZnodePhys,
) -> Result<(), ZplError> {
    let bonus_type = os.bonus_type(ctx, ObjectId(object))?;
    if znode.kind() == Some(FileKind::Symlink) {
        // A target the SAs hold (ZPL_SYMLINK in the bonus or the spill block, or after a
        // znode_phys_t) is kept: the new bonus (and spill block) carry it again.
        if let Ok((_, Some(target))) = read_znode(os, ctx, object) {
            return put_bonus(os, ctx, object, bonus_type, znode, Some(&target));
        }
    }
    put_bonus(os, ctx, object, bonus_type, znode, None)
}

/// The znode of `object` and its symlink target where the bonus or the spill block holds
/// it (`None` for a target in the object's data: ZPL 4's long ones, and those Zetta wrote
/// before spill blocks).
pub fn read_znode(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
) -> Result<(ZnodePhys, Option<Vec<u8>>), ZplError> {
    let dnode = os.dnode(ctx, ObjectId(object))?;
    if !is_znode_bonus(dnode.bonus_type) {
        return Err(ZplError::NotFound);
    }
    let broken = |e: super::znode::ZnodeDecodeError| ZplError::Io(format!("object {object}: {e}"));
    let (mut znode, inline) =
        ZnodePhys::decode_bonus(dnode.bonus_type, &dnode.bonus).map_err(broken)?;
    let mut target = inline.and_then(|r| dnode.bonus.get(r)).map(<[u8]>::to_vec);
    if dnode.bonus_type == BONUS_TYPE_ZNODE {
        if let Some(spill) = os.spill(ctx, ObjectId(object))? {
            if let Some(range) = znode.decode_sa_spill(&spill).map_err(broken)? {
                target = spill.get(range).map(<[u8]>::to_vec);
            }
        }
    }
    Ok((znode, target))
}

/// Writes the znode's bonus in the form its dnode has (SA for ZPL 5, `znode_phys_t` for
/// ZPL 4), with a symlink target kept in the SAs: a ZPL 5 one that does not fit the bonus
/// goes to the spill block (`sa_build_layouts`), whose layout is registered first if the
/// filesystem predates spill blocks.
fn put_bonus(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    bonus_type: u8,
    znode: &ZnodePhys,
    symlink: Option<&[u8]>,
) -> Result<(), ZplError> {
    let broken = |e: super::znode::ZnodeDecodeError| ZplError::Io(format!("object {object}: {e}"));
    if bonus_type == BONUS_TYPE_ZNODE {
        let (bonus, spill) = znode
            .encode_sa_spill(crate::byteorder::ByteOrder::HOST, symlink)
            .map_err(broken)?;
        if let Some(block) = &spill {
            register_spill_layout(os, ctx, block)?;
        }
        os.set_bonus_and_spill(ctx, ObjectId(object), bonus.as_bytes(), spill.as_deref())?;
        return Ok(());
    }
    let bonus = znode.encode_bonus(bonus_type, symlink).map_err(broken)?;
    os.set_bonus(ctx, ObjectId(object), bonus.as_bytes())?;
    Ok(())
}

/// Adds the layout a spill block uses to the filesystem's LAYOUTS ZAP when it is missing
/// (filesystems made before session 19 registered layouts 2-7 only; `sa_find_layout`
/// registers a new layout the same way, at first use).
fn register_spill_layout(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    spill: &[u8],
) -> Result<(), ZplError> {
    let info = crate::byteorder::ByteOrder::HOST
        .u16_at(spill, 4)
        .map_err(|_| ZplError::Io("spill block without an SA header".to_string()))?;
    let num = u64::from(info & 0x3ff);
    let Some((_, attrs)) = super::znode::ZETTA_LAYOUTS.iter().find(|(n, _)| *n == num) else {
        return Err(ZplError::Io(format!("spill layout {num}")));
    };
    let word = |os: &mut ObjectSet, zap_object: ObjectId, name: &str| -> Result<u64, ZplError> {
        zap::zap_lookup(os, ctx, zap_object, name)?
            .and_then(|v| v.first().copied())
            .ok_or_else(|| ZplError::Io(format!("SA tables have no {name}")))
    };
    let sa_master = word(os, super::MASTER_NODE_OBJECT, "SA_ATTRS")?;
    let layouts = word(os, ObjectId(sa_master), super::openzfs::sa::SA_LAYOUTS)?;
    if zap::zap_lookup(os, ctx, ObjectId(layouts), num.to_string())?.is_none() {
        zap::zap_update_u16s(os, ctx, ObjectId(layouts), num.to_string(), attrs)?;
    }
    Ok(())
}

pub fn attr(os: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<Attr, ZplError> {
    let dnode = os.dnode(ctx, ObjectId(object))?;
    if !is_znode_bonus(dnode.bonus_type) {
        return Err(ZplError::NotFound);
    }
    let (znode, _) = read_znode(os, ctx, object)?;
    Ok(Attr {
        object,
        znode,
        used_bytes: dnode
            .used_bytes
            .saturating_add(os.pending_new_bytes(ObjectId(object))),
        block_size_bytes: reported_block_size(&dnode, os.block_size_max()),
    })
}

/// `st_blksize` of an object: its data block size, except that a plain file whose one
/// block can still grow answers the record size it grows to once written past it (OpenZFS's
/// `zfs_getattr_fast` answers the record size for a file with no block yet, "suggest
/// maximal I/O transfers"). So a file's answer never changes as it is written: a file
/// cache that keeps attributes (the kernel's FUSE inode, whose `st_blksize` a `statx`
/// asking for no field never refreshes) is never stale. It changes only when a
/// `zfs set recordsize` changes what such a file would grow to.
fn reported_block_size(dnode: &crate::dmu::dnode::DnodePhys, record_size: u32) -> u32 {
    let current = dnode.data_block_size_bytes;
    if dnode.object_type == object_type::PLAIN_FILE
        && dnode.max_block_id == 0
        && current < record_size
    {
        record_size
    } else {
        current
    }
}

fn get_dir(os: &ObjectSet, ctx: &IoCtx<'_>, dir: u64) -> Result<ZnodePhys, ZplError> {
    let znode = get(os, ctx, dir)?;
    if znode.kind() != Some(FileKind::Directory) {
        return Err(ZplError::NotDir);
    }
    if znode.links == 0 {
        // A removed directory takes no new entries.
        return Err(ZplError::NotFound);
    }
    Ok(znode)
}

/// Linux relatime: an update is due when the atime is not newer than the mtime and ctime,
/// or is a day old; without relatime, always.
fn atime_due(znode: &ZnodePhys, now: Timespec, relatime: bool) -> bool {
    if !relatime {
        return true;
    }
    let day_old = now.sec.saturating_sub(znode.atime.sec) >= 24 * 3600;
    !(znode.atime > znode.mtime && znode.atime > znode.ctime && !day_old)
}

/// A generation number no other object of this process gets: the creation txg in the
/// high bits, a counter below. Object numbers are reused once freed; the kernel tells a
/// new file from an old one at the same number (still in its inode cache) by this.
fn next_generation(txg: u64) -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = crate::io::sim::sequence()
        .unwrap_or_else(|| COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    txg << 24 | (count & 0xFF_FFFF)
}

/// Creates an object with a fresh znode (no name yet) whose parent is `parent`, its bonus
/// of type `bonus_type` (`Zfsvfs::znode_bonus_type`: SA for ZPL 5, `znode_phys_t` before).
#[allow(clippy::too_many_arguments)]
pub(super) fn allocate(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    bonus_type: u8,
    kind: FileKind,
    mode: u64,
    creds: Creds,
    rdev: u64,
    parent: u64,
    now: Timespec,
) -> Result<u64, ZplError> {
    let object = if kind == FileKind::Directory {
        zap::zap_create_with_bonus(os, ctx, object_type::DIRECTORY, bonus_type, SA_BONUS_BYTES)?
    } else {
        os.create_object(
            ctx,
            object_type::PLAIN_FILE,
            512,
            bonus_type,
            SA_BONUS_BYTES,
        )?
    };
    let znode = ZnodePhys {
        mode: kind.type_bits() | (mode & MODE_PERM_MASK),
        uid: u64::from(creds.uid),
        gid: u64::from(creds.gid),
        links: if kind == FileKind::Directory { 2 } else { 1 },
        parent,
        size: if kind == FileKind::Directory { 2 } else { 0 },
        gen: next_generation(ctx.txg.0),
        flags: ZFS_NEW_FILE_FLAGS,
        rdev,
        xattr: 0,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
    };
    put(os, ctx, object.0, &znode)?;
    Ok(object.0)
}

/// Adds `name` → `object` to `dir`, counting the entry (and the subdirectory's `..`).
pub(super) fn link_into(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    name: &[u8],
    object: u64,
    kind: FileKind,
    now: Timespec,
) -> Result<(), ZplError> {
    let mut parent = get_dir(os, ctx, dir)?;
    if kind == FileKind::Directory && parent.links >= LINK_MAX {
        return Err(ZplError::TooManyLinks);
    }
    dir::add(os, ctx, dir, name, object, kind)?;
    parent.size += 1;
    if kind == FileKind::Directory {
        parent.links += 1;
    }
    parent.mtime = now;
    parent.ctime = now;
    put(os, ctx, dir, &parent)
}

pub(super) fn unlink_from(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    name: &[u8],
    kind: FileKind,
    now: Timespec,
) -> Result<(), ZplError> {
    let mut parent = get(os, ctx, dir)?;
    dir::remove(os, ctx, dir, name)?;
    parent.size = parent.size.saturating_sub(1).max(2);
    if kind == FileKind::Directory {
        parent.links = parent.links.saturating_sub(1).max(2);
    }
    parent.mtime = now;
    parent.ctime = now;
    put(os, ctx, dir, &parent)
}

/// What to change in `setattr`; `None` leaves a field alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<Timespec>,
    pub mtime: Option<Timespec>,
    pub ctime: Option<Timespec>,
    pub crtime: Option<Timespec>,
}

/// What `unlink`/`rmdir`/`rename` did to the name's former object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unlinked {
    pub object: u64,
    /// Its last link is gone: it sits on the delete queue until `reclaim`.
    pub orphaned: bool,
}

impl Zfsvfs {
    pub fn getattr(&self, os: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<Attr, ZplError> {
        attr(os, ctx, object)
    }

    pub fn lookup(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        name: &[u8],
    ) -> Result<Attr, ZplError> {
        let parent = get_dir(os, ctx, dir)?;
        let object = match name {
            b"." => dir,
            b".." => parent.parent,
            _ => {
                dir::lookup(os, ctx, dir, name)?
                    .ok_or(ZplError::NotFound)?
                    .0
            }
        };
        attr(os, ctx, object)
    }

    /// Creates a file, directory, device node, fifo or socket named `name` in `dir`.
    /// `mode` holds the permission bits; a setgid directory passes on its group (and,
    /// to subdirectories, its setgid bit).
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        name: &[u8],
        kind: FileKind,
        mode: u32,
        creds: Creds,
        rdev: u64,
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        self.make_node(os, ctx, dir, name, kind, mode, creds, rdev, now, &[])
    }

    /// `create` and `symlink`: the new object named in `dir`, a symlink's `target` in its
    /// SAs (ZPL 4: after the `znode_phys_t`, or its data when long), and one log record
    /// for all of it.
    #[allow(clippy::too_many_arguments)]
    fn make_node(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        name: &[u8],
        kind: FileKind,
        mode: u32,
        creds: Creds,
        rdev: u64,
        now: Timespec,
        target: &[u8],
    ) -> Result<Attr, ZplError> {
        dir::check_name(name)?;
        let parent = get_dir(os, ctx, dir)?;
        if dir::lookup(os, ctx, dir, name)?.is_some() {
            return Err(ZplError::Exists);
        }
        let mut mode = u64::from(mode);
        let mut creds = creds;
        if parent.mode & S_ISGID != 0 {
            creds.gid = parent.gid as u32;
            if kind == FileKind::Directory {
                mode |= S_ISGID;
            }
        }
        let bonus_type = self.znode_bonus_type();
        let object = allocate(os, ctx, bonus_type, kind, mode, creds, rdev, dir, now)?;
        link_into(os, ctx, dir, name, object, kind, now)?;
        if !target.is_empty() {
            // zfs_symlink: ZPL_SYMLINK always in ZPL 5 (in the bonus, or the spill block
            // when it does not fit); in ZPL 4 a short target after the znode_phys_t, a
            // longer one in the data (`zfs_sa_symlink`).
            let mut znode = get(os, ctx, object)?;
            znode.size = target.len() as u64;
            if bonus_type == BONUS_TYPE_ZNODE
                || target.len() <= ZnodePhys::symlink_inline_max_bytes(bonus_type)
            {
                put_bonus(os, ctx, object, bonus_type, &znode, Some(target))?;
            } else {
                os.write(ctx, ObjectId(object), 0, target)?;
                put_bonus(os, ctx, object, bonus_type, &znode, None)?;
            }
        }
        let created = attr(os, ctx, object)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Create {
                dir,
                object,
                name: name.to_vec(),
                znode: created.znode,
                target: target.to_vec(),
            },
        );
        Ok(created)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn symlink(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        name: &[u8],
        target: &[u8],
        creds: Creds,
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        if target.is_empty() || target.len() > 4096 {
            return Err(ZplError::NameTooLong);
        }
        self.make_node(
            os,
            ctx,
            dir,
            name,
            FileKind::Symlink,
            0o777,
            creds,
            0,
            now,
            target,
        )
    }

    pub fn readlink(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
    ) -> Result<Vec<u8>, ZplError> {
        let (znode, target) = read_znode(os, ctx, object)?;
        if znode.kind() != Some(FileKind::Symlink) {
            return Err(ZplError::Invalid("not a symlink".to_string()));
        }
        if let Some(target) = target {
            return Ok(target);
        }
        Ok(os.read(ctx, ObjectId(object), 0, znode.size as usize)?)
    }

    /// A new name for an existing non-directory.
    pub fn link(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        dir: u64,
        name: &[u8],
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        dir::check_name(name)?;
        let mut znode = get(os, ctx, object)?;
        let kind = znode.kind().ok_or(ZplError::NotFound)?;
        if kind == FileKind::Directory {
            return Err(ZplError::NotPermitted);
        }
        if znode.links == 0 {
            return Err(ZplError::NotFound);
        }
        if znode.links >= LINK_MAX {
            return Err(ZplError::TooManyLinks);
        }
        if dir::lookup(os, ctx, dir, name)?.is_some() {
            return Err(ZplError::Exists);
        }
        link_into(os, ctx, dir, name, object, kind, now)?;
        znode.links += 1;
        znode.ctime = now;
        put(os, ctx, object, &znode)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Link {
                object,
                dir,
                name: name.to_vec(),
                now,
            },
        );
        attr(os, ctx, object)
    }

    /// Drops one link of `object`; at zero it goes on the delete queue.
    fn drop_link(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        now: Timespec,
    ) -> Result<Unlinked, ZplError> {
        let mut znode = get(os, ctx, object)?;
        let floor = if znode.kind() == Some(FileKind::Directory) {
            // A directory's own `.` link goes with its name.
            2
        } else {
            1
        };
        znode.ctime = now;
        let orphaned = znode.links <= floor;
        if orphaned {
            znode.links = 0;
            zap::zap_update(
                os,
                ctx,
                ObjectId(self.delete_queue),
                format!("{object:x}"),
                &[object],
            )?;
        } else {
            znode.links -= 1;
        }
        put(os, ctx, object, &znode)?;
        Ok(Unlinked { object, orphaned })
    }

    pub fn unlink(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        name: &[u8],
        now: Timespec,
    ) -> Result<Unlinked, ZplError> {
        get_dir(os, ctx, dir)?;
        let (object, kind) = dir::lookup(os, ctx, dir, name)?.ok_or(ZplError::NotFound)?;
        if kind == FileKind::Directory {
            return Err(ZplError::IsDir);
        }
        unlink_from(os, ctx, dir, name, kind, now)?;
        let gone = self.drop_link(os, ctx, object, now)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Remove {
                dir,
                name: name.to_vec(),
                is_dir: false,
                now,
            },
        );
        Ok(gone)
    }

    pub fn rmdir(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        name: &[u8],
        now: Timespec,
    ) -> Result<Unlinked, ZplError> {
        if name == b"." {
            return Err(ZplError::Invalid("rmdir of '.'".to_string()));
        }
        if name == b".." {
            return Err(ZplError::NotEmpty);
        }
        get_dir(os, ctx, dir)?;
        let (object, kind) = dir::lookup(os, ctx, dir, name)?.ok_or(ZplError::NotFound)?;
        if kind != FileKind::Directory {
            return Err(ZplError::NotDir);
        }
        if !dir::is_empty(os, ctx, object)? {
            return Err(ZplError::NotEmpty);
        }
        unlink_from(os, ctx, dir, name, kind, now)?;
        let gone = self.drop_link(os, ctx, object, now)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Remove {
                dir,
                name: name.to_vec(),
                is_dir: true,
                now,
            },
        );
        Ok(gone)
    }

    /// Renames `sdir/sname` to `ddir/dname`, replacing a compatible target (POSIX
    /// `rename`), or fails with EEXIST under `noreplace`, or swaps the two under `exchange`.
    /// Returns what happened to a replaced target.
    #[allow(clippy::too_many_arguments)]
    pub fn rename(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        sdir: u64,
        sname: &[u8],
        ddir: u64,
        dname: &[u8],
        noreplace: bool,
        exchange: bool,
        now: Timespec,
    ) -> Result<Option<Unlinked>, ZplError> {
        let replaced =
            self.rename_unlogged(os, ctx, sdir, sname, ddir, dname, noreplace, exchange, now)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Rename {
                sdir,
                sname: sname.to_vec(),
                ddir,
                dname: dname.to_vec(),
                noreplace,
                exchange,
                now,
            },
        );
        Ok(replaced)
    }

    #[allow(clippy::too_many_arguments)]
    fn rename_unlogged(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        sdir: u64,
        sname: &[u8],
        ddir: u64,
        dname: &[u8],
        noreplace: bool,
        exchange: bool,
        now: Timespec,
    ) -> Result<Option<Unlinked>, ZplError> {
        dir::check_name(dname).map_err(|e| match e {
            ZplError::Exists => ZplError::Invalid("rename to '.' or '..'".to_string()),
            other => other,
        })?;
        get_dir(os, ctx, sdir)?;
        get_dir(os, ctx, ddir)?;
        let (object, kind) = dir::lookup(os, ctx, sdir, sname)?.ok_or(ZplError::NotFound)?;
        let target = dir::lookup(os, ctx, ddir, dname)?;
        if exchange {
            let (other, other_kind) = target.ok_or(ZplError::NotFound)?;
            if sdir == ddir && sname == dname {
                return Ok(None);
            }
            dir::remove(os, ctx, sdir, sname)?;
            dir::remove(os, ctx, ddir, dname)?;
            dir::add(os, ctx, sdir, sname, other, other_kind)?;
            dir::add(os, ctx, ddir, dname, object, kind)?;
            if sdir != ddir {
                let adjust = |os: &mut ObjectSet, d: u64, gain: FileKind, lose: FileKind| {
                    let mut z = get(os, ctx, d)?;
                    if gain == FileKind::Directory {
                        z.links += 1;
                    }
                    if lose == FileKind::Directory {
                        z.links = z.links.saturating_sub(1).max(2);
                    }
                    put(os, ctx, d, &z)
                };
                adjust(os, sdir, other_kind, kind)?;
                adjust(os, ddir, kind, other_kind)?;
            }
            for (o, parent) in [(object, ddir), (other, sdir)] {
                let mut z = get(os, ctx, o)?;
                z.parent = parent;
                z.ctime = now;
                put(os, ctx, o, &z)?;
            }
            for d in [sdir, ddir] {
                let mut z = get(os, ctx, d)?;
                z.mtime = now;
                z.ctime = now;
                put(os, ctx, d, &z)?;
            }
            return Ok(None);
        }
        let mut replaced = None;
        if let Some((existing, existing_kind)) = target {
            if existing == object {
                // Two names of one file: POSIX says do nothing.
                return Ok(None);
            }
            if noreplace {
                return Err(ZplError::Exists);
            }
            match (
                kind == FileKind::Directory,
                existing_kind == FileKind::Directory,
            ) {
                (true, false) => return Err(ZplError::NotDir),
                (false, true) => return Err(ZplError::IsDir),
                (true, true) if !dir::is_empty(os, ctx, existing)? => {
                    return Err(ZplError::NotEmpty)
                }
                _ => {}
            }
            unlink_from(os, ctx, ddir, dname, existing_kind, now)?;
            replaced = Some(self.drop_link(os, ctx, existing, now)?);
        }
        unlink_from(os, ctx, sdir, sname, kind, now)?;
        link_into(os, ctx, ddir, dname, object, kind, now)?;
        let mut znode = get(os, ctx, object)?;
        znode.parent = ddir;
        znode.ctime = now;
        put(os, ctx, object, &znode)?;
        Ok(replaced)
    }

    /// One batch of a shrinking truncate to `size`: frees up to `max_blocks` of the
    /// file's last records past it (OpenZFS `zfs_trunc` frees with `dmu_free_long_range`
    /// before it sets the size). Returns whether nothing is left to free, after which
    /// `setattr` sets the size at little cost. Callers commit between batches so that no
    /// txg holds the indirect blocks of a whole huge file. The size is unchanged and
    /// nothing is logged: a crash between batches leaves the tail read as zeros, as on
    /// OpenZFS, and the truncate itself was never acknowledged.
    pub fn truncate_batch(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        size: u64,
        max_blocks: usize,
    ) -> Result<bool, ZplError> {
        let znode = get(os, ctx, object)?;
        if znode.kind() != Some(FileKind::Regular) || size >= znode.size {
            return Ok(true);
        }
        Ok(os.free_tail_batch(ctx, ObjectId(object), size, max_blocks)?)
    }

    /// One batch of a long hole punch over [offset, offset + len): frees up to
    /// `max_blocks` of the whole records inside it, from the end; `punch_hole` then
    /// zeroes the partial records, frees what is left and logs the punch. Like
    /// `truncate_batch`, nothing is logged and a crash between batches leaves part of
    /// the range reading as zeros.
    pub fn punch_batch(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        offset: u64,
        len: u64,
        max_blocks: usize,
    ) -> Result<bool, ZplError> {
        let znode = get(os, ctx, object)?;
        if znode.kind() != Some(FileKind::Regular) {
            return Ok(true);
        }
        Ok(os.free_range_batch(ctx, ObjectId(object), offset, len, max_blocks)?)
    }

    /// Changes attributes; a size change truncates or extends (sparsely) a regular file.
    pub fn setattr(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        change: &SetAttr,
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        let mut znode = get(os, ctx, object)?;
        if let Some(size) = change.size {
            match znode.kind() {
                Some(FileKind::Regular) => {}
                Some(FileKind::Directory) => return Err(ZplError::IsDir),
                _ => return Err(ZplError::Invalid("truncate of a special file".to_string())),
            }
            if size > FILE_SIZE_MAX {
                return Err(ZplError::TooBig);
            }
            os.truncate(ctx, ObjectId(object), size)?;
            if size != znode.size {
                znode.mtime = now;
            }
            znode.size = size;
        }
        if let Some(mode) = change.mode {
            znode.mode = (znode.mode & !MODE_PERM_MASK) | (u64::from(mode) & MODE_PERM_MASK);
        }
        if let Some(uid) = change.uid {
            znode.uid = u64::from(uid);
        }
        if let Some(gid) = change.gid {
            znode.gid = u64::from(gid);
        }
        if let Some(t) = change.atime {
            znode.atime = t;
        }
        if let Some(t) = change.mtime {
            znode.mtime = t;
        }
        if let Some(t) = change.crtime {
            znode.crtime = t;
        }
        znode.ctime = change.ctime.unwrap_or(now);
        put(os, ctx, object, &znode)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Setattr {
                object,
                change: *change,
                now,
            },
        );
        attr(os, ctx, object)
    }

    /// Sets the access time only (reads under atime=on/relatime); no ctime change.
    pub fn touch_atime(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        now: Timespec,
        relatime: bool,
    ) -> Result<(), ZplError> {
        let mut znode = get(os, ctx, object)?;
        if !atime_due(&znode, now, relatime) {
            return Ok(());
        }
        znode.atime = now;
        put(os, ctx, object, &znode)
    }

    /// Whether a read at `now` would change the access time (`touch_atime`): always
    /// under atime=on, under relatime only when the atime is not newer than the mtime and
    /// ctime or a day old. Shared access, so a mount asks before it takes the pool's
    /// exclusive lock for the update, and most reads never do.
    pub fn atime_update_due(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        now: Timespec,
        relatime: bool,
    ) -> Result<bool, ZplError> {
        Ok(atime_due(&get(os, ctx, object)?, now, relatime))
    }

    pub fn read(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, ZplError> {
        let znode = get(os, ctx, object)?;
        match znode.kind() {
            Some(FileKind::Directory) => return Err(ZplError::IsDir),
            Some(FileKind::Regular) => {}
            _ => return Err(ZplError::Invalid("read of a special file".to_string())),
        }
        if offset >= znode.size {
            return Ok(Vec::new());
        }
        let want = (znode.size - offset).min(len as u64) as usize;
        let mut data = os.read(ctx, ObjectId(object), offset, want)?;
        // Past the data's end but inside the size (after an extending truncate): zeros.
        data.resize(want, 0);
        Ok(data)
    }

    /// Writes `data` at `offset`; returns the new size.
    pub fn write(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        offset: u64,
        data: &[u8],
        now: Timespec,
    ) -> Result<u64, ZplError> {
        let mut znode = get(os, ctx, object)?;
        match znode.kind() {
            Some(FileKind::Directory) => return Err(ZplError::IsDir),
            Some(FileKind::Regular) => {}
            _ => return Err(ZplError::Invalid("write to a special file".to_string())),
        }
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&end| end <= FILE_SIZE_MAX)
            .ok_or(ZplError::TooBig)?;
        if !data.is_empty() {
            os.write(ctx, ObjectId(object), offset, data)?;
        }
        znode.size = znode.size.max(end);
        znode.mtime = now;
        znode.ctime = now;
        put(os, ctx, object, &znode)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Write {
                object,
                offset,
                len: data.len() as u64,
                data: Vec::new(),
                now,
            },
        );
        Ok(znode.size)
    }

    /// `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`: the range reads as zeros
    /// and its whole records are freed; the size stays.
    pub fn punch_hole(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        offset: u64,
        len: u64,
        now: Timespec,
    ) -> Result<(), ZplError> {
        let mut znode = get(os, ctx, object)?;
        if znode.kind() != Some(FileKind::Regular) {
            return Err(ZplError::Invalid("hole in a special file".to_string()));
        }
        let end = offset.saturating_add(len).min(znode.size);
        if offset < end {
            os.free_range(ctx, ObjectId(object), offset, end - offset)?;
        }
        znode.mtime = now;
        znode.ctime = now;
        put(os, ctx, object, &znode)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::Punch {
                object,
                offset,
                len,
                now,
            },
        );
        Ok(())
    }

    /// Frees an unlinked object for good (its last close, or the queue drained at mount).
    /// A no-op for an object that still has links.
    pub fn reclaim(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
    ) -> Result<(), ZplError> {
        let key = format!("{object:x}");
        let znode = match get(os, ctx, object) {
            Ok(znode) => znode,
            Err(ZplError::NotFound) => {
                // Already gone (a crash between free and dequeue cannot happen within a
                // txg, but a stale queue entry must not wedge the mount).
                let _ = zap::zap_remove(os, ctx, ObjectId(self.delete_queue), &key);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if znode.links > 0 {
            return Ok(());
        }
        if znode.xattr != 0 {
            super::xattr::destroy_all(os, ctx, znode.xattr)?;
        }
        os.free_object(ctx, ObjectId(object))?;
        match zap::zap_remove(os, ctx, ObjectId(self.delete_queue), &key) {
            Ok(()) | Err(zap::ZapError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
        zfs_log::log(os, ctx.txg, Lr::Reclaim { object });
        Ok(())
    }

    /// Up to `max` entries of directory `dir` from `offset` (0 first; see `dir`).
    pub fn readdir(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        dir: u64,
        offset: i64,
        max: usize,
    ) -> Result<Vec<dir::Dirent>, ZplError> {
        let znode = get(os, ctx, dir)?;
        if znode.kind() != Some(FileKind::Directory) {
            return Err(ZplError::NotDir);
        }
        dir::list(os, ctx, dir, znode.parent, offset, max)
    }
}
