//! The ZAP operations over an object of an `ObjectSet` (OpenZFS `zap.c`, `zap_micro.c`).
//!
//! Every operation reads the header's first 128 bytes, one pointer-table slot and one leaf,
//! and writes back at most that leaf and the header fields; a split also writes the new leaf
//! and a run of table slots, and a table doubling rewrites the table (amortised O(1)).
//! All bytes come through `ObjectSet::read`/`write`, so they are copy-on-write, checksummed
//! and cached like any other object's data. Nothing is cached here: two callers may use the
//! same object one after the other with no stale state.

use super::hash::{cookie_key, key_prefix, name_hash, CD_MAX, CURSOR_END};
use super::header::{
    table_blocks_for, ZapHeaderPhys, EMBEDDED_TABLE_DEPTH_MAX, EMBEDDED_TABLE_OFFSET_BYTES,
    HEADER_FIELDS_SIZE_BYTES, TABLE_SLOT_SIZE_BYTES,
};
use super::leaf::{
    Leaf, ValueKind, DEPTH_MAX, NAME_LEN_MAX_BYTES, VALUE_SIZE_MAX_BYTES, ZAP_BLOCK_SIZE_BYTES,
};
use crate::dmu::{DmuError, IoCtx, ObjectSet};
use crate::types::ObjectId;

const BLOCK_BYTES: u64 = ZAP_BLOCK_SIZE_BYTES as u64;

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
    /// More same-hash entries than a leaf holds (only with a broken or forced hash).
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

fn words_to_bytes(value: &[u64]) -> Vec<u8> {
    value.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn decode_value(kind: ValueKind, bytes: &[u8]) -> ZapValue {
    match kind {
        ValueKind::Bytes => ZapValue::Bytes(bytes.to_vec()),
        ValueKind::U64s => ZapValue::U64s(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
    }
}

/// Creates an empty ZAP object of `object_type` with a fresh random salt.
pub fn zap_create(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
) -> Result<ObjectId, ZapError> {
    let salt = [crate::rand::random_u64(), crate::rand::random_u64()];
    zap_create_salted(os, ctx, object_type, salt)
}

/// Creates an empty ZAP with a chosen salt (golden tests, reproducible simulations).
pub fn zap_create_salted(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
    salt: [u64; 2],
) -> Result<ObjectId, ZapError> {
    create_zap_object(os, ctx, object_type, salt, 0, 0)
}

/// Creates an empty ZAP whose dnode also carries a bonus record (a directory's znode).
pub fn zap_create_with_bonus(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
    bonus_type: u8,
    bonus_len: usize,
) -> Result<ObjectId, ZapError> {
    let salt = [crate::rand::random_u64(), crate::rand::random_u64()];
    create_zap_object(os, ctx, object_type, salt, bonus_type, bonus_len)
}

fn create_zap_object(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object_type: u8,
    salt: [u64; 2],
    bonus_type: u8,
    bonus_len: usize,
) -> Result<ObjectId, ZapError> {
    let object = os.create_object(
        ctx,
        object_type,
        ZAP_BLOCK_SIZE_BYTES as u32,
        bonus_type,
        bonus_len,
    )?;
    os.set_fixed_block_size(ctx, object)?;
    let mut image = vec![0u8; 2 * ZAP_BLOCK_SIZE_BYTES];
    let header = ZapHeaderPhys::new(salt);
    image[..HEADER_FIELDS_SIZE_BYTES].copy_from_slice(&header.encode());
    let table_at = EMBEDDED_TABLE_OFFSET_BYTES as usize;
    image[table_at..table_at + 8].copy_from_slice(&1u64.to_le_bytes());
    image[ZAP_BLOCK_SIZE_BYTES..].copy_from_slice(Leaf::new(0, 0).as_bytes());
    os.write(ctx, object, 0, &image)?;
    Ok(object)
}

/// Frees the ZAP object and all its blocks.
pub fn zap_destroy(os: &mut ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<(), ZapError> {
    read_header(os, ctx, object)?;
    Ok(os.free_object(ctx, object)?)
}

fn read_header(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
) -> Result<ZapHeaderPhys, ZapError> {
    let bytes = os.read(ctx, object, 0, HEADER_FIELDS_SIZE_BYTES)?;
    ZapHeaderPhys::decode(&bytes).map_err(|why| corrupt(object, why))
}

fn write_header(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &ZapHeaderPhys,
) -> Result<(), ZapError> {
    Ok(os.write(ctx, object, 0, &header.encode())?)
}

/// The block of the leaf covering `key`, from the pointer table.
fn leaf_block_for(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &ZapHeaderPhys,
    key: u64,
) -> Result<u64, ZapError> {
    let index = key_prefix(key, header.depth);
    let at = header.table_offset_bytes() + index * TABLE_SLOT_SIZE_BYTES;
    let bytes = os.read(ctx, object, at, 8)?;
    let mut word = [0u8; 8];
    if bytes.len() != 8 {
        return Err(corrupt(object, "pointer table runs past the object"));
    }
    word.copy_from_slice(&bytes);
    let block = u64::from_le_bytes(word);
    if !header.is_leaf_block(block) {
        return Err(corrupt(
            object,
            format!("table slot {index} -> block {block}"),
        ));
    }
    Ok(block)
}

fn read_leaf(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &ZapHeaderPhys,
    block: u64,
    key: u64,
) -> Result<Leaf, ZapError> {
    let bytes = os.read(ctx, object, block * BLOCK_BYTES, ZAP_BLOCK_SIZE_BYTES)?;
    let leaf =
        Leaf::decode(bytes).map_err(|why| corrupt(object, format!("leaf {block}: {why}")))?;
    if leaf.prefix_len > header.depth || key_prefix(key, leaf.prefix_len) != leaf.prefix {
        return Err(corrupt(
            object,
            format!("leaf {block} does not cover the key"),
        ));
    }
    Ok(leaf)
}

/// Header, leaf block and leaf for a key.
fn locate(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    key: u64,
) -> Result<(ZapHeaderPhys, u64, Leaf), ZapError> {
    let header = read_header(os, ctx, object)?;
    let block = leaf_block_for(os, ctx, object, &header, key)?;
    let leaf = read_leaf(os, ctx, object, &header, block, key)?;
    Ok((header, block, leaf))
}

fn write_leaf(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    block: u64,
    leaf: &Leaf,
) -> Result<(), ZapError> {
    Ok(os.write(ctx, object, block * BLOCK_BYTES, leaf.as_bytes())?)
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
    kind: ValueKind,
    value: &[u8],
    mode: PutMode,
) -> Result<(), ZapError> {
    check_name(name)?;
    if value.len() > VALUE_SIZE_MAX_BYTES {
        return Err(ZapError::ValueTooLarge(value.len()));
    }
    let salt = read_header(os, ctx, object)?.salt;
    let key = cookie_key(name_hash(salt, name));
    // Each pass either stores the entry or splits the leaf once; splits stop at DEPTH_MAX.
    for _ in 0..=DEPTH_MAX + 1 {
        let (mut header, block, mut leaf) = locate(os, ctx, object, key)?;
        let original = leaf.clone();
        let (cookie, is_new) = match leaf.find(key, name) {
            Some(_) if mode == PutMode::Add => return Err(ZapError::Exists),
            Some(slot) => {
                let cookie = leaf.entry(slot).cookie;
                leaf.remove(slot);
                (cookie, false)
            }
            None => match leaf.free_cd(key) {
                Some(cd) => (key | cd, true),
                None => return Err(ZapError::CollisionLimit),
            },
        };
        if leaf.insert(cookie, name, kind, value) {
            write_leaf(os, ctx, object, block, &leaf)?;
            if is_new {
                header.entry_count += 1;
                write_header(os, ctx, object, &header)?;
            }
            return Ok(());
        }
        split_leaf(os, ctx, object, &mut header, block, &original, cookie)?;
    }
    Err(ZapError::CollisionLimit)
}

/// Splits the full leaf in `block` on its next key bit (doubling the table if needed).
fn split_leaf(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &mut ZapHeaderPhys,
    block: u64,
    leaf: &Leaf,
    incoming: u64,
) -> Result<(), ZapError> {
    if leaf.common_prefix_bits(incoming) >= DEPTH_MAX || leaf.prefix_len >= DEPTH_MAX {
        return Err(ZapError::CollisionLimit);
    }
    if leaf.prefix_len == header.depth {
        grow_table(os, ctx, object, header)?;
    }
    let (low, high) = leaf.split();
    let high_block = header.next_block;
    header.next_block += 1;
    header.leaf_count += 1;
    write_leaf(os, ctx, object, block, &low)?;
    write_leaf(os, ctx, object, high_block, &high)?;
    // The high half's table slots: those whose top prefix_len + 1 bits are its prefix.
    let span_bits = header.depth - high.prefix_len;
    let first = high.prefix << span_bits;
    let count = 1u64 << span_bits;
    let slots: Vec<u8> = (0..count).flat_map(|_| high_block.to_le_bytes()).collect();
    let at = header.table_offset_bytes() + first * TABLE_SLOT_SIZE_BYTES;
    os.write(ctx, object, at, &slots)?;
    write_header(os, ctx, object, header)
}

/// Doubles the pointer table: slot i becomes slots 2i and 2i + 1.
fn grow_table(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    header: &mut ZapHeaderPhys,
) -> Result<(), ZapError> {
    if header.depth >= DEPTH_MAX {
        return Err(ZapError::CollisionLimit);
    }
    let old_size_bytes = header.table_slots() * TABLE_SLOT_SIZE_BYTES;
    let old = os.read(
        ctx,
        object,
        header.table_offset_bytes(),
        old_size_bytes as usize,
    )?;
    if old.len() as u64 != old_size_bytes {
        return Err(corrupt(object, "pointer table runs past the object"));
    }
    let mut doubled = Vec::with_capacity(old.len() * 2);
    for slot in old.chunks_exact(8) {
        doubled.extend_from_slice(slot);
        doubled.extend_from_slice(slot);
    }
    let (old_start, old_count) = (header.table_block_start, header.table_block_count);
    let was_embedded = header.depth <= EMBEDDED_TABLE_DEPTH_MAX;
    header.depth += 1;
    if header.depth > EMBEDDED_TABLE_DEPTH_MAX {
        header.table_block_count = table_blocks_for(header.depth);
        header.table_block_start = header.next_block;
        header.next_block += header.table_block_count;
    }
    os.write(ctx, object, header.table_offset_bytes(), &doubled)?;
    if header.depth > EMBEDDED_TABLE_DEPTH_MAX {
        if was_embedded {
            let zeros = vec![0u8; old_size_bytes as usize];
            os.write(ctx, object, EMBEDDED_TABLE_OFFSET_BYTES, &zeros)?;
        } else {
            os.free_range(
                ctx,
                object,
                old_start * BLOCK_BYTES,
                old_count * BLOCK_BYTES,
            )?;
        }
    }
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
    let bytes = words_to_bytes(value);
    put(
        os,
        ctx,
        object,
        name.as_ref(),
        ValueKind::U64s,
        &bytes,
        PutMode::Add,
    )
}

/// Adds or replaces `name` → `value` (a replaced entry keeps its cookie).
pub fn zap_update(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u64],
) -> Result<(), ZapError> {
    let bytes = words_to_bytes(value);
    put(
        os,
        ctx,
        object,
        name.as_ref(),
        ValueKind::U64s,
        &bytes,
        PutMode::Update,
    )
}

/// Adds `name` → a byte string (string properties); `ZapError::Exists` if present.
pub fn zap_add_bytes(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u8],
) -> Result<(), ZapError> {
    put(
        os,
        ctx,
        object,
        name.as_ref(),
        ValueKind::Bytes,
        value,
        PutMode::Add,
    )
}

/// Adds or replaces `name` → a byte string.
pub fn zap_update_bytes(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
    value: &[u8],
) -> Result<(), ZapError> {
    put(
        os,
        ctx,
        object,
        name.as_ref(),
        ValueKind::Bytes,
        value,
        PutMode::Update,
    )
}

/// Removes `name`; `ZapError::NotFound` if absent.
pub fn zap_remove(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    name: impl AsRef<[u8]>,
) -> Result<(), ZapError> {
    let name = name.as_ref();
    check_name(name)?;
    let salt = read_header(os, ctx, object)?.salt;
    let key = cookie_key(name_hash(salt, name));
    let (mut header, block, mut leaf) = locate(os, ctx, object, key)?;
    let slot = leaf.find(key, name).ok_or(ZapError::NotFound)?;
    leaf.remove(slot);
    write_leaf(os, ctx, object, block, &leaf)?;
    header.entry_count = header.entry_count.saturating_sub(1);
    write_header(os, ctx, object, &header)
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
    let salt = read_header(os, ctx, object)?.salt;
    let key = cookie_key(name_hash(salt, name));
    let (_, _, leaf) = locate(os, ctx, object, key)?;
    Ok(leaf.find(key, name).map(|slot| {
        let entry = leaf.entry(slot);
        decode_value(entry.kind, entry.value)
    }))
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
    Ok(read_header(os, ctx, object)?.entry_count)
}

pub fn zap_stats(os: &ObjectSet, ctx: &IoCtx<'_>, object: ObjectId) -> Result<ZapStats, ZapError> {
    let header = read_header(os, ctx, object)?;
    Ok(ZapStats {
        entry_count: header.entry_count,
        depth: header.depth,
        leaf_count: header.leaf_count,
        block_count: header.next_block,
    })
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

/// Up to `max` entries with cookies at or after `cursor`, in cookie (hash) order, and the
/// cursor that continues the walk (`CURSOR_END` when it is over). Start with 0.
///
/// Entries are ordered by their cookie, which never changes while the entry exists (splits
/// move entries between leaves, not along the order), so a walk resumed from any cursor sees
/// every entry that existed throughout exactly once, whatever was inserted or removed
/// between calls.
pub fn zap_list(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    cursor: u64,
    max: usize,
) -> Result<(Vec<ZapEntry>, u64), ZapError> {
    let mut out = Vec::new();
    let mut position = cursor;
    if max == 0 || position == CURSOR_END {
        return Ok((out, position));
    }
    let header = read_header(os, ctx, object)?;
    // Each leaf visited moves `position` past the leaf's range: at most one visit per slot.
    for _ in 0..=header.table_slots() {
        let block = leaf_block_for(os, ctx, object, &header, position)?;
        let leaf = read_leaf(os, ctx, object, &header, block, position)?;
        for slot in leaf.lower_bound(position)..leaf.len() {
            let entry = leaf.entry(slot);
            out.push(ZapEntry {
                name: entry.name.to_vec(),
                value: decode_value(entry.kind, entry.value),
                cookie: entry.cookie,
            });
            if out.len() == max {
                return Ok((out, entry.cookie + 1));
            }
        }
        // The next leaf's range starts just past this leaf's prefix.
        if leaf.prefix_len == 0 || leaf.prefix + 1 == 1u64 << leaf.prefix_len {
            return Ok((out, CURSOR_END));
        }
        position = (leaf.prefix + 1) << (64 - leaf.prefix_len);
    }
    Err(corrupt(object, "leaf ranges do not advance"))
}

/// The cookie bound for collision differentiators (exported for callers' docs and tests).
pub const ZAP_CD_MAX: u64 = CD_MAX;
