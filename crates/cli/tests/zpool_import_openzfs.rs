//! `zpool import -d` on real OpenZFS pools (the images OpenZFS's own test suite ships, see
//! crates/zetta/tests/common/oracle.rs): listed beside Zetta's pools in OpenZFS 2.3's
//! layout, refused on import without touching the devices.

mod common;

use common::openzfs::oracle;
use common::openzfs::place;
use common::Lab;
use std::path::Path;

const UPGRADE: &str = "cli_root/zpool_upgrade/blockfiles";

fn upgrade(name: &str) -> String {
    format!("{UPGRADE}/{name}.dat.bz2")
}

/// `(name, pool_guid)` as OpenZFS's zdb reads them from the device's first label.
fn zdb_pool(file: &Path) -> (String, u64) {
    let out = std::process::Command::new(oracle::zdb())
        .arg("-l")
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("zdb -l {}: no {key}\n{text}", file.display()))
            .trim()
            .to_string()
    };
    (
        value("name: ").trim_matches('\'').to_string(),
        value("pool_guid: ").parse().unwrap(),
    )
}

const LEGACY: &str = "status: The pool is formatted using a legacy on-disk version.
action: The pool can be imported using its name or numeric identifier, though
\tsome features will not be available without an explicit 'zpool upgrade'.
";

/// The config tree lines, names padded as OpenZFS pads them (at least 10 wide).
fn tree(rows: &[(usize, &str, &str)]) -> String {
    let width = rows
        .iter()
        .map(|(depth, name, _)| depth + name.len())
        .max()
        .unwrap_or(0)
        .max(10);
    rows.iter()
        .map(|(depth, name, state)| {
            format!("\t{:depth$}{name:<w$}  {state}\n", "", w = width - depth)
        })
        .collect()
}

fn header(name: &str, id: u64, state: &str) -> String {
    format!("  pool: {name}\n    id: {id}\n state: {state}\n")
}

// Why: `zpool import -d` listed no real OpenZFS pool at all ("no pools available to
// import"). Every single-device pool OpenZFS ships (versions 1..15 and 5000, the big-endian
// SPARC pool, v999) is now listed with the name and id zdb reads, its state, OpenZFS's
// status/action words for its version, and its device at the path it was found at.
#[test]
fn every_single_device_openzfs_fixture_is_listed_as_openzfs_lists_it() {
    let lab = Lab::new();
    let mut rels: Vec<String> = (1..=15)
        .map(|v| upgrade(&format!("zfs-pool-v{v}")))
        .collect();
    rels.extend(
        [
            "cli_root/zpool_upgrade/blockfiles/zfs-pool-vBROKEN.dat.bz2",
            "history/i386.migratedpool.DAT.Z",
            "history/sparc.migratedpool.DAT.Z",
            "history/zfs-pool-v4.dat.Z",
        ]
        .map(String::from),
    );
    for (i, rel) in rels.iter().enumerate() {
        let dir = place(&lab, &format!("single{i}"), &[rel]);
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let (name, id) = zdb_pool(&file);
        let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
        let expected = format!(
            "{}{LEGACY}config:\n\n{}",
            header(&name, id, "ONLINE"),
            tree(&[(0, &name, "ONLINE"), (2, file.to_str().unwrap(), "ONLINE")])
        );
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, expected.as_str()),
            "{rel}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // v999: an unsupported version, in OpenZFS's words.
    let dir = place(&lab, "v999", &[&upgrade("zfs-pool-v999")]);
    let file = dir.join("zfs-pool-v999.dat");
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    let expected = format!(
        "{}status: The pool is formatted using an incompatible version.
action: The pool cannot be imported.  Access the pool on a system running newer
\tsoftware, or recreate the pool from backup.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-A5
config:

{}",
        header("v999-pool", 3320584530116608319, "UNAVAIL"),
        tree(&[
            (0, "v999-pool", "UNAVAIL  newer version"),
            (2, file.to_str().unwrap(), "ONLINE"),
        ])
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, expected.as_str()));
    std::fs::remove_dir_all(&dir).unwrap();

    // A pool left imported on another host (state ACTIVE, hostid set).
    let dir = place(
        &lab,
        "unclean",
        &["cli_root/zpool_import/blockfiles/unclean_export.dat.bz2"],
    );
    let file = dir.join("unclean_export.dat");
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    let expected = format!(
        "{}status: The pool was last accessed by another system.
action: The pool can be imported using its name or numeric identifier and
\tthe '-f' flag.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-EY
config:

{}",
        header("unclean_export", 7180307423654184295, "ONLINE"),
        tree(&[
            (0, "unclean_export", "ONLINE"),
            (2, file.to_str().unwrap(), "ONLINE")
        ])
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, expected.as_str()));
    std::fs::remove_dir_all(&dir).unwrap();

    // A modern v5000 pool whose features_for_read (hole_birth, embedded_data) Zetta reads.
    let dir = place(&lab, "zstd", &["compression/testpool_zstd.tar.gz"]);
    let file = dir.join("testpool_zstd");
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    let expected = format!(
        "{}status: Some supported features are not enabled on the pool.
\t(Note that they may be intentionally disabled if the
\t'compatibility' property is set.)
action: The pool can be imported using its name or numeric identifier, though
\tsome features will not be available without an explicit 'zpool upgrade'.
config:

{}",
        header("testpool_zstd", 4253333510760776491, "ONLINE"),
        tree(&[
            (0, "testpool_zstd", "ONLINE"),
            (2, file.to_str().unwrap(), "ONLINE")
        ])
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, expected.as_str()));
}

// Why: multi-device OpenZFS pools must list their vdev tree as OpenZFS names it (mirror-0,
// raidz1-0, raidz2-0, one line per striped device), with missing devices UNAVAIL "cannot
// open" under the path their label recorded and the pool DEGRADED when redundancy covers
// them; devices of one pool found through several `-d` options form one pool.
#[test]
fn mirrors_raidz_stripes_spares_and_a_broken_mirror_list_their_trees() {
    let lab = Lab::new();
    let cases: &[(&str, &str, &str)] = &[
        ("v1mirror", "pool-v1mirror", "mirror-0"),
        ("v1raidz", "pool-v1raidz", "raidz1-0"),
        ("v1stripe", "pool-v1stripe", ""),
        ("v2mirror", "pool-v2mirror", "mirror-0"),
        ("v2raidz", "pool-v2raidz", "raidz1-0"),
        ("v2stripe", "pool-v2stripe", ""),
        ("v3mirror", "pool-v3mirror", "mirror-0"),
        ("v3raidz", "pool-v3raidz", "raidz1-0"),
        ("v3raidz2", "pool-v3raidz2", "raidz2-0"),
        ("v3stripe", "pool-v3stripe", ""),
    ];
    for (stem, _, _) in cases {
        let rels: Vec<String> = (1..=3)
            .map(|n| upgrade(&format!("zfs-pool-{stem}{n}")))
            .collect();
        let rels: Vec<&str> = rels.iter().map(String::as_str).collect();
        place(&lab, stem, &rels);
    }
    let mut args = vec!["import".to_string()];
    for (stem, _, _) in cases {
        args.push("-d".to_string());
        args.push(lab.path(stem));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = lab.zpool(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let blocks: Vec<&str> = out.stdout.split("\n  pool: ").collect();
    assert_eq!(blocks.len(), cases.len(), "{}", out.stdout);
    for (stem, pool, top) in cases {
        let devices: Vec<String> = (1..=3)
            .map(|n| format!("{}/zfs-pool-{stem}{n}.dat", lab.path(stem)))
            .collect();
        let (name, id) = zdb_pool(Path::new(&devices[0]));
        assert_eq!(&name, pool);
        let mut rows = vec![(0, name.as_str(), "ONLINE")];
        let depth = if top.is_empty() {
            2
        } else {
            rows.push((2, top, "ONLINE"));
            4
        };
        for device in &devices {
            rows.push((depth, device.as_str(), "ONLINE"));
        }
        let expected = format!(
            "{}{LEGACY}config:\n\n{}",
            header(&name, id, "ONLINE"),
            tree(&rows)
        );
        assert!(
            out.stdout.contains(expected.trim_start_matches("  pool: ")),
            "{pool}: expected\n{expected}\nin\n{}",
            out.stdout
        );
    }

    // One half of a mirror: DEGRADED, the other half UNAVAIL under its recorded path.
    let dir = place(&lab, "broken", &[&upgrade("zfs-broken-mirror1")]);
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    let expected = format!(
        "{}status: One or more devices are missing from the system.
action: The pool can be imported despite missing or damaged devices.  The
\tfault tolerance of the pool may be compromised if imported.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-2Q
config:

{}",
        header("zfs-broken-mirror", 4795821076444488636, "DEGRADED"),
        tree(&[
            (0, "zfs-broken-mirror", "DEGRADED"),
            (2, "mirror-0", "DEGRADED"),
            (
                4,
                &format!("{}/zfs-broken-mirror1.dat", dir.display()),
                "ONLINE"
            ),
            (4, "/tmp/zfs-broken-mirror2.dat", "UNAVAIL  cannot open"),
        ])
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, expected.as_str()));
    // Both halves: ONLINE again.
    place(&lab, "broken", &[&upgrade("zfs-broken-mirror2")]);
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    assert!(out.stdout.contains(" state: ONLINE\n"), "{}", out.stdout);

    // An in-use hot spare: the spare-0 group of the pool's device and its spare.
    let dir = place(
        &lab,
        "spare",
        &[
            &upgrade("zfs-pool-v3hotspare1"),
            &upgrade("zfs-pool-v3hotspare2"),
            &upgrade("zfs-pool-v3hotspare3"),
        ],
    );
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    let d1 = format!("{}/zfs-pool-v3hotspare1.dat", dir.display());
    let d2 = format!("{}/zfs-pool-v3hotspare2.dat", dir.display());
    let expected = format!(
        "{}{LEGACY}config:\n\n{}",
        header("pool-v3hotspare", 17597105050916041508, "ONLINE"),
        tree(&[
            (0, "pool-v3hotspare", "ONLINE"),
            (2, "spare-0", "ONLINE"),
            (4, &d1, "ONLINE"),
            (4, &d2, "ONLINE"),
        ])
    );
    assert!(
        out.stdout.starts_with(&expected),
        "expected\n{expected}\ngot\n{}",
        out.stdout
    );
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

// Why: a read-write import of a real OpenZFS pool must be refused cleanly until Zetta
// writes OpenZFS's format (exit 1, a message naming the read-only way, no Rust error
// text), by name or id, renamed or not (the read-only import is `openzfs_readonly_import`); v999 gets OpenZFS's unsupported-version message; the devices are
// not modified; a device path given to -d works; damaged labels are ignored and a device
// whose four labels are all damaged is not listed.
#[test]
fn openzfs_pools_are_refused_untouched_and_damaged_labels_are_ignored() {
    let lab = Lab::new();
    let dir = place(
        &lab,
        "pools",
        &[&upgrade("zfs-pool-v10"), &upgrade("zfs-pool-v999")],
    );
    let d = dir.to_str().unwrap();
    let v10 = dir.join("zfs-pool-v10.dat");
    let before = file_bytes(&v10);
    let (name, id) = zdb_pool(&v10);
    let refusal = format!("cannot import '{name}': OpenZFS pools can only be imported read-only for now\nuse 'zpool import -o readonly=on {name}'\n");
    let id_text = id.to_string();
    for args in [
        vec!["import", "-d", d, &name],
        vec!["import", "-d", d, &id_text],
        vec!["import", "-f", "-d", d, &name, "renamed"],
    ] {
        let out = lab.zpool(&args);
        assert_eq!(
            (out.code, out.stdout.as_str(), out.stderr.as_str()),
            (1, "", refusal.as_str()),
            "{args:?}"
        );
    }
    let out = lab.zpool(&["import", "-d", d, "v999-pool"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "cannot import 'v999-pool': pool is formatted using an unsupported ZFS version\n"
        )
    );
    assert!(
        file_bytes(&v10) == before,
        "the refused import wrote to the device"
    );
    let list = lab.zpool(&["list", "-H", "-o", "name"]);
    assert_eq!(list.stdout, "");

    // -d naming the device itself.
    let out = lab.zpool(&["import", "-d", v10.to_str().unwrap()]);
    assert!(
        out.stdout.starts_with(&header(&name, id, "ONLINE")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("v999"), "{}", out.stdout);

    // Damage labels one by one: listed while any label verifies, gone when none does.
    let size = before.len() as u64;
    let label_at = |l: u64| {
        let psize = size - size % (256 << 10);
        if l < 2 {
            l * (256 << 10)
        } else {
            psize - (4 - l) * (256 << 10)
        }
    };
    let file = std::fs::OpenOptions::new().write(true).open(&v10).unwrap();
    use std::os::unix::fs::FileExt;
    for l in 0..4u64 {
        // A byte inside the packed config of label l.
        file.write_at(&[0xff, 0x00, 0xff], label_at(l) + (16 << 10) + 64)
            .unwrap();
        let out = lab.zpool(&["import", "-d", v10.to_str().unwrap()]);
        if l < 3 {
            assert!(
                out.stdout.starts_with(&header(&name, id, "ONLINE")),
                "label {l}: {}",
                out.stdout
            );
        } else {
            assert_eq!(
                (out.code, out.stdout.as_str(), out.stderr.as_str()),
                (0, "", "no pools available to import\n")
            );
        }
    }

    // Random bytes in every label area: not a pool, no panic.
    let mut junk = vec![0u8; 256 << 10];
    let mut seed = 0x5eed_u64;
    for b in junk.iter_mut() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *b = (seed >> 33) as u8;
    }
    for l in 0..4 {
        file.write_at(&junk, label_at(l)).unwrap();
    }
    let out = lab.zpool(&["import", "-d", d]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("  pool: v999-pool\n"), "{}", out.stdout);
    assert!(!out.stdout.contains(&name), "{}", out.stdout);
}

// Why: OpenZFS pools are listed beside Zetta's own (which still import), and `zpool import
// -a` without readonly=on imports Zetta's pools while refusing each OpenZFS pool (exit 1).
#[test]
fn zetta_and_openzfs_pools_are_listed_together_and_import_all_refuses_only_openzfs() {
    let lab = Lab::new();
    let dir = place(&lab, "pools", &[&upgrade("zfs-pool-v5")]);
    let d = dir.to_str().unwrap();
    let disk = lab.disk("pools/zetta-disk", 256 << 20);
    let created = lab.zpool(&["create", "tank", &disk]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    assert_eq!(lab.zpool(&["export", "tank"]).code, 0);
    let (name, id) = zdb_pool(&dir.join("zfs-pool-v5.dat"));

    let out = lab.zpool(&["import", "-d", d]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let blocks: Vec<&str> = out.stdout.split("\n  pool: ").collect();
    assert_eq!(blocks.len(), 2, "{}", out.stdout);
    assert!(blocks[0].starts_with("  pool: tank\n"), "{}", out.stdout);
    assert!(
        blocks[1].starts_with(&header(&name, id, "ONLINE")[8..]),
        "{}",
        out.stdout
    );

    let all = lab.zpool(&["import", "-a", "-d", d]);
    assert_eq!(
        (all.code, all.stderr.as_str()),
        (
            1,
            format!("cannot import '{name}': OpenZFS pools can only be imported read-only for now\nuse 'zpool import -o readonly=on {name}'\n")
                .as_str()
        )
    );
    let list = lab.zpool(&["list", "-H", "-o", "name"]);
    assert_eq!(list.stdout, "tank\n");
}

/// Rewrites every label of `file` with `edit` applied to its config, resealing the checksum
/// as OpenZFS would (the label keeps its writer's byte order).
fn rewrite_labels(file: &Path, edit: &dyn Fn(&mut zetta::nvpair_xdr::XdrNvList)) {
    use std::os::unix::fs::FileExt;
    use zetta::vdev::openzfs::label;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let size = f.metadata().unwrap().len();
    for l in 0..label::LABEL_COUNT {
        let at = label::label_offset(size, l).unwrap() + label::PHYS_OFFSET_BYTES;
        let mut phys = vec![0u8; label::PHYS_SIZE_BYTES];
        f.read_exact_at(&mut phys, at).unwrap();
        let mut decoded = label::decode_vdev_phys(&phys, at).unwrap();
        edit(&mut decoded.config);
        let packed = zetta::nvpair_xdr::pack_with_endian(&decoded.config, phys[1]).unwrap();
        let mut fresh = vec![0u8; label::PHYS_SIZE_BYTES];
        fresh[..packed.len()].copy_from_slice(&packed);
        label::seal_label_eck(&mut fresh, at, decoded.order).unwrap();
        f.write_all_at(&fresh, at).unwrap();
    }
}

// Why: a pool whose label lists active features needed for reading that Zetta does not read
// must be listed UNAVAIL with OpenZFS's unsupported-feature status naming them, and its
// import refused with OpenZFS's words (the list on stdout, "unsupported version or feature").
#[test]
fn unsupported_read_features_are_listed_and_refused_in_openzfs_words() {
    use zetta::nvpair_xdr::{XdrNvList, XdrValue};
    let lab = Lab::new();
    let dir = place(&lab, "zstd", &["compression/testpool_zstd.tar.gz"]);
    let file = dir.join("testpool_zstd");
    rewrite_labels(&file, &|config: &mut XdrNvList| {
        let mut ffr = config.get_nvlist("features_for_read").unwrap().clone();
        ffr.add("com.delphix:device_removal", XdrValue::Boolean);
        ffr.add("com.example:future", XdrValue::Boolean);
        config.add("features_for_read", XdrValue::NvList(ffr));
    });
    let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
    let expected = format!(
        "{}status: The pool uses the following feature(s) not supported on this system:
\tcom.delphix:device_removal
\tcom.example:future
action: The pool cannot be imported. Access the pool on a system that supports
\tthe required feature(s), or recreate the pool from backup.
config:

{}",
        header("testpool_zstd", 4253333510760776491, "UNAVAIL"),
        tree(&[
            (0, "testpool_zstd", "UNAVAIL  unsupported feature(s)"),
            (2, file.to_str().unwrap(), "ONLINE"),
        ])
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, expected.as_str()));
    let refused = lab.zpool(&["import", "-d", dir.to_str().unwrap(), "testpool_zstd"]);
    assert_eq!(
        (refused.code, refused.stdout.as_str(), refused.stderr.as_str()),
        (
            1,
            "This pool uses the following feature(s) not supported by this system:\n\tcom.delphix:device_removal\n\tcom.example:future\n",
            "cannot import 'testpool_zstd': unsupported version or feature\n"
        )
    );
}

// Why: a striped OpenZFS pool missing a whole top-level vdev cannot be imported; listing it
// ONLINE from the devices present would promise a pool that is gone. Whether the missing
// device leaves a gap in the ids or was the last (old labels do not record how many
// top-level vdevs there are: the uberblock's guid sum tells), the pool is UNAVAIL with
// OpenZFS's missing-device words.
#[test]
fn a_stripe_missing_a_top_level_vdev_is_unavailable() {
    let lab = Lab::new();
    for (sub, present) in [("last", [1, 2]), ("gap", [1, 3])] {
        let rels: Vec<String> = present
            .iter()
            .map(|n| upgrade(&format!("zfs-pool-v2stripe{n}")))
            .collect();
        let rels: Vec<&str> = rels.iter().map(String::as_str).collect();
        let dir = place(&lab, sub, &rels);
        let out = lab.zpool(&["import", "-d", dir.to_str().unwrap()]);
        let (name, id) = zdb_pool(&dir.join(format!("zfs-pool-v2stripe{}.dat", present[0])));
        let devices: Vec<String> = present
            .iter()
            .map(|n| format!("{}/zfs-pool-v2stripe{n}.dat", dir.display()))
            .collect();
        let expected = format!(
            "{}status: One or more devices are missing from the system.
action: The pool cannot be imported. Attach the missing
\tdevices and try again.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-6X
config:

{}
\tAdditional devices are known to be part of this pool, though their
\texact configuration cannot be determined.
",
            header(&name, id, "UNAVAIL"),
            tree(&[
                (0, &name, "UNAVAIL  missing device"),
                (2, &devices[0], "ONLINE"),
                (2, &devices[1], "ONLINE"),
            ])
        );
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, expected.as_str()),
            "{sub}"
        );
        let refused = lab.zpool(&["import", "-d", dir.to_str().unwrap(), &name]);
        assert_eq!(
            (refused.code, refused.stderr.as_str()),
            (
                1,
                format!("cannot import '{name}': one or more devices is currently unavailable\n")
                    .as_str()
            ),
            "{sub}"
        );
    }
}
