use super::*;

struct Row {
    name: &'static str,
    createtxg: u64,
    used: Option<u64>,
    compression: Option<&'static str>,
}

fn row(name: &'static str, createtxg: u64, used: Option<u64>) -> Row {
    Row {
        name,
        createtxg,
        used,
        compression: None,
    }
}

impl ListEntry for Row {
    fn name(&self) -> &str {
        self.name
    }
    fn createtxg(&self) -> u64 {
        self.createtxg
    }
    fn sort_value(&self, prop: &ListProp) -> SortValue {
        match prop {
            ListProp::Native(ZfsProp::Used) => {
                self.used.map_or(SortValue::Missing, SortValue::Number)
            }
            ListProp::Native(ZfsProp::Compression) => self
                .compression
                .map_or(SortValue::Missing, |word| SortValue::Text(word.to_string())),
            _ => SortValue::Missing,
        }
    }
}

fn names(rows: &[Row]) -> Vec<&'static str> {
    rows.iter().map(|row| row.name).collect()
}

// Default order: datasets by strcmp of the dataset part, each dataset before its snapshots,
// snapshots by createtxg (not by name: sanoid relies on creation order).
#[test]
fn default_order_is_name_then_createtxg() {
    let mut rows = vec![
        row("tank/a@zzz", 10, Some(0)),
        row("tank/a/b", 5, Some(0)),
        row("tank/a@aaa", 20, Some(0)),
        row("tank/a-b", 7, Some(0)),
        row("tank", 1, Some(0)),
        row("tank/a", 3, Some(0)),
    ];
    sort_entries(&mut rows, &[]);
    assert_eq!(
        names(&rows),
        [
            "tank",
            "tank/a",
            "tank/a@zzz",
            "tank/a@aaa",
            "tank/a-b",
            "tank/a/b"
        ]
    );
}

// -s used sorts numerically; -S reverses; rows without the property sink to the bottom either way.
#[test]
fn numeric_sort_and_missing_last() {
    let build = || {
        vec![
            row("tank/big", 1, Some(10 * 1024)),
            row("tank/none#bm", 2, None),
            row("tank/small", 3, Some(512)),
            row("tank/mid", 4, Some(2048)),
        ]
    };
    let mut rows = build();
    sort_entries(&mut rows, &[parse_sort_column("used", false).unwrap()]);
    assert_eq!(
        names(&rows),
        ["tank/small", "tank/mid", "tank/big", "tank/none#bm"]
    );
    let mut rows = build();
    sort_entries(&mut rows, &[parse_sort_column("used", true).unwrap()]);
    assert_eq!(
        names(&rows),
        ["tank/big", "tank/mid", "tank/small", "tank/none#bm"]
    );
}

// Text properties compare their printed words; ties fall back to the name order.
#[test]
fn text_sort_with_name_fallback() {
    let mut rows = vec![
        Row {
            compression: Some("lz4"),
            ..row("tank/b", 1, None)
        },
        Row {
            compression: Some("gzip"),
            ..row("tank/c", 2, None)
        },
        Row {
            compression: Some("lz4"),
            ..row("tank/a", 3, None)
        },
    ];
    sort_entries(&mut rows, &[parse_sort_column("compress", false).unwrap()]);
    assert_eq!(names(&rows), ["tank/c", "tank/a", "tank/b"]);
    // -s name is a plain strcmp of full names, so snapshots go by name, not createtxg.
    let mut rows = vec![row("t/a@b", 1, None), row("t/a@a", 2, None)];
    sort_entries(&mut rows, &[parse_sort_column("name", false).unwrap()]);
    assert_eq!(names(&rows), ["t/a@a", "t/a@b"]);
}

// -t words, aliases, comma lists and the exact error sentence.
#[test]
fn type_filters() {
    assert_eq!(parse_types("snap"), Ok(TypeMask::SNAPSHOT));
    assert_eq!(
        parse_types("filesystem,volume"),
        Ok(TypeMask::FILESYSTEM.union(TypeMask::VOLUME))
    );
    assert_eq!(
        parse_types("fs,vol"),
        Ok(TypeMask::FILESYSTEM.union(TypeMask::VOLUME))
    );
    assert_eq!(parse_types("all"), Ok(TypeMask::ALL));
    assert_eq!(
        parse_types("snapshot,bogus").unwrap_err().to_string(),
        "invalid type 'bogus'"
    );
    assert!(type_selected(TypeMask::ALL, DatasetType::Bookmark));
    assert!(!type_selected(TypeMask::DATASET, DatasetType::Bookmark));
    assert_eq!(
        list_types(None, "space"),
        TypeMask::FILESYSTEM.union(TypeMask::VOLUME)
    );
    assert_eq!(list_types(None, "name"), TypeMask::DATASET);
}

// -o parsing: aliases, `space` expansion, user properties, `all`, errors.
#[test]
fn field_lists() {
    let columns = parse_fields("name,avail,refer,syncoid:sync")
        .unwrap()
        .unwrap();
    let headers: Vec<String> = columns.iter().map(ListProp::header).collect();
    assert_eq!(headers, ["NAME", "AVAIL", "REFER", "SYNCOID:SYNC"]);
    let space = parse_fields("space").unwrap().unwrap();
    let headers: Vec<String> = space.iter().map(ListProp::header).collect();
    assert_eq!(
        headers,
        [
            "NAME",
            "AVAIL",
            "USED",
            "USEDSNAP",
            "USEDDS",
            "USEDREFRESERV",
            "USEDCHILD"
        ]
    );
    assert_eq!(parse_fields("all"), Ok(None));
    assert_eq!(
        parse_fields("name,bogus").unwrap_err().to_string(),
        "bad property list: invalid property 'bogus'"
    );
    assert_eq!(
        parse_fields("").unwrap_err().to_string(),
        "bad property list: no properties specified"
    );
    assert_eq!(
        parse_sort_column("bogus", false).unwrap_err().to_string(),
        "invalid property 'bogus'"
    );
    assert_eq!(ZFS_LIST_DEFAULT_FIELDS.split(',').count(), 5);
}

// -d: depth counts levels below the argument, snapshots one deeper than their dataset; -d 0
// is the dataset alone (syncoid's `zfs list -d0` for pool names).
#[test]
fn depth_semantics() {
    assert_eq!(depth_below("tank", "tank"), Some(0));
    assert_eq!(depth_below("tank", "tank@s"), Some(1));
    assert_eq!(depth_below("tank", "tank/a"), Some(1));
    assert_eq!(depth_below("tank", "tank/a@s"), Some(2));
    assert_eq!(depth_below("tank", "tankx/a"), None);
    assert!(within_depth("tank/fs", "tank/fs@snap", Some(1)));
    assert!(!within_depth("tank/fs", "tank/fs/c@snap", Some(1)));
    assert!(within_depth("tank", "tank/a/b/c", None));
    assert!(!within_depth("tank", "tank/a", Some(0)));
    assert_eq!(
        implied_depth(TypeMask::SNAPSHOT, true, false, None),
        Some(1)
    );
    assert_eq!(implied_depth(TypeMask::SNAPSHOT, false, false, None), None);
    assert_eq!(implied_depth(TypeMask::ALL, true, false, None), None);
}

// parse_depth follows strtol(…, 0) and zfs's sentences.
#[test]
fn depth_arguments() {
    assert_eq!(parse_depth("1"), Ok(1));
    assert_eq!(parse_depth("0"), Ok(0));
    assert_eq!(parse_depth("0x10"), Ok(16));
    assert_eq!(parse_depth("010"), Ok(8));
    assert_eq!(
        parse_depth("1a").unwrap_err().to_string(),
        "1a is not an integer"
    );
    assert_eq!(
        parse_depth("-1").unwrap_err().to_string(),
        "Depth can not be negative."
    );
}
