//! The ZPL's log records (OpenZFS `zfs_log.c` and the `lr_*_t` of `zil.h`): one per change a
//! mount made, enough to make that change again on the last committed state. `log` hands
//! each to the object set's intent log (`zil`, which keeps them opaque); a write is logged
//! by position and its bytes copied at commit (`get_data`, OpenZFS `zfs_get_data`).
//!
//! Records are OpenZFS's `lr_*_t` (`include/sys/zil.h`), little-endian, each padded to 8
//! bytes: the 32-byte `lr_t` (`zil::RECORD_HEADER_SIZE_BYTES`), then the type's body as
//! OpenZFS lays it out, then — where OpenZFS's record cannot carry everything Zetta's
//! replay needs to make the change exactly again — Zetta's *trailer*, 8-aligned after
//! OpenZFS's body: `| "ZETTALR1" u64 | words ... |`. OpenZFS's replay reads its record by
//! its own lengths and NUL-terminated strings and never looks past them, so a trailer does
//! not disturb it; a record without one (written by OpenZFS) decodes with zero times. A
//! trailer of link, remove, rename, write or truncate whose words are all zero is left out:
//! a volume's records (no times) are OpenZFS's `zvol_log_write`/`zvol_log_truncate` ones
//! byte for byte.
//!
//! ```text
//! lr_t                0 lrc_txtype | 8 lrc_reclen | 16 lrc_txg | 24 lrc_seq
//! TX_CREATE 1, TX_MKDIR 2, TX_SYMLINK 4 (_lr_create_t, 104 bytes):
//!   32 lr_doid | 40 lr_foid | 48 lr_mode | 56 lr_uid | 64 lr_gid | 72 lr_gen |
//!   80 lr_crtime[2] (sec, nsec) | 96 lr_rdev | 104 name\0 [target\0] | pad |
//!   trailer: the 160-byte znode (`ZnodePhys::encode`: times, size, flags, links)
//! TX_REMOVE 5, TX_RMDIR 6 (lr_remove_t): 32 lr_doid | 40 name\0 | pad | trailer: now[2]
//! TX_LINK 7 (lr_link_t): 32 lr_doid | 40 lr_link_obj | 48 name\0 | pad | trailer: now[2]
//! TX_RENAME 8, TX_RENAME_EXCHANGE 22 (lr_rename_t): 32 lr_sdoid | 40 lr_tdoid |
//!   48 sname\0 tname\0 | pad | trailer: now[2], flags (1 noreplace)
//! TX_WRITE 9 (lr_write_t, 192 bytes, WR_COPIED): 32 lr_foid | 40 lr_offset |
//!   48 lr_length | 56 lr_blkoff (0) | 64 lr_blkptr (zero: the data follows) |
//!   192 data (lr_length bytes) | pad | trailer: now[2]
//! TX_TRUNCATE 10 (lr_truncate_t): 32 lr_foid | 40 lr_offset | 48 lr_length |
//!   trailer: now[2]                  (a hole punched; a size change is a TX_SETATTR)
//! TX_SETATTR 11 (lr_setattr_t, 104 bytes): 32 lr_foid | 40 lr_mask (Linux ATTR_*: MODE 1,
//!   UID 2, GID 4, SIZE 8, ATIME 16, MTIME 32, CTIME 64) | 48 lr_mode | 56 lr_uid |
//!   64 lr_gid | 72 lr_size | 80 lr_atime[2] | 96 lr_mtime[2] |
//!   trailer: now[2], ctime[2], crtime set (0/1), crtime[2]
//! TX_SETSAXATTR 21 (lr_setsaxattr_t): 32 lr_foid | 40 lr_size (value bytes) |
//!   48 name\0 value | pad | trailer: now[2], setxattr flags, removed (0/1)
//! Zetta's reclaim (TX_ZETTA_RECLAIM, 0x7a01): 32 object
//! ```
//!
//! Choices where OpenZFS has no record: a ctime OpenZFS's `zfs_setattr` would take from
//! the clock at replay, and a creation time it would carry in an `lr_attr_t` (xvattr) ride
//! in the trailer; xattrs use `TX_SETSAXATTR` (OpenZFS's record for xattr=sa, feature
//! `org.openzfs:zilsaxattr`), removal as OpenZFS logs it (`lr_size` 0, no value) with the
//! trailer saying so (an empty value is a set); an unlinked object freed at its last close
//! has no OpenZFS record (OpenZFS drains its unlinked set at mount) and keeps a private type
//! above `TX_MAX_TYPE` (25), which OpenZFS's replay refuses by name. A name or target with
//! a NUL byte cannot be logged as OpenZFS logs it (POSIX names never hold one). A decoder
//! refuses a record whose lengths overrun it.

use super::vnops::SetAttr;
use super::znode::{FileKind, Timespec, ZnodePhys};
use super::{ZplError, ZNODE_SIZE_BYTES};
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::{ObjectId, Txg};
pub use crate::zil::RECORD_HEADER_SIZE_BYTES;
use crate::zil::{Itx, WriteItx, ZilError};

/// Largest write payload in one record: a longer write is logged as several.
pub const WRITE_CHUNK_MAX_BYTES: usize = 64 << 10;

/// One logged change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lr {
    /// A new object `object` named `name` in `dir`, with the znode it got; a symlink's
    /// target rides along.
    Create {
        dir: u64,
        object: u64,
        name: Vec<u8>,
        znode: ZnodePhys,
        target: Vec<u8>,
    },
    Link {
        object: u64,
        dir: u64,
        name: Vec<u8>,
        now: Timespec,
    },
    /// unlink (or rmdir when `is_dir`).
    Remove {
        dir: u64,
        name: Vec<u8>,
        is_dir: bool,
        now: Timespec,
    },
    Rename {
        sdir: u64,
        sname: Vec<u8>,
        ddir: u64,
        dname: Vec<u8>,
        noreplace: bool,
        exchange: bool,
        now: Timespec,
    },
    Setattr {
        object: u64,
        change: SetAttr,
        now: Timespec,
    },
    /// `len` bytes at `offset`. In memory (before commit) `data` is empty and `len` says
    /// what to copy from the object when the record is written, as OpenZFS's WR_NEED_COPY.
    Write {
        object: u64,
        offset: u64,
        len: u64,
        data: Vec<u8>,
        now: Timespec,
    },
    Punch {
        object: u64,
        offset: u64,
        len: u64,
        now: Timespec,
    },
    SetXattr {
        object: u64,
        name: Vec<u8>,
        value: Vec<u8>,
        flags: u32,
        now: Timespec,
    },
    RemoveXattr {
        object: u64,
        name: Vec<u8>,
        now: Timespec,
    },
    /// An unlinked object freed at its last close.
    Reclaim { object: u64 },
}

/// A record as stored: the change and the txg it was made in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub txg: Txg,
    pub lr: Lr,
}

/// OpenZFS's record types (`TX_*`, `include/sys/zil.h`).
pub const TX_CREATE: u64 = 1;
pub const TX_MKDIR: u64 = 2;
pub const TX_SYMLINK: u64 = 4;
pub const TX_REMOVE: u64 = 5;
pub const TX_RMDIR: u64 = 6;
pub const TX_LINK: u64 = 7;
pub const TX_RENAME: u64 = 8;
pub const TX_WRITE: u64 = 9;
pub const TX_TRUNCATE: u64 = 10;
pub const TX_SETATTR: u64 = 11;
pub const TX_SETSAXATTR: u64 = 21;
pub const TX_RENAME_EXCHANGE: u64 = 22;
/// Zetta's own record (no OpenZFS counterpart, see the module header): above
/// `TX_MAX_TYPE` (25), so OpenZFS's replay refuses it instead of misreading it.
pub const TX_ZETTA_RECLAIM: u64 = 0x7a01;

/// `sizeof (lr_write_t)`: the header, four words and `lr_blkptr`.
pub const LR_WRITE_SIZE_BYTES: usize = 192;
/// `sizeof (_lr_create_t)`.
pub const LR_CREATE_SIZE_BYTES: usize = 104;
/// Marks Zetta's trailer (see the module header).
const TRAILER_MAGIC: u64 = u64::from_le_bytes(*b"ZETTALR1");

/// `lr_mask` bits: Linux's `ATTR_*`, what OpenZFS on Linux logs (`zfs_log_setattr`).
const ATTR_MODE: u64 = 1;
const ATTR_UID: u64 = 2;
const ATTR_GID: u64 = 4;
const ATTR_SIZE: u64 = 8;
const ATTR_ATIME: u64 = 16;
const ATTR_MTIME: u64 = 32;
const ATTR_CTIME: u64 = 64;

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// OpenZFS's `uint64_t t[2]`: seconds, nanoseconds.
    fn time(&mut self, t: Timespec) {
        self.u64(t.sec as u64);
        self.u64(u64::from(t.nsec));
    }
    /// A NUL-terminated string.
    fn cstr(&mut self, b: &[u8]) {
        debug_assert!(!b.contains(&0), "a name with a NUL byte cannot be logged");
        self.0.extend_from_slice(b);
        self.0.push(0);
    }
    fn pad(&mut self) {
        while !self.0.len().is_multiple_of(8) {
            self.0.push(0);
        }
    }
    /// Pads OpenZFS's body and starts Zetta's trailer.
    fn trailer(&mut self) {
        self.pad();
        self.u64(TRAILER_MAGIC);
    }
    /// Zetta's trailer of `words`, left out when they are all zero (the record is then
    /// OpenZFS's own, byte for byte: a volume's writes, whose time is none).
    fn trailer_words(&mut self, words: &[u64]) {
        if words.iter().any(|w| *w != 0) {
            self.trailer();
            for w in words {
                self.u64(*w);
            }
        }
    }
}

/// A time as the trailer's two words.
fn time_words(t: Timespec) -> [u64; 2] {
    [t.sec as u64, u64::from(t.nsec)]
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ZilError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| ZilError::Corrupt("log record is truncated".to_string()))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u64(&mut self) -> Result<u64, ZilError> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(w))
    }
    fn time(&mut self) -> Result<Timespec, ZilError> {
        let sec = self.u64()? as i64;
        let nsec = self.u64()?;
        if nsec >= 1_000_000_000 {
            return Err(ZilError::Corrupt(format!("log record time with {nsec} ns")));
        }
        Ok(Timespec {
            sec,
            nsec: nsec as u32,
        })
    }
    fn cstr(&mut self) -> Result<Vec<u8>, ZilError> {
        let rest = &self.bytes[self.at.min(self.bytes.len())..];
        let len = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or_else(|| ZilError::Corrupt("log record name is not terminated".to_string()))?;
        let out = rest[..len].to_vec();
        self.at += len + 1;
        Ok(out)
    }
    /// Skips OpenZFS's padding; whether Zetta's trailer follows.
    fn trailer(&mut self) -> Result<bool, ZilError> {
        self.at = self.at.div_ceil(8) * 8;
        if self.at + 8 > self.bytes.len() {
            return Ok(false);
        }
        Ok(self.u64()? == TRAILER_MAGIC)
    }
    /// The trailer's `now`, or zero for a record without a trailer.
    fn trailer_time(&mut self) -> Result<Timespec, ZilError> {
        if self.trailer()? {
            self.time()
        } else {
            Ok(Timespec::default())
        }
    }
}

/// OpenZFS's part of a create record (`lr_create_t`: `_lr_create_t`, the name, a symlink's
/// target), as any OpenZFS writes it: what replay needs beyond it rides in Zetta's trailer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LrCreate {
    /// `TX_CREATE`, `TX_MKDIR` or `TX_SYMLINK`.
    pub txtype: u64,
    pub doid: u64,
    /// `lr_foid`: the object, its dnode slots minus one in bits 56..64 (`LR_FOID_SET_SLOTS`).
    pub foid: u64,
    pub mode: u64,
    pub uid: u64,
    pub gid: u64,
    pub gen: u64,
    pub crtime: [u64; 2],
    pub rdev: u64,
    pub name: Vec<u8>,
    /// A symlink's target (empty otherwise).
    pub target: Vec<u8>,
}

impl LrCreate {
    fn write_body(&self, w: &mut Writer) {
        for v in [
            self.doid,
            self.foid,
            self.mode,
            self.uid,
            self.gid,
            self.gen,
            self.crtime[0],
            self.crtime[1],
            self.rdev,
        ] {
            w.u64(v);
        }
        w.cstr(&self.name);
        if self.txtype == TX_SYMLINK {
            w.cstr(&self.target);
        }
    }

    fn read_body(txtype: u64, r: &mut Reader<'_>) -> Result<LrCreate, ZilError> {
        let mut words = [0u64; 9];
        for word in &mut words {
            *word = r.u64()?;
        }
        let name = r.cstr()?;
        let target = if txtype == TX_SYMLINK {
            r.cstr()?
        } else {
            Vec::new()
        };
        let [doid, foid, mode, uid, gid, gen, crtime_sec, crtime_nsec, rdev] = words;
        Ok(LrCreate {
            txtype,
            doid,
            foid,
            mode,
            uid,
            gid,
            gen,
            crtime: [crtime_sec, crtime_nsec],
            rdev,
            name,
            target,
        })
    }

    /// The record as OpenZFS's `zfs_log_create`/`zfs_log_symlink` writes it (`lrc_seq` 0
    /// until the log writes it).
    pub fn encode(&self, txg: Txg) -> Vec<u8> {
        let mut w = Writer(vec![0u8; RECORD_HEADER_SIZE_BYTES]);
        self.write_body(&mut w);
        w.pad();
        crate::zil::put_record_header(&mut w.0, self.txtype, txg);
        w.0
    }

    /// Decodes OpenZFS's part of a create record (any trailer is left aside).
    pub fn decode(bytes: &[u8]) -> Result<(LrCreate, Txg), ZilError> {
        let (txg, txtype, reclen) = crate::zil::record_header(bytes)?;
        if !matches!(txtype, TX_CREATE | TX_MKDIR | TX_SYMLINK) {
            return Err(ZilError::Corrupt(format!(
                "log record type {txtype} is no create"
            )));
        }
        let mut r = Reader {
            bytes: &bytes[..reclen],
            at: RECORD_HEADER_SIZE_BYTES,
        };
        Ok((LrCreate::read_body(txtype, &mut r)?, txg))
    }
}

impl LogRecord {
    /// The stored form (`lr_t`, OpenZFS's body, Zetta's trailer, padding to 8 bytes);
    /// `lrc_seq` is 0 until the log writes the record.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(vec![0u8; RECORD_HEADER_SIZE_BYTES]);
        let txtype: u64 = match &self.lr {
            Lr::Create {
                dir,
                object,
                name,
                znode,
                target,
            } => {
                let kind = znode.kind();
                let txtype = match kind {
                    Some(FileKind::Directory) => TX_MKDIR,
                    Some(FileKind::Symlink) => TX_SYMLINK,
                    _ => TX_CREATE,
                };
                LrCreate {
                    txtype,
                    doid: *dir,
                    foid: *object,
                    mode: znode.mode,
                    uid: znode.uid,
                    gid: znode.gid,
                    gen: znode.gen,
                    crtime: time_words(znode.crtime),
                    rdev: znode.rdev,
                    name: name.clone(),
                    target: target.clone(),
                }
                .write_body(&mut w);
                w.trailer();
                w.0.extend_from_slice(&znode.encode());
                txtype
            }
            Lr::Link {
                object,
                dir,
                name,
                now,
            } => {
                w.u64(*dir);
                w.u64(*object);
                w.cstr(name);
                w.trailer_words(&time_words(*now));
                TX_LINK
            }
            Lr::Remove {
                dir,
                name,
                is_dir,
                now,
            } => {
                w.u64(*dir);
                w.cstr(name);
                w.trailer_words(&time_words(*now));
                if *is_dir {
                    TX_RMDIR
                } else {
                    TX_REMOVE
                }
            }
            Lr::Rename {
                sdir,
                sname,
                ddir,
                dname,
                noreplace,
                exchange,
                now,
            } => {
                w.u64(*sdir);
                w.u64(*ddir);
                w.cstr(sname);
                w.cstr(dname);
                let [sec, nsec] = time_words(*now);
                w.trailer_words(&[sec, nsec, u64::from(*noreplace)]);
                if *exchange {
                    TX_RENAME_EXCHANGE
                } else {
                    TX_RENAME
                }
            }
            Lr::Setattr {
                object,
                change,
                now,
            } => {
                let bit = |present: bool, b: u64| if present { b } else { 0 };
                let mask = bit(change.mode.is_some(), ATTR_MODE)
                    | bit(change.uid.is_some(), ATTR_UID)
                    | bit(change.gid.is_some(), ATTR_GID)
                    | bit(change.size.is_some(), ATTR_SIZE)
                    | bit(change.atime.is_some(), ATTR_ATIME)
                    | bit(change.mtime.is_some(), ATTR_MTIME)
                    | bit(change.ctime.is_some(), ATTR_CTIME);
                w.u64(*object);
                w.u64(mask);
                w.u64(u64::from(change.mode.unwrap_or(0)));
                w.u64(u64::from(change.uid.unwrap_or(0)));
                w.u64(u64::from(change.gid.unwrap_or(0)));
                w.u64(change.size.unwrap_or(0));
                w.time(change.atime.unwrap_or_default());
                w.time(change.mtime.unwrap_or_default());
                w.trailer();
                w.time(*now);
                w.time(change.ctime.unwrap_or_default());
                w.u64(u64::from(change.crtime.is_some()));
                w.time(change.crtime.unwrap_or_default());
                TX_SETATTR
            }
            Lr::Write {
                object,
                offset,
                data,
                now,
                ..
            } => {
                w.u64(*object);
                w.u64(*offset);
                w.u64(data.len() as u64);
                w.u64(0);
                w.0.extend_from_slice(&[0u8; 128]);
                w.0.extend_from_slice(data);
                w.trailer_words(&time_words(*now));
                TX_WRITE
            }
            Lr::Punch {
                object,
                offset,
                len,
                now,
            } => {
                w.u64(*object);
                w.u64(*offset);
                w.u64(*len);
                w.trailer_words(&time_words(*now));
                TX_TRUNCATE
            }
            Lr::SetXattr {
                object,
                name,
                value,
                flags,
                now,
            } => {
                w.u64(*object);
                w.u64(value.len() as u64);
                w.cstr(name);
                w.0.extend_from_slice(value);
                w.trailer();
                w.time(*now);
                w.u64(u64::from(*flags));
                w.u64(0);
                TX_SETSAXATTR
            }
            Lr::RemoveXattr { object, name, now } => {
                w.u64(*object);
                w.u64(0);
                w.cstr(name);
                w.trailer();
                w.time(*now);
                w.u64(0);
                w.u64(1);
                TX_SETSAXATTR
            }
            Lr::Reclaim { object } => {
                w.u64(*object);
                TX_ZETTA_RECLAIM
            }
        };
        w.pad();
        crate::zil::put_record_header(&mut w.0, txtype, self.txg);
        w.0
    }

    /// Decodes the record at the start of `bytes`; returns it and its stored length.
    pub fn decode(bytes: &[u8]) -> Result<(LogRecord, usize), ZilError> {
        let (txg, txtype, reclen) = crate::zil::record_header(bytes)?;
        let mut r = Reader {
            bytes: &bytes[..reclen],
            at: RECORD_HEADER_SIZE_BYTES,
        };
        let lr = match txtype {
            TX_CREATE | TX_MKDIR | TX_SYMLINK => {
                let create = LrCreate::read_body(txtype, &mut r)?;
                if !r.trailer()? {
                    return Err(ZilError::Corrupt(
                        "create record without Zetta's znode (written by OpenZFS?)".to_string(),
                    ));
                }
                let znode = ZnodePhys::decode(r.take(ZNODE_SIZE_BYTES)?)
                    .map_err(|e| ZilError::Corrupt(e.to_string()))?;
                // The object number without its dnode slots (`LR_FOID_GET_OBJ`).
                Lr::Create {
                    dir: create.doid,
                    object: create.foid & ((1 << 48) - 1),
                    znode,
                    name: create.name,
                    target: create.target,
                }
            }
            TX_LINK => {
                let dir = r.u64()?;
                let object = r.u64()?;
                let name = r.cstr()?;
                Lr::Link {
                    object,
                    dir,
                    name,
                    now: r.trailer_time()?,
                }
            }
            TX_REMOVE | TX_RMDIR => {
                let dir = r.u64()?;
                let name = r.cstr()?;
                Lr::Remove {
                    dir,
                    name,
                    is_dir: txtype == TX_RMDIR,
                    now: r.trailer_time()?,
                }
            }
            TX_RENAME | TX_RENAME_EXCHANGE => {
                let sdir = r.u64()?;
                let ddir = r.u64()?;
                let sname = r.cstr()?;
                let dname = r.cstr()?;
                let (now, noreplace) = if r.trailer()? {
                    (r.time()?, r.u64()? & 1 != 0)
                } else {
                    (Timespec::default(), false)
                };
                Lr::Rename {
                    sdir,
                    sname,
                    ddir,
                    dname,
                    noreplace,
                    exchange: txtype == TX_RENAME_EXCHANGE,
                    now,
                }
            }
            TX_SETATTR => {
                let object = r.u64()?;
                let mask = r.u64()?;
                let (mode, uid, gid, size) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
                let (atime, mtime) = (r.time()?, r.time()?);
                let (now, ctime, crtime) = if r.trailer()? {
                    let now = r.time()?;
                    let ctime = r.time()?;
                    let has_crtime = r.u64()? != 0;
                    let crtime = r.time()?;
                    (now, ctime, has_crtime.then_some(crtime))
                } else {
                    (Timespec::default(), Timespec::default(), None)
                };
                let set = |b: u64| mask & b != 0;
                let narrow = |v: u64, what: &str| {
                    u32::try_from(v)
                        .map_err(|_| ZilError::Corrupt(format!("log record {what} {v}")))
                };
                Lr::Setattr {
                    object,
                    now,
                    change: SetAttr {
                        mode: set(ATTR_MODE).then(|| narrow(mode, "mode")).transpose()?,
                        uid: set(ATTR_UID).then(|| narrow(uid, "uid")).transpose()?,
                        gid: set(ATTR_GID).then(|| narrow(gid, "gid")).transpose()?,
                        size: set(ATTR_SIZE).then_some(size),
                        atime: set(ATTR_ATIME).then_some(atime),
                        mtime: set(ATTR_MTIME).then_some(mtime),
                        ctime: set(ATTR_CTIME).then_some(ctime),
                        crtime,
                    },
                }
            }
            TX_WRITE => {
                let object = r.u64()?;
                let offset = r.u64()?;
                let length = r.u64()?;
                r.u64()?;
                let blkptr = r.take(128)?;
                if blkptr.iter().any(|b| *b != 0) {
                    return Err(ZilError::Corrupt(
                        "write record names a block (WR_INDIRECT), not its data".to_string(),
                    ));
                }
                let len = usize::try_from(length)
                    .map_err(|_| ZilError::Corrupt(format!("write of {length} bytes")))?;
                let data = r.take(len)?.to_vec();
                Lr::Write {
                    object,
                    offset,
                    len: length,
                    data,
                    now: r.trailer_time()?,
                }
            }
            TX_TRUNCATE => Lr::Punch {
                object: r.u64()?,
                offset: r.u64()?,
                len: r.u64()?,
                now: r.trailer_time()?,
            },
            TX_SETSAXATTR => {
                let object = r.u64()?;
                let size = r.u64()?;
                let name = r.cstr()?;
                let len = usize::try_from(size)
                    .map_err(|_| ZilError::Corrupt(format!("xattr of {size} bytes")))?;
                let value = r.take(len)?.to_vec();
                let (now, flags, removed) = if r.trailer()? {
                    let now = r.time()?;
                    let flags = u32::try_from(r.u64()?)
                        .map_err(|_| ZilError::Corrupt("xattr flags".to_string()))?;
                    (now, flags, r.u64()? != 0)
                } else {
                    (Timespec::default(), 0, size == 0)
                };
                if removed {
                    Lr::RemoveXattr { object, name, now }
                } else {
                    Lr::SetXattr {
                        object,
                        name,
                        value,
                        flags,
                        now,
                    }
                }
            }
            TX_ZETTA_RECLAIM => Lr::Reclaim { object: r.u64()? },
            other => return Err(ZilError::Corrupt(format!("log record type {other}"))),
        };
        Ok((LogRecord { txg, lr }, reclen))
    }
}

/// Logs change `lr`, made in txg `txg`, in the intent log of `os` (OpenZFS `zfs_log_*`).
pub fn log(os: &mut ObjectSet, txg: Txg, lr: Lr) {
    let itx = match lr {
        Lr::Write {
            object,
            offset,
            len,
            now,
            ..
        } => Itx::Write {
            txg,
            write: WriteItx {
                object,
                offset,
                len,
                private: [now.sec as u64, u64::from(now.nsec)],
            },
            get_data,
        },
        lr => Itx::Record {
            txg,
            bytes: LogRecord { txg, lr }.encode(),
        },
    };
    os.zil.log(itx);
}

/// The stored records of a logged write, its bytes as they are now, clipped to the file's
/// size (OpenZFS `zfs_get_data`); none when the file is gone (its removal is logged after).
fn get_data(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    txg: Txg,
    write: &WriteItx,
) -> Result<Vec<Vec<u8>>, ZilError> {
    let WriteItx {
        object,
        offset,
        len,
        private,
    } = *write;
    let now = Timespec {
        sec: private[0] as i64,
        nsec: private[1] as u32,
    };
    let record = |offset: u64, data: Vec<u8>| {
        LogRecord {
            txg,
            lr: Lr::Write {
                object,
                offset,
                len: data.len() as u64,
                data,
                now,
            },
        }
        .encode()
    };
    let znode = match super::vnops::get(os, ctx, object) {
        Ok(znode) => znode,
        Err(ZplError::NotFound) => return Ok(Vec::new()),
        Err(e) => return Err(ZilError::Io(e.to_string())),
    };
    let want = znode.size.saturating_sub(offset).min(len) as usize;
    if want == 0 {
        // Clipped away by a later truncate, which is logged after it: keep the size change
        // a write past the end made.
        return Ok(vec![record(offset, Vec::new())]);
    }
    let mut data = os.read(ctx, ObjectId(object), offset, want)?;
    data.resize(want, 0);
    Ok(data
        .chunks(WRITE_CHUNK_MAX_BYTES)
        .enumerate()
        .map(|(i, chunk)| record(offset + (i * WRITE_CHUNK_MAX_BYTES) as u64, chunk.to_vec()))
        .collect())
}
