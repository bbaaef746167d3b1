//! Block checksums: the 256-bit value every block pointer carries for its child.
//!
//! ZFS counterpart: `module/zfs/zio_checksum.c` (the checksum table and `checksum=` property),
//! `module/zcommon/zfs_fletcher.c`, `module/zfs/sha2_zfs.c`, `module/zfs/blake3_zfs.c`.
//!
//! A checksum is four u64 words (`Checksum256`), the layout of `zio_cksum_t`. For fletcher-4 the
//! words are the four running sums. For SHA-256 and BLAKE3 the 32 digest bytes are read as four
//! little-endian u64 words (byte 0 of the digest is the low byte of word 0). This is our own
//! choice: real ZFS stores SHA-256 as big-endian words, but our pools are our own format.
//!
//! On-disk checksum ids (a block pointer's checksum field, ours):
//! `0 off`, `1 fletcher4`, `2 sha256`, `3 blake3`. Ids are forever: never renumber.
//!
//! Invariants: `checksum` is a pure function; `ChecksumKind::from_id(kind.id()) == Some(kind)`;
//! `parse_property(kind.property_name()) == Ok(kind)`.

mod fletcher4;
pub mod openzfs;

pub use fletcher4::{fletcher4, fletcher4_reference, Fletcher4, FLETCHER4_WORD_SIZE_BYTES};

use crate::error::PropertyError;
use sha2::Digest;

/// A 256-bit block checksum as four u64 words (ZFS `zio_cksum_t`).
pub type Checksum256 = [u64; 4];

/// Name of the dataset property this module parses.
const CHECKSUM_PROPERTY_NAME: &str = "checksum";

/// Values real ZFS accepts for `checksum=` that we deliberately do not implement.
const UNSUPPORTED_CHECKSUM_VALUES: [&str; 4] = ["fletcher2", "sha512", "skein", "edonr"];

/// Checksum algorithm of a block; the discriminant is the on-disk id.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChecksumKind {
    Off = 0,
    Fletcher4 = 1,
    Sha256 = 2,
    Blake3 = 3,
}

impl ChecksumKind {
    /// Every kind, in id order.
    pub const ALL: [ChecksumKind; 4] = [
        ChecksumKind::Off,
        ChecksumKind::Fletcher4,
        ChecksumKind::Sha256,
        ChecksumKind::Blake3,
    ];

    /// The kind stored under on-disk id `id`, or `None` for an unknown id.
    pub fn from_id(id: u8) -> Option<Self> {
        ChecksumKind::ALL.into_iter().find(|kind| kind.id() == id)
    }

    /// The on-disk id.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Parses a `checksum=` property value with ZFS spellings (`on` means fletcher4).
    pub fn parse_property(value: &str) -> Result<Self, PropertyError> {
        match value {
            "on" | "fletcher4" => Ok(ChecksumKind::Fletcher4),
            "off" => Ok(ChecksumKind::Off),
            "sha256" => Ok(ChecksumKind::Sha256),
            "blake3" => Ok(ChecksumKind::Blake3),
            _ if UNSUPPORTED_CHECKSUM_VALUES.contains(&value) => Err(PropertyError::Unsupported {
                property: CHECKSUM_PROPERTY_NAME,
                value: value.to_string(),
            }),
            _ => Err(PropertyError::Invalid {
                property: CHECKSUM_PROPERTY_NAME,
                value: value.to_string(),
            }),
        }
    }

    /// The canonical property value.
    pub fn property_name(self) -> &'static str {
        match self {
            ChecksumKind::Off => "off",
            ChecksumKind::Fletcher4 => "fletcher4",
            ChecksumKind::Sha256 => "sha256",
            ChecksumKind::Blake3 => "blake3",
        }
    }
}

/// Checksum of `data` with `kind`; `Off` gives all zeros.
pub fn checksum(kind: ChecksumKind, data: &[u8]) -> Checksum256 {
    match kind {
        ChecksumKind::Off => [0; 4],
        ChecksumKind::Fletcher4 => fletcher4(data),
        ChecksumKind::Sha256 => digest_to_words(sha2::Sha256::digest(data).as_slice()),
        ChecksumKind::Blake3 => digest_to_words(blake3::hash(data).as_bytes()),
    }
}

/// Reads a 32-byte digest as four little-endian u64 words.
fn digest_to_words(digest: &[u8]) -> Checksum256 {
    debug_assert_eq!(digest.len(), 32);
    let mut words = [0u64; 4];
    for (word, bytes) in words.iter_mut().zip(digest.chunks_exact(8)) {
        let mut word_bytes = [0u8; 8];
        word_bytes.copy_from_slice(bytes);
        *word = u64::from_le_bytes(word_bytes);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_to_hex(words: Checksum256) -> String {
        words
            .iter()
            .flat_map(|word| word.to_le_bytes())
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    // Why: golden vector from FIPS 180-2 pins both the digest and our byte-to-word layout.
    #[test]
    fn sha256_of_abc_is_the_standard_digest() {
        let words = checksum(ChecksumKind::Sha256, b"abc");
        assert_eq!(
            words_to_hex(words),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(words[0], 0xeacf_018f_bf16_78ba);
    }

    // Why: golden vector from the BLAKE3 reference pins the digest and the word layout.
    #[test]
    fn blake3_of_abc_is_the_standard_digest() {
        assert_eq!(
            words_to_hex(checksum(ChecksumKind::Blake3, b"abc")),
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
        );
    }

    // Why: `checksum=off` blocks store a zero checksum; the dispatcher must route fletcher4 to
    // the fast implementation.
    #[test]
    fn off_is_zero_and_fletcher4_dispatches() {
        assert_eq!(checksum(ChecksumKind::Off, b"anything"), [0; 4]);
        assert_eq!(
            checksum(ChecksumKind::Fletcher4, b"abcdefgh"),
            fletcher4(b"abcdefgh")
        );
    }

    // Why: ids are on-disk values; they must round-trip and stay what the format doc says.
    #[test]
    fn ids_round_trip_and_are_stable() {
        for kind in ChecksumKind::ALL {
            assert_eq!(ChecksumKind::from_id(kind.id()), Some(kind));
        }
        assert_eq!(ChecksumKind::Fletcher4.id(), 1);
        assert_eq!(ChecksumKind::Blake3.id(), 3);
        assert_eq!(ChecksumKind::from_id(4), None);
        assert_eq!(ChecksumKind::from_id(255), None);
    }

    // Why: `zfs set checksum=...` must accept ZFS spellings, name unsupported ZFS values as such
    // (not as typos), and reject garbage.
    #[test]
    fn property_parsing() {
        for kind in ChecksumKind::ALL {
            assert_eq!(ChecksumKind::parse_property(kind.property_name()), Ok(kind));
        }
        assert_eq!(
            ChecksumKind::parse_property("on"),
            Ok(ChecksumKind::Fletcher4)
        );
        for value in ["fletcher2", "sha512", "skein", "edonr"] {
            let error = ChecksumKind::parse_property(value).unwrap_err();
            assert!(
                matches!(error, PropertyError::Unsupported { .. }),
                "{value}"
            );
            assert!(error.to_string().contains("not supported"), "{error}");
        }
        for value in ["", "ON", "crc32", "sha256 "] {
            assert!(matches!(
                ChecksumKind::parse_property(value),
                Err(PropertyError::Invalid { .. })
            ));
        }
    }
}
