//! `zpool upgrade` and the feature side of libzfs: compatibility files, the feature set a
//! `zpool create` enables (OpenZFS `zpool_do_upgrade`, `upgrade_enable_all`,
//! `upgrade_list_disabled_cb`, `upgrade_one`, `zpool_load_compat`, and the feature loop
//! of `zpool_do_create`).
//!
//! Theory. The features a pool *could* have are the engine's table
//! (`zetta::spa::zfeature::ZETTA_FEATURES`, OpenZFS's `fi_zfs_mod_supported` ones); the
//! ones it should have are that table cut down by the pool's `compatibility` property: a
//! comma-separated list of files in `/etc/zfs/compatibility.d` (tried first) or
//! `/usr/share/zfs/compatibility.d`, each a list of feature names (`#` comments), the
//! allowed set being their intersection; `off` (the default) allows everything and
//! `legacy` nothing. A name OpenZFS 2.3 does not know is an error in a local file and a
//! warning in a distribution one. `ZETTA_COMPATIBILITY_D` replaces the distribution
//! directory (OpenZFS's is fixed when it is built; tests point it at the oracle's copy).
//! `zpool create` enables every allowed feature unless `-d` or `-o version=`; `zpool
//! upgrade POOL|-a` enables the allowed ones a pool lacks, one `feature@NAME=enabled`
//! each, in table order.
//!
//! Versions: Zetta writes version-5000 pools and the legacy versions of
//! `zfeature::LEGACY_VERSIONS_WRITTEN` (28): `zpool create -o version=28` makes a pool
//! without feature objects, `zpool upgrade [-V N]` raises one (to 5000: the feature ZAPs,
//! then every allowed feature, as `upgrade_version` and `upgrade_enable_all` do), `zpool
//! set version=` checks as libzfs and the kernel do. Older versions (ZPL v4 znodes
//! without system attributes, bplist dead lists) are refused until their writer is built.

use super::pool::{self, Imported};
use super::{getopt, usage, CmdError, CmdResult, Ctx};
use std::collections::BTreeSet;
use zetta::spa::openzfs::feature::{
    version_is_supported, OPENZFS_2_3_FEATURES, SPA_VERSION_FEATURES,
};
use zetta::spa::zfeature::{self, FeatureInfo, ZETTA_FEATURES};

/// `ZPOOL_SYSCONF_COMPAT_D`: the administrator's files, tried first.
const SYSCONF_COMPAT_D: &str = "/etc/zfs/compatibility.d";
/// `ZPOOL_DATA_COMPAT_D`: the distribution's files.
const DATA_COMPAT_D: &str = "/usr/share/zfs/compatibility.d";
/// `ZPOOL_COMPAT_MAXSIZE`.
const COMPAT_FILE_BYTES_MAX: u64 = 16 * 1024;

/// What a `compatibility` value allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compat {
    /// The allowed feature names; `None` = every feature (`off`).
    pub allowed: Option<BTreeSet<String>>,
    /// A warning to print (`ZPOOL_COMPATIBILITY_WARNTOKEN`), without "Warning: ".
    pub warning: Option<String>,
}

impl Compat {
    pub fn allows(&self, name: &str) -> bool {
        self.allowed.as_ref().is_none_or(|set| set.contains(name))
    }
}

fn data_compat_dir() -> String {
    std::env::var("ZETTA_COMPATIBILITY_D").unwrap_or_else(|_| DATA_COMPAT_D.to_string())
}

/// `zpool_load_compat`: the allowed set of a `compatibility` value, or the report of
/// why it cannot be used (without "Error: ").
pub fn load_compat(value: &str) -> Result<Compat, String> {
    if value.is_empty() || value == "off" {
        return Ok(Compat {
            allowed: None,
            warning: None,
        });
    }
    if value == "legacy" {
        return Ok(Compat {
            allowed: Some(BTreeSet::new()),
            warning: None,
        });
    }
    let known: BTreeSet<&str> = OPENZFS_2_3_FEATURES
        .iter()
        .filter_map(|guid| guid.split(':').nth(1))
        .collect();
    let mut allowed: Option<BTreeSet<String>> = None;
    let mut bad_files = String::new();
    let mut bad_tokens = String::new();
    let (mut any_file, mut local_bad, mut dist_bad) = (false, false, false);
    let data_dir = data_compat_dir();
    for file in value.split(',').filter(|f| !f.is_empty()) {
        let local = std::path::Path::new(SYSCONF_COMPAT_D).join(file);
        let (path, is_local) = if std::fs::File::open(&local).is_ok() {
            (local, true)
        } else {
            (std::path::Path::new(&data_dir).join(file), false)
        };
        let text = std::fs::metadata(&path)
            .ok()
            .filter(|m| m.len() >= 1 && m.len() <= COMPAT_FILE_BYTES_MAX)
            .and_then(|_| std::fs::read(&path).ok())
            .filter(|bytes| bytes.last() == Some(&b'\n'));
        let Some(text) = text else {
            bad_files.push_str(file);
            bad_files.push(' ');
            continue;
        };
        any_file = true;
        let text = String::from_utf8_lossy(&text);
        let mut here = BTreeSet::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for word in line.split([',', ' ', '\t']).filter(|w| !w.is_empty()) {
                if known.contains(word) {
                    here.insert(word.to_string());
                    continue;
                }
                let shown: String = word
                    .chars()
                    .take(32)
                    .map(|c| if c.is_ascii_graphic() { c } else { '?' })
                    .collect();
                bad_tokens.push_str(&shown);
                bad_tokens.push(' ');
                if is_local {
                    local_bad = true;
                } else {
                    dist_bad = true;
                }
            }
        }
        allowed = Some(match allowed {
            None => here,
            Some(previous) => previous.intersection(&here).cloned().collect(),
        });
    }
    if !bad_files.is_empty() {
        return Err(format!("could not read/parse feature file(s): {bad_files}"));
    }
    if !any_file {
        return Err("no valid compatibility files specified".to_string());
    }
    if local_bad {
        return Err(format!(
            "invalid feature name(s) in local compatibility files: {bad_tokens}"
        ));
    }
    Ok(Compat {
        allowed,
        warning: dist_bad.then(|| {
            format!(
                "unrecognized feature name(s) in distribution compatibility files: {bad_tokens}"
            )
        }),
    })
}

/// `zpool_do_load_compat`: prints the warning, turns a refusal into "Error: …".
pub fn load_compat_reporting(value: &str, ctx: &mut Ctx) -> Result<Compat, CmdError> {
    match load_compat(value) {
        Ok(compat) => {
            if let Some(warning) = &compat.warning {
                ctx.warn(&format!("Warning: {warning}\n"));
            }
            Ok(compat)
        }
        Err(report) => Err(CmdError::Fail(format!("Error: {report}"))),
    }
}

/// The `feature@NAME` settings of a `zpool create`, in the order given.
#[derive(Default)]
pub struct CreateFeatures {
    pub settings: Vec<(&'static FeatureInfo, bool)>,
    /// `-d`, or `-o version=` below 5000: no feature unless named.
    pub none_by_default: bool,
}

/// The features `zpool create` enables, in OpenZFS's order (the `-o feature@` ones first,
/// as given, then every other allowed one in table order), warning for a named one the
/// compatibility set leaves out.
pub fn create_features(
    request: &CreateFeatures,
    compat: &Compat,
    ctx: &mut Ctx,
) -> Vec<&'static FeatureInfo> {
    let mut enabled: Vec<&'static FeatureInfo> = Vec::new();
    for (info, on) in &request.settings {
        if *on && !enabled.contains(info) {
            enabled.push(info);
        }
    }
    for info in ZETTA_FEATURES {
        let named = request.settings.iter().find(|(f, _)| *f == info);
        match named {
            Some((_, true)) if !compat.allows(info.name) => ctx.warn(&format!(
                "Warning: feature \"{}\" enabled but is not in specified 'compatibility' feature set.\n",
                info.name
            )),
            Some(_) => {}
            None if !request.none_by_default && compat.allows(info.name) => enabled.push(info),
            None => {}
        }
    }
    enabled
}

/// `-o version=N` at create: the version, when it is one OpenZFS knows (libzfs's words
/// otherwise) and one Zetta writes (5000, `zfeature::LEGACY_VERSIONS_WRITTEN`).
pub fn check_create_version(pool: &str, value: &str) -> Result<u64, CmdError> {
    let number = value.parse::<u64>().map_err(|_| {
        CmdError::Fail(format!(
            "cannot create '{pool}': 'version' must be a number"
        ))
    })?;
    if !version_is_supported(number) {
        return Err(CmdError::Fail(format!(
            "cannot create '{pool}': property 'version' number {number} is invalid."
        )));
    }
    if !zfeature::version_is_written(number) {
        return Err(CmdError::Fail(format!(
            "cannot create '{pool}': pool version {number} is not supported by this \
             implementation: only versions {} and {SPA_VERSION_FEATURES} (feature flags) \
             pools can be created",
            written_legacy_list()
        )));
    }
    Ok(number)
}

/// The legacy versions Zetta writes, as a sentence lists them ("28", "23 and 28").
fn written_legacy_list() -> String {
    let names: Vec<String> = zfeature::LEGACY_VERSIONS_WRITTEN
        .iter()
        .map(u64::to_string)
        .collect();
    names.join(", ")
}

/// The pool's `compatibility` allowed set (an unreadable list allows nothing new, as
/// `upgrade_enable_all` gives up).
fn pool_compat(imported: &Imported) -> Result<Compat, String> {
    load_compat(imported.spa.props.get_str("compatibility").unwrap_or("off"))
}

const USAGE_UPGRADE: &str = "\tupgrade\n\tupgrade -v\n\tupgrade [-V version] <-a | pool ...>\n";

/// The synopsis `zpool upgrade` prints.
pub const SYNOPSIS: &str = USAGE_UPGRADE;

/// `zpool upgrade [-v] | [-V version] <-a | pool …>`
pub fn cmd_upgrade(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "avV:")?;
    let all = parsed.has('a');
    let show = parsed.has('v');
    let mut target = SPA_VERSION_FEATURES;
    if let Some(version) = parsed.last('V') {
        let number = version
            .parse::<u64>()
            .ok()
            .filter(|v| version_is_supported(*v));
        let Some(number) = number else {
            return usage(format!("invalid version '{version}'"));
        };
        if !all && parsed.operands.is_empty() {
            return usage("-V option is incompatible with other arguments");
        }
        target = number;
    }
    if show && (all || !parsed.operands.is_empty()) {
        return usage("-v option is incompatible with other arguments");
    }
    if all && !parsed.operands.is_empty() {
        return usage("-a option should not be used along with a pool name");
    }
    ctx.print("This system supports ZFS pool feature flags.\n\n");
    if show {
        ctx.print(&supported_listing());
        return Ok(());
    }
    if !all && parsed.operands.is_empty() {
        return list_upgradable(ctx);
    }
    let mut pools = pool::open_named(&parsed.operands)?;
    let mut any_changed = false;
    let mut status = Ok(());
    for imported in pools.iter_mut() {
        let line = super::create::history_line("upgrade", args);
        match upgrade_one(imported, target, all, &line, ctx) {
            Ok(changed) => any_changed |= changed,
            Err(e) => {
                ctx.warn(&format!("{}\n", e.message()));
                status = Err(CmdError::Fail(String::new()));
            }
        }
    }
    if all && !any_changed && status.is_ok() {
        if target == SPA_VERSION_FEATURES {
            ctx.print(
                "All pools are already formatted using feature flags.\n\n\
                 Every feature flags pool already has all supported and requested features enabled.\n",
            );
        } else {
            ctx.print(&format!(
                "All pools are already formatted with version {target} or higher.\n"
            ));
        }
    }
    status
}

/// `zpool upgrade -v`'s feature and version tables.
fn supported_listing() -> String {
    let mut text = String::from(
        "The following features are supported:\n\nFEAT DESCRIPTION\n\
         -------------------------------------------------------------\n",
    );
    for info in ZETTA_FEATURES {
        let ro = if info.readonly_compat {
            " (read-only compatible)"
        } else {
            ""
        };
        text.push_str(&format!(
            "{:<37}{ro}\n     {}\n",
            info.name, info.description
        ));
    }
    text.push('\n');
    // Legacy versions: Zetta reads them (import), it does not write them.
    text.push_str(
        "The following legacy versions are also supported:\n\n\
         VER  DESCRIPTION\n\
         ---  --------------------------------------------------------\n",
    );
    for (version, what) in LEGACY_VERSIONS.iter().enumerate() {
        text.push_str(&format!(" {:<3} {what}\n", version + 1));
    }
    text.push_str(
        "\nFor more information on a particular version, including supported releases,\n\
         see the ZFS Administration Guide.\n\n",
    );
    text
}

/// `zpool upgrade -v`'s legacy version table, versions 1..=28.
const LEGACY_VERSIONS: [&str; 28] = [
    "Initial ZFS version",
    "Ditto blocks (replicated metadata)",
    "Hot spares and double parity RAID-Z",
    "zpool history",
    "Compression using the gzip algorithm",
    "bootfs pool property",
    "Separate intent log devices",
    "Delegated administration",
    "refquota and refreservation properties",
    "Cache devices",
    "Improved scrub performance",
    "Snapshot properties",
    "snapused property",
    "passthrough-x aclinherit",
    "user/group space accounting",
    "stmf property support",
    "Triple-parity RAID-Z",
    "Snapshot user holds",
    "Log device removal",
    "Compression using zle (zero-length encoding)",
    "Deduplication",
    "Received properties",
    "Slim ZIL",
    "System attributes",
    "Improved scrub stats",
    "Improved snapshot deletion performance",
    "Improved snapshot creation performance",
    "Multiple vdev replacements",
];

/// The supported features a pool lacks (`upgrade_list_disabled_cb`: every one, the
/// compatibility set notwithstanding), by name; none for a legacy or foreign pool.
fn disabled_features(imported: &Imported) -> Vec<&'static str> {
    if imported.spa.openzfs().is_some() || imported.spa.version() < SPA_VERSION_FEATURES {
        return Vec::new();
    }
    imported
        .spa
        .features()
        .disabled()
        .iter()
        .map(|f| f.name)
        .collect()
}

/// Whether `zpool status` says "Some supported and requested features are not enabled"
/// (`check_status`: a feature the compatibility set asks for is missing).
pub fn requested_features_missing(imported: &Imported) -> bool {
    let Ok(compat) = pool_compat(imported) else {
        return false;
    };
    disabled_features(imported)
        .iter()
        .any(|name| compat.allows(name))
}

/// `zpool upgrade` with no pool: legacy pools (`upgrade_list_older_cb`), then features
/// missing (`upgrade_list_disabled_cb`).
fn list_upgradable(ctx: &mut Ctx) -> CmdResult {
    let pools = pool::open_all()?;
    let legacy: Vec<(u64, &str)> = pools
        .iter()
        .filter_map(|p| {
            let version = p.spa.version();
            (version < SPA_VERSION_FEATURES).then_some((version, p.spa.name.as_str()))
        })
        .collect();
    if legacy.is_empty() {
        ctx.print("All pools are formatted using feature flags.\n\n");
    } else {
        let mut text = String::from(
            "The following pools are formatted with legacy version numbers and can\n\
             be upgraded to use feature flags.  After being upgraded, these pools\n\
             will no longer be accessible by software that does not support feature\n\
             flags.\n\n\
             Note that setting a pool's 'compatibility' feature to 'legacy' will\n\
             inhibit upgrades.\n\nVER  POOL\n---  ------------\n",
        );
        for (version, name) in legacy {
            text.push_str(&format!("{version:2}   {name}\n"));
        }
        text.push_str("\nUse 'zpool upgrade -v' for a list of available legacy versions.\n");
        ctx.print(&text);
    }
    let mut first = true;
    for imported in &pools {
        let missing = disabled_features(imported);
        if missing.is_empty() {
            continue;
        }
        if first {
            ctx.print(
                "\nSome supported features are not enabled on the following pools. Once a\n\
                 feature is enabled the pool may become incompatible with software\n\
                 that does not support the feature. See zpool-features(7) for details.\n\n\
                 Note that the pool 'compatibility' feature can be used to inhibit\n\
                 feature upgrades.\n\nPOOL  FEATURE\n---------------\n",
            );
            first = false;
        }
        let mut text = format!("{}\n", imported.spa.name);
        for name in missing {
            text.push_str(&format!("      {name}\n"));
        }
        ctx.print(&text);
    }
    if first {
        ctx.print("Every feature flags pool has all supported and requested features enabled.\n");
    } else {
        ctx.print("\n");
    }
    Ok(())
}

/// `upgrade_one` / `upgrade_cb`: raises the pool to `target` (`upgrade_version`), then,
/// for a feature-flags target, enables the allowed features the pool lacks
/// (`upgrade_enable_all`). Returns whether it changed the pool.
fn upgrade_one(
    imported: &mut Imported,
    target: u64,
    all: bool,
    history: &str,
    ctx: &mut Ctx,
) -> Result<bool, CmdError> {
    let name = imported.spa.name.clone();
    if let Some(foreign) = imported.spa.openzfs() {
        // A pool OpenZFS wrote is imported read-only here: its features stay as they are.
        if foreign.version < SPA_VERSION_FEATURES {
            return Err(CmdError::Fail(format!(
                "cannot upgrade '{name}': pool is read-only"
            )));
        }
        return Err(CmdError::Fail(format!(
            "cannot set property for '{name}': pool is read-only"
        )));
    }
    let current = imported.spa.version();
    if current > target {
        // `upgrade_cb` (-a) passes such a pool by in silence.
        if !all {
            ctx.print(&format!(
                "Pool '{name}' is already formatted using more current version '{current}'.\n\n"
            ));
        }
        return Ok(false);
    }
    if target != SPA_VERSION_FEATURES && current == target {
        if !all {
            ctx.print(&format!(
                "Pool '{name}' is already formatted using version {target}.\n\n"
            ));
        }
        return Ok(false);
    }
    let compat =
        pool_compat(imported).map_err(|report| CmdError::Fail(format!("Error: {report}")))?;
    let mut text = String::new();
    if current < target {
        // `upgrade_version`.
        if imported.spa.props.get_str("compatibility") == Some("legacy") {
            return Err(CmdError::Fail(
                "Upgrade not performed because 'compatibility' property set to 'legacy'."
                    .to_string(),
            ));
        }
        if !zfeature::version_is_written(target) {
            return Err(CmdError::Fail(format!(
                "cannot upgrade '{name}': pool version {target} is not supported by this \
                 implementation: only versions {} and {SPA_VERSION_FEATURES} (feature \
                 flags) pools are written",
                written_legacy_list()
            )));
        }
        pool::writable(imported, &format!("cannot upgrade '{name}'"))?;
        imported
            .spa
            .upgrade(target)
            .map_err(|e| CmdError::Fail(pool::spa_error_text(&e)))?;
        pool::commit(imported)?;
        if target >= SPA_VERSION_FEATURES {
            text.push_str(&format!(
                "Successfully upgraded '{name}' from version {current} to feature flags.\n"
            ));
        } else {
            text.push_str(&format!(
                "Successfully upgraded '{name}' from version {current} to version {target}.\n"
            ));
        }
    }
    let mut enabled = Vec::new();
    if target >= SPA_VERSION_FEATURES {
        enabled = imported
            .spa
            .features()
            .disabled()
            .into_iter()
            .filter(|f| compat.allows(f.name))
            .collect();
    }
    if enabled.is_empty() {
        if current == target && !all {
            ctx.print(&format!(
                "Pool '{name}' already has all supported and requested features enabled.\n"
            ));
        }
        if current < target {
            // The command line, once per pool changed (`zpool_log_history`).
            imported.spa.log_history(history);
            pool::commit(imported)?;
            text.push('\n');
            ctx.print(&text);
            return Ok(true);
        }
        return Ok(false);
    }
    pool::writable(imported, &format!("cannot set property for '{name}'"))?;
    imported
        .spa
        .check_upgradable()
        .map_err(|e| CmdError::Fail(pool::spa_error_text(&e)))?;
    text.push_str(&format!("Enabled the following features on '{name}':\n"));
    for info in &enabled {
        // Each `feature@NAME=enabled` is its own `zpool_set_prop` in OpenZFS; here they
        // share the open txg, dependencies first as `spa_feature_enable` orders them.
        imported.spa.feature_enable(info);
        text.push_str(&format!("  {}\n", info.name));
    }
    // The command line, once per pool changed (`zpool_log_history` in `upgrade_cb`).
    imported.spa.log_history(history);
    pool::commit(imported)?;
    text.push('\n');
    ctx.print(&text);
    Ok(true)
}

/// `zpool set version=N POOL`: libzfs refuses a version below the pool's or one OpenZFS
/// does not know; the kernel (`spa_prop_validate`) refuses one above 28 (feature flags
/// come by `zpool upgrade` or a `feature@` property) with EINVAL; the pool's own version
/// changes nothing. Zetta's pools are 28 or 5000, so no setting raises a version here.
pub fn set_version(imported: &mut Imported, value: &str) -> Result<(), String> {
    let number = value
        .parse::<u64>()
        .map_err(|_| "'version' must be a number".to_string())?;
    let current = imported.spa.version();
    if number < current || !version_is_supported(number) {
        return Err(format!("property 'version' number {number} is invalid."));
    }
    if number > zetta::spa::openzfs::feature::SPA_VERSION_BEFORE_FEATURES {
        return Err("invalid argument for this pool operation".to_string());
    }
    if number == current {
        return Ok(());
    }
    imported
        .spa
        .upgrade(number)
        .map_err(|e| pool::spa_error_text(&e))
}

/// `zpool set feature@NAME=enabled POOL`.
pub fn set_feature(imported: &mut Imported, name: &str) -> Result<(), String> {
    let Some(info) = zfeature::lookup_name(name) else {
        return Err(format!("feature '{name}' unsupported by kernel"));
    };
    imported
        .spa
        .check_upgradable()
        .map_err(|e| pool::spa_error_text(&e))?;
    imported.spa.feature_enable(info);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: `off` and `legacy` are the two words libzfs never looks up as files; any
    // other value is files, and a missing one is refused with libzfs's report.
    #[test]
    fn compat_words_and_missing_files() {
        assert!(load_compat("off").unwrap().allows("lz4_compress"));
        assert!(!load_compat("legacy").unwrap().allows("lz4_compress"));
        assert_eq!(
            load_compat("no-such-file-here").unwrap_err(),
            "could not read/parse feature file(s): no-such-file-here "
        );
    }

    // Why: `zpool upgrade -v` must print 2.3's layout: the name padded to 37 columns,
    // the read-only-compatible mark, the description indented by five.
    #[test]
    fn upgrade_v_lists_features_as_openzfs_does() {
        let text = supported_listing();
        // `%-37s` then " (read-only compatible)": the mark starts in column 38.
        let async_destroy = format!(
            "{:<37} (read-only compatible)\n     Destroy filesystems asynchronously.\n",
            "async_destroy"
        );
        assert!(text.contains(&async_destroy), "{text}");
        assert!(text.contains(
            "lz4_compress                         \n     LZ4 compression algorithm support.\n"
        ));
        assert!(text.contains(" 28  Multiple vdev replacements\n"));
        assert!(text.contains(" 1   Initial ZFS version\n"));
    }
}
