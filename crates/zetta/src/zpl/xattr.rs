//! Extended attributes (OpenZFS `zpl_xattr.c`, `zfs_make_xattrdir`): `xattr=dir` as
//! OpenZFS writes it. An object's xattrs are the files of a hidden directory that the
//! znode's `xattr` field (SA `ZPL_XATTR`, or `zp_xattr` in a ZPL 4 `znode_phys_t`) names.
//! The directory is a znode like any other, made on the first set (`zfs_make_xattrdir`):
//! mode `S_IFDIR | S_ISVTX | 0777`, owned by the file's owner, parent = the file, and
//! `ZFS_XATTR` in its flags; it is linked from no directory. Each xattr is a regular file
//! in it (mode 0644, `ZFS_XATTR` too, as `zfs_mknode` gives every object made in an xattr
//! directory) whose data is the value (`zpl_xattr_set_dir`: truncated, then written from
//! offset 0; `zpl_xattr_get_dir`: read up to its size). A removed xattr's file is unlinked
//! and freed; the directory stays, as OpenZFS leaves it. The file's reclaim frees the
//! directory and its files with it (OpenZFS queues the directory on the delete queue; it
//! is freed in the same txg here, which a crash cannot split). OpenZFS's own tools see
//! ordinary objects: `zdb` prints the directory and files, `zfs send` carries them.
//! Linux limits apply: names of 1..=255 bytes, values up to 64 KiB.
//!
//! The xattr files' owner is the file's owner (OpenZFS gives a new xattr file the caller's
//! ids; the engine's setxattr has no caller).
//!
//! Before session 20 Zetta kept an object's xattrs in a plain ZAP instead (name → value
//! bytes, or `[object, length]` for a value over 8 KiB in an object of its own); such a
//! ZAP (a `xattr` object without a znode bonus) is still read, and the first change to it
//! rewrites it as a directory (`migrate_legacy`).

use super::dir;
use super::vnops::{allocate, get, link_into, put, unlink_from};
use super::zfs_log::{self, Lr};
use super::znode::{is_znode_bonus, FileKind, Timespec};
use super::{Creds, Zfsvfs, ZplError};
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::ObjectId;
use crate::zap::{self, ZapValue};

/// Largest xattr value (Linux XATTR_SIZE_MAX).
pub const XATTR_VALUE_MAX_BYTES: usize = 64 << 10;
pub const XATTR_NAME_MAX_BYTES: usize = 255;
/// `setxattr` flags.
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;
/// `ZFS_XATTR`: the znode flag of an xattr directory and of the files in it.
pub const ZFS_XATTR: u64 = 0x1;
/// The mode `zfs_xattr_owner_unlinked`'s caller gives a new xattr directory (`S_ISVTX |
/// 0777`; the directory type bits are added by `allocate`).
const XATTR_DIR_MODE: u64 = 0o1777;
/// `zpl_xattr_set_dir`'s mode for a new xattr file (`S_IFREG | 0644`).
const XATTR_FILE_MODE: u64 = 0o644;

fn check_name(name: &[u8]) -> Result<(), ZplError> {
    if name.is_empty() || name.contains(&0) {
        return Err(ZplError::Invalid("bad xattr name".to_string()));
    }
    if name.len() > XATTR_NAME_MAX_BYTES {
        return Err(ZplError::Range);
    }
    Ok(())
}

/// Where an object's xattrs are.
enum Store {
    None,
    /// An xattr directory (OpenZFS's form, Zetta's since session 20, zfs-fuse's).
    Dir(u64),
    /// Zetta's pre-session-20 xattr ZAP.
    Legacy(u64),
}

fn store_of(os: &ObjectSet, ctx: &IoCtx<'_>, xattr: u64) -> Result<Store, ZplError> {
    if xattr == 0 {
        return Ok(Store::None);
    }
    let dnode = os.dnode(ctx, ObjectId(xattr))?;
    Ok(if is_znode_bonus(dnode.bonus_type) {
        Store::Dir(xattr)
    } else {
        Store::Legacy(xattr)
    })
}

/// The value an xattr file holds.
fn read_file(os: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<Vec<u8>, ZplError> {
    let size = get(os, ctx, object)?.size;
    if size as usize > XATTR_VALUE_MAX_BYTES {
        return Err(ZplError::Io(format!("xattr file {object} of {size} bytes")));
    }
    let mut data = os.read(ctx, ObjectId(object), 0, size as usize)?;
    data.resize(size as usize, 0);
    Ok(data)
}

/// A legacy ZAP entry's value: the bytes, `[object, length]` of a large one, or (a ZAP
/// holding one-word entries is read as the directory it is) a dirent.
fn legacy_value(os: &ObjectSet, ctx: &IoCtx<'_>, value: ZapValue) -> Result<Vec<u8>, ZplError> {
    match value {
        ZapValue::Bytes(bytes) => Ok(bytes),
        ZapValue::U64s(words) => match words.as_slice() {
            [dirent] => read_file(os, ctx, dir::dirent_object(*dirent)),
            [object, len] if *len as usize <= XATTR_VALUE_MAX_BYTES => {
                Ok(os.read(ctx, ObjectId(*object), 0, *len as usize)?)
            }
            _ => Err(ZplError::Io("malformed large xattr entry".to_string())),
        },
    }
}

/// Frees a legacy ZAP's large value objects and the ZAP.
fn destroy_legacy(os: &mut ObjectSet, ctx: &IoCtx<'_>, zap_object: u64) -> Result<(), ZplError> {
    for entry in zap::zap_list_all(os, ctx, ObjectId(zap_object))? {
        if let ZapValue::U64s(words) = &entry.value {
            if let Some(&first) = words.first() {
                os.free_object(ctx, ObjectId(dir::dirent_object(first)))?;
            }
        }
    }
    zap::zap_destroy(os, ctx, ObjectId(zap_object))?;
    Ok(())
}

/// Frees an object's xattrs, whatever their form (the object is being reclaimed): an
/// xattr directory's files and the directory, or a legacy ZAP and its value objects.
pub fn destroy_all(os: &mut ObjectSet, ctx: &IoCtx<'_>, xattr: u64) -> Result<(), ZplError> {
    match store_of(os, ctx, xattr)? {
        Store::None => Ok(()),
        Store::Legacy(zap_object) => destroy_legacy(os, ctx, zap_object),
        Store::Dir(dir_object) => {
            for entry in zap::zap_list_all(os, ctx, ObjectId(dir_object))? {
                let ZapValue::U64s(words) = &entry.value else {
                    return Err(ZplError::Io(format!(
                        "xattr directory {dir_object} holds a byte entry"
                    )));
                };
                if let Some(&dirent) = words.first() {
                    os.free_object(ctx, ObjectId(dir::dirent_object(dirent)))?;
                }
            }
            os.free_object(ctx, ObjectId(dir_object))?;
            Ok(())
        }
    }
}

/// Makes `object`'s xattr directory (`zfs_make_xattrdir`) and names it in `znode`.
fn make_xattr_dir(
    vfs: &Zfsvfs,
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    znode: &mut super::ZnodePhys,
    now: Timespec,
) -> Result<u64, ZplError> {
    let owner = owner_of(znode);
    let dir_object = allocate(
        os,
        ctx,
        vfs.znode_bonus_type(),
        FileKind::Directory,
        XATTR_DIR_MODE,
        owner,
        0,
        object,
        now,
    )?;
    mark_xattr(os, ctx, dir_object)?;
    znode.xattr = dir_object;
    Ok(dir_object)
}

fn owner_of(znode: &super::ZnodePhys) -> Creds {
    Creds {
        uid: znode.uid as u32,
        gid: znode.gid as u32,
    }
}

/// Adds `ZFS_XATTR` to a fresh object's flags (`zfs_mknode` under an xattr directory).
fn mark_xattr(os: &mut ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<(), ZplError> {
    let mut znode = get(os, ctx, object)?;
    znode.flags |= ZFS_XATTR;
    put(os, ctx, object, &znode)
}

/// Sets `name` to `value` in xattr directory `dir_object` (`zpl_xattr_set_dir`): the file
/// is made when missing, else truncated, then written from offset 0.
#[allow(clippy::too_many_arguments)]
fn set_in_dir(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir_object: u64,
    owner: Creds,
    bonus_type: u8,
    name: &[u8],
    value: &[u8],
    now: Timespec,
) -> Result<(), ZplError> {
    let file = match dir::lookup(os, ctx, dir_object, name)? {
        Some((file, _)) => {
            os.truncate(ctx, ObjectId(file), 0)?;
            file
        }
        None => {
            let file = allocate(
                os,
                ctx,
                bonus_type,
                FileKind::Regular,
                XATTR_FILE_MODE,
                owner,
                0,
                dir_object,
                now,
            )?;
            mark_xattr(os, ctx, file)?;
            link_into(os, ctx, dir_object, name, file, FileKind::Regular, now)?;
            file
        }
    };
    if !value.is_empty() {
        os.write(ctx, ObjectId(file), 0, value)?;
    }
    let mut znode = get(os, ctx, file)?;
    znode.size = value.len() as u64;
    znode.mtime = now;
    znode.ctime = now;
    put(os, ctx, file, &znode)
}

/// Rewrites a legacy xattr ZAP as an xattr directory holding the same xattrs.
fn migrate_legacy(
    vfs: &Zfsvfs,
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    znode: &mut super::ZnodePhys,
    zap_object: u64,
    now: Timespec,
) -> Result<u64, ZplError> {
    let mut xattrs = Vec::new();
    for entry in zap::zap_list_all(os, ctx, ObjectId(zap_object))? {
        let value = legacy_value(os, ctx, entry.value)?;
        xattrs.push((entry.name, value));
    }
    destroy_legacy(os, ctx, zap_object)?;
    let dir_object = make_xattr_dir(vfs, os, ctx, object, znode, now)?;
    let owner = owner_of(znode);
    for (name, value) in xattrs {
        set_in_dir(
            os,
            ctx,
            dir_object,
            owner,
            vfs.znode_bonus_type(),
            &name,
            &value,
            now,
        )?;
    }
    Ok(dir_object)
}

impl Zfsvfs {
    pub fn getxattr(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        name: &[u8],
    ) -> Result<Vec<u8>, ZplError> {
        check_name(name)?;
        let znode = get(os, ctx, object)?;
        match store_of(os, ctx, znode.xattr)? {
            Store::None => Err(ZplError::NoData),
            Store::Dir(dir_object) => {
                let (file, _) = dir::lookup(os, ctx, dir_object, name)?.ok_or(ZplError::NoData)?;
                read_file(os, ctx, file)
            }
            Store::Legacy(zap_object) => {
                let value = zap::zap_lookup_value(os, ctx, ObjectId(zap_object), name)?
                    .ok_or(ZplError::NoData)?;
                legacy_value(os, ctx, value)
            }
        }
    }

    /// Every xattr name of the object.
    pub fn listxattr(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
    ) -> Result<Vec<Vec<u8>>, ZplError> {
        let znode = get(os, ctx, object)?;
        match store_of(os, ctx, znode.xattr)? {
            Store::None => Ok(Vec::new()),
            Store::Dir(zap_object) | Store::Legacy(zap_object) => {
                Ok(zap::zap_list_all(os, ctx, ObjectId(zap_object))?
                    .into_iter()
                    .map(|e| e.name)
                    .collect())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn setxattr(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        name: &[u8],
        value: &[u8],
        flags: u32,
        now: Timespec,
    ) -> Result<(), ZplError> {
        check_name(name)?;
        if value.len() > XATTR_VALUE_MAX_BYTES {
            return Err(ZplError::TooBig);
        }
        let mut znode = get(os, ctx, object)?;
        let exists = match store_of(os, ctx, znode.xattr)? {
            Store::None => false,
            Store::Dir(dir_object) => dir::lookup(os, ctx, dir_object, name)?.is_some(),
            Store::Legacy(zap_object) => {
                zap::zap_lookup_value(os, ctx, ObjectId(zap_object), name)?.is_some()
            }
        };
        if exists && flags & XATTR_CREATE != 0 {
            return Err(ZplError::Exists);
        }
        if !exists && flags & XATTR_REPLACE != 0 {
            return Err(ZplError::NoData);
        }
        let dir_object = match store_of(os, ctx, znode.xattr)? {
            Store::None => make_xattr_dir(self, os, ctx, object, &mut znode, now)?,
            Store::Dir(dir_object) => dir_object,
            Store::Legacy(zap_object) => {
                migrate_legacy(self, os, ctx, object, &mut znode, zap_object, now)?
            }
        };
        let owner = owner_of(&znode);
        set_in_dir(
            os,
            ctx,
            dir_object,
            owner,
            self.znode_bonus_type(),
            name,
            value,
            now,
        )?;
        znode.ctime = now;
        put(os, ctx, object, &znode)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::SetXattr {
                object,
                name: name.to_vec(),
                value: value.to_vec(),
                flags,
                now,
            },
        );
        Ok(())
    }

    pub fn removexattr(
        &self,
        os: &mut ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
        name: &[u8],
        now: Timespec,
    ) -> Result<(), ZplError> {
        check_name(name)?;
        let mut znode = get(os, ctx, object)?;
        let dir_object = match store_of(os, ctx, znode.xattr)? {
            Store::None => return Err(ZplError::NoData),
            Store::Dir(dir_object) => dir_object,
            Store::Legacy(zap_object) => {
                if zap::zap_lookup_value(os, ctx, ObjectId(zap_object), name)?.is_none() {
                    return Err(ZplError::NoData);
                }
                migrate_legacy(self, os, ctx, object, &mut znode, zap_object, now)?
            }
        };
        let (file, _) = dir::lookup(os, ctx, dir_object, name)?.ok_or(ZplError::NoData)?;
        unlink_from(os, ctx, dir_object, name, FileKind::Regular, now)?;
        os.free_object(ctx, ObjectId(file))?;
        znode.ctime = now;
        put(os, ctx, object, &znode)?;
        zfs_log::log(
            os,
            ctx.txg,
            Lr::RemoveXattr {
                object,
                name: name.to_vec(),
                now,
            },
        );
        Ok(())
    }
}
