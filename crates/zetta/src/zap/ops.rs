//! The ZAP operations over an object of an `ObjectSet` (OpenZFS `zap.c`, `zap_micro.c`),
//! making the decisions OpenZFS makes, in the same order, so that the same history gives
//! the same bytes:
//!
//! - `zap_create` makes a micro ZAP of 512 bytes (`mzap_create_impl`).
//! - An add or update to a micro ZAP whose slots are all used first grows its block by 512
//!   bytes, or, past 128 KiB (`zap_micro_max_size`), upgrades it (`zap_lockdir_impl`).
//! - A value other than one u64, a name of 50 bytes or more, or more same-hash entries than
//!   a leaf could take upgrades it to fat (`mzap_upgrade`): 16 KiB blocks, the header with
//!   its embedded table of 1024 slots all naming leaf 1, then every micro entry re-added in
//!   slot order with its cd (cookies survive the upgrade).
//! - A fat add that does not fit its leaf splits it (`zap_expand_leaf`), doubling the
//!   pointer table first when the leaf's prefix is as long as the table's shift; after an
//!   add or update a leaf at full prefix with fewer than 20 free chunks doubles the table
//!   (`zap_put_leaf_maybe_grow_ptrtbl`). The embedded table moves to its own block, later
//!   tables to runs twice as long (the old run freed).
//!
//! Deliberate differences from OpenZFS 2.3, none visible to its readers: an external table
//! is copied whole in one operation (OpenZFS copies one block per operation, keeping both
//! tables current meanwhile: the same final state); empty leaves are never merged back
//! (`zap_shrink`); a micro ZAP's next free slot is searched from slot 0 (OpenZFS resumes
//! from an in-memory hint after the last allocation, so after removals its slots may
//! differ).
//!
//! All bytes come through `ObjectSet::read`/`write`, so they are copy-on-write, checksummed
//! and cached like any other object's data. Nothing is cached here: two callers may use the
//! same object one after the other with no stale state. A micro ZAP's lookup, remove and
//! common add/update (no growth, no upgrade) work on the block's bytes as OpenZFS's
//! `mzap_addent`/`mzap_removeent` do: one walk (each entry hashed once, no names copied)
//! and one 64-byte chunk written, not the block decoded, edited and rewritten whole — a
//! directory's create cost no longer grows with copies of all its names (session 20,
//! docs/PERFORMANCE.md "Where a create's time goes"). Every block read is validated
//! (`MicroBlock::decode`, `FatHeader::decode`, `Leaf::decode`, table slots against the
//! header) before use: hostile bytes are `ZapError::Corrupt`, never a panic.

use super::hash::{cursor_after, deserialize, hash_prefix, serialize, CD_MAX, CURSOR_END};
use super::header::{
    block_type, check_micro_block, micro_chunk, micro_chunks, FatHeader, MicroBlock, MicroEntry,
    FAT_BLOCK_SHIFT, FAT_HEADER_FIELDS_BYTES, MICRO_BLOCK_MAX_BYTES, MICRO_BLOCK_MIN_BYTES,
    TABLE_SHIFT_MAX,
};
use super::leaf::{leaf_chunks, Leaf, LEAF_LOW_WATER};
use super::openzfs::micro::{MZAP_ENT_LEN, MZAP_NAME_LEN};
use super::openzfs::{normalize_key, ZapKey, ZBT_HEADER, ZBT_MICRO};
use crate::dmu::{DmuError, IoCtx, ObjectSet};
use crate::types::ObjectId;

/// Longest name (property names; directory entries are limited to 255 by the ZPL).
pub const NAME_LEN_MAX_BYTES: usize = 1024;
/// Largest value, as bytes or as u64 words (`ZAP_MAXVALUELEN`).
pub const VALUE_SIZE_MAX_BYTES: usize = 8192;
/// Fat ZAP blocks: `1 << fzap_default_block_shift`.
pub const ZAP_BLOCK_SIZE_BYTES: usize = 1 << FAT_BLOCK_SHIFT;
/// `MZAP_ENT_CHUNKS`: the leaf chunks a micro entry takes once fat.
const MZAP_ENT_CHUNKS: usize = 1 + 3 + 1;

#[derive(Debug)]
pub enum ZapError {
    Dmu(DmuError),
    /// The object's bytes do not form a ZAP.
    Corrupt {
        object: ObjectId,
        why: String,
    },
    /// `zap_add` of a name already present (EEXIST).
    Exists,
    /// `zap_remove` of a name not present (ENOENT).
    NotFound,
    /// An empty name, one with a NUL byte, or one longer than `NAME_LEN_MAX_BYTES`.
    InvalidName(String),
    /// A value larger than `VALUE_SIZE_MAX_BYTES`.
    ValueTooLarge(usize),
    /// A u64 lookup of a bytes entry, or the reverse.
    WrongType,
    /// More same-hash entries than a leaf holds, or a pointer table past 2^26 slots
    /// (OpenZFS's `ENOSPC`; only with a broken or forced hash).
    CollisionLimit,
}

impl std::fmt::Display for ZapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ZapError::Dmu(e) => write!(f, "{e}"),
            ZapError::Corrupt { object, why } => write!(f, "corrupt ZAP object {object}: {why}"),
            ZapError::Exists => write!(f, "entry exists"),
            ZapError::NotFound => write!(f, "no such entry"),
            ZapError::InvalidName(why) => write!(f, "invalid ZAP name: {why}"),
            ZapError::ValueTooLarge(size) => write!(f, "ZAP value of {size} bytes is too large"),
            ZapError::WrongType => write!(f, "ZAP entry holds another value type"),
            ZapError::CollisionLimit => write!(f, "too many ZAP names share one hash"),
        }
    }
}

impl std::error::Error for ZapError {}

impl From<DmuError> for ZapError {
    fn from(e: DmuError) -> Self {
        ZapError::Dmu(e)
    }
}

/// An entry's value: u64 words (object numbers, integer properties) or bytes (strings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZapValue {
    U64s(Vec<u64>),
    Bytes(Vec<u8>),
}

/// One entry returned by `zap_list`; `cookie` resumes a walk just at this entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZapEntry {
    pub name: Vec<u8>,
    pub value: ZapValue,
    pub cookie: u64,
}

/// Shape of a ZAP object (for tests and the inspector).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZapStats {
    pub entry_count: u64,
    pub depth: u32,
    pub leaf_count: u64,
    pub block_count: u64,
}

fn corrupt(object: ObjectId, why: impl Into<String>) -> ZapError {
    ZapError::Corrupt {
        object,
        why: why.into(),
    }
}

fn check_name(name: &[u8]) -> Result<(), ZapError> {
    if name.is_empty() || name.len() > NAME_LEN_MAX_BYTES {
        return Err(ZapError::InvalidName(format!("{} bytes", name.len())));
    }
    if name.contains(&0) {
        return Err(ZapError::InvalidName("contains NUL".to_string()));
    }
    Ok(())
}

/// An entry's value from its integer width and big-endian bytes: u64 words for 8 (and
/// 2 or 4, widened: OpenZFS's SA layouts), bytes for 1.
fn decode_value(int_len: u8, bytes: &[u8]) -> ZapValue {
    match int_len {
        1 => ZapValue::Bytes(bytes.to_vec()),
        _ => ZapValue::U64s(
            bytes
                .chunks_exact(usize::from(int_len.max(1)))
                .map(|c| c.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
                .collect(),
        ),
    }
}

/// A value as OpenZFS stores it: (integer width, big-endian bytes).
fn encode_value(value: &ZapValue) -> (u8, Vec<u8>) {
    match value {
        ZapValue::Bytes(b) => (1, b.clone()),
        ZapValue::U64s(words) => (8, words.iter().flat_map(|w| w.to_be_bytes()).collect()),
    }
}

/// Creates an empty ZAP object of `object_type` with a fresh random salt.
pub fn zap_create(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
) -> Result<ObjectId, ZapError> {
    create_zap_object(os, ctx, object_type, random_salt(), 0, 0)
}

/// Creates an empty ZAP with a chosen salt (golden tests, reproducible simulations); a
/// zero salt is made odd as OpenZFS makes every micro ZAP's (`| 1`).
pub fn zap_create_salted(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
    salt: u64,
) -> Result<ObjectId, ZapError> {
    create_zap_object(os, ctx, object_type, salt | 1, 0, 0)
}

/// Creates an empty ZAP whose dnode also carries a bonus record (a directory's znode).
pub fn zap_create_with_bonus(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
    bonus_type: u8,
    bonus_len: usize,
) -> Result<ObjectId, ZapError> {
    create_zap_object(os, ctx, object_type, random_salt(), bonus_type, bonus_len)
}

/// Creates an empty ZAP at a chosen object number (the MOS object directory is object 1,
/// as OpenZFS's `DMU_POOL_DIRECTORY_OBJECT`).
pub fn zap_create_at(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    object_type: u8,
) -> Result<(), ZapError> {
    os.create_object_at(ctx, object, object_type, MICRO_BLOCK_MIN_BYTES as u32, 0, 0)?;
    let micro = MicroBlock::new(random_salt(), MICRO_BLOCK_MIN_BYTES);
    os.write(ctx, object, 0, &micro.encode())?;
    Ok(())
}

/// `dmu_object_zapify`: an existing object without data (a DSL dataset with its bonus)
/// becomes an empty micro ZAP of `object_type`, its bonus kept.
pub fn zap_zapify(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    object_type: u8,
) -> Result<(), ZapError> {
    // Only ZPL plain files grow their block (format 20): the micro ZAP's 512 bytes fill
    // the object's one block exactly as `set_data_block_size` sized it.
    os.set_data_block_size(ctx, object, MICRO_BLOCK_MIN_BYTES as u32)?;
    let micro = MicroBlock::new(random_salt(), MICRO_BLOCK_MIN_BYTES);
    os.write(ctx, object, 0, &micro.encode())?;
    os.set_object_type(ctx, object, object_type)?;
    Ok(())
}

fn random_salt() -> u64 {
    crate::rand::random_u64() | 1
}

/// `zap_create_impl` + `mzap_create_impl`: a 512-byte micro ZAP. The DMU grows only ZPL
/// files' blocks; a ZAP's changes through `set_data_block_size` alone.
fn create_zap_object(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
    salt: u64,
    bonus_type: u8,
    bonus_len: usize,
) -> Result<ObjectId, ZapError> {
    let object = os.create_object(
        ctx,
        object_type,
        MICRO_BLOCK_MIN_BYTES as u32,
        bonus_type,
        bonus_len,
    )?;
    let micro = MicroBlock::new(salt, MICRO_BLOCK_MIN_BYTES);
    os.write(ctx, object, 0, &micro.encode())?;
    Ok(object)
}

/// Frees the ZAP object and all its blocks.
pub fn zap_destroy(os: &mut ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<(), ZapError> {
    open(os, ctx, object)?;
    Ok(os.free_object(ctx, object)?)
}

/// A ZAP object's block 0, decoded.
enum Opened {
    Micro(MicroBlock),
    Fat(FatHeader),
}

fn block_size_bytes(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<u64, ZapError> {
    Ok(u64::from(os.data_block_size_bytes(ctx, object)?))
}

fn open(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<Opened, ZapError> {
    Ok(match open_block(os, ctx, object)? {
        Block0::Micro(block) => {
            Opened::Micro(MicroBlock::decode(&block).map_err(|why| corrupt(object, why))?)
        }
        Block0::Fat(header) => Opened::Fat(header),
    })
}

/// Block 0 as `open` finds it, a micro ZAP's block left undecoded: the add, remove and
/// lookup of one name work on its bytes (`mzap_open` keeps the block and an index of it; the
/// engine keeps nothing between calls, so it walks the bytes instead of building entries).
enum Block0 {
    Micro(Vec<u8>),
    Fat(FatHeader),
}

fn open_block(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<Block0, ZapError> {
    let bs = block_size_bytes(os, ctx, object)?;
    let first = os.read(ctx, object, 0, FAT_HEADER_FIELDS_BYTES)?;
    match block_type(&first) {
        Some(ZBT_MICRO) => {
            let block = os.read(ctx, object, 0, bs as usize)?;
            if block.len() as u64 != bs {
                return Err(corrupt(object, "micro ZAP block cut short"));
            }
            check_micro_block(&block).map_err(|why| corrupt(object, why))?;
            Ok(Block0::Micro(block))
        }
        Some(ZBT_HEADER) => {
            if !bs.is_power_of_two() {
                return Err(corrupt(object, format!("fat ZAP in {bs}-byte blocks")));
            }
            let header = FatHeader::decode(&first, bs.trailing_zeros())
                .map_err(|why| corrupt(object, why))?;
            Ok(Block0::Fat(header))
        }
        Some(other) => Err(corrupt(object, format!("block type {other:#x}"))),
        None => Err(corrupt(object, "no block 0")),
    }
}

/// The slot of the first micro entry named `name`, and its cd; every chunk is checked on
/// the way (as `MicroBlock::decode` would), so a damaged block is `Corrupt` whatever the
/// name.
fn micro_find(
    object: ObjectId,
    block: &[u8],
    name: &[u8],
) -> Result<Option<(usize, u64)>, ZapError> {
    let mut found = None;
    for (slot, chunk) in micro_chunks(block).enumerate() {
        if let Some(e) = chunk.map_err(|why| corrupt(object, why))? {
            if found.is_none() && e.name == name {
                found = Some((slot, e.value));
            }
        }
    }
    Ok(found)
}

/// Byte offset of micro slot `slot` in block 0 (the header is chunk 0).
fn micro_slot_offset(slot: usize) -> u64 {
    ((slot + 1) * MZAP_ENT_LEN) as u64
}

/// The hash of `name` in a ZAP with this salt and normalization (`zap_name_init_str`).
fn hash_of(object: ObjectId, salt: u64, normflags: u64, name: &[u8]) -> Result<u64, ZapError> {
    if normflags == 0 {
        return Ok(super::hash::name_hash(salt, name));
    }
    match normalize_key(normflags, &ZapKey::Name(name.to_vec())) {
        Ok(ZapKey::Name(n)) => Ok(super::hash::name_hash(salt, &n)),
        _ => Err(corrupt(object, "a normalizing ZAP and a non-ASCII name")),
    }
}

fn write_header(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &FatHeader,
) -> Result<(), ZapError> {
    Ok(os.write(ctx, object, 0, &header.encode())?)
}

/// The leaf block in pointer-table slot `idx`.
fn table_slot(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &FatHeader,
    idx: u64,
) -> Result<u64, ZapError> {
    let bytes = os.read(ctx, object, header.slot_offset(idx), 8)?;
    let word: [u8; 8] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| corrupt(object, "pointer table runs past the object"))?;
    let blkid = u64::from_le_bytes(word);
    if !header.is_leaf_block(blkid) {
        return Err(corrupt(
            object,
            format!("table slot {idx} -> block {blkid}"),
        ));
    }
    Ok(blkid)
}

fn read_leaf(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &FatHeader,
    blkid: u64,
    idx: u64,
) -> Result<Leaf, ZapError> {
    let bs = header.block_bytes();
    let bytes = os.read(ctx, object, blkid * bs, bs as usize)?;
    if bytes.len() as u64 != bs {
        return Err(corrupt(object, format!("leaf {blkid} cut short")));
    }
    let leaf =
        Leaf::decode(bytes).map_err(|why| corrupt(object, format!("leaf {blkid}: {why}")))?;
    let shift = header.ptrtbl.shift;
    let plen = u64::from(leaf.prefix_len());
    if plen > shift || (plen > 0 && idx >> (shift - plen) != leaf.prefix()) {
        return Err(corrupt(
            object,
            format!("leaf {blkid} does not cover slot {idx}"),
        ));
    }
    Ok(leaf)
}

/// `zap_deref_leaf`: the block and leaf holding `hash`.
fn leaf_for(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &FatHeader,
    hash: u64,
) -> Result<(u64, Leaf), ZapError> {
    let idx = hash_prefix(hash, header.ptrtbl.shift as u32);
    let blkid = table_slot(os, ctx, object, header, idx)?;
    Ok((blkid, read_leaf(os, ctx, object, header, blkid, idx)?))
}

fn write_leaf(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &FatHeader,
    blkid: u64,
    leaf: &Leaf,
) -> Result<(), ZapError> {
    Ok(os.write(ctx, object, blkid * header.block_bytes(), leaf.as_bytes())?)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PutMode {
    Add,
    Update,
}

fn put(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: &[u8],
    value: &ZapValue,
    mode: PutMode,
) -> Result<(), ZapError> {
    check_name(name)?;
    let (int_len, bytes) = encode_value(value);
    if bytes.len() > VALUE_SIZE_MAX_BYTES {
        return Err(ZapError::ValueTooLarge(bytes.len()));
    }
    let header = match open_block(os, ctx, object)? {
        Block0::Fat(header) => header,
        Block0::Micro(block) => {
            if in_place_enabled() && micro_put_in_place(os, ctx, object, &block, name, value, mode)?
            {
                return Ok(());
            }
            let mut micro = MicroBlock::decode(&block).map_err(|why| corrupt(object, why))?;
            let hash = hash_of(object, micro.salt, micro.normflags, name)?;
            // zap_lockdir_impl(adding): a full micro ZAP grows first, or turns fat.
            let mut upgrade = false;
            if micro.entry_count() == micro.slots.len() {
                let size = micro.size_bytes() + MICRO_BLOCK_MIN_BYTES;
                if size > MICRO_BLOCK_MAX_BYTES {
                    upgrade = true;
                } else {
                    os.set_data_block_size(ctx, object, size as u32)?;
                    micro.slots.resize(size / MZAP_ENT_LEN - 1, None);
                }
            }
            let single = match value {
                ZapValue::U64s(words) if words.len() == 1 => Some(words[0]),
                _ => None,
            };
            let same_hash = micro
                .slots
                .iter()
                .flatten()
                .filter(|e| {
                    hash_of(object, micro.salt, micro.normflags, &e.name).ok() == Some(hash)
                })
                .count();
            let canfit = mode == PutMode::Update
                || leaf_chunks(FAT_BLOCK_SHIFT) > (same_hash + 1) * MZAP_ENT_CHUNKS;
            match single {
                Some(v) if !upgrade && name.len() < MZAP_NAME_LEN && canfit => {
                    return micro_put(os, ctx, object, micro, hash, name, v, mode);
                }
                _ => upgrade_to_fat(os, ctx, object, &micro)?,
            }
        }
    };
    let hash = hash_of(object, header.salt, header.normflags, name)?;
    fat_put(
        os, ctx, object, header, hash, name, None, int_len, &bytes, mode,
    )
}

#[cfg(test)]
thread_local! {
    /// Test seam: `false` sends every micro add and update through the decoded path, so a
    /// test can compare the in-place bytes with it.
    pub(super) static MICRO_IN_PLACE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn in_place_enabled() -> bool {
    #[cfg(test)]
    if !MICRO_IN_PLACE.with(|cell| cell.get()) {
        return false;
    }
    true
}

/// `mzap_addent` / a micro update in place: the common add or update of a micro ZAP that
/// neither grows nor turns fat writes only the entry's 64-byte chunk, after one walk of the
/// block that hashes each entry once (the same-hash count for the upgrade test and the
/// lowest unused cd, `mze_find_unused_cd`). The same decisions as the decoded path below,
/// the same resulting bytes. `Ok(false)`: the block is full, or the entry does not fit a
/// micro ZAP; the caller takes the decoded path (grow or `mzap_upgrade`).
fn micro_put_in_place(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    block: &[u8],
    name: &[u8],
    value: &ZapValue,
    mode: PutMode,
) -> Result<bool, ZapError> {
    let single = match value {
        ZapValue::U64s(words) if words.len() == 1 => words[0],
        _ => return Ok(false),
    };
    if name.len() >= MZAP_NAME_LEN {
        return Ok(false);
    }
    let salt = u64::from_le_bytes(block[8..16].try_into().unwrap_or_default());
    let normflags = u64::from_le_bytes(block[16..24].try_into().unwrap_or_default());
    let hash = hash_of(object, salt, normflags, name)?;
    let mut existing: Option<(usize, u32)> = None;
    let mut free: Option<usize> = None;
    let mut used: Vec<u32> = Vec::new();
    for (slot, chunk) in micro_chunks(block).enumerate() {
        match chunk.map_err(|why| corrupt(object, why))? {
            None => {
                free.get_or_insert(slot);
            }
            Some(e) => {
                if existing.is_none() && e.name == name {
                    existing = Some((slot, e.cd));
                }
                if hash_of(object, salt, normflags, e.name)? == hash {
                    used.push(e.cd);
                }
            }
        }
    }
    let Some(free) = free else {
        return Ok(false); // full: zap_lockdir_impl grows the block or upgrades it first
    };
    let canfit = mode == PutMode::Update
        || leaf_chunks(FAT_BLOCK_SHIFT) > (used.len() + 1) * MZAP_ENT_CHUNKS;
    if !canfit {
        return Ok(false);
    }
    let (slot, cd) = match existing {
        Some(_) if mode == PutMode::Add => return Err(ZapError::Exists),
        Some(found) => found,
        None => {
            used.sort_unstable();
            let mut cd = 0u32;
            for u in used {
                if u == cd {
                    cd += 1;
                } else if u > cd {
                    break;
                }
            }
            (free, cd)
        }
    };
    os.write(
        ctx,
        object,
        micro_slot_offset(slot),
        &micro_chunk(single, cd, name),
    )?;
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
fn micro_put(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    mut micro: MicroBlock,
    hash: u64,
    name: &[u8],
    value: u64,
    mode: PutMode,
) -> Result<(), ZapError> {
    if let Some(entry) = micro.slots.iter_mut().flatten().find(|e| e.name == name) {
        if mode == PutMode::Add {
            // The block may have grown (zap_lockdir_impl grows before the lookup).
            os.write(ctx, object, 0, &micro.encode())?;
            return Err(ZapError::Exists);
        }
        entry.value = value;
    } else {
        // mze_find_unused_cd: the lowest cd no entry of this hash uses.
        let mut used: Vec<u32> = Vec::new();
        for e in micro.slots.iter().flatten() {
            if hash_of(object, micro.salt, micro.normflags, &e.name)? == hash {
                used.push(e.cd);
            }
        }
        used.sort_unstable();
        let mut cd = 0u32;
        for u in used {
            if u == cd {
                cd += 1;
            } else if u > cd {
                break;
            }
        }
        let slot = micro
            .slots
            .iter_mut()
            .find(|s| s.is_none())
            .ok_or_else(|| corrupt(object, "micro ZAP without a free slot"))?;
        *slot = Some(MicroEntry {
            value,
            cd,
            name: name.to_vec(),
        });
    }
    Ok(os.write(ctx, object, 0, &micro.encode())?)
}

/// `mzap_upgrade`: the object becomes a fat ZAP of 16 KiB blocks holding the same entries
/// with the same cds.
fn upgrade_to_fat(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    micro: &MicroBlock,
) -> Result<FatHeader, ZapError> {
    os.set_data_block_size(ctx, object, ZAP_BLOCK_SIZE_BYTES as u32)?;
    let mut header = FatHeader::new(micro.salt, micro.normflags, FAT_BLOCK_SHIFT);
    let mut block0 = vec![0u8; ZAP_BLOCK_SIZE_BYTES];
    block0[..FAT_HEADER_FIELDS_BYTES].copy_from_slice(&header.encode());
    for slot in block0[ZAP_BLOCK_SIZE_BYTES / 2..].chunks_exact_mut(8) {
        slot.copy_from_slice(&1u64.to_le_bytes());
    }
    os.write(ctx, object, 0, &block0)?;
    let leaf = Leaf::new(FAT_BLOCK_SHIFT, 0, 0, micro.normflags != 0);
    write_leaf(os, ctx, object, &header, 1, &leaf)?;
    for e in micro.slots.iter().flatten() {
        let hash = hash_of(object, micro.salt, micro.normflags, &e.name)?;
        header = fat_put(
            os,
            ctx,
            object,
            header,
            hash,
            &e.name,
            Some(e.cd),
            8,
            &e.value.to_be_bytes(),
            PutMode::Add,
        )
        .and_then(|()| match open(os, ctx, object)? {
            Opened::Fat(h) => Ok(h),
            Opened::Micro(_) => Err(corrupt(object, "upgrade left a micro ZAP")),
        })?;
    }
    Ok(header)
}

/// `fzap_add_cd` / `fzap_update`: stores the entry, splitting its leaf as often as needed.
#[allow(clippy::too_many_arguments)]
fn fat_put(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    mut header: FatHeader,
    hash: u64,
    name: &[u8],
    cd: Option<u32>,
    int_len: u8,
    value: &[u8],
    mode: PutMode,
) -> Result<(), ZapError> {
    if Leaf::entry_chunks(name.len(), value.len()) > leaf_chunks(header.block_shift) {
        return Err(ZapError::ValueTooLarge(value.len()));
    }
    // Each pass stores the entry or splits once; prefixes are at most TABLE_SHIFT_MAX.
    for _ in 0..=TABLE_SHIFT_MAX + 1 {
        let (blkid, mut leaf) = leaf_for(os, ctx, object, &header, hash)?;
        let result = match leaf.find(hash, name) {
            Some(_) if mode == PutMode::Add => Some(Err(ZapError::Exists)),
            Some(e) => leaf.update(&e, int_len, value).then_some(Ok(false)),
            None => {
                let cd = match cd {
                    Some(cd) => cd,
                    None => {
                        let cd = leaf.free_cd(hash);
                        if cd > CD_MAX {
                            return Err(ZapError::CollisionLimit);
                        }
                        cd as u32
                    }
                };
                leaf.create(hash, cd, name, int_len, value)
                    .then_some(Ok(true))
            }
        };
        match result {
            Some(outcome) => {
                if outcome.is_ok() {
                    write_leaf(os, ctx, object, &header, blkid, &leaf)?;
                }
                if let Ok(true) = outcome {
                    header.num_entries += 1;
                    write_header(os, ctx, object, &header)?;
                }
                // zap_put_leaf_maybe_grow_ptrtbl
                if u64::from(leaf.prefix_len()) == header.ptrtbl.shift
                    && leaf.nfree() < LEAF_LOW_WATER
                    && header.ptrtbl.shift < TABLE_SHIFT_MAX
                {
                    grow_table(os, ctx, object, &mut header)?;
                }
                return outcome.map(|_| ());
            }
            None => expand_leaf(os, ctx, object, &mut header, blkid, leaf, hash)?,
        }
    }
    Err(ZapError::CollisionLimit)
}

/// `zap_expand_leaf`: splits the leaf of `hash` (doubling the table first if its prefix
/// is as long as the table's shift) and points the new leaf's slots at it.
fn expand_leaf(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &mut FatHeader,
    blkid: u64,
    mut leaf: Leaf,
    hash: u64,
) -> Result<(), ZapError> {
    let old_prefix_len = u64::from(leaf.prefix_len());
    // A leaf full of one hash: OpenZFS would double the table up to 2^26 slots before
    // failing with ENOSPC; the engine fails at once (only a broken or forced hash gets here).
    if leaf.all_hashes_are(hash) {
        return Err(ZapError::CollisionLimit);
    }
    while old_prefix_len >= header.ptrtbl.shift {
        if header.ptrtbl.shift >= TABLE_SHIFT_MAX {
            return Err(ZapError::CollisionLimit);
        }
        grow_table(os, ctx, object, header)?;
    }
    let prefix_diff = header.ptrtbl.shift - (old_prefix_len + 1);
    let sibling = (hash_prefix(hash, old_prefix_len as u32 + 1) | 1) << prefix_diff;
    let new_blkid = header.freeblk;
    header.freeblk += 1;
    header.num_leafs += 1;
    let mut new_leaf = Leaf::new(header.block_shift, 0, 0, header.normflags != 0);
    leaf.split(&mut new_leaf, header.normflags != 0);
    write_leaf(os, ctx, object, header, blkid, &leaf)?;
    write_leaf(os, ctx, object, header, new_blkid, &new_leaf)?;
    let slots: Vec<u8> = (0..1u64 << prefix_diff)
        .flat_map(|_| new_blkid.to_le_bytes())
        .collect();
    os.write(ctx, object, header.slot_offset(sibling), &slots)?;
    write_header(os, ctx, object, header)
}

/// `zap_grow_ptrtbl`: doubles the pointer table (slot i becomes 2i and 2i + 1). The
/// embedded table moves to a new block of its own (left in place, unused); an external
/// table moves to a new run twice as long and the old run is freed.
fn grow_table(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &mut FatHeader,
) -> Result<(), ZapError> {
    let bs = header.block_bytes();
    let t = header.ptrtbl;
    let old_bytes = 8u64 << t.shift;
    let old = os.read(ctx, object, header.slot_offset(0), old_bytes as usize)?;
    if old.len() as u64 != old_bytes {
        return Err(corrupt(object, "pointer table runs past the object"));
    }
    let mut doubled = Vec::with_capacity(old.len() * 2);
    for slot in old.chunks_exact(8) {
        doubled.extend_from_slice(slot);
        doubled.extend_from_slice(slot);
    }
    let new_blocks = (doubled.len() as u64).div_ceil(bs);
    let new_blk = header.freeblk;
    header.freeblk += new_blocks;
    os.write(ctx, object, new_blk * bs, &doubled)?;
    if t.numblks > 0 {
        os.free_range(ctx, object, t.blk * bs, t.numblks * bs)?;
    }
    header.ptrtbl.blk = new_blk;
    header.ptrtbl.numblks = new_blocks;
    header.ptrtbl.shift += 1;
    header.ptrtbl.nextblk = 0;
    header.ptrtbl.blks_copied = 0;
    write_header(os, ctx, object, header)
}

/// Adds `name` → `value`; `ZapError::Exists` if the name is present.
pub fn zap_add(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u64],
) -> Result<(), ZapError> {
    let value = ZapValue::U64s(value.to_vec());
    put(os, ctx, object, name.as_ref(), &value, PutMode::Add)
}

/// Adds or replaces `name` → `value` (a replaced entry keeps its cookie).
pub fn zap_update(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u64],
) -> Result<(), ZapError> {
    let value = ZapValue::U64s(value.to_vec());
    put(os, ctx, object, name.as_ref(), &value, PutMode::Update)
}

/// Adds `name` → a byte string (string properties: integer size 1); `ZapError::Exists`
/// if present.
pub fn zap_add_bytes(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u8],
) -> Result<(), ZapError> {
    let value = ZapValue::Bytes(value.to_vec());
    put(os, ctx, object, name.as_ref(), &value, PutMode::Add)
}

/// Adds or replaces `name` → a byte string.
pub fn zap_update_bytes(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u8],
) -> Result<(), ZapError> {
    let value = ZapValue::Bytes(value.to_vec());
    put(os, ctx, object, name.as_ref(), &value, PutMode::Update)
}

/// Adds or replaces `name` → an array of 2-byte integers (OpenZFS's SA layouts,
/// `zap_update(os, obj, name, 2, n, attrs)`): a fat ZAP, as OpenZFS keeps every value that
/// is not one u64 word. Reads back as `ZapValue::U64s`.
pub fn zap_update_u16s(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u16],
) -> Result<(), ZapError> {
    let name = name.as_ref();
    check_name(name)?;
    let bytes: Vec<u8> = value.iter().flat_map(|v| v.to_be_bytes()).collect();
    if bytes.len() > VALUE_SIZE_MAX_BYTES {
        return Err(ZapError::ValueTooLarge(bytes.len()));
    }
    let header = match open(os, ctx, object)? {
        Opened::Fat(header) => header,
        Opened::Micro(micro) => upgrade_to_fat(os, ctx, object, &micro)?,
    };
    let hash = hash_of(object, header.salt, header.normflags, name)?;
    fat_put(
        os,
        ctx,
        object,
        header,
        hash,
        name,
        None,
        2,
        &bytes,
        PutMode::Update,
    )
}

/// Removes `name`; `ZapError::NotFound` if absent (`zap_remove`: a micro entry's 64 bytes
/// are zeroed; a fat entry's chunks go back on its leaf's free list).
pub fn zap_remove(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
) -> Result<(), ZapError> {
    let name = name.as_ref();
    check_name(name)?;
    match open_block(os, ctx, object)? {
        Block0::Micro(block) => {
            // mzap_removeent: the entry's chunk is zeroed, in place.
            let (slot, _) = micro_find(object, &block, name)?.ok_or(ZapError::NotFound)?;
            Ok(os.write(ctx, object, micro_slot_offset(slot), &[0u8; MZAP_ENT_LEN])?)
        }
        Block0::Fat(mut header) => {
            let hash = hash_of(object, header.salt, header.normflags, name)?;
            let (blkid, mut leaf) = leaf_for(os, ctx, object, &header, hash)?;
            if !leaf.remove(hash, name) {
                return Err(ZapError::NotFound);
            }
            write_leaf(os, ctx, object, &header, blkid, &leaf)?;
            header.num_entries = header.num_entries.saturating_sub(1);
            write_header(os, ctx, object, &header)
        }
    }
}

/// The value of `name`, whichever kind it is.
pub fn zap_lookup_value(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
) -> Result<Option<ZapValue>, ZapError> {
    let name = name.as_ref();
    check_name(name)?;
    match open_block(os, ctx, object)? {
        Block0::Micro(block) => {
            Ok(micro_find(object, &block, name)?.map(|(_, value)| ZapValue::U64s(vec![value])))
        }
        Block0::Fat(header) => {
            let hash = hash_of(object, header.salt, header.normflags, name)?;
            let (_, leaf) = leaf_for(os, ctx, object, &header, hash)?;
            Ok(leaf.find(hash, name).map(|e| {
                let entry = leaf.entry(&e);
                decode_value(entry.int_len, &entry.value)
            }))
        }
    }
}

/// The u64 words of `name`; `ZapError::WrongType` if it holds bytes.
pub fn zap_lookup(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
) -> Result<Option<Vec<u64>>, ZapError> {
    match zap_lookup_value(os, ctx, object, name)? {
        None => Ok(None),
        Some(ZapValue::U64s(words)) => Ok(Some(words)),
        Some(ZapValue::Bytes(_)) => Err(ZapError::WrongType),
    }
}

/// The byte string of `name`; `ZapError::WrongType` if it holds u64 words.
pub fn zap_lookup_bytes(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
) -> Result<Option<Vec<u8>>, ZapError> {
    match zap_lookup_value(os, ctx, object, name)? {
        None => Ok(None),
        Some(ZapValue::Bytes(bytes)) => Ok(Some(bytes)),
        Some(ZapValue::U64s(_)) => Err(ZapError::WrongType),
    }
}

pub fn zap_count(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<u64, ZapError> {
    Ok(match open(os, ctx, object)? {
        Opened::Micro(micro) => micro.entry_count() as u64,
        Opened::Fat(header) => header.num_entries,
    })
}

/// Shape of the object: a micro ZAP is one block, depth 0, no leaves; a fat ZAP's depth
/// is its pointer table's shift.
pub fn zap_stats(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<ZapStats, ZapError> {
    Ok(match open(os, ctx, object)? {
        Opened::Micro(micro) => ZapStats {
            entry_count: micro.entry_count() as u64,
            depth: 0,
            leaf_count: 0,
            block_count: 1,
        },
        Opened::Fat(header) => ZapStats {
            entry_count: header.num_entries,
            depth: header.ptrtbl.shift as u32,
            leaf_count: header.num_leafs,
            block_count: header.freeblk,
        },
    })
}

/// Whether the object is a micro ZAP (tests and the inspector).
pub fn zap_is_micro(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<bool, ZapError> {
    Ok(matches!(open(os, ctx, object)?, Opened::Micro(_)))
}

/// Every entry of a ZAP, in cookie order (small ZAPs: property lists, snapshot names).
pub fn zap_list_all(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
) -> Result<Vec<ZapEntry>, ZapError> {
    let mut out = Vec::new();
    let mut cursor = 0;
    while cursor != CURSOR_END {
        let (entries, next) = zap_list(os, ctx, object, cursor, 256)?;
        out.extend(entries);
        cursor = next;
    }
    Ok(out)
}

/// Up to `max` entries at or after `cursor`, in (hash, cd) order, and the cursor that
/// continues the walk (`CURSOR_END` when it is over). Start with 0. Cursors are OpenZFS's
/// serialized cursors (`hash::serialize`); an entry's `cookie` resumes a walk at it.
///
/// An entry's (hash, cd) never changes while it exists (splits move entries between
/// leaves, the upgrade to fat keeps cds), so a walk resumed from any cursor sees every
/// entry that existed throughout exactly once, whatever was inserted or removed between
/// calls (`fzap_cursor_retrieve`, `mzap` cursor retrieval).
pub fn zap_list(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    cursor: u64,
    max: usize,
) -> Result<(Vec<ZapEntry>, u64), ZapError> {
    let mut out = Vec::new();
    if max == 0 || cursor == CURSOR_END {
        return Ok((out, cursor));
    }
    let Some((mut hash, mut cd)) = deserialize(cursor) else {
        return Ok((out, CURSOR_END));
    };
    let push = |out: &mut Vec<ZapEntry>, h: u64, c: u32, name: Vec<u8>, value: ZapValue| {
        out.push(ZapEntry {
            name,
            value,
            cookie: serialize(h, c),
        });
        out.len() == max
    };
    match open(os, ctx, object)? {
        Opened::Micro(micro) => {
            let mut entries = Vec::with_capacity(micro.slots.len());
            for e in micro.slots.iter().flatten() {
                let h = hash_of(object, micro.salt, micro.normflags, &e.name)?;
                entries.push((h, e.cd, e));
            }
            entries.sort_by_key(|(h, c, _)| (*h, *c));
            for (h, c, e) in entries {
                if (h, c) >= (hash, cd)
                    && push(
                        &mut out,
                        h,
                        c,
                        e.name.clone(),
                        ZapValue::U64s(vec![e.value]),
                    )
                {
                    return Ok((out, cursor_after(serialize(h, c))));
                }
            }
            Ok((out, CURSOR_END))
        }
        Opened::Fat(header) => {
            // Each leaf visited moves `hash` past the leaf's range: one visit per slot.
            for _ in 0..=(1u64 << header.ptrtbl.shift) {
                let (_, leaf) = leaf_for(os, ctx, object, &header, hash)?;
                for e in leaf.entries() {
                    if (e.hash, e.cd) >= (hash, cd) {
                        let value = decode_value(e.int_len, &e.value);
                        if push(&mut out, e.hash, e.cd, e.name, value) {
                            return Ok((out, cursor_after(serialize(e.hash, e.cd))));
                        }
                    }
                }
                let plen = leaf.prefix_len();
                if plen == 0 {
                    return Ok((out, CURSOR_END));
                }
                let nocare = u64::MAX >> plen;
                match (hash & !nocare).checked_add(nocare + 1) {
                    Some(next) => {
                        hash = next;
                        cd = 0;
                    }
                    None => return Ok((out, CURSOR_END)),
                }
            }
            Err(corrupt(object, "leaf ranges do not advance"))
        }
    }
}

/// The cookie bound for collision differentiators (exported for callers' docs and tests).
pub const ZAP_CD_MAX: u64 = CD_MAX;
