//! `zfs promote clone` (OpenZFS `zfs_do_promote`, `zfs_promote`): the clone takes its
//! origin's snapshots up to the one it was cloned from, and the former origin becomes a
//! clone of it (see `zetta::dsl::promote`). Refusals word for word: a snapshot name,
//! a filesystem that is not a clone, a snapshot name the clone already has, a quota the
//! moved space would pass. Mounts stay as they are; each filesystem's `.zfs/snapshot`
//! shows the snapshots it now has. One sync task: one txg, `promote` in `zpool history -i`.

use crate::zfs::errors::{zfs_fail, ZfsOp};
use crate::zfs::{finish_task_with, spa_fail};
use crate::zpool::pool;
use crate::zpool::{getopt, usage, CmdError, CmdResult};

pub fn cmd_promote(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "")?;
    let name = match parsed.operands.as_slice() {
        [] => return usage("missing clone filesystem argument"),
        [name] => name,
        _ => return usage("too many arguments"),
    };
    if name.contains('@') {
        return Err(CmdError::Fail(format!(
            "cannot open '{name}': snapshot delimiter '@' is not expected here"
        )));
    }
    let missing = || CmdError::Fail(format!("cannot open '{name}': dataset does not exist"));
    let pool_name = name.split('/').next().unwrap_or(name);
    let mut imported = pool::open_pool(pool_name).map_err(|_| missing())?;
    pool::writable(&imported, &format!("cannot promote '{name}'"))?;
    if imported.spa.lookup_dir(name).map_err(spa_fail)?.is_none() {
        return Err(missing());
    }
    // One sync task, its history line and the commit: one txg.
    let refused = |e: zetta::spa::SpaError| match e {
        zetta::spa::SpaError::NoSpace => {
            CmdError::Fail(format!("cannot promote '{name}': out of space"))
        }
        e => zfs_fail(ZfsOp::Other)(e),
    };
    let task = imported.spa.promote_queue(name).map_err(refused)?;
    finish_task_with(&mut imported, task, "promote", args, refused)
}
