//! Native dataset properties: what each one is, which datasets it applies to, how it is typed,
//! validated, stored and printed.
//!
//! Counterpart: `module/zcommon/zfs_prop.c` + `zprop_common.c` (the table and name lookup),
//! `zfs_valid_proplist`/`zfs_prop_get` in `lib/libzfs/libzfs_dataset.c` (set-time validation and
//! display) and `zprop_parse_value`/`zfs_nicestrtonum` in `lib/libzfs/libzfs_util.c`.
//!
//! Theory. A property has a *type* (number, index = a closed set of words, or free string), an
//! *attribute* (inherited, settable-not-inherited, read-only, create-only), and the set of
//! dataset types it applies to. Values live in two forms: the [`PropValue`] the engine keeps
//! (bytes as `u64`, index words in canonical spelling, strings as typed) and the text `zfs get`
//! prints, which depends on `-p`. Parsing accepts exactly what OpenZFS accepts and fails with
//! OpenZFS's own sentence (the "aux" half of `cannot set property for 'X': <reason>`).
//! Invariants: `parse_value(p, &format_value(p, &v, true))` gives back `v` for every settable
//! property; a lookup by name accepts the property name or its lower-cased column header
//! (`avail`, `refer`, `recsize`...), case-sensitively, exactly like `zprop_name_to_prop`.

mod table;
mod value;

pub use table::{IndexTable, COMPRESSION_VALUES, TABLE};
pub use value::{
    format_value, format_value_in, nicestrtonum, parse_value, validate_set, PropError,
    PropErrorClass, PropValue, SetTarget, SetValue, REFRESERVATION_AUTO, ZFS_MAXPROPLEN_BYTES,
};

/// Largest block `recordsize`/`volblocksize` may be (SPA_MAXBLOCKSIZE).
pub const SPA_MAXBLOCKSIZE_BYTES: u64 = 16 * 1024 * 1024;
/// Smallest block (SPA_MINBLOCKSIZE).
pub const SPA_MINBLOCKSIZE_BYTES: u64 = 512;

/// The four kinds of named objects, as a bit set (`zfs_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TypeMask(pub u8);

impl TypeMask {
    pub const NONE: TypeMask = TypeMask(0);
    pub const FILESYSTEM: TypeMask = TypeMask(1);
    pub const SNAPSHOT: TypeMask = TypeMask(2);
    pub const VOLUME: TypeMask = TypeMask(4);
    pub const BOOKMARK: TypeMask = TypeMask(16);
    /// `ZFS_TYPE_DATASET`: filesystems, volumes and snapshots.
    pub const DATASET: TypeMask = TypeMask(1 | 2 | 4);
    /// Everything `zfs list -t all` shows.
    pub const ALL: TypeMask = TypeMask(1 | 2 | 4 | 16);

    pub fn contains(self, other: TypeMask) -> bool {
        other.0 != 0 && self.0 & other.0 == other.0
    }

    pub fn intersects(self, other: TypeMask) -> bool {
        self.0 & other.0 != 0
    }

    pub fn union(self, other: TypeMask) -> TypeMask {
        TypeMask(self.0 | other.0)
    }

    pub fn without(self, other: TypeMask) -> TypeMask {
        TypeMask(self.0 & !other.0)
    }
}

/// One object's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DatasetType {
    Filesystem,
    Volume,
    Snapshot,
    Bookmark,
}

impl DatasetType {
    pub fn mask(self) -> TypeMask {
        match self {
            DatasetType::Filesystem => TypeMask::FILESYSTEM,
            DatasetType::Volume => TypeMask::VOLUME,
            DatasetType::Snapshot => TypeMask::SNAPSHOT,
            DatasetType::Bookmark => TypeMask::BOOKMARK,
        }
    }

    /// The `type` property value.
    pub fn name(self) -> &'static str {
        match self {
            DatasetType::Filesystem => "filesystem",
            DatasetType::Volume => "volume",
            DatasetType::Snapshot => "snapshot",
            DatasetType::Bookmark => "bookmark",
        }
    }
}

/// How a property's value is typed (`zprop_type_t`, with compression split out because its
/// word list is generated from zcommon's levels).
#[derive(Clone, Copy, Debug)]
pub enum PropType {
    Number,
    String,
    Index(IndexTable),
    Compression,
}

/// Who may change a property (`zprop_attr_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropAttr {
    /// Settable, inherited by descendants.
    Inherit,
    /// Settable, not inherited (quota, canmount, ...).
    Default,
    /// Never settable.
    ReadOnly,
    /// Settable only at creation; inherited at creation time (casesensitivity, ...).
    OneTime,
    /// Settable only at creation; not inherited (keyformat, pbkdf2iters).
    OneTimeDefault,
}

/// The built-in default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    /// No default: `zfs get` prints `-` unless the dataset layer supplies a value.
    None,
    Number(u64),
    /// Canonical index word.
    Index(&'static str),
    Text(&'static str),
}

/// How `zfs get`/`zfs list` turn a number into text (the cases of `zfs_prop_get`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisplayRule {
    /// Strings and index words, printed as stored.
    Plain,
    /// `zfs_nicebytes`: `0B`, `512B`, `1.50K`.
    Bytes,
    /// `zfs_nicenum`: `0`, `512`, `128K`.
    Nicenum,
    /// Identifiers printed in full decimal even without `-p` (guid, createtxg).
    Exact,
    /// 0 prints `none` (`0` with `-p`); otherwise bytes.
    Quota,
    /// `u64::MAX` prints `none` (even with `-p`); otherwise nicenum.
    Limit,
    /// Hundredths: 100 prints `1.00x` (`1.00` with `-p`).
    Ratio,
    /// Epoch seconds as `%a %b %e %k:%M %Y` (epoch with `-p`).
    Date,
    /// Epoch seconds as `%a %b %e %k:%M:%S %Y` (snapshots_changed).
    DateSeconds,
}

/// Which SOURCE `zfs get` shows when a value is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceRule {
    /// default / local / received / inherited from.
    Normal,
    /// Always `-` (read from the ZPL or dataset stats, e.g. casesensitivity, volblocksize).
    Dash,
    /// `default` while unset, `-` once set (encryption parameters).
    DashUnlessDefault,
}

/// One row of the property table (`zprop_desc_t`).
#[derive(Clone, Copy, Debug)]
pub struct PropDesc {
    pub prop: ZfsProp,
    pub name: &'static str,
    pub kind: PropType,
    pub attr: PropAttr,
    pub types: TypeMask,
    pub default: DefaultValue,
    /// The "values" help text; also the word list quoted by index errors.
    pub values: &'static str,
    /// `zfs list` column header.
    pub column: &'static str,
    /// Numbers are right-aligned in `zfs list`.
    pub align_right: bool,
    /// Listed by `zfs get all` (false only for `name`).
    pub visible: bool,
    pub source_rule: SourceRule,
    pub display: DisplayRule,
}

macro_rules! zfs_props {
    ($($variant:ident),* $(,)?) => {
        /// Every native property this crate knows, in OpenZFS `zfs_prop_t` order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ZfsProp { $($variant),* }

        impl ZfsProp {
            /// All properties, in table (= `zfs get all`) order.
            pub const ALL: &'static [ZfsProp] = &[$(ZfsProp::$variant),*];
            pub const COUNT: usize = [$(ZfsProp::$variant),*].len();
        }
    };
}

zfs_props!(
    Type,
    Creation,
    Used,
    Available,
    Referenced,
    CompressRatio,
    Mounted,
    Origin,
    Quota,
    Reservation,
    Volsize,
    Volblocksize,
    Recordsize,
    Mountpoint,
    Sharenfs,
    Checksum,
    Compression,
    Atime,
    Devices,
    Exec,
    Setuid,
    Readonly,
    Zoned,
    Snapdir,
    Aclmode,
    Aclinherit,
    Createtxg,
    Name,
    Canmount,
    Xattr,
    Copies,
    Version,
    Utf8only,
    Normalization,
    Casesensitivity,
    Vscan,
    Nbmand,
    Sharesmb,
    Refquota,
    Refreservation,
    Guid,
    Primarycache,
    Secondarycache,
    Usedbysnapshots,
    Usedbydataset,
    Usedbychildren,
    Usedbyrefreservation,
    DeferDestroy,
    Userrefs,
    Logbias,
    Objsetid,
    Dedup,
    Mlslabel,
    Sync,
    Dnodesize,
    Refcompressratio,
    Written,
    Clones,
    Logicalused,
    Logicalreferenced,
    Volmode,
    FilesystemLimit,
    SnapshotLimit,
    FilesystemCount,
    SnapshotCount,
    Snapdev,
    Acltype,
    Context,
    Fscontext,
    Defcontext,
    Rootcontext,
    Relatime,
    RedundantMetadata,
    Overlay,
    ReceiveResumeToken,
    Encryption,
    Keylocation,
    Keyformat,
    Pbkdf2iters,
    Encryptionroot,
    Keystatus,
    SpecialSmallBlocks,
    RedactSnaps,
    SnapshotsChanged,
    Prefetch,
    Volthreading,
    Direct,
    Longname,
    Defaultuserquota,
    Defaultgroupquota,
    Defaultprojectquota,
    Defaultuserobjquota,
    Defaultgroupobjquota,
    Defaultprojectobjquota,
);

impl ZfsProp {
    /// This property's table row.
    pub fn desc(self) -> &'static PropDesc {
        &TABLE[self as usize]
    }

    /// The canonical property name.
    pub fn name(self) -> &'static str {
        self.desc().name
    }

    /// Looks a property up by name or lower-cased column header (`zfs_name_to_prop`):
    /// `available` and `avail`, `compression` and `compress`, `recordsize` and `recsize`.
    pub fn from_name(name: &str) -> Option<ZfsProp> {
        TABLE.iter().map(|desc| desc.prop).find(|prop| {
            let desc = prop.desc();
            desc.name == name
                || (desc.column.len() == name.len()
                    && desc
                        .column
                        .chars()
                        .zip(name.chars())
                        .all(|(column_char, name_char)| {
                            column_char.to_ascii_lowercase() == name_char
                        }))
        })
    }

    /// `zfs_prop_readonly`: read-only and create-only properties cannot be `zfs set`.
    pub fn is_readonly(self) -> bool {
        matches!(
            self.desc().attr,
            PropAttr::ReadOnly | PropAttr::OneTime | PropAttr::OneTimeDefault
        )
    }

    /// `zfs_prop_setonce`: may be given to `zfs create -o` but never `zfs set`.
    pub fn is_create_only(self) -> bool {
        matches!(
            self.desc().attr,
            PropAttr::OneTime | PropAttr::OneTimeDefault
        )
    }

    /// `zfs_prop_inheritable`: descendants take this value unless they set their own.
    pub fn is_inheritable(self) -> bool {
        matches!(self.desc().attr, PropAttr::Inherit | PropAttr::OneTime)
    }

    /// Whether the property appears on an object of type `object`; for a snapshot it must
    /// also apply to the snapshot's head (`volsize` on snapshots of volumes only).
    pub fn applies_to(self, object: DatasetType, head: Option<DatasetType>) -> bool {
        let types = self.desc().types;
        if !types.contains(object.mask()) {
            return false;
        }
        match (object, head) {
            // get_numeric_property's head check (zprop_valid_for_type with headcheck): number
            // and index properties of a snapshot must also apply to its head, unless they name
            // snapshots alone (userrefs, defer_destroy). Strings are not head-checked.
            (DatasetType::Snapshot, Some(head_type)) => {
                matches!(self.desc().kind, PropType::String)
                    || types == TypeMask::SNAPSHOT
                    || types.intersects(head_type.mask())
            }
            _ => true,
        }
    }

    /// Whether `zfs get` would list this property for a dataset (visible and applicable).
    pub fn shown_by_get_all(self, object: DatasetType, head: Option<DatasetType>) -> bool {
        self.desc().visible && self.applies_to(object, head)
    }

    /// The default as a value, if the property has one.
    pub fn default_value(self) -> Option<PropValue> {
        match self.desc().default {
            DefaultValue::None => None,
            DefaultValue::Number(number) => Some(PropValue::Number(number)),
            DefaultValue::Index(word) => Some(PropValue::Index(word)),
            DefaultValue::Text(text) => Some(PropValue::Text(text.to_string())),
        }
    }
}

/// The order `zfs get all` prints native properties in (the `zfs_prop_t` enum order, hidden
/// properties left out); user properties follow, sorted by name by the caller.
pub fn zfs_get_all_order() -> impl Iterator<Item = ZfsProp> {
    ZfsProp::ALL
        .iter()
        .copied()
        .filter(|prop| prop.desc().visible)
}

/// The names [`zfs_get_all_order`] yields, as a constant (a filesystem shows the subset that
/// applies to it, see [`ZfsProp::shown_by_get_all`]); pinned equal by a golden test.
pub const ZFS_GET_ALL_ORDER: &[&str] = &[
    "type",
    "creation",
    "used",
    "available",
    "referenced",
    "compressratio",
    "mounted",
    "origin",
    "quota",
    "reservation",
    "volsize",
    "volblocksize",
    "recordsize",
    "mountpoint",
    "sharenfs",
    "checksum",
    "compression",
    "atime",
    "devices",
    "exec",
    "setuid",
    "readonly",
    "zoned",
    "snapdir",
    "aclmode",
    "aclinherit",
    "createtxg",
    "canmount",
    "xattr",
    "copies",
    "version",
    "utf8only",
    "normalization",
    "casesensitivity",
    "vscan",
    "nbmand",
    "sharesmb",
    "refquota",
    "refreservation",
    "guid",
    "primarycache",
    "secondarycache",
    "usedbysnapshots",
    "usedbydataset",
    "usedbychildren",
    "usedbyrefreservation",
    "defer_destroy",
    "userrefs",
    "logbias",
    "objsetid",
    "dedup",
    "mlslabel",
    "sync",
    "dnodesize",
    "refcompressratio",
    "written",
    "clones",
    "logicalused",
    "logicalreferenced",
    "volmode",
    "filesystem_limit",
    "snapshot_limit",
    "filesystem_count",
    "snapshot_count",
    "snapdev",
    "acltype",
    "context",
    "fscontext",
    "defcontext",
    "rootcontext",
    "relatime",
    "redundant_metadata",
    "overlay",
    "receive_resume_token",
    "encryption",
    "keylocation",
    "keyformat",
    "pbkdf2iters",
    "encryptionroot",
    "keystatus",
    "special_small_blocks",
    "redact_snaps",
    "snapshots_changed",
    "prefetch",
    "volthreading",
    "direct",
    "longname",
    "defaultuserquota",
    "defaultgroupquota",
    "defaultprojectquota",
    "defaultuserobjquota",
    "defaultgroupobjquota",
    "defaultprojectobjquota",
];

#[cfg(test)]
mod tests;
