//! Vdev labels as OpenZFS writes them (`vdev_label.c` `vdev_label_init`,
//! `vdev_label_sync`, `vdev_uberblock_sync`): where a device says which pool it belongs to,
//! and where the uberblock ring lives. The layout and the embedded checksum are the part-1
//! reader's (`vdev::openzfs::label`): one layout, written here and read there.
//!
//! Theory. Every leaf device carries four 256 KiB labels, two at the front and two at the
//! end of the device size rounded down to whole labels (`psize`), so that a device
//! overwritten at either end still identifies itself. Allocatable space starts after a
//! 3.5 MiB boot reserve:
//!
//! ```text
//! device: | L0 256K | L1 256K | boot 3.5M | data .............. | L2 256K | L3 256K | tail |
//!         0        256K      512K         4M           psize-512K   psize-256K   psize   size
//!
//! label:  | blank 8K | bootenv 8K | vdev_phys 112K                  | uberblock ring 128K |
//!         0          8K           16K                               128K                  256K
//!
//! bootenv:   | zeros ...                                 | zio_eck_t (verifier = its offset) |
//! vdev_phys: | XDR-packed config nvlist, zeros ...       | zio_eck_t (verifier = its offset) |
//!                                                      8K/112K - 40                     8K/112K
//! ```
//!
//! `zio_eck_t` is `ZEC_MAGIC` then the SHA-256 of the block with the verifier
//! `{device offset of the block, 0, 0, 0}` in place of the checksum words (OpenZFS's
//! `ZIO_CHECKSUM_LABEL`); Zetta writes little-endian. The boot environment block is written
//! as `vdev_label_init` leaves it: zeros with a sealed tail. The blank first 8 KiB are never
//! written (OpenZFS leaves them to boot loaders and disk labels).
//!
//! The ring has `128K / (1 << clamp(ashift, 10, 13))` slots (`spa::openzfs::uberblock`);
//! the uberblock of txg T goes to slot `T % slots` of every label of every leaf. Config
//! updates are two-phase: even labels (L0, L2) first, then after the uberblock the odd ones
//! (L1, L3), so a torn label write always leaves a readable copy; a reader takes the valid
//! Zetta config with the highest `txg`.
//!
//! Invariants: every decoder returns `None` or an error for any bytes, never panics; a
//! config that does not fit the 112 KiB area is refused before anything is written.

use crate::io::{BlockDevice, IoError};
use crate::nvpair_xdr::{self, XdrNvList};
use crate::types::{Guid, Txg};
use crate::vdev::openzfs::label as ozfs;

pub use ozfs::{LABEL_COUNT, LABEL_SIZE_BYTES, RING_SIZE_BYTES};

/// Where allocatable space starts (`VDEV_LABEL_START_SIZE`).
pub const DATA_START_BYTES: u64 = ozfs::LABEL_START_SIZE_BYTES;
/// The two back labels (`VDEV_LABEL_END_SIZE`).
pub const LABELS_END_SIZE_BYTES: u64 = ozfs::LABEL_END_SIZE_BYTES;
/// Offset of the boot environment block and of vdev_phys (the config) in a label.
pub const BOOTENV_OFFSET_BYTES: u64 = ozfs::BOOTENV_OFFSET_BYTES;
pub const CONFIG_OFFSET_BYTES: u64 = ozfs::PHYS_OFFSET_BYTES;
pub const CONFIG_SIZE_BYTES: u64 = ozfs::PHYS_SIZE_BYTES as u64;
pub const RING_OFFSET_BYTES: u64 = ozfs::RING_OFFSET_BYTES;
/// The magic of format-4 (and older) Zetta config areas, recognised only to refuse them.
pub const LEGACY_CONFIG_MAGIC: u64 = u64::from_le_bytes(*b"ZETTACFG");

/// Byte offset of label `index` on a device of `device_size_bytes` (whole labels, as
/// OpenZFS places them). Callers check the device holds four labels (`DEVICE_SIZE_MIN`).
pub fn label_offset(index: usize, device_size_bytes: u64) -> u64 {
    ozfs::label_offset(device_size_bytes, index).unwrap_or(0)
}

/// Size of the data region of a device (what a leaf vdev can allocate).
pub fn data_size_bytes(device_size_bytes: u64) -> u64 {
    ozfs::label_psize(device_size_bytes).saturating_sub(DATA_START_BYTES + LABELS_END_SIZE_BYTES)
}

pub fn uberblock_slot_size_bytes(ashift: u32) -> u64 {
    crate::spa::openzfs::uberblock::slot_size_bytes(u64::from(ashift)) as u64
}

pub fn uberblock_slot_count(ashift: u32) -> u64 {
    crate::spa::openzfs::uberblock::slot_count(u64::from(ashift)) as u64
}

/// Device offset of the ring slot for `txg` in label `index` (`vdev_uberblock_sync`
/// without multihost: slot `txg % count`).
pub fn uberblock_slot_offset(index: usize, device_size_bytes: u64, ashift: u32, txg: Txg) -> u64 {
    let slot = txg.0 % uberblock_slot_count(ashift);
    label_offset(index, device_size_bytes)
        + RING_OFFSET_BYTES
        + slot * uberblock_slot_size_bytes(ashift)
}

/// The boot environment block and vdev_phys of label `index`, as one 120 KiB write:
/// zeros + sealed tail, then the XDR-packed config + sealed tail. Refuses a config that
/// does not fit.
pub fn encode_label_areas(config: &XdrNvList, label_offset_bytes: u64) -> Result<Vec<u8>, String> {
    let packed = nvpair_xdr::pack(config).map_err(|e| e.to_string())?;
    let room = CONFIG_SIZE_BYTES as usize - ozfs::ECK_SIZE_BYTES;
    if packed.len() > room {
        return Err(format!(
            "pool configuration of {} bytes does not fit in a label",
            packed.len()
        ));
    }
    let pad = ozfs::PAD_SIZE_BYTES as usize;
    let mut out = vec![0u8; pad + CONFIG_SIZE_BYTES as usize];
    let (bootenv, phys) = out.split_at_mut(pad);
    phys[..packed.len()].copy_from_slice(&packed);
    let order = crate::byteorder::ByteOrder::Little;
    ozfs::seal_label_eck(bootenv, label_offset_bytes + BOOTENV_OFFSET_BYTES, order)
        .map_err(|e| e.to_string())?;
    ozfs::seal_label_eck(phys, label_offset_bytes + CONFIG_OFFSET_BYTES, order)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Writes `config` (a label config: `spa::config::label_config`) to the labels named by
/// `indexes` (two-phase commits pass [0, 2] then [1, 3]).
pub fn write_config(
    device: &dyn BlockDevice,
    config: &XdrNvList,
    indexes: &[usize],
) -> Result<(), IoError> {
    let size = device.size_bytes();
    for &index in indexes {
        let offset = label_offset(index, size);
        let areas = encode_label_areas(config, offset).map_err(|reason| IoError::Failed {
            path: device.path(),
            reason,
        })?;
        device.write_at(offset + BOOTENV_OFFSET_BYTES, &areas)?;
    }
    Ok(())
}

/// What a device's labels say.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceLabel {
    /// A pool label this code reads: the newest valid config, by OpenZFS's keys (a pool
    /// OpenZFS wrote last has no `org.zetta:format`; one Zetta wrote has the current one).
    /// Whether the pool is Zetta's to write is decided by its features
    /// (`spa::import::find_pools`), not here.
    Pool { config: XdrNvList, txg: Txg },
    /// A Zetta pool of an older on-disk format (its config area begins "ZETTACFG", or its
    /// config's `org.zetta:format` is outside what this code reads).
    OldZetta {
        name: String,
        pool_guid: u64,
        format: u64,
    },
}

/// `org.zetta:format` of a label or MOS config: which Zetta format wrote the pool; absent
/// in a pool Zetta did not write.
pub const ZETTA_FORMAT_KEY: &str = "org.zetta:format";

/// Reads every label; returns the newest valid pool config (Zetta's current format or
/// OpenZFS's keys alone), or what an older Zetta left. `None` for a blank device or one
/// whose labels name no pool.
pub fn read_config(device: &dyn BlockDevice) -> Option<DeviceLabel> {
    let size = device.size_bytes();
    // A device too small for four labels holds none.
    ozfs::label_offset(size, LABEL_COUNT - 1)?;
    let mut best: Option<(XdrNvList, Txg)> = None;
    let mut old: Option<DeviceLabel> = None;
    for index in 0..LABEL_COUNT {
        let offset = label_offset(index, size);
        let mut area = vec![0u8; CONFIG_SIZE_BYTES as usize];
        if device
            .read_at(offset + CONFIG_OFFSET_BYTES, &mut area)
            .is_err()
        {
            continue;
        }
        let config = match ozfs::decode_vdev_phys(&area, offset + CONFIG_OFFSET_BYTES) {
            Ok(phys) => phys.config,
            Err(_) => {
                if old.is_none() {
                    old = decode_legacy(&area);
                }
                continue;
            }
        };
        // A label that names no pool (a spare's or cache device's, or a blank txg-0
        // one) says nothing about which pool to import.
        if config.get_u64("pool_guid").is_none() || config.get_u64("guid").is_none() {
            continue;
        }
        let supported = match config.get_u64(ZETTA_FORMAT_KEY) {
            None => true,
            Some(format) => (crate::spa::uberblock::FORMAT_VERSION_MIN
                ..=crate::spa::uberblock::FORMAT_VERSION)
                .contains(&format),
        };
        if !supported {
            let format = config.get_u64(ZETTA_FORMAT_KEY).unwrap_or(0);
            if old.is_none() {
                old = Some(DeviceLabel::OldZetta {
                    name: config.get_str("name").unwrap_or("").to_string(),
                    pool_guid: config.get_u64("pool_guid").unwrap_or(0),
                    format,
                });
            }
            continue;
        }
        let txg = Txg(config.get_u64("txg").unwrap_or(0));
        if best.as_ref().is_none_or(|(_, best_txg)| txg > *best_txg) {
            best = Some((config, txg));
        }
    }
    match best {
        Some((config, txg)) => Some(DeviceLabel::Pool { config, txg }),
        None => old,
    }
}

/// The guid of a hot spare's or cache device's label (`state` 3 or 4, no pool:
/// `vdev::config::aux_label`), from the first label that decodes as one; `None` for any
/// other device.
pub fn read_aux_guid(device: &dyn BlockDevice) -> Option<Guid> {
    let size = device.size_bytes();
    ozfs::label_offset(size, LABEL_COUNT - 1)?;
    for index in 0..LABEL_COUNT {
        let offset = label_offset(index, size);
        let mut area = vec![0u8; CONFIG_SIZE_BYTES as usize];
        if device
            .read_at(offset + CONFIG_OFFSET_BYTES, &mut area)
            .is_err()
        {
            continue;
        }
        let Ok(phys) = ozfs::decode_vdev_phys(&area, offset + CONFIG_OFFSET_BYTES) else {
            continue;
        };
        let config = phys.config;
        let state = config.get_u64("state");
        let aux =
            state == Some(ozfs::pool_state::SPARE) || state == Some(ozfs::pool_state::L2CACHE);
        if aux && config.get_u64("pool_guid").is_none() {
            if let Some(guid) = config.get_u64("guid").filter(|&g| g != 0) {
                return Some(Guid(guid));
            }
        }
    }
    None
}

/// A format 1-4 config area: "ZETTACFG", version, payload length, txg, fletcher4, then
/// Zetta's private nvlist. Only the pool's name and guid are taken, to name what is
/// refused; the checksum is not checked (nothing is imported from it).
fn decode_legacy(area: &[u8]) -> Option<DeviceLabel> {
    const HEADER: usize = 64;
    let word = |at: usize| -> Option<u64> {
        let bytes: [u8; 8] = area.get(at..at + 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(bytes))
    };
    if word(0)? != LEGACY_CONFIG_MAGIC {
        return None;
    }
    let len = usize::try_from(word(16)?).ok()?;
    let payload = area.get(HEADER..HEADER.checked_add(len)?)?;
    let config = crate::nvlist::NvList::decode(payload).ok()?;
    Some(DeviceLabel::OldZetta {
        name: config.get_str("name")?.to_string(),
        pool_guid: config.get_u64("pool_guid")?,
        format: config.get_u64("version").unwrap_or(0),
    })
}

/// Overwrites all four labels with zeros (`zpool labelclear`, detach, and the rings of a
/// device joining a new pool: an uberblock_t does not name its pool).
pub fn clear_labels(device: &dyn BlockDevice) -> Result<(), IoError> {
    let size = device.size_bytes();
    let zeros = vec![0u8; LABEL_SIZE_BYTES as usize];
    for index in 0..LABEL_COUNT {
        device.write_at(label_offset(index, size), &zeros)?;
    }
    device.flush()
}

/// Reads every uberblock slot of every label (raw slot bytes with their device offsets).
pub fn read_ring(device: &dyn BlockDevice, ashift: u32) -> Vec<(u64, Vec<u8>)> {
    let size = device.size_bytes();
    let slot_size = uberblock_slot_size_bytes(ashift);
    let mut slots = Vec::new();
    if ozfs::label_offset(size, LABEL_COUNT - 1).is_none() {
        return slots;
    }
    for index in 0..LABEL_COUNT {
        let ring_offset = label_offset(index, size) + RING_OFFSET_BYTES;
        let mut ring = vec![0u8; RING_SIZE_BYTES];
        if device.read_at(ring_offset, &mut ring).is_err() {
            continue;
        }
        for (slot, bytes) in ring.chunks(slot_size as usize).enumerate() {
            slots.push((ring_offset + slot as u64 * slot_size, bytes.to_vec()));
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;
    use crate::nvpair_xdr::XdrValue;

    // Why: label geometry is on-disk format and must be OpenZFS's: whole-label rounding
    // of the device size, 4 MiB data start, ring slots of 1 << clamp(ashift, 10, 13).
    #[test]
    fn golden_label_offsets() {
        let size = (64u64 << 20) + 1000;
        let psize = 64u64 << 20;
        assert_eq!(label_offset(0, size), 0);
        assert_eq!(label_offset(1, size), 256 << 10);
        assert_eq!(label_offset(2, size), psize - (512 << 10));
        assert_eq!(label_offset(3, size), psize - (256 << 10));
        assert_eq!(data_size_bytes(size), psize - (4 << 20) - (512 << 10));
        assert_eq!(uberblock_slot_count(9), 128);
        assert_eq!(uberblock_slot_count(12), 32);
        assert_eq!(uberblock_slot_count(13), 16);
        assert_eq!(uberblock_slot_count(16), 16);
        assert_eq!(
            uberblock_slot_offset(2, size, 12, Txg(33)),
            psize - (512 << 10) + (128 << 10) + 4096
        );
    }

    fn sample_config(format: u64, txg: u64) -> XdrNvList {
        let mut config = XdrNvList::new();
        config.add("version", XdrValue::Uint64(5000));
        config.add("name", XdrValue::String(b"tank".to_vec()));
        config.add("state", XdrValue::Uint64(0));
        config.add("txg", XdrValue::Uint64(txg));
        config.add("pool_guid", XdrValue::Uint64(4));
        config.add("guid", XdrValue::Uint64(5));
        config.add(ZETTA_FORMAT_KEY, XdrValue::Uint64(format));
        config
    }

    // Why: a label must be what OpenZFS's reader accepts (sealed vdev_phys at its offset,
    // sealed boot block), and the newest valid label wins while a damaged one is skipped.
    #[test]
    fn labels_round_trip_through_the_openzfs_reader() {
        let device = MemDevice::new("d", 64 << 20);
        let format = crate::spa::uberblock::FORMAT_VERSION;
        write_config(&device, &sample_config(format, 7), &[0, 1, 2, 3]).unwrap();
        write_config(&device, &sample_config(format, 9), &[0, 2]).unwrap();
        let found = read_config(&device).unwrap();
        assert_eq!(
            found,
            DeviceLabel::Pool {
                config: sample_config(format, 9),
                txg: Txg(9)
            }
        );
        let labels = ozfs::read_device(&device).expect("OpenZFS reads it");
        assert_eq!(labels.labels.len(), 4);
        for label in &labels.labels {
            let mut boot = vec![0u8; 8 << 10];
            device
                .read_at(label.offset + BOOTENV_OFFSET_BYTES, &mut boot)
                .unwrap();
            assert!(ozfs::verify_label_eck(&boot, label.offset + BOOTENV_OFFSET_BYTES).is_ok());
        }
        // Tear L0 and L2 (the newer ones): the odd labels' older config remains.
        for index in [0, 2] {
            device
                .write_at(
                    label_offset(index, 64 << 20) + CONFIG_OFFSET_BYTES + 100,
                    &[0xff],
                )
                .unwrap();
        }
        assert!(matches!(
            read_config(&device),
            Some(DeviceLabel::Pool { txg: Txg(7), .. })
        ));
    }

    // Why: format-4 pools (private "ZETTACFG" labels) and configs of unsupported formats
    // must be recognised and named so import can refuse them; a label with OpenZFS's keys
    // alone (what OpenZFS's sync leaves on a Zetta pool, issue 14) is read, and one that
    // names no pool is not.
    #[test]
    fn old_formats_and_foreign_labels_are_told_apart() {
        let device = MemDevice::new("d", 64 << 20);
        write_config(&device, &sample_config(4, 7), &[0, 1, 2, 3]).unwrap();
        assert!(matches!(
            read_config(&device),
            Some(DeviceLabel::OldZetta { format: 4, .. })
        ));
        let mut foreign = sample_config(crate::spa::uberblock::FORMAT_VERSION, 7);
        foreign
            .pairs
            .retain(|p| p.name != ZETTA_FORMAT_KEY.as_bytes());
        write_config(&device, &foreign, &[0, 1, 2, 3]).unwrap();
        assert!(matches!(
            read_config(&device),
            Some(DeviceLabel::Pool { txg: Txg(7), .. })
        ));
        foreign.pairs.retain(|p| p.name != b"pool_guid");
        write_config(&device, &foreign, &[0, 1, 2, 3]).unwrap();
        assert_eq!(read_config(&device), None);
        // A format-4 config area.
        let mut legacy = crate::nvlist::NvList::new();
        legacy
            .set_str("name", "old")
            .set_u64("pool_guid", 77)
            .set_u64("version", 4);
        let payload = legacy.encode();
        let mut area = vec![0u8; 64 + payload.len()];
        area[0..8].copy_from_slice(b"ZETTACFG");
        area[8] = 1;
        area[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        area[64..].copy_from_slice(&payload);
        device.write_at(CONFIG_OFFSET_BYTES, &area).unwrap();
        assert_eq!(
            read_config(&device),
            Some(DeviceLabel::OldZetta {
                name: "old".to_string(),
                pool_guid: 77,
                format: 4
            })
        );
    }

    // Why: label bytes come from any device handed to import; none may panic the reader.
    #[test]
    fn hostile_label_bytes_never_panic() {
        let device = MemDevice::new("d", 64 << 20);
        let mut rng = crate::rand::SeededRng::new(0x5eed);
        for round in 0..32u64 {
            let mut area = vec![0u8; 4096];
            rng.fill(&mut area);
            if round % 2 == 0 {
                area[0..8].copy_from_slice(b"ZETTACFG");
            }
            device.write_at(CONFIG_OFFSET_BYTES, &area).unwrap();
            let _ = read_config(&device);
        }
    }
}
