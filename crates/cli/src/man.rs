//! The manual pages: `zpool(8)`, `zfs(8)`, `zetta(8)` and one page per subcommand
//! (`zpool-status(8)`, `zfs-send(8)`, …), in OpenZFS's section layout (all in section 8,
//! named `front-command`), rendered in roff (`man(7)` macros).
//!
//! Counterpart: OpenZFS's `man/man8/*.8`, whose text is not copied: each page here is
//! written for Zetta. Only the synopsis is shared, and it is not typed twice: it comes
//! from the usage texts the commands print (`usage.rs` for zfs, `zpool::COMMANDS`), which
//! are already OpenZFS's. Each page ends with a ZETTA section saying what Zetta refuses or
//! does differently, so a page never promises more than the command does.
//!
//! Where the pages live: `contrib/man/man8/` in the checkout (so `man -l` works there),
//! and wherever `zetta install-links` puts them (`install.rs`). The checked-in files are
//! this module's output: `tests/man_pages.rs` fails when they differ (regenerate with
//! `ZETTA_BLESS=1 cargo test --release -p zetta-cli --test man_pages`), and fails when a
//! command of the usage tables has no description here.

/// The date and source on every page's title line (fixed, so the files are reproducible).
const PAGE_DATE: &str = "2026-11-28";
const PAGE_SOURCE: &str = "Zetta";

/// (front, command, what it does in a line, description, Zetta's differences).
/// The description and the differences are roff body text: paragraphs separated by
/// blank lines.
type Description = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

const DESCRIPTIONS: &[Description] = &[
    ("zpool", "version", "print the version of the tools",
     "Prints the version of the Zetta binary that serves as zpool. With -j the answer is one line of JSON in OpenZFS 2.3's schema.",
     "There is no kernel module: the one version printed is the binary's."),
    ("zpool", "create", "make a new pool from vdevs",
     "Creates a pool named pool on the vdevs given: plain files (absolute paths of at least 64 MiB) or block devices, alone, as mirror groups or as raidz1, raidz2 and raidz3 groups, with optional log devices after the word log. Pool properties are set with -o, properties of the pool's root file system with -O, its mountpoint with -m and an alternate root with -R. With -n nothing is written; the layout that would be created is printed. With -d no feature is enabled.\n\nThe pool is imported at once and its root file system mounted through FUSE unless canmount says otherwise.",
     "Hot spares (after the word spare) are kept and labelled as OpenZFS does. Cache, special and dedup vdevs are refused (invalid vdev specification). The -t option (temporary name) is refused as an invalid option."),
    ("zpool", "destroy", "destroy a pool and everything in it",
     "Unmounts every file system of the pool and marks its devices as belonging to a destroyed pool. The data are not overwritten, but the pool cannot be imported by name any more. With -f file systems that are busy are unmounted by force.",
     ""),
    ("zpool", "add", "add vdevs to a pool",
     "Grows the pool by the vdevs given, with the same specification as zpool create. New writes are spread over all top-level vdevs by free space. With -n the resulting layout is printed and nothing changes; with -f a mismatched replication level is accepted.",
     "The -a, -g and -L options are refused. Hot spares are added; cache, special and dedup vdevs are refused."),
    ("zpool", "remove", "remove a device from a pool",
     "Removes a log device, an available hot spare or a cache device from the pool. A log's records are no longer needed once the transaction groups they cover have been synced.",
     "Only log devices, spares that are not in use and cache devices can be removed; removing a top-level data vdev (device evacuation) is refused. The -n, -p, -s and -w options are refused."),
    ("zpool", "labelclear", "erase the ZFS labels of a device",
     "Overwrites the four labels of a device or file that is not part of an imported pool, so that no import finds it again. With -f a device whose label says it belongs to an exported or foreign pool is cleared anyway.",
     ""),
    ("zpool", "list", "list pools with their size and health",
     "Prints one line per pool with its size, allocated and free space, fragmentation, capacity, deduplication ratio, health and alternate root; -v adds a line per vdev. -o chooses the columns, -H prints them for scripts (tabs, no header), -p prints exact numbers and -j prints JSON. With an interval the list is printed again every interval seconds, count times.",
     "The -g and -L options are refused."),
    ("zpool", "iostat", "show I/O statistics of pools and vdevs",
     "Prints the operations and bandwidth of each pool (and with -v each vdev): the first report averages since the pool was imported, later ones cover each interval. -l adds average latencies, -q the queue columns, -w prints latency histograms and -r request-size histograms; -H and -p are for scripts, -y skips the report since import, -T adds a time stamp.",
     "Zetta has no I/O queue in front of a device: a total wait is the disk wait, queue waits are empty (- in the -l columns), nothing is ever pending in the -q columns and the only active count is of outstanding reads (syncq_read). In -r every read is counted as a sync read and every write as an async write, since a device request does not carry its priority. The -c, -g, -L and -n options and vdev operands are refused."),
    ("zpool", "status", "show the health of pools and their devices",
     "Prints each pool's state, the progress of a running scrub or resilver, the vdev tree with read, write and checksum error counts, and a summary of data errors; -v lists the files with permanent errors, -x shows only pools that are not healthy, -P prints full device paths and -j prints JSON. With an interval the status is printed again every interval seconds.",
     "The -c, -D, -d, -e, -g, -i, -L, -s, -t and --power options are refused."),
    ("zpool", "online", "bring a device back into use",
     "Returns an offline or faulted device to service; if it missed writes while it was away, a resilver copies them to it.",
     "The --power option is refused."),
    ("zpool", "offline", "take a device out of use",
     "Stops using a device of a redundant vdev; the pool runs degraded until it is brought online again. The state survives export and import.",
     "Temporary offlining (-t), forced faulting (-f) and --power are refused."),
    ("zpool", "clear", "reset error counts",
     "Sets the read, write and checksum error counts of the pool's devices (or of the one device named) back to zero and clears a fault caused by too many errors.",
     "The -F, -n and -X recovery options and --power are refused."),
    ("zpool", "attach", "add a side to a mirror",
     "Attaches new-device to the existing device, turning a single-device vdev into a mirror or adding one more side to a mirror. The new side is resilvered from the others before it counts as redundancy.",
     "Sequential rebuild (-s) and -o are refused."),
    ("zpool", "detach", "remove a side from a mirror",
     "Detaches a device from a mirror. The last side of a mirror cannot be detached.",
     ""),
    ("zpool", "replace", "replace a device by another",
     "Resilvers the contents of device onto new-device and then detaches the old one. Without new-device the device is replaced by itself, after the disk at that path has been swapped. When new-device is one of the pool's hot spares, it stands in for device (a spare vdev, INUSE) until zpool detach of either: detaching device keeps the spare for good, detaching the spare returns it to the spares list.",
     "Sequential rebuild (-s) and -o are refused."),
    ("zpool", "initialize", "write to unallocated regions of storage pool",
     "Writes the pattern zfs_initialize_value (0xdeadbeefdeadbeee) over the free space of each named leaf device, or of every leaf when none is named, in the background, one chunk at a time; allocated blocks and space freed too recently to reuse are never touched. -s suspends and a later zpool initialize resumes where it stopped (also after export and import), -c cancels, -u forgets a finished or canceled initialization, -w waits until it ends. zpool status -i shows the progress.",
     ""),
    ("zpool", "scrub", "verify every block of a pool",
     "Reads every allocated block of the pool and checks its checksum; damaged copies are rewritten from a good one when the vdev is redundant. -s stops a scrub, -p pauses it, and a paused scrub resumes when zpool scrub is run again; -w waits until the scrub ends.",
     "Error scrubs (-e) and -C are refused."),
    ("zpool", "trim", "initiate TRIM of free space in ZFS storage pool",
     "Discards the free space of each named leaf device, or of every leaf when none is named, in the background: a hole is punched in a file vdev, a block device gets BLKDISCARD. -r limits the rate in bytes per second, -s suspends and a later zpool trim resumes, -c cancels, -w waits until it ends. zpool status -t shows the progress, and (trim unsupported) for a device that cannot discard.",
     "Secure TRIM (-d) is refused as by a device without it. The autotrim property is kept but freed space is not yet trimmed automatically."),
    ("zpool", "import", "find and import pools",
     "Without a pool name lists the pools that can be imported from the devices found in the directories given with -d (or the default places). With a name or numeric id imports that pool, optionally under a new name, and mounts its file systems unless -N is given. -D looks for destroyed pools. -a imports every pool found, -f imports a pool another system had in use, -R sets an alternate root and -o sets properties for the import (readonly=on among them).",
     "Zetta imports OpenZFS pools whose features it knows; pools with unknown active read features are refused, unknown write features import read-only, as OpenZFS does. The -c, -F, -l, -m, -n, -s, -T and -X options and --rewind-to-checkpoint are refused."),
    ("zpool", "export", "release a pool",
     "Unmounts the pool's file systems, writes its last transaction group and releases its devices so another system (or another Zetta) can import it. -f unmounts busy file systems by force; -a exports every pool.",
     "The -F option is refused."),
    ("zpool", "upgrade", "enable the features of this version",
     "Without arguments lists pools that do not have every feature this version supports; with -v lists those features. With a pool name (or -a) enables all features on the pool, after which older software may not import it.",
     "Zetta reads legacy (pre-5000) pools but does not write them: -V with a version below 5000 is refused."),
    ("zpool", "split", "split a pool of mirrors into two pools",
     "Takes one device from every mirror of the pool (the last one, or the one named after the new pool's name) to make a new pool with a new guid and the same data as of the split. Without -R the new pool is left exported; with -R it is imported under that alternate root (-o mount options then apply). -o sets properties of the new pool, -n prints the layout it would have (-g, -L and -P choose how devices are named).",
     "Every top-level data vdev must be a mirror; intent log devices, cache devices and spares stay with the original pool. -l has no keys to load (Zetta has no encryption)."),
    ("zpool", "reguid", "give a pool a new guid",
     "Changes the pool's unique identifier to a new random one, or to the decimal guid given with -g, so that a copy of its devices can be imported beside the original. The new guid is written to every label with the next transaction group.",
     "A guid of 0, or one another imported pool has, is refused."),
    ("zpool", "history", "show the commands run on a pool",
     "Prints the commands that changed the pool, with their dates, as the pool records them on disk.",
     ""),
    ("zpool", "events", "show the pool event log",
     "Prints the events the daemon has recorded: scrub and resilver starts and ends, checksum and I/O errors, device state changes, configuration updates, history entries, import and export. -v prints every field of each event, -H prints for scripts, -f keeps printing new events as they come, and -c clears the log. The log survives daemon restarts.\n\nThe daemon also runs the executable zedlets in /etc/zetta/zed.d for each event, with the event's fields in ZEVENT_* environment variables, as ZED does.",
     ""),
    ("zpool", "get", "show pool properties",
     "Prints the properties named (or all) of the pools given, as NAME, PROPERTY, VALUE and SOURCE columns; -o chooses the columns, -H and -p are for scripts and -j prints JSON. Feature states are properties named feature@name.",
     ""),
    ("zpool", "set", "change a pool property",
     "Sets one pool property, such as comment, autoreplace, failmode or a feature@name to enabled.",
     "Vdev properties (the second form) are refused. Properties Zetta does not honour, such as cachefile, are refused with OpenZFS's words."),
    ("zpool", "sync", "write out pending changes",
     "Forces the open transaction group of each pool given (or of every pool) to be written and committed before the command returns.",
     ""),
    ("zpool", "wait", "wait for background activity to end",
     "Waits until the activities named with -t (scrub, resilver, replace, remove, initialize, trim, free; all of them without -t) have ended on the pool. With an interval it prints the remaining amount every interval seconds; -H and -p are for scripts and -T adds a time stamp.",
     "Zetta has no checkpoints, no asynchronous frees, no initialize or trim and no asynchronous device removal: waiting for discard, free, initialize, trim or remove ends at once, as waiting for an activity that is not running does. Resilver and replace run inside the command that started them."),
    ("zfs", "version", "print the version of the tools",
     "Prints the version of the Zetta binary that serves as zfs; -j prints JSON.",
     ""),
    ("zfs", "create", "create a file system or a volume",
     "Creates a file system, mounted at its mountpoint through FUSE, or with -V a volume of the given size, served as a block device. -o sets properties, -p creates missing parents, -n and -v show what would be created and -P prints it for scripts; -s makes a sparse volume and -b sets its block size.",
     "The -P, -n and -v options are refused. Encryption properties are refused with OpenZFS's words for a pool without the encryption feature."),
    ("zfs", "destroy", "destroy datasets, snapshots or bookmarks",
     "Destroys a file system or volume, a list or range of snapshots (fs@a%c), or a bookmark. -r also destroys descendants, -R also dependents such as clones, -f unmounts by force, -n and -v show what would be destroyed and -p prints it for scripts.",
     "Deferred destroy (-d) is refused."),
    ("zfs", "snapshot", "take snapshots",
     "Takes a read-only snapshot of each dataset named as dataset@name, all in the same transaction group; -r includes every descendant. Snapshots appear under the .zfs/snapshot directory of a mounted file system.",
     ""),
    ("zfs", "rollback", "go back to a snapshot",
     "Returns a dataset to the state of its most recent snapshot, or with -r to an older one after destroying the snapshots in between; -R also destroys their clones and -f unmounts by force.",
     ""),
    ("zfs", "clone", "make a writable copy of a snapshot",
     "Creates a file system or volume whose initial contents are those of the snapshot; it shares the snapshot's blocks until either is written. -p creates missing parents and -o sets properties.",
     ""),
    ("zfs", "promote", "make a clone independent of its origin",
     "Swaps the roles of a clone and the file system it was cloned from, so that the origin can be destroyed while the clone lives on.",
     ""),
    ("zfs", "rename", "rename datasets or snapshots",
     "Renames a dataset (moving it within its pool) or a snapshot; -p creates missing parents, -r renames a snapshot in every descendant and -f unmounts by force.",
     "The -n and -u options are refused."),
    ("zfs", "bookmark", "mark a snapshot for incremental sends",
     "Creates a bookmark (dataset#name) of a snapshot or a copy of another bookmark. A bookmark takes no space and can serve as the source of an incremental send after its snapshot is gone.",
     ""),
    ("zfs", "list", "list datasets",
     "Prints datasets with their space use and mountpoint, file systems and volumes by default, snapshots with -t snapshot or all. -r and -d recurse, -o chooses the columns, -s and -S sort, -H and -p are for scripts and -j prints JSON.",
     ""),
    ("zfs", "set", "change dataset properties",
     "Sets properties, name=value, on the datasets given. Inheritable properties pass on to descendants that do not set them themselves. User properties have a colon in their name.",
     "The -u option is refused. Properties that Zetta cannot honour (encryption among them) are refused with OpenZFS's words."),
    ("zfs", "get", "show dataset properties",
     "Prints properties of datasets as NAME, PROPERTY, VALUE and SOURCE columns. -r and -d recurse, -o chooses the columns, -s filters by source, -t by type, -H and -p are for scripts and -j prints JSON.",
     ""),
    ("zfs", "inherit", "remove a local property setting",
     "Clears the property set on the datasets given so that they take the value of their parent again; -r applies to descendants and -S reverts to the received value.",
     ""),
    ("zfs", "upgrade", "show or raise file system versions",
     "Without arguments lists the file systems whose ZPL version is below the current one (5, system attributes); -v lists the versions. With file systems (-r for their descendants) or -a, raises them to the current version or the one given with -V.",
     "Zetta writes ZPL 5 file systems (ZPL 4 in pools below version 24) and reads ZPL 4 ones; raising a ZPL 4 file system to 5 is refused, as are versions 1 to 3."),
    ("zfs", "mount", "mount file systems",
     "Without arguments (or with -j) lists the mounted file systems. Otherwise mounts the file system named, or every one with -a, at its mountpoint through FUSE; -O mounts over a non-empty directory and -o gives temporary mount options.",
     "The -f, -l, -v and -R options are refused. Mounts use FUSE; /etc/fuse.conf decides whether other users may enter them."),
    ("zfs", "unmount", "unmount file systems",
     "Unmounts a file system, given by name or mountpoint, or every one with -a; -f unmounts even when it is busy.",
     "The -u option is refused."),
    ("zfs", "send", "write a snapshot as a stream",
     "Writes an OpenZFS send stream of the snapshot to standard output: full, or with -i or -I incremental from an earlier snapshot or bookmark, or with -R the whole tree with its properties and snapshots. -L, -e, -c and -w keep large blocks, embedded data, compression and raw blocks as they are, -p includes properties, -n and -v describe the stream, -P prints that for scripts and -t resumes an interrupted send from its token.",
     "The streams are OpenZFS's and are received by OpenZFS. The -b and -s options, -X, redacted sends (--redact) and --saved are refused."),
    ("zfs", "receive", "create a snapshot from a stream",
     "Reads a send stream from standard input and creates the snapshot it carries, with its file system if needed. -F rolls the target back first, -d and -e derive the target's name from the stream's, -o and -x override or exclude properties, -u leaves it unmounted, -s keeps a partial receive resumable, -A abandons one, -n only checks and -v reports.",
     "The -c, -C and -M options are refused."),
    ("zfs", "allow", "delegate ZFS administration to users and groups",
     "With only a dataset, prints the permissions delegated on it and on its ancestors. Otherwise gives users (-u), groups (-g) or everyone (-e) permissions or @sets on a file system: locally (-l), on its descendants (-d), or both (the default); -c gives the permissions a creator gets on what it creates and -s defines a permission set. A user who is not root then runs what was delegated: the zetta daemon checks every command against the pool's delegations as OpenZFS's kernel does.",
     "Delegations are stored in the pool as OpenZFS stores them. A delegated mount is made by the daemon through FUSE and belongs to the daemon's user; -a with mount or unmount stays root's."),
    ("zfs", "unallow", "remove delegated permissions",
     "Takes back permissions given by zfs allow, with the same options; without permissions, everything given to that user, group or everyone; -r also on the file system's children.",
     ""),
    ("zfs", "hold", "keep a snapshot from being destroyed",
     "Puts a named hold on snapshots, and with -r on the same snapshot of descendants. A held snapshot cannot be destroyed until every hold is released.",
     ""),
    ("zfs", "holds", "list the holds on snapshots",
     "Prints the holds of each snapshot with their tags and times; -r includes descendants, -H and -p are for scripts.",
     ""),
    ("zfs", "release", "remove a hold",
     "Releases the hold with the given tag from snapshots, and with -r from the same snapshot of descendants.",
     ""),
    ("zfs", "diff", "show what changed between snapshots",
     "Lists the files created, removed, modified or renamed between a snapshot and a later snapshot or the live file system. -F adds the file type, -H prints for scripts, -t puts each file's change time first and -h leaves names unescaped (otherwise spaces, backslashes and non-ASCII bytes are written as octal escapes).",
     ""),
    ("zfs", "wait", "wait for background activity",
     "Waits until the delete queue of the file system is empty: every file removed while still open has been closed and its space freed. -t deleteq names that activity, the only one.",
     ""),
    ("zfs", "userspace", "show space used and quotas per user",
     "Lists, for a file system or snapshot, the space and quota of each user that owns files in it or has a quota: TYPE, NAME, USED, QUOTA, OBJUSED and OBJQUOTA by default (-o picks the fields). -n prints numeric ids, -H prints for scripts, -p exact numbers; -s and -S sort by a field, -t chooses posixuser, posixgroup or all. The figures are those of the last committed transaction group. Quotas are set with zfs set userquota@user=size; a user at or over its quota gets EDQUOT (Disk quota exceeded) when it writes or creates a file.",
     "Names are looked up in /etc/passwd and /etc/group; SMB identities and -i have no effect. Object counts (OBJUSED) are kept on datasets with userobj_accounting active (every filesystem created while the feature is enabled), and only there can userobjquota@ and groupobjquota@ be set (elsewhere they are refused: the pool and dataset must be upgraded). The operand must be a dataset name, not a path."),
    ("zfs", "groupspace", "show space used and quotas per group",
     "As zfs userspace, for the groups that own files: groupquota@group sets a group's quota.",
     "As zfs userspace."),
    ("zfs", "projectspace", "show space used and quotas per project",
     "As zfs userspace, for projects.",
     "Zetta does not enable project_quota on its pools: the listing is empty unless the dataset was written by OpenZFS with projects."),
];

/// One page: its file name (`zpool-status.8`) and its roff text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManPage {
    pub file_name: String,
    pub text: String,
}

/// The subcommands of `front` that have usage text, in their table's order.
pub fn commands(front: &str) -> Vec<(&'static str, &'static str)> {
    match front {
        "zpool" => crate::zpool::command_synopses(),
        _ => crate::usage::zfs_command_synopses(),
    }
}

/// The description of `front command`, if there is one.
fn description(front: &str, command: &str) -> Option<&'static Description> {
    DESCRIPTIONS
        .iter()
        .find(|(f, c, _, _, _)| *f == front && *c == command)
}

/// Escapes text for roff: backslashes, and a leading `.` or `'` that would read as a
/// request. Hyphens of options are left as they are (`-` renders as a hyphen-minus in
/// groff's man macros when written as `\-`; we write `\-` for every `-`).
fn roff_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            _ => out.push(c),
        }
    }
    if out.starts_with('.') || out.starts_with('\'') {
        out.insert_str(0, "\\&");
    }
    out
}

/// Body text (paragraphs separated by blank lines) as roff paragraphs.
fn paragraphs(text: &str) -> String {
    let mut out = String::new();
    for (index, paragraph) in text.split("\n\n").enumerate() {
        if index > 0 {
            out.push_str(".PP\n");
        }
        out.push_str(&roff_escape(paragraph.trim()));
        out.push('\n');
    }
    out
}

fn header(name: &str, summary: &str) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        ".\\\" {name}(8): generated by crates/cli/src/man.rs; do not edit.\n"
    ));
    out.push_str(&format!(
        ".TH \"{}\" 8 \"{PAGE_DATE}\" \"{PAGE_SOURCE} {}\" \"System Administration Commands\"\n",
        name.to_uppercase(),
        env!("CARGO_PKG_VERSION")
    ));
    out.push_str(".SH NAME\n");
    out.push_str(&format!(
        "{} \\- {}\n",
        roff_escape(name),
        roff_escape(summary)
    ));
    out
}

/// The synopsis lines of a usage text: "\tcmd …" becomes "front cmd …", continuation
/// lines ("\t    …") stay indented under it.
fn synopsis(front: &str, usage: &str) -> String {
    let mut out = String::from(".SH SYNOPSIS\n.nf\n");
    for line in usage.lines().filter(|l| !l.trim().is_empty()) {
        let body = line.strip_prefix('\t').unwrap_or(line);
        let text = if body.starts_with(' ') {
            format!("      {}", body.trim_end())
        } else {
            format!("{front} {}", body.trim_end())
        };
        out.push_str(&roff_escape(&text));
        out.push('\n');
    }
    out.push_str(".fi\n");
    out
}

/// The page of one subcommand, `None` when it has no description.
fn command_page(front: &str, command: &str, usage: &str) -> Option<ManPage> {
    let (_, _, summary, body, differences) = description(front, command)?;
    let name = format!("{front}-{command}");
    let mut text = header(&name, summary);
    text.push_str(&synopsis(front, usage));
    text.push_str(".SH DESCRIPTION\n");
    text.push_str(&paragraphs(body));
    text.push_str(".SH ZETTA\n");
    if differences.is_empty() {
        text.push_str(&paragraphs(
            "Zetta takes every option of the synopsis above as OpenZFS 2.3 does.",
        ));
    } else {
        text.push_str(&paragraphs(differences));
    }
    text.push_str(".PP\n");
    text.push_str(&paragraphs(
        "An option that Zetta does not honour is refused with invalid option and the usage (exit 2), never ignored.",
    ));
    text.push_str(".SH SEE ALSO\n");
    text.push_str(&format!(".BR {front} (8),\n.BR zetta (8)\n"));
    Some(ManPage {
        file_name: format!("{name}.8"),
        text,
    })
}

/// `zpool(8)` or `zfs(8)`: what the command is for and its subcommands, each with its
/// page.
fn front_page(front: &str) -> ManPage {
    let (summary, body) = match front {
        "zpool" => (
            "manage storage pools",
            "zpool creates, imports, inspects and repairs storage pools: sets of vdevs (files or block devices, alone, mirrored or in raidz groups) that hold datasets. In Zetta it is the zetta binary started under the name zpool; the pools are OpenZFS pools, held by the zetta daemon, which every command starts when needed.\n\nExit status: 0 on success, 1 when the operation failed, 2 for a usage error.",
        ),
        _ => (
            "manage datasets",
            "zfs creates and manages the datasets of a pool: file systems (mounted through FUSE), volumes (block devices), snapshots, clones and bookmarks, their properties, and the send streams that copy them between pools. In Zetta it is the zetta binary started under the name zfs.\n\nExit status: 0 on success, 1 when the operation failed, 2 for a usage error.",
        ),
    };
    let mut text = header(front, summary);
    text.push_str(".SH SYNOPSIS\n.nf\n");
    text.push_str(&format!("{front} \\fIcommand\\fR [\\fIargs\\fR ...]\n"));
    text.push_str(&format!("{front} help [\\fIcommand\\fR]\n.fi\n"));
    text.push_str(".SH DESCRIPTION\n");
    text.push_str(&paragraphs(body));
    text.push_str(".SH COMMANDS\n");
    for (command, _) in commands(front) {
        if let Some((_, _, summary, _, _)) = description(front, command) {
            text.push_str(&format!(
                ".TP\n.BR {front}\\-{command} (8)\n{}\n",
                roff_escape(summary)
            ));
        }
    }
    text.push_str(".SH SEE ALSO\n");
    let other = if front == "zpool" { "zfs" } else { "zpool" };
    text.push_str(&format!(".BR {other} (8),\n.BR zetta (8)\n"));
    ManPage {
        file_name: format!("{front}.8"),
        text,
    }
}

/// `zetta(8)`: the binary itself.
fn zetta_page() -> ManPage {
    let mut text = header(
        "zetta",
        "ZFS in userspace: the zpool and zfs commands and their daemon",
    );
    text.push_str(".SH SYNOPSIS\n.nf\n");
    for line in crate::ZETTA_USAGE.lines() {
        let line = line.trim_start_matches("usage: ").trim_start();
        text.push_str(&roff_escape(line));
        text.push('\n');
    }
    text.push_str(".fi\n.SH DESCRIPTION\n");
    text.push_str(&paragraphs(
        "zetta is ZFS rebuilt in Rust to run in userspace: no kernel module, vdevs that are files or block devices, file systems mounted through FUSE. Started under the name zpool or zfs (a symbolic link) it behaves as those commands, with their syntax, output and exit codes; zetta zpool and zetta zfs do the same.\n\nzetta daemon holds the imported pools; the commands start it when needed and pass their work to it. SIGTERM or SIGINT make it commit every pool and unmount cleanly. zetta arcstats prints the cache statistics, zetta tunable lists and sets the tunables (OpenZFS's module parameters, also read from /etc/zetta/zetta.conf at start), zetta zinject injects faults for tests, zetta calc and zetta advise help plan a pool.\n\nzetta install-links DIR makes zpool, zfs and zinject links in DIR. When DIR is a bin or sbin directory it also installs these manual pages in DIR/../share/man/man8 and the bash completion in DIR/../share/bash-completion/completions, where man and bash-completion look for the commands on PATH. zetta install-service writes the systemd unit zetta.service (in /etc/systemd/system unless a directory is given): systemctl enable --now zetta.service then starts the daemon at boot, which imports the pools of the cache file and mounts their file systems, and stops it cleanly at shutdown.",
    ));
    text.push_str(".SH ENVIRONMENT\n");
    for (name, what) in [
        (
            "ZETTA_CACHE_FILE",
            "the cache file listing the imported pools",
        ),
        (
            "ZETTA_RUN_DIR",
            "the directory of the daemon's socket and state",
        ),
        (
            "ZETTA_DIRECT",
            "1 runs a command in the calling process, without the daemon",
        ),
        ("ZETTA_MOUNT", "0 starts a daemon that mounts nothing"),
    ] {
        text.push_str(&format!(
            ".TP\n.B {}\n{}\n",
            roff_escape(name),
            roff_escape(what)
        ));
    }
    text.push_str(".SH SEE ALSO\n.BR zpool (8),\n.BR zfs (8)\n");
    ManPage {
        file_name: "zetta.8".to_string(),
        text,
    }
}

/// Every page, sorted by file name.
pub fn pages() -> Vec<ManPage> {
    let mut pages = vec![zetta_page(), front_page("zpool"), front_page("zfs")];
    for front in ["zpool", "zfs"] {
        for (command, usage) in commands(front) {
            if let Some(page) = command_page(front, command, usage) {
                pages.push(page);
            }
        }
    }
    pages.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    pages
}

/// Subcommands of the usage tables that have no description (and so no page).
pub fn commands_without_page() -> Vec<String> {
    let mut missing = Vec::new();
    for front in ["zpool", "zfs"] {
        for (command, _) in commands(front) {
            if description(front, command).is_none() {
                missing.push(format!("{front} {command}"));
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why: every subcommand Zetta has must have its page (the issue's "one page per
    /// subcommand"); a command added to a usage table without a description fails here.
    #[test]
    fn every_command_has_a_page() {
        assert_eq!(commands_without_page(), Vec::<String>::new());
        let pages = pages();
        for front in ["zpool", "zfs"] {
            for (command, _) in commands(front) {
                let file_name = format!("{front}-{command}.8");
                assert!(
                    pages.iter().any(|p| p.file_name == file_name),
                    "{file_name}"
                );
            }
        }
    }

    /// Why: the synopsis must be the usage text the command prints, so the two never
    /// drift apart.
    #[test]
    fn synopsis_is_the_usage_text() {
        let page = pages()
            .into_iter()
            .find(|p| p.file_name == "zpool-wait.8")
            .expect("zpool-wait.8");
        assert!(page.text.contains(
            ".SH SYNOPSIS\n.nf\nzpool wait [\\-Hp] [\\-T d|u] [\\-t <activity>[,...]] <pool> [interval]\n.fi\n"
        ), "{}", page.text);
        assert_eq!(roff_escape(".hidden"), "\\&.hidden");
        assert_eq!(roff_escape("a\\b"), "a\\eb");
    }
}
