//! Replication tests on memory pools: round trips (full, incremental, `-I` chains, `-c`,
//! `-R` with a clone), guid preservation, the refusals of the seed post "ZFS snapshots and
//! cold storage" reproduced step by step, `-F`, chunked sends, estimates and golden bytes.
//! Hostile streams and resume are in `tests_hostile.rs`.

use super::record::{Record, RecordParser, RecordWriter, FEATURE_EMBED_DATA, FEATURE_LZ4};
use super::*;
use crate::dmu::objset::object_type;
use crate::io::{DeviceRef, MemDevice};
use crate::rand::SeededRng;
use crate::spa::{CreateOptions, Spa, TopKind, TopSpec};
use crate::types::ObjectId;
use std::sync::Arc;

pub(super) fn pool() -> Spa {
    let device = Arc::new(MemDevice::new("/mem/send", 512 << 20));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/send".to_string(), device as DeviceRef)],
        is_log: false,
    };
    Spa::create("tank", &[spec], &CreateOptions::default()).unwrap()
}

/// Writes `data` at `offset` of object `id` of `fs`, creating it (a growing plain file).
pub(super) fn write(spa: &mut Spa, fs: &str, id: u64, offset: u64, data: &[u8]) {
    spa.with_dataset(fs, |os, ctx| {
        if !os.object_exists(ctx, ObjectId(id))? {
            os.create_object_at(ctx, ObjectId(id), object_type::PLAIN_FILE, 512, 0, 0)?;
        }
        os.write(ctx, ObjectId(id), offset, data)
    })
    .unwrap();
}

pub(super) fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    SeededRng::new(seed).fill(&mut data);
    data
}

pub(super) fn snap(spa: &mut Spa, name: &str) {
    spa.snapshot(&[name.to_string()]).unwrap();
}

/// The whole substream(s) of a request, in one buffer.
pub(super) fn send(spa: &mut Spa, request: SendRequest) -> Vec<u8> {
    let plan = plan_send(spa, &request).unwrap();
    let mut out = plan.header.clone().unwrap_or_default();
    for spec in plan.substreams {
        let mut sender = Sender::new(spa, spec, request.options).unwrap();
        while !sender.fill(spa, &mut out, 1 << 20).unwrap() {}
    }
    out
}

pub(super) fn full(to: &str) -> SendRequest {
    SendRequest {
        to: to.to_string(),
        ..SendRequest::default()
    }
}

pub(super) fn incremental(from: &str, to: &str, intermediates: bool) -> SendRequest {
    SendRequest {
        to: to.to_string(),
        from: Some(from.to_string()),
        intermediates,
        ..SendRequest::default()
    }
}

/// Feeds a stream in 64 KiB pieces, as the CLI does with a pipe.
pub(super) fn receive(
    spa: &mut Spa,
    target: &str,
    stream: &[u8],
    options: RecvOptions,
) -> Result<Receiver, RecvError> {
    let mut receiver = Receiver::new(target, options);
    for piece in stream.chunks(64 << 10) {
        receiver.feed(spa, piece)?;
    }
    receiver.finish(spa)?;
    Ok(receiver)
}

/// Everything observable of a filesystem or snapshot's objects.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ObjectImage {
    id: u64,
    object_type: u8,
    block_size: u32,
    bonus: Vec<u8>,
    data: Vec<u8>,
}

/// The context and refusal of a receive's `Refused` error (any other error fails the test).
pub(super) fn refusal(err: RecvError) -> (RecvContext, RecvRefusal) {
    match err {
        RecvError::Refused { context, why } => (context, why),
        other => panic!("not a refusal: {other:?}"),
    }
}

pub(super) fn contents(spa: &mut Spa, name: &str) -> Vec<ObjectImage> {
    let read = |os: &mut crate::dmu::ObjectSet, ctx: &crate::dmu::IoCtx<'_>| {
        let mut out = Vec::new();
        for id in os.object_ids(ctx)? {
            let dnode = os.dnode(ctx, id)?;
            // The DMU keeps no object size (a ZPL file's is in its znode): objects compare
            // by their bytes up to the last non-zero one, holes and a sparse tail being
            // zeros either way.
            let end = os.extent_bytes(ctx, id)?;
            let mut data = os.read(ctx, id, 0, end as usize)?;
            let kept = data.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
            data.truncate(kept);
            out.push(ObjectImage {
                id: id.0,
                object_type: dnode.object_type,
                block_size: dnode.data_block_size_bytes,
                bonus: dnode.bonus.clone(),
                data,
            });
        }
        Ok(out)
    };
    if name.contains('@') {
        spa.with_snapshot(name, read).unwrap()
    } else {
        spa.with_dataset(name, read).unwrap()
    }
}

/// (short name, guid, creation time) of each snapshot of `fs`, oldest first.
pub(super) fn snapshot_ids(spa: &mut Spa, fs: &str) -> Vec<(String, u64, u64)> {
    spa.snapshots(fs)
        .unwrap()
        .into_iter()
        .map(|(name, _, phys)| {
            let short = name
                .split_once('@')
                .map(|(_, s)| s.to_string())
                .unwrap_or(name);
            (short, phys.guid, phys.creation_time)
        })
        .collect()
}

pub(super) fn records(stream: &[u8]) -> Vec<Record> {
    let mut parser = RecordParser::new();
    parser.push(stream);
    let mut out = Vec::new();
    while let Some(record) = parser.next_record().unwrap() {
        out.push(record);
    }
    parser.finish().unwrap();
    out
}

/// A filesystem with the shapes a send must carry: a small file, a multi-block file, a
/// sparse file with a hole and a sparse tail, a fixed-block object with a bonus buffer.
pub(super) fn populate(spa: &mut Spa, fs: &str) {
    spa.create_filesystem(fs).unwrap();
    write(spa, fs, 1, 0, b"hello, world\n");
    write(spa, fs, 2, 0, &random_bytes(2, 300_000));
    write(spa, fs, 3, 0, &random_bytes(3, 4096));
    write(spa, fs, 3, 1 << 20, &random_bytes(4, 1000));
    spa.with_dataset(fs, |os, ctx| {
        os.truncate(ctx, ObjectId(3), 3 << 20)?;
        // Not a ZPL file: its block size stays 16 KiB (only plain files grow theirs).
        os.create_object_at(ctx, ObjectId(40), object_type::ZAP, 16384, 9, 64)?;
        os.set_bonus(ctx, ObjectId(40), &[7u8; 64])?;
        os.write(ctx, ObjectId(40), 0, &random_bytes(40, 40_000))
    })
    .unwrap();
}

/// A full stream rebuilds every object exactly (type, block size, bonus, bytes,
/// holes), and the received snapshot keeps the sender's guid and creation time.
#[test]
fn full_round_trip_preserves_objects_and_guid() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@a");
    let stream = send(&mut spa, full("tank/src@a"));
    receive(&mut spa, "tank/dst", &stream, RecvOptions::default()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst@a"),
        contents(&mut spa, "tank/src@a")
    );
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@a")
    );
    assert_eq!(
        snapshot_ids(&mut spa, "tank/dst"),
        snapshot_ids(&mut spa, "tank/src")
    );
    assert!(!spa.modified_since_newest_snapshot("tank/dst").unwrap());
    assert_eq!(receive_resume_token(&mut spa, "tank/dst").unwrap(), None);
    // Survives a commit and re-open of the dataset tables.
    spa.sync().unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@a")
    );
}

/// An incremental carries only what changed (blocks born after the source) and turns the
/// base into the later snapshot exactly: overwrites, growth, truncation, punched holes,
/// freed and new objects.
#[test]
fn incremental_carries_only_changes() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    write(&mut spa, "tank/src", 5, 0, &random_bytes(5, 4 << 20));
    snap(&mut spa, "tank/src@a");
    write(&mut spa, "tank/src", 5, 128 << 10, &random_bytes(6, 100));
    write(&mut spa, "tank/src", 1, 5, b"HELLO");
    write(&mut spa, "tank/src", 7, 0, b"new file");
    spa.with_dataset("tank/src", |os, ctx| {
        os.free_range(ctx, ObjectId(2), 131072, 131072)?;
        os.truncate(ctx, ObjectId(3), 2048)?;
        os.free_object(ctx, ObjectId(40))
    })
    .unwrap();
    snap(&mut spa, "tank/src@b");
    let stream = send(&mut spa, incremental("@a", "tank/src@b", false));
    let writes = records(&stream)
        .iter()
        .filter(|r| matches!(r, Record::Write(_)))
        .count();
    assert!(writes <= 5, "{writes} writes for 4 changed blocks");
    assert!(
        stream.len() < 600_000,
        "incremental of {} bytes",
        stream.len()
    );
    receive_a_then_incremental(&mut spa, &stream);
    assert_eq!(
        contents(&mut spa, "tank/dst@a"),
        contents(&mut spa, "tank/src@a")
    );
    assert_eq!(
        snapshot_ids(&mut spa, "tank/dst"),
        snapshot_ids(&mut spa, "tank/src")
    );
}

/// The seed post "ZFS snapshots and cold storage", at the library level: ten snapshots
/// with data written between them, a full of @0 and incrementals kept as files, every
/// refusal word for word, restores in order, `-i` giving only its end snapshot and `-I`
/// giving every intermediate one.
#[test]
fn cold_storage_post_reproduces() {
    let mut spa = pool();
    spa.create_filesystem("tank/setname").unwrap();
    for n in 0..10u64 {
        write(
            &mut spa,
            "tank/setname",
            10 + n,
            0,
            &random_bytes(n, 1 << 20),
        );
        snap(&mut spa, &format!("tank/setname@{n}"));
    }
    let full0 = send(&mut spa, full("tank/setname@0"));
    let inc01 = send(
        &mut spa,
        incremental("tank/setname@0", "tank/setname@1", false),
    );
    let inc12 = send(
        &mut spa,
        incremental("tank/setname@1", "tank/setname@2", false),
    );
    let inc29 = send(
        &mut spa,
        incremental("tank/setname@2", "tank/setname@9", false),
    );
    let stream09 = send(
        &mut spa,
        incremental("tank/setname@0", "tank/setname@9", true),
    );
    let opts = RecvOptions::default;
    let err = receive(&mut spa, "tank/restore", &inc01, opts())
        .err()
        .unwrap();
    assert_eq!(
        refusal(err),
        (
            RecvContext::Incremental,
            RecvRefusal::DestinationMissing {
                dest_fs: "tank/restore".into()
            }
        )
    );
    assert!(spa.lookup_dir("tank/restore").unwrap().is_none());
    receive(&mut spa, "tank/restore", &full0, opts()).unwrap();
    let names = |spa: &mut Spa| -> Vec<String> {
        snapshot_ids(spa, "tank/restore")
            .into_iter()
            .map(|(n, _, _)| n)
            .collect()
    };
    assert_eq!(names(&mut spa), ["0"]);
    let err = receive(&mut spa, "tank/restore", &inc12, opts())
        .err()
        .unwrap();
    assert_eq!(
        refusal(err),
        (
            RecvContext::Incremental,
            RecvRefusal::SourceMismatch {
                dest_fs: "tank/restore".into()
            }
        )
    );
    receive(&mut spa, "tank/restore", &inc01, opts()).unwrap();
    receive(&mut spa, "tank/restore", &inc12, opts()).unwrap();
    assert_eq!(names(&mut spa), ["0", "1", "2"]);
    // A snapshot already received (same guid) is skipped, as OpenZFS does.
    let mut again = receive(&mut spa, "tank/restore", &inc01, opts()).unwrap();
    assert_eq!(
        again.take_events(),
        [RecvEvent::Skipped {
            dest_snap: "tank/restore@1".to_string()
        }]
    );
    receive(&mut spa, "tank/restore", &inc29, opts()).unwrap();
    assert_eq!(names(&mut spa), ["0", "1", "2", "9"]);
    assert_eq!(
        contents(&mut spa, "tank/restore"),
        contents(&mut spa, "tank/setname@9")
    );
    // Start over: the stream of @0..@9 needs the full of @0 too.
    spa.destroy_snapshot("tank/restore@9").unwrap();
    for n in [2, 1, 0] {
        spa.destroy_snapshot(&format!("tank/restore@{n}")).unwrap();
    }
    spa.destroy_filesystem("tank/restore").unwrap();
    let err = receive(&mut spa, "tank/restore", &stream09, opts())
        .err()
        .unwrap();
    assert_eq!(
        refusal(err),
        (
            RecvContext::Incremental,
            RecvRefusal::DestinationMissing {
                dest_fs: "tank/restore".into()
            }
        )
    );
    receive(&mut spa, "tank/restore", &full0, opts()).unwrap();
    let receiver = receive(&mut spa, "tank/restore", &stream09, opts()).unwrap();
    assert_eq!(receiver.substreams(), 9);
    assert_eq!(
        names(&mut spa),
        ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
    );
    assert_eq!(
        snapshot_ids(&mut spa, "tank/restore"),
        snapshot_ids(&mut spa, "tank/setname")
    );
    for n in 0..10 {
        assert_eq!(
            contents(&mut spa, &format!("tank/restore@{n}")),
            contents(&mut spa, &format!("tank/setname@{n}"))
        );
    }
    // USED/REFER relations of the post: each snapshot holds what the next one lost.
    let refer = spa.dataset_referenced_bytes("tank/restore").unwrap();
    assert_eq!(refer, spa.dataset_referenced_bytes("tank/setname").unwrap());
}

/// A full stream onto an existing filesystem needs -F and no snapshots there; -F onto an
/// incremental target destroys later snapshots and discards local changes, only once the
/// stream has verified.
#[test]
fn force_overwrites_and_rolls_back() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@a");
    write(&mut spa, "tank/src", 1, 0, b"changed");
    snap(&mut spa, "tank/src@b");
    let full_a = send(&mut spa, full("tank/src@a"));
    let inc_ab = send(&mut spa, incremental("@a", "tank/src@b", false));
    spa.create_filesystem("tank/dst").unwrap();
    write(&mut spa, "tank/dst", 99, 0, b"local");
    let err = receive(&mut spa, "tank/dst", &full_a, RecvOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        refusal(err),
        (
            RecvContext::NewFilesystem,
            RecvRefusal::DestinationExists {
                dest_fs: "tank/dst".into()
            }
        )
    );
    let force = || RecvOptions {
        force: true,
        ..RecvOptions::default()
    };
    receive(&mut spa, "tank/dst", &full_a, force()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@a")
    );
    let err = receive(&mut spa, "tank/dst", &full_a, force())
        .err()
        .unwrap();
    assert_eq!(
        refusal(err),
        (
            RecvContext::NewFilesystem,
            RecvRefusal::DestinationHasSnapshots {
                first: "tank/dst@a".into()
            }
        )
    );
    // Local change and a later local snapshot: refused without -F, undone with it.
    write(&mut spa, "tank/dst", 1, 0, b"local change");
    let err = receive(&mut spa, "tank/dst", &inc_ab, RecvOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        refusal(err),
        (
            RecvContext::Incremental,
            RecvRefusal::Modified {
                dest_fs: "tank/dst".into()
            }
        )
    );
    snap(&mut spa, "tank/dst@local");
    receive(&mut spa, "tank/dst", &inc_ab, force()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@b")
    );
    let names: Vec<String> = snapshot_ids(&mut spa, "tank/dst")
        .into_iter()
        .map(|s| s.0)
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(spa.lookup_dir("tank/dst/%recv").unwrap().is_none());
}

/// `-c` streams carry stored compressed blocks and rebuild the same bytes; they are smaller
/// than plain streams for compressible data.
#[test]
fn compressed_stream_round_trip() {
    let mut spa = pool();
    spa.create_filesystem("tank/src").unwrap();
    let text: Vec<u8> = b"all work and no play makes jack a dull boy\n"
        .iter()
        .cycle()
        .take(2 << 20)
        .copied()
        .collect();
    // Objects of their own: 1 and 2 belong to the ZPL, ZAPs whose blocks keep their size
    // (512-byte micro ZAPs since format 6).
    write(&mut spa, "tank/src", 101, 0, &text);
    write(&mut spa, "tank/src", 102, 0, &random_bytes(1, 200_000));
    snap(&mut spa, "tank/src@a");
    let plain = send(&mut spa, full("tank/src@a"));
    let mut request = full("tank/src@a");
    request.options.compressed = true;
    let compressed = send(&mut spa, request);
    assert!(
        compressed.len() * 4 < plain.len(),
        "{} vs {}",
        compressed.len(),
        plain.len()
    );
    receive(&mut spa, "tank/dst", &compressed, RecvOptions::default()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst@a"),
        contents(&mut spa, "tank/src@a")
    );
}

/// Chunked production (the pool released between chunks) gives the same bytes as one
/// pass, a same-pool send and receive can take turns, and the estimate is exact.
#[test]
fn chunked_send_interleaves_with_receive() {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@a");
    let whole = send(&mut spa, full("tank/src@a"));
    let spec = SubstreamSpec {
        to: "tank/src@a".to_string(),
        from: None,
        clone: false,
    };
    let estimate = Sender::new(&mut spa, spec.clone(), SendOptions::default())
        .unwrap()
        .estimate(&mut spa)
        .unwrap();
    assert_eq!(estimate, whole.len() as u64);
    let mut sender = Sender::new(&mut spa, spec, SendOptions::default()).unwrap();
    let mut receiver = Receiver::new("tank/dst", RecvOptions::default());
    let mut chunked = Vec::new();
    loop {
        let mut chunk = Vec::new();
        let done = sender.fill(&mut spa, &mut chunk, 1000).unwrap();
        receiver.feed(&mut spa, &chunk).unwrap();
        chunked.extend_from_slice(&chunk);
        if done {
            break;
        }
    }
    receiver.finish(&mut spa).unwrap();
    assert_eq!(chunked, whole);
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@a")
    );
}

/// `-R`: a filesystem, a child, their snapshots and properties, and a clone whose origin
/// is in the stream arrive as a tree; an incremental -R brings new snapshots.
#[test]
fn replication_stream_with_child_and_clone() {
    let mut spa = pool();
    populate(&mut spa, "tank/top");
    spa.set_local_prop("tank/top", "org.test:tag", "blue")
        .unwrap();
    snap(&mut spa, "tank/top@a");
    spa.create_filesystem("tank/top/child").unwrap();
    write(&mut spa, "tank/top/child", 1, 0, b"child data");
    snap(&mut spa, "tank/top@b");
    snap(&mut spa, "tank/top/child@b");
    spa.clone_snapshot("tank/top@a", "tank/top/clone").unwrap();
    write(&mut spa, "tank/top/clone", 1, 0, b"clone data");
    snap(&mut spa, "tank/top/clone@b");
    let request = SendRequest {
        replicate: true,
        ..full("tank/top@b")
    };
    let stream = send(&mut spa, request);
    spa.create_filesystem("tank/backup").unwrap();
    receive(&mut spa, "tank/backup/top", &stream, RecvOptions::default()).unwrap();
    for fs in ["", "/child", "/clone"] {
        assert_eq!(
            contents(&mut spa, &format!("tank/backup/top{fs}@b")),
            contents(&mut spa, &format!("tank/top{fs}@b")),
            "{fs}"
        );
        assert_eq!(
            snapshot_ids(&mut spa, &format!("tank/backup/top{fs}")),
            snapshot_ids(&mut spa, &format!("tank/top{fs}"))
        );
    }
    assert_eq!(
        spa.origin_of("tank/backup/top/clone").unwrap().as_deref(),
        Some("tank/backup/top@a")
    );
    assert!(spa
        .own_effective_props("tank/backup/top")
        .unwrap()
        .contains(&("org.test:tag".to_string(), "blue".to_string())));
    snap(&mut spa, "tank/top@c");
    snap(&mut spa, "tank/top/child@c");
    snap(&mut spa, "tank/top/clone@c");
    let request = SendRequest {
        replicate: true,
        ..incremental("@b", "tank/top@c", true)
    };
    let stream = send(&mut spa, request);
    receive(&mut spa, "tank/backup/top", &stream, RecvOptions::default()).unwrap();
    assert_eq!(
        snapshot_ids(&mut spa, "tank/backup/top/child"),
        snapshot_ids(&mut spa, "tank/top/child")
    );
}

/// Golden bytes: the record layout is OpenZFS's `dmu_replay_record_t` (docs/STREAM.md). A
/// BEGIN and an END of a tiny substream, byte for byte, and the decoder's view of them. The
/// expected bytes were computed independently of this code (a short script packing the C
/// struct and running fletcher-4 as `dump_record` does).
#[test]
fn golden_stream_records() {
    let mut info = crate::nvlist::NvList::new();
    info.set_str("toname", "p/f@s").set_u64("type", 2);
    let begin = record::BeginRecord {
        features: 0,
        compound: false,
        flags: 0,
        to_guid: crate::types::Guid(0x1122334455667788),
        from_guid: crate::types::Guid(0),
        creation_time: 1_700_000_000,
        info: info.clone(),
    };
    let mut out = Vec::new();
    let mut writer = RecordWriter::new();
    writer.emit_record(&mut out, &Record::Begin(begin.clone()));
    writer.emit_record(
        &mut out,
        &Record::End {
            to_guid: crate::types::Guid(0x1122334455667788),
        },
    );
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(out.len(), 2 * 312, "two fixed-size records, no payload");
    assert_eq!(hex(&out[..64]), GOLDEN_BEGIN_HEAD);
    assert!(out[64..312].iter().all(|b| *b == 0), "rest of drr_toname");
    assert_eq!(
        hex(&out[312..312 + 48]),
        GOLDEN_END_HEAD,
        "END: sum of BEGIN, toguid"
    );
    assert!(out[312 + 48..312 + 280].iter().all(|b| *b == 0));
    assert_eq!(hex(&out[312 + 280..]), GOLDEN_END_TRAILER, "running sum");
    assert_eq!(
        records(&out),
        vec![
            Record::Begin(begin),
            Record::End {
                to_guid: crate::types::Guid(0x1122334455667788)
            }
        ]
    );
}

/// `golden_stream_records`: BEGIN bytes 0..64 (type 0, payloadlen 0, magic 0x2F5bacbac,
/// versioninfo 1 = DMU_SUBSTREAM, creation time, type 2 = ZFS, flags 0, toguid, fromguid 0,
/// "p/f@s").
const GOLDEN_BEGIN_HEAD: &str = "0000000000000000accbbaf502000000010000000000000000f1536500000000020000000000000088776655443322110000000000000000702f664073000000";
/// END bytes 0..48: type 5, `drr_checksum` = fletcher-4 of the 312 BEGIN bytes, toguid.
const GOLDEN_END_HEAD: &str = "05000000000000006097fd0102000000b563c7b79000000075ab5620bb14000040dfbf07790302008877665544332211";
/// END bytes 280..312: fletcher-4 of the BEGIN and the END's first 280 bytes.
const GOLDEN_END_TRAILER: &str = "c1e0634a03000000b9896b196f0100005ab8e90f2b5a000006e94b1d93e30f00";

/// The FREE records of `stream` for `object`, as (offset, length).
fn frees_of(stream: &[u8], object: u64) -> Vec<(u64, u64)> {
    records(stream)
        .iter()
        .filter_map(|r| match r {
            Record::Free {
                object: o,
                offset,
                length,
            } if o.0 == object => Some((*offset, *length)),
            _ => None,
        })
        .collect()
}

// Why: holes carry their birth txg (hole_birth). An incremental send must carry the FREE of
// a range punched after its source, which the receiver turns back into a hole, and skip a
// hole punched before it (format 10 could not tell them apart and sent a FREE for every
// hole among a changed object's top pointers), as OpenZFS's `traverse_visitbp` does.
#[test]
fn incremental_sends_holes_by_their_birth() {
    let record = 128u64 << 10;
    let mut spa = pool();
    spa.create_filesystem("tank/src").unwrap();
    // Object 100: three records, all in the dnode's own pointers; 101: four (one L1).
    write(
        &mut spa,
        "tank/src",
        100,
        0,
        &random_bytes(2, 3 * record as usize),
    );
    write(
        &mut spa,
        "tank/src",
        101,
        0,
        &random_bytes(3, 4 * record as usize),
    );
    spa.sync().unwrap(); // the blocks are on disk before the punch (else no birth to keep)
    spa.with_dataset("tank/src", |os, ctx| {
        os.free_range(ctx, ObjectId(100), record, record)
    })
    .unwrap();
    snap(&mut spa, "tank/src@a");
    write(&mut spa, "tank/src", 100, 0, b"changed after @a");
    spa.with_dataset("tank/src", |os, ctx| {
        os.free_range(ctx, ObjectId(101), 2 * record, record)
    })
    .unwrap();
    snap(&mut spa, "tank/src@b");
    let stream = send(&mut spa, incremental("@a", "tank/src@b", false));
    let overlaps = |frees: &[(u64, u64)], start: u64, end: u64| {
        frees
            .iter()
            .any(|(offset, length)| *offset < end && offset.saturating_add(*length) > start)
    };
    let frees100 = frees_of(&stream, 100);
    assert!(
        !overlaps(&frees100, record, 2 * record),
        "hole punched before @a sent again: {frees100:?}"
    );
    let frees101 = frees_of(&stream, 101);
    assert!(
        frees101.contains(&(2 * record, record)),
        "no FREE for the hole punched after @a: {frees101:?}"
    );
    receive_a_then_incremental(&mut spa, &stream);
    // The received hole is a hole with its own birth, so the next incremental from the
    // received @b (a chain of backups) skips it again.
    spa.with_dataset("tank/dst", |os, ctx| {
        let bp = os.block_pointer_shared(ctx, 101, 0, 2)?;
        assert!(bp.is_hole() && bp.birth_txg.0 > 0, "{bp}");
        Ok(())
    })
    .unwrap();
}

// Why: a block embedded in its pointer (embedded_data) has no device copy; a send must
// still carry its bytes (as a plain WRITE, with or without -c, as OpenZFS does without -e)
// and the receiver embeds it again.
#[test]
fn embedded_blocks_are_sent_and_received() {
    let mut spa = pool();
    spa.create_filesystem("tank/src").unwrap();
    let text = b"embedded, embedded, embedded, embedded\n".repeat(10);
    write(&mut spa, "tank/src", 101, 0, &text);
    snap(&mut spa, "tank/src@a");
    let embedded = |spa: &mut Spa, fs: &str| {
        spa.with_dataset(fs, |os, ctx| os.block_pointer_shared(ctx, 101, 0, 0))
            .unwrap()
            .is_embedded()
    };
    assert!(embedded(&mut spa, "tank/src"));
    for (target, compressed) in [("tank/plain", false), ("tank/compressed", true)] {
        let mut request = full("tank/src@a");
        request.options.compressed = compressed;
        let stream = send(&mut spa, request);
        receive(&mut spa, target, &stream, RecvOptions::default()).unwrap();
        assert_eq!(
            contents(&mut spa, &format!("{target}@a")),
            contents(&mut spa, "tank/src@a")
        );
        if !compressed {
            assert!(embedded(&mut spa, target), "{target}");
        }
    }
    // -e: the block goes as OpenZFS's WRITE_EMBEDDED (EMBED_DATA and LZ4 in the BEGIN),
    // its payload the pointer's compressed bytes, and is embedded again on receive.
    let mut request = full("tank/src@a");
    request.options.embed = true;
    let stream = send(&mut spa, request);
    let all = records(&stream);
    let Record::Begin(begin) = &all[0] else {
        panic!("no BEGIN");
    };
    assert_eq!(
        begin.features & (FEATURE_EMBED_DATA | FEATURE_LZ4),
        FEATURE_EMBED_DATA | FEATURE_LZ4
    );
    let pointer = spa
        .with_dataset("tank/src", |os, ctx| {
            os.block_pointer_shared(ctx, 101, 0, 0)
        })
        .unwrap();
    let found = all.iter().find_map(|r| match r {
        Record::WriteEmbedded(e) if e.object.0 == 101 => Some(e.clone()),
        _ => None,
    });
    let e = found.expect("a WRITE_EMBEDDED for object 101");
    assert_eq!(e.data, pointer.embedded.unwrap().as_slice());
    assert_eq!(
        (e.compression, e.logical_size_bytes),
        (pointer.compression, pointer.lsize_bytes)
    );
    assert!(!all
        .iter()
        .any(|r| matches!(r, Record::Write(w) if w.object.0 == 101)));
    receive(&mut spa, "tank/embedded", &stream, RecvOptions::default()).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/embedded@a"),
        contents(&mut spa, "tank/src@a")
    );
    assert!(embedded(&mut spa, "tank/embedded"));
}

/// Receives a full stream of `tank/src@a` into `tank/dst`, then `incremental` on top, and
/// checks that `tank/dst` reads as `tank/src@b`.
fn receive_a_then_incremental(spa: &mut Spa, incremental: &[u8]) {
    let base = send(spa, full("tank/src@a"));
    receive(spa, "tank/dst", &base, RecvOptions::default()).unwrap();
    receive(spa, "tank/dst", incremental, RecvOptions::default()).unwrap();
    assert_eq!(contents(spa, "tank/dst"), contents(spa, "tank/src@b"));
}

/// A real OpenZFS stream's first records, as OpenZFS 2.3's `zdb -B -e -p DIR
/// testpool_zstd/137` wrote them (the `compression/testpool_zstd` pool of OpenZFS's test
/// suite; testdata/zdb_b_head.bin is the stream's first 2072 bytes): BEGIN, OBJECT 1 (the
/// master node), the FREE past its end, its WRITE with a dedup key, and the next FREE's
/// header, which verifies the WRITE's payload. Zetta's parser must accept OpenZFS's bytes,
/// per-record checksums included, and read every field as OpenZFS wrote it.
#[test]
fn openzfs_zdb_stream_golden() {
    use crate::types::{Guid, ObjectId};
    let bytes = include_bytes!("testdata/zdb_b_head.bin");
    let mut parser = RecordParser::new();
    parser.push(bytes);
    let mut got = Vec::new();
    while let Some(record) = parser.next_record().unwrap() {
        got.push(record);
    }
    assert_eq!(
        got.len(),
        4,
        "the fifth record's payload is not in the file"
    );
    let Record::Begin(begin) = &got[0] else {
        panic!("{:?}", got[0])
    };
    assert_eq!(begin.features, record::FEATURE_SA_SPILL);
    assert!(!begin.compound);
    assert_eq!(
        begin.flags,
        record::DRR_FLAG_FREERECORDS | record::DRR_FLAG_SPILL_BLOCK
    );
    assert_eq!(begin.to_guid, Guid(0xdaaa479a300996aa));
    assert_eq!(begin.from_guid, Guid(0));
    assert_eq!(begin.creation_time, 0x609b7d25);
    assert_eq!(
        begin.info.get_str("toname"),
        Some("testpool_zstd/x86_64@--head--")
    );
    assert_eq!(begin.info.get_u64("type"), Some(2));
    assert_eq!(
        got[1],
        Record::Object(record::ObjectRecord {
            object: ObjectId(1),
            object_type: 21,
            bonus_type: 0,
            block_size_bytes: 512,
            checksum: 0,
            compress: 0,
            dn_slots: 1,
            flags: 0,
            bonus: Vec::new(),
        })
    );
    assert_eq!(
        got[2],
        Record::Free {
            object: ObjectId(1),
            offset: 512,
            length: u64::MAX
        }
    );
    let Record::Write(w) = &got[3] else {
        panic!("{:?}", got[3])
    };
    assert_eq!(
        (w.object, w.object_type, w.offset, w.length, w.checksum),
        (ObjectId(1), 21, 0, 512, 7)
    );
    assert_eq!((w.compression, w.data.len()), (0, 512));
    // ddk_prop: lsize 512 and psize 512 (stored as sectors - 1), compression 2 (off).
    assert_eq!(w.key[4], 0x2_0000_0000);
    // Our writer re-encodes the four records to the same bytes.
    let mut out = Vec::new();
    let mut writer = RecordWriter::new();
    for record in &got {
        writer.emit_record(&mut out, record);
    }
    assert_eq!(&out[..], &bytes[..out.len()]);
}

/// Blocks over 128 KiB (recordsize 1M): without `-L` they travel as 128 KiB WRITEs under an
/// OBJECT of 128 KiB and no LARGE_BLOCKS bit (what OpenZFS sends to receivers without
/// large blocks); with `-L` whole, with LARGE_BLOCKS. Both receive to the same bytes.
#[test]
fn large_blocks_split_unless_large_block_ok() {
    let mut spa = pool();
    spa.create_filesystem("tank/big").unwrap();
    spa.set_local_prop("tank/big", "recordsize", "1048576")
        .unwrap();
    spa.with_dataset("tank/big", |os, ctx| {
        os.create_object_at(ctx, ObjectId(500), object_type::PLAIN_FILE, 1 << 20, 0, 0)?;
        os.write(ctx, ObjectId(500), 0, &random_bytes(5, 3 << 20))
    })
    .unwrap();
    snap(&mut spa, "tank/big@s");
    let block_size = |spa: &mut Spa, name: &str| {
        spa.with_snapshot(name, |os, ctx| {
            Ok(os.dnode(ctx, ObjectId(500))?.data_block_size_bytes)
        })
        .unwrap()
    };
    assert_eq!(block_size(&mut spa, "tank/big@s"), 1 << 20);
    for (large, target) in [(false, "tank/split"), (true, "tank/whole")] {
        let request = SendRequest {
            options: SendOptions {
                large_blocks: large,
                ..SendOptions::default()
            },
            ..full("tank/big@s")
        };
        let stream = send(&mut spa, request);
        let recs = records(&stream);
        let Record::Begin(begin) = &recs[0] else {
            panic!()
        };
        assert_eq!(
            begin.features & record::FEATURE_LARGE_BLOCKS != 0,
            large,
            "LARGE_BLOCKS only with -L"
        );
        let writes: Vec<u64> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Write(w) if w.object == ObjectId(500) => Some(w.length),
                _ => None,
            })
            .collect();
        let piece = if large { 1 << 20 } else { 128 << 10 };
        assert!(!writes.is_empty() && writes.iter().all(|len| *len == piece));
        receive(&mut spa, target, &stream, RecvOptions::default()).unwrap();
        let at = format!("{target}@s");
        assert_eq!(block_size(&mut spa, &at), piece as u32);
        let data = |spa: &mut Spa, name: &str| {
            spa.with_snapshot(name, |os, ctx| os.read(ctx, ObjectId(500), 0, 3 << 20))
                .unwrap()
        };
        assert_eq!(data(&mut spa, &at), data(&mut spa, "tank/big@s"));
    }
}
