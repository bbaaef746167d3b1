//! The replication stream format, version 1: records, their encoding and the incremental
//! parser (our counterpart of `dmu_replay_record_t` in OpenZFS `zfs_ioctl.h`, with our own
//! bytes; docs/STREAM.md has the full description and the golden vectors).
//!
//! A stream is one or more substreams back to back; a substream is `BEGIN`, then data
//! records, then `END`. Every record is a 64-byte header, a payload padded with zeros to a
//! multiple of 8 bytes, and a 32-byte trailer:
//!
//! ```text
//! header (64 bytes, little-endian)
//!  0 magic "ZTrc"  4 type u16   6 flags u16   8 payload_len u32   12 reserved u32 (0)
//! 16 seq u64 (record number in its substream; BEGIN is 0)
//! 24 w0 u64   32 w1 u64   40 w2 u64   48 w3 u64   56 w4 u64   (meaning by type)
//! payload (payload_len bytes) + zero padding to a multiple of 8
//! trailer (32 bytes): fletcher-4 (a, b, c, d) of every byte of the substream before it
//! ```
//!
//! | type | w0 | w1 | w2 | w3 | w4 | payload |
//! |---|---|---|---|---|---|---|
//! | 1 BEGIN | version (1) | features | to guid | from guid (0 = full) | creation time | nvlist |
//! | 2 OBJECT | object | type, bonus type, dnode flags, checksum, compress (bytes 0..5) | block size | size | 0 | bonus |
//! | 3 FREEOBJECTS | first object | count | 0 | 0 | 0 | none |
//! | 4 WRITE | object | offset | length | compression id | logical block size | data |
//! | 5 FREE | object | offset | length (u64::MAX = to the end) | 0 | 0 | none |
//! | 6 END | to guid | 0 | 0 | 0 | 0 | none |
//!
//! A WRITE with flag bit 0 set carries a block in its stored compressed form (`zfs send
//! -c`): it decompresses to `w4` bytes, of which the first `length` are written.
//!
//! Integrity: the trailer is the running checksum of the substream, so a flipped bit, a
//! dropped, duplicated or reordered record, or a splice of two streams fails at the first
//! record it touches; the END trailer covers the whole substream. The parser checks a
//! header's lengths before it buffers the payload, so a hostile length never makes it
//! allocate more than one largest record. Nothing here panics on input bytes.

use super::error::StreamError;
use crate::nvlist::NvList;
use crate::types::{Guid, ObjectId, BLOCK_SIZE_MAX_BYTES};
use zetta_zcommon::checksum::Fletcher4;

/// A compression id a compressed WRITE may carry: one of OpenZFS's compressors (lzjb 3,
/// gzip-1..9 5..=13, zle 14, lz4 15, zstd 16), never off, inherit, on or empty.
fn is_compressor_id(id: u64) -> bool {
    id == 3 || (5..=16).contains(&id)
}

/// The stream version BEGIN records carry. 1: first format. 2: a compressed WRITE record's
/// id and stored form are OpenZFS's (`zcommon::compress`; 0 still means uncompressed, as
/// OpenZFS's `drr_compressiontype`); version-1 streams are refused (their ids mean other
/// algorithms now).
pub const STREAM_VERSION: u64 = 2;
pub const RECORD_MAGIC: [u8; 4] = *b"ZTrc";
pub const HEADER_SIZE_BYTES: usize = 64;
pub const TRAILER_SIZE_BYTES: usize = 32;
/// Largest payload: a 16 MiB block (plus room for a stored form's header), or a BEGIN nvlist.
pub const PAYLOAD_SIZE_MAX_BYTES: u32 = (BLOCK_SIZE_MAX_BYTES as u32) + 4096;
/// Largest bonus buffer an OBJECT record may carry (one block pointer in the dnode).
pub const BONUS_SIZE_MAX_BYTES: usize = 320;
/// Object numbers stay below this (as in `dmu::objset`).
pub const OBJECT_ID_LIMIT: u64 = crate::dmu::objset::OBJECT_ID_MAX;
/// The magic OpenZFS BEGIN records carry at byte 8, to recognise their streams.
const OPENZFS_BACKUP_MAGIC: u64 = 0x2_f5ba_cbac;

pub const RECORD_BEGIN: u16 = 1;
pub const RECORD_OBJECT: u16 = 2;
pub const RECORD_FREEOBJECTS: u16 = 3;
pub const RECORD_WRITE: u16 = 4;
pub const RECORD_FREE: u16 = 5;
pub const RECORD_END: u16 = 6;

/// WRITE flag: the payload is a stored compressed block.
pub const WRITE_FLAG_COMPRESSED: u16 = 1;

/// BEGIN feature bits. A receiver refuses bits it does not know.
pub const FEATURE_COMPRESSED: u64 = 1 << 0;
/// A resumed send (`zfs send -t`): the nvlist says where it starts.
pub const FEATURE_RESUMING: u64 = 1 << 1;
/// A package header of a replication stream (`-R`): no data records, the nvlist lists the
/// filesystems and snapshots that follow.
pub const FEATURE_COMPOUND: u64 = 1 << 2;
/// A new filesystem cloned from the snapshot whose guid is the from guid.
pub const FEATURE_CLONE: u64 = 1 << 3;
pub const FEATURES_KNOWN: u64 =
    FEATURE_COMPRESSED | FEATURE_RESUMING | FEATURE_COMPOUND | FEATURE_CLONE;

/// The bytes on the wire of a record whose payload is `payload_len` bytes.
pub fn record_size_bytes(payload_len: usize) -> u64 {
    (HEADER_SIZE_BYTES + payload_len.div_ceil(8) * 8 + TRAILER_SIZE_BYTES) as u64
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeginRecord {
    pub features: u64,
    pub to_guid: Guid,
    pub from_guid: Guid,
    pub creation_time: u64,
    /// `toname` (pool/fs@snap) always; `props`, `holds`, `resume_object`, `resume_offset`,
    /// `fss` (compound) as the features say.
    pub info: NvList,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRecord {
    pub object: ObjectId,
    pub object_type: u8,
    pub bonus_type: u8,
    pub dnode_flags: u8,
    pub checksum: u8,
    pub compress: u8,
    pub block_size_bytes: u32,
    pub size_bytes: u64,
    pub bonus: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    pub object: ObjectId,
    pub offset: u64,
    pub length: u64,
    /// 0: `data` is the logical bytes; else the algorithm id of the stored form in `data`.
    pub compression: u8,
    /// The logical size the stored form decompresses to (0 when not compressed).
    pub logical_size_bytes: u64,
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
    Free {
        object: ObjectId,
        offset: u64,
        length: u64,
    },
    End {
        to_guid: Guid,
    },
}

/// Encodes records of one substream, keeping its running checksum and sequence number.
#[derive(Clone, Debug, Default)]
pub struct RecordWriter {
    running: Fletcher4,
    seq: u64,
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

    /// Appends one record to `out`.
    pub fn emit(
        &mut self,
        out: &mut Vec<u8>,
        kind: u16,
        flags: u16,
        words: [u64; 5],
        payload: &[u8],
    ) {
        assert!(payload.len() <= PAYLOAD_SIZE_MAX_BYTES as usize);
        let start = out.len();
        out.extend_from_slice(&RECORD_MAGIC);
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        for word in words {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(payload);
        out.resize(out.len() + (8 - payload.len() % 8) % 8, 0);
        self.running.update(&out[start..]);
        let sums = self.running.current();
        let trailer_at = out.len();
        for sum in sums {
            out.extend_from_slice(&sum.to_le_bytes());
        }
        self.running.update(&out[trailer_at..]);
        self.seq += 1;
        self.bytes += (out.len() - start) as u64;
        debug_assert_eq!((out.len() - start) as u64, record_size_bytes(payload.len()));
    }

    /// Counts a record without producing it (dry-run estimates).
    pub fn count(&mut self, payload_len: usize) {
        self.seq += 1;
        self.bytes += record_size_bytes(payload_len);
    }

    /// Appends a typed record (tests, the replication header).
    pub fn emit_record(&mut self, out: &mut Vec<u8>, record: &Record) {
        let (kind, flags, words, payload) = encode_fields(record);
        self.emit(out, kind, flags, words, &payload);
    }
}

fn encode_fields(record: &Record) -> (u16, u16, [u64; 5], Vec<u8>) {
    match record {
        Record::Begin(b) => (
            RECORD_BEGIN,
            0,
            [
                STREAM_VERSION,
                b.features,
                b.to_guid.0,
                b.from_guid.0,
                b.creation_time,
            ],
            b.info.encode(),
        ),
        Record::Object(o) => (
            RECORD_OBJECT,
            0,
            [
                o.object.0,
                u64::from(o.object_type)
                    | u64::from(o.bonus_type) << 8
                    | u64::from(o.dnode_flags) << 16
                    | u64::from(o.checksum) << 24
                    | u64::from(o.compress) << 32,
                u64::from(o.block_size_bytes),
                o.size_bytes,
                0,
            ],
            o.bonus.clone(),
        ),
        Record::FreeObjects { first, count } => (
            RECORD_FREEOBJECTS,
            0,
            [first.0, *count, 0, 0, 0],
            Vec::new(),
        ),
        Record::Write(w) => (
            RECORD_WRITE,
            if w.compression != 0 {
                WRITE_FLAG_COMPRESSED
            } else {
                0
            },
            [
                w.object.0,
                w.offset,
                w.length,
                u64::from(w.compression),
                w.logical_size_bytes,
            ],
            w.data.clone(),
        ),
        Record::Free {
            object,
            offset,
            length,
        } => (
            RECORD_FREE,
            0,
            [object.0, *offset, *length, 0, 0],
            Vec::new(),
        ),
        Record::End { to_guid } => (RECORD_END, 0, [to_guid.0, 0, 0, 0, 0], Vec::new()),
    }
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

/// A decoded header, lengths checked.
struct Header {
    kind: u16,
    flags: u16,
    payload_len: usize,
    seq: u64,
    words: [u64; 5],
}

/// Incremental parser: push bytes as they come, pull verified records.
#[derive(Debug, Default)]
pub struct RecordParser {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed.
    start: usize,
    /// Stream bytes consumed before `buffer[start]`.
    offset_bytes: u64,
    running: Fletcher4,
    /// Next sequence number; `None` between substreams (a BEGIN must come).
    next_seq: Option<u64>,
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
        self.next_seq.is_none() && self.start == self.buffer.len()
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
        let available = &self.buffer[self.start..];
        if available.len() < HEADER_SIZE_BYTES {
            return Ok(None);
        }
        let header = self.decode_header(&available[..HEADER_SIZE_BYTES])?;
        let padded = header.payload_len.div_ceil(8) * 8;
        let total = HEADER_SIZE_BYTES + padded + TRAILER_SIZE_BYTES;
        if available.len() < total {
            return Ok(None);
        }
        let body = &available[..HEADER_SIZE_BYTES + padded];
        let trailer = &available[HEADER_SIZE_BYTES + padded..total];
        let mut running = if header.kind == RECORD_BEGIN {
            Fletcher4::new()
        } else {
            self.running.clone()
        };
        running.update(body);
        let expected = running.current();
        let stored = [0, 8, 16, 24].map(|at| word(trailer, at));
        if stored != expected {
            return Err(StreamError::Checksum { seq: header.seq });
        }
        running.update(trailer);
        let payload = &body[HEADER_SIZE_BYTES..HEADER_SIZE_BYTES + header.payload_len];
        if body[HEADER_SIZE_BYTES + header.payload_len..]
            .iter()
            .any(|b| *b != 0)
        {
            return Err(bad(header.seq, "nonzero payload padding"));
        }
        let record = decode_record(&header, payload)?;
        self.running = running;
        self.next_seq = match record {
            Record::End { .. } => None,
            _ => Some(header.seq + 1),
        };
        self.start += total;
        self.last_record_offset_bytes = self.offset_bytes;
        self.offset_bytes += total as u64;
        Ok(Some(record))
    }

    fn decode_header(&self, bytes: &[u8]) -> Result<Header, StreamError> {
        if bytes[..4] != RECORD_MAGIC {
            if self.offset_bytes == 0
                && (word(bytes, 8) == OPENZFS_BACKUP_MAGIC
                    || word(bytes, 8) == OPENZFS_BACKUP_MAGIC.swap_bytes())
            {
                return Err(StreamError::OpenZfsStream);
            }
            return Err(StreamError::BadMagic {
                offset_bytes: self.offset_bytes,
            });
        }
        let kind = u16::from_le_bytes([bytes[4], bytes[5]]);
        let flags = u16::from_le_bytes([bytes[6], bytes[7]]);
        let payload_len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let reserved = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
        let seq = word(bytes, 16);
        let words = [24, 32, 40, 48, 56].map(|at| word(bytes, at));
        if !(RECORD_BEGIN..=RECORD_END).contains(&kind) {
            return Err(bad(seq, &format!("unknown record type {kind}")));
        }
        if reserved != 0 {
            return Err(bad(seq, "reserved header bytes are not zero"));
        }
        let payload_max = match kind {
            RECORD_BEGIN | RECORD_WRITE => PAYLOAD_SIZE_MAX_BYTES as usize,
            RECORD_OBJECT => BONUS_SIZE_MAX_BYTES,
            _ => 0,
        };
        if payload_len as usize > payload_max {
            return Err(bad(seq, &format!("payload of {payload_len} bytes")));
        }
        let expected_seq = self.next_seq.unwrap_or(0);
        match (self.next_seq, kind == RECORD_BEGIN) {
            (None, true) | (Some(_), false) => {}
            (None, false) => {
                return Err(StreamError::OutOfOrder {
                    seq,
                    why: "a substream must start with BEGIN".to_string(),
                })
            }
            (Some(_), true) => {
                return Err(StreamError::OutOfOrder {
                    seq,
                    why: "BEGIN inside a substream".to_string(),
                })
            }
        }
        if seq != expected_seq {
            return Err(StreamError::OutOfOrder {
                seq,
                why: format!("expected record {expected_seq}"),
            });
        }
        Ok(Header {
            kind,
            flags,
            payload_len: payload_len as usize,
            seq,
            words,
        })
    }
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
fn decode_record(header: &Header, payload: &[u8]) -> Result<Record, StreamError> {
    let seq = header.seq;
    let [w0, w1, w2, w3, w4] = header.words;
    let flags_allowed = if header.kind == RECORD_WRITE {
        WRITE_FLAG_COMPRESSED
    } else {
        0
    };
    if header.flags & !flags_allowed != 0 {
        return Err(bad(seq, &format!("unknown flags {:#x}", header.flags)));
    }
    let unused_zero = |from: usize| header.words[from..].iter().all(|w| *w == 0);
    match header.kind {
        RECORD_BEGIN => {
            if w0 != STREAM_VERSION {
                return Err(StreamError::UnsupportedVersion(w0));
            }
            if w1 & !FEATURES_KNOWN != 0 {
                return Err(StreamError::UnknownFeatures(w1 & !FEATURES_KNOWN));
            }
            let info = NvList::decode(payload).map_err(|e| bad(seq, &e.to_string()))?;
            let toname = info
                .get_str("toname")
                .ok_or_else(|| bad(seq, "BEGIN without a snapshot name"))?;
            if toname.len() > 1024 || toname.contains('\0') {
                return Err(bad(seq, "malformed snapshot name"));
            }
            if w1 & FEATURE_COMPOUND == 0 && !toname.contains('@') {
                return Err(bad(seq, "BEGIN names no snapshot"));
            }
            if w1 & FEATURE_CLONE != 0 && w3 == 0 {
                return Err(bad(seq, "clone stream without an origin"));
            }
            Ok(Record::Begin(BeginRecord {
                features: w1,
                to_guid: Guid(w2),
                from_guid: Guid(w3),
                creation_time: w4,
                info,
            }))
        }
        RECORD_OBJECT => {
            let object = object_id(seq, w0)?;
            if w1 >> 40 != 0 || !unused_zero(4) {
                return Err(bad(seq, "reserved OBJECT fields are not zero"));
            }
            let object_type = w1 as u8;
            if matches!(object_type, 0 | 2 | 3) {
                return Err(bad(seq, &format!("object type {object_type}")));
            }
            if !(512..=BLOCK_SIZE_MAX_BYTES).contains(&w2) || w2 % 512 != 0 {
                return Err(bad(seq, &format!("block size {w2}")));
            }
            Ok(Record::Object(ObjectRecord {
                object,
                object_type,
                bonus_type: (w1 >> 8) as u8,
                dnode_flags: (w1 >> 16) as u8,
                checksum: (w1 >> 24) as u8,
                compress: (w1 >> 32) as u8,
                block_size_bytes: w2 as u32,
                size_bytes: w3,
                bonus: payload.to_vec(),
            }))
        }
        RECORD_FREEOBJECTS => {
            let first = object_id(seq, w0)?;
            if w1 == 0 || w1 > OBJECT_ID_LIMIT - w0 || !unused_zero(2) {
                return Err(bad(seq, &format!("FREEOBJECTS of {w1} from {w0}")));
            }
            Ok(Record::FreeObjects { first, count: w1 })
        }
        RECORD_WRITE => {
            let object = object_id(seq, w0)?;
            if w2 == 0 || w2 > BLOCK_SIZE_MAX_BYTES || w1.checked_add(w2).is_none() {
                return Err(bad(seq, &format!("write of {w2} bytes at {w1}")));
            }
            let compressed = header.flags & WRITE_FLAG_COMPRESSED != 0;
            if compressed {
                if !is_compressor_id(w3) || w4 < w2 || w4 > BLOCK_SIZE_MAX_BYTES {
                    return Err(bad(
                        seq,
                        &format!("compressed write (algorithm {w3}, logical size {w4})"),
                    ));
                }
            } else if w3 != 0 || w4 != 0 || payload.len() as u64 != w2 {
                return Err(bad(seq, "write length does not match its payload"));
            }
            Ok(Record::Write(WriteRecord {
                object,
                offset: w1,
                length: w2,
                compression: if compressed { w3 as u8 } else { 0 },
                logical_size_bytes: if compressed { w4 } else { 0 },
                data: payload.to_vec(),
            }))
        }
        RECORD_FREE => {
            let object = object_id(seq, w0)?;
            if w2 == 0 || !unused_zero(3) {
                return Err(bad(seq, "malformed FREE"));
            }
            Ok(Record::Free {
                object,
                offset: w1,
                length: w2,
            })
        }
        _ => {
            if !unused_zero(1) {
                return Err(bad(seq, "reserved END fields are not zero"));
            }
            Ok(Record::End { to_guid: Guid(w0) })
        }
    }
}
