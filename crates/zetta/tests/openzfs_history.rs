//! The pool history of real OpenZFS pools (`spa::openzfs::history`, `nvpair_native`) against
//! what OpenZFS's own `zdb -hh` prints of every record: each record's whole nvlist, so the
//! decoder, the ring-buffer reading and the record order are all checked.

mod common;

use common::oracle::{ctime_utc, unpack, PoolDir};
use std::path::PathBuf;
use std::sync::Arc;
use zetta::byteorder::ByteOrder;
use zetta::io::{DeviceRef, FileDevice};
use zetta::nvpair_xdr::{dump_nvlist, XdrValue};
// With the pools Zetta also writes (`unclean_export` since session 17): these tests read
// OpenZFS's bytes through the reader whoever would import the pool.
use zetta::spa::openzfs::discover::find_pools_with_zetta as find_pools;
use zetta::spa::openzfs::history::{self, HistoryError, Record};
use zetta::spa::openzfs::pool::OpenZfsPool;

const UPGRADE: &str = "cli_root/zpool_upgrade/blockfiles";

fn open(paths: &[PathBuf]) -> OpenZfsPool {
    let devices: Vec<DeviceRef> = paths
        .iter()
        .map(|p| Arc::new(FileDevice::open_read_only(p.to_str().unwrap()).unwrap()) as DeviceRef)
        .collect();
    let candidates = find_pools(&devices, 0);
    assert_eq!(candidates.len(), 1, "{paths:?}");
    OpenZfsPool::open_devices(&candidates[0], &devices)
        .unwrap_or_else(|e| panic!("{}: {e}", candidates[0].name))
}

/// `%F.%T` in UTC.
fn utc(secs: u64) -> String {
    let c = ctime_utc(secs);
    let p: Vec<&str> = c.split_whitespace().collect();
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = months.iter().position(|m| *m == p[1]).unwrap() + 1;
    format!(
        "{}-{m:02}-{:02}.{}",
        p[4],
        p[2].parse::<u32>().unwrap(),
        p[3]
    )
}

fn s(rec: &Record, name: &str) -> String {
    match rec.list.get(name) {
        Some(XdrValue::String(v)) => String::from_utf8_lossy(v).into_owned(),
        other => panic!("{name}: {other:?}"),
    }
}

fn u(rec: &Record, name: &str) -> u64 {
    match rec.list.get(name) {
        Some(XdrValue::Uint64(v)) => *v,
        other => panic!("{name}: {other:?}"),
    }
}

/// What `zdb -hh` prints of these records (`dump_history`), times in UTC.
fn zdb_text(records: &[Record]) -> String {
    let mut out = String::from("\nHistory:\n");
    for rec in records {
        let tbuf = rec.time().map(utc).unwrap_or_default();
        let has = |n: &str| rec.list.get(n).is_some();
        let mut printed = true;
        if has(history::CMD) {
            out += &format!("{tbuf} {}\n", s(rec, history::CMD));
        } else if has(history::INT_EVENT) {
            match history::EVENT_NAMES.get(u(rec, history::INT_EVENT) as usize) {
                Some(name) => {
                    out += &format!(
                        " {tbuf} [internal {name} txg:{}] {}\n",
                        u(rec, history::TXG),
                        s(rec, history::INT_STR)
                    )
                }
                None => printed = false,
            }
        } else if has(history::INT_NAME) {
            out += &format!(
                "{tbuf} [txg:{}] {}",
                u(rec, history::TXG),
                s(rec, history::INT_NAME)
            );
            if has(history::DSNAME) {
                out += &format!(" {} ({})", s(rec, history::DSNAME), u(rec, history::DSID));
            }
            out += &format!(" {}\n", s(rec, history::INT_STR));
        } else if has(history::IOCTL) {
            out += &format!("{tbuf} ioctl {}\n", s(rec, history::IOCTL));
            if let Some(l) = rec.list.get_nvlist(history::INPUT_NVL) {
                out += "    input:\n";
                out += &dump_nvlist(l, 8);
            }
            if let Some(l) = rec.list.get_nvlist(history::OUTPUT_NVL) {
                out += "    output:\n";
                out += &dump_nvlist(l, 8);
            }
        } else {
            printed = false;
        }
        if !printed {
            out += "unrecognized record:\n";
        }
        out += &dump_nvlist(&rec.list, 2);
    }
    out
}

fn zdb_history(pool: &PoolDir, name: &str) -> String {
    let out = std::process::Command::new(common::oracle::zdb())
        .args(["-e", "-p", pool.dir.to_str().unwrap(), "-hh", name])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "zdb -hh {name}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// Why: `zpool history` of an imported OpenZFS pool used to fail ("cannot be read yet"); the
// reader must give back every record OpenZFS's zdb reads from each shipped pool with a
// history (little-endian native records, the SPARC pool's big-endian XDR records, v4..v15,
// modern internal events and ioctl records), field for field and in order.
#[test]
fn every_fixture_history_equals_zdb() {
    let mut rels: Vec<String> = (4..=15)
        .map(|v| format!("{UPGRADE}/zfs-pool-v{v}.dat.bz2"))
        .collect();
    rels.extend(
        [
            "history/i386.migratedpool.DAT.Z",
            "history/sparc.migratedpool.DAT.Z",
            "history/zfs-pool-v4.dat.Z",
            // Modern records: internal events by name with txg, dataset and id, ioctls
            // with their input and output nvlists.
            "cli_root/zpool_import/blockfiles/unclean_export.dat.bz2",
            "cli_root/zpool_import/blockfiles/cryptv0.dat.bz2",
            "cli_root/zpool_import/blockfiles/missing_ivset.dat.bz2",
        ]
        .map(String::from),
    );
    let mut total = 0;
    for rel in &rels {
        let dir = unpack(&[rel]);
        let pool = open(&dir.devices);
        let records = history::read(&pool).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(!records.is_empty(), "{rel}: no records");
        assert_eq!(
            zdb_text(&records),
            zdb_history(&dir, &pool.name),
            "{rel}: history differs from zdb -hh"
        );
        total += records.len();
    }
    assert!(total >= 130, "only {total} records compared");
}

// Why: pools older than version 4 have no history object: the reader says so (the CLI
// turns it into OpenZFS's refusal) rather than failing on a missing object.
#[test]
fn pools_before_v4_have_no_history() {
    for v in 1..=3 {
        let dir = unpack(&[format!("{UPGRADE}/zfs-pool-v{v}.dat.bz2")]);
        let pool = open(&dir.devices);
        assert_eq!(history::read(&pool), Err(HistoryError::NoHistory), "v{v}");
    }
}

// Why: the zstd pool was written by FreeBSD on big-endian powerpc64: its history records are
// natively packed big-endian nvlists, which OpenZFS's own nvlist_unpack refuses on a
// little-endian host (zdb -h prints nothing for it); later records were added on a
// little-endian host, so one stream mixes both orders. Golden vectors from its real bytes:
// the first record's fields, every record re-packed big-endian byte for byte as written,
// and the internal events OpenZFS logs at pool creation.
#[test]
fn big_endian_native_records_of_the_zstd_pool() {
    let dir = unpack(&["compression/testpool_zstd.tar.gz"]);
    let pool = open(&dir.devices);
    let (object, phys) = history::phys(&pool).unwrap();
    assert_eq!(
        (phys.pool_create_len, phys.bof, phys.eof, phys.records_lost),
        (9656, 9656, 29792, 0)
    );
    let records = history::read(&pool).unwrap();
    let first = &records[0];
    assert_eq!(
        s(first, history::INT_STR),
        "pool version 5000; software version zfs-0.7.0-3175-g184df27ee; uts fbsdppc64 \
         13.0-RELEASE 1300139 powerpc"
    );
    assert_eq!(s(first, history::INT_NAME), "create");
    assert_eq!(u(first, history::TXG), 4);
    assert_eq!(first.time(), Some(0x609b_7c6d));
    assert_eq!(s(first, history::HOST), "fbsdppc64");
    assert_eq!(
        s(&records[1], history::INT_STR),
        "feature@async_destroy=enabled"
    );
    assert_eq!(s(&records[1], history::INT_NAME), "set");
    // The first user command ends the creation part.
    let create = records
        .iter()
        .position(|r| r.command().is_some())
        .expect("a zpool create record");
    assert!(records[create]
        .command()
        .unwrap()
        .starts_with("zpool create"));
    // Byte-exact: every record re-packs to the bytes the writer wrote.
    let dn = pool.mos.dnode(object).unwrap();
    let stream = pool.mos.read(&dn, 0, phys.eof as usize).unwrap();
    let mut at = 0;
    let mut big = 0;
    for (i, rec) in records.iter().enumerate() {
        let len = u64::from_le_bytes(stream[at..at + 8].try_into().unwrap()) as usize;
        let raw = &stream[at + 8..at + 8 + len];
        assert_eq!(raw[0], 0, "record {i}: native");
        let order = if raw[1] == 0 {
            big += 1;
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        let packed = zetta::nvpair_native::pack(&rec.list, order).unwrap();
        assert_eq!(packed, raw, "record {i} re-packed");
        zetta::nvpair_native::fuzz_check(raw);
        at += 8 + len;
    }
    assert_eq!(at as u64, phys.eof);
    // Written on powerpc64, then imported on a little-endian host (compress_zstd_bswap):
    // the history holds records of both byte orders.
    assert_eq!((records.len(), big), (99, 60), "records, big-endian ones");
}

// Why: real record bytes are the best seeds for hostile input: flipped bits and cut lengths
// in the zstd pool's records and history stream give errors or other records, never a panic.
#[test]
fn hostile_history_bytes_never_panic() {
    let dir = unpack(&["compression/testpool_zstd.tar.gz"]);
    let pool = open(&dir.devices);
    let (object, phys) = history::phys(&pool).unwrap();
    let dn = pool.mos.dnode(object).unwrap();
    let stream = pool.mos.read(&dn, 0, phys.eof as usize).unwrap();
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let first_len = u64::from_le_bytes(stream[..8].try_into().unwrap()) as usize;
    let first = &stream[8..8 + first_len];
    for _ in 0..20_000 {
        let mut b = first.to_vec();
        for _ in 0..1 + next(4) {
            let i = next(b.len());
            b[i] ^= 1 << next(8);
        }
        zetta::nvpair_native::fuzz_check(&b);
    }
    for _ in 0..2_000 {
        let mut b = stream[..4096].to_vec();
        let i = next(b.len());
        b[i] ^= 1 << next(8);
        let _ = history::parse_records(&b);
    }
}

// Why: the ring buffer must be read as OpenZFS reads it once it has wrapped (records lost,
// bof inside the ring, the tail split at phys_max_off), and legacy internal events
// (`history internal event` numbers, pool version 23) must decode; no shipped fixture has
// either, so zfs-fuse (a second, independent writer) fills a 64 MiB pool's 609 KiB ring with
// long user-property values, and zdb -hh is the oracle.
#[test]
fn wrapped_ring_of_a_zfs_fuse_pool_equals_zdb() {
    assert!(
        common::zfs_fuse::available(),
        "zfs-fuse is missing: scripts/setup.sh installs it (with sanoid)"
    );
    let dir = std::env::temp_dir().join(format!("zetta-ozhist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("mnt")).unwrap();
    let disk = dir.join("hist.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let disk_s = disk.to_string_lossy().into_owned();
    // Removes the directory when the test ends, however it ends.
    let pool_dir = PoolDir {
        dir: dir.clone(),
        devices: vec![disk.clone()],
    };
    let name = format!("hist{}", std::process::id() % 100_000);
    let mut daemon = common::zfs_fuse::ZfsFuse::start();
    daemon.create_pool(&name, &dir.join("mnt/p"), &[&disk_s]);
    daemon.zfs(&["create", &format!("{name}/fs")]);
    daemon.zfs(&["snapshot", &format!("{name}/fs@s1")]);
    for i in 0..60 {
        let value: String = std::iter::repeat_n((b'a' + (i % 26) as u8) as char, 7000).collect();
        daemon.zfs(&["set", &format!("user:note{i}={value}"), &name]);
    }
    daemon.zfs(&["destroy", &format!("{name}/fs@s1")]);
    daemon.export_all();
    drop(daemon);

    let pool = open(&pool_dir.devices);
    let (_, phys) = history::phys(&pool).unwrap();
    assert!(phys.records_lost > 0, "the ring did not wrap: {phys:?}");
    assert!(
        phys.eof - phys.pool_create_len > phys.phys_max_off - phys.pool_create_len,
        "{phys:?}"
    );
    let records = history::read(&pool).unwrap();
    let zdb = zdb_history(&pool_dir, &name);
    assert_eq!(zdb_text(&records), zdb, "history differs from zdb -hh");
    assert!(
        zdb.contains("[internal "),
        "no legacy internal event:\n{zdb}"
    );
    assert!(records[0].command().unwrap().starts_with("zpool create"));
}

// Why: `Spa::history` of an imported OpenZFS pool returned "the history of OpenZFS pools
// cannot be read yet"; it must give the pool's user commands with their times, as
// `zpool history` without -i lists them.
#[test]
fn spa_history_of_an_imported_openzfs_pool() {
    let dir = unpack(&["history/i386.migratedpool.DAT.Z"]);
    let devices: Vec<DeviceRef> = dir
        .devices
        .iter()
        .map(|p| Arc::new(FileDevice::open_read_only(p.to_str().unwrap()).unwrap()) as DeviceRef)
        .collect();
    let candidates = find_pools(&devices, 0);
    let mut spa = zetta::spa::Spa::import_openzfs(&candidates[0], &devices, None)
        .unwrap_or_else(|e| panic!("import: {e}"));
    let lines = spa.history().unwrap_or_else(|e| panic!("history: {e}"));
    assert_eq!(lines.len(), 12, "{lines:?}");
    assert_eq!(
        lines[0],
        (
            1_161_371_917,
            "zpool create history_pool /var/tmp/i386.migratedpool.DAT".to_string()
        )
    );
    assert_eq!(lines[11].1, "zpool export history_pool");
}
