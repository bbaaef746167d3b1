//! The transport against the real kernel: mounts served by the pool, golden request bytes.

use super::fuse_abi::{self as abi, Args, InHeader};
use super::fuse_dev::{FuseDev, Read};
use super::*;

/// A scratch directory under the system's temp dir, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!(
            "zetta-kernel-{tag}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    root && std::path::Path::new("/dev/fuse").exists()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Run by hand (`--ignored --nocapture`) to print the raw bytes of real requests: the
/// source of the golden vectors below.
#[test]
#[ignore]
fn capture_requests_from_the_kernel() {
    if !root() {
        return;
    }
    let dir = Scratch::new("capture");
    let dev = FuseDev::open().expect("open");
    dev.mount(&dir.0, "capture", libc::MS_NOSUID | libc::MS_NODEV, false)
        .expect("mount");
    let mut buf = vec![0u8; 1 << 21];
    let read = |buf: &mut Vec<u8>| loop {
        match dev.read(buf).expect("read") {
            Read::Request(n) => return n,
            _ => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    };
    let n = read(&mut buf);
    println!("INIT {}", hex(&buf[..n]));
    let h = InHeader::parse(&buf[..n]).expect("header");
    let mut out = vec![0u8; 16];
    KernelConfig::new(
        abi::InitIn::parse(&mut Args::new(&buf[40..n]))
            .expect("init")
            .flags,
        1 << 20,
    )
    .init_out()
    .encode(&mut out);
    abi::encode_out_header(&mut out, 0, h.unique);
    dev.write(&out).expect("init reply");
    let target = dir.0.join("golden");
    let t = std::thread::spawn(move || std::fs::metadata(target).is_err());
    let n = read(&mut buf);
    println!("GETATTR {}", hex(&buf[..n]));
    let h = InHeader::parse(&buf[..n]).expect("header");
    let mut out = vec![0u8; 16];
    let dir_attr = abi::WireAttr {
        ino: 1,
        mode: libc::S_IFDIR | 0o755,
        nlink: 2,
        blksize: 4096,
        ..Default::default()
    };
    abi::encode_attr_out(&mut out, std::time::Duration::from_secs(1), &dir_attr);
    abi::encode_out_header(&mut out, 0, h.unique);
    dev.write(&out).expect("reply");
    let n = read(&mut buf);
    println!("LOOKUP {}", hex(&buf[..n]));
    let h = InHeader::parse(&buf[..n]).expect("header");
    let mut out = vec![0u8; 16];
    abi::encode_out_header(&mut out, -libc::ENOENT, h.unique);
    dev.write(&out).expect("reply");
    assert!(t.join().expect("stat"));
    let _ = fuse_dev::unmount(&dir.0, true);
}

/// Requests this machine's kernel (6.18, protocol 7.45) sent to a fresh mount:
/// `stat mnt/golden` (GETATTR of the root, then LOOKUP "golden"), and the INIT before.
const INIT_6_18: &str = "680000001a0000000200000000000000000000000000000000000000000000000000000000000000070000002d00000000000200fbffff73fd0500000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";
const GETATTR_6_18: &str = "3800000003000000040000000000000001000000000000000000000000000000683900000000000000000000000000000000000000000000";
const LOOKUP_6_18: &str = "2f000000010000000600000000000000010000000000000000000000000000006839000000000000676f6c64656e00";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0))
        .collect()
}

/// Why: the decoder must read what the kernel really writes, field by field (the header,
/// INIT's versions and both flag words, a NUL-terminated name).
#[test]
fn golden_requests_from_the_kernel() {
    let init = unhex(INIT_6_18);
    let h = InHeader::parse(&init).expect("init header");
    assert_eq!(
        (h.len, h.opcode, h.unique, h.nodeid),
        (104, abi::opcode::INIT, 2, 0)
    );
    let i = abi::InitIn::parse(&mut Args::new(&init[40..])).expect("init_in");
    assert_eq!((i.major, i.minor, i.max_readahead), (7, 45, 128 * 1024));
    assert_eq!(i.flags, 0x0000_05fd_73ff_fffb);
    for flag in [
        abi::init_flags::ASYNC_READ,
        abi::init_flags::EXPORT_SUPPORT,
        abi::init_flags::MAX_PAGES,
        abi::init_flags::PARALLEL_DIROPS,
        abi::init_flags::WRITEBACK_CACHE,
        abi::init_flags::DIRECT_IO_ALLOW_MMAP,
        abi::init_flags::INIT_EXT,
    ] {
        assert_ne!(i.flags & flag, 0, "flag {flag:#x}");
    }
    // FUSE over io_uring is offered only when /sys/module/fuse/parameters/enable_uring is 1.
    assert_eq!(i.flags & abi::init_flags::OVER_IO_URING, 0);
    let getattr = unhex(GETATTR_6_18);
    let h = InHeader::parse(&getattr).expect("getattr header");
    assert_eq!(
        (h.opcode, h.nodeid, h.uid, h.gid, h.pid),
        (abi::opcode::GETATTR, 1, 0, 0, 0x3968)
    );
    let lookup = unhex(LOOKUP_6_18);
    let h = InHeader::parse(&lookup).expect("lookup header");
    assert_eq!(
        (h.len, h.opcode, h.unique, h.nodeid),
        (47, abi::opcode::LOOKUP, 6, 1)
    );
    assert_eq!(Args::new(&lookup[40..]).name(), Some(&b"golden"[..]));
}

/// Why: bytes from the kernel must never panic the daemon. Every truncation of a real
/// request (its length field made to agree) is either served or refused as undecodable.
#[test]
fn truncated_requests_are_refused_not_panicked_on() {
    let Ok(dev) = FuseDev::open() else {
        return;
    };
    let dev = std::sync::Arc::new(dev);
    let fs = MemFs::default();
    for golden in [GETATTR_6_18, LOOKUP_6_18] {
        let full = unhex(golden);
        for n in 0..full.len() {
            let mut cut = full[..n].to_vec();
            if n >= 4 {
                cut[..4].copy_from_slice(&(n as u32).to_le_bytes());
            }
            let result = fuse_lowlevel::dispatch(&fs, &dev, &cut);
            if n < abi::IN_HEADER_LEN {
                assert_eq!(result, Err(fuse_lowlevel::Undecodable::Header));
            } else if n < full.len() {
                assert!(
                    matches!(result, Err(fuse_lowlevel::Undecodable::Args { .. })),
                    "{n} bytes"
                );
            }
        }
    }
}

/// An in-memory filesystem: enough of one to drive the transport from the shell's side.
#[derive(Default)]
struct MemFs {
    nodes: parking_lot::Mutex<std::collections::HashMap<u64, Node>>,
    next: std::sync::atomic::AtomicU64,
}

#[derive(Clone)]
struct Node {
    kind: FileType,
    perm: u16,
    data: Vec<u8>,
    children: std::collections::BTreeMap<Vec<u8>, u64>,
}

impl MemFs {
    fn attr(&self, ino: u64, n: &Node) -> FileAttr {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        FileAttr {
            ino: INodeNo(ino),
            size: n.data.len() as u64,
            blocks: (n.data.len() as u64).div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: n.kind,
            perm: n.perm,
            nlink: if n.kind == FileType::Directory { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn new_node(
        &self,
        parent: INodeNo,
        name: &std::ffi::OsStr,
        node: Node,
    ) -> Result<FileAttr, Errno> {
        use std::os::unix::ffi::OsStrExt;
        let mut nodes = self.nodes.lock();
        let ino = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 2;
        let dir = nodes.get_mut(&parent.0).ok_or(Errno::ENOENT)?;
        if dir.children.contains_key(name.as_bytes()) {
            return Err(Errno::EEXIST);
        }
        dir.children.insert(name.as_bytes().to_vec(), ino);
        let attr = self.attr(ino, &node);
        nodes.insert(ino, node);
        Ok(attr)
    }
}

const TTL: std::time::Duration = std::time::Duration::from_secs(1);

impl Filesystem for MemFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        self.nodes.lock().insert(
            1,
            Node {
                kind: FileType::Directory,
                perm: 0o755,
                data: Vec::new(),
                children: Default::default(),
            },
        );
        let _ = config.set_max_write(1 << 20);
        let _ = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &std::ffi::OsStr, reply: ReplyEntry) {
        use std::os::unix::ffi::OsStrExt;
        let nodes = self.nodes.lock();
        let found = nodes
            .get(&parent.0)
            .and_then(|d| d.children.get(name.as_bytes()))
            .and_then(|ino| nodes.get(ino).map(|n| self.attr(*ino, n)));
        match found {
            Some(attr) => reply.entry(&TTL, &attr, Generation(1)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.nodes.lock().get(&ino.0) {
            Some(n) => reply.attr(&TTL, &self.attr(ino.0, n)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut nodes = self.nodes.lock();
        let Some(n) = nodes.get_mut(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        if let Some(size) = size {
            n.data.resize(size as usize, 0);
        }
        if let Some(mode) = mode {
            n.perm = (mode & 0o7777) as u16;
        }
        reply.attr(&TTL, &self.attr(ino.0, n))
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &std::ffi::OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let node = Node {
            kind: FileType::Directory,
            perm: (mode & 0o7777) as u16,
            data: Vec::new(),
            children: Default::default(),
        };
        match self.new_node(parent, name, node) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(1)),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &std::ffi::OsStr,
        mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let node = Node {
            kind: FileType::RegularFile,
            perm: (mode & 0o7777) as u16,
            data: Vec::new(),
            children: Default::default(),
        };
        match self.new_node(parent, name, node) {
            Ok(attr) => reply.created(
                &TTL,
                &attr,
                Generation(1),
                FileHandle(attr.ino.0),
                FopenFlags::empty(),
            ),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &std::ffi::OsStr, reply: ReplyEmpty) {
        use std::os::unix::ffi::OsStrExt;
        let mut nodes = self.nodes.lock();
        match nodes
            .get_mut(&parent.0)
            .and_then(|d| d.children.remove(name.as_bytes()))
        {
            Some(_) => reply.ok(),
            None => reply.error(Errno::ENOENT),
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
        let nodes = self.nodes.lock();
        let Some(n) = nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let start = (offset as usize).min(n.data.len());
        let end = (start + size as usize).min(n.data.len());
        reply.data(&n.data[start..end])
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut nodes = self.nodes.lock();
        let Some(n) = nodes.get_mut(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let end = offset as usize + data.len();
        if n.data.len() < end {
            n.data.resize(end, 0);
        }
        n.data[offset as usize..end].copy_from_slice(data);
        reply.written(data.len() as u32)
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let nodes = self.nodes.lock();
        let Some(d) = nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        for (i, (name, child)) in d.children.iter().enumerate().skip(offset as usize) {
            let kind = nodes.get(child).map_or(FileType::RegularFile, |n| n.kind);
            let name = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name);
            if reply.add(INodeNo(*child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok()
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let nodes = self.nodes.lock();
        let Some(d) = nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        for (i, (name, child)) in d.children.iter().enumerate().skip(offset as usize) {
            let Some(n) = nodes.get(child) else { continue };
            let name = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name);
            if reply.add(
                INodeNo(*child),
                i as u64 + 1,
                name,
                &TTL,
                &self.attr(*child, n),
                Generation(1),
            ) {
                break;
            }
        }
        reply.ok()
    }
}

fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}

fn process_threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |t| t.count())
}

fn mounted(path: &std::path::Path) -> bool {
    let p = path.to_string_lossy().to_string();
    std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|m| m.lines().any(|l| l.split(' ').nth(4) == Some(p.as_str())))
}

/// Why: the bar — one pool of workers serves every mount; a mount adds no thread.
/// Fifty mounts served at once by the same fixed pool, each working (create, write, read
/// back, list, stat, unlink), each unmounted cleanly (the session ends: ENODEV).
#[test]
fn many_mounts_share_one_pool_of_workers() {
    if !root() {
        return;
    }
    let pool = Pool::get().expect("pool");
    let workers = pool.threads();
    assert_eq!(workers, pool_threads());
    let before = process_threads();
    let dirs: Vec<Scratch> = (0..50).map(|i| Scratch::new(&format!("many{i}"))).collect();
    let handles: Vec<MountHandle> = dirs
        .iter()
        .map(|d| {
            pool.mount(
                MemFs::default(),
                &d.0,
                "memfs",
                libc::MS_NOSUID | libc::MS_NODEV,
                false,
            )
            .expect("mount")
        })
        .collect();
    // Other tests of this binary may start threads meanwhile: far fewer than 50.
    assert!(process_threads() < before + 25, "threads per mount");
    assert_eq!(pool.threads(), workers);
    assert_eq!(threads_named("zetta-fuse-"), workers);
    for (i, d) in dirs.iter().enumerate() {
        let f = d.0.join("file");
        let body = format!("mount {i}").repeat(1000);
        std::fs::write(&f, &body).expect("write");
        assert_eq!(std::fs::read_to_string(&f).expect("read"), body);
        std::fs::create_dir(d.0.join("sub")).expect("mkdir");
        let mut names: Vec<String> = std::fs::read_dir(&d.0)
            .expect("readdir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["file", "sub"]);
        let meta = std::fs::metadata(&f).expect("stat");
        assert_eq!(meta.len(), body.len() as u64);
        std::fs::remove_file(&f).expect("unlink");
        assert!(std::fs::metadata(&f).is_err());
    }
    // A 1 MiB write arrives as one request (max_write, max_pages 256).
    let big = vec![7u8; 1 << 20];
    std::fs::write(dirs[0].0.join("big"), &big).expect("big write");
    assert_eq!(std::fs::read(dirs[0].0.join("big")).expect("big read"), big);
    drop(handles);
    for d in &dirs {
        assert!(!mounted(&d.0), "{} still mounted", d.0.display());
    }
    assert_eq!(threads_named("zetta-fuse-"), workers);
}

/// Why: the daemon unmounts with umount2 before it drops the mount; the session must see
/// ENODEV and end by itself, and the drop must not hang.
#[test]
fn an_external_unmount_ends_the_session() {
    if !root() {
        return;
    }
    let pool = Pool::get().expect("pool");
    let d = Scratch::new("external");
    let handle = pool
        .mount(
            MemFs::default(),
            &d.0,
            "memfs",
            libc::MS_NOSUID | libc::MS_NODEV,
            false,
        )
        .expect("mount");
    std::fs::write(d.0.join("x"), b"x").expect("write");
    fuse_dev::unmount(&d.0, false).expect("umount");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !handle.ended() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(handle.ended());
    let start = std::time::Instant::now();
    drop(handle);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

/// Why: the daemon unmounts, remounts at the same path (rollback, receive) and drops the
/// old session later on another thread; that drop must not detach the new mount.
#[test]
fn dropping_an_old_session_leaves_a_new_mount_at_its_path() {
    if !root() {
        return;
    }
    let pool = Pool::get().expect("pool");
    let d = Scratch::new("remount");
    let old = pool
        .mount(MemFs::default(), &d.0, "memfs", libc::MS_NOSUID, false)
        .expect("mount");
    fuse_dev::unmount(&d.0, false).expect("umount");
    let new = pool
        .mount(MemFs::default(), &d.0, "memfs", libc::MS_NOSUID, false)
        .expect("mount again");
    drop(old);
    assert!(mounted(&d.0), "the new mount was detached");
    std::fs::write(d.0.join("x"), b"x").expect("the new mount serves");
    drop(new);
    assert!(!mounted(&d.0));
}
