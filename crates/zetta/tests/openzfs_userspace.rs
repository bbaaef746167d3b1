//! User/group accounting as OpenZFS keeps it (issue 19 and issue 14, format 26): the
//! accounting ZAPs of a ZPL dataset, checked against OpenZFS's tools and bytes.
//!
//! Why: OpenZFS keeps, in each ZPL object set, `DMU_USERUSED_OBJECT` and
//! `DMU_GROUPUSED_OBJECT` (objects -1 and -2, in the objset block): id → bytes owned
//! (512 + `dn_used` per object). Zetta kept none and released an OpenZFS dataset's at its
//! first rewrite, so `zfs userspace` there needed OpenZFS's upgrade and `userquota@` could
//! not be enforced. These tests hold the real thing as the oracle: zdb reads the ZAPs
//! Zetta writes with the values Zetta means and finds no leak, and on a pool zfs-fuse
//! wrote (tests/fixtures/zfs-fuse-zpl4.dat.bz2, a file chowned 1234:5678) the accounting
//! zfs-fuse kept equals Zetta's recount of the same dnodes, and stays equal after Zetta
//! writes there.

mod common;

use common::oracle::zdb;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use zetta::dmu::objset::{DMU_GROUPUSED_OBJECT, DMU_USERUSED_OBJECT};
use zetta::io::{DeviceRef, FileDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::Creds;

fn zdb_text(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(zdb())
        .args(["-e", "-p"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Creates `name` in the root of `fs` owned by `creds` and writes `data`.
fn write_as(spa: &mut Spa, fs: &str, name: &str, creds: Creds, data: &[u8]) {
    common::write_root_file_as(spa, fs, name, creds, 0, data);
}

/// Incompressible bytes (the default compression would shrink a run to nothing).
fn noise(len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    zetta::rand::SeededRng::new(len as u64).fill(&mut data);
    data
}

/// The accounting ZAPs of `fs`, after checking them against a recount of its dnodes.
fn checked_accounting(spa: &mut Spa, fs: &str) -> BTreeMap<(u64, String), i64> {
    spa.with_zpl(fs, |_, os, ctx| {
        let stored = os.userspace_entries(ctx)?;
        let recounted = os.userspace_recount(ctx)?;
        assert_eq!(
            stored, recounted,
            "{fs}: accounting ZAPs against the dnodes"
        );
        Ok(stored)
    })
    .unwrap()
}

/// The entries zdb prints for the ZAP of object `object` (`-1`: user, `-2`: group) in
/// its `-dddd` dump of `target`: `name = value` lines of that object's section.
fn zdb_accounting(dir: &Path, target: &str, object: i64) -> BTreeMap<String, i64> {
    let text = zdb_text(dir, &["-dddd", target]);
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // An object header line: "Object lvl ..." titles, then "<id> <lvl> ...".
        if fields.len() >= 8 && fields[0].parse::<i64>().is_ok() && !line.starts_with('\t') {
            inside = fields[0].parse::<i64>() == Ok(object);
            continue;
        }
        if inside {
            if let Some((name, value)) = line.trim().split_once(" = ") {
                if let Ok(value) = value.trim().parse::<i64>() {
                    out.insert(name.trim().to_string(), value);
                }
            }
        }
    }
    out
}

fn as_zdb(stored: &BTreeMap<(u64, String), i64>, object: u64) -> BTreeMap<String, i64> {
    stored
        .iter()
        .filter(|((o, _), _)| *o == object)
        .map(|((_, k), v)| (k.clone(), *v))
        .collect()
}

// Why: the ZAPs Zetta writes must be OpenZFS's: zdb finds the user and group objects of
// the objset block, reads each entry with the value Zetta keeps, and `zdb -bcc` claims
// their blocks with everything else (no leak).
#[test]
fn zdb_reads_the_accounting_zaps_zetta_writes() {
    let (dir, path) = common::scratch_disk("zetta-userspace", 256 << 20);
    let device: DeviceRef = Arc::new(FileDevice::open(&path).unwrap());
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![(path.clone(), device)],
        is_log: false,
    };
    let mut spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    spa.create_filesystem("tank/fs").unwrap();
    let alice = Creds {
        uid: 1000,
        gid: 100,
    };
    let bob = Creds {
        uid: 2000,
        gid: 200,
    };
    write_as(&mut spa, "tank/fs", "a", alice, &vec![7u8; 300 << 10]);
    write_as(&mut spa, "tank/fs", "b", bob, &[9u8; 5000]);
    spa.sync().unwrap();
    spa.snapshot(&["tank/fs@s".to_string()]).unwrap();
    write_as(&mut spa, "tank/fs", "c", bob, &vec![3u8; 200 << 10]);
    spa.sync().unwrap();
    let stored = checked_accounting(&mut spa, "tank/fs");
    assert!(stored.contains_key(&(DMU_USERUSED_OBJECT, "3e8".to_string())));
    assert!(stored.contains_key(&(DMU_GROUPUSED_OBJECT, "c8".to_string())));
    spa.export().unwrap();

    assert_eq!(
        zdb_accounting(&dir, "tank/fs", -1),
        as_zdb(&stored, DMU_USERUSED_OBJECT),
        "zdb's user accounting ZAP"
    );
    assert_eq!(
        zdb_accounting(&dir, "tank/fs", -2),
        as_zdb(&stored, DMU_GROUPUSED_OBJECT),
        "zdb's group accounting ZAP"
    );
    common::oracle::assert_zdb_no_leaks(&dir, "tank", "with accounting ZAPs");
    let _ = std::fs::remove_dir_all(&dir);
}

// Why: golden bytes from the real thing. zfs-fuse (OpenZFS's lineage, SPA version 23)
// kept the accounting of its pool; Zetta's recount of the same dnodes must give exactly
// its values (512 + dn_used per znode, charged to zp_uid and zp_gid), and after Zetta
// writes there (a new file of uid 1234, a new one of uid 42) the accounting is still
// exact, not released, and zdb reads it and finds no leak.
#[test]
fn zfs_fuse_accounting_is_kept_as_zfs_fuse_kept_it() {
    let dir = std::env::temp_dir().join(format!("zetta-userspace-fuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fuse.dat");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zfs-fuse-zpl4.dat.bz2");
    let status = Command::new("bunzip2")
        .arg("-dc")
        .arg(&src)
        .stdout(std::fs::File::create(&file).unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "bunzip2 {}", src.display());
    // "fusepool/": the root dataset (the pool name alone dumps the MOS).
    let theirs = zdb_accounting(&dir, "fusepool/", -1);
    assert!(
        theirs.contains_key("4d2"),
        "zfs-fuse charged uid 1234: {theirs:?}"
    );
    let device: DeviceRef = Arc::new(FileDevice::open(file.to_str().unwrap()).unwrap());
    let found = zetta::spa::find_pools(std::slice::from_ref(&device));
    let mut spa = Spa::import(&found[0], None, 64 << 20).expect("read-write import");
    let before = checked_accounting(&mut spa, "fusepool");
    assert_eq!(as_zdb(&before, DMU_USERUSED_OBJECT), theirs);
    let owner = Creds {
        uid: 1234,
        gid: 5678,
    };
    write_as(&mut spa, "fusepool", "by-zetta", owner, &noise(100 << 10));
    write_as(
        &mut spa,
        "fusepool",
        "by-42",
        Creds { uid: 42, gid: 42 },
        b"x",
    );
    spa.sync().unwrap();
    let after = checked_accounting(&mut spa, "fusepool");
    let key = (DMU_USERUSED_OBJECT, "4d2".to_string());
    assert!(after[&key] > before[&key] + (100 << 10), "{after:?}");
    assert!(after.contains_key(&(DMU_USERUSED_OBJECT, "2a".to_string())));
    spa.export().unwrap();
    assert_eq!(
        zdb_accounting(&dir, "fusepool/", -1),
        as_zdb(&after, DMU_USERUSED_OBJECT)
    );
    common::oracle::assert_zdb_no_leaks(&dir, "fusepool", "after Zetta's writes");
    let _ = std::fs::remove_dir_all(&dir);
}
