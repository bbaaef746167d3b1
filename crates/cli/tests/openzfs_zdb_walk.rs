//! OpenZFS's own `zdb` walks a pool Zetta made (issue 14, increment 8, format 14): with the
//! rest of the MOS as OpenZFS writes it (`$MOS`/`$FREE`/`$ORIGIN`, bpobj dead lists, the
//! history ring, `errlog_last`) and Zetta's one feature write-only, OpenZFS 2.3's zdb (from
//! scripts/oracle.sh, see crates/zetta/tests/common/oracle.rs) opens the pool read-only.
//! Since format 15 (fill counts) its `-dd … -ddddd` walk every object and `zdb -r` copies
//! the files Zetta wrote out byte-identical; since format 16 its `-bcc` finds every block
//! in the space maps ("No leaks").

mod common;

use common::Lab;

const DISK_SIZE_BYTES: u64 = 256 << 20;

fn zpool_ok(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zpool");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zpool {args:?}: {}", out.stderr);
}

fn zfs_ok(lab: &Lab, args: &[&str]) {
    let mut command = lab.command("zfs");
    command.args(args).env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "zfs {args:?}: {}", out.stderr);
}

/// `zdb -e -p DIR FLAGS tank`, which must exit 0; its stdout.
fn zdb_ok(lab: &Lab, flags: &str) -> String {
    common::openzfs::zdb_ok(&lab.dir, &[flags, "tank"])
}

// Why: until format 14 OpenZFS refused every Zetta pool (`org.zetta:private_mos` in
// features_for_read), and without the hidden DSL dirs, bpobj dead lists and a previous
// snapshot on every dataset its `dsl_pool_open` and `dsl_dataset_hold_obj` fail or
// assert. zdb -d must now list exactly the datasets, snapshots and clone Zetta made (no
// `$` dir among them) and report no leaked MOS object; zdb -h must show the commands from
// the history ring; zdb -C must print the config with Zetta's settings beside it.
#[test]
fn zdb_walks_a_zetta_pool() {
    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "tank", &disk]);
    for args in [
        &["create", "tank/a"][..],
        &["create", "tank/a/b"],
        &["snapshot", "tank/a@s1"],
        &["snapshot", "tank/a/b@s2"],
        &["clone", "tank/a@s1", "tank/c"],
        &["snapshot", "tank/a@s3"],
    ] {
        zfs_ok(&lab, args);
    }
    zpool_ok(&lab, &["set", "comment=walked", "tank"]);
    zpool_ok(&lab, &["export", "tank"]);

    let text = zdb_ok(&lab, "-d");
    let mut listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Dataset "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "mos",
            "tank",
            "tank/a",
            "tank/a/b",
            "tank/a/b@s2",
            "tank/a@s1",
            "tank/a@s3",
            "tank/c"
        ],
        "{text}"
    );
    assert!(!text.contains("leaked"), "{text}");
    assert!(!text.contains('$'), "{text}");

    let history = zdb_ok(&lab, "-h");
    let commands: Vec<&str> = history
        .lines()
        .filter(|l| !l.contains("[txg:"))
        .filter_map(|l| l.split_once(' ').map(|(_, command)| command))
        .collect();
    assert_eq!(
        commands,
        [
            format!("zpool create tank {disk}").as_str(),
            "zfs create tank/a",
            "zfs create tank/a/b",
            "zfs snapshot tank/a@s1",
            "zfs snapshot tank/a/b@s2",
            "zfs clone tank/a@s1 tank/c",
            "zfs snapshot tank/a@s3",
            "zpool set comment=walked tank",
            "zpool export tank",
        ],
        "{history}"
    );
    assert!(history.contains("] snapshot tank/a@s3 ("), "{history}");

    let config = zdb_ok(&lab, "-C");
    assert!(config.contains("    name: 'tank'"), "{config}");
    // Format 26: the comment is the config's own key, as `spa_config_generate` writes it;
    // no private pool settings ride in the config any more.
    assert!(config.contains("    comment: 'walked'"), "{config}");
    assert!(!config.contains("org.zetta:pool_props"), "{config}");

    // Format 16: every block the CLI's commands wrote is in the space maps, the MOS's own
    // included (before, zdb -bcc failed `zio_claim(...) == 0 (0x2 == 0)` on this pool).
    let blocks = zdb_ok(&lab, "-bcc");
    assert!(
        blocks.contains("No leaks (block sum matches space maps exactly)"),
        "{blocks}"
    );
    assert!(!blocks.contains("(leaked"), "{blocks}");

    // Zetta reads back what it wrote: the pool, its datasets, its settings, its history.
    let mut command = lab.command("zpool");
    command
        .args(["import", "-d"])
        .arg(&lab.dir)
        .arg("tank")
        .env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(out.code, 0, "import: {}", out.stderr);
    let mut command = lab.command("zfs");
    command
        .args(["list", "-H", "-o", "name", "-t", "all"])
        .env("ZETTA_MOUNT", "0");
    let out = lab.run(command);
    assert_eq!(
        out.stdout,
        "tank\ntank/a\ntank/a@s1\ntank/a@s3\ntank/a/b\ntank/a/b@s2\ntank/c\n"
    );
    let mut command = lab.command("zpool");
    command
        .args(["get", "-H", "-o", "value", "comment", "tank"])
        .env("ZETTA_MOUNT", "0");
    assert_eq!(lab.run(command).stdout, "walked\n");
}

/// The bytes of the three files `zdb_dumps_every_object_and_copies_files` writes: several
/// MiB of seeded data (incompressible, with a compressible tail), a small file, and a
/// sparse one (a hole in its middle, data at both ends).
fn zdb_test_files() -> Vec<(&'static str, Vec<u8>)> {
    let mut big = vec![0u8; (5 << 20) + 12345];
    zetta::rand::SeededRng::new(14).fill(&mut big);
    for b in big[(4 << 20)..].iter_mut() {
        *b &= 0x0f;
    }
    let small = b"a small file, one block\n".to_vec();
    let mut sparse = vec![0u8; (3 << 20) + 7];
    sparse[..4096].fill(b's');
    let end = sparse.len();
    sparse[end - 100..].fill(b'e');
    vec![("big", big), ("small", small), ("sparse", sparse)]
}

/// Writes `zdb_test_files` into the root of `fs` on the exported one-device pool `disk`,
/// through the engine's ZPL (as a mount would: create, write, commit), and exports.
fn write_zpl_files(disk: &str, fs: &str) {
    use zetta::zpl::{Creds, FileKind, Timespec};
    let _devices = common::DEVICES.write().unwrap_or_else(|e| e.into_inner());
    let device = zetta::io::FileDevice::open_exclusive(disk).unwrap();
    let devices: Vec<zetta::io::DeviceRef> = vec![std::sync::Arc::new(device)];
    let candidate = zetta::spa::find_pools(&devices).into_iter().next().unwrap();
    let mut spa = zetta::spa::Spa::import(&candidate, None, 64 << 20).unwrap();
    let now = Timespec {
        sec: 1_700_000_000,
        nsec: 0,
    };
    for (name, data) in zdb_test_files() {
        spa.with_zpl(fs, |vfs, os, ctx| {
            let root = vfs.root;
            let file = vfs.create(
                os,
                ctx,
                root,
                name.as_bytes(),
                FileKind::Regular,
                0o644,
                Creds::default(),
                0,
                now,
            )?;
            // The sparse file: only its non-zero 1 MiB pieces are written (the last one
            // is not zero, so the file ends where the data does).
            for (index, piece) in data.chunks(1 << 20).enumerate() {
                if name == "sparse" && piece.iter().all(|b| *b == 0) {
                    continue;
                }
                vfs.write(os, ctx, file.object, (index as u64) << 20, piece, now)?;
            }
            Ok(())
        })
        .unwrap();
        spa.sync().unwrap();
    }
    spa.export().unwrap();
}

/// The object counts `zdb -dd` prints, per dataset: the header's count ("…, N objects")
/// and the object rows listed under it (the meta-dnode's row, object 0, excluded).
fn zdb_object_counts(text: &str) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Dataset ") {
            let name = rest.split(' ').next().unwrap_or_default().to_string();
            let count = rest
                .rsplit_once(", ")
                .and_then(|(_, tail)| tail.strip_suffix(" objects"))
                .and_then(|n| n.parse().ok())
                .unwrap_or(u64::MAX);
            out.push((name, count, 0));
            in_table = false;
        } else if line.trim_start().starts_with("Object  lvl") {
            in_table = true;
        } else if in_table {
            let first = line.split_whitespace().next();
            match first.and_then(|w| w.parse::<u64>().ok()) {
                Some(0) | None => {}
                Some(_) => {
                    if let Some(last) = out.last_mut() {
                        last.2 += 1;
                    }
                }
            }
        }
    }
    out
}

// Why: format 14 wrote every objset's rootbp with fill 1, and zdb -dd stopped with
// `ASSERT ... dump_objset(): object_count == usedobjs (0x28 == 0x1)`; and nothing yet
// proved that OpenZFS reads the files Zetta writes. zdb -dd and -ddddd must walk every
// object with the counts it prints equal to the objects it lists, and zdb -r must copy
// a large, a small and a sparse file out byte-identical.
#[test]
fn zdb_dumps_every_object_and_copies_files() {
    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "tank", &disk]);
    zfs_ok(&lab, &["create", "tank/a"]);
    zfs_ok(&lab, &["snapshot", "tank/a@empty"]);
    zpool_ok(&lab, &["export", "tank"]);
    write_zpl_files(&disk, "tank/a");

    let text = zdb_ok(&lab, "-dd");
    let counts = zdb_object_counts(&text);
    assert_eq!(counts.len(), 4, "mos, tank, tank/a, tank/a@empty: {text}");
    for (name, header, listed) in &counts {
        assert_eq!(header, listed, "{name}: {text}");
    }
    let of = |name: &str| counts.iter().find(|c| c.0 == name).map(|c| c.1);
    // A ZPL dataset's six objects (master node, SA master, SA registry and layouts,
    // delete queue, root directory), and the three files in tank/a.
    assert_eq!(of("tank"), Some(6), "{text}");
    assert_eq!(of("tank/a@empty"), Some(6), "{text}");
    assert_eq!(of("tank/a"), Some(9), "{text}");
    zdb_ok(&lab, "-ddddd");

    for (name, data) in zdb_test_files() {
        let out_path = lab.dir.join(format!("copy-{name}"));
        common::openzfs::zdb_ok(
            &lab.dir,
            &["-r", "tank/a", name, &out_path.to_string_lossy()],
        );
        let copy = std::fs::read(&out_path).unwrap();
        assert!(copy == data, "zdb -r {name}: {} bytes differ", name);
    }
}

/// A MOS object as `zdb -dddd` prints it: its type and its `key = value` lines (bonus
/// fields and ZAP entries).
struct ZdbObject {
    kind: String,
    fields: Vec<(String, String)>,
}

impl ZdbObject {
    fn get(&self, key: &str) -> u64 {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in a {}", self.kind))
    }
}

/// The MOS objects of `zdb -dddd POOL` (the part before the first dataset's dump).
fn zdb_mos_objects(text: &str) -> std::collections::BTreeMap<u64, ZdbObject> {
    let mut out = std::collections::BTreeMap::new();
    let mut current: Option<u64> = None;
    let mut header = false;
    for line in text.lines() {
        if line.starts_with("Dataset ") && !line.starts_with("Dataset mos ") {
            break;
        }
        if line.trim_start().starts_with("Object  lvl") {
            header = true;
            continue;
        }
        if header {
            header = false;
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(object) = words.first().and_then(|w| w.parse().ok()) {
                out.insert(
                    object,
                    ZdbObject {
                        kind: words.get(8..).unwrap_or_default().join(" "),
                        fields: Vec::new(),
                    },
                );
                current = Some(object);
            }
            continue;
        }
        if let (Some(object), Some((key, value))) = (current, line.trim().split_once(" = ")) {
            if let Some(record) = out.get_mut(&object) {
                record
                    .fields
                    .push((key.to_string(), value.trim().to_string()));
            }
        }
    }
    out
}

/// The entries of the ZAP `object` (`name = value`), sorted.
fn zap_entries(objects: &std::collections::BTreeMap<u64, ZdbObject>, object: u64) -> Vec<String> {
    let mut entries: Vec<String> = objects[&object]
        .fields
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    entries.sort();
    entries
}

/// Checks the clone links of `zdb -dddd` as OpenZFS's `dsl_dataset_create_sync_dd` makes
/// them: every dataset's dir but the hidden ones names an origin (`$ORIGIN@$ORIGIN`, the
/// MOS's `$ORIGIN` snapshot, unless it is a clone), and each origin snapshot counts its
/// clones in `num_children` (1 + clones) and lists them, `hex = object`, in its
/// `next_clones_obj` and its dir's `clones` (which holds the clones of all the dir's
/// snapshots). Returns the number of datasets whose origin
/// is `$ORIGIN@$ORIGIN` and of real clones.
fn check_clone_links(text: &str) -> (usize, usize) {
    let objects = zdb_mos_objects(text);
    let dirs: Vec<&ZdbObject> = objects
        .values()
        .filter(|o| o.kind == "DSL directory")
        .collect();
    // `$ORIGIN@$ORIGIN`: the snapshot named `$ORIGIN` in a snap map.
    let origin_snapshot = objects
        .values()
        .filter(|o| o.kind == "DSL dataset snap map")
        .find_map(|o| o.fields.iter().find(|(k, _)| k == "$ORIGIN"))
        .and_then(|(_, v)| v.parse::<u64>().ok())
        .expect("a $ORIGIN@$ORIGIN snapshot");
    let mut clones_of: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for dir in &dirs {
        let origin = dir.get("origin_obj");
        let head = dir.get("head_dataset_obj");
        if head == 0 || origin == 0 {
            // `$MOS`, `$FREE` (no head) and `$ORIGIN` (whose head's snapshot is the
            // origin of everything else) have no origin.
            assert!(
                head == 0 || objects[&head].get("prev_snap_obj") == origin_snapshot,
                "a dir without origin: head {head}"
            );
            continue;
        }
        clones_of.entry(origin).or_default().push(head);
    }
    let mut dir_clones: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for (origin, clones) in &clones_of {
        let snapshot = &objects[origin];
        // A dataset object is a ZAP once a per-dataset feature zapified it
        // (`dsl_dataset_zapify`: userobj_accounting on every new dataset since session 19).
        assert!(
            matches!(snapshot.kind.as_str(), "DSL dataset" | "zap"),
            "origin {origin}: {}",
            snapshot.kind
        );
        assert_eq!(
            snapshot.get("num_children"),
            1 + clones.len() as u64,
            "num_children of {origin}"
        );
        let mut expected: Vec<String> = clones.iter().map(|c| format!("{c:x} = {c}")).collect();
        expected.sort();
        let next_clones = snapshot.get("next_clones_obj");
        assert_eq!(objects[&next_clones].kind, "DSL dataset next clones");
        assert_eq!(
            zap_entries(&objects, next_clones),
            expected,
            "next clones of {origin}"
        );
        dir_clones
            .entry(snapshot.get("dir_obj"))
            .or_default()
            .extend(expected);
    }
    // A dir's `clones` lists the clones of all its snapshots.
    for (dir, mut expected) in dir_clones {
        expected.sort();
        let zap = objects[&dir].get("clones");
        assert_eq!(objects[&zap].kind, "DSL dir clones");
        assert_eq!(zap_entries(&objects, zap), expected, "clones of dir {dir}");
    }
    let plain = clones_of.get(&origin_snapshot).map_or(0, |c| c.len());
    let real = clones_of.values().map(|c| c.len()).sum::<usize>() - plain;
    (plain, real)
}

// Why: until format 15 Zetta wrote no clone links for datasets made from nothing, where
// OpenZFS (`dsl_dataset_create_sync_dd`) makes every dataset a clone of `$ORIGIN@$ORIGIN`,
// and none (`ds_next_clones_obj`, `dd_clones`) for real clones either. The same checker
// reads a real OpenZFS pool (testpool_zstd: three datasets, no clone) and a Zetta pool
// with a clone and a promote; Zetta must still read the plain datasets as no clone.
#[test]
fn clone_links_are_openzfs_s() {
    let real = Lab::new();
    let dir = common::openzfs::place(&real, "pool", &["compression/testpool_zstd.tar.gz"]);
    let text = common::openzfs::zdb_ok(&dir, &["-dddd", "testpool_zstd"]);
    assert_eq!(check_clone_links(&text), (3, 0), "testpool_zstd");

    let lab = Lab::new();
    let disk = lab.disk("d0", DISK_SIZE_BYTES);
    zpool_ok(&lab, &["create", "tank", &disk]);
    for args in [
        &["create", "tank/a"][..],
        &["create", "tank/a/b"],
        &["snapshot", "tank/a@s1"],
        &["clone", "tank/a@s1", "tank/c"],
        &["clone", "tank/a@s1", "tank/d"],
        &["snapshot", "tank/d@s2"],
        &["clone", "tank/d@s2", "tank/e"],
        &["promote", "tank/d"],
        &["create", "tank/gone"],
        &["destroy", "tank/gone"],
    ] {
        zfs_ok(&lab, args);
    }
    zpool_ok(&lab, &["export", "tank"]);
    let text = zdb_ok(&lab, "-dddd");
    // tank, tank/a/b and the promoted tank/d come from $ORIGIN@$ORIGIN; tank/a, tank/c and
    // tank/e are clones (of tank/d@s1, tank/d@s1 and tank/d@s2).
    assert_eq!(check_clone_links(&text), (3, 3), "{text}");

    let mut command = lab.command("zpool");
    command
        .args(["import", "-d"])
        .arg(&lab.dir)
        .arg("tank")
        .env("ZETTA_MOUNT", "0");
    assert_eq!(lab.run(command).code, 0);
    let mut command = lab.command("zfs");
    command
        .args([
            "get",
            "-H",
            "-o",
            "name,value",
            "origin",
            "-t",
            "filesystem",
        ])
        .env("ZETTA_MOUNT", "0");
    assert_eq!(
        lab.run(command).stdout,
        "tank\t-\ntank/a\ttank/d@s1\ntank/a/b\t-\ntank/c\ttank/d@s1\ntank/d\t-\ntank/e\ttank/d@s2\n"
    );
}
