//! Parsing and checking the vdev words of `zpool create` / `zpool add`.
//!
//! Counterpart: `construct_spec`, `is_grouping`, `get_parity`, `make_leaf_vdev`,
//! `get_replication`, `check_replication` and `make_root_vdev` in
//! `cmd/zpool/zpool_vdev.c`.
//!
//! Grammar (as OpenZFS reads it): `mirror`, `raidz`/`raidz1`/`raidz2`/`raidz3` open a
//! group that takes every following word up to the next keyword; `log`, `special` and
//! `dedup` switch the class of the vdevs that follow (`log` at most once); `cache` and
//! `spare` (each at most once) take the following words as cache or spare devices and
//! return later groups to the normal class. Any other word is a single-device vdev.
//! `raidz0`, `raidz4` or `raidz01` are not keywords, so they are device names.
//! A log vdev may only be a device or a mirror.
//!
//! Error texts are OpenZFS's, word for word, without the final newline. Replication
//! problems are gathered, every one reported under the two-line header, as `vdev_error`
//! prints them.

use std::fmt;

/// The shape of one top-level vdev (or one cache/spare device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VdevKind {
    Disk,
    File,
    Mirror,
    /// raidz with this many parity devices (1..=3).
    Raidz(u8),
}

/// Which allocation class a vdev serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VdevClass {
    Normal,
    Log,
    Cache,
    Spare,
    Special,
    Dedup,
}

/// One top-level vdev (for Cache and Spare: one device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VdevSpecGroup {
    pub class: VdevClass,
    pub kind: VdevKind,
    pub paths: Vec<String>,
}

/// A rejected vdev specification; `Display` is the exact OpenZFS text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VdevSpecError {
    /// Printed as "invalid vdev specification: {0}".
    Invalid(String),
    /// A device that cannot be used; printed as is (may span lines).
    Device(String),
    /// Replication problems, printed under "invalid vdev specification" and
    /// "use '-f' to override the following errors:", one per line.
    Replication(Vec<String>),
}

impl fmt::Display for VdevSpecError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VdevSpecError::Invalid(reason) => {
                write!(formatter, "invalid vdev specification: {reason}")
            }
            VdevSpecError::Device(message) => formatter.write_str(message),
            VdevSpecError::Replication(problems) => {
                formatter.write_str(
                    "invalid vdev specification\nuse '-f' to override the following errors:",
                )?;
                for problem in problems {
                    write!(formatter, "\n{problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for VdevSpecError {}

/// The most devices one raidz vdev may have.
const RAIDZ_CHILDREN_MAX: usize = 255;
/// The most parity a raidz vdev may have.
const RAIDZ_PARITY_MAX: u8 = 3;

/// What a keyword opens.
enum Grouping {
    Mirror,
    Raidz(u8),
    Draid,
    Log,
    Special,
    Dedup,
    Cache,
    Spare,
}

/// `get_parity` + `is_grouping`: "raidz" is 1, "raidz1".."raidz3"; "raidz0", "raidz01",
/// "raidz4" are not keywords.
fn grouping_of(word: &str) -> Option<Grouping> {
    if let Some(suffix) = word.strip_prefix("raidz") {
        if suffix.is_empty() {
            return Some(Grouping::Raidz(1));
        }
        if suffix.starts_with('0') {
            return None;
        }
        return match suffix.parse::<u8>() {
            Ok(parity) if (1..=RAIDZ_PARITY_MAX).contains(&parity) => Some(Grouping::Raidz(parity)),
            _ => None,
        };
    }
    if word.starts_with("draid") {
        return Some(Grouping::Draid);
    }
    match word {
        "mirror" => Some(Grouping::Mirror),
        "log" => Some(Grouping::Log),
        "special" => Some(Grouping::Special),
        "dedup" => Some(Grouping::Dedup),
        "cache" => Some(Grouping::Cache),
        "spare" => Some(Grouping::Spare),
        _ => None,
    }
}

/// Whether a vdev word is a grouping keyword (`mirror`, `raidz2`, `log`, ...), not a device.
pub fn is_keyword(word: &str) -> bool {
    grouping_of(word).is_some()
}

/// The default leaf classifier: absolute paths under /dev are disks, other absolute
/// paths are files; a bare name would be looked up in /dev, which Zetta does not do.
pub fn default_leaf_kind(word: &str) -> Result<VdevKind, VdevSpecError> {
    if word.starts_with("/dev/") {
        Ok(VdevKind::Disk)
    } else if word.starts_with('/') {
        Ok(VdevKind::File)
    } else {
        Err(VdevSpecError::Device(format!(
            "cannot open '{word}': no such device in /dev\nmust be a full path or shorthand device name"
        )))
    }
}

/// [`parse_vdev_spec_with`] using [`default_leaf_kind`].
pub fn parse_vdev_spec(words: &[String]) -> Result<Vec<VdevSpecGroup>, VdevSpecError> {
    parse_vdev_spec_with(words, default_leaf_kind)
}

/// Parses vdev words into top-level groups, classifying each device with `leaf_kind`
/// (which returns `Disk` or `File`, or the error for an unusable device).
pub fn parse_vdev_spec_with(
    words: &[String],
    leaf_kind: impl Fn(&str) -> Result<VdevKind, VdevSpecError>,
) -> Result<Vec<VdevSpecGroup>, VdevSpecError> {
    let mut groups: Vec<VdevSpecGroup> = Vec::new();
    let mut class = VdevClass::Normal;
    let mut seen_logs = false;
    let mut seen_cache = false;
    let mut seen_spare = false;
    let mut logs_count = 0usize;
    let mut index = 0usize;
    while let Some(word) = words.get(index) {
        let Some(grouping) = grouping_of(word) else {
            let kind = leaf_kind(word)?;
            if class == VdevClass::Log {
                logs_count += 1;
            }
            groups.push(VdevSpecGroup {
                class,
                kind,
                paths: vec![word.clone()],
            });
            index += 1;
            continue;
        };
        let (kind, devices_min) = match grouping {
            Grouping::Log => {
                if seen_logs {
                    return Err(invalid("'log' can be specified only once"));
                }
                seen_logs = true;
                class = VdevClass::Log;
                index += 1;
                continue;
            }
            Grouping::Special | Grouping::Dedup => {
                class = if matches!(grouping, Grouping::Special) {
                    VdevClass::Special
                } else {
                    VdevClass::Dedup
                };
                index += 1;
                continue;
            }
            Grouping::Draid => {
                return Err(invalid(&format!("{word} is not supported by zetta")));
            }
            Grouping::Cache => {
                if seen_cache {
                    return Err(invalid("'cache' can be specified only once"));
                }
                seen_cache = true;
                class = VdevClass::Cache;
                (None, 1)
            }
            Grouping::Spare => {
                if seen_spare {
                    return Err(invalid("'spare' can be specified only once"));
                }
                seen_spare = true;
                class = VdevClass::Spare;
                (None, 1)
            }
            Grouping::Mirror => (Some(VdevKind::Mirror), 2),
            Grouping::Raidz(parity) => (Some(VdevKind::Raidz(parity)), usize::from(parity) + 1),
        };
        if class == VdevClass::Log {
            if let Some(VdevKind::Raidz(_)) = kind {
                return Err(invalid("unsupported 'log' device: raidz"));
            }
            logs_count += 1;
        }
        let members: Vec<String> = words[index + 1..]
            .iter()
            .take_while(|member| grouping_of(member).is_none())
            .cloned()
            .collect();
        let member_kinds = members
            .iter()
            .map(|member| leaf_kind(member))
            .collect::<Result<Vec<VdevKind>, VdevSpecError>>()?;
        if members.len() < devices_min {
            return Err(invalid(&format!(
                "{word} requires at least {devices_min} devices"
            )));
        }
        if matches!(kind, Some(VdevKind::Raidz(_))) && members.len() > RAIDZ_CHILDREN_MAX {
            return Err(invalid(&format!(
                "{word} supports no more than {RAIDZ_CHILDREN_MAX} devices"
            )));
        }
        index += 1 + members.len();
        match kind {
            Some(kind) => groups.push(VdevSpecGroup {
                class,
                kind,
                paths: members,
            }),
            None => {
                for (member, member_kind) in members.into_iter().zip(member_kinds) {
                    groups.push(VdevSpecGroup {
                        class,
                        kind: member_kind,
                        paths: vec![member],
                    });
                }
                // After the cache or spare list, groups are normal again.
                class = VdevClass::Normal;
            }
        }
    }
    let toplevel_count = groups
        .iter()
        .filter(|group| !matches!(group.class, VdevClass::Cache | VdevClass::Spare))
        .count();
    if toplevel_count == 0 && !seen_cache && !seen_spare {
        return Err(invalid("at least one toplevel vdev must be specified"));
    }
    if seen_logs && logs_count == 0 {
        return Err(invalid("log requires at least 1 device"));
    }
    Ok(groups)
}

fn invalid(reason: &str) -> VdevSpecError {
    VdevSpecError::Invalid(reason.to_string())
}

/// A top-level vdev's replication level (`replication_level_t`).
struct ReplicationLevel {
    type_name: &'static str,
    children: usize,
    parity: u8,
}

fn replication_of(group: &VdevSpecGroup) -> ReplicationLevel {
    match group.kind {
        VdevKind::Disk => ReplicationLevel {
            type_name: "disk",
            children: 1,
            parity: 0,
        },
        VdevKind::File => ReplicationLevel {
            type_name: "file",
            children: 1,
            parity: 0,
        },
        VdevKind::Mirror => ReplicationLevel {
            type_name: "mirror",
            children: group.paths.len(),
            parity: 0,
        },
        VdevKind::Raidz(parity) => ReplicationLevel {
            type_name: "raidz",
            children: group.paths.len(),
            parity,
        },
    }
}

/// `check_replication` for a new pool (no `-f`): every non-log top-level vdev (normal,
/// special and dedup alike) must have the same replication level; a raidz and a mirror
/// agree when they survive the same number of failures. Also requires one normal vdev.
pub fn check_replication(groups: &[VdevSpecGroup]) -> Result<(), VdevSpecError> {
    let toplevels: Vec<&VdevSpecGroup> = groups
        .iter()
        .filter(|group| {
            matches!(
                group.class,
                VdevClass::Normal | VdevClass::Special | VdevClass::Dedup
            )
        })
        .collect();
    let mut problems: Vec<String> = Vec::new();
    let mut last: Option<ReplicationLevel> = None;
    for group in &toplevels {
        let current = replication_of(group);
        if matches!(group.kind, VdevKind::Mirror | VdevKind::Raidz(_)) {
            let mut leaf_kinds = group
                .paths
                .iter()
                .filter_map(|path| default_leaf_kind(path).ok());
            let mut reported = false;
            if let Some(first_kind) = leaf_kinds.next() {
                if leaf_kinds.any(|kind| kind != first_kind) {
                    problems.push(format!(
                        "mismatched replication level: {} contains both files and devices",
                        current.type_name
                    ));
                    reported = true;
                }
            }
            // Leaves whose sizes differ by more than ZPOOL_FUZZ (a leaf whose size cannot
            // be read, or is 0, is left out); one problem per vdev, as `dontreport`.
            let sizes: Vec<u64> = group
                .paths
                .iter()
                .filter_map(|path| leaf_size(path))
                .collect();
            if !reported
                && sizes
                    .windows(2)
                    .any(|pair| pair[0].abs_diff(pair[1]) > ZPOOL_FUZZ)
            {
                problems.push(format!(
                    "{} contains devices of different sizes",
                    current.type_name
                ));
            }
        }
        if let Some(previous) = &last {
            if let Some(problem) = replication_mismatch(previous, &current) {
                problems.push(problem);
            }
        }
        last = Some(current);
    }
    if !problems.is_empty() {
        return Err(VdevSpecError::Replication(problems));
    }
    let has_normal = groups.iter().any(|group| group.class == VdevClass::Normal);
    if !has_normal {
        return Err(VdevSpecError::Replication(vec![
            "at least one general top-level vdev must be specified".to_string(),
        ]));
    }
    Ok(())
}

/// How far the sizes of a mirror's or raidz's leaves may differ (`ZPOOL_FUZZ`, 16 MiB).
const ZPOOL_FUZZ: u64 = 16 << 20;

/// The size of a leaf: a file's length, a block device's (the end of the opened device);
/// None when it cannot be opened or is empty (`get_replication` ignores such a leaf).
fn leaf_size(path: &str) -> Option<u64> {
    use std::io::Seek;
    let mut file = std::fs::File::open(path).ok()?;
    let size = file.seek(std::io::SeekFrom::End(0)).ok()?;
    (size != 0).then_some(size)
}

/// Compares two neighbouring top-level vdevs as `get_replication` does.
fn replication_mismatch(last: &ReplicationLevel, current: &ReplicationLevel) -> Option<String> {
    let raidz_mirror = match (last.type_name, current.type_name) {
        ("raidz", "mirror") => Some((last, current)),
        ("mirror", "raidz") => Some((current, last)),
        _ => None,
    };
    if let Some((raidz, mirror)) = raidz_mirror {
        let mirror_failures = mirror.children.saturating_sub(1);
        if usize::from(raidz.parity) != mirror_failures {
            return Some(format!(
                "mismatched replication level: raidz and mirror vdevs with different redundancy, {} vs. {} ({}-way) are present",
                raidz.parity, mirror_failures, mirror.children
            ));
        }
        return None;
    }
    if last.type_name != current.type_name {
        return Some(format!(
            "mismatched replication level: both {} and {} vdevs are present",
            last.type_name, current.type_name
        ));
    }
    if last.parity != current.parity {
        return Some(format!(
            "mismatched replication level: both {} and {} device parity {} vdevs are present",
            last.parity, current.parity, current.type_name
        ));
    }
    if last.children != current.children {
        return Some(format!(
            "mismatched replication level: both {}-way and {}-way {} vdevs are present",
            last.children, current.children, current.type_name
        ));
    }
    None
}

#[cfg(test)]
#[path = "vdev_spec_tests.rs"]
mod tests;
