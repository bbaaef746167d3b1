//! `-j`: JSON output of `zpool` (OpenZFS 2.3 `zpool_json_schema`, `fill_pool_info`,
//! `fill_vdev_info` in `cmd/zpool/zpool_main.c`); the writer is `zetta_zutil::json`.
//!
//! Theory: every `-j` document is `{"output_version": {...}, "pools": {KEY: POOL}}`, KEY
//! being the pool's name or, with `--json-pool-key-guid`, its guid in decimal. POOL starts
//! with `fill_pool_info`: name, `type` "POOL" (list and get only), state, pool_guid, txg,
//! spa_version "5000", zpl_version "5" — numbers as strings unless `--json-int`, which
//! also implies `-p` (exact values). A vdev starts with `fill_vdev_info`: name,
//! vdev_type, guid, path (leaves), class (normal, log, l2cache, spare), state.
//!
//! Flags are checked as 2.3 checks them, in its order: `--json-flat-vdevs`, `--json-int`
//! and `--json-pool-key-guid` without `-j` are usage errors with 2.3's words.

use super::pool::Imported;
use super::{usage, CmdError, Ctx, Parsed};
use super::{OPTION_JSON, OPTION_JSON_FLAT_VDEVS, OPTION_JSON_INT, OPTION_JSON_POOL_KEY_GUID};
use zetta::vdev::{Vdev, VdevKind};
use zetta_zutil::json::Json;

/// `SPA_VERSION_STRING` and `ZPL_VERSION_STRING` of OpenZFS 2.3: the versions the
/// software speaks (feature-flag pools, ZPL 5), printed for every pool.
pub const SPA_VERSION: u64 = 5000;
pub const ZPL_VERSION: u64 = 5;

/// The `-j` family of flags of one command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonOptions {
    pub enabled: bool,
    pub as_int: bool,
    pub pool_key_guid: bool,
    pub flat_vdevs: bool,
}

impl JsonOptions {
    pub fn from_parsed(parsed: &Parsed) -> Result<JsonOptions, CmdError> {
        let options = JsonOptions {
            enabled: parsed.has(OPTION_JSON),
            as_int: parsed.has(OPTION_JSON_INT),
            pool_key_guid: parsed.has(OPTION_JSON_POOL_KEY_GUID),
            flat_vdevs: parsed.has(OPTION_JSON_FLAT_VDEVS),
        };
        if options.flat_vdevs && !options.enabled {
            return usage("'--json-flat-vdevs' only works with '-j' option");
        }
        if options.as_int && !options.enabled {
            return usage("'--json-int' only works with '-j' option");
        }
        if options.pool_key_guid && !options.enabled {
            return usage("'json-pool-key-guid' only works with '-j' option");
        }
        Ok(options)
    }

    /// A number as `nice_num_str_nvlist` puts it.
    pub fn number(&self, value: u64, literal: bool) -> Json {
        zetta_zutil::json::nice_number(
            value,
            literal || self.as_int,
            self.as_int,
            zetta_zutil::json::NiceFormat::Number,
        )
    }

    /// A number `nice_num_str_nvlist` prints exactly whatever `-p` says (guids, txgs).
    pub fn exact(&self, value: u64) -> Json {
        self.number(value, true)
    }

    /// The key of a pool in `"pools"`.
    pub fn pool_key(&self, name: &str, guid: u64) -> String {
        if self.pool_key_guid {
            guid.to_string()
        } else {
            name.to_string()
        }
    }

    /// `"time"` of `-T u|d` (`time(NULL)` as a number with `--json-int`).
    pub fn add_time(&self, document: &mut Json, format: Option<char>) {
        if format.is_none() {
            return;
        }
        if self.as_int {
            let now = u64::try_from(super::now_epoch_secs()).unwrap_or(0);
            document.insert("time", Json::Number(now));
        } else if let Some(text) = super::timestamp_text(format) {
            document.insert("time", Json::string(text));
        }
    }
}

/// Prints a document as `zcmd_print_json` does: one line.
pub fn print(ctx: &mut Ctx, document: &Json) {
    ctx.print(&format!("{}\n", document.to_text()));
}

/// `zpool_json_schema` with an empty `"pools"` object.
pub fn pools_document(command: &str) -> Json {
    let mut document = zetta_zutil::json::output_version(&format!("zpool {command}"));
    document.insert("pools", Json::object());
    document
}

/// `fill_pool_info`: `txg` is left out when unknown (a pool that cannot be opened).
pub fn pool_info(
    options: &JsonOptions,
    name: &str,
    guid: u64,
    txg: Option<u64>,
    state: &str,
    with_type: bool,
) -> Json {
    let mut pool = Json::object();
    pool.insert("name", Json::string(name));
    if with_type {
        pool.insert("type", Json::string("POOL"));
    }
    pool.insert("state", Json::string(state));
    if guid != 0 {
        pool.insert("pool_guid", options.exact(guid));
    }
    if let Some(txg) = txg.filter(|t| *t != 0) {
        pool.insert("txg", options.exact(txg));
    }
    pool.insert("spa_version", options.exact(SPA_VERSION));
    pool.insert("zpl_version", options.exact(ZPL_VERSION));
    pool
}

/// `fill_pool_info` of an open pool.
pub fn imported_pool_info(options: &JsonOptions, imported: &Imported, with_type: bool) -> Json {
    let spa = &imported.spa;
    pool_info(
        options,
        &spa.name,
        spa.guid.0,
        Some(spa.last_synced_txg().0),
        spa.health().name(),
        with_type,
    )
}

/// The `class` of `fill_vdev_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VdevClass {
    Normal,
    Log,
    L2cache,
    Spare,
}

impl VdevClass {
    pub fn name(self) -> &'static str {
        match self {
            VdevClass::Normal => "normal",
            VdevClass::Log => "log",
            VdevClass::L2cache => "l2cache",
            VdevClass::Spare => "spare",
        }
    }
}

/// `fill_vdev_info`: `name` as printed (the pool's name for the root vdev).
pub fn vdev_info(
    options: &JsonOptions,
    name: &str,
    vdev: &Vdev,
    class: VdevClass,
    state: &str,
) -> Json {
    let mut info = Json::object();
    info.insert("name", Json::string(name));
    info.insert("vdev_type", Json::string(vdev.type_name()));
    if vdev.guid.0 != 0 {
        info.insert("guid", options.exact(vdev.guid.0));
    }
    if vdev.kind == VdevKind::Leaf {
        info.insert("path", Json::string(vdev.path.clone()));
    }
    info.insert("class", Json::string(class.name()));
    info.insert("state", Json::string(state));
    info
}

/// Parses `-j` and its companions for a command with the given long options and
/// returns the options with the parse.
pub fn parse_with_json(
    args: &[String],
    spec: &str,
    longs: &[(&str, char)],
    gnu_program: Option<&str>,
) -> Result<(Parsed, JsonOptions), CmdError> {
    let parsed = super::getopt_long(args, spec, longs, gnu_program)?;
    let options = JsonOptions::from_parsed(&parsed)?;
    Ok((parsed, options))
}

/// `zpool version -j` / `zfs version -j` (`zfs_version_nvlist`): Zetta's engine is the
/// same program as its commands, so "userland" and "kernel" name the same version.
pub fn version_document(command: &str) -> Json {
    let mut document = zetta_zutil::json::output_version(command);
    let version = format!("zetta-{}", env!("CARGO_PKG_VERSION"));
    let mut versions = Json::object();
    versions.insert("userland", Json::string(version.clone()));
    versions.insert("kernel", Json::string(version));
    document.insert("zfs_version", versions);
    document
}
