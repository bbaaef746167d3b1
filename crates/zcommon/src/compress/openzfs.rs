//! OpenZFS's block compression exactly as OpenZFS stores it: the compression ids of a block
//! pointer and each algorithm's physical framing, for decoding real OpenZFS blocks (and for
//! writing blocks OpenZFS can read).
//!
//! ZFS counterpart: `enum zio_compress` (`include/sys/zio_compress.h`), `zio_compress_table` and
//! `zio_decompress_data` (`module/zfs/zio_compress.c`), `lz4_zfs.c`, `lzjb.c`, `zle.c`, `gzip.c`,
//! `module/zstd/zfs_zstd.c` with `include/sys/zstd/zstd.h`. This is the only block compression
//! format Zetta has: `compress.rs` maps the `compression=` property onto it.
//!
//! A physical block is `psize` bytes, rounded up to the vdev's sector size by the writer; the
//! bytes past the algorithm's own end are padding (zeros when OpenZFS writes) and are ignored.
//! The block pointer gives the logical size `lsize`, and decoding must produce exactly `lsize`
//! bytes. Framing per id (`zio_compress_table` names):
//!
//! ```text
//!  id  name          physical block
//!  0   inherit       (property value only)
//!  1   on            (property value only)
//!  2   uncompressed  the logical bytes themselves (psize == lsize)
//!  3   lzjb          raw LZJB stream, no header; ends where the output is full
//!  4   empty         (never in a block pointer: an all-zero block becomes a hole)
//!  5-13 gzip-1..9    one zlib stream (RFC 1950 header, deflate, Adler-32), no length header
//!  14  zle           raw ZLE stream (n = 64), no header; ends where the output is full
//!  15  lz4           +-----------------------+---------------------------+---------+
//!                    | len: u32 BIG-endian   | LZ4 raw block (len bytes) | padding |
//!                    +-----------------------+---------------------------+---------+
//!  16  zstd          +-----------------+--------------------+-------------------------+-----+
//!                    | c_len: u32 BE   | version+level: u32 | zstd frame WITHOUT its  | pad |
//!                    |                 | (see below)        | 4-byte magic (c_len B)  |     |
//!                    +-----------------+--------------------+-------------------------+-----+
//! ```
//!
//! zstd's second word holds the zstd library version (24 bits, e.g. 10405 for 1.4.5) and the
//! OpenZFS zstd level enum (8 bits: 1..=19 for zstd-1..19, 103..=123 for zstd-fast-1..1000).
//! Writers on little-endian hosts stored the bytes `[level, Vhigh, Vmid, Vlow]`, writers on
//! big-endian hosts (before OpenZFS fixed the layout) `[Vhigh, Vmid, Vlow, level]`; as OpenZFS
//! does, the reader reads the word big-endian and finds which byte is the version's zero high
//! byte to tell the two apart. An unknown level is corruption. The frame has no content size and
//! no checksum (OpenZFS's block checksum covers it).
//!
//! LZJB (`lzjb.c`): groups of a copymap byte then 8 items, bit i (LSB first) = item i is a
//! match: 2 bytes `[(len-3) << 2 | offset >> 8, offset & 0xff]`, copy `len` (3..=66) bytes from
//! `offset` (1..=1023) back, cut at the end of the output; else one literal byte.
//! ZLE (`zle.c`, level 64): a control byte `c`: `c < 64` = `c + 1` literal bytes follow;
//! `c >= 64` = `c - 63` zero bytes (1..=192).
//!
//! Invariants: `decompress` never panics and never allocates more than `lsize` (at most
//! [`OPENZFS_MAX_LSIZE_BYTES`]) plus the physical size, whatever the input.

use std::cell::RefCell;
use std::fmt;

/// The largest logical block OpenZFS writes (`SPA_MAXBLOCKSIZE`, 16 MiB).
pub const OPENZFS_MAX_LSIZE_BYTES: usize = 16 << 20;

/// OpenZFS's compression ids (`enum zio_compress`), the value of a block pointer's
/// compression field.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZioCompress {
    Inherit = 0,
    On = 1,
    Off = 2,
    Lzjb = 3,
    Empty = 4,
    Gzip1 = 5,
    Gzip2 = 6,
    Gzip3 = 7,
    Gzip4 = 8,
    Gzip5 = 9,
    Gzip6 = 10,
    Gzip7 = 11,
    Gzip8 = 12,
    Gzip9 = 13,
    Zle = 14,
    Lz4 = 15,
    Zstd = 16,
}

impl ZioCompress {
    /// Every id, in order.
    pub const ALL: [ZioCompress; 17] = [
        ZioCompress::Inherit,
        ZioCompress::On,
        ZioCompress::Off,
        ZioCompress::Lzjb,
        ZioCompress::Empty,
        ZioCompress::Gzip1,
        ZioCompress::Gzip2,
        ZioCompress::Gzip3,
        ZioCompress::Gzip4,
        ZioCompress::Gzip5,
        ZioCompress::Gzip6,
        ZioCompress::Gzip7,
        ZioCompress::Gzip8,
        ZioCompress::Gzip9,
        ZioCompress::Zle,
        ZioCompress::Lz4,
        ZioCompress::Zstd,
    ];

    /// The algorithm stored under id `id`, or `None` past the table.
    pub fn from_id(id: u64) -> Option<Self> {
        usize::try_from(id)
            .ok()
            .and_then(|index| ZioCompress::ALL.get(index).copied())
    }

    pub fn id(self) -> u8 {
        self as u8
    }

    /// The name in `zio_compress_table` (what zdb prints; `off` is "uncompressed").
    pub fn name(self) -> &'static str {
        match self {
            ZioCompress::Inherit => "inherit",
            ZioCompress::On => "on",
            ZioCompress::Off => "uncompressed",
            ZioCompress::Lzjb => "lzjb",
            ZioCompress::Empty => "empty",
            ZioCompress::Gzip1 => "gzip-1",
            ZioCompress::Gzip2 => "gzip-2",
            ZioCompress::Gzip3 => "gzip-3",
            ZioCompress::Gzip4 => "gzip-4",
            ZioCompress::Gzip5 => "gzip-5",
            ZioCompress::Gzip6 => "gzip-6",
            ZioCompress::Gzip7 => "gzip-7",
            ZioCompress::Gzip8 => "gzip-8",
            ZioCompress::Gzip9 => "gzip-9",
            ZioCompress::Zle => "zle",
            ZioCompress::Lz4 => "lz4",
            ZioCompress::Zstd => "zstd",
        }
    }

    /// The zlib level of a gzip id.
    pub fn gzip_level(self) -> Option<u32> {
        let id = self.id();
        (ZioCompress::Gzip1.id()..=ZioCompress::Gzip9.id())
            .contains(&id)
            .then(|| u32::from(id - ZioCompress::Gzip1.id() + 1))
    }
}

impl fmt::Display for ZioCompress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Why a physical block could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenZfsCompressError {
    /// inherit, on and empty have no decoder (OpenZFS: `EINVAL`).
    NotAFunction(ZioCompress),
    /// The block pointer's logical size is larger than OpenZFS ever writes.
    LogicalSizeTooLarge { lsize: usize },
    /// An uncompressed block shorter than its logical size.
    UncompressedTooShort { psize: usize, lsize: usize },
    /// A header (lz4, zstd) is cut off, or announces more bytes than the block has.
    BadHeader {
        algorithm: &'static str,
        reason: String,
    },
    /// The stream is not valid for its algorithm.
    Malformed {
        algorithm: &'static str,
        reason: String,
    },
    /// The stream decoded, but not to exactly the logical size.
    LengthMismatch {
        algorithm: &'static str,
        produced: usize,
        lsize: usize,
    },
}

impl fmt::Display for OpenZfsCompressError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenZfsCompressError::NotAFunction(kind) => {
                write!(formatter, "compression '{kind}' has no decompressor")
            }
            OpenZfsCompressError::LogicalSizeTooLarge { lsize } => write!(
                formatter,
                "logical size {lsize} is larger than the largest block ({OPENZFS_MAX_LSIZE_BYTES})"
            ),
            OpenZfsCompressError::UncompressedTooShort { psize, lsize } => write!(
                formatter,
                "uncompressed block of {psize} bytes is shorter than its logical size {lsize}"
            ),
            OpenZfsCompressError::BadHeader { algorithm, reason } => {
                write!(formatter, "bad {algorithm} block header: {reason}")
            }
            OpenZfsCompressError::Malformed { algorithm, reason } => {
                write!(formatter, "malformed {algorithm} block: {reason}")
            }
            OpenZfsCompressError::LengthMismatch {
                algorithm,
                produced,
                lsize,
            } => write!(
                formatter,
                "{algorithm} block decompressed to {produced} bytes, expected {lsize}"
            ),
        }
    }
}

impl std::error::Error for OpenZfsCompressError {}

/// Decodes the physical block `physical` (padding included) written with `kind` into its
/// `lsize` logical bytes. For `Off` the first `lsize` bytes are returned.
pub fn decompress(
    kind: ZioCompress,
    physical: &[u8],
    lsize: usize,
) -> Result<Vec<u8>, OpenZfsCompressError> {
    if lsize > OPENZFS_MAX_LSIZE_BYTES {
        return Err(OpenZfsCompressError::LogicalSizeTooLarge { lsize });
    }
    match kind {
        ZioCompress::Inherit | ZioCompress::On | ZioCompress::Empty => {
            Err(OpenZfsCompressError::NotAFunction(kind))
        }
        ZioCompress::Off => physical.get(..lsize).map(<[u8]>::to_vec).ok_or(
            OpenZfsCompressError::UncompressedTooShort {
                psize: physical.len(),
                lsize,
            },
        ),
        ZioCompress::Lzjb => lzjb_decompress(physical, lsize),
        ZioCompress::Zle => zle_decompress(physical, lsize, ZLE_LEVEL),
        ZioCompress::Lz4 => lz4_decompress(physical, lsize),
        ZioCompress::Zstd => zstd_decompress(physical, lsize).map(|(logical, _)| logical),
        _ => gzip_decompress(physical, lsize),
    }
}

/// OpenZFS's ZLE level (`zio_compress_table`): control bytes below it start literal runs.
pub const ZLE_LEVEL: usize = 64;

fn malformed(algorithm: &'static str, reason: String) -> OpenZfsCompressError {
    OpenZfsCompressError::Malformed { algorithm, reason }
}

fn exact_length(
    algorithm: &'static str,
    logical: Vec<u8>,
    produced: usize,
    lsize: usize,
) -> Result<Vec<u8>, OpenZfsCompressError> {
    if produced != lsize {
        return Err(OpenZfsCompressError::LengthMismatch {
            algorithm,
            produced,
            lsize,
        });
    }
    Ok(logical)
}

/// LZJB: shortest match, bits of the match length, largest offset.
const LZJB_MATCH_MIN: usize = 3;
const LZJB_MATCH_MAX: usize = (1 << 6) + LZJB_MATCH_MIN - 1;
const LZJB_OFFSET_MASK: usize = (1 << 10) - 1;
const LZJB_HASH_ENTRIES: usize = 1024;

fn lzjb_decompress(physical: &[u8], lsize: usize) -> Result<Vec<u8>, OpenZfsCompressError> {
    let mut out = vec![0u8; lsize];
    let mut src = 0usize;
    let mut dst = 0usize;
    let mut copymap = 0u8;
    let mut item = 8u32;
    while dst < lsize {
        if item == 8 {
            copymap = *physical.get(src).ok_or_else(|| {
                malformed("lzjb", format!("stream ends after {dst} of {lsize} bytes"))
            })?;
            src += 1;
            item = 0;
        }
        if copymap & (1 << item) != 0 {
            let pair = physical
                .get(src..src + 2)
                .ok_or_else(|| malformed("lzjb", format!("match at byte {src} is cut off")))?;
            let match_len = usize::from(pair[0] >> 2) + LZJB_MATCH_MIN;
            let offset = ((usize::from(pair[0]) << 8) | usize::from(pair[1])) & LZJB_OFFSET_MASK;
            src += 2;
            if offset == 0 || offset > dst {
                return Err(malformed(
                    "lzjb",
                    format!("match offset {offset} at output byte {dst} reaches before the block"),
                ));
            }
            // A match may run past the end of the output; OpenZFS stops at the end.
            let end = (dst + match_len).min(lsize);
            for position in dst..end {
                out[position] = out[position - offset];
            }
            dst = end;
        } else {
            out[dst] = *physical.get(src).ok_or_else(|| {
                malformed("lzjb", format!("stream ends after {dst} of {lsize} bytes"))
            })?;
            src += 1;
            dst += 1;
        }
        item += 1;
    }
    Ok(out)
}

fn zle_decompress(
    physical: &[u8],
    lsize: usize,
    level: usize,
) -> Result<Vec<u8>, OpenZfsCompressError> {
    let mut out = vec![0u8; lsize];
    let mut src = 0usize;
    let mut dst = 0usize;
    while src < physical.len() && dst < lsize {
        let run = usize::from(physical[src]) + 1;
        src += 1;
        if run <= level {
            let literal = physical.get(src..src + run).ok_or_else(|| {
                malformed(
                    "zle",
                    format!("literal of {run} bytes at byte {src} is cut off"),
                )
            })?;
            let target = out.get_mut(dst..dst + run).ok_or_else(|| {
                malformed(
                    "zle",
                    format!("literal at output byte {dst} passes {lsize}"),
                )
            })?;
            target.copy_from_slice(literal);
            src += run;
            dst += run;
        } else {
            let zeros = run - level;
            if dst + zeros > lsize {
                return Err(malformed(
                    "zle",
                    format!("zero run at output byte {dst} passes {lsize}"),
                ));
            }
            // `out` starts zeroed.
            dst += zeros;
        }
    }
    exact_length("zle", out, dst, lsize)
}

/// Size of the big-endian length in front of an lz4 block.
const LZ4_HEADER_BYTES: usize = 4;

fn lz4_decompress(physical: &[u8], lsize: usize) -> Result<Vec<u8>, OpenZfsCompressError> {
    let mut out = vec![0u8; lsize];
    lz4_decompress_into(physical, &mut out)?;
    Ok(out)
}

fn lz4_decompress_into(physical: &[u8], out: &mut [u8]) -> Result<(), OpenZfsCompressError> {
    let header =
        physical
            .get(..LZ4_HEADER_BYTES)
            .ok_or_else(|| OpenZfsCompressError::BadHeader {
                algorithm: "lz4",
                reason: format!("block of {} bytes has no length", physical.len()),
            })?;
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let payload =
        physical[LZ4_HEADER_BYTES..]
            .get(..len)
            .ok_or_else(|| OpenZfsCompressError::BadHeader {
                algorithm: "lz4",
                reason: format!(
                    "length {len} does not fit in a block of {} bytes",
                    physical.len()
                ),
            })?;
    let produced = lz4_flex::block::decompress_into(payload, out)
        .map_err(|error| malformed("lz4", error.to_string()))?;
    exact_length_into("lz4", produced, out.len())
}

fn exact_length_into(
    algorithm: &'static str,
    produced: usize,
    lsize: usize,
) -> Result<(), OpenZfsCompressError> {
    if produced != lsize {
        return Err(OpenZfsCompressError::LengthMismatch {
            algorithm,
            produced,
            lsize,
        });
    }
    Ok(())
}

fn gzip_decompress(physical: &[u8], lsize: usize) -> Result<Vec<u8>, OpenZfsCompressError> {
    let mut out = vec![0u8; lsize];
    gzip_decompress_into(physical, &mut out)?;
    Ok(out)
}

fn gzip_decompress_into(physical: &[u8], out: &mut [u8]) -> Result<(), OpenZfsCompressError> {
    let lsize = out.len();
    let mut decoder = flate2::Decompress::new(true);
    let status = decoder
        .decompress(physical, out, flate2::FlushDecompress::Finish)
        .map_err(|error| malformed("gzip", error.to_string()))?;
    let produced = usize::try_from(decoder.total_out()).unwrap_or(usize::MAX);
    match status {
        // Bytes after the end of the zlib stream are the block's padding.
        flate2::Status::StreamEnd => exact_length_into("gzip", produced, lsize),
        _ if produced >= lsize => Err(malformed(
            "gzip",
            format!("stream continues past the logical size {lsize}"),
        )),
        _ => Err(malformed(
            "gzip",
            format!("stream ends early after {produced} bytes"),
        )),
    }
}

/// Size of OpenZFS's zstd header (`zfs_zstdhdr_t` without its data).
pub const ZSTD_HEADER_BYTES: usize = 8;

/// The magic number a zstd frame starts with; OpenZFS leaves it out.
const ZSTD_FRAME_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The fields of OpenZFS's zstd header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZstdHeader {
    /// Length of the magicless frame that follows.
    pub c_len: u32,
    /// The zstd library version that wrote it (`ZSTD_VERSION_NUMBER`, e.g. 10405).
    pub version: u32,
    /// OpenZFS's zstd level enum (1..=19, 103..=123 for the fast levels).
    pub level: u8,
}

/// OpenZFS's zstd level enum value for zstd-fast-1 (`ZIO_ZSTD_LEVEL_FAST_1`).
pub const ZIO_ZSTD_LEVEL_FAST_1: u8 = 103;

/// The zstd library level of an OpenZFS zstd level enum value, or `None` for an invalid one.
pub fn zstd_library_level(level: u8) -> Option<i32> {
    match level {
        1..=19 => Some(i32::from(level)),
        _ => level
            .checked_sub(ZIO_ZSTD_LEVEL_FAST_1)
            // The zstd-fast accelerations, in enum order from `ZIO_ZSTD_LEVEL_FAST_1`.
            .and_then(|index| super::ZSTD_FAST_LEVELS.get(usize::from(index)))
            .map(|&acceleration| -(acceleration as i32)),
    }
}

/// Reads OpenZFS's zstd header, both historical layouts of its version/level word.
pub fn zstd_header(physical: &[u8]) -> Result<ZstdHeader, OpenZfsCompressError> {
    let bad = |reason: String| OpenZfsCompressError::BadHeader {
        algorithm: "zstd",
        reason,
    };
    let header = physical
        .get(..ZSTD_HEADER_BYTES)
        .ok_or_else(|| bad(format!("block of {} bytes has no header", physical.len())))?;
    let c_len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    let raw = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let byte = |index: u32| (raw >> (8 * index)) & 0xff;
    // The version's high byte is zero (versions below 6.55.36); where it sits tells the layout.
    let (level, version) = match (0..4).find(|&index| byte(index) == 0) {
        Some(0) => (raw >> 24, (raw.swap_bytes() >> 8) & 0x00ff_ffff),
        Some(1) => (raw & 0xff, raw.swap_bytes() & 0x00ff_ffff),
        Some(2) => (raw >> 24, raw & 0x00ff_ffff),
        Some(_) => (raw & 0xff, (raw >> 8) & 0x00ff_ffff),
        None => (0, 0),
    };
    let level = level as u8;
    if zstd_library_level(level).is_none() {
        return Err(bad(format!(
            "level {level} (word {raw:#010x}) is not a zstd level"
        )));
    }
    Ok(ZstdHeader {
        c_len,
        version,
        level,
    })
}

thread_local! {
    /// One zstd context per thread, reused across blocks (creating one costs far more than
    /// compressing a small block). Every call sets what it needs, so a failed call leaves the
    /// context usable.
    static ZSTD_COMPRESS_CONTEXT: RefCell<Option<zstd::zstd_safe::CCtx<'static>>> =
        const { RefCell::new(None) };
    static ZSTD_DECOMPRESS_CONTEXT: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { RefCell::new(None) };
}

/// Decodes an OpenZFS zstd block; also returns its header.
pub fn zstd_decompress(
    physical: &[u8],
    lsize: usize,
) -> Result<(Vec<u8>, ZstdHeader), OpenZfsCompressError> {
    if lsize > OPENZFS_MAX_LSIZE_BYTES {
        return Err(OpenZfsCompressError::LogicalSizeTooLarge { lsize });
    }
    let mut out = vec![0u8; lsize];
    let header = zstd_decompress_into(physical, &mut out)?;
    Ok((out, header))
}

fn zstd_decompress_into(
    physical: &[u8],
    out: &mut [u8],
) -> Result<ZstdHeader, OpenZfsCompressError> {
    let header = zstd_header(physical)?;
    let frame = physical[ZSTD_HEADER_BYTES..]
        .get(..header.c_len as usize)
        .ok_or_else(|| OpenZfsCompressError::BadHeader {
            algorithm: "zstd",
            reason: format!(
                "length {} does not fit in a block of {} bytes",
                header.c_len,
                physical.len()
            ),
        })?;
    // The frame was written without its magic: put it back and decode a standard frame.
    let mut framed = Vec::with_capacity(ZSTD_FRAME_MAGIC.len() + frame.len());
    framed.extend_from_slice(&ZSTD_FRAME_MAGIC);
    framed.extend_from_slice(frame);
    let no_context = || malformed("zstd", "cannot allocate a decompression context".into());
    let produced = ZSTD_DECOMPRESS_CONTEXT.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| no_context())?;
        if slot.is_none() {
            *slot = Some(zstd::zstd_safe::DCtx::try_create().ok_or_else(no_context)?);
        }
        let context = slot.as_mut().ok_or_else(no_context)?;
        context
            .decompress(&mut out[..], &framed)
            .map_err(|code| malformed("zstd", zstd::zstd_safe::get_error_name(code).to_string()))
    })?;
    exact_length_into("zstd", produced, out.len())?;
    Ok(header)
}

/// Decodes the physical block `physical` (padding included) written with `kind` into `dst`,
/// whose length is the logical size: `decompress` without the allocation, for the I/O
/// pipeline.
pub fn decompress_into(
    kind: ZioCompress,
    physical: &[u8],
    dst: &mut [u8],
) -> Result<(), OpenZfsCompressError> {
    let lsize = dst.len();
    if lsize > OPENZFS_MAX_LSIZE_BYTES {
        return Err(OpenZfsCompressError::LogicalSizeTooLarge { lsize });
    }
    match kind {
        ZioCompress::Inherit | ZioCompress::On | ZioCompress::Empty => {
            Err(OpenZfsCompressError::NotAFunction(kind))
        }
        ZioCompress::Off => {
            let data = physical
                .get(..lsize)
                .ok_or(OpenZfsCompressError::UncompressedTooShort {
                    psize: physical.len(),
                    lsize,
                })?;
            dst.copy_from_slice(data);
            Ok(())
        }
        ZioCompress::Lz4 => lz4_decompress_into(physical, dst),
        ZioCompress::Zstd => zstd_decompress_into(physical, dst).map(|_| ()),
        ZioCompress::Lzjb | ZioCompress::Zle => {
            dst.copy_from_slice(&decompress(kind, physical, lsize)?);
            Ok(())
        }
        _ => gzip_decompress_into(physical, dst),
    }
}

/// Compresses `src` as OpenZFS would store it with `kind`, in at most `max_psize` bytes
/// (before sector rounding). `zstd_level` is OpenZFS's zstd level enum (ignored by the other
/// algorithms). `None` when the result would not fit, or `kind` has no compressor. The bytes
/// are OpenZFS's exactly for zle; for lzjb on the blocks checked (see below); lz4, gzip and
/// zstd are in OpenZFS's framing around valid streams from our libraries, which are not
/// OpenZFS's bytes (lz4_flex picks other matches than OpenZFS's LZ4).
pub fn compress(
    kind: ZioCompress,
    src: &[u8],
    max_psize: usize,
    zstd_level: u8,
) -> Option<Vec<u8>> {
    let out = match kind {
        ZioCompress::Inherit | ZioCompress::On | ZioCompress::Off | ZioCompress::Empty => {
            return None
        }
        ZioCompress::Lzjb => lzjb_compress(src, max_psize)?,
        ZioCompress::Zle => zle_compress(src, max_psize, ZLE_LEVEL)?,
        ZioCompress::Lz4 => lz4_compress(src)?,
        ZioCompress::Zstd => zstd_compress(src, zstd_level)?,
        _ => gzip_compress(src, kind.gzip_level()?)?,
    };
    (out.len() <= max_psize).then_some(out)
}

/// OpenZFS's LZJB compressor. Its hash table holds truncated pointers, so OpenZFS's own output
/// depends on the buffer's address; this models a 1 KiB-aligned buffer. A sweep of 115 real
/// lzjb blocks re-compressed 92 to their exact bytes (every zfs-fuse one); 23 written by old
/// Solaris pools differ in match choice. Every one decodes either way.
fn lzjb_compress(src: &[u8], max_psize: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(max_psize.min(src.len()));
    let mut last_seen = [0usize; LZJB_HASH_ENTRIES];
    let mut copymap_at = 0usize;
    let mut copymask: u32 = 1 << 7;
    let mut position = 0usize;
    while position < src.len() {
        copymask <<= 1;
        if copymask == 1 << 8 {
            // OpenZFS gives up when fewer than a full group's worst case remains.
            if out.len() + 1 + 2 * 8 >= max_psize {
                return None;
            }
            copymask = 1;
            copymap_at = out.len();
            out.push(0);
        }
        if position + LZJB_MATCH_MAX > src.len() {
            out.push(src[position]);
            position += 1;
            continue;
        }
        let mut hash = (usize::from(src[position]) << 16)
            + (usize::from(src[position + 1]) << 8)
            + usize::from(src[position + 2]);
        hash += hash >> 9;
        hash += hash >> 5;
        let slot = &mut last_seen[hash & (LZJB_HASH_ENTRIES - 1)];
        let offset = position.wrapping_sub(*slot) & LZJB_OFFSET_MASK;
        *slot = position;
        let candidate = position.checked_sub(offset);
        match candidate {
            Some(from) if offset != 0 && src[position..position + 3] == src[from..from + 3] => {
                let mut match_len = LZJB_MATCH_MIN;
                while match_len < LZJB_MATCH_MAX
                    && src[position + match_len] == src[from + match_len]
                {
                    match_len += 1;
                }
                out[copymap_at] |= copymask as u8;
                out.push((((match_len - LZJB_MATCH_MIN) << 2) | (offset >> 8)) as u8);
                out.push(offset as u8);
                position += match_len;
            }
            _ => {
                out.push(src[position]);
                position += 1;
            }
        }
    }
    Some(out)
}

/// OpenZFS's ZLE compressor, byte for byte.
fn zle_compress(src: &[u8], max_psize: usize, level: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(max_psize.min(src.len()));
    let mut position = 0usize;
    while position < src.len() {
        // OpenZFS keeps one byte of room for the control byte.
        if out.len() + 1 >= max_psize {
            return None;
        }
        let first = position;
        let control_at = out.len();
        out.push(0);
        if src[position] == 0 {
            let last = (first + (256 - level)).min(src.len());
            while position < last && src[position] == 0 {
                position += 1;
            }
            out[control_at] = (position - first - 1 + level) as u8;
        } else {
            if max_psize - out.len() < level {
                return None;
            }
            let last = (first + level).min(src.len());
            // Copy up to a pair of zeros (a single zero stays inside the literal).
            while position + 1 < last && (src[position] | src[position + 1]) != 0 {
                out.push(src[position]);
                position += 1;
            }
            if src[position] != 0 {
                out.push(src[position]);
                position += 1;
            }
            out[control_at] = (position - first - 1) as u8;
        }
    }
    Some(out)
}

fn lz4_compress(src: &[u8]) -> Option<Vec<u8>> {
    let payload = lz4_flex::block::compress(src);
    let len = u32::try_from(payload.len()).ok()?;
    let mut out = Vec::with_capacity(LZ4_HEADER_BYTES + payload.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&payload);
    Some(out)
}

/// zlib (RFC 1950) of `src` at `level` (OpenZFS `z_compress_level`: what resume tokens carry).
pub fn zlib_compress(src: &[u8], level: u32) -> Option<Vec<u8>> {
    gzip_compress(src, level)
}

/// The `len` bytes a zlib stream holds (OpenZFS `z_uncompress` into a buffer of `len`): an
/// error unless it decodes to exactly that many.
pub fn zlib_decompress(src: &[u8], len: usize) -> Result<Vec<u8>, OpenZfsCompressError> {
    gzip_decompress(src, len)
}

fn gzip_compress(src: &[u8], level: u32) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
    encoder.write_all(src).ok()?;
    encoder.finish().ok()
}

fn zstd_compress(src: &[u8], level: u8) -> Option<Vec<u8>> {
    use zstd::zstd_safe::CParameter;
    let library_level = zstd_library_level(level)?;
    let mut frame = vec![0u8; zstd::zstd_safe::compress_bound(src.len())];
    let len = ZSTD_COMPRESS_CONTEXT.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = Some(zstd::zstd_safe::CCtx::try_create()?);
        }
        let context = slot.as_mut()?;
        context
            .set_parameter(CParameter::CompressionLevel(library_level))
            .ok()?;
        context
            .set_parameter(CParameter::ChecksumFlag(false))
            .ok()?;
        context
            .set_parameter(CParameter::ContentSizeFlag(false))
            .ok()?;
        context.compress2(&mut frame[..], src).ok()
    })?;
    let frame = frame.get(..len)?;
    let magicless = frame.strip_prefix(&ZSTD_FRAME_MAGIC[..])?;
    let c_len = u32::try_from(magicless.len()).ok()?;
    let version = zstd::zstd_safe::version_number() & 0x00ff_ffff;
    let mut out = Vec::with_capacity(ZSTD_HEADER_BYTES + magicless.len());
    out.extend_from_slice(&c_len.to_be_bytes());
    out.extend_from_slice(&((u32::from(level) << 24) | version).to_be_bytes());
    out.extend_from_slice(magicless);
    Some(out)
}

/// One fuzz input through the decompressors (the fuzz target `openzfs_decompress` and a
/// unit test call it): byte 0 picks the id (ids past the table included), bytes 1..4 the
/// logical size (up to 1 MiB, and once in 64 inputs past OpenZFS's limit), the rest is the
/// physical block. Panics only if an invariant breaks: a decoded block is exactly `lsize`
/// bytes, and what our compressor writes decodes back to its input.
pub fn fuzz_check(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let (size_bytes, physical) = rest.split_at(rest.len().min(3));
    let mut raw = [0u8; 4];
    raw[..size_bytes.len()].copy_from_slice(size_bytes);
    let raw = u32::from_le_bytes(raw);
    let lsize = if raw & 0x3f == 0x3f {
        OPENZFS_MAX_LSIZE_BYTES + (raw as usize >> 6)
    } else {
        (raw as usize >> 4) & ((1 << 20) - 1)
    };
    let Some(kind) = ZioCompress::from_id(u64::from(head % 20)) else {
        return;
    };
    if let Ok(out) = decompress(kind, physical, lsize) {
        assert_eq!(out.len(), lsize, "{kind}: decoded length");
    }
    if physical.len() <= 1 << 16 {
        if let Some(packed) = compress(kind, physical, physical.len() + 1024, 3) {
            match decompress(kind, &packed, physical.len()) {
                Ok(back) => assert!(back == physical, "{kind}: round trip changed the data"),
                Err(e) => panic!("{kind}: our own compressed block does not decode: {e}"),
            }
        }
    }
}

#[cfg(test)]
#[path = "openzfs_tests.rs"]
mod tests;
