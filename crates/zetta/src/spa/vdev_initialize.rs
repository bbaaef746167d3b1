//! Initializing a leaf's free space (OpenZFS `vdev_initialize.c`), and the machinery it
//! shares with TRIM (`spa::vdev_trim`): per-leaf state kept in the leaf's vdev ZAP, the
//! walk over the free ranges of the leaf's top-level vdev, progress for `zpool status`.
//!
//! ```text
//! leaf ZAP  com.delphix:vdev_initialize_state        u64  vdev_initializing_state_t
//!           com.delphix:vdev_initialize_action_time  u64  start (or end) time, seconds
//!           com.delphix:next_offset_to_initialize    u64  leaf physical offset (label
//!                                                         area included) done up to
//!           org.zfsonlinux:vdev_trim_state / _action_time / next_offset_to_trim /
//!           _rate / _partial / _secure               u64  the same for TRIM
//! ```
//!
//! Theory. A leaf's share of the pool's free space is the free tree of every metaslab of
//! its top-level vdev, translated to the leaf (`vdev_xlate`): the same offsets on a disk
//! or a mirror child, the child's rows of each range on raidz. That tree excludes what a
//! crash could still need: space allocated in the open txg is `recorded`/`fresh`, space
//! freed in this txg or the two before is `deferred` (`zetta_metaslab::Metaslab`'s
//! invariants), and the free tree is only handed out under `zio.allocator`'s lock. A step
//! takes that lock, finds the next free range at or past the leaf's cursor, writes the
//! pattern (`zfs_initialize_value`, OpenZFS's default 0xdeadbeefdeadbeee) over at most one
//! chunk of it (or discards it, for TRIM), moves the cursor and lets go: no allocation can
//! land in a chunk while it is written (OpenZFS disables the metaslab's allocations for
//! the same reason, `metaslab_disable`), and a block allocated there afterwards is written
//! after the pattern. The cursor reaches the ZAP in the open txg; a power cut in the middle
//! of a chunk leaves part of free space patterned and the ZAP at an older offset, which
//! the resumed walk writes again: nothing live is ever touched, so no crash finds a block
//! overwritten. State changes (start, suspend, cancel, complete, uninitialize) are
//! written to the ZAP in the open txg too, as `vdev_initialize_change_state` does, so a
//! suspended or running initialize resumes after export/import or a daemon restart.
//!
//! The steps are driven by the caller (the daemon runs one thread per leaf and activity,
//! `zetta-cli`'s `zpool::initialize`): this module keeps no thread of its own.

use super::*;
use crate::dsl::zap_error;
use crate::vdev::label::DATA_START_BYTES;
use crate::vdev::VdevKind;
use std::collections::BTreeMap;

/// OpenZFS's `zfs_initialize_value` default (`0xdeadbeefdeadbeee`).
pub const INITIALIZE_VALUE_DEFAULT: u64 = 0xdead_beef_dead_beee;
/// The pattern written by `zpool initialize` (`zfs_initialize_value`, a tunable).
pub static INITIALIZE_VALUE: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(INITIALIZE_VALUE_DEFAULT);
/// Bytes one initialize write covers (`zfs_initialize_chunk_size`, 1 MiB).
pub const INITIALIZE_CHUNK_BYTES: u64 = 1 << 20;

pub const ZAP_INITIALIZE_LAST_OFFSET: &str = "com.delphix:next_offset_to_initialize";
pub const ZAP_INITIALIZE_STATE: &str = "com.delphix:vdev_initialize_state";
pub const ZAP_INITIALIZE_ACTION_TIME: &str = "com.delphix:vdev_initialize_action_time";
pub const ZAP_TRIM_LAST_OFFSET: &str = "org.zfsonlinux:next_offset_to_trim";
pub const ZAP_TRIM_STATE: &str = "org.zfsonlinux:vdev_trim_state";
pub const ZAP_TRIM_ACTION_TIME: &str = "org.zfsonlinux:vdev_trim_action_time";
pub const ZAP_TRIM_RATE: &str = "org.zfsonlinux:vdev_trim_rate";
pub const ZAP_TRIM_PARTIAL: &str = "org.zfsonlinux:vdev_trim_partial";
pub const ZAP_TRIM_SECURE: &str = "org.zfsonlinux:vdev_trim_secure";

/// Which background activity over free space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Activity {
    Initialize,
    Trim,
}

impl Activity {
    fn keys(self) -> [&'static str; 3] {
        match self {
            Activity::Initialize => [
                ZAP_INITIALIZE_STATE,
                ZAP_INITIALIZE_ACTION_TIME,
                ZAP_INITIALIZE_LAST_OFFSET,
            ],
            Activity::Trim => [ZAP_TRIM_STATE, ZAP_TRIM_ACTION_TIME, ZAP_TRIM_LAST_OFFSET],
        }
    }
}

/// `vdev_initializing_state_t` / `vdev_trim_state_t` (same numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeafState {
    #[default]
    None = 0,
    Active = 1,
    Canceled = 2,
    Suspended = 3,
    Complete = 4,
}

impl LeafState {
    fn from_u64(value: u64) -> LeafState {
        match value {
            1 => LeafState::Active,
            2 => LeafState::Canceled,
            3 => LeafState::Suspended,
            4 => LeafState::Complete,
            _ => LeafState::None,
        }
    }
}

/// One leaf's initialize or TRIM state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafProgress {
    pub state: LeafState,
    /// Seconds since the epoch: when it started (kept across a suspend) or ended.
    pub action_time: u64,
    /// Leaf physical offset (label area included) done up to; 0 = from the start.
    pub last_offset: u64,
    /// TRIM only: requested rate in bytes per second (0 = unlimited), partial, secure.
    pub rate: u64,
    pub partial: u64,
    pub secure: u64,
}

/// Every leaf's states, by leaf guid (memory; the ZAPs are the persistent copy).
#[derive(Debug, Default)]
pub struct LeafActivities {
    map: BTreeMap<(Activity, u64), LeafProgress>,
}

/// What `zpool initialize` / `zpool trim` asks of one leaf (`pool_initialize_func_t`,
/// `pool_trim_func_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityCommand {
    Start,
    Cancel,
    Suspend,
    /// Initialize only: forget the state (`POOL_INITIALIZE_UNINIT`).
    Uninit,
}

/// Why a leaf refused a command, as the kernel's errno (libzfs words each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityError {
    /// ENODEV: "no such device in pool".
    NoDevice,
    /// EINVAL / EROFS: "invalid device".
    BadDevice,
    /// EBUSY: "currently initializing" / "currently trimming".
    Busy,
    /// ESRCH: "there is no active initialization" / "there is no active trim".
    NotActive,
    /// EOPNOTSUPP: "trim operations are not supported by this device".
    NotSupported,
}

/// The state `command` moves a leaf in `state` to, or why it may not (the checks of
/// OpenZFS's `spa_vdev_initialize_impl` and `spa_vdev_trim_impl`, the same for both);
/// `Uninit` is initialize's alone (trim refuses it before asking).
pub(crate) fn next_leaf_state(
    command: ActivityCommand,
    state: LeafState,
) -> Result<LeafState, ActivityError> {
    match command {
        ActivityCommand::Start if state == LeafState::Active => Err(ActivityError::Busy),
        ActivityCommand::Start => Ok(LeafState::Active),
        ActivityCommand::Cancel if !matches!(state, LeafState::Active | LeafState::Suspended) => {
            Err(ActivityError::NotActive)
        }
        ActivityCommand::Cancel => Ok(LeafState::Canceled),
        ActivityCommand::Suspend if state != LeafState::Active => Err(ActivityError::NotActive),
        ActivityCommand::Suspend => Ok(LeafState::Suspended),
        ActivityCommand::Uninit if state == LeafState::Active => Err(ActivityError::Busy),
        ActivityCommand::Uninit => Ok(LeafState::None),
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOutcome {
    /// Bytes written or discarded; more to do.
    Progress(u64),
    /// The walk reached the end: the state is now COMPLETE.
    Complete,
    /// The state is not ACTIVE (suspended, canceled, the leaf gone): the walker stops.
    Stopped,
}

/// A leaf's place under its top-level vdev, for `xlate`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeafPlace {
    pub top_id: u32,
    pub is_log: bool,
    pub ashift: u32,
    /// Raidz: (child index, children); otherwise the leaf's offsets are the top's.
    pub raidz: Option<(u64, u64)>,
}

/// `vdev_xlate`: the leaf range (data-region offsets) holding a top-level range.
pub(crate) fn xlate(place: &LeafPlace, start: u64, end: u64) -> (u64, u64) {
    match place.raidz {
        None => (start, end),
        Some((child, width)) => {
            // `vdev_raidz_xlate`: sector b of the top lives on child b % width, row b / width.
            let shift = place.ashift;
            let row = |b: u64| b / width + u64::from(b % width > child);
            let (b_start, b_end) = (start >> shift, end >> shift);
            (row(b_start) << shift, row(b_end) << shift)
        }
    }
}

impl LeafActivities {
    pub fn get(&self, activity: Activity, guid: u64) -> LeafProgress {
        self.map.get(&(activity, guid)).cloned().unwrap_or_default()
    }

    fn set(&mut self, activity: Activity, guid: u64, progress: LeafProgress) {
        if progress == LeafProgress::default() {
            self.map.remove(&(activity, guid));
        } else {
            self.map.insert((activity, guid), progress);
        }
    }

    /// Every (activity, leaf guid) whose state is ACTIVE: the walks to (re)start.
    pub fn active(&self) -> Vec<(Activity, u64)> {
        self.map
            .iter()
            .filter(|(_, p)| p.state == LeafState::Active)
            .map(|(k, _)| *k)
            .collect()
    }
}

impl Spa {
    /// Reads every leaf's initialize and TRIM state from its leaf ZAP (at import:
    /// `vdev_initialize_load`, `vdev_trim_load`). A ZAP that cannot be read leaves that
    /// leaf with no state (the activities are best effort, as in OpenZFS).
    pub(crate) fn leaf_activity_load(&mut self) {
        let ctx = io_ctx!(self);
        let mut loaded = LeafActivities::default();
        for leaf in self.root.leaves() {
            let zap = leaf.openzfs_keys.leaf();
            if zap == 0 {
                continue;
            }
            let word = |name: &str| -> u64 {
                crate::zap::zap_lookup(&self.dp.mos, &ctx, ObjectId(zap), name)
                    .ok()
                    .flatten()
                    .and_then(|words| words.first().copied())
                    .unwrap_or(0)
            };
            for activity in [Activity::Initialize, Activity::Trim] {
                let [state, time, offset] = activity.keys();
                let mut progress = LeafProgress {
                    state: LeafState::from_u64(word(state)),
                    action_time: word(time),
                    last_offset: word(offset),
                    ..LeafProgress::default()
                };
                if activity == Activity::Trim {
                    progress.rate = word(ZAP_TRIM_RATE);
                    progress.partial = word(ZAP_TRIM_PARTIAL);
                    progress.secure = word(ZAP_TRIM_SECURE);
                }
                loaded.set(activity, leaf.guid.0, progress);
            }
        }
        self.leaf_activity = loaded;
    }

    /// A leaf's state (NONE when it has none).
    pub fn leaf_progress(&self, activity: Activity, guid: u64) -> LeafProgress {
        self.leaf_activity.get(activity, guid)
    }

    /// The walks that should be running (state ACTIVE), for the daemon to start at import.
    pub fn leaf_activities_active(&self) -> Vec<(Activity, u64)> {
        if self.readonly {
            return Vec::new();
        }
        self.leaf_activity.active()
    }

    /// Where a leaf sits (`None`: no such leaf in the normal or log tree).
    pub(crate) fn leaf_place(&self, guid: u64) -> Option<LeafPlace> {
        for top in &self.root.children {
            if top.kind == VdevKind::Hole {
                continue;
            }
            let Some(leaf) = top.find_by_guid(Guid(guid)) else {
                continue;
            };
            if !leaf.is_leaf() {
                return None;
            }
            let raidz = match top.kind {
                VdevKind::Raidz { .. } => top
                    .children
                    .iter()
                    .position(|c| c.find_by_guid(Guid(guid)).is_some())
                    .map(|i| (i as u64, top.children.len() as u64)),
                _ => None,
            };
            return Some(LeafPlace {
                top_id: top.id as u32,
                is_log: top.is_log,
                ashift: top.ashift,
                raidz,
            });
        }
        None
    }

    /// The free ranges of a leaf, in its data-region offsets, in order.
    fn leaf_free_ranges(&self, place: &LeafPlace, from: u64) -> Vec<(u64, u64)> {
        let allocator = if place.is_log {
            self.zio.log_allocator.lock()
        } else {
            self.zio.allocator.lock()
        };
        let mut out = Vec::new();
        if let Some(group) = allocator.group(place.top_id) {
            for ms in &group.metaslabs {
                if xlate(place, ms.start_bytes, ms.end_bytes()).1 <= from {
                    continue;
                }
                for (start, size) in ms.free_tree().iter() {
                    let (s, e) = xlate(place, start, start + size);
                    if e > s && e > from {
                        out.push((s.max(from), e));
                    }
                }
            }
        }
        out
    }

    /// `(bytes done, bytes estimated)` of a leaf's walk (`vdev_initialize_calculate_progress`:
    /// the free space below the cursor over all free space, taken now).
    pub fn leaf_activity_bytes(&self, activity: Activity, guid: u64) -> (u64, u64) {
        let Some(place) = self.leaf_place(guid) else {
            return (0, 0);
        };
        let cursor = self
            .leaf_activity
            .get(activity, guid)
            .last_offset
            .saturating_sub(DATA_START_BYTES);
        let mut done = 0;
        let mut total = 0;
        for (s, e) in self.leaf_free_ranges(&place, 0) {
            total += e - s;
            done += e.min(cursor).saturating_sub(s);
        }
        (done, total)
    }

    /// Writes a leaf's state to its leaf ZAP in the open txg (`vdev_initialize_zap_update_sync`,
    /// `vdev_initialize_zap_remove_sync` when it has none).
    pub(crate) fn leaf_activity_persist(
        &mut self,
        activity: Activity,
        guid: u64,
    ) -> Result<(), SpaError> {
        if self.readonly {
            return Ok(());
        }
        let zap = match self.root.find_by_guid(Guid(guid)) {
            Some(leaf) => leaf.openzfs_keys.leaf(),
            None => return Ok(()),
        };
        if zap == 0 {
            // A leaf made in this txg gets its ZAP at the sync; the next step writes it.
            return Ok(());
        }
        let progress = self.leaf_activity.get(activity, guid);
        let ctx = io_ctx!(self);
        let [state, time, offset] = activity.keys();
        let mut words = vec![
            (state, progress.state as u64),
            (time, progress.action_time),
            (offset, progress.last_offset),
        ];
        if activity == Activity::Trim {
            words.push((ZAP_TRIM_RATE, progress.rate));
            words.push((ZAP_TRIM_PARTIAL, progress.partial));
            words.push((ZAP_TRIM_SECURE, progress.secure));
        }
        let mos = &mut self.dp.mos;
        if progress.state == LeafState::None {
            for (name, _) in words {
                match crate::zap::zap_remove(mos, &ctx, ObjectId(zap), name) {
                    Ok(()) | Err(crate::zap::ZapError::NotFound) => {}
                    Err(e) => return Err(zap_error(e)),
                }
            }
            return Ok(());
        }
        for (name, value) in words {
            // OpenZFS writes the offset only once there is one, the time once set.
            if value == 0 && name != state {
                continue;
            }
            crate::zap::zap_update(mos, &ctx, ObjectId(zap), name, &[value]).map_err(zap_error)?;
        }
        Ok(())
    }

    /// Checks a leaf for a command (`spa_vdev_initialize_impl`'s, `spa_vdev_trim_impl`'s
    /// checks) and returns its progress.
    pub(crate) fn leaf_activity_check(
        &self,
        guid: u64,
    ) -> Result<(LeafPlace, &crate::vdev::Vdev), ActivityError> {
        let Some(leaf) = self.root.find_by_guid(Guid(guid)) else {
            return Err(ActivityError::NoDevice);
        };
        if !leaf.is_leaf() {
            return Err(ActivityError::BadDevice);
        }
        let place = self.leaf_place(guid).ok_or(ActivityError::BadDevice)?;
        if self.readonly || !leaf.state().is_usable() {
            return Err(ActivityError::BadDevice);
        }
        Ok((place, leaf))
    }

    /// Applies a state change, stamping the action time unless leaving a suspend
    /// (`vdev_initialize_change_state`), and writes it to the ZAP.
    pub(crate) fn leaf_activity_change(
        &mut self,
        activity: Activity,
        guid: u64,
        new_state: LeafState,
        edit: impl FnOnce(&mut LeafProgress),
    ) -> Result<(), SpaError> {
        let mut progress = self.leaf_activity.get(activity, guid);
        if (progress.state != LeafState::Suspended || new_state == LeafState::Suspended)
            && progress.state != new_state
        {
            progress.action_time = now_secs();
        }
        progress.state = new_state;
        edit(&mut progress);
        if new_state == LeafState::None {
            progress = LeafProgress::default();
        }
        self.leaf_activity.set(activity, guid, progress);
        self.leaf_activity_persist(activity, guid)?;
        Ok(())
    }

    /// `zpool initialize [-c|-s|-u]` on one leaf (`spa_vdev_initialize_impl`). Returns
    /// whether a walk must be started for it.
    pub fn initialize_command(
        &mut self,
        guid: u64,
        command: ActivityCommand,
    ) -> Result<Result<bool, ActivityError>, SpaError> {
        if let Err(e) = self.leaf_activity_check(guid) {
            return Ok(Err(e));
        }
        let state = self.leaf_activity.get(Activity::Initialize, guid).state;
        let next = match next_leaf_state(command, state) {
            Ok(next) => next,
            Err(e) => return Ok(Err(e)),
        };
        self.leaf_activity_change(Activity::Initialize, guid, next, |p| {
            // A walk that ended or was canceled starts over; a suspended one resumes.
            if command == ActivityCommand::Start
                && matches!(
                    state,
                    LeafState::Complete | LeafState::Canceled | LeafState::None
                )
            {
                p.last_offset = 0;
            }
        })?;
        Ok(Ok(next == LeafState::Active))
    }

    /// One step of a leaf's walk (see the module header): under `zio.allocator`'s lock,
    /// the next free range at or past the cursor, at most `chunk_bytes` of it written with
    /// the pattern (initialize) or discarded (TRIM, ranges under `min_bytes` skipped).
    pub fn leaf_activity_step(
        &mut self,
        activity: Activity,
        guid: u64,
        chunk_bytes: u64,
    ) -> Result<StepOutcome, SpaError> {
        let progress = self.leaf_activity.get(activity, guid);
        if progress.state != LeafState::Active {
            return Ok(StepOutcome::Stopped);
        }
        let Ok((place, leaf)) = self.leaf_activity_check(guid) else {
            return Ok(StepOutcome::Stopped);
        };
        let device = leaf.device.clone();
        let cursor = progress.last_offset.saturating_sub(DATA_START_BYTES);
        let min_bytes = match activity {
            Activity::Initialize => 0,
            Activity::Trim => crate::spa::vdev_trim::TRIM_EXTENT_BYTES_MIN,
        };
        // The allocator's lock is held from choosing the range to the end of its I/O.
        let outcome = {
            let _hold = if place.is_log {
                self.zio.log_allocator.lock()
            } else {
                self.zio.allocator.lock()
            };
            // (`leaf_free_ranges` takes the lock itself: read the tree through the guard.)
            let ranges = {
                let allocator = &*_hold;
                let mut out = Vec::new();
                if let Some(group) = allocator.group(place.top_id) {
                    'all: for ms in &group.metaslabs {
                        if xlate(&place, ms.start_bytes, ms.end_bytes()).1 <= cursor {
                            continue;
                        }
                        for (start, size) in ms.free_tree().iter() {
                            let (s, e) = xlate(&place, start, start + size);
                            let s = s.max(cursor);
                            if e > s && e - s >= min_bytes.max(1) {
                                out.push((s, e));
                                break 'all;
                            }
                        }
                    }
                }
                out
            };
            match ranges.first() {
                None => None,
                Some(&(start, end)) => {
                    let end = end.min(start + chunk_bytes);
                    let Some(device) = device else {
                        return Ok(StepOutcome::Stopped);
                    };
                    let result = match activity {
                        Activity::Initialize => {
                            let pattern = INITIALIZE_VALUE
                                .load(std::sync::atomic::Ordering::Relaxed)
                                .to_le_bytes();
                            let buffer: Vec<u8> = pattern
                                .iter()
                                .copied()
                                .cycle()
                                .take((end - start) as usize)
                                .collect();
                            leaf.leaf_write(start, &buffer)
                        }
                        Activity::Trim => device.discard(DATA_START_BYTES + start, end - start),
                    };
                    // Best effort, as OpenZFS: an I/O error is counted, the walk goes on
                    // (a leaf that faults stops it at the next step's check).
                    let _ = result;
                    Some((start, end))
                }
            }
        };
        match outcome {
            None => {
                self.leaf_activity_change(activity, guid, LeafState::Complete, |_| {})?;
                Ok(StepOutcome::Complete)
            }
            Some((start, end)) => {
                let mut progress = self.leaf_activity.get(activity, guid);
                progress.last_offset = DATA_START_BYTES + end;
                self.leaf_activity.set(activity, guid, progress);
                self.leaf_activity_persist(activity, guid)?;
                Ok(StepOutcome::Progress(end - start))
            }
        }
    }
}
