//! Test-side access to a real OpenZFS pool image for the DMU and ZAP oracle tests: the
//! newest uberblock's root block pointer, a block reader (Zetta's verified OpenZFS reader,
//! `zio::openzfs::read`, whose bytes tests/openzfs_read.rs checks against `zdb -R`), and a
//! parser for what `zdb -dddd` prints per object.

#![allow(dead_code)]

use crate::common::oracle::{fixture, zdb, Fixture};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use zetta::byteorder::ByteOrder;
use zetta::dmu::openzfs::{objset::ObjsetPhys, raw_bp_byte_order, RawBlkptr};

/// Where allocatable space starts on a leaf vdev (two labels and the boot block).
const VDEV_DATA_START: u64 = 4 << 20;
const UBERBLOCK_MAGIC: u64 = 0x00ba_b10c;

pub struct Pool {
    pub fx: Fixture,
    pub name: String,
    cache: RefCell<HashMap<Vec<u64>, Vec<u8>>>,
    io: std::sync::OnceLock<std::sync::Arc<zetta::dmu::openzfs::reader::PoolIo>>,
}

impl Pool {
    pub fn open(rel: &str, name: &str) -> Pool {
        Pool {
            fx: fixture(rel),
            name: name.to_string(),
            cache: RefCell::new(HashMap::new()),
            io: std::sync::OnceLock::new(),
        }
    }

    /// A pool image checked into `tests/fixtures` as `NAME.xz`, decompressed into its own
    /// temp dir.
    pub fn open_checked_in(file: &str, name: &str) -> Pool {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(file);
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("zetta-ozfs-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join(file.trim_end_matches(".xz"));
        let out = std::fs::File::create(&img).unwrap();
        let status = Command::new("xz")
            .arg("-dc")
            .arg(&src)
            .stdout(out)
            .status()
            .expect("xz runs");
        assert!(status.success(), "xz -dc {} failed", src.display());
        Pool {
            fx: Fixture { dir, file: img },
            name: name.to_string(),
            cache: RefCell::new(HashMap::new()),
            io: std::sync::OnceLock::new(),
        }
    }

    pub fn dev(&self) -> PathBuf {
        self.fx.file.clone()
    }

    /// zdb's stdout for `zdb -AAA -e -p DIR ARGS...` (-AAA: some old fixtures trip zdb's
    /// own object-count assertion, which these tests do not care about).
    pub fn zdb(&self, args: &[&str]) -> String {
        let out = Command::new(zdb())
            .env("ZDB_NO_ZLE", "1")
            .arg("-AAA")
            .arg("-e")
            .arg("-p")
            .arg(&self.fx.dir)
            .args(args)
            .output()
            .expect("zdb runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The root block pointer of the newest uberblock of label 0, and its byte order.
    pub fn rootbp(&self) -> (RawBlkptr, ByteOrder) {
        let f = std::fs::File::open(self.dev()).unwrap();
        let mut ring = vec![0u8; 128 << 10];
        f.read_exact_at(&mut ring, 128 << 10).unwrap();
        let mut best: Option<(u64, RawBlkptr, ByteOrder)> = None;
        for at in (0..ring.len()).step_by(1024) {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                if order.u64_at(&ring, at).unwrap() != UBERBLOCK_MAGIC {
                    continue;
                }
                let txg = order.u64_at(&ring, at + 16).unwrap();
                if best.as_ref().is_none_or(|(t, _, _)| txg > *t) {
                    let bp: RawBlkptr = ring[at + 40..at + 168].try_into().unwrap();
                    best = Some((txg, bp, order));
                }
            }
        }
        let (_, bp, order) = best.expect("an uberblock in label 0");
        (bp, order)
    }

    /// A block's logical bytes.
    pub fn read(&self, bp: &RawBlkptr, order: ByteOrder) -> Result<Vec<u8>, String> {
        let w: Vec<u64> = (0..16).map(|i| order.u64_at(bp, 8 * i).unwrap()).collect();
        if let Some(hit) = self.cache.borrow().get(&w) {
            return Ok(hit.clone());
        }
        // Through Zetta's verified OpenZFS reader (tests/openzfs_read.rs checks its bytes
        // against zdb -R block by block; one zdb run per block here took minutes).
        let data = self.io().read(bp, order).map_err(|e| e.to_string())?;
        self.cache.borrow_mut().insert(w, data.clone());
        Ok(data)
    }

    /// The pool's block reader, built from its labels on first use.
    fn io(&self) -> std::sync::Arc<zetta::dmu::openzfs::reader::PoolIo> {
        self.io
            .get_or_init(|| {
                let device: zetta::io::DeviceRef = std::sync::Arc::new(
                    zetta::io::FileDevice::open_read_only(self.dev().to_str().expect("utf-8"))
                        .expect("open the image"),
                );
                let devices = [device];
                // Since session 17 pools whose features Zetta maintains are the engine's (some
                // images here are); this reader test reads them through the OpenZFS codecs.
                let candidates = zetta::spa::openzfs::discover::find_pools_with_zetta(&devices, 0);
                let candidate = candidates.first().expect("a pool on the image");
                zetta::spa::openzfs::pool::OpenZfsPool::open_devices(candidate, &devices)
                    .expect("the pool opens")
                    .io
            })
            .clone()
    }

    pub fn reader(&self) -> impl FnMut(&RawBlkptr, ByteOrder) -> Result<Vec<u8>, String> + '_ {
        move |bp, order| self.read(bp, order)
    }

    pub fn mos(&self) -> ObjsetPhys {
        let (bp, order) = self.rootbp();
        let data = self.read(&bp, order).unwrap();
        ObjsetPhys::decode(&data, raw_bp_byte_order(&bp, order)).unwrap()
    }

    /// The objset of dataset `ds_obj` (the MOS object number zdb prints as "ID"): the
    /// block pointer at byte 128 of its `dsl_dataset_phys_t` bonus.
    pub fn dataset(&self, mos: &ObjsetPhys, ds_obj: u64) -> ObjsetPhys {
        let dn = mos.dnode(ds_obj, &mut self.reader()).unwrap().unwrap();
        let bp: RawBlkptr = dn.bonus[128..256].try_into().unwrap();
        let data = self.read(&bp, dn.order).unwrap();
        ObjsetPhys::decode(&data, raw_bp_byte_order(&bp, dn.order)).unwrap()
    }
}

/// What `zdb -dddd` prints about one object.
#[derive(Debug, Default, Clone)]
pub struct ZdbObject {
    pub id: i64,
    pub lvl: u8,
    pub iblk: String,
    pub dblk: String,
    pub dnsize: String,
    pub lsize: String,
    pub type_name: String,
    pub bonus: Option<(u64, String)>,
    pub flags: String,
    pub maxblkid: Option<u64>,
    /// Whether zdb dumped it as a ZAP ("microzap:" or "Fat ZAP stats:").
    pub zap: Option<String>,
    /// The `\t\tname = value` lines of a ZAP dump, right-trimmed.
    pub entries: Vec<String>,
}

/// The objects of each dataset zdb dumped, by dataset ID (0 = the MOS).
pub fn parse_dump(text: &str) -> BTreeMap<u64, BTreeMap<i64, ZdbObject>> {
    let mut out: BTreeMap<u64, BTreeMap<i64, ZdbObject>> = BTreeMap::new();
    let mut ds: Option<u64> = None;
    let mut cur: Option<ZdbObject> = None;
    let mut lines = text.lines().peekable();
    let mut flush = |ds: Option<u64>, cur: &mut Option<ZdbObject>| {
        if let (Some(ds), Some(obj)) = (ds, cur.take()) {
            out.entry(ds).or_default().insert(obj.id, obj);
        }
    };
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("Dataset ") {
            flush(ds, &mut cur);
            ds = rest
                .split(", ID ")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .and_then(|s| s.trim().parse().ok());
            continue;
        }
        if line.trim_start().starts_with("Object  lvl") {
            flush(ds, &mut cur);
            let Some(row) = lines.next() else { break };
            let f: Vec<&str> = row.split_whitespace().collect();
            if f.len() < 9 {
                continue;
            }
            let rest = f[8..].join(" ");
            let type_name = rest.split(" (").next().unwrap_or("").to_string();
            let mut obj = ZdbObject {
                id: f[0].parse().unwrap_or(i64::MIN),
                lvl: f[1].parse().unwrap_or(0),
                iblk: f[2].into(),
                dblk: f[3].into(),
                dnsize: f[5].into(),
                lsize: f[6].into(),
                type_name,
                ..Default::default()
            };
            if let Some(next) = lines.peek() {
                let b: Vec<&str> = next.split_whitespace().collect();
                if b.len() >= 3 && b[1] == "bonus" {
                    obj.bonus = Some((b[0].parse().unwrap_or(0), b[2..].join(" ")));
                    lines.next();
                }
            }
            cur = Some(obj);
            continue;
        }
        let Some(obj) = cur.as_mut() else { continue };
        if let Some(f) = line.strip_prefix("\tdnode flags: ") {
            obj.flags = f.trim_end().to_string();
        } else if let Some(m) = line.strip_prefix("\tdnode maxblkid: ") {
            obj.maxblkid = m.trim().parse().ok();
        } else if line.starts_with("\tmicrozap: ") || line.starts_with("\tFat ZAP stats:") {
            obj.zap = Some(line.trim().to_string());
        } else if obj.zap.is_some()
            && line.starts_with("\t\t")
            && !line.starts_with("\t\t\t")
            && line.contains(" = ")
        {
            obj.entries.push(line.trim_end().to_string());
        }
    }
    flush(ds, &mut cur);
    out
}

/// Whether zdb's size column ("512", "16K", "2.50K", "912K") names `bytes` (zdb rounds
/// to three significant digits).
pub fn zdb_size_is(s: &str, bytes: u64) -> bool {
    let (num, mult) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1024.0),
        Some('M') => (&s[..s.len() - 1], 1024.0 * 1024.0),
        Some('G') => (&s[..s.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (s, 1.0),
    };
    let Ok(v) = num.parse::<f64>() else {
        return false;
    };
    let b = bytes as f64;
    (v * mult - b).abs() <= b * 0.006
}
