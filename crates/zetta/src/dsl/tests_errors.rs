//! The dataset layer's typed errors: each condition comes back as its `DslError` variant
//! with its data, and no engine error in `dsl/` carries a CLI sentence.

use super::tests::pool;
use crate::dsl::DslError;
use crate::io::MemDevice;
use crate::spa::SpaError;
use std::sync::Arc;

fn dsl(result: Result<(), SpaError>) -> DslError {
    match result {
        Err(SpaError::Dsl(e)) => e,
        other => panic!("expected a DslError, got {other:?}"),
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

// Why: the DSL returned CLI sentences (`SpaError::Invalid("cannot destroy '…': snapshot
// has dependent clones…")`), so no caller could tell one condition from another without
// parsing English, and the texts lived in the engine instead of the CLI (libzfs's role).
#[test]
fn each_refusal_is_its_variant_with_its_data() {
    let device = Arc::new(MemDevice::new("/mem/dsl", 128 << 20));
    let mut spa = pool(&device);
    spa.create_filesystem("tank/fs").unwrap();
    spa.create_filesystem("tank/fs/child").unwrap();

    // EEXIST / ENOENT on create.
    let exists = spa.create_filesystem("tank/fs").map(|_| ());
    assert_eq!(
        dsl(exists),
        DslError::Exists {
            name: "tank/fs".into()
        }
    );
    let orphan = spa.create_filesystem("tank/none/x").map(|_| ());
    assert_eq!(
        dsl(orphan),
        DslError::NoParent {
            name: "tank/none/x".into()
        }
    );
    let clone = spa.clone_snapshot("tank/fs@nosuch", "tank/c").map(|_| ());
    assert_eq!(
        dsl(clone),
        DslError::NoSuchDataset {
            name: "tank/fs@nosuch".into()
        }
    );

    // Snapshots: exists, two of one filesystem at once.
    spa.snapshot(&names(&["tank/fs@a"])).unwrap();
    assert_eq!(
        dsl(spa.snapshot(&names(&["tank/fs@a"]))),
        DslError::Exists {
            name: "tank/fs@a".into()
        }
    );
    assert_eq!(
        dsl(spa.snapshot(&names(&["tank/fs@x", "tank/fs@y"]))),
        DslError::SameFilesystemTwice {
            name: "tank/fs".into()
        }
    );

    // A snapshot with clones, then with a hold: EEXIST with the clones, EBUSY with the tags.
    spa.clone_snapshot("tank/fs@a", "tank/clone").unwrap();
    assert_eq!(
        dsl(spa.destroy_snapshot("tank/fs@a")),
        DslError::HasClones {
            snapshot: "tank/fs@a".into(),
            clones: names(&["tank/clone"]),
        }
    );
    spa.snapshot(&names(&["tank/fs@b"])).unwrap();
    spa.hold("keep", "tank/fs@b").unwrap();
    assert_eq!(
        dsl(spa.destroy_snapshot("tank/fs@b")),
        DslError::Held {
            snapshot: "tank/fs@b".into(),
            tags: names(&["keep"]),
        }
    );
    assert_eq!(
        dsl(spa.hold("keep", "tank/fs@b")),
        DslError::HoldExists {
            snapshot: "tank/fs@b".into(),
            tag: "keep".into(),
        }
    );
    assert_eq!(
        dsl(spa.release("other", "tank/fs@b")),
        DslError::NoSuchHold {
            snapshot: "tank/fs@b".into(),
            tag: "other".into(),
        }
    );
    assert_eq!(
        dsl(spa.destroy_snapshot("tank/fs@nosuch")),
        DslError::NoSuchDataset {
            name: "tank/fs@nosuch".into()
        }
    );

    // Rollback to a snapshot that is not the newest: the newer ones, oldest first.
    assert_eq!(
        dsl(spa.rollback("tank/fs@a")),
        DslError::NotLatest {
            snapshot: "tank/fs@a".into(),
            newer: names(&["tank/fs@b"]),
        }
    );

    // Bookmarks.
    spa.create_bookmark("tank/fs@a", "tank/fs#m").unwrap();
    assert_eq!(
        dsl(spa.create_bookmark("tank/fs@a", "tank/fs#m")),
        DslError::BookmarkExists {
            name: "tank/fs#m".into()
        }
    );
    assert_eq!(
        dsl(spa.create_bookmark("tank/fs@a", "tank/fs/child#m")),
        DslError::BookmarkNotAncestor {
            snapshot: "tank/fs@a".into(),
            bookmark: "tank/fs/child#m".into(),
        }
    );
    assert_eq!(
        dsl(spa.destroy_bookmark("tank/fs#nosuch")),
        DslError::NoSuchBookmark {
            name: "tank/fs#nosuch".into()
        }
    );

    // Renames: across pools (EXDEV), below itself, onto an existing name, the pool's root,
    // a snapshot into another filesystem.
    let rename = |spa: &mut crate::spa::Spa, from: &str, to: &str| spa.rename_filesystem(from, to);
    assert_eq!(
        dsl(rename(&mut spa, "tank/fs", "other/fs")),
        DslError::CrossPool {
            from: "tank/fs".into(),
            to: "other/fs".into()
        }
    );
    assert_eq!(
        dsl(rename(&mut spa, "tank/fs", "tank/fs/child/x")),
        DslError::DescendantOfSelf {
            from: "tank/fs".into(),
            to: "tank/fs/child/x".into(),
        }
    );
    assert_eq!(
        dsl(rename(&mut spa, "tank/clone", "tank/fs")),
        DslError::Exists {
            name: "tank/fs".into()
        }
    );
    assert_eq!(
        dsl(rename(&mut spa, "tank", "tank2")),
        DslError::PoolRoot {
            name: "tank".into()
        }
    );
    assert_eq!(
        dsl(rename(&mut spa, "tank/nosuch", "tank/y")),
        DslError::NoSuchDataset {
            name: "tank/nosuch".into()
        }
    );
    assert_eq!(
        dsl(spa.rename_snapshot("tank/fs@a", "tank/clone@a")),
        DslError::CrossDataset {
            from: "tank/fs@a".into(),
            to: "tank/clone@a".into(),
        }
    );
    assert_eq!(
        dsl(spa.rename_snapshot("tank/fs@a", "tank/fs@b")),
        DslError::Exists {
            name: "tank/fs@b".into()
        }
    );

    // Every refusal left the tree as it was.
    assert_eq!(
        spa.dataset_names().unwrap(),
        ["tank", "tank/clone", "tank/fs", "tank/fs/child"]
    );
    let snapshots: Vec<String> = spa
        .snapshots("tank/fs")
        .unwrap()
        .into_iter()
        .map(|(name, _, _)| name)
        .collect();
    assert_eq!(snapshots, ["tank/fs@a", "tank/fs@b"]);
}

/// The string literals of a Rust source that start with `cannot ` (a CLI sentence), with
/// their line numbers. Comments are skipped; raw strings are not used in these files.
fn cannot_literals(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(start) = rest.find('"') {
            let after = &rest[start + 1..];
            let end = after.find('"').unwrap_or(after.len());
            let literal = &after[..end];
            if literal.starts_with("cannot ") {
                found.push((index + 1, literal.to_string()));
            }
            rest = after.get(end + 1..).unwrap_or("");
        }
    }
    found
}

// Why: every message text belongs to the CLI (libzfs's role); the DSL held about forty
// "cannot …" sentences; promote's were the last.
#[test]
fn no_engine_error_in_dsl_is_a_cli_sentence() {
    let allowed: [(&str, &str); 0] = [];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dsl");
    let mut offenders = Vec::new();
    let mut scanned = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        if !file.ends_with(".rs") || file.starts_with("tests") {
            continue;
        }
        scanned += 1;
        let source = std::fs::read_to_string(&path).unwrap();
        for (line, literal) in cannot_literals(&source) {
            if !allowed.contains(&(file.as_str(), literal.as_str())) {
                offenders.push(format!("dsl/{file}:{line}: \"{literal}\""));
            }
        }
    }
    assert!(scanned > 10, "scanned only {scanned} files in {dir:?}");
    assert!(
        offenders.is_empty(),
        "CLI sentences in the engine:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scan_finds_a_sentence() {
    let source =
        "let a = 1; // \"cannot skip comments\"\nErr(x(format!(\"cannot destroy '{n}'\")))";
    assert_eq!(
        cannot_literals(source),
        [(2, "cannot destroy '{n}'".to_string())]
    );
}
