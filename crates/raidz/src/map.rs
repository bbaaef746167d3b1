//! RAID-Z geometry: where each sector of a block lives on the children.
//!
//! ZFS counterpart: `vdev_raidz_map_alloc` and `vdev_raidz_asize` in
//! vdev_raidz.c.
//!
//! Theory. A raidz vdev with n children has one linear address space of
//! sectors (sector = 1 << ashift bytes); sector b lives on child `b % n` at
//! child sector `b / n`. So the address space is a grid of rows n sectors
//! wide, and a block at sector b0 fills that grid column-major starting at
//! child f = b0 % n. Every block is its own stripe (variable width):
//!
//! ```text
//!   s  = psize / sector          data sectors
//!   d  = n - p                   data columns per row
//!   q  = s / d, r = s % d        full rows, sectors left over
//!   bc = r == 0 ? 0 : r + p      "big" columns, which get q + 1 sectors
//!   columns = q == 0 ? s + p : n
//!   asize = roundup(s + p * ceil(s / d), p + 1) sectors
//! ```
//!
//! Columns 0..p are parity, then the data columns, each holding a contiguous
//! slice of the block in order. Column i is on child (f + i) % n at child
//! sector b0 / n, plus one if f + i wrapped past the last child.
//!
//! Worked example, raidz2 of 6 children, ashift 12, a 128 KiB block at raidz
//! sector 9: s = 32, d = 4, q = 8, r = 0, bc = 0, six columns of 8 sectors.
//! f = 9 % 6 = 3, row = 9 / 6 = 1, so
//!
//! ```text
//!   column  0(P) 1(Q) 2(D0) 3(D1) 4(D2) 5(D3)
//!   child   3    4    5     0     1     2
//!   sector  1    1    1     2     2     2      (child sector, 4 KiB each)
//! ```
//!
//! and asize = 32 + 2 * 8 = 48 sectors, already a multiple of p + 1 = 3.
//! A 1-sector block on raidz1 has q = 0, r = 1, bc = 2: one parity and one
//! data sector on two children, asize 2 sectors.
//!
//! Rounding asize up to a multiple of p + 1 leaves "skip" sectors that are
//! allocated but never written; it guarantees every free gap the allocator
//! leaves can hold at least one minimal (1 data + p parity) block.
//!
//! Invariants of a map: the sectors its columns cover are exactly the raidz
//! sectors b0 .. b0 + s + p * ceil(s / d), each once; parity columns all
//! have the size of column 0 (the largest); data column sizes add up to
//! psize; no column is empty; asize >= the sectors covered.
//!
//! As OpenZFS (`vdev_raidz_map_alloc`), a raidz1 block whose offset has bit 20
//! set (an odd megabyte) swaps the child and child offset of its first two
//! columns (parity and the first data column, which have the same size): an
//! old trick to spread parity, part of the on-disk format.

use crate::error::RaidzError;

/// Highest parity level (raidz3).
pub const PARITY_MAX: usize = 3;
/// Most children a raidz vdev may have. Keeps every data-column coefficient
/// 2^i (i < 255) distinct, which the reconstruction matrices rely on.
pub const CHILDREN_MAX: usize = 255;
/// Smallest sector shift (512-byte sectors).
pub const ASHIFT_MIN: u32 = 9;
/// Largest sector shift (64 KiB sectors).
pub const ASHIFT_MAX: u32 = 16;
/// raidz1 swaps its first two columns when a block's offset has this bit set.
const RAIDZ1_SWAP_BIT: u64 = 1 << 20;
/// Largest block a map is built for (ZFS SPA_MAXBLOCKSIZE, 16 MiB).
pub const BLOCK_SIZE_MAX_BYTES: u64 = 16 << 20;

/// One column of a block's stripe: a contiguous run of sectors on one child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaidzColumn {
    /// Index of the child device, 0..children.
    pub child: usize,
    /// Byte offset on that child.
    pub child_offset_bytes: u64,
    /// Bytes in this column (a whole number of sectors, never zero).
    pub size_bytes: u64,
    /// Columns 0..parity are parity (P, Q, R in order).
    pub is_parity: bool,
}

/// The layout of one block on a raidz vdev.
#[derive(Clone, Debug)]
pub struct RaidzMap {
    /// Number of children of the vdev.
    pub children: usize,
    /// Parity level p; `columns[..parity]` are the parity columns.
    pub parity: usize,
    /// Sector shift of the vdev.
    pub ashift: u32,
    /// Parity columns first, then data columns in block order.
    pub columns: Vec<RaidzColumn>,
    /// Bytes allocated for the block, skip sectors included.
    pub asize_bytes: u64,
    /// Bytes of data in the block.
    pub psize_bytes: u64,
}

impl RaidzMap {
    /// Sector size of the vdev in bytes.
    pub fn sector_size_bytes(&self) -> u64 {
        1u64 << self.ashift
    }

    /// Number of data columns in this block's stripe (may be < children - p).
    pub fn data_column_count(&self) -> usize {
        self.columns.len() - self.parity
    }

    /// Sectors allocated to the block but never written (rounding to p + 1).
    pub fn skip_sectors(&self) -> u64 {
        let written_bytes: u64 = self.columns.iter().map(|c| c.size_bytes).sum();
        (self.asize_bytes - written_bytes) >> self.ashift
    }
}

/// Checks a raidz vdev's shape: parity 1..=3, parity < children <= 255,
/// ashift in range. Call it when a vdev is opened from its label.
pub fn raidz_geometry_check(children: usize, parity: usize, ashift: u32) -> Result<(), RaidzError> {
    if parity == 0 || parity > PARITY_MAX {
        return Err(RaidzError::ParityInvalid { parity });
    }
    if children <= parity || children > CHILDREN_MAX {
        return Err(RaidzError::ChildrenInvalid { children, parity });
    }
    if !(ASHIFT_MIN..=ASHIFT_MAX).contains(&ashift) {
        return Err(RaidzError::AshiftInvalid { ashift });
    }
    Ok(())
}

/// Allocated bytes for a block of `psize_bytes` (rounded up to whole sectors),
/// with parity and skip sectors. Zero for a zero-sized block.
pub fn raidz_asize_checked(
    children: usize,
    parity: usize,
    ashift: u32,
    psize_bytes: u64,
) -> Result<u64, RaidzError> {
    raidz_geometry_check(children, parity, ashift)?;
    let sector_size_bytes = 1u64 << ashift;
    let data_sectors = psize_bytes.div_ceil(sector_size_bytes);
    let data_columns = (children - parity) as u64;
    let rows = data_sectors.div_ceil(data_columns);
    let parity_u64 = parity as u64;
    let sectors = data_sectors
        .checked_add(parity_u64 * rows)
        .ok_or(RaidzError::AddressOverflow)?;
    let sectors_rounded = sectors
        .div_ceil(parity_u64 + 1)
        .checked_mul(parity_u64 + 1)
        .ok_or(RaidzError::AddressOverflow)?;
    sectors_rounded
        .checked_mul(sector_size_bytes)
        .ok_or(RaidzError::AddressOverflow)
}

/// Allocated bytes for a block of `psize_bytes`; see [`raidz_asize_checked`].
/// Saturates at `u64::MAX` for absurd sizes.
///
/// # Panics
/// If the geometry is invalid: vdev geometry is validated once at open
/// ([`raidz_geometry_check`]), so a bad one here is a broken invariant.
pub fn raidz_asize(children: usize, parity: usize, ashift: u32, psize_bytes: u64) -> u64 {
    match raidz_asize_checked(children, parity, ashift, psize_bytes) {
        Ok(asize_bytes) => asize_bytes,
        Err(RaidzError::AddressOverflow) => u64::MAX,
        Err(error) => panic!("raidz_asize on an unchecked geometry: {error}"),
    }
}

/// Usable bytes of a raidz vdev for capacity reporting: (n - p) children's
/// worth. Zero if there are no data columns; saturates on overflow.
pub fn raidz_usable_capacity_bytes(children: usize, parity: usize, child_size_bytes: u64) -> u64 {
    (children.saturating_sub(parity) as u64).saturating_mul(child_size_bytes)
}

/// Lays out a block of `psize_bytes` at raidz address `offset_bytes`.
/// Every argument is checked; bad ones (e.g. from a corrupt block pointer)
/// give an error.
pub fn raidz_map(
    children: usize,
    parity: usize,
    ashift: u32,
    offset_bytes: u64,
    psize_bytes: u64,
) -> Result<RaidzMap, RaidzError> {
    raidz_geometry_check(children, parity, ashift)?;
    let sector_size_bytes = 1u64 << ashift;
    if psize_bytes == 0 {
        return Err(RaidzError::SizeZero);
    }
    if psize_bytes > BLOCK_SIZE_MAX_BYTES {
        return Err(RaidzError::SizeTooLarge {
            psize_bytes,
            size_bytes_max: BLOCK_SIZE_MAX_BYTES,
        });
    }
    if !psize_bytes.is_multiple_of(sector_size_bytes) {
        return Err(RaidzError::SizeMisaligned {
            psize_bytes,
            sector_size_bytes,
        });
    }
    if !offset_bytes.is_multiple_of(sector_size_bytes) {
        return Err(RaidzError::OffsetMisaligned {
            offset_bytes,
            sector_size_bytes,
        });
    }
    let asize_bytes = raidz_asize_checked(children, parity, ashift, psize_bytes)?;
    offset_bytes
        .checked_add(asize_bytes)
        .ok_or(RaidzError::AddressOverflow)?;

    let children_u64 = children as u64;
    let start_sector = offset_bytes >> ashift;
    let data_sectors = psize_bytes >> ashift;
    let data_columns = (children - parity) as u64;
    let full_rows = data_sectors / data_columns;
    let remainder_sectors = data_sectors % data_columns;
    let big_columns = if remainder_sectors == 0 {
        0
    } else {
        remainder_sectors + parity as u64
    };
    let column_count = if full_rows == 0 {
        data_sectors + parity as u64
    } else {
        children_u64
    };
    let first_child = start_sector % children_u64;
    let child_sector_base = start_sector / children_u64;

    let mut columns: Vec<RaidzColumn> = (0..column_count)
        .map(|index| {
            let unwrapped_child = first_child + index;
            let wrapped = unwrapped_child >= children_u64;
            let child_sector = child_sector_base + u64::from(wrapped);
            let sectors = full_rows + u64::from(index < big_columns);
            RaidzColumn {
                child: (unwrapped_child % children_u64) as usize,
                child_offset_bytes: child_sector << ashift,
                size_bytes: sectors << ashift,
                is_parity: (index as usize) < parity,
            }
        })
        .collect();
    if parity == 1 && offset_bytes & RAIDZ1_SWAP_BIT != 0 {
        debug_assert_eq!(columns[0].size_bytes, columns[1].size_bytes);
        let (first, second) = (columns[0].clone(), columns[1].clone());
        columns[0].child = second.child;
        columns[0].child_offset_bytes = second.child_offset_bytes;
        columns[1].child = first.child;
        columns[1].child_offset_bytes = first.child_offset_bytes;
    }
    let map = RaidzMap {
        children,
        parity,
        ashift,
        columns,
        asize_bytes,
        psize_bytes,
    };
    debug_assert_eq!(
        map.columns[parity..]
            .iter()
            .map(|c| c.size_bytes)
            .sum::<u64>(),
        psize_bytes
    );
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;

    fn column(
        child: usize,
        child_offset_bytes: u64,
        size_bytes: u64,
        is_parity: bool,
    ) -> RaidzColumn {
        RaidzColumn {
            child,
            child_offset_bytes,
            size_bytes,
            is_parity,
        }
    }

    // Why: the smallest block is the classic raidz corner: it must touch
    // exactly p + 1 children, not the whole row.
    #[test]
    fn map_one_sector_raidz1_uses_two_columns() {
        let map = raidz_map(5, 1, 9, 0, 512).expect("valid");
        assert_eq!(
            map.columns,
            vec![column(0, 0, 512, true), column(1, 0, 512, false)]
        );
        assert_eq!(map.asize_bytes, 2 * 512);
        assert_eq!(map.skip_sectors(), 0);
    }

    // Why: OpenZFS's raidz1 puts parity and the first data column on each
    // other's children for blocks at an odd megabyte (vdev_raidz_map_alloc);
    // without the swap a pool's raidz1 blocks there are unreadable to OpenZFS.
    #[test]
    fn raidz1_swaps_first_two_columns_on_odd_megabytes() {
        let odd = 1u64 << 20; // raidz sector 2048: child 3, child sector 409
        let map = raidz_map(5, 1, 9, odd, 512).expect("valid");
        assert_eq!(
            map.columns,
            vec![
                column(4, 409 * 512, 512, true),
                column(3, 409 * 512, 512, false)
            ]
        );
        let even = raidz_map(5, 1, 9, odd - 512, 512).expect("valid");
        assert_eq!(even.columns[0].child, 2);
        assert_eq!(even.columns[1].child, 3);
        let raidz2 = raidz_map(5, 2, 9, odd, 512).expect("valid");
        assert_eq!(raidz2.columns[0].child, 3);
    }

    // Why: golden layout of the common 128K record on raidz2 (the worked
    // example in the module header), including wrap-around to the next row.
    #[test]
    fn map_128k_raidz2_six_children_golden() {
        let sector = 4 * KIB;
        let map = raidz_map(6, 2, 12, 9 * sector, 128 * KIB).expect("valid");
        let expected = vec![
            column(3, sector, 32 * KIB, true),
            column(4, sector, 32 * KIB, true),
            column(5, sector, 32 * KIB, false),
            column(0, 2 * sector, 32 * KIB, false),
            column(1, 2 * sector, 32 * KIB, false),
            column(2, 2 * sector, 32 * KIB, false),
        ];
        assert_eq!(map.columns, expected);
        assert_eq!(map.asize_bytes, 48 * sector);
        assert_eq!(raidz_asize(6, 2, 12, 128 * KIB), 48 * sector);
    }

    // Why: a block starting on the last child must wrap to child 0 one child
    // sector further on; an uneven block gives big columns first.
    #[test]
    fn map_wraps_at_last_child() {
        // raidz1 of 4, 512-byte sectors, start at raidz sector 7 (child 3,
        // child sector 1), 5 data sectors: d = 3, q = 1, r = 2, bc = 3.
        let map = raidz_map(4, 1, 9, 7 * 512, 5 * 512).expect("valid");
        let expected = vec![
            column(3, 512, 1024, true),
            column(0, 1024, 1024, false),
            column(1, 1024, 1024, false),
            column(2, 1024, 512, false),
        ];
        assert_eq!(map.columns, expected);
        // 5 + 1 * 2 = 7 sectors, rounded to a multiple of 2 = 8.
        assert_eq!(map.asize_bytes, 8 * 512);
        assert_eq!(map.skip_sectors(), 1);
    }

    // Why: asize rounding to p + 1 is what keeps free gaps usable; check the
    // formula at the sizes where rounding kicks in.
    #[test]
    fn asize_rounds_to_parity_plus_one() {
        // raidz2 of 6 (d = 4): 1 sector -> 1 + 2 = 3; 2 -> 2 + 2 = 4 -> 6;
        // 5 -> 5 + 4 = 9; 8 -> 8 + 4 = 12.
        for (sectors, expected) in [(1, 3), (2, 6), (5, 9), (8, 12)] {
            assert_eq!(
                raidz_asize(6, 2, 9, sectors * 512),
                expected * 512,
                "{sectors}"
            );
        }
        // raidz1 of 5 (d = 4): 2 -> 3 -> 4; 3 -> 4; 5 -> 7 -> 8.
        for (sectors, expected) in [(2, 4), (3, 4), (5, 8)] {
            assert_eq!(
                raidz_asize(5, 1, 9, sectors * 512),
                expected * 512,
                "{sectors}"
            );
        }
        // raidz3 of 7 (d = 4): 1 -> 4; 4 -> 7 -> 8.
        assert_eq!(raidz_asize(7, 3, 12, 4096), 4 * 4096);
        assert_eq!(raidz_asize(7, 3, 12, 4 * 4096), 8 * 4096);
        // psize is rounded up to whole sectors, like ZFS does.
        assert_eq!(raidz_asize(5, 1, 9, 100), 2 * 512);
        assert_eq!(raidz_asize(5, 1, 9, 0), 0);
        assert_eq!(raidz_asize(5, 1, 9, u64::MAX), u64::MAX);
    }

    // Why: the sectors a map covers must be exactly the contiguous run of
    // raidz sectors from the block start (no overlap with neighbours), and
    // fit in asize; checked over many shapes.
    #[test]
    fn map_covers_contiguous_sectors() {
        for children in 2..=12usize {
            for parity in 1..=PARITY_MAX.min(children - 1) {
                for sectors in 1..=40u64 {
                    for start_sector in [0u64, 1, 5, 11, 12, 1000] {
                        let map = raidz_map(children, parity, 9, start_sector * 512, sectors * 512)
                            .expect("valid");
                        let mut covered: Vec<u64> = Vec::new();
                        for column in &map.columns {
                            for index in 0..(column.size_bytes >> 9) {
                                let child_sector = (column.child_offset_bytes >> 9) + index;
                                covered.push(child_sector * children as u64 + column.child as u64);
                            }
                        }
                        covered.sort_unstable();
                        let expected: Vec<u64> =
                            (start_sector..start_sector + covered.len() as u64).collect();
                        assert_eq!(covered, expected);
                        let data_columns = (children - parity) as u64;
                        let written = sectors + parity as u64 * sectors.div_ceil(data_columns);
                        assert_eq!(covered.len() as u64, written);
                        assert!(written * 512 <= map.asize_bytes);
                        assert_eq!(map.asize_bytes % ((parity as u64 + 1) * 512), 0);
                        let parity_size = map.columns[0].size_bytes;
                        assert!(map.columns.iter().all(|c| c.size_bytes <= parity_size));
                        assert!(map.columns[..parity]
                            .iter()
                            .all(|c| c.size_bytes == parity_size));
                    }
                }
            }
        }
    }

    // Why: bad geometry or a corrupt block pointer must give errors, not
    // panics or wrong layouts.
    #[test]
    fn map_rejects_bad_input() {
        assert_eq!(
            raidz_map(5, 0, 9, 0, 512).unwrap_err(),
            RaidzError::ParityInvalid { parity: 0 }
        );
        assert_eq!(
            raidz_map(5, 4, 9, 0, 512).unwrap_err(),
            RaidzError::ParityInvalid { parity: 4 }
        );
        assert!(matches!(
            raidz_map(2, 2, 9, 0, 512),
            Err(RaidzError::ChildrenInvalid { .. })
        ));
        assert!(matches!(
            raidz_map(256, 1, 9, 0, 512),
            Err(RaidzError::ChildrenInvalid { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 8, 0, 512),
            Err(RaidzError::AshiftInvalid { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 17, 0, 1 << 17),
            Err(RaidzError::AshiftInvalid { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 9, 100, 512),
            Err(RaidzError::OffsetMisaligned { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 12, 512, 4096),
            Err(RaidzError::OffsetMisaligned { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 9, 0, 513),
            Err(RaidzError::SizeMisaligned { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 9, 0, 0),
            Err(RaidzError::SizeZero)
        ));
        assert!(matches!(
            raidz_map(5, 1, 9, 0, BLOCK_SIZE_MAX_BYTES + 512),
            Err(RaidzError::SizeTooLarge { .. })
        ));
        assert!(matches!(
            raidz_map(5, 1, 9, u64::MAX - 511, 512),
            Err(RaidzError::AddressOverflow)
        ));
        assert!(raidz_map(5, 1, 9, 0, BLOCK_SIZE_MAX_BYTES).is_ok());
    }

    // Why: capacity reporting promised in the issue: (n - p) × child size.
    #[test]
    fn usable_capacity() {
        let gib = 1u64 << 30;
        assert_eq!(raidz_usable_capacity_bytes(6, 1, gib), 5 * gib);
        assert_eq!(raidz_usable_capacity_bytes(8, 2, gib), 6 * gib);
        assert_eq!(raidz_usable_capacity_bytes(2, 3, gib), 0);
        assert_eq!(raidz_usable_capacity_bytes(8, 2, u64::MAX), u64::MAX);
    }
}
