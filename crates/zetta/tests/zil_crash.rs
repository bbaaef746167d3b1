//! Crash simulation of `fsync`: POSIX operations on a filesystem, `zil_commit` (fsync) and
//! txg commits in a seeded order, the power cut after a seeded number of device I/Os, then
//! import (which replays the intent log).
//!
//! Why: an fsync that returned is a promise. After the cut, every path must show a state it
//! had at or after the last fsync or commit that returned — never older (lost fsync'd data),
//! never something it never had (a torn or misapplied record). Later, unacknowledged changes
//! may or may not be there, and a path changed after the acknowledgement may show any of its
//! later states (writes are logged by position and copied at commit, as OpenZFS does).
//! A failing seed replays exactly: `ZETTA_ZIL_SEED=<n> cargo test --release --test zil_crash`;
//! `ZETTA_ZIL_SEEDS=<count>` sets how many run (default 1000).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use zetta::io::{DeviceRef, PowerCutPolicy, SimDevice};
use zetta::rand::SeededRng;
use zetta::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::vnops::SetAttr;
use zetta::zpl::{Creds, FileKind, Timespec, Zfsvfs, ZplError};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File { content: Vec<u8>, mode: u32 },
}

type Tree = BTreeMap<String, Node>;

/// Walks the filesystem into path → node.
fn observe(spa: &mut Spa) -> Result<Tree, String> {
    spa.with_zpl("sim/fs", |vfs: &Zfsvfs, os, ctx| {
        let mut tree = Tree::new();
        let mut stack = vec![(String::new(), vfs.root)];
        while let Some((path, dir)) = stack.pop() {
            let mut offset = 0;
            loop {
                let batch = vfs.readdir(os, ctx, dir, offset, 64)?;
                let Some(last) = batch.last() else { break };
                offset = last.next;
                for entry in batch {
                    if entry.name == b"." || entry.name == b".." {
                        continue;
                    }
                    let name = format!("{path}/{}", String::from_utf8_lossy(&entry.name));
                    let attr = vfs.getattr(os, ctx, entry.object)?;
                    if attr.kind() == FileKind::Directory {
                        tree.insert(name.clone(), Node::Dir);
                        stack.push((name, entry.object));
                    } else {
                        let content =
                            vfs.read(os, ctx, entry.object, 0, attr.znode.size as usize)?;
                        let mode = (attr.znode.mode & 0o7777) as u32;
                        tree.insert(name, Node::File { content, mode });
                    }
                }
            }
        }
        Ok(tree)
    })
    .map_err(|e| format!("walk: {e}"))
}

fn lookup_path(
    vfs: &Zfsvfs,
    os: &mut zetta::dmu::ObjectSet,
    ctx: &zetta::dmu::IoCtx<'_>,
    path: &str,
) -> Result<(u64, u64), ZplError> {
    // (parent dir, object)
    let mut dir = vfs.root;
    let mut object = vfs.root;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        dir = object;
        object = vfs.lookup(os, ctx, dir, part.as_bytes())?.object;
    }
    Ok((dir, object))
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

fn run_seed(seed: u64) -> Result<(), String> {
    let mut rng = SeededRng::new(seed);
    zetta::rand::seed_thread(seed);
    let (mut spa, devices) = common::sim_pool(&mut rng, seed * 17, "z")?;
    spa.create_filesystem("sim/fs").map_err(|e| e.to_string())?;
    let fs = spa
        .lookup_dataset("sim/fs")
        .map_err(|e| e.to_string())?
        .ok_or("no sim/fs")?;
    spa.with_zpl("sim/fs", |_, _, _| Ok(()))
        .map_err(|e| e.to_string())?;
    spa.sync().map_err(|e| e.to_string())?;

    let mut tree = Tree::new();
    let mut states: Vec<Tree> = vec![tree.clone()];
    let mut acked = 0usize;
    let mut next_name = 0u64;
    let mut last_write: Option<(String, u64)> = None;
    let budget = Arc::new(AtomicI64::new(1 + rng.below(160) as i64));
    for device in &devices {
        device.arm_crash(budget.clone());
    }
    let files = |tree: &Tree| -> Vec<String> {
        tree.iter()
            .filter(|(_, n)| matches!(n, Node::File { .. }))
            .map(|(p, _)| p.clone())
            .collect()
    };
    let dirs = |tree: &Tree| -> Vec<String> {
        let mut d = vec![String::new()];
        d.extend(
            tree.iter()
                .filter(|(_, n)| **n == Node::Dir)
                .map(|(p, _)| p.clone()),
        );
        d
    };
    let now = Timespec::now();
    for _ in 0..(10 + rng.below(50)) {
        let choice = rng.below(12);
        let file_list = files(&tree);
        let result: Result<bool, String> = match choice {
            0 | 1 if file_list.len() < 10 => {
                let dir_list = dirs(&tree);
                let dir = dir_list[rng.below(dir_list.len() as u64) as usize].clone();
                let path = format!("{dir}/f{next_name}");
                next_name += 1;
                spa.with_zpl("sim/fs", |vfs, os, ctx| {
                    let (_, d) = lookup_path(vfs, os, ctx, &dir)?;
                    vfs.create(
                        os,
                        ctx,
                        d,
                        base(&path).as_bytes(),
                        FileKind::Regular,
                        0o644,
                        Creds::default(),
                        0,
                        now,
                    )
                })
                .map(|_| {
                    tree.insert(
                        path,
                        Node::File {
                            content: Vec::new(),
                            mode: 0o644,
                        },
                    );
                    true
                })
                .map_err(|e| e.to_string())
            }
            2..=4 if !file_list.is_empty() => {
                let path = file_list[rng.below(file_list.len() as u64) as usize].clone();
                let mut offset = rng.below(200_000);
                // Never contiguous with the previous write to the same file, so each write
                // stays one record of its own.
                if last_write.as_ref() == Some(&(path.clone(), offset)) {
                    offset += 1;
                }
                let len = 1 + rng.below(60_000) as usize;
                let mut data = vec![0u8; len];
                rng.fill(&mut data);
                last_write = Some((path.clone(), offset + len as u64));
                spa.with_zpl("sim/fs", |vfs, os, ctx| {
                    let (_, object) = lookup_path(vfs, os, ctx, &path)?;
                    vfs.write(os, ctx, object, offset, &data, now)
                })
                .map(|_| {
                    if let Some(Node::File { content, .. }) = tree.get_mut(&path) {
                        let end = offset as usize + len;
                        if content.len() < end {
                            content.resize(end, 0);
                        }
                        content[offset as usize..end].copy_from_slice(&data);
                    }
                    true
                })
                .map_err(|e| e.to_string())
            }
            5 if !file_list.is_empty() => {
                let path = file_list[rng.below(file_list.len() as u64) as usize].clone();
                let size = rng.below(150_000);
                let mode = 0o600 | rng.below(0o100) as u32;
                let change = SetAttr {
                    size: Some(size),
                    mode: Some(mode),
                    ..SetAttr::default()
                };
                spa.with_zpl("sim/fs", |vfs, os, ctx| {
                    let (_, object) = lookup_path(vfs, os, ctx, &path)?;
                    vfs.setattr(os, ctx, object, &change, now)
                })
                .map(|_| {
                    if let Some(Node::File { content, mode: m }) = tree.get_mut(&path) {
                        content.resize(size as usize, 0);
                        *m = mode;
                    }
                    true
                })
                .map_err(|e| e.to_string())
            }
            6 if dirs(&tree).len() < 4 => {
                let path = format!("/d{next_name}");
                next_name += 1;
                spa.with_zpl("sim/fs", |vfs, os, ctx| {
                    vfs.create(
                        os,
                        ctx,
                        vfs.root,
                        base(&path).as_bytes(),
                        FileKind::Directory,
                        0o755,
                        Creds::default(),
                        0,
                        now,
                    )
                })
                .map(|_| {
                    tree.insert(path, Node::Dir);
                    true
                })
                .map_err(|e| e.to_string())
            }
            7 if !file_list.is_empty() => {
                // Rename a file into a (maybe other) directory, over an existing one or not.
                let from = file_list[rng.below(file_list.len() as u64) as usize].clone();
                let dir_list = dirs(&tree);
                let to = if rng.below(3) == 0 {
                    file_list[rng.below(file_list.len() as u64) as usize].clone()
                } else {
                    next_name += 1;
                    let dir = &dir_list[rng.below(dir_list.len() as u64) as usize];
                    format!("{dir}/f{next_name}")
                };
                spa.with_zpl("sim/fs", |vfs, os, ctx| {
                    let (sdir, _) = lookup_path(vfs, os, ctx, &from)?;
                    let (_, ddir) = lookup_path(vfs, os, ctx, parent(&to))?;
                    if let Some(gone) = vfs.rename(
                        os,
                        ctx,
                        sdir,
                        base(&from).as_bytes(),
                        ddir,
                        base(&to).as_bytes(),
                        false,
                        false,
                        now,
                    )? {
                        if gone.orphaned {
                            vfs.reclaim(os, ctx, gone.object)?;
                        }
                    }
                    Ok(())
                })
                .map(|_| {
                    if from != to {
                        if let Some(node) = tree.remove(&from) {
                            tree.insert(to, node);
                        }
                    }
                    true
                })
                .map_err(|e| e.to_string())
            }
            8 if !file_list.is_empty() => {
                let path = file_list[rng.below(file_list.len() as u64) as usize].clone();
                spa.with_zpl("sim/fs", |vfs, os, ctx| {
                    let (dir, _) = lookup_path(vfs, os, ctx, &path)?;
                    let gone = vfs.unlink(os, ctx, dir, base(&path).as_bytes(), now)?;
                    vfs.reclaim(os, ctx, gone.object)
                })
                .map(|_| {
                    tree.remove(&path);
                    true
                })
                .map_err(|e| e.to_string())
            }
            9 | 10 => match spa.zil_commit(fs) {
                Ok(_) => {
                    acked = states.len() - 1;
                    Ok(false)
                }
                Err(e) => Err(e.to_string()),
            },
            11 => match spa.sync() {
                Ok(_) => {
                    acked = states.len() - 1;
                    Ok(false)
                }
                Err(e) => Err(e.to_string()),
            },
            _ => Ok(false),
        };
        match result {
            Ok(true) => states.push(tree.clone()),
            Ok(false) => {}
            // The power went during this operation: the process dies here.
            Err(_) => break,
        }
    }
    let mut spa = common::cut_and_import(spa, &devices)?;
    let observed = observe(&mut spa)?;
    let allowed = &states[acked..];
    let mut paths: BTreeSet<&String> = observed.keys().collect();
    for state in allowed {
        paths.extend(state.keys());
    }
    for path in paths {
        let seen = observed.get(path);
        if !allowed.iter().any(|state| state.get(path) == seen) {
            let describe = |n: Option<&Node>| match n {
                None => "absent".to_string(),
                Some(Node::Dir) => "dir".to_string(),
                Some(Node::File { content, mode }) => {
                    format!("file {} bytes mode {mode:o}", content.len())
                }
            };
            return Err(format!(
                "{path} is {} after the cut; since the last acknowledgement (state {acked} of {}) it was only {:?}",
                describe(seen),
                states.len() - 1,
                allowed.iter().map(|s| describe(s.get(path))).collect::<Vec<_>>()
            ));
        }
    }
    let stats = spa.scrub(None).map_err(|e| format!("scrub: {e}"))?;
    if stats.errors != 0 {
        return Err(format!("scrub after the cut found {} errors", stats.errors));
    }
    // The filesystem keeps working, its log too.
    spa.with_zpl("sim/fs", |vfs, os, ctx| {
        vfs.create(
            os,
            ctx,
            vfs.root,
            b"after",
            FileKind::Regular,
            0o644,
            Creds::default(),
            0,
            now,
        )
        .map(|_| ())
    })
    .map_err(|e| e.to_string())?;
    spa.zil_commit(fs).map_err(|e| e.to_string())?;
    spa.sync().map_err(|e| e.to_string())?;
    Ok(())
}

#[test]
fn fsynced_changes_survive_power_cuts() {
    let ran = common::run_seeds("ZETTA_ZIL", "zil crash", 1000, run_seed);
    eprintln!("zil crash simulation: {ran} power cuts survived");
}

/// The content of `/name` in `sim/fs`, or `None` when it is absent.
fn file_content(spa: &mut Spa, name: &str) -> Result<Option<Vec<u8>>, String> {
    let tree = observe(spa)?;
    Ok(match tree.get(&format!("/{name}")) {
        Some(Node::File { content, .. }) => Some(content.clone()),
        _ => None,
    })
}

// Why: with txg states a txg's tail (flushes, uberblocks) runs after the txg has been
// written and the next one opened. An fsync during that tail found nothing to log (the
// syncing txg had taken its records) or wrote its records into the chain whose head only
// the not-yet-durable txg's ZIL header names, and returned before anything it promised was
// durable: a cut before the uberblock landed brought the pool back a txg earlier, without
// the fsync'd data. `zil_commit` now waits for the tail. Both cases, each with every
// pending write lost at the cut.
#[test]
fn fsync_during_a_txg_tail_survives_a_cut() {
    for change_after_quiesce in [false, true] {
        let world = zetta::io::SimWorld::new(7);
        let device = Arc::new(SimDevice::in_world("/sim/tail", 96 << 20, 3, &world));
        let spec = TopSpec {
            kind: TopKind::Single,
            leaves: vec![("/sim/tail".to_string(), device.clone() as DeviceRef)],
            is_log: false,
        };
        let mut spa = Spa::create("sim", &[spec], &CreateOptions::default()).unwrap();
        spa.create_filesystem("sim/fs").unwrap();
        let fs = spa.lookup_dataset("sim/fs").unwrap().unwrap();
        let now = Timespec::now();
        let create = |spa: &mut Spa, name: &str| {
            spa.with_zpl("sim/fs", |vfs, os, ctx| {
                vfs.create(
                    os,
                    ctx,
                    vfs.root,
                    name.as_bytes(),
                    FileKind::Regular,
                    0o644,
                    Creds::default(),
                    0,
                    now,
                )
                .map(|a| a.object)
            })
            .unwrap()
        };
        let write = |spa: &mut Spa, object: u64, data: &[u8]| {
            spa.with_zpl("sim/fs", |vfs, os, ctx| {
                vfs.write(os, ctx, object, 0, data, now)
            })
            .unwrap();
        };
        let first = create(&mut spa, "first");
        // The first fsync commits the txg and gives the dataset its log.
        spa.zil_commit(fs).unwrap();
        spa.sync().unwrap();
        // Txg N: a change to `first`; N is quiesced and written, its tail queued.
        write(&mut spa, first, b"written in the txg now syncing");
        let syncing = spa.sync_in_background().unwrap().unwrap();
        assert_eq!(spa.syncing_txg(), Some(syncing));
        if change_after_quiesce {
            // Txg N+1: a new file, logged into the chain N's header names.
            let second = create(&mut spa, "second");
            write(&mut spa, second, b"written in the open txg");
        }
        // fsync, then the power goes: the tail still queued never runs.
        spa.zil_commit(fs).unwrap();
        drop(spa);
        world.kill_process();
        device.power_cut(PowerCutPolicy::DropAll);
        world.restore_power();
        let found = find_pools(&[device.clone() as DeviceRef]);
        let mut spa = Spa::import(found.first().unwrap(), None, 32 << 20).unwrap();
        assert!(
            spa.last_synced_txg() >= syncing,
            "imported at txg {}, before the txg fsync waited for",
            spa.last_synced_txg()
        );
        assert_eq!(
            file_content(&mut spa, "first").unwrap().as_deref(),
            Some(&b"written in the txg now syncing"[..]),
            "fsync'd change of the syncing txg lost (change after quiesce: {change_after_quiesce})"
        );
        if change_after_quiesce {
            assert_eq!(
                file_content(&mut spa, "second").unwrap().as_deref(),
                Some(&b"written in the open txg"[..]),
                "fsync'd change of the open txg lost"
            );
        }
        assert_eq!(spa.scrub(None).unwrap().errors, 0);
    }
}
