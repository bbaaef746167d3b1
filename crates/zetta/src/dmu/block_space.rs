//! The space a set of blocks takes, counted the three ways the dataset layer needs
//! (OpenZFS's used / compressed / uncompressed triple in `dsl_dataset_block_born`):
//! allocated bytes of every copy, deflated like USED (raidz parity and padding left out);
//! physical bytes of one copy (what compression left); logical bytes (what the program
//! wrote, metadata included). `compressratio` is logical over physical.
//!
//! An object set adds up what it gives birth to and what it frees as it syncs; the dataset
//! layer turns those sums into REFER, USED and the logical figures at the same commit.

use crate::vdev::Vdev;
use crate::zio::blkptr::BlockPointer;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockSpace {
    /// `dsize`: allocated bytes of all copies, deflated (the unit of USED and REFER).
    pub allocated_bytes: u64,
    /// `psize` of one copy: the bytes compression kept.
    pub physical_bytes: u64,
    /// `lsize`: the block's logical size.
    pub logical_bytes: u64,
}

impl BlockSpace {
    pub const ZERO: BlockSpace = BlockSpace {
        allocated_bytes: 0,
        physical_bytes: 0,
        logical_bytes: 0,
    };

    /// One block's space (nothing for a hole).
    pub fn of(root: &Vdev, bp: &BlockPointer) -> BlockSpace {
        if bp.is_hole() {
            return BlockSpace::ZERO;
        }
        BlockSpace {
            allocated_bytes: root.dsize_bytes(bp),
            physical_bytes: u64::from(bp.psize_bytes),
            logical_bytes: u64::from(bp.lsize_bytes),
        }
    }

    /// The space of every block in `bps`.
    pub fn of_all<'a>(root: &Vdev, bps: impl IntoIterator<Item = &'a BlockPointer>) -> BlockSpace {
        let mut total = BlockSpace::ZERO;
        for bp in bps {
            total.add(&BlockSpace::of(root, bp));
        }
        total
    }

    pub fn add(&mut self, other: &BlockSpace) {
        self.allocated_bytes = self.allocated_bytes.saturating_add(other.allocated_bytes);
        self.physical_bytes = self.physical_bytes.saturating_add(other.physical_bytes);
        self.logical_bytes = self.logical_bytes.saturating_add(other.logical_bytes);
    }

    pub fn is_zero(&self) -> bool {
        *self == BlockSpace::ZERO
    }
}
