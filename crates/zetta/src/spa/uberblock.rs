//! The uberblock: the root of the pool's Merkle tree, rewritten every txg into a ring in each
//! label (OpenZFS `uberblock.c`). Import picks the valid uberblock with the highest txg whose
//! MOS verifies; a torn or misdirected slot write only ever loses the newest commit.
//!
//! ```text
//! byte  0  magic      u64  UBERBLOCK_MAGIC ("ZETTAUB1")
//!       8  version    u64  FORMAT_VERSION
//!      16  txg        u64
//!      24  guid_sum   u64  sum of every vdev guid (detects missing devices)
//!      32  timestamp  u64  seconds since the epoch
//!      40  pool_guid  u64
//!      48  rootbp     128-byte block pointer to the MOS objset block
//!     176  reserved   zero up to 992
//!     992  checksum   [u64; 4] fletcher4 of bytes 0..992 followed by the slot's device
//!                     offset (u64 LE), so a slot written to the wrong place never verifies
//! ```

use crate::types::{Guid, Txg};
use crate::zio::blkptr::{BlockPointer, BLKPTR_SIZE_BYTES};
use zetta_zcommon::checksum::Fletcher4;

pub const UBERBLOCK_SIZE_BYTES: usize = 1024;
pub const UBERBLOCK_MAGIC: u64 = u64::from_le_bytes(*b"ZETTAUB1");
const CHECKSUM_OFFSET: usize = UBERBLOCK_SIZE_BYTES - 32;

/// On-disk format version. 1: first format (labels, uberblock ring, blkptr v1, dnodes,
/// nvlist MOS directory, space maps of 16-byte entries). 2: every filesystem carries the
/// ZPL layout (master node, znodes, directory ZAPs, delete queue) and dataset space is
/// accounted in deflated bytes. A version-1 pool still imports: a filesystem without a
/// master node gets one when first mounted. 3: DSL dir records keep USED and its breakdown,
/// compressed and logical sums and the four space limits; dataset records keep compressed
/// and logical sums and unique bytes (bytes 224..248). A version-1 or 2 pool still imports:
/// the figures are derived at import (`dsl::space_audit`) and written with the next txg.
/// 4: blocks as OpenZFS writes them (issue 14): OpenZFS's blkptr_t layout, compression,
/// checksum and object type ids, compressed block framings and SHA-256 word order. Older
/// pools are not read any more: the private format retires.
/// 5: ZAPs as OpenZFS writes them (issue 14, increment 3a): micro ZAPs (`mzap_phys_t`)
/// grown by 512 bytes up to 128 KiB, fat ZAPs (`zap_phys_t`, embedded then external
/// pointer tables, `zap_leaf_phys_t` chunked leaves), names hashed by OpenZFS's salted
/// CRC-64 (28 bits), cursors serialized as OpenZFS's. Format-4 pools are not read.
pub const FORMAT_VERSION: u64 = 5;
/// The oldest format this code reads.
pub const FORMAT_VERSION_MIN: u64 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uberblock {
    pub txg: Txg,
    pub guid_sum: u64,
    pub timestamp_secs: u64,
    pub pool_guid: Guid,
    pub rootbp: BlockPointer,
}

fn slot_checksum(bytes: &[u8], device_offset: u64) -> [u64; 4] {
    let mut sum = Fletcher4::new();
    sum.update(&bytes[..CHECKSUM_OFFSET]);
    sum.update(&device_offset.to_le_bytes());
    sum.finish()
}

impl Uberblock {
    /// Encodes into a slot of `slot_size_bytes` destined for `device_offset`.
    pub fn encode(&self, slot_size_bytes: usize, device_offset: u64) -> Vec<u8> {
        let mut out = vec![0u8; slot_size_bytes.max(UBERBLOCK_SIZE_BYTES)];
        out[0..8].copy_from_slice(&UBERBLOCK_MAGIC.to_le_bytes());
        out[8..16].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        out[16..24].copy_from_slice(&self.txg.0.to_le_bytes());
        out[24..32].copy_from_slice(&self.guid_sum.to_le_bytes());
        out[32..40].copy_from_slice(&self.timestamp_secs.to_le_bytes());
        out[40..48].copy_from_slice(&self.pool_guid.0.to_le_bytes());
        self.rootbp.encode(&mut out[48..48 + BLKPTR_SIZE_BYTES]);
        let sum = slot_checksum(&out, device_offset);
        for (i, word) in sum.iter().enumerate() {
            out[CHECKSUM_OFFSET + i * 8..CHECKSUM_OFFSET + 8 + i * 8]
                .copy_from_slice(&word.to_le_bytes());
        }
        out
    }

    /// Decodes a slot read from `device_offset`; `None` for blank, damaged or foreign slots.
    pub fn decode(bytes: &[u8], device_offset: u64) -> Option<Uberblock> {
        if bytes.len() < UBERBLOCK_SIZE_BYTES {
            return None;
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(w)
        };
        if word(0) != UBERBLOCK_MAGIC || word(8) < FORMAT_VERSION_MIN || word(8) > FORMAT_VERSION {
            return None;
        }
        let expected = [
            word(CHECKSUM_OFFSET),
            word(CHECKSUM_OFFSET + 8),
            word(CHECKSUM_OFFSET + 16),
            word(CHECKSUM_OFFSET + 24),
        ];
        if slot_checksum(bytes, device_offset) != expected {
            return None;
        }
        let rootbp = BlockPointer::decode(&bytes[48..48 + BLKPTR_SIZE_BYTES]).ok()?;
        Some(Uberblock {
            txg: Txg(word(16)),
            guid_sum: word(24),
            timestamp_secs: word(32),
            pool_guid: Guid(word(40)),
            rootbp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Uberblock {
        Uberblock {
            txg: Txg(42),
            guid_sum: 7,
            timestamp_secs: 1_700_000_000,
            pool_guid: Guid(99),
            rootbp: BlockPointer::HOLE,
        }
    }

    /// Golden header bytes: the uberblock is on-disk format.
    #[test]
    fn golden_header() {
        let bytes = sample().encode(1024, 4096);
        assert_eq!(&bytes[0..8], b"ZETTAUB1");
        assert_eq!(bytes[8], 5);
        assert_eq!(bytes[16], 42);
        assert_eq!(bytes[40], 99);
        assert_eq!(Uberblock::decode(&bytes, 4096), Some(sample()));
    }

    /// A slot found at another offset (misdirected write) or with any bit flipped is
    /// ignored, so import falls back to an older valid uberblock.
    #[test]
    fn misplaced_or_damaged_slots_are_ignored() {
        let bytes = sample().encode(1024, 4096);
        assert_eq!(Uberblock::decode(&bytes, 8192), None);
        for at in (0..1024).step_by(7) {
            let mut bad = bytes.clone();
            bad[at] ^= 4;
            assert_eq!(Uberblock::decode(&bad, 4096), None, "flip at {at}");
        }
    }
}
