//! `zpool split [-gLlnP] [-o property=value]… [-o mntopts] [-R root] pool newpool
//! [device…]` (OpenZFS `zpool_do_split`, `libzfs_pool.c` `zpool_vdev_split`): one leaf of
//! every top-level mirror leaves to form `newpool` (`zetta::spa::split` does the work and
//! says in which order it writes). Without `-R` the new pool is left exported, as OpenZFS
//! leaves it (`ZPOOL_EXPORT_AFTER_SPLIT`); with `-R` it stays imported under that altroot
//! and out of the default cache file, as `zpool import -R` does. `-n` prints the layout
//! the new pool would have. `-l` (load keys) has nothing to load: Zetta has no encryption.

use super::create::history_line;
use super::pool::{self, Imported};
use super::props::{self, Phase};
use super::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use zetta::spa::split::SplitSlot;
use zetta::spa::{check_pool_name, Spa};

/// How `-n` names a leaf: its guid (`-g`), its full path (`-P`), else as `zpool status`
/// names it (`zpool_vdev_name`).
fn leaf_display(leaf: &zetta::vdev::Vdev, parsed: &super::Parsed) -> String {
    if parsed.has('g') {
        leaf.guid.0.to_string()
    } else if parsed.has('P') {
        leaf.path.clone()
    } else {
        pool::vdev_short_name(&leaf.path).to_string()
    }
}

pub fn cmd_split(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "gLR:lno:P")?;
    let import = parsed.has('R');
    let mut new_props: Vec<(String, String)> = Vec::new();
    let mut mntopts = false;
    for option in parsed.values('o') {
        match option.split_once('=') {
            Some((key, value)) => {
                if new_props.iter().any(|(k, _)| k == key) {
                    return usage(format!("property '{key}' specified multiple times"));
                }
                new_props.push((key.to_string(), value.to_string()));
            }
            None => mntopts = true,
        }
    }
    if !import && mntopts {
        return usage("setting mntopts is only valid when importing the pool");
    }
    if !import && parsed.has('l') {
        return usage("loading keys is only valid when importing the pool");
    }
    let (source, new_name, devices) = match parsed.operands.as_slice() {
        [] => return usage("Missing pool name"),
        [_] => return usage("Missing new pool name"),
        [source, new_name, devices @ ..] => (source, new_name, devices),
    };
    let mut imported = pool::open_pool(source)?;
    let action = format!("Unable to split {source}");
    check_pool_name(new_name).map_err(|why| CmdError::Fail(format!("{action}: {why}")))?;
    for (key, value) in &new_props {
        let key = props::canonical(key);
        if key == "readonly" && value == "on" {
            return fail(format!(
                "{action}: property readonly can only be set at import time"
            ));
        }
        props::validate(&key, value, Phase::Import)
            .map_err(|why| CmdError::Fail(format!("{action}: {why}")))?;
    }
    let altroot = parsed.last('R');
    if let Some(root) = altroot.as_deref().filter(|root| !root.starts_with('/')) {
        return fail(format!("{action}: bad alternate root '{root}'"));
    }
    // Device operands as the pool's leaves name them (a short name becomes its path).
    let named: Vec<String> = devices
        .iter()
        .map(|device| super::vdev_cmds::leaf_name(&imported.spa.root, device))
        .collect();
    let plan = imported
        .spa
        .split_plan(&named)
        .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    if parsed.has('n') {
        let mut text =
            format!("would create '{new_name}' with the following layout:\n\n\t{new_name}\n");
        for slot in &plan {
            if let SplitSlot::Leaf { top, child } = *slot {
                let leaf = &imported.spa.root.children[top].children[child];
                text.push_str(&format!("\t  {}\n", leaf_display(leaf, &parsed)));
            }
        }
        ctx.print(&text);
        return Ok(());
    }
    pool::writable(&imported, &action)?;
    if pool::load_cache()?
        .iter()
        .any(|entry| entry.name == *new_name)
    {
        return fail(format!("{action}: pool already exists"));
    }
    let on_disk: Vec<(String, String)> = new_props
        .iter()
        .map(|(key, value)| (props::canonical(key), value.clone()))
        .collect();
    let new_spa = imported
        .spa
        .split(new_name, &plan, &on_disk, pool::ARC_SIZE_BYTES_CLI)
        .map_err(|e| CmdError::Fail(format!("{action}: {}", pool::spa_error_text(&e))))?;
    imported.spa.log_history(&history_line("split", args));
    pool::commit(&mut imported)?;
    drop(imported);
    finish_new_pool(new_spa, altroot, args)
}

/// The new pool: exported (no `-R`), or kept imported under its altroot.
fn finish_new_pool(mut new_spa: Spa, altroot: Option<String>, args: &[String]) -> CmdResult {
    let new_name = new_spa.name.clone();
    let Some(root) = altroot else {
        return new_spa.export().map_err(|e| {
            CmdError::Fail(format!(
                "cannot export '{new_name}': {}",
                pool::spa_error_text(&e)
            ))
        });
    };
    new_spa.log_history(&history_line("split", args));
    pool::reset_stats(&mut new_spa);
    new_spa.props.set_str("altroot", &root);
    new_spa.props.set_str("cachefile", "none");
    new_spa.mark_config_dirty();
    let mut imported = Imported::owned(new_spa.guid.0, new_spa);
    pool::commit(&mut imported)?;
    let event = super::events::sysevent(&imported.spa, "pool_import", None);
    super::events::pump(Some(&imported.spa), vec![event]);
    Ok(())
}
