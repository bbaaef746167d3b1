//! TRIM of a leaf's free space (OpenZFS `vdev_trim.c`, the manual `zpool trim` half).
//!
//! Theory. A manual TRIM walks the same free ranges as `zpool initialize` (the walk, the
//! allocator lock held per chunk, the per-leaf state in the leaf ZAP and resuming after
//! import are `spa::vdev_initialize`'s) and discards each range instead of writing it:
//! `fallocate(PUNCH_HOLE | KEEP_SIZE)` on a file vdev, `BLKDISCARD` on a block device
//! (`io::BlockDevice::discard`). Ranges under `zfs_trim_extent_bytes_min` (32 KiB) are
//! skipped and one discard covers at most `zfs_trim_extent_bytes_max` (128 MiB), as
//! OpenZFS does. A device that cannot discard refuses with EOPNOTSUPP (`vdev_has_trim`);
//! a secure TRIM needs `vdev_has_securetrim`, which no file and no device Zetta opens
//! offers (`BLKSECDISCARD` is not issued): it is refused the same way. The rate (`-r`)
//! is kept in the ZAP and applied by the walker (the daemon sleeps between discards).
//! A power cut mid-range leaves free space partly discarded and the cursor behind it:
//! discarded free space reads as zeros, which nothing live can notice.
//!
//! Not here: `autotrim=on` (TRIM of ranges as they are freed, `vdev_autotrim`): the
//! property is accepted and kept, freed ranges are not discarded yet.

use super::vdev_initialize::{
    next_leaf_state, Activity, ActivityCommand, ActivityError, LeafProgress, LeafState,
};
use super::*;

/// `zfs_trim_extent_bytes_min`: smaller free ranges are not discarded.
pub const TRIM_EXTENT_BYTES_MIN: u64 = 32 << 10;
/// `zfs_trim_extent_bytes_max`: one discard covers at most this much.
pub const TRIM_EXTENT_BYTES_MAX: u64 = 128 << 20;

impl Spa {
    /// Whether a leaf can be trimmed at all (`vs_trim_notsup` is its negation).
    pub fn leaf_supports_trim(&self, guid: u64) -> bool {
        self.root
            .find_by_guid(Guid(guid))
            .and_then(|leaf| leaf.device.as_ref())
            .is_some_and(|device| device.supports_discard())
    }

    /// `zpool trim [-c|-s] [-r rate] [-d]` on one leaf (`spa_vdev_trim_impl`). Returns
    /// whether a walk must be started for it.
    pub fn trim_command(
        &mut self,
        guid: u64,
        command: ActivityCommand,
        rate: u64,
        secure: bool,
    ) -> Result<Result<bool, ActivityError>, SpaError> {
        if let Err(e) = self.leaf_activity_check(guid) {
            return Ok(Err(e));
        }
        if command == ActivityCommand::Start && (!self.leaf_supports_trim(guid) || secure) {
            return Ok(Err(ActivityError::NotSupported));
        }
        let state = self.leaf_progress(Activity::Trim, guid).state;
        if command == ActivityCommand::Uninit {
            return Ok(Err(ActivityError::BadDevice));
        }
        let next = match next_leaf_state(command, state) {
            Ok(next) => next,
            Err(e) => return Ok(Err(e)),
        };
        self.leaf_activity_change(Activity::Trim, guid, next, |p: &mut LeafProgress| {
            if command == ActivityCommand::Start {
                if state != LeafState::Suspended {
                    p.last_offset = 0;
                }
                // A resumed TRIM keeps its rate unless a new one is given (ZTS's
                // zpool_trim_rate resumes a `-r 200M` TRIM with a bare `zpool trim`).
                if rate != 0 || state != LeafState::Suspended {
                    p.rate = rate;
                }
                p.secure = u64::from(secure);
            }
        })?;
        Ok(Ok(next == LeafState::Active))
    }
}
