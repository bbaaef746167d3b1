//! Block compression: the `compression=` property, compressing a logical block into a physical
//! one, and decoding it back, in OpenZFS's ids and framings (`openzfs`).
//!
//! ZFS counterpart: `module/zfs/zio_compress.c` (algorithm table, `zio_compress_data`, the 12.5%
//! rule), `lz4_zfs.c`, `lzjb.c`, `zle.c`, `gzip.c`, `zfs_zstd.c`.
//!
//! A physical block is what `openzfs::compress` writes for the setting's algorithm (lz4: a
//! big-endian length, then the block; zstd: OpenZFS's 8-byte header, then the frame without
//! its magic; lzjb, zle, gzip: the stream alone), zero-padded to the sector. The block
//! pointer's compression field is OpenZFS's id (`2` uncompressed, `3` lzjb, `5..=13`
//! gzip-1..9, `14` zle, `15` lz4, `16` zstd); a zstd block's level is in its header.
//!
//! Invariants: `compress` returns `Some` only if the physical form is strictly smaller than the
//! input; `decompress` fills `dst` exactly or returns an error, for any input bytes, without
//! panicking and without touching memory outside `dst`.

pub mod openzfs;

#[cfg(test)]
mod tests;

use crate::error::{CompressError, PropertyError};
use openzfs::{OpenZfsCompressError, ZioCompress};

/// The block pointer id of a block stored uncompressed (`ZIO_COMPRESS_OFF`).
pub const ALGORITHM_ID_OFF: u8 = ZioCompress::Off as u8;

/// gzip levels accepted by the property, and the one plain `gzip` means.
pub const GZIP_LEVEL_MIN: u8 = 1;
pub const GZIP_LEVEL_MAX: u8 = 9;
pub const GZIP_LEVEL_DEFAULT: u8 = 6;

/// zstd levels accepted by the property, and the one plain `zstd` means.
pub const ZSTD_LEVEL_MIN: i32 = 1;
pub const ZSTD_LEVEL_MAX: i32 = 19;
pub const ZSTD_LEVEL_DEFAULT: i32 = 3;

/// zstd-fast levels accepted by the property (ZFS's list); plain `zstd-fast` means the first.
pub const ZSTD_FAST_LEVELS: [u32; 21] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 500, 1000,
];

/// Name of the dataset property this module parses.
const COMPRESSION_PROPERTY_NAME: &str = "compression";

/// A `compression=` setting: algorithm and level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    Off,
    Lz4,
    Lzjb,
    Zle,
    /// Level 1..=9.
    Gzip(u8),
    /// Level 1..=19.
    Zstd(i32),
    /// Acceleration 1..=10, 20, 30, ..., 100, 500, 1000 (zstd level -N).
    ZstdFast(u32),
}

/// Parses a decimal level written the canonical way (digits only, no sign, no leading zero).
fn parse_level(digits: &str) -> Option<u32> {
    let level: u32 = digits.parse().ok()?;
    (level.to_string() == digits).then_some(level)
}

impl Compression {
    /// Parses a `compression=` property value with ZFS spellings (`on` means lz4).
    pub fn parse_property(value: &str) -> Result<Self, PropertyError> {
        let parsed = match value {
            "on" | "lz4" => Some(Compression::Lz4),
            "off" => Some(Compression::Off),
            "lzjb" => Some(Compression::Lzjb),
            "zle" => Some(Compression::Zle),
            "gzip" => Some(Compression::Gzip(GZIP_LEVEL_DEFAULT)),
            "zstd" => Some(Compression::Zstd(ZSTD_LEVEL_DEFAULT)),
            "zstd-fast" => Some(Compression::ZstdFast(ZSTD_FAST_LEVELS[0])),
            _ => {
                if let Some(digits) = value.strip_prefix("zstd-fast-") {
                    parse_level(digits)
                        .filter(|level| ZSTD_FAST_LEVELS.contains(level))
                        .map(Compression::ZstdFast)
                } else if let Some(digits) = value.strip_prefix("zstd-") {
                    parse_level(digits)
                        .and_then(|level| i32::try_from(level).ok())
                        .filter(|level| (ZSTD_LEVEL_MIN..=ZSTD_LEVEL_MAX).contains(level))
                        .map(Compression::Zstd)
                } else if let Some(digits) = value.strip_prefix("gzip-") {
                    parse_level(digits)
                        .and_then(|level| u8::try_from(level).ok())
                        .filter(|level| (GZIP_LEVEL_MIN..=GZIP_LEVEL_MAX).contains(level))
                        .map(Compression::Gzip)
                } else {
                    None
                }
            }
        };
        parsed.ok_or_else(|| PropertyError::Invalid {
            property: COMPRESSION_PROPERTY_NAME,
            value: value.to_string(),
        })
    }

    /// The canonical property value, as `zfs get` prints it (`gzip` for gzip-6, `zstd` for
    /// zstd-3).
    pub fn property_name(self) -> String {
        match self {
            Compression::Off => "off".to_string(),
            Compression::Lz4 => "lz4".to_string(),
            Compression::Lzjb => "lzjb".to_string(),
            Compression::Zle => "zle".to_string(),
            Compression::Gzip(GZIP_LEVEL_DEFAULT) => "gzip".to_string(),
            Compression::Gzip(level) => format!("gzip-{level}"),
            Compression::Zstd(ZSTD_LEVEL_DEFAULT) => "zstd".to_string(),
            Compression::Zstd(level) => format!("zstd-{level}"),
            Compression::ZstdFast(level) => format!("zstd-fast-{level}"),
        }
    }

    /// The block pointer's compression id (OpenZFS's `enum zio_compress`).
    pub fn algorithm_id(self) -> u8 {
        match self {
            Compression::Off => ZioCompress::Off.id(),
            Compression::Lz4 => ZioCompress::Lz4.id(),
            Compression::Lzjb => ZioCompress::Lzjb.id(),
            Compression::Zle => ZioCompress::Zle.id(),
            Compression::Gzip(level) => {
                ZioCompress::Gzip1.id() + level.clamp(GZIP_LEVEL_MIN, GZIP_LEVEL_MAX) - 1
            }
            Compression::Zstd(_) | Compression::ZstdFast(_) => ZioCompress::Zstd.id(),
        }
    }

    /// OpenZFS's zstd level enum for the header of a zstd block (1..=19, 103..=123 for the
    /// fast levels); 0 for the other algorithms. Out-of-range levels (possible only by
    /// building the enum directly) are clamped to the nearest valid one.
    pub fn zstd_level(self) -> u8 {
        match self {
            Compression::Zstd(level) => level.clamp(ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX) as u8,
            Compression::ZstdFast(acceleration) => {
                let index = ZSTD_FAST_LEVELS
                    .iter()
                    .position(|&level| level >= acceleration)
                    .unwrap_or(ZSTD_FAST_LEVELS.len() - 1);
                openzfs::ZIO_ZSTD_LEVEL_FAST_1 + index as u8
            }
            _ => 0,
        }
    }
}

/// Compresses `src` into its physical form. Returns `None` for `Off`, and when the physical
/// form would not be strictly smaller than `src`.
pub fn compress(compression: Compression, src: &[u8]) -> Option<Vec<u8>> {
    let size_max = src.len().checked_sub(1)?;
    let kind = ZioCompress::from_id(u64::from(compression.algorithm_id()))?;
    openzfs::compress(kind, src, size_max, compression.zstd_level())
}

/// Decodes a physical block written with compression id `algorithm_id` into `dst`, whose
/// length is the block's logical size. `src` may carry trailing padding. For `ALGORITHM_ID_OFF`
/// the first `dst.len()` bytes of `src` are copied.
pub fn decompress(algorithm_id: u8, src: &[u8], dst: &mut [u8]) -> Result<(), CompressError> {
    let kind = ZioCompress::from_id(u64::from(algorithm_id))
        .ok_or(CompressError::UnknownAlgorithm { algorithm_id })?;
    openzfs::decompress_into(kind, src, dst).map_err(|error| match error {
        OpenZfsCompressError::NotAFunction(_) => CompressError::UnknownAlgorithm { algorithm_id },
        OpenZfsCompressError::UncompressedTooShort { psize, lsize } => {
            CompressError::UncompressedTooShort {
                block_size_bytes: psize,
                logical_size_bytes: lsize,
            }
        }
        OpenZfsCompressError::LengthMismatch {
            algorithm,
            produced,
            lsize,
        } => CompressError::LengthMismatch {
            algorithm,
            produced_size_bytes: produced,
            logical_size_bytes: lsize,
        },
        OpenZfsCompressError::BadHeader { algorithm, reason }
        | OpenZfsCompressError::Malformed { algorithm, reason } => {
            CompressError::Malformed { algorithm, reason }
        }
        OpenZfsCompressError::LogicalSizeTooLarge { lsize } => CompressError::Malformed {
            algorithm: kind.name(),
            reason: format!("logical size {lsize} is larger than the largest block"),
        },
    })
}

/// The ZFS keep-or-discard rule: keep the compressed form (`compressed_len` bytes, header
/// included) only if, rounded up to the allocation unit `1 << ashift`, it saves at least 1/8 of
/// `logical_len`. Impossible arithmetic (huge ashift, overflow) means "do not keep".
pub fn keep_compressed(compressed_len: usize, logical_len: usize, ashift: u32) -> bool {
    let Some(sector_size_bytes) = 1usize.checked_shl(ashift) else {
        return false;
    };
    let Some(allocated_size_bytes) = compressed_len
        .checked_add(sector_size_bytes - 1)
        .map(|padded| padded & !(sector_size_bytes - 1))
    else {
        return false;
    };
    allocated_size_bytes <= logical_len - logical_len / 8
}
