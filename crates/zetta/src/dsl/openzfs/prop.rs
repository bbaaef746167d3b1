//! Property values as a DSL props ZAP stores them, and how a property's effective value and
//! its SOURCE follow from the dir chain (OpenZFS `module/zfs/dsl_prop.c`:
//! `dsl_prop_get_ds`, `dsl_prop_get_dd`, `dsl_prop_set_sync`).
//!
//! Each DSL dir's `props_zapobj` (and a snapshot's `ds_props_obj`) is a ZAP of entries:
//!
//! ```text
//! "<name>"          the local value: a string as 1-byte integers with its NUL,
//!                   a number as one 8-byte integer
//! "<name>$recvd"    the value `zfs receive` set (same encodings)
//! "<name>$inherit"  one u64 (0): `zfs inherit` was run while a received value exists; it
//!                   masks "<name>$recvd" of this dir (the value comes from above)
//! "<name>$iuv"      one u64: an index value set by a receive with `-o` over a value the
//!                   sender inherits; counts only if it is a valid index of the property
//! "$hasrecvd"       one u64 (0): this dataset's properties were received
//! ```
//!
//! Resolution, per `dsl_prop_get_dd`: start at the dataset's own dir (a snapshot first
//! looks in its own props ZAP for a local or received value). In each dir, in order: a valid
//! `$iuv` value, then the plain (local) entry, then, unless a `$inherit` entry is present,
//! the `$recvd` entry; the first found wins. If none, go to the parent dir, but only for an
//! inheritable property. Nothing found: the property's default. The SOURCE column of
//! `zfs get` follows from where the value was found (the setpoint): in the dataset's own dir
//! it is `local` (or `received` for a `$recvd` entry); in an ancestor it is `inherited from
//! <ancestor>` (even for a received value there); a snapshot's own entry is `local` or
//! `received`; nothing is `default`.

use super::ZapValue;
use std::collections::BTreeMap;
use std::fmt;

pub const INHERIT_SUFFIX: &str = "$inherit";
pub const RECEIVED_SUFFIX: &str = "$recvd";
pub const IUV_SUFFIX: &str = "$iuv";
/// The entry marking a dataset whose properties were received.
pub const HAS_RECEIVED: &str = "$hasrecvd";

/// A property value as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropValue {
    Number(u64),
    String(String),
}

impl fmt::Display for PropValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropValue::Number(n) => write!(f, "{n}"),
            PropValue::String(s) => f.write_str(s),
        }
    }
}

/// A props ZAP entry that is neither a string nor a single number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropDecodeError {
    /// A byte entry without its terminating NUL, or with a NUL inside, or not UTF-8.
    BadString { name: String },
    /// An integer entry that is not exactly one integer.
    BadNumber { name: String, count: usize },
}

impl fmt::Display for PropDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropDecodeError::BadString { name } => {
                write!(f, "property {name:?}: not a NUL-terminated string")
            }
            PropDecodeError::BadNumber { name, count } => {
                write!(
                    f,
                    "property {name:?}: {count} integers where one is expected"
                )
            }
        }
    }
}

impl std::error::Error for PropDecodeError {}

/// Decodes the value of props ZAP entry `name`.
pub fn decode_value(name: &str, value: &ZapValue) -> Result<PropValue, PropDecodeError> {
    match value {
        ZapValue::Ints(v) if v.len() == 1 => Ok(PropValue::Number(v[0])),
        ZapValue::Ints(v) => Err(PropDecodeError::BadNumber {
            name: name.to_string(),
            count: v.len(),
        }),
        ZapValue::Bytes(b) => {
            let bad = || PropDecodeError::BadString {
                name: name.to_string(),
            };
            let body = b.strip_suffix(&[0]).ok_or_else(bad)?;
            if body.contains(&0) {
                return Err(bad());
            }
            String::from_utf8(body.to_vec())
                .map(PropValue::String)
                .map_err(|_| bad())
        }
    }
}

/// What kind of entry a props ZAP name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind<'a> {
    Local(&'a str),
    Received(&'a str),
    InheritMask(&'a str),
    InheritUnlessValue(&'a str),
    HasReceived,
}

/// Classifies a props ZAP entry name.
pub fn entry_kind(name: &str) -> EntryKind<'_> {
    if name == HAS_RECEIVED {
        EntryKind::HasReceived
    } else if let Some(p) = name.strip_suffix(RECEIVED_SUFFIX) {
        EntryKind::Received(p)
    } else if let Some(p) = name.strip_suffix(INHERIT_SUFFIX) {
        EntryKind::InheritMask(p)
    } else if let Some(p) = name.strip_suffix(IUV_SUFFIX) {
        EntryKind::InheritUnlessValue(p)
    } else {
        EntryKind::Local(name)
    }
}

/// One props ZAP's decoded entries.
pub type PropsZap = BTreeMap<String, ZapValue>;

/// One DSL dir on the chain from a dataset to the pool's root: its full name and its props.
#[derive(Clone, Copy, Debug)]
pub struct PropDir<'a> {
    pub name: &'a str,
    pub props: &'a PropsZap,
}

/// What the resolver must know about the property.
#[derive(Clone, Copy, Debug)]
pub struct PropRule<'a> {
    /// Whether children inherit it (user properties always do).
    pub inheritable: bool,
    /// For an index property, its valid values (a `$iuv` entry counts only if valid);
    /// `None` for the others, whose `$iuv` entries OpenZFS ignores.
    pub index_values: Option<&'a [u64]>,
}

/// Where a property's value came from: the SOURCE column of `zfs get`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropSource {
    Local,
    Received,
    /// Inherited from the named dataset.
    Inherited(String),
    Default,
}

impl fmt::Display for PropSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropSource::Local => f.write_str("local"),
            PropSource::Received => f.write_str("received"),
            PropSource::Inherited(from) => write!(f, "inherited from {from}"),
            PropSource::Default => f.write_str("default"),
        }
    }
}

/// A resolved property: the value (`None` when the default applies) and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub value: Option<PropValue>,
    pub source: PropSource,
}

/// Resolves property `name` for a dataset.
///
/// `chain` is the dataset's own dir first, then each parent up to the root dir. For a
/// snapshot, `snapshot_props` is its own props ZAP (`ds_props_obj`, empty map if 0): it is
/// read first, and then every dir, even the snapshot's own, counts as inherited (OpenZFS
/// passes `snapshot = B_TRUE` to `dsl_prop_get_dd`). A malformed entry is an error, as a
/// failed ZAP lookup is in OpenZFS.
pub fn resolve(
    name: &str,
    rule: PropRule<'_>,
    chain: &[PropDir<'_>],
    snapshot_props: Option<&PropsZap>,
) -> Result<Resolved, PropDecodeError> {
    let received = format!("{name}{RECEIVED_SUFFIX}");
    let inherit = format!("{name}{INHERIT_SUFFIX}");
    let iuv = format!("{name}{IUV_SUFFIX}");
    let found = |value: &ZapValue, key: &str, source: PropSource| {
        decode_value(key, value).map(|v| Resolved {
            value: Some(v),
            source,
        })
    };
    if let Some(props) = snapshot_props {
        if let Some(v) = props.get(name) {
            return found(v, name, PropSource::Local);
        }
        let masked = rule.inheritable && props.contains_key(&inherit);
        if !masked {
            if let Some(v) = props.get(&received) {
                return found(v, &received, PropSource::Received);
            }
        }
    }
    for (depth, dir) in chain.iter().enumerate() {
        let inheriting = depth > 0 || snapshot_props.is_some();
        if inheriting && !rule.inheritable {
            break;
        }
        let here = |own: PropSource| {
            if inheriting {
                PropSource::Inherited(dir.name.to_string())
            } else {
                own
            }
        };
        if let Some(valid) = rule.index_values {
            if let Some(v) = dir.props.get(&iuv) {
                if let Some(n) = v.as_u64().filter(|n| valid.contains(n)) {
                    return Ok(Resolved {
                        value: Some(PropValue::Number(n)),
                        source: here(PropSource::Local),
                    });
                }
            }
        }
        if let Some(v) = dir.props.get(name) {
            return found(v, name, here(PropSource::Local));
        }
        if !dir.props.contains_key(&inherit) {
            if let Some(v) = dir.props.get(&received) {
                return found(v, &received, here(PropSource::Received));
            }
        }
    }
    Ok(Resolved {
        value: None,
        source: PropSource::Default,
    })
}
