//! Newtypes shared by every layer: transaction group numbers, globally unique ids, object
//! numbers, and the three sizes a block has (logical, physical, allocated).
//!
//! Counterpart: the `uint64_t` typedefs scattered through OpenZFS (`txg`, `guid`, `object`),
//! which we give distinct types so that a txg can never be passed where a size is expected.
//! Invariant: these are plain values; on disk they are always little-endian u64.

use std::fmt;

macro_rules! newtype_u64 {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u64);

        impl $name {
            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

newtype_u64!(
    /// A transaction group number. Txg 0 is "never"; the first commit of a new pool is txg 4
    /// (like OpenZFS, which reserves the first few for creation).
    Txg
);
newtype_u64!(
    /// A 64-bit random identifier of a pool, vdev or dataset. Zero means "unset".
    Guid
);
newtype_u64!(
    /// An object number within an object set.
    ObjectId
);

impl Txg {
    pub fn next(self) -> Txg {
        Txg(self.0 + 1)
    }
}

impl Guid {
    /// A fresh random non-zero guid.
    pub fn random() -> Guid {
        loop {
            let value = crate::rand::random_u64();
            if value != 0 {
                return Guid(value);
            }
        }
    }
}

/// Rounds `value` up to a multiple of `1 << shift`.
pub fn round_up_shift(value: u64, shift: u32) -> u64 {
    let mask = (1u64 << shift) - 1;
    (value + mask) & !mask
}

/// Rounds `value` down to a multiple of `1 << shift`.
pub fn round_down_shift(value: u64, shift: u32) -> u64 {
    value & !((1u64 << shift) - 1)
}

pub const SECTOR_SHIFT_MIN: u32 = 9;
pub const SECTOR_SHIFT_MAX: u32 = 16;
pub const ASHIFT_DEFAULT: u32 = 12;
/// Largest record (and so block) the pool stores: 16 MiB, like OpenZFS's SPA_MAXBLOCKSIZE.
pub const BLOCK_SIZE_MAX_BYTES: u64 = 16 << 20;
/// Smallest file vdev `zpool create` accepts (OpenZFS SPA_MINDEVSIZE).
pub const DEVICE_SIZE_MIN_BYTES: u64 = 64 << 20;
