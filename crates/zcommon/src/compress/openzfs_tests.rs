//! Tests of OpenZFS's compression framings against real OpenZFS blocks (see
//! `openzfs_golden.rs` for where the bytes come from).

use super::*;
use crate::openzfs_golden::{
    all_blocks, fuse_sparse, fuse_text, hex_bytes, sha256_hex, FUSE_GZIP1_SHA256, FUSE_LZJB_SHA256,
    FUSE_ZLE_FLETCHER2, V15_LZJB_FLETCHER4_BE, ZSTDPOOL_PPC_ZSTD_FLETCHER4_BE,
    ZSTDPOOL_X86_ZSTD_HEADER,
};
use crate::test_rng::TestRng;

// Why: the ids are OpenZFS's on-disk values (`enum zio_compress`), the names those zdb prints.
#[test]
fn ids_and_names_are_openzfs() {
    for (index, kind) in ZioCompress::ALL.iter().enumerate() {
        assert_eq!(usize::from(kind.id()), index);
        assert_eq!(ZioCompress::from_id(index as u64), Some(*kind));
    }
    assert_eq!(ZioCompress::from_id(17), None);
    assert_eq!(ZioCompress::Lzjb.id(), 3);
    assert_eq!(ZioCompress::Gzip1.id(), 5);
    assert_eq!(ZioCompress::Gzip9.id(), 13);
    assert_eq!(ZioCompress::Zle.id(), 14);
    assert_eq!(ZioCompress::Lz4.id(), 15);
    assert_eq!(ZioCompress::Zstd.id(), 16);
    assert_eq!(ZioCompress::Off.name(), "uncompressed");
    assert_eq!(ZioCompress::Gzip7.name(), "gzip-7");
    assert_eq!(ZioCompress::Gzip7.gzip_level(), Some(7));
    assert_eq!(ZioCompress::Zle.gzip_level(), None);
}

// Why: every golden block's physical bytes (with their sector padding) must decode to exactly
// what zdb decompressed: lz4 (little- and big-endian writers), zstd (a big-endian writer's
// header layout), lzjb (OpenZFS and SPARC-era), gzip-1/-9 and zle (zfs-fuse).
#[test]
fn golden_blocks_decompress_to_zdbs_bytes() {
    for (name, block) in all_blocks() {
        let physical = hex_bytes(block.physical_hex);
        let logical = decompress(block.compress, &physical, block.lsize)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(logical.len(), block.lsize, "{name}");
        assert_eq!(sha256_hex(&logical), block.logical_sha256, "{name}");
    }
    // The zfs-fuse files' contents are known: compare byte for byte too.
    for (block, content) in [
        (&FUSE_GZIP1_SHA256, fuse_text()),
        (&FUSE_LZJB_SHA256, fuse_text()),
        (&FUSE_ZLE_FLETCHER2, fuse_sparse()),
    ] {
        let physical = hex_bytes(block.physical_hex);
        assert_eq!(
            decompress(block.compress, &physical, block.lsize).unwrap(),
            content
        );
    }
}

// Why: the zstd header's version/level word was stored in two layouts (little-endian hosts:
// [level, Vhigh, Vmid, Vlow]; big-endian hosts: [Vhigh, Vmid, Vlow, level]); both real headers
// must read as zstd 1.4.5 (10405), level 3.
#[test]
fn zstd_header_reads_both_historical_layouts() {
    let little_writer = zstd_header(&ZSTDPOOL_X86_ZSTD_HEADER).unwrap();
    assert_eq!(
        little_writer,
        ZstdHeader {
            c_len: 0xb96e,
            version: 10405,
            level: 3
        }
    );
    let physical = hex_bytes(ZSTDPOOL_PPC_ZSTD_FLETCHER4_BE.physical_hex);
    let big_writer = zstd_header(&physical).unwrap();
    assert_eq!(big_writer.version, 10405);
    assert_eq!(big_writer.level, 3);
    assert!(big_writer.c_len as usize + ZSTD_HEADER_BYTES <= physical.len());
    // A level outside OpenZFS's enum is corruption.
    let mut bad = ZSTDPOOL_X86_ZSTD_HEADER;
    bad[4] = 50;
    assert!(matches!(
        zstd_header(&bad),
        Err(OpenZfsCompressError::BadHeader { .. })
    ));
    assert_eq!(zstd_library_level(3), Some(3));
    assert_eq!(zstd_library_level(ZIO_ZSTD_LEVEL_FAST_1), Some(-1));
    assert_eq!(zstd_library_level(123), Some(-1000));
    assert_eq!(zstd_library_level(0), None);
    assert_eq!(zstd_library_level(20), None);
    assert_eq!(zstd_library_level(102), None);
    assert_eq!(zstd_library_level(124), None);
}

// Why: lzjb and zle compress byte for byte as OpenZFS/zfs-fuse did: re-compressing the logical
// bytes gives the physical block (before its zero padding).
#[test]
fn lzjb_and_zle_compress_to_the_golden_bytes() {
    for (name, block, logical) in [
        ("zfs-fuse lzjb", &FUSE_LZJB_SHA256, fuse_text()),
        ("zfs-fuse zle", &FUSE_ZLE_FLETCHER2, fuse_sparse()),
        ("v15 lzjb", &V15_LZJB_FLETCHER4_BE, {
            let physical = hex_bytes(V15_LZJB_FLETCHER4_BE.physical_hex);
            decompress(ZioCompress::Lzjb, &physical, V15_LZJB_FLETCHER4_BE.lsize).unwrap()
        }),
    ] {
        let physical = hex_bytes(block.physical_hex);
        let compressed = compress(block.compress, &logical, logical.len(), 0)
            .unwrap_or_else(|| panic!("{name}: did not compress"));
        assert!(compressed.len() <= physical.len(), "{name}");
        assert_eq!(compressed[..], physical[..compressed.len()], "{name}");
        assert!(
            physical[compressed.len()..].iter().all(|&byte| byte == 0),
            "{name}: the rest is padding"
        );
    }
}

// Why: what we write in OpenZFS's framing must decode again (the writer of the next issue),
// for every algorithm and for incompressible, compressible and sparse data.
#[test]
fn compress_round_trips_in_openzfs_framing() {
    let mut rng = TestRng::new(3);
    let random = rng.bytes(8192);
    let text: Vec<u8> = fuse_text().repeat(2);
    let mut sparse = vec![0u8; 8192];
    sparse[100..140].copy_from_slice(&random[..40]);
    sparse[7000] = 1;
    for kind in ZioCompress::ALL {
        for data in [&random, &text, &sparse] {
            let compressed = compress(kind, data, data.len(), 3);
            match kind {
                ZioCompress::Inherit | ZioCompress::On | ZioCompress::Off | ZioCompress::Empty => {
                    assert!(compressed.is_none());
                    continue;
                }
                _ => {}
            }
            let Some(compressed) = compressed else {
                // Random data does not compress; ZLE only squeezes zeros, and text has none.
                let zle_text = kind == ZioCompress::Zle && std::ptr::eq(data, &text);
                assert!(
                    std::ptr::eq(data, &random) || zle_text,
                    "{kind} must compress text and sparse data"
                );
                continue;
            };
            assert!(compressed.len() <= data.len(), "{kind}");
            let mut padded = compressed.clone();
            padded.resize(compressed.len().div_ceil(512) * 512, 0);
            assert_eq!(
                &decompress(kind, &padded, data.len()).unwrap(),
                data,
                "{kind}"
            );
        }
    }
    // A budget smaller than the result gives None, never an oversized block.
    assert!(compress(ZioCompress::Lz4, &text, 16, 0).is_none());
    assert!(compress(ZioCompress::Zle, &sparse, 4, 0).is_none());
    assert!(compress(ZioCompress::Lzjb, &text, 10, 0).is_none());
    // zstd writes OpenZFS's header: its level and our library's version, then a magicless frame.
    let zstd = compress(ZioCompress::Zstd, &text, text.len(), 5).unwrap();
    let header = zstd_header(&zstd).unwrap();
    assert_eq!(header.level, 5);
    assert_eq!(header.c_len as usize, zstd.len() - ZSTD_HEADER_BYTES);
    assert_ne!(
        zstd[ZSTD_HEADER_BYTES..ZSTD_HEADER_BYTES + 4],
        [0x28, 0xb5, 0x2f, 0xfd]
    );
    assert_eq!(
        zstd[4], 5,
        "level in the first byte, as little-endian hosts write it"
    );
    assert!(compress(ZioCompress::Zstd, &text, text.len(), 0).is_none());
}

// Why: the decoders and their framings must refuse what does not fit: a header announcing
// more than the block, a stream producing a different size, property-only ids, huge lsize.
#[test]
fn framing_errors_are_typed() {
    assert_eq!(
        decompress(ZioCompress::Empty, &[0; 512], 512),
        Err(OpenZfsCompressError::NotAFunction(ZioCompress::Empty))
    );
    assert!(matches!(
        decompress(ZioCompress::Off, &[0; 512], 1024),
        Err(OpenZfsCompressError::UncompressedTooShort { .. })
    ));
    assert_eq!(
        decompress(ZioCompress::Off, &[7; 512], 512).unwrap(),
        vec![7; 512]
    );
    assert!(matches!(
        decompress(ZioCompress::Lz4, &[0, 0, 2, 0, 1, 2], 512),
        Err(OpenZfsCompressError::BadHeader { .. })
    ));
    assert!(matches!(
        decompress(ZioCompress::Lz4, &[0, 0], 512),
        Err(OpenZfsCompressError::BadHeader { .. })
    ));
    assert!(matches!(
        decompress(ZioCompress::Lz4, &[0; 512], OPENZFS_MAX_LSIZE_BYTES + 1),
        Err(OpenZfsCompressError::LogicalSizeTooLarge { .. })
    ));
    let block = &FUSE_GZIP1_SHA256;
    let physical = hex_bytes(block.physical_hex);
    assert!(matches!(
        decompress(ZioCompress::Gzip1, &physical, block.lsize - 1),
        Err(OpenZfsCompressError::Malformed { .. })
    ));
    assert!(matches!(
        decompress(ZioCompress::Gzip1, &physical, block.lsize + 1),
        Err(OpenZfsCompressError::LengthMismatch { .. })
    ));
    let zle = hex_bytes(FUSE_ZLE_FLETCHER2.physical_hex);
    assert!(decompress(ZioCompress::Zle, &zle, 4095).is_err());
    // (A larger lsize would read on into the zero padding, which ZLE decodes as data, as
    // OpenZFS does; far larger cannot be reached.)
    assert!(decompress(ZioCompress::Zle, &zle, 8192).is_err());
}

// Why: decoders read outside bytes: random, truncated and bit-flipped blocks, for every id and
// a spread of logical sizes, must give an error or bytes of exactly lsize, never a panic.
#[test]
fn random_truncated_and_corrupt_input_never_panics() {
    let mut rng = TestRng::new(1234);
    let goldens: Vec<(Vec<u8>, usize)> = all_blocks()
        .iter()
        .map(|(_, block)| (hex_bytes(block.physical_hex), block.lsize))
        .collect();
    for round in 0..300 {
        let (golden, golden_lsize) = &goldens[round % goldens.len()];
        let input = match round % 3 {
            0 => {
                let len = rng.below(1200);
                rng.bytes(len)
            }
            1 => golden[..rng.below(golden.len() + 1)].to_vec(),
            _ => {
                let mut flipped = golden.clone();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(flipped.len());
                    flipped[at] ^= 1 << rng.below(8);
                }
                flipped
            }
        };
        for lsize in [0, 1, 512, *golden_lsize, rng.below(70_000)] {
            for kind in ZioCompress::ALL {
                if let Ok(logical) = decompress(kind, &input, lsize) {
                    assert_eq!(logical.len(), lsize, "{kind}");
                }
            }
        }
    }
}

// Why: physical blocks come off the disk; no bytes for any compression id may panic or
// decode to another length than asked (the fuzz target's check, on seeded inputs).
#[test]
fn fuzz_check_holds_on_random_inputs() {
    let mut state = 0x00c0_ffee_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..3000u64 {
        let len = (next() % 600) as usize;
        let mut input: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if let Some(first) = input.first_mut() {
            *first = (i % 20) as u8;
        }
        if i % 4 == 0 && input.len() > 8 {
            // Runs of zeros reach the decoders' copy paths.
            for b in input[4..].iter_mut().step_by(2) {
                *b = 0;
            }
        }
        fuzz_check(&input);
    }
    // Real compressed blocks of each kind, then with one bit flipped.
    let text: Vec<u8> = (0..4096u32).map(|i| (i % 251 % 7) as u8 + b'a').collect();
    for kind in ZioCompress::ALL {
        let Some(packed) = compress(kind, &text, text.len(), 3) else {
            continue;
        };
        for flip in 0..200usize {
            let mut phys = packed.clone();
            let at = (flip * 7919) % phys.len();
            phys[at] ^= 1 << (flip % 8);
            let lsize = (text.len() as u32) << 4;
            let mut input = vec![kind.id()];
            input.extend_from_slice(&lsize.to_le_bytes()[..3]);
            input.extend_from_slice(&phys);
            fuzz_check(&input);
        }
    }
}
