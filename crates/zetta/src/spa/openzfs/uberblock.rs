//! OpenZFS uberblocks and the ring they live in (OpenZFS `include/sys/uberblock_impl.h`
//! `struct uberblock`, `module/zfs/uberblock.c` `uberblock_verify`, `module/zfs/vdev_label.c`
//! `vdev_uberblock_compare` / `vdev_uberblock_load`).
//!
//! Theory. The last 128 KiB of each label is a ring of uberblock slots; the uberblock of txg
//! T goes to slot `T % count` of every label of every leaf. A slot is
//! `1 << clamp(ashift, 10, 13)` bytes (ashift of the top-level vdev, from the label's
//! `vdev_tree`), so 128 slots of 1 KiB at ashift 9/10, 32 of 4 KiB at ashift 12, 16 of 8 KiB
//! at ashift 13 and above. Each slot ends with the same embedded checksum tail as a label's
//! vdev_phys (`zio_eck_t`, SHA-256 with the verifier `{slot offset on the device, 0, 0, 0}`,
//! see `vdev::openzfs::label`); a slot whose tail does not verify is skipped, as the kernel's
//! checksummed label read skips it.
//!
//! ```text
//! slot:  | uberblock_t (216 bytes used)         | zero ...                  | zio_eck_t 40 |
//!        0                                                                 size-40     size
//!
//! uberblock_t (u64 words in the writer's order; the magic tells which):
//!   0 ub_magic 0x00bab10c     8 ub_version       16 ub_txg          24 ub_guid_sum
//!  32 ub_timestamp (UTC s)   40 ub_rootbp blkptr_t (128 bytes, the MOS objset)
//! 168 ub_software_version   176 ub_mmp_magic 0xa11cea11                184 ub_mmp_delay
//! 192 ub_mmp_config         200 ub_checkpoint_txg                     208 ub_raidz_reflow_info
//!
//! ub_mmp_config: | fail intervals u16 | seq u16 | write interval ms u24 | valid bits u8 |
//!                63                 48         32                        8             0
//! ```
//!
//! The best uberblock is the greatest by `vdev_uberblock_compare`: txg, then timestamp, then
//! the MMP sequence number (0 unless both MMP magic and its sequence-valid bit are set).
//! Early pools (version < 5000 but written before MMP existed) have zeros past
//! `ub_software_version`; those fields then read as "no MMP".
//!
//! Invariants: decoding never panics and never trusts a length; the root block pointer is
//! kept as its raw 128 bytes with the byte order to read it in (`zio::openzfs::blkptr`
//! decodes it).

use crate::byteorder::ByteOrder;
use crate::vdev::openzfs::label::{self, EckError, Label, RING_SIZE_BYTES};
use std::cmp::Ordering;
use std::fmt;

/// `UBERBLOCK_MAGIC`.
pub const UBERBLOCK_MAGIC: u64 = 0x00ba_b10c;
/// `MMP_MAGIC`.
pub const MMP_MAGIC: u64 = 0xa11c_ea11;
/// `UBERBLOCK_SHIFT`, `MAX_UBERBLOCK_SHIFT`.
pub const UBERBLOCK_SHIFT_MIN: u32 = 10;
pub const UBERBLOCK_SHIFT_MAX: u32 = 13;
/// `sizeof (uberblock_t)`.
pub const UBERBLOCK_SIZE_BYTES: usize = 216;
/// `sizeof (blkptr_t)`.
pub const BLKPTR_SIZE_BYTES: usize = 128;

const MMP_SEQ_VALID_BIT: u64 = 0x02;
const MMP_INTERVAL_VALID_BIT: u64 = 0x01;
const MMP_FAIL_INT_VALID_BIT: u64 = 0x04;

/// `VDEV_UBERBLOCK_SHIFT` for a top-level vdev of `ashift`.
pub fn slot_shift(ashift: u64) -> u32 {
    ashift.clamp(UBERBLOCK_SHIFT_MIN as u64, UBERBLOCK_SHIFT_MAX as u64) as u32
}

/// `VDEV_UBERBLOCK_SIZE`.
pub fn slot_size_bytes(ashift: u64) -> usize {
    1 << slot_shift(ashift)
}

/// `VDEV_UBERBLOCK_COUNT`.
pub fn slot_count(ashift: u64) -> usize {
    RING_SIZE_BYTES >> slot_shift(ashift)
}

/// Why a slot holds no uberblock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UberblockError {
    /// The slot is shorter than an uberblock.
    TooShort { len: usize },
    /// The first word is the magic in neither byte order.
    BadMagic { found: u64 },
    /// The slot's embedded checksum does not verify.
    Checksum(EckError),
}

impl fmt::Display for UberblockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UberblockError::TooShort { len } => {
                write!(f, "a {len}-byte slot cannot hold a 216-byte uberblock")
            }
            UberblockError::BadMagic { found } => {
                write!(f, "uberblock magic {found:#018x} is not 0x00bab10c")
            }
            UberblockError::Checksum(e) => write!(f, "uberblock {e}"),
        }
    }
}

impl std::error::Error for UberblockError {}

/// One OpenZFS `uberblock_t`, every field in host values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uberblock {
    /// The order the writer used: the order of every word here and of the root bp's words.
    pub order: ByteOrder,
    pub version: u64,
    pub txg: u64,
    pub guid_sum: u64,
    /// UTC seconds of the sync.
    pub timestamp: u64,
    /// The MOS objset's `blkptr_t`, raw; read its words in [`Uberblock::order`].
    pub rootbp: [u8; BLKPTR_SIZE_BYTES],
    /// Highest SPA version the writing software supported (0 in old pools).
    pub software_version: u64,
    pub mmp_magic: u64,
    pub mmp_delay: u64,
    pub mmp_config: u64,
    /// Non-zero on a checkpointed uberblock: the txg it had when checkpointed.
    pub checkpoint_txg: u64,
    /// RAIDZ expansion state (top 9 bits) and reflow offset in sectors.
    pub raidz_reflow_info: u64,
}

impl Uberblock {
    /// Decodes the uberblock at the start of `slot` (no checksum check: see
    /// [`decode_slot`]).
    pub fn decode(slot: &[u8]) -> Result<Uberblock, UberblockError> {
        if slot.len() < UBERBLOCK_SIZE_BYTES {
            return Err(UberblockError::TooShort { len: slot.len() });
        }
        let short = |_| UberblockError::TooShort { len: slot.len() };
        let magic = ByteOrder::Little.u64_at(slot, 0).map_err(short)?;
        let order = if magic == UBERBLOCK_MAGIC {
            ByteOrder::Little
        } else if magic == UBERBLOCK_MAGIC.swap_bytes() {
            ByteOrder::Big
        } else {
            return Err(UberblockError::BadMagic { found: magic });
        };
        let w = |offset: usize| order.u64_at(slot, offset).map_err(short);
        let mut rootbp = [0u8; BLKPTR_SIZE_BYTES];
        rootbp.copy_from_slice(&slot[40..40 + BLKPTR_SIZE_BYTES]);
        Ok(Uberblock {
            order,
            version: w(8)?,
            txg: w(16)?,
            guid_sum: w(24)?,
            timestamp: w(32)?,
            rootbp,
            software_version: w(168)?,
            mmp_magic: w(176)?,
            mmp_delay: w(184)?,
            mmp_config: w(192)?,
            checkpoint_txg: w(200)?,
            raidz_reflow_info: w(208)?,
        })
    }

    /// `MMP_VALID`: written by MMP-aware software.
    pub fn mmp_valid(&self) -> bool {
        self.mmp_magic == MMP_MAGIC
    }

    /// `MMP_SEQ(ub)` when `MMP_SEQ_VALID`.
    pub fn mmp_seq(&self) -> Option<u16> {
        (self.mmp_valid() && self.mmp_config & MMP_SEQ_VALID_BIT != 0)
            .then_some(((self.mmp_config >> 32) & 0xffff) as u16)
    }

    /// `MMP_INTERVAL(ub)` (ms) when valid.
    pub fn mmp_write_interval_ms(&self) -> Option<u32> {
        (self.mmp_valid() && self.mmp_config & MMP_INTERVAL_VALID_BIT != 0)
            .then_some(((self.mmp_config >> 8) & 0xff_ffff) as u32)
    }

    /// `MMP_FAIL_INT(ub)` when valid.
    pub fn mmp_fail_intervals(&self) -> Option<u16> {
        (self.mmp_valid() && self.mmp_config & MMP_FAIL_INT_VALID_BIT != 0)
            .then_some((self.mmp_config >> 48) as u16)
    }

    /// `RRSS_GET_STATE`.
    pub fn raidz_reflow_state(&self) -> u64 {
        self.raidz_reflow_info >> 55
    }

    /// `RRSS_GET_OFFSET`, in bytes.
    pub fn raidz_reflow_offset_bytes(&self) -> u64 {
        (self.raidz_reflow_info & ((1 << 55) - 1)) << 9
    }

    /// `vdev_uberblock_compare`: txg, then timestamp, then MMP sequence.
    pub fn compare(&self, other: &Uberblock) -> Ordering {
        self.txg
            .cmp(&other.txg)
            .then(self.timestamp.cmp(&other.timestamp))
            .then(
                self.mmp_seq()
                    .unwrap_or(0)
                    .cmp(&other.mmp_seq().unwrap_or(0)),
            )
    }
}

/// Decodes one ring slot lying at absolute device offset `offset`: its checksum tail must
/// verify, then its magic.
pub fn decode_slot(slot: &[u8], offset: u64) -> Result<Uberblock, UberblockError> {
    if slot.len() < UBERBLOCK_SIZE_BYTES + label::ECK_SIZE_BYTES {
        return Err(UberblockError::TooShort { len: slot.len() });
    }
    label::verify_label_eck(slot, offset).map_err(UberblockError::Checksum)?;
    Uberblock::decode(slot)
}

/// Every valid uberblock of a ring read at absolute device offset `ring_offset`, with its
/// slot number, for a top-level vdev of `ashift`.
pub fn ring_uberblocks(ring: &[u8], ring_offset: u64, ashift: u64) -> Vec<(usize, Uberblock)> {
    let size = slot_size_bytes(ashift);
    ring.chunks_exact(size)
        .take(slot_count(ashift))
        .enumerate()
        .filter_map(|(n, slot)| {
            decode_slot(slot, ring_offset + (n * size) as u64)
                .ok()
                .map(|ub| (n, ub))
        })
        .collect()
}

/// The ashift a label's config gives its ring (`vdev_tree.ashift`, else 9 as zdb assumes).
pub fn config_ashift(config: &crate::nvpair_xdr::XdrNvList) -> u64 {
    config
        .get_nvlist("vdev_tree")
        .and_then(|tree| tree.get_u64("ashift"))
        .unwrap_or(9)
}

/// The best uberblock among `labels`' rings (`vdev_uberblock_load` over one device).
pub fn best_uberblock<'a>(
    labels: impl IntoIterator<Item = &'a Label>,
    ashift: u64,
) -> Option<Uberblock> {
    let mut best: Option<Uberblock> = None;
    for label in labels {
        for (_, ub) in ring_uberblocks(&label.ring, label.ring_offset(), ashift) {
            if best
                .as_ref()
                .is_none_or(|b| ub.compare(b) == Ordering::Greater)
            {
                best = Some(ub);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(order: ByteOrder, txg: u64, timestamp: u64, mmp: Option<u16>) -> Vec<u8> {
        let mut s = vec![0u8; 1024];
        let words = [UBERBLOCK_MAGIC, 5000, txg, 7, timestamp];
        for (i, w) in words.iter().enumerate() {
            order.put_u64(&mut s, 8 * i, *w).unwrap();
        }
        if let Some(seq) = mmp {
            order.put_u64(&mut s, 176, MMP_MAGIC).unwrap();
            order
                .put_u64(&mut s, 192, ((seq as u64) << 32) | MMP_SEQ_VALID_BIT)
                .unwrap();
        }
        s
    }

    // Why: OpenZFS picks the uberblock by txg, then timestamp, then MMP sequence; picking
    // by txg alone opens an older sync when two hosts raced on an MMP pool.
    #[test]
    fn compare_is_txg_then_timestamp_then_mmp_seq() {
        let ub = |txg, ts, seq| Uberblock::decode(&slot(ByteOrder::Little, txg, ts, seq)).unwrap();
        assert_eq!(ub(5, 1, None).compare(&ub(4, 9, None)), Ordering::Greater);
        assert_eq!(ub(5, 1, None).compare(&ub(5, 2, None)), Ordering::Less);
        assert_eq!(
            ub(5, 2, Some(3)).compare(&ub(5, 2, None)),
            Ordering::Greater
        );
        assert_eq!(
            ub(5, 2, Some(3)).compare(&ub(5, 2, Some(3))),
            Ordering::Equal
        );
    }

    // Why: the magic decides the order of every word; a big-endian (SPARC) pool must decode
    // to the same values as a little-endian one.
    #[test]
    fn either_byte_order_decodes_and_records_its_order() {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let ub = Uberblock::decode(&slot(order, 42, 1_700_000_000, Some(9))).unwrap();
            assert_eq!(
                (ub.order, ub.txg, ub.version, ub.guid_sum),
                (order, 42, 5000, 7)
            );
            assert_eq!(ub.mmp_seq(), Some(9));
        }
        assert_eq!(
            Uberblock::decode(&[0u8; 300]),
            Err(UberblockError::BadMagic { found: 0 })
        );
        assert_eq!(
            Uberblock::decode(&[0u8; 10]),
            Err(UberblockError::TooShort { len: 10 })
        );
    }

    // Why: golden vector — slot 14 of label 0 of OpenZFS's compression/testpool_zstd
    // fixture (little-endian, written by OpenZFS 2.0), whose values `zdb -lu` prints as
    // version 5000, txg 782, guid_sum 12154918636128069502, timestamp 1621447801.
    #[test]
    fn golden_testpool_zstd_slot_decodes_as_zdb_prints_it() {
        let mut slot = vec![0u8; 1024];
        let bytes: [u8; 48] = [
            0x0c, 0xb1, 0xba, 0x00, 0, 0, 0, 0, 0x88, 0x13, 0, 0, 0, 0, 0, 0, //
            0x0e, 0x03, 0, 0, 0, 0, 0, 0, 0x7e, 0x67, 0x30, 0x9c, 0x19, 0xf2, 0xae, 0xa8, //
            0x79, 0x54, 0xa5, 0x60, 0, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0,
        ];
        slot[..48].copy_from_slice(&bytes);
        slot[168..180].copy_from_slice(&[0x88, 0x13, 0, 0, 0, 0, 0, 0, 0x11, 0xea, 0x1c, 0xa1]);
        let ub = Uberblock::decode(&slot).unwrap();
        assert_eq!(ub.order, ByteOrder::Little);
        assert_eq!(
            (ub.version, ub.txg, ub.guid_sum, ub.timestamp),
            (5000, 782, 12154918636128069502, 1621447801)
        );
        assert_eq!((ub.software_version, ub.mmp_magic), (5000, MMP_MAGIC));
        assert_eq!(
            (ub.mmp_seq(), ub.mmp_delay, ub.checkpoint_txg),
            (None, 0, 0)
        );
        // The root bp starts at byte 40: its first word is DVA[0]'s vdev/asize word.
        assert_eq!(ub.rootbp[0], 0x01);
    }

    // Why: the slot size follows the top-level vdev's ashift (1K..8K); a fixed 1K slot
    // reads garbage on every 4K-sector pool.
    #[test]
    fn slot_geometry_follows_ashift() {
        assert_eq!((slot_size_bytes(9), slot_count(9)), (1024, 128));
        assert_eq!((slot_size_bytes(12), slot_count(12)), (4096, 32));
        assert_eq!((slot_size_bytes(16), slot_count(16)), (8192, 16));
    }

    // Why: a slot is only trusted when its checksum verifies at its own offset.
    #[test]
    fn ring_skips_slots_whose_checksum_fails_and_random_bytes_never_panic() {
        let mut ring = vec![0u8; RING_SIZE_BYTES];
        let base = 128 << 10;
        for (n, txg) in [(3usize, 3u64), (4, 4)] {
            let mut s = slot(ByteOrder::Big, txg, 10, None);
            label::seal_label_eck(&mut s, base + (n as u64) * 1024, ByteOrder::Big).unwrap();
            ring[n * 1024..(n + 1) * 1024].copy_from_slice(&s);
        }
        ring[4 * 1024 + 100] ^= 0xff;
        let found = ring_uberblocks(&ring, base, 9);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].0, found[0].1.txg), (3, 3));
        let mut rng = crate::rand::SeededRng::new(0xbab10c);
        for _ in 0..32 {
            rng.fill(&mut ring);
            let _ = ring_uberblocks(&ring, base, 12);
            let _ = Uberblock::decode(&ring[..300]);
        }
    }
}
