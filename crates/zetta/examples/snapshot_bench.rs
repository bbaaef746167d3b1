//! Snapshot creation time against dataset size (issue "Datasets, files, snapshots and
//! clones": a snapshot is O(1) in the dataset's size). Not a test: run it with
//! `cargo run --release -p zetta --example snapshot_bench -- [--files N] [--size-mib N]
//! [--rounds N] [--dir DIR]` (defaults: 100 000 files, 1024 MiB, 21 rounds).
//!
//! One pool on a file vdev (sparse, in DIR, default the temp directory), two filesystems:
//! `bench/empty` and `bench/big` with N files (default 100 000) holding SIZE MiB (default
//! 1024) of incompressible data in 100 directories, written through the POSIX layer and
//! committed. Then, in each round, one snapshot of each, back to back (alternating which
//! goes first), with nothing
//! uncommitted (a snapshot commits the open txg first; that cost is the writes', not the
//! snapshot's). The table gives the median and worst of the rounds for each, and their
//! ratio: flat in size means a ratio near 1.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::{Duration, Instant};
use zetta::io::{DeviceRef, FileDevice};
use zetta::rand::SeededRng;
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::{Creds, FileKind, Timespec};

const DIRECTORIES: usize = 100;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Writes `files` files holding `total_bytes` into `fs`; returns the seconds it took.
fn populate(spa: &mut Spa, fs: &str, files: usize, total_bytes: u64) -> f64 {
    let start = Instant::now();
    let mut rng = SeededRng::new(7);
    let average = (total_bytes / files.max(1) as u64).max(1);
    let mut directories = Vec::new();
    let now = Timespec::now();
    spa.with_zpl(fs, |vfs, os, ctx| {
        for d in 0..DIRECTORIES {
            let name = format!("d{d:03}");
            directories.push(
                vfs.create(
                    os,
                    ctx,
                    vfs.root,
                    name.as_bytes(),
                    FileKind::Directory,
                    0o755,
                    Creds::default(),
                    0,
                    now,
                )?
                .object,
            );
        }
        Ok(())
    })
    .expect("directories");
    let mut written = 0u64;
    let mut dirty = 0u64;
    let mut buffer = vec![0u8; (average * 2) as usize];
    for index in 0..files {
        // Sizes spread around the average; the last file takes what is left.
        let size = if index + 1 == files {
            total_bytes.saturating_sub(written)
        } else {
            (average / 2 + rng.below(average)).min(total_bytes.saturating_sub(written))
        } as usize;
        if buffer.len() < size {
            buffer.resize(size, 0);
        }
        rng.fill(&mut buffer[..size]);
        let directory = directories[index % DIRECTORIES];
        let name = format!("f{index:06}");
        let data = &buffer[..size];
        spa.with_zpl(fs, |vfs, os, ctx| {
            let file = vfs.create(
                os,
                ctx,
                directory,
                name.as_bytes(),
                FileKind::Regular,
                0o644,
                Creds::default(),
                0,
                now,
            )?;
            vfs.write(os, ctx, file.object, 0, data, now)?;
            Ok(())
        })
        .expect("file");
        written += size as u64;
        dirty += size as u64 + 4096;
        if dirty >= 64 << 20 {
            spa.sync().expect("sync");
            dirty = 0;
        }
    }
    spa.sync().expect("sync");
    start.elapsed().as_secs_f64()
}

fn snapshot_time(spa: &mut Spa, name: String) -> Duration {
    spa.sync().expect("sync");
    let start = Instant::now();
    spa.snapshot(&[name]).expect("snapshot");
    start.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files: usize = arg(&args, "--files", 100_000);
    let size_mib: u64 = arg(&args, "--size-mib", 1024);
    let rounds: usize = arg(&args, "--rounds", 21).max(1);
    let dir: String = arg(&args, "--dir", std::env::temp_dir().display().to_string());
    let path = format!("{dir}/zetta-snapshot-bench.img");
    let _ = std::fs::remove_file(&path);
    let file = std::fs::File::create(&path).expect("create vdev file");
    file.set_len((size_mib << 20) * 2 + (1 << 30))
        .expect("size vdev file");
    drop(file);
    let device: DeviceRef = Arc::new(FileDevice::open(&path).expect("open vdev"));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![(path.clone(), device)],
        is_log: false,
    };
    let options = CreateOptions {
        arc_size_bytes_max: 256 << 20,
        ..CreateOptions::default()
    };
    let mut spa = Spa::create("bench", &[spec], &options).expect("create pool");
    spa.create_filesystem("bench/empty").expect("empty");
    spa.create_filesystem("bench/big").expect("big");
    spa.set_local_prop("bench/big", "compression", "off")
        .expect("compression");
    let seconds = populate(&mut spa, "bench/big", files, size_mib << 20);
    let referenced = spa.dataset_referenced_bytes("bench/big").expect("refer");
    eprintln!(
        "populated bench/big: {files} files, {:.0} MiB referenced, in {seconds:.1} s",
        referenced as f64 / 1048576.0
    );
    let mut empty = Vec::new();
    let mut big = Vec::new();
    for round in 0..rounds {
        // Alternate which goes first, so drift of a shared machine hits both alike.
        if round % 2 == 0 {
            empty.push(snapshot_time(&mut spa, format!("bench/empty@r{round}")));
            big.push(snapshot_time(&mut spa, format!("bench/big@r{round}")));
        } else {
            big.push(snapshot_time(&mut spa, format!("bench/big@r{round}")));
            empty.push(snapshot_time(&mut spa, format!("bench/empty@r{round}")));
        }
        eprintln!(
            "round {round}: empty {:.2} ms, big {:.2} ms",
            empty[round].as_secs_f64() * 1e3,
            big[round].as_secs_f64() * 1e3
        );
    }
    let median = |mut values: Vec<Duration>| {
        values.sort();
        values[values.len() / 2].as_secs_f64() * 1e3
    };
    let worst = |values: &[Duration]| {
        values
            .iter()
            .max()
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3
    };
    let (empty_median, big_median) = (median(empty.clone()), median(big.clone()));
    println!("snapshot creation, {rounds} rounds, one file vdev in {dir}");
    println!();
    println!("| dataset | files | referenced | median ms | worst ms |");
    println!("|---|---|---|---|---|");
    println!(
        "| bench/empty | 0 | {:.1} KiB | {empty_median:.2} | {:.2} |",
        spa.dataset_referenced_bytes("bench/empty").unwrap_or(0) as f64 / 1024.0,
        worst(&empty)
    );
    println!(
        "| bench/big | {files} | {:.0} MiB | {big_median:.2} | {:.2} |",
        referenced as f64 / 1048576.0,
        worst(&big)
    );
    println!();
    println!(
        "big / empty (medians): {:.2}",
        big_median / empty_median.max(1e-9)
    );
    drop(spa);
    let _ = std::fs::remove_file(&path);
}
