//! The DSL's space and txgs where OpenZFS keeps them (issue 14, "the DSL's last private
//! words and accountings"), checked with OpenZFS 2.3's own `zdb` (`common::oracle`) on
//! pools the engine wrote to files:
//! - `$MOS`'s USED is the MOS's own blocks (`dsl_pool_mos_diduse_space`), a child of the
//!   root dir (its CHILD counts it), what `zdb -d` prints for `Dataset mos [META]`;
//! - the root dataset's `ds_prev_snap_txg` and every `TXG_INITIAL` dataset's
//!   `ds_creation_txg` are 1, as in OpenZFS's pools (the `unclean_export` fixture);
//! - a long symlink's spill block counts in its dnode's `dn_used` (zdb's `dsize`).
//!
//! Each pool is exported, then read by zdb: the words it prints, and "No leaks".

mod common;

use common::oracle::{assert_zdb_no_leaks, zdb};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use zetta::io::{DeviceRef, FileDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};
use zetta::zpl::{Creds, Timespec};

fn pool(name: &str) -> (std::path::PathBuf, Spa) {
    let (dir, path) = common::scratch_disk(&format!("zetta-dsl-space-{name}"), 256 << 20);
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![(
            path.clone(),
            Arc::new(FileDevice::open(&path).unwrap()) as DeviceRef,
        )],
        is_log: false,
    };
    let spa = Spa::create("tank", &[spec], &CreateOptions::default()).unwrap();
    (dir, spa)
}

fn zdb_ok(dir: &Path, args: &[&str]) -> String {
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

/// The value of `key = VALUE` in a zdb dump (the first such line).
fn field(dump: &str, key: &str) -> Option<String> {
    let prefix = format!("{key} = ");
    dump.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
}

/// zdb's nicenum ("73.5K", "1.50M", "0") back to bytes (to its precision).
fn nicenum(text: &str) -> f64 {
    let (number, unit) =
        text.split_at(text.find(|c: char| c.is_alphabetic()).unwrap_or(text.len()));
    let scale = match unit {
        "" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        other => panic!("unit {other}"),
    };
    number.parse::<f64>().unwrap() * scale
}

// Why: OpenZFS charges the MOS's own blocks to `$MOS` (`dsl_pool_sync` applies the
// deltas `dsl_dataset_block_born`/`_kill` gather for the MOS), a child of the root dir, so
// the root's USED covers the whole pool as zdb sees it and `zdb -d` prints the MOS's size
// on its `Dataset mos [META]` line. Zetta left `$MOS` at 0: zdb printed "0" and a pool
// OpenZFS then wrote to would take `$MOS` below zero. The engine's own audit checks
// `$MOS` against the MOS tree (but the last pass's births, which wait for the next txg).
#[test]
fn mos_space_is_charged_to_the_mos_dir() {
    let (dir, mut spa) = pool("mos");
    spa.create_filesystem("tank/a").unwrap();
    for i in 0..4 {
        common::write_root_file(&mut spa, "tank/a", &format!("f{i}"), 0, &[7u8; 40_000]);
        spa.sync().unwrap();
    }
    spa.snapshot(&["tank/a@s".to_string()]).unwrap();
    spa.sync().unwrap();
    let audit = spa.audit_space().unwrap();
    assert!(audit.mismatches.is_empty(), "{:#?}", audit.mismatches);
    spa.export().unwrap();

    let listing = zdb_ok(&dir, &["-d", "tank"]);
    let mos_line = listing
        .lines()
        .find(|l| l.starts_with("Dataset mos [META]"))
        .unwrap_or_else(|| panic!("{listing}"));
    let mos_used = mos_line.split(", ").nth(3).unwrap();
    assert!(nicenum(mos_used) > 16384.0, "{mos_line}");
    // The root dir's CHILD is `$MOS` plus tank/a (both from the MOS dump of the dirs).
    let root_dir = zdb_ok(&dir, &["-dddd", "tank", "1"]);
    let root_dir: u64 = field(&root_dir, "root_dataset").unwrap().parse().unwrap();
    let root = zdb_ok(&dir, &["-dddd", "tank", &root_dir.to_string()]);
    let child = nicenum(&field(&root, "used_breakdown[CHILD]").unwrap());
    let used = nicenum(&field(&root, "used_bytes").unwrap());
    assert!(child >= nicenum(mos_used), "{root}");
    assert!(used > child, "{root}");
    assert_zdb_no_leaks(&dir, "tank", "");
    let _ = std::fs::remove_dir_all(&dir);
}

// Why: OpenZFS gives the datasets of a pool's first txg (`TXG_INITIAL`) creation txg 1
// (`dsl_dataset_create_sync_dd`), `$ORIGIN@$ORIGIN` 1 as well, and the root dataset, a
// clone of that snapshot, `ds_prev_snap_txg` 1; Zetta wrote 4, 4 and 0. With 1 no block
// is born at or before the root's previous snapshot, so the root's frees stay frees: the
// root's files written and deleted leave no leak to zdb.
#[test]
fn root_dataset_txgs_are_openzfs_ones() {
    let (dir, mut spa) = pool("root-txg");
    common::write_root_file(&mut spa, "tank", "f", 0, &[3u8; 300_000]);
    spa.sync().unwrap();
    spa.with_zpl("tank", |vfs, os, ctx| {
        let gone = vfs.unlink(os, ctx, vfs.root, b"f", Timespec::now())?;
        vfs.reclaim(os, ctx, gone.object)
    })
    .unwrap();
    spa.sync().unwrap();
    spa.export().unwrap();

    let listing = zdb_ok(&dir, &["-d", "tank"]);
    let root_line = listing
        .lines()
        .find(|l| l.starts_with("Dataset tank [ZPL]"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(root_line.contains(", cr_txg 1,"), "{root_line}");
    let id: u64 = root_line
        .split(", ID ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let head = zdb_ok(&dir, &["-dddd", "tank", &id.to_string()]);
    assert_eq!(
        field(&head, "prev_snap_txg").as_deref(),
        Some("1"),
        "{head}"
    );
    assert_eq!(field(&head, "creation_txg").as_deref(), Some("1"), "{head}");
    let origin: u64 = field(&head, "prev_snap_obj").unwrap().parse().unwrap();
    let origin = zdb_ok(&dir, &["-dddd", "tank", &origin.to_string()]);
    assert_eq!(
        field(&origin, "creation_txg").as_deref(),
        Some("1"),
        "{origin}"
    );
    assert_zdb_no_leaks(&dir, "tank", "");
    let _ = std::fs::remove_dir_all(&dir);
}

// Why: a symlink target too long for the bonus lives in a spill block (session 19), and
// OpenZFS counts that block in the dnode's `dn_used` (`dnode_diduse_space` from the spill
// dbuf's write), which zdb prints as the object's dsize: a 3999-byte target's object must
// show the spill block's size, not 0. The target is incompressible: a compressible one
// (3999 'x') is a tiny compressed spill block, embedded in its pointer by OpenZFS as by
// Zetta, and then dsize 0 is right.
#[test]
fn a_spilled_symlink_counts_its_spill_block() {
    let (dir, mut spa) = pool("spill");
    let mut rng = zetta::rand::SeededRng::new(3999);
    let mut target = vec![0u8; 3999];
    rng.fill(&mut target);
    for b in &mut target {
        *b = b'a' + *b % 26;
    }
    let object = spa
        .with_zpl("tank", |vfs, os, ctx| {
            vfs.symlink(
                os,
                ctx,
                vfs.root,
                b"long",
                &target,
                Creds::default(),
                Timespec::now(),
            )
        })
        .unwrap()
        .object;
    spa.sync().unwrap();
    spa.export().unwrap();
    let dump = zdb_ok(&dir, &["-dddd", "tank/", &object.to_string()]);
    // "Object lvl iblk dblk dsize dnsize lsize %full type", then the object's row.
    let row = dump
        .lines()
        .map(str::split_whitespace)
        .map(Iterator::collect::<Vec<_>>)
        .find(|w| w.first() == Some(&object.to_string().as_str()) && w.len() > 5)
        .unwrap_or_else(|| panic!("{dump}"));
    assert!(nicenum(row[4]) >= 4096.0, "dsize of {row:?}\n{dump}");
    assert!(dump.contains("SPILL_BLKPTR"), "{dump}");
    assert_zdb_no_leaks(&dir, "tank", "");
    let _ = std::fs::remove_dir_all(&dir);
}
