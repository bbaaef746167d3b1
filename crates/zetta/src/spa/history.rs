//! The pool history of a Zetta pool as OpenZFS writes it (`module/zfs/spa_history.c`:
//! `spa_history_create_obj`, `spa_history_log_sync`, `spa_history_write`,
//! `spa_history_advance_bof`), so that `zdb -h` and OpenZFS's `zpool history` read it.
//!
//! Theory. MOS object 2 (the directory's `history` entry) is a `DMU_OT_SPA_HISTORY` object
//! with 128 KiB blocks whose bonus (`DMU_OT_SPA_HISTORY_OFFSETS`) is `spa_history_phys_t`;
//! the layout, and the reader, are the part-1 module's (`spa::openzfs::history`):
//!
//! ```text
//! bonus  := pool_create_len phys_max_off bof eof records_lost   (five u64, little-endian)
//! data   := [0, pool_create_len) creation records, kept forever
//!           [pool_create_len, phys_max_off) a ring of the later records
//! record := len:u64 LE, nvlist packed NV_ENCODE_NATIVE (little-endian) of len bytes
//! ```
//!
//! `phys_max_off` is 0.1% of the pool's normal-class space, clamped to [128 KiB, 1 GiB]. A
//! record that does not fit the ring's free space first moves `bof` past whole old records,
//! counting them in `records_lost` (the length word of a record may itself wrap). The first
//! user command (`zpool create`) closes the creation part: `pool_create_len = bof = eof`.
//!
//! Records (`ZPOOL_HIST_*` names, in OpenZFS's order of addition):
//!
//! ```text
//! command   history command, history time, history hostname
//! internal  dsname, dsid, history internal str, internal_name, history txg,
//!           history time, history hostname            (spa_history_log_internal_ds)
//! ```
//!
//! Zetta records no `history who` (the daemon runs commands for any caller), which is why
//! `zpool history -l` stays refused on Zetta pools. Invariants: the history is written only
//! in the syncing context (`Spa::sync_quiesce` step 2), so a txg's records and its bonus are
//! committed together; reading checks the offsets (`HistoryPhys::ranges`) and refuses a
//! record that does not decode.

use super::openzfs::history::{self as ozfs, HistoryPhys, Record};
use super::SpaError;
use crate::byteorder::ByteOrder;
use crate::dmu::{IoCtx, ObjectSet};
use crate::nvpair_xdr::{XdrNvList, XdrValue};
use crate::types::ObjectId;

pub use ozfs::{DMU_OT_SPA_HISTORY, DMU_OT_SPA_HISTORY_OFFSETS};
/// `SPA_OLD_MAXBLOCKSIZE`: the history object's block size.
pub const HISTORY_BLOCK_BYTES: u32 = 128 << 10;
/// `sizeof (spa_history_phys_t)`.
pub const HISTORY_PHYS_BYTES: usize = 40;
/// The smallest ring OpenZFS makes.
pub const HISTORY_MIN_BYTES: u64 = 128 << 10;

/// One record waiting for the syncing context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryRecord {
    /// A user command line (`zpool create tank /dev/x`).
    Command { time_secs: u64, command: String },
    /// A sync task's internal record about one dataset (`spa_history_log_internal_ds`).
    InternalDs {
        time_secs: u64,
        txg: u64,
        name: String,
        dsname: String,
        dsid: u64,
        text: String,
    },
}

impl HistoryRecord {
    /// The record's nvlist as `spa_history_log_sync` packs it.
    pub fn to_nvlist(&self, host: &str) -> XdrNvList {
        let mut list = XdrNvList::new();
        let s = |v: &str| XdrValue::String(v.as_bytes().to_vec());
        match self {
            HistoryRecord::Command { time_secs, command } => {
                list.add(ozfs::CMD, s(command));
                list.add(ozfs::TIME, XdrValue::Uint64(*time_secs));
            }
            HistoryRecord::InternalDs {
                time_secs,
                txg,
                name,
                dsname,
                dsid,
                text,
            } => {
                list.add(ozfs::DSNAME, s(dsname));
                list.add(ozfs::DSID, XdrValue::Uint64(*dsid));
                list.add(ozfs::INT_STR, s(text));
                list.add(ozfs::INT_NAME, s(name));
                list.add(ozfs::TXG, XdrValue::Uint64(*txg));
                list.add(ozfs::TIME, XdrValue::Uint64(*time_secs));
            }
        }
        list.add(ozfs::HOST, s(host));
        list
    }

    /// What `zpool history` lists for it: (time, text), the text of an internal record as
    /// `-i` prints it (`[txg:N] name dsname (dsid) text`).
    pub fn line(&self) -> (u64, String, bool) {
        match self {
            HistoryRecord::Command { time_secs, command } => (*time_secs, command.clone(), false),
            HistoryRecord::InternalDs {
                time_secs,
                txg,
                name,
                dsname,
                dsid,
                text,
            } => (
                *time_secs,
                format!("[txg:{txg}] {name} {dsname} ({dsid}) {text}"),
                true,
            ),
        }
    }
}

/// (time, text, internal) of a record read back; `None` for kinds Zetta does not list.
pub fn record_line(record: &Record) -> Option<(u64, String, bool)> {
    let time = record.time().unwrap_or(0);
    if let Some(command) = record.command() {
        return Some((time, command, false));
    }
    let opts = ozfs::PrintOptions {
        internal: true,
        long: false,
    };
    let text = ozfs::format_record(record, opts, &|_| String::new(), &|_| None)?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    Some((time, text.trim_start().to_string(), true))
}

fn corrupt(why: impl std::fmt::Display) -> SpaError {
    SpaError::Corrupt(format!("pool history: {why}"))
}

fn read_phys(mos: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<HistoryPhys, SpaError> {
    let bonus = mos.bonus(ctx, ObjectId(object))?;
    let phys = HistoryPhys::decode(&bonus, ByteOrder::Little).map_err(corrupt)?;
    // The offsets must describe a readable ring before anything is appended to it.
    phys.ranges().map_err(corrupt)?;
    Ok(phys)
}

fn write_phys(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    phys: &HistoryPhys,
) -> Result<(), SpaError> {
    let mut bonus = Vec::with_capacity(HISTORY_PHYS_BYTES);
    for word in [
        phys.pool_create_len,
        phys.phys_max_off,
        phys.bof,
        phys.eof,
        phys.records_lost,
    ] {
        bonus.extend_from_slice(&word.to_le_bytes());
    }
    mos.set_bonus(ctx, ObjectId(object), &bonus)?;
    Ok(())
}

/// `spa_history_create_obj`: the history object at `object`, its ring 0.1% of
/// `normal_space_bytes` within [128 KiB, 1 GiB].
pub fn create(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: ObjectId,
    normal_space_bytes: u64,
) -> Result<(), SpaError> {
    mos.create_object_at(
        ctx,
        object,
        DMU_OT_SPA_HISTORY,
        HISTORY_BLOCK_BYTES,
        DMU_OT_SPA_HISTORY_OFFSETS,
        HISTORY_PHYS_BYTES,
    )?;
    init_phys(mos, ctx, object.0, normal_space_bytes)
}

/// `spa_history_create_obj`: a history object for a pool that has none (its creator made
/// none, as zfs-fuse's `spa_create` does until the first record), numbered by the MOS's
/// own allocator (`dmu_object_alloc`); the caller names it in the object directory.
pub fn create_allocated(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    normal_space_bytes: u64,
) -> Result<u64, SpaError> {
    let object = mos.create_object(
        ctx,
        DMU_OT_SPA_HISTORY,
        HISTORY_BLOCK_BYTES,
        DMU_OT_SPA_HISTORY_OFFSETS,
        HISTORY_PHYS_BYTES,
    )?;
    init_phys(mos, ctx, object.0, normal_space_bytes)?;
    Ok(object.0)
}

/// A new history's `spa_history_phys_t`: empty, its ring 0.1% of the pool's normal space
/// (128 KiB to 1 GiB).
fn init_phys(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    normal_space_bytes: u64,
) -> Result<(), SpaError> {
    let phys = HistoryPhys {
        pool_create_len: 0,
        phys_max_off: (normal_space_bytes / 1000).clamp(HISTORY_MIN_BYTES, ozfs::HISTORY_MAX),
        bof: 0,
        eof: 0,
        records_lost: 0,
    };
    write_phys(mos, ctx, object, &phys)
}

/// `spa_history_log_to_phys`.
fn log_to_phys(phys: &HistoryPhys, offset: u64) -> u64 {
    let ring = phys.phys_max_off - phys.pool_create_len;
    if offset < phys.pool_create_len || ring == 0 {
        return offset;
    }
    phys.pool_create_len + (offset - phys.pool_create_len) % ring
}

/// `spa_history_advance_bof`: drops the oldest ring record.
fn advance_bof(
    mos: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    phys: &mut HistoryPhys,
) -> Result<(), SpaError> {
    let at = log_to_phys(phys, phys.bof);
    let first = 8u64.min(phys.phys_max_off - at) as usize;
    let mut len = mos.read(ctx, ObjectId(object), at, first)?;
    if first < 8 {
        len.extend(mos.read(ctx, ObjectId(object), phys.pool_create_len, 8 - first)?);
    }
    let len = <[u8; 8]>::try_from(len.as_slice())
        .map(u64::from_le_bytes)
        .map_err(|_| corrupt(format!("short record length at {at}")))?;
    let next = phys
        .bof
        .checked_add(len + 8)
        .filter(|&n| n <= phys.eof && len <= ozfs::HISTORY_MAX)
        .ok_or_else(|| {
            corrupt(format!(
                "record of {len} bytes at {} runs past the end",
                phys.bof
            ))
        })?;
    phys.bof = next;
    phys.records_lost += 1;
    Ok(())
}

/// `spa_history_write`: `bytes` at the ring's end, wrapping at `phys_max_off`.
fn ring_write(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    phys: &mut HistoryPhys,
    bytes: &[u8],
) -> Result<(), SpaError> {
    let len = bytes.len() as u64;
    while phys.phys_max_off - phys.pool_create_len - (phys.eof - phys.bof) <= len {
        if phys.eof == phys.bof || phys.bof < phys.pool_create_len {
            return Err(corrupt(format!(
                "a {len}-byte record does not fit a {}-byte ring",
                phys.phys_max_off - phys.pool_create_len
            )));
        }
        advance_bof(mos, ctx, object, phys)?;
    }
    let at = log_to_phys(phys, phys.eof);
    let first = len.min(phys.phys_max_off - at) as usize;
    phys.eof += len;
    mos.write(ctx, ObjectId(object), at, &bytes[..first])?;
    if first < bytes.len() {
        mos.write(ctx, ObjectId(object), phys.pool_create_len, &bytes[first..])?;
    }
    Ok(())
}

/// `spa_history_log_sync` for each record, in order, then the bonus once.
pub fn append(
    mos: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    records: &[HistoryRecord],
    host: &str,
) -> Result<(), SpaError> {
    if records.is_empty() {
        return Ok(());
    }
    let mut phys = read_phys(mos, ctx, object)?;
    for record in records {
        let packed = crate::nvpair_native::pack(&record.to_nvlist(host), ByteOrder::Little)
            .map_err(|e| SpaError::Invalid(format!("history record: {e}")))?;
        ring_write(
            mos,
            ctx,
            object,
            &mut phys,
            &(packed.len() as u64).to_le_bytes(),
        )?;
        ring_write(mos, ctx, object, &mut phys, &packed)?;
        if phys.pool_create_len == 0 && matches!(record, HistoryRecord::Command { .. }) {
            phys.pool_create_len = phys.eof;
            phys.bof = phys.eof;
        }
    }
    debug_assert!(phys.ranges().is_ok(), "the ring stays readable: {phys:?}");
    write_phys(mos, ctx, object, &phys)
}

/// Every readable record, oldest first (`spa_history_get`).
pub fn read(mos: &ObjectSet, ctx: &IoCtx<'_>, object: u64) -> Result<Vec<Record>, SpaError> {
    let phys = read_phys(mos, ctx, object)?;
    let mut stream = Vec::new();
    for (offset, len) in phys.ranges().map_err(corrupt)? {
        stream.extend(mos.read(ctx, ObjectId(object), offset, len as usize)?);
    }
    ozfs::parse_records(&stream).map_err(corrupt)
}
