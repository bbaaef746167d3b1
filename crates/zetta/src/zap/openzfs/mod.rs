//! OpenZFS's ZAP on disk, read-only: micro ZAPs (`micro`) and fat ZAPs (`fat`), listed and
//! looked up by name the way OpenZFS hashes names.
//!
//! ZFS counterpart: `include/sys/zap_impl.h`, `include/sys/zap_leaf.h`, `include/sys/zap.h`
//! (`zap_flags_t`), `module/zfs/zap_impl.c` (`zap_hash`), `module/zfs/zap_micro.c`,
//! `module/zfs/zap.c`, `module/zfs/zap_leaf.c`. Zetta's own ZAP (`crate::zap`) is untouched.
//!
//! A ZAP object's first block starts with a block-type word (in the block's byte order):
//! `ZBT_MICRO` (2^63 + 3) for a micro ZAP, whose whole object is that one block;
//! `ZBT_HEADER` (2^63 + 1) for a fat ZAP's header, whose other blocks are leaves
//! (`ZBT_LEAF`, 2^63) and, for large tables, pointer-table blocks. A ZAP block is a DMU
//! block of the object (the object's data block size).
//!
//! Names hash with `zap_hash`: CRC-64 (ECMA-182, reflected; `zfs_crc64_table`) seeded with
//! the ZAP's salt, over the name's bytes without the NUL (or the key words' bytes, low byte
//! first, for `UINT64_KEY` ZAPs; or the key's first word itself for `PRE_HASHED_KEY`), then
//! cut to its top 28 bits (48 with `HASH64`), the rest zero.
//!
//! Invariants: no decoder panics or loops forever on outside bytes; chunk chains are bounded
//! and checked, every index is range-checked, and inconsistencies are `ZapError`s.

pub mod fat;
pub mod micro;

use crate::byteorder::ShortRead;
use crate::dmu::openzfs::dnode::{BlockReader, DmuReadError, DnodeBlock, DnodeCorrupt, DnodePhys};
use std::fmt;

pub use fat::{FatZapHeader, ZapLeaf};
pub use micro::MicroZap;

pub const ZBT_LEAF: u64 = 1 << 63;
pub const ZBT_HEADER: u64 = (1 << 63) + 1;
pub const ZBT_MICRO: u64 = (1 << 63) + 3;

pub const ZAP_FLAG_HASH64: u64 = 1 << 0;
pub const ZAP_FLAG_UINT64_KEY: u64 = 1 << 1;
pub const ZAP_FLAG_PRE_HASHED_KEY: u64 = 1 << 2;

/// `ZFS_CRC64_POLY`, ECMA-182 in reflected form.
const CRC64_POLY: u64 = 0xC96C_5795_D787_0F42;

const fn crc64_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u64;
        let mut bit = 0;
        while bit < 8 {
            c = (c >> 1) ^ ((c & 1).wrapping_neg() & CRC64_POLY);
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC64_TABLE: [u64; 256] = crc64_table();

/// A ZAP key: a string name (its bytes, no NUL), or an array of u64 (`UINT64_KEY` ZAPs).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ZapKey {
    Name(Vec<u8>),
    U64s(Vec<u64>),
}

impl ZapKey {
    pub fn name(name: &str) -> ZapKey {
        ZapKey::Name(name.as_bytes().to_vec())
    }
}

impl fmt::Display for ZapKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZapKey::Name(n) => write!(f, "{}", String::from_utf8_lossy(n)),
            ZapKey::U64s(words) => {
                let parts: Vec<String> = words.iter().map(|w| format!("{w:x}")).collect();
                write!(f, "{}", parts.join(","))
            }
        }
    }
}

/// `zap_hash`: the salted CRC-64 of a key, cut to its top `hash_bits` bits.
pub fn zap_hash(salt: u64, flags: u64, key: &ZapKey) -> u64 {
    let mut h = salt;
    let mut stir = |byte: u8| {
        h = (h >> 8) ^ CRC64_TABLE[((h ^ u64::from(byte)) & 0xff) as usize];
    };
    match key {
        ZapKey::U64s(words) if flags & ZAP_FLAG_PRE_HASHED_KEY != 0 => {
            h = words.first().copied().unwrap_or(0);
        }
        ZapKey::U64s(words) => {
            for w in words {
                for b in w.to_le_bytes() {
                    stir(b);
                }
            }
        }
        ZapKey::Name(bytes) => return zap_hash_name(salt, flags, bytes),
    }
    hash_cut(h, flags)
}

/// `zap_hash` of a string key given as borrowed bytes (no `ZapKey` built: a micro ZAP's
/// add hashes every entry of its block, so this runs once per entry and allocates nothing).
pub fn zap_hash_name(salt: u64, flags: u64, name: &[u8]) -> u64 {
    let mut h = salt;
    for &b in name {
        h = (h >> 8) ^ CRC64_TABLE[((h ^ u64::from(b)) & 0xff) as usize];
    }
    hash_cut(h, flags)
}

/// The top `zap_hashbits` bits of a CRC.
fn hash_cut(h: u64, flags: u64) -> u64 {
    let bits = if flags & ZAP_FLAG_HASH64 != 0 { 48 } else { 28 };
    h & !((1u64 << (64 - bits)) - 1)
}

/// `U8_TEXTPREP_TOUPPER` and `U8_TEXTPREP_TOLOWER` (case-insensitive names: snapshot maps,
/// `casesensitivity=insensitive` directories); the other bits are Unicode normal forms.
pub const U8_TEXTPREP_TOUPPER: u64 = 0x2;
pub const U8_TEXTPREP_TOLOWER: u64 = 0x4;

/// The key a ZAP with `normflags` hashes (`zap_name_init_str`'s `zn_key_norm`): for ASCII
/// names every Unicode normal form is the name itself and case folding is ASCII's, so
/// those are done here; a non-ASCII name in a normalizing ZAP is `Unsupported`.
pub fn normalize_key(normflags: u64, key: &ZapKey) -> Result<ZapKey, ZapError> {
    match key {
        ZapKey::Name(name) if normflags != 0 => {
            if !name.is_ascii() {
                return Err(ZapError::Unsupported(
                    "a non-ASCII name in a normalizing ZAP",
                ));
            }
            let mut n = name.clone();
            if normflags & U8_TEXTPREP_TOUPPER != 0 {
                n.make_ascii_uppercase();
            } else if normflags & U8_TEXTPREP_TOLOWER != 0 {
                n.make_ascii_lowercase();
            }
            Ok(ZapKey::Name(n))
        }
        _ => Ok(key.clone()),
    }
}

/// One entry: its key, collision differentiator, hash, and value (integers of
/// `int_len` bytes: 1, 2, 4 or 8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZapEntry {
    pub key: ZapKey,
    pub cd: u32,
    pub hash: u64,
    pub int_len: u8,
    pub values: Vec<u64>,
}

/// ZAP bytes that contradict themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZapError {
    Short(ShortRead),
    /// The first word of a block is not the block type it should be.
    BlockType {
        blkid: u64,
        found: u64,
    },
    /// A field holds a value the format does not allow.
    Field {
        field: &'static str,
        value: u64,
    },
    /// A leaf chunk index past the leaf's chunks.
    ChunkRange {
        chunk: u16,
        chunks: usize,
    },
    /// A chunk of the wrong type where a chain leads.
    ChunkType {
        chunk: u16,
        found: u8,
        expected: u8,
    },
    /// An entry chain that comes back on itself.
    ChunkLoop {
        chunk: u16,
    },
    /// A leaf reached through table slots its prefix does not cover.
    LeafPrefix {
        blkid: u64,
        slot: u64,
    },
    /// A fat ZAP block (header, leaf, table) that is a hole.
    Hole {
        blkid: u64,
    },
    /// The object's dnode or block tree is corrupt.
    Dnode(DnodeCorrupt),
    /// A lookup this reader does not do (names normalized on write).
    Unsupported(&'static str),
}

impl fmt::Display for ZapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZapError::Short(s) => write!(f, "zap: {s}"),
            ZapError::BlockType { blkid, found } => {
                write!(f, "zap: block {blkid} has block type {found:#x}")
            }
            ZapError::Field { field, value } => write!(f, "zap: {field} = {value} is not valid"),
            ZapError::ChunkRange { chunk, chunks } => {
                write!(f, "zap: chunk {chunk} lies past the leaf's {chunks} chunks")
            }
            ZapError::ChunkType {
                chunk,
                found,
                expected,
            } => write!(f, "zap: chunk {chunk} has type {found}, not {expected}"),
            ZapError::ChunkLoop { chunk } => write!(f, "zap: entry chain loops at chunk {chunk}"),
            ZapError::LeafPrefix { blkid, slot } => write!(
                f,
                "zap: leaf block {blkid} is named by pointer table slot {slot} outside its prefix"
            ),
            ZapError::Hole { blkid } => write!(f, "zap: block {blkid} is a hole"),
            ZapError::Dnode(d) => d.fmt(f),
            ZapError::Unsupported(what) => write!(f, "zap: {what} is not supported"),
        }
    }
}

impl std::error::Error for ZapError {}

impl From<ShortRead> for ZapError {
    fn from(s: ShortRead) -> Self {
        ZapError::Short(s)
    }
}

/// A ZAP read's failure: bad bytes, or the caller's block reader failed.
#[derive(Debug, PartialEq, Eq)]
pub enum ZapReadError<E> {
    Corrupt(ZapError),
    Read(E),
}

impl<E: fmt::Display> fmt::Display for ZapReadError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZapReadError::Corrupt(c) => c.fmt(f),
            ZapReadError::Read(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for ZapReadError<E> {}

impl<E> From<ZapError> for ZapReadError<E> {
    fn from(c: ZapError) -> Self {
        ZapReadError::Corrupt(c)
    }
}

impl<E> From<ShortRead> for ZapReadError<E> {
    fn from(s: ShortRead) -> Self {
        ZapReadError::Corrupt(ZapError::Short(s))
    }
}

impl<E> From<DmuReadError<E>> for ZapReadError<E> {
    fn from(e: DmuReadError<E>) -> Self {
        match e {
            DmuReadError::Corrupt(c) => ZapReadError::Corrupt(ZapError::Dnode(c)),
            DmuReadError::Read(e) => ZapReadError::Read(e),
        }
    }
}

/// A ZAP object, its first block decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Zap {
    Micro(MicroZap),
    Fat(FatZapHeader),
}

/// The block of a ZAP object with id `blkid`; a hole is an error (a ZAP never has one
/// where its structures point).
fn zap_block<R: BlockReader>(
    dnode: &DnodePhys,
    blkid: u64,
    reader: &mut R,
) -> Result<DnodeBlock, ZapReadError<R::Error>> {
    dnode
        .read_block(blkid, reader)?
        .ok_or(ZapReadError::Corrupt(ZapError::Hole { blkid }))
}

impl Zap {
    /// Reads and decodes the first block of the ZAP object `dnode`.
    pub fn open<R: BlockReader>(
        dnode: &DnodePhys,
        reader: &mut R,
    ) -> Result<Zap, ZapReadError<R::Error>> {
        let block = zap_block(dnode, 0, reader)?;
        let block_type = block.order.u64_at(&block.data, 0)?;
        match block_type {
            ZBT_MICRO => Ok(Zap::Micro(MicroZap::decode(&block.data, block.order)?)),
            ZBT_HEADER => Ok(Zap::Fat(FatZapHeader::decode(&block.data, block.order)?)),
            found => Err(ZapError::BlockType { blkid: 0, found }.into()),
        }
    }

    /// Every entry of the ZAP (micro: in slot order; fat: leaf by leaf in pointer-table
    /// order, each leaf's entries by hash bucket).
    pub fn list<R: BlockReader>(
        &self,
        dnode: &DnodePhys,
        reader: &mut R,
    ) -> Result<Vec<ZapEntry>, ZapReadError<R::Error>> {
        match self {
            Zap::Micro(m) => Ok(m.entries()),
            Zap::Fat(h) => h.list(&mut |blkid| zap_block(dnode, blkid, reader)),
        }
    }

    /// The entry with key `key`, found the way OpenZFS finds it (micro: by name; fat: by
    /// hash through the pointer table to one leaf and its hash chain).
    pub fn lookup<R: BlockReader>(
        &self,
        dnode: &DnodePhys,
        reader: &mut R,
        key: &ZapKey,
    ) -> Result<Option<ZapEntry>, ZapReadError<R::Error>> {
        match self {
            Zap::Micro(m) => Ok(m.lookup(key)),
            Zap::Fat(h) => h.lookup(key, &mut |blkid| zap_block(dnode, blkid, reader)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: lookups of real OpenZFS ZAPs depend on this CRC being OpenZFS's bit for bit.
    #[test]
    fn crc64_table_is_openzfs_s() {
        // OpenZFS asserts zfs_crc64_table[128] == ZFS_CRC64_POLY.
        assert_eq!(CRC64_TABLE[128], CRC64_POLY);
        assert_eq!(CRC64_TABLE[0], 0);
        // 28-bit hashes keep only their top 28 bits.
        let h = zap_hash(0x1234, 0, &ZapKey::name("ROOT"));
        assert_eq!(h & ((1 << 36) - 1), 0);
        let h64 = zap_hash(0x1234, ZAP_FLAG_HASH64, &ZapKey::name("ROOT"));
        assert_eq!(h64 >> 36, h >> 36);
        assert_eq!(
            zap_hash(
                9,
                ZAP_FLAG_UINT64_KEY | ZAP_FLAG_PRE_HASHED_KEY | ZAP_FLAG_HASH64,
                &ZapKey::U64s(vec![u64::MAX, 1])
            ),
            u64::MAX << 16
        );
    }
}

/// One fuzz input through the ZAP decoders (the fuzz target `openzfs_zap` and a unit test
/// call it). Byte 0 picks the order and the block size (512 B to 16 KiB); the rest, cut in
/// blocks of that size, is a ZAP object: block 0 is read as a micro ZAP and as a fat header,
/// every block as a leaf; the fat header lists and looks up through the others. Nothing may
/// panic; micro and leaf lookups find what their lists hold.
pub fn fuzz_check(data: &[u8]) {
    use crate::byteorder::ByteOrder;
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let order = if head & 1 == 1 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let bs = 512usize << ((head >> 1) % 6);
    let blocks: Vec<Vec<u8>> = rest
        .chunks(bs)
        .map(|c| {
            let mut b = c.to_vec();
            b.resize(bs, 0);
            b
        })
        .collect();
    let Some(first) = blocks.first() else {
        return;
    };
    let keys = [
        ZapKey::name("ROOT"),
        ZapKey::name(""),
        ZapKey::U64s(vec![1, 2]),
    ];
    if let Ok(m) = MicroZap::decode(first, order) {
        for e in m.entries() {
            assert!(
                m.lookup(&e.key).is_some(),
                "a listed micro entry is not found"
            );
        }
        for k in &keys {
            let _ = m.lookup(k);
        }
    }
    let mut get = |blkid: u64| -> Result<DnodeBlock, ZapReadError<()>> {
        blocks
            .get(blkid as usize)
            .map(|b| DnodeBlock {
                data: b.clone(),
                order,
            })
            .ok_or(ZapReadError::Corrupt(ZapError::Hole { blkid }))
    };
    if let Ok(h) = FatZapHeader::decode(first, order) {
        if let Ok(entries) = h.list(&mut get) {
            for e in entries.iter().take(8) {
                let _ = h.lookup(&e.key, &mut get);
            }
        }
        for k in &keys {
            let _ = h.lookup(k, &mut get);
        }
    }
    for (blkid, block) in blocks.iter().enumerate().take(4) {
        if let Ok(leaf) = ZapLeaf::decode(block.clone(), order, blkid as u64) {
            let flags = u64::from(head >> 6);
            let _ = leaf.bucket(u64::from(head) << 56);
            if let Ok(entries) = leaf.entries(flags) {
                for e in entries.iter().take(8) {
                    let _ = leaf.lookup(e.hash, &e.key, flags);
                }
            }
            for k in &keys {
                let _ = leaf.lookup(zap_hash(7, flags, k), k, flags);
            }
        }
    }
}

#[cfg(test)]
mod fuzz_tests {
    use super::*;

    // Why: the fuzz target's check must hold on seeded inputs in the default suite: random
    // blocks stamped with the micro, header and leaf magics so the decoders go past them.
    #[test]
    fn fuzz_check_holds_on_random_inputs() {
        let mut rng = crate::rand::SeededRng::new(0x2a9);
        for i in 0..3000u64 {
            let head = (rng.next_u64() % 256) as u8 & !0x0e | (((i % 3) as u8) << 1);
            let bs = 512usize << ((head >> 1) % 6);
            let nblocks = 1 + (rng.next_u64() % 4) as usize;
            let mut input = vec![0u8; 1 + bs * nblocks];
            rng.fill(&mut input);
            input[0] = head;
            let order = if head & 1 == 1 {
                crate::byteorder::ByteOrder::Big
            } else {
                crate::byteorder::ByteOrder::Little
            };
            for b in 0..nblocks {
                let at = 1 + b * bs;
                let magic = match (b, i % 4) {
                    (0, 0) => ZBT_MICRO,
                    (0, _) => ZBT_HEADER,
                    _ => ZBT_LEAF,
                };
                order.put_u64(&mut input[at..], 0, magic).unwrap();
                if b == 0 && magic == ZBT_HEADER {
                    // zap_magic, small table shift, no table blocks.
                    order.put_u64(&mut input[at..], 8, fat::ZAP_MAGIC).unwrap();
                    order.put_u64(&mut input[at..], 24, 0).unwrap();
                    order
                        .put_u64(&mut input[at..], 32, rng.next_u64() % 8)
                        .unwrap();
                    // Embedded pointer table: leaf ids among the blocks given.
                    for slot in (bs / 2..bs).step_by(8) {
                        let leaf = 1 + rng.next_u64() % nblocks as u64;
                        order.put_u64(&mut input[at..], slot, leaf).unwrap();
                    }
                }
                if magic == ZBT_LEAF {
                    // A small prefix length, the leaf magic.
                    order.put_u64(&mut input[at..], 16, 0).unwrap();
                    let magic = match order {
                        crate::byteorder::ByteOrder::Big => fat::ZAP_LEAF_MAGIC.to_be_bytes(),
                        crate::byteorder::ByteOrder::Little => fat::ZAP_LEAF_MAGIC.to_le_bytes(),
                    };
                    input[at + 24..at + 28].copy_from_slice(&magic);
                    input[at + 32..at + 34].copy_from_slice(&[0, 0]);
                }
            }
            fuzz_check(&input);
        }
    }
}
