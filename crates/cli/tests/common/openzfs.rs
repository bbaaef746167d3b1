//! Real OpenZFS pools for the CLI tests: OpenZFS's own fixture images (from
//! `scripts/oracle.sh`, unpacked by zetta's `tests/common/oracle.rs`, shared here as
//! `oracle`) placed in a lab directory for `zpool import -d`.

#[path = "../../../zetta/tests/common/oracle.rs"]
pub mod oracle;
#[path = "../../../zetta/tests/common/ztest.rs"]
pub mod ztest;

use super::Lab;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Decompresses fixtures into `lab.dir/sub` (every device of each one) and returns that
/// directory. The images are mostly zeros: their holes are punched so dozens fit in /tmp.
pub fn place(lab: &Lab, sub: &str, rels: &[&str]) -> PathBuf {
    let dir = lab.dir.join(sub);
    std::fs::create_dir_all(&dir).unwrap();
    for rel in rels {
        let fx = oracle::fixture(rel);
        for entry in std::fs::read_dir(fx.file.parent().unwrap()).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                let dest = dir.join(entry.file_name());
                std::fs::rename(entry.path(), &dest).unwrap();
                let _ = std::process::Command::new("fallocate")
                    .arg("--dig-holes")
                    .arg(&dest)
                    .status();
            }
        }
    }
    dir
}

/// OpenZFS's `zdb -e -p DIR ARGS` (the oracle of the format tests), which must exit 0;
/// its stdout.
pub fn zdb_ok(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(oracle::zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "zdb {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
