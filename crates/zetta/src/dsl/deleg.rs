//! Delegated administration (OpenZFS `dsl_deleg.c`, the key format of `zfs_deleg.c`):
//! which users and groups may run which `zfs` operations on a dataset (`zfs allow`).
//!
//! Theory. Each DSL dir may name a `dd_deleg_zapobj` (`DMU_OT_DSL_PERMS`). Its entries are
//! *who-keys*, each pointing (one u64) at a *jump object*, another `DSL_PERMS` ZAP whose
//! entry names are permission names (value: one u64 0). A who-key is three characters and
//! a name, `TYPE INHERIT '$' NAME`:
//!
//! ```text
//!   ul$1000   user 1000, local           ud$1000   user 1000, descendents
//!   gl$100    group 100, local           gd$100    group 100, descendents
//!   el$ ed$   everyone                   c-$       create-time permissions
//!   s-$@set   named set @set's permissions
//!   Ul$1000 Gl$100 El$ C-$ S-$@set      the same, naming *sets* (`@x` entries)
//! ```
//!
//! `dsl_deleg_access`: a dataset's check walks from its own dir to the root. At the first
//! dir, the local keys (`l`) count — a snapshot counts as a descendent, so only `d` keys —
//! and above it only descendent keys. At each dir the caller's sets (`U`/`G`/`E` keys) are
//! expanded through `s-$`/`S-$` entries of the same dir, then the user, primary group,
//! everyone and supplementary groups are checked. Create-time permissions (`c-$`) are
//! granted to a dataset's creator by the CLI after `zfs create` (libzfs `zfs_create`'s
//! `zfs_perm_set` is not in OpenZFS 2.3: the kernel grants them, `dsl_deleg_set_create_perms`).
//!
//! Invariants: a jump object is never empty (the unset that empties it removes the key
//! and destroys it, `dsl_deleg_unset_sync`); the deleg ZAP goes with its dir
//! (`dsl_deleg_destroy`). Delegations are not in send streams (OpenZFS sends none: no
//! `zfs_get_fsacl` in `zfs send -p`'s property list). A pool without delegations is
//! byte-identical to one from before this module (word 11 stays 0).

use super::{no_such_dataset, zap_error, DslError};
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::ObjectId;
use crate::zap::{self, ZapError};

/// `DMU_OT_DSL_PERMS`.
pub const DSL_PERMS: u8 = 32;

/// Longest who-key (`ZFS_MAX_DELEG_NAME`).
pub const WHOKEY_BYTES_MAX: usize = 128;

/// The permissions OpenZFS 2.3 delegates by name (`zfs_deleg_perm_tab`), besides every
/// settable property's name.
pub const PERMISSIONS: &[&str] = &[
    "allow",
    "bookmark",
    "clone",
    "create",
    "destroy",
    "diff",
    "mount",
    "promote",
    "receive",
    "receive:append",
    "rename",
    "rollback",
    "snapshot",
    "share",
    "send",
    "userprop",
    "userquota",
    "groupquota",
    "userused",
    "groupused",
    "userobjquota",
    "groupobjquota",
    "userobjused",
    "groupobjused",
    "hold",
    "release",
    "load-key",
    "change-key",
    "projectused",
    "projectquota",
    "projectobjused",
    "projectobjquota",
];

/// The caller a permission is checked for (OpenZFS's `cred_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// One entry of a `zfs allow`/`unallow` request (OpenZFS's nvlist `whokey -> perms`):
/// `perms` None removes the whole who-key (unallow without permissions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelegEntry {
    pub whokey: String,
    pub perms: Option<Vec<String>>,
}

/// The delegations stored on one dir: who-key -> its permission (or set) names, sorted.
pub type DelegTable = Vec<(String, Vec<String>)>;

/// `zfs_validate_who`: a who-key OpenZFS would accept.
pub fn valid_whokey(whokey: &str) -> bool {
    let bytes = whokey.as_bytes();
    if bytes.len() < 3 || bytes.len() >= WHOKEY_BYTES_MAX || bytes[2] != b'$' {
        return false;
    }
    let name = &whokey[3..];
    match bytes[0] {
        b'u' | b'g' | b'U' | b'G' => {
            matches!(bytes[1], b'l' | b'd')
                && !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_digit())
        }
        b's' | b'S' => bytes[1] == b'-' && valid_set_name(name),
        b'c' | b'C' => bytes[1] == b'-' && name.is_empty(),
        b'e' | b'E' => matches!(bytes[1], b'l' | b'd') && name.is_empty(),
        _ => false,
    }
}

/// `permset_namecheck`: `@` and then the characters of a dataset component.
pub fn valid_set_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('@') else {
        return false;
    };
    !rest.is_empty()
        && name.len() < 64
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b' '))
}

/// `zfs_valid_permission_name`: a permission of the table, a delegatable property, or a set.
pub fn valid_permission(perm: &str) -> bool {
    canonical_permission(perm).is_some() || valid_set_name(perm)
}

/// `zfs_deleg_canonicalize_perm`: the table's name, or a property's canonical name (every
/// settable property but `zoned`, `zfs_prop_delegatable`).
pub fn canonical_permission(perm: &str) -> Option<String> {
    if PERMISSIONS.contains(&perm) {
        return Some(perm.to_string());
    }
    let prop = zetta_zprop::ZfsProp::from_name(perm)?;
    (prop.name() != "zoned").then(|| prop.name().to_string())
}

/// `zfs_deleg_verify_nvlist`.
pub fn verify_entries(entries: &[DelegEntry]) -> bool {
    !entries.is_empty()
        && entries.iter().all(|e| {
            valid_whokey(&e.whokey)
                && e.perms
                    .as_ref()
                    .is_none_or(|p| !p.is_empty() && p.iter().all(|n| valid_permission(n)))
        })
}

fn invalid(name: &str) -> SpaError {
    SpaError::Dsl(DslError::InvalidDelegation {
        name: name.to_string(),
    })
}

impl Spa {
    /// `dsl_deleg_set` (`zfs allow`, `unset` false) and its unset (`zfs unallow`) on the
    /// dir of filesystem or volume `name`: OpenZFS's `dsl_deleg_set_sync` and
    /// `dsl_deleg_unset_sync`, in the open txg. Checks first (nothing changes on a refusal).
    pub fn deleg_set(
        &mut self,
        name: &str,
        entries: &[DelegEntry],
        unset: bool,
    ) -> Result<(), SpaError> {
        if name.contains('@') || name.contains('#') {
            return Err(invalid(name));
        }
        if !verify_entries(entries) || (!unset && entries.iter().any(|e| e.perms.is_none())) {
            return Err(invalid(name));
        }
        let dir = self
            .lookup_dir(name)?
            .ok_or_else(|| no_such_dataset(name))?;
        let mut phys = self.read_dir(dir)?;
        if phys.deleg_zap == 0 {
            if unset {
                return Ok(());
            }
            let ctx = io_ctx!(self);
            phys.deleg_zap = zap::zap_create(&mut self.dp.mos, &ctx, DSL_PERMS)
                .map_err(zap_error)?
                .0;
            self.write_dir(dir, &phys)?;
        }
        let zapobj = ObjectId(phys.deleg_zap);
        let ctx = io_ctx!(self);
        let mos = &mut self.dp.mos;
        for entry in entries {
            let jump = zap::zap_lookup(mos, &ctx, zapobj, &entry.whokey)
                .map_err(zap_error)?
                .and_then(|v| v.first().copied());
            if !unset {
                let jump = match jump {
                    Some(object) => ObjectId(object),
                    // zap_create_link: a new jump object named by the who-key.
                    None => {
                        let object = zap::zap_create(mos, &ctx, DSL_PERMS).map_err(zap_error)?;
                        zap::zap_add(mos, &ctx, zapobj, &entry.whokey, &[object.0])
                            .map_err(zap_error)?;
                        object
                    }
                };
                for perm in entry.perms.iter().flatten() {
                    zap::zap_update(mos, &ctx, jump, perm, &[0]).map_err(zap_error)?;
                }
                continue;
            }
            let Some(jump) = jump.map(ObjectId) else {
                continue;
            };
            let Some(perms) = &entry.perms else {
                zap::zap_remove(mos, &ctx, zapobj, &entry.whokey).map_err(zap_error)?;
                zap::zap_destroy(mos, &ctx, jump).map_err(zap_error)?;
                continue;
            };
            for perm in perms {
                match zap::zap_remove(mos, &ctx, jump, perm) {
                    Ok(()) | Err(ZapError::NotFound) => {}
                    Err(e) => return Err(zap_error(e)),
                }
            }
            if zap::zap_count(mos, &ctx, jump).map_err(zap_error)? == 0 {
                zap::zap_remove(mos, &ctx, zapobj, &entry.whokey).map_err(zap_error)?;
                zap::zap_destroy(mos, &ctx, jump).map_err(zap_error)?;
            }
        }
        Ok(())
    }

    /// The delegations stored on one dir (its deleg ZAP read through), empty when none.
    fn deleg_table(&self, deleg_zap: u64) -> Result<DelegTable, SpaError> {
        if deleg_zap == 0 {
            return Ok(Vec::new());
        }
        let ctx = io_ctx!(self);
        let mos = &self.dp.mos;
        let mut table = Vec::new();
        for entry in zap::zap_list_all(mos, &ctx, ObjectId(deleg_zap)).map_err(zap_error)? {
            let whokey = String::from_utf8_lossy(&entry.name).into_owned();
            let jump = match &entry.value {
                zap::ZapValue::U64s(words) if words.len() == 1 => words[0],
                _ => {
                    return Err(SpaError::Corrupt(format!(
                        "deleg ZAP {deleg_zap}: entry {whokey} is not an object number"
                    )))
                }
            };
            let mut perms: Vec<String> = zap::zap_list_all(mos, &ctx, ObjectId(jump))
                .map_err(zap_error)?
                .into_iter()
                .map(|p| String::from_utf8_lossy(&p.name).into_owned())
                .collect();
            perms.sort();
            table.push((whokey, perms));
        }
        table.sort();
        Ok(table)
    }

    /// `dsl_deleg_get` (`zfs allow fs`): the delegations of `name`'s dir and of every
    /// ancestor that has any, nearest first, each with its dataset name.
    pub fn deleg_get(&self, name: &str) -> Result<Vec<(String, DelegTable)>, SpaError> {
        let fs = name.split('@').next().unwrap_or(name);
        let mut dir = self.lookup_dir(fs)?.ok_or_else(|| no_such_dataset(name))?;
        let mut dsname = fs.to_string();
        let mut out = Vec::new();
        loop {
            let phys = self.read_dir(dir)?;
            let table = self.deleg_table(phys.deleg_zap)?;
            if !table.is_empty() {
                out.push((dsname.clone(), table));
            }
            if phys.parent_dir == 0 || !dsname.contains('/') {
                return Ok(out);
            }
            dir = phys.parent_dir;
            dsname.truncate(dsname.rfind('/').unwrap_or(0));
        }
    }

    /// `dsl_deleg_access`: whether `cred` holds permission `perm` on dataset `name` (a
    /// filesystem, volume or snapshot) through the delegations of its dir and ancestors.
    /// False for every caller when the pool's `delegation` property is off.
    pub fn deleg_access(&self, name: &str, perm: &str, cred: &Cred) -> Result<bool, SpaError> {
        if !self.delegation_on() {
            return Ok(false);
        }
        let (fs, is_snapshot) = match name.split_once('@') {
            Some((fs, _)) => (fs, true),
            None => (name, false),
        };
        let tables = self.deleg_get(fs)?;
        for (dsname, table) in &tables {
            let inherit = if dsname == fs && !is_snapshot {
                'l'
            } else {
                'd'
            };
            if table_grants(table, perm, inherit, cred) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `dsl_deleg_set_create_perms`: the create-time permissions (`c-$`) and sets (`C-$`)
    /// of every ancestor of the new dataset `name`, given to its creator `uid` locally
    /// (`ul$UID`, `Ul$UID`) on the new dir. Nothing when no ancestor has any.
    pub fn deleg_set_create_perms(&mut self, name: &str, uid: u32) -> Result<(), SpaError> {
        let Some((parent, _)) = name.rsplit_once('/') else {
            return Ok(());
        };
        let mut entries: Vec<DelegEntry> = Vec::new();
        for (_, table) in self.deleg_get(parent)? {
            for (from, to) in [("c-$", 'u'), ("C-$", 'U')] {
                let Some((_, perms)) = table.iter().find(|(key, _)| key == from) else {
                    continue;
                };
                let whokey = format!("{to}l${uid}");
                match entries.iter_mut().find(|e| e.whokey == whokey) {
                    Some(entry) => entry
                        .perms
                        .get_or_insert_with(Vec::new)
                        .extend(perms.clone()),
                    None => entries.push(DelegEntry {
                        whokey,
                        perms: Some(perms.clone()),
                    }),
                }
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        self.deleg_set(name, &entries, false)
    }

    /// `dsl_delegation_on`: the pool property `delegation` (default on).
    fn delegation_on(&self) -> bool {
        self.props.get_str("delegation") != Some("off")
    }

    /// `dsl_deleg_destroy`: frees a dir's deleg ZAP and its jump objects (the dir goes).
    pub(crate) fn deleg_destroy(&mut self, deleg_zap: u64) -> Result<(), SpaError> {
        if deleg_zap == 0 {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        let mos = &mut self.dp.mos;
        for entry in zap::zap_list_all(mos, &ctx, ObjectId(deleg_zap)).map_err(zap_error)? {
            if let zap::ZapValue::U64s(words) = &entry.value {
                if let [jump] = words.as_slice() {
                    zap::zap_destroy(mos, &ctx, ObjectId(*jump)).map_err(zap_error)?;
                }
            }
        }
        zap::zap_destroy(mos, &ctx, ObjectId(deleg_zap)).map_err(zap_error)
    }
}

/// One dir's part of `dsl_deleg_access_impl`: the caller's sets expanded through the dir's
/// `s-$`/`S-$` entries, then the user, primary group, everyone and supplementary groups.
fn table_grants(table: &DelegTable, perm: &str, inherit: char, cred: &Cred) -> bool {
    let lookup = |key: &str| table.iter().find(|(k, _)| k == key).map(|(_, p)| p);
    let has = |key: &str| lookup(key).is_some_and(|perms| perms.iter().any(|p| p == perm));
    // dsl_load_user_sets: the sets named for this caller.
    let mut ids: Vec<String> = vec![format!("U{inherit}${}", cred.uid)];
    ids.push(format!("G{inherit}${}", cred.gid));
    ids.push(format!("E{inherit}$"));
    ids.extend(cred.groups.iter().map(|g| format!("G{inherit}${g}")));
    let mut sets: Vec<String> = ids
        .iter()
        .filter_map(|key| lookup(key))
        .flatten()
        .cloned()
        .collect();
    let mut seen: Vec<String> = Vec::new();
    while let Some(set) = sets.pop() {
        if seen.contains(&set) {
            continue;
        }
        if has(&format!("s-${set}")) {
            return true;
        }
        if let Some(more) = lookup(&format!("S-${set}")) {
            sets.extend(more.iter().cloned());
        }
        seen.push(set);
    }
    // dsl_check_user_access.
    has(&format!("u{inherit}${}", cred.uid))
        || has(&format!("g{inherit}${}", cred.gid))
        || has(&format!("e{inherit}$"))
        || cred.groups.iter().any(|g| has(&format!("g{inherit}${g}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(uid: u32, gid: u32, groups: &[u32]) -> Cred {
        Cred {
            uid,
            gid,
            groups: groups.to_vec(),
        }
    }

    fn table(entries: &[(&str, &[&str])]) -> DelegTable {
        entries
            .iter()
            .map(|(k, p)| (k.to_string(), p.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    /// Why: the who-keys are OpenZFS's on-disk names; one accepted that OpenZFS's
    /// `zfs_validate_who` refuses would write a pool OpenZFS rejects on `zfs allow`.
    #[test]
    fn whokeys_follow_zfs_validate_who() {
        for good in [
            "ul$1000",
            "ud$0",
            "gl$100",
            "el$",
            "ed$",
            "c-$",
            "s-$@basic",
            "Ul$7",
            "C-$",
        ] {
            assert!(valid_whokey(good), "{good}");
        }
        for bad in [
            "ul$", "ux$1", "ul$ab", "el$x", "c-$x", "sl$@a", "s-$a", "x-$", "ul1000",
        ] {
            assert!(!valid_whokey(bad), "{bad}");
        }
        assert!(valid_permission("create") && valid_permission("compression"));
        assert!(valid_permission("@set") && !valid_permission("zoned"));
        assert!(!valid_permission("fly"));
    }

    /// Why: local keys apply only at the dataset itself, descendent keys only below it
    /// (`dsl_deleg_access_impl`'s checkflag), sets expand transitively, groups count.
    #[test]
    fn access_follows_locality_sets_and_groups() {
        let t = table(&[
            ("ul$1000", &["create"]),
            ("ud$1000", &["mount"]),
            ("gd$50", &["snapshot"]),
            ("Ul$1000", &["@a"]),
            ("S-$@a", &["@b"]),
            ("s-$@b", &["rename"]),
            ("el$", &["diff"]),
        ]);
        let alice = cred(1000, 1000, &[50]);
        assert!(table_grants(&t, "create", 'l', &alice));
        assert!(!table_grants(&t, "create", 'd', &alice));
        assert!(table_grants(&t, "mount", 'd', &alice));
        assert!(!table_grants(&t, "mount", 'l', &alice));
        assert!(table_grants(&t, "snapshot", 'd', &alice));
        assert!(table_grants(&t, "rename", 'l', &alice));
        assert!(table_grants(&t, "diff", 'l', &cred(5, 5, &[])));
        assert!(!table_grants(&t, "destroy", 'l', &alice));
        assert!(!table_grants(&t, "snapshot", 'd', &cred(1001, 1001, &[])));
    }
}
