//! User, group and project quotas and the space they are checked against (OpenZFS
//! `zfs_quota.c`: `zfs_userspace_one`, `zfs_userspace_many`, `zfs_set_userquota`,
//! `zfs_id_overblockquota`, `zfs_id_overobjquota`, `zfs_id_overquota`).
//!
//! Theory. The DMU keeps what each id uses (`dmu::objset::userused`: the accounting ZAPs
//! `DMU_USERUSED_OBJECT`, `DMU_GROUPUSED_OBJECT`, `DMU_PROJECTUSED_OBJECT`, updated at
//! every sync). The limits are the ZPL's: one ZAP of type `DMU_OT_USERGROUP_QUOTA` per
//! kind, named in the master node by the property prefix (`userquota@` → the user
//! quota ZAP, `groupquota@`, `userobjquota@`, `groupobjquota@`, `projectquota@`,
//! `projectobjquota@`), made on the first `zfs set` of its kind, keyed like the used
//! ZAPs (`"%llx"` of the id) with the limit as one u64; `none` (0) removes the entry.
//!
//! ```text
//! master node (object 1) ─ "userquota@"  → ZAP (DMU_OT_USERGROUP_QUOTA) "3e8" → 1048576
//!                          "groupquota@" → ZAP ...
//! objset_phys_t ─ os_userused_dnode  ZAP (DMU_OT_USERGROUP_USED) "3e8" → 1069568
//!                 os_groupused_dnode ZAP ...                     ["obj-3e8" → 12]
//! ```
//!
//! Enforcement is OpenZFS's and as approximate: a write (`zfs_write`) or a create
//! (`zfs_acl_ids_overquota`) is refused with EDQUOT once the owner's (or the group's, or
//! the project's) used value *as of the last synced txg* is at or over its quota; what
//! the open txg adds is not counted, so an id may overshoot by up to a txg's writes.
//! Intent-log replay is never refused (`z_replay`). Only numeric ids are kept: OpenZFS's
//! FUID domains (SMB SIDs, `user@domain`) are refused by the CLI.

use super::openzfs::znode::MASTER_NODE_OBJ;
use crate::dmu::objset::{
    DMU_GROUPUSED_OBJECT, DMU_OBJACCT_PREFIX, DMU_OT_USERGROUP_QUOTA, DMU_PROJECTUSED_OBJECT,
    DMU_USERUSED_OBJECT,
};
use crate::dmu::{IoCtx, ObjectSet};
use crate::types::ObjectId;
use crate::zap::{self, ZapError};

/// `zfs_userquota_prop_t`, in OpenZFS's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserquotaProp {
    UserUsed,
    UserQuota,
    GroupUsed,
    GroupQuota,
    UserObjUsed,
    UserObjQuota,
    GroupObjUsed,
    GroupObjQuota,
    ProjectUsed,
    ProjectQuota,
    ProjectObjUsed,
    ProjectObjQuota,
}

impl UserquotaProp {
    pub const ALL: [UserquotaProp; 12] = [
        UserquotaProp::UserUsed,
        UserquotaProp::UserQuota,
        UserquotaProp::GroupUsed,
        UserquotaProp::GroupQuota,
        UserquotaProp::UserObjUsed,
        UserquotaProp::UserObjQuota,
        UserquotaProp::GroupObjUsed,
        UserquotaProp::GroupObjQuota,
        UserquotaProp::ProjectUsed,
        UserquotaProp::ProjectQuota,
        UserquotaProp::ProjectObjUsed,
        UserquotaProp::ProjectObjQuota,
    ];

    /// `zfs_userquota_prop_prefixes`: the property prefix, which is also the master
    /// node's name for a quota ZAP.
    pub fn prefix(self) -> &'static str {
        match self {
            UserquotaProp::UserUsed => "userused@",
            UserquotaProp::UserQuota => "userquota@",
            UserquotaProp::GroupUsed => "groupused@",
            UserquotaProp::GroupQuota => "groupquota@",
            UserquotaProp::UserObjUsed => "userobjused@",
            UserquotaProp::UserObjQuota => "userobjquota@",
            UserquotaProp::GroupObjUsed => "groupobjused@",
            UserquotaProp::GroupObjQuota => "groupobjquota@",
            UserquotaProp::ProjectUsed => "projectused@",
            UserquotaProp::ProjectQuota => "projectquota@",
            UserquotaProp::ProjectObjUsed => "projectobjused@",
            UserquotaProp::ProjectObjQuota => "projectobjquota@",
        }
    }

    /// The property of a `prefix@who` name, and `who`.
    pub fn parse(name: &str) -> Option<(UserquotaProp, &str)> {
        // "userobjused@" must not be read as "userused@" + ...: prefixes end with '@'.
        UserquotaProp::ALL
            .into_iter()
            .find_map(|p| name.strip_prefix(p.prefix()).map(|who| (p, who)))
    }

    pub fn is_quota(self) -> bool {
        matches!(
            self,
            UserquotaProp::UserQuota
                | UserquotaProp::GroupQuota
                | UserquotaProp::UserObjQuota
                | UserquotaProp::GroupObjQuota
                | UserquotaProp::ProjectQuota
                | UserquotaProp::ProjectObjQuota
        )
    }

    pub fn is_object_count(self) -> bool {
        matches!(
            self,
            UserquotaProp::UserObjUsed
                | UserquotaProp::UserObjQuota
                | UserquotaProp::GroupObjUsed
                | UserquotaProp::GroupObjQuota
                | UserquotaProp::ProjectObjUsed
                | UserquotaProp::ProjectObjQuota
        )
    }

    pub fn is_project(self) -> bool {
        matches!(
            self,
            UserquotaProp::ProjectUsed
                | UserquotaProp::ProjectQuota
                | UserquotaProp::ProjectObjUsed
                | UserquotaProp::ProjectObjQuota
        )
    }

    pub fn is_group(self) -> bool {
        matches!(
            self,
            UserquotaProp::GroupUsed
                | UserquotaProp::GroupQuota
                | UserquotaProp::GroupObjUsed
                | UserquotaProp::GroupObjQuota
        )
    }

    /// `zfs_userquota_prop_to_obj`'s used half: the DMU's accounting object.
    pub fn used_object(self) -> u64 {
        if self.is_project() {
            DMU_PROJECTUSED_OBJECT
        } else if self.is_group() {
            DMU_GROUPUSED_OBJECT
        } else {
            DMU_USERUSED_OBJECT
        }
    }

    /// The quota property paired with this one (itself for a quota).
    pub fn quota(self) -> UserquotaProp {
        match self {
            UserquotaProp::UserUsed => UserquotaProp::UserQuota,
            UserquotaProp::GroupUsed => UserquotaProp::GroupQuota,
            UserquotaProp::UserObjUsed => UserquotaProp::UserObjQuota,
            UserquotaProp::GroupObjUsed => UserquotaProp::GroupObjQuota,
            UserquotaProp::ProjectUsed => UserquotaProp::ProjectQuota,
            UserquotaProp::ProjectObjUsed => UserquotaProp::ProjectObjQuota,
            quota => quota,
        }
    }

    /// The used property paired with this one (itself for a used one).
    pub fn used(self) -> UserquotaProp {
        match self {
            UserquotaProp::UserQuota => UserquotaProp::UserUsed,
            UserquotaProp::GroupQuota => UserquotaProp::GroupUsed,
            UserquotaProp::UserObjQuota => UserquotaProp::UserObjUsed,
            UserquotaProp::GroupObjQuota => UserquotaProp::GroupObjUsed,
            UserquotaProp::ProjectQuota => UserquotaProp::ProjectUsed,
            UserquotaProp::ProjectObjQuota => UserquotaProp::ProjectObjUsed,
            used => used,
        }
    }

    /// The ZAP key of `id` for this property (`obj-` for an object count's used value).
    fn key(self, id: u64) -> String {
        if self.is_object_count() && !self.is_quota() {
            format!("{DMU_OBJACCT_PREFIX}{id:x}")
        } else {
            format!("{id:x}")
        }
    }
}

/// Why a quota operation failed.
#[derive(Debug)]
pub enum QuotaError {
    /// OpenZFS's ENOTSUP: the object set keeps no such accounting (object counts without
    /// userobj_accounting, projects without project_quota).
    NotSupported,
    Zap(ZapError),
}

impl std::fmt::Display for QuotaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuotaError::NotSupported => write!(f, "operation not supported"),
            QuotaError::Zap(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for QuotaError {}

impl From<ZapError> for QuotaError {
    fn from(e: ZapError) -> Self {
        QuotaError::Zap(e)
    }
}

impl From<crate::dmu::DmuError> for QuotaError {
    fn from(e: crate::dmu::DmuError) -> Self {
        QuotaError::Zap(ZapError::Dmu(e))
    }
}

/// Whether the object set keeps what `prop` reads or limits.
pub fn supported(os: &ObjectSet, prop: UserquotaProp) -> bool {
    if prop.is_project() {
        return os.projectquota_enabled();
    }
    if prop.is_object_count() {
        return os.userobjused_enabled();
    }
    os.userused_enabled()
}

/// The quota ZAP of `prop`'s kind, if one was ever made (`z_userquota_obj`...).
fn quota_object(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    prop: UserquotaProp,
) -> Result<Option<u64>, ZapError> {
    let prefix = prop.quota().prefix();
    Ok(zap::zap_lookup(os, ctx, ObjectId(MASTER_NODE_OBJ), prefix)?
        .and_then(|words| words.first().copied())
        .filter(|&object| object != 0))
}

fn lookup_u64(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    object: u64,
    key: &str,
) -> Result<Option<u64>, QuotaError> {
    if !os.object_exists(ctx, ObjectId(object))? {
        return Ok(None);
    }
    Ok(zap::zap_lookup(os, ctx, ObjectId(object), key)?.and_then(|w| w.first().copied()))
}

/// `zfs_userspace_one`: the value of `prop` for `id` (0 when none is kept).
pub fn zfs_userspace_one(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    prop: UserquotaProp,
    id: u64,
) -> Result<u64, QuotaError> {
    if !supported(os, prop) {
        return Err(QuotaError::NotSupported);
    }
    let object = if prop.is_quota() {
        match quota_object(os, ctx, prop)? {
            Some(object) => object,
            None => return Ok(0),
        }
    } else {
        prop.used_object()
    };
    Ok(lookup_u64(os, ctx, object, &prop.key(id))?.unwrap_or(0))
}

/// `zfs_userspace_many`: every (id, value) `prop` has, by id.
pub fn zfs_userspace_many(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    prop: UserquotaProp,
) -> Result<Vec<(u64, u64)>, QuotaError> {
    if !supported(os, prop) {
        return Err(QuotaError::NotSupported);
    }
    let object = if prop.is_quota() {
        match quota_object(os, ctx, prop)? {
            Some(object) => object,
            None => return Ok(Vec::new()),
        }
    } else {
        prop.used_object()
    };
    if !os.object_exists(ctx, ObjectId(object))? {
        return Ok(Vec::new());
    }
    let want_objects = prop.is_object_count() && !prop.is_quota();
    let mut out = Vec::new();
    for entry in zap::zap_list_all(os, ctx, ObjectId(object))? {
        let Ok(name) = std::str::from_utf8(&entry.name) else {
            continue;
        };
        let hex = match name.strip_prefix(DMU_OBJACCT_PREFIX) {
            Some(rest) if want_objects => rest,
            Some(_) => continue,
            None if want_objects => continue,
            None => name,
        };
        let (Ok(id), zap::ZapValue::U64s(words)) = (u64::from_str_radix(hex, 16), &entry.value)
        else {
            continue;
        };
        if let Some(&value) = words.first() {
            out.push((id, value));
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// `zfs_set_userquota`: `quota` 0 removes the limit.
pub fn zfs_set_userquota(
    os: &mut ObjectSet,
    ctx: &IoCtx<'_>,
    prop: UserquotaProp,
    id: u64,
    quota: u64,
) -> Result<(), QuotaError> {
    // Project quotas need project_quota, as in OpenZFS. Object quotas need object
    // accounting: OpenZFS stores them without it and enforces them once its upgrade has
    // made it active, but Zetta does not run that upgrade (`dmu_objset_userobjspace_upgrade`),
    // so on an object set that does not count objects (one made before userobj_accounting
    // was enabled, or on a pool without it) a stored one would never be enforced: refused
    // (ENOTSUP, "must be upgraded") unless it is being removed.
    let unenforceable = prop.is_object_count() && !os.userobjused_enabled() && quota != 0;
    if !prop.is_quota()
        || !os.userused_enabled()
        || (prop.is_project() && !supported(os, prop))
        || unenforceable
    {
        return Err(QuotaError::NotSupported);
    }
    let object = match quota_object(os, ctx, prop)? {
        Some(object) => object,
        None => {
            if quota == 0 {
                return Ok(());
            }
            let object = zap::zap_create(os, ctx, DMU_OT_USERGROUP_QUOTA)?;
            zap::zap_add(
                os,
                ctx,
                ObjectId(MASTER_NODE_OBJ),
                prop.prefix(),
                &[object.0],
            )?;
            object.0
        }
    };
    let key = prop.key(id);
    if quota == 0 {
        match zap::zap_remove(os, ctx, ObjectId(object), &key) {
            Ok(()) | Err(ZapError::NotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    } else {
        zap::zap_update(os, ctx, ObjectId(object), &key, &[quota]).map_err(Into::into)
    }
}

/// `zfs_id_overblockquota` (`objects` false) or `zfs_id_overobjquota` (`objects` true)
/// for one accounting object (`DMU_USERUSED_OBJECT`, ...) and id: whether the id's synced
/// bytes (or objects, under the `obj-` key) are at or over the quota set on it. Errors
/// read as "not over" (OpenZFS's lookups fail open), and so does an object set that
/// keeps no such accounting.
fn zfs_id_over(os: &ObjectSet, ctx: &IoCtx<'_>, used_object: u64, id: u64, objects: bool) -> bool {
    let quota_prop = match (used_object, objects) {
        (DMU_USERUSED_OBJECT, false) => UserquotaProp::UserQuota,
        (DMU_USERUSED_OBJECT, true) => UserquotaProp::UserObjQuota,
        (DMU_GROUPUSED_OBJECT, false) => UserquotaProp::GroupQuota,
        (DMU_GROUPUSED_OBJECT, true) => UserquotaProp::GroupObjQuota,
        (_, false) => UserquotaProp::ProjectQuota,
        (_, true) => UserquotaProp::ProjectObjQuota,
    };
    if !supported(os, quota_prop) {
        return false;
    }
    let Ok(Some(quota_object)) = quota_object(os, ctx, quota_prop) else {
        return false;
    };
    let Ok(Some(quota)) = lookup_u64(os, ctx, quota_object, &quota_prop.key(id)) else {
        return false;
    };
    let used_key = quota_prop.used().key(id);
    matches!(lookup_u64(os, ctx, used_object, &used_key), Ok(Some(used)) if used >= quota)
}

/// `zfs_id_overquota`: over the byte quota or the object quota.
pub fn zfs_id_overquota(os: &ObjectSet, ctx: &IoCtx<'_>, used_object: u64, id: u64) -> bool {
    zfs_id_over(os, ctx, used_object, id, false) || zfs_id_over(os, ctx, used_object, id, true)
}

/// Whether a file owned by (uid, gid, project) is refused: `zfs_acl_ids_overquota` for a
/// new object (`new_object`: byte and object quotas, `zfs_id_overquota`), `zfs_write`'s
/// check for an existing file's growth (byte quotas only, `zfs_id_overblockquota`: a
/// write adds no object).
pub fn owner_overquota(
    os: &ObjectSet,
    ctx: &IoCtx<'_>,
    (uid, gid, project): (u64, u64, u64),
    new_object: bool,
) -> bool {
    let over = |used_object, id| {
        if new_object {
            zfs_id_overquota(os, ctx, used_object, id)
        } else {
            zfs_id_over(os, ctx, used_object, id, false)
        }
    };
    over(DMU_USERUSED_OBJECT, uid)
        || over(DMU_GROUPUSED_OBJECT, gid)
        || (os.projectquota_enabled() && over(DMU_PROJECTUSED_OBJECT, project))
}

fn quota_error(e: QuotaError) -> super::ZplError {
    match e {
        QuotaError::NotSupported => super::ZplError::NotSupported("user accounting"),
        QuotaError::Zap(e) => super::ZplError::from(e),
    }
}

impl crate::spa::Spa {
    /// Runs `work` on the object set of filesystem `name` or snapshot `fs@snap` through
    /// shared access: a head open in memory as it is (the open txg's changes included), a
    /// snapshot or an unopened head from its last synced block.
    fn with_objset_shared<T>(
        &self,
        name: &str,
        work: impl FnOnce(&ObjectSet, &IoCtx<'_>) -> Result<T, QuotaError>,
    ) -> Result<T, super::ZplError> {
        if name.contains('@') {
            let snap = self.zpl_snapshot_open(name)?;
            return self
                .with_zpl_snapshot_shared(&snap, |_, os, ctx| work(os, ctx).map_err(quota_error));
        }
        if self.openzfs.is_some() {
            return Err(super::ZplError::NotSupported(
                "user accounting of this pool",
            ));
        }
        let dataset = self
            .lookup_dataset(name)
            .map_err(|e| super::ZplError::Io(e.to_string()))?
            .ok_or(super::ZplError::NotFound)?;
        let ctx = io_ctx!(self);
        if self.dataset_is_open(dataset) {
            let os = if dataset == self.dp.directory.root_dataset {
                Some(&self.dp.root_dataset)
            } else {
                self.dp.datasets.get(&dataset).map(|head| &head.objset)
            };
            if let Some(os) = os {
                return work(os, &ctx).map_err(quota_error);
            }
        }
        let phys = self
            .read_dataset_phys(dataset)
            .map_err(|e| super::ZplError::Io(e.to_string()))?;
        let policy = crate::spa::dataset_policy(crate::dmu::default_data_props());
        let os = ObjectSet::open(&ctx, dataset, &phys.bp, policy)?;
        work(&os, &ctx).map_err(quota_error)
    }

    /// `zfs_userspace_many` on filesystem `name` or snapshot `fs@snap`.
    pub fn userspace(
        &self,
        name: &str,
        prop: UserquotaProp,
    ) -> Result<Vec<(u64, u64)>, super::ZplError> {
        self.with_objset_shared(name, |os, ctx| zfs_userspace_many(os, ctx, prop))
    }

    /// `zfs_userspace_one`: `zfs get userquota@ID` and friends.
    pub fn userspace_one(
        &self,
        name: &str,
        prop: UserquotaProp,
        id: u64,
    ) -> Result<u64, super::ZplError> {
        self.with_objset_shared(name, |os, ctx| zfs_userspace_one(os, ctx, prop, id))
    }

    /// `zfs_set_userquota` on filesystem `name`, in the open txg.
    pub fn set_userquota(
        &mut self,
        name: &str,
        prop: UserquotaProp,
        id: u64,
        quota: u64,
    ) -> Result<(), super::ZplError> {
        self.with_zpl(name, |_, os, ctx| {
            zfs_set_userquota(os, ctx, prop, id, quota).map_err(quota_error)
        })
    }
}
