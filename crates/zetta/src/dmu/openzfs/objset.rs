//! OpenZFS's `objset_phys_t`: the root block of an object set (the MOS, a filesystem, a
//! zvol), and the way from an object number to its dnode.
//!
//! ZFS counterpart: `include/sys/dmu_objset.h` (`objset_phys_t`, `OBJSET_PHYS_SIZE_V1..3`,
//! `OBJSET_FLAG_*`), `include/sys/zil.h` (`zil_header_t`, kept raw here),
//! `module/zfs/dmu_objset.c` (which accounting dnodes a block of each size carries).
//!
//! ```text
//! 0     os_meta_dnode      dnode_phys_t (512): the object whose data is every dnode
//! 512   os_zil_header      zil_header_t (192, raw)
//! 704   os_type   (u64)    0 none, 1 META, 2 ZFS, 3 ZVOL
//! 712   os_flags  (u64)    USERACCOUNTING_COMPLETE 1, USEROBJACCOUNTING_COMPLETE 2,
//!                          PROJECTQUOTA_COMPLETE 4
//! 720   os_portable_mac[32]
//! 752   os_local_mac[32]
//! 784   pad (240)                                 -- a 1 KiB block (pool v < 15) ends here
//! 1024  os_userused_dnode  (512)
//! 1536  os_groupused_dnode (512)                  -- a 2 KiB block ends here
//! 2048  os_projectused_dnode (512), pad to 4096   -- 4 KiB (project_quota feature)
//! ```
//!
//! The accounting dnodes exist only when the block is large enough to hold them: OpenZFS
//! decides by the block's logical size, so this does too.
//!
//! Object `n`'s dnode lies at byte `n * 512` of the meta-dnode's data (dnode blocks are
//! 16 KiB: 32 slots). A large dnode takes its slot and the next `extra_slots` ones, always
//! within one dnode block.
//!
//! Invariants: never panics on outside bytes; a block that is not 1, 2 or 4 KiB long is an
//! error, as is any corrupt dnode inside.

use super::dnode::{
    BlockReader, DmuReadError, DnodeCorrupt, DnodePhys, DNODE_MAX_SLOTS, DNODE_SLOT_BYTES,
};
use crate::byteorder::ByteOrder;

pub const ZIL_HEADER_BYTES: usize = 192;
pub const OBJSET_PHYS_SIZE_V1: usize = 1024;
pub const OBJSET_PHYS_SIZE_V2: usize = 2048;
pub const OBJSET_PHYS_SIZE_V3: usize = 4096;
const MAC_BYTES: usize = 32;
/// `os_pad0`: bytes 784..1024, no meaning to OpenZFS (zero as it writes them).
pub const OBJSET_PAD0_OFFSET: usize = 784;
pub const OBJSET_PAD0_BYTES: usize = 240;

pub const OS_TYPE_NONE: u64 = 0;
pub const OS_TYPE_META: u64 = 1;
pub const OS_TYPE_ZFS: u64 = 2;
pub const OS_TYPE_ZVOL: u64 = 3;

/// One decoded `objset_phys_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjsetPhys {
    pub order: ByteOrder,
    pub meta_dnode: DnodePhys,
    pub zil_header: [u8; ZIL_HEADER_BYTES],
    pub os_type: u64,
    pub flags: u64,
    pub portable_mac: [u8; MAC_BYTES],
    pub local_mac: [u8; MAC_BYTES],
    /// Present in 2 KiB and larger blocks (`DMU_USERUSED_OBJECT`, object -1).
    pub userused: Option<DnodePhys>,
    /// Present in 2 KiB and larger blocks (`DMU_GROUPUSED_OBJECT`, object -2).
    pub groupused: Option<DnodePhys>,
    /// Present in 4 KiB blocks (`DMU_PROJECTUSED_OBJECT`, object -3).
    pub projectused: Option<DnodePhys>,
}

fn array<const N: usize>(buf: &[u8], offset: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&buf[offset..offset + N]);
    out
}

impl ObjsetPhys {
    /// Decodes an objset block (its logical bytes, in `order`).
    pub fn decode(buf: &[u8], order: ByteOrder) -> Result<ObjsetPhys, DnodeCorrupt> {
        if ![
            OBJSET_PHYS_SIZE_V1,
            OBJSET_PHYS_SIZE_V2,
            OBJSET_PHYS_SIZE_V3,
        ]
        .contains(&buf.len())
        {
            return Err(DnodeCorrupt::Field {
                field: "objset block size",
                value: buf.len() as u64,
            });
        }
        let dnode_at = |offset: usize| -> Result<DnodePhys, DnodeCorrupt> {
            // The embedded dnodes are single-slot: nothing past their 512 bytes is theirs.
            let dn = DnodePhys::decode(&buf[offset..offset + DNODE_SLOT_BYTES], order)?;
            Ok(dn)
        };
        let meta_dnode = dnode_at(0)?;
        let has_userused = buf.len() >= OBJSET_PHYS_SIZE_V2;
        let has_projectused = buf.len() >= OBJSET_PHYS_SIZE_V3;
        Ok(ObjsetPhys {
            order,
            meta_dnode,
            zil_header: array(buf, 512),
            os_type: order.u64_at(buf, 704)?,
            flags: order.u64_at(buf, 712)?,
            portable_mac: array(buf, 720),
            local_mac: array(buf, 752),
            userused: has_userused.then(|| dnode_at(1024)).transpose()?,
            groupused: has_userused.then(|| dnode_at(1536)).transpose()?,
            projectused: has_projectused.then(|| dnode_at(2048)).transpose()?,
        })
    }

    /// The block's size: 4 KiB with a project-used dnode, 2 KiB with user/group-used ones,
    /// else 1 KiB (the three sizes `decode` accepts).
    pub fn block_size(&self) -> usize {
        if self.projectused.is_some() {
            OBJSET_PHYS_SIZE_V3
        } else if self.userused.is_some() || self.groupused.is_some() {
            OBJSET_PHYS_SIZE_V2
        } else {
            OBJSET_PHYS_SIZE_V1
        }
    }

    /// The block's bytes in `self.order` (the mirror of `decode`: a block `decode` accepts
    /// re-encodes to the same bytes when its pads are zero, as OpenZFS writes them). A
    /// 2 KiB or larger block carries both user and group dnodes (a missing one is free);
    /// every embedded dnode must be single-slot.
    pub fn encode(&self) -> Result<Vec<u8>, DnodeCorrupt> {
        let mut out = vec![0u8; self.block_size()];
        let order = self.order;
        let put_dnode = |out: &mut [u8], dn: &DnodePhys, at: usize| -> Result<(), DnodeCorrupt> {
            if dn.extra_slots != 0 {
                return Err(DnodeCorrupt::Field {
                    field: "dn_extra_slots",
                    value: dn.extra_slots.into(),
                });
            }
            let dn = DnodePhys {
                order,
                ..dn.clone()
            };
            dn.encode(&mut out[at..at + DNODE_SLOT_BYTES])
        };
        put_dnode(&mut out, &self.meta_dnode, 0)?;
        if out.len() >= OBJSET_PHYS_SIZE_V2 {
            let free = DnodePhys::free(self.order);
            put_dnode(&mut out, self.userused.as_ref().unwrap_or(&free), 1024)?;
            put_dnode(&mut out, self.groupused.as_ref().unwrap_or(&free), 1536)?;
        }
        if let Some(dn) = &self.projectused {
            put_dnode(&mut out, dn, 2048)?;
        }
        out[512..512 + ZIL_HEADER_BYTES].copy_from_slice(&self.zil_header);
        self.order.put_u64(&mut out, 704, self.os_type)?;
        self.order.put_u64(&mut out, 712, self.flags)?;
        out[720..752].copy_from_slice(&self.portable_mac);
        out[752..784].copy_from_slice(&self.local_mac);
        Ok(out)
    }

    /// Object `object`'s dnode, or `None` if its slot is free or lies in a hole of the
    /// meta-dnode (never-allocated objects).
    pub fn dnode<R: BlockReader>(
        &self,
        object: u64,
        reader: &mut R,
    ) -> Result<Option<DnodePhys>, DmuReadError<R::Error>> {
        dnode_in(&self.meta_dnode, object, reader)
    }
}

/// Object `object`'s dnode in the data of `meta_dnode` (see `ObjsetPhys::dnode`).
pub fn dnode_in<R: BlockReader>(
    meta_dnode: &DnodePhys,
    object: u64,
    reader: &mut R,
) -> Result<Option<DnodePhys>, DmuReadError<R::Error>> {
    let bs = meta_dnode.data_block_size() as u64;
    let slot = DNODE_SLOT_BYTES as u64;
    if bs < slot || !bs.is_multiple_of(slot) || bs > (DNODE_MAX_SLOTS * DNODE_SLOT_BYTES) as u64 * 4
    {
        return Err(DnodeCorrupt::Field {
            field: "meta-dnode dn_datablkszsec",
            value: meta_dnode.datablkszsec.into(),
        }
        .into());
    }
    let Some(byte) = object.checked_mul(slot) else {
        return Ok(None);
    };
    let Some(block) = meta_dnode.read_block(byte / bs, reader)? else {
        return Ok(None);
    };
    let at = (byte % bs) as usize;
    let dn = DnodePhys::decode(&block.data[at..], block.order)?;
    Ok((!dn.is_free()).then_some(dn))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: objset blocks come off the disk in three sizes; the accounting dnodes' presence
    // follows the size, and no bytes may panic the decoder.
    #[test]
    fn objset_sizes_decide_the_accounting_dnodes_and_random_bytes_never_panic() {
        for (size, users, projects) in [
            (1024, false, false),
            (2048, true, false),
            (4096, true, true),
        ] {
            let mut buf = vec![0u8; size];
            ByteOrder::Big.put_u64(&mut buf, 704, OS_TYPE_ZFS).unwrap();
            let os = ObjsetPhys::decode(&buf, ByteOrder::Big).unwrap();
            assert_eq!(os.os_type, OS_TYPE_ZFS);
            assert_eq!(os.userused.is_some(), users);
            assert_eq!(os.groupused.is_some(), users);
            assert_eq!(os.projectused.is_some(), projects);
        }
        assert!(ObjsetPhys::decode(&[0u8; 1000], ByteOrder::Little).is_err());
        let mut rng = crate::rand::SeededRng::new(11);
        for _ in 0..3000 {
            let size = [1024, 2048, 4096, 100][(rng.next_u64() % 4) as usize];
            let mut buf = vec![0u8; size];
            rng.fill(&mut buf);
            if let Ok(os) = ObjsetPhys::decode(&buf, ByteOrder::Little) {
                let mut reader =
                    |_: &[u8; 128], _: ByteOrder| -> Result<Vec<u8>, ()> { Ok(vec![0x5a; 16384]) };
                let _ = os.dnode(rng.next_u64() % 4096, &mut reader);
            }
        }
    }
}
