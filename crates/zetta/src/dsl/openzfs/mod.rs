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
