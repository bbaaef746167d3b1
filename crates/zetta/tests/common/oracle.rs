//! The OpenZFS oracle for tests: OpenZFS 2.3's userspace tools and the pools its own test
//! suite ships, as scripts/oracle.sh installs them (into /opt/zetta-oracle, or
//! $ZETTA_ORACLE_PREFIX). Tests that compare Zetta's reading of real OpenZFS bytes with what
//! OpenZFS's `zdb` says use these.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn oracle_prefix() -> PathBuf {
    PathBuf::from(
        std::env::var_os("ZETTA_ORACLE_PREFIX").unwrap_or_else(|| "/opt/zetta-oracle".into()),
    )
}

/// OpenZFS's zdb from the oracle prefix; never zfs-fuse's /usr/sbin/zdb.
pub fn zdb() -> PathBuf {
    let zdb = std::env::var_os("ZETTA_ZDB")
        .map(PathBuf::from)
        .unwrap_or_else(|| oracle_prefix().join("sbin/zdb"));
    assert!(
        zdb.is_file(),
        "{} is missing: run scripts/oracle.sh (scripts/setup.sh does) to install OpenZFS's zdb",
        zdb.display()
    );
    zdb
}

pub fn functional(rel: &str) -> PathBuf {
    let path = oracle_prefix()
        .join("usr/share/zfs/zfs-tests/tests/functional")
        .join(rel);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/oracle.sh (scripts/setup.sh does) to unpack zfs-test",
        path.display()
    );
    path
}

/// A fixture decompressed into its own temp dir, removed on drop.
pub struct Fixture {
    pub dir: PathBuf,
    pub file: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn fixture(rel: &str) -> Fixture {
    let src = functional(rel);
    let base = Path::new(rel)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("fixture")
        .to_string();
    // Tests run in parallel threads and may decompress the same fixture: one dir per call.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("zetta-oracle-{}-{n}-{base}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stem = base
        .trim_end_matches(".bz2")
        .trim_end_matches(".Z")
        .to_string();
    let file = dir.join(stem);
    if rel.ends_with(".tar.gz") {
        // One sparse image inside (compression/testpool_zstd.tar.gz).
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&src)
            .arg("-C")
            .arg(&dir)
            .status()
            .unwrap_or_else(|e| panic!("tar: {e}"));
        assert!(status.success(), "tar -xzf {} failed", src.display());
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .expect("an image in the archive")
            .unwrap()
            .path();
        return Fixture { dir, file };
    }
    let tool = if rel.ends_with(".bz2") {
        "bunzip2"
    } else {
        "gzip"
    };
    let out = std::fs::File::create(&file).unwrap();
    let status = Command::new(tool)
        .arg("-dc")
        .arg(&src)
        .stdout(out)
        .status()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(status.success(), "{tool} -dc {} failed", src.display());
    Fixture { dir, file }
}

/// One object as `zdb -ddddd POOL/FS` prints it: the header row, the ZPL attributes of its
/// bonus (znode or system attributes) and the entries of its ZAP, all as zdb spells them.
/// Times are zdb's `ctime(3)` text (second resolution), modes are octal as zdb prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZdbObject {
    pub object: i64,
    pub levels: u32,
    pub type_name: String,
    /// `bonus  <type>` of the second header row, if any.
    pub bonus_type: Option<String>,
    /// `dnode maxblkid: N`.
    pub max_block_id: Option<u64>,
    /// Tab-separated `name\tvalue` attribute lines (`path`, `uid`, `mode`, `size`, …).
    pub attrs: Vec<(String, String)>,
    /// `name = value` lines of a micro or fat ZAP (values as printed: `7 (type: Regular File)`).
    pub zap: Vec<(String, String)>,
}

impl ZdbObject {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `zdb -e -p DIR -bcc POOL` on a pool Zetta wrote: exit 0, "No leaks (block sum matches
/// space maps exactly)", and none of zdb's words for a leak ("block traversal size X !=
/// alloc Y (leaked Z)", "leaked space: vdev ..."), a checksum or read error ("Got error",
/// "Error counts") or a failed assertion ("verify nothing leaked" is its banner). `when`
/// names the moment checked in the failure message.
pub fn assert_zdb_no_leaks(dir: &Path, pool: &str, when: &str) {
    let out = Command::new(zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(["-bcc", pool])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "zdb -bcc {pool} {when}: {stdout}{stderr}"
    );
    assert!(
        stdout.contains("No leaks (block sum matches space maps exactly)"),
        "zdb -bcc {pool} {when}: {stdout}{stderr}"
    );
    for word in [
        "(leaked",
        "leaked space",
        "!= alloc",
        "error",
        "Error",
        "ASSERT",
    ] {
        assert!(
            !stdout.contains(word) && !stderr.contains(word),
            "zdb -bcc {pool} {when} said {word:?}: {stdout}{stderr}"
        );
    }
}

/// Runs `zdb -e -p DIR -ddddd TARGET` (TARGET a pool, `POOL/FS` or `POOL/FS@SNAP`; the pool
/// alone dumps the MOS) and parses every object it prints.
pub fn zdb_objects(dir: &Path, target: &str) -> Vec<ZdbObject> {
    // -A: zdb 2.3 asserts on some old pools' object counts (zfs-pool-v1) and would abort;
    // TZ=UTC: its times are ctime(3) text in the local zone.
    let out = Command::new(zdb())
        .env("TZ", "UTC")
        .arg("-A")
        .arg("-e")
        .arg("-p")
        .arg(dir)
        .arg("-ddddd")
        .arg(target)
        .output()
        .unwrap_or_else(|e| panic!("zdb: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "zdb -ddddd {target} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_zdb_objects(&text)
}

/// The parser behind `zdb_objects`, for text already captured.
pub fn parse_zdb_objects(text: &str) -> Vec<ZdbObject> {
    let mut objects: Vec<ZdbObject> = Vec::new();
    let mut lines = text.lines().peekable();
    let mut in_zap = false;
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.starts_with("Object  lvl") {
            in_zap = false;
            let Some(row) = lines.next() else { break };
            let cols: Vec<&str> = row.split_whitespace().collect();
            if cols.len() < 9 {
                continue;
            }
            let mut object = ZdbObject {
                object: cols[0].parse().unwrap_or(i64::MIN),
                levels: cols[1].parse().unwrap_or(0),
                type_name: cols[8..].join(" "),
                ..ZdbObject::default()
            };
            if let Some(next) = lines.peek() {
                if let Some(at) = next.find("bonus  ") {
                    object.bonus_type = Some(next[at + 7..].trim().to_string());
                    lines.next();
                }
            }
            objects.push(object);
            continue;
        }
        let Some(object) = objects.last_mut() else {
            continue;
        };
        if let Some(rest) = trimmed.strip_prefix("dnode maxblkid: ") {
            object.max_block_id = rest.trim().parse().ok();
        } else if trimmed.starts_with("microzap:") || trimmed.starts_with("Fat ZAP stats:") {
            in_zap = true;
        } else if trimmed.starts_with("Indirect blocks:") {
            in_zap = false;
        } else if in_zap && line.starts_with("\t\t") && trimmed.contains(" = ") {
            // Fat ZAP statistics are `name: value`; entries are `name = value`.
            if let Some((name, value)) = trimmed.split_once(" = ") {
                object
                    .zap
                    .push((name.to_string(), value.trim().to_string()));
            }
        } else if !in_zap && line.starts_with('\t') && !line.starts_with("\t\t") {
            if let Some((name, value)) = trimmed.split_once(char::is_whitespace) {
                if !name.ends_with(':') && name != "dnode" {
                    object
                        .attrs
                        .push((name.to_string(), value.trim().to_string()));
                }
            }
        }
    }
    objects
}

/// The decompressed devices of one pool in a fresh directory, removed on drop (for
/// `zdb -e -p DIR`, which wants a pool's devices side by side).
pub struct PoolDir {
    pub dir: PathBuf,
    /// The device files, in the order of the fixtures given.
    pub devices: Vec<PathBuf>,
}

impl Drop for PoolDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Decompresses every fixture of a pool (its devices) into one fresh directory.
pub fn unpack<S: AsRef<str>>(rels: &[S]) -> PoolDir {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("zetta-oracle-pool-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut devices = Vec::new();
    for rel in rels {
        let f = fixture(rel.as_ref());
        let to = dir.join(f.file.file_name().expect("a file name"));
        std::fs::rename(&f.file, &to).expect("move the fixture");
        devices.push(to);
    }
    PoolDir { dir, devices }
}

/// What C's `ctime()` prints for `secs` in UTC, without the newline (zdb's times, with
/// TZ=UTC): `Fri Nov 27 08:27:28 2026`.
pub fn ctime_utc(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

/// The devices at `paths`, opened read-only.
pub fn open_devices(paths: &[PathBuf]) -> Vec<zetta::io::DeviceRef> {
    paths
        .iter()
        .map(|p| {
            std::sync::Arc::new(zetta::io::FileDevice::open_read_only(p.to_str().unwrap()).unwrap())
                as zetta::io::DeviceRef
        })
        .collect()
}

/// The one pool on `devices`, opened by the part-1 reader (also a pool Zetta's engine
/// would import read-write, as `unclean_export` is since session 17).
pub fn open_pool(devices: &[zetta::io::DeviceRef]) -> zetta::spa::openzfs::pool::OpenZfsPool {
    let candidates = zetta::spa::openzfs::discover::find_pools_with_zetta(devices, 0);
    assert_eq!(candidates.len(), 1, "one pool on the devices");
    zetta::spa::openzfs::pool::OpenZfsPool::open_devices(&candidates[0], devices)
        .unwrap_or_else(|e| panic!("{}: {e}", candidates[0].name))
}

/// OpenZFS's `zhack`, which writes to a pool in userspace (libzpool).
#[allow(dead_code)]
pub fn zhack() -> PathBuf {
    let zhack = oracle_prefix().join("sbin/zhack");
    assert!(
        zhack.is_file(),
        "{} is missing: run scripts/oracle.sh to install OpenZFS's zhack",
        zhack.display()
    );
    zhack
}

/// Our `/dev/zfs` shim for libzpool tools (`crates/zetta/tests/shim/devzfs.c`: libzpool
/// only needs `open("/dev/zfs")` to succeed), compiled into `dir` with `cc`; pass it as
/// `LD_PRELOAD`.
#[allow(dead_code)]
pub fn build_devzfs_shim(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zetta/tests/shim/devzfs.c");
    let out = dir.join("devzfs.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc {} failed", source.display());
    out
}
