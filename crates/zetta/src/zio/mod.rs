//! The I/O pipeline (OpenZFS `zio.c`, `zio_checksum.c`, `zio_compress.c`).
//!
//! Write: compress (kept only when it saves 12.5% after rounding to the allocation size;
//! a caller may give the block's stored form instead, `StoredBlock`, as a `-c` receive does,
//! kept under the same rule) → pad to 512 bytes → checksum → allocate `copies` DVAs on distinct top-level vdevs →
//! plan the leaf writes (mirror fan-out, raidz parity) → aggregate and issue. Compression,
//! checksumming and parity run on all cores (rayon); allocation is serial and cheap.
//!
//! Read: ARC lookup → for each DVA, a verified read from its top-level vdev (which heals
//! damaged mirror children and raidz columns) → decompress. A copy that does not verify is
//! counted and rewritten from a good one; a block with no good copy is an I/O error and is
//! recorded in the persistent error log, never returned as wrong data.
//!
//! Invariant: a block pointer handed out by `write_blocks` is only referenced after every
//! leaf write it needs has been issued; durability comes from the txg's flushes (spa).

pub mod arc;
pub mod blkptr;
pub mod inject;
pub mod openzfs;

use crate::metaslab::Allocator;
use crate::types::{round_up_shift, Txg};
use crate::vdev::{issue_leaf_writes, ReadMode, Vdev, VdevStats};
use blkptr::{BlockPointer, Dva, EmbeddedPayload};
use parking_lot::Mutex;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use zetta_zcommon::checksum::openzfs::ChecksumSalt;
use zetta_zcommon::checksum::{checksum, ChecksumKind};
use zetta_zcommon::compress::{
    compress, decompress, keep_compressed, Compression, ALGORITHM_ID_OFF,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZioError {
    /// No copy of the block could be read and verified.
    Unrecoverable { bp: String },
    /// The pool has no room for the block.
    NoSpace,
    /// Writes failed on too many devices for the data to be safe.
    WriteFailed(String),
    /// A structure read from disk is malformed (decompression failed on verified data).
    Corrupt(String),
}

impl fmt::Display for ZioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZioError::Unrecoverable { bp } => {
                write!(f, "I/O error: no valid copy of block {bp}")
            }
            ZioError::NoSpace => write!(f, "out of space"),
            ZioError::WriteFailed(why) => write!(f, "write failed: {why}"),
            ZioError::Corrupt(why) => write!(f, "corrupt data: {why}"),
        }
    }
}

impl std::error::Error for ZioError {}

/// Where a block lives logically (OpenZFS `zbookmark_phys_t`): the persistent error log
/// records these, and `zpool status -v` turns them into paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bookmark {
    pub objset: u64,
    pub object: u64,
    pub level: u8,
    pub blkid: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteProps {
    pub checksum: ChecksumKind,
    pub compression: Compression,
    pub copies: u8,
    pub object_type: u8,
    pub level: u8,
    /// Whether the allocation is persisted in space maps (false for MOS blocks, which
    /// import finds by walking the MOS).
    pub record: bool,
    pub fill: u64,
}

/// ARC key: a block's identity (first DVA, birth and checksum, so a reused address never
/// returns stale bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockKey {
    vdev: u32,
    offset_bytes: u64,
    birth: u64,
    checksum0: u64,
}

impl BlockKey {
    pub fn of(bp: &BlockPointer) -> BlockKey {
        BlockKey {
            vdev: bp.dvas[0].vdev,
            offset_bytes: bp.dvas[0].offset_bytes,
            birth: bp.birth_txg.0,
            checksum0: bp.checksum[0],
        }
    }
}

/// A pool's ARC (its own, or its process's: see `arc`).
pub type Arc_ = arc::PoolArc;

/// What one block's verified read found.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScrubBlockResult {
    pub repaired_bytes: u64,
    pub unrecoverable: bool,
}

/// A block after the CPU stages, before allocation. `physical` is padded with zeros to the
/// largest sector size in the pool, so every copy's write is a prefix of it.
struct PreparedBlock<'a> {
    physical: std::borrow::Cow<'a, [u8]>,
    psize_bytes: u64,
    lsize_bytes: u64,
    compression_id: u8,
    checksum: [u64; 4],
    props: WriteProps,
    /// The compressed bytes when the block goes into its pointer (`embeddable`).
    embedded: Option<EmbeddedPayload>,
}

/// The sync pass from which a block born in the syncing txg is overwritten in place
/// instead of moved (OpenZFS `zfs_sync_pass_rewrite`): later passes of a txg then allocate
/// only for blocks dirtied for the first time, so the MOS and its space maps converge.
pub const SYNC_PASS_REWRITE: u32 = 2;
/// The sync pass from which the MOS's blocks are written uncompressed (OpenZFS
/// `zfs_sync_pass_dont_compress`), so that their sizes, and with them their places, stop
/// changing.
pub const SYNC_PASS_DONT_COMPRESS: u32 = 8;

/// Whether blocks are embedded when written (OpenZFS with embedded_data active: always).
/// It was off for a session because `zpl_space`'s full-pool and quota tests failed with it
/// on; the cause was not embedding but a race it made likelier: the space of an unlinked
/// file came back only at the kernel's asynchronous FORGET (fixed in `fuse::ops::policy`).
const EMBEDDED_DATA_WRITES: bool = true;

/// Whether OpenZFS's `zio_write_compress` embeds a block compressed to `compressed_len`
/// bytes (embedded_data active, as in every pool Zetta creates): only level-0 blocks whose
/// type keeps no fill count (not dnode or objset blocks), only when compressing here
/// (not a stored form given by a `-c` receive, which OpenZFS writes raw), and only when
/// compression shrank the block to at most `BPE_PAYLOAD_SIZE` bytes.
fn embeddable(props: &WriteProps, compressed_len: usize, lsize_bytes: usize, embed: bool) -> bool {
    const DMU_OT_DNODE: u8 = 10;
    const DMU_OT_OBJSET: u8 = 11;
    EMBEDDED_DATA_WRITES
        && embed
        && props.compression != Compression::Off
        && props.level == 0
        && !matches!(props.object_type, DMU_OT_DNODE | DMU_OT_OBJSET)
        && compressed_len <= blkptr::EMBEDDED_PAYLOAD_MAX_BYTES
        && compressed_len < lsize_bytes
}

/// A block's stored compressed form, given instead of compressing its logical bytes again:
/// a `zfs receive` of a `-c` stream writes blocks as they were sent (OpenZFS
/// `dmu_assign_arcbuf` with a compressed ARC buffer). The bytes are the stored form
/// without padding; the logical bytes still come with them (reads before the commit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBlock {
    pub compression_id: u8,
    pub bytes: Vec<u8>,
}

/// One block to write: its logical bytes, and optionally its stored form.
pub struct BlockSource<'a> {
    pub data: &'a [u8],
    pub props: WriteProps,
    pub stored: Option<&'a StoredBlock>,
    /// The block this one replaces, to be overwritten in place if it may be (OpenZFS
    /// `zio_write_compress` from `zfs_sync_pass_rewrite`, `ZIO_FLAG_IO_REWRITE`): born in
    /// this very txg (no committed tree can reach it), not embedded, and the new block
    /// needs exactly its DVAs' sizes. Only the MOS's later sync passes ask for it
    /// (`spa::txg`, "sync passes"); the caller must then not free the old block, which is
    /// recognised by the returned pointer having the same DVAs ([`BlockPointer::same_dvas`]).
    pub rewrite: Option<BlockPointer>,
}

/// Whether `old` may be overwritten in place by a block of `psize_bytes` with `copies`
/// DVAs in `txg` (see [`BlockSource::rewrite`]).
fn rewritable(root: &Vdev, old: &BlockPointer, psize_bytes: u64, copies: usize, txg: Txg) -> bool {
    let dvas: Vec<&Dva> = old.dvas.iter().filter(|d| !d.is_empty()).collect();
    old.birth_txg == txg
        && u64::from(old.psize_bytes) == psize_bytes
        && !old.is_hole()
        && old.embedded.is_none()
        && dvas.len() == copies
        && dvas.iter().all(|dva| {
            root.children.get(dva.vdev as usize).is_some_and(|vdev| {
                round_up_shift(vdev.allocation_size_bytes(psize_bytes), vdev.ashift)
                    == dva.asize_bytes
            })
        })
}

fn prepare<'a>(
    data: &'a [u8],
    props: WriteProps,
    stored: Option<&StoredBlock>,
    ashift_max: u32,
    salt: &ChecksumSalt,
    embed: bool,
) -> PreparedBlock<'a> {
    let lsize_bytes = data.len() as u64;
    let mut compression_id = ALGORITHM_ID_OFF;
    let mut physical = None;
    // A stored form is kept when it saves space like one made here would.
    let given = stored.filter(|s| {
        s.compression_id != ALGORITHM_ID_OFF
            && keep_compressed(s.bytes.len(), data.len(), ashift_max)
    });
    if let Some(stored) = given {
        compression_id = stored.compression_id;
        physical = Some(stored.bytes.clone());
    } else if props.compression != Compression::Off {
        if let Some(compressed) = compress(props.compression, data) {
            if embeddable(&props, compressed.len(), data.len(), embed) {
                if let Some(payload) = EmbeddedPayload::new(&compressed) {
                    return PreparedBlock {
                        physical: std::borrow::Cow::Borrowed(&[]),
                        psize_bytes: 0,
                        lsize_bytes: data.len() as u64,
                        compression_id: props.compression.algorithm_id(),
                        checksum: [0; 4],
                        props,
                        embedded: Some(payload),
                    };
                }
            }
            if keep_compressed(compressed.len(), data.len(), ashift_max) {
                compression_id = props.compression.algorithm_id();
                physical = Some(compressed);
            }
        }
    }
    let psize_bytes = round_up_shift(physical.as_ref().map_or(data.len(), Vec::len) as u64, 9);
    let padded_len = round_up_shift(psize_bytes, ashift_max) as usize;
    let physical = match physical {
        Some(mut compressed) => {
            compressed.resize(padded_len, 0);
            std::borrow::Cow::Owned(compressed)
        }
        None if data.len() == padded_len => std::borrow::Cow::Borrowed(data),
        None => {
            let mut padded = Vec::with_capacity(padded_len);
            padded.extend_from_slice(data);
            padded.resize(padded_len, 0);
            std::borrow::Cow::Owned(padded)
        }
    };
    let sum = checksum(props.checksum, &physical[..psize_bytes as usize], salt);
    PreparedBlock {
        physical,
        psize_bytes,
        lsize_bytes,
        compression_id,
        checksum: sum,
        props,
        embedded: None,
    }
}

/// The pipeline's shared state: the vdev tree, the allocator, the cache and the error log.
pub struct Zio {
    pub allocator: Mutex<Allocator>,
    /// The log class: separate intent log (SLOG) vdevs, used only by the ZIL.
    pub log_allocator: Mutex<Allocator>,
    pub arc: Arc_,
    /// Blocks found unrecoverable since the last scrub (persisted by spa).
    pub errlog: Mutex<BTreeSet<Bookmark>>,
    /// The newest txg that freed data or intent log blocks (not the MOS's own rewrites):
    /// their space waits out the two-txg deferral, and the pool keeps committing until it
    /// has (`Spa::frees_pending`), so freed space comes back on an idle pool too.
    freed_txg: std::sync::atomic::AtomicU64,
    /// The key of the salted checksums (BLAKE3), OpenZFS's `spa_cksum_salt`: random at create,
    /// kept in the object directory's `org.illumos:checksum_salt` (`spa::directory`).
    pub checksum_salt: ChecksumSalt,
    /// Whether hole_birth is active: a hole keeps its birth txg, lsize, type and level
    /// (`zio_write_compress`), else it is all zeros (`spa::zfeature`).
    hole_birth: std::sync::atomic::AtomicBool,
    /// Whether embedded_data is active: tiny compressed blocks go into the pointer.
    embedded_data: std::sync::atomic::AtomicBool,
    /// Whether lz4_compress is active: `compression=on` (and metadata) compress with lz4,
    /// else with lzjb (`zio_compress_select`).
    lz4_compress: std::sync::atomic::AtomicBool,
    /// The pool's SPA version (`spa_version`), for the version gates of the layers that
    /// reach the pool only through an `IoCtx` (bpobj header size, `dd_clones`): 5000 until
    /// `Spa` says otherwise (`set_spa_version`).
    spa_version: std::sync::atomic::AtomicU64,
}

impl Zio {
    pub fn new(allocator: Allocator, arc_size_bytes_max: u64) -> Zio {
        Zio {
            allocator: Mutex::new(allocator),
            log_allocator: Mutex::new(Allocator::new()),
            arc: arc::PoolArc::new(arc_size_bytes_max),
            errlog: Mutex::new(BTreeSet::new()),
            freed_txg: std::sync::atomic::AtomicU64::new(0),
            checksum_salt: [0; 32],
            hole_birth: std::sync::atomic::AtomicBool::new(true),
            embedded_data: std::sync::atomic::AtomicBool::new(true),
            lz4_compress: std::sync::atomic::AtomicBool::new(true),
            spa_version: std::sync::atomic::AtomicU64::new(5000),
        }
    }

    /// Sets what the pool's active features allow the write path to write.
    pub fn set_block_features(&self, hole_birth: bool, embedded_data: bool, lz4_compress: bool) {
        use std::sync::atomic::Ordering;
        self.hole_birth.store(hole_birth, Ordering::Relaxed);
        self.embedded_data.store(embedded_data, Ordering::Relaxed);
        self.lz4_compress.store(lz4_compress, Ordering::Relaxed);
    }

    /// `zio_compress_select` of lz4 (what `on`, the default, resolves to): lzjb on a pool
    /// without lz4_compress (the CLI refuses an explicit `compression=lz4` there).
    fn select_compression(&self, compression: Compression) -> Compression {
        let lz4 = self.lz4_compress.load(std::sync::atomic::Ordering::Relaxed);
        if compression == Compression::Lz4 && !lz4 {
            Compression::Lzjb
        } else {
            compression
        }
    }

    /// Whether holes carry their birth (hole_birth active).
    /// Publishes the pool's SPA version (create, import, upgrade).
    pub fn set_spa_version(&self, version: u64) {
        self.spa_version
            .store(version, std::sync::atomic::Ordering::Relaxed);
    }

    /// The pool's SPA version: 5000, or a legacy one (`spa::zfeature::LEGACY_VERSIONS_WRITTEN`).
    pub fn spa_version(&self) -> u64 {
        self.spa_version.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn hole_birth(&self) -> bool {
        self.hole_birth.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether tiny blocks may be embedded (embedded_data active).
    pub fn embedded_data(&self) -> bool {
        self.embedded_data
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The hole a freed or zeroed block leaves in txg `txg`: with its birth when
    /// hole_birth is active, else OpenZFS's all-zero hole.
    pub fn hole(&self, txg: Txg, lsize_bytes: u32, object_type: u8, level: u8) -> BlockPointer {
        if self.hole_birth() {
            BlockPointer::hole_born(txg, lsize_bytes, object_type, level)
        } else {
            BlockPointer::HOLE
        }
    }

    /// Records that txg `txg` freed space that waits out the deferral.
    pub fn note_free(&self, txg: Txg) {
        self.freed_txg
            .fetch_max(txg.0, std::sync::atomic::Ordering::Relaxed);
    }

    /// The newest txg that freed data or log blocks (0: none since import).
    pub fn last_free_txg(&self) -> Txg {
        Txg(self.freed_txg.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Writes many blocks in one batch; returns their block pointers in order.
    pub fn write_blocks(
        &self,
        root: &Vdev,
        blocks: Vec<(&[u8], WriteProps)>,
        txg: Txg,
    ) -> Result<Vec<BlockPointer>, ZioError> {
        let sources = blocks
            .into_iter()
            .map(|(data, props)| BlockSource {
                data,
                props,
                stored: None,
                rewrite: None,
            })
            .collect();
        self.write_block_sources(root, sources, txg)
    }

    /// `write_blocks` where a block may come with its stored form (`StoredBlock`).
    pub fn write_block_sources(
        &self,
        root: &Vdev,
        blocks: Vec<BlockSource<'_>>,
        txg: Txg,
    ) -> Result<Vec<BlockPointer>, ZioError> {
        let ashift_max = root.children.iter().map(|c| c.ashift).max().unwrap_or(12);
        let rewrites: Vec<Option<BlockPointer>> = blocks.iter().map(|b| b.rewrite).collect();
        let embed = self.embedded_data();
        let prepared: Vec<PreparedBlock> = blocks
            .into_par_iter()
            .map(|b| {
                let mut props = b.props;
                props.compression = self.select_compression(props.compression);
                prepare(
                    b.data,
                    props,
                    b.stored,
                    ashift_max,
                    &self.checksum_salt,
                    embed,
                )
            })
            .collect();
        // Allocation: serial, in order, so consecutive blocks land contiguously.
        let mut bps = Vec::with_capacity(prepared.len());
        {
            let mut allocator = self.allocator.lock();
            // Blocks overwritten in place: their DVAs are not this batch's to roll back.
            let mut rewritten: Vec<bool> = Vec::with_capacity(prepared.len());
            for (block, rewrite) in prepared.iter().zip(&rewrites) {
                if let Some(payload) = block.embedded {
                    rewritten.push(false);
                    bps.push(BlockPointer::embedded(
                        payload,
                        block.lsize_bytes as u32,
                        block.compression_id,
                        block.props.object_type,
                        block.props.level,
                        txg,
                    ));
                    continue;
                }
                let copies = usize::from(block.props.copies.clamp(1, 3));
                let in_place = rewrite
                    .filter(|old| rewritable(root, old, block.psize_bytes, copies, txg))
                    .map(|old| {
                        old.dvas
                            .iter()
                            .filter(|d| !d.is_empty())
                            .map(|d| (d.vdev, d.offset_bytes, d.asize_bytes))
                            .collect::<Vec<_>>()
                    });
                rewritten.push(in_place.is_some());
                let asize_of = |vdev_id: u32| {
                    root.children
                        .get(vdev_id as usize)
                        .map(|v| v.allocation_size_bytes(block.psize_bytes))
                        .unwrap_or(u64::MAX)
                };
                let allocated = match in_place {
                    Some(dvas) => Ok(dvas),
                    None => allocator.allocate(copies, &asize_of, block.props.record, txg.0),
                };
                let dvas = match allocated {
                    Ok(dvas) => dvas,
                    Err(_) => {
                        // Roll back this batch's allocations: nothing references them.
                        for (bp, in_place) in bps.iter().zip(&rewritten) {
                            if !in_place {
                                free_dvas(&mut allocator, bp, block.props.record, txg);
                            }
                        }
                        return Err(ZioError::NoSpace);
                    }
                };
                let mut bp = BlockPointer::HOLE;
                for (slot, (vdev, offset_bytes, asize_bytes)) in dvas.into_iter().enumerate() {
                    bp.dvas[slot] = Dva {
                        vdev,
                        asize_bytes,
                        offset_bytes,
                    };
                }
                bp.lsize_bytes = block.lsize_bytes as u32;
                bp.psize_bytes = block.psize_bytes as u32;
                bp.compression = block.compression_id;
                bp.checksum_kind = block.props.checksum.id();
                bp.object_type = block.props.object_type;
                bp.level = block.props.level;
                bp.birth_txg = txg;
                bp.fill = block.props.fill;
                bp.checksum = block.checksum;
                bps.push(bp);
            }
        }
        // Plan leaf writes (raidz parity is computed here, in parallel), then issue.
        let plans: Vec<Result<Vec<crate::vdev::LeafWrite<'_>>, ZioError>> = prepared
            .par_iter()
            .zip(bps.par_iter())
            .map(|(block, bp)| {
                let mut plan = Vec::new();
                for dva in bp.dvas.iter().filter(|d| !d.is_empty()) {
                    let vdev = &root.children[dva.vdev as usize];
                    let padded_len = round_up_shift(block.psize_bytes, vdev.ashift) as usize;
                    let data: &[u8] = &block.physical[..padded_len];
                    vdev.plan_write(dva.offset_bytes, data, &mut plan)
                        .map_err(|e| ZioError::WriteFailed(e.to_string()))?;
                }
                Ok(plan)
            })
            .collect();
        let mut plan = Vec::new();
        for p in plans {
            plan.extend(p?);
        }
        let failures = issue_leaf_writes(plan);
        if !failures.is_empty() && !root.state().is_usable() {
            return Err(ZioError::WriteFailed(failures[0].to_string()));
        }
        Ok(bps)
    }

    /// Reads a block and returns its logical bytes (cached in the ARC).
    pub fn read_block(
        &self,
        root: &Vdev,
        bp: &BlockPointer,
        bookmark: Option<Bookmark>,
    ) -> Result<Arc<Vec<u8>>, ZioError> {
        if bp.is_hole() {
            return Ok(Arc::new(vec![0u8; bp.lsize_bytes as usize]));
        }
        if let Some(payload) = &bp.embedded {
            // The bytes are in the pointer (verified with its parent): no I/O, no ARC.
            return decode_embedded(bp, payload).map(Arc::new);
        }
        let key = BlockKey::of(bp);
        if let Some(data) = self.arc.get(&key) {
            return Ok(data);
        }
        let physical = match self.read_physical(root, bp, ReadMode::Normal) {
            Some((physical, _)) => physical,
            None => {
                if let Some(bookmark) = bookmark {
                    self.errlog.lock().insert(bookmark);
                    crate::spa::events::post(crate::spa::events::EngineEvent::Data {
                        root_guid: root.guid.0,
                        bookmark,
                    });
                }
                return Err(ZioError::Unrecoverable { bp: bp.to_string() });
            }
        };
        let data = if bp.compression == ALGORITHM_ID_OFF {
            let mut data = physical;
            data.truncate(bp.lsize_bytes as usize);
            data
        } else {
            let mut data = vec![0u8; bp.lsize_bytes as usize];
            decompress(bp.compression, &physical, &mut data)
                .map_err(|e| ZioError::Corrupt(format!("{e} in block {bp}")))?;
            data
        };
        let data = Arc::new(data);
        self.arc
            .insert(key, data.clone(), u64::from(bp.lsize_bytes));
        Ok(data)
    }

    /// Reads a block's stored bytes (`psize`, still compressed), verified against its
    /// checksum: what `zfs send -c` puts in a stream. Not cached.
    pub fn read_block_physical(
        &self,
        root: &Vdev,
        bp: &BlockPointer,
        bookmark: Option<Bookmark>,
    ) -> Result<Vec<u8>, ZioError> {
        if bp.is_hole() {
            return Err(ZioError::Corrupt("a hole has no stored bytes".to_string()));
        }
        if let Some(payload) = &bp.embedded {
            return Ok(payload.as_slice().to_vec());
        }
        match self.read_physical(root, bp, ReadMode::Normal) {
            Some((physical, _)) => Ok(physical),
            None => {
                if let Some(bookmark) = bookmark {
                    self.errlog.lock().insert(bookmark);
                    crate::spa::events::post(crate::spa::events::EngineEvent::Data {
                        root_guid: root.guid.0,
                        bookmark,
                    });
                }
                Err(ZioError::Unrecoverable { bp: bp.to_string() })
            }
        }
    }

    /// Reads and verifies every copy of a block (scrub) or the first good one, healing the
    /// others. Returns the physical bytes and the bytes repaired.
    fn read_physical(
        &self,
        root: &Vdev,
        bp: &BlockPointer,
        mode: ReadMode,
    ) -> Option<(Vec<u8>, u64)> {
        let scrub = mode == ReadMode::Scrub;
        let kind = ChecksumKind::from_id(bp.checksum_kind)?;
        let psize = bp.psize_bytes as usize;
        let expected = bp.checksum;
        let salt = &self.checksum_salt;
        let verify = move |bytes: &[u8]| -> bool {
            bytes.len() >= psize && checksum(kind, &bytes[..psize], salt) == expected
        };
        let mut good: Option<Vec<u8>> = None;
        let mut bad_dvas = Vec::new();
        let mut repaired_bytes = 0;
        for (slot, dva) in bp.dvas.iter().enumerate().filter(|(_, d)| !d.is_empty()) {
            if good.is_some() && !scrub && mode != ReadMode::Resilver {
                break;
            }
            let Some(vdev) = root.children.get(dva.vdev as usize) else {
                bad_dvas.push(slot);
                continue;
            };
            let read_len = round_up_shift(u64::from(bp.psize_bytes), vdev.ashift);
            if dva.offset_bytes.saturating_add(dva.asize_bytes) > vdev.asize_bytes
                || read_len > dva.asize_bytes
            {
                bad_dvas.push(slot);
                continue;
            }
            match vdev.read_block(dva.offset_bytes, read_len, bp.birth_txg, &verify, mode) {
                Some(outcome) => {
                    repaired_bytes += outcome.repaired_bytes;
                    if good.is_none() {
                        good = Some(outcome.data);
                    }
                }
                None => bad_dvas.push(slot),
            }
        }
        let Some(mut physical) = good else {
            // No copy verified: the pool's own row counts the lost block, as OpenZFS counts
            // a failed logical read on the root vdev (`zpool status` shows it on the pool's
            // line, the per-copy failures on the devices').
            VdevStats::bump(&root.stats.checksum_errors, 1);
            return None;
        };
        // Heal the copies that failed (ditto blocks) with the good bytes.
        for slot in bad_dvas {
            let dva = bp.dvas[slot];
            if let Some(vdev) = root.children.get(dva.vdev as usize) {
                let mut padded = physical.clone();
                padded.resize(
                    round_up_shift(u64::from(bp.psize_bytes), vdev.ashift) as usize,
                    0,
                );
                if vdev.state().is_usable() && vdev.write_block(dva.offset_bytes, &padded).is_ok() {
                    repaired_bytes += padded.len() as u64;
                    for leaf in vdev.leaves() {
                        VdevStats::bump(&leaf.stats.repaired_bytes, padded.len() as u64);
                    }
                }
            }
        }
        physical.truncate(psize);
        Some((physical, repaired_bytes))
    }

    /// Scrub one block: verify every copy, repair what is damaged, log what is lost.
    /// An embedded block has no copy on a device: nothing to scrub (OpenZFS
    /// `dsl_scan_scrub_cb` skips it too).
    pub fn scrub_block(
        &self,
        root: &Vdev,
        bp: &BlockPointer,
        bookmark: Bookmark,
        mode: ReadMode,
    ) -> ScrubBlockResult {
        if bp.is_embedded() {
            return ScrubBlockResult::default();
        }
        match self.read_physical(root, bp, mode) {
            Some((_, repaired_bytes)) => ScrubBlockResult {
                repaired_bytes,
                unrecoverable: false,
            },
            None => {
                self.errlog.lock().insert(bookmark);
                crate::spa::events::post(crate::spa::events::EngineEvent::Data {
                    root_guid: root.guid.0,
                    bookmark,
                });
                ScrubBlockResult {
                    repaired_bytes: 0,
                    unrecoverable: true,
                }
            }
        }
    }

    /// Frees a block's space (deferred two txgs unless it was born in this open txg).
    pub fn free_block(&self, bp: &BlockPointer, record: bool, txg: Txg) {
        self.free_block_noting(bp, record, record, txg);
    }

    /// `free_block`, where `note` says whether the free keeps the pool committing until
    /// the space is allocatable again (`note_free`, `Spa::frees_pending`): not for the
    /// MOS's own blocks, which every commit replaces, or an idle pool would never stop.
    pub fn free_block_noting(&self, bp: &BlockPointer, record: bool, note: bool, txg: Txg) {
        if bp.is_hole() {
            return;
        }
        self.arc.remove(&BlockKey::of(bp));
        if note {
            self.note_free(txg);
        }
        let mut allocator = self.allocator.lock();
        free_dvas(&mut allocator, bp, record, txg);
    }
}

/// An embedded pointer's logical bytes: its payload decompressed to its lsize.
fn decode_embedded(bp: &BlockPointer, payload: &EmbeddedPayload) -> Result<Vec<u8>, ZioError> {
    let mut data = vec![0u8; bp.lsize_bytes as usize];
    if bp.compression == ALGORITHM_ID_OFF {
        let n = payload.as_slice().len().min(data.len());
        data[..n].copy_from_slice(&payload.as_slice()[..n]);
        return Ok(data);
    }
    decompress(bp.compression, payload.as_slice(), &mut data)
        .map_err(|e| ZioError::Corrupt(format!("{e} in block {bp}")))?;
    Ok(data)
}

fn free_dvas(allocator: &mut Allocator, bp: &BlockPointer, record: bool, txg: Txg) {
    for dva in bp.dvas.iter().filter(|d| !d.is_empty()) {
        let result = allocator.free(dva.vdev, dva.offset_bytes, dva.asize_bytes, record, txg.0);
        // A double free means the tree references space the allocator thinks is free: an
        // engine bug (tests stop here) or on-disk damage (production keeps going, leaking).
        debug_assert!(result.is_ok(), "free of {bp} failed: {result:?}");
    }
}
