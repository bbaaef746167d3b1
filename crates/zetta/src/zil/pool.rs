//! The pool's side of the intent log: `fsync` for a dataset (replay of every dataset's log
//! at import is the ZPL's: `zpl::zfs_replay`).

use super::Commit;
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
                &mut self.dp.root_dataset
            } else {
                match self.dp.datasets.get_mut(&dataset) {
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
}
