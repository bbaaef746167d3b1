//! Property inheritance: the value a dataset sees and the SOURCE column `zfs get` prints.
//!
//! Counterpart: `dsl_prop_get_dd`/`dsl_prop_get_ds` and the `$inherit`/`$recvd` entries of
//! `module/zfs/dsl_prop.c`, `zfs_prop_inherit` (libzfs_dataset.c) and the mountpoint and
//! `get_source` logic of `zfs_prop_get`.
//!
//! Theory. Each dataset keeps, per property, up to three entries: a *local* value (`zfs set`),
//! a *received* value (`zfs receive`), and an *inherit marker* left by `zfs inherit` when a
//! received value exists, which hides that received value. Resolution walks from the dataset up
//! its ancestors; at each level the local value wins, then the received value unless the marker
//! hides it. The level where a value is found is the *setpoint*: the dataset itself gives
//! `local`/`received`, an ancestor gives `inherited from <ancestor>`, and running off the pool
//! root gives the default with source `default`. Non-inheritable properties look only at the
//! dataset itself. Snapshots look at their own entries (only user properties can be set there)
//! and then continue with their filesystem's chain, so a value set on `pool/fs` shows on
//! `pool/fs@s` as `inherited from pool/fs`. Mountpoints inherit by path: the setpoint's path plus
//! the dataset's name below the setpoint (`/tank` set on `tank` gives `/tank/a/b` on `tank/a/b`,
//! `/` gives `/a/b`), `none` and `legacy` inherit unchanged, and the default is `/<name>`.
//! `zfs inherit` removes the local value and, when a received value exists, adds the marker;
//! `zfs inherit -S` removes both so the received value shows again; `zfs set` clears the marker.

use crate::namecheck::{parent_name, split_at_delimiter};
use crate::zfs_prop::{DefaultValue, SourceRule, ZfsProp};
use std::collections::BTreeMap;
use std::fmt;

/// Where the engine reads stored property entries. Names are full dataset names; property
/// names are canonical native names or user property names. Stored values are in the form
/// of [`crate::zfs_prop::PropValue::to_stored`].
pub trait PropSource {
    /// The value `zfs set` stored on `dataset`.
    fn local(&self, dataset: &str, prop: &str) -> Option<String>;
    /// The value `zfs receive` stored on `dataset`.
    fn received(&self, dataset: &str, prop: &str) -> Option<String>;
    /// Whether `zfs inherit` left a marker hiding the received value on `dataset`.
    fn inherit_marker(&self, _dataset: &str, _prop: &str) -> bool {
        false
    }
}

/// The SOURCE column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `-`: read-only or not applicable.
    None,
    Default,
    Local,
    Received,
    /// A mount option overrides the property for now.
    Temporary,
    /// `inherited from <dataset>`.
    Inherited(String),
}

impl fmt::Display for Source {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::None => formatter.write_str("-"),
            Source::Default => formatter.write_str("default"),
            Source::Local => formatter.write_str("local"),
            Source::Received => formatter.write_str("received"),
            Source::Temporary => formatter.write_str("temporary"),
            Source::Inherited(dataset) => write!(formatter, "inherited from {dataset}"),
        }
    }
}

/// A resolved property: the stored-form value (mountpoints already joined) and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub value: String,
    pub source: Source,
}

/// Where a value was found.
struct Found {
    value: String,
    setpoint: String,
    received: bool,
}

/// The datasets whose entries count for `name`, nearest first: a snapshot or bookmark itself,
/// then its filesystem and that filesystem's ancestors.
fn lookup_chain(name: &str) -> Vec<&str> {
    let mut chain = Vec::new();
    let (head, delimited) = split_at_delimiter(name);
    if delimited.is_some() {
        chain.push(name);
    }
    let mut current = Some(head);
    while let Some(dataset) = current {
        chain.push(dataset);
        current = parent_name(dataset);
    }
    chain
}

/// The walk of `dsl_prop_get_dd`.
fn find(source: &dyn PropSource, name: &str, prop: &str, inheritable: bool) -> Option<Found> {
    for (level, dataset) in lookup_chain(name).into_iter().enumerate() {
        if level > 0 && !inheritable {
            // A snapshot's non-inheritable values are its own (volsize); nothing is inherited.
            break;
        }
        if let Some(value) = source.local(dataset, prop) {
            return Some(Found {
                value,
                setpoint: dataset.to_string(),
                received: false,
            });
        }
        if !source.inherit_marker(dataset, prop) {
            if let Some(value) = source.received(dataset, prop) {
                return Some(Found {
                    value,
                    setpoint: dataset.to_string(),
                    received: true,
                });
            }
        }
    }
    None
}

fn source_of(found: &Found, name: &str) -> Source {
    if found.setpoint == name {
        if found.received {
            Source::Received
        } else {
            Source::Local
        }
    } else {
        Source::Inherited(found.setpoint.clone())
    }
}

/// The mountpoint `name` gets from `value` stored at `setpoint` (libzfs `zfs_prop_get`);
/// `altroot` is the pool's altroot, prepended to paths. A received value on the dataset itself
/// is used as is.
pub fn mountpoint_display(
    value: &str,
    setpoint: Option<&str>,
    name: &str,
    received_here: bool,
    altroot: Option<&str>,
) -> String {
    if !value.starts_with('/') {
        return value.to_string(); // none, legacy
    }
    let relative = if received_here {
        ""
    } else {
        let setpoint_len = setpoint.map_or(0, str::len);
        let below = name.get(setpoint_len..).unwrap_or("");
        below.strip_prefix('/').unwrap_or(below)
    };
    let root = match altroot {
        Some("/") | Some("-") | None => "",
        Some(root) => root,
    };
    let mut base = value;
    if value == "/" && (!root.is_empty() || !relative.is_empty()) {
        base = "";
    }
    if relative.is_empty() {
        format!("{root}{base}")
    } else {
        let separator = if relative.starts_with('@') { "" } else { "/" };
        format!("{root}{base}{separator}{relative}")
    }
}

/// Resolves native property `prop` on `name`. Returns `None` when the property has neither a
/// stored value nor a default (origin, clones, ...: `zfs get` prints `-`); read-only statistics
/// are the dataset layer's to supply and are not looked up here.
pub fn resolve_native(source: &dyn PropSource, name: &str, prop: ZfsProp) -> Option<Resolved> {
    resolve_native_with_altroot(source, name, prop, None)
}

/// [`resolve_native`] for a pool imported with an altroot.
pub fn resolve_native_with_altroot(
    source: &dyn PropSource,
    name: &str,
    prop: ZfsProp,
    altroot: Option<&str>,
) -> Option<Resolved> {
    let desc = prop.desc();
    let found = find(source, name, desc.name, prop.is_inheritable());
    let (value, mut resolved_source) = match &found {
        Some(found) => {
            let value = if prop == ZfsProp::Mountpoint {
                let received_here = found.received && found.setpoint == name;
                mountpoint_display(
                    &found.value,
                    Some(&found.setpoint),
                    name,
                    received_here,
                    altroot,
                )
            } else {
                found.value.clone()
            };
            (value, source_of(found, name))
        }
        None => {
            let value = match desc.default {
                DefaultValue::None => return None,
                DefaultValue::Number(number) => number.to_string(),
                DefaultValue::Index(word) | DefaultValue::Text(word) => word.to_string(),
            };
            let value = if prop == ZfsProp::Mountpoint {
                mountpoint_display(&value, None, name, false, altroot)
            } else {
                value
            };
            (value, Source::Default)
        }
    };
    match desc.source_rule {
        SourceRule::Normal => {}
        SourceRule::Dash => resolved_source = Source::None,
        SourceRule::DashUnlessDefault if found.is_some() => resolved_source = Source::None,
        SourceRule::DashUnlessDefault => {}
    }
    if prop.desc().attr == crate::zfs_prop::PropAttr::ReadOnly {
        resolved_source = Source::None;
    }
    Some(Resolved {
        value,
        source: resolved_source,
    })
}

/// Resolves user property `prop` on `name`; `None` when unset everywhere (`zfs get` prints
/// `-` for both value and source). User properties are always inherited.
pub fn resolve_user(source: &dyn PropSource, name: &str, prop: &str) -> Option<Resolved> {
    let found = find(source, name, prop, true)?;
    Some(Resolved {
        source: source_of(&found, name),
        value: found.value,
    })
}

/// Resolves a property by name: native (by name or alias) or user.
pub fn resolve(source: &dyn PropSource, name: &str, prop: &str) -> Option<Resolved> {
    match ZfsProp::from_name(prop) {
        Some(native) => resolve_native(source, name, native),
        None => resolve_user(source, name, prop),
    }
}

/// Stored entries of one dataset for one property.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Entries {
    local: Option<String>,
    received: Option<String>,
    inherit_marker: bool,
}

/// An in-memory [`PropSource`] with the `zfs set` / `zfs inherit [-S]` / `zfs receive`
/// transitions of `dsl_prop_set_sync`; the dataset layer can persist its entries as they are.
#[derive(Clone, Debug, Default)]
pub struct PropStore {
    entries: BTreeMap<(String, String), Entries>,
}

impl PropStore {
    pub fn new() -> PropStore {
        PropStore::default()
    }

    fn entry(&mut self, dataset: &str, prop: &str) -> &mut Entries {
        self.entries
            .entry((dataset.to_string(), prop.to_string()))
            .or_default()
    }

    /// `zfs set prop=value dataset`: the local value, which also clears an inherit marker.
    pub fn set_local(&mut self, dataset: &str, prop: &str, value: &str) {
        let entry = self.entry(dataset, prop);
        entry.local = Some(value.to_string());
        entry.inherit_marker = false;
    }

    /// `zfs receive` of a property value.
    pub fn set_received(&mut self, dataset: &str, prop: &str, value: &str) {
        self.entry(dataset, prop).received = Some(value.to_string());
    }

    /// A receive that no longer carries the property drops the received value.
    pub fn clear_received(&mut self, dataset: &str, prop: &str) {
        self.entry(dataset, prop).received = None;
    }

    /// `zfs inherit prop dataset` (`revert_to_received` = `-S`).
    pub fn inherit(&mut self, dataset: &str, prop: &str, revert_to_received: bool) {
        let entry = self.entry(dataset, prop);
        entry.local = None;
        entry.inherit_marker = !revert_to_received && entry.received.is_some();
    }

    /// Forgets a destroyed dataset's entries.
    pub fn remove_dataset(&mut self, dataset: &str) {
        self.entries.retain(|(name, _), _| name != dataset);
    }

    /// User properties with an entry anywhere along `name`'s lookup chain, sorted: the user
    /// rows `zfs get all` appends after the native ones.
    pub fn user_props_visible_from(&self, name: &str) -> Vec<String> {
        let chain = lookup_chain(name);
        let mut names: Vec<String> = self
            .entries
            .iter()
            .filter(|((dataset, prop), entries)| {
                chain.contains(&dataset.as_str())
                    && ZfsProp::from_name(prop).is_none()
                    && (entries.local.is_some() || entries.received.is_some())
            })
            .map(|((_, prop), _)| prop.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

impl PropSource for PropStore {
    fn local(&self, dataset: &str, prop: &str) -> Option<String> {
        self.entries
            .get(&(dataset.to_string(), prop.to_string()))
            .and_then(|entries| entries.local.clone())
    }

    fn received(&self, dataset: &str, prop: &str) -> Option<String> {
        self.entries
            .get(&(dataset.to_string(), prop.to_string()))
            .and_then(|entries| entries.received.clone())
    }

    fn inherit_marker(&self, dataset: &str, prop: &str) -> bool {
        self.entries
            .get(&(dataset.to_string(), prop.to_string()))
            .is_some_and(|entries| entries.inherit_marker)
    }
}

#[cfg(test)]
mod tests;
