//! Reading an OpenZFS object set: objects, their data and their ZAPs, through the block
//! reader of a real pool (OpenZFS `dmu_objset_open_impl`, `dnode_hold`, `dmu_read`,
//! `zap_lookup`/`zap_cursor` — read-only, without the dbuf cache's write side).
//!
//! Theory. `PoolIo` is what every block read of an imported OpenZFS pool goes through: it
//! decodes the raw block pointer in the order of the block that holds it
//! (`zio::openzfs::blkptr`), reads and verifies a copy, rebuilding raidz columns when a
//! copy fails (`zio::openzfs::read`), and decompresses it. `Objset` holds one decoded
//! `objset_phys_t` and answers object-level questions on top of the `dnode` and `zap`
//! codecs. Nothing here writes; nothing panics on bytes from the devices: every failure
//! is an `OzfsError` that says which object or block it was.
//!
//! Caching: decoded dnodes are kept per object set (bounded); block data is re-read (the
//! ARC integration comes with the engine's import of these pools).

use super::dnode::{BlockReader, DmuReadError, DnodePhys, RawBlkptr};
use super::objset::ObjsetPhys;
use crate::byteorder::ByteOrder;
use crate::zap::openzfs::{Zap, ZapEntry, ZapKey, ZapReadError};
use crate::zio::openzfs::blkptr::BlockPointer;
use crate::zio::openzfs::read::{read_block, PoolDevices, ReadError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use zetta_zcommon::checksum::openzfs::ChecksumSalt;

/// Dnodes kept decoded per object set.
const DNODE_CACHE_MAX: usize = 8192;

/// Why something of an OpenZFS pool could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OzfsError {
    /// A block could not be read or verified.
    Read(ReadError),
    /// Bytes that contradict the format, with where they were.
    Corrupt(String),
    /// An object that is not there (free dnode slot, missing ZAP entry where one must be).
    Missing(String),
}

impl fmt::Display for OzfsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OzfsError::Read(e) => write!(f, "{e}"),
            OzfsError::Corrupt(why) => write!(f, "corrupt metadata: {why}"),
            OzfsError::Missing(what) => write!(f, "{what} is missing"),
        }
    }
}

impl std::error::Error for OzfsError {}

impl From<DmuReadError<ReadError>> for OzfsError {
    fn from(e: DmuReadError<ReadError>) -> Self {
        match e {
            DmuReadError::Read(e) => OzfsError::Read(e),
            DmuReadError::Corrupt(c) => OzfsError::Corrupt(c.to_string()),
        }
    }
}

impl From<ZapReadError<ReadError>> for OzfsError {
    fn from(e: ZapReadError<ReadError>) -> Self {
        match e {
            ZapReadError::Read(e) => OzfsError::Read(e),
            ZapReadError::Corrupt(c) => OzfsError::Corrupt(c.to_string()),
        }
    }
}

/// The devices of an imported OpenZFS pool and its checksum salt: the block reader.
pub struct PoolIo {
    pub devices: PoolDevices,
    pub salt: ChecksumSalt,
}

impl PoolIo {
    /// A block's logical bytes from its raw pointer, read in `order`.
    pub fn read(&self, raw: &RawBlkptr, order: ByteOrder) -> Result<Vec<u8>, ReadError> {
        let bp = BlockPointer::decode(order, raw, 0)
            .map_err(|e| ReadError::Blkptr(crate::zio::openzfs::blkptr::BlkptrError::from(e)))?;
        read_block(&self.devices, &bp, &self.salt)
    }
}

impl BlockReader for &PoolIo {
    type Error = ReadError;
    fn read_block(&mut self, bp: &RawBlkptr, order: ByteOrder) -> Result<Vec<u8>, ReadError> {
        self.read(bp, order)
    }
}

/// A ZAP entry's name as text (ZAP names are NUL-free bytes; not UTF-8 is shown lossily):
/// its key as `ZapKey` displays it.
pub fn entry_name(entry: &ZapEntry) -> String {
    entry.key.to_string()
}

/// One OpenZFS object set, opened read-only.
pub struct Objset {
    io: Arc<PoolIo>,
    pub phys: ObjsetPhys,
    dnodes: Mutex<HashMap<u64, DnodePhys>>,
}

impl Objset {
    /// Opens the object set whose root block pointer is `bp` (raw, in `order`).
    pub fn open(io: Arc<PoolIo>, bp: &RawBlkptr, order: ByteOrder) -> Result<Objset, OzfsError> {
        let data = io.read(bp, order).map_err(OzfsError::Read)?;
        let child_order = super::dnode::raw_bp_byte_order(bp, order);
        let phys = ObjsetPhys::decode(&data, child_order)
            .map_err(|e| OzfsError::Corrupt(format!("object set block: {e}")))?;
        Ok(Objset {
            io,
            phys,
            dnodes: Mutex::new(HashMap::new()),
        })
    }

    pub fn io(&self) -> &Arc<PoolIo> {
        &self.io
    }

    /// Object `object`'s dnode; a free slot is `Missing`.
    pub fn dnode(&self, object: u64) -> Result<DnodePhys, OzfsError> {
        if let Some(dn) = self.dnodes.lock().get(&object) {
            return Ok(dn.clone());
        }
        let mut reader = &*self.io;
        let dn = self
            .phys
            .dnode(object, &mut reader)?
            .filter(|dn| !dn.is_free())
            .ok_or_else(|| OzfsError::Missing(format!("object {object}")))?;
        let mut cache = self.dnodes.lock();
        if cache.len() >= DNODE_CACHE_MAX {
            cache.clear();
        }
        cache.insert(object, dn.clone());
        Ok(dn)
    }

    /// `len` bytes of an object's data from `offset` (holes read as zeros).
    pub fn read(&self, dnode: &DnodePhys, offset: u64, len: usize) -> Result<Vec<u8>, OzfsError> {
        let mut reader = &*self.io;
        Ok(dnode.read(offset, len, &mut reader)?)
    }

    /// `count` u64 words of an object's data from word `first`, each block decoded in the
    /// byte order its own block pointer records (a pool moved between machines holds
    /// blocks of both orders: OpenZFS byteswaps per block). Holes read as zeros.
    pub fn read_u64s(
        &self,
        dnode: &DnodePhys,
        first: u64,
        count: usize,
    ) -> Result<Vec<u64>, OzfsError> {
        let bs = dnode.data_block_size() as u64;
        let mut out = Vec::with_capacity(count);
        if bs < 8 {
            out.resize(count, 0);
            return Ok(out);
        }
        let per_block = bs / 8;
        let mut reader = &*self.io;
        let mut word = first;
        while out.len() < count {
            let blkid = word / per_block;
            let block = dnode
                .read_block(blkid, &mut reader)
                .map_err(OzfsError::from)?;
            let in_block = (word % per_block) as usize;
            let n = ((per_block as usize) - in_block).min(count - out.len());
            for i in 0..n {
                out.push(match &block {
                    Some(b) => b
                        .order
                        .u64_at(&b.data, (in_block + i) * 8)
                        .map_err(|e| OzfsError::Corrupt(format!("object array: {e}")))?,
                    None => 0,
                });
            }
            word += n as u64;
        }
        Ok(out)
    }

    /// A block's logical bytes through this pool's reader (a spill block, say).
    pub fn read_raw(&self, bp: &RawBlkptr, order: ByteOrder) -> Result<Vec<u8>, OzfsError> {
        self.io.read(bp, order).map_err(OzfsError::Read)
    }

    /// Every entry of the ZAP object `object`.
    pub fn zap_list(&self, object: u64) -> Result<Vec<ZapEntry>, OzfsError> {
        let dn = self.dnode(object)?;
        let mut reader = &*self.io;
        let zap = Zap::open(&dn, &mut reader)?;
        Ok(zap.list(&dn, &mut reader)?)
    }

    /// The entry `name` of the ZAP object `object`, if there is one.
    pub fn zap_lookup(&self, object: u64, name: &str) -> Result<Option<ZapEntry>, OzfsError> {
        self.zap_lookup_key(object, &ZapKey::name(name))
    }

    /// `zap_lookup` by a key of any bytes (file names need not be UTF-8).
    pub fn zap_lookup_key(&self, object: u64, key: &ZapKey) -> Result<Option<ZapEntry>, OzfsError> {
        let dn = self.dnode(object)?;
        let mut reader = &*self.io;
        let zap = Zap::open(&dn, &mut reader)?;
        Ok(zap.lookup(&dn, &mut reader, key)?)
    }

    /// The single integer stored under `name` in ZAP `object`, if any.
    pub fn zap_u64(&self, object: u64, name: &str) -> Result<Option<u64>, OzfsError> {
        match self.zap_lookup(object, name)? {
            None => Ok(None),
            Some(entry) if entry.values.len() == 1 && entry.int_len == 8 => {
                Ok(Some(entry.values[0]))
            }
            Some(entry) => Err(OzfsError::Corrupt(format!(
                "ZAP object {object} entry '{name}' holds {} integers of {} bytes, not one u64",
                entry.values.len(),
                entry.int_len
            ))),
        }
    }
}
