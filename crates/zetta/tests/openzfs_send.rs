//! Real OpenZFS send streams received by Zetta (issue 15, part 1, step 4): OpenZFS 2.3's
//! `zdb -B -e -p DIR POOL/OBJSETID` writes a send stream of an objset of a real pool in
//! userspace; Zetta receives it into a pool of its own, and then sends the received
//! snapshot back out. Every object (type, bonus type, block size, bonus bytes) and every
//! block's bytes Zetta sends must be the ones OpenZFS sent: what Zetta stored is what
//! OpenZFS had. Without the OpenZFS record parser the receive is refused at byte 0.

mod common;

use common::oracle::{fixture, zdb};
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use zetta::dmu_send::record::{Record, RecordParser};
use zetta::dmu_send::{plan_send, Receiver, RecvOptions, SendRequest, Sender};
use zetta::io::{DeviceRef, MemDevice};
use zetta::spa::{CreateOptions, Spa, TopKind, TopSpec};

fn pool() -> Spa {
    let device = Arc::new(MemDevice::new("/mem/recv", 512 << 20));
    let spec = TopSpec {
        kind: TopKind::Single,
        leaves: vec![("/mem/recv".to_string(), device as DeviceRef)],
        is_log: false,
    };
    Spa::create("tank", &[spec], &CreateOptions::default()).unwrap()
}

/// The objects of a stream: object → (type, bonus type, block size, bonus), and its
/// blocks: (object, offset) → logical bytes.
type Objects = BTreeMap<u64, (u8, u8, u32, Vec<u8>)>;
type Blocks = BTreeMap<(u64, u64), Vec<u8>>;

fn read_stream(bytes: &[u8]) -> (Objects, Blocks, String) {
    let mut parser = RecordParser::new();
    parser.push(bytes);
    let (mut objects, mut blocks, mut toname) = (Objects::new(), Blocks::new(), String::new());
    while let Some(record) = parser.next_record().unwrap() {
        match record {
            Record::Begin(b) => toname = b.info.get_str("toname").unwrap().to_string(),
            Record::Object(o) => {
                objects.insert(
                    o.object.0,
                    (o.object_type, o.bonus_type, o.block_size_bytes, o.bonus),
                );
            }
            Record::Write(w) => {
                assert_eq!(w.compression, 0, "no -c: logical blocks");
                // A block of zeros is a hole to whoever stores it (Zetta does not write
                // it; OpenZFS would not either with compression on).
                if w.data.iter().any(|b| *b != 0) {
                    blocks.insert((w.object.0, w.offset), w.data);
                }
            }
            _ => {}
        }
    }
    parser.finish().unwrap();
    (objects, blocks, toname)
}

#[test]
fn zdb_send_stream_received_and_sent_back_identically() {
    let fx = fixture("compression/testpool_zstd.tar.gz");
    let dir = fx.dir.to_str().unwrap();
    // Objset ids of the two ZPL datasets (zdb -d lists them): little- and big-endian bytes.
    for (objset, fs) in [(137, "x86_64"), (76, "ppc64_fbsd")] {
        let out = Command::new(zdb())
            .args(["-B", "-e", "-p", dir, &format!("testpool_zstd/{objset}")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "zdb -B: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stream = out.stdout;
        let (objects, blocks, toname) = read_stream(&stream);
        assert_eq!(toname, format!("testpool_zstd/{fs}@--head--"));
        assert!(objects.len() >= 8 && !blocks.is_empty());

        let mut spa = pool();
        let target = format!("tank/{}", fs.replace('_', "-"));
        let mut receiver = Receiver::new(&target, RecvOptions::default());
        for piece in stream.chunks(100_000) {
            receiver.feed(&mut spa, piece).unwrap();
        }
        receiver.finish(&mut spa).unwrap();

        let request = SendRequest {
            to: format!("{target}@--head--"),
            ..SendRequest::default()
        };
        let plan = plan_send(&mut spa, &request).unwrap();
        let mut back = Vec::new();
        for spec in plan.substreams {
            let mut sender = Sender::new(&mut spa, spec, request.options).unwrap();
            while !sender.fill(&mut spa, &mut back, 1 << 20).unwrap() {}
        }
        let (objects_back, blocks_back, _) = read_stream(&back);
        assert_eq!(objects_back, objects, "{fs}: objects");
        assert_eq!(blocks_back.len(), blocks.len(), "{fs}: block count");
        assert!(blocks_back == blocks, "{fs}: block contents differ");
    }
}
