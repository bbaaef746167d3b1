//! The pool's side of the intent log: `fsync` for a dataset, and replay of every
//! dataset's log at import (OpenZFS replays at mount; a userspace pool has no mount without
//! its daemon, so import is the one moment nothing else runs).

use super::{Commit, ReplayReport};
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError, MOS_OBJECT_ROOT_DATASET};

impl Spa {
    /// Makes every change logged in dataset `dataset` (MOS object) durable: its log records
    /// are written and flushed, or, with no log yet or no room for one, the txg commits.
    pub fn zil_commit(&mut self, dataset: u64) -> Result<Commit, SpaError> {
        if dataset != MOS_OBJECT_ROOT_DATASET.0 {
            self.open_dataset(dataset)?;
        }
        let space = self.head_available(dataset, true)?.bytes;
        let outcome = {
            let ctx = io_ctx!(self);
            let os = if dataset == MOS_OBJECT_ROOT_DATASET.0 {
                &mut self.root_dataset
            } else {
                match self.datasets.get_mut(&dataset) {
                    Some(head) => &mut head.objset,
                    None => return Err(SpaError::Corrupt(format!("dataset {dataset} vanished"))),
                }
            };
            super::commit(os, &ctx, space)
        };
        match outcome {
            Ok(Commit::NeedTxgSync) | Err(super::ZilError::NoSpace) => {
                self.sync()?;
                Ok(Commit::NeedTxgSync)
            }
            Ok(done) => Ok(done),
            Err(e) => Err(SpaError::Io(e.to_string())),
        }
    }

    /// Replays the log of every head dataset that has one, then commits (which retires the
    /// logs). Returns what each replay did, by dataset name.
    pub fn zil_replay_all(&mut self) -> Result<Vec<(String, ReplayReport)>, SpaError> {
        let last_synced = crate::types::Txg(self.open_txg.0.saturating_sub(1));
        let mut reports = Vec::new();
        for name in self.dataset_names()? {
            let Some(dataset) = self.lookup_dataset(&name)? else {
                continue;
            };
            if dataset != MOS_OBJECT_ROOT_DATASET.0 {
                self.open_dataset(dataset)?;
            }
            let ctx = io_ctx!(self);
            let os = if dataset == MOS_OBJECT_ROOT_DATASET.0 {
                &mut self.root_dataset
            } else {
                match self.datasets.get_mut(&dataset) {
                    Some(head) => &mut head.objset,
                    None => continue,
                }
            };
            if super::chain::decode_header(&os.zil_header).is_none() {
                continue;
            }
            // A log that cannot be read is reported, not fatal: the pool imports at its
            // last committed txg either way.
            let report = super::replay::replay(os, &ctx, last_synced).unwrap_or_else(|e| {
                os.zil.mark_chain_written();
                ReplayReport {
                    error: Some(e.to_string()),
                    ..ReplayReport::default()
                }
            });
            if report.blocks > 0 || report.error.is_some() {
                reports.push((name, report));
            }
        }
        if !reports.is_empty() {
            self.sync()?;
        }
        Ok(reports)
    }
}
