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
//! AVAIL is computed from the top down (`dir_available`): the pool's free space less its
//! slop and every reservation not yet used, then at each dir the lesser of what its parent
//! gives (plus its own unused reservation) and what its quota leaves; a head adds its unused
//! refreservation and is capped by its refquota. Writes of the open txg are admitted against
//! the same figures plus what earlier writes of that txg claimed (`tempreserve`): a write
//! that would pass a quota fails with EDQUOT, one that would eat into space reserved
//! for someone else with ENOSPC.

use super::phys::{DslDatasetPhys, DslDirPhys, UsedKind, USED_KIND_COUNT};
use super::NESTING_MAX;
use crate::dmu::{BlockSpace, DmuError, IoCtx, ObjectSet};
use crate::spa::{Spa, SpaError, MOS_OBJECT_ROOT_DIR};
use crate::types::ObjectId;
use crate::zio::blkptr::BlockPointer;
use std::collections::HashMap;

/// A signed change of a dir's space figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpaceDelta {
    pub used: i64,
    pub compressed: i64,
    pub uncompressed: i64,
}

fn signed(bytes: u64) -> i64 {
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
fn parent_delta(reserved: u64, used: u64, delta: i64) -> i64 {
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
    DslDirPhys::decode(&bonus).map_err(|e| DmuError::Corrupt(format!("dsl dir {dir}: {e}")))
}

fn write_dir_phys(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dir: u64,
    phys: &DslDirPhys,
) -> Result<(), DmuError> {
    mos.set_bonus(ctx, ObjectId(dir), &phys.encode())
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
        if phys.parent_dir == 0 || dir == MOS_OBJECT_ROOT_DIR.0 {
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
    let origin = DslDatasetPhys::decode(&bonus)
        .map_err(|e| DmuError::Corrupt(format!("origin snapshot {}: {e}", dir.origin_snapshot)))?;
    Ok(origin.creation_txg)
}

/// The dataset layer's share of a commit of head `dataset`: `born` and `freed` are what its
/// object set wrote and freed in this txg, `dead` the blocks it released that a snapshot
/// still holds (appended to its dead list here). REFER, the logical sums, the unique bytes
/// and the dir's HEAD, SNAP and REFRSRV follow, and the record is stored (OpenZFS
/// `dsl_dataset_block_born`, `dsl_dataset_block_kill` and `dsl_dataset_sync`).
pub(crate) fn head_synced(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    dataset: u64,
    phys: &mut DslDatasetPhys,
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
    let charge = |unique| signed(refrsrv_charge(dir.refreserved_bytes, unique));
    let refrsrv = charge(phys.unique_bytes) - charge(unique_before);
    diduse(
        mos,
        ctx,
        phys.dir,
        UsedKind::Refrsrv,
        SpaceDelta::used_only(refrsrv),
    )?;
    mos.set_bonus(ctx, ObjectId(dataset), &phys.encode())
}

/// The four space limits, each a property and a field of the dir record.
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

    fn get(self, dir: &DslDirPhys) -> u64 {
        match self {
            SpaceLimit::Quota => dir.quota_bytes,
            SpaceLimit::Reservation => dir.reserved_bytes,
            SpaceLimit::Refquota => dir.refquota_bytes,
            SpaceLimit::Refreservation => dir.refreserved_bytes,
        }
    }

    fn set(self, dir: &mut DslDirPhys, bytes: u64) {
        match self {
            SpaceLimit::Quota => dir.quota_bytes = bytes,
            SpaceLimit::Reservation => dir.reserved_bytes = bytes,
            SpaceLimit::Refquota => dir.refquota_bytes = bytes,
            SpaceLimit::Refreservation => dir.refreserved_bytes = bytes,
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

/// Space claimed by writes of the open txg, not committed yet (OpenZFS `dd_tempreserved`
/// and `dd_space_towrite`), and the pool's unused reservations as of a txg.
#[derive(Debug, Default)]
pub struct SpaceState {
    pending_txg: u64,
    /// dir -> (bytes written to its head, bytes as the dir's USED will see them).
    pending: HashMap<u64, (u64, u64)>,
    /// (open txg, generation, bytes) of the last sum of unused reservations.
    slack: Option<(u64, u64, u64)>,
    /// Bumped by every change of dir records outside a commit.
    generation: u64,
}

/// An AVAIL figure and whether a quota (rather than the pool) bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Avail {
    pub(crate) bytes: u64,
    by_quota: bool,
}

impl Avail {
    fn capped(self, cap: u64) -> Avail {
        if cap < self.bytes {
            Avail {
                bytes: cap,
                by_quota: true,
            }
        } else {
            self
        }
    }
}

impl Spa {
    /// `diduse` on the pool's MOS, outside a commit.
    pub(crate) fn space_diduse(
        &mut self,
        dir: u64,
        kind: UsedKind,
        delta: SpaceDelta,
    ) -> Result<(), SpaError> {
        self.dsl_space.generation += 1;
        let ctx = io_ctx!(self);
        Ok(diduse(&mut self.mos, &ctx, dir, kind, delta)?)
    }

    pub(crate) fn space_transfer(
        &mut self,
        dir: u64,
        bytes: i64,
        from: UsedKind,
        to: UsedKind,
    ) -> Result<(), SpaError> {
        self.dsl_space.generation += 1;
        let ctx = io_ctx!(self);
        Ok(transfer(&mut self.mos, &ctx, dir, bytes, from, to)?)
    }

    /// Sets a head's unique bytes and moves its dir's REFRSRV with them; the caller stores
    /// `head`.
    pub(crate) fn set_head_unique(
        &mut self,
        head: &mut DslDatasetPhys,
        unique: u64,
    ) -> Result<(), SpaError> {
        let refreserved = self.read_dir(head.dir)?.refreserved_bytes;
        let before = refrsrv_charge(refreserved, head.unique_bytes);
        let after = refrsrv_charge(refreserved, unique);
        head.unique_bytes = unique;
        self.space_diduse(
            head.dir,
            UsedKind::Refrsrv,
            SpaceDelta::used_only(signed(after) - signed(before)),
        )
    }

    /// Stores a limit in the dir record and carries its effect: a reservation changes what
    /// the parent sees (CHILD_RSRV), a refreservation the dir's REFRSRV.
    pub(crate) fn set_space_limit(
        &mut self,
        dir: u64,
        limit: SpaceLimit,
        bytes: u64,
    ) -> Result<(), SpaError> {
        let mut phys = self.read_dir(dir)?;
        let old = limit.get(&phys);
        if old == bytes {
            return Ok(());
        }
        limit.set(&mut phys, bytes);
        self.write_dir(dir, &phys)?;
        self.dsl_space.generation += 1;
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

    /// Refuses a limit OpenZFS would refuse (`dsl_dir_set_reservation_check`,
    /// `dsl_dataset_set_refreservation_check`, the quota checks): a reservation larger than
    /// the space available to it, a quota below what is used or reserved. `NoSpace` either
    /// way; the caller words it per property.
    pub fn check_space_limit(
        &mut self,
        name: &str,
        limit: SpaceLimit,
        bytes: u64,
    ) -> Result<(), SpaError> {
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| SpaError::NoSuchPool(name.to_string()))?;
        let phys = self.read_dir(dir)?;
        let head = self.head_phys(phys.head_dataset)?;
        let refused = match limit {
            SpaceLimit::Reservation => {
                let used = phys.used_bytes;
                let grows = used
                    .max(bytes)
                    .saturating_sub(used.max(phys.reserved_bytes));
                // The pool's free space is what is left beside every USED already.
                let available = if phys.parent_dir == 0 {
                    self.pool_space(true)?
                } else {
                    self.dir_available(phys.parent_dir, true)?.bytes
                };
                grows > available || (phys.quota_bytes > 0 && bytes > phys.quota_bytes)
            }
            SpaceLimit::Refreservation => {
                let unique = head.unique_bytes;
                let grows = unique
                    .max(bytes)
                    .saturating_sub(unique.max(phys.refreserved_bytes));
                grows > self.dir_available(dir, false)?.bytes
                    || (phys.refquota_bytes > 0 && bytes > phys.refquota_bytes)
            }
            SpaceLimit::Quota => {
                let used = phys.used_bytes + self.pending_of(dir).1;
                bytes != 0 && (bytes < phys.reserved_bytes || bytes < used)
            }
            SpaceLimit::Refquota => {
                bytes != 0 && (bytes < head.referenced_bytes || bytes < phys.refreserved_bytes)
            }
        };
        if refused {
            return Err(SpaError::NoSpace);
        }
        Ok(())
    }

    /// Takes a dir out of its ancestors' accounting before it is removed: its limits go to
    /// zero and whatever it still holds leaves every ancestor (its blocks were freed or
    /// handed on by the caller).
    pub(crate) fn release_dir_space(&mut self, dir: u64) -> Result<(), SpaError> {
        for limit in [SpaceLimit::Reservation, SpaceLimit::Refreservation] {
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

    /// Every DSL dir of the pool, parents first.
    pub(crate) fn all_dirs(&mut self) -> Result<Vec<u64>, SpaError> {
        let mut out = Vec::new();
        let mut stack = vec![(MOS_OBJECT_ROOT_DIR.0, 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            if depth > NESTING_MAX {
                return Err(SpaError::Corrupt(format!(
                    "dataset tree deeper than {NESTING_MAX} at dir {dir}"
                )));
            }
            out.push(dir);
            for (_, child) in self.children(dir)? {
                stack.push((child, depth + 1));
            }
        }
        Ok(out)
    }

    /// Reservations and refreservations nobody has used yet, over the whole pool: space
    /// that is free on disk but promised (cached until the next change or commit).
    fn unused_reservation_bytes(&mut self) -> Result<u64, SpaError> {
        let key = (self.open_txg().0, self.dsl_space.generation);
        if let Some((txg, generation, bytes)) = self.dsl_space.slack {
            if (txg, generation) == key {
                return Ok(bytes);
            }
        }
        let mut total = 0u64;
        for dir in self.all_dirs()? {
            let phys = self.read_dir(dir)?;
            total = total
                .saturating_add(phys.used(UsedKind::Refrsrv))
                .saturating_add(phys.used(UsedKind::ChildRsrv));
        }
        self.dsl_space.slack = Some((key.0, key.1, total));
        Ok(total)
    }

    /// Writes admitted in the open txg to `dir`: (bytes written to its head, bytes its
    /// USED will see).
    fn pending_of(&mut self, dir: u64) -> (u64, u64) {
        if self.dsl_space.pending_txg != self.open_txg().0 {
            self.dsl_space.pending.clear();
            self.dsl_space.pending_txg = self.open_txg().0;
        }
        self.dsl_space.pending.get(&dir).copied().unwrap_or((0, 0))
    }

    /// What the whole hierarchy may still take: free space (deflated) less the slop and the
    /// unused reservations; with `pending`, less what the open txg already claimed.
    fn pool_space(&mut self, pending: bool) -> Result<u64, SpaError> {
        let mut space = self
            .available_bytes()
            .saturating_sub(self.unused_reservation_bytes()?);
        if pending {
            space = space.saturating_sub(self.pending_of(MOS_OBJECT_ROOT_DIR.0).1);
        }
        Ok(space)
    }

    /// `dsl_dir_space_available`: what `dir` may still take, from the pool down through
    /// every ancestor's quota and reservation.
    fn dir_available(&mut self, dir: u64, pending: bool) -> Result<Avail, SpaError> {
        let mut chain = Vec::new();
        let mut current = dir;
        loop {
            let phys = self.read_dir(current)?;
            let parent = phys.parent_dir;
            chain.push((current, phys));
            if parent == 0 || current == MOS_OBJECT_ROOT_DIR.0 {
                break;
            }
            if chain.len() > NESTING_MAX + 1 {
                return Err(SpaError::Corrupt(format!(
                    "dataset tree deeper than {NESTING_MAX} above dir {dir}"
                )));
            }
            current = parent;
        }
        let mut available = Avail {
            bytes: self.pool_space(pending)?,
            by_quota: false,
        };
        for (index, (object, phys)) in chain.iter().rev().enumerate() {
            let used = phys.used_bytes.saturating_add(if pending {
                self.pending_of(*object).1
            } else {
                0
            });
            if index > 0 && phys.reserved_bytes > used {
                available.bytes = available.bytes.saturating_add(phys.reserved_bytes - used);
            }
            if phys.quota_bytes > 0 {
                available = available.capped(phys.quota_bytes.saturating_sub(used));
            }
        }
        Ok(available)
    }

    /// AVAIL of a head dataset: its dir's, plus its unused refreservation, capped by its
    /// refquota (OpenZFS `dsl_get_available`).
    pub(crate) fn head_available(
        &mut self,
        dataset: u64,
        pending: bool,
    ) -> Result<Avail, SpaError> {
        let head = self.head_phys(dataset)?;
        let dir = self.read_dir(head.dir)?;
        let (written, _) = if pending {
            self.pending_of(head.dir)
        } else {
            (0, 0)
        };
        let mut available = self.dir_available(head.dir, pending)?;
        let unique = head.unique_bytes.saturating_add(written);
        available.bytes = available
            .bytes
            .saturating_add(refrsrv_charge(dir.refreserved_bytes, unique));
        if dir.refquota_bytes > 0 {
            let referenced = head.referenced_bytes.saturating_add(written);
            available = available.capped(dir.refquota_bytes.saturating_sub(referenced));
        }
        Ok(available)
    }

    /// Admits a write of `bytes` (all copies) to head `dataset` in the open txg, or refuses
    /// it: `QuotaExceeded` past a quota or refquota, `NoSpace` when it would take space
    /// the pool has promised elsewhere. Conservative like OpenZFS's: an overwrite counts
    /// as new space until it commits, compression is not known yet.
    pub fn dsl_tempreserve(&mut self, dataset: u64, bytes: u64) -> Result<(), SpaError> {
        let available = self.head_available(dataset, true)?;
        if bytes > available.bytes {
            return Err(if available.by_quota {
                SpaError::QuotaExceeded
            } else {
                SpaError::NoSpace
            });
        }
        let head = self.head_phys(dataset)?;
        let mut dir = head.dir;
        let phys = self.read_dir(dir)?;
        let (written, _) = self.pending_of(dir);
        // What falls inside the head's unused refreservation is already counted.
        let covered = refrsrv_charge(
            phys.refreserved_bytes,
            head.unique_bytes.saturating_add(written),
        )
        .min(bytes);
        let mut accounted = bytes - covered;
        let mut first = true;
        for _ in 0..=NESTING_MAX + 1 {
            let phys = self.read_dir(dir)?;
            let (written, claimed) = self.pending_of(dir);
            let written = if first { written + bytes } else { written };
            first = false;
            self.dsl_space
                .pending
                .insert(dir, (written, claimed.saturating_add(accounted)));
            if phys.parent_dir == 0 || dir == MOS_OBJECT_ROOT_DIR.0 {
                return Ok(());
            }
            let seen = parent_delta(
                phys.reserved_bytes,
                phys.used_bytes.saturating_add(claimed),
                signed(accounted),
            );
            accounted = u64::try_from(seen).unwrap_or(0);
            dir = phys.parent_dir;
        }
        Ok(())
    }

    /// The space figures of a filesystem (`fs`) as of the last commit.
    pub fn dataset_space(&mut self, name: &str) -> Result<DatasetSpace, SpaError> {
        let dataset = self
            .lookup_dataset(name)?
            .ok_or_else(|| SpaError::NoSuchPool(name.to_string()))?;
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
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| SpaError::NoSuchPool(name.to_string()))?;
        let phys = self.read_dir(dir)?;
        Ok((phys.used_bytes, phys.used_breakdown))
    }
}

impl Spa {
    /// Dir records changed outside a commit: cached sums are stale.
    pub(crate) fn dsl_space_changed(&mut self) {
        self.dsl_space.generation += 1;
    }
}

impl Spa {
    /// AVAIL of a dir as of the last commit (`dsl_dir_space_available`, on-disk only).
    pub(crate) fn dir_available_bytes(&mut self, dir: u64) -> Result<u64, SpaError> {
        Ok(self.dir_available(dir, false)?.bytes)
    }
}
