//! `zfs allow` and `zfs unallow` (OpenZFS `zfs_main.c`: `zfs_do_allow_unallow_impl`,
//! `parse_allow_args`, `construct_fsacl_list`, `print_fs_perms`; libzfs `zfs_set_fsacl`;
//! the kernel's `zfs_ioc_set_fsacl` with `dsl_deleg_can_allow`/`can_unallow`).
//!
//! Theory. The command line becomes a list of who-keys with their permissions exactly as
//! OpenZFS's `store_allow_perm` builds its nvlist (`ul$1000 -> create,mount` and the same
//! for `ud$1000`; `@set` names go under the upper-case key), which the engine stores in the
//! dir's deleg ZAP (`zetta::dsl::deleg`). `zfs allow fs` prints the delegations of `fs` and
//! of each ancestor that has any, nearest first, grouped as OpenZFS groups them (sets and
//! create-time permissions, then local, descendent, local+descendent). A caller that is
//! not root must hold `allow` and every permission it hands out, and may only take back
//! its own user's entries (`dsl_deleg_can_allow`, `dsl_deleg_can_unallow`).
//!
//! OpenZFS's quirks kept on purpose: an unknown user or group prints the long usage on
//! standard output and exits 0 (`allow_usage(un, B_TRUE, …)`); a dataset that cannot be
//! opened exits 255; `unallow -r` reaches the direct children only (`zfs_iter_filesystems`
//! without recursion in `set_deleg_perms`).

use crate::zpool::pool::{self, Imported};
use crate::zpool::{getopt, CmdError, Ctx};
use std::collections::BTreeMap;
use zetta::dsl::deleg::{Cred, DelegEntry, DelegTable, PERMISSIONS};
use zetta::dsl::DslError;
use zetta::spa::SpaError;

/// `zfs allow` (`un` false) or `zfs unallow` (`un` true): the exit code.
pub fn run(args: &[String], un: bool, ctx: &mut Ctx) -> i32 {
    match run_inner(args, un, ctx) {
        Ok(code) => code,
        Err(CmdError::Fail(message)) => {
            if !message.is_empty() {
                ctx.warn(&format!("{message}\n"));
            }
            1
        }
        Err(CmdError::Usage(message)) => {
            if !message.is_empty() {
                ctx.warn(&format!("{message}\n"));
            }
            let command = if un { "unallow" } else { "allow" };
            if let Some(text) = crate::usage::zfs_command_usage(command) {
                ctx.warn(&text);
            }
            2
        }
    }
}

#[derive(Default)]
struct AllowOpts {
    local: bool,
    descend: bool,
    user: bool,
    group: bool,
    everyone: bool,
    create: bool,
    set: bool,
    recursive: bool,
    prt_usage: bool,
    prt_perms: bool,
    who: Option<String>,
    perms: Option<String>,
    dataset: String,
}

/// `allow_usage`: the long help. `requested`: on standard output, exit 0; else stderr, 2.
fn allow_usage(un: bool, requested: bool, message: Option<&str>, ctx: &mut Ctx) -> i32 {
    let command = if un { "unallow" } else { "allow" };
    let mut text = format!(
        "Usage: {}",
        crate::usage::zfs_synopsis(command).unwrap_or_default()
    );
    text.push_str("Options:\n");
    let mut options = vec![
        ("-h", "show this help message and exit"),
        ("-l", "set permission locally"),
        ("-d", "set permission for descents"),
        ("-u", "set permission for user"),
        ("-g", "set permission for group"),
        ("-e", "set permission for everyone"),
        ("-c", "set create time permission"),
        ("-s", "define permission set"),
    ];
    if un {
        options.push(("-r", "remove permissions recursively"));
    }
    for (option, description) in options {
        text.push_str(&format!("  {option:<10}  {description}\n"));
    }
    text.push_str("\nThe following permissions are supported:\n\n");
    let row = |a: &str, b: &str, c: &str| format!("{a:<16} {b:<14}\t{c}\n");
    text.push_str(&row("NAME", "TYPE", "NOTES"));
    for (name, kind, note) in PERMISSION_NOTES {
        text.push_str(&row(name, kind, note));
    }
    let mut props: Vec<&str> = zetta_zprop::ZfsProp::ALL
        .iter()
        .map(|p| p.desc())
        .filter(|d| d.visible && d.attr != zetta_zprop::zfs_prop::PropAttr::ReadOnly)
        .map(|d| d.name)
        .collect();
    props.sort_unstable();
    for prop in props {
        text.push_str(&row(prop, "property", ""));
    }
    if let Some(message) = message {
        text.push_str(&format!("\nzfs: error: {message}"));
    }
    if requested {
        ctx.print(&text);
        0
    } else {
        ctx.warn(&text);
        2
    }
}

/// `zfs_deleg_perm_tbl` in its order, with `deleg_perm_type` and `deleg_perm_comment`.
const PERMISSION_NOTES: &[(&str, &str, &str)] = &[
    ("allow", "subcommand", "Must also have the permission that is being\n\t\t\t\tallowed"),
    ("clone", "subcommand", "Must also have the 'create' ability and 'mount'\n\t\t\t\tability in the origin file system"),
    ("create", "subcommand", "Must also have the 'mount' ability"),
    ("destroy", "subcommand", "Must also have the 'mount' ability"),
    ("diff", "subcommand", "Allows lookup of paths within a dataset;\n\t\t\t\tgiven an object number. Ordinary users need this\n\t\t\t\tin order to use zfs diff"),
    ("hold", "subcommand", "Allows adding a user hold to a snapshot"),
    ("mount", "subcommand", "Allows mount/umount of ZFS datasets"),
    ("promote", "subcommand", "Must also have the 'mount'\n\t\t\t\tand 'promote' ability in the origin file system"),
    ("receive", "subcommand", "Must also have the 'mount' and 'create' ability"),
    ("release", "subcommand", "Allows releasing a user hold which\n\t\t\t\tmight destroy the snapshot"),
    ("rename", "subcommand", "Must also have the 'mount' and 'create'\n\t\t\t\tability in the new parent"),
    ("rollback", "subcommand", ""),
    ("send", "subcommand", ""),
    ("share", "subcommand", "Allows sharing file systems over NFS or SMB\n\t\t\t\tprotocols"),
    ("snapshot", "subcommand", ""),
    ("bookmark", "subcommand", ""),
    ("load-key", "subcommand", "Allows loading or unloading an encryption key"),
    ("change-key", "subcommand", "Allows changing or adding an encryption key"),
    ("groupquota", "other", "Allows accessing any groupquota@... property"),
    ("groupused", "other", "Allows reading any groupused@... property"),
    ("userprop", "other", "Allows changing any user property"),
    ("userquota", "other", "Allows accessing any userquota@... property"),
    ("userused", "other", "Allows reading any userused@... property"),
    ("userobjquota", "other", "Allows accessing any userobjquota@... property"),
    ("userobjused", "other", "Allows reading any userobjused@... property"),
    ("groupobjquota", "other", "Allows accessing any \n\t\t\t\tgroupobjquota@... property"),
    ("groupobjused", "other", "Allows reading any groupobjused@... property"),
    ("projectused", "other", "Allows reading any projectused@... property"),
    ("projectquota", "other", "Allows accessing any projectquota@... property"),
    ("projectobjused", "other", "Allows accessing any \n\t\t\t\tprojectobjused@... property"),
    ("projectobjquota", "other", "Allows accessing any \n\t\t\t\tprojectobjquota@... property"),
];

/// What `parse_allow_args` ends in: options ready, or the exit code of a printed usage.
enum Parsed {
    Ready,
    Exit(i32),
}

fn run_inner(args: &[String], un: bool, ctx: &mut Ctx) -> Result<i32, CmdError> {
    let parsed = getopt(args, if un { "ldugecsrh" } else { "ldugecsh" })?;
    let mut opts = AllowOpts {
        local: parsed.has('l'),
        descend: parsed.has('d'),
        user: parsed.has('u'),
        group: parsed.has('g'),
        everyone: parsed.has('e'),
        create: parsed.has('c'),
        set: parsed.has('s'),
        recursive: parsed.has('r'),
        prt_usage: parsed.has('h'),
        ..AllowOpts::default()
    };
    let opts = match parse_allow_args(&parsed.operands, un, &mut opts, ctx)? {
        Parsed::Ready => std::mem::take(&mut opts),
        Parsed::Exit(code) => return Ok(code),
    };
    let dataset = opts.dataset.clone();
    let opened = open_filesystem(&dataset);
    let Some(mut imported) = opened else {
        ctx.warn(&format!(
            "cannot open '{dataset}': dataset does not exist\nFailed to open dataset: {dataset}\n"
        ));
        return Ok(255);
    };
    let tables = imported
        .spa
        .deleg_get(&dataset)
        .map_err(crate::zfs::spa_fail)?;
    if opts.prt_perms {
        ctx.print(&format_fs_perms(&tables));
        return Ok(0);
    }
    let entries = match construct_fsacl_list(&opts) {
        Ok(entries) => entries,
        Err(message) => return Ok(allow_usage(un, true, Some(&message), ctx)),
    };
    let cannot = format!("cannot set permissions on '{dataset}'");
    pool::writable(&imported, &cannot)?;
    let cred = crate::daemon::caller();
    if !crate::daemon::privileged(&cred) {
        let allowed = if un {
            can_unallow(&mut imported, &dataset, &entries, &cred)
        } else {
            can_allow(&mut imported, &dataset, &entries, &cred)
        }
        .map_err(crate::zfs::spa_fail)?;
        if !allowed {
            return Err(CmdError::Fail(format!("{cannot}: permission denied")));
        }
    }
    set_fsacl(&mut imported, &dataset, &entries, un)?;
    if un && opts.recursive {
        let children: Vec<String> = imported
            .spa
            .dataset_names()
            .map_err(crate::zfs::spa_fail)?
            .into_iter()
            .filter(|n| {
                n.strip_prefix(&format!("{dataset}/"))
                    .is_some_and(|rest| !rest.contains('/') && !rest.contains('%'))
            })
            .collect();
        for child in children {
            set_fsacl(&mut imported, &child, &entries, un)?;
        }
    }
    let verb = if un { "unallow" } else { "allow" };
    crate::zfs::finish(&mut imported, verb, args)?;
    Ok(0)
}

/// `zfs_set_fsacl`: the engine's store, its refusals in libzfs's words.
fn set_fsacl(
    imported: &mut Imported,
    dataset: &str,
    entries: &[DelegEntry],
    un: bool,
) -> Result<(), CmdError> {
    let cannot = format!("cannot set permissions on '{dataset}'");
    match imported.spa.deleg_set(dataset, entries, un) {
        Ok(()) => Ok(()),
        Err(SpaError::Dsl(DslError::InvalidDelegation { .. })) => Err(CmdError::Fail(format!(
            "{cannot}: operation not applicable to datasets of this type"
        ))),
        Err(SpaError::Dsl(DslError::NoSuchDataset { .. })) => {
            Err(CmdError::Fail(format!("{cannot}: dataset does not exist")))
        }
        Err(e) => Err(CmdError::Fail(format!(
            "{cannot}: {}",
            pool::spa_error_text(&e)
        ))),
    }
}

/// The pool of a filesystem or volume name, opened, when the dataset exists.
fn open_filesystem(name: &str) -> Option<Imported> {
    if name.contains('@') || name.contains('#') {
        return None;
    }
    let pool_name = name.split('/').next().unwrap_or(name);
    let imported = pool::open_pool(pool_name).ok()?;
    matches!(imported.spa.lookup_dir(name), Ok(Some(_))).then_some(imported)
}

/// `munge_args`: the dataset (last operand) and the permissions (the one before), or the
/// usage error.
fn munge_args(
    operands: &[String],
    un: bool,
    expected: usize,
    opts: &mut AllowOpts,
) -> Result<(), &'static str> {
    let count = operands.len();
    if un && count + 1 == expected {
        opts.perms = None;
    } else if count == expected {
        opts.perms = Some(operands[count - 2].clone());
    } else {
        return Err("wrong number of parameters\n");
    }
    opts.dataset = operands[count - 1].clone();
    Ok(())
}

/// `parse_allow_args`.
fn parse_allow_args(
    operands: &[String],
    un: bool,
    opts: &mut AllowOpts,
    ctx: &mut Ctx,
) -> Result<Parsed, CmdError> {
    let uge_sum = [opts.user, opts.group, opts.everyone]
        .iter()
        .filter(|b| **b)
        .count();
    let csuge_sum = uge_sum + opts.create as usize + opts.set as usize;
    let ldcsuge_sum = csuge_sum + opts.local as usize + opts.descend as usize;
    let all_sum = ldcsuge_sum + (un && opts.recursive) as usize;
    let refuse =
        |message: &str, ctx: &mut Ctx| Ok(Parsed::Exit(allow_usage(un, false, Some(message), ctx)));
    if uge_sum > 1 {
        return refuse("-u, -g, and -e are mutually exclusive\n", ctx);
    }
    if opts.prt_usage {
        if operands.is_empty() && all_sum == 0 {
            return Ok(Parsed::Exit(allow_usage(un, true, None, ctx)));
        }
        return Err(CmdError::Usage(String::new()));
    }
    let munged = if opts.set {
        if csuge_sum > 1 {
            return refuse("invalid options combined with -s\n", ctx);
        }
        let munged = munge_args(operands, un, 3, opts);
        if munged.is_ok() {
            if !operands[0].starts_with('@') {
                return refuse("invalid set name: missing '@' prefix\n", ctx);
            }
            opts.who = Some(operands[0].clone());
        }
        munged
    } else if opts.create {
        if ldcsuge_sum > 1 {
            return refuse("invalid options combined with -c\n", ctx);
        }
        munge_args(operands, un, 2, opts)
    } else if opts.everyone {
        if csuge_sum > 1 {
            return refuse("invalid options combined with -e\n", ctx);
        }
        munge_args(operands, un, 2, opts)
    } else if uge_sum == 0 && operands.first().is_some_and(|w| w == "everyone") {
        opts.everyone = true;
        munge_args(&operands[1..], un, 2, opts)
    } else if operands.len() == 1 && !un {
        opts.prt_perms = true;
        opts.dataset = operands[0].clone();
        Ok(())
    } else {
        let munged = munge_args(operands, un, 3, opts);
        if munged.is_ok() {
            opts.who = Some(operands[0].clone());
        }
        munged
    };
    if let Err(message) = munged {
        return refuse(message, ctx);
    }
    if !opts.local && !opts.descend {
        opts.local = true;
        opts.descend = true;
    }
    Ok(Parsed::Ready)
}

/// `store_allow_perm`: the who-keys of one who (`who`: a uid, gid or set name; None for
/// everyone and create-time), each with the permissions or the sets of `perms`.
fn store_allow_perm(
    base_type: char,
    local: bool,
    descend: bool,
    who: Option<&str>,
    perms: Option<&str>,
    out: &mut Vec<DelegEntry>,
) {
    let set_type = base_type.to_ascii_uppercase();
    let localities: Vec<char> = match base_type {
        's' | 'c' => vec!['-'],
        _ => [(local, 'l'), (descend, 'd')]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| *c)
            .collect(),
    };
    let key = |kind: char, locality: char| format!("{kind}{locality}${}", who.unwrap_or(""));
    let mut push = |whokey: String, perms: Option<Vec<String>>| {
        // nvlist_add_nvlist on an NV_UNIQUE_NAME list replaces a key given twice.
        out.retain(|e| e.whokey != whokey);
        out.push(DelegEntry { whokey, perms });
    };
    let Some(perms) = perms else {
        for locality in localities {
            push(key(base_type, locality), None);
            push(key(set_type, locality), None);
        }
        return;
    };
    let mut base: Vec<String> = Vec::new();
    let mut sets: Vec<String> = Vec::new();
    for perm in perms.split(',').filter(|p| !p.is_empty()) {
        let list = if perm.starts_with('@') {
            &mut sets
        } else {
            &mut base
        };
        if !list.iter().any(|p| p == perm) {
            list.push(perm.to_string());
        }
    }
    for locality in localities {
        if !base.is_empty() {
            push(key(base_type, locality), Some(base.clone()));
        }
        if !sets.is_empty() {
            push(key(set_type, locality), Some(sets.clone()));
        }
    }
}

/// `construct_fsacl_list`: the request's who-keys; Err is `allow_usage`'s message for a
/// user or group that does not exist.
fn construct_fsacl_list(opts: &AllowOpts) -> Result<Vec<DelegEntry>, String> {
    let mut out = Vec::new();
    let perms = opts.perms.as_deref();
    if opts.set {
        store_allow_perm(
            's',
            opts.local,
            opts.descend,
            opts.who.as_deref(),
            perms,
            &mut out,
        );
        return Ok(out);
    }
    if opts.create {
        store_allow_perm('c', opts.local, opts.descend, None, perms, &mut out);
        return Ok(out);
    }
    if opts.everyone {
        store_allow_perm('e', opts.local, opts.descend, None, perms, &mut out);
        return Ok(out);
    }
    for who in opts.who.as_deref().unwrap_or_default().split(',') {
        if who.is_empty() {
            continue;
        }
        let number = parse_c_number(who);
        let (kind, id) = if opts.user {
            match (number, user_by_name(who)) {
                (_, Some(uid)) if number.is_none() => ('u', uid),
                (Some(id), _) => ('u', id),
                _ => return Err(format!("invalid user {who}\n")),
            }
        } else if opts.group {
            match (number, group_by_name(who)) {
                (_, Some(gid)) if number.is_none() => ('g', gid),
                (Some(id), _) => ('g', id),
                _ => return Err(format!("invalid group {who}\n")),
            }
        } else {
            let user = match number {
                Some(id) => user_name(id).map(|_| id),
                None => user_by_name(who),
            };
            let group = match number {
                Some(id) => group_name(id).map(|_| id),
                None => group_by_name(who),
            };
            match (user, group) {
                (Some(uid), _) => ('u', uid),
                (None, Some(gid)) => ('g', gid),
                _ => return Err(format!("invalid user/group {who}\n")),
            }
        };
        store_allow_perm(
            kind,
            opts.local,
            opts.descend,
            Some(&id.to_string()),
            perms,
            &mut out,
        );
    }
    Ok(out)
}

/// `strtol(s, &end, 0)` consuming the whole string (decimal, 0x hex, 0 octal).
fn parse_c_number(text: &str) -> Option<u32> {
    let (digits, radix) = if let Some(hex) = text.strip_prefix("0x").or(text.strip_prefix("0X")) {
        (hex, 16)
    } else if text.len() > 1 && text.starts_with('0') {
        (&text[1..], 8)
    } else {
        (text, 10)
    };
    i64::from_str_radix(digits, radix).ok().map(|n| n as u32)
}

/// One field of the line of `file` (`/etc/passwd`, `/etc/group`) whose field `key_index`
/// is `key`: its name (0) and id (2).
fn account_lookup(file: &str, key_index: usize, key: &str) -> Option<(String, u32)> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() < 3 || fields.get(key_index) != Some(&key) {
            return None;
        }
        Some((fields[0].to_string(), fields[2].parse().ok()?))
    })
}

/// `getpwnam`: the uid of a user name.
pub fn user_by_name(name: &str) -> Option<u32> {
    account_lookup("/etc/passwd", 0, name).map(|(_, id)| id)
}

/// `getgrnam`: the gid of a group name.
pub fn group_by_name(name: &str) -> Option<u32> {
    account_lookup("/etc/group", 0, name).map(|(_, id)| id)
}

/// `getpwuid`: the name of a uid.
pub fn user_name(uid: u32) -> Option<String> {
    account_lookup("/etc/passwd", 2, &uid.to_string()).map(|(name, _)| name)
}

/// `getgrgid`: the name of a gid.
pub fn group_name(gid: u32) -> Option<String> {
    account_lookup("/etc/group", 2, &gid.to_string()).map(|(name, _)| name)
}

/// `dsl_deleg_can_allow`: `allow`, never `allow` itself, and each permission handed out.
fn can_allow(
    imported: &mut Imported,
    dataset: &str,
    entries: &[DelegEntry],
    cred: &Cred,
) -> Result<bool, SpaError> {
    if !imported.spa.deleg_access(dataset, "allow", cred)? {
        return Ok(false);
    }
    for perm in entries.iter().flat_map(|e| e.perms.iter().flatten()) {
        if perm == "allow" || !imported.spa.deleg_access(dataset, perm, cred)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `dsl_deleg_can_unallow`: `allow`, and only this caller's own user entries.
fn can_unallow(
    imported: &mut Imported,
    dataset: &str,
    entries: &[DelegEntry],
    cred: &Cred,
) -> Result<bool, SpaError> {
    if !imported.spa.deleg_access(dataset, "allow", cred)? {
        return Ok(false);
    }
    let own = cred.uid.to_string();
    Ok(entries.iter().all(|e| {
        let kind = e.whokey.as_bytes().first().copied();
        matches!(kind, Some(b'u' | b'U')) && e.whokey.get(3..) == Some(own.as_str())
    }))
}

/// One who of `print_fs_perms`'s trees: its type weight and name (the AVL order), its
/// label, and each permission with whether it is local, descendent.
struct WhoPerms {
    label: Option<String>,
    perms: BTreeMap<String, (bool, bool)>,
}

/// `who_type2weight`.
fn weight(kind: u8) -> u8 {
    match kind.to_ascii_lowercase() {
        b's' => 0,
        b'c' => 1,
        b'u' => 2,
        b'g' => 3,
        _ => 4,
    }
}

/// `print_fs_perms` over `dsl_deleg_get`'s tables.
pub fn format_fs_perms(tables: &[(String, DelegTable)]) -> String {
    let mut text = String::new();
    for (dsname, table) in tables {
        let head = format!("---- Permissions on {dsname} ");
        text.push_str(&head);
        text.push_str(&"-".repeat(70usize.saturating_sub(head.len())));
        text.push('\n');
        // (weight, who name) -> perms: the set/create tree and the user/group/everyone one.
        let mut sc: BTreeMap<(u8, String), WhoPerms> = BTreeMap::new();
        let mut uge: BTreeMap<(u8, String), WhoPerms> = BTreeMap::new();
        for (whokey, perms) in table {
            let bytes = whokey.as_bytes();
            if bytes.len() < 3 {
                continue;
            }
            let (kind, locality, name) = (bytes[0], bytes[1], &whokey[3..]);
            let key = (weight(kind), name.to_string());
            let tree = if weight(kind) < 2 { &mut sc } else { &mut uge };
            let who = tree.entry(key).or_insert_with(|| WhoPerms {
                label: match kind.to_ascii_lowercase() {
                    b'u' => Some(format!(
                        "user {}",
                        name.parse()
                            .ok()
                            .and_then(user_name)
                            .unwrap_or_else(|| format!("(unknown: {name})"))
                    )),
                    b'g' => Some(format!(
                        "group {}",
                        name.parse()
                            .ok()
                            .and_then(group_name)
                            .unwrap_or_else(|| format!("(unknown: {name})"))
                    )),
                    b'e' => Some("everyone".to_string()),
                    _ => None,
                },
                perms: BTreeMap::new(),
            });
            for perm in perms {
                let flags = who.perms.entry(perm.clone()).or_insert((false, false));
                match locality {
                    b'l' => flags.0 = true,
                    b'd' => flags.1 = true,
                    _ => {}
                }
            }
        }
        // print_set_creat_perms.
        let mut previous = None;
        for ((weight, name), who) in &sc {
            if previous != Some(*weight) {
                text.push_str(if *weight == 0 {
                    "Permission sets:\n"
                } else {
                    "Create time permissions:\n"
                });
                previous = Some(*weight);
            }
            if name.is_empty() {
                text.push('\t');
            } else {
                text.push_str(&format!("\t{name} "));
            }
            let names: Vec<&str> = who.perms.keys().map(String::as_str).collect();
            text.push_str(&names.join(","));
            text.push('\n');
        }
        // print_uge_deleg_perms, three times.
        for (local, descend, title) in [
            (true, false, "Local permissions:\n"),
            (false, true, "Descendent permissions:\n"),
            (true, true, "Local+Descendent permissions:\n"),
        ] {
            let mut titled = false;
            for who in uge.values() {
                let names: Vec<&str> = who
                    .perms
                    .iter()
                    .filter(|(_, flags)| **flags == (local, descend))
                    .map(|(name, _)| name.as_str())
                    .collect();
                if names.is_empty() {
                    continue;
                }
                if !titled {
                    text.push_str(title);
                    titled = true;
                }
                text.push_str(&format!(
                    "\t{} {}\n",
                    who.label.as_deref().unwrap_or("everyone"),
                    names.join(",")
                ));
            }
        }
    }
    text
}

/// Whether `perm` names a permission (for the daemon's checks).
pub fn is_permission(perm: &str) -> bool {
    PERMISSIONS.contains(&perm)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(who: &str, perms: &str) -> AllowOpts {
        AllowOpts {
            local: true,
            descend: true,
            who: Some(who.to_string()),
            perms: Some(perms.to_string()),
            ..AllowOpts::default()
        }
    }

    /// Why: the who-keys are what OpenZFS's `store_allow_perm` sends and the kernel stores;
    /// a different key would write a pool whose delegations OpenZFS does not see.
    #[test]
    fn store_allow_perm_builds_openzfs_keys() {
        let entries = construct_fsacl_list(&opts("0", "create,@basic,mount")).unwrap();
        let keys: Vec<(&str, Vec<String>)> = entries
            .iter()
            .map(|e| (e.whokey.as_str(), e.perms.clone().unwrap()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("ul$0", vec!["create".to_string(), "mount".to_string()]),
                ("Ul$0", vec!["@basic".to_string()]),
                ("ud$0", vec!["create".to_string(), "mount".to_string()]),
                ("Ud$0", vec!["@basic".to_string()]),
            ]
        );
        let mut set = opts("@basic", "snapshot");
        set.set = true;
        let entries = construct_fsacl_list(&set).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].whokey, "s-$@basic");
        assert!(construct_fsacl_list(&opts("no-such-user-xyz", "create")).is_err());
    }

    /// Why: `zfs allow fs`'s layout is OpenZFS's (`print_fs_perms`): sets and create-time
    /// permissions first, then local, descendent and local+descendent, `-` to column 70.
    #[test]
    fn listing_matches_print_fs_perms() {
        let table: DelegTable = vec![
            ("c-$".into(), vec!["destroy".into()]),
            ("el$".into(), vec!["diff".into()]),
            ("s-$@basic".into(), vec!["mount".into(), "snapshot".into()]),
            ("ud$0".into(), vec!["create".into(), "mount".into()]),
            ("ul$0".into(), vec!["create".into()]),
        ];
        let text = format_fs_perms(&[("tank/home".to_string(), table)]);
        assert_eq!(
            text,
            "---- Permissions on tank/home ----------------------------------------\n\
             Permission sets:\n\t@basic mount,snapshot\n\
             Create time permissions:\n\tdestroy\n\
             Local permissions:\n\teveryone diff\n\
             Descendent permissions:\n\tuser root mount\n\
             Local+Descendent permissions:\n\tuser root create\n"
        );
    }
}
