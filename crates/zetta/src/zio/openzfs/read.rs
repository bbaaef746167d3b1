//! Reading a block's physical bytes from an OpenZFS pool's devices (OpenZFS `zio_read` down
//! to `vdev_*_io_start`: `zio_ddt_read`/`zio_gang_*` aside, the path a read takes through
//! `vdev_mirror.c` and `vdev_raidz.c`).
//!
//! Theory. A block pointer names up to three copies (DVAs); the reader tries them in order
//! and returns the first whose bytes the caller's verifier accepts (the block checksum once
//! zcommon's OpenZFS checksums are wired in; see [`read_physical_verified`]). One copy is
//! read through [`PoolVdevs::map`]: a leaf or mirror gives alternative spans, tried in turn;
//! a raidz stripe reads its data columns only, and when a column's device is missing or
//! fails, or the assembled bytes do not verify, it reads the parity columns and rebuilds with
//! `zetta_raidz`'s parity code (OpenZFS's P/Q/R over GF(2^8) with polynomial 0x11d): first the
//! columns that failed, then, as OpenZFS's combinatorial reconstruction does, every choice of
//! up to `nparity` present columns assumed silently bad. A gang DVA points at a 512-byte gang
//! header (three block pointers, then a 40-byte embedded checksum tail whose magic is
//! `ZEC_MAGIC`); the block is its children's physical bytes concatenated, each child read
//! (and verified) like any block, the whole verified against the gang pointer's checksum.
//! An embedded pointer's physical bytes are its payload.
//!
//! Invariants: no panic on any pointer or device content; every length read is bounded by
//! the pointer's psize (at most 16 MiB) rounded to the vdev's sector; gang trees deeper than
//! [`GANG_DEPTH_MAX`] are refused.

use super::blkptr::{BlkptrError, BlockPointer, Dva, BLKPTR_SIZE_BYTES};
use super::vdev_map::{DvaMap, LeafSpan, PoolVdevs, VdevMapError, LABEL_END_BYTES};
use crate::byteorder::ByteOrder;
use crate::io::DeviceRef;
use std::collections::HashMap;
use std::fmt;
use zetta_zcommon::checksum::openzfs::{
    checksum, gang_verifier, verify_embedded, BlockOrder, ChecksumSalt, ZioChecksum,
};
use zetta_zcommon::compress::openzfs::{decompress, ZioCompress};

/// Size of a gang header (`SPA_GANGBLOCKSIZE`).
pub const GANG_HEADER_SIZE_BYTES: u64 = 512;
/// Block pointers in a gang header (`SPA_GBH_NBLKPTRS`).
pub const GANG_HEADER_BLKPTRS: usize = 3;
/// Magic of the embedded checksum tail (`ZEC_MAGIC`).
pub const ZEC_MAGIC: u64 = 0x0210_da7a_b10c_7a11;
/// Gang headers below gang headers that a reader follows (OpenZFS's gang trees are at most a
/// few levels deep; a hostile pool could loop).
pub const GANG_DEPTH_MAX: usize = 8;

/// Why a block could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The block pointer cannot be read (hole, bad sizes, unknown ids).
    Blkptr(BlkptrError),
    /// A DVA does not map onto the pool's vdevs.
    Map(VdevMapError),
    /// A leaf device is not among the devices given.
    LeafMissing { leaf_guid: u64 },
    /// A leaf read failed.
    Io { leaf_guid: u64, reason: String },
    /// A raidz stripe has more bad columns than parity.
    RaidzUnrecoverable,
    /// A gang header is damaged or its tree too deep.
    GangHeader { reason: String },
    /// Bytes were read but none verified.
    ChecksumMismatch,
    /// No copy could be read; the error of the last one tried.
    NoValidCopy { bp: String, last: Box<ReadError> },
    /// Verified bytes did not decompress to the block's logical size.
    Decompress { bp: String, reason: String },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Blkptr(e) => write!(f, "{e}"),
            ReadError::Map(e) => write!(f, "{e}"),
            ReadError::LeafMissing { leaf_guid } => {
                write!(f, "device {leaf_guid} is missing")
            }
            ReadError::Io { leaf_guid, reason } => {
                write!(f, "I/O error on device {leaf_guid}: {reason}")
            }
            ReadError::RaidzUnrecoverable => {
                write!(f, "raidz stripe has more damaged columns than parity")
            }
            ReadError::GangHeader { reason } => write!(f, "gang header: {reason}"),
            ReadError::ChecksumMismatch => write!(f, "checksum mismatch"),
            ReadError::NoValidCopy { bp, last } => {
                write!(f, "no valid copy of block {bp}: {last}")
            }
            ReadError::Decompress { bp, reason } => {
                write!(f, "block {bp} does not decompress: {reason}")
            }
        }
    }
}

impl std::error::Error for ReadError {}

impl From<BlkptrError> for ReadError {
    fn from(e: BlkptrError) -> Self {
        ReadError::Blkptr(e)
    }
}

impl From<VdevMapError> for ReadError {
    fn from(e: VdevMapError) -> Self {
        ReadError::Map(e)
    }
}

/// A pool's vdev tree and the leaf devices at hand, by leaf guid (a leaf may be absent).
pub struct PoolDevices {
    pub vdevs: PoolVdevs,
    pub leaves: HashMap<u64, DeviceRef>,
}

/// Whether a block's physical bytes are right: `(pointer, bytes)`.
pub type Verifier<'a> = &'a dyn Fn(&BlockPointer, &[u8]) -> bool;

impl PoolDevices {
    pub fn new(vdevs: PoolVdevs, leaves: HashMap<u64, DeviceRef>) -> PoolDevices {
        PoolDevices { vdevs, leaves }
    }

    fn read_span(&self, span: &LeafSpan) -> Result<Vec<u8>, ReadError> {
        let device = self
            .leaves
            .get(&span.leaf_guid)
            .ok_or(ReadError::LeafMissing {
                leaf_guid: span.leaf_guid,
            })?;
        let io = |reason: String| ReadError::Io {
            leaf_guid: span.leaf_guid,
            reason,
        };
        let end = span
            .device_offset_bytes
            .checked_add(span.size_bytes)
            .ok_or_else(|| io("offset overflows".to_string()))?;
        if end > device.size_bytes().saturating_sub(LABEL_END_BYTES) {
            return Err(io(format!(
                "{} bytes at {:#x} lie past the end of the device",
                span.size_bytes, span.device_offset_bytes
            )));
        }
        let len = usize::try_from(span.size_bytes).map_err(|_| io("size".to_string()))?;
        let mut buf = vec![0u8; len];
        device
            .read_at(span.device_offset_bytes, &mut buf)
            .map_err(|e| io(e.to_string()))?;
        Ok(buf)
    }

    /// The first alternative span that reads.
    fn read_any(&self, spans: &[LeafSpan]) -> Result<Vec<u8>, ReadError> {
        let mut last = ReadError::LeafMissing { leaf_guid: 0 };
        for span in spans {
            match self.read_span(span) {
                Ok(bytes) => return Ok(bytes),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// `size_bytes` at a DVA (gang bit ignored), accepted by `accept`.
    fn read_dva_bytes(
        &self,
        dva: &Dva,
        size_bytes: u64,
        accept: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Vec<u8>, ReadError> {
        let offset_bytes = dva
            .offset_bytes()
            .ok_or(ReadError::Blkptr(BlkptrError::OffsetOverflow { dva: 0 }))?;
        let size = usize::try_from(size_bytes).map_err(|_| ReadError::ChecksumMismatch)?;
        match self
            .vdevs
            .map(u64::from(dva.vdev), offset_bytes, size_bytes)?
        {
            DvaMap::Replicated(spans) => {
                let mut last = ReadError::LeafMissing { leaf_guid: 0 };
                for span in &spans {
                    match self.read_span(span) {
                        Ok(mut bytes) => {
                            bytes.truncate(size);
                            if accept(&bytes) {
                                return Ok(bytes);
                            }
                            last = ReadError::ChecksumMismatch;
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
            DvaMap::Raidz { map, columns } => {
                let parity = map.parity;
                let mut read: Vec<Option<Vec<u8>>> = vec![None; columns.len()];
                for (index, spans) in columns.iter().enumerate().skip(parity) {
                    read[index] = self.read_any(spans).ok();
                }
                let assemble = |cols: &[Option<Vec<u8>>]| -> Option<Vec<u8>> {
                    let mut data = Vec::with_capacity(size);
                    for col in &cols[parity..] {
                        data.extend_from_slice(col.as_deref()?);
                    }
                    data.truncate(size);
                    Some(data)
                };
                if let Some(data) = assemble(&read) {
                    if accept(&data) {
                        return Ok(data);
                    }
                }
                for (index, spans) in columns.iter().enumerate().take(parity) {
                    read[index] = self.read_any(spans).ok();
                }
                let missing: Vec<usize> = (0..read.len()).filter(|&i| read[i].is_none()).collect();
                if missing.len() > parity {
                    return Err(ReadError::RaidzUnrecoverable);
                }
                // The failed columns first, then each choice of further columns assumed bad.
                let present: Vec<usize> = (0..read.len()).filter(|&i| read[i].is_some()).collect();
                for extra in 0..=(parity - missing.len()) {
                    for chosen in combinations(&present, extra) {
                        let mut attempt = read.clone();
                        for &i in &chosen {
                            attempt[i] = None;
                        }
                        if map.reconstruct(&mut attempt).is_err() {
                            continue;
                        }
                        if let Some(data) = assemble(&attempt) {
                            if accept(&data) {
                                return Ok(data);
                            }
                        }
                    }
                }
                Err(ReadError::ChecksumMismatch)
            }
        }
    }
}

/// Every `k`-element subset of `items`, in lexicographic order.
fn combinations(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        for mut rest in combinations(&items[i + 1..], k - 1) {
            rest.insert(0, first);
            out.push(rest);
        }
    }
    out
}

/// A block's physical bytes (`psize`, still compressed), from the first DVA that reads,
/// without checksum verification (a raidz stripe with a missing device is rebuilt).
pub fn read_physical(devices: &PoolDevices, bp: &BlockPointer) -> Result<Vec<u8>, ReadError> {
    read_physical_verified(devices, bp, &|_, _| true)
}

/// A block's physical bytes, from the first copy (or raidz reconstruction) that `verify`
/// accepts.
pub fn read_physical_verified(
    devices: &PoolDevices,
    bp: &BlockPointer,
    verify: Verifier<'_>,
) -> Result<Vec<u8>, ReadError> {
    read_physical_depth(devices, bp, verify, 0)
}

fn read_physical_depth(
    devices: &PoolDevices,
    bp: &BlockPointer,
    verify: Verifier<'_>,
    depth: usize,
) -> Result<Vec<u8>, ReadError> {
    bp.validate()?;
    if bp.is_embedded() {
        return Ok(bp.embedded_payload()?);
    }
    let mut last = ReadError::Blkptr(BlkptrError::NoDva);
    for dva in bp.readable_dvas() {
        match read_dva(devices, bp, &dva, verify, depth) {
            Ok(bytes) => return Ok(bytes),
            Err(e) => last = e,
        }
    }
    Err(ReadError::NoValidCopy {
        bp: bp.to_string(),
        last: Box::new(last),
    })
}

/// Copy `index` of `bp` alone (a scrub checks each copy on its own), verified by `verify`.
/// The pointer stays whole: a gang header's checksum is salted with the pointer's DVA[0]
/// (`zio_checksum_gang_verifier`), whichever copy holds it, so a pointer rebuilt around
/// one DVA would refuse every gang header copy but the first.
pub fn read_copy_verified(
    devices: &PoolDevices,
    bp: &BlockPointer,
    index: usize,
    verify: Verifier<'_>,
) -> Result<Vec<u8>, ReadError> {
    bp.validate()?;
    let dva = bp
        .readable_dvas()
        .get(index)
        .copied()
        .ok_or(ReadError::Blkptr(BlkptrError::NoDva))?;
    read_dva(devices, bp, &dva, verify, 0).map_err(|last| ReadError::NoValidCopy {
        bp: bp.to_string(),
        last: Box::new(last),
    })
}

/// One copy of `bp`: a gang tree or a contiguous block.
fn read_dva(
    devices: &PoolDevices,
    bp: &BlockPointer,
    dva: &Dva,
    verify: Verifier<'_>,
    depth: usize,
) -> Result<Vec<u8>, ReadError> {
    if dva.gang {
        read_gang(devices, bp, dva, verify, depth)
    } else {
        devices.read_dva_bytes(dva, bp.psize_bytes(), &|bytes| verify(bp, bytes))
    }
}

/// `DMU_OT_OBJSET`: objset blocks keep a full checksum even in encrypted datasets.
const OBJECT_TYPE_OBJSET: u8 = 11;

/// The functions OpenZFS trusts for dedup (`ZCHECKSUM_FLAG_DEDUP`): cryptographic hashes.
/// Edon-R is not among them (only `edonr,verify` dedups), so an encrypted block's edonr
/// words are folded like fletcher's.
fn kind_is_strong(kind: ZioChecksum) -> bool {
    matches!(
        kind,
        ZioChecksum::Sha256 | ZioChecksum::Sha512 | ZioChecksum::Skein | ZioChecksum::Blake3
    )
}

/// Whether `bytes` are the physical bytes `bp` names, by its checksum (OpenZFS
/// `zio_checksum_error`). `salt` is the pool's checksum salt (skein, blake3). Blocks whose
/// checksum is `off` always match; ZIL blocks carry their checksum inside (verifier: the
/// pointer's checksum words); encrypted and authenticated blocks keep a MAC in words 2..3,
/// so only words 0..1 are compared (after folding 2..3 into them for fletcher). An empty `bytes` asks whether `bp` is checked at all
/// (used by gang headers) and answers `true` for the no-verification reader only.
pub fn checksum_matches(bp: &BlockPointer, bytes: &[u8], salt: &ChecksumSalt) -> bool {
    let Some(kind) = ZioChecksum::from_id(u64::from(bp.checksum_kind())) else {
        return false;
    };
    if bytes.is_empty() {
        return false;
    }
    let order = match bp.byte_order() {
        ByteOrder::Little => BlockOrder::Little,
        ByteOrder::Big => BlockOrder::Big,
    };
    let expected = bp.checksum();
    match kind {
        ZioChecksum::Off | ZioChecksum::NoParity => true,
        ZioChecksum::Zilog | ZioChecksum::Zilog2 => verify_embedded(kind, bytes, expected).is_ok(),
        _ => match checksum(kind, bytes, order, salt) {
            // Encrypted and authenticated blocks (objsets excepted) keep their MAC in words
            // 2..3; a weak (non-dedup) function's words 2..3 are folded into 0..1 first
            // (`zio_checksum_handle_crypt`).
            Ok(mut actual) if bp.uses_crypt() && bp.object_type() != OBJECT_TYPE_OBJSET => {
                if !kind_is_strong(kind) {
                    actual[0] ^= actual[2];
                    actual[1] ^= actual[3];
                }
                actual[..2] == expected[..2]
            }
            Ok(actual) => actual == expected,
            Err(_) => false,
        },
    }
}

/// A block's logical bytes (OpenZFS `zio_read` of a whole block): a hole reads as zeros, an
/// embedded pointer's payload is decompressed, any other block is read from the first copy
/// (or raidz reconstruction) whose checksum matches and then decompressed to its lsize.
pub fn read_block(
    devices: &PoolDevices,
    bp: &BlockPointer,
    salt: &ChecksumSalt,
) -> Result<Vec<u8>, ReadError> {
    let lsize = usize::try_from(bp.lsize_bytes()).map_err(|_| {
        ReadError::Blkptr(BlkptrError::SizeTooLarge {
            lsize_bytes: bp.lsize_bytes(),
            psize_bytes: bp.psize_bytes(),
        })
    })?;
    if bp.is_hole() {
        if bp.lsize_bytes() > super::blkptr::BLOCK_SIZE_MAX_BYTES {
            return Err(ReadError::Blkptr(BlkptrError::SizeTooLarge {
                lsize_bytes: bp.lsize_bytes(),
                psize_bytes: 0,
            }));
        }
        return Ok(vec![0u8; lsize]);
    }
    let physical = if bp.is_embedded() {
        read_physical(devices, bp)?
    } else {
        read_physical_verified(devices, bp, &|bp, bytes| checksum_matches(bp, bytes, salt))?
    };
    let undecodable = |reason: String| ReadError::Decompress {
        bp: bp.to_string(),
        reason,
    };
    let kind = ZioCompress::from_id(u64::from(bp.compression()))
        .ok_or_else(|| undecodable(format!("compression {}", bp.compression())))?;
    decompress(kind, &physical, lsize).map_err(|e| undecodable(e.to_string()))
}

/// The child block pointers of a gang header, in the order of the gang pointer's bytes.
pub fn gang_header_children(
    header: &[u8],
    order: ByteOrder,
) -> Result<[BlockPointer; GANG_HEADER_BLKPTRS], ReadError> {
    let tail = GANG_HEADER_SIZE_BYTES as usize - 40;
    let magic = order
        .u64_at(header, tail)
        .map_err(|e| ReadError::GangHeader {
            reason: e.to_string(),
        })?;
    if magic != ZEC_MAGIC {
        return Err(ReadError::GangHeader {
            reason: format!("tail magic {magic:#x} is not {ZEC_MAGIC:#x}"),
        });
    }
    let child = |i: usize| {
        BlockPointer::decode(order, header, i * BLKPTR_SIZE_BYTES).map_err(|e| {
            ReadError::GangHeader {
                reason: e.to_string(),
            }
        })
    };
    Ok([child(0)?, child(1)?, child(2)?])
}

fn read_gang(
    devices: &PoolDevices,
    bp: &BlockPointer,
    dva: &Dva,
    verify: Verifier<'_>,
    depth: usize,
) -> Result<Vec<u8>, ReadError> {
    if depth >= GANG_DEPTH_MAX {
        return Err(ReadError::GangHeader {
            reason: "gang tree too deep".to_string(),
        });
    }
    let order = bp.byte_order();
    // The header carries its own SHA-256 with the gang pointer's DVA[0] and birth as verifier;
    // a caller that verifies nothing (read_physical) only checks the tail magic.
    let identity = bp.dva(0);
    let verifier = gang_verifier(
        u64::from(identity.vdev),
        identity.offset_bytes().unwrap_or(0),
        bp.birth(),
    );
    let unchecked = verify(bp, &[]);
    let header = devices.read_dva_bytes(dva, GANG_HEADER_SIZE_BYTES, &|bytes| {
        gang_header_children(bytes, order).is_ok()
            && (unchecked
                || verify_embedded(ZioChecksum::GangHeader, &bytes[..512], verifier).is_ok())
    })?;
    let psize = usize::try_from(bp.psize_bytes()).map_err(|_| ReadError::ChecksumMismatch)?;
    let mut data = Vec::with_capacity(psize);
    for child in gang_header_children(&header, order)? {
        if child.is_hole() {
            continue;
        }
        let bytes = read_physical_depth(devices, &child, verify, depth + 1)?;
        if data.len() + bytes.len() > psize {
            return Err(ReadError::GangHeader {
                reason: "children are larger than the gang block".to_string(),
            });
        }
        data.extend_from_slice(&bytes);
    }
    if data.len() != psize {
        return Err(ReadError::GangHeader {
            reason: format!("children hold {} of {psize} bytes", data.len()),
        });
    }
    if !verify(bp, &data) {
        return Err(ReadError::ChecksumMismatch);
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemDevice;
    use crate::nvpair_xdr::{XdrNvList, XdrValue};
    use std::sync::Arc;

    // Why: Edon-R is not a dedup checksum in OpenZFS (only `edonr,verify` dedups), so an
    // encrypted block's edonr words 2..3 are folded into 0..1 before the MAC takes their
    // place; comparing unfolded words refused every encrypted edonr block ztest writes.
    #[test]
    fn encrypted_edonr_block_is_checked_with_folded_words() {
        let salt = [9u8; 32];
        let block: Vec<u8> = (0..512u32).map(|i| (i * 31 + 7) as u8).collect();
        let words = checksum(ZioChecksum::Edonr, &block, BlockOrder::Little, &salt).unwrap();
        let mac = [0x1111, 0x2222];
        let pointer = |stored: [u64; 4]| {
            BlockPointer::new(
                [
                    Dva {
                        vdev: 0,
                        grid: 0,
                        asize_sectors: 1,
                        offset_sectors: 8,
                        gang: false,
                    },
                    Dva::default(),
                    Dva::default(),
                ],
                super::super::blkptr::BlockProps {
                    lsize_bytes: 512,
                    psize_bytes: 512,
                    compression: 2,
                    checksum: ZioChecksum::Edonr.id(),
                    object_type: 19,
                    level: 0,
                    crypt: true,
                    dedup: false,
                    byte_order: ByteOrder::Little,
                },
                5,
                5,
                1,
                stored,
            )
            .unwrap()
        };
        let folded = pointer([words[0] ^ words[2], words[1] ^ words[3], mac[0], mac[1]]);
        assert!(checksum_matches(&folded, &block, &salt));
        let unfolded = pointer([words[0], words[1], mac[0], mac[1]]);
        assert!(!checksum_matches(&unfolded, &block, &salt));
    }

    fn leaf(guid: u64) -> XdrNvList {
        let mut l = XdrNvList::new();
        l.add("type", XdrValue::String(b"file".to_vec()));
        l.add("guid", XdrValue::Uint64(guid));
        l
    }

    // Why: an encrypted block's pointer holds a MAC in checksum words 2..3 and, for
    // fletcher, words 0..1 folded with the checksum's 2..3 (zio_checksum_handle_crypt);
    // comparing all four words would reject every encrypted block.
    #[test]
    fn encrypted_blocks_compare_folded_checksum_words() {
        let data = vec![0x5au8; 4096];
        let salt = [0u8; 32];
        let sum =
            checksum(ZioChecksum::Fletcher4, &data, BlockOrder::Little, &salt).expect("fletcher4");
        let props = super::super::blkptr::BlockProps {
            lsize_bytes: 4096,
            psize_bytes: 4096,
            compression: 2,
            checksum: 7,
            object_type: 19,
            level: 0,
            crypt: true,
            dedup: false,
            byte_order: ByteOrder::Little,
        };
        let dva = Dva {
            vdev: 0,
            grid: 0,
            asize_sectors: 8,
            offset_sectors: 0,
            gang: false,
        };
        let stored = [sum[0] ^ sum[2], sum[1] ^ sum[3], 0xdead, 0xbeef];
        let bp = BlockPointer::new(
            [dva, Dva::default(), Dva::default()],
            props,
            3,
            3,
            1,
            stored,
        )
        .expect("valid");
        assert!(checksum_matches(&bp, &data, &salt));
        let plain = BlockPointer::new(
            [dva, Dva::default(), Dva::default()],
            super::super::blkptr::BlockProps {
                crypt: false,
                ..props
            },
            3,
            3,
            1,
            sum,
        )
        .expect("valid");
        assert!(checksum_matches(&plain, &data, &salt));
        let mut wrong = data.clone();
        wrong[7] ^= 1;
        assert!(!checksum_matches(&bp, &wrong, &salt));
        assert!(!checksum_matches(&plain, &wrong, &salt));
    }

    // Why: a gang block is its children's bytes in order; a hostile header (bad magic,
    // children larger than the block, a header naming itself) must fail, not loop or panic.
    #[test]
    fn gang_block_reads_children_in_order_and_refuses_hostile_headers() {
        let mut top = leaf(1);
        top.add("id", XdrValue::Uint64(0));
        top.add("ashift", XdrValue::Uint64(9));
        let mut config = XdrNvList::new();
        config.add("vdev_tree", XdrValue::NvList(top));
        let vdevs = PoolVdevs::from_configs([&config]).expect("config");
        let device = MemDevice::new("gang", 8 << 20);
        let order = ByteOrder::Little;
        let sector = |n: u64| Dva {
            vdev: 0,
            grid: 0,
            asize_sectors: 1,
            offset_sectors: n,
            gang: false,
        };
        let props = super::super::blkptr::BlockProps {
            lsize_bytes: 512,
            psize_bytes: 512,
            compression: 2,
            checksum: 7,
            object_type: 19,
            level: 0,
            crypt: false,
            dedup: false,
            byte_order: order,
        };
        let child = |n: u64| {
            BlockPointer::new(
                [sector(n), Dva::default(), Dva::default()],
                props,
                5,
                5,
                1,
                [0; 4],
            )
            .expect("valid")
        };
        let mut header = vec![0u8; 512];
        header[..128].copy_from_slice(&child(10).encode(order));
        header[128..256].copy_from_slice(&child(11).encode(order));
        header[472..480].copy_from_slice(&ZEC_MAGIC.to_le_bytes());
        use crate::io::BlockDevice;
        device
            .write_at((4 << 20) + 9 * 512, &header)
            .expect("write");
        device
            .write_at((4 << 20) + 10 * 512, &[0xaa; 512])
            .expect("write");
        device
            .write_at((4 << 20) + 11 * 512, &[0xbb; 512])
            .expect("write");
        let mut leaves: HashMap<u64, DeviceRef> = HashMap::new();
        leaves.insert(1, Arc::new(device));
        let devices = PoolDevices::new(vdevs, leaves);
        let mut gang_dva = sector(9);
        gang_dva.gang = true;
        gang_dva.asize_sectors = 3;
        let gang = BlockPointer::new(
            [gang_dva, Dva::default(), Dva::default()],
            super::super::blkptr::BlockProps {
                lsize_bytes: 1024,
                psize_bytes: 1024,
                ..props
            },
            5,
            5,
            1,
            [0; 4],
        )
        .expect("valid");
        let data = read_physical(&devices, &gang).expect("gang reads");
        assert_eq!(&data[..512], &[0xaa; 512][..]);
        assert_eq!(&data[512..], &[0xbb; 512][..]);
        // A gang header that names itself as its child recurses until the depth limit.
        let mut looping = header.clone();
        looping[..128].copy_from_slice(&gang.encode(order));
        let device = devices.leaves[&1].clone();
        device
            .write_at((4 << 20) + 9 * 512, &looping)
            .expect("write");
        assert!(read_physical(&devices, &gang).is_err());
        // Bad magic.
        device
            .write_at((4 << 20) + 9 * 512, &[0u8; 512])
            .expect("write");
        assert!(read_physical(&devices, &gang).is_err());
    }

    // Why: with copies=1 OpenZFS still writes two copies of a gang header
    // (`zio_write_gang_block`), both sealed with the pointer's DVA[0] as verifier. The
    // scrub read each copy through a pointer rebuilt around that copy alone, so the second
    // header never verified and ztest's pools (which force some ganging) failed the scrub
    // now and then with "checksum mismatch" on copy 1.
    #[test]
    fn every_gang_header_copy_verifies_against_the_pointers_first_dva() {
        use crate::io::BlockDevice;
        use zetta_zcommon::checksum::openzfs::seal_embedded;
        let mut top = leaf(1);
        top.add("id", XdrValue::Uint64(0));
        top.add("ashift", XdrValue::Uint64(9));
        let mut config = XdrNvList::new();
        config.add("vdev_tree", XdrValue::NvList(top));
        let vdevs = PoolVdevs::from_configs([&config]).expect("config");
        let device = MemDevice::new("gang2", 8 << 20);
        let order = ByteOrder::Little;
        let salt = [0u8; 32];
        let at = |n: u64, asize_sectors: u32, gang: bool| Dva {
            vdev: 0,
            grid: 0,
            asize_sectors,
            offset_sectors: n,
            gang,
        };
        let props = |size: u64, sum: [u64; 4]| {
            (
                super::super::blkptr::BlockProps {
                    lsize_bytes: size,
                    psize_bytes: size,
                    compression: 2,
                    checksum: ZioChecksum::Fletcher4.id(),
                    object_type: 19,
                    level: 0,
                    crypt: false,
                    dedup: false,
                    byte_order: order,
                },
                sum,
            )
        };
        let fletcher = |bytes: &[u8]| {
            checksum(ZioChecksum::Fletcher4, bytes, BlockOrder::Little, &salt).expect("sum")
        };
        let halves = [[0x5au8; 512], [0xc3u8; 512]];
        let mut header = vec![0u8; 512];
        for (i, half) in halves.iter().enumerate() {
            let (p, sum) = props(512, fletcher(half));
            let child = BlockPointer::new(
                [at(10 + i as u64, 1, false), Dva::default(), Dva::default()],
                p,
                5,
                5,
                1,
                sum,
            )
            .expect("child");
            header[i * 128..(i + 1) * 128].copy_from_slice(&child.encode(order));
            device
                .write_at((4 << 20) + (10 + i as u64) * 512, half)
                .expect("write");
        }
        // Both copies (sectors 9 and 20) sealed with DVA[0]'s identity, as OpenZFS seals them.
        seal_embedded(
            ZioChecksum::GangHeader,
            &mut header,
            BlockOrder::Little,
            gang_verifier(0, 9 * 512, 5),
        )
        .expect("seal");
        for sector in [9u64, 20] {
            device
                .write_at((4 << 20) + sector * 512, &header)
                .expect("write");
        }
        let whole: Vec<u8> = halves.concat();
        let (p, sum) = props(1024, fletcher(&whole));
        let gang = BlockPointer::new(
            [at(9, 3, true), at(20, 1, true), Dva::default()],
            p,
            5,
            5,
            1,
            sum,
        )
        .expect("gang pointer");
        let mut leaves: HashMap<u64, DeviceRef> = HashMap::new();
        leaves.insert(1, Arc::new(device));
        let devices = PoolDevices::new(vdevs, leaves);
        let verify = |bp: &BlockPointer, bytes: &[u8]| checksum_matches(bp, bytes, &salt);
        for copy in 0..2 {
            let data = read_copy_verified(&devices, &gang, copy, &verify)
                .unwrap_or_else(|e| panic!("copy {copy}: {e}"));
            assert_eq!(data, whole, "copy {copy}");
        }
        assert!(read_copy_verified(&devices, &gang, 2, &verify).is_err());
        // The rebuilt pointer names the second header as its DVA[0]: the verifier differs.
        assert!(read_physical_verified(&devices, &gang.only_copy(1), &verify).is_err());
    }
}
