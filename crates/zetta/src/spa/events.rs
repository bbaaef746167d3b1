//! The engine's side of `zpool events` (OpenZFS `zfs_fm.c`, `fm.c`): the moments an
//! event is due — a checksum or I/O error on a leaf, a block with no good copy, a scan
//! starting or ending — queued as small raw records for the process holding the pools
//! to turn into OpenZFS's ereports and sysevents (`zetta-cli`'s `zpool::events`), which
//! knows the pool's name, the vdev's path and the event log.
//!
//! Theory: nothing is queued until a holder calls `listen(true)` (the daemon does); until
//! then a post costs one relaxed atomic load, on error paths only. The queue is bounded by
//! `PENDING_MAX`; what does not fit is counted (`dropped`), as OpenZFS drops zevents past
//! `zfs_zevent_len_max` and `zpool events` prints "dropped N events". Per leaf and class,
//! at most `PER_VDEV_PER_SECOND` reports are queued each second (OpenZFS's
//! `zfs_checksum_events_per_second`, 20), so a dying disk cannot flood the log. Posting
//! takes only this module's mutex, never a pool lock: a post comes from inside reads
//! that run under the pool's lock, and the queue is drained with no lock held.

use crate::zio::Bookmark;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

/// Records waiting for the holder, at most.
pub const PENDING_MAX: usize = 1024;
/// Reports per leaf and class per second, at most (`zfs_checksum_events_per_second`).
pub const PER_VDEV_PER_SECOND: u32 = 20;

/// One moment worth an event, as the engine sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// A copy on leaf `vdev_guid` failed its checksum (`ereport.fs.zfs.checksum`).
    Checksum {
        vdev_guid: u64,
        offset_bytes: u64,
        size_bytes: u64,
        /// Met by a scrub or resilver read (ZIO_PRIORITY_SCRUB): the diagnosis ignores
        /// these, so a repair under way cannot degrade the pool further.
        scan: bool,
    },
    /// A read or write of leaf `vdev_guid` failed (`ereport.fs.zfs.io`).
    Io {
        vdev_guid: u64,
        offset_bytes: u64,
        size_bytes: u64,
        write: bool,
    },
    /// A block of the pool whose root vdev is `root_guid` had no good copy
    /// (`ereport.fs.zfs.data`).
    Data { root_guid: u64, bookmark: Bookmark },
    /// A scrub or resilver of pool `pool_guid` started (`sysevent.fs.zfs.scrub_start`,
    /// `resilver_start`).
    ScanStart { pool_guid: u64, resilver: bool },
    /// It ended (`scrub_finish`, `resilver_finish`; a canceled scrub is `scrub_abort`).
    ScanFinish {
        pool_guid: u64,
        resilver: bool,
        canceled: bool,
    },
}

static LISTENING: AtomicBool = AtomicBool::new(false);

struct Pending {
    events: VecDeque<EngineEvent>,
    dropped: u64,
    /// (leaf guid, class) → (second, reports queued in it).
    rate: HashMap<(u64, u8), (u64, u32)>,
}

static PENDING: Mutex<Option<Pending>> = Mutex::new(None);

/// Starts (or stops) queueing events.
pub fn listen(on: bool) {
    LISTENING.store(on, Ordering::Relaxed);
}

/// Whether a holder listens.
#[inline]
pub fn listening() -> bool {
    LISTENING.load(Ordering::Relaxed)
}

/// Queues `event` when someone listens (see the module comment for the bounds).
#[inline]
pub fn post(event: EngineEvent) {
    if listening() {
        post_slow(event);
    }
}

#[cold]
fn post_slow(event: EngineEvent) {
    let mut guard = PENDING.lock();
    let pending = guard.get_or_insert_with(|| Pending {
        events: VecDeque::new(),
        dropped: 0,
        rate: HashMap::new(),
    });
    let limited = match &event {
        EngineEvent::Checksum { vdev_guid, .. } => Some((*vdev_guid, 0u8)),
        EngineEvent::Io { vdev_guid, .. } => Some((*vdev_guid, 1u8)),
        _ => None,
    };
    if let Some(key) = limited {
        let second = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let slot = pending.rate.entry(key).or_insert((second, 0));
        if slot.0 != second {
            *slot = (second, 0);
        }
        if slot.1 >= PER_VDEV_PER_SECOND {
            return;
        }
        slot.1 += 1;
        if pending.rate.len() > PENDING_MAX {
            pending.rate.retain(|_, (s, _)| *s == second);
        }
    }
    if pending.events.len() >= PENDING_MAX {
        pending.dropped += 1;
        return;
    }
    pending.events.push_back(event);
}

/// Takes every queued event, oldest first, and how many were dropped since the last take.
pub fn take() -> (Vec<EngineEvent>, u64) {
    let mut guard = PENDING.lock();
    match guard.as_mut() {
        Some(pending) => {
            let dropped = std::mem::take(&mut pending.dropped);
            (pending.events.drain(..).collect(), dropped)
        }
        None => (Vec::new(), 0),
    }
}

/// Puts events that could not be handled yet back at the front of the queue.
pub fn put_back(events: Vec<EngineEvent>) {
    if events.is_empty() {
        return;
    }
    let mut guard = PENDING.lock();
    let pending = guard.get_or_insert_with(|| Pending {
        events: VecDeque::new(),
        dropped: 0,
        rate: HashMap::new(),
    });
    for event in events.into_iter().rev() {
        if pending.events.len() >= PENDING_MAX {
            pending.dropped += 1;
            continue;
        }
        pending.events.push_front(event);
    }
}
