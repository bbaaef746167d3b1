//! `zfs upgrade` (OpenZFS `zfs_do_upgrade`): the ZPL version of filesystems — the layout of
//! their znodes and directories, the `version` property (1 to 5; 5, system attributes, is
//! current).
//!
//! - `zfs upgrade`: lists the filesystems below the current version ("out of date"), or
//!   says that all are current.
//! - `zfs upgrade -v`: the versions and what each brought.
//! - `zfs upgrade [-r] [-V version] <-a | filesystem…>`: raises filesystems to `version`
//!   (default the current one); one below the target's SPA version (`zfs_spa_version_map`:
//!   ZPL 5 needs pool version 24) is reported and counted as failed, one above it "can not
//!   be downgraded". Then "N filesystems upgraded" (and "M filesystems already at this
//!   version"); exit 1 when any failed.
//!
//! What an older ZPL version means for Zetta: it writes ZPL 5 filesystems, and ZPL 4 ones
//! in pools below version 24 (as OpenZFS's `zfs_zpl_version_map`); it reads ZPL 4 (pools
//! zfs-fuse or old OpenZFS made). Raising a ZPL 4 filesystem to 5 would make OpenZFS's
//! mixed layout (old znodes stay `znode_phys_t`, new ones are system attributes, and the
//! SA master node is created at upgrade): Zetta does not write that mix, so that upgrade is
//! refused, per filesystem, with the reason, and counted as failed. Versions 1 to 3 are
//! never written (`zfs create -o version=3` is refused where the value is checked).

use crate::zpool::pool::{self, Imported};
use crate::zpool::{usage, CmdError, CmdResult, Ctx};

/// `ZPL_VERSION`.
pub const ZPL_VERSION: u64 = 5;

const VERSIONS_TEXT: &str = "The following filesystem versions are supported:\n\n\
VER  DESCRIPTION\n\
---  --------------------------------------------------------\n \
1   Initial ZFS filesystem version\n \
2   Enhanced directory entries\n \
3   Case insensitive and filesystem user identifier (FUID)\n \
4   userquota, groupquota properties\n \
5   System attributes\n\
\nFor more information on a particular version, including supported releases,\n\
see the ZFS Administration Guide.\n\n";

/// The `version` property's values (`zfs_prop_string_to_index`): 1 to 5 and `current`.
pub fn parse_version(text: &str) -> Option<u64> {
    match text {
        "current" => Some(ZPL_VERSION),
        "1" | "2" | "3" | "4" | "5" => text.parse().ok(),
        _ => None,
    }
}

/// `zfs_spa_version_map`: the SPA version a ZPL version needs.
fn spa_version_needed(zpl: u64) -> u64 {
    match zpl {
        5 => 24,
        4 => 15,
        3 => 9,
        _ => 1,
    }
}

/// A filesystem's ZPL version: the engine lists it among the local properties when it is
/// below 5 (`Spa::local_props`).
fn zpl_version(imported: &mut Imported, name: &str) -> Result<u64, CmdError> {
    let props = imported
        .spa
        .local_props(name)
        .map_err(crate::zfs::spa_fail)?;
    Ok(props
        .iter()
        .find(|(prop, _)| prop == "version")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(ZPL_VERSION))
}

/// Every filesystem (not volume) of a pool, parents first.
fn filesystems(imported: &mut Imported) -> Result<Vec<String>, CmdError> {
    let mut out = Vec::new();
    for name in imported.spa.dataset_names().map_err(crate::zfs::spa_fail)? {
        if !imported
            .spa
            .is_volume(&name)
            .map_err(crate::zfs::spa_fail)?
        {
            out.push(name);
        }
    }
    Ok(out)
}

pub fn cmd_upgrade(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = crate::zpool::getopt(args, "rvV:a")?;
    let recurse = parsed.has('r');
    let show = parsed.has('v');
    let all = parsed.has('a');
    let target = match parsed.last('V') {
        Some(text) => match parse_version(&text) {
            Some(v) => Some(v),
            None => return usage(format!("invalid version {text}")),
        },
        None => None,
    };
    let operands = &parsed.operands;
    if (!all && operands.is_empty()) && (recurse || target.is_some()) {
        return usage("");
    }
    if show && (recurse || all || target.is_some() || !operands.is_empty()) {
        return usage("");
    }
    if all && !operands.is_empty() {
        return usage("");
    }
    if show {
        ctx.print(VERSIONS_TEXT);
        return Ok(());
    }
    if !all && operands.is_empty() {
        return list_old(ctx);
    }
    let version = target.unwrap_or(ZPL_VERSION);
    // No upgrade is written yet (module header): every raise is refused.
    let upgraded = 0u64;
    let mut same = 0u64;
    let mut failed = 0u64;
    let mut status = Ok(());
    // (pool, filesystems) in the order zfs_for_each visits them.
    let mut work: Vec<(Imported, Vec<String>)> = Vec::new();
    if all {
        for mut imported in pool::open_all()? {
            let names = filesystems(&mut imported)?;
            work.push((imported, names));
        }
    } else {
        for operand in operands {
            let pool_name = operand.split('/').next().unwrap_or(operand);
            let Ok(mut imported) = pool::open_pool(pool_name) else {
                ctx.warn(&format!(
                    "cannot open '{operand}': dataset does not exist\n"
                ));
                status = Err(CmdError::Fail(String::new()));
                continue;
            };
            let every = filesystems(&mut imported)?;
            if !every.iter().any(|n| n == operand) {
                ctx.warn(&format!(
                    "cannot open '{operand}': dataset does not exist\n"
                ));
                status = Err(CmdError::Fail(String::new()));
                continue;
            }
            let below = format!("{operand}/");
            let names = every
                .into_iter()
                .filter(|n| n == operand || (recurse && n.starts_with(&below)))
                .collect();
            work.push((imported, names));
        }
    }
    for (imported, names) in work.iter_mut() {
        let spa_version = imported.spa.version();
        for name in names.iter() {
            let needed = spa_version_needed(version);
            if spa_version < needed {
                ctx.print(&format!(
                    "{name}: can not be upgraded; the pool version needs to first be upgraded\nto version {needed}\n\n"
                ));
                failed += 1;
                continue;
            }
            let current = zpl_version(imported, name)?;
            if current < version {
                // The mixed layout an upgrade makes is not written (module header).
                ctx.warn(&format!(
                    "cannot set property for '{name}': upgrading a version {current} \
                     filesystem to version {version} is not supported by Zetta\n"
                ));
                failed += 1;
            } else if current > version {
                ctx.print(&format!(
                    "{name}: can not be downgraded; it is already at version {current}\n"
                ));
                failed += 1;
            } else {
                same += 1;
            }
        }
    }
    ctx.print(&format!("{upgraded} filesystems upgraded\n"));
    if same > 0 {
        ctx.print(&format!("{same} filesystems already at this version\n"));
    }
    if failed > 0 {
        return Err(CmdError::Fail(String::new()));
    }
    status
}

/// `zfs upgrade`: the filesystems below the current version, by pool.
fn list_old(ctx: &mut Ctx) -> CmdResult {
    ctx.print(&format!(
        "This system is currently running ZFS filesystem version {ZPL_VERSION}.\n\n"
    ));
    let mut found = false;
    for mut imported in pool::open_all()? {
        for name in filesystems(&mut imported)? {
            let version = zpl_version(&mut imported, &name)?;
            if version >= ZPL_VERSION {
                continue;
            }
            if !found {
                ctx.print(
                    "The following filesystems are out of date, and can be upgraded.  After being\n\
                     upgraded, these filesystems (and any 'zfs send' streams generated from\n\
                     subsequent snapshots) will no longer be accessible by older software versions.\n\n\n\
                     VER  FILESYSTEM\n---  ------------\n",
                );
                found = true;
            }
            ctx.print(&format!("{version:2}   {name}\n"));
        }
    }
    if !found {
        ctx.print("All filesystems are formatted with the current version.\n");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    /// zfs_upgrade_007_neg's values are refused; 1 to 5 and `current` are taken.
    #[test]
    fn versions_parse_as_the_property_index() {
        for bad in ["0", "0.000", "0.5", "-1.234", "-1", "1234b", "5678x", "6"] {
            assert_eq!(parse_version(bad), None, "{bad}");
        }
        assert_eq!(parse_version("current"), Some(5));
        assert_eq!(parse_version("4"), Some(4));
    }
}
