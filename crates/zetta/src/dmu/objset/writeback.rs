//! Early write-out of dirty file data (the object-set half of `spa::writeback`).
//!
//! A txg's file data used to be written only by `sync`, with the pool's lock held, so
//! every writer waited for the whole commit. Writeback copies dirty level-0 file records out
//! (`writeback_claim`), lets the pool write the copies to newly allocated blocks without
//! the lock, and then hands the block pointers back (`writeback_install`). A record whose
//! dbuf still holds the very bytes that were written, with the same write properties,
//! takes its new block exactly as `sync` would have given it one (the old block released,
//! the pointer put in the parent, the space counted) and leaves memory; its parent
//! indirect block and dnode stay dirty for `sync`. Any other record (changed meanwhile,
//! truncated, its object freed or its properties changed) is left dirty, and its early
//! block is returned to be freed: nothing references it.
//!
//! Crash safety is unchanged: the early blocks are new space of the open txg, reachable
//! only from the in-memory tree until `sync` writes the indirect blocks, the dnodes and
//! the uberblock after a flush. The install must happen in the txg the blocks were
//! allocated in (their birth txg); `spa::writeback` guarantees it by installing before
//! every sync.
//!
//! Metadata (ZAPs, dnodes, directories) and blocks received in stored form (`-c`) are
//! never written early: they are small, or already carry their final bytes. Nor are
//! records written in scattered pieces since they became dirty (random writes, a torrent
//! filling a file): written now, they would be read back and written again when the next
//! piece arrives, where the commit may find them whole (the recordsize post's point).

use super::{
    adopt_block, file_data_props, is_all_zero, is_metadata_type, BlockPlace, DmuError, IoCtx,
    ObjectSet,
};
use crate::zio::blkptr::BlockPointer;
use crate::zio::WriteProps;

/// One dirty record copied out for early write-out.
pub struct WritebackRecord {
    pub object: u64,
    pub blkid: u64,
    pub data: Vec<u8>,
    pub props: WriteProps,
}

impl ObjectSet {
    /// Copies dirty file records into `out`, in object and block order, until about
    /// `max_bytes` are taken; returns the bytes taken. All-zero records are left to `sync`
    /// (they become holes).
    pub fn writeback_claim(&self, max_bytes: u64, out: &mut Vec<WritebackRecord>) -> u64 {
        let mut ids: Vec<u64> = self.objects.ids();
        ids.sort_unstable();
        let mut taken = 0u64;
        for id in ids {
            let shard = self.objects.lock(id);
            let Some(state) = shard.get(&id) else {
                continue;
            };
            if state.phys.is_free() || is_metadata_type(state.phys.object_type) {
                continue;
            }
            // A single block still below the record size grows as its file does: it would
            // change before the install. So would the last dirty record of a file being
            // appended to. Both wait for the sync (which also keeps the allocation order
            // of a stream of small files what the txg commit gives it).
            if state.phys.data_block_size_bytes < self.block_size_max_bytes {
                continue;
            }
            let frontier = state
                .dbufs
                .range((0, 0)..=(0, u64::MAX))
                .rev()
                .find(|(_, d)| d.dirty)
                .map(|(&(_, blkid), _)| blkid);
            for (&(_, blkid), dbuf) in state.dbufs.range((0, 0)..=(0, u64::MAX)) {
                if !dbuf.dirty
                    || dbuf.stored.is_some()
                    || dbuf.data.is_empty()
                    || dbuf.filled_bytes < dbuf.data.len()
                {
                    continue;
                }
                if Some(blkid) == frontier {
                    continue;
                }
                if is_all_zero(&dbuf.data) {
                    continue;
                }
                out.push(WritebackRecord {
                    object: id,
                    blkid,
                    data: dbuf.data.clone(),
                    props: file_data_props(&self.policy, state.phys.object_type),
                });
                taken += dbuf.data.len() as u64;
                if taken >= max_bytes {
                    return taken;
                }
            }
        }
        taken
    }

    /// Gives each record written early its block, if the record is still what was written
    /// (see the module comment); the blocks of the others go to `unused`. Returns the
    /// bytes of dirty data this released.
    pub fn writeback_install(
        &mut self,
        ctx: &IoCtx<'_>,
        written: Vec<(WritebackRecord, BlockPointer)>,
        unused: &mut Vec<BlockPointer>,
    ) -> Result<u64, DmuError> {
        let objset = self.id;
        let policy = self.policy;
        let mut released = 0u64;
        for (record, new_bp) in written {
            let Some(state) = self.objects.get_mut(&record.object) else {
                unused.push(new_bp);
                continue;
            };
            let current_props = file_data_props(&policy, state.phys.object_type);
            let same = !state.phys.is_free()
                && current_props == record.props
                && state
                    .dbufs
                    .get(&(0, record.blkid))
                    .is_some_and(|d| d.dirty && d.stored.is_none() && d.data == record.data);
            if !same {
                unused.push(new_bp);
                continue;
            }
            let Some(dbuf) = state.dbufs.remove(&(0, record.blkid)) else {
                unused.push(new_bp);
                continue;
            };
            let place = BlockPlace {
                objset,
                object: record.object,
                level: 0,
                blkid: record.blkid,
            };
            adopt_block(
                ctx,
                &policy,
                state,
                place,
                &dbuf.bp,
                new_bp,
                &mut self.dead_blocks,
                &mut self.freed,
                &mut self.born,
            )?;
            released += dbuf.data.len() as u64;
        }
        self.dirty_data_bytes = self.dirty_data_bytes.saturating_sub(released);
        Ok(released)
    }
}
