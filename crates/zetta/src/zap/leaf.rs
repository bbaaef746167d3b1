//! ZAP leaves: one 16 KiB block holding the entries whose hash starts with the leaf's prefix
//! (OpenZFS `zap_leaf.c`, which chains fixed 24-byte chunks; ours is a slotted page).
//!
//! ```text
//! leaf block (16384 bytes), little-endian:
//!   0 magic u64 "ZTZAPLF1"     8 prefix u64 (right-aligned)   16 prefix_len u16 (bits, <= 32)
//!  18 entry_count u16          20 heap_start u16 (<= 16384)   22 heap_live_bytes u16
//!  24 reserved 8 bytes (zero)
//!  32 slot array: entry_count x u16, the byte offset of each entry, sorted by cookie
//!  .. free space ..
//!  heap_start .. 16384: entries, packed downward from the end of the block:
//!     0 cookie u64 (hash top 48 bits | cd u16)   8 name_len u16 (1..=1024)
//!    10 kind u8 (1 = u64 array, 2 = bytes)      11 reserved u8 (zero)
//!    12 value_len u32 (words for kind 1, bytes for kind 2)
//!    16 name bytes, then value bytes (u64 words little-endian)
//! ```
//!
//! Invariants (checked by `Leaf::decode` on every block read from disk, so the accessors can
//! index without panicking): every slot points inside the heap and its entry ends inside the
//! block; cookies strictly increase along the slot array and all share the leaf's prefix;
//! the live entries' sizes add up to `heap_live_bytes`. Removing an entry leaves a gap in the
//! heap; an insert that does not fit the contiguous free space compacts the heap first.

use super::hash::{key_prefix, CD_MAX};

pub const ZAP_BLOCK_SIZE_BYTES: usize = 1 << 14;
pub const LEAF_MAGIC: u64 = u64::from_le_bytes(*b"ZTZAPLF1");
pub const LEAF_HEADER_SIZE_BYTES: usize = 32;
pub const ENTRY_HEADER_SIZE_BYTES: usize = 16;
pub const SLOT_SIZE_BYTES: usize = 2;
/// Longest name (property names; directory entries are limited to 255 by the ZPL).
pub const NAME_LEN_MAX_BYTES: usize = 1024;
/// Largest value, as bytes or as u64 words.
pub const VALUE_SIZE_MAX_BYTES: usize = 8192;
/// Deepest pointer table (and longest leaf prefix): 2^32 leaves.
pub const DEPTH_MAX: u32 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    U64s = 1,
    Bytes = 2,
}

/// One entry as it sits in a leaf.
#[derive(Debug)]
pub struct EntryRef<'a> {
    pub cookie: u64,
    pub name: &'a [u8],
    pub kind: ValueKind,
    /// The value's bytes (u64 words little-endian for `ValueKind::U64s`).
    pub value: &'a [u8],
    offset: usize,
    len: usize,
}

/// A validated leaf block, edited in place.
#[derive(Clone, Debug)]
pub struct Leaf {
    buf: Vec<u8>,
    pub prefix: u64,
    pub prefix_len: u32,
    entry_count: usize,
    heap_start: usize,
    heap_live_bytes: usize,
}

fn get_u16(buf: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([buf[at], buf[at + 1]]))
}

fn get_u32(buf: &[u8], at: usize) -> usize {
    u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize
}

fn get_u64(buf: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(word)
}

fn put_u16(buf: &mut [u8], at: usize, value: usize) {
    debug_assert!(value <= usize::from(u16::MAX));
    buf[at..at + 2].copy_from_slice(&(value as u16).to_le_bytes());
}

/// The size an entry takes in the heap.
pub fn entry_size_bytes(name_len: usize, value_len_bytes: usize) -> usize {
    ENTRY_HEADER_SIZE_BYTES + name_len + value_len_bytes
}

/// Parses the entry at `offset`, checking that it lies inside the block.
fn parse_entry(buf: &[u8], offset: usize) -> Result<EntryRef<'_>, String> {
    if offset + ENTRY_HEADER_SIZE_BYTES > buf.len() {
        return Err(format!("entry at {offset} runs off the block"));
    }
    let cookie = get_u64(buf, offset);
    let name_len = get_u16(buf, offset + 8);
    let kind = match buf[offset + 10] {
        1 => ValueKind::U64s,
        2 => ValueKind::Bytes,
        other => return Err(format!("entry at {offset} has value kind {other}")),
    };
    let value_len = get_u32(buf, offset + 12);
    let value_bytes = match kind {
        ValueKind::U64s => value_len.saturating_mul(8),
        ValueKind::Bytes => value_len,
    };
    if name_len == 0 || name_len > NAME_LEN_MAX_BYTES || value_bytes > VALUE_SIZE_MAX_BYTES {
        return Err(format!(
            "entry at {offset}: name of {name_len} bytes, value of {value_bytes} bytes"
        ));
    }
    let len = entry_size_bytes(name_len, value_bytes);
    if offset + len > buf.len() {
        return Err(format!(
            "entry at {offset} of {len} bytes runs off the block"
        ));
    }
    let name_at = offset + ENTRY_HEADER_SIZE_BYTES;
    Ok(EntryRef {
        cookie,
        name: &buf[name_at..name_at + name_len],
        kind,
        value: &buf[name_at + name_len..offset + len],
        offset,
        len,
    })
}

impl Leaf {
    /// An empty leaf covering the hashes that start with `prefix` (`prefix_len` bits).
    pub fn new(prefix: u64, prefix_len: u32) -> Leaf {
        assert!(prefix_len <= DEPTH_MAX && key_prefix(prefix, 64 - prefix_len) == 0);
        let mut leaf = Leaf {
            buf: vec![0u8; ZAP_BLOCK_SIZE_BYTES],
            prefix,
            prefix_len,
            entry_count: 0,
            heap_start: ZAP_BLOCK_SIZE_BYTES,
            heap_live_bytes: 0,
        };
        leaf.buf[0..8].copy_from_slice(&LEAF_MAGIC.to_le_bytes());
        leaf.buf[8..16].copy_from_slice(&prefix.to_le_bytes());
        put_u16(&mut leaf.buf, 16, prefix_len as usize);
        leaf.store_counts();
        leaf
    }

    /// Validates a block read from disk (see the module invariants).
    pub fn decode(buf: Vec<u8>) -> Result<Leaf, String> {
        if buf.len() != ZAP_BLOCK_SIZE_BYTES {
            return Err(format!("leaf of {} bytes", buf.len()));
        }
        if get_u64(&buf, 0) != LEAF_MAGIC {
            return Err("bad leaf magic".to_string());
        }
        let prefix = get_u64(&buf, 8);
        let prefix_len = get_u16(&buf, 16) as u32;
        if prefix_len > DEPTH_MAX || key_prefix(prefix, 64 - prefix_len) != 0 {
            return Err(format!("leaf prefix {prefix:#x} of {prefix_len} bits"));
        }
        let entry_count = get_u16(&buf, 18);
        let heap_start = get_u16(&buf, 20);
        let heap_live_bytes = get_u16(&buf, 22);
        let slots_end = LEAF_HEADER_SIZE_BYTES + entry_count * SLOT_SIZE_BYTES;
        if slots_end > heap_start
            || heap_start > ZAP_BLOCK_SIZE_BYTES
            || heap_live_bytes > ZAP_BLOCK_SIZE_BYTES - heap_start
        {
            return Err(format!(
                "leaf counts: {entry_count} entries, heap at {heap_start}, {heap_live_bytes} live"
            ));
        }
        let mut live_bytes = 0usize;
        let mut previous: Option<u64> = None;
        for slot in 0..entry_count {
            let offset = get_u16(&buf, LEAF_HEADER_SIZE_BYTES + slot * SLOT_SIZE_BYTES);
            if offset < heap_start {
                return Err(format!("slot {slot} points at {offset}, below the heap"));
            }
            let entry = parse_entry(&buf, offset)?;
            if entry.cookie & 0xFFFF > CD_MAX
                || key_prefix(entry.cookie, prefix_len) != prefix
                || previous.is_some_and(|p| p >= entry.cookie)
            {
                return Err(format!(
                    "slot {slot}: cookie {:#x} out of place",
                    entry.cookie
                ));
            }
            previous = Some(entry.cookie);
            live_bytes += entry.len;
        }
        if live_bytes != heap_live_bytes {
            return Err(format!(
                "entries hold {live_bytes} bytes, header says {heap_live_bytes}"
            ));
        }
        Ok(Leaf {
            buf,
            prefix,
            prefix_len,
            entry_count,
            heap_start,
            heap_live_bytes,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn len(&self) -> usize {
        self.entry_count
    }

    pub fn is_empty(&self) -> bool {
        self.entry_count == 0
    }

    fn store_counts(&mut self) {
        put_u16(&mut self.buf, 18, self.entry_count);
        put_u16(&mut self.buf, 20, self.heap_start);
        put_u16(&mut self.buf, 22, self.heap_live_bytes);
    }

    fn slot_offset(&self, slot: usize) -> usize {
        get_u16(&self.buf, LEAF_HEADER_SIZE_BYTES + slot * SLOT_SIZE_BYTES)
    }

    /// The entry in `slot` (validated at decode, or written by us).
    pub fn entry(&self, slot: usize) -> EntryRef<'_> {
        debug_assert!(slot < self.entry_count);
        let parsed = parse_entry(&self.buf, self.slot_offset(slot));
        parsed.unwrap_or_else(|why| unreachable!("validated leaf lost an entry: {why}"))
    }

    fn cookie(&self, slot: usize) -> u64 {
        get_u64(&self.buf, self.slot_offset(slot))
    }

    /// The first slot whose cookie is at least `cookie` (`len()` if none).
    pub fn lower_bound(&self, cookie: u64) -> usize {
        let (mut low, mut high) = (0, self.entry_count);
        while low < high {
            let middle = (low + high) / 2;
            if self.cookie(middle) < cookie {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The slot of `name`, whose hash key (top 48 bits) is `key`.
    pub fn find(&self, key: u64, name: &[u8]) -> Option<usize> {
        let mut slot = self.lower_bound(key);
        while slot < self.entry_count && super::hash::cookie_key(self.cookie(slot)) == key {
            if self.entry(slot).name == name {
                return Some(slot);
            }
            slot += 1;
        }
        None
    }

    /// The smallest collision differentiator not used by an entry with this key.
    pub fn free_cd(&self, key: u64) -> Option<u64> {
        let mut expected = 0u64;
        let mut slot = self.lower_bound(key);
        while slot < self.entry_count {
            let cookie = self.cookie(slot);
            if super::hash::cookie_key(cookie) != key || super::hash::cookie_cd(cookie) != expected
            {
                break;
            }
            expected += 1;
            slot += 1;
        }
        (expected <= CD_MAX).then_some(expected)
    }

    /// Whether an entry of `size_bytes` fits, compacting the heap if need be.
    fn make_room(&mut self, size_bytes: usize) -> bool {
        let slots_end = LEAF_HEADER_SIZE_BYTES + (self.entry_count + 1) * SLOT_SIZE_BYTES;
        if self.heap_start >= slots_end + size_bytes {
            return true;
        }
        if ZAP_BLOCK_SIZE_BYTES - self.heap_live_bytes < slots_end + size_bytes {
            return false;
        }
        self.compact();
        self.heap_start >= slots_end + size_bytes
    }

    /// Packs the live entries against the end of the block, in slot order.
    fn compact(&mut self) {
        let old = self.buf.clone();
        let mut end = ZAP_BLOCK_SIZE_BYTES;
        for slot in 0..self.entry_count {
            let offset = get_u16(&old, LEAF_HEADER_SIZE_BYTES + slot * SLOT_SIZE_BYTES);
            // Sizes come from the old image: moved entries overwrite the new one as we go.
            let len = match parse_entry(&old, offset) {
                Ok(entry) => entry.len,
                Err(why) => unreachable!("validated leaf lost an entry: {why}"),
            };
            end -= len;
            self.buf[end..end + len].copy_from_slice(&old[offset..offset + len]);
            put_u16(
                &mut self.buf,
                LEAF_HEADER_SIZE_BYTES + slot * SLOT_SIZE_BYTES,
                end,
            );
        }
        self.buf[LEAF_HEADER_SIZE_BYTES + self.entry_count * SLOT_SIZE_BYTES..end].fill(0);
        self.heap_start = end;
        debug_assert_eq!(ZAP_BLOCK_SIZE_BYTES - end, self.heap_live_bytes);
        self.store_counts();
    }

    /// Inserts an entry; false when the leaf is too full (it must split).
    pub fn insert(&mut self, cookie: u64, name: &[u8], kind: ValueKind, value: &[u8]) -> bool {
        assert_eq!(
            key_prefix(cookie, self.prefix_len),
            self.prefix,
            "misrouted entry"
        );
        let size = entry_size_bytes(name.len(), value.len());
        if !self.make_room(size) {
            return false;
        }
        let at = self.heap_start - size;
        let value_len = match kind {
            ValueKind::U64s => value.len() / 8,
            ValueKind::Bytes => value.len(),
        };
        self.buf[at..at + 8].copy_from_slice(&cookie.to_le_bytes());
        put_u16(&mut self.buf, at + 8, name.len());
        self.buf[at + 10] = kind as u8;
        self.buf[at + 11] = 0;
        self.buf[at + 12..at + 16].copy_from_slice(&(value_len as u32).to_le_bytes());
        let name_at = at + ENTRY_HEADER_SIZE_BYTES;
        self.buf[name_at..name_at + name.len()].copy_from_slice(name);
        self.buf[name_at + name.len()..at + size].copy_from_slice(value);
        let slot = self.lower_bound(cookie);
        let slot_at = LEAF_HEADER_SIZE_BYTES + slot * SLOT_SIZE_BYTES;
        let slots_end = LEAF_HEADER_SIZE_BYTES + self.entry_count * SLOT_SIZE_BYTES;
        self.buf
            .copy_within(slot_at..slots_end, slot_at + SLOT_SIZE_BYTES);
        put_u16(&mut self.buf, slot_at, at);
        self.entry_count += 1;
        self.heap_start = at;
        self.heap_live_bytes += size;
        self.store_counts();
        debug_assert_eq!(self.cookie(slot), cookie);
        true
    }

    /// Removes the entry in `slot` (its bytes become a gap until the next compaction).
    pub fn remove(&mut self, slot: usize) {
        assert!(slot < self.entry_count);
        let entry = self.entry(slot);
        let (offset, len) = (entry.offset, entry.len);
        self.buf[offset..offset + len].fill(0);
        let slot_at = LEAF_HEADER_SIZE_BYTES + slot * SLOT_SIZE_BYTES;
        let slots_end = LEAF_HEADER_SIZE_BYTES + self.entry_count * SLOT_SIZE_BYTES;
        self.buf
            .copy_within(slot_at + SLOT_SIZE_BYTES..slots_end, slot_at);
        self.buf[slots_end - SLOT_SIZE_BYTES..slots_end].fill(0);
        self.entry_count -= 1;
        self.heap_live_bytes -= len;
        if offset == self.heap_start {
            self.heap_start += len;
        }
        self.store_counts();
    }

    /// How many leading key bits all entries and `extra` share (64 if all keys are equal).
    pub fn common_prefix_bits(&self, extra: u64) -> u32 {
        let key = super::hash::cookie_key(extra);
        let differ = (0..self.entry_count).fold(0u64, |acc, slot| {
            acc | (super::hash::cookie_key(self.cookie(slot)) ^ key)
        });
        differ.leading_zeros()
    }

    /// Splits on the next key bit: (entries with bit 0, entries with bit 1).
    pub fn split(&self) -> (Leaf, Leaf) {
        assert!(self.prefix_len < DEPTH_MAX);
        let bits = self.prefix_len + 1;
        let mut low = Leaf::new(self.prefix << 1, bits);
        let mut high = Leaf::new((self.prefix << 1) | 1, bits);
        for slot in 0..self.entry_count {
            let entry = self.entry(slot);
            let target = if key_prefix(entry.cookie, bits) & 1 == 0 {
                &mut low
            } else {
                &mut high
            };
            let fitted = target.insert(entry.cookie, entry.name, entry.kind, entry.value);
            assert!(fitted, "half a leaf overflowed a leaf");
        }
        (low, high)
    }
}
