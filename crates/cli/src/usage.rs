//! Usage texts of `zfs` as OpenZFS 2.3 prints them (`cmd/zfs/zfs_main.c`: `get_usage`,
//! `usage`), for the commands Zetta has, in OpenZFS's table order; `zpool`'s live beside
//! its commands (`zpool::COMMANDS`). The texts are OpenZFS's words exactly; the goldens
//! in `tests/golden/usage/` hold them too, and `tests/usage.rs` compares.
//!
//! OpenZFS prints a command's usage on a usage error (stderr, exit 2); `zfs help CMD`
//! opens the man page zfs-CMD(8); Zetta prints the usage on standard output instead
//! (exit 0), and ships the page itself for `man` (`man.rs`, `zetta install-links`). `zfs CMD -?` is an invalid option '?' (exit 2), as
//! in OpenZFS, whose commands all use getopt(3) with `opterr = 0`.

use zetta_zprop::zfs_prop::{PropAttr, ZfsProp};

/// OpenZFS's command table (`command_table`), Zetta's commands only; `None` is a blank
/// line of the general usage.
const ZFS_COMMANDS: &[Option<(&str, &str)>] = &[
    Some(("version", "\tversion [-j]\n")),
    None,
    Some(("create", "\tcreate [-Pnpuv] [-o property=value] ... <filesystem>\n\tcreate [-Pnpsv] [-b blocksize] [-o property=value] ... -V <size> <volume>\n")),
    Some(("destroy", "\tdestroy [-fnpRrv] <filesystem|volume>\n\tdestroy [-dnpRrv] <filesystem|volume>@<snap>[%<snap>][,...]\n\tdestroy <filesystem|volume>#<bookmark>\n")),
    None,
    Some(("snapshot", "\tsnapshot [-r] [-o property=value] ... <filesystem|volume>@<snap> ...\n")),
    Some(("rollback", "\trollback [-rRf] <snapshot>\n")),
    Some(("clone", "\tclone [-p] [-o property=value] ... <snapshot> <filesystem|volume>\n")),
    Some(("promote", "\tpromote <clone-filesystem>\n")),
    Some(("rename", "\trename [-f] <filesystem|volume|snapshot> <filesystem|volume|snapshot>\n\trename -p [-f] <filesystem|volume> <filesystem|volume>\n\trename -u [-f] <filesystem> <filesystem>\n\trename -r <snapshot> <snapshot>\n")),
    Some(("bookmark", "\tbookmark <snapshot|bookmark> <newbookmark>\n")),
    None,
    Some(("list", "\tlist [-Hp] [-j [--json-int]] [-r|-d max] [-o property[,...]] [-s property]...\n\t    [-S property]... [-t type[,...]] [filesystem|volume|snapshot] ...\n")),
    None,
    Some(("set", "\tset [-u] <property=value> ... <filesystem|volume|snapshot> ...\n")),
    Some(("get", "\tget [-rHp] [-j [--json-int]] [-d max] [-o \"all\" | field[,...]]\n\t    [-t type[,...]] [-s source[,...]]\n\t    <\"all\" | property[,...]> [filesystem|volume|snapshot|bookmark] ...\n")),
    Some(("inherit", "\tinherit [-rS] <property> <filesystem|volume|snapshot> ...\n")),
    Some(("upgrade", "\tupgrade [-v]\n\tupgrade [-r] [-V version] <-a | filesystem ...>\n")),
    None,
    Some(("userspace", "\tuserspace [-Hinp] [-o field[,...]] [-s field] ...\n\t    [-S field] ... [-t type[,...]] <filesystem|snapshot|path>\n")),
    Some(("groupspace", "\tgroupspace [-Hinp] [-o field[,...]] [-s field] ...\n\t    [-S field] ... [-t type[,...]] <filesystem|snapshot|path>\n")),
    Some(("projectspace", "\tprojectspace [-Hp] [-o field[,...]] [-s field] ... \n\t    [-S field] ... <filesystem|snapshot|path>\n")),
    None,
    Some(("mount", "\tmount [-j]\n\tmount [-flvO] [-o opts] <-a|-R filesystem|filesystem>\n")),
    Some(("unmount", "\tunmount [-fu] <-a | filesystem|mountpoint>\n")),
    None,
    Some(("send", "\tsend [-DLPbcehnpsVvw] [-i|-I snapshot]\n\t     [-R [-X dataset[,dataset]...]]     <snapshot>\n\tsend [-DnVvPLecw] [-i snapshot|bookmark] <filesystem|volume|snapshot>\n\tsend [-DnPpVvLec] [-i bookmark|snapshot] --redact <bookmark> <snapshot>\n\tsend [-nVvPe] -t <receive_resume_token>\n\tsend [-PnVv] --saved filesystem\n")),
    Some(("receive", "\treceive [-vMnsFhu] [-o <property>=<value>] ... [-x <property>] ...\n\t    <filesystem|volume|snapshot>\n\treceive [-vMnsFhu] [-o <property>=<value>] ... [-x <property>] ... \n\t    [-d | -e] <filesystem>\n\treceive -A <filesystem|volume>\n")),
    None,
    Some(("allow", "\tallow <filesystem|volume>\n\tallow [-ldug] <\"everyone\"|user|group>[,...] <perm|@setname>[,...]\n\t    <filesystem|volume>\n\tallow [-ld] -e <perm|@setname>[,...] <filesystem|volume>\n\tallow -c <perm|@setname>[,...] <filesystem|volume>\n\tallow -s @setname <perm|@setname>[,...] <filesystem|volume>\n")),
    None,
    Some(("unallow", "\tunallow [-rldug] <\"everyone\"|user|group>[,...]\n\t    [<perm|@setname>[,...]] <filesystem|volume>\n\tunallow [-rld] -e [<perm|@setname>[,...]] <filesystem|volume>\n\tunallow [-r] -c [<perm|@setname>[,...]] <filesystem|volume>\n\tunallow [-r] -s @setname [<perm|@setname>[,...]] <filesystem|volume>\n")),
    None,
    Some(("hold", "\thold [-r] <tag> <snapshot> ...\n")),
    Some(("holds", "\tholds [-rHp] <snapshot> ...\n")),
    Some(("release", "\trelease [-r] <tag> <snapshot> ...\n")),
    Some(("diff", "\tdiff [-FHth] <snapshot> [snapshot|filesystem]\n")),
    Some(("wait", "\twait [-t <activity>] <filesystem>\n")),
];

/// (command, synopsis) of every zfs subcommand Zetta has, in OpenZFS's table order.
pub fn zfs_command_synopses() -> Vec<(&'static str, &'static str)> {
    ZFS_COMMANDS.iter().flatten().copied().collect()
}

/// The synopsis of `command` (an alias as OpenZFS resolves it: snap, recv, umount).
pub fn zfs_synopsis(command: &str) -> Option<&'static str> {
    let name = match command {
        "snap" => "snapshot",
        "recv" => "receive",
        "umount" => "unmount",
        other => other,
    };
    ZFS_COMMANDS
        .iter()
        .flatten()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// What follows a usage without the property table.
const TRAILER: &str = "\nFor the property list, run: zfs set|get\n\nFor the delegated permission list, run: zfs allow|unallow\n\nFor further help on a command or topic, run: zfs help [<topic>]\n";

/// `usage()` with no current command: every command, then the trailer.
pub fn zfs_full_usage() -> String {
    let mut text =
        String::from("usage: zfs command args ...\nwhere 'command' is one of the following:\n\n");
    for row in ZFS_COMMANDS {
        match row {
            Some((_, synopsis)) => text.push_str(synopsis),
            None => text.push('\n'),
        }
    }
    text.push_str("\nEach dataset is of the form: pool/[dataset/]*dataset[@name]\n");
    text.push_str(TRAILER);
    text
}

/// `usage()` of one command: "usage:", its synopsis, then the property table (set, get,
/// inherit, list) or the trailer. `None` for a command Zetta does not have.
pub fn zfs_command_usage(command: &str) -> Option<String> {
    let synopsis = zfs_synopsis(command)?;
    let mut text = format!("usage:\n{synopsis}");
    if matches!(command, "set" | "get" | "inherit" | "list") {
        text.push_str(&property_table());
    } else {
        text.push_str(TRAILER);
    }
    Some(text)
}

/// The property table of `usage()` (`usage_prop_cb` over the visible properties, read-only
/// ones first, each group by name, as `zprop_iter` orders them).
fn property_table() -> String {
    let mut text = String::from("\nThe following properties are supported:\n");
    text.push_str(&format!(
        "\n\t{:<21} {}  {}   {}\n\n",
        "PROPERTY", "EDIT", "INHERIT", "VALUES"
    ));
    let mut props: Vec<&'static zetta_zprop::zfs_prop::PropDesc> = ZfsProp::ALL
        .iter()
        .map(|p| p.desc())
        .filter(|d| d.visible)
        .collect();
    props.sort_by(|a, b| {
        let a_ro = a.attr == PropAttr::ReadOnly;
        let b_ro = b.attr == PropAttr::ReadOnly;
        b_ro.cmp(&a_ro).then(a.name.cmp(b.name))
    });
    for desc in props {
        let readonly = matches!(
            desc.attr,
            PropAttr::ReadOnly | PropAttr::OneTime | PropAttr::OneTimeDefault
        );
        let inheritable = matches!(desc.attr, PropAttr::Inherit | PropAttr::OneTime);
        text.push_str(&format!(
            "\t{:<22} {}{}{}\n",
            desc.name,
            if readonly { " NO    " } else { "YES    " },
            if inheritable { "  YES   " } else { "   NO   " },
            if desc.values.is_empty() {
                "-"
            } else {
                desc.values
            }
        ));
    }
    for (name, edit) in [
        ("userused@...", false),
        ("groupused@...", false),
        ("projectused@...", false),
        ("userobjused@...", false),
        ("groupobjused@...", false),
        ("projectobjused@...", false),
        ("userquota@...", true),
        ("groupquota@...", true),
        ("projectquota@...", true),
        ("userobjquota@...", true),
        ("groupobjquota@...", true),
        ("projectobjquota@...", true),
        ("written@<snap>", false),
        ("written#<bookmark>", false),
    ] {
        text.push_str(&format!("\t{name:<22} "));
        text.push_str(if edit {
            "YES       NO   <size> | none\n"
        } else {
            " NO       NO   <size>\n"
        });
    }
    text.push_str("\nSizes are specified in bytes with standard units such as K, M, G, etc.\n");
    text.push_str(
        "\nUser-defined properties can be specified by using a name containing a colon (:).\n",
    );
    text.push_str("\nThe {user|group|project}[obj]{used|quota}@ properties must be appended with\na user|group|project specifier of one of these forms:\n    POSIX name      (eg: \"matt\")\n    POSIX id        (eg: \"126829\")\n    SMB name@domain (eg: \"matt@sun\")\n    SMB SID         (eg: \"S-1-234-567-89\")\n");
    text
}
