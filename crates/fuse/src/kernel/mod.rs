//! Zetta's own FUSE transport (issue 16): the kernel's FUSE protocol spoken directly over
//! `/dev/fuse`, with one pool of worker threads serving every mount of the daemon.
//!
//! Why not fuser: a fuser session owns its request threads (4 per mount here), so 500
//! mounted datasets were 2,500 threads; it cannot hand a single request to an outside
//! loop, nor speak FUSE over io_uring, nor pass `FATTR_KILL_SUIDGID`. The protocol itself
//! is a fact of the kernel (`include/uapi/linux/fuse.h`), implemented here from it:
//!
//! - `fuse_abi`: the wire layouts, opcodes and flags, decoded without trusting a length;
//! - `fuse_dev`: the device — open, `mount(2)`, read one request, write one reply, unmount;
//! - `fuse_lowlevel`: a request decoded into one `Filesystem` method call and its `Reply*`,
//!   types shaped like fuser's so that a filesystem moves between transports by imports;
//! - `fuse_loop`: the daemon-wide pool — one epoll set over all mounts' descriptors, a
//!   fixed set of workers (`pool_threads`: twice the cores, at least 4), INIT at mount
//!   time (the mount is ready when `Pool::mount` returns), ENODEV ending a session;
//! - `auto_unmount`: one helper process that detaches a killed daemon's mounts;
//! - `fuser_compat`: the same `Filesystem` served by a fuser session.
//!
//! State (session 20): every handler (`ops`, `ctldir`, `openzfs::ops`) is a
//! `kernel::Filesystem`; `ZETTA_FUSE_TRANSPORT` chooses the transport (`crate::transport`).
//! Not yet here: FUSE over io_uring, KILLPRIV_V2,
//! `FUSE_DEV_IOC_CLONE` (one descriptor per mount serves all workers: a read takes one
//! request under the kernel's queue lock), interrupts (handlers run to their end, as with
//! fuser), POSIX locks.

pub mod auto_unmount;
pub mod fuse_abi;
pub mod fuse_dev;
pub mod fuse_loop;
pub mod fuse_lowlevel;
pub mod fuser_compat;
#[cfg(test)]
mod tests;

pub use fuse_loop::{pool_threads, MountHandle, Pool};
pub use fuse_lowlevel::*;
