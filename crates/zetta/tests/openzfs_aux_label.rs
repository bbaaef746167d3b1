//! The aux label of an available hot spare against real OpenZFS bytes: ZTS's
//! `zfs-pool-v3hotspare3.dat` is a spare of the v3 pool `pool-v3hotspare` (its other
//! two devices hold the pool, one of them the spare in use). OpenZFS wrote its label as
//! `vdev_aux_label_generate` does: `version`, `state` 3, `guid` (paths came later).
//!
//! Why: Zetta's cache devices carried the pool's keys in their labels, and Zetta had no
//! spare label at all; discovery must tell an aux label from a pool member's.

mod common;

use common::oracle::fixture;
use zetta::io::{DeviceRef, FileDevice};
use zetta::nvpair_xdr::XdrValue;
use zetta::types::Guid;
use zetta::vdev::{Vdev, VdevKind};

const SPARE_GUID: u64 = 16823953747593073890;

fn open(path: &std::path::Path) -> DeviceRef {
    std::sync::Arc::new(FileDevice::open_read_only(path.to_str().unwrap()).unwrap())
}

#[test]
fn a_v3_spare_label_is_read_and_written_as_openzfs_does() {
    let fx = fixture("cli_root/zpool_upgrade/blockfiles/zfs-pool-v3hotspare3.dat.bz2");
    let device = open(&fx.file);
    assert_eq!(
        zetta::vdev::label::read_aux_guid(device.as_ref()),
        Some(Guid(SPARE_GUID))
    );
    // Zetta's encoder gives the same pairs, in the same order, for the same spare (the
    // path aside, which OpenZFS of 2006 did not write).
    let on_disk = zetta::vdev::openzfs::label::read_device(device.as_ref())
        .unwrap()
        .config;
    let mut spare = Vdev::new(VdevKind::Leaf, Guid(SPARE_GUID));
    spare.path = "/tmp/zfs-pool-v3hotspare3.dat".to_string();
    let mut ours = zetta::vdev::config::aux_label(3, &spare, true);
    ours.pairs.retain(|p| p.name != b"path");
    assert_eq!(ours, on_disk);
    assert_eq!(on_disk.get("state"), Some(&XdrValue::Uint64(3)));
    // Not a pool: discovery lists no pool for it, only the aux device.
    assert!(zetta::spa::find_pools(&[device]).is_empty());
}

#[test]
fn pool_members_are_not_aux_devices() {
    // The v3 pool's in-use spare carries the pool's keys (`is_spare` at the label's top):
    // it is a member of the pool, not an available spare.
    for name in [
        "zfs-pool-v3hotspare1.dat.bz2",
        "zfs-pool-v3hotspare2.dat.bz2",
    ] {
        let fx = fixture(&format!("cli_root/zpool_upgrade/blockfiles/{name}"));
        let device = open(&fx.file);
        assert_eq!(
            zetta::vdev::label::read_aux_guid(device.as_ref()),
            None,
            "{name}"
        );
    }
}
