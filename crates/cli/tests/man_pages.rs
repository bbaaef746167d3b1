//! The manual pages (issue 19): `contrib/man/man8/` holds exactly what `man.rs` renders,
//! every page renders in groff without a warning, and `man -l` shows it.

use std::path::PathBuf;
use std::process::Command;

fn man_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contrib/man/man8")
}

// Why: the checked-in pages are generated from the usage tables and `man.rs`; a command
// whose usage changes (or a new command) must change its page in the same commit.
// `ZETTA_BLESS=1` rewrites the directory.
#[test]
fn checked_in_pages_are_current() {
    let pages = zetta_cli::man::pages();
    let dir = man_dir();
    if std::env::var_os("ZETTA_BLESS").is_some() {
        std::fs::create_dir_all(&dir).expect("create contrib/man/man8");
        for entry in std::fs::read_dir(&dir)
            .expect("read contrib/man/man8")
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !pages.iter().any(|p| p.file_name == name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        for page in &pages {
            std::fs::write(dir.join(&page.file_name), &page.text).expect("write page");
        }
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("contrib/man/man8 (ZETTA_BLESS=1 creates it)")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let names: Vec<String> = pages.iter().map(|p| p.file_name.clone()).collect();
    assert_eq!(on_disk, names, "rerun with ZETTA_BLESS=1");
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(&page.file_name)).expect("read page");
        assert_eq!(
            text, page.text,
            "{} is stale: rerun with ZETTA_BLESS=1",
            page.file_name
        );
    }
    // zpool(8), zfs(8), zetta(8) and one page per subcommand of both usage tables.
    for name in [
        "zpool.8",
        "zfs.8",
        "zetta.8",
        "zpool-status.8",
        "zfs-send.8",
        "zpool-iostat.8",
    ] {
        assert!(names.iter().any(|n| n == name), "{name}");
    }
    for front in ["zpool", "zfs"] {
        for (command, _) in zetta_cli::man::commands(front) {
            let name = format!("{front}-{command}.8");
            assert!(names.contains(&name), "{name} is missing");
        }
    }
}

// Why: a page with a roff mistake renders garbage or nothing in `man`; groff's warnings
// (-ww) catch it. `man -l` is what the README tells users to run from the checkout.
#[test]
fn every_page_renders_without_warnings() {
    for page in zetta_cli::man::pages() {
        let path = man_dir().join(&page.file_name);
        let output = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&path)
            .output()
            .expect("groff (apt-get install groff-base)");
        let warnings = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && warnings.is_empty(),
            "{}: {warnings}",
            page.file_name
        );
    }
    let output = Command::new("man")
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0")
        .args(["-P", "cat", "-l"])
        .arg(man_dir().join("zpool-iostat.8"))
        .output()
        .expect("man");
    // Bold and underline come as overstrikes (c BS c, _ BS c): keep the last character.
    let raw = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut text = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c == '\u{8}' {
            text.pop();
            continue;
        }
        text.push(c);
    }
    let text = text.replace(['\u{2010}', '\u{2212}'], "-");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("zpool-iostat - show I/O statistics"),
        "{text}"
    );
    assert!(
        text.contains("zpool iostat [[[-c [script1,script2,...][-lq]]|[-rw]]"),
        "{text}"
    );
    assert!(text.contains("ZETTA"), "{text}");
}
