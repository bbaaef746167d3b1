//! The daemon's diagnosis of failing devices (OpenZFS ZED's `zfs_diagnosis` and
//! `zfs_retire` agents, with `fmd_serd`'s engines): the zed worker hands it every event
//! before the zedlets run; checksum and I/O ereports of a leaf feed that leaf's SERD
//! engines, and an engine that fires turns into a verdict the worker carries out on the
//! pool: a leaf with too many checksum errors is DEGRADED (`zpool_vdev_degrade`), one
//! with too many I/O errors FAULTED (`zpool_vdev_fault`), both with VDEV_AUX_ERR_EXCEEDED
//! ("too many errors"), kept in the config until `zpool clear`. The vdev's state change
//! posts `resource.fs.zfs.statechange`, which the stock statechange zedlet reports.
//!
//! Theory: a SERD engine ("soft error rate discrimination") counts N events in T: it
//! keeps the times of the last N events and fires when the Nth lands within T of the
//! oldest (`fmd_serd_eng_record`), then stays fired, recording nothing, until its case
//! is closed. The engines are OpenZFS's defaults, checksum 10 in 600 s and io 10 in
//! 600 s, or the ereport's `vdev_cksum_n`/`_t`, `vdev_io_n`/`_t` when it carries them
//! (OpenZFS puts the vdev properties `checksum_n`… there; Zetta's vdevs have none of them
//! yet, so its ereports never carry them). Checksum errors met by a scrub or resilver
//! (`zio_priority` ZIO_PRIORITY_SCRUB) are not counted, so a repair cannot degrade the
//! pool further; only leaves (`disk`, `file`) are diagnosed. When an engine fires while
//! another leaf under the same parent has an engine counting, the case is retired
//! without a verdict (`zfs_other_serd_cases`): errors on both sides of a mirror point at
//! something they share, and faulting one side would leave the other alone. A
//! statechange of the leaf to ONLINE (after `zpool clear`) closes its case, its engines
//! starting again from zero. Like ZED's, the engines live in the daemon's memory: a
//! restart starts counting anew; the verdicts live in the pool's config.

use crate::daemon::log::{self, Level};
use crate::zpool::events::{Event, Value, ZIO_PRIORITY_SCRUB};
use std::collections::{HashMap, VecDeque};

/// `DEFAULT_CHECKSUM_N`, `DEFAULT_CHECKSUM_T` (seconds), `DEFAULT_IO_N`, `DEFAULT_IO_T`.
pub const DEFAULT_CHECKSUM_N: u64 = 10;
pub const DEFAULT_CHECKSUM_T: u64 = 600;
pub const DEFAULT_IO_N: u64 = 10;
pub const DEFAULT_IO_T: u64 = 600;
/// `vdev_state_t` VDEV_STATE_HEALTHY, as a statechange carries it.
const VDEV_STATE_HEALTHY: u64 = 7;

/// One SERD engine (`fmd_serd_eng_t`): fires at N events within T nanoseconds.
#[derive(Debug)]
pub struct Serd {
    n: u64,
    t_nanos: u64,
    /// Times of the events kept, newest last, at most `n`.
    times: VecDeque<u64>,
    fired: bool,
}

impl Serd {
    pub fn new(n: u64, t_secs: u64) -> Serd {
        Serd {
            n: n.max(1),
            t_nanos: t_secs.saturating_mul(1_000_000_000),
            times: VecDeque::new(),
            fired: false,
        }
    }

    /// Records an event at `nanos`; true when this one makes the engine fire
    /// (`fmd_serd_eng_record`). A fired engine records nothing more.
    pub fn record(&mut self, nanos: u64) -> bool {
        if self.fired {
            return false;
        }
        while self.times.len() as u64 >= self.n {
            self.times.pop_front();
        }
        self.times.push_back(nanos);
        let oldest = self.times.front().copied().unwrap_or(nanos);
        if self.times.len() as u64 >= self.n && nanos.saturating_sub(oldest) <= self.t_nanos {
            self.fired = true;
        }
        self.fired
    }

    /// Whether it is counting or has fired (`fmd_serd_active`).
    pub fn active(&self) -> bool {
        self.fired || !self.times.is_empty()
    }
}

/// What a fired engine asks of the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Checksum errors: `zpool_vdev_degrade`.
    Degrade,
    /// I/O errors: `zpool_vdev_fault`.
    Fault,
}

/// A verdict on one leaf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub pool: String,
    pub pool_guid: u64,
    pub vdev_guid: u64,
    pub vdev_path: String,
    pub action: Action,
}

/// One leaf's case (`zfs_case_t`): its engines, created at their first ereport.
#[derive(Debug)]
struct Case {
    pool_guid: u64,
    parent_guid: u64,
    checksum: Option<Serd>,
    io: Option<Serd>,
}

impl Case {
    fn engine(&self, action: Action) -> Option<&Serd> {
        match action {
            Action::Degrade => self.checksum.as_ref(),
            Action::Fault => self.io.as_ref(),
        }
    }
}

/// The open cases, by leaf guid.
#[derive(Debug, Default)]
pub struct Diagnosis {
    cases: HashMap<u64, Case>,
}

fn u64_of(event: &Event, name: &str) -> Option<u64> {
    match event.get(name)? {
        Value::U64(v) => Some(*v),
        Value::U32(v) => Some(u64::from(*v)),
        _ => None,
    }
}

impl Diagnosis {
    /// Takes one event (`zfs_fm_recv`); a verdict when it made an engine fire.
    pub fn observe(&mut self, event: &Event) -> Option<Verdict> {
        let class = event.class();
        let vdev_guid = u64_of(event, "vdev_guid")?;
        if class == "resource.fs.zfs.statechange" {
            if u64_of(event, "vdev_state") == Some(VDEV_STATE_HEALTHY) {
                self.cases.remove(&vdev_guid);
            }
            return None;
        }
        let action = match class {
            "ereport.fs.zfs.checksum" => Action::Degrade,
            "ereport.fs.zfs.io" => Action::Fault,
            _ => return None,
        };
        if !matches!(event.string("vdev_type"), Some("disk" | "file")) {
            return None;
        }
        if action == Action::Degrade
            && u64_of(event, "zio_priority") == Some(u64::from(ZIO_PRIORITY_SCRUB))
        {
            return None;
        }
        let pool_guid = u64_of(event, "pool_guid")?;
        let parent_guid = u64_of(event, "parent_guid").unwrap_or(0);
        let (secs, nanos) = event.time();
        let when = (secs.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(nanos.max(0) as u64);
        let case = self.cases.entry(vdev_guid).or_insert_with(|| Case {
            pool_guid,
            parent_guid,
            checksum: None,
            io: None,
        });
        let engine = match action {
            Action::Degrade => case.checksum.get_or_insert_with(|| {
                Serd::new(
                    u64_of(event, "vdev_cksum_n").unwrap_or(DEFAULT_CHECKSUM_N),
                    u64_of(event, "vdev_cksum_t").unwrap_or(DEFAULT_CHECKSUM_T),
                )
            }),
            Action::Fault => case.io.get_or_insert_with(|| {
                Serd::new(
                    u64_of(event, "vdev_io_n").unwrap_or(DEFAULT_IO_N),
                    u64_of(event, "vdev_io_t").unwrap_or(DEFAULT_IO_T),
                )
            }),
        };
        if !engine.record(when) {
            return None;
        }
        let peers = self
            .cases
            .iter()
            .filter(|(guid, other)| {
                **guid != vdev_guid
                    && other.pool_guid == pool_guid
                    && other.parent_guid == parent_guid
                    && other.engine(action).is_some_and(Serd::active)
            })
            .count();
        if peers > 0 {
            // `zfs_case_retire`: the case goes, no verdict.
            self.cases.remove(&vdev_guid);
            log::log(
                Level::Info,
                &format!(
                    "zed: pool {pool_guid} is tracking {peers} other cases -- skip faulting the vdev {vdev_guid}"
                ),
            );
            return None;
        }
        Some(Verdict {
            pool: event.string("pool")?.to_string(),
            pool_guid,
            vdev_guid,
            vdev_path: event.string("vdev_path").unwrap_or_default().to_string(),
            action,
        })
    }
}

/// Carries out a verdict on the daemon's pool (`zfs_retire_recv`): degrades or faults the
/// leaf, writes the config, posts the statechange. A pool gone or read-only meanwhile,
/// or a leaf already so, is left as it is.
pub fn retire(verdict: &Verdict) {
    use crate::zpool::pool;
    let Ok(mut imported) = pool::open_pool(&verdict.pool) else {
        return;
    };
    if imported.guid != verdict.pool_guid || imported.spa.readonly {
        return;
    }
    let Some(last) = imported
        .spa
        .leaf_by_guid(verdict.vdev_guid)
        .map(|leaf| leaf.state())
    else {
        return;
    };
    let changed = match verdict.action {
        Action::Degrade => imported.spa.degrade_leaf(verdict.vdev_guid),
        Action::Fault => imported.spa.fault_leaf(verdict.vdev_guid),
    };
    if !matches!(changed, Ok(true)) {
        return;
    }
    let word = match verdict.action {
        Action::Degrade => "degrade",
        Action::Fault => "fault",
    };
    log::log(
        Level::Warn,
        &format!(
            "zed: {word} vdev {} ({}) of pool {}: too many {} errors",
            verdict.vdev_guid,
            verdict.vdev_path,
            verdict.pool,
            if verdict.action == Action::Degrade {
                "checksum"
            } else {
                "I/O"
            }
        ),
    );
    if let Err(e) = pool::commit(&mut imported) {
        log::log(Level::Error, &format!("zed: {}", e.message()));
        return;
    }
    let mut changes = Vec::new();
    if let Some(leaf) = imported.spa.leaf_by_guid(verdict.vdev_guid) {
        if leaf.state() != last {
            changes.push(crate::zpool::events::statechange(&imported.spa, leaf, last));
        }
    }
    crate::zpool::events::pump(Some(&imported.spa), changes);
    replace_with_spare(&mut imported, verdict);
}

/// `zfs_retire`'s `replace_with_spare`: after a fault or degrade, the first of the pool's
/// available hot spares that takes the leaf's place (`zpool replace pool LEAF SPARE`)
/// stands in for it; none, or none that can, leaves the pool as it is.
fn replace_with_spare(imported: &mut crate::zpool::pool::Imported, verdict: &Verdict) {
    let leaf = verdict.vdev_guid.to_string();
    let candidates: Vec<String> = imported
        .spa
        .spares
        .iter()
        .filter(|s| s.device.is_some() && !imported.spa.spare_in_use(s.guid))
        .map(|s| s.path.clone())
        .collect();
    for spare in candidates {
        if imported.spa.replace_with_spare(&leaf, &spare).is_ok() {
            log::log(
                Level::Warn,
                &format!(
                    "zed: zpool_vdev_replace '{}' with spare '{spare}'",
                    verdict.vdev_path
                ),
            );
            imported
                .spa
                .log_history(&format!("zpool replace {} {leaf} {spare}", verdict.pool));
            if let Err(e) = crate::zpool::pool::commit(imported) {
                log::log(Level::Error, &format!("zed: {}", e.message()));
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ereport(class: &str, vdev: u64, parent: u64, secs: i64, priority: u32) -> Event {
        Event {
            fields: vec![
                ("class".into(), Value::Str(class.into())),
                ("pool".into(), Value::Str("tank".into())),
                ("pool_guid".into(), Value::U64(1)),
                ("vdev_guid".into(), Value::U64(vdev)),
                ("vdev_type".into(), Value::Str("file".into())),
                ("vdev_path".into(), Value::Str(format!("/d{vdev}"))),
                ("parent_guid".into(), Value::U64(parent)),
                ("zio_priority".into(), Value::U32(priority)),
                ("time".into(), Value::I64Array(vec![secs, 0])),
            ],
        }
    }

    /// Why: OpenZFS's engine fires at the Nth event within T, not before, and once.
    #[test]
    fn serd_fires_at_n_within_t_once() {
        let mut serd = Serd::new(3, 10);
        let s = 1_000_000_000u64;
        assert!(!serd.record(0));
        assert!(!serd.record(s));
        // The third, 20 s after the first: the oldest kept is too old.
        assert!(!serd.record(20 * s));
        assert!(!serd.record(21 * s));
        assert!(serd.record(22 * s), "3 within 10 s fires");
        assert!(!serd.record(23 * s), "a fired engine stays quiet");
        assert!(serd.active());
    }

    /// Why: the done-when's "checksum errors degrade after N": ten checksum ereports of a
    /// leaf within 600 s degrade it; scrub-found ones do not count; io ereports fault.
    #[test]
    fn ten_checksum_ereports_degrade_and_scrub_ones_do_not_count() {
        let mut diagnosis = Diagnosis::default();
        let class = "ereport.fs.zfs.checksum";
        for second in 0..20 {
            let event = ereport(class, 5, 9, second, ZIO_PRIORITY_SCRUB);
            assert_eq!(diagnosis.observe(&event), None, "scrub I/O is ignored");
        }
        for second in 0..9 {
            assert_eq!(diagnosis.observe(&ereport(class, 5, 9, second, 0)), None);
        }
        let verdict = diagnosis.observe(&ereport(class, 5, 9, 9, 0));
        assert_eq!(
            verdict.map(|v| (v.vdev_guid, v.action, v.pool)),
            Some((5, Action::Degrade, "tank".to_string()))
        );
        let mut diagnosis = Diagnosis::default();
        let io = (0..10)
            .filter_map(|s| diagnosis.observe(&ereport("ereport.fs.zfs.io", 6, 9, s, 0)))
            .map(|v| v.action)
            .collect::<Vec<_>>();
        assert_eq!(io, vec![Action::Fault]);
    }

    /// Why: errors on both sides of a mirror must not take both out
    /// (`zfs_other_serd_cases`); a statechange to ONLINE starts a leaf's count anew.
    #[test]
    fn peers_counting_retire_the_case_and_online_closes_it() {
        let mut diagnosis = Diagnosis::default();
        let class = "ereport.fs.zfs.checksum";
        assert_eq!(diagnosis.observe(&ereport(class, 7, 9, 0, 0)), None);
        for second in 0..10 {
            assert_eq!(diagnosis.observe(&ereport(class, 5, 9, second, 0)), None);
        }
        let mut online = ereport("resource.fs.zfs.statechange", 5, 9, 30, 0);
        online.fields.push(("vdev_state".into(), Value::U64(7)));
        let mut diagnosis = Diagnosis::default();
        for second in 0..10 {
            diagnosis.observe(&ereport(class, 5, 9, second, 0));
        }
        assert!(diagnosis.cases.contains_key(&5));
        diagnosis.observe(&online);
        assert!(!diagnosis.cases.contains_key(&5), "ONLINE closes the case");
        let fired = (40..50)
            .filter_map(|s| diagnosis.observe(&ereport(class, 5, 9, s, 0)))
            .count();
        assert_eq!(fired, 1, "a closed case counts again from zero");
    }
}
