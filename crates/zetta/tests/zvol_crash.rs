//! Crash simulation of a volume's FLUSH: writes and frees on a volume, `volume_commit` (the
//! NBD server's FLUSH and FUA) and txg commits in a seeded order, the power cut after a
//! seeded number of device I/Os, then import (which replays the volume's intent log).
//!
//! Why: a FLUSH that returned is a promise to the guest's filesystem. Volume writes are
//! logged by position and their bytes copied when the log commits (as OpenZFS's
//! `zvol_log_write` with WR_NEED_COPY), and an interrupted commit leaves a valid prefix of
//! its records; so after the cut every byte must hold a value it had at or after the last
//! acknowledgement (FLUSH or txg commit) — never an older one (lost acknowledged data),
//! never one it never had (a torn or misapplied record). A failing seed replays exactly:
//! `ZETTA_ZVOL_SEED=<n> cargo test --release --test zvol_crash`; `ZETTA_ZVOL_SEEDS=<count>`
//! sets how many run (default 300).

mod common;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use zetta::io::{DeviceRef, PowerCutPolicy, SimDevice};
use zetta::rand::SeededRng;
use zetta::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec};
use zetta::zil::Commit;

const VOLUME: &str = "sim/vol";

/// Log records replayed over all seeds: the simulation must reach the replay path.
static REPLAYED: AtomicUsize = AtomicUsize::new(0);

fn run_seed(seed: u64) -> Result<(), String> {
    let mut rng = SeededRng::new(seed);
    zetta::rand::seed_thread(seed);
    let (mut spa, devices) = common::sim_pool(&mut rng, seed * 31, "v")?;
    let block = 4096u64 << rng.below(3);
    let size = block * (32 + rng.below(64));
    spa.create_volume(VOLUME, size, block)
        .map_err(|e| format!("create volume: {e}"))?;
    spa.sync().map_err(|e| e.to_string())?;

    let mut volume = vec![0u8; size as usize];
    let mut states: Vec<Vec<u8>> = vec![volume.clone()];
    let mut acked = 0usize;
    let mut logged = 0usize;
    let budget = Arc::new(AtomicI64::new(1 + rng.below(200) as i64));
    for device in &devices {
        device.arm_crash(budget.clone());
    }
    for _ in 0..(10 + rng.below(50)) {
        let result: Result<bool, String> = match rng.below(10) {
            0..=4 => {
                let len = 1 + rng.below(size.min(48 << 10));
                let offset = rng.below(size - len + 1);
                let mut data = vec![0u8; len as usize];
                rng.fill(&mut data);
                spa.volume_write(VOLUME, offset, &data)
                    .map(|()| {
                        volume[offset as usize..(offset + len) as usize].copy_from_slice(&data);
                        true
                    })
                    .map_err(|e| e.to_string())
            }
            5 => {
                let len = 1 + rng.below(size.min(64 << 10));
                let offset = rng.below(size - len + 1);
                spa.volume_free(VOLUME, offset, len)
                    .map(|()| {
                        volume[offset as usize..(offset + len) as usize].fill(0);
                        true
                    })
                    .map_err(|e| e.to_string())
            }
            6..=8 => match spa.volume_commit(VOLUME) {
                Ok(commit) => {
                    if matches!(commit, Commit::Written { .. }) {
                        logged += 1;
                    }
                    acked = states.len() - 1;
                    Ok(false)
                }
                Err(e) => Err(e.to_string()),
            },
            _ => match spa.sync() {
                Ok(_) => {
                    acked = states.len() - 1;
                    Ok(false)
                }
                Err(e) => Err(e.to_string()),
            },
        };
        match result {
            Ok(true) => states.push(volume.clone()),
            Ok(false) => {}
            // The power went during this operation: the process dies here.
            Err(_) => break,
        }
    }
    let mut spa = common::cut_and_import(spa, &devices)?;
    for (_, report) in &spa.zil_replayed {
        REPLAYED.fetch_add(report.records, Ordering::Relaxed);
    }
    let observed = spa
        .volume_read(VOLUME, 0, size as usize)
        .map_err(|e| format!("read after the cut: {e}"))?;
    let allowed = &states[acked..];
    for (at, byte) in observed.iter().enumerate() {
        if !allowed.iter().any(|state| state[at] == *byte) {
            return Err(format!(
                "byte {at} is {byte:#04x} after the cut; since the last acknowledgement \
                 (state {acked} of {}, {logged} log commits) it was only {:?}",
                states.len() - 1,
                allowed.iter().map(|s| s[at]).collect::<Vec<_>>()
            ));
        }
    }
    let stats = spa.scrub(None).map_err(|e| format!("scrub: {e}"))?;
    if stats.errors != 0 {
        return Err(format!("scrub after the cut found {} errors", stats.errors));
    }
    // The volume keeps working, its log too.
    spa.volume_write(VOLUME, 0, &[7u8; 512])
        .map_err(|e| e.to_string())?;
    spa.volume_commit(VOLUME).map_err(|e| e.to_string())?;
    spa.sync().map_err(|e| e.to_string())?;
    Ok(())
}

#[test]
fn flushed_volume_writes_survive_power_cuts() {
    let ran = common::run_seeds("ZETTA_ZVOL", "zvol crash", 300, run_seed);
    let replayed = REPLAYED.load(Ordering::Relaxed);
    eprintln!("zvol crash simulation: {ran} power cuts survived, {replayed} log records replayed");
    assert!(ran < 50 || replayed > 0, "no seed replayed a volume's log");
}

// Why: FLUSH used to commit the whole txg; a volume's FLUSH must go through its intent log
// (a few log blocks, the txg left open) once the log exists, and what it acknowledged must
// come back after a cut with no txg commit at all, replayed from the log at import.
#[test]
fn a_flush_commits_the_log_not_the_txg_and_import_replays_it() {
    let device = Arc::new(SimDevice::new("/sim/l0", 96 << 20, 5));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/sim/l0".to_string(), device.clone() as DeviceRef)],
        is_log: false,
    };
    let mut spa = Spa::create("sim", &[spec], &CreateOptions::default()).unwrap();
    spa.create_volume(VOLUME, 1 << 20, 16 << 10).unwrap();
    // The first commit of a volume without a log commits the txg and creates the log.
    spa.volume_write(VOLUME, 0, &[1u8; 4096]).unwrap();
    assert_eq!(spa.volume_commit(VOLUME).unwrap(), Commit::NeedTxgSync);
    let synced = spa.last_synced_txg();
    spa.volume_write(VOLUME, 8192, &[2u8; 10_000]).unwrap();
    spa.volume_free(VOLUME, 1024, 1024).unwrap();
    let commit = spa.volume_commit(VOLUME).unwrap();
    assert!(
        matches!(commit, Commit::Written { records: 2, .. }),
        "{commit:?}"
    );
    assert_eq!(
        spa.last_synced_txg(),
        synced,
        "a log commit left the txg open"
    );
    drop(spa);
    device.power_cut(PowerCutPolicy::Random);
    let refs = vec![device.clone() as DeviceRef];
    let found = find_pools(&refs);
    let mut spa = Spa::import(&found[0], None, 32 << 20).unwrap();
    let replayed: Vec<_> = spa
        .zil_replayed
        .iter()
        .map(|(n, r)| (n.clone(), r.records))
        .collect();
    assert_eq!(replayed, vec![(VOLUME.to_string(), 2)]);
    let data = spa.volume_read(VOLUME, 0, 20_000).unwrap();
    assert!(data[..1024].iter().all(|&b| b == 1));
    assert!(
        data[1024..2048].iter().all(|&b| b == 0),
        "the free replayed"
    );
    assert!(data[2048..4096].iter().all(|&b| b == 1));
    assert!(
        data[8192..18_192].iter().all(|&b| b == 2),
        "the write replayed"
    );
}
