//! Usage texts (issue 19): every `zpool` and `zfs` subcommand's usage equals OpenZFS 2.3's
//! (`get_usage()` and `usage()` of cmd/zpool/zpool_main.c and cmd/zfs/zfs_main.c), kept as
//! golden files in tests/golden/usage/; flags Zetta does not implement are refused with
//! OpenZFS's "invalid option", never ignored. No pool is needed: the commands fail before
//! they touch one.

use std::path::PathBuf;

mod common;

use common::{Lab, Output};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/usage")
}

fn golden(path: &str) -> String {
    std::fs::read_to_string(golden_dir().join(path)).unwrap()
}

/// The commands with a golden file under `front`/.
fn commands(front: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(golden_dir().join(front))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".txt").map(str::to_string))
        .collect();
    names.sort();
    names
}

/// Runs in the calling process (ZETTA_DIRECT): what is printed is what the daemon prints,
/// without a daemon per test.
fn run(lab: &Lab, front: &str, args: &[&str]) -> Output {
    let mut command = lab.command(front);
    command.args(args).env("ZETTA_DIRECT", "1");
    lab.run(command)
}

// Why: usage texts were Zetta's own (`zpool help status` printed the general usage, `zfs
// help` left out send, receive, mount and unmount, a zfs usage error printed every command).
// Each subcommand's `-?` is now OpenZFS's "invalid option '?'" and its usage (exit 2), and
// `help CMD` prints the same usage on stdout (exit 0); `zpool -?` and `zfs -?` print the
// general usage on stdout (exit 0).
#[test]
fn every_subcommand_prints_openzfs_usage() {
    let lab = Lab::new();
    for front in ["zpool", "zfs"] {
        let names = commands(front);
        assert!(names.len() >= 20, "{front}: {names:?}");
        // Every command the general usage lists has its golden file: "every subcommand"
        // (zfs userspace, groupspace and projectspace had none and went unchecked).
        let mut listed: Vec<String> = golden(&format!("{front}.txt"))
            .lines()
            .filter(|l| l.starts_with('\t') && !l.starts_with("\t "))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect();
        listed.sort();
        listed.dedup();
        assert_eq!(
            listed, names,
            "{front}: commands without a golden usage file"
        );
        for name in &names {
            let want = golden(&format!("{front}/{name}.txt"));
            let asked = run(&lab, front, &[name, "-?"]);
            assert_eq!(
                (asked.code, asked.stdout.as_str(), asked.stderr.as_str()),
                (2, "", format!("invalid option '?'\n{want}").as_str()),
                "{front} {name} -?"
            );
            let help = run(&lab, front, &["help", name]);
            assert_eq!(
                (help.code, help.stdout.as_str(), help.stderr.as_str()),
                (0, want.as_str(), ""),
                "{front} help {name}"
            );
        }
        let general = run(&lab, front, &["-?"]);
        assert_eq!(
            (general.code, general.stdout.as_str()),
            (0, golden(&format!("{front}.txt")).as_str()),
            "{front} -?"
        );
        let missing = run(&lab, front, &[]);
        assert_eq!(missing.code, 2);
        assert_eq!(
            missing.stderr,
            format!("missing command\n{}", golden(&format!("{front}.txt")))
        );
    }
    // Aliases resolve as OpenZFS's do.
    assert_eq!(
        run(&lab, "zfs", &["help", "recv"]).stdout,
        golden("zfs/receive.txt")
    );
}

// Why: flags Zetta does not implement must be refused with OpenZFS's words, never silently
// ignored (`zpool iostat -l/-w/-q/-r`, `zpool status -j/-c/-D` were listed as ignored;
// `-j`, `iostat -w` and, since issue 19's toolbox, `iostat -l/-q/-r` are honoured).
#[test]
fn unimplemented_flags_are_refused() {
    let lab = Lab::new();
    let cases: &[(&str, &[&str], char)] = &[
        ("zpool", &["iostat", "-n"], 'n'),
        ("zpool", &["iostat", "-g"], 'g'),
        ("zpool", &["iostat", "-L"], 'L'),
        ("zpool", &["iostat", "-c", "x"], 'c'),
        ("zpool", &["status", "-c", "x"], 'c'),
        ("zpool", &["status", "-D"], 'D'),
        ("zpool", &["status", "-d"], 'd'),
        ("zpool", &["status", "-e"], 'e'),
        ("zpool", &["status", "-g"], 'g'),
        ("zpool", &["status", "-L"], 'L'),
        ("zpool", &["status", "-s"], 's'),
        ("zpool", &["list", "-g"], 'g'),
        ("zpool", &["list", "-L"], 'L'),
        ("zpool", &["scrub", "-e", "tank"], 'e'),
        ("zpool", &["scrub", "-C", "tank"], 'C'),
        ("zfs", &["set", "-u", "atime=on", "tank"], 'u'),
    ];
    for (front, args, flag) in cases {
        let out = run(&lab, front, args);
        let name = args[0];
        let want = golden(&format!("{front}/{name}.txt"));
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (2, format!("invalid option '{flag}'\n{want}").as_str()),
            "{front} {args:?}"
        );
    }
}
