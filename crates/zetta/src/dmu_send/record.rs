//! The replication stream format: OpenZFS's `dmu_replay_record_t` records (OpenZFS
//! `include/sys/zfs_ioctl.h`, `module/zfs/dmu_send.c` `dump_record`, `dmu_recv.c`
//! `receive_read_record`), their encoding and the incremental parser. docs/STREAM.md has the
//! byte diagram and the golden vector.
//!
//! A stream is one or more substreams back to back; a substream is `BEGIN`, then data
//! records, then `END`. Every record is a fixed 312-byte header, little-endian here (the
//! sender's byte order; a byteswapped stream is refused), followed by a payload whose size
//! follows from the header: BEGIN `drr_payloadlen` (an XDR nvlist), OBJECT the bonus rounded
//! up to 8, WRITE `drr_compressed_size` or `drr_logical_size`, the others none.
//!
//! ```text
//!   0 drr_type u32 (BEGIN 0, OBJECT 1, FREEOBJECTS 2, WRITE 3, FREE 4, END 5)
//!   4 drr_payloadlen u32 (BEGIN only)
//!   8 the record's fields (drr_u, by type; see docs/STREAM.md)
//! 280 drr_checksum: fletcher-4 of the substream up to here (not in BEGIN, whose
//!     drr_toname runs to byte 312)
//! 312 payload
//! ```
//!
//! Integrity, as OpenZFS: one fletcher-4 runs over the substream (every header and payload);
//! each record but BEGIN stores the running sum of everything before its byte 280, and END
//! also carries the sum of everything before it in `drr_checksum` at byte 8. So a record's
//! payload is covered by the next record's header: the parser hands a record out only once
//! the next header has verified (OpenZFS reads one record ahead the same way), and END
//! verifies the whole substream. Old streams (zfs-fuse, before 0.7) leave the per-record sum
//! zero; then only END's sum is checked, as OpenZFS does. The parser checks a header's
//! lengths before it buffers the payload, so a hostile length never makes it allocate more
//! than one largest record. Nothing here panics on input bytes.

use super::error::StreamError;
use crate::nvlist::{NvList, NvValue};
use crate::nvpair_xdr::{self, XdrNvList, XdrValue};
use crate::types::{Guid, ObjectId, BLOCK_SIZE_MAX_BYTES};
use zetta_zcommon::checksum::Fletcher4;

/// A compression id a compressed WRITE may carry: one of OpenZFS's compressors (lzjb 3,
/// gzip-1..9 5..=13, zle 14, lz4 15, zstd 16), never off, inherit, on or empty.
fn is_compressor_id(id: u64) -> bool {
    id == 3 || (5..=16).contains(&id)
}

/// Zetta's stream format revision (documentation only: the bytes carry OpenZFS's
/// `drr_versioninfo`, header type and feature bits, not this number). 1: Zetta's own
/// "ZTrc" records. 2: compressed WRITE ids and stored forms as OpenZFS's. 3: OpenZFS's
/// `dmu_replay_record_t` records, checksums and feature bits (streams of versions 1 and 2
/// are refused as bad magic). 4: compound streams as libzfs writes them (`-I` and `-p`/`-h`
/// compound too, the header's `fss` keyed by `0x<guid>` with typed `props`, `snapprops`,
/// `snapholds`; no Zetta-only pairs in a substream's BEGIN); version 3's `fss` array and
/// BEGIN `props`/`holds` are still read.
pub const STREAM_VERSION: u64 = 4;
/// `DMU_BACKUP_MAGIC`, at byte 8 of every BEGIN.
pub const BACKUP_MAGIC: u64 = 0x2_f5ba_cbac;
pub const HEADER_SIZE_BYTES: usize = 312;
/// Where `drr_checksum` (the running sum of the bytes before it) sits in non-BEGIN records.
pub const CHECKSUM_OFFSET: usize = 280;
/// Largest payload: a 16 MiB block, or a BEGIN nvlist.
pub const PAYLOAD_SIZE_MAX_BYTES: u32 = BLOCK_SIZE_MAX_BYTES as u32;
/// Largest bonus buffer an OBJECT may carry (a 512-byte dnode's bonus area).
pub const BONUS_SIZE_MAX_BYTES: usize = 320;
/// Object numbers are below 2^48 (`DN_MAX_OBJECT`).
pub const OBJECT_ID_LIMIT: u64 = crate::dmu::objset::OBJECT_ID_MAX;
/// `drr_toname` is `char[MAXNAMELEN]`.
pub const TONAME_SIZE_BYTES: usize = 256;

pub const DRR_BEGIN: u32 = 0;
pub const DRR_OBJECT: u32 = 1;
pub const DRR_FREEOBJECTS: u32 = 2;
pub const DRR_WRITE: u32 = 3;
pub const DRR_FREE: u32 = 4;
pub const DRR_END: u32 = 5;
pub const DRR_WRITE_BYREF: u32 = 6;
pub const DRR_SPILL: u32 = 7;
pub const DRR_WRITE_EMBEDDED: u32 = 8;
pub const DRR_OBJECT_RANGE: u32 = 9;
pub const DRR_REDACT: u32 = 10;

/// `drr_versioninfo` header types (bits 0-1).
pub const DMU_SUBSTREAM: u64 = 1;
pub const DMU_COMPOUNDSTREAM: u64 = 2;

/// `DMU_BACKUP_FEATURE_*`, as the bits of `BeginRecord::features` (shifted by 2 in
/// `drr_versioninfo`).
pub const FEATURE_DEDUP: u64 = 1 << 0;
pub const FEATURE_DEDUPPROPS: u64 = 1 << 1;
pub const FEATURE_SA_SPILL: u64 = 1 << 2;
pub const FEATURE_EMBED_DATA: u64 = 1 << 16;
pub const FEATURE_LZ4: u64 = 1 << 17;
pub const FEATURE_LARGE_BLOCKS: u64 = 1 << 19;
pub const FEATURE_RESUMING: u64 = 1 << 20;
pub const FEATURE_REDACTED: u64 = 1 << 21;
pub const FEATURE_COMPRESSED: u64 = 1 << 22;
pub const FEATURE_LARGE_DNODE: u64 = 1 << 23;
pub const FEATURE_RAW: u64 = 1 << 24;
pub const FEATURE_ZSTD: u64 = 1 << 25;
pub const FEATURE_HOLDS: u64 = 1 << 26;
/// The features Zetta's receiver handles; a stream with any other bit is refused
/// ("stream has unsupported feature"), as OpenZFS refuses bits it does not know.
pub const FEATURES_KNOWN: u64 = FEATURE_SA_SPILL
    | FEATURE_EMBED_DATA
    | FEATURE_LZ4
    | FEATURE_LARGE_BLOCKS
    | FEATURE_RESUMING
    | FEATURE_COMPRESSED
    | FEATURE_ZSTD
    | FEATURE_HOLDS;

/// `drr_flags` of BEGIN: a new filesystem cloned from the snapshot whose guid is the from
/// guid.
pub const DRR_FLAG_CLONE: u32 = 1 << 0;
pub const DRR_FLAG_CI_DATA: u32 = 1 << 1;
pub const DRR_FLAG_FREERECORDS: u32 = 1 << 2;
pub const DRR_FLAG_SPILL_BLOCK: u32 = 1 << 3;
const BEGIN_FLAGS_KNOWN: u32 =
    DRR_FLAG_CLONE | DRR_FLAG_CI_DATA | DRR_FLAG_FREERECORDS | DRR_FLAG_SPILL_BLOCK;
/// `drr_flags` of WRITE: the block's checksum is dedup-capable.
pub const DRR_CHECKSUM_DEDUP: u8 = 1 << 0;
/// `drr_flags` of OBJECT: the object has a spill block.
pub const DRR_OBJECT_SPILL: u8 = 1 << 2;

/// The bytes on the wire of a record whose payload is `payload_len` bytes (already rounded
/// as its type requires).
pub fn record_size_bytes(payload_len: usize) -> u64 {
    (HEADER_SIZE_BYTES + payload_len) as u64
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeginRecord {
    /// `DMU_BACKUP_FEATURE_*` bits.
    pub features: u64,
    /// Header type `DMU_COMPOUNDSTREAM`: the package header of a replication stream (its
    /// END follows at once; no data records).
    pub compound: bool,
    /// `drr_flags` (`DRR_FLAG_*`).
    pub flags: u32,
    pub to_guid: Guid,
    pub from_guid: Guid,
    pub creation_time: u64,
    /// `toname` (string, `drr_toname`) and `type` (u64, `drr_type`: 2 filesystem, 3 volume)
    /// from the fixed fields, and the pairs of the payload nvlist: `resume_object`,
    /// `resume_offset` (RESUMING); Zetta's `props`, `holds`; a package header's `fss`...
    pub info: NvList,
}

impl BeginRecord {
    pub fn is_clone(&self) -> bool {
        self.flags & DRR_FLAG_CLONE != 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRecord {
    pub object: ObjectId,
    pub object_type: u8,
    pub bonus_type: u8,
    pub block_size_bytes: u32,
    pub checksum: u8,
    pub compress: u8,
    /// `drr_dn_slots` (1: Zetta writes single-slot dnodes and refuses others).
    pub dn_slots: u8,
    /// `drr_flags` (`DRR_OBJECT_SPILL`).
    pub flags: u8,
    /// The `drr_bonuslen` bytes of the bonus buffer (padded to 8 on the wire).
    pub bonus: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    pub object: ObjectId,
    /// `drr_type`: the object's type.
    pub object_type: u8,
    pub offset: u64,
    /// `drr_logical_size`: the bytes this record writes (the whole block).
    pub length: u64,
    /// `drr_checksumtype` (0 = off: no dedup key) and `drr_flags`.
    pub checksum: u8,
    pub flags: u8,
    /// `drr_key` (a dedup key: the block's checksum and `ddk_prop`), zero with checksum off.
    pub key: [u64; 5],
    /// 0: `data` is the `length` logical bytes; else `drr_compressiontype` of the stored
    /// form in `data` (`drr_compressed_size` bytes).
    pub compression: u8,
    /// The logical size the stored form decompresses to (`length`; 0 when not compressed).
    pub logical_size_bytes: u64,
    pub data: Vec<u8>,
}

/// `BPE_PAYLOAD_SIZE`: the most bytes an embedded block pointer carries.
pub const EMBEDDED_PAYLOAD_MAX_BYTES: u32 = 112;
/// `BP_EMBEDDED_TYPE_DATA`, the only embedded type a stream may carry.
pub const BP_EMBEDDED_TYPE_DATA: u8 = 0;

/// `drr_write_embedded` (`zfs send -e`, OpenZFS `dump_write_embedded`): a block whose
/// pointer is embedded, sent as the pointer's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteEmbeddedRecord {
    pub object: ObjectId,
    pub offset: u64,
    /// `drr_length`: the block size.
    pub length: u64,
    /// `drr_compression`: how `data` is compressed (an OpenZFS compression id).
    pub compression: u8,
    /// `drr_etype` (`BP_EMBEDDED_TYPE_DATA`).
    pub etype: u8,
    /// `drr_lsize`: what `data` decompresses to.
    pub logical_size_bytes: u32,
    /// The `drr_psize` bytes of the payload (padded to 8 on the wire).
    pub data: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Begin(BeginRecord),
    Object(ObjectRecord),
    FreeObjects {
        first: ObjectId,
        count: u64,
    },
    Write(WriteRecord),
    WriteEmbedded(WriteEmbeddedRecord),
    /// `DRR_SPILL`: an object's spill block, whole (`dump_spill`).
    Spill(SpillRecord),
    Free {
        object: ObjectId,
        offset: u64,
        length: u64,
    },
    End {
        to_guid: Guid,
    },
}

/// `struct drr_spill` (non-raw): the header's union holds object @8, length @16 (the
/// block's logical size, the payload's), toguid @24, flags u8 @32 (`DRR_SPILL_UNMODIFIED`
/// 1: an incremental's unchanged spill block, resent for old receivers and ignored by
/// those that know `DRR_FLAG_SPILL_BLOCK`), compression type @33, compressed size @40,
/// salt/iv/mac and `drr_type` (raw streams only, zero here); the payload is the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillRecord {
    pub object: ObjectId,
    pub flags: u8,
    pub data: Vec<u8>,
}

/// `DRR_SPILL_UNMODIFIED`.
pub const DRR_SPILL_UNMODIFIED: u8 = 1 << 0;

/// Zetta's nvlist as OpenZFS's XDR nvlist (strings, u64s, byte arrays, nested lists).
pub fn nvlist_to_xdr(list: &NvList) -> XdrNvList {
    let mut out = XdrNvList::new();
    for (name, value) in &list.entries {
        let v = match value {
            NvValue::U64(v) => XdrValue::Uint64(*v),
            NvValue::Str(s) => XdrValue::String(s.as_bytes().to_vec()),
            NvValue::Bytes(b) => XdrValue::ByteArray(b.clone()),
            NvValue::List(l) => XdrValue::NvList(nvlist_to_xdr(l)),
            NvValue::ListArray(a) => XdrValue::NvListArray(a.iter().map(nvlist_to_xdr).collect()),
            NvValue::U64Array(a) => XdrValue::Uint64Array(a.clone()),
        };
        out.add(name, v);
    }
    out
}

/// An XDR nvlist as Zetta's nvlist: integers become u64 (booleans 1), byte arrays bytes;
/// names and strings must be UTF-8.
pub fn nvlist_from_xdr(list: &XdrNvList) -> Result<NvList, String> {
    let mut out = NvList::new();
    for pair in &list.pairs {
        let name =
            std::str::from_utf8(&pair.name).map_err(|_| "nvlist name is not UTF-8".to_string())?;
        let value = match &pair.value {
            XdrValue::Boolean => NvValue::U64(1),
            XdrValue::BooleanValue(b) => NvValue::U64(u64::from(*b)),
            XdrValue::Byte(v) | XdrValue::Uint8(v) => NvValue::U64(u64::from(*v)),
            XdrValue::Int8(v) => NvValue::U64(*v as u64),
            XdrValue::Int16(v) => NvValue::U64(*v as u64),
            XdrValue::Uint16(v) => NvValue::U64(u64::from(*v)),
            XdrValue::Int32(v) => NvValue::U64(*v as u64),
            XdrValue::Uint32(v) => NvValue::U64(u64::from(*v)),
            XdrValue::Int64(v) | XdrValue::Hrtime(v) => NvValue::U64(*v as u64),
            XdrValue::Uint64(v) | XdrValue::DoubleBits(v) => NvValue::U64(*v),
            XdrValue::String(s) => NvValue::Str(
                String::from_utf8(s.clone()).map_err(|_| format!("{name}: not UTF-8"))?,
            ),
            XdrValue::ByteArray(b) | XdrValue::Uint8Array(b) => NvValue::Bytes(b.clone()),
            XdrValue::Uint64Array(a) => NvValue::U64Array(a.clone()),
            XdrValue::NvList(l) => NvValue::List(nvlist_from_xdr(l)?),
            XdrValue::NvListArray(a) => NvValue::ListArray(
                a.iter()
                    .map(nvlist_from_xdr)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => return Err(format!("{name}: unsupported nvpair type")),
        };
        out.entries.insert(name.to_string(), value);
    }
    Ok(out)
}

/// The BEGIN payload: the info nvlist without the pairs that live in fixed fields, XDR
/// packed (empty when nothing is left, as OpenZFS sends a non-resuming substream).
fn begin_payload(info: &NvList) -> Vec<u8> {
    let mut rest = info.clone();
    rest.remove("toname");
    rest.remove("type");
    if rest.entries.is_empty() {
        return Vec::new();
    }
    // Only names and values Zetta chose; packing cannot fail on them.
    nvpair_xdr::pack(&nvlist_to_xdr(&rest)).unwrap_or_default()
}

fn put_u32(h: &mut [u8; HEADER_SIZE_BYTES], at: usize, v: u32) {
    h[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(h: &mut [u8; HEADER_SIZE_BYTES], at: usize, v: u64) {
    h[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A record's header (checksum field zero) and payload, for a substream whose to guid is
/// `to_guid`.
pub fn encode_record(record: &Record, to_guid: Guid) -> ([u8; HEADER_SIZE_BYTES], Vec<u8>) {
    let mut h = [0u8; HEADER_SIZE_BYTES];
    let payload = match record {
        Record::Begin(b) => {
            let payload = begin_payload(&b.info);
            put_u32(&mut h, 0, DRR_BEGIN);
            put_u32(&mut h, 4, payload.len() as u32);
            put_u64(&mut h, 8, BACKUP_MAGIC);
            let hdrtype = if b.compound {
                DMU_COMPOUNDSTREAM
            } else {
                DMU_SUBSTREAM
            };
            put_u64(&mut h, 16, hdrtype | b.features << 2);
            put_u64(&mut h, 24, b.creation_time);
            put_u32(&mut h, 32, b.info.get_u64("type").unwrap_or(2) as u32);
            put_u32(&mut h, 36, b.flags);
            put_u64(&mut h, 40, b.to_guid.0);
            put_u64(&mut h, 48, b.from_guid.0);
            let name = b.info.get_str("toname").unwrap_or_default().as_bytes();
            let n = name.len().min(TONAME_SIZE_BYTES - 1);
            h[56..56 + n].copy_from_slice(&name[..n]);
            payload
        }
        Record::Object(o) => {
            put_u32(&mut h, 0, DRR_OBJECT);
            put_u64(&mut h, 8, o.object.0);
            put_u32(&mut h, 16, u32::from(o.object_type));
            put_u32(&mut h, 20, u32::from(o.bonus_type));
            put_u32(&mut h, 24, o.block_size_bytes);
            put_u32(&mut h, 28, o.bonus.len() as u32);
            h[32] = o.checksum;
            h[33] = o.compress;
            h[34] = o.dn_slots;
            h[35] = o.flags;
            put_u64(&mut h, 40, to_guid.0);
            let mut bonus = o.bonus.clone();
            bonus.resize(o.bonus.len().div_ceil(8) * 8, 0);
            bonus
        }
        Record::FreeObjects { first, count } => {
            put_u32(&mut h, 0, DRR_FREEOBJECTS);
            put_u64(&mut h, 8, first.0);
            put_u64(&mut h, 16, *count);
            put_u64(&mut h, 24, to_guid.0);
            Vec::new()
        }
        Record::Write(w) => {
            put_u32(&mut h, 0, DRR_WRITE);
            put_u64(&mut h, 8, w.object.0);
            put_u32(&mut h, 16, u32::from(w.object_type));
            put_u64(&mut h, 24, w.offset);
            put_u64(&mut h, 32, w.length);
            put_u64(&mut h, 40, to_guid.0);
            h[48] = w.checksum;
            h[49] = w.flags;
            h[50] = w.compression;
            for (i, word) in w.key.iter().enumerate() {
                put_u64(&mut h, 56 + 8 * i, *word);
            }
            if w.compression != 0 {
                put_u64(&mut h, 96, w.data.len() as u64);
            }
            w.data.clone()
        }
        Record::WriteEmbedded(w) => {
            put_u32(&mut h, 0, DRR_WRITE_EMBEDDED);
            put_u64(&mut h, 8, w.object.0);
            put_u64(&mut h, 16, w.offset);
            put_u64(&mut h, 24, w.length);
            put_u64(&mut h, 32, to_guid.0);
            h[40] = w.compression;
            h[41] = w.etype;
            put_u32(&mut h, 48, w.logical_size_bytes);
            put_u32(&mut h, 52, w.data.len() as u32);
            let mut payload = w.data.clone();
            payload.resize(w.data.len().div_ceil(8) * 8, 0);
            payload
        }
        Record::Spill(sp) => {
            put_u32(&mut h, 0, DRR_SPILL);
            put_u64(&mut h, 8, sp.object.0);
            put_u64(&mut h, 16, sp.data.len() as u64);
            put_u64(&mut h, 24, to_guid.0);
            h[32] = sp.flags;
            sp.data.clone()
        }
        Record::Free {
            object,
            offset,
            length,
        } => {
            put_u32(&mut h, 0, DRR_FREE);
            put_u64(&mut h, 8, object.0);
            put_u64(&mut h, 16, *offset);
            put_u64(&mut h, 24, *length);
            put_u64(&mut h, 32, to_guid.0);
            Vec::new()
        }
        Record::End { to_guid } => {
            put_u32(&mut h, 0, DRR_END);
            put_u64(&mut h, 40, to_guid.0);
            Vec::new()
        }
    };
    (h, payload)
}

/// Encodes records of one substream, keeping its running checksum (`dump_record`).
#[derive(Clone, Debug, Default)]
pub struct RecordWriter {
    running: Fletcher4,
    to_guid: Guid,
    bytes: u64,
}

impl RecordWriter {
    pub fn new() -> RecordWriter {
        RecordWriter::default()
    }

    /// Bytes written so far in this substream.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends one record to `out`: the running sum goes into `drr_checksum` (not BEGIN's)
    /// and, for END, into `drr_end.drr_checksum` too.
    pub fn emit_record(&mut self, out: &mut Vec<u8>, record: &Record) {
        if let Record::Begin(b) = record {
            self.running = Fletcher4::new();
            self.to_guid = b.to_guid;
        }
        let (h, payload) = encode_record(record, self.to_guid);
        self.emit_encoded(out, h, payload, record);
    }

    /// Appends the BEGIN of a compound stream (libzfs `send_prelim_records`) whose payload
    /// is `payload`, an XDR nvlist packed by the caller (pair order and booleans as libzfs
    /// adds them, which `NvList` cannot keep); `payload` empty: no nvlist, as for `-I`.
    pub fn emit_compound_begin(
        &mut self,
        out: &mut Vec<u8>,
        toname: &str,
        features: u64,
        payload: Vec<u8>,
    ) {
        let mut info = NvList::new();
        info.set_str("toname", toname);
        let record = Record::Begin(BeginRecord {
            features,
            compound: true,
            flags: 0,
            to_guid: Guid(0),
            from_guid: Guid(0),
            creation_time: 0,
            info,
        });
        self.running = Fletcher4::new();
        self.to_guid = Guid(0);
        let (mut h, _) = encode_record(&record, Guid(0));
        // The type word of a compound header is 0 (libzfs leaves drr_type of the BEGIN's
        // objset zero), and the payload length is the caller's.
        put_u32(&mut h, 32, 0);
        put_u32(&mut h, 4, payload.len() as u32);
        self.emit_encoded(out, h, payload, &record);
    }

    fn emit_encoded(
        &mut self,
        out: &mut Vec<u8>,
        mut h: [u8; HEADER_SIZE_BYTES],
        payload: Vec<u8>,
        record: &Record,
    ) {
        if let Record::End { .. } = record {
            for (i, sum) in self.running.current().iter().enumerate() {
                put_u64(&mut h, 8 + 8 * i, *sum);
            }
        }
        self.running.update(&h[..CHECKSUM_OFFSET]);
        if !matches!(record, Record::Begin(_)) {
            for (i, sum) in self.running.current().iter().enumerate() {
                put_u64(&mut h, CHECKSUM_OFFSET + 8 * i, *sum);
            }
        }
        self.running.update(&h[CHECKSUM_OFFSET..]);
        self.running.update(&payload);
        out.extend_from_slice(&h);
        out.extend_from_slice(&payload);
        self.bytes += record_size_bytes(payload.len());
    }

    /// Counts a record without producing it (dry-run estimates).
    pub fn count(&mut self, payload_len: usize) {
        self.bytes += record_size_bytes(payload_len);
    }
}

/// The END record libzfs writes after the last substream of a compound stream
/// (`send_conclusion_record`): all zeros but its type.
pub fn conclusion_record() -> [u8; HEADER_SIZE_BYTES] {
    let mut h = [0u8; HEADER_SIZE_BYTES];
    put_u32(&mut h, 0, DRR_END);
    h
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

fn word32(bytes: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(w)
}

fn stored_sum(h: &[u8], at: usize) -> [u64; 4] {
    [0, 8, 16, 24].map(|i| word(h, at + i))
}

/// Incremental parser: push bytes as they come, pull verified records.
#[derive(Debug, Default)]
pub struct RecordParser {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed.
    start: usize,
    /// Stream bytes consumed before `buffer[start]`.
    offset_bytes: u64,
    /// The running sum after the last record handed out.
    running: Fletcher4,
    /// Inside a substream (after BEGIN, before END).
    in_substream: bool,
    /// Number of the next record in its substream (BEGIN is 0), for messages.
    seq: u64,
    last_record_offset_bytes: u64,
}

impl RecordParser {
    pub fn new() -> RecordParser {
        RecordParser::default()
    }

    /// Appends input bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// Stream bytes consumed so far (complete records).
    pub fn offset_bytes(&self) -> u64 {
        self.offset_bytes
    }

    /// Stream offset where the record last returned starts.
    pub fn last_record_offset_bytes(&self) -> u64 {
        self.last_record_offset_bytes
    }

    /// Whether the input seen so far ends exactly between two substreams.
    pub fn at_substream_boundary(&self) -> bool {
        !self.in_substream && self.start == self.buffer.len()
    }

    /// Called when the input has ended: an error unless it ended between substreams.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.at_substream_boundary() {
            Ok(())
        } else {
            Err(StreamError::Truncated {
                offset_bytes: self.offset_bytes + (self.buffer.len() - self.start) as u64,
            })
        }
    }

    /// The next complete, verified record, or `None` when more input is needed.
    pub fn next_record(&mut self) -> Result<Option<Record>, StreamError> {
        loop {
            let available = &self.buffer[self.start..];
            if available.len() < HEADER_SIZE_BYTES {
                return Ok(None);
            }
            let h = &available[..HEADER_SIZE_BYTES];
            let kind = word32(h, 0);
            // Between substreams: a BEGIN, or the END that closes a compound stream
            // (skipped). libzfs writes it all zeros; `zstream redup` (and any writer that
            // checksums every record) puts a running checksum in its trailer, which libzfs's
            // `zfs_receive_impl` never reads: only the rest must be zeros.
            if !self.in_substream
                && kind == DRR_END
                && h[4..CHECKSUM_OFFSET].iter().all(|b| *b == 0)
            {
                self.start += HEADER_SIZE_BYTES;
                self.offset_bytes += HEADER_SIZE_BYTES as u64;
                continue;
            }
            return self.next_in_substream();
        }
    }

    fn next_in_substream(&mut self) -> Result<Option<Record>, StreamError> {
        let available = &self.buffer[self.start..];
        let h = &available[..HEADER_SIZE_BYTES];
        let kind = word32(h, 0);
        let seq = self.seq;
        match (self.in_substream, kind == DRR_BEGIN) {
            (false, true) | (true, false) => {}
            (false, false) => {
                if self.offset_bytes == 0 {
                    return Err(StreamError::BadMagic {
                        offset_bytes: self.offset_bytes,
                    });
                }
                return Err(StreamError::OutOfOrder {
                    seq,
                    why: "a substream must start with BEGIN".to_string(),
                });
            }
            (true, true) => {
                return Err(StreamError::OutOfOrder {
                    seq,
                    why: "BEGIN inside a substream".to_string(),
                })
            }
        }
        if kind == DRR_BEGIN {
            let magic = word(h, 8);
            if magic != BACKUP_MAGIC {
                if magic == BACKUP_MAGIC.swap_bytes() {
                    return Err(bad(seq, "byteswapped streams are not supported"));
                }
                return Err(StreamError::BadMagic {
                    offset_bytes: self.offset_bytes,
                });
            }
        }
        let payload_len = payload_len(h, seq)?;
        let mut running = if kind == DRR_BEGIN {
            Fletcher4::new()
        } else {
            self.running.clone()
        };
        let before_header = running.current();
        running.update(&h[..CHECKSUM_OFFSET]);
        if kind != DRR_BEGIN {
            let stored = stored_sum(h, CHECKSUM_OFFSET);
            if stored != [0; 4] && stored != running.current() {
                return Err(StreamError::Checksum { seq });
            }
        }
        running.update(&h[CHECKSUM_OFFSET..]);
        let total = HEADER_SIZE_BYTES + payload_len;
        if kind == DRR_END {
            if stored_sum(h, 8) != before_header {
                return Err(StreamError::Checksum { seq });
            }
        } else {
            // The payload is covered by the next record's header: wait for it.
            if available.len() < total + HEADER_SIZE_BYTES {
                return Ok(None);
            }
            running.update(&available[HEADER_SIZE_BYTES..total]);
            let next = &available[total..total + HEADER_SIZE_BYTES];
            let next_kind = word32(next, 0);
            if next_kind == DRR_BEGIN {
                return Err(StreamError::OutOfOrder {
                    seq: seq + 1,
                    why: "BEGIN inside a substream".to_string(),
                });
            }
            let mut ahead = running.clone();
            ahead.update(&next[..CHECKSUM_OFFSET]);
            let stored = stored_sum(next, CHECKSUM_OFFSET);
            if stored != [0; 4] && stored != ahead.current() {
                return Err(StreamError::Checksum { seq: seq + 1 });
            }
        }
        let payload = &available[HEADER_SIZE_BYTES..total];
        let record = decode_record(h, payload, seq)?;
        self.running = running;
        self.in_substream = !matches!(record, Record::End { .. });
        self.seq = if self.in_substream { seq + 1 } else { 0 };
        self.start += total;
        self.last_record_offset_bytes = self.offset_bytes;
        self.offset_bytes += total as u64;
        Ok(Some(record))
    }
}

/// The payload size a header announces, checked against the limits before anything is
/// buffered.
fn payload_len(h: &[u8], seq: u64) -> Result<usize, StreamError> {
    let kind = word32(h, 0);
    let len = match kind {
        DRR_BEGIN => u64::from(word32(h, 4)),
        DRR_OBJECT => {
            if word32(h, 36) != 0 {
                return Err(bad(seq, "raw OBJECT records are not supported"));
            }
            let bonus = u64::from(word32(h, 28));
            if bonus as usize > BONUS_SIZE_MAX_BYTES {
                return Err(bad(seq, &format!("bonus of {bonus} bytes")));
            }
            bonus.div_ceil(8) * 8
        }
        DRR_WRITE => {
            if h[50] != 0 {
                word(h, 96)
            } else {
                word(h, 32)
            }
        }
        DRR_FREEOBJECTS | DRR_FREE | DRR_END => 0,
        DRR_WRITE_BYREF => return Err(StreamError::Dedup),
        DRR_WRITE_EMBEDDED => {
            let psize = word32(h, 52);
            if psize == 0 || psize > EMBEDDED_PAYLOAD_MAX_BYTES {
                return Err(bad(seq, &format!("embedded payload of {psize} bytes")));
            }
            u64::from(psize).div_ceil(8) * 8
        }
        DRR_SPILL => {
            // receive_spill: SPA_MINBLOCKSIZE..=maxblocksize; raw spills are refused.
            let length = word(h, 16);
            if !(512..=BLOCK_SIZE_MAX_BYTES).contains(&length) {
                return Err(bad(seq, &format!("spill block of {length} bytes")));
            }
            if h[33] != 0 || word(h, 40) != 0 {
                return Err(bad(seq, "raw SPILL records are not supported"));
            }
            length
        }
        DRR_OBJECT_RANGE | DRR_REDACT => {
            return Err(bad(seq, &format!("unsupported record type {kind}")))
        }
        _ => return Err(bad(seq, &format!("unknown record type {kind}"))),
    };
    if len > u64::from(PAYLOAD_SIZE_MAX_BYTES) || (kind == DRR_BEGIN && len % 4 != 0) {
        return Err(bad(seq, &format!("payload of {len} bytes")));
    }
    Ok(len as usize)
}

fn bad(seq: u64, why: &str) -> StreamError {
    StreamError::BadRecord {
        seq,
        why: why.to_string(),
    }
}

fn object_id(seq: u64, value: u64) -> Result<ObjectId, StreamError> {
    if value == 0 || value >= OBJECT_ID_LIMIT {
        return Err(bad(seq, &format!("object number {value}")));
    }
    Ok(ObjectId(value))
}

/// Checks a header's fields for its type and builds the typed record.
fn decode_record(h: &[u8], payload: &[u8], seq: u64) -> Result<Record, StreamError> {
    let zero = |from: usize, to: usize| h[from..to].iter().all(|b| *b == 0);
    match word32(h, 0) {
        DRR_BEGIN => {
            let versioninfo = word(h, 16);
            let hdrtype = versioninfo & 3;
            let features = versioninfo >> 2;
            if hdrtype != DMU_SUBSTREAM && hdrtype != DMU_COMPOUNDSTREAM {
                return Err(StreamError::UnsupportedVersion(hdrtype));
            }
            // libzfs names DEDUP alone ("deprecated feature"); DEDUPPROPS without it is
            // just an unknown bit.
            if features & FEATURE_DEDUP != 0 {
                return Err(StreamError::Dedup);
            }
            if features & !FEATURES_KNOWN != 0 {
                return Err(StreamError::UnknownFeatures(features));
            }
            let flags = word32(h, 36);
            if flags & !BEGIN_FLAGS_KNOWN != 0 {
                return Err(bad(seq, &format!("unknown BEGIN flags {flags:#x}")));
            }
            let mut info = if payload.is_empty() {
                NvList::new()
            } else {
                let unpacked = nvpair_xdr::unpack(payload).map_err(|e| bad(seq, &e.to_string()))?;
                nvlist_from_xdr(&unpacked.list).map_err(|e| bad(seq, &e))?
            };
            let name = &h[56..HEADER_SIZE_BYTES];
            let len = name
                .iter()
                .position(|b| *b == 0)
                .ok_or_else(|| bad(seq, "snapshot name is not terminated"))?;
            if name[len..].iter().any(|b| *b != 0) {
                return Err(bad(seq, "bytes after the snapshot name"));
            }
            let toname = std::str::from_utf8(&name[..len])
                .map_err(|_| bad(seq, "malformed snapshot name"))?;
            let compound = hdrtype == DMU_COMPOUNDSTREAM;
            if !compound && !toname.contains('@') {
                return Err(bad(seq, "BEGIN names no snapshot"));
            }
            let os_type = word32(h, 32);
            if !compound && !matches!(os_type, 2 | 3) {
                return Err(bad(seq, &format!("objset type {os_type}")));
            }
            if flags & DRR_FLAG_CLONE != 0 && word(h, 48) == 0 {
                return Err(bad(seq, "clone stream without an origin"));
            }
            info.set_str("toname", toname)
                .set_u64("type", u64::from(os_type));
            Ok(Record::Begin(BeginRecord {
                features,
                compound,
                flags,
                to_guid: Guid(word(h, 40)),
                from_guid: Guid(word(h, 48)),
                creation_time: word(h, 24),
                info,
            }))
        }
        DRR_OBJECT => {
            let object = object_id(seq, word(h, 8))?;
            let object_type = word32(h, 16);
            let bonus_type = word32(h, 20);
            if object_type == 0 || object_type > 255 || bonus_type > 255 {
                return Err(bad(seq, &format!("object type {object_type}")));
            }
            let block_size = u64::from(word32(h, 24));
            if !(512..=BLOCK_SIZE_MAX_BYTES).contains(&block_size) || block_size % 512 != 0 {
                return Err(bad(seq, &format!("block size {block_size}")));
            }
            let dn_slots = h[34];
            if dn_slots > 1 {
                return Err(bad(seq, "large dnodes are not supported"));
            }
            let flags = h[35];
            if flags & !DRR_OBJECT_SPILL != 0 || !zero(48, 64) {
                return Err(bad(seq, "raw OBJECT fields are set"));
            }
            let bonus_len = word32(h, 28) as usize;
            if payload[bonus_len..].iter().any(|b| *b != 0) {
                return Err(bad(seq, "nonzero bonus padding"));
            }
            Ok(Record::Object(ObjectRecord {
                object,
                object_type: object_type as u8,
                bonus_type: bonus_type as u8,
                block_size_bytes: block_size as u32,
                checksum: h[32],
                compress: h[33],
                dn_slots: dn_slots.max(1),
                flags,
                bonus: payload[..bonus_len].to_vec(),
            }))
        }
        DRR_FREEOBJECTS => {
            // OpenZFS frees from object 0 (the meta-dnode's slot, never an object) and
            // past the last object to the end of the object space: the range is clipped
            // to real object numbers, possibly to nothing (count 0, a no-op).
            let (mut first, mut count) = (word(h, 8), word(h, 16));
            if first == 0 {
                first = 1;
                count = count.saturating_sub(1);
            }
            let first = first.min(OBJECT_ID_LIMIT - 1);
            Ok(Record::FreeObjects {
                first: ObjectId(first),
                count: count.min(OBJECT_ID_LIMIT - first),
            })
        }
        DRR_WRITE => {
            let object = object_id(seq, word(h, 8))?;
            let object_type = word32(h, 16);
            let (offset, length) = (word(h, 24), word(h, 32));
            if object_type > 255
                || length == 0
                || length > BLOCK_SIZE_MAX_BYTES
                || offset.checked_add(length).is_none()
            {
                return Err(bad(seq, &format!("write of {length} bytes at {offset}")));
            }
            let compression = h[50];
            if !zero(104, 140) {
                return Err(bad(seq, "raw WRITE fields are set"));
            }
            if compression != 0 {
                if !is_compressor_id(u64::from(compression)) {
                    return Err(bad(
                        seq,
                        &format!("compressed write (algorithm {compression})"),
                    ));
                }
            } else if word(h, 96) != 0 {
                return Err(bad(seq, "compressed size of an uncompressed write"));
            }
            Ok(Record::Write(WriteRecord {
                object,
                object_type: object_type as u8,
                offset,
                length,
                checksum: h[48],
                flags: h[49],
                key: [56, 64, 72, 80, 88].map(|at| word(h, at)),
                compression,
                logical_size_bytes: if compression != 0 { length } else { 0 },
                data: payload.to_vec(),
            }))
        }
        DRR_WRITE_EMBEDDED => {
            let object = object_id(seq, word(h, 8))?;
            let (offset, length) = (word(h, 16), word(h, 24));
            let (compression, etype) = (h[40], h[41]);
            let (lsize, psize) = (word32(h, 48), word32(h, 52));
            if length == 0
                || length > BLOCK_SIZE_MAX_BYTES
                || offset.checked_add(length).is_none()
                || lsize == 0
                || u64::from(lsize) > length
            {
                return Err(bad(
                    seq,
                    &format!("embedded write of {lsize} of {length} bytes at {offset}"),
                ));
            }
            if etype != BP_EMBEDDED_TYPE_DATA {
                return Err(bad(seq, &format!("embedded block of type {etype}")));
            }
            // Compressed with one of OpenZFS's compressors, or stored as is (off, 2).
            let stored_as_is = compression == 2 && psize == lsize;
            if !stored_as_is && !is_compressor_id(u64::from(compression)) {
                return Err(bad(
                    seq,
                    &format!("embedded block compressed with {compression}"),
                ));
            }
            if !zero(42, 48) {
                return Err(bad(seq, "nonzero embedded write padding"));
            }
            let data = payload.get(..psize as usize).unwrap_or_default();
            if payload[data.len()..].iter().any(|b| *b != 0) {
                return Err(bad(seq, "nonzero embedded payload padding"));
            }
            Ok(Record::WriteEmbedded(WriteEmbeddedRecord {
                object,
                offset,
                length,
                compression,
                etype,
                logical_size_bytes: lsize,
                data: data.to_vec(),
            }))
        }
        DRR_SPILL => {
            let object = object_id(seq, word(h, 8))?;
            let flags = h[32];
            if flags & !DRR_SPILL_UNMODIFIED != 0 || !zero(34, 40) || !zero(48, 88) {
                return Err(bad(seq, &format!("SPILL flags {flags:#x} or raw fields")));
            }
            Ok(Record::Spill(SpillRecord {
                object,
                flags,
                data: payload.to_vec(),
            }))
        }
        DRR_FREE => {
            let object = object_id(seq, word(h, 8))?;
            let (offset, length) = (word(h, 16), word(h, 24));
            if length == 0 {
                return Err(bad(seq, "malformed FREE"));
            }
            Ok(Record::Free {
                object,
                offset,
                length,
            })
        }
        _ => Ok(Record::End {
            to_guid: Guid(word(h, 40)),
        }),
    }
}
