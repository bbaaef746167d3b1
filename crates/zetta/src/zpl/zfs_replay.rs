//! Replaying the ZPL's log records (OpenZFS `zfs_replay.c`): the intent log (`zil::replay`)
//! hands over each record of a txg that did not commit, and its change is made again, in
//! order, through the same ZPL operations a mount uses, on the state of the last committed
//! txg. Creations get the object numbers they had (later records name them), and the znode
//! the original creation produced (generation number included). The pool replays every
//! dataset's log at import (OpenZFS replays at mount; a userspace pool has no mount without
//! its daemon, so import is the one moment nothing else runs).

use super::zfs_log::{LogRecord, Lr};
use super::znode::FileKind;
use super::{vnops, Creds, Zfsvfs, ZplError};
use crate::dmu::{IoCtx, ObjectSet};
use crate::spa::{Spa, SpaError};
use crate::types::Txg;
use crate::zil::{self, ReplayReport, ZilError};

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
    let mut vfs: Option<Zfsvfs> = None;
    let mut apply_record = |os: &mut ObjectSet, ctx: &IoCtx<'_>, bytes: &[u8]| {
        let (record, _) = LogRecord::decode(bytes).map_err(|e| format!("(damaged): {e}"))?;
        let kind = kind_name(&record.lr);
        let vfs = match vfs {
            Some(vfs) => vfs,
            None => *vfs.insert(Zfsvfs::open(os, ctx).map_err(|e| format!("({kind}): {e}"))?),
        };
        apply(&vfs, os, ctx, record.lr).map_err(|e| format!("({kind}): {e}"))
    };
    zil::replay::replay(os, ctx, last_synced, &mut apply_record)
}

impl Spa {
    /// Replays the log of every head dataset that has one, then commits (which retires the
    /// logs). Returns what each replay did, by dataset name.
    pub fn zil_replay_all(&mut self) -> Result<Vec<(String, ReplayReport)>, SpaError> {
        let last_synced = Txg(self.open_txg.0.saturating_sub(1));
        let mut reports = Vec::new();
        for name in self.dataset_names()? {
            let Some(dataset) = self.lookup_dataset(&name)? else {
                continue;
            };
            if dataset != self.dp.directory.root_dataset {
                self.open_dataset(dataset)?;
            }
            let ctx = io_ctx!(self);
            let os = if dataset == self.dp.directory.root_dataset {
                &mut self.dp.root_dataset
            } else {
                match self.dp.datasets.get_mut(&dataset) {
                    Some(head) => &mut head.objset,
                    None => continue,
                }
            };
            if zil::chain::decode_header(&os.zil_header).is_none() {
                continue;
            }
            // A log that cannot be read is reported, not fatal: the pool imports at its
            // last committed txg either way.
            let replayed = if os.os_type == crate::dmu::ObjsetType::Volume {
                crate::zvol::replay(os, &ctx, last_synced)
            } else {
                replay(os, &ctx, last_synced)
            };
            let report = replayed.unwrap_or_else(|e| {
                os.zil.mark_chain_written();
                ReplayReport {
                    error: Some(e.to_string()),
                    ..ReplayReport::default()
                }
            });
            if report.blocks > 0 || report.error.is_some() {
                reports.push((name, report));
            }
        }
        if !reports.is_empty() {
            self.sync()?;
        }
        Ok(reports)
    }
}
