//! Tunables: OpenZFS's module parameters (`ZFS_MODULE_PARAM`, read and written on Linux
//! through `/sys/module/zfs/parameters/NAME`) for a userspace engine.
//!
//! Each tunable has OpenZFS's name, unit and meaning, and one process-wide value: there is
//! one kernel module per host for OpenZFS, one daemon per run directory for Zetta. Values
//! are plain relaxed atomics — a reader sees the old or the new value, never a torn one,
//! and every user re-reads the value where OpenZFS does (the ARC bound at each resize, the
//! txg timeout at each wait of the sync thread, the dirty limit at each transaction).
//!
//! A value of 0 means "the default" where OpenZFS's does (`zfs_arc_max`, `zfs_arc_min`,
//! `zfs_arc_sys_free`); the effective value is then computed from the host's memory with
//! OpenZFS's formulas (`arc_default_max`, `arc_init`, `dsl_pool_init` on Linux). Setting a
//! tunable runs its `apply` hook, so that it takes effect at once or is refused: a value
//! that is stored but not applied would be a lie (the project's "nothing accepted that is
//! not done").
//!
//! Only a process that holds pools for others (the daemon) calls `activate`; until then
//! the library keeps its fixed per-pool defaults (`dmu::tx::ZFS_DIRTY_DATA_MAX`, the
//! caller's txg timeout), which tests and the crash simulation rely on.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// OpenZFS `SPA_MAXBLOCKSIZE` (16 MiB): `arc_c_min` is at least two of them.
const SPA_MAXBLOCKSIZE: u64 = 16 << 20;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static ZFS_ARC_MAX: AtomicU64 = AtomicU64::new(0);
static ZFS_ARC_MIN: AtomicU64 = AtomicU64::new(0);
static ZFS_ARC_SYS_FREE: AtomicU64 = AtomicU64::new(0);
static ZFS_DIRTY_DATA_MAX: AtomicU64 = AtomicU64::new(0);
static ZFS_TXG_TIMEOUT: AtomicU64 = AtomicU64::new(5);

/// Why a tunable could not be read or set; worded as the CLI prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunableError {
    /// No tunable of that name.
    Unknown(String),
    /// Not a number this tunable takes.
    BadValue { name: &'static str, value: String },
    /// A number outside the tunable's range.
    OutOfRange {
        name: &'static str,
        value: u64,
        why: &'static str,
    },
}

impl fmt::Display for TunableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunableError::Unknown(name) => write!(f, "unknown tunable '{name}'"),
            TunableError::BadValue { name, value } => {
                write!(f, "invalid value '{value}' for '{name}': expected a number")
            }
            TunableError::OutOfRange { name, value, why } => {
                write!(f, "invalid value '{value}' for '{name}': {why}")
            }
        }
    }
}

impl std::error::Error for TunableError {}

/// One tunable: its OpenZFS name, a line describing it, and its storage.
pub struct Tunable {
    pub name: &'static str,
    pub description: &'static str,
    value: &'static AtomicU64,
    check: fn(u64) -> Result<(), &'static str>,
}

impl Tunable {
    /// The value as set (0 where OpenZFS's 0 means "the default").
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }
}

/// Every tunable Zetta has, in the order `list` shows them.
pub static TUNABLES: [Tunable; 6] = [
    Tunable {
        name: "zfs_arc_max",
        description: "Max size of the ARC in bytes (0: the default, OpenZFS's arc_default_max)",
        value: &ZFS_ARC_MAX,
        check: check_arc_max,
    },
    Tunable {
        name: "zfs_arc_min",
        description: "Min size of the ARC in bytes (0: the default, 1/32 of memory)",
        value: &ZFS_ARC_MIN,
        check: check_arc_min,
    },
    Tunable {
        name: "zfs_arc_sys_free",
        description:
            "Bytes of memory the ARC leaves free to the host (0: the default, 1/64 of memory)",
        value: &ZFS_ARC_SYS_FREE,
        check: |_| Ok(()),
    },
    Tunable {
        name: "zfs_dirty_data_max",
        description:
            "Max dirty data of a pool in bytes (Zetta's default 256 MiB; OpenZFS's 10% of memory)",
        value: &ZFS_DIRTY_DATA_MAX,
        check: |v| {
            if v < 1 << 20 {
                Err("at least 1048576 (a dirty budget under 1 MiB cannot hold a record)")
            } else {
                Ok(())
            }
        },
    },
    Tunable {
        name: "zfs_txg_timeout",
        description: "Max seconds between txg commits of a pool with changes",
        value: &ZFS_TXG_TIMEOUT,
        check: |v| {
            if v == 0 || v > 3600 {
                Err("between 1 and 3600 seconds")
            } else {
                Ok(())
            }
        },
    },
    Tunable {
        name: "metaslab_aliquot",
        description: "Bytes a top-level vdev takes per turn of the allocator's rotor",
        value: &zetta_metaslab::allocator::METASLAB_ALIQUOT,
        check: |v| {
            if v < 512 {
                Err("at least 512")
            } else {
                Ok(())
            }
        },
    },
];

fn check_arc_max(v: u64) -> Result<(), &'static str> {
    // OpenZFS ignores (and warns about) a zfs_arc_max below 64 MiB or above memory; Zetta
    // refuses it, so that what `zetta tunable` shows is what the ARC does.
    if v != 0 && v < 64 << 20 {
        return Err("0 or at least 67108864 (64 MiB)");
    }
    if v != 0 && v > physical_memory_bytes() {
        return Err("more than the host's memory");
    }
    let min = ZFS_ARC_MIN.load(Ordering::Relaxed);
    if v != 0 && min != 0 && v < min {
        return Err("less than zfs_arc_min");
    }
    Ok(())
}

fn check_arc_min(v: u64) -> Result<(), &'static str> {
    if v != 0 && v < 2 * SPA_MAXBLOCKSIZE {
        return Err("0 or at least 33554432 (two 16 MiB blocks)");
    }
    if v != 0 && v > arc_c_max() {
        return Err("more than the ARC's max");
    }
    Ok(())
}

/// The tunable called `name`.
pub fn find(name: &str) -> Result<&'static Tunable, TunableError> {
    TUNABLES
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| TunableError::Unknown(name.to_string()))
}

/// Sets `name` to `value` (a decimal or 0x hexadecimal number, as sysfs takes them), after
/// its range check. The caller applies it (`on_change` hooks live with their owners).
pub fn set(name: &str, value: &str) -> Result<&'static Tunable, TunableError> {
    let tunable = find(name)?;
    let number = parse_number(value).ok_or_else(|| TunableError::BadValue {
        name: tunable.name,
        value: value.to_string(),
    })?;
    (tunable.check)(number).map_err(|why| TunableError::OutOfRange {
        name: tunable.name,
        value: number,
        why,
    })?;
    tunable.value.store(number, Ordering::Relaxed);
    Ok(tunable)
}

fn parse_number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Makes the tunables govern this process's pools (the daemon, at start). The dirty limit
/// keeps Zetta's default (`dmu::tx::ZFS_DIRTY_DATA_MAX`, 256 MiB) unless set: OpenZFS's
/// (`default_dirty_data_max`, 10% of memory up to 4 GiB) waits for per-txg dirty records
/// (issue 13) — a txg's write phase still holds the pool lock, so larger txgs would stall
/// readers and writers longer.
pub fn activate() {
    if ZFS_DIRTY_DATA_MAX.load(Ordering::Relaxed) == 0 {
        ZFS_DIRTY_DATA_MAX.store(crate::dmu::tx::ZFS_DIRTY_DATA_MAX, Ordering::Relaxed);
    }
    ACTIVE.store(true, Ordering::Relaxed);
}

/// Whether `activate` ran.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// The host's physical memory (`sysconf(_SC_PHYS_PAGES) * page size`, OpenZFS's allmem).
pub fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf has no memory preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(page)) {
        (Ok(pages), Ok(page)) if pages > 0 && page > 0 => pages.saturating_mul(page),
        _ => 1 << 30,
    }
}

/// OpenZFS's `arc_default_max` on Linux: 5/8 of memory, or all but 1 GiB, whichever is more.
pub fn default_arc_max(allmem: u64) -> u64 {
    let size = if allmem >= 1 << 30 {
        allmem - (1 << 30)
    } else {
        default_arc_min(allmem)
    };
    (allmem / 8 * 5).max(size)
}

/// OpenZFS's `arc_c_min` default: 1/32 of memory, at least two maximal blocks.
pub fn default_arc_min(allmem: u64) -> u64 {
    (allmem / 32).max(2 * SPA_MAXBLOCKSIZE)
}

/// OpenZFS's `arc_sys_free` default on Linux: 1/64 of memory, at least 512 KiB.
pub fn default_arc_sys_free(allmem: u64) -> u64 {
    (allmem / 64).max(512 << 10)
}

/// OpenZFS's `zfs_dirty_data_max` default: `zfs_dirty_data_max_percent` (10) of memory,
/// capped at `zfs_dirty_data_max_max` (25% of memory, at most 4 GiB).
pub fn default_dirty_data_max(allmem: u64) -> u64 {
    let max_max = (allmem / 4).min(4 << 30);
    (allmem / 10).min(max_max).max(1 << 20)
}

/// The ARC's max in bytes (`arc_c_max`): `zfs_arc_max`, or the default when it is 0.
pub fn arc_c_max() -> u64 {
    match ZFS_ARC_MAX.load(Ordering::Relaxed) {
        0 => default_arc_max(physical_memory_bytes()),
        set => set,
    }
}

/// The ARC's min in bytes (`arc_c_min`), never above its max.
pub fn arc_c_min() -> u64 {
    let min = match ZFS_ARC_MIN.load(Ordering::Relaxed) {
        0 => default_arc_min(physical_memory_bytes()),
        set => set,
    };
    min.min(arc_c_max())
}

/// Memory the ARC leaves to the host (`arc_sys_free`).
pub fn arc_sys_free() -> u64 {
    match ZFS_ARC_SYS_FREE.load(Ordering::Relaxed) {
        0 => default_arc_sys_free(physical_memory_bytes()),
        set => set,
    }
}

/// `zfs_dirty_data_max` when the tunables govern (`activate`), else `None`: the pool keeps
/// its own default.
pub fn dirty_data_max() -> Option<u64> {
    if !active() {
        return None;
    }
    match ZFS_DIRTY_DATA_MAX.load(Ordering::Relaxed) {
        0 => None,
        set => Some(set),
    }
}

/// `zfs_txg_timeout`.
pub fn txg_timeout() -> Duration {
    Duration::from_secs(ZFS_TXG_TIMEOUT.load(Ordering::Relaxed).max(1))
}

/// The ARC's target (`arc_c`) for a host with `available` bytes of memory to spare
/// (`MemAvailable`): the max while the host has more than `sys_free` free; below that the
/// ARC gives back the shortfall from its current `size` (`arc_reap_cb`/`arc_shrink`), never
/// going under `min`.
pub fn arc_target(available: u64, sys_free: u64, size: u64, min: u64, max: u64) -> u64 {
    if available >= sys_free {
        return max;
    }
    let shortfall = sys_free - available;
    size.saturating_sub(shortfall).clamp(min.min(max), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: the defaults must be OpenZFS's formulas (arc_os.c `arc_default_max`, arc.c
    // `arc_init`, dsl_pool.c), computed for this host's memory; an admin reading
    // /sys/module/zfs/parameters on OpenZFS and `zetta tunable` here sees the same numbers.
    #[test]
    fn defaults_follow_openzfs_formulas() {
        let gib = 1u64 << 30;
        // 24 GiB: all but 1 GiB beats 5/8.
        assert_eq!(default_arc_max(24 * gib), 23 * gib);
        // 2 GiB: 5/8 beats all but 1 GiB.
        assert_eq!(default_arc_max(2 * gib), 2 * gib / 8 * 5);
        assert_eq!(default_arc_min(24 * gib), 24 * gib / 32);
        assert_eq!(default_arc_min(512 << 20), 32 << 20);
        assert_eq!(default_arc_sys_free(24 * gib), 24 * gib / 64);
        // 10% of 24 GiB is under the 4 GiB cap; 10% of 64 GiB is not.
        assert_eq!(default_dirty_data_max(24 * gib), 24 * gib / 10);
        assert_eq!(default_dirty_data_max(64 * gib), 4 * gib);
    }

    // Why: a value that cannot take effect must be refused with the reason, never stored.
    #[test]
    fn bad_names_and_values_are_refused_and_change_nothing() {
        assert_eq!(
            set("zfs_no_such", "1").err(),
            Some(TunableError::Unknown("zfs_no_such".into()))
        );
        let before = find("zfs_txg_timeout").map(Tunable::get).ok();
        assert!(matches!(
            set("zfs_txg_timeout", "soon"),
            Err(TunableError::BadValue { .. })
        ));
        assert!(matches!(
            set("zfs_txg_timeout", "0"),
            Err(TunableError::OutOfRange { .. })
        ));
        assert!(matches!(
            set("zfs_arc_max", "1048576"),
            Err(TunableError::OutOfRange { .. })
        ));
        assert_eq!(find("zfs_txg_timeout").map(Tunable::get).ok(), before);
        assert_eq!(parse_number("0x10"), Some(16));
    }

    // Why: under host memory pressure the ARC must give memory back (issue 16), down to
    // its min and no further; with memory to spare it may grow to its max again.
    #[test]
    fn arc_target_gives_back_the_shortfall() {
        let mib = 1u64 << 20;
        assert_eq!(
            arc_target(900 * mib, 100 * mib, 500 * mib, 64 * mib, 1024 * mib),
            1024 * mib
        );
        assert_eq!(
            arc_target(60 * mib, 100 * mib, 500 * mib, 64 * mib, 1024 * mib),
            460 * mib
        );
        assert_eq!(
            arc_target(0, 100 * mib, 120 * mib, 64 * mib, 1024 * mib),
            64 * mib
        );
    }
}
