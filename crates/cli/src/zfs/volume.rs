//! Volumes at the command line: `zfs create -V` (OpenZFS `zfs_do_create` with
//! `default_volblocksize`, and libzfs `zfs_create`'s volume checks), the type of a dataset
//! for `list`/`get`/`set`, `volsize` changes with their `refreservation` follow-up
//! (libzfs `zfs_add_synthetic_resv`) and `refreservation=auto` (`zfs_fix_auto_resv`).
//!
//! The engine keeps `volsize` and `volblocksize` in the volume's own object set
//! (`zetta::zvol`), never in the props ZAP; `refreservation` and `volmode` are ordinary
//! stored properties.

use super::{check_nesting, create_parents, fail, spa_fail, store_created, usage, validate_as};
use crate::zpool::pool::{self, Imported};
use crate::zpool::{CmdError, CmdResult, Ctx, Parsed};
use zetta::zvol::{volsize_to_reservation, RaidzShape, VolumeInfo, ZVOL_DEFAULT_BLOCKSIZE};
use zetta_zprop::zfs_prop::{nicestrtonum, REFRESERVATION_AUTO};
use zetta_zprop::{DatasetType, PropValue, SetValue, ZfsProp};

/// A dataset's type (head names only: `fs@snap` and `fs#bm` are the caller's).
pub(crate) fn dataset_type(spa: &mut zetta::spa::Spa, name: &str) -> DatasetType {
    match spa.is_volume(name) {
        Ok(true) => DatasetType::Volume,
        _ => DatasetType::Filesystem,
    }
}

/// The raidz top-level vdevs of the pool, for `volsize_to_reservation`.
fn raidz_shapes(spa: &zetta::spa::Spa) -> Vec<RaidzShape> {
    spa.root
        .children
        .iter()
        .filter_map(|top| match top.kind {
            zetta::vdev::VdevKind::Raidz { parity } => Some(RaidzShape {
                children: top.children.len() as u64,
                parity: u64::from(parity),
                ashift: u64::from(top.ashift),
            }),
            _ => None,
        })
        .collect()
}

/// `zvol_volsize_to_reservation` for this pool; `copies` as given with `-o` (libzfs reads
/// only the command's own list, not the inherited value).
pub(crate) fn reservation_for(spa: &zetta::spa::Spa, info: VolumeInfo, copies: u64) -> u64 {
    volsize_to_reservation(
        info.size_bytes,
        info.block_size_bytes,
        copies,
        &raidz_shapes(spa),
    )
}

/// The value of `-o copies=N` among `settings` (1 when absent).
fn copies_of(settings: &[SetValue]) -> u64 {
    settings
        .iter()
        .find_map(|s| match s {
            SetValue::Native(ZfsProp::Copies, value) => value.as_number(),
            _ => None,
        })
        .unwrap_or(1)
}

/// `zfs create [-ps] [-b volblocksize] [-o prop=value]… -V size volume`.
pub(super) fn cmd_create_volume(parsed: &Parsed, args: &[String], ctx: &mut Ctx) -> CmdResult {
    let text = parsed.values('V').last().cloned().unwrap_or_default();
    let mut volsize = match nicestrtonum(&text) {
        Ok(size) => size,
        Err(e) => return fail(format!("bad volume size '{text}': {e}")),
    };
    let mut block_given = None;
    if let Some(text) = parsed.values('b').last() {
        match nicestrtonum(text) {
            Ok(size) => block_given = Some(size),
            Err(e) => return fail(format!("bad volume block size '{text}': {e}")),
        }
    }
    if parsed.has('u') {
        return usage("'-u' can only be used when creating a filesystem");
    }
    let [name] = parsed.operands.as_slice() else {
        return usage(if parsed.operands.is_empty() {
            "missing volume argument"
        } else {
            "too many arguments"
        });
    };
    let mut imported = pool::open_pool(super::pool_of(name)).map_err(|_| {
        CmdError::Fail(format!(
            "cannot open '{}': no such pool",
            super::pool_of(name)
        ))
    })?;
    // zfs_valid_proplist over -o, -b (as volblocksize) and -V (as volsize).
    let mut settings = Vec::new();
    for option in parsed.values('o') {
        let Some((prop, value)) = option.split_once('=') else {
            return usage("missing '=' for property=value argument");
        };
        settings.push(validate_as(
            name,
            prop,
            value,
            true,
            DatasetType::Volume,
            None,
        )?);
    }
    if let Some(block) = block_given {
        validate_as(
            name,
            "volblocksize",
            &block.to_string(),
            true,
            DatasetType::Volume,
            None,
        )?;
    }
    // -o volblocksize= is the same property; -b wins as the later nvlist entry does.
    let from_option = settings.iter().find_map(|s| match s {
        SetValue::Native(ZfsProp::Volblocksize, value) => value.as_number(),
        _ => None,
    });
    let block = block_given.or(from_option);
    if let Some(block) = block.filter(|b| *b < ZVOL_DEFAULT_BLOCKSIZE) {
        ctx.warn(&format!(
            "Warning: volblocksize ({block}) is less than the default minimum block size \
             ({ZVOL_DEFAULT_BLOCKSIZE}).\nTo reduce wasted space a volblocksize of \
             {ZVOL_DEFAULT_BLOCKSIZE} is recommended.\n"
        ));
    }
    let block = block.unwrap_or(ZVOL_DEFAULT_BLOCKSIZE);
    // zfs_do_create rounds the size up to a whole number of blocks.
    if !volsize.is_multiple_of(block) {
        volsize = volsize.next_multiple_of(block);
    }
    let sparse = parsed.has('s');
    let explicit_resv = settings
        .iter()
        .any(|s| matches!(s, SetValue::Native(ZfsProp::Refreservation, _)));
    let mut settings: Vec<SetValue> = settings
        .into_iter()
        .filter(|s| {
            !matches!(
                s,
                SetValue::Native(ZfsProp::Volblocksize | ZfsProp::Volsize, _)
            )
        })
        .collect();
    let info = VolumeInfo {
        size_bytes: volsize,
        block_size_bytes: block,
    };
    if !sparse && !explicit_resv {
        let reservation = reservation_for(&imported.spa, info, copies_of(&settings));
        settings.push(SetValue::Native(
            ZfsProp::Refreservation,
            PropValue::Number(reservation),
        ));
    }
    for set in &mut settings {
        fix_auto_reservation(&imported.spa, set, info, 1);
    }
    let mut plan = super::CreatePlan::of(parsed);
    if volsize.to_string()
        != plan
            .props
            .iter()
            .find(|(p, _)| p == "volsize")
            .map_or("", |(_, v)| v.as_str())
    {
        plan.add("volsize", &volsize.to_string());
    }
    for set in &settings {
        if let SetValue::Native(ZfsProp::Refreservation, PropValue::Number(bytes)) = set {
            if !plan.has("refreservation") {
                plan.add("refreservation", &bytes.to_string());
            }
        }
    }
    if parsed.has('p') {
        // An existing volume is no error with -p (zfs_dataset_exists, by type).
        if imported.spa.lookup_dir(name).map_err(spa_fail)?.is_some()
            && dataset_type(&mut imported.spa, name) == DatasetType::Volume
        {
            return Ok(());
        }
        plan.ancestors(ctx, name);
        if !plan.dryrun {
            create_parents(&mut imported, name)?;
        }
    }
    plan.report(ctx, name);
    if plan.dryrun {
        return Ok(());
    }
    if !name.contains('/') {
        // check_parents: a pool's name has no parent.
        return fail(format!("cannot create '{name}': missing dataset name"));
    }
    zetta_zprop::namecheck::validate_dataset_name(name, true)
        .map_err(|e| CmdError::Fail(format!("cannot create '{name}': {e}")))?;
    check_nesting(name)?;
    if volsize == 0 {
        return fail(format!(
            "cannot create '{name}': volume size cannot be zero"
        ));
    }
    pool::writable(&imported, &format!("cannot create '{name}'"))?;
    if imported.spa.lookup_dir(name).map_err(spa_fail)?.is_some() {
        return fail(format!("cannot create '{name}': dataset already exists"));
    }
    imported
        .spa
        .create_volume(name, volsize, block)
        .map_err(|e| super::errors::zfs_fail(super::errors::ZfsOp::Other)(e))?;
    store_created(&mut imported, name, settings)?;
    super::finish(&mut imported, "create", args)
}

/// `refreservation=auto` on a volume: its full reservation (`zfs_fix_auto_resv`).
pub(crate) fn fix_auto_reservation(
    spa: &zetta::spa::Spa,
    set: &mut SetValue,
    info: VolumeInfo,
    copies: u64,
) {
    if let SetValue::Native(ZfsProp::Refreservation, PropValue::Number(n)) = set {
        if *n == REFRESERVATION_AUTO {
            *n = reservation_for(spa, info, copies);
        }
    }
}

/// `zfs set volsize=N vol`: the new size, and a `refreservation` that covered the old size
/// follows to cover the new one (`zfs_add_synthetic_resv`); a sparse volume keeps its own.
pub(crate) fn set_volsize(imported: &mut Imported, name: &str, size: u64) -> CmdResult {
    let Some(old) = imported.spa.volume_info(name).map_err(spa_fail)? else {
        return fail(format!(
            "cannot set property for '{name}': 'volsize' does not apply to datasets of this type"
        ));
    };
    let copies = current_copies(imported, name)?;
    let old_resv = local_number(imported, name, "refreservation")?;
    let new_info = VolumeInfo {
        size_bytes: size,
        ..old
    };
    let follow = old_resv == Some(reservation_for(&imported.spa, old, copies));
    if follow {
        let resv = reservation_for(&imported.spa, new_info, copies);
        let set = SetValue::Native(ZfsProp::Refreservation, PropValue::Number(resv));
        if super::space_limit_refusal(imported, name, &set)?.is_some() {
            return fail(format!(
                "cannot set property for '{name}': size is greater than available space"
            ));
        }
        super::store(imported, name, set)?;
    }
    imported
        .spa
        .set_volume_size(name, size)
        .map_err(|e| super::errors::zfs_fail(super::errors::ZfsOp::Other)(e))
}

/// The `copies` in force on a dataset.
pub(crate) fn current_copies(imported: &mut Imported, name: &str) -> Result<u64, CmdError> {
    let props = super::load_props(imported)?;
    Ok(zetta_zprop::resolve(&props, name, "copies")
        .and_then(|r| r.value.parse().ok())
        .unwrap_or(1))
}

/// A property's local numeric value, if set.
fn local_number(imported: &mut Imported, name: &str, prop: &str) -> Result<Option<u64>, CmdError> {
    Ok(imported
        .spa
        .local_props(name)
        .map_err(spa_fail)?
        .into_iter()
        .find(|(p, _)| p == prop)
        .and_then(|(_, v)| v.parse().ok()))
}
