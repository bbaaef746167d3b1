//! OpenZFS's ZFS POSIX layer structures as they lie in a real filesystem's object set
//! (OpenZFS `include/sys/zfs_znode.h`, `zfs_sa.h`, `zfs_acl.h`, `sa_impl.h`,
//! `module/zfs/sa.c`, `zfs_sa.c`).
//!
//! A ZPL object set keeps its layout in its master node (object 1, a ZAP: `znode`'s
//! `MASTER_*` keys). A file's attributes live in its dnode's bonus in one of two forms:
//!
//! - ZPL versions 1-4: a `znode_phys_t` (bonus type `DMU_OT_ZNODE`, 17), fixed fields and an
//!   embedded ACL, with a short symlink's target after it (`znode`);
//! - ZPL version 5 (pools of SPA version >= 24): system attributes (bonus type `DMU_OT_SA`,
//!   44): a header naming a layout, then the attributes that layout lists, sized by the
//!   registry; what does not fit spills into a spill block (`sa`).
//!
//! Decoders take bytes (a bonus, a spill block's logical bytes, a ZAP's decoded entries) and
//! the byte order their block recorded; none panics on any input. Zetta's own ZPL
//! (`crate::zpl::znode`) is untouched. Byte diagrams: docs/ONDISK.md, "OpenZFS DSL and ZPL".

pub mod sa;
pub mod znode;

pub use crate::dsl::openzfs::ZapValue;
