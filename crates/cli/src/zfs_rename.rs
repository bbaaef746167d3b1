//! `zfs rename` (OpenZFS `zfs_do_rename`): a filesystem to a new name or place in its
//! pool (`-p` creates missing parents), or a snapshot to a new name (`-r`: the same
//! snapshot of every descendant too). Mounts follow: the daemon unmounts the old tree
//! before and mounts the new one after (see `daemon::mounts`).

use crate::zfs::errors::{zfs_fail, ZfsOp};
use crate::zfs::{finish, spa_fail};
use crate::zpool::pool;
use crate::zpool::{fail, getopt, usage, CmdError, CmdResult};

pub fn cmd_rename(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "fpr")?;
    let [from, to] = parsed.operands.as_slice() else {
        return usage(match parsed.operands.len() {
            0 => "missing source dataset argument",
            1 => "missing target dataset argument",
            _ => "too many arguments",
        });
    };
    if parsed.has('r') && parsed.has('p') {
        return usage("-p and -r options are mutually exclusive");
    }
    let pool_name = from.split(['/', '@']).next().unwrap_or(from);
    if parsed.has('r') && !from.contains('@') {
        return usage("source dataset for recursive rename must be a snapshot");
    }
    if from == to {
        return Ok(());
    }
    let mut imported = pool::open_pool(pool_name)?;
    pool::writable(&imported, &format!("cannot rename to '{to}'"))?;
    if !from.contains('@') && !to.contains('@') {
        // zfs_rename: the target name first, then its parents and pool.
        zetta_zprop::namecheck::validate_dataset_name(to, true)
            .map_err(|e| CmdError::Fail(format!("cannot rename to '{to}': {e}")))?;
    }
    if !from.contains('@') {
        check_target(from, to)?;
    }
    if let Some((fs, _)) = from.split_once('@') {
        // The new name may be given whole (`fs@b`), as the snapshot part (`@b`, which
        // zfs_do_rename expands from the source) or as the part after '@' (`b`).
        let to_full = if to.starts_with('@') {
            format!("{fs}{to}")
        } else if to.contains('@') {
            to.clone()
        } else {
            format!("{fs}@{to}")
        };
        let (to_fs, to_snap) = to_full.split_once('@').unwrap_or_default();
        if to_fs != fs {
            return Err(CmdError::Fail(format!(
                "cannot rename to '{to_full}': snapshots must be part of same dataset"
            )));
        }
        zetta_zprop::namecheck::validate_snapshot_name(&to_full, true)
            .map_err(|e| CmdError::Fail(format!("cannot rename to '{to_full}': {e}")))?;
        let from_snap = from.split_once('@').map(|(_, s)| s).unwrap_or_default();
        let mut targets = vec![fs.to_string()];
        if parsed.has('r') {
            let names = imported.spa.dataset_names().map_err(spa_fail)?;
            targets.extend(
                names
                    .into_iter()
                    .filter(|n| n.starts_with(&format!("{fs}/"))),
            );
        }
        for target in targets {
            let old = format!("{target}@{from_snap}");
            let new = format!("{target}@{to_snap}");
            let exists = imported
                .spa
                .snapshots(&target)
                .map_err(spa_fail)?
                .iter()
                .any(|(n, _, _)| *n == old);
            if !exists && target != fs {
                continue;
            }
            imported
                .spa
                .rename_snapshot(&old, &new)
                .map_err(zfs_fail(ZfsOp::Rename { from: &old }))?;
        }
        return finish(&mut imported, "rename", args);
    }
    if to.contains('@') {
        return Err(CmdError::Fail(format!(
            "cannot rename to '{to}': not a snapshot name"
        )));
    }
    // The kernel's dsl_dir_rename: every name under the new one (descendants and their
    // snapshots) must fit, or nothing is renamed (ENAMETOOLONG).
    let names = imported.spa.dataset_names().map_err(spa_fail)?;
    for name in names
        .iter()
        .filter(|n| *n == from || n.starts_with(&format!("{from}/")))
    {
        let mut longest = name.len();
        for (snapshot, _, _) in imported.spa.snapshots(name).map_err(spa_fail)? {
            longest = longest.max(snapshot.len());
        }
        if longest - from.len() + to.len() >= zetta_zprop::namecheck::ZFS_MAX_DATASET_NAME_LEN {
            return fail(format!("cannot rename to '{to}': dataset name is too long"));
        }
    }
    if parsed.has('p') {
        crate::zfs::create_parents(&mut imported, to)?;
    }
    imported
        .spa
        .rename_filesystem(from, to)
        .map_err(zfs_fail(ZfsOp::Rename { from }))?;
    finish(&mut imported, "rename", args)
}

/// `zfs_rename`'s checks of a filesystem's new name, in its order, before anything is
/// unmounted or created: a name with a parent (`check_parents`), in the same pool, not
/// below itself. A pool's root dataset always fails one of them, as in OpenZFS.
fn check_target(from: &str, to: &str) -> CmdResult {
    let Some((to_parent, _)) = to.rsplit_once('/') else {
        return fail(format!("cannot create '{to}': missing dataset name"));
    };
    let to_pool = to_parent.split('/').next().unwrap_or(to_parent);
    let from_pool = from.split('/').next().unwrap_or(from);
    if to_pool != from_pool {
        if !pool::load_cache()?
            .iter()
            .any(|entry| entry.name == to_pool)
        {
            return fail(format!("cannot create '{to}': no such pool '{to_pool}'"));
        }
        return fail(format!(
            "cannot rename to '{to}': datasets must be within same pool"
        ));
    }
    if to.starts_with(&format!("{from}/")) {
        return fail(format!(
            "cannot rename to '{to}': New dataset name cannot be a descendant of current dataset name"
        ));
    }
    Ok(())
}
