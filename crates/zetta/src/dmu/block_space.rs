//! The space a set of blocks takes, counted the three ways the dataset layer needs
//! (OpenZFS's used / compressed / uncompressed triple in `dsl_dataset_block_born`):
//! allocated bytes of every copy, deflated like USED (raidz parity and padding left out);
//! physical bytes of one copy (what compression left); logical bytes (what the program
//! wrote, metadata included). `compressratio` is logical over physical.
//!
//! An object set adds up what it gives birth to and what it frees as it syncs; the dataset
//! layer turns those sums into REFER, USED and the logical figures at the same commit.
//! The same sum carries which per-dataset pool features the blocks need (`features`,
//! `dsl_dataset_block_born`'s `ds_feature_activation`: a block above 128K, a sha512, skein,
//! edonr or blake3 checksum, zstd compression), which the dataset layer activates on the
//! dataset at that commit (`spa::zfeature`).

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
    /// The per-dataset features the blocks use, one bit per [`DatasetFeature`] (or-ed).
    pub features: u8,
}

/// The per-dataset pool features a block can need (`zio_checksum_to_feature`,
/// `zio_compress_to_feature`, `SPA_FEATURE_LARGE_BLOCKS`); the value is the bit in
/// [`BlockSpace::features`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum DatasetFeature {
    LargeBlocks = 1 << 0,
    Sha512 = 1 << 1,
    Skein = 1 << 2,
    Edonr = 1 << 3,
    Blake3 = 1 << 4,
    ZstdCompress = 1 << 5,
    /// Not a block's: a ZPL object set made while userobj_accounting is enabled counts
    /// objects from its start and its dataset carries the feature
    /// (`dmu_objset_create_impl_dnstats`'s `ds_feature_activation`).
    UserobjAccounting = 1 << 6,
}

impl DatasetFeature {
    pub const ALL: [DatasetFeature; 7] = [
        DatasetFeature::LargeBlocks,
        DatasetFeature::Sha512,
        DatasetFeature::Skein,
        DatasetFeature::Edonr,
        DatasetFeature::Blake3,
        DatasetFeature::ZstdCompress,
        DatasetFeature::UserobjAccounting,
    ];

    /// The feature's short name (`zfeature_lookup_name`'s key).
    pub fn name(self) -> &'static str {
        match self {
            DatasetFeature::LargeBlocks => "large_blocks",
            DatasetFeature::Sha512 => "sha512",
            DatasetFeature::Skein => "skein",
            DatasetFeature::Edonr => "edonr",
            DatasetFeature::Blake3 => "blake3",
            DatasetFeature::ZstdCompress => "zstd_compress",
            DatasetFeature::UserobjAccounting => "userobj_accounting",
        }
    }

    /// The features a block needs (`dsl_dataset_block_born`): none for a hole; an
    /// embedded block has no checksum but keeps its compression.
    pub fn of_block(bp: &BlockPointer) -> u8 {
        use zetta_zcommon::checksum::openzfs::ZioChecksum;
        use zetta_zcommon::compress::openzfs::ZioCompress;
        if bp.is_hole() {
            return 0;
        }
        let mut features = 0;
        if bp.lsize_bytes > OLD_MAX_BLOCK_BYTES {
            features |= DatasetFeature::LargeBlocks as u8;
        }
        if !bp.is_embedded() {
            features |= match bp.checksum_kind {
                k if k == ZioChecksum::Sha512 as u8 => DatasetFeature::Sha512 as u8,
                k if k == ZioChecksum::Skein as u8 => DatasetFeature::Skein as u8,
                k if k == ZioChecksum::Edonr as u8 => DatasetFeature::Edonr as u8,
                k if k == ZioChecksum::Blake3 as u8 => DatasetFeature::Blake3 as u8,
                _ => 0,
            };
        }
        if bp.compression == ZioCompress::Zstd as u8 {
            features |= DatasetFeature::ZstdCompress as u8;
        }
        features
    }
}

/// `SPA_OLD_MAXBLOCKSIZE`: a larger block needs large_blocks.
const OLD_MAX_BLOCK_BYTES: u32 = 128 << 10;

impl BlockSpace {
    pub const ZERO: BlockSpace = BlockSpace {
        allocated_bytes: 0,
        physical_bytes: 0,
        logical_bytes: 0,
        features: 0,
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
            features: DatasetFeature::of_block(bp),
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
        self.features |= other.features;
    }

    pub fn is_zero(&self) -> bool {
        *self == BlockSpace::ZERO
    }
}
