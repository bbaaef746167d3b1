//! `zfs mount` / `zfs unmount` (OpenZFS `zfs_main.c` `zfs_do_mount`, `libzfs_mount.c`) and
//! what a dataset's properties say about its mount: where (`mountpoint`, under the pool's
//! `altroot`), whether (`canmount`), and how (readonly, atime, relatime, exec, setuid,
//! devices, xattr, sync).
//!
//! Mounts live in the daemon (`daemon::mounts`); in direct mode there is no process to
//! serve them, so these commands refuse.
//!
//! `zfs mount -o OPTIONS` sets mount options for that mount only (OpenZFS's temporary
//! properties, `zfs_parse_mount_options` and `zfs_prop_get`'s ZPROP_SRC_TEMPORARY): `ro`,
//! `noatime`, `nodev`... override the property while the filesystem stays mounted, `zfs
//! get` shows them with source `temporary`, and the next mount goes back to the property.
//! With `remount` they apply to a mounted filesystem in place. Options that are no
//! property (`defaults`, `sync`...) are accepted and change nothing, as the kernel's ZPL
//! ignores the options it does not know.

use crate::daemon::mounts;
use crate::zpool::{fail, getopt, CmdError, CmdResult, Ctx};
use std::path::PathBuf;
use zetta::spa::Spa;
use zetta_fuse::{MountOptions, SnapDir, SyncMode};
use zetta_zprop::resolve;

/// Where a dataset mounts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Where {
    Path(PathBuf),
    None,
    Legacy,
}

/// One filesystem's mount settings, resolved through inheritance.
#[derive(Clone, Debug)]
pub struct MountSpec {
    pub name: String,
    pub at: Where,
    /// `on`, `off` or `noauto`.
    pub canmount: String,
    pub options: MountOptions,
    /// `overlay`: may mount over a non-empty directory (OpenZFS `zfs_mount_at`; `zfs
    /// mount -O` forces it).
    pub overlay: bool,
    /// Encrypted, its key not loaded (a foreign pool's: Zetta loads no keys): never
    /// mounted automatically, refused by `zfs mount` (OpenZFS `zfs_iter_cb`,
    /// `zfs_mount_at`).
    pub locked: bool,
}

impl MountSpec {
    /// What must match for a running mount to stay (a change means a new mount).
    pub fn key(&self) -> String {
        format!("{:?}", self.at)
    }

    /// The options a running mount takes in place, busy or not (a remount of the
    /// kernel's flags and the server's settings: `zetta_fuse::Mounted::apply_flags`).
    pub fn flags_key(&self) -> String {
        let o = &self.options;
        format!(
            "ro={} atime={} relatime={} exec={} suid={} dev={} xattr={} sync={:?} snapdir={:?}",
            o.readonly,
            o.atime,
            o.relatime,
            o.exec,
            o.setuid,
            o.devices,
            o.xattr,
            o.sync,
            o.snapdir
        )
    }
}

/// The property and value a mount option of `zfs mount -o` stands for (Linux's names,
/// `zfs_parse_mount_options`); None for options that are no property.
pub fn temporary_option(option: &str) -> Option<(&'static str, &'static str)> {
    Some(match option {
        "ro" => ("readonly", "on"),
        "rw" => ("readonly", "off"),
        "atime" => ("atime", "on"),
        "noatime" => ("atime", "off"),
        "relatime" => ("relatime", "on"),
        "norelatime" => ("relatime", "off"),
        "exec" => ("exec", "on"),
        "noexec" => ("exec", "off"),
        "suid" => ("setuid", "on"),
        "nosuid" => ("setuid", "off"),
        "dev" => ("devices", "on"),
        "nodev" => ("devices", "off"),
        "xattr" => ("xattr", "on"),
        "saxattr" => ("xattr", "sa"),
        "dirxattr" => ("xattr", "dir"),
        "noxattr" => ("xattr", "off"),
        "mand" => ("nbmand", "on"),
        "nomand" => ("nbmand", "off"),
        _ => return None,
    })
}

/// `-o OPTIONS` of `zfs mount`: whether it asks for a remount, and the temporary
/// properties, later options overriding earlier ones.
pub fn parse_mount_options(list: &str) -> (bool, Vec<(String, String)>) {
    let mut remount = false;
    let mut props: Vec<(String, String)> = Vec::new();
    for option in list.split(',').filter(|o| !o.is_empty()) {
        if option == "remount" {
            remount = true;
            continue;
        }
        if let Some((prop, value)) = temporary_option(option) {
            props.retain(|(p, _)| p != prop);
            props.push((prop.to_string(), value.to_string()));
        }
    }
    (remount, props)
}

/// Mount settings of every filesystem of the pool.
pub fn specs(spa: &mut Spa) -> Result<Vec<MountSpec>, CmdError> {
    let props = crate::zfs::load_spa_props(spa)?;
    let altroot = spa.props.get_str("altroot").map(str::to_string);
    let mut out = Vec::new();
    // `%` names are a receive's hidden work datasets, and a filesystem with receive state
    // is being (or was partly) received into: never mounted, as OpenZFS leaves
    // inconsistent datasets alone.
    let names = spa.dataset_names().map_err(crate::zfs::spa_fail)?;
    let receiving = |name: &str| {
        zetta_zprop::PropSource::local(&props, name, zetta::dmu_send::RECV_STATE_PROP).is_some()
    };
    // Volumes have no tree to mount.
    let mut volumes = std::collections::HashSet::new();
    for name in &names {
        if spa.is_volume(name).unwrap_or(false) {
            volumes.insert(name.clone());
        }
    }
    for name in names
        .into_iter()
        .filter(|n| !n.contains('%') && !receiving(n) && !volumes.contains(n))
    {
        let temporary = mounts::temporary_props(&name);
        let get = |prop: &str| {
            if let Some((_, value)) = temporary.iter().find(|(p, _)| p == prop) {
                return value.clone();
            }
            resolve(&props, &name, prop)
                .map(|r| r.value)
                .unwrap_or_default()
        };
        let on = |prop: &str| get(prop) != "off";
        let at = match get("mountpoint").as_str() {
            "none" => Where::None,
            "legacy" => Where::Legacy,
            path => Where::Path(PathBuf::from(crate::zfs::with_altroot(
                altroot.as_deref(),
                path,
            ))),
        };
        let options = MountOptions {
            readonly: get("readonly") == "on" || spa.readonly,
            atime: on("atime"),
            relatime: on("relatime"),
            exec: on("exec"),
            setuid: on("setuid"),
            devices: on("devices"),
            xattr: on("xattr"),
            sync: match get("sync").as_str() {
                "always" => SyncMode::Always,
                "disabled" => SyncMode::Disabled,
                _ => SyncMode::Standard,
            },
            snapdir: match get("snapdir").as_str() {
                "visible" => SnapDir::Visible,
                "disabled" => SnapDir::Disabled,
                _ => SnapDir::Hidden,
            },
            fsname: name.clone(),
        };
        let canmount = match get("canmount").as_str() {
            "" => "on".to_string(),
            value => value.to_string(),
        };
        let locked = spa.openzfs().is_some_and(|f| f.view.is_encrypted(&name));
        out.push(MountSpec {
            name: name.clone(),
            at,
            canmount,
            overlay: get("overlay") != "off",
            options,
            locked,
        });
    }
    Ok(out)
}

fn needs_daemon(verb: &str, what: &str) -> CmdError {
    CmdError::Fail(format!(
        "cannot {verb} '{what}': mounts are served by the zetta daemon (unset ZETTA_DIRECT)"
    ))
}

/// `zfs mount`: without arguments, lists mounted filesystems; `-a` mounts every
/// filesystem that may be; `fs` mounts one (even with canmount=noauto).
pub fn cmd_mount(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed =
        crate::zpool::getopt_long(args, "ajOo:", &[("json", crate::zpool::OPTION_JSON)], None)?;
    let json = parsed.has(crate::zpool::OPTION_JSON);
    if json && !parsed.operands.is_empty() {
        return Err(CmdError::Usage("too many arguments".to_string()));
    }
    if parsed.operands.is_empty() && !parsed.has('a') {
        // 2.3's -j: {"datasets": {fs: {"filesystem", "mountpoint"}}}, nothing at all
        // when nothing is mounted.
        let mut datasets = zetta_zutil::json::Json::object();
        for (name, path) in mounts::mounted_list() {
            if json {
                let mut item = zetta_zutil::json::Json::object();
                item.insert("filesystem", zetta_zutil::json::Json::string(name.clone()));
                let mountpoint = path.display().to_string();
                item.insert("mountpoint", zetta_zutil::json::Json::string(mountpoint));
                datasets.insert(&name, item);
            } else {
                ctx.print(&format!("{name:<30}  {}\n", path.display()));
            }
        }
        if json && !datasets.is_empty_object() {
            let mut document = zetta_zutil::json::output_version("zfs mount");
            document.insert("datasets", datasets);
            crate::zpool::json::print(ctx, &document);
        }
        return Ok(());
    }
    // share_mount: -a takes no operand, a filesystem is one.
    if parsed.has('a') && !parsed.operands.is_empty() || parsed.operands.len() > 1 {
        return Err(CmdError::Usage("too many arguments".to_string()));
    }
    if crate::daemon::registry::get().is_none() {
        let what = parsed.operands.first().cloned().unwrap_or_default();
        return Err(needs_daemon("mount", &what));
    }
    if parsed.has('a') {
        mounts::unsuppress_all();
        let mut messages = Vec::new();
        mounts::reconcile(&mut messages);
        return match messages.is_empty() {
            true => Ok(()),
            false => fail(messages.join("\n")),
        };
    }
    let name = &parsed.operands[0];
    let (remount, temporary) = parse_mount_options(&parsed.values('o').join(","));
    mounts::mount_named(name, parsed.has('O'), remount, &temporary).map_err(CmdError::Fail)
}

/// `zfs unmount [-f] -a | fs | mountpoint`.
pub fn cmd_unmount(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "af")?;
    // unshare_unmount: -a takes no operand, a filesystem is one.
    if parsed.has('a') && !parsed.operands.is_empty() || parsed.operands.len() > 1 {
        return Err(CmdError::Usage("too many arguments".to_string()));
    }
    if !parsed.has('a') && parsed.operands.is_empty() {
        return Err(CmdError::Usage("missing filesystem argument".to_string()));
    }
    if crate::daemon::registry::get().is_none() {
        let what = parsed.operands.first().cloned().unwrap_or_default();
        return Err(needs_daemon("unmount", &what));
    }
    let force = parsed.has('f');
    if parsed.has('a') {
        // Deepest mountpoint first (OpenZFS sorts the mounts and unmounts them in reverse):
        // a filesystem mounted inside another holds its parent busy.
        let mut all = mounts::mounted_list();
        all.sort_by(|(_, a), (_, b)| b.cmp(a));
        for (name, _) in all {
            mounts::unmount(&name, force).map_err(CmdError::Fail)?;
            mounts::suppress(&name);
        }
        return Ok(());
    }
    let Some(target) = parsed.operands.first() else {
        return Err(CmdError::Usage("missing filesystem argument".to_string()));
    };
    // A mountpoint path names the filesystem mounted there.
    let name = if target.starts_with('/') {
        mounts::mounted_list()
            .into_iter()
            .find(|(_, path)| path == &PathBuf::from(target))
            .map(|(name, _)| name)
            .ok_or_else(|| CmdError::Fail(format!("cannot unmount '{target}': not a mountpoint")))?
    } else {
        target.clone()
    };
    if !mounts::is_mounted(&name) {
        return fail(format!("cannot unmount '{name}': not currently mounted"));
    }
    mounts::unmount(&name, force).map_err(CmdError::Fail)?;
    mounts::suppress(&name);
    Ok(())
}
