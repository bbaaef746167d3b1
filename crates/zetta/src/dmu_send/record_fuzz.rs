//! The stream parser's invariants on arbitrary bytes: the check the fuzz target
//! (`fuzz/fuzz_targets/stream_parser.rs`) runs, and its seeded counterpart in the default
//! test suite.

use super::error::StreamError;
use super::record::{Record, RecordParser, RecordWriter};
use crate::types::Guid;

/// Parses `data` pushed `piece` bytes at a time: the records accepted, then how it ended.
fn parse_pieces(data: &[u8], piece: usize) -> (Vec<Record>, Result<(), StreamError>) {
    let mut parser = RecordParser::new();
    let mut records = Vec::new();
    for chunk in data.chunks(piece.max(1)) {
        parser.push(chunk);
        loop {
            match parser.next_record() {
                Ok(Some(record)) => records.push(record),
                Ok(None) => break,
                Err(e) => return (records, Err(e)),
            }
        }
    }
    let end = parser.finish();
    (records, end)
}

/// The parser's invariants on arbitrary bytes, checked by the fuzz target
/// (`fuzz/fuzz_targets/stream_parser.rs`) and by the default test suite: parsing never
/// panics; the outcome does not depend on how the input is split; every accepted record
/// re-encodes to bytes that parse back to the same record. Panics when one breaks.
#[doc(hidden)]
pub fn fuzz_check(data: &[u8]) {
    let whole = parse_pieces(data, data.len());
    let piece = 1 + usize::from(data.first().copied().unwrap_or(0)) % 97;
    assert_eq!(
        whole,
        parse_pieces(data, piece),
        "outcome depends on the split"
    );
    let (records, _) = whole;
    let mut out = Vec::new();
    let mut writer = RecordWriter::new();
    for record in &records {
        if matches!(record, Record::Begin(_)) {
            writer = RecordWriter::new();
        }
        writer.emit_record(&mut out, record);
    }
    // A record is handed out once the next header verified: close an unfinished
    // substream with an END so the last record can be read back too.
    if !matches!(records.last(), None | Some(Record::End { .. })) {
        writer.emit_record(&mut out, &Record::End { to_guid: Guid(0) });
    }
    let (mut again, _) = parse_pieces(&out, out.len());
    again.truncate(records.len());
    assert_eq!(again, records, "accepted records do not round-trip");
}

#[cfg(test)]
mod tests {
    use super::super::record::*;
    use super::*;
    use crate::nvlist::NvList;
    use crate::rand::SeededRng;
    use crate::types::ObjectId;

    /// A small stream with every record type.
    fn sample() -> Vec<u8> {
        let mut info = NvList::new();
        info.set_str("toname", "tank/fs@s");
        let records = [
            Record::Begin(BeginRecord {
                features: FEATURE_COMPRESSED | FEATURE_LZ4,
                compound: false,
                flags: 0,
                to_guid: Guid(5),
                from_guid: Guid(0),
                creation_time: 7,
                info,
            }),
            Record::Object(ObjectRecord {
                object: ObjectId(1),
                object_type: 6,
                bonus_type: 0,
                checksum: 0,
                compress: 0,
                dn_slots: 1,
                flags: 0,
                block_size_bytes: 4096,
                bonus: vec![1, 2, 3],
            }),
            Record::Write(WriteRecord {
                object: ObjectId(1),
                object_type: 6,
                offset: 0,
                length: 4096,
                checksum: 0,
                flags: 0,
                key: [0; 5],
                compression: 0,
                logical_size_bytes: 0,
                data: vec![9; 4096],
            }),
            Record::Free {
                object: ObjectId(1),
                offset: 4096,
                length: u64::MAX,
            },
            Record::FreeObjects {
                first: ObjectId(2),
                count: 30,
            },
            Record::End { to_guid: Guid(5) },
        ];
        let mut out = Vec::new();
        let mut writer = RecordWriter::new();
        for record in &records {
            writer.emit_record(&mut out, record);
        }
        out
    }

    /// A compound stream as libzfs writes it (`zfs send -R -I`/`-e`): the package header
    /// (BEGIN of header type 2 whose payload is libzfs's nvlist: `fromsnap`, `tosnap`,
    /// `not_recursive`, `fss` keyed by `0x<guid>` with typed props and snaps) and its END,
    /// a substream with an OBJECT and a WRITE_EMBEDDED, its END, and the all-zero END.
    fn compound_sample() -> Vec<u8> {
        use crate::nvpair_xdr::{pack, XdrNvList, XdrValue};
        let mut props = XdrNvList::new();
        props.add("compression", XdrValue::Uint64(15));
        props.add("org.test:color", XdrValue::String(b"red".to_vec()));
        let mut snaps = XdrNvList::new();
        snaps.add("a", XdrValue::Uint64(4));
        snaps.add("b", XdrValue::Uint64(5));
        let mut fs = XdrNvList::new();
        fs.add("name", XdrValue::String(b"tank/fs".to_vec()));
        fs.add("parentfromsnap", XdrValue::Uint64(0));
        fs.add("props", XdrValue::NvList(props));
        fs.add("snaps", XdrValue::NvList(snaps));
        fs.add("snapprops", XdrValue::NvList(XdrNvList::new()));
        let mut fss = XdrNvList::new();
        fss.add("0x1234", XdrValue::NvList(fs));
        let mut header = XdrNvList::new();
        header.add("fromsnap", XdrValue::String(b"a".to_vec()));
        header.add("tosnap", XdrValue::String(b"b".to_vec()));
        header.add("not_recursive", XdrValue::Boolean);
        header.add("fss", XdrValue::NvList(fss));
        let mut out = Vec::new();
        let mut writer = RecordWriter::new();
        writer.emit_compound_begin(
            &mut out,
            "tank/fs@b",
            FEATURE_SA_SPILL,
            pack(&header).unwrap(),
        );
        writer.emit_record(&mut out, &Record::End { to_guid: Guid(0) });
        let mut info = NvList::new();
        info.set_str("toname", "tank/fs@b");
        let records = [
            Record::Begin(BeginRecord {
                features: FEATURE_SA_SPILL | FEATURE_EMBED_DATA | FEATURE_LZ4,
                compound: false,
                flags: 0,
                to_guid: Guid(5),
                from_guid: Guid(4),
                creation_time: 7,
                info,
            }),
            Record::Object(ObjectRecord {
                object: ObjectId(2),
                object_type: 19,
                bonus_type: 0,
                checksum: 0,
                compress: 0,
                dn_slots: 1,
                flags: 0,
                block_size_bytes: 512,
                bonus: vec![],
            }),
            Record::WriteEmbedded(WriteEmbeddedRecord {
                object: ObjectId(2),
                offset: 0,
                length: 512,
                compression: 15,
                etype: BP_EMBEDDED_TYPE_DATA,
                logical_size_bytes: 512,
                data: vec![0, 0, 0, 11, 31, 122, 1, 0, 255, 255, 255, 255, 255, 227, 80],
            }),
            Record::End { to_guid: Guid(5) },
        ];
        for record in &records {
            writer.emit_record(&mut out, record);
        }
        out.extend_from_slice(&conclusion_record());
        out
    }

    /// The fuzz target's invariants hold on seeded mutations of valid streams (flips,
    /// cuts, copies, garbage) — a plain substream with every record type, and a compound
    /// stream in libzfs's shape with a WRITE_EMBEDDED — and on random bytes, so the default
    /// suite covers the parser even where cargo-fuzz is not installed.
    #[test]
    fn parser_invariants_hold_on_mutations() {
        let good = sample();
        fuzz_check(&good);
        let (records, end) = parse_pieces(&good, 13);
        assert_eq!((records.len(), end), (6, Ok(())));
        let compound = compound_sample();
        fuzz_check(&compound);
        let (records, end) = parse_pieces(&compound, 17);
        assert_eq!((records.len(), end), (6, Ok(())));
        assert!(matches!(&records[0], Record::Begin(b) if b.compound));
        assert!(matches!(&records[4], Record::WriteEmbedded(_)));
        let mut rng = SeededRng::new(41);
        for round in 0..40_000 {
            let good = if round % 2 == 0 { &good } else { &compound };
            let mut data = good.clone();
            for _ in 0..=rng.below(3) {
                let at = rng.below(data.len() as u64 + 1) as usize;
                match rng.below(4) {
                    0 if at < data.len() => data[at] ^= 1 << rng.below(8),
                    1 => data.truncate(at),
                    2 => {
                        let from = rng.below(good.len() as u64) as usize;
                        let len = (rng.below(200) as usize).min(good.len() - from);
                        data.splice(at..at, good[from..from + len].iter().copied());
                    }
                    _ => {
                        let mut garbage = vec![0u8; rng.below(64) as usize];
                        rng.fill(&mut garbage);
                        data.splice(at..at, garbage);
                    }
                }
            }
            fuzz_check(&data);
        }
        for len in 0..2000 {
            let mut data = vec![0u8; len];
            rng.fill(&mut data);
            if len >= 16 && len % 3 == 0 {
                // A BEGIN's type and magic, so random bytes reach the field checks.
                data[..8].fill(0);
                data[8..16].copy_from_slice(&BACKUP_MAGIC.to_le_bytes());
            }
            fuzz_check(&data);
        }
    }

    /// Hostile lengths are refused from the header alone: a record claiming a 4 GiB
    /// payload fails before anything is buffered for it.
    #[test]
    fn oversized_payload_is_refused_early() {
        let mut good = sample();
        // drr_payloadlen of the BEGIN.
        good[4..8].copy_from_slice(&(u32::MAX - 3).to_le_bytes());
        let mut parser = RecordParser::new();
        parser.push(&good[..HEADER_SIZE_BYTES]);
        assert!(matches!(
            parser.next_record(),
            Err(StreamError::BadRecord { seq: 0, .. })
        ));
    }
}
