//! Dirty time logs as OpenZFS keeps them (issue 14, format 25): a leaf's DTL is a space
//! map object in the MOS named by its config's `DTL` key (`vdev_dtl_sync`), read back at
//! import (`vdev_dtl_load`), driving resilver, and kept (empty) once resilvered.
//!
//! Why: Zetta used to keep a one-range "missing through txg" in a private config key
//! (`org.zetta:missing_txg`), which OpenZFS ignores: a pool exported with a side awaiting
//! resilver came back in OpenZFS with that side trusted for blocks it never got. The test
//! makes a degraded mirror (one side offline while data is written), exports it, has
//! OpenZFS's zdb read the config and the DTL object and check the space maps, imports it
//! again (the DTL must come back from the MOS), brings the side online (the resilver must
//! copy the missed txgs and only those) and checks that side alone holds everything.

mod common;

use common::oracle::zdb;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
use zetta::rand::SeededRng;
use zetta::spa::{find_pools, CreateOptions, Spa, TopKind, TopSpec};
use zetta::types::ObjectId;

const DISK_SIZE_BYTES: u64 = 128 << 20;

/// A fresh directory of `count` sparse disks (`common::scratch_disks`).
fn disks(name: &str, count: usize) -> (PathBuf, Vec<String>) {
    common::scratch_disks(&format!("zetta-dtl-{name}"), count, DISK_SIZE_BYTES)
}

fn open(paths: &[String]) -> Vec<DeviceRef> {
    paths
        .iter()
        .map(|p| Arc::new(FileDevice::open(p).unwrap()) as DeviceRef)
        .collect()
}

fn import(paths: &[String]) -> Spa {
    let found = find_pools(&open(paths));
    Spa::import(found.first().expect("the pool"), None, 64 << 20).unwrap()
}

fn write_random(spa: &mut Spa, size: usize, seed: u64) -> (ObjectId, Vec<u8>) {
    let mut data = vec![0u8; size];
    SeededRng::new(seed).fill(&mut data);
    let id = spa.create_object(512).unwrap();
    spa.write_object(id, 0, &data).unwrap();
    spa.sync().unwrap();
    (id, data)
}

/// zdb's stdout+stderr for `zdb -e -p DIR ARGS`.
fn zdb_text(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "zdb {args:?}: {text}");
    text
}

/// The `DTL` values `zdb -C` prints for the pool's leaves, in tree order.
fn zdb_dtl_objects(dir: &Path) -> Vec<u64> {
    zdb_text(dir, &["-C", "tank"])
        .lines()
        .filter_map(|line| line.trim().strip_prefix("DTL: "))
        .map(|n| n.trim().parse().unwrap())
        .collect()
}

#[test]
fn offline_side_misses_txgs_kept_in_a_dtl_space_map_and_resilvered_on_online() {
    let (dir, paths) = disks("offline", 2);
    let devices = open(&paths);
    let spec = TopSpec {
        kind: TopKind::Mirror,
        leaves: paths.iter().cloned().zip(devices).collect(),
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    let (before, before_data) = write_random(&mut spa, 4 << 20, 1);
    // A fresh pool has no DTL object (OpenZFS makes one the first time a DTL is synced).
    assert!(spa.root.leaves().iter().all(|l| l.dtl.object() == 0));
    spa.set_offline(&paths[1], true).unwrap();
    let offline_txg = spa.last_synced_txg().0;
    let (during, during_data) = write_random(&mut spa, 1 << 20, 2);
    let (during2, during2_data) = write_random(&mut spa, 1 << 20, 3);
    let leaf = spa.root.leaves()[1];
    let missed = leaf.dtl.ranges();
    assert_eq!(missed.len(), 1, "one outage, one range: {missed:?}");
    let (first, count) = missed[0];
    assert!(first <= offline_txg && first + count > spa.last_synced_txg().0 - 1);
    assert!(
        leaf.dtl.object() != 0,
        "the offline side's DTL is in the MOS"
    );
    assert_eq!(
        spa.root.leaves()[0].dtl.object(),
        0,
        "the online side missed nothing"
    );
    spa.export().unwrap();

    // OpenZFS reads the config's `DTL` and the space maps agree with every block, the DTL
    // object's included.
    let zdb_objects = zdb_dtl_objects(&dir);
    assert_eq!(zdb_objects.len(), 1, "zdb -C names one DTL");
    common::oracle::assert_zdb_no_leaks(&dir, "tank", "with a DTL");
    // zdb loads the map (`vdev_dtl_load`) and prints the leaf's DTL_MISSING ranges and
    // the map's words: the txgs Zetta recorded, in one ALLOC entry after a debug word.
    let dtls = zdb_text(&dir, &["-dddddd", "tank"]);
    // (Export synced one more txg with the side still offline: the range grew by it.)
    let want = format!(
        "missing [{first},{}) length {}",
        first + count + 1,
        count + 1
    );
    assert!(dtls.contains(&want), "zdb's DTLs lack {want:?}: {dtls}");
    assert!(
        dtls.contains(&format!("space map object {}:", zdb_objects[0])),
        "zdb dumps DTL object {}: {dtls}",
        zdb_objects[0]
    );
    assert_eq!(
        dtls.matches("missing [").count(),
        1,
        "only the offline side: {dtls}"
    );

    // Import reads the DTL back from the MOS: the side still misses the same txgs (and
    // every txg synced while it stays offline).
    let mut spa = import(&paths);
    assert!(
        !spa.needs_resilver(),
        "nothing to resilver while the side is offline"
    );
    let back = spa.root.leaves()[1].dtl.ranges();
    assert_eq!(back[0].0, first, "the range starts where it did: {back:?}");
    assert!(back[0].1 > count);
    // Blocks written before the outage are on the offline side: the resilver copies the
    // missed txgs only (about 2 MiB of data and the MOS blocks of those txgs), not 4 MiB.
    spa.set_offline(&paths[1], false).unwrap();
    assert!(!spa.needs_resilver());
    let copied = spa.scan.repaired_bytes;
    assert!(
        (2 << 20..4 << 20).contains(&copied),
        "resilver copied {copied} bytes for 2 MiB of missed data"
    );
    assert!(spa.root.leaves()[1].dtl.is_empty());
    // The resilvered side alone holds everything.
    spa.set_offline(&paths[0], true).unwrap();
    spa.zio.arc.clear();
    assert_eq!(
        spa.read_object(before, 0, before_data.len()).unwrap(),
        before_data
    );
    assert_eq!(
        spa.read_object(during, 0, during_data.len()).unwrap(),
        during_data
    );
    assert_eq!(
        spa.read_object(during2, 0, during2_data.len()).unwrap(),
        during2_data
    );
    spa.set_offline(&paths[0], false).unwrap();
    spa.export().unwrap();

    // After a scan every leaf's DTL is synced (empty, kept), as `dsl_scan_done` does.
    let after = zdb_dtl_objects(&dir);
    assert_eq!(
        after.len(),
        2,
        "both leaves name a DTL after the resilver: {after:?}"
    );
    assert!(
        after.contains(&zdb_objects[0]),
        "the DTL object is kept, not remade"
    );
    common::oracle::assert_zdb_no_leaks(&dir, "tank", "after the resilver");
    let dtls = zdb_text(&dir, &["-dddddd", "tank"]);
    assert!(
        !dtls.contains("missing ["),
        "resilvered: no DTL left: {dtls}"
    );
    let spa = import(&paths);
    assert!(spa.root.leaves().iter().all(|l| l.dtl.is_empty()));
    spa.export().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn detach_frees_the_dtl_object() {
    let (dir, paths) = disks("detach", 2);
    let devices = open(&paths);
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![(paths[0].clone(), devices[0].clone())],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    let (id, data) = write_random(&mut spa, 1 << 20, 4);
    spa.attach(&paths[0], &paths[1], devices[1].clone())
        .unwrap();
    let objects: Vec<u64> = spa.root.leaves().iter().map(|l| l.dtl.object()).collect();
    assert!(
        objects.iter().all(|&o| o != 0),
        "attach + resilver: DTLs {objects:?}"
    );
    spa.detach(&paths[0]).unwrap();
    assert_eq!(spa.read_object(id, 0, data.len()).unwrap(), data);
    spa.export().unwrap();
    // The detached leaf's DTL object is gone: zdb would report it leaked otherwise.
    assert_eq!(zdb_dtl_objects(&dir), vec![objects[1]]);
    common::oracle::assert_zdb_no_leaks(&dir, "tank", "after detach");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Why: a mirror side whose writes fail is faulted; every txg it misses from then on must be
/// in its DTL (the txg whose write failed too, though that write may come after the txg's
/// DTL was synced), and `zpool clear` must resilver it: with the other side then gone, the
/// cleared side alone must serve everything. Without the DTL the cleared side would be
/// trusted for blocks it never got.
#[test]
fn a_faulted_side_is_resilvered_after_clear() {
    let a = Arc::new(zetta::io::SimDevice::new("/d/a", 96 << 20, 1));
    let b = Arc::new(zetta::io::SimDevice::new("/d/b", 96 << 20, 2));
    let mirror = TopSpec {
        kind: TopKind::Mirror,
        leaves: vec![
            ("/d/a".to_string(), a.clone() as DeviceRef),
            ("/d/b".to_string(), b.clone() as DeviceRef),
        ],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[mirror], &CreateOptions::default()).unwrap();
    let (id, data) = write_random(&mut spa, 1 << 20, 5);
    b.set_failed(true);
    let (id2, data2) = write_random(&mut spa, 1 << 20, 6);
    let (id3, data3) = write_random(&mut spa, 1 << 20, 7);
    let side = spa.root.leaves()[1];
    assert!(side.faulted.load(std::sync::atomic::Ordering::Relaxed));
    assert!(
        !side.dtl.is_empty(),
        "the faulted side's missed txgs are in its DTL"
    );
    assert!(
        !spa.needs_resilver(),
        "nothing to resilver onto a faulted side"
    );
    b.set_failed(false);
    spa.clear_errors();
    assert!(spa.needs_resilver());
    spa.resilver_if_needed().unwrap();
    assert!(spa.root.leaves()[1].dtl.is_empty());
    a.set_failed(true);
    spa.zio.arc.clear();
    assert_eq!(spa.read_object(id, 0, data.len()).unwrap(), data);
    assert_eq!(spa.read_object(id2, 0, data2.len()).unwrap(), data2);
    assert_eq!(spa.read_object(id3, 0, data3.len()).unwrap(), data3);
}
