//! The receiving side (OpenZFS `dmu_recv.c` and the loop of `zfs_receive`): stream bytes in,
//! verified records applied to a dataset, a snapshot with the sender's guid at each END.
//!
//! The `Receiver` is pushed bytes (`feed`) as they arrive and keeps everything it needs
//! between pushes, so the caller can read its input without holding the pool and lock it
//! only to apply what arrived. Records are applied only after the parser has verified
//! them (running checksum, sequence number, field ranges) and `check_order` has placed
//! them, and `apply_one` has found their object.
//!
//! Record order, as OpenZFS's `receive_writer_thread` accepts it: OBJECT and FREEOBJECTS
//! records in ascending object numbers; WRITEs in ascending (object, offset), each inside
//! one block of its object; a WRITE or FREE only for an object the dataset has (defined by
//! an earlier OBJECT, or kept from the incremental's base). A data record need not follow
//! its OBJECT: OpenZFS's sender interleaves them (OBJECT, FREE, WRITEs, next OBJECT), the
//! old traversal of zfs-fuse and OpenZFS before 0.7 sends a whole dnode block's OBJECT
//! records first and then their WRITEs. The block size a WRITE is checked against is the
//! object's dnode's (what its OBJECT made it), read when the data moves to another object;
//! that object is then `pending`, finalized (its size from its znode) when the data moves
//! on again or at END. Nothing is kept per object, so memory stays bounded.
//!
//! The resume position (`save_resume_state`'s meaning: every record before it applied) is
//! the end of the last WRITE, or an OBJECT's or FREEOBJECTS' start when data came just
//! before it; within a run of OBJECT records it stays at the run's first (in an OBJECT-first
//! stream, their data is still to come). FREE records leave it alone, as in OpenZFS.
//!
//! Data goes into a work dataset — the target itself when the receive
//! creates it, else a hidden `T/%recv` — that is committed into place only at END
//! (`recv_dsl`). Any failure before that destroys the work dataset, leaving the target as
//! it was; under `-s` the work dataset is kept and a resume token is stored on it instead.
//! Memory is bounded by one largest record plus one input chunk.

use super::error::{RecvContext, RecvError, RecvRefusal, StreamError};
use super::record::{ObjectRecord, Record, RecordParser, WriteEmbeddedRecord, WriteRecord};
use super::token::ResumeToken;
use crate::dmu::dnode::DnodePhys;
use crate::dmu::{DmuError, IoCtx, ObjectSet};
use crate::nvlist::NvList;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use crate::zio::StoredBlock;
use zetta_zcommon::compress::decompress;

/// The hidden child a receive into an existing filesystem writes into.
pub const RECV_CHILD_NAME: &str = "%recv";
/// Local property of a work dataset: empty while a receive runs, the resume token once a
/// `-s` receive was interrupted. Names starting with `%` are never user properties.
pub const RECV_STATE_PROP: &str = "%recv_state";
/// Data records applied per pool visit.
const BATCH_BYTES_MAX: u64 = 8 << 20;
/// A running `-s` receive commits and refreshes its token this often.
const RESUMABLE_SYNC_BYTES: u64 = 64 << 20;
/// FREEOBJECTS ranges up to this many objects are probed one by one.
const FREEOBJECTS_PROBE_MAX: u64 = 4096;

/// How the destination name is built from the target and the sent name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameMode {
    /// The target is the filesystem (or snapshot) to create.
    #[default]
    Exact,
    /// `-d`: the sent name without its pool goes below the target.
    DiscardFirst,
    /// `-e`: the sent name's last element goes below the target.
    LastElement,
}

/// `zfs receive` options the engine acts on.
#[derive(Clone, Debug, Default)]
pub struct RecvOptions {
    /// `-F`: roll back, destroy later snapshots, overwrite a snapshot-less filesystem.
    pub force: bool,
    /// `-n`: verify and decide, change nothing.
    pub dry_run: bool,
    /// `-s`: keep an interrupted receive's state and offer a resume token.
    pub resumable: bool,
    pub name_mode: NameMode,
    /// `-h`: do not apply the holds a stream carries.
    pub skip_holds: bool,
    /// `-o prop=value` (stored values), set locally on the received filesystem.
    pub set_props: Vec<(String, String)>,
    /// `-x prop`: the stream's value of these is ignored.
    pub exclude_props: Vec<String>,
}

/// What happened, for `zfs receive -v`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecvEvent {
    Receiving {
        incremental: bool,
        to_name: String,
        dest_snap: String,
        dry_run: bool,
    },
    Received {
        dest_snap: String,
        bytes: u64,
    },
    /// The snapshot is already there with the same guid: its substream is skipped.
    Skipped {
        dest_snap: String,
    },
    /// `-F` with a replication stream: a snapshot or filesystem the sender no longer has.
    Destroying {
        name: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Apply,
    DryRun,
    Skip,
}

/// The object whose WRITE and FREE records are arriving: its final size is applied when the
/// next object starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PendingObject {
    pub id: u64,
    /// The file size its znode says (OpenZFS streams carry no DMU object size: the ZPL's
    /// is in the bonus); `None` for other objects, whose size is where their blocks end.
    pub size_bytes: Option<u64>,
    pub block_size_bytes: u32,
}

/// One substream being received.
pub(super) struct Substream {
    pub begin: super::record::BeginRecord,
    pub to_name: String,
    pub context: super::error::RecvContext,
    pub dest_fs: String,
    pub dest_snap: String,
    /// Where the data goes: `dest_fs` (created here) or `dest_fs/%recv`.
    pub work: String,
    /// The incremental's base snapshot in `dest_fs`.
    pub base: Option<String>,
    pub mode: Mode,
    /// The stream's properties (stored as received values), if it carries any.
    pub received_props: Option<Vec<(String, String)>>,
    /// `-o` properties (stored as local values).
    pub local_props: Vec<(String, String)>,
    pub holds: Vec<String>,
    /// The header's `snapprops` for this substream's snapshot (user properties, stored
    /// on the new snapshot as received values), if it carries them.
    pub snap_props: Option<Vec<(String, String)>>,
    pub pending: Option<PendingObject>,
    /// Highest object number an OBJECT or FREEOBJECTS record placed so far (order check).
    pub last_object: u64,
    /// The last WRITE's object and end (WRITEs ascend in (object, offset)).
    pub data_pos: (u64, u64),
    /// The last record that moved `position` was an OBJECT or FREEOBJECTS.
    pub object_run: bool,
    /// Records of this substream so far (BEGIN is 0).
    pub seq: u64,
    /// Where a resumed stream would start: after the last applied record.
    pub position: (u64, u64),
    /// Parser offset at this substream's BEGIN, and bytes received before a resume.
    pub start_offset: u64,
    pub base_bytes: u64,
    pub unsynced_bytes: u64,
    /// Registered in the active set (released on drop).
    pub active_key: Option<String>,
}

impl Drop for Substream {
    fn drop(&mut self) {
        if let Some(key) = self.active_key.take() {
            super::recv_state::release_active(&key);
        }
    }
}

/// A record placed in its substream, with the stored form of a whole compressed block.
pub(super) struct Placed {
    pub record: Record,
    pub stored: Option<StoredBlock>,
    /// Its sequence number in the substream (for errors found when applying it).
    pub seq: u64,
    /// A compressed WRITE's logical size (its object's block size), else 0.
    pub sent_block_bytes: u64,
}

/// Why a substream is being torn down.
pub(super) enum Failure {
    Stream(StreamError),
    Pool(SpaError),
    Input(String),
}

/// Receives one stream (of any number of substreams) into a target.
pub struct Receiver {
    pub(super) target: String,
    pub(super) options: RecvOptions,
    pub(super) parser: RecordParser,
    /// `sendfs` and `fss` of a replication stream's package header.
    pub(super) compound: Option<(String, Vec<NvList>)>,
    pub(super) compound_open: bool,
    /// The package header lacks `not_recursive` (`-R`).
    pub(super) compound_recursive: bool,
    /// `-F` and an incremental replication header: its `tosnap`, until the header's END.
    pub(super) destroy_unsent_at: Option<String>,
    pub(super) current: Option<Substream>,
    pub(super) events: Vec<RecvEvent>,
    pub(super) substreams: u64,
}

impl Receiver {
    /// `target`: a filesystem (or with `Exact`, optionally `fs@snap`) of the pool `feed`
    /// will be given.
    pub fn new(target: &str, options: RecvOptions) -> Receiver {
        Receiver {
            target: target.to_string(),
            options,
            parser: RecordParser::new(),
            compound: None,
            compound_open: false,
            compound_recursive: false,
            destroy_unsent_at: None,
            current: None,
            events: Vec::new(),
            substreams: 0,
        }
    }

    /// Events since the last call (for `-v`).
    pub fn take_events(&mut self) -> Vec<RecvEvent> {
        std::mem::take(&mut self.events)
    }

    /// Stream bytes consumed (complete records).
    pub fn bytes(&self) -> u64 {
        self.parser.offset_bytes()
    }

    /// Substreams completed so far.
    pub fn substreams(&self) -> u64 {
        self.substreams
    }

    /// Takes more stream bytes and applies every record they complete. On error the
    /// substream in progress has been undone (or saved, under `-s`).
    pub fn feed(&mut self, spa: &mut Spa, bytes: &[u8]) -> Result<(), RecvError> {
        self.parser.push(bytes);
        let mut batch: Vec<Placed> = Vec::new();
        let mut batch_bytes = 0u64;
        loop {
            let record = match self.parser.next_record() {
                Ok(Some(record)) => record,
                Ok(None) => break,
                Err(e) => {
                    self.apply_batch(spa, &mut batch)?;
                    return Err(self.fail(spa, Failure::Stream(e)));
                }
            };
            match record {
                Record::Begin(begin) => {
                    self.apply_batch(spa, &mut batch)?;
                    self.begin(spa, begin)?;
                }
                Record::End { to_guid } => {
                    self.apply_batch(spa, &mut batch)?;
                    self.end(spa, to_guid)?;
                }
                data => {
                    let data = match self.place(data) {
                        Ok(data) => data,
                        Err(e) => {
                            self.apply_batch(spa, &mut batch)?;
                            return Err(self.fail(spa, Failure::Stream(e)));
                        }
                    };
                    if let Record::Write(w) = &data.record {
                        batch_bytes += w.length;
                    }
                    batch.push(data);
                    if batch_bytes >= BATCH_BYTES_MAX {
                        self.apply_batch(spa, &mut batch)?;
                        batch_bytes = 0;
                    }
                }
            }
        }
        self.apply_batch(spa, &mut batch)
    }

    /// The input ended: fine between substreams, else the substream is undone (or saved).
    pub fn finish(&mut self, spa: &mut Spa) -> Result<(), RecvError> {
        if let Err(e) = self.parser.finish() {
            return Err(self.fail(spa, Failure::Stream(e)));
        }
        if self.substreams == 0 && self.current.is_none() {
            return Err(RecvError::Refused {
                context: RecvContext::Receive,
                why: RecvRefusal::EmptyInput,
            });
        }
        Ok(())
    }

    /// The input failed (read error, client gone): like a truncated stream.
    pub fn abort(&mut self, spa: &mut Spa, why: &str) -> RecvError {
        self.fail(spa, Failure::Input(why.to_string()))
    }

    /// Checks where a data record falls and decodes compressed writes (a hostile stored
    /// form is refused here); a whole compressed block keeps its stored form, written as
    /// sent (no second compression).
    fn place(&mut self, record: Record) -> Result<Placed, StreamError> {
        let Some(sub) = self.current.as_mut() else {
            return Err(StreamError::OutOfOrder {
                seq: 0,
                why: "data outside a substream".to_string(),
            });
        };
        sub.seq += 1;
        // `-e`: an embedded block arrives as its pointer's payload; it is written as its
        // logical bytes (the write path embeds it again when it compresses that small).
        let record = match record {
            Record::WriteEmbedded(e) => Record::Write(expand_embedded(sub.seq, e)?),
            record => record,
        };
        check_order(sub, &record)?;
        let seq = sub.seq;
        match record {
            Record::Write(w) if w.compression != 0 => {
                let mut logical = vec![0u8; w.logical_size_bytes as usize];
                decompress(w.compression, &w.data, &mut logical).map_err(|e| {
                    StreamError::BadRecord {
                        seq: sub.seq,
                        why: format!("compressed block does not decode: {e}"),
                    }
                })?;
                // An object's trimmed last block is kept as sent too when what it holds
                // past the object's end is zeros (as a write of `length` bytes leaves it).
                let as_sent = logical
                    .get(w.length as usize..)
                    .is_some_and(crate::dmu::objset::is_all_zero);
                logical.truncate(w.length as usize);
                let stored = as_sent.then_some(StoredBlock {
                    compression_id: w.compression,
                    bytes: w.data,
                });
                let sent_block_bytes = w.logical_size_bytes;
                let record = Record::Write(WriteRecord {
                    compression: 0,
                    logical_size_bytes: 0,
                    data: logical,
                    ..w
                });
                Ok(Placed {
                    record,
                    stored,
                    seq,
                    sent_block_bytes,
                })
            }
            record => Ok(Placed {
                record,
                stored: None,
                seq,
                sent_block_bytes: 0,
            }),
        }
    }

    fn apply_batch(&mut self, spa: &mut Spa, batch: &mut Vec<Placed>) -> Result<(), RecvError> {
        if batch.is_empty() {
            return Ok(());
        }
        let records = std::mem::take(batch);
        let Some(sub) = self.current.as_mut() else {
            return Ok(());
        };
        if sub.mode != Mode::Apply {
            return Ok(());
        }
        let bytes: u64 = records
            .iter()
            .map(|r| match &r.record {
                Record::Write(w) => w.length,
                _ => 0,
            })
            .sum();
        let outcome = spa
            .check_space(bytes, 1)
            .map_err(Failure::Pool)
            .and_then(|()| apply_records(spa, sub, &records))
            .and_then(|()| spa.note_dirty(bytes).map_err(Failure::Pool));
        if let Err(failure) = outcome {
            return Err(self.fail(spa, failure));
        }
        sub.unsynced_bytes += bytes;
        if self.options.resumable && sub.unsynced_bytes >= RESUMABLE_SYNC_BYTES {
            sub.unsynced_bytes = 0;
            let token = resume_token(sub, self.parser.offset_bytes());
            let outcome = spa
                .set_local_prop(&sub.work, RECV_STATE_PROP, &token)
                .and_then(|()| spa.sync().map(|_| ()));
            if let Err(e) = outcome {
                return Err(self.fail(spa, Failure::Pool(e)));
            }
        }
        Ok(())
    }

    /// Tears down the substream in progress and builds the error to report.
    pub(super) fn fail(&mut self, spa: &mut Spa, failure: Failure) -> RecvError {
        let mut token = None;
        let context = self
            .current
            .as_ref()
            .map_or(RecvContext::Receive, |s| s.context);
        if let Some(sub) = self.current.take() {
            if sub.mode == Mode::Apply {
                if self.options.resumable {
                    let text = resume_token(&sub, self.parser.offset_bytes());
                    let saved = spa
                        .set_local_prop(&sub.work, RECV_STATE_PROP, &text)
                        .and_then(|()| spa.sync().map(|_| ()));
                    if saved.is_ok() {
                        token = Some(text);
                    }
                }
                if token.is_none() {
                    let _ = spa.destroy_filesystem(&sub.work);
                    let _ = spa.sync();
                }
            }
        }
        match failure {
            Failure::Stream(error) => RecvError::Stream {
                context,
                error,
                token,
            },
            Failure::Input(why) => match token {
                Some(token) => RecvError::Stream {
                    context,
                    error: StreamError::Truncated {
                        offset_bytes: self.parser.offset_bytes(),
                    },
                    token: Some(token),
                },
                None => RecvError::Refused {
                    context,
                    why: RecvRefusal::InputFailed { why },
                },
            },
            Failure::Pool(error) => RecvError::Pool { context, error },
        }
    }
}

pub(super) fn resume_token(sub: &Substream, parser_offset: u64) -> String {
    ResumeToken {
        to_name: sub.to_name.clone(),
        to_guid: sub.begin.to_guid,
        from_guid: sub.begin.from_guid,
        object: sub.position.0,
        offset: sub.position.1,
        bytes: sub.base_bytes + parser_offset.saturating_sub(sub.start_offset),
        compressed: sub.begin.features & super::record::FEATURE_COMPRESSED != 0,
        large_blocks: sub.begin.features & super::record::FEATURE_LARGE_BLOCKS != 0,
        clone: sub.begin.is_clone(),
    }
    .encode()
}

/// A WRITE_EMBEDDED record as the WRITE of its logical bytes (the whole block, zero-filled
/// past `drr_lsize`).
fn expand_embedded(seq: u64, e: WriteEmbeddedRecord) -> Result<WriteRecord, StreamError> {
    let mut logical = vec![0u8; e.logical_size_bytes as usize];
    if e.compression == ZIO_COMPRESS_OFF {
        let size = logical.len();
        let stored = e.data.get(..size).ok_or_else(|| StreamError::BadRecord {
            seq,
            why: "embedded block shorter than its size".to_string(),
        })?;
        logical.copy_from_slice(stored);
    } else {
        decompress(e.compression, &e.data, &mut logical).map_err(|why| StreamError::BadRecord {
            seq,
            why: format!("embedded block does not decode: {why}"),
        })?;
    }
    logical.resize(e.length as usize, 0);
    Ok(WriteRecord {
        object: e.object,
        object_type: 0,
        offset: e.offset,
        length: e.length,
        checksum: 0,
        flags: 0,
        key: [0; 5],
        compression: 0,
        logical_size_bytes: 0,
        data: logical,
    })
}

/// `ZIO_COMPRESS_OFF`: an embedded payload stored as is.
const ZIO_COMPRESS_OFF: u8 = 2;

fn out_of_order(seq: u64, why: String) -> StreamError {
    StreamError::OutOfOrder { seq, why }
}

/// OBJECT and FREEOBJECTS records ascend in object numbers; WRITEs ascend in (object,
/// offset) and do not overlap (OpenZFS's `receive_process_write_record`: resuming needs
/// it). Where a WRITE falls in its object's blocks is checked when it is applied, against
/// the object's dnode (`check_write`).
fn check_order(sub: &mut Substream, record: &Record) -> Result<(), StreamError> {
    let seq = sub.seq;
    match record {
        Record::Object(o) => {
            if o.object.0 <= sub.last_object {
                return Err(out_of_order(
                    seq,
                    format!("object {} after {}", o.object, sub.last_object),
                ));
            }
            sub.last_object = o.object.0;
        }
        Record::FreeObjects { count: 0, .. } => {}
        Record::FreeObjects { first, count } => {
            if first.0 <= sub.last_object {
                return Err(out_of_order(
                    seq,
                    format!("free of object {first} after {}", sub.last_object),
                ));
            }
            sub.last_object = first.0 + count - 1;
        }
        Record::Write(w) => {
            let (object, end) = sub.data_pos;
            if w.object.0 < object || (w.object.0 == object && w.offset < end) {
                return Err(out_of_order(
                    seq,
                    format!(
                        "write of object {} at {} after object {object} up to {end}",
                        w.object, w.offset
                    ),
                ));
            }
            sub.data_pos = (w.object.0, w.offset + w.length);
        }
        // A FREE may come anywhere after its object is defined (OpenZFS sends the free
        // past the end right after the OBJECT, before the WRITEs): `apply_one` checks that
        // its object exists. So may a SPILL (after the object's WRITEs, or right after
        // its OBJECT when unmodified).
        Record::Free { .. } | Record::Spill(_) => {}
        Record::WriteEmbedded(_) => {
            return Err(out_of_order(
                seq,
                "an embedded write not expanded".to_string(),
            ));
        }
        Record::Begin(_) | Record::End { .. } => {}
    }
    Ok(())
}

/// Applies verified, placed records to the work dataset in one pool visit. A record
/// that cannot apply to this dataset (data for an object it does not have, a WRITE across
/// its object's blocks) stops the batch as a stream error; the records before it stay
/// applied (the caller tears the work dataset down, or keeps it under `-s` with the
/// position of the last one).
fn apply_records(spa: &mut Spa, sub: &mut Substream, records: &[Placed]) -> Result<(), Failure> {
    let work = sub.work.clone();
    let mut pending = sub.pending;
    let mut position = sub.position;
    let mut object_run = sub.object_run;
    let mut refused = None;
    let outcome = spa.with_dataset(&work, |os, ctx| {
        if let Some(p) = pending {
            os.set_block_size_max(p.block_size_bytes);
        }
        for placed in records {
            if let Err(e) = apply_one(os, ctx, placed, &mut pending)? {
                refused = Some(e);
                return Ok(());
            }
            match &placed.record {
                Record::Object(o) => {
                    if !object_run {
                        position = (o.object.0, 0);
                    }
                    object_run = true;
                }
                Record::FreeObjects { count: 0, .. } => {}
                Record::FreeObjects { first, count } => {
                    if !object_run {
                        position = (first.0 + count, 0);
                    }
                    object_run = true;
                }
                Record::Write(w) => {
                    position = (w.object.0, w.offset + w.length);
                    object_run = false;
                }
                Record::Free { .. }
                | Record::Spill(_)
                | Record::Begin(_)
                | Record::End { .. }
                | Record::WriteEmbedded(_) => {}
            }
        }
        Ok(())
    });
    sub.pending = pending;
    sub.position = position;
    sub.object_run = object_run;
    outcome.map_err(Failure::Pool)?;
    match refused {
        Some(e) => Err(Failure::Stream(e)),
        None => Ok(()),
    }
}

/// The last object's final size (a trimmed last block, a truncation, a sparse tail).
pub(super) fn finalize_object(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    pending: Option<PendingObject>,
) -> Result<(), DmuError> {
    if let Some(p) = pending {
        let id = ObjectId(p.id);
        if let Some(size) = p.size_bytes {
            // Blocks wholly past the znode's size go (the DMU keeps no size of its own).
            let block = u64::from(os.dnode(ctx, id)?.data_block_size_bytes).max(1);
            let needed = size.div_ceil(block).saturating_mul(block);
            if os.extent_bytes(ctx, id)? > needed {
                os.truncate(ctx, id, needed)?;
            }
        }
    }
    Ok(())
}

/// Applies one record; `Ok(Err(_))` when the stream asks for what this dataset cannot
/// do (see `apply_records`).
fn apply_one(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    placed: &Placed,
    pending: &mut Option<PendingObject>,
) -> Result<Result<(), StreamError>, DmuError> {
    match &placed.record {
        Record::Object(o) => {
            finalize_object(os, ctx, pending.take())?;
            apply_object(os, ctx, o)?;
            // Blocks keep the sender's size: never grown to this dataset's record size.
            os.set_block_size_max(o.block_size_bytes);
            *pending = Some(PendingObject {
                id: o.object.0,
                size_bytes: znode_size(o.bonus_type, &o.bonus),
                block_size_bytes: o.block_size_bytes,
            });
        }
        Record::FreeObjects { count: 0, .. } => {}
        Record::FreeObjects { first, count } => {
            finalize_object(os, ctx, pending.take())?;
            let end = first.0 + count;
            if *count <= FREEOBJECTS_PROBE_MAX {
                for id in first.0..end {
                    if os.object_exists(ctx, ObjectId(id))? {
                        os.free_object(ctx, ObjectId(id))?;
                    }
                }
            } else {
                for id in os.object_ids(ctx)? {
                    if (first.0..end).contains(&id.0) {
                        os.free_object(ctx, id)?;
                    }
                }
            }
        }
        Record::Write(w) => {
            let block = match data_object(os, ctx, placed.seq, w.object, pending)? {
                Ok(block) => u64::from(block),
                Err(e) => return Ok(Err(e)),
            };
            if w.offset % block != 0 || w.length > block {
                return Ok(Err(out_of_order(
                    placed.seq,
                    format!(
                        "write of {} at {} spans blocks of {block}",
                        w.length, w.offset
                    ),
                )));
            }
            if placed.sent_block_bytes != 0 && placed.sent_block_bytes != block {
                return Ok(Err(out_of_order(
                    placed.seq,
                    "compressed block of another size".to_string(),
                )));
            }
            match &placed.stored {
                Some(stored) => {
                    os.write_stored(ctx, w.object, w.offset, &w.data, stored.clone())?
                }
                None => os.write(ctx, w.object, w.offset, &w.data)?,
            }
        }
        Record::Free {
            object,
            offset,
            length,
        } => {
            if let Err(e) = data_object(os, ctx, placed.seq, *object, pending)? {
                return Ok(Err(e));
            }
            if *length == u64::MAX && *offset < os.extent_bytes(ctx, *object)? {
                // Everything past `offset` (OpenZFS's FREE after an OBJECT): the object
                // ends there until the WRITEs that follow.
                os.truncate(ctx, *object, *offset)?;
            } else {
                os.free_range(ctx, *object, *offset, *length)?;
            }
        }
        Record::Spill(sp) => {
            // receive_spill: an unmodified spill block (resent for receivers that predate
            // DRR_FLAG_SPILL_BLOCK) is ignored; any other replaces the object's.
            if sp.flags & super::record::DRR_SPILL_UNMODIFIED != 0 {
                return Ok(Ok(()));
            }
            if let Err(e) = data_object(os, ctx, placed.seq, sp.object, pending)? {
                return Ok(Err(e));
            }
            let bonus = os.bonus(ctx, sp.object)?;
            if let Err(DmuError::Invalid(why)) =
                os.set_bonus_and_spill(ctx, sp.object, &bonus, Some(&sp.data))
            {
                return Ok(Err(out_of_order(placed.seq, why)));
            }
        }
        Record::Begin(_) | Record::End { .. } | Record::WriteEmbedded(_) => {}
    }
    Ok(Ok(()))
}

/// The object a WRITE or FREE is for becomes the pending one (the one before it is
/// finalized) and the block size writes are held to; its data block size. An object the
/// dataset does not have is the stream's error (OpenZFS: EINVAL from `dnode_hold`).
fn data_object(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    seq: u64,
    object: ObjectId,
    pending: &mut Option<PendingObject>,
) -> Result<Result<u32, StreamError>, DmuError> {
    if let Some(p) = pending.as_ref().filter(|p| p.id == object.0) {
        return Ok(Ok(p.block_size_bytes));
    }
    if object.0 == 0 || !os.object_exists(ctx, object)? {
        return Ok(Err(out_of_order(
            seq,
            format!("data for object {object}, which the stream never defined"),
        )));
    }
    finalize_object(os, ctx, pending.take())?;
    let dnode = os.dnode(ctx, object)?;
    let block_size_bytes = dnode.data_block_size_bytes;
    // Blocks keep the sender's size: never grown to this dataset's record size.
    os.set_block_size_max(block_size_bytes);
    *pending = Some(PendingObject {
        id: object.0,
        size_bytes: znode_size(dnode.bonus_type, &dnode.bonus),
        block_size_bytes,
    });
    Ok(Ok(block_size_bytes))
}

/// A ZPL file's or symlink's size from the znode in its bonus (SA or `znode_phys_t`), if
/// it has one.
fn znode_size(bonus_type: u8, bonus: &[u8]) -> Option<u64> {
    use crate::zpl::znode::{FileKind, ZnodePhys};
    let (znode, _) = ZnodePhys::decode_bonus(bonus_type, bonus).ok()?;
    matches!(znode.kind(), Some(FileKind::Regular | FileKind::Symlink)).then_some(znode.size)
}

/// Makes object `o.object` exist as described, keeping its blocks when its shape matches
/// (an incremental's unchanged blocks), else recreating it.
fn apply_object(os: &mut ObjectSet, ctx: &IoCtx<'_>, o: &ObjectRecord) -> Result<(), DmuError> {
    let nblkptr = if o.bonus.len() > DnodePhys::bonus_capacity(3) {
        1
    } else {
        3
    };
    let mut create = true;
    if os.object_exists(ctx, o.object)? {
        let dnode = os.dnode(ctx, o.object)?;
        if dnode.object_type == o.object_type
            && dnode.data_block_size_bytes == o.block_size_bytes
            && dnode.bonus_type == o.bonus_type
            && dnode.blkptr.len() == nblkptr
        {
            create = false;
        } else {
            os.free_object(ctx, o.object)?;
        }
    }
    if create {
        os.create_object_at(
            ctx,
            o.object,
            o.object_type,
            o.block_size_bytes,
            o.bonus_type,
            o.bonus.len(),
        )?;
    }
    // Only ZPL files grow their block size (OpenZFS `zfs_grow_blocksize`): the DMU
    // decides that from the object's type. An object the sender has no spill block for
    // loses its own (`dmu_object_rm_spill`); one it has keeps it until its SPILL record.
    if o.flags & super::record::DRR_OBJECT_SPILL != 0 {
        os.set_bonus(ctx, o.object, &o.bonus)?;
    } else {
        os.set_bonus_and_spill(ctx, o.object, &o.bonus, None)?;
    }
    Ok(())
}
