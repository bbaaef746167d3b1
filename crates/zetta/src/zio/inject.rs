//! Fault injection (OpenZFS `zio_inject.c`): handlers that make leaf I/O fail or return
//! damaged bytes, registered by `zinject` in the process that holds the pools (the daemon).
//!
//! Theory. A handler targets either a whole leaf device (by guid: `zinject -d`) or the
//! leaf ranges holding one file's data blocks (`zinject -t data`: every copy and every raidz
//! column, computed when the handler is added, as OpenZFS matches the logical block's
//! bookmark on each of its child I/Os). The hook sits at the bottom of the pipeline, in
//! `Vdev::leaf_read` / `leaf_write`, so everything above sees an injected fault exactly as it
//! sees real damage: a corrupted buffer fails its checksum (the leaf's CKSUM column counts
//! it, mirrors and raidz rebuild and rewrite it, ditto copies are tried), an I/O error counts
//! in READ/WRITE, a block with no good copy lands in the persistent error log.
//!
//! Determinism. Whether an I/O is hit is a pure function of (seed, leaf guid, offset) against
//! the handler's frequency, not a draw per call: the same block is "damaged" on every read,
//! whatever the thread interleaving, and a run repeats exactly with the same `--seed` (the
//! seed post's corruptor used `srand 32767` for the same reason). A device handler models
//! damage done once, when it is added: whatever is written to the leaf afterwards (a
//! repair, a new block) reads back intact, so a second scrub finds nothing new to repair;
//! a data handler keeps failing every read of its blocks until cleared, as OpenZFS's.
//!
//! Cost. `enabled()` is one relaxed atomic load; with no handler registered nothing else
//! runs. Locking: the handler list is a `RwLock` taken after any vdev or pool lock and
//! released before returning; a handler's written ranges are a `Mutex` taken under it.

use crate::vdev::{Vdev, VdevKind};
use crate::zio::blkptr::BlockPointer;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The I/O fails (EIO): counted in READ or WRITE.
    Io,
    /// The device does not answer (ENXIO, OpenZFS's default for `-d`): the I/O fails.
    Nxio,
    /// A read returns flipped bits (OpenZFS `corrupt`, EILSEQ on a device).
    Corrupt,
    /// A read returns bytes that fail their checksum (OpenZFS `checksum`, ECKSUM on data).
    Checksum,
}

impl FaultKind {
    /// OpenZFS's word for it (`err_to_str`).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Io => "io",
            FaultKind::Nxio => "nxio",
            FaultKind::Corrupt => "corrupt",
            FaultKind::Checksum => "checksum",
        }
    }
}

/// Which I/O a handler applies to (`-T`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoType {
    Read,
    Write,
    All,
}

impl IoType {
    pub fn name(self) -> &'static str {
        match self {
            IoType::Read => "read",
            IoType::Write => "write",
            IoType::All => "all",
        }
    }
    fn covers(self, write: bool) -> bool {
        match self {
            IoType::All => true,
            IoType::Read => !write,
            IoType::Write => write,
        }
    }
}

/// Where a handler applies.
#[derive(Clone, Debug)]
pub enum Target {
    /// A whole leaf device.
    Device { guid: u64 },
    /// One object's data blocks: (dataset object, object), and per leaf guid the byte
    /// ranges (offset → end) of the data region holding them.
    Data {
        objset: u64,
        object: u64,
        ranges: BTreeMap<u64, BTreeMap<u64, u64>>,
    },
}

/// A handler to register.
#[derive(Clone, Debug)]
pub struct HandlerSpec {
    pub pool: String,
    pub target: Target,
    pub fault: FaultKind,
    pub iotype: IoType,
    /// Parts per million of I/Os hit (OpenZFS `ZI_PERCENTAGE_MAX` = 1e6); 0 = every I/O.
    pub freq_ppm: u32,
    pub seed: u64,
}

/// A registered handler.
#[derive(Debug)]
pub struct Handler {
    pub id: u32,
    pub spec: HandlerSpec,
    /// Device handlers: the leaf ranges (offset → end, merged) written since the handler
    /// was added. The damage is done once, when the handler is added; what is written
    /// afterwards (a repair, a new block) is fresh and reads back intact.
    healed: Mutex<BTreeMap<u64, u64>>,
}

/// Adds [start, end) to a set of disjoint ranges, merging what it touches.
fn insert_range(ranges: &mut BTreeMap<u64, u64>, start: u64, end: u64) {
    let (mut start, mut end) = (start, end);
    let touching: Vec<(u64, u64)> = ranges
        .range(..=end)
        .rev()
        .take_while(|(_, &e)| e >= start)
        .map(|(&s, &e)| (s, e))
        .collect();
    for (s, e) in touching {
        ranges.remove(&s);
        start = start.min(s);
        end = end.max(e);
    }
    ranges.insert(start, end);
}

/// Whether [start, end) lies inside one range of the set.
fn covered(ranges: &BTreeMap<u64, u64>, start: u64, end: u64) -> bool {
    ranges
        .range(..=start)
        .next_back()
        .is_some_and(|(_, &e)| e >= end)
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT_ID: AtomicU32 = AtomicU32::new(1);
static HANDLERS: RwLock<Vec<Arc<Handler>>> = RwLock::new(Vec::new());

/// Whether any handler is registered: the only cost of injection on the I/O path.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Registers a handler; returns its id (1, 2, … for the process's life, as OpenZFS's).
pub fn register(spec: HandlerSpec) -> u32 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut handlers = HANDLERS.write();
    handlers.push(Arc::new(Handler {
        id,
        spec,
        healed: Mutex::new(BTreeMap::new()),
    }));
    ENABLED.store(true, Ordering::Relaxed);
    id
}

/// The registered handlers, in id order.
pub fn handlers() -> Vec<Arc<Handler>> {
    HANDLERS.read().clone()
}

/// Removes handler `id`; false if there is none.
pub fn clear(id: u32) -> bool {
    let mut handlers = HANDLERS.write();
    let before = handlers.len();
    handlers.retain(|h| h.id != id);
    ENABLED.store(!handlers.is_empty(), Ordering::Relaxed);
    handlers.len() != before
}

/// Removes every handler (of every pool when `pool` is None).
pub fn clear_all(pool: Option<&str>) {
    let mut handlers = HANDLERS.write();
    handlers.retain(|h| pool.is_some_and(|p| h.spec.pool != p));
    ENABLED.store(!handlers.is_empty(), Ordering::Relaxed);
}

/// SplitMix64 finalizer over (seed, guid, offset): the fixed "dice" of one leaf I/O.
fn roll(seed: u64, guid: u64, offset: u64) -> u64 {
    let mut z = seed
        ^ guid.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ offset.rotate_left(29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Handler {
    fn matches(&self, guid: u64, offset: u64, len: u64, write: bool) -> bool {
        let spec = &self.spec;
        if !spec.iotype.covers(write) {
            return false;
        }
        match &spec.target {
            Target::Device { guid: target } => {
                if *target != guid {
                    return false;
                }
                if covered(&self.healed.lock(), offset, offset.saturating_add(len)) {
                    return false;
                }
            }
            Target::Data { ranges, .. } => {
                let Some(leaf) = ranges.get(&guid) else {
                    return false;
                };
                let end = offset.saturating_add(len);
                // The last range starting before `end` overlaps if it ends after `offset`.
                let overlaps = leaf
                    .range(..end)
                    .next_back()
                    .is_some_and(|(_, &range_end)| range_end > offset);
                if !overlaps {
                    return false;
                }
            }
        }
        spec.freq_ppm == 0 || roll(spec.seed, guid, offset) % 1_000_000 < u64::from(spec.freq_ppm)
    }
}

/// The outcome of a leaf read after injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFault {
    /// Fail the read with an I/O error.
    Io,
    /// The buffer was damaged in place.
    Damaged,
}

/// Called by `Vdev::leaf_read` after a successful device read (only when `enabled()`).
pub fn on_leaf_read(guid: u64, offset: u64, buffer: &mut [u8]) -> Option<ReadFault> {
    let handlers = HANDLERS.read();
    for handler in handlers.iter() {
        if !handler.matches(guid, offset, buffer.len() as u64, false) {
            continue;
        }
        match handler.spec.fault {
            FaultKind::Io | FaultKind::Nxio => return Some(ReadFault::Io),
            FaultKind::Corrupt | FaultKind::Checksum => {
                if buffer.is_empty() {
                    return Some(ReadFault::Io);
                }
                // Flip every bit of a few bytes: any checksum the pool uses sees it.
                let dice = roll(handler.spec.seed, guid, !offset);
                for k in 0..4u64 {
                    let at = (dice.rotate_left(16 * k as u32) % buffer.len() as u64) as usize;
                    buffer[at] = !buffer[at];
                }
                return Some(ReadFault::Damaged);
            }
        }
    }
    None
}

/// Called by `Vdev::leaf_write` before the device write (only when `enabled()`): true when
/// the write is to fail. A write that goes through is fresh data for device handlers.
pub fn on_leaf_write(guid: u64, offset: u64, len: u64) -> bool {
    let handlers = HANDLERS.read();
    let end = offset.saturating_add(len);
    for handler in handlers.iter() {
        if handler.matches(guid, offset, len, true)
            && matches!(handler.spec.fault, FaultKind::Io | FaultKind::Nxio)
        {
            return true;
        }
    }
    for handler in handlers.iter() {
        if matches!(handler.spec.target, Target::Device { guid: g } if g == guid) {
            insert_range(&mut handler.healed.lock(), offset, end);
        }
    }
    false
}

/// Adds to `ranges` (leaf guid → offset → end) every leaf byte range holding a copy or a
/// raidz column of `bp`, on the pool whose root vdev is `root`.
pub fn add_leaf_ranges(
    root: &Vdev,
    bp: &BlockPointer,
    ranges: &mut BTreeMap<u64, BTreeMap<u64, u64>>,
) {
    for dva in bp.dvas.iter().filter(|d| !d.is_empty()) {
        let Some(top) = root.children.get(dva.vdev as usize) else {
            continue;
        };
        let mut add = |guid: u64, offset: u64, len: u64| {
            let leaf = ranges.entry(guid).or_default();
            let end = offset.saturating_add(len);
            let entry = leaf.entry(offset).or_insert(end);
            *entry = (*entry).max(end);
        };
        match top.kind {
            VdevKind::Raidz { .. } => {
                let psize = crate::types::round_up_shift(u64::from(bp.psize_bytes), top.ashift);
                if let Ok(map) = top.raidz_map(dva.offset_bytes, psize) {
                    for column in &map.columns {
                        if let Some(child) = top.children.get(column.child) {
                            for leaf in child.leaves() {
                                add(leaf.guid.0, column.child_offset_bytes, column.size_bytes);
                            }
                        }
                    }
                }
            }
            _ => {
                for leaf in top.leaves() {
                    add(leaf.guid.0, dva.offset_bytes, dva.asize_bytes);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_cover() {
        let mut r = BTreeMap::new();
        insert_range(&mut r, 10, 20);
        insert_range(&mut r, 30, 40);
        assert!(covered(&r, 12, 20));
        assert!(!covered(&r, 15, 35));
        insert_range(&mut r, 20, 30);
        assert_eq!(r.len(), 1);
        assert!(covered(&r, 15, 35));
        insert_range(&mut r, 0, 5);
        assert!(!covered(&r, 4, 11));
        assert!(!covered(&r, 40, 41));
    }

    #[test]
    fn roll_is_a_pure_function() {
        assert_eq!(roll(1, 2, 3), roll(1, 2, 3));
        assert_ne!(roll(1, 2, 3), roll(1, 2, 4));
        // About 5% of offsets at 50_000 ppm.
        let hits = (0..100_000u64)
            .filter(|o| roll(32767, 9, o * 4096) % 1_000_000 < 50_000)
            .count();
        assert!((4_000..6_000).contains(&hits), "{hits}");
    }
}
