//! Transactions and the write throttle (OpenZFS `dmu_tx.c`, the throttle's tunables of
//! `dsl_pool.c`).
//!
//! Theory. Every change of a dataset is a transaction (`Tx`, `dmu_tx_t`). Before it changes
//! anything it declares its holds (`dmu_tx_hold_write`, `_free`, `_zap`, `_bonus`,
//! `_space`; `TxHold`), each with OpenZFS's worst-case estimate of what it may dirty
//! (`txh_space_towrite`: the bytes written, a dnode (`DNODE_MIN_SIZE`) per object held, a
//! whole micro ZAP (`zap_get_micro_max_size`, 128 KiB) per ZAP change; `txh_memory_tohold`:
//! the level-1 indirect blocks a free reads). It is then assigned to the open txg
//! (`dmu_tx_assign`), runs, and is committed (`dmu_tx_commit`: its dirty data is charged
//! to the txg) or, when refused before it changed anything, aborted (`dmu_tx_abort`).
//!
//! The write throttle (OpenZFS's "ZFS I/O scheduler" comment in `dsl_pool.c` and
//! `dmu_tx_delay`): the open txg's dirty bytes are compared with `zfs_dirty_data_max`
//! (`ZFS_DIRTY_DATA_MAX`, a per-pool tunable: `Throttle::set_dirty_data_max`). At
//! `ZFS_DIRTY_DATA_SYNC_PERCENT` of it the sync thread is woken to commit
//! (`Spa::note_dirty`); past `ZFS_DELAY_MIN_DIRTY_PERCENT` every new transaction is
//! delayed by `zfs_delay_scale * (dirty - min) / (max - dirty)` nanoseconds, at most
//! `ZFS_DELAY_MAX_NS`, spaced from the previous delayed one (`dp_last_wakeup`), so
//! writers slow down smoothly to the rate the pool commits at; at the max a transaction
//! waits until a commit opens a new txg (`dp_spaceavail_cv`). No writer ever commits in
//! its own request when a sync thread commits the pool: waiting, not committing, is how a
//! writer pays for a full budget (issue 13). A pool with no sync thread (the library used
//! without the daemon, and the simulator's synchronous mode) has no one to wait for: its
//! writer is the syncing context and commits in place at the sync threshold, as before.
//!
//! Where the wait happens. OpenZFS's `dmu_tx_assign(tx, DMU_TX_WAIT)` waits with no lock
//! held. Here the pool lock (`RwLock<Spa>`) is the caller's: a front end (the FUSE write
//! handler, NBD and `/dev/zvol` requests, a receive between its input chunks) calls
//! `dmu_tx_wait` before it takes the pool lock, then the ZPL (or the volume code)
//! declares the holds and `Tx::assign`s under the lock, as OpenZFS's VFS operations do
//! after a `dmu_tx_wait` (`DMU_TX_NOTHROTTLE`: a transaction is delayed once).
//! `dmu_tx_assign` does both for a caller that holds the pool's handle. Between the wait
//! and the lock other writers may add their own transactions, so the budget can be
//! exceeded by what the writers waiting for the lock carry (one request each), the same
//! slack OpenZFS allows ("it is possible to exceed the allowed usage by one
//! transaction").
//!
//! Locking order. `dmu_tx_wait` takes no engine lock while it waits (only the throttle's
//! own mutex and the txg state's `opened` condvar); a caller must not hold the pool lock
//! when it calls it (the sync thread needs that lock to open the next txg: waiting with it
//! held would deadlock). Then: pool lock → the dataset's object set (inside the change).
//! A `Tx` is assigned and committed under one holding of the pool lock, so the open txg
//! cannot move between `Tx::assign` and `Tx::commit` (`commit` asserts it).
//!
//! Left out on purpose: per-dnode txg assignment (`dn_assigned_txg`, ERESTART on a dnode
//! still held by the previous txg: Zetta's writers of txg N+1 wait for the pool lock while
//! N is written), the intent log's own delay (`zfs_wrlog_data_max`: the log is written at
//! commit, not kept per txg), commit callbacks, and `dsl_dir_tempreserve_space` fed from
//! the holds' estimate: admission against the pool and quotas stays the caller's
//! (`zpl::zfs_vnops`, `Spa::volume_write`) with its own measured headroom.

use crate::spa::txg::TxShared;
use crate::spa::{Spa, SpaError};
use crate::types::Txg;
use parking_lot::{Mutex, RwLock, RwLockWriteGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// OpenZFS `zfs_dirty_data_max`, Zetta's default: 256 MiB of dirty data per pool (OpenZFS
/// takes 10% of memory up to 4 GiB; a daemon here holds many pools).
pub const ZFS_DIRTY_DATA_MAX: u64 = 256 << 20;
/// OpenZFS `zfs_dirty_data_sync_percent` (20 there): the sync thread is woken when the
/// open txg holds this share of the max. Zetta commits at half: each txg rewrites the MOS
/// config and space maps, so fewer, larger txgs (128 MiB, the old `DIRTY_BYTES_MAX`).
pub const ZFS_DIRTY_DATA_SYNC_PERCENT: u64 = 50;
/// OpenZFS `zfs_delay_min_dirty_percent`: transactions are delayed past this share.
pub const ZFS_DELAY_MIN_DIRTY_PERCENT: u64 = 60;
/// OpenZFS `zfs_delay_scale`: the delay in nanoseconds at the curve's midpoint (between
/// the min and the max), 1e9 / 2000 (2000 IOPS).
pub const ZFS_DELAY_SCALE: u64 = 1_000_000_000 / 2000;
/// OpenZFS `zfs_delay_max_ns`: no single delay is longer (100 ms).
pub const ZFS_DELAY_MAX_NS: u64 = 100_000_000;
/// OpenZFS `DNODE_MIN_SIZE`: what every object held is charged for its dnode.
pub const DNODE_MIN_SIZE: u64 = 512;
/// OpenZFS `zap_get_micro_max_size` without large_microzap (`SPA_OLD_MAXBLOCKSIZE`): the
/// worst case of a ZAP change (an almost full micro ZAP rewritten).
pub const ZAP_MICRO_MAX_SIZE: u64 = 128 << 10;
/// The indirect block size a free is charged per level-1 block (`dn_indblkshift` 17).
pub const INDIRECT_BLOCK_BYTES: u64 = 128 << 10;
/// Block pointers per indirect block (`SPA_BLKPTRSHIFT` 7).
const BLKPTRS_PER_INDIRECT: u64 = INDIRECT_BLOCK_BYTES / 128;

/// The delay `dmu_tx_delay` gives a transaction that finds `dirty_bytes` dirty in a pool
/// whose max is `dirty_data_max`: none up to `ZFS_DELAY_MIN_DIRTY_PERCENT`, then
/// `ZFS_DELAY_SCALE * (dirty - min) / (max - dirty)` ns capped at `ZFS_DELAY_MAX_NS`
/// (at or past the max, where OpenZFS's caller has waited instead, the cap).
pub fn dmu_tx_delay_ns(dirty_bytes: u64, dirty_data_max: u64) -> u64 {
    let delay_min_bytes = dirty_data_min_delay_bytes(dirty_data_max);
    if dirty_bytes <= delay_min_bytes {
        return 0;
    }
    if dirty_bytes >= dirty_data_max {
        return ZFS_DELAY_MAX_NS;
    }
    let numerator = u128::from(ZFS_DELAY_SCALE) * u128::from(dirty_bytes - delay_min_bytes);
    let delay = numerator / u128::from(dirty_data_max - dirty_bytes);
    u64::try_from(delay.min(u128::from(ZFS_DELAY_MAX_NS))).unwrap_or(ZFS_DELAY_MAX_NS)
}

/// Dirty bytes past which transactions are delayed (`dsl_pool_need_dirty_delay`).
pub fn dirty_data_min_delay_bytes(dirty_data_max: u64) -> u64 {
    // Integer math as OpenZFS's, without its overflow for maxes past 2^57.
    (u128::from(dirty_data_max) * u128::from(ZFS_DELAY_MIN_DIRTY_PERCENT) / 100) as u64
}

/// Dirty bytes at which the sync thread is woken (`dsl_pool_need_dirty_sync`).
pub fn dirty_data_sync_bytes(dirty_data_max: u64) -> u64 {
    (u128::from(dirty_data_max) * u128::from(ZFS_DIRTY_DATA_SYNC_PERCENT) / 100) as u64
}

/// Counters of the throttle (OpenZFS's `dmu_tx_stats` kstat, by its names), since the
/// pool was opened; relaxed atomics.
#[derive(Debug, Default)]
pub struct TxStats {
    /// Transactions assigned (`dmu_tx_assigned`).
    pub assigned: AtomicU64,
    /// Transactions that found the budget past the delay threshold (`dmu_tx_dirty_delay`).
    pub dirty_delay: AtomicU64,
    /// ... and of those, how many actually slept (`dmu_tx_delay`).
    pub delayed: AtomicU64,
    /// Transactions that found the budget spent and waited for a commit
    /// (`dmu_tx_dirty_over_max`).
    pub dirty_over_max: AtomicU64,
    /// Nanoseconds spent in `dmu_tx_wait` (`spa_tx_assign_add_nsecs`).
    pub wait_ns: AtomicU64,
    /// Commits run in a writer's own request (only a pool without a sync thread has any).
    pub commits_in_writer: AtomicU64,
}

/// A pool's throttle state, shared without the pool lock (kept in `spa::txg::TxShared`).
#[derive(Debug, Default)]
pub struct Throttle {
    /// `zfs_dirty_data_max` of this pool; 0 is the process's tunable (`tunables`) in the
    /// daemon, `ZFS_DIRTY_DATA_MAX` elsewhere.
    dirty_data_max: AtomicU64,
    /// The wake-up time handed to the last delayed transaction (`dp_last_wakeup`).
    last_wakeup: Mutex<Option<Instant>>,
    pub stats: TxStats,
}

impl Throttle {
    /// This pool's `zfs_dirty_data_max`.
    pub fn dirty_data_max(&self) -> u64 {
        match self.dirty_data_max.load(Ordering::Relaxed) {
            0 => crate::tunables::dirty_data_max().unwrap_or(ZFS_DIRTY_DATA_MAX),
            set => set,
        }
    }

    /// Sets this pool's `zfs_dirty_data_max` (a tunable; tests use small ones).
    pub fn set_dirty_data_max(&self, bytes: u64) {
        assert!(
            bytes >= 1 << 20,
            "a dirty budget under 1 MiB cannot hold a record"
        );
        self.dirty_data_max.store(bytes, Ordering::Relaxed);
    }

    /// Sleeps until this transaction's turn (`dmu_tx_delay`): the delay the curve gives
    /// `dirty_bytes`, counted from the transaction's start and spaced after the previous
    /// delayed transaction's wake-up. Returns the time slept.
    fn delay(&self, started: Instant, dirty_bytes: u64) -> Duration {
        let tx_time = Duration::from_nanos(dmu_tx_delay_ns(dirty_bytes, self.dirty_data_max()));
        if tx_time.is_zero() {
            return Duration::ZERO;
        }
        let now = Instant::now();
        if now > started + tx_time {
            return Duration::ZERO;
        }
        let wakeup = {
            let mut last = self.last_wakeup.lock();
            let wakeup = match *last {
                Some(previous) => (started + tx_time).max(previous + tx_time),
                None => started + tx_time,
            };
            *last = Some(wakeup);
            wakeup
        };
        self.stats.delayed.fetch_add(1, Ordering::Relaxed);
        let slept = wakeup.saturating_duration_since(now);
        std::thread::sleep(slept);
        slept
    }
}

/// What a hold is on (OpenZFS `enum dmu_tx_hold_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxHoldType {
    NewObject,
    Write,
    Bonus,
    Free,
    Zap,
    Space,
}

/// One declared hold (`dmu_tx_hold_t`). `object` is `None` for an object the transaction
/// creates or does not know yet (`DMU_NEW_OBJECT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxHold {
    pub kind: TxHoldType,
    pub object: Option<u64>,
    pub offset: u64,
    pub len: u64,
    /// Worst-case bytes this hold may dirty (`txh_space_towrite`).
    pub space_towrite: u64,
    /// Memory it holds beyond that, indirect blocks read by a free (`txh_memory_tohold`).
    pub memory_tohold: u64,
}

/// A transaction (`dmu_tx_t`): holds declared, then assigned to a txg, then committed or
/// aborted. Dropping an assigned `Tx` without committing it is an engine bug (asserted in
/// debug builds): the change it guarded would be charged to no txg.
#[derive(Debug)]
pub struct Tx {
    /// The head dataset (MOS object) changed; 0 for the MOS itself.
    pub dataset: u64,
    holds: Vec<TxHold>,
    netfree: bool,
    txg: Option<Txg>,
    /// Created (`tx_start`): delays are counted from here.
    started: Instant,
    /// Already delayed once by the throttle (`tx_dirty_delayed`, `DMU_TX_NOTHROTTLE`).
    dirty_delayed: bool,
    finished: bool,
}

impl Tx {
    /// `dmu_tx_create` for the object set of `dataset`.
    pub fn create(dataset: u64) -> Tx {
        Tx {
            dataset,
            holds: Vec::new(),
            netfree: false,
            txg: None,
            started: Instant::now(),
            dirty_delayed: false,
            finished: false,
        }
    }

    fn hold(&mut self, kind: TxHoldType, object: Option<u64>, offset: u64, len: u64) -> usize {
        assert!(self.txg.is_none(), "a hold declared after dmu_tx_assign");
        self.holds.push(TxHold {
            kind,
            object,
            offset,
            len,
            space_towrite: 0,
            memory_tohold: 0,
        });
        self.holds.len() - 1
    }

    /// `dmu_tx_hold_write`: `len` bytes at `offset` of `object`, and its dnode.
    pub fn hold_write(&mut self, object: Option<u64>, offset: u64, len: u64) {
        let index = self.hold(TxHoldType::Write, object, offset, len);
        self.holds[index].space_towrite = len + DNODE_MIN_SIZE;
    }

    /// `dmu_tx_hold_free` of [offset, offset + len) of `object` whose data blocks are
    /// `block_bytes`: its dnode, a partial first and last block rewritten (counted as
    /// OpenZFS's one-byte writes), and every level-1 block of the range read.
    pub fn hold_free(&mut self, object: Option<u64>, offset: u64, len: u64, block_bytes: u64) {
        let index = self.hold(TxHoldType::Free, object, offset, len);
        let block_bytes = block_bytes.max(512);
        let end = offset.saturating_add(len);
        let mut towrite = DNODE_MIN_SIZE;
        if !offset.is_multiple_of(block_bytes) {
            towrite += 1;
        }
        if !end.is_multiple_of(block_bytes) {
            towrite += 1;
        }
        let span = block_bytes.saturating_mul(BLKPTRS_PER_INDIRECT);
        let level1_blocks = if len > block_bytes {
            end / span - offset / span + 1
        } else {
            0
        };
        let hold = &mut self.holds[index];
        hold.space_towrite = towrite;
        hold.memory_tohold = level1_blocks.saturating_mul(INDIRECT_BLOCK_BYTES);
    }

    /// `dmu_tx_hold_zap`: a name added to or removed from ZAP `object`.
    pub fn hold_zap(&mut self, object: Option<u64>) {
        let index = self.hold(TxHoldType::Zap, object, 0, 0);
        self.holds[index].space_towrite = DNODE_MIN_SIZE + ZAP_MICRO_MAX_SIZE;
    }

    /// `dmu_tx_hold_bonus`: the bonus buffer (a znode's attributes) of `object`.
    pub fn hold_bonus(&mut self, object: Option<u64>) {
        let index = self.hold(TxHoldType::Bonus, object, 0, 0);
        self.holds[index].space_towrite = DNODE_MIN_SIZE;
    }

    /// `dmu_tx_hold_object_impl(DMU_NEW_OBJECT)`: a new object's dnode.
    pub fn hold_new_object(&mut self) {
        let index = self.hold(TxHoldType::NewObject, None, 0, 0);
        self.holds[index].space_towrite = DNODE_MIN_SIZE;
    }

    /// `dmu_tx_hold_space`: `bytes` with no object.
    pub fn hold_space(&mut self, bytes: u64) {
        let index = self.hold(TxHoldType::Space, None, 0, 0);
        self.holds[index].space_towrite = bytes;
    }

    /// `dmu_tx_mark_netfree`: the transaction frees more than it takes.
    pub fn mark_netfree(&mut self) {
        self.netfree = true;
    }

    pub fn is_netfree(&self) -> bool {
        self.netfree
    }

    pub fn holds(&self) -> &[TxHold] {
        &self.holds
    }

    /// The holds' worst-case dirty bytes (`towrite` of `dmu_tx_try_assign`).
    pub fn space_towrite(&self) -> u64 {
        self.holds.iter().map(|h| h.space_towrite).sum()
    }

    /// The memory footprint estimate (`towrite + tohold`).
    pub fn memory_estimate(&self) -> u64 {
        self.space_towrite() + self.holds.iter().map(|h| h.memory_tohold).sum::<u64>()
    }

    /// The txg it is assigned to (`dmu_tx_get_txg`).
    pub fn txg(&self) -> Option<Txg> {
        self.txg
    }

    /// Marks the transaction as already throttled (a front end ran `dmu_tx_wait` for it
    /// before it took the pool lock).
    pub fn set_dirty_delayed(&mut self) {
        self.dirty_delayed = true;
    }

    /// `dmu_tx_assign` in the caller's holding of the pool lock (`DMU_TX_NOTHROTTLE`: the
    /// front end waited before locking): the open txg. Refused on a read-only pool.
    pub fn assign(&mut self, spa: &mut Spa) -> Result<Txg, SpaError> {
        assert!(self.txg.is_none(), "dmu_tx_assign twice");
        if spa.readonly {
            return Err(SpaError::ReadOnly);
        }
        let txg = spa.open_txg();
        assert!(txg > spa.last_synced_txg(), "assigned to a synced txg");
        self.txg = Some(txg);
        self.dirty_delayed = true;
        spa.tx_throttle()
            .stats
            .assigned
            .fetch_add(1, Ordering::Relaxed);
        Ok(txg)
    }

    /// `dmu_tx_commit`: the change is done; the txg is charged `dirtied` bytes (the sync
    /// thread is woken at the sync threshold; only a pool without one commits here).
    pub fn commit(mut self, spa: &mut Spa, dirtied: u64) -> Result<(), SpaError> {
        let txg = self
            .txg
            .expect("dmu_tx_commit of an unassigned transaction");
        assert_eq!(
            spa.open_txg(),
            txg,
            "the open txg moved under an assigned transaction"
        );
        self.finished = true;
        spa.note_dirty(dirtied)
    }

    /// `dmu_tx_abort`: the transaction changed nothing (refused, or nothing to do).
    pub fn abort(mut self) {
        self.finished = true;
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        debug_assert!(
            self.finished || self.txg.is_none() || std::thread::panicking(),
            "an assigned transaction dropped without dmu_tx_commit or dmu_tx_abort"
        );
    }
}

/// `dmu_tx_wait` with no lock held: when the pool's open txg holds its whole dirty budget,
/// wakes the sync thread and waits until a commit opens a new txg; then delays the
/// transaction by `dmu_tx_delay`'s curve. A pool without a sync thread returns at once
/// (its writers commit at the threshold). Marks `tx` as delayed; returns the time waited.
pub fn dmu_tx_wait(pool: &RwLock<Spa>, tx: &mut Tx) -> Duration {
    let shared = pool.read().tx_shared();
    dmu_tx_wait_shared(&shared, tx)
}

/// `dmu_tx_wait` through the pool's shared txg state (`Spa::tx_shared`), which a front end
/// may keep so that the throttle costs it no pool lock at all (two atomic loads when the
/// budget is not near its delay threshold).
pub fn dmu_tx_wait_shared(shared: &TxShared, tx: &mut Tx) -> Duration {
    let started = Instant::now();
    let throttle = shared.throttle();
    tx.dirty_delayed = true;
    if !shared.is_attached() {
        return Duration::ZERO;
    }
    let max = throttle.dirty_data_max();
    if shared.dirty_bytes() <= dirty_data_min_delay_bytes(max) {
        return Duration::ZERO;
    }
    throttle.stats.dirty_delay.fetch_add(1, Ordering::Relaxed);
    if shared.dirty_bytes() >= max {
        throttle
            .stats
            .dirty_over_max
            .fetch_add(1, Ordering::Relaxed);
        shared.wait_while_dirty_at_least(max);
    }
    throttle.delay(tx.started, shared.dirty_bytes());
    let waited = started.elapsed();
    throttle
        .stats
        .wait_ns
        .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
    waited
}

/// `dmu_tx_assign(tx, DMU_TX_WAIT)` for a caller holding the pool's handle and no lock:
/// the throttle (`dmu_tx_wait`), then the pool lock and the assignment. The guard returned
/// is the transaction's holding of the pool: commit or abort the `Tx` before dropping it.
pub fn dmu_tx_assign<'a>(
    pool: &'a RwLock<Spa>,
    tx: &mut Tx,
) -> Result<RwLockWriteGuard<'a, Spa>, SpaError> {
    if !tx.dirty_delayed {
        dmu_tx_wait(pool, tx);
    }
    let mut spa = pool.write();
    tx.assign(&mut spa)?;
    Ok(spa)
}

/// The throttle for a front end that runs a whole operation of the ZPL (which declares and
/// assigns its own transactions under the lock): `dmu_tx_wait` for a transaction about to
/// be made, before the caller takes the pool lock.
pub fn dmu_tx_throttle(pool: &RwLock<Spa>) -> Duration {
    let shared = pool.read().tx_shared();
    dmu_tx_throttle_shared(&shared)
}

/// `dmu_tx_throttle` through the pool's shared txg state (`Spa::tx_shared`).
pub fn dmu_tx_throttle_shared(shared: &TxShared) -> Duration {
    let mut tx = Tx::create(0);
    let waited = dmu_tx_wait_shared(shared, &mut tx);
    tx.abort();
    waited
}

#[cfg(test)]
#[path = "tests_tx.rs"]
mod tests_tx;
