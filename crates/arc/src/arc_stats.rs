//! ARC counters and their kstat text form (ZFS counterpart: `arc_stats_t` in arc.c, exported on
//! Linux as `/proc/spl/kstat/zfs/arcstats`).
//!
//! Theory: the counters describe the byte-sized ARC of `arc_cache`. Where ZFS and the
//! Megiddo/Modha paper differ — the paper counts pages, ZFS and we count bytes — the byte form
//! is reported: `size`, `p`, and the four list sizes are all bytes, and the ghost list sizes are
//! the byte totals of the keys the ghosts remember (bounded by `c_max` and `2 * c_max`).
//! `to_kstat_text` writes the `name type data` table that `arcstat`-style tools parse; type 4
//! is `KSTAT_DATA_UINT64`. Names follow arcstats where a counterpart exists (`hits`, `c_max`,
//! `mru_ghost_hits`, ...); `evictions`, `inserts` and `entries` are ours.
//!
//! Locking model: `ArcStats` is a plain snapshot copied out under whatever lock guards the
//! cache; adding snapshots of shards (`ArcStats::accumulate`) gives the whole-cache figures.

use std::fmt::Write as _;

/// kstat data type number for an unsigned 64-bit counter (`KSTAT_DATA_UINT64`).
pub const KSTAT_DATA_UINT64: u32 = 4;

/// Width of the name column in kstat text, as Linux pads it.
const KSTAT_NAME_WIDTH: usize = 32;

/// Width of the type column in kstat text.
const KSTAT_TYPE_WIDTH: usize = 4;

/// A snapshot of ARC counters. Sizes are bytes; counters are cumulative since creation
/// (`clear` drops contents but keeps counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArcStats {
    /// `get` calls that found a resident value.
    pub hits: u64,
    /// `get` calls that found nothing resident (a ghost counts as a miss).
    pub misses: u64,
    /// Bytes of resident values (`mru_bytes + mfu_bytes`).
    pub size_bytes: u64,
    /// The byte bound on resident values now ("c"; the daemon lowers it under host memory
    /// pressure, between c_min and c_max).
    pub size_bytes_max: u64,
    /// The floor of "c" ("c_min"; 0 when the owner sets none).
    pub c_min_bytes: u64,
    /// The ceiling of "c" ("c_max"; 0 means "c" itself: nothing lowers it).
    pub c_max_bytes: u64,
    /// Adaptive target for the MRU side ("p").
    pub target_mru_bytes: u64,
    /// Bytes resident on the MRU list (seen once).
    pub mru_bytes: u64,
    /// Bytes resident on the MFU list (seen more than once).
    pub mfu_bytes: u64,
    /// Bytes remembered by the MRU ghost list.
    pub mru_ghost_bytes: u64,
    /// Bytes remembered by the MFU ghost list.
    pub mfu_ghost_bytes: u64,
    /// Hits on the MRU list.
    pub mru_hits: u64,
    /// Hits on the MFU list.
    pub mfu_hits: u64,
    /// Inserts of a key the MRU ghost list remembered (grow p).
    pub mru_ghost_hits: u64,
    /// Inserts of a key the MFU ghost list remembered (shrink p).
    pub mfu_ghost_hits: u64,
    /// Resident entries evicted to make room (their keys become ghosts).
    pub evictions: u64,
    /// `insert` calls that cached a value.
    pub inserts: u64,
    /// Resident entries.
    pub entries: u64,
}

impl ArcStats {
    /// Adds another snapshot into this one (used to total the shards of a `SharedArc`).
    pub fn accumulate(&mut self, other: &ArcStats) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.size_bytes += other.size_bytes;
        self.size_bytes_max += other.size_bytes_max;
        self.target_mru_bytes += other.target_mru_bytes;
        self.mru_bytes += other.mru_bytes;
        self.mfu_bytes += other.mfu_bytes;
        self.mru_ghost_bytes += other.mru_ghost_bytes;
        self.mfu_ghost_bytes += other.mfu_ghost_bytes;
        self.mru_hits += other.mru_hits;
        self.mfu_hits += other.mfu_hits;
        self.mru_ghost_hits += other.mru_ghost_hits;
        self.c_min_bytes += other.c_min_bytes;
        self.c_max_bytes += other.c_max_bytes;
        self.mfu_ghost_hits += other.mfu_ghost_hits;
        self.evictions += other.evictions;
        self.inserts += other.inserts;
        self.entries += other.entries;
    }

    /// The counters as `(kstat name, value)` pairs in output order.
    pub fn kstat_fields(&self) -> [(&'static str, u64); 18] {
        let c_max = match self.c_max_bytes {
            0 => self.size_bytes_max,
            set => set,
        };
        [
            ("hits", self.hits),
            ("misses", self.misses),
            ("size", self.size_bytes),
            ("c", self.size_bytes_max),
            ("c_min", self.c_min_bytes),
            ("c_max", c_max),
            ("p", self.target_mru_bytes),
            ("mru_size", self.mru_bytes),
            ("mfu_size", self.mfu_bytes),
            ("mru_ghost_size", self.mru_ghost_bytes),
            ("mfu_ghost_size", self.mfu_ghost_bytes),
            ("mru_hits", self.mru_hits),
            ("mfu_hits", self.mfu_hits),
            ("mru_ghost_hits", self.mru_ghost_hits),
            ("mfu_ghost_hits", self.mfu_ghost_hits),
            ("evictions", self.evictions),
            ("inserts", self.inserts),
            ("entries", self.entries),
        ]
    }

    /// Renders the counters like Linux `/proc/spl/kstat/zfs/arcstats`: a `name type data`
    /// header, then one line per counter, e.g. `hits                            4    123`.
    /// The kstat id/timestamp line that precedes the header on Linux is omitted (we have no
    /// kstat id); tools that skip to the `name` header read both alike.
    pub fn to_kstat_text(&self) -> String {
        let mut text = String::new();
        push_kstat_row(&mut text, "name", "type", "data");
        let kind = KSTAT_DATA_UINT64.to_string();
        for (name, value) in self.kstat_fields() {
            push_kstat_row(&mut text, name, &kind, &value.to_string());
        }
        text
    }
}

/// Appends one padded `name type data` line.
fn push_kstat_row(text: &mut String, name: &str, kind: &str, data: &str) {
    // Writing to a String cannot fail; the always-Ok result is ignored.
    let _ = writeln!(
        text,
        "{name:<name_w$}{kind:<type_w$} {data}",
        name_w = KSTAT_NAME_WIDTH,
        type_w = KSTAT_TYPE_WIDTH
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    // Exists because tools parse arcstats by splitting lines on whitespace: each counter the
    // brief names (hits, misses, size, c_max) must be a three-column `name 4 value` line.
    #[test]
    fn kstat_text_has_parsable_lines() {
        let stats = ArcStats {
            hits: 123,
            misses: 7,
            size_bytes: 4096,
            size_bytes_max: 1 << 20,
            ..ArcStats::default()
        };
        let text = stats.to_kstat_text();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
        assert_eq!(header, ["name", "type", "data"]);
        let parsed: Vec<(String, u32, u64)> = lines
            .map(|line| {
                let columns: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(columns.len(), 3, "line {line:?}");
                let kind = columns[1].parse().expect("type column is a number");
                let value = columns[2].parse().expect("data column is a number");
                (columns[0].to_string(), kind, value)
            })
            .collect();
        let lookup = |name: &str| {
            parsed
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, kind, value)| (*kind, *value))
        };
        assert_eq!(lookup("hits"), Some((KSTAT_DATA_UINT64, 123)));
        assert_eq!(lookup("misses"), Some((KSTAT_DATA_UINT64, 7)));
        assert_eq!(lookup("size"), Some((KSTAT_DATA_UINT64, 4096)));
        assert_eq!(lookup("c_max"), Some((KSTAT_DATA_UINT64, 1 << 20)));
        assert_eq!(parsed.len(), stats.kstat_fields().len());
    }

    // Exists because SharedArc reports the sum of its shards; a field missed in `accumulate`
    // would silently read zero.
    #[test]
    fn accumulate_adds_every_field() {
        let one = ArcStats {
            hits: 1,
            misses: 1,
            size_bytes: 1,
            size_bytes_max: 1,
            c_min_bytes: 1,
            c_max_bytes: 1,
            target_mru_bytes: 1,
            mru_bytes: 1,
            mfu_bytes: 1,
            mru_ghost_bytes: 1,
            mfu_ghost_bytes: 1,
            mru_hits: 1,
            mfu_hits: 1,
            mru_ghost_hits: 1,
            mfu_ghost_hits: 1,
            evictions: 1,
            inserts: 1,
            entries: 1,
        };
        let mut total = one;
        total.accumulate(&one);
        for (name, value) in total.kstat_fields() {
            assert_eq!(value, 2, "field {name}");
        }
    }
}
