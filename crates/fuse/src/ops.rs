//! The FUSE request handlers: each maps one kernel request onto one ZPL operation (see
//! the crate's theory paragraph) and its reply.
//!
//! Locking. Read requests (lookup, getattr, open, opendir, read, readdir, readlink,
//! getxattr, listxattr; statfs reads pool figures) run under the pool's shared lock
//! (`run_read`, `Spa::with_zpl_object_shared`), so readers proceed together, each taking
//! the object set's cache locks only briefly (see `zetta::dmu::objset`); so does all of
//! `.zfs` (`ctldir`: snapshot object sets held by the mount, opened through `&Spa`), and
//! so does the question whether an object the kernel forgets was unlinked. The exclusive
//! lock is taken only where the pool changes:
//! - every request of the write policy (`policy`: create, mknod, mkdir, symlink, link,
//!   unlink, rmdir, rename, write, setattr, fallocate, set/removexattr, fsync, fsyncdir),
//!   and the batches of a long free (`free_long_range`);
//! - an access time that is due (atime=on, or relatime's rule, decided under the shared
//!   lock: the read then releases it and takes the exclusive one for the update alone);
//! - the reclaim of an unlinked object at its last reference (`release_refs`, after the
//!   shared lock found it unlinked; looked at again under the exclusive one);
//! - the first request to a dataset not opened yet in the pool (`run_read` opens it once),
//!   and `ZplFs::open` at mount time (it may lay out the ZPL and drains the delete queue).
//!
//! The order is: pool lock (shared or exclusive) first; `refs` (the kernel's lookup and
//! open counts), the object set's cache locks and `ctldir`'s snapshot cache are leaves
//! under it, never held together, nor while the pool lock is taken (`release_refs` drops
//! `refs` before it reclaims). Lookup counting (`looked_up`) runs under either mode of the
//! pool lock; unlink, rmdir, rename and reclaim run under the exclusive one, so a lookup
//! and the free of its object never interleave.

use super::ZplFs;
use crate::ctldir::{CTL_ROOT, CTL_SNAPDIR};
use crate::kernel::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zetta::dmu::{IoCtx, ObjectSet};
use zetta::zpl::vnops::SetAttr;
use zetta::zpl::zfs_vnops::{Fallocate, FreeRange, ZfsMount};
use zetta::zpl::{Attr, Creds, FileKind, Timespec, Zfsvfs, ZplError};

/// How long the kernel may trust a dataset object's attributes: an hour, as OpenZFS's
/// kernel module serves them from its inodes. Every change Zetta makes behind the kernel is
/// invalidated: `st_blocks` of a written file or a changed directory when the txg of the
/// change commits (`Written`, `Mounted::invalidate_committed`); rollback and receive
/// remount. `st_blksize` is never invalidated but never changes as a file grows
/// (`zetta::zpl::vnops::reported_block_size`): a `statx` asking for no field (`stat -c
/// %o`) is answered from the kernel's inode without a GETATTR whatever was invalidated
/// (fs/fuse/dir.c `fuse_update_get_attr`: no field asked, no refresh), so an answer that
/// changed as the file was written (4096 at its CREATE, 1M once it outgrew one block)
/// stayed 4096 under an hour's TTL (session 19; at 1 s the CREATE's entry ran out and
/// the next path walk's LOOKUP refreshed it).
const ATTR_TTL: Duration = Duration::from_secs(3600);
/// How long it may trust `.zfs` nodes' attributes: snapshots come and go under them by
/// commands, not through this mount.
const CTL_TTL: Duration = Duration::from_secs(1);
/// How long a change refused for space waits for the FORGET of a file unlinked just before
/// (`ZplFs::wait_for_orphans`): the kernel sends it right after the unlink; a loaded
/// machine may take a while to serve it.
const ORPHAN_FORGET_WAIT: Duration = Duration::from_secs(2);
/// How long it may trust names: only this mount changes them (rollback and receive
/// remount), so a looked-up name stays valid; `find` and `stat` storms then skip lookups.
const ENTRY_TTL: Duration = Duration::from_secs(3600);
const ROOT_INO: u64 = 1;
/// Entries a `readdirplus` reads per hold of the pool lock (a reply holds about 25 of
/// them in the kernel's 4 KiB buffer).
const READDIRPLUS_BATCH: usize = 32;
/// The offset after `.zfs` in a root listing (above every directory cursor).
const CTL_LISTED_OFFSET: i64 = i64::MAX - 1;
/// Largest write the kernel sends in one request (and with it `max_pages`: 256
/// pages of 4 KiB, the kernel's default `fuse_max_pages_limit`).
const MAX_WRITE_BYTES: u32 = 1 << 20;
/// Readahead asked of the kernel at `init` (it grants at most its bdi's current window,
/// 128 KiB by default; `spawn_mount` widens the window after the mount).
const MAX_READAHEAD_BYTES: u32 = 1 << 20;
/// Background requests (readahead, writeback of dirty pages) the kernel keeps in flight:
/// enough to fill every worker thread with 1 MiB requests several times over.
const MAX_BACKGROUND: u16 = 64;

fn errno(e: ZplError) -> Errno {
    if let ZplError::Io(why) = &e {
        // The daemon's log: an I/O error is never expected from a healthy pool.
        eprintln!("zetta-fuse: I/O error: {why}");
    }
    Errno::from_i32(e.errno())
}

fn to_system(t: Timespec) -> SystemTime {
    if t.sec >= 0 {
        UNIX_EPOCH + Duration::new(t.sec as u64, t.nsec)
    } else {
        UNIX_EPOCH - Duration::from_secs(t.sec.unsigned_abs())
            + Duration::from_nanos(u64::from(t.nsec))
    }
}

fn from_system(t: SystemTime) -> Timespec {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Timespec {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        },
        Err(e) => {
            let d = e.duration();
            let mut sec = -(d.as_secs() as i64);
            let mut nsec = d.subsec_nanos();
            if nsec > 0 {
                sec -= 1;
                nsec = 1_000_000_000 - nsec;
            }
            Timespec { sec, nsec }
        }
    }
}

/// A time the kernel sent: both transports deliver it exactly (fuser 0.18's reading of
/// a time before 1970 is undone in `kernel::fuser_compat`).
fn from_kernel(t: SystemTime) -> Timespec {
    from_system(t)
}

fn time_or_now(t: TimeOrNow, now: Timespec) -> Timespec {
    match t {
        TimeOrNow::SpecificTime(t) => from_kernel(t),
        TimeOrNow::Now => now,
    }
}

pub(crate) fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::Regular => FileType::RegularFile,
        FileKind::Directory => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        FileKind::CharDevice => FileType::CharDevice,
        FileKind::BlockDevice => FileType::BlockDevice,
        FileKind::Fifo => FileType::NamedPipe,
        FileKind::Socket => FileType::Socket,
    }
}

fn creds(req: &Request) -> Creds {
    Creds {
        uid: req.uid(),
        gid: req.gid(),
    }
}

impl ZplFs {
    /// The pool, while it is still imported.
    pub(crate) fn pool(
        &self,
    ) -> Result<std::sync::Arc<parking_lot::RwLock<zetta::spa::Spa>>, Errno> {
        self.pool.upgrade().ok_or(Errno::EIO)
    }

    fn object(&self, ino: INodeNo) -> u64 {
        if ino.0 == ROOT_INO {
            self.vfs.root
        } else {
            ino.0
        }
    }

    fn ino(&self, object: u64) -> INodeNo {
        if object == self.vfs.root {
            INodeNo(ROOT_INO)
        } else {
            INodeNo(object)
        }
    }

    pub(crate) fn file_attr(&self, attr: &Attr) -> FileAttr {
        let z = &attr.znode;
        FileAttr {
            ino: self.ino(attr.object),
            size: z.size,
            blocks: attr.used_bytes.div_ceil(512),
            atime: to_system(z.atime),
            mtime: to_system(z.mtime),
            ctime: to_system(z.ctime),
            crtime: to_system(z.crtime),
            kind: file_type(attr.kind()),
            perm: (z.mode & 0o7777) as u16,
            nlink: z.links.min(u64::from(u32::MAX)) as u32,
            uid: z.uid as u32,
            gid: z.gid as u32,
            rdev: z.rdev as u32,
            blksize: attr.block_size_bytes.max(4096),
            flags: 0,
        }
    }

    /// Runs one ZPL read operation (lookup, getattr, read, readdir, readlink, getxattr,
    /// listxattr) under the pool's shared lock, beside other readers; only a dataset not
    /// opened yet in the pool takes the exclusive lock, once, to open it.
    fn run_read<T>(
        &self,
        work: impl FnOnce(&Zfsvfs, &ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, Errno> {
        let pool = self.pool()?;
        {
            let spa = pool.read();
            if spa.dataset_is_open(self.dataset) {
                return spa
                    .with_zpl_object_shared(self.dataset, &self.vfs, work)
                    .map_err(errno);
            }
        }
        let mut spa = pool.write();
        spa.with_zpl_object(self.dataset, &self.vfs, |vfs, os, ctx| work(vfs, os, ctx))
            .map_err(errno)
    }

    /// Runs one ZPL operation under the pool's exclusive lock.
    fn run<T>(
        &self,
        work: impl FnOnce(&Zfsvfs, &mut ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, Errno> {
        let pool = self.pool()?;
        let mut spa = pool.write();
        spa.with_zpl_object(self.dataset, &self.vfs, work)
            .map_err(errno)
    }

    /// The mount as its write policy sees it now (`zfs set sync|readonly` change it live).
    fn zmount(&self) -> ZfsMount {
        ZfsMount {
            dataset: self.dataset,
            vfs: self.vfs,
            sync: self.sync(),
            readonly: self.readonly(),
        }
    }

    /// Runs one write-side operation of the ZPL's policy (`zfs_vnops`) under the pool
    /// lock; its typed refusal becomes the errno (ENOSPC, EDQUOT, EROFS, ...).
    ///
    /// A change refused for space (ENOSPC, EDQUOT) while a file unlinked a moment ago waits
    /// for the kernel's FORGET to give its space back is tried once more after that FORGET
    /// (`wait_for_orphans`): OpenZFS frees a file nobody holds within `unlinkat` itself (the
    /// final iput), so `rm big; touch new` on a full pool or past a quota works there, but
    /// FUSE sends the FORGET asynchronously and another worker may serve the next request
    /// first. A refused change changed nothing, so trying it again is safe.
    pub(crate) fn policy<T>(
        &self,
        mut op: impl FnMut(&ZfsMount, &mut zetta::spa::Spa) -> Result<T, ZplError>,
    ) -> Result<T, Errno> {
        let pool = self.pool()?;
        // The write throttle (`zetta::dmu::tx::dmu_tx_wait`), before the pool lock is
        // taken: every change's `dmu::Tx` is then assigned under it without waiting.
        zetta::dmu::tx::dmu_tx_throttle_shared(&self.tx_shared);
        let first = op(&self.zmount(), &mut pool.write());
        match first {
            Err(ZplError::NoSpace | ZplError::QuotaExceeded) if self.wait_for_orphans() => {
                op(&self.zmount(), &mut pool.write()).map_err(errno)
            }
            other => other.map_err(errno),
        }
    }

    /// Waits, holding no pool lock, until no object orphaned in the last
    /// `ORPHAN_FORGET_WAIT` is left; whether there was one. An object the kernel keeps
    /// longer (an O_PATH descriptor, an open handle, a deleted working directory) keeps its
    /// space as on OpenZFS, and is not waited for past that time.
    pub(crate) fn wait_for_orphans(&self) -> bool {
        let mut orphans = self.orphans.lock();
        let newest = |orphans: &std::collections::HashMap<u64, std::time::Instant>| {
            orphans
                .values()
                .filter(|at| at.elapsed() < ORPHAN_FORGET_WAIT)
                .max()
                .copied()
        };
        let Some(latest) = newest(&orphans) else {
            return false;
        };
        let deadline = latest + ORPHAN_FORGET_WAIT;
        while newest(&orphans).is_some() {
            if self
                .orphans_gone
                .wait_until(&mut orphans, deadline)
                .timed_out()
            {
                break;
            }
        }
        true
    }

    /// `policy`, and the kernel's attributes of `inos` dropped once the txg the change
    /// joined commits: a directory whose entries changed (its `st_blocks`, like a written
    /// file's, is an estimate until then), a file whose extended attributes changed (a new
    /// directory's own first block: `create_node`). The txg is read under the same hold of
    /// the pool lock, so it is the change's.
    pub(crate) fn policy_settling<T>(
        &self,
        inos: &[u64],
        mut op: impl FnMut(&ZfsMount, &mut zetta::spa::Spa) -> Result<T, ZplError>,
    ) -> Result<T, Errno> {
        let mut txg = 0;
        let result = self.policy(|m, spa| {
            let value = op(m, spa)?;
            txg = spa.open_txg().0;
            Ok(value)
        });
        if result.is_ok() {
            for &ino in inos {
                crate::note_written(&self.written, ino, txg);
            }
        }
        result
    }

    /// Frees `range` batch by batch, each its own transaction, taking the pool lock per
    /// batch so that other requests run between them.
    fn free_long_range(&self, range: FreeRange) -> Result<(), Errno> {
        while !self.policy(|m, spa| m.free_step(spa, range))? {}
        Ok(())
    }

    /// Whether the kernel still holds `object` (open, or known by a lookup): an unlinked
    /// object it holds waits on the delete queue for its last reference.
    pub(crate) fn in_use(&self, object: u64) -> bool {
        self.refs.lock().contains_key(&object)
    }

    fn reply_entry(&self, reply: ReplyEntry, result: Result<Attr, Errno>) {
        match result {
            Ok(attr) => reply.entry_with_ttls(
                &ATTR_TTL,
                &ENTRY_TTL,
                &self.file_attr(&attr),
                Generation(attr.znode.gen),
            ),
            Err(e) => reply.error(e),
        }
    }

    /// The kernel now holds one more lookup reference to `object` (an entry reply).
    /// Called under the pool lock, shared or exclusive: either excludes the exclusive
    /// unlink and reclaim, so an unlink cannot free the object in between (lookups under
    /// the shared lock only count up, under `refs`' own lock).
    pub(crate) fn looked_up(&self, object: u64) {
        self.refs.lock().entry(object).or_default().lookups += 1;
    }

    pub(crate) fn opened(&self, object: u64) {
        self.refs.lock().entry(object).or_default().open += 1;
    }

    /// Drops references; when none is left, an unlinked object is freed. An object
    /// number must not be reused while the kernel may still name it (FUSE nodeids).
    pub(crate) fn release_refs(&self, object: u64, open: u32, lookups: u64) {
        let (last, closed) = {
            let mut refs = self.refs.lock();
            match refs.get_mut(&object) {
                Some(r) => {
                    r.open = r.open.saturating_sub(open);
                    r.lookups = r.lookups.saturating_sub(lookups);
                    if r.open == 0 && r.lookups == 0 {
                        refs.remove(&object);
                        (true, false)
                    } else {
                        (false, open > 0 && r.open == 0)
                    }
                }
                None => (false, false),
            }
        };
        if closed {
            // An unlinked file's last close: its space is due at the FORGET now.
            if let Some(at) = self.orphans.lock().get_mut(&object) {
                *at = std::time::Instant::now();
            }
        }
        if last {
            self.reclaim_if_unlinked(object);
            if self.orphans.lock().remove(&object).is_some() {
                self.orphans_gone.notify_all();
            }
        }
    }

    /// Frees `object` if it is unlinked and the kernel holds it no more.
    fn reclaim_if_unlinked(&self, object: u64) {
        if !self.readonly() && object != self.vfs.root {
            // Nearly every object the kernel forgets is still linked: the shared lock tells.
            // Only an unlinked one takes the exclusive lock, and is looked at again under it.
            let unlinked = self.run_read(|vfs, os, ctx| {
                Ok(vfs
                    .getattr(os, ctx, object)
                    .is_ok_and(|attr| attr.znode.links == 0))
            });
            if !matches!(unlinked, Ok(true)) {
                return;
            }
            let _ = self.run(|vfs, os, ctx| {
                // Referenced again meanwhile (a new lookup under the lock)?
                if self.refs.lock().contains_key(&object) {
                    return Ok(());
                }
                match vfs.getattr(os, ctx, object) {
                    Ok(attr) if attr.znode.links == 0 => vfs.reclaim(os, ctx, object),
                    _ => Ok(()),
                }
            });
        }
    }

    /// The time a change is stamped with. Under the writeback cache the kernel stamps the
    /// times it owns (mtime and ctime of regular files: writes, truncates, unlink and
    /// rename of a link, `touch`) with its own coarse clock (one tick: 4 ms at HZ=250), as
    /// OpenZFS's `zfs_tstamp_update_setup` does with `current_time`. The server stamps its
    /// own from the same clock, or a file's times could go backwards (a create at a
    /// precise time, then a write stamped with a coarse time up to one tick earlier).
    pub(crate) fn now(&self) -> Timespec {
        if !self.writeback {
            return Timespec::now();
        }
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        if rc != 0 {
            return Timespec::now();
        }
        Timespec {
            sec: ts.tv_sec,
            nsec: u32::try_from(ts.tv_nsec).unwrap_or(0),
        }
    }

    /// How the kernel caches an opened file: its pages survive the open (nothing changes a
    /// mounted file behind the kernel's back: rollback and receive remount). A file opened
    /// for writing while sync=always is in force on a writeback-cache mount (`zfs set
    /// sync=always` after the mount) bypasses the page cache, so that each write(2) reaches
    /// the intent log before it returns.
    ///
    /// Every open file is `FOPEN_NOFLUSH`: a close(2) needs nothing from the server (`flush`
    /// has nothing to do: no POSIX locks are kept here, and durability is fsync's), so the
    /// kernel skips the FLUSH request each close would cost (one of the seven requests of a
    /// small file's create, write and close). Under the writeback cache the kernel ignores
    /// the flag and still writes the dirty pages back at close before it sends FLUSH.
    pub(crate) fn open_flags(&self, writing: bool) -> FopenFlags {
        let cache = if writing
            && self.writeback
            && self.sync() == zetta::zpl::zfs_vnops::SyncMode::Always
        {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        };
        cache | FopenFlags::FOPEN_NOFLUSH
    }

    fn create_node(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
    ) -> Result<Attr, Errno> {
        if parent.0 >= CTL_ROOT {
            // Under .zfs: snapshots are immutable.
            return Err(Errno::EROFS);
        }
        let kind = FileKind::from_mode(u64::from(mode)).unwrap_or(FileKind::Regular);
        let dir = self.object(parent);
        let perm = mode & !umask & 0o7777;
        let now = self.now();
        let mut txg = 0;
        let attr = self.policy(|m, spa| {
            let attr = m.create(
                spa,
                dir,
                name.as_bytes(),
                kind,
                perm,
                creds(req),
                u64::from(rdev),
                now,
            )?;
            // Under the pool lock: an unlink cannot free it before the kernel knows it.
            self.looked_up(attr.object);
            txg = spa.open_txg().0;
            Ok(attr)
        })?;
        // The directory's `st_blocks` settles when the txg commits (`policy_settling`), a
        // new directory's first block too; a new file or device node has no block.
        crate::note_written(&self.written, parent.0, txg);
        if kind == FileKind::Directory {
            crate::note_written(&self.written, self.ino(attr.object).0, txg);
        }
        Ok(attr)
    }
}

impl crate::kernel::Filesystem for ZplFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        use crate::kernel::InitFlags as F;
        let _ = config.set_max_write(MAX_WRITE_BYTES);
        if let Err(most) = config.set_max_readahead(MAX_READAHEAD_BYTES) {
            let _ = config.set_max_readahead(most);
        }
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_time_granularity(Duration::from_nanos(1));
        // Export support (NFS, name_to_handle_at/open_by_handle_at): a file handle is the
        // node id and generation, and the kernel asks for a node it has forgotten by looking
        // up "." in it (and ".." for its parent) — answered in `lookup`.
        let _ = config.add_capabilities(F::FUSE_EXPORT_SUPPORT);
        // The writeback cache (opt-in, see `writeback_wanted`): write(2) lands in the page cache and the kernel sends dirty
        // pages in large WRITEs (writeback, fsync, close), owning size, mtime and ctime of
        // regular files meanwhile (it sends them back with setattr). Not for a mount made
        // under sync=always: there a write(2) returns only once the intent log has it,
        // which only a write-through mount can promise (see `open` for a sync=always set
        // on a running mount).
        if self.want_writeback && self.sync() != zetta::zpl::zfs_vnops::SyncMode::Always {
            self.writeback = config.add_capabilities(F::FUSE_WRITEBACK_CACHE).is_ok();
        }
        // Shared mappings of a file opened with FOPEN_DIRECT_IO (see `open`).
        let _ = config.add_capabilities(F::FUSE_DIRECT_IO_ALLOW_MMAP);
        // Listings with each entry's attributes (`readdirplus`), when the kernel sees them
        // used (`ls -l`, `find`, `du`: lookups follow the listing), plain ones otherwise.
        let _ = config.add_capabilities(F::FUSE_DO_READDIRPLUS | F::FUSE_READDIRPLUS_AUTO);
        // Lookups and listings of one directory in parallel (the kernel's directory lock
        // shared): every request is one operation under the pool lock (see the locking
        // paragraph above), so nothing here relies on the kernel serialising them.
        let _ = config.add_capabilities(F::FUSE_PARALLEL_DIROPS);
        Ok(())
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.release_refs(self.object(ino), 0, nlookup);
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        // The kernel sends "." and ".." only for file handles (export support, below).
        // Under `.zfs` an inode number holds a snapshot slot that this mount handed out,
        // not a stable name: a forgotten handle there is stale (ENOENT: ESTALE), rather
        // than possibly another snapshot's file after a remount.
        if parent.0 >= CTL_ROOT && matches!(name.as_bytes(), b"." | b"..") {
            return reply.error(Errno::ENOENT);
        }
        if let Some(result) = self.ctl_lookup(parent, name.as_bytes()) {
            // A snapshot's entry in `.zfs/snapshot` goes with a destroy or rename made by
            // the CLI, not through this mount: the kernel asks again on every walk, so a
            // destroyed snapshot stops resolving at once (OpenZFS's ctldir entries do).
            let ttl = if parent.0 == CTL_SNAPDIR {
                Duration::ZERO
            } else {
                CTL_TTL
            };
            return match result {
                Ok(attr) => reply.entry(&ttl, &attr, Generation(0)),
                Err(e) => reply.error(e),
            };
        }
        let dir = self.object(parent);
        let result = self.run_read(|vfs, os, ctx| {
            let attr = match name.as_bytes() {
                // A node by its id alone (export support: a file handle opened after the
                // kernel dropped the inode), any kind of file. An unlinked file has no
                // handle any more: ENOENT, which the kernel turns into ESTALE, as OpenZFS's
                // `zfs_vget` refuses an unlinked znode. A reused object number answers
                // with the new file's generation, which the kernel finds stale.
                b"." => {
                    let attr = vfs.getattr(os, ctx, dir)?;
                    if attr.znode.links == 0 {
                        return Err(ZplError::NotFound);
                    }
                    attr
                }
                // ".." of a directory (the kernel reconnecting a handle's path) and any
                // name: the ZPL's lookup.
                name => vfs.lookup(os, ctx, dir, name)?,
            };
            self.looked_up(attr.object);
            Ok(attr)
        });
        // A name that does not exist: a negative entry the kernel keeps (node id 0), so
        // `make`, compilers' include searches and shells' PATH walks stop asking. Every
        // name is created through this mount (the kernel then replaces the negative entry)
        // or under a new mount (rollback, receive); `.zfs` comes and goes with `snapdir`,
        // so it is never cached absent.
        if matches!(result, Err(e) if e == Errno::ENOENT)
            && name.as_bytes() != b"."
            && name.as_bytes() != b".."
            && !(dir == self.vfs.root && name.as_bytes() == b".zfs")
        {
            return reply.entry_with_ttls(&ATTR_TTL, &ENTRY_TTL, &negative_attr(), Generation(0));
        }
        self.reply_entry(reply, result);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if let Some(result) = self.ctl_getattr(ino) {
            return match result {
                Ok(attr) => reply.attr(&CTL_TTL, &attr),
                Err(e) => reply.error(e),
            };
        }
        let object = self.object(ino);
        match self.run_read(|vfs, os, ctx| vfs.getattr(os, ctx, object)) {
            Ok(attr) => reply.attr(&ATTR_TTL, &self.file_attr(&attr)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<crate::kernel::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if ino.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        let object = self.object(ino);
        let now = self.now();
        let change = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime: atime.map(|t| time_or_now(t, now)),
            mtime: mtime.map(|t| time_or_now(t, now)),
            ctime: ctime.map(from_kernel),
            crtime: crtime.map(from_kernel),
        };
        // A long shrink frees its tail batch by batch, the pool lock released between
        // them; `setattr` then finds nothing left to free.
        let mut result = Ok(());
        if let Some(size) = change.size.filter(|_| !self.readonly()) {
            result = self.free_long_range(FreeRange::Tail { object, size });
        }
        let result = result.and_then(|()| {
            self.policy(|m, spa| Ok((m.setattr(spa, object, &change, now)?, spa.open_txg())))
        });
        if let (Ok((_, txg)), Some(_)) = (&result, change.size) {
            crate::note_written(&self.written, ino.0, txg.0);
        }
        match result {
            Ok((attr, _)) => reply.attr(&ATTR_TTL, &self.file_attr(&attr)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        if let Some(result) = self.ctl_readlink(ino) {
            return match result {
                Ok(target) => reply.data(&target),
                Err(e) => reply.error(e),
            };
        }
        let object = self.object(ino);
        match self.run_read(|vfs, os, ctx| vfs.readlink(os, ctx, object)) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let result = self.create_node(req, parent, name, mode, umask, rdev);
        self.reply_entry(reply, result);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let mode = (mode & 0o7777) | libc::S_IFDIR;
        let result = self.create_node(req, parent, name, mode, umask, 0);
        self.reply_entry(reply, result);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if parent.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        let dir = self.object(parent);
        let now = self.now();
        let in_use = |object| self.in_use(object);
        let result = self.policy_settling(&[parent.0], |m, spa| {
            m.remove(spa, dir, name.as_bytes(), now, &in_use)
        });
        if let Ok(Some(orphan)) = result {
            self.orphans
                .lock()
                .insert(orphan, std::time::Instant::now());
        }
        reply_empty(reply, result.map(|_| ()));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if parent.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        let dir = self.object(parent);
        let now = self.now();
        let in_use = |object| self.in_use(object);
        let result = self.policy_settling(&[parent.0], |m, spa| {
            m.rmdir(spa, dir, name.as_bytes(), now, &in_use)
        });
        reply_empty(reply, result);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        if parent.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        let dir = self.object(parent);
        let now = self.now();
        let result = self.policy_settling(&[parent.0], |m, spa| {
            let attr = m.symlink(
                spa,
                dir,
                link_name.as_bytes(),
                target.as_os_str().as_bytes(),
                creds(req),
                now,
            )?;
            self.looked_up(attr.object);
            Ok(attr)
        });
        self.reply_entry(reply, result);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if parent.0 >= CTL_ROOT || newparent.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        if flags.contains(RenameFlags::RENAME_WHITEOUT) {
            return reply.error(Errno::EINVAL);
        }
        let (sdir, ddir) = (self.object(parent), self.object(newparent));
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        let exchange = flags.contains(RenameFlags::RENAME_EXCHANGE);
        let now = self.now();
        let in_use = |object| self.in_use(object);
        let result = self.policy_settling(&[parent.0, newparent.0], |m, spa| {
            m.rename(
                spa,
                sdir,
                name.as_bytes(),
                ddir,
                newname.as_bytes(),
                noreplace,
                exchange,
                now,
                &in_use,
            )
        });
        reply_empty(reply, result);
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        if ino.0 >= CTL_ROOT || newparent.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        let (object, dir) = (self.object(ino), self.object(newparent));
        let now = self.now();
        let result = self.policy_settling(&[newparent.0], |m, spa| {
            let attr = m.link(spa, object, dir, newname.as_bytes(), now)?;
            self.looked_up(attr.object);
            Ok(attr)
        });
        self.reply_entry(reply, result);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let object = self.object(ino);
        let writing = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
        if writing && (self.readonly() || object >= CTL_ROOT) {
            return reply.error(Errno::EROFS);
        }
        if object >= CTL_ROOT {
            return reply.opened(FileHandle(object), FopenFlags::FOPEN_KEEP_CACHE);
        }
        // Under the writeback cache the kernel opens a write-only file for reading too (it
        // reads the pages a partial write lands in): nothing here refuses that.
        match self.run_read(|vfs, os, ctx| vfs.getattr(os, ctx, object)) {
            Ok(_) => {
                self.opened(object);
                reply.opened(FileHandle(object), self.open_flags(writing));
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if let Some(result) = self.ctl_read(ino, offset, size) {
            return match result {
                Ok(data) => reply.data(&data),
                Err(e) => reply.error(e),
            };
        }
        let object = self.object(ino);
        let touch = self.atime() && !self.readonly();
        let relatime = self.relatime();
        let now = self.now();
        // The read and the question whether the atime moves run under the shared lock;
        // only an update that is due (atime=on, or relatime's rule) takes the exclusive one.
        let result = self.run_read(|vfs, os, ctx| {
            let data = vfs.read(os, ctx, object, offset, size as usize)?;
            let due = touch && vfs.atime_update_due(os, ctx, object, now, relatime)?;
            Ok((data, due))
        });
        let result = result.and_then(|(data, due)| {
            if due {
                // No invalidation needed: the kernel drops its atime after every READ it
                // sends (`fuse_invalidate_atime`), and a read served from its pages sends none.
                self.run(|vfs, os, ctx| vfs.touch_atime(os, ctx, object, now, relatime))?;
            }
            Ok(data)
        });
        match result {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let object = self.object(ino);
        let now = self.now();
        let o_sync = flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0;
        let result = self.policy(|m, spa| {
            m.write(spa, object, offset, data, now, o_sync)?;
            Ok(spa.open_txg())
        });
        match result {
            Ok(txg) => {
                crate::note_written(&self.written, ino.0, txg.0);
                reply.written(data.len() as u32)
            }
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.release_refs(self.object(ino), 1, 0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply_empty(reply, self.policy(|m, spa| m.fsync(spa)));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let object = self.object(ino);
        if object >= CTL_ROOT {
            return reply.opened(FileHandle(object), FopenFlags::empty());
        }
        match self.run_read(|vfs, os, ctx| vfs.getattr(os, ctx, object)) {
            Ok(attr) if attr.kind() == FileKind::Directory => {
                self.opened(object);
                reply.opened(FileHandle(object), FopenFlags::empty());
            }
            Ok(_) => reply.error(Errno::ENOTDIR),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dir = self.object(ino);
        let Ok(mut offset) = i64::try_from(offset) else {
            return reply.ok();
        };
        if offset == CTL_LISTED_OFFSET {
            return reply.ok();
        }
        if let Some(result) = self.ctl_readdir(ino, offset) {
            return match result {
                Ok(entries) => {
                    for (ino, next, kind, name) in entries {
                        if reply.add(ino, next as u64, kind, OsStr::from_bytes(&name)) {
                            break;
                        }
                    }
                    reply.ok()
                }
                Err(e) => reply.error(e),
            };
        }
        loop {
            let batch = match self.run_read(|vfs, os, ctx| vfs.readdir(os, ctx, dir, offset, 128)) {
                Ok(batch) => batch,
                Err(e) => return reply.error(e),
            };
            let Some(last) = batch.last() else { break };
            let end = last.next;
            for entry in &batch {
                let ino = if entry.name == b".." && dir == self.vfs.root {
                    INodeNo(ROOT_INO)
                } else {
                    self.ino(entry.object)
                };
                let name = OsStr::from_bytes(&entry.name);
                if reply.add(ino, entry.next as u64, file_type(entry.kind), name) {
                    return reply.ok();
                }
            }
            offset = end;
        }
        // snapdir=visible: `.zfs` ends the root's listing (its offset is past any ZAP's).
        if dir == self.vfs.root
            && self.snapdir() == crate::SnapDir::Visible
            && offset != CTL_LISTED_OFFSET
        {
            let _ = reply.add(
                INodeNo(CTL_ROOT),
                CTL_LISTED_OFFSET as u64,
                FileType::Directory,
                ".zfs",
            );
        }
        reply.ok();
    }

    /// A listing with each entry's attributes: the kernel makes a dentry and inode of
    /// every entry but "." and "..", each one lookup reference (counted here under the
    /// pool lock, as `lookup` does, and handed back for entries the reply had no room
    /// for). `.zfs` and the entries under it carry their attributes too (the kernel's
    /// later FORGET of them finds nothing counted, as after `lookup`).
    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let dir = self.object(ino);
        let Ok(mut offset) = i64::try_from(offset) else {
            return reply.ok();
        };
        if offset == CTL_LISTED_OFFSET {
            return reply.ok();
        }
        if let Some(result) = self.ctl_readdir(ino, offset) {
            return match result {
                Ok(entries) => {
                    for (ino, next, _kind, name) in entries {
                        let Some(Ok(attr)) = self.ctl_getattr(ino) else {
                            continue;
                        };
                        let name = OsStr::from_bytes(&name);
                        if reply.add(ino, next as u64, name, &CTL_TTL, &attr, Generation(0)) {
                            break;
                        }
                    }
                    reply.ok()
                }
                Err(e) => reply.error(e),
            };
        }
        loop {
            let batch = self.run_read(|vfs, os, ctx| {
                let entries = vfs.readdir(os, ctx, dir, offset, READDIRPLUS_BATCH)?;
                let end = entries.last().map(|e| e.next);
                let mut out = Vec::with_capacity(entries.len());
                for entry in entries {
                    let attr = match vfs.getattr(os, ctx, entry.object) {
                        Ok(attr) => attr,
                        // Gone between the listing and now cannot happen under the lock;
                        // an entry whose object is damaged is listed by `readdir` alone.
                        Err(_) => continue,
                    };
                    let dots = entry.name == b"." || entry.name == b"..";
                    if !dots {
                        self.looked_up(attr.object);
                    }
                    out.push((entry, attr, dots));
                }
                Ok((out, end))
            });
            let (batch, end) = match batch {
                Ok(batch) => batch,
                Err(e) => return reply.error(e),
            };
            let Some(end) = end else {
                break;
            };
            let mut full = false;
            for (entry, attr, dots) in &batch {
                if full {
                    // Counted under the lock, never sent: handed back.
                    if !dots {
                        self.release_refs(attr.object, 0, 1);
                    }
                    continue;
                }
                let mut fattr = self.file_attr(attr);
                if entry.name == b".." && dir == self.vfs.root {
                    fattr.ino = INodeNo(ROOT_INO);
                }
                let name = OsStr::from_bytes(&entry.name);
                let generation = Generation(attr.znode.gen);
                if reply.add(
                    fattr.ino,
                    entry.next as u64,
                    name,
                    &ATTR_TTL,
                    &fattr,
                    generation,
                ) {
                    full = true;
                    if !dots {
                        self.release_refs(attr.object, 0, 1);
                    }
                }
            }
            if full {
                return reply.ok();
            }
            offset = end;
        }
        if dir == self.vfs.root
            && self.snapdir() == crate::SnapDir::Visible
            && offset != CTL_LISTED_OFFSET
        {
            if let Some(Ok(attr)) = self.ctl_getattr(INodeNo(CTL_ROOT)) {
                let _ = reply.add(
                    INodeNo(CTL_ROOT),
                    CTL_LISTED_OFFSET as u64,
                    ".zfs",
                    &CTL_TTL,
                    &attr,
                    Generation(0),
                );
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.release_refs(self.object(ino), 1, 0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply_empty(reply, self.policy(|m, spa| m.fsync(spa)));
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let Ok(pool) = self.pool() else {
            return reply.error(Errno::EIO);
        };
        let spa = pool.read();
        let (size, _, _) = spa.space();
        let avail = spa.available_bytes();
        let block = 4096u64;
        let used_objects = 1u64 << 20;
        let free_objects = avail / 512;
        reply.statfs(
            size / block,
            avail / block,
            avail / block,
            used_objects + free_objects,
            free_objects,
            block as u32,
            255,
            block as u32,
        );
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        if ino.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        if !self.xattr() || is_acl(name) {
            return reply.error(Errno::from_i32(libc::EOPNOTSUPP));
        }
        let object = self.object(ino);
        let now = self.now();
        let result = self.policy_settling(&[ino.0], |m, spa| {
            m.setxattr(spa, object, name.as_bytes(), value, flags as u32, now)
        });
        reply_empty(reply, result);
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if !self.xattr() || is_acl(name) {
            return reply.error(Errno::from_i32(libc::EOPNOTSUPP));
        }
        if let Some(result) = self.ctl_getxattr(ino, name.as_bytes()) {
            return match result {
                Ok(value) => reply_sized(reply, size, &value),
                Err(e) => reply.error(e),
            };
        }
        let object = self.object(ino);
        match self.run_read(|vfs, os, ctx| vfs.getxattr(os, ctx, object, name.as_bytes())) {
            Ok(value) => reply_sized(reply, size, &value),
            Err(e) => reply.error(e),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if !self.xattr() {
            return reply_sized(reply, size, &[]);
        }
        let names = match self.ctl_listxattr(ino) {
            Some(names) => names,
            None => {
                let object = self.object(ino);
                self.run_read(|vfs, os, ctx| vfs.listxattr(os, ctx, object))
            }
        };
        match names {
            Ok(names) => {
                let mut list = Vec::new();
                for name in names {
                    list.extend_from_slice(&name);
                    list.push(0);
                }
                reply_sized(reply, size, &list)
            }
            Err(e) => reply.error(e),
        }
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if ino.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        if !self.xattr() {
            return reply.error(Errno::from_i32(libc::EOPNOTSUPP));
        }
        let object = self.object(ino);
        let now = self.now();
        reply_empty(
            reply,
            self.policy_settling(&[ino.0], |m, spa| {
                m.removexattr(spa, object, name.as_bytes(), now)
            }),
        );
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        // `default_permissions`: the kernel has already checked.
        reply.ok();
    }

    /// Mode 0 and KEEP_SIZE check that the range fits in what the filesystem may still
    /// take (ENOSPC, as OpenZFS: copy-on-write cannot promise blocks ahead, but it does
    /// refuse a reservation larger than AVAIL); mode 0 then grows the size. PUNCH_HOLE
    /// frees the range.
    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if ino.0 >= CTL_ROOT {
            return reply.error(Errno::EROFS);
        }
        let object = self.object(ino);
        let now = self.now();
        let mode = match mode {
            0 => Fallocate::Allocate,
            libc::FALLOC_FL_KEEP_SIZE => Fallocate::KeepSize,
            m if m == libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE => {
                Fallocate::PunchHole
            }
            _ => return reply.error(Errno::from_i32(libc::EOPNOTSUPP)),
        };
        let mut result = Ok(());
        if mode == Fallocate::PunchHole && !self.readonly() {
            result = self.free_long_range(FreeRange::Hole {
                object,
                offset,
                len: length,
            });
        }
        let result = result.and_then(|()| {
            self.policy(|m, spa| {
                m.fallocate(spa, object, offset, length, mode, now)?;
                Ok(spa.open_txg())
            })
        });
        let result = result.map(|txg| crate::note_written(&self.written, ino.0, txg.0));
        reply_empty(reply, result);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mode = (mode & 0o7777) | libc::S_IFREG;
        match self.create_node(req, parent, name, mode, umask, 0) {
            Ok(attr) => {
                self.opened(attr.object);
                reply.created(
                    &ATTR_TTL,
                    &self.file_attr(&attr),
                    Generation(attr.znode.gen),
                    FileHandle(attr.object),
                    self.open_flags(true),
                );
            }
            Err(e) => reply.error(e),
        }
    }
}

/// The attributes of a negative entry: node id 0 is what the kernel reads as "no such
/// name" (the rest is not looked at).
fn negative_attr() -> FileAttr {
    FileAttr {
        ino: INodeNo(0),
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: FileType::RegularFile,
        perm: 0,
        nlink: 0,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// POSIX ACLs travel as `system.posix_acl_*` xattrs. Like OpenZFS with `acltype=off`
/// (the Linux default) they are not supported, so tools fall back to the mode bits
/// instead of storing an ACL the kernel would not enforce.
fn is_acl(name: &OsStr) -> bool {
    name.as_bytes().starts_with(b"system.posix_acl_")
}

/// Replies to a request that returns nothing but success or an errno.
fn reply_empty(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

/// xattr replies: the size when asked for it, ERANGE when the buffer is too small.
pub(crate) fn reply_sized(reply: ReplyXattr, size: u32, value: &[u8]) {
    if size == 0 {
        reply.size(value.len() as u32);
    } else if value.len() > size as usize {
        reply.error(Errno::ERANGE);
    } else {
        reply.data(value);
    }
}
