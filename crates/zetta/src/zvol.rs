//! Volumes (OpenZFS `zvol.c` and the zvol parts of `zfs_ioctl.c`): a dataset whose object
//! set is a flat array of bytes instead of a POSIX tree.
//!
//! Theory. A volume is a head dataset like a filesystem (DSL dir, dataset, snapshots,
//! clones, rollback, destroy, rename and send all work on it unchanged); only its object
//! set differs, as OpenZFS lays it out:
//!
//! ```text
//! objset_phys_t.os_type = DMU_OST_ZVOL (3)
//! object 1  ZVOL_OBJ      DMU_OT_ZVOL (23)       the data, one block of `volblocksize`
//!                                                each (fixed: it never grows), holes
//!                                                where nothing was written
//! object 2  ZVOL_ZAP_OBJ  DMU_OT_ZVOL_PROP (24)  ZAP: "size" -> [volsize] (one u64)
//! ```
//!
//! Invariants: `volsize` is a non-zero multiple of `volblocksize`; object 1's Zetta size
//! field equals `volsize` (so a read past the end of the data returns zeros up to it);
//! nothing is ever written at or past `volsize` (reads and writes beyond it are refused
//! with `SpaError::Invalid`, which the NBD server maps to EINVAL). Shrinking frees the
//! blocks past the new size in the same txg as the new "size". The block size of
//! object 1 is `volblocksize`, read back from its dnode: the property has no other
//! storage. Data goes through the object set's write path, so the pool's zio pipeline
//! (checksums, compression, copies, self-healing reads) applies as for files.
//!
//! Durability (OpenZFS `zvol_log_write`, `zvol_log_truncate`, `zvol_replay_*`): every
//! write and free is logged in the volume's intent log as it is made — a write by position
//! only, its bytes copied from object 1 when the log is committed (`WR_NEED_COPY`), a free
//! as a punch record — so `volume_commit` (the NBD server's FLUSH and FUA) writes a few log
//! blocks instead of committing the txg. At import the pool replays a volume's log through
//! `replay`, which applies the records to object 1 (and refuses any record that is not a
//! volume's or lies past its end). Records use the ZPL's write and punch encodings
//! (OpenZFS's volumes share `lr_write_t` and `lr_truncate_t` with the ZPL too).
//!
//! Locking: every function here takes `&mut Spa` (the caller holds the pool exclusively,
//! as for any change) or `&Spa` for reads of a snapshot; there is no lock of its own.

use crate::dmu::{default_data_props, object_type, IoCtx, ObjectSet, ObjsetType};
use crate::dsl::no_such_dataset;
use crate::spa::{dataset_policy, Spa, SpaError};
use crate::types::{ObjectId, Txg};
use crate::zap;
use crate::zil::{self, Itx, ReplayReport, WriteItx, ZilError};
use crate::zpl::zfs_log::{LogRecord, Lr, WRITE_CHUNK_MAX_BYTES};
use crate::zpl::Timespec;

/// Object 1 of a volume: its data (`ZVOL_OBJ`).
pub const ZVOL_OBJ: ObjectId = ObjectId(1);
/// Object 2 of a volume: its properties ZAP (`ZVOL_ZAP_OBJ`).
pub const ZVOL_ZAP_OBJ: ObjectId = ObjectId(2);
/// `DMU_OT_ZVOL_PROP`.
pub const DMU_OT_ZVOL_PROP: u8 = 24;
/// `volblocksize` when none is given (`ZVOL_DEFAULT_BLOCKSIZE`, 16K since OpenZFS 2.2).
pub const ZVOL_DEFAULT_BLOCKSIZE: u64 = 16 << 10;
/// The name of the size entry in object 2.
const SIZE_ENTRY: &str = "size";

/// A volume's shape: `volsize` and `volblocksize` in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VolumeInfo {
    pub size_bytes: u64,
    pub block_size_bytes: u64,
}

/// One raidz top-level vdev's shape, for `volsize_to_reservation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaidzShape {
    pub children: u64,
    pub parity: u64,
    pub ashift: u64,
}

/// `vdev_raidz_asize` as libzfs has it: what one block of `size` bytes allocates.
fn raidz_asize(shape: RaidzShape, size: u64) -> u64 {
    let data = shape.children.saturating_sub(shape.parity).max(1);
    let mut asize = ((size.max(1) - 1) >> shape.ashift) + 1;
    asize += shape.parity * asize.div_ceil(data);
    asize.next_multiple_of(shape.parity + 1) << shape.ashift
}

/// libzfs `volsize_from_vdevs`: one copy of the data on the least space-efficient raidz
/// top-level vdev, scaled to what the pool's 128K-based accounting charges; plain blocks
/// when there is no raidz.
fn volsize_from_vdevs(raidz: &[RaidzShape], blocks: u64, block_size: u64) -> u64 {
    const OLD_MAX_BLOCK: u64 = 128 << 10;
    let mut worst = 0u64;
    for &shape in raidz {
        if shape.children <= shape.parity || shape.ashift > 24 {
            continue;
        }
        let typical = raidz_asize(shape, OLD_MAX_BLOCK);
        let asize = raidz_asize(shape, block_size);
        let scaled = blocks.saturating_mul(asize) / (typical >> 9).max(1);
        let size = if scaled > u64::MAX / (OLD_MAX_BLOCK >> 9) {
            u64::MAX
        } else {
            scaled * (OLD_MAX_BLOCK >> 9)
        };
        worst = worst.max(size);
    }
    if worst == 0 {
        blocks.saturating_mul(block_size)
    } else {
        worst
    }
}

/// libzfs `zvol_volsize_to_reservation`: the `refreservation` a non-sparse volume gets —
/// every data block (times `copies`, on the worst raidz) plus its indirect blocks and the
/// meta-dnode's levels, each counted as a full 128K indirect block.
pub fn volsize_to_reservation(
    volsize: u64,
    volblocksize: u64,
    copies: u64,
    raidz: &[RaidzShape],
) -> u64 {
    const DNODES_PER_LEVEL: u64 = 1 << (17 - 7);
    let block_size = volblocksize.max(512);
    let mut blocks = volsize / block_size;
    let data = volsize_from_vdevs(raidz, blocks, block_size);
    let mut metadata_blocks = 7u64;
    while blocks > 1 {
        blocks = blocks.div_ceil(DNODES_PER_LEVEL);
        metadata_blocks += blocks;
    }
    let copies = copies.clamp(1, 3);
    metadata_blocks *= (copies + 1).min(3);
    data.saturating_mul(copies)
        .saturating_add(metadata_blocks.saturating_mul(1 << 17))
}

/// Reads a volume's shape from its object set (`None`: not a volume).
fn info_of(os: &ObjectSet, ctx: &IoCtx<'_>) -> Result<Option<VolumeInfo>, SpaError> {
    if os.os_type != ObjsetType::Volume {
        return Ok(None);
    }
    let dnode = os.dnode(ctx, ZVOL_OBJ)?;
    let size = zap::zap_lookup(os, ctx, ZVOL_ZAP_OBJ, SIZE_ENTRY)
        .map_err(crate::dsl::zap_error)?
        .and_then(|words| words.first().copied())
        .ok_or_else(|| SpaError::Corrupt("volume without a size".to_string()))?;
    Ok(Some(VolumeInfo {
        size_bytes: size,
        block_size_bytes: u64::from(dnode.data_block_size_bytes),
    }))
}

impl Spa {
    /// `zfs create -V`: a new volume of `size_bytes` (a non-zero multiple of
    /// `block_size_bytes`, which the caller checked) under an existing parent, its two
    /// objects created in the open txg.
    pub fn create_volume(
        &mut self,
        name: &str,
        size_bytes: u64,
        block_size_bytes: u64,
    ) -> Result<u64, SpaError> {
        let block = u32::try_from(block_size_bytes)
            .ok()
            .filter(|b| b.is_power_of_two() && (512..=(16 << 20)).contains(b))
            .ok_or_else(|| SpaError::Invalid(format!("volume block size {block_size_bytes}")))?;
        if size_bytes == 0 || !size_bytes.is_multiple_of(block_size_bytes) {
            return Err(SpaError::Invalid(format!("volume size {size_bytes}")));
        }
        let dataset = self.create_dataset(name, None, ObjsetType::Volume)?;
        self.with_dataset_object(dataset, |os, ctx| {
            // Its size is the `size` entry of the ZVOL prop ZAP (below); the DMU keeps
            // none, and the block size stays (only ZPL files grow theirs).
            os.create_object_at(ctx, ZVOL_OBJ, object_type::ZVOL, block, 0, 0)?;
            Ok(())
        })?;
        self.with_dataset_object(dataset, |os, ctx| {
            let props = zap::zap_create(os, ctx, DMU_OT_ZVOL_PROP)
                .map_err(|e| crate::dmu::DmuError::Invalid(e.to_string()))?;
            if props != ZVOL_ZAP_OBJ {
                return Err(crate::dmu::DmuError::Invalid(format!(
                    "volume properties landed in object {props}"
                )));
            }
            zap::zap_add(os, ctx, ZVOL_ZAP_OBJ, SIZE_ENTRY, &[size_bytes])
                .map_err(|e| crate::dmu::DmuError::Invalid(e.to_string()))
        })?;
        Ok(dataset)
    }

    /// `zfs receive` of a full volume stream: an empty volume object set, which the
    /// stream's OBJECT and WRITE records fill (objects 1 and 2 included).
    pub fn create_volume_for_receive(&mut self, name: &str) -> Result<u64, SpaError> {
        self.create_dataset(name, None, ObjsetType::Volume)
    }

    /// A head dataset's volume shape, `None` for a filesystem.
    pub fn volume_info(&mut self, name: &str) -> Result<Option<VolumeInfo>, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            // A foreign pool's volumes are recognised, not read yet.
            return if f.view.lookup_dataset(name).is_some() {
                Ok(None)
            } else {
                Err(no_such_dataset(name))
            };
        }
        let dataset = self
            .lookup_dataset(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        if dataset == self.dp.directory.root_dataset {
            return Ok(None);
        }
        self.open_dataset(dataset)?;
        let ctx = io_ctx!(self);
        match self.dp.datasets.get(&dataset) {
            Some(head) => info_of(&head.objset, &ctx),
            None => Ok(None),
        }
    }

    /// Whether a dataset (head or `fs@snap`) is a volume or a volume's snapshot.
    pub fn is_volume(&mut self, name: &str) -> Result<bool, SpaError> {
        if let Some(f) = self.openzfs.clone() {
            return Ok(f.view.is_volume(name.split('@').next().unwrap_or(name)));
        }
        let head = name.split(['@', '#']).next().unwrap_or(name);
        Ok(self.volume_info(head)?.is_some())
    }

    /// A snapshot's volume shape (`None`: a filesystem's snapshot).
    pub fn snapshot_volume_info(&self, name: &str) -> Result<Option<VolumeInfo>, SpaError> {
        if self.openzfs.is_some() {
            return Ok(None);
        }
        let fs = name.split('@').next().unwrap_or(name);
        let (_, object, phys) = self
            .snapshots(fs)?
            .into_iter()
            .find(|(n, _, _)| n == name)
            .ok_or_else(|| no_such_dataset(name))?;
        let ctx = io_ctx!(self);
        let os = ObjectSet::open(&ctx, object, &phys.bp, dataset_policy(default_data_props()))?;
        info_of(&os, &ctx)
    }

    /// The volume's shape, or the refusal for a dataset that is not one.
    fn volume_of(&mut self, name: &str) -> Result<(u64, VolumeInfo), SpaError> {
        let info = self
            .volume_info(name)?
            .ok_or_else(|| SpaError::Invalid(format!("'{name}' is not a volume")))?;
        let dataset = self
            .lookup_dataset(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        Ok((dataset, info))
    }

    /// `zfs set volsize`: a new size (a non-zero multiple of the block size); shrinking
    /// frees what lies past it in the same txg.
    pub fn set_volume_size(&mut self, name: &str, size_bytes: u64) -> Result<(), SpaError> {
        let (dataset, info) = self.volume_of(name)?;
        if size_bytes == 0 || !size_bytes.is_multiple_of(info.block_size_bytes) {
            return Err(SpaError::Invalid(format!("volume size {size_bytes}")));
        }
        self.with_dataset_object(dataset, |os, ctx| {
            if size_bytes < info.size_bytes {
                os.free_range(ctx, ZVOL_OBJ, size_bytes, info.size_bytes - size_bytes)?;
            }
            os.truncate(ctx, ZVOL_OBJ, size_bytes)?;
            zap::zap_update(os, ctx, ZVOL_ZAP_OBJ, SIZE_ENTRY, &[size_bytes])
                .map_err(|e| crate::dmu::DmuError::Invalid(e.to_string()))
        })
    }

    /// Checks that `[offset, offset + len)` lies inside the volume.
    fn volume_range(&mut self, name: &str, offset: u64, len: u64) -> Result<u64, SpaError> {
        let (dataset, info) = self.volume_of(name)?;
        match offset.checked_add(len) {
            Some(end) if end <= info.size_bytes => Ok(dataset),
            _ => Err(SpaError::Invalid(format!(
                "range {offset}+{len} past the end of '{name}'"
            ))),
        }
    }

    /// Reads `len` bytes of a volume (holes read as zeros).
    pub fn volume_read(
        &mut self,
        name: &str,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, SpaError> {
        let dataset = self.volume_range(name, offset, len as u64)?;
        self.with_dataset_object(dataset, |os, ctx| {
            let mut data = os.read(ctx, ZVOL_OBJ, offset, len)?;
            data.resize(len, 0);
            Ok(data)
        })
    }

    /// Writes into a volume in the open txg, admitted against the pool's free space and
    /// the volume's quotas as a file write is, and charged to the dirty budget.
    pub fn volume_write(&mut self, name: &str, offset: u64, data: &[u8]) -> Result<(), SpaError> {
        let dataset = self.volume_range(name, offset, data.len() as u64)?;
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        let copies = self.with_dataset_object(dataset, |os, _| Ok(os.policy.data_props.copies))?;
        let bytes = data.len() as u64;
        // `zvol_write`: one `dmu::Tx` per request, throttled by the caller before it took
        // the pool lock (`dmu::tx::dmu_tx_wait`).
        let mut tx = crate::dmu::tx::Tx::create(dataset);
        tx.hold_write(Some(ZVOL_OBJ.0), offset, bytes);
        self.admit_settled(|spa| spa.check_space(bytes, copies))?;
        let charged = bytes.saturating_mul(u64::from(copies.max(1)));
        self.admit_settled(|spa| spa.dsl_tempreserve(dataset, charged))?;
        tx.assign(self)?;
        let written = self.with_dataset_object(dataset, |os, ctx| {
            let before = os.dirty_data_bytes;
            os.write(ctx, ZVOL_OBJ, offset, data)?;
            log_write(os, ctx.txg, offset, data.len() as u64);
            Ok(os.dirty_data_bytes.saturating_sub(before))
        });
        match written {
            Ok(dirtied) => tx.commit(self, dirtied),
            Err(e) => {
                tx.commit(self, 0)?;
                Err(e)
            }
        }
    }

    /// Frees a range of a volume (TRIM, WRITE_ZEROES): whole blocks become holes, the
    /// partial blocks at either end are zeroed.
    pub fn volume_free(&mut self, name: &str, offset: u64, len: u64) -> Result<(), SpaError> {
        let dataset = self.volume_range(name, offset, len)?;
        if self.readonly {
            return Err(SpaError::ReadOnly);
        }
        self.admit_settled(|spa| spa.check_space_to_free())?;
        self.with_dataset_object(dataset, |os, ctx| {
            os.free_range(ctx, ZVOL_OBJ, offset, len)?;
            log_free(os, ctx.txg, offset, len);
            Ok(())
        })?;
        self.note_dirty(0)
    }

    /// Makes every write and free of the volume made so far durable (OpenZFS
    /// `zil_commit(zv_zilog, ZVOL_OBJ)`): its log records are written and flushed, or the
    /// txg commits when the volume has no log yet or too much data waits.
    pub fn volume_commit(&mut self, name: &str) -> Result<zil::Commit, SpaError> {
        let (dataset, _) = self.volume_of(name)?;
        if self.readonly {
            return Ok(zil::Commit::Nothing);
        }
        self.zil_commit(dataset)
    }
}

/// `zvol_log_write`: logs a write by position; its bytes are copied when the log commits.
fn log_write(os: &mut ObjectSet, txg: Txg, offset: u64, len: u64) {
    os.zil.log(Itx::Write {
        txg,
        write: WriteItx {
            object: ZVOL_OBJ.0,
            offset,
            len,
            private: [0, 0],
        },
        get_data,
    });
}

/// `zvol_log_truncate`: logs a freed range.
fn log_free(os: &mut ObjectSet, txg: Txg, offset: u64, len: u64) {
    let record = LogRecord {
        txg,
        lr: Lr::Punch {
            object: ZVOL_OBJ.0,
            offset,
            len,
            now: Timespec::default(),
        },
    };
    os.zil.log(Itx::Record {
        txg,
        bytes: record.encode(),
    });
}

/// `zvol_get_data`: the stored records of a logged write, with the volume's bytes as they
/// are now, clipped to its size (a shrink made later cut the range).
fn get_data(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    txg: Txg,
    write: &WriteItx,
) -> Result<Vec<Vec<u8>>, ZilError> {
    let size = info_of(os, ctx)
        .map_err(|e| ZilError::Io(e.to_string()))?
        .map_or(0, |info| info.size_bytes);
    let want = size.saturating_sub(write.offset).min(write.len) as usize;
    if want == 0 {
        return Ok(Vec::new());
    }
    let mut data = os.read(ctx, ZVOL_OBJ, write.offset, want)?;
    data.resize(want, 0);
    Ok(data
        .chunks(WRITE_CHUNK_MAX_BYTES)
        .enumerate()
        .map(|(i, chunk)| {
            LogRecord {
                txg,
                lr: Lr::Write {
                    object: ZVOL_OBJ.0,
                    offset: write.offset + (i * WRITE_CHUNK_MAX_BYTES) as u64,
                    len: chunk.len() as u64,
                    data: chunk.to_vec(),
                    now: Timespec::default(),
                },
            }
            .encode()
        })
        .collect())
}

/// `zvol_replay_write` and `zvol_replay_truncate`: replays the log of volume object set
/// `os` at import; `last_synced` is the committed txg. A record that is not a volume's, or
/// reaches past the volume's end, stops the replay as damage.
pub(crate) fn replay(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    last_synced: Txg,
) -> Result<ReplayReport, ZilError> {
    let mut apply = |os: &mut ObjectSet, ctx: &IoCtx<'_>, bytes: &[u8]| -> Result<(), String> {
        let (record, _) = LogRecord::decode(bytes).map_err(|e| format!("(damaged): {e}"))?;
        let size = info_of(os, ctx)
            .map_err(|e| format!("(volume): {e}"))?
            .ok_or("(volume): not a volume")?
            .size_bytes;
        let inside = |offset: u64, len: u64| offset.checked_add(len).is_some_and(|e| e <= size);
        match record.lr {
            Lr::Write {
                object,
                offset,
                data,
                ..
            } if object == ZVOL_OBJ.0 && inside(offset, data.len() as u64) => os
                .write(ctx, ZVOL_OBJ, offset, &data)
                .map_err(|e| format!("(write): {e}")),
            Lr::Punch {
                object,
                offset,
                len,
                ..
            } if object == ZVOL_OBJ.0 && inside(offset, len) => os
                .free_range(ctx, ZVOL_OBJ, offset, len)
                .map_err(|e| format!("(truncate): {e}")),
            _ => Err("(damaged): not a write or free inside this volume".to_string()),
        }
    };
    zil::replay::replay(os, ctx, last_synced, &mut apply)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: `refreservation` of a non-sparse volume must be libzfs's
    // zvol_volsize_to_reservation, figure for figure.
    #[test]
    fn reservation_matches_libzfs() {
        // 1 GiB at 16K: 65536 data blocks, indirects 64 + 1, meta-dnode 7; copies 1 → x2.
        let blocks = 65536u64;
        let metadata = (7 + 64 + 1) * 2 * (128 << 10);
        assert_eq!(
            volsize_to_reservation(1 << 30, 16 << 10, 1, &[]),
            blocks * (16 << 10) + metadata
        );
        // copies=2 doubles the data, counts each metadata block three times.
        assert_eq!(
            volsize_to_reservation(1 << 30, 16 << 10, 2, &[]),
            2 * blocks * (16 << 10) + (7 + 64 + 1) * 3 * (128 << 10)
        );
        // A single block: only the meta-dnode's seven levels.
        assert_eq!(
            volsize_to_reservation(16 << 10, 16 << 10, 1, &[]),
            (16 << 10) + 7 * 2 * (128 << 10)
        );
        // raidz1 of 3 disks at ashift 12: a 16K block allocates 24K, a 128K one 192K, so
        // the data is scaled by 24/192 * 128K per block = 16K: unchanged.
        let shape = RaidzShape {
            children: 3,
            parity: 1,
            ashift: 12,
        };
        assert_eq!(
            volsize_to_reservation(1 << 30, 16 << 10, 1, &[shape]),
            blocks * (16 << 10) + metadata
        );
    }
}
