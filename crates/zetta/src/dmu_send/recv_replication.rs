//! `zfs receive -F` of an incremental replication stream (`zfs send -R -i/-I`): the target
//! tree is made to match the sender's (OpenZFS `recv_incremental_replication` in
//! `libzfs_sendrecv.c`, its "check for delete" passes).
//!
//! Theory. The stream's package header lists every filesystem sent and, for each, every
//! snapshot it has up to the sent one (short name → guid). At the header's END (once its
//! checksum verified), before any substream, each filesystem under the destination is
//! matched to the stream's by name (the same
//! mapping as the substreams: the sent name with `sendfs` replaced by the target, or per
//! `-d`/`-e`). A filesystem the stream does not list was destroyed on the sender: it goes,
//! with its snapshots and descendants. In a filesystem the stream lists, a snapshot whose
//! guid the stream does not list was destroyed (or replaced) on the sender: it goes too.
//! Snapshots the sender still has stay, so the substreams find their bases. Only with `-F`,
//! only for incremental replication streams (a full one creates its tree), never in `-n`.
//!
//! Invariant: nothing outside the destination tree is touched, and hidden `%` work
//! datasets are left to their own receives.

use super::error::{RecvContext, RecvError, RecvRefusal};
use super::recv::{Receiver, RecvEvent};
use crate::nvlist::NvList;
use crate::spa::Spa;

/// Destroying can need several passes: a clone must go before its origin snapshot.
const DESTROY_PASSES_MAX: usize = 8;

impl Receiver {
    /// Destroys what the sender of this replication stream no longer has (see the module
    /// header). `tosnap` is the sent snapshot's short name.
    pub(super) fn destroy_unsent(
        &mut self,
        spa: &mut Spa,
        sendfs: &str,
        tosnap: &str,
        fss: &[NvList],
    ) -> Result<(), RecvError> {
        let pool = |error| RecvError::Pool {
            context: RecvContext::Receive,
            error,
        };
        let dest_of = |receiver: &Receiver, fs: &str| -> Result<String, RecvError> {
            let snap = receiver.destination(&format!("{fs}@{tosnap}"), sendfs)?;
            Ok(snap.split('@').next().unwrap_or_default().to_string())
        };
        let top = dest_of(self, sendfs)?;
        if spa.lookup_dir(&top).map_err(pool)?.is_none() {
            return Ok(());
        }
        // Local filesystem → the guids of the snapshots the sender has there.
        let mut sent: Vec<(String, Vec<u64>)> = Vec::new();
        for entry in fss {
            let Some(name) = entry.get_str("name") else {
                continue;
            };
            let guids = entry
                .get_list("snaps")
                .map(|snaps| {
                    snaps
                        .entries
                        .keys()
                        .filter_map(|k| snaps.get_u64(k))
                        .collect()
                })
                .unwrap_or_default();
            sent.push((dest_of(self, name)?, guids));
        }
        let mut victims = Vec::new();
        let local: Vec<String> = spa
            .dataset_names()
            .map_err(pool)?
            .into_iter()
            .filter(|n| !n.contains('%') && (*n == top || n.starts_with(&format!("{top}/"))))
            .collect();
        for fs in &local {
            let snapshots = spa.snapshots(fs).map_err(pool)?;
            match sent.iter().find(|(name, _)| name == fs) {
                Some((_, guids)) => {
                    for (snapshot, _, phys) in snapshots {
                        if !guids.contains(&phys.guid) {
                            victims.push(snapshot);
                        }
                    }
                }
                // Not sent, but the target itself stays (the header names it).
                None if *fs == top => {}
                None => {
                    victims.extend(snapshots.into_iter().map(|(name, _, _)| name));
                    victims.push(fs.clone());
                }
            }
        }
        // Snapshots first, then filesystems deepest first.
        victims.sort_by_key(|name| (!name.contains('@'), std::cmp::Reverse(name.clone())));
        for name in &victims {
            self.events
                .push(RecvEvent::Destroying { name: name.clone() });
        }
        destroy_all(spa, victims)
    }
}

/// Destroys snapshots (`fs@s`) and filesystems, retrying what another victim still
/// depends on.
fn destroy_all(spa: &mut Spa, mut victims: Vec<String>) -> Result<(), RecvError> {
    let pool = |error| RecvError::Pool {
        context: RecvContext::Receive,
        error,
    };
    for _ in 0..DESTROY_PASSES_MAX {
        let before = victims.len();
        let mut left = Vec::new();
        let mut last_error = None;
        for name in victims {
            let result = if name.contains('@') {
                spa.destroy_snapshot(&name)
            } else {
                spa.destroy_filesystem(&name)
            };
            if let Err(error) = result {
                last_error = Some(error);
                left.push(name);
            }
        }
        if let Some(error) = last_error {
            if left.len() == before {
                return Err(pool(error));
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        victims = left;
    }
    match victims.first() {
        Some(name) => Err(RecvError::Refused {
            context: RecvContext::Receive,
            why: RecvRefusal::CannotDestroy { name: name.clone() },
        }),
        None => Ok(()),
    }
}
