//! Receive and send options: destination names (`-d`, `-e`, `fs@snap`), properties (`-p`,
//! `-o`, `-x`), holds (`-h`), a bookmark as incremental source, the pool's root dataset
//! as source and as `-F` target, and `-n` changing nothing.

use super::tests::{
    contents, full, incremental, pool, populate, receive, send, snap, snapshot_ids, write,
};
use super::*;
use crate::dmu::IoCtx;
use crate::spa::Spa;

fn options() -> RecvOptions {
    RecvOptions::default()
}

/// `-d` appends the sent name without its pool (creating parents), `-e` its last element,
/// a `fs@snap` target names the snapshot; bad combinations are refused in OpenZFS's words.
#[test]
fn destination_names() {
    let mut spa = pool();
    spa.create_filesystem("tank/a").unwrap();
    populate(&mut spa, "tank/a/src");
    snap(&mut spa, "tank/a/src@s");
    let stream = send(&mut spa, full("tank/a/src@s"));
    spa.create_filesystem("tank/d").unwrap();
    let discard = RecvOptions {
        name_mode: NameMode::DiscardFirst,
        ..options()
    };
    receive(&mut spa, "tank/d", &stream, discard.clone()).unwrap();
    assert_eq!(snapshot_ids(&mut spa, "tank/d/a/src")[0].0, "s");
    let last = RecvOptions {
        name_mode: NameMode::LastElement,
        ..options()
    };
    receive(&mut spa, "tank/d", &stream, last).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/d/src@s"),
        contents(&mut spa, "tank/a/src@s")
    );
    receive(&mut spa, "tank/named@other", &stream, options()).unwrap();
    assert_eq!(snapshot_ids(&mut spa, "tank/named")[0].0, "other");
    let refused = |spa: &mut Spa, target: &str| {
        let err = receive(spa, target, &stream, discard.clone())
            .err()
            .unwrap();
        super::tests::refusal(err)
    };
    let missing = |target: &str| {
        (
            RecvContext::Receive,
            RecvRefusal::TargetMissing {
                target: target.into(),
            },
        )
    };
    assert_eq!(refused(&mut spa, "tank/d@x"), missing("tank/d@x"));
    assert_eq!(
        refused(&mut spa, "tank/a/src@s"),
        (
            RecvContext::Receive,
            RecvRefusal::SnapshotWithNameMode { flag: 'd' }
        )
    );
    assert_eq!(refused(&mut spa, "tank/absent"), missing("tank/absent"));
    let err = receive(&mut spa, "tank/none/x", &stream, options())
        .err()
        .unwrap();
    assert_eq!(
        super::tests::refusal(err),
        (
            RecvContext::NewFilesystem,
            RecvRefusal::ParentMissing {
                parent: "tank/none".into()
            }
        )
    );
}

/// `-p` carries local properties, `-x` keeps one out, `-o` overrides; `-h` on the sending
/// side carries holds and on the receiving side drops them.
#[test]
fn properties_and_holds() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    spa.set_local_prop("tank/src", "org.test:color", "red")
        .unwrap();
    spa.set_local_prop("tank/src", "org.test:size", "big")
        .unwrap();
    spa.set_local_prop("tank/src", "compression", "gzip-6")
        .unwrap();
    snap(&mut spa, "tank/src@s");
    spa.hold("keep", "tank/src@s").unwrap();
    let request = SendRequest {
        options: SendOptions {
            properties: true,
            holds: true,
            ..SendOptions::default()
        },
        ..full("tank/src@s")
    };
    let stream = send(&mut spa, request);
    let custom = RecvOptions {
        exclude_props: vec!["org.test:size".to_string()],
        set_props: vec![("org.test:color".to_string(), "green".to_string())],
        ..options()
    };
    receive(&mut spa, "tank/p", &stream, custom).unwrap();
    // The stream's values are stored as received values, `-o`'s as local ones. Since format
    // 8 values are stored as OpenZFS stores them (an index, not the text), so `gzip-6`
    // reads back as its first name in OpenZFS's table, `gzip`, as `zfs get` prints it there.
    let props = spa.local_props("tank/p").unwrap();
    let pair = |name: &str, value: &str| (name.to_string(), value.to_string());
    assert!(props.contains(&pair("org.test:color", "green")));
    assert!(props.contains(&pair("compression$recvd", "gzip")));
    assert!(!props
        .iter()
        .any(|(name, _)| name.starts_with("org.test:size") || name.starts_with('%')));
    assert_eq!(
        spa.own_effective_props("tank/p").unwrap(),
        [pair("compression", "gzip"), pair("org.test:color", "green")]
    );
    assert_eq!(spa.holds("tank/p@s").unwrap()[0].0, "keep");
    let skip = RecvOptions {
        skip_holds: true,
        ..options()
    };
    receive(&mut spa, "tank/q", &stream, skip).unwrap();
    assert!(spa.holds("tank/q@s").unwrap().is_empty());
    // Without -p nothing is carried.
    let plain = send(&mut spa, full("tank/src@s"));
    receive(&mut spa, "tank/r", &plain, options()).unwrap();
    assert!(spa.local_props("tank/r").unwrap().is_empty());
}

/// A snapshot's user properties travel in `snapprops` and land as received values of the
/// new snapshot (libzfs `zfs_receive_one`); `-b` sends only received values, so a backup
/// sent back restores what was received, not what was changed on the backup (ZTS
/// `zfs_send-b`). Without this the receiving snapshot had no property at all.
#[test]
fn snapshot_properties_and_backup_send() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    spa.set_local_prop("tank/src", "org.test:prop", "val")
        .unwrap();
    snap(&mut spa, "tank/src@s");
    spa.set_snapshot_prop("tank/src@s", "org.test:snapprop", "val")
        .unwrap();
    let with = |properties: bool, backup: bool, to: &str| SendRequest {
        options: SendOptions {
            properties,
            backup,
            ..SendOptions::default()
        },
        ..full(to)
    };
    let stream = send(&mut spa, with(true, false, "tank/src@s"));
    receive(&mut spa, "tank/backup", &stream, options()).unwrap();
    let pair = |name: &str, value: &str| (name.to_string(), value.to_string());
    let of = |spa: &mut Spa, full: &str| -> Vec<(String, String)> {
        spa.snapshot_props()
            .unwrap()
            .into_iter()
            .filter(|(name, _, _)| name == full)
            .map(|(_, entry, value)| (entry, value))
            .collect()
    };
    assert_eq!(
        of(&mut spa, "tank/backup@s"),
        [pair("org.test:snapprop$recvd", "val")]
    );
    // Local changes on the backup, then `-b` back: only the received values travel.
    spa.set_local_prop("tank/backup", "org.test:prop", "newval")
        .unwrap();
    spa.set_local_prop("tank/backup", "org.test:newprop", "newval")
        .unwrap();
    spa.set_snapshot_prop("tank/backup@s", "org.test:snapprop", "newval")
        .unwrap();
    spa.set_snapshot_prop("tank/backup@s", "org.test:newsnapprop", "newval")
        .unwrap();
    let stream = send(&mut spa, with(false, true, "tank/backup@s"));
    receive(&mut spa, "tank/restore", &stream, options()).unwrap();
    assert_eq!(
        spa.local_props("tank/restore").unwrap(),
        [pair("org.test:prop$recvd", "val")]
    );
    assert_eq!(
        of(&mut spa, "tank/restore@s"),
        [pair("org.test:snapprop$recvd", "val")]
    );
    // Without -b the values in force go, the local ones winning.
    let stream = send(&mut spa, with(true, false, "tank/backup@s"));
    receive(&mut spa, "tank/plain", &stream, options()).unwrap();
    assert_eq!(
        of(&mut spa, "tank/plain@s"),
        [
            pair("org.test:newsnapprop$recvd", "newval"),
            pair("org.test:snapprop$recvd", "newval")
        ]
    );
    // A snapshot's props ZAP goes with it: the destroy leaves no object behind.
    let zap = spa.snapshots("tank/plain").unwrap()[0].2.props_zap;
    assert_ne!(zap, 0);
    spa.destroy_snapshot("tank/plain@s").unwrap();
    let ctx = io_ctx!(spa);
    assert!(!spa
        .dp
        .mos
        .object_exists(&ctx, crate::types::ObjectId(zap))
        .unwrap());
}

/// A bookmark stands in for a destroyed source snapshot (`zfs send -i #mark`).
#[test]
fn bookmark_as_incremental_source() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@a");
    spa.create_bookmark("tank/src@a", "tank/src#a").unwrap();
    let base = send(&mut spa, full("tank/src@a"));
    receive(&mut spa, "tank/dst", &base, options()).unwrap();
    write(&mut spa, "tank/src", 1, 0, b"after the bookmark");
    snap(&mut spa, "tank/src@b");
    spa.destroy_snapshot("tank/src@a").unwrap();
    let stream = send(&mut spa, incremental("#a", "tank/src@b", false));
    receive(&mut spa, "tank/dst", &stream, options()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@b")
    );
}

/// The pool's root dataset sends like any other, and `-F` replaces it (it always exists).
#[test]
fn root_dataset_as_source_and_target() {
    let mut spa = pool();
    write(&mut spa, "tank", 1, 0, b"root data");
    snap(&mut spa, "tank@r");
    let stream = send(&mut spa, full("tank@r"));
    receive(&mut spa, "tank/copy", &stream, options()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/copy"),
        contents(&mut spa, "tank@r")
    );
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@s");
    let other = send(&mut spa, full("tank/src@s"));
    spa.destroy_snapshot("tank@r").unwrap();
    let force = RecvOptions {
        force: true,
        ..options()
    };
    receive(&mut spa, "tank", &other, force).unwrap();
    assert_eq!(contents(&mut spa, "tank"), contents(&mut spa, "tank/src@s"));
    assert_eq!(snapshot_ids(&mut spa, "tank")[0].0, "s");
    assert!(spa.lookup_dir("tank/%recv").unwrap().is_none());
}

/// `-n` reads and verifies the whole stream, reports what it would do, and changes nothing.
#[test]
fn dry_run_changes_nothing() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@s");
    let stream = send(&mut spa, full("tank/src@s"));
    let names = spa.dataset_names().unwrap();
    let dry = RecvOptions {
        dry_run: true,
        ..options()
    };
    let mut receiver = receive(&mut spa, "tank/dst", &stream, dry.clone()).unwrap();
    assert_eq!(
        receiver.take_events(),
        [RecvEvent::Receiving {
            incremental: false,
            to_name: "tank/src@s".to_string(),
            dest_snap: "tank/dst@s".to_string(),
            dry_run: true,
        }]
    );
    assert_eq!(spa.dataset_names().unwrap(), names);
    let mut damaged = stream.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 4;
    assert!(receive(&mut spa, "tank/dst", &damaged, dry).is_err());
}
