//! Bash completion and the installed toolbox (issue 19): `zetta install-links PREFIX/bin`
//! installs the man pages and the completion beside the links, and the completion, driven
//! in bash as readline would (`COMP_WORDS`, `COMP_CWORD`, the `complete -F` function),
//! completes subcommands, a pool, a dataset, a snapshot and properties of a live pool.

mod common;

use common::Lab;
use std::process::Command;

/// Runs the completion of each line (words separated by spaces; a trailing space means
/// an empty word being completed) and returns the candidates of each.
fn complete(lab: &Lab, script: &str, lines: &[&str]) -> Vec<Vec<String>> {
    let mut program = format!("source '{script}'\n");
    program.push_str(
        r#"complete_line() {
    read -r -a COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    local function
    function=$(complete -p "${COMP_WORDS[0]}" | sed 's/.*-F \([^ ]*\) .*/\1/')
    "$function" 2>/dev/null
    printf '%s\n' "${COMPREPLY[@]}"
    echo "--end--"
}
"#,
    );
    for line in lines {
        program.push_str(&format!("complete_line '{line}'\n"));
    }
    let mut command = lab.command("bash");
    command.arg("-c").arg(&program);
    let output = lab.run(command);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let mut answers = Vec::new();
    let mut current = Vec::new();
    for word in output.stdout.lines() {
        if word == "--end--" {
            answers.push(std::mem::take(&mut current));
        } else if !word.is_empty() {
            current.push(word.to_string());
        }
    }
    assert_eq!(answers.len(), lines.len(), "{}", output.stdout);
    answers
}

// Why: the issue's "Done when": completion scripts complete a pool, a dataset, a snapshot
// and a property in a bash session driven by a test; and they are installed by the
// project's install command, with the man pages, where man and bash-completion look.
#[test]
fn completion_completes_pools_datasets_snapshots_and_properties() {
    let mut lab = Lab::new();
    lab.env.push(("ZETTA_MOUNT".to_string(), "0".to_string()));
    let prefix = lab.dir.join("prefix");
    let bin = prefix.join("bin");
    // A page a system ZFS put there is never replaced.
    let foreign = prefix.join("share/man/man8/zfs-foreign.8");
    std::fs::create_dir_all(foreign.parent().unwrap()).unwrap();
    std::fs::write(&foreign, "system page").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_zetta"))
        .args(["install-links", &bin.to_string_lossy()])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let man8 = prefix.join("share/man/man8");
    for page in [
        "zpool.8",
        "zfs.8",
        "zetta.8",
        "zpool-status.8",
        "zfs-send.8",
    ] {
        assert!(man8.join(page).is_file(), "{page} installed");
    }
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "system page");
    let completions = prefix.join("share/bash-completion/completions");
    for name in ["zpool", "zfs"] {
        let text = std::fs::read_to_string(completions.join(name)).unwrap();
        assert_eq!(text, zetta_cli::install::BASH_COMPLETION);
    }
    // Installing again replaces what zetta wrote, and refuses a foreign zpool.8.
    std::fs::write(man8.join("zpool.8"), "system zpool page").unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_zetta"))
        .args(["install-links", &bin.to_string_lossy()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("zpool.8': it was not installed by zetta")
    );
    assert_eq!(
        std::fs::read_to_string(man8.join("zpool.8")).unwrap(),
        "system zpool page"
    );

    let disk = lab.disk("a", 256 << 20);
    lab.ok("zpool", &["create", "tank", &disk]);
    lab.ok("zfs", &["create", "tank/data"]);
    lab.ok("zfs", &["create", "tank/docs"]);
    lab.ok("zfs", &["snapshot", "tank/data@monday"]);
    let script = completions.join("zfs");
    let answers = complete(
        &lab,
        &script.to_string_lossy(),
        &[
            "zpool sta",
            "zpool status ta",
            "zfs list tank/da",
            "zfs rollback tank/data@",
            "zfs get compr",
            "zfs get used,avail",
            "zfs set compr",
            "zpool get fre",
            "zfs snap",
            "zfs destroy tank/",
        ],
    );
    assert_eq!(answers[0], ["status"], "subcommand");
    assert_eq!(answers[1], ["tank"], "pool");
    assert_eq!(answers[2], ["tank/data"], "dataset");
    assert_eq!(answers[3], ["tank/data@monday"], "snapshot");
    assert!(
        answers[4].contains(&"compression".to_string()),
        "property: {:?}",
        answers[4]
    );
    assert!(
        answers[4].iter().all(|p| p.starts_with("compr")),
        "{:?}",
        answers[4]
    );
    assert_eq!(answers[5], ["used,available"], "property list");
    assert!(
        answers[6].contains(&"compression=".to_string()),
        "{:?}",
        answers[6]
    );
    assert!(
        answers[7].contains(&"free".to_string()),
        "pool property: {:?}",
        answers[7]
    );
    assert_eq!(answers[8], ["snapshot"]);
    assert_eq!(answers[9], ["tank/data", "tank/docs"]);
}
