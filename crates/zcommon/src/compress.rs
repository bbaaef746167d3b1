//! Block compression: the `compression=` property, compressing a logical block into a physical
//! one, and decoding it back.
//!
//! ZFS counterpart: `module/zfs/zio_compress.c` (algorithm table, `zio_compress_data`, the 12.5%
//! rule), `lz4_zfs.c`, `lzjb.c`, `zle.c`, `gzip.c`, `zfs_zstd.c`.
//!
//! Stored (physical) block layout, ours, format version 1:
//!
//! ```text
//!  byte 0            4                         4 + payload_len        physical size
//!  +-----------------+-------------------------+----------------------+
//!  | payload_len     | algorithm payload       | padding (ignored,    |
//!  | u32 little-end. | (payload_len bytes)     | zero when we write)  |
//!  +-----------------+-------------------------+----------------------+
//! ```
//!
//! The physical block is rounded up to the vdev's sector size, so the header is what tells the
//! decoder where the payload ends; the padding is never parsed. Payloads per algorithm id (the
//! block pointer's compression field; levels are not stored and not needed to decode):
//!
//! | id | algorithm           | payload                                                   |
//! |----|---------------------|-----------------------------------------------------------|
//! | 0  | off                 | no header: the block is the logical data                  |
//! | 1  | lz4                 | one LZ4 raw block (no frame, no size prefix)              |
//! | 2  | lzjb                | classic LZJB stream, see `compress/lzjb.rs`               |
//! | 3  | zle                 | zero-length encoding, see `compress/zle.rs`               |
//! | 4  | gzip-1..9           | one zlib stream (RFC 1950: 2-byte header, deflate, Adler) |
//! | 5  | zstd-N, zstd-fast-N | one zstd frame (zstd-fast-N is zstd level -N)             |
//!
//! Invariants: `compress` returns `Some` only if the whole stored form (header included) is
//! strictly smaller than the input; `decompress` fills `dst` exactly or returns an error, for any
//! input bytes, without panicking and without touching memory outside `dst`.

mod lzjb;
pub mod openzfs;
mod zle;

#[cfg(test)]
mod tests;

use crate::error::{CompressError, PropertyError};
use std::cell::RefCell;

/// Size of the payload-length header in front of every compressed payload.
pub const COMPRESSED_HEADER_SIZE_BYTES: usize = 4;

/// On-disk compression ids (block pointer compression field).
pub const ALGORITHM_ID_OFF: u8 = 0;
pub const ALGORITHM_ID_LZ4: u8 = 1;
pub const ALGORITHM_ID_LZJB: u8 = 2;
pub const ALGORITHM_ID_ZLE: u8 = 3;
pub const ALGORITHM_ID_GZIP: u8 = 4;
pub const ALGORITHM_ID_ZSTD: u8 = 5;

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

    /// The on-disk algorithm id stored in a block pointer.
    pub fn algorithm_id(self) -> u8 {
        match self {
            Compression::Off => ALGORITHM_ID_OFF,
            Compression::Lz4 => ALGORITHM_ID_LZ4,
            Compression::Lzjb => ALGORITHM_ID_LZJB,
            Compression::Zle => ALGORITHM_ID_ZLE,
            Compression::Gzip(_) => ALGORITHM_ID_GZIP,
            Compression::Zstd(_) | Compression::ZstdFast(_) => ALGORITHM_ID_ZSTD,
        }
    }
}

/// Compresses `src` into the stored form (header + payload). Returns `None` for `Off`, and when
/// the stored form would not be strictly smaller than `src`. Out-of-range levels (possible only by
/// building the enum directly) are clamped to the nearest valid one.
pub fn compress(compression: Compression, src: &[u8]) -> Option<Vec<u8>> {
    // The stored form must be strictly smaller than the input.
    let stored_size_max = src.len().checked_sub(1)?;
    let payload_size_max = stored_size_max.checked_sub(COMPRESSED_HEADER_SIZE_BYTES)?;
    let mut stored = match compression {
        Compression::Off => return None,
        Compression::Lz4 => {
            // lz4_flex insists on a worst-case sized output buffer.
            let mut stored = vec![
                0u8;
                COMPRESSED_HEADER_SIZE_BYTES
                    + lz4_flex::block::get_maximum_output_size(src.len())
            ];
            let payload_len =
                lz4_flex::block::compress_into(src, &mut stored[COMPRESSED_HEADER_SIZE_BYTES..])
                    .ok()?;
            stored.truncate(COMPRESSED_HEADER_SIZE_BYTES + payload_len);
            stored
        }
        Compression::Lzjb => with_payload_budget(payload_size_max, |out| lzjb::compress(src, out))?,
        Compression::Zle => with_payload_budget(payload_size_max, |out| zle::compress(src, out))?,
        Compression::Gzip(level) => with_payload_budget(payload_size_max, |out| {
            gzip_compress(src, out, level.clamp(GZIP_LEVEL_MIN, GZIP_LEVEL_MAX))
        })?,
        Compression::Zstd(level) => with_payload_budget(payload_size_max, |out| {
            zstd_compress(src, out, level.clamp(ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX))
        })?,
        Compression::ZstdFast(acceleration) => {
            let acceleration = acceleration.clamp(1, ZSTD_FAST_LEVELS[ZSTD_FAST_LEVELS.len() - 1]);
            with_payload_budget(payload_size_max, |out| {
                zstd_compress(src, out, -(acceleration as i32))
            })?
        }
    };
    if stored.len() > stored_size_max {
        return None;
    }
    let payload_len = u32::try_from(stored.len() - COMPRESSED_HEADER_SIZE_BYTES).ok()?;
    stored[..COMPRESSED_HEADER_SIZE_BYTES].copy_from_slice(&payload_len.to_le_bytes());
    Some(stored)
}

/// Runs an encoder that writes into a payload buffer of `payload_size_max` bytes and returns the
/// payload length (or `None` when it does not fit); gives back header space + payload.
fn with_payload_budget(
    payload_size_max: usize,
    encode: impl FnOnce(&mut [u8]) -> Option<usize>,
) -> Option<Vec<u8>> {
    let mut stored = vec![0u8; COMPRESSED_HEADER_SIZE_BYTES + payload_size_max];
    let payload_len = encode(&mut stored[COMPRESSED_HEADER_SIZE_BYTES..])?;
    stored.truncate(COMPRESSED_HEADER_SIZE_BYTES + payload_len);
    Some(stored)
}

fn gzip_compress(src: &[u8], out: &mut [u8], level: u8) -> Option<usize> {
    let mut encoder = flate2::Compress::new(flate2::Compression::new(u32::from(level)), true);
    match encoder.compress(src, out, flate2::FlushCompress::Finish) {
        Ok(flate2::Status::StreamEnd) => usize::try_from(encoder.total_out()).ok(),
        // Output buffer full before the stream ended: not worth compressing.
        _ => None,
    }
}

thread_local! {
    /// One zstd context per thread, reused across blocks (creating one costs far more than
    /// compressing a small block). The one-shot calls below reset the session each time, so a
    /// failed call (output too small, corrupt frame) leaves the context usable.
    static ZSTD_COMPRESS_CONTEXT: RefCell<Option<zstd::zstd_safe::CCtx<'static>>> =
        const { RefCell::new(None) };
    static ZSTD_DECOMPRESS_CONTEXT: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { RefCell::new(None) };
}

fn zstd_compress(src: &[u8], out: &mut [u8], level: i32) -> Option<usize> {
    ZSTD_COMPRESS_CONTEXT.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = Some(zstd::zstd_safe::CCtx::try_create()?);
        }
        slot.as_mut()?.compress(out, src, level).ok()
    })
}

fn zstd_decompress(payload: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
    let malformed = |code: zstd::zstd_safe::ErrorCode| CompressError::Malformed {
        algorithm: "zstd",
        reason: zstd::zstd_safe::get_error_name(code).to_string(),
    };
    let out_of_memory = || CompressError::Malformed {
        algorithm: "zstd",
        reason: "cannot allocate a decompression context".to_string(),
    };
    ZSTD_DECOMPRESS_CONTEXT.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| out_of_memory())?;
        if slot.is_none() {
            *slot = Some(zstd::zstd_safe::DCtx::try_create().ok_or_else(out_of_memory)?);
        }
        let context = slot.as_mut().ok_or_else(out_of_memory)?;
        context.decompress(dst, payload).map_err(malformed)
    })
}

fn gzip_decompress(payload: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
    let mut decoder = flate2::Decompress::new(true);
    let status = decoder
        .decompress(payload, dst, flate2::FlushDecompress::Finish)
        .map_err(|error| CompressError::Malformed {
            algorithm: "gzip",
            reason: error.to_string(),
        })?;
    let produced_size_bytes = usize::try_from(decoder.total_out()).unwrap_or(usize::MAX);
    match status {
        flate2::Status::StreamEnd if decoder.total_in() == payload.len() as u64 => {
            Ok(produced_size_bytes)
        }
        flate2::Status::StreamEnd => Err(CompressError::Malformed {
            algorithm: "gzip",
            reason: "bytes after the end of the zlib stream".to_string(),
        }),
        _ if produced_size_bytes >= dst.len() => Err(CompressError::Malformed {
            algorithm: "gzip",
            reason: format!(
                "stream continues past the logical size of {} bytes",
                dst.len()
            ),
        }),
        _ => Err(CompressError::Malformed {
            algorithm: "gzip",
            reason: format!("stream ends early after {produced_size_bytes} bytes"),
        }),
    }
}

/// A payload decoder: fills a prefix of `dst` and returns how many bytes it produced.
type PayloadDecoder = fn(&[u8], &mut [u8]) -> Result<usize, CompressError>;

/// Decodes a stored block written with `algorithm_id` into `dst`, whose length is the block's
/// logical size. `src` is the physical block, possibly with trailing padding. For id 0 (off) the
/// first `dst.len()` bytes of `src` are copied.
pub fn decompress(algorithm_id: u8, src: &[u8], dst: &mut [u8]) -> Result<(), CompressError> {
    let (algorithm, decode): (&'static str, PayloadDecoder) = match algorithm_id {
        ALGORITHM_ID_OFF => {
            let data = src
                .get(..dst.len())
                .ok_or(CompressError::UncompressedTooShort {
                    block_size_bytes: src.len(),
                    logical_size_bytes: dst.len(),
                })?;
            dst.copy_from_slice(data);
            return Ok(());
        }
        ALGORITHM_ID_LZ4 => ("lz4", |payload, dst| {
            lz4_flex::block::decompress_into(payload, dst).map_err(|error| {
                CompressError::Malformed {
                    algorithm: "lz4",
                    reason: error.to_string(),
                }
            })
        }),
        ALGORITHM_ID_LZJB => ("lzjb", lzjb::decompress),
        ALGORITHM_ID_ZLE => ("zle", zle::decompress),
        ALGORITHM_ID_GZIP => ("gzip", gzip_decompress),
        ALGORITHM_ID_ZSTD => ("zstd", zstd_decompress),
        _ => return Err(CompressError::UnknownAlgorithm { algorithm_id }),
    };
    let payload = split_payload(src)?;
    let produced_size_bytes = decode(payload, dst)?;
    if produced_size_bytes != dst.len() {
        return Err(CompressError::LengthMismatch {
            algorithm,
            produced_size_bytes,
            logical_size_bytes: dst.len(),
        });
    }
    Ok(())
}

/// Validates the header of a stored block and returns the payload it announces.
fn split_payload(src: &[u8]) -> Result<&[u8], CompressError> {
    let header = src
        .get(..COMPRESSED_HEADER_SIZE_BYTES)
        .ok_or(CompressError::HeaderTruncated {
            block_size_bytes: src.len(),
        })?;
    let payload_size_bytes =
        u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    src[COMPRESSED_HEADER_SIZE_BYTES..]
        .get(..payload_size_bytes)
        .ok_or(CompressError::PayloadLengthExceedsBlock {
            payload_size_bytes,
            block_size_bytes: src.len(),
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
