//! `zpool import` of real OpenZFS pools, beside Zetta's own (OpenZFS `show_import`,
//! `print_import_config`, `print_class_vdevs`, `do_import` in `cmd/zpool/zpool_main.c`).
//!
//! Discovery and the verdict on each pool (`zetta::spa::openzfs::discover`) come from the
//! labels alone; this module prints them in OpenZFS 2.3's layout, word for word, and imports
//! them read-only (`zpool import -o readonly=on`): the engine reads the pool through the
//! OpenZFS codecs (`zetta::spa::openzfs::import`) and the daemon holds and mounts it like
//! any read-only pool. A read-write import is refused until Zetta writes OpenZFS's format;
//! a refusal never touches the devices.

use super::pool::{self, Imported};
use super::props::{self, Phase};
use super::{split_prop, CmdError, CmdResult, Ctx};
use zetta::io::DeviceRef;
use zetta::spa::openzfs::discover::{self, ImportVdev, OpenZfsCandidate, Status};
use zetta::spa::{check_pool_name, Spa};
use zetta::vdev::openzfs::label::pool_state;

/// This host's id as OpenZFS's `get_system_hostid` finds it without its kernel module:
/// `/etc/hostid` (a native-endian u32), else 0.
pub fn system_hostid() -> u64 {
    match std::fs::read("/etc/hostid") {
        Ok(bytes) if bytes.len() >= 4 => {
            u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64
        }
        _ => 0,
    }
}

/// The OpenZFS pools on `devices`.
pub fn find(devices: &[DeviceRef]) -> Vec<OpenZfsCandidate> {
    discover::find_pools(devices, system_hostid())
}

fn width(vdev: &ImportVdev, depth: usize, max: usize) -> usize {
    vdev.children
        .iter()
        .fold(max.max(vdev.name.len() + depth), |m, c| {
            width(c, depth + 2, m)
        })
}

fn rows(vdev: &ImportVdev, name: &str, depth: usize, namewidth: usize, out: &mut String) {
    if vdev.hidden {
        return;
    }
    out.push_str(&format!(
        "\t{:depth$}{name:<w$}  {}",
        "",
        discover::state_name(vdev.state, vdev.aux),
        w = namewidth.saturating_sub(depth)
    ));
    if let Some(aux) = vdev.aux {
        out.push_str("  ");
        out.push_str(aux.text());
    }
    out.push('\n');
    for child in vdev.children.iter().filter(|c| !c.is_log) {
        rows(child, &child.name, depth + 2, namewidth, out);
    }
}

/// `show_import` for one OpenZFS pool.
pub fn show(c: &OpenZfsCandidate) -> String {
    let indent = if c.comment.is_some() { " " } else { "" };
    let health = discover::state_name(c.root.state, c.root.aux);
    let mut out = format!("{indent}  pool: {}\n{indent}    id: {}\n", c.name, c.guid);
    out.push_str(&format!("{indent} state: {health}"));
    if c.pool_state == pool_state::DESTROYED {
        out.push_str(" (DESTROYED)");
    }
    out.push('\n');
    let status = match &c.status {
        Status::Ok => String::new(),
        Status::MissingDevR | Status::MissingDevNr | Status::BadGuidSum => {
            "One or more devices are missing from the system.\n".to_string()
        }
        Status::OfflineDev => "One or more devices are offlined.\n".to_string(),
        Status::CorruptPool => "The pool metadata is corrupted.\n".to_string(),
        Status::VersionOlder => "The pool is formatted using a legacy on-disk version.\n".to_string(),
        Status::VersionNewer => {
            "The pool is formatted using an incompatible version.\n".to_string()
        }
        Status::FeatDisabled => format!(
            "Some supported features are not enabled on the pool.\n\t{indent}(Note that they may be intentionally disabled if the\n\t{indent}'compatibility' property is set.)\n"
        ),
        Status::UnsupFeatRead(names) => {
            let mut s =
                "The pool uses the following feature(s) not supported on this system:\n"
                    .to_string();
            for name in names {
                s.push_str(&format!("\t{name}\n"));
            }
            s
        }
        Status::HostidMismatch => "The pool was last accessed by another system.\n".to_string(),
    };
    if !status.is_empty() {
        out.push_str(&format!("{indent}status: {status}"));
    }
    out.push_str(&format!("{indent}action: "));
    out.push_str(&match (c.root.state, &c.status) {
        (discover::State::Online, Status::VersionOlder | Status::FeatDisabled) => format!(
            "The pool can be imported using its name or numeric identifier, though\n\t{indent}some features will not be available without an explicit 'zpool upgrade'.\n"
        ),
        (discover::State::Online, Status::HostidMismatch) => format!(
            "The pool can be imported using its name or numeric identifier and\n\t{indent}the '-f' flag.\n"
        ),
        (discover::State::Online, _) => {
            "The pool can be imported using its name or numeric identifier.\n".to_string()
        }
        (discover::State::Degraded, _) => format!(
            "The pool can be imported despite missing or damaged devices.  The\n\t{indent}fault tolerance of the pool may be compromised if imported.\n"
        ),
        (_, Status::VersionNewer) => format!(
            "The pool cannot be imported.  Access the pool on a system running newer\n\t{indent}software, or recreate the pool from backup.\n"
        ),
        (_, Status::UnsupFeatRead(_)) => format!(
            "The pool cannot be imported. Access the pool on a system that supports\n\t{indent}the required feature(s), or recreate the pool from backup.\n"
        ),
        (_, Status::MissingDevR | Status::MissingDevNr | Status::BadGuidSum) => format!(
            "The pool cannot be imported. Attach the missing\n\t{indent}devices and try again.\n"
        ),
        _ => "The pool cannot be imported due to damaged devices or data.\n".to_string(),
    });
    if let Some(comment) = &c.comment {
        out.push_str(&format!("comment: {comment}\n"));
    }
    if c.root.aux == Some(discover::Aux::CorruptData) {
        if c.pool_state == pool_state::DESTROYED {
            out.push_str(&format!(
                "\t{indent}The pool was destroyed, but can be imported using the '-Df' flags.\n"
            ));
        } else if c.pool_state != pool_state::EXPORTED {
            out.push_str(&format!(
                "\t{indent}The pool may be active on another system, but can be imported using\n\t{indent}the '-f' flag.\n"
            ));
        }
    }
    if let Some(msgid) = c.msgid() {
        out.push_str(&format!(
            "{indent}   see: https://openzfs.github.io/openzfs-docs/msg/{msgid}\n"
        ));
    }
    out.push_str(&format!("{indent}config:\n\n"));
    // The root counts as "root-0" (its nameless vdev name) in OpenZFS's width.
    let namewidth = c
        .root
        .children
        .iter()
        .fold(c.name.len().max("root-0".len()), |m, child| {
            width(child, 2, m)
        })
        .max(10);
    rows(&c.root, &c.name, 0, namewidth, &mut out);
    let logs: Vec<&ImportVdev> = c.root.children.iter().filter(|v| v.is_log).collect();
    if !logs.is_empty() {
        out.push_str("\tlogs\t\n");
        for log in logs {
            rows(log, &log.name, 2, namewidth, &mut out);
        }
    }
    if c.status == Status::BadGuidSum {
        out.push_str(&format!(
            "\n\t{indent}Additional devices are known to be part of this pool, though their\n\t{indent}exact configuration cannot be determined.\n"
        ));
    }
    out
}

/// `zpool import POOL` of an OpenZFS pool: refused, in OpenZFS's words where OpenZFS itself
/// would refuse, else saying the import is not built yet. Nothing is opened for writing.
pub fn refuse(c: &OpenZfsCandidate, ctx: &mut Ctx) -> CmdError {
    let name = &c.name;
    match &c.status {
        Status::VersionNewer => CmdError::Fail(format!(
            "cannot import '{name}': pool is formatted using an unsupported ZFS version"
        )),
        Status::UnsupFeatRead(names) => {
            let mut list =
                "This pool uses the following feature(s) not supported by this system:\n"
                    .to_string();
            for feature in names {
                list.push_str(&format!("\t{feature}\n"));
            }
            ctx.print(&list);
            CmdError::Fail(format!(
                "cannot import '{name}': unsupported version or feature"
            ))
        }
        _ if c.root.state == discover::State::CantOpen => CmdError::Fail(format!(
            "cannot import '{name}': one or more devices is currently unavailable"
        )),
        _ => CmdError::Fail(format!(
            "cannot import '{name}': OpenZFS pools can only be imported read-only for now\nuse 'zpool import -o readonly=on {name}'"
        )),
    }
}

/// Imports one OpenZFS pool (`do_import`): read-only, or refused.
pub fn import(
    c: &OpenZfsCandidate,
    new_name: Option<&str>,
    parsed: &super::Parsed,
    ctx: &mut Ctx,
) -> CmdResult {
    let name = &c.name;
    let action = match new_name {
        Some(new) if new != name => format!("cannot import '{name}' as '{new}'"),
        _ => format!("cannot import '{name}'"),
    };
    if matches!(c.status, Status::VersionNewer | Status::UnsupFeatRead(_))
        || c.root.state == discover::State::CantOpen
    {
        return Err(refuse(c, ctx));
    }
    if force_import_required(c) && !parsed.has('f') {
        let host = c.config.get_str("hostname").unwrap_or("<unknown>");
        let hostid = c.config.get_u64("hostid").unwrap_or(0);
        let when = c.uberblock.as_ref().map_or(0, |ub| ub.timestamp);
        return Err(CmdError::Fail(format!(
            "cannot import '{name}': pool was previously in use from another system.\nLast accessed by {host} (hostid={hostid:x}) at {}\nThe pool can be imported, use 'zpool import -f' to import the pool.",
            zetta_zutil::nicenum::ctime(when as i64)
        )));
    }
    if let Some(new) = new_name {
        check_pool_name(new)
            .map_err(|why| CmdError::Fail(format!("cannot import '{new}': {why}")))?;
        if pool::load_cache()?.iter().any(|e| e.name == new) {
            return Err(CmdError::Fail(format!("{action}: pool already exists")));
        }
    }
    let mut pool_props = Vec::new();
    for option in parsed.values('o') {
        let Some((key, value)) = split_prop(&option) else {
            continue;
        };
        props::validate(key, value, Phase::Import)
            .map_err(|why| CmdError::Fail(format!("{action}: {why}")))?;
        let key = if key == "rdonly" { "readonly" } else { key };
        pool_props.push((key.to_string(), value.to_string()));
    }
    if !pool_props.iter().any(|(k, v)| k == "readonly" && v == "on") {
        return Err(refuse(c, ctx));
    }
    if let Some(root) = parsed.last('R') {
        pool_props.push(("altroot".to_string(), root));
    }
    let mut devices: Vec<DeviceRef> = Vec::new();
    for path in c.devices.values() {
        devices.push(pool::open_device(path).map_err(|e| match e {
            CmdError::Fail(m) => CmdError::Fail(format!("{action}: pool is busy\n{m}")),
            other => other,
        })?);
    }
    let spa = Spa::import_openzfs(c, &devices, new_name)
        .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    let mut imported = Imported::owned(c.guid, spa);
    pool::reset_stats(&mut imported.spa);
    for (key, value) in pool_props {
        imported.spa.props.set_str(&key, &value);
    }
    // A read-only pool logs no history (nothing is written).
    pool::commit(&mut imported)
}

/// `zfs_force_import_required`: the pool was not exported and another host (by hostid)
/// last had it.
fn force_import_required(c: &OpenZfsCandidate) -> bool {
    let hostid = c.config.get_u64("hostid").unwrap_or(0);
    c.pool_state != pool_state::EXPORTED && hostid != system_hostid()
}
