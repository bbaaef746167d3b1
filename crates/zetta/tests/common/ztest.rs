//! OpenZFS's `ztest` as a writer of real pools for the tests (zetta's and, through a
//! `#[path]` module, the CLI's): one short, small run into a directory.

use super::oracle;
use std::path::{Path, PathBuf};
use std::process::Command;

/// OpenZFS's ztest, as `scripts/oracle.sh` installs it.
pub fn ztest_bin() -> PathBuf {
    oracle::oracle_prefix().join("sbin/ztest")
}

/// Runs ztest once into a fresh `dir`: one 128 MiB file vdev (no mirrors, no raidz), two
/// datasets, four threads, no kills, 10 seconds. Returns whether it exited 0 and left the
/// vdev behind.
pub fn run_ztest(dir: &Path) -> bool {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let sbin = oracle::oracle_prefix().join("sbin");
    let path = format!(
        "{}:{}",
        sbin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(ztest_bin())
        .env("PATH", path)
        .arg("-f")
        .arg(dir)
        .args(["-T", "10", "-k", "0", "-m", "0", "-r", "0", "-K", "raidz"])
        .args(["-v", "1", "-s", "128m", "-d", "2", "-t", "4"])
        .output()
        .expect("ztest runs");
    if !out.status.success() {
        eprintln!(
            "ztest failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    out.status.success() && dir.join("ztest.0a").is_file()
}
