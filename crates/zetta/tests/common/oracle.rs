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
