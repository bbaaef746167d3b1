//! `zfs diff [-FH] snapshot [snapshot|filesystem]` (OpenZFS `zfs_do_diff`): one line per
//! changed file, `M`/`+`/`-`/`R` and the path under the filesystem's mountpoint (a rename
//! prints `old -> new`); `-F` adds the file type column (`F` file, `/` directory, `@`
//! symlink, `|` fifo, `=` socket, `B` block and `C` character device).

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
    let parsed = getopt(args, "FHh")?;
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
    let full = |path: &str| {
        if path.is_empty() {
            format!("{}/", mountpoint.trim_end_matches('/'))
        } else {
            format!("{}{path}", mountpoint.trim_end_matches('/'))
        }
    };
    let mut text = String::new();
    for entry in entries {
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
