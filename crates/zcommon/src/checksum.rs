//! Block checksums: the 256-bit value every block pointer carries for its child.
//!
//! ZFS counterpart: `module/zfs/zio_checksum.c` (the checksum table and `checksum=` property),
//! `module/zcommon/zfs_fletcher.c`, `module/zfs/sha2_zfs.c`, `module/zfs/blake3_zfs.c`.
//!
//! A checksum is four u64 words (`Checksum256`), the layout of `zio_cksum_t`, computed as
//! OpenZFS computes it for a block written little-endian (`openzfs::checksum`): for fletcher-4
//! the four running sums; for SHA-256 the 32 digest bytes read as four BIG-endian u64 words
//! (OpenZFS's `zio_checksum_SHA256`); for BLAKE3 the digest keyed with the pool's checksum
//! salt, read as four little-endian words.
//!
//! The ids are OpenZFS's (`enum zio_checksum`, a block pointer's checksum field): `2 off`,
//! `7 fletcher4`, `8 sha256`, `14 blake3`. The property values Zetta does not implement yet
//! (fletcher2, sha512, skein, edonr) are refused by `parse_property`.
//!
//! Invariants: `checksum` is a pure function of its inputs; `ChecksumKind::from_id(kind.id())
//! == Some(kind)`; `parse_property(kind.property_name()) == Ok(kind)`.

mod fletcher4;
pub mod openzfs;

pub use fletcher4::{fletcher4, fletcher4_reference, Fletcher4, FLETCHER4_WORD_SIZE_BYTES};

use crate::error::PropertyError;

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
    Off = 2,
    Fletcher4 = 7,
    Sha256 = 8,
    Blake3 = 14,
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
impl ChecksumKind {
    /// The same function in OpenZFS's table.
    pub fn zio(self) -> openzfs::ZioChecksum {
        match self {
            ChecksumKind::Off => openzfs::ZioChecksum::Off,
            ChecksumKind::Fletcher4 => openzfs::ZioChecksum::Fletcher4,
            ChecksumKind::Sha256 => openzfs::ZioChecksum::Sha256,
            ChecksumKind::Blake3 => openzfs::ZioChecksum::Blake3,
        }
    }
}

/// The words OpenZFS stores for `data` written little-endian with `kind`; `salt` keys the
/// salted functions (BLAKE3).
pub fn checksum(kind: ChecksumKind, data: &[u8], salt: &openzfs::ChecksumSalt) -> Checksum256 {
    match kind {
        // The fast implementation; OpenZFS's words for a little-endian block.
        ChecksumKind::Fletcher4 => fletcher4(data),
        // Every kind Zetta writes is a function (never inherit/on), so this cannot fail.
        _ => {
            openzfs::checksum(kind.zio(), data, openzfs::BlockOrder::Little, salt).unwrap_or([0; 4])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALT: openzfs::ChecksumSalt = [0; 32];

    // Why: golden vector from FIPS 180-2 pins the digest and OpenZFS's word layout (SHA-256
    // words are big-endian: `zio_checksum_SHA256`), which zdb prints as
    // ba7816bf8f01cfea:414140de5dae2223:...
    #[test]
    fn sha256_of_abc_is_the_standard_digest_in_big_endian_words() {
        let words = checksum(ChecksumKind::Sha256, b"abc", &SALT);
        assert_eq!(
            words,
            [
                0xba78_16bf_8f01_cfea,
                0x4141_40de_5dae_2223,
                0xb003_61a3_9617_7a9c,
                0xb410_ff61_f200_15ad
            ]
        );
    }

    // Why: OpenZFS keys BLAKE3 with the pool's salt; two salts must give two checksums, and
    // the words are the keyed digest's little-endian words.
    #[test]
    fn blake3_is_keyed_with_the_salt() {
        let salt = [7u8; 32];
        let words = checksum(ChecksumKind::Blake3, b"abc", &salt);
        let digest = blake3::keyed_hash(&salt, b"abc");
        assert_eq!(words[0].to_le_bytes(), digest.as_bytes()[..8]);
        assert_ne!(words, checksum(ChecksumKind::Blake3, b"abc", &SALT));
    }

    // Why: `checksum=off` blocks store a zero checksum; the fast fletcher4 must give
    // OpenZFS's words for a little-endian block.
    #[test]
    fn off_is_zero_and_fletcher4_is_openzfs_fletcher4() {
        assert_eq!(checksum(ChecksumKind::Off, b"anything", &SALT), [0; 4]);
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(
            checksum(ChecksumKind::Fletcher4, &data, &SALT),
            openzfs::checksum(
                openzfs::ZioChecksum::Fletcher4,
                &data,
                openzfs::BlockOrder::Little,
                &SALT
            )
            .unwrap()
        );
    }

    // Why: ids are on-disk values: OpenZFS's, round-tripping.
    #[test]
    fn ids_round_trip_and_are_stable() {
        for kind in ChecksumKind::ALL {
            assert_eq!(ChecksumKind::from_id(kind.id()), Some(kind));
        }
        for kind in ChecksumKind::ALL {
            assert_eq!(kind.id(), kind.zio().id(), "{kind:?} has OpenZFS's id");
        }
        assert_eq!(ChecksumKind::Fletcher4.id(), 7);
        assert_eq!(ChecksumKind::Blake3.id(), 14);
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
