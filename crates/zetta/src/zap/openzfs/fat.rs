//! OpenZFS's fat ZAP: a header block, a pointer table from hash prefixes to leaf blocks,
//! and leaves holding entries in 24-byte chunks.
//!
//! ZFS counterpart: `zap_phys_t` (`include/sys/zap_impl.h`), `zap_leaf_phys_t` and
//! `zap_leaf_chunk_t` (`include/sys/zap_leaf.h`), `module/zfs/zap.c` (`zap_idx_to_blk`,
//! `zap_deref_leaf`, `fzap_lookup`), `module/zfs/zap_leaf.c` (`zap_leaf_lookup`,
//! `zap_leaf_array_read`, `LEAF_HASH`).
//!
//! Header (block 0; u64 fields in the block's order; block size 2^bs = the object's data
//! block size):
//!
//! ```text
//! 0    zap_block_type = ZBT_HEADER     8 zap_magic = 0x2F52AB2AB
//! 16   zap_ptrtbl: zt_blk, zt_numblks, zt_shift, zt_nextblk, zt_blks_copied
//! 56   zap_freeblk   64 zap_num_leafs   72 zap_num_entries   80 zap_salt
//! 88   zap_normflags 96 zap_flags (HASH64 1, UINT64_KEY 2, PRE_HASHED_KEY 4)
//! 2^(bs-1)  embedded pointer table: 2^(bs-4) u64 leaf block ids, used while zt_numblks = 0
//! ```
//!
//! The table has 2^zt_shift slots; slot `hash >> (64 - zt_shift)` names the leaf of a
//! hash. Once it outgrows the embedded half-block it lives in blocks
//! `zt_blk .. zt_blk + zt_numblks`, 2^(bs-3) slots per block.
//!
//! Leaf block:
//!
//! ```text
//! 0    lh_block_type = ZBT_LEAF   8 pad   16 lh_prefix (u64)   24 lh_magic = 0x2AB1EAF (u32)
//! 28   lh_nfree (u16)  30 lh_nentries (u16)  32 lh_prefix_len (u16)  34 lh_freelist (u16)
//! 36   lh_flags (u8)   pad to 48
//! 48   l_hash[2^(bs-5)] (u16): per bucket, the first entry chunk of its chain (0xffff: none)
//! 48 + 2^(bs-4)   chunks, 24 bytes each, (2^bs - 2^(bs-4)) / 24 - 2 of them:
//!   entry (type 252): 0 type  1 value_intlen  2 next (u16)  4 name_chunk  6 name_numints
//!                     8 value_chunk  10 value_numints  12 cd (u32)  16 hash (u64)
//!   array (type 251): 0 type  1..22 21 bytes of data  22 next (u16)
//!   free  (type 253): 0 type  22 next free (u16)
//! ```
//!
//! A leaf's bucket for a hash is the `bs - 5` bits after its `lh_prefix_len` prefix bits.
//! Names and values are byte arrays spread over chains of array chunks; integers in them
//! (1, 2, 4 or 8 bytes wide) are big-endian whatever the block's order, and a string name's
//! count includes its NUL. `UINT64_KEY` ZAPs store keys as arrays of u64.
//!
//! Invariants: never panics or loops on outside bytes: every chunk index is checked against
//! the leaf's chunk count, an entry chain visiting a chunk twice is `ChunkLoop`, array chains
//! are followed for exactly as many chunks as their length needs.

use super::{
    normalize_key, zap_hash, ZapEntry, ZapError, ZapKey, ZapReadError, ZAP_FLAG_UINT64_KEY,
    ZBT_HEADER, ZBT_LEAF,
};
use crate::byteorder::ByteOrder;
use crate::dmu::openzfs::dnode::DnodeBlock;
use std::collections::HashSet;

pub const ZAP_MAGIC: u64 = 0x2_F52A_B2AB;
pub const ZAP_LEAF_MAGIC: u32 = 0x2AB_1EAF;
pub const ZAP_LEAF_CHUNKSIZE: usize = 24;
pub const ZAP_LEAF_ARRAY_BYTES: usize = ZAP_LEAF_CHUNKSIZE - 3;
pub const ZAP_CHUNK_FREE: u8 = 253;
pub const ZAP_CHUNK_ENTRY: u8 = 252;
pub const ZAP_CHUNK_ARRAY: u8 = 251;
pub const CHAIN_END: u16 = 0xffff;
const LEAF_HEADER_LEN: usize = 48;
/// ZAP blocks are 512 bytes (2^9) to 16 MiB (2^24, large blocks).
const BLOCK_SHIFT_RANGE: std::ops::RangeInclusive<u32> = 9..=24;
/// Pointer tables past 2^32 slots would take 32 GiB: refuse them as corrupt.
const MAX_TABLE_SHIFT: u64 = 32;

/// The table's location (`zap_table_phys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZapTable {
    pub blk: u64,
    pub numblks: u64,
    pub shift: u64,
    pub nextblk: u64,
    pub blks_copied: u64,
}

/// A decoded fat ZAP header block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FatZapHeader {
    pub order: ByteOrder,
    /// log2 of the ZAP block size.
    pub block_shift: u32,
    pub ptrtbl: ZapTable,
    pub freeblk: u64,
    pub num_leafs: u64,
    pub num_entries: u64,
    pub salt: u64,
    pub normflags: u64,
    pub flags: u64,
    /// The embedded pointer table (2^(bs-4) slots), whether in use or not.
    pub embedded: Vec<u64>,
}

/// Where the ZAP's blocks come from: block id → the block and its byte order.
pub type ZapBlockFn<'a, E> = dyn FnMut(u64) -> Result<DnodeBlock, ZapReadError<E>> + 'a;

fn block_shift(len: usize) -> Result<u32, ZapError> {
    let shift = len.trailing_zeros();
    if !len.is_power_of_two() || !BLOCK_SHIFT_RANGE.contains(&shift) {
        return Err(ZapError::Field {
            field: "ZAP block size",
            value: len as u64,
        });
    }
    Ok(shift)
}

impl FatZapHeader {
    pub fn decode(buf: &[u8], order: ByteOrder) -> Result<FatZapHeader, ZapError> {
        let block_type = order.u64_at(buf, 0)?;
        if block_type != ZBT_HEADER {
            return Err(ZapError::BlockType {
                blkid: 0,
                found: block_type,
            });
        }
        let magic = order.u64_at(buf, 8)?;
        if magic != ZAP_MAGIC {
            return Err(ZapError::Field {
                field: "zap_magic",
                value: magic,
            });
        }
        let bs = block_shift(buf.len())?;
        let [blk, numblks, shift, nextblk, blks_copied] = order.u64s_at::<5>(buf, 16)?;
        let [freeblk, num_leafs, num_entries, salt, normflags, flags] =
            order.u64s_at::<6>(buf, 56)?;
        let half = buf.len() / 2;
        let embedded = buf[half..]
            .chunks_exact(8)
            .enumerate()
            .map(|(i, _)| order.u64_at(buf, half + 8 * i))
            .collect::<Result<Vec<u64>, _>>()?;
        let ptrtbl = ZapTable {
            blk,
            numblks,
            shift,
            nextblk,
            blks_copied,
        };
        let embedded_shift = u64::from(bs - 4);
        let bad_shift = if numblks == 0 {
            shift > embedded_shift
        } else {
            shift > MAX_TABLE_SHIFT
                || shift < u64::from(bs - 3)
                || numblks != 1u64 << (shift - u64::from(bs - 3))
                || blk.checked_add(numblks).is_none()
        };
        if bad_shift {
            return Err(ZapError::Field {
                field: "zt_shift",
                value: shift,
            });
        }
        Ok(FatZapHeader {
            order,
            block_shift: bs,
            ptrtbl,
            freeblk,
            num_leafs,
            num_entries,
            salt,
            normflags,
            flags,
            embedded,
        })
    }

    /// Leaf block id in table slot `idx` (`zap_idx_to_blk`).
    fn slot<E>(&self, idx: u64, blocks: &mut ZapBlockFn<'_, E>) -> Result<u64, ZapReadError<E>> {
        if self.ptrtbl.numblks == 0 {
            return self.embedded.get(idx as usize).copied().ok_or(
                ZapError::Field {
                    field: "pointer table slot",
                    value: idx,
                }
                .into(),
            );
        }
        let per_block_shift = self.block_shift - 3;
        let blkid = self.ptrtbl.blk + (idx >> per_block_shift);
        let block = blocks(blkid)?;
        let off = ((idx & ((1 << per_block_shift) - 1)) * 8) as usize;
        Ok(block.order.u64_at(&block.data, off)?)
    }

    fn leaf<E>(
        &self,
        blkid: u64,
        slot: u64,
        blocks: &mut ZapBlockFn<'_, E>,
    ) -> Result<ZapLeaf, ZapReadError<E>> {
        if blkid == 0 {
            return Err(ZapError::BlockType {
                blkid,
                found: ZBT_HEADER,
            }
            .into());
        }
        let block = blocks(blkid)?;
        let leaf = ZapLeaf::decode(block.data, block.order, blkid)?;
        // The slot must lie under the leaf's prefix.
        let shift = self.ptrtbl.shift;
        let plen = u64::from(leaf.prefix_len);
        if plen > shift || (plen > 0 && (slot >> (shift - plen)) != leaf.prefix) {
            return Err(ZapError::LeafPrefix { blkid, slot }.into());
        }
        Ok(leaf)
    }

    /// Every entry, leaf by leaf in table order.
    pub fn list<E>(
        &self,
        blocks: &mut ZapBlockFn<'_, E>,
    ) -> Result<Vec<ZapEntry>, ZapReadError<E>> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut visit = |idx: u64, blkid: u64, blocks: &mut ZapBlockFn<'_, E>| {
            if seen.insert(blkid) {
                let leaf = self.leaf(blkid, idx, blocks)?;
                out.extend(leaf.entries(self.flags)?);
            }
            Ok::<(), ZapReadError<E>>(())
        };
        if self.ptrtbl.numblks == 0 {
            let slots = 1usize << self.ptrtbl.shift;
            for (idx, &blkid) in self.embedded.iter().take(slots).enumerate() {
                visit(idx as u64, blkid, blocks)?;
            }
        } else {
            // Each table block once, not once per slot.
            let per_block = 1u64 << (self.block_shift - 3);
            for b in 0..self.ptrtbl.numblks {
                let table = blocks(self.ptrtbl.blk + b)?;
                for i in 0..per_block {
                    let blkid = table.order.u64_at(&table.data, (i * 8) as usize)?;
                    visit(b * per_block + i, blkid, blocks)?;
                }
            }
        }
        Ok(out)
    }

    /// The entry with `key` (`fzap_lookup`): its hash's top `zt_shift` bits pick the table
    /// slot, the slot the leaf, the next bits the leaf's bucket.
    pub fn lookup<E>(
        &self,
        key: &ZapKey,
        blocks: &mut ZapBlockFn<'_, E>,
    ) -> Result<Option<ZapEntry>, ZapReadError<E>> {
        if matches!(key, ZapKey::U64s(_)) != (self.flags & ZAP_FLAG_UINT64_KEY != 0) {
            return Ok(None);
        }
        // The hash is of the normalized name; the match is exact (OpenZFS's MT_NORMALIZE
        // lookups, which match any name normalizing alike, are not done here).
        let hash = zap_hash(self.salt, self.flags, &normalize_key(self.normflags, key)?);
        let idx = if self.ptrtbl.shift == 0 {
            0
        } else {
            hash >> (64 - self.ptrtbl.shift)
        };
        let blkid = self.slot(idx, blocks)?;
        let leaf = self.leaf(blkid, idx, blocks)?;
        Ok(leaf.lookup(hash, key, self.flags)?)
    }
}

/// A decoded leaf block (its bytes kept; entries decoded on demand).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZapLeaf {
    pub blkid: u64,
    pub order: ByteOrder,
    pub block_shift: u32,
    pub prefix: u64,
    pub prefix_len: u16,
    pub nfree: u16,
    pub nentries: u16,
    pub freelist: u16,
    pub flags: u8,
    data: Vec<u8>,
}

impl ZapLeaf {
    pub fn decode(data: Vec<u8>, order: ByteOrder, blkid: u64) -> Result<ZapLeaf, ZapError> {
        let block_type = order.u64_at(&data, 0)?;
        if block_type != ZBT_LEAF {
            return Err(ZapError::BlockType {
                blkid,
                found: block_type,
            });
        }
        let block_shift = block_shift(data.len())?;
        let magic = order.u32_at(&data, 24)?;
        if magic != ZAP_LEAF_MAGIC {
            return Err(ZapError::Field {
                field: "lh_magic",
                value: magic.into(),
            });
        }
        let prefix_len = order.u16_at(&data, 32)?;
        if prefix_len > 64 {
            return Err(ZapError::Field {
                field: "lh_prefix_len",
                value: prefix_len.into(),
            });
        }
        Ok(ZapLeaf {
            blkid,
            order,
            block_shift,
            prefix: order.u64_at(&data, 16)?,
            prefix_len,
            nfree: order.u16_at(&data, 28)?,
            nentries: order.u16_at(&data, 30)?,
            freelist: order.u16_at(&data, 34)?,
            flags: data[36],
            data,
        })
    }

    /// Buckets in the hash table.
    pub fn hash_entries(&self) -> usize {
        1 << (self.block_shift - 5)
    }

    /// Chunks after the hash table.
    pub fn num_chunks(&self) -> usize {
        (self.data.len() - 2 * self.hash_entries()) / ZAP_LEAF_CHUNKSIZE - 2
    }

    fn bucket_head(&self, bucket: usize) -> Result<u16, ZapError> {
        Ok(self
            .order
            .u16_at(&self.data, LEAF_HEADER_LEN + 2 * bucket)?)
    }

    /// Chunk `chunk`'s 24 bytes, checked to be of type `expected`.
    fn chunk(&self, chunk: u16, expected: u8) -> Result<&[u8], ZapError> {
        let chunks = self.num_chunks();
        if usize::from(chunk) >= chunks {
            return Err(ZapError::ChunkRange { chunk, chunks });
        }
        let start =
            LEAF_HEADER_LEN + 2 * self.hash_entries() + usize::from(chunk) * ZAP_LEAF_CHUNKSIZE;
        let bytes = &self.data[start..start + ZAP_LEAF_CHUNKSIZE];
        if bytes[0] != expected {
            return Err(ZapError::ChunkType {
                chunk,
                found: bytes[0],
                expected,
            });
        }
        Ok(bytes)
    }

    /// The `numints` integers of `int_len` bytes in the array chain from `chunk`.
    fn array(&self, mut chunk: u16, int_len: u8, numints: u16) -> Result<Vec<u64>, ZapError> {
        if ![1, 2, 4, 8].contains(&int_len) {
            return Err(ZapError::Field {
                field: "integer length",
                value: int_len.into(),
            });
        }
        let total = usize::from(numints) * usize::from(int_len);
        let needed = total.div_ceil(ZAP_LEAF_ARRAY_BYTES);
        if needed > self.num_chunks() {
            return Err(ZapError::Field {
                field: "array length",
                value: numints.into(),
            });
        }
        let mut bytes = Vec::with_capacity(needed * ZAP_LEAF_ARRAY_BYTES);
        for _ in 0..needed {
            let c = self.chunk(chunk, ZAP_CHUNK_ARRAY)?;
            bytes.extend_from_slice(&c[1..1 + ZAP_LEAF_ARRAY_BYTES]);
            chunk = self.order.u16_at(c, 22)?;
        }
        Ok(bytes[..total]
            .chunks_exact(usize::from(int_len))
            .map(|w| w.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
            .collect())
    }

    /// The entry in chunk `chunk`, and the next chunk of its hash chain.
    fn entry(&self, chunk: u16, zap_flags: u64) -> Result<(ZapEntry, u16), ZapError> {
        let c = self.chunk(chunk, ZAP_CHUNK_ENTRY)?;
        let o = self.order;
        let int_len = c[1];
        let next = o.u16_at(c, 2)?;
        let name_chunk = o.u16_at(c, 4)?;
        let name_numints = o.u16_at(c, 6)?;
        let value_chunk = o.u16_at(c, 8)?;
        let value_numints = o.u16_at(c, 10)?;
        let cd = o.u32_at(c, 12)?;
        let hash = o.u64_at(c, 16)?;
        let key = if zap_flags & ZAP_FLAG_UINT64_KEY != 0 {
            ZapKey::U64s(self.array(name_chunk, 8, name_numints)?)
        } else {
            let mut name: Vec<u8> = self
                .array(name_chunk, 1, name_numints)?
                .into_iter()
                .map(|b| b as u8)
                .collect();
            if name.pop() != Some(0) {
                return Err(ZapError::Field {
                    field: "le_name_numints",
                    value: name_numints.into(),
                });
            }
            ZapKey::Name(name)
        };
        let values = self.array(value_chunk, int_len, value_numints)?;
        Ok((
            ZapEntry {
                key,
                cd,
                hash,
                int_len,
                values,
            },
            next,
        ))
    }

    /// Walks bucket `bucket`'s chain, calling `f` on each entry until it says stop.
    fn walk_chain(
        &self,
        bucket: usize,
        zap_flags: u64,
        visited: &mut [bool],
        f: &mut dyn FnMut(ZapEntry) -> bool,
    ) -> Result<(), ZapError> {
        let mut chunk = self.bucket_head(bucket)?;
        while chunk != CHAIN_END {
            let seen = visited
                .get_mut(usize::from(chunk))
                .ok_or(ZapError::ChunkRange {
                    chunk,
                    chunks: self.num_chunks(),
                })?;
            if *seen {
                return Err(ZapError::ChunkLoop { chunk });
            }
            *seen = true;
            let (entry, next) = self.entry(chunk, zap_flags)?;
            if !f(entry) {
                return Ok(());
            }
            chunk = next;
        }
        Ok(())
    }

    /// Every entry of the leaf, bucket by bucket.
    pub fn entries(&self, zap_flags: u64) -> Result<Vec<ZapEntry>, ZapError> {
        let mut visited = vec![false; self.num_chunks()];
        let mut out = Vec::new();
        for bucket in 0..self.hash_entries() {
            self.walk_chain(bucket, zap_flags, &mut visited, &mut |e| {
                out.push(e);
                true
            })?;
        }
        Ok(out)
    }

    /// The bucket of a hash (`LEAF_HASH`): the bits after the leaf's prefix.
    pub fn bucket(&self, hash: u64) -> usize {
        let shift = 64u32
            .saturating_sub(self.block_shift - 5)
            .saturating_sub(self.prefix_len.into());
        let bits = hash.checked_shr(shift).unwrap_or(0);
        (bits as usize) & (self.hash_entries() - 1)
    }

    /// The entry with hash `hash` and key `key` (`zap_leaf_lookup`).
    pub fn lookup(
        &self,
        hash: u64,
        key: &ZapKey,
        zap_flags: u64,
    ) -> Result<Option<ZapEntry>, ZapError> {
        let mut visited = vec![false; self.num_chunks()];
        let mut found = None;
        self.walk_chain(self.bucket(hash), zap_flags, &mut visited, &mut |e| {
            if e.hash == hash && &e.key == key {
                found = Some(e);
                false
            } else {
                true
            }
        })?;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: leaves come off the disk; a chunk index past the leaf, a chain that loops or an
    // array longer than the leaf must be errors, never a panic or an endless loop.
    #[test]
    fn hostile_leaves_are_errors_not_panics_or_loops() {
        let order = ByteOrder::Little;
        let mut leaf = vec![0u8; 512];
        order.put_u64(&mut leaf, 0, ZBT_LEAF).unwrap();
        leaf[24..28].copy_from_slice(&ZAP_LEAF_MAGIC.to_le_bytes());
        // 16 buckets at 48..80, all empty but bucket 0 -> chunk 0.
        for b in 0..16 {
            leaf[48 + 2 * b..50 + 2 * b].copy_from_slice(&CHAIN_END.to_le_bytes());
        }
        leaf[48..50].copy_from_slice(&0u16.to_le_bytes());
        let chunk0 = 80;
        leaf[chunk0] = ZAP_CHUNK_ENTRY;
        // next = 0: a loop onto itself.
        leaf[chunk0 + 2..chunk0 + 4].copy_from_slice(&0u16.to_le_bytes());
        leaf[chunk0 + 4..chunk0 + 6].copy_from_slice(&1u16.to_le_bytes());
        leaf[chunk0 + 6..chunk0 + 8].copy_from_slice(&2u16.to_le_bytes());
        leaf[chunk0 + 8..chunk0 + 10].copy_from_slice(&1u16.to_le_bytes());
        leaf[chunk0 + 10..chunk0 + 12].copy_from_slice(&1u16.to_le_bytes());
        leaf[chunk0 + 1] = 1;
        let chunk1 = chunk0 + 24;
        leaf[chunk1] = ZAP_CHUNK_ARRAY;
        leaf[chunk1 + 1] = b'a';
        leaf[chunk1 + 22..chunk1 + 24].copy_from_slice(&CHAIN_END.to_le_bytes());
        let l = ZapLeaf::decode(leaf.clone(), order, 1).unwrap();
        assert_eq!(l.num_chunks(), 18);
        assert_eq!(l.entries(0), Err(ZapError::ChunkLoop { chunk: 0 }));
        // Terminate the chain: one entry "a" = [97].
        leaf[chunk0 + 2..chunk0 + 4].copy_from_slice(&CHAIN_END.to_le_bytes());
        let l = ZapLeaf::decode(leaf.clone(), order, 1).unwrap();
        let e = l.entries(0).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].key, ZapKey::name("a"));
        assert_eq!(e[0].values, vec![u64::from(b'a')]);
        // A name chunk out of range.
        leaf[chunk0 + 4..chunk0 + 6].copy_from_slice(&500u16.to_le_bytes());
        let l = ZapLeaf::decode(leaf.clone(), order, 1).unwrap();
        assert!(matches!(l.entries(0), Err(ZapError::ChunkRange { .. })));
        // Random bytes over the chunk area, with a valid header.
        let mut rng = crate::rand::SeededRng::new(5);
        for _ in 0..20_000 {
            let mut b = leaf.clone();
            let n = 1 + rng.below(40) as usize;
            for _ in 0..n {
                let at = 36 + rng.below(476) as usize;
                b[at] = match rng.below(4) {
                    0 => ZAP_CHUNK_ENTRY,
                    1 => ZAP_CHUNK_ARRAY,
                    2 => rng.below(20) as u8,
                    _ => rng.next_u64() as u8,
                };
            }
            if let Ok(l) = ZapLeaf::decode(b, order, 1) {
                let _ = l.entries(rng.below(8));
                let _ = l.lookup(rng.next_u64(), &ZapKey::name("a"), 0);
            }
        }
    }
}
