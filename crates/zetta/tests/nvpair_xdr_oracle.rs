//! OpenZFS's XDR nvlists, checked against real OpenZFS: the labels of the pools that OpenZFS's
//! own test suite ships (the zfs-test package, unpacked by scripts/oracle.sh into
//! /opt/zetta-oracle or $ZETTA_ORACLE_PREFIX) are decoded by `zetta::nvpair_xdr`, printed in
//! `dump_nvlist`'s format and compared with what OpenZFS 2.3's `zdb -l` prints for the same
//! file, then re-encoded byte for byte.
//!
//! Why: Zetta could not read a single byte of a real ZFS pool ("zpool import -d" found no
//! pools); the XDR nvlist of the vdev label is the first structure an import reads.

use std::os::unix::fs::FileExt;
mod common;

use common::oracle::{fixture, zdb};
use std::path::Path;
use std::process::Command;
use zetta::nvpair_xdr::{self, dump_nvlist, XdrValue};
use zetta::rand::SeededRng;

/// Where a label's packed config starts on the device (after the 8 KiB blank space and the
/// 8 KiB boot header), and how long it may be (`vdev_phys_t` minus its 40-byte checksum tail).
const LABEL_NVLIST_OFFSET: usize = 16 << 10;
const LABEL_NVLIST_SIZE: usize = (112 << 10) - 40;
const LABEL_SIZE: usize = 256 << 10;

/// The 112 KiB config area of label `l` (0..4) of a device image, read in place (some
/// fixtures are sparse 1 GiB files).
fn label_area(file: &Path, l: usize) -> Vec<u8> {
    let f = std::fs::File::open(file).unwrap();
    let size = f.metadata().unwrap().len() as usize / LABEL_SIZE * LABEL_SIZE;
    let start = if l < 2 {
        l * LABEL_SIZE
    } else {
        size - (4 - l) * LABEL_SIZE
    };
    let mut area = vec![0u8; LABEL_NVLIST_SIZE];
    f.read_exact_at(&mut area, (start + LABEL_NVLIST_OFFSET) as u64)
        .unwrap();
    area
}

/// What `zdb -l FILE` prints for label 0: the lines between its header and "labels = ".
fn zdb_label0(file: &Path) -> String {
    let out = Command::new(zdb()).arg("-l").arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "zdb -l {}: {text}{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    assert!(
        lines.by_ref().any(|l| l.trim() == "LABEL 0"),
        "no LABEL 0 in zdb -l output:\n{text}"
    );
    let mut body = String::new();
    for line in lines.skip(1) {
        if line.trim_start().starts_with("labels = ") || line.starts_with("----") {
            break;
        }
        body.push_str(line);
        body.push('\n');
    }
    assert!(
        body.contains("    vdev_tree:\n"),
        "no vdev_tree in zdb -l output:\n{text}"
    );
    body
}

/// Decodes label 0 of a fixture, compares it with zdb -l, and round-trips all four labels.
fn check_against_zdb(rel: &str) -> nvpair_xdr::XdrNvList {
    let fx = fixture(rel);
    let expected = zdb_label0(&fx.file);
    let mut first = None;
    for l in 0..4 {
        let area = label_area(&fx.file, l);
        let u = nvpair_xdr::unpack(&area).unwrap_or_else(|e| panic!("{rel} label {l}: {e}"));
        // Byte for byte: OpenZFS's encoder and ours write the same bytes.
        let again = nvpair_xdr::pack_with_endian(&u.list, u.endian).unwrap();
        assert_eq!(again.len(), u.len, "{rel} label {l}: length");
        assert!(
            again == area[..u.len],
            "{rel} label {l}: re-encoding differs"
        );
        if l == 0 {
            assert_eq!(dump_nvlist(&u.list, 4), expected, "{rel}: zdb -l differs");
            first = Some(u.list);
        }
    }
    first.unwrap()
}

/// Fields as zdb prints them, so a failure names the field.
fn zdb_field(dump: &str, key: &str) -> Option<String> {
    dump.lines()
        .find_map(|l| l.strip_prefix(&format!("    {key}: ")).map(str::to_string))
}

#[test]
fn unclean_export_label_matches_zdb_field_by_field() {
    // Why: the first real-pool structure, read wrong or not at all, hides every pool.
    let rel = "cli_root/zpool_import/blockfiles/unclean_export.dat.bz2";
    let list = check_against_zdb(rel);
    let fx = fixture(rel);
    let zdb_text = zdb_label0(&fx.file);
    assert_eq!(list.get_str("name"), Some("unclean_export"));
    assert_eq!(
        zdb_field(&zdb_text, "name"),
        Some("'unclean_export'".into())
    );
    for key in ["version", "txg", "pool_guid", "guid", "top_guid", "state"] {
        assert_eq!(
            list.get_u64(key).map(|v| v.to_string()),
            zdb_field(&zdb_text, key),
            "{key}"
        );
    }
    assert_eq!(list.get_u64("version"), Some(5000));
    assert_eq!(list.get_u64("txg"), Some(4));
    assert_eq!(list.get_u64("pool_guid"), Some(7180307423654184295));
    let tree = list.get_nvlist("vdev_tree").unwrap();
    assert_eq!(tree.get_str("type"), Some("file"));
    assert_eq!(tree.get_u64("guid"), list.get_u64("guid"));
    assert_eq!(
        tree.get_str("path"),
        Some("/export/home/delphix/unclean_export.dat")
    );
    // features_for_read: an empty nvlist, present.
    assert_eq!(
        list.get("features_for_read"),
        Some(&XdrValue::NvList(nvpair_xdr::XdrNvList::new()))
    );
}

#[test]
fn pool_version_labels_match_zdb() {
    // Why: pools of every era must be readable (v1 to v15 layouts, mirror/raidz children,
    // spares, the big-endian SPARC pool's label written with endian byte 0).
    for rel in [
        "cli_root/zpool_upgrade/blockfiles/zfs-pool-v1.dat.bz2",
        "cli_root/zpool_upgrade/blockfiles/zfs-pool-v15.dat.bz2",
        "cli_root/zpool_upgrade/blockfiles/zfs-pool-v3hotspare1.dat.bz2",
        "cli_root/zpool_upgrade/blockfiles/zfs-pool-v2raidz2.dat.bz2",
        "cli_root/zpool_upgrade/blockfiles/zfs-pool-v999.dat.bz2",
        "cli_root/zpool_import/blockfiles/cryptv0.dat.bz2",
        "history/sparc.migratedpool.DAT.Z",
    ] {
        check_against_zdb(rel);
    }
}

#[test]
fn modern_pool_label_with_features_matches_zdb() {
    // Why: a typical v5000 pool's label lists its read features as BOOLEAN pairs (names
    // without values) and carries errata/hostid; these must decode and re-encode exactly.
    let list = check_against_zdb("compression/testpool_zstd.tar.gz");
    assert_eq!(list.get_str("name"), Some("testpool_zstd"));
    let features = list.get_nvlist("features_for_read").unwrap();
    let names: Vec<_> = features
        .pairs
        .iter()
        .map(|p| {
            (
                String::from_utf8_lossy(&p.name).into_owned(),
                p.value.clone(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("com.delphix:hole_birth".to_string(), XdrValue::Boolean),
            ("com.delphix:embedded_data".to_string(), XdrValue::Boolean),
        ]
    );
}

#[test]
fn mirror_label_children_match_zdb() {
    // Why: the vdev tree (an nvlist array of children) is what import assembles a pool from.
    let rel = "cli_root/zpool_upgrade/blockfiles/zfs-pool-v3mirror1.dat.bz2";
    let list = check_against_zdb(rel);
    assert_eq!(list.get_str("name"), Some("pool-v3mirror"));
    assert_eq!(list.get_u64("version"), Some(3));
    let tree = list.get_nvlist("vdev_tree").unwrap();
    assert_eq!(tree.get_str("type"), Some("mirror"));
    assert_eq!(tree.get_u64("guid"), list.get_u64("top_guid"));
    let children = tree.get_nvlist_array("children").unwrap();
    let paths: Vec<_> = children.iter().map(|c| c.get_str("path")).collect();
    assert_eq!(
        paths,
        [
            Some("/tmp/zfs-pool-v3mirror1.dat"),
            Some("/tmp/zfs-pool-v3mirror2.dat"),
            Some("/tmp/zfs-pool-v3mirror3.dat"),
        ]
    );
    assert_eq!(children[0].get_u64("guid"), list.get_u64("guid"));
}

/// The first 64 bytes of unclean_export.dat's label 0 config (device offset 0x4000), as
/// drawn in docs/ONDISK.md.
const GOLDEN_LABEL_HEAD: &str = "01010000 00000000 00000001 00000024 \
                                 00000020 00000007 76657273 696f6e00 \
                                 00000008 00000001 00000000 00001388 \
                                 0000002c 00000028 00000004 6e616d65";

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap())
        .collect()
}

#[test]
fn golden_vector_of_a_real_label() {
    // Why: pins the byte layout (header, version, flags, pair sizes, padding) to real bytes.
    let fx = fixture("cli_root/zpool_import/blockfiles/unclean_export.dat.bz2");
    let area = label_area(&fx.file, 0);
    assert_eq!(area[..64], hex(GOLDEN_LABEL_HEAD)[..]);
    // The same bytes from our encoder, from a list built by hand.
    let mut l = nvpair_xdr::XdrNvList::new();
    l.add("version", XdrValue::Uint64(5000));
    l.add("name", XdrValue::String(b"unclean_export".to_vec()));
    let packed = nvpair_xdr::pack(&l).unwrap();
    assert_eq!(packed[..64], hex(GOLDEN_LABEL_HEAD)[..]);
    assert_eq!(packed[..packed.len() - 8], area[..packed.len() - 8]);
}

#[test]
fn hostile_label_bytes_error_never_panic() {
    // Why: a label is outside input; truncations, flipped bits and huge lengths must give
    // errors (with an offset inside the buffer), never a panic or a huge allocation.
    let fx = fixture("cli_root/zpool_upgrade/blockfiles/zfs-pool-v3mirror1.dat.bz2");
    let area = label_area(&fx.file, 0);
    let len = nvpair_xdr::unpack(&area).unwrap().len;
    let good = &area[..len];
    // Every truncation fails, with an offset within the bytes given.
    for cut in 0..len {
        let err = nvpair_xdr::unpack(&good[..cut]).unwrap_err();
        assert!(err.offset <= cut, "cut {cut}: {err}");
    }
    // Huge lengths and counts in every word.
    for at in (0..len).step_by(4) {
        for word in [0xffff_ffffu32, 0x7fff_ffff, 0x8000_0000, 0x0100_0000] {
            let mut b = good.to_vec();
            b[at..at + 4].copy_from_slice(&word.to_be_bytes());
            nvpair_xdr::fuzz_check(&b);
        }
    }
    // Random flips, seeded.
    let mut rng = SeededRng::new(12);
    for _ in 0..20_000 {
        let mut b = good.to_vec();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(len as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        nvpair_xdr::fuzz_check(&b);
    }
    // Random garbage after a valid header.
    for _ in 0..2_000 {
        let mut b = vec![0u8; 4 + rng.below(512) as usize];
        rng.fill(&mut b);
        b[0] = 1;
        b[1] = 1;
        nvpair_xdr::fuzz_check(&b);
    }
}
