//! OpenZFS vdev labels as they lie on a real device (OpenZFS `include/sys/vdev_impl.h`
//! `vdev_label_t`, `module/zfs/vdev_label.c` `vdev_label_offset` / `vdev_label_read_config`,
//! `lib/libzutil/zutil_import.c` `zpool_read_label`, and the embedded `zio_eck_t` checksum of
//! `module/zfs/zio_checksum.c`).
//!
//! Theory. Every leaf device carries four identical 256 KiB labels, two at the front and two
//! at the end, so that a device overwritten at either end still says which pool it belongs
//! to. The device size is first rounded down to a multiple of the label size (a 66,985,984
//! byte file is treated as 66,846,720 bytes), so the back labels sit at whole-label offsets:
//!
//! ```text
//! device: | L0 256K | L1 256K | boot 3.5M | allocatable ...... | L2 256K | L3 256K | tail < 256K
//!         0        256K      512K         4M          psize-512K   psize-256K    psize
//!
//! label:  | blank 8K | bootenv 8K | vdev_phys 112K                 | uberblock ring 128K   |
//!         0          8K           16K                              128K                    256K
//!
//! vdev_phys: | XDR-packed nvlist (the config), zero filled ...  | zio_eck_t 40 bytes |
//!            0                                                  112K-40             112K
//!
//! zio_eck_t: | zec_magic u64 = 0x0210da7ab10c7a11 | zec_cksum u64[4] |
//! ```
//!
//! The embedded checksum (OpenZFS's `ZIO_CHECKSUM_LABEL`) is SHA-256 over the whole block
//! with `zec_cksum` replaced by the *verifier* `{offset, 0, 0, 0}`, `offset` being the block's
//! absolute byte offset on the device: a label copied to another place does not verify. The
//! magic records the writer's byte order (it reads as `0x117a0c10aba70d21` on the other
//! order); the verifier words and the stored checksum words are in that order, while the
//! computed words are the SHA-256 digest read as four big-endian u64 (OpenZFS's historic
//! SHA-256 word order). Uberblock slots use the same tail (see `spa::openzfs::uberblock`).
//!
//! A label is usable when its vdev_phys checksum verifies and its nvlist unpacks; the
//! kernel reads labels through a checksummed I/O and so ignores a damaged one, as we do.
//! `zpool_read_label` then takes the first label (L0 first) whose config has a non-zero
//! `guid`, a `state` of at most `POOL_STATE_L2CACHE`, and, unless the device is a spare or
//! cache device, a non-zero `txg`.
//!
//! Invariants: nothing here writes a device; every decoder returns a typed error and never
//! panics, whatever the bytes.

use crate::byteorder::ByteOrder;
use crate::io::BlockDevice;
use crate::nvpair_xdr::{self, XdrError, XdrNvList};
use sha2::Digest;
use std::fmt;

/// `sizeof (vdev_label_t)`.
pub const LABEL_SIZE_BYTES: u64 = 256 << 10;
/// `VDEV_LABELS`.
pub const LABEL_COUNT: usize = 4;
/// `VDEV_PAD_SIZE`: the blank area and the boot environment block are each this long.
pub const PAD_SIZE_BYTES: u64 = 8 << 10;
/// Offset of `vl_be` (the boot environment block) in a label.
pub const BOOTENV_OFFSET_BYTES: u64 = PAD_SIZE_BYTES;
/// Offset of `vl_vdev_phys` in a label (`VDEV_SKIP_SIZE`).
pub const PHYS_OFFSET_BYTES: u64 = 2 * PAD_SIZE_BYTES;
/// `VDEV_PHYS_SIZE`.
pub const PHYS_SIZE_BYTES: usize = 112 << 10;
/// Offset of `vl_uberblock` in a label.
pub const RING_OFFSET_BYTES: u64 = 128 << 10;
/// `VDEV_UBERBLOCK_RING`.
pub const RING_SIZE_BYTES: usize = 128 << 10;
/// `VDEV_BOOT_OFFSET`, `VDEV_BOOT_SIZE`: the boot area after the two front labels.
pub const BOOT_OFFSET_BYTES: u64 = 2 * LABEL_SIZE_BYTES;
pub const BOOT_SIZE_BYTES: u64 = 7 << 19;
/// `VDEV_LABEL_START_SIZE`: where allocatable space begins on a leaf.
pub const LABEL_START_SIZE_BYTES: u64 = 2 * LABEL_SIZE_BYTES + BOOT_SIZE_BYTES;
/// `VDEV_LABEL_END_SIZE`.
pub const LABEL_END_SIZE_BYTES: u64 = 2 * LABEL_SIZE_BYTES;
/// `ZEC_MAGIC`, the first word of an embedded checksum tail.
pub const ZEC_MAGIC: u64 = 0x0210_da7a_b10c_7a11;
/// `sizeof (zio_eck_t)`.
pub const ECK_SIZE_BYTES: usize = 40;

/// `pool_state_t` values a label's `state` may hold.
pub mod pool_state {
    pub const ACTIVE: u64 = 0;
    pub const EXPORTED: u64 = 1;
    pub const DESTROYED: u64 = 2;
    pub const SPARE: u64 = 3;
    pub const L2CACHE: u64 = 4;
}

/// The size OpenZFS lays labels out in: the device size rounded down to whole labels.
pub fn label_psize(device_size_bytes: u64) -> u64 {
    device_size_bytes - device_size_bytes % LABEL_SIZE_BYTES
}

/// Absolute offset of label `index` (0..4) on a device of `device_size_bytes`, or `None`
/// when the device cannot hold four labels.
pub fn label_offset(device_size_bytes: u64, index: usize) -> Option<u64> {
    let psize = label_psize(device_size_bytes);
    if index >= LABEL_COUNT || psize < LABEL_COUNT as u64 * LABEL_SIZE_BYTES {
        return None;
    }
    let l = index as u64;
    Some(if index < LABEL_COUNT / 2 {
        l * LABEL_SIZE_BYTES
    } else {
        psize - (LABEL_COUNT as u64 - l) * LABEL_SIZE_BYTES
    })
}

/// Why an embedded checksum tail does not verify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EckError {
    /// The block is shorter than its tail.
    TooShort { len: usize },
    /// `zec_magic` is ZEC_MAGIC in neither byte order (as read little-endian).
    BadMagic { found: u64 },
    /// The stored checksum is not the SHA-256 of the block with its verifier.
    Mismatch {
        stored: [u64; 4],
        computed: [u64; 4],
    },
}

impl fmt::Display for EckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EckError::TooShort { len } => {
                write!(f, "a {len}-byte block cannot hold a 40-byte checksum tail")
            }
            EckError::BadMagic { found } => {
                write!(f, "checksum tail magic {found:#018x} is not 0x0210da7ab10c7a11")
            }
            EckError::Mismatch { stored, computed } => write!(
                f,
                "label checksum mismatch: stored {:016x}:{:016x}:{:016x}:{:016x}, computed {:016x}:{:016x}:{:016x}:{:016x}",
                stored[0], stored[1], stored[2], stored[3],
                computed[0], computed[1], computed[2], computed[3]
            ),
        }
    }
}

impl std::error::Error for EckError {}

/// The byte order the tail's magic records, if it is a tail at all.
pub fn eck_order(block: &[u8]) -> Result<ByteOrder, EckError> {
    let len = block.len();
    let tail = len
        .checked_sub(ECK_SIZE_BYTES)
        .ok_or(EckError::TooShort { len })?;
    let magic = ByteOrder::Little
        .u64_at(block, tail)
        .map_err(|_| EckError::TooShort { len })?;
    if magic == ZEC_MAGIC {
        Ok(ByteOrder::Little)
    } else if magic == ZEC_MAGIC.swap_bytes() {
        Ok(ByteOrder::Big)
    } else {
        Err(EckError::BadMagic { found: magic })
    }
}

/// SHA-256 of `block` with its tail's checksum words replaced by the label verifier
/// `{offset, 0, 0, 0}` written in `order`, as OpenZFS's four checksum words.
fn label_sha256(block: &[u8], offset: u64, order: ByteOrder) -> [u64; 4] {
    let cksum_at = block.len() - 32;
    let mut verifier = [0u8; 32];
    let _ = order.put_u64(&mut verifier, 0, offset);
    let mut hasher = sha2::Sha256::new();
    hasher.update(&block[..cksum_at]);
    hasher.update(verifier);
    let digest = hasher.finalize();
    let mut words = [0u64; 4];
    for (i, word) in words.iter_mut().enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(&digest[8 * i..8 * i + 8]);
        *word = u64::from_be_bytes(b);
    }
    words
}

/// Verifies the embedded label checksum of `block` (a vdev_phys or an uberblock slot)
/// that lies at absolute device offset `offset`; returns the writer's byte order.
pub fn verify_label_eck(block: &[u8], offset: u64) -> Result<ByteOrder, EckError> {
    let order = eck_order(block)?;
    let cksum_at = block.len() - 32;
    let stored = order
        .u64s_at::<4>(block, cksum_at)
        .map_err(|_| EckError::TooShort { len: block.len() })?;
    let computed = label_sha256(block, offset, order);
    if stored == computed {
        Ok(order)
    } else {
        Err(EckError::Mismatch { stored, computed })
    }
}

/// Writes a valid tail into `block` (magic and checksum, in `order`) as OpenZFS would for a
/// block at `offset`: Zetta's label and uberblock writers (`vdev::label`,
/// `spa::uberblock`) seal every block with it.
pub fn seal_label_eck(block: &mut [u8], offset: u64, order: ByteOrder) -> Result<(), EckError> {
    let len = block.len();
    let tail = len
        .checked_sub(ECK_SIZE_BYTES)
        .ok_or(EckError::TooShort { len })?;
    let _ = order.put_u64(block, tail, ZEC_MAGIC);
    let words = label_sha256(block, offset, order);
    for (i, word) in words.iter().enumerate() {
        let _ = order.put_u64(block, tail + 8 + 8 * i, *word);
    }
    Ok(())
}

/// Why one label cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelError {
    /// The device is too small to hold four labels.
    TooSmall { size: u64 },
    /// Reading the device failed.
    Io(String),
    /// The vdev_phys checksum does not verify.
    Checksum(EckError),
    /// The config nvlist does not unpack.
    Nvlist(XdrError),
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelError::TooSmall { size } => {
                write!(f, "a {size}-byte device cannot hold four 256 KiB labels")
            }
            LabelError::Io(e) => write!(f, "cannot read label: {e}"),
            LabelError::Checksum(e) => write!(f, "{e}"),
            LabelError::Nvlist(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LabelError {}

/// A decoded vdev_phys: the label's config and the byte order of its checksum tail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VdevPhys {
    pub config: XdrNvList,
    pub order: ByteOrder,
}

/// Decodes a 112 KiB vdev_phys found at absolute device offset `offset`.
pub fn decode_vdev_phys(phys: &[u8], offset: u64) -> Result<VdevPhys, LabelError> {
    let order = verify_label_eck(phys, offset).map_err(LabelError::Checksum)?;
    let nvlist = &phys[..phys.len() - ECK_SIZE_BYTES];
    let unpacked = nvpair_xdr::unpack(nvlist).map_err(LabelError::Nvlist)?;
    Ok(VdevPhys {
        config: unpacked.list,
        order,
    })
}

/// One whole label as read from a device.
#[derive(Clone, Debug)]
pub struct Label {
    /// 0..4.
    pub index: usize,
    /// Absolute byte offset of the label on the device.
    pub offset: u64,
    /// The config, or why it cannot be used.
    pub phys: Result<VdevPhys, LabelError>,
    /// The 128 KiB uberblock ring, as read (decoded by `spa::openzfs::uberblock`).
    pub ring: Vec<u8>,
}

impl Label {
    /// Absolute device offset of the ring.
    pub fn ring_offset(&self) -> u64 {
        self.offset + RING_OFFSET_BYTES
    }
}

/// Reads and decodes label `index` of `device`.
pub fn read_label(device: &dyn BlockDevice, index: usize) -> Result<Label, LabelError> {
    let size = device.size_bytes();
    let offset = label_offset(size, index).ok_or(LabelError::TooSmall { size })?;
    let mut bytes = vec![0u8; LABEL_SIZE_BYTES as usize];
    device
        .read_at(offset, &mut bytes)
        .map_err(|e| LabelError::Io(e.to_string()))?;
    let phys_start = PHYS_OFFSET_BYTES as usize;
    let phys = decode_vdev_phys(
        &bytes[phys_start..phys_start + PHYS_SIZE_BYTES],
        offset + PHYS_OFFSET_BYTES,
    );
    let ring = bytes.split_off(RING_OFFSET_BYTES as usize);
    Ok(Label {
        index,
        offset,
        phys,
        ring,
    })
}

/// The four labels of a device, each read or failed on its own.
pub fn read_labels(device: &dyn BlockDevice) -> Vec<Result<Label, LabelError>> {
    (0..LABEL_COUNT).map(|l| read_label(device, l)).collect()
}

/// Whether a label config passes `zpool_read_label`'s checks.
pub fn config_is_usable(config: &XdrNvList) -> bool {
    let Some(guid) = config.get_u64("guid") else {
        return false;
    };
    let Some(state) = config.get_u64("state") else {
        return false;
    };
    if guid == 0 || state > pool_state::L2CACHE {
        return false;
    }
    if state == pool_state::SPARE || state == pool_state::L2CACHE {
        return true;
    }
    matches!(config.get_u64("txg"), Some(txg) if txg != 0)
}

/// What a device's labels say, as `zpool_read_label` returns it.
#[derive(Clone, Debug)]
pub struct DeviceLabels {
    /// The config of the first usable label.
    pub config: XdrNvList,
    /// Which label it came from.
    pub index: usize,
    /// How many labels carry a usable config of the same vdev guid.
    pub valid_labels: usize,
    /// Every label that could be read (for the uberblock rings).
    pub labels: Vec<Label>,
}

/// Reads a device's labels; `None` when no label is usable (not an OpenZFS device, or every
/// label damaged).
pub fn read_device(device: &dyn BlockDevice) -> Option<DeviceLabels> {
    let labels: Vec<Label> = read_labels(device).into_iter().flatten().collect();
    let mut found: Option<(usize, XdrNvList, u64)> = None;
    let mut count = 0;
    for label in &labels {
        let Ok(phys) = &label.phys else {
            continue;
        };
        if !config_is_usable(&phys.config) {
            continue;
        }
        let guid = phys.config.get_u64("guid").unwrap_or(0);
        match &found {
            None => {
                found = Some((label.index, phys.config.clone(), guid));
                count = 1;
            }
            Some((_, _, first)) if *first == guid => count += 1,
            Some(_) => {}
        }
    }
    let (index, config, _) = found?;
    Some(DeviceLabels {
        config,
        index,
        valid_labels: count,
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: OpenZFS rounds the device size down to whole labels before placing the back
    // two; placing them from the raw size would miss both on any odd-sized device.
    #[test]
    fn label_offsets_round_the_size_down_to_whole_labels() {
        let size = 66_985_984; // zfs-broken-mirror1.dat
        assert_eq!(label_psize(size), 66_846_720);
        assert_eq!(label_offset(size, 0), Some(0));
        assert_eq!(label_offset(size, 1), Some(256 << 10));
        assert_eq!(label_offset(size, 2), Some(66_846_720 - (512 << 10)));
        assert_eq!(label_offset(size, 3), Some(66_846_720 - (256 << 10)));
        assert_eq!(label_offset(size, 4), None);
        assert_eq!(label_offset(1 << 20, 3), Some(3 << 18));
        assert_eq!(label_offset((1 << 20) - 1, 0), None);
    }

    // Why: the tail must verify in either byte order and fail when the block moves or a
    // byte changes; a checksum computed over the stored words instead of the verifier
    // would accept nothing OpenZFS wrote.
    #[test]
    fn sealed_tails_verify_in_both_orders_and_only_at_their_offset() {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let mut block = vec![0x5au8; 1024];
            seal_label_eck(&mut block, 0x2_0000, order).unwrap();
            assert_eq!(verify_label_eck(&block, 0x2_0000), Ok(order));
            assert!(matches!(
                verify_label_eck(&block, 0x4_0000),
                Err(EckError::Mismatch { .. })
            ));
            block[7] ^= 1;
            assert!(matches!(
                verify_label_eck(&block, 0x2_0000),
                Err(EckError::Mismatch { .. })
            ));
        }
        assert_eq!(
            verify_label_eck(&[0u8; 39], 0),
            Err(EckError::TooShort { len: 39 })
        );
        assert_eq!(
            verify_label_eck(&[0u8; 64], 0),
            Err(EckError::BadMagic { found: 0 })
        );
    }

    // Why: labels come from any device handed to `zpool import -d`; no byte pattern may
    // panic the decoder.
    #[test]
    fn random_vdev_phys_bytes_never_panic() {
        let mut rng = crate::rand::SeededRng::new(0x1abe1);
        for round in 0..64 {
            let mut phys = vec![0u8; PHYS_SIZE_BYTES];
            let len = if round % 2 == 0 { 256 } else { 4096 };
            rng.fill(&mut phys[..len]);
            if round % 4 == 1 {
                phys[0] = 1; // XDR encoding byte, so the nvlist decoder runs
                phys[1] = 1;
            }
            seal_label_eck(&mut phys, 16 << 10, ByteOrder::Little).unwrap();
            let _ = decode_vdev_phys(&phys, 16 << 10);
            let _ = decode_vdev_phys(&phys[..100], 16 << 10);
        }
    }
}

/// One fuzz input through the label decoders (the fuzz target `openzfs_label` and a unit
/// test call it): byte 0 picks the order, whether to seal the bytes with a valid label
/// checksum first, and the ring's ashift; the rest is a `vdev_phys_t` (then its nvlist and
/// the config checks) and an uberblock ring (every slot, sealed or not). Nothing may panic;
/// a sealed block verifies; a decoded uberblock's order is its magic's.
pub fn fuzz_check(data: &[u8]) {
    use crate::spa::openzfs::uberblock::{
        config_ashift, decode_slot, ring_uberblocks, slot_size_bytes, Uberblock,
    };
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let order = if head & 1 == 1 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let offset = u64::from(head) << 12;
    let mut block = rest.to_vec();
    let sealed = head & 2 != 0 && seal_label_eck(&mut block, offset, order).is_ok();
    if sealed {
        assert_eq!(verify_label_eck(&block, offset), Ok(order), "sealed label");
    }
    if let Ok(phys) = decode_vdev_phys(&block, offset) {
        let _ = config_is_usable(&phys.config);
        let _ = config_ashift(&phys.config);
    }
    let _ = eck_order(&block);
    let ashift = 9 + u64::from(head >> 2) % 8;
    let size = slot_size_bytes(ashift);
    let mut ring = rest.to_vec();
    if sealed {
        for (n, slot) in ring.chunks_exact_mut(size).enumerate() {
            let _ = seal_label_eck(slot, offset + (n * size) as u64, order);
        }
    }
    let ubs = ring_uberblocks(&ring, offset, ashift);
    for (_, ub) in &ubs {
        let _ = (ub.mmp_valid(), ub.mmp_seq(), ub.mmp_write_interval_ms());
        let _ = (ub.mmp_fail_intervals(), ub.raidz_reflow_offset_bytes());
    }
    for pair in ubs.windows(2) {
        let _ = pair[0].1.compare(&pair[1].1);
    }
    if let Ok(ub) = Uberblock::decode(rest) {
        let magic = ub.order.u64_at(rest, 0).unwrap_or(0);
        assert_eq!(magic, 0x00ba_b10c, "uberblock magic in its order");
    }
    let _ = decode_slot(rest, offset);
}

#[cfg(test)]
mod fuzz_tests {
    use super::*;

    // Why: the fuzz target's check must hold on seeded inputs in the default suite: random
    // labels and rings, sealed and not, some with an XDR nvlist header or uberblock magic.
    #[test]
    fn fuzz_check_holds_on_random_inputs() {
        let mut rng = crate::rand::SeededRng::new(0x1abe);
        for i in 0..3000u64 {
            let len = [0, 39, 40, 1024, 4096, 8192][(i % 6) as usize] + (i % 2) as usize;
            let mut input = vec![0u8; 1 + len];
            rng.fill(&mut input);
            input[0] |= 2;
            if len > 16 && i % 3 == 0 {
                input[1..5].copy_from_slice(&[1, 1, 0, 0]);
            }
            if len > 300 && i % 3 == 1 {
                // Uberblock magic at the front of each 1 KiB slot.
                for at in (1..len - 8).step_by(1024) {
                    input[at..at + 8].copy_from_slice(&0x00ba_b10cu64.to_le_bytes());
                }
            }
            fuzz_check(&input);
        }
    }
}
