//! `zpool create`, `add`, `destroy` and `labelclear` (OpenZFS `zpool_do_create`,
//! `zpool_do_add`, `zpool_do_destroy`, `zpool_do_labelclear`, with `make_root_vdev` of
//! `zpool_vdev.c`).
//!
//! Checks run in OpenZFS's order, so the same mistake gets the same message: option and
//! name syntax; vdev words (`parse_spec`); devices already in a pool (`check_in_use`,
//! `-f` overrides all but a pool imported here); replication consistency (`-f`
//! overrides); then `-n` prints the layout and stops; only then the pool-exists and
//! minimum-size checks and the real work. Pool properties given with `-o` are checked
//! against `props`; `ashift` also sets the vdevs' sector size. File system properties
//! (`-O`, `-m`) are kept as `fs:<name>` pool properties until datasets exist.

use super::pool::{self, Imported};
use super::{fail, getopt, props, split_prop, upgrade, usage, CmdError, CmdResult, Ctx};
use zetta::nvlist::NvList;
use zetta::spa::openzfs::feature::SPA_VERSION_FEATURES;
use zetta::spa::{check_pool_name, CreateOptions, Spa, SpaError};
use zetta::types::ASHIFT_DEFAULT;
use zetta::vdev::{Vdev, VdevKind as EngineKind};
use zetta_zutil::vdev_spec::{
    check_replication, VdevClass, VdevKind, VdevSpecError, VdevSpecGroup,
};

/// The history line OpenZFS records: the command as typed.
pub fn history_line(subcommand: &str, args: &[String]) -> String {
    let mut line = format!("zpool {subcommand}");
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    line
}

fn all_paths(groups: &[VdevSpecGroup]) -> Vec<String> {
    groups
        .iter()
        .flat_map(|g| g.paths.iter().cloned())
        .collect()
}

/// `print_vdev_tree` for a parsed spec: groups named `mirror`, `raidz2`, leaves by path.
fn spec_tree(groups: &[VdevSpecGroup], class: VdevClass, indent: usize) -> String {
    let mut out = String::new();
    for group in groups.iter().filter(|g| g.class == class) {
        match group.kind {
            VdevKind::Disk | VdevKind::File => {
                for path in &group.paths {
                    out.push_str(&format!("\t{:indent$}{path}\n", ""));
                }
            }
            VdevKind::Mirror | VdevKind::Raidz(_) => {
                let name = match group.kind {
                    VdevKind::Raidz(parity) => format!("raidz{parity}"),
                    _ => "mirror".to_string(),
                };
                out.push_str(&format!("\t{:indent$}{name}\n", ""));
                for path in &group.paths {
                    out.push_str(&format!("\t{:width$}{path}\n", "", width = indent + 2));
                }
            }
        }
    }
    out
}

/// `zpool create [-fnd] [-o p=v]… [-O p=v]… [-m mnt] [-R root] [-t tname] pool vdev…`
pub fn cmd_create(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "fndo:O:m:R:t:")?;
    // -t: the pool lives here under a temporary name until export; its labels keep the
    // name given (OpenZFS's ZPOOL_PROP_TNAME).
    let tname = parsed.last('t');
    if let Some(tname) = &tname {
        if tname.contains('/') {
            return fail(format!(
                "cannot create '{tname}': invalid character '/' in temporary name\nuse 'zfs create' to create a dataset"
            ));
        }
    }
    let force = parsed.has('f');
    let Some(name) = parsed.operands.first() else {
        return usage("missing pool name argument");
    };
    if parsed.operands.len() < 2 {
        return usage("missing vdev specification");
    }
    let mut pool_props = NvList::new();
    let mut ashift = ASHIFT_DEFAULT;
    let mut features = upgrade::CreateFeatures {
        none_by_default: parsed.has('d'),
        ..Default::default()
    };
    let mut compatibility = None;
    let mut version = SPA_VERSION_FEATURES;
    let mut given = std::collections::BTreeSet::new();
    for option in parsed.values('o') {
        let Some((key, value)) = split_prop(&option) else {
            return fail("missing '=' for -o option");
        };
        if !props::is_pool_prop(key) {
            return fail(format!(
                "property '{key}' is not a valid pool or vdev property"
            ));
        }
        if !given.insert(key.to_string()) && key != "cachefile" {
            return fail(format!("property '{key}' specified multiple times"));
        }
        if key == "version" {
            // Not a property: the pool's SPA version (5000 or a legacy one Zetta writes).
            // Below 5000 no feature is enabled by default (`enable_pool_features`).
            let number = upgrade::check_create_version(name, value)?;
            features.none_by_default |= number < SPA_VERSION_FEATURES;
            version = number;
            continue;
        }
        if key == "compatibility" {
            compatibility = Some(value.to_string());
        }
        props::validate(key, value, props::Phase::Create)
            .map_err(|why| CmdError::Fail(format!("cannot create '{name}': {why}")))?;
        if let Some(feature) = key.strip_prefix("feature@") {
            if let Some(info) = zetta::spa::zfeature::lookup_name(feature) {
                features.settings.push((info, value == "enabled"));
            }
            continue;
        }
        if key == "ashift" {
            ashift = match value.parse::<u32>() {
                Ok(0) | Err(_) => ASHIFT_DEFAULT,
                Ok(shift) => shift,
            };
        }
        pool_props.set_str(key, value);
    }
    for option in parsed.values('O') {
        let Some((key, value)) = split_prop(&option) else {
            return fail("missing '=' for -O option");
        };
        // add_prop_list: a name that is no filesystem property is refused first.
        if zetta_zprop::ZfsProp::from_name(key).is_none()
            && !zetta_zprop::user_prop::is_user_prop_name(key)
        {
            return fail(format!(
                "property '{key}' is not a valid filesystem property"
            ));
        }
        // Checked before any device is written (zpool_create runs zfs_valid_proplist and
        // zfs_crypto_create first): a refused value leaves no pool behind.
        crate::zfs::validate(name, key, value, true)?;
        pool_props.set_str(&format!("fs:{key}"), value);
    }
    if let Some(root) = parsed.last('R') {
        if !root.starts_with('/') {
            return fail(format!(
                "invalid alternate root '{root}': must be an absolute path"
            ));
        }
        pool_props.set_str("altroot", &root);
    }
    // -R and -t keep the pool out of the default cache file unless -o cachefile= says
    // otherwise (`add_prop_list_default`).
    if (parsed.has('R') || tname.is_some()) && pool_props.get_str("cachefile").is_none() {
        pool_props.set_str("cachefile", "none");
    }
    if let Some(mountpoint) = parsed.last('m') {
        if !(mountpoint.starts_with('/') || mountpoint == "legacy" || mountpoint == "none") {
            return fail(format!(
                "invalid mountpoint '{mountpoint}': must be an absolute path, 'legacy', or 'none'"
            ));
        }
        pool_props.set_str("fs:mountpoint", &mountpoint);
    }
    if name.contains('/') {
        return fail(format!(
            "cannot create '{name}': invalid character '/' in pool name\nuse 'zfs create' to create a dataset"
        ));
    }
    check_pool_name(name)
        .map_err(|why| CmdError::Fail(format!("cannot create '{name}': {why}")))?;
    if let Some(tname) = &tname {
        check_pool_name(tname)
            .map_err(|why| CmdError::Fail(format!("cannot create '{tname}': {why}")))?;
    }
    // The name the pool has here: the temporary one under -t.
    let here = tname.as_deref().unwrap_or(name.as_str());

    let action = format!("cannot create '{name}'");
    let groups = pool::parse_spec(&parsed.operands[1..], &action)?;
    check_default_mountpoint(name, &pool_props)?;
    let paths = all_paths(&groups);
    pool::check_in_use(&paths, force)?;
    if !force {
        check_replication(&groups).map_err(|e| CmdError::Fail(e.to_string()))?;
    }
    if parsed.has('n') {
        let mut text = format!("would create '{name}' with the following layout:\n\n\t{name}\n");
        text.push_str(&spec_tree(&groups, VdevClass::Normal, 2));
        let logs = spec_tree(&groups, VdevClass::Log, 2);
        if !logs.is_empty() {
            text.push_str("\tlogs\n");
            text.push_str(&logs);
        }
        aux_lists(&mut text, &[], &[], &groups);
        ctx.print(&text);
        return Ok(());
    }
    // `spa_create`: ENOTSUP for spares below SPA_VERSION_SPARES, which libzfs words as
    // EZFS_BADVERSION.
    if version < zetta::spa::SPA_VERSION_SPARES
        && groups.iter().any(|g| g.class == VdevClass::Spare)
    {
        return fail(format!("{action}: unsupported version or feature"));
    }
    if pool::load_cache()?.iter().any(|e| e.name == here) {
        return fail(format!("{action}: pool already exists"));
    }
    if pool::any_too_small(&paths) {
        return fail(format!(
            "{action}: one or more devices is less than the minimum size (64M)"
        ));
    }
    // `spa_prop_validate`: a version below 5000 with a feature property is EINVAL.
    if version < SPA_VERSION_FEATURES && features.settings.iter().any(|(_, on)| *on) {
        return fail(format!(
            "{action}: invalid argument for this pool operation"
        ));
    }
    let compat = upgrade::load_compat_reporting(compatibility.as_deref().unwrap_or("off"), ctx)?;
    let tops = pool::open_tops(&groups)?;
    let options = CreateOptions {
        ashift,
        props: pool_props,
        arc_size_bytes_max: pool::ARC_SIZE_BYTES_CLI,
        features: upgrade::create_features(&features, &compat, ctx),
        version,
    };
    // `zfs_ioc_pool_create` sets the `-O` values through `zfs_set_prop_nvlist`, whose
    // `zfs_check_settable` answers ENOTSUP for a value needing a feature the new pool
    // lacks (`-d`, `-o feature@…=disabled`, `-o version=28`); checked before any device is
    // written, so no pool is left behind.
    for (key, value) in options.props.entries.iter() {
        let (Some(key), zetta::nvlist::NvValue::Str(value)) = (key.strip_prefix("fs:"), value)
        else {
            continue;
        };
        let set = crate::zfs::validate(name, key, value, true)?;
        if let Some(feature) = crate::zfs::feature_needed(&set) {
            if !options.features.iter().any(|f| f.name == feature) {
                return fail(format!(
                    "{action}: pool must be upgraded to set this property or value"
                ));
            }
        }
    }
    let spa = Spa::create(name, &tops, &options)
        .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    let mut spa = spa;
    if tname.is_some() {
        spa.name_on_disk = Some(std::mem::replace(&mut spa.name, here.to_string()));
    }
    let mut imported = Imported::owned(spa.guid.0, spa);
    // -O and -m: properties of the root filesystem, now that it exists.
    let fs_props: Vec<(String, String)> = imported
        .spa
        .props
        .entries
        .keys()
        .filter_map(|k| k.strip_prefix("fs:").map(str::to_string))
        .filter_map(|k| {
            let value = imported.spa.props.get_str(&format!("fs:{k}"))?.to_string();
            Some((k, value))
        })
        .collect();
    for (key, value) in fs_props {
        imported.spa.props.entries.remove(&format!("fs:{key}"));
        let set = crate::zfs::validate(here, &key, &value, true)?;
        crate::zfs::store(&mut imported, here, set)?;
    }
    imported
        .spa
        .refresh_io_props()
        .map_err(|e| CmdError::Fail(pool::spa_error_text(&e)))?;
    pool::reset_stats(&mut imported.spa);
    add_aux(&mut imported, &groups, &action, None)?;
    imported.spa.log_history(&history_line("create", args));
    pool::commit(&mut imported)?;
    let event = super::events::sysevent(&imported.spa, "pool_create", None);
    super::events::pump(Some(&imported.spa), vec![event]);
    Ok(())
}

/// zpool_do_create: the root filesystem's mountpoint (`-m`, `-O mountpoint=`, else
/// `/pool`, under `-R`) must not be a non-empty directory.
fn check_default_mountpoint(name: &str, props: &NvList) -> CmdResult {
    let mountpoint = props.get_str("fs:mountpoint");
    if matches!(mountpoint, Some("legacy" | "none")) {
        return Ok(());
    }
    let altroot = props.get_str("altroot");
    let path = match (mountpoint, altroot) {
        (None, Some(root)) => format!("{root}/{name}"),
        (None, None) => format!("/{name}"),
        (Some(mountpoint), Some(root)) => format!("{root}{mountpoint}"),
        (Some(mountpoint), None) => mountpoint.to_string(),
    };
    let advice = "use '-m' option to provide a different default";
    match std::fs::read_dir(&path) {
        Ok(entries) => {
            if entries.take(1).count() > 0 {
                return fail(format!(
                    "mountpoint '{path}' exists and is not empty\n{advice}"
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        // A file there: opendir's ENOTDIR, in strerror's words.
        Err(e) => fail(format!(
            "mountpoint '{path}' : {}\n{advice}",
            pool::strerror(&e)
        )),
    }
}

/// A top-level vdev's replication as `get_replication` sees it: (type, children, parity).
fn replication_of_vdev(top: &Vdev) -> (&'static str, usize, u8) {
    match top.kind {
        EngineKind::Mirror => ("mirror", top.children.len(), 0),
        EngineKind::Raidz { parity } => ("raidz", top.children.len(), parity),
        _ => (top.type_name(), 1, 0),
    }
}

fn replication_of_group(group: &VdevSpecGroup) -> (&'static str, usize, u8) {
    match group.kind {
        VdevKind::Disk => ("disk", 1, 0),
        VdevKind::File => ("file", 1, 0),
        VdevKind::Mirror => ("mirror", group.paths.len(), 0),
        VdevKind::Raidz(parity) => ("raidz", group.paths.len(), parity),
    }
}

/// The pool-versus-new-vdev half of `check_replication` (`zpool add`).
fn check_add_replication(spa: &Spa, groups: &[VdevSpecGroup]) -> Result<(), CmdError> {
    // make_root_vdev asks for a general (normal) top-level vdev on create only
    // (`poolconfig == NULL`): `zpool add pool log dev` adds none and is fine
    // (zpool_add_010_pos).
    match check_replication(groups) {
        Ok(()) => {}
        Err(VdevSpecError::Replication(problems)) => {
            let problems: Vec<String> = problems
                .into_iter()
                .filter(|p| p != "at least one general top-level vdev must be specified")
                .collect();
            if !problems.is_empty() {
                return Err(CmdError::Fail(
                    VdevSpecError::Replication(problems).to_string(),
                ));
            }
        }
        Err(e) => return Err(CmdError::Fail(e.to_string())),
    }
    let Some(current) = spa.root.children.iter().find(|t| !t.is_log) else {
        return Ok(());
    };
    let Some(new) = groups.iter().find(|g| g.class == VdevClass::Normal) else {
        return Ok(());
    };
    let (ctype, cchildren, cparity) = replication_of_vdev(current);
    let (ntype, nchildren, nparity) = replication_of_group(new);
    let raidz_mirror = match (ctype, ntype) {
        ("raidz", "mirror") => Some(((ctype, cparity), (ntype, nchildren))),
        ("mirror", "raidz") => Some(((ntype, nparity), (ctype, cchildren))),
        _ => None,
    };
    let problem = if let Some(((rtype, parity), (mtype, mchildren))) = raidz_mirror {
        (usize::from(parity) + 1 != mchildren).then(|| {
            format!(
                "mismatched replication level: pool and new vdev with different redundancy, {rtype} and {mtype} vdevs, {parity} vs. {} ({mchildren}-way)",
                mchildren.saturating_sub(1)
            )
        })
    } else if ctype != ntype {
        Some(format!(
            "mismatched replication level: pool uses {ctype} and new vdev is {ntype}"
        ))
    } else if cparity != nparity {
        Some(format!(
            "mismatched replication level: pool uses {cparity} device parity and new vdev uses {nparity}"
        ))
    } else if cchildren != nchildren {
        Some(format!(
            "mismatched replication level: pool uses {cchildren}-way {ctype} and new vdev uses {nchildren}-way {ntype}"
        ))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(CmdError::Fail(format!(
            "invalid vdev specification\nuse '-f' to override the following errors:\n{problem}"
        ))),
        None => Ok(()),
    }
}

/// The existing tree for `zpool add -n`, named with ids (`mirror-0`).
fn pool_tree(vdev: &Vdev, indent: usize, logs: bool, out: &mut String) {
    for child in vdev
        .children
        .iter()
        .filter(|c| c.is_log == logs || indent > 2)
    {
        out.push_str(&format!("\t{:indent$}{}\n", "", child.display_name()));
        pool_tree(child, indent + 2, logs, out);
    }
}

/// `zpool add [-fn] [-o ashift=N] pool vdev…`
/// `zpool add --allow-in-use` (`ZPOOL_OPTION_ALLOW_INUSE`).
const OPTION_ALLOW_INUSE: char = '\u{f101}';
/// `--allow-replication-mismatch` (`ZPOOL_OPTION_ALLOW_REPLICATION_MISMATCH`).
const OPTION_ALLOW_REPLICATION_MISMATCH: char = '\u{f102}';
/// `--allow-ashift-mismatch` (`ZPOOL_OPTION_ALLOW_ASHIFT_MISMATCH`).
const OPTION_ALLOW_ASHIFT_MISMATCH: char = '\u{f103}';

/// `zpool add [-fnP] [--allow-in-use] [--allow-replication-mismatch]
/// [--allow-ashift-mismatch] [-o ashift=N] pool vdev…` (`zpool_do_add`): `-f` lifts every
/// check, each long option one of them. Zetta checks no ashift mismatch on add (the new
/// vdev takes `-o ashift`, else the pool's `ashift` property, else the default), so
/// `--allow-ashift-mismatch` has nothing to lift.
pub fn cmd_add(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = super::getopt_long(
        args,
        "fnPo:",
        &[
            ("allow-in-use", OPTION_ALLOW_INUSE),
            (
                "allow-replication-mismatch",
                OPTION_ALLOW_REPLICATION_MISMATCH,
            ),
            ("allow-ashift-mismatch", OPTION_ALLOW_ASHIFT_MISMATCH),
        ],
        Some("zpool"),
    )?;
    let force = parsed.has('f');
    let allow_in_use = force || parsed.has(OPTION_ALLOW_INUSE);
    let allow_mismatch = force || parsed.has(OPTION_ALLOW_REPLICATION_MISMATCH);
    let Some(name) = parsed.operands.first() else {
        return usage("missing pool name argument");
    };
    if parsed.operands.len() < 2 {
        return usage("missing vdev specification");
    }
    let mut ashift_option = None;
    for option in parsed.values('o') {
        let Some((key, value)) = split_prop(&option) else {
            return fail("missing '=' for -o option");
        };
        if key != "ashift" {
            return fail(format!(
                "property '{key}' is not a valid pool or vdev property"
            ));
        }
        props::validate(key, value, props::Phase::Create)
            .map_err(|why| CmdError::Fail(format!("cannot add to '{name}': {why}")))?;
        ashift_option = value.parse::<u32>().ok().filter(|s| *s != 0);
    }
    let mut imported = pool::open_pool(name)?;
    let action = format!("cannot add to '{name}'");
    pool::writable(&imported, &action)?;
    let groups = pool::parse_spec(&parsed.operands[1..], &action)?;
    let paths = all_paths(&groups);
    pool::check_in_use(&paths, allow_in_use)?;
    if !allow_mismatch {
        check_add_replication(&imported.spa, &groups)?;
    }
    if parsed.has('n') {
        let mut text =
            format!("would update '{name}' to the following configuration:\n\n\t{name}\n");
        pool_tree(&imported.spa.root, 2, false, &mut text);
        text.push_str(&spec_tree(&groups, VdevClass::Normal, 2));
        let mut logs = String::new();
        pool_tree(&imported.spa.root, 2, true, &mut logs);
        logs.push_str(&spec_tree(&groups, VdevClass::Log, 2));
        if !logs.is_empty() {
            text.push_str("\tlogs\n");
            text.push_str(&logs);
        }
        let paths_of = |vdevs: &[Vdev]| vdevs.iter().map(|v| v.path.clone()).collect::<Vec<_>>();
        aux_lists(
            &mut text,
            &paths_of(&imported.spa.cache),
            &paths_of(&imported.spa.spares),
            &groups,
        );
        ctx.print(&text);
        return Ok(());
    }
    // `zpool_add`: libzfs's own version checks, before the ioctl.
    let pool_version = imported.spa.version();
    if pool_version < zetta::spa::SPA_VERSION_SPARES
        && groups.iter().any(|g| g.class == VdevClass::Spare)
    {
        return fail(format!("{action}: pool must be upgraded to add hot spares"));
    }
    if pool::any_too_small(&paths) {
        return fail(format!(
            "{action}: one or more devices is less than the minimum size (64M)"
        ));
    }
    let ashift = ashift_option
        .or_else(|| {
            imported
                .spa
                .props
                .get_str("ashift")
                .and_then(|v| v.parse::<u32>().ok())
                .filter(|s| *s != 0)
        })
        .unwrap_or(ASHIFT_DEFAULT);
    let tops = pool::open_tops(&groups)?;
    // `spa_vdev_add`'s check (ZFS_ERR_ASHIFT_MISMATCH): while every normal top-level vdev
    // has one ashift, a new top-level vdev must have it too, unless
    // --allow-ashift-mismatch (-f does not lift it).
    if !tops.is_empty() && !parsed.has(OPTION_ALLOW_ASHIFT_MISMATCH) {
        let mut normal = imported
            .spa
            .root
            .children
            .iter()
            .filter(|top| !top.is_log && top.ashift != 0)
            .map(|top| top.ashift);
        if let Some(first) = normal.next() {
            if normal.all(|other| other == first) && ashift != first {
                return fail(format!(
                    "{action}: adding devices with different physical sector sizes is not \
                     allowed"
                ));
            }
        }
    }
    if !tops.is_empty() {
        imported
            .spa
            .add_vdevs(&tops, ashift)
            .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    }
    add_aux(&mut imported, &groups, &action, ashift_option)?;
    imported.spa.log_history(&history_line("add", args));
    pool::commit(&mut imported)
}

/// The `cache` and `spares` lists of a dry run (`print_cache_list`, `print_spare_list`
/// on create; `zpool_do_add`'s loops on add): the pool's own first, then the new ones,
/// under one heading.
fn aux_lists(text: &mut String, cache: &[String], spares: &[String], groups: &[VdevSpecGroup]) {
    for (heading, class, existing) in [
        ("cache", VdevClass::Cache, cache),
        ("spares", VdevClass::Spare, spares),
    ] {
        let new: Vec<&String> = groups
            .iter()
            .filter(|g| g.class == class)
            .flat_map(|g| g.paths.iter())
            .collect();
        if existing.is_empty() && new.is_empty() {
            continue;
        }
        text.push_str(&format!("\t{heading}\n"));
        for path in existing.iter().chain(new) {
            text.push_str(&format!("\t  {path}\n"));
        }
    }
}

/// Opens and adds the `cache` and `spare` devices of parsed groups, if any.
fn add_aux(
    imported: &mut Imported,
    groups: &[VdevSpecGroup],
    action: &str,
    ashift: Option<u32>,
) -> CmdResult {
    let words = |e: SpaError| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e)));
    let cache_devices = pool::open_aux_devices(groups, VdevClass::Cache)?;
    if !cache_devices.is_empty() {
        imported
            .spa
            .add_cache_devices(&cache_devices, ashift)
            .map_err(words)?;
    }
    let spare_devices = pool::open_aux_devices(groups, VdevClass::Spare)?;
    if !spare_devices.is_empty() {
        imported
            .spa
            .add_spare_devices(&spare_devices, ashift)
            .map_err(words)?;
    }
    Ok(())
}

/// `zpool remove pool device…`: cache devices and top-level log vdevs (data vdevs hold
/// blocks that would have to move, which Zetta does not do).
pub fn cmd_remove(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "")?;
    let (name, devices) = match parsed.operands.split_first() {
        None => return usage("missing pool name argument"),
        Some((_, [])) => return usage("missing device"),
        Some((name, devices)) => (name, devices),
    };
    let mut imported = pool::open_pool(name)?;
    pool::writable(&imported, &format!("cannot remove {}", devices[0]))?;
    for device in devices {
        imported.spa.remove_device(device).map_err(|e| {
            CmdError::Fail(format!(
                "cannot remove {device}: {}",
                pool::spa_error_text(&e)
            ))
        })?;
    }
    imported.spa.log_history(&history_line("remove", args));
    pool::commit(&mut imported)
}

/// `zpool destroy [-f] pool`
pub fn cmd_destroy(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "f")?;
    let name = match parsed.operands.as_slice() {
        [] => return usage("missing pool argument"),
        [name] => name,
        _ => return usage("too many arguments"),
    };
    // A pool whose devices are gone is only forgotten (OpenZFS destroys it from its
    // namespace and cache file the same way; its labels cannot be written).
    let imported = match pool::open_pool_or_unavailable(name)? {
        pool::Opened::Pool(imported) => imported,
        pool::Opened::Unavailable(gone) => return super::pool::forget(gone.entry.guid),
    };
    pool::writable(&imported, &format!("cannot destroy '{name}'"))?;
    let guid = imported.guid;
    let event = super::events::sysevent(&imported.spa, "pool_destroy", None);
    imported.into_spa()?.destroy().map_err(|e| {
        CmdError::Fail(format!(
            "cannot destroy '{name}': {}",
            pool::spa_error_text(&e)
        ))
    })?;
    super::events::pump(None, vec![event]);
    super::pool::forget(guid)
}

/// `zpool labelclear [-f] device`
pub fn cmd_labelclear(args: &[String], _ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "f")?;
    let force = parsed.has('f');
    let vdev = match parsed.operands.as_slice() {
        [] => return usage("missing vdev name"),
        [vdev] => vdev,
        _ => return usage("too many arguments"),
    };
    // zpool_do_labelclear opens the device read-write first (EISDIR for a directory).
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(vdev)
    {
        return fail(format!("failed to open {vdev}: {}", pool::strerror(&e)));
    }
    // zpool_clear_label zeroes only valid labels, and fails when it finds none: a file or
    // disk that is not a vdev is never touched, with or without -f. Label areas that are
    // already zero (a device `zpool detach` let go) have nothing left to clear.
    if !pool::has_label(vdev) {
        if pool::labels_zeroed(vdev) {
            return Ok(());
        }
        return fail(format!("failed to clear label for {vdev}"));
    }
    if let Some((name, guid, state)) = pool::label_owner(vdev) {
        let imported = pool::load_cache()?.iter().any(|e| e.guid == guid);
        match state {
            pool::POOL_STATE_DESTROYED => {}
            pool::POOL_STATE_EXPORTED if !force => {
                return fail(format!(
                    "use '-f' to override the following error:\n{vdev} is a member of exported pool \"{name}\""
                ))
            }
            pool::POOL_STATE_ACTIVE if imported && !force => {
                return fail(format!("{vdev} is a member (ACTIVE) of pool \"{name}\""))
            }
            pool::POOL_STATE_ACTIVE if !force => {
                return fail(format!(
                    "use '-f' to override the following error:\n{vdev} is a member of potentially active pool \"{name}\""
                ))
            }
            _ => {}
        }
    }
    let device = pool::open_device(vdev)?;
    zetta::vdev::label::clear_labels(device.as_ref())
        .map_err(|_| CmdError::Fail(format!("failed to clear label for {vdev}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `zpool create -n` prints groups without ids (`mirror`, `raidz2`), as OpenZFS does.
    #[test]
    fn dry_run_tree_names() {
        let groups = vec![
            VdevSpecGroup {
                class: VdevClass::Normal,
                kind: VdevKind::Raidz(2),
                paths: vec!["/a".into(), "/b".into(), "/c".into()],
            },
            VdevSpecGroup {
                class: VdevClass::Normal,
                kind: VdevKind::File,
                paths: vec!["/d".into()],
            },
        ];
        assert_eq!(
            spec_tree(&groups, VdevClass::Normal, 2),
            "\t  raidz2\n\t    /a\n\t    /b\n\t    /c\n\t  /d\n"
        );
    }
}
