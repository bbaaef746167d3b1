//! Space accounting of the dataset layer (OpenZFS `dsl_dir_diduse_space`,
//! `dsl_dir_space_available`, `dsl_dir_tempreserve_space`, the accounting halves of
//! `dsl_dataset_block_born`/`_kill`, `dsl_dir_set_reservation`,
//! `dsl_dataset_set_refreservation`).
//!
//! Theory. Every DSL dir keeps its USED and where it comes from (`used_breakdown`):
//!
//! ```text
//! USED(D) = HEAD + SNAP + REFRSRV + CHILD + CHILD_RSRV        (the identity zfs list shows)
//! HEAD      allocated bytes of the head's blocks born after D's origin txg
//! SNAP      bytes of blocks only D's snapshots hold, born after D's origin txg
//! REFRSRV   max(0, refreservation - unique bytes of the head)
//! CHILD     sum of the children's USED
//! CHILD_RSRV  sum over children of max(0, reservation - USED)
//! ```
//! A clone's dir is charged only for what it writes: blocks born at or before its origin
//! belong to the origin's dir (and move with the origin snapshot when it is promoted). The
//! dead lists hold released blocks of every age, and each use filters them by the dir's
//! origin txg; so no dead list is ever rewritten by a promote.
//!
//! Every change lands in one dir and is carried up through its ancestors in the same txg
//! (`diduse_transfer`): a parent sees `max(USED, reservation)` of each child, so the part of
//! a change that stays inside a child's reservation reaches no further. The compressed and
//! uncompressed sums (`compressratio`, `logicalused`) ride along. A head dataset also keeps
//! REFER, its compressed and logical twins, and its unique bytes (born since its newest
//! snapshot). A commit (`head_synced`) applies what each object set gave birth to, freed,
//! and handed to its dead list; snapshot, destroy, rollback, clone, rename, promote and
//! receive apply their own changes in the txg they make them.
//!
//! What these figures allow — AVAIL, and which writes and limits fit — is `space_avail`.

use super::phys::{DslDatasetPhys, DslDirPhys, UsedKind, USED_KIND_COUNT};
pub use super::space_avail::SpaceState;
use super::NESTING_MAX;
use crate::dmu::{BlockSpace, DmuError, IoCtx, ObjectSet};
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use crate::zio::blkptr::BlockPointer;

/// A signed change of a dir's space figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpaceDelta {
    pub used: i64,
    pub compressed: i64,
    pub uncompressed: i64,
}

pub(crate) fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

impl SpaceDelta {
    pub fn gained(space: &BlockSpace) -> SpaceDelta {
        SpaceDelta {
            used: signed(space.allocated_bytes),
            compressed: signed(space.physical_bytes),
            uncompressed: signed(space.logical_bytes),
        }
    }

    pub fn lost(space: &BlockSpace) -> SpaceDelta {
        let gained = SpaceDelta::gained(space);
        SpaceDelta {
            used: -gained.used,
            compressed: -gained.compressed,
            uncompressed: -gained.uncompressed,
        }
    }

    /// A change of USED alone (reservations).
    pub fn used_only(used: i64) -> SpaceDelta {
        SpaceDelta {
            used,
            ..SpaceDelta::default()
        }
    }

    pub fn plus(self, other: SpaceDelta) -> SpaceDelta {
        SpaceDelta {
            used: self.used.saturating_add(other.used),
            compressed: self.compressed.saturating_add(other.compressed),
            uncompressed: self.uncompressed.saturating_add(other.uncompressed),
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == SpaceDelta::default()
    }
}

/// `value + delta`, kept within u64 (a figure driven below zero means an accounting bug
/// or damaged metadata; it stops at zero rather than wrapping).
pub(crate) fn apply(value: u64, delta: i64) -> u64 {
    if delta >= 0 {
        value.saturating_add(delta.unsigned_abs())
    } else {
        value.saturating_sub(delta.unsigned_abs())
    }
}

/// How much a parent's USED changes when a child's goes from `used` by `delta`: the parent
/// sees `max(used, reserved)` (OpenZFS `parent_delta`).
pub(super) fn parent_delta(reserved: u64, used: u64, delta: i64) -> i64 {
    let before = used.max(reserved);
    let after = apply(used, delta).max(reserved);
    (i128::from(after) - i128::from(before)).clamp(i128::from(i64::MIN), i128::from(i64::MAX))
        as i64
}

/// What an unused refreservation charges: the part not covered by the head's own blocks.
pub(crate) fn refrsrv_charge(refreserved: u64, unique: u64) -> u64 {
    refreserved.saturating_sub(unique)
}

pub(crate) fn read_dir_phys(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
) -> Result<DslDirPhys, DmuError> {
    let bonus = mos.bonus(ctx, ObjectId(dir))?;
    DslDirPhys::decode(&bonus, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(format!("dsl dir {dir}: {e}")))
}

fn write_dir_phys(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    phys: &DslDirPhys,
) -> Result<(), DmuError> {
    mos.set_bonus(ctx, ObjectId(dir), &phys.encode(mos.dsl_origin))
}

/// `dsl_dir_diduse_transfer_space`: `dir`'s USED (and its compressed and logical sums)
/// change by `delta`; its breakdown gains `tonew` under `new` and the rest of the change
/// under `old`. Each ancestor then takes the change as it sees it (through the child's
/// reservation) under CHILD and CHILD_RSRV.
pub(crate) fn diduse_transfer(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    delta: SpaceDelta,
    tonew: i64,
    old: UsedKind,
    new: UsedKind,
) -> Result<(), DmuError> {
    if delta.is_zero() && tonew == 0 {
        return Ok(());
    }
    let (mut dir, mut delta, mut tonew, mut old, mut new) = (dir, delta, tonew, old, new);
    for _ in 0..=NESTING_MAX + 1 {
        let mut phys = read_dir_phys(mos, ctx, dir)?;
        let accounted = parent_delta(phys.reserved_bytes, phys.used_bytes, delta.used);
        phys.used_bytes = apply(phys.used_bytes, delta.used);
        phys.compressed_bytes = apply(phys.compressed_bytes, delta.compressed);
        phys.uncompressed_bytes = apply(phys.uncompressed_bytes, delta.uncompressed);
        let breakdown = &mut phys.used_breakdown;
        breakdown[old as usize] = apply(breakdown[old as usize], delta.used.saturating_sub(tonew));
        breakdown[new as usize] = apply(breakdown[new as usize], tonew);
        debug_assert_eq!(
            breakdown.iter().sum::<u64>(),
            phys.used_bytes,
            "dir {dir}: USED is not the sum of its breakdown"
        );
        write_dir_phys(mos, ctx, dir, &phys)?;
        if phys.parent_dir == 0 {
            return Ok(());
        }
        dir = phys.parent_dir;
        tonew = delta.used;
        delta.used = accounted;
        (old, new) = (UsedKind::ChildRsrv, UsedKind::Child);
    }
    Err(DmuError::Corrupt(format!(
        "dataset tree deeper than {NESTING_MAX} above dir {dir}"
    )))
}

/// `dsl_dir_diduse_space`: a change of one kind of USED.
pub(crate) fn diduse(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    kind: UsedKind,
    delta: SpaceDelta,
) -> Result<(), DmuError> {
    diduse_transfer(mos, ctx, dir, delta, delta.used, kind, kind)
}

/// `dsl_dir_transfer_space`: `bytes` of USED change kind inside one dir (its total and
/// its ancestors stay as they are).
pub(crate) fn transfer(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    bytes: i64,
    from: UsedKind,
    to: UsedKind,
) -> Result<(), DmuError> {
    if bytes == 0 {
        return Ok(());
    }
    let mut phys = read_dir_phys(mos, ctx, dir)?;
    phys.used_breakdown[from as usize] = apply(phys.used_breakdown[from as usize], -bytes);
    phys.used_breakdown[to as usize] = apply(phys.used_breakdown[to as usize], bytes);
    write_dir_phys(mos, ctx, dir, &phys)
}

/// The txg of a dir's origin snapshot (0 when it is not a clone): blocks born at or
/// before it are the origin's.
pub(crate) fn origin_txg(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: &DslDirPhys,
) -> Result<u64, DmuError> {
    if dir.origin_snapshot == 0 {
        return Ok(0);
    }
    let bonus = mos.bonus(ctx, ObjectId(dir.origin_snapshot))?;
    let origin = DslDatasetPhys::decode(&bonus, mos.dsl_origin)
        .map_err(|e| DmuError::Corrupt(format!("origin snapshot {}: {e}", dir.origin_snapshot)))?;
    Ok(origin.creation_txg)
}

/// The dataset layer's share of a commit of head `dataset`: `born` and `freed` are what its
/// object set wrote and freed in this txg, `dead` the blocks it released that a snapshot
/// still holds (appended to its dead list here). REFER, the logical sums, the unique bytes
/// and the dir's HEAD, SNAP and REFRSRV follow (`refreserved`: the head's refreservation),
/// and the record is stored (OpenZFS `dsl_dataset_block_born`, `dsl_dataset_block_kill`
/// and `dsl_dataset_sync`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn head_synced(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dataset: u64,
    phys: &mut DslDatasetPhys,
    refreserved: u64,
    born: BlockSpace,
    freed: BlockSpace,
    dead: &[BlockPointer],
) -> Result<(), DmuError> {
    super::append_dead_list(mos, ctx, phys, dead)?;
    let dir = read_dir_phys(mos, ctx, phys.dir)?;
    let origin = origin_txg(mos, ctx, &dir)?;
    let released = BlockSpace::of_all(ctx.root, dead);
    // Released blocks born after the origin were charged to this dir's HEAD; now only a
    // snapshot holds them. Older ones were never this dir's.
    let to_snapshots =
        BlockSpace::of_all(ctx.root, dead.iter().filter(|bp| bp.birth_txg.0 > origin));
    let referenced = SpaceDelta::gained(&born)
        .plus(SpaceDelta::lost(&freed))
        .plus(SpaceDelta::lost(&released));
    phys.referenced_bytes = apply(phys.referenced_bytes, referenced.used);
    phys.compressed_bytes = apply(phys.compressed_bytes, referenced.compressed);
    phys.uncompressed_bytes = apply(phys.uncompressed_bytes, referenced.uncompressed);
    let unique_before = phys.unique_bytes;
    phys.unique_bytes = apply(
        unique_before,
        signed(born.allocated_bytes) - signed(freed.allocated_bytes),
    );
    let head = SpaceDelta::gained(&born).plus(SpaceDelta::lost(&freed));
    diduse(mos, ctx, phys.dir, UsedKind::Head, head)?;
    transfer(
        mos,
        ctx,
        phys.dir,
        signed(to_snapshots.allocated_bytes),
        UsedKind::Head,
        UsedKind::Snap,
    )?;
    let charge = |unique| signed(refrsrv_charge(refreserved, unique));
    let refrsrv = charge(phys.unique_bytes) - charge(unique_before);
    diduse(
        mos,
        ctx,
        phys.dir,
        UsedKind::Refrsrv,
        SpaceDelta::used_only(refrsrv),
    )?;
    mos.set_bonus(ctx, ObjectId(dataset), &phys.encode(mos.dsl_origin))
}

/// A head's refquota and refreservation (0: none), OpenZFS's `ds_quota` and `ds_reserved`:
/// properties only on disk (the props ZAP), kept in memory by `dsl::Pool::ref_limits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefLimits {
    pub refquota: u64,
    pub refreservation: u64,
}

/// The four space limits, each a property; quota and reservation are also fields of the
/// dir record (`dd_quota`, `dd_reserved`), refquota and refreservation in-memory
/// `RefLimits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpaceLimit {
    Quota,
    Reservation,
    Refquota,
    Refreservation,
}

impl SpaceLimit {
    pub fn from_prop(name: &str) -> Option<SpaceLimit> {
        match name {
            "quota" => Some(SpaceLimit::Quota),
            "reservation" | "reserv" => Some(SpaceLimit::Reservation),
            "refquota" => Some(SpaceLimit::Refquota),
            "refreservation" | "refreserv" => Some(SpaceLimit::Refreservation),
            _ => None,
        }
    }

    /// The limit in force, from the dir record or the in-memory ref limits.
    pub(crate) fn get(self, dir: &DslDirPhys, refs: RefLimits) -> u64 {
        match self {
            SpaceLimit::Quota => dir.quota_bytes,
            SpaceLimit::Reservation => dir.reserved_bytes,
            SpaceLimit::Refquota => refs.refquota,
            SpaceLimit::Refreservation => refs.refreservation,
        }
    }
}

/// A dataset's space figures, as `zfs get` and `zfs list` show them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatasetSpace {
    pub used_bytes: u64,
    pub referenced_bytes: u64,
    pub available_bytes: u64,
    pub used_by_dataset_bytes: u64,
    pub used_by_snapshots_bytes: u64,
    pub used_by_children_bytes: u64,
    pub used_by_refreservation_bytes: u64,
    pub logical_used_bytes: u64,
    pub logical_referenced_bytes: u64,
    /// 100 × the ratio, truncated (OpenZFS's fixed point): 100 prints as `1.00x`.
    pub compress_ratio_x100: u64,
    pub refcompress_ratio_x100: u64,
}

/// `uncompressed / compressed` as 100 × the ratio (`1.00x` when nothing is stored).
pub fn ratio_x100(uncompressed: u64, compressed: u64) -> u64 {
    if compressed == 0 {
        return 100;
    }
    (u128::from(uncompressed) * 100 / u128::from(compressed)) as u64
}

impl Spa {
    /// `diduse` on the pool's MOS, outside a commit.
    pub(crate) fn space_diduse(
        &mut self,
        dir: u64,
        kind: UsedKind,
        delta: SpaceDelta,
    ) -> Result<(), SpaError> {
        self.dp.dsl_space.generation += 1;
        let ctx = io_ctx!(self);
        Ok(diduse(&mut self.dp.mos, &ctx, dir, kind, delta)?)
    }

    pub(crate) fn space_transfer(
        &mut self,
        dir: u64,
        bytes: i64,
        from: UsedKind,
        to: UsedKind,
    ) -> Result<(), SpaError> {
        self.dp.dsl_space.generation += 1;
        let ctx = io_ctx!(self);
        Ok(transfer(&mut self.dp.mos, &ctx, dir, bytes, from, to)?)
    }

    /// Sets a head's unique bytes and moves its dir's REFRSRV with them; the caller stores
    /// `head`.
    pub(crate) fn set_head_unique(
        &mut self,
        head: &mut DslDatasetPhys,
        unique: u64,
    ) -> Result<(), SpaError> {
        let refreserved = self.ref_limits(head.dir).refreservation;
        let before = refrsrv_charge(refreserved, head.unique_bytes);
        let after = refrsrv_charge(refreserved, unique);
        head.unique_bytes = unique;
        self.space_diduse(
            head.dir,
            UsedKind::Refrsrv,
            SpaceDelta::used_only(signed(after) - signed(before)),
        )
    }

    /// `dsl_pool_mos_diduse_space`: what a sync pass of the MOS gave birth to and freed,
    /// kept for `$MOS` until the next pass (or txg) applies it.
    pub(crate) fn mos_diduse_space(&mut self, born: &BlockSpace, freed: &BlockSpace) {
        let delta = SpaceDelta::gained(born).plus(SpaceDelta::lost(freed));
        self.dp.mos_space_delta = self.dp.mos_space_delta.plus(delta);
    }

    /// `dsl_pool_sync`'s charge of the MOS's space to `$MOS` (`dp_mos_dir`, HEAD, carried to
    /// the root dir's CHILD as any dir's): the births and frees of the MOS's passes before
    /// this one. The MOS cannot account for itself while it is written, so the last pass's
    /// wait for the next txg, as in OpenZFS. A pool without `$MOS` keeps nothing.
    pub(crate) fn mos_space_sync(&mut self, txg: crate::types::Txg) -> Result<(), SpaError> {
        let delta = self.dp.mos_space_delta;
        if delta.is_zero() {
            return Ok(());
        }
        let dir = match self.dp.mos_dir {
            Some(dir) => dir,
            None => {
                let root = self.dp.directory.root_dir;
                let dir = self
                    .child_dir(root, super::pool::MOS_DIR_NAME)?
                    .unwrap_or(0);
                self.dp.mos_dir = Some(dir);
                dir
            }
        };
        if dir == 0 {
            return Ok(());
        }
        self.dp.mos_space_delta = SpaceDelta::default();
        self.dp.dsl_space.generation += 1;
        let ctx = io_ctx!(self, txg);
        Ok(diduse(&mut self.dp.mos, &ctx, dir, UsedKind::Head, delta)?)
    }

    /// A dir's refquota and refreservation (none if it has no entry).
    pub(crate) fn ref_limits(&self, dir: u64) -> RefLimits {
        self.dp.ref_limits.get(&dir).copied().unwrap_or_default()
    }

    /// `dsl_dataset_t`'s `ds_quota` and `ds_reserved` as `dsl_dataset_hold_obj` loads them
    /// (`dsl_prop_get_int_ds` of each): every dir's local refquota and refreservation from
    /// its props ZAP. Run at open; `set_space_limit` keeps them after.
    pub(crate) fn load_ref_limits(&mut self) -> Result<(), SpaError> {
        self.dp.ref_limits.clear();
        for dir in self.all_dirs()? {
            let props = self.read_dir(dir)?.props_zap;
            if props == 0 {
                continue;
            }
            let ctx = io_ctx!(self);
            let lookup = |entry: &str| -> Result<Option<u64>, SpaError> {
                let found = crate::zap::zap_lookup(&self.dp.mos, &ctx, ObjectId(props), entry)
                    .map_err(super::zap_error)?;
                Ok(found.and_then(|v| v.first().copied()))
            };
            // The value in force: local, else received unless `zfs inherit` hid it
            // (`dsl_prop_get_int_ds`).
            let value = |name: &str| -> Result<u64, SpaError> {
                if let Some(local) = lookup(name)? {
                    return Ok(local);
                }
                if lookup(&format!("{name}{}", super::INHERIT_SUFFIX))?.is_some() {
                    return Ok(0);
                }
                Ok(lookup(&format!("{name}{}", super::RECEIVED_SUFFIX))?.unwrap_or(0))
            };
            let limits = RefLimits {
                refquota: value("refquota")?,
                refreservation: value("refreservation")?,
            };
            if limits != RefLimits::default() {
                self.dp.ref_limits.insert(dir, limits);
            }
        }
        Ok(())
    }

    /// Sets the four limits of `name` to the values in force there (local, else received
    /// unless hidden): after a receive replaced its received values, a `zfs inherit`, or a
    /// local value's removal. A received `refquota` is enforced as OpenZFS enforces it.
    pub(crate) fn apply_space_limits(&mut self, name: &str) -> Result<(), SpaError> {
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| super::no_such_dataset(name))?;
        let effective = super::effective_entries(&self.local_props(name)?);
        for (prop, limit) in [
            ("quota", SpaceLimit::Quota),
            ("reservation", SpaceLimit::Reservation),
            ("refquota", SpaceLimit::Refquota),
            ("refreservation", SpaceLimit::Refreservation),
        ] {
            let bytes = effective
                .iter()
                .find(|(n, _)| n == prop)
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(0);
            self.set_space_limit(dir, limit, bytes)?;
        }
        Ok(())
    }

    /// Stores a limit (quota and reservation in the dir record, refquota and
    /// refreservation in memory: their property is the caller's) and carries its effect: a
    /// reservation changes what the parent sees (CHILD_RSRV), a refreservation the dir's
    /// REFRSRV. The old value is read here, before anything changes.
    pub(crate) fn set_space_limit(
        &mut self,
        dir: u64,
        limit: SpaceLimit,
        bytes: u64,
    ) -> Result<(), SpaError> {
        let mut phys = self.read_dir(dir)?;
        let mut refs = self.ref_limits(dir);
        let old = limit.get(&phys, refs);
        if old == bytes {
            return Ok(());
        }
        match limit {
            SpaceLimit::Quota => phys.quota_bytes = bytes,
            SpaceLimit::Reservation => phys.reserved_bytes = bytes,
            SpaceLimit::Refquota => refs.refquota = bytes,
            SpaceLimit::Refreservation => refs.refreservation = bytes,
        }
        match limit {
            SpaceLimit::Quota | SpaceLimit::Reservation => self.write_dir(dir, &phys)?,
            SpaceLimit::Refquota | SpaceLimit::Refreservation => {
                if refs == RefLimits::default() {
                    self.dp.ref_limits.remove(&dir);
                } else {
                    self.dp.ref_limits.insert(dir, refs);
                }
            }
        }
        self.dp.dsl_space.generation += 1;
        match limit {
            SpaceLimit::Reservation if phys.parent_dir != 0 => {
                let used = phys.used_bytes;
                let delta = signed(used.max(bytes)) - signed(used.max(old));
                self.space_diduse(
                    phys.parent_dir,
                    UsedKind::ChildRsrv,
                    SpaceDelta::used_only(delta),
                )?;
            }
            SpaceLimit::Refreservation => {
                let unique = self.head_phys(phys.head_dataset)?.unique_bytes;
                let delta =
                    signed(refrsrv_charge(bytes, unique)) - signed(refrsrv_charge(old, unique));
                self.space_diduse(dir, UsedKind::Refrsrv, SpaceDelta::used_only(delta))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Takes a dir out of its ancestors' accounting before it is removed: its limits go to
    /// zero and whatever it still holds leaves every ancestor (its blocks were freed or
    /// handed on by the caller).
    pub(crate) fn release_dir_space(&mut self, dir: u64) -> Result<(), SpaError> {
        for limit in [
            SpaceLimit::Reservation,
            SpaceLimit::Refreservation,
            SpaceLimit::Refquota,
        ] {
            self.set_space_limit(dir, limit, 0)?;
        }
        let phys = self.read_dir(dir)?;
        self.space_diduse(
            dir,
            UsedKind::Head,
            SpaceDelta {
                used: -signed(phys.used(UsedKind::Head)),
                compressed: -signed(phys.compressed_bytes),
                uncompressed: -signed(phys.uncompressed_bytes),
            },
        )?;
        for kind in [
            UsedKind::Snap,
            UsedKind::Refrsrv,
            UsedKind::Child,
            UsedKind::ChildRsrv,
        ] {
            let left = phys.used(kind);
            self.space_diduse(dir, kind, SpaceDelta::used_only(-signed(left)))?;
        }
        Ok(())
    }

    /// A dir moves from one parent to another (`zfs rename`): what it counts for leaves the
    /// old ancestors and reaches the new ones (OpenZFS `dsl_dir_rename_sync`).
    pub(crate) fn move_dir_space(
        &mut self,
        dir: u64,
        from_parent: u64,
        to_parent: u64,
    ) -> Result<(), SpaError> {
        if from_parent == to_parent {
            return Ok(());
        }
        let phys = self.read_dir(dir)?;
        let counts = SpaceDelta {
            used: signed(phys.used_bytes),
            compressed: signed(phys.compressed_bytes),
            uncompressed: signed(phys.uncompressed_bytes),
        };
        let unused = signed(phys.reserved_bytes.saturating_sub(phys.used_bytes));
        let lost = SpaceDelta {
            used: -counts.used,
            compressed: -counts.compressed,
            uncompressed: -counts.uncompressed,
        };
        self.space_diduse(from_parent, UsedKind::Child, lost)?;
        self.space_diduse(
            from_parent,
            UsedKind::ChildRsrv,
            SpaceDelta::used_only(-unused),
        )?;
        self.space_diduse(to_parent, UsedKind::Child, counts)?;
        self.space_diduse(
            to_parent,
            UsedKind::ChildRsrv,
            SpaceDelta::used_only(unused),
        )
    }

    /// The space figures of a filesystem (`fs`) as of the last commit.
    pub fn dataset_space(&mut self, name: &str) -> Result<DatasetSpace, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return f
                .view
                .dataset_space(name, &f.space)
                .ok_or_else(|| super::no_such_dataset(name));
        }
        let dataset = self
            .lookup_dataset(name)?
            .ok_or_else(|| super::no_such_dataset(name))?;
        let head = self.head_phys(dataset)?;
        let dir = self.read_dir(head.dir)?;
        Ok(DatasetSpace {
            used_bytes: dir.used_bytes,
            referenced_bytes: head.referenced_bytes,
            available_bytes: self.head_available(dataset, false)?.bytes,
            used_by_dataset_bytes: dir.used(UsedKind::Head),
            used_by_snapshots_bytes: dir.used(UsedKind::Snap),
            used_by_children_bytes: dir.used(UsedKind::Child) + dir.used(UsedKind::ChildRsrv),
            used_by_refreservation_bytes: dir.used(UsedKind::Refrsrv),
            logical_used_bytes: dir.uncompressed_bytes,
            logical_referenced_bytes: head.uncompressed_bytes,
            compress_ratio_x100: ratio_x100(dir.uncompressed_bytes, dir.compressed_bytes),
            refcompress_ratio_x100: ratio_x100(head.uncompressed_bytes, head.compressed_bytes),
        })
    }

    /// The breakdown of a dir's USED, by `UsedKind` (tests and the audit).
    pub fn dir_used_breakdown(
        &mut self,
        name: &str,
    ) -> Result<(u64, [u64; USED_KIND_COUNT]), SpaError> {
        if let Some(f) = self.openzfs.clone() {
            // A foreign dataset's figures come whole from its DSL records.
            let space = f
                .view
                .dataset_space(name, &f.space)
                .ok_or_else(|| super::no_such_dataset(name))?;
            let mut breakdown = [0u64; USED_KIND_COUNT];
            breakdown[UsedKind::Head as usize] = space.used_by_dataset_bytes;
            breakdown[UsedKind::Snap as usize] = space.used_by_snapshots_bytes;
            breakdown[UsedKind::Child as usize] = space.used_by_children_bytes;
            breakdown[UsedKind::Refrsrv as usize] = space.used_by_refreservation_bytes;
            return Ok((space.used_bytes, breakdown));
        }
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| super::no_such_dataset(name))?;
        let phys = self.read_dir(dir)?;
        Ok((phys.used_bytes, phys.used_breakdown))
    }
}

impl Spa {
    /// Dir records changed outside a commit: cached sums are stale.
    pub(crate) fn dsl_space_changed(&mut self) {
        self.dp.dsl_space.generation += 1;
    }
}
