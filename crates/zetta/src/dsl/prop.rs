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
//!
//! Stored form (OpenZFS's, `dsl_prop_set_sync`; the part-1 reader's `dsl::openzfs::prop`
//! decodes it, and `encode_entry`/`decode_entry` here are its mirror): an index property's
//! value (`compression=lz4`, `atime=off`) is one u64, OpenZFS's number
//! (`dsl::openzfs::index`); a number property's (`quota`, `recordsize`) one u64; any other
//! value (strings, user properties, Zetta's `%` receive state) 1-byte integers with the
//! NUL; a `$inherit` marker one u64 0. The engine's API stays text: values go in and come
//! out as the words `zfs get` prints (an alias such as `gzip-6` reads back as `gzip`, as in
//! OpenZFS).

use super::{zap_error, NESTING_MAX};
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use crate::zap::{self, ZapError, ZapValue};
use std::collections::HashMap;

/// Suffix of a received value's entry.
pub const RECEIVED_SUFFIX: &str = "$recvd";
/// Suffix of the entry that hides a received value (`zfs inherit`).
pub const INHERIT_SUFFIX: &str = "$inherit";

/// Whether a props-ZAP entry is a property's local value (not a received value, a marker
/// or private state).
pub fn is_local_entry(name: &str) -> bool {
    !name.contains('$') && !name.starts_with('%')
}

/// The property an entry name stores a value of (`quota`, `quota$recvd`); `None` for a
/// marker or Zetta's private state.
fn entry_prop(entry: &str) -> Option<&str> {
    use super::openzfs::prop::{entry_kind, EntryKind};
    match entry_kind(entry) {
        EntryKind::Local(prop) | EntryKind::Received(prop) if !prop.starts_with('%') => Some(prop),
        _ => None,
    }
}

/// The values in force at one dataset from its own props-ZAP entries (name, text): the
/// local value, else the received one unless `zfs inherit` hid it; by name.
pub fn effective_entries(entries: &[(String, String)]) -> Vec<(String, String)> {
    let has = |key: &str| entries.iter().any(|(n, _)| n == key);
    let mut out: Vec<(String, String)> = Vec::new();
    for (entry, value) in entries {
        if is_local_entry(entry) {
            out.push((entry.clone(), value.clone()));
        } else if let Some(prop) = entry.strip_suffix(RECEIVED_SUFFIX) {
            if !has(prop) && !has(&format!("{prop}{INHERIT_SUFFIX}")) {
                out.push((prop.to_string(), value.clone()));
            }
        }
    }
    out.sort();
    out
}

/// The received values among one dataset's own props-ZAP entries, by name.
pub fn received_entries(entries: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = entries
        .iter()
        .filter_map(|(entry, value)| {
            let prop = entry.strip_suffix(RECEIVED_SUFFIX)?;
            (!prop.starts_with('%')).then(|| (prop.to_string(), value.clone()))
        })
        .collect();
    out.sort();
    out
}

/// How OpenZFS stores value `text` of props-ZAP entry `entry`.
pub(crate) fn encode_entry(entry: &str, text: &str) -> ZapValue {
    if entry.ends_with(INHERIT_SUFFIX) {
        return ZapValue::U64s(vec![0]);
    }
    if let Some(prop) = entry_prop(entry) {
        if let Some(number) = super::openzfs::index::number_of(prop, text) {
            return ZapValue::U64s(vec![number]);
        }
        let is_number = zetta_zprop::ZfsProp::from_name(prop)
            .is_some_and(|p| matches!(p.desc().kind, zetta_zprop::zfs_prop::PropType::Number));
        if let (true, Ok(number)) = (is_number, text.parse::<u64>()) {
            return ZapValue::U64s(vec![number]);
        }
    }
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    ZapValue::Bytes(bytes)
}

/// Writes entry `entry` with value `text` into props ZAP `zap_object` of the MOS, stored
/// as `encode_entry` says (one u64, or the bytes with their NUL).
pub(crate) fn write_entry(
    mos: &mut crate::dmu::ObjectSet,
    ctx: &IoCtx<'_>,
    zap_object: u64,
    entry: &str,
    text: &str,
) -> Result<(), SpaError> {
    match encode_entry(entry, text) {
        ZapValue::U64s(words) => zap::zap_update(mos, ctx, ObjectId(zap_object), entry, &words),
        ZapValue::Bytes(bytes) => {
            zap::zap_update_bytes(mos, ctx, ObjectId(zap_object), entry, &bytes)
        }
    }
    .map_err(zap_error)
}

/// The text of a stored props-ZAP entry (`encode_entry`'s inverse, through the part-1
/// reader's decoder); `None` for an entry that is not a string or one number.
pub(crate) fn decode_entry(entry: &str, value: &ZapValue) -> Option<String> {
    use super::openzfs::prop::{decode_value, PropValue};
    if entry.ends_with(INHERIT_SUFFIX) {
        return Some(String::new());
    }
    let value = match value {
        ZapValue::U64s(words) => super::openzfs::ZapValue::Ints(words.clone()),
        ZapValue::Bytes(bytes) => super::openzfs::ZapValue::Bytes(bytes.clone()),
    };
    match decode_value(entry, &value).ok()? {
        PropValue::String(text) => Some(text),
        PropValue::Number(n) => Some(
            entry_prop(entry)
                .and_then(|prop| super::openzfs::index::name_of(prop, n))
                .unwrap_or_else(|| n.to_string()),
        ),
    }
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
        self.apply_space_limits(name)
    }

    /// The values in force at `name` itself (local, else received unless hidden), without
    /// inherited ones: what `zfs send -p` carries.
    pub fn own_effective_props(&mut self, name: &str) -> Result<Vec<(String, String)>, SpaError> {
        Ok(effective_entries(&self.local_props(name)?))
    }

    /// The received values at `name` itself, hidden or not (libzfs's
    /// `zfs_get_recvd_props`): what `zfs send -b` carries.
    pub fn own_received_props(&mut self, name: &str) -> Result<Vec<(String, String)>, SpaError> {
        Ok(received_entries(&self.local_props(name)?))
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
            self.set_local_prop(name, &marker, "")?;
        } else {
            self.clear_local_prop(name, &marker)?;
        }
        self.apply_space_limits(name)
    }

    /// The stored entries of `props` (local, received, inherit marker) on `dir` and each
    /// of its ancestors: what `zetta_zprop::inherit` needs to resolve them.
    pub(super) fn dir_chain_props(
        &mut self,
        dir: u64,
        props: &[&str],
    ) -> Result<DirChain, SpaError> {
        let mut levels = Vec::new();
        let mut current = dir;
        for _ in 0..=NESTING_MAX {
            let phys = self.read_dir(current)?;
            let mut entries = HashMap::new();
            if phys.props_zap != 0 {
                for prop in props {
                    for key in [
                        prop.to_string(),
                        format!("{prop}{RECEIVED_SUFFIX}"),
                        format!("{prop}{INHERIT_SUFFIX}"),
                    ] {
                        let ctx = io_ctx!(self);
                        match zap::zap_lookup_value(
                            &self.dp.mos,
                            &ctx,
                            ObjectId(phys.props_zap),
                            &key,
                        ) {
                            Ok(Some(value)) => {
                                let text = decode_entry(&key, &value).ok_or_else(|| {
                                    SpaError::Corrupt(format!(
                                        "props ZAP {}: entry {key} is not a value",
                                        phys.props_zap
                                    ))
                                })?;
                                entries.insert(key, text);
                            }
                            Ok(None) | Err(ZapError::NotFound) => {}
                            Err(e) => return Err(zap_error(e)),
                        }
                    }
                }
            }
            levels.push(entries);
            if phys.parent_dir == 0 || current == self.dp.directory.root_dir {
                break;
            }
            current = phys.parent_dir;
        }
        levels.reverse();
        Ok(DirChain { levels })
    }
}

/// The I/O properties the engine itself applies to new writes.
pub(super) const IO_PROPS: &[&str] = &["recordsize", "compression", "checksum", "copies"];

/// Property entries along one dir's ancestry, root first, seen by `zetta_zprop::inherit`
/// under stand-in names (`0`, `0/1`, `0/1/2`, …: inheritance depends on the chain only).
pub(super) struct DirChain {
    levels: Vec<HashMap<String, String>>,
}

impl DirChain {
    fn level_name(depth: usize) -> String {
        (0..=depth)
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("/")
    }

    fn entry(&self, dataset: &str, key: &str) -> Option<&String> {
        let depth = dataset.split('/').count().checked_sub(1)?;
        (Self::level_name(depth) == dataset)
            .then(|| self.levels.get(depth)?.get(key))
            .flatten()
    }

    /// The value in force at the chain's last dir (local, received or inherited, else the
    /// property's default), as `zfs get` resolves it.
    pub(super) fn resolve(&self, prop: zetta_zprop::ZfsProp) -> Option<String> {
        let name = Self::level_name(self.levels.len().saturating_sub(1));
        zetta_zprop::inherit::resolve_native(self, &name, prop).map(|r| r.value)
    }
}

impl zetta_zprop::PropSource for DirChain {
    fn local(&self, dataset: &str, prop: &str) -> Option<String> {
        self.entry(dataset, prop).cloned()
    }

    fn received(&self, dataset: &str, prop: &str) -> Option<String> {
        self.entry(dataset, &format!("{prop}{RECEIVED_SUFFIX}"))
            .cloned()
    }

    fn inherit_marker(&self, dataset: &str, prop: &str) -> bool {
        self.entry(dataset, &format!("{prop}{INHERIT_SUFFIX}"))
            .is_some()
    }
}
