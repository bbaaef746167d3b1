//! Tests of the `-j` writer and reader against what libnvpair and libzfs print.

use super::*;

/// Why: `zcmd_print_json` prints the nvlist compactly, keys in insertion order; a key
/// added twice moves to the end (NV_UNIQUE_NAME), as `fnvlist_add_nvlist(jsobj, "pools",
/// d)` relies on.
#[test]
fn objects_print_compact_in_insertion_order() {
    let mut document = output_version("zpool status");
    document.insert("pools", Json::object());
    document.insert("time", Json::Number(5));
    document.insert("pools", Json::object());
    assert_eq!(
        document.to_text(),
        r#"{"output_version":{"command":"zpool status","vers_major":0,"vers_minor":1},"time":5,"pools":{}}"#
    );
}

/// Why: libnvpair's string escaping (`nvlist_print_json_string`) differs from most JSON
/// writers: BMP characters above 0x7f are `\uXXXX`, characters beyond it are dropped.
#[test]
fn strings_escape_as_libnvpair_does() {
    let text = Json::string("a\"b\\c\n\t\u{1}é😀").to_text();
    assert_eq!(text, r#""a\"b\\c\n\t\u0001\u00e9""#);
    assert_eq!(parse(&text).unwrap(), Json::string("a\"b\\c\n\t\u{1}é"));
}

/// Why: `zprop_nvlist_one_property` turns digit-only values into numbers with
/// --json-int and keeps everything else a string; the source has type and data.
#[test]
fn properties_carry_value_and_source() {
    assert_eq!(
        property("1234", &PropSource::None, true).to_text(),
        r#"{"value":1234,"source":{"type":"NONE","data":"-"}}"#
    );
    assert_eq!(
        property("1.50K", &PropSource::Default, true).to_text(),
        r#"{"value":"1.50K","source":{"type":"DEFAULT","data":"-"}}"#
    );
    assert_eq!(
        property("on", &PropSource::from_column("inherited from tank"), false).to_text(),
        r#"{"value":"on","source":{"type":"INHERITED","data":"tank"}}"#
    );
    assert_eq!(PropSource::from_column("local"), PropSource::Local);
    assert_eq!(PropSource::from_column("-"), PropSource::None);
}

/// Why: `nice_num_str_nvlist` has three forms: number (--json-int), exact digits (-p),
/// nicenum words; a zero timestamp is "-".
#[test]
fn nice_numbers_follow_the_flags() {
    assert_eq!(
        nice_number(1536, false, true, NiceFormat::Number),
        Json::Number(1536)
    );
    assert_eq!(
        nice_number(1536, true, false, NiceFormat::Number),
        Json::string("1536")
    );
    assert_eq!(
        nice_number(1536, false, false, NiceFormat::Number),
        Json::string("1.50K")
    );
    assert_eq!(
        nice_number(0, false, false, NiceFormat::Timestamp),
        Json::string("-")
    );
}

/// Why: the reader is used on command output in tests and must refuse, not panic on,
/// broken text.
#[test]
fn parse_reads_documents_and_refuses_garbage() {
    let value = parse(r#" {"a":[1,-2,3.5,true,null,"x"],"b":{}} "#).unwrap();
    assert_eq!(
        value.get("a"),
        Some(&Json::Array(vec![
            Json::Number(1),
            Json::Float(-2.0),
            Json::Float(3.5),
            Json::Bool(true),
            Json::Null,
            Json::string("x"),
        ]))
    );
    assert!(value.get("b").unwrap().is_empty_object());
    for bad in [
        "",
        "{",
        "{\"a\"}",
        "[1,]",
        "\"\\u12\"",
        "{} x",
        "\"\u{1}\"",
        "nul",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} parsed");
    }
    let deep = "[".repeat(PARSE_DEPTH_MAX + 2);
    assert!(parse(&deep).is_err());
}
