//! `zpool`: pool administration (OpenZFS `cmd/zpool/zpool_main.c`).
//!
//! Every subcommand is `fn(&[String], &mut Ctx) -> Result<(), CmdError>`; `run` maps the
//! result to OpenZFS's exit codes: `Fail` prints its message and exits 1, `Usage` prints
//! its message, then `usage:` and the subcommand's synopsis, and exits 2. Options are
//! parsed with a small getopt that, like GNU getopt, also accepts options after operands
//! (`zpool create tank /a -f`) and stops at `--`.
//!
//! Modules, one per group of subcommands: `cache` (which pools are imported), `pool`
//! (opening and committing an imported pool), `create` (create, add, destroy,
//! labelclear), `vdev_cmds` (attach, detach, replace, online, offline, clear, scrub),
//! `import` (import, export), `status`, `list` (list, iostat), `props` (get, set,
//! history).

pub mod cache;
mod create;
pub mod events;
mod import;
mod import_openzfs;
pub mod initialize;
pub mod json;
mod list;
pub mod pool;
mod props;
mod reguid;
mod split;
mod status;
mod status_json;
mod upgrade;
mod vdev_cmds;
mod wait;

use std::io::Write;

/// Where a command writes: its own two streams, never the process's.
pub struct Ctx<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

impl Ctx<'_> {
    pub fn print(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
    }

    pub fn warn(&mut self, text: &str) {
        let _ = self.err.write_all(text.as_bytes());
    }
}

/// How a subcommand failed.
#[derive(Debug)]
pub enum CmdError {
    /// A failed operation: the message (without final newline; empty when already
    /// printed) goes to stderr, exit 1.
    Fail(String),
    /// A usage error: the message, then the synopsis, exit 2.
    Usage(String),
}

impl CmdError {
    pub fn message(&self) -> String {
        match self {
            CmdError::Fail(m) | CmdError::Usage(m) => m.clone(),
        }
    }
}

pub type CmdResult = Result<(), CmdError>;

pub fn fail<T>(message: impl Into<String>) -> Result<T, CmdError> {
    Err(CmdError::Fail(message.into()))
}

pub fn usage<T>(message: impl Into<String>) -> Result<T, CmdError> {
    Err(CmdError::Usage(message.into()))
}

type Command = fn(&[String], &mut Ctx) -> CmdResult;

/// (name, implementation, synopsis) in OpenZFS's help order.
const COMMANDS: &[(&str, Command, &str)] = &[
    ("version", cmd_version, "\tversion [-j]\n"),
    ("create", create::cmd_create, "\tcreate [-fnd] [-o property=value] ... \n\t    [-O file-system-property=value] ... \n\t    [-m mountpoint] [-R root] <pool> <vdev> ...\n"),
    ("destroy", create::cmd_destroy, "\tdestroy [-f] <pool>\n"),
    ("add", create::cmd_add, "\tadd [-afgLnP] [-o property=value] <pool> <vdev> ...\n"),
    ("remove", create::cmd_remove, "\tremove [-npsw] <pool> <device> ...\n"),
    ("labelclear", create::cmd_labelclear, "\tlabelclear [-f] <vdev>\n"),
    ("list", list::cmd_list, "\tlist [-gHLpPv] [-o property[,...]] [-j [--json-int, --json-pool-key-guid]] ...\n\t    [-T d|u] [pool] [interval [count]]\n"),
    ("iostat", list::cmd_iostat, "\tiostat [[[-c [script1,script2,...][-lq]]|[-rw]] [-T d | u] [-ghHLpPvy]\n\t    [[pool ...]|[pool vdev ...]|[vdev ...]] [[-n] interval [count]]\n"),
    ("status", status::cmd_status, "\tstatus [--power] [-j [--json-int, --json-flat-vdevs, ...\n\t    --json-pool-key-guid]] [-c [script1,script2,...]] [-dDegiLpPstvx] ...\n\t    [-T d|u] [pool] [interval [count]]\n"),
    ("online", vdev_cmds::cmd_online, "\tonline [--power][-e] <pool> <device> ...\n"),
    ("offline", vdev_cmds::cmd_offline, "\toffline [--power]|[[-f][-t]] <pool> <device> ...\n"),
    ("clear", vdev_cmds::cmd_clear, "\tclear [[--power]|[-nF]] <pool> [device]\n"),
    ("attach", vdev_cmds::cmd_attach, "\tattach [-fsw] [-o property=value] <pool> <device> <new-device>\n"),
    ("detach", vdev_cmds::cmd_detach, "\tdetach <pool> <device>\n"),
    ("replace", vdev_cmds::cmd_replace, "\treplace [-fsw] [-o property=value] <pool> <device> [new-device]\n"),
    ("split", split::cmd_split, "\tsplit [-gLnPl] [-R altroot] [-o mntopts]\n\t    [-o property=value] <pool> <newpool> [<device> ...]\n"),
    ("initialize", initialize::cmd_initialize, "\tinitialize [-c | -s | -u] [-w] <pool> [<device> ...]\n"),
    ("scrub", vdev_cmds::cmd_scrub, "\tscrub [-e | -s | -p | -C] [-w] <pool> ...\n"),
    ("trim", initialize::cmd_trim, "\ttrim [-dw] [-r <rate>] [-c | -s] <pool> [<device> ...]\n"),
    ("import", import::cmd_import, "\timport [-d dir] [-D]\n\timport [-o mntopts] [-o property=value] ... \n\t    [-d dir | -c cachefile] [-D] [-l] [-f] [-m] [-N] [-R root] [-F [-n]] -a\n\timport [-o mntopts] [-o property=value] ... \n\t    [-d dir | -c cachefile] [-D] [-l] [-f] [-m] [-N] [-R root] [-F [-n]]\n\t    [--rewind-to-checkpoint] <pool | id> [newpool]\n"),
    ("export", import::cmd_export, "\texport [-af] <pool> ...\n"),
    ("upgrade", upgrade::cmd_upgrade, upgrade::SYNOPSIS),
    ("reguid", reguid::cmd_reguid, reguid::SYNOPSIS),
    ("history", props::cmd_history, "\thistory [-il] [<pool>] ...\n"),
    ("events", events::cmd_events, "\tevents [-vHf [pool] | -c]\n"),
    ("get", props::cmd_get, "\tget [-Hp] [-j [--json-int, --json-pool-key-guid]] ...\n\t    [-o \"all\" | field[,...]] <\"all\" | property[,...]> <pool> ...\n"),
    ("set", props::cmd_set, "\tset <property=value> <pool>\n\tset <vdev_property=value> <pool> <vdev>\n"),
    ("sync", props::cmd_sync, "\tsync [pool] ...\n"),
    ("wait", wait::cmd_wait, "\twait [-Hp] [-T d|u] [-t <activity>[,...]] <pool> [interval]\n"),
];

/// (command, synopsis) of every subcommand, in OpenZFS's help order (the man pages'
/// synopses, `man.rs`).
pub fn command_synopses() -> Vec<(&'static str, &'static str)> {
    COMMANDS.iter().map(|(n, _, s)| (*n, *s)).collect()
}

/// `zpool version [-j]` (`zpool_do_version`).
fn cmd_version(args: &[String], ctx: &mut Ctx) -> CmdResult {
    let parsed = getopt_long(args, "j", &[("json", OPTION_JSON)], Some("zpool"))?;
    if !parsed.operands.is_empty() {
        return usage("too many arguments");
    }
    if parsed.has(OPTION_JSON) {
        json::print(ctx, &json::version_document("zpool version"));
    } else {
        ctx.print(&format!("zetta {}\n", env!("CARGO_PKG_VERSION")));
    }
    Ok(())
}

fn print_full_usage(stream: &mut dyn Write) {
    let mut text =
        String::from("usage: zpool command args ...\nwhere 'command' is one of the following:\n\n");
    // OpenZFS separates groups of commands by a blank line.
    const GROUP_STARTS: &[&str] = &[
        "create",
        "add",
        "labelclear",
        "list",
        "online",
        "attach",
        "initialize",
        "import",
        "history",
        "get",
        "wait",
    ];
    for (name, _, synopsis) in COMMANDS {
        if GROUP_STARTS.contains(name) {
            text.push('\n');
        }
        text.push_str(synopsis);
    }
    text.push_str("\nFor further help on a command or topic, run: zpool help [<topic>]\n");
    let _ = stream.write_all(text.as_bytes());
}

/// A failure message as libzfs words it: Rust's `std::io::Error` prints strerror's words
/// followed by ` (os error N)`, libzfs prints the words alone.
pub fn plain_words(message: &str) -> String {
    let mut text = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(" (os error ") {
        let after = &rest[at + " (os error ".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            text.push_str(&rest[..at]);
            rest = &after[digits + 1..];
        } else {
            text.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
        }
    }
    text.push_str(rest);
    text
}

/// `zpool ARGS…`: runs one subcommand and returns the exit code.
pub fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let Some(name) = args.first() else {
        let _ = writeln!(err, "missing command");
        print_full_usage(err);
        return 2;
    };
    let name = name.as_str();
    // `zpool help CMD`: OpenZFS opens the man page zpool-CMD(8); Zetta prints the
    // command's usage (its pages, `man.rs`, are read with `man zpool-CMD` once
    // `zetta install-links` has put them on the man path; commands run in the daemon,
    // which has no terminal to run `man` on).
    if name == "help" {
        if let Some(topic) = args.get(1).filter(|t| t.as_str() != "zpool") {
            return match COMMANDS.iter().find(|(n, _, _)| n == topic) {
                Some((_, _, synopsis)) => {
                    let _ = write!(out, "usage:\n{synopsis}");
                    0
                }
                None => {
                    let _ = writeln!(err, "unrecognized command '{topic}'");
                    print_full_usage(err);
                    2
                }
            };
        }
    }
    if matches!(name, "-?" | "-h" | "--help" | "help") {
        print_full_usage(out);
        return 0;
    }
    if matches!(name, "-V" | "--version") {
        let _ = writeln!(out, "zetta {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    // `zpool freeze pool`: OpenZFS's hidden debugging command (no usage, no history),
    // which ZTS uses to leave a pool unclean at export.
    if name == "freeze" && args.len() == 2 {
        return match pool::open_pool(&args[1]).and_then(|mut imported| {
            imported
                .spa
                .freeze()
                .map_err(|e| CmdError::Fail(pool::spa_error_text(&e)))
        }) {
            Ok(()) => 0,
            Err(e) => {
                let _ = writeln!(err, "failed to freeze pool: {}", e.message());
                1
            }
        };
    }
    let Some((_, command, synopsis)) = COMMANDS.iter().find(|(n, _, _)| *n == name) else {
        let _ = writeln!(err, "unrecognized command '{name}'");
        print_full_usage(err);
        return 2;
    };
    let mut ctx = Ctx { out, err };
    match command(&args[1..], &mut ctx) {
        Ok(()) => 0,
        Err(CmdError::Fail(message)) => {
            if !message.is_empty() {
                ctx.warn(&format!("{}\n", plain_words(&message)));
            }
            1
        }
        Err(CmdError::Usage(message)) => {
            if !message.is_empty() {
                ctx.warn(&format!("{}\n", plain_words(&message)));
            }
            ctx.warn(&format!("usage:\n{synopsis}"));
            2
        }
    }
}

/// Options and operands of one command line.
#[derive(Debug, Default)]
pub struct Parsed {
    pub options: Vec<(char, Option<String>)>,
    pub operands: Vec<String>,
}

impl Parsed {
    pub fn has(&self, flag: char) -> bool {
        self.options.iter().any(|(f, _)| *f == flag)
    }

    /// Every argument given to a repeatable option, in order.
    pub fn values(&self, flag: char) -> Vec<String> {
        self.options
            .iter()
            .filter(|(f, _)| *f == flag)
            .filter_map(|(_, v)| v.clone())
            .collect()
    }

    pub fn last(&self, flag: char) -> Option<String> {
        self.values(flag).pop()
    }
}

thread_local! {
    /// Whether getopt stops at the first operand, as glibc's does when `POSIXLY_CORRECT`
    /// is in the environment: `Some` for a command the daemon serves (the client's
    /// environment, carried in the request), `None` in-process (this process's own).
    static POSIXLY_CORRECT: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Sets, for the commands this thread runs next, whether getopt follows POSIX's order
/// (`None`: as this process's environment says).
pub fn set_posixly_correct(on: Option<bool>) {
    POSIXLY_CORRECT.with(|cell| cell.set(on));
}

fn posixly_correct() -> bool {
    POSIXLY_CORRECT
        .with(|cell| cell.get())
        .unwrap_or_else(|| std::env::var_os("POSIXLY_CORRECT").is_some())
}

/// getopt(3) with GNU argument permutation (none under `POSIXLY_CORRECT`: the first
/// operand ends the options, and every word after it is an operand). `spec` lists the
/// flags; a flag followed by `:` takes an argument (attached, `-ofoo`, or the next word).
pub fn getopt(args: &[String], spec: &str) -> Result<Parsed, CmdError> {
    getopt_long(args, spec, &[], None)
}

/// `--json`, recorded as `-j` (OpenZFS maps the long name to the short flag).
pub const OPTION_JSON: char = 'j';
/// `--json-int` (`ZPOOL_OPTION_JSON_NUMS_AS_INT`, `ZFS_OPTION_JSON_NUMS_AS_INT`).
pub const OPTION_JSON_INT: char = '\u{f001}';
/// `--json-pool-key-guid` (`ZPOOL_OPTION_POOL_KEY_GUID`).
pub const OPTION_JSON_POOL_KEY_GUID: char = '\u{f002}';
/// `--json-flat-vdevs` (`ZPOOL_OPTION_JSON_FLAT_VDEVS`).
pub const OPTION_JSON_FLAT_VDEVS: char = '\u{f003}';

/// The long options of `zpool list` and `zpool get`.
pub const LONG_JSON_POOL: &[(&str, char)] = &[
    ("json", OPTION_JSON),
    ("json-int", OPTION_JSON_INT),
    ("json-pool-key-guid", OPTION_JSON_POOL_KEY_GUID),
];

/// getopt_long(3): `getopt` plus `--name` options (none takes an argument). As glibc,
/// a unique prefix names its option (`--json-i`); an unknown, ambiguous or
/// argument-carrying long option is `?` with `optopt` 0, which OpenZFS prints as
/// `invalid option '\0'` (a NUL byte between the quotes). `gnu_program` is the program
/// name when the command's option string does not start with `:`, so glibc first
/// prints its own `PROGRAM: unrecognized option '--name'` line (zpool status does).
pub fn getopt_long(
    args: &[String],
    spec: &str,
    longs: &[(&str, char)],
    gnu_program: Option<&str>,
) -> Result<Parsed, CmdError> {
    let long_word = |word: &str| -> Result<char, CmdError> {
        let name = &word[2..];
        let unknown = |glibc: String| {
            let mut message = String::new();
            if let Some(program) = gnu_program {
                message.push_str(&format!("{program}: {glibc}\n"));
            }
            message.push_str("invalid option '\0'");
            CmdError::Usage(message)
        };
        if let Some((given, _)) = name.split_once('=') {
            return match longs.iter().find(|(n, _)| *n == given) {
                Some(_) => Err(unknown(format!(
                    "option '--{given}' doesn't allow an argument"
                ))),
                None => Err(unknown(format!("unrecognized option '{word}'"))),
            };
        }
        if let Some((_, flag)) = longs.iter().find(|(n, _)| *n == name) {
            return Ok(*flag);
        }
        let matches: Vec<&(&str, char)> =
            longs.iter().filter(|(n, _)| n.starts_with(name)).collect();
        match matches.as_slice() {
            [(_, flag)] => Ok(*flag),
            [] => Err(unknown(format!("unrecognized option '{word}'"))),
            several => {
                let names: Vec<String> = several.iter().map(|(n, _)| format!("'--{n}'")).collect();
                Err(unknown(format!(
                    "option '{word}' is ambiguous; possibilities: {}",
                    names.join(" ")
                )))
            }
        }
    };
    let takes_argument = |flag: char| -> Option<bool> {
        let mut chars = spec.chars().peekable();
        while let Some(c) = chars.next() {
            let with_arg = chars.peek() == Some(&':');
            if with_arg {
                chars.next();
            }
            if c == flag {
                return Some(with_arg);
            }
        }
        None
    };
    let mut parsed = Parsed::default();
    let in_order = posixly_correct();
    let mut index = 0;
    while index < args.len() {
        let word = &args[index];
        index += 1;
        if word == "--" {
            parsed.operands.extend(args[index..].iter().cloned());
            break;
        }
        if !word.starts_with('-') || word.len() == 1 {
            parsed.operands.push(word.clone());
            if in_order {
                parsed.operands.extend(args[index..].iter().cloned());
                break;
            }
            continue;
        }
        if word.starts_with("--") {
            if longs.is_empty() {
                return usage(format!("invalid option '{word}'"));
            }
            parsed.options.push((long_word(word)?, None));
            continue;
        }
        let flags: Vec<char> = word.chars().skip(1).collect();
        let mut position = 0;
        while position < flags.len() {
            let flag = flags[position];
            position += 1;
            match takes_argument(flag) {
                None => return usage(format!("invalid option '{flag}'")),
                Some(false) => parsed.options.push((flag, None)),
                Some(true) => {
                    let attached: String = flags[position..].iter().collect();
                    let value = if !attached.is_empty() {
                        attached
                    } else if let Some(next) = args.get(index) {
                        index += 1;
                        next.clone()
                    } else {
                        return usage(format!("missing argument for '{flag}' option"));
                    };
                    parsed.options.push((flag, Some(value)));
                    position = flags.len();
                }
            }
        }
    }
    Ok(parsed)
}

/// Splits `prop=value`; `None` when there is no `=`.
pub fn split_prop(word: &str) -> Option<(&str, &str)> {
    word.split_once('=')
}

/// `-T u|d` of status, list and iostat (`get_timestamp_arg`): any other letter is a bare
/// usage error, as in OpenZFS.
pub fn timestamp_format(parsed: &Parsed) -> Result<Option<char>, CmdError> {
    match parsed.last('T').as_deref() {
        None => Ok(None),
        Some("u") => Ok(Some('u')),
        Some("d") => Ok(Some('d')),
        Some(_) => usage(""),
    }
}

/// `print_timestamp`: epoch seconds (`u`) or the C locale's date(1) format (`d`), one line.
pub fn timestamp_line(format: Option<char>) -> String {
    match timestamp_text(format) {
        Some(text) if !text.is_empty() => format!("{text}\n"),
        _ => String::new(),
    }
}

/// `get_timestamp`: the `-T u|d` stamp without its newline (JSON's `"time"`).
pub fn timestamp_text(format: Option<char>) -> Option<String> {
    let format = format?;
    let now_secs = now_epoch_secs();
    if format == 'u' {
        return Some(now_secs.to_string());
    }
    Some(zetta_zutil::nicenum::date_text(now_secs))
}

/// `time(NULL)`.
pub fn now_epoch_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Parses trailing `interval [count]` operands (status, iostat, list).
pub fn interval_count(operands: &mut Vec<String>) -> Result<(Option<f64>, Option<u64>), CmdError> {
    let is_number = |w: &String| w.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0);
    let mut interval = None;
    let mut count = None;
    if operands.last().is_some_and(is_number) {
        let last = operands.pop().unwrap_or_default();
        if operands.last().is_some_and(is_number) {
            let first = operands.pop().unwrap_or_default();
            interval = first.parse::<f64>().ok();
            count = last.parse::<f64>().ok().map(|c| c as u64);
        } else {
            interval = last.parse::<f64>().ok();
        }
    }
    if interval == Some(0.0) {
        return usage("interval cannot be zero");
    }
    Ok((interval, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    /// OpenZFS relies on GNU getopt: options may follow operands and attach their value.
    #[test]
    fn getopt_permutes_and_attaches() {
        set_posixly_correct(Some(false));
        let parsed = getopt(
            &words("tank -f /a -oashift=12 -O compression=on /b"),
            "fno:O:",
        )
        .unwrap();
        assert_eq!(parsed.operands, words("tank /a /b"));
        assert!(parsed.has('f'));
        assert_eq!(parsed.values('o'), vec!["ashift=12".to_string()]);
        assert_eq!(parsed.values('O'), vec!["compression=on".to_string()]);
    }

    // Why: ZTS's zfs_get_006_neg (issue 18) runs `zfs get all -r` under POSIXLY_CORRECT
    // and expects a refusal: glibc's getopt then takes `-r` as an operand (a dataset name).
    #[test]
    fn getopt_stops_at_the_first_operand_under_posixly_correct() {
        set_posixly_correct(Some(true));
        let parsed = getopt(&words("-H all -r tank"), "Hr").unwrap();
        set_posixly_correct(None);
        assert!(parsed.has('H'));
        assert!(!parsed.has('r'));
        assert_eq!(parsed.operands, words("all -r tank"));
    }

    /// Unknown flags and missing values are usage errors with OpenZFS's words.
    #[test]
    fn getopt_errors_are_usage_errors() {
        match getopt(&words("-x tank"), "f") {
            Err(CmdError::Usage(m)) => assert_eq!(m, "invalid option 'x'"),
            other => panic!("{other:?}"),
        }
        match getopt(&words("tank -o"), "o:") {
            Err(CmdError::Usage(m)) => assert_eq!(m, "missing argument for 'o' option"),
            other => panic!("{other:?}"),
        }
    }

    /// Rust's " (os error N)" never reaches users (issue 21 item 21).
    #[test]
    fn plain_words_drop_os_error_suffixes() {
        assert_eq!(
            plain_words("cannot open '/x': Is a directory (os error 21)"),
            "cannot open '/x': Is a directory"
        );
        assert_eq!(
            plain_words("a (os error 13) and b (os error x)"),
            "a and b (os error x)"
        );
    }

    /// `zpool iostat tank 1 3` takes the two trailing numbers as interval and count.
    #[test]
    fn interval_and_count_are_taken_from_the_end() {
        let mut operands = words("tank 1 3");
        assert_eq!(interval_count(&mut operands).unwrap(), (Some(1.0), Some(3)));
        assert_eq!(operands, words("tank"));
    }
}
