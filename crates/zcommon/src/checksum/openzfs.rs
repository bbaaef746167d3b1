//! OpenZFS's block checksums exactly as OpenZFS stores them: the checksum ids of a block
//! pointer, the four u64 words each function yields for a block's bytes, and the embedded
//! checksum (`zio_eck_t`) that labels, gang headers and ZIL blocks carry inside themselves.
//!
//! ZFS counterpart: `enum zio_checksum` (`include/sys/zio.h`), `zio_checksum_table` and
//! `zio_checksum_error_impl` (`module/zfs/zio_checksum.c`), `module/zcommon/zfs_fletcher.c`,
//! `module/zfs/sha2_zfs.c`, `skein_zfs.c`, `blake3_zfs.c`, `edonr_zfs.c`. Zetta's own checksum
//! ids and word layout (`checksum.rs`) are a different, private format and stay untouched.
//!
//! Byte order. OpenZFS writes a block in its writer's native order and records that order (the
//! block pointer's byte-order bit; the `zec_magic` of an embedded checksum). Every function of
//! `zio_checksum_table` comes as a pair, `[native, byteswap]`, and the reader picks the one that
//! matches the block's order against its own. Expressed independently of the host, as here, the
//! words a function yields depend only on the block's bytes and the order they were written in
//! ([`BlockOrder`]); they are the numeric values of the block pointer's `blk_cksum` words (which
//! the caller decodes in the block pointer's own order):
//!
//! | function         | words                                                                 |
//! |------------------|-----------------------------------------------------------------------|
//! | fletcher2        | u64 words read in block order, two interleaved streams: `a0 += w[2i]`, `a1 += w[2i+1]`, `b0 += a0`, `b1 += a1`; words `[a0, a1, b0, b1]` |
//! | fletcher4        | u32 words read in block order: `a += w; b += a; c += b; d += c`; words `[a, b, c, d]` |
//! | sha256           | the 32-byte digest as four BIG-endian u64s, whatever the block order (an old private SHA-256 wrote big-endian words; OpenZFS keeps that forever) |
//! | sha512           | SHA-512/256 (FIPS 180-4 truncated variant, not a truncated SHA-512): digest read as four u64s in block order |
//! | skein            | Skein-512 with 256-bit output, keyed (MAC) with the pool's 32-byte checksum salt: digest read as u64s in block order |
//! | blake3           | BLAKE3 keyed hash with the pool's 32-byte checksum salt as key: digest read as u64s in block order |
//! | edonr            | Edon-R 512 over `H(salt) \|\| H(H(salt))` then the block ([`edonr`]): first 32 digest bytes read as u64s in block order |
//! | off, noparity    | four zero words                                                        |
//!
//! The salted functions (skein, edonr, blake3) use the pool's `checksum_salt` (the MOS directory
//! entry `DMU_POOL_CHECKSUM_SALT`, 32 random bytes chosen at pool creation): Skein and BLAKE3
//! take it as their MAC key (`Skein_512_InitExt(.., key = salt)`, `Blake3_InitKeyed(salt)`).
//! Edon-R instead feeds a 128-byte block `H(salt) || H(H(salt))` first (module [`edonr`]). Its
//! byte-swapped member in OpenZFS swaps an unwritten variable, so an OpenZFS reader of the
//! other order cannot verify edonr blocks at all; here the words are what the writer stored
//! (the digest read in the block's order), so both orders verify.
//! Skein here is built from the Threefish-512 block cipher (RustCrypto `threefish`) with Skein's
//! UBI chaining: KEY block(s), CONFIG block, MESSAGE blocks, OUTPUT block.
//!
//! Embedded checksums (`zio_eck_t`, 40 bytes: `zec_magic` u64 then four checksum words):
//!
//! ```text
//!  label, gang_header, zilog: eck in the LAST 40 bytes of the block
//!  +---------------------------------------------+-----------+---------------------------+
//!  | payload                                     | zec_magic | zec_cksum[4] (u64 each)   |
//!  +---------------------------------------------+-----------+---------------------------+
//!  zilog2 (zil_chain_t at the START of the block; checksum covers nused rounded up to 4 KiB)
//!  +--------+------------------+----------+-----------+--------------------+------------+
//!  | pad u64| next blkptr (128)| nused u64| zec_magic | zec_cksum[4]       | records... |
//!  +--------+------------------+----------+-----------+--------------------+------------+
//!  0        8                  136        144         152                  184
//! ```
//!
//! `zec_magic` = `0x0210da7ab10c7a11` in the writer's order says the block's order. To verify,
//! the stored checksum is replaced (in a copy) by a *verifier* written in the block's order, the
//! function runs over the block in the block's order, and the result must equal the stored
//! words: label verifier `[device offset, 0, 0, 0]`, gang header `[vdev, offset, birth txg, 0]`
//! of the gang block's first DVA, ZIL blocks the `blk_cksum` of the block pointer that names them.
//! label and gang_header use sha256, zilog fletcher2, zilog2 fletcher4.
//!
//! Not covered: encrypted blocks, whose block pointer holds a MAC in words 2..3 (OpenZFS folds
//! or truncates the checksum for them); that is for the encryption layer.
//!
//! Invariants: pure functions; no panics on any input (lengths that are not whole words leave
//! the tail out, as OpenZFS's loops do; OpenZFS only ever checksums multiples of 512 bytes).

use super::{fletcher4, Checksum256};

#[path = "edonr.rs"]
pub mod edonr;
use sha2::Digest;
use std::fmt;

/// The order a block's integers were written in (OpenZFS records it, never converts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockOrder {
    Little,
    Big,
}

impl BlockOrder {
    /// Reads a u64 from 8 bytes in this order.
    fn u64_from(self, bytes: [u8; 8]) -> u64 {
        match self {
            BlockOrder::Little => u64::from_le_bytes(bytes),
            BlockOrder::Big => u64::from_be_bytes(bytes),
        }
    }

    /// Writes a u64 as 8 bytes in this order.
    fn u64_to(self, value: u64) -> [u8; 8] {
        match self {
            BlockOrder::Little => value.to_le_bytes(),
            BlockOrder::Big => value.to_be_bytes(),
        }
    }
}

/// OpenZFS's checksum ids (`enum zio_checksum`), the value of a block pointer's checksum field.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZioChecksum {
    Inherit = 0,
    On = 1,
    Off = 2,
    Label = 3,
    GangHeader = 4,
    Zilog = 5,
    Fletcher2 = 6,
    Fletcher4 = 7,
    Sha256 = 8,
    Zilog2 = 9,
    NoParity = 10,
    Sha512 = 11,
    Skein = 12,
    Edonr = 13,
    Blake3 = 14,
}

impl ZioChecksum {
    /// Every id, in order.
    pub const ALL: [ZioChecksum; 15] = [
        ZioChecksum::Inherit,
        ZioChecksum::On,
        ZioChecksum::Off,
        ZioChecksum::Label,
        ZioChecksum::GangHeader,
        ZioChecksum::Zilog,
        ZioChecksum::Fletcher2,
        ZioChecksum::Fletcher4,
        ZioChecksum::Sha256,
        ZioChecksum::Zilog2,
        ZioChecksum::NoParity,
        ZioChecksum::Sha512,
        ZioChecksum::Skein,
        ZioChecksum::Edonr,
        ZioChecksum::Blake3,
    ];

    /// The function stored under id `id`, or `None` past the table.
    pub fn from_id(id: u64) -> Option<Self> {
        usize::try_from(id)
            .ok()
            .and_then(|index| ZioChecksum::ALL.get(index).copied())
    }

    pub fn id(self) -> u8 {
        self as u8
    }

    /// The name in `zio_checksum_table` (on disk in places such as DDT object names).
    pub fn name(self) -> &'static str {
        match self {
            ZioChecksum::Inherit => "inherit",
            ZioChecksum::On => "on",
            ZioChecksum::Off => "off",
            ZioChecksum::Label => "label",
            ZioChecksum::GangHeader => "gang_header",
            ZioChecksum::Zilog => "zilog",
            ZioChecksum::Fletcher2 => "fletcher2",
            ZioChecksum::Fletcher4 => "fletcher4",
            ZioChecksum::Sha256 => "sha256",
            ZioChecksum::Zilog2 => "zilog2",
            ZioChecksum::NoParity => "noparity",
            ZioChecksum::Sha512 => "sha512",
            ZioChecksum::Skein => "skein",
            ZioChecksum::Edonr => "edonr",
            ZioChecksum::Blake3 => "blake3",
        }
    }

    /// Whether the checksum lives inside the block (`ZCHECKSUM_FLAG_EMBEDDED`).
    pub fn is_embedded(self) -> bool {
        matches!(
            self,
            ZioChecksum::Label | ZioChecksum::GangHeader | ZioChecksum::Zilog | ZioChecksum::Zilog2
        )
    }

    /// Whether the function is keyed with the pool's checksum salt (`ZCHECKSUM_FLAG_SALTED`).
    pub fn is_salted(self) -> bool {
        matches!(
            self,
            ZioChecksum::Skein | ZioChecksum::Edonr | ZioChecksum::Blake3
        )
    }
}

impl fmt::Display for ZioChecksum {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Size of the pool's checksum salt (`zio_cksum_salt_t`).
pub const CHECKSUM_SALT_SIZE_BYTES: usize = 32;

/// The pool's checksum salt, the key of the salted functions.
pub type ChecksumSalt = [u8; CHECKSUM_SALT_SIZE_BYTES];

/// `zec_magic`, in the writer's order.
pub const ZEC_MAGIC: u64 = 0x0210_da7a_b10c_7a11;

/// Size of `zio_eck_t`: magic + four checksum words.
pub const ZIO_ECK_SIZE_BYTES: usize = 40;

/// Offset of `zc_eck` inside `zil_chain_t` (pad 8 + blkptr 128 + nused 8).
pub const ZIL_CHAIN_ECK_OFFSET: usize = 144;

/// Offset of `zc_nused` inside `zil_chain_t`.
const ZIL_CHAIN_NUSED_OFFSET: usize = 136;

/// ZIL blocks are checksummed up to `nused` rounded up to this.
pub const ZIL_MIN_BLKSZ: u64 = 4096;

/// Why a checksum could not be computed or did not verify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenZfsChecksumError {
    /// `inherit` and `on` are property values, not functions a block can carry.
    NotAFunction(ZioChecksum),
    /// A real OpenZFS function this implementation does not provide (none today; kept so
    /// callers stay typed if a future id appears).
    Unsupported(ZioChecksum),
    /// An embedded-checksum check asked for a function that is not embedded, or vice versa.
    NotEmbedded(ZioChecksum),
    /// The block is too short to hold its embedded checksum.
    EmbeddedTooShort { block_size_bytes: usize },
    /// `zec_magic` is neither order of `ZEC_MAGIC`.
    EmbeddedBadMagic { magic: u64 },
    /// A ZIL block's `zc_nused`, rounded up, is larger than the block or smaller than its header.
    ZilNusedInvalid { nused: u64, block_size_bytes: usize },
    /// The computed checksum is not the stored one.
    Mismatch {
        expected: Checksum256,
        actual: Checksum256,
    },
}

impl fmt::Display for OpenZfsChecksumError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenZfsChecksumError::NotAFunction(kind) => {
                write!(
                    formatter,
                    "checksum '{kind}' is a property value, not a function"
                )
            }
            OpenZfsChecksumError::Unsupported(kind) => write!(
                formatter,
                "checksum '{kind}' is not supported by this implementation"
            ),
            OpenZfsChecksumError::NotEmbedded(kind) => {
                write!(formatter, "checksum '{kind}' is not an embedded checksum")
            }
            OpenZfsChecksumError::EmbeddedTooShort { block_size_bytes } => write!(
                formatter,
                "block of {block_size_bytes} bytes is too short for its embedded checksum"
            ),
            OpenZfsChecksumError::EmbeddedBadMagic { magic } => {
                write!(
                    formatter,
                    "embedded checksum magic {magic:#018x} is not 0x0210da7ab10c7a11"
                )
            }
            OpenZfsChecksumError::ZilNusedInvalid {
                nused,
                block_size_bytes,
            } => write!(
                formatter,
                "ZIL block of {block_size_bytes} bytes says {nused} bytes are used"
            ),
            OpenZfsChecksumError::Mismatch { expected, actual } => write!(
                formatter,
                "checksum mismatch: expected {}, computed {}",
                words_display(expected),
                words_display(actual)
            ),
        }
    }
}

impl std::error::Error for OpenZfsChecksumError {}

/// The words as zdb prints them (`%016llx:` ...).
pub fn words_display(words: &Checksum256) -> String {
    words
        .iter()
        .map(|word| format!("{word:016x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The four words OpenZFS stores in a block pointer for `data` checksummed with `kind`, the
/// block having been written in `order`. `salt` is the pool's checksum salt (read only by the
/// salted functions). Embedded kinds compute their underlying function over `data` as is (the
/// caller puts the verifier in place; see [`verify_embedded`]).
pub fn checksum(
    kind: ZioChecksum,
    data: &[u8],
    order: BlockOrder,
    salt: &ChecksumSalt,
) -> Result<Checksum256, OpenZfsChecksumError> {
    match kind {
        ZioChecksum::Inherit | ZioChecksum::On => Err(OpenZfsChecksumError::NotAFunction(kind)),
        ZioChecksum::Off | ZioChecksum::NoParity => Ok([0; 4]),
        ZioChecksum::Label | ZioChecksum::GangHeader | ZioChecksum::Sha256 => {
            Ok(digest_words(&sha2::Sha256::digest(data), BlockOrder::Big))
        }
        ZioChecksum::Zilog | ZioChecksum::Fletcher2 => Ok(fletcher2(data, order)),
        ZioChecksum::Zilog2 | ZioChecksum::Fletcher4 => Ok(fletcher4_ordered(data, order)),
        ZioChecksum::Sha512 => Ok(digest_words(&sha2::Sha512_256::digest(data), order)),
        ZioChecksum::Skein => Ok(digest_words(&skein512_256_keyed(salt, data), order)),
        ZioChecksum::Blake3 => Ok(digest_words(
            blake3::keyed_hash(salt, data).as_bytes(),
            order,
        )),
        ZioChecksum::Edonr => Ok(digest_words(&edonr::edonr512_salted(salt, data), order)),
    }
}

/// Reads the first 32 bytes of a digest as four u64s in `order`.
fn digest_words(digest: &[u8], order: BlockOrder) -> Checksum256 {
    let mut words = [0u64; 4];
    for (word, bytes) in words.iter_mut().zip(digest.chunks_exact(8)) {
        let mut word_bytes = [0u8; 8];
        word_bytes.copy_from_slice(bytes);
        *word = order.u64_from(word_bytes);
    }
    words
}

/// OpenZFS fletcher-2: two interleaved streams of u64 words; a trailing partial 16-byte pair
/// is left out.
pub fn fletcher2(data: &[u8], order: BlockOrder) -> Checksum256 {
    let (mut a0, mut a1, mut b0, mut b1) = (0u64, 0u64, 0u64, 0u64);
    for pair in data.chunks_exact(16) {
        let mut first = [0u8; 8];
        let mut second = [0u8; 8];
        first.copy_from_slice(&pair[..8]);
        second.copy_from_slice(&pair[8..]);
        a0 = a0.wrapping_add(order.u64_from(first));
        a1 = a1.wrapping_add(order.u64_from(second));
        b0 = b0.wrapping_add(a0);
        b1 = b1.wrapping_add(a1);
    }
    [a0, a1, b0, b1]
}

/// OpenZFS fletcher-4 over u32 words read in `order`; a trailing partial word is left out.
/// The little-endian case is Zetta's own [`fletcher4`] (same sums) on the whole words.
pub fn fletcher4_ordered(data: &[u8], order: BlockOrder) -> Checksum256 {
    let whole = &data[..data.len() - data.len() % 4];
    match order {
        BlockOrder::Little => fletcher4(whole),
        BlockOrder::Big => {
            let swapped: Vec<u8> = whole
                .chunks_exact(4)
                .flat_map(|word| [word[3], word[2], word[1], word[0]])
                .collect();
            fletcher4(&swapped)
        }
    }
}

/// Skein's UBI block types (the type field of the tweak's high word).
const SKEIN_TYPE_KEY: u64 = 0;
const SKEIN_TYPE_CONFIG: u64 = 4;
const SKEIN_TYPE_MESSAGE: u64 = 48;
const SKEIN_TYPE_OUTPUT: u64 = 63;
/// Tweak flags: first and last block of a UBI run.
const SKEIN_FLAG_FIRST: u64 = 1 << 62;
const SKEIN_FLAG_FINAL: u64 = 1 << 63;
/// Skein-512's block and state size.
const SKEIN_512_BLOCK_BYTES: usize = 64;
/// The config block's schema: "SHA3" and version 1, as a little-endian u64.
const SKEIN_SCHEMA_VERSION_1: u64 = 0x0000_0001_3341_4853;

/// One UBI run of Skein-512 over `message` with block type `block_type`, chained on `state`.
/// An empty message is one zero block whose byte count is zero.
fn skein512_ubi(state: [u64; 8], message: &[u8], block_type: u64) -> [u64; 8] {
    let mut state = state;
    let block_count = message.len().div_ceil(SKEIN_512_BLOCK_BYTES).max(1);
    let mut position: u64 = 0;
    for index in 0..block_count {
        let start = index * SKEIN_512_BLOCK_BYTES;
        let chunk = message.get(start..).unwrap_or(&[]);
        let chunk = &chunk[..chunk.len().min(SKEIN_512_BLOCK_BYTES)];
        let mut block = [0u8; SKEIN_512_BLOCK_BYTES];
        block[..chunk.len()].copy_from_slice(chunk);
        position += chunk.len() as u64;
        let mut flags = block_type << 56;
        if index == 0 {
            flags |= SKEIN_FLAG_FIRST;
        }
        if index + 1 == block_count {
            flags |= SKEIN_FLAG_FINAL;
        }
        let mut plain = [0u64; 8];
        for (word, bytes) in plain.iter_mut().zip(block.chunks_exact(8)) {
            let mut word_bytes = [0u8; 8];
            word_bytes.copy_from_slice(bytes);
            *word = u64::from_le_bytes(word_bytes);
        }
        let cipher = threefish::Threefish512::new_with_tweak_u64(&state, &[position, flags]);
        let mut encrypted = plain;
        cipher.encrypt_block_u64(&mut encrypted);
        for ((next, cipher_word), plain_word) in
            state.iter_mut().zip(encrypted.iter()).zip(plain.iter())
        {
            *next = cipher_word ^ plain_word;
        }
    }
    state
}

/// Skein-512 with a 256-bit output, keyed with `key` (Skein's MAC mode); what OpenZFS's
/// `Skein_512_InitExt(ctx, 256, 0, salt, 32)` + update + final computes.
pub fn skein512_256_keyed(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut state = [0u64; 8];
    if !key.is_empty() {
        state = skein512_ubi(state, key, SKEIN_TYPE_KEY);
    }
    let mut config = [0u8; 32];
    config[..8].copy_from_slice(&SKEIN_SCHEMA_VERSION_1.to_le_bytes());
    config[8..16].copy_from_slice(&256u64.to_le_bytes());
    // Bytes 16..24: tree parameters, zero for sequential hashing; 24..32 reserved.
    state = skein512_ubi(state, &config, SKEIN_TYPE_CONFIG);
    state = skein512_ubi(state, message, SKEIN_TYPE_MESSAGE);
    state = skein512_ubi(state, &0u64.to_le_bytes(), SKEIN_TYPE_OUTPUT);
    let mut digest = [0u8; 32];
    for (bytes, word) in digest.chunks_exact_mut(8).zip(state.iter()) {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    digest
}

/// The verifier of a label block (vdev label region or uberblock slot): its byte offset on the
/// device.
pub fn label_verifier(device_offset: u64) -> Checksum256 {
    [device_offset, 0, 0, 0]
}

/// The verifier of a gang header: vdev, offset and physical birth txg of the gang block
/// pointer's first DVA.
pub fn gang_verifier(vdev: u64, offset: u64, birth_txg: u64) -> Checksum256 {
    [vdev, offset, birth_txg, 0]
}

/// What a verified embedded checksum told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedChecksum {
    /// The block's byte order, from `zec_magic`.
    pub order: BlockOrder,
    /// The stored (and verified) checksum words.
    pub checksum: Checksum256,
    /// How many bytes the checksum covered (the block, or a ZIL block's used part).
    pub checked_size_bytes: usize,
}

/// Verifies a block that carries its own checksum (`kind` one of label, gang_header, zilog,
/// zilog2) against `verifier`, as `zio_checksum_error_impl` does: the stored words are swapped
/// for the verifier (in the block's order) in a copy, the function runs over it, and the result
/// must equal the stored words.
pub fn verify_embedded(
    kind: ZioChecksum,
    block: &[u8],
    verifier: Checksum256,
) -> Result<EmbeddedChecksum, OpenZfsChecksumError> {
    if !kind.is_embedded() {
        return Err(OpenZfsChecksumError::NotEmbedded(kind));
    }
    let too_short = || OpenZfsChecksumError::EmbeddedTooShort {
        block_size_bytes: block.len(),
    };
    let eck_offset = if kind == ZioChecksum::Zilog2 {
        ZIL_CHAIN_ECK_OFFSET
    } else {
        block
            .len()
            .checked_sub(ZIO_ECK_SIZE_BYTES)
            .ok_or_else(too_short)?
    };
    let eck = block
        .get(eck_offset..eck_offset + ZIO_ECK_SIZE_BYTES)
        .ok_or_else(too_short)?;
    let magic_bytes = first_8(eck);
    let order = if u64::from_le_bytes(magic_bytes) == ZEC_MAGIC {
        BlockOrder::Little
    } else if u64::from_be_bytes(magic_bytes) == ZEC_MAGIC {
        BlockOrder::Big
    } else {
        return Err(OpenZfsChecksumError::EmbeddedBadMagic {
            magic: u64::from_le_bytes(magic_bytes),
        });
    };
    let size = if kind == ZioChecksum::Zilog2 {
        zil_checked_size(block, order)?
    } else {
        block.len()
    };
    let mut expected = [0u64; 4];
    for (index, word) in expected.iter_mut().enumerate() {
        *word = order.u64_from(first_8(&eck[8 + 8 * index..]));
    }
    let mut copy = block[..size].to_vec();
    let words_at = eck_offset + 8;
    for (index, word) in verifier.iter().enumerate() {
        // The checksum words lie inside `size` for every kind (zilog2: 152..184 < 4096).
        if let Some(slot) = copy.get_mut(words_at + 8 * index..words_at + 8 * index + 8) {
            slot.copy_from_slice(&order.u64_to(*word));
        }
    }
    let actual = checksum(kind, &copy, order, &[0; CHECKSUM_SALT_SIZE_BYTES])?;
    if actual != expected {
        return Err(OpenZfsChecksumError::Mismatch { expected, actual });
    }
    Ok(EmbeddedChecksum {
        order,
        checksum: expected,
        checked_size_bytes: size,
    })
}

/// Writes an embedded checksum into `block` in `order` (the writer's side of
/// [`verify_embedded`]): magic, then the function over the block with the verifier in place.
pub fn seal_embedded(
    kind: ZioChecksum,
    block: &mut [u8],
    order: BlockOrder,
    verifier: Checksum256,
) -> Result<Checksum256, OpenZfsChecksumError> {
    if !kind.is_embedded() {
        return Err(OpenZfsChecksumError::NotEmbedded(kind));
    }
    let block_size_bytes = block.len();
    let too_short = OpenZfsChecksumError::EmbeddedTooShort { block_size_bytes };
    let eck_offset = if kind == ZioChecksum::Zilog2 {
        ZIL_CHAIN_ECK_OFFSET
    } else {
        block_size_bytes
            .checked_sub(ZIO_ECK_SIZE_BYTES)
            .ok_or(too_short.clone())?
    };
    let size = if kind == ZioChecksum::Zilog2 {
        zil_checked_size(block, order)?
    } else {
        block_size_bytes
    };
    let eck = block
        .get_mut(eck_offset..eck_offset + ZIO_ECK_SIZE_BYTES)
        .ok_or(too_short)?;
    eck[..8].copy_from_slice(&order.u64_to(ZEC_MAGIC));
    for (index, word) in verifier.iter().enumerate() {
        eck[8 + 8 * index..16 + 8 * index].copy_from_slice(&order.u64_to(*word));
    }
    let sum = checksum(kind, &block[..size], order, &[0; CHECKSUM_SALT_SIZE_BYTES])?;
    let eck = &mut block[eck_offset..eck_offset + ZIO_ECK_SIZE_BYTES];
    for (index, word) in sum.iter().enumerate() {
        eck[8 + 8 * index..16 + 8 * index].copy_from_slice(&order.u64_to(*word));
    }
    Ok(sum)
}

/// The part of a ZIL block (`zil_chain_t` at its start) that its checksum covers: `zc_nused`
/// rounded up to `ZIL_MIN_BLKSZ`, which must lie inside the block and hold the chain header.
fn zil_checked_size(block: &[u8], order: BlockOrder) -> Result<usize, OpenZfsChecksumError> {
    let nused_bytes = block
        .get(ZIL_CHAIN_NUSED_OFFSET..ZIL_CHAIN_NUSED_OFFSET + 8)
        .ok_or(OpenZfsChecksumError::EmbeddedTooShort {
            block_size_bytes: block.len(),
        })?;
    let nused = order.u64_from(first_8(nused_bytes));
    nused
        .checked_add(ZIL_MIN_BLKSZ - 1)
        .map(|sum| sum / ZIL_MIN_BLKSZ * ZIL_MIN_BLKSZ)
        .and_then(|rounded| usize::try_from(rounded).ok())
        .filter(|&rounded| {
            rounded <= block.len() && rounded >= ZIL_CHAIN_ECK_OFFSET + ZIO_ECK_SIZE_BYTES
        })
        .ok_or(OpenZfsChecksumError::ZilNusedInvalid {
            nused,
            block_size_bytes: block.len(),
        })
}

/// The first 8 bytes of a slice that has at least 8 (callers slice with `get` first).
fn first_8(bytes: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    for (slot, byte) in out.iter_mut().zip(bytes.iter()) {
        *slot = *byte;
    }
    out
}

/// One fuzz input through the checksum functions (the fuzz target `openzfs_checksum` and a
/// unit test call it): byte 0 picks the id and the order, the rest is the block. Every
/// function must give an answer or a typed error; a block sealed with an embedded checksum
/// must verify, and the same block with a byte changed must not.
pub fn fuzz_check(data: &[u8]) {
    let Some((&head, block)) = data.split_first() else {
        return;
    };
    let order = if head & 0x80 == 0 {
        BlockOrder::Little
    } else {
        BlockOrder::Big
    };
    let Some(kind) = ZioChecksum::from_id(u64::from(head & 0x7f) % 17) else {
        return;
    };
    let salt = [head; CHECKSUM_SALT_SIZE_BYTES];
    let _ = checksum(kind, block, order, &salt);
    let verifier = [u64::from(head), block.len() as u64, 0, 1];
    let _ = verify_embedded(kind, block, verifier);
    let mut sealed = block.to_vec();
    if seal_embedded(kind, &mut sealed, order, verifier).is_ok() {
        // Zilog2 covers only the used part its header records: that part may lie outside.
        match verify_embedded(kind, &sealed, verifier) {
            Ok(found) => {
                assert_eq!(found.order, order, "{kind}: sealed order");
                let last = found.checked_size_bytes.saturating_sub(1);
                if let Some(b) = sealed.get_mut(last) {
                    *b ^= 0x40;
                    assert!(
                        verify_embedded(kind, &sealed, verifier).is_err(),
                        "{kind}: a changed block still verifies"
                    );
                }
            }
            Err(e) => assert_eq!(kind, ZioChecksum::Zilog2, "{kind}: sealed, then {e}"),
        }
    }
}

#[cfg(test)]
#[path = "openzfs_tests.rs"]
mod tests;
