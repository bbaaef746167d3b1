//! Property values: parsing what users type, validating a `zfs set`/`zfs create -o`, and
//! printing values the way `zfs get`/`zfs list` do.
//!
//! Counterpart: `zfs_nicestrtonum`, `str2shift`, `zprop_parse_value` (lib/libzfs/libzfs_util.c),
//! `zfs_valid_proplist` and `zfs_prop_get` (lib/libzfs/libzfs_dataset.c).
//!
//! Theory. Validation runs in OpenZFS's order so the *first* complaint matches: property name,
//! snapshot restriction, applicability to the type, read-only, then the value's type check
//! (number syntax, `none`/`auto`, index words), then per-property range checks. Messages that
//! OpenZFS builds from the name the user typed (`'recsize' must be power of 2 ...`) use the
//! typed name; index errors use the canonical name. Numbers follow `zfs_nicestrtonum`: a leading
//! digit or `.`, decimal digits, an optional fraction (computed in floating point and truncated),
//! then an optional suffix `B K M G T P E Z` (any case) optionally followed by `B` or `iB`.
//! Last, `refuse_unhonoured` turns away values Zetta would store but not act on (encryption,
//! dedup, ACLs, sharing, …) with libzfs's words for a pool that lacks the feature; the list
//! is README's "What Zetta refuses".

use super::{
    DatasetType, DisplayRule, PropType, ZfsProp, SPA_MAXBLOCKSIZE_BYTES, SPA_MINBLOCKSIZE_BYTES,
};
use crate::user_prop;
use std::fmt;
use zetta_zcommon::{ChecksumKind, Compression, PropertyError};
use zetta_zutil::nicenum::{self, TimeZone};

/// Longest string value plus one (`ZFS_MAXPROPLEN`, = ZAP_MAXVALUELEN).
pub const ZFS_MAXPROPLEN_BYTES: usize = 8192;
/// What `refreservation=auto` parses to; the dataset layer replaces it by the volume's size.
pub const REFRESERVATION_AUTO: u64 = u64::MAX;
/// A mountpoint component must be shorter than this (ZFS_MAX_DATASET_NAME_LEN).
const MOUNTPOINT_COMPONENT_LEN_MAX: usize = 255;
/// `MIN_PBKDF2_ITERATIONS`.
const PBKDF2_ITERATIONS_MIN: u64 = 100_000;
/// Suffix letters of `str2shift`, each 10 bits above the previous.
const SUFFIX_LETTERS: &[u8] = b"BKMGTPEZ";

/// Every `compression=` word OpenZFS accepts, in its table order.
const COMPRESSION_WORDS: &[&str] = &[
    "on",
    "off",
    "lzjb",
    "gzip",
    "gzip-1",
    "gzip-2",
    "gzip-3",
    "gzip-4",
    "gzip-5",
    "gzip-6",
    "gzip-7",
    "gzip-8",
    "gzip-9",
    "zle",
    "lz4",
    "zstd",
    "zstd-fast",
    "zstd-1",
    "zstd-2",
    "zstd-3",
    "zstd-4",
    "zstd-5",
    "zstd-6",
    "zstd-7",
    "zstd-8",
    "zstd-9",
    "zstd-10",
    "zstd-11",
    "zstd-12",
    "zstd-13",
    "zstd-14",
    "zstd-15",
    "zstd-16",
    "zstd-17",
    "zstd-18",
    "zstd-19",
    "zstd-fast-1",
    "zstd-fast-2",
    "zstd-fast-3",
    "zstd-fast-4",
    "zstd-fast-5",
    "zstd-fast-6",
    "zstd-fast-7",
    "zstd-fast-8",
    "zstd-fast-9",
    "zstd-fast-10",
    "zstd-fast-20",
    "zstd-fast-30",
    "zstd-fast-40",
    "zstd-fast-50",
    "zstd-fast-60",
    "zstd-fast-70",
    "zstd-fast-80",
    "zstd-fast-90",
    "zstd-fast-100",
    "zstd-fast-500",
    "zstd-fast-1000",
];

/// A property value as the engine keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropValue {
    /// Bytes, counts, hundredths (ratios), epoch seconds (creation).
    Number(u64),
    /// An index word in canonical spelling (what `zfs get` prints).
    Index(&'static str),
    /// A free string (mountpoint, origin, sharenfs, ...).
    Text(String),
}

impl PropValue {
    /// The form kept in the property store and handed back by `PropSource`: decimal numbers,
    /// canonical words, strings as is. `parse_value` reads it back unchanged.
    pub fn to_stored(&self) -> String {
        match self {
            PropValue::Number(number) => number.to_string(),
            PropValue::Index(word) => (*word).to_string(),
            PropValue::Text(text) => text.clone(),
        }
    }

    /// Reads back a value written by [`PropValue::to_stored`] (no range checks: what was
    /// stored was valid when stored). `None` if the text does not fit the property's type.
    pub fn from_stored(prop: ZfsProp, stored: &str) -> Option<PropValue> {
        match prop.desc().kind {
            PropType::Number => stored.parse().ok().map(PropValue::Number),
            PropType::Index(table) => table
                .iter()
                .find(|(input, _)| *input == stored)
                .map(|(_, canonical)| PropValue::Index(canonical)),
            PropType::Compression => parse_compression(prop, stored).ok().map(PropValue::Index),
            PropType::String => Some(PropValue::Text(stored.to_string())),
        }
    }

    pub fn as_number(&self) -> Option<u64> {
        match self {
            PropValue::Number(number) => Some(*number),
            _ => None,
        }
    }
}

/// Why a property or value was refused; `Display` is OpenZFS's sentence, word for word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropError {
    InvalidProperty(String),
    ReadOnly(String),
    NotForType(String),
    SnapshotNotModifiable,
    BadNumeric(String),
    InvalidSuffix(String),
    NumericTooLarge,
    MustBeOneOf {
        name: &'static str,
        values: &'static str,
    },
    BlockSize(String),
    SpecialSmallBlocks(String),
    QuotaNone,
    AutoOnlyVolumes(String),
    AutoInvalid(String),
    MountpointNotAbsolute(String),
    MountpointComponentTooLong(String),
    ValueTooLong(String),
    VolsizeMultiple {
        name: String,
        block: String,
    },
    VolsizeZero(String),
    InvalidKeylocation,
    Pbkdf2Minimum,
    MlslabelUnsupported,
    UserNameTooLong(String),
    UserValueTooLong,
    /// A real OpenZFS value this implementation does not provide (zcommon's sentence).
    Unsupported(PropertyError),
    /// An encryption property at creation: the pool lacks the encryption feature
    /// (`zfs_crypto_create`'s sentence; Zetta has no native encryption).
    EncryptionNotEnabled,
    /// `zfs set keylocation=…` other than `none`: every dataset is unencrypted.
    KeylocationUnencrypted,
    /// A value Zetta would store but not honour (dedup, POSIX ACLs, sharing, …): refused
    /// with the words libzfs prints when the kernel answers ENOTSUP — at creation
    /// (`zfs_create`) or on a set (`zfs_setprop_error`).
    NotHonoured {
        creating: bool,
    },
}

/// The `EZFS_*` class of an error: the text libzfs prints when no reason is attached, and
/// the exit status class scripts see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropErrorClass {
    /// EZFS_BADPROP: "invalid property value".
    BadProp,
    /// EZFS_PROPREADONLY: "read-only property".
    ReadOnly,
    /// EZFS_PROPTYPE: "property doesn't apply to datasets of this type".
    PropType,
}

impl PropError {
    pub fn class(&self) -> PropErrorClass {
        match self {
            PropError::ReadOnly(_) => PropErrorClass::ReadOnly,
            PropError::NotForType(_) | PropError::SnapshotNotModifiable => PropErrorClass::PropType,
            _ => PropErrorClass::BadProp,
        }
    }
}

impl fmt::Display for PropError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropError::InvalidProperty(name) => write!(formatter, "invalid property '{name}'"),
            PropError::ReadOnly(name) => write!(formatter, "'{name}' is readonly"),
            PropError::NotForType(name) => {
                write!(
                    formatter,
                    "'{name}' does not apply to datasets of this type"
                )
            }
            PropError::SnapshotNotModifiable => {
                write!(formatter, "this property can not be modified for snapshots")
            }
            PropError::BadNumeric(value) => write!(formatter, "bad numeric value '{value}'"),
            PropError::InvalidSuffix(suffix) => {
                write!(formatter, "invalid numeric suffix '{suffix}'")
            }
            PropError::NumericTooLarge => write!(formatter, "numeric value is too large"),
            PropError::MustBeOneOf { name, values } => {
                write!(formatter, "'{name}' must be one of '{values}'")
            }
            PropError::BlockSize(name) => {
                write!(formatter, "'{name}' must be power of 2 from 512B to 16M")
            }
            PropError::SpecialSmallBlocks(name) => write!(
                formatter,
                "invalid '{name}' property: must be between zero and 16M"
            ),
            PropError::QuotaNone => write!(formatter, "use 'none' to disable quota/refquota"),
            PropError::AutoOnlyVolumes(name) => {
                write!(formatter, "'{name}=auto' only allowed on volumes")
            }
            PropError::AutoInvalid(name) => {
                write!(formatter, "'auto' is invalid value for '{name}'")
            }
            PropError::MountpointNotAbsolute(name) => write!(
                formatter,
                "'{name}' must be an absolute path, 'none', or 'legacy'"
            ),
            PropError::MountpointComponentTooLong(name) => {
                write!(formatter, "component of '{name}' is too long")
            }
            PropError::ValueTooLong(name) => write!(formatter, "'{name}' is too long"),
            PropError::VolsizeMultiple { name, block } => write!(
                formatter,
                "'{name}' must be a multiple of volume block size ({block})"
            ),
            PropError::VolsizeZero(name) => write!(formatter, "'{name}' cannot be zero"),
            PropError::InvalidKeylocation => write!(formatter, "invalid keylocation"),
            PropError::Pbkdf2Minimum => write!(
                formatter,
                "minimum pbkdf2 iterations is {PBKDF2_ITERATIONS_MIN}"
            ),
            PropError::MlslabelUnsupported => write!(formatter, "mlslabels are unsupported"),
            PropError::UserNameTooLong(name) => {
                write!(formatter, "property name '{name}' is too long")
            }
            PropError::UserValueTooLong => write!(formatter, "property value too long"),
            PropError::Unsupported(error) => write!(formatter, "{error}"),
            PropError::EncryptionNotEnabled => {
                write!(formatter, "Encryption feature not enabled.")
            }
            PropError::KeylocationUnencrypted => write!(
                formatter,
                "keylocation must be 'none' for unencrypted datasets"
            ),
            PropError::NotHonoured { creating: true } => write!(
                formatter,
                "pool must be upgraded to set this property or value"
            ),
            PropError::NotHonoured { creating: false } => write!(
                formatter,
                "pool and or dataset must be upgraded to set this property or value"
            ),
        }
    }
}

impl std::error::Error for PropError {}

/// `str2shift`: the power-of-two shift a suffix stands for.
fn suffix_shift(suffix: &str) -> Result<u32, PropError> {
    let bytes = suffix.as_bytes();
    let Some(&first) = bytes.first() else {
        return Ok(0);
    };
    let invalid = || PropError::InvalidSuffix(suffix.to_string());
    let position = SUFFIX_LETTERS
        .iter()
        .position(|&letter| letter == first.to_ascii_uppercase())
        .ok_or_else(invalid)?;
    let rest: Vec<u8> = bytes[1..].iter().map(u8::to_ascii_uppercase).collect();
    let accepted =
        rest.is_empty() || (!first.eq_ignore_ascii_case(&b'B') && (rest == b"B" || rest == b"IB"));
    if accepted {
        Ok(10 * position as u32)
    } else {
        Err(invalid())
    }
}

/// How many leading bytes `strtod` would consume from text that starts with digits then `.`.
fn decimal_prefix_len(bytes: &[u8]) -> usize {
    let mut end = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let integer_digits = end;
    // bytes[end] is '.' by the caller's contract.
    end += 1;
    let fraction_digits = bytes[end..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if integer_digits == 0 && fraction_digits == 0 {
        return 0; // "." alone: strtod converts nothing.
    }
    end += fraction_digits;
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exponent_end = end + 1;
        if matches!(bytes.get(exponent_end), Some(b'+' | b'-')) {
            exponent_end += 1;
        }
        let exponent_digits = bytes[exponent_end.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if exponent_digits > 0 {
            end = exponent_end + exponent_digits;
        }
    }
    end
}

/// `zfs_nicestrtonum`: "128K" -> 131072, "1.5G", "10GiB", "512b".
pub fn nicestrtonum(text: &str) -> Result<u64, PropError> {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_digit() || *first == b'.' => {}
        _ => return Err(PropError::BadNumeric(text.to_string())),
    }
    let digit_count = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let integer = if digit_count == 0 {
        0
    } else {
        text[..digit_count]
            .parse::<u64>()
            .map_err(|_| PropError::NumericTooLarge)?
    };
    if bytes.get(digit_count) == Some(&b'.') {
        let consumed = decimal_prefix_len(bytes);
        let shift = suffix_shift(&text[consumed..])?;
        let mantissa: f64 = if consumed == 0 {
            0.0
        } else {
            text[..consumed].parse().unwrap_or(0.0)
        };
        let scaled = mantissa * 2f64.powi(shift as i32);
        // u64::MAX rounds up to 2^64 as a double, hence >=.
        if !scaled.is_finite() || scaled >= u64::MAX as f64 {
            return Err(PropError::NumericTooLarge);
        }
        return Ok(scaled as u64);
    }
    let shift = suffix_shift(&text[digit_count..])?;
    if shift >= 64 || (integer << shift) >> shift != integer {
        return Err(PropError::NumericTooLarge);
    }
    Ok(integer << shift)
}

/// Checks an index word against its table; returns the canonical spelling.
fn parse_index(
    prop: ZfsProp,
    table: super::IndexTable,
    word: &str,
) -> Result<&'static str, PropError> {
    table
        .iter()
        .find(|(input, _)| *input == word)
        .map(|(_, canonical)| *canonical)
        .ok_or(PropError::MustBeOneOf {
            name: prop.name(),
            values: prop.desc().values,
        })
}

/// `compression=`: OpenZFS's word list, checked again by zcommon for what Zetta implements.
fn parse_compression(prop: ZfsProp, word: &str) -> Result<&'static str, PropError> {
    let Some(&canonical) = COMPRESSION_WORDS
        .iter()
        .find(|candidate| **candidate == word)
    else {
        return Err(PropError::MustBeOneOf {
            name: prop.name(),
            values: prop.desc().values,
        });
    };
    Compression::parse_property(word).map_err(PropError::Unsupported)?;
    // The first table name with the same internal value is what zfs get prints.
    Ok(match canonical {
        "gzip-6" => "gzip",
        "zstd-fast-1" => "zstd-fast",
        other => other,
    })
}

/// Parses `input` for `prop` as `zfs set prop=input` would, naming the property in messages
/// by its canonical name. Type-independent: see [`validate_set`] for the whole `zfs set`.
pub fn parse_value(prop: ZfsProp, input: &str) -> Result<PropValue, PropError> {
    parse_value_named(prop, prop.name(), input)
}

/// [`parse_value`] with the name the user typed (an alias such as `recsize`), which is what
/// several OpenZFS messages quote.
pub(crate) fn parse_value_named(
    prop: ZfsProp,
    typed_name: &str,
    input: &str,
) -> Result<PropValue, PropError> {
    let value = match prop.desc().kind {
        PropType::String => {
            if input.len() >= ZFS_MAXPROPLEN_BYTES {
                return Err(PropError::ValueTooLong(typed_name.to_string()));
            }
            PropValue::Text(input.to_string())
        }
        PropType::Number => PropValue::Number(parse_number(prop, input)?),
        PropType::Index(table) => PropValue::Index(parse_index(prop, table, input)?),
        PropType::Compression => PropValue::Index(parse_compression(prop, input)?),
    };
    check_value(prop, typed_name, &value)?;
    Ok(value)
}

/// The number half of `zprop_parse_value`: `none`, `auto`, sizes.
fn parse_number(prop: ZfsProp, input: &str) -> Result<u64, PropError> {
    let (mut number, is_none, is_auto) = match input {
        "none" => (0, true, false),
        "auto" => (0, false, true),
        _ => (nicestrtonum(input)?, false, false),
    };
    if number == 0 && !is_none && matches!(prop, ZfsProp::Quota | ZfsProp::Refquota) {
        return Err(PropError::QuotaNone);
    }
    if is_none && matches!(prop, ZfsProp::FilesystemLimit | ZfsProp::SnapshotLimit) {
        number = u64::MAX;
    }
    if is_auto {
        if prop != ZfsProp::Refreservation {
            return Err(PropError::AutoInvalid(prop.name().to_string()));
        }
        number = REFRESERVATION_AUTO;
    }
    Ok(number)
}

/// Per-property checks of `zfs_valid_proplist` that need only the value.
fn check_value(prop: ZfsProp, typed_name: &str, value: &PropValue) -> Result<(), PropError> {
    let block_size_bad = |size: u64| {
        !(SPA_MINBLOCKSIZE_BYTES..=SPA_MAXBLOCKSIZE_BYTES).contains(&size)
            || !size.is_power_of_two()
    };
    match (prop, value) {
        (ZfsProp::Recordsize | ZfsProp::Volblocksize, PropValue::Number(size))
            if block_size_bad(*size) =>
        {
            Err(PropError::BlockSize(typed_name.to_string()))
        }
        (ZfsProp::SpecialSmallBlocks, PropValue::Number(size))
            if *size > SPA_MAXBLOCKSIZE_BYTES =>
        {
            Err(PropError::SpecialSmallBlocks(typed_name.to_string()))
        }
        (ZfsProp::Mountpoint, PropValue::Text(path)) if path != "none" && path != "legacy" => {
            check_mountpoint(typed_name, path)
        }
        (ZfsProp::Keylocation, PropValue::Text(location)) if !keylocation_valid(location) => {
            Err(PropError::InvalidKeylocation)
        }
        (ZfsProp::Pbkdf2iters, PropValue::Number(iterations))
            if *iterations < PBKDF2_ITERATIONS_MIN =>
        {
            Err(PropError::Pbkdf2Minimum)
        }
        (ZfsProp::Mlslabel, _) => Err(PropError::MlslabelUnsupported),
        (ZfsProp::Checksum, PropValue::Index(word)) => ChecksumKind::parse_property(word)
            .map(|_| ())
            .map_err(PropError::Unsupported),
        _ => Ok(()),
    }
}

/// `mountpoint_namecheck`: absolute, every component shorter than 256 bytes.
fn check_mountpoint(typed_name: &str, path: &str) -> Result<(), PropError> {
    let Some(relative) = path.strip_prefix('/') else {
        return Err(PropError::MountpointNotAbsolute(typed_name.to_string()));
    };
    if relative
        .split('/')
        .any(|component| component.len() > MOUNTPOINT_COMPONENT_LEN_MAX)
    {
        return Err(PropError::MountpointComponentTooLong(
            typed_name.to_string(),
        ));
    }
    Ok(())
}

/// `zfs_prop_valid_keylocation(value, B_FALSE)`.
fn keylocation_valid(location: &str) -> bool {
    location == "none"
        || location == "prompt"
        || (location.len() > 8 && location.starts_with("file:///"))
        || (location.len() > 8 && location.starts_with("https://"))
        || (location.len() > 7 && location.starts_with("http://"))
}

/// What a `zfs set`/`zfs create -o` is aimed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetTarget {
    pub object: DatasetType,
    /// True for `zfs create -o` (create-only properties allowed).
    pub creating: bool,
    /// An existing volume's block size: `volsize` must be a non-zero multiple of it.
    pub volblocksize_bytes: Option<u64>,
}

/// A validated assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetValue {
    Native(ZfsProp, PropValue),
    User { name: String, value: String },
}

/// Validates `typed_name=input` for `target` exactly as `zfs_valid_proplist` does.
pub fn validate_set(
    typed_name: &str,
    input: &str,
    target: SetTarget,
) -> Result<SetValue, PropError> {
    let Some(prop) = ZfsProp::from_name(typed_name) else {
        if user_prop::is_user_prop_name(typed_name) {
            user_prop::check_user_prop(typed_name, input)?;
            return Ok(SetValue::User {
                name: typed_name.to_string(),
                value: input.to_string(),
            });
        }
        if target.object == DatasetType::Snapshot {
            return Err(PropError::SnapshotNotModifiable);
        }
        if typed_name.starts_with("written@") || typed_name.starts_with("written#") {
            return Err(PropError::ReadOnly(typed_name.to_string()));
        }
        return Err(PropError::InvalidProperty(typed_name.to_string()));
    };
    if target.object == DatasetType::Snapshot {
        return Err(PropError::SnapshotNotModifiable);
    }
    if !prop.desc().types.contains(target.object.mask()) {
        return Err(PropError::NotForType(typed_name.to_string()));
    }
    if prop.is_readonly() && !(prop.is_create_only() && target.creating) {
        return Err(PropError::ReadOnly(typed_name.to_string()));
    }
    // A value OpenZFS knows and Zetta does not implement (checksum=skein…): libzfs's
    // ENOTSUP words, as for every value Zetta refuses.
    let value = parse_value_named(prop, typed_name, input).map_err(|e| match e {
        PropError::Unsupported(_) => PropError::NotHonoured {
            creating: target.creating,
        },
        other => other,
    })?;
    if prop == ZfsProp::Refreservation
        && value == PropValue::Number(REFRESERVATION_AUTO)
        && input == "auto"
        && target.object != DatasetType::Volume
    {
        return Err(PropError::AutoOnlyVolumes(typed_name.to_string()));
    }
    if let (ZfsProp::Volsize, Some(block), PropValue::Number(size)) =
        (prop, target.volblocksize_bytes, &value)
    {
        if block != 0 && size % block != 0 {
            return Err(PropError::VolsizeMultiple {
                name: typed_name.to_string(),
                block: nicenum::nicenum_space(block),
            });
        }
        if *size == 0 {
            return Err(PropError::VolsizeZero(typed_name.to_string()));
        }
    }
    refuse_unhonoured(prop, &value, target.creating)?;
    Ok(SetValue::Native(prop, value))
}

/// Whether `prop=value` asks for behaviour Zetta does not have: encryption, dedup, ACLs,
/// sharing, name folding, limits, labels. Such values are refused, never stored and
/// ignored (README "What Zetta refuses"). The defaults (`dedup=off`, `acltype=off`,
/// `logbias=latency`, `primarycache=all`, …) pass.
pub fn refuse_unhonoured(
    prop: ZfsProp,
    value: &PropValue,
    creating: bool,
) -> Result<(), PropError> {
    let word = match value {
        PropValue::Index(word) => *word,
        PropValue::Text(text) => text.as_str(),
        PropValue::Number(_) => "",
    };
    let number = value.as_number().unwrap_or(0);
    // zfs_crypto_create: any encryption parameter at creation needs the feature; later,
    // only keylocation is settable, and must stay `none` on an unencrypted dataset.
    let encryption = match prop {
        ZfsProp::Encryption => word != "off",
        ZfsProp::Keylocation => word != "none",
        ZfsProp::Keyformat | ZfsProp::Pbkdf2iters => true,
        _ => false,
    };
    if encryption {
        return Err(if creating {
            PropError::EncryptionNotEnabled
        } else {
            PropError::KeylocationUnencrypted
        });
    }
    let refused = match prop {
        ZfsProp::Dedup => word != "off",
        ZfsProp::Acltype => word != "off",
        ZfsProp::Sharenfs | ZfsProp::Sharesmb => word != "off",
        ZfsProp::Casesensitivity => word != "sensitive",
        ZfsProp::Normalization => word != "none",
        ZfsProp::Utf8only | ZfsProp::Nbmand | ZfsProp::Vscan | ZfsProp::Zoned => word == "on",
        ZfsProp::Longname => word == "on",
        ZfsProp::FilesystemLimit | ZfsProp::SnapshotLimit => number != u64::MAX,
        ZfsProp::SpecialSmallBlocks => number != 0,
        ZfsProp::Defaultuserquota
        | ZfsProp::Defaultgroupquota
        | ZfsProp::Defaultprojectquota
        | ZfsProp::Defaultuserobjquota
        | ZfsProp::Defaultgroupobjquota
        | ZfsProp::Defaultprojectobjquota => number != 0,
        ZfsProp::Context | ZfsProp::Fscontext | ZfsProp::Defcontext | ZfsProp::Rootcontext => {
            word != "none"
        }
        // Tuning hints Zetta does not act on yet (no per-dataset ARC policy, no L2ARC, no
        // indirect log writes, no large dnodes, no Direct I/O): only their defaults.
        ZfsProp::Logbias => word != "latency",
        ZfsProp::Primarycache | ZfsProp::Secondarycache | ZfsProp::Prefetch => word != "all",
        ZfsProp::Direct => word != "standard",
        ZfsProp::Dnodesize => word != "legacy",
        ZfsProp::RedundantMetadata => word != "all",
        _ => false,
    };
    if refused {
        return Err(PropError::NotHonoured { creating });
    }
    Ok(())
}

/// Formats a value as `zfs get`/`zfs list` print it; `parsable` is `-p`. Dates use local time.
pub fn format_value(prop: ZfsProp, value: &PropValue, parsable: bool) -> String {
    format_value_in(prop, value, parsable, TimeZone::Local)
}

/// [`format_value`] with an explicit time zone for dates (golden tests use UTC).
pub fn format_value_in(prop: ZfsProp, value: &PropValue, parsable: bool, zone: TimeZone) -> String {
    let number = match value {
        PropValue::Number(number) => *number,
        PropValue::Index(word) => return (*word).to_string(),
        PropValue::Text(text) => return text.clone(),
    };
    match prop.desc().display {
        DisplayRule::Plain | DisplayRule::Exact => number.to_string(),
        DisplayRule::Bytes if parsable => number.to_string(),
        DisplayRule::Bytes => nicenum::nicenum_space(number),
        DisplayRule::Nicenum if parsable => number.to_string(),
        DisplayRule::Nicenum => nicenum::nicenum(number),
        DisplayRule::Quota if number == 0 => if parsable { "0" } else { "none" }.to_string(),
        DisplayRule::Quota if parsable => number.to_string(),
        DisplayRule::Quota => nicenum::nicenum_space(number),
        DisplayRule::Limit if number == u64::MAX => "none".to_string(),
        DisplayRule::Limit if parsable => number.to_string(),
        DisplayRule::Limit => nicenum::nicenum(number),
        DisplayRule::Ratio if parsable => nicenum::nice_ratio_parsable(number),
        DisplayRule::Ratio => nicenum::nice_ratio(number),
        DisplayRule::Date | DisplayRule::DateSeconds if parsable => number.to_string(),
        DisplayRule::Date => match i64::try_from(number) {
            Ok(epoch_secs) => nicenum::zfs_creation_time_in(epoch_secs, zone),
            Err(_) => number.to_string(),
        },
        DisplayRule::DateSeconds => match i64::try_from(number) {
            Ok(epoch_secs) => date_with_seconds(epoch_secs, zone),
            Err(_) => number.to_string(),
        },
    }
}

/// strftime `%a %b %e %k:%M:%S %Y`: ctime(3) with the hour space-padded instead of zero-padded.
fn date_with_seconds(epoch_secs: i64, zone: TimeZone) -> String {
    let mut text = nicenum::ctime_in(epoch_secs, zone);
    // ctime is "Www Mmm dd hh:mm:ss yyyy"; the hour's first digit is byte 11.
    if text.as_bytes().get(11) == Some(&b'0') {
        text.replace_range(11..12, " ");
    }
    text
}
