//! Hostile devices against the OpenZFS read path: real fixture pools (a zstd v5000 pool, a
//! v1 pool, a v2 raidz1 triple) corrupted in seeded ways — random byte flips over the whole
//! image, whole blocks zeroed or randomised at the offsets the reader itself reads (its
//! metadata and data blocks), the same damage at the same place of every label, truncated
//! devices, a raidz member missing with damage on another, and — past the checksums — a
//! re-sealed uberblock whose rootbp is forged (checksum off, pointing at another real block
//! or anywhere) or a re-sealed label whose config bytes changed — then discovered, opened and
//! walked (every dataset, directory, file, symlink and xattr) by `find_pools`,
//! `OpenZfsPool` and `ZplFs`.
//!
//! The rule (OpenZFS's and ours): a corrupt device gives a clear error and loses nothing.
//! Each case must therefore end without a panic (`catch_unwind`), without looping (every
//! device read counts against a budget of 20× a clean walk's reads; a deadline thread backs
//! it up), and without absurd allocations (a global allocator records any single allocation
//! over 48 MiB; the largest OpenZFS block is 16 MiB and the walk reads files in 1 MiB
//! pieces). Errors are fine: they are counted and shown.
//!
//! Replay: `ZETTA_HOSTILE_SEED=<case seed>` runs that one case on every pool;
//! `ZETTA_HOSTILE_CASES=<n>` changes how many cases each pool gets (default 120);
//! `ZETTA_HOSTILE_VERBOSE=1` prints each case and its first error.

mod common;

use common::oracle::{fixture, Fixture};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zetta::dmu::openzfs::reader::Objset;
use zetta::io::{BlockDevice, DeviceRef, FileDevice, IoError};
use zetta::rand::{splitmix64, SeededRng};
use zetta::spa::openzfs::discover::find_pools;
use zetta::spa::openzfs::pool::OpenZfsPool;
use zetta::spa::openzfs::uberblock::{config_ashift, ring_uberblocks, slot_size_bytes};
use zetta::vdev::openzfs::label::{
    read_device, seal_label_eck, Label, PHYS_OFFSET_BYTES, PHYS_SIZE_BYTES,
};
use zetta::zpl::openzfs::fs::ZplFs;

// ---- memory guard ------------------------------------------------------------------------

/// Any single allocation above this is a bug on hostile input (16 MiB blocks, 1 MiB reads).
const ALLOC_LIMIT: usize = 48 << 20;

struct Guarded;

thread_local! {
    /// The largest allocation over the limit this thread made (each case walks in its own).
    static BIGGEST_ABSURD: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    if size > ALLOC_LIMIT {
        let _ = BIGGEST_ABSURD.try_with(|b| b.set(b.get().max(size)));
    }
}

unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Guarded = Guarded;

// ---- a device with damage over a real image ----------------------------------------------

/// Counts the device reads of one case and stops them past a budget (a loop would spin on
/// reads: every path through the reader reads a block per step).
struct Budget {
    reads: AtomicU64,
    limit: u64,
    exceeded: AtomicBool,
    /// (offset, len) of every read, when recording a clean walk.
    log: Option<Mutex<Vec<(u64, usize)>>>,
}

impl Budget {
    fn new(limit: u64, record: bool) -> Arc<Budget> {
        Arc::new(Budget {
            reads: AtomicU64::new(0),
            limit,
            exceeded: AtomicBool::new(false),
            log: record.then(|| Mutex::new(Vec::new())),
        })
    }
}

/// A read-only view of a fixture image with byte patches over it and maybe a shorter size.
struct Damaged {
    base: DeviceRef,
    size: u64,
    patches: Vec<(u64, Vec<u8>)>,
    budget: Arc<Budget>,
}

impl BlockDevice for Damaged {
    fn size_bytes(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<(), IoError> {
        let n = self.budget.reads.fetch_add(1, Ordering::Relaxed);
        if n >= self.budget.limit {
            self.budget.exceeded.store(true, Ordering::Relaxed);
            return Err(IoError::Failed {
                path: self.path(),
                reason: "read budget exhausted".into(),
            });
        }
        if let Some(log) = &self.budget.log {
            log.lock().unwrap().push((offset, buffer.len()));
        }
        let end = offset.checked_add(buffer.len() as u64);
        if end.is_none_or(|end| end > self.size) {
            return Err(IoError::OutOfRange {
                offset,
                len: buffer.len() as u64,
                size: self.size,
            });
        }
        self.base.read_at(offset, buffer)?;
        let end = offset + buffer.len() as u64;
        for (at, bytes) in &self.patches {
            let p_end = at + bytes.len() as u64;
            if *at >= end || p_end <= offset {
                continue;
            }
            let from = (*at).max(offset);
            let to = p_end.min(end);
            buffer[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&bytes[(from - at) as usize..(to - at) as usize]);
        }
        Ok(())
    }

    fn write_at(&self, _offset: u64, _data: &[u8]) -> Result<(), IoError> {
        Err(IoError::Failed {
            path: self.path(),
            reason: "read-only".into(),
        })
    }

    fn flush(&self) -> Result<(), IoError> {
        Ok(())
    }

    fn path(&self) -> String {
        self.base.path()
    }
}

// ---- the walk ----------------------------------------------------------------------------

/// Biggest piece one read of the walk asks for.
const READ_PIECE: u64 = 1 << 20;
/// Bytes of one file the walk reads at most (head and tail pieces beyond).
const FILE_READ_MAX: u64 = 4 << 20;
/// Objects one filesystem walk visits at most (the clean pools hold far fewer).
const OBJECTS_MAX: usize = 20_000;

#[derive(Default, Debug)]
struct Outcome {
    opened: bool,
    datasets: usize,
    objects: usize,
    errors: Vec<String>,
}

/// Discovers, opens and walks the pool on `devices`; every failure is recorded as an error.
fn open_and_walk(devices: &[DeviceRef]) -> Outcome {
    let mut out = Outcome::default();
    let candidates = find_pools(devices, 0);
    for candidate in candidates {
        let pool = match OpenZfsPool::open_devices(&candidate, devices) {
            Ok(pool) => pool,
            Err(e) => {
                out.errors.push(format!("open: {e}"));
                continue;
            }
        };
        out.opened = true;
        let datasets = match pool.datasets() {
            Ok(d) => d,
            Err(e) => {
                out.errors.push(format!("datasets: {e}"));
                continue;
            }
        };
        for ds in datasets {
            let _ = pool
                .dir_props(ds.dir_obj)
                .map_err(|e| out.errors.push(e.to_string()));
            if ds.is_encrypted() {
                continue;
            }
            let os = match pool.objset(&ds) {
                Ok(os) => os,
                Err(e) => {
                    out.errors.push(format!("{}: objset: {e}", ds.name));
                    continue;
                }
            };
            if os.phys.os_type != 2 {
                continue;
            }
            match ZplFs::open(os) {
                Ok(fs) => {
                    out.datasets += 1;
                    walk_fs(&fs, &mut out);
                }
                Err(e) => out.errors.push(format!("{}: {e}", ds.name)),
            }
        }
    }
    out
}

fn walk_fs(fs: &ZplFs, out: &mut Outcome) {
    let mut seen = BTreeSet::new();
    let mut stack = vec![fs.root];
    let mut err = |what: &str, object: u64, e: &dyn std::fmt::Display| {
        out.errors.push(format!("{what} {object}: {e}"));
    };
    while let Some(object) = stack.pop() {
        if seen.len() >= OBJECTS_MAX || !seen.insert(object) {
            continue;
        }
        let attr = match fs.attr(object) {
            Ok(a) => a,
            Err(e) => {
                err("attr", object, &e);
                continue;
            }
        };
        if attr.xattr != 0 {
            stack.push(attr.xattr);
        }
        if let Err(e) = fs.xattrs(object) {
            err("xattrs", object, &e);
        }
        if attr.is_dir() {
            match fs.readdir(object) {
                Ok(entries) => {
                    for (name, child, _) in entries {
                        if let Err(e) = fs.lookup(object, &name) {
                            err("lookup in", object, &e);
                        }
                        stack.push(child);
                    }
                }
                Err(e) => err("readdir", object, &e),
            }
        } else if attr.is_symlink() {
            if let Err(e) = fs.readlink(object) {
                err("readlink", object, &e);
            }
        } else {
            // Head pieces, then the last piece (a corrupt size is huge: never all of it).
            let mut offsets: Vec<u64> = (0..FILE_READ_MAX.min(attr.size))
                .step_by(READ_PIECE as usize)
                .collect();
            if attr.size > FILE_READ_MAX {
                offsets.push(attr.size - 1);
            }
            for offset in offsets {
                match fs.read(object, offset, READ_PIECE as usize) {
                    Ok(data) => assert!(data.len() as u64 <= READ_PIECE, "read grew"),
                    Err(e) => {
                        err("read", object, &e);
                        break;
                    }
                }
            }
        }
    }
    out.objects += seen.len();
}

// ---- pools and cases ---------------------------------------------------------------------

struct Pool {
    name: &'static str,
    _fixtures: Vec<Fixture>,
    bases: Vec<DeviceRef>,
    /// Device reads of a clean walk: (device index, offset, len).
    reads: Vec<(usize, u64, usize)>,
    clean_reads: u64,
    raidz: bool,
    mos: Option<MosForge>,
}

/// One real object set, as a forgery starts from it: its object-set block, the indirect
/// blocks on the way to its meta-dnode's block 0 (top first), that dnode block, and each live
/// dnode of it with its block 0 when it has one level.
struct ObjsetForge {
    objset: Vec<u8>,
    indirects: Vec<Vec<u8>>,
    dnodes_block: Vec<u8>,
    live: Vec<(usize, Option<Vec<u8>>)>,
}

fn objset_forge(
    os: &Objset,
    bp: &[u8; 128],
    order: zetta::byteorder::ByteOrder,
) -> Option<ObjsetForge> {
    let objset = os.read_raw(bp, order).ok()?;
    let meta = &os.phys.meta_dnode;
    let dnodes_block = os.read(meta, 0, meta.data_block_size()).ok()?;
    let mut indirects = Vec::new();
    let mut bp = *meta.blkptrs.first()?;
    for _ in 1..meta.nlevels {
        let block = os.read_raw(&bp, meta.order).ok()?;
        bp.copy_from_slice(block.get(..128)?);
        indirects.push(block);
    }
    let mut live = Vec::new();
    for slot in 0..dnodes_block.len() / 512 {
        let Ok(dn) = os.dnode(slot as u64) else {
            continue;
        };
        let block0 = (dn.nlevels == 1)
            .then(|| os.read(&dn, 0, dn.data_block_size()).ok())
            .flatten();
        live.push((slot, block0));
    }
    Some(ObjsetForge {
        objset,
        indirects,
        dnodes_block,
        live,
    })
}

/// What forged pools are built from (single-device pools): the MOS, and the first
/// filesystem's object set with the MOS slot of its dataset (when that slot lies in the
/// MOS's first dnode block).
struct MosForge {
    mos: ObjsetForge,
    zpl: Option<(ObjsetForge, usize)>,
    /// The pool's byte-order bit of block pointers.
    bp_order_bit: u64,
    /// Free space to put forged blocks in.
    free_at: u64,
}

fn mos_forge(devices: &[DeviceRef], reads: &[(usize, u64, usize)]) -> Option<MosForge> {
    let candidate = find_pools(devices, 0).into_iter().next()?;
    let pool = OpenZfsPool::open_devices(&candidate, devices).ok()?;
    let ub = &pool.uberblock;
    let mos = objset_forge(&pool.mos, &ub.rootbp, ub.order)?;
    let zpl = pool.datasets().ok().and_then(|datasets| {
        let ds = datasets
            .into_iter()
            .find(|d| !d.is_encrypted() && !d.is_snapshot)?;
        let slot = usize::try_from(ds.dataset_obj).ok()?;
        if slot >= mos.dnodes_block.len() / 512 {
            return None;
        }
        let os = pool.objset(&ds).ok()?;
        Some((objset_forge(&os, &ds.phys.bp, ds.order)?, slot))
    });
    let prop = ub.order.u64_at(&ub.rootbp, 48).ok()?;
    // A 1 MiB gap between the blocks the clean walk read (past the front labels and boot
    // area, before the end labels): unallocated, as far as the walk knows.
    let end_labels = devices[0].size_bytes() - (512 << 10);
    let mut used: Vec<(u64, u64)> = reads.iter().map(|(_, o, l)| (*o, o + *l as u64)).collect();
    used.push((end_labels, u64::MAX));
    used.sort();
    let mut free_at = None;
    let mut cursor = 4u64 << 20;
    for (start, end) in used {
        if start >= cursor + (1 << 20) {
            free_at = Some(cursor);
            break;
        }
        cursor = cursor.max(end.next_multiple_of(1 << 12));
    }
    Some(MosForge {
        mos,
        zpl,
        bp_order_bit: prop >> 63,
        free_at: free_at?,
    })
}

/// A block pointer to `size` uncompressed bytes at device offset `at`, checksum off.
fn forged_bp(
    order: zetta::byteorder::ByteOrder,
    at: u64,
    size: usize,
    object_type: u64,
    bit: u64,
) -> [u8; 128] {
    let mut bp = [0u8; 128];
    let sectors = size as u64 >> 9;
    order.put_u64(&mut bp, 0, sectors).unwrap();
    order.put_u64(&mut bp, 8, (at - (4 << 20)) >> 9).unwrap();
    let prop =
        (sectors - 1) | (sectors - 1) << 16 | 2 << 32 | 2 << 40 | object_type << 48 | bit << 63;
    order.put_u64(&mut bp, 48, prop).unwrap();
    order.put_u64(&mut bp, 80, 1).unwrap(); // logical birth
    order.put_u64(&mut bp, 88, 1).unwrap(); // fill
    bp
}

const UPGRADE: &str = "cli_root/zpool_upgrade/blockfiles";

fn load(name: &'static str, rels: &[String], raidz: bool) -> Pool {
    let fixtures: Vec<Fixture> = rels.iter().map(|r| fixture(r)).collect();
    let bases: Vec<DeviceRef> = fixtures
        .iter()
        .map(|f| {
            Arc::new(FileDevice::open_read_only(f.file.to_str().unwrap()).unwrap()) as DeviceRef
        })
        .collect();
    // A clean walk, recording where the reader reads: those are the real blocks.
    let budgets: Vec<Arc<Budget>> = bases.iter().map(|_| Budget::new(u64::MAX, true)).collect();
    let devices: Vec<DeviceRef> = bases
        .iter()
        .zip(&budgets)
        .map(|(b, budget)| {
            Arc::new(Damaged {
                base: b.clone(),
                size: b.size_bytes(),
                patches: Vec::new(),
                budget: budget.clone(),
            }) as DeviceRef
        })
        .collect();
    let clean = open_and_walk(&devices);
    assert!(
        clean.opened && clean.errors.is_empty() && clean.objects >= 1,
        "{name}: the clean pool does not read: {:?}",
        clean
    );
    let mut reads = Vec::new();
    let mut clean_reads = 0;
    for (i, budget) in budgets.iter().enumerate() {
        clean_reads += budget.reads.load(Ordering::Relaxed);
        let log = budget.log.as_ref().unwrap().lock().unwrap();
        let distinct: BTreeSet<(u64, usize)> = log.iter().copied().collect();
        reads.extend(distinct.into_iter().map(|(o, l)| (i, o, l)));
    }
    eprintln!(
        "{name}: clean walk: {} datasets, {} objects, {clean_reads} device reads, {} distinct",
        clean.datasets,
        clean.objects,
        reads.len()
    );
    let mos = if raidz {
        None
    } else {
        mos_forge(&devices, &reads)
    };
    Pool {
        name,
        _fixtures: fixtures,
        bases,
        reads,
        clean_reads,
        raidz,
        mos,
    }
}

/// One case: damage chosen by `seed`, described for the failure message.
struct Case {
    describe: Vec<String>,
    devices: Vec<DeviceRef>,
    budget: Arc<Budget>,
}

const LABEL_BYTES: u64 = 256 << 10;

fn make_case(pool: &Pool, seed: u64) -> Case {
    let mut rng = SeededRng::new(seed);
    let n = pool.bases.len();
    let budget = Budget::new(pool.clean_reads * 20 + 10_000, false);
    let mut sizes: Vec<u64> = pool.bases.iter().map(|b| b.size_bytes()).collect();
    let mut patches: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); n];
    let mut describe = Vec::new();
    let mut missing = None;
    let kind = rng.below(8);
    // Damage to a block the clean walk read: zeroed, random, or a few flips inside it.
    let block_damage = |rng: &mut SeededRng, patches: &mut Vec<Vec<(u64, Vec<u8>)>>| {
        let (dev, offset, len) = pool.reads[rng.below(pool.reads.len() as u64) as usize];
        match rng.below(3) {
            0 => {
                patches[dev].push((offset, vec![0; len]));
                format!("zeroed dev {dev} [{offset}, +{len})")
            }
            1 => {
                let mut bytes = vec![0; len];
                rng.fill(&mut bytes);
                patches[dev].push((offset, bytes));
                format!("randomised dev {dev} [{offset}, +{len})")
            }
            _ => {
                let flips = 1 + rng.below(8);
                for _ in 0..flips {
                    let at = offset + rng.below(len as u64);
                    patches[dev].push((at, vec![rng.next_u64() as u8]));
                }
                format!("{flips} byte(s) replaced in dev {dev} [{offset}, +{len})")
            }
        }
    };
    match kind {
        0 => {
            // Random bytes across whole images.
            let flips = 1 + rng.below(64);
            for _ in 0..flips {
                let dev = rng.below(n as u64) as usize;
                let at = rng.below(sizes[dev]);
                patches[dev].push((at, vec![rng.next_u64() as u8]));
            }
            describe.push(format!("{flips} random bytes across the images"));
        }
        1 | 2 => {
            let blocks = 1 + rng.below(if kind == 1 { 1 } else { 6 });
            for _ in 0..blocks {
                let d = block_damage(&mut rng, &mut patches);
                describe.push(d);
            }
        }
        3 => {
            // The same damage at the same place of all four labels (none left to fall back on).
            let dev = rng.below(n as u64) as usize;
            let rel = rng.below(LABEL_BYTES - 64);
            let mut bytes = vec![0; 1 + rng.below(64) as usize];
            rng.fill(&mut bytes);
            let size = sizes[dev] & !(LABEL_BYTES - 1);
            for base in [0, LABEL_BYTES, size - 2 * LABEL_BYTES, size - LABEL_BYTES] {
                patches[dev].push((base + rel, bytes.clone()));
            }
            describe.push(format!(
                "{} bytes at label offset {rel} of all labels of dev {dev}",
                bytes.len()
            ));
        }
        4 => {
            // Truncated: somewhere in the data, or past the front labels.
            let dev = rng.below(n as u64) as usize;
            let to = if rng.below(2) == 0 {
                rng.below(sizes[dev])
            } else {
                let (d, off, _) = pool.reads[rng.below(pool.reads.len() as u64) as usize];
                if d == dev {
                    off + 1
                } else {
                    rng.below(sizes[dev])
                }
            };
            sizes[dev] = to;
            describe.push(format!("dev {dev} truncated to {to} bytes"));
            if rng.below(2) == 0 {
                describe.push(block_damage(&mut rng, &mut patches));
            }
        }
        5 => {
            // Past the checksums: a re-sealed uberblock whose rootbp is forged.
            describe.push(forge_rootbp(pool, &mut rng, &mut patches));
        }
        6 => {
            // Past the checksums: bytes of a label's config changed, the label re-sealed.
            describe.push(forge_config(pool, &mut rng, &mut patches));
        }
        _ if !pool.raidz => {
            describe.push(forge_mos(pool, &mut rng, &mut patches));
        }
        _ => {
            // A raidz member gone, blocks on another damaged (beyond what parity repairs).
            let gone = rng.below(n as u64) as usize;
            missing = Some(gone);
            describe.push(format!("dev {gone} missing"));
            for _ in 0..1 + rng.below(4) {
                let d = block_damage(&mut rng, &mut patches);
                describe.push(d);
            }
        }
    }
    let devices = (0..n)
        .filter(|i| Some(*i) != missing)
        .map(|i| {
            Arc::new(Damaged {
                base: pool.bases[i].clone(),
                size: sizes[i],
                patches: std::mem::take(&mut patches[i]),
                budget: budget.clone(),
            }) as DeviceRef
        })
        .collect();
    Case {
        describe,
        devices,
        budget,
    }
}

/// Every readable label of every device: (device, label, ashift).
fn labels(pool: &Pool) -> Vec<(usize, Label, u64)> {
    let mut out = Vec::new();
    for (i, base) in pool.bases.iter().enumerate() {
        let Some(read) = read_device(base.as_ref()) else {
            continue;
        };
        let ashift = config_ashift(&read.config);
        for label in read.labels {
            out.push((i, label, ashift));
        }
    }
    out
}

/// Rewrites the newest uberblock of every ring with one forged rootbp — checksum off (so
/// the reader takes whatever bytes it finds), a DVA at a real block (of another kind,
/// compressed otherwise) or anywhere, random sizes, compression, type and level — and
/// re-seals each slot so the label checksum holds.
fn forge_rootbp(pool: &Pool, rng: &mut SeededRng, patches: &mut [Vec<(u64, Vec<u8>)>]) -> String {
    let lsize = [1u64, 2, 4, 8, 16, 32, 128, 256][rng.below(8) as usize];
    // Half uncompressed (the raw bytes decode as they lie), half any id (past the table too).
    let (psize, comp) = if rng.below(2) == 0 {
        (lsize, 2)
    } else {
        (1 + rng.below(lsize), rng.below(18))
    };
    let object_type = if rng.below(2) == 0 {
        11
    } else {
        rng.below(256)
    };
    let level = if rng.below(4) == 0 { rng.below(32) } else { 0 };
    let (dev, at, _) = pool.reads[rng.below(pool.reads.len() as u64) as usize];
    let sectors = if rng.below(4) == 0 {
        rng.below(pool.bases[dev].size_bytes() >> 9)
    } else {
        at.saturating_sub(4 << 20) >> 9
    };
    let gang = rng.below(8) == 0;
    let mut forged = 0;
    for (i, label, ashift) in labels(pool) {
        let size = slot_size_bytes(ashift);
        let ring_offset = label.ring_offset();
        let ubs = ring_uberblocks(&label.ring, ring_offset, ashift);
        let Some((slot, ub)) = ubs.iter().max_by_key(|(_, ub)| ub.txg) else {
            continue;
        };
        let mut bytes = label.ring[slot * size..(slot + 1) * size].to_vec();
        let o = ub.order;
        let w0 = o.u64_at(&bytes, 40).unwrap();
        let prop = o.u64_at(&bytes, 88).unwrap();
        o.put_u64(&mut bytes, 40, (w0 & !0xff_ffff) | psize)
            .unwrap();
        o.put_u64(&mut bytes, 48, sectors | u64::from(gang) << 63)
            .unwrap();
        for w in [56, 64, 72, 80] {
            o.put_u64(&mut bytes, w, 0).unwrap();
        }
        let prop = (prop & (1 << 63))
            | (lsize - 1)
            | (psize - 1) << 16
            | comp << 32
            | 2 << 40
            | object_type << 48
            | level << 56;
        o.put_u64(&mut bytes, 88, prop).unwrap();
        let at = ring_offset + (slot * size) as u64;
        seal_label_eck(&mut bytes, at, o).unwrap();
        patches[i].push((at, bytes));
        forged += 1;
    }
    format!(
        "{forged} uberblocks forged: rootbp at sector {sectors} (dev {dev}{}), lsize {lsize} \
         psize {psize} sectors, compression {comp}, type {object_type}, level {level}, checksum off",
        if gang { ", gang" } else { "" }
    )
}

/// Damages one live dnode of a copy of `f`'s first dnode block — bytes of its core or
/// pointers or bonus changed, or its block 0 (a ZAP, mostly) replaced by a damaged copy put
/// at `at_block` — and returns the block and what was done.
fn damage_dnodes(
    f: &ObjsetForge,
    rng: &mut SeededRng,
    order: zetta::byteorder::ByteOrder,
    bit: u64,
    at_block: u64,
    patches: &mut Vec<(u64, Vec<u8>)>,
) -> (Vec<u8>, String) {
    let (slot, block0) = &f.live[rng.below(f.live.len() as u64) as usize];
    let mut dnodes = f.dnodes_block.clone();
    let base = slot * 512;
    let describe = match (rng.below(3), block0) {
        (0, Some(block)) if !block.is_empty() && block.len() % 512 == 0 => {
            let mut block = block.clone();
            let flips = 1 + rng.below(6);
            for _ in 0..flips {
                let i = rng.below(block.len().min(4096) as u64) as usize;
                block[i] = rng.next_u64() as u8;
            }
            let object_type = u64::from(dnodes[base]);
            let bp = forged_bp(order, at_block, block.len(), object_type, bit);
            dnodes[base + 64..base + 192].copy_from_slice(&bp);
            patches.push((at_block, block));
            format!("dnode {slot}: block 0 with {flips} bytes changed")
        }
        (1, _) => {
            let bonus = 64 + usize::from(dnodes[base + 3]).min(3) * 128;
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let i = bonus + rng.below((512 - bonus) as u64) as usize;
                dnodes[base + i] = rng.next_u64() as u8;
            }
            format!("dnode {slot}: {flips} bonus bytes changed")
        }
        _ => {
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let i = rng.below(64 + 128) as usize;
                dnodes[base + i] = rng.next_u64() as u8;
            }
            format!("dnode {slot}: {flips} core/pointer bytes changed")
        }
    };
    (dnodes, describe)
}

/// Puts `dnodes` (block 0 of `f`'s meta-dnode) at `at`, copies of the indirect blocks on
/// its path re-pointed level by level after it, then the object-set block re-pointed;
/// returns the object-set block's offset and length. The other pointers stay real.
fn chain(
    f: &ObjsetForge,
    dnodes: Vec<u8>,
    order: zetta::byteorder::ByteOrder,
    bit: u64,
    at: u64,
    patches: &mut Vec<(u64, Vec<u8>)>,
) -> (u64, usize) {
    let mut bp = forged_bp(order, at, dnodes.len(), 10, bit);
    let mut at = at + dnodes.len() as u64;
    patches.push((at - dnodes.len() as u64, dnodes));
    for block in f.indirects.iter().rev() {
        let mut copy = block.clone();
        copy[..128].copy_from_slice(&bp);
        bp = forged_bp(order, at, copy.len(), 10, bit);
        at += copy.len() as u64;
        patches.push((at - copy.len() as u64, copy));
    }
    let mut objset = f.objset.clone();
    objset[64..192].copy_from_slice(&bp);
    let len = objset.len();
    patches.push((at, objset));
    (at, len)
}

/// A forged pool in free space, every forged block checksum off, the uberblocks re-sealed
/// to point at it: a MOS whose first dnode block has one dnode damaged, or (half the time,
/// when the pool allows) an intact MOS whose first filesystem's dataset points at a forged
/// object set with one ZPL dnode damaged (a znode or SA bonus, a directory ZAP). The
/// decoders get hostile bytes no checksum stops.
fn forge_mos(pool: &Pool, rng: &mut SeededRng, patches: &mut [Vec<(u64, Vec<u8>)>]) -> String {
    let Some(m) = &pool.mos else {
        return forge_rootbp(pool, rng, patches);
    };
    let bit = m.bp_order_bit;
    let order = if bit == 1 {
        zetta::byteorder::ByteOrder::Little
    } else {
        zetta::byteorder::ByteOrder::Big
    };
    let mut at = m.free_at;
    let mut out = Vec::new();
    let (mos_dnodes, describe) = match (&m.zpl, rng.below(2)) {
        (Some((zpl, ds_slot)), 0) => {
            let (dnodes, what) = damage_dnodes(zpl, rng, order, bit, at, &mut out);
            at += 256 << 10;
            let (os_at, os_len) = chain(zpl, dnodes, order, bit, at, &mut out);
            at = os_at + os_len as u64;
            // The dataset's ds_bp (offset 128 of its bonus) now names the forged set.
            let mut mos_dnodes = m.mos.dnodes_block.clone();
            let base = ds_slot * 512;
            let bonus = base + 64 + usize::from(mos_dnodes[base + 3]).min(3) * 128;
            let bp = forged_bp(order, os_at, os_len, 11, bit);
            mos_dnodes[bonus + 128..bonus + 256].copy_from_slice(&bp);
            (mos_dnodes, format!("forged filesystem, {what}"))
        }
        _ => {
            let (dnodes, what) = damage_dnodes(&m.mos, rng, order, bit, at, &mut out);
            at += 256 << 10;
            (dnodes, format!("forged MOS, {what}"))
        }
    };
    let (at_objset, objset_len) = chain(&m.mos, mos_dnodes, order, bit, at, &mut out);
    patches[0].extend(out);
    // Every newest uberblock points at it.
    for (i, label, ashift) in labels(pool) {
        let size = slot_size_bytes(ashift);
        let ring_offset = label.ring_offset();
        let ubs = ring_uberblocks(&label.ring, ring_offset, ashift);
        let Some((n, ub)) = ubs.iter().max_by_key(|(_, ub)| ub.txg) else {
            continue;
        };
        let mut bytes = label.ring[n * size..(n + 1) * size].to_vec();
        let bp = forged_bp(ub.order, at_objset, objset_len, 11, bit);
        bytes[40..168].copy_from_slice(&bp);
        let at = ring_offset + (n * size) as u64;
        seal_label_eck(&mut bytes, at, ub.order).unwrap();
        patches[i].push((at, bytes));
    }
    describe
}

/// Changes a few bytes of the XDR config of every label of one device (the same bytes in
/// each) and re-seals the labels: a config that decodes to other values, or not at all.
fn forge_config(pool: &Pool, rng: &mut SeededRng, patches: &mut [Vec<(u64, Vec<u8>)>]) -> String {
    let dev = rng.below(pool.bases.len() as u64) as usize;
    let flips: Vec<(usize, u8)> = (0..1 + rng.below(4))
        .map(|_| (rng.below(3072) as usize, rng.next_u64() as u8))
        .collect();
    for (i, label, _) in labels(pool) {
        let Ok(phys) = &label.phys else {
            continue;
        };
        if i != dev {
            continue;
        }
        let at = label.offset + PHYS_OFFSET_BYTES;
        let mut bytes = vec![0u8; PHYS_SIZE_BYTES];
        pool.bases[i].read_at(at, &mut bytes).unwrap();
        for (off, b) in &flips {
            bytes[*off] = *b;
        }
        seal_label_eck(&mut bytes, at, phys.order).unwrap();
        patches[i].push((at, bytes));
    }
    format!("config bytes {flips:?} of every label of dev {dev}, re-sealed")
}

/// Runs one case in its own thread under a deadline; the verdict is an error text.
fn run_case(pool: &Pool, seed: u64) -> Result<Outcome, String> {
    let case = make_case(pool, seed);
    let what = format!(
        "{} case seed {seed} ({}); replay: ZETTA_HOSTILE_SEED={seed}",
        pool.name,
        case.describe.join("; ")
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let devices = case.devices.clone();
    std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(|| open_and_walk(&devices)));
        let _ = tx.send((r, BIGGEST_ABSURD.with(Cell::get)));
    });
    // A backstop only: the read budget is what catches loops, deterministically.
    let outcome = match rx.recv_timeout(Duration::from_secs(300)) {
        Ok((Ok(outcome), absurd)) => {
            if absurd > 0 {
                return Err(format!("{what}: allocated {absurd} bytes at once"));
            }
            outcome
        }
        Ok((Err(panic), _)) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            return Err(format!("{what}: PANIC: {msg}"));
        }
        Err(_) => return Err(format!("{what}: still walking after 300 s")),
    };
    if std::env::var_os("ZETTA_HOSTILE_VERBOSE").is_some() {
        eprintln!(
            "{what}: opened {}, {:?}",
            outcome.opened,
            outcome.errors.first()
        );
    }
    if case.budget.exceeded.load(Ordering::Relaxed) {
        return Err(format!(
            "{what}: more than {} device reads (a loop?)",
            case.budget.limit
        ));
    }
    Ok(outcome)
}

fn case_seeds(pool_index: u64, default_count: u64) -> Vec<u64> {
    if let Some(seed) = std::env::var("ZETTA_HOSTILE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let count = std::env::var("ZETTA_HOSTILE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_count);
    (0..count)
        .map(|i| {
            let mut s = (pool_index << 32) ^ i ^ 0x5a17_0f0f;
            splitmix64(&mut s)
        })
        .collect()
}

fn hammer(pool: &Pool, pool_index: u64) {
    let mut failures = Vec::new();
    let (mut opened, mut clean, mut errors, mut unseen) = (0, 0, 0, 0);
    for seed in case_seeds(pool_index, 120) {
        match run_case(pool, seed) {
            Ok(o) => {
                opened += usize::from(o.opened);
                if !o.opened && o.errors.is_empty() {
                    unseen += 1;
                } else if o.errors.is_empty() {
                    clean += 1;
                } else {
                    errors += 1;
                }
            }
            Err(e) => {
                eprintln!("{e}");
                failures.push(e);
            }
        }
    }
    eprintln!(
        "{}: {opened} cases opened, {clean} read whole, {errors} gave errors, \
         {unseen} found no pool, {} failed",
        pool.name,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// Why: a corrupt or hostile device must give errors, never a panic, a hang or an absurd
// allocation, anywhere from discovery to file data — on a modern (zstd, SA, v5000) pool.
#[test]
fn hostile_zstd_pool_errors_never_panics() {
    let pool = load(
        "testpool_zstd",
        &["compression/testpool_zstd.tar.gz".to_string()],
        false,
    );
    hammer(&pool, 1);
}

// Why: the same on an old-format pool (v1: znodes, fletcher2, lzjb metadata).
#[test]
fn hostile_v1_pool_errors_never_panics() {
    let pool = load(
        "zfs-pool-v1",
        &[format!("{UPGRADE}/zfs-pool-v1.dat.bz2")],
        false,
    );
    hammer(&pool, 2);
}

// Why: the same through the raidz map and its reconstruction, one member missing or not.
#[test]
fn hostile_raidz_pool_errors_never_panics() {
    let rels: Vec<String> = (1..=3)
        .map(|i| format!("{UPGRADE}/zfs-pool-v2raidz{i}.dat.bz2"))
        .collect();
    let pool = load("zfs-pool-v2raidz", &rels, true);
    hammer(&pool, 3);
}

// Why: the guards must not be vacuous: an allocation past the limit is seen, one under it
// is not, and a device read past the budget fails and is recorded.
#[test]
fn the_guards_see_what_they_guard() {
    let seen = std::thread::spawn(|| {
        let big: Vec<u8> = Vec::with_capacity(ALLOC_LIMIT + 1);
        drop(std::hint::black_box(big));
        BIGGEST_ABSURD.with(Cell::get)
    })
    .join()
    .unwrap();
    assert_eq!(seen, ALLOC_LIMIT + 1);
    let unseen = std::thread::spawn(|| {
        let fine: Vec<u8> = Vec::with_capacity(16 << 20);
        drop(std::hint::black_box(fine));
        BIGGEST_ABSURD.with(Cell::get)
    })
    .join()
    .unwrap();
    assert_eq!(unseen, 0);
    let budget = Budget::new(2, false);
    let device = Damaged {
        base: Arc::new(zetta::io::MemDevice::new("mem", 4096)),
        size: 4096,
        patches: vec![(10, vec![7])],
        budget: budget.clone(),
    };
    let mut buf = [0u8; 16];
    device.read_at(0, &mut buf).unwrap();
    assert_eq!(buf[10], 7);
    assert!(device.read_at(4090, &mut buf).is_err(), "past the end");
    assert!(device.read_at(0, &mut buf).is_err(), "past the budget");
    assert!(budget.exceeded.load(Ordering::Relaxed));
}
