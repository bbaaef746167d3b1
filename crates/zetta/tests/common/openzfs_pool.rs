//! Opening a real OpenZFS pool's devices for the zio/openzfs tests (included with `#[path]`
//! by tests/openzfs_blkptr.rs and tests/openzfs_read.rs): fixtures decompressed into one
//! directory, label 0 configs, the newest uberblock's rootbp, zdb's view of raw blocks and
//! of block pointers. Minimal on purpose: the label and uberblock codecs proper live in
//! vdev/openzfs.

use crate::common::oracle;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zetta::byteorder::ByteOrder;
use zetta::io::{BlockDevice, DeviceRef, FileDevice};
use zetta::nvpair_xdr::{self, XdrNvList};
use zetta::zio::openzfs::blkptr::BlockPointer;
use zetta::zio::openzfs::read::PoolDevices;
use zetta::zio::openzfs::vdev_map::PoolVdevs;

const BLOCKFILES: &str = "cli_root/zpool_upgrade/blockfiles";

/// Every pool the tests read: (name for messages, fixture files of its devices).
pub fn pools() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for version in ["v1", "v2", "v3"] {
        out.push((
            format!("zfs-pool-{version}"),
            vec![format!("{BLOCKFILES}/zfs-pool-{version}.dat.bz2")],
        ));
        for layout in ["stripe", "mirror", "raidz"] {
            out.push((
                format!("zfs-pool-{version}{layout}"),
                (1..=3)
                    .map(|i| format!("{BLOCKFILES}/zfs-pool-{version}{layout}{i}.dat.bz2"))
                    .collect(),
            ));
        }
    }
    out.push((
        "zfs-pool-v3raidz2".to_string(),
        (1..=3)
            .map(|i| format!("{BLOCKFILES}/zfs-pool-v3raidz2{i}.dat.bz2"))
            .collect(),
    ));
    out.push((
        "testpool_zstd".to_string(),
        vec!["compression/testpool_zstd.tar.gz".to_string()],
    ));
    out.push((
        "sparc.migratedpool".to_string(),
        vec!["history/sparc.migratedpool.DAT.Z".to_string()],
    ));
    out
}

pub use crate::common::oracle::unpack;

/// An opened pool: its devices and name.
pub struct OpenPool {
    pub name: String,
    pub devices: PoolDevices,
    /// The devices in file name order.
    pub files: Vec<(PathBuf, DeviceRef)>,
}

/// Label 0's config nvlist of a device (bytes 16 KiB .. 128 KiB).
pub fn label0_config(device: &dyn BlockDevice) -> XdrNvList {
    let mut buf = vec![0u8; 112 << 10];
    device.read_at(16 << 10, &mut buf).expect("label 0");
    nvpair_xdr::unpack(&buf).expect("label 0 config").list
}

/// Opens every device file in `dir` (read-only) as one pool.
pub fn open(dir: &Path) -> OpenPool {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("pool dir")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.sort();
    let mut configs = Vec::new();
    let mut leaves: HashMap<u64, DeviceRef> = HashMap::new();
    let mut files = Vec::new();
    for path in paths {
        let device: DeviceRef =
            Arc::new(FileDevice::open_read_only(path.to_str().expect("utf-8")).expect("open"));
        let config = label0_config(device.as_ref());
        let guid = config.get_u64("guid").expect("leaf guid");
        leaves.insert(guid, device.clone());
        files.push((path, device));
        configs.push(config);
    }
    let name = configs[0].get_str("name").expect("pool name").to_string();
    let vdevs = PoolVdevs::from_configs(configs.iter()).expect("vdev tree");
    OpenPool {
        name,
        devices: PoolDevices::new(vdevs, leaves),
        files,
    }
}

/// The rootbp of the newest uberblock in label 0's ring over all devices (magic 0x00bab10c
/// at byte 0 in either order, txg at byte 16, rootbp at byte 40), and its txg.
pub fn newest_rootbp(pool: &OpenPool) -> (u64, BlockPointer) {
    let mut best: Option<(u64, BlockPointer)> = None;
    for (_, device) in &pool.files {
        let config = label0_config(device.as_ref());
        let ashift = config
            .get_nvlist("vdev_tree")
            .and_then(|t| t.get_u64("ashift"))
            .unwrap_or(9);
        let slot = 1usize << ashift.clamp(10, 13);
        let mut ring = vec![0u8; 128 << 10];
        device
            .read_at(128 << 10, &mut ring)
            .expect("uberblock ring");
        for chunk in ring.chunks_exact(slot) {
            let order = [ByteOrder::Little, ByteOrder::Big]
                .into_iter()
                .find(|o| o.u64_at(chunk, 0) == Ok(0x00ba_b10c));
            let Some(order) = order else { continue };
            let txg = order.u64_at(chunk, 16).expect("txg");
            let bp = BlockPointer::decode(order, chunk, 40).expect("rootbp");
            if best.as_ref().is_none_or(|(t, _)| txg > *t) {
                best = Some((txg, bp));
            }
        }
    }
    best.expect("a valid uberblock")
}

fn zdb_output(args: &[&str]) -> Vec<u8> {
    let out = Command::new(oracle::zdb())
        .args(args)
        .output()
        .expect("zdb runs");
    assert!(
        out.status.success(),
        "zdb {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// zdb's text of every block pointer of MOS objects (`-dddddd -bbbbbb POOL 0:-1`): the
/// rootbp line, and per object the pointers in the order zdb visits them.
pub fn zdb_mos_blkptrs(dir: &Path, pool: &str) -> (String, BTreeMap<u64, Vec<String>>) {
    let dir = dir.to_str().expect("utf-8");
    let text = String::from_utf8(zdb_output(&[
        "-e", "-p", dir, "-dddddd", "-bbbbbb", pool, "0:-1",
    ]))
    .expect("utf-8");
    let rootbp = text
        .lines()
        .find(|l| l.starts_with("Dataset mos"))
        .and_then(|l| l.split_once("rootbp "))
        .map(|(_, bp)| bp.to_string())
        .expect("zdb prints the MOS rootbp");
    let mut objects: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut current: Option<u64> = None;
    let mut header = false;
    for line in text.lines() {
        if line.trim_start().starts_with("Object  lvl") {
            header = true;
            continue;
        }
        if header {
            header = false;
            current = line.split_whitespace().next().and_then(|t| t.parse().ok());
            if let Some(id) = current {
                objects.entry(id).or_default();
            }
            continue;
        }
        let mut tokens = line.split_whitespace();
        let (Some(offset), Some(level)) = (tokens.next(), tokens.next()) else {
            continue;
        };
        let is_bp_line = offset.chars().all(|c| c.is_ascii_hexdigit())
            && level.len() > 1
            && level.starts_with('L')
            && level[1..].chars().all(|c| c.is_ascii_hexdigit());
        if let (true, Some(id)) = (is_bp_line, current) {
            let bp_text = tokens.collect::<Vec<_>>().join(" ");
            objects.entry(id).or_default().push(bp_text);
        }
    }
    (rootbp, objects)
}

/// Walks a block tree in zdb's order (a pointer, then its children), calling `visit` with
/// each pointer born in some txg (holes without birth are skipped, as zdb does) and its level
/// and block id; `logical` fetches an indirect block's logical bytes.
pub fn walk(
    bp: &BlockPointer,
    blkid: u64,
    logical: &mut dyn FnMut(&BlockPointer) -> Vec<u8>,
    visit: &mut dyn FnMut(&BlockPointer, u64),
) {
    if bp.logical_birth() == 0 {
        return;
    }
    visit(bp, blkid);
    if bp.level() == 0 || bp.is_hole() || bp.is_embedded() {
        return;
    }
    let bytes = logical(bp);
    let per_block = (bytes.len() / 128) as u64;
    for i in 0..per_block {
        let child =
            BlockPointer::decode(bp.byte_order(), &bytes, (i * 128) as usize).expect("128 bytes");
        walk(&child, blkid * per_block + i, logical, visit);
    }
}

/// The block pointers of a dnode (`dnode_phys_t`: nblkptr at byte 3, pointers from byte 64)
/// and its extra slot count (byte 12).
pub fn dnode_blkptrs(dnode: &[u8], order: ByteOrder) -> (u8, Vec<BlockPointer>, usize) {
    let object_type = dnode[0];
    let nblkptr = usize::from(dnode[3]).min(3);
    let extra_slots = usize::from(dnode[12]);
    let bps = (0..nblkptr)
        .map(|i| BlockPointer::decode(order, dnode, 64 + 128 * i).expect("dnode blkptr"))
        .collect();
    (object_type, bps, extra_slots)
}

/// Every block pointer (born in some txg) of every MOS object, in zdb's order, object 0 (the
/// meta-dnode) included, found from the newest rootbp; `logical` gives a block's logical
/// bytes (zdb decompresses them in these tests).
pub fn mos_objects(
    opened: &OpenPool,
    logical: &mut dyn FnMut(&BlockPointer) -> Vec<u8>,
) -> (BlockPointer, BTreeMap<u64, Vec<BlockPointer>>) {
    let (_, rootbp) = newest_rootbp(opened);
    let objset = objset_objects(&rootbp, logical);
    (rootbp, objset.blkptrs)
}

/// The objects of one objset: each object's block pointers in zdb's order, and its dnode.
pub struct Objset {
    pub blkptrs: BTreeMap<u64, Vec<BlockPointer>>,
    /// (dnode bytes, their byte order) by object.
    pub dnodes: BTreeMap<u64, (Vec<u8>, ByteOrder)>,
}

/// Walks the objset `objset_bp` names (objset_phys: the meta-dnode at byte 0).
pub fn objset_objects(
    objset_bp: &BlockPointer,
    logical: &mut dyn FnMut(&BlockPointer) -> Vec<u8>,
) -> Objset {
    let objset = logical(objset_bp);
    let (_, meta_bps, _) = dnode_blkptrs(&objset[..512], objset_bp.byte_order());
    let mut blkptrs: BTreeMap<u64, Vec<BlockPointer>> = BTreeMap::new();
    let mut dnodes = BTreeMap::new();
    let mut dnode_blocks = Vec::new();
    for bp in &meta_bps {
        walk(bp, 0, logical, &mut |bp, blkid| {
            blkptrs.entry(0).or_default().push(*bp);
            if bp.level() == 0 && !bp.is_hole() {
                dnode_blocks.push((*bp, blkid));
            }
        });
    }
    for (bp, blkid) in dnode_blocks {
        let bytes = logical(&bp);
        let per_block = bytes.len() / 512;
        let mut slot = 0usize;
        while slot < per_block {
            let object = blkid * per_block as u64 + slot as u64;
            let (object_type, bps, extra) =
                dnode_blkptrs(&bytes[slot * 512..(slot + 1) * 512], bp.byte_order());
            let end = ((slot + 1 + extra) * 512).min(bytes.len());
            let dnode = bytes[slot * 512..end].to_vec();
            slot += 1 + extra;
            if object_type == 0 || object == 0 {
                continue;
            }
            dnodes.insert(object, (dnode, bp.byte_order()));
            let list = blkptrs.entry(object).or_default();
            for child in &bps {
                walk(child, 0, logical, &mut |bp, _| list.push(*bp));
            }
        }
    }
    Objset { blkptrs, dnodes }
}

/// The objset pointer of every DSL dataset of the MOS (bonus type 16, byte 4 of the dnode; the
/// object type is a ZAP on extensible datasets): `ds_bp` at byte 128 of the bonus
/// (`dsl_dataset_phys_t`), which follows the dnode's block pointers.
pub fn dataset_objset_bps(mos: &Objset) -> BTreeMap<u64, BlockPointer> {
    let mut out = BTreeMap::new();
    for (&object, (dnode, order)) in &mos.dnodes {
        if dnode[4] != 16 {
            continue;
        }
        let bonus = 64 + 128 * usize::from(dnode[3]);
        if let Ok(bp) = BlockPointer::decode(*order, dnode, bonus + 128) {
            if !bp.is_hole() {
                out.insert(object, bp);
            }
        }
    }
    out
}

/// zdb's text of every block pointer of every dataset it dumps (`-dddddd -bbbbbb POOL`), by
/// dataset ID (its DSL dataset object) and object. `-A`: zdb 2.3 asserts on the object
/// counts of the old (v1-v4) pools after dumping each objset; the dump itself is complete.
pub fn zdb_dataset_blkptrs(dir: &Path, pool: &str) -> BTreeMap<u64, BTreeMap<u64, Vec<String>>> {
    let dir = dir.to_str().expect("utf-8");
    let out = Command::new(oracle::zdb())
        .args(["-A", "-e", "-p", dir, "-dddddd", "-bbbbbb", pool])
        .output()
        .expect("zdb runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut datasets: BTreeMap<u64, BTreeMap<u64, Vec<String>>> = BTreeMap::new();
    let mut dataset: Option<u64> = None;
    let mut current: Option<u64> = None;
    let mut header = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Dataset ") {
            dataset = rest
                .split_once(", ID ")
                .and_then(|(_, r)| r.split(',').next())
                .and_then(|id| id.trim().parse().ok());
            if rest.starts_with("mos ") {
                dataset = None;
            }
            current = None;
            continue;
        }
        let Some(ds) = dataset else { continue };
        if line.trim_start().starts_with("Object  lvl") {
            header = true;
            continue;
        }
        if header {
            header = false;
            current = line.split_whitespace().next().and_then(|t| t.parse().ok());
            if let Some(id) = current {
                datasets.entry(ds).or_default().entry(id).or_default();
            }
            continue;
        }
        let mut tokens = line.split_whitespace();
        let (Some(offset), Some(level)) = (tokens.next(), tokens.next()) else {
            continue;
        };
        let is_bp_line = offset.chars().all(|c| c.is_ascii_hexdigit())
            && level.len() > 1
            && level.starts_with('L')
            && level[1..].chars().all(|c| c.is_ascii_hexdigit());
        if let (true, Some(id)) = (is_bp_line, current) {
            let bp_text = tokens.collect::<Vec<_>>().join(" ");
            datasets
                .entry(ds)
                .or_default()
                .entry(id)
                .or_default()
                .push(bp_text);
        }
    }
    datasets
}

/// `bp` with only its DVA `index` (moved to slot 0), to read one copy.
pub fn only_dva(bp: &BlockPointer, index: usize) -> BlockPointer {
    bp.only_copy(index)
}

/// `zdb -R` of DVA[0] of many pointers in one run: their physical bytes, in order.
pub fn zdb_raw_blocks(dir: &Path, pool: &str, bps: &[BlockPointer]) -> Vec<Vec<u8>> {
    zdb_blocks(dir, pool, bps, false)
}

/// `zdb -R` of DVA[0] of many pointers in one run: their physical bytes or, decompressed by
/// zdb (`d`), their logical bytes, in order.
pub fn zdb_blocks(dir: &Path, pool: &str, bps: &[BlockPointer], logical: bool) -> Vec<Vec<u8>> {
    let compressed = |bp: &BlockPointer| logical && bp.compression() != 2 && bp.compression() != 0;
    let size = |bp: &BlockPointer| {
        if logical {
            bp.lsize_bytes()
        } else {
            bp.psize_bytes()
        }
    };
    let specs: Vec<String> = bps
        .iter()
        .map(|bp| {
            let dva = bp.dva(0);
            let offset = dva.offset_bytes().expect("offset");
            if compressed(bp) {
                format!(
                    "{}:{offset:x}:{:x}/{:x}:dr",
                    dva.vdev,
                    bp.lsize_bytes(),
                    bp.psize_bytes()
                )
            } else {
                format!("{}:{offset:x}:{:x}:r", dva.vdev, size(bp))
            }
        })
        .collect();
    let mut out = Vec::new();
    // A few dozen blocks per run keeps the command line short.
    for (chunk_bps, chunk_specs) in bps.chunks(64).zip(specs.chunks(64)) {
        let mut args = vec!["-e", "-p", dir.to_str().expect("utf-8"), "-R", pool];
        args.extend(chunk_specs.iter().map(String::as_str));
        let bytes = zdb_output(&args);
        let total: u64 = chunk_bps.iter().map(size).sum();
        assert_eq!(bytes.len() as u64, total, "zdb -R {chunk_specs:?}");
        let mut rest = &bytes[..];
        for bp in chunk_bps {
            let (head, tail) = rest.split_at(size(bp) as usize);
            out.push(head.to_vec());
            rest = tail;
        }
    }
    out
}
