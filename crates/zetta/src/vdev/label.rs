//! Vdev labels: where a device says which pool it belongs to, and where the uberblock ring
//! lives (OpenZFS `vdev_label.c`).
//!
//! Every leaf device carries four 256 KiB labels, two at the front and two at the end, so
//! that a device overwritten at either end still identifies itself. The data region starts
//! after a 3.5 MiB boot reserve:
//!
//! ```text
//! device: | L0 256K | L1 256K | reserve 3.5M | data .............. | L2 256K | L3 256K |
//!         0        256K      512K           4M             size-512K   size-256K   size
//!
//! label:  | reserved 16K | config area 112K                | uberblock ring 128K      |
//!         0              16K                               128K                     256K
//!
//! config area: magic u64 "ZETTACFG" | version u64 | payload_len u64 | txg u64 |
//!              checksum [u64;4] fletcher4 of header bytes 0..32, then the payload | payload (nvlist) ...
//! ```
//!
//! The ring has `128K / max(1K, 1 << ashift)` slots; the uberblock of txg T goes to slot
//! `T % slots` of every label of every leaf. Config updates are two-phase: even labels
//! (L0, L2) first, then after the uberblock the odd ones (L1, L3), so a torn label write
//! always leaves a readable copy.

use crate::io::{BlockDevice, IoError};
use crate::nvlist::NvList;
use crate::types::Txg;

pub const LABEL_SIZE_BYTES: u64 = 256 << 10;
pub const LABEL_COUNT: usize = 4;
pub const DATA_START_BYTES: u64 = 4 << 20;
pub const LABELS_END_SIZE_BYTES: u64 = 2 * LABEL_SIZE_BYTES;
pub const CONFIG_OFFSET_BYTES: u64 = 16 << 10;
pub const CONFIG_SIZE_BYTES: u64 = 112 << 10;
pub const CONFIG_HEADER_BYTES: usize = 64;
pub const RING_OFFSET_BYTES: u64 = 128 << 10;
pub const RING_SIZE_BYTES: u64 = 128 << 10;
pub const CONFIG_MAGIC: u64 = u64::from_le_bytes(*b"ZETTACFG");
pub const LABEL_VERSION: u64 = 1;

/// Byte offset of label `index` on a device of `device_size_bytes`.
pub fn label_offset(index: usize, device_size_bytes: u64) -> u64 {
    assert!(index < LABEL_COUNT);
    if index < 2 {
        index as u64 * LABEL_SIZE_BYTES
    } else {
        device_size_bytes - (LABEL_COUNT - index) as u64 * LABEL_SIZE_BYTES
    }
}

/// Size of the data region of a device (what a leaf vdev can allocate).
pub fn data_size_bytes(device_size_bytes: u64) -> u64 {
    device_size_bytes.saturating_sub(DATA_START_BYTES + LABELS_END_SIZE_BYTES)
}

pub fn uberblock_slot_size_bytes(ashift: u32) -> u64 {
    (1u64 << ashift).max(1024)
}

pub fn uberblock_slot_count(ashift: u32) -> u64 {
    RING_SIZE_BYTES / uberblock_slot_size_bytes(ashift)
}

/// Device offset of the ring slot for `txg` in label `index`.
pub fn uberblock_slot_offset(index: usize, device_size_bytes: u64, ashift: u32, txg: Txg) -> u64 {
    let slot = txg.0 % uberblock_slot_count(ashift);
    label_offset(index, device_size_bytes)
        + RING_OFFSET_BYTES
        + slot * uberblock_slot_size_bytes(ashift)
}

/// Encodes a config area (header + payload), refusing configs that do not fit.
pub fn encode_config(config: &NvList, txg: Txg) -> Result<Vec<u8>, String> {
    let payload = config.encode();
    let total = CONFIG_HEADER_BYTES + payload.len();
    if total as u64 > CONFIG_SIZE_BYTES {
        return Err(format!(
            "pool configuration of {} bytes does not fit in a label",
            payload.len()
        ));
    }
    let mut area = vec![0u8; total.div_ceil(4096) * 4096];
    area[0..8].copy_from_slice(&CONFIG_MAGIC.to_le_bytes());
    area[8..16].copy_from_slice(&LABEL_VERSION.to_le_bytes());
    area[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    area[24..32].copy_from_slice(&txg.0.to_le_bytes());
    let sum = config_checksum(&area[..32], &payload);
    for (i, word) in sum.iter().enumerate() {
        area[32 + i * 8..40 + i * 8].copy_from_slice(&word.to_le_bytes());
    }
    area[CONFIG_HEADER_BYTES..total].copy_from_slice(&payload);
    Ok(area)
}

/// The config checksum covers the header words (magic, version, length, txg) and the payload.
fn config_checksum(header: &[u8], payload: &[u8]) -> [u64; 4] {
    let mut sum = zetta_zcommon::checksum::Fletcher4::new();
    sum.update(header);
    sum.update(payload);
    sum.finish()
}

/// Decodes a config area read from disk; `None` when blank, `Err` when damaged.
pub fn decode_config(area: &[u8]) -> Result<Option<(NvList, Txg)>, String> {
    if area.len() < CONFIG_HEADER_BYTES {
        return Err("label config area truncated".to_string());
    }
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&area[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    if word(0) != CONFIG_MAGIC {
        if area[..CONFIG_HEADER_BYTES].iter().all(|b| *b == 0) {
            return Ok(None);
        }
        return Err("label config magic is wrong".to_string());
    }
    if word(8) != LABEL_VERSION {
        return Err(format!("unsupported label version {}", word(8)));
    }
    let payload_len = word(16);
    if payload_len > CONFIG_SIZE_BYTES - CONFIG_HEADER_BYTES as u64
        || CONFIG_HEADER_BYTES as u64 + payload_len > area.len() as u64
    {
        return Err(format!("label config length {payload_len} is out of range"));
    }
    let payload = &area[CONFIG_HEADER_BYTES..CONFIG_HEADER_BYTES + payload_len as usize];
    let expected = [word(32), word(40), word(48), word(56)];
    if config_checksum(&area[..32], payload) != expected {
        return Err("label config checksum mismatch".to_string());
    }
    let config = NvList::decode(payload).map_err(|e| e.to_string())?;
    Ok(Some((config, Txg(word(24)))))
}

/// Writes the config to the labels named by `indexes` (two-phase commits pass [0, 2] then
/// [1, 3]).
pub fn write_config(
    device: &dyn BlockDevice,
    config: &NvList,
    txg: Txg,
    indexes: &[usize],
) -> Result<(), IoError> {
    let area = encode_config(config, txg).map_err(|reason| IoError::Failed {
        path: device.path(),
        reason,
    })?;
    let size = device.size_bytes();
    for &index in indexes {
        device.write_at(label_offset(index, size) + CONFIG_OFFSET_BYTES, &area)?;
    }
    Ok(())
}

/// Reads every label's config; returns the newest valid one.
pub fn read_config(device: &dyn BlockDevice) -> Option<(NvList, Txg)> {
    let size = device.size_bytes();
    if size < DATA_START_BYTES + LABELS_END_SIZE_BYTES {
        return None;
    }
    let mut best: Option<(NvList, Txg)> = None;
    for index in 0..LABEL_COUNT {
        let mut area = vec![0u8; CONFIG_SIZE_BYTES as usize];
        if device
            .read_at(label_offset(index, size) + CONFIG_OFFSET_BYTES, &mut area)
            .is_err()
        {
            continue;
        }
        if let Ok(Some((config, txg))) = decode_config(&area) {
            if best.as_ref().is_none_or(|(_, best_txg)| txg > *best_txg) {
                best = Some((config, txg));
            }
        }
    }
    best
}

/// Overwrites all four labels with zeros (`zpool labelclear`, and `destroy`).
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
    for index in 0..LABEL_COUNT {
        let ring_offset = label_offset(index, size) + RING_OFFSET_BYTES;
        let mut ring = vec![0u8; RING_SIZE_BYTES as usize];
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

    /// Label geometry is on-disk format: pin the offsets for a 64 MiB device.
    #[test]
    fn golden_label_offsets() {
        let size = 64u64 << 20;
        assert_eq!(label_offset(0, size), 0);
        assert_eq!(label_offset(1, size), 256 << 10);
        assert_eq!(label_offset(2, size), size - (512 << 10));
        assert_eq!(label_offset(3, size), size - (256 << 10));
        assert_eq!(data_size_bytes(size), size - (4 << 20) - (512 << 10));
        assert_eq!(uberblock_slot_count(9), 128);
        assert_eq!(uberblock_slot_count(12), 32);
        assert_eq!(uberblock_slot_count(16), 2);
        assert_eq!(
            uberblock_slot_offset(2, size, 12, Txg(33)),
            size - (512 << 10) + (128 << 10) + 4096
        );
    }

    /// A config area survives a round trip and any single flipped byte is detected.
    #[test]
    fn config_round_trip_and_corruption() {
        let mut config = NvList::new();
        config.set_str("name", "tank").set_u64("guid", 5);
        let area = encode_config(&config, Txg(12)).unwrap();
        let (decoded, txg) = decode_config(&area).unwrap().unwrap();
        assert_eq!((decoded, txg), (config.clone(), Txg(12)));
        for at in 0..CONFIG_HEADER_BYTES + config.encode().len() {
            let mut bad = area.clone();
            bad[at] ^= 0x40;
            assert!(decode_config(&bad).is_err(), "flip at {at} undetected");
        }
        assert_eq!(decode_config(&vec![0u8; 4096]).unwrap(), None);
    }
}
