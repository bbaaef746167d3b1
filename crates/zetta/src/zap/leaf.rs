//! Fat ZAP leaves as OpenZFS writes them (`zap_leaf_phys_t`, `module/zfs/zap_leaf.c`):
//! a header, a hash table of chunk indexes, and 24-byte chunks holding entries, the byte
//! arrays of their names and values, and the free list. Little-endian fields; the layout
//! and constants are the part-1 reader's (`openzfs::fat`).
//!
//! ```text
//! leaf block (2^bs bytes; 16 KiB: 512 buckets, 638 chunks):
//!    0 lh_block_type = ZBT_LEAF (2^63)   8 pad   16 lh_prefix u64   24 lh_magic u32 0x2AB1EAF
//!   28 lh_nfree u16   30 lh_nentries u16   32 lh_prefix_len u16   34 lh_freelist u16
//!   36 lh_flags u8 (ZLF_ENTRIES_CDSORTED 1, only with normflags)   37..48 pad
//!   48 l_hash[2^(bs-5)] u16: per bucket, its first entry chunk (0xffff: none)
//!   48 + 2^(bs-4)  chunk i at + 24 * i, (2^bs - 2^(bs-4)) / 24 - 2 of them:
//!     entry 252: 0 type  1 value_intlen  2 next u16  4 name_chunk u16  6 name_numints u16
//!                8 value_chunk u16  10 value_numints u16  12 cd u32  16 hash u64
//!     array 251: 0 type  1..22 21 bytes  22 next u16 (0xffff ends the array)
//!     free  253: 0 type  1..22 zero      22 next free u16
//! ```
//!
//! A hash's bucket is the `bs - 5` bits after the leaf's `lh_prefix_len` prefix bits; each
//! bucket's chain is kept sorted by cd (`zap_leaf_rehash_entry`). Names are arrays of
//! 1-byte integers with their NUL; values arrays of 1-, 2-, 4- or 8-byte integers, each
//! big-endian whatever the block's order. Chunks are taken from the head of the free list
//! and freed onto it (pad zeroed), so the bytes follow OpenZFS's for the same history.
//!
//! Invariants: `Leaf::decode` walks the whole leaf before anything uses it: every chunk is
//! on exactly one of the free list, an entry chain, or an array of exactly the length its
//! entry says ending in 0xffff; every entry sits in its hash's bucket under the leaf's
//! prefix; the counts match. After that the editing methods index without panicking.

use super::hash::hash_prefix;
use super::openzfs::fat::{
    CHAIN_END, ZAP_CHUNK_ARRAY, ZAP_CHUNK_ENTRY, ZAP_CHUNK_FREE, ZAP_LEAF_ARRAY_BYTES,
    ZAP_LEAF_CHUNKSIZE, ZAP_LEAF_MAGIC,
};
use super::openzfs::ZBT_LEAF;

const HEADER_BYTES: usize = 48;
/// `ZAP_LEAF_LOW_WATER`: a leaf with fewer free chunks at full prefix grows the table.
pub const LEAF_LOW_WATER: u16 = 20;

/// `ZAP_LEAF_ARRAY_NCHUNKS`.
pub fn array_chunks(bytes: usize) -> usize {
    bytes.div_ceil(ZAP_LEAF_ARRAY_BYTES)
}

/// `ZAP_LEAF_NUMCHUNKS` of a leaf of 2^`block_shift` bytes.
pub fn leaf_chunks(block_shift: u32) -> usize {
    ((1usize << block_shift) - (2usize << (block_shift - 5))) / ZAP_LEAF_CHUNKSIZE - 2
}

/// An entry's fields (`zap_leaf_entry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPhys {
    pub chunk: u16,
    pub int_len: u8,
    pub next: u16,
    pub name_chunk: u16,
    pub name_numints: u16,
    pub value_chunk: u16,
    pub value_numints: u16,
    pub cd: u32,
    pub hash: u64,
}

/// A decoded entry: name without its NUL, value bytes (big-endian integers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafEntry {
    pub hash: u64,
    pub cd: u32,
    pub name: Vec<u8>,
    pub int_len: u8,
    pub value: Vec<u8>,
}

/// Where the link to an entry lives: a bucket head or the previous entry's `next`.
#[derive(Clone, Copy, Debug)]
enum Link {
    Bucket(usize),
    Entry(u16),
}

/// A validated leaf block, edited in place.
#[derive(Clone, Debug)]
pub struct Leaf {
    buf: Vec<u8>,
    shift: u32,
}

impl Leaf {
    fn u16_at(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.buf[at], self.buf[at + 1]])
    }

    fn put_u16(&mut self, at: usize, v: u16) {
        self.buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    pub fn hash_entries(&self) -> usize {
        1 << (self.shift - 5)
    }

    pub fn num_chunks(&self) -> usize {
        leaf_chunks(self.shift)
    }

    fn chunk_at(&self, chunk: u16) -> usize {
        HEADER_BYTES + 2 * self.hash_entries() + usize::from(chunk) * ZAP_LEAF_CHUNKSIZE
    }

    fn chunk_type(&self, chunk: u16) -> u8 {
        self.buf[self.chunk_at(chunk)]
    }

    pub fn prefix(&self) -> u64 {
        u64::from_le_bytes(self.buf[16..24].try_into().unwrap_or([0; 8]))
    }

    pub fn prefix_len(&self) -> u32 {
        u32::from(self.u16_at(32))
    }

    pub fn nfree(&self) -> u16 {
        self.u16_at(28)
    }

    pub fn nentries(&self) -> u16 {
        self.u16_at(30)
    }

    fn freelist(&self) -> u16 {
        self.u16_at(34)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// `zap_leaf_init`: an empty leaf (the prefix is set by the caller or a split).
    pub fn new(block_shift: u32, prefix: u64, prefix_len: u32, sorted: bool) -> Leaf {
        let mut leaf = Leaf {
            buf: vec![0u8; 1 << block_shift],
            shift: block_shift,
        };
        for b in 0..leaf.hash_entries() {
            leaf.put_u16(HEADER_BYTES + 2 * b, CHAIN_END);
        }
        let n = leaf.num_chunks();
        for i in 0..n {
            let at = leaf.chunk_at(i as u16);
            leaf.buf[at] = ZAP_CHUNK_FREE;
            let next = if i + 1 == n {
                CHAIN_END
            } else {
                (i + 1) as u16
            };
            leaf.put_u16(at + 22, next);
        }
        leaf.buf[0..8].copy_from_slice(&ZBT_LEAF.to_le_bytes());
        leaf.buf[16..24].copy_from_slice(&prefix.to_le_bytes());
        leaf.buf[24..28].copy_from_slice(&ZAP_LEAF_MAGIC.to_le_bytes());
        leaf.put_u16(28, n as u16);
        leaf.put_u16(32, prefix_len as u16);
        if sorted {
            leaf.buf[36] |= 1;
        }
        leaf
    }

    /// The entry in `chunk` (an entry chunk, checked by `decode`).
    pub fn entry_phys(&self, chunk: u16) -> EntryPhys {
        let at = self.chunk_at(chunk);
        let c = &self.buf[at..at + ZAP_LEAF_CHUNKSIZE];
        let u16_at = |o: usize| u16::from_le_bytes([c[o], c[o + 1]]);
        EntryPhys {
            chunk,
            int_len: c[1],
            next: u16_at(2),
            name_chunk: u16_at(4),
            name_numints: u16_at(6),
            value_chunk: u16_at(8),
            value_numints: u16_at(10),
            cd: u32::from_le_bytes([c[12], c[13], c[14], c[15]]),
            hash: u64::from_le_bytes([c[16], c[17], c[18], c[19], c[20], c[21], c[22], c[23]]),
        }
    }

    fn put_entry_phys(&mut self, e: &EntryPhys) {
        let at = self.chunk_at(e.chunk);
        self.buf[at] = ZAP_CHUNK_ENTRY;
        self.buf[at + 1] = e.int_len;
        self.put_u16(at + 2, e.next);
        self.put_u16(at + 4, e.name_chunk);
        self.put_u16(at + 6, e.name_numints);
        self.put_u16(at + 8, e.value_chunk);
        self.put_u16(at + 10, e.value_numints);
        self.buf[at + 12..at + 16].copy_from_slice(&e.cd.to_le_bytes());
        self.buf[at + 16..at + 24].copy_from_slice(&e.hash.to_le_bytes());
    }

    /// `LEAF_HASH`: the bucket of a hash.
    pub fn bucket(&self, hash: u64) -> usize {
        let shift = 64 - (self.shift - 5) - self.prefix_len();
        ((hash >> shift) as usize) & (self.hash_entries() - 1)
    }

    fn bucket_head(&self, bucket: usize) -> u16 {
        self.u16_at(HEADER_BYTES + 2 * bucket)
    }

    /// Validates a block read from disk (see the module invariants).
    pub fn decode(buf: Vec<u8>) -> Result<Leaf, String> {
        let shift = buf.len().trailing_zeros();
        if !buf.len().is_power_of_two() || !(9..=24).contains(&shift) {
            return Err(format!("leaf of {} bytes", buf.len()));
        }
        let leaf = Leaf { buf, shift };
        let word0 = u64::from_le_bytes(leaf.buf[0..8].try_into().unwrap_or([0; 8]));
        let magic = u32::from_le_bytes(leaf.buf[24..28].try_into().unwrap_or([0; 4]));
        if word0 != ZBT_LEAF || magic != ZAP_LEAF_MAGIC {
            return Err(format!("block type {word0:#x} magic {magic:#x}"));
        }
        let plen = leaf.prefix_len();
        let fits = plen >= 64 || leaf.prefix() >> plen == 0;
        if plen > 64 - (shift - 5) || !fits {
            return Err(format!("prefix {:#x}/{plen}", leaf.prefix()));
        }
        let n = leaf.num_chunks();
        let mut seen = vec![false; n];
        let mut take = |chunk: u16, want: u8, what: &str| -> Result<(), String> {
            let i = usize::from(chunk);
            if i >= n || seen[i] {
                return Err(format!("{what} chunk {chunk} out of range or reused"));
            }
            if leaf.chunk_type(chunk) != want {
                return Err(format!(
                    "{what} chunk {chunk} has type {}",
                    leaf.chunk_type(chunk)
                ));
            }
            seen[i] = true;
            Ok(())
        };
        // The free list.
        let mut chunk = leaf.freelist();
        for _ in 0..leaf.nfree() {
            take(chunk, ZAP_CHUNK_FREE, "free")?;
            chunk = leaf.u16_at(leaf.chunk_at(chunk) + 22);
        }
        // The entries and their arrays.
        let mut entries = 0usize;
        for bucket in 0..leaf.hash_entries() {
            let mut chunk = leaf.bucket_head(bucket);
            while chunk != CHAIN_END {
                take(chunk, ZAP_CHUNK_ENTRY, "entry")?;
                let e = leaf.entry_phys(chunk);
                if ![1, 2, 4, 8].contains(&e.int_len)
                    || e.name_numints == 0
                    || leaf.bucket(e.hash) != bucket
                    || hash_prefix(e.hash, plen) != leaf.prefix()
                {
                    return Err(format!("entry chunk {chunk} misplaced or malformed"));
                }
                let arrays = [
                    (e.name_chunk, usize::from(e.name_numints)),
                    (
                        e.value_chunk,
                        usize::from(e.value_numints) * usize::from(e.int_len),
                    ),
                ];
                for (mut a, bytes) in arrays {
                    for _ in 0..array_chunks(bytes) {
                        take(a, ZAP_CHUNK_ARRAY, "array")?;
                        a = leaf.u16_at(leaf.chunk_at(a) + 22);
                    }
                    if a != CHAIN_END {
                        return Err(format!("array of entry {chunk} runs on"));
                    }
                }
                let name = leaf.read_array(e.name_chunk, usize::from(e.name_numints));
                if name.last() != Some(&0) || name[..name.len() - 1].contains(&0) {
                    return Err(format!("entry chunk {chunk}: name without its NUL"));
                }
                entries += 1;
                chunk = e.next;
            }
        }
        if entries != usize::from(leaf.nentries()) || seen.iter().any(|s| !s) {
            return Err(format!(
                "{entries} entries for lh_nentries {}, or chunks on no list",
                leaf.nentries()
            ));
        }
        Ok(leaf)
    }

    /// `bytes` bytes of the array from `chunk` (validated by `decode`).
    fn read_array(&self, mut chunk: u16, bytes: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes);
        while out.len() < bytes && chunk != CHAIN_END {
            let at = self.chunk_at(chunk);
            let take = (bytes - out.len()).min(ZAP_LEAF_ARRAY_BYTES);
            out.extend_from_slice(&self.buf[at + 1..at + 1 + take]);
            chunk = self.u16_at(at + 22);
        }
        out
    }

    /// The entry's name (without NUL) and value bytes.
    pub fn entry(&self, e: &EntryPhys) -> LeafEntry {
        let mut name = self.read_array(e.name_chunk, usize::from(e.name_numints));
        name.pop();
        LeafEntry {
            hash: e.hash,
            cd: e.cd,
            name,
            int_len: e.int_len,
            value: self.read_array(
                e.value_chunk,
                usize::from(e.value_numints) * usize::from(e.int_len),
            ),
        }
    }

    fn name_is(&self, e: &EntryPhys, name: &[u8]) -> bool {
        usize::from(e.name_numints) == name.len() + 1
            && self.read_array(e.name_chunk, name.len()) == name
    }

    /// The entry named `name` with hash `hash`, and the link to it (`zap_leaf_lookup`).
    fn find_link(&self, hash: u64, name: &[u8]) -> Option<(Link, EntryPhys)> {
        let bucket = self.bucket(hash);
        let mut link = Link::Bucket(bucket);
        let mut chunk = self.bucket_head(bucket);
        while chunk != CHAIN_END {
            let e = self.entry_phys(chunk);
            if e.hash == hash && self.name_is(&e, name) {
                return Some((link, e));
            }
            link = Link::Entry(chunk);
            chunk = e.next;
        }
        None
    }

    pub fn find(&self, hash: u64, name: &[u8]) -> Option<EntryPhys> {
        self.find_link(hash, name).map(|(_, e)| e)
    }

    /// Every entry, in (hash, cd) order (the cursor order).
    pub fn entries(&self) -> Vec<LeafEntry> {
        let mut out = Vec::with_capacity(usize::from(self.nentries()));
        for bucket in 0..self.hash_entries() {
            let mut chunk = self.bucket_head(bucket);
            while chunk != CHAIN_END {
                let e = self.entry_phys(chunk);
                out.push(self.entry(&e));
                chunk = e.next;
            }
        }
        out.sort_by_key(|e| (e.hash, e.cd));
        out
    }

    /// Whether every entry has hash `hash` (then no split can make room for it).
    pub fn all_hashes_are(&self, hash: u64) -> bool {
        (0..self.num_chunks() as u16)
            .filter(|&c| self.chunk_type(c) == ZAP_CHUNK_ENTRY)
            .all(|c| self.entry_phys(c).hash == hash)
    }

    /// The lowest cd no entry of this hash uses (`zap_entry_create` with `ZAP_NEED_CD`).
    pub fn free_cd(&self, hash: u64) -> u64 {
        let mut used = Vec::new();
        let mut chunk = self.bucket_head(self.bucket(hash));
        while chunk != CHAIN_END {
            let e = self.entry_phys(chunk);
            if e.hash == hash {
                used.push(u64::from(e.cd));
            }
            chunk = e.next;
        }
        used.sort_unstable();
        let mut cd = 0;
        for u in used {
            if u == cd {
                cd += 1;
            } else if u > cd {
                break;
            }
        }
        cd
    }

    /// `zap_leaf_chunk_alloc`: the head of the free list.
    fn chunk_alloc(&mut self) -> u16 {
        let chunk = self.freelist();
        let next = self.u16_at(self.chunk_at(chunk) + 22);
        self.put_u16(34, next);
        let nfree = self.nfree() - 1;
        self.put_u16(28, nfree);
        chunk
    }

    /// `zap_leaf_chunk_free`: onto the head of the free list, pad zeroed.
    fn chunk_free(&mut self, chunk: u16) {
        let at = self.chunk_at(chunk);
        self.buf[at] = ZAP_CHUNK_FREE;
        self.buf[at + 1..at + 22].fill(0);
        let head = self.freelist();
        self.put_u16(at + 22, head);
        self.put_u16(34, chunk);
        let nfree = self.nfree() + 1;
        self.put_u16(28, nfree);
    }

    /// `zap_leaf_array_create`: `bytes` in a new chain; `CHAIN_END` for none.
    fn array_create(&mut self, bytes: &[u8]) -> u16 {
        let mut head = CHAIN_END;
        let mut prev: Option<u16> = None;
        for piece in bytes.chunks(ZAP_LEAF_ARRAY_BYTES) {
            let chunk = self.chunk_alloc();
            let at = self.chunk_at(chunk);
            self.buf[at] = ZAP_CHUNK_ARRAY;
            self.buf[at + 1..at + 1 + piece.len()].copy_from_slice(piece);
            match prev {
                None => head = chunk,
                Some(p) => {
                    let pat = self.chunk_at(p);
                    self.put_u16(pat + 22, chunk);
                }
            }
            prev = Some(chunk);
        }
        if let Some(p) = prev {
            let pat = self.chunk_at(p);
            self.put_u16(pat + 22, CHAIN_END);
        }
        head
    }

    fn array_free(&mut self, mut chunk: u16) {
        while chunk != CHAIN_END {
            let next = self.u16_at(self.chunk_at(chunk) + 22);
            self.chunk_free(chunk);
            chunk = next;
        }
    }

    fn set_link(&mut self, link: Link, chunk: u16) {
        match link {
            Link::Bucket(b) => self.put_u16(HEADER_BYTES + 2 * b, chunk),
            Link::Entry(e) => {
                let at = self.chunk_at(e);
                self.put_u16(at + 2, chunk);
            }
        }
    }

    /// `zap_leaf_rehash_entry`: links entry `chunk` into its bucket, sorted by cd.
    fn rehash(&mut self, chunk: u16) {
        let mut e = self.entry_phys(chunk);
        let bucket = self.bucket(e.hash);
        let mut link = Link::Bucket(bucket);
        let mut next = self.bucket_head(bucket);
        while next != CHAIN_END {
            let e2 = self.entry_phys(next);
            if e2.cd > e.cd {
                break;
            }
            link = Link::Entry(next);
            next = e2.next;
        }
        e.next = next;
        self.put_entry_phys(&e);
        self.set_link(link, chunk);
    }

    /// Chunks an entry of this name and value takes.
    pub fn entry_chunks(name_len: usize, value_bytes: usize) -> usize {
        1 + array_chunks(name_len + 1) + array_chunks(value_bytes)
    }

    /// `zap_entry_create`; false (`EAGAIN`) when the free chunks do not suffice.
    pub fn create(&mut self, hash: u64, cd: u32, name: &[u8], int_len: u8, value: &[u8]) -> bool {
        let needed = Self::entry_chunks(name.len(), value.len());
        if usize::from(self.nfree()) < needed {
            return false;
        }
        let chunk = self.chunk_alloc();
        let mut name_z = name.to_vec();
        name_z.push(0);
        let name_chunk = self.array_create(&name_z);
        let value_chunk = self.array_create(value);
        let e = EntryPhys {
            chunk,
            int_len,
            next: CHAIN_END,
            name_chunk,
            name_numints: name_z.len() as u16,
            value_chunk,
            value_numints: (value.len() / usize::from(int_len)) as u16,
            cd,
            hash,
        };
        self.put_entry_phys(&e);
        self.rehash(chunk);
        let n = self.nentries() + 1;
        self.put_u16(30, n);
        true
    }

    /// `zap_entry_update`: a new value for the entry; false (`EAGAIN`) if it does not fit.
    pub fn update(&mut self, e: &EntryPhys, int_len: u8, value: &[u8]) -> bool {
        let old = array_chunks(usize::from(e.value_numints) * usize::from(e.int_len));
        let new = array_chunks(value.len());
        if new > old && usize::from(self.nfree()) < new - old {
            return false;
        }
        self.array_free(e.value_chunk);
        let value_chunk = self.array_create(value);
        let mut e = self.entry_phys(e.chunk);
        e.value_chunk = value_chunk;
        e.value_numints = (value.len() / usize::from(int_len)) as u16;
        e.int_len = int_len;
        self.put_entry_phys(&e);
        true
    }

    /// `zap_entry_remove`: unlinks the entry and frees its chunks (value, name, entry).
    pub fn remove(&mut self, hash: u64, name: &[u8]) -> bool {
        let Some((link, e)) = self.find_link(hash, name) else {
            return false;
        };
        self.set_link(link, e.next);
        self.array_free(e.value_chunk);
        self.array_free(e.name_chunk);
        self.chunk_free(e.chunk);
        let n = self.nentries() - 1;
        self.put_u16(30, n);
        true
    }

    /// `zap_leaf_split`: this leaf keeps the entries whose next hash bit is 0 and `nl`
    /// (a new empty leaf) takes the others, in chunk order, as OpenZFS moves them.
    pub fn split(&mut self, nl: &mut Leaf, sorted: bool) {
        let bit = 64 - 1 - self.prefix_len();
        let prefix = self.prefix() << 1;
        let plen = self.prefix_len() + 1;
        self.buf[16..24].copy_from_slice(&prefix.to_le_bytes());
        self.put_u16(32, plen as u16);
        nl.buf[16..24].copy_from_slice(&(prefix | 1).to_le_bytes());
        nl.put_u16(32, plen as u16);
        for b in 0..self.hash_entries() {
            self.put_u16(HEADER_BYTES + 2 * b, CHAIN_END);
        }
        if sorted {
            self.buf[36] |= 1;
        }
        for i in 0..self.num_chunks() as u16 {
            if self.chunk_type(i) != ZAP_CHUNK_ENTRY {
                continue;
            }
            let e = self.entry_phys(i);
            if e.hash & (1u64 << bit) != 0 {
                self.transfer_entry(i, nl);
            } else {
                self.rehash(i);
            }
        }
    }

    fn transfer_entry(&mut self, entry: u16, nl: &mut Leaf) {
        let e = self.entry_phys(entry);
        let chunk = nl.chunk_alloc();
        let mut ne = e;
        ne.chunk = chunk;
        nl.put_entry_phys(&ne);
        nl.rehash(chunk);
        let mut ne = nl.entry_phys(chunk);
        ne.name_chunk = self.transfer_array(e.name_chunk, nl);
        ne.value_chunk = self.transfer_array(e.value_chunk, nl);
        nl.put_entry_phys(&ne);
        self.chunk_free(entry);
        let n = self.nentries() - 1;
        self.put_u16(30, n);
        let n = nl.nentries() + 1;
        nl.put_u16(30, n);
    }

    fn transfer_array(&mut self, mut chunk: u16, nl: &mut Leaf) -> u16 {
        let mut head = CHAIN_END;
        let mut prev: Option<u16> = None;
        while chunk != CHAIN_END {
            let nchunk = nl.chunk_alloc();
            let at = self.chunk_at(chunk);
            let nat = nl.chunk_at(nchunk);
            let next = self.u16_at(at + 22);
            nl.buf[nat..nat + ZAP_LEAF_CHUNKSIZE]
                .copy_from_slice(&self.buf[at..at + ZAP_LEAF_CHUNKSIZE]);
            self.chunk_free(chunk);
            match prev {
                None => head = nchunk,
                Some(p) => {
                    let pat = nl.chunk_at(p);
                    nl.put_u16(pat + 22, nchunk);
                }
            }
            prev = Some(nchunk);
            chunk = next;
        }
        if let Some(p) = prev {
            let pat = nl.chunk_at(p);
            nl.put_u16(pat + 22, CHAIN_END);
        }
        head
    }
}
