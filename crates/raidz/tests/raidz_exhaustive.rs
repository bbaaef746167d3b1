//! End-to-end tests of the public RAID-Z API, in the spirit of ZFS's
//! raidz_test: every geometry, every set of failed children up to the parity
//! level, many block sizes: split, lose columns, reconstruct, assemble,
//! compare. Plus error cases and an ignored throughput probe.

use std::time::Instant;
use zetta_raidz::{raidz_map, RaidzError, RaidzMap, BLOCK_SIZE_MAX_BYTES, PARITY_MAX};

const CHILDREN_TESTED_MIN: usize = 3;
const CHILDREN_TESTED_MAX: usize = 12;
const BLOCK_TESTED_MAX_BYTES: u64 = 1 << 20;
const SEED: u64 = 0x5eed_7a1d_2025_0001;

/// splitmix64: a tiny deterministic generator so a seed reproduces a run.
struct TestRng(u64);

impl TestRng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    fn bytes(&mut self, length: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(length + 8);
        while out.len() < length {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(length);
        out
    }
}

/// Every subset of 0..children with at most `size_max` elements.
fn subsets_up_to(children: usize, size_max: usize) -> Vec<Vec<usize>> {
    let mut result = vec![Vec::new()];
    let mut frontier = vec![Vec::new()];
    for _ in 0..size_max {
        let mut next = Vec::new();
        for subset in &frontier {
            let start = subset.last().map_or(0, |&last| last + 1);
            for child in start..children {
                let mut grown = subset.clone();
                grown.push(child);
                next.push(grown);
            }
        }
        result.extend(next.iter().cloned());
        frontier = next;
    }
    result
}

/// Block sizes in sectors worth trying for a geometry.
fn block_sectors_sampled(rng: &mut TestRng, data_columns: u64, ashift: u32) -> Vec<u64> {
    let sectors_max = BLOCK_TESTED_MAX_BYTES >> ashift;
    let mut sizes = vec![
        1,
        2,
        data_columns - 1,
        data_columns,
        data_columns + 1,
        1 + rng.below(4 * data_columns),
        1 + rng.below(sectors_max),
        (128 << 10) >> ashift,
        sectors_max,
    ];
    sizes.retain(|&sectors| sectors >= 1);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Splits random data, fails every subset of children up to `parity`,
/// rebuilds, and checks both the data and the regenerated parity.
fn roundtrip_all_failures(children: usize, parity: usize, rng: &mut TestRng) -> usize {
    let failure_sets = subsets_up_to(children, parity);
    let mut cases = 0;
    for ashift in [9u32, 12] {
        let data_columns = (children - parity) as u64;
        for sectors in block_sectors_sampled(rng, data_columns, ashift) {
            let offset_bytes = rng.below(1 << 24) << ashift;
            let psize_bytes = sectors << ashift;
            let map = raidz_map(children, parity, ashift, offset_bytes, psize_bytes)
                .expect("valid geometry");
            let data = rng.bytes(psize_bytes as usize);
            let columns = map.split(&data);
            assert_eq!(columns.len(), map.columns.len());
            for failed in &failure_sets {
                let mut partial: Vec<Option<Vec<u8>>> = map
                    .columns
                    .iter()
                    .zip(&columns)
                    .map(|(column, bytes)| (!failed.contains(&column.child)).then(|| bytes.clone()))
                    .collect();
                map.reconstruct(&mut partial).unwrap_or_else(|error| {
                    panic!("{children} children p{parity} ashift {ashift} {sectors} sectors failed {failed:?}: {error}")
                });
                let rebuilt: Vec<Vec<u8>> = partial.into_iter().flatten().collect();
                assert!(
                    rebuilt == columns,
                    "columns differ: {children} children p{parity} ashift {ashift} {sectors} sectors failed {failed:?}"
                );
                assert!(map.assemble(&rebuilt) == data);
                cases += 1;
            }
        }
    }
    cases
}

fn roundtrip_parity_level(parity: usize, seed: u64) {
    let started = Instant::now();
    let mut rng = TestRng(seed);
    let mut cases = 0;
    for children in CHILDREN_TESTED_MIN..=CHILDREN_TESTED_MAX {
        if children > parity {
            cases += roundtrip_all_failures(children, parity, &mut rng);
        }
    }
    eprintln!(
        "raidz{parity}: {cases} reconstructions in {:.2?} (seed {seed:#x})",
        started.elapsed()
    );
}

// Why: the acceptance criterion: every width 3..=12 with single parity,
// every failed child, sizes from one sector to 1 MiB, both sector sizes.
#[test]
fn roundtrip_raidz1_every_width_every_failure() {
    roundtrip_parity_level(1, SEED);
}

// Why: as above for raidz2, where two data columns, or data with P or Q
// missing, exercise the 2×2 solves.
#[test]
fn roundtrip_raidz2_every_width_every_failure() {
    roundtrip_parity_level(2, SEED + 2);
}

// Why: as above for raidz3, the only path that inverts a full 3×3
// Vandermonde matrix; also mixes of missing P/Q/R and data.
#[test]
fn roundtrip_raidz3_every_width_every_failure() {
    roundtrip_parity_level(3, SEED + 3);
}

fn sample_map_and_columns() -> (RaidzMap, Vec<u8>, Vec<Vec<u8>>) {
    let map = raidz_map(6, 2, 9, 512 * 4, 512 * 11).expect("valid");
    let data = TestRng(SEED).bytes(map.psize_bytes as usize);
    let columns = map.split(&data);
    (map, data, columns)
}

// Why: losing more columns than parity must be reported, not answered with
// garbage, and must leave the caller's buffers untouched.
#[test]
fn reconstruct_too_many_missing_is_error() {
    let (map, _, columns) = sample_map_and_columns();
    let mut partial: Vec<Option<Vec<u8>>> = columns.iter().cloned().map(Some).collect();
    partial[0] = None;
    partial[3] = None;
    partial[5] = None;
    let before = partial.clone();
    assert_eq!(
        map.reconstruct(&mut partial),
        Err(RaidzError::TooManyMissing {
            missing: 3,
            parity: 2
        })
    );
    assert_eq!(partial, before);
}

// Why: a short read or a buffer of the wrong size from the device layer must
// give an error, never an out-of-bounds panic inside the math.
#[test]
fn reconstruct_and_assemble_reject_wrong_lengths() {
    let (map, data, columns) = sample_map_and_columns();
    let mut partial: Vec<Option<Vec<u8>>> = columns.iter().cloned().map(Some).collect();
    partial[1] = None;
    if let Some(column) = partial[4].as_mut() {
        column.pop();
    }
    assert!(matches!(
        map.reconstruct(&mut partial),
        Err(RaidzError::ColumnLengthMismatch { column: 4, .. })
    ));
    let mut too_few: Vec<Option<Vec<u8>>> = columns.iter().skip(1).cloned().map(Some).collect();
    assert!(matches!(
        map.reconstruct(&mut too_few),
        Err(RaidzError::ColumnCountMismatch { .. })
    ));
    let mut bad = columns.clone();
    bad[2].push(0);
    assert!(matches!(
        map.try_assemble(&bad),
        Err(RaidzError::ColumnLengthMismatch { column: 2, .. })
    ));
    assert!(matches!(
        map.try_assemble(&columns[1..]),
        Err(RaidzError::ColumnCountMismatch { .. })
    ));
    assert_eq!(map.try_assemble(&columns), Ok(data.clone()));
    assert!(matches!(
        map.try_split(&data[1..]),
        Err(RaidzError::DataLengthMismatch { .. })
    ));
}

// Why: misaligned addresses and sizes come from corrupt block pointers;
// they must be errors at map time (the full matrix is in map's unit tests).
#[test]
fn map_rejects_misaligned_input() {
    assert!(matches!(
        raidz_map(6, 2, 12, 512, 4096),
        Err(RaidzError::OffsetMisaligned { .. })
    ));
    assert!(matches!(
        raidz_map(6, 2, 12, 0, 4096 + 512),
        Err(RaidzError::SizeMisaligned { .. })
    ));
    assert!(matches!(
        raidz_map(6, 2, 12, 0, BLOCK_SIZE_MAX_BYTES * 2),
        Err(RaidzError::SizeTooLarge { .. })
    ));
    assert!(matches!(
        raidz_map(3, PARITY_MAX, 12, 0, 4096),
        Err(RaidzError::ChildrenInvalid { .. })
    ));
}

// Why: the widest vdev (255 children, 252 data columns on raidz3) is where
// the coefficients 2^i come closest to repeating; check it still rebuilds.
#[test]
fn roundtrip_widest_raidz3() {
    let children = zetta_raidz::CHILDREN_MAX;
    let map = raidz_map(children, 3, 9, 0, 512 * 600).expect("valid");
    let data = TestRng(SEED + 255).bytes(map.psize_bytes as usize);
    let columns = map.split(&data);
    for failed in [[3usize, 4, 5], [0, 254, 128], [250, 251, 252]] {
        let mut partial: Vec<Option<Vec<u8>>> = columns.iter().cloned().map(Some).collect();
        for &index in &failed {
            partial[index] = None;
        }
        map.reconstruct(&mut partial).expect("rebuild");
        let rebuilt: Vec<Vec<u8>> = partial.into_iter().flatten().collect();
        assert!(rebuilt == columns, "failed {failed:?}");
    }
}

fn megabytes_per_second(bytes: u64, started: Instant) -> f64 {
    bytes as f64 / started.elapsed().as_secs_f64() / 1e6
}

// Why: a performance probe for docs/PERFORMANCE.md, not a pass/fail check.
// Run: cargo test -p zetta-raidz --release -- --ignored --nocapture
#[test]
#[ignore]
fn throughput_128k_raidz2() {
    const ITERATIONS: u64 = 4000;
    let map = raidz_map(6, 2, 12, 0, 128 << 10).expect("valid");
    let data = TestRng(SEED).bytes(map.psize_bytes as usize);
    let started = Instant::now();
    let mut columns = Vec::new();
    for _ in 0..ITERATIONS {
        columns = map.split(std::hint::black_box(&data));
    }
    let split_rate = megabytes_per_second(ITERATIONS * map.psize_bytes, started);
    let started = Instant::now();
    for _ in 0..ITERATIONS {
        let mut partial: Vec<Option<Vec<u8>>> = columns.iter().cloned().map(Some).collect();
        partial[2] = None;
        partial[4] = None;
        map.reconstruct(std::hint::black_box(&mut partial))
            .expect("rebuild");
    }
    let rebuild_rate = megabytes_per_second(ITERATIONS * map.psize_bytes, started);
    println!("raidz2 6 children 128K: split (P+Q) {split_rate:.0} MB/s, rebuild 2 data columns {rebuild_rate:.0} MB/s");
}
