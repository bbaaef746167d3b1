//! Pool properties: `zpool get`, `zpool set`, and `zpool history` (OpenZFS
//! `zpool_prop.c` table, `zpool_get_prop`, `zpool_valid_proplist`, `zpool_do_get`,
//! `zpool_do_set`, `zpool_do_history`).
//!
//! The table below is the source of truth for names, order (that of `zpool get all`),
//! kinds and defaults. Values set by the user live as strings in `spa.props`; computed
//! ones (size, health, ...) come from the engine. SOURCE is `-` for read-only
//! properties, `local` for a value the user set, `default` otherwise. Keys that start
//! with `org.zetta:` or `fs:` are private to Zetta and never shown.

use super::pool::{self, Imported};
use super::{getopt, split_prop, usage, CmdError, CmdResult, Ctx};
use zetta_zutil::list::{format_table, Align, Column};
use zetta_zutil::nicenum::{ctime, nicenum};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Computed by the engine; cannot be set.
    ReadOnly,
    /// One of a fixed list of words.
    Index(&'static [&'static str]),
    /// Free text or a number checked by `validate`.
    Text,
    /// Only at create or import time (altroot, readonly).
    CreateOnly,
}

const ON_OFF: &[&str] = &["on", "off"];

/// (name, kind, default value) in `zpool get all` order.
const POOL_PROPS: &[(&str, Kind, &str)] = &[
    ("size", Kind::ReadOnly, ""),
    ("capacity", Kind::ReadOnly, ""),
    ("altroot", Kind::CreateOnly, "-"),
    ("health", Kind::ReadOnly, ""),
    ("guid", Kind::ReadOnly, ""),
    ("version", Kind::ReadOnly, "-"),
    ("bootfs", Kind::Text, "-"),
    ("delegation", Kind::Index(ON_OFF), "on"),
    ("autoreplace", Kind::Index(ON_OFF), "off"),
    ("cachefile", Kind::Text, "-"),
    (
        "failmode",
        Kind::Index(&["wait", "continue", "panic"]),
        "wait",
    ),
    ("listsnapshots", Kind::Index(ON_OFF), "off"),
    ("autoexpand", Kind::Index(ON_OFF), "off"),
    ("dedupratio", Kind::ReadOnly, ""),
    ("free", Kind::ReadOnly, ""),
    ("allocated", Kind::ReadOnly, ""),
    ("readonly", Kind::CreateOnly, "off"),
    ("ashift", Kind::Text, "0"),
    ("comment", Kind::Text, "-"),
    ("expandsize", Kind::ReadOnly, ""),
    ("freeing", Kind::ReadOnly, ""),
    ("fragmentation", Kind::ReadOnly, ""),
    ("leaked", Kind::ReadOnly, ""),
    ("multihost", Kind::Index(ON_OFF), "off"),
    ("checkpoint", Kind::ReadOnly, ""),
    ("load_guid", Kind::ReadOnly, ""),
    ("autotrim", Kind::Index(ON_OFF), "off"),
    ("compatibility", Kind::Text, "off"),
];

/// When a property is being given a value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Create,
    Import,
    Set,
}

/// Column headers accepted as property names (OpenZFS `zprop_name_to_prop` also matches
/// the column name, case-insensitively).
const ALIASES: &[(&str, &str)] = &[
    ("alloc", "allocated"),
    ("cap", "capacity"),
    ("ckpoint", "checkpoint"),
    ("dedup", "dedupratio"),
    ("expand", "autoexpand"),
    ("expandsz", "expandsize"),
    ("frag", "fragmentation"),
    ("listsnaps", "listsnapshots"),
    ("rdonly", "readonly"),
    ("replace", "autoreplace"),
];

/// The property a name or column header stands for.
pub fn canonical(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    // A user property is its own name (`zpool_prop_user` takes lower case only).
    if lower.starts_with("feature@") || lower.starts_with("unsupported@") || name.contains(':') {
        return name.to_string();
    }
    match ALIASES.iter().find(|(alias, _)| *alias == lower) {
        Some((_, full)) => full.to_string(),
        None => lower,
    }
}

pub fn is_pool_prop(name: &str) -> bool {
    is_user_prop(name)
        || name.starts_with("feature@")
        || name.starts_with("unsupported@")
        || POOL_PROPS.iter().any(|(n, _, _)| *n == name)
}

/// Whether `name` is the short name of a feature OpenZFS 2.3 knows (the part of its guid
/// after the colon, as `zfeature_common.c` names every one).
fn is_openzfs_feature(name: &str) -> bool {
    zetta::spa::openzfs::feature::OPENZFS_2_3_FEATURES
        .iter()
        .any(|guid| {
            guid.rsplit_once(':')
                .is_some_and(|(_, short)| short == name)
        })
}

/// `zpool_prop_user`: a user property of the pool (`module:name`, stored as a string in
/// `pool_props`). Zetta's in-memory keys (`org.zetta:*` counters, `fs:*` during create)
/// share `Spa::props` and are not user properties: setting them is refused.
pub fn is_user_prop(name: &str) -> bool {
    zetta_zprop::user_prop::is_user_prop_name(name)
        && !name.starts_with(pool::PRIVATE_PROP_PREFIX)
        && !name.starts_with("fs:")
}

/// `zpool_valid_proplist` for one property: the reason text after "cannot …: ".
pub fn validate(name: &str, value: &str, phase: Phase) -> Result<(), String> {
    if is_user_prop(name) {
        if name.len() > zetta_zprop::user_prop::USER_PROP_NAME_LEN_MAX {
            return Err(format!("property name '{name}' is too long"));
        }
        if value.len() > zetta_zprop::user_prop::USER_PROP_VALUE_LEN_MAX {
            return Err(format!("property value '{value}' is too long"));
        }
        return Ok(());
    }
    if let Some(feature) = name.strip_prefix("feature@") {
        // `zpool_valid_proplist`'s feature checks, in its order.
        if zetta::spa::zfeature::lookup_name(feature).is_none() {
            // A feature of OpenZFS that Zetta does not maintain is never enabled on a pool
            // Zetta makes, so asking for it disabled at creation asks for what will be
            // (ZTS's zpool_create_features_005 disables each in turn). Enabling it is
            // refused with libzfs's words for a feature this implementation lacks.
            if !(phase == Phase::Create && value == "disabled" && is_openzfs_feature(feature)) {
                return Err(format!("feature '{feature}' unsupported by kernel"));
            }
        }
        if value != "enabled" && value != "disabled" {
            return Err(format!(
                "property '{name}' can only be set to 'enabled' or 'disabled'"
            ));
        }
        if phase != Phase::Create && value == "disabled" {
            return Err(format!(
                "property '{name}' can only be set to 'disabled' at creation time"
            ));
        }
        return Ok(());
    }
    let Some((_, kind, _)) = POOL_PROPS.iter().find(|(n, _, _)| *n == name) else {
        return Err(format!("invalid property '{name}'"));
    };
    let checked = match kind {
        Kind::ReadOnly => Err(format!("'{name}' is readonly")),
        Kind::CreateOnly if phase == Phase::Set => Err(format!(
            "property '{name}' can only be set during pool creation or import"
        )),
        Kind::CreateOnly if name == "readonly" && phase == Phase::Create => Err(format!(
            "property '{name}' can only be set at import time"
        )),
        Kind::CreateOnly if name == "readonly" && !ON_OFF.contains(&value) => {
            Err(format!("'{name}' must be one of 'on | off'"))
        }
        Kind::Index(values) if !values.contains(&value) => Err(format!(
            "'{name}' must be one of '{}'",
            values.join(" | ")
        )),
        Kind::Text => match name {
            "ashift" => match value.parse::<u64>() {
                Ok(0) | Ok(9..=16) => Ok(()),
                Ok(number) => Err(format!(
                    "property 'ashift' number {number} is invalid, only values between 9 and 16 are allowed."
                )),
                Err(_) => Err("'ashift' must be a number".to_string()),
            },
            "cachefile" if !(value.is_empty() || value == "none" || value.starts_with('/')) => {
                Err("property 'cachefile' must be empty, an absolute path, or 'none'".to_string())
            }
            "cachefile" if value.starts_with('/') => check_cachefile_path(value),
            "comment" if value.len() > 32 || value.chars().any(|c| c.is_control()) => {
                Err("comment must not contain control characters or exceed 32 characters".to_string())
            }
            "bootfs" if phase != Phase::Set => Err(
                "property 'bootfs' cannot be set at creation or import time".to_string(),
            ),
            "bootfs" => Err("operation not applicable to datasets of this type".to_string()),
            // At create, `zpool_do_create` reads the files itself ("Error: …").
            "compatibility" if phase == Phase::Set => {
                super::upgrade::load_compat(value).map(|_| ())
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    };
    checked?;
    if pool_value_unhonoured(name, value) {
        return Err(POOL_NOTSUP.to_string());
    }
    Ok(())
}

/// zpool_valid_proplist's checks of a cache file path: it names a file (not `/`, `.` or
/// `..`) in a directory that exists.
fn check_cachefile_path(value: &str) -> Result<(), String> {
    let (parent, last) = value.rsplit_once('/').unwrap_or(("", value));
    if last.is_empty() || last == "." || last == ".." {
        return Err(format!("'{value}' is not a valid file"));
    }
    if !parent.is_empty() && !std::path::Path::new(parent).is_dir() {
        return Err(format!("'{parent}' is not a valid directory"));
    }
    Ok(())
}

/// libzfs's words when the kernel answers ENOTSUP for a pool (`EZFS_POOL_NOTSUP`).
const POOL_NOTSUP: &str = "operation not supported on this type of pool";

/// Pool property values Zetta would store but not act on, refused rather than ignored
/// (README "What Zetta refuses"): automatic replace and trim, failure modes other than
/// waiting, snapshots in `zfs list`, multihost protection. The defaults pass. (`cachefile`
/// is honoured since issue 18: `pool::commit` keeps the pool out of the default cache
/// file for `none` and writes it to the file named instead.)
fn pool_value_unhonoured(name: &str, value: &str) -> bool {
    match name {
        "autoreplace" | "autotrim" | "listsnapshots" | "multihost" => value == "on",
        "failmode" => value != "wait",
        _ => false,
    }
}

/// A property's value and source as `zpool get` (and `zpool list`) print it.
pub fn value_of(imported: &Imported, name: &str, exact: bool) -> Option<(String, &'static str)> {
    let spa = &imported.spa;
    let (size, allocated, free) = spa.space();
    let frag = fragmentation(imported);
    let number = |value: u64| {
        if exact {
            value.to_string()
        } else {
            nicenum(value)
        }
    };
    let percent = |value: u64| {
        if exact {
            value.to_string()
        } else {
            format!("{value}%")
        }
    };
    if is_user_prop(name) {
        // `zpool_get_userprop`: unset (or cleared) is '-' from the default.
        return Some(match spa.props.get_str(name) {
            Some(value) if !value.is_empty() => (value.to_string(), "local"),
            _ => ("-".to_string(), "default"),
        });
    }
    if let Some(feature) = name.strip_prefix("feature@") {
        // A foreign pool's features are what its MOS lists (by guid), for every feature
        // OpenZFS 2.3 knows (Zetta reads more than it maintains).
        if let Some(foreign) = spa.openzfs() {
            let guid = zetta::spa::openzfs::feature::OPENZFS_2_3_FEATURES
                .iter()
                .find(|guid| guid.split(':').nth(1) == Some(feature))?;
            let state = match foreign.features.get(*guid) {
                Some(0) => "enabled",
                Some(_) => "active",
                None => "disabled",
            };
            return Some((state.to_string(), "local"));
        }
        let info = zetta::spa::zfeature::lookup_name(feature)?;
        let state = spa.features().status(info);
        return Some((state.name().to_string(), "local"));
    }
    if let Some(guid) = name.strip_prefix("unsupported@") {
        // `zpool_prop_get_feature` of a feature this software does not know.
        let count = match spa.openzfs() {
            Some(foreign) => foreign.features.get(guid).copied(),
            None => spa
                .features()
                .unsupported()
                .into_iter()
                .find(|(g, _)| *g == guid)
                .map(|(_, count)| count),
        }?;
        let state = if count == 0 { "inactive" } else { "readonly" };
        return Some((state.to_string(), "local"));
    }
    let computed = match name {
        // `spa_prop_get_config`: computed, no source.
        "readonly" => if spa.readonly { "on" } else { "off" }.to_string(),
        // The pool's version: `-` (default) for a feature-flags pool, the number (local)
        // for a legacy one.
        "version" => match spa.version() {
            version if version < zetta::spa::openzfs::feature::SPA_VERSION_FEATURES => {
                return Some((version.to_string(), "local"))
            }
            _ => return Some(("-".to_string(), "default")),
        },
        "name" => spa.name.clone(),
        "size" => number(size),
        "allocated" => number(allocated),
        "free" => number(free),
        "capacity" => percent(allocated.saturating_mul(100).checked_div(size).unwrap_or(0)),
        "health" => spa.health().name().to_string(),
        "guid" => spa.guid.0.to_string(),
        "load_guid" => spa.guid.0.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_string(),
        "dedupratio" => if exact { "1.00" } else { "1.00x" }.to_string(),
        "expandsize" | "checkpoint" => "-".to_string(),
        "freeing" | "leaked" => "0".to_string(),
        "fragmentation" => match frag {
            Some(frag) => percent(frag),
            None => "-".to_string(),
        },
        _ => {
            let (_, kind, default) = POOL_PROPS.iter().find(|(n, _, _)| *n == name)?;
            return Some(match spa.props.get_str(name) {
                Some(value) if !value.is_empty() => (value.to_string(), "local"),
                _ if *kind == Kind::ReadOnly => (default.to_string(), "-"),
                _ => (default.to_string(), "default"),
            });
        }
    };
    Some((computed, "-"))
}

/// Pool fragmentation: the allocated-weighted mean over normal top-level vdevs.
pub fn fragmentation(imported: &Imported) -> Option<u64> {
    let spa = &imported.spa;
    let mut weighted = 0u64;
    let mut total = 0u64;
    for (index, top) in spa.root.children.iter().enumerate() {
        if top.is_log {
            continue;
        }
        let (size, _, _, frag) = spa.vdev_space(index)?;
        weighted += frag? * size;
        total += size;
    }
    weighted.checked_div(total)
}

/// `zpool get all`'s rows for one pool (`zpool_expand_proplist`): the properties, every
/// supported feature, then an `unsupported@GUID` row per feature the pool lists that this
/// software does not know. A foreign pool (read here, not maintained) also gets a
/// `feature@` row for each other OpenZFS 2.3 feature it lists.
fn all_names(imported: &Imported) -> Vec<String> {
    use zetta::spa::openzfs::feature::OPENZFS_2_3_FEATURES;
    let spa = &imported.spa;
    let mut names = base_names();
    match spa.openzfs() {
        Some(foreign) => {
            for guid in foreign.features.keys() {
                if zetta::spa::zfeature::lookup_guid(guid).is_some() {
                    continue;
                }
                match guid.split(':').nth(1) {
                    Some(name) if OPENZFS_2_3_FEATURES.contains(&guid.as_str()) => {
                        names.push(format!("feature@{name}"))
                    }
                    _ => names.push(format!("unsupported@{guid}")),
                }
            }
        }
        None => names.extend(
            spa.features()
                .unsupported()
                .into_iter()
                .map(|(guid, _)| format!("unsupported@{guid}")),
        ),
    }
    // The pool's user properties come last (`zpool_expand_proplist`).
    names.extend(
        spa.props
            .entries
            .keys()
            .filter(|name| is_user_prop(name))
            .cloned(),
    );
    names
}

/// The properties and supported features, in `zpool get all` order.
fn base_names() -> Vec<String> {
    POOL_PROPS
        .iter()
        .map(|(n, _, _)| n.to_string())
        .chain(
            zetta::spa::zfeature::ZETTA_FEATURES
                .iter()
                .map(|f| format!("feature@{}", f.name)),
        )
        .collect()
}

/// One property of one pool for `zpool get`: (property, value, source).
type GetRow = (String, String, String);

/// `zpool get [-Hp] [-o field,…] all|prop,… [pool]…`
pub fn cmd_get(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let (parsed, json) = super::json::parse_with_json(args, "Hjpo:", super::LONG_JSON_POOL, None)?;
    let scripted = parsed.has('H');
    // --json-int implies -p (cb_literal), as in 2.3.
    let exact = parsed.has('p') || json.as_int;
    let Some(list) = parsed.operands.first() else {
        return usage("missing property argument");
    };
    let all = list == "all";
    let names: Vec<String> = if all {
        base_names()
    } else {
        let names: Vec<String> = list.split(',').map(canonical).collect();
        for name in &names {
            if name != "name" && !is_pool_prop(name) {
                return usage(format!("bad property list: invalid property '{name}'"));
            }
        }
        names
    };
    let wanted_fields = parsed.last('o');
    let mut fields = vec!["name", "property", "value", "source"];
    if let Some(wanted) = &wanted_fields {
        if wanted.as_str() != "all" {
            let chosen: Vec<&str> = wanted.split(',').collect();
            let known = ["name", "property", "value", "source"];
            for field in &chosen {
                if !known.contains(field) {
                    return usage(format!("invalid get field '{field}'"));
                }
            }
            // In the order given, as OpenZFS prints them.
            fields = chosen;
        }
    }
    let (pools, unavailable) = pool::open_named_listing(&parsed.operands[1..])?;
    // A pool that cannot be opened shows its name, guid and health (FAULTED) and '-'
    // for the rest, as OpenZFS's `zpool_get_prop` does.
    let mut per_pool: Vec<(String, Vec<GetRow>)> = unavailable
        .iter()
        .map(|gone| {
            let values = names
                .iter()
                .map(|name| {
                    let value = match name.as_str() {
                        "name" => gone.entry.name.clone(),
                        "guid" => gone.entry.guid.to_string(),
                        "health" => "FAULTED".to_string(),
                        _ => "-".to_string(),
                    };
                    (name.clone(), value, "-".to_string())
                })
                .collect();
            (gone.entry.name.clone(), values)
        })
        .collect();
    for imported in &pools {
        let pool_names = if all {
            all_names(imported)
        } else {
            names.clone()
        };
        let values = pool_names
            .iter()
            .filter_map(|name| {
                let (value, source) = value_of(imported, name, exact)?;
                Some((name.clone(), value, source.to_string()))
            })
            .collect();
        per_pool.push((imported.spa.name.clone(), values));
    }
    let named = &parsed.operands[1..];
    if named.is_empty() {
        per_pool.sort_by(|a, b| a.0.cmp(&b.0));
    } else {
        per_pool.sort_by_key(|(pool_name, _)| named.iter().position(|n| n == pool_name));
    }
    if json.enabled {
        let guids: std::collections::HashMap<String, (u64, Option<u64>, String)> = pools
            .iter()
            .map(|p| {
                let spa = &p.spa;
                let about = (
                    spa.guid.0,
                    Some(spa.last_synced_txg().0),
                    spa.health().name().to_string(),
                );
                (spa.name.clone(), about)
            })
            .chain(unavailable.iter().map(|gone| {
                let about = (gone.entry.guid, None, "FAULTED".to_string());
                (gone.entry.name.clone(), about)
            }))
            .collect();
        ctx.print(&get_document(&json, per_pool, &guids));
        return Ok(());
    }
    let mut rows = Vec::new();
    for (pool_name, values) in per_pool {
        for (name, value, source) in values {
            let row: Vec<String> = fields
                .iter()
                .map(|field| match *field {
                    "name" => pool_name.clone(),
                    "property" => name.clone(),
                    "value" => value.clone(),
                    _ => source.clone(),
                })
                .collect();
            rows.push(row);
        }
    }
    let columns: Vec<Column> = fields
        .iter()
        .map(|f| Column::new(&f.to_ascii_uppercase(), Align::Left))
        .collect();
    ctx.print(&format_table(&columns, &rows, scripted));
    Ok(())
}

/// `zpool get -j` (`get_callback`): each pool with at least one property, its
/// `fill_pool_info` and the properties; the leading `name` placeholder is skipped.
fn get_document(
    json: &super::json::JsonOptions,
    per_pool: Vec<(String, Vec<GetRow>)>,
    about: &std::collections::HashMap<String, (u64, Option<u64>, String)>,
) -> String {
    use zetta_zutil::json::{property, Json, PropSource};
    let mut document = super::json::pools_document("get");
    let mut entries = Vec::new();
    for (pool_name, values) in per_pool {
        let (guid, txg, state) =
            about
                .get(&pool_name)
                .cloned()
                .unwrap_or((0, None, "FAULTED".to_string()));
        let mut props = Json::object();
        for (index, (name, value, source)) in values.iter().enumerate() {
            if index == 0 && name == "name" {
                continue;
            }
            let source = PropSource::from_column(source);
            props.insert(name, property(value, &source, json.as_int));
        }
        if props.is_empty_object() {
            continue;
        }
        let mut item = super::json::pool_info(json, &pool_name, guid, txg, &state, true);
        item.insert("properties", props);
        entries.push((json.pool_key(&pool_name, guid), item));
    }
    if let Some(pools) = document.get_mut("pools") {
        for (key, item) in entries {
            pools.insert(&key, item);
        }
    }
    format!("{}\n", document.to_text())
}

/// `zpool set prop=value pool`
pub fn cmd_set(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "")?;
    let (assignment, name) = match parsed.operands.as_slice() {
        [] => return usage("missing property=value argument"),
        [_] => return usage("missing pool name"),
        [assignment, name] => (assignment, name),
        _ => return usage("too many pool names"),
    };
    let Some((key, value)) = split_prop(assignment) else {
        return usage("missing value in property=value argument");
    };
    let action = format!("cannot set property for '{name}'");
    let mut imported = pool::open_pool(name)?;
    pool::writable(&imported, &action)?;
    if key == "version" {
        super::upgrade::set_version(&mut imported, value)
            .map_err(|why| CmdError::Fail(format!("{action}: {why}")))?;
        imported
            .spa
            .log_history(&super::create::history_line("set", args));
        return pool::commit(&mut imported);
    }
    validate(key, value, Phase::Set).map_err(|why| CmdError::Fail(format!("{action}: {why}")))?;
    if let Some(feature) = key.strip_prefix("feature@") {
        if imported.spa.openzfs().is_some() {
            return Err(CmdError::Fail(format!("{action}: pool is read-only")));
        }
        super::upgrade::set_feature(&mut imported, feature)
            .map_err(|why| CmdError::Fail(format!("{action}: {why}")))?;
        imported
            .spa
            .log_history(&super::create::history_line("set", args));
        return pool::commit(&mut imported);
    }
    let spa = &mut imported.spa;
    // An empty value clears a user property (`spa_sync_props` removes it).
    if (key == "cachefile" && (value.is_empty() || value == "-"))
        || (is_user_prop(key) && value.is_empty())
    {
        spa.props.remove(key);
    } else {
        spa.props.set_str(key, value);
    }
    if key == "autoexpand" {
        spa.expand_vdevs_if_allowed();
    }
    spa.mark_config_dirty();
    spa.log_history(&super::create::history_line("set", args));
    pool::commit(&mut imported)
}

/// `YYYY-MM-DD.HH:MM:SS` in local time, from ctime's "Sun Nov 22 02:54:54 2026".
pub fn history_time(epoch_secs: u64) -> String {
    let text = ctime(i64::try_from(epoch_secs).unwrap_or(0));
    let parts: Vec<&str> = text.split_whitespace().collect();
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    match parts.as_slice() {
        [_, month, day, time, year] => {
            let month = months.iter().position(|m| m == month).unwrap_or(0) + 1;
            let day = day.parse::<u32>().unwrap_or(0);
            format!("{year}-{month:02}-{day:02}.{time}")
        }
        _ => text,
    }
}

/// `zpool history [-il] [pool]…`
/// `zpool sync [pool]…`: commits each pool's open txg now (all pools when none named),
/// so space figures and on-disk state catch up with what the mounts have done.
pub fn cmd_sync(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "")?;
    for imported in pool::open_named(&parsed.operands)?.iter_mut() {
        imported.spa.sync().map_err(|e| {
            CmdError::Fail(format!(
                "cannot sync '{}': {}",
                imported.spa.name,
                pool::spa_error_text(&e)
            ))
        })?;
    }
    Ok(())
}

pub fn cmd_history(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "li")?;
    let opts = zetta::spa::openzfs::history::PrintOptions {
        internal: parsed.has('i'),
        long: parsed.has('l'),
    };
    let mut pools = pool::open_named(&parsed.operands)?;
    if pools.is_empty() {
        ctx.warn("no pools available\n");
        return Ok(());
    }
    for imported in pools.iter_mut() {
        if let Some(foreign) = imported.spa.openzfs() {
            let name = imported.spa.name.clone();
            let foreign = foreign.clone();
            foreign_history(&name, &foreign, opts, ctx)?;
            continue;
        }
        // Zetta's own history holds user commands and, for -i, the internal records of
        // sync tasks (`[txg:N] snapshot tank@a (70)`), in OpenZFS's nvlists: -l prints
        // them as OpenZFS does, with the host each record names (` [on host]`); Zetta
        // records no user or zone, so those parts are absent, as OpenZFS leaves them out
        // of a record without them.
        if opts.long {
            let records = imported.spa.history_nvlists().map_err(|e| {
                CmdError::Fail(format!(
                    "cannot get history for '{}': {}",
                    imported.spa.name,
                    pool::spa_error_text(&e)
                ))
            })?;
            let mut text = format!("History for '{}':\n", imported.spa.name);
            for rec in &records {
                let line = zetta::spa::openzfs::history::format_record(
                    rec,
                    opts,
                    &history_time,
                    &user_name,
                );
                if let Some(line) = line {
                    text.push_str(&line);
                }
            }
            text.push('\n');
            ctx.print(&text);
            continue;
        }
        let lines = imported.spa.history_records(opts.internal).map_err(|e| {
            CmdError::Fail(format!(
                "cannot get history for '{}': {}",
                imported.spa.name,
                pool::spa_error_text(&e)
            ))
        })?;
        let mut text = format!("History for '{}':\n", imported.spa.name);
        for (time, command) in lines {
            text.push_str(&format!("{} {command}\n", history_time(time)));
        }
        text.push('\n');
        ctx.print(&text);
    }
    Ok(())
}

/// `get_history_one` for a real OpenZFS pool: its records as `print_history_records`
/// prints them; the heading is printed before a failure, as OpenZFS prints it.
fn foreign_history(
    name: &str,
    foreign: &zetta::spa::openzfs::import::Foreign,
    opts: zetta::spa::openzfs::history::PrintOptions,
    ctx: &mut Ctx,
) -> CmdResult {
    use zetta::spa::openzfs::history::{self, HistoryError};
    ctx.print(&format!("History for '{name}':\n"));
    // SPA_VERSION_ZPOOL_HISTORY: older pools have none (zfs_ioc_pool_get_history).
    if foreign.version < 4 {
        return Err(CmdError::Fail(format!(
            "cannot get history for pool '{name}', pool must be upgraded: \
             unsupported version or feature"
        )));
    }
    let records = history::read(&foreign.pool).map_err(|e| match e {
        HistoryError::NoHistory => CmdError::Fail(format!(
            "cannot get history for pool '{name}': no history available"
        )),
        // zpool_standard_error_fmt of EFAULT/EIO.
        HistoryError::Read(_) => {
            CmdError::Fail(format!("cannot get history for '{name}': I/O error"))
        }
        HistoryError::Corrupt { .. } => {
            CmdError::Fail(format!("cannot get history for '{name}': Bad address"))
        }
    })?;
    let mut text = String::new();
    for rec in &records {
        if let Some(t) = history::format_record(rec, opts, &history_time, &user_name) {
            text.push_str(&t);
        }
    }
    text.push('\n');
    ctx.print(&text);
    Ok(())
}

/// `getpwuid(uid)->pw_name`.
fn user_name(uid: u64) -> Option<String> {
    let uid = libc::uid_t::try_from(uid).ok()?;
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: zeroed plain-old-data passwd; `buf` outlives the call and its length is
    // given; `result` is written by the call.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so pw_name points to a NUL-terminated string in `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripts rely on OpenZFS's exact refusal texts for bad `zpool set` values.
    #[test]
    fn validation_messages() {
        assert_eq!(
            validate("autoexpand", "maybe", Phase::Set).unwrap_err(),
            "'autoexpand' must be one of 'on | off'"
        );
        assert_eq!(
            validate("size", "1", Phase::Set).unwrap_err(),
            "'size' is readonly"
        );
        assert_eq!(
            validate("ashift", "17", Phase::Create).unwrap_err(),
            "property 'ashift' number 17 is invalid, only values between 9 and 16 are allowed."
        );
        assert!(validate("failmode", "wait", Phase::Set).is_ok());
        // Stored but not acted on: refused (issue 21 item 1).
        assert_eq!(
            validate("failmode", "continue", Phase::Set).unwrap_err(),
            "operation not supported on this type of pool"
        );
        // A cache file of its own is honoured (issue 18, defect 11); a relative one is not.
        assert!(validate("cachefile", "/tmp/x.cache", Phase::Create).is_ok());
        assert!(validate("cachefile", "none", Phase::Set).is_ok());
        assert_eq!(
            validate("cachefile", "/tmp/", Phase::Set).unwrap_err(),
            "'/tmp/' is not a valid file"
        );
        assert_eq!(
            validate("cachefile", "/nonexistent-dir/x", Phase::Set).unwrap_err(),
            "'/nonexistent-dir' is not a valid directory"
        );
        assert_eq!(
            validate("cachefile", "x.cache", Phase::Set).unwrap_err(),
            "property 'cachefile' must be empty, an absolute path, or 'none'"
        );
    }

    /// History lines carry `YYYY-MM-DD.HH:MM:SS`, 19 characters, whatever the zone.
    #[test]
    fn history_time_shape() {
        let text = history_time(1_795_316_094);
        assert_eq!(text.len(), 19, "{text}");
        assert_eq!(&text[4..5], "-");
        assert_eq!(&text[10..11], ".");
    }
}
