//! `zetta calc`: the storage calculator of the seed post "When a Terabyte is not a
//! Terabyte", both ways.
//!
//! Forward (`zetta calc need SIZE`): data to store → raw storage to buy, as the product of
//! the post's factors (×1.1 vendor units, ×1.25 working free space, ×2 growth, ×3 backup and
//! hotspare systems, ×1.3 snapshots, ×2 redundancy = 21.45), each printed and overridable;
//! per system (without the backup factor) that is 7.15, the post's "8:1 rule".
//!
//! Reverse (`zetta calc usable LAYOUT --disk-size SIZE`): disks in a layout → what
//! `zpool list` (SIZE) and `zfs list` (AVAIL) will show for the new pool, and how much data
//! fits at a record size. Theory: every step is the engine's own function, not a second
//! copy of its arithmetic, so the prediction moves when the allocator does —
//! `vdev::label::data_size_bytes` (labels and boot reserve), `spa::top_asize_bytes` (sector
//! rounding, raidz width), `MetaslabGroup::new` (whole metaslabs only), `Vdev::usable_size_bytes`
//! (raidz parity deflation of AVAIL), `spa::slop_for_size` (slop) and
//! `Vdev::allocation_size_bytes` (parity and padding of one record). What it cannot know is
//! the pool's own metadata written at create (a few hundred KiB), so AVAIL is an upper bound
//! by that much. No I/O; never panics on its arguments (they are outside input).

use std::io::Write;

use zetta::metaslab::MetaslabGroup;
use zetta::spa::{slop_for_size, top_asize_bytes, TopKind};
use zetta::types::Guid;
use zetta::vdev::{label, Vdev, VdevKind};
use zetta_zutil::nicenum::nicenum;

const HELP: &str = "\
usage:
	zetta calc need <data size> [--vendor-units F] [--free-space F] [--growth F]
	    [--backup F | --no-hotspare | --no-backup] [--snapshots F | --no-snapshots]
	    [--redundancy F | --no-redundancy] [--disk-size SIZE] [-p]
	zetta calc usable <layout> --disk-size SIZE [--ashift N] [--recordsize SIZE] [-p]

How much storage does it take to store 1TB of data?  Not 1TB (the seed post
\"When a Terabyte is not a Terabyte\").  'need' multiplies the data you have by:

	x 1.10  vendor units: disks are sold in TB (10^12), data counted in TiB
	        (2^40 = 1.0995 TB)
	x 1.25  working free space: a pool is full at 80%, on fire at 90%
	x 2.00  growth: data doubles in about five years, a hardware refresh cycle
	x 3.00  disaster recovery (one full backup) plus a hotspare system;
	        --no-hotspare makes it x 2, --no-backup x 1
	x 1.30  snapshots or other \"oops recovery\" (30 hourly, 30 daily, 3 monthly)
	x 2.00  redundancy: mirrors; raidz2 of 8 is ~70% efficient, so x 2 holds
	= 21.45 TB of raw storage for every TiB of data you have today.

Per system (production, hotspare and DR each) that is 7.15: the 8:1 rule, buy
eight times your data in raw storage per machine.  Every factor takes a number
(--snapshots 1.5) and most can be dropped (--no-backup).  Sizes are binary
(280G = 280 GiB, 1T = 1 TiB); a size ending in B is a vendor's (4TB = 4*10^12).

'usable' goes the other way, from disks to what the pool will show, computed
with Zetta's own allocator functions:

	<layout>	disk | mirror [of N] | raidz1|raidz2|raidz3 of N, optionally
			prefixed with \"K x\": mirror, raidz2 of 8, 3 x raidz1 of 5
	--disk-size	the size of each disk (4TB, 3.64T, or bytes)
	--ashift	sector size as a power of two (default 12: 4096 bytes)
	--recordsize	record size to count raidz parity and padding for
			(default 128K)

It subtracts, in order: each disk's labels and boot reserve (4.5M), rounding
to whole sectors and whole metaslabs (SIZE in zpool list), raidz parity
(AVAIL in zfs list counts data only), the slop space kept for the pool's
own metadata (1/32 of SIZE, at least 4M), and raidz padding of a record
(small records on wide raidz waste more).  -p prints exact bytes.
";

/// `zetta calc …`.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match args.first().map(String::as_str) {
        Some("need") => need(&args[1..], out, err),
        Some("usable") => usable(&args[1..], out, err),
        Some("-h" | "--help" | "help" | "-?") => {
            let _ = out.write_all(HELP.as_bytes());
            0
        }
        Some(other) => usage(err, &format!("unrecognized command '{other}'")),
        None => usage(err, "missing command"),
    }
}

fn usage(err: &mut dyn Write, why: &str) -> i32 {
    let _ = writeln!(err, "{why}");
    let _ = err.write_all(HELP.as_bytes());
    2
}

/// A size: binary units unless the suffix ends in "B" after a unit letter (vendor, decimal).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    let suffix = suffix.to_ascii_uppercase();
    let (letter, rest) = match suffix.chars().next() {
        Some(c) => (Some(c), &suffix[1..]),
        None => (None, ""),
    };
    let power = match letter {
        None => return (number.fract() == 0.0 && number < 1.8e19).then_some(number as u64),
        Some('B') if rest.is_empty() => 0,
        Some('K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        Some('P') => 5,
        Some('E') => 6,
        _ => return None,
    };
    let base: f64 = match rest {
        "" | "IB" => 1024.0,
        "B" => 1000.0,
        _ => return None,
    };
    let bytes = number * base.powi(power);
    (bytes < 1.8e19).then_some(bytes.round() as u64)
}

struct Factor {
    value: f64,
    what: &'static str,
    flag: &'static str,
}

fn need(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut factors = [
        Factor {
            value: 1.1,
            what: "vendor units: 1 TiB is 1.0995 TB",
            flag: "--vendor-units",
        },
        Factor {
            value: 1.25,
            what: "working free space: full at 80%",
            flag: "--free-space",
        },
        Factor {
            value: 2.0,
            what: "growth: data doubles in ~5 years",
            flag: "--growth",
        },
        Factor {
            value: 3.0,
            what: "disaster recovery + hotspare systems",
            flag: "--backup",
        },
        Factor {
            value: 1.3,
            what: "snapshots (\"oops recovery\")",
            flag: "--snapshots",
        },
        Factor {
            value: 2.0,
            what: "redundancy (mirrors)",
            flag: "--redundancy",
        },
    ];
    const BACKUP: usize = 3;
    let mut data: Option<u64> = None;
    let mut disk: Option<u64> = None;
    let mut parsable = false;
    let mut i = 0;
    while i < args.len() {
        let (name, inline) = split_flag(&args[i]);
        let value = |i: &mut usize| flag_value(args, i, &inline);
        match name {
            "-p" => parsable = true,
            "--no-backup" => factors[BACKUP].value = 1.0,
            "--no-hotspare" => factors[BACKUP].value = 2.0,
            "--no-snapshots" => factors[4].value = 1.0,
            "--no-redundancy" => factors[5].value = 1.0,
            "--no-growth" => factors[2].value = 1.0,
            "--disk-size" => match value(&mut i).as_deref().and_then(parse_size) {
                Some(size) if size > 0 => disk = Some(size),
                _ => return usage(err, "--disk-size needs a size, e.g. 4TB"),
            },
            flag if flag.starts_with("--") => {
                let Some(factor) = factors.iter_mut().find(|f| f.flag == flag) else {
                    return usage(err, &format!("invalid option '{flag}'"));
                };
                match value(&mut i).and_then(|v| v.parse::<f64>().ok()) {
                    Some(v) if v.is_finite() && v > 0.0 => factor.value = v,
                    _ => return usage(err, &format!("{flag} needs a positive number")),
                }
            }
            size if data.is_none() => match parse_size(size) {
                Some(bytes) => data = Some(bytes),
                None => return usage(err, &format!("invalid size '{size}'")),
            },
            extra => return usage(err, &format!("too many arguments ('{extra}')")),
        }
        i += 1;
    }
    let Some(data) = data else {
        return usage(err, "missing data size");
    };
    let product: f64 = factors.iter().map(|f| f.value).product();
    let per_system = product / factors[BACKUP].value;
    let tib = data as f64 / (1u64 << 40) as f64;
    let raw_tb = tib * product;
    let raw_bytes = raw_tb * 1e12;
    let disks = disk.map(|d| (raw_bytes / d as f64 - 1e-9).ceil().max(1.0) as u64);
    if parsable {
        let _ = writeln!(out, "factor\t{product:.4}");
        let _ = writeln!(out, "per_system_factor\t{per_system:.4}");
        let _ = writeln!(out, "raw_bytes\t{}", raw_bytes.round() as u64);
        if let Some(disks) = disks {
            let _ = writeln!(out, "disks\t{disks}");
        }
        return 0;
    }
    let _ = writeln!(
        out,
        "Raw storage to buy for {} ({tib:.4} TiB) of data:\n",
        nicenum(data)
    );
    let _ = writeln!(
        out,
        "  factor   what                                   override"
    );
    for f in &factors {
        let overrides = match f.flag {
            "--backup" => "--backup F, --no-hotspare, --no-backup".to_string(),
            "--snapshots" => "--snapshots F, --no-snapshots".to_string(),
            "--redundancy" => "--redundancy F, --no-redundancy".to_string(),
            "--growth" => "--growth F, --no-growth".to_string(),
            other => format!("{other} F"),
        };
        let _ = writeln!(out, "  x {:<6.2} {:<38} {overrides}", f.value, f.what);
    }
    let _ = writeln!(out, "  = {product:<6.2} raw storage per unit of data\n");
    let _ = writeln!(out, "raw storage: {raw_tb:.2} TB");
    if let Some(disks) = disks {
        let _ = writeln!(
            out,
            "disks of {}: {disks}",
            vendor(disk.unwrap_or_default())
        );
    }
    let _ = writeln!(
        out,
        "per system: {per_system:.2} TB raw per TiB of data (the 8:1 rule: buy 8x your data in raw storage per machine)"
    );
    0
}

/// A vendor (decimal) size: "4 TB", "500 GB".
fn vendor(bytes: u64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {}", units[unit])
}

/// A parsed layout: `count` top-level vdevs of `kind`, each of `width` disks.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    pub count: usize,
    pub kind: TopKind,
    pub width: usize,
}

/// "mirror", "mirror of 3", "raidz2 of 8", "3 x raidz1 of 5", "4 x disk".
pub fn parse_layout(words: &[String]) -> Result<Layout, String> {
    let mut words: Vec<String> = words
        .iter()
        .flat_map(|w| w.split_whitespace().map(str::to_ascii_lowercase))
        .collect();
    let bad = || "invalid layout: expected e.g. 'mirror', 'raidz2 of 8', '3 x raidz1 of 5'";
    let mut count = 1;
    if words.len() >= 2 && (words[1] == "x" || words[1] == "*") {
        count = words[0].parse::<usize>().map_err(|_| bad().to_string())?;
        words.drain(..2);
    } else if let Some(n) = words.first().and_then(|w| w.strip_suffix('x')) {
        if let Ok(n) = n.parse::<usize>() {
            count = n;
            words.remove(0);
        }
    }
    let (kind, default_width) = match words.first().map(String::as_str) {
        Some("disk" | "single" | "stripe") => (TopKind::Single, Some(1)),
        Some("mirror") => (TopKind::Mirror, Some(2)),
        Some("raidz" | "raidz1") => (TopKind::Raidz(1), None),
        Some("raidz2") => (TopKind::Raidz(2), None),
        Some("raidz3") => (TopKind::Raidz(3), None),
        _ => return Err(bad().to_string()),
    };
    let width = match &words[1..] {
        [] => default_width.ok_or("a raidz layout needs a width: 'raidz2 of 8'")?,
        [of, n] if of == "of" => n.parse::<usize>().map_err(|_| bad().to_string())?,
        _ => return Err(bad().to_string()),
    };
    if count == 0 || count > 1024 || width == 0 || width > 255 {
        return Err(bad().to_string());
    }
    match kind {
        TopKind::Single if width != 1 => Err("a single disk vdev has one disk".to_string()),
        TopKind::Mirror if width < 2 => Err("a mirror needs at least 2 disks".to_string()),
        TopKind::Raidz(p) if width <= usize::from(p) => Err(format!(
            "raidz{p} needs more than {p} disks, e.g. 'raidz{p} of {}'",
            usize::from(p) + 2
        )),
        _ => Ok(Layout { count, kind, width }),
    }
}

/// What a pool of `layout` on disks of `disk_bytes` shows, by the engine's own functions.
#[derive(Debug)]
pub struct Capacity {
    pub disk_data_bytes: u64,
    pub vdev_asize_bytes: u64,
    pub metaslab_count: usize,
    pub metaslab_bytes: u64,
    /// `zpool list` SIZE.
    pub size_bytes: u64,
    pub slop_bytes: u64,
    /// `zfs list` AVAIL of an empty pool (less the pool's own first metadata).
    pub avail_bytes: u64,
    pub record_bytes: u64,
    pub record_alloc_bytes: u64,
    /// Data in records of `record_bytes` that fits in AVAIL.
    pub fits_bytes: u64,
}

pub fn capacity(
    layout: &Layout,
    disk_bytes: u64,
    ashift: u32,
    record_bytes: u64,
) -> Result<Capacity, String> {
    if !(9..=16).contains(&ashift) {
        return Err(format!("invalid ashift {ashift}: 9 to 16"));
    }
    if !(512..=16 << 20).contains(&record_bytes) || !record_bytes.is_power_of_two() {
        return Err("invalid recordsize: a power of two from 512 to 16M".to_string());
    }
    let disk_data_bytes = label::data_size_bytes(disk_bytes);
    let vdev_asize_bytes = top_asize_bytes(layout.kind, layout.width, disk_data_bytes, ashift);
    if vdev_asize_bytes < 16 << 20 {
        return Err("the disks are too small for a pool (64M at least)".to_string());
    }
    let group = MetaslabGroup::new(0, vdev_asize_bytes, ashift);
    let mut top = Vdev::new(
        match layout.kind {
            TopKind::Single => VdevKind::Leaf,
            TopKind::Mirror => VdevKind::Mirror,
            TopKind::Raidz(parity) => VdevKind::Raidz { parity },
        },
        Guid(0),
    );
    if layout.kind != TopKind::Single {
        top.children = (0..layout.width)
            .map(|_| Vdev::new(VdevKind::Leaf, Guid(0)))
            .collect();
    }
    top.ashift = ashift;
    top.asize_bytes = vdev_asize_bytes;
    let count = layout.count as u64;
    let size_bytes = group.size_bytes() * count;
    let raw = top.raw_size_bytes() * count;
    let usable = top.usable_size_bytes() * count;
    let slop_bytes = slop_for_size(size_bytes);
    let avail_bytes = (u128::from(size_bytes.saturating_sub(slop_bytes)) * u128::from(usable)
        / u128::from(raw.max(1))) as u64;
    // AVAIL counts a record by its allocation deflated at 128K (`Vdev::dsize_bytes`).
    let reference_bytes: u64 = 128 << 10;
    let record_alloc_bytes = top.allocation_size_bytes(record_bytes);
    let reference_alloc = top.allocation_size_bytes(reference_bytes).max(1);
    let charged =
        u128::from(record_alloc_bytes) * u128::from(reference_bytes) / u128::from(reference_alloc);
    let fits_bytes = (u128::from(avail_bytes) * u128::from(record_bytes) / charged.max(1)) as u64;
    Ok(Capacity {
        disk_data_bytes,
        vdev_asize_bytes,
        metaslab_count: group.metaslab_count(),
        metaslab_bytes: 1u64 << group.ms_shift,
        size_bytes,
        slop_bytes,
        avail_bytes,
        record_bytes,
        record_alloc_bytes,
        fits_bytes,
    })
}

/// `--flag=value` split into the flag and its inline value; anything else is itself.
fn split_flag(arg: &str) -> (&str, Option<String>) {
    match arg.split_once('=') {
        Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
        _ => (arg, None),
    }
}

/// A flag's value: the inline one, or the next argument (advancing `i` past it).
fn flag_value(args: &[String], i: &mut usize, inline: &Option<String>) -> Option<String> {
    if inline.is_some() {
        return inline.clone();
    }
    *i += 1;
    args.get(*i).cloned()
}

fn usable(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut words = Vec::new();
    let mut disk: Option<u64> = None;
    let mut ashift = 12u32;
    let mut record = 128u64 << 10;
    let mut parsable = false;
    let mut i = 0;
    while i < args.len() {
        let (name, inline) = split_flag(&args[i]);
        let value = |i: &mut usize| flag_value(args, i, &inline);
        match name {
            "-p" => parsable = true,
            "--disk-size" => match value(&mut i).as_deref().and_then(parse_size) {
                Some(size) if size > 0 => disk = Some(size),
                _ => return usage(err, "--disk-size needs a size, e.g. 4TB"),
            },
            "--ashift" => match value(&mut i).and_then(|v| v.parse().ok()) {
                Some(v) => ashift = v,
                None => return usage(err, "--ashift needs a number from 9 to 16"),
            },
            "--recordsize" => match value(&mut i).as_deref().and_then(parse_size) {
                Some(v) => record = v,
                None => return usage(err, "--recordsize needs a size, e.g. 1M"),
            },
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return usage(err, &format!("invalid option '{flag}'"))
            }
            word => words.push(word.to_string()),
        }
        i += 1;
    }
    let layout = match parse_layout(&words) {
        Ok(layout) => layout,
        Err(why) => return usage(err, &why),
    };
    let Some(disk) = disk else {
        return usage(err, "missing --disk-size");
    };
    let cap = match capacity(&layout, disk, ashift, record) {
        Ok(cap) => cap,
        Err(why) => {
            let _ = writeln!(err, "{why}");
            return 1;
        }
    };
    if parsable {
        let _ = writeln!(out, "size\t{}", cap.size_bytes);
        let _ = writeln!(out, "slop\t{}", cap.slop_bytes);
        let _ = writeln!(out, "available\t{}", cap.avail_bytes);
        let _ = writeln!(out, "record_allocated\t{}", cap.record_alloc_bytes);
        let _ = writeln!(out, "fits\t{}", cap.fits_bytes);
        return 0;
    }
    let disks = layout.count * layout.width;
    let shape = match layout.kind {
        TopKind::Single => "disk".to_string(),
        TopKind::Mirror => format!("mirror of {}", layout.width),
        TopKind::Raidz(p) => format!("raidz{p} of {}", layout.width),
    };
    let _ = writeln!(
        out,
        "layout:      {} x {shape}: {disks} disks of {} ({}), ashift {ashift} ({}-byte sectors)",
        layout.count,
        vendor(disk),
        nicenum(disk),
        1u32 << ashift
    );
    let _ = writeln!(
        out,
        "each disk:   {} after labels and boot reserve",
        nicenum(cap.disk_data_bytes)
    );
    let _ = writeln!(
        out,
        "each vdev:   {} in {} metaslabs of {}: {} (whole metaslabs only)",
        nicenum(cap.vdev_asize_bytes),
        cap.metaslab_count,
        nicenum(cap.metaslab_bytes),
        nicenum(cap.size_bytes / layout.count as u64)
    );
    let _ = writeln!(
        out,
        "SIZE:        {}  (zpool list)",
        nicenum(cap.size_bytes)
    );
    if let TopKind::Raidz(p) = layout.kind {
        let _ = writeln!(
            out,
            "parity:      {p} of every {} sectors of a full stripe",
            layout.width
        );
    } else if layout.kind == TopKind::Mirror {
        let _ = writeln!(
            out,
            "redundancy:  every block on all {} disks of a mirror",
            layout.width
        );
    }
    let _ = writeln!(
        out,
        "slop:        {} held back for the pool's own metadata",
        nicenum(cap.slop_bytes)
    );
    let _ = writeln!(
        out,
        "AVAIL:       {}  (zfs list, empty pool)",
        nicenum(cap.avail_bytes)
    );
    let _ = writeln!(
        out,
        "recordsize:  {}: one record allocates {} on disk; {} of such records fit",
        nicenum(cap.record_bytes),
        nicenum(cap.record_alloc_bytes),
        nicenum(cap.fits_bytes)
    );
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4TB"), Some(4_000_000_000_000));
        assert_eq!(parse_size("1T"), Some(1 << 40));
        assert_eq!(parse_size("280G"), Some(280 << 30));
        assert_eq!(parse_size("128K"), Some(128 << 10));
        assert_eq!(parse_size("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_size("12345"), Some(12345));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("4Q"), None);
        assert_eq!(parse_size("99999999999E"), None);
    }

    #[test]
    fn layouts() {
        let w = |s: &str| vec![s.to_string()];
        assert_eq!(
            parse_layout(&w("3 x raidz1 of 5")),
            Ok(Layout {
                count: 3,
                kind: TopKind::Raidz(1),
                width: 5
            })
        );
        assert_eq!(
            parse_layout(&w("mirror")),
            Ok(Layout {
                count: 1,
                kind: TopKind::Mirror,
                width: 2
            })
        );
        assert!(parse_layout(&w("raidz2")).is_err());
        assert!(parse_layout(&w("raidz2 of 2")).is_err());
        assert!(parse_layout(&w("0 x mirror")).is_err());
        assert!(parse_layout(&w("")).is_err());
    }
}
