//! Where a receive's state lives, and which receives are running (OpenZFS keeps both in
//! the dataset: `%recv` clones, `ds_resume_*` fields, and dataset ownership).
//!
//! A work dataset carries the local property `RECV_STATE_PROP`: empty while a receive
//! without `-s` runs, the resume token of a `-s` receive (from its BEGIN on, refreshed as it
//! goes, final when it is interrupted). A work dataset with an empty state that no running
//! receive claims is debris of a process that died: the next receive into that target
//! destroys it, and so does `destroy_interrupted_receives` when the pool is imported (OpenZFS
//! `dsl_destroy_inconsistent`); one with a token stays for `zfs send -t`. Running receives
//! register their work dataset in a process-wide set, so a second receive into the same
//! target is refused as busy instead of mistaking the first one's work dataset for debris,
//! and a running receive's token is not offered for resuming.

use super::error::{RecvContext, RecvError, RecvRefusal};
use super::recv::{RECV_CHILD_NAME, RECV_STATE_PROP};
use crate::spa::{Spa, SpaError};
use parking_lot::Mutex;
use std::collections::HashSet;

static ACTIVE: Mutex<Option<HashSet<String>>> = Mutex::new(None);

pub(super) fn claim_active(key: &str) -> bool {
    ACTIVE
        .lock()
        .get_or_insert_with(HashSet::new)
        .insert(key.to_string())
}

pub(super) fn release_active(key: &str) {
    if let Some(set) = ACTIVE.lock().as_mut() {
        set.remove(key);
    }
}

pub(super) fn is_active(key: &str) -> bool {
    ACTIVE.lock().as_ref().is_some_and(|set| set.contains(key))
}

pub(super) fn active_key(spa: &Spa, work: &str) -> String {
    format!("{}/{work}", spa.guid.0)
}

/// Where a receive's partial state is: (work dataset, its state value).
pub(super) fn recv_state(spa: &mut Spa, fs: &str) -> Result<Option<(String, String)>, SpaError> {
    if spa.lookup_dir(fs)?.is_none() {
        return Ok(None);
    }
    let child = format!("{fs}/{RECV_CHILD_NAME}");
    for candidate in [child, fs.to_string()] {
        if spa.lookup_dir(&candidate)?.is_none() {
            continue;
        }
        let props = spa.local_props(&candidate)?;
        match props.into_iter().find(|(name, _)| name == RECV_STATE_PROP) {
            Some((_, value)) => return Ok(Some((candidate, value))),
            None if candidate.ends_with(RECV_CHILD_NAME) => {
                return Ok(Some((candidate, String::new())))
            }
            None => {}
        }
    }
    Ok(None)
}

/// `receive_resume_token` of a filesystem: set while an interrupted `-s` receive waits.
pub fn receive_resume_token(spa: &mut Spa, fs: &str) -> Result<Option<String>, SpaError> {
    let Some((work, value)) = recv_state(spa, fs)? else {
        return Ok(None);
    };
    if value.is_empty() || is_active(&active_key(spa, &work)) {
        return Ok(None);
    }
    Ok(Some(value))
}

/// Destroys the work datasets of receives without `-s` that a dead process left behind
/// (called at import, before any receive of this process can have started). Returns their
/// names.
pub fn destroy_interrupted_receives(spa: &mut Spa) -> Result<Vec<String>, SpaError> {
    let mut debris = Vec::new();
    for name in spa.dataset_names()? {
        let state = spa
            .local_props(&name)?
            .into_iter()
            .find(|(prop, _)| prop == RECV_STATE_PROP);
        if matches!(state, Some((_, value)) if value.is_empty())
            && !is_active(&active_key(spa, &name))
        {
            debris.push(name);
        }
    }
    // Deepest first: a `%recv` child goes before a half-received parent.
    for name in debris.iter().rev() {
        spa.destroy_filesystem(name)?;
    }
    if !debris.is_empty() {
        spa.sync()?;
    }
    Ok(debris)
}

/// `zfs receive -A fs`: discards an interrupted `-s` receive's partial state.
pub fn abort_resumable_receive(spa: &mut Spa, fs: &str) -> Result<(), RecvError> {
    let pool = |error| RecvError::Pool {
        context: RecvContext::Abort,
        error,
    };
    let missing = || RecvError::Refused {
        context: RecvContext::Abort,
        why: RecvRefusal::NothingToAbort { fs: fs.to_string() },
    };
    let (work, value) = recv_state(spa, fs).map_err(pool)?.ok_or_else(missing)?;
    if value.is_empty() || is_active(&active_key(spa, &work)) {
        return Err(missing());
    }
    spa.destroy_filesystem(&work).map_err(pool)?;
    spa.sync().map_err(pool)?;
    Ok(())
}
