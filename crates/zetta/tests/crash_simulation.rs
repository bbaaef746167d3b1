//! Deterministic crash simulation: the real engine on non-durable simulated devices, with
//! the power cut after a seeded number of device I/Os (pending writes then kept, dropped or
//! torn at random), in the mode the daemon runs: file data written early by the `Threaded`
//! writeback, whose batch the simulator (`io::SimWorld`) schedules at seeded points instead
//! of a thread, and half the harness's commits leave their tail (flushes, labels,
//! uberblocks) to the simulator as the daemon's sync thread runs it without the pool lock
//! (`spa::txg`), so the next txg fills while the cut lands before, inside or after the
//! tail. Every device has its own crash budget; the first to run out cuts the power
//! of all. Multi-device batches are issued in a seeded order, so a seed replays exactly on
//! every layout (single, 2-device stripe, mirror, raidz1, raidz2), byte for byte
//! (`every_seed_replays_exactly_on_every_layout`).
//!
//! Why: crash safety is the product. After every cut the pool must import at a txg no older
//! than the last `sync` that returned, every object must hold exactly what it held at the
//! imported txg, and a scrub must find every block intact. A failing seed is printed and
//! replays exactly: `ZETTA_SIM_SEED=<n> cargo test --release --test crash_simulation`.
//! `ZETTA_SIM_SEEDS=<count>` sets how many seeds run and `ZETTA_SIM_FIRST=<n>` the first
//! (default 2000 from 0; the soak profile in docs/PERFORMANCE.md runs 100000).

mod common;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
use zetta::io::{DeviceRef, PowerCutPolicy, SimDevice, SimWorld};
use zetta::rand::SeededRng;
use zetta::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec, WritebackMode};
use zetta::types::{ObjectId, Txg};
use zetta::zpl::zfs_vnops::{SyncMode, ZfsMount};
use zetta::zpl::{Creds, FileKind, Timespec, ZplError};

type Model = BTreeMap<u64, Vec<u8>>;
/// Snapshots (full name, the file's content in it), oldest first.
type Snapshots = Vec<(String, Vec<u8>)>;

// Coverage marks, per test thread (the tests of this binary run in parallel).
thread_local! {
    /// Promotes that completed before the cut (the run proves it reached them).
    static PROMOTES: Cell<u64> = const { Cell::new(0) };
    /// File data installed by early writes (`spa::writeback`) before the cuts.
    static WRITEBACK_BYTES: Cell<u64> = const { Cell::new(0) };
    /// Cuts that found an early batch queued, not yet run by the scheduler.
    static CUTS_WITH_BATCH_QUEUED: Cell<u64> = const { Cell::new(0) };
    /// Cuts whose power went off while the scheduler ran an early batch or a txg's tail.
    static CUTS_INSIDE_BATCH: Cell<u64> = const { Cell::new(0) };
    /// Commits whose tail the simulator scheduled (`Spa::sync_in_background`).
    static BACKGROUND_TAILS: Cell<u64> = const { Cell::new(0) };
    /// Cuts that found a txg syncing: its tail queued, running, or run and not retired.
    static CUTS_WITH_TXG_SYNCING: Cell<u64> = const { Cell::new(0) };
}

fn mark(counter: &'static std::thread::LocalKey<Cell<u64>>, amount: u64) {
    counter.with(|c| c.set(c.get() + amount));
}

fn marked(counter: &'static std::thread::LocalKey<Cell<u64>>) -> u64 {
    counter.with(|c| c.get())
}

/// What the pool must hold at a txg: the root dataset's objects, the file in `sim/a`, and
/// the set of extra filesystems.
#[derive(Clone, Debug, PartialEq)]
struct State {
    objects: Model,
    file_in_a: Vec<u8>,
    filesystems: std::collections::BTreeSet<String>,
    /// Snapshots of `sim/a` (or, after a promote, of the clone they moved to) and the
    /// file's content in each, oldest first.
    snapshots: Vec<(String, Vec<u8>)>,
    /// The origin snapshot of each clone (`zfs promote` moves these around).
    origins: BTreeMap<String, String>,
    /// Files (name → content) in the root directory of the ZPL filesystem `sim/z`.
    zpl_files: BTreeMap<String, Vec<u8>>,
}

struct World {
    sim: Arc<SimWorld>,
    devices: Vec<Arc<SimDevice>>,
}

impl World {
    fn new(seed: u64, count: usize) -> World {
        let sim = SimWorld::new(seed ^ 0x5343_4845_4455_4c45);
        World {
            devices: (0..count)
                .map(|i| {
                    Arc::new(SimDevice::in_world(
                        &format!("/sim/d{i}"),
                        80 << 20,
                        seed * 31 + i as u64,
                        &sim,
                    ))
                })
                .collect(),
            sim,
        }
    }

    /// What survived the cut on every device, byte for byte.
    fn durable_images(&self) -> Vec<Vec<(u64, Vec<u8>)>> {
        self.devices.iter().map(|d| d.durable_chunks()).collect()
    }

    fn refs(&self) -> Vec<DeviceRef> {
        self.devices
            .iter()
            .map(|d| d.clone() as DeviceRef)
            .collect()
    }

    fn spec(&self, kind: TopKind) -> Vec<TopSpec> {
        let leaves = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("/sim/d{i}"), d.clone() as DeviceRef))
            .collect::<Vec<_>>();
        match kind {
            TopKind::Single => leaves
                .into_iter()
                .map(|leaf| TopSpec {
                    kind: TopKind::Single,
                    leaves: vec![leaf],
                    is_log: false,
                })
                .collect(),
            _ => vec![TopSpec {
                kind,
                leaves,
                is_log: false,
            }],
        }
    }
}

fn random_data(rng: &mut SeededRng, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    if rng.below(2) == 0 {
        rng.fill(&mut data);
    } else {
        let byte = rng.next_u64() as u8;
        for (i, b) in data.iter_mut().enumerate() {
            *b = byte.wrapping_add((i / 97) as u8);
        }
    }
    data
}

/// The newest snapshot of `sim/a` and its file (snapshots may live in a clone after a
/// promote).
fn newest_of_a(snapshots: &[(String, Vec<u8>)]) -> Option<(String, Vec<u8>)> {
    snapshots
        .iter()
        .rev()
        .find(|(name, _)| name.starts_with("sim/a@"))
        .cloned()
}

/// The model of `zfs promote clone`: the origin filesystem's snapshots up to the clone's
/// origin move to the clone, the clone takes the origin's origin, the origin becomes a
/// clone of the moved origin snapshot, and clones of moved snapshots follow their names.
fn promoted(
    snapshots: &[(String, Vec<u8>)],
    origins: &BTreeMap<String, String>,
    clone: &str,
) -> (Snapshots, BTreeMap<String, String>) {
    let origin = origins[clone].clone();
    let (origin_fs, _) = origin.split_once('@').unwrap_or_default();
    let last = snapshots
        .iter()
        .position(|(name, _)| *name == origin)
        .unwrap_or(0);
    let mut renamed = BTreeMap::new();
    let moved: Vec<(String, Vec<u8>)> = snapshots
        .iter()
        .enumerate()
        .map(|(index, (name, content))| {
            let (fs, short) = name.split_once('@').unwrap_or_default();
            if fs == origin_fs && index <= last {
                let new = format!("{clone}@{short}");
                renamed.insert(name.clone(), new.clone());
                (new, content.clone())
            } else {
                (name.clone(), content.clone())
            }
        })
        .collect();
    let mut new_origins: BTreeMap<String, String> = origins
        .iter()
        .map(|(fs, o)| {
            (
                fs.clone(),
                renamed.get(o).cloned().unwrap_or_else(|| o.clone()),
            )
        })
        .collect();
    match origins.get(origin_fs) {
        Some(grand) => new_origins.insert(clone.to_string(), grand.clone()),
        None => new_origins.remove(clone),
    };
    new_origins.insert(origin_fs.to_string(), renamed[&origin].clone());
    (moved, new_origins)
}

/// A ZPL operation on `sim/z` through the mount's write policy (`zpl::zfs_vnops`), whose
/// admission may commit the open txg before the change (a nearly full pool): every txg
/// the operation committed, or was committing when the power went, holds `before`.
fn zpl_tx<T>(
    spa: &mut Spa,
    committed: &mut BTreeMap<Txg, State>,
    last_returned: &mut Txg,
    before: State,
    op: impl FnOnce(&mut Spa) -> Result<T, ZplError>,
) -> Result<T, zetta::spa::SpaError> {
    let mut txg = spa.open_txg();
    committed.insert(txg, before.clone());
    let result = op(spa);
    while txg < spa.open_txg() {
        committed.insert(txg, before.clone());
        txg = txg.next();
    }
    *last_returned = (*last_returned).max(spa.last_synced_txg());
    result.map_err(|e| zetta::spa::SpaError::Corrupt(e.to_string()))
}

/// The layouts a seed may draw: single device, 2-device stripe, mirror, raidz1, raidz2.
const LAYOUTS: [(TopKind, usize); 5] = [
    (TopKind::Single, 1),
    (TopKind::Single, 2),
    (TopKind::Mirror, 2),
    (TopKind::Raidz(1), 3),
    (TopKind::Raidz(2), 4),
];

/// One seeded run; returns a description of the failure, if any.
fn run_seed(seed: u64) -> Result<(), String> {
    run_seed_on(seed, None).map(|_| ())
}

/// The devices' durable images right after a cut, and how many early batches the
/// simulator ran before it.
type Outcome = (Vec<Vec<(u64, Vec<u8>)>>, u64);

/// One seeded run, on the layout the seed draws or on `LAYOUTS[layout]`; returns the
/// devices' durable images right after the cut (before the import writes anything).
fn run_seed_on(seed: u64, layout: Option<usize>) -> Result<Outcome, String> {
    let mut rng = SeededRng::new(seed);
    zetta::rand::seed_thread(seed);
    // Creation times, uberblock and znode timestamps: the same on every run of the seed.
    zetta::io::sim::set_clock(Some(1_700_000_000 + (seed % 1_000_000) as i64));
    let drawn = rng.below(LAYOUTS.len() as u64) as usize;
    let (kind, count) = LAYOUTS[layout.unwrap_or(drawn)];
    let world = World::new(seed, count);
    let options = CreateOptions {
        ashift: if rng.below(2) == 0 { 9 } else { 12 },
        arc_size_bytes_max: 32 << 20,
        ..CreateOptions::default()
    };
    let mut spa =
        Spa::create("sim", &world.spec(kind), &options).map_err(|e| format!("create: {e}"))?;
    // Three seeds in four run the daemon's mode, writing file data early
    // (spa::writeback, `Threaded`, its batch scheduled by the simulator) from a few KiB of
    // dirty data on, so cuts land before, during and after early writes and their install.
    // Drawn from its own generator: the other seeds' operations stay what they were.
    // Half the commits of the harness leave their tail to the simulator (own generator).
    let mut tail_rng = SeededRng::new(seed ^ 0x5441_494c_5f54_5847);
    let mut writeback_rng = SeededRng::new(seed ^ 0x5752_4954_4542_4143);
    let writeback = writeback_rng.below(4) != 0;
    if writeback {
        spa.set_writeback(
            WritebackMode::Threaded,
            writeback_rng.below(256 << 10),
            (64 << 10) + writeback_rng.below(1 << 20),
        );
    } else {
        spa.set_writeback(WritebackMode::Off, 0, 0);
    }
    let mut model: Model = BTreeMap::new();
    // A filesystem with one file, committed before the power can fail.
    spa.create_filesystem("sim/a")
        .map_err(|e| format!("create sim/a: {e}"))?;
    spa.create_filesystem("sim/z")
        .map_err(|e| format!("create sim/z: {e}"))?;
    let z = ZfsMount {
        dataset: spa
            .lookup_dataset("sim/z")
            .ok()
            .flatten()
            .ok_or("sim/z has no dataset object")?,
        vfs: spa
            .with_zpl("sim/z", |vfs, _, _| Ok(*vfs))
            .map_err(|e| format!("lay out sim/z: {e}"))?,
        sync: SyncMode::Standard,
        readonly: false,
    };
    let file_id = spa
        .with_dataset("sim/a", |os, ctx| {
            os.create_object(ctx, zetta::dmu::object_type::PLAIN_FILE, 512, 0, 0)
        })
        .map_err(|e| format!("create file: {e}"))?;
    spa.sync().map_err(|e| format!("sync: {e}"))?;
    let mut zpl_files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut next_zpl_name = 0u64;
    let mut file_in_a: Vec<u8> = Vec::new();
    let mut filesystems = std::collections::BTreeSet::new();
    let mut next_fs = 0u64;
    let mut committed: BTreeMap<Txg, State> = BTreeMap::new();
    let mut snapshots: Vec<(String, Vec<u8>)> = Vec::new();
    let mut next_snapshot = 0u64;
    // Clones of sim/a's snapshots (kept in `filesystems`) and the file each must show.
    let mut clone_contents: std::collections::HashMap<String, Vec<u8>> = Default::default();
    let mut origins: BTreeMap<String, String> = BTreeMap::new();
    let snapshot = |model: &Model,
                    file: &Vec<u8>,
                    fs: &std::collections::BTreeSet<String>,
                    snaps: &Vec<(String, Vec<u8>)>,
                    zpl: &BTreeMap<String, Vec<u8>>,
                    origins: &BTreeMap<String, String>| State {
        objects: model.clone(),
        file_in_a: file.clone(),
        filesystems: fs.clone(),
        snapshots: snaps.clone(),
        zpl_files: zpl.clone(),
        origins: origins.clone(),
    };
    // The model's state as it stands now (every variable above, by reference).
    macro_rules! state {
        () => {
            snapshot(
                &model,
                &file_in_a,
                &filesystems,
                &snapshots,
                &zpl_files,
                &origins,
            )
        };
    }
    committed.insert(spa.last_synced_txg(), state!());
    let mut last_returned = spa.last_synced_txg();

    // Each device its own crash budget (writes and flushes); the first to run out cuts the
    // power of all.
    for device in &world.devices {
        device.arm_budget(1 + rng.below(120) as i64);
    }
    let operations = 5 + rng.below(40);
    'ops: for step in 0..operations {
        // ZPL times: the seed's own clock, one second per operation.
        let now = Timespec {
            sec: 1_700_000_000 + step as i64,
            nsec: (seed % 1_000_000_000) as u32,
        };
        // A scheduling point: a queued early batch may run before the next operation.
        world.sim.step();
        let result = match rng.below(23) {
            // POSIX-layer operations on sim/z: each is atomic within its txg.
            17 if zpl_files.len() < 12 => {
                let name = format!("z{next_zpl_name}");
                next_zpl_name += 1;
                let len = rng.below(150_000) as usize;
                let data = random_data(&mut rng, len);
                // Two operations, as a process makes them (creat, then write): a commit
                // between them holds the file empty.
                let before = state!();
                let mut empty = before.clone();
                empty.zpl_files.insert(name.clone(), Vec::new());
                zpl_tx(
                    &mut spa,
                    &mut committed,
                    &mut last_returned,
                    before,
                    |spa| {
                        let (root, kind, creds) = (z.vfs.root, FileKind::Regular, Creds::default());
                        z.create(spa, root, name.as_bytes(), kind, 0o644, creds, 0, now)
                    },
                )
                .and_then(|f| {
                    zpl_tx(&mut spa, &mut committed, &mut last_returned, empty, |spa| {
                        z.write(spa, f.object, 0, &data, now, false)
                    })
                })
                .map(|_| {
                    zpl_files.insert(name, data);
                })
            }
            18 if !zpl_files.is_empty() => {
                let from = zpl_files
                    .keys()
                    .nth(rng.below(zpl_files.len() as u64) as usize)
                    .cloned()
                    .unwrap_or_default();
                // Onto another existing name (replacing it) or a new one.
                let to = if rng.below(2) == 0 {
                    zpl_files
                        .keys()
                        .nth(rng.below(zpl_files.len() as u64) as usize)
                        .cloned()
                        .unwrap_or_default()
                } else {
                    next_zpl_name += 1;
                    format!("z{next_zpl_name}")
                };
                let before = state!();
                zpl_tx(
                    &mut spa,
                    &mut committed,
                    &mut last_returned,
                    before,
                    |spa| {
                        let root = z.vfs.root;
                        let (from, to) = (from.as_bytes(), to.as_bytes());
                        z.rename(spa, root, from, root, to, false, false, now, &|_| false)
                    },
                )
                .map(|_| {
                    if from != to {
                        let data = zpl_files.remove(&from).unwrap_or_default();
                        zpl_files.insert(to, data);
                    }
                })
            }
            19 if !zpl_files.is_empty() => {
                let name = zpl_files
                    .keys()
                    .nth(rng.below(zpl_files.len() as u64) as usize)
                    .cloned()
                    .unwrap_or_default();
                let before = state!();
                zpl_tx(
                    &mut spa,
                    &mut committed,
                    &mut last_returned,
                    before,
                    |spa| z.remove(spa, z.vfs.root, name.as_bytes(), now, &|_| false),
                )
                .map(|_| {
                    zpl_files.remove(&name);
                })
            }
            16 | 21 if newest_of_a(&snapshots).is_some() && filesystems.len() < 6 => {
                let (origin, content) = newest_of_a(&snapshots).unwrap_or_default();
                let name = format!("sim/c{next_fs}");
                next_fs += 1;
                spa.clone_snapshot(&origin, &name).map(|_| {
                    clone_contents.insert(name.clone(), content);
                    origins.insert(name.clone(), origin);
                    filesystems.insert(name);
                })
            }
            // `zfs promote`: a sync task, so the open txg holds what is in flight and the
            // moved snapshots and origins.
            20..=22 if !origins.is_empty() => {
                let clones: Vec<String> = origins.keys().cloned().collect();
                let clone = clones[rng.below(clones.len() as u64) as usize].clone();
                let (moved, new_origins) = promoted(&snapshots, &origins, &clone);
                let after = snapshot(
                    &model,
                    &file_in_a,
                    &filesystems,
                    &moved,
                    &zpl_files,
                    &new_origins,
                );
                committed.insert(spa.open_txg(), after);
                match spa.promote(&clone) {
                    Ok(()) => {
                        mark(&PROMOTES, 1);
                        snapshots = moved;
                        origins = new_origins;
                        last_returned = spa.last_synced_txg();
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            15 if newest_of_a(&snapshots).is_some() => {
                let (name, content) = newest_of_a(&snapshots).unwrap_or_default();
                // A sync task: the open txg holds the rollback.
                let after = snapshot(
                    &model,
                    &content,
                    &filesystems,
                    &snapshots,
                    &zpl_files,
                    &origins,
                );
                committed.insert(spa.open_txg(), after);
                match spa.rollback(&name) {
                    Ok(()) => {
                        file_in_a = content;
                        last_returned = spa.last_synced_txg();
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            14 if !snapshots.is_empty() => {
                let pick = rng.below(snapshots.len() as u64) as usize;
                let name = snapshots[pick].0.clone();
                // A sync task: the open txg holds the destroy with what it already held.
                let mut without = snapshots.clone();
                without.remove(pick);
                let after = snapshot(
                    &model,
                    &file_in_a,
                    &filesystems,
                    &without,
                    &zpl_files,
                    &origins,
                );
                let txg = spa.open_txg();
                let previous = committed.insert(txg, after);
                match spa.destroy_snapshot(&name) {
                    Ok(()) => {
                        snapshots = without;
                        last_returned = spa.last_synced_txg();
                        Ok(())
                    }
                    // Refused (a clone depends on it) by its check in open context:
                    // nothing queued, nothing committed.
                    Err(zetta::spa::SpaError::Dsl(zetta::dsl::DslError::HasClones { .. })) => {
                        match previous {
                            Some(state) => committed.insert(txg, state),
                            None => committed.remove(&txg),
                        };
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            13 if snapshots.len() < 5 => {
                // A sync task: the open txg holds the snapshot of what it holds.
                let name = format!("sim/a@s{next_snapshot}");
                next_snapshot += 1;
                let mut with = snapshots.clone();
                with.push((name.clone(), file_in_a.clone()));
                let after = snapshot(
                    &model,
                    &file_in_a,
                    &filesystems,
                    &with,
                    &zpl_files,
                    &origins,
                );
                committed.insert(spa.open_txg(), after);
                match spa.snapshot(std::slice::from_ref(&name)) {
                    Ok(()) => {
                        snapshots = with;
                        last_returned = spa.last_synced_txg();
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            10 => {
                let offset = rng.below(600_000) as usize;
                let len = 1 + rng.below(200_000) as usize;
                let data = random_data(&mut rng, len);
                spa.with_dataset("sim/a", |os, ctx| {
                    os.write(ctx, file_id, offset as u64, &data)
                })
                .map(|_| {
                    let end = offset + data.len();
                    if file_in_a.len() < end {
                        file_in_a.resize(end, 0);
                    }
                    file_in_a[offset..end].copy_from_slice(&data);
                })
            }
            11 if filesystems.len() < 6 => {
                let name = format!("sim/f{next_fs}");
                next_fs += 1;
                spa.create_filesystem(&name).map(|_| {
                    filesystems.insert(name);
                })
            }
            12 if !filesystems.is_empty() => {
                let pick = rng.below(filesystems.len() as u64) as usize;
                let name = filesystems.iter().nth(pick).cloned().unwrap_or_default();
                // A sync task: the open txg holds the destroy with what it already held.
                let mut without = filesystems.clone();
                without.remove(&name);
                let mut origins_without = origins.clone();
                origins_without.remove(&name);
                let after = snapshot(
                    &model,
                    &file_in_a,
                    &without,
                    &snapshots,
                    &zpl_files,
                    &origins_without,
                );
                let txg = spa.open_txg();
                let previous = committed.insert(txg, after);
                match spa.destroy_filesystem(&name) {
                    Ok(()) => {
                        filesystems = without;
                        origins = origins_without;
                        last_returned = spa.last_synced_txg();
                        Ok(())
                    }
                    // A promoted clone holds snapshots: refused by its check in open
                    // context, nothing queued, nothing committed.
                    Err(zetta::spa::SpaError::Invalid(_)) => {
                        match previous {
                            Some(state) => committed.insert(txg, state),
                            None => committed.remove(&txg),
                        };
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            0 | 9 if model.len() < 8 => spa.create_object(512).map(|id| {
                model.insert(id.0, Vec::new());
            }),
            1 if !model.is_empty() => {
                let id = *model
                    .keys()
                    .nth(rng.below(model.len() as u64) as usize)
                    .unwrap_or(&1);
                spa.free_object(ObjectId(id)).map(|_| {
                    model.remove(&id);
                })
            }
            2 if !model.is_empty() => {
                let id = *model
                    .keys()
                    .nth(rng.below(model.len() as u64) as usize)
                    .unwrap_or(&1);
                let current = model[&id].len() as u64;
                let new_size = rng.below(current + 1);
                let ctx_result = spa.truncate_object(ObjectId(id), new_size);
                ctx_result.map(|_| {
                    if let Some(d) = model.get_mut(&id) {
                        d.truncate(new_size as usize);
                    }
                })
            }
            // A commit whose tail (flushes, labels, uberblocks) the simulator schedules,
            // as the daemon's sync thread runs it without the pool lock: the operations
            // that follow fill the next txg meanwhile, and cuts land before, inside and
            // after the tail (`spa::txg`).
            3 | 4 if tail_rng.below(2) == 0 => {
                let in_flight = state!();
                committed.insert(spa.open_txg(), in_flight);
                match spa.sync_in_background() {
                    Ok(_) => {
                        mark(&BACKGROUND_TAILS, 1);
                        Ok(())
                    }
                    Err(_) => break 'ops,
                }
            }
            3 | 4 => {
                let in_flight = state!();
                let txg = spa.open_txg();
                committed.insert(txg, in_flight);
                match spa.sync() {
                    Ok(txg) => {
                        last_returned = txg;
                        Ok(())
                    }
                    Err(_) => break 'ops,
                }
            }
            _ if !model.is_empty() => {
                let id = *model
                    .keys()
                    .nth(rng.below(model.len() as u64) as usize)
                    .unwrap_or(&1);
                let offset = rng.below(1 << 20);
                let len = 1 + rng.below(300_000) as usize;
                let data = random_data(&mut rng, len);
                spa.write_object(ObjectId(id), offset, &data).map(|_| {
                    let object = model.get_mut(&id).expect("object in model");
                    let end = offset as usize + len;
                    if object.len() < end {
                        object.resize(end, 0);
                    }
                    object[offset as usize..end].copy_from_slice(&data);
                })
            }
            _ => Ok(()),
        };
        // Early writes of what the operation dirtied, and the install of the previous
        // batch (the daemon does this after every write).
        let result = result.and_then(|()| if writeback { spa.note_dirty(0) } else { Ok(()) });
        // A retired txg is durable (its tail ran and flushed).
        last_returned = last_returned.max(spa.last_synced_txg());
        if result.is_err() || world.sim.is_power_off() {
            // An I/O failure (power gone, maybe under an early batch the scheduler ran) or
            // a full pool: the process dies here.
            break;
        }
    }
    if writeback {
        mark(&WRITEBACK_BYTES, spa.writeback_installed_bytes());
    }
    if world.sim.cut_in_background() {
        mark(&CUTS_INSIDE_BATCH, 1);
    }
    // Power cut: nothing more reaches the disks (a queued early batch never runs);
    // unflushed writes land or not.
    if world.sim.has_pending() {
        mark(&CUTS_WITH_BATCH_QUEUED, 1);
    }
    if spa.syncing_txg().is_some() {
        mark(&CUTS_WITH_TXG_SYNCING, 1);
    }
    drop(spa);
    world.sim.kill_process();
    for device in &world.devices {
        device.power_cut(PowerCutPolicy::Random);
        device.disarm();
    }
    world.sim.restore_power();
    let images = world.durable_images();
    let batches_run = world.sim.tasks_run();
    let found = find_pools(&world.refs());
    let candidate = found.first().ok_or("no pool found after the cut")?;
    let mut spa =
        Spa::import(candidate, None, 32 << 20).map_err(|e| format!("import failed: {e}"))?;
    let txg = spa.last_synced_txg();
    if txg < last_returned {
        return Err(format!(
            "imported txg {txg} is older than the last returned sync {last_returned}"
        ));
    }
    let state = committed.get(&txg).ok_or_else(|| {
        format!("imported txg {txg}, which no sync produced (last returned {last_returned})")
    })?;
    let expected = &state.objects;
    let mut expected_names = vec!["sim".to_string(), "sim/a".to_string(), "sim/z".to_string()];
    expected_names.extend(state.filesystems.iter().cloned());
    expected_names.sort();
    let mut names = spa.dataset_names().map_err(|e| format!("list: {e}"))?;
    names.sort();
    if names != expected_names {
        return Err(format!(
            "txg {txg}: filesystems {names:?}, expected {expected_names:?}"
        ));
    }
    let file = spa
        .with_dataset("sim/a", |os, ctx| {
            let extent = os.extent_bytes(ctx, file_id)?;
            os.read(ctx, file_id, 0, extent as usize)
        })
        .map_err(|e| format!("read sim/a: {e}"))?;
    if !holds(&file, &state.file_in_a) {
        return Err(format!(
            "txg {txg}: the file in sim/a differs ({} vs {} bytes)",
            file.len(),
            state.file_in_a.len()
        ));
    }
    for name in &state.filesystems {
        if let Some(content) = clone_contents.get(name) {
            let read = spa
                .with_dataset(name, |os, ctx| {
                    let extent = os.extent_bytes(ctx, file_id)?;
                    os.read(ctx, file_id, 0, extent as usize)
                })
                .map_err(|e| format!("read clone {name}: {e}"))?;
            if !holds(&read, content) {
                return Err(format!("txg {txg}: clone {name} differs"));
            }
        }
    }
    let mut clones_and_a: Vec<String> = state.filesystems.iter().cloned().collect();
    clones_and_a.push("sim/a".to_string());
    for fs in clones_and_a {
        let origin = spa
            .origin_of(&fs)
            .map_err(|e| format!("origin of {fs}: {e}"))?;
        if origin.as_ref() != state.origins.get(&fs) {
            return Err(format!(
                "txg {txg}: origin of {fs} is {origin:?}, expected {:?}",
                state.origins.get(&fs)
            ));
        }
    }
    for (name, content) in &state.snapshots {
        let read = spa
            .with_snapshot(name, |os, ctx| {
                let extent = os.extent_bytes(ctx, file_id)?;
                os.read(ctx, file_id, 0, extent as usize)
            })
            .map_err(|e| format!("read {name}: {e}"))?;
        if !holds(&read, content) {
            return Err(format!("txg {txg}: snapshot {name} differs"));
        }
    }
    let zpl_files = spa
        .with_zpl("sim/z", |vfs, os, ctx| {
            let mut files = BTreeMap::new();
            for entry in vfs.readdir(os, ctx, vfs.root, 0, 1000)? {
                if entry.name == b"." || entry.name == b".." {
                    continue;
                }
                let size = vfs.getattr(os, ctx, entry.object)?.znode.size;
                let data = vfs.read(os, ctx, entry.object, 0, size as usize)?;
                files.insert(String::from_utf8_lossy(&entry.name).into_owned(), data);
            }
            Ok(files)
        })
        .map_err(|e| format!("read sim/z: {e}"))?;
    if zpl_files != state.zpl_files {
        return Err(format!(
            "txg {txg}: sim/z holds {:?}, expected {:?}",
            zpl_files.keys().collect::<Vec<_>>(),
            state.zpl_files.keys().collect::<Vec<_>>()
        ));
    }
    // Objects 1-6 of the root dataset are its ZPL layout (master node, SA master, delete
    // queue, root, SA registry, SA layouts).
    let ids: Vec<u64> = spa
        .object_ids()
        .map_err(|e| e.to_string())?
        .iter()
        .map(|i| i.0)
        .filter(|&id| id > 6)
        .collect();
    let expected_ids: Vec<u64> = expected.keys().copied().collect();
    if ids != expected_ids {
        return Err(format!(
            "txg {txg}: objects {ids:?}, expected {expected_ids:?}"
        ));
    }
    for (id, data) in expected {
        let size = spa.object_size(ObjectId(*id)).map_err(|e| e.to_string())?;
        if size != data.len() as u64 {
            return Err(format!(
                "txg {txg}: object {id} size {size}, expected {}",
                data.len()
            ));
        }
        let read = spa
            .read_object(ObjectId(*id), 0, data.len())
            .map_err(|e| format!("read {id}: {e}"))?;
        if read != *data {
            return Err(format!("txg {txg}: object {id} content differs"));
        }
    }
    if std::env::var("ZETTA_SIM_VERBOSE").is_ok() {
        eprintln!("seed {seed}: {kind:?}x{count} writeback {writeback} batches run {} imported txg {txg} last returned {last_returned} objects {} bytes {}", world.sim.tasks_run(), expected.len(), expected.values().map(|d| d.len()).sum::<usize>());
    }
    let stats = spa.scrub(None).map_err(|e| format!("scrub: {e}"))?;
    if stats.errors != 0 {
        return Err(format!("scrub after the cut found {} errors", stats.errors));
    }
    // The pool keeps working after recovery.
    let id = spa.create_object(512).map_err(|e| e.to_string())?;
    spa.write_object(id, 0, b"after")
        .map_err(|e| e.to_string())?;
    spa.sync().map_err(|e| e.to_string())?;
    Ok((images, batches_run))
}

#[test]
fn power_cuts_at_seeded_points_never_lose_committed_data() {
    let ran = common::run_seeds("ZETTA_SIM", "crash simulation", 2000, run_seed);
    let promotes = marked(&PROMOTES);
    let early = marked(&WRITEBACK_BYTES);
    let queued = marked(&CUTS_WITH_BATCH_QUEUED);
    let inside = marked(&CUTS_INSIDE_BATCH);
    let tails = marked(&BACKGROUND_TAILS);
    let syncing = marked(&CUTS_WITH_TXG_SYNCING);
    eprintln!(
        "crash simulation: {ran} power cuts survived ({promotes} promotes, {early} bytes written early before them, {queued} cuts with background work queued, {inside} cuts under background work, {tails} tails scheduled by the simulator, {syncing} cuts with a txg syncing)"
    );
    assert!(ran < 500 || syncing > 0, "no cut found a txg in its tail");
    assert!(ran < 500 || promotes > 0, "no seed reached a promote");
    assert!(ran < 500 || early > 0, "no seed installed an early write");
    assert!(
        ran < 500 || queued > 0,
        "no cut found an early batch queued"
    );
    assert!(
        ran < 500 || inside > 0,
        "no cut landed under an early batch"
    );
}

// Why: the leaves' writes of a batch were issued in parallel (rayon) against one shared
// crash budget and the daemon's early writes ran on a thread, so on more than one device
// which writes landed before the cut depended on thread timing, and a failing seed did not
// replay. Now the simulator schedules both: two runs of a seed must leave every device's
// durable image identical, byte for byte, on every layout.
#[test]
fn every_seed_replays_exactly_on_every_layout() {
    for (layout, (kind, count)) in LAYOUTS.iter().enumerate() {
        // Seeds whose runs write file data early (the daemon's mode) before their cut.
        let mut batches = 0;
        for seed in [54u64, 63, 79] {
            let (first, ran) = run_seed_on(seed, Some(layout))
                .unwrap_or_else(|e| panic!("seed {seed} on {kind:?}x{count}: {e}"));
            let (second, ran_again) = run_seed_on(seed, Some(layout))
                .unwrap_or_else(|e| panic!("seed {seed} on {kind:?}x{count}: {e}"));
            assert_eq!(
                ran, ran_again,
                "seed {seed} on {kind:?}x{count}: batches run"
            );
            batches += ran;
            assert_eq!(first.len(), *count);
            assert!(
                first.iter().all(|image| !image.is_empty()),
                "seed {seed} on {kind:?}x{count}: a device holds nothing after the cut"
            );
            for (device, (a, b)) in first.iter().zip(&second).enumerate() {
                let same =
                    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0 && x.1 == y.1);
                assert!(
                    same,
                    "seed {seed} on {kind:?}x{count}: device {device} differs between two runs"
                );
            }
        }
        assert!(
            batches > 0,
            "{kind:?}x{count}: no seed ran an early batch before its cut"
        );
    }
}

/// Whether the raw DMU object read up to its block extent (`read`) holds the model's bytes:
/// the DMU keeps no byte size (format 20, as OpenZFS), so past the model's end come zeros.
fn holds(read: &[u8], model: &[u8]) -> bool {
    read.len() >= model.len()
        && read[..model.len()] == *model
        && read[model.len()..].iter().all(|&b| b == 0)
}
