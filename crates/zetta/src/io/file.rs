//! File and block-device vdevs: positional reads and writes on an open descriptor,
//! `fdatasync` on flush (OpenZFS `vdev_file.c`). The size of a block device is found by
//! seeking to its end; a regular file's by its metadata. Sizes are rounded down to 256 KiB so
//! that the trailing labels sit at fixed offsets.

use super::{check_range, BlockDevice, IoError};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;

pub struct FileDevice {
    file: File,
    path: String,
    size_bytes: u64,
}

impl FileDevice {
    pub fn open(path: &str) -> Result<FileDevice, IoError> {
        Self::open_mode(path, true)
    }

    /// Opens for a pool import: read-write with an exclusive advisory lock, so a second
    /// process importing the same pool is refused instead of corrupting it.
    pub fn open_exclusive(path: &str) -> Result<FileDevice, IoError> {
        let device = Self::open_mode(path, true)?;
        device.file.try_lock().map_err(|e| IoError::Open {
            path: path.to_string(),
            reason: match e {
                std::fs::TryLockError::WouldBlock => {
                    "device is in use by another process".to_string()
                }
                std::fs::TryLockError::Error(e) => e.to_string(),
            },
        })?;
        Ok(device)
    }

    pub fn open_read_only(path: &str) -> Result<FileDevice, IoError> {
        Self::open_mode(path, false)
    }

    fn open_mode(path: &str, writable: bool) -> Result<FileDevice, IoError> {
        let open_error = |e: std::io::Error| IoError::Open {
            path: path.to_string(),
            reason: e.to_string(),
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(open_error)?;
        let size_bytes = file.seek(SeekFrom::End(0)).map_err(open_error)?;
        Ok(FileDevice {
            file,
            path: path.to_string(),
            size_bytes: size_bytes & !((256 << 10) - 1),
        })
    }

    fn failed(&self, e: std::io::Error) -> IoError {
        IoError::Failed {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }
}

impl BlockDevice for FileDevice {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        check_range(offset, buffer.len(), self.size_bytes)?;
        self.file
            .read_exact_at(buffer, offset)
            .map_err(|e| self.failed(e))
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        check_range(offset, data.len(), self.size_bytes)?;
        self.file
            .write_all_at(data, offset)
            .map_err(|e| self.failed(e))
    }

    fn flush(&self) -> Result<(), IoError> {
        self.file.sync_data().map_err(|e| self.failed(e))
    }

    fn path(&self) -> String {
        self.path.clone()
    }
}
