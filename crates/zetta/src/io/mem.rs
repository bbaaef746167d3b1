//! An in-memory device for fast tests: every write is immediately "durable" (see `SimDevice`
//! for the non-durable one).

use super::{check_range, BlockDevice, IoError};
use parking_lot::RwLock;

pub struct MemDevice {
    name: String,
    data: RwLock<Vec<u8>>,
}

impl MemDevice {
    pub fn new(name: &str, size_bytes: u64) -> MemDevice {
        MemDevice {
            name: name.to_string(),
            data: RwLock::new(vec![0u8; size_bytes as usize]),
        }
    }

    /// A copy of the whole device (tests save and restore images).
    pub fn snapshot(&self) -> Vec<u8> {
        self.data.read().clone()
    }

    pub fn restore(&self, image: &[u8]) {
        self.data.write().copy_from_slice(image);
    }
}

impl BlockDevice for MemDevice {
    fn size_bytes(&self) -> u64 {
        self.data.read().len() as u64
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let data = self.data.read();
        check_range(offset, buffer.len(), data.len() as u64)?;
        let start = offset as usize;
        buffer.copy_from_slice(&data[start..start + buffer.len()]);
        Ok(())
    }

    fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<(), IoError> {
        let mut data = self.data.write();
        check_range(offset, bytes.len(), data.len() as u64)?;
        let start = offset as usize;
        data[start..start + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }

    fn path(&self) -> String {
        self.name.clone()
    }
}
