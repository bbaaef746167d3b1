//! A snapshot's filesystem held open for reads under the pool's shared lock (what OpenZFS's
//! `.zfs/snapshot/<snap>` automount holds: `zfsctl_snapshot_mount` opens the snapshot's
//! object set once, `dmu_objset_hold`, and every later VFS call reads through it).
//!
//! Theory. A `ZplSnapshot` owns its own `ObjectSet`, opened from the snapshot's block
//! pointer; a snapshot never changes, so the object set is never dirtied and its caches only
//! ever gain clean states (bounded per object set as every reader-filled cache is: see
//! `dmu::objset`). Opening and every read take `&Spa` (the pool's shared lock): the DSL is
//! only read (the snapshot's name through the MOS ZAPs, its dataset record), and the object
//! set's caches lock themselves. What may change between two reads is the DSL around it:
//! `zfs destroy fs@snap` frees the snapshot's blocks (in a sync task, under the exclusive
//! lock), a new snapshot may then take its MOS object number or its name, `zfs rename`
//! moves the name. So a holder re-checks with `zpl_snapshot_current` before each use (the
//! name still resolves to this MOS object and guid: a few cached MOS reads, no object set
//! opened); a stale holder is dropped and the name resolved again, so a destroyed or
//! renamed snapshot's name answers ENOENT as soon as the change is committed. The caller
//! owns the cache of holders and bounds it (`fuse::ctldir`).

use super::{Zfsvfs, ZplError};
use crate::dmu::{default_data_props, IoCtx, ObjectSet};
use crate::dsl::phys::DslDatasetPhys;
use crate::spa::{dataset_policy, Spa, SpaError};

/// One snapshot's ZPL filesystem, opened for shared reads.
pub struct ZplSnapshot {
    /// The snapshot's DSL dataset (MOS object).
    pub object: u64,
    /// Its guid: a later snapshot on the same MOS object number has another.
    pub guid: u64,
    pub vfs: Zfsvfs,
    os: ObjectSet,
}

fn dsl_error(e: SpaError) -> ZplError {
    match e {
        SpaError::NoSuchDataset(_) | SpaError::Dsl(crate::dsl::DslError::NoSuchDataset { .. }) => {
            ZplError::NotFound
        }
        e => ZplError::Io(e.to_string()),
    }
}

impl Spa {
    /// The DSL dataset (MOS object) and record of snapshot `full` (`fs@snap`), through
    /// shared access. A name that is no snapshot is `NotFound`.
    fn zpl_snapshot_lookup(&self, full: &str) -> Result<(u64, DslDatasetPhys), ZplError> {
        if self.openzfs.is_some() {
            // A foreign pool's snapshots are served by its own mount type.
            return Err(ZplError::Io(
                "operation not supported on OpenZFS pools yet".to_string(),
            ));
        }
        let (fs, snap) = full.split_once('@').ok_or(ZplError::NotFound)?;
        let dataset = self
            .lookup_dataset(fs)
            .map_err(dsl_error)?
            .ok_or(ZplError::NotFound)?;
        let object = self
            .snapshot_object(dataset, snap)
            .map_err(dsl_error)?
            .ok_or(ZplError::NotFound)?;
        let phys = self.read_dataset_phys(object).map_err(dsl_error)?;
        Ok((object, phys))
    }

    /// Opens snapshot `full` (`fs@snap`) for reads through shared access: its dataset
    /// record, object set and ZPL layout. A name that is no snapshot is `NotFound`.
    pub fn zpl_snapshot_open(&self, full: &str) -> Result<ZplSnapshot, ZplError> {
        let (object, phys) = self.zpl_snapshot_lookup(full)?;
        let ctx = io_ctx!(self);
        let policy = dataset_policy(default_data_props());
        let mut os = ObjectSet::open(&ctx, object, &phys.bp, policy)?;
        let vfs = Zfsvfs::open(&mut os, &ctx)?;
        Ok(ZplSnapshot {
            object,
            guid: phys.guid,
            vfs,
            os,
        })
    }

    /// Whether `snap` is still what the name `full` names: the same snapshot (MOS object
    /// and guid), not destroyed, renamed away, or replaced by a later one of that name.
    pub fn zpl_snapshot_current(&self, full: &str, snap: &ZplSnapshot) -> bool {
        self.zpl_snapshot_lookup(full)
            .is_ok_and(|(object, phys)| object == snap.object && phys.guid == snap.guid)
    }

    /// Runs a read-only ZPL operation (lookup, getattr, read, readdir, readlink) on an
    /// open snapshot through shared access.
    pub fn with_zpl_snapshot_shared<T>(
        &self,
        snap: &ZplSnapshot,
        work: impl FnOnce(&Zfsvfs, &ObjectSet, &IoCtx<'_>) -> Result<T, ZplError>,
    ) -> Result<T, ZplError> {
        let ctx = io_ctx!(self);
        work(&snap.vfs, &snap.os, &ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{DeviceRef, MemDevice};
    use crate::spa::{CreateOptions, TopKind, TopSpec};
    use crate::zpl::{Creds, FileKind, Timespec};
    use std::sync::Arc;

    fn pool(device: &Arc<MemDevice>) -> Spa {
        let spec = TopSpec {
            kind: TopKind::Single,
            leaves: vec![("/mem/zplsnap".to_string(), device.clone() as DeviceRef)],
            is_log: false,
        };
        Spa::create("tank", &[spec], &CreateOptions::default()).unwrap()
    }

    /// Writes `file` with `data` in the root of `fs` (creating or overwriting it).
    fn put(spa: &mut Spa, fs: &str, file: &[u8], data: &[u8]) {
        let now = Timespec { sec: 1, nsec: 0 };
        spa.with_zpl(fs, |vfs, os, ctx| {
            let object = match vfs.lookup(os, ctx, vfs.root, file) {
                Ok(attr) => attr.object,
                Err(_) => {
                    let creds = Creds { uid: 0, gid: 0 };
                    vfs.create(
                        os,
                        ctx,
                        vfs.root,
                        file,
                        FileKind::Regular,
                        0o644,
                        creds,
                        0,
                        now,
                    )?
                    .object
                }
            };
            vfs.write(os, ctx, object, 0, data, now)?;
            Ok(())
        })
        .unwrap();
        spa.sync().unwrap();
    }

    fn read(spa: &Spa, snap: &ZplSnapshot, file: &[u8]) -> Vec<u8> {
        spa.with_zpl_snapshot_shared(snap, |vfs, os, ctx| {
            let attr = vfs.lookup(os, ctx, vfs.root, file)?;
            vfs.read(os, ctx, attr.object, 0, 1 << 20)
        })
        .unwrap()
    }

    // Why: `.zfs/snapshot` reads took the pool's exclusive lock (a snapshot's object set could
    // only be opened with `&mut Spa`), so they queued behind and blocked every reader. A
    // snapshot is now opened and read through `&Spa`, and a held snapshot must never read
    // through a stale object set once its name is destroyed, renamed or re-created.
    #[test]
    fn snapshots_open_and_read_through_shared_access_and_notice_dsl_changes() {
        let device = Arc::new(MemDevice::new("/mem/zplsnap", 128 << 20));
        let mut spa = pool(&device);
        spa.create_filesystem("tank/fs").unwrap();
        put(&mut spa, "tank/fs", b"f", b"first");
        spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
        put(&mut spa, "tank/fs", b"f", b"second");

        let shared: &Spa = &spa;
        let held = shared.zpl_snapshot_open("tank/fs@a").unwrap();
        assert_eq!(read(shared, &held, b"f"), b"first");
        assert!(shared.zpl_snapshot_current("tank/fs@a", &held));
        assert!(matches!(
            shared.zpl_snapshot_open("tank/fs@nope"),
            Err(ZplError::NotFound)
        ));
        assert!(matches!(
            shared.zpl_snapshot_open("tank/nofs@a"),
            Err(ZplError::NotFound)
        ));
        assert!(matches!(
            shared.zpl_snapshot_open("tank/fs"),
            Err(ZplError::NotFound)
        ));

        // Renamed: the old name no longer names it; the new one does.
        spa.rename_snapshot("tank/fs@a", "tank/fs@b").unwrap();
        assert!(!spa.zpl_snapshot_current("tank/fs@a", &held));
        assert!(spa.zpl_snapshot_current("tank/fs@b", &held));

        // Re-created under the old name: another snapshot, another content.
        spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
        assert!(!spa.zpl_snapshot_current("tank/fs@a", &held));
        let again = spa.zpl_snapshot_open("tank/fs@a").unwrap();
        assert_eq!(read(&spa, &again, b"f"), b"second");

        // Destroyed: its holder is stale under every name.
        spa.destroy_snapshot("tank/fs@b").unwrap();
        assert!(!spa.zpl_snapshot_current("tank/fs@b", &held));
        assert!(matches!(
            spa.zpl_snapshot_open("tank/fs@b"),
            Err(ZplError::NotFound)
        ));
        assert!(spa.zpl_snapshot_current("tank/fs@a", &again));
    }
}
