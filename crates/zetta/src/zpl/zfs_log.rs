//! The ZPL's log records (OpenZFS `zfs_log.c` and the `lr_*_t` of `zil.h`): one per change a
//! mount made, enough to make that change again on the last committed state. `log` hands
//! each to the object set's intent log (`zil`, which keeps them opaque); a write is logged
//! by position and its bytes copied at commit (`get_data`, OpenZFS `zfs_get_data`).
//!
//! Every record is a 16-byte header and a body, padded to 8 bytes:
//!
//! ```text
//! | txtype u16 | reserved u16 | reclen u32 (header + body + pad) | txg u64 | body ... |
//! ```
//!
//! Bodies are little-endian fields in the order of the `Lr` variant below; a time is
//! `sec i64 | nsec u32 | pad u32`; a byte string is `len u32 | bytes` (no padding inside a
//! body); a znode is its 160-byte log record (`zpl::znode::ZnodePhys::encode`; on disk
//! it is an SA bonus). Types (never renumber):
//! 1 create, 2 link, 3 remove, 4 rename, 5 setattr, 6 write, 7 punch, 8 setxattr,
//! 9 removexattr, 10 reclaim. A decoder refuses a record whose lengths overrun it.

use super::vnops::SetAttr;
use super::znode::{Timespec, ZnodePhys};
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

const SETATTR_MODE: u32 = 1;
const SETATTR_UID: u32 = 2;
const SETATTR_GID: u32 = 4;
const SETATTR_SIZE: u32 = 8;
const SETATTR_ATIME: u32 = 16;
const SETATTR_MTIME: u32 = 32;
const SETATTR_CTIME: u32 = 64;
const SETATTR_CRTIME: u32 = 128;

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn time(&mut self, t: Timespec) {
        self.0.extend_from_slice(&t.sec.to_le_bytes());
        self.u32(t.nsec);
        self.u32(0);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
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
    fn u8(&mut self) -> Result<u8, ZilError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, ZilError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, ZilError> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(w))
    }
    fn time(&mut self) -> Result<Timespec, ZilError> {
        let sec = self.u64()? as i64;
        let nsec = self.u32()?;
        self.u32()?;
        if nsec >= 1_000_000_000 {
            return Err(ZilError::Corrupt(format!("log record time with {nsec} ns")));
        }
        Ok(Timespec { sec, nsec })
    }
    fn bytes(&mut self) -> Result<Vec<u8>, ZilError> {
        let len = self.u32()? as usize;
        Ok(self.take(len)?.to_vec())
    }
}

impl LogRecord {
    /// The stored form (header, body, padding to 8 bytes).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(vec![0u8; RECORD_HEADER_SIZE_BYTES]);
        let txtype: u16 = match &self.lr {
            Lr::Create {
                dir,
                object,
                name,
                znode,
                target,
            } => {
                w.u64(*dir);
                w.u64(*object);
                w.0.extend_from_slice(&znode.encode());
                w.bytes(name);
                w.bytes(target);
                1
            }
            Lr::Link {
                object,
                dir,
                name,
                now,
            } => {
                w.u64(*object);
                w.u64(*dir);
                w.time(*now);
                w.bytes(name);
                2
            }
            Lr::Remove {
                dir,
                name,
                is_dir,
                now,
            } => {
                w.u64(*dir);
                w.time(*now);
                w.u8(u8::from(*is_dir));
                w.bytes(name);
                3
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
                w.time(*now);
                w.u8(u8::from(*noreplace) | u8::from(*exchange) << 1);
                w.bytes(sname);
                w.bytes(dname);
                4
            }
            Lr::Setattr {
                object,
                change,
                now,
            } => {
                w.u64(*object);
                w.time(*now);
                let mut mask = 0;
                let bit = |present: bool, b: u32| if present { b } else { 0 };
                mask |= bit(change.mode.is_some(), SETATTR_MODE);
                mask |= bit(change.uid.is_some(), SETATTR_UID);
                mask |= bit(change.gid.is_some(), SETATTR_GID);
                mask |= bit(change.size.is_some(), SETATTR_SIZE);
                mask |= bit(change.atime.is_some(), SETATTR_ATIME);
                mask |= bit(change.mtime.is_some(), SETATTR_MTIME);
                mask |= bit(change.ctime.is_some(), SETATTR_CTIME);
                mask |= bit(change.crtime.is_some(), SETATTR_CRTIME);
                w.u32(mask);
                w.u32(change.mode.unwrap_or(0));
                w.u32(change.uid.unwrap_or(0));
                w.u32(change.gid.unwrap_or(0));
                w.u64(change.size.unwrap_or(0));
                for t in [change.atime, change.mtime, change.ctime, change.crtime] {
                    w.time(t.unwrap_or_default());
                }
                5
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
                w.time(*now);
                w.bytes(data);
                6
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
                w.time(*now);
                7
            }
            Lr::SetXattr {
                object,
                name,
                value,
                flags,
                now,
            } => {
                w.u64(*object);
                w.time(*now);
                w.u32(*flags);
                w.bytes(name);
                w.bytes(value);
                8
            }
            Lr::RemoveXattr { object, name, now } => {
                w.u64(*object);
                w.time(*now);
                w.bytes(name);
                9
            }
            Lr::Reclaim { object } => {
                w.u64(*object);
                10
            }
        };
        while !w.0.len().is_multiple_of(8) {
            w.0.push(0);
        }
        let reclen = w.0.len() as u32;
        w.0[0..2].copy_from_slice(&txtype.to_le_bytes());
        w.0[4..8].copy_from_slice(&reclen.to_le_bytes());
        w.0[8..16].copy_from_slice(&self.txg.0.to_le_bytes());
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
            1 => {
                let dir = r.u64()?;
                let object = r.u64()?;
                let znode = ZnodePhys::decode(r.take(ZNODE_SIZE_BYTES)?)
                    .map_err(|e| ZilError::Corrupt(e.to_string()))?;
                Lr::Create {
                    dir,
                    object,
                    znode,
                    name: r.bytes()?,
                    target: r.bytes()?,
                }
            }
            2 => Lr::Link {
                object: r.u64()?,
                dir: r.u64()?,
                now: r.time()?,
                name: r.bytes()?,
            },
            3 => Lr::Remove {
                dir: r.u64()?,
                now: r.time()?,
                is_dir: r.u8()? != 0,
                name: r.bytes()?,
            },
            4 => {
                let sdir = r.u64()?;
                let ddir = r.u64()?;
                let now = r.time()?;
                let flags = r.u8()?;
                Lr::Rename {
                    sdir,
                    ddir,
                    now,
                    noreplace: flags & 1 != 0,
                    exchange: flags & 2 != 0,
                    sname: r.bytes()?,
                    dname: r.bytes()?,
                }
            }
            5 => {
                let object = r.u64()?;
                let now = r.time()?;
                let mask = r.u32()?;
                let (mode, uid, gid, size) = (r.u32()?, r.u32()?, r.u32()?, r.u64()?);
                let mut times = [Timespec::default(); 4];
                for t in &mut times {
                    *t = r.time()?;
                }
                let pick = |b: u32, t: Timespec| (mask & b != 0).then_some(t);
                Lr::Setattr {
                    object,
                    now,
                    change: SetAttr {
                        mode: (mask & SETATTR_MODE != 0).then_some(mode),
                        uid: (mask & SETATTR_UID != 0).then_some(uid),
                        gid: (mask & SETATTR_GID != 0).then_some(gid),
                        size: (mask & SETATTR_SIZE != 0).then_some(size),
                        atime: pick(SETATTR_ATIME, times[0]),
                        mtime: pick(SETATTR_MTIME, times[1]),
                        ctime: pick(SETATTR_CTIME, times[2]),
                        crtime: pick(SETATTR_CRTIME, times[3]),
                    },
                }
            }
            6 => {
                let object = r.u64()?;
                let offset = r.u64()?;
                let now = r.time()?;
                let data = r.bytes()?;
                Lr::Write {
                    object,
                    offset,
                    len: data.len() as u64,
                    data,
                    now,
                }
            }
            7 => Lr::Punch {
                object: r.u64()?,
                offset: r.u64()?,
                len: r.u64()?,
                now: r.time()?,
            },
            8 => Lr::SetXattr {
                object: r.u64()?,
                now: r.time()?,
                flags: r.u32()?,
                name: r.bytes()?,
                value: r.bytes()?,
            },
            9 => Lr::RemoveXattr {
                object: r.u64()?,
                now: r.time()?,
                name: r.bytes()?,
            },
            10 => Lr::Reclaim { object: r.u64()? },
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
