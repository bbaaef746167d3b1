//! A real OpenZFS pool's space as `zpool list` and `zfs list` see it right after import
//! (OpenZFS `vdev_metaslab_init`, `metaslab_init`, `metaslab_space_update`,
//! `vdev_set_deflate_ratio`, `vdev_deflated_space`, `spa_update_dspace`,
//! `spa_get_slop_space`, `dsl_pool_adjustedsize`, `spa_prop_get_config`).
//!
//! Theory. Each top-level vdev of the MOS config's `vdev_tree` is cut into
//! `asize >> metaslab_shift` metaslabs of `1 << metaslab_shift` bytes; `metaslab_array`
//! names a MOS object holding one u64 per metaslab, the object number of its space map (0:
//! never written). A space map object's bonus is `space_map_phys_t`:
//!
//! ```text
//! word 0 smp_object (unused)   1 smp_length (bytes of entries)   2 smp_alloc (i64: bytes
//!        allocated in the metaslab)   3.. smp_pad / histogram (newer pools)
//! ```
//!
//! A vdev's SIZE is the sum of its metaslabs' sizes, its ALLOC the sum of their `smp_alloc`,
//! FREE the difference; the pool's are the sums over the normal, special, dedup and
//! embedded-log classes (separate log devices count for none of them). What the DSL may
//! hand out is the *deflated* space of the normal class: each vdev's bytes scaled by its
//! deflate ratio, `(1 << 17) / (asize_of(128 KiB) >> 9)` (512 for a plain disk or mirror;
//! less for raidz, whose parity and padding would otherwise count as space). On a normal
//! vdev with more than 64 metaslabs, import sets the emptiest one (the lowest-numbered
//! among equals) aside as the embedded log metaslab: it stays in SIZE but leaves the normal
//! class. The slop (space never handed to datasets) is 1/32 of the normal class's deflated
//! space, at most 128 GiB, less what the embedded log holds (at most half of it), and at
//! least min(half the pool, 128 MiB). `dsl_pool_adjustedsize`: deflated space less the
//! deferred frees (`sync_bplist`'s `bpo_bytes`) less the slop; the root dataset's AVAIL is
//! that less the root dir's USED.
//!
//! ALLOC is the metaslabs' space maps alone: changes still in log space maps
//! (`log_spacemap`, a pool not exported cleanly) are what OpenZFS applies only when it imports
//! writable (`spa_ld_log_sm_data` returns at once otherwise), and this serves read-only
//! imports — checked against `zdb -m` on such a pool (testpool_zstd).
//!
//! Dedup adds what it saves to the space the DSL may hand out (`ddt_get_dedup_dspace`): the
//! `DDT-statistics` ZAP of the object directory holds one histogram per dedup table
//! (64 buckets of `ddt_stat_t`: blocks, lsize, psize, dsize, then the same four counted by
//! references); the saving is the sum of `ref_dsize` less the sum of `dsize`. The slop is
//! taken from the space without it.
//!
//! Each metaslab's space map object (`space_maps`) decodes with the engine's own codec
//! (`zetta_metaslab::space_map`: `space_map_phys_t`, debug, one-word and two-word entries),
//! and `allocated_ranges` replays them from all-free metaslabs — the allocated set OpenZFS's
//! `metaslab_load` builds (log space maps not applied, as above).
//!
//! Not modelled: space saved by block cloning (`brt_get_dspace`), fast dedup's in-memory
//! log histogram, vdevs being removed, and dRAID (its deflate ratio is taken as a plain
//! vdev's).

use super::pool::OpenZfsPool;
use crate::dmu::openzfs::reader::OzfsError;
use crate::dsl::openzfs::objdir;
use crate::nvpair_xdr::XdrNvList;
use zetta_metaslab::space_map::{self, SpaceMapGeometry, SpaceMapPhys, SpaceMapRecord};
use zetta_metaslab::RangeTree;

/// `zfs_embedded_slog_min_ms`: more metaslabs than this and one becomes the embedded log.
const EMBEDDED_SLOG_MIN_MS: u64 = 64;
/// `spa_slop_shift`, `spa_min_slop`, `spa_max_slop`.
const SLOP_SHIFT: u32 = 5;
const MIN_SLOP: u64 = 128 << 20;
const MAX_SLOP: u64 = 128 << 30;
/// Most metaslabs of one vdev (`zfs_vdev_ms_count_limit`; a hostile config could claim
/// billions).
const METASLABS_MAX: u64 = 1 << 17;
/// `SPA_MINBLOCKSHIFT`, `SPA_OLD_MAXBLOCKSIZE`.
const MIN_BLOCK_SHIFT: u32 = 9;
const DEFLATE_BLOCK: u64 = 1 << 17;

/// The allocation class of a top-level vdev.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VdevClass {
    Normal,
    /// A separate intent log device (`is_log`): in no class `zpool list` sums.
    Log,
    Special,
    Dedup,
}

/// One top-level vdev's space, as `zpool list -v` prints it on the vdev's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VdevSpace {
    /// The vdev's `id` in the config.
    pub id: u64,
    /// `mirror`, `raidz`, `disk`, `file`, ...
    pub vdev_type: String,
    pub class: VdevClass,
    pub metaslab_count: u64,
    pub metaslab_shift: u64,
    /// Sum of the metaslabs' sizes (`vs_space`).
    pub size: u64,
    /// Sum of their `smp_alloc` (`vs_alloc`).
    pub alloc: u64,
    /// `(1 << 17) / (asize of 128 KiB >> 9)`.
    pub deflate_ratio: u64,
    /// The metaslab set aside as the embedded log, if any: (size, alloc).
    pub embedded_log: Option<(u64, u64)>,
}

impl VdevSpace {
    pub fn free(&self) -> u64 {
        self.size.saturating_sub(self.alloc)
    }

    /// `vdev_deflated_space`.
    pub fn deflated(&self, bytes: u64) -> u64 {
        (bytes >> MIN_BLOCK_SHIFT).saturating_mul(self.deflate_ratio)
    }
}

/// The pool's space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSpace {
    /// `zpool list` SIZE, ALLOC, FREE.
    pub size: u64,
    pub alloc: u64,
    pub free: u64,
    /// `spa_get_dspace`: the normal class's deflated space plus what dedup saves.
    pub dspace: u64,
    /// `spa_rdspace`: the normal class's deflated space alone (the slop's base).
    pub normal_dspace: u64,
    /// What dedup saves (`ddt_get_dedup_dspace`).
    pub dedup_dspace: u64,
    /// The embedded log metaslabs' deflated space.
    pub embedded_log_dspace: u64,
    /// Bytes waiting in the deferred-free list (`sync_bplist`).
    pub deferred_free_bytes: u64,
    /// `spa_get_slop_space`.
    pub slop: u64,
    /// Every top-level vdev, by id.
    pub vdevs: Vec<VdevSpace>,
}

impl PoolSpace {
    /// `dsl_pool_adjustedsize` (normal space checks): what the whole dataset tree may use.
    pub fn adjusted_size(&self) -> u64 {
        self.dspace
            .saturating_sub(self.deferred_free_bytes)
            .saturating_sub(self.slop)
    }

    /// `spa_get_slop_space` for a normal-class deflated space and an embedded log space.
    pub fn slop_for(dspace: u64, embedded_log_dspace: u64) -> u64 {
        let mut slop = (dspace >> SLOP_SHIFT).min(MAX_SLOP);
        slop -= embedded_log_dspace.min(slop >> 1);
        slop.max((dspace >> 1).min(MIN_SLOP))
    }

    /// Reads the space of an open pool from its MOS config and space maps.
    pub fn load(pool: &OpenZfsPool) -> Result<PoolSpace, OzfsError> {
        let tops = top_vdev_configs(pool)?;
        let mut vdevs = Vec::new();
        for (index, top) in tops.into_iter().enumerate() {
            if let Some(vdev) = top_vdev_space(pool, top, index as u64)? {
                vdevs.push(vdev);
            }
        }
        vdevs.sort_by_key(|v| v.id);
        let (mut size, mut alloc, mut dspace, mut log_dspace) = (0u64, 0u64, 0u64, 0u64);
        for v in &vdevs {
            if v.class == VdevClass::Log {
                continue;
            }
            size = size.saturating_add(v.size);
            alloc = alloc.saturating_add(v.alloc);
            if v.class == VdevClass::Normal {
                let (log_size, _) = v.embedded_log.unwrap_or((0, 0));
                dspace = dspace.saturating_add(v.deflated(v.size.saturating_sub(log_size)));
                log_dspace = log_dspace.saturating_add(v.deflated(log_size));
            }
        }
        let deferred_free_bytes = match pool
            .mos
            .zap_u64(objdir::DIRECTORY_OBJECT, objdir::SYNC_BPLIST)?
        {
            Some(object) if object != 0 => {
                let dn = pool.mos.dnode(object)?;
                dn.order.u64_at(&dn.bonus, 8).unwrap_or(0)
            }
            _ => 0,
        };
        let dedup_dspace = dedup_saved(pool)?;
        Ok(PoolSpace {
            size,
            alloc,
            free: size.saturating_sub(alloc),
            dspace: dspace.saturating_add(dedup_dspace),
            normal_dspace: dspace,
            dedup_dspace,
            embedded_log_dspace: log_dspace,
            deferred_free_bytes,
            slop: PoolSpace::slop_for(dspace, log_dspace),
            vdevs,
        })
    }
}

/// u64 words of one `ddt_histogram_t`: 64 buckets of 8-word `ddt_stat_t`.
const DDT_HISTOGRAM_WORDS: usize = 64 * 8;

/// `ddt_get_dedup_dspace`: Σ ref_dsize − Σ dsize over every dedup table's histogram.
fn dedup_saved(pool: &OpenZfsPool) -> Result<u64, OzfsError> {
    let Some(object) = pool
        .mos
        .zap_u64(objdir::DIRECTORY_OBJECT, objdir::DDT_STATS)?
        .filter(|o| *o != 0)
    else {
        return Ok(0);
    };
    let (mut dsize, mut ref_dsize) = (0u64, 0u64);
    for entry in pool.mos.zap_list(object)?.iter().take(1 << 10) {
        if entry.int_len != 8 || entry.values.len() != DDT_HISTOGRAM_WORDS {
            return Err(OzfsError::Corrupt(format!(
                "DDT statistics {object}: an entry of {} {}-byte integers",
                entry.values.len(),
                entry.int_len
            )));
        }
        for bucket in entry.values.chunks_exact(8) {
            dsize = dsize.wrapping_add(bucket[3]);
            ref_dsize = ref_dsize.wrapping_add(bucket[7]);
        }
    }
    Ok(ref_dsize.wrapping_sub(dsize))
}

/// `vdev_psize_to_asize` of 128 KiB for a top-level vdev, as its deflate ratio.
fn deflate_ratio(top: &XdrNvList, vdev_type: &str) -> Result<u64, OzfsError> {
    let ashift = top.get_u64("ashift").unwrap_or(9);
    if !(9..=16).contains(&ashift) {
        return Err(OzfsError::Corrupt(format!("vdev ashift {ashift}")));
    }
    let sectors = ((DEFLATE_BLOCK - 1) >> ashift) + 1;
    let asize_sectors = if vdev_type == "raidz" {
        let cols = top
            .get_nvlist_array("children")
            .map_or(0, |c| c.len() as u64);
        let nparity = top.get_u64("nparity").unwrap_or(1);
        if nparity == 0 || cols <= nparity {
            return Err(OzfsError::Corrupt(format!(
                "raidz vdev of {cols} columns and parity {nparity}"
            )));
        }
        let data = cols - nparity;
        let with_parity = sectors + nparity * sectors.div_ceil(data);
        with_parity.div_ceil(nparity + 1) * (nparity + 1)
    } else {
        sectors
    };
    let asize = asize_sectors << ashift;
    Ok(DEFLATE_BLOCK / (asize >> MIN_BLOCK_SHIFT).max(1))
}

/// The class of a top-level vdev: `is_log`, else the allocation bias its top ZAP records.
fn vdev_class(pool: &OpenZfsPool, top: &XdrNvList) -> VdevClass {
    if top.get_u64("is_log") == Some(1) {
        return VdevClass::Log;
    }
    let Some(zap) = top.get_u64("com.delphix:vdev_zap_top").filter(|z| *z != 0) else {
        return VdevClass::Normal;
    };
    match pool.mos.zap_lookup(zap, "org.zfsonlinux:allocation_bias") {
        Ok(Some(entry)) => {
            let bytes: Vec<u8> = entry
                .values
                .iter()
                .map(|v| *v as u8)
                .take_while(|b| *b != 0)
                .collect();
            match bytes.as_slice() {
                b"special" => VdevClass::Special,
                b"dedup" => VdevClass::Dedup,
                b"log" => VdevClass::Log,
                _ => VdevClass::Normal,
            }
        }
        _ => VdevClass::Normal,
    }
}

fn top_vdev_space(
    pool: &OpenZfsPool,
    top: &XdrNvList,
    index: u64,
) -> Result<Option<VdevSpace>, OzfsError> {
    let vdev_type = top.get_str("type").unwrap_or("").to_string();
    if matches!(vdev_type.as_str(), "hole" | "indirect" | "missing") {
        return Ok(None);
    }
    let id = top.get_u64("id").unwrap_or(index);
    let (Some(array), Some(shift), Some(asize)) = (
        top.get_u64("metaslab_array"),
        top.get_u64("metaslab_shift"),
        top.get_u64("asize"),
    ) else {
        return Ok(None);
    };
    if !(MIN_BLOCK_SHIFT as u64..64).contains(&shift) {
        return Err(OzfsError::Corrupt(format!(
            "vdev {id}: metaslab_shift {shift}"
        )));
    }
    let count = asize >> shift;
    if count > METASLABS_MAX {
        return Err(OzfsError::Corrupt(format!("vdev {id}: {count} metaslabs")));
    }
    let ms_size = 1u64 << shift;
    let mut allocs = Vec::with_capacity(count as usize);
    if count > 0 {
        let dn = pool.mos.dnode(array)?;
        // Each block in its own byte order (a pool that moved between machines).
        let objects = pool.mos.read_u64s(&dn, 0, count as usize)?;
        for sm in objects {
            let alloc = if sm == 0 {
                0
            } else {
                let smd = pool.mos.dnode(sm)?;
                smd.order
                    .u64_at(&smd.bonus, 16)
                    .map_err(|e| OzfsError::Corrupt(format!("space map {sm}: {e}")))?
            };
            // smp_alloc is signed; a negative total is damage.
            if (alloc as i64) < 0 || alloc > ms_size {
                return Err(OzfsError::Corrupt(format!(
                    "space map {sm}: {} bytes allocated in a {ms_size}-byte metaslab",
                    alloc as i64
                )));
            }
            allocs.push(alloc);
        }
    }
    let class = vdev_class(pool, top);
    let embedded_log = if class == VdevClass::Normal && count > EMBEDDED_SLOG_MIN_MS {
        // The emptiest metaslab, the first of equals.
        let mut best = 0usize;
        for (m, alloc) in allocs.iter().enumerate() {
            if *alloc < allocs[best] {
                best = m;
            }
        }
        Some((ms_size, allocs[best]))
    } else {
        None
    };
    Ok(Some(VdevSpace {
        id,
        deflate_ratio: deflate_ratio(top, &vdev_type)?,
        vdev_type,
        class,
        metaslab_count: count,
        metaslab_shift: shift,
        size: count * ms_size,
        alloc: allocs.iter().sum(),
        embedded_log,
    }))
}

/// One metaslab's space map object as it lies in the MOS.
#[derive(Clone, Debug)]
pub struct MetaslabSpaceMap {
    /// The top-level vdev's `id`.
    pub vdev_id: u64,
    pub ms_index: u64,
    pub object: u64,
    /// The metaslab's first byte and `sm_shift` (the vdev's ashift).
    pub geometry: SpaceMapGeometry,
    pub ms_size: u64,
    /// The bonus as stored (in the host's little-endian words) and decoded.
    pub bonus: Vec<u8>,
    pub phys: SpaceMapPhys,
    /// `smp_length` bytes of entries, as u64 words (each block in its own byte order).
    pub words: Vec<u64>,
}

impl MetaslabSpaceMap {
    pub fn records(&self) -> Result<Vec<SpaceMapRecord>, OzfsError> {
        space_map::decode_records(&self.words)
            .map_err(|e| OzfsError::Corrupt(format!("space map {}: {e}", self.object)))
    }

    /// The metaslab's allocated ranges after replaying every entry from all-free; an entry
    /// outside the metaslab, an ALLOC of allocated space or a FREE of free space is damage.
    pub fn allocated(&self) -> Result<RangeTree, OzfsError> {
        let corrupt =
            |what: String| OzfsError::Corrupt(format!("space map {}: {what}", self.object));
        let entries = space_map::records_to_entries(&self.records()?, self.geometry)
            .map_err(|e| corrupt(e.to_string()))?;
        let mut allocated = RangeTree::new();
        let end = self.geometry.start_bytes.saturating_add(self.ms_size);
        for entry in entries {
            let (offset, size) = (entry.offset_bytes(), entry.size_bytes());
            if offset < self.geometry.start_bytes || offset.saturating_add(size) > end {
                return Err(corrupt(format!(
                    "entry {offset:#x}+{size:#x} outside its metaslab"
                )));
            }
            let result = if entry.is_alloc() {
                allocated.add(offset, size)
            } else {
                allocated.remove(offset, size)
            };
            result.map_err(|e| corrupt(e.to_string()))?;
        }
        Ok(allocated)
    }
}

/// The top-level vdevs of the MOS config's `vdev_tree` (the tree itself when it has no
/// children).
fn top_vdev_configs(pool: &OpenZfsPool) -> Result<Vec<&XdrNvList>, OzfsError> {
    let tree = pool
        .config
        .get_nvlist("vdev_tree")
        .ok_or_else(|| OzfsError::Missing("the config's vdev_tree".into()))?;
    Ok(match tree.get_nvlist_array("children") {
        Some(children) => children.iter().collect(),
        None => vec![tree],
    })
}

/// Every space map of every top-level vdev of the MOS config (metaslabs never written have
/// none).
pub fn space_maps(pool: &OpenZfsPool) -> Result<Vec<MetaslabSpaceMap>, OzfsError> {
    let tops = top_vdev_configs(pool)?;
    let mut maps = Vec::new();
    for (index, top) in tops.into_iter().enumerate() {
        let vdev_id = top.get_u64("id").unwrap_or(index as u64);
        let (Some(array), Some(shift), Some(asize), Some(ashift)) = (
            top.get_u64("metaslab_array"),
            top.get_u64("metaslab_shift"),
            top.get_u64("asize"),
            top.get_u64("ashift"),
        ) else {
            continue;
        };
        if !(MIN_BLOCK_SHIFT as u64..64).contains(&shift) || !(9..=16).contains(&ashift) {
            return Err(OzfsError::Corrupt(format!(
                "vdev {vdev_id}: metaslab_shift {shift}, ashift {ashift}"
            )));
        }
        let count = asize >> shift;
        if count > METASLABS_MAX {
            return Err(OzfsError::Corrupt(format!(
                "vdev {vdev_id}: {count} metaslabs"
            )));
        }
        if count == 0 || array == 0 {
            continue;
        }
        let dn = pool.mos.dnode(array)?;
        let objects = pool.mos.read_u64s(&dn, 0, count as usize)?;
        for (ms_index, object) in objects.into_iter().enumerate() {
            if object == 0 {
                continue;
            }
            let smd = pool.mos.dnode(object)?;
            let bonus_words: Vec<u64> = (0..smd.bonus.len() / 8)
                .map(|i| smd.order.u64_at(&smd.bonus, i * 8))
                .collect::<Result<_, _>>()
                .map_err(|e| OzfsError::Corrupt(format!("space map {object}: {e}")))?;
            let bonus = space_map::words_to_bytes(&bonus_words);
            let phys = SpaceMapPhys::decode(&bonus)
                .map_err(|e| OzfsError::Corrupt(format!("space map {object}: {e}")))?;
            let object_bytes = (smd.maxblkid + 1).saturating_mul(smd.data_block_size() as u64);
            if phys.length_bytes % 8 != 0 || phys.length_bytes > object_bytes {
                return Err(OzfsError::Corrupt(format!(
                    "space map {object}: smp_length {} in an object of {object_bytes} bytes",
                    phys.length_bytes
                )));
            }
            let words = pool
                .mos
                .read_u64s(&smd, 0, (phys.length_bytes / 8) as usize)?;
            maps.push(MetaslabSpaceMap {
                vdev_id,
                ms_index: ms_index as u64,
                object,
                geometry: SpaceMapGeometry {
                    start_bytes: (ms_index as u64) << shift,
                    shift: ashift as u32,
                },
                ms_size: 1 << shift,
                bonus,
                phys,
                words,
            });
        }
    }
    Ok(maps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vdev(vdev_type: &str, ashift: u64, children: usize, nparity: u64) -> XdrNvList {
        use crate::nvpair_xdr::XdrValue;
        let mut top = XdrNvList::new();
        top.add("type", XdrValue::String(vdev_type.as_bytes().to_vec()));
        top.add("ashift", XdrValue::Uint64(ashift));
        top.add("nparity", XdrValue::Uint64(nparity));
        top.add(
            "children",
            XdrValue::NvListArray(vec![XdrNvList::new(); children]),
        );
        top
    }

    // Why: AVAIL is the deflated space; the ratio must be OpenZFS's for each layout
    // (`vdev_set_deflate_ratio` over `vdev_raidz_asize`), and a hostile config an error.
    #[test]
    fn deflate_ratios_are_openzfs_s() {
        let ratio = |t: &str, ashift, children, nparity| {
            deflate_ratio(&vdev(t, ashift, children, nparity), t)
        };
        assert_eq!(ratio("disk", 9, 0, 0), Ok(512));
        assert_eq!(ratio("mirror", 12, 2, 0), Ok(512));
        // 32 data sectors of 4 KiB over 2 data columns: 16 parity, 48 sectors.
        assert_eq!(ratio("raidz", 12, 3, 1), Ok(341));
        // 256 sectors of 512 B, 2 data columns: 128 parity, 384 sectors.
        assert_eq!(ratio("raidz", 9, 3, 1), Ok(341));
        // raidz2 over 6 disks at ashift 12: 32 + 2*8 = 48, a multiple of 3.
        assert_eq!(ratio("raidz", 12, 6, 2), Ok(341));
        // raidz1 over 5 at ashift 9: 256 + 64 = 320 sectors.
        assert_eq!(ratio("raidz", 9, 5, 1), Ok(409));
        assert!(ratio("raidz", 9, 2, 2).is_err());
        assert!(ratio("raidz", 9, 3, 0).is_err());
        assert!(ratio("disk", 40, 0, 0).is_err());
    }

    #[test]
    fn slop_follows_openzfs_2_3() {
        // Small pool: half of it, under 128 MiB.
        assert_eq!(PoolSpace::slop_for(100 << 20, 0), 50 << 20);
        // 10 GiB: 1/32 is 320 MiB.
        assert_eq!(PoolSpace::slop_for(10 << 30, 0), 320 << 20);
        // An embedded log takes at most half of it, but never below 128 MiB.
        assert_eq!(PoolSpace::slop_for(10 << 30, 1 << 30), 160 << 20);
        assert_eq!(PoolSpace::slop_for(5 << 30, 1 << 30), 128 << 20);
        // Capped at 128 GiB.
        assert_eq!(PoolSpace::slop_for(1 << 50, 0), 128 << 30);
    }
}
