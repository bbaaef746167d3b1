//! The `BlockDevice` seam: the only way the engine touches storage (OpenZFS `vdev_file.c`
//! and `vdev_disk.c`).
//!
//! Three implementations: `FileDevice` (a regular file or a block device, positional I/O,
//! `fdatasync` on flush), `MemDevice` (a vector, for fast tests) and `SimDevice` (the
//! simulator's non-durable, fault-injecting device). Invariants every implementation keeps:
//! a read returns exactly the bytes of the last completed write covering them; a write is
//! durable only after a later `flush` returns; offsets past the end are an error, not a
//! short transfer. A `SimDevice` may belong to a `SimWorld` (`sim_world`): the simulator then
//! schedules what would run in parallel on it (see `sim`).

mod file;
mod mem;
pub mod sim;

pub use file::FileDevice;
pub use mem::MemDevice;
pub use sim::{PowerCutPolicy, SimDevice, SimWorld};

use std::fmt;
use std::sync::Arc;

#[derive(Debug)]
pub enum IoError {
    /// The device could not be opened (missing path, permission).
    Open { path: String, reason: String },
    /// A transfer would cross the end of the device.
    OutOfRange { offset: u64, len: u64, size: u64 },
    /// The operating system (or the simulator) failed the request.
    Failed { path: String, reason: String },
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Open { path, reason } => write!(f, "cannot open '{path}': {reason}"),
            IoError::OutOfRange { offset, len, size } => write!(
                f,
                "I/O of {len} bytes at offset {offset} is past the device end ({size} bytes)"
            ),
            IoError::Failed { path, reason } => write!(f, "I/O error on '{path}': {reason}"),
        }
    }
}

impl std::error::Error for IoError {}

pub trait BlockDevice: Send + Sync {
    /// Usable size in bytes.
    fn size_bytes(&self) -> u64;
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), IoError>;
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError>;
    /// Writes several buffers back to back starting at `offset` (one large sequential
    /// write; devices that can, do it without copying).
    fn write_vectored_at(&self, offset: u64, parts: &[&[u8]]) -> Result<(), IoError> {
        let joined: Vec<u8> = parts.concat();
        self.write_at(offset, &joined)
    }
    /// Makes every completed write durable.
    fn flush(&self) -> Result<(), IoError>;
    /// The path (or a test name) shown in `zpool status`.
    fn path(&self) -> String;
    /// The simulated world this device belongs to (`sim::SimWorld`): its I/O is then
    /// scheduled by the simulator's seed instead of by threads. Real devices: none.
    fn sim_world(&self) -> Option<&Arc<sim::SimWorld>> {
        None
    }
    /// Whether `discard` can work here (OpenZFS `vdev_has_trim`): a regular file punches
    /// holes, a block device whose queue takes discards issues `BLKDISCARD`.
    fn supports_discard(&self) -> bool {
        false
    }
    /// Tells the device that `[offset, offset + len)` holds nothing worth keeping (TRIM):
    /// later reads of it may return anything, zeros on a file. Devices that cannot: an error.
    fn discard(&self, offset: u64, len: u64) -> Result<(), IoError> {
        let _ = (offset, len);
        Err(IoError::Failed {
            path: self.path(),
            reason: "trim operations are not supported by this device".to_string(),
        })
    }
}

pub type DeviceRef = Arc<dyn BlockDevice>;

pub(crate) fn check_range(offset: u64, len: usize, size: u64) -> Result<(), IoError> {
    let len = len as u64;
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(IoError::OutOfRange { offset, len, size }),
    }
}
