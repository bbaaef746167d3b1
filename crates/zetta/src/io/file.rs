//! File and block-device vdevs: positional reads and writes on an open descriptor,
//! `fdatasync` on flush (OpenZFS `vdev_file.c`). The size of a block device is found by
//! seeking to its end; a regular file's by its metadata. Sizes are rounded down to 256 KiB so
//! that the trailing labels sit at fixed offsets.

use super::{check_range, BlockDevice, IoError};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;

/// Most buffers one `pwritev` takes (Linux UIO_MAXIOV).
const IOV_MAX: usize = 1024;

pub struct FileDevice {
    file: File,
    path: String,
    size_bytes: u64,
    /// A block device (discards are `BLKDISCARD`), not a regular file (hole punching).
    block_device: bool,
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
        let block_device = {
            use std::os::unix::fs::FileTypeExt;
            file.metadata()
                .map(|m| m.file_type().is_block_device())
                .unwrap_or(false)
        };
        Ok(FileDevice {
            file,
            path: path.to_string(),
            size_bytes: size_bytes & !((256 << 10) - 1),
            block_device,
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

    fn write_vectored_at(&self, offset: u64, parts: &[&[u8]]) -> Result<(), IoError> {
        use std::os::fd::AsRawFd;
        let total: usize = parts.iter().map(|p| p.len()).sum();
        check_range(offset, total, self.size_bytes)?;
        // pwritev may write less than asked: continue from where it stopped.
        let mut written = 0usize;
        while written < total {
            let mut skip = written;
            let mut iovecs = Vec::with_capacity(parts.len().min(IOV_MAX));
            for part in parts {
                if skip >= part.len() {
                    skip -= part.len();
                    continue;
                }
                let rest = &part[skip..];
                skip = 0;
                iovecs.push(libc::iovec {
                    iov_base: rest.as_ptr() as *mut libc::c_void,
                    iov_len: rest.len(),
                });
                if iovecs.len() == IOV_MAX {
                    break;
                }
            }
            // SAFETY: every iovec points into a live borrowed slice of `parts` for the whole
            // call, and the descriptor is owned by `self.file`.
            let result = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    iovecs.as_ptr(),
                    iovecs.len() as libc::c_int,
                    (offset + written as u64) as libc::off_t,
                )
            };
            if result <= 0 {
                return Err(self.failed(std::io::Error::last_os_error()));
            }
            written += result as usize;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), IoError> {
        self.file.sync_data().map_err(|e| self.failed(e))
    }

    fn path(&self) -> String {
        self.path.clone()
    }

    fn supports_discard(&self) -> bool {
        if !self.block_device {
            // Hole punching: every Linux file system a pool file lives on in practice
            // (ext4, xfs, btrfs, tmpfs); one that refuses fails the discard itself.
            return true;
        }
        // The block layer's own answer: a queue that takes no discards says 0.
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = self.file.metadata() else {
            return false;
        };
        let rdev = meta.rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        std::fs::read_to_string(format!(
            "/sys/dev/block/{major}:{minor}/queue/discard_max_bytes"
        ))
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .is_some_and(|max| max > 0)
    }

    fn discard(&self, offset: u64, len: u64) -> Result<(), IoError> {
        use std::os::fd::AsRawFd;
        check_range(offset, len as usize, self.size_bytes)?;
        if len == 0 {
            return Ok(());
        }
        let fd = self.file.as_raw_fd();
        let result = if self.block_device {
            // BLKDISCARD = _IO(0x12, 119): a range of two u64 words.
            const BLKDISCARD: libc::c_ulong = 0x1277;
            let range: [u64; 2] = [offset, len];
            // SAFETY: the ioctl reads two u64 words from a live local array; the
            // descriptor is owned by `self.file`.
            unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }
        } else {
            // SAFETY: plain syscall on a descriptor owned by `self.file`.
            unsafe {
                libc::fallocate(
                    fd,
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    offset as libc::off_t,
                    len as libc::off_t,
                )
            }
        };
        if result != 0 {
            return Err(self.failed(std::io::Error::last_os_error()));
        }
        Ok(())
    }
}
