//! Extended attributes (OpenZFS `zfs_xattr.c`). An object's xattrs live in a ZAP of their
//! own, named by the znode's `xattr` field: name → value bytes. A value too large for a
//! ZAP entry (over 8 KiB) is kept in a separate object and the entry holds
//! `[object, length]` as u64 words instead. Linux limits apply: names of 1..=255 bytes,
//! values up to 64 KiB.
//!
//! A ZPL 4 filesystem (zfs-fuse's, `-o version=23` pools) keeps xattrs as OpenZFS does
//! before system attributes: the `xattr` field names a hidden directory (a ZAP of name →
//! dirent, `ZFS_DIRENT_OBJ` in the low 48 bits) whose files hold the values. Those are
//! read here (a one-word entry is a dirent: its file's znode gives the length) and freed
//! with their owner; writing them is refused (EOPNOTSUPP) until Zetta writes xattr
//! directories, so no pool ever holds both shapes under one object.

use super::vnops::{get, put};
use super::zfs_log::{self, Lr};
use super::znode::Timespec;
use super::{Zfsvfs, ZplError};
use crate::dmu::{object_type, IoCtx, ObjectSet};
use crate::types::ObjectId;
use crate::zap::{self, ZapValue, VALUE_SIZE_MAX_BYTES};

/// Largest xattr value (Linux XATTR_SIZE_MAX).
pub const XATTR_VALUE_MAX_BYTES: usize = 64 << 10;
pub const XATTR_NAME_MAX_BYTES: usize = 255;
/// `setxattr` flags.
pub const XATTR_CREATE: u32 = 1;
pub const XATTR_REPLACE: u32 = 2;

fn check_name(name: &[u8]) -> Result<(), ZplError> {
    if name.is_empty() || name.contains(&0) {
        return Err(ZplError::Invalid("bad xattr name".to_string()));
    }
    if name.len() > XATTR_NAME_MAX_BYTES {
        return Err(ZplError::Range);
    }
    Ok(())
}

/// The object number of a directory entry (`ZFS_DIRENT_OBJ`: the low 48 bits).
const DIRENT_OBJECT_MASK: u64 = (1 << 48) - 1;

fn value_of(os: &ObjectSet, ctx: &IoCtx<'_>, value: ZapValue) -> Result<Vec<u8>, ZplError> {
    match value {
        ZapValue::Bytes(bytes) => Ok(bytes),
        ZapValue::U64s(words) => match words.as_slice() {
            // An entry of an OpenZFS xattr directory: the value is the file's data.
            [dirent] => {
                let object = dirent & DIRENT_OBJECT_MASK;
                let size = get(os, ctx, object)?.size;
                if size as usize > XATTR_VALUE_MAX_BYTES {
                    return Err(ZplError::Io(format!("xattr file {object} of {size} bytes")));
                }
                Ok(os.read(ctx, ObjectId(object), 0, size as usize)?)
            }
            [object, len] if *len as usize <= XATTR_VALUE_MAX_BYTES => {
                Ok(os.read(ctx, ObjectId(*object), 0, *len as usize)?)
            }
            _ => Err(ZplError::Io("malformed large xattr entry".to_string())),
        },
    }
}

/// Frees the separate object of a large value, or the file an xattr directory's entry
/// names, if the entry has one.
fn free_value(os: &mut ObjectSet, ctx: &IoCtx<'_>, value: &ZapValue) -> Result<(), ZplError> {
    if let ZapValue::U64s(words) = value {
        match words.as_slice() {
            [dirent] => os.free_object(ctx, ObjectId(dirent & DIRENT_OBJECT_MASK))?,
            [object, ..] => os.free_object(ctx, ObjectId(*object))?,
            [] => {}
        }
    }
    Ok(())
}

/// Xattrs are written only on ZPL 5 filesystems (see the header).
fn check_writable(vfs: &Zfsvfs) -> Result<(), ZplError> {
    if vfs.version < super::ZPL_VERSION_SA {
        return Err(ZplError::NotSupported(
            "writing xattrs on a ZPL version 4 filesystem",
        ));
    }
    Ok(())
}

/// Frees an object's xattr ZAP and every large value (the object is being reclaimed).
pub fn destroy_all(os: &mut ObjectSet, ctx: &IoCtx<'_>, xattr_zap: u64) -> Result<(), ZplError> {
    for entry in zap::zap_list_all(os, ctx, ObjectId(xattr_zap))? {
        free_value(os, ctx, &entry.value)?;
    }
    zap::zap_destroy(os, ctx, ObjectId(xattr_zap))?;
    Ok(())
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
        if znode.xattr == 0 {
            return Err(ZplError::NoData);
        }
        let value =
            zap::zap_lookup_value(os, ctx, ObjectId(znode.xattr), name)?.ok_or(ZplError::NoData)?;
        value_of(os, ctx, value)
    }

    /// Every xattr name of the object.
    pub fn listxattr(
        &self,
        os: &ObjectSet,
        ctx: &IoCtx<'_>,
        object: u64,
    ) -> Result<Vec<Vec<u8>>, ZplError> {
        let znode = get(os, ctx, object)?;
        if znode.xattr == 0 {
            return Ok(Vec::new());
        }
        Ok(zap::zap_list_all(os, ctx, ObjectId(znode.xattr))?
            .into_iter()
            .map(|e| e.name)
            .collect())
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
        check_writable(self)?;
        if value.len() > XATTR_VALUE_MAX_BYTES {
            return Err(ZplError::TooBig);
        }
        let mut znode = get(os, ctx, object)?;
        if znode.xattr == 0 {
            if flags & XATTR_REPLACE != 0 {
                return Err(ZplError::NoData);
            }
            znode.xattr = zap::zap_create(os, ctx, object_type::ZAP)?.0;
        }
        let zap_object = ObjectId(znode.xattr);
        let old = zap::zap_lookup_value(os, ctx, zap_object, name)?;
        match (&old, flags) {
            (Some(_), f) if f & XATTR_CREATE != 0 => return Err(ZplError::Exists),
            (None, f) if f & XATTR_REPLACE != 0 => return Err(ZplError::NoData),
            _ => {}
        }
        if let Some(old) = &old {
            free_value(os, ctx, old)?;
        }
        if value.len() <= VALUE_SIZE_MAX_BYTES {
            zap::zap_update_bytes(os, ctx, zap_object, name, value)?;
        } else {
            let holder = os.create_object(ctx, object_type::PLAIN_FILE, 512, 0, 0)?;
            os.write(ctx, holder, 0, value)?;
            zap::zap_update(os, ctx, zap_object, name, &[holder.0, value.len() as u64])?;
        }
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
        check_writable(self)?;
        let mut znode = get(os, ctx, object)?;
        if znode.xattr == 0 {
            return Err(ZplError::NoData);
        }
        let zap_object = ObjectId(znode.xattr);
        let old = zap::zap_lookup_value(os, ctx, zap_object, name)?.ok_or(ZplError::NoData)?;
        free_value(os, ctx, &old)?;
        zap::zap_remove(os, ctx, zap_object, name)?;
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
