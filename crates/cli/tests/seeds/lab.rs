//! The seeds' bench: the shared CLI lab (its own cache file, daemon and sparse disk files
//! under /tmp) with a mount directory, plus the admin's tools the posts use: `dd` of
//! pseudorandom data, `zpool list -v` / `zpool iostat -v` / `zpool status` readers, and the
//! corruptor of post 003 (seeded garbage 8K blocks written over a device).

// Each post's module uses its own subset of the bench.
#![allow(dead_code)]

use crate::common;
use crate::common::host::Host;
use std::io::{Read, Seek, SeekFrom, Write};
use std::process::Command;

/// Bytes of one garbage block of post 003's corruptor ("generate 8K of garbage data").
pub const GARBAGE_BLOCK_BYTES: u64 = 8 << 10;

/// The shared replication host (lab directory, cache file, daemon, `zfs`/`zpool` first in
/// PATH for the admin's scripts and syncoid; its drop stops the daemon and waits for the
/// mounts to go) with the seeds' helpers on top.
pub struct SeedLab {
    pub host: Host,
}

impl SeedLab {
    /// A lab whose daemon runs with the seed posts' allocator granularity: their ZFS
    /// (0.6.5, 2016) had `metaslab_aliquot` = 512K, OpenZFS 2.2 and later 1M (which makes,
    /// e.g., two 900K records in a row land on one vdev).
    pub fn new() -> SeedLab {
        let mut host = Host::new();
        host.lab.env.push((
            "ZETTA_METASLAB_ALIQUOT".to_string(),
            (512u64 << 10).to_string(),
        ));
        SeedLab { host }
    }

    /// The underlying CLI lab.
    pub fn inner(&self) -> &common::Lab {
        &self.host.lab
    }

    /// `<lab>/<rest>`.
    pub fn path(&self, rest: &str) -> String {
        self.host.lab.path(rest)
    }

    /// A sparse disk file `<lab>/<name>` (parent directories made), its absolute path.
    pub fn disk(&self, name: &str, size_bytes: u64) -> String {
        let path = self.host.lab.dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::File::create(&path)
            .unwrap()
            .set_len(size_bytes)
            .unwrap();
        path.to_string_lossy().into_owned()
    }

    pub fn zpool(&self, args: &[&str]) -> common::Output {
        self.host.lab.zpool(args)
    }

    pub fn zfs(&self, args: &[&str]) -> common::Output {
        self.host.lab.zfs(args)
    }

    /// A `zpool` command that must succeed; its stdout.
    pub fn zpool_ok(&self, args: &[&str]) -> String {
        let out = self.zpool(args);
        assert_eq!(out.code, 0, "zpool {args:?} failed: {}", out.stderr);
        out.stdout
    }

    /// A `zfs` command that must succeed; its stdout.
    pub fn zfs_ok(&self, args: &[&str]) -> String {
        self.host.lab.zfs_ok(args)
    }

    /// Commits the pool, so `list`/`iostat` show what was written (they show the last
    /// commit, as ZFS does), and waits out the two-txg deferral of frees.
    pub fn settle(&self, pool: &str) {
        for _ in 0..3 {
            self.zpool_ok(&["sync", pool]);
        }
    }

    /// `settle`, then a margin, so `stat`/`du` show the committed allocation and block
    /// size (the commit's invalidation of the kernel's attributes does it; the margin is
    /// from when the FUSE mount's attribute TTL was one second).
    pub fn settle_for_stat(&self, pool: &str) {
        self.settle(pool);
        std::thread::sleep(std::time::Duration::from_millis(1100));
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
/// `config:` (the lines OpenZFS words as reference/cli.md gives them; the msgid of
/// ZPOOL_STATUS_BAD_GUID_SUM, 6X, as the copies seed post shows it).
const UNAVAIL_LISTING: &str = " state: UNAVAIL\n\
status: One or more devices are missing from the system.\n\
action: The pool cannot be imported. Attach the missing\n\
\tdevices and try again.\n   \
see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-6X\n\
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
    // The missing top-level vdev is not listed (no label describes it): the pool row says
    // "missing device" and the note after the table says more devices exist, as the post.
    assert!(
        listing.contains(&format!("\t{pool} "))
            && listing.contains("UNAVAIL  missing device\n")
            && listing
                .contains("\tAdditional devices are known to be part of this pool, though their\n"),
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

impl SeedLab {
    /// A shell command line (bash, pipefail) with the lab's `zfs`/`zpool` first in PATH,
    /// that must succeed; its stdout.
    pub fn sh_ok(&self, script: &str) -> String {
        self.host.sh_ok(script)
    }

    /// `du -s` of `path` in bytes: allocated space (st_blocks), or with `apparent` the
    /// logical size (`du --apparent-size`, st_size).
    pub fn du_bytes(&self, path: &str, apparent: bool) -> u64 {
        let flag = if apparent { "--apparent-size " } else { "" };
        self.sh_ok(&format!("du -s --block-size=1 {flag}'{path}'"))
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("du of {path}"))
    }

    /// `zfs get -Hp -o value <property> <dataset>`, trimmed.
    pub fn zfs_get(&self, property: &str, dataset: &str) -> String {
        self.zfs_ok(&["get", "-Hp", "-o", "value", property, dataset])
            .trim()
            .to_string()
    }

    /// `compressratio` of a dataset (`zfs get -Hp`: "1.55").
    pub fn compressratio(&self, dataset: &str) -> f64 {
        let value = self.zfs_get("compressratio", dataset);
        value
            .trim_end_matches('x')
            .parse()
            .unwrap_or_else(|_| panic!("compressratio of {dataset}: {value}"))
    }
}

/// One syslog-like line of `write_log_text` (hosts, programs and messages of the posts).
fn log_line(rng: &mut Xorshift, line: &mut String) {
    const HOSTS: [&str; 5] = ["banshee", "locutus", "client-prod1", "lab", "box"];
    const PROGRAMS: [&str; 8] = [
        "sshd", "kernel", "CRON", "systemd", "zfs-zed", "sanoid", "syncoid", "nginx",
    ];
    use std::fmt::Write as _;
    let mut pick = |bound: u64| rng.below(bound);
    let _ = write!(
        line,
        "Jun {:2} {:02}:{:02}:{:02} {} {}[{}]: ",
        1 + pick(30),
        pick(24),
        pick(60),
        pick(60),
        HOSTS[pick(5) as usize],
        PROGRAMS[pick(8) as usize],
        100 + pick(99900)
    );
    let _ = match pick(6) {
        0 => writeln!(
            line,
            "Accepted publickey for root from 10.0.{}.{} port {} ssh2",
            pick(256),
            pick(256),
            pick(65536)
        ),
        1 => writeln!(
            line,
            "pam_unix(cron:session): session opened for user root by (uid=0)"
        ),
        2 => writeln!(line, "Started Session {} of user root.", pick(65536)),
        3 => writeln!(line, "eid={} class=history_event pool=data", pick(65536)),
        4 => writeln!(
            line,
            "GET /index.php?page={} HTTP/1.1 200 {}",
            pick(65536),
            pick(65536)
        ),
        _ => writeln!(
            line,
            "Received disconnect from 10.0.{}.{} port {}:11: disconnected by user",
            pick(256),
            pick(256),
            pick(65536)
        ),
    };
}

/// Writes `size_bytes` of compressible data: syslog-like text (lz4: about 2.8:1 in 128K
/// records, 2:1 in 4K ones), except that `random_percent` of each 1 MiB chunk is seeded
/// pseudorandom bytes (incompressible), as in a disk image. 1 MiB writes; returns the
/// first write error.
pub fn write_compressible(
    path: &str,
    size_bytes: u64,
    seed: u64,
    random_percent: u64,
) -> Result<u64, std::io::Error> {
    let mut file = std::fs::File::create(path)?;
    let mut rng = Xorshift::new(seed);
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut text = String::new();
    let random_bytes = CHUNK_BYTES * random_percent as usize / 100;
    let mut written_bytes = 0;
    while written_bytes < size_bytes {
        rng.fill(&mut buffer[..random_bytes]);
        let mut at = random_bytes;
        while at < CHUNK_BYTES {
            if text.is_empty() {
                for _ in 0..64 {
                    log_line(&mut rng, &mut text);
                }
            }
            let take = text.len().min(CHUNK_BYTES - at);
            buffer[at..at + take].copy_from_slice(&text.as_bytes()[..take]);
            text.drain(..take);
            at += take;
        }
        let length = (size_bytes - written_bytes).min(CHUNK_BYTES as u64) as usize;
        file.write_all(&buffer[..length])?;
        written_bytes += length as u64;
    }
    Ok(written_bytes)
}

/// Evicts a device file from the host's page cache (`posix_fadvise(DONTNEED)` on this file
/// only), so the next reads of the pool come from the disk, as after the post's `zpool
/// export ; modprobe -r zfs` ("a weapons-grade-certain method of emptying the ARC").
pub fn drop_cached_pages(device: &str) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(device).unwrap();
    file.sync_all().unwrap();
    // SAFETY: a plain advisory call on a descriptor this function owns.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise({device})");
}

/// `pv < path > /dev/null`: reads the whole file in 1 MiB reads; (bytes, seconds).
pub fn timed_read(path: &str) -> (u64, f64) {
    let started = std::time::Instant::now();
    let mut file = std::fs::File::open(path).unwrap();
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let mut total_bytes = 0u64;
    loop {
        let n = file.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        total_bytes += n as u64;
    }
    (total_bytes, started.elapsed().as_secs_f64())
}
