//! The numbers OpenZFS stores for index properties, and the names `zfs get` prints for them
//! (OpenZFS `module/zcommon/zfs_prop.c` tables over the values of `include/sys/zio.h`,
//! `zio_compress.h`, `fs/zfs.h`, `zfs_ioctl.h`, `zfs_acl.h`, `u8_textprep.h`).
//!
//! A props ZAP holds an index property as one u64; `zfs get` prints the *first* name of its
//! table with that value (`gzip` for gzip-6, `restricted` for the old `secure`, `sa` for a
//! 2.3 `xattr=on`). Compression carries a level above its low 7 bits
//! (`ZIO_COMPRESS_RAW(algorithm, level)`): zstd levels 1..19 and the fast levels are
//! synthetic names over `zstd`.

/// `ZIO_CHECKSUM_VERIFY`: the dedup "verify" bit.
const VERIFY: u64 = 1 << 8;
/// `SPA_COMPRESSBITS`.
const COMPRESS_BITS: u32 = 7;
/// `ZIO_COMPRESS_ZSTD`.
const ZSTD: u64 = 16;
/// `ZIO_ZSTD_LEVEL_FAST_1`, the first fast level (`ZIO_ZSTD_LEVEL_FAST` + 1).
const ZSTD_FAST_1: u64 = 103;
/// The fast levels' names in enum order from `ZIO_ZSTD_LEVEL_FAST_1`.
const ZSTD_FAST: [u32; 21] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 500, 1000,
];

const BOOLEAN: &[(u64, &str)] = &[(0, "off"), (1, "on")];
const CHECKSUM: &[(u64, &str)] = &[
    (1, "on"),
    (2, "off"),
    (6, "fletcher2"),
    (7, "fletcher4"),
    (8, "sha256"),
    (10, "noparity"),
    (11, "sha512"),
    (12, "skein"),
    (13, "edonr"),
    (14, "blake3"),
];
const DEDUP: &[(u64, &str)] = &[
    (1, "on"),
    (2, "off"),
    (1 | VERIFY, "verify"),
    (8, "sha256"),
    (8 | VERIFY, "sha256,verify"),
    (11, "sha512"),
    (11 | VERIFY, "sha512,verify"),
    (12, "skein"),
    (12 | VERIFY, "skein,verify"),
    (13 | VERIFY, "edonr,verify"),
    (14, "blake3"),
    (14 | VERIFY, "blake3,verify"),
];
const COMPRESS: &[(u64, &str)] = &[
    (1, "on"),
    (2, "off"),
    (3, "lzjb"),
    (10, "gzip"),
    (5, "gzip-1"),
    (6, "gzip-2"),
    (7, "gzip-3"),
    (8, "gzip-4"),
    (9, "gzip-5"),
    (11, "gzip-7"),
    (12, "gzip-8"),
    (13, "gzip-9"),
    (14, "zle"),
    (15, "lz4"),
    (ZSTD, "zstd"),
];
const SNAPDIR: &[(u64, &str)] = &[(0, "hidden"), (1, "visible"), (2, "disabled")];
const SNAPDEV: &[(u64, &str)] = &[(0, "hidden"), (1, "visible")];
const ACLMODE: &[(u64, &str)] = &[
    (0, "discard"),
    (2, "groupmask"),
    (3, "passthrough"),
    (4, "restricted"),
];
const ACLTYPE: &[(u64, &str)] = &[(0, "off"), (1, "posix"), (2, "nfsv4")];
const ACLINHERIT: &[(u64, &str)] = &[
    (0, "discard"),
    (1, "noallow"),
    (4, "restricted"),
    (3, "passthrough"),
    (5, "passthrough-x"),
];
const CASE: &[(u64, &str)] = &[(0, "sensitive"), (1, "insensitive"), (2, "mixed")];
const COPIES: &[(u64, &str)] = &[(1, "1"), (2, "2"), (3, "3")];
/// `U8_TEXTPREP_NFD` = canonical decomposition (0x10), NFC adds canonical composition (0x40),
/// NFKD is compatibility decomposition (0x20), NFKC adds composition.
const NORMALIZE: &[(u64, &str)] = &[
    (0, "none"),
    (0x10, "formD"),
    (0x60, "formKC"),
    (0x50, "formC"),
    (0x20, "formKD"),
];
const VERSION: &[(u64, &str)] = &[(1, "1"), (2, "2"), (3, "3"), (4, "4"), (5, "5")];
const LOGBIAS: &[(u64, &str)] = &[(0, "latency"), (1, "throughput")];
const CANMOUNT: &[(u64, &str)] = &[(0, "off"), (1, "on"), (2, "noauto")];
const CACHE: &[(u64, &str)] = &[(0, "none"), (1, "metadata"), (2, "all")];
const SYNC: &[(u64, &str)] = &[(0, "standard"), (1, "always"), (2, "disabled")];
const XATTR: &[(u64, &str)] = &[(0, "off"), (2, "sa"), (1, "dir")];
const DNSIZE: &[(u64, &str)] = &[
    (0, "legacy"),
    (1, "auto"),
    (1024, "1k"),
    (2048, "2k"),
    (4096, "4k"),
    (8192, "8k"),
    (16384, "16k"),
];
const REDUNDANT_METADATA: &[(u64, &str)] = &[(0, "all"), (1, "most"), (2, "some"), (3, "none")];
const VOLMODE: &[(u64, &str)] = &[(0, "default"), (1, "full"), (2, "dev"), (3, "none")];
const DIRECT: &[(u64, &str)] = &[(0, "disabled"), (1, "standard"), (2, "always")];
const CRYPTO: &[(u64, &str)] = &[
    (1, "on"),
    (2, "off"),
    (3, "aes-128-ccm"),
    (4, "aes-192-ccm"),
    (5, "aes-256-ccm"),
    (6, "aes-128-gcm"),
    (7, "aes-192-gcm"),
    (8, "aes-256-gcm"),
];
const KEYFORMAT: &[(u64, &str)] = &[(0, "none"), (1, "raw"), (2, "hex"), (3, "passphrase")];

/// The value table of an index property, by its name (`None`: not an index property).
fn table(prop: &str) -> Option<&'static [(u64, &'static str)]> {
    Some(match prop {
        "atime" | "devices" | "exec" | "setuid" | "readonly" | "zoned" | "utf8only" | "vscan"
        | "nbmand" | "relatime" | "overlay" | "longname" | "volthreading" => BOOLEAN,
        "checksum" => CHECKSUM,
        "dedup" => DEDUP,
        "compression" => COMPRESS,
        "snapdir" => SNAPDIR,
        "snapdev" => SNAPDEV,
        "aclmode" => ACLMODE,
        "acltype" => ACLTYPE,
        "aclinherit" => ACLINHERIT,
        "casesensitivity" => CASE,
        "copies" => COPIES,
        "normalization" => NORMALIZE,
        "version" => VERSION,
        "logbias" => LOGBIAS,
        "canmount" => CANMOUNT,
        "primarycache" | "secondarycache" | "prefetch" => CACHE,
        "sync" => SYNC,
        "xattr" => XATTR,
        "dnodesize" => DNSIZE,
        "redundant_metadata" => REDUNDANT_METADATA,
        "volmode" => VOLMODE,
        "direct" => DIRECT,
        "encryption" => CRYPTO,
        "keyformat" => KEYFORMAT,
        _ => return None,
    })
}

/// Whether `prop` is an index property (its stored numbers are names).
pub fn is_index(prop: &str) -> bool {
    table(prop).is_some()
}

/// The name `zfs get` prints for value `value` of index property `prop`; `None` for a
/// value its table lacks (or a property that is not an index).
pub fn name_of(prop: &str, value: u64) -> Option<String> {
    if prop == "compression" {
        return compression_name(value);
    }
    table(prop)?
        .iter()
        .find(|(v, _)| *v == value)
        .map(|(_, name)| name.to_string())
}

/// The number OpenZFS stores for name `name` of index property `prop` (the inverse of
/// `name_of`; every alias of a value maps to it, `gzip-6` and `gzip` alike); `None` for a
/// word the table lacks or a property that is not an index. Zetta's props writer
/// (`dsl::prop`) stores index properties through it.
pub fn number_of(prop: &str, name: &str) -> Option<u64> {
    if prop == "compression" {
        // `zstd-fast` is `zstd-fast-1` (`ZIO_ZSTD_LEVEL_FAST_DEFAULT`).
        if name == "zstd-fast" {
            return number_of(prop, "zstd-fast-1");
        }
        if let Some(level) = name.strip_prefix("zstd-fast-") {
            let level: u32 = level.parse().ok()?;
            let at = ZSTD_FAST.iter().position(|n| *n == level)? as u64;
            return Some(ZSTD | ((ZSTD_FAST_1 + at) << COMPRESS_BITS));
        }
        if let Some(level) = name.strip_prefix("zstd-") {
            let level: u64 = level.parse().ok()?;
            return (1..=19)
                .contains(&level)
                .then_some(ZSTD | (level << COMPRESS_BITS));
        }
        // `gzip-6` is `gzip` (the table keeps only the first name of each value).
        if name == "gzip-6" {
            return number_of(prop, "gzip");
        }
    }
    table(prop)?
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(v, _)| *v)
}

/// A compression value with its level: `zstd-N`, `zstd-fast-N`, or the plain names.
fn compression_name(value: u64) -> Option<String> {
    let algorithm = value & ((1 << COMPRESS_BITS) - 1);
    let level = value >> COMPRESS_BITS;
    if level == 0 {
        return COMPRESS
            .iter()
            .find(|(v, _)| *v == value)
            .map(|(_, n)| n.to_string());
    }
    if algorithm != ZSTD {
        return None;
    }
    match level {
        1..=19 => Some(format!("zstd-{level}")),
        _ if level >= ZSTD_FAST_1 => ZSTD_FAST
            .get((level - ZSTD_FAST_1) as usize)
            .map(|n| format!("zstd-fast-{n}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_first_of_each_value() {
        assert_eq!(name_of("compression", 10).as_deref(), Some("gzip"));
        assert_eq!(name_of("compression", 13).as_deref(), Some("gzip-9"));
        assert_eq!(name_of("compression", 3).as_deref(), Some("lzjb"));
        assert_eq!(name_of("compression", 16).as_deref(), Some("zstd"));
        assert_eq!(
            name_of("compression", 16 | (19 << 7)).as_deref(),
            Some("zstd-19")
        );
        assert_eq!(
            name_of("compression", 16 | (103 << 7)).as_deref(),
            Some("zstd-fast-1")
        );
        assert_eq!(
            name_of("compression", 16 | (123 << 7)).as_deref(),
            Some("zstd-fast-1000")
        );
        assert_eq!(name_of("compression", 16 | (124 << 7)), None);
        assert_eq!(name_of("compression", 15 | (3 << 7)), None);
        assert_eq!(name_of("xattr", 1).as_deref(), Some("dir"));
        assert_eq!(name_of("aclinherit", 4).as_deref(), Some("restricted"));
        assert_eq!(
            name_of("dedup", 8 | VERIFY).as_deref(),
            Some("sha256,verify")
        );
        assert_eq!(name_of("atime", 2), None);
        assert_eq!(name_of("quota", 0), None);
        assert!(is_index("canmount") && !is_index("recordsize"));
    }

    // Why: the engine writes index properties as OpenZFS's numbers; every name must map to
    // a number whose name reads back as the same value.
    #[test]
    fn number_of_inverts_name_of() {
        assert_eq!(number_of("compression", "lz4"), Some(15));
        assert_eq!(
            number_of("compression", "gzip-6"),
            number_of("compression", "gzip")
        );
        assert_eq!(number_of("compression", "zstd-19"), Some(16 | (19 << 7)));
        assert_eq!(
            number_of("compression", "zstd-fast-1000"),
            Some(16 | (123 << 7))
        );
        assert_eq!(number_of("compression", "zstd-20"), None);
        // Zetta stored `zstd-fast` as a string, which OpenZFS's zap_lookup of one integer
        // refuses (EOVERFLOW: zdb "failed to hold dataset", openzfs_zdb_matrix).
        assert_eq!(
            number_of("compression", "zstd-fast"),
            number_of("compression", "zstd-fast-1")
        );
        assert_eq!(number_of("checksum", "sha256"), Some(8));
        assert_eq!(number_of("atime", "off"), Some(0));
        assert_eq!(number_of("xattr", "sa"), Some(2));
        assert_eq!(number_of("quota", "1"), None);
        for prop in [
            "compression",
            "checksum",
            "dedup",
            "xattr",
            "copies",
            "sync",
        ] {
            for value in 0..(200u64 << 7) {
                if let Some(name) = name_of(prop, value) {
                    assert_eq!(number_of(prop, &name), Some(value), "{prop}={name}");
                }
            }
        }
    }
}
