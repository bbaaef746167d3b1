//! AVAIL and the admission of writes (OpenZFS `dsl_dir_space_available`,
//! `dsl_get_available`, `dsl_dir_tempreserve_space`, the checks of `zfs set quota` and
//! `reservation`).
//!
//! AVAIL is computed from the top down (`dir_available`): the pool's free space (deflated)
//! less its slop and every reservation nobody has used yet, then at each dir the lesser
//! of what its parent gives (plus its own unused reservation) and what its quota leaves; a
//! head adds its unused refreservation and is capped by its refquota. The unused
//! reservations of the whole pool are a sum over every dir, cached until a dir record
//! changes or a txg commits.
//!
//! Writes of the open txg are admitted against the same figures plus what earlier writes
//! of that txg claimed (`dsl_tempreserve`): each dir from the written one up remembers the
//! claim as its USED will see it (through the reservations below it). A write that would
//! pass a quota fails with EDQUOT (`QuotaExceeded`), one that would eat into space
//! reserved for another dataset with ENOSPC (`NoSpace`). The claims are forgotten when the
//! txg commits: by then they are USED.

use super::phys::UsedKind;
use super::space::{parent_delta, refrsrv_charge, signed, SpaceLimit};
use super::NESTING_MAX;
use crate::spa::{Spa, SpaError};
use std::collections::HashMap;

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
    pub(super) generation: u64,
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
            .ok_or_else(|| super::no_such_dataset(name))?;
        let phys = self.read_dir(dir)?;
        let refs = self.ref_limits(dir);
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
                    .saturating_sub(unique.max(refs.refreservation));
                grows > self.dir_available(dir, false)?.bytes
                    || (refs.refquota > 0 && bytes > refs.refquota)
            }
            SpaceLimit::Quota => {
                let used = phys.used_bytes + self.pending_of(dir).1;
                bytes != 0 && (bytes < phys.reserved_bytes || bytes < used)
            }
            SpaceLimit::Refquota => {
                bytes != 0 && (bytes < head.referenced_bytes || bytes < refs.refreservation)
            }
        };
        if refused {
            return Err(SpaError::NoSpace);
        }
        Ok(())
    }

    /// Every DSL dir of the pool, parents first.
    pub(crate) fn all_dirs(&mut self) -> Result<Vec<u64>, SpaError> {
        let mut out = Vec::new();
        let mut stack = vec![(self.dp.directory.root_dir, 0usize)];
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
        let key = (self.open_txg().0, self.dp.dsl_space.generation);
        if let Some((txg, generation, bytes)) = self.dp.dsl_space.slack {
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
        self.dp.dsl_space.slack = Some((key.0, key.1, total));
        Ok(total)
    }

    /// Writes admitted in the open txg to `dir`: (bytes written to its head, bytes its
    /// USED will see).
    pub(super) fn pending_of(&mut self, dir: u64) -> (u64, u64) {
        if self.dp.dsl_space.pending_txg != self.open_txg().0 {
            self.dp.dsl_space.pending.clear();
            self.dp.dsl_space.pending_txg = self.open_txg().0;
        }
        self.dp
            .dsl_space
            .pending
            .get(&dir)
            .copied()
            .unwrap_or((0, 0))
    }

    /// What the whole hierarchy may still take: free space (deflated) less the slop and the
    /// unused reservations; with `pending`, less what the open txg already claimed.
    pub(super) fn pool_space(&mut self, pending: bool) -> Result<u64, SpaError> {
        // Intent log blocks hold data the open txg is about to write anyway (and the
        // claims below already count): as in OpenZFS, they take nothing from AVAIL.
        let mut space = self
            .available_bytes_counting(self.zil_held_bytes(false))
            .saturating_sub(self.unused_reservation_bytes()?);
        if pending {
            space = space.saturating_sub(self.pending_of(self.dp.directory.root_dir).1);
        }
        Ok(space)
    }

    /// Allocated bytes of the intent log blocks every loaded head holds, on separate log
    /// devices (`on_log_devices`) or in the normal class.
    pub(crate) fn zil_held_bytes(&self, on_log_devices: bool) -> u64 {
        let objsets = std::iter::once(&self.dp.root_dataset)
            .chain(self.dp.datasets.values().map(|head| &head.objset));
        let mut total = 0u64;
        for objset in objsets {
            for block in objset.zil.owned_blocks() {
                let Some(top) = self.root.children.get(block.vdev as usize) else {
                    continue;
                };
                if top.is_log == on_log_devices {
                    total = total.saturating_add(top.allocation_size_bytes(block.psize_bytes));
                }
            }
        }
        total
    }

    /// `dsl_dir_space_available`: what `dir` may still take, from the pool down through
    /// every ancestor's quota and reservation.
    pub(super) fn dir_available(&mut self, dir: u64, pending: bool) -> Result<Avail, SpaError> {
        let mut chain = Vec::new();
        let mut current = dir;
        loop {
            let phys = self.read_dir(current)?;
            let parent = phys.parent_dir;
            chain.push((current, phys));
            if parent == 0 || current == self.dp.directory.root_dir {
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
        let refs = self.ref_limits(head.dir);
        let (written, _) = if pending {
            self.pending_of(head.dir)
        } else {
            (0, 0)
        };
        let mut available = self.dir_available(head.dir, pending)?;
        let unique = head.unique_bytes.saturating_add(written);
        available.bytes = available
            .bytes
            .saturating_add(refrsrv_charge(refs.refreservation, unique));
        if refs.refquota > 0 {
            let referenced = head.referenced_bytes.saturating_add(written);
            available = available.capped(refs.refquota.saturating_sub(referenced));
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
        let (written, _) = self.pending_of(dir);
        // What falls inside the head's unused refreservation is already counted.
        let covered = refrsrv_charge(
            self.ref_limits(dir).refreservation,
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
            self.dp
                .dsl_space
                .pending
                .insert(dir, (written, claimed.saturating_add(accounted)));
            if phys.parent_dir == 0 || dir == self.dp.directory.root_dir {
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

    /// What head `dataset` may still take in the open txg (its AVAIL less what earlier
    /// writes of the txg claimed), for `fallocate`: a reservation larger than this cannot
    /// be kept.
    pub fn dsl_space_available(&mut self, dataset: u64) -> Result<u64, SpaError> {
        Ok(self.head_available(dataset, true)?.bytes)
    }

    /// AVAIL of a dir as of the last commit (`dsl_dir_space_available`, on-disk only).
    pub(crate) fn dir_available_bytes(&mut self, dir: u64) -> Result<u64, SpaError> {
        Ok(self.dir_available(dir, false)?.bytes)
    }
}
