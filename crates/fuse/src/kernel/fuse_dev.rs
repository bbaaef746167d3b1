//! The `/dev/fuse` connection (the kernel's `fs/fuse/dev.c` seen from userspace; libfuse's
//! `mount.c` for the mount): open the device, mount it with `mount(2)` naming its
//! descriptor, read requests and write replies, unmount.
//!
//! The daemon runs as root and mounts directly, without `fusermount3`: the mount data is
//! `fd=N,rootmode=40000,user_id=0,group_id=0[,allow_other],default_permissions`, the
//! type `fuse.zetta` and the source the dataset's name (`/proc/mounts` then reads as with
//! fuser's mounts). A read returns one whole request or fails: `EAGAIN` (nothing queued:
//! the descriptor is non-blocking, the session loop polls it), `ENOENT` (the request was
//! interrupted and withdrawn), `EINTR`, or `ENODEV` once the filesystem is unmounted and
//! the connection is gone — the end of the session. A write carries one whole reply.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// An open `/dev/fuse` descriptor (non-blocking, close-on-exec).
#[derive(Debug)]
pub struct FuseDev {
    fd: OwnedFd,
}

/// What a read found.
#[derive(Debug)]
pub enum Read {
    /// A request of this many bytes is at the start of the buffer.
    Request(usize),
    /// Nothing to do now (EAGAIN, EINTR, ENOENT: an interrupted request withdrawn).
    Nothing,
    /// The connection is gone (ENODEV): the filesystem was unmounted or aborted.
    Gone,
}

impl FuseDev {
    pub fn open() -> std::io::Result<FuseDev> {
        // SAFETY: a valid NUL-terminated path; the descriptor is owned below.
        let fd = unsafe {
            libc::open(
                c"/dev/fuse".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(FuseDev {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Mounts this connection at `mountpoint`: `flags` are `MS_*` (ro, nosuid, nodev,
    /// noexec, noatime), `fsname` the source shown in /proc/mounts.
    pub fn mount(
        &self,
        mountpoint: &Path,
        fsname: &str,
        flags: libc::c_ulong,
        allow_other: bool,
    ) -> std::io::Result<()> {
        let target = CString::new(mountpoint.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        let source = CString::new(if fsname.is_empty() { "zetta" } else { fsname })
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: getuid/getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut data = format!(
            "fd={},rootmode=40000,user_id={uid},group_id={gid},default_permissions",
            self.raw()
        );
        if allow_other {
            data.push_str(",allow_other");
        }
        let data = CString::new(data).map_err(|_| std::io::Error::other("mount data"))?;
        // SAFETY: valid NUL-terminated strings, alive for the call.
        let rc = unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                c"fuse.zetta".as_ptr(),
                flags,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads one request into `buf` (at least `FUSE_MIN_READ_BUFFER` and the largest
    /// write plus its header).
    pub fn read(&self, buf: &mut [u8]) -> std::io::Result<Read> {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(self.raw(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Read::Request(n as usize));
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR | libc::ENOENT) => Ok(Read::Nothing),
            Some(libc::ENODEV) => Ok(Read::Gone),
            _ => Err(e),
        }
    }

    /// Writes one reply or notification. ENOENT (the request was interrupted and is gone)
    /// is not an error of the server's; it is returned for the caller to ignore.
    pub fn write(&self, msg: &[u8]) -> std::io::Result<()> {
        // SAFETY: `msg` is valid for reads of its length.
        let n = unsafe { libc::write(self.raw(), msg.as_ptr().cast(), msg.len()) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n as usize != msg.len() {
            return Err(std::io::Error::other("short write to /dev/fuse"));
        }
        Ok(())
    }
}

/// Unmounts `mountpoint`; `lazy` detaches it even when busy (MNT_DETACH). EINVAL (not a
/// mount point any more) is success.
pub fn unmount(mountpoint: &Path, lazy: bool) -> std::io::Result<()> {
    let target = CString::new(mountpoint.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::umount2(target.as_ptr(), flags) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(e);
        }
    }
    Ok(())
}
