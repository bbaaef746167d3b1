//! The sending side of one substream (OpenZFS `dmu_send.c`): a snapshot's objects as
//! records, in (object, offset) order.
//!
//! A `Sender` produces its substream in chunks (`fill`) and keeps a cursor (object, offset)
//! between them, so a caller can let go of the pool between chunks — a `zfs send | zfs
//! receive` into the same pool takes turns on it instead of deadlocking — and can stop
//! after any number of bytes. Each chunk looks the snapshot up again by name and guid and
//! fails cleanly if it is gone. The same cursor is what a resume token carries: `zfs send
//! -t` builds a Sender that starts where the receiver stopped.
//!
//! What a substream holds: every object of the snapshot (full), or for an incremental from
//! a snapshot or bookmark with creation txg `T` only what changed after `T`: the dnode
//! blocks born after `T` give the objects to describe (OBJECT) and the free slots among
//! them (FREEOBJECTS); each such object's tree, pruned by birth txg (`traverse`), gives the
//! WRITE records and the holes to FREE. A changed dnode block is sent whole (32 dnodes),
//! like OpenZFS; the receiver finds unchanged ones identical.

use super::error::SendError;
use super::record::{
    encode_record, BeginRecord, ObjectRecord, Record, RecordWriter, SpillRecord,
    WriteEmbeddedRecord, WriteRecord, BP_EMBEDDED_TYPE_DATA, DRR_FLAG_CLONE, DRR_OBJECT_SPILL,
    DRR_SPILL_UNMODIFIED, FEATURE_COMPRESSED, FEATURE_EMBED_DATA, FEATURE_LARGE_BLOCKS,
    FEATURE_LZ4, FEATURE_RESUMING, FEATURE_SA_SPILL, FEATURE_ZSTD, OBJECT_ID_LIMIT,
};
use super::token::ResumeToken;
use super::traverse::{Event, Flow, Walk};
use crate::dmu::dnode::{DnodePhys, DNODE_SIZE_BYTES};
use crate::dmu::objset::DNODES_PER_BLOCK;
use crate::dmu::IoCtx;
use crate::nvlist::NvList;
use crate::spa::{Spa, SpaError};
use crate::types::{Guid, ObjectId, Txg};
use crate::zio::blkptr::BlockPointer;
use crate::zio::Bookmark;
use zetta_zcommon::compress::ALGORITHM_ID_OFF;

/// Stream options of `zfs send` that change the records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// `-c` (and `-w`): WRITE records carry blocks in their stored compressed form.
    pub compressed: bool,
    /// `-p`: the filesystem's properties go in the compound header's `fss`.
    pub properties: bool,
    /// `-h`: the snapshots' user holds go in the compound header's `snapholds`.
    pub holds: bool,
    /// `-b`: the header's `props` and `snapprops` carry only received values (libzfs's
    /// `backup`: a backup sent back to where it came from restores what was received).
    pub backup: bool,
    /// `-s` with `-R` (`--skip-missing`): a descendant without the snapshot is left out
    /// with its children, with a warning, instead of failing the send.
    pub skip_missing: bool,
    /// `-L`: blocks larger than 128 KiB go whole (LARGE_BLOCKS); without it they are
    /// split into 128 KiB WRITEs, as OpenZFS does for receivers without large blocks.
    pub large_blocks: bool,
    /// `-e` (and `-w`): blocks whose pointer is embedded go as WRITE_EMBEDDED records
    /// (EMBED_DATA; embedded_data is active in every pool Zetta writes).
    pub embed: bool,
    /// `-w`: raw. With no encryption in Zetta this is `-Lce` plus the compound header's
    /// `raw` (OpenZFS sets the RAW feature only for an encrypted dataset).
    pub raw: bool,
}

/// `SPA_OLD_MAXBLOCKSIZE`: the largest block a stream without LARGE_BLOCKS carries.
const OLD_MAX_BLOCK_BYTES: u32 = 128 << 10;

/// One substream to produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubstreamSpec {
    /// The snapshot sent, `pool/fs@snap`.
    pub to: String,
    /// The incremental source: `pool/fs@a`, `pool/fs#mark`, or for a clone the origin.
    pub from: Option<String>,
    /// A new filesystem cloned from `from` (replication of clones).
    pub clone: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Begin,
    Objects,
    End,
    Done,
}

/// Where the next record comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cursor {
    object: u64,
    offset: u64,
    /// The OBJECT record of `object` is already in the stream.
    object_open: bool,
}

/// Where records go: bytes, or only their sizes (dry-run estimates).
enum Sink<'a> {
    Bytes(&'a mut Vec<u8>),
    Count(&'a mut u64),
}

impl Sink<'_> {
    fn produced(&self) -> u64 {
        match self {
            Sink::Bytes(out) => out.len() as u64,
            Sink::Count(n) => **n,
        }
    }
}

/// Produces one substream.
pub struct Sender {
    spec: SubstreamSpec,
    options: SendOptions,
    to_guid: Guid,
    from_txg: Txg,
    begin: BeginRecord,
    cursor: Cursor,
    stage: Stage,
    writer: RecordWriter,
    pending_free: Option<(u64, u64, u64)>,
    pending_freeobjects: Option<(u64, u64)>,
}

/// A snapshot or bookmark found by name: (guid, creation txg, creation time).
pub(super) fn find_point(spa: &mut Spa, name: &str) -> Result<Option<(u64, u64, u64)>, SpaError> {
    if let Some((fs, _)) = name.split_once('#') {
        if spa.lookup_dir(fs)?.is_none() {
            return Ok(None);
        }
        return Ok(spa
            .bookmarks(fs)?
            .into_iter()
            .find(|b| b.name == name)
            .map(|b| (b.guid, b.creation_txg, b.creation_time)));
    }
    let Some((fs, _)) = name.split_once('@') else {
        return Ok(None);
    };
    if spa.lookup_dir(fs)?.is_none() {
        return Ok(None);
    }
    Ok(spa
        .snapshots(fs)?
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, _, phys)| (phys.guid, phys.creation_txg, phys.creation_time)))
}

fn missing(name: &str) -> SendError {
    SendError::NoSuchDataset {
        name: name.to_string(),
    }
}

impl Sender {
    /// A sender of `spec`, checked against the pool: the snapshot exists, the source is an
    /// earlier snapshot or bookmark of the same filesystem (or the clone's origin).
    pub fn new(
        spa: &mut Spa,
        spec: SubstreamSpec,
        options: SendOptions,
    ) -> Result<Sender, SendError> {
        let (to_fs, _) = spec.to.split_once('@').ok_or_else(|| missing(&spec.to))?;
        let to_fs = to_fs.to_string();
        let (to_guid, to_txg, creation_time) =
            find_point(spa, &spec.to)?.ok_or_else(|| missing(&spec.to))?;
        let mut info = NvList::new();
        // DMU_OST_ZFS (2) or DMU_OST_ZVOL (3): the receiver creates the same kind.
        let os_type = if spa.is_volume(&to_fs)? { 3 } else { 2 };
        info.set_str("toname", &spec.to).set_u64("type", os_type);
        let (mut from_guid, mut from_txg, mut features, mut flags) = (0, 0, 0, 0);
        if let Some(from) = &spec.from {
            let (guid, txg, _) = find_point(spa, from)?.ok_or_else(|| missing(from))?;
            let from_fs = from.split(['@', '#']).next().unwrap_or(from);
            if (!spec.clone && from_fs != to_fs) || txg >= to_txg {
                return Err(SendError::NotEarlier {
                    to: spec.to.clone(),
                });
            }
            (from_guid, from_txg) = (guid, txg);
            if spec.clone {
                flags |= DRR_FLAG_CLONE;
            }
        }
        // OpenZFS `setup_featureflags`: SA_SPILL for a ZPL filesystem of version 5 or later
        // (not the ZPL 4 filesystems of a version-23 pool: zfs-fuse refuses the bit);
        // EMBED_DATA with -e when embedded_data is active (in every pool Zetta writes), and
        // LZ4 with it as with -c.
        if os_type == 2
            && crate::zpl::zpl_version_for_spa(spa.version()) >= crate::zpl::ZPL_VERSION_SA
        {
            features |= FEATURE_SA_SPILL;
        }
        if options.embed {
            features |= FEATURE_EMBED_DATA | FEATURE_LZ4;
        }
        if options.compressed {
            // As OpenZFS's `setup_featureflags` with lz4_compress active (always, in the
            // pools Zetta writes); ZSTD when the filesystem compresses with zstd.
            features |= FEATURE_COMPRESSED | FEATURE_LZ4;
            if spa
                .own_effective_props(&to_fs)?
                .iter()
                .any(|(n, v)| n == "compression" && v.starts_with("zstd"))
            {
                features |= FEATURE_ZSTD;
            }
        }
        // OpenZFS sets LARGE_BLOCKS with -L when the dataset's large_blocks feature is
        // active; Zetta's counterpart: a record size over 128 KiB in force.
        if options.large_blocks {
            if let Some(dir) = spa.lookup_dir(&to_fs)? {
                if spa.effective_io_props(dir)?.1 > OLD_MAX_BLOCK_BYTES {
                    features |= FEATURE_LARGE_BLOCKS;
                }
            }
        }
        // `-p` and `-h` travel in the compound stream's header (`send_prelim`), as
        // libzfs sends them; a substream's BEGIN carries no nvlist.
        Ok(Sender {
            begin: BeginRecord {
                features,
                compound: false,
                flags,
                to_guid: Guid(to_guid),
                from_guid: Guid(from_guid),
                creation_time,
                info,
            },
            spec,
            options,
            to_guid: Guid(to_guid),
            from_txg: Txg(from_txg),
            cursor: Cursor::default(),
            stage: Stage::Begin,
            writer: RecordWriter::new(),
            pending_free: None,
            pending_freeobjects: None,
        })
    }

    /// `zfs send -t`: the rest of the substream a resume token describes.
    pub fn resume(spa: &mut Spa, token: &ResumeToken) -> Result<Sender, SendError> {
        let name = || token.to_name.clone();
        let (to_guid, _, _) = find_point(spa, &token.to_name)?
            .ok_or_else(|| SendError::ResumeGone { name: name() })?;
        if to_guid != token.to_guid.0 {
            return Err(SendError::ResumeChanged { name: name() });
        }
        let from = match token.from_guid.0 {
            0 => None,
            guid => Some(
                find_by_guid(spa, &token.to_name, guid, token.clone)?
                    .ok_or(SendError::ResumeSourceGone)?,
            ),
        };
        let spec = SubstreamSpec {
            to: token.to_name.clone(),
            from,
            clone: token.clone,
        };
        let options = SendOptions {
            compressed: token.compressed,
            large_blocks: token.large_blocks,
            ..SendOptions::default()
        };
        let mut sender = Sender::new(spa, spec, options)?;
        // Resume exactly as the interrupted stream was cut: its blocks whole or split.
        if token.large_blocks {
            sender.begin.features |= FEATURE_LARGE_BLOCKS;
        } else {
            sender.begin.features &= !FEATURE_LARGE_BLOCKS;
        }
        sender.begin.features |= FEATURE_RESUMING;
        sender
            .begin
            .info
            .set_u64("resume_object", token.object)
            .set_u64("resume_offset", token.offset);
        sender.cursor = Cursor {
            object: token.object,
            offset: token.offset,
            object_open: false,
        };
        Ok(sender)
    }

    pub fn spec(&self) -> &SubstreamSpec {
        &self.spec
    }

    /// Stream bytes produced so far.
    pub fn bytes(&self) -> u64 {
        self.writer.bytes()
    }

    /// Appends records to `out` until it holds at least `budget_bytes` or the substream is
    /// complete; returns whether it is complete.
    pub fn fill(
        &mut self,
        spa: &mut Spa,
        out: &mut Vec<u8>,
        budget_bytes: usize,
    ) -> Result<bool, SendError> {
        self.run(spa, &mut Sink::Bytes(out), budget_bytes as u64)
    }

    /// The exact size of what is left of the substream (records are counted, data blocks
    /// are not read; with `-c` a block counts its allocated physical size).
    pub fn estimate(mut self, spa: &mut Spa) -> Result<u64, SendError> {
        let mut total = 0u64;
        while !self.run(spa, &mut Sink::Count(&mut total), u64::MAX)? {}
        Ok(total)
    }

    fn run(&mut self, spa: &mut Spa, sink: &mut Sink<'_>, budget: u64) -> Result<bool, SendError> {
        if self.stage == Stage::Begin {
            self.emit(sink, &Record::Begin(self.begin.clone()));
            self.stage = Stage::Objects;
        }
        if self.stage == Stage::Objects {
            let (objset, root_bp) = self.resolve(spa)?;
            let ctx = spa.ctx();
            let done = self.walk_objects(&ctx, objset, &root_bp, sink, budget)?;
            self.flush_frees(sink);
            if !done {
                return Ok(false);
            }
            self.stage = Stage::End;
        }
        if self.stage == Stage::End {
            let to_guid = self.to_guid;
            self.emit(sink, &Record::End { to_guid });
            self.stage = Stage::Done;
        }
        Ok(true)
    }

    /// The snapshot's dataset object and objset pointer, if it is still the one we send.
    fn resolve(&self, spa: &mut Spa) -> Result<(u64, BlockPointer), SendError> {
        let vanished = || SendError::Vanished(self.spec.to.clone());
        let fs = self.spec.to.split('@').next().unwrap_or(&self.spec.to);
        let snapshots = spa.snapshots(fs).map_err(|_| vanished())?;
        snapshots
            .into_iter()
            .find(|(name, _, phys)| *name == self.spec.to && phys.guid == self.to_guid.0)
            .map(|(_, object, phys)| (object, phys.bp))
            .ok_or_else(vanished)
    }

    fn emit(&mut self, sink: &mut Sink<'_>, record: &Record) {
        match sink {
            Sink::Bytes(out) => self.writer.emit_record(out, record),
            Sink::Count(total) => {
                let before = self.writer.bytes();
                self.writer
                    .count(encode_record(record, self.to_guid).1.len());
                **total += self.writer.bytes() - before;
            }
        }
    }

    fn flush_frees(&mut self, sink: &mut Sink<'_>) {
        if let Some((first, count)) = self.pending_freeobjects.take() {
            let first = ObjectId(first);
            self.emit(sink, &Record::FreeObjects { first, count });
        }
        if let Some((object, offset, length)) = self.pending_free.take() {
            let object = ObjectId(object);
            self.emit(
                sink,
                &Record::Free {
                    object,
                    offset,
                    length,
                },
            );
        }
    }

    fn free_objects(&mut self, sink: &mut Sink<'_>, first: u64, count: u64) {
        let count = count.min(OBJECT_ID_LIMIT.saturating_sub(first));
        if count == 0 || first == 0 {
            return;
        }
        match &mut self.pending_freeobjects {
            Some((start, n)) if *start + *n == first => *n += count,
            _ => {
                self.flush_frees(sink);
                self.pending_freeobjects = Some((first, count));
            }
        }
    }

    fn free_range(&mut self, sink: &mut Sink<'_>, object: u64, offset: u64, length: u64) {
        match &mut self.pending_free {
            Some((o, start, n)) if *o == object && start.saturating_add(*n) == offset => {
                *n = n.saturating_add(length)
            }
            _ => {
                self.flush_frees(sink);
                self.pending_free = Some((object, offset, length));
            }
        }
    }

    /// Walks the dnode blocks from the cursor; true when every object is done.
    fn walk_objects(
        &mut self,
        ctx: &IoCtx<'_>,
        objset: u64,
        root_bp: &BlockPointer,
        sink: &mut Sink<'_>,
        budget: u64,
    ) -> Result<bool, SendError> {
        let block = ctx
            .zio
            .read_block(ctx.root, root_bp, Some(bookmark(objset, 0, 0, u64::MAX)))
            .map_err(|e| SendError::Pool(SpaError::from(e)))?;
        let meta = DnodePhys::decode(block.get(..DNODE_SIZE_BYTES).unwrap_or(&[]))
            .map_err(|e| SendError::Pool(SpaError::Corrupt(e.0)))?;
        let incremental = self.from_txg > Txg(0);
        let walk = Walk {
            ctx,
            objset,
            object: 0,
            from_txg: self.from_txg,
            start_blkid: self.cursor.object / DNODES_PER_BLOCK,
            report_holes: incremental,
        };
        let flow = walk.run(&meta, &mut |event| match event {
            Event::Hole { first_blkid, count } => {
                let first = first_blkid
                    .saturating_mul(DNODES_PER_BLOCK)
                    .max(self.cursor.object);
                let end = first_blkid
                    .saturating_add(count)
                    .saturating_mul(DNODES_PER_BLOCK);
                self.free_objects(sink, first.max(1), end.saturating_sub(first.max(1)));
                Ok(Flow::Continue)
            }
            Event::Block { blkid, bp } => {
                let data = ctx
                    .zio
                    .read_block(ctx.root, bp, Some(bookmark(objset, 0, 0, blkid)))
                    .map_err(|e| SendError::Pool(SpaError::from(e)))?;
                for slot in 0..DNODES_PER_BLOCK {
                    let id = blkid * DNODES_PER_BLOCK + slot;
                    if id == 0 || id < self.cursor.object {
                        continue;
                    }
                    let at = slot as usize * DNODE_SIZE_BYTES;
                    let dnode = data
                        .get(at..at + DNODE_SIZE_BYTES)
                        .ok_or_else(|| corrupt(id, "dnode block too short"))
                        .and_then(|b| DnodePhys::decode(b).map_err(|e| corrupt(id, &e.0)))?;
                    if dnode.is_free() {
                        if incremental {
                            self.free_objects(sink, id, 1);
                        }
                        self.cursor = Cursor {
                            object: id + 1,
                            ..Cursor::default()
                        };
                        continue;
                    }
                    if self.send_object(ctx, objset, id, &dnode, sink, budget)? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                    self.cursor = Cursor {
                        object: id + 1,
                        ..Cursor::default()
                    };
                    if sink.produced() >= budget {
                        return Ok(Flow::Stop);
                    }
                }
                Ok(Flow::Continue)
            }
        })?;
        Ok(flow == Flow::Continue)
    }

    /// OBJECT, then the object's WRITE and FREE records from the cursor's offset.
    fn send_object(
        &mut self,
        ctx: &IoCtx<'_>,
        objset: u64,
        id: u64,
        dnode: &DnodePhys,
        sink: &mut Sink<'_>,
        budget: u64,
    ) -> Result<Flow, SendError> {
        if !(self.cursor.object == id && self.cursor.object_open) {
            self.flush_frees(sink);
            let record = Record::Object(ObjectRecord {
                object: ObjectId(id),
                object_type: dnode.object_type,
                bonus_type: dnode.bonus_type,
                block_size_bytes: self.stream_block_size(dnode.data_block_size_bytes),
                checksum: dnode.checksum,
                compress: dnode.compress,
                dn_slots: 1,
                flags: if dnode.spill.is_some() {
                    DRR_OBJECT_SPILL
                } else {
                    0
                },
                bonus: dnode.bonus.clone(),
            });
            self.emit(sink, &record);
            // OpenZFS frees everything past the object's last block after its OBJECT.
            let end = dnode
                .max_block_id
                .saturating_add(1)
                .saturating_mul(u64::from(dnode.data_block_size_bytes));
            self.emit(
                sink,
                &Record::Free {
                    object: ObjectId(id),
                    offset: end,
                    length: u64::MAX,
                },
            );
            let offset = if self.cursor.object == id {
                self.cursor.offset
            } else {
                0
            };
            // An incremental resends an unmodified spill block right after its OBJECT
            // (`piggyback_unmodified_spill`, zfs_send_unmodified_spill_blocks=1), flagged
            // so that receivers knowing DRR_FLAG_SPILL_BLOCK ignore it.
            if let Some(bp) = dnode.spill.filter(|bp| bp.birth_txg <= self.from_txg) {
                if self.from_txg > Txg(0) {
                    self.send_spill(ctx, objset, id, &bp, DRR_SPILL_UNMODIFIED, sink)?;
                }
            }
            self.cursor = Cursor {
                object: id,
                offset,
                object_open: true,
            };
        }
        let block_size = u64::from(dnode.data_block_size_bytes);
        // What the DMU knows of the object's length: its block extent (its byte size is
        // its owner's, in the bonus the OBJECT record carries).
        let size = dnode
            .max_block_id
            .saturating_add(1)
            .saturating_mul(block_size);
        let walk = Walk {
            ctx,
            objset,
            object: id,
            from_txg: self.from_txg,
            start_blkid: self.cursor.offset / block_size,
            report_holes: self.from_txg > Txg(0),
        };
        // Blocks are read SEND_PREFETCH_BLOCKS at a time, in parallel (OpenZFS prefetches
        // ahead of the send the same way), and emitted in order.
        let mut pending: Vec<PendingBlock> = Vec::new();
        let flow = walk.run(dnode, &mut |event| match event {
            Event::Hole { first_blkid, count } => {
                self.send_blocks(ctx, objset, id, block_size, &mut pending, sink)?;
                let offset = first_blkid.saturating_mul(block_size);
                if offset < size {
                    let length = count.saturating_mul(block_size).min(size - offset);
                    self.free_range(sink, id, offset, length);
                }
                Ok(Flow::Continue)
            }
            Event::Block { blkid, bp } => {
                let offset = blkid.saturating_mul(block_size);
                if offset >= size {
                    return Ok(Flow::Continue);
                }
                // OpenZFS writes whole blocks (`drr_logical_size` is the block size).
                let length = block_size;
                pending.push(PendingBlock {
                    blkid,
                    bp: *bp,
                    offset,
                    length,
                });
                if pending.len() < SEND_PREFETCH_BLOCKS {
                    return Ok(Flow::Continue);
                }
                self.send_blocks(ctx, objset, id, block_size, &mut pending, sink)?;
                if sink.produced() >= budget {
                    return Ok(Flow::Stop);
                }
                Ok(Flow::Continue)
            }
        })?;
        self.send_blocks(ctx, objset, id, block_size, &mut pending, sink)?;
        if flow == Flow::Continue {
            self.flush_frees(sink);
            // The spill block, after the object's data (its bookmark's blkid is
            // DMU_SPILL_BLKID, the last), when born after the incremental's source.
            if let Some(bp) = dnode.spill.filter(|bp| bp.birth_txg > self.from_txg) {
                self.send_spill(ctx, objset, id, &bp, 0, sink)?;
            }
        }
        Ok(flow)
    }

    /// A SPILL record of object `id`'s spill block (`dump_spill`): its logical bytes.
    fn send_spill(
        &mut self,
        ctx: &IoCtx<'_>,
        objset: u64,
        id: u64,
        bp: &BlockPointer,
        flags: u8,
        sink: &mut Sink<'_>,
    ) -> Result<(), SendError> {
        self.flush_frees(sink);
        let data = ctx
            .zio
            .read_block(
                ctx.root,
                bp,
                Some(bookmark(objset, id, 0, crate::dmu::objset::DMU_SPILL_BLKID)),
            )
            .map_err(|e| SendError::Pool(SpaError::from(e)))?;
        let record = Record::Spill(SpillRecord {
            object: ObjectId(id),
            flags,
            data: data.to_vec(),
        });
        self.emit(sink, &record);
        Ok(())
    }

    /// The block size records carry: the object's, or 128 KiB when larger blocks are
    /// split (no LARGE_BLOCKS).
    fn stream_block_size(&self, block_size: u32) -> u32 {
        if self.begin.features & FEATURE_LARGE_BLOCKS == 0 {
            block_size.min(OLD_MAX_BLOCK_BYTES)
        } else {
            block_size
        }
    }

    /// Reads the pending blocks in parallel and emits them in order.
    fn send_blocks(
        &mut self,
        ctx: &IoCtx<'_>,
        objset: u64,
        id: u64,
        block_size: u64,
        pending: &mut Vec<PendingBlock>,
        sink: &mut Sink<'_>,
    ) -> Result<(), SendError> {
        use rayon::prelude::*;
        if pending.is_empty() {
            return Ok(());
        }
        self.flush_frees(sink);
        // A block split into 128 KiB WRITEs goes as logical bytes (OpenZFS the same).
        let stored = self.options.compressed
            && self.stream_block_size(block_size as u32) as u64 == block_size;
        let counting = matches!(sink, Sink::Count(_));
        let fetched: Vec<Result<Option<Fetched>, SendError>> = pending
            .par_iter()
            .map(|b| {
                if counting {
                    return Ok(None);
                }
                fetch(ctx, objset, id, b, stored).map(Some)
            })
            .collect();
        for (block, data) in pending.drain(..).zip(fetched) {
            self.send_block(ctx, objset, id, &block, data?, sink)?;
            self.cursor.offset = block.offset + block_size;
        }
        Ok(())
    }

    /// The WRITE_EMBEDDED record of an embedded block, when this stream may carry it
    /// (OpenZFS `send_do_embed`: EMBED_DATA, type DATA, a legacy compressor or LZ4 with
    /// its feature, zstd only with ZSTD; and a block the stream does not split).
    fn embedded_record(&self, id: u64, block: &PendingBlock) -> Option<Record> {
        let bp = &block.bp;
        let payload = bp.embedded.as_ref()?;
        let features = self.begin.features;
        let legacy = bp.compression < ZIO_COMPRESS_LZ4;
        let allowed = features & FEATURE_EMBED_DATA != 0
            && (legacy || features & FEATURE_LZ4 != 0)
            && (bp.compression != ZIO_COMPRESS_ZSTD || features & FEATURE_ZSTD != 0)
            && u64::from(self.stream_block_size(block.length as u32)) == block.length;
        allowed.then(|| {
            Record::WriteEmbedded(WriteEmbeddedRecord {
                object: ObjectId(id),
                offset: block.offset,
                length: block.length,
                compression: bp.compression,
                etype: BP_EMBEDDED_TYPE_DATA,
                logical_size_bytes: bp.lsize_bytes,
                data: payload.as_slice().to_vec(),
            })
        })
    }

    /// One block's WRITE record (or, counting, its size).
    fn send_block(
        &mut self,
        ctx: &IoCtx<'_>,
        objset: u64,
        id: u64,
        block: &PendingBlock,
        fetched: Option<Fetched>,
        sink: &mut Sink<'_>,
    ) -> Result<(), SendError> {
        let (bp, offset, length) = (&block.bp, block.offset, block.length);
        if let Some(record) = self.embedded_record(id, block) {
            self.emit(sink, &record);
            return Ok(());
        }
        // `length` is the block size: split blocks go as logical bytes.
        let stored_ok =
            self.options.compressed && u64::from(self.stream_block_size(length as u32)) == length;
        let stored = stored_ok && bp.compression != ALGORITHM_ID_OFF;
        if let Sink::Count(total) = sink {
            let payload = if stored {
                u64::from(bp.psize_bytes)
            } else {
                length
            };
            let before = self.writer.bytes();
            if stored {
                self.writer.count(payload as usize);
            } else {
                let piece = u64::from(self.stream_block_size(length as u32)).max(512);
                for start in (0..payload).step_by(piece as usize) {
                    self.writer.count((payload - start).min(piece) as usize);
                }
            }
            **total += self.writer.bytes() - before;
            return Ok(());
        }
        let fetched = match fetched {
            Some(fetched) => fetched,
            None => fetch(ctx, objset, id, block, stored_ok)?,
        };
        match fetched {
            Fetched::Physical(physical) => {
                // The physical block as OpenZFS sends it (`drr_compressed_size` = psize):
                // its framing, then its padding to 512 bytes.
                let payload = physical
                    .get(..bp.psize_bytes as usize)
                    .ok_or_else(|| corrupt(id, "stored block shorter than its physical size"))?;
                let record = Record::Write(WriteRecord {
                    object: ObjectId(id),
                    object_type: bp.object_type,
                    offset,
                    length: u64::from(bp.lsize_bytes),
                    checksum: 0,
                    flags: 0,
                    key: [0; 5],
                    compression: bp.compression,
                    logical_size_bytes: u64::from(bp.lsize_bytes),
                    data: payload.to_vec(),
                });
                self.emit(sink, &record);
            }
            Fetched::Logical(data) => {
                // A block shorter than the object's block size (an embedded one) is sent
                // whole, zero-filled, as OpenZFS sends its dbuf.
                let mut payload = data
                    .get(..data.len().min(length as usize))
                    .unwrap_or(&[])
                    .to_vec();
                payload.resize(length as usize, 0);
                // Without LARGE_BLOCKS a larger block goes as 128 KiB pieces.
                let piece = self.stream_block_size(length as u32) as usize;
                for (i, chunk) in payload.chunks(piece.max(512)).enumerate() {
                    let record = Record::Write(WriteRecord {
                        object: ObjectId(id),
                        object_type: bp.object_type,
                        offset: offset + (i * piece) as u64,
                        length: chunk.len() as u64,
                        checksum: 0,
                        flags: 0,
                        key: [0; 5],
                        compression: 0,
                        logical_size_bytes: 0,
                        data: chunk.to_vec(),
                    });
                    self.emit(sink, &record);
                }
            }
        }
        Ok(())
    }
}

/// `ZIO_COMPRESS_LZ4`, also `ZIO_COMPRESS_LEGACY_FUNCTIONS`: compressors below it need no
/// feature flag in an embedded block.
const ZIO_COMPRESS_LZ4: u8 = 15;
/// `ZIO_COMPRESS_ZSTD`.
const ZIO_COMPRESS_ZSTD: u8 = 16;

/// Blocks read ahead of the stream, in parallel, per object.
const SEND_PREFETCH_BLOCKS: usize = 16;

/// A data block the walk found, waiting for its read.
struct PendingBlock {
    blkid: u64,
    bp: BlockPointer,
    offset: u64,
    length: u64,
}

/// A block's bytes as the stream carries them: stored (compressed, `-c`) or logical.
enum Fetched {
    Physical(Vec<u8>),
    Logical(std::sync::Arc<Vec<u8>>),
}

/// Reads one pending block (any thread).
fn fetch(
    ctx: &IoCtx<'_>,
    objset: u64,
    id: u64,
    block: &PendingBlock,
    compressed: bool,
) -> Result<Fetched, SendError> {
    let pool = |e| SendError::Pool(SpaError::from(e));
    let where_ = Some(bookmark(objset, id, 0, block.blkid));
    // An embedded block goes as its logical bytes (OpenZFS sends them so without -e).
    if compressed && block.bp.compression != ALGORITHM_ID_OFF && !block.bp.is_embedded() {
        let physical = ctx
            .zio
            .read_block_physical(ctx.root, &block.bp, where_)
            .map_err(pool)?;
        return Ok(Fetched::Physical(physical));
    }
    let data = ctx
        .zio
        .read_block(ctx.root, &block.bp, where_)
        .map_err(pool)?;
    Ok(Fetched::Logical(data))
}

/// The snapshot (or bookmark) with `guid` an incremental of `to_name` starts from: in the
/// same filesystem, or anywhere in the pool for a clone's origin.
fn find_by_guid(
    spa: &mut Spa,
    to_name: &str,
    guid: u64,
    clone: bool,
) -> Result<Option<String>, SpaError> {
    let fs = to_name.split('@').next().unwrap_or(to_name).to_string();
    let filesystems = if clone {
        spa.dataset_names()?
    } else {
        vec![fs]
    };
    for fs in filesystems {
        if let Some((name, _, _)) = spa
            .snapshots(&fs)?
            .into_iter()
            .find(|(_, _, phys)| phys.guid == guid)
        {
            return Ok(Some(name));
        }
        if let Some(mark) = spa.bookmarks(&fs)?.into_iter().find(|b| b.guid == guid) {
            return Ok(Some(mark.name));
        }
    }
    Ok(None)
}

fn bookmark(objset: u64, object: u64, level: u8, blkid: u64) -> Bookmark {
    Bookmark {
        objset,
        object,
        level,
        blkid,
    }
}

fn corrupt(object: u64, why: &str) -> SendError {
    SendError::Pool(SpaError::Corrupt(format!("object {object}: {why}")))
}
