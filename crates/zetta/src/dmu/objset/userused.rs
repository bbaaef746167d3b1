//! User, group and project space accounting of a ZPL object set, kept as OpenZFS keeps it
//! (`dmu_objset.c`: `dmu_objset_userquota_get_ids`, `do_userquota_update`,
//! `userquota_updates_task`, `dmu_objset_do_userquota_updates_prep`; `dnode_sync.c`'s
//! `DN_ID_*` bookkeeping; `zfs_quota.c`: `zpl_get_file_info`).
//!
//! Theory. Three objects live outside the meta-dnode, in the `objset_phys_t` itself:
//! `DMU_USERUSED_OBJECT` (-1), `DMU_GROUPUSED_OBJECT` (-2) and, with the project_quota
//! feature, `DMU_PROJECTUSED_OBJECT` (-3), at bytes 1024, 1536 and 2048 of the objset
//! block. Each is a ZAP of type `DMU_OT_USERGROUP_USED` (a 512-byte micro ZAP at first,
//! `zap_create_claim`) mapping an id, written `"%llx"` (lower-case hex, no `0x`), to the
//! bytes its objects hold, and — with userobj_accounting — `"obj-%llx"` to how many objects
//! it owns. An object is charged `DNODE_MIN_SIZE + DN_USED_BYTES` (512 plus every copy of
//! every block it holds) to its owner, its group and its project, as its bonus says
//! (`zpl_get_file_info`: a `DMU_OT_SA` bonus's UID, GID, FLAGS and PROJID at 24, 32, 48
//! and 128 bytes past its header, PROJID only when `ZFS_PROJID` is set; a `DMU_OT_ZNODE`
//! bonus's `zp_uid` and `zp_gid` at 128 and 136). Objects with any other bonus (the master
//! node, ZAPs, the SA registry) are not charged; an SA bonus still all zero charges id 0.
//!
//! When. Every dnode a txg syncs is accounted after its blocks are written (its final
//! `dn_used` is known): the dnode as the last synced txg left it (still in the
//! meta-dnode's block: `sync` writes the new dnodes there only afterwards) is taken off
//! its old ids if its `dn_flags` carried `DNODE_FLAG_USERUSED_ACCOUNTED` (resp.
//! `_USEROBJUSED_ACCOUNTED` for the object count), and the new one is added after those
//! flags are set on it. The deltas are summed per key and applied as `zap_increment` does
//! (a sum reaching 0 removes the entry); the accounting ZAPs are created (zero salt made
//! odd, as any micro ZAP) the first time a delta needs them; their dirty blocks are then
//! written like any object's and their dnodes go into the objset block. So the ZAPs
//! always say what the synced dnodes say: a crash loses the txg's blocks and its
//! accounting together.
//!
//! Which. OpenZFS accounts every ZPL object set (`dmu_objset_userused_enabled`: pool
//! version >= 15, which every pool Zetta writes has); the object set says
//! `OBJSET_FLAG_USERACCOUNTING_COMPLETE` once every dnode has been accounted: set when
//! Zetta creates it (it starts empty), kept as found on an OpenZFS object set (one from
//! before version 15 stays incomplete: OpenZFS recounts it on `zfs userspace`). Object
//! counts are kept where the object set says `OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE`
//! (a dataset with userobj_accounting active: OpenZFS's, or one Zetta made where the
//! feature is enabled, `ObjectSet::enable_userobj_accounting`), and project bytes where
//! the project dnode exists: Zetta does not enable project_quota on its own pools.
//!
//! Left out on purpose: a dnode whose SA attributes live only in its spill block
//! (`dn_bonuslen` 0: Zetta never writes one) is not charged; big-endian bonuses are read
//! in their own byte order only for the SA magic; a pool below version 15 is accounted
//! although OpenZFS would not (Zetta writes no such pool).

use super::{state_is_dirty, DmuError, IoCtx, ObjectSet, ObjectState, ObjsetType};
use crate::dmu::dnode::DnodePhys;
use crate::dmu::openzfs::dnode::{DNODE_FLAG_USEROBJUSED_ACCOUNTED, DNODE_FLAG_USERUSED_ACCOUNTED};
use crate::types::ObjectId;
use crate::zap::{self, ZapError};
use std::collections::BTreeMap;

/// `DMU_USERUSED_OBJECT`, `DMU_GROUPUSED_OBJECT`, `DMU_PROJECTUSED_OBJECT`: the object
/// numbers (and bookmark objects) of the accounting dnodes.
pub const DMU_USERUSED_OBJECT: u64 = u64::MAX;
pub const DMU_GROUPUSED_OBJECT: u64 = u64::MAX - 1;
pub const DMU_PROJECTUSED_OBJECT: u64 = u64::MAX - 2;
/// `DMU_OT_USERGROUP_USED` and `DMU_OT_USERGROUP_QUOTA`.
pub const DMU_OT_USERGROUP_USED: u8 = 39;
pub const DMU_OT_USERGROUP_QUOTA: u8 = 40;
/// `DMU_OBJACCT_PREFIX`: the key prefix of object counts.
pub const DMU_OBJACCT_PREFIX: &str = "obj-";
/// `OBJSET_FLAG_*` (`os_flags`).
pub const OBJSET_FLAG_USERACCOUNTING_COMPLETE: u64 = 1;
pub const OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE: u64 = 2;
pub const OBJSET_FLAG_PROJECTQUOTA_COMPLETE: u64 = 4;
/// `DNODE_MIN_SIZE`: what every accounted object costs beyond its blocks.
const DNODE_MIN_SIZE_BYTES: i64 = 512;
/// `ZFS_DEFAULT_PROJID`.
pub const ZFS_DEFAULT_PROJID: u64 = 0;
/// `DMU_OT_ZNODE`, `DMU_OT_SA`.
const DMU_OT_ZNODE: u8 = 17;
const DMU_OT_SA: u8 = 44;
/// `ZFS_PROJID` in the ZPL flags.
const ZFS_PROJID: u64 = 1 << 41;
/// SA offsets after the header (`SA_UID_OFFSET`, ...), fixed by the ZPL's layouts.
const SA_UID_OFFSET: usize = 24;
const SA_GID_OFFSET: usize = 32;
const SA_FLAGS_OFFSET: usize = 48;
const SA_PROJID_OFFSET: usize = 128;
const SA_MAGIC: u32 = 0x002f_505a;
/// `znode_phys_t`'s `zp_uid`, `zp_gid`.
const ZNODE_UID_OFFSET: usize = 128;
const ZNODE_GID_OFFSET: usize = 136;

/// Whether `object` is one of the accounting dnodes (`DMU_OBJECT_IS_SPECIAL`).
pub fn is_special(object: u64) -> bool {
    object >= DMU_PROJECTUSED_OBJECT
}

/// An object's owners (`zfs_file_info_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub user: u64,
    pub group: u64,
    pub project: u64,
}

fn word_at(bytes: &[u8], offset: usize, big_endian: bool) -> Option<u64> {
    let raw: [u8; 8] = bytes.get(offset..offset + 8)?.try_into().ok()?;
    Some(if big_endian {
        u64::from_be_bytes(raw)
    } else {
        u64::from_le_bytes(raw)
    })
}

/// `zpl_get_file_info`: the owners of an object with this bonus, or `None` when it is not
/// an object the accounting tracks (OpenZFS's `ENOENT`) or its bonus is too short to say
/// (hostile bytes: not charged rather than a panic).
pub fn file_info(bonus_type: u8, bonus: &[u8]) -> Option<FileInfo> {
    match bonus_type {
        DMU_OT_ZNODE => Some(FileInfo {
            user: word_at(bonus, ZNODE_UID_OFFSET, false)?,
            group: word_at(bonus, ZNODE_GID_OFFSET, false)?,
            project: ZFS_DEFAULT_PROJID,
        }),
        DMU_OT_SA => {
            let magic: [u8; 4] = bonus.get(0..4)?.try_into().ok()?;
            let magic_le = u32::from_le_bytes(magic);
            if magic_le == 0 {
                // A new file whose attributes are not filled in yet.
                return Some(FileInfo {
                    user: 0,
                    group: 0,
                    project: ZFS_DEFAULT_PROJID,
                });
            }
            let big_endian = if magic_le == SA_MAGIC {
                false
            } else if u32::from_be_bytes(magic) == SA_MAGIC {
                true
            } else {
                return None;
            };
            let info: [u8; 2] = bonus.get(4..6)?.try_into().ok()?;
            let layout_info = if big_endian {
                u16::from_be_bytes(info)
            } else {
                u16::from_le_bytes(info)
            };
            let header = usize::from((layout_info >> 10) & 0x3f) * 8;
            if header < 8 {
                return None;
            }
            let flags = word_at(bonus, header + SA_FLAGS_OFFSET, big_endian)?;
            let project = if flags & ZFS_PROJID != 0 {
                word_at(bonus, header + SA_PROJID_OFFSET, big_endian)?
            } else {
                ZFS_DEFAULT_PROJID
            };
            Some(FileInfo {
                user: word_at(bonus, header + SA_UID_OFFSET, big_endian)?,
                group: word_at(bonus, header + SA_GID_OFFSET, big_endian)?,
                project,
            })
        }
        _ => None,
    }
}

/// A dnode's charge as one sync saw it: its used bytes, its flags and its owners.
#[derive(Clone, Copy, Debug)]
pub(super) struct Charge {
    used_bytes: u64,
    flags: u8,
    info: FileInfo,
}

impl Charge {
    fn of(phys: &DnodePhys) -> Option<Charge> {
        if phys.is_free() || phys.bonus.is_empty() {
            return None;
        }
        Some(Charge {
            used_bytes: phys.used_bytes,
            flags: phys.flags,
            info: file_info(phys.bonus_type, &phys.bonus)?,
        })
    }
}

/// The summed deltas of one sync, keyed by (accounting object, ZAP key).
type Deltas = BTreeMap<(u64, String), i64>;

impl ObjectSet {
    /// `dmu_objset_userused_enabled`: a ZPL object set.
    pub fn userused_enabled(&self) -> bool {
        self.os_type == ObjsetType::Filesystem
    }

    /// `dmu_objset_userobjused_enabled` as far as the object set says it (module header).
    pub fn userobjused_enabled(&self) -> bool {
        self.userused_enabled() && self.flags & OBJSET_FLAG_USEROBJACCOUNTING_COMPLETE != 0
    }

    /// `dmu_objset_projectquota_enabled` as far as the object set says it.
    pub fn projectquota_enabled(&self) -> bool {
        self.userused_enabled() && self.accounting.contains_key(&DMU_PROJECTUSED_OBJECT)
    }

    /// `os_flags` (`OBJSET_FLAG_*`).
    pub fn objset_flags(&self) -> u64 {
        self.flags
    }

    /// Whether the accounting ZAP `object` (`DMU_USERUSED_OBJECT`, ...) exists.
    pub fn accounting_object_exists(&self, object: u64) -> bool {
        self.accounting.contains_key(&object)
    }

    /// Before a sync writes anything: every dirty object's charge as the last synced txg
    /// left it (its dnode still in the meta-dnode's blocks), `dn_oldused`/`dn_olduid`.
    pub(super) fn userquota_old_charges(
        &mut self,
        ctx: &IoCtx<'_>,
    ) -> Result<Vec<(u64, Option<Charge>)>, DmuError> {
        if !self.userused_enabled() {
            return Ok(Vec::new());
        }
        let mut ids: Vec<u64> = Vec::new();
        for (&id, state) in self.objects.iter_mut() {
            if !is_special(id) && state_is_dirty(state) {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        let mut old = Vec::with_capacity(ids.len());
        for id in ids {
            let phys = self.read_dnode(ctx, id)?;
            old.push((id, Charge::of(&phys)));
        }
        Ok(old)
    }

    /// After the objects' blocks are written (their `dn_used` final): marks each synced
    /// dnode accounted, applies the deltas to the accounting ZAPs and writes those
    /// (`dnode_sync`'s flags, `userquota_updates_task`, `do_userquota_cacheflush`).
    pub(super) fn userquota_updates(
        &mut self,
        ctx: &IoCtx<'_>,
        old: Vec<(u64, Option<Charge>)>,
        pass: u32,
    ) -> Result<(), DmuError> {
        if !self.userused_enabled() {
            return Ok(());
        }
        // `dmu_objset_do_userquota_updates_prep`: the user and group ZAPs exist from the
        // first sync of a ZPL object set on, empty or not.
        if !self.object_exists(ctx, ObjectId(DMU_USERUSED_OBJECT))? {
            self.zap_create_claim(ctx, DMU_USERUSED_OBJECT)?;
            self.zap_create_claim(ctx, DMU_GROUPUSED_OBJECT)?;
        }
        let objects = self.userobjused_enabled();
        let projects = self.projectquota_enabled();
        let mut new_flags = DNODE_FLAG_USERUSED_ACCOUNTED;
        if objects {
            new_flags |= DNODE_FLAG_USEROBJUSED_ACCOUNTED;
        }
        let mut deltas = Deltas::new();
        for (id, old_charge) in old {
            let new_charge = match self.objects.get_mut(&id) {
                Some(state) if !state.phys.is_free() => {
                    if state.phys.flags & new_flags != new_flags {
                        state.phys.flags |= new_flags;
                        state.dnode_dirty = true;
                    }
                    Charge::of(&state.phys)
                }
                _ => None,
            };
            if let Some(charge) = old_charge {
                add_charge(&mut deltas, &charge, objects, projects, -1);
            }
            if let Some(charge) = new_charge {
                add_charge(&mut deltas, &charge, objects, projects, 1);
            }
        }
        deltas.retain(|_, delta| *delta != 0);
        for ((object, key), delta) in deltas {
            self.zap_increment(ctx, object, &key, delta)?;
        }
        // The accounting ZAPs' own blocks, then their dnodes into the objset block.
        let policy = self.policy;
        let objset = self.id;
        {
            let mut states: Vec<(u64, &mut ObjectState)> = self
                .objects
                .iter_mut()
                .filter(|(id, s)| is_special(**id) && !s.phys.is_free())
                .map(|(id, s)| (*id, s))
                .collect();
            states.sort_by_key(|(id, _)| *id);
            super::sync_trees(
                ctx,
                objset,
                &policy,
                &mut states,
                &mut self.dead_blocks,
                &mut self.freed,
                &mut self.born,
                false,
                pass,
            )?;
        }
        for object in [
            DMU_USERUSED_OBJECT,
            DMU_GROUPUSED_OBJECT,
            DMU_PROJECTUSED_OBJECT,
        ] {
            if let Some(state) = self.objects.get_mut(&object) {
                state.dnode_dirty = false;
                if !state.phys.is_free() {
                    self.accounting.insert(object, state.phys.clone());
                }
            }
        }
        Ok(())
    }

    /// `zap_increment` on an accounting ZAP, creating it first (`zap_create_claim`).
    fn zap_increment(
        &mut self,
        ctx: &IoCtx<'_>,
        object: u64,
        key: &str,
        delta: i64,
    ) -> Result<(), DmuError> {
        let zap_err = |e: ZapError| match e {
            ZapError::Dmu(e) => e,
            other => DmuError::Corrupt(format!("accounting ZAP {object:#x}: {other}")),
        };
        if !self.object_exists(ctx, ObjectId(object))? {
            self.zap_create_claim(ctx, object)?;
        }
        let current = zap::zap_lookup(self, ctx, ObjectId(object), key)
            .map_err(zap_err)?
            .and_then(|words| words.first().copied())
            .unwrap_or(0);
        let value = (current as i64).wrapping_add(delta);
        if value == 0 {
            match zap::zap_remove(self, ctx, ObjectId(object), key) {
                Ok(()) | Err(ZapError::NotFound) => Ok(()),
                Err(e) => Err(zap_err(e)),
            }
        } else {
            zap::zap_update(self, ctx, ObjectId(object), key, &[value as u64]).map_err(zap_err)
        }
    }

    /// `zap_create_claim(os, object, DMU_OT_USERGROUP_USED, ...)`: an empty 512-byte
    /// micro ZAP (a random salt made odd, as every micro ZAP's) at a special object.
    fn zap_create_claim(&mut self, ctx: &IoCtx<'_>, object: u64) -> Result<(), DmuError> {
        debug_assert!(is_special(object));
        self.claim_object(object, DMU_OT_USERGROUP_USED, 512, 0, 0);
        let micro = zap::MicroBlock::new(crate::rand::random_u64() | 1, 512);
        self.write(ctx, ObjectId(object), 0, &micro.encode())?;
        Ok(())
    }

    /// One accounting ZAP's entries, id → (bytes, objects): what `zfs userspace` lists
    /// (`zfs_userspace_many`). Empty when the ZAP does not exist.
    pub fn userspace(
        &self,
        ctx: &IoCtx<'_>,
        object: u64,
    ) -> Result<BTreeMap<u64, (u64, u64)>, DmuError> {
        let mut out: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        if !self.object_exists(ctx, ObjectId(object))? {
            return Ok(out);
        }
        let entries = zap::zap_list_all(self, ctx, ObjectId(object)).map_err(|e| match e {
            ZapError::Dmu(e) => e,
            other => DmuError::Corrupt(format!("accounting ZAP {object:#x}: {other}")),
        })?;
        for entry in entries {
            let value = match &entry.value {
                zap::ZapValue::U64s(words) if words.len() == 1 => words[0],
                _ => continue,
            };
            let Ok(name) = std::str::from_utf8(&entry.name) else {
                continue;
            };
            let (is_objects, hex) = match name.strip_prefix(DMU_OBJACCT_PREFIX) {
                Some(rest) => (true, rest),
                None => (false, name),
            };
            let Ok(id) = u64::from_str_radix(hex, 16) else {
                continue;
            };
            let slot = out.entry(id).or_default();
            if is_objects {
                slot.1 = value;
            } else {
                slot.0 = value;
            }
        }
        Ok(out)
    }
}

impl ObjectSet {
    /// The accounting recounted from every dnode (what `dmu_objset_userspace_upgrade`
    /// would find), keyed as the ZAPs are: (accounting object, key) → value. Equal to the
    /// ZAPs' entries (`userspace_entries`) whenever the object set is synced: the
    /// invariant the tests check after every workload.
    pub fn userspace_recount(
        &mut self,
        ctx: &IoCtx<'_>,
    ) -> Result<BTreeMap<(u64, String), i64>, DmuError> {
        let objects = self.userobjused_enabled();
        let projects = self.projectquota_enabled();
        let mut deltas = Deltas::new();
        for id in self.object_ids(ctx)? {
            let phys = self.dnode(ctx, id)?;
            if let Some(charge) = Charge::of(&phys) {
                add_charge(&mut deltas, &charge, objects, projects, 1);
            }
        }
        deltas.retain(|_, v| *v != 0);
        Ok(deltas)
    }

    /// The accounting ZAPs' entries as stored, keyed as `userspace_recount` keys them.
    pub fn userspace_entries(
        &self,
        ctx: &IoCtx<'_>,
    ) -> Result<BTreeMap<(u64, String), i64>, DmuError> {
        let mut out = BTreeMap::new();
        for object in [
            DMU_USERUSED_OBJECT,
            DMU_GROUPUSED_OBJECT,
            DMU_PROJECTUSED_OBJECT,
        ] {
            if !self.object_exists(ctx, ObjectId(object))? {
                continue;
            }
            let entries = zap::zap_list_all(self, ctx, ObjectId(object)).map_err(|e| match e {
                ZapError::Dmu(e) => e,
                other => DmuError::Corrupt(format!("accounting ZAP {object:#x}: {other}")),
            })?;
            for entry in entries {
                if let zap::ZapValue::U64s(words) = &entry.value {
                    if let (Some(&value), Ok(name)) =
                        (words.first(), String::from_utf8(entry.name.clone()))
                    {
                        out.insert((object, name), value as i64);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// `do_userquota_update` + `do_userobjquota_update` for one charge, `sign` -1 or 1.
fn add_charge(deltas: &mut Deltas, charge: &Charge, objects: bool, projects: bool, sign: i64) {
    let mut ids = vec![
        (DMU_USERUSED_OBJECT, charge.info.user),
        (DMU_GROUPUSED_OBJECT, charge.info.group),
    ];
    if projects {
        ids.push((DMU_PROJECTUSED_OBJECT, charge.info.project));
    }
    if charge.flags & DNODE_FLAG_USERUSED_ACCOUNTED != 0 {
        let bytes = DNODE_MIN_SIZE_BYTES.saturating_add(charge.used_bytes as i64);
        for &(object, id) in &ids {
            *deltas.entry((object, format!("{id:x}"))).or_default() += sign * bytes;
        }
    }
    if objects && charge.flags & DNODE_FLAG_USEROBJUSED_ACCOUNTED != 0 {
        for &(object, id) in &ids {
            *deltas
                .entry((object, format!("{DMU_OBJACCT_PREFIX}{id:x}")))
                .or_default() += sign;
        }
    }
}
