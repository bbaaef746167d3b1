//! DSL sync tasks (OpenZFS `dsl_synctask.c`): an administrative change as a check function
//! and a sync function run in the syncing context of one txg. The tasks: snapshot
//! (`snapshot`), destroy of snapshots and bookmarks, bookmark, hold and release, rollback
//! (`snapshot`), promote (`promote`), destroy of filesystems and of whole trees (`destroy`).
//!
//! Theory. A task is assigned to the open txg when it is queued (`dsl_sync_task_queue`,
//! OpenZFS `dsl_sync_task` up to its `txg_wait_synced`). Its check runs once in open
//! context, so a change that cannot succeed is refused before anything is queued, and again
//! in syncing context: `Spa::sync` runs every task queued for the txg it commits, in queue
//! order, after the dirty datasets' object sets have been written and their space and dead
//! lists updated (step 1 of the commit, `dsl_pool_sync`'s `dsl_dataset_sync` loop) and
//! before the history, the space maps and the MOS are written. So a task sees every head as
//! written in that very txg (a snapshot's `creation_txg` is the txg it is in and its tree is
//! the head's tree of that txg), and what it changes in the MOS is committed by the same
//! uberblock: one txg per administrative command, whatever the number of datasets it names.
//!
//! Invariants: (1) a task whose check fails in syncing context changes nothing and its
//! error goes to its caller; the tasks after it still run (each is checked against what the
//! earlier ones did). (2) A sync function changes the MOS only (records, ZAPs, dead lists,
//! space accounting); it never dirties a dataset's object set, whose sync is already done.
//! (3) A sync function fails only where the commit itself would (an I/O error reading or
//! writing the MOS): such a failure fails `Spa::sync` like any other write error of the txg,
//! and the pool is left to the import's recovery of the last committed txg. (4) Tasks run in
//! the thread that commits, under the pool's exclusive borrow: no lock of their own; a task
//! must not call `sync` (the commit does not nest).

use crate::spa::{Spa, SpaError};
use crate::types::Txg;
use std::collections::BTreeMap;

/// The context a check or sync function runs in (OpenZFS passes a `dmu_tx_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncTx {
    /// The txg the task is assigned to (the one being committed in syncing context).
    pub txg: Txg,
    /// False for the check in open context, true in the syncing context of `txg`.
    pub syncing: bool,
}

/// A check or sync function (OpenZFS `dsl_checkfunc_t`, `dsl_syncfunc_t`).
pub type SyncTaskFn = Box<dyn FnMut(&mut Spa, SyncTx) -> Result<(), SpaError> + Send + Sync>;

/// A queued task's ticket: its result is collected with `sync_task_result` once its txg has
/// committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SyncTaskId(u64);

/// One task (OpenZFS `dsl_sync_task_t`).
struct SyncTask {
    id: SyncTaskId,
    txg: Txg,
    check: SyncTaskFn,
    sync: SyncTaskFn,
}

/// The pool's queued tasks (`dp_sync_tasks`) and the results not yet collected.
#[derive(Default)]
pub struct SyncTasks {
    queued: Vec<SyncTask>,
    next_id: u64,
    done: BTreeMap<SyncTaskId, Result<(), SpaError>>,
    /// History records of this txg's tasks, written with the txg before the other pending
    /// records: internal records of their sync functions (`spa_history_log_internal_ds`),
    /// then the command lines of the tasks that succeeded (`log_history_task`).
    pub(crate) history: Vec<crate::spa::history::HistoryRecord>,
    /// Command lines to log with the txg only if their task succeeds (`log_history_task`).
    commands: Vec<(SyncTaskId, crate::spa::history::HistoryRecord)>,
}

impl SyncTasks {
    /// Whether a task waits for the open txg (the txg timer commits it like dirty data).
    pub fn any_queued(&self) -> bool {
        !self.queued.is_empty()
    }
}

impl Spa {
    /// OpenZFS `dsl_sync_task`: checks in open context, assigns the task to the open txg,
    /// commits that txg and returns the task's result (its check's error in syncing context,
    /// or the commit's error) with the txg it ran in.
    pub fn dsl_sync_task(&mut self, check: SyncTaskFn, sync: SyncTaskFn) -> Result<Txg, SpaError> {
        let id = self.dsl_sync_task_queue(check, sync)?;
        self.sync_task_wait(id)?;
        Ok(self.last_synced_txg())
    }

    /// The second half of `dsl_sync_task`: commits the open txg (with the queued task in
    /// it) and returns the task's result.
    pub fn sync_task_wait(&mut self, task: SyncTaskId) -> Result<(), SpaError> {
        self.sync()?;
        self.sync_task_result(task)
    }

    /// The first half of `dsl_sync_task`: checks in open context and queues the task for
    /// the open txg without committing it, so a caller can add what else belongs to the same
    /// txg (the command's history line) and commit once. Its result is collected with
    /// `sync_task_result` after the commit.
    pub fn dsl_sync_task_queue(
        &mut self,
        mut check: SyncTaskFn,
        sync: SyncTaskFn,
    ) -> Result<SyncTaskId, SpaError> {
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        let txg = self.open_txg();
        check(
            self,
            SyncTx {
                txg,
                syncing: false,
            },
        )?;
        let id = SyncTaskId(self.dp.sync_tasks.next_id);
        self.dp.sync_tasks.next_id += 1;
        self.dp.sync_tasks.queued.push(SyncTask {
            id,
            txg,
            check,
            sync,
        });
        Ok(id)
    }

    /// The result of a queued task once its txg has committed: Ok when its sync function
    /// ran, its check's error when that refused it in syncing context. A task whose txg has
    /// not committed (or whose result was collected) is an error, not a success.
    pub fn sync_task_result(&mut self, id: SyncTaskId) -> Result<(), SpaError> {
        self.dp
            .sync_tasks
            .done
            .remove(&id)
            .unwrap_or(Err(SpaError::Dsl(super::DslError::TaskNotRun)))
    }

    /// OpenZFS `spa_history_log_internal_ds` from a sync function: a record `zpool history
    /// -i` prints as `[txg:N] name dsname (dsid) text`, committed in the same txg.
    pub fn log_history_internal_ds(
        &mut self,
        tx: SyncTx,
        name: &str,
        dsname: &str,
        dsid: u64,
        text: &str,
    ) {
        if self.readonly {
            return;
        }
        self.dp
            .sync_tasks
            .history
            .push(crate::spa::history::HistoryRecord::InternalDs {
                time_secs: crate::spa::now_secs(),
                txg: tx.txg.0,
                name: name.to_string(),
                dsname: dsname.to_string(),
                dsid,
                text: text.to_string(),
            });
    }

    /// The command line of a queued task (`zfs snapshot -r tank@a`), logged in the task's
    /// txg after its internal records, and only if the task succeeds: a command refused in
    /// syncing context leaves no history line.
    pub fn log_history_task(&mut self, task: SyncTaskId, command: &str) {
        if self.readonly {
            return;
        }
        let line = crate::spa::history::HistoryRecord::Command {
            time_secs: crate::spa::now_secs(),
            command: command.to_string(),
        };
        self.dp.sync_tasks.commands.push((task, line));
    }

    /// Runs the tasks queued for `txg` in its syncing context (`dsl_pool_sync`'s
    /// `dsl_sync_task_sync` loop); called by `Spa::sync` after the object sets are written.
    pub(crate) fn sync_tasks_run(&mut self, txg: Txg) -> Result<(), SpaError> {
        let queued = std::mem::take(&mut self.dp.sync_tasks.queued);
        if queued.is_empty() {
            return Ok(());
        }
        // The object sets' sync moved space between dirs behind the space caches' back.
        self.dsl_space_changed();
        for mut task in queued {
            debug_assert_eq!(task.txg, txg, "a sync task runs in the txg it was assigned");
            let tx = SyncTx { txg, syncing: true };
            let result = match (task.check)(self, tx) {
                Ok(()) => {
                    // Invariant (3): a sync function's failure is the commit's failure.
                    (task.sync)(self, tx)?;
                    Ok(())
                }
                Err(refused) => Err(refused),
            };
            self.dp.sync_tasks.done.insert(task.id, result);
        }
        for (task, line) in std::mem::take(&mut self.dp.sync_tasks.commands) {
            if matches!(self.dp.sync_tasks.done.get(&task), Some(Ok(()))) {
                self.dp.sync_tasks.history.push(line);
            }
        }
        Ok(())
    }
}
