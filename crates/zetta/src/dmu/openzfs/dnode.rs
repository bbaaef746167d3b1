//! OpenZFS's `dnode_phys_t`: one object's header, and the walk from a level-0 block id down
//! its tree of indirect blocks.
//!
//! ZFS counterpart: `include/sys/dnode.h` (`dnode_phys_t`, `DN_BONUS`, `DN_SPILL_BLKPTR`,
//! `DNODE_FLAG_*`), `module/zfs/dbuf.c` (`dbuf_findbp`: which pointer a block id goes
//! through), `module/zfs/dmu.c` (`dmu_ot[]`, the object type names).
//!
//! A dnode fills one or more 512-byte slots (`dn_extra_slots` more than one with the
//! large_dnode feature). Single-byte fields need no swapping; the u16 and u64 fields, and the
//! block pointers inside, are in the order of the block the dnode was read from.
//!
//! ```text
//! 0    type  indblkshift  nlevels  nblkptr  bonustype  checksum  compress  flags   (u8 each)
//! 8    datablkszsec (u16)  bonuslen (u16)  extra_slots (u8)  pad[3]
//! 16   maxblkid (u64)      24 used (u64: bytes if flags & USED_BYTES, else 512-byte sectors)
//! 32   pad[4] (u64)
//! 64   blkptr[nblkptr]  (128 bytes each)
//! 64 + 128*nblkptr      bonus[bonuslen]
//! size - 128            spill blkptr, only if flags & SPILL_BLKPTR (size = 512 * (1 + extra_slots))
//! ```
//!
//! The block tree: `nlevels` levels, level 0 the data blocks (`datablkszsec * 512` bytes),
//! above them indirect blocks of `2^indblkshift` bytes, each an array of
//! `2^(indblkshift - 7)` block pointers. Level-0 block `b` goes through
//! `blkptr[b >> (epbs * (nlevels - 1))]`, then at level `l` (from `nlevels - 2` down to 0)
//! through entry `(b >> (epbs * l)) & (2^epbs - 1)` of the indirect block, `epbs` being
//! `indblkshift - 7`. A hole pointer anywhere on the path, or a block id past `maxblkid`,
//! reads as zeros.
//!
//! Invariants: decoding never panics on outside bytes; every inconsistency (a dnode longer
//! than its buffer, bonus bytes past the tail, a tree deeper than 64-bit offsets allow, a
//! child block of the wrong size) is a `DnodeCorrupt`.

use crate::byteorder::{ByteOrder, ShortRead};
use std::fmt;

/// The bytes of one `blkptr_t`, decoded by whoever reads blocks.
pub type RawBlkptr = [u8; BLKPTR_BYTES];

pub const BLKPTR_BYTES: usize = 128;
/// One dnode slot (`DNODE_MIN_SIZE`); a dnode takes `1 + extra_slots` of them.
pub const DNODE_SLOT_BYTES: usize = 512;
/// The fixed part before the block pointers (`DNODE_CORE_SIZE`).
pub const DNODE_CORE_BYTES: usize = 64;
/// At most 32 slots: a dnode never spans more than a 16 KiB dnode block.
pub const DNODE_MAX_SLOTS: usize = 32;

pub const DNODE_FLAG_USED_BYTES: u8 = 1 << 0;
pub const DNODE_FLAG_USERUSED_ACCOUNTED: u8 = 1 << 1;
pub const DNODE_FLAG_SPILL_BLKPTR: u8 = 1 << 2;
pub const DNODE_FLAG_USEROBJUSED_ACCOUNTED: u8 = 1 << 3;

/// `blkptr_t` words this layer reads itself: DVA[0] (words 0, 1) and the prop word (6).
const BP_PROP_OFFSET: usize = 48;
const BP_EMBEDDED_BIT: u32 = 39;
const BP_BYTEORDER_BIT: u32 = 63;
/// Indirect blocks hold 2^(indblkshift - 7) pointers; OpenZFS writes 2^10..2^17-byte ones
/// (older pools 16 KiB), so 2^9..2^17 are accepted.
const INDBLKSHIFT_RANGE: std::ops::RangeInclusive<u8> = 9..=17;

/// A dnode whose bytes contradict themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnodeCorrupt {
    /// A field lies past the end of the buffer.
    Short(ShortRead),
    /// A field holds a value the format does not allow.
    Field { field: &'static str, value: u64 },
    /// A child block's logical size is not what its dnode says.
    BlockSize {
        level: u8,
        expected: usize,
        got: usize,
    },
    /// A byte offset past 2^64.
    Range { offset: u64, len: u64 },
}

impl fmt::Display for DnodeCorrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DnodeCorrupt::Short(s) => write!(f, "dnode: {s}"),
            DnodeCorrupt::Field { field, value } => {
                write!(f, "dnode: {field} = {value} is not valid")
            }
            DnodeCorrupt::BlockSize {
                level,
                expected,
                got,
            } => write!(
                f,
                "dnode: a level-{level} block holds {got} bytes, not the {expected} its dnode says"
            ),
            DnodeCorrupt::Range { offset, len } => {
                write!(f, "dnode: {len} bytes at offset {offset} pass 2^64")
            }
        }
    }
}

impl std::error::Error for DnodeCorrupt {}

impl From<ShortRead> for DnodeCorrupt {
    fn from(s: ShortRead) -> Self {
        DnodeCorrupt::Short(s)
    }
}

/// A walk's failure: the bytes were wrong, or the caller's reader failed.
#[derive(Debug, PartialEq, Eq)]
pub enum DmuReadError<E> {
    Corrupt(DnodeCorrupt),
    Read(E),
}

impl<E: fmt::Display> fmt::Display for DmuReadError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmuReadError::Corrupt(c) => c.fmt(f),
            DmuReadError::Read(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for DmuReadError<E> {}

impl<E> From<DnodeCorrupt> for DmuReadError<E> {
    fn from(c: DnodeCorrupt) -> Self {
        DmuReadError::Corrupt(c)
    }
}

impl<E> From<ShortRead> for DmuReadError<E> {
    fn from(s: ShortRead) -> Self {
        DmuReadError::Corrupt(DnodeCorrupt::Short(s))
    }
}

/// Turns a block pointer into its block's logical bytes (located, checksummed, decrypted,
/// decompressed or taken from an embedded pointer: the caller's business). `order` is the
/// order of the block that holds the pointer, i.e. the order to read the pointer's words in.
pub trait BlockReader {
    type Error;
    fn read_block(&mut self, bp: &RawBlkptr, order: ByteOrder) -> Result<Vec<u8>, Self::Error>;
}

impl<E, F> BlockReader for F
where
    F: FnMut(&RawBlkptr, ByteOrder) -> Result<Vec<u8>, E>,
{
    type Error = E;
    fn read_block(&mut self, bp: &RawBlkptr, order: ByteOrder) -> Result<Vec<u8>, E> {
        self(bp, order)
    }
}

/// `BP_IS_HOLE`: not embedded and DVA[0] all zero (a hole may still carry a birth txg and
/// a logical size).
pub fn raw_bp_is_hole(bp: &RawBlkptr, order: ByteOrder) -> bool {
    let word = |i: usize| order.u64_at(bp, i * 8).unwrap_or(0);
    let embedded = (word(BP_PROP_OFFSET / 8) >> BP_EMBEDDED_BIT) & 1 == 1;
    !embedded && word(0) == 0 && word(1) == 0
}

/// The order of the block a pointer names (`BP_GET_BYTEORDER`: 1 = little-endian).
pub fn raw_bp_byte_order(bp: &RawBlkptr, order: ByteOrder) -> ByteOrder {
    let prop = order.u64_at(bp, BP_PROP_OFFSET).unwrap_or(0);
    ByteOrder::from_bp_bit((prop >> BP_BYTEORDER_BIT) & 1 == 1)
}

fn raw_bp_at(buf: &[u8], offset: usize) -> Result<RawBlkptr, ShortRead> {
    offset
        .checked_add(BLKPTR_BYTES)
        .and_then(|end| buf.get(offset..end))
        .and_then(|s| s.try_into().ok())
        .ok_or(ShortRead {
            offset,
            width: BLKPTR_BYTES,
            len: buf.len(),
        })
}

/// The name OpenZFS gives an object type (`dmu_ot[].ot_name`, what zdb prints), for the
/// legacy numbered types; `None` for the flag-encoded (`DMU_OT_NEWTYPE`) and unknown ones.
pub fn object_type_name(t: u8) -> Option<&'static str> {
    const NAMES: [&str; 54] = [
        "unallocated",
        "object directory",
        "object array",
        "packed nvlist",
        "packed nvlist size",
        "bpobj",
        "bpobj header",
        "SPA space map header",
        "SPA space map",
        "ZIL intent log",
        "DMU dnode",
        "DMU objset",
        "DSL directory",
        "DSL directory child map",
        "DSL dataset snap map",
        "DSL props",
        "DSL dataset",
        "ZFS znode",
        "ZFS V0 ACL",
        "ZFS plain file",
        "ZFS directory",
        "ZFS master node",
        "ZFS delete queue",
        "zvol object",
        "zvol prop",
        "other uint8[]",
        "other uint64[]",
        "other ZAP",
        "persistent error log",
        "SPA history",
        "SPA history offsets",
        "Pool properties",
        "DSL permissions",
        "ZFS ACL",
        "ZFS SYSACL",
        "FUID table",
        "FUID table size",
        "DSL dataset next clones",
        "scan work queue",
        "ZFS user/group/project used",
        "ZFS user/group/project quota",
        "snapshot refcount tags",
        "DDT ZAP algorithm",
        "DDT statistics",
        "System attributes",
        "SA master node",
        "SA attr registration",
        "SA attr layouts",
        "scan translations",
        "deduplicated block",
        "DSL deadlist map",
        "DSL deadlist map hdr",
        "DSL dir clones",
        "bpobj subobj",
    ];
    NAMES.get(usize::from(t)).copied()
}

/// One decoded `dnode_phys_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnodePhys {
    /// The order of the block it was read from (and of its block pointers' words).
    pub order: ByteOrder,
    pub object_type: u8,
    pub indblkshift: u8,
    pub nlevels: u8,
    pub nblkptr: u8,
    pub bonustype: u8,
    pub checksum: u8,
    pub compress: u8,
    pub flags: u8,
    pub datablkszsec: u16,
    pub bonuslen: u16,
    pub extra_slots: u8,
    pub maxblkid: u64,
    pub used: u64,
    pub blkptrs: Vec<RawBlkptr>,
    /// The `bonuslen` bonus bytes (e.g. a znode's system attributes, a dataset's
    /// `dsl_dataset_phys_t`).
    pub bonus: Vec<u8>,
    pub spill: Option<RawBlkptr>,
}

/// A block of an object, with the order its integers were written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnodeBlock {
    pub data: Vec<u8>,
    pub order: ByteOrder,
}

impl DnodePhys {
    /// Decodes the dnode at the start of `buf` (which may run on past it: a large dnode's
    /// extra slots are read from there). A free slot (type 0) decodes with no pointers.
    pub fn decode(buf: &[u8], order: ByteOrder) -> Result<DnodePhys, DnodeCorrupt> {
        let core = buf.get(..DNODE_CORE_BYTES).ok_or(ShortRead {
            offset: 0,
            width: DNODE_CORE_BYTES,
            len: buf.len(),
        })?;
        let byte = |i: usize| core[i];
        let (object_type, indblkshift, nlevels, nblkptr) = (byte(0), byte(1), byte(2), byte(3));
        let (bonustype, checksum, compress, flags) = (byte(4), byte(5), byte(6), byte(7));
        let datablkszsec = order.u16_at(core, 8)?;
        let bonuslen = order.u16_at(core, 10)?;
        let extra_slots = byte(12);
        let maxblkid = order.u64_at(core, 16)?;
        let used = order.u64_at(core, 24)?;
        let bad = |field, value: u64| DnodeCorrupt::Field { field, value };

        let slots = usize::from(extra_slots) + 1;
        if slots > DNODE_MAX_SLOTS {
            return Err(bad("dn_extra_slots", extra_slots.into()));
        }
        let size = slots * DNODE_SLOT_BYTES;
        let whole = buf.get(..size).ok_or(ShortRead {
            offset: 0,
            width: size,
            len: buf.len(),
        })?;
        let mut dn = DnodePhys {
            order,
            object_type,
            indblkshift,
            nlevels,
            nblkptr,
            bonustype,
            checksum,
            compress,
            flags,
            datablkszsec,
            bonuslen,
            extra_slots,
            maxblkid,
            used,
            blkptrs: Vec::new(),
            bonus: Vec::new(),
            spill: None,
        };
        if object_type == 0 {
            return Ok(dn);
        }
        // The pointers, bonus and spill pointer share the tail after the core.
        let tail_end = if flags & DNODE_FLAG_SPILL_BLKPTR != 0 {
            size - BLKPTR_BYTES
        } else {
            size
        };
        let max_nblkptr = (tail_end - DNODE_CORE_BYTES) / BLKPTR_BYTES;
        if nblkptr == 0 || usize::from(nblkptr) > max_nblkptr {
            return Err(bad("dn_nblkptr", nblkptr.into()));
        }
        if nlevels == 0 || dn.max_levels().is_none_or(|max| nlevels > max) {
            return Err(bad("dn_nlevels", nlevels.into()));
        }
        if nlevels > 1 && !INDBLKSHIFT_RANGE.contains(&indblkshift) {
            return Err(bad("dn_indblkshift", indblkshift.into()));
        }
        if datablkszsec == 0 {
            return Err(bad("dn_datablkszsec", 0));
        }
        let bonus_start = DNODE_CORE_BYTES + usize::from(nblkptr) * BLKPTR_BYTES;
        let bonus_end = bonus_start + usize::from(bonuslen);
        if bonus_end > tail_end {
            return Err(bad("dn_bonuslen", bonuslen.into()));
        }
        for i in 0..usize::from(nblkptr) {
            dn.blkptrs
                .push(raw_bp_at(whole, DNODE_CORE_BYTES + i * BLKPTR_BYTES)?);
        }
        dn.bonus = whole[bonus_start..bonus_end].to_vec();
        if flags & DNODE_FLAG_SPILL_BLKPTR != 0 {
            dn.spill = Some(raw_bp_at(whole, size - BLKPTR_BYTES)?);
        }
        Ok(dn)
    }

    /// A free slot (all zeros once encoded).
    pub fn free(order: ByteOrder) -> DnodePhys {
        DnodePhys {
            order,
            object_type: 0,
            indblkshift: 0,
            nlevels: 0,
            nblkptr: 0,
            bonustype: 0,
            checksum: 0,
            compress: 0,
            flags: 0,
            datablkszsec: 0,
            bonuslen: 0,
            extra_slots: 0,
            maxblkid: 0,
            used: 0,
            blkptrs: Vec::new(),
            bonus: Vec::new(),
            spill: None,
        }
    }

    /// Writes the dnode into `out` (its `dnode_size()` bytes, in `self.order`; the pads
    /// `dn_pad2` and `dn_pad3` are left as `out` holds them, the rest of the slots is
    /// rewritten). The mirror of `decode`: whatever `decode` accepts re-encodes to the same
    /// bytes. A free dnode is all zeros. Fields that contradict each other (more pointers
    /// than the slots hold, a bonus running into the spill pointer, a `bonuslen` or
    /// `nblkptr` not matching the vectors) are refused, and `out` is left untouched.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), DnodeCorrupt> {
        let bad = |field, value: u64| DnodeCorrupt::Field { field, value };
        let size = self.dnode_size();
        if self.extra_slots as usize + 1 > DNODE_MAX_SLOTS {
            return Err(bad("dn_extra_slots", self.extra_slots.into()));
        }
        let len = out.len();
        let whole = out.get_mut(..size).ok_or(ShortRead {
            offset: 0,
            width: size,
            len,
        })?;
        if self.is_free() {
            whole.fill(0);
            return Ok(());
        }
        let spill = self.flags & DNODE_FLAG_SPILL_BLKPTR != 0;
        if spill != self.spill.is_some() {
            return Err(bad("dn_flags", self.flags.into()));
        }
        let tail_end = if spill { size - BLKPTR_BYTES } else { size };
        let nblkptr = usize::from(self.nblkptr);
        if nblkptr == 0
            || nblkptr != self.blkptrs.len()
            || DNODE_CORE_BYTES + nblkptr * BLKPTR_BYTES > tail_end
        {
            return Err(bad("dn_nblkptr", self.nblkptr.into()));
        }
        let bonus_start = DNODE_CORE_BYTES + nblkptr * BLKPTR_BYTES;
        if usize::from(self.bonuslen) != self.bonus.len()
            || bonus_start + self.bonus.len() > tail_end
        {
            return Err(bad("dn_bonuslen", self.bonuslen.into()));
        }
        let put16 = |v: u16| match self.order {
            ByteOrder::Little => v.to_le_bytes(),
            ByteOrder::Big => v.to_be_bytes(),
        };
        whole[..8].copy_from_slice(&[
            self.object_type,
            self.indblkshift,
            self.nlevels,
            self.nblkptr,
            self.bonustype,
            self.checksum,
            self.compress,
            self.flags,
        ]);
        whole[8..10].copy_from_slice(&put16(self.datablkszsec));
        whole[10..12].copy_from_slice(&put16(self.bonuslen));
        whole[12] = self.extra_slots;
        self.order.put_u64(whole, 16, self.maxblkid)?;
        self.order.put_u64(whole, 24, self.used)?;
        let tail = &mut whole[DNODE_CORE_BYTES..];
        tail.fill(0);
        for (i, bp) in self.blkptrs.iter().enumerate() {
            tail[i * BLKPTR_BYTES..(i + 1) * BLKPTR_BYTES].copy_from_slice(bp);
        }
        let at = bonus_start - DNODE_CORE_BYTES;
        tail[at..at + self.bonus.len()].copy_from_slice(&self.bonus);
        if let Some(bp) = &self.spill {
            let at = tail.len() - BLKPTR_BYTES;
            tail[at..].copy_from_slice(bp);
        }
        Ok(())
    }

    /// Whether the slot holds no object.
    pub fn is_free(&self) -> bool {
        self.object_type == 0
    }

    /// Bytes the dnode occupies (`dnsize` in zdb): 512 per slot.
    pub fn dnode_size(&self) -> usize {
        (usize::from(self.extra_slots) + 1) * DNODE_SLOT_BYTES
    }

    /// Logical size of each level-0 block.
    pub fn data_block_size(&self) -> usize {
        usize::from(self.datablkszsec) * 512
    }

    /// Size of each indirect block.
    pub fn indirect_block_size(&self) -> u64 {
        1u64.checked_shl(self.indblkshift.into()).unwrap_or(0)
    }

    /// Disk space charged to the object, in bytes (`DN_USED_BYTES`).
    pub fn used_bytes(&self) -> u64 {
        if self.flags & DNODE_FLAG_USED_BYTES != 0 {
            self.used
        } else {
            self.used.saturating_mul(512)
        }
    }

    /// Logical bytes the object spans: `(maxblkid + 1) * block size`.
    pub fn logical_size(&self) -> u64 {
        self.maxblkid
            .saturating_add(1)
            .saturating_mul(self.data_block_size() as u64)
    }

    /// Pointers per indirect block, as a shift.
    fn epbs(&self) -> u32 {
        u32::from(self.indblkshift.saturating_sub(7))
    }

    /// The most levels a tree of this shape needs to address every block of a 2^64-byte
    /// object (OpenZFS's `DN_MAX_LEVELS` for the smallest indirect size), or `None` if the
    /// shape is impossible.
    fn max_levels(&self) -> Option<u8> {
        let epbs = self.epbs().max(2);
        // Level-0 blocks are at least 512 bytes: 55 bits of block id to cover.
        Some((55u32.div_ceil(epbs) + 1).min(u8::MAX.into()) as u8)
    }

    /// The path from the dnode to level-0 block `blkid`: the index into `blkptrs`, then the
    /// entry index in each indirect block from the top level down. `None` if the tree's
    /// shape cannot address `blkid` (it reads as a hole).
    pub fn block_path(&self, blkid: u64) -> Option<(usize, Vec<usize>)> {
        let levels = u32::from(self.nlevels.max(1));
        if levels == 1 {
            return (blkid < u64::from(self.nblkptr)).then(|| (blkid as usize, Vec::new()));
        }
        let epbs = self.epbs().min(63);
        let top_shift = epbs.checked_mul(levels - 1)?;
        let top = if top_shift >= 64 {
            0
        } else {
            blkid >> top_shift
        };
        if top >= u64::from(self.nblkptr) {
            return None;
        }
        let mask = (1u64 << epbs) - 1;
        let path = (0..levels - 1)
            .rev()
            .map(|l| {
                let shift = epbs * l;
                let idx = if shift >= 64 { 0 } else { blkid >> shift };
                (idx & mask) as usize
            })
            .collect();
        Some((top as usize, path))
    }

    /// Level-0 block `blkid`'s bytes, or `None` for a hole (a hole pointer on the way, a
    /// block past `maxblkid`, or one the tree cannot address).
    pub fn read_block<R: BlockReader>(
        &self,
        blkid: u64,
        reader: &mut R,
    ) -> Result<Option<DnodeBlock>, DmuReadError<R::Error>> {
        if self.is_free() || blkid > self.maxblkid {
            return Ok(None);
        }
        let Some((top, path)) = self.block_path(blkid) else {
            return Ok(None);
        };
        let Some(first) = self.blkptrs.get(top) else {
            return Ok(None);
        };
        let mut bp = *first;
        let mut order = self.order;
        let mut level = self.nlevels.saturating_sub(1);
        for idx in path {
            if raw_bp_is_hole(&bp, order) {
                return Ok(None);
            }
            let child_order = raw_bp_byte_order(&bp, order);
            let data = reader.read_block(&bp, order).map_err(DmuReadError::Read)?;
            let expected = self.indirect_block_size() as usize;
            if data.len() != expected {
                return Err(DnodeCorrupt::BlockSize {
                    level,
                    expected,
                    got: data.len(),
                }
                .into());
            }
            bp = raw_bp_at(&data, idx * BLKPTR_BYTES)?;
            order = child_order;
            level = level.saturating_sub(1);
        }
        if raw_bp_is_hole(&bp, order) {
            return Ok(None);
        }
        let child_order = raw_bp_byte_order(&bp, order);
        let data = reader.read_block(&bp, order).map_err(DmuReadError::Read)?;
        if data.len() != self.data_block_size() {
            return Err(DnodeCorrupt::BlockSize {
                level: 0,
                expected: self.data_block_size(),
                got: data.len(),
            }
            .into());
        }
        Ok(Some(DnodeBlock {
            data,
            order: child_order,
        }))
    }

    /// `len` bytes of the object from byte `offset`; holes and blocks past `maxblkid` read
    /// as zeros. The caller bounds `len` (by the file's size, say): this allocates it.
    pub fn read<R: BlockReader>(
        &self,
        offset: u64,
        len: usize,
        reader: &mut R,
    ) -> Result<Vec<u8>, DmuReadError<R::Error>> {
        let end = offset.checked_add(len as u64).ok_or(DnodeCorrupt::Range {
            offset,
            len: len as u64,
        })?;
        let mut out = vec![0u8; len];
        let bs = self.data_block_size() as u64;
        if bs == 0 || len == 0 {
            return Ok(out);
        }
        let mut pos = offset;
        while pos < end {
            let blkid = pos / bs;
            let in_block = pos % bs;
            let n = (bs - in_block).min(end - pos);
            if blkid > self.maxblkid {
                break;
            }
            if let Some(block) = self.read_block(blkid, reader)? {
                let dst = (pos - offset) as usize;
                out[dst..dst + n as usize]
                    .copy_from_slice(&block.data[in_block as usize..(in_block + n) as usize]);
            }
            pos += n;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bp_with(order: ByteOrder, dva0: u64, prop: u64) -> RawBlkptr {
        let mut bp = [0u8; BLKPTR_BYTES];
        order.put_u64(&mut bp, 0, dva0).unwrap();
        order.put_u64(&mut bp, 8, 1).unwrap();
        order.put_u64(&mut bp, BP_PROP_OFFSET, prop).unwrap();
        bp
    }

    /// A 2-level dnode: 1 KiB indirect blocks (8 pointers), 512-byte data blocks, blocks
    /// addressed by their "DVA" word, read from a map.
    fn two_level(order: ByteOrder) -> DnodePhys {
        let mut buf = vec![0u8; 512];
        buf[..8].copy_from_slice(&[19, 10, 2, 1, 0, 7, 15, 1]);
        let put16 = |b: &mut Vec<u8>, off: usize, v: u16| {
            let bytes = match order {
                ByteOrder::Little => v.to_le_bytes(),
                ByteOrder::Big => v.to_be_bytes(),
            };
            b[off..off + 2].copy_from_slice(&bytes);
        };
        put16(&mut buf, 8, 1);
        put16(&mut buf, 10, 5);
        order.put_u64(&mut buf, 16, 5).unwrap();
        let l1 = bp_with(order, 100, u64::from(order == ByteOrder::Little) << 63);
        buf[64..192].copy_from_slice(&l1);
        buf[192..197].copy_from_slice(b"bonus");
        DnodePhys::decode(&buf, order).unwrap()
    }

    // Why: the walk from a block id to its pointer is the heart of every read of a real
    // pool; a wrong index reads another block's bytes, a missed hole reads garbage.
    #[test]
    fn block_ids_walk_their_indirect_path_and_holes_read_as_zeros() {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let dn = two_level(order);
            assert_eq!(dn.bonus, b"bonus");
            assert_eq!(dn.block_path(0), Some((0, vec![0])));
            assert_eq!(dn.block_path(5), Some((0, vec![5])));
            assert_eq!(dn.block_path(8), None);
            let bit = u64::from(order == ByteOrder::Little) << 63;
            let mut reader = |bp: &RawBlkptr, o: ByteOrder| -> Result<Vec<u8>, String> {
                let id = o.u64_at(bp, 0).unwrap();
                if id == 100 {
                    // The L1: blocks 0 and 5 present, the rest holes.
                    let mut l1 = vec![0u8; 1024];
                    l1[..128].copy_from_slice(&bp_with(order, 200, bit));
                    l1[5 * 128..6 * 128].copy_from_slice(&bp_with(order, 205, bit));
                    Ok(l1)
                } else {
                    Ok(vec![id as u8; 512])
                }
            };
            let data = dn.read(500, 20, &mut reader).unwrap();
            assert_eq!(&data[..12], &[200; 12]);
            assert_eq!(&data[12..], &[0; 8]);
            let tail = dn.read(5 * 512 + 510, 600, &mut reader).unwrap();
            assert_eq!(&tail[..2], &[205, 205]);
            assert!(
                tail[2..].iter().all(|&b| b == 0),
                "past maxblkid reads zeros"
            );
            assert!(dn.read(u64::MAX, 2, &mut reader).is_err());
        }
    }

    // Why: a large dnode (extra_slots) keeps its bonus up to its own end and its spill
    // pointer in its last 128 bytes; reading either at single-slot offsets takes another
    // object's bytes.
    #[test]
    fn large_dnodes_place_bonus_and_spill_at_their_own_end() {
        let order = ByteOrder::Little;
        let mut buf = vec![0u8; 2048];
        // Two slots, one pointer, spill present, 700 bonus bytes (more than one slot holds).
        buf[..8].copy_from_slice(&[19, 17, 1, 1, 44, 7, 15, DNODE_FLAG_SPILL_BLKPTR]);
        buf[8..10].copy_from_slice(&1u16.to_le_bytes());
        buf[10..12].copy_from_slice(&700u16.to_le_bytes());
        buf[12] = 1;
        for (i, b) in buf[192..892].iter_mut().enumerate() {
            *b = i as u8;
        }
        buf[896..1024].fill(0xee);
        buf[1024..1536].fill(0x77); // The next object's slot: not ours.
        let dn = DnodePhys::decode(&buf, order).unwrap();
        assert_eq!(dn.dnode_size(), 1024);
        assert_eq!(dn.bonus.len(), 700);
        assert_eq!(dn.bonus[699], (699 % 256) as u8);
        assert_eq!(dn.spill, Some([0xee; 128]));
        // 705 bonus bytes would run into the spill pointer.
        buf[10..12].copy_from_slice(&705u16.to_le_bytes());
        assert!(DnodePhys::decode(&buf, order).is_err());
        // Without the spill pointer they fit.
        buf[7] = 0;
        assert_eq!(DnodePhys::decode(&buf, order).unwrap().spill, None);
        // A dnode claiming more slots than its buffer holds.
        buf[12] = 5;
        assert!(matches!(
            DnodePhys::decode(&buf, order),
            Err(DnodeCorrupt::Short(_))
        ));
        // Single-level paths, and a hostile shift on a single-level dnode.
        let mut one = two_level(order);
        one.nlevels = 1;
        one.indblkshift = 255;
        assert_eq!(one.block_path(0), Some((0, vec![])));
        assert_eq!(one.block_path(1), None);
    }

    // Why: dnodes come off the disk; no byte pattern may panic the decoder or the walk.
    #[test]
    fn random_dnode_bytes_never_panic() {
        let mut rng = crate::rand::SeededRng::new(7);
        for i in 0..20_000 {
            let len = (rng.next_u64() % 1200) as usize;
            let mut buf: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            if i % 2 == 0 && len > 16 {
                // Plausible small values make deeper paths reachable.
                buf[1] = 9 + (rng.next_u64() % 10) as u8;
                buf[2] = (rng.next_u64() % 14) as u8;
                buf[3] = (rng.next_u64() % 4) as u8;
                buf[12] = (rng.next_u64() % 3) as u8;
            }
            let order = if i % 3 == 0 {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            };
            if let Ok(dn) = DnodePhys::decode(&buf, order) {
                let mut reader =
                    |_: &RawBlkptr, _: ByteOrder| -> Result<Vec<u8>, ()> { Ok(vec![0xa5; 1024]) };
                let _ = dn.read(rng.next_u64() % 100_000, 4096, &mut reader);
                let _ = dn.block_path(rng.next_u64());
            }
        }
    }
}

/// One fuzz input through the dnode and object-set decoders and the block-tree walk (the
/// fuzz target `openzfs_dnode` and a unit test call it). Byte 0 picks the order and how much
/// is the dnode; the remaining bytes serve as every block the walk asks for (cut from them
/// at an offset the pointer's first word picks, at the size the dnode expects, or not).
/// Nothing may panic; a read returns exactly the bytes asked for.
pub fn fuzz_check(data: &[u8]) {
    use super::objset::{dnode_in, ObjsetPhys};
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let order = if head & 1 == 1 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let dn_len = (usize::from((head >> 1) & 3) + 1) * DNODE_SLOT_BYTES;
    let (dn_bytes, disk) = rest.split_at(rest.len().min(dn_len));
    let fake = |size: u64| {
        move |bp: &RawBlkptr, o: ByteOrder| -> Result<Vec<u8>, ()> {
            if disk.is_empty() || size > 1 << 20 {
                return Err(());
            }
            let w = o.u64_at(bp, 0).unwrap_or(0);
            let start = (w % disk.len() as u64) as usize;
            let len = if w & (1 << 63) != 0 {
                (w >> 40) as usize & 0xfff
            } else {
                size as usize
            };
            Ok(disk.iter().cycle().skip(start).take(len).copied().collect())
        }
    };
    if let Ok(dn) = DnodePhys::decode(dn_bytes, order) {
        // The encoder is the decoder's mirror: what decodes re-encodes and decodes the same.
        let mut again = vec![0u8; dn.dnode_size()];
        assert_eq!(dn.encode(&mut again), Ok(()), "encode refused {dn:?}");
        let back = DnodePhys::decode(&again, order);
        if dn.is_free() {
            assert!(
                again.iter().all(|&b| b == 0),
                "a free slot encodes as zeros"
            );
        } else {
            assert_eq!(back.as_ref(), Ok(&dn), "re-encode");
        }
        let _ = (dn.dnode_size(), dn.used_bytes(), dn.logical_size());
        let _ = dn.block_path(u64::from(head) << 20 | 3);
        let size = dn.data_block_size() as u64;
        let ind = dn.indirect_block_size();
        let mut reader = fake(if head & 0x10 == 0 { size } else { ind });
        let offset = u64::from(head >> 5) * size.max(1) / 2;
        if let Ok(bytes) = dn.read(offset, 1 << 13, &mut reader) {
            assert_eq!(bytes.len(), 1 << 13, "read length");
        }
        let _ = dn.read_block(u64::from(head >> 4), &mut reader);
        let _ = dnode_in(&dn, u64::from(head >> 3), &mut reader);
    }
    if let Ok(os) = ObjsetPhys::decode(rest, order) {
        let bytes = os.encode().expect("a decoded objset block encodes");
        let back = ObjsetPhys::decode(&bytes, order).expect("and decodes again");
        assert_eq!(back.encode().as_ref(), Ok(&bytes), "objset re-encode");
        assert_eq!((back.os_type, back.flags), (os.os_type, os.flags));
        let mut reader = fake(os.meta_dnode.data_block_size() as u64);
        let _ = os.dnode(u64::from(head >> 2), &mut reader);
    }
}

#[cfg(test)]
mod fuzz_tests {
    use super::*;

    // Why: the fuzz target's check must hold on seeded inputs in the default suite: random
    // bytes with plausible shapes (small shifts, levels, slot counts) so walks go deep.
    #[test]
    fn fuzz_check_holds_on_random_inputs() {
        let mut rng = crate::rand::SeededRng::new(0xd0de);
        for i in 0..4000u64 {
            let len = [300, 520, 1100, 2100, 4200, 9000][(i % 6) as usize];
            let mut input = vec![0u8; len];
            rng.fill(&mut input);
            if i % 3 != 0 {
                input[1] = 19 + (rng.next_u64() % 4) as u8; // a real type
                input[2] = 9 + (rng.next_u64() % 9) as u8; // indblkshift
                input[3] = 1 + (rng.next_u64() % 4) as u8; // nlevels
                input[4] = 1 + (rng.next_u64() % 3) as u8; // nblkptr
                input[13] = (rng.next_u64() % 2) as u8; // extra slots
                input[9..11].copy_from_slice(&[1 + (rng.next_u64() % 8) as u8, 0]);
                input[17..25].copy_from_slice(&(rng.next_u64() % 64).to_le_bytes());
            }
            if i % 5 == 0 && len >= 1025 {
                // An object set whose meta-dnode is the shaped dnode above.
                let copy = input[1..513].to_vec();
                input[1..513].copy_from_slice(&copy);
            }
            fuzz_check(&input);
        }
    }
}
