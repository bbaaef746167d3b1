//! Library-level sequential I/O benchmark, side by side with raw file I/O on the same
//! filesystem (issue "Pool engine", speed criterion). Not a test: run it with
//! `cargo run --release -p zetta --example pool_bench -- [--size-mib N] [--dir DIR]`.
//!
//! For each case it writes N MiB through the engine (one file vdev, checksums on) and reads
//! it back after dropping the page cache (when running as root), and does the same with a
//! plain file (write + fsync, read), printing MB/s and the ratio to raw.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;
use zetta::io::{DeviceRef, FileDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zio::WriteProps;
use zetta_zcommon::compress::Compression;

fn drop_caches() {
    let _ = std::process::Command::new("sync").status();
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3\n");
}

fn mbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds / 1e6
}

fn make_data(size: usize, compressible: bool) -> Vec<u8> {
    let mut data = vec![0u8; size];
    zetta::rand::SeededRng::new(42).fill(&mut data);
    if compressible {
        // About 2:1 for lz4: every other 64-byte run is zeros.
        for chunk in data.chunks_mut(128) {
            let half = chunk.len().min(64);
            chunk[..half].fill(0);
        }
    }
    data
}

fn raw(dir: &str, data: &[u8], chunk: usize) -> (f64, f64) {
    let path = format!("{dir}/raw.bin");
    let _ = std::fs::remove_file(&path);
    drop_caches();
    let start = Instant::now();
    let mut file = std::fs::File::create(&path).expect("create raw file");
    for piece in data.chunks(chunk) {
        file.write_all(piece).expect("raw write");
    }
    file.sync_all().expect("raw fsync");
    let write = mbps(data.len() as u64, start.elapsed().as_secs_f64());
    drop(file);
    drop_caches();
    let start = Instant::now();
    let mut file = std::fs::File::open(&path).expect("open raw file");
    let mut buffer = vec![0u8; chunk];
    let mut total = 0;
    loop {
        let n = file.read(&mut buffer).expect("raw read");
        if n == 0 {
            break;
        }
        total += n;
    }
    assert_eq!(total, data.len());
    let read = mbps(data.len() as u64, start.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(&path);
    (write, read)
}

fn pool(dir: &str, data: &[u8], record_size: usize, compression: Compression) -> (f64, f64) {
    let path = format!("{dir}/vdev.img");
    let _ = std::fs::remove_file(&path);
    let file = std::fs::File::create(&path).expect("create vdev file");
    file.set_len(data.len() as u64 * 2 + (256 << 20))
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
    spa.set_data_props(WriteProps {
        compression,
        ..zetta::dmu::default_data_props()
    });
    spa.set_record_size(record_size as u32);
    let id = spa.create_object(512).expect("object");
    drop_caches();
    let start = Instant::now();
    let mut offset = 0u64;
    for piece in data.chunks(1 << 20) {
        spa.write_object(id, offset, piece).expect("pool write");
        offset += piece.len() as u64;
    }
    spa.sync().expect("sync");
    let write = mbps(data.len() as u64, start.elapsed().as_secs_f64());
    spa.zio.arc.clear();
    drop_caches();
    let start = Instant::now();
    let mut offset = 0u64;
    while offset < data.len() as u64 {
        let piece = spa.read_object(id, offset, 1 << 20).expect("pool read");
        assert_eq!(
            &piece[..],
            &data[offset as usize..offset as usize + piece.len()]
        );
        offset += piece.len() as u64;
    }
    let read = mbps(data.len() as u64, start.elapsed().as_secs_f64());
    drop(spa);
    let _ = std::fs::remove_file(&path);
    (write, read)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut size_mib = 1024usize;
    let mut dir = std::env::temp_dir().display().to_string();
    let mut only: Option<usize> = None;
    let mut rounds = 3usize;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--size-mib" => {
                size_mib = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(size_mib)
            }
            "--dir" => dir = args.get(i + 1).cloned().unwrap_or(dir),
            "--rounds" => {
                rounds = args
                    .get(i + 1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(rounds)
            }
            "--only" => only = args.get(i + 1).and_then(|v| v.parse().ok()),
            _ => {}
        }
        i += 2;
    }
    let incompressible = make_data(size_mib << 20, false);
    let compressible = make_data(size_mib << 20, true);
    let cases: Vec<(&str, &Vec<u8>, usize, Compression)> = vec![
        (
            "zetta 128K records, fletcher4, compression off",
            &incompressible,
            128 << 10,
            Compression::Off,
        ),
        (
            "zetta 1M records, fletcher4, compression off",
            &incompressible,
            1 << 20,
            Compression::Off,
        ),
        (
            "zetta 128K records, lz4, ~2:1 compressible",
            &compressible,
            128 << 10,
            Compression::Lz4,
        ),
    ];
    // Shared machines drift: every round measures raw and each case back to back, and the
    // figure of merit is the median over rounds of each case's ratio to its round's raw.
    let mut raw_runs = Vec::new();
    let mut ratios: Vec<Vec<(f64, f64, f64, f64)>> = vec![Vec::new(); cases.len()];
    for round in 0..rounds {
        let (raw_write, raw_read) = raw(&dir, &incompressible, 1 << 20);
        raw_runs.push((raw_write, raw_read));
        for (case, (name, data, record, compression)) in cases.iter().enumerate() {
            if only.is_some_and(|o| o != case) {
                continue;
            }
            let (write, read) = pool(&dir, data, *record, *compression);
            eprintln!("round {round}: {name}: write {write:.0} MB/s (raw {raw_write:.0}), read {read:.0} MB/s (raw {raw_read:.0})");
            ratios[case].push((write, read, write / raw_write, read / raw_read));
        }
    }
    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }
    println!(
        "{size_mib} MiB per run, {rounds} rounds, medians (ratios are per round, then the median)"
    );
    println!();
    println!("| case | write MB/s | read MB/s | write / raw | read / raw |");
    println!("|---|---|---|---|---|");
    println!(
        "| raw file, 1 MiB I/O, fsync | {:.0} | {:.0} | 1.00 | 1.00 |",
        median(raw_runs.iter().map(|r| r.0).collect()),
        median(raw_runs.iter().map(|r| r.1).collect())
    );
    for (case, (name, ..)) in cases.iter().enumerate() {
        let runs = &ratios[case];
        if runs.is_empty() {
            continue;
        }
        println!(
            "| {name} | {:.0} | {:.0} | {:.2} | {:.2} |",
            median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
            median(runs.iter().map(|r| r.2).collect()),
            median(runs.iter().map(|r| r.3).collect())
        );
    }
}
