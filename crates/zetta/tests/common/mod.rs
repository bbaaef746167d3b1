//! Shared by the integration tests: which seeds the seeded simulations run and their verdict;
//! `oracle`, OpenZFS's tools and fixtures.

#[allow(dead_code)]
pub mod oracle;
#[allow(dead_code)]
pub mod zfs_fuse;
#[allow(dead_code)]
pub mod ztest;

/// Runs `run` on seed `$<prefix>_SEED` alone if set, else on `$<prefix>_SEEDS` seeds (default
/// `default_count`) from `$<prefix>_FIRST` (default 0), so a soak can go on where another
/// stopped; stops after five failures and fails the test naming them.
/// Returns how many seeds ran.
#[allow(dead_code)]
pub fn run_seeds(
    prefix: &str,
    what: &str,
    default_count: u64,
    run: impl Fn(u64) -> Result<(), String>,
) -> usize {
    let var = |suffix: &str| -> Option<u64> {
        std::env::var(format!("{prefix}_{suffix}"))
            .ok()
            .and_then(|s| s.parse().ok())
    };
    let seeds: Vec<u64> = match var("SEED") {
        Some(seed) => vec![seed],
        None => {
            let first = var("FIRST").unwrap_or(0);
            (first..first.saturating_add(var("SEEDS").unwrap_or(default_count))).collect()
        }
    };
    let mut failures = Vec::new();
    for &seed in &seeds {
        if let Err(why) = run(seed) {
            eprintln!("{what} seed {seed} FAILED: {why}");
            failures.push(seed);
            if failures.len() >= 5 {
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "failing seeds (replay with {prefix}_SEED=n): {failures:?}"
    );
    seeds.len()
}

/// A pool named `sim` on one seeded layout (single, mirror or raidz1 of 96 MiB simulated
/// devices `/sim/<prefix><i>`, ashift 9 or 12), as the power-cut simulations build it; the
/// devices come back so the caller can arm and cut them.
#[allow(dead_code)]
pub fn sim_pool(
    rng: &mut zetta::rand::SeededRng,
    device_seed: u64,
    prefix: &str,
) -> Result<(zetta::spa::Spa, Vec<std::sync::Arc<zetta::io::SimDevice>>), String> {
    use zetta::io::{DeviceRef, SimDevice};
    use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
    let (kind, count) = match rng.below(3) {
        0 => (TopKind::Single, 1),
        1 => (TopKind::Mirror, 2),
        _ => (TopKind::Raidz(1), 3),
    };
    let devices: Vec<std::sync::Arc<SimDevice>> = (0..count)
        .map(|i| {
            std::sync::Arc::new(SimDevice::new(
                &format!("/sim/{prefix}{i}"),
                96 << 20,
                device_seed + i as u64,
            ))
        })
        .collect();
    let spec = TopSpec {
        kind,
        leaves: devices
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("/sim/{prefix}{i}"), d.clone() as DeviceRef))
            .collect(),
        is_log: false,
    };
    let options = CreateOptions {
        ashift: if rng.below(2) == 0 { 9 } else { 12 },
        arc_size_bytes_max: 32 << 20,
        ..CreateOptions::default()
    };
    let spa = Spa::create("sim", &[spec], &options).map_err(|e| format!("create: {e}"))?;
    Ok((spa, devices))
}

/// The power goes: `spa` dies, every device loses what it had not flushed (a random
/// policy), and the pool is imported again from what is left, which replays the intent
/// logs; a replay that failed is an error.
#[allow(dead_code)]
pub fn cut_and_import(
    spa: zetta::spa::Spa,
    devices: &[std::sync::Arc<zetta::io::SimDevice>],
) -> Result<zetta::spa::Spa, String> {
    use zetta::io::{DeviceRef, PowerCutPolicy};
    drop(spa);
    for device in devices {
        device.power_cut(PowerCutPolicy::Random);
        device.disarm();
    }
    let refs: Vec<DeviceRef> = devices.iter().map(|d| d.clone() as DeviceRef).collect();
    let found = zetta::spa::find_pools(&refs);
    let candidate = found.first().ok_or("no pool after the cut")?;
    let spa =
        zetta::spa::Spa::import(candidate, None, 32 << 20).map_err(|e| format!("import: {e}"))?;
    for (name, report) in &spa.zil_replayed {
        if let Some(error) = &report.error {
            return Err(format!("replay of {name} failed: {error}"));
        }
    }
    Ok(spa)
}

/// Creates the regular file `name` (mode 0644) in the root directory of `dataset` through the
/// engine's ZPL and writes `data` at `offset`: how the oracle tests fill a pool without a
/// mount.
#[allow(dead_code)]
pub fn write_root_file(
    spa: &mut zetta::spa::Spa,
    dataset: &str,
    name: &str,
    offset: u64,
    data: &[u8],
) {
    write_root_file_as(
        spa,
        dataset,
        name,
        zetta::zpl::Creds::default(),
        offset,
        data,
    );
}

/// `write_root_file`, the file owned by `creds`.
#[allow(dead_code)]
pub fn write_root_file_as(
    spa: &mut zetta::spa::Spa,
    dataset: &str,
    name: &str,
    creds: zetta::zpl::Creds,
    offset: u64,
    data: &[u8],
) {
    use zetta::zpl::{FileKind, Timespec};
    let now = Timespec::now();
    spa.with_zpl(dataset, |vfs, os, ctx| {
        let attr = vfs.create(
            os,
            ctx,
            vfs.root,
            name.as_bytes(),
            FileKind::Regular,
            0o644,
            creds,
            0,
            now,
        )?;
        vfs.write(os, ctx, attr.object, offset, data, now)?;
        Ok(())
    })
    .unwrap();
}

/// A fresh directory `<tmp>/<name>-<pid>` holding one sparse disk file `d0` of `size_bytes`:
/// the directory (for `zdb -e -p`) and the disk's path.
#[allow(dead_code)]
pub fn scratch_disk(name: &str, size_bytes: u64) -> (std::path::PathBuf, String) {
    let (dir, mut paths) = scratch_disks(name, 1, size_bytes);
    (dir, paths.remove(0))
}

/// A fresh directory `<tmp>/<name>-<pid>` holding `count` sparse disk files `d0`, `d1`, …
/// of `size_bytes` each: the directory (for `zdb -e -p`) and the disks' paths.
#[allow(dead_code)]
pub fn scratch_disks(
    name: &str,
    count: usize,
    size_bytes: u64,
) -> (std::path::PathBuf, Vec<String>) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let paths = (0..count)
        .map(|i| {
            let path = dir.join(format!("d{i}"));
            std::fs::File::create(&path)
                .unwrap()
                .set_len(size_bytes)
                .unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect();
    (dir, paths)
}
