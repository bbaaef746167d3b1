//! Verified reads and self-healing (OpenZFS `vdev_mirror.c` read selection, the raidz
//! combinatorial reconstruction of `vdev_raidz.c`, and `zio` repair writes).
//!
//! A read is given the block's expected checksum as a `verify` closure: the vdev returns only
//! bytes that pass it. A mirror tries its children least-loaded first (outstanding reads,
//! random tie-break, skipping children that miss the block's birth txg); raidz reads the data
//! columns, and when the result does not verify it reads every column and tries each
//! combination of up to `parity` columns as the damaged ones until the block verifies. Any
//! child or column found bad is counted in its CKSUM column and rewritten with good bytes.
//! With `scrub` set, every child and every parity column is checked even when the first
//! read verified.

use super::{Vdev, VdevKind, VdevStats};
use crate::types::Txg;
use std::sync::atomic::Ordering;

pub type VerifyFn<'a> = &'a (dyn Fn(&[u8]) -> bool + Sync);

/// How thoroughly a read checks and repairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// The first copy that verifies; damaged copies met on the way are repaired.
    Normal,
    /// Every copy and every parity column is verified and repaired.
    Scrub,
    /// Like Normal, and children that miss the block (awaiting resilver) are written.
    Resilver,
    /// Like Normal for a block that may legitimately not be there (the end of an intent log
    /// chain): a copy that fails verification counts no checksum error.
    Speculative,
}

#[derive(Debug)]
pub struct ReadOutcome {
    pub data: Vec<u8>,
    /// Bytes rewritten to repair damaged copies while reading.
    pub repaired_bytes: u64,
}

impl Vdev {
    /// Reads `psize_bytes` at `offset_bytes` of this vdev and returns bytes that pass
    /// `verify`, repairing what it can. `None` when no good copy exists here.
    pub fn read_block(
        &self,
        offset_bytes: u64,
        psize_bytes: u64,
        birth: Txg,
        verify: VerifyFn<'_>,
        mode: ReadMode,
    ) -> Option<ReadOutcome> {
        match self.kind {
            VdevKind::Leaf => {
                let mut buffer = vec![0u8; psize_bytes as usize];
                self.leaf_read(offset_bytes, &mut buffer).ok()?;
                if verify(&buffer) {
                    Some(ReadOutcome {
                        data: buffer,
                        repaired_bytes: 0,
                    })
                } else {
                    if mode != ReadMode::Speculative {
                        VdevStats::bump(&self.stats.checksum_errors, 1);
                        crate::spa::events::post(crate::spa::events::EngineEvent::Checksum {
                            vdev_guid: self.guid.0,
                            offset_bytes,
                            size_bytes: psize_bytes,
                            scan: matches!(mode, ReadMode::Scrub | ReadMode::Resilver),
                        });
                    }
                    None
                }
            }
            VdevKind::Mirror | VdevKind::Replacing | VdevKind::Spare => {
                self.read_mirror(offset_bytes, psize_bytes, birth, verify, mode)
            }
            VdevKind::Raidz { parity } => self.read_raidz(
                offset_bytes,
                psize_bytes,
                birth,
                parity as usize,
                verify,
                mode,
            ),
            VdevKind::Root | VdevKind::Hole => None,
        }
    }

    /// Whether this vdev (leaf or group) can serve a block born at `birth`.
    pub fn can_serve(&self, birth: Txg) -> bool {
        if !self.state().is_usable() {
            return false;
        }
        match self.kind {
            VdevKind::Leaf => self.has_block_born(birth),
            VdevKind::Mirror | VdevKind::Replacing | VdevKind::Spare => {
                self.children.iter().any(|c| c.can_serve(birth))
            }
            _ => true,
        }
    }

    fn load(&self) -> u64 {
        self.leaves()
            .iter()
            .map(|leaf| leaf.stats.in_flight.load(Ordering::Relaxed))
            .sum()
    }

    fn read_mirror(
        &self,
        offset_bytes: u64,
        psize_bytes: u64,
        birth: Txg,
        verify: VerifyFn<'_>,
        mode: ReadMode,
    ) -> Option<ReadOutcome> {
        let scrub = mode == ReadMode::Scrub;
        let mut order: Vec<(u64, u64, usize)> = self
            .children
            .iter()
            .enumerate()
            .filter(|(_, child)| child.can_serve(birth))
            .map(|(index, child)| (child.load(), crate::rand::random_u64(), index))
            .collect();
        order.sort_unstable();
        let mut good: Option<Vec<u8>> = None;
        let mut bad = Vec::new();
        let mut read = Vec::new();
        let mut repaired_bytes = 0;
        for (_, _, index) in order {
            if good.is_some() && !scrub {
                break;
            }
            read.push(index);
            match self.children[index].read_block(offset_bytes, psize_bytes, birth, verify, mode) {
                Some(outcome) => {
                    repaired_bytes += outcome.repaired_bytes;
                    if good.is_none() {
                        good = Some(outcome.data);
                    }
                }
                None => bad.push(index),
            }
        }
        let data = good?;
        if mode == ReadMode::Resilver {
            for (index, child) in self.children.iter().enumerate() {
                if child.state().is_usable() && !child.can_serve(birth) && !bad.contains(&index) {
                    bad.push(index);
                } else if child.state().is_usable()
                    && child.kind != VdevKind::Leaf
                    && !read.contains(&index)
                {
                    // A replacing pair inside a mirror: let it resilver its new half, unless
                    // the loop above read it (that read resilvered it already; a second one
                    // wrote the block twice and counted it twice in `resilvered`).
                    if let Some(inner) =
                        child.read_block(offset_bytes, psize_bytes, birth, verify, mode)
                    {
                        repaired_bytes += inner.repaired_bytes;
                    }
                }
            }
        }
        for index in bad {
            let child = &self.children[index];
            if child.write_block(offset_bytes, &data).is_ok() {
                repaired_bytes += psize_bytes;
                for leaf in child.leaves() {
                    VdevStats::bump(&leaf.stats.repaired_bytes, psize_bytes);
                }
            }
        }
        Some(ReadOutcome {
            data,
            repaired_bytes,
        })
    }

    /// Reads one raidz column from child `child_index` (a leaf, or a replacing pair).
    fn read_column(
        &self,
        child_index: usize,
        offset_bytes: u64,
        size_bytes: u64,
        birth: Txg,
    ) -> Option<Vec<u8>> {
        let child = &self.children[child_index];
        if !child.can_serve(birth) {
            return None;
        }
        let mut buffer = vec![0u8; size_bytes as usize];
        let leaf = child
            .leaves()
            .into_iter()
            .find(|leaf| leaf.state().is_usable() && leaf.has_block_born(birth))?;
        leaf.leaf_read(offset_bytes, &mut buffer).ok()?;
        Some(buffer)
    }

    fn read_raidz(
        &self,
        offset_bytes: u64,
        psize_bytes: u64,
        birth: Txg,
        parity: usize,
        verify: VerifyFn<'_>,
        mode: ReadMode,
    ) -> Option<ReadOutcome> {
        let scrub = mode == ReadMode::Scrub;
        let map = self.raidz_map(offset_bytes, psize_bytes).ok()?;
        let column_count = map.columns.len();
        let mut columns: Vec<Option<Vec<u8>>> = vec![None; column_count];
        let mut attempted = vec![false; column_count];
        let read = |index: usize, columns: &mut Vec<Option<Vec<u8>>>, attempted: &mut Vec<bool>| {
            if !attempted[index] {
                attempted[index] = true;
                let column = &map.columns[index];
                columns[index] = self.read_column(
                    column.child,
                    column.child_offset_bytes,
                    column.size_bytes,
                    birth,
                );
            }
        };
        // Fast path: data columns only.
        for index in parity..column_count {
            read(index, &mut columns, &mut attempted);
        }
        let data_complete = (parity..column_count).all(|i| columns[i].is_some());
        if data_complete && matches!(mode, ReadMode::Normal | ReadMode::Speculative) {
            let full: Vec<Vec<u8>> = (0..column_count)
                .map(|i| {
                    columns[i]
                        .clone()
                        .unwrap_or_else(|| vec![0u8; map.columns[i].size_bytes as usize])
                })
                .collect();
            let data = map.assemble(&full);
            if verify(&data) {
                return Some(ReadOutcome {
                    data,
                    repaired_bytes: 0,
                });
            }
        }
        // Slow path: every column, then combinations of suspected-bad columns.
        for index in 0..parity {
            read(index, &mut columns, &mut attempted);
        }
        let erased: Vec<usize> = (0..column_count)
            .filter(|i| columns[*i].is_none())
            .collect();
        if erased.len() > parity {
            return None;
        }
        let readable: Vec<usize> = (0..column_count)
            .filter(|i| columns[*i].is_some())
            .collect();
        let mut found: Option<(Vec<u8>, Vec<usize>)> = None;
        'search: for suspects in 0..=(parity - erased.len()) {
            for combo in combinations(&readable, suspects) {
                let mut trial = columns.clone();
                for &i in &combo {
                    trial[i] = None;
                }
                if map.reconstruct(&mut trial).is_err() {
                    continue;
                }
                let full: Vec<Vec<u8>> = trial.into_iter().map(|c| c.unwrap_or_default()).collect();
                let data = map.assemble(&full);
                if verify(&data) {
                    found = Some((data, combo));
                    break 'search;
                }
            }
        }
        let (data, mut bad) = found?;
        let good_columns = map.split(&data);
        if scrub {
            // Parity columns are only checked by recomputing them.
            for index in 0..parity {
                if let Some(read_back) = &columns[index] {
                    if *read_back != good_columns[index] && !bad.contains(&index) {
                        bad.push(index);
                    }
                }
            }
        }
        for &index in &bad {
            let child = &self.children[map.columns[index].child];
            for leaf in child.leaves() {
                VdevStats::bump(&leaf.stats.checksum_errors, 1);
                crate::spa::events::post(crate::spa::events::EngineEvent::Checksum {
                    vdev_guid: leaf.guid.0,
                    offset_bytes: map.columns[index].child_offset_bytes,
                    size_bytes: map.columns[index].size_bytes,
                    scan: matches!(mode, ReadMode::Scrub | ReadMode::Resilver),
                });
            }
        }
        let mut repaired_bytes = 0;
        let repair: Vec<usize> = bad
            .iter()
            .copied()
            .chain(erased.iter().copied().filter(|&i| {
                let child = &self.children[map.columns[i].child];
                child.state().is_usable() && (mode == ReadMode::Resilver || child.can_serve(birth))
            }))
            .collect();
        for index in repair {
            let column = &map.columns[index];
            let child = &self.children[column.child];
            if child
                .write_block(column.child_offset_bytes, &good_columns[index])
                .is_ok()
            {
                repaired_bytes += column.size_bytes;
                for leaf in child.leaves() {
                    VdevStats::bump(&leaf.stats.repaired_bytes, column.size_bytes);
                }
            }
        }
        Some(ReadOutcome {
            data,
            repaired_bytes,
        })
    }
}

/// Every `k`-element subset of `items`, in lexicographic order.
fn combinations(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current = Vec::with_capacity(k);
    fn walk(
        items: &[usize],
        k: usize,
        start: usize,
        current: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if current.len() == k {
            out.push(current.clone());
            return;
        }
        for i in start..items.len() {
            current.push(items[i]);
            walk(items, k, i + 1, current, out);
            current.pop();
        }
    }
    walk(items, k, 0, &mut current, &mut out);
    out
}

#[cfg(test)]
mod tests {
    /// The raidz search must try every subset of the right size exactly once.
    #[test]
    fn combinations_count() {
        let items: Vec<usize> = (0..6).collect();
        assert_eq!(super::combinations(&items, 0), vec![Vec::<usize>::new()]);
        assert_eq!(super::combinations(&items, 2).len(), 15);
        assert_eq!(super::combinations(&items, 3).len(), 20);
    }
}
