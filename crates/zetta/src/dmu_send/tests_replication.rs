//! Replication semantics syncoid and admins rely on: `receive -F` of an incremental `-R`
//! stream destroys what the sender no longer has (and nothing on a damaged header); a
//! clone's origin as the `-i`/`-I` source (syncoid `-r`); work datasets of receives that
//! died, destroyed at import unless `-s` kept them resumable from their very BEGIN; `-c`
//! streams received without a second compression.

use super::record::Record;
use super::tests::{
    contents, full, incremental, pool, populate, random_bytes, receive, records, send, snap,
    snapshot_ids, write,
};
use super::*;
use crate::dmu::IoCtx;
use crate::spa::Spa;

fn short_names(spa: &mut Spa, fs: &str) -> Vec<String> {
    snapshot_ids(spa, fs)
        .into_iter()
        .map(|(n, _, _)| n)
        .collect()
}

fn replicate(to: &str, from: Option<&str>) -> SendRequest {
    SendRequest {
        replicate: true,
        intermediates: true,
        ..match from {
            Some(from) => incremental(from, to, true),
            None => full(to),
        }
    }
}

fn force() -> RecvOptions {
    RecvOptions {
        force: true,
        ..RecvOptions::default()
    }
}

/// A tree `tank/top` with children `a` and `b`, snapshots @1 @2 @3 on all three, received
/// with `-R` into `tank/backup/top`.
fn replicated_tree(spa: &mut Spa) {
    populate(spa, "tank/top");
    for child in ["a", "b"] {
        spa.create_filesystem(&format!("tank/top/{child}")).unwrap();
        write(spa, &format!("tank/top/{child}"), 1, 0, child.as_bytes());
    }
    for n in 1..=3 {
        write(spa, "tank/top", 9, 0, &random_bytes(n, 5000));
        spa.snapshot(&[
            format!("tank/top@{n}"),
            format!("tank/top/a@{n}"),
            format!("tank/top/b@{n}"),
        ])
        .unwrap();
    }
    spa.create_filesystem("tank/backup").unwrap();
    let stream = send(spa, replicate("tank/top@3", None));
    receive(spa, "tank/backup/top", &stream, RecvOptions::default()).unwrap();
    assert_eq!(short_names(spa, "tank/backup/top/b"), ["1", "2", "3"]);
}

/// The sender destroyed `@2` everywhere and the child `b`; the receiver made a snapshot of
/// its own. Without `-F` all of that stays; with `-F` it goes, and the rest matches.
#[test]
fn force_replication_destroys_what_the_sender_no_longer_has() {
    let mut spa = pool();
    replicated_tree(&mut spa);
    for fs in ["tank/top", "tank/top/a", "tank/top/b"] {
        spa.destroy_snapshot(&format!("{fs}@2")).unwrap();
    }
    for snapshot in ["tank/top/b@1", "tank/top/b@3"] {
        spa.destroy_snapshot(snapshot).unwrap();
    }
    spa.destroy_filesystem("tank/top/b").unwrap();
    spa.snapshot(&["tank/top@4".to_string(), "tank/top/a@4".to_string()])
        .unwrap();
    snap(&mut spa, "tank/backup/top/a@mine");
    let stream = send(&mut spa, replicate("tank/top@4", Some("@3")));

    let kept = RecvOptions::default();
    let error = receive(&mut spa, "tank/backup/top", &stream, kept).err();
    assert!(
        error.is_some(),
        "@mine is newer than @3: only -F may roll it away"
    );
    assert!(spa.lookup_dir("tank/backup/top/b").unwrap().is_some());
    assert!(short_names(&mut spa, "tank/backup/top").contains(&"2".to_string()));

    let mut receiver = receive(&mut spa, "tank/backup/top", &stream, force()).unwrap();
    assert!(spa.lookup_dir("tank/backup/top/b").unwrap().is_none());
    for fs in ["", "/a"] {
        assert_eq!(
            snapshot_ids(&mut spa, &format!("tank/backup/top{fs}")),
            snapshot_ids(&mut spa, &format!("tank/top{fs}")),
            "{fs}"
        );
    }
    assert_eq!(
        contents(&mut spa, "tank/backup/top/a@4"),
        contents(&mut spa, "tank/top/a@4")
    );
    let destroyed: Vec<String> = receiver
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            RecvEvent::Destroying { name } => Some(name),
            _ => None,
        })
        .collect();
    assert!(destroyed.contains(&"tank/backup/top/b".to_string()));
    assert!(destroyed.contains(&"tank/backup/top@2".to_string()));
    assert!(destroyed.contains(&"tank/backup/top/a@mine".to_string()));
}

/// The destroying waits for the header's END to verify: a damaged header destroys nothing.
#[test]
fn damaged_replication_header_destroys_nothing() {
    let mut spa = pool();
    replicated_tree(&mut spa);
    spa.destroy_snapshot("tank/top@2").unwrap();
    let fours = ["tank/top@4", "tank/top/a@4", "tank/top/b@4"].map(str::to_string);
    spa.snapshot(&fours).unwrap();
    let plan = plan_send(&mut spa, &replicate("tank/top@4", Some("@3"))).unwrap();
    let mut header = plan.header.unwrap();
    let last = header.len() - 1;
    header[last] ^= 0x40;
    assert!(receive(&mut spa, "tank/backup/top", &header, force()).is_err());
    assert_eq!(short_names(&mut spa, "tank/backup/top"), ["1", "2", "3"]);
}

/// `zfs send -i origin clone@s` and `-I origin clone@s`: the origin of a clone is a valid
/// incremental source, received as a clone of the receiver's copy of the origin.
#[test]
fn clone_sent_from_its_origin() {
    let mut spa = pool();
    populate(&mut spa, "tank/fs");
    snap(&mut spa, "tank/fs@base");
    spa.clone_snapshot("tank/fs@base", "tank/kid").unwrap();
    write(&mut spa, "tank/kid", 1, 0, b"the clone's own");
    snap(&mut spa, "tank/kid@1");
    write(&mut spa, "tank/kid", 2, 0, b"more");
    snap(&mut spa, "tank/kid@2");
    spa.create_filesystem("tank/dst").unwrap();
    let base = send(&mut spa, full("tank/fs@base"));
    receive(&mut spa, "tank/dst/fs", &base, RecvOptions::default()).unwrap();
    let one = send(&mut spa, incremental("tank/fs@base", "tank/kid@2", false));
    receive(&mut spa, "tank/dst/one", &one, RecvOptions::default()).unwrap();
    assert_eq!(short_names(&mut spa, "tank/dst/one"), ["2"]);
    let every = send(&mut spa, incremental("tank/fs@base", "tank/kid@2", true));
    receive(&mut spa, "tank/dst/every", &every, RecvOptions::default()).unwrap();
    assert_eq!(short_names(&mut spa, "tank/dst/every"), ["1", "2"]);
    for fs in ["tank/dst/one", "tank/dst/every"] {
        assert_eq!(
            spa.origin_of(fs).unwrap().as_deref(),
            Some("tank/dst/fs@base")
        );
        assert_eq!(
            contents(&mut spa, &format!("{fs}@2")),
            contents(&mut spa, "tank/kid@2")
        );
    }
}

/// A receive whose process died (the receiver is dropped mid-stream after a commit):
/// without `-s` its work datasets — a new filesystem's own, an existing one's `%recv` —
/// are destroyed by the import-time cleanup; with `-s` the state stays, with a token from
/// BEGIN on, and `zfs send -t` completes it.
#[test]
fn dead_receives_are_cleaned_unless_resumable() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@a");
    write(&mut spa, "tank/src", 7, 0, &random_bytes(7, 200_000));
    snap(&mut spa, "tank/src@b");
    let full_stream = send(&mut spa, full("tank/src@a"));
    let inc_stream = send(&mut spa, incremental("@a", "tank/src@b", false));
    receive(&mut spa, "tank/old", &full_stream, RecvOptions::default()).unwrap();
    let die = |spa: &mut Spa, target: &str, stream: &[u8], resumable: bool| {
        let options = RecvOptions {
            resumable,
            ..RecvOptions::default()
        };
        let mut receiver = Receiver::new(target, options);
        receiver.feed(spa, &stream[..stream.len() / 3]).unwrap();
        spa.sync().unwrap();
        drop(receiver);
    };
    die(&mut spa, "tank/new", &full_stream, false);
    die(&mut spa, "tank/old", &inc_stream, false);
    die(&mut spa, "tank/kept", &full_stream, true);
    assert!(spa.lookup_dir("tank/old/%recv").unwrap().is_some());
    let mut debris = destroy_interrupted_receives(&mut spa).unwrap();
    debris.sort();
    assert_eq!(debris, ["tank/new", "tank/old/%recv"]);
    assert!(spa.lookup_dir("tank/new").unwrap().is_none());
    assert_eq!(short_names(&mut spa, "tank/old"), ["a"]);
    // The -s receive died before its first refresh of the token: the BEGIN's token resumes.
    let token = receive_resume_token(&mut spa, "tank/kept")
        .unwrap()
        .unwrap();
    let token = ResumeToken::decode(&token).unwrap();
    let mut sender = Sender::resume(&mut spa, &token).unwrap();
    let mut rest = Vec::new();
    while !sender.fill(&mut spa, &mut rest, 1 << 20).unwrap() {}
    let resumable = RecvOptions {
        resumable: true,
        ..RecvOptions::default()
    };
    receive(&mut spa, "tank/kept", &rest, resumable).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/kept@a"),
        contents(&mut spa, "tank/src@a")
    );
    assert_eq!(receive_resume_token(&mut spa, "tank/kept").unwrap(), None);
}

/// (compression id, psize, checksum) of each level-0 block of object `DATA_OBJECT`.
fn data_blocks(spa: &mut Spa, snapshot: &str) -> Vec<(u8, u32, [u64; 4])> {
    let fs = snapshot.split('@').next().unwrap();
    let (_, object, phys) = spa
        .snapshots(fs)
        .unwrap()
        .into_iter()
        .find(|(n, _, _)| n == snapshot)
        .unwrap();
    let ctx = io_ctx!(spa);
    let mut out = Vec::new();
    let mut visit = |bp: &crate::zio::blkptr::BlockPointer, at: crate::zio::Bookmark| {
        if at.object == DATA_OBJECT && at.level == 0 {
            out.push((bp.compression, bp.psize_bytes, bp.checksum));
        }
    };
    crate::dmu::ObjectSet::walk_blocks(&ctx, object, &phys.bp, &mut visit, false).unwrap();
    out
}

/// A plain file's object number, clear of the ZPL's own objects.
const DATA_OBJECT: u64 = 100;

/// A `-c` receive writes blocks as they were sent: gzip-9 blocks stay gzip-9 (same size,
/// same checksum) in a target whose compression is lz4, where a plain receive compresses
/// them with lz4 again.
#[test]
fn compressed_receive_stores_blocks_as_sent() {
    let mut spa = pool();
    spa.create_filesystem("tank/src").unwrap();
    spa.set_local_prop("tank/src", "compression", "gzip-9")
        .unwrap();
    let text: Vec<u8> = b"all work and no play makes jack a dull boy\n"
        .iter()
        .cycle()
        .take((1 << 20) + 5000)
        .copied()
        .collect();
    write(&mut spa, "tank/src", DATA_OBJECT, 0, &text);
    snap(&mut spa, "tank/src@a");
    let sent = data_blocks(&mut spa, "tank/src@a");
    let gzip = zetta_zcommon::compress::Compression::Gzip(9).algorithm_id();
    assert!(
        sent.len() >= 8 && sent.iter().all(|(c, _, _)| *c == gzip),
        "{sent:?}"
    );
    let mut request = full("tank/src@a");
    request.options.compressed = true;
    let stream = send(&mut spa, request);
    receive(&mut spa, "tank/raw", &stream, RecvOptions::default()).unwrap();
    assert_eq!(data_blocks(&mut spa, "tank/raw@a"), sent);
    assert_eq!(
        contents(&mut spa, "tank/raw@a"),
        contents(&mut spa, "tank/src@a")
    );
    let plain = send(&mut spa, full("tank/src@a"));
    receive(&mut spa, "tank/plain", &plain, RecvOptions::default()).unwrap();
    let lz4 = zetta_zcommon::compress::Compression::Lz4.algorithm_id();
    assert!(data_blocks(&mut spa, "tank/plain@a")
        .iter()
        .all(|(c, _, _)| *c == lz4));
}

/// libzfs's compound streams (stream version 4): `-I` alone is a compound stream whose
/// header has no nvlist, `-p` one whose header says `not_recursive`, and both may land on
/// a snapshot name given to `zfs receive` (only a recursive stream refuses it, libzfs
/// `zfs_receive_package`); `-R` keeps refusing it. `fss` is keyed by `0x<guid>`, and a
/// substream finds its filesystem's properties there by its snapshot's guid. Before
/// version 4 the `-I` stream had no header and the `-p` header was Zetta's own shape.
#[test]
fn libzfs_compound_streams_received() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    spa.set_local_prop("tank/src", "compression", "lz4")
        .unwrap();
    spa.set_local_prop("tank/src", "recordsize", "65536")
        .unwrap();
    for n in 1..=3 {
        write(&mut spa, "tank/src", 9, 0, &random_bytes(n, 3000));
        snap(&mut spa, &format!("tank/src@{n}"));
    }
    // -I: BEGIN(compound, no payload), END, the substreams.
    let chain = send(&mut spa, incremental("@1", "tank/src@3", true));
    let header = records(&chain);
    assert!(
        matches!(&header[0], Record::Begin(b) if b.compound && b.info.get_str("tosnap").is_none())
    );
    let base = send(&mut spa, full("tank/src@1"));
    receive(&mut spa, "tank/dst", &base, RecvOptions::default()).unwrap();
    receive(&mut spa, "tank/dst", &chain, RecvOptions::default()).unwrap();
    assert_eq!(short_names(&mut spa, "tank/dst"), ["1", "2", "3"]);
    assert_eq!(
        contents(&mut spa, "tank/dst@3"),
        contents(&mut spa, "tank/src@3")
    );
    // -p: typed properties (index and number as uint64) come back as their words.
    let request = SendRequest {
        options: SendOptions {
            properties: true,
            ..SendOptions::default()
        },
        ..full("tank/src@3")
    };
    let with_props = send(&mut spa, request);
    let Record::Begin(begin) = &records(&with_props)[0] else {
        panic!("no header");
    };
    assert_eq!(begin.info.get_u64("not_recursive"), Some(1));
    let Some(crate::nvlist::NvValue::List(fss)) = begin.info.entries.get("fss") else {
        panic!("fss is not libzfs's nvlist");
    };
    let (key, entry) = fss.entries.iter().next().unwrap();
    let crate::nvlist::NvValue::List(entry) = entry else {
        panic!("fss entry");
    };
    assert!(key.starts_with("0x"));
    let props = entry.get_list("props").unwrap();
    assert_eq!(props.get_u64("compression"), Some(15));
    assert_eq!(props.get_u64("recordsize"), Some(65536));
    receive(&mut spa, "tank/p@kept", &with_props, RecvOptions::default()).unwrap();
    assert_eq!(short_names(&mut spa, "tank/p"), ["kept"]);
    let effective = spa.own_effective_props("tank/p").unwrap();
    assert!(effective.contains(&("compression".to_string(), "lz4".to_string())));
    assert!(effective.contains(&("recordsize".to_string(), "65536".to_string())));
    // -R into a snapshot name: libzfs's refusal.
    let tree = send(&mut spa, replicate("tank/src@3", None));
    let refused = receive(&mut spa, "tank/r@x", &tree, RecvOptions::default())
        .err()
        .expect("a recursive stream into a snapshot name");
    assert_eq!(
        super::tests::refusal(refused),
        (
            RecvContext::Receive,
            RecvRefusal::SnapshotNameForMultiSnapshot
        )
    );
}

/// The END closing a compound stream with a checksum in its trailer, as `zstream redup`
/// writes it (libzfs writes zeros and never reads the trailer of that END): received as
/// the all-zero one is. Anything else in that END is still a bad record. Why: zfs-fuse's
/// `send -D -R` after `zstream redup` was refused ("a substream must start with BEGIN").
#[test]
fn closing_end_with_a_checksum_is_accepted() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@1");
    write(&mut spa, "tank/src", 9, 0, &random_bytes(4, 3000));
    snap(&mut spa, "tank/src@2");
    let mut chain = send(&mut spa, replicate("tank/src@2", Some("@1")));
    // The closing END, rewritten with a trailer checksum (DRR_END is type 5).
    let mut end = chain.len() - record::HEADER_SIZE_BYTES;
    if chain[end..].iter().skip(4).any(|b| *b != 0) {
        end = chain.len();
        chain.resize(end + record::HEADER_SIZE_BYTES, 0);
    }
    chain[end] = 5;
    chain[end + record::CHECKSUM_OFFSET] = 0x5e;
    let base = send(&mut spa, full("tank/src@1"));
    receive(&mut spa, "tank/dst", &base, RecvOptions::default()).unwrap();
    receive(&mut spa, "tank/dst", &chain, RecvOptions::default()).unwrap();
    assert_eq!(short_names(&mut spa, "tank/dst"), ["1", "2"]);
    assert_eq!(
        contents(&mut spa, "tank/dst@2"),
        contents(&mut spa, "tank/src@2")
    );
    chain[end + 8] = 1;
    receive(&mut spa, "tank/dst2", &base, RecvOptions::default()).unwrap();
    let Err(refused) = receive(&mut spa, "tank/dst2", &chain, RecvOptions::default()) else {
        panic!("a closing END with a guid was accepted");
    };
    assert!(
        refused.to_string().contains("must start with BEGIN"),
        "{refused}"
    );
}
