//! OpenZFS's dataset-layer structures as they lie in the MOS of a real pool (OpenZFS
//! `include/sys/dsl_dir.h`, `dsl_dataset.h`, `dmu.h`, `module/zfs/dsl_prop.c`).
//!
//! These are decoders of outside bytes: each takes the bonus of one MOS object (or a props
//! ZAP's entries, already decoded by the ZAP layer) and the byte order its block recorded,
//! and returns the structure or a typed error; none panics on any input. Zetta's own DSL
//! (`crate::dsl::phys`) is untouched.
//!
//! - `objdir`: the keys of the MOS object directory (object 1): where `root_dataset`,
//!   `config`, the feature ZAPs, ... live.
//! - `dir`: `dsl_dir_phys_t`, the 256-byte bonus of a DSL directory.
//! - `dataset`: `dsl_dataset_phys_t`, the 320-byte bonus of a DSL dataset (head or snapshot).
//! - `prop`: a props ZAP's values and the resolution of a property's value and SOURCE along
//!   the dir chain, the rules of `dsl_prop_get_ds`/`dsl_prop_get_dd`.
//!
//! Byte diagrams: docs/ONDISK.md, "OpenZFS DSL and ZPL".

pub mod dataset;
pub mod dir;
pub mod index;
pub mod objdir;
pub mod prop;
pub mod view;

use crate::byteorder::ByteOrder;
use std::fmt;

/// A bonus too short for the structure it should hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BonusTooShort {
    /// What the object should hold ("dsl_dir_phys_t", ...).
    pub structure: &'static str,
    /// Bytes the structure needs.
    pub needed: usize,
    /// Bytes the bonus has.
    pub len: usize,
}

impl fmt::Display for BonusTooShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a {}-byte bonus cannot hold a {}-byte {}",
            self.len, self.needed, self.structure
        )
    }
}

impl std::error::Error for BonusTooShort {}

/// The first `N` u64 words of a bonus that must hold `needed` bytes.
pub(crate) fn bonus_words<const N: usize>(
    bonus: &[u8],
    order: ByteOrder,
    structure: &'static str,
    needed: usize,
) -> Result<[u64; N], BonusTooShort> {
    let short = BonusTooShort {
        structure,
        needed,
        len: bonus.len(),
    };
    if bonus.len() < needed {
        return Err(short);
    }
    order.u64s_at::<N>(bonus, 0).map_err(|_| short)
}

/// The value of one ZAP entry as the ZAP layer decodes it: integers of the entry's integer
/// width (1-byte entries are `Bytes`, wider ones widened to u64, in the ZAP's byte order
/// already resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZapValue {
    /// An entry of 1-byte integers (strings are stored this way, NUL included).
    Bytes(Vec<u8>),
    /// An entry of 2-, 4- or 8-byte integers.
    Ints(Vec<u64>),
}

impl ZapValue {
    /// The single integer of a one-integer entry.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            ZapValue::Ints(v) if v.len() == 1 => Some(v[0]),
            _ => None,
        }
    }
}

/// Hex to bytes, for the golden vectors of this module's tests.
#[cfg(test)]
pub(crate) fn unhex(s: &str) -> Vec<u8> {
    let s: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    s.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// The same u64 words in the other byte order.
#[cfg(test)]
pub(crate) fn swap_words(b: &[u8]) -> Vec<u8> {
    b.chunks(8)
        .flat_map(|w| w.iter().rev().copied().collect::<Vec<u8>>())
        .collect()
}

/// OpenZFS `dmu_object_type_t` numbers of the MOS objects the DSL and the object directory
/// use (`include/sys/dmu.h`); `crate::dmu::object_type` has the ones the DMU itself writes.
pub mod ot {
    /// `DMU_OT_PACKED_NVLIST_SIZE`: the bonus of a packed nvlist (its size, one u64).
    pub const PACKED_NVLIST_SIZE: u8 = 4;
    /// `DMU_OT_BPOBJ` and its bonus `DMU_OT_BPOBJ_HDR` (`bpobj_phys_t`).
    pub const BPOBJ: u8 = 5;
    pub const BPOBJ_HDR: u8 = 6;
    /// `DMU_OT_DSL_DIR_CHILD_MAP`: a dir's children, name → dir object.
    pub const DSL_DIR_CHILD_MAP: u8 = 13;
    /// `DMU_OT_DSL_DS_SNAP_MAP`: a head's snapshots, name → dataset object.
    pub const DSL_DS_SNAP_MAP: u8 = 14;
    /// `DMU_OT_DSL_PROPS`: a dir's (or a snapshot's) properties.
    pub const DSL_PROPS: u8 = 15;
    /// `DMU_OT_NEXT_CLONES`: a snapshot's clones (`ds_next_clones_obj`), hex name → head.
    pub const NEXT_CLONES: u8 = 37;
    /// `DMU_OT_DSL_CLONES`: the clones of a dir's snapshots (`dd_clones`), hex name → head.
    pub const DSL_CLONES: u8 = 52;
    /// `DMU_OT_POOL_PROPS`: the pool properties (`zpool set`).
    pub const POOL_PROPS: u8 = 31;
    /// `DMU_OT_USERREFS`: a snapshot's user holds, tag → creation time.
    pub const USERREFS: u8 = 41;
    /// `DMU_OTN_ZAP_METADATA`: a "new type" ZAP holding metadata (`DMU_OT_NEWTYPE |
    /// DMU_OT_METADATA | DMU_BSWAP_ZAP`), the type of the feature ZAPs.
    pub const ZAP_METADATA: u8 = 0x80 | 0x40 | 4;
}
