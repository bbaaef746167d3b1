//! The pool history of a real OpenZFS pool (OpenZFS `module/zfs/spa_history.c`, read as
//! `spa_history_get` and libzutil's `zpool_history_unpack` read it; printed as
//! `cmd/zpool/zpool_main.c` `print_history_records` prints it).
//!
//! Theory. The MOS object directory's `history` entry names a `DMU_OT_SPA_HISTORY` object.
//! Its bonus (`spa_history_phys_t`, in the byte order of the dnode holding it) is five u64:
//!
//! ```text
//! bonus := pool_create_len:u64 phys_max_off:u64 bof:u64 eof:u64 records_lost:u64
//! data  := [0, pool_create_len)             the records up to the pool's creation, kept
//!          [pool_create_len, phys_max_off)  a ring buffer of the later records
//! record:= len:u64 (always little-endian) packed nvlist[len]
//! ```
//!
//! `bof`/`eof` are logical offsets that only grow; logical offset `o` past the creation part
//! lives at `pool_create_len + (o - pool_create_len) % (phys_max_off - pool_create_len)`.
//! When the ring is full the writer moves `bof` past whole records and counts them in
//! `records_lost`, so a reader sees the creation records, then the records from
//! `max(bof, pool_create_len)` to `eof` (wrapping at `phys_max_off`), and nothing lost is
//! ever half-read. A trailing partial record is ignored, as OpenZFS ignores it.
//!
//! Each record is a packed nvlist: natively packed ([`crate::nvpair_native`]) by every
//! OpenZFS and by Solaris since the history's internal events; XDR-packed
//! ([`crate::nvpair_xdr`]) by the first Solaris releases (the big-endian SPARC fixture). The
//! encoding byte of each record says which. A record that does not decode fails the whole
//! history, as `zpool_history_unpack` does.

use super::pool::OpenZfsPool;
use crate::byteorder::ByteOrder;
use crate::dmu::openzfs::reader::OzfsError;
use crate::dsl::openzfs::objdir;
use crate::nvpair_xdr::{self, XdrNvList, XdrValue};
use std::fmt;

/// `DMU_OT_SPA_HISTORY`.
pub const DMU_OT_SPA_HISTORY: u8 = 29;
/// `DMU_OT_SPA_HISTORY_OFFSETS` (the bonus type).
pub const DMU_OT_SPA_HISTORY_OFFSETS: u8 = 30;
/// The largest history OpenZFS makes (`spa_history_create_obj` caps `phys_max_off` at 1 GiB).
pub const HISTORY_MAX: u64 = 1 << 30;

/// Record names (`ZPOOL_HIST_*` of `include/sys/fs/zfs.h`).
pub const TIME: &str = "history time";
pub const CMD: &str = "history command";
pub const WHO: &str = "history who";
pub const ZONE: &str = "history zone";
pub const HOST: &str = "history hostname";
pub const TXG: &str = "history txg";
pub const INT_EVENT: &str = "history internal event";
pub const INT_STR: &str = "history internal str";
pub const INT_NAME: &str = "internal_name";
pub const IOCTL: &str = "ioctl";
pub const INPUT_NVL: &str = "in_nvl";
pub const OUTPUT_NVL: &str = "out_nvl";
pub const OUTPUT_SIZE: &str = "out_size";
pub const DSNAME: &str = "dsname";
pub const DSID: &str = "dsid";
pub const ERRNO: &str = "errno";
pub const ELAPSED_NS: &str = "elapsed_ns";

/// `zfs_history_event_names`: the legacy internal events, by number
/// (`ZFS_NUM_LEGACY_HISTORY_EVENTS` of them).
pub const EVENT_NAMES: [&str; 41] = [
    "invalid event",
    "pool create",
    "vdev add",
    "pool remove",
    "pool destroy",
    "pool export",
    "pool import",
    "vdev attach",
    "vdev replace",
    "vdev detach",
    "vdev online",
    "vdev offline",
    "vdev upgrade",
    "pool clear",
    "pool scrub",
    "pool property set",
    "create",
    "clone",
    "destroy",
    "destroy_begin_sync",
    "inherit",
    "property set",
    "quota set",
    "permission update",
    "permission remove",
    "permission who remove",
    "promote",
    "receive",
    "rename",
    "reservation set",
    "replay_inc_sync",
    "replay_full_sync",
    "rollback",
    "snapshot",
    "filesystem version upgrade",
    "refquota set",
    "refreservation set",
    "pool scrub done",
    "user hold",
    "user release",
    "pool split",
];

/// `spa_history_phys_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryPhys {
    pub pool_create_len: u64,
    pub phys_max_off: u64,
    pub bof: u64,
    pub eof: u64,
    pub records_lost: u64,
}

impl HistoryPhys {
    /// Decodes the bonus (`order`: the dnode's byte order).
    pub fn decode(bonus: &[u8], order: ByteOrder) -> Result<HistoryPhys, HistoryError> {
        let word = |i: usize| {
            order
                .u64_at(bonus, i * 8)
                .map_err(|_| HistoryError::Corrupt {
                    offset: i as u64 * 8,
                    reason: format!("history bonus of {} bytes is shorter than 40", bonus.len()),
                })
        };
        Ok(HistoryPhys {
            pool_create_len: word(0)?,
            phys_max_off: word(1)?,
            bof: word(2)?,
            eof: word(3)?,
            records_lost: word(4)?,
        })
    }

    /// The physical ranges `(offset, len)` holding the readable history, in logical order:
    /// the creation part, then the ring from `max(bof, pool_create_len)` to `eof` (split in
    /// two where it wraps). Refuses offsets that contradict each other.
    pub fn ranges(&self) -> Result<Vec<(u64, u64)>, HistoryError> {
        let bad = |reason: String| HistoryError::Corrupt { offset: 0, reason };
        let pcl = self.pool_create_len;
        if pcl > self.phys_max_off || self.phys_max_off > HISTORY_MAX {
            return Err(bad(format!(
                "history offsets pool_create_len {pcl}, phys_max_off {} are out of range",
                self.phys_max_off
            )));
        }
        let mut out = Vec::new();
        if pcl > 0 {
            out.push((0, pcl));
        }
        let start = self.bof.max(pcl);
        if self.eof <= start {
            return Ok(out);
        }
        let ring = self.phys_max_off - pcl;
        let len = self.eof - start;
        if ring == 0 || len > ring {
            return Err(bad(format!(
                "history of {len} bytes from {start} does not fit its {ring}-byte ring"
            )));
        }
        let phys = pcl + (start - pcl) % ring;
        let first = len.min(self.phys_max_off - phys);
        out.push((phys, first));
        if first < len {
            out.push((pcl, len - first));
        }
        Ok(out)
    }
}

/// Why the history cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryError {
    /// The pool has no history object (pools older than version 4).
    NoHistory,
    /// The object could not be read.
    Read(OzfsError),
    /// Bytes that contradict the format; `offset` is in the logical history stream (or in
    /// the bonus for the offsets).
    Corrupt { offset: u64, reason: String },
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::NoHistory => write!(f, "the pool has no history"),
            HistoryError::Read(e) => write!(f, "{e}"),
            HistoryError::Corrupt { offset, reason } => {
                write!(f, "corrupt history at byte {offset}: {reason}")
            }
        }
    }
}

impl std::error::Error for HistoryError {}

impl From<OzfsError> for HistoryError {
    fn from(e: OzfsError) -> Self {
        HistoryError::Read(e)
    }
}

/// One history record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub list: XdrNvList,
}

impl Record {
    fn exists(&self, name: &str) -> bool {
        self.list.get(name).is_some()
    }

    fn u64(&self, name: &str) -> u64 {
        match self.list.get(name) {
            Some(XdrValue::Uint64(v)) => *v,
            Some(XdrValue::Int64(v)) => *v as u64,
            _ => 0,
        }
    }

    fn i64(&self, name: &str) -> i64 {
        self.u64(name) as i64
    }

    fn string(&self, name: &str) -> String {
        match self.list.get(name) {
            Some(XdrValue::String(s)) => String::from_utf8_lossy(s).into_owned(),
            _ => String::new(),
        }
    }

    /// `history time`, seconds since the epoch.
    pub fn time(&self) -> Option<u64> {
        self.exists(TIME).then(|| self.u64(TIME))
    }

    /// `history command`: the command line of a user command.
    pub fn command(&self) -> Option<String> {
        self.exists(CMD).then(|| self.string(CMD))
    }
}

/// Decodes one packed record, XDR or native (the first byte says which).
pub fn unpack_record(bytes: &[u8]) -> Result<XdrNvList, String> {
    match bytes.first() {
        Some(&crate::nvpair_native::NV_ENCODE_NATIVE) => crate::nvpair_native::unpack(bytes)
            .map(|u| u.list)
            .map_err(|e| e.to_string()),
        Some(&nvpair_xdr::NV_ENCODE_XDR) => nvpair_xdr::unpack(bytes)
            .map(|u| u.list)
            .map_err(|e| e.to_string()),
        Some(other) => Err(format!("unknown nvlist encoding {other}")),
        None => Err("empty record".to_string()),
    }
}

/// Splits the logical history stream into records (`zpool_history_unpack`): a trailing
/// partial record is left out.
pub fn parse_records(stream: &[u8]) -> Result<Vec<Record>, HistoryError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while stream.len() - at > 8 {
        let mut len = [0u8; 8];
        len.copy_from_slice(&stream[at..at + 8]);
        let len = u64::from_le_bytes(len);
        let left = (stream.len() - at - 8) as u64;
        if len > left {
            break;
        }
        let body = &stream[at + 8..at + 8 + len as usize];
        let list = unpack_record(body).map_err(|reason| HistoryError::Corrupt {
            offset: at as u64 + 8,
            reason,
        })?;
        out.push(Record { list });
        at += 8 + len as usize;
    }
    Ok(out)
}

/// The history object's offsets, or `NoHistory`.
pub fn phys(pool: &OpenZfsPool) -> Result<(u64, HistoryPhys), HistoryError> {
    let object = pool
        .mos
        .zap_u64(objdir::DIRECTORY_OBJECT, objdir::HISTORY)?
        .ok_or(HistoryError::NoHistory)?;
    let dn = pool.mos.dnode(object)?;
    Ok((object, HistoryPhys::decode(&dn.bonus, dn.order)?))
}

/// Every readable record of the pool's history, oldest first.
pub fn read(pool: &OpenZfsPool) -> Result<Vec<Record>, HistoryError> {
    let (object, phys) = phys(pool)?;
    let dn = pool.mos.dnode(object)?;
    let mut stream = Vec::new();
    for (offset, len) in phys.ranges()? {
        stream.extend_from_slice(&pool.mos.read(&dn, offset, len as usize)?);
    }
    parse_records(&stream)
}

/// What `zpool history` shows (`-i`, `-l`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// `-i`: internal events too.
    pub internal: bool,
    /// `-l`: who, where.
    pub long: bool,
}

/// The text `zpool history` prints for one record (`print_history_records`), or `None`
/// when the options leave it out. `time` formats seconds as `%F.%T` in local time; `user`
/// names a uid (`getpwuid`). Missing values print as 0 or empty where OpenZFS would abort.
pub fn format_record(
    rec: &Record,
    opts: PrintOptions,
    time: &dyn Fn(u64) -> String,
    user: &dyn Fn(u64) -> Option<String>,
) -> Option<String> {
    let mut tbuf = rec.time().map(time).unwrap_or_default();
    if rec.exists(ELAPSED_NS) {
        tbuf.push_str(&format!(" ({}ms)", rec.i64(ELAPSED_NS) / 1000 / 1000));
    }
    let mut out = String::new();
    let unrecognized = |out: &mut String| {
        out.push_str(&format!("{tbuf} unrecognized record:\n"));
        out.push_str(&nvpair_xdr::dump_nvlist(&rec.list, 4));
    };
    if rec.exists(CMD) {
        out.push_str(&format!("{tbuf} {}", rec.string(CMD)));
    } else if rec.exists(INT_EVENT) {
        if !opts.internal {
            return None;
        }
        let event = rec.u64(INT_EVENT);
        match EVENT_NAMES.get(event as usize) {
            Some(name) => out.push_str(&format!(
                "{tbuf} [internal {name} txg:{}] {}",
                rec.i64(TXG),
                rec.string(INT_STR)
            )),
            None => {
                // OpenZFS prints the record and goes on without the -l suffix.
                unrecognized(&mut out);
                return Some(out);
            }
        }
    } else if rec.exists(INT_NAME) {
        if !opts.internal {
            return None;
        }
        out.push_str(&format!(
            "{tbuf} [txg:{}] {}",
            rec.i64(TXG),
            rec.string(INT_NAME)
        ));
        if rec.exists(DSNAME) {
            out.push_str(&format!(" {} ({})", rec.string(DSNAME), rec.u64(DSID)));
        }
        out.push_str(&format!(" {}", rec.string(INT_STR)));
    } else if rec.exists(IOCTL) {
        if !opts.internal {
            return None;
        }
        out.push_str(&format!("{tbuf} ioctl {}\n", rec.string(IOCTL)));
        if let Some(l) = rec.list.get_nvlist(INPUT_NVL) {
            out.push_str("    input:\n");
            out.push_str(&nvpair_xdr::dump_nvlist(l, 8));
        }
        if let Some(l) = rec.list.get_nvlist(OUTPUT_NVL) {
            out.push_str("    output:\n");
            out.push_str(&nvpair_xdr::dump_nvlist(l, 8));
        }
        if rec.exists(OUTPUT_SIZE) {
            out.push_str(&format!(
                "    output nvlist omitted; original size: {}KB\n",
                rec.i64(OUTPUT_SIZE) / 1024
            ));
        }
        if rec.exists(ERRNO) {
            out.push_str(&format!("    errno: {}\n", rec.i64(ERRNO)));
        }
    } else {
        if !opts.internal {
            return None;
        }
        unrecognized(&mut out);
    }
    if !opts.long {
        out.push('\n');
        return Some(out);
    }
    out.push_str(" [");
    if rec.exists(WHO) {
        let who = rec.u64(WHO);
        out.push_str(&format!("user {} ", who as i32));
        if let Some(name) = user(who) {
            out.push_str(&format!("({name}) "));
        }
    }
    if rec.exists(HOST) {
        out.push_str(&format!("on {}", rec.string(HOST)));
    }
    if rec.exists(ZONE) {
        out.push_str(&format!(":{}", rec.string(ZONE)));
    }
    out.push_str("]\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phys(pcl: u64, max: u64, bof: u64, eof: u64) -> HistoryPhys {
        HistoryPhys {
            pool_create_len: pcl,
            phys_max_off: max,
            bof,
            eof,
            records_lost: 0,
        }
    }

    #[test]
    fn ring_ranges_wrap_after_the_creation_part() {
        // Why: a wrapped history must read the creation records, then the ring from bof to
        // its physical end, then from its start to eof, as spa_history_get reads it.
        assert_eq!(
            phys(168, 1000, 168, 500).ranges().unwrap(),
            vec![(0, 168), (168, 332)]
        );
        // bof at logical 1500: physical 168 + (1332 % 832) = 668; eof 2232 -> 100 wraps.
        assert_eq!(
            phys(168, 1000, 1500, 2232).ranges().unwrap(),
            vec![(0, 168), (668, 332), (168, 400)]
        );
        assert_eq!(phys(0, 1000, 0, 0).ranges().unwrap(), vec![]);
        assert!(phys(168, 1000, 0, 5000).ranges().is_err());
        assert!(phys(2000, 1000, 0, 0).ranges().is_err());
        assert!(phys(0, 0, 0, 8).ranges().is_err());
        assert!(phys(0, u64::MAX, 0, 8).ranges().is_err());
    }

    #[test]
    fn partial_and_hostile_records() {
        // Why: history bytes are outside input: a truncated tail is ignored as OpenZFS
        // ignores it; a record that does not decode is a typed error with its offset.
        let mut l = XdrNvList::new();
        l.add(TIME, XdrValue::Uint64(5));
        l.add(CMD, XdrValue::String(b"zpool create p d".to_vec()));
        let rec = crate::nvpair_native::pack(&l, ByteOrder::Big).unwrap();
        let mut stream = Vec::new();
        stream.extend_from_slice(&(rec.len() as u64).to_le_bytes());
        stream.extend_from_slice(&rec);
        let whole = stream.clone();
        stream.extend_from_slice(&u64::MAX.to_le_bytes());
        stream.extend_from_slice(&[1, 2, 3]);
        let recs = parse_records(&stream).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].command().as_deref(), Some("zpool create p d"));
        let mut bad = whole.clone();
        bad[8 + 20] ^= 0x40;
        bad.extend_from_slice(&whole);
        match parse_records(&bad) {
            Err(HistoryError::Corrupt { offset, .. }) => assert_eq!(offset, 8),
            other => panic!("{other:?}"),
        }
        let mut rng = crate::rand::SeededRng::new(77);
        for _ in 0..5000 {
            let mut b = whole.clone();
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
            let _ = parse_records(&b);
        }
    }

    #[test]
    fn formats_as_zpool_history() {
        // Why: `zpool history -il` prints OpenZFS's exact shapes for each record kind.
        let t = |s: u64| format!("T{s}");
        let u = |uid: u64| (uid == 0).then(|| "root".to_string());
        let mut cmd = XdrNvList::new();
        cmd.add(TIME, XdrValue::Uint64(1));
        cmd.add(CMD, XdrValue::String(b"zfs create p/a".to_vec()));
        cmd.add(WHO, XdrValue::Uint64(0));
        cmd.add(HOST, XdrValue::String(b"h".to_vec()));
        let cmd = Record { list: cmd };
        let plain = PrintOptions::default();
        let long = PrintOptions {
            internal: true,
            long: true,
        };
        assert_eq!(
            format_record(&cmd, plain, &t, &u).unwrap(),
            "T1 zfs create p/a\n"
        );
        assert_eq!(
            format_record(&cmd, long, &t, &u).unwrap(),
            "T1 zfs create p/a [user 0 (root) on h]\n"
        );
        let mut int = XdrNvList::new();
        int.add(TIME, XdrValue::Uint64(2));
        int.add(INT_NAME, XdrValue::String(b"create".to_vec()));
        int.add(TXG, XdrValue::Uint64(9));
        int.add(DSNAME, XdrValue::String(b"p/a".to_vec()));
        int.add(DSID, XdrValue::Uint64(54));
        int.add(INT_STR, XdrValue::String(b"".to_vec()));
        let int = Record { list: int };
        assert_eq!(format_record(&int, plain, &t, &u), None);
        assert_eq!(
            format_record(
                &int,
                PrintOptions {
                    internal: true,
                    long: false
                },
                &t,
                &u
            )
            .unwrap(),
            "T2 [txg:9] create p/a (54) \n"
        );
        let mut legacy = XdrNvList::new();
        legacy.add(TIME, XdrValue::Uint64(3));
        legacy.add(INT_EVENT, XdrValue::Uint64(16));
        legacy.add(TXG, XdrValue::Uint64(7));
        legacy.add(INT_STR, XdrValue::String(b"dataset = 21".to_vec()));
        legacy.add(WHO, XdrValue::Uint64(1234));
        let legacy = Record { list: legacy };
        assert_eq!(
            format_record(&legacy, long, &t, &u).unwrap(),
            "T3 [internal create txg:7] dataset = 21 [user 1234 ]\n"
        );
    }
}
