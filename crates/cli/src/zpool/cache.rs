//! The pool cache file: which pools this machine has imported (OpenZFS `zpool.cache`,
//! `spa_config.c`), and so which pools `zpool list` and friends act on.
//!
//! Location: `$ZETTA_CACHE_FILE`, else `/etc/zetta/zpool.cache` (its directory is created
//! on first write). Format, text, one pool per line, fields separated by tabs:
//!
//! ```text
//! # zetta pool cache v2
//! <pool guid, decimal> \t <pool name> \t <device path> \t <device path> ...
//! ```
//!
//! In v2 a backslash, tab, newline or carriage return inside a name or path is written
//! `\\`, `\t`, `\n`, `\r` (a device path may hold any of them); v1 files (no escapes)
//! are still read as they were written.
//!
//! Invariants: a guid appears at most once; the file is replaced atomically (written to a
//! temporary file in the same directory, flushed, renamed), so a reader sees the old or
//! the new list, never half of one. Lines that do not parse are skipped with no panic —
//! the file is outside input.

use std::io::Write;
use std::path::PathBuf;

pub const CACHE_FILE_DEFAULT: &str = "/etc/zetta/zpool.cache";
const HEADER: &str = "# zetta pool cache v2";

/// A field with the separators escaped (v2).
fn escape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// The field `escape` wrote; an unknown escape is kept as it stands.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    pub guid: u64,
    pub name: String,
    pub paths: Vec<String>,
}

pub fn cache_path() -> PathBuf {
    match std::env::var_os("ZETTA_CACHE_FILE") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(CACHE_FILE_DEFAULT),
    }
}

/// Parses the cache text; bad lines are skipped.
pub fn parse(text: &str) -> Vec<CacheEntry> {
    // v2 escapes separators inside fields; v1 (or no header) wrote them raw.
    let escaped = text.lines().next() == Some(HEADER);
    let field = |raw: &str| {
        if escaped {
            unescape(raw)
        } else {
            raw.to_string()
        }
    };
    let mut entries: Vec<CacheEntry> = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = line.split('\t');
        let (Some(guid), Some(name)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(guid) = guid.parse::<u64>() else {
            continue;
        };
        if name.is_empty() || entries.iter().any(|e| e.guid == guid) {
            continue;
        }
        entries.push(CacheEntry {
            guid,
            name: field(name),
            paths: fields.filter(|p| !p.is_empty()).map(field).collect(),
        });
    }
    entries
}

pub fn format(entries: &[CacheEntry]) -> String {
    let mut text = format!("{HEADER}\n");
    for entry in entries {
        text.push_str(&entry.guid.to_string());
        text.push('\t');
        text.push_str(&escape(&entry.name));
        for path in &entry.paths {
            text.push('\t');
            text.push_str(&escape(path));
        }
        text.push('\n');
    }
    text
}

/// The imported pools; a missing cache file means none.
pub fn load() -> Result<Vec<CacheEntry>, String> {
    load_at(&cache_path())
}

/// The pools a cache file lists (the default one, or a pool's `cachefile`).
pub fn load_at(path: &std::path::Path) -> Result<Vec<CacheEntry>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("cannot read '{}': {e}", path.display())),
    }
}

/// Replaces the cache file atomically.
pub fn save(entries: &[CacheEntry]) -> Result<(), String> {
    save_at(&cache_path(), entries)
}

/// Replaces a cache file atomically.
pub fn save_at(path: &std::path::Path, entries: &[CacheEntry]) -> Result<(), String> {
    let dir = path
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "zpool.cache".to_string());
    let temp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(format(entries).as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write '{}': {e}", path.display())
    })
}

/// Adds or replaces the entry with this guid.
pub fn upsert(entry: CacheEntry) -> Result<(), String> {
    upsert_at(&cache_path(), entry)
}

/// Adds or replaces the entry with this guid in a cache file.
pub fn upsert_at(path: &std::path::Path, entry: CacheEntry) -> Result<(), String> {
    let mut entries = load_at(path)?;
    match entries.iter_mut().find(|e| e.guid == entry.guid) {
        Some(existing) => *existing = entry,
        None => entries.push(entry),
    }
    save_at(path, &entries)
}

pub fn remove(guid: u64) -> Result<(), String> {
    // The pool leaves this machine: its in-memory state goes with it.
    let _ = std::fs::remove_file(state_path(guid));
    remove_at(&cache_path(), guid)
}

/// Where a pool's in-memory state lives between two commands when there is no daemon to
/// hold it (`ZETTA_DIRECT=1`): `<cache file>.state/<pool guid>`, Zetta's own nvlist
/// encoding. OpenZFS keeps these settings in the kernel's `spa_t` and never on disk
/// (`altroot`, `cachefile`, the vdev counters, the import time); the direct mode's
/// "kernel" is this file, not the pool (format 26: nothing of it is in the pool).
pub fn state_path(guid: u64) -> PathBuf {
    let mut path = cache_path().into_os_string();
    path.push(".state");
    PathBuf::from(path).join(guid.to_string())
}

/// The state `save_state` left for this pool (an empty list when there is none, or when
/// the file does not decode: it is only a cache of memory).
pub fn load_state(guid: u64) -> zetta::nvlist::NvList {
    std::fs::read(state_path(guid))
        .ok()
        .and_then(|bytes| zetta::nvlist::NvList::decode(&bytes).ok())
        .unwrap_or_default()
}

/// Replaces this pool's state file atomically.
pub fn save_state(guid: u64, state: &zetta::nvlist::NvList) -> Result<(), String> {
    let path = state_path(guid);
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    let temp = dir.join(format!(".{guid}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(&state.encode())?;
        std::fs::rename(&temp, &path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write '{}': {e}", path.display())
    })
}

/// Takes the entry with this guid out of a cache file (a missing file has none; a file
/// that never listed it is left as it is).
pub fn remove_at(path: &std::path::Path, guid: u64) -> Result<(), String> {
    let mut entries = load_at(path)?;
    let before = entries.len();
    entries.retain(|e| e.guid != guid);
    if entries.len() == before && path != cache_path() {
        return Ok(());
    }
    save_at(path, &entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache is outside input: round trips exactly, and junk lines are skipped.
    #[test]
    fn cache_round_trip_and_junk() {
        let entries = vec![CacheEntry {
            guid: 42,
            name: "tank".to_string(),
            paths: vec!["/tmp/a".to_string(), "/tmp/b".to_string()],
        }];
        assert_eq!(parse(&format(&entries)), entries);
        // Separators inside a path survive (v2), and a v1 file is read as written.
        let odd = vec![CacheEntry {
            guid: 9,
            name: "odd".to_string(),
            paths: vec!["/tmp/a\tb\\c\nd\re\\t".to_string(), "/tmp/f".to_string()],
        }];
        assert_eq!(parse(&format(&odd)), odd);
        let v1 = "# zetta pool cache v1\n5\told\t/tmp/back\\slash\t/tmp/g\n";
        assert_eq!(parse(v1)[0].paths, vec!["/tmp/back\\slash", "/tmp/g"]);
        let junk = "garbage\nx\ttank\n42\n7\tpool\t/d\n7\tdup\t/e\n";
        let parsed = parse(junk);
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].name, "pool");
    }
}
