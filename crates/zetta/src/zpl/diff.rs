//! `zfs diff` (OpenZFS `dmu_diff.c`, `libzfs_diff.c`): what changed in a filesystem
//! between a snapshot and a later snapshot (or the last commit of the head).
//!
//! Only what changed is visited: the later tree's dnode blocks born after the earlier
//! snapshot's txg name every object whose dnode could differ (copy-on-write rewrites the
//! dnode block of any object whose data changed). Each such object is compared in both
//! trees: absent before → `+`, absent (or unlinked) after → `-`, a new generation at the
//! same number → `-` then `+`, another parent or name → `R`, any other change → `M`.
//! Paths come from each tree's own directories (a znode's parent, then the name that
//! parent's ZAP gives it), relative to the filesystem's root.

use super::dir;
use super::vnops::get;
use super::znode::{is_znode_bonus, FileKind};
use super::{Zfsvfs, ZplError};
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::{ObjectId, Txg};
use crate::zap::{self, ZapValue};
use crate::zio::blkptr::BlockPointer;

use crate::dmu::objset::DNODES_PER_BLOCK;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKind {
    Added,
    Removed,
    Modified,
    Renamed,
}

impl DiffKind {
    /// The column OpenZFS prints.
    pub fn symbol(self) -> char {
        match self {
            DiffKind::Added => '+',
            DiffKind::Removed => '-',
            DiffKind::Modified => 'M',
            DiffKind::Renamed => 'R',
        }
    }
}

/// One line of `zfs diff`: paths relative to the filesystem root ("" is the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffEntry {
    pub kind: DiffKind,
    pub path: String,
    /// The new path of a rename.
    pub new_path: Option<String>,
    pub file_kind: FileKind,
    /// The change time of the znode the line names (`zfs diff -t`): the earlier tree's
    /// for a removal, the later tree's otherwise (OpenZFS prints `zs_ctime` of the same).
    pub ctime: super::Timespec,
}

/// The path of `object` in one tree, or `None` when no directory names it.
pub(super) fn path_of(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    vfs: &Zfsvfs,
    object: u64,
) -> Option<String> {
    let mut parts = Vec::new();
    let mut current = object;
    for _ in 0..4096 {
        if current == vfs.root {
            parts.reverse();
            return Some(parts.iter().map(|p| format!("/{p}")).collect());
        }
        let parent = get(os, ctx, current).ok()?.parent;
        let entries = zap::zap_list_all(os, ctx, ObjectId(parent)).ok()?;
        let name = entries.into_iter().find_map(|e| match e.value {
            ZapValue::U64s(v) if v.first().map(|&w| dir::dirent_object(w)) == Some(current) => {
                Some(String::from_utf8_lossy(&e.name).into_owned())
            }
            _ => None,
        })?;
        parts.push(name);
        current = parent;
    }
    None
}

/// A live ZPL object's znode in a tree (None for free, non-ZPL or unlinked objects).
fn live(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
) -> Option<(super::ZnodePhys, crate::dmu::dnode::DnodePhys)> {
    if !os.object_exists(ctx, ObjectId(object)).ok()? {
        return None;
    }
    let dnode = os.dnode(ctx, ObjectId(object)).ok()?;
    if !is_znode_bonus(dnode.bonus_type) {
        return None;
    }
    let znode = get(os, ctx, object).ok()?;
    (znode.links > 0).then_some((znode, dnode))
}

/// The changes from `before` (a snapshot committed at `before_txg`) to `after`, whose
/// committed root is `after_bp`.
pub fn diff(
    before: &mut ObjectSet,
    after: &mut ObjectSet,
    after_bp: &BlockPointer,
    before_txg: Txg,
    ctx: &IoCtx<'_>,
) -> Result<Vec<DiffEntry>, ZplError> {
    let vfs_before = Zfsvfs::open(before, ctx)?;
    let vfs_after = Zfsvfs::open(after, ctx)?;
    let mut changed_blocks = std::collections::BTreeSet::new();
    ObjectSet::walk_blocks_born_after(
        ctx,
        after.id,
        after_bp,
        before_txg,
        &mut |_, bookmark| {
            if bookmark.object == 0 && bookmark.level == 0 && bookmark.blkid != u64::MAX {
                changed_blocks.insert(bookmark.blkid);
            }
        },
        false,
    )?;
    let mut out = Vec::new();
    for blkid in changed_blocks {
        for object in blkid * DNODES_PER_BLOCK..(blkid + 1) * DNODES_PER_BLOCK {
            if object == 0 {
                continue;
            }
            let old = live(before, ctx, object);
            let new = live(after, ctx, object);
            let kind_of = |z: &super::ZnodePhys| z.kind().unwrap_or(FileKind::Regular);
            match (old, new) {
                (None, None) => {}
                (None, Some((z, _))) => {
                    if let Some(path) = path_of(after, ctx, &vfs_after, object) {
                        out.push(DiffEntry {
                            kind: DiffKind::Added,
                            path,
                            new_path: None,
                            file_kind: kind_of(&z),
                            ctime: z.ctime,
                        });
                    }
                }
                (Some((z, _)), None) => {
                    if let Some(path) = path_of(before, ctx, &vfs_before, object) {
                        out.push(DiffEntry {
                            kind: DiffKind::Removed,
                            path,
                            new_path: None,
                            file_kind: kind_of(&z),
                            ctime: z.ctime,
                        });
                    }
                }
                (Some((zo, dold)), Some((zn, dnew))) => {
                    let old_path = path_of(before, ctx, &vfs_before, object);
                    let new_path = path_of(after, ctx, &vfs_after, object);
                    if zo.gen != zn.gen {
                        if let Some(path) = old_path {
                            out.push(DiffEntry {
                                kind: DiffKind::Removed,
                                path,
                                new_path: None,
                                file_kind: kind_of(&zo),
                                ctime: zo.ctime,
                            });
                        }
                        if let Some(path) = new_path {
                            out.push(DiffEntry {
                                kind: DiffKind::Added,
                                path,
                                new_path: None,
                                file_kind: kind_of(&zn),
                                ctime: zn.ctime,
                            });
                        }
                    } else if old_path != new_path {
                        if let (Some(path), Some(to)) = (old_path, new_path) {
                            out.push(DiffEntry {
                                kind: DiffKind::Renamed,
                                path,
                                new_path: Some(to),
                                file_kind: kind_of(&zn),
                                ctime: zn.ctime,
                            });
                        }
                    } else if dold != dnew {
                        if let Some(path) = new_path {
                            out.push(DiffEntry {
                                kind: DiffKind::Modified,
                                path,
                                new_path: None,
                                file_kind: kind_of(&zn),
                                ctime: zn.ctime,
                            });
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}
