//! OpenZFS's micro ZAP: a single-block ZAP of string names and one u64 value each.
//!
//! ZFS counterpart: `mzap_phys_t` and `mzap_ent_phys_t` in `include/sys/zap_impl.h`,
//! `module/zfs/zap_micro.c` (`mzap_open`, `mze_find`).
//!
//! ```text
//! 0    mz_block_type (u64) = ZBT_MICRO (2^63 + 3)
//! 8    mz_salt (u64)     16 mz_normflags (u64)     24 pad[5]
//! 64   entry 0, 64 bytes each up to the end of the block:
//!      0 mze_value (u64)   8 mze_cd (u32)   12 pad (u16)   14 mze_name[50] (NUL-terminated;
//!      empty slot if mze_name[0] == 0)
//! ```
//!
//! Integers are in the block's byte order. The object is this one block (512 bytes to
//! 128 KiB).
//!
//! Invariants: never panics on outside bytes; a name without its NUL is an error.

use super::{normalize_key, zap_hash, ZapEntry, ZapError, ZapKey, ZBT_MICRO};
use crate::byteorder::ByteOrder;

pub const MZAP_ENT_LEN: usize = 64;
pub const MZAP_NAME_LEN: usize = MZAP_ENT_LEN - 8 - 4 - 2;
const MZAP_HEADER_LEN: usize = 64;

/// A decoded micro ZAP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicroZap {
    pub salt: u64,
    pub normflags: u64,
    /// The used slots, in slot order (slot number, entry).
    pub slots: Vec<(usize, ZapEntry)>,
}

impl MicroZap {
    pub fn decode(buf: &[u8], order: ByteOrder) -> Result<MicroZap, ZapError> {
        let block_type = order.u64_at(buf, 0)?;
        if block_type != ZBT_MICRO {
            return Err(ZapError::BlockType {
                blkid: 0,
                found: block_type,
            });
        }
        if buf.len() < MZAP_HEADER_LEN || !buf.len().is_multiple_of(MZAP_ENT_LEN) {
            return Err(ZapError::Field {
                field: "micro ZAP block size",
                value: buf.len() as u64,
            });
        }
        let salt = order.u64_at(buf, 8)?;
        let normflags = order.u64_at(buf, 16)?;
        let mut slots = Vec::new();
        for (slot, ent) in buf[MZAP_HEADER_LEN..]
            .chunks_exact(MZAP_ENT_LEN)
            .enumerate()
        {
            let name_field = &ent[14..14 + MZAP_NAME_LEN];
            if name_field[0] == 0 {
                continue;
            }
            let Some(nul) = name_field.iter().position(|&b| b == 0) else {
                return Err(ZapError::Field {
                    field: "mze_name length",
                    value: MZAP_NAME_LEN as u64,
                });
            };
            let key = ZapKey::Name(name_field[..nul].to_vec());
            slots.push((
                slot,
                ZapEntry {
                    hash: zap_hash(
                        salt,
                        0,
                        &normalize_key(normflags, &key).unwrap_or_else(|_| key.clone()),
                    ),
                    key,
                    cd: order.u32_at(ent, 8)?,
                    int_len: 8,
                    values: vec![order.u64_at(ent, 0)?],
                },
            ));
        }
        Ok(MicroZap {
            salt,
            normflags,
            slots,
        })
    }

    pub fn entries(&self) -> Vec<ZapEntry> {
        self.slots.iter().map(|(_, e)| e.clone()).collect()
    }

    /// The entry named `key` (exact match of the stored name).
    pub fn lookup(&self, key: &ZapKey) -> Option<ZapEntry> {
        self.slots
            .iter()
            .find(|(_, e)| &e.key == key)
            .map(|(_, e)| e.clone())
    }
}
