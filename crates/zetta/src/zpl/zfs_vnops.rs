//! The POSIX write policy (OpenZFS `zfs_vnops.c` and `zfs_vnops_os.c` around their
//! `dmu_tx_*` calls): every operation of a mounted filesystem as a whole — refused on a
//! read-only mount, admitted (holds declared, space checked), the change made and logged
//! (`vnops`, `xattr`: the body between `dmu_tx_assign` and `dmu_tx_commit`), charged to the
//! txg's dirty data, and made durable per the `sync` property.
//!
//! Theory. An operation is one transaction: `tx_assign` declares what the change will
//! take (`Holds`, OpenZFS's `dmu_tx_hold_*`) and admits it against the pool and the
//! dataset's limits before anything is dirtied, so a refused operation changes nothing:
//! an ordinary change keeps out of the pool's slop (ENOSPC, `NoSpace`) and past no quota
//! or refquota of the filesystem or an ancestor (EDQUOT, `QuotaExceeded`; ENOSPC when it
//! would take space reserved for another dataset); a change that frees space (unlink,
//! rmdir, a shrinking truncate, a hole punch: OpenZFS's net-free transactions) may use
//! half the slop and ignores quotas, so a full or over-quota filesystem can always be
//! emptied. When a refusal may come from the open txg's own pending changes (overwrites
//! counted as new space, frees still deferred), the txg commits and the admission is asked
//! again, as `dmu_tx_assign` waits for a sync on ERESTART. Only then the change runs in
//! the open txg (which makes it atomic with respect to a power cut), and `tx_commit`
//! charges the txg what it dirtied (a commit starts at the dirty-data limit) and, under
//! `sync=always` or for an `O_SYNC`/`O_DSYNC` write under `sync=standard`, commits the
//! dataset's intent log (`zil_commit`). Writes and fsyncs are counted in the dataset's
//! `dataset_kstats` (relaxed atomics) for `zetta advise`. Long frees run in batches, each its own
//! transaction, committed between batches (`dmu_free_long_range`), so no txg holds the
//! indirect blocks of a whole huge file.
//!
//! Each operation is a `dmu::Tx`: `tx_assign` creates it, declares its holds with
//! OpenZFS's estimates (`dmu_tx_hold_zap`/`_bonus` for a name and a znode, `_write` for
//! file data, `dmu_tx_mark_netfree` for a free), admits it and assigns it to the open txg
//! (`Tx::assign`, `DMU_TX_NOTHROTTLE`: the front end ran the write throttle,
//! `dmu::tx::dmu_tx_wait`, before it took the pool lock, as OpenZFS's VFS operations wait
//! before they retry); `tx_commit` is `dmu_tx_commit`. A change that fails after the
//! assignment is committed all the same (what it dirtied belongs to the txg), as
//! OpenZFS's `zfs_create` commits its tx on an error past `dmu_tx_assign`. The pool held
//! by `&mut Spa` (the caller's pool lock) keeps the txg from moving between the two.
//! Lock order: the pool (the caller's), then the dataset's object set (inside
//! `with_zpl_object`).

use super::vnops::SetAttr;
use super::{Attr, Creds, FileKind, Timespec, Zfsvfs, ZplError};
use crate::dmu::tx::Tx;
use crate::dmu::{IoCtx, ObjectSet};
use crate::spa::{Spa, SpaError};

/// What a change that writes no file data (a name, a znode, an xattr) must leave free in
/// the pool to be admitted: a few dnode and ZAP leaf blocks, the znodes and the intent-log
/// record, with room to spare for their indirect blocks and the space maps the commit
/// rewrites (OpenZFS estimates such holds generously for the same reason).
pub const METADATA_HEADROOM_BYTES: u64 = 64 << 10;
/// What such a change is charged against quotas and the txg's dirty data: one dnode
/// block's worth, the smallest block a change dirties.
pub const METADATA_DIRTY_BYTES: u64 = 4096;
/// Records a long truncate or hole punch frees per transaction: 16 indirect blocks' worth
/// (128 KiB indirect blocks hold 1024 block pointers each).
pub const FREE_BATCH_BLOCKS: usize = 16 * 1024;

/// `sync` property values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    Standard,
    Always,
    Disabled,
}

/// What a transaction declares before it is assigned (OpenZFS `dmu_tx_hold_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// Names, znodes, xattrs: `METADATA_HEADROOM_BYTES` of pool room,
    /// `METADATA_DIRTY_BYTES` against quotas.
    Metadata,
    /// `bytes` of file data at `offset` of `object`, charged once per copy (`copies`), as
    /// USED counts them.
    Write {
        object: u64,
        offset: u64,
        bytes: u64,
    },
    /// A change that frees space (`dmu_tx_mark_netfree`).
    Free,
}

/// `fallocate` modes the filesystem supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallocate {
    /// Mode 0: the range must fit; the size grows to cover it.
    Allocate,
    /// `FALLOC_FL_KEEP_SIZE`: the range must fit; the size stays.
    KeepSize,
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`: the range reads as zeros, its whole
    /// records are freed.
    PunchHole,
}

/// One batch of a long free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeRange {
    /// Everything of `object` past `size` (a shrinking truncate).
    Tail { object: u64, size: u64 },
    /// The whole records of `object` inside [offset, offset + len).
    Hole { object: u64, offset: u64, len: u64 },
}

/// A mounted filesystem as its write policy sees it (OpenZFS `zfsvfs_t`): the head
/// dataset (MOS object), its layout, and the properties that shape its writes as they are
/// now (`zfs set sync|readonly` change a running mount, so callers build this per request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZfsMount {
    pub dataset: u64,
    pub vfs: Zfsvfs,
    pub sync: SyncMode,
    pub readonly: bool,
}

/// A refused admission as the POSIX layer reports it; anything else on the way is an I/O
/// failure of the pool (EIO), never a Rust error text.
fn refused(e: SpaError) -> ZplError {
    match e {
        SpaError::NoSpace => ZplError::NoSpace,
        SpaError::QuotaExceeded => ZplError::QuotaExceeded,
        other => commit_failed(other),
    }
}

/// A commit that failed: the pool's devices are failing.
fn commit_failed(e: SpaError) -> ZplError {
    ZplError::Io(format!("commit failed: {e}"))
}

impl ZfsMount {
    /// `dmu_tx_create`, the holds and `dmu_tx_assign`: refuses a read-only mount, declares
    /// `holds` on a new `dmu::Tx`, admits them (see the theory paragraph; the open txg
    /// commits and the admission is asked again while a refusal may be its own pending
    /// changes'), and assigns the transaction to the open txg.
    pub fn tx_assign(&self, spa: &mut Spa, holds: Holds) -> Result<Tx, ZplError> {
        if self.readonly {
            return Err(ZplError::ReadOnly);
        }
        let dataset = self.dataset;
        let mut tx = Tx::create(dataset);
        match holds {
            Holds::Free => {
                tx.hold_zap(None);
                tx.hold_bonus(None);
                tx.mark_netfree();
                spa.admit_settled(|spa| spa.check_space_to_free())
                    .map_err(refused)?;
            }
            Holds::Metadata => {
                tx.hold_zap(None);
                tx.hold_bonus(None);
                spa.admit_settled(|spa| spa.check_space(METADATA_HEADROOM_BYTES, 1))
                    .map_err(refused)?;
                spa.admit_settled(|spa| spa.dsl_tempreserve(dataset, METADATA_DIRTY_BYTES))
                    .map_err(refused)?;
            }
            Holds::Write {
                object,
                offset,
                bytes,
            } => {
                tx.hold_write(Some(object), offset, bytes);
                tx.hold_bonus(Some(object));
                let copies = spa
                    .with_dataset_object(dataset, |os, _| Ok(os.policy.data_props.copies))
                    .map_err(commit_failed)?;
                spa.admit_settled(|spa| spa.check_space(bytes, copies))
                    .map_err(refused)?;
                let charged = bytes.saturating_mul(u64::from(copies.max(1)));
                spa.admit_settled(|spa| spa.dsl_tempreserve(dataset, charged))
                    .map_err(refused)?;
            }
        }
        tx.assign(spa).map_err(refused)?;
        Ok(tx)
    }

    /// `dmu_tx_commit`: charges the txg `dirtied` bytes (the sync thread is woken at the
    /// sync threshold) and, when `durable`, commits the dataset's intent log.
    pub fn tx_commit(
        &self,
        spa: &mut Spa,
        tx: Tx,
        dirtied: u64,
        durable: bool,
    ) -> Result<(), ZplError> {
        tx.commit(spa, dirtied).map_err(commit_failed)?;
        if durable {
            spa.zil_commit(self.dataset).map_err(commit_failed)?;
        }
        Ok(())
    }

    /// Runs the change `work` in the open txg of the mount's dataset.
    fn change<T>(
        &self,
        spa: &mut Spa,
        work: impl FnOnce(&Zfsvfs, &mut ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, ZplError> {
        spa.with_zpl_object(self.dataset, &self.vfs, work)
    }

    /// `zfs_acl_ids_overquota` / `zfs_write`'s `zfs_id_overquota` checks (`zfs_quota`):
    /// EDQUOT when the owner, group or project is at or over a user/group/project quota
    /// as of the last synced txg. `object`: an existing file, whose owners its bonus
    /// says; `None`: a new file of `creds`.
    fn refuse_overquota(
        &self,
        spa: &mut Spa,
        object: Option<u64>,
        creds: Creds,
    ) -> Result<(), ZplError> {
        let over = self.change(spa, |_, os, ctx| {
            let info = match object {
                Some(object) => {
                    let id = crate::types::ObjectId(object);
                    let bonus = os.bonus(ctx, id)?;
                    crate::dmu::objset::file_info(os.bonus_type(ctx, id)?, &bonus)
                }
                None => Some(crate::dmu::objset::FileInfo {
                    user: u64::from(creds.uid),
                    group: u64::from(creds.gid),
                    project: crate::dmu::objset::ZFS_DEFAULT_PROJID,
                }),
            };
            Ok(info.is_some_and(|info| {
                super::zfs_quota::owner_overquota(
                    os,
                    ctx,
                    (info.user, info.group, info.project),
                    object.is_none(),
                )
            }))
        })?;
        if over {
            return Err(ZplError::QuotaExceeded);
        }
        Ok(())
    }

    /// One whole transaction that writes no file data: assign, change, commit.
    fn metadata_tx<T>(
        &self,
        spa: &mut Spa,
        holds: Holds,
        work: impl FnOnce(&Zfsvfs, &mut ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, ZplError> {
        let tx = self.tx_assign(spa, holds)?;
        let result = match self.change(spa, work) {
            Ok(result) => result,
            Err(e) => {
                self.tx_commit(spa, tx, 0, false)?;
                return Err(e);
            }
        };
        self.tx_commit(spa, tx, METADATA_DIRTY_BYTES, self.sync == SyncMode::Always)?;
        Ok(result)
    }

    /// `zfs_create`/`zfs_mkdir` (and mknod): a file, directory, device node, fifo or socket.
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        &self,
        spa: &mut Spa,
        dir: u64,
        name: &[u8],
        kind: FileKind,
        perm: u32,
        creds: Creds,
        rdev: u64,
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        self.refuse_overquota(spa, None, creds)?;
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            vfs.create(os, ctx, dir, name, kind, perm, creds, rdev, now)
        })
    }

    /// `zfs_symlink`.
    pub fn symlink(
        &self,
        spa: &mut Spa,
        dir: u64,
        name: &[u8],
        target: &[u8],
        creds: Creds,
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        self.refuse_overquota(spa, None, creds)?;
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            vfs.symlink(os, ctx, dir, name, target, creds, now)
        })
    }

    /// `zfs_link`: a new name for `object` in `dir`.
    pub fn link(
        &self,
        spa: &mut Spa,
        object: u64,
        dir: u64,
        name: &[u8],
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            vfs.link(os, ctx, object, dir, name, now)
        })
    }

    /// `zfs_remove`: a net-free change. The file is freed in the same transaction when its
    /// last link went and `in_use` says nobody holds it; otherwise it waits on the delete
    /// queue for its last close (`inactive`), and its object number is returned: the caller
    /// may free its data at once when no handle is open (OpenZFS's `may_delete_now`).
    pub fn remove(
        &self,
        spa: &mut Spa,
        dir: u64,
        name: &[u8],
        now: Timespec,
        in_use: &dyn Fn(u64) -> bool,
    ) -> Result<Option<u64>, ZplError> {
        self.metadata_tx(spa, Holds::Free, |vfs, os, ctx| {
            let gone = vfs.unlink(os, ctx, dir, name, now)?;
            if !gone.orphaned {
                return Ok(None);
            }
            if !in_use(gone.object) {
                vfs.reclaim(os, ctx, gone.object)?;
                return Ok(None);
            }
            Ok(Some(gone.object))
        })
    }

    /// `zfs_rmdir`: a net-free change, the directory freed unless `in_use`.
    pub fn rmdir(
        &self,
        spa: &mut Spa,
        dir: u64,
        name: &[u8],
        now: Timespec,
        in_use: &dyn Fn(u64) -> bool,
    ) -> Result<(), ZplError> {
        self.metadata_tx(spa, Holds::Free, |vfs, os, ctx| {
            let gone = vfs.rmdir(os, ctx, dir, name, now)?;
            if !in_use(gone.object) {
                vfs.reclaim(os, ctx, gone.object)?;
            }
            Ok(())
        })
    }

    /// `zfs_rename`; a replaced target whose last link went is freed unless `in_use`.
    #[allow(clippy::too_many_arguments)]
    pub fn rename(
        &self,
        spa: &mut Spa,
        sdir: u64,
        sname: &[u8],
        ddir: u64,
        dname: &[u8],
        noreplace: bool,
        exchange: bool,
        now: Timespec,
        in_use: &dyn Fn(u64) -> bool,
    ) -> Result<(), ZplError> {
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            let replaced =
                vfs.rename(os, ctx, sdir, sname, ddir, dname, noreplace, exchange, now)?;
            if let Some(gone) = replaced.filter(|g| g.orphaned && !in_use(g.object)) {
                vfs.reclaim(os, ctx, gone.object)?;
            }
            Ok(())
        })
    }

    /// `zfs_setattr`. A shrinking size frees the tail first, batch by batch (`free_step`),
    /// and is a net-free change; a growing size allocates nothing yet is an ordinary
    /// change (ENOSPC on a full pool, EDQUOT past a quota, as `zfs_extend`).
    pub fn setattr(
        &self,
        spa: &mut Spa,
        object: u64,
        change: &SetAttr,
        now: Timespec,
    ) -> Result<Attr, ZplError> {
        let mut holds = Holds::Metadata;
        if let Some(size) = change.size {
            if self.readonly {
                return Err(ZplError::ReadOnly);
            }
            let current = self.change(spa, |vfs, os, ctx| vfs.getattr(os, ctx, object))?;
            if size <= current.znode.size {
                while !self.free_step(spa, FreeRange::Tail { object, size })? {}
                holds = Holds::Free;
            }
        }
        self.metadata_tx(spa, holds, |vfs, os, ctx| {
            vfs.setattr(os, ctx, object, change, now)
        })
    }

    /// One batch of a long free, its own net-free transaction; returns whether nothing is
    /// left to free. When something is, the txg commits before the next batch.
    pub fn free_step(&self, spa: &mut Spa, range: FreeRange) -> Result<bool, ZplError> {
        if let FreeRange::Tail { object, size } = range {
            // A truncate that frees nothing (a grow, a special file) takes no transaction.
            let attr = self.change(spa, |vfs, os, ctx| vfs.getattr(os, ctx, object))?;
            if attr.kind() != FileKind::Regular || size >= attr.znode.size {
                return Ok(true);
            }
        }
        let done = self.metadata_tx(spa, Holds::Free, |vfs, os, ctx| match range {
            FreeRange::Tail { object, size } => {
                vfs.truncate_batch(os, ctx, object, size, FREE_BATCH_BLOCKS)
            }
            FreeRange::Hole {
                object,
                offset,
                len,
            } => vfs.punch_batch(os, ctx, object, offset, len, FREE_BATCH_BLOCKS),
        })?;
        if !done {
            spa.sync().map_err(commit_failed)?;
        }
        Ok(done)
    }

    /// `zfs_write`: `data` at `offset`, admitted for every copy the dataset keeps, the txg
    /// charged what it now holds in memory (a small write into a clean record dirties the
    /// whole record). `o_sync`: the file was opened `O_SYNC`/`O_DSYNC`, which makes the
    /// write durable under `sync=standard`.
    pub fn write(
        &self,
        spa: &mut Spa,
        object: u64,
        offset: u64,
        data: &[u8],
        now: Timespec,
        o_sync: bool,
    ) -> Result<(), ZplError> {
        let bytes = data.len() as u64;
        if self.readonly {
            return Err(ZplError::ReadOnly);
        }
        self.refuse_overquota(spa, Some(object), Creds::default())?;
        let tx = self.tx_assign(
            spa,
            Holds::Write {
                object,
                offset,
                bytes,
            },
        )?;
        let dirtied = match self.change(spa, |vfs, os, ctx| {
            let before = os.dirty_data_bytes;
            vfs.write(os, ctx, object, offset, data, now)?;
            Ok(os.dirty_data_bytes.saturating_sub(before))
        }) {
            Ok(dirtied) => dirtied,
            Err(e) => {
                self.tx_commit(spa, tx, 0, false)?;
                return Err(e);
            }
        };
        let durable = match self.sync {
            SyncMode::Always => true,
            SyncMode::Standard => o_sync,
            SyncMode::Disabled => false,
        };
        spa.dataset_kstats
            .get_or_create(self.dataset)
            .record_write(object, offset, bytes, durable);
        self.tx_commit(spa, tx, dirtied, durable)
    }

    /// `zpl_fallocate`. Allocate and KeepSize refuse with ENOSPC a range the filesystem
    /// could not hold beyond what the file already occupies (copy-on-write cannot promise
    /// blocks ahead, but like OpenZFS it refuses a reservation larger than AVAIL, a quota's
    /// included); Allocate then grows the size. PunchHole frees in batches.
    pub fn fallocate(
        &self,
        spa: &mut Spa,
        object: u64,
        offset: u64,
        len: u64,
        mode: Fallocate,
        now: Timespec,
    ) -> Result<(), ZplError> {
        if self.readonly {
            return Err(ZplError::ReadOnly);
        }
        if mode == Fallocate::PunchHole {
            while !self.free_step(
                spa,
                FreeRange::Hole {
                    object,
                    offset,
                    len,
                },
            )? {}
            return self.metadata_tx(spa, Holds::Free, |vfs, os, ctx| {
                vfs.punch_hole(os, ctx, object, offset, len, now)
            });
        }
        let held = self.change(spa, |vfs, os, ctx| {
            Ok(vfs.getattr(os, ctx, object)?.used_bytes)
        })?;
        let needed = len.saturating_sub(held);
        let dataset = self.dataset;
        spa.admit_settled(|spa| {
            if needed > spa.dsl_space_available(dataset)? {
                Err(SpaError::NoSpace)
            } else {
                Ok(())
            }
        })
        .map_err(|e| match e {
            SpaError::QuotaExceeded => ZplError::NoSpace,
            other => refused(other),
        })?;
        if mode == Fallocate::KeepSize {
            return Ok(());
        }
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            let size = vfs.getattr(os, ctx, object)?.znode.size;
            let end = offset.saturating_add(len);
            let change = SetAttr {
                size: (end > size).then_some(end),
                ..SetAttr::default()
            };
            vfs.setattr(os, ctx, object, &change, now).map(|_| ())
        })
    }

    /// `zfs_setxattr`.
    pub fn setxattr(
        &self,
        spa: &mut Spa,
        object: u64,
        name: &[u8],
        value: &[u8],
        flags: u32,
        now: Timespec,
    ) -> Result<(), ZplError> {
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            vfs.setxattr(os, ctx, object, name, value, flags, now)
        })
    }

    /// `zfs_removexattr`.
    pub fn removexattr(
        &self,
        spa: &mut Spa,
        object: u64,
        name: &[u8],
        now: Timespec,
    ) -> Result<(), ZplError> {
        self.metadata_tx(spa, Holds::Metadata, |vfs, os, ctx| {
            vfs.removexattr(os, ctx, object, name, now)
        })
    }

    /// `zfs_fsync`: everything the dataset changed becomes durable through its intent log
    /// (a txg commit when it has none yet); nothing under `sync=disabled`.
    pub fn fsync(&self, spa: &mut Spa) -> Result<(), ZplError> {
        if self.sync == SyncMode::Disabled {
            return Ok(());
        }
        spa.dataset_kstats
            .get_or_create(self.dataset)
            .record_fsync();
        spa.zil_commit(self.dataset).map_err(commit_failed)?;
        Ok(())
    }
}
