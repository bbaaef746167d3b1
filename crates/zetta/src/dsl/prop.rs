//! Received property values (OpenZFS `dsl_prop.c`: the `$recvd` and `$inherit` entries of
//! a dataset's property ZAP, `dsl_props_set` with `ZPROP_SRC_RECEIVED`, and the masking
//! that `zfs inherit` and `zfs inherit -S` do).
//!
//! Theory. A dataset's props ZAP holds, per property, up to three entries: `prop`, the
//! local value (`zfs set`, `zfs receive -o`); `prop$recvd`, the value a `zfs receive`
//! stream carried (`-p`, `-R`), whose SOURCE is `received`; and `prop$inherit`, left by
//! `zfs inherit` when a received value exists, which hides that value until `zfs inherit
//! -S` or `zfs set` removes it. `$` is in no property name, so the entries cannot collide
//! with a property, and `%` entries (a receive's state) are private. The value in force
//! at one dataset is the local value, else the received value unless hidden; inheritance
//! above that is `zetta_zprop::inherit`'s, which reads the same three entries.
//!
//! Invariant: a stream's properties replace all of a dataset's received values at once
//! (a property the sender no longer has stops being received), and never touch local ones.

use super::zap_error;
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use crate::zap::{self, ZapError};

/// Suffix of a received value's entry.
pub const RECEIVED_SUFFIX: &str = "$recvd";
/// Suffix of the entry that hides a received value (`zfs inherit`).
pub const INHERIT_SUFFIX: &str = "$inherit";

/// Whether a props-ZAP entry is a property's local value (not a received value, a marker
/// or private state).
pub fn is_local_entry(name: &str) -> bool {
    !name.contains('$') && !name.starts_with('%')
}

impl Spa {
    /// Replaces the received values of `name` with `props` (stored form).
    pub fn set_received_props(
        &mut self,
        name: &str,
        props: &[(String, String)],
    ) -> Result<(), SpaError> {
        for (entry, _) in self.local_props(name)? {
            if entry.ends_with(RECEIVED_SUFFIX) {
                self.clear_local_prop(name, &entry)?;
            }
        }
        for (prop, value) in props {
            self.set_local_prop(name, &format!("{prop}{RECEIVED_SUFFIX}"), value)?;
        }
        Ok(())
    }

    /// The values in force at `name` itself (local, else received unless hidden), without
    /// inherited ones: what `zfs send -p` carries.
    pub fn own_effective_props(&mut self, name: &str) -> Result<Vec<(String, String)>, SpaError> {
        let entries = self.local_props(name)?;
        let has = |key: &str| entries.iter().any(|(n, _)| n == key);
        let mut out: Vec<(String, String)> = Vec::new();
        for (entry, value) in &entries {
            if is_local_entry(entry) {
                out.push((entry.clone(), value.clone()));
            } else if let Some(prop) = entry.strip_suffix(RECEIVED_SUFFIX) {
                if !has(prop) && !has(&format!("{prop}{INHERIT_SUFFIX}")) {
                    out.push((prop.to_string(), value.clone()));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// `zfs inherit prop name` (`revert_to_received` = `-S`): the local value goes; a
    /// received value is hidden, or with `-S` shown again.
    pub fn inherit_prop(
        &mut self,
        name: &str,
        prop: &str,
        revert_to_received: bool,
    ) -> Result<(), SpaError> {
        self.clear_local_prop(name, prop)?;
        let marker = format!("{prop}{INHERIT_SUFFIX}");
        let received = self
            .local_props(name)?
            .iter()
            .any(|(n, _)| *n == format!("{prop}{RECEIVED_SUFFIX}"));
        if received && !revert_to_received {
            self.set_local_prop(name, &marker, "")
        } else {
            self.clear_local_prop(name, &marker)
        }
    }

    /// The value of `prop` in force at the dir whose props ZAP is `zap_object`, if any
    /// (local, else received unless hidden).
    pub(super) fn lookup_prop_effective(
        &mut self,
        zap_object: u64,
        prop: &str,
    ) -> Result<Option<String>, SpaError> {
        let lookup = |spa: &mut Spa, key: &str| {
            let ctx = io_ctx!(spa);
            match zap::zap_lookup_bytes(&spa.mos, &ctx, ObjectId(zap_object), key) {
                Ok(found) => Ok(found.map(|b| String::from_utf8_lossy(&b).into_owned())),
                Err(ZapError::NotFound) => Ok(None),
                Err(e) => Err(zap_error(e)),
            }
        };
        if let Some(value) = lookup(self, prop)? {
            return Ok(Some(value));
        }
        if lookup(self, &format!("{prop}{INHERIT_SUFFIX}"))?.is_some() {
            return Ok(None);
        }
        lookup(self, &format!("{prop}{RECEIVED_SUFFIX}"))
    }
}
