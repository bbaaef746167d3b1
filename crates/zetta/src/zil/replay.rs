//! Replaying a log at import (OpenZFS `zil_replay`, `zfs_replay.c`): each record's change is
//! made again, in order, through the same ZPL operations a mount uses, on the state of the
//! last committed txg. Creations get the object numbers they had (later records name them),
//! and the znode the original creation produced (generation number included).

use super::chain::{self, BlockRef};
use super::record::{LogRecord, Lr};
use super::ZilError;
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::Txg;
use crate::zpl::znode::FileKind;
use crate::zpl::{vnops, Creds, Zfsvfs, ZplError};

/// What a replay found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    pub blocks: usize,
    pub records: usize,
    /// Records skipped because their txg had already committed.
    pub skipped: usize,
    /// The record replay stopped at, and why (the rest of the log is not applied).
    pub error: Option<String>,
}

/// Every record of the chain that `head` starts, in order; the number of blocks read.
pub fn read_chain(
    root: &crate::vdev::Vdev,
    head: &BlockRef,
) -> Result<(Vec<LogRecord>, usize), ZilError> {
    let mut records = Vec::new();
    let mut blocks = 0;
    let mut at = Some(*head);
    while let Some(r) = at {
        let Some(block) = chain::read_block(root, &r)? else {
            break;
        };
        blocks += 1;
        records.extend(block.records);
        // A pointer must continue this chain; anything else ends it.
        at = block
            .next
            .filter(|n| n.guid == r.guid && n.seq == r.seq + 1);
    }
    Ok((records, blocks))
}

fn apply(vfs: &Zfsvfs, os: &mut ObjectSet, ctx: &IoCtx<'_>, lr: Lr) -> Result<(), ZplError> {
    match lr {
        Lr::Create {
            dir,
            object,
            name,
            znode,
            target,
        } => {
            let kind = znode.kind().ok_or_else(|| {
                ZplError::Io(format!("log creates object {object} of no known type"))
            })?;
            let creds = Creds {
                uid: znode.uid as u32,
                gid: znode.gid as u32,
            };
            os.set_next_object_hint(object);
            let created = if kind == FileKind::Symlink {
                vfs.symlink(os, ctx, dir, &name, &target, creds, znode.crtime)?
            } else {
                let perm = (znode.mode & 0o7777) as u32;
                vfs.create(
                    os,
                    ctx,
                    dir,
                    &name,
                    kind,
                    perm,
                    creds,
                    znode.rdev,
                    znode.crtime,
                )?
            };
            if created.object != object {
                return Err(ZplError::Io(format!(
                    "log creates object {object}, replay got {}",
                    created.object
                )));
            }
            vnops::put(os, ctx, object, &znode)
        }
        Lr::Link {
            object,
            dir,
            name,
            now,
        } => vfs.link(os, ctx, object, dir, &name, now).map(|_| ()),
        Lr::Remove {
            dir,
            name,
            is_dir,
            now,
        } => {
            if is_dir {
                vfs.rmdir(os, ctx, dir, &name, now).map(|_| ())
            } else {
                vfs.unlink(os, ctx, dir, &name, now).map(|_| ())
            }
        }
        Lr::Rename {
            sdir,
            sname,
            ddir,
            dname,
            noreplace,
            exchange,
            now,
        } => vfs
            .rename(
                os, ctx, sdir, &sname, ddir, &dname, noreplace, exchange, now,
            )
            .map(|_| ()),
        Lr::Setattr {
            object,
            change,
            now,
        } => vfs.setattr(os, ctx, object, &change, now).map(|_| ()),
        Lr::Write {
            object,
            offset,
            data,
            now,
            ..
        } => vfs.write(os, ctx, object, offset, &data, now).map(|_| ()),
        Lr::Punch {
            object,
            offset,
            len,
            now,
        } => vfs.punch_hole(os, ctx, object, offset, len, now),
        Lr::SetXattr {
            object,
            name,
            value,
            flags,
            now,
        } => vfs.setxattr(os, ctx, object, &name, &value, flags, now),
        Lr::RemoveXattr { object, name, now } => vfs.removexattr(os, ctx, object, &name, now),
        Lr::Reclaim { object } => vfs.reclaim(os, ctx, object),
    }
}

fn kind_name(lr: &Lr) -> &'static str {
    match lr {
        Lr::Create { .. } => "create",
        Lr::Link { .. } => "link",
        Lr::Remove { .. } => "remove",
        Lr::Rename { .. } => "rename",
        Lr::Setattr { .. } => "setattr",
        Lr::Write { .. } => "write",
        Lr::Punch { .. } => "punch",
        Lr::SetXattr { .. } => "setxattr",
        Lr::RemoveXattr { .. } => "removexattr",
        Lr::Reclaim { .. } => "reclaim",
    }
}

/// Replays the log of `os` (a head dataset just imported; `last_synced` is the committed
/// txg). The caller commits the txg afterwards, which retires the chain.
pub fn replay(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    last_synced: Txg,
) -> Result<ReplayReport, ZilError> {
    let mut report = ReplayReport::default();
    let Some(head) = chain::decode_header(&os.zil_header) else {
        return Ok(report);
    };
    let (records, blocks) = read_chain(ctx.root, &head)?;
    report.blocks = blocks;
    if records.is_empty() {
        return Ok(report);
    }
    // The chain is retired at the next commit even if replay stops early.
    os.zil.mark_chain_written();
    let vfs = Zfsvfs::open(os, ctx).map_err(|e| ZilError::Io(e.to_string()))?;
    for (index, record) in records.into_iter().enumerate() {
        if record.txg <= last_synced {
            report.skipped += 1;
            continue;
        }
        let kind = kind_name(&record.lr);
        if let Err(e) = apply(&vfs, os, ctx, record.lr) {
            report.error = Some(format!("record {index} ({kind}): {e}"));
            break;
        }
        report.records += 1;
    }
    Ok(report)
}
