//! Tests of the compression layer: golden stored forms, round trips of every algorithm over
//! several data shapes and sizes, the keep rule, property names, and hostile-input fuzzing.

use super::*;
use crate::test_rng::TestRng;

/// One setting per algorithm and a spread of levels.
const SETTINGS: [Compression; 11] = [
    Compression::Lz4,
    Compression::Lzjb,
    Compression::Zle,
    Compression::Gzip(1),
    Compression::Gzip(6),
    Compression::Gzip(9),
    Compression::Zstd(1),
    Compression::Zstd(3),
    Compression::Zstd(19),
    Compression::ZstdFast(1),
    Compression::ZstdFast(1000),
];

const SIZES_BYTES: [usize; 5] = [512, 4096, 12_345, 131_072, 1 << 20];

/// Text-like data: words from a small vocabulary, no zero bytes.
fn text_like(rng: &mut TestRng, len: usize) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "pool", "vdev", "txg ", "the ", "block", "pointer", "checksum", " and ", "raidz", "\n",
        "scrub", "snapshot",
    ];
    let mut text = Vec::with_capacity(len + 16);
    while text.len() < len {
        text.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
        text.push(b' ');
    }
    text.truncate(len);
    text
}

/// Mostly zeros with short random islands: what ZLE exists for.
fn sparse(rng: &mut TestRng, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    let mut offset = 0;
    while offset < len {
        let island = rng.below(40).min(len - offset);
        rng.fill(&mut data[offset..offset + island]);
        offset += island + 200;
    }
    data
}

fn round_trip(setting: Compression, data: &[u8]) -> Option<usize> {
    let stored = compress(setting, data)?;
    assert!(
        stored.len() < data.len(),
        "{setting:?}: stored form must be smaller"
    );
    // Pad like a sector-rounded physical block; padding must be ignored.
    let mut physical = stored.clone();
    physical.resize(stored.len().next_multiple_of(512), 0);
    // Garbage in dst proves the decoder writes every byte.
    let mut decoded = vec![0xa5u8; data.len()];
    decompress(setting.algorithm_id(), &physical, &mut decoded)
        .unwrap_or_else(|error| panic!("{setting:?} len {}: {error}", data.len()));
    assert!(
        decoded == data,
        "{setting:?} len {}: round trip differs",
        data.len()
    );
    Some(stored.len())
}

// Why: every algorithm must reproduce its input exactly for all data shapes and block sizes the
// engine uses, including with sector padding after the payload and garbage in the output buffer.
#[test]
fn round_trips_every_algorithm() {
    let mut rng = TestRng::new(11);
    for len in SIZES_BYTES {
        let random = rng.bytes(len);
        let zeros = vec![0u8; len];
        let text = text_like(&mut rng, len);
        let holes = sparse(&mut rng, len);
        for setting in SETTINGS {
            // Random data rarely compresses; when it does it must still round-trip.
            round_trip(setting, &random);
            let zeros_result = round_trip(setting, &zeros);
            let holes_result = round_trip(setting, &holes);
            let text_result = round_trip(setting, &text);
            // zstd-fast-1000 trades nearly all ratio for speed: it may store small blocks raw.
            if setting == Compression::ZstdFast(1000) {
                continue;
            }
            assert!(zeros_result.is_some(), "{setting:?} zeros {len}");
            assert!(holes_result.is_some(), "{setting:?} sparse {len}");
            if setting != Compression::Zle {
                assert!(text_result.is_some(), "{setting:?} text {len}");
            } else {
                assert!(
                    text_result.is_none(),
                    "zle cannot shrink data without zeros"
                );
            }
        }
    }
}

// Why: short and odd-sized inputs hit the encoders' edge paths (last literals, a final partial
// copymap group, inputs shorter than a match).
#[test]
fn round_trips_small_inputs() {
    let mut rng = TestRng::new(12);
    for len in 0..200 {
        let data: Vec<u8> = (0..len).map(|_| [0u8, 0, 0, 7][rng.below(4)]).collect();
        for setting in SETTINGS {
            round_trip(setting, &data);
        }
    }
}

// Why: `Off` never yields a stored form, and incompressible data never yields a larger one.
#[test]
fn compress_declines_off_and_incompressible() {
    let random = TestRng::new(13).bytes(4096);
    assert_eq!(compress(Compression::Off, &[0u8; 4096]), None);
    assert_eq!(compress(Compression::Lz4, &random), None);
    assert_eq!(compress(Compression::Lzjb, &random), None);
    assert_eq!(compress(Compression::Zle, &random), None);
    assert_eq!(compress(Compression::Lz4, &[]), None);
    assert_eq!(compress(Compression::Zle, &[1u8; 4]), None);
    assert_eq!(compress(Compression::Zle, &[0u8; 4]), Some(vec![0x43]));
}

// Why: OpenZFS's ZLE (level 64) byte for byte: a literal run "AB" (control 1), 120 zeros
// (control 120 - 1 + 64 = 0xb7), "C" (control 0), 100 zeros (0xa3). OpenZFS reads these bytes.
#[test]
fn zle_golden_physical_form() {
    let mut data = vec![0x41, 0x42];
    data.extend([0u8; 120]);
    data.push(0x43);
    data.extend([0u8; 100]);
    let physical = compress(Compression::Zle, &data).expect("compressible");
    assert_eq!(physical, [0x01, 0x41, 0x42, 0xb7, 0x00, 0x43, 0xa3]);
    assert_eq!(Compression::Zle.algorithm_id(), 14);
}

// Why: OpenZFS's lz4 framing: a big-endian u32 payload length, then one LZ4 block; the
// block pointer's id is 15.
#[test]
fn lz4_header_is_big_endian_payload_length() {
    let physical = compress(Compression::Lz4, &[0u8; 4096]).expect("compressible");
    let payload_len = u32::from_be_bytes([physical[0], physical[1], physical[2], physical[3]]);
    assert_eq!(payload_len as usize, physical.len() - 4);
    assert_eq!(Compression::Lz4.algorithm_id(), 15);
}

// Why: OpenZFS's zstd header: big-endian frame length, then the level enum in the high byte
// of a big-endian word whose low 24 bits are the library version; gzip-N is id 4 + N.
#[test]
fn zstd_header_and_gzip_ids_are_openzfs() {
    let physical = compress(Compression::Zstd(7), &[0u8; 4096]).expect("compressible");
    let header = openzfs::zstd_header(&physical).unwrap();
    assert_eq!(header.level, 7);
    assert_eq!(
        header.c_len as usize + openzfs::ZSTD_HEADER_BYTES,
        physical.len()
    );
    let fast = compress(Compression::ZstdFast(20), &[0u8; 4096]).expect("compressible");
    assert_eq!(openzfs::zstd_header(&fast).unwrap().level, 113);
    assert_eq!(Compression::Gzip(1).algorithm_id(), 5);
    assert_eq!(Compression::Gzip(9).algorithm_id(), 13);
    assert_eq!(Compression::Zstd(3).algorithm_id(), 16);
    assert_eq!(Compression::Off.algorithm_id(), ALGORITHM_ID_OFF);
}

// Why: the 12.5% rule decides what goes on disk; check the exact boundary the brief computed
// (128 KiB logical, 4 KiB sectors: kept up to 114688 bytes allocated) and odd ashifts.
#[test]
fn keep_compressed_boundaries() {
    assert!(keep_compressed(114_688, 131_072, 12));
    assert!(keep_compressed(110_593, 131_072, 12)); // rounds up to 114688
    assert!(!keep_compressed(114_689, 131_072, 12)); // rounds up to 118784
    assert!(keep_compressed(448, 512, 0));
    assert!(!keep_compressed(449, 512, 0));
    assert!(!keep_compressed(100, 4096, 12)); // one 4K sector saves nothing
    assert!(keep_compressed(100, 8192, 12));
    assert!(!keep_compressed(1, 1 << 20, 64)); // nonsense ashift: refuse, do not panic
    assert!(!keep_compressed(usize::MAX, usize::MAX, 12)); // overflow: refuse
}

// Why: `zfs set compression=` must accept exactly the ZFS spellings, and print them back the way
// ZFS does; ids are on-disk values.
#[test]
fn property_names_parse_and_print() {
    let cases = [
        ("on", Compression::Lz4, "lz4"),
        ("off", Compression::Off, "off"),
        ("lz4", Compression::Lz4, "lz4"),
        ("lzjb", Compression::Lzjb, "lzjb"),
        ("zle", Compression::Zle, "zle"),
        ("gzip", Compression::Gzip(6), "gzip"),
        ("gzip-6", Compression::Gzip(6), "gzip"),
        ("gzip-1", Compression::Gzip(1), "gzip-1"),
        ("gzip-9", Compression::Gzip(9), "gzip-9"),
        ("zstd", Compression::Zstd(3), "zstd"),
        ("zstd-3", Compression::Zstd(3), "zstd"),
        ("zstd-19", Compression::Zstd(19), "zstd-19"),
        ("zstd-fast", Compression::ZstdFast(1), "zstd-fast-1"),
        ("zstd-fast-10", Compression::ZstdFast(10), "zstd-fast-10"),
        (
            "zstd-fast-1000",
            Compression::ZstdFast(1000),
            "zstd-fast-1000",
        ),
    ];
    for (value, expected, printed) in cases {
        assert_eq!(Compression::parse_property(value), Ok(expected), "{value}");
        assert_eq!(expected.property_name(), printed);
        assert_eq!(Compression::parse_property(printed), Ok(expected));
    }
    for value in [
        "",
        "gzip-0",
        "gzip-10",
        "gzip-+5",
        "gzip-06",
        "zstd-0",
        "zstd-20",
        "zstd-fast-11",
        "zstd-fast-15",
        "zstd-fast-2000",
        "zstd-fast-",
        "LZ4",
        "lz4 ",
        "bzip2",
    ] {
        let error = Compression::parse_property(value).unwrap_err();
        assert!(matches!(error, PropertyError::Invalid { .. }), "{value}");
        assert!(error.to_string().contains("compression"), "{error}");
    }
    let ids: Vec<u8> = [
        Compression::Off,
        Compression::Lz4,
        Compression::Lzjb,
        Compression::Zle,
        Compression::Gzip(3),
        Compression::Zstd(7),
        Compression::ZstdFast(20),
    ]
    .iter()
    .map(|setting| setting.algorithm_id())
    .collect();
    assert_eq!(ids, [2, 15, 3, 14, 7, 16, 16]);
}

// Why: levels outside the property's range can only come from code building the enum directly;
// they must be clamped, not panic inside a codec.
#[test]
fn out_of_range_levels_are_clamped() {
    let data = vec![0u8; 4096];
    for setting in [
        Compression::Gzip(0),
        Compression::Gzip(200),
        Compression::Zstd(-5),
        Compression::Zstd(99),
        Compression::ZstdFast(0),
        Compression::ZstdFast(u32::MAX),
    ] {
        assert!(round_trip(setting, &data).is_some(), "{setting:?}");
    }
}

// Why: header errors must be specific and readable; the engine shows them to users.
#[test]
fn header_errors() {
    let mut dst = [0u8; 64];
    let mut block = vec![0u8; 4096];
    block[..4].copy_from_slice(&5000u32.to_be_bytes());
    let error = decompress(Compression::Lz4.algorithm_id(), &block, &mut dst).unwrap_err();
    assert!(
        matches!(&error, CompressError::Malformed { algorithm: "lz4", reason } if reason.contains("5000")),
        "{error}"
    );
    for id in [0, 1, 4, 17, 99] {
        assert_eq!(
            decompress(id, &block, &mut dst),
            Err(CompressError::UnknownAlgorithm { algorithm_id: id })
        );
    }
    assert!(matches!(
        decompress(ALGORITHM_ID_OFF, &[0u8; 10], &mut dst),
        Err(CompressError::UncompressedTooShort { .. })
    ));
    decompress(ALGORITHM_ID_OFF, &block, &mut dst).expect("off copies a prefix");
}

// Why: a payload that decodes cleanly to the wrong size (the block pointer's logical size
// disagrees with the data) must be an error for every algorithm (too short too, where the
// framing can tell).
#[test]
fn wrong_logical_size_is_an_error() {
    let data = text_like(&mut TestRng::new(14), 8192);
    let mut data_with_zeros = data.clone();
    data_with_zeros[1000..3000].fill(0);
    for setting in SETTINGS {
        let input = if setting == Compression::Zle {
            &data_with_zeros
        } else {
            &data
        };
        let Some(stored) = compress(setting, input) else {
            // Only zstd-fast-1000 may decline here; it is covered by the round trips.
            assert_eq!(setting, Compression::ZstdFast(1000));
            continue;
        };
        // OpenZFS's lzjb and zle streams have no length: they end where the output is full,
        // so only a longer logical size is detectable.
        let shorter_detectable = !matches!(setting, Compression::Lzjb | Compression::Zle);
        for logical_len in [input.len() - 1, input.len() + 1, 0] {
            if logical_len < input.len() && !shorter_detectable {
                continue;
            }
            let mut dst = vec![0u8; logical_len];
            assert!(
                decompress(setting.algorithm_id(), &stored, &mut dst).is_err(),
                "{setting:?} accepted logical size {logical_len}"
            );
        }
    }
}

// Why: decompress reads untrusted disk bytes. Random blocks, bit-flipped, truncated and
// header-corrupted stored forms must give Ok or Err but never panic, for every algorithm id;
// a truncated payload whose header still claims the full length must always be an error.
// (dst is a Vec of exact size, so an out-of-bounds write would panic and fail the test.)
#[test]
fn hostile_input_never_panics() {
    let mut rng = TestRng::new(15);
    for algorithm_id in 0..=17u8 {
        for _ in 0..300 {
            let block_len = rng.below(600);
            let block = rng.bytes(block_len);
            let mut dst = vec![0u8; rng.below(2000)];
            let _ = decompress(algorithm_id, &block, &mut dst);
            // Same, with a plausible header.
            let mut block = block;
            if block.len() >= 4 {
                let payload_len = (block.len() - 4 - rng.below(block.len() - 3)) as u32;
                block[..4].copy_from_slice(&payload_len.to_be_bytes());
                let _ = decompress(algorithm_id, &block, &mut dst);
            }
        }
    }
    for setting in SETTINGS {
        let original = sparse(&mut rng, 16_384);
        let mut text = text_like(&mut rng, 16_384);
        text[4000..4400].fill(0);
        for data in [original, text] {
            let Some(stored) = compress(setting, &data) else {
                continue;
            };
            let id = setting.algorithm_id();
            for _ in 0..200 {
                let mut damaged = stored.clone();
                for _ in 0..1 + rng.below(4) {
                    let bit = rng.below(damaged.len() * 8);
                    damaged[bit / 8] ^= 1 << (bit % 8);
                }
                let mut dst = vec![0u8; data.len()];
                let _ = decompress(id, &damaged, &mut dst);
            }
            for cut in (0..stored.len()).step_by(1 + stored.len() / 97) {
                let mut dst = vec![0u8; data.len()];
                assert!(
                    decompress(id, &stored[..cut], &mut dst).is_err(),
                    "{setting:?} accepted a block cut to {cut} bytes"
                );
            }
        }
    }
}
