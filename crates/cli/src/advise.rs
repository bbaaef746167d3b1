//! `zetta advise [-j] [POOL|DATASET]`: the seed post "ZFS tuning cheat sheet" (and the
//! imbalance posts beside it) as live checks on imported pools. OpenZFS has no such
//! command; its nearest kin are the `action:` lines of `zpool status` and `arc_summary`.
//!
//! Theory. The advisor separates facts from rules. `gather` collects, for each pool, what
//! the checks need and nothing else: the top-level vdevs (ashift, size, allocated, log or
//! not) with each leaf's physical sector size (sysfs, for block devices; a file has none),
//! the cache devices, the pool's size and allocation, each dataset's `atime`, `xattr`,
//! `compression`, `recordsize` and `sync` with their sources (from `zfs get`, run
//! in-process, so the advisor reads what the administrator reads), its write counters
//! since import (`zetta::dataset_kstats`: sizes, random vs sequential, synchronous writes
//! and fsyncs, kept in the ZPL write path), for a dataset with `compression=off` what lz4
//! would make of a sample of its files' first records (the engine's own compressor and
//! its 12.5% keep rule, rounded to the vdev's sector), and the daemon's ARC counters.
//! `findings` is a pure function of those facts — one rule per row of the cheat sheet —
//! so every rule is unit-tested on made-up facts, and the integration tests
//! (`tests/advise.rs`) build real pools that show each problem.
//!
//! Each finding says what was seen (with the numbers), why it matters (one line, after the
//! post's reasoning), the command that fixes it, and the risk of that command. Rules and
//! their thresholds are the `*_MIN`/`*_MAX` constants below. A finding is reported at the
//! highest dataset of a subtree that has the problem (a child inheriting the same value
//! is covered by its parent's fix).
//!
//! Exit codes: 0 no findings, 1 the command failed (no such pool or dataset), 2 usage,
//! 3 findings were reported — so a script tells "advice present" from "could not look".
//!
//! Locking: properties are read first (the in-process `zfs get` opens the pool itself),
//! then the pool is held exclusively while its vdevs, counters and samples are read (a
//! bounded sample: `SAMPLE_*` below), then released before the ARC counters are summed
//! (which take every pool's shared lock).

use crate::zpool::pool::{each_vdev, open_pool};
use crate::zpool::CmdError;
use std::io::Write;
use zetta::dataset_kstats::DatasetKstatsSnapshot;
use zetta::spa::Spa;
use zetta::vdev::{Vdev, VdevKind};
use zetta_zutil::json::{output_version, Json};
use zetta_zutil::nicenum::nicenum;

/// Writes a dataset must have taken since import before its sizes say anything.
pub const WRITES_MIN: u64 = 256;
/// The share of writes (percent) of one size, random, that calls for that recordsize.
pub const RANDOM_SHARE_MIN_PERCENT: u64 = 50;
/// Synchronous operations (O_SYNC writes and fsyncs) that make a dataset sync-heavy, and
/// their share of its writes (percent).
pub const SYNC_OPS_MIN: u64 = 100;
pub const SYNC_SHARE_MIN_PERCENT: u64 = 10;
/// Pool fill (percent of SIZE allocated) past which the pool slows down.
pub const CAPACITY_MAX_PERCENT: u64 = 80;
/// Difference of fill (percentage points) between the fullest and the emptiest data
/// top-level vdev that counts as imbalanced.
pub const IMBALANCE_MIN_POINTS: u64 = 30;
/// ARC lookups since start before its hit rate says anything.
pub const ARC_LOOKUPS_MIN: u64 = 10_000;
/// Hit rate (percent) at or above which an L2ARC has nothing to add.
pub const ARC_HIT_GOOD_PERCENT: u64 = 90;
/// Ghost hits (percent of misses) that show a working set larger than the ARC.
pub const ARC_GHOST_SHARE_MIN_PERCENT: u64 = 20;
/// How much lz4 must save (percent of the allocated size) for compressible data.
pub const COMPRESS_SAVING_MIN_PERCENT: u64 = 10;
/// The compression sample: dnodes looked at, files read (their first record), bytes read.
pub const SAMPLE_DNODES_MAX: u64 = 4096;
pub const SAMPLE_FILES_MAX: usize = 64;
pub const SAMPLE_BYTES_MAX: u64 = 8 << 20;

const USAGE: &str = "usage: zetta advise [-j] [pool|dataset]\n";

const HELP: &str = "\
usage: zetta advise [-j] [pool|dataset]

The \"ZFS tuning cheat sheet\" as live checks on imported pools (all of them when none is
named; a dataset limits the dataset checks to it and its descendants and skips the pool
checks). Each finding says what was seen, why it matters, the command that fixes it and
the risk of running that command.

Checks:
  ashift       a top-level vdev whose ashift is below its devices' physical sector size
               (read-modify-write on every small write; fixed for the vdev's life)
  compression  compression=off on a dataset whose files lz4 would shrink (a sample of
               their first records, compressed with the engine's lz4)
  atime        atime=on: every read also writes the file's access time
  xattr        xattr=dir: every extended attribute is a hidden file (xattr=sa on Linux)
  recordsize   most writes since import are random and smaller than the recordsize
               (per-dataset request-size histograms, kept in memory since import)
  sync         many O_SYNC writes or fsyncs since import and no log vdev (SLOG)
  arc          an L2ARC that the ARC's hit rate says cannot help, or a working set
               larger than the ARC (misses the ARC had just evicted)
  capacity     the pool is more than 80% full
  balance      top-level vdevs filled unevenly (a vdev added to a full pool)

Counters start at zero when the pool is imported (as `zpool iostat` does), so the
workload checks (recordsize, sync, arc) need the pool to have been used for a while.

Options:
  -j    print the findings as JSON

Exit status: 0 no findings, 1 error, 2 usage error, 3 findings reported.
";

/// Exit code when findings were reported.
pub const EXIT_FINDINGS: i32 = 3;

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The check (`ashift`, `compression`, ...).
    pub check: &'static str,
    /// The pool, vdev or dataset it is about.
    pub subject: String,
    pub what: String,
    pub why: &'static str,
    pub fix: String,
    pub risk: String,
}

/// A leaf device of a top-level vdev.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafFacts {
    pub path: String,
    /// The device's physical sector size; `None` for a file.
    pub physical_sector_bytes: Option<u64>,
}

/// A top-level vdev.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopFacts {
    pub name: String,
    pub ashift: u32,
    pub size_bytes: u64,
    pub allocated_bytes: u64,
    pub is_log: bool,
    pub leaves: Vec<LeafFacts>,
}

/// What lz4 would make of a sample of a dataset's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompressionSample {
    pub records: u64,
    /// Allocated size of the sampled records as stored (uncompressed).
    pub stored_bytes: u64,
    /// Allocated size they would have under lz4.
    pub lz4_bytes: u64,
}

/// A filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatasetFacts {
    pub name: String,
    /// Property values and their sources (`zfs get`'s VALUE and SOURCE columns).
    pub atime: (String, String),
    pub xattr: (String, String),
    pub compression: (String, String),
    pub recordsize_bytes: u64,
    pub kstats: Option<DatasetKstatsSnapshot>,
    pub sample: Option<CompressionSample>,
}

/// The ARC's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArcFacts {
    pub hits: u64,
    pub misses: u64,
    pub ghost_hits: u64,
    pub size_bytes: u64,
    pub size_bytes_max: u64,
}

/// Everything the rules look at for one pool.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolFacts {
    pub name: String,
    pub size_bytes: u64,
    pub allocated_bytes: u64,
    pub tops: Vec<TopFacts>,
    pub cache_devices: Vec<String>,
    /// Parents before children (`zfs get -r` order).
    pub datasets: Vec<DatasetFacts>,
    pub arc: ArcFacts,
    /// Whether the pool checks run (not when a dataset was named).
    pub pool_checks: bool,
}

/// `nicenum` as `zfs get` prints sizes (16K, 128K, 1M).
fn size_text(bytes: u64) -> String {
    nicenum(bytes)
}

fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    (u128::from(part) * 100 / u128::from(whole)) as u64
}

/// The parent of a dataset name within the facts, if it is there.
fn parent_of<'a>(facts: &'a PoolFacts, name: &str) -> Option<&'a DatasetFacts> {
    let (parent, _) = name.rsplit_once('/')?;
    facts.datasets.iter().find(|d| d.name == parent)
}

/// Whether a dataset with a bad value is covered by its parent's finding: the parent has
/// the same value and the dataset did not set it itself.
fn covered_by_parent(
    facts: &PoolFacts,
    dataset: &DatasetFacts,
    pick: fn(&DatasetFacts) -> &(String, String),
) -> bool {
    let source = &pick(dataset).1;
    let own = source == "local" || source == "received";
    !own && parent_of(facts, &dataset.name).is_some_and(|p| pick(p).0 == pick(dataset).0)
}

/// The cheat sheet's rules over one pool's facts.
pub fn findings(facts: &PoolFacts) -> Vec<Finding> {
    let mut found = Vec::new();
    if facts.pool_checks {
        ashift_findings(facts, &mut found);
    }
    for dataset in &facts.datasets {
        dataset_findings(facts, dataset, &mut found);
    }
    sync_findings(facts, &mut found);
    if facts.pool_checks {
        arc_findings(facts, &mut found);
        capacity_findings(facts, &mut found);
        balance_findings(facts, &mut found);
    }
    found
}

fn ashift_findings(facts: &PoolFacts, found: &mut Vec<Finding>) {
    for top in &facts.tops {
        let sector = 1u64 << top.ashift.min(63);
        for leaf in &top.leaves {
            let Some(physical) = leaf.physical_sector_bytes else {
                continue;
            };
            if sector >= physical {
                continue;
            }
            let wanted = 63 - physical.leading_zeros();
            found.push(Finding {
                check: "ashift",
                subject: format!("{} vdev {}", facts.name, top.name),
                what: format!(
                    "ashift={} ({}B sectors) on {} whose physical sectors are {}B",
                    top.ashift,
                    sector,
                    leaf.path,
                    physical
                ),
                why: "too low an ashift makes the device read, modify and rewrite a whole physical sector for every smaller write: set it too high rather than too low",
                fix: format!(
                    "ashift is fixed for the vdev's life: create a new pool with 'zpool create -o ashift={wanted} ...', then 'zfs snapshot -r {pool}@move && zfs send -R {pool}@move | zfs receive -F NEWPOOL' and retire this one",
                    pool = facts.name
                ),
                risk: "needs a second set of devices (or a full backup) and a switch-over; the old pool is destroyed at the end".to_string(),
            });
            break;
        }
    }
}

fn dataset_findings(facts: &PoolFacts, dataset: &DatasetFacts, found: &mut Vec<Finding>) {
    let name = &dataset.name;
    // compression=off where the data compresses.
    if dataset.compression.0 == "off" {
        if let Some(sample) = dataset.sample {
            let saved = sample.stored_bytes.saturating_sub(sample.lz4_bytes);
            if sample.records > 0
                && percent(saved, sample.stored_bytes) >= COMPRESS_SAVING_MIN_PERCENT
            {
                let ratio_x100 = sample.stored_bytes * 100 / sample.lz4_bytes.max(1);
                found.push(Finding {
                    check: "compression",
                    subject: name.clone(),
                    what: format!(
                        "compression=off, and lz4 shrinks a sample of its data {}.{:02}x ({} records, {} stored, {} under lz4)",
                        ratio_x100 / 100,
                        ratio_x100 % 100,
                        sample.records,
                        size_text(sample.stored_bytes),
                        size_text(sample.lz4_bytes)
                    ),
                    why: "lz4 is faster than the storage it saves: less to write and to read, even slack space compresses",
                    fix: format!("zfs set compression=lz4 {name}"),
                    risk: "applies to new writes only (rewrite files or send/receive to compress what is there); costs a little CPU on incompressible data".to_string(),
                });
            }
        }
    }
    // atime=on.
    if dataset.atime.0 == "on" && !covered_by_parent(facts, dataset, |d| &d.atime) {
        found.push(Finding {
            check: "atime",
            subject: name.clone(),
            what: "atime=on".to_string(),
            why: "every read of a file or listing of a directory also writes its access time: it can double the I/O load",
            fix: format!("zfs set atime=off {name}"),
            risk: "programs that read access times (mail readers checking for new mail, tmp cleaners, some backup tools) no longer see them change; relatime=on is the middle way".to_string(),
        });
    }
    // xattr=dir.
    if dataset.xattr.0 == "dir" && !covered_by_parent(facts, dataset, |d| &d.xattr) {
        found.push(Finding {
            check: "xattr",
            subject: name.clone(),
            what: "xattr=dir".to_string(),
            why: "each extended attribute is a tiny file in a hidden directory: slow with many files, especially under SELinux; xattr=sa keeps them in the inode",
            fix: format!("zfs set xattr=sa {name}"),
            risk: "attributes already written stay in directories until rewritten; sa xattrs are not read by ZFS implementations without system attributes (very old pools)".to_string(),
        });
    }
    // recordsize vs the observed writes.
    if let Some(kstats) = &dataset.kstats {
        if kstats.writes >= WRITES_MIN {
            let (bucket, count) = kstats
                .random_write_size
                .iter()
                .copied()
                .enumerate()
                .max_by_key(|&(bucket, count)| (count, std::cmp::Reverse(bucket)))
                .unwrap_or((0, 0));
            let size = 1u64 << bucket;
            let share = percent(count, kstats.writes);
            if share >= RANDOM_SHARE_MIN_PERCENT && size * 2 <= dataset.recordsize_bytes {
                let wanted = size.max(4096);
                found.push(Finding {
                    check: "recordsize",
                    subject: name.clone(),
                    what: format!(
                        "{share}% of writes since import are {} random ({count} of {}), recordsize={}",
                        size_text(size),
                        kstats.writes,
                        size_text(dataset.recordsize_bytes)
                    ),
                    why: "a write smaller than the record reads and rewrites the whole record: match recordsize to the size of the random writes (databases, VM images)",
                    fix: format!("zfs set recordsize={} {name}", size_text(wanted)),
                    risk: "new writes only: existing files keep their record size until rewritten (copy them); smaller records mean more metadata and lower compression, and slower large sequential reads".to_string(),
                });
            }
        }
    }
}

fn sync_findings(facts: &PoolFacts, found: &mut Vec<Finding>) {
    if facts.tops.iter().any(|t| t.is_log) {
        return;
    }
    for dataset in &facts.datasets {
        let Some(kstats) = &dataset.kstats else {
            continue;
        };
        let sync_ops = kstats.sync_writes + kstats.fsyncs;
        if sync_ops < SYNC_OPS_MIN
            || percent(sync_ops, kstats.writes.max(1)) < SYNC_SHARE_MIN_PERCENT
        {
            continue;
        }
        found.push(Finding {
            check: "sync",
            subject: dataset.name.clone(),
            what: format!(
                "{} synchronous writes and {} fsyncs since import ({} writes), and the pool has no log vdev",
                kstats.sync_writes, kstats.fsyncs, kstats.writes
            ),
            why: "every synchronous write waits for the intent log on the pool's own disks; a fast separate log (SLOG) makes them perform like asynchronous writes",
            fix: format!(
                "zpool add {} log mirror FAST-DEVICE-1 FAST-DEVICE-2",
                facts.name
            ),
            risk: "the log device must be fast and power-safe (an SSD with power-loss protection); a lone log device that fails at a crash loses the last seconds of synchronous writes, hence the mirror".to_string(),
        });
    }
}

fn arc_findings(facts: &PoolFacts, found: &mut Vec<Finding>) {
    let arc = &facts.arc;
    let lookups = arc.hits + arc.misses;
    if lookups < ARC_LOOKUPS_MIN {
        return;
    }
    let hit_rate = percent(arc.hits, lookups);
    if hit_rate >= ARC_HIT_GOOD_PERCENT {
        if let Some(device) = facts.cache_devices.first() {
            found.push(Finding {
                check: "arc",
                subject: facts.name.clone(),
                what: format!(
                    "ARC hit rate {hit_rate}% ({} hits, {} misses), and the pool has a cache device ({device})",
                    arc.hits, arc.misses
                ),
                why: "the ARC already serves almost every read; an L2ARC adds nothing and its index takes RAM from the ARC",
                fix: format!("zpool remove {} {device}", facts.name),
                risk: "none to the data (a cache device holds copies only); reads it served come from the pool's disks again".to_string(),
            });
        }
        return;
    }
    let full = arc.size_bytes_max > 0 && percent(arc.size_bytes, arc.size_bytes_max) >= 90;
    if full && percent(arc.ghost_hits, arc.misses) >= ARC_GHOST_SHARE_MIN_PERCENT {
        found.push(Finding {
            check: "arc",
            subject: facts.name.clone(),
            what: format!(
                "ARC hit rate {hit_rate}% with the ARC full ({} of {}); {} misses were of data it had just evicted",
                size_text(arc.size_bytes),
                size_text(arc.size_bytes_max),
                arc.ghost_hits
            ),
            why: "the working set is larger than the ARC: more RAM for the ARC helps first; an L2ARC only for hot data far larger than RAM, since its index costs RAM",
            fix: "raise zfs_arc_max (more RAM); if RAM cannot grow: zpool add POOL cache FAST-DEVICE".replace("POOL", &facts.name),
            risk: "a larger ARC leaves less memory to programs; an L2ARC is emptied at every restart and shrinks the ARC by its index".to_string(),
        });
    }
}

fn capacity_findings(facts: &PoolFacts, found: &mut Vec<Finding>) {
    let capacity = percent(facts.allocated_bytes, facts.size_bytes);
    if facts.size_bytes == 0 || capacity <= CAPACITY_MAX_PERCENT {
        return;
    }
    found.push(Finding {
        check: "capacity",
        subject: facts.name.clone(),
        what: format!(
            "{capacity}% full ({} allocated of {})",
            size_text(facts.allocated_bytes),
            size_text(facts.size_bytes)
        ),
        why: "past 80% the allocator hunts for free space in fragmented metaslabs and writes slow down; near full only frees are allowed",
        fix: format!(
            "free space: 'zfs list -t snapshot -o name,used -s used -r {pool}' then 'zfs destroy' old snapshots, delete data, or 'zpool add {pool} VDEV'",
            pool = facts.name
        ),
        risk: "destroyed snapshots and data are gone for good; a vdev added now starts empty beside full ones (see the balance check)".to_string(),
    });
}

fn balance_findings(facts: &PoolFacts, found: &mut Vec<Finding>) {
    let data: Vec<&TopFacts> = facts
        .tops
        .iter()
        .filter(|t| !t.is_log && t.size_bytes > 0)
        .collect();
    if data.len() < 2 {
        return;
    }
    let fill = |t: &TopFacts| percent(t.allocated_bytes, t.size_bytes);
    let (Some(fullest), Some(emptiest)) = (
        data.iter().max_by_key(|t| fill(t)),
        data.iter().min_by_key(|t| fill(t)),
    ) else {
        return;
    };
    let spread = fill(fullest) - fill(emptiest);
    if spread < IMBALANCE_MIN_POINTS {
        return;
    }
    found.push(Finding {
        check: "balance",
        subject: facts.name.clone(),
        what: format!(
            "top-level vdevs filled unevenly: {} is {}% full, {} is {}% full",
            fullest.name,
            fill(fullest),
            emptiest.name,
            fill(emptiest)
        ),
        why: "new writes go to each vdev by its FREE space, not its speed, and old data never moves: reads of the old data and most new writes land on one vdev",
        fix: format!(
            "rewrite the data so it spreads over every vdev: 'zfs snapshot -r {pool}/DATASET@rebalance && zfs send -R {pool}/DATASET@rebalance | zfs receive {pool}/DATASET.new', check it, then 'zfs destroy -r {pool}/DATASET && zfs rename {pool}/DATASET.new {pool}/DATASET' (or copy files and delete the originals)",
            pool = facts.name
        ),
        risk: "needs free space for a second copy of the dataset while both exist; writers must stop for the switch; blocks still held by other snapshots stay where they are".to_string(),
    });
}

/// The text report.
pub fn report_text(pool: &str, found: &[Finding]) -> String {
    let mut text = String::new();
    if found.is_empty() {
        text.push_str(&format!("{pool}: no findings\n"));
        return text;
    }
    let noun = if found.len() == 1 {
        "finding"
    } else {
        "findings"
    };
    text.push_str(&format!("{pool}: {} {noun}\n", found.len()));
    for finding in found {
        text.push_str(&format!(
            "\n{}: {}\n    what: {}\n    why:  {}\n    fix:  {}\n    risk: {}\n",
            finding.check, finding.subject, finding.what, finding.why, finding.fix, finding.risk
        ));
    }
    text
}

fn finding_json(finding: &Finding) -> Json {
    let mut object = Json::object();
    object.insert("check", Json::string(finding.check));
    object.insert("subject", Json::string(finding.subject.clone()));
    object.insert("what", Json::string(finding.what.clone()));
    object.insert("why", Json::string(finding.why));
    object.insert("fix", Json::string(finding.fix.clone()));
    object.insert("risk", Json::string(finding.risk.clone()));
    object
}

/// `zetta advise`: forwarded to the daemon (where the counters since import live) unless
/// this process holds the pools.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut json = false;
    let mut targets = Vec::new();
    for arg in args {
        match arg.as_str() {
            "-h" | "--help" | "-?" => {
                let _ = out.write_all(HELP.as_bytes());
                return 0;
            }
            "-j" | "--json" => json = true,
            other if other.starts_with('-') => {
                let _ = writeln!(err, "invalid option '{}'", other.trim_start_matches('-'));
                let _ = err.write_all(USAGE.as_bytes());
                return 2;
            }
            other => targets.push(other.to_string()),
        }
    }
    if targets.len() > 1 {
        let _ = writeln!(err, "too many arguments");
        let _ = err.write_all(USAGE.as_bytes());
        return 2;
    }
    if !(crate::daemon::direct_mode() || crate::daemon::registry::get().is_some()) {
        let mut request = vec!["advise".to_string()];
        request.extend_from_slice(args);
        return crate::daemon::client::forward(&request, out, err);
    }
    let pools: Vec<(String, Option<String>)> = match targets.first() {
        Some(target) => {
            let pool = target
                .split(['/', '@'])
                .next()
                .unwrap_or(target)
                .to_string();
            let dataset = target.contains('/').then(|| target.clone());
            vec![(pool, dataset)]
        }
        None => match crate::zpool::pool::load_cache() {
            Ok(entries) => {
                let mut names: Vec<String> = entries.into_iter().map(|e| e.name).collect();
                names.sort();
                names.into_iter().map(|n| (n, None)).collect()
            }
            Err(e) => {
                let _ = writeln!(err, "{}", e.message());
                return 1;
            }
        },
    };
    if pools.is_empty() {
        if json {
            let mut document = output_version("zetta advise");
            document.insert("pools", Json::object());
            let _ = writeln!(out, "{}", document.to_text());
        } else {
            let _ = writeln!(out, "no pools available");
        }
        return 0;
    }
    let mut any = false;
    let mut failed = false;
    let mut pools_json = Json::object();
    let mut first = true;
    for (pool, dataset) in pools {
        let facts = match gather(&pool, dataset.as_deref()) {
            Ok(facts) => facts,
            Err(e) => {
                let _ = writeln!(err, "{}", e.message());
                failed = true;
                continue;
            }
        };
        let found = findings(&facts);
        any |= !found.is_empty();
        let subject = dataset.unwrap_or(pool);
        if json {
            let mut entry = Json::object();
            entry.insert(
                "findings",
                Json::Array(found.iter().map(finding_json).collect()),
            );
            pools_json.insert(&subject, entry);
        } else {
            if !first {
                let _ = writeln!(out);
            }
            let _ = out.write_all(report_text(&subject, &found).as_bytes());
        }
        first = false;
    }
    if json {
        let mut document = output_version("zetta advise");
        document.insert("pools", pools_json);
        let _ = writeln!(out, "{}", document.to_text());
    }
    if failed {
        1
    } else if any {
        EXIT_FINDINGS
    } else {
        0
    }
}

/// Runs a `zfs` command in this process; its stdout, or its stderr as the error.
fn zfs_in_process(args: &[&str]) -> Result<String, CmdError> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = crate::zfs::run(&args, &mut out, &mut err);
    if code != 0 {
        let text = String::from_utf8_lossy(&err).trim_end().to_string();
        return Err(CmdError::Fail(text));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Collects the facts of `pool` (and only `dataset`'s subtree when one is named).
pub fn gather(pool: &str, dataset: Option<&str>) -> Result<PoolFacts, CmdError> {
    let scope = dataset.unwrap_or(pool);
    let listing = zfs_in_process(&[
        "get",
        "-Hp",
        "-r",
        "-t",
        "filesystem",
        "-o",
        "name,property,value,source",
        "atime,xattr,compression,recordsize",
        scope,
    ])?;
    let mut datasets: Vec<DatasetFacts> = Vec::new();
    for line in listing.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [name, property, value, source] = fields[..] else {
            continue;
        };
        if datasets.last().is_none_or(|d| d.name != name) {
            datasets.push(DatasetFacts {
                name: name.to_string(),
                ..DatasetFacts::default()
            });
        }
        let Some(facts) = datasets.last_mut() else {
            continue;
        };
        let pair = (value.to_string(), source.to_string());
        match property {
            "atime" => facts.atime = pair,
            "xattr" => facts.xattr = pair,
            "compression" => facts.compression = pair,
            "recordsize" => facts.recordsize_bytes = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    let mut facts = PoolFacts {
        name: pool.to_string(),
        pool_checks: dataset.is_none(),
        ..PoolFacts::default()
    };
    {
        let mut imported = open_pool(pool)?;
        let spa: &mut Spa = &mut imported.spa;
        let (size, allocated, _) = spa.space();
        facts.size_bytes = size;
        facts.allocated_bytes = allocated;
        for (index, top) in spa.root.children.iter().enumerate() {
            if top.kind == VdevKind::Hole {
                continue;
            }
            let (size_bytes, allocated_bytes) = spa
                .vdev_space(index)
                .map(|(s, a, _, _)| (s, a))
                .unwrap_or((top.asize_bytes, 0));
            facts.tops.push(TopFacts {
                name: top.display_name(),
                ashift: top.ashift,
                size_bytes,
                allocated_bytes,
                is_log: top.is_log,
                leaves: leaves_of(top),
            });
        }
        facts.cache_devices = spa.cache.iter().map(|c| c.path.clone()).collect();
        let min_ashift = facts
            .tops
            .iter()
            .filter(|t| !t.is_log)
            .map(|t| t.ashift)
            .min()
            .unwrap_or(9);
        for dataset in &mut datasets {
            let Ok(Some(object)) = spa.lookup_dataset(&dataset.name) else {
                continue;
            };
            dataset.kstats = spa.dataset_kstats.get(object);
            if dataset.compression.0 == "off" {
                dataset.sample = sample_compression(spa, object, min_ashift);
            }
        }
    }
    facts.datasets = datasets;
    let arc = crate::daemon::server::arc_stats();
    facts.arc = ArcFacts {
        hits: arc.hits,
        misses: arc.misses,
        ghost_hits: arc.mru_ghost_hits + arc.mfu_ghost_hits,
        size_bytes: arc.size_bytes,
        size_bytes_max: arc.size_bytes_max,
    };
    Ok(facts)
}

fn leaves_of(top: &Vdev) -> Vec<LeafFacts> {
    let mut leaves = Vec::new();
    each_vdev(top, &mut |vdev| {
        if vdev.kind == VdevKind::Leaf {
            leaves.push(LeafFacts {
                path: vdev.path.clone(),
                physical_sector_bytes: physical_sector_bytes(&vdev.path),
            });
        }
    });
    leaves
}

/// A block device's physical sector size from sysfs (`queue/physical_block_size` of the
/// device, or of its parent disk for a partition); `None` for anything else.
pub fn physical_sector_bytes(path: &str) -> Option<u64> {
    use std::os::unix::fs::FileTypeExt;
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let base = format!("/sys/dev/block/{major}:{minor}");
    ["queue/physical_block_size", "../queue/physical_block_size"]
        .iter()
        .find_map(|rest| std::fs::read_to_string(format!("{base}/{rest}")).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|&bytes| bytes >= 512 && bytes.is_power_of_two())
}

/// What lz4 would make of the first record of the dataset's most recently created files
/// (highest object numbers first), bounded by `SAMPLE_*`. `None` when nothing could be read.
fn sample_compression(spa: &mut Spa, dataset: u64, ashift: u32) -> Option<CompressionSample> {
    use zetta::dmu::object_type;
    use zetta::dmu::objset::DNODES_PER_BLOCK;
    use zetta::types::ObjectId;
    use zetta_zcommon::compress::{compress, keep_compressed, Compression};
    let sector = 1u64 << ashift.min(17);
    let round = |bytes: u64| bytes.div_ceil(sector) * sector;
    spa.with_dataset_object(dataset, |os, ctx| {
        let mut sample = CompressionSample::default();
        let meta = os.dnode(ctx, ObjectId(0))?;
        let last = meta
            .max_block_id
            .saturating_add(1)
            .saturating_mul(DNODES_PER_BLOCK)
            .saturating_sub(1);
        let mut files = 0usize;
        let mut read_bytes = 0u64;
        let mut id = last;
        let mut probed = 0u64;
        while id > 0
            && probed < SAMPLE_DNODES_MAX
            && files < SAMPLE_FILES_MAX
            && read_bytes < SAMPLE_BYTES_MAX
        {
            probed += 1;
            let object = ObjectId(id);
            id -= 1;
            let Ok(dnode) = os.dnode(ctx, object) else {
                continue;
            };
            if dnode.object_type != object_type::PLAIN_FILE {
                continue;
            }
            // The file's size is its znode's (the dnode keeps none, as in OpenZFS).
            let Ok(attr) = zetta::zpl::vnops::attr(os, ctx, object.0) else {
                continue;
            };
            if attr.znode.size == 0 {
                continue;
            }
            let len = u64::from(dnode.data_block_size_bytes).min(attr.znode.size);
            let Ok(data) = os.read(ctx, object, 0, len as usize) else {
                continue;
            };
            if data.is_empty() || data.iter().all(|&b| b == 0) {
                // A hole, or zeros Zetta stores as one: nothing allocated to compress.
                continue;
            }
            files += 1;
            read_bytes += data.len() as u64;
            let stored = round(data.len() as u64);
            let lz4 = match compress(Compression::Lz4, &data) {
                Some(packed) if keep_compressed(packed.len(), data.len(), ashift) => {
                    round(packed.len() as u64)
                }
                _ => stored,
            };
            sample.records += 1;
            sample.stored_bytes += stored;
            sample.lz4_bytes += lz4;
        }
        Ok(sample)
    })
    .ok()
    .filter(|sample| sample.records > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> PoolFacts {
        PoolFacts {
            name: "tank".to_string(),
            size_bytes: 1 << 30,
            allocated_bytes: 100 << 20,
            tops: vec![TopFacts {
                name: "/dev/sdb".to_string(),
                ashift: 12,
                size_bytes: 1 << 30,
                allocated_bytes: 100 << 20,
                is_log: false,
                leaves: vec![LeafFacts {
                    path: "/dev/sdb".to_string(),
                    physical_sector_bytes: Some(4096),
                }],
            }],
            datasets: vec![dataset("tank")],
            pool_checks: true,
            ..PoolFacts::default()
        }
    }

    fn dataset(name: &str) -> DatasetFacts {
        DatasetFacts {
            name: name.to_string(),
            atime: ("off".to_string(), "local".to_string()),
            xattr: ("sa".to_string(), "local".to_string()),
            compression: ("lz4".to_string(), "local".to_string()),
            recordsize_bytes: 128 << 10,
            ..DatasetFacts::default()
        }
    }

    fn checks(found: &[Finding]) -> Vec<(&'static str, String)> {
        found.iter().map(|f| (f.check, f.subject.clone())).collect()
    }

    /// Why: the "set up right" baseline: a pool following the cheat sheet gets no advice,
    /// so exit 0 means something.
    #[test]
    fn a_pool_set_up_right_has_no_findings() {
        assert_eq!(findings(&pool()), Vec::new());
    }

    /// Why: the cheat sheet's ashift row: too low an ashift on 4K-sector devices is the
    /// finding, a higher one is not.
    #[test]
    fn ashift_below_the_physical_sector_is_found() {
        let mut facts = pool();
        facts.tops[0].ashift = 9;
        let found = findings(&facts);
        assert_eq!(
            checks(&found),
            [("ashift", "tank vdev /dev/sdb".to_string())]
        );
        assert!(
            found[0].what.contains("ashift=9 (512B sectors)"),
            "{found:?}"
        );
        assert!(found[0].fix.contains("-o ashift=12"), "{found:?}");
        facts.tops[0].ashift = 13;
        assert_eq!(findings(&facts), Vec::new(), "too high is harmless");
        facts.tops[0].ashift = 9;
        facts.tops[0].leaves[0].physical_sector_bytes = None;
        assert_eq!(findings(&facts), Vec::new(), "a file has no sector size");
    }

    /// Why: atime and xattr are reported once, at the top of the subtree that has them:
    /// a child inheriting the value is covered by its parent's fix, a child that set it
    /// itself is reported on its own.
    #[test]
    fn atime_and_xattr_are_reported_where_they_are_set() {
        let mut facts = pool();
        facts.datasets[0].atime = ("on".to_string(), "default".to_string());
        facts.datasets[0].xattr = ("dir".to_string(), "local".to_string());
        let mut child = dataset("tank/a");
        child.atime = ("on".to_string(), "default".to_string());
        child.xattr = ("dir".to_string(), "inherited from tank".to_string());
        let mut other = dataset("tank/b");
        other.atime = ("on".to_string(), "local".to_string());
        facts.datasets.push(child);
        facts.datasets.push(other);
        let found = findings(&facts);
        assert_eq!(
            checks(&found),
            [
                ("atime", "tank".to_string()),
                ("xattr", "tank".to_string()),
                ("atime", "tank/b".to_string()),
            ]
        );
        assert_eq!(found[0].fix, "zfs set atime=off tank");
        assert_eq!(found[1].fix, "zfs set xattr=sa tank");
    }

    /// Why: the issue's own example: 16K random writes into a 128K dataset call for
    /// recordsize=16K; large sequential writes or too few writes call for nothing.
    #[test]
    fn random_writes_smaller_than_the_record_ask_for_a_smaller_recordsize() {
        let mut facts = pool();
        let mut db = dataset("tank/db");
        let mut kstats = DatasetKstatsSnapshot {
            writes: 1280,
            ..DatasetKstatsSnapshot::default()
        };
        kstats.write_size[14] = 1280;
        kstats.random_write_size[14] = 1203;
        db.kstats = Some(kstats.clone());
        facts.datasets.push(db);
        let found = findings(&facts);
        assert_eq!(checks(&found), [("recordsize", "tank/db".to_string())]);
        assert_eq!(
            found[0].what,
            "93% of writes since import are 16K random (1203 of 1280), recordsize=128K"
        );
        assert_eq!(found[0].fix, "zfs set recordsize=16K tank/db");
        // The same writes, sequential: nothing.
        kstats.random_write_size[14] = 0;
        facts.datasets[1].kstats = Some(kstats.clone());
        assert_eq!(findings(&facts), Vec::new());
        // Random 128K writes into 128K records: nothing.
        kstats.random_write_size[17] = 1280;
        facts.datasets[1].kstats = Some(kstats.clone());
        assert_eq!(findings(&facts), Vec::new());
        // Too few writes to judge.
        let few = DatasetKstatsSnapshot {
            writes: WRITES_MIN - 1,
            random_write_size: {
                let mut h = [0; 25];
                h[14] = WRITES_MIN - 1;
                h
            },
            ..DatasetKstatsSnapshot::default()
        };
        facts.datasets[1].kstats = Some(few);
        assert_eq!(findings(&facts), Vec::new());
    }

    /// Why: compression=off is only advice when the data compresses (a sample through
    /// lz4), and never when compression is on.
    #[test]
    fn compression_off_is_found_only_where_data_compresses() {
        let mut facts = pool();
        facts.datasets[0].compression = ("off".to_string(), "local".to_string());
        facts.datasets[0].sample = Some(CompressionSample {
            records: 8,
            stored_bytes: 1 << 20,
            lz4_bytes: 256 << 10,
        });
        let found = findings(&facts);
        assert_eq!(checks(&found), [("compression", "tank".to_string())]);
        assert!(found[0].what.contains("4.00x"), "{found:?}");
        facts.datasets[0].sample = Some(CompressionSample {
            records: 8,
            stored_bytes: 1 << 20,
            lz4_bytes: 1 << 20,
        });
        assert_eq!(findings(&facts), Vec::new(), "incompressible");
        facts.datasets[0].compression = ("lz4".to_string(), "local".to_string());
        facts.datasets[0].sample = Some(CompressionSample {
            records: 8,
            stored_bytes: 1 << 20,
            lz4_bytes: 1,
        });
        assert_eq!(findings(&facts), Vec::new(), "already compressed");
    }

    /// Why: sync-heavy datasets want a SLOG; a pool that has one, or a dataset with few
    /// synchronous writes, gets no advice.
    #[test]
    fn sync_heavy_datasets_without_a_log_vdev_are_found() {
        let mut facts = pool();
        facts.datasets[0].kstats = Some(DatasetKstatsSnapshot {
            writes: 1000,
            sync_writes: 900,
            fsyncs: 10,
            ..DatasetKstatsSnapshot::default()
        });
        let found = findings(&facts);
        assert_eq!(checks(&found), [("sync", "tank".to_string())]);
        assert!(found[0].fix.starts_with("zpool add tank log mirror"));
        let mut log = facts.tops[0].clone();
        log.is_log = true;
        facts.tops.push(log);
        assert_eq!(findings(&facts), Vec::new(), "a log vdev is there");
        facts.tops.pop();
        facts.datasets[0].kstats = Some(DatasetKstatsSnapshot {
            writes: 100_000,
            sync_writes: 900,
            ..DatasetKstatsSnapshot::default()
        });
        assert_eq!(findings(&facts), Vec::new(), "under 10% of the writes");
    }

    /// Why: the L2ARC row: a cache device beside a high hit rate is advice to remove it;
    /// a full ARC missing on what it just evicted is advice for RAM first; a low hit
    /// rate from first reads (no ghost hits) is not.
    #[test]
    fn arc_hit_rate_says_whether_an_l2arc_would_help() {
        let mut facts = pool();
        facts.arc = ArcFacts {
            hits: 98_000,
            misses: 2_000,
            ghost_hits: 0,
            size_bytes: 64 << 20,
            size_bytes_max: 64 << 20,
        };
        assert_eq!(findings(&facts), Vec::new(), "no cache device");
        facts.cache_devices.push("/dev/nvme0n1".to_string());
        let found = findings(&facts);
        assert_eq!(checks(&found), [("arc", "tank".to_string())]);
        assert_eq!(found[0].fix, "zpool remove tank /dev/nvme0n1");
        facts.cache_devices.clear();
        facts.arc.hits = 40_000;
        facts.arc.misses = 60_000;
        assert_eq!(findings(&facts), Vec::new(), "first reads only");
        facts.arc.ghost_hits = 30_000;
        let found = findings(&facts);
        assert_eq!(checks(&found), [("arc", "tank".to_string())]);
        assert!(found[0].fix.starts_with("raise zfs_arc_max"), "{found:?}");
    }

    /// Why: the fill row: above 80% is a finding, at 80% is not.
    #[test]
    fn a_pool_past_80_percent_is_found() {
        let mut facts = pool();
        facts.allocated_bytes = facts.size_bytes / 100 * 90;
        let found = findings(&facts);
        assert_eq!(checks(&found), [("capacity", "tank".to_string())]);
        assert!(found[0].what.starts_with("89% full") || found[0].what.starts_with("90% full"));
        facts.allocated_bytes = facts.size_bytes / 100 * 80;
        assert_eq!(findings(&facts), Vec::new());
    }

    /// Why: the imbalance posts: a fresh vdev beside a full one is a finding with the
    /// send/receive reshuffle as the fix; log vdevs do not count; even vdevs are fine.
    #[test]
    fn a_fresh_vdev_beside_a_full_one_is_found() {
        let mut facts = pool();
        facts.tops[0].size_bytes = 1_000_000_000;
        facts.tops[0].allocated_bytes = 900_000_000;
        let mut fresh = facts.tops[0].clone();
        fresh.name = "/dev/sdc".to_string();
        fresh.allocated_bytes = 0;
        facts.tops.push(fresh);
        let found = findings(&facts);
        assert_eq!(checks(&found), [("balance", "tank".to_string())]);
        assert!(found[0].what.contains("/dev/sdb is 90% full"), "{found:?}");
        assert!(found[0].fix.contains("zfs send -R"), "{found:?}");
        facts.tops[1].is_log = true;
        assert_eq!(findings(&facts), Vec::new(), "a log vdev is not data");
        facts.tops[1].is_log = false;
        facts.tops[1].allocated_bytes = facts.tops[0].allocated_bytes;
        assert_eq!(findings(&facts), Vec::new(), "balanced");
    }

    /// Why: a named dataset runs the dataset checks only: a full pool is not advice about
    /// one of its datasets.
    #[test]
    fn a_named_dataset_skips_the_pool_checks() {
        let mut facts = pool();
        facts.allocated_bytes = facts.size_bytes;
        facts.tops[0].ashift = 9;
        facts.pool_checks = false;
        assert_eq!(findings(&facts), Vec::new());
    }

    /// Why: the text report's shape is what an administrator reads and what the
    /// integration tests parse.
    #[test]
    fn report_text_lists_what_why_fix_and_risk() {
        let mut facts = pool();
        facts.datasets[0].atime = ("on".to_string(), "default".to_string());
        let text = report_text("tank", &findings(&facts));
        assert!(
            text.starts_with("tank: 1 finding\n\natime: tank\n    what: atime=on\n    why:  "),
            "{text}"
        );
        assert!(
            text.contains("\n    fix:  zfs set atime=off tank\n    risk: "),
            "{text}"
        );
        assert_eq!(report_text("tank", &[]), "tank: no findings\n");
    }
}
