//! Where a txg commit's time goes, phase by phase (issue 13, txg states: what to take out of
//! the pool lock first). Not a test: run it with
//! `cargo run --release -p zetta --example sync_phases -- [--dir DIR] [--txg-mib N<128]
//! [--txgs K] [--files F] [--mirror]`.
//!
//! On file vdevs (sparse files in DIR, one, or two as a mirror) it fills each txg with N MiB
//! of 128K-record writes spread over F files of the root dataset (early writes off: the
//! commit writes all of it, as a txg the daemon commits at its dirty limit), every tenth
//! txg also a snapshot (a sync task), then commits and prints the phases
//! (`Spa::last_sync_phases`) in milliseconds: the part under the pool lock (writeback
//! install, object sets, sync tasks, history and error log, space maps, MOS) and the tail
//! (first flush, labels, uberblocks with their flush).

use std::sync::Arc;
use std::time::Instant;
use zetta::io::{DeviceRef, FileDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec, WritebackMode};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "/var/tmp".to_string());
    // Below the dirty limit (128 MiB), where a write would commit in its own request.
    let txg_mib = arg(&args, "--txg-mib", 120).min(127);
    let txgs = arg(&args, "--txgs", 5);
    let files = arg(&args, "--files", 16).max(1);
    let mirror = args.iter().any(|a| a == "--mirror");
    let dir = std::path::Path::new(&dir).join(format!("sync_phases.{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("make the bench directory");
    let size = (txg_mib * (txgs + 2) * 3 + 1024) << 20;
    let leaves: Vec<(String, DeviceRef)> = (0..if mirror { 2 } else { 1 })
        .map(|i| {
            let path = dir.join(format!("vdev{i}"));
            let file = std::fs::File::create(&path).expect("create vdev file");
            file.set_len(size).expect("size vdev file");
            let path = path.to_string_lossy().into_owned();
            let device: DeviceRef = Arc::new(FileDevice::open(&path).expect("open vdev"));
            (path, device)
        })
        .collect();
    let spec = TopSpec {
        kind: if mirror {
            TopKind::Mirror
        } else {
            TopKind::Single
        },
        leaves,
        is_log: false,
    };
    let options = CreateOptions {
        arc_size_bytes_max: 256 << 20,
        ..CreateOptions::default()
    };
    let mut spa = Spa::create("phases", &[spec], &options).expect("create pool");
    spa.set_writeback(WritebackMode::Off, 0, 0);
    let objects: Vec<_> = (0..files)
        .map(|_| spa.create_object(128 << 10).expect("create object"))
        .collect();
    spa.sync().expect("first sync");
    let mut data = vec![0u8; 128 << 10];
    let mut rng = zetta::rand::SeededRng::new(7);
    let per_txg = txg_mib << 20;
    println!(
        "{} vdev{}, {txg_mib} MiB per txg in {files} files, 128K records",
        if mirror { "mirror" } else { "single" },
        if mirror { "s" } else { "" }
    );
    println!("| txg | writeback | objsets | sync tasks | history+errlog | space maps | MOS | locked total | flush data | labels | uberblocks | tail total | commit |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut offsets = vec![0u64; files as usize];
    for round in 0..txgs {
        let mut written = 0u64;
        let mut index = 0usize;
        while written < per_txg {
            rng.fill(&mut data);
            let object = objects[index % objects.len()];
            let offset = offsets[index % objects.len()];
            spa.write_object(object, offset, &data).expect("write");
            offsets[index % objects.len()] += data.len() as u64;
            written += data.len() as u64;
            index += 1;
        }
        if round % 10 == 9 {
            spa.snapshot(&[format!("phases@s{round}")])
                .expect("snapshot");
        }
        let started = Instant::now();
        let txg = spa.sync().expect("sync");
        let total = started.elapsed();
        let p = spa.last_sync_phases();
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            txg.0,
            ms(p.writeback),
            ms(p.objsets),
            ms(p.sync_tasks),
            ms(p.history_errlog),
            ms(p.space_maps),
            ms(p.mos),
            ms(p.locked()),
            ms(p.flush_data),
            ms(p.labels),
            ms(p.uberblocks),
            ms(p.tail()),
            ms(total)
        );
    }
    spa.export().expect("export");
    let _ = std::fs::remove_dir_all(&dir);
}
