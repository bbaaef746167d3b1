use super::*;

fn dataset_error(path: &str) -> String {
    validate_dataset_name(path, true).unwrap_err().to_string()
}

// sanoid and syncoid snapshot names must be accepted, or every scheduled run fails.
#[test]
fn sanoid_and_syncoid_snapshot_names_are_valid() {
    for name in [
        "pool/fs@autosnap_2026-11-22_01:51:32_hourly",
        "pool/fs@autosnap_2026-11-22_00:00:01_monthly",
        "pool/fs@syncoid_host.example_2026-11-22:01:51:32-GMT00:00",
        "tank/a b@snap with space",
    ] {
        assert_eq!(validate_snapshot_name(name, true), Ok(()), "{name}");
    }
    assert_eq!(
        validate_bookmark_name("pool/fs#autosnap_2026-11-22_01:51:32_hourly", true),
        Ok(())
    );
}

// Each entity_namecheck failure, with zfs_validate_name's sentence.
#[test]
fn dataset_name_errors() {
    assert_eq!(dataset_error("/pool/fs"), "leading slash in name");
    assert_eq!(dataset_error("pool/fs/"), "trailing slash in name");
    assert_eq!(
        dataset_error("pool//fs"),
        "empty component or misplaced '@' or '#' delimiter in name"
    );
    assert_eq!(
        dataset_error(""),
        "empty component or misplaced '@' or '#' delimiter in name"
    );
    assert_eq!(dataset_error("pool/f*s"), "invalid character '*' in name");
    assert_eq!(
        dataset_error("pool/./fs"),
        "self reference, '.' is found in name"
    );
    assert_eq!(
        dataset_error("pool/.."),
        "parent reference, '..' is found in name"
    );
    assert_eq!(
        dataset_error("pool/fs@snap"),
        "snapshot delimiter '@' is not expected here"
    );
    assert_eq!(
        dataset_error("pool/fs#bm"),
        "bookmark delimiter '#' is not expected here"
    );
    assert_eq!(dataset_error("pool/%recv"), "invalid character % in name");
    assert_eq!(
        dataset_error(&format!("pool/{}", "a".repeat(251))),
        "name is too long"
    );
    assert!(validate_dataset_name(&format!("pool/{}", "a".repeat(250)), true).is_ok());
    // Existing temporary clone names (%) may be opened, just not created.
    assert!(validate_dataset_name("pool/%recv", false).is_ok());
}

// Snapshot and bookmark delimiter rules.
#[test]
fn snapshot_and_bookmark_errors() {
    let snapshot_error = |path: &str| validate_snapshot_name(path, true).unwrap_err().to_string();
    assert_eq!(
        snapshot_error("pool/fs"),
        "missing '@' delimiter in snapshot name"
    );
    assert_eq!(
        snapshot_error("pool/fs@"),
        "empty component or misplaced '@' or '#' delimiter in name"
    );
    assert_eq!(
        snapshot_error("@snap"),
        "empty component or misplaced '@' or '#' delimiter in name"
    );
    assert_eq!(
        snapshot_error("pool/fs@a@b"),
        "multiple '@' and/or '#' delimiters in name"
    );
    assert_eq!(snapshot_error("pool/fs@a/b"), "trailing slash in name");
    assert_eq!(
        snapshot_error("pool/fs@a#b"),
        "bookmark delimiter '#' is not expected here"
    );
    let bookmark_error = |path: &str| validate_bookmark_name(path, true).unwrap_err().to_string();
    assert_eq!(
        bookmark_error("pool/fs"),
        "missing '#' delimiter in bookmark name"
    );
    assert_eq!(
        bookmark_error("pool/fs@s"),
        "snapshot delimiter '@' is not expected here"
    );
    // A type mask allowing both accepts either delimiter but never both.
    let both = TypeMask::SNAPSHOT.union(TypeMask::BOOKMARK);
    assert!(validate_name("p/f@s", both, false).is_ok());
    assert_eq!(
        validate_name("p/f@s#b", both, false)
            .unwrap_err()
            .to_string(),
        "multiple '@' and/or '#' delimiters in name"
    );
}

// Pool names: letter first, reserved words, pool-specific sentences.
#[test]
fn pool_name_rules() {
    assert!(validate_pool_name("tank", true).is_ok());
    assert_eq!(
        validate_pool_name("1tank", true).unwrap_err().to_string(),
        "name must begin with a letter"
    );
    assert_eq!(
        validate_pool_name("mirror", false).unwrap_err().to_string(),
        "name is reserved"
    );
    assert_eq!(
        validate_pool_name("mirrored", true)
            .unwrap_err()
            .to_string(),
        "name is reserved"
    );
    assert!(validate_pool_name("mirrored", false).is_ok());
    assert_eq!(
        validate_pool_name("log", true).unwrap_err().to_string(),
        "name is reserved"
    );
    assert_eq!(
        validate_pool_name("ta/nk", true).unwrap_err().to_string(),
        "invalid character '/' in pool name"
    );
    assert_eq!(
        validate_pool_name(&"a".repeat(240), true)
            .unwrap_err()
            .to_string(),
        "name is too long"
    );
    assert!(validate_pool_name(&"a".repeat(239), true).is_ok());
}

// Depth and name helpers used by zfs list -d and by inheritance.
#[test]
fn depth_and_parents() {
    assert_eq!(dataset_depth("pool"), 0);
    assert_eq!(dataset_depth("pool/a/b@x/y"), 2);
    assert!(nesting_ok("pool/a"));
    assert_eq!(parent_name("pool/a/b"), Some("pool/a"));
    assert_eq!(parent_name("pool"), None);
    assert_eq!(parent_name("pool/a@s"), None);
    assert_eq!(split_at_delimiter("pool/a@s"), ("pool/a", Some(('@', "s"))));
    assert_eq!(split_at_delimiter("pool/a#b"), ("pool/a", Some(('#', "b"))));
    assert_eq!(
        validate_component("autosnap_2026-11-22_01:51:32_hourly"),
        Ok(())
    );
    assert_eq!(validate_component("a/b"), Err(NameError::InvalidChar('/')));
}
