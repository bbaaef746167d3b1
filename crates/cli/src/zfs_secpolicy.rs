//! Who may run which command (OpenZFS `zfs_ioctl.c`: the `zfs_secpolicy_*` function each
//! ioctl names, over `dsl_deleg_access`).
//!
//! Theory. OpenZFS checks every ioctl in the kernel against the caller's credentials:
//! root (`secpolicy_zfs`) may do anything; anyone else only what `zfs allow` delegated on
//! the dataset or an ancestor (`zetta::dsl::deleg`). Zetta's daemon runs the commands, so
//! the check is made once per command, before it runs, for a caller that is neither root
//! nor the daemon's own user (`daemon::privileged`): the command's operands are read as
//! OpenZFS's policy reads the ioctl's names, and each permission the policy names is
//! checked. A refusal is worded as libzfs words EPERM for that command ("cannot create
//! 'tank/x': permission denied"), exit 1. Reading (`list`, `get`, `holds`, `zfs allow
//! fs`, `zpool list/status/get/iostat`) needs no permission, as in OpenZFS; pool commands
//! that change anything stay root's (`zfs_secpolicy_config`).
//!
//! Policies (OpenZFS's): create = create+mount on the parent; clone = that, plus clone
//! and mount on the origin; snapshot = snapshot on each filesystem (and its descendants
//! with -r); destroy = mount+destroy on the target (a snapshot is checked as a
//! descendent of its filesystem); rename = rename+mount on the source and create+mount
//! on the new parent; rollback, promote (+mount), send, hold, release, bookmark, diff =
//! the permission of that name; receive = receive+mount+create; set and inherit = the
//! property's own name, `userprop` for a user property; mount and unmount = mount.
//!
//! Zetta's choices: the nearest existing ancestor stands for a parent `-p` or a receive
//! will create (OpenZFS checks each level as it is created, each inheriting the same
//! descendent permissions); a dataset that does not exist is left to the command, which
//! says so in its own words; `zfs mount -a` and `zfs unmount -a` are root's (they act on
//! every dataset); a mount is made by the daemon through FUSE (the caller needs no mount
//! rights of its own, only the `mount` permission; the mount belongs to the daemon's user).

use crate::zpool::pool;
use crate::zpool::CmdError;
use zetta::dsl::deleg::Cred;

/// The zpool subcommands anyone may run (they only read).
const ZPOOL_READERS: &[&str] = &[
    "list", "status", "get", "iostat", "version", "help", "-?", "-h", "--help",
];

/// The refusal of a pool command for a caller that is not root (`zfs_secpolicy_config`).
pub fn check_zpool(args: &[String], cred: &Cred) -> Result<(), String> {
    let Some(command) = args.first() else {
        return Ok(());
    };
    if crate::daemon::privileged(cred) || ZPOOL_READERS.contains(&command.as_str()) {
        return Ok(());
    }
    let operand = args[1..]
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    Err(format!("cannot {command} '{operand}': permission denied"))
}

/// One permission to hold on one dataset, and the words of the refusal.
struct Need {
    dataset: String,
    perms: Vec<&'static str>,
    refusal: String,
}

fn need(dataset: &str, perms: &[&'static str], refusal: String) -> Need {
    Need {
        dataset: dataset.to_string(),
        perms: perms.to_vec(),
        refusal,
    }
}

/// The parent of a dataset or snapshot name (`tank/a/b` -> `tank/a`, `tank/a@s` -> `tank/a`).
fn parent_of(name: &str) -> &str {
    if let Some((fs, _)) = name.split_once('@') {
        return fs;
    }
    name.rsplit_once('/').map_or(name, |(parent, _)| parent)
}

/// The refusal of a command line the policy cannot read (an option it does not know):
/// refused rather than run unchecked.
fn unreadable(command: &str) -> CmdError {
    CmdError::Fail(format!("cannot {command}: permission denied"))
}

/// The operands of `args` after getopt with `spec`.
fn operands(args: &[String], spec: &str) -> Option<crate::zpool::Parsed> {
    crate::zpool::getopt(args, spec).ok()
}

/// `zfs_secpolicy_*` for zfs subcommand `command`: Ok when the caller may run it, else
/// the refusal.
pub fn check_zfs(command: &str, args: &[String], cred: &Cred) -> Result<(), CmdError> {
    if crate::daemon::privileged(cred) {
        return Ok(());
    }
    let refuse = |text: String| CmdError::Fail(format!("{text}: permission denied"));
    let mut needs: Vec<Need> = Vec::new();
    match command {
        "list" | "get" | "holds" | "version" | "-V" | "--version" | "help" | "-?" | "-h"
        | "--help" | "allow" | "unallow" => return Ok(()),
        "create" => {
            let Some(parsed) = operands(args, "bo:pPnsuvV:") else {
                return Err(unreadable(command));
            };
            let Some(name) = parsed.operands.first() else {
                return Err(unreadable(command));
            };
            needs.push(need(
                parent_of(name),
                &["create", "mount"],
                format!("cannot create '{name}'"),
            ));
            option_props(&mut needs, &parsed, parent_of(name), name);
        }
        "clone" => {
            let Some(parsed) = operands(args, "o:p") else {
                return Err(unreadable(command));
            };
            if let [origin, name, ..] = parsed.operands.as_slice() {
                needs.push(need(
                    origin,
                    &["clone", "mount"],
                    format!("cannot create '{name}'"),
                ));
                needs.push(need(
                    parent_of(name),
                    &["create", "mount"],
                    format!("cannot create '{name}'"),
                ));
                option_props(&mut needs, &parsed, parent_of(name), name);
            }
        }
        "snapshot" | "snap" => {
            let Some(parsed) = operands(args, "ro:") else {
                return Err(unreadable(command));
            };
            for name in &parsed.operands {
                let fs = parent_of(name);
                let refusal = format!("cannot create snapshot '{name}'");
                needs.push(need(fs, &["snapshot"], refusal.clone()));
                if parsed.has('r') {
                    for child in descendants(fs) {
                        needs.push(need(&child, &["snapshot"], refusal.clone()));
                    }
                }
            }
        }
        "destroy" => {
            let Some(parsed) = operands(args, "dfnpRrv") else {
                return Err(unreadable(command));
            };
            let Some(name) = parsed.operands.first() else {
                return Err(unreadable(command));
            };
            let target = match name.split_once('@') {
                // Every snapshot of one filesystem is checked alike (a descendent of it).
                Some((fs, snaps)) => {
                    let first = snaps.split([',', '%']).next().unwrap_or(snaps);
                    format!("{fs}@{first}")
                }
                None => name.split('#').next().unwrap_or(name).to_string(),
            };
            let refusal = format!("cannot destroy '{name}'");
            needs.push(need(&target, &["mount", "destroy"], refusal.clone()));
            if parsed.has('r') || parsed.has('R') {
                let (fs, snap) = target.split_once('@').unwrap_or((&target, ""));
                for child in descendants(fs) {
                    let child = if snap.is_empty() {
                        child
                    } else {
                        format!("{child}@{snap}")
                    };
                    needs.push(need(&child, &["mount", "destroy"], refusal.clone()));
                }
            }
        }
        "rename" => {
            let Some(parsed) = operands(args, "fpru") else {
                return Err(unreadable(command));
            };
            if let [from, to, ..] = parsed.operands.as_slice() {
                let refusal = format!("cannot rename '{from}'");
                needs.push(need(from, &["rename", "mount"], refusal.clone()));
                needs.push(need(parent_of(to), &["create", "mount"], refusal));
            }
        }
        "rollback" => {
            let Some(parsed) = operands(args, "rRf") else {
                return Err(unreadable(command));
            };
            if let Some(name) = parsed.operands.first() {
                needs.push(need(
                    parent_of(name),
                    &["rollback"],
                    format!("cannot rollback to '{name}'"),
                ));
            }
        }
        "promote" => {
            if let Some(name) = args.iter().find(|a| !a.starts_with('-')) {
                needs.push(need(
                    name,
                    &["promote", "mount"],
                    format!("cannot promote '{name}'"),
                ));
            }
        }
        "set" | "inherit" => {
            let (props, targets): (Vec<String>, Vec<String>) = if command == "set" {
                let Some(parsed) = operands(args, "u") else {
                    return Err(unreadable(command));
                };
                let split = parsed
                    .operands
                    .iter()
                    .position(|a| !a.contains('='))
                    .unwrap_or(parsed.operands.len());
                let props = parsed.operands[..split]
                    .iter()
                    .map(|a| a.split('=').next().unwrap_or(a).to_string())
                    .collect();
                (props, parsed.operands[split..].to_vec())
            } else {
                let Some(parsed) = operands(args, "rS") else {
                    return Err(unreadable(command));
                };
                match parsed.operands.split_first() {
                    Some((prop, targets)) => (vec![prop.clone()], targets.to_vec()),
                    None => return Ok(()),
                }
            };
            for target in &targets {
                for prop in &props {
                    let refusal = if command == "set" {
                        format!("cannot set property for '{target}'")
                    } else {
                        format!("cannot inherit {prop} for {target}")
                    };
                    needs.push(Need {
                        dataset: target.clone(),
                        perms: vec![],
                        refusal,
                    });
                    let last = needs.len() - 1;
                    needs[last].perms = vec![property_permission(prop)];
                }
            }
        }
        "mount" | "unmount" | "umount" => {
            let spec = if command == "mount" { "ajvlfo:O" } else { "af" };
            let Some(parsed) = operands(args, spec) else {
                return Err(unreadable(command));
            };
            let verb = if command == "mount" {
                "mount"
            } else {
                "unmount"
            };
            if parsed.has('a') {
                return Err(refuse(format!("cannot {verb} '-a'")));
            }
            if let Some(target) = parsed.operands.first() {
                let name = if target.starts_with('/') {
                    crate::daemon::mounts::mounted_list()
                        .into_iter()
                        .find(|(_, path)| path == std::path::Path::new(target))
                        .map(|(name, _)| name)
                        .unwrap_or_default()
                } else {
                    target.clone()
                };
                if !name.is_empty() {
                    needs.push(need(&name, &["mount"], format!("cannot {verb} '{target}'")));
                }
            }
        }
        "send" => {
            let Some(name) = args.iter().rev().find(|a| !a.starts_with('-')) else {
                return Err(unreadable(command));
            };
            needs.push(need(name, &["send"], format!("cannot send '{name}'")));
        }
        "receive" | "recv" => {
            let Some(parsed) = operands(args, "o:x:dehMnsvFuA") else {
                return Err(unreadable(command));
            };
            if let Some(name) = parsed.operands.first() {
                let fs = name.split('@').next().unwrap_or(name);
                needs.push(need(
                    fs,
                    &["receive", "mount", "create"],
                    "cannot receive new filesystem stream".to_string(),
                ));
                option_props(&mut needs, &parsed, fs, fs);
                for prop in parsed.values('x') {
                    needs.push(need(
                        fs,
                        &[property_permission(&prop)],
                        format!("cannot receive '{fs}'"),
                    ));
                }
            }
        }
        "hold" | "release" => {
            let Some(parsed) = operands(args, "r") else {
                return Err(unreadable(command));
            };
            for name in parsed.operands.iter().skip(1) {
                let (perm, refusal) = if command == "hold" {
                    ("hold", format!("cannot hold snapshot '{name}'"))
                } else {
                    (
                        "release",
                        format!("cannot release hold from snapshot '{name}'"),
                    )
                };
                needs.push(Need {
                    dataset: name.clone(),
                    perms: vec![perm],
                    refusal,
                });
            }
        }
        "bookmark" => {
            if let Some(name) = args.iter().find(|a| !a.starts_with('-')) {
                needs.push(need(
                    name,
                    &["bookmark"],
                    format!("cannot create bookmark '{name}'"),
                ));
            }
        }
        // zfs_secpolicy_userspace_many: the used and quota permissions of the listing's
        // kind (`zfs userspace` reads both).
        "userspace" | "groupspace" | "projectspace" => {
            let kind = command.trim_end_matches("space");
            let perms: &[&'static str] = match kind {
                "user" => &["userused", "userquota"],
                "group" => &["groupused", "groupquota"],
                _ => &["projectused", "projectquota"],
            };
            if let Some(name) = args.iter().rev().find(|a| !a.starts_with('-')) {
                needs.push(need(
                    name,
                    perms,
                    format!("cannot get used/quota for {name}"),
                ));
            }
        }
        "diff" => {
            if let Some(name) = args.iter().find(|a| !a.starts_with('-')) {
                needs.push(need(name, &["diff"], format!("cannot diff '{name}'")));
            }
        }
        other => {
            let operand = args
                .iter()
                .rev()
                .find(|a| !a.starts_with('-'))
                .cloned()
                .unwrap_or_default();
            return Err(refuse(format!("cannot {other} '{operand}'")));
        }
    }
    for need in needs {
        for perm in &need.perms {
            if !holds(&need.dataset, perm, cred)? {
                return Err(refuse(need.refusal));
            }
        }
    }
    Ok(())
}

/// The permission that sets or inherits `prop` (`zfs_secpolicy_setprop`).
/// Each `-o prop=value` of a create, clone or receive needs that property's permission
/// (OpenZFS's `zfs_ioc_create` sets them through `zfs_set_prop_nvlist`, which checks
/// `zfs_check_settable`): without it, `create -o mountpoint=/etc` would be a way around
/// the `mountpoint` permission.
fn option_props(needs: &mut Vec<Need>, parsed: &crate::zpool::Parsed, on: &str, name: &str) {
    for option in parsed.values('o') {
        let prop = option.split('=').next().unwrap_or(&option);
        needs.push(need(
            on,
            &[property_permission(prop)],
            format!("cannot create '{name}'"),
        ));
    }
}

fn property_permission(prop: &str) -> &'static str {
    if prop.contains(':') {
        return "userprop";
    }
    for (prefix, perm) in [
        ("userquota@", "userquota"),
        ("groupquota@", "groupquota"),
        ("userobjquota@", "userobjquota"),
        ("groupobjquota@", "groupobjquota"),
        ("projectquota@", "projectquota"),
        ("projectobjquota@", "projectobjquota"),
    ] {
        if prop.starts_with(prefix) {
            return perm;
        }
    }
    match zetta_zprop::ZfsProp::from_name(prop) {
        Some(p) => p.name(),
        // An unknown property: the command refuses it in its own words; this check
        // must not pass it on a name nobody can hold.
        None => "userprop",
    }
}

/// Whether `cred` holds `perm` on `dataset`; a dataset or pool that does not exist counts
/// as its nearest existing ancestor's (the command then says what is missing).
fn holds(dataset: &str, perm: &str, cred: &Cred) -> Result<bool, CmdError> {
    let pool_name = crate::zfs::pool_of(dataset);
    let Ok(imported) = pool::open_pool_shared(pool_name) else {
        return Ok(true);
    };
    let mut name = dataset.to_string();
    loop {
        let fs = name.split('@').next().unwrap_or(&name).to_string();
        match imported.spa.lookup_dir(&fs) {
            Ok(Some(_)) => break,
            _ if !fs.contains('/') => return Ok(true),
            _ => name = parent_of(&fs).to_string(),
        }
    }
    imported
        .spa
        .deleg_access(&name, perm, cred)
        .map_err(crate::zfs::spa_fail)
}

/// Every filesystem and volume below `fs` (its pool's names).
fn descendants(fs: &str) -> Vec<String> {
    // dataset_names walks with the pool held exclusively.
    let Ok(mut imported) = pool::open_pool(crate::zfs::pool_of(fs)) else {
        return Vec::new();
    };
    imported
        .spa
        .dataset_names()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(&format!("{fs}/")) && !n.contains('%'))
        .collect()
}
