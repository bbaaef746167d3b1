//! Hostile and interrupted streams: truncated at every record boundary and inside records,
//! bit-flipped, reordered (with and without fixed-up checksums), random bytes, and seeded
//! mutations. Each must be refused with an error — never a panic — and leave the target
//! exactly as it was; under `-s` the partial state is kept and resumes to the same result.

use super::record::{Record, RecordWriter};
use super::tests::{
    contents, full, incremental, pool, populate, receive, records, send, snap, snapshot_ids, write,
    ObjectImage,
};
use super::*;
use crate::rand::SeededRng;
use crate::spa::Spa;

/// Everything a failed receive must not change.
#[derive(Debug, PartialEq, Eq)]
struct Observed {
    names: Vec<String>,
    snapshots: Vec<(String, u64, u64)>,
    objects: Vec<ObjectImage>,
    props: Vec<(String, String)>,
    token: Option<String>,
}

fn observe(spa: &mut Spa, fs: &str) -> Observed {
    Observed {
        names: spa.dataset_names().unwrap(),
        snapshots: snapshot_ids(spa, fs),
        objects: contents(spa, fs),
        props: spa.local_props(fs).unwrap(),
        token: receive_resume_token(spa, fs).unwrap(),
    }
}

/// A target with @a received, and the streams to play with: the full of @a and the
/// incremental @a → @b.
fn setup() -> (Spa, Vec<u8>, Vec<u8>) {
    let mut spa = pool();
    populate(&mut spa, "tank/src");
    snap(&mut spa, "tank/src@a");
    write(
        &mut spa,
        "tank/src",
        2,
        70_000,
        &super::tests::random_bytes(9, 200_000),
    );
    write(&mut spa, "tank/src", 8, 0, b"new object");
    // A block small enough to be embedded in its pointer: with -e it goes as a
    // WRITE_EMBEDDED record, so the mutations reach that decoder and its expansion.
    write(&mut spa, "tank/src", 9, 0, &b"embedded ".repeat(40));
    snap(&mut spa, "tank/src@b");
    let full_a = send(&mut spa, full("tank/src@a"));
    let mut request = incremental("@a", "tank/src@b", false);
    request.options.embed = true;
    let inc_ab = send(&mut spa, request);
    assert!(records(&inc_ab)
        .iter()
        .any(|r| matches!(r, Record::WriteEmbedded(_))));
    receive(&mut spa, "tank/dst", &full_a, RecvOptions::default()).unwrap();
    (spa, full_a, inc_ab)
}

/// Byte offsets where each record of a stream ends.
fn boundaries(stream: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut parser = record::RecordParser::new();
    parser.push(stream);
    while parser.next_record().unwrap().is_some() {
        ends.push(parser.offset_bytes() as usize);
    }
    ends
}

/// Truncation anywhere — at each record boundary, one byte either side, and in the middle
/// of each record — is refused and leaves both a new and an existing target untouched.
#[test]
fn truncated_streams_change_nothing() {
    let (mut spa, full_a, inc_ab) = setup();
    let before = observe(&mut spa, "tank/dst");
    let names = spa.dataset_names().unwrap();
    for (stream, target) in [(&inc_ab, "tank/dst"), (&full_a, "tank/new")] {
        let mut cuts = vec![0];
        let mut previous = 0;
        for end in boundaries(stream) {
            cuts.extend([end - 1, end, end + 1, (previous + end) / 2]);
            previous = end;
        }
        cuts.retain(|cut| *cut < stream.len());
        for cut in cuts {
            let result = receive(&mut spa, target, &stream[..cut], RecvOptions::default());
            assert!(result.is_err(), "cut at {cut} of {} accepted", stream.len());
            assert_eq!(observe(&mut spa, "tank/dst"), before, "cut at {cut}");
            assert_eq!(spa.dataset_names().unwrap(), names, "cut at {cut}");
        }
    }
}

/// A flipped bit anywhere (header, payload, padding, trailer) is caught before the record
/// is applied; the target is unchanged and the error is the checksum/format one.
#[test]
fn bit_flips_are_refused() {
    let (mut spa, _, inc_ab) = setup();
    let before = observe(&mut spa, "tank/dst");
    let mut rng = SeededRng::new(17);
    for round in 0..300 {
        let mut damaged = inc_ab.clone();
        let at = rng.below(damaged.len() as u64) as usize;
        damaged[at] ^= 1 << rng.below(8);
        let err = receive(&mut spa, "tank/dst", &damaged, RecvOptions::default())
            .err()
            .unwrap_or_else(|| panic!("flip at byte {at} (round {round}) accepted"));
        assert!(
            matches!(err, RecvError::Stream { .. }),
            "flip at {at}: {err}"
        );
        assert_eq!(observe(&mut spa, "tank/dst"), before, "flip at {at}");
    }
}

/// Records in the wrong order are refused: swapped as they are (the running checksum
/// breaks) and re-encoded with fresh checksums (the order check catches them). A swap that
/// gives an order OpenZFS's receiver accepts (an OBJECT moved before the previous object's
/// last WRITE, as zfs-fuse's OBJECT-first streams have it; a FREE anywhere after its object)
/// must be received to exactly what the stream in its own order gives.
#[test]
fn reordered_records_are_refused() {
    let (mut spa, _, inc_ab) = setup();
    let before = observe(&mut spa, "tank/dst");
    let ends = boundaries(&inc_ab);
    let mut starts = vec![0];
    starts.extend(&ends[..ends.len() - 1]);
    for i in 1..ends.len() - 2 {
        let mut swapped = inc_ab[..starts[i]].to_vec();
        swapped.extend_from_slice(&inc_ab[starts[i + 1]..ends[i + 1]]);
        swapped.extend_from_slice(&inc_ab[starts[i]..ends[i]]);
        swapped.extend_from_slice(&inc_ab[ends[i + 1]..]);
        assert!(receive(&mut spa, "tank/dst", &swapped, RecvOptions::default()).is_err());
        assert_eq!(observe(&mut spa, "tank/dst"), before);
    }
    receive(&mut spa, "tank/dst", &inc_ab, RecvOptions::default()).unwrap();
    let expected = contents(&mut spa, "tank/dst");
    clean_up(&mut spa);
    let decoded = records(&inc_ab);
    let data_records = decoded.len() - 2;
    let (mut refused, mut accepted) = (0, 0);
    for i in 1..decoded.len() - 2 {
        let mut shuffled = decoded.clone();
        shuffled.swap(i, i + 1);
        if shuffled == decoded {
            continue;
        }
        // OBJECT or FREEOBJECTS moved before the previous object's data: OpenZFS's order.
        let object_first = matches!(
            (&decoded[i], &decoded[i + 1]),
            (
                Record::Write(_) | Record::WriteEmbedded(_) | Record::Free { .. },
                Record::Object(_) | Record::FreeObjects { .. }
            )
        );
        let mut out = Vec::new();
        let mut writer = RecordWriter::new();
        for record in &shuffled {
            writer.emit_record(&mut out, record);
        }
        match receive(&mut spa, "tank/dst", &out, RecvOptions::default()) {
            Err(RecvError::Stream {
                error: StreamError::OutOfOrder { .. },
                ..
            }) if !object_first => {
                refused += 1;
                assert_eq!(observe(&mut spa, "tank/dst"), before);
            }
            Ok(_) if object_first => {
                accepted += 1;
                assert_eq!(contents(&mut spa, "tank/dst"), expected, "swap {i}");
                clean_up(&mut spa);
            }
            // A WRITE or FREE moved before its object's OBJECT: the base has the object,
            // so OpenZFS applies it too; what the OBJECT then does decides the rest.
            Ok(_) => clean_up(&mut spa),
            other => panic!("swap of records {i} and {} gave {:?}", i + 1, other.err()),
        }
    }
    assert!(refused > 0 && refused <= data_records);
    assert!(
        accepted > 0,
        "no OBJECT moved before the previous object's data"
    );
}

/// An OBJECT-first stream (every OBJECT record, then every WRITE: zfs-fuse's order for a
/// dnode block) is received to what the interleaved stream gives; a WRITE or FREE for an
/// object neither the stream nor the base defines is refused as out of order, changing
/// nothing. Why: zfs-fuse's streams (issue 15) failed with "data for object 1 outside its
/// OBJECT record", and the hostile cases must stay refused without a per-object table.
#[test]
fn object_first_streams_are_received_and_undefined_objects_refused() {
    let (mut spa, full_a, inc_ab) = setup();
    for (stream, target) in [(&full_a, "tank/m"), (&inc_ab, "tank/dst")] {
        receive(&mut spa, target, stream, RecvOptions::default()).unwrap();
        let expected = contents(&mut spa, target);
        clean_up(&mut spa);
        let decoded = records(stream);
        let last = decoded.len() - 1;
        let (objects, data): (Vec<Record>, Vec<Record>) = decoded[1..last]
            .iter()
            .cloned()
            .partition(|r| matches!(r, Record::Object(_) | Record::FreeObjects { .. }));
        assert!(!objects.is_empty() && !data.is_empty());
        let mut reordered = vec![decoded[0].clone()];
        reordered.extend(objects);
        reordered.extend(data);
        reordered.push(decoded[last].clone());
        let mut out = Vec::new();
        let mut writer = RecordWriter::new();
        for record in &reordered {
            writer.emit_record(&mut out, record);
        }
        receive(&mut spa, target, &out, RecvOptions::default()).unwrap();
        assert_eq!(contents(&mut spa, target), expected, "{target}");
        clean_up(&mut spa);
    }
    let before = observe(&mut spa, "tank/dst");
    let decoded = records(&inc_ab);
    let undefined = 1_000_000u64;
    let stray = [
        Record::Write(record::WriteRecord {
            object: crate::types::ObjectId(undefined),
            object_type: 19,
            offset: 0,
            length: 4,
            checksum: 0,
            flags: 0,
            key: [0; 5],
            compression: 0,
            logical_size_bytes: 0,
            data: b"lost".to_vec(),
        }),
        Record::Free {
            object: crate::types::ObjectId(undefined),
            offset: 0,
            length: u64::MAX,
        },
    ];
    for stray in stray {
        let mut out = Vec::new();
        let mut writer = RecordWriter::new();
        let last = decoded.len() - 1;
        for record in decoded[..last].iter().chain([&stray, &decoded[last]]) {
            writer.emit_record(&mut out, record);
        }
        match receive(&mut spa, "tank/dst", &out, RecvOptions::default()) {
            Err(RecvError::Stream {
                error: StreamError::OutOfOrder { why, .. },
                ..
            }) => assert!(why.contains("never defined"), "{why}"),
            other => panic!("a record for object {undefined} gave {:?}", other.err()),
        }
        assert_eq!(observe(&mut spa, "tank/dst"), before);
    }
}

/// Random bytes, with and without our magic in front, are refused and create nothing.
#[test]
fn random_bytes_are_refused() {
    let (mut spa, _, _) = setup();
    let before = observe(&mut spa, "tank/dst");
    let names = spa.dataset_names().unwrap();
    let mut rng = SeededRng::new(5);
    for round in 0..200u64 {
        let len = rng.below(5000) as usize + 1;
        let mut bytes = super::tests::random_bytes(round, len);
        if round % 2 == 0 && len > 16 {
            // A BEGIN's type and magic, so the bytes reach the field checks.
            bytes[..8].fill(0);
            bytes[8..16].copy_from_slice(&record::BACKUP_MAGIC.to_le_bytes());
        }
        for target in ["tank/dst", "tank/junk"] {
            assert!(receive(&mut spa, target, &bytes, RecvOptions::default()).is_err());
        }
        assert_eq!(observe(&mut spa, "tank/dst"), before);
        assert_eq!(spa.dataset_names().unwrap(), names);
    }
    let err = receive(&mut spa, "tank/junk", &[], RecvOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        super::tests::refusal(err),
        (RecvContext::Receive, RecvRefusal::EmptyInput)
    );
}

/// Seeded mutations (flips, cuts, duplicated and deleted ranges, inserted garbage) fed in
/// random piece sizes: the parser and receiver never panic, and a refused stream changes
/// nothing. (The fuzz target in fuzz/ runs the parser the same way, unbounded.)
#[test]
fn mutated_streams_never_panic() {
    let (mut spa, full_a, inc_ab) = setup();
    let before = observe(&mut spa, "tank/dst");
    let mut rng = SeededRng::new(23);
    for round in 0..400 {
        let mut stream = if round % 2 == 0 {
            inc_ab.clone()
        } else {
            full_a.clone()
        };
        for _ in 0..=rng.below(3) {
            let len = stream.len().max(1) as u64;
            let at = rng.below(len) as usize;
            let span = (rng.below(300) as usize).min(stream.len() - at.min(stream.len()));
            match rng.below(5) {
                0 => {
                    let last = stream.len().saturating_sub(1);
                    if let Some(byte) = stream.get_mut(at.min(last)) {
                        *byte ^= rng.next_u64() as u8 | 1;
                    }
                }
                1 => stream.truncate(at),
                2 => {
                    let copy = stream[at..at + span].to_vec();
                    stream.splice(at..at, copy);
                }
                3 => {
                    stream.drain(at..at + span);
                }
                _ => {
                    let garbage = super::tests::random_bytes(round, span);
                    stream.splice(at..at, garbage);
                }
            }
        }
        let target = if round % 2 == 0 { "tank/dst" } else { "tank/m" };
        let mut receiver = Receiver::new(target, RecvOptions::default());
        let mut rest = &stream[..];
        let mut outcome = Ok(());
        while !rest.is_empty() && outcome.is_ok() {
            let take = (rng.below(70_000) as usize + 1).min(rest.len());
            outcome = receiver.feed(&mut spa, &rest[..take]);
            rest = &rest[take..];
        }
        if outcome.is_ok() {
            outcome = receiver.finish(&mut spa);
        }
        if outcome.is_err() {
            assert_eq!(observe(&mut spa, "tank/dst"), before, "round {round}");
            assert!(spa.lookup_dir("tank/m").unwrap().is_none());
        } else {
            // Only an intact stream is accepted: a mutation that removed nothing of it.
            let (expected, got) = if target == "tank/dst" {
                ("tank/src@b", "tank/dst@b")
            } else {
                ("tank/src@a", "tank/m@a")
            };
            assert_eq!(contents(&mut spa, got), contents(&mut spa, expected));
            clean_up(&mut spa);
        }
    }
}

/// Puts `tank/dst` back to its @a and removes `tank/m`, after an accepted stream.
fn clean_up(spa: &mut Spa) {
    for (name, _, _) in spa.snapshots("tank/dst").unwrap() {
        if name != "tank/dst@a" {
            spa.destroy_snapshot(&name).unwrap();
        }
    }
    spa.rollback("tank/dst@a").unwrap();
    if spa.lookup_dir("tank/m").unwrap().is_some() {
        for (name, _, _) in spa.snapshots("tank/m").unwrap() {
            spa.destroy_snapshot(&name).unwrap();
        }
        spa.destroy_filesystem("tank/m").unwrap();
    }
}

/// Field-level mutations re-encoded with valid checksums, so they get past the parser's
/// checksum and reach the order checks and the DMU: absurd object numbers, offsets, sizes,
/// block sizes, bonus buffers, guids, dropped and duplicated records, and a write far out
/// truncated away again (a free that once meant visiting every block id). Nothing
/// panics or runs away; a refused stream changes nothing.
#[test]
fn field_mutations_with_valid_checksums() {
    let (mut spa, full_a, inc_ab) = setup();
    let before = observe(&mut spa, "tank/dst");
    let mut rng = SeededRng::new(31);
    let mut accepted = 0;
    for round in 0..300 {
        let (stream, target) = if round % 2 == 0 {
            (&inc_ab, "tank/dst")
        } else {
            (&full_a, "tank/m")
        };
        let mut recs = records(stream);
        for _ in 0..=rng.below(2) {
            let at = 1 + rng.below(recs.len() as u64 - 1) as usize;
            let huge = |rng: &mut SeededRng| match rng.below(4) {
                0 => rng.below(1 << 20),
                1 => rng.below(1 << 40),
                2 => u64::MAX - rng.below(1 << 20),
                _ => rng.next_u64(),
            };
            if rng.below(4) == 0 && recs.len() > 3 {
                let copy = recs[at].clone();
                if rng.below(2) == 0 {
                    recs.insert(at, copy);
                } else {
                    recs.remove(at);
                }
                continue;
            }
            match (&mut recs[at], 0) {
                (Record::Object(o), _) => match rng.below(5) {
                    0 => o.object.0 = huge(&mut rng),
                    1 => o.block_size_bytes = 512 * (1 + rng.below(32768) as u32),
                    2 => o.bonus_type = rng.next_u64() as u8,
                    3 => o.bonus = vec![0xa5; rng.below(400) as usize],
                    _ => o.object_type = rng.next_u64() as u8,
                },
                (Record::Write(w), _) => match rng.below(3) {
                    0 => w.offset = huge(&mut rng) & !511,
                    1 => w.object.0 = huge(&mut rng),
                    _ => {
                        w.length = 1 + rng.below(1 << 18);
                        w.data.resize(w.length as usize, 7);
                    }
                },
                (Record::Spill(sp), _) => match rng.below(2) {
                    0 => sp.object.0 = huge(&mut rng),
                    _ => sp.data.resize(512 * rng.below(300) as usize, 3),
                },
                (Record::WriteEmbedded(e), _) => match rng.below(5) {
                    0 => e.offset = huge(&mut rng) & !511,
                    1 => e.object.0 = huge(&mut rng),
                    2 => e.compression = rng.next_u64() as u8,
                    3 => e.logical_size_bytes = rng.next_u64() as u32,
                    _ => {
                        let len = 1 + rng.below(112) as usize;
                        e.data = (0..len).map(|_| rng.next_u64() as u8).collect();
                    }
                },
                (
                    Record::Free {
                        object,
                        offset,
                        length,
                    },
                    _,
                ) => {
                    *offset = huge(&mut rng);
                    *length = huge(&mut rng).max(1);
                    if rng.below(4) == 0 {
                        object.0 = huge(&mut rng);
                    }
                }
                (Record::FreeObjects { first, count }, _) => {
                    first.0 = huge(&mut rng).max(1);
                    *count = huge(&mut rng).max(1);
                }
                (Record::Begin(b), _) => match rng.below(3) {
                    0 => b.from_guid.0 = rng.next_u64(),
                    1 => b.to_guid.0 = rng.next_u64(),
                    _ => {
                        b.info.set_str("toname", "tank/src@x%y");
                    }
                },
                (Record::End { to_guid }, _) => to_guid.0 ^= 1,
            }
        }
        if round % 10 == 0 {
            // A write far out as object 2's last record: the object's final size then
            // truncates it away, a free over 2^34 block ids.
            let far = Record::Write(record::WriteRecord {
                object: crate::types::ObjectId(2),
                object_type: 19,
                offset: 131072 * (1 << 34),
                length: 1,
                checksum: 0,
                flags: 0,
                key: [0; 5],
                compression: 0,
                logical_size_bytes: 0,
                data: vec![1],
            });
            let object_2 = recs
                .iter()
                .position(|r| matches!(r, Record::Object(o) if o.object.0 == 2));
            if let Some(at) = object_2 {
                let end = recs[at + 1..]
                    .iter()
                    .position(|r| !matches!(r, Record::Write(_) | Record::Free { .. }))
                    .map_or(recs.len(), |i| at + 1 + i);
                recs.insert(end, far);
            }
        }
        let mut out = Vec::new();
        let mut writer = RecordWriter::new();
        for record in &recs {
            writer.emit_record(&mut out, record);
        }
        let started = std::time::Instant::now();
        let outcome = receive(&mut spa, target, &out, RecvOptions::default());
        assert!(started.elapsed().as_secs() < 20, "round {round} ran away");
        match outcome {
            Err(e) => {
                let after = observe(&mut spa, "tank/dst");
                // A mutation can leave a complete, self-consistent substream (every
                // checksum is recomputed) followed by records that cannot start another:
                // the substream is received at its END, then the rest is refused, as
                // OpenZFS does with concatenated streams. Anything else changes nothing.
                let source_guids: Vec<u64> = snapshot_ids(&mut spa, "tank/src")
                    .iter()
                    .map(|(_, guid, _)| *guid)
                    .collect();
                let committed_then_refused = e.to_string().contains("must start with BEGIN")
                    && after
                        .snapshots
                        .iter()
                        .all(|(_, guid, _)| source_guids.contains(guid));
                if committed_then_refused {
                    clean_up(&mut spa);
                    continue;
                }
                assert_eq!(after, before, "round {round}");
                assert!(spa.lookup_dir("tank/m").unwrap().is_none(), "round {round}");
            }
            Ok(_) => {
                accepted += 1;
                clean_up(&mut spa);
            }
        }
    }
    assert!(accepted < 300);
}

/// `-s`: an interrupted receive keeps its partial state and a token (shown by
/// `receive_resume_token`), the target itself is untouched, `zfs send -t` resumes from where
/// it stopped and the result equals an uninterrupted receive; `-A` discards the state.
#[test]
fn resumable_receive_continues_from_token() {
    let (mut spa, full_a, inc_ab) = setup();
    let resumable = || RecvOptions {
        resumable: true,
        ..RecvOptions::default()
    };
    for (stream, target, snapshot) in [
        (&inc_ab, "tank/dst", "tank/src@b"),
        (&full_a, "tank/fresh", "tank/src@a"),
    ] {
        let before = (target == "tank/dst").then(|| contents(&mut spa, target));
        let cut = stream.len() * 2 / 3;
        let err = receive(&mut spa, target, &stream[..cut], resumable())
            .err()
            .unwrap();
        let RecvError::Stream {
            token: Some(token), ..
        } = &err
        else {
            panic!("no token: {err}");
        };
        assert_eq!(
            receive_resume_token(&mut spa, target).unwrap().as_ref(),
            Some(token)
        );
        if let Some(before) = &before {
            assert_eq!(&contents(&mut spa, target), before);
        }
        // A new stream is refused while the state waits.
        let refused = receive(&mut spa, target, stream, RecvOptions::default())
            .err()
            .unwrap();
        assert!(
            matches!(
                super::tests::refusal(refused),
                (_, RecvRefusal::PartialStateExists { ref dest_fs }) if dest_fs == target
            ),
            "a new stream into {target} while its state waits"
        );
        let parsed = ResumeToken::decode(token).unwrap();
        let mut sender = Sender::resume(&mut spa, &parsed).unwrap();
        let mut rest = Vec::new();
        while !sender.fill(&mut spa, &mut rest, 1 << 20).unwrap() {}
        assert!(rest.len() < stream.len());
        receive(&mut spa, target, &rest, resumable()).unwrap();
        assert_eq!(contents(&mut spa, target), contents(&mut spa, snapshot));
        assert_eq!(receive_resume_token(&mut spa, target).unwrap(), None);
    }
    // -A: interrupt again (on a third target) and abort.
    let before = spa.dataset_names().unwrap();
    let cut = full_a.len() / 2;
    assert!(receive(&mut spa, "tank/third", &full_a[..cut], resumable()).is_err());
    assert!(receive_resume_token(&mut spa, "tank/third")
        .unwrap()
        .is_some());
    abort_resumable_receive(&mut spa, "tank/third").unwrap();
    assert_eq!(spa.dataset_names().unwrap(), before);
    let err = abort_resumable_receive(&mut spa, "tank/dst").err().unwrap();
    assert_eq!(
        super::tests::refusal(err),
        (
            RecvContext::Abort,
            RecvRefusal::NothingToAbort {
                fs: "tank/dst".into()
            }
        )
    );
}

/// A second receive into a target whose receive is still running is refused as busy, and
/// does not mistake the first one's work dataset for debris.
#[test]
fn concurrent_receive_into_one_target_is_busy() {
    let (mut spa, _, inc_ab) = setup();
    let mut first = Receiver::new("tank/dst", RecvOptions::default());
    first.feed(&mut spa, &inc_ab[..inc_ab.len() / 2]).unwrap();
    let err = receive(&mut spa, "tank/dst", &inc_ab, RecvOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        super::tests::refusal(err),
        (RecvContext::Incremental, RecvRefusal::Busy)
    );
    first.feed(&mut spa, &inc_ab[inc_ab.len() / 2..]).unwrap();
    first.finish(&mut spa).unwrap();
    assert_eq!(
        contents(&mut spa, "tank/dst"),
        contents(&mut spa, "tank/src@b")
    );
    assert!(records(&inc_ab)
        .iter()
        .any(|r| matches!(r, Record::Write(_))));
}
