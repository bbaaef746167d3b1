//! `zfs userspace|groupspace|projectspace` and the `userquota@…` family of properties in
//! `zfs get`/`zfs set` (OpenZFS `cmd/zfs/zfs_main.c` `zfs_do_userspace`,
//! `userspace_cb`, `print_us`; libzfs `userquota_propname_decode`,
//! `zfs_prop_get_userquota`, `zfs_valid_proplist`'s userquota branch), over the engine's
//! `zpl::zfs_quota`.
//!
//! Theory. A `prefix@who` property names one id: `who` is a user or group name (looked
//! up in /etc/passwd or /etc/group, as getpwnam/getgrnam do on a plain Linux host) or a
//! decimal id; a project is always a number. Reading one prints its value with the
//! source `local` (`none` for an unset quota, bytes as `zfs_nicebytes`, object counts as
//! `zfs_nicenum`, raw with `-p`); a name that does not resolve prints `-`. Setting one
//! takes `none`, 0 or a size (`zfs_nicestrtonum`); the `*used@` ones are read-only.
//!
//! `zfs userspace` builds one row per (type, id) from every property of its kind that the
//! dataset keeps (object counts only with userobj_accounting; projects only with
//! project_quota: a kind the dataset lacks is skipped, as OpenZFS skips ENOTSUP), sorts
//! by the `-s`/`-S` columns then type and name, and prints OpenZFS's columns: TYPE NAME
//! USED QUOTA OBJUSED OBJQUOTA, two spaces apart, TYPE and NAME left-aligned, the widths
//! those of the widest value or header (`-H`: tab-separated, no header). Nothing at all
//! is printed when there is no row. Left out: SMB SIDs and `-i` translation (no idmap on
//! Linux: accepted, no effect), and mountpoint paths for the dataset operand.

use crate::zpool::pool::{self, Imported};
use crate::zpool::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use zetta::zpl::zfs_quota::UserquotaProp;
use zetta::zpl::ZplError;
use zetta_zutil::nicenum::{nicenum, nicenum_space};

/// Looks a name up in a colon-separated database (/etc/passwd, /etc/group): its id.
fn id_of_name(database: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(database).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let entry = fields.next()?;
        let id = fields.nth(1)?;
        (entry == name).then(|| id.parse().ok()).flatten()
    })
}

/// The name of an id in a colon-separated database.
fn name_of_id(database: &str, id: u64) -> Option<String> {
    let text = std::fs::read_to_string(database).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let entry = fields.next()?;
        let found: u64 = fields.nth(1)?.parse().ok()?;
        (found == id).then(|| entry.to_string())
    })
}

/// `userquota_propname_decode`: the id `who` names for `prop`.
pub(crate) fn decode_who(prop: UserquotaProp, who: &str) -> Option<u64> {
    if who.is_empty() {
        return None;
    }
    if !prop.is_project() {
        let database = if prop.is_group() {
            "/etc/group"
        } else {
            "/etc/passwd"
        };
        if let Some(id) = id_of_name(database, who) {
            return Some(id);
        }
    }
    // A numeric id (strtoul base 10, the whole word), at most MAXUID for users/groups.
    let id: u64 = who.parse().ok()?;
    if !prop.is_project() && id > 0x7fff_fffe {
        return None;
    }
    Some(id)
}

/// `zfs_prop_get_userquota`'s text of `value`.
fn format_userquota(prop: UserquotaProp, value: u64, parsable: bool) -> String {
    if parsable {
        value.to_string()
    } else if value == 0 && prop.is_quota() {
        "none".to_string()
    } else if prop.is_object_count() {
        nicenum(value)
    } else {
        nicenum_space(value)
    }
}

/// `zfs get`'s value and source of a `prefix@who` property, `None` for any other name.
pub(crate) fn get_property(
    imported: &Imported,
    dataset: &str,
    name: &str,
    parsable: bool,
) -> Option<(String, String)> {
    let (prop, who) = UserquotaProp::parse(name)?;
    let dash = || ("-".to_string(), "-".to_string());
    let Some(id) = decode_who(prop, who) else {
        return Some(dash());
    };
    if !may_read_one(imported, dataset, prop, id, &crate::daemon::caller()) {
        // The ioctl's EPERM: `zfs get` prints `-`, as for any value it cannot read.
        return Some(dash());
    }
    match imported.spa.userspace_one(dataset, prop, id) {
        Ok(value) => Some((format_userquota(prop, value, parsable), "local".to_string())),
        Err(_) => Some(dash()),
    }
}

/// `zfs_secpolicy_userspace_one`: the privileged read any id's value; a caller reads its
/// own uid's user values and its groups' group values; anything else (another id, any
/// project) needs the permission named after the property (`userquota_perms`:
/// `userused`, `groupquota`, ...) on the dataset.
fn may_read_one(
    imported: &Imported,
    dataset: &str,
    prop: UserquotaProp,
    id: u64,
    cred: &zetta::dsl::deleg::Cred,
) -> bool {
    if crate::daemon::privileged(cred) {
        return true;
    }
    if !prop.is_project() {
        let own = if prop.is_group() {
            u64::from(cred.gid) == id || cred.groups.iter().any(|g| u64::from(*g) == id)
        } else {
            u64::from(cred.uid) == id
        };
        if own {
            return true;
        }
    }
    let perm = prop.prefix().trim_end_matches('@');
    imported
        .spa
        .deleg_access(dataset, perm, cred)
        .unwrap_or(false)
}

/// A checked `prefix@who=value` of `zfs set`: (property, id, quota).
pub(crate) struct QuotaSet {
    prop: UserquotaProp,
    id: u64,
    quota: u64,
}

/// `zfs_valid_proplist`'s userquota branch, for `zfs set` on `dataset`: `None` when
/// `name` is no `prefix@who` property.
pub(crate) fn validate_set(
    dataset: &str,
    name: &str,
    value: &str,
) -> Option<Result<QuotaSet, CmdError>> {
    let (prop, who) = UserquotaProp::parse(name)?;
    let context = format!("cannot set property for '{dataset}'");
    let Some(id) = decode_who(prop, who) else {
        return Some(fail(format!(
            "{context}: '{name}' has an invalid user/group name"
        )));
    };
    if !prop.is_quota() {
        return Some(fail(format!("{context}: '{name}' is readonly")));
    }
    let quota = if value == "none" {
        0
    } else {
        match zetta_zprop::zfs_prop::nicestrtonum(value) {
            Ok(quota) => quota,
            Err(e) => return Some(fail(format!("{context}: {e}"))),
        }
    };
    Some(Ok(QuotaSet { prop, id, quota }))
}

/// Stores a checked quota (`zfs_set_userquota`).
pub(crate) fn store(imported: &mut Imported, dataset: &str, set: &QuotaSet) -> CmdResult {
    match imported
        .spa
        .set_userquota(dataset, set.prop, set.id, set.quota)
    {
        Ok(()) => Ok(()),
        Err(ZplError::NotSupported(_)) => fail(format!(
            "cannot set property for '{dataset}': pool and or dataset must be upgraded to set this property or value"
        )),
        Err(e) => fail(format!("cannot set property for '{dataset}': {e}")),
    }
}

/// `us_field_names` / `us_field_hdr`.
const FIELDS: [(&str, &str); 6] = [
    ("type", "TYPE"),
    ("name", "NAME"),
    ("used", "USED"),
    ("quota", "QUOTA"),
    ("objused", "OBJUSED"),
    ("objquota", "OBJQUOTA"),
];

/// `USTYPE_*` bits.
const USTYPE_PSX_GRP: u32 = 1;
const USTYPE_PSX_USR: u32 = 1 << 1;
const USTYPE_SMB_GRP: u32 = 1 << 2;
const USTYPE_SMB_USR: u32 = 1 << 3;
const USTYPE_PROJ: u32 = 1 << 4;
const USTYPE_ALL: u32 =
    USTYPE_PSX_GRP | USTYPE_PSX_USR | USTYPE_SMB_GRP | USTYPE_SMB_USR | USTYPE_PROJ;

fn type_text(ustype: u32) -> &'static str {
    match ustype {
        USTYPE_PSX_USR => "POSIX User",
        USTYPE_PSX_GRP => "POSIX Group",
        USTYPE_SMB_USR => "SMB User",
        USTYPE_SMB_GRP => "SMB Group",
        USTYPE_PROJ => "Project",
        _ => "Undefined",
    }
}

/// One row: its type, id, resolved name, and the four values where known.
struct Row {
    ustype: u32,
    id: u64,
    name: Option<String>,
    values: [Option<u64>; 4],
}

/// A sort column: a field index (0 type, 1 name, 2 used, 3 quota; others sort nothing)
/// and whether it is reversed (`-S`).
type SortColumn = (usize, bool);

fn compare(a: &Row, b: &Row, columns: &[SortColumn]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for &(field, reverse) in columns {
        let order = match field {
            0 => a.ustype.cmp(&b.ustype),
            1 => match (&a.name, &b.name) {
                (Some(x), Some(y)) => x.as_bytes().cmp(y.as_bytes()),
                // us_compare's compare_nums: a named row reads as 0.
                _ => {
                    let number = |r: &Row| if r.name.is_some() { 0 } else { r.id };
                    number(a).cmp(&number(b))
                }
            },
            2 | 3 => {
                let value = |r: &Row| r.values[field - 2].unwrap_or(0);
                value(a).cmp(&value(b))
            }
            _ => Ordering::Equal,
        };
        if order != Ordering::Equal {
            return if reverse { order.reverse() } else { order };
        }
    }
    Ordering::Equal
}

/// `zfs userspace|groupspace|projectspace [-Hinp] [-o field[,...]] [-s field]...
/// [-S field]... [-t type[,...]] filesystem|snapshot`.
pub fn cmd_userspace(command: &str, args: &[String], ctx: &mut Ctx) -> CmdResult {
    let projects = command == "projectspace";
    let mut types = match command {
        "groupspace" => USTYPE_PSX_GRP | USTYPE_SMB_GRP,
        "projectspace" => USTYPE_PROJ,
        _ => USTYPE_PSX_USR | USTYPE_SMB_USR,
    };
    let parsed = getopt(args, "nHpo:s:S:t:i")?;
    let mut numeric = projects;
    let mut columns: Vec<SortColumn> = Vec::new();
    for (flag, value) in &parsed.options {
        match flag {
            'n' | 't' | 'i' if projects => return usage(format!("invalid option '{flag}'")),
            'n' => numeric = true,
            's' | 'S' => {
                let field = value.as_deref().unwrap_or_default();
                let index = match field {
                    "type" => 0,
                    "name" => 1,
                    "used" => 2,
                    "quota" => 3,
                    other if zetta_zprop::ZfsProp::from_name(other).is_some() => usize::MAX,
                    other => return usage(format!("invalid field '{other}'")),
                };
                columns.push((index, *flag == 'S'));
            }
            _ => {}
        }
    }
    let scripted = parsed.has('H');
    let parsable = parsed.has('p');
    let name = match parsed.operands.as_slice() {
        [] => return usage("missing dataset name"),
        [name] => name.clone(),
        _ => return usage("too many arguments"),
    };
    let mut fields: Vec<usize> = Vec::new();
    let ofield = parsed
        .values('o')
        .pop()
        .unwrap_or_else(|| "type,name,used,quota,objused,objquota".to_string());
    for field in ofield.split(',') {
        match FIELDS.iter().position(|(f, _)| *f == field) {
            Some(index) => fields.push(index),
            None => {
                ctx.warn(&format!("invalid type '{field}' for -o option\n"));
                return Err(CmdError::Fail(String::new()));
            }
        }
    }
    if let Some(list) = parsed.values('t').pop() {
        types = 0;
        for word in list.split(',') {
            let bit = match word {
                "posixgroup" => USTYPE_PSX_GRP,
                "posixuser" => USTYPE_PSX_USR,
                "smbgroup" => USTYPE_SMB_GRP,
                "smbuser" => USTYPE_SMB_USR,
                "all" => USTYPE_ALL,
                other => {
                    ctx.warn(&format!("invalid type '{other}' for -t option\n"));
                    return Err(CmdError::Fail(String::new()));
                }
            };
            types |= bit;
        }
    }
    columns.push((0, false));
    columns.push((1, false));

    let fs = name.split('@').next().unwrap_or(&name).to_string();
    let imported = pool::open_pool_shared(pool_of(&name))
        .map_err(|_| CmdError::Fail(format!("cannot open '{name}': dataset does not exist")))?;
    match imported.spa.lookup_dir(&fs) {
        Ok(Some(_)) => {}
        _ => return fail(format!("cannot open '{name}': dataset does not exist")),
    }
    if name.contains('@') && !snapshot_exists(&imported, &fs, &name) {
        return fail(format!("cannot open '{name}': dataset does not exist"));
    }

    let mut widths: Vec<usize> = FIELDS.iter().map(|(_, h)| h.len()).collect();
    let mut rows: Vec<Row> = Vec::new();
    for prop in UserquotaProp::ALL {
        let is_user = !prop.is_group() && !prop.is_project();
        if (is_user && types & (USTYPE_PSX_USR | USTYPE_SMB_USR) == 0)
            || (prop.is_group() && types & (USTYPE_PSX_GRP | USTYPE_SMB_GRP) == 0)
            || (prop.is_project() && types != USTYPE_PROJ)
        {
            continue;
        }
        let entries = match imported.spa.userspace(&name, prop) {
            Ok(entries) => entries,
            // ENOTSUP for the object and project kinds: skipped, as libzfs does.
            Err(ZplError::NotSupported(_)) if prop.is_object_count() || prop.is_project() => {
                continue
            }
            // A volume keeps no accounting at all.
            Err(ZplError::NotSupported(_)) => {
                return fail("operation is only applicable to filesystems and their snapshots");
            }
            Err(e) => {
                return fail(format!("cannot get used/quota for {name}: {e}"));
            }
        };
        let ustype = if prop.is_group() {
            USTYPE_PSX_GRP
        } else if prop.is_project() {
            USTYPE_PROJ
        } else {
            USTYPE_PSX_USR
        };
        let slot = match (prop.is_object_count(), prop.is_quota()) {
            (false, false) => 0,
            (false, true) => 1,
            (true, false) => 2,
            (true, true) => 3,
        };
        let partner = slot ^ 1;
        for (id, value) in entries {
            let resolved = if numeric {
                None
            } else if prop.is_group() {
                name_of_id("/etc/group", id)
            } else if prop.is_project() {
                None
            } else {
                name_of_id("/etc/passwd", id)
            };
            widths[0] = widths[0].max(type_text(ustype).len());
            let name_len = resolved
                .as_ref()
                .map(String::len)
                .unwrap_or_else(|| id.to_string().len());
            widths[1] = widths[1].max(name_len);
            let text = if parsable {
                value.to_string()
            } else if prop.is_object_count() {
                nicenum(value)
            } else {
                nicenum_space(value)
            };
            widths[2 + slot] = widths[2 + slot].max(text.len());
            let row = match rows.iter_mut().find(|r| r.ustype == ustype && r.id == id) {
                Some(row) => row,
                None => {
                    rows.push(Row {
                        ustype,
                        id,
                        name: resolved,
                        values: [None; 4],
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            row.values[slot] = Some(value);
            if row.values[partner].is_none() {
                row.values[partner] = Some(0);
            }
        }
    }
    if rows.is_empty() {
        return Ok(());
    }
    rows.sort_by(|a, b| compare(a, b, &columns));
    let mut out = String::new();
    let pad = |out: &mut String, field: usize, text: &str, first: bool| {
        if !first {
            out.push_str(if scripted { "\t" } else { "  " });
        }
        if scripted {
            out.push_str(text);
        } else if field <= 1 {
            out.push_str(&format!("{text:<width$}", width = widths[field]));
        } else {
            out.push_str(&format!("{text:>width$}", width = widths[field]));
        }
    };
    if !scripted {
        for (i, &field) in fields.iter().enumerate() {
            pad(&mut out, field, FIELDS[field].1, i == 0);
        }
        out.push('\n');
    }
    for row in rows.iter().filter(|r| r.ustype & types != 0) {
        for (i, &field) in fields.iter().enumerate() {
            let text = match field {
                0 => type_text(row.ustype).to_string(),
                1 => row.name.clone().unwrap_or_else(|| row.id.to_string()),
                _ => match row.values[field - 2] {
                    None => "-".to_string(),
                    Some(value) if parsable => value.to_string(),
                    Some(0) if field == 3 || field == 5 => "none".to_string(),
                    Some(value) if field >= 4 => nicenum(value),
                    Some(value) => nicenum_space(value),
                },
            };
            pad(&mut out, field, &text, i == 0);
        }
        out.push('\n');
    }
    ctx.print(&out);
    Ok(())
}

fn pool_of(name: &str) -> &str {
    name.split(['/', '@', '#']).next().unwrap_or(name)
}

fn snapshot_exists(imported: &Imported, fs: &str, full: &str) -> bool {
    imported
        .spa
        .snapshots(fs)
        .is_ok_and(|snaps| snaps.iter().any(|(n, _, _)| n == full))
}
