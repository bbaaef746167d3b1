//! The dataset property table: one row per native property, in OpenZFS `zfs_prop_t` order.
//!
//! Counterpart: `zfs_prop_init` in `module/zcommon/zfs_prop.c` (OpenZFS 2.4.4) and the value
//! tables above it. Row order is the enum order of `include/sys/fs/zfs.h`, which is the order
//! `zfs get all` prints; hidden properties other than `name` are left out. Invariants (pinned by
//! tests): `TABLE[p as usize].prop == p` for every [`ZfsProp`]; every index default is the
//! canonical (first) spelling of its value in its own table; column headers are upper case.
//!
//! Index tables map what a user may type to what `zfs get` prints: OpenZFS prints the *first*
//! table name carrying the same numeric value, so `xattr=on` reads back `sa`, `gzip-6` reads back
//! `gzip`, `acltype=posixacl` reads back `posix`.

use super::{
    DefaultValue, DisplayRule, PropAttr, PropDesc, PropType, SourceRule, TypeMask, ZfsProp,
};

/// (what the user may type, what `zfs get` prints back).
pub type IndexTable = &'static [(&'static str, &'static str)];

const BOOLEAN: IndexTable = &[("off", "off"), ("on", "on")];
const YES_NO: IndexTable = &[("yes", "yes"), ("no", "no")];
const CHECKSUM: IndexTable = &[
    ("on", "on"),
    ("off", "off"),
    ("fletcher2", "fletcher2"),
    ("fletcher4", "fletcher4"),
    ("sha256", "sha256"),
    ("noparity", "noparity"),
    ("sha512", "sha512"),
    ("skein", "skein"),
    ("edonr", "edonr"),
    ("blake3", "blake3"),
];
const DEDUP: IndexTable = &[
    ("on", "on"),
    ("off", "off"),
    ("verify", "verify"),
    ("sha256", "sha256"),
    ("sha256,verify", "sha256,verify"),
    ("sha512", "sha512"),
    ("sha512,verify", "sha512,verify"),
    ("skein", "skein"),
    ("skein,verify", "skein,verify"),
    ("edonr,verify", "edonr,verify"),
    ("blake3", "blake3"),
    ("blake3,verify", "blake3,verify"),
];
const CRYPTO: IndexTable = &[
    ("on", "on"),
    ("off", "off"),
    ("aes-128-ccm", "aes-128-ccm"),
    ("aes-192-ccm", "aes-192-ccm"),
    ("aes-256-ccm", "aes-256-ccm"),
    ("aes-128-gcm", "aes-128-gcm"),
    ("aes-192-gcm", "aes-192-gcm"),
    ("aes-256-gcm", "aes-256-gcm"),
];
const KEYFORMAT: IndexTable = &[
    ("none", "none"),
    ("raw", "raw"),
    ("hex", "hex"),
    ("passphrase", "passphrase"),
];
const SNAPDIR: IndexTable = &[
    ("hidden", "hidden"),
    ("visible", "visible"),
    ("disabled", "disabled"),
];
const SNAPDEV: IndexTable = &[("hidden", "hidden"), ("visible", "visible")];
const ACLMODE: IndexTable = &[
    ("discard", "discard"),
    ("groupmask", "groupmask"),
    ("passthrough", "passthrough"),
    ("restricted", "restricted"),
];
const ACLTYPE: IndexTable = &[
    ("off", "off"),
    ("posix", "posix"),
    ("nfsv4", "nfsv4"),
    ("disabled", "off"),
    ("noacl", "off"),
    ("posixacl", "posix"),
];
const ACLINHERIT: IndexTable = &[
    ("discard", "discard"),
    ("noallow", "noallow"),
    ("restricted", "restricted"),
    ("passthrough", "passthrough"),
    ("secure", "restricted"),
    ("passthrough-x", "passthrough-x"),
];
const CASE: IndexTable = &[
    ("sensitive", "sensitive"),
    ("insensitive", "insensitive"),
    ("mixed", "mixed"),
];
const COPIES: IndexTable = &[("1", "1"), ("2", "2"), ("3", "3")];
const NORMALIZE: IndexTable = &[
    ("none", "none"),
    ("formD", "formD"),
    ("formKC", "formKC"),
    ("formC", "formC"),
    ("formKD", "formKD"),
];
const VERSION: IndexTable = &[
    ("1", "1"),
    ("2", "2"),
    ("3", "3"),
    ("4", "4"),
    ("5", "5"),
    ("current", "5"),
];
const KEYSTATUS: IndexTable = &[
    ("none", "none"),
    ("unavailable", "unavailable"),
    ("available", "available"),
];
const LOGBIAS: IndexTable = &[("latency", "latency"), ("throughput", "throughput")];
const CANMOUNT: IndexTable = &[("off", "off"), ("on", "on"), ("noauto", "noauto")];
const CACHE: IndexTable = &[("none", "none"), ("metadata", "metadata"), ("all", "all")];
const SYNC: IndexTable = &[
    ("standard", "standard"),
    ("always", "always"),
    ("disabled", "disabled"),
];
const XATTR: IndexTable = &[("off", "off"), ("sa", "sa"), ("on", "sa"), ("dir", "dir")];
const DNSIZE: IndexTable = &[
    ("legacy", "legacy"),
    ("auto", "auto"),
    ("1k", "1k"),
    ("2k", "2k"),
    ("4k", "4k"),
    ("8k", "8k"),
    ("16k", "16k"),
];
const REDUNDANT_METADATA: IndexTable = &[
    ("all", "all"),
    ("most", "most"),
    ("some", "some"),
    ("none", "none"),
];
const VOLMODE: IndexTable = &[
    ("default", "default"),
    ("full", "full"),
    ("geom", "full"),
    ("dev", "dev"),
    ("none", "none"),
];
const DIRECT: IndexTable = &[
    ("disabled", "disabled"),
    ("standard", "standard"),
    ("always", "always"),
];

/// Compression spellings; the table is generated from zcommon's levels in `value.rs`, this is
/// only the `zfs get` help text. `gzip-6` prints back as `gzip`; everything else as typed.
pub const COMPRESSION_VALUES: &str = "on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | \
zstd-[1-19] | zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]";

const FS: TypeMask = TypeMask::FILESYSTEM;
const VOL: TypeMask = TypeMask::VOLUME;
const SNAP: TypeMask = TypeMask::SNAPSHOT;
const FS_VOL: TypeMask = TypeMask(TypeMask::FILESYSTEM.0 | TypeMask::VOLUME.0);
const FS_SNAP: TypeMask = TypeMask(TypeMask::FILESYSTEM.0 | TypeMask::SNAPSHOT.0);
const SNAP_VOL: TypeMask = TypeMask(TypeMask::SNAPSHOT.0 | TypeMask::VOLUME.0);
const FS_SNAP_VOL: TypeMask = TypeMask::DATASET;
const DS_BM: TypeMask = TypeMask::ALL;

#[allow(clippy::too_many_arguments)]
const fn row(
    prop: ZfsProp,
    name: &'static str,
    kind: PropType,
    attr: PropAttr,
    types: TypeMask,
    default: DefaultValue,
    values: &'static str,
    column: &'static str,
    display: DisplayRule,
) -> PropDesc {
    PropDesc {
        prop,
        name,
        kind,
        attr,
        types,
        default,
        values,
        column,
        align_right: matches!(kind, PropType::Number) && !matches!(display, DisplayRule::Date),
        visible: true,
        source_rule: SourceRule::Normal,
        display,
    }
}

#[allow(clippy::too_many_arguments)]
const fn index(
    prop: ZfsProp,
    name: &'static str,
    attr: PropAttr,
    types: TypeMask,
    default: &'static str,
    table: IndexTable,
    values: &'static str,
    column: &'static str,
) -> PropDesc {
    row(
        prop,
        name,
        PropType::Index(table),
        attr,
        types,
        DefaultValue::Index(default),
        values,
        column,
        DisplayRule::Plain,
    )
}

#[allow(clippy::too_many_arguments)]
const fn number(
    prop: ZfsProp,
    name: &'static str,
    attr: PropAttr,
    types: TypeMask,
    default: u64,
    values: &'static str,
    column: &'static str,
    display: DisplayRule,
) -> PropDesc {
    row(
        prop,
        name,
        PropType::Number,
        attr,
        types,
        DefaultValue::Number(default),
        values,
        column,
        display,
    )
}

const fn string(
    prop: ZfsProp,
    name: &'static str,
    attr: PropAttr,
    types: TypeMask,
    default: Option<&'static str>,
    values: &'static str,
    column: &'static str,
) -> PropDesc {
    let default = match default {
        Some(text) => DefaultValue::Text(text),
        None => DefaultValue::None,
    };
    row(
        prop,
        name,
        PropType::String,
        attr,
        types,
        default,
        values,
        column,
        DisplayRule::Plain,
    )
}

/// Marks a row whose `zfs get` source is always `-` (values read from the ZPL master node,
/// stats such as `volblocksize`, and encryption parameters once set).
const fn dash(mut desc: PropDesc, rule: SourceRule) -> PropDesc {
    desc.source_rule = rule;
    desc
}

/// `name` is hidden in OpenZFS: usable in `-o`/`-s` but never printed by `zfs get all`.
const fn hidden(mut desc: PropDesc) -> PropDesc {
    desc.visible = false;
    desc
}

use DisplayRule::{Bytes, Date, DateSeconds, Exact, Limit, Nicenum, Quota, Ratio};
use PropAttr::{Default as Dflt, Inherit, OneTime, OneTimeDefault, ReadOnly};
use ZfsProp as P;

const SIZE: &str = "<size>";
const SIZE_NONE: &str = "<size> | none";
const ON_OFF: &str = "on | off";
const CACHE_VALUES: &str = "all | none | metadata";
const BLOCK_SIZES: &str = "512 to 16M, power of 2";

/// Every native property, indexed by `ZfsProp as usize`.
#[rustfmt::skip]
pub static TABLE: [PropDesc; ZfsProp::COUNT] = [
    string(P::Type, "type", ReadOnly, DS_BM, None, "filesystem | volume | snapshot | bookmark", "TYPE"),
    number(P::Creation, "creation", ReadOnly, DS_BM, 0, "<date>", "CREATION", Date),
    number(P::Used, "used", ReadOnly, FS_SNAP_VOL, 0, SIZE, "USED", Bytes),
    number(P::Available, "available", ReadOnly, FS_VOL, 0, SIZE, "AVAIL", Bytes),
    number(P::Referenced, "referenced", ReadOnly, DS_BM, 0, SIZE, "REFER", Bytes),
    number(P::CompressRatio, "compressratio", ReadOnly, DS_BM, 0, "<1.00x or higher if compressed>", "RATIO", Ratio),
    index(P::Mounted, "mounted", ReadOnly, FS, "no", YES_NO, "yes | no", "MOUNTED"),
    string(P::Origin, "origin", ReadOnly, FS_VOL, None, "<snapshot>", "ORIGIN"),
    number(P::Quota, "quota", Dflt, FS, 0, SIZE_NONE, "QUOTA", Quota),
    number(P::Reservation, "reservation", Dflt, FS_VOL, 0, SIZE_NONE, "RESERV", Quota),
    number(P::Volsize, "volsize", Dflt, SNAP_VOL, 0, SIZE, "VOLSIZE", Nicenum),
    dash(number(P::Volblocksize, "volblocksize", OneTime, VOL, 16 * 1024, BLOCK_SIZES, "VOLBLOCK", Nicenum), SourceRule::Dash),
    number(P::Recordsize, "recordsize", Inherit, FS, 128 * 1024, BLOCK_SIZES, "RECSIZE", Nicenum),
    string(P::Mountpoint, "mountpoint", Inherit, FS, Some("/"), "<path> | legacy | none", "MOUNTPOINT"),
    string(P::Sharenfs, "sharenfs", Inherit, FS, Some("off"), "on | off | NFS share options", "SHARENFS"),
    index(P::Checksum, "checksum", Inherit, FS_VOL, "on", CHECKSUM, "on | off | fletcher2 | fletcher4 | sha256 | sha512 | skein | edonr | blake3", "CHECKSUM"),
    row(P::Compression, "compression", PropType::Compression, Inherit, FS_VOL, DefaultValue::Index("on"), COMPRESSION_VALUES, "COMPRESS", DisplayRule::Plain),
    index(P::Atime, "atime", Inherit, FS, "on", BOOLEAN, ON_OFF, "ATIME"),
    index(P::Devices, "devices", Inherit, FS_SNAP, "on", BOOLEAN, ON_OFF, "DEVICES"),
    index(P::Exec, "exec", Inherit, FS_SNAP, "on", BOOLEAN, ON_OFF, "EXEC"),
    index(P::Setuid, "setuid", Inherit, FS_SNAP, "on", BOOLEAN, ON_OFF, "SETUID"),
    index(P::Readonly, "readonly", Inherit, FS_VOL, "off", BOOLEAN, ON_OFF, "RDONLY"),
    index(P::Zoned, "zoned", Inherit, FS, "off", BOOLEAN, ON_OFF, "ZONED"),
    index(P::Snapdir, "snapdir", Inherit, FS, "hidden", SNAPDIR, "disabled | hidden | visible", "SNAPDIR"),
    index(P::Aclmode, "aclmode", Inherit, FS, "discard", ACLMODE, "discard | groupmask | passthrough | restricted", "ACLMODE"),
    index(P::Aclinherit, "aclinherit", Inherit, FS, "restricted", ACLINHERIT, "discard | noallow | restricted | passthrough | passthrough-x", "ACLINHERIT"),
    number(P::Createtxg, "createtxg", ReadOnly, DS_BM, 0, "<uint64>", "CREATETXG", Exact),
    hidden(string(P::Name, "name", ReadOnly, DS_BM, None, "", "NAME")),
    index(P::Canmount, "canmount", Dflt, FS, "on", CANMOUNT, "on | off | noauto", "CANMOUNT"),
    index(P::Xattr, "xattr", Inherit, FS_SNAP, "sa", XATTR, "on | off | dir | sa", "XATTR"),
    index(P::Copies, "copies", Inherit, FS_VOL, "1", COPIES, "1 | 2 | 3", "COPIES"),
    dash(index(P::Version, "version", Dflt, FS_SNAP, "5", VERSION, "1 | 2 | 3 | 4 | 5 | current", "VERSION"), SourceRule::Dash),
    dash(index(P::Utf8only, "utf8only", OneTime, FS_SNAP, "off", BOOLEAN, ON_OFF, "UTF8ONLY"), SourceRule::Dash),
    dash(index(P::Normalization, "normalization", OneTime, FS_SNAP, "none", NORMALIZE, "none | formC | formD | formKC | formKD", "NORMALIZATION"), SourceRule::Dash),
    dash(index(P::Casesensitivity, "casesensitivity", OneTime, FS_SNAP, "sensitive", CASE, "sensitive | insensitive | mixed", "CASE"), SourceRule::Dash),
    index(P::Vscan, "vscan", Inherit, FS, "off", BOOLEAN, ON_OFF, "VSCAN"),
    index(P::Nbmand, "nbmand", Inherit, FS_SNAP, "off", BOOLEAN, ON_OFF, "NBMAND"),
    string(P::Sharesmb, "sharesmb", Inherit, FS, Some("off"), "on | off | SMB share options", "SHARESMB"),
    number(P::Refquota, "refquota", Dflt, FS, 0, SIZE_NONE, "REFQUOTA", Quota),
    number(P::Refreservation, "refreservation", Dflt, FS_VOL, 0, SIZE_NONE, "REFRESERV", Quota),
    number(P::Guid, "guid", ReadOnly, DS_BM, 0, "<uint64>", "GUID", Exact),
    index(P::Primarycache, "primarycache", Inherit, FS_SNAP_VOL, "all", CACHE, CACHE_VALUES, "PRIMARYCACHE"),
    index(P::Secondarycache, "secondarycache", Inherit, FS_SNAP_VOL, "all", CACHE, CACHE_VALUES, "SECONDARYCACHE"),
    number(P::Usedbysnapshots, "usedbysnapshots", ReadOnly, FS_VOL, 0, SIZE, "USEDSNAP", Bytes),
    number(P::Usedbydataset, "usedbydataset", ReadOnly, FS_VOL, 0, SIZE, "USEDDS", Bytes),
    number(P::Usedbychildren, "usedbychildren", ReadOnly, FS_VOL, 0, SIZE, "USEDCHILD", Bytes),
    number(P::Usedbyrefreservation, "usedbyrefreservation", ReadOnly, FS_VOL, 0, SIZE, "USEDREFRESERV", Bytes),
    index(P::DeferDestroy, "defer_destroy", ReadOnly, SNAP, "off", BOOLEAN, "yes | no", "DEFER_DESTROY"),
    number(P::Userrefs, "userrefs", ReadOnly, SNAP, 0, "<count>", "USERREFS", Nicenum),
    index(P::Logbias, "logbias", Inherit, FS_VOL, "latency", LOGBIAS, "latency | throughput", "LOGBIAS"),
    number(P::Objsetid, "objsetid", ReadOnly, FS_SNAP_VOL, 0, "<uint64>", "OBJSETID", Exact),
    index(P::Dedup, "dedup", Inherit, FS_VOL, "off", DEDUP, "on | off | verify | sha256[,verify] | sha512[,verify] | skein[,verify] | edonr,verify | blake3[,verify]", "DEDUP"),
    string(P::Mlslabel, "mlslabel", Inherit, FS_SNAP_VOL, Some("none"), "<sensitivity label>", "MLSLABEL"),
    index(P::Sync, "sync", Inherit, FS_VOL, "standard", SYNC, "standard | always | disabled", "SYNC"),
    index(P::Dnodesize, "dnodesize", Inherit, FS, "legacy", DNSIZE, "legacy | auto | 1k | 2k | 4k | 8k | 16k", "DNSIZE"),
    number(P::Refcompressratio, "refcompressratio", ReadOnly, FS_SNAP_VOL, 0, "<1.00x or higher if compressed>", "REFRATIO", Ratio),
    number(P::Written, "written", ReadOnly, FS_SNAP_VOL, 0, SIZE, "WRITTEN", Nicenum),
    string(P::Clones, "clones", ReadOnly, SNAP, None, "<dataset>[,...]", "CLONES"),
    number(P::Logicalused, "logicalused", ReadOnly, FS_VOL, 0, SIZE, "LUSED", Nicenum),
    number(P::Logicalreferenced, "logicalreferenced", ReadOnly, DS_BM, 0, SIZE, "LREFER", Nicenum),
    index(P::Volmode, "volmode", Inherit, FS_VOL, "default", VOLMODE, "default | full | geom | dev | none", "VOLMODE"),
    number(P::FilesystemLimit, "filesystem_limit", Dflt, FS, u64::MAX, "<count> | none", "FSLIMIT", Limit),
    number(P::SnapshotLimit, "snapshot_limit", Dflt, FS_VOL, u64::MAX, "<count> | none", "SSLIMIT", Limit),
    number(P::FilesystemCount, "filesystem_count", ReadOnly, FS, u64::MAX, "<count>", "FSCOUNT", Limit),
    number(P::SnapshotCount, "snapshot_count", ReadOnly, FS_VOL, u64::MAX, "<count>", "SSCOUNT", Limit),
    index(P::Snapdev, "snapdev", Inherit, FS_VOL, "hidden", SNAPDEV, "hidden | visible", "SNAPDEV"),
    index(P::Acltype, "acltype", Inherit, FS_SNAP, "off", ACLTYPE, "off | nfsv4 | posix", "ACLTYPE"),
    string(P::Context, "context", Dflt, FS_SNAP_VOL, Some("none"), "<selinux context>", "CONTEXT"),
    string(P::Fscontext, "fscontext", Dflt, FS_SNAP_VOL, Some("none"), "<selinux fscontext>", "FSCONTEXT"),
    string(P::Defcontext, "defcontext", Dflt, FS_SNAP_VOL, Some("none"), "<selinux defcontext>", "DEFCONTEXT"),
    string(P::Rootcontext, "rootcontext", Dflt, FS_SNAP_VOL, Some("none"), "<selinux rootcontext>", "ROOTCONTEXT"),
    index(P::Relatime, "relatime", Inherit, FS, "on", BOOLEAN, ON_OFF, "RELATIME"),
    index(P::RedundantMetadata, "redundant_metadata", Inherit, FS_VOL, "all", REDUNDANT_METADATA, "all | most | some | none", "REDUND_MD"),
    index(P::Overlay, "overlay", Inherit, FS, "on", BOOLEAN, ON_OFF, "OVERLAY"),
    string(P::ReceiveResumeToken, "receive_resume_token", ReadOnly, FS_VOL, None, "<string token>", "RESUMETOK"),
    dash(index(P::Encryption, "encryption", OneTime, FS_SNAP_VOL, "off", CRYPTO, "on | off | aes-128-ccm | aes-192-ccm | aes-256-ccm | aes-128-gcm | aes-192-gcm | aes-256-gcm", "ENCRYPTION"), SourceRule::DashUnlessDefault),
    string(P::Keylocation, "keylocation", Dflt, FS_VOL, Some("none"), "prompt | <file URI> | <https URL> | <http URL>", "KEYLOCATION"),
    dash(index(P::Keyformat, "keyformat", OneTimeDefault, FS_VOL, "none", KEYFORMAT, "none | raw | hex | passphrase", "KEYFORMAT"), SourceRule::DashUnlessDefault),
    dash(number(P::Pbkdf2iters, "pbkdf2iters", OneTimeDefault, FS_VOL, 0, "<iters>", "PBKDF2ITERS", Exact), SourceRule::DashUnlessDefault),
    string(P::Encryptionroot, "encryptionroot", ReadOnly, FS_SNAP_VOL, None, "<filesystem | volume>", "ENCROOT"),
    index(P::Keystatus, "keystatus", ReadOnly, FS_SNAP_VOL, "none", KEYSTATUS, "none | unavailable | available", "KEYSTATUS"),
    number(P::SpecialSmallBlocks, "special_small_blocks", Inherit, FS_VOL, 0, "0 to 16M", "SPECIAL_SMALL_BLOCKS", Nicenum),
    string(P::RedactSnaps, "redact_snaps", ReadOnly, DS_BM, None, "<snapshot>[,...]", "RSNAPS"),
    number(P::SnapshotsChanged, "snapshots_changed", ReadOnly, FS_VOL, 0, "<date>", "SNAPSHOTS_CHANGED", DateSeconds),
    index(P::Prefetch, "prefetch", Inherit, FS_SNAP_VOL, "all", CACHE, "none | metadata | all", "PREFETCH"),
    index(P::Volthreading, "volthreading", Dflt, VOL, "on", BOOLEAN, ON_OFF, "zvol threading"),
    index(P::Direct, "direct", Inherit, FS, "standard", DIRECT, "disabled | standard | always", "DIRECT"),
    index(P::Longname, "longname", Inherit, FS, "off", BOOLEAN, ON_OFF, "LONGNAME"),
    dash(number(P::Defaultuserquota, "defaultuserquota", Dflt, FS_SNAP, 0, SIZE_NONE, "DEFAULTUSERQUOTA", Nicenum), SourceRule::Dash),
    dash(number(P::Defaultgroupquota, "defaultgroupquota", Dflt, FS_SNAP, 0, SIZE_NONE, "DEFAULTGROUPQUOTA", Nicenum), SourceRule::Dash),
    dash(number(P::Defaultprojectquota, "defaultprojectquota", Dflt, FS_SNAP, 0, SIZE_NONE, "DEFAULTPROJECTQUOTA", Nicenum), SourceRule::Dash),
    dash(number(P::Defaultuserobjquota, "defaultuserobjquota", Dflt, FS_SNAP, 0, SIZE_NONE, "DEFAULTUSEROBJQUOTA", Nicenum), SourceRule::Dash),
    dash(number(P::Defaultgroupobjquota, "defaultgroupobjquota", Dflt, FS_SNAP, 0, SIZE_NONE, "DEFAULTGROUPOBJQUOTA", Nicenum), SourceRule::Dash),
    dash(number(P::Defaultprojectobjquota, "defaultprojectobjquota", Dflt, FS_SNAP, 0, SIZE_NONE, "DEFAULTPROJECTOBJQUOTA", Nicenum), SourceRule::Dash),
];
