//! `zinject` (OpenZFS `cmd/zinject/zinject.c`, `translate.c`): fault injection into the
//! daemon's zio pipeline (`zetta::zio::inject`), for testing what ZFS does with damage:
//! the seed post "Testing copies=n resiliency" without overwriting a disk by hand.
//!
//! Forms (OpenZFS's syntax and messages; exit 0 ok, 1 failed, 2 usage):
//! `zinject` lists the handlers (OpenZFS's tables); `zinject -c <id|all>` clears;
//! `zinject -d DEV [-e io|nxio|corrupt] [-T read|write|all] [-f FREQ] [-q] POOL` fails or
//! corrupts a leaf's I/O (`corrupt` needs `-T read` and `-f`, as in OpenZFS 2.3);
//! `zinject -t data [-e io|checksum] [-f FREQ] [-q] PATH` fails every read of a file's
//! data blocks. Zetta's extension: `--seed N` makes which I/Os are hit repeatable.
//!
//! Process model: handlers live in the daemon that holds the pools; this front end parses
//! and checks the arguments itself (usage errors never start a daemon), resolves a `-t
//! data` PATH to (dataset, object) through the mount table and `stat` here, in the
//! caller's process (the daemon never `stat`s its own FUSE mounts), and forwards the
//! resolved request. Nothing here panics on its arguments.

use crate::zpool::{getopt, pool, CmdError};
use std::io::Write;
use zetta::zio::inject::{self, FaultKind, HandlerSpec, IoType, Target};

const USAGE: &str = "usage:

\tzinject

\t\tList all active injection records.

\tzinject -c <id|all>

\t\tClear the particular record (if given a numeric ID), or
\t\tall records if 'all' is specified.

\tzinject -d device [-e errno] [-T <read|write|all>] [-f frequency]
\t\t[--seed N] pool

\t\tInject a fault into a particular device.
\t\t'errno' can be 'nxio' (the default), 'io', or 'corrupt' (bit flip).
\t\t'frequency' is a value between 0.0001 and 100.0 that limits
\t\tdevice error injection to a percentage of the IOs.

\tzinject [-q] <-t type> [-e errno] [-f freq] [--seed N] <object>

\t\tInject an error into the object specified by the '-t' option
\t\tand the object descriptor.  The 'object' parameter is
\t\tinterpreted depending on the '-t' option.

\t\t-q\tQuiet mode.  Only print out the handler number added.
\t\t-e\tInject a specific error.  Must be one of 'io' or
\t\t\t'checksum'.  Default is 'io'.
\t\t-f\tOnly inject errors a fraction of the time.  Expressed as
\t\t\ta percentage between 0.0001 and 100.

\t-t data\t\tInject an error into the plain file contents of a
\t\t\tfile.  The object must be specified as a complete path
\t\t\tto a file on a ZFS filesystem.

\t--seed N\tZetta: which I/Os a frequency hits is a function of N, the
\t\t\tdevice and the offset, so a run with the same N repeats
\t\t\texactly (default: a random seed).
";

/// The operand a `-t data` PATH becomes once resolved (argv words cannot hold a NUL).
const RESOLVED: &str = "\0zetta-object\0";

/// OpenZFS's getopt string, for telling its options we lack from unknown ones.
const OPENZFS_FLAGS: &str = "aAbCdDfFgqhIctTlmrseuLpP";

struct Request {
    cancel: Option<String>,
    device: Option<String>,
    data_type: Option<String>,
    error: Option<FaultKind>,
    iotype: IoType,
    freq_ppm: u32,
    quiet: bool,
    seed: Option<u64>,
    operands: Vec<String>,
}

enum Parsed {
    List,
    Help,
    Run(Request),
}

/// A failure: message to stderr, optional usage to stdout (as OpenZFS's `usage()`), code.
struct Failure {
    message: String,
    usage: bool,
    code: i32,
}

fn fail(message: impl Into<String>, usage: bool, code: i32) -> Failure {
    Failure {
        message: message.into(),
        usage,
        code,
    }
}

fn parse(args: &[String]) -> Result<Parsed, Failure> {
    if args.is_empty() {
        return Ok(Parsed::List);
    }
    // `--seed N` / `--seed=N` (Zetta's) first: getopt knows only short options.
    let mut seed = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = if word == "--seed" {
            Some(words.next().cloned().unwrap_or_default())
        } else {
            word.strip_prefix("--seed=").map(str::to_string)
        };
        match value {
            Some(value) => match value.parse::<u64>() {
                Ok(n) => seed = Some(n),
                Err(_) => {
                    return Err(fail(
                        format!("invalid seed '{value}': must be a non-negative integer"),
                        true,
                        2,
                    ))
                }
            },
            None => rest.push(word.clone()),
        }
    }
    let parsed = match getopt(&rest, "c:d:e:f:hqt:T:") {
        Ok(parsed) => parsed,
        Err(CmdError::Usage(message)) | Err(CmdError::Fail(message)) => {
            // getopt's words are zpool's; zinject's are getopt(3)'s.
            if let Some(flag) = message
                .strip_prefix("invalid option '")
                .and_then(|m| m.chars().next())
            {
                if flag != '-' && OPENZFS_FLAGS.contains(flag) {
                    return Err(fail(
                        format!("option -{flag} is not supported by Zetta's zinject"),
                        true,
                        2,
                    ));
                }
                return Err(fail(format!("invalid option '{flag}'"), true, 2));
            }
            if let Some(flag) = message
                .strip_prefix("missing argument for '")
                .and_then(|m| m.chars().next())
            {
                return Err(fail(format!("option -{flag} requires an operand"), true, 1));
            }
            return Err(fail(message, true, 2));
        }
    };
    let mut request = Request {
        cancel: None,
        device: None,
        data_type: None,
        error: None,
        iotype: IoType::All,
        freq_ppm: 0,
        quiet: false,
        seed,
        operands: parsed.operands.clone(),
    };
    for (flag, value) in &parsed.options {
        let value = value.clone().unwrap_or_default();
        match flag {
            'h' => return Ok(Parsed::Help),
            'c' => request.cancel = Some(value),
            'd' => request.device = Some(value),
            'q' => request.quiet = true,
            'e' => {
                request.error = Some(match value.to_ascii_lowercase().as_str() {
                    "io" => FaultKind::Io,
                    "checksum" => FaultKind::Checksum,
                    "corrupt" => FaultKind::Corrupt,
                    "nxio" => FaultKind::Nxio,
                    "decompress" | "decrypt" | "dtl" | "noop" => {
                        return Err(fail(
                            format!("error type '{value}' is not supported by Zetta's zinject"),
                            false,
                            1,
                        ))
                    }
                    _ => {
                        return Err(fail(
                            format!(
                                "invalid error type '{value}': must be one of: io decompress decrypt nxio dtl corrupt noop"
                            ),
                            true,
                            1,
                        ))
                    }
                })
            }
            'f' => {
                let parsed: Result<f64, _> = value.parse();
                match parsed {
                    Err(_) => {
                        return Err(fail(
                            "invalid value: frequency value must be in the range [0.0001, 100.0]",
                            false,
                            1,
                        ))
                    }
                    Ok(percent) if !(0.0001..=100.0).contains(&percent) => {
                        return Err(fail(
                            "out of range: frequency value must be in the range [0.0001, 100.0]",
                            false,
                            1,
                        ))
                    }
                    Ok(percent) => request.freq_ppm = (percent * 10_000.0).round() as u32,
                }
            }
            'T' => {
                request.iotype = match value.to_ascii_lowercase().as_str() {
                    "read" => IoType::Read,
                    "write" => IoType::Write,
                    "all" => IoType::All,
                    "free" | "claim" | "flush" | "trim" | "null" | "probe" => {
                        return Err(fail(
                            format!("I/O type '{value}' is not supported by Zetta's zinject"),
                            false,
                            1,
                        ))
                    }
                    _ => {
                        return Err(fail(
                            format!(
                                "invalid I/O type '{value}': must be 'read', 'write', 'free', 'claim', 'flush' or 'all'"
                            ),
                            true,
                            1,
                        ))
                    }
                }
            }
            't' => match value.as_str() {
                "data" => request.data_type = Some(value),
                "dnode" | "mos" | "mosdir" | "metaslab" | "config" | "bpobj" | "spacemap"
                | "errlog" => {
                    return Err(fail(
                        format!("type '{value}' is not supported by Zetta's zinject"),
                        false,
                        1,
                    ))
                }
                _ => return Err(fail(format!("invalid type '{value}'"), true, 1)),
            },
            _ => {}
        }
    }
    // The checks of zinject.c's main, in its order.
    if let Some(cancel) = &request.cancel {
        if request.data_type.is_some() || request.freq_ppm > 0 {
            return Err(fail(
                "cancel (-c) incompatible with any other options",
                true,
                2,
            ));
        }
        if !request.operands.is_empty() {
            return Err(fail("extraneous argument to '-c'", true, 2));
        }
        if cancel != "all" && cancel.parse::<u32>().is_err() {
            return Err(fail(
                format!("invalid handle id '{cancel}': must be an integer or 'all'"),
                true,
                1,
            ));
        }
    } else if request.device.is_some() {
        if request.data_type.is_some() {
            return Err(fail(
                "device (-d) incompatible with data error injection",
                true,
                2,
            ));
        }
        if request.operands.len() != 1 {
            return Err(fail(
                "device (-d) injection requires a single pool name",
                true,
                2,
            ));
        }
        if request.error == Some(FaultKind::Checksum) {
            return Err(fail(
                "device error type must be 'io', 'nxio' or 'corrupt'",
                false,
                1,
            ));
        }
        if request.error == Some(FaultKind::Corrupt)
            && (request.freq_ppm == 0 || request.iotype != IoType::Read)
        {
            return Err(fail(
                "device corrupt errors require io type read and a frequency value",
                false,
                1,
            ));
        }
    } else if request.data_type.is_some() {
        if request.operands.len() != 1 {
            return Err(fail("missing object", true, 2));
        }
        if matches!(
            request.error,
            Some(FaultKind::Nxio) | Some(FaultKind::Corrupt)
        ) {
            return Err(fail("data error type must be 'checksum' or 'io'", false, 1));
        }
    } else {
        return Err(fail(
            "at least one of '-b', '-d', '-t', '-a', '-p', '-I' or '-u' must be specified",
            true,
            2,
        ));
    }
    Ok(Parsed::Run(request))
}

fn report(failure: Failure, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if !failure.message.is_empty() {
        let _ = writeln!(err, "{}", failure.message);
    }
    if failure.usage {
        let _ = out.write_all(USAGE.as_bytes());
    }
    failure.code
}

/// `zinject …` as typed: checked here, run in the daemon (or here when this process is
/// the daemon or `ZETTA_DIRECT=1`).
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut args = args.to_vec();
    match parse(&args) {
        Ok(Parsed::Help) => {
            let _ = out.write_all(USAGE.as_bytes());
            return 0;
        }
        Ok(Parsed::Run(request)) if request.data_type.is_some() => {
            let Some(object) = request.operands.first() else {
                return 2;
            };
            if !object.starts_with(RESOLVED) {
                let resolved = match resolve_path(object) {
                    Ok(resolved) => resolved,
                    Err(failure) => return report(failure, out, err),
                };
                for word in args.iter_mut() {
                    if word == object {
                        *word = resolved.clone();
                    }
                }
            }
        }
        Ok(_) => {}
        Err(failure) => return report(failure, out, err),
    }
    if crate::daemon::direct_mode() || crate::daemon::registry::get().is_some() {
        return execute(&args, out, err);
    }
    let mut request = Vec::with_capacity(args.len() + 1);
    request.push("zinject".to_string());
    request.extend(args);
    crate::daemon::client::forward(&request, out, err)
}

/// A full path on a Zetta filesystem → the resolved operand (dataset, object number).
fn resolve_path(path: &str) -> Result<String, Failure> {
    let full = compress_slashes(path);
    if !full.starts_with('/') {
        return Err(fail(
            format!("invalid object '{full}': must be full path"),
            true,
            1,
        ));
    }
    let not_found = || fail(format!("cannot find mountpoint for '{full}'"), false, 1);
    let metadata = std::fs::metadata(&full).map_err(|_| not_found())?;
    let canonical = std::fs::canonicalize(&full).map_err(|_| not_found())?;
    let (fstype, source) =
        crate::daemon::mounts::mount_containing(&canonical).ok_or_else(not_found)?;
    if fstype != "fuse.zetta" {
        return Err(fail(
            format!("invalid path '{full}': not a ZFS filesystem"),
            false,
            1,
        ));
    }
    use std::os::unix::fs::MetadataExt;
    Ok(format!("{RESOLVED}{source}\0{}", metadata.ino()))
}

fn compress_slashes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    out
}

fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// Runs a checked request where the pools are held.
fn execute(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let request = match parse(args) {
        Ok(Parsed::List) => return list(out),
        Ok(Parsed::Help) => {
            let _ = out.write_all(USAGE.as_bytes());
            return 0;
        }
        Ok(Parsed::Run(request)) => request,
        Err(failure) => return report(failure, out, err),
    };
    if let Some(cancel) = &request.cancel {
        if cancel == "all" {
            inject::clear_all(None);
            let _ = writeln!(out, "removed all registered handlers");
            return 0;
        }
        let id = cancel.parse::<u32>().unwrap_or(0);
        if inject::clear(id) {
            let _ = writeln!(out, "removed handler {id}");
            return 0;
        }
        let _ = writeln!(
            err,
            "failed to remove handler {id}: No such file or directory"
        );
        return 1;
    }
    let seed = request.seed.unwrap_or_else(random_seed);
    if let Some(device) = &request.device {
        let pool_name = request.operands[0].clone();
        let imported = match pool::open_pool_shared(&pool_name) {
            Ok(imported) => imported,
            Err(e) => {
                let _ = writeln!(err, "{}", e.message());
                return 1;
            }
        };
        let guid = find_leaf(&imported.spa.root, device);
        drop(imported);
        let Some(guid) = guid else {
            let _ = writeln!(err, "cannot find device '{device}' in pool '{pool_name}'");
            return 1;
        };
        let id = inject::register(HandlerSpec {
            pool: pool_name.clone(),
            target: Target::Device { guid },
            fault: request.error.unwrap_or(FaultKind::Nxio),
            iotype: request.iotype,
            freq_ppm: request.freq_ppm,
            seed,
        });
        if request.quiet {
            let _ = writeln!(out, "{id}");
        } else {
            let _ = write!(
                out,
                "Added handler {id} with the following properties:\n  pool: {pool_name}\n  vdev: {guid:x}\n"
            );
        }
        return 0;
    }
    // -t data: the operand was resolved to (dataset, object) by the caller.
    let Some(resolved) = request.operands[0].strip_prefix(RESOLVED) else {
        let _ = writeln!(err, "missing object");
        return 2;
    };
    let Some((dataset, object)) = resolved
        .split_once('\0')
        .and_then(|(d, o)| Some((d.to_string(), o.parse::<u64>().ok()?)))
    else {
        let _ = writeln!(err, "missing object");
        return 2;
    };
    let pool_name = dataset.split('/').next().unwrap_or_default().to_string();
    let mut imported = match pool::open_pool(&pool_name) {
        Ok(imported) => imported,
        Err(e) => {
            let _ = writeln!(err, "{}", e.message());
            return 1;
        }
    };
    let spa = &mut *imported.spa;
    let objset = match spa.lookup_dataset(&dataset) {
        Ok(Some(objset)) => objset,
        _ => {
            let _ = writeln!(err, "cannot open '{dataset}': dataset does not exist");
            return 1;
        }
    };
    // The object's inode number is its object number, except the root directory's.
    let blocks = spa
        .zpl_object_data_blocks(objset, object)
        .unwrap_or_default();
    let mut ranges = std::collections::BTreeMap::new();
    for bp in &blocks {
        inject::add_leaf_ranges(&spa.root, bp, &mut ranges);
    }
    drop(imported);
    let id = inject::register(HandlerSpec {
        pool: pool_name.clone(),
        target: Target::Data {
            objset,
            object,
            ranges,
        },
        fault: request.error.unwrap_or(FaultKind::Io),
        iotype: IoType::Read,
        freq_ppm: request.freq_ppm,
        seed,
    });
    if request.quiet {
        let _ = writeln!(out, "{id}");
    } else {
        let _ = write!(
            out,
            "Added handler {id} with the following properties:\n  pool: {pool_name}\nobjset: {objset}\nobject: {object}\n  type: 0\n level: 0\n range: all\n  dvas: 0x0\n"
        );
    }
    0
}

/// A leaf by guid (decimal or 0x hex, as strtoull base 0), path or name.
fn find_leaf(root: &zetta::vdev::Vdev, device: &str) -> Option<u64> {
    let number = if let Some(hex) = device.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else {
        device.parse::<u64>().ok()
    };
    root.leaves().into_iter().find_map(|leaf| {
        let name_matches = leaf.path == device
            || std::path::Path::new(&leaf.path)
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == device)
            || number == Some(leaf.guid.0);
        name_matches.then_some(leaf.guid.0)
    })
}

/// `zinject` alone: OpenZFS's tables (device handlers, then data handlers).
fn list(out: &mut dyn Write) -> i32 {
    let handlers = inject::handlers();
    let mut text = String::new();
    let mut count = 0;
    for h in handlers.iter() {
        let Target::Device { guid } = h.spec.target else {
            continue;
        };
        if count == 0 {
            text.push_str(&format!(
                "{:>3}  {:<15}  {:<16}  {:<5}  {:<10}  {:<9}\n",
                "ID", "POOL", "GUID", "TYPE", "ERROR", "FREQ"
            ));
            text.push_str("---  ---------------  ----------------  -----  ----------  ---------\n");
        }
        count += 1;
        let freq = if h.spec.freq_ppm == 0 {
            100.0
        } else {
            f64::from(h.spec.freq_ppm) / 10_000.0
        };
        text.push_str(&format!(
            "{:>3}  {:<15}  {:x}  {:<5}  {:<10}  {:>8.4}%\n",
            h.id,
            h.spec.pool,
            guid,
            h.spec.iotype.name(),
            h.spec.fault.name(),
            freq
        ));
    }
    let total = count;
    if count > 0 {
        text.push('\n');
    }
    count = 0;
    for h in handlers.iter() {
        let Target::Data { objset, object, .. } = &h.spec.target else {
            continue;
        };
        if count == 0 {
            text.push_str(&format!(
                "{:>3}  {:<15}  {:<6}  {:<6}  {:<8}  {:>3}  {:<4}  {:<15}\n",
                "ID", "POOL", "OBJSET", "OBJECT", "TYPE", "LVL", "DVAs", "RANGE"
            ));
            text.push_str(
                "---  ---------------  ------  ------  --------  ---  ----  ---------------\n",
            );
        }
        count += 1;
        text.push_str(&format!(
            "{:>3}  {:<15}  {:<6}  {:<6}  {:<8}  {:<3}  0x{:02x}  all\n",
            h.id, h.spec.pool, objset, object, "-", 0, 0
        ));
    }
    if count > 0 {
        text.push('\n');
    }
    if total + count == 0 {
        text.push_str("No handlers registered.\nRun 'zinject -h' for usage information.\n");
    }
    let _ = out.write_all(text.as_bytes());
    0
}
