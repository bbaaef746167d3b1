//! `dmu::tx`: the throttle's curve and the holds' estimates, against OpenZFS's formulas.

use super::*;

// Why: the write throttle must slow writers exactly as OpenZFS's `dmu_tx_delay` does, or
// a pool here stalls (too steep) or runs its dirty budget out (too flat) where OpenZFS
// would not. Golden numbers computed with OpenZFS 2.3's integer formula and defaults
// (`zfs_delay_min_dirty_percent` 60, `zfs_delay_scale` 500000, `zfs_delay_max_ns` 100 ms)
// for a 4 GiB `zfs_dirty_data_max` (OpenZFS's usual cap) and Zetta's 256 MiB:
// delay_min = max * 60 / 100; tx_time = scale * (dirty - min) / (max - dirty).
#[test]
fn the_delay_curve_is_dmu_tx_delays() {
    let four_gib: u64 = 4 << 30;
    let golden_4g: [(u64, u64); 7] = [
        (2_576_980_377, 0),          // 60%: the threshold itself is not delayed
        (2_619_930_050, 12_820),     // 61%
        (3_006_477_107, 166_666),    // 70%
        (3_435_973_836, 499_999),    // 80%: the curve's midpoint, about zfs_delay_scale
        (3_865_470_566, 1_499_999),  // 90%
        (4_080_218_931, 3_499_999),  // 95%
        (4_252_017_623, 19_499_999), // 99%
    ];
    for (dirty, delay_ns) in golden_4g {
        assert_eq!(dmu_tx_delay_ns(dirty, four_gib), delay_ns, "dirty {dirty}");
    }
    let golden_256m: [(u64, u64); 7] = [
        (161_061_273, 0),
        (163_745_628, 12_820),
        (187_904_819, 166_666),
        (214_748_364, 499_999),
        (241_591_910, 1_499_999),
        (255_013_683, 3_499_999),
        (265_751_101, 19_499_996),
    ];
    for (dirty, delay_ns) in golden_256m {
        assert_eq!(
            dmu_tx_delay_ns(dirty, ZFS_DIRTY_DATA_MAX),
            delay_ns,
            "dirty {dirty}"
        );
    }
    // One byte short of the max: capped at zfs_delay_max_ns; at and past it, the cap too
    // (OpenZFS's caller has waited for a commit instead of dividing by zero).
    assert_eq!(
        dmu_tx_delay_ns(ZFS_DIRTY_DATA_MAX - 1, ZFS_DIRTY_DATA_MAX),
        ZFS_DELAY_MAX_NS
    );
    assert_eq!(
        dmu_tx_delay_ns(ZFS_DIRTY_DATA_MAX, ZFS_DIRTY_DATA_MAX),
        ZFS_DELAY_MAX_NS
    );
    assert_eq!(dmu_tx_delay_ns(0, ZFS_DIRTY_DATA_MAX), 0);
    // Monotonic between the threshold and the max.
    let mut previous = 0;
    for percent in 60..100 {
        let delay = dmu_tx_delay_ns(ZFS_DIRTY_DATA_MAX / 100 * percent, ZFS_DIRTY_DATA_MAX);
        assert!(delay >= previous, "the curve fell at {percent}%");
        previous = delay;
    }
    assert_eq!(dirty_data_sync_bytes(ZFS_DIRTY_DATA_MAX), 128 << 20);
    assert_eq!(crate::spa::DIRTY_BYTES_MAX, 128 << 20);
}

// Why: the holds carry OpenZFS's worst-case estimates (`dmu_tx_count_write`,
// `dmu_tx_count_dnode`, `dmu_tx_hold_zap_impl`, `dmu_tx_count_free`), which is what the
// throttle and a future `dsl_dir_tempreserve_space` read.
#[test]
fn holds_carry_dmu_tx_holds_estimates() {
    let mut tx = Tx::create(70);
    tx.hold_write(Some(12), 4096, 8192);
    assert_eq!(tx.space_towrite(), 8192 + DNODE_MIN_SIZE);
    tx.hold_zap(Some(34));
    tx.hold_bonus(Some(12));
    assert_eq!(
        tx.space_towrite(),
        8192 + DNODE_MIN_SIZE + DNODE_MIN_SIZE + (128 << 10) + DNODE_MIN_SIZE
    );
    assert!(!tx.is_netfree());
    tx.abort();

    // A free of 10 MiB of 128 KiB records from an unaligned offset: its dnode, the partial
    // first block (one byte, as OpenZFS counts it), and the level-1 blocks it reads (one
    // covers 1024 records, 128 MiB: the range lies in one).
    let mut tx = Tx::create(70);
    tx.hold_free(Some(12), 1000, 10 << 20, 128 << 10);
    tx.mark_netfree();
    let hold = tx.holds()[0];
    assert_eq!(hold.kind, TxHoldType::Free);
    assert_eq!(hold.space_towrite, DNODE_MIN_SIZE + 2);
    assert_eq!(hold.memory_tohold, INDIRECT_BLOCK_BYTES);
    assert_eq!(
        tx.memory_estimate(),
        DNODE_MIN_SIZE + 2 + INDIRECT_BLOCK_BYTES
    );
    assert!(tx.is_netfree());
    tx.abort();
}
