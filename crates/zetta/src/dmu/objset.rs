//! Object sets: a numbered collection of objects stored as a tree of blocks (OpenZFS
//! `dmu_objset.c`, `dbuf.c`, `dnode_sync.c`).
//!
//! Object 0 (the meta-dnode) is an object whose data is an array of 512-byte dnodes; object
//! N's dnode sits at byte N * 512 of it. The objset block holds the meta-dnode and points at
//! everything else; its block pointer is what a dataset (or, for the MOS, the uberblock)
//! stores.
//!
//! The objset block is OpenZFS's `objset_phys_t` (`include/sys/dmu_objset.h`), written and
//! read by the part-1 codec (`dmu::openzfs::objset::ObjsetPhys`), 4 KiB as OpenZFS creates
//! every new object set in a pool of version >= 15:
//!
//! ```text
//! 0     os_meta_dnode (512)       dnode_phys_t, type DMU_OT_DNODE, 16 KiB blocks, 3 pointers
//! 512   os_zil_header (192)       zil_header_t
//! 704   os_type u64               DMU_OST_META 1, DMU_OST_ZFS 2, DMU_OST_ZVOL 3
//! 712   os_flags u64              a ZPL object set: OBJSET_FLAG_USERACCOUNTING_COMPLETE (1)
//!                                 from its creation (as found on an OpenZFS one); else 0
//! 720   os_portable_mac, os_local_mac (32 + 32)   zero (no encryption)
//! 784   os_pad0 (240)             zero
//! 1024  os_userused_dnode, 1536 os_groupused_dnode: a ZPL object set's accounting ZAPs;
//!       2048 os_projectused_dnode: free unless OpenZFS made it
//! 2560  os_pad1 to 4096
//! ```
//!
//! User/group (and, where OpenZFS enabled them, object and project) accounting is kept as
//! OpenZFS keeps it (`userused`, format 26): every sync of a ZPL object set charges each
//! synced dnode's owners `512 + dn_used` in the accounting ZAPs, which are objects of this
//! object set outside the meta-dnode (object numbers `DMU_USERUSED_OBJECT`... = -1, -2,
//! -3, `is_special`), loaded and synced like any object but whose dnodes go into the
//! objset block. An OpenZFS dataset's accounting is maintained, not released (formats
//! before 30 released it at the first rewrite). The MOS and volumes keep none: an
//! accounting dnode found on one is released at its next sync, its flags cleared.
//!
//! Object numbers are allocated as `dmu_object_alloc` does: from an in-memory hint (1 when
//! the object set is opened, never on disk; formats up to 17 kept one in `os_pad0`),
//! skipping every meta-dnode block whose fill count says all its 32 dnodes are in use
//! (`dnode_next_offset` over the fill counts) and looking at the dnodes of the others.
//!
//! An object's size is its owner's (see `dnode`): the DMU reads, frees and sends up to the
//! block extent, `(dn_maxblkid + 1) * block size`, and only a ZPL plain file grows its
//! single block up to the record size.
//!
//! In memory, every loaded block is a dbuf keyed by (level, block id). Writes dirty level-0
//! dbufs; `sync` writes dirty dbufs level by level (all objects' level-0 blocks in one
//! parallel batch, then level 1, ...), puts each new block pointer into the parent dbuf (or
//! the dnode), frees the old block, then writes changed dnodes into the meta-dnode, syncs it
//! the same way, and finally writes the objset block. Nothing on disk is modified: every
//! changed block goes to a new place (copy-on-write), and the old one is freed only after the
//! commit that stops referencing it (deferred by the allocator) — or handed to the dataset's
//! dead list when a snapshot still references it (born at or before `prev_snap_txg`).
//! Frees (truncate, punch hole, free of an object) walk only the live tree's non-hole
//! pointers and loaded dbufs, so they cost what an object holds, not its size: a file with
//! one byte at 2^63 is freed in a handful of steps. Long truncates can go in batches from
//! the end (`free_tail_batch`, OpenZFS `dmu_free_long_range`) committed in between.
//! A ZPL object's spill block (`set_bonus_and_spill`, `spill`) is kept beside its dbufs
//! until `sync` writes it (`sync_spills`, before the trees) into the dnode's spill slot;
//! it is freed with its object and walked with its tree (bookmark `DMU_SPILL_BLKID`).
//! A level-0 dbuf written with `write_stored` (a `-c` receive) also carries the block's
//! stored compressed form, which `sync` writes as is; any later change of the dbuf's bytes
//! drops it.
//!
//! Locking (OpenZFS keeps a dnode's dbufs under `dn_dbufs_mtx` and each dbuf under its
//! `db_mtx`, and reads hold no lock across I/O). Writers change an object set through
//! `&mut ObjectSet` (`write`, `truncate`, `free_object`, `sync`, ...): the pool's exclusive
//! lock is held, no reader is inside, and the caches are reached without locking
//! (`Mutex::get_mut`). Readers use `&ObjectSet` (`read`, `dnode`, `bonus`, `extent_bytes`,
//! `object_exists`, and through them the ZAP and ZPL reads), many at once under the pool's
//! shared lock. Their caches sit behind fine-grained locks: the loaded objects in
//! `CACHE_SHARDS` maps, one `Mutex` each (an object's shard is its number modulo the
//! count), and the meta-dnode's state behind its own `Mutex`. The order is: pool lock
//! (shared), then at most one cache lock at a time — an object's shard or the meta-dnode,
//! never both, never two shards — and no cache lock is held across device I/O, the ARC or
//! a call that may take another cache lock: a reader finds what it needs under the lock,
//! copies it out (a dnode, a block pointer, a dirty dbuf's bytes), unlocks, reads the block,
//! then locks again to insert it as a clean dbuf unless a racing reader did first (both read
//! the same block of the same tree: a duplicate load is harmless). Readers only ever insert
//! clean states and dbufs, so they see the open txg's changes (dirty dbufs, changed dnodes)
//! exactly as a writer left them. Bounds: a reader inserting into a full shard
//! (`OBJECT_CACHE_MAX` / `CACHE_SHARDS`) first drops that shard's clean states (a dirty
//! one is the only copy of its txg's change and stays until `sync`); dnode blocks a reader
//! reads are not kept as dbufs (the ARC holds them); `sync` trims the rest as before.

mod userused;
mod writeback;
pub use userused::{
    file_info, is_special, FileInfo, DMU_GROUPUSED_OBJECT, DMU_OBJACCT_PREFIX,
    DMU_OT_USERGROUP_QUOTA, DMU_OT_USERGROUP_USED, DMU_PROJECTUSED_OBJECT, DMU_USERUSED_OBJECT,
    OBJSET_FLAG_PROJECTQUOTA_COMPLETE, OBJSET_FLAG_USERACCOUNTING_COMPLETE,
    OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE, ZFS_DEFAULT_PROJID,
};
pub use writeback::WritebackRecord;

use super::block_space::BlockSpace;
use super::dnode::{DnodePhys, DNODE_SIZE_BYTES};
use super::openzfs::dnode::DnodePhys as OzDnode;
use super::openzfs::objset::{ObjsetPhys as OzObjset, OS_TYPE_META, OS_TYPE_ZFS, OS_TYPE_ZVOL};
use crate::byteorder::ByteOrder;
use crate::types::{round_up_shift, ObjectId, Txg};
use crate::vdev::Vdev;
use crate::zio::blkptr::{BlockPointer, BLKPTR_SIZE_BYTES};
use crate::zio::{BlockSource, Bookmark, StoredBlock, WriteProps, Zio, ZioError};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use zetta_zcommon::checksum::ChecksumKind;
use zetta_zcommon::compress::Compression;

/// OpenZFS's `sizeof (objset_phys_t)` (`OBJSET_PHYS_SIZE_V3`): what it writes for a new
/// object set in a pool of version >= 15.
pub const OBJSET_BLOCK_SIZE_BYTES: usize = super::openzfs::objset::OBJSET_PHYS_SIZE_V3;
pub const META_DNODE_BLOCK_SIZE_BYTES: u32 = 16384;
pub const DNODES_PER_BLOCK: u64 = META_DNODE_BLOCK_SIZE_BYTES as u64 / DNODE_SIZE_BYTES as u64;
pub const OBJECT_ID_MAX: u64 = 1 << 48;

/// Clean objects kept in memory between txgs before the cache is dropped.
pub const OBJECT_CACHE_MAX: usize = 4096;
/// Locks the object cache is split under (an object's shard is its number modulo this), so
/// readers of different objects rarely meet on one.
const CACHE_SHARDS: usize = 16;

/// What a block holds: OpenZFS's `dmu_object_type_t` numbers, recorded in block pointers and
/// dnodes. Where a Zetta structure has no exact OpenZFS counterpart yet (its own object
/// directory, dead lists, one ZAP type for every map) it carries the nearest OpenZFS type.
pub mod object_type {
    pub const NONE: u8 = 0;
    /// `DMU_OT_OBJECT_DIRECTORY`.
    pub const OBJECT_DIRECTORY: u8 = 1;
    /// `DMU_OT_OBJECT_ARRAY`: a top-level vdev's metaslab array.
    pub const METASLAB_ARRAY: u8 = 2;
    /// `DMU_OT_PACKED_NVLIST`.
    pub const PACKED_NVLIST: u8 = 3;
    /// `DMU_OT_SPACE_MAP`.
    pub const SPACE_MAP: u8 = 8;
    /// `DMU_OT_DNODE`: the meta-dnode's blocks.
    pub const DNODE: u8 = 10;
    /// `DMU_OT_OBJSET`.
    pub const OBJSET: u8 = 11;
    /// `DMU_OT_DSL_DIR`.
    pub const DSL_DIR: u8 = 12;
    /// `DMU_OT_DSL_DATASET`.
    pub const DSL_DATASET: u8 = 16;
    /// `DMU_OT_PLAIN_FILE_CONTENTS`.
    pub const PLAIN_FILE: u8 = 19;
    /// `DMU_OT_DIRECTORY_CONTENTS`.
    pub const DIRECTORY: u8 = 20;
    /// `DMU_OT_MASTER_NODE`.
    pub const MASTER_NODE: u8 = 21;
    /// `DMU_OT_ZVOL`.
    pub const ZVOL: u8 = 23;
    /// `DMU_OT_UINT64_OTHER`: a bonus of one u64 (the library API's object size).
    pub const UINT64_OTHER: u8 = 26;
    /// `DMU_OT_ZAP_OTHER`: every other name/value map.
    pub const ZAP: u8 = 27;
    /// `DMU_OT_ERROR_LOG`.
    pub const ERROR_LOG: u8 = 28;
    /// `DMU_OT_SPA_HISTORY`.
    pub const HISTORY: u8 = 29;
    /// `DMU_OT_DEADLIST`.
    pub const DEAD_LIST: u8 = 50;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjsetType {
    Meta = 1,
    Filesystem = 2,
    Volume = 3,
}

#[derive(Debug)]
pub enum DmuError {
    Zio(ZioError),
    /// A structure read from disk is malformed.
    Corrupt(String),
    NoSuchObject(ObjectId),
    /// A request outside what an object can hold.
    Invalid(String),
}

impl std::fmt::Display for DmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DmuError::Zio(e) => write!(f, "{e}"),
            DmuError::Corrupt(why) => write!(f, "corrupt object set: {why}"),
            DmuError::NoSuchObject(id) => write!(f, "object {id} does not exist"),
            DmuError::Invalid(why) => write!(f, "invalid request: {why}"),
        }
    }
}

impl std::error::Error for DmuError {}

impl From<ZioError> for DmuError {
    fn from(e: ZioError) -> Self {
        DmuError::Zio(e)
    }
}

/// The I/O context of one operation: the pipeline, the vdev tree, the open txg.
pub struct IoCtx<'a> {
    pub zio: &'a Zio,
    pub root: &'a Vdev,
    pub txg: Txg,
}

struct Dbuf {
    data: Vec<u8>,
    dirty: bool,
    /// The block pointer this dbuf was read from (or the hole it replaces).
    bp: BlockPointer,
    /// The stored form `data` was received in (`write_stored`), written as is at sync
    /// instead of compressing `data` again. Every change of `data` drops it.
    stored: Option<StoredBlock>,
    /// Bytes written into it since it became dirty (overlaps count twice): a record
    /// written whole is complete and may be written early (`writeback`); one written in
    /// scattered pieces waits for the commit, which may see it filled by then.
    filled_bytes: usize,
}

struct ObjectState {
    phys: DnodePhys,
    dnode_dirty: bool,
    dbufs: BTreeMap<(u8, u64), Dbuf>,
    /// The spill block's change in the open txg (`set_bonus_and_spill`): `Some(Some(bytes))`
    /// a new spill block, `Some(None)` the spill block removed (`dmu_rm_spill`), `None` no
    /// change. `sync` writes it before the dnode (see `sync_spills`).
    spill_dirty: Option<Option<Vec<u8>>>,
}

/// OpenZFS's `DMU_SPILL_BLKID`: the block id of a spill block in its bookmark.
pub const DMU_SPILL_BLKID: u64 = u64::MAX;
/// `DMU_OT_SA`: the type of a spill block (and of a ZPL 5 object's bonus).
pub const OT_SA: u8 = 44;
/// A spill block is 512 bytes to 128 KiB, in 512-byte steps (`sa_resize_spill`,
/// `dbuf_spill_set_blksz`: `SPA_MINBLOCKSIZE` .. `SPA_OLD_MAXBLOCKSIZE`).
pub const SPILL_BLOCK_SIZE_MAX_BYTES: usize = 128 * 1024;

/// The policy for blocks this object set writes and frees.
#[derive(Clone, Copy, Debug)]
pub struct ObjsetPolicy {
    pub data_props: WriteProps,
    pub meta_copies: u8,
    /// Blocks born at or before this txg are referenced by the newest snapshot: freeing them
    /// hands them to the dead list instead.
    pub prev_snap_txg: Txg,
    /// Whether allocations are recorded in space maps (every object set since format 16,
    /// the MOS included).
    pub record: bool,
    /// Whether this object set's frees keep the pool committing until their space is
    /// allocatable (`zio::Zio::free_block_noting`): false for the MOS.
    pub frees_keep_syncing: bool,
}

pub struct ObjectSet {
    pub id: u64,
    pub os_type: ObjsetType,
    pub policy: ObjsetPolicy,
    /// The meta-dnode's state: its tree's dbufs. Readers lock it briefly (see the module
    /// header's locking paragraph).
    meta: Mutex<ObjectState>,
    /// Loaded objects: dnodes and dbufs, sharded behind locks.
    objects: ObjectCache,
    next_object: u64,
    flags: u64,
    pub zil_header: [u8; 192],
    /// The intent log of this object set (see `zil`).
    pub zil: crate::zil::Zilog,
    block_size_max_bytes: u32,
    /// Blocks released this txg that a snapshot still references.
    pub dead_blocks: Vec<BlockPointer>,
    /// Blocks freed this txg (born after the newest snapshot), for the dataset layer's
    /// space accounting.
    pub freed: BlockSpace,
    /// Blocks written this txg.
    pub born: BlockSpace,
    /// Bytes of data blocks that became dirty this txg (a 4 KiB write into a clean 128 KiB
    /// record counts 128 KiB): what the txg holds in memory until it commits.
    pub dirty_data_bytes: u64,
    dirty: bool,
    /// User/group/project accounting dnodes (`DMU_USERUSED_OBJECT` and its neighbours, by
    /// bookmark object number) as the objset block holds them: kept up to date by every
    /// sync of a ZPL object set (`userused`), released at the next sync of any other.
    accounting: BTreeMap<u64, DnodePhys>,
    /// The MOS only: its `$ORIGIN@$ORIGIN` object (`dsl::phys::ORIGIN_SNAPSHOT_OBJECT`
    /// where Zetta creates it; an imported pool's own number, 0 for a pool without one),
    /// which the DSL records read as "no previous snapshot" / "no origin".
    pub dsl_origin: u64,
}

/// The accounting dnodes and their byte offsets in the 4 KiB `objset_phys_t` (after the
/// meta-dnode and the ZIL header: `os_userused_dnode`, `os_groupused_dnode`,
/// `os_projectused_dnode`).
const ACCOUNTING_DNODES: [(u64, usize); 3] = [
    (DMU_USERUSED_OBJECT, 2 * DNODE_SIZE_BYTES),
    (DMU_GROUPUSED_OBJECT, 3 * DNODE_SIZE_BYTES),
    (DMU_PROJECTUSED_OBJECT, 4 * DNODE_SIZE_BYTES),
];
/// `OBJSET_FLAG_USERACCOUNTING_COMPLETE | _USEROBJACCOUNTING_COMPLETE |
/// _PROJECTQUOTA_COMPLETE`.
const OBJSET_FLAGS_ACCOUNTING: u64 = OBJSET_FLAG_USERACCOUNTING_COMPLETE
    | OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE
    | OBJSET_FLAG_PROJECTQUOTA_COMPLETE;

impl ObjectState {
    fn new(phys: DnodePhys) -> ObjectState {
        ObjectState {
            phys,
            dnode_dirty: false,
            dbufs: BTreeMap::new(),
            spill_dirty: None,
        }
    }

    fn block_size(&self, level: u8) -> usize {
        if level == 0 {
            self.phys.data_block_size_bytes as usize
        } else {
            1usize << self.phys.indirect_block_shift
        }
    }
}

/// The loaded objects of an object set, keyed by object number, in `CACHE_SHARDS` maps
/// each behind its own lock. Writers (`&mut ObjectSet`) reach the maps without locking
/// (`get_mut`); readers (`&ObjectSet`) lock one shard at a time, never across device I/O.
struct ObjectCache {
    shards: Box<[Mutex<HashMap<u64, ObjectState>>]>,
}

impl ObjectCache {
    fn new() -> ObjectCache {
        ObjectCache {
            shards: (0..CACHE_SHARDS)
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
        }
    }

    fn shard(id: u64) -> usize {
        (id % CACHE_SHARDS as u64) as usize
    }

    /// The shard holding `id`, locked (readers).
    fn lock(&self, id: u64) -> parking_lot::MutexGuard<'_, HashMap<u64, ObjectState>> {
        self.shards[Self::shard(id)].lock()
    }

    fn map_mut(&mut self, id: u64) -> &mut HashMap<u64, ObjectState> {
        self.shards[Self::shard(id)].get_mut()
    }

    fn get_mut(&mut self, id: &u64) -> Option<&mut ObjectState> {
        self.map_mut(*id).get_mut(id)
    }

    fn contains_key(&mut self, id: &u64) -> bool {
        self.map_mut(*id).contains_key(id)
    }

    fn insert(&mut self, id: u64, state: ObjectState) {
        self.map_mut(id).insert(id, state);
    }

    /// Every loaded object number, in no order.
    fn ids(&self) -> Vec<u64> {
        self.shards
            .iter()
            .flat_map(|shard| shard.lock().keys().copied().collect::<Vec<_>>())
            .collect()
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (&u64, &mut ObjectState)> {
        self.shards
            .iter_mut()
            .flat_map(|shard| shard.get_mut().iter_mut())
    }

    fn retain(&mut self, mut keep: impl FnMut(&u64, &mut ObjectState) -> bool) {
        for shard in self.shards.iter_mut() {
            shard.get_mut().retain(&mut keep);
        }
    }

    fn len(&mut self) -> usize {
        self.shards.iter_mut().map(|s| s.get_mut().len()).sum()
    }

    fn clear(&mut self) {
        for shard in self.shards.iter_mut() {
            shard.get_mut().clear();
        }
    }
}

/// Whether an object's state holds anything not on disk (a changed dnode, a dirty dbuf):
/// such a state is the only copy of the open txg's change and never leaves the cache
/// before `sync`.
fn state_is_dirty(state: &ObjectState) -> bool {
    state.dnode_dirty || state.spill_dirty.is_some() || state.dbufs.values().any(|d| d.dirty)
}

pub fn default_data_props() -> WriteProps {
    WriteProps {
        checksum: ChecksumKind::Fletcher4,
        compression: Compression::Lz4,
        copies: 1,
        object_type: object_type::PLAIN_FILE,
        level: 0,
        record: true,
        fill: 1,
    }
}

impl ObjectSet {
    pub fn create(id: u64, os_type: ObjsetType, policy: ObjsetPolicy) -> ObjectSet {
        let meta = DnodePhys::new(object_type::DNODE, META_DNODE_BLOCK_SIZE_BYTES, 3, 0, 0);
        ObjectSet {
            id,
            os_type,
            policy,
            meta: Mutex::new(ObjectState::new(meta)),
            objects: ObjectCache::new(),
            next_object: 1,
            // A new ZPL object set starts empty: every dnode it will have is accounted.
            flags: if os_type == ObjsetType::Filesystem {
                OBJSET_FLAG_USERACCOUNTING_COMPLETE
            } else {
                0
            },
            zil_header: [0u8; 192],
            zil: crate::zil::Zilog::default(),
            block_size_max_bytes: 128 << 10,
            dead_blocks: Vec::new(),
            freed: BlockSpace::ZERO,
            born: BlockSpace::ZERO,
            dirty_data_bytes: 0,
            dirty: true,
            accounting: BTreeMap::new(),
            dsl_origin: crate::dsl::phys::ORIGIN_SNAPSHOT_OBJECT,
        }
    }

    /// `dmu_objset_create_impl_dnstats` on a pool with userobj_accounting enabled: a new
    /// ZPL object set counts objects from its start (`OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE`)
    /// and its dataset activates the feature at its first sync (`ds_feature_activation`,
    /// carried here as a bit of the born space's features). No-op on other object sets.
    pub fn enable_userobj_accounting(&mut self) {
        if self.os_type == ObjsetType::Filesystem {
            self.flags |= OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE;
            self.born.features |= super::DatasetFeature::UserobjAccounting as u8;
        }
    }

    /// An empty, clean object set that stands in for one the pool never reads or writes
    /// (the MOS slot of a foreign pool, whose reads go through the OpenZFS codecs): it has
    /// nothing to commit.
    pub fn placeholder(id: u64, os_type: ObjsetType, policy: ObjsetPolicy) -> ObjectSet {
        ObjectSet {
            dirty: false,
            ..Self::create(id, os_type, policy)
        }
    }

    /// Opens an object set from its block pointer.
    pub fn open(
        ctx: &IoCtx<'_>,
        id: u64,
        bp: &BlockPointer,
        policy: ObjsetPolicy,
    ) -> Result<ObjectSet, DmuError> {
        let block = ctx.zio.read_block(
            ctx.root,
            bp,
            Some(Bookmark {
                objset: id,
                object: 0,
                level: 0,
                blkid: 0,
            }),
        )?;
        // The part-1 codec checks the block's size and every embedded dnode.
        let phys = OzObjset::decode(&block, ByteOrder::Little)
            .map_err(|e| DmuError::Corrupt(format!("objset block: {e}")))?;
        let meta = DnodePhys::decode(&block[..DNODE_SIZE_BYTES])
            .map_err(|e| DmuError::Corrupt(e.to_string()))?;
        if meta.is_free() || meta.data_block_size_bytes != META_DNODE_BLOCK_SIZE_BYTES {
            return Err(DmuError::Corrupt("meta-dnode is malformed".to_string()));
        }
        let os_type = match phys.os_type {
            OS_TYPE_META => ObjsetType::Meta,
            OS_TYPE_ZFS => ObjsetType::Filesystem,
            OS_TYPE_ZVOL => ObjsetType::Volume,
            other => return Err(DmuError::Corrupt(format!("objset type {other}"))),
        };
        let zil_header = phys.zil_header;
        let mut accounting = BTreeMap::new();
        for (object, offset) in ACCOUNTING_DNODES {
            let Some(bytes) = block.get(offset..offset + DNODE_SIZE_BYTES) else {
                continue;
            };
            let dnode = DnodePhys::decode(bytes)
                .map_err(|e| DmuError::Corrupt(format!("accounting dnode {object:#x}: {e}")))?;
            if !dnode.is_free() {
                accounting.insert(object, dnode);
            }
        }
        Ok(ObjectSet {
            id,
            os_type,
            policy,
            meta: Mutex::new(ObjectState::new(meta)),
            objects: ObjectCache::new(),
            next_object: 1,
            flags: phys.flags,
            zil: crate::zil::Zilog::from_header(&zil_header),
            zil_header,
            block_size_max_bytes: 128 << 10,
            dead_blocks: Vec::new(),
            freed: BlockSpace::ZERO,
            born: BlockSpace::ZERO,
            dirty_data_bytes: 0,
            dirty: false,
            accounting,
            dsl_origin: crate::dsl::phys::ORIGIN_SNAPSHOT_OBJECT,
        })
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Objects whose state the cache holds now (bounded by `OBJECT_CACHE_MAX` for what
    /// readers load).
    pub fn cached_objects(&self) -> usize {
        self.objects
            .shards
            .iter()
            .map(|shard| shard.lock().len())
            .sum()
    }

    /// The objset block must be written at the next commit (its ZIL header changed).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The next `create_object` tries number `id` first (intent log replay recreates
    /// objects under the numbers they had).
    pub fn set_next_object_hint(&mut self, id: u64) {
        self.next_object = id.clamp(1, OBJECT_ID_MAX);
    }

    /// What the syncs since the last call gave birth to, freed, and handed to the dead list
    /// (the dataset layer's share of a commit); the counters start again from zero.
    pub fn take_space_changes(&mut self) -> (BlockSpace, BlockSpace, Vec<BlockPointer>) {
        (
            std::mem::take(&mut self.born),
            std::mem::take(&mut self.freed),
            std::mem::take(&mut self.dead_blocks),
        )
    }

    /// Allocates a new object number and creates the object.
    pub fn create_object(
        &mut self,
        ctx: &IoCtx<'_>,
        object_type: u8,
        block_size_bytes: u32,
        bonus_type: u8,
        bonus_len: usize,
    ) -> Result<ObjectId, DmuError> {
        let candidate = self.find_free_object(ctx, self.next_object)?;
        self.next_object = candidate + 1;
        self.claim_object(
            candidate,
            object_type,
            block_size_bytes,
            bonus_type,
            bonus_len,
        );
        Ok(ObjectId(candidate))
    }

    /// The first free object number at or after `from` (OpenZFS `dmu_object_alloc_impl`
    /// with `dnode_next_offset(DNODE_FIND_HOLE)`): a meta-dnode block that is clean and
    /// whose block pointer's fill says all its dnodes are in use is skipped whole (an
    /// object freed in the open txg is not reused before it commits, as in OpenZFS); in
    /// the others each dnode is looked at (the open txg's creations and frees included).
    fn find_free_object(&self, ctx: &IoCtx<'_>, from: u64) -> Result<u64, DmuError> {
        let mut candidate = from.max(1);
        let mut checked_block = None;
        loop {
            if candidate >= OBJECT_ID_MAX {
                return Err(DmuError::Invalid("object numbers exhausted".to_string()));
            }
            let blkid = candidate / DNODES_PER_BLOCK;
            if checked_block != Some(blkid) {
                checked_block = Some(blkid);
                if self.dnode_block_full(ctx, blkid)? {
                    candidate = (blkid + 1) * DNODES_PER_BLOCK;
                    continue;
                }
            }
            if !self.object_exists(ctx, ObjectId(candidate))? {
                return Ok(candidate);
            }
            candidate += 1;
        }
    }

    /// Whether meta-dnode block `blkid` is, as last committed, full (its fill is
    /// `DNODES_PER_BLOCK`) and not being changed in memory.
    fn dnode_block_full(&self, ctx: &IoCtx<'_>, blkid: u64) -> Result<bool, DmuError> {
        {
            let meta = self.meta.lock();
            if meta.dbufs.contains_key(&(0, blkid)) || blkid > meta.phys.max_block_id {
                return Ok(false);
            }
        }
        let bp = self.block_pointer_shared(ctx, 0, 0, blkid)?;
        Ok(!bp.is_hole() && bp.fill >= DNODES_PER_BLOCK)
    }

    /// Creates an object at a chosen number (fixed MOS objects, receive).
    pub fn create_object_at(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        object_type: u8,
        block_size_bytes: u32,
        bonus_type: u8,
        bonus_len: usize,
    ) -> Result<(), DmuError> {
        if id.0 == 0 || id.0 >= OBJECT_ID_MAX {
            return Err(DmuError::Invalid(format!("object number {id}")));
        }
        if self.object_exists(ctx, id)? {
            return Err(DmuError::Invalid(format!("object {id} already exists")));
        }
        self.claim_object(id.0, object_type, block_size_bytes, bonus_type, bonus_len);
        self.next_object = self.next_object.max(id.0 + 1);
        Ok(())
    }

    fn claim_object(
        &mut self,
        id: u64,
        object_type: u8,
        block_size_bytes: u32,
        bonus_type: u8,
        bonus_len: usize,
    ) {
        let block_size_bytes = round_up_shift(u64::from(block_size_bytes.max(512)), 9) as u32;
        let nblkptr = if bonus_len > DnodePhys::bonus_capacity(3) {
            1
        } else {
            3
        };
        let phys = DnodePhys::new(
            object_type,
            block_size_bytes,
            nblkptr,
            bonus_type,
            bonus_len,
        );
        let mut state = ObjectState::new(phys);
        state.dnode_dirty = true;
        self.objects.insert(id, state);
        self.dirty = true;
    }

    /// Changes an object's type (`dmu_object_zapify` turns a DSL dataset into a ZAP).
    pub fn set_object_type(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        object_type: u8,
    ) -> Result<(), DmuError> {
        let state = self.state(ctx, id)?;
        state.phys.object_type = object_type;
        state.dnode_dirty = true;
        self.dirty = true;
        Ok(())
    }

    /// Changes a single-block object's data block size (OpenZFS
    /// `dmu_object_set_blocksize`: a micro ZAP grows its block by 512 bytes, and one that
    /// turns fat takes 16 KiB blocks). Block 0 is cut or zero-extended to the new size.
    pub fn set_data_block_size(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        size_bytes: u32,
    ) -> Result<(), DmuError> {
        let objset = self.id;
        let state = self.state(ctx, id)?;
        if state.phys.max_block_id > 0 {
            return Err(DmuError::Invalid(format!(
                "object {id}: block size of a multi-block object"
            )));
        }
        let new_size = round_up_shift(u64::from(size_bytes.max(512)), 9);
        let dbuf = load_dbuf(state, ctx, objset, id.0, 0, 0)?;
        let newly_dirty = if dbuf.dirty {
            new_size.saturating_sub(dbuf.data.len() as u64)
        } else {
            new_size
        };
        dbuf.data.resize(new_size as usize, 0);
        dbuf.stored = None;
        dbuf.dirty = true;
        state.phys.data_block_size_bytes = new_size as u32;
        state.dnode_dirty = true;
        self.dirty = true;
        self.dirty_data_bytes += newly_dirty;
        Ok(())
    }

    pub fn object_exists(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<bool, DmuError> {
        if let Some(state) = self.objects.lock(id.0).get(&id.0) {
            return Ok(!state.phys.is_free());
        }
        Ok(!self.read_dnode(ctx, id.0)?.is_free())
    }

    /// Object `id`'s dnode as the meta-dnode's tree holds it (a clean meta-dnode block
    /// loaded as a dbuf, else the block read through the ARC; dnode blocks a reader reads
    /// are not kept as dbufs: the ARC holds them).
    fn read_dnode(&self, ctx: &IoCtx<'_>, id: u64) -> Result<DnodePhys, DmuError> {
        if is_special(id) {
            // The accounting dnodes live in the objset block (`userused`).
            return Ok(self
                .accounting
                .get(&id)
                .cloned()
                .unwrap_or_else(DnodePhys::free));
        }
        let offset = id * DNODE_SIZE_BYTES as u64;
        let blkid = offset / u64::from(META_DNODE_BLOCK_SIZE_BYTES);
        let within = (offset % u64::from(META_DNODE_BLOCK_SIZE_BYTES)) as usize;
        let decode = |data: &[u8]| {
            data.get(within..within + DNODE_SIZE_BYTES)
                .ok_or_else(|| DmuError::Corrupt(format!("object {id}: dnode block too short")))
                .and_then(|bytes| {
                    DnodePhys::decode(bytes)
                        .map_err(|e| DmuError::Corrupt(format!("object {id}: {e}")))
                })
        };
        {
            let meta = self.meta.lock();
            if let Some(dbuf) = meta.dbufs.get(&(0, blkid)) {
                return decode(&dbuf.data);
            }
            if blkid > meta.phys.max_block_id {
                return Ok(DnodePhys::free());
            }
        }
        let bp = self.block_pointer_shared(ctx, 0, 0, blkid)?;
        if bp.is_hole() {
            return Ok(DnodePhys::free());
        }
        let block = ctx.zio.read_block(
            ctx.root,
            &bp,
            Some(Bookmark {
                objset: self.id,
                object: 0,
                level: 0,
                blkid,
            }),
        )?;
        decode(&block)
    }

    fn state(&mut self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<&mut ObjectState, DmuError> {
        if !self.objects.contains_key(&id.0) {
            let phys = self.read_dnode(ctx, id.0)?;
            if phys.is_free() {
                return Err(DmuError::NoSuchObject(id));
            }
            self.objects.insert(id.0, ObjectState::new(phys));
        }
        match self.objects.get_mut(&id.0) {
            Some(state) if !state.phys.is_free() => Ok(state),
            _ => Err(DmuError::NoSuchObject(id)),
        }
    }

    /// Runs `look` on object `id`'s state (0: the meta-dnode) under its shard's lock,
    /// loading the dnode first if needed: the dnode is read with no lock held, then
    /// inserted unless a racing reader was first (both read the same bytes). `look` must
    /// not do I/O. Inserting into a full shard drops its clean states first (the cache
    /// bound, `OBJECT_CACHE_MAX` over all shards); dirty ones stay (`state_is_dirty`).
    fn with_state<R>(
        &self,
        ctx: &IoCtx<'_>,
        id: u64,
        look: impl FnOnce(&mut ObjectState) -> R,
    ) -> Result<R, DmuError> {
        if id == 0 {
            return Ok(look(&mut self.meta.lock()));
        }
        {
            let mut shard = self.objects.lock(id);
            if let Some(state) = shard.get_mut(&id) {
                if state.phys.is_free() {
                    return Err(DmuError::NoSuchObject(ObjectId(id)));
                }
                return Ok(look(state));
            }
        }
        let phys = self.read_dnode(ctx, id)?;
        if phys.is_free() {
            return Err(DmuError::NoSuchObject(ObjectId(id)));
        }
        let mut shard = self.objects.lock(id);
        if shard.len() >= OBJECT_CACHE_MAX / CACHE_SHARDS && !shard.contains_key(&id) {
            shard.retain(|_, state| state_is_dirty(state));
        }
        let state = shard.entry(id).or_insert_with(|| ObjectState::new(phys));
        if state.phys.is_free() {
            return Err(DmuError::NoSuchObject(ObjectId(id)));
        }
        Ok(look(state))
    }

    /// The block pointer of (level, blkid) of object `object` (0: the meta-dnode) through
    /// shared access: from the dnode or a loaded parent dbuf under the lock; otherwise the
    /// parent's own pointer (recursively), the parent block read with no lock held, and
    /// then kept as a clean dbuf unless a racing reader kept it first.
    pub(crate) fn block_pointer_shared(
        &self,
        ctx: &IoCtx<'_>,
        object: u64,
        level: u8,
        blkid: u64,
    ) -> Result<BlockPointer, DmuError> {
        // Transient, on the stack: a block pointer (with its embedded payload) unboxed.
        #[allow(clippy::large_enum_variant)]
        enum Step {
            Found(BlockPointer),
            Parent { id: u64, slot: usize, size: usize },
        }
        let step = self.with_state(ctx, object, |state| -> Result<Step, DmuError> {
            let nlevels = state.phys.nlevels;
            if level + 1 >= nlevels {
                if level + 1 > nlevels {
                    return Ok(Step::Found(BlockPointer::HOLE));
                }
                return Ok(Step::Found(
                    state
                        .phys
                        .blkptr
                        .get(blkid as usize)
                        .copied()
                        .unwrap_or(BlockPointer::HOLE),
                ));
            }
            let per = state.phys.entries_per_indirect();
            let levels_above = u32::from(nlevels - 1 - level);
            let addressable =
                (state.phys.blkptr.len() as u64).saturating_mul(per.saturating_pow(levels_above));
            if blkid >= addressable {
                return Ok(Step::Found(BlockPointer::HOLE));
            }
            let parent_id = blkid / per;
            let slot = (blkid % per) as usize * BLKPTR_SIZE_BYTES;
            match state.dbufs.get(&(level + 1, parent_id)) {
                Some(parent) => Ok(Step::Found(decode_slot(&parent.data, slot, object)?)),
                None => Ok(Step::Parent {
                    id: parent_id,
                    slot,
                    size: state.block_size(level + 1),
                }),
            }
        })??;
        let (id, slot, size) = match step {
            Step::Found(bp) => return Ok(bp),
            Step::Parent { id, slot, size } => (id, slot, size),
        };
        let parent_bp = self.block_pointer_shared(ctx, object, level + 1, id)?;
        if parent_bp.is_hole() {
            return Ok(BlockPointer::HOLE);
        }
        let block = ctx.zio.read_block(
            ctx.root,
            &parent_bp,
            Some(Bookmark {
                objset: self.id,
                object,
                level: level + 1,
                blkid: id,
            }),
        )?;
        if block.len() != size {
            return Err(DmuError::Corrupt(format!(
                "object {object} L{} block {id} is {} bytes, expected {size}",
                level + 1,
                block.len()
            )));
        }
        let bp = decode_slot(&block, slot, object)?;
        self.with_state(ctx, object, |state| {
            state.dbufs.entry((level + 1, id)).or_insert_with(|| Dbuf {
                data: block.to_vec(),
                dirty: false,
                bp: parent_bp,
                stored: None,
                filled_bytes: 0,
            });
        })?;
        Ok(bp)
    }

    /// Bytes of dirty level-0 data of `id` that has no block yet (new records, or records
    /// whose old block a truncate or hole already freed): what `used_bytes` will grow by
    /// when the txg commits, before compression. `stat`'s block count adds it, as
    /// OpenZFS's does, so a file being rewritten never shows zero blocks.
    pub fn pending_new_bytes(&self, id: ObjectId) -> u64 {
        let shard = self.objects.lock(id.0);
        let Some(state) = shard.get(&id.0) else {
            return 0;
        };
        state
            .dbufs
            .range((0, 0)..=(0, u64::MAX))
            .filter(|(_, d)| d.dirty && d.bp.is_hole())
            .map(|(_, d)| d.data.len() as u64)
            .sum()
    }

    pub fn dnode(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<DnodePhys, DmuError> {
        self.with_state(ctx, id.0, |state| state.phys.clone())
    }

    /// The largest data block size objects may grow to (the dataset's record size).
    pub fn block_size_max(&self) -> u32 {
        self.block_size_max_bytes
    }

    /// `dn_datablksz`, without copying the dnode (its bonus and block pointers) as
    /// `dnode` does: the ZAP asks it on every operation.
    pub fn data_block_size_bytes(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<u32, DmuError> {
        self.with_state(ctx, id.0, |state| state.phys.data_block_size_bytes)
    }

    /// Sets the largest data block size objects may grow to (the record size): a
    /// single-block object grows its block up to this; multi-block objects keep theirs.
    pub fn set_block_size_max(&mut self, size_bytes: u32) {
        self.block_size_max_bytes =
            size_bytes.clamp(512, crate::types::BLOCK_SIZE_MAX_BYTES as u32);
    }

    pub fn bonus(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<Vec<u8>, DmuError> {
        self.with_state(ctx, id.0, |state| state.phys.bonus.clone())
    }

    pub fn set_bonus(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        bonus: &[u8],
    ) -> Result<(), DmuError> {
        let state = self.state(ctx, id)?;
        let spill = match &state.spill_dirty {
            Some(pending) => pending.is_some(),
            None => state.phys.spill.is_some(),
        };
        if bonus.len() > bonus_room(state.phys.blkptr.len(), spill) {
            return Err(DmuError::Invalid(format!("bonus of {} bytes", bonus.len())));
        }
        state.phys.bonus = bonus.to_vec();
        state.dnode_dirty = true;
        self.dirty = true;
        Ok(())
    }

    /// Sets an object's bonus and its spill block together (OpenZFS `sa_build_layouts`:
    /// `dmu_set_bonus`, then the spill buffer held, resized and dirtied, or `dmu_rm_spill`).
    /// `spill` is the whole block (a multiple of 512 bytes, at most 128 KiB) or `None` to
    /// remove it. With a spill block the bonus must leave the dnode's last 128 bytes to
    /// its pointer (`DN_SPILL_BLKPTR`). The block is written at `sync`, typed `DMU_OT_SA`.
    pub fn set_bonus_and_spill(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        bonus: &[u8],
        spill: Option<&[u8]>,
    ) -> Result<(), DmuError> {
        if let Some(block) = spill {
            if block.is_empty()
                || block.len() > SPILL_BLOCK_SIZE_MAX_BYTES
                || !block.len().is_multiple_of(512)
            {
                return Err(DmuError::Invalid(format!(
                    "spill block of {} bytes",
                    block.len()
                )));
            }
        }
        let state = self.state(ctx, id)?;
        if bonus.len() > bonus_room(state.phys.blkptr.len(), spill.is_some()) {
            return Err(DmuError::Invalid(format!("bonus of {} bytes", bonus.len())));
        }
        let had_spill = match &state.spill_dirty {
            Some(pending) => pending.is_some(),
            None => state.phys.spill.is_some(),
        };
        if spill.is_some() || had_spill {
            state.spill_dirty = Some(spill.map(<[u8]>::to_vec));
        }
        state.phys.bonus = bonus.to_vec();
        state.dnode_dirty = true;
        self.dirty = true;
        Ok(())
    }

    /// The object's spill block (`dmu_spill_hold_by_bonus`), as the open txg left it:
    /// `None` when it has none.
    pub fn spill(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<Option<Vec<u8>>, DmuError> {
        let objset = self.id;
        let (pending, bp) = self.with_state(ctx, id.0, |state| {
            (state.spill_dirty.clone(), state.phys.spill)
        })?;
        if let Some(pending) = pending {
            return Ok(pending);
        }
        let Some(bp) = bp else {
            return Ok(None);
        };
        if bp.is_hole() {
            return Err(DmuError::Corrupt(format!(
                "object {id} has a hole spill pointer"
            )));
        }
        let data = ctx.zio.read_block(
            ctx.root,
            &bp,
            Some(Bookmark {
                objset,
                object: id.0,
                level: 0,
                blkid: DMU_SPILL_BLKID,
            }),
        )?;
        Ok(Some(data.to_vec()))
    }

    /// The object's bonus type (`dn_bonustype`), without copying its dnode.
    pub fn bonus_type(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<u8, DmuError> {
        self.with_state(ctx, id.0, |state| state.phys.bonus_type)
    }

    /// The object's block extent, `(dn_maxblkid + 1) * block size`: all the DMU knows of
    /// its length (its byte size is its owner's, see `dnode`).
    pub fn extent_bytes(&self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<u64, DmuError> {
        self.with_state(ctx, id.0, |state| extent_of(&state.phys))
    }

    /// Bytes [offset, offset + len) of object `id`, cut at its block extent (its owner
    /// cuts at its own size and reads zeros past the extent). Through shared
    /// access: dirty dbufs of the open txg are copied under the object's lock, block
    /// pointers come from `block_pointer_shared`, and the blocks on disk are read through
    /// the ARC with no lock held (in parallel when there are several).
    pub fn read(
        &self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, DmuError> {
        let objset = self.id;
        let (size, block_size) = self.with_state(ctx, id.0, |state| {
            (
                extent_of(&state.phys),
                u64::from(state.phys.data_block_size_bytes),
            )
        })?;
        let end = offset.saturating_add(len as u64).min(size);
        if offset >= end {
            return Ok(Vec::new());
        }
        if block_size == 0 {
            return Err(DmuError::Corrupt(format!("object {id} has no block size")));
        }
        // Plan: each piece comes from a dirty dbuf (copied now), a hole, or a block on
        // disk. Disk blocks are then read in parallel (checksum and decompression on every
        // core, several device reads in flight) and copied out in order.
        // One per block of a read; the pointer (with its embedded payload) stays unboxed.
        #[allow(clippy::large_enum_variant)]
        enum Piece {
            Memory(Vec<u8>),
            Zeros,
            Disk(BlockPointer),
        }
        let mut pieces: Vec<(u64, usize, usize, Piece)> = Vec::new();
        let mut position = offset;
        while position < end {
            let blkid = position / block_size;
            let within = (position % block_size) as usize;
            let take = ((block_size - within as u64).min(end - position)) as usize;
            let memory = self.with_state(ctx, id.0, |state| {
                state
                    .dbufs
                    .get(&(0, blkid))
                    .map(|dbuf| dbuf.data.get(within..within + take).map(<[u8]>::to_vec))
            })?;
            let piece = match memory {
                Some(Some(bytes)) => Piece::Memory(bytes),
                Some(None) => {
                    return Err(DmuError::Corrupt(format!(
                        "object {id} block {blkid} is shorter than its block size"
                    )))
                }
                None => {
                    let bp = self.block_pointer_shared(ctx, id.0, 0, blkid)?;
                    if bp.is_hole() {
                        Piece::Zeros
                    } else {
                        Piece::Disk(bp)
                    }
                }
            };
            pieces.push((blkid, within, take, piece));
            position += take as u64;
        }
        let disk_pieces = pieces
            .iter()
            .filter(|p| matches!(p.3, Piece::Disk(_)))
            .count();
        let fetch = |(blkid, _, _, piece): &(u64, usize, usize, Piece)| match piece {
            Piece::Disk(bp) => Some(ctx.zio.read_block(
                ctx.root,
                bp,
                Some(Bookmark {
                    objset,
                    object: id.0,
                    level: 0,
                    blkid: *blkid,
                }),
            )),
            _ => None,
        };
        // Small reads (one block on disk at most) skip the thread pool.
        let fetched: Vec<Option<Result<std::sync::Arc<Vec<u8>>, ZioError>>> = if disk_pieces > 1 {
            use rayon::prelude::*;
            pieces.par_iter().map(fetch).collect()
        } else {
            pieces.iter().map(fetch).collect()
        };
        // One piece from a dirty dbuf (a ZAP block, a bonus-sized object): it was copied
        // out above already; return that copy rather than copying it again.
        if pieces.len() == 1 && matches!(pieces[0].3, Piece::Memory(_)) {
            if let Some((_, _, _, Piece::Memory(bytes))) = pieces.pop() {
                return Ok(bytes);
            }
        }
        let mut out = Vec::with_capacity((end - offset) as usize);
        for ((blkid, within, take, piece), data) in pieces.into_iter().zip(fetched) {
            match (piece, data) {
                (Piece::Memory(bytes), _) => out.extend_from_slice(&bytes),
                (Piece::Zeros, _) => out.resize(out.len() + take, 0),
                (Piece::Disk(_), Some(result)) => {
                    let data = result?;
                    if data.len() < within + take {
                        return Err(DmuError::Corrupt(format!(
                            "object {id} block {blkid} is {} bytes, expected {block_size}",
                            data.len()
                        )));
                    }
                    out.extend_from_slice(&data[within..within + take]);
                }
                (Piece::Disk(_), None) => {
                    return Err(DmuError::Corrupt("read plan lost a block".to_string()));
                }
            }
        }
        Ok(out)
    }

    pub fn write(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        offset: u64,
        data: &[u8],
    ) -> Result<(), DmuError> {
        let objset = self.id;
        let end = offset.checked_add(data.len() as u64).ok_or_else(|| {
            DmuError::Invalid("write past the end of the address space".to_string())
        })?;
        let maximum = u64::from(self.block_size_max_bytes);
        let state = self.state(ctx, id)?;
        let mut newly_dirty = grow_block_size(state, ctx, objset, id.0, end, maximum)?;
        let block_size = u64::from(state.phys.data_block_size_bytes);
        let mut position = offset;
        let mut consumed = 0usize;
        while position < end {
            let blkid = position / block_size;
            let within = (position % block_size) as usize;
            let take = ((block_size - within as u64).min(end - position)) as usize;
            ensure_levels(state, ctx, objset, id.0, blkid)?;
            let whole = within == 0 && take as u64 == block_size;
            let dbuf = if whole && !state.dbufs.contains_key(&(0, blkid)) {
                let bp = block_pointer(state, ctx, objset, id.0, 0, blkid)?;
                state.dbufs.entry((0, blkid)).or_insert(Dbuf {
                    data: data[consumed..consumed + take].to_vec(),
                    dirty: false,
                    bp,
                    stored: None,
                    filled_bytes: 0,
                })
            } else {
                load_dbuf(state, ctx, objset, id.0, 0, blkid)?
            };
            dbuf.data[within..within + take].copy_from_slice(&data[consumed..consumed + take]);
            dbuf.stored = None;
            if !dbuf.dirty {
                newly_dirty += dbuf.data.len() as u64;
                dbuf.filled_bytes = 0;
            }
            dbuf.filled_bytes += take;
            dbuf.dirty = true;
            state.phys.max_block_id = state.phys.max_block_id.max(blkid);
            position += take as u64;
            consumed += take;
        }
        state.dnode_dirty = true;
        self.dirty = true;
        self.dirty_data_bytes += newly_dirty;
        Ok(())
    }

    /// `write` of a block that arrived in its stored compressed form (`zfs receive` of a
    /// `-c` stream): `data` is its first logical bytes (the rest of the block being zeros),
    /// `stored` what the sync writes as is instead of compressing the block again. When
    /// the block does not start at `offset` or holds anything else past `data`, this is a
    /// plain write.
    pub fn write_stored(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        offset: u64,
        data: &[u8],
        stored: StoredBlock,
    ) -> Result<(), DmuError> {
        self.write(ctx, id, offset, data)?;
        let state = self.state(ctx, id)?;
        let block_size = u64::from(state.phys.data_block_size_bytes);
        if block_size == 0 || !offset.is_multiple_of(block_size) || data.len() as u64 > block_size {
            return Ok(());
        }
        if let Some(dbuf) = state.dbufs.get_mut(&(0, offset / block_size)) {
            let tail_zero = dbuf.data.get(data.len()..).is_some_and(is_all_zero);
            if tail_zero && dbuf.data.len() as u64 == block_size {
                dbuf.stored = Some(stored);
            }
        }
        Ok(())
    }

    /// Cuts the object at `size_bytes` (OpenZFS `dmu_free_range` to the end): zeroes the
    /// tail of the block holding it and frees every block past it. The DMU keeps no size
    /// (the owner does, see `dnode`): a size at or past the block extent changes nothing.
    pub fn truncate(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        size_bytes: u64,
    ) -> Result<(), DmuError> {
        let objset = self.id;
        let state = self.state(ctx, id)?;
        let old_size = extent_of(&state.phys);
        if size_bytes >= old_size {
            return Ok(());
        }
        let block_size = u64::from(state.phys.data_block_size_bytes);
        let within = size_bytes % block_size;
        if within != 0 {
            let blkid = size_bytes / block_size;
            zero_in_block(
                state,
                ctx,
                objset,
                id.0,
                blkid,
                within as usize,
                block_size as usize,
            )?;
        }
        let first_free = size_bytes.div_ceil(block_size);
        let last = old_size.div_ceil(block_size);
        self.free_range_blocks(ctx, id, first_free, last)?;
        let state = self.state(ctx, id)?;
        state.phys.max_block_id = first_free.saturating_sub(1);
        state.dnode_dirty = true;
        self.dirty = true;
        Ok(())
    }

    /// One batch of a long truncate (OpenZFS `dmu_free_long_range`): frees the last
    /// `max_blocks` allocated level-0 blocks lying wholly past `size_bytes`, from the end
    /// backwards, without changing the size. Returns whether none is left, so a caller
    /// can commit between batches and keep what one txg dirties (the indirect blocks
    /// above the freed ones) bounded; the `truncate` that follows is then cheap.
    pub fn free_tail_batch(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        size_bytes: u64,
        max_blocks: usize,
    ) -> Result<bool, DmuError> {
        let state = self.state(ctx, id)?;
        let block_size = u64::from(state.phys.data_block_size_bytes).max(1);
        let first = size_bytes.div_ceil(block_size);
        self.free_blocks_batch(ctx, id, first, u64::MAX, max_blocks)
    }

    /// One batch of a long hole punch: frees the last `max_blocks` allocated level-0
    /// blocks lying wholly inside [offset, offset + len) (and below the size), without
    /// zeroing partial blocks; `free_range` finishes the punch. Returns whether none is
    /// left.
    pub fn free_range_batch(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        offset: u64,
        len: u64,
        max_blocks: usize,
    ) -> Result<bool, DmuError> {
        let state = self.state(ctx, id)?;
        let block_size = u64::from(state.phys.data_block_size_bytes).max(1);
        let end = offset.saturating_add(len).min(extent_of(&state.phys));
        if offset >= end {
            return Ok(true);
        }
        let first = offset.div_ceil(block_size);
        let last = end / block_size;
        self.free_blocks_batch(ctx, id, first, last, max_blocks)
    }

    /// Frees the last `max_blocks` allocated level-0 blocks of [first, last), from the end
    /// backwards; whether none is left.
    fn free_blocks_batch(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        first: u64,
        last: u64,
        max_blocks: usize,
    ) -> Result<bool, DmuError> {
        let objset = self.id;
        let state = self.state(ctx, id)?;
        let last = last.min(state.phys.capacity_blocks(state.phys.nlevels));
        if first >= last || max_blocks == 0 {
            return Ok(true);
        }
        let mut found = Vec::new();
        if let Some(top) = state.phys.nlevels.checked_sub(1) {
            for (i, bp) in state.phys.blkptr.iter().enumerate().rev() {
                let tail = LiveTail {
                    first,
                    last,
                    max: max_blocks,
                };
                collect_live_tail(
                    state, ctx, objset, id.0, top, i as u64, *bp, &tail, &mut found,
                )?;
                if found.len() >= max_blocks {
                    break;
                }
            }
        }
        let Some(&lowest) = found.iter().min() else {
            return Ok(true);
        };
        self.free_range_blocks(ctx, id, lowest, last)?;
        Ok(found.len() < max_blocks)
    }

    /// Punches a hole: whole blocks in the range become holes, partial ones are zeroed.
    pub fn free_range(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        offset: u64,
        len: u64,
    ) -> Result<(), DmuError> {
        let objset = self.id;
        let state = self.state(ctx, id)?;
        let end = offset.saturating_add(len).min(extent_of(&state.phys));
        if offset >= end {
            return Ok(());
        }
        let block_size = u64::from(state.phys.data_block_size_bytes);
        let first_whole = offset.div_ceil(block_size);
        let last_whole = end / block_size;
        for (start, stop) in [
            (offset, (first_whole * block_size).min(end)),
            ((last_whole * block_size).max(offset), end),
        ] {
            if start < stop {
                let blkid = start / block_size;
                let from = (start % block_size) as usize;
                zero_in_block(
                    state,
                    ctx,
                    objset,
                    id.0,
                    blkid,
                    from,
                    from + (stop - start) as usize,
                )?;
            }
        }
        if first_whole < last_whole {
            self.free_range_blocks(ctx, id, first_whole, last_whole)?;
        }
        self.dirty = true;
        Ok(())
    }

    /// Turns level-0 blocks [first, last) into holes. Costs what the range holds (its
    /// blocks and the indirect blocks above them), not its length: only the live tree's
    /// non-hole pointers and loaded dbufs are visited (OpenZFS `dnode_free_range` walks
    /// the same way), so truncating a file written at 2^63 is cheap.
    fn free_range_blocks(
        &mut self,
        ctx: &IoCtx<'_>,
        id: ObjectId,
        first: u64,
        last: u64,
    ) -> Result<(), DmuError> {
        let objset = self.id;
        let policy = self.policy;
        let state = self.state(ctx, id)?;
        let capacity = state.phys.capacity_blocks(state.phys.nlevels);
        let last = last.min(capacity);
        let mut live = Vec::new();
        if first < last {
            walk_live_tree(
                state,
                ctx,
                objset,
                id.0,
                first,
                last,
                &mut |level, blkid, _| {
                    if level == 0 {
                        live.push(blkid);
                    }
                },
            )?;
        }
        let mut released = Vec::new();
        for blkid in live {
            let had_dbuf = state.dbufs.remove(&(0, blkid));
            let old = match had_dbuf {
                Some(dbuf) => dbuf.bp,
                None => block_pointer(state, ctx, objset, id.0, 0, blkid)?,
            };
            if !old.is_hole() {
                released.push(old);
                // OpenZFS `free_blocks` with hole_birth: the hole keeps the block's
                // logical size, type and level, and records the txg it appeared in.
                let hole = ctx.zio.hole(ctx.txg, old.lsize_bytes, old.object_type, 0);
                set_child_bp(state, ctx, objset, id.0, 0, blkid, hole)?;
            }
        }
        let released_bytes: u64 = released.iter().map(|bp| ctx.root.dsize_bytes(bp)).sum();
        state.phys.used_bytes = state.phys.used_bytes.saturating_sub(released_bytes);
        state.dnode_dirty = true;
        for bp in released {
            release_block(ctx, &policy, &mut self.dead_blocks, &mut self.freed, &bp);
        }
        self.dirty = true;
        Ok(())
    }

    /// Frees an object and all its blocks.
    pub fn free_object(&mut self, ctx: &IoCtx<'_>, id: ObjectId) -> Result<(), DmuError> {
        let policy = self.policy;
        let objset = self.id;
        let state = self.state(ctx, id)?;
        let mut blocks = Vec::new();
        collect_tree(state, ctx, objset, id.0, &mut blocks)?;
        // The spill block goes with the object (`dnode_free`: `dbuf_free_range` of
        // `DMU_SPILL_BLKID`); a pending one was never written.
        blocks.extend(state.phys.spill.take());
        state.spill_dirty = None;
        state.dbufs.clear();
        state.phys = DnodePhys::free();
        state.dnode_dirty = true;
        for bp in blocks {
            release_block(ctx, &policy, &mut self.dead_blocks, &mut self.freed, &bp);
        }
        self.next_object = self.next_object.min(id.0);
        self.dirty = true;
        Ok(())
    }

    /// Every allocated object number, in order (walks the dnode array).
    pub fn object_ids(&mut self, ctx: &IoCtx<'_>) -> Result<Vec<ObjectId>, DmuError> {
        let mut ids = Vec::new();
        let blocks = self.meta.get_mut().phys.max_block_id + 1;
        for blkid in 0..blocks {
            for slot in 0..DNODES_PER_BLOCK {
                let id = blkid * DNODES_PER_BLOCK + slot;
                if id == 0 {
                    continue;
                }
                if self.object_exists(ctx, ObjectId(id))? {
                    ids.push(ObjectId(id));
                }
            }
        }
        for (&id, state) in self.objects.iter_mut() {
            if !state.phys.is_free() && id / DNODES_PER_BLOCK >= blocks && !is_special(id) {
                ids.push(ObjectId(id));
            }
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Writes everything dirty and returns the new objset block pointer.
    pub fn sync(
        &mut self,
        ctx: &IoCtx<'_>,
        old_bp: &BlockPointer,
    ) -> Result<BlockPointer, DmuError> {
        self.sync_pass(ctx, old_bp, 1)
    }

    /// `sync` in sync pass `pass` of its txg (OpenZFS `spa_sync_pass`): the MOS syncs once
    /// per pass until its space maps stop changing (`spa::txg`, "sync passes"). From
    /// `zio::SYNC_PASS_REWRITE` a dirty block born in this txg is overwritten in place when
    /// its size allows (no allocation, no free), and from `zio::SYNC_PASS_DONT_COMPRESS` blocks
    /// are not compressed, so a pass that only rewrites allocates nothing.
    pub fn sync_pass(
        &mut self,
        ctx: &IoCtx<'_>,
        old_bp: &BlockPointer,
        pass: u32,
    ) -> Result<BlockPointer, DmuError> {
        debug_assert!(pass >= 1);
        let policy = self.policy;
        let objset = self.id;
        // 0. Accounting dnodes an object set other than a ZPL one does not carry (module
        // header); a ZPL one's are kept (`userused`).
        if !self.userused_enabled() {
            for (object, dnode) in std::mem::take(&mut self.accounting) {
                let mut blocks = Vec::new();
                collect_tree(&ObjectState::new(dnode), ctx, objset, object, &mut blocks)?;
                for bp in blocks {
                    release_block(ctx, &policy, &mut self.dead_blocks, &mut self.freed, &bp);
                }
                self.flags &= !OBJSET_FLAGS_ACCOUNTING;
            }
        }
        // Each dirty dnode's charge as the last synced txg left it (`dn_oldused`).
        let old_charges = self.userquota_old_charges(ctx)?;
        // 1. Dirty objects' blocks, level by level across all objects.
        let mut ids: Vec<u64> = self.objects.ids();
        ids.retain(|id| !is_special(*id));
        ids.sort_unstable();
        {
            let mut states: Vec<(u64, &mut ObjectState)> = self
                .objects
                .iter_mut()
                .filter(|(id, s)| !s.phys.is_free() && !is_special(**id))
                .map(|(id, s)| (*id, s))
                .collect();
            states.sort_by_key(|(id, _)| *id);
            sync_spills(
                ctx,
                &policy,
                &mut states,
                &mut self.dead_blocks,
                &mut self.freed,
                &mut self.born,
                pass,
            )?;
            sync_trees(
                ctx,
                objset,
                &policy,
                &mut states,
                &mut self.dead_blocks,
                &mut self.freed,
                &mut self.born,
                false,
                pass,
            )?;
        }
        // 1b. User/group/project accounting of the synced dnodes, and its ZAPs' blocks.
        self.userquota_updates(ctx, old_charges, pass)?;
        // 2. Changed dnodes into the meta-dnode's blocks.
        for id in ids {
            let dirty = self
                .objects
                .get_mut(&id)
                .map(|s| s.dnode_dirty)
                .unwrap_or(false);
            if !dirty {
                continue;
            }
            let mut bytes = [0u8; DNODE_SIZE_BYTES];
            if let Some(state) = self.objects.get_mut(&id) {
                state.phys.encode(&mut bytes);
                state.dnode_dirty = false;
            }
            let offset = id * DNODE_SIZE_BYTES as u64;
            let blkid = offset / u64::from(META_DNODE_BLOCK_SIZE_BYTES);
            let meta = self.meta.get_mut();
            ensure_levels(meta, ctx, objset, 0, blkid)?;
            let dbuf = load_dbuf(meta, ctx, objset, 0, 0, blkid)?;
            let within = (offset % u64::from(META_DNODE_BLOCK_SIZE_BYTES)) as usize;
            dbuf.data[within..within + DNODE_SIZE_BYTES].copy_from_slice(&bytes);
            dbuf.dirty = true;
            meta.phys.max_block_id = meta.phys.max_block_id.max(blkid);
        }
        // Free dnodes leave the cache; clean level-0 data leaves memory (the ARC keeps it).
        self.objects.retain(|_, s| !s.phys.is_free());
        // 3. The meta-dnode's own tree.
        {
            let mut states = vec![(0u64, self.meta.get_mut())];
            sync_trees(
                ctx,
                objset,
                &policy,
                &mut states,
                &mut self.dead_blocks,
                &mut self.freed,
                &mut self.born,
                true,
                pass,
            )?;
        }
        let meta = self.meta.get_mut();
        // 4. The objset block.
        let meta_phys = meta.phys.clone();
        let block = self.encode_block(&meta_phys);
        // OpenZFS `dmu_objset_write_ready`: the rootbp's fill is the number of objects in
        // use (the meta-dnode's top-level fills summed; the objects held in the objset block
        // itself are not counted). zdb -dd asserts it equals the objects it walks.
        let objects_in_use: u64 = meta_phys.blkptr.iter().map(|bp| bp.fill).sum();
        let props = pass_props(
            meta_props(&policy, object_type::OBJSET, 0, objects_in_use),
            pass,
        );
        let source = BlockSource {
            data: &block,
            props,
            stored: None,
            rewrite: rewrite_candidate(old_bp, pass),
        };
        let bp = ctx
            .zio
            .write_block_sources(ctx.root, vec![source], ctx.txg)?
            .into_iter()
            .next()
            .ok_or_else(|| DmuError::Corrupt("objset write came back empty".to_string()))?;
        if bp.same_dvas(old_bp) {
            ctx.zio.arc.remove(&crate::zio::BlockKey::of(old_bp));
        } else {
            self.born.add(&BlockSpace::of(ctx.root, &bp));
            if !old_bp.is_hole() {
                release_block(ctx, &policy, &mut self.dead_blocks, &mut self.freed, old_bp);
            }
        }
        for (_, state) in self.objects.iter_mut() {
            state.dbufs.retain(|(level, _), d| d.dirty || *level > 0);
        }
        self.objects
            .retain(|_, s| s.dnode_dirty || !s.dbufs.is_empty());
        if self.objects.len() > OBJECT_CACHE_MAX {
            self.objects.clear();
        }
        self.meta
            .get_mut()
            .dbufs
            .retain(|(level, _), d| d.dirty || *level > 0);
        self.dirty = false;
        self.dirty_data_bytes = 0;
        Ok(bp)
    }

    /// The objset block's bytes (`objset_phys_t`, see the module header): the meta-dnode
    /// through the engine's codec, the rest through the part-1 codec.
    fn encode_block(&self, meta: &DnodePhys) -> Vec<u8> {
        let free = || Some(OzDnode::free(ByteOrder::Little));
        let accounting = |object: u64| {
            self.accounting
                .get(&object)
                .map(|d| d.to_openzfs())
                .or_else(free)
        };
        let phys = OzObjset {
            order: ByteOrder::Little,
            meta_dnode: OzDnode::free(ByteOrder::Little),
            zil_header: self.zil_header,
            os_type: self.os_type as u64,
            flags: self.flags,
            portable_mac: [0u8; 32],
            local_mac: [0u8; 32],
            userused: accounting(DMU_USERUSED_OBJECT),
            groupused: accounting(DMU_GROUPUSED_OBJECT),
            projectused: accounting(DMU_PROJECTUSED_OBJECT),
        };
        let mut block = match phys.encode() {
            Ok(block) => block,
            Err(e) => panic!("objset block does not encode: {e}"),
        };
        debug_assert_eq!(block.len(), OBJSET_BLOCK_SIZE_BYTES);
        meta.encode(&mut block[..DNODE_SIZE_BYTES]);
        block
    }

    /// Every block pointer reachable from this objset (for scrub and MOS space marking),
    /// with its bookmark. Reads indirect blocks and dnode blocks as it goes.
    /// With `tolerant`, unreadable subtrees are skipped (scrub) instead of failing the walk.
    pub fn walk_blocks(
        ctx: &IoCtx<'_>,
        objset: u64,
        root_bp: &BlockPointer,
        visit: &mut dyn FnMut(&BlockPointer, Bookmark),
        tolerant: bool,
    ) -> Result<(), DmuError> {
        Self::walk_blocks_born_after(ctx, objset, root_bp, Txg(0), visit, tolerant)
    }

    /// `walk_blocks` limited to blocks born after `txg`: a subtree whose root was born at
    /// or before it is skipped whole (copy-on-write: nothing under it is newer), so the
    /// cost follows what changed since `txg`, not the object set's size.
    pub fn walk_blocks_born_after(
        ctx: &IoCtx<'_>,
        objset: u64,
        root_bp: &BlockPointer,
        txg: Txg,
        visit: &mut dyn FnMut(&BlockPointer, Bookmark),
        tolerant: bool,
    ) -> Result<(), DmuError> {
        if root_bp.is_hole() || root_bp.birth_txg <= txg {
            return Ok(());
        }
        let bookmark = |object, level, blkid| Bookmark {
            objset,
            object,
            level,
            blkid,
        };
        visit(root_bp, bookmark(0, 0, u64::MAX));
        let block = ctx
            .zio
            .read_block(ctx.root, root_bp, Some(bookmark(0, 0, u64::MAX)))?;
        if block.len() < DNODE_SIZE_BYTES {
            return Err(DmuError::Corrupt("objset block too short".to_string()));
        }
        let meta = DnodePhys::decode(&block[..DNODE_SIZE_BYTES])
            .map_err(|e| DmuError::Corrupt(e.to_string()))?;
        let mut dnode_blocks = Vec::new();
        walk_tree(
            ctx,
            objset,
            0,
            &meta,
            txg,
            visit,
            &mut |blkid, bp, data| {
                if bp.level == 0 {
                    dnode_blocks.push((blkid, data.to_vec()));
                }
            },
            tolerant,
        )?;
        // The accounting dnodes of an object set OpenZFS wrote (module header): their
        // blocks are the object set's too (scrub reads them, destroy frees them).
        for (object, offset) in ACCOUNTING_DNODES {
            let Some(bytes) = block.get(offset..offset + DNODE_SIZE_BYTES) else {
                continue;
            };
            let dnode = match DnodePhys::decode(bytes) {
                Ok(dnode) => dnode,
                Err(_) if tolerant => continue,
                Err(e) => {
                    return Err(DmuError::Corrupt(format!(
                        "accounting dnode {object:#x}: {e}"
                    )))
                }
            };
            if !dnode.is_free() {
                walk_tree(
                    ctx,
                    objset,
                    object,
                    &dnode,
                    txg,
                    visit,
                    &mut |_, _, _| {},
                    tolerant,
                )?;
            }
        }
        for (blkid, data) in dnode_blocks.iter() {
            for (slot, chunk) in data.chunks(DNODE_SIZE_BYTES).enumerate() {
                let id = blkid * DNODES_PER_BLOCK + slot as u64;
                if id == 0 || chunk.len() < DNODE_SIZE_BYTES {
                    continue;
                }
                let dnode = match DnodePhys::decode(chunk) {
                    Ok(dnode) => dnode,
                    Err(_) if tolerant => continue,
                    Err(e) => return Err(DmuError::Corrupt(format!("object {id}: {e}"))),
                };
                if !dnode.is_free() {
                    walk_tree(
                        ctx,
                        objset,
                        id,
                        &dnode,
                        txg,
                        visit,
                        &mut |_, _, _| {},
                        tolerant,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// Visits every block of one object's tree; `level0` sees level-0 data (only read when the
/// caller needs it: here always for the meta-dnode, never for others).
#[allow(clippy::too_many_arguments)]
fn walk_tree(
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    dnode: &DnodePhys,
    born_after: Txg,
    visit: &mut dyn FnMut(&BlockPointer, Bookmark),
    level0: &mut dyn FnMut(u64, &BlockPointer, &[u8]),
    tolerant: bool,
) -> Result<(), DmuError> {
    let per_indirect = dnode.entries_per_indirect();
    // The spill block (`traverse_dnode`: visited after the tree, bookmark
    // `DMU_SPILL_BLKID`); visited first here, which no caller depends on.
    if let Some(bp) = dnode
        .spill
        .filter(|bp| !bp.is_hole() && bp.birth_txg > born_after)
    {
        visit(
            &bp,
            Bookmark {
                objset,
                object,
                level: 0,
                blkid: DMU_SPILL_BLKID,
            },
        );
    }
    let mut stack: Vec<(BlockPointer, u8, u64)> = Vec::new();
    let top = dnode.nlevels.saturating_sub(1);
    for (i, bp) in dnode.blkptr.iter().enumerate().rev() {
        stack.push((*bp, top, i as u64));
    }
    while let Some((bp, level, blkid)) = stack.pop() {
        if bp.is_hole() || bp.birth_txg <= born_after {
            continue;
        }
        let bookmark = Bookmark {
            objset,
            object,
            level,
            blkid,
        };
        visit(&bp, bookmark);
        if level > 0 {
            let data = match ctx.zio.read_block(ctx.root, &bp, Some(bookmark)) {
                Ok(data) => data,
                // Unreadable subtree: already in the error log; keep walking the rest.
                Err(_) if tolerant => continue,
                Err(e) => return Err(e.into()),
            };
            let mut children = Vec::new();
            for (i, chunk) in data.chunks(BLKPTR_SIZE_BYTES).enumerate() {
                let child =
                    BlockPointer::decode(chunk).map_err(|e| DmuError::Corrupt(e.to_string()))?;
                children.push((child, level - 1, blkid * per_indirect + i as u64));
            }
            stack.extend(children.into_iter().rev());
        } else if object == 0 {
            let data = match ctx.zio.read_block(ctx.root, &bp, Some(bookmark)) {
                Ok(data) => data,
                Err(_) if tolerant => continue,
                Err(e) => return Err(e.into()),
            };
            level0(blkid, &bp, &data);
        }
    }
    Ok(())
}

/// The block a dirty block of sync pass `pass` may overwrite in place (see
/// `ObjectSet::sync_pass`; `zio` decides whether it really may).
fn rewrite_candidate(old_bp: &BlockPointer, pass: u32) -> Option<BlockPointer> {
    (pass >= crate::zio::SYNC_PASS_REWRITE && !old_bp.is_hole()).then_some(*old_bp)
}

/// `props` for sync pass `pass`: uncompressed from `zio::SYNC_PASS_DONT_COMPRESS`.
fn pass_props(mut props: WriteProps, pass: u32) -> WriteProps {
    if pass >= crate::zio::SYNC_PASS_DONT_COMPRESS {
        props.compression = Compression::Off;
    }
    props
}

fn meta_props(policy: &ObjsetPolicy, object_type: u8, level: u8, fill: u64) -> WriteProps {
    WriteProps {
        checksum: if policy.data_props.checksum == ChecksumKind::Off {
            ChecksumKind::Fletcher4
        } else {
            policy.data_props.checksum
        },
        compression: Compression::Lz4,
        copies: policy.meta_copies,
        object_type,
        level,
        record: policy.record,
        fill,
    }
}

/// Releases a block the live tree no longer references: freed, or handed to the dead list
/// when the newest snapshot still references it.
fn release_block(
    ctx: &IoCtx<'_>,
    policy: &ObjsetPolicy,
    dead: &mut Vec<BlockPointer>,
    freed: &mut BlockSpace,
    bp: &BlockPointer,
) {
    if bp.is_hole() {
        return;
    }
    if bp.birth_txg <= policy.prev_snap_txg {
        dead.push(*bp);
    } else {
        freed.add(&BlockSpace::of(ctx.root, bp));
        ctx.zio
            .free_block_noting(bp, policy.record, policy.frees_keep_syncing, ctx.txg);
    }
}

/// Grows a single-block ZPL plain file's block size up to its maximum (OpenZFS
/// `zfs_grow_blocksize`: a small file is one small record; it becomes record-sized blocks
/// once it outgrows one). Every other object keeps its block size. Returns the bytes this
/// newly holds dirty.
fn grow_block_size(
    state: &mut ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    end: u64,
    maximum: u64,
) -> Result<u64, DmuError> {
    let current = u64::from(state.phys.data_block_size_bytes);
    if state.phys.object_type != object_type::PLAIN_FILE
        || state.phys.max_block_id > 0
        || end <= current
        || current >= maximum
    {
        return Ok(0);
    }
    let new_size = round_up_shift(end, 9).min(maximum);
    let dbuf = load_dbuf(state, ctx, objset, object, 0, 0)?;
    let newly_dirty = if dbuf.dirty {
        new_size.saturating_sub(dbuf.data.len() as u64)
    } else {
        new_size
    };
    dbuf.data.resize(new_size as usize, 0);
    dbuf.stored = None;
    dbuf.dirty = true;
    state.phys.data_block_size_bytes = new_size as u32;
    Ok(newly_dirty)
}

/// An object's block extent, `(dn_maxblkid + 1) * block size` (an object that never
/// held data has one block of zeros, as in OpenZFS).
fn extent_of(phys: &DnodePhys) -> u64 {
    phys.max_block_id
        .saturating_add(1)
        .saturating_mul(u64::from(phys.data_block_size_bytes))
}

/// Adds indirect levels until `blkid` is addressable.
fn ensure_levels(
    state: &mut ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    blkid: u64,
) -> Result<(), DmuError> {
    while blkid >= state.phys.capacity_blocks(state.phys.nlevels) {
        if state.phys.nlevels >= super::dnode::LEVELS_MAX {
            return Err(DmuError::Invalid("object too large".to_string()));
        }
        // The dnode's pointers become the first entries of a new top indirect block.
        let old_top = state.phys.nlevels - 1;
        let new_top = state.phys.nlevels;
        // Top-level dbufs keep their ids (they are children 0..nblkptr of the new block).
        let mut block = vec![0u8; 1usize << state.phys.indirect_block_shift];
        for (i, bp) in state.phys.blkptr.iter().enumerate() {
            bp.encode(&mut block[i * BLKPTR_SIZE_BYTES..(i + 1) * BLKPTR_SIZE_BYTES]);
        }
        let _ = (old_top, ctx, objset, object);
        state.dbufs.insert(
            (new_top, 0),
            Dbuf {
                data: block,
                dirty: true,
                bp: BlockPointer::HOLE,
                stored: None,
                filled_bytes: 0,
            },
        );
        for bp in state.phys.blkptr.iter_mut() {
            *bp = BlockPointer::HOLE;
        }
        state.phys.nlevels += 1;
        state.dnode_dirty = true;
    }
    Ok(())
}

/// The current block pointer of (level, blkid): from its parent dbuf, or the dnode.
fn block_pointer(
    state: &mut ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
) -> Result<BlockPointer, DmuError> {
    let nlevels = state.phys.nlevels;
    if level + 1 >= nlevels {
        if level + 1 > nlevels {
            return Ok(BlockPointer::HOLE);
        }
        return Ok(state
            .phys
            .blkptr
            .get(blkid as usize)
            .copied()
            .unwrap_or(BlockPointer::HOLE));
    }
    let per = state.phys.entries_per_indirect();
    let levels_above = u32::from(nlevels - 1 - level);
    let addressable =
        (state.phys.blkptr.len() as u64).saturating_mul(per.saturating_pow(levels_above));
    if blkid >= addressable {
        return Ok(BlockPointer::HOLE);
    }
    let parent_id = blkid / per;
    let parent = load_dbuf(state, ctx, objset, object, level + 1, parent_id)?;
    let slot = (blkid % per) as usize * BLKPTR_SIZE_BYTES;
    BlockPointer::decode(&parent.data[slot..slot + BLKPTR_SIZE_BYTES])
        .map_err(|e| DmuError::Corrupt(format!("object {object}: {e}")))
}

/// The block pointer at byte `slot` of an indirect block.
fn decode_slot(data: &[u8], slot: usize, object: u64) -> Result<BlockPointer, DmuError> {
    let bytes = data
        .get(slot..slot + BLKPTR_SIZE_BYTES)
        .ok_or_else(|| DmuError::Corrupt(format!("object {object}: indirect block too short")))?;
    BlockPointer::decode(bytes).map_err(|e| DmuError::Corrupt(format!("object {object}: {e}")))
}

/// Loads (reading if needed) the dbuf of (level, blkid).
fn load_dbuf<'s>(
    state: &'s mut ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
) -> Result<&'s mut Dbuf, DmuError> {
    if !state.dbufs.contains_key(&(level, blkid)) {
        let bp = block_pointer(state, ctx, objset, object, level, blkid)?;
        let size = state.block_size(level);
        let data = if bp.is_hole() {
            vec![0u8; size]
        } else {
            let block = ctx.zio.read_block(
                ctx.root,
                &bp,
                Some(Bookmark {
                    objset,
                    object,
                    level,
                    blkid,
                }),
            )?;
            let mut data = block.to_vec();
            if data.len() != size {
                if level > 0 || data.len() > size {
                    return Err(DmuError::Corrupt(format!(
                        "object {object} L{level} block {blkid} is {} bytes, expected {size}",
                        data.len()
                    )));
                }
                data.resize(size, 0);
            }
            data
        };
        state.dbufs.insert(
            (level, blkid),
            Dbuf {
                data,
                dirty: false,
                bp,
                stored: None,
                filled_bytes: 0,
            },
        );
    }
    state
        .dbufs
        .get_mut(&(level, blkid))
        .ok_or_else(|| DmuError::Corrupt("dbuf vanished".to_string()))
}

/// Zeroes bytes [from, to) of level-0 block `blkid`. A hole already reads as zeros and is
/// left alone: dirtying it would write a block of zeros, and past the tree's reach (a
/// sparse extension never written) there is no pointer slot to store it in.
fn zero_in_block(
    state: &mut ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    blkid: u64,
    from: usize,
    to: usize,
) -> Result<(), DmuError> {
    if !state.dbufs.contains_key(&(0, blkid))
        && block_pointer(state, ctx, objset, object, 0, blkid)?.is_hole()
    {
        return Ok(());
    }
    let dbuf = load_dbuf(state, ctx, objset, object, 0, blkid)?;
    let to = to.min(dbuf.data.len());
    if from < to {
        dbuf.data[from..to].fill(0);
        dbuf.stored = None;
        dbuf.dirty = true;
    }
    Ok(())
}

/// Stores `bp` as the pointer of child (level, blkid) in its parent.
#[allow(clippy::too_many_arguments)]
fn set_child_bp(
    state: &mut ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
    bp: BlockPointer,
) -> Result<(), DmuError> {
    if level + 1 >= state.phys.nlevels {
        if let Some(slot) = state.phys.blkptr.get_mut(blkid as usize) {
            *slot = bp;
            state.dnode_dirty = true;
            return Ok(());
        }
        return Err(DmuError::Invalid(format!(
            "block {blkid} beyond the dnode (object {object} level {level} nlevels {} nblkptr {} bs {})",
            state.phys.nlevels,
            state.phys.blkptr.len(),
            state.phys.data_block_size_bytes
        )));
    }
    let per = state.phys.entries_per_indirect();
    let parent = load_dbuf(state, ctx, objset, object, level + 1, blkid / per)?;
    let slot = (blkid % per) as usize * BLKPTR_SIZE_BYTES;
    bp.encode(&mut parent.data[slot..slot + BLKPTR_SIZE_BYTES]);
    parent.dirty = true;
    Ok(())
}

/// Collects every block of an object as the live tree (in memory where loaded) sees it,
/// parents before their children (for freeing it). Visits only non-hole pointers and
/// loaded dbufs: the cost follows what the object holds, not its size.
fn collect_tree(
    state: &ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    out: &mut Vec<BlockPointer>,
) -> Result<(), DmuError> {
    walk_live_tree(state, ctx, objset, object, 0, u64::MAX, &mut |_, _, bp| {
        if !bp.is_hole() {
            out.push(*bp);
        }
    })
}

/// Whether any dbuf is loaded at or under node (level, blkid) of the tree.
fn subtree_has_dbufs(state: &ObjectState, level: u8, blkid: u64) -> bool {
    let per = state.phys.entries_per_indirect();
    (0..=level).any(|l| {
        let width = per.saturating_pow(u32::from(level - l));
        let low = blkid.saturating_mul(width);
        let high = blkid.saturating_add(1).saturating_mul(width);
        state.dbufs.range((l, low)..(l, high)).next().is_some()
    })
}

/// Visits, parents first, every node of the live tree that covers a level-0 block in
/// [first, last) and is either a non-hole pointer or a loaded dbuf, with its block
/// pointer (a loaded dbuf's own, else its parent's entry; a hole for a dbuf not written
/// yet). Subtrees under a hole with nothing loaded are skipped whole, so a file with one
/// block at 2^63 costs a handful of visits. Indirect blocks not loaded are read through
/// the ARC and not kept as dbufs.
fn walk_live_tree(
    state: &ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    first: u64,
    last: u64,
    visit: &mut dyn FnMut(u8, u64, &BlockPointer),
) -> Result<(), DmuError> {
    let Some(top) = state.phys.nlevels.checked_sub(1) else {
        return Ok(());
    };
    for (i, bp) in state.phys.blkptr.iter().enumerate() {
        walk_live_node(
            state, ctx, objset, object, top, i as u64, *bp, first, last, visit,
        )?;
    }
    Ok(())
}

/// Node (`level`, `blkid`) of the live tree as `walk_live_node` and `collect_live_tail`
/// see it: its dbuf if loaded and its block pointer (the dbuf's own, else `parent_bp`), or
/// `None` when the walk skips it (it covers no level-0 block of [first, last), or it is a
/// hole with nothing loaded at or below it).
fn live_node(
    state: &ObjectState,
    level: u8,
    blkid: u64,
    parent_bp: BlockPointer,
    first: u64,
    last: u64,
) -> Option<(Option<&Dbuf>, BlockPointer)> {
    let per = state.phys.entries_per_indirect();
    let span = per.saturating_pow(u32::from(level));
    let start = blkid.saturating_mul(span);
    let end = blkid.saturating_add(1).saturating_mul(span);
    if end <= first || start >= last {
        return None;
    }
    let dbuf = state.dbufs.get(&(level, blkid));
    let bp = dbuf.map(|d| d.bp).unwrap_or(parent_bp);
    if dbuf.is_none() && bp.is_hole() && !subtree_has_dbufs(state, level, blkid) {
        return None;
    }
    Some((dbuf, bp))
}

/// The block pointers below a node of the live tree (`walk_live_node`,
/// `collect_live_tail`): its dbuf's data if loaded, else its block read through the ARC;
/// `None` for a hole with no dbuf.
fn live_children(
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
    dbuf: Option<&Dbuf>,
    bp: &BlockPointer,
) -> Result<Option<std::sync::Arc<Vec<u8>>>, DmuError> {
    Ok(match dbuf {
        Some(d) => Some(std::sync::Arc::new(d.data.clone())),
        None if !bp.is_hole() => Some(ctx.zio.read_block(
            ctx.root,
            bp,
            Some(Bookmark {
                objset,
                object,
                level,
                blkid,
            }),
        )?),
        None => None,
    })
}

/// Child block pointer `i` of a node's `children` (see `live_children`): a hole when
/// there are none or the data ends before it.
fn child_blkptr(children: Option<&[u8]>, i: u64, object: u64) -> Result<BlockPointer, DmuError> {
    let Some(data) = children else {
        return Ok(BlockPointer::HOLE);
    };
    let at = i as usize * BLKPTR_SIZE_BYTES;
    match data.get(at..at + BLKPTR_SIZE_BYTES) {
        Some(chunk) => BlockPointer::decode(chunk)
            .map_err(|e| DmuError::Corrupt(format!("object {object}: {e}"))),
        None => Ok(BlockPointer::HOLE),
    }
}

/// The range and batch size of `collect_live_tail`.
struct LiveTail {
    first: u64,
    last: u64,
    max: usize,
}

/// `walk_live_node` backwards, collecting level-0 block ids (with a block or a dbuf) of
/// [first, last) from the end until `max` are found: one batch of a long truncate, whose
/// cost is that batch's blocks and the indirect blocks above them.
#[allow(clippy::too_many_arguments)]
fn collect_live_tail(
    state: &ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
    parent_bp: BlockPointer,
    tail: &LiveTail,
    out: &mut Vec<u64>,
) -> Result<(), DmuError> {
    if out.len() >= tail.max {
        return Ok(());
    }
    let Some((dbuf, bp)) = live_node(state, level, blkid, parent_bp, tail.first, tail.last) else {
        return Ok(());
    };
    let per = state.phys.entries_per_indirect();
    if level == 0 {
        out.push(blkid);
        return Ok(());
    }
    let children = live_children(ctx, objset, object, level, blkid, dbuf, &bp)?;
    for i in (0..per).rev() {
        if out.len() >= tail.max {
            break;
        }
        let child = blkid.saturating_mul(per).saturating_add(i);
        let child_bp = child_blkptr(children.as_deref().map(Vec::as_slice), i, object)?;
        if child_bp.is_hole() && !subtree_has_dbufs(state, level - 1, child) {
            continue;
        }
        collect_live_tail(
            state,
            ctx,
            objset,
            object,
            level - 1,
            child,
            child_bp,
            tail,
            out,
        )?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn walk_live_node(
    state: &ObjectState,
    ctx: &IoCtx<'_>,
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
    parent_bp: BlockPointer,
    first: u64,
    last: u64,
    visit: &mut dyn FnMut(u8, u64, &BlockPointer),
) -> Result<(), DmuError> {
    let Some((dbuf, bp)) = live_node(state, level, blkid, parent_bp, first, last) else {
        return Ok(());
    };
    let per = state.phys.entries_per_indirect();
    visit(level, blkid, &bp);
    if level == 0 {
        return Ok(());
    }
    let children = live_children(ctx, objset, object, level, blkid, dbuf, &bp)?;
    for i in 0..per {
        let child = blkid.saturating_mul(per).saturating_add(i);
        let child_bp = child_blkptr(children.as_deref().map(Vec::as_slice), i, object)?;
        if child_bp.is_hole() && !subtree_has_dbufs(state, level - 1, child) {
            continue;
        }
        walk_live_node(
            state,
            ctx,
            objset,
            object,
            level - 1,
            child,
            child_bp,
            first,
            last,
            visit,
        )?;
    }
    Ok(())
}

/// One dirty block on its way to the pipeline: its bytes, write properties, whether it is
/// empty (becomes a hole), its stored form, and the block it replaces.
type Payload = (Vec<u8>, WriteProps, bool, Option<StoredBlock>, BlockPointer);

/// Writes dirty dbufs of `states` bottom-up, one parallel batch per level (in sync pass
/// `pass`: see `ObjectSet::sync_pass`).
#[allow(clippy::too_many_arguments)]
fn sync_trees(
    ctx: &IoCtx<'_>,
    objset: u64,
    policy: &ObjsetPolicy,
    states: &mut [(u64, &mut ObjectState)],
    dead: &mut Vec<BlockPointer>,
    freed: &mut BlockSpace,
    born: &mut BlockSpace,
    is_meta: bool,
    pass: u32,
) -> Result<(), DmuError> {
    let max_levels = states
        .iter()
        .map(|(_, s)| s.phys.nlevels)
        .max()
        .unwrap_or(0);
    for level in 0..max_levels {
        // Gather this level's dirty blocks.
        let mut jobs: Vec<(usize, u64)> = Vec::new();
        for (index, (_, state)) in states.iter().enumerate() {
            if level >= state.phys.nlevels {
                continue;
            }
            for ((l, blkid), dbuf) in state.dbufs.range((level, 0)..=(level, u64::MAX)) {
                debug_assert_eq!(*l, level);
                if dbuf.dirty {
                    jobs.push((index, *blkid));
                }
            }
        }
        if jobs.is_empty() {
            continue;
        }
        let mut payloads: Vec<Payload> = Vec::with_capacity(jobs.len());
        for &(index, blkid) in &jobs {
            let state = &mut *states[index].1;
            let object_type_of_state = state.phys.object_type;
            let dbuf = state
                .dbufs
                .get_mut(&(level, blkid))
                .ok_or_else(|| DmuError::Corrupt("dirty dbuf vanished".to_string()))?;
            // The bytes move out of the dbuf for the write (no copy) and come back after.
            let data = std::mem::take(&mut dbuf.data);
            let stored = dbuf.stored.take();
            let (props, empty) = if level == 0 {
                let all_zero = !is_meta && is_all_zero(&data);
                let mut props = if is_meta {
                    meta_props(policy, object_type::DNODE, 0, dnode_fill(&data))
                } else if is_metadata_type(object_type_of_state) {
                    meta_props(policy, object_type_of_state, 0, 1)
                } else {
                    file_data_props(policy, object_type_of_state)
                };
                props.level = 0;
                (props, all_zero)
            } else {
                let fill = indirect_fill(&data);
                let mut props = meta_props(policy, object_type_of_state, level, fill);
                props.level = level;
                (props, fill == 0)
            };
            let old_bp = dbuf.bp;
            payloads.push((data, pass_props(props, pass), empty, stored, old_bp));
        }
        let to_write: Vec<BlockSource<'_>> = payloads
            .iter()
            .filter(|(_, _, empty, _, _)| !*empty)
            .map(|(data, props, _, stored, old_bp)| BlockSource {
                data,
                props: *props,
                stored: stored.as_ref(),
                rewrite: rewrite_candidate(old_bp, pass),
            })
            .collect();
        let mut written = ctx
            .zio
            .write_block_sources(ctx.root, to_write, ctx.txg)?
            .into_iter();
        for (job, (data, props, empty, _, _)) in jobs.iter().zip(payloads) {
            let (index, blkid) = *job;
            let new_bp = if empty {
                // OpenZFS `zio_write_compress` with hole_birth: a block rewritten as zeros
                // (or an indirect block whose children are all holes) becomes a hole born
                // now; a place that never held a block stays the all-zero hole.
                let old_birth = states[index]
                    .1
                    .dbufs
                    .get(&(level, blkid))
                    .map(|d| d.bp.birth_txg)
                    .unwrap_or(Txg(0));
                if old_birth.0 == 0 {
                    BlockPointer::HOLE
                } else {
                    ctx.zio
                        .hole(ctx.txg, data.len() as u32, props.object_type, level)
                }
            } else {
                written
                    .next()
                    .ok_or_else(|| DmuError::Corrupt("write batch came back short".to_string()))?
            };
            let object = states[index].0;
            let state = &mut *states[index].1;
            let old_bp = {
                let dbuf = state
                    .dbufs
                    .get_mut(&(level, blkid))
                    .ok_or_else(|| DmuError::Corrupt("dirty dbuf vanished".to_string()))?;
                let old = dbuf.bp;
                dbuf.bp = new_bp;
                dbuf.dirty = false;
                if level > 0 {
                    dbuf.data = data;
                } else if !new_bp.is_hole()
                    && !new_bp.is_embedded()
                    && (is_meta || is_metadata_type(new_bp.object_type))
                {
                    // Freshly written metadata stays hot: it goes to the ARC under its new
                    // address (level-0 dbufs are dropped after the sync). Bulk file data does
                    // not, so streaming writes recycle their buffers instead of flooding it.
                    let size = data.len() as u64;
                    ctx.zio.arc.insert(
                        crate::zio::BlockKey::of(&new_bp),
                        std::sync::Arc::new(data),
                        size,
                    );
                }
                old
            };
            let place = BlockPlace {
                objset,
                object,
                level,
                blkid,
            };
            adopt_block(
                ctx, policy, state, place, &old_bp, new_bp, dead, freed, born,
            )?;
        }
    }
    Ok(())
}

/// The bonus room of a dnode with `nblkptr` pointers, less the spill pointer's 128 bytes
/// when it has a spill block (`DN_MAX_BONUS_LEN` / `DN_SPILL_BLKPTR`).
fn bonus_room(nblkptr: usize, spill: bool) -> usize {
    DnodePhys::bonus_capacity(nblkptr) - if spill { BLKPTR_SIZE_BYTES } else { 0 }
}

/// Writes the spill blocks changed this txg (OpenZFS `dbuf_sync_leaf` of a
/// `DMU_SPILL_BLKID` dbuf, `dnode_sync`'s `dn_rm_spillblk`): each a `DMU_OT_SA` level-0
/// block with the metadata write policy (as `dmu_write_policy` treats `DMU_OT_SA`), its
/// pointer put into the dnode's spill slot, the old block released; a removed one leaves
/// the slot empty (`DNODE_FLAG_SPILL_BLKPTR` cleared by the dnode codec).
#[allow(clippy::too_many_arguments)]
fn sync_spills(
    ctx: &IoCtx<'_>,
    policy: &ObjsetPolicy,
    states: &mut [(u64, &mut ObjectState)],
    dead: &mut Vec<BlockPointer>,
    freed: &mut BlockSpace,
    born: &mut BlockSpace,
    pass: u32,
) -> Result<(), DmuError> {
    for (object, state) in states.iter_mut() {
        let Some(change) = state.spill_dirty.take() else {
            continue;
        };
        let old_bp = state.phys.spill.unwrap_or(BlockPointer::HOLE);
        let new_bp = match change {
            None => None,
            Some(data) => {
                debug_assert!(data.len().is_multiple_of(512));
                let source = BlockSource {
                    data: &data,
                    props: pass_props(meta_props(policy, OT_SA, 0, 1), pass),
                    stored: None,
                    rewrite: rewrite_candidate(&old_bp, pass),
                };
                let bp = ctx
                    .zio
                    .write_block_sources(ctx.root, vec![source], ctx.txg)?
                    .into_iter()
                    .next()
                    .ok_or_else(|| {
                        DmuError::Corrupt(format!("object {object}: spill write came back empty"))
                    })?;
                Some(bp)
            }
        };
        match new_bp {
            Some(bp) if bp.same_dvas(&old_bp) => {
                ctx.zio.arc.remove(&crate::zio::BlockKey::of(&old_bp));
            }
            _ => {
                let new_dsize = new_bp.map_or(0, |bp| ctx.root.dsize_bytes(&bp));
                state.phys.used_bytes = state.phys.used_bytes.saturating_sub(if old_bp.is_hole() {
                    0
                } else {
                    ctx.root.dsize_bytes(&old_bp)
                }) + new_dsize;
                if let Some(bp) = &new_bp {
                    born.add(&BlockSpace::of(ctx.root, bp));
                }
                release_block(ctx, policy, dead, freed, &old_bp);
            }
        }
        state.phys.spill = new_bp;
        state.dnode_dirty = true;
    }
    Ok(())
}

/// Where a block sits: object set, object, level, block id.
#[derive(Clone, Copy)]
struct BlockPlace {
    objset: u64,
    object: u64,
    level: u8,
    blkid: u64,
}

/// The tree takes `new_bp` in place of `old_bp` (whose dbuf already names the new one):
/// the object's space, the txg's born and freed space, the old block released (freed, or
/// to the dead list), the pointer put into the parent.
#[allow(clippy::too_many_arguments)]
fn adopt_block(
    ctx: &IoCtx<'_>,
    policy: &ObjsetPolicy,
    state: &mut ObjectState,
    place: BlockPlace,
    old_bp: &BlockPointer,
    new_bp: BlockPointer,
    dead: &mut Vec<BlockPointer>,
    freed: &mut BlockSpace,
    born: &mut BlockSpace,
) -> Result<(), DmuError> {
    if new_bp.same_dvas(old_bp) {
        // Overwritten in place (a later sync pass): same space, nothing born or freed.
        ctx.zio.arc.remove(&crate::zio::BlockKey::of(old_bp));
    } else {
        state.phys.used_bytes = state
            .phys
            .used_bytes
            .saturating_sub(ctx.root.dsize_bytes(old_bp))
            + ctx.root.dsize_bytes(&new_bp);
        born.add(&BlockSpace::of(ctx.root, &new_bp));
        release_block(ctx, policy, dead, freed, old_bp);
    }
    set_child_bp(
        state,
        ctx,
        place.objset,
        place.object,
        place.level,
        place.blkid,
        new_bp,
    )?;
    state.dnode_dirty = true;
    Ok(())
}

/// Whether every byte is zero (a record that becomes a hole). Checked a page at a time
/// with a branch-free OR inside each page, which the compiler vectorizes: the byte-wise
/// `all` was most of a commit's CPU for a file of zeros.
pub(crate) fn is_all_zero(data: &[u8]) -> bool {
    data.chunks(4096)
        .all(|page| page.iter().fold(0u8, |acc, b| acc | b) == 0)
}

/// How a level-0 block of a file (or volume) is written: the dataset's data properties.
fn file_data_props(policy: &ObjsetPolicy, object_type: u8) -> WriteProps {
    let mut props = policy.data_props;
    props.object_type = object_type;
    props.level = 0;
    props
}

fn is_metadata_type(object_type: u8) -> bool {
    !matches!(object_type, object_type::PLAIN_FILE | object_type::ZVOL)
}

/// The objects a block of the meta-dnode holds (OpenZFS `dbuf_write_ready` for a
/// `DMU_OT_DNODE` block): every dnode whose `dn_type` is not `DMU_OT_NONE`, a large dnode
/// counted once and its `dn_extra_slots` skipped. A dnode freed in this txg was written
/// back as zeros before the block is, so it counts nothing.
pub fn dnode_fill(data: &[u8]) -> u64 {
    let mut fill = 0;
    let mut slot = 0;
    while slot < data.len() / DNODE_SIZE_BYTES {
        let dnode = &data[slot * DNODE_SIZE_BYTES..(slot + 1) * DNODE_SIZE_BYTES];
        slot += 1;
        if dnode[0] != object_type::NONE {
            fill += 1;
            slot += usize::from(dnode[12]);
        }
    }
    fill
}

/// The sum of the children's fill counts (OpenZFS `dbuf_write_ready`): holes, with or
/// without a birth txg, count nothing.
fn indirect_fill(data: &[u8]) -> u64 {
    // blkptr_t words 0-1 (DVA 0), 6 (prop) and 11 (fill), little-endian (`zio::blkptr`).
    let word = |chunk: &[u8], at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&chunk[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    data.chunks_exact(BLKPTR_SIZE_BYTES)
        .map(|chunk| {
            if word(chunk, 48) & (1 << 39) != 0 {
                1 // embedded: BP_GET_FILL is 1, word 11 is payload
            } else if word(chunk, 0) == 0 && word(chunk, 8) == 0 {
                0
            } else {
                word(chunk, 88).max(1)
            }
        })
        .sum()
}
