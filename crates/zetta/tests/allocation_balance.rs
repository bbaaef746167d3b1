//! Allocation across top-level vdevs by free space (seeds 001/002: "ZFS does NOT favor
//! lower latency devices"; "How data gets imbalanced").
//!
//! Why: new writes must be spread in proportion to each vdev's FREE space, so a 10G+2G pool
//! fills at about 5:1 and both vdevs fill up together. Sizes here are the seeds' ratios at a
//! smaller scale (the ratio does not depend on scale); devices are sparse simulated files.

use std::sync::Arc;
use zetta::io::{DeviceRef, SimDevice};
use zetta::spa::{CreateOptions, Spa, SpaError, TopKind, TopSpec};
use zetta::zio::WriteProps;
use zetta_zcommon::compress::Compression;

fn pool(sizes_mib: &[u64]) -> Spa {
    let tops: Vec<TopSpec> = sizes_mib
        .iter()
        .enumerate()
        .map(|(i, size)| TopSpec {
            kind: TopKind::Single,
            leaves: vec![(
                format!("/sim/v{i}"),
                Arc::new(SimDevice::new(&format!("/sim/v{i}"), size << 20, i as u64)) as DeviceRef,
            )],
            is_log: false,
        })
        .collect();
    let mut spa = Spa::create("balance", &tops, &CreateOptions::default()).unwrap();
    spa.set_data_props(WriteProps {
        compression: Compression::Off,
        ..zetta::dmu::default_data_props()
    });
    spa
}

/// Writes `mib` MiB of incompressible data (in 1 MiB objects); stops early at ENOSPC.
fn write_mib(spa: &mut Spa, mib: u64, seed: u64) -> Result<(), SpaError> {
    let mut block = vec![0u8; 1 << 20];
    for i in 0..mib {
        for (j, word) in block.chunks_mut(8).enumerate() {
            word.copy_from_slice(
                &(seed ^ (i << 20) ^ j as u64)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .to_le_bytes(),
            );
        }
        let id = spa.create_object(512)?;
        spa.write_object(id, 0, &block)?;
    }
    spa.sync()?;
    Ok(())
}

fn ratio(spa: &Spa) -> f64 {
    let (_, first, _, _) = spa.vdev_space(0).unwrap();
    let (_, second, _, _) = spa.vdev_space(1).unwrap();
    first as f64 / second as f64
}

/// 10:2 sizes fill at about 5:1, both when partly and when completely full.
#[test]
fn ten_to_two_fills_five_to_one() {
    let mut spa = pool(&[1000, 200]);
    write_mib(&mut spa, 200, 1).unwrap();
    let early = ratio(&spa);
    assert!((3.0..=6.0).contains(&early), "after 200M: {early:.2}:1");
    assert!(matches!(
        write_mib(&mut spa, 2000, 2),
        Err(SpaError::NoSpace)
    ));
    // Everything accepted before ENOSPC commits: the check left room for it.
    spa.sync().unwrap();
    let full = ratio(&spa);
    let (size, allocated, _) = spa.space();
    assert!((4.5..=5.5).contains(&full), "at ENOSPC: {full:.2}:1");
    assert!(
        allocated * 100 / size >= 95,
        "pool only {}% full at ENOSPC",
        allocated * 100 / size
    );
}

/// Fast or slow does not matter, only free space: the same with the sizes swapped.
#[test]
fn swapped_sizes_swap_the_ratio() {
    let mut spa = pool(&[200, 1000]);
    write_mib(&mut spa, 300, 3).unwrap();
    let early = 1.0 / ratio(&spa);
    assert!((3.0..=6.0).contains(&early), "{early:.2}:1");
}

/// 512M + 2G gives about 4:1.
#[test]
fn half_gig_and_two_gig_fill_four_to_one() {
    let mut spa = pool(&[512, 2048]);
    write_mib(&mut spa, 600, 4).unwrap();
    let observed = 1.0 / ratio(&spa);
    assert!((3.3..=4.7).contains(&observed), "{observed:.2}:1");
}
