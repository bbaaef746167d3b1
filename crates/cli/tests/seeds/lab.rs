//! The seeds' bench: the shared CLI lab (its own cache file, daemon and sparse disk files
//! under /tmp) with a mount directory, plus the admin's tools the posts use: `dd` of
//! pseudorandom data, `zpool list -v` / `zpool iostat -v` / `zpool status` readers, and the
//! corruptor of post 003 (seeded garbage 8K blocks written over a device).

// Each post's module uses its own subset of the bench.
#![allow(dead_code)]

use crate::common;
use std::io::{Read, Seek, SeekFrom, Write};
use std::process::Command;
use std::time::Duration;

/// Bytes of one garbage block of post 003's corruptor ("generate 8K of garbage data").
pub const GARBAGE_BLOCK_BYTES: u64 = 8 << 10;

pub struct SeedLab {
    pub inner: common::Lab,
}

impl SeedLab {
    pub fn new() -> SeedLab {
        SeedLab {
            inner: common::Lab::new(),
        }
    }

    /// `<lab>/<rest>`.
    pub fn path(&self, rest: &str) -> String {
        self.inner.path(rest)
    }

    /// A sparse disk file `<lab>/<name>` (parent directories made), its absolute path.
    pub fn disk(&self, name: &str, size_bytes: u64) -> String {
        let path = self.inner.dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::File::create(&path)
            .unwrap()
            .set_len(size_bytes)
            .unwrap();
        path.to_string_lossy().into_owned()
    }

    pub fn zpool(&self, args: &[&str]) -> common::Output {
        self.inner.zpool(args)
    }

    /// A `zpool` command that must succeed; its stdout.
    pub fn zpool_ok(&self, args: &[&str]) -> String {
        let out = self.zpool(args);
        assert_eq!(out.code, 0, "zpool {args:?} failed: {}", out.stderr);
        out.stdout
    }

    /// A `zfs` command that must succeed; its stdout.
    pub fn zfs_ok(&self, args: &[&str]) -> String {
        self.inner.zfs_ok(args)
    }

    /// Commits the pool, so `list`/`iostat` show what was written (they show the last
    /// commit, as ZFS does), and waits out the two-txg deferral of frees.
    pub fn settle(&self, pool: &str) {
        for _ in 0..3 {
            self.zpool_ok(&["sync", pool]);
        }
    }

    /// `zpool list -Hpv`: (name, size, alloc, free) of the pool and each vdev row.
    pub fn list_v(&self, pool: &str) -> Vec<(String, u64, u64, u64)> {
        self.zpool_ok(&["list", "-Hpv", "-o", "name,size,alloc,free", pool])
            .lines()
            .map(|line| {
                let fields: Vec<&str> = line.trim_start_matches('\t').split('\t').collect();
                let number = |i: usize| fields[i].parse::<u64>().unwrap_or(0);
                (fields[0].to_string(), number(1), number(2), number(3))
            })
            .collect()
    }

    /// ALLOC of the vdev row named `name` in `zpool list -v`.
    pub fn vdev_alloc_bytes(&self, pool: &str, name: &str) -> u64 {
        self.list_v(pool)
            .into_iter()
            .skip(1)
            .find(|row| row.0 == name)
            .unwrap_or_else(|| panic!("no vdev row {name} in zpool list -v {pool}"))
            .2
    }

    /// The pool's CAP column (`zpool list -Hp -o cap`), in percent.
    pub fn capacity_percent(&self, pool: &str) -> u64 {
        self.zpool_ok(&["list", "-Hp", "-o", "cap", pool])
            .trim()
            .parse()
            .unwrap()
    }

    /// `zpool iostat -Hpv`: (name, read ops, read bytes) of every row (per second since
    /// import, as the first report of iostat is).
    pub fn iostat_reads(&self, pool: &str) -> Vec<(String, u64, u64)> {
        self.zpool_ok(&["iostat", "-Hpv", pool])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let fields: Vec<&str> = line.trim_start_matches('\t').split('\t').collect();
                let number = |i: usize| fields[i].parse::<u64>().unwrap_or(0);
                (fields[0].to_string(), number(3), number(5))
            })
            .collect()
    }

    pub fn status(&self, pool: &str) -> String {
        self.zpool_ok(&["status", pool])
    }

    /// Stops the daemon and waits for its mounts under the lab to go (auto-unmount).
    fn stop(&self) {
        self.inner.stop_daemon();
        let prefix = format!("{}/", self.inner.dir.display());
        for _ in 0..50 {
            if lab_mounts(&prefix).is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        for path in lab_mounts(&prefix).iter().rev() {
            let _ = Command::new("umount").args(["-l", path]).status();
        }
    }
}

impl Drop for SeedLab {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lab_mounts(prefix: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(1))
        .filter(|p| p.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// xorshift64*: the pseudorandom bytes every experiment writes (a seed per file, so a
/// file's content can be regenerated to check what reads back).
pub struct Xorshift(u64);

impl Xorshift {
    pub fn new(seed: u64) -> Xorshift {
        Xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    pub fn fill(&mut self, buffer: &mut [u8]) {
        for chunk in buffer.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

const CHUNK_BYTES: usize = 1 << 20;

/// `dd if=/dev/urandom of=path`: writes `size_bytes` of seeded incompressible bytes in
/// 1 MiB writes. Stops at the first failed write and returns its error (ENOSPC when
/// filling a pool); Ok(bytes written) otherwise.
pub fn write_random(path: &str, size_bytes: u64, seed: u64) -> Result<u64, std::io::Error> {
    let mut file = std::fs::File::create(path)?;
    let mut rng = Xorshift::new(seed);
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut written_bytes = 0;
    while written_bytes < size_bytes {
        let length = (size_bytes - written_bytes).min(CHUNK_BYTES as u64) as usize;
        rng.fill(&mut buffer[..length]);
        file.write_all(&buffer[..length])?;
        written_bytes += length as u64;
    }
    Ok(written_bytes)
}

/// Reads `path` back and compares it with what `write_random(path, size, seed)` wrote.
/// Err(the read error) when a read fails (EIO for a damaged block).
pub fn read_matches(path: &str, size_bytes: u64, seed: u64) -> Result<bool, std::io::Error> {
    let mut file = std::fs::File::open(path)?;
    let mut rng = Xorshift::new(seed);
    let mut expected = vec![0u8; CHUNK_BYTES];
    let mut actual = vec![0u8; CHUNK_BYTES];
    let mut read_bytes = 0;
    while read_bytes < size_bytes {
        let length = (size_bytes - read_bytes).min(CHUNK_BYTES as u64) as usize;
        rng.fill(&mut expected[..length]);
        file.read_exact(&mut actual[..length])?;
        if actual[..length] != expected[..length] {
            return Ok(false);
        }
        read_bytes += length as u64;
    }
    let mut rest = Vec::new();
    file.read_to_end(&mut rest)?;
    Ok(rest.is_empty())
}

/// Post 003's corruptor: `loop_count` garbage 8K blocks, each at a random 8K-aligned block
/// of the device short of its last 100 ("$blocknum = int(rand($numblocks-100))"), the same
/// 8K of garbage every time, from a fixed seed ("srand 32767"). Perl's generator is not
/// ours, so the blocks hit differ from the post's; the fraction is the same.
pub fn corrupt(device: &str, fraction: f64, seed: u64) -> u64 {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(device)
        .unwrap();
    let device_bytes = file.metadata().unwrap().len();
    let block_count = device_bytes / GARBAGE_BLOCK_BYTES;
    let loop_count = (block_count as f64 * fraction) as u64;
    let mut rng = Xorshift::new(seed);
    let mut garbage = vec![0u8; GARBAGE_BLOCK_BYTES as usize];
    rng.fill(&mut garbage);
    for _ in 0..loop_count {
        let block = rng.below(block_count - 100);
        file.seek(SeekFrom::Start(block * GARBAGE_BLOCK_BYTES))
            .unwrap();
        file.write_all(&garbage).unwrap();
    }
    file.sync_all().unwrap();
    loop_count
}

/// Copies a device file (the post's `cp 0.qcow2 0.qcow2.bak` and the restore).
pub fn copy_device(from: &str, to: &str) {
    let status = Command::new("cp")
        .args(["--sparse=always", from, to])
        .status()
        .unwrap();
    assert!(status.success(), "cp {from} {to}");
}

/// A human-readable size or count as zpool prints it ("124M", "5.13K", "0B", "98") in
/// units (base 1024, as nicenum).
pub fn parse_nice(text: &str) -> f64 {
    let text = text.trim().trim_end_matches('B');
    let (number, shift) = match text.chars().last() {
        Some('K') => (&text[..text.len() - 1], 10),
        Some('M') => (&text[..text.len() - 1], 20),
        Some('G') => (&text[..text.len() - 1], 30),
        Some('T') => (&text[..text.len() - 1], 40),
        _ => (text, 0),
    };
    if number.is_empty() {
        return 0.0;
    }
    number
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("not a number: {text}"))
        * (1u64 << shift) as f64
}

/// The `  scan: scrub repaired X in HH:MM:SS with N errors on …` or `  scan: resilvered X
/// in …` line of a status: (X in bytes, N).
pub fn scan_outcome(status: &str) -> (f64, u64) {
    let line = status
        .lines()
        .find(|l| l.starts_with("  scan: "))
        .unwrap_or_else(|| panic!("no scan line in\n{status}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let amount_at = words
        .iter()
        .position(|w| *w == "repaired" || *w == "resilvered")
        .unwrap_or_else(|| panic!("no amount in {line}"))
        + 1;
    let errors_at = words
        .iter()
        .position(|w| *w == "with")
        .unwrap_or_else(|| panic!("no error count in {line}"))
        + 1;
    (
        parse_nice(words[amount_at]),
        words[errors_at].parse().unwrap(),
    )
}

/// The CKSUM column of the config row named `name` in a status.
pub fn cksum_of(status: &str, name: &str) -> f64 {
    let row = status
        .lines()
        .find(|l| l.starts_with('\t') && l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{status}"));
    parse_nice(row.split_whitespace().nth(4).unwrap())
}

/// `errors: N data errors, use '-v' for a list` → N (0 for `No known data errors`).
pub fn data_error_count(status: &str) -> u64 {
    let line = status
        .lines()
        .find(|l| l.starts_with("errors: "))
        .unwrap_or_else(|| panic!("no errors line in\n{status}"));
    if line == "errors: No known data errors" {
        return 0;
    }
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The files `zpool status -v` lists as permanently damaged (the lines after
/// `errors: Permanent errors have been detected in the following files:`).
pub fn damaged_files(status_v: &str) -> Vec<String> {
    status_v
        .lines()
        .skip_while(|l| *l != "errors: Permanent errors have been detected in the following files:")
        .skip(1)
        .filter(|l| l.starts_with("        "))
        .map(|l| l.trim().to_string())
        .collect()
}

/// One row of a status config table (`\t%-*s  %-8s %5s %5s %5s`, the name indented two
/// spaces per level and padded to `width`), for exact expected tables.
pub fn config_row(depth: usize, name: &str, width: usize, state: &str) -> String {
    format!(
        "\t{:depth$}{name:<w$}  {state:<8} {:>5} {:>5} {:>5}\n",
        "",
        0,
        0,
        0,
        depth = depth,
        w = width - depth
    )
}

/// The import listing of a pool missing top-level vdevs, from ` state:` down to
/// `config:` (the lines OpenZFS words as reference/cli.md gives them).
const UNAVAIL_LISTING: &str = " state: UNAVAIL\n\
status: One or more devices are missing from the system.\n\
action: The pool cannot be imported. Attach the missing\n\
\tdevices and try again.\n   \
see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-3C\n\
config:\n";

/// Asserts `zpool import -d dir` lists `pool` as UNAVAIL with OpenZFS's messages, and that
/// importing it fails, with `-f` too, with "one or more devices is currently unavailable".
pub fn assert_unimportable(lab: &SeedLab, dir: &str, pool: &str) {
    let listing = lab.zpool_ok(&["import", "-d", dir]);
    assert!(
        listing.starts_with(&format!("  pool: {pool}\n    id: ")),
        "{listing}"
    );
    assert!(listing.contains(UNAVAIL_LISTING), "{listing}");
    assert!(
        listing.contains(&format!("\t{pool} "))
            && listing.contains("UNAVAIL  insufficient replicas\n"),
        "{listing}"
    );
    for force in [false, true] {
        let mut args = vec!["import", "-d", dir];
        if force {
            args.push("-f");
        }
        args.push(pool);
        let out = lab.zpool(&args);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stdout);
        assert_eq!(
            out.stderr,
            format!("cannot import '{pool}': one or more devices is currently unavailable\n"),
            "{args:?}"
        );
    }
}
