//! `zfs diff [-FHth] snapshot [snapshot|filesystem]` (OpenZFS `zfs_do_diff`): one line per
//! changed file, `M`/`+`/`-`/`R` and the path under the filesystem's mountpoint (a rename
//! prints `old -> new`); `-F` adds the file type column (`F` file, `/` directory, `@`
//! symlink, `|` fifo, `=` socket, `B` block and `C` character device); `-t` puts the
//! znode's change time first (`seconds.nanoseconds`, seconds right-aligned in 10 columns).
//!
//! Paths are mangled as libzfs's `stream_bytes` does, unless `-h`: every byte that is not
//! printable ASCII above the space (so the space itself, backslash, DEL and every byte of a
//! multibyte UTF-8 character) is written as a backslash and four octal digits (`\0040`),
//! which keeps one change on one line whatever the name holds.

use crate::zfs_mount::{specs, Where};
use crate::zpool::pool;
use crate::zpool::{getopt, usage, CmdError, CmdResult, Ctx};
use zetta::zpl::diff::DiffKind;
use zetta::zpl::FileKind;

fn type_symbol(kind: FileKind) -> char {
    match kind {
        FileKind::Regular => 'F',
        FileKind::Directory => '/',
        FileKind::Symlink => '@',
        FileKind::Fifo => '|',
        FileKind::Socket => '=',
        FileKind::BlockDevice => 'B',
        FileKind::CharDevice => 'C',
    }
}

pub fn cmd_diff(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "FHth")?;
    let (from, to) = match parsed.operands.as_slice() {
        [from] => (
            from.clone(),
            from.split('@').next().unwrap_or(from).to_string(),
        ),
        [from, to] if to.starts_with('@') => (
            from.clone(),
            format!("{}{to}", from.split('@').next().unwrap_or(from)),
        ),
        [from, to] => (from.clone(), to.clone()),
        [] => return usage("must provide at least one snapshot name"),
        _ => return usage("too many arguments"),
    };
    let Some((fs, _)) = from.split_once('@') else {
        return Err(CmdError::Fail(format!("Badly formed snapshot name {from}")));
    };
    let pool_name = fs.split('/').next().unwrap_or(fs);
    let mut imported = pool::open_pool(pool_name)?;
    let mountpoint = specs(&mut imported.spa)?
        .into_iter()
        .find(|s| s.name == fs)
        .map(|s| match s.at {
            Where::Path(path) => path.to_string_lossy().into_owned(),
            _ => String::new(),
        })
        .ok_or_else(|| CmdError::Fail(format!("cannot open '{fs}': dataset does not exist")))?;
    // Both ends must exist (zfs_open's words), before the engine is asked.
    for end in [&from, &to].into_iter().filter(|e| e.contains('@')) {
        let (end_fs, _) = end.split_once('@').unwrap_or_default();
        let exists = imported
            .spa
            .snapshots(end_fs)
            .map(|snapshots| snapshots.iter().any(|(name, _, _)| name == end))
            .unwrap_or(false);
        if !exists {
            return Err(CmdError::Fail(format!(
                "cannot open '{end}': dataset does not exist"
            )));
        }
    }
    if !to.contains('@') {
        // Against the live filesystem: commit first (OpenZFS takes a temporary snapshot).
        imported.spa.sync().map_err(crate::zfs::spa_fail)?;
    }
    let entries = imported
        .spa
        .zpl_diff(&from, &to)
        .map_err(|e| CmdError::Fail(format!("Unable to obtain diffs: {e}")))?;
    let mangle = !parsed.has('h');
    let full = |path: &str| {
        let whole = if path.is_empty() {
            format!("{}/", mountpoint.trim_end_matches('/'))
        } else {
            format!("{}{path}", mountpoint.trim_end_matches('/'))
        };
        if mangle {
            mangled(whole.as_bytes())
        } else {
            whole
        }
    };
    let mut text = String::new();
    for entry in entries {
        if parsed.has('t') {
            text.push_str(&format!(
                "{:>10}.{:09}\t",
                entry.ctime.sec, entry.ctime.nsec
            ));
        }
        text.push(entry.kind.symbol());
        text.push('\t');
        if parsed.has('F') {
            text.push(type_symbol(entry.file_kind));
            text.push('\t');
        }
        text.push_str(&full(&entry.path));
        if let (DiffKind::Renamed, Some(to)) = (entry.kind, &entry.new_path) {
            // -H (scripted): the two names separated by a tab instead of an arrow.
            text.push_str(if parsed.has('H') { "\t" } else { " -> " });
            text.push_str(&full(to));
        }
        text.push('\n');
    }
    ctx.print(&text);
    Ok(())
}

/// A path as libzfs's `stream_bytes` writes it: bytes from `!` to `~` but the backslash
/// as they are, every other byte as `\` and four octal digits.
pub fn mangled(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b > b' ' && b != b'\\' && b < 0x7f {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\{b:04o}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::mangled;

    /// libzfs's `stream_bytes`: space, backslash and every byte of a UTF-8 character
    /// become four-digit octal escapes (zfs_diff_mangle compares against these bytes).
    #[test]
    fn mangles_as_stream_bytes() {
        assert_eq!(mangled(b"/fs/a b"), "/fs/a\\0040b");
        assert_eq!(mangled("/ż\\".as_bytes()), "/\\0305\\0274\\0134");
        assert_eq!(mangled(b"plain-name.txt"), "plain-name.txt");
        assert_eq!(mangled(&[0x7f, 0x09]), "\\0177\\0011");
    }
}
