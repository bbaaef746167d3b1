//! The daemon-wide session loop (libfuse's `fuse_loop_mt.c`, turned inside out): one
//! epoll set holds every mount's `/dev/fuse` descriptor, and one fixed pool of worker
//! threads serves them all, so a mount costs a descriptor, a `Session` and its
//! filesystem object — no thread and no buffer of its own.
//!
//! Theory. Each descriptor is registered `EPOLLIN | EPOLLONESHOT`: the worker that wakes
//! for it reads exactly one request (the descriptor is non-blocking; another worker may
//! have taken it: EAGAIN), re-arms the descriptor at once, so that the mount's next
//! request goes to the next free worker, and only then runs the handler and writes its
//! reply. Requests of one mount thus run in parallel as far as there are workers, and a
//! busy mount cannot starve the others of more than the workers its requests occupy.
//! Each worker owns one read buffer of the largest request (`MAX_WRITE_LIMIT` plus the
//! header: the kernel refuses smaller reads), touched only as far as requests fill it.
//!
//! A session ends when its read answers ENODEV (unmounted, or the connection aborted):
//! the worker that sees it takes the descriptor out of the set, calls the filesystem's
//! `destroy` and wakes whoever waits for the end (`MountHandle::drop`). The descriptor
//! closes when the last holder of the session (a worker mid-request, the handle) lets go,
//! so its number is never reused while a worker may still read it; epoll events carry
//! the session's id, never the raw descriptor.
//!
//! Workers never end: the pool lives as long as the daemon (started by its first mount).
//! A handler must not wait for another request of the same daemon to be served beyond a
//! bounded time (`ops`'s wait for an unlinked file's FORGET is bounded), or a pool whose
//! every worker waits could stall; notifications are written by the daemon's own
//! threads, never from a handler (the crate's theory paragraph).

use super::auto_unmount::{self, Helper};
use super::fuse_abi::{self as abi, Args, InHeader};
use super::fuse_dev::{self, FuseDev, Read};
use super::fuse_lowlevel::{self as ll, Filesystem, KernelConfig};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a mount waits for the kernel's INIT request.
const INIT_WAIT: Duration = Duration::from_secs(10);
/// How long dropping a mount waits for its session to end after the unmount (a lazily
/// detached mount with open files ends later: the session is then left to end alone).
const END_WAIT: Duration = Duration::from_secs(30);
/// A worker's read buffer: the largest WRITE (`MAX_WRITE_LIMIT`) and its headers.
const READ_BUFFER: usize = ll::MAX_WRITE_LIMIT as usize + 4096;

/// Worker threads of the daemon's pool: twice the cores (a handler blocks on disk reads
/// and the pool lock as often as it computes), at least 4 (what one fuser mount had), or
/// `ZETTA_FUSE_THREADS` (1 to 64).
pub fn pool_threads() -> usize {
    if let Some(n) = std::env::var("ZETTA_FUSE_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
    {
        return n;
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (2 * cores).clamp(4, 64)
}

/// One mounted connection.
struct Session {
    id: u64,
    dev: Arc<FuseDev>,
    fs: Arc<dyn Filesystem>,
    mountpoint: PathBuf,
    /// The mount's connection (`major:minor` in /proc/self/mountinfo).
    connection: Mutex<Option<String>>,
    ended: Mutex<bool>,
    ended_cv: Condvar,
}

impl Session {
    fn end(&self) {
        let mut ended = self.ended.lock();
        if !*ended {
            *ended = true;
            self.fs.destroy();
        }
        self.ended_cv.notify_all();
    }
}

/// The daemon's pool: its epoll set, its sessions, its workers.
pub struct Pool {
    epfd: OwnedFd,
    sessions: RwLock<HashMap<u64, Arc<Session>>>,
    next_id: AtomicU64,
    threads: AtomicUsize,
    /// Detaches the mounts of a killed daemon (`auto_unmount`).
    helper: OnceLock<Option<Helper>>,
}

static POOL: OnceLock<Arc<Pool>> = OnceLock::new();

impl Pool {
    /// The daemon's pool, started (its workers spawned) on first use.
    pub fn get() -> std::io::Result<Arc<Pool>> {
        if let Some(pool) = POOL.get() {
            return Ok(pool.clone());
        }
        // SAFETY: epoll_create1 has no preconditions; the descriptor is owned below.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let pool = Arc::new(Pool {
            // SAFETY: a fresh descriptor nobody else owns.
            epfd: unsafe { OwnedFd::from_raw_fd(fd) },
            sessions: RwLock::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            threads: AtomicUsize::new(0),
            helper: OnceLock::new(),
        });
        // Two racing first mounts: one pool wins, the other's set is dropped unused.
        let pool = POOL.get_or_init(|| pool).clone();
        pool.start_workers()?;
        Ok(pool)
    }

    fn start_workers(self: &Arc<Pool>) -> std::io::Result<()> {
        let want = pool_threads();
        while self.threads.load(Ordering::Acquire) < want {
            let n = self.threads.fetch_add(1, Ordering::AcqRel);
            if n >= want {
                break;
            }
            let pool = self.clone();
            std::thread::Builder::new()
                .name(format!("zetta-fuse-{n}"))
                .stack_size(256 * 1024)
                .spawn(move || pool.work())?;
        }
        Ok(())
    }

    /// Worker threads running.
    pub fn threads(&self) -> usize {
        self.threads.load(Ordering::Acquire)
    }

    /// Mounted sessions not yet ended.
    pub fn sessions(&self) -> usize {
        self.sessions.read().len()
    }

    fn arm(&self, s: &Session, op: libc::c_int) -> std::io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32,
            u64: s.id,
        };
        // SAFETY: both descriptors are open (the session holds its device).
        let rc = unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), op, s.dev.raw(), &mut ev) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn helper(&self) -> Option<&Helper> {
        self.helper.get_or_init(Helper::start).as_ref()
    }

    fn finish(&self, s: &Arc<Session>) {
        self.sessions.write().remove(&s.id);
        if let (Some(helper), Some(conn)) = (self.helper(), s.connection.lock().as_deref()) {
            helper.unwatch(conn);
        }
        // SAFETY: the session still holds its device open.
        unsafe {
            libc::epoll_ctl(
                self.epfd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                s.dev.raw(),
                std::ptr::null_mut(),
            )
        };
        s.end();
    }

    fn work(self: Arc<Pool>) {
        let mut buf = vec![0u8; READ_BUFFER];
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }];
        loop {
            // SAFETY: `ev` is valid for one event.
            let n = unsafe { libc::epoll_wait(self.epfd.as_raw_fd(), ev.as_mut_ptr(), 1, -1) };
            if n <= 0 {
                continue;
            }
            let id = ev[0].u64;
            let Some(s) = self.sessions.read().get(&id).cloned() else {
                continue;
            };
            match s.dev.read(&mut buf) {
                Ok(Read::Request(len)) => {
                    if self.arm(&s, libc::EPOLL_CTL_MOD).is_err() {
                        self.finish(&s);
                    }
                    if let Err(e) = ll::dispatch(&*s.fs, &s.dev, &buf[..len]) {
                        eprintln!(
                            "zetta-fuse: {}: malformed request ({e:?}), answered EIO",
                            s.mountpoint.display()
                        );
                    }
                }
                Ok(Read::Nothing) => {
                    if self.arm(&s, libc::EPOLL_CTL_MOD).is_err() {
                        self.finish(&s);
                    }
                }
                Ok(Read::Gone) => self.finish(&s),
                Err(e) => {
                    eprintln!(
                        "zetta-fuse: {}: reading /dev/fuse: {e}; session ended",
                        s.mountpoint.display()
                    );
                    self.finish(&s);
                }
            }
        }
    }

    /// Mounts `fs` at `mountpoint` (`flags`: `MS_*`), runs the INIT handshake and hands
    /// the connection to the pool.
    pub fn mount<FS: Filesystem>(
        self: &Arc<Pool>,
        mut fs: FS,
        mountpoint: &Path,
        fsname: &str,
        flags: libc::c_ulong,
        allow_other: bool,
    ) -> std::io::Result<MountHandle> {
        let dev = FuseDev::open()?;
        dev.mount(mountpoint, fsname, flags, allow_other)?;
        if let Err(e) = handshake(&dev, &mut fs) {
            let _ = fuse_dev::unmount(mountpoint, true);
            return Err(e);
        }
        let s = Arc::new(Session {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            dev: Arc::new(dev),
            fs: Arc::new(fs),
            mountpoint: mountpoint.to_path_buf(),
            connection: Mutex::new(None),
            ended: Mutex::new(false),
            ended_cv: Condvar::new(),
        });
        self.sessions.write().insert(s.id, s.clone());
        if let Err(e) = self.arm(&s, libc::EPOLL_CTL_ADD) {
            self.sessions.write().remove(&s.id);
            let _ = fuse_dev::unmount(mountpoint, true);
            return Err(e);
        }
        if let Some(conn) = auto_unmount::connection_of(mountpoint) {
            if let Some(helper) = self.helper() {
                helper.watch(&conn);
            }
            *s.connection.lock() = Some(conn);
        }
        Ok(MountHandle { session: s })
    }
}

/// Reads the INIT request the kernel queued at mount time, asks the filesystem what to
/// ask for, and answers it. A kernel speaking another major version is refused (EPROTO).
fn handshake<FS: Filesystem>(dev: &FuseDev, fs: &mut FS) -> std::io::Result<()> {
    let mut buf = vec![0u8; abi::FUSE_MIN_READ_BUFFER];
    let deadline = Instant::now() + INIT_WAIT;
    let len = loop {
        let mut pfd = libc::pollfd {
            fd: dev.raw(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 100) };
        match dev.read(&mut buf)? {
            Read::Request(len) => break len,
            Read::Gone => return Err(std::io::Error::from_raw_os_error(libc::ENODEV)),
            Read::Nothing if Instant::now() > deadline => {
                return Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
            }
            Read::Nothing => {}
        }
    };
    let request = &buf[..len];
    let bad = || std::io::Error::from_raw_os_error(libc::EPROTO);
    let header = InHeader::parse(request).ok_or_else(bad)?;
    if header.opcode != abi::opcode::INIT {
        return Err(bad());
    }
    let init =
        abi::InitIn::parse(&mut Args::new(&request[abi::IN_HEADER_LEN..])).ok_or_else(bad)?;
    let reply = |error: i32, body: &[u8]| {
        let mut msg = vec![0u8; abi::OUT_HEADER_LEN];
        msg.extend_from_slice(body);
        abi::encode_out_header(&mut msg, error, header.unique);
        dev.write(&msg)
    };
    if init.major != abi::FUSE_KERNEL_VERSION || init.minor < 31 {
        let _ = reply(-libc::EPROTO, &[]);
        return Err(bad());
    }
    let mut config = KernelConfig::new(init.flags, init.max_readahead);
    let req = ll::request_of(&header);
    if let Err(e) = fs.init(&req, &mut config) {
        let _ = reply(-e.raw_os_error().unwrap_or(libc::EIO), &[]);
        return Err(e);
    }
    let mut out = config.init_out();
    out.minor = out.minor.min(init.minor);
    let mut body = Vec::with_capacity(abi::INIT_OUT_LEN);
    out.encode(&mut body);
    reply(0, &body)
}

/// A mount served by the pool; dropping it unmounts (lazily: open files keep it alive)
/// unless it is gone already or another mount has taken its path, and waits for the
/// session to end.
pub struct MountHandle {
    session: Arc<Session>,
}

impl MountHandle {
    /// Tells the kernel to drop its cached attributes (and, for `offset >= 0`, pages in
    /// `offset..offset+len`, `len` 0 meaning to the end) of `ino`: FUSE_NOTIFY_INVAL_INODE.
    pub fn inval_inode(&self, ino: u64, offset: i64, len: i64) -> std::io::Result<()> {
        let mut msg = vec![0u8; abi::OUT_HEADER_LEN];
        msg.extend_from_slice(&ino.to_le_bytes());
        msg.extend_from_slice(&offset.to_le_bytes());
        msg.extend_from_slice(&len.to_le_bytes());
        abi::encode_out_header(&mut msg, abi::FUSE_NOTIFY_INVAL_INODE, 0);
        self.session.dev.write(&msg)
    }

    /// Tells the kernel to drop its entry `name` in directory `parent`:
    /// FUSE_NOTIFY_INVAL_ENTRY.
    pub fn inval_entry(&self, parent: u64, name: &[u8]) -> std::io::Result<()> {
        let mut msg = vec![0u8; abi::OUT_HEADER_LEN];
        msg.extend_from_slice(&parent.to_le_bytes());
        msg.extend_from_slice(&(name.len() as u32).to_le_bytes());
        msg.extend_from_slice(&0u32.to_le_bytes());
        msg.extend_from_slice(name);
        msg.push(0);
        abi::encode_out_header(&mut msg, abi::FUSE_NOTIFY_INVAL_ENTRY, 0);
        self.session.dev.write(&msg)
    }

    /// Whether the session has ended (unmounted).
    pub fn ended(&self) -> bool {
        *self.session.ended.lock()
    }

    pub fn mountpoint(&self) -> &Path {
        &self.session.mountpoint
    }
}

impl Drop for MountHandle {
    fn drop(&mut self) {
        let s = &self.session;
        // Only this session's own mount: the daemon unmounts before it drops, and may have
        // mounted again at the same path meanwhile (a rollback's or receive's remount).
        let ours = s.connection.lock().clone();
        let still_there = !*s.ended.lock()
            && (ours.is_none() || auto_unmount::connection_of(&s.mountpoint) == ours);
        if still_there {
            if let Err(e) = fuse_dev::unmount(&s.mountpoint, true) {
                eprintln!("zetta-fuse: unmount {}: {e}", s.mountpoint.display());
            }
        }
        let deadline = Instant::now() + END_WAIT;
        let mut ended = s.ended.lock();
        while !*ended {
            if s.ended_cv.wait_until(&mut ended, deadline).timed_out() {
                break;
            }
        }
    }
}
