//! `zfs`: the dataset command (OpenZFS `cmd/zfs/zfs_main.c`), over the engine's dataset
//! layer (`zetta::dsl`) and the property rules of `zetta-zprop`.
//!
//! Today: `create [-p] [-o prop=value]… fs`, `destroy [-fnpRrv] fs|fs@snaps|fs#mark`
//! (`snaps`: a comma list of names and `a%b` ranges), `list [-Hpr] [-d depth]
//! [-o fields] [fs…]`, `get [-Hpr] [-o fields] all|props fs…`, `set prop=value… fs`,
//! `inherit [-rS] prop fs`, `version`; `send` and `receive` in `zfs/send.rs` and
//! `zfs/recv.rs`; volumes (`create -V`, `volsize`, their types in list/get/set) in
//! `zfs/volume.rs`. Datasets whose name holds `%` (a receive's work dataset) are hidden. A dataset name's first component is its pool, which
//! is opened like `zpool` does (through the daemon). Properties are stored and inherited
//! with OpenZFS's sources (`default`, `local`, `inherited from …`); values Zetta does not
//! act on are refused by `zetta-zprop` before anything is stored (README "What Zetta
//! refuses").

pub(crate) mod errors;
mod recv;
mod send;
mod upgrade;
mod volume;
mod wait;

use crate::zpool::pool::{self, Imported};
use crate::zpool::{fail, getopt, usage, CmdError, CmdResult, Ctx};
use errors::{zfs_fail, ZfsOp};
use std::collections::HashMap;
use std::io::Write;
use zetta::dsl::{is_local_entry, INHERIT_SUFFIX, RECEIVED_SUFFIX};
use zetta_zprop::list_sort::{
    sort_entries, sorts_as_text, ListEntry, ListProp, SortColumn, SortValue,
};
use zetta_zprop::{
    format_value, resolve, validate_set, DatasetType, PropValue, SetTarget, SetValue, Source,
    ZfsProp,
};

/// The client's standard input, and whether its standard streams are terminals: what
/// `zfs receive` reads and what `zfs send`/`receive` refuse, wherever the command runs (in
/// this process, or in the daemon on behalf of a client).
pub struct CommandIo<'a> {
    pub input: Box<dyn std::io::Read + 'a>,
    pub stdin_is_terminal: bool,
    pub stdout_is_terminal: bool,
}

impl CommandIo<'static> {
    /// This process's own standard streams.
    pub fn process() -> CommandIo<'static> {
        // SAFETY: isatty only inspects the descriptor.
        let (stdin, stdout) = unsafe { (libc::isatty(0) == 1, libc::isatty(1) == 1) };
        CommandIo {
            input: Box::new(std::io::stdin()),
            stdin_is_terminal: stdin,
            stdout_is_terminal: stdout,
        }
    }
}

pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    run_io(args, CommandIo::process(), out, err)
}

/// `run` with the client's standard input and terminal flags given (the daemon).
pub fn run_io(
    args: &[String],
    mut io: CommandIo<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let Some(command) = args.first() else {
        let _ = writeln!(err, "missing command");
        let _ = err.write_all(crate::usage::zfs_full_usage().as_bytes());
        return 2;
    };
    let mut ctx = Ctx { out, err };
    let rest = &args[1..];
    // A caller that is not root runs only what `zfs allow` gave it (zfs_secpolicy_*).
    if let Err(CmdError::Fail(message) | CmdError::Usage(message)) =
        crate::zfs_secpolicy::check_zfs(command, rest, &crate::daemon::caller())
    {
        ctx.warn(&format!("{message}\n"));
        return 1;
    }
    let result = match command.as_str() {
        // zfs_do_version parses options (`-j`): `-?` is an invalid option.
        "version" | "-V" | "--version" => cmd_version(rest, &mut ctx),
        "create" => cmd_create(rest, &mut ctx),
        "snapshot" | "snap" => cmd_snapshot(rest),
        "rollback" => cmd_rollback(rest),
        "clone" => cmd_clone(rest),
        "bookmark" => cmd_bookmark(rest),
        "hold" => cmd_hold(rest, true),
        "release" => cmd_hold(rest, false),
        "holds" => cmd_holds(rest, &mut ctx),
        "destroy" => cmd_destroy(rest, &mut ctx),
        "list" => cmd_list(rest, &mut ctx),
        "get" => cmd_get(rest, &mut ctx),
        "set" => cmd_set(rest),
        "inherit" => cmd_inherit(rest),
        "upgrade" => upgrade::cmd_upgrade(rest, &mut ctx),
        "wait" => wait::cmd_wait(rest, &mut ctx),
        "rename" => crate::zfs_rename::cmd_rename(rest),
        "promote" => crate::zfs_promote::cmd_promote(rest),
        "diff" => crate::zfs_diff::cmd_diff(rest, &mut ctx),
        "userspace" | "groupspace" | "projectspace" => {
            crate::zfs_userspace::cmd_userspace(command, rest, &mut ctx)
        }
        "mount" => crate::zfs_mount::cmd_mount(rest, &mut ctx),
        "unmount" | "umount" => crate::zfs_mount::cmd_unmount(rest),
        "allow" => return crate::zfs_allow::run(rest, false, &mut ctx),
        "unallow" => return crate::zfs_allow::run(rest, true, &mut ctx),
        "send" => send::cmd_send(rest, &mut io, &mut ctx),
        "receive" | "recv" => recv::cmd_receive(rest, &mut io, &mut ctx),
        // `zfs help CMD`: OpenZFS opens the man page zfs-CMD(8); Zetta prints the usage.
        "help" if rest.first().is_some_and(|t| t != "zfs") => {
            let topic = rest.first().map(String::as_str).unwrap_or_default();
            match crate::usage::zfs_command_usage(topic) {
                Some(text) => {
                    ctx.print(&text);
                    Ok(())
                }
                None => {
                    ctx.warn(&format!("unrecognized command '{topic}'\n"));
                    ctx.warn(&crate::usage::zfs_full_usage());
                    return 2;
                }
            }
        }
        "-?" | "-h" | "--help" | "help" => {
            ctx.print(&crate::usage::zfs_full_usage());
            Ok(())
        }
        other => {
            ctx.warn(&format!("unrecognized command '{other}'\n"));
            ctx.warn(&crate::usage::zfs_full_usage());
            return 2;
        }
    };
    match result {
        Ok(()) => 0,
        Err(CmdError::Fail(message)) => {
            if !message.is_empty() {
                ctx.warn(&format!("{}\n", crate::zpool::plain_words(&message)));
            }
            1
        }
        Err(CmdError::Usage(message)) => {
            if !message.is_empty() {
                ctx.warn(&format!("{}\n", crate::zpool::plain_words(&message)));
            }
            // OpenZFS's usage(B_FALSE) of the command (of every command for one it lacks).
            let text = crate::usage::zfs_command_usage(command)
                .unwrap_or_else(crate::usage::zfs_full_usage);
            ctx.warn(&text);
            2
        }
    }
}

/// The long options of `zfs list` and `zfs get`.
const LONG_JSON_ZFS: &[(&str, char)] = &[
    ("json", crate::zpool::OPTION_JSON),
    ("json-int", crate::zpool::OPTION_JSON_INT),
];

/// `zfs_json_schema` with an empty `"datasets"` object.
fn datasets_document(command: &str) -> zetta_zutil::json::Json {
    let mut document = zetta_zutil::json::output_version(&format!("zfs {command}"));
    document.insert("datasets", zetta_zutil::json::Json::object());
    document
}

/// `fill_dataset_info`: name, type, pool, createtxg, and for a snapshot its dataset and
/// snapshot name.
fn dataset_info(
    imported: &mut Imported,
    props: &LocalProps,
    name: &str,
    as_int: bool,
) -> Result<zetta_zutil::json::Json, CmdError> {
    use zetta_zutil::json::Json;
    let mut item = Json::object();
    item.insert("name", Json::string(name));
    let kind = property(imported, props, name, "type", true)?
        .map(|(v, _)| v.to_ascii_uppercase())
        .unwrap_or_else(|| "UNKNOWN".to_string());
    item.insert("type", Json::string(kind));
    item.insert("pool", Json::string(pool_of(name)));
    if let Some((txg, _)) = property(imported, props, name, "createtxg", true)? {
        match (as_int, txg.parse::<u64>()) {
            (true, Ok(n)) => item.insert("createtxg", Json::Number(n)),
            _ => item.insert("createtxg", Json::string(txg)),
        }
    }
    if let Some((dataset, snapshot)) = name.split_once('@') {
        item.insert("dataset", Json::string(dataset));
        item.insert("snapshot_name", Json::string(snapshot));
    }
    Ok(item)
}

/// `zfs version [-j]` (`zfs_do_version`).
fn cmd_version(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = crate::zpool::getopt_long(
        args,
        "j",
        &[("json", crate::zpool::OPTION_JSON)],
        Some("zfs"),
    )?;
    if !parsed.operands.is_empty() {
        return usage("too many arguments");
    }
    if parsed.has(crate::zpool::OPTION_JSON) {
        crate::zpool::json::print(ctx, &crate::zpool::json::version_document("zfs version"));
    } else {
        ctx.print(&format!("zetta {}\n", env!("CARGO_PKG_VERSION")));
    }
    Ok(())
}

pub(crate) fn pool_of(name: &str) -> &str {
    name.split(['/', '@', '#']).next().unwrap_or(name)
}

pub(crate) fn spa_fail(e: zetta::spa::SpaError) -> CmdError {
    CmdError::Fail(pool::spa_error_text(&e))
}

/// Opens the pool of `name` and checks that the dataset exists (OpenZFS's message when not).
fn open_dataset(name: &str) -> Result<Imported, CmdError> {
    let imported = pool::open_pool(pool_of(name)).map_err(|_| missing(name))?;
    match imported.spa.lookup_dir(name) {
        Ok(Some(_)) => Ok(imported),
        _ => Err(missing(name)),
    }
}

fn missing(name: &str) -> CmdError {
    CmdError::Fail(format!("cannot open '{name}': dataset does not exist"))
}

pub(crate) fn validate(
    name: &str,
    prop: &str,
    value: &str,
    creating: bool,
) -> Result<SetValue, CmdError> {
    validate_as(name, prop, value, creating, DatasetType::Filesystem, None)
}

/// `validate` for a dataset of `object` type (a volume's block size checks `volsize`).
pub(crate) fn validate_as(
    name: &str,
    prop: &str,
    value: &str,
    creating: bool,
    object: DatasetType,
    volblocksize_bytes: Option<u64>,
) -> Result<SetValue, CmdError> {
    validate_set(
        prop,
        value,
        SetTarget {
            object,
            creating,
            volblocksize_bytes,
        },
    )
    .map_err(|e| {
        CmdError::Fail(format!(
            "cannot {} '{name}': {e}",
            if creating {
                "create"
            } else {
                "set property for"
            }
        ))
    })
}

/// Records the command in the pool's history and commits.
pub(crate) fn finish(imported: &mut Imported, verb: &str, args: &[String]) -> CmdResult {
    imported
        .spa
        .log_history(&format!("zfs {verb} {}", args.join(" ")));
    pool::commit(imported)
}

/// `finish` for a command queued as one sync task: its history line (written only if the
/// task succeeds), the commit that runs it, and the task's own result (a refusal worded
/// for `op`).
pub(crate) fn finish_task(
    imported: &mut Imported,
    task: zetta::dsl::synctask::SyncTaskId,
    verb: &str,
    args: &[String],
    op: ZfsOp<'_>,
) -> CmdResult {
    finish_task_with(imported, task, verb, args, zfs_fail(op))
}

/// `finish_task` with the command's own text for the task's refusal.
pub(crate) fn finish_task_with(
    imported: &mut Imported,
    task: zetta::dsl::synctask::SyncTaskId,
    verb: &str,
    args: &[String],
    refused: impl Fn(zetta::spa::SpaError) -> CmdError,
) -> CmdResult {
    imported
        .spa
        .log_history_task(task, &format!("zfs {verb} {}", args.join(" ")));
    pool::commit(imported)?;
    imported.spa.sync_task_result(task).map_err(refused)
}

/// The `-o prop=value` settings of a create or clone, validated.
fn parse_settings(parsed: &crate::zpool::Parsed, name: &str) -> Result<Vec<SetValue>, CmdError> {
    let mut settings = Vec::new();
    check_props_once(parsed)?;
    for option in parsed.values('o') {
        let Some((prop, value)) = option.split_once('=') else {
            return usage("missing '=' for property=value argument");
        };
        settings.push(validate(name, prop, value, true)?);
    }
    Ok(settings)
}

/// parseprop, while the options are read: each `-o` a property=value, each property once
/// (usage, exit 2).
fn check_props_once(parsed: &crate::zpool::Parsed) -> CmdResult {
    let mut seen: Vec<String> = Vec::new();
    for option in parsed.values('o') {
        let Some((prop, _)) = option.split_once('=') else {
            return usage("missing '=' for property=value argument");
        };
        if seen.iter().any(|p| p == prop) {
            return usage(format!("property '{prop}' specified multiple times"));
        }
        seen.push(prop.to_string());
    }
    Ok(())
}

/// Whether a quota or reservation value fits (OpenZFS refuses it with ENOSPC): `Some`
/// with the reason when it does not.
fn space_limit_refusal(
    imported: &mut Imported,
    name: &str,
    set: &SetValue,
) -> Result<Option<&'static str>, CmdError> {
    let SetValue::Native(prop, value) = set else {
        return Ok(None);
    };
    let Some(limit) = zetta::dsl::SpaceLimit::from_prop(prop.name()) else {
        return Ok(None);
    };
    let bytes = value.as_number().unwrap_or(0);
    match imported.spa.check_space_limit(name, limit, bytes) {
        Ok(()) => Ok(None),
        Err(zetta::spa::SpaError::NoSpace) => Ok(Some(match limit {
            zetta::dsl::SpaceLimit::Quota | zetta::dsl::SpaceLimit::Refquota => {
                "size is less than current used or reserved space"
            }
            _ => "size is greater than available space",
        })),
        Err(e) => Err(spa_fail(e)),
    }
}

/// Stores the `-o` settings of a dataset just created; one that does not fit (a
/// reservation larger than the space available) takes the new dataset away again, as
/// OpenZFS's create does.
fn store_created(imported: &mut Imported, name: &str, settings: Vec<SetValue>) -> CmdResult {
    // The creator gets the create-time permissions (`zfs allow -c`) of every ancestor
    // (`dsl_deleg_set_create_perms`, run by OpenZFS's create sync for any caller).
    imported
        .spa
        .deleg_set_create_perms(name, crate::daemon::caller().uid)
        .map_err(spa_fail)?;
    if settings
        .iter()
        .any(|set| needs_disabled_feature(imported, set))
    {
        imported.spa.destroy_filesystem(name).map_err(spa_fail)?;
        return fail(format!(
            "cannot create '{name}': pool must be upgraded to set this property or value"
        ));
    }
    for set in settings {
        if space_limit_refusal(imported, name, &set)?.is_some() {
            imported.spa.destroy_filesystem(name).map_err(spa_fail)?;
            return fail(format!("cannot create '{name}': out of space"));
        }
        store(imported, name, set)?;
    }
    Ok(())
}

/// `zfs_check_settable`'s feature checks: a value whose blocks need a pool feature that
/// is not enabled (lz4, zstd, the salted checksums, records above 128K) is refused, as
/// OpenZFS answers ENOTSUP ("… must be upgraded to set this property or value").
fn needs_disabled_feature(imported: &Imported, set: &SetValue) -> bool {
    // A feature Zetta does not support (edonr) is never enabled on a pool it writes.
    feature_needed(set).is_some_and(|feature| {
        !zetta::spa::zfeature::lookup_name(feature)
            .is_some_and(|info| imported.spa.features().is_enabled(info.guid))
    })
}

/// The pool feature a property value's blocks need (`zfs_check_settable`), by short name.
pub(crate) fn feature_needed(set: &SetValue) -> Option<&'static str> {
    let SetValue::Native(prop, value) = set else {
        return None;
    };
    let word = value.to_stored();
    let feature = match prop {
        ZfsProp::Compression if word == "lz4" => "lz4_compress",
        ZfsProp::Compression if word.starts_with("zstd") => "zstd_compress",
        ZfsProp::Checksum | ZfsProp::Dedup => match word.split(',').next().unwrap_or("") {
            "sha512" => "sha512",
            "skein" => "skein",
            "edonr" => "edonr",
            "blake3" => "blake3",
            _ => return None,
        },
        ZfsProp::Recordsize => match value {
            PropValue::Number(bytes) if *bytes > 128 << 10 => "large_blocks",
            _ => return None,
        },
        _ => return None,
    };
    Some(feature)
}

pub(crate) fn store(imported: &mut Imported, name: &str, set: SetValue) -> Result<(), CmdError> {
    let (prop, value) = match set {
        SetValue::Native(prop, value) => (prop.name().to_string(), value.to_stored()),
        SetValue::User { name, value } => (name, value),
    };
    imported
        .spa
        .set_local_prop(name, &prop, &value)
        .map_err(spa_fail)
}

/// `-p` of clone and rename: creates every missing filesystem above `name`.
pub(crate) fn create_parents(imported: &mut Imported, name: &str) -> CmdResult {
    check_nesting(name)?;
    let components: Vec<&str> = name.split('/').collect();
    for end in 2..components.len() {
        let partial = components[..end].join("/");
        if imported
            .spa
            .lookup_dir(&partial)
            .map_err(spa_fail)?
            .is_none()
        {
            imported.spa.create_filesystem(&partial).map_err(spa_fail)?;
        }
    }
    Ok(())
}

/// `dataset_nestcheck` before anything is created: a name deeper than
/// zfs_max_dataset_nesting creates nothing (not even the parents `-p` would make).
fn check_nesting(name: &str) -> CmdResult {
    if zetta_zprop::namecheck::nesting_ok(name) {
        return Ok(());
    }
    fail(format!(
        "cannot create '{name}': maximum name nesting depth exceeded"
    ))
}

/// zfs_do_create's `-v`/`-P` report: what it creates, then its property list as the
/// command's nvlist holds it (`-o` values as typed; `-b`, `-V` and a volume's computed
/// `refreservation` as numbers), each name once, a later value moving it to the end.
pub(crate) struct CreatePlan {
    pub dryrun: bool,
    pub verbose: bool,
    pub parseable: bool,
    pub props: Vec<(String, String)>,
}

impl CreatePlan {
    pub(crate) fn of(parsed: &crate::zpool::Parsed) -> CreatePlan {
        let mut plan = CreatePlan {
            dryrun: parsed.has('n'),
            verbose: parsed.has('v') || parsed.has('P'),
            parseable: parsed.has('P'),
            props: Vec::new(),
        };
        for (flag, value) in &parsed.options {
            let value = value.as_deref().unwrap_or("");
            match flag {
                'o' => {
                    if let Some((prop, value)) = value.split_once('=') {
                        plan.add(prop, value);
                    }
                }
                'b' => {
                    if let Ok(bytes) = zetta_zprop::zfs_prop::nicestrtonum(value) {
                        plan.add("volblocksize", &bytes.to_string());
                    }
                }
                'V' => {
                    if let Ok(bytes) = zetta_zprop::zfs_prop::nicestrtonum(value) {
                        plan.add("volsize", &bytes.to_string());
                    }
                }
                _ => {}
            }
        }
        plan
    }

    /// nvlist_add with unique names: an earlier pair of that name goes.
    pub(crate) fn add(&mut self, prop: &str, value: &str) {
        self.props.retain(|(name, _)| name != prop);
        self.props.push((prop.to_string(), value.to_string()));
    }

    pub(crate) fn has(&self, prop: &str) -> bool {
        self.props.iter().any(|(name, _)| name == prop)
    }

    /// The `create_ancestors` line (`-p`).
    pub(crate) fn ancestors(&self, ctx: &mut Ctx, name: &str) {
        if !self.verbose {
            return;
        }
        ctx.print(&if self.parseable {
            format!("create_ancestors\t{name}\n")
        } else if self.dryrun {
            format!("would create ancestors of {name}\n")
        } else {
            format!("create ancestors of {name}\n")
        });
    }

    /// The `create` line and the properties.
    pub(crate) fn report(&self, ctx: &mut Ctx, name: &str) {
        if !self.verbose {
            return;
        }
        let mut text = if self.parseable {
            format!("create\t{name}\n")
        } else if self.dryrun {
            format!("would create {name}\n")
        } else {
            format!("create {name}\n")
        };
        for (prop, value) in &self.props {
            text.push_str(&if self.parseable {
                format!("property\t{prop}\t{value}\n")
            } else {
                format!("\t{prop}={value}\n")
            });
        }
        ctx.print(&text);
    }
}

/// `zfs create [-Pnpuv] [-o prop=value]… fs`
fn cmd_create(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "po:uV:b:snvP")?;
    check_props_once(&parsed)?;
    if parsed.has('V') {
        return volume::cmd_create_volume(&parsed, args, ctx);
    }
    if parsed.has('b') || parsed.has('s') {
        return usage("'-s' and '-b' can only be used when creating a volume");
    }
    let [name] = parsed.operands.as_slice() else {
        return usage(if parsed.operands.is_empty() {
            "missing filesystem argument"
        } else {
            "too many arguments"
        });
    };
    zetta_zprop::namecheck::validate_dataset_name(name, true)
        .map_err(|e| CmdError::Fail(format!("cannot create '{name}': {e}")))?;
    check_nesting(name)?;
    let settings = parse_settings(&parsed, name)?;
    let mut imported = pool::open_pool(pool_of(name)).map_err(|_| {
        CmdError::Fail(format!(
            "cannot create '{name}': no such pool '{}'",
            pool_of(name)
        ))
    })?;
    let plan = CreatePlan::of(&parsed);
    if parsed.has('p') {
        // An existing filesystem is no error with -p (zfs_dataset_exists, by type).
        if imported.spa.lookup_dir(name).map_err(spa_fail)?.is_some()
            && volume::dataset_type(&mut imported.spa, name) == DatasetType::Filesystem
        {
            return Ok(());
        }
        plan.ancestors(ctx, name);
    }
    plan.report(ctx, name);
    if plan.dryrun {
        return Ok(());
    }
    pool::writable(&imported, &format!("cannot create '{name}'"))?;
    let components: Vec<&str> = name.split('/').collect();
    let start = if parsed.has('p') { 2 } else { components.len() };
    for end in start..=components.len() {
        let partial = components[..end].join("/");
        if imported
            .spa
            .lookup_dir(&partial)
            .map_err(spa_fail)?
            .is_some()
        {
            if end == components.len() {
                return fail(format!("cannot create '{name}': dataset already exists"));
            }
            continue;
        }
        imported.spa.create_filesystem(&partial).map_err(spa_fail)?;
    }
    store_created(&mut imported, name, settings)?;
    if parsed.has('u') {
        // Not mounted until `zfs mount` (the daemon mounts what is not suppressed).
        crate::daemon::mounts::suppress(name);
    }
    finish(&mut imported, "create", args)
}

/// `zfs snapshot [-r] [-o prop=value]… fs@snap…`: every snapshot in one txg (atomic).
/// When several were asked for (`-r`, or several operands), a refusal ends with OpenZFS's
/// "no snapshots were created".
fn cmd_snapshot(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "ro:")?;
    let multiple = parsed.has('r') || parsed.operands.len() > 1;
    let settings = parse_snapshot_settings(&parsed)?;
    match snapshot_parsed(&parsed, settings, args) {
        Err(CmdError::Fail(message)) if multiple => Err(CmdError::Fail(format!(
            "{message}\nno snapshots were created"
        ))),
        other => other,
    }
}

fn snapshot_parsed(
    parsed: &crate::zpool::Parsed,
    settings: Vec<(String, String)>,
    args: &[String],
) -> CmdResult {
    check_snapshot_settings(&settings)?;
    if parsed.operands.is_empty() {
        return usage("missing snapshot argument");
    }
    let pool_name = pool_of(&parsed.operands[0]).to_string();
    if parsed.operands.iter().any(|n| pool_of(n) != pool_name) {
        return fail("cannot create snapshots : snapshots must be in the same pool");
    }
    for name in &parsed.operands {
        zetta_zprop::namecheck::validate_snapshot_name(name, true)
            .map_err(|e| CmdError::Fail(format!("cannot create snapshot '{name}': {e}")))?;
    }
    let mut imported = pool::open_pool(&pool_name).map_err(|_| missing(&parsed.operands[0]))?;
    pool::writable(
        &imported,
        &format!("cannot create snapshot '{}'", parsed.operands[0]),
    )?;
    let mut names = Vec::new();
    let all = visible_names(&mut imported)?;
    for full in &parsed.operands {
        let (fs, snap) = full.split_once('@').unwrap_or((full, ""));
        if !all.iter().any(|n| n == fs) {
            return fail(format!("cannot open '{fs}': dataset does not exist"));
        }
        names.push(full.clone());
        if parsed.has('r') {
            for child in all.iter().filter(|n| n.starts_with(&format!("{fs}/"))) {
                names.push(format!("{child}@{snap}"));
            }
        }
    }
    // zfs_snapshot_nvl checks every name -r made (a descendant's may be too long).
    for name in &names {
        zetta_zprop::namecheck::validate_snapshot_name(name, true)
            .map_err(|e| CmdError::Fail(format!("cannot create snapshot '{name}': {e}")))?;
    }
    // One sync task, its history line and the commit: one txg for the whole command.
    let task = imported
        .spa
        .snapshot_queue_with_props(&names, None, settings)
        .map_err(spa_fail)?;
    finish_task(&mut imported, task, "snapshot", args, ZfsOp::Other)
}

/// `zfs hold [-r] tag fs@snap…` and `zfs release [-r] tag fs@snap…`.
fn cmd_hold(args: &[String], hold: bool) -> CmdResult {
    let parsed = getopt(args, "r")?;
    let Some((tag, snapshots)) = parsed.operands.split_first() else {
        return usage("missing tag argument");
    };
    if snapshots.is_empty() {
        return usage("missing snapshot argument");
    }
    for (index, full) in snapshots.iter().enumerate() {
        let Some((fs, snap)) = full.split_once('@') else {
            return fail(format!("'{full}' is not a snapshot"));
        };
        if tag.is_empty() {
            // Zetta's ZAP takes no empty names: refused as libzfs words EINVAL.
            let verb = if hold { "hold" } else { "release" };
            return fail(format!(
                "cannot {verb} snapshot '{full}': operation not applicable to datasets of this type"
            ));
        }
        let mut imported = open_dataset(fs)?;
        let mut targets = vec![full.clone()];
        pool::writable(
            &imported,
            &if hold {
                format!("cannot hold snapshot '{full}'")
            } else {
                format!("cannot release hold from snapshot '{full}'")
            },
        )?;
        if parsed.has('r') {
            for child in imported.spa.dataset_names().map_err(spa_fail)? {
                if child.starts_with(&format!("{fs}/")) {
                    targets.push(format!("{child}@{snap}"));
                }
            }
        }
        // One sync task for the snapshot and its descendants' (all or none), one txg.
        let task = imported
            .spa
            .hold_queue(tag, &targets, hold)
            .map_err(spa_fail)?;
        // OpenZFS logs `hold` and `release` (allow_log): one line for the command, once
        // every snapshot it names has been done.
        if index + 1 == snapshots.len() {
            let verb = if hold { "hold" } else { "release" };
            imported
                .spa
                .log_history_task(task, &format!("zfs {verb} {}", args.join(" ")));
        }
        pool::commit(&mut imported)?;
        imported.spa.sync_task_result(task).map_err(spa_fail)?;
    }
    Ok(())
}

/// `zfs holds [-H] fs@snap…`: NAME TAG TIMESTAMP.
fn cmd_holds(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "rHp")?;
    if parsed.operands.is_empty() {
        return usage("missing snapshot argument");
    }
    let mut rows = Vec::new();
    for full in &parsed.operands {
        let fs = full.split('@').next().unwrap_or(full);
        let mut imported = open_dataset(fs)?;
        for (tag, time) in imported.spa.holds(full).map_err(|_| missing(full))? {
            let stamp = if parsed.has('p') {
                time.to_string()
            } else {
                zetta_zutil::nicenum::zfs_creation_time(i64::try_from(time).unwrap_or(0))
            };
            rows.push(vec![full.clone(), tag, stamp]);
        }
    }
    let columns: Vec<zetta_zutil::list::Column> = ["NAME", "TAG", "TIMESTAMP"]
        .iter()
        .map(|h| zetta_zutil::list::Column::new(h, zetta_zutil::list::Align::Left))
        .collect();
    ctx.print(&zetta_zutil::list::format_table(
        &columns,
        &rows,
        parsed.has('H'),
    ));
    Ok(())
}

/// `zfs bookmark fs@snap fs#mark`
fn cmd_bookmark(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "")?;
    let [snapshot, bookmark] = parsed.operands.as_slice() else {
        return usage(match parsed.operands.len() {
            0 => "missing source argument",
            1 => "missing bookmark argument",
            _ => "too many arguments",
        });
    };
    if !snapshot.contains(['@', '#']) {
        return usage(format!(
            "invalid source name '{snapshot}': must contain a '@' or '#'"
        ));
    }
    if !bookmark.contains('#') {
        return usage(format!(
            "invalid bookmark name '{bookmark}': must contain a '#'"
        ));
    }
    // One of the two may be short (`@snap`, `#mark`): expand it from the other.
    let dataset_of = |name: &str| name.split(['@', '#']).next().unwrap_or("").to_string();
    let (snapshot, bookmark) = match (snapshot.starts_with(['@', '#']), bookmark.starts_with('#')) {
        (true, true) => {
            return usage("either source or bookmark must be specified as full dataset paths")
        }
        (false, true) => (
            snapshot.clone(),
            format!("{}{bookmark}", dataset_of(snapshot)),
        ),
        (true, false) => (
            format!("{}{snapshot}", dataset_of(bookmark)),
            bookmark.clone(),
        ),
        (false, false) => (snapshot.clone(), bookmark.clone()),
    };
    let (snapshot, bookmark) = (&snapshot, &bookmark);
    // The kernel's dataset_namecheck answers EINVAL; zfs_do_bookmark words it so.
    if zetta_zprop::namecheck::validate_bookmark_name(bookmark, true).is_err() {
        return fail(format!(
            "cannot create bookmark '{bookmark}': invalid argument"
        ));
    }
    let mut imported = pool::open_pool(pool_of(snapshot)).map_err(|_| missing(snapshot))?;
    pool::writable(&imported, &format!("cannot create bookmark '{bookmark}'"))?;
    // One sync task, its history line and the commit: one txg.
    let task = imported
        .spa
        .create_bookmark_queue(snapshot, bookmark)
        .map_err(spa_fail)?;
    finish_task(&mut imported, task, "bookmark", args, ZfsOp::Other)
}

/// `zfs clone [-p] [-o prop=value]… fs@snap newfs`
fn cmd_clone(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "po:")?;
    let [origin, name] = parsed.operands.as_slice() else {
        return usage("missing source or target dataset");
    };
    if !origin.contains('@') {
        return fail(format!(
            "cannot open '{origin}': snapshot delimiter '@' is not expected here"
        ));
    }
    // zfs_clone: the new name is checked first.
    zetta_zprop::namecheck::validate_dataset_name(name, true)
        .map_err(|e| CmdError::Fail(format!("cannot create '{name}': {e}")))?;
    if pool_of(origin) != pool_of(name) {
        return fail(format!(
            "cannot create '{name}': source and target pools differ"
        ));
    }
    check_nesting(name)?;
    let settings = parse_settings(&parsed, name)?;
    let mut imported = pool::open_pool(pool_of(origin)).map_err(|_| missing(origin))?;
    pool::writable(&imported, &format!("cannot create '{name}'"))?;
    if parsed.has('p') {
        // zfs_do_clone: an existing target is no error with -p (once the origin opens).
        let fs = origin.split('@').next().unwrap_or(origin);
        let snapshots = imported.spa.snapshots(fs).map_err(|_| missing(origin))?;
        if !snapshots.iter().any(|(n, _, _)| n == origin) {
            return Err(missing(origin));
        }
        if imported.spa.lookup_dir(name).map_err(spa_fail)?.is_some() {
            return Ok(());
        }
        create_parents(&mut imported, name)?;
    }
    imported
        .spa
        .clone_snapshot(origin, name)
        .map_err(spa_fail)?;
    store_created(&mut imported, name, settings)?;
    finish(&mut imported, "clone", args)
}

/// `zfs rollback [-rRf] fs@snap`: with -r (or -R) newer snapshots are destroyed first.
fn cmd_rollback(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "rRf")?;
    let [name] = parsed.operands.as_slice() else {
        return usage("missing dataset argument");
    };
    let Some((fs, _)) = name.split_once('@') else {
        return usage(format!("'{name}' is not a snapshot"));
    };
    let mut imported = open_dataset(fs)?;
    let snapshots = imported.spa.snapshots(fs).map_err(spa_fail)?;
    pool::writable(&imported, &format!("cannot rollback to '{name}'"))?;
    let Some(index) = snapshots.iter().position(|(n, _, _)| n == name) else {
        return Err(missing(name));
    };
    let newer: Vec<String> = snapshots[index + 1..]
        .iter()
        .rev()
        .map(|(n, _, _)| n.clone())
        .collect();
    if (parsed.has('r') || parsed.has('R')) && !newer.is_empty() {
        // The newer snapshots go in one sync task (one txg) before the rollback's check.
        let task = imported
            .spa
            .destroy_snapshots_queue(&newer)
            .map_err(spa_fail)?;
        imported.spa.sync_task_wait(task).map_err(spa_fail)?;
    }
    // One sync task, its history line and the commit: one txg.
    let task = imported.spa.rollback_queue(name).map_err(spa_fail)?;
    finish_task(&mut imported, task, "rollback", args, ZfsOp::Other)
}

/// `zfs destroy [-fnpRrv] fs|fs@snaps|fs#mark` (-r on snapshots: the same spec in every
/// descendant) as one sync task: one txg, whatever the number of snapshots and filesystems
/// it takes. `snaps` is `zfs_iter_snapspec`'s list: `a,b%c,%d,e%`.
fn cmd_destroy(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt(args, "vpndfRr")?;
    let name = match parsed.operands.as_slice() {
        [] => return usage("missing dataset argument"),
        [name] => name,
        _ => return usage("too many arguments"),
    };
    // -d applies to snapshots only (zfs_do_destroy opens the operand as one).
    let defer = parsed.has('d');
    if defer && !name.contains('@') {
        return fail(format!(
            "cannot open '{name}': operation not applicable to datasets of this type"
        ));
    }
    let verbose = Verbose {
        on: parsed.has('v') || parsed.has('p'),
        parsable: parsed.has('p'),
        dryrun: parsed.has('n'),
    };
    let recurse = parsed.has('r') || parsed.has('R');
    if let Some((fs, spec)) = name.split_once('@') {
        return destroy_snapshots(
            args,
            ctx,
            (fs, spec),
            recurse,
            parsed.has('R'),
            defer,
            verbose,
        );
    }
    if let Some((fs, _)) = name.split_once('#') {
        let mut imported = open_dataset(fs)?;
        pool::writable(&imported, &format!("cannot destroy '{name}'"))?;
        let task = imported
            .spa
            .destroy_bookmark_queue(name)
            .map_err(spa_fail)?;
        // OpenZFS logs `destroy_bookmarks` (allow_log) like every changing command.
        return finish_task(&mut imported, task, "destroy", args, ZfsOp::Other);
    }
    let mut imported = open_dataset(name)?;
    let is_pool = name == pool_of(name);
    pool::writable(&imported, &format!("cannot destroy '{name}'"))?;
    // zfs_do_destroy checks for a pool before anything else; with -r it destroys the
    // pool's datasets and leaves the root (destroy_callback skips pools).
    if is_pool && !recurse {
        return fail(format!("cannot destroy '{name}': operation does not apply to pools\nuse 'zfs destroy -r {name}' to destroy all datasets in the pool\nuse 'zpool destroy {name}' to destroy the pool itself"));
    }
    let mut names = imported.spa.dataset_names().map_err(spa_fail)?;
    // Snapshots count as children too (a dataset's own, and its descendants').
    for fs in names.clone() {
        if fs == *name || fs.starts_with(&format!("{name}/")) {
            for (snapshot, _, _) in imported.spa.snapshots(&fs).map_err(spa_fail)? {
                names.push(snapshot);
            }
        }
    }
    names.sort();
    let children: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with(&format!("{name}/")) || n.starts_with(&format!("{name}@")))
        .collect();
    if !children.is_empty() && !recurse {
        let mut message = format!("cannot destroy '{name}': filesystem has children\nuse '-r' to destroy the following datasets:");
        for child in &children {
            message.push('\n');
            message.push_str(child);
        }
        return fail(message);
    }
    // Clones of the tree's snapshots that live outside it: -R takes them, -r refuses.
    let mut outside_clones = Vec::new();
    for snapshot in children.iter().filter(|c| c.contains('@')) {
        for clone in snapshot_clones(&mut imported, snapshot)? {
            let inside = clone == *name || clone.starts_with(&format!("{name}/"));
            if !inside && !outside_clones.contains(&clone) {
                outside_clones.push(clone);
            }
        }
    }
    if !outside_clones.is_empty() && !parsed.has('R') {
        let mut message = format!("cannot destroy '{name}': filesystem has dependent clones\nuse '-R' to destroy the following datasets:");
        for clone in &outside_clones {
            message.push('\n');
            message.push_str(clone);
        }
        return fail(message);
    }
    // Dependent clones elsewhere (-R), the snapshots, the filesystems deepest first: one
    // sync task (all or none; its check orders them, a clone inside the tree before its
    // origin snapshot), its history line, one commit: one txg.
    let mut victims = Vec::new();
    for clone in &outside_clones {
        for victim in tree_victims(&mut imported, clone)? {
            if !victims.contains(&victim) {
                victims.push(victim);
            }
        }
    }
    let snapshots = children.iter().filter(|c| c.contains('@'));
    let filesystems = children.iter().filter(|c| !c.contains('@')).rev();
    for victim in snapshots.chain(filesystems) {
        if !victims.contains(victim) {
            victims.push(victim.to_string());
        }
    }
    // destroy_callback names the target too, a pool's root included (which it skips).
    for victim in victims.iter().chain(std::iter::once(name)) {
        verbose.destroy_line(ctx, victim);
    }
    if verbose.dryrun {
        return Ok(());
    }
    if !is_pool {
        victims.push(name.clone());
    }
    let task = imported
        .spa
        .destroy_queue(&victims)
        .map_err(zfs_fail(ZfsOp::Other))?;
    finish_task(&mut imported, task, "destroy", args, ZfsOp::Other)
}

/// `zfs destroy`'s `-v`, `-p` and `-n`: what it prints of each victim and of the space.
#[derive(Clone, Copy)]
struct Verbose {
    on: bool,
    parsable: bool,
    dryrun: bool,
}

impl Verbose {
    /// destroy_callback's and destroy_print_cb's line for one victim.
    fn destroy_line(self, ctx: &mut Ctx, name: &str) {
        if !self.on {
            return;
        }
        ctx.print(&if self.parsable {
            format!("destroy\t{name}\n")
        } else if self.dryrun {
            format!("would destroy {name}\n")
        } else {
            format!("will destroy {name}\n")
        });
    }
}

/// The snapshots `spec` names among `snapshots` (one filesystem's short names, oldest
/// first), as `zfs_iter_snapspec` finds them: each comma-separated part one name or an
/// inclusive range `a%b` by creation order (`%b` from the oldest, `a%` to the newest);
/// names that do not exist are skipped. Indexes into `snapshots`, sorted, each once.
fn snapspec_select(spec: &str, snapshots: &[&str]) -> Vec<usize> {
    let mut selected = vec![false; snapshots.len()];
    for part in spec.split(',') {
        if let Some((first, last)) = part.split_once('%') {
            if !last.is_empty() && !snapshots.contains(&last) {
                continue;
            }
            let mut seen_first = first.is_empty();
            for (index, snap) in snapshots.iter().enumerate() {
                if !seen_first && *snap == first {
                    seen_first = true;
                }
                if seen_first {
                    selected[index] = true;
                }
                if *snap == last {
                    break;
                }
            }
        } else if let Some(index) = snapshots.iter().position(|s| *s == part) {
            selected[index] = true;
        }
    }
    (0..snapshots.len()).filter(|i| selected[*i]).collect()
}

/// `zfs destroy [-rR] fs@spec`: zfs_do_destroy's snapshot branch (gather_snapshots, the
/// verbose lines and space of destroy_print_snapshots, -R's destroy_clones), all victims
/// in one sync task.
fn destroy_snapshots(
    args: &[String],
    ctx: &mut Ctx,
    (fs, spec): (&str, &str),
    recurse: bool,
    clones_too: bool,
    defer: bool,
    verbose: Verbose,
) -> CmdResult {
    let mut imported = open_dataset(fs)?;
    pool::writable(&imported, &format!("cannot destroy '{fs}@{spec}'"))?;
    // The filesystem, then (-r) every descendant: the same spec in each.
    let mut filesystems = vec![fs.to_string()];
    if recurse {
        let prefix = format!("{fs}/");
        filesystems.extend(
            visible_names(&mut imported)?
                .into_iter()
                .filter(|n| n.starts_with(&prefix)),
        );
    }
    let mut victims: Vec<String> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    let mut reclaim: u64 = 0;
    for filesystem in &filesystems {
        let snapshots = imported.spa.snapshots(filesystem).map_err(spa_fail)?;
        let full_names: Vec<&str> = snapshots.iter().map(|(n, _, _)| n.as_str()).collect();
        let short: Vec<&str> = full_names
            .iter()
            .map(|n| n.split_once('@').map(|(_, s)| s).unwrap_or(n))
            .collect();
        let chosen = snapspec_select(spec, &short);
        for &index in &chosen {
            let full = full_names[index].to_string();
            // snapshot_to_nvl_cb: without -R (or -d) a snapshot with clones is refused
            // (every such snapshot reported, nothing destroyed).
            if !clones_too && !defer {
                let clones = snapshot_clones(&mut imported, &full)?;
                if !clones.is_empty() {
                    refusals.push(format!(
                        "cannot destroy '{full}': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\n{}",
                        clones.join("\n")
                    ));
                }
            }
            verbose.destroy_line(ctx, &full);
            victims.push(full);
        }
        // destroy_print_snapshots: the space of each run of consecutive victims.
        if verbose.on {
            let mut run_start: Option<usize> = None;
            for (position, &index) in chosen.iter().enumerate() {
                let start = *run_start.get_or_insert(index);
                let run_ends = chosen.get(position + 1) != Some(&(index + 1));
                if run_ends {
                    reclaim += imported
                        .spa
                        .snaprange_used_bytes(full_names[start], full_names[index])
                        .map_err(spa_fail)?;
                    run_start = None;
                }
            }
        }
    }
    if !refusals.is_empty() {
        return fail(refusals.join("\n"));
    }
    if victims.is_empty() {
        return fail("could not find any snapshots to destroy; check snapshot names.");
    }
    if verbose.on {
        ctx.print(&if verbose.parsable {
            format!("reclaim\t{reclaim}\n")
        } else if verbose.dryrun {
            format!(
                "would reclaim {}\n",
                zetta_zutil::nicenum::nicenum_space(reclaim)
            )
        } else {
            format!(
                "will reclaim {}\n",
                zetta_zutil::nicenum::nicenum_space(reclaim)
            )
        });
    }
    if verbose.dryrun {
        return Ok(());
    }
    // -R takes the snapshots' clones (and their descendants and clones) with them, first.
    let mut clones = Vec::new();
    if clones_too {
        for victim in &victims {
            for clone in snapshot_clones(&mut imported, victim)? {
                for dependent in tree_victims(&mut imported, &clone)? {
                    if !clones.contains(&dependent) {
                        verbose.destroy_line(ctx, &dependent);
                        clones.push(dependent);
                    }
                }
            }
        }
    }
    // One sync task for every victim (all or none), its history line, one commit.
    let task = if clones.is_empty() && defer {
        // -d: what holds or clones keep is marked, the rest destroyed.
        imported.spa.destroy_snapshots_deferred_queue(&victims)
    } else if clones.is_empty() {
        imported.spa.destroy_snapshots_queue(&victims)
    } else {
        // A clone inside the -r tree brings its own snapshots of the spec: once each.
        victims.retain(|v| !clones.contains(v));
        clones.extend(victims);
        imported.spa.destroy_queue(&clones)
    }
    .map_err(zfs_fail(ZfsOp::DestroySnapshots))?;
    finish_task(
        &mut imported,
        task,
        "destroy",
        args,
        ZfsOp::DestroySnapshots,
    )
}

/// The clones of snapshot `full` (`fs@snap`), by name.
fn snapshot_clones(imported: &mut Imported, full: &str) -> Result<Vec<String>, CmdError> {
    let fs = full.split('@').next().unwrap_or(full);
    let object = imported
        .spa
        .snapshots(fs)
        .map_err(spa_fail)?
        .into_iter()
        .find(|(n, _, _)| n == full)
        .map(|(_, object, _)| object);
    match object {
        Some(object) => imported.spa.dependent_clones(object).map_err(spa_fail),
        None => Ok(Vec::new()),
    }
}

/// `root`, its descendants (deepest first) and all their snapshots, each snapshot after
/// the clones that depend on it (and theirs, deepest first): what `-R` destroys of a
/// dependent clone (zfs_iter_dependents' order).
fn tree_victims(imported: &mut Imported, root: &str) -> Result<Vec<String>, CmdError> {
    let mut victims = Vec::new();
    let mut visiting = vec![root.to_string()];
    tree_victims_into(imported, root, &mut victims, &mut visiting)?;
    Ok(victims)
}

fn tree_victims_into(
    imported: &mut Imported,
    root: &str,
    victims: &mut Vec<String>,
    visiting: &mut Vec<String>,
) -> CmdResult {
    let all = imported.spa.dataset_names().map_err(spa_fail)?;
    let prefix = format!("{root}/");
    for fs in all
        .iter()
        .rev()
        .filter(|n| *n == root || n.starts_with(&prefix))
    {
        for (snapshot, object, _) in imported.spa.snapshots(fs).map_err(spa_fail)? {
            for clone in imported.spa.dependent_clones(object).map_err(spa_fail)? {
                // A clone's tree is walked once (a loop would be a damaged pool).
                if !visiting.contains(&clone) {
                    visiting.push(clone.clone());
                    tree_victims_into(imported, &clone, victims, visiting)?;
                }
            }
            if !victims.contains(&snapshot) {
                victims.push(snapshot);
            }
        }
        if !victims.contains(fs) {
            victims.push(fs.clone());
        }
    }
    Ok(())
}

/// Every property entry of the pool's datasets (the inheritance source): local values,
/// and received values with the `zfs inherit` markers that hide them (`zetta::dsl` prop).
pub(crate) struct LocalProps(HashMap<String, HashMap<String, String>>);

impl LocalProps {
    /// The user properties set or received anywhere (`zfs get all` lists them).
    fn user_prop_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .values()
            .flat_map(|m| m.keys())
            .map(|k| k.strip_suffix(RECEIVED_SUFFIX).unwrap_or(k))
            .filter(|k| k.contains(':') && is_local_entry(k))
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

impl zetta_zprop::PropSource for LocalProps {
    fn local(&self, dataset: &str, prop: &str) -> Option<String> {
        self.0.get(dataset)?.get(prop).cloned()
    }

    fn received(&self, dataset: &str, prop: &str) -> Option<String> {
        self.0
            .get(dataset)?
            .get(&format!("{prop}{RECEIVED_SUFFIX}"))
            .cloned()
    }

    fn inherit_marker(&self, dataset: &str, prop: &str) -> bool {
        self.0
            .get(dataset)
            .is_some_and(|m| m.contains_key(&format!("{prop}{INHERIT_SUFFIX}")))
    }
}

fn load_props(imported: &mut Imported) -> Result<LocalProps, CmdError> {
    load_spa_props(&mut imported.spa)
}

pub(crate) fn load_spa_props(spa: &mut zetta::spa::Spa) -> Result<LocalProps, CmdError> {
    let mut all = HashMap::new();
    for name in spa.dataset_names().map_err(spa_fail)? {
        let props = spa.local_props(&name).map_err(spa_fail)?;
        all.insert(name, props.into_iter().collect());
    }
    // Properties set on snapshots, under the snapshot's name (only user properties).
    for (snapshot, prop, value) in spa.snapshot_props().map_err(spa_fail)? {
        all.entry(snapshot)
            .or_insert_with(HashMap::new)
            .insert(prop, value);
    }
    Ok(LocalProps(all))
}

/// The value and source of one property of one dataset, formatted for output.
fn property(
    imported: &mut Imported,
    props: &LocalProps,
    name: &str,
    prop: &str,
    parsable: bool,
) -> Result<Option<(String, String)>, CmdError> {
    let spa = &mut imported.spa;
    let number = |n: u64, p: ZfsProp| format_value(p, &PropValue::Number(n), parsable);
    let native = ZfsProp::from_name(prop);
    if let Some((fs, _)) = name.split_once('#') {
        let bookmarks = imported.spa.bookmarks(fs).map_err(spa_fail)?;
        let Some(bookmark) = bookmarks.iter().find(|b| b.name == name) else {
            return Err(missing(name));
        };
        let number = |n: u64, p: ZfsProp| format_value(p, &PropValue::Number(n), parsable);
        let value = match native.map(|p| (p, p.name())) {
            Some((_, "name")) => name.to_string(),
            Some((_, "type")) => "bookmark".to_string(),
            Some((p, "guid")) => number(bookmark.guid, p),
            Some((p, "creation")) => number(bookmark.creation_time, p),
            Some((p, "createtxg")) => number(bookmark.creation_txg, p),
            _ => return Ok(None),
        };
        return Ok(Some((value, "-".to_string())));
    }
    if let Some((fs, _)) = name.split_once('@') {
        return snapshot_property(imported, props, name, fs, prop, native, parsable);
    }
    let kind = volume::dataset_type(spa, name);
    if native.is_some_and(|p| !p.applies_to(kind, None)) {
        return Ok(None);
    }
    let stat = match native.map(|p| p.name()) {
        Some(which @ ("volsize" | "volblocksize")) => {
            let info = spa
                .volume_info(name)
                .map_err(spa_fail)?
                .ok_or_else(|| missing(name))?;
            let value = if which == "volsize" {
                info.size_bytes
            } else {
                info.block_size_bytes
            };
            Some(number(value, native.unwrap_or(ZfsProp::ALL[0])))
        }
        Some("creation") | Some("guid") | Some("createtxg") => {
            let dataset = spa
                .lookup_dataset(name)
                .map_err(spa_fail)?
                .ok_or_else(|| missing(name))?;
            let phys = spa.dataset_phys(dataset).map_err(spa_fail)?;
            let value = match native.map(|p| p.name()) {
                Some("creation") => phys.creation_time,
                Some("guid") => phys.guid,
                _ => phys.creation_txg,
            };
            Some(number(value, native.unwrap_or(ZfsProp::ALL[0])))
        }
        Some("name") => Some(name.to_string()),
        Some("type") => Some(kind.name().to_string()),
        Some(
            "used"
            | "referenced"
            | "available"
            | "usedbysnapshots"
            | "usedbydataset"
            | "usedbychildren"
            | "usedbyrefreservation"
            | "logicalused"
            | "logicalreferenced",
        ) => {
            let space = spa.dataset_space(name).map_err(spa_fail)?;
            let value = match native.map(|p| p.name()) {
                Some("used") => space.used_bytes,
                Some("referenced") => space.referenced_bytes,
                Some("available") => space.available_bytes,
                Some("usedbysnapshots") => space.used_by_snapshots_bytes,
                Some("usedbydataset") => space.used_by_dataset_bytes,
                Some("usedbychildren") => space.used_by_children_bytes,
                Some("usedbyrefreservation") => space.used_by_refreservation_bytes,
                Some("logicalused") => space.logical_used_bytes,
                _ => space.logical_referenced_bytes,
            };
            Some(number(value, native.unwrap_or(ZfsProp::ALL[0])))
        }
        Some("compressratio" | "refcompressratio") => {
            let space = spa.dataset_space(name).map_err(spa_fail)?;
            let ratio = if native.map(|p| p.name()) == Some("compressratio") {
                space.compress_ratio_x100
            } else {
                space.refcompress_ratio_x100
            };
            Some(number(ratio, native.unwrap_or(ZfsProp::ALL[0])))
        }
        Some("mounted") => Some(
            if crate::daemon::mounts::is_mounted(name) {
                "yes"
            } else {
                "no"
            }
            .to_string(),
        ),
        Some("receive_resume_token") => Some(
            zetta::dmu_send::receive_resume_token(spa, name)
                .map_err(spa_fail)?
                .unwrap_or_else(|| "-".to_string()),
        ),
        Some("origin") => Some(
            spa.origin_of(name)
                .map_err(spa_fail)?
                .unwrap_or_else(|| "-".to_string()),
        ),
        Some("written") => Some(number(
            spa.written_bytes(name).map_err(spa_fail)?,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        _ => None,
    };
    if let Some(value) = stat {
        return Ok(Some((value, "-".to_string())));
    }
    let Some(resolved) = resolve(props, name, prop) else {
        return Ok(None);
    };
    let mut value =
        match native.and_then(|p| PropValue::from_stored(p, &resolved.value).map(|v| (p, v))) {
            Some((p, v)) => format_value(p, &v, parsable),
            None => resolved.value.clone(),
        };
    if native == Some(ZfsProp::Mountpoint) {
        value = with_altroot(imported.spa.props.get_str("altroot"), &value);
    }
    // A mounted filesystem of a read-only pool is read-only whatever its property says
    // (`zfs_prop_get`: the `ro` mount option makes it `on`, source temporary).
    let mut resolved = resolved;
    if native == Some(ZfsProp::Readonly)
        && imported.spa.readonly
        && resolved.value != "on"
        && crate::daemon::mounts::is_mounted(name)
    {
        value = "on".to_string();
        resolved.source = Source::Temporary;
    } else if native.is_some() {
        // A mount option of `zfs mount -o` overrides the property while mounted.
        if let Some(temporary) = crate::daemon::mounts::temporary(name, prop) {
            value = temporary;
            resolved.source = Source::Temporary;
        }
    }
    let source = match resolved.source {
        Source::None => "-".to_string(),
        other => other.to_string(),
    };
    Ok(Some((value, source)))
}

/// A mountpoint as `zfs get` prints it on a pool with an alternate root
/// (`zfs_prop_get`): the root prepended to a path, `none`/`legacy` untouched, a root of
/// `/` adding nothing, a mountpoint of `/` adding nothing to a root.
pub(crate) fn with_altroot(altroot: Option<&str>, mountpoint: &str) -> String {
    let root = match altroot {
        Some("/") | Some("-") | Some("") | None => "",
        Some(root) => root,
    };
    if !mountpoint.starts_with('/') || root.is_empty() {
        return mountpoint.to_string();
    }
    let rest = if mountpoint == "/" { "" } else { mountpoint };
    format!("{root}{rest}")
}

/// A snapshot's properties: its own statistics, and its filesystem's settings.
fn snapshot_property(
    imported: &mut Imported,
    props: &LocalProps,
    name: &str,
    fs: &str,
    prop: &str,
    native: Option<ZfsProp>,
    parsable: bool,
) -> Result<Option<(String, String)>, CmdError> {
    let head = volume::dataset_type(&mut imported.spa, fs);
    if native.is_some_and(|p| !p.applies_to(DatasetType::Snapshot, Some(head))) {
        return Ok(None);
    }
    if native == Some(ZfsProp::Volsize) {
        let info = imported
            .spa
            .snapshot_volume_info(name)
            .map_err(spa_fail)?
            .ok_or_else(|| missing(name))?;
        return Ok(Some((
            format_value(
                ZfsProp::Volsize,
                &PropValue::Number(info.size_bytes),
                parsable,
            ),
            "-".to_string(),
        )));
    }
    let snapshots = imported.spa.snapshots(fs).map_err(spa_fail)?;
    let Some((_, _, phys)) = snapshots.iter().find(|(n, _, _)| n == name) else {
        return Err(missing(name));
    };
    let number = |n: u64, p: ZfsProp| format_value(p, &PropValue::Number(n), parsable);
    let value = match native.map(|p| p.name()) {
        Some("name") => Some(name.to_string()),
        Some("type") => Some("snapshot".to_string()),
        Some("creation") => Some(number(
            phys.creation_time,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("guid") => Some(number(phys.guid, native.unwrap_or(ZfsProp::ALL[0]))),
        Some("createtxg") => Some(number(phys.creation_txg, native.unwrap_or(ZfsProp::ALL[0]))),
        // `zfs destroy -d` marked it, and what keeps it (dsl_dataset_stats).
        Some("defer_destroy") => Some(
            if phys.flags & zetta::dsl::openzfs::dataset::DS_FLAG_DEFER_DESTROY != 0 {
                "on"
            } else {
                "off"
            }
            .to_string(),
        ),
        Some("userrefs") => Some(number(
            imported.spa.holds(name).map_err(spa_fail)?.len() as u64,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("referenced") => Some(number(
            phys.referenced_bytes,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("used") => Some(number(
            imported.spa.snapshot_used_bytes(name).map_err(spa_fail)?,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("written") => Some(number(
            imported.spa.written_bytes(name).map_err(spa_fail)?,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("clones") => {
            let (_, object, _) = snapshots
                .iter()
                .find(|(n, _, _)| n == name)
                .ok_or_else(|| missing(name))?;
            let clones = imported.spa.dependent_clones(*object).map_err(spa_fail)?;
            Some(if clones.is_empty() {
                String::new()
            } else {
                clones.join(",")
            })
        }
        Some("compressratio") | Some("refcompressratio") => Some(number(
            zetta::dsl::space::ratio_x100(phys.uncompressed_bytes, phys.compressed_bytes),
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("logicalreferenced") => Some(number(
            phys.uncompressed_bytes,
            native.unwrap_or(ZfsProp::ALL[0]),
        )),
        Some("available") | Some("mountpoint") => Some("-".to_string()),
        _ => None,
    };
    if let Some(value) = value {
        return Ok(Some((value, "-".to_string())));
    }
    // Set on the snapshot itself (user properties only), else received with it (a
    // stream's `snapprops`).
    if let Some(value) = props.0.get(name).and_then(|own| own.get(prop)) {
        return Ok(Some((value.clone(), "local".to_string())));
    }
    if let Some(value) = props
        .0
        .get(name)
        .and_then(|own| own.get(&format!("{prop}{RECEIVED_SUFFIX}")))
    {
        return Ok(Some((value.clone(), "received".to_string())));
    }
    // Else its filesystem's value, which a snapshot inherits (`dsl_prop_get_dd` with
    // `snapshot`: even a value set on the filesystem itself is inherited from it).
    let found = property(imported, props, fs, prop, parsable)?;
    Ok(found.map(|(value, source)| match source.as_str() {
        "local" | "received" => (value, format!("inherited from {fs}")),
        _ => (value, source),
    }))
}

/// A `zfs list -s` row: its printed cells and its values under the sort keys.
struct SortRow {
    name: String,
    createtxg: u64,
    columns: Vec<SortColumn>,
    keys: Vec<SortValue>,
    printed: Vec<String>,
}

impl ListEntry for SortRow {
    fn name(&self) -> &str {
        &self.name
    }

    fn createtxg(&self) -> u64 {
        self.createtxg
    }

    fn sort_value(&self, prop: &ListProp) -> SortValue {
        self.columns
            .iter()
            .position(|c| &c.prop == prop)
            .and_then(|i| self.keys.get(i).cloned())
            .unwrap_or(SortValue::Missing)
    }
}

/// The datasets a list/get command covers: the operands (and with -r/-d their
/// descendants), or every dataset of every imported pool.
/// Which object types a list/get covers (`-t`).
#[derive(Clone, Copy)]
struct Types {
    filesystems: bool,
    /// Volumes (only foreign pools hold them yet).
    volumes: bool,
    snapshots: bool,
    bookmarks: bool,
}

fn parse_types(parsed: &crate::zpool::Parsed, default: Types) -> Result<Types, CmdError> {
    let Some(arg) = parsed.values('t').last().cloned() else {
        return Ok(default);
    };
    let mut types = Types {
        filesystems: false,
        volumes: false,
        snapshots: false,
        bookmarks: false,
    };
    for word in arg.split(',') {
        match word {
            "filesystem" | "fs" => types.filesystems = true,
            "snapshot" | "snap" => types.snapshots = true,
            "bookmark" => types.bookmarks = true,
            "volume" | "vol" => types.volumes = true,
            "all" => {
                types.filesystems = true;
                types.volumes = true;
                types.snapshots = true;
                types.bookmarks = true;
            }
            other => return usage(format!("invalid type '{other}'")),
        }
    }
    Ok(types)
}

/// `skipped`: where `zfs list` collects the operands that do not exist (zfs_for_each
/// reports each and goes on with the others); without it the first one is the error.
fn targets(
    names: &[String],
    recursive: bool,
    depth: Option<usize>,
    types: Types,
    mut skipped: Option<&mut Vec<String>>,
) -> Result<Vec<(Imported, Vec<String>)>, CmdError> {
    let mut skip = |root: &str| -> CmdResult {
        match skipped.as_deref_mut() {
            Some(list) => {
                if let CmdError::Fail(message) = missing(root) {
                    list.push(message);
                }
                Ok(())
            }
            None => Err(missing(root)),
        }
    };
    // One handle per pool (a second exclusive open of the same pool would wait on itself).
    let mut roots: Vec<(String, Vec<String>)> = Vec::new();
    if names.is_empty() {
        // Every pool, by name (as datasets are listed).
        let mut entries = pool::load_cache()?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            roots.push((entry.name.clone(), vec![entry.name]));
        }
    } else {
        for name in names {
            let pool_name = pool_of(name).to_string();
            match roots.iter_mut().find(|(p, _)| *p == pool_name) {
                Some((_, list)) => list.push(name.clone()),
                None => roots.push((pool_name, vec![name.clone()])),
            }
        }
    }
    let mut out = Vec::new();
    for (pool_name, wanted) in roots {
        let mut imported = match pool::open_pool(&pool_name) {
            Ok(imported) => imported,
            // Listing every pool: one that cannot be opened (a device missing) has no
            // datasets to show and hides none of the others'.
            Err(_) if names.is_empty() => continue,
            Err(_) => {
                for root in &wanted {
                    skip(root)?;
                }
                continue;
            }
        };
        let all = visible_names(&mut imported)?;
        // `zfs list -t snapshot fs` means fs's snapshots: an implied depth of 1.
        let implied = if types.snapshots && !types.filesystems {
            1
        } else {
            0
        };
        let limit = if names.is_empty() || recursive {
            depth
        } else {
            Some(depth.unwrap_or(implied))
        };
        let mut selected = Vec::new();
        for root in &wanted {
            if let Some((fs, _)) = root.split_once('#') {
                let found = imported
                    .spa
                    .bookmarks(fs)
                    .is_ok_and(|marks| marks.iter().any(|b| b.name == *root));
                if found {
                    selected.push(root.clone());
                } else {
                    skip(root)?;
                }
                continue;
            }
            if root.contains('@') {
                let fs = root.split('@').next().unwrap_or(root);
                let found = imported
                    .spa
                    .snapshots(fs)
                    .is_ok_and(|snaps| snaps.iter().any(|(n, _, _)| n == root));
                if found {
                    selected.push(root.clone());
                } else {
                    skip(root)?;
                }
                continue;
            }
            if !all.contains(root) {
                skip(root)?;
                continue;
            }
            for name in all
                .iter()
                .filter(|n| *n == root || n.starts_with(&format!("{root}/")))
            {
                let below = name[root.len()..].matches('/').count();
                let is_volume =
                    volume::dataset_type(&mut imported.spa, name) == DatasetType::Volume;
                let wanted_type = if is_volume {
                    types.volumes
                } else {
                    types.filesystems
                };
                if wanted_type && limit.is_none_or(|l| below <= l) && !selected.contains(name) {
                    selected.push(name.clone());
                }
                if types.snapshots && limit.is_none_or(|l| below < l) {
                    for (snapshot, _, _) in imported.spa.snapshots(name).map_err(spa_fail)? {
                        if !selected.contains(&snapshot) {
                            selected.push(snapshot);
                        }
                    }
                }
                if types.bookmarks && limit.is_none_or(|l| below < l) {
                    for bookmark in imported.spa.bookmarks(name).map_err(spa_fail)? {
                        if !selected.contains(&bookmark.name) {
                            selected.push(bookmark.name);
                        }
                    }
                }
            }
        }
        out.push((imported, selected));
    }
    Ok(out)
}

/// The pool's filesystems without the hidden work datasets of receives (`…/%recv`).
fn visible_names(imported: &mut Imported) -> Result<Vec<String>, CmdError> {
    let mut names = imported.spa.dataset_names().map_err(spa_fail)?;
    names.retain(|name| !name.contains('%'));
    Ok(names)
}

fn parse_depth(parsed: &crate::zpool::Parsed) -> Result<Option<usize>, CmdError> {
    match parsed.values('d').last() {
        Some(d) => d
            .parse()
            .map(Some)
            .map_err(|_| CmdError::Usage(format!("invalid depth '{d}'"))),
        None => Ok(None),
    }
}

/// `zfs list [-Hp] [-r|-d depth] [-o fields] [fs…]`
fn cmd_list(args: &[String], ctx: &mut Ctx) -> CmdResult {
    // 2.3's option string has no leading ':': glibc words unknown long options first.
    let (parsed, json) =
        crate::zpool::json::parse_with_json(args, "jHprd:o:s:S:t:", LONG_JSON_ZFS, Some("zfs"))?;
    let fields_arg = parsed
        .values('o')
        .last()
        .cloned()
        .unwrap_or_else(|| "name,used,avail,refer,mountpoint".to_string());
    let fields: Vec<String> = if fields_arg == "space" {
        [
            "name",
            "avail",
            "used",
            "usedsnap",
            "usedds",
            "usedrefreserv",
            "usedchild",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    } else {
        fields_arg.split(',').map(str::to_string).collect()
    };
    // zprop_get_list: an unknown column is a usage error (user properties hold ':',
    // written@snap and userused@who name their object).
    for field in &fields {
        let known = ZfsProp::from_name(field).is_some()
            || field.contains(':')
            || field.contains('@')
            || field.contains('#');
        if !known {
            return usage(format!("bad property list: invalid property '{field}'"));
        }
    }
    // --json-int implies -p (cb_literal), as in 2.3.
    let parsable = parsed.has('p') || json.as_int;
    let depth = parse_depth(&parsed)?;
    let mut rows = Vec::new();
    let mut row_names = Vec::new();
    let mut json_items: HashMap<String, zetta_zutil::json::Json> = HashMap::new();
    let types = parse_types(
        &parsed,
        Types {
            filesystems: true,
            volumes: true,
            snapshots: false,
            bookmarks: false,
        },
    )?;
    // -s/-S: sort keys, in order (OpenZFS `zfs_sort`), then by name.
    let mut sort_columns = Vec::new();
    for (flag, value) in &parsed.options {
        if let ('s' | 'S', Some(name)) = (*flag, value) {
            let column = zetta_zprop::list_sort::parse_sort_column(name, *flag == 'S')
                .map_err(|e| CmdError::Usage(e.to_string()))?;
            sort_columns.push(column);
        }
    }
    let mut sortable = Vec::new();
    let mut skipped = Vec::new();
    for (mut imported, names) in targets(
        &parsed.operands,
        parsed.has('r'),
        depth,
        types,
        Some(&mut skipped),
    )? {
        let props = load_props(&mut imported)?;
        for name in names {
            let mut row = Vec::new();
            let mut json_props = zetta_zutil::json::Json::object();
            for field in &fields {
                let (value, source) = property(&mut imported, &props, &name, field, parsable)?
                    .unwrap_or_else(|| ("-".to_string(), "-".to_string()));
                if json.enabled && field != "name" {
                    let key = ZfsProp::from_name(field).map_or(field.as_str(), |p| p.name());
                    let source = zetta_zutil::json::PropSource::from_column(&source);
                    json_props.insert(
                        key,
                        zetta_zutil::json::property(&value, &source, json.as_int),
                    );
                }
                row.push(value);
            }
            if json.enabled {
                let mut item = dataset_info(&mut imported, &props, &name, json.as_int)?;
                item.insert("properties", json_props);
                json_items.insert(name.clone(), item);
            }
            let mut keys = Vec::new();
            if !sort_columns.is_empty() {
                for column in &sort_columns {
                    let raw = property(&mut imported, &props, &name, column.prop.name(), true)?;
                    keys.push(match raw.map(|(v, _)| v) {
                        None => SortValue::Missing,
                        Some(v) if v == "-" => SortValue::Missing,
                        Some(v) => match (&column.prop, v.parse::<u64>()) {
                            (ListProp::Native(p), Ok(n)) if !sorts_as_text(*p) => {
                                SortValue::Number(n)
                            }
                            _ => SortValue::Text(v),
                        },
                    });
                }
                let createtxg = property(&mut imported, &props, &name, "createtxg", true)?
                    .and_then(|(v, _)| v.parse().ok())
                    .unwrap_or(0);
                sortable.push(SortRow {
                    name: name.clone(),
                    createtxg,
                    columns: sort_columns.clone(),
                    keys,
                    printed: row,
                });
            } else {
                rows.push(row);
                row_names.push(name);
            }
        }
    }
    if !sort_columns.is_empty() {
        sort_entries(&mut sortable, &sort_columns);
        for sorted in sortable {
            rows.push(sorted.printed);
            row_names.push(sorted.name);
        }
    }
    // The operands that do not exist, each in its words; the others are still listed and
    // the command exits 1.
    for message in &skipped {
        ctx.warn(&format!("{message}\n"));
    }
    let status = if skipped.is_empty() { Ok(()) } else { fail("") };
    if json.enabled {
        let mut document = datasets_document("list");
        if let Some(datasets) = document.get_mut("datasets") {
            for name in &row_names {
                if let Some(item) = json_items.remove(name) {
                    datasets.insert(name, item);
                }
            }
        }
        crate::zpool::json::print(ctx, &document);
        if rows.is_empty() && parsed.operands.is_empty() {
            ctx.warn("no datasets available\n");
        }
        return status;
    }
    if rows.is_empty() && parsed.operands.is_empty() {
        ctx.print("no datasets available\n");
        return Ok(());
    }
    if rows.is_empty() && !skipped.is_empty() {
        return status;
    }
    let names: Vec<&str> = fields.iter().map(String::as_str).collect();
    let columns = zetta_zutil::list::zfs_list_columns(&names, parsable);
    ctx.print(&zetta_zutil::list::format_table(
        &columns,
        &rows,
        parsed.has('H'),
    ));
    status
}

/// `zfs get [-Hpr] [-o fields] all|props fs…`
fn cmd_get(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let (parsed, json) =
        crate::zpool::json::parse_with_json(args, "jHprd:o:s:t:", LONG_JSON_ZFS, None)?;
    let Some((props_arg, names)) = parsed.operands.split_first() else {
        return usage("missing property argument");
    };
    // --json-int implies -p (cb_literal), as in 2.3.
    let parsable = parsed.has('p') || json.as_int;
    let mut document = datasets_document("get");
    let mut fields: Vec<String> = ["name", "property", "value", "source"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for list in parsed.values('o') {
        fields = Vec::new();
        for field in list.split(',') {
            match field {
                "name" | "property" | "value" | "received" | "source" => {
                    fields.push(field.to_string())
                }
                "all" if fields.is_empty() => {
                    fields = ["name", "property", "value", "received", "source"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                }
                "all" => return usage("\"all\" conflicts with specific fields given to -o option"),
                _ => return usage(format!("invalid column name '{field}'")),
            }
        }
    }
    // -s: which SOURCE classes to print (all when not given).
    let mut sources: Option<Vec<&str>> = None;
    for list in parsed.values('s') {
        let chosen = sources.get_or_insert_with(Vec::new);
        for source in list.split(',') {
            const KNOWN: [&str; 6] = [
                "local",
                "default",
                "inherited",
                "received",
                "temporary",
                "none",
            ];
            match KNOWN.iter().find(|k| **k == source) {
                Some(known) => chosen.push(known),
                None => return usage(format!("invalid source '{source}'")),
            }
        }
    }
    let source_wanted = |source: &str| {
        let class = match source {
            "-" => "none",
            s if s.starts_with("inherited") => "inherited",
            s => s,
        };
        sources
            .as_ref()
            .is_none_or(|chosen| chosen.contains(&class))
    };
    let depth = parse_depth(&parsed)?;
    let mut rows = Vec::new();
    let types = parse_types(
        &parsed,
        Types {
            filesystems: true,
            volumes: true,
            snapshots: true,
            bookmarks: false,
        },
    )?;
    for (mut imported, datasets) in targets(names, parsed.has('r'), depth, types, None)? {
        let props = load_props(&mut imported)?;
        for name in datasets {
            let mut json_props = zetta_zutil::json::Json::object();
            let wanted: Vec<String> = if props_arg == "all" {
                let mut all: Vec<String> = zetta_zprop::ZFS_GET_ALL_ORDER
                    .iter()
                    .map(|p| p.to_string())
                    .collect();
                all.extend(props.user_prop_names());
                all
            } else {
                props_arg.split(',').map(str::to_string).collect()
            };
            for prop in wanted {
                let userquota = zetta::zpl::zfs_quota::UserquotaProp::parse(&prop).is_some();
                let is_known =
                    ZfsProp::from_name(&prop).is_some() || prop.contains(':') || userquota;
                if !is_known {
                    return usage(format!("bad property list: invalid property '{prop}'"));
                }
                let looked_up = if userquota {
                    crate::zfs_userspace::get_property(&imported, &name, &prop, parsable)
                } else {
                    property(&mut imported, &props, &name, &prop, parsable)?
                };
                let (value, source) =
                    looked_up.unwrap_or_else(|| ("-".to_string(), "-".to_string()));
                if props_arg == "all" && value == "-" && source == "-" && !prop.contains(':') {
                    continue;
                }
                if !source_wanted(&source) {
                    continue;
                }
                // RECEIVED: the value `zfs receive` stored, whatever is in force.
                let native = ZfsProp::from_name(&prop);
                let received = zetta_zprop::PropSource::received(
                    &props,
                    &name,
                    native.map(|p| p.name()).unwrap_or(&prop),
                )
                .map(|stored| {
                    match native.and_then(|p| PropValue::from_stored(p, &stored).map(|v| (p, v))) {
                        Some((p, v)) => format_value(p, &v, parsable),
                        None => stored,
                    }
                })
                .unwrap_or_else(|| "-".to_string());
                if json.enabled {
                    // zprop_collect_property: RECEIVED's data is the received value when
                    // that column was asked for.
                    let mut source = zetta_zutil::json::PropSource::from_column(&source);
                    if let zetta_zutil::json::PropSource::Received(data) = &mut source {
                        if fields.iter().any(|f| f == "received") && received != "-" {
                            *data = Some(received.clone());
                        }
                    }
                    let key = native.map_or(prop.as_str(), |p| p.name());
                    json_props.insert(
                        key,
                        zetta_zutil::json::property(&value, &source, json.as_int),
                    );
                    continue;
                }
                let row: Vec<String> = fields
                    .iter()
                    .map(|f| match f.as_str() {
                        "name" => name.clone(),
                        "property" => prop.clone(),
                        "value" => value.clone(),
                        "received" => received.clone(),
                        "source" => source.clone(),
                        _ => "-".to_string(),
                    })
                    .collect();
                rows.push(row);
            }
            if json.enabled && !json_props.is_empty_object() {
                let mut item = dataset_info(&mut imported, &props, &name, json.as_int)?;
                item.insert("properties", json_props);
                if let Some(datasets) = document.get_mut("datasets") {
                    datasets.insert(&name, item);
                }
            }
        }
    }
    if json.enabled {
        crate::zpool::json::print(ctx, &document);
        return Ok(());
    }
    let headers: Vec<zetta_zutil::list::Column> = fields
        .iter()
        .map(|f| zetta_zutil::list::Column::new(&f.to_uppercase(), zetta_zutil::list::Align::Left))
        .collect();
    ctx.print(&zetta_zutil::list::format_table(
        &headers,
        &rows,
        parsed.has('H'),
    ));
    Ok(())
}

/// `zfs set prop=value… fs`
fn cmd_set(args: &[String]) -> CmdResult {
    // zfs_do_set's getopt: options (`-u` is not in Zetta) are refused, never taken for
    // property=value words.
    let parsed = crate::zpool::getopt(args, "")?;
    let args = &parsed.operands[..];
    let Some((name, assignments)) = args.split_last() else {
        return usage("missing property=value argument(s)");
    };
    if assignments.is_empty() {
        return usage("missing property=value argument(s)");
    }
    if name.contains('@') {
        return set_snapshot_props(name, assignments, args);
    }
    // A volume's properties are checked as a volume's (`volsize` against its block size).
    let mut early = if name.contains(['@', '#']) {
        None
    } else {
        open_dataset(name).ok()
    };
    let volume_info = match early.as_mut() {
        Some(imported) => imported.spa.volume_info(name).ok().flatten(),
        None => None,
    };
    let (object, volblocksize) = match volume_info {
        Some(info) => (DatasetType::Volume, Some(info.block_size_bytes)),
        None => (DatasetType::Filesystem, None),
    };
    let mut sets = Vec::new();
    let mut quota_sets = Vec::new();
    for assignment in assignments {
        let Some((prop, value)) = assignment.split_once('=') else {
            return usage(format!(
                "missing '=' for property=value argument '{assignment}'"
            ));
        };
        // userquota@who, groupquota@who, ... (`zfs_userspace`).
        if let Some(checked) = crate::zfs_userspace::validate_set(name, prop, value) {
            quota_sets.push(checked?);
            continue;
        }
        sets.push(validate_as(name, prop, value, false, object, volblocksize)?);
    }
    let mut imported = match early {
        Some(imported) => imported,
        None => open_dataset(name)?,
    };
    pool::writable(&imported, &format!("cannot set property for '{name}'"))?;
    for set in &quota_sets {
        crate::zfs_userspace::store(&mut imported, name, set)?;
    }
    for mut set in sets {
        if let SetValue::Native(ZfsProp::Volsize, PropValue::Number(size)) = set {
            volume::set_volsize(&mut imported, name, size)?;
            continue;
        }
        if let Some(info) = volume_info {
            let copies = volume::current_copies(&mut imported, name)?;
            volume::fix_auto_reservation(&imported.spa, &mut set, info, copies);
        }
        if let Some(why) = space_limit_refusal(&mut imported, name, &set)? {
            return fail(format!("cannot set property for '{name}': {why}"));
        }
        if imported.spa.openzfs().is_none() && needs_disabled_feature(&imported, &set) {
            return fail(format!(
                "cannot set property for '{name}': pool and or dataset must be upgraded to set this property or value"
            ));
        }
        let prop = match &set {
            SetValue::Native(prop, _) => prop.name().to_string(),
            SetValue::User { name, .. } => name.clone(),
        };
        store(&mut imported, name, set)?;
        // A set value replaces `zfs inherit`'s hiding of a received one.
        imported
            .spa
            .clear_local_prop(name, &format!("{prop}{INHERIT_SUFFIX}"))
            .map_err(spa_fail)?;
    }
    finish(&mut imported, "set", args)
}

/// `zfs set user:prop=value… fs@snap`: only user properties can be set on a snapshot
/// (libzfs `zfs_valid_proplist`); they are stored on the snapshot itself.
fn set_snapshot_props(name: &str, assignments: &[String], args: &[String]) -> CmdResult {
    let mut pairs = Vec::new();
    for assignment in assignments {
        let Some((prop, value)) = assignment.split_once('=') else {
            return usage(format!(
                "missing '=' for property=value argument '{assignment}'"
            ));
        };
        pairs.push((prop, value));
    }
    let mut imported = open_snapshot(name)?;
    let mut sets = Vec::new();
    for (prop, value) in pairs {
        match validate_as(name, prop, value, false, DatasetType::Snapshot, None)? {
            SetValue::User { name, value } => sets.push((name, value)),
            SetValue::Native(..) => {
                return fail(format!(
                "cannot set property for '{name}': this property can not be modified for snapshots"
            ))
            }
        }
    }
    pool::writable(&imported, &format!("cannot set property for '{name}'"))?;
    for (prop, value) in sets {
        imported
            .spa
            .set_snapshot_prop(name, &prop, &value)
            .map_err(spa_fail)?;
    }
    finish(&mut imported, "set", args)
}

/// Opens the pool of the snapshot `name` and checks that the snapshot exists.
fn open_snapshot(name: &str) -> Result<Imported, CmdError> {
    let (fs, _) = name.split_once('@').unwrap_or((name, ""));
    let imported = pool::open_pool(pool_of(name)).map_err(|_| missing(name))?;
    match imported.spa.snapshots(fs) {
        Ok(snapshots) if snapshots.iter().any(|(n, _, _)| n == name) => Ok(imported),
        _ => Err(missing(name)),
    }
}

/// The `-o` user properties of `zfs snapshot` (libzfs `zfs_valid_proplist` for a
/// snapshot: anything else "can not be modified for snapshots").
fn parse_snapshot_settings(
    parsed: &crate::zpool::Parsed,
) -> Result<Vec<(String, String)>, CmdError> {
    let mut props: Vec<(String, String)> = Vec::new();
    for option in parsed.values('o') {
        // parseprop: its words, and exit 1 without the usage.
        let Some((prop, value)) = option.split_once('=') else {
            return fail("missing '=' for property=value argument");
        };
        if props.iter().any(|(p, _)| p == prop) {
            return fail(format!("property '{prop}' specified multiple times"));
        }
        props.push((prop.to_string(), value.to_string()));
    }
    Ok(props)
}

fn check_snapshot_settings(props: &[(String, String)]) -> CmdResult {
    for (prop, value) in props {
        let target = SetTarget {
            object: DatasetType::Snapshot,
            creating: false,
            volblocksize_bytes: None,
        };
        match validate_set(prop, value, target) {
            Ok(SetValue::User { .. }) => {}
            Ok(SetValue::Native(..)) => {
                return fail(
                    "cannot create snapshots : this property can not be modified for snapshots",
                )
            }
            Err(e) => return fail(format!("cannot create snapshots : {e}")),
        }
    }
    Ok(())
}

/// `zfs inherit [-rS] prop fs`: the local value goes; a received value is hidden, or with
/// `-S` shown again.
fn cmd_inherit(args: &[String]) -> CmdResult {
    let parsed = getopt(args, "rS")?;
    let [prop, name] = parsed.operands.as_slice() else {
        return usage("missing property or dataset argument");
    };
    match ZfsProp::from_name(prop) {
        Some(native) if native.is_readonly() => {
            return fail(format!("{prop} property is read-only"));
        }
        Some(_) => {}
        None if !zetta_zprop::user_prop::is_user_prop_name(prop) => {
            return usage(format!("invalid property '{prop}'"));
        }
        None => {}
    }
    if name.contains('@') && ZfsProp::from_name(prop).is_none() {
        let mut imported = open_snapshot(name)?;
        pool::writable(&imported, &format!("cannot inherit {prop} for '{name}'"))?;
        imported
            .spa
            .clear_snapshot_prop(name, prop)
            .map_err(spa_fail)?;
        return finish(&mut imported, "inherit", args);
    }
    let mut imported = open_dataset(name)?;
    let mut victims = vec![name.clone()];
    pool::writable(&imported, &format!("cannot inherit {prop} for '{name}'"))?;
    if parsed.has('r') {
        victims.extend(
            imported
                .spa
                .dataset_names()
                .map_err(spa_fail)?
                .into_iter()
                .filter(|n| n.starts_with(&format!("{name}/"))),
        );
    }
    let canonical = ZfsProp::from_name(prop)
        .map(|p| p.name().to_string())
        .unwrap_or_else(|| prop.clone());
    for victim in victims {
        imported
            .spa
            .inherit_prop(&victim, &canonical, parsed.has('S'))
            .map_err(spa_fail)?;
    }
    finish(&mut imported, "inherit", args)
}
