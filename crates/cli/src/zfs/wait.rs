//! `zfs wait [-t deleteq] filesystem` (OpenZFS `zfs_do_wait`, `ZFS_WAIT_DELETEQ`): returns
//! once the filesystem's delete queue is empty, that is when every file unlinked while
//! still open has been closed and freed.
//!
//! The delete queue is the ZPL's unlinked set (the master node's `DELETE_QUEUE` ZAP): a
//! file removed while open stays there until its last handle goes. The command polls it
//! every 100 ms, holding the pool only for each look (the FUSE requests that close the
//! file need the pool in between). `deleteq` is the only activity, as in OpenZFS 2.3.

use crate::zpool::pool;
use crate::zpool::{usage, CmdError, CmdResult, Ctx};
use std::time::Duration;

/// Between two looks at the delete queue.
const POLL: Duration = Duration::from_millis(100);

pub fn cmd_wait(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = crate::zpool::getopt(args, "t:")?;
    for list in parsed.values('t') {
        for activity in list.split(',') {
            if activity != "deleteq" {
                return usage(format!("invalid activity '{activity}'"));
            }
        }
    }
    let name = match parsed.operands.as_slice() {
        [] => return usage("missing 'filesystem' argument"),
        [name] => name.clone(),
        _ => return usage("too many arguments"),
    };
    let pool_name = name.split(['/', '@']).next().unwrap_or(&name).to_string();
    loop {
        let pending = {
            let Ok(mut imported) = pool::open_pool(&pool_name) else {
                return Err(CmdError::Fail(format!(
                    "cannot open '{name}': dataset does not exist"
                )));
            };
            if name.contains('@')
                || imported
                    .spa
                    .is_volume(&name)
                    .map_err(crate::zfs::spa_fail)?
            {
                return Err(CmdError::Fail(format!(
                    "cannot open '{name}': operation not applicable to datasets of this type"
                )));
            }
            if imported
                .spa
                .lookup_dataset(&name)
                .map_err(crate::zfs::spa_fail)?
                .is_none()
            {
                return Err(CmdError::Fail(format!(
                    "cannot open '{name}': dataset does not exist"
                )));
            }
            imported
                .spa
                .with_zpl(&name, |vfs, os, ctx| vfs.delete_queue_objects(os, ctx))
                .map_err(|e| CmdError::Fail(format!("cannot wait for '{name}': {e}")))?
                .len()
        };
        if pending == 0 {
            return Ok(());
        }
        std::thread::sleep(POLL);
    }
}
