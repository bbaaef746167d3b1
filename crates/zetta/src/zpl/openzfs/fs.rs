//! A real OpenZFS filesystem read through its object set: attributes, directories, file
//! data, symlinks and xattrs as the writer stored them (OpenZFS `zfs_zget`, `zfs_dirlook`,
//! `zfs_readdir`, `zfs_read`, `zfs_readlink`, `zfs_getxattr` — read-only).
//!
//! Theory. The master node (object 1) names the root directory and the ZPL version; from
//! version 5 on it also names the SA master node, whose REGISTRY and LAYOUTS ZAPs say how
//! to split a file's system-attribute bonus (and spill block). Older files carry a
//! `znode_phys_t`. Either way a file's attributes come out as one `FileAttr`. A directory is
//! a ZAP of name → (type << 60 | object). A symlink's target lies after the znode in the
//! bonus, in its first data block (ZPL 1-4), or in its `ZPL_SYMLINK` attribute (ZPL 5).
//! Extended attributes are a hidden directory of files (`xattr` object, any version) and,
//! on ZPL 5 with `xattr=sa`, an nvlist in the `ZPL_DXATTR` attribute.
//!
//! Invariants: nothing is written; every read is bounded by the file's recorded size and
//! every failure (bad bytes, a block that does not verify) is an error naming the object.

use super::sa::{decode_buffer, SaLayouts, SaRegistry, SaXattr, ZplAttrs, SA_LAYOUTS, SA_REGISTRY};
use super::znode::{
    DirEntry, ZTime, ZnodePhys, DMU_OT_SA, DMU_OT_ZNODE, MASTER_NODE_OBJ, MASTER_ROOT,
    MASTER_SA_ATTRS, MASTER_VERSION, S_IFLNK, S_IFMT,
};
use crate::dmu::openzfs::reader::{Objset, OzfsError};
use crate::spa::openzfs::pool::zap_map;
use crate::zap::openzfs::ZapKey;

/// Largest symlink target read (PATH_MAX-like bound; OpenZFS allows up to 1 KiB... a
/// hostile size must not allocate gigabytes).
const SYMLINK_MAX_BYTES: u64 = 64 << 10;
/// Largest xattr value read from an xattr directory's file.
const XATTR_VALUE_MAX_BYTES: u64 = 64 << 20;

/// A file's attributes, whatever form they were stored in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileAttr {
    pub mode: u64,
    pub uid: u64,
    pub gid: u64,
    pub size: u64,
    pub links: u64,
    pub parent: u64,
    pub gen: u64,
    pub atime: ZTime,
    pub mtime: ZTime,
    pub ctime: ZTime,
    pub crtime: ZTime,
    pub rdev: u64,
    /// The hidden xattr directory's object (0: none).
    pub xattr: u64,
    pub flags: u64,
}

impl FileAttr {
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == super::znode::S_IFDIR
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }
}

/// One OpenZFS filesystem, open read-only.
pub struct ZplFs {
    pub os: Objset,
    pub version: u64,
    pub root: u64,
    sa: Option<(SaRegistry, SaLayouts)>,
}

fn corrupt(object: u64, why: impl std::fmt::Display) -> OzfsError {
    OzfsError::Corrupt(format!("object {object}: {why}"))
}

impl ZplFs {
    /// Reads the master node (and the SA tables of a ZPL 5 filesystem).
    pub fn open(os: Objset) -> Result<ZplFs, OzfsError> {
        let version = os
            .zap_u64(MASTER_NODE_OBJ, MASTER_VERSION)?
            .ok_or_else(|| OzfsError::Missing("the master node's VERSION".into()))?;
        let root = os
            .zap_u64(MASTER_NODE_OBJ, MASTER_ROOT)?
            .ok_or_else(|| OzfsError::Missing("the master node's ROOT".into()))?;
        let sa = match os.zap_u64(MASTER_NODE_OBJ, MASTER_SA_ATTRS)? {
            None => None,
            Some(sa_master) => {
                let registry = match os.zap_u64(sa_master, SA_REGISTRY)? {
                    Some(object) => zap_map(&os.zap_list(object)?),
                    None => Default::default(),
                };
                let layouts = match os.zap_u64(sa_master, SA_LAYOUTS)? {
                    Some(object) => zap_map(&os.zap_list(object)?),
                    None => Default::default(),
                };
                let registry = SaRegistry::from_zap(registry.iter().map(|(k, v)| (k.as_str(), v)))
                    .map_err(|e| corrupt(sa_master, e))?;
                let layouts = SaLayouts::from_zap(layouts.iter().map(|(k, v)| (k.as_str(), v)))
                    .map_err(|e| corrupt(sa_master, e))?;
                Some((registry, layouts))
            }
        };
        Ok(ZplFs {
            os,
            version,
            root,
            sa,
        })
    }

    /// A file's system attributes (bonus, then spill block), for ZPL 5 files.
    fn sa_attrs(&self, object: u64) -> Result<ZplAttrs, OzfsError> {
        let dn = self.os.dnode(object)?;
        let (registry, layouts) = self.sa.as_ref().ok_or_else(|| {
            corrupt(
                object,
                "system attributes in a filesystem without SA tables",
            )
        })?;
        let spill = match &dn.spill {
            Some(bp) if !crate::dmu::openzfs::raw_bp_is_hole(bp, dn.order) => {
                let order = crate::dmu::openzfs::raw_bp_byte_order(bp, dn.order);
                Some((self.os.read_raw(bp, dn.order)?, order))
            }
            _ => None,
        };
        let mut buffers = vec![decode_buffer(&dn.bonus, dn.order, registry, layouts)
            .map_err(|e| corrupt(object, e))?];
        if let Some((bytes, order)) = &spill {
            buffers.push(
                decode_buffer(bytes, *order, registry, layouts).map_err(|e| corrupt(object, e))?,
            );
        }
        ZplAttrs::from_buffers(&buffers, registry).map_err(|e| corrupt(object, e))
    }

    /// A file's attributes.
    pub fn attr(&self, object: u64) -> Result<FileAttr, OzfsError> {
        let dn = self.os.dnode(object)?;
        match dn.bonustype {
            DMU_OT_ZNODE => {
                let z = ZnodePhys::decode(&dn.bonus, dn.order).map_err(|e| corrupt(object, e))?;
                Ok(FileAttr {
                    mode: z.mode,
                    uid: z.uid,
                    gid: z.gid,
                    size: z.size,
                    links: z.links,
                    parent: z.parent,
                    gen: z.gen,
                    atime: z.atime,
                    mtime: z.mtime,
                    ctime: z.ctime,
                    crtime: z.crtime,
                    rdev: z.rdev,
                    xattr: z.xattr,
                    flags: z.flags,
                })
            }
            DMU_OT_SA => {
                let a = self.sa_attrs(object)?;
                let need = |v: Option<u64>, name: &str| {
                    v.ok_or_else(|| corrupt(object, format!("no {name} attribute")))
                };
                Ok(FileAttr {
                    mode: need(a.mode, "mode")?,
                    uid: a.uid.unwrap_or(0),
                    gid: a.gid.unwrap_or(0),
                    size: need(a.size, "size")?,
                    links: need(a.links, "links")?,
                    parent: a.parent.unwrap_or(0),
                    gen: a.gen.unwrap_or(0),
                    atime: a.atime.unwrap_or_default(),
                    mtime: a.mtime.unwrap_or_default(),
                    ctime: a.ctime.unwrap_or_default(),
                    crtime: a.crtime.unwrap_or_default(),
                    rdev: a.rdev.unwrap_or(0),
                    xattr: a.xattr.unwrap_or(0),
                    flags: a.flags.unwrap_or(0),
                })
            }
            other => Err(corrupt(
                object,
                format!("bonus type {other} is not a znode"),
            )),
        }
    }

    /// A directory's entries: (name, object, `DT_*` type), in ZAP order.
    pub fn readdir(&self, dir: u64) -> Result<Vec<(Vec<u8>, u64, u8)>, OzfsError> {
        let mut out = Vec::new();
        for entry in self.os.zap_list(dir)? {
            let value = *entry
                .values
                .first()
                .ok_or_else(|| corrupt(dir, "a directory entry without a value"))?;
            let name = match entry.key {
                ZapKey::Name(name) => name,
                other => return Err(corrupt(dir, format!("directory entry key {other}"))),
            };
            let e = DirEntry::decode(value);
            out.push((name, e.object, e.dtype));
        }
        Ok(out)
    }

    /// The object a name in `dir` refers to.
    pub fn lookup(&self, dir: u64, name: &[u8]) -> Result<Option<u64>, OzfsError> {
        Ok(self
            .os
            .zap_lookup_key(dir, &ZapKey::Name(name.to_vec()))?
            .and_then(|e| e.values.first().copied())
            .map(|v| DirEntry::decode(v).object))
    }

    /// Up to `len` bytes of a file from `offset`, never past its size.
    pub fn read(&self, object: u64, offset: u64, len: usize) -> Result<Vec<u8>, OzfsError> {
        let size = self.attr(object)?.size;
        if offset >= size {
            return Ok(Vec::new());
        }
        let len = (len as u64).min(size - offset) as usize;
        let dn = self.os.dnode(object)?;
        self.os.read(&dn, offset, len)
    }

    /// A symlink's target.
    pub fn readlink(&self, object: u64) -> Result<Vec<u8>, OzfsError> {
        let dn = self.os.dnode(object)?;
        if dn.bonustype == DMU_OT_SA {
            let a = self.sa_attrs(object)?;
            if let Some(target) = a.symlink {
                return Ok(target);
            }
            // An SA symlink upgraded from a znode keeps its target in block 0.
        }
        let attr = self.attr(object)?;
        if !attr.is_symlink() {
            return Err(corrupt(object, "not a symbolic link"));
        }
        if attr.size > SYMLINK_MAX_BYTES {
            return Err(corrupt(object, format!("symlink of {} bytes", attr.size)));
        }
        if dn.bonustype == DMU_OT_ZNODE {
            let z = ZnodePhys::decode(&dn.bonus, dn.order).map_err(|e| corrupt(object, e))?;
            if let Some(inline) = z.inline_symlink(&dn.bonus) {
                return Ok(inline.to_vec());
            }
        }
        self.os.read(&dn, 0, attr.size as usize)
    }

    /// A file's extended attributes: the SA ones (ZPL 5, `xattr=sa`) and the files of its
    /// hidden xattr directory, as (name, value).
    pub fn xattrs(&self, object: u64) -> Result<Vec<SaXattr>, OzfsError> {
        let dn = self.os.dnode(object)?;
        let mut out = Vec::new();
        if dn.bonustype == DMU_OT_SA {
            if let Some(sa) = self.sa_attrs(object)?.sa_xattrs {
                out.extend(sa);
            }
        }
        let xattr_dir = self.attr(object)?.xattr;
        if xattr_dir != 0 {
            for (name, file, _) in self.readdir(xattr_dir)? {
                let size = self.attr(file)?.size;
                if size > XATTR_VALUE_MAX_BYTES {
                    return Err(corrupt(file, format!("xattr value of {size} bytes")));
                }
                out.push((name, self.read(file, 0, size as usize)?));
            }
        }
        Ok(out)
    }
}
