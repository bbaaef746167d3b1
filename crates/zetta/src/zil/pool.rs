//! The pool's side of the intent log: `fsync` for a dataset, the claim of every
//! dataset's log at import (`zil_claim_all`; their replay is the ZPL's: `zpl::zfs_replay`).

use super::Commit;
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};

impl Spa {
    /// Makes every change logged in dataset `dataset` (MOS object) durable: its log records
    /// are written and flushed, or, with no log yet or no room for one, the txg commits.
    /// A txg in its syncing tail is retired first.
    pub fn zil_commit(&mut self, dataset: u64) -> Result<Commit, SpaError> {
        // A txg in its syncing tail is not durable yet, and neither the changes it holds
        // nor records written now would survive a cut before its uberblock lands (the
        // crash-safety paragraph of `spa::txg`): wait for it first.
        self.sync_retire()?;
        if dataset != self.dp.directory.root_dataset {
            self.open_dataset(dataset)?;
        }
        let space = self.head_available(dataset, true)?.bytes;
        let outcome = {
            let ctx = io_ctx!(self);
            let os = if dataset == self.dp.directory.root_dataset {
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

impl Spa {
    /// Claims the intent log of every head dataset (`spa_ld_claim_log_blocks`), in the
    /// import's first txg, before anything else allocates, and commits that txg when a
    /// claim was recorded (OpenZFS waits for the claim txg to sync before it goes on):
    /// from then on the chains' blocks are in the space maps, so the replay that follows
    /// (and its commit, which a power cut may interrupt) cannot allocate over a block it
    /// has yet to read. Returns how many blocks were claimed.
    pub fn zil_claim_all(&mut self) -> Result<usize, SpaError> {
        let mut claimed_blocks = 0;
        let mut header_written = false;
        for name in self.dataset_names()? {
            let Some(dataset) = self.lookup_dataset(&name)? else {
                continue;
            };
            if dataset != self.dp.directory.root_dataset {
                self.open_dataset(dataset)?;
            }
            let ctx = io_ctx!(self);
            let os = if dataset == self.dp.directory.root_dataset {
                &mut self.dp.root_dataset
            } else {
                match self.dp.datasets.get_mut(&dataset) {
                    Some(head) => &mut head.objset,
                    None => continue,
                }
            };
            // A chain that cannot be read claims nothing; replay reports it.
            if let Ok(claim) = super::claim(os, &ctx) {
                claimed_blocks += claim.blocks_claimed;
                header_written |= claim.header_written;
            }
        }
        if header_written {
            self.sync()?;
        }
        Ok(claimed_blocks)
    }
}

impl Spa {
    /// The ZIL header of head dataset `name` as it is now (`zdb -i`'s "ZIL header" line):
    /// whether its log was claimed, up to which sequence numbers, and its head block.
    pub fn zil_header(&mut self, name: &str) -> Result<Option<super::chain::ZilHeader>, SpaError> {
        let Some(dataset) = self.lookup_dataset(name)? else {
            return Ok(None);
        };
        if dataset != self.dp.directory.root_dataset {
            self.open_dataset(dataset)?;
        }
        let header = if dataset == self.dp.directory.root_dataset {
            &self.dp.root_dataset.zil_header
        } else {
            match self.dp.datasets.get(&dataset) {
                Some(head) => &head.objset.zil_header,
                None => return Ok(None),
            }
        };
        Ok(Some(super::chain::ZilHeader::decode(
            header,
            crate::byteorder::ByteOrder::Little,
        )))
    }
}
